"""No false findings: the conformant implementations, fuzzed in both roles, give none.

The simulated peer without a fault behaviour (the reference acceptor) and the reference sender
(examples/reference_adapter.py behind a ``cmd:`` target) are each fuzzed over several seeds, with
enough packets that every (state x packet kind x class of mutation) is injected
(:func:`harness.fuzz.engine.mutation_class`: as built, a length, a flag word, a string, an
identifier, another integer), timers x0.05.  Whatever a conformant implementation does with those
packets -- wait for the rest of a truncated packet ([MS-MQMQ] 2.2.19.1, an [MS-MQRR] 2.2.5.2
ExtensionHeader that announces more headers than follow), close the connection on a malformed one
([MS-MQQB] 3.1.5.1.3), let its Session Initialization Timer close the session (3.1.2.1, 3.1.6.6)
-- is none of the fuzzer's crash, hang or violation findings.
"""

from __future__ import annotations

import contextlib
import random
import socket
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import packets
from harness.cases.targets.registry import make_target
from harness.fuzz.engine import Fuzzer, mutation_class
from harness.fuzz.generate import KINDS, Context, Mutation, mutations_for, template
from harness.fuzz.oracles import Timers, incomplete, observe
from harness.fuzz.runs import FuzzOptions, FuzzReport
from harness.fuzz.sender import SenderFuzzer
from harness.fuzz.states import SENDER_STATES, STATES, Connection, State, reach
from harness.peers import SimulatedPeer
from packets import GUID, StreamSplitter
from packets import session as sp

SCALE = 0.05
ROOT = Path(__file__).resolve().parents[2]
REFERENCE = f"cmd:{sys.executable} {ROOT / 'examples' / 'reference_adapter.py'}"


def _every_class(states: tuple[State, ...], to: str) -> set[tuple[str, str, str]]:
    ctx = Context(GUID(bytes(16)), GUID(bytes(range(16))))
    classes = {k: {mutation_class(m) for m in mutations_for(k, ctx, random.Random(0), to)} for k in KINDS}
    return {(s.name, k, c) for s in states for k in KINDS for c in classes[k]}


def _options(address: tuple[str, int], target: str, seed: int, packets: int, out: Path) -> FuzzOptions:
    return FuzzOptions(
        address=address,
        target=target,
        seed=seed,
        max_packets=packets,
        duration=600.0,  # the budget ends the run: every class injected is what the packets buy, not the clock
        keep_going=True,
        restart_wait=10.0,
        timers=Timers(SCALE),
        out=out,
    )


def _reached(report: FuzzReport) -> set[tuple[str, str, str]]:
    return set(report.classes)


def _findings(report: FuzzReport) -> list[str]:
    return [f"{f.oracle} in {f.state} after {f.template} {f.field} {f.op}: {f.why}" for f in report.findings]


def _acceptor_seed(seed: int, out: Path) -> tuple[list[str], set[tuple[str, str, str]]]:
    """In a process of its own: one seed against a reference acceptor of its own."""
    with SimulatedPeer(time_scale=SCALE, ping_port=None) as peer:
        report = Fuzzer(_options(peer.address, "mqqb://simulated", seed, 1200, out)).run()
    return _findings(report), _reached(report)


def _sender_seed(seed: int, out: Path) -> tuple[list[str], set[tuple[str, str, str]]]:
    """In a process of its own: one seed against a reference sender of its own."""
    target = make_target(REFERENCE, timeout=10.0)
    try:
        target.hello()
        fuzzer = SenderFuzzer(_options(("127.0.0.1", 0), REFERENCE, seed, 120, out), target)
        try:
            report = fuzzer.run()
        finally:
            fuzzer.close()
    finally:
        target.close()
    return _findings(report), _reached(report)


def _seeds(
    run: Callable[[int, Path], tuple[list[str], set[tuple[str, str, str]]]], tmp_path: Path
) -> set[tuple[str, str, str]]:
    """Seeds 1, 2 and 3 side by side (a run mostly waits on the scaled timers; each bounds its waits by
    them, not by the others): none gives a finding; the classes they injected together."""
    reached: set[tuple[str, str, str]] = set()
    with ProcessPoolExecutor(max_workers=3) as pool:
        futures = {seed: pool.submit(run, seed, tmp_path / str(seed)) for seed in (1, 2, 3)}
        for seed, future in futures.items():
            findings, classes = future.result()
            assert findings == [], f"seed {seed}"
            reached |= classes
    return reached


