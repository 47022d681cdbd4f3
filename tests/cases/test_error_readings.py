"""An error is a graded value: a step whose ``expect`` names ``error`` compares ``{error: <kind>}``
with its expectations when the target reports that kind (harness.cases.execute.run_case; ``error``
absent when the event returns normally), so a reading whose answer is "the spec gives no outcome"
(UndefinedBehaviour) sits beside readings that give values (docs/cases.md, "References and
values").  Rendered by cases/mqdmpr/cursor/wait_states.yaml for DMPR-3.2.7.2-WAIT-STATES and
DMPR-3.2.7.4-WAIT-STATES, whose other readings are runnable (examples/readings/dmpr.py, through
the Cursor hooks of harness.model.cursor) and whose out-of-reading mutants fail the frame
(examples/mutants/readings.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.cases.execute import run_case
from harness.cases.lines import CaseError
from harness.cases.loader import load_paths, load_requirements, load_text
from harness.cases.model import Case
from harness.cases.runner import run
from harness.cases.target import TargetError, target_error
from harness.cases.targets import ReferenceTarget
from harness.model.enums import CursorState, CursorStatus
from harness.model.errors import UndefinedBehaviour
from harness.results import Outcome

CASES = Path(__file__).resolve().parents[2] / "cases"
WAIT_STATES = CASES / "mqdmpr" / "cursor" / "wait_states.yaml"
REQUIREMENTS = {r.id: r for r in load_requirements(CASES / "requirements.yaml")}
INTERPRETATIONS = ("DMPR-3.2.7.2-WAIT-STATES", "DMPR-3.2.7.4-WAIT-STATES")

# A cursor left WaitPeek on a queue that now holds m1; the last step is Get Message For Peek on it
# (the reference: UndefinedBehaviour) with the expectations EXPECT.
CASE = """
id: t.error-value
title: t
spec:
  - section: MS-MQDMPR 3.2.7.2
    requirement: DMPR-3.2.7.2-PROCESSING
given:
  queues: [{name: q}]
  open: [{name: h, queue: q}]
  cursors: [{name: c, open: h}]
when:
  - event: get_message_for_peek
    args: {cursor: c}
    expect: {rStatus: Waiting}
  - event: enqueue_message
    args: {iQueue: q, iMessage: {id: m1}}
    requirement: DMPR-3.1.7.1.9-AVAILABLE
    expect: {rStatus: NoError}
  - event: get_message_for_peek
    args: {cursor: c}
