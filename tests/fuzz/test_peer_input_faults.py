"""The simulated peer's input-triggered faults (harness.peers.faults): a crash and a hang on one
specific packet, every other packet served as by the normal behaviour (real sockets, loopback)."""

from __future__ import annotations

import socket
import time
import uuid

import packets
from harness.fuzz.generate import Context, template
from harness.fuzz.states import STATES, Connection, build, reach
from harness.peers import SimulatedPeer
from harness.peers.cli import list_behaviours
from harness.peers.faults import FAULTS, MIN_RESTART, RESTART_SECONDS, crashes, leaked
from packets import GUID

SCALE = 0.05
OPEN = next(s for s in STATES if s.name == "OPEN")
WAIT = 10.0  # seconds an answer that comes may take (a loaded machine): a bound, never a sleep
CRASH_SCALE = 0.2  # a crashed peer refuses for RESTART_SECONDS x 0.2 = 2 s: the test looks within it


def _serves_again(address: tuple[str, int], seconds: float) -> bool:
    """The port accepts connections again within ``seconds`` (a crashed peer restarted)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            socket.create_connection(address, timeout=1.0).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def _open_session(address: tuple[str, int]) -> tuple[Connection, Context]:
    conn = Connection(address).open()
    ctx = Context(GUID(uuid.uuid4().bytes_le))
    reach(conn, OPEN, ctx, WAIT)
    return conn, ctx


def _soap_oversize(ctx: Context) -> bytes:
    data = bytearray(packets.build(template("UserMessage[soap]").build(ctx)))
    start, _ = packets.field_offset(bytes(data), "SoapHeader.HeaderDataLength", "UserMessage") or (0, 0)
    data[start : start + 4] = (0x7FFFFFFF).to_bytes(4, "little")
    return bytes(data)


def test_the_faults_are_listed_and_named_behaviours() -> None:
    lines = "\n".join(list_behaviours())
    for name in FAULTS:
        assert name in lines
        with SimulatedPeer(behaviour=name, ping_port=None) as peer:
            assert peer.behaviour.name == name


def test_crash_resets_every_connection_refuses_then_comes_back() -> None:
    restart = max(MIN_RESTART, RESTART_SECONDS * CRASH_SCALE)
    with SimulatedPeer(behaviour="crash-soap-length", time_scale=CRASH_SCALE) as peer:
        bystander, _ = _open_session(peer.address)
        conn, ctx = _open_session(peer.address)
        conn.send(build("UserMessage[soap]", ctx))  # a well-formed SoapHeader: served
        assert conn.read(WAIT) is not None  # its SessionAck (window 1)
        conn.send(_soap_oversize(ctx))
        assert conn.read(WAIT) is None and conn.closed
        crashed = time.monotonic()
        assert bystander.wait_closed(WAIT)
        refused = False
        try:
            socket.create_connection(peer.address, timeout=1.0).close()
        except ConnectionRefusedError:
            refused = True
        looked = time.monotonic() - crashed
        assert refused, f"a crashed peer's port refuses connections (looked {looked:.2f} s after, back at {restart:g})"
        assert crashes(peer) == 1
        assert _serves_again(peer.address, restart + WAIT)
        again, _ = _open_session(peer.address)  # restarted: served again
        again.close()


def test_hang_stops_one_session_and_serves_the_others() -> None:
    with SimulatedPeer(behaviour="hang-cp-when-open", time_scale=SCALE, ping_port=None) as peer:
        conn, ctx = _open_session(peer.address)
        conn.send(build("ConnectionParameters", ctx))
        conn.send(build("UserMessage[express]", ctx))
        assert conn.read(1.5) is None and not conn.closed  # no reply, no close: hung
        other, octx = _open_session(peer.address)
        other.send(build("UserMessage[express]", octx))
        assert other.read(WAIT) is not None  # the other sessions are served
        other.close()
        conn.close()


def test_normal_peer_closes_on_the_same_inputs() -> None:
    with SimulatedPeer(time_scale=SCALE, ping_port=None) as peer:
        conn, ctx = _open_session(peer.address)
        conn.send(_soap_oversize(ctx))
        assert conn.wait_closed(WAIT)
        conn, ctx = _open_session(peer.address)
        conn.send(build("ConnectionParameters", ctx))
        assert conn.wait_closed(WAIT)
        fresh, _ = _open_session(peer.address)
        fresh.close()


def test_leak_keeps_a_descriptor_per_malformed_user_message_and_serves_as_normal() -> None:
    with SimulatedPeer(behaviour="leak-fd-on-malformed", time_scale=SCALE, ping_port=None) as peer:
        conn, ctx = _open_session(peer.address)
        conn.send(build("UserMessage[soap]", ctx))  # well formed: no leak
        assert conn.read(WAIT) is not None
        conn.send(_soap_oversize(ctx))
        assert conn.wait_closed(WAIT)  # discarded and closed, as the normal behaviour does (3.1.5.1.3)
        assert leaked(peer) == 1
