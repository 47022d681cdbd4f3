"""A run with every outcome, for the report tests: built from result objects, no target needed."""

from __future__ import annotations

import pytest

from harness.results import CaseResult, Outcome, RunResult, StepFailure

NASTY = '<script>alert("x")</script> & \'quotes\''  # must come out escaped everywhere


def make_run() -> RunResult:
    """Ten cases over three documents, one per outcome and three passed; sections chosen so that a
    string sort would misorder them."""
    results = [
        CaseResult(
            case_id="dmpr.seek.fwd[peek=False]",
            title="A forward seek skips Locked positions",
            sections=["MS-MQDMPR 3.1.7.3.2"],
            level="MUST",
            outcome=Outcome.passed,
            duration=0.002,
            source="cases/mqdmpr/seek.yaml",
            line=1,
            tags=["seek"],
            requirements=["DMPR-SEEK-SKIP"],
        ),
        CaseResult(
            case_id="dmpr.seek.fwd[peek=True]",
            title="A forward seek skips Locked positions",
            sections=["MS-MQDMPR 3.1.7.3.2", "MS-MQDMPR 3.1.1.11"],
            level="MUST",
            outcome=Outcome.failed,
            duration=0.003,
            failures=[
                StepFailure(
                    step=0,
                    event="seek_available_message_position",
                    field="rMessagePosition",
                    expected="m2",
                    observed="m1",
                    section="MS-MQDMPR 3.1.7.3.2",
                    message='step 0 (seek_available_message_position): rMessagePosition expected m2, observed m1',
                    requirement="DMPR-SEEK-SKIP",
                    level="MUST",
                ),
                StepFailure(
                    step=-1,
                    event="then",
                    field="queues.q[0].State",
                    expected={"any_of": ["Locked", "Deleted"]},
                    observed="Available",
                    section="MS-MQDMPR 3.1.1.11",
                    message="then: queues.q[0].State",
                    evidence=f"0000  4c 49 4f 52  LIOR\n      ^^ {NASTY}",
                    requirement="DMPR-STATE-LOCKED",
                    level="MUST",
                ),
            ],
            detail="step 0 failed",
            source="cases/mqdmpr/seek.yaml",
            line=1,
            requirements=["DMPR-SEEK-SKIP", "DMPR-STATE-LOCKED"],
        ),
        CaseResult(
            case_id="dmpr.dequeue.timeout",
            title=f"Title with {NASTY}",
            sections=["MS-MQDMPR 3.1.7.1.10", "MS-MQDMPR 3.1.7.1.9"],
            level="MUST",
            outcome=Outcome.error,
            duration=10.0,
            detail="step 1 (dequeue_message): timed out after 10 s\nsecond line \x01 control",
            requirements=["DMPR-DEQUEUE-TIMEOUT", "DMPR-ENQUEUE"],
        ),
        CaseResult(
            case_id="dmpr.purge.locked",
            title="Purge marks Locked positions PurgePending",
            sections=["MS-MQDMPR 3.1.7.1.9"],
            level="MUST",
            outcome=Outcome.xfail,
            duration=0.001,
            failures=[
                StepFailure(
                    -1,
                    "then",
                    "queues.q[1].State",
                    "PurgePending",
                    "Deleted",
                    "MS-MQDMPR 3.1.7.1.9",
                    requirement="DMPR-ENQUEUE",
                    level="MUST",
                )
            ],
            requirements=["DMPR-ENQUEUE"],
        ),
        CaseResult(
            case_id="dmpr.purge.empty",
            title="Purge of an empty queue",
            sections=["MS-MQDMPR 3.1.7.1.9"],
            level="MUST",
            outcome=Outcome.xpass,
            duration=0.001,
            detail="listed as a known failure, but passed",
            requirements=["DMPR-ENQUEUE"],
        ),
        CaseResult(
            case_id="mqqb.session.ack",
            title="A wire case",
            sections=["MS-MQQB 3.1.5.8.1"],
            level="MUST",
            outcome=Outcome.not_applicable,
            detail="target lacks: peer-behaviour",
            requirements=["MQQB-SESSION-ACK"],
        ),
        CaseResult(
            case_id="mqmq.header.priority",
            title="A header case",
            sections=["MS-MQMQ 2.2.19.1"],
            level="SHOULD",
            outcome=Outcome.passed,
            duration=0.0005,
            requirements=["MQMQ-PRIORITY"],
        ),
        CaseResult(
            case_id="dmpr.cursor.peek",
            title="Peek through a cursor",
            sections=["MS-MQDMPR 3.2.7.4"],
            level="MUST",
            outcome=Outcome.passed,
            duration=0.0007,
            requirements=["DMPR-CURSOR-DEQUEUE"],
        ),
        CaseResult(
            case_id="dmpr.cursor.waiting",
            title="A peek that waits, rPosition read as End",
            sections=["MS-MQDMPR 3.2.7.2", "MS-MQDMPR 3.1.7.3.2"],
            level="MUST",
            outcome=Outcome.non_strict,
            duration=0.0004,
            failures=[
                StepFailure(
                    step=1,
                    event="get_message_for_peek",
                    field="rPosition",
                    expected="End",
                    observed="<absent>",
                    section="MS-MQDMPR 3.2.7.2",
                    message="step 1 (get_message_for_peek): rPosition expected End, observed <absent>",
                    requirement="DMPR-PEEK-POSITION",
                    level="interpretation",
                )
            ],
            detail="step 1 (get_message_for_peek): rPosition expected End, observed <absent>",
            source="cases/mqdmpr/cursor.yaml",
            line=40,
            requirements=["DMPR-PEEK-POSITION", "DMPR-SEEK-SKIP"],
        ),
        CaseResult(
            case_id="dmpr.move.subqueue",
            title="Move a message to a subqueue",
            sections=["MS-MQDMPR 3.1.7.1.16"],
            level="MUST",
            outcome=Outcome.unsupported,
            detail="the target does not implement: move_message",
            requirements=["DMPR-MOVE"],
        ),
    ]
    return RunResult(target="plugin:vendor.msmq:Impl", results=results, duration=10.1)