EXPECT
"""


def case(expect: str) -> Case:
    [c] = load_text(CASE.replace("EXPECT", expect), "test.yaml", requirements=REQUIREMENTS)
    return c


def run_reference(c: Case) -> Any:
    return run_case(c, ReferenceTarget())


# ------------------------------------------------------------------------------ the runner
def test_the_error_kind_is_the_value_error_and_the_other_values_are_absent() -> None:
    result = run_reference(case("    expect: {error: UndefinedBehaviour, rStatus: null, rPosition: {absent: true}}"))
    assert result.outcome is Outcome.passed, result.detail


def test_an_error_the_step_does_not_expect_is_a_difference_on_error() -> None:
    result = run_reference(case("    expect: {error: null, rStatus: Succeeded}"))
    assert result.outcome is Outcome.failed
    by_field = {f.field: f for f in result.failures}
    assert set(by_field) == {"error", "rStatus"}
    assert (by_field["error"].expected, by_field["error"].observed) == (None, "UndefinedBehaviour")
    assert (by_field["rStatus"].expected, by_field["rStatus"].observed) == ("Succeeded", "<absent>")
    # graded as any value: by the requirement the step renders (the section's processing MUST)
    assert {(f.step, f.requirement, f.level) for f in result.failures} == {(2, "DMPR-3.2.7.2-PROCESSING", "MUST")}


def test_an_event_that_returns_normally_gives_no_error() -> None:
    c = case("    expect: {error: null, rStatus: Waiting}")
    del c.when[1:]  # the first peek: the Unread cursor finds End and returns Waiting
    c.when[0].expect = {"error": None, "rStatus": "Waiting"}
    assert run_reference(c).outcome is Outcome.passed
    c.when[0].expect = {"error": "UndefinedBehaviour", "rStatus": "Waiting"}
    result = run_reference(c)
    [f] = result.failures
    assert (f.step, f.field, f.expected, f.observed) == (0, "error", "UndefinedBehaviour", "<absent>")
    assert result.outcome is Outcome.failed


def test_without_an_error_expectation_the_error_fails_the_step_as_before() -> None:
    result = run_reference(case("    expect: {rStatus: null}"))
    [f] = result.failures
    assert (f.step, f.field, f.expected, f.observed) == (2, "error", "no error", "UndefinedBehaviour")
    assert result.outcome is Outcome.failed


def test_expect_error_is_unchanged() -> None:
    assert run_reference(case("    expect_error: UndefinedBehaviour")).outcome is Outcome.passed


class _Raising(ReferenceTarget):
    """The reference, whose second Get Message For Peek reports an error of kind ``kind``."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.peeks = 0

    def event(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        if name == "get_message_for_peek":
            self.peeks += 1
            if self.peeks == 2:
                raise target_error(self.kind, f"{self.kind} on purpose")
        return super().event(name, args)


@pytest.mark.parametrize(("kind", "outcome"), [("Unsupported", Outcome.unsupported), ("Error", Outcome.error)])
def test_unsupported_and_error_are_never_graded_values(kind: str, outcome: Outcome) -> None:
    result = run_case(case("    expect: {error: UndefinedBehaviour}"), _Raising(kind))
    assert (result.outcome, result.failures) == (outcome, [])
    assert f"{kind} on purpose" in result.detail


# ------------------------------------------------------------------------------ the schema
@pytest.mark.parametrize(
    "expect",
    [
        "    expect: {error: UndefinedBehavior}",
        "    expect: {error: Unsupported}",
        "    expect: {error: {any_of: [UndefinedBehaviour, Error]}}",
        "    expect:\n      error:\n        readings: {no-branch: UndefinedBehaviour, as-unread: Error,"
        " still-waiting: null}\n        requirement: DMPR-3.2.7.2-WAIT-STATES",
    ],
)
def test_error_names_a_kind_the_runner_grades(expect: str) -> None:
    with pytest.raises(CaseError, match="is not an error kind the runner grades") as info:
        case(expect)
    assert info.value.key.startswith("when[2].expect.error")


def test_expect_and_expect_error_are_still_exclusive() -> None:
    with pytest.raises(CaseError, match="either expect or expect_error"):
        case("    expect: {error: UndefinedBehaviour}\n    expect_error: UndefinedBehaviour")


# ------------------------------------------------------------------ the wait-states readings
@pytest.fixture(scope="module")
def wait_states() -> list[Case]:
    return load_paths([WAIT_STATES])


def _interpretation(c: Case) -> str:
    [rid] = [r for r in INTERPRETATIONS if r in c.requirements]
    return rid


def test_the_reference_takes_no_branch(wait_states: list[Case]) -> None:
    assert len(wait_states) == 2
    for c in wait_states:
        step = c.when[-1]
        assert step.event in ("get_message_for_peek", "get_next_message_for_dequeue")
        rid = _interpretation(c)
        names = [a.name for a in REQUIREMENTS[rid].alternatives]
        expect = step.expect or {}
        for field in ("error", "rStatus", "rPosition"):  # every value the event gives, per reading
            assert list(expect[field]["readings"]) == names
            assert expect[field]["requirement"] == rid
        assert expect["error"]["readings"]["no-branch"] == "UndefinedBehaviour"
        result = run_case(c, ReferenceTarget())
        assert result.outcome is Outcome.passed, result.detail


@pytest.mark.parametrize(
    ("plugin", "interpretation"),
    [
        ("examples.readings.dmpr:WaitingPeekAsUnread", "DMPR-3.2.7.2-WAIT-STATES"),
        ("examples.readings.dmpr:WaitingDequeueAsUnread", "DMPR-3.2.7.4-WAIT-STATES"),
    ],
)
def test_as_unread_is_non_strict_with_its_name(wait_states: list[Case], plugin: str, interpretation: str) -> None:
    result = run(wait_states, f"plugin:{plugin}")
    by_rid = {_interpretation(c): r for c, r in zip(wait_states, result.results, strict=True)}
    graded = by_rid[interpretation]
    assert graded.outcome is Outcome.non_strict
    assert {f.field for f in graded.failures} == {"error", "rStatus", "rPosition"}
    assert {(f.requirement, f.interpretation, f.reading) for f in graded.failures} == {
        (interpretation, interpretation, "as-unread")
    }
    error = next(f for f in graded.failures if f.field == "error")
    assert (error.expected, error.observed) == ("UndefinedBehaviour", "<absent>")
    [other] = [r for rid, r in by_rid.items() if rid != interpretation]
    assert other.outcome is Outcome.passed, other.detail


@pytest.mark.parametrize(
    ("mutant", "interpretation", "status"),
    [
        ("examples.mutants.readings:WaitingPeekAlreadyReceived", "DMPR-3.2.7.2-WAIT-STATES", "AlreadyReceived"),
        ("examples.mutants.readings:WaitingDequeueNotFound", "DMPR-3.2.7.4-WAIT-STATES", "NotFound"),
    ],
)
def test_an_answer_no_reading_gives_fails_the_frame(
    wait_states: list[Case], mutant: str, interpretation: str, status: str
) -> None:
    result = run(wait_states, f"plugin:{mutant}")
    by_rid = {_interpretation(c): r for c, r in zip(wait_states, result.results, strict=True)}
    caught = by_rid[interpretation]
    assert caught.outcome is Outcome.failed
    frame = REQUIREMENTS[interpretation].frame
    # the values name no reading in common (error: as-unread or still-waiting; rStatus: none):
    # every difference fails the frame, none is excused by a reading
    assert {(f.requirement, f.level, f.interpretation, f.reading) for f in caught.failures} == {
        (frame, "MUST", interpretation, "")
    }
    assert next(f.observed for f in caught.failures if f.field == "rStatus") == status


# ------------------------------------------------------------------------- the model's hooks
GIVEN = {"queues": [{"name": "q"}], "open": [{"name": "h", "queue": "q"}], "cursors": [{"name": "c", "open": "h"}]}


@pytest.mark.parametrize("receive", [False, True])
def test_the_reference_cursor_reports_no_outcome_and_stays_waiting(receive: bool) -> None:
    target = ReferenceTarget()
    target.setup(GIVEN)
    event, args = (
        ("get_next_message_for_dequeue", {"cursor": "c", "iNoWait": False})
        if receive
        else ("get_message_for_peek", {"cursor": "c"})
    )
    assert target.event(event, dict(args)) == {"rStatus": "Waiting"}
    target.event("enqueue_message", {"iQueue": "q", "iMessage": {"id": "m1"}})
    cursor = target.objects["cursor"]["c"]
    before = (cursor.CursorState, cursor.MessagePositionReference)
    assert before[0] is (CursorState.WaitReceive if receive else CursorState.WaitPeek)
    queue = target.objects["queue"]["q"]
    with pytest.raises(UndefinedBehaviour, match="no branch for CursorState"):
        if receive:
            cursor.dequeue_while_waiting(queue, False)
        else:
            cursor.peek_while_waiting(queue)
    with pytest.raises(TargetError) as info:
        target.event(event, dict(args))
    assert info.value.kind == "UndefinedBehaviour"
    assert (cursor.CursorState, cursor.MessagePositionReference) == before


def test_the_as_unread_cursors_take_the_unread_steps() -> None:
    from examples.readings.dmpr import WaitingDequeueAsUnread, WaitingPeekAsUnread

    for cls, event, args, state in (
        (WaitingPeekAsUnread, "get_message_for_peek", {"cursor": "c"}, CursorState.Read),
        (WaitingDequeueAsUnread, "get_next_message_for_dequeue", {"cursor": "c", "iNoWait": False}, CursorState.Unread),
    ):
        target = ReferenceTarget(cls)
        target.setup(GIVEN)
        assert target.event(event, dict(args)) == {"rStatus": CursorStatus.Waiting.name}
        target.event("enqueue_message", {"iQueue": "q", "iMessage": {"id": "m1"}})
        assert target.event(event, dict(args)) == {"rStatus": "Succeeded", "rPosition": "m1"}
        cursor = target.objects["cursor"]["c"]
        assert cursor.CursorState is state
