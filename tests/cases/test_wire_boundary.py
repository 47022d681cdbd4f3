"""The whole wire corpus against each boundary-conformant behaviour of the simulated peer
(``--target reference?peer=NAME``: every case whose peer would behave ``normal`` meets NAME
instead): an acceptor that acknowledges as late as the spec allows, advertises the smallest or
largest window, runs the longest timers, addresses its OrderAcks with a direct format name or fills
BaseHeader.Reserved passes every acceptor case, and the reference initiator passes every initiator
case against it, because every wait is bounded by the [MS-MQQB] 3.1.2 timers and the values the
harness sent (issue 9, "Boundary-conformant peers")."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cases.loader import load_paths
from harness.cases.runner import run
from harness.session.acceptor import BEHAVIOURS, boundary_behaviours

WIRE = Path(__file__).resolve().parents[2] / "cases" / "mqqb"


@pytest.fixture(scope="module")
def wire_cases() -> list:
    return load_paths([WIRE])


def test_the_boundary_behaviours_include_the_latest_acknowledgment() -> None:
    names = boundary_behaviours()
    assert {"late-ack", "window-min", "window-max", "longest-timers"} <= set(names)
    assert BEHAVIOURS["late-ack"].session_ack == "timer"  # acknowledges only when its timer expires


@pytest.mark.parametrize("behaviour", boundary_behaviours())
def test_the_wire_corpus_passes_against_a_boundary_conformant_peer(wire_cases: list, behaviour: str) -> None:
    result = run(wire_cases, f"reference?peer={behaviour}", workers=8)
    bad = [(r.case_id, str(r.outcome), r.detail) for r in result.results if str(r.outcome) != "passed"]
    assert not bad, bad
    assert len(result.results) == len(wire_cases)
