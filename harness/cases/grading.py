"""Grading: which requirement an expectation checks, and what a difference from it means.

Renders "Requirements and grading" of docs/cases.md.  Every expectation of a case is attributed
to exactly one requirement of cases/requirements.yaml (:func:`attribute`), the first that applies
of:

1. the expectation's own annotation: ``{is: X, requirement: ID}``, ``{any_of: [...], requirement:
   ID}``, ``{readings: {...}, requirement: ID}`` (any expectation operator may carry one);
2. the step's ``requirement`` (for the final state, ``then.requirement``);
3. for a model event, the requirement the case cites in the section that defines the event
   ([MS-MQDMPR] section of the spec event; an interpretation is never derived, only named),
   else that section's processing requirement
   (``DMPR-<section>-PROCESSING``: the event's "MUST perform the following actions" sentence);
4. the case's only requirement, when it cites exactly one.

Nothing else: an expectation none of these attributes (several cited requirements in the event's
section, or a case citing several with a step of no section) is a load error asking the case to
name one (:func:`unattributed`), so a failure is never filed under a sentence its step does not
render.

A difference is graded by that requirement's level: ``failed`` for a MUST, ``non_strict`` for a
SHOULD or a MAY.  An ``interpretation`` (the spec is silent or contradicts itself) names its
readings, and an expectation it grades says what each reading gives: ``{readings: {NAME: VALUE,
...}, requirement: ID}``, the first the reading the corpus checks (the requirement's first
alternative).  An observed value that another named reading gives is ``non_strict``, reported
with the reading's name; a value no reading gives is ``failed`` under the MUST sentence that frames
the choice (the interpretation's ``frame``); when every reading gives the same value the
expectation is that MUST (:func:`graded`).  A case's outcome is the worst grade among its
differences.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from harness.cases.events import event_section
from harness.cases.model import Level

if TYPE_CHECKING:
    from harness.cases.model import Case, Requirement, Step
    from harness.results import StepFailure

__all__ = [
    "ANNOTATION",
    "READINGS",
    "attribute",
    "case_outcome",
    "derived_requirement",
    "grade",
    "graded",
    "processing_requirement",
    "readings_of",
    "reconcile",
    "requirement_annotations",
    "unwrap",
]

ANNOTATION = "requirement"  # the key that attributes an expectation to a requirement
READINGS = "readings"  # the operator that gives the value each reading of an interpretation gives

#: A matcher tests one expectation (a reading's value) against what the target gave.
Matcher = Callable[[Any], bool]


def unwrap(expected: Any) -> Any:
    """The expectation without its ``requirement`` annotation; ``{is: X}`` is the literal X and
    ``{readings: {...}}`` the value of the reading the corpus checks (the first)."""
    if isinstance(expected, Mapping) and ANNOTATION in expected:
        expected = {k: v for k, v in expected.items() if k != ANNOTATION}
    if isinstance(expected, Mapping) and set(expected) == {READINGS} and isinstance(expected[READINGS], Mapping):
        return unwrap(next(iter(expected[READINGS].values()), None))
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


def readings_of(expected: Any) -> Mapping[str, Any] | None:
    """``{reading name: expectation}`` of a ``readings`` expectation, else None."""
    if isinstance(expected, Mapping) and isinstance(expected.get(READINGS), Mapping):
        value: Mapping[str, Any] = expected[READINGS]
        return value
    return None


# ------------------------------------------------------------------------------- attribution
_DOCUMENT_PREFIX = {"MS-MQDMPR": "DMPR", "MS-MQQB": "MQQB", "MS-MQMQ": "MQMQ"}


def processing_requirement(section: str) -> str:
    """The id of a section's processing requirement: ``MS-MQDMPR 3.1.7.1.10`` ->
    ``DMPR-3.1.7.1.10-PROCESSING`` (the event's "MUST perform the following actions" sentence)."""
    document, _, number = section.partition(" ")
    return f"{_DOCUMENT_PREFIX.get(document, document)}-{number}-PROCESSING"


def _only(case: Case) -> str:
    cited = list(dict.fromkeys(ref.requirement for ref in case.spec if ref.requirement))
    return cited[0] if len(cited) == 1 else ""


def derived_requirement(case: Case, step: Step | None) -> str:
    """The requirement a step (None: the case's ``then``) renders when no expectation names one:
    rules 2-4 of the module docstring ("" when none applies: the case must name one)."""
    if step is None:
        return str((case.then or {}).get(ANNOTATION) or "") or _only(case)
    if step.requirement:
        return step.requirement
    section = event_section(step.event) if not step.action else ""
    if section:
        cited = [
            rid
            for rid in dict.fromkeys(r.requirement for r in case.spec if r.section == section)
            if (found := case.requirements.get(rid)) is None or found.level is not Level.interpretation
        ]
        if len(cited) == 1:
            return cited[0]
        return "" if cited else processing_requirement(section)
    return _only(case)


def attribute(case: Case, step: Step | None, expected: Any = None) -> tuple[str, Level]:
    """The requirement an expectation is attributed to, and its level (MUST for an id the case
    does not resolve, which a loaded case never has)."""
    req = annotation(expected) or derived_requirement(case, step)
    found = case.requirements.get(req)
    return req, (found.level if found is not None else Level.MUST)


def section_of(case: Case, requirement: str) -> str:
    """The section of a requirement the case resolves ("" when unknown)."""
    found = case.requirements.get(requirement)
    return found.section if found is not None else ""


# ---------------------------------------------------------------------------------- grading
def _same(values: Iterable[Any]) -> bool:
    return len({json.dumps(v, sort_keys=True, default=str) for v in values}) <= 1


def _show(value: Any) -> str:
    value = unwrap(value)
    if isinstance(value, Mapping) and set(value) == {"any_of"}:
        return "any of " + ", ".join(map(str, value["any_of"]))
    if isinstance(value, Mapping) and len(value) == 1:
        ((key, arg),) = value.items()
        return f"{key} {arg}"
    return str(value)


def _judge_readings(
    case: Case, failure: StepFailure, interpretation: Requirement, readings: Mapping[str, Any], matcher: Matcher
) -> Requirement | None:
    """Fill ``failure`` with the readings and what each gives; the requirement it is graded by:
    the interpretation when another named reading matches, else its frame (None: unknown)."""
    texts = {a.name: a.reading for a in interpretation.alternatives}
    failure.interpretation = interpretation.id
    failure.readings = [
        {"name": name, "expected": _show(value), "reading": texts.get(name, ""), "matched": bool(matcher(value))}
        for name, value in readings.items()
    ]
    named = [r["name"] for r in failure.readings if r["matched"]]
    if named and not _same(readings.values()):
        failure.reading = named[0]
        failure.message += f": reading {named[0]!r} of {interpretation.id}"
        return interpretation
    if _same(readings.values()):
        failure.message += f" (every reading of {interpretation.id} gives it)"
    else:
        failure.message += f": no reading of {interpretation.id} gives it"
    return case.requirements.get(interpretation.frame)


def graded(
    case: Case, step: Step | None, failure: StepFailure, expected: Any = None, matcher: Matcher | None = None
) -> StepFailure:
    """``failure`` with the requirement, level, section and sentence of the expectation it broke.

    ``matcher`` tests a reading's value against what was observed: with it, a ``readings``
    expectation grades the failure by the reading the observed value is (harness module doc)."""
    req_id, _ = attribute(case, step, expected)
    requirement = case.requirements.get(req_id)
    readings = readings_of(expected)
    if requirement is not None and readings is not None and matcher is not None:
        requirement = _judge_readings(case, failure, requirement, readings, matcher) or requirement
    elif requirement is not None and requirement.level is Level.interpretation:
        # no reading names this value (an expectation the action checks by default): the frame
        failure.interpretation = requirement.id
        failure.message += f": no reading of {requirement.id} gives it"
        requirement = case.requirements.get(requirement.frame) or requirement
    if requirement is None:
        failure.requirement, failure.level = req_id, str(Level.MUST)
        return failure
    _file_under(failure, requirement)
    return failure


def _file_under(failure: StepFailure, requirement: Requirement) -> None:
    failure.requirement, failure.level, failure.quote = requirement.id, str(requirement.level), requirement.quote
    failure.section = requirement.section or failure.section


def reconcile(case: Case, failures: list[StepFailure], checks: Iterable[tuple[Any, Matcher]]) -> None:
    """A step gives one answer: the values one interpretation grades must all be what one of its
    readings gives.  ``checks`` is every expectation of the step with a matcher of what was
    observed; when the values of an interpretation name no reading in common (one field is what
    one reading gives, another what a second reading gives), each of its non-strict differences
    fails the frame instead."""
    allowed: dict[str, set[str]] = {}
    for expected, matcher in checks:
        readings = readings_of(expected)
        rid = annotation(expected)
        if readings is None or not rid:
            continue
        names = {name for name, value in readings.items() if matcher(value)}
        allowed[rid] = allowed[rid] & names if rid in allowed else names
    for f in failures:
        agreed = allowed.get(f.interpretation)
        if f.reading and agreed and f.reading not in agreed:  # the reading all the step's values give
            name = next(r["name"] for r in f.readings if r["name"] in agreed)
            f.message = f.message.replace(f"reading {f.reading!r}", f"reading {name!r}")
            f.reading = name
        if f.reading and not allowed.get(f.interpretation, {f.reading}):
            found = case.requirements.get(f.interpretation)
            frame = case.requirements.get(found.frame) if found is not None else None
            if frame is None:
                continue
            f.message += f"; the step's other values give another reading of {f.interpretation}: no one reading"
            f.reading = ""
            _file_under(f, frame)


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
