"""The whole wire corpus against each boundary-conformant behaviour of the simulated peer
(``--target reference?peer=NAME``: every case whose peer would behave ``normal`` meets NAME
instead): an acceptor that acknowledges as late as the spec allows, advertises the smallest or
largest window, runs the longest timers, addresses its OrderAcks with a direct format name or fills
BaseHeader.Reserved passes every acceptor case, and the reference initiator passes every initiator
case against it, because every wait is bounded by the [MS-MQQB] 3.1.2 timers and the values the
harness sent (issue 9, "Boundary-conformant peers").

Each run is bounded by its longest case (a case that waits on the sender's Session Ack Send
Timer at half its duration, about 11 s), not by the processes' CPU: the runs go side by side,
each in a process of its own with its own workers (module fixture ``runs``), and each test reads
its behaviour's results."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from harness.cases.loader import load_paths
from harness.cases.runner import run
from harness.session.acceptor import BEHAVIOURS, boundary_behaviours

WIRE = Path(__file__).resolve().parents[2] / "cases" / "mqqb"
WORKERS = 4  # per behaviour: the cases mostly wait on timers
# The module fixture ``runs`` once: under pytest-xdist --dist loadgroup the module's tests share a worker.
pytestmark = pytest.mark.xdist_group("wire-boundary")

Outcomes = tuple[int, list[tuple[str, str, str]]]  # (cases loaded, [(case id, outcome, detail)])


def _run_behaviour(behaviour: str) -> Outcomes:
    """In a process of its own: the wire corpus against the peer behaving ``behaviour``."""
    wire_cases = load_paths([WIRE])
    result = run(wire_cases, f"reference?peer={behaviour}", workers=WORKERS)
    return len(wire_cases), [(r.case_id, str(r.outcome), r.detail) for r in result.results]


@pytest.fixture(scope="module")
def runs() -> dict[str, Outcomes]:
    """Every boundary behaviour's run of the wire corpus, side by side: behaviour -> its outcomes."""
    behaviours = boundary_behaviours()
    with ProcessPoolExecutor(max_workers=len(behaviours)) as pool:
        futures = {b: pool.submit(_run_behaviour, b) for b in behaviours}
        return {b: future.result() for b, future in futures.items()}


def test_the_boundary_behaviours_include_the_latest_acknowledgment() -> None:
    names = boundary_behaviours()
    assert {"late-ack", "window-min", "window-max", "longest-timers"} <= set(names)
    assert BEHAVIOURS["late-ack"].session_ack == "timer"  # acknowledges only when its timer expires


@pytest.mark.parametrize("behaviour", boundary_behaviours())
def test_the_wire_corpus_passes_against_a_boundary_conformant_peer(runs: dict[str, Outcomes], behaviour: str) -> None:
    loaded, results = runs[behaviour]
    bad = [(case, outcome, detail) for case, outcome, detail in results if outcome != "passed"]
    assert not bad, bad
    assert len(results) == loaded
