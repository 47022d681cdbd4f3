"""Peer policy: report everything, close only where the spec closes.

Whether a rule closes the session is declared once, in the rule table
(``harness.session.rules.RULES``, ``Rule.close_section``); the Acceptor, the Initiator and the
Observer read it.  These tests state the closing set with the section of each, check that a
sender committing many rules that do not close gets every one reported on a session that stays
open, that every closing rule closes with its section, and that no Close happens without a
closing rule (or a timer event or behaviour that closes).
"""

from __future__ import annotations

import pytest
from brokenstreams import (
    ACC,
    INI,
    NOW,
    SCENARIOS,
    Step,
    cp,
    ec,
    expired,
    final_ack,
    order_ack,
    run,
    sa,
    um,
)
from construct import Container
from sessionkit import open_initiator, open_observer

import packets
from harness.session import (
    RULES,
    Close,
    Deliver,
    RuleViolation,
    SessionState,
    closing_rules,
    initiator_rules,
)
from harness.session.core import CODEC_RULES, check_packet
from packets import session as sp

# The closing set, rule by rule, with the section whose text closes the session.
CLOSES: dict[str, str] = {
    # 3.1.5.1.2: "the protocol MUST discard the received packet, perform no further processing for
    # it, and then close the session"
    "MQQB-3.1.5.1.2-signature": "MS-MQQB 3.1.5.1.2",
    # 3.1.5.1.3: a packet that "does not conform to the structures specified in Messages (section
    # 2)": discard and close.  Every field rule the codec checks is such a packet.
    "MQQB-3.1.5.1.3-malformed": "MS-MQQB 3.1.5.1.3",
    "MQQB-3.1.5.1.1-unknown-packet": "MS-MQQB 3.1.5.1.3",  # also 2.2.1: PT "MUST be treated as an error by closing"
    "MQQB-2.2.1-cs-flag": "MS-MQQB 3.1.5.1.3",
    "MQMQ-2.2.19.1-time-to-reach-queue": "MS-MQQB 3.1.5.1.3",
    "MQQB-2.2.2.1-recoverable-ack-timeout": "MS-MQQB 3.1.5.1.3",
    "MQQB-2.2.2.1-ack-timeout": "MS-MQQB 3.1.5.1.3",
    "MQQB-2.2.3.1-operating-system": "MS-MQQB 3.1.5.1.3",
    "MQMQ-2.2.20.5-tx-number": "MS-MQQB 3.1.5.1.3",
    # the first line of 3.1.5.3-3.1.5.8: "If the SessionState ADM element is not set to ..., the
    # protocol MUST close the session"
    "MQQB-3.1.5.3-wrong-state": "MS-MQQB 3.1.5.3",
    "MQQB-3.1.5.4-wrong-state": "MS-MQQB 3.1.5.4",
    "MQQB-3.1.5.5-wrong-state": "MS-MQQB 3.1.5.5",
    "MQQB-3.1.5.6-wrong-state": "MS-MQQB 3.1.5.6",
    "MQQB-3.1.5.7-wrong-state": "MS-MQQB 3.1.5.7",
    "MQQB-3.1.5.8-wrong-state": "MS-MQQB 3.1.5.8",
    # 3.1.5.3.2: "If the packet is invalid, the protocol MUST discard the packet and close the session"
    "MQQB-3.1.5.3.2-ec-response": "MS-MQQB 3.1.5.3.2",
    # 3.1.5.3.1: "If the connection is rejected, the protocol closes the session"
    "MQQB-3.1.5.3.2-after-refusal": "MS-MQQB 3.1.5.3.1",
    # 3.1.5.5.5: a count mismatch: "the protocol MUST close the session"
    "MQQB-3.1.5.5.5-count-mismatch": "MS-MQQB 3.1.5.5.5",
    # timer events that close: 3.1.6.3 Session Ack Wait, 3.1.6.6 Session Initialization
    "MQQB-3.1.6.3-ack-timeout": "MS-MQQB 3.1.6.3",
    "MQQB-3.1.6.6-init-timeout": "MS-MQQB 3.1.6.6",
}
# Rules a receiver MUST ignore on receipt, or that prescribe no close, stay open; among them:
NEVER_CLOSE = {
    "MQQB-2.2.1-reserved",  # 2.2.1: "MUST be ignored on receipt"
    "MQQB-2.2.2.1-reserved",  # 2.2.2.1: "MUST be ignored by the receiver"
    "MQQB-2.2.3.1-reserved",  # 2.2.3.1: "MUST be ignored on receipt"
    "MQQB-3.1.7.1.2-expired",  # [MS-MQMQ] 2.2.19.1: the message is "ignored by a receiver", the session goes on
    "MQQB-3.1.5.1.3-truncated",  # the transport is already gone
    "MQQB-3.1.5.9-closed-early",  # likewise
}


