"""The harness's acceptor for a wire case: the simulated peer, a silent listener, or nothing.

:func:`simulated_peer` starts :class:`harness.peers.SimulatedPeer` ([MS-MQQB] 3.1.5 acceptor with
fault behaviours) on 127.0.0.1 port 0.  :class:`SilentListener` accepts TCP connections and never
answers one (a peer whose Session Initialization Timer, [MS-MQQB] 3.1.2.1, must expire on the
initiator's side); it counts the connections it accepted.  Both are bounded: they stop with the case.

``given.peer.replies`` (:class:`PeerReply`, docs/cases.md "Replies of the peer") makes the
simulated peer answer a sender's packet with bytes the case gives: on reading the ``count``-th
packet of kind ``to`` ([MS-MQQB] 3.1.5.1.1) of its ``connection``-th connection, the peer sends
``raw`` instead of what its Acceptor answers (3.1.5.3.1 EstablishConnection response, 3.1.5.4.1
ConnectionParameters response, a 3.1.5.8.2 SessionAck), or alone when it answers nothing, and then
goes on as the conformant acceptor.  The fields named in ``echo`` take the bytes of the same field
of the packet answered -- the values 3.1.5.3.1 and 3.1.5.4.1 copy from the request
(EstablishConnectionHeader.ClientGuid and TimeStamp, ConnectionParametersHeader.RecoverableAckTimeout
and AckTimeout) -- so that a reply recorded against one sender is valid for another: a sender
checks ClientGuid against its own QueueManager.Identifier (3.1.5.3.2).
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import packets
from harness.cases.wireruns.framing import PacketFramer
from harness.peers import SimulatedPeer
from harness.session import Send
from packets import PacketKind
from packets.paths import field_offset

if TYPE_CHECKING:
    from harness.cases.lines import Lines

__all__ = [
    "ECHOED",
    "PeerReply",
    "SilentListener",
    "WireConnection",
    "check_replies",
    "close_peer",
    "peer_replies",
    "peer_state",
    "simulated_peer",
]

# The fields a response copies from the request it answers: name -> the section that says so.
ECHOED = {
    "EstablishConnectionHeader.ClientGuid": "MS-MQQB 3.1.5.3.1",
    "EstablishConnectionHeader.TimeStamp": "MS-MQQB 3.1.5.3.1",
    "ConnectionParametersHeader.RecoverableAckTimeout": "MS-MQQB 3.1.5.4.1",
    "ConnectionParametersHeader.AckTimeout": "MS-MQQB 3.1.5.4.1",
}


@dataclass(frozen=True)
class PeerReply:
    """One entry of ``given.peer.replies`` (see the module docstring)."""

    to: str
    raw: bytes
    echo: tuple[str, ...] = ()
    count: int = 1
    connection: int = 1

    def made(self, answered: bytes) -> bytes:
        """``raw`` with the ``echo`` fields copied from ``answered`` (a field whose size differs
        between the two packets, or that either lacks, is left as ``raw`` has it)."""
        out = bytearray(self.raw)
        for path in self.echo:
            kind = path.split("Header.", 1)[0]
            mine, theirs = field_offset(bytes(out), path, kind), field_offset(answered, path, kind)
            if mine and theirs and mine[1] - mine[0] == theirs[1] - theirs[0] and mine[1] <= len(out):
                out[mine[0] : mine[1]] = answered[theirs[0] : theirs[1]]
        return bytes(out)


def peer_replies(peer_spec: Mapping[str, Any]) -> list[PeerReply]:
    """The ``replies`` of a schema-valid ``given.peer``."""
    return [
        PeerReply(
            str(r["to"]),
            bytes.fromhex("".join(str(r["raw"]).split())),
            tuple(r.get("echo") or ()),
            int(r.get("count", 1)),
            int(r.get("connection", 1)),
        )
        for r in peer_spec.get("replies") or []
    ]


def check_replies(peer_spec: Mapping[str, Any], lines: Lines) -> None:
    """The checks of ``given.peer.replies`` the schema cannot express: the simulated peer answers
    a sender (``under_test: initiator``), so it listens and answers; one reply per packet."""
    replies = peer_spec.get("replies")
    if not replies:
        return
    where = ("given", "peer", "replies")
    if peer_spec.get("under_test") != "initiator":
        raise lines.error(where, "replies are the simulated acceptor's answers to a sender: under_test: initiator only")
    if peer_spec.get("silent") or peer_spec.get("listening") is False:
        raise lines.error(where, "a peer that is silent or not listening sends no replies")
    seen: dict[tuple[str, int, int], int] = {}
    for i, r in enumerate(replies):
        key = (str(r["to"]), int(r.get("count", 1)), int(r.get("connection", 1)))
        if key in seen:
            raise lines.error(
                (*where, i),
                f"replies {seen[key]} and {i} answer the same packet {key[0]} (count {key[1]}, connection {key[2]})",
            )
        seen[key] = i


def simulated_peer(behaviours: list[str], scale: float, replies: Sequence[PeerReply] = ()) -> Any:
    """A simulated acceptor on 127.0.0.1 port 0, its timers run ``scale`` times their durations;
    one behaviour per connection, the last one for every later connection; ``replies``: the
    case's own answers (see the module docstring)."""
    peer = (
        _ReplyingPeer(replies, "127.0.0.1", 0, behaviour=behaviours[-1], read_timeout=5.0, time_scale=scale)
        if replies
        else SimulatedPeer("127.0.0.1", 0, behaviour=behaviours[-1], read_timeout=5.0, time_scale=scale)
    )
    if len(behaviours) > 1:
        peer.queue_behaviours(behaviours[:-1])
    peer.__enter__()
    return peer


