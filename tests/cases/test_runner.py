"""The runner (harness.cases.runner, harness.cases.compare): every comparison rule of
docs/cases.md, failures naming step, field, expected, observed, spec section and the one requirement
each expectation is attributed to, with its level (failed for a MUST, non_strict for a SHOULD or a
MAY; under an interpretation, non_strict for the value another reading gives and failed under its
frame for a value no reading gives), unsupported events, known failures, selection by -k/section
(every level selected), a target that cannot be opened, and workers giving the same outcomes as
one process."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cases.compare import compare_then, matches, values_equal
from harness.cases.execute import ConfigurationError, run_case, step_section
from harness.cases.grading import derived_requirement
from harness.cases.lines import CaseError
from harness.cases.loader import load_text
from harness.cases.model import Alternative, Case, Level, Requirement, SpecRef, Step
from harness.cases.runner import load_known_failures, run, select
from harness.cases.target import TargetInfo
from harness.cases.targets import ReferenceTarget
from harness.results import CaseResult, Outcome

#: The readings of each interpretation these tests cite: the first is the one the corpus checks.
#: A fixture's expectation gives the value of each (``{readings: {first: X, second: Y}, ...}``);
#: against the reference, whichever the reference gives is the reading it takes.
READINGS = (
    Alternative("first", "the reading the corpus checks"),
    Alternative("second", "another reading a conformant implementation may take"),
)


#: The MUST sentence that frames each interpretation's choice (a value no reading gives fails it).
FRAMES = {"R-dequeue-undefined": "R-dequeue", "R-peek-position": "R-peek-waiting", "R-graded": "R-dequeue"}

PROCESSING = "The queue manager MUST perform the following actions to process this event:"


def requirement(rid: str, section: str, quote: str, level: Level = Level.MUST) -> Requirement:
    if level is Level.interpretation:
        return Requirement(rid, section, quote, level, alternatives=READINGS, frame=FRAMES[rid])
    return Requirement(rid, section, quote, level)


# The requirements the cases of these tests cite: the spec's sentences, verbatim.
REQUIREMENTS = {
    r.id: r
    for r in (
        requirement(
            "R-seek",
            "MS-MQDMPR 3.1.7.3.2",
            "If iIterator is equivalent to the StartMessagePosition ADM element instance defined for "
            "iQueue.MessagePositionList: Set iIterator to iQueue.MessagePositionList.Head",
        ),
        requirement("R-dequeue", "MS-MQDMPR 3.1.7.1.10", "Set rMessage to iPosition.MessageReference."),
        requirement(
            "R-dequeue-undefined",
            "MS-MQDMPR 3.1.7.1.10",
            "rMessage: A reference to the Message (section 3.1.1.12) ADM element instance that was dequeued. "
            "This value is undefined if rStatus is not MQ_OK.",
            Level.interpretation,
        ),
        requirement(
            "R-purge",
            "MS-MQDMPR 3.1.7.1.7",
            "If iMessagePosition.State is not Available: Set iMessagePosition.State to PurgePending.",
        ),
        requirement(
            "R-peek-waiting",
            "MS-MQDMPR 3.2.7.2",
            "If rMessagePosition returned from the Seek Available Message Position event is equivalent to "
            "iQueue.MessagePositionList.End: Set the CursorState ADM attribute of the Cursor ADM element instance "
            "to WaitPeek. Set rStatus to Waiting.",
        ),
        requirement(
            "R-peek-position",
            "MS-MQDMPR 3.2.7.2",
            "rPosition: A reference to the MessagePosition (section 3.1.1.11) ADM element instance that contains "
            "the returned message. This value is undefined if rStatus is not set to Succeeded.",
            Level.interpretation,
        ),
        requirement(
            "R-timer",
            "MS-MQDMPR 3.1.6.3",
            "Generate a Waiting Message Read Timer Stop (section 3.1.7.3.5) event with the following arguments: "
            "iReader := iReader iStatus := set to MQ_ERROR_IO_TIMEOUT (0xC00E001B).",
        ),
        requirement(
            "R-srmp-access",
            "MS-MQDMPR 3.1.7.1.3.1",
            "If messages can be sent to this queue using the Message Queuing (MSMQ): SOAP Reliable Messaging "
            "Protocol (SRMP) [MC-MQSRM], MQSEC_WRITE_MESSAGE SHOULD be added (bitwise ORed) to the current value "
            "of WorldAccess, and AnonymousAccess SHOULD be set to MQSEC_WRITE_MESSAGE.",
            Level.SHOULD,
        ),
        # the processing requirement of the events a case does not cite (a step of another section)
        requirement("DMPR-3.1.7.1.9-PROCESSING", "MS-MQDMPR 3.1.7.1.9", PROCESSING),
        requirement("DMPR-3.1.7.1.10-PROCESSING", "MS-MQDMPR 3.1.7.1.10", PROCESSING),
    )
}

BASE = """
id: t.seek.skips-locked
title: A forward seek skips Locked positions
spec:
  - {section: MS-MQDMPR 3.1.7.3.2, requirement: R-seek}
  - {section: MS-MQDMPR 3.1.7.1.10, requirement: R-dequeue}
