"""Grading by readings and attribution to one requirement (harness.cases.grading).

(a) A ``readings`` expectation: the reference (the first reading) passes; a target taking another
named reading is non_strict under the interpretation, with the reading's name; a target giving a
value no reading gives fails the interpretation's frame (a MUST).
(b) Every expectation of the bundled corpus is attributed to a requirement of its step's event
section, or to one the case names explicitly, and never to an interpretation unless the
expectation gives the interpretation's readings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from examples.readings.dmpr import RemovedPositionRestartsAtStart as RestartsAtStart
from harness.cases import grading
from harness.cases.events import PSEUDO_EVENTS, event_section
from harness.cases.loader import load_paths
from harness.cases.model import Case, Level, Step
from harness.cases.runner import run
from harness.model import QueueManager
from harness.model.adm import Queue
from harness.model.enums import SeekDirection
from harness.model.messages import MessagePosition
from harness.results import Outcome

CASES = Path(__file__).resolve().parents[2] / "cases"
DEQUEUE = CASES / "mqdmpr" / "dequeue" / "dequeue_message.yaml"
INTERPRETATION = "DMPR-3.1.1.11-REMOVED-NEXT"


def _removed(position: MessagePosition) -> bool:
    return not position.is_special and not position.in_list


class SkipsOne(QueueManager):
    """No reading: a seek from a position that left the list skips the first Available message
    after it (m3 where every reading gives m2)."""

    def seek_available_message_position(
        self,
        iInitialPosition: MessagePosition,
        iQueue: Queue,
        iPeekOperation: bool,
        iSeekDirection: SeekDirection = SeekDirection.Forward,
    ) -> MessagePosition:
        found = super().seek_available_message_position(iInitialPosition, iQueue, iPeekOperation, iSeekDirection)
        if _removed(iInitialPosition) and iSeekDirection is SeekDirection.Forward and not found.is_special:
            found = super().seek_available_message_position(found, iQueue, iPeekOperation, iSeekDirection)
        return found


@pytest.fixture(scope="module")
def dequeue_cases() -> dict[str, Case]:
    return {c.id: c for c in load_paths([DEQUEUE], events=PSEUDO_EVENTS)}


def _plugin(cls: type) -> str:
    return f"plugin:{cls.__module__}:{cls.__name__}"


def test_the_readings_expectation_is_as_the_bundled_case_writes_it(dequeue_cases: dict[str, Case]) -> None:
    case = dequeue_cases["dmpr.dequeue.cursor-after-peek"]
    step = case.when[3]
    expected = step.expect["rMessage"]
    assert grading.readings_of(expected) == {"keeps-place": "m3", "restarts-at-start": "m1"}
    assert grading.attribute(case, step, expected) == (INTERPRETATION, Level.interpretation)
    assert case.requirements[INTERPRETATION].frame in case.requirements
    assert grading.unwrap(expected) == "m3"  # the reading the corpus checks: the first


def test_the_reference_passes_the_readings_cases(dequeue_cases: dict[str, Case]) -> None:
    cases = [dequeue_cases["dmpr.dequeue.cursor-after-peek"], dequeue_cases["dmpr.dequeue.cursor-after-removed"]]
    result = run(cases, "reference")
    assert [(r.case_id, r.outcome) for r in result.results] == [(c.id, Outcome.passed) for c in cases]
    assert result.ok


def test_another_named_reading_is_non_strict_with_its_name(dequeue_cases: dict[str, Case]) -> None:
    case = dequeue_cases["dmpr.dequeue.cursor-after-peek"]
    result = run([case], _plugin(RestartsAtStart))
    (r,) = result.results
    assert r.outcome is Outcome.non_strict, r.failures
    (failure,) = r.failures
    assert failure.step == 3 and failure.field == "rMessage"
    assert failure.observed == "m1"
    assert failure.requirement == INTERPRETATION
    assert failure.level == str(Level.interpretation)
    assert failure.interpretation == INTERPRETATION
    assert failure.reading == "restarts-at-start"
    given = {row["name"]: (row["expected"], row["matched"]) for row in failure.readings}
    assert given == {"keeps-place": ("m3", False), "restarts-at-start": ("m1", True)}
    assert result.ok and not run([case], _plugin(RestartsAtStart), strict=True).ok
    # where every reading gives the same value, the other reading passes
    (same,) = run([dequeue_cases["dmpr.dequeue.cursor-after-removed"]], _plugin(RestartsAtStart)).results
    assert same.outcome is Outcome.passed, same.failures


def test_a_value_no_reading_gives_fails_the_frame(dequeue_cases: dict[str, Case]) -> None:
    case = dequeue_cases["dmpr.dequeue.cursor-after-removed"]
    frame = case.requirements[INTERPRETATION].frame
    assert case.requirements[frame].level is Level.MUST
    result = run([case], _plugin(SkipsOne))
    (r,) = result.results
    assert r.outcome is Outcome.failed, r.failures
    (failure,) = r.failures
    assert failure.step == 1 and failure.field == "rMessage" and failure.observed == "m3"
    assert failure.requirement == frame
    assert failure.level == str(Level.MUST)
    assert failure.section == case.requirements[frame].section
    assert failure.interpretation == INTERPRETATION
    assert failure.reading == ""
    assert {row["name"] for row in failure.readings if row["matched"]} == set()
    assert not result.ok


# ------------------------------------------------------------------------ corpus attribution
def _expectations(case: Case) -> list[tuple[Step | None, Any, str]]:
    """Every (step, expectation, requirement the case names for it explicitly: "" when none).

    Where the step renders no event section (``then``, a wire action), a case that cites one
    requirement names it (rule 4); a case citing several must name one on the step or value."""
    cited = list(dict.fromkeys(ref.requirement for ref in case.spec))
    only = cited[0] if len(cited) == 1 else ""
    out: list[tuple[Step | None, Any, str]] = []
    for step in case.when:
        values = list((step.expect or {}).values())
        if step.expect_error:
            values.append(step.expect_error)
        sectionless = bool(step.action) or not event_section(step.event)
        for value in values:
            out.append((step, value, grading.annotation(value) or step.requirement or (only if sectionless else "")))
    then = case.then or {}
    then_req = str(then.get(grading.ANNOTATION) or "") or only
    for value in _then_values(then):
        out.append((None, value, grading.annotation(value) or then_req))
    return out


def _then_values(then: Any) -> list[Any]:
    out: list[Any] = []
    for positions in (then.get("queues") or {}).values():
        for entry in positions or []:
            out.extend(v for k, v in (entry or {}).items() if k != "message")
    for group in ("cursors", "outgoing"):
        for attrs in (then.get(group) or {}).values():
            out.extend(v for k, v in (attrs or {}).items() if k != "OutgoingMessagePositions")
    for key, value in (then.get("peer") or {}).items():
        if key == "violations":  # each session rule graded by its own requirement (harness.cases.violations)
            continue
        out.extend(value.values() if key == "sent" and isinstance(value, dict) else [value])
    return out


def test_every_corpus_expectation_is_attributed_to_its_events_section_or_an_explicit_requirement() -> None:
    cases = load_paths([CASES], events=PSEUDO_EVENTS)
    assert cases
    wrong: list[tuple[str, str, Any, str, str]] = []
    checked = 0
    for case in cases:
        for step, expected, explicit in _expectations(case):
            rid, level = grading.attribute(case, step, expected)
            requirement = case.requirements.get(rid)
            event = step.event if step is not None else "then"
            if requirement is None:
                wrong.append((case.id, event, expected, rid, "not among the case's requirements"))
                continue
            checked += 1
            section = event_section(step.event) if step is not None and not step.action else ""
            if rid != explicit and requirement.section != section:
                wrong.append((case.id, event, expected, rid, f"section {requirement.section}, event's {section!r}"))
            if level is Level.interpretation and grading.readings_of(expected) is None:
                wrong.append((case.id, event, expected, rid, "an interpretation without readings"))
            if grading.readings_of(expected) is not None and level is not Level.interpretation:
                wrong.append((case.id, event, expected, rid, "readings of a requirement that is not an interpretation"))
    assert checked > 500
    assert not wrong, f"{len(wrong)} wrongly attributed:\n" + "\n".join(map(str, wrong[:30]))
