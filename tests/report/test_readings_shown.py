"""Every report shows an interpretation's readings and what each gives (docs/cases.md, "Readings").

The independent queue manager of examples/independent_qm.py runs the cursor receive cases twice
through the real CLI, writing the terminal summary, JSON, JUnit and HTML: once taking the other
reading of DMPR-3.1.1.11-REMOVED-NEXT (restarts-at-start: non_strict, the reading named and
marked as observed), once skipping a message (an answer no reading gives: failed under the
frame, every reading listed and none marked).  The pytest plugin's failure text comes from the
same explanation rows.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from harness.pytest_plugin import render_failure
from harness.results import CaseResult, Outcome, StepFailure

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "harness.cli"]
CASES = "cases/mqdmpr/dequeue/dequeue_message.yaml"
INTERPRETATION = "DMPR-3.1.1.11-REMOVED-NEXT"


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _flat(text: str) -> str:
    return " ".join(text.split())


def _run(tmp: Path, choice: str) -> dict[str, Any]:
    paths = {kind: tmp / f"{choice}.{kind}" for kind in ("json", "xml", "html")}
    target = f"cmd:{sys.executable} examples/independent_qm.py --cursor-after-removed {choice}"
    done = subprocess.run(
        [*CLI, "run", CASES, "-k", "cursor-after", "--target", target,
         "--json", str(paths["json"]), "--junit", str(paths["xml"]), "--html", str(paths["html"])],
        capture_output=True, text=True, timeout=120, cwd=ROOT, check=False,
    )  # fmt: skip
    page = _Text()
    page.feed(paths["html"].read_text(encoding="utf-8"))
    return {
        "status": done.returncode,
        "terminal": _flat(done.stdout),
        "json": json.loads(paths["json"].read_text(encoding="utf-8")),
        "junit": ET.fromstring(paths["xml"].read_text(encoding="utf-8")),
        "html": _flat(" ".join(page.parts)),
    }


# The module fixture ``runs`` once per run: under pytest-xdist --dist loadgroup the module's tests
# share a worker (else each worker that gets one of them makes it again).
pytestmark = pytest.mark.xdist_group("readings-shown")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("readings")
    return {choice: _run(tmp, choice) for choice in ("restarts-at-start", "skips-one")}


def _failure(run: dict[str, Any], case_id: str) -> dict[str, Any]:
    (result,) = [r for r in run["json"]["results"] if r["case_id"] == case_id]
    (failure,) = [f for f in result["failures"] if f["field"] == "rMessage"]
    return failure


def _junit_text(run: dict[str, Any], case_id: str) -> str:
    for case in run["junit"].iter("testcase"):
        if case_id in (case.get("name") or ""):
            return _flat(" ".join(el.text or "" for el in case.iter()))
    raise AssertionError(f"{case_id} not in the JUnit report")


def test_another_reading_is_named_and_marked_in_every_report(runs: dict[str, dict[str, Any]]) -> None:
    run = runs["restarts-at-start"]
    assert run["status"] == 0
    failure = _failure(run, "dmpr.dequeue.cursor-after-peek")
    assert (failure["requirement"], failure["interpretation"], failure["reading"]) == (
        INTERPRETATION, INTERPRETATION, "restarts-at-start")  # fmt: skip
    assert [(r["name"], r["expected"], r["matched"]) for r in failure["readings"]] == [
        ("keeps-place", "m3", False), ("restarts-at-start", "m1", True)]  # fmt: skip
    marked = "restarts-at-start: m1 <- observed"
    assert marked in run["terminal"]
    assert marked in _junit_text(run, "dmpr.dequeue.cursor-after-peek")
    assert marked in run["html"]


def test_an_answer_no_reading_gives_lists_every_reading_in_every_report(runs: dict[str, dict[str, Any]]) -> None:
    run = runs["skips-one"]
    assert run["status"] == 1
    failure = _failure(run, "dmpr.dequeue.cursor-after-removed")
    assert failure["level"] == "MUST" and failure["requirement"] != INTERPRETATION
    assert failure["interpretation"] == INTERPRETATION and failure["reading"] == ""
    assert not any(r["matched"] for r in failure["readings"])
    for text in (run["terminal"], _junit_text(run, "dmpr.dequeue.cursor-after-removed"), run["html"]):
        assert "keeps-place (the reading the corpus checks): m2" in text
        assert "restarts-at-start: m2" in text
        assert "the observed value is none of them" in text


def test_the_pytest_failure_text_shows_the_readings() -> None:
    failure = StepFailure(
        3, "dequeue_message", "rMessage", "m3", "m1", "MS-MQDMPR 3.1.1.11",
        requirement=INTERPRETATION, level="interpretation", interpretation=INTERPRETATION,
        reading="restarts-at-start",
        readings=[
            {"name": "keeps-place", "expected": "m3", "reading": "", "matched": False},
            {"name": "restarts-at-start", "expected": "m1", "reading": "", "matched": True},
        ],
    )  # fmt: skip
    result = CaseResult(
        case_id="dmpr.dequeue.cursor-after-peek", title="t", sections=["MS-MQDMPR 3.1.1.11"],
        level="MUST", outcome=Outcome.non_strict, failures=[failure],
    )  # fmt: skip
    text = render_failure(result, "non_strict")
    assert "readings:" in text and "restarts-at-start: m1 <- observed" in text
