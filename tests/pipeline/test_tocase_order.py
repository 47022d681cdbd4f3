"""capture-to-case orders a session's packets by what the capture proves, as decode and the
pipeline do (issue 21, item 1): within a direction TCP stream order, across directions capture
time with frame order (the record index) breaking every tie of time.  So every record at one
time, a clock of one second or zero timestamps give exactly the case of the original capture;
where the times contradict the frame order no case is made from an order the capture does not
prove: capture-to-case says so (exit 2)."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main as cli_main
from harness.pipeline.synth import ANOMALIES, synthesize
from harness.pipeline.tocase import CaseBuildError, capture_to_case

_REC = struct.Struct("<IIII")
Stamp = Callable[[int, int, int], tuple[int, int]]

CLOCKS: dict[str, Stamp] = {
    "one time": lambda i, s, u: (1_700_000_000, 0),
    "1 s": lambda i, s, u: (s, 0),
    "zero": lambda i, s, u: (0, 0),
}


def retimed(src: Path, dst: Path, stamp: Stamp) -> Path:
    """A copy of a classic pcap (microseconds), each record's time set to ``stamp(index, seconds,
    microseconds)``."""
    data = bytearray(src.read_bytes())
    at, index = 24, 0
    while at + 16 <= len(data):
        sec, usec, caplen, _wire = _REC.unpack_from(data, at)
        struct.pack_into("<II", data, at, *stamp(index, sec, usec))
        at += 16 + caplen
        index += 1
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(bytes(data))
    return dst


def case_or_refusal(path: Path, flow: str) -> dict[str, Any] | str:
    try:
        return capture_to_case(path, flow)
    except CaseBuildError as e:
        return f"refused: {e}"


def cases(path: Path, manifest: dict[str, Any]) -> dict[str, dict[str, Any] | str]:
    return {f["flow"]: case_or_refusal(path, f["flow"]) for f in manifest["flows"]}


def session_ack_steps(case: dict[str, Any] | str) -> list[int]:
    """Where the case waits for a SessionAck the capture showed the acceptor getting wrong."""
    assert isinstance(case, dict)
    return [
        n for n, s in enumerate(case["when"]) if s["action"] == "receive" and s["args"].get("packet") == "SessionAck"
    ]


@pytest.mark.parametrize("clock", sorted(CLOCKS))
def test_a_coarse_clock_gives_the_case_of_the_original(tmp_path: Path, clock: str) -> None:
    # the acceptor acknowledging more than was sent: the case waits for that SessionAck after the
    # UserMessages that preceded it, not after every packet the initiator sent
    original = tmp_path / "a" / "c.pcap"
    original.parent.mkdir()
    manifest = synthesize(original, 4, 1.0, seed=2, kinds=("ack-beyond-sent", "bad-signature"))
    expected = cases(original, manifest)
    for ack_flow in [a["flow"] for a in manifest["anomalies"] if a["kind"] == "ack-beyond-sent"]:
        case = expected[ack_flow]
        assert isinstance(case, dict)
        steps = session_ack_steps(case)
        assert steps and steps[0] < len(case["when"]) - 1
    coarse = retimed(original, tmp_path / "b" / "c.pcap", CLOCKS[clock])
    assert cases(coarse, manifest) == expected


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 10_000),
    kinds=st.lists(st.sampled_from(ANOMALIES), min_size=1, max_size=4, unique=True),
    clock=st.sampled_from(sorted(CLOCKS)),
)
def test_shared_timestamps_give_exactly_the_original_cases(
    tmp_path_factory: pytest.TempPathFactory, seed: int, kinds: list[str], clock: str
) -> None:
    folder = tmp_path_factory.mktemp("tocase-order")
    original = folder / "a" / "c.pcap"
    original.parent.mkdir()
    manifest = synthesize(original, 8, 0.5, seed=seed, kinds=tuple(kinds), concurrency=4)
    coarse = retimed(original, folder / "b" / "c.pcap", CLOCKS[clock])
    assert cases(coarse, manifest) == cases(original, manifest)


def test_an_order_the_capture_cannot_establish_makes_no_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the acceptor's answer to the EstablishConnection stamped a second before the request: its
    # time says it came first, its frame says after
    one = tmp_path / "one.pcap"
    manifest = synthesize(one, 1, 0.0, seed=3)
    [flow] = [f["flow"] for f in manifest["flows"]]
    data = one.read_bytes()
    seconds, at = [], 24
    while at + 16 <= len(data):
        sec, _usec, caplen, _wire = _REC.unpack_from(data, at)
        seconds.append(sec)
        at += 16 + caplen
    answer = 4  # SYN, SYN+ACK, ACK, the client's EstablishConnection, then the acceptor's answer
    odd = retimed(one, tmp_path / "odd.pcap", lambda i, s, u: (seconds[answer - 1] - 1, u) if i == answer else (s, u))
    with pytest.raises(CaseBuildError, match="order not established at server stream offset 0"):
        capture_to_case(odd, flow)
    out = tmp_path / "case.yaml"
    assert cli_main(["capture-to-case", str(odd), "--flow", flow, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "order not established" in err and "the capture's times contradict its frame order" in err
    assert not out.exists()