def test_the_rule_table_closes_exactly_where_the_spec_closes() -> None:
    assert closing_rules() == CLOSES
    for r in RULES.values():
        assert r.closes_session == (r.id in CLOSES), r.id
        assert r.close_section == CLOSES.get(r.id, ""), r.id
        if r.closes_session:
            assert r.close_section.startswith(("MS-MQQB ", "MS-MQMQ ")), r.id
    assert set(RULES) >= NEVER_CLOSE and not NEVER_CLOSE & set(CLOSES)


def test_every_finding_of_a_discarded_packet_is_a_rule_that_closes() -> None:
    """check_packet discards a packet (3.1.5.1.2, 3.1.5.1.3); every rule it can name closes."""
    for rule_id in {*CODEC_RULES.values(), "MQQB-3.1.5.1.2-signature", "MQQB-3.1.5.1.3-malformed"}:
        assert RULES[rule_id].closes_session, rule_id
    data = bytearray(packets.build(sp.connection_parameters(0x10, 0x100, 64)))  # both timeouts out of range
    packet, findings = check_packet(bytes(data))
    assert packet is None
    assert {f[0] for f in findings} == {"MQQB-2.2.2.1-recoverable-ack-timeout", "MQQB-2.2.2.1-ack-timeout"}


def _closes(actions: list[object]) -> list[Close]:
    return [a for a in actions if isinstance(a, Close)]


def test_a_sender_breaking_many_rules_that_do_not_close_gets_all_reported_and_the_session_stays_open() -> None:
    sent: list[Step] = [
        ec(InternalHeader__Reserved=7, EstablishConnectionHeader__Reserved=7),  # 2.2.1, 2.2.3.1 reserved
        cp(cs=True, window=2, ConnectionParametersHeader__Reserved=1),  # 3.1.5.3.2 CS, 2.2.2.1 reserved
        um(0),  # MessageID 0 (3.1.7.1.1)
        um(5),
        um(5),  # sent twice on the session (3.1.1.4)
        expired(6),  # expired before it was sent (3.1.7.1.2)
        um(10, "transactional", tx=(1, 2, 2)),  # PreviousTxSequenceNumber not below TxSequenceNumber
        sa(3, 5, rsent=1),  # acknowledges 3 UserMessages; the acceptor sent none (3.1.5.5.1)
        sa(0, 5, flags=1, rsent=1),  # goes back to 0 (3.1.1.6.1); recoverable flags, nothing recoverable sent
        order_ack(),  # for a transactional message the acceptor never sent (3.1.5.6)
        final_ack(),  # for a message the acceptor never sent (3.1.5.7)
        um(20),  # a conformant message after all that
    ]
    r = run(sent, "late-ack", wall_clock=NOW)  # acknowledgments on the timer only: the window is exceeded
    reported = [v.rule_id for v in r.violations]
    expected = {
        "MQQB-2.2.1-reserved",
        "MQQB-2.2.3.1-reserved",
        "MQQB-3.1.5.3.2-cp-request",
        "MQQB-2.2.2.1-reserved",
        "MQQB-3.1.7.1.1-message-id",
        "MQQB-3.1.5.8.1-duplicate",
        "MQQB-3.1.7.1.2-expired",
        "MQQB-3.1.7.1-window-exceeded",
        "MQQB-3.1.7.1.3-tx-previous",
        "MQQB-3.1.5.5.1-ack-beyond-sent",
        "MQQB-3.1.5.5.1-ack-regressed",
        "MQQB-3.1.1.6.1-sender-ack-fields",
        "MQQB-3.1.5.6-order-ack-unsent",
        "MQQB-3.1.5.7-final-ack-unknown",
    }
    assert set(reported) == expected, reported
    assert not any(RULES[rid].closes_session for rid in reported)
    assert _closes(r.actions) == []
    a = r.acceptor
    assert a.SessionState is SessionState.OPEN
    delivered = [int(p.UserHeader.MessageID) for p in a.delivered]
    assert 20 in delivered and 6 not in delivered  # the expired message is ignored, the last one delivered
    assert a.counters.MessageReceivedCount == 8  # every UserMessage Packet counted, OrderAck and FinalAck too


