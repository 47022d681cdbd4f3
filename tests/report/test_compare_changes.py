"""``msmq-harness compare`` shows what changed between runs: regressions, changed failures, fixes.

Real runs of different case sets (a mutant on two folders, the reference on one of them and a
third) exit 0 when nothing regressed, counting the cases not in both; a failure that changed
(another observed value) is a changed failure and exits 1, as a regression does.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from harness.cli import main
from harness.report.compare import CHANGED, FIX, OTHER, REGRESSION, add_parser, compare, render_compare_html
from harness.report.json_report import read_json, write_json
from harness.results import CaseResult, Outcome, RunResult, StepFailure

ROOT = Path(__file__).resolve().parents[2]
SEEK = str(ROOT / "cases" / "mqdmpr" / "seek")
CURSOR = str(ROOT / "cases" / "mqdmpr" / "cursor")
QUEUE = str(ROOT / "cases" / "mqdmpr" / "queues")
MUTANT = "plugin:examples.mutants.seek:PeekReturnsAnyLocked"


def _compare(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="msmq-harness")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


def test_runs_of_different_case_sets_exit_0_when_nothing_regressed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    assert main(["run", SEEK, CURSOR, "--target", MUTANT, "--json", str(before)]) == 1
    assert main(["run", SEEK, QUEUE, "--json", str(after)]) == 0
    capsys.readouterr()
    assert _compare(["compare", str(before), str(after)]) == 0
    text = capsys.readouterr().out
    old, new = read_json(before), read_json(after)
    shared = {r.case_id for r in old.results} & {r.case_id for r in new.results}
    fixed = {r.case_id for r in old.results if r.case_id in shared and str(r.outcome) == "failed"}
    only_before = len({r.case_id for r in old.results} - shared)
    only_after = len({r.case_id for r in new.results} - shared)
    assert fixed and only_before and only_after
    comparison = compare([(str(before), old), (str(after), new)])
    assert {r.case_id for r in comparison.rows} == shared  # only the cases in both runs
    assert {r.case_id for r in comparison.changed(FIX)} == fixed
    assert comparison.changed(REGRESSION) == comparison.changed(CHANGED) == []
    assert f"Fixes (failing before, not now): {len(fixed)}\n" in text
    assert "Regressions (failing now, not before): 0\n" in text
    assert f"Not compared (not in every run; --include-missing lists them): [1] {only_before}, [2] {only_after}" in text
    assert "\nNO REGRESSION: 0 regressions, 0 changed failures" in text
    # the other way round the fixes are regressions
    assert _compare(["compare", str(after), str(before)]) == 1
    assert f"Regressions (failing now, not before): {len(fixed)}\n" in capsys.readouterr().out


def _case(case_id: str, outcome: Outcome, observed: object = None, requirement: str = "R-1") -> CaseResult:
    failures = []
    if outcome is Outcome.failed:
        failures = [
            StepFailure(0, "seek", "rStatus", "MQ_OK", observed, "MS-MQDMPR 3.1.7.3.2", requirement=requirement)
        ]
    return CaseResult(case_id, case_id, ["MS-MQDMPR 3.1.7.3.2"], "MUST", outcome, failures=failures)


def test_regressions_fixes_and_changed_failures_are_grouped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = RunResult(
        "impl",
        [
            _case("a.same", Outcome.failed, "X"),
            _case("b.changed-value", Outcome.failed, "X"),
            _case("c.changed-requirement", Outcome.failed, "X"),
            _case("d.fixed", Outcome.failed, "X"),
            _case("e.regressed", Outcome.passed),
            _case("f.not-applicable-now", Outcome.passed),
            _case("g.gone", Outcome.failed, "X"),
        ],
    )
    after = RunResult(
        "impl",
        [
            _case("a.same", Outcome.failed, "X"),
            _case("b.changed-value", Outcome.failed, "Y"),
            _case("c.changed-requirement", Outcome.failed, "X", requirement="R-2"),
            _case("d.fixed", Outcome.passed),
            _case("e.regressed", Outcome.failed, "Z"),
            _case("f.not-applicable-now", Outcome.not_applicable),
            _case("h.new", Outcome.failed, "X"),
        ],
    )
    paths = [write_json(before, tmp_path / "before.json"), write_json(after, tmp_path / "after.json")]
    comparison = compare([(str(p), read_json(p)) for p in paths])
    groups = {kind: [r.case_id for r in comparison.changed(kind)] for kind in (REGRESSION, CHANGED, FIX, OTHER)}
    assert groups == {
        REGRESSION: ["e.regressed"],
        CHANGED: ["b.changed-value", "c.changed-requirement"],
        FIX: ["d.fixed"],
        OTHER: ["f.not-applicable-now"],
    }
    assert [r.case_id for r in comparison.agreements] == ["a.same"]
    assert comparison.only_in == [1, 1]  # g.gone, h.new: counted, not compared
    assert _compare(["compare", *map(str, paths), "--html", str(tmp_path / "c.html")]) == 1
    text = capsys.readouterr().out
    assert '[2] signature failed: R-1 step 0 rStatus observed "Y"' in text
    assert text.index("Regressions") < text.index("Changed failures") < text.index("Fixes") < text.index("Other")
    page = render_compare_html(comparison)
    assert page.index("Regressions (") < page.index("Changed failures (") < page.index("Fixes (")
    assert '<p id="not-compared">Not compared (not in every run): [1] 1, [2] 1</p>' in page
    # only a changed failure: still exit 1
    only_changed = RunResult("impl", [_case("b.changed-value", Outcome.failed, "Y")])
    one = write_json(RunResult("impl", [_case("b.changed-value", Outcome.failed, "X")]), tmp_path / "one.json")
    assert _compare(["compare", str(one), str(write_json(only_changed, tmp_path / "two.json"))]) == 1
