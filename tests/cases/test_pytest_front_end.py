"""The pytest front end on par with ``run``: where case files are collected, ``-k`` as ``run -k``,
the ini keys, the xfail explanation, ``--msmq-record``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cases.loader import load_paths
from harness.cases.runner import select

ROOT = Path(__file__).resolve().parents[2]
MUTANT = "plugin:examples.mutants.seek:SeekIgnoresAllowPeekWhenLocked"


def _pytest(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", *argv]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project of its own: the model corpus under ``conformance/`` (not a ``cases`` folder)."""
    shutil.copytree(ROOT / "cases" / "mqdmpr", tmp_path / "conformance" / "mqdmpr")
    (tmp_path / "test_plain.py").write_text("def test_seek_plain():\n    pass\n", encoding="utf-8")
    return tmp_path


def _collected(done: subprocess.CompletedProcess[str]) -> set[str]:
    return {line.split("::", 1)[1] for line in done.stdout.splitlines() if ".yaml::" in line}


def test_case_files_are_collected_where_the_ini_or_the_command_line_says(project: Path) -> None:
    done = _pytest(project, "--collect-only")
    assert not _collected(done) and "test_plain.py::test_seek_plain" in done.stdout  # no case folder: none
    (project / "pytest.ini").write_text("[pytest]\nmsmq_case_folders =\n    conformance\n", encoding="utf-8")
    done = _pytest(project, "--collect-only")
    assert len(_collected(done)) == len(load_paths([project / "conformance"])), done.stdout[-2000:]
    (project / "pytest.ini").unlink()
    named = sorted(str(p.relative_to(project)) for p in (project / "conformance" / "mqdmpr" / "seek").glob("*.yaml"))
    done = _pytest(project, "--collect-only", *named)
    assert _collected(done) == {c.full_id for c in load_paths([project / "conformance" / "mqdmpr" / "seek"])}


@pytest.mark.parametrize("expr", ["seek and not backward", "peek", "locked or (cursor and not read)", "timer"])
def test_k_selects_the_cases_run_k_selects(project: Path, expr: str) -> None:
    (project / "pytest.ini").write_text("[pytest]\nmsmq_case_folders = conformance\n", encoding="utf-8")
    done = _pytest(project, "--collect-only", "-k", expr)
    wanted = {c.full_id for c in select(load_paths([project / "conformance"]), keyword=expr)}
    assert wanted and _collected(done) == wanted, (expr, sorted(_collected(done) ^ wanted))
    # ordinary tests keep pytest's own -k
    assert ("test_plain.py::test_seek_plain" in done.stdout) == ("seek" in expr and "not seek" not in expr)


def test_the_ini_target_and_the_xfail_explanation(project: Path, tmp_path: Path) -> None:
    (project / "pytest.ini").write_text(
        f"[pytest]\nmsmq_case_folders = conformance\nmsmq_target = {MUTANT}\n", encoding="utf-8"
    )
    known = project / "known.yaml"
    known.write_text(
        'entries:\n  - case: dmpr.seek.fwd.peek-returns-peekable-locked\n    reason: "AllowPeekWhenLocked ignored"\n'
        '    ticket: "MQ-9"\n',
        encoding="utf-8",
    )
    report = project / "out" / "results.json"
    done = _pytest(project, "-k", "seek", f"--msmq-known-failures={known}", f"--msmq-json={report}")
    assert done.returncode == 1  # the backward case still fails
    assert (
        "XFAIL conformance/mqdmpr/seek/seek_forward.yaml::dmpr.seek.fwd.peek-returns-peekable-locked - known failure: "
        "AllowPeekWhenLocked ignored (MQ-9): MS-MQDMPR 3.1.7.3.2 [DMPR-3.1.7.3.2-FWD-PEEKLOCKED, MUST]"
    ) in done.stdout
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["target"] == MUTANT and data["counts"]["xfail"] == 1 and data["counts"]["failed"] == 1
    assert data["run"]["known_failures"] == str(known)


def test_msmq_record_writes_the_transcripts(tmp_path: Path) -> None:
    shutil.copy(ROOT / "cases" / "mqqb" / "outgoing.yaml", tmp_path / "outgoing.yaml")
    record = tmp_path / "record"
    done = _pytest(tmp_path, "outgoing.yaml", "-k", "dispatch", f"--msmq-record={record}")
    assert done.returncode == 0, done.stdout[-2000:]
    pages = sorted(p.name for p in record.glob("*.html"))
    assert pages and len(pages) == len(list(record.glob("*.pcap")))
    assert all("dispatch" in p for p in pages)
