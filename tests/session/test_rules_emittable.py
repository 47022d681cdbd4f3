"""Every session rule (harness.session.rules.RuleId) can be emitted by the engine that checks it.

A rule of a sender (side "initiator" or "both") is broken by a stream of its own in
``brokenstreams.SCENARIOS`` and reported by the Acceptor (and the Observer, when no timer is
involved); a rule of an acceptor (side "acceptor") is broken by a reply fed to the Initiator, or, for
the order of OrderAcks, seen by the Observer.  A rule no engine can emit does not belong in the table.
"""

from __future__ import annotations

import pytest
from brokenstreams import SCENARIOS, run
from sessionkit import ACCEPTOR_SIDE

from harness.session import RULES
from harness.session.rules import RuleId


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