tags: [seek, smoke]
given:
  queues:
    - name: q
      messages:
        - {id: m1}
        - {id: m2, AllowPeekWhenLocked: true}
        - {id: m3, Priority: 1}
  transactions: [t1]
  open:
    - {name: h, queue: q, access: ReceiveAccess, share: DenyNone}
  cursors:
    - {name: c, open: h}
  locked:
    - {message: m1, transaction: t1}
when:
  - event: seek_available_message_position
    args: {iInitialPosition: Start, iQueue: q, iPeekOperation: false}
    expect: {rMessagePosition: m2}
  - event: dequeue_message
    args: {iQueueDesc: h, iTimeout: 0}
    expect:
      rStatus: {any_of: [MQ_OK, MQ_ERROR_IO_TIMEOUT]}
      rMessage: m2
      rPending: {absent: true}
then:
  requirement: R-dequeue
  queues:
    q:
      - {message: m1, State: Locked}
      - {message: m3, State: Available, Priority: 1}
  cursors:
    c: {CursorState: Unread, MessagePositionReference: Start}
"""


def load(text: str, requirements: dict[str, Requirement] | None = None) -> list[Case]:
    return load_text(text, "test.yaml", requirements=REQUIREMENTS if requirements is None else requirements)


def one(text: str) -> Case:
    [case] = load(text)
    return case


def run_one(text: str, **kw: object) -> tuple[Case, CaseResult]:
    case = one(text)
    return case, run_case(case, ReferenceTarget(), **kw)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ comparison
@pytest.mark.parametrize(
    ("expected", "observed", "ok"),
    [
        ("MQ_OK", "MQ_OK", True),
        ("MQ_OK", "MQ_ERROR_IO_TIMEOUT", False),
        (3, 3.0, True),
        (1, True, False),
        (True, 1, False),
        (False, False, True),
        ({"any_of": ["MQ_OK", "MQ_ERROR_IO_TIMEOUT"]}, "MQ_ERROR_IO_TIMEOUT", True),
        ({"any_of": ["MQ_OK"]}, "MQ_ERROR_IO_TIMEOUT", False),
        ({"any_of": ["m2", {"absent": True}]}, None, True),
        ({"absent": True}, None, True),
        ({"absent": True}, "m1", False),
        (None, None, True),
        (None, "m1", False),
        ("m1", None, False),
        ([1, "a"], [1, "a"], True),
        ([1, "a"], [1, "b"], False),
    ],
)
def test_matches(expected: object, observed: object, ok: bool) -> None:
    assert matches(expected, observed) is ok


def test_absent_value_matches_only_absent_or_null() -> None:
    assert matches({"absent": True})
    assert matches(None)
    assert not matches("MQ_OK")
    assert not values_equal("1", 1)


def test_a_correct_case_passes() -> None:
    case, result = run_one(BASE)
    assert result.outcome is Outcome.passed, result.detail
    assert result.case_id == case.full_id and result.sections == case.sections


def test_expect_failure_names_step_field_expected_observed_and_section() -> None:
    _, result = run_one(BASE.replace("expect: {rMessagePosition: m2}", "expect: {rMessagePosition: m3}"))
    assert result.outcome is Outcome.failed
    [f] = result.failures
    assert (f.step, f.event, f.field, f.expected, f.observed) == (
        0, "seek_available_message_position", "rMessagePosition", "m3", "m2")
    assert (f.section, f.requirement, f.level) == ("MS-MQDMPR 3.1.7.3.2", "R-seek", "MUST")
    assert "expected m3" in result.detail and "observed m2" in result.detail


def test_failure_section_is_the_one_of_the_requirement_the_step_renders() -> None:
    _, result = run_one(BASE.replace("rMessage: m2", "rMessage: m3"))
    [f] = result.failures
    assert (f.step, f.field, f.section, f.requirement) == (1, "rMessage", "MS-MQDMPR 3.1.7.1.10", "R-dequeue")
    case = one(BASE)
    # each step: the requirement the case cites in its event's section, never the first citation
    assert step_section(case, case.when[0]) == "MS-MQDMPR 3.1.7.3.2"
    assert step_section(case, case.when[1]) == "MS-MQDMPR 3.1.7.1.10"
    assert step_section(case, None) == "MS-MQDMPR 3.1.7.1.10"  # then.requirement: R-dequeue


def test_any_of_and_absent_failures() -> None:
    _, result = run_one(BASE.replace("[MQ_OK, MQ_ERROR_IO_TIMEOUT]", "[MQ_ERROR_IO_TIMEOUT]"))
    [f] = result.failures
    assert (f.field, f.expected, f.observed) == ("rStatus", {"any_of": ["MQ_ERROR_IO_TIMEOUT"]}, "MQ_OK")
    _, result = run_one(BASE.replace("rMessage: m2", "rMessage: {absent: true}"))
    [f] = result.failures
    assert (f.field, f.observed) == ("rMessage", "m2")
    _, result = run_one(BASE.replace("rPending: {absent: true}", "rPending: read1"))
    [f] = result.failures
    assert (f.field, f.observed) == ("rPending", "<absent>")


def test_then_positions_must_match_exactly_in_order() -> None:
    missing = BASE.replace("      - {message: m3, State: Available, Priority: 1}\n", "")
    _, result = run_one(missing)
    [f] = result.failures
    assert (f.step, f.event, f.field) == (-1, "then", "queues.q")
    assert f.expected == ["m1:Locked"] and f.observed == ["m1:Locked", "m3:Available"]
    # then.requirement, not the case's first reference (R-seek)
    assert (f.section, f.requirement, f.level) == ("MS-MQDMPR 3.1.7.1.10", "R-dequeue", "MUST")
    swapped = BASE.replace(
        "      - {message: m1, State: Locked}\n      - {message: m3, State: Available, Priority: 1}\n",
        "      - {message: m3, State: Available}\n      - {message: m1, State: Locked}\n",
    )
    _, result = run_one(swapped)
    assert [f.field for f in result.failures] == ["queues.q"]
    extra = BASE.replace("      - {message: m1, State: Locked}\n", "      - {message: m1, State: Locked}\n" * 1
                         + "      - {message: m2, State: Deleted}\n")
    _, result = run_one(extra)
    assert [f.field for f in result.failures] == ["queues.q"]


def test_then_position_attributes() -> None:
    _, result = run_one(BASE.replace("{message: m1, State: Locked}", "{message: m1, State: Available}"))
    [f] = result.failures
    assert (f.field, f.expected, f.observed) == ("queues.q[0].State", "Available", "Locked")
    _, result = run_one(BASE.replace("Priority: 1}\n    q", "Priority: 2}\n    q").replace(
        "State: Available, Priority: 1}", "State: Available, Priority: 2}"))
    [f] = result.failures
    assert (f.field, f.expected, f.observed) == ("queues.q[1].Priority", 2, 1)


def test_then_cursor_listed_attributes_only() -> None:
    _, result = run_one(BASE.replace("{CursorState: Unread, MessagePositionReference: Start}", "{CursorState: Read}"))
    [f] = result.failures
    assert (f.field, f.expected, f.observed) == ("cursors.c.CursorState", "Read", "Unread")
    _, result = run_one(BASE.replace("MessagePositionReference: Start", "MessagePositionReference: m1"))
    [f] = result.failures
    assert (f.field, f.expected, f.observed) == ("cursors.c.MessagePositionReference", "m1", "Start")


def test_compare_then_unknown_queue_and_cursor() -> None:
    failures = compare_then({"queues": {"q": []}, "cursors": {"c": {"CursorState": "Read"}}}, {}, "S")
    assert [(f.field, f.observed) for f in failures] == [("queues.q", "<absent>"), ("cursors.c", "<absent>")]


CURSOR_UB = """
id: t.cursor.peek-in-waitpeek
title: Get Message For Peek has no branch for WaitPeek
spec: [{section: MS-MQDMPR 3.2.7.2, requirement: R-peek-waiting}]
given:
  queues: [{name: q}]
  open: [{name: h, queue: q}]
  cursors: [{name: c, open: h}]
