"""Message expiration on the receiving side: the Acceptor and the passive Observer.

[MS-MQMQ] 2.2.19.1 BaseHeader.TimeToReachQueue: "If CURRENT_TIME - UserMessage.UserHeader.SentTime
is greater than the value of this field, then the UserMessage Packet has expired and MUST be deleted
by a sender and ignored by a receiver"; 0xFFFFFFFF "indicates an infinite time".  [MS-MQQB]
3.1.7.1.2: "The protocol MUST check the message for expiration before sending ... An expired
message ... MUST NOT be sent to the remote queue manager": an expired arrival is the sender's
violation (MQQB-3.1.7.1.2-expired), the message is ignored (no NACK: the receiver's text says
"ignored"), and the session goes on.  [MS-MQMQ] 2.2.19.2 TimeToBeReceived: "If the value is
exceeded, the message MUST be removed from the destination queue": not delivered, no violation.
"""

from __future__ import annotations

from typing import Any

import pytest
from brokenstreams import ACC, HANDSHAKE, INI, NOW, expired, run, sa, um

import packets
from harness.session import Acceptor, Observer, SessionConfig, Timer, user_message
from harness.session.actions import DeliveryClass
from harness.session.core import check_expiry, current_time
from harness.session.rules import RULES
from packets import session as sp


def _ids(acceptor: Acceptor) -> list[str]:
    return [v.rule_id for v in acceptor.violations]


def _delivered(acceptor: Acceptor) -> list[int]:
    return [int(p.UserHeader.MessageID) for p in acceptor.delivered]


def test_an_expired_message_is_reported_as_the_senders_and_not_delivered() -> None:
    r = run([*HANDSHAKE, um(1), expired(2), um(3)], wall_clock=NOW)
    assert _ids(r.acceptor) == ["MQQB-3.1.7.1.2-expired"]
    v = r.acceptor.violations[0]
    assert v.section == "MS-MQQB 3.1.7.1.2" == RULES[v.rule_id].section
    assert v.direction == "c2s" and v.packet_index == 3
    assert "SentTime" in v.evidence and "TimeToReachQueue 60" in v.evidence
    assert _delivered(r.acceptor) == [1, 3]
    assert r.acceptor.expired_ignored == 1
    # counted and acknowledged like any UserMessage (General Processing precedes Message Expiration)
    assert r.acceptor.counters.MessageReceivedCount == 3


@pytest.mark.parametrize(
    ("age", "ttrq", "delivered", "reported"),
    [
        (60, 60, True, False),  # CURRENT_TIME - SentTime equal to TimeToReachQueue: not greater, not expired
        (61, 60, False, False),  # expired by a second: ignored, within the clock tolerance
        (62, 60, False, True),  # expired beyond the tolerance: the sender's violation
        (10**6, 0xFFFFFFFF, True, False),  # 0xFFFFFFFF is infinite
        (-30, 0, True, False),  # SentTime ahead of the receiver's clock: not expired
    ],
)
def test_expiration_boundary(age: int, ttrq: int, delivered: bool, reported: bool) -> None:
    r = run([*HANDSHAKE, expired(1, age=age, ttrq=ttrq)], wall_clock=NOW)
    assert (_delivered(r.acceptor) == [1]) is delivered
    assert ("MQQB-3.1.7.1.2-expired" in _ids(r.acceptor)) is reported


def test_the_tolerance_is_configurable() -> None:
    strict = SessionConfig(expiry_tolerance=0)
    r = run(
        [*HANDSHAKE, expired(1, age=61, ttrq=60)],
        make=lambda: Acceptor(ACC, config=strict, wall_clock=lambda: NOW),
    )
    assert _ids(r.acceptor) == ["MQQB-3.1.7.1.2-expired"]


def test_without_a_wall_clock_no_expiration_is_checked() -> None:
    r = run([*HANDSHAKE, expired(1)])
    assert r.violations == [] and _delivered(r.acceptor) == [1]


