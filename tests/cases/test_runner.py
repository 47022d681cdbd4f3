"""The runner (harness.cases.runner, harness.cases.compare): every comparison rule of
docs/cases.md, failures naming step, field, expected, observed and spec section, known
failures, selection by -k/section/level, and workers giving the same outcomes as one process."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cases.compare import compare_then, matches, values_equal
from harness.cases.loader import load_text
from harness.cases.model import Case, Level, SpecRef, Step
from harness.cases.runner import (
    load_known_failures,
    run,
    run_case,
    select,
    step_section,
)
from harness.cases.targets import ReferenceTarget
from harness.report.results import Outcome

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
  queues:
    q:
      - {message: m1, State: Locked}
      - {message: m3, State: Available, Priority: 1}
  cursors:
    c: {CursorState: Unread, MessagePositionReference: Start}
"""


def load(text: str) -> list[Case]:
    return load_text(text, "test.yaml")


def one(text: str) -> Case:
    [case] = load(text)
    return case


def run_one(text: str, **kw: object) -> tuple[Case, object]:
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
    assert result.outcome is Outcome.passed, result.detail  # type: ignore[attr-defined]
    assert result.case_id == case.full_id and result.sections == case.sections  # type: ignore[attr-defined]


def test_expect_failure_names_step_field_expected_observed_and_section() -> None:
    _, result = run_one(BASE.replace("expect: {rMessagePosition: m2}", "expect: {rMessagePosition: m3}"))
    assert result.outcome is Outcome.failed  # type: ignore[attr-defined]
    [f] = result.failures  # type: ignore[attr-defined]
    assert (f.step, f.event, f.field, f.expected, f.observed) == (
        0, "seek_available_message_position", "rMessagePosition", "m3", "m2")
    assert f.section == "MS-MQDMPR 3.1.7.3.2"
    assert "expected m3" in result.detail and "observed m2" in result.detail  # type: ignore[attr-defined]


def test_failure_section_is_the_one_defining_the_event_else_the_first() -> None:
    _, result = run_one(BASE.replace("rMessage: m2", "rMessage: m3"))
    [f] = result.failures  # type: ignore[attr-defined]
    assert (f.step, f.field, f.section) == (1, "rMessage", "MS-MQDMPR 3.1.7.1.10")
    case = one(BASE)
    assert step_section(case, "purge_queue") == "MS-MQDMPR 3.1.7.3.2"  # not cited: the first
    assert step_section(case, "purge_queue", "R-dequeue") == "MS-MQDMPR 3.1.7.1.10"


def test_any_of_and_absent_failures() -> None:
    _, result = run_one(BASE.replace("[MQ_OK, MQ_ERROR_IO_TIMEOUT]", "[MQ_ERROR_IO_TIMEOUT]"))
    [f] = result.failures  # type: ignore[attr-defined]
    assert (f.field, f.expected, f.observed) == ("rStatus", {"any_of": ["MQ_ERROR_IO_TIMEOUT"]}, "MQ_OK")
    _, result = run_one(BASE.replace("rMessage: m2", "rMessage: {absent: true}"))
    [f] = result.failures  # type: ignore[attr-defined]
    assert (f.field, f.observed) == ("rMessage", "m2")
    _, result = run_one(BASE.replace("rPending: {absent: true}", "rPending: read1"))
    [f] = result.failures  # type: ignore[attr-defined]
    assert (f.field, f.observed) == ("rPending", "<absent>")


def test_then_positions_must_match_exactly_in_order() -> None:
    missing = BASE.replace("      - {message: m3, State: Available, Priority: 1}\n", "")
    _, result = run_one(missing)
    [f] = result.failures  # type: ignore[attr-defined]
    assert (f.step, f.event, f.field) == (-1, "then", "queues.q")
    assert f.expected == ["m1:Locked"] and f.observed == ["m1:Locked", "m3:Available"]
    assert f.section == "MS-MQDMPR 3.1.7.3.2"
    swapped = BASE.replace(
        "      - {message: m1, State: Locked}\n      - {message: m3, State: Available, Priority: 1}\n",
        "      - {message: m3, State: Available}\n      - {message: m1, State: Locked}\n",
    )
    _, result = run_one(swapped)
    assert [f.field for f in result.failures] == ["queues.q"]  # type: ignore[attr-defined]
    extra = BASE.replace("      - {message: m1, State: Locked}\n", "      - {message: m1, State: Locked}\n" * 1
                         + "      - {message: m2, State: Deleted}\n")
    _, result = run_one(extra)
    assert [f.field for f in result.failures] == ["queues.q"]  # type: ignore[attr-defined]


