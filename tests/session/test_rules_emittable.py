"""Every session rule (harness.session.rules.RuleId) can be emitted by the engine that checks it.

A rule of a sender (side "initiator" or "both") is broken by a stream of its own in
``brokenstreams.SCENARIOS`` and reported by the Acceptor (and the Observer, when no timer is
involved); a rule of an acceptor (side "acceptor") is broken by a reply fed to the Initiator, or, for
the order of OrderAcks, seen by the Observer.  A rule no engine can emit does not belong in the table.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from brokenstreams import ACC, SCENARIOS, cp, ec, order_ack, run, um
from test_policy import _open_initiator

import packets
from harness.session import RULES, Observer, RuleViolation, SessionState
from harness.session.rules import RuleId

OTHER = packets.GUID("{12121212-3434-5656-7878-909090909090}")


def _initiator(ec_changes: dict[str, object], cp_changes: dict[str, int] | None = None) -> list[str]:
    i, _ = _open_initiator(ec_changes, cp_changes or {})
    return [str(v.rule_id) for v in i.violations]


def _refusal() -> list[str]:
    """The request names a ServerGuid (OTHER) that is not the acceptor's, and the reply accepts."""
    from test_policy import Initiator, Send, _ec_reply

    i = Initiator(packets.GUID("{11111111-2222-3333-4444-555555555555}"), OTHER)
    actions = [*i.start(), *i.connection_made()]
    request = next(a.data for a in actions if isinstance(a, Send) and a.packet_kind.name == "EstablishConnection")
    i.receive_data(_ec_reply(request))
    return [str(v.rule_id) for v in i.violations]


def _order_ack_order() -> list[str]:
    """Two transactional messages, then OrderAcks for number 2 and then number 1."""
    o = Observer(ACC)
    request, cp_request = ec(), cp()
    o.client_data(request)
    from test_policy import _cp_reply, _ec_reply

    o.server_data(_ec_reply(request))
    o.client_data(cp_request)
    o.server_data(_cp_reply(cp_request))
    o.client_data(um(1, "transactional", tx=(1, 1, 0)))
    o.client_data(um(2, "transactional", tx=(1, 2, 1)))
    o.server_data(order_ack(1, 2))
    o.server_data(order_ack(1, 1))
    return [str(v.rule_id) for v in o.violations]


def _ack_timeout() -> list[str]:
    """A message awaiting its acknowledgment when the Session Ack Wait Timer expires, nothing received."""
    i, _ = _open_initiator({}, {})
    assert i.SessionState is SessionState.OPEN
    i.send_message(um(1), "express")
    out = [
        *i.timer_fired("SessionAckWait"),
        *i.timer_fired("SessionAckWait"),
    ]  # 3.1.6.3: the second finds nothing received
    return [str(a.rule_id) for a in out if isinstance(a, RuleViolation)]


ACCEPTOR_SIDE: dict[str, Callable[[], list[str]]] = {
    RuleId.MQQB_2_2_3_1_RESPONSE_PADDING: lambda: _initiator({"padding": b"\x00" * packets.session.PADDING_SIZE}),
    RuleId.MQQB_3_1_5_3_1_EC_ECHO: lambda: _initiator({"TimeStamp": 5}),
    RuleId.MQQB_3_1_5_3_2_EC_RESPONSE: lambda: _initiator({"ClientGuid": OTHER}),
    RuleId.MQQB_3_1_5_4_1_CP_ECHO: lambda: _initiator({}, {"AckTimeout": 0x4E21}),
    RuleId.MQQB_3_1_5_3_1_REFUSAL: _refusal,
    RuleId.MQQB_3_1_1_6_2_ORDER_ACK_ORDER: _order_ack_order,
    RuleId.MQQB_3_1_6_3_ACK_TIMEOUT: _ack_timeout,
}


@pytest.mark.parametrize("rule_id", list(RuleId))
def test_every_rule_can_be_emitted(rule_id: RuleId) -> None:
    assert rule_id in RULES and RULES[rule_id].id is rule_id
    if rule_id in SCENARIOS:
        scenario = SCENARIOS[rule_id]
        emitted = [
            str(v.rule_id) for v in run(scenario.steps, scenario.behaviour, wall_clock=scenario.wall_clock).violations
        ]
    else:
        assert rule_id in ACCEPTOR_SIDE, f"no engine input emits {rule_id}"
        emitted = ACCEPTOR_SIDE[rule_id]()
    assert str(rule_id) in emitted, emitted


def test_rule_ids_are_their_strings_and_the_codec_rules_come_from_the_rules() -> None:
    from harness.session.core import CODEC_RULES

    assert RuleId.MQQB_3_1_5_1_2_SIGNATURE == "MQQB-3.1.5.1.2-signature"
    assert set(RULES) == {r.value for r in RuleId}
    assert {r.codec_field: r.id for r in RULES.values() if r.codec_field} == CODEC_RULES
    assert CODEC_RULES["InternalHeader.Flags.PT"] is RuleId.MQQB_3_1_5_1_1_UNKNOWN_PACKET