when:
  - event: get_message_for_peek
    args: {cursor: c}
    expect: {rStatus: Waiting, rPosition: {absent: true}}
  - event: get_message_for_peek
    args: {cursor: c}
    expect_error: UndefinedBehaviour
then:
  cursors:
    c: {CursorState: WaitPeek}
"""


def test_expect_error_passes_on_that_error() -> None:
    _, result = run_one(CURSOR_UB)
    assert result.outcome is Outcome.passed, result.detail


def test_expect_error_fails_when_the_event_returns() -> None:
    text = CURSOR_UB.replace(
        "expect: {rStatus: Waiting, rPosition: {absent: true}}", "expect_error: UndefinedBehaviour"
    )
    _, result = run_one(text)
    [f] = result.failures
    assert (f.step, f.field, f.expected, f.observed) == (0, "error", "UndefinedBehaviour", {"rStatus": "Waiting"})
    assert (f.section, f.requirement, f.level) == ("MS-MQDMPR 3.2.7.2", "R-peek-waiting", "MUST")


def test_an_unexpected_undefined_behaviour_fails_the_step() -> None:
    text = CURSOR_UB.replace("    expect_error: UndefinedBehaviour\n", "")
    _, result = run_one(text)
    assert result.outcome is Outcome.failed
    [f] = result.failures
    assert (f.step, f.field, f.expected, f.observed) == (1, "error", "no error", "UndefinedBehaviour")
    assert f.requirement == "R-peek-waiting"


def test_an_event_the_target_does_not_implement_is_unsupported() -> None:
    case = Case("t.x", "x", [SpecRef("MS-MQDMPR 3.1.7.1.9")], when=[Step("purge_queue"), Step("no_such_event")],
                given={"queues": [{"name": "q"}]})
    case.when[0].args = {"iQueue": "q"}
    # the target answers Unsupported when the step comes
    result = run_case(case, ReferenceTarget())
    assert (result.outcome, result.failures) == (Outcome.unsupported, [])
    assert "step 1 (no_such_event)" in result.detail and "no event 'no_such_event'" in result.detail
    # a hello that lists the target's events: unsupported before any step runs
    info = TargetInfo("partial", ["purge_queue", "dequeue_message"])
    result = run_case(case, ReferenceTarget(), info=info)
    assert result.outcome is Outcome.unsupported
    assert result.detail == "the target does not implement: no_such_event"
    assert not result.outcome.bad(strict=True)
    # a hello listing no events implements them all: the step runs, and fails at the target
    assert run_case(case, ReferenceTarget(), info=TargetInfo("all")).detail.startswith("step 1")
    # a step that expects Unsupported passes on it
    case.when[1].expect_error = "Unsupported"
    assert run_case(case, ReferenceTarget()).outcome is Outcome.passed


def test_bad_given_is_an_error_not_a_failure() -> None:
    case = Case("t.x", "x", [SpecRef("MS-MQDMPR 3.1.7.1.9")],
                given={"queues": [{"name": "q", "NoSuchAttribute": 1}]}, when=[Step("purge_queue", {"iQueue": "q"})])
    result = run_case(case, ReferenceTarget())
    assert result.outcome is Outcome.error
    assert "setup" in result.detail and "NoSuchAttribute" in result.detail


TIMEOUTS = """
id: t.wait.timeout
title: A blocked receive times out when the clock passes its timeout
spec: [{section: MS-MQDMPR 3.1.6.3, requirement: R-timer}]
given:
  queues: [{name: q}]
  open: [{name: h, queue: q}]