def test_then_position_attributes() -> None:
    _, result = run_one(BASE.replace("{message: m1, State: Locked}", "{message: m1, State: Available}"))
    [f] = result.failures  # type: ignore[attr-defined]
    assert (f.field, f.expected, f.observed) == ("queues.q[0].State", "Available", "Locked")
    _, result = run_one(BASE.replace("Priority: 1}\n    q", "Priority: 2}\n    q").replace(
        "State: Available, Priority: 1}", "State: Available, Priority: 2}"))
    [f] = result.failures  # type: ignore[attr-defined]
    assert (f.field, f.expected, f.observed) == ("queues.q[1].Priority", 2, 1)


def test_then_cursor_listed_attributes_only() -> None:
    _, result = run_one(BASE.replace("{CursorState: Unread, MessagePositionReference: Start}", "{CursorState: Read}"))
    [f] = result.failures  # type: ignore[attr-defined]
    assert (f.field, f.expected, f.observed) == ("cursors.c.CursorState", "Read", "Unread")
    _, result = run_one(BASE.replace("MessagePositionReference: Start", "MessagePositionReference: m1"))
    [f] = result.failures  # type: ignore[attr-defined]
    assert (f.field, f.expected, f.observed) == ("cursors.c.MessagePositionReference", "m1", "Start")


def test_compare_then_unknown_queue_and_cursor() -> None:
    failures = compare_then({"queues": {"q": []}, "cursors": {"c": {"CursorState": "Read"}}}, {}, "S")
    assert [(f.field, f.observed) for f in failures] == [("queues.q", "<absent>"), ("cursors.c", "<absent>")]


CURSOR_UB = """
id: t.cursor.peek-in-waitpeek
title: Get Message For Peek has no branch for WaitPeek
spec: [{section: MS-MQDMPR 3.2.7.2}]
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
    assert result.outcome is Outcome.passed, result.detail  # type: ignore[attr-defined]


def test_expect_error_fails_when_the_event_returns() -> None:
    text = CURSOR_UB.replace(
        "expect: {rStatus: Waiting, rPosition: {absent: true}}", "expect_error: UndefinedBehaviour"
    )
    _, result = run_one(text)
    [f] = result.failures  # type: ignore[attr-defined]
    assert (f.step, f.field, f.expected, f.observed) == (0, "error", "UndefinedBehaviour", {"rStatus": "Waiting"})
    assert f.section == "MS-MQDMPR 3.2.7.2"


def test_an_unexpected_undefined_behaviour_fails_the_step() -> None:
    text = CURSOR_UB.replace("    expect_error: UndefinedBehaviour\n", "")
    _, result = run_one(text)
    assert result.outcome is Outcome.failed  # type: ignore[attr-defined]
    [f] = result.failures  # type: ignore[attr-defined]
    assert (f.step, f.field, f.expected, f.observed) == (1, "error", "no error", "UndefinedBehaviour")


def test_an_event_the_target_lacks_fails_the_case() -> None:
    case = Case("t.x", "x", [SpecRef("MS-MQDMPR 3.1.7.1.9")], when=[Step("no_such_event")])
    result = run_case(case, ReferenceTarget())
    assert result.outcome is Outcome.failed
    assert result.failures[0].observed == "Unsupported"


def test_bad_given_is_an_error_not_a_failure() -> None:
    case = Case("t.x", "x", [SpecRef("MS-MQDMPR 3.1.7.1.9")],
                given={"queues": [{"name": "q", "NoSuchAttribute": 1}]}, when=[Step("purge_queue", {"iQueue": "q"})])
    result = run_case(case, ReferenceTarget())
    assert result.outcome is Outcome.error
    assert "setup" in result.detail and "NoSuchAttribute" in result.detail


TIMEOUTS = """
id: t.wait.timeout
title: A blocked receive times out when the clock passes its timeout
spec: [{section: MS-MQDMPR 3.1.6.3}]
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
    assert result.outcome is Outcome.passed, result.detail  # type: ignore[attr-defined]


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
        return Case(cid, title, [SpecRef(section)], level=level, tags=tags, when=[Step("purge_queue")])

    return [
        c("dmpr.seek.a", "MS-MQDMPR 3.1.7.3.2", Level.MUST, ["seek"]),
        c("dmpr.seek.b", "MS-MQDMPR 3.1.7.3.2", Level.SHOULD, ["seek"]),
        c("dmpr.cursor.c", "MS-MQDMPR 3.2.7.2", Level.MUST, ["cursor"], title="Peek on a cursor"),
        c("dmpr.cursor.d", "MS-MQDMPR 3.2.7.20", Level.MAY, ["cursor"]),
        c("dmpr.enqueue.e", "MS-MQDMPR 3.1.7.1.9", Level.MUST, ["enqueue", "seek"]),
    ]


