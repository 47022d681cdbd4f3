"""A wire case's verdict does not depend on how late the harness runs (docs/cases.md "Wire cases").

Initiator runs: a wait whose bound ran out judges what reached the harness's acceptor by then,
taken in however late its loop runs (``sync``, [MS-MQQB] 3.1.7.12: a sender that connected at
once is never judged to have never connected); a step that expects that nothing happens judges
only what the acceptor had recorded when its bound ran out, never what came after it, however
late the harness looks.  Acceptor runs: a reply, a close or a Ping Response ([MS-MQQB] 2.1.2)
that had arrived when the bound ran out is read, however late the harness's thread ran again.

Lateness is made, not waited for: the acceptor's loop is held by a gate, the harness's clock is
moved past the bound, or the packet is sent from inside the wait once its bound has run out.
"""

from __future__ import annotations

import socket
import threading
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from harness.cases.loader import load_text
from harness.cases.model import Case
from harness.cases.targets import make_target
from harness.cases.targets.wire import WireOptions
from harness.cases.wireruns import AcceptorRun, InitiatorRun
from harness.cases.wireruns import acceptor as acceptor_run
from harness.cases.wireruns.initiator import _PeerView
from harness.cases.wireruns.peer import SilentListener, simulated_peer
from harness.peers import SimulatedPeer
from harness.peers.recording import RecordedConnection
from packets import GUID, NULL_GUID
from packets import build as build_packet
from packets import session as sp

HEAD = """\
id: w.races
title: t
spec: [{section: MS-MQQB 3.1.7.12, requirement: MQQB-3.1.7.12-CONNECT}]
"""


def _case(body: str) -> Case:
    (case,) = load_text(HEAD + body, "races.yaml")
    return case


INITIATOR = _case(
    "given:\n  peer: {under_test: initiator}\nwhen:\n  - action: create_outgoing_queue\n    args: {name: out}\n"
)
ACCEPTOR = _case(
    "given:\n  peer: {under_test: acceptor}\nwhen:\n  - action: receive\n    args: {within: SessionAckSend}\n"
)


@pytest.fixture
def peer() -> Iterator[SimulatedPeer]:
    p = simulated_peer(["normal"], 0.05)
    try:
        yield p
    finally:
        p.close()


def _initiator_run(peer: SimulatedPeer) -> InitiatorRun:
    run = InitiatorRun(INITIATOR, WireOptions(), make_target("reference").control, adm=False)  # type: ignore[attr-defined]
    run.view = _PeerView(peer)
    return run


def test_a_sender_that_connected_while_the_acceptor_was_held_connected(
    stall_peer_loop: Callable[[], tuple[threading.Event, threading.Event]], peer: SimulatedPeer
) -> None:
    """The Ping Response Timer ran out long ago and the harness's acceptor has not accepted the
    connection the kernel completed: the sender connected, it is not filed as never connecting."""
    run = _initiator_run(peer)
    run.available_at = time.monotonic() - 10
    gate, held = stall_peer_loop()
    try:
        assert held.wait(10)
        with socket.create_connection(peer.address, timeout=5):
            opens = threading.Timer(0.5, gate.set)  # bounds the harness's wait for its acceptor
            opens.start()
            never = run._never_connected()
            opens.join()
    finally:
        gate.set()
    assert never is False and run.never_connected == ""


def test_a_quiet_wait_does_not_judge_what_came_after_its_bound(peer: SimulatedPeer) -> None:
    """``wait_for: {connections: 1, before: ...}`` expecting nothing: a connection the sender opened
    after the bound ran out (this thread looking late) is not one within the bound."""
    run = _initiator_run(peer)
    run.quiet = True
    late: list[socket.socket] = []
    first: list[float] = []  # the wait's first look: its start was before

    def bound(args: Any, default: str = "") -> tuple[float, str]:
        first.append(first[0] if first else time.monotonic())
        if time.monotonic() >= first[0] + 0.2 and not late:  # run out: the sender connects now
            late.append(socket.create_connection(peer.address, timeout=5))
            assert peer.wait_for(lambda: len(peer.connections) == 1, 10)
        return 0.2, "0.2 s"

    run.bound = bound  # type: ignore[method-assign]
    try:
        result = run.wait_for({"connections": 1, "before": "SessionInitialization"})
    finally:
        for s in late:
            s.close()
    assert late and result["satisfied"] is False


def test_a_wait_that_expects_something_judges_what_came_by_its_last_look(peer: SimulatedPeer) -> None:
    """The same late connection satisfies a wait that expects one: what reached the acceptor when
    the harness looked counts (the bound is on the sender, not on the harness's thread)."""
    run = _initiator_run(peer)
    late: list[socket.socket] = []
    first: list[float] = []

    def bound(args: Any, default: str = "") -> tuple[float, str]:
        first.append(first[0] if first else time.monotonic())
        if time.monotonic() >= first[0] + 0.2 and not late:
            late.append(socket.create_connection(peer.address, timeout=5))
        return 0.2, "0.2 s"

    run.bound = bound  # type: ignore[method-assign]
    try:
        result = run.wait_for({"connections": 1, "within": "SessionInitialization"})
    finally:
        for s in late:
            s.close()
    assert result["satisfied"] is True


