"""The harness's acceptor for a wire case: the simulated peer, a silent listener, or nothing.

:func:`simulated_peer` starts :class:`harness.peers.SimulatedPeer` ([MS-MQQB] 3.1.5 acceptor with
fault behaviours) on 127.0.0.1 port 0.  :class:`SilentListener` accepts TCP connections and never
answers one (a peer whose Session Initialization Timer, [MS-MQQB] 3.1.2.1, must expire on the
initiator's side); it counts the connections it accepted.  Both are bounded: they stop with the case.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
from typing import Any

__all__ = ["SilentListener", "close_peer", "simulated_peer"]


def simulated_peer(behaviours: list[str], scale: float) -> Any:
    """A simulated acceptor on 127.0.0.1 port 0, its timers run ``scale`` times their durations;
    one behaviour per connection, the last one for every later connection."""
    from harness.peers import SimulatedPeer

    peer = SimulatedPeer("127.0.0.1", 0, behaviour=behaviours[-1], read_timeout=5.0, time_scale=scale)
    if len(behaviours) > 1:
        peer.queue_behaviours(behaviours[:-1])
    peer.__enter__()
    return peer


def close_peer(peer: Any) -> None:
    exit_ = getattr(peer, "__exit__", None)
    if exit_ is not None:
        exit_(None, None, None)
    else:
        peer.close()


class SilentListener:
    """Accepts connections on 127.0.0.1 port 0 and answers nothing: it reads and records what
    the initiator sends (with the wall-clock time each packet was read), and notices when a
    connection ends."""

    MAX_CONNECTIONS = 64  # a sender that reconnects without end is still bounded
    MAX_BYTES = 1 << 20  # per connection: what a sender may make the listener keep

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.setblocking(False)
        host, port = self._sock.getsockname()[:2]
        self.address = (str(host), int(port))
        self.records: list[_Record] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"SilentListener:{port}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(self._sock, selectors.EVENT_READ)
            while not self._stop.is_set():
                for key, _ in sel.select(0.02):
                    if key.fileobj is self._sock:
                        if len(self.records) >= self.MAX_CONNECTIONS:
                            continue
                        try:
                            conn, client = self._sock.accept()
                        except OSError:
                            continue
                        conn.setblocking(False)
                        record = _Record(conn, (str(client[0]), int(client[1])))
                        self.records.append(record)
                        sel.register(conn, selectors.EVENT_READ, record)
                        continue
                    record = key.data
                    if not record.read():
                        sel.unregister(record.sock)

    # -- the peer view ----------------------------------------------------------------------
    def connections(self) -> list[list[tuple[str, bytes]]]:
        return [[("c2s", data) for data in r.packets] for r in list(self.records)]

    @property
    def opened(self) -> int:
        return len(self.records)

    @property
    def closed(self) -> int:
        return sum(r.closed for r in list(self.records))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        for sock in [*(r.sock for r in self.records), self._sock]:
            with contextlib.suppress(OSError):
                sock.close()


class _Record:
    """One accepted connection of a :class:`SilentListener`: its whole packets, and whether it ended."""

    def __init__(self, sock: socket.socket, client: tuple[str, int] = ("", 0)) -> None:
        from packets import StreamSplitter

        self.sock = sock
        self.client = client
        self.opened = time.time()
        self.splitter = StreamSplitter()
        self.packets: list[bytes] = []
        self.times: list[float] = []  # wall-clock time each packet was read
        self.size = 0
        self.closed = False

    def read(self) -> bool:
        """Read what came; False once the connection ended (or sent more than the listener keeps)."""
        import packets

        try:
            data = self.sock.recv(65536)
        except BlockingIOError:
            return True
        except OSError:
            data = b""
        if not data or self.size + len(data) > SilentListener.MAX_BYTES:
            self.closed = True
            return False
        self.size += len(data)
        now = time.time()
        try:
            self.packets.extend(c.data for c in self.splitter.feed(data))
        except packets.PacketError:
            self.packets.append(data)
        self.times.extend([now] * (len(self.packets) - len(self.times)))
        return True