class _ReplyingPeer(SimulatedPeer):
    """:class:`harness.peers.SimulatedPeer` that sends the case's replies: each whole packet the
    peer keeps from a client is counted by kind per connection; the Acceptor's actions for the
    read that completed a packet a reply answers have their Send replaced by the reply."""

    def __init__(self, replies: Sequence[PeerReply], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.replies = list(replies)
        self._replies_read: dict[int, dict[str, int]] = {}  # connection index -> packets read, by kind
        self._replies_due: dict[int, list[bytes]] = {}  # connection index -> replies to send next

    def _keep(self, conn: Any, direction: str, data: bytes, ts: float) -> None:
        super()._keep(conn, direction, data, ts)
        if direction != "c2s" or not self.replies:
            return
        try:
            kind = packets.parse(data, strict=False).kind.value
        except packets.PacketError:
            return
        counts = self._replies_read.setdefault(conn.index, {})
        counts[kind] = counts.get(kind, 0) + 1
        for r in self.replies:
            if r.to == kind and r.count == counts[kind] and r.connection == conn.index + 1:
                self._replies_due.setdefault(conn.index, []).append(r.made(data))

    def _perform(self, slot: Any, actions: list[Any]) -> None:
        due = self._replies_due.pop(slot.conn.index, None)
        if due:
            sends = [a for a in actions if isinstance(a, Send)]
            made = [replace(sends[0], data=d) if sends else Send(d, PacketKind.Unknown) for d in due]
            actions = made + [a for a in actions if not isinstance(a, Send)]
        super()._perform(slot, actions)


@dataclass(frozen=True)
class WireConnection:
    """One connection as the harness's acceptor recorded it: when it was accepted, its whole
    packets (direction, bytes, the wall-clock time each was read or written), when it ended
    (None while open) and whether the sender (the initiator) closed it."""

    opened: float
    packets: list[tuple[str, bytes, float]]
    ended: float | None
    by_initiator: bool

    def as_of(self, until: float) -> WireConnection:
        """The connection as recorded by the wall-clock time ``until``."""
        ended = self.ended if self.ended is not None and self.ended <= until else None
        return WireConnection(self.opened, [p for p in self.packets if p[2] <= until], ended, self.by_initiator)


def peer_state(peer: Any) -> list[WireConnection]:
    """The connections of a :class:`harness.peers.SimulatedPeer`, from one snapshot of its records."""
    return [
        WireConnection(c.opened, list(c.packets), c.ended if c.closed else None, c.closed_by == "client")
        for c in peer.snapshot().connections
    ]


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
        self.rounds = 0  # rounds of the loop done (see sync)
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"SilentListener:{port}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(self._sock, selectors.EVENT_READ)
            while not self._stop.is_set():
                self._round(sel)
                with self._cond:
                    self.rounds += 1
                    self._cond.notify_all()

    def sync(self, timeout: float) -> bool:
        """Wait until the listener has taken in what reached it before this call: three rounds of
        its loop end, each begun after the last (as harness.peers.server.SimulatedPeer.sync).
        False when ``timeout`` seconds pass first, or the listener is closed."""
        end = time.monotonic() + timeout
        for _ in range(3):
            with self._cond:
                begun = self.rounds
                if not self._thread.is_alive() or not self._cond.wait_for(
                    lambda b=begun: self.rounds > b or self._stop.is_set(),  # type: ignore[misc]
                    max(0.0, end - time.monotonic()),
                ):
                    return False
        return not self._stop.is_set()

    def _round(self, sel: selectors.BaseSelector) -> None:
        for key, _ in sel.select(0.02):
            if key.fileobj is self._sock:
                if len(self.records) >= self.MAX_CONNECTIONS:
                    sel.unregister(self._sock)  # no more: left unaccepted (not a ready socket each round)
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
    def state(self) -> list[WireConnection]:
        """Each connection as the listener recorded it (every one closed by the sender)."""
        out = []
        for r in list(self.records):
            packets = [("c2s", d, t) for d, t in zip(list(r.packets), list(r.times), strict=False)]
            out.append(WireConnection(r.opened, packets, r.ended if r.closed else None, True))
        return out

    def connections(self) -> list[list[tuple[str, bytes]]]:
        return [[("c2s", data) for data in r.packets] for r in list(self.records)]

    @property
    def opened(self) -> int:
        return len(self.records)

    @property
    def closed(self) -> int:
        return sum(r.closed for r in list(self.records))

    def closed_by(self, side: str) -> int:
        """The connections ``side`` closed: every one the sender's, none the listener's."""
        return self.closed if side == "initiator" else 0

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        for sock in [*(r.sock for r in self.records), self._sock]:
            with contextlib.suppress(OSError):
                sock.close()


class _Record:
    """One accepted connection of a :class:`SilentListener`: its whole packets, and whether it ended."""

    def __init__(self, sock: socket.socket, client: tuple[str, int] = ("", 0)) -> None:
        self.sock = sock
        self.client = client
        self.opened = time.time()
        self.framer = PacketFramer()  # the same packets however the reads cut the stream
        self.packets: list[bytes] = []
        self.times: list[float] = []  # wall-clock time each packet was read
        self.size = 0
        self.ended = 0.0  # wall-clock time the connection ended (with ``closed``)
        self.closed = False

    def read(self) -> bool:
        """Read what came; False once the connection ended (or sent more than the listener keeps)."""
        try:
            data = self.sock.recv(65536)
        except BlockingIOError:
            return True
        except OSError:
            data = b""
        if not data or self.size + len(data) > SilentListener.MAX_BYTES:
            self.ended = time.time()
            self.closed = True
            return False
        self.size += len(data)
        now = time.time()
        pieces = self.framer.feed(data)
        if not pieces and self.framer.unframed is not None:  # the lost stream's piece grew
            self.packets[-1] = self.framer.unframed
        self.packets.extend(pieces)
        self.times.extend([now] * (len(self.packets) - len(self.times)))
        return True
