"""Every UserMessage the harness sends in the wire corpus is valid when it arrives: UserHeader.SentTime
is the time it was sent, in seconds since 1970 ([MS-MQMQ] 2.2.19.2), and neither TimeToReachQueue
(2.2.19.1: "If CURRENT_TIME - UserMessage.UserHeader.SentTime is greater than the value of this
field, then the UserMessage Packet has expired") nor TimeToBeReceived has run out: no conformant
receiver may discard it as expired.  These are the packets the acceptor cases craft (``send``); the
UserMessages of a sender under test (initiator cases) are checked by the harness's simulated peer,
whose rule MQQB-3.1.7.1.2-expired the cases' ``then.peer.violations: []`` reads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import packets
from harness.cases.loader import load_paths
from harness.cases.model import Case
from harness.cases.targets import make_target
from harness.cases.targets.wire import run_wire_case
from packets import PacketKind, base

WIRE = Path(__file__).resolve().parents[2] / "cases" / "mqqb"
ARRIVAL = 5  # seconds a packet may take to arrive and be processed, on loopback a generous bound
CLOCK_STEP = 1  # SentTime counts whole seconds


def _expired(sent_time: int, lifetime: int, now: float) -> bool:
    """[MS-MQMQ] 2.2.19.1: expired when CURRENT_TIME - SentTime is greater than the lifetime."""
    return lifetime != base.INFINITE and now - sent_time > lifetime


def _user_messages(case: Case) -> list[tuple[str, float, packets.Packet]]:
    sent: list[tuple[float, bytes]] = []
    result = run_wire_case(case, make_target("reference"), on_sent=lambda ts, data: sent.append((ts, data)))
    assert str(result.outcome) == "passed", (case.full_id, result.detail)
    out = []
    for ts, data in sent:
        try:
            packet = packets.parse(data, strict=False)
        except packets.PacketError:
            continue  # a deliberately malformed packet of the case, no UserMessage
        if packet.kind is PacketKind.UserMessage:
            out.append((case.full_id, ts, packet))
    return out


def test_no_user_message_the_harness_sends_is_expired_on_arrival() -> None:
    cases = load_paths([WIRE])
    with ThreadPoolExecutor(max_workers=8) as pool:
        found = [m for per_case in pool.map(_user_messages, cases) for m in per_case]
    sides = {case.full_id: case.given["peer"]["under_test"] for case in cases}
    assert {sides[case_id] for case_id, _, _ in found} == {"acceptor"}
    assert len(found) >= 15
    for case_id, ts, packet in found:
        uh, bh = packet.UserHeader, packet.BaseHeader
        sent_time = int(uh.SentTime)
        # the time of sending: not before the packet was built, not after it was written
        assert ts - ARRIVAL <= sent_time <= ts + CLOCK_STEP, (case_id, sent_time, ts)
        arrival = ts + ARRIVAL
        assert not _expired(sent_time, int(bh.TimeToReachQueue), arrival), (case_id, int(bh.TimeToReachQueue))
        assert not _expired(sent_time, int(uh.TimeToBeReceived), arrival), (case_id, int(uh.TimeToBeReceived))
        assert int(bh.TimeToReachQueue) > ARRIVAL  # finite lifetimes leave room for the journey


def test_the_expiry_check_finds_a_message_sent_at_the_epoch() -> None:
    """What the harness sent before: SentTime 0 with the model's TimeToReachQueue of four days."""
    assert _expired(0, 0x54600, 1_700_000_000)
    assert not _expired(0, base.INFINITE, 1_700_000_000)
    assert not _expired(1_700_000_000, 0x54600, 1_700_000_000 + 0x54600)
