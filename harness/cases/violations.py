"""Session rules as requirements: which rules a wire case watches, and how a reported one is graded.

A rule of [MS-MQQB] (harness.session.rules: 3.1.5.1-3.1.5.9 packet handling, 3.1.6 timers, 3.1.7.1
sending, 2.2 and [MS-MQMQ] 2.2.19-2.2.20 fields) has one id, which is also the id of its
requirement in cases/requirements.yaml: the spec's sentence that states it, its section and its
level (docs/cases.md, "Rules the peer reports").  A wire case's ``then.peer.violations`` lists the
rules it expects the session to show (``[]``: none).  Each rule the session shows that the list
does not name is one difference, graded by that rule's requirement (:func:`graded_violation`):
``failed`` for a MUST rule, ``non_strict`` for a SHOULD, and for an interpretation (the engine
reports it under the reading the corpus checks; the difference names the other reading, which allows
what was seen).  A "record" rule
(counted, breaking nothing) is never graded.

Who reports the rules depends on the side under test (:func:`watched_rules`): a case checking an
initiator watches every rule the harness's simulated peer (the Acceptor engine) checks of a
sender; a case checking an acceptor watches the rules a passive Observer checks of the acceptor's
replies on the case's connections (those an acceptor can break, except the rules only a timer
raises).  ``msmq-harness coverage`` counts a rule's requirement as covered by the cases that cite
it or watch it (harness.cases.coverage).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from harness.cases.grading import ANNOTATION, READINGS, graded
from harness.cases.loader import BUNDLED_REQUIREMENTS, requirements_for
from harness.cases.model import Level
from harness.session.rules import RULES, Rule, initiator_rules

if TYPE_CHECKING:
    from harness.cases.model import Case, Requirement, Step
    from harness.results import StepFailure

__all__ = ["WATCH", "graded_violation", "rule_requirement", "watched_rules", "watches"]

#: How each side's cases watch rules, in words (the coverage output and the docs say it so).
WATCH = {
    "initiator": "the simulated peer's Acceptor checks every rule of a sender (side initiator or both)",
    "acceptor": "a passive Observer checks the acceptor's replies (side acceptor; not the timer rules)",
}


def _side_rules(side: str) -> list[Rule]:
    if side == "initiator":
        rules = initiator_rules()
    elif side == "acceptor":
        rules = [r for r in RULES.values() if r.side == "acceptor" and not r.timer]
    else:
        rules = []
    return [r for r in rules if r.graded]


def watches(case: Case) -> bool:
    """The case has a ``then.peer.violations`` expectation: it grades the rules its session shows."""
    peer = (case.then or {}).get("peer") or {}
    return case.wire and "violations" in peer


def watched_rules(case: Case) -> list[str]:
    """The rule ids a case's ``then.peer.violations`` can report and grade (none without one)."""
    if not watches(case):
        return []
    return [str(r.id) for r in _side_rules(str(case.given["peer"].get("under_test", "")))]


def rule_requirement(case: Case, rule_id: str) -> Requirement | None:
    """The requirement of a rule: the one the case resolved, else the rule's entry in the requirements
    file the case was loaded with (loader.requirements_for), else in the bundled one."""
    found = case.requirements.get(rule_id)
    if found is not None:
        return found

    for file in (case.source, BUNDLED_REQUIREMENTS):
        if file:
            found = requirements_for(file).get(rule_id)
            if found is not None:
                return found
    return None


def graded_violation(case: Case, step: Step | None, failure: StepFailure, rule_id: str) -> StepFailure:
    """``failure`` (a rule the session showed that the case did not expect) graded by the rule's own
    requirement: its id, level, section and sentence (harness.cases.grading.graded).  A rule whose
    requirement cannot be found grades as MUST, as every unknown requirement does."""
    req = rule_requirement(case, rule_id)
    if req is not None and rule_id not in case.requirements:
        case = replace(case, requirements={**case.requirements, rule_id: req})
    if req is not None and req.level is Level.interpretation:
        # The engine reports the rule under the reading the corpus checks (the first); every other
        # reading allows what it saw: non-strict, under that reading's name.
        names = [a.name for a in req.alternatives]
        readings = {name: "reported" if i else "not reported" for i, name in enumerate(names)}
        return graded(case, step, failure, {ANNOTATION: rule_id, READINGS: readings}, lambda v: v == "reported")
    return graded(case, step, failure, {ANNOTATION: rule_id})
