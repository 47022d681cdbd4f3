"""The report formats' registry (harness.report.formats): one table a format's name to its writer,
from which ``msmq-harness run --NAME`` and the pytest plugin's ``--msmq-NAME`` are derived; a
format is its module: dropped beside the others, it is an option of both with nothing else
changed."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import harness.report
from harness.cli import build_parser, main
from harness.report.formats import formats
from tests.peek_case import peek_case

CASE = peek_case("fmt.peek")

CSV = '''\
"""A CSV report: one line a case, its id and its outcome."""

from pathlib import Path

from harness.report.formats import ReportFormat


def render_csv(run):
    return "".join(f"{r.case_id},{r.outcome.value}\\n" for r in run.results)


def write_csv(run, path):
    Path(path).write_text(render_csv(run), encoding="utf-8")
    return Path(path)


REPORT_FORMAT = ReportFormat("csv", render_csv, write_csv, help="write a CSV line a case", plugin_help="CSV lines")
'''


def test_the_table_holds_the_formats_in_their_order() -> None:
    table = formats()
    assert list(table) == ["junit", "json", "html"]
    assert all(name == f.name for name, f in table.items())
    assert [f.name for f in table.values() if f.plugin_help] == ["json", "html"]  # JUnit: pytest's --junitxml


def test_run_offers_an_option_per_format() -> None:
    for name in formats():
        assert getattr(build_parser().parse_args(["run", f"--{name}", "r.out"]), name) == "r.out"


@pytest.fixture
def csv_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A format module dropped beside the others (on harness.report's path), and nothing else."""
    folder = tmp_path / "more_formats"
    folder.mkdir()
    (folder / "csv_report.py").write_text(CSV, encoding="utf-8")
    monkeypatch.setattr(harness.report, "__path__", [*harness.report.__path__, str(folder)])
    formats.cache_clear()
    yield
    sys.modules.pop("harness.report.csv_report", None)
    monkeypatch.undo()
    formats.cache_clear()


@pytest.mark.usefixtures("csv_format")
def test_a_new_format_is_its_module(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert list(formats()) == ["junit", "json", "html", "csv"]
    cases = tmp_path / "fmt.yaml"
    cases.write_text(CASE, encoding="utf-8")
    out = tmp_path / "out" / "run.csv"
    assert main(["run", str(cases), "--csv", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == "fmt.peek,passed\n"
    assert f"reports: {out}" in capsys.readouterr().out
    assert main(["run", str(cases), "--csv", "-"]) == 0  # - : standard output
    assert capsys.readouterr().out == "fmt.peek,passed\n"


def test_the_plugin_offers_a_new_format_too(tmp_path: Path) -> None:
    folder = tmp_path / "more_formats"
    folder.mkdir()
    (folder / "csv_report.py").write_text(CSV, encoding="utf-8")
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "fmt.yaml").write_text(CASE, encoding="utf-8")
    out = tmp_path / "run.csv"
    script = (
        "import sys, harness.report, pytest; harness.report.__path__.append(sys.argv[1]); "
        "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-n', '0', '--msmq-csv=' + sys.argv[2], 'cases']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(folder), str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert out.read_text(encoding="utf-8") == "fmt.peek,passed\n"


def test_run_writes_no_report_over_another_or_over_an_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = tmp_path / "fmt.yaml"
    cases.write_text(CASE, encoding="utf-8")
    out = tmp_path / "r.out"
    assert main(["run", str(cases), "--json", str(out), "--junit", str(out)]) == 2
    assert main(["run", str(cases), "--json", str(cases)]) == 2
    assert "another report or an input of the run" in capsys.readouterr().err
    assert not out.exists() and cases.read_text(encoding="utf-8") == CASE
