"""``msmq-harness demo`` shows the fuzzer finding a fault of the simulated peer within a minute.

Its ``--out`` is a folder of its own (harness.outdir), as ``make run`` gives it beside the run's
reports (``reports/demo``): made in a clean clone, replaced by the next demo, never a file the demo
did not write overwritten or deleted -- refused, exit 2, naming it (``--force`` replaces)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cli import main


def _demo(out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["demo", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    found = re.search(r"fuzz: a crash of the crash-soap-length peer found in ([\d.]+) s", printed)
    assert found, printed
    assert float(found.group(1)) < 60
    assert (out / "fuzz" / "fuzz-crash-1-seed7.yaml").is_file()
    assert (out / "fuzz" / "report.html").is_file() and (out / "examples.txt").is_file()
    case = re.search(r"minimal case (\S+),", printed)
    assert case and Path(case.group(1)) == out / "fuzz" / "fuzz-crash-1-seed7.yaml", printed  # where it is
    return printed


def test_the_demo_finds_a_crash_within_a_minute_twice_into_its_own_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = tmp_path / "reports"  # absent, as in a clean clone
    out = reports / "demo"
    _demo(out, capsys)
    (reports / "junit.xml").write_text("the run's report")  # make run: beside the demo's folder
    (reports / "notes.txt").write_text("a user's")
    _demo(out, capsys)  # the previous demo's output is replaced
    assert (reports / "junit.xml").read_text() == "the run's report"
    assert (reports / "notes.txt").read_text() == "a user's"
    assert sorted(p.name for p in reports.iterdir()) == ["demo", "junit.xml", "notes.txt"]
    (out / "fuzz" / "mine.yaml").write_text("a user's case")
    assert main(["demo", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "mine.yaml" in err and "--force" in err, err
    assert (out / "fuzz" / "mine.yaml").read_text() == "a user's case"
    assert main(["demo", "--out", str(reports)]) == 2  # the run's reports are no demo's output
    assert "junit.xml" in capsys.readouterr().err and (reports / "junit.xml").is_file()