def test_an_expired_transactional_message_is_ignored_before_transactional_processing() -> None:
    """Message Expiration precedes Transactional Message Processing (3.1.5.8): no OrderAck is
    scheduled for it and the incoming sequence does not move."""
    r = run([*HANDSHAKE, expired(1, delivery="transactional")], wall_clock=NOW)
    assert _ids(r.acceptor) == ["MQQB-3.1.7.1.2-expired"]
    assert r.acceptor.delivered == []
    assert Timer.OrderAckSend not in r.acceptor.running_timers
    assert r.acceptor.incoming_tx.get(bytes(INI), [0, 0])[1] == 0


def test_an_elapsed_time_to_be_received_removes_the_message_without_a_violation() -> None:
    headers = user_message(INI, ACC, b"ttbr", message_id=1, sent_time=NOW - 100)
    headers.UserHeader.TimeToBeReceived = 10
    r = run([*HANDSHAKE, packets.build(headers)], wall_clock=NOW)
    assert r.violations == [] and r.acceptor.delivered == []
    assert r.acceptor.time_to_be_received_elapsed == 1


def test_the_session_goes_on_after_an_expired_message() -> None:
    r = run([*HANDSHAKE, expired(1), sa(0, 1), um(2)], wall_clock=NOW)
    assert _ids(r.acceptor) == ["MQQB-3.1.7.1.2-expired"]
    assert _delivered(r.acceptor) == [2]
    assert r.acceptor.SessionState.value == "OPEN"


def test_check_expiry_uses_whole_seconds() -> None:
    headers = user_message(INI, ACC, b"", message_id=1, sent_time=100)
    headers.BaseHeader.TimeToReachQueue = 5
    packet = packets.parse(packets.build(headers))
    assert current_time(105.999) == 105
    assert check_expiry(packet, current_time(105.999)) == (False, [])
    expired_now, findings = check_expiry(packet, current_time(106.0))
    assert expired_now and [f[0] for f in findings] == ["MQQB-3.1.7.1.2-expired"]


# -------------------------------------------------------------------------------------- observer


def _observed(client: list[Any], timestamp: float | None) -> Observer:
    o = Observer(ACC)
    ec_req, cp_req = client[0], client[1]
    o.client_data(ec_req, timestamp)
    req = packets.parse(ec_req).EstablishConnectionHeader
    o.server_data(packets.build(sp.establish_connection(req.ClientGuid, ACC, req.TimeStamp)), timestamp)
    o.client_data(cp_req, timestamp)
    o.server_data(packets.build(sp.connection_parameters(0x1F4, 0x4E20, 64)), timestamp)
    for data in client[2:]:
        o.client_data(data, timestamp)
    o.end()
    return o


def test_the_observer_reports_an_expired_message_at_its_capture_time() -> None:
    o = _observed([*HANDSHAKE, um(1), expired(2)], NOW + 0.25)
    assert [(v.rule_id, v.direction, v.packet_index) for v in o.violations] == [("MQQB-3.1.7.1.2-expired", "c2s", 5)]
    assert o.expired == 1 and o.closing is None


def test_the_observer_judges_by_the_capture_clock_not_its_own() -> None:
    # the same bytes, captured an hour earlier (when SentTime was now): not expired
    assert _observed([*HANDSHAKE, expired(2)], NOW - 3600).violations == []
    # without capture timestamps expiration is not checked
    assert _observed([*HANDSHAKE, expired(2)], None).violations == []


def test_a_message_sent_now_with_time_to_reach_queue_0_is_not_expired_within_its_second() -> None:
    headers = user_message(INI, ACC, b"fresh", message_id=7, sent_time=NOW, delivery=DeliveryClass.recoverable)
    headers.BaseHeader.TimeToReachQueue = 0
    assert _observed([*HANDSHAKE, packets.build(headers)], NOW + 0.9).violations == []
