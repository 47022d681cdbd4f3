"""Initiator-side rules checked by the Acceptor ([MS-MQQB] 3.1.5.1-3.1.5.9, 3.1.7.1, 3.1.1.4-3.1.1.6, 2.2).

Every rule of ``initiator_rules()`` has a deliberately broken client stream (``brokenstreams``,
built with ``packets.build``); the Acceptor reports the rule with its section on the packet that
broke it, and the passive Observer finds the same rule in the recorded two-way stream.  A
conformant stream, and the project's own Initiator, produce no violation at all.
"""

from __future__ import annotations

import pytest
from brokenstreams import ACC, CONFORMANT, INI, SCENARIOS, run
from sessionloop import Wire

from harness.session import RULES, Acceptor, Initiator, Observer, initiator_rules, user_message


def observe(recording: list[tuple[str, bytes]]) -> Observer:
    o = Observer(ACC)
    for direction, data in recording:
        (o.client_data if direction == "client" else o.server_data)(data)
    o.end()
    return o


def test_initiator_rules_are_the_initiator_and_both_sides_of_the_table() -> None:
    ids = [r.id for r in initiator_rules()]
    assert ids == [r.id for r in RULES.values() if r.side in ("initiator", "both")]
    assert {r.side for r in RULES.values()} <= {"initiator", "acceptor", "both", "record"}
    assert "MQQB-3.1.5.3.1-ec-echo" not in ids and "MQQB-3.1.5.8-wrong-state" in ids
    assert len(ids) >= 40


@pytest.mark.parametrize("rule_id", [r.id for r in initiator_rules()])
def test_broken_stream_is_reported_by_the_acceptor(rule_id: str) -> None:
    assert rule_id in SCENARIOS, f"no broken stream for {rule_id}"
    scenario = SCENARIOS[rule_id]
    r = run(scenario.steps, scenario.behaviour, wall_clock=scenario.wall_clock)
    found = [v for v in r.violations if v.rule_id == rule_id]
    assert found, [(v.rule_id, v.evidence) for v in r.violations]
    v = found[0]
    assert v.section == RULES[rule_id].section and v.direction == "c2s" and v.evidence
    assert v.packet_index >= -1
    if scenario.observable:
        seen = [x.rule_id for x in observe(r.recording).violations]
        assert rule_id in seen, seen


def test_conformant_stream_leaves_no_violation() -> None:
    r = run(CONFORMANT)
    assert r.violations == []
    assert len(r.acceptor.delivered) == 11
    assert observe(r.recording).violations == []


def test_conformant_initiator_leaves_no_violation_in_the_acceptor() -> None:
    acceptor = Acceptor(ACC)
    w = Wire(Initiator(INI, ACC), acceptor)
    for n in range(300):
        w.send(user_message(INI, ACC, b"e%d" % n), ("express", "recoverable", "transactional")[n % 3])
    w.finish()
    assert acceptor.violations == []
    assert len(w.delivered) == 300


def test_window_is_the_one_the_initiator_announced() -> None:
    scenario = SCENARIOS["MQQB-3.1.7.1-window-exceeded"]
    r = run(scenario.steps[:-1], scenario.behaviour)  # two unacknowledged messages fit a window of 2
    assert not r.violations
