"""``msmq-harness demo`` shows the fuzzer finding a fault of the simulated peer within a minute."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cli import main


def test_the_demo_finds_a_crash_within_a_minute(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    found = re.search(r"fuzz: a crash of the crash-soap-length peer found in ([\d.]+) s", out)
    assert found, out
    assert float(found.group(1)) < 60
    assert (tmp_path / "fuzz" / "fuzz-crash-1-seed7.yaml").is_file()
    assert (tmp_path / "fuzz" / "report.html").is_file()
