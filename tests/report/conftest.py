"""A run with every outcome, for the report tests: built from result objects, no target needed."""

from __future__ import annotations

import pytest

from harness.report.results import CaseResult, Outcome, RunResult, StepFailure

NASTY = '<script>alert("x")</script> & \'quotes\''  # must come out escaped everywhere


def make_run() -> RunResult:
    """Eight cases over three documents; sections chosen so that a string sort would misorder them."""
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
        ),
        CaseResult(
            case_id="dmpr.seek.fwd[peek=True]",
            title="A forward seek skips Locked positions",
            sections=["MS-MQDMPR 3.1.7.3.2"],
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
                ),
                StepFailure(
                    step=-1,
                    event="then",
                    field="queues.q[0].State",
                    expected={"any_of": ["Locked", "Deleted"]},
                    observed="Available",
                    section="MS-MQDMPR 3.1.1.2",
                    message="then: queues.q[0].State",
                    evidence=f"0000  4c 49 4f 52  LIOR\n      ^^ {NASTY}",
                ),
            ],
            detail="step 0 failed",
            source="cases/mqdmpr/seek.yaml",
            line=1,
        ),
        CaseResult(
            case_id="dmpr.dequeue.timeout",
            title=f"Title with {NASTY}",
            sections=["MS-MQDMPR 3.1.7.1.10", "MS-MQDMPR 3.1.7.1.9"],
            level="MUST",
            outcome=Outcome.error,
            duration=10.0,
            detail="step 1 (dequeue_message): timed out after 10 s\nsecond line \x01 control",
        ),
        CaseResult(
            case_id="dmpr.purge.locked",
            title="Purge marks Locked positions PurgePending",
            sections=["MS-MQDMPR 3.1.7.1.9"],
            level="MUST",
            outcome=Outcome.xfail,
            duration=0.001,
            failures=[
                StepFailure(-1, "then", "queues.q[1].State", "PurgePending", "Deleted", "MS-MQDMPR 3.1.7.1.9")
            ],
        ),
        CaseResult(
            case_id="dmpr.purge.empty",
            title="Purge of an empty queue",
            sections=["MS-MQDMPR 3.1.7.1.9"],
            level="MUST",
            outcome=Outcome.xpass,
            duration=0.001,
            detail="listed as a known failure, but passed",
        ),
        CaseResult(
            case_id="mqqb.session.ack",
            title="A wire case",
            sections=["MS-MQQB 3.1.5.8.1"],
            level="MUST",
            outcome=Outcome.not_applicable,
            detail="target lacks: peer-behaviour",
        ),
        CaseResult(
            case_id="mqmq.header.priority",
            title="A header case",
            sections=["MS-MQMQ 2.2.19.1"],
            level="SHOULD",
            outcome=Outcome.passed,
            duration=0.0005,
        ),
        CaseResult(
            case_id="dmpr.cursor.peek",
            title="Peek through a cursor",
            sections=["MS-MQDMPR 3.2.7.4"],
            level="MUST",
            outcome=Outcome.passed,
            duration=0.0007,
        ),
    ]
    return RunResult(target="plugin:vendor.msmq:Impl", results=results, duration=10.1)


# The by-section counts of make_run(), in the order the matrix must show them (3.1.1.2 is cited
# only by a failure, not by a case: it is not a row).
EXPECTED_ROWS = [
    ("MS-MQDMPR", "MS-MQDMPR 3.1.7.1.9", {"error": 1, "xfail": 1, "xpass": 1}),
    ("MS-MQDMPR", "MS-MQDMPR 3.1.7.1.10", {"error": 1}),
    ("MS-MQDMPR", "MS-MQDMPR 3.1.7.3.2", {"passed": 1, "failed": 1}),
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
