"""The pytest plugin checks its inputs as ``msmq-harness run`` does: ``--msmq-step-timeout`` is a
finite number of seconds (harness.argtypes.seconds; ``nan``, ``inf``, 0 and negative are usage
errors), and a case file that is a FIFO, a device or a link to nothing -- which pytest's own
collection passes over -- is a usage error naming it (harness.files), never skipped in silence.
Each check runs pytest as a process over a folder of cases, pytest's usage-error status 4."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CASE = REPO / "cases" / "mqdmpr" / "purge" / "purge_queue.yaml"


def pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYTEST_XDIST_WORKER", None)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *args]
    return subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir()
    shutil.copy(CASE, folder / CASE.name)
    return folder


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "abc"])
def test_a_step_timeout_that_is_no_duration_is_a_usage_error(cases: Path, value: str) -> None:
    done = pytest_in(cases.parent, "cases", f"--msmq-step-timeout={value}")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "argument --msmq-step-timeout" in done.stderr


def test_a_fifo_or_a_device_among_the_cases_is_a_usage_error(cases: Path) -> None:
    assert pytest_in(cases.parent, "cases", "--msmq-step-timeout=2").returncode == 0
    os.mkfifo(cases / "waits.yaml")
    done = pytest_in(cases.parent, "cases")
    assert done.returncode == 4, done.stdout + done.stderr
    assert f"{cases / 'waits.yaml'}: a FIFO (named pipe), not a regular file" in done.stdout + done.stderr
    (cases / "waits.yaml").unlink()
    (cases / "zero.yaml").symlink_to("/dev/zero")
    done = pytest_in(cases.parent, "cases")
    assert done.returncode == 4 and "zero.yaml: a character device" in done.stdout + done.stderr
    (cases / "zero.yaml").unlink()
    (cases / "gone.yaml").symlink_to(cases / "nowhere.yaml")
    done = pytest_in(cases.parent, "cases")
    assert done.returncode == 4 and "gone.yaml: a link to nothing" in done.stdout + done.stderr


def test_two_reports_to_one_file_are_a_usage_error(cases: Path) -> None:
    done = pytest_in(cases.parent, "cases", "-n", "0", "--msmq-json=r.out", "--msmq-html=r.out")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "r.out: another report or --msmq-known-failures is that file" in done.stderr
    assert not (cases.parent / "r.out").exists()
