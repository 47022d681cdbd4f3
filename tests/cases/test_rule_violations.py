"""The rules a peer breaks, graded one by one by their own requirements (docs/cases.md, "Rules the
peer reports").

A wire case's ``then.peer.violations`` lists the session rules it expects the session to show.
Each rule the session shows that the list does not name, and each named rule it does not show, is
one difference graded by that rule's requirement in cases/requirements.yaml (a rule id is a
requirement id): a MUST rule ``failed``, a SHOULD or interpretation rule ``non_strict``, a "record"
rule never.  A case checking an initiator grades the rules the simulated peer checks of a sender;
a case checking an acceptor the rules a passive observer checks of its replies.  ``msmq-harness
coverage`` counts a rule's requirement as covered by the cases that cite it or watch it.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from harness.cases.coverage import coverage, render_coverage
from harness.cases.grading import grade
from harness.cases.lines import CaseError
from harness.cases.loader import BUNDLED_REQUIREMENTS, load_requirements, load_text
from harness.cases.model import Case, SpecRef
from harness.cases.runner import run
from harness.cases.violations import graded_violation, rule_requirement, watched_rules
from harness.cases.wireruns.base import violation_failures
from harness.results import StepFailure
from harness.session import RuleViolation
from harness.session.rules import RULES, RuleId

ACK_BEYOND_SENT = RuleId.MQQB_3_1_5_5_1_ACK_BEYOND_SENT.value  # MUST, side both
DUPLICATE = RuleId.MQQB_3_1_5_8_1_DUPLICATE.value  # interpretation, side initiator
ACK_TIMEOUT = RuleId.MQQB_3_1_6_3_ACK_TIMEOUT.value  # SHOULD, side acceptor, a timer's
EC_ECHO = RuleId.MQQB_3_1_5_3_1_EC_ECHO.value  # MUST, side acceptor

ACCEPTOR_CASE = """\
id: t.acceptor.acknowledges
title: an acceptor acknowledges a UserMessage
spec: [{section: MS-MQQB 3.1.6.3, requirement: MQQB-3.1.6.3-ack-timeout}]
given: {peer: {under_test: acceptor}}
when:
  - action: send
    args: {packet: EstablishConnection}
  - action: receive
    args: {packet: EstablishConnection, within: SessionInitialization}
  - action: send
    args: {packet: ConnectionParameters}
  - action: receive
    args: {packet: ConnectionParameters, within: SessionInitialization}
  - action: send
    args: {packet: UserMessage}
  - action: receive
    args: {packet: SessionAck, within: 2 * SessionAckWait}
then:
  peer: {violations: []}
"""


def _violation(rule_id: str, index: int = 3, direction: str = "c2s") -> RuleViolation:
    return RuleViolation.of(rule_id, index, f"evidence of {rule_id}", direction)


def _failure(field: str = "peer.violations") -> StepFailure:
    return StepFailure(step=-1, event="then", field=field, expected="not reported", observed="reported", section="")


@pytest.fixture(scope="module")
def case() -> Case:
    (loaded,) = load_text(ACCEPTOR_CASE, "tests/cases/rules.yaml")
    return loaded


# ------------------------------------------------------------------------------ the differences
def test_each_rule_seen_and_not_named_is_one_difference_of_its_own_rule() -> None:
    seen = [_violation(ACK_BEYOND_SENT, 3), _violation(DUPLICATE, 5), _violation(ACK_BEYOND_SENT, 9)]
    failures = violation_failures([], seen)
    assert [(f.field, f.rule) for f in failures] == [
        (f"peer.violations[{ACK_BEYOND_SENT}]", ACK_BEYOND_SENT),
        (f"peer.violations[{DUPLICATE}]", DUPLICATE),
    ]
    first = failures[0]
    assert first.expected == "not reported"
    assert first.observed.startswith("reported 2 times; first at packet 3 (initiator): evidence of")
    assert first.evidence.count("\n") == 1 and "MS-MQQB 3.1.5.5.1 at packet 9 c2s" in first.evidence


def test_a_named_rule_is_expected_and_one_not_seen_is_a_difference_of_its_own_rule() -> None:
    assert violation_failures([DUPLICATE], [_violation(DUPLICATE)]) == []
    (missing,) = violation_failures({"is": [ACK_BEYOND_SENT]}, [])
    assert (missing.field, missing.rule, missing.expected, missing.observed) == (
        f"peer.violations[{ACK_BEYOND_SENT}]",
        ACK_BEYOND_SENT,
        "reported",
        "none reported",
    )


def test_a_record_rule_is_counted_never_graded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(RULES, DUPLICATE, replace(RULES[DUPLICATE], side="record"))
    assert not RULES[DUPLICATE].graded
    assert violation_failures([], [_violation(DUPLICATE)]) == []


# -------------------------------------------------------------------------------------- grading
def test_a_rule_is_graded_by_its_requirement_even_when_the_case_does_not_cite_it(case: Case) -> None:
    listed = {r.id: r for r in load_requirements(BUNDLED_REQUIREMENTS)}
    assert ACK_BEYOND_SENT not in case.requirements
    assert rule_requirement(case, ACK_BEYOND_SENT) == listed[ACK_BEYOND_SENT]
    failure = graded_violation(case, None, _failure(), ACK_BEYOND_SENT)
    assert (failure.requirement, failure.level, failure.section) == (ACK_BEYOND_SENT, "MUST", "MS-MQQB 3.1.5.5.1")
    assert failure.quote == listed[ACK_BEYOND_SENT].quote
    assert grade(failure.level) == "failed"
    assert ACK_BEYOND_SENT not in case.requirements  # the case is left as loaded


@pytest.mark.parametrize(
    ("rule_id", "level"), [(DUPLICATE, "interpretation"), (ACK_TIMEOUT, "SHOULD"), (EC_ECHO, "MUST")]
)
def test_the_level_of_the_rule_grades_it(case: Case, rule_id: str, level: str) -> None:
    failure = graded_violation(case, None, _failure(), rule_id)
    assert (failure.requirement, failure.level, failure.section) == (rule_id, level, RULES[rule_id].section)
    assert grade(failure.level) == ("failed" if level == "MUST" else "non_strict")


def test_a_broken_reply_fails_under_the_rule_it_breaks() -> None:
    """The simulated peer with the fault behaviour bad-padding answers with 0x00 padding: the
    observer of the case's connection reports MQQB-2.2.3.1-response-padding, a MUST."""
    cases = [c for c in load_text(ACCEPTOR_CASE.replace("t.acceptor", "t.acceptor.padded"), "rules.yaml")]
    assert run(cases, "reference").ok
    (result,) = run(cases, "reference?peer=bad-padding").results
    assert str(result.outcome) == "failed"
    padding = RuleId.MQQB_2_2_3_1_RESPONSE_PADDING.value
    (failure,) = [f for f in result.failures if f.field == f"peer.violations[{padding}]"]
    assert (failure.requirement, failure.level, failure.section) == (padding, "MUST", "MS-MQQB 2.2.3.1")
    assert "(acceptor)" in str(failure.observed)


