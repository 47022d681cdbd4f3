"""``run`` in CI: --maxfail and --budget stop cleanly, the heartbeat, the run identified in every
report, NO_COLOR and FORCE_COLOR as their conventions say (no-color.org, force-color.org)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.report import terminal
from harness.report.html import escape
from harness.report.identity import identity_rows
from harness.report.json_report import read_json
from harness.results import CaseResult, Outcome, RunResult

ROOT = Path(__file__).resolve().parents[2]
CORPUS = str(ROOT / "cases" / "mqdmpr")
MUTANT = "plugin:examples.mutants.seek:PeekReturnsAnyLocked"  # fails 17 model cases


def test_maxfail_stops_writes_the_reports_and_names_what_did_not_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    code = main(["run", CORPUS, "--target", MUTANT, "--maxfail", "2", "--json", str(report), "--junit", str(junit)])
    err = capsys.readouterr().err
    assert code == 1
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["counts"]["failed"] == 2 and data["stopped"] == "--maxfail 2: 2 cases failed"
    ran = [r["case_id"] for r in data["results"]]
    assert data["results"][-1]["outcome"] == "failed"  # it stopped at the second failure
    assert len(ran) + len(data["not_run"]) == 130 and not set(ran) & set(data["not_run"])
    assert f"stopped early (--maxfail 2: 2 cases failed): {len(data['not_run'])} of 130 cases did not run: " in err
    assert '<property name="stopped" value="--maxfail 2: 2 cases failed"' in junit.read_text(encoding="utf-8")
    assert read_json(report).not_run == data["not_run"]


def test_budget_stops_between_cases(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "r.json"
    code = main(["run", CORPUS, "-n", "2", "--budget", "0.000001", "--json", str(report)])
    assert code == 1
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["stopped"].startswith("--budget 1e-06 s ran out after ")
    assert len(data["results"]) == 1 and len(data["not_run"]) == 129  # the reference passes: no failure
    assert "warning: stopped early: --budget" in capsys.readouterr().out


def test_the_budget_is_a_number_of_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("0", "-1", "nan"):
        with pytest.raises(SystemExit) as stop:
            main(["run", CORPUS, "--budget", bad])
        assert stop.value.code == 2
    with pytest.raises(SystemExit):
        main(["run", CORPUS, "--maxfail", "0"])
    capsys.readouterr()


def test_the_heartbeat_counts_done_total_and_failed() -> None:
    out = io.StringIO()  # not a terminal
    with terminal.Progress(3, file=out, heartbeat=0.05) as progress:
        progress.advance(CaseResult("a", "", [], "MUST", Outcome.failed))
        time.sleep(0.3)
    lines = out.getvalue().splitlines()
    assert lines and all(re.fullmatch(r"msmq-harness: 1/3 cases done, 1 failed, \d+ s", line) for line in lines)
    quiet = io.StringIO()
    with terminal.Progress(3, file=quiet, heartbeat=0):
        time.sleep(0.1)
    assert quiet.getvalue() == ""


def test_piped_runs_print_the_heartbeat(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "harness.cli", "run", "cases/mqqb/outgoing.yaml", "--heartbeat", "0.5"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"^msmq-harness: \d+/\d+ cases done, 0 failed, \d+ s$", done.stderr, re.M)


def test_every_report_identifies_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report, page = tmp_path / "r.json", tmp_path / "r.html"
    argv = ["run", CORPUS, "-k", "seek", "--spec", "MS-MQDMPR 3.1.7.3", "--json", str(report), "--html", str(page)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    run = json.loads(report.read_text(encoding="utf-8"))["run"]
    assert run["argv"] == ["msmq-harness", *argv]
    assert run["selection"] == {"paths": [CORPUS], "k": "seek", "spec": ["MS-MQDMPR 3.1.7.3"]}
    assert run["target_name"] and run["os"] and run["harness_version"] and run["started"]
    assert run["target_version"] == run["harness_version"]  # the reference's hello names its version
    rows = identity_rows(read_json(report))
    assert [label for label, _ in rows][:3] == ["target", "selection", "command"]
    html = page.read_text(encoding="utf-8")
    assert text.startswith(f"msmq-harness: target {rows[0][1]}\n")
    for label, said in rows[1:]:
        assert f"  {label}: {said}\n" in text  # the terminal
        assert f"<dt>{label}</dt>" in html and escape(said) in html  # the HTML page


def _styled_run() -> RunResult:
    return RunResult("reference", [CaseResult("a", "A", ["MS-MQDMPR 3.1.7.3.2"], "MUST", Outcome.failed)])


@pytest.mark.parametrize(
    ("env", "escapes"),
    [
        ({}, False),
        ({"FORCE_COLOR": "1"}, True),
        ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, False),
        ({"FORCE_COLOR": ""}, False),
    ],
)
def test_force_color_styles_a_pipe_and_no_color_wins(
    env: dict[str, str], escapes: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("FORCE_COLOR", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out = io.StringIO()
    terminal.print_summary(_styled_run(), file=out)
    assert ("\x1b[" in out.getvalue()) is escapes


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_color_on_a_terminal_writes_no_style_at_all(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    out = _Tty()
    terminal.print_summary(_styled_run(), file=out)
    assert "FAILED" in out.getvalue() and "\x1b[" not in out.getvalue()  # neither color nor bold nor italic
    monkeypatch.delenv("NO_COLOR")
    styled = _Tty()
    terminal.print_summary(_styled_run(), file=styled)
    assert "\x1b[1m" in styled.getvalue() or "\x1b[1;" in styled.getvalue()
    assert os.environ.get("NO_COLOR") is None
