"""Benchmark of the case runner on the [MS-MQDMPR] corpus (cases/mqdmpr): model cases/s.

Three figures on the same corpus, copied ``copies`` times with distinct case ids:
``msmq-harness run`` in one process (harness.cases.runner.run, the reference target), the same
with two worker processes, and ``pytest`` through the pytest plugin with pytest-xdist at ``-n 1``
and ``-n 2`` (wall time including interpreter start-up and collection, as a user sees it).
Scaling = cases/s with 2 workers / cases/s with 1.  ``run(quick)`` returns the rows.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.cases.loader import load_paths
from harness.cases.runner import Outcome
from harness.cases.runner import run as run_cases
from harness.cases.targets.reference import PSEUDO_EVENTS

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "cases" / "mqdmpr"
_ID = re.compile(r"^(id:\s*)(\S+)", re.MULTILINE)


def _copy_corpus(dest: Path, copies: int) -> None:
    """``copies`` copies of every case file, each case id suffixed with its copy number."""
    for n in range(copies):
        for f in sorted(CORPUS.rglob("*.yaml")):
            text = _ID.sub(lambda m, n=n: f"{m.group(1)}{m.group(2)}.copy{n}", f.read_text())
            (dest / f"{f.parent.name}.{f.stem}.copy{n}.yaml").write_text(text)


def _runner(folder: Path, workers: int) -> tuple[int, float]:
    cases = load_paths([folder], events=PSEUDO_EVENTS)
    start = time.perf_counter()
    result = run_cases(cases, "reference", workers=workers)
    elapsed = time.perf_counter() - start
    assert all(r.outcome is Outcome.passed for r in result.results)
    return len(cases), elapsed


def _pytest(folder: Path, workers: int) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(workers),
         "--rootdir", str(folder.parent), "-c", "/dev/null", str(folder)],
        check=True, capture_output=True, cwd=folder.parent,
    )
    return time.perf_counter() - start


def run(quick: bool = False) -> list[dict[str, Any]]:
    copies = 2 if quick else 20
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "cases"  # the plugin collects YAML under a folder named cases
        folder.mkdir()
        _copy_corpus(folder, copies)
        n, one = _runner(folder, 1)
        _, two = _runner(folder, 2)
        rows.append({
            "name": f"msmq-harness run, {n:,} model cases, 1 vs 2 workers",
            "one_worker": round(n / one), "two_workers": round(n / two),
            "unit": "cases/s", "scaling": round(one / two, 2),
        })
        p1, p2 = _pytest(folder, 1), _pytest(folder, 2)
        rows.append({
            "name": f"pytest plugin, {n:,} model cases, -n 1 vs -n 2 (wall)",
            "one_worker": round(n / p1), "two_workers": round(n / p2),
            "unit": "cases/s", "scaling": round(p1 / p2, 2),
        })
    return rows


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
