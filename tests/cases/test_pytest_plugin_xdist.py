"""The pytest plugin under pytest-xdist (issue 23, item 4): what a worker sends the controller is
cheaper, and what users see is the same -- the JUnit (classname, the requirement and level
properties of issue 25, failure messages) and ``--msmq-json`` reports of ``-n 2`` are those of
``-n 0``, whether a worker sends its cases' events in batches (harness.pytest_batches) or, with
batches off (``--maxfail``), its reports marshalled one by one; a worker filling the case cache
for the others reads back none of the files it holds.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from harness.cases.cache import CaseCache
from harness.cases.loader import load_file
from tests.cases.casekit import plugin_args, write_cases

# Counts, in the controller, the reports that reached it marshalled one by one
# (harness.pytest_plugin), the reports made, and the batches each worker sent.
_COUNTING_CONFTEST = """
import pytest

SEEN = []
BATCHES = []


@pytest.hookimpl(wrapper=True)
def pytest_report_from_serializable(config, data):
    SEEN.append("msmq_packed" in data)
    return (yield)


def pytest_testnodedown(node, error):
    BATCHES.append(node.workeroutput.get("msmq_batches", 0))


def pytest_sessionfinish(session):
    if not hasattr(session.config, "workerinput"):
        with open("packed.txt", "w") as out:
            out.write(f"{sum(SEEN)} {len(SEEN)} {sum(BATCHES)}")
"""


def _run(root: Path, workers: int, known: Path, tag: str, *more: str) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable, "-m", "pytest", *plugin_args(), "cases", "-n", str(workers), "-p", "no:cacheprovider", "-q",
        f"--msmq-known-failures={known}", f"--junitxml={tag}.xml", f"--msmq-json={tag}.json", *more,
    ]  # fmt: skip
    return subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=600, check=False)


def _junit(path: Path) -> dict[str, Any]:
    """testcase name -> its classname, properties and results (tag, message, text); no times."""
    cases = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        properties = [(p.get("name"), p.get("value")) for p in case.iter("property")]
        results = [(r.tag, r.get("message"), r.text) for r in case if r.tag not in ("properties",)]
        cases[case.get("name")] = (case.get("classname"), properties, results)
    return cases


def _results(path: Path) -> dict[str, Any]:
    """A --msmq-json report's results by case id (without their durations) and its tallies."""
    data = json.loads(path.read_text(encoding="utf-8"))
    results = {r["case_id"]: {k: v for k, v in r.items() if k != "duration"} for r in data["results"]}
    return {"results": results, **{key: data[key] for key in ("counts", "by_requirement", "by_section", "ok")}}


def _counted(root: Path) -> tuple[int, int, int]:
    """Reports that came marshalled one by one, reports made, batches sent (the conftest's)."""
    packed, calls, batches = map(int, (root / "packed.txt").read_text().split())
    return packed, calls, batches


def test_n2_reports_are_those_of_n0_whether_in_batches_or_marshalled(tmp_path: Path) -> None:
    known = write_cases(tmp_path)
    (tmp_path / "conftest.py").write_text(_COUNTING_CONFTEST, encoding="utf-8")
    (tmp_path / "cases" / "test_ordinary.py").write_text("def test_ordinary():\n    pass\n", encoding="utf-8")
    alone = _run(tmp_path, 0, known, "n0")
    shared = _run(tmp_path, 2, known, "n2")
    assert alone.returncode == shared.returncode == 1, alone.stdout[-2000:] + shared.stdout[-2000:]
    assert "bringing up nodes" in shared.stdout
    from_n0, from_n2 = _junit(tmp_path / "n0.xml"), _junit(tmp_path / "n2.xml")
    assert len(from_n0) == 9 and from_n2 == from_n0  # 8 cases and test_ordinary
    classname, properties, _ = from_n0["x.fail"]
    assert classname == "MS-MQDMPR.seek"
    assert ("requirement", "P-SEEK-HEAD") in properties and ("level", "MUST") in properties
    assert _results(tmp_path / "n2.json") == _results(tmp_path / "n0.json")
    assert len(_results(tmp_path / "n0.json")["results"]) == 8
    # the cases' events came in batches: setup, call and teardown reports of 8 cases but x.error's
    # call (its error is raised at setup), none of them marshalled alone, and the three reports of
    # the ordinary test as pytest-xdist sends them
    packed, calls, batches = _counted(tmp_path)
    assert (packed, calls) == (0, 23 + 3) and batches >= 1
    # --maxfail holds no report back (batches off): each case's report travels marshalled alone
    stopping = _run(tmp_path, 2, known, "n2-maxfail", "--maxfail=100")
    assert stopping.returncode == 1, stopping.stdout[-2000:]
    assert _junit(tmp_path / "n2-maxfail.xml") == from_n0
    assert _results(tmp_path / "n2-maxfail.json") == _results(tmp_path / "n0.json")
    packed, calls, batches = _counted(tmp_path)
    assert (packed, calls, batches) == (23, 2 * 23 + 3, 0)  # each unmarshalled form is made a report by pytest


def test_a_worker_filling_the_cache_reads_back_nothing_it_holds(tmp_path: Path) -> None:
    write_cases(tmp_path)
    path = tmp_path / "cases" / "extra" / "seek.yaml"
    cache = CaseCache(tmp_path / "cache")
    cache.folder.mkdir()
    filling = cache.filling()
    stored = load_file(path, cache=filling)  # not held: loaded and stored
    assert [c.full_id for c in stored] == [c.full_id for c in load_file(path)]
    assert (filling.hits, filling.misses) == (0, 1)
    (entry,) = cache.folder.glob("*.pickle")
    entry.write_bytes(pickle.dumps("not read back"))  # a torn entry: read back, it would be loaded again
    assert load_file(path, cache=filling) == []  # held: neither read back nor loaded again
    assert (filling.hits, filling.misses) == (1, 1)
    assert [c.full_id for c in load_file(path, cache=cache)] == [c.full_id for c in stored]  # load: loads it again