# ---------------------------------------------------------------------------------------- loading
def test_then_peer_violations_names_session_rules() -> None:
    with pytest.raises(CaseError) as err:
        load_text(ACCEPTOR_CASE.replace("violations: []", "violations: [MQQB-3.1.5.5.1-ack-beyond]"), "r.yaml")
    assert err.value.key == "then.peer.violations[0]"
    assert "not a session rule" in err.value.message and ACK_BEYOND_SENT in err.value.message


def test_a_case_checking_an_acceptor_checks_no_other_peer_record() -> None:
    with pytest.raises(CaseError) as err:
        load_text(ACCEPTOR_CASE.replace("violations: []", "violations: [], connections: 1"), "r.yaml")
    assert "then.peer.violations" in err.value.message


# ---------------------------------------------------------------------------------------- coverage
def _wire(case_id: str, side: str, violations: bool = True, cites: str = "") -> Case:
    spec = [SpecRef(RULES[cites].section, cites)] if cites else []
    then = {"peer": {"violations": []}} if violations else {}
    return Case(case_id, case_id, spec, given={"peer": {"under_test": side}}, then=then)


def test_what_each_side_watches() -> None:
    initiator = set(watched_rules(_wire("i", "initiator")))
    acceptor = set(watched_rules(_wire("a", "acceptor")))
    assert initiator == {r.id for r in RULES.values() if r.side in ("initiator", "both")}
    assert acceptor == {r.id for r in RULES.values() if r.side == "acceptor" and not r.timer}
    assert ACK_TIMEOUT not in initiator | acceptor  # only the Initiator engine's timer raises it
    assert watched_rules(_wire("quiet", "initiator", violations=False)) == []


def test_coverage_lists_rules_with_the_cases_that_cite_or_watch_them() -> None:
    listed = {r.id: r for r in load_requirements(BUNDLED_REQUIREMENTS)}
    requirements = [listed[rid] for rid in ("MQQB-3.1.5.5.5-VALIDATE", ACK_BEYOND_SENT, EC_ECHO, ACK_TIMEOUT)]
    cases = [
        _wire("c.sender", "initiator"),
        _wire("c.replies", "acceptor"),
        _wire("c.ack-wait", "acceptor", violations=False, cites=ACK_TIMEOUT),
    ]
    report = coverage(requirements, cases)
    rows = {row.requirement.id: (row.rule, row.cases, row.watched) for row in report.rows}
    assert rows == {
        "MQQB-3.1.5.5.5-VALIDATE": ("", [], []),
        ACK_BEYOND_SENT: ("both", [], ["c.sender"]),
        EC_ECHO: ("acceptor", [], ["c.replies"]),
        ACK_TIMEOUT: ("acceptor", ["c.ack-wait"], []),
    }
    assert [r.id for r in report.uncovered] == ["MQQB-3.1.5.5.5-VALIDATE"]

    table = render_coverage(report)
    assert f"{ACK_BEYOND_SENT}  [MUST]  MS-MQQB 3.1.5.5.1  rule (both)  0 cases: -" in table
    assert "    watched by 1 case: c.sender" in table
    assert f"{ACK_TIMEOUT}  [SHOULD]  MS-MQQB 3.1.6.3  rule (acceptor)  1 case: c.ack-wait" in table
    assert "session rules: 3 of them" in table and "1 cited by a case, 2 only watched, 0 neither" in table
    assert "initiator cases watch:" in table and "acceptor cases watch:" in table
    data = json.loads(render_coverage(report, as_json=True))
    assert data["rules"]["total"] == 3 and data["rules"]["only_watched"] == 2
    row = next(r for r in data["requirements"] if r["id"] == EC_ECHO)
    assert (row["rule"], row["watched"], row["cases"]) == ("acceptor", ["c.replies"], [])


def test_every_rule_of_the_corpus_is_cited_or_watched() -> None:
    from harness.cases.loader import load_paths

    cases = load_paths([BUNDLED_REQUIREMENTS.parent])
    report = coverage(load_requirements(BUNDLED_REQUIREMENTS), cases)
    assert len(report.rules) == len(RuleId)
    assert not [row.requirement.id for row in report.rules if not row.covered]