def test_the_reference_acceptor_gives_no_finding_over_every_state_kind_and_class(tmp_path: Path) -> None:
    assert _seeds(_acceptor_seed, tmp_path) == _every_class(STATES, "acceptor")


def test_the_reference_sender_gives_no_finding_over_every_state_kind_and_class(tmp_path: Path) -> None:
    assert _seeds(_sender_seed, tmp_path) == _every_class(SENDER_STATES, "initiator")


def test_an_extension_header_announcing_more_headers_than_follow_is_waited_on_not_a_hang() -> None:
    """The receiver frames a UserMessage with the [MS-MQRR] 2.2.5 headers that follow it, 12 +
    RemainingHeadersSize bytes: announced beyond the bytes sent, it waits for them (and takes the
    probe sent after for them), which no timer the spec gives it ends; a complete one is answered."""
    mutation = Mutation("UserMessage[extension]", "ExtensionHeader.RemainingHeadersSize", "beyond-packet")
    with SimulatedPeer(time_scale=SCALE, ping_port=None) as peer:
        for data, outcome in ((None, "incomplete"), (b"", "answered")):
            ctx = Context(GUID(bytes(range(16))))
            conn = Connection(peer.address).open()
            try:
                reach(conn, STATES[2], ctx, Timers(SCALE).initialization())
                built = template(mutation.template).build(ctx)
                packet = mutation.apply(built, random.Random(1)) if data is None else packets.build(built)
                assert incomplete(packet) is (data is None)
                assert observe(conn, packet, "OPEN", ctx, Timers(SCALE)).outcome == outcome
            finally:
                conn.close()


class _NoInitializationTimer:
    """An acceptor on loopback that answers an EstablishConnection request (3.1.5.3.1) and then
    never closes the session: its Session Initialization Timer (3.1.2.1) never fires."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = self.server.getsockname()[:2]
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            sock, _ = self.server.accept()
            self.held.append(sock)
            splitter = StreamSplitter()
            while not splitter.feed(sock.recv(4096)):
                pass
            response = sp.establish_connection(GUID(bytes(16)), GUID(bytes(range(16))), 0, response=True)
            sock.sendall(packets.build(response))
            while sock.recv(4096):
                pass

    def close(self) -> None:
        for s in [self.server, *self.held]:
            s.close()
        self.thread.join(5)


def test_a_truncated_packet_before_open_is_judged_by_the_session_initialization_timer() -> None:
    """Before OPEN the Session Initialization Timer runs (3.1.5.10) and closes the session when it
    expires (3.1.6.6), whatever part of a packet the acceptor waits for: the conformant peer closes
    it, an acceptor without the timer hangs; in OPEN no timer obliges the acceptor to act."""
    mutation = Mutation("ConnectionParameters", "BaseHeader.PacketSize", "one-beyond")
    timers = Timers(SCALE)

    def truncated(ctx: Context) -> bytes:
        data = mutation.apply(template("ConnectionParameters").build(ctx), random.Random(1))
        assert incomplete(data)
        return data

    with SimulatedPeer(time_scale=SCALE, ping_port=None) as peer:
        for state, outcome in ((STATES[1], "closed"), (STATES[2], "incomplete")):
            ctx = Context(GUID(bytes(range(16))))
            conn = Connection(peer.address).open()
            try:
                reach(conn, state, ctx, timers.initialization())
                assert observe(conn, truncated(ctx), state.session_state, ctx, timers).outcome == outcome
            finally:
                conn.close()
    faulty = _NoInitializationTimer()
    try:
        ctx = Context(GUID(bytes(range(16))))
        conn = Connection(faulty.address).open()
        reach(conn, STATES[1], ctx, timers.initialization())
        reaction = observe(conn, truncated(ctx), "WAITING_CP_MSG", ctx, timers)
        assert reaction.outcome == "silent" and "Session Initialization Timer" in reaction.why
        conn.close()
    finally:
        faulty.close()
