"""``--record``: a wire case hands its recording to the transcript writer the run's edge handed
in (harness.cases.transcripts), and imports nothing of the reports itself; with no writer, none
is written and the verdict stands."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cases import transcripts
from harness.cases.execute import run_case
from harness.cases.loader import load_text
from harness.cases.targets import make_target
from harness.results import Outcome

CASE = """\
id: w.record
title: t
spec: [{section: MS-MQQB 3.1.5.4.2, requirement: MQQB-3.1.5.4.2-ESTABLISHED}]
given:
  peer: {under_test: acceptor}
when:
  - action: send
    args: {packet: EstablishConnection}
  - action: receive
    args: {packet: EstablishConnection, within: SessionInitialization}
"""


@pytest.fixture
def writer_saved() -> Iterator[None]:
    saved = transcripts.transcript_writer()
    yield
    transcripts._WRITER[:] = [saved] if saved is not None else []


def test_the_case_writes_through_the_writer_handed_in(tmp_path: Path, writer_saved: None) -> None:
    seen: list[Any] = []

    def writer(directory: Path, result: Any, side: str, connections: list[Any], failing: bytes | None) -> Path:
        seen.append((directory, result.case_id, side, len(connections)))
        return directory / "page.html"

    transcripts.set_transcript_writer(writer)
    (case,) = load_text(CASE, "record.yaml")
    result = run_case(case, make_target("reference"), record_dir=tmp_path)
    assert result.outcome is Outcome.passed, result.detail
    assert seen == [(tmp_path, "w.record", "acceptor", 1)]
    assert result.transcript == str(tmp_path / "page.html")


def test_without_a_writer_nothing_is_written_and_the_verdict_stands(tmp_path: Path, writer_saved: None) -> None:
    transcripts._WRITER.clear()
    (case,) = load_text(CASE, "record.yaml")
    result = run_case(case, make_target("reference"), record_dir=tmp_path)
    assert result.outcome is Outcome.passed and not result.transcript
    assert list(tmp_path.iterdir()) == []


def test_running_a_wire_case_imports_no_report() -> None:
    code = (
        "import sys; from harness.cases.targets import wire; from harness.cases import runner; "
        "print(sorted(m for m in sys.modules if m.startswith('harness.report')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
