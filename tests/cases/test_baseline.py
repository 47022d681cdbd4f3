"""Baselines (harness.cases.baseline): the corpus against the reference and mutants of it, through
``msmq-harness run --baseline`` and ``msmq-harness baseline``, as a CI job would use them.

The first mutant breaks one [MS-MQDMPR] rule (TimeoutReturnsOK); its run makes the baseline.
The second breaks that rule and another (:class:`Both`, TimeoutReturnsOK and
SeekIgnoresAllowPeekWhenLocked): against the first's baseline it fails on exactly the cases the
second rule breaks.  A third (PeekReturnsAnyLocked) fails some of the same cases otherwise: a
changed failure.  The reference fixes every listed failure: improvements.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from examples.mutants.queue import TimeoutReturnsOK
from examples.mutants.seek import SeekIgnoresAllowPeekWhenLocked
from harness.cases.baseline import BaselineError, load_baseline, signature
from harness.cli import main
from harness.report.json_report import read_json

ROOT = Path(__file__).resolve().parents[2]
CORPUS = str(ROOT / "cases" / "mqdmpr")
FIRST = "plugin:examples.mutants.queue:TimeoutReturnsOK"
SECOND_RULE = "plugin:examples.mutants.seek:SeekIgnoresAllowPeekWhenLocked"
BOTH = "plugin:tests.cases.test_baseline:Both"
OTHERWISE = "plugin:examples.mutants.seek:PeekReturnsAnyLocked"


class Both(TimeoutReturnsOK, SeekIgnoresAllowPeekWhenLocked):
    """Two rules broken: the first mutant's and SeekIgnoresAllowPeekWhenLocked's."""


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["run", CORPUS, *argv])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _failing(path: Path) -> dict[str, object]:
    return {r.case_id: signature(r) for r in read_json(path).results if str(r.outcome) in ("failed", "error")}


# The module fixture ``first`` once per run: under pytest-xdist --dist loadgroup the module's tests
# share a worker (else each worker that gets one of them makes it again).
pytestmark = pytest.mark.xdist_group("baseline")


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The first mutant's report and the baseline written from it (``msmq-harness baseline``)."""
    tmp = tmp_path_factory.mktemp("baseline")
    report = tmp / "first.json"
    assert main(["run", CORPUS, "--target", FIRST, "--json", str(report)]) == 1
    return report, tmp