class _LateClock:
    """The acceptor run's clock: at each wait's first look the bound has already run out (the
    harness's thread ran again long after it was due)."""

    def __init__(self) -> None:
        self.calls = 0

    def monotonic(self) -> float:
        self.calls += 1
        return time.monotonic() + (0 if self.calls == 1 else 100)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def _acceptor_run(monkeypatch: pytest.MonkeyPatch) -> tuple[AcceptorRun, socket.socket]:
    """An acceptor run whose connection is one end of a socket pair (the other, the acceptor's,
    returned), its waits bounded by nothing: every look is late."""
    run = AcceptorRun(ACCEPTOR, WireOptions())
    ours, theirs = socket.socketpair()
    run.client = ours
    run.wire_log.append(RecordedConnection(("a", 1), ("b", 2)))
    run.bound = lambda args, default="": (0.0, "no time")  # type: ignore[method-assign]
    monkeypatch.setattr(acceptor_run, "time", _LateClock())
    return run, theirs


def _ec(timestamp: int) -> bytes:
    return build_packet(sp.establish_connection(GUID(bytes(range(16))), NULL_GUID, timestamp))


def test_a_reply_that_had_arrived_is_read_however_late_the_harness_looks(monkeypatch: pytest.MonkeyPatch) -> None:
    run, theirs = _acceptor_run(monkeypatch)
    with theirs:
        theirs.sendall(_ec(1))
        assert run.receive({"packet": "EstablishConnection"}) == {
            "closed": False,
            "timed_out": False,
            "kind": "EstablishConnection",
        }


def test_until_reads_past_the_packets_that_had_arrived_before_the_one_it_waits_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run, theirs = _acceptor_run(monkeypatch)
    with theirs:
        theirs.sendall(_ec(1) + _ec(2))
        result = run.receive({"packet": "EstablishConnection", "until": {"EstablishConnectionHeader.TimeStamp": 2}})
    assert result["kind"] == "EstablishConnection" and run.last_packet == _ec(2)


def test_a_close_that_had_arrived_is_read_however_late_the_harness_looks(monkeypatch: pytest.MonkeyPatch) -> None:
    run, theirs = _acceptor_run(monkeypatch)
    theirs.sendall(_ec(1))
    theirs.close()
    assert run.wait_for({"closed": 1}) == {"satisfied": True}
    assert run.wire_log[-1].closed_by == "s2c"


def test_a_ping_response_that_had_arrived_is_read_however_late_the_harness_looks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The acceptor answered the Ping Request ([MS-MQQB] 3.1.7.7) before the harness looked."""
    run, theirs = _acceptor_run(monkeypatch)
    theirs.close()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as responder:
        responder.bind(("127.0.0.1", 0))
        run.ping_address = responder.getsockname()[:2]

        class Answered(socket.socket):
            """The case's UDP socket: the responder answers each request as it is sent (loopback
            datagrams are queued by the time ``sendto`` returns)."""

            def sendto(self, data: Any, address: Any) -> int:  # type: ignore[override]
                sent = super().sendto(data, address)
                request, source = responder.recvfrom(2048)
                responder.sendto(request, source)
                return sent

        monkeypatch.setattr(acceptor_run, "socket", types.SimpleNamespace(**{**vars(socket), "socket": Answered}))
        assert run.ping({}) == {"answered": True}
    assert run.last_ping is not None


def test_a_silent_listener_synced_has_taken_in_what_reached_it() -> None:
    """The silent acceptor of an initiator case ([MS-MQQB] 3.1.2.1: it never answers) syncs as the
    simulated peer does: a connection and its bytes that reached it are recorded once it returns."""
    listener = SilentListener()
    try:
        with socket.create_connection(listener.address, timeout=5) as client:
            client.sendall(_ec(1))
            assert listener.sync(10)
            (conn,) = listener.state()
            assert [(d, data) for d, data, _ in conn.packets] == [("c2s", _ec(1))] and conn.ended is None
        assert listener.sync(10)
        (conn,) = listener.state()
        assert conn.ended is not None and conn.by_initiator
    finally:
        listener.close()
    assert not listener.sync(1)  # closed: nothing more is taken in


def test_the_simulated_acceptor_held_past_the_bound_still_answers_what_reached_it(
    stall_peer_loop: Callable[[], tuple[threading.Event, threading.Event]],
) -> None:
    """An acceptor case against the simulated peer ([MS-MQQB] 3.1.5.3.1: it answers the
    EstablishConnection request): its loop held by the loaded machine past the step's bound, the
    answer it owes for what reached it is still read (a conformant peer's EstablishConnection
    response was once 'absent' under load)."""
    run = AcceptorRun(ACCEPTOR, WireOptions())
    run.start()
    try:
        run.send({"packet": "EstablishConnection"})
        gate, held = stall_peer_loop()
        assert held.wait(10)
        run.bound = lambda args, default="": (0.0, "no time")  # type: ignore[method-assign]
        opens = threading.Timer(0.5, gate.set)
        opens.start()
        try:
            result = run.receive({"packet": "EstablishConnection"})
        finally:
            gate.set()
            opens.join()
    finally:
        run.close()
    assert result == {"closed": False, "timed_out": False, "kind": "EstablishConnection"}