@pytest.mark.parametrize("rule_id", [r.id for r in initiator_rules()])
def test_the_acceptor_closes_on_a_rule_exactly_when_the_table_says(rule_id: str) -> None:
    scenario = SCENARIOS[rule_id]
    r = run(scenario.steps, scenario.behaviour, wall_clock=scenario.wall_clock)
    index = next(i for i, a in enumerate(r.actions) if isinstance(a, RuleViolation) and a.rule_id == rule_id)
    # what the engine did in answer to the packet (or timer) that broke the rule
    after: list[object] = []
    for a in r.actions[index + 1 :]:
        if isinstance(a, RuleViolation) and a.packet_index != r.actions[index].packet_index:  # type: ignore[attr-defined]
            break
        after.append(a)
    closes = _closes(after)
    if RULES[rule_id].closes_session:
        assert closes and closes[0].section == RULES[rule_id].close_section, after
        assert r.acceptor.SessionState is SessionState.CLOSED
    else:
        closing = [a for a in after if isinstance(a, RuleViolation) and RULES[a.rule_id].closes_session]
        assert not closes or closing, f"{rule_id} does not close the session, yet: {after}"


@pytest.mark.parametrize("rule_id", [r.id for r in initiator_rules()])
def test_no_close_without_a_rule_that_closes(rule_id: str) -> None:
    """Every Close the Acceptor performs follows a violation of a rule that closes, with that rule's
    section (timer events and behaviours that close say their own section)."""
    scenario = SCENARIOS[rule_id]
    r = run(scenario.steps, scenario.behaviour, wall_clock=scenario.wall_clock)
    last: RuleViolation | None = None
    for a in r.actions:
        if isinstance(a, RuleViolation) and RULES[a.rule_id].closes_session and last is None:
            last = a
        if isinstance(a, Close):
            assert last is not None and a.section == RULES[last.rule_id].close_section, (a, last)
            last = None


# ------------------------------------------------------------------------------------- initiator


def test_an_acceptor_breaking_rules_that_do_not_close_gets_all_reported_and_the_session_opens() -> None:
    i, actions = open_initiator(
        {"TimeStamp": 5, "padding": b"\x00" * sp.PADDING_SIZE}, {"AckTimeout": 0x4E21, "RecoverableAckTimeout": 0x1F5}
    )
    ids = [v.rule_id for v in i.violations]
    assert ids == [
        "MQQB-2.2.3.1-response-padding",
        "MQQB-3.1.5.3.1-ec-echo",
        "MQQB-3.1.5.4.1-cp-echo",
        "MQQB-3.1.5.4.1-cp-echo",
    ]
    assert _closes(actions) == []
    assert i.SessionState is SessionState.OPEN
    # a UserMessage from the acceptor that arrives expired is ignored and reported, the session stays open
    late = packets.build(_acceptor_message(sent_time=NOW - 600, ttrq=30))
    out = i.receive_data(late)
    assert [v.rule_id for v in out if isinstance(v, RuleViolation)] == ["MQQB-3.1.7.1.2-expired"]
    assert not any(isinstance(a, Deliver) for a in out) and i.received == []
    assert i.SessionState is SessionState.OPEN


def test_an_invalid_ec_response_closes_the_initiator_with_its_section() -> None:
    other = packets.GUID("{12121212-3434-5656-7878-909090909090}")
    i, actions = open_initiator({"ClientGuid": other}, {})
    assert [v.rule_id for v in i.violations] == ["MQQB-3.1.5.3.1-ec-echo", "MQQB-3.1.5.3.2-ec-response"]
    assert [c.section for c in _closes(actions)] == ["MS-MQQB 3.1.5.3.2"]


def _acceptor_message(sent_time: int, ttrq: int) -> Container:
    from harness.session import user_message

    headers = user_message(ACC, INI, b"back", message_id=1, sent_time=sent_time)
    headers.BaseHeader.TimeToReachQueue = ttrq
    return headers


# -------------------------------------------------------------------------------------- observer


def test_the_observer_marks_the_first_violation_that_closes() -> None:
    o = open_observer()
    o.client_data(um(0))  # does not close
    assert o.closing is None
    o.client_data(ec())  # an EstablishConnection in an open session closes (3.1.5.3)
    assert o.closing is not None and o.closing.rule_id == "MQQB-3.1.5.3-wrong-state"
    o.client_data(sa(9, 9))
    assert o.closing.rule_id == "MQQB-3.1.5.3-wrong-state"  # the first one stays
