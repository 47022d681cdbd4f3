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

import random
import sys
from pathlib import Path

import packets
from harness.cases.targets.registry import make_target
from harness.fuzz.engine import Fuzzer, FuzzOptions, FuzzReport, mutation_class
from harness.fuzz.generate import KINDS, Context, Mutation, mutations_for, template
from harness.fuzz.oracles import Timers, incomplete, observe
from harness.fuzz.sender import SENDER_STATES, SenderFuzzer
from harness.fuzz.states import STATES, Connection, State, reach
from harness.peers import SimulatedPeer
from packets import GUID

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
        duration=60.0,
        keep_going=True,
        restart_wait=10.0,
        timers=Timers(SCALE),
        out=out,
    )


def _reached(report: FuzzReport) -> set[tuple[str, str, str]]:
    return set(report.classes)


def _findings(report: FuzzReport) -> list[str]:
    return [f"{f.oracle} in {f.state} after {f.template} {f.field} {f.op}: {f.why}" for f in report.findings]


def test_the_reference_acceptor_gives_no_finding_over_every_state_kind_and_class(tmp_path: Path) -> None:
    reached: set[tuple[str, str, str]] = set()
    with SimulatedPeer(time_scale=SCALE, ping_port=None) as peer:
        for seed in (1, 2, 3):
            options = _options(peer.address, "mqqb://simulated", seed, 800, tmp_path / str(seed))
            report = Fuzzer(options).run()
            assert _findings(report) == [], f"seed {seed}"
            reached |= _reached(report)
    assert reached == _every_class(STATES, "acceptor")


def test_the_reference_sender_gives_no_finding_over_every_state_kind_and_class(tmp_path: Path) -> None:
    reached: set[tuple[str, str, str]] = set()
    target = make_target(REFERENCE, timeout=10.0)
    try:
        target.hello()
        for seed in (1, 2):
            fuzzer = SenderFuzzer(_options(("127.0.0.1", 0), REFERENCE, seed, 120, tmp_path / str(seed)), target)
            try:
                report = fuzzer.run()
            finally:
                fuzzer.close()
            assert _findings(report) == [], f"seed {seed}"
            reached |= _reached(report)
    finally:
        target.close()
    assert reached == _every_class(SENDER_STATES, "initiator")


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