when:
  - event: dequeue_message
    args: {iQueueDesc: h, iTimeout: 5}
    expect: {rStatus: {absent: true}, rPending: read1}
  - event: advance_clock
    args: {seconds: 4}
    expect: {rFired: 0}
  - event: read_result
    args: {iReader: read1}
    expect: {rPending: read1}
  - event: advance_clock
    args: {seconds: 1}
    expect: {rFired: 1}
  - event: read_result
    args: {iReader: read1}
    expect: {rStatus: MQ_ERROR_IO_TIMEOUT, rMessage: {absent: true}}
  - event: dequeue_message
    args: {iQueueDesc: h, iTimeout: Infinite}
    expect: {rPending: read2}
  - event: enqueue_message
    args: {iQueue: q, iMessage: {id: m9, Priority: 5, Body: hello}}
    expect: {rStatus: NoError}
  - event: read_result
    args: {iReader: read2}
    expect: {rStatus: MQ_OK, rMessage: m9}
then:
  queues: {q: []}
"""


def test_clock_and_blocked_reads() -> None:
    _, result = run_one(TIMEOUTS)
    assert result.outcome is Outcome.passed, result.detail


# --------------------------------------------------------------------------------- grading
# The reference answers the second step with rStatus MQ_ERROR_IO_TIMEOUT and no rMessage: the
# value the reading ``first`` of R-dequeue-undefined gives as UNDEFINED writes it.  OTHER_READING
# swaps the readings' values, so that the reference gives what the reading ``second`` gives.
READ_FIRST = "{first: {absent: true}, second: m1}"
UNDEFINED = f"""
id: t.dequeue.empty
title: A dequeue from an empty queue times out without a message
spec:
  - {{section: MS-MQDMPR 3.1.7.1.10, requirement: R-dequeue}}
given:
  queues: [{{name: q, messages: [{{id: m1}}]}}]
  open: [{{name: h, queue: q, access: ReceiveAccess}}]
