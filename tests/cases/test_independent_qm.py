"""Issue 19 acceptance: an independent queue manager behind ``cmd:`` is graded by readings.

examples/independent_qm.py is written from docs/adapters.md alone (it imports nothing from the
harness). Its ``--cursor-after-removed`` switch picks where a cursor whose message was removed
goes on; the real CLI runs the two cursor receive cases against each choice:

* keeps-place (the reference's reading): both pass;
* restarts-at-start (the other reading of DMPR-3.1.1.11-REMOVED-NEXT): cursor-after-peek is
  non_strict under the interpretation with the reading's name, cursor-after-removed passes (both
  readings give m2 there), exit 0;
* skips-one (no reading gives it): cursor-after-removed fails under the interpretation's frame,
  exit 1.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CASES = "cases/mqdmpr/dequeue/dequeue_message.yaml"
INTERPRETATION = "DMPR-3.1.1.11-REMOVED-NEXT"
READINGS = ("keeps-place", "restarts-at-start", "skips-one")


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("msmq-harness")
    if not script.exists():
        script = REPO / ".venv" / "bin" / "msmq-harness"
    return [str(script)]


def _frame() -> str:
    entries = yaml.safe_load((REPO / "cases" / "requirements.yaml").read_text())
    (entry,) = [e for e in entries if e.get("id") == INTERPRETATION]
    return str(entry["frame"])


# The module fixture ``runs`` once per run: under pytest-xdist --dist loadgroup the module's tests
# share a worker (else each worker that gets one of them makes it again).
pytestmark = pytest.mark.xdist_group("independent-qm")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str, dict[str, Any]]]:
    """One CLI run per choice, the three at once: (exit status, terminal output, JSON report)."""
    out = tmp_path_factory.mktemp("independent_qm")
    procs = {}
    for reading in READINGS:
        target = f"cmd:{sys.executable} examples/independent_qm.py --cursor-after-removed {reading}"
        report = out / f"{reading}.json"
        procs[reading] = (
            subprocess.Popen(
                [*_cli(), "run", CASES, "-k", "cursor-after", "--target", target, "--json", str(report)],
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            ),
            report,
        )
    results = {}
    for reading, (proc, report) in procs.items():
        terminal, _ = proc.communicate(timeout=120)
        assert report.exists(), f"{reading}: no JSON report; output:\n{terminal}"
        results[reading] = (proc.returncode, terminal, json.loads(report.read_text()))
    return results


def _by_case(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["case_id"]: r for r in report["results"]}


def test_keeps_place_passes(runs: dict[str, tuple[int, str, dict[str, Any]]]) -> None:
    code, terminal, report = runs["keeps-place"]
    cases = _by_case(report)
    assert code == 0, terminal
    assert set(cases) == {"dmpr.dequeue.cursor-after-removed", "dmpr.dequeue.cursor-after-peek"}
    assert {c: r["outcome"] for c, r in cases.items()} == dict.fromkeys(cases, "passed"), terminal


def test_restarts_at_start_is_the_named_reading(runs: dict[str, tuple[int, str, dict[str, Any]]]) -> None:
    code, terminal, report = runs["restarts-at-start"]
    cases = _by_case(report)
    assert code == 0, terminal
    assert cases["dmpr.dequeue.cursor-after-removed"]["outcome"] == "passed", terminal
    peek = cases["dmpr.dequeue.cursor-after-peek"]
    assert peek["outcome"] == "non_strict", terminal
    named = [
        f
        for f in peek["failures"]
        if f.get("reading") == "restarts-at-start" and f.get("interpretation") == INTERPRETATION
    ]
    assert named, peek["failures"]
    assert named[0]["requirement"] == INTERPRETATION
    assert "restarts-at-start" in terminal


def test_skips_one_fails_the_frame(runs: dict[str, tuple[int, str, dict[str, Any]]]) -> None:
    code, terminal, report = runs["skips-one"]
    removed = _by_case(report)["dmpr.dequeue.cursor-after-removed"]
    assert code == 1, terminal
    assert removed["outcome"] == "failed", terminal
    frame = _frame()
    graded = [f for f in removed["failures"] if f.get("interpretation") == INTERPRETATION]
    assert graded, removed["failures"]
    assert graded[0]["requirement"] == frame
    assert graded[0]["reading"] == ""
    assert graded[0]["observed"] == "m3"