# The by-section counts of make_run(), in the order the matrix must show them.  A case with
# differences counts only under the sections of the requirements it broke: the non_strict
# dmpr.cursor.waiting cites 3.1.7.3.2 too, but counts only under 3.2.7.2; the failed case counts
# under both sections it broke.
EXPECTED_ROWS = [
    ("MS-MQDMPR", "MS-MQDMPR 3.1.1.11", {"failed": 1}),
    ("MS-MQDMPR", "MS-MQDMPR 3.1.7.1.9", {"error": 1, "xfail": 1, "xpass": 1}),
    ("MS-MQDMPR", "MS-MQDMPR 3.1.7.1.10", {"error": 1}),
    ("MS-MQDMPR", "MS-MQDMPR 3.1.7.1.16", {"unsupported": 1}),
    ("MS-MQDMPR", "MS-MQDMPR 3.1.7.3.2", {"passed": 1, "failed": 1}),
    ("MS-MQDMPR", "MS-MQDMPR 3.2.7.2", {"non_strict": 1}),
    ("MS-MQDMPR", "MS-MQDMPR 3.2.7.4", {"passed": 1}),
    ("MS-MQQB", "MS-MQQB 3.1.5.8.1", {"not_applicable": 1}),
    ("MS-MQMQ", "MS-MQMQ 2.2.19.1", {"passed": 1}),
]


@pytest.fixture
def run() -> RunResult:
    return make_run()


@pytest.fixture
def expected_rows() -> list[tuple[str, str, dict[str, int]]]:
    return EXPECTED_ROWS


@pytest.fixture
def nasty() -> str:
    return NASTY