when:
  - event: dequeue_message
    args: {{iQueueDesc: h, iTimeout: 0}}
    expect: {{rStatus: MQ_OK, rMessage: m1}}
  - event: dequeue_message
    args: {{iQueueDesc: h, iTimeout: 0}}
    expect:
      rStatus: MQ_ERROR_IO_TIMEOUT
      rMessage: {{readings: {READ_FIRST}, requirement: R-dequeue-undefined}}
then:
  queues: {{q: []}}
"""
OTHER_READING = UNDEFINED.replace(READ_FIRST, "{first: m1, second: {absent: true}}")


def _line(text: str, line: str) -> int:
    """The 1-based line of ``line`` in a fixture text."""
    return text.splitlines().index(line) + 1


def test_a_value_another_reading_gives_is_non_strict_under_the_interpretation() -> None:
    _, result = run_one(UNDEFINED)
    assert result.outcome is Outcome.passed, result.detail
    _, result = run_one(OTHER_READING)
    assert result.outcome is Outcome.non_strict
    [f] = result.failures
    # expected: the value of the reading the corpus checks (the first)
    assert (f.step, f.field, f.expected, f.observed) == (1, "rMessage", "m1", "<absent>")
    assert (f.section, f.requirement, f.level) == ("MS-MQDMPR 3.1.7.1.10", "R-dequeue-undefined", "interpretation")
    assert (f.interpretation, f.reading) == ("R-dequeue-undefined", "second")
    assert [(r["name"], r["matched"]) for r in f.readings] == [("first", False), ("second", True)]
    assert [r["reading"] for r in f.readings] == [a.reading for a in READINGS]
    assert "expected m1, observed <absent>" in result.detail
    assert "reading 'second' of R-dequeue-undefined" in f.message
    assert not result.outcome.bad() and result.outcome.bad(strict=True)


def test_a_value_no_reading_gives_fails_the_frame() -> None:
    two_queues = UNDEFINED.replace(
        "queues: [{name: q, messages: [{id: m1}]}]",
        "queues: [{name: q, messages: [{id: m1}]}, {name: other, messages: [{id: m2}]}]",
    )
    _, result = run_one(two_queues.replace(READ_FIRST, "{first: m1, second: m2}"))
    assert result.outcome is Outcome.failed
    [f] = result.failures
    assert (f.step, f.field, f.observed) == (1, "rMessage", "<absent>")
    # filed under the interpretation's frame, a MUST, naming the interpretation and no reading
    assert FRAMES["R-dequeue-undefined"] == "R-dequeue"
    assert (f.section, f.requirement, f.level) == ("MS-MQDMPR 3.1.7.1.10", "R-dequeue", "MUST")
    assert (f.interpretation, f.reading) == ("R-dequeue-undefined", "")
    assert [(r["name"], r["matched"]) for r in f.readings] == [("first", False), ("second", False)]
    assert "no reading of R-dequeue-undefined gives it" in f.message
    # every reading gives the same value: the expectation is the frame
    _, result = run_one(UNDEFINED.replace(READ_FIRST, "{first: m1, second: m1}"))
    [f] = result.failures
    assert (result.outcome, f.requirement, f.level, f.reading) == (Outcome.failed, "R-dequeue", "MUST", "")
    assert "every reading of R-dequeue-undefined gives it" in f.message


def test_a_readings_value_may_be_any_of_several() -> None:
    text = UNDEFINED.replace(READ_FIRST, "{first: {any_of: [m1, {absent: true}]}, second: m1}")
    assert run_one(text)[1].outcome is Outcome.passed
    text = UNDEFINED.replace(READ_FIRST, "{first: {any_of: [m1]}, second: {any_of: [m1, {absent: true}]}}")
    _, result = run_one(text)
    [f] = result.failures
    assert (result.outcome, f.requirement, f.reading) == (Outcome.non_strict, "R-dequeue-undefined", "second")


def test_a_step_with_a_must_and_an_interpretation_difference_fails() -> None:
    text = OTHER_READING.replace("rStatus: MQ_ERROR_IO_TIMEOUT", "rStatus: MQ_OK")
    _, result = run_one(text)
    assert result.outcome is Outcome.failed  # the worst grade of the step's differences
    assert [(f.field, f.requirement, f.level, f.reading) for f in result.failures] == [
        ("rStatus", "R-dequeue", "MUST", ""),
        ("rMessage", "R-dequeue-undefined", "interpretation", "second"),
    ]


def test_a_case_stops_at_its_first_step_with_a_difference() -> None:
    text = OTHER_READING.replace("queues: {q: []}", "queues: {q: [{message: m1}]}")
    _, result = run_one(text)
    assert result.outcome is Outcome.non_strict  # then, a MUST difference, is not reached
    assert [f.step for f in result.failures] == [1]


FIRST_STEP = "    expect: {rStatus: MQ_OK, rMessage: m1}\n"


@pytest.mark.parametrize(
    ("level", "outcome"),
    [
        (Level.MUST, Outcome.failed),
        (Level.SHOULD, Outcome.non_strict),
        (Level.MAY, Outcome.non_strict),
    ],
)
def test_the_level_of_the_requirement_grades_the_difference(level: Level, outcome: Outcome) -> None:
    """The same difference, attributed to a requirement of each level (the step's ``requirement``)."""
    graded_by = requirement("R-graded", "MS-MQDMPR 3.1.7.1.10", REQUIREMENTS["R-dequeue"].quote, level)
    graded_step = "    requirement: R-graded\n    expect: {rStatus: MQ_ERROR_IO_TIMEOUT, rMessage: m1}\n"
    text = UNDEFINED.replace(FIRST_STEP, graded_step)
    [case] = load(text, {**REQUIREMENTS, "R-graded": graded_by})
    assert case.when[0].requirement == "R-graded"
    result = run_case(case, ReferenceTarget())
    assert result.outcome is outcome
    [f] = result.failures
    assert (f.step, f.field, f.requirement, f.level) == (0, "rStatus", "R-graded", str(level))
    assert (f.interpretation, f.reading) == ("", "")


@pytest.mark.parametrize(
    ("second", "outcome", "graded_by", "level", "reading"),
    [
        ("MQ_OK", Outcome.non_strict, "R-graded", "interpretation", "second"),  # what the reference gives
        ("MQ_ERROR_QUEUE_NOT_AVAILABLE", Outcome.failed, "R-dequeue", "MUST", ""),  # no reading gives MQ_OK
    ],
)
def test_an_interpretation_grades_a_difference_by_the_reading_the_value_is(
    second: str, outcome: Outcome, graded_by: str, level: str, reading: str
) -> None:
    """The same difference graded by an interpretation: non_strict when another reading gives the
    observed value, else failed under the interpretation's frame (R-dequeue)."""
    interpretation = requirement("R-graded", "MS-MQDMPR 3.1.7.1.10", REQUIREMENTS["R-dequeue"].quote,
                                 Level.interpretation)
    expect = f"    expect:\n      rStatus: {{readings: {{first: MQ_ERROR_IO_TIMEOUT, second: {second}}}, " \
             "requirement: R-graded}\n      rMessage: m1\n"
    [case] = load(UNDEFINED.replace(FIRST_STEP, expect), {**REQUIREMENTS, "R-graded": interpretation})
    result = run_case(case, ReferenceTarget())
    assert result.outcome is outcome
    [f] = result.failures  # rMessage: m1, graded by R-dequeue, passes
    assert (f.step, f.field, f.observed) == (0, "rStatus", "MQ_OK")
    assert (f.requirement, f.level, f.interpretation, f.reading) == (graded_by, level, "R-graded", reading)


def test_then_is_graded_by_its_own_requirement_else_the_only_citation() -> None:
    text = UNDEFINED.replace("queues: {q: []}", "queues: {q: [{message: m1}]}")
    _, result = run_one(text)
    [f] = result.failures
    # the case cites one requirement: `then` is graded by it
    assert (f.step, f.field, f.requirement, f.level, result.outcome) == (-1, "queues.q", "R-dequeue", "MUST",
                                                                         Outcome.failed)
    # then.requirement names the MUST that grades it
    _, result = run_one(text.replace("then:\n", "then:\n  requirement: R-purge\n"))
    [f] = result.failures
    assert (f.section, f.requirement, f.level, result.outcome) == ("MS-MQDMPR 3.1.7.1.7", "R-purge", "MUST",
                                                                   Outcome.failed)
    # never an interpretation: its values in `then` carry their readings
    bad = text.replace("then:\n", "then:\n  requirement: R-dequeue-undefined\n")
    with pytest.raises(CaseError) as err:
        load(bad)
    assert (err.value.file, err.value.line, err.value.key) == ("test.yaml", _line(bad, "then:"), "then")
    assert "R-dequeue-undefined is an interpretation" in err.value.message
    # a case citing several requirements names the one `then` checks: no first citation grades it
    several = BASE.replace("then:\n  requirement: R-dequeue\n", "then:\n")
    with pytest.raises(CaseError) as err:
        load(several)
    assert (err.value.line, err.value.key) == (_line(several, "then:"), "then")
    assert "the case cites several requirements" in err.value.message
    # an attribute's own annotation comes first
    text = BASE.replace("{message: m3, State: Available, Priority: 1}",
                        "{message: m3, State: Available, Priority: {is: 2, requirement: R-purge}}")
    dequeue = "  - {section: MS-MQDMPR 3.1.7.1.10, requirement: R-dequeue}\n"
    _, result = run_one(text.replace(dequeue, dequeue + "  - {section: MS-MQDMPR 3.1.7.1.7, requirement: R-purge}\n"))
    [f] = result.failures
    assert (f.field, f.expected, f.observed) == ("queues.q[1].Priority", 2, 1)
    assert (f.section, f.requirement) == ("MS-MQDMPR 3.1.7.1.7", "R-purge")


def test_a_step_of_an_event_the_case_does_not_cite_is_graded_by_its_processing_requirement() -> None:
    """TIMEOUTS cites the timer (3.1.6.3): its dequeue and enqueue steps are graded by their own
    events' processing requirements, its pseudo-events by the case's only citation."""
    case = one(TIMEOUTS)
    graded = [derived_requirement(case, step) for step in case.when]
    assert graded == [
        "DMPR-3.1.7.1.10-PROCESSING", "R-timer", "R-timer", "R-timer", "R-timer",
        "DMPR-3.1.7.1.10-PROCESSING", "DMPR-3.1.7.1.9-PROCESSING", "R-timer",
    ]  # fmt: skip
    _, result = run_one(TIMEOUTS.replace("expect: {rPending: read2}", "expect: {rPending: read9}"))
    [f] = result.failures
    assert (f.step, f.requirement, f.section, f.level) == (5, "DMPR-3.1.7.1.10-PROCESSING", "MS-MQDMPR 3.1.7.1.10",
                                                           "MUST")
    assert f.quote == PROCESSING
    # without the processing requirement in the list the case names one: a load error at the step
    without = {k: v for k, v in REQUIREMENTS.items() if k != "DMPR-3.1.7.1.9-PROCESSING"}
    with pytest.raises(CaseError) as err:
        load(TIMEOUTS, without)
    assert (err.value.line, err.value.key) == (_line(TIMEOUTS, "    expect: {rStatus: NoError}"),
                                               "when[6].expect.rStatus")
    assert "DMPR-3.1.7.1.9-PROCESSING" in err.value.message


# a reader no step started: the loader cannot know, the target errs
BAD_STEP = "when:\n  - event: read_result\n    args: {iReader: nobody}\n"


def test_an_error_is_not_graded() -> None:
    _, result = run_one(UNDEFINED.replace("when:\n", BAD_STEP))
    assert (result.outcome, result.failures) == (Outcome.error, [])
    assert "step 0 (read_result" in result.detail


# ----------------------------------------------------------------------- known failures
def test_known_failures_become_xfail_and_xpass(tmp_path: Path) -> None:
    good = one(BASE)
    bad = one(BASE.replace("t.seek.skips-locked", "t.bad").replace("rMessage: m2", "rMessage: m3"))
    other = one(BASE.replace("t.seek.skips-locked", "t.other"))
    listing = tmp_path / "known.txt"
    listing.write_text("# deviations of the implementation\nt.bad   # seek\n\nt.seek.skips-locked\n")
    known = load_known_failures(listing)
    assert known == {"t.bad", "t.seek.skips-locked"}
    result = run([good, bad, other], "reference", known_failures=known)
    assert [r.outcome for r in result.results] == [Outcome.xpass, Outcome.xfail, Outcome.passed]
    assert not result.ok  # an unexpected pass fails the run
    assert run([bad], "reference", known_failures=known).ok


def test_a_non_strict_case_fails_only_a_strict_run() -> None:
    case = one(OTHER_READING)
    result = run([case], "reference")
    assert [r.outcome for r in result.results] == [Outcome.non_strict]
    assert result.ok and not result.strict
    strict = run([case], "reference", strict=True)
    assert strict.strict and not strict.ok


def test_known_failure_by_id_covers_every_variant() -> None:
    text = BASE.replace("rMessage: m2", 'rMessage: "${want}"') + "matrix:\n  want: [m2, m3]\n"
    cases = load(text)
    result = run(cases, "reference", known_failures={"t.seek.skips-locked"})
    assert [r.outcome for r in result.results] == [Outcome.xpass, Outcome.xfail]
    result = run(cases, "reference", known_failures={"t.seek.skips-locked[want=m3]"})
    assert [r.outcome for r in result.results] == [Outcome.passed, Outcome.xfail]


# ------------------------------------------------------------------------------ selection
def _cases_for_select() -> list[Case]:
    def c(cid: str, section: str, level: Level, tags: list[str], title: str = "t") -> Case:
        req = requirement(f"R-{cid}", section, "quote", level)
        return Case(cid, title, [SpecRef(section, req.id)], tags=tags, when=[Step("purge_queue")],
                    requirements={req.id: req})

    return [
        c("dmpr.seek.a", "MS-MQDMPR 3.1.7.3.2", Level.MUST, ["seek"]),
        c("dmpr.seek.b", "MS-MQDMPR 3.1.7.3.2", Level.SHOULD, ["seek"]),
        c("dmpr.cursor.c", "MS-MQDMPR 3.2.7.2", Level.MUST, ["cursor"], title="Peek on a cursor"),
        c("dmpr.cursor.d", "MS-MQDMPR 3.2.7.20", Level.MAY, ["cursor"]),
        c("dmpr.enqueue.e", "MS-MQDMPR 3.1.7.1.9", Level.MUST, ["enqueue", "seek"]),
    ]


def ids(cases: list[Case]) -> list[str]:
    return [c.id for c in cases]


def test_every_level_is_selected() -> None:
    cases = _cases_for_select()
    assert [c.level for c in cases] == [Level.MUST, Level.SHOULD, Level.MUST, Level.MAY, Level.MUST]
    assert select(cases) == cases  # a SHOULD or MAY case runs too: a difference is non_strict, not a failure
    assert ids(select(cases, keyword="dmpr.cursor.d")) == ["dmpr.cursor.d"]


def test_select_by_keyword_expression() -> None:
    cases = _cases_for_select()
    assert ids(select(cases, keyword="seek")) == ["dmpr.seek.a", "dmpr.seek.b", "dmpr.enqueue.e"]  # id or tag
    assert ids(select(cases, keyword="seek and not enqueue")) == ["dmpr.seek.a", "dmpr.seek.b"]
    assert ids(select(cases, keyword="PEEK or enqueue")) == ["dmpr.cursor.c", "dmpr.enqueue.e"]  # title
    assert ids(select(cases, keyword="(cursor or enqueue) and not seek")) == ["dmpr.cursor.c", "dmpr.cursor.d"]
    with pytest.raises(ValueError):
        select(cases, keyword="seek and (")


def test_select_by_section_prefix() -> None:
    cases = _cases_for_select()
    assert ids(select(cases, sections=["MS-MQDMPR 3.1.7"])) == ["dmpr.seek.a", "dmpr.seek.b", "dmpr.enqueue.e"]
    assert ids(select(cases, sections=["MS-MQDMPR 3.2.7.2"])) == ["dmpr.cursor.c"]  # not 3.2.7.20
    assert ids(select(cases, sections=["3.2.7", "3.1.7.1"])) == ["dmpr.cursor.c", "dmpr.cursor.d", "dmpr.enqueue.e"]


# -------------------------------------------------------------------------------- workers
def _variety() -> list[Case]:
    cases = load(BASE + "---\n" + CURSOR_UB + "---\n" + TIMEOUTS)
    cases += load(BASE.replace("t.seek.skips-locked", "t.fails").replace("rMessage: m2", "rMessage: m1"))
    cases += load(OTHER_READING)
    cases += [Case("t.unsupported", "x", [SpecRef("MS-MQDMPR 3.1.7.1.9")], when=[Step("no_such_event")])]
    cases += load(UNDEFINED.replace("t.dequeue.empty", "t.error").replace("when:\n", BAD_STEP))
    return cases * 3


def test_workers_give_the_same_outcomes_in_case_order() -> None:
    cases = _variety()
    seen: list[str] = []
    serial = run(cases, "reference", workers=1)
    parallel = run(cases, "reference", workers=2, progress=lambda r: seen.append(r.case_id))
    assert [r.case_id for r in parallel.results] == [c.full_id for c in cases] == seen
    assert [(r.outcome, r.failures) for r in parallel.results] == [(r.outcome, r.failures) for r in serial.results]
    assert serial.counts() == {"passed": 9, "failed": 3, "non_strict": 3, "unsupported": 3, "error": 3}


class _NoHello:
    """A target class whose hello fails."""

    def hello(self) -> TargetInfo:
        raise RuntimeError("no hello today")

    def setup(self, given: dict[str, object]) -> None:
        raise AssertionError("no case runs")

    event = observe = setup

    def close(self) -> None:
        pass


def test_a_target_that_cannot_be_opened_stops_the_run_before_any_case() -> None:
    seen: list[CaseResult] = []
    with pytest.raises(ConfigurationError, match=r"cannot make target 'plugin:no\.such\.module:Nope': ModuleNotFound"):
        run(load(BASE), "plugin:no.such.module:Nope", progress=seen.append)
    with pytest.raises(ConfigurationError, match="did not answer hello: RuntimeError: no hello today"):
        run(load(BASE) * 2, f"plugin:{__name__}:_NoHello", workers=2, progress=seen.append)
    assert seen == []
