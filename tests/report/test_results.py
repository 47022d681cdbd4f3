"""The results model the reports share (harness.report.results): outcomes worst first, which of
them fail a run (non_strict only under --strict), and how a case counts by section and by
requirement (once each; a case with differences only under what it broke)."""

from __future__ import annotations

from collections import Counter

import pytest

from harness.results import SEVERITY, CaseResult, Outcome, RunResult, StepFailure


def result(
    case_id: str, outcome: Outcome, sections: list[str], requirements: list[str], *broken: tuple[str, str, str]
) -> CaseResult:
    """A result whose failures break ``(section, requirement, level)``."""
    failures = [StepFailure(0, "e", "v", 1, 2, section, requirement=req, level=level) for section, req, level in broken]
    return CaseResult(case_id, case_id, sections, "MUST", outcome, failures=failures, requirements=requirements)


def test_outcomes_worst_first() -> None:
    assert [str(o) for o in SEVERITY] == [
        "error", "failed", "xpass", "non_strict", "xfail", "unsupported", "not_applicable", "passed",
    ]  # fmt: skip
    assert set(SEVERITY) == set(Outcome)


@pytest.mark.parametrize(
    ("outcome", "bad", "bad_strict", "ran"),
    [
        (Outcome.error, True, True, True),
        (Outcome.failed, True, True, True),
        (Outcome.xpass, True, True, True),
        (Outcome.non_strict, False, True, True),
        (Outcome.xfail, False, False, True),
        (Outcome.unsupported, False, False, False),
        (Outcome.not_applicable, False, False, False),
        (Outcome.passed, False, False, True),
    ],
)
def test_which_outcomes_fail_a_run(outcome: Outcome, bad: bool, bad_strict: bool, ran: bool) -> None:
    assert (outcome.bad(), outcome.bad(strict=True), outcome.ran) == (bad, bad_strict, ran)
    run = RunResult("t", [result("a", Outcome.passed, ["S 1"], []), result("b", outcome, ["S 1"], [])])
    assert run.ok is not bad
    run.strict = True
    assert run.ok is not bad_strict
    assert run.ran == 1 + ran


def test_a_case_counts_once_per_section_and_requirement() -> None:
    run = RunResult(
        "t",
        [
            # two requirements of one section: counted once under it
            result("p", Outcome.passed, ["MS-X 1", "MS-X 1", "MS-X 2"], ["R-1a", "R-1b", "R-2"]),
            # broke a requirement of section 2 only: not counted under section 1
            result("f", Outcome.failed, ["MS-X 1", "MS-X 2"], ["R-1a", "R-2"], ("MS-X 2", "R-2", "MUST")),
            # two differences under one requirement: once
            result(
                "n",
                Outcome.non_strict,
                ["MS-X 1", "MS-X 3"],
                ["R-1a", "R-3"],
                ("MS-X 3", "R-3", "interpretation"),
                ("MS-X 3", "R-3", "interpretation"),
            ),
            # a difference without a section or requirement: the case's own
            result("e", Outcome.xfail, ["MS-X 1"], ["R-1a"], ("", "", "MUST")),
            # not run: under what it cites
            result("u", Outcome.unsupported, ["MS-X 3"], ["R-3"]),
        ],
    )
    assert run.by_section() == {
        "MS-X 1": Counter({"passed": 1, "xfail": 1}),
        "MS-X 2": Counter({"passed": 1, "failed": 1}),
        "MS-X 3": Counter({"non_strict": 1, "unsupported": 1}),
    }
    assert run.by_requirement() == {
        "R-1a": Counter({"passed": 1, "xfail": 1}),
        "R-1b": Counter({"passed": 1}),
        "R-2": Counter({"passed": 1, "failed": 1}),
        "R-3": Counter({"non_strict": 1, "unsupported": 1}),
    }
    assert run.counts() == Counter({"passed": 1, "failed": 1, "non_strict": 1, "xfail": 1, "unsupported": 1})
    assert run.to_dict()["by_requirement"]["R-3"] == {"non_strict": 1, "unsupported": 1}
