"""Parse once, stream everything: every MSMQ packet of a capture is parsed once -- for its row and
for the passive observer -- through the pipeline's per-connection function and through
``msmq-harness decode``; the observer fed parsed packets reports exactly what it reports when the
same streams are replayed to it as bytes; connections are handed on as they end, in the order the
all-in-memory reading gave."""

from __future__ import annotations

import bisect
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pipeline_helpers import capture

import packets
from harness.capture.framing import resync
from harness.capture.streams import CaptureReading, by_connection, capture_segments, capture_streams
from harness.capture.tcp import Direction, Flow, Gap, reassemble
from harness.cli import main as cli_main
from harness.pipeline import flows
from harness.pipeline.flows import analyse_flow, flow_id, flow_rows, iter_local, process_local, segments_of
from harness.pipeline.splits import Split, read_split
from harness.session import Observer
from harness.session.rules import RuleId
from packets import GUID


@pytest.fixture
def parse_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    real = packets.parse

    def counting(data: Any, strict: bool = True) -> Any:
        calls[0] += 1
        return real(data, strict)

    monkeypatch.setattr(packets, "parse", counting)
    return calls


def _segments_by_flow(path: Path) -> dict[str, list[Any]]:
    by_flow: dict[str, list[Any]] = {}
    for item in segments_of(read_split(Split(str(path), 0, path.stat().st_size)), flows.FrameCounts(str(path))):
        by_flow.setdefault(flow_id(item[2]), []).append(item)
    return by_flow


def _framed(path: Path) -> int:
    """Whole packets in the capture's reassembled streams (framed by BaseHeader.PacketSize up to
    the first header that cannot start one, in each run; after a gap from the next BaseHeader)."""
    total = 0
    for stream in capture_streams(path):
        for number, (_base, data) in enumerate(stream.pieces):
            at = 0 if number == 0 else resync(data) or 0  # after a gap: at the next BaseHeader
            while len(data) - at >= 16:
                try:
                    length = packets.wire_length(data[at : at + 16])
                except packets.PacketError:
                    break
                if len(data) - at < length:
                    break
                total, at = total + 1, at + length
    return total


# the synthetic anomalies that leave every stream framable, and those that do not
FRAMABLE = ("sequence-gap", "ack-beyond-sent", "out-of-order", "retransmission", "overlap")
ALL = (*FRAMABLE, "bad-signature", "packet-size", "missing-segment")


@pytest.mark.parametrize("kinds", [FRAMABLE, ALL])
def test_the_per_connection_function_parses_each_packet_once(
    tmp_path: Path, parse_calls: list[int], kinds: tuple[str, ...]
) -> None:
    path, manifest = capture(tmp_path, sessions=40, rate=0.6, seed=4, kinds=kinds)
    framed = _framed(path)
    parse_calls[0] = 0
    rows: dict[str, list[Any]] = {"packets": [], "sessions": [], "violations": []}
    for segments in _segments_by_flow(path).values():
        for table, found in flow_rows(str(path), segments).items():
            rows[table] += found
    assert rows["violations"] and len(rows["sessions"]) == manifest["sessions"]
    assert len(rows["packets"]) > 300
    if kinds == FRAMABLE:
        assert parse_calls[0] == len(rows["packets"]) == framed
    else:
        # a run that ends in a header that cannot start a packet lists none of its packets (as
        # before), but the observer checks those it would have met: parsed there, once
        assert len(rows["packets"]) <= parse_calls[0] <= framed


