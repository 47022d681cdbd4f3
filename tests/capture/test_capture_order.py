"""Order by what the capture proves (issue 21, item 1): within a TCP connection sequence numbers
order each direction; across directions capture time does, and frame order (the record index)
breaks every tie of time; an order the capture cannot establish (times that contradict the frame
order) never produces a violation against either side.

So a capture whose records share timestamps -- every record at one time (merged captures), a
clock of one second, zero timestamps, any coarser clock -- gives ``decode`` and the pipeline
exactly the violations of the original capture."""

from __future__ import annotations

import json
import random
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main as cli_main
from harness.pipeline.flows import process_local
from harness.pipeline.synth import ANOMALIES, SESSION_ANOMALIES, synthesize

_REC = struct.Struct("<IIII")


def retimed(src: Path, dst: Path, stamp: Callable[[int, int, int], tuple[int, int]]) -> Path:
    """A copy of a classic pcap (microseconds) with each record's time set to ``stamp(index,
    seconds, microseconds)``."""
    data = bytearray(src.read_bytes())
    at, index = 24, 0
    while at + 16 <= len(data):
        sec, usec, caplen, _wire = _REC.unpack_from(data, at)
        struct.pack_into("<II", data, at, *stamp(index, sec, usec))
        at += 16 + caplen
        index += 1
    dst.write_bytes(bytes(data))
    return dst


CLOCKS: dict[str, Callable[[int, int, int], tuple[int, int]]] = {
    "one time": lambda i, s, u: (1_700_000_000, 0),
    "1 s": lambda i, s, u: (s, 0),
    "zero": lambda i, s, u: (0, 0),
    "10 ms": lambda i, s, u: (s, u - u % 10_000),
}


def decode_violations(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[tuple[Any, ...]]]:
    """decode --json --fail-on-violation: the exit status and the session violations."""
    code = cli_main(["decode", "--json", "--fail-on-violation", str(path)])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    fields = ("rule_id", "section", "direction", "packet_index", "evidence")
    found = sorted((line["stream"], *(line["violation"][k] for k in fields)) for line in lines if "violation" in line)
    return code, found


def pipeline_violations(path: Path) -> list[tuple[Any, ...]]:
    tables, _counts = process_local([str(path)])
    return sorted(
        (v["flow"], v["rule_id"], v["section"], v["direction"], v["packet_index"], v["evidence"])
        for v in tables["violations"]
    )


def test_the_issues_captures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a clean capture: 71 false MQQB-3.1.5.x-wrong-state violations before, once every record
    # had one time
    clean = tmp_path / "clean.pcap"
    synthesize(clean, 5, 0.0, seed=0)
    assert decode_violations(clean, capsys) == (0, [])
    same = retimed(clean, tmp_path / "clean-one-time.pcap", CLOCKS["one time"])
    assert decode_violations(same, capsys) == (0, [])
    assert pipeline_violations(same) == []
    # 4 true violations: 271 before, the 2 of them on the sending side lost
    bad = tmp_path / "bad.pcap"
    manifest = synthesize(bad, 20, 0.2, seed=0)
    code, original = decode_violations(bad, capsys)
    assert code == 1 and len(original) == 4
    assert sorted(v[1] for v in original) == sorted(a["rule"] for a in manifest["anomalies"])
    same = retimed(bad, tmp_path / "bad-one-time.pcap", CLOCKS["one time"])
    assert decode_violations(same, capsys) == (1, original)
    assert pipeline_violations(same) == pipeline_violations(bad)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 10_000),
    kinds=st.lists(st.sampled_from(ANOMALIES), min_size=1, max_size=4, unique=True),
    clock=st.sampled_from(sorted(CLOCKS)),
)
def test_shared_timestamps_give_exactly_the_original_violations(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    seed: int,
    kinds: list[str],
    clock: str,
) -> None:
    folder = tmp_path_factory.mktemp("order")
    original = folder / "original.pcap"
    synthesize(original, 12, 0.5, seed=seed, kinds=tuple(kinds), concurrency=6)
    coarse = retimed(original, folder / "coarse.pcap", CLOCKS[clock])
    code, expected = decode_violations(original, capsys)
    assert decode_violations(coarse, capsys) == (code, expected)
    pipelined = pipeline_violations(original)
    assert pipeline_violations(coarse) == pipelined
    assert [v[1:] for v in pipelined] == [v[1:] for v in expected]  # decode and the pipeline agree
    if any(k in SESSION_ANOMALIES for k in kinds):
        assert expected  # something to lose


def _frames_of(path: Path) -> list[tuple[int, int, int]]:
    """(record offset, seconds, microseconds) of each record."""
    data = path.read_bytes()
    out, at = [], 24
    while at + 16 <= len(data):
        sec, usec, caplen, _wire = _REC.unpack_from(data, at)
        out.append((at, sec, usec))
        at += 16 + caplen
    return out


def test_an_order_the_capture_cannot_establish_blames_no_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # one session; the server's answer to the EstablishConnection (its first data frame) stamped
    # a second before the client's request: its time says it came first, its frame says after
    one = tmp_path / "one.pcap"
    synthesize(one, 1, 0.0, seed=3)
    records = _frames_of(one)
    server_first = 4  # SYN, SYN+ACK, ACK, the client's EstablishConnection, then the server's answer
    request_sec = records[server_first - 1][1]

    def stamp(i: int, s: int, u: int) -> tuple[int, int]:
        return (request_sec - 1, u) if i == server_first else (s, u)

    odd = retimed(one, tmp_path / "odd.pcap", stamp)
    code, found = decode_violations(odd, capsys)
    assert found == [] and code == 1  # no violation; the note counts as a problem
    cli_main(["decode", str(odd)])
    text = capsys.readouterr().out
    assert "order not established at server stream offset 0" in text
    tables, _counts = process_local([str(odd)])
    assert tables["violations"] == []
    [session] = tables["sessions"]
    assert session["outcome"] == "unordered"
    assert any("order not established" in p for p in session["problems"])


def test_frame_order_breaks_ties_of_time_in_both_directions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # every pair of records shares a time (a clock of about 2 frames): the server's answers and
    # the client's next packets tie, and the client is not taken first
    path = tmp_path / "pairs.pcap"
    synthesize(path, 6, 0.0, seed=11)
    rng = random.Random(1)
    pairs = retimed(path, tmp_path / "paired.pcap", lambda i, s, u: (1_700_000_000 + (i + rng.randrange(2)) // 2, 0))
    assert decode_violations(pairs, capsys) == (0, [])
    assert pipeline_violations(pairs) == []
