"""The acceptor's Ping cases ([MS-MQQB] 2.1.2, 3.1.7.7) against an acceptor addressed as a live
target: they run when the target names its UDP ping port (``mqqb://host:port?ping=PORT``), are
not applicable when it does not (an acceptor MAY listen for pings), and fail against an acceptor
that refuses or never answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cases.loader import load_paths
from harness.cases.runner import run
from harness.cases.targets.live import LiveWireTarget, parse_mqqb_address, parse_ping_port
from harness.peers import SimulatedPeer
from harness.results import Outcome

CASES = Path(__file__).resolve().parents[2] / "cases" / "mqqb" / "acceptor.yaml"


@pytest.fixture(scope="module")
def ping_cases() -> list:
    cases = [c for c in load_paths([CASES]) if any(s.action == "ping" for s in c.when)]
    assert len(cases) >= 5
    return cases


def test_the_ping_port_is_named_in_the_target() -> None:
    assert parse_mqqb_address("mqqb://127.0.0.1:1801?ping=3527") == ("127.0.0.1", 1801)
    assert parse_ping_port("mqqb://127.0.0.1:1801?ping=3527") == 3527
    assert parse_ping_port("mqqb://[::1]:1801") is None
    assert LiveWireTarget("mqqb://[::1]:1801?ping=40000").ping_address == ("::1", 40000)
    for bad in ("mqqb://h:1?ping=x", "mqqb://h:1?ping=0", "mqqb://h:1?pong=3527"):
        with pytest.raises(ValueError):
            parse_ping_port(bad)


def test_ping_cases_pass_against_a_live_acceptor_that_answers(ping_cases: list) -> None:
    with SimulatedPeer() as peer:
        host, port = peer.address
        result = run(ping_cases, f"mqqb://{host}:{port}?ping={peer.ping_address[1]}")
        assert len(peer.pings) == sum(1 + ("ping-bad" in c.id) for c in ping_cases)  # every request arrived
    assert {str(r.outcome) for r in result.results} == {"passed"}, [r.detail for r in result.results]


def test_ping_cases_are_not_applicable_without_a_ping_port(ping_cases: list) -> None:
    with SimulatedPeer() as peer:
        host, port = peer.address
        result = run(ping_cases, f"mqqb://{host}:{port}")
        assert peer.pings == []
    assert all(r.outcome is Outcome.not_applicable and "ping=PORT" in r.detail for r in result.results)


PING_RESPONSE = "MQQB-3.1.7.7-PING-RESPONSE"
FLAG_BITS = "MQQB-2.2.7-FLAG-BITS"


@pytest.mark.parametrize(
    ("behaviour", "field", "interpretation"),
    [
        # RF set at bit 1 (a refusal): the case's readings of MQQB-2.2.7-FLAG-BITS give the bit 0
        # under both (low-bits: RF, not refused; high-bits: an unused bit), so a 1 is a value no
        # reading gives, failed under the interpretation's frame, the Ping Response's MUST
        ("ping-refuse", "Ping.Flags.RF", FLAG_BITS),
        ("ping-silent", "answered", ""),
    ],
)
def test_ping_cases_fail_against_an_acceptor_that_refuses_or_is_silent(
    ping_cases: list, behaviour: str, field: str, interpretation: str
) -> None:
    with SimulatedPeer(behaviour=behaviour, time_scale=0.05) as peer:
        host, port = peer.address
        result = run(ping_cases, f"mqqb://{host}:{port}?ping={peer.ping_address[1]}&scale=0.05")
    responses = [r for r in result.results if r.case_id.startswith("mqqb.acceptor.ping-response")]
    assert responses and all(r.outcome is Outcome.failed for r in responses), [r.detail for r in responses]
    for r in responses:
        (failure,) = [f for f in r.failures if f.field == field]
        assert (failure.requirement, failure.level, failure.section) == (PING_RESPONSE, "MUST", "MS-MQQB 3.1.7.7")
        assert (failure.interpretation, failure.reading) == (interpretation, "")
        if interpretation:  # every reading was weighed, and none gives the value observed
            assert [(row["name"], row["expected"], row["matched"]) for row in failure.readings] == [
                ("low-bits", "0", False),
                ("high-bits", "0", False),
            ]
            assert failure.observed == 1
