"""Idle connections never lock out the simulated peer (issue 21, item 6: slots and timeouts).

A connection that sends nothing holds a slot until the Session Initialization Timer ([MS-MQQB]
3.1.2.1, started by 3.1.5.10 Handling an Incoming Transport Connection) closes it, scaled like
every timer of the peer; when every slot is taken a newcomer takes the slot of the longest-idle
connection (connections still in session initialization before open sessions), so a well-behaved
sender is served at once under any flood of idle connections, even one that re-opens whatever the
peer closes.  Everything runs on loopback, every loop is bounded and every socket is closed.
"""

from __future__ import annotations

import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from peerkit import RawClient, cp_request, ec_request, user_message_bytes

from harness.peers import SimulatedPeer
from harness.session import SessionConfig
from packets import GUID

COMMAND = [sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())"]
SCALE = 0.05
SESSION_INITIALIZATION = SessionConfig().session_initialization * SCALE  # 3.1.2.1 <43>, scaled: 1.5 s
FLOOD = 300


class IdleFlood:
    """``count`` loopback connections that send nothing; ``keep_up`` re-opens every one the peer
    closes (a flood that never lets go), until told to stop or its deadline passes."""

    def __init__(self, address: tuple[str, int], count: int) -> None:
        self.address = address
        self.socks: list[socket.socket] = []
        self.reopened = 0
        self.stop = threading.Event()
        for _ in range(count):
            self.socks.append(self._connect())

    def _connect(self) -> socket.socket:
        s = socket.create_connection(self.address, timeout=5.0)
        s.setblocking(False)
        return s

    def keep_up(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self.stop.is_set() and time.monotonic() < deadline:
            readable, _, _ = select.select(self.socks, [], [], 0.05)
            for s in readable:
                try:
                    data = s.recv(4096)
                except OSError:
                    data = b""
                if data:
                    continue  # nothing comes to a connection that says nothing; ignore it anyway
                self.socks.remove(s)
                s.close()
                try:
                    self.socks.append(self._connect())
                    self.reopened += 1
                except OSError:
                    pass

    def close(self) -> None:
        """Close every connection (after ``keep_up`` returned)."""
        for s in self.socks:
            s.close()
        self.socks.clear()


@contextmanager
def peer_process(*extra: str) -> Iterator[tuple[subprocess.Popen[str], tuple[str, int], GUID]]:
    args = ["peer", "--listen", "127.0.0.1:0", "--ping-port", "-1", "--time-scale", str(SCALE), "--duration", "60"]
    proc = subprocess.Popen([*COMMAND, *args, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        m = re.match(r"listening on 127\.0\.0\.1:(\d+) as (\{[0-9A-F-]+\})", first)
        assert m, first
        yield proc, ("127.0.0.1", int(m.group(1))), GUID(m.group(2))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_a_sender_is_served_within_one_session_initialization_period_under_300_idle_connections() -> None:
    """The acceptance test of item 6: ``msmq-harness peer`` (256 slots) under 300 idle connections
    that re-open whatever the peer closes answers a normal sender's EstablishConnection and
    ConnectionParameters, and accepts its message, within one (scaled) Session Initialization
    period of its connect."""
    with peer_process() as (proc, address, identifier):
        flood = IdleFlood(address, FLOOD)
        keeper = threading.Thread(target=flood.keep_up, args=(15.0,), daemon=True)
        keeper.start()
        try:
            time.sleep(0.2)  # the peer has taken in the flood: every slot is held by a silent connection
            started = time.monotonic()
            with RawClient(address, timeout=SESSION_INITIALIZATION) as sender:
                sender.send(ec_request(identifier))
                replies = sender.read(1, timeout=SESSION_INITIALIZATION)
                assert [p.kind for p in replies] == ["EstablishConnection"], "no EstablishConnection response"
                assert not replies[0].InternalHeader.Flags.CS
                sender.send(cp_request())
                assert [p.kind for p in sender.read(1, timeout=SESSION_INITIALIZATION)] == ["ConnectionParameters"]
                served = time.monotonic() - started
                sender.send(user_message_bytes(identifier, 1, b"through the flood"))
                time.sleep(0.1)
                assert not sender.eof
            assert served < SESSION_INITIALIZATION, f"served after {served:.2f} s"
        finally:
            flood.stop.set()
            keeper.join(timeout=5.0)
            flood.close()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert "Traceback" not in err, err
    assert re.search(r"^\d+ connections.*, 1 delivered, ", out, re.M), out[-2000:]
    assert re.search(r"\d+ evicted", out), out[-2000:]
    assert flood.reopened > 0  # the flood did re-open what the peer closed


def test_a_silent_connection_is_closed_by_the_session_initialization_timer() -> None:
    """No byte at all: the connection holds its slot for one scaled Session Initialization period,
    then the timer event (3.1.6.6) closes it and frees the slot."""
    with SimulatedPeer(time_scale=SCALE, ping_port=None) as peer:
        with socket.create_connection(peer.address, timeout=5.0) as s:
            started = time.monotonic()
            s.settimeout(SESSION_INITIALIZATION * 4)
            assert s.recv(1) == b""
            held = time.monotonic() - started
        assert SESSION_INITIALIZATION * 0.9 <= held < SESSION_INITIALIZATION + 1.0, held
        assert peer.wait_for(lambda: all(c.closed for c in peer.connections), 5.0)
        (conn,) = peer.connections
        assert conn.closed_by == "acceptor" and [v.rule_id for v in conn.violations] == ["MQQB-3.1.6.6-init-timeout"]


def test_slot_exhaustion_closes_the_longest_idle_connection_first() -> None:
    """With every slot taken, a newcomer takes the slot of the connection idle longest: those still
    in session initialization first (oldest first), open sessions only when no other is left."""
    with SimulatedPeer(max_connections=3, ping_port=None) as peer:
        clients: list[RawClient] = []
        try:
            a = RawClient(peer.address)  # silent
            clients.append(a)
            assert peer.wait_for(lambda: len(peer.connections) == 1, 5.0)
            b = RawClient(peer.address)  # an open session
            clients.append(b)
            b.handshake()
            c = RawClient(peer.address)  # silent, newer than a
            clients.append(c)
            assert peer.wait_for(lambda: len(peer.connections) == 3, 5.0)
            d = RawClient(peer.address)  # takes a's slot
            clients.append(d)
            assert a.wait_eof(5.0) and not a.received
            d.send(ec_request(), cp_request())
            assert [p.kind for p in d.read(2)] == ["EstablishConnection", "ConnectionParameters"]
            e = RawClient(peer.address)  # takes c's slot: the only one still in session initialization
            clients.append(e)
            assert c.wait_eof(5.0) and not c.received
            e.send(ec_request(), cp_request())
            assert [p.kind for p in e.read(2)] == ["EstablishConnection", "ConnectionParameters"]
            f = RawClient(peer.address)  # every slot an open session: b is the one idle longest
            clients.append(f)
            assert b.wait_eof(5.0)
            f.send(ec_request(), cp_request())
            assert [p.kind for p in f.read(2)] == ["EstablishConnection", "ConnectionParameters"]
            for sender, n in ((d, 1), (e, 2), (f, 3)):  # the newer sessions were never touched
                sender.send(user_message_bytes(peer.identifier, n, b"m%d" % n))
            assert peer.wait_for(lambda: len(peer.delivered) == 3, 5.0)
            assert not (d.eof or e.eof or f.eof)
        finally:
            for client in clients:
                client.close()
        assert peer.wait_for(lambda: all(c.closed for c in peer.connections), 5.0)
        by = [c.closed_by for c in peer.connections]
        assert by[:3] == ["evicted", "evicted", "evicted"] and peer.totals.evicted == 3 and peer.rejected == 0
        assert not any(c.violations for c in peer.connections[:3])  # an eviction is the peer's doing, not the client's
        assert "longest idle" in peer.connections[0].close_reason
