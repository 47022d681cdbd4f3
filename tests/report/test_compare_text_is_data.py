"""``compare`` shows what the reports hold -- a target's name, its error text, case ids -- with
every control character escaped, as the run's own terminal report and the HTML report do
(harness.results.printable): a report's text is data, never acted on by the terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main as cli_main
from harness.report.json_report import write_json
from harness.results import CaseResult, Outcome, RunResult

SAID = "boom\x1b[2J\x00\x08\x07\x7f\x9b31m end"  # clear screen, NUL, backspace, bell, DEL, CSI
SHOWN = "boom\\x1b[2J\\x00\\x08\\x07\\x7f\\x9b31m end"


def _result(outcome: Outcome, detail: str = "") -> CaseResult:
    return CaseResult(
        case_id="dmpr.x", title="a case", sections=["MS-MQDMPR 3.2.7.2"], level="MUST", outcome=outcome, detail=detail
    )


def test_compare_escapes_what_a_target_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_json(RunResult("reference", [_result(Outcome.passed)]), tmp_path / "a.json")
    b = write_json(RunResult(f"cmd:{SAID}", [_result(Outcome.error, f"adapter: {SAID}")]), tmp_path / "b.json")
    assert cli_main(["compare", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert f"adapter: {SHOWN}" in out and f"cmd:{SHOWN}" in out
    assert not any(c in out for c in "\x1b\x00\x08\x07\x7f\x9b")