def test_a_baseline_from_a_report_lists_each_failure_with_a_reason(
    first: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    report, tmp = first
    capsys.readouterr()
    assert main(["baseline", str(report)]) == 0
    text = capsys.readouterr().out
    data = yaml.safe_load(text)
    failing = _failing(report)
    assert failing and [e["case"] for e in data["entries"]] == list(failing)
    for entry in data["entries"]:
        assert set(entry) == {"case", "outcome", "failures", "reason", "ticket"} and entry["reason"] == ""
        keys = [set(f) for f in entry["failures"]]
        assert keys and all(k == {"requirement", "expectation", "observed"} for k in keys)
    baseline = load_baseline(_write(tmp / "known.yaml", text))
    assert {case: (e.outcome, e.differences) for case, e in baseline.entries.items()} == failing


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _baseline(first: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> Path:
    report, tmp = first
    capsys.readouterr()
    main(["baseline", str(report)])
    return _write(tmp / "known.yaml", capsys.readouterr().out)


def test_the_mutant_passes_against_its_own_baseline(
    first: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    known = _baseline(first, capsys)
    out = tmp_path / "again.json"
    code, text = _run(capsys, "--target", FIRST, "--baseline", str(known), "--json", str(out))
    assert code == 0, text
    data = json.loads(out.read_text(encoding="utf-8"))
    failing = _failing(first[0])
    assert data["baseline"]["regressions"] == [] and data["baseline"]["stale"] == []
    assert data["baseline"]["known"] == len(failing)
    assert {r["case_id"] for r in data["results"] if r["outcome"] == "xfail"} == set(failing)
    assert f"0 regressions, {len(failing)} known failures, 0 improvements, 0 stale entries" in text
    # the report as a baseline directly: the same judgement
    code, _ = _run(capsys, "--target", FIRST, "--baseline", str(first[0]))
    assert code == 0


def test_a_second_mutant_fails_only_on_its_new_regressions(
    first: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    known = _baseline(first, capsys)
    alone = tmp_path / "second-rule.json"
    assert main(["run", CORPUS, "--target", SECOND_RULE, "--json", str(alone)]) == 1
    new = set(_failing(alone))
    assert new and not new & set(_failing(first[0]))  # the second rule fails other cases
    out = tmp_path / "both.json"
    code, text = _run(capsys, "--target", BOTH, "--baseline", str(known), "--json", str(out))
    assert code == 1
    data = json.loads(out.read_text(encoding="utf-8"))
    regressions = {r["case_id"] for r in data["baseline"]["regressions"]}
    assert regressions == new  # exactly the new rule's cases
    assert {r["case_id"] for r in data["results"] if r["outcome"] == "failed"} == new
    assert {r["case_id"] for r in data["results"] if r["outcome"] == "xfail"} == set(_failing(first[0]))
    assert "Regressions (fail the run):" in text and all(f"  {case}: new failed: " in text for case in new)


def test_a_changed_failure_is_a_regression(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    report = tmp_path / "second-rule.json"
    assert main(["run", CORPUS, "--target", SECOND_RULE, "--json", str(report)]) == 1
    capsys.readouterr()
    main(["baseline", str(report)])
    known = _write(tmp_path / "known.yaml", capsys.readouterr().out)
    out = tmp_path / "otherwise.json"
    code, text = _run(capsys, "--target", OTHERWISE, "--baseline", str(known), "--json", str(out))
    assert code == 1
    data = json.loads(out.read_text(encoding="utf-8"))
    listed = set(_failing(report))
    changed = {r["case_id"] for r in data["baseline"]["regressions"] if r["why"].startswith("changed ")}
    failing_now = {r["case_id"] for r in data["results"] if r["outcome"] == "failed"}
    assert changed and changed == listed & failing_now  # every listed case failing otherwise: not xfail
    assert not any(r["outcome"] == "xfail" for r in data["results"])
    assert "(was failed: " in text
    # --known-failures reads the same file: a changed failure stays a failure there too
    code, _ = _run(capsys, "--target", OTHERWISE, "--known-failures", str(known))
    assert code == 1


def test_a_fix_is_an_improvement_and_a_stale_entry_is_flagged(
    first: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    known = _baseline(first, capsys)
    with known.open("a", encoding="utf-8") as f:
        f.write('  - case: "zz.retired.case"\n    outcome: failed\n    reason: "a case since removed"\n')
    out, junit = tmp_path / "fixed.json", tmp_path / "fixed.xml"
    code, text = _run(
        capsys, "--target", "reference", "--baseline", str(known), "--json", str(out), "--junit", str(junit)
    )
    assert code == 0, text  # fixes and a stale entry fail nothing
    data = json.loads(out.read_text(encoding="utf-8"))
    failing = _failing(first[0])
    assert {r["case_id"] for r in data["baseline"]["improvements"]} == set(failing)
    assert all(r["now"] == "passed" for r in data["baseline"]["improvements"])
    assert data["baseline"]["stale"] == [{"entry": "zz.retired.case", "closest": None}]
    assert "Improvements (no longer fail):" in text
    assert "Stale baseline entries (match no case of this run):\n  zz.retired.case" in text
    assert "warning: --baseline entry 'zz.retired.case' is stale" in text
    xml = junit.read_text(encoding="utf-8")
    assert f'<property name="baseline" value="{known}"' in xml
    assert '<property name="baseline.stale" value="zz.retired.case"' in xml
    assert f'<property name="baseline.improvements" value="{len(failing)}"' in xml


def test_known_failures_carry_a_reason_and_ticket(
    first: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    known = _baseline(first, capsys)
    text = known.read_text(encoding="utf-8").replace('reason: ""', 'reason: "timer expiry not wired"', 1)
    text = text.replace('ticket: ""', 'ticket: "MQ-42"', 1)
    _write(known, text)
    junit = tmp_path / "known.xml"
    code, _ = _run(capsys, "--target", FIRST, "--known-failures", str(known), "--junit", str(junit))
    assert code == 0
    xml = junit.read_text(encoding="utf-8")
    assert 'message="known failure: timer expiry not wired (MQ-42): MS-MQDMPR' in xml
    code, text = _run(capsys, "--target", "reference", "--known-failures", str(known))
    assert code == 1 and "XPASS" in text  # a known failure that passes fails a --known-failures run


def test_bad_baselines_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _write(tmp_path / "bad.yaml", "entries:\n  - case: x\n    colour: red\n")
    with pytest.raises(BaselineError, match=r"bad.yaml: entries\[0\] \(line 2\): unknown key 'colour'"):
        load_baseline(bad)
    code, text = _run(capsys, "--baseline", str(bad))
    assert code == 2 and "unknown key 'colour'" in text
    code, text = _run(capsys, "--baseline", str(bad), "--known-failures", str(bad))
    assert code == 2 and "exclude each other" in text
    assert main(["baseline", str(tmp_path / "absent.json")]) == 2
