"""Grading: which requirement an expectation checks, and what a difference from it means.

Every expectation of a case is attributed to one requirement of cases/requirements.yaml
(docs/cases.md, "Requirements and grading"), the first that applies of:

1. the expectation's own annotation: ``{is: X, requirement: ID}``, ``{any_of: [...], requirement:
   ID}``, ``{absent: true, requirement: ID}`` (any expectation operator may carry one);
2. the step's ``requirement`` (for the final state, ``then.requirement``);
3. the case's spec reference whose section defines the step's event, else its first reference.

A difference is graded by that requirement's level: ``failed`` for a MUST, ``non_strict`` for a
SHOULD, a MAY or an ``interpretation`` (the spec is silent or contradicts itself).  A case's
outcome is the worst grade among its differences.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from harness.cases.model import Level

if TYPE_CHECKING:
    from harness.cases.model import Case, Step
    from harness.report.results import CaseResult, StepFailure

__all__ = [
    "ANNOTATION",
    "attribute",
    "case_outcome",
    "grade",
    "graded",
    "graded_result",
    "requirement_annotations",
    "unwrap",
]

ANNOTATION = "requirement"  # the key that attributes an expectation to a requirement


def unwrap(expected: Any) -> Any:
    """The expectation without its ``requirement`` annotation; ``{is: X}`` is the literal X."""
    if isinstance(expected, Mapping) and ANNOTATION in expected:
        rest = {k: v for k, v in expected.items() if k != ANNOTATION}
        return rest["is"] if set(rest) == {"is"} else rest
    if isinstance(expected, Mapping) and set(expected) == {"is"}:
        return expected["is"]
    return expected


def annotation(expected: Any) -> str:
    """The requirement id an expectation names itself ("" when none)."""
    if isinstance(expected, Mapping):
        value = expected.get(ANNOTATION)
        if isinstance(value, str):
            return value
    return ""


def _event_section(case: Case, step: Step) -> str:
    from harness.cases.targets.reference import event_section

    return event_section(step.event) if not step.action else ""


def attribute(case: Case, step: Step | None, expected: Any = None) -> tuple[str, Level]:
    """The requirement an expectation is attributed to, and its level.

    ``step`` is None for the case's ``then``.  An id the case does not resolve (it cannot
    happen for a loaded case) grades as MUST.
    """
    req = annotation(expected)
    if not req:
        req = str((case.then or {}).get(ANNOTATION) or "") if step is None else step.requirement
    if not req and case.spec:
        section = _event_section(case, step) if step is not None else ""
        ref = next((r for r in case.spec if section and r.section == section), case.spec[0])
        req = ref.requirement
    found = case.requirements.get(req)
    return req, (found.level if found is not None else Level.MUST)


def section_of(case: Case, requirement: str) -> str:
    """The section of a requirement the case cites ("" when unknown)."""
    found = case.requirements.get(requirement)
    if found is not None:
        return found.section
    return case.spec[0].section if case.spec else ""


def graded(case: Case, step: Step | None, failure: StepFailure, expected: Any = None) -> StepFailure:
    """``failure`` with the requirement, level and section of the expectation it broke."""
    req, level = attribute(case, step, expected)
    failure.requirement = req
    failure.level = str(level)
    failure.section = section_of(case, req) or failure.section
    return failure


def grade(level: str | Level) -> str:
    """The outcome of a difference at ``level``: "failed" for MUST, else "non_strict"."""
    try:
        return "failed" if Level(level).strict else "non_strict"
    except ValueError:
        return "failed"


def case_outcome(failures: Iterable[StepFailure]) -> str:
    """The worst grade among ``failures`` ("passed" when there are none)."""
    grades = {grade(f.level or "MUST") for f in failures}
    if "failed" in grades:
        return "failed"
    return "non_strict" if grades else "passed"


def requirement_annotations(
    value: Any, path: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """Every ``requirement`` annotation inside an ``expect``/``then`` tree, with its path."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key == ANNOTATION and isinstance(item, str):
                yield (*path, key), item
            else:
                yield from requirement_annotations(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from requirement_annotations(item, (*path, i))


def graded_result(case: Case, start: float, failures: list[StepFailure]) -> CaseResult:
    """The result of a case that stopped at these graded differences: the worst grade among them
    (:func:`case_outcome`), the differences as its detail."""
    from harness.report.results import CaseResult, Outcome

    return CaseResult.since(case, Outcome(case_outcome(failures)), start, failures)