def ids(cases: list[Case]) -> list[str]:
    return [c.id for c in cases]


def test_select_by_level() -> None:
    cases = _cases_for_select()
    assert ids(select(cases)) == ["dmpr.seek.a", "dmpr.cursor.c", "dmpr.enqueue.e"]
    assert ids(select(cases, strict=True)) == ["dmpr.seek.a", "dmpr.seek.b", "dmpr.cursor.c", "dmpr.enqueue.e"]
    assert ids(select(cases, keyword="dmpr.cursor.d")) == ["dmpr.cursor.d"]  # MAY only through -k


def test_select_by_keyword_expression() -> None:
    cases = _cases_for_select()
    assert ids(select(cases, keyword="seek")) == ["dmpr.seek.a", "dmpr.enqueue.e"]  # id or tag
    assert ids(select(cases, keyword="seek and not enqueue")) == ["dmpr.seek.a"]
    assert ids(select(cases, keyword="PEEK or enqueue")) == ["dmpr.cursor.c", "dmpr.enqueue.e"]  # title
    assert ids(select(cases, keyword="(cursor or enqueue) and not seek")) == ["dmpr.cursor.c", "dmpr.cursor.d"]
    with pytest.raises(ValueError):
        select(cases, keyword="seek and (")


def test_select_by_section_prefix() -> None:
    cases = _cases_for_select()
    assert ids(select(cases, sections=["MS-MQDMPR 3.1.7"])) == ["dmpr.seek.a", "dmpr.enqueue.e"]
    assert ids(select(cases, sections=["MS-MQDMPR 3.2.7.2"], strict=True)) == ["dmpr.cursor.c"]  # not 3.2.7.20
    assert ids(select(cases, sections=["3.2.7", "3.1.7.1"])) == ["dmpr.cursor.c", "dmpr.enqueue.e"]


# -------------------------------------------------------------------------------- workers
def _variety() -> list[Case]:
    cases = load(BASE + "---\n" + CURSOR_UB + "---\n" + TIMEOUTS)
    cases += load(BASE.replace("t.seek.skips-locked", "t.fails").replace("rMessage: m2", "rMessage: m1"))
    cases += [Case("t.unsupported", "x", [SpecRef("MS-MQDMPR 3.1.7.1.9")], when=[Step("no_such_event")])]
    return cases * 3


def test_workers_give_the_same_outcomes_in_case_order() -> None:
    cases = _variety()
    seen: list[str] = []
    serial = run(cases, "reference", workers=1)
    parallel = run(cases, "reference", workers=2, progress=lambda r: seen.append(r.case_id))
    assert [r.case_id for r in parallel.results] == [c.full_id for c in cases] == seen
    assert [(r.outcome, r.failures) for r in parallel.results] == [(r.outcome, r.failures) for r in serial.results]
    assert serial.counts() == {"passed": 9, "failed": 6}


def test_a_bad_target_spec_errors_every_case() -> None:
    result = run(load(BASE), "plugin:no.such.module:Nope")
    assert [r.outcome for r in result.results] == [Outcome.error]
    assert "no.such.module" in result.results[0].detail