@pytest.mark.parametrize("kinds", [FRAMABLE, ALL])
def test_decode_parses_each_packet_once(
    tmp_path: Path, parse_calls: list[int], capsys: pytest.CaptureFixture[str], kinds: tuple[str, ...]
) -> None:
    path, _manifest = capture(tmp_path, sessions=30, rate=0.6, seed=5, kinds=kinds)
    parse_calls[0] = 0
    assert cli_main(["decode", "--json", str(path)]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    decoded = [r for r in records if "index" in r]
    assert len(decoded) > 300
    assert parse_calls[0] == len(decoded)


# --------------------------------------------------------------------------------------------
# the observer fed parsed packets == the observer fed the byte streams


def _replayed(flow: Flow) -> list[tuple[str, str, int, str]]:
    """The observer's findings when both directions' delivered runs are replayed to it as bytes in
    capture order up to the first gap: each run at the latest capture time and the latest frame
    number of the chunks up to it, capture time first and frame order breaking its ties."""

    def runs(side: Direction) -> list[tuple[float, int, int, bytes, bool]]:
        starts = sorted(side.timestamps)
        gap_ends = {g.stream_offset + g.length for g in side.gaps}
        out, latest, frame = [], 0.0, 0
        for base, data in side.pieces:
            i = bisect.bisect_left(starts, base)
            cuts = [s for s in starts[i:] if s < base + len(data)]
            if not cuts or cuts[0] != base:
                cuts.insert(0, base)
            for a, b in zip(cuts, [*cuts[1:], base + len(data)], strict=True):
                latest = max(latest, side.timestamps.get(a, 0.0))
                frame = max(frame, side.frames.get(a, 0))
                out.append((latest, frame, a, data[a - base : b - base], a in gap_ends))
        return out

    events = [(ts, frame, 0, off, data, gap) for ts, frame, off, data, gap in runs(flow.client)]
    events += [(ts, frame, 1, off, data, gap) for ts, frame, off, data, gap in runs(flow.server)]
    events.sort(key=lambda e: e[:4])
    observer = Observer()
    found = []
    for ts, _frame, order, _off, data, gap in events:
        if gap:
            break
        found += observer.client_data(data, ts) if order == 0 else observer.server_data(data, ts)
    if not (flow.client.gaps or flow.server.gaps):
        found += observer.end()
    return [(v.rule_id, v.direction, v.packet_index, v.evidence) for v in found]


def _framed_in_time_order(flow: Flow, rng: random.Random) -> Flow:
    """``flow`` with frame numbers given to the chunks of both directions in the order of their
    capture times, equal times in a random order (a capture whose frames agree with its times)."""
    chunks = [(t, rng.random(), side, at) for side in (flow.client, flow.server) for at, t in side.timestamps.items()]
    for number, (_t, _r, side, at) in enumerate(sorted(chunks, key=lambda c: c[:2]), 1):
        side.frames[at] = number
    return flow


def _handed_over(flow: Flow) -> list[tuple[str, str, int, str]]:
    rows = analyse_flow("x", flow)["violations"]
    back = {"client": "c2s", "server": "s2c"}
    return [(r["rule_id"], back[r["direction"]], r["packet_index"], r["evidence"]) for r in rows]


def _mutated(side: Direction, rng: random.Random, t0: float) -> Direction:
    """``side`` (gapless) with its bytes damaged, cut into runs at random offsets with random
    capture times, and perhaps a gap."""
    data = bytearray(b"".join(d for _b, d in side.pieces))
    if data and rng.random() < 0.6:
        starts, at = [], 0
        while at + 16 <= len(data):  # packet starts, by BaseHeader.PacketSize
            starts.append(at)
            try:
                at += packets.wire_length(bytes(data[at : at + 16]))
            except packets.PacketError:
                break
        hit = rng.choice(starts or [0])
        what = rng.randrange(4)
        if what == 0:
            data[hit + 4 : hit + 8] = b"XXXX"  # signature
        elif what == 1:
            data[hit + 8 : hit + 12] = (1 << 30).to_bytes(4, "little")  # PacketSize
        elif what == 2:
            spot = rng.randrange(hit, min(len(data), hit + 200))
            data[spot] ^= 0xFF  # somewhere in a packet
        else:
            del data[rng.randrange(len(data)) :]  # the end missing
    cuts = sorted({0, *rng.sample(range(1, max(2, len(data))), min(len(data) - 1, rng.randrange(1, 12)))})
    stamps = {c: t0 + rng.choice([0.0, 0.001, 0.002, rng.random()]) for c in cuts}
    pieces, gaps = [(0, bytes(data))], []
    if len(data) > 100 and rng.random() < 0.3:
        g = rng.randrange(20, len(data) - 40)
        n = rng.randrange(1, 30)
        pieces, gaps = [(0, bytes(data[:g])), (g + n, bytes(data[g + n :]))], [Gap(g, n)]
        stamps = {c: t for c, t in stamps.items() if not g <= c < g + n}
        stamps.setdefault(g + n, t0 + rng.random())
    return Direction(side.src, side.sport, side.dst, side.dport, bytes(data), pieces, stamps, gaps)


def _flows(path: Path) -> Iterator[Flow]:
    for segments in _segments_by_flow(path).values():
        yield from reassemble([(ts, seg) for _off, ts, seg in segments]).values()


def test_parsed_packets_give_the_observer_what_the_byte_replay_gives(tmp_path: Path) -> None:
    rng = random.Random(9)
    path, _manifest = capture(tmp_path, sessions=24, rate=0.7, seed=6)
    originals = list(_flows(path))
    checked = unframed = gapped = 0
    for flow in originals:  # as captured (anomalies included)
        assert _handed_over(flow) == _replayed(flow), flow.id
        checked += 1
    clean = [f for f in originals if not (f.client.gaps or f.server.gaps)]
    for n in range(400):
        base = rng.choice(clean)
        t0 = base.first_ts
        flow = Flow(base.key, _mutated(base.client, rng, t0), _mutated(base.server, rng, t0), t0, base.last_ts)
        flow = _framed_in_time_order(flow, rng)
        expected = _replayed(flow)
        assert _handed_over(flow) == expected, (n, flow.id)
        checked += 1
        unframed += any(v[0] in (RuleId.MQQB_3_1_5_1_2_SIGNATURE, RuleId.MQQB_3_1_5_1_3_MALFORMED) for v in expected)
        gapped += bool(flow.client.gaps or flow.server.gaps)
    assert checked > 400 and unframed > 20 and gapped > 20


def test_guid_text_without_uuid() -> None:
    rng = random.Random(3)
    for _ in range(2000):
        raw = GUID(rng.randbytes(16))
        assert flows._guid(raw) == str(raw)
        assert flows._guid(bytes(raw)) == str(raw)
    assert flows._guid(None) is None
    assert flows._guid(b"\x01\x02") == str(GUID(b"\x01\x02"))


# --------------------------------------------------------------------------------------------
# connections streamed


def test_capture_streams_keep_the_all_in_memory_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, _manifest = capture(tmp_path, sessions=40, rate=0.5, seed=8, concurrency=7)
    ports = frozenset({1801})
    whole = reassemble(capture_segments(path, ports, CaptureReading()), ports)
    expected = [
        (flow.id, d, side.pieces, side.gaps, side.timestamps)
        for flow in sorted(whole.values(), key=lambda f: f.first_ts)
        for d, side in (("client", flow.client), ("server", flow.server))
        if side.pieces or side.gaps
    ]

    def streamed() -> list[Any]:
        return [(s.flow, s.direction, s.pieces, s.gaps, s.timestamps) for s in capture_streams(path)]

    assert streamed() == expected
    monkeypatch.setattr("harness.capture.streams.HOLD_BYTES", 0)  # every waiting connection spilled
    assert streamed() == expected


def test_by_connection_hands_each_connection_on_when_it_ends() -> None:
    # connection, record offset, timestamp: "a" starts first and ends last
    records = [("a", 0, 1.0), ("b", 1, 2.0), ("b", 2, 2.5), ("c", 3, 1.5), ("a", 4, 3.0), ("c", 5, 4.0)]
    first = [(off, ts, key) for key, off, ts in records]
    seen: list[str] = []

    def second() -> Iterator[tuple[int, str, str]]:
        for key, off, _ts in records:
            seen.append(f"{key}{off}")
            yield off, key.upper(), f"{key}{off}"

    out = []
    for items in by_connection(first, second(), ordered=False):
        out.append((items, len(seen)))
    assert out == [(["b1", "b2"], 3), (["a0", "a4"], 5), (["c3", "c5"], 6)]
    for hold in (0, 1 << 20):
        seen.clear()
        got = list(by_connection(first, second(), hold=hold))
        assert got == [["a0", "a4"], ["c3", "c5"], ["b1", "b2"]]  # by first timestamp
    # a second reading that differs from the first (the file changed): nothing is lost
    extra = [(9, "D", "d9"), (10, "E", "e10")]
    for ordered in (True, False):
        got = list(by_connection(first, [*second(), *extra], ordered=ordered))
        assert sorted(i for items in got for i in items) == sorted(["a0", "a4", "b1", "b2", "c3", "c5", "d9", "e10"])
        assert got[-2:] == [["d9"], ["e10"]]


def test_iter_local_streams_what_process_local_collects(tmp_path: Path) -> None:
    a, _ = capture(tmp_path, "a.pcap", sessions=20, rate=0.5, seed=10)
    b, _ = capture(tmp_path, "b.pcap", sessions=10, rate=0.5, seed=11)
    counts: list[flows.FrameCounts] = []
    per_flow = list(iter_local([str(a), str(b)], counts=counts))
    assert len(per_flow) == 30 and all(len(t["sessions"]) == 1 for t in per_flow)
    tables, all_counts = process_local([str(a), str(b)])
    assert [c.row() for c in counts] == [c.row() for c in all_counts]
    for table in ("packets", "sessions", "violations"):
        streamed = [row for t in per_flow for row in t[table]]
        assert sorted(map(repr, streamed)) == sorted(map(repr, tables[table]))
    # and equal to grouping every segment of the file in memory first
    whole: dict[str, list[Any]] = {"packets": [], "sessions": [], "violations": []}
    for segments in _segments_by_flow(a).values():
        for table, rows in flow_rows(str(a), segments).items():
            whole[table] += rows
    for table, rows in whole.items():
        assert sorted(map(repr, rows)) == sorted(map(repr, [r for r in tables[table] if r["input"] == str(a)]))


# --------------------------------------------------------------------------------------------
# Spark: connections whole in one range are analysed where they are read, the others shuffled


@pytest.mark.usefixtures("spark_local")  # its local Spark jobs run in process
def test_spark_analyses_connections_whole_in_a_range_without_the_shuffle(tmp_path: Path) -> None:
    from pipeline_helpers import table

    from harness.pipeline import job

    path, manifest = capture(tmp_path, sessions=300, rate=0.1, seed=12)
    out = tmp_path / "out"
    argv = ["pipeline", str(path), "--out", str(out), "--master", "local[2]", "--partitions", "3",
            "--split-size", str(path.stat().st_size // 3), "--quiet"]  # fmt: skip
    assert job.LOCAL_CONNECTIONS and cli_main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sessions"] == manifest["sessions"] and all(r["balanced"] for r in summary["reconciliation"])
    import pyarrow.parquet as pq

    sessions = {f.name: pq.read_table(f).num_rows for f in (out / "sessions").glob("*.parquet")}
    in_reading = sum(n for name, n in sessions.items() if name.startswith("part-r"))
    shuffled = sum(n for name, n in sessions.items() if not name.startswith("part-r"))
    assert in_reading > shuffled > 0  # most connections are whole in their range; those cut are shuffled
    whole, _counts = process_local([str(path)])
    for name in ("packets", "sessions", "violations"):
        assert table(out, name) == sorted(whole[name], key=lambda r: json.dumps(r, sort_keys=True, default=str))
        assert summary[name] == len(whole[name])
    assert summary["violations_by_rule"] and sum(summary["session_outcomes"].values()) == manifest["sessions"]
