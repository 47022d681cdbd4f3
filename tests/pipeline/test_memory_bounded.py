"""Memory bounded by design (issue 21, item 5): what ``decode`` and a pipeline worker hold for a
TCP connection is the packets in flight, not the connection -- a connection four times longer
costs next to nothing more -- and what must wait (the packets of a connection printed later, a
shuffled connection's segments) waits in a temporary file beyond a budget, with the same result."""

from __future__ import annotations

import json
import pickle
import random
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pipeline_helpers import capture, table

from harness.decoding import decode_file
from harness.pipeline import tasks as job
from harness.pipeline.flows import iter_local, process_local
from harness.pipeline.splits import Split, describe, plan_tasks
from harness.pipeline.synth import single_connection


@pytest.fixture(scope="module")
def connections(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("one-connection")
    out = {}
    for name, size in (("short", 1_000_000), ("long", 8_000_000)):
        out[name] = folder / f"{name}.pcap"
        made = single_connection(out[name], size, seed=4)
        assert made["messages"] > 200
    return out


@pytest.fixture(autouse=True)
def small_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    """What waits (a connection's server packets until its client's are printed, packet rows
    until they are written) is written out beyond a few packets, not beyond tens of MB."""
    from harness.capture import spill
    from harness.pipeline import flows

    monkeypatch.setattr(spill, "BUDGET", 64 << 10)
    monkeypatch.setattr(spill, "BLOCK", 32 << 10)
    monkeypatch.setattr(spill, "LEAST", 8 << 10)
    monkeypatch.setattr(flows, "ROW_BATCH", 50)
    monkeypatch.setattr(job, "SORT_BYTES", 256 << 10)
    monkeypatch.setattr(job, "SORT_FAN_IN", 4)


def _peak(work: Callable[[], Any]) -> int:
    """Bytes Python allocated at most while ``work`` ran (after a first run: caches warm)."""
    work()
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _shuffled_partition(
    path: Path, out: Path, seed: int, size: int = 256 << 10
) -> Callable[[], list[tuple[str, Any]]]:
    """The pipeline's two worker stages without Spark: every range of ``path`` read by
    :func:`job.read_task` (each connection shuffled); the second, :func:`job.analyse_partition`,
    to run on those lists in a random order, each unpickled as it is read (as Spark hands a
    shuffle partition to its Python worker)."""
    plan = plan_tasks([describe(str(path))], size, 4)  # ranges of ``size`` bytes, on 4 tasks
    items = [pickle.dumps(item) for splits in plan for item in job.read_task(splits, frozenset({1801}))]
    random.Random(seed).shuffle(items)

    def analyse() -> list[tuple[str, Any]]:
        return list(job.analyse_partition(0, (pickle.loads(i) for i in items), frozenset({1801}), str(out)))

    return analyse


def test_decode_holds_the_packets_in_flight_not_the_connection(connections: dict[str, Path]) -> None:
    def decode(name: str) -> Callable[[], int]:
        return lambda: sum(len(r.packets) for r in decode_file(connections[name]))

    short, long = _peak(decode("short")), _peak(decode("long"))
    grown = connections["long"].stat().st_size - connections["short"].stat().st_size
    # before: about six times the connection (7 MB more capture, 40 MB more memory)
    assert long - short < grown // 4, (short, long)


def test_a_pipeline_worker_holds_the_packets_in_flight_not_the_connection(
    connections: dict[str, Path], tmp_path: Path
) -> None:
    def one_process(name: str) -> Callable[[], int]:
        return lambda: sum(len(t.get("packets", ())) for t in iter_local([str(connections[name])]))

    def shuffled(name: str) -> Callable[[], Any]:
        return _shuffled_partition(connections[name], tmp_path / name, 1)

    grown = connections["long"].stat().st_size - connections["short"].stat().st_size
    for work in (one_process, shuffled):
        short, long = _peak(work("short")), _peak(work("long"))
        assert long - short < grown // 4, (work.__name__, short, long)


def test_shuffled_connections_merged_from_disk_give_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _manifest = capture(tmp_path, sessions=30, rate=0.6, seed=21, concurrency=10)
    whole, _counts = process_local([str(path)])

    def rows(out: Path) -> dict[str, list[dict[str, Any]]]:
        results = _shuffled_partition(path, out, 7, 16 << 10)()
        assert sum(1 for kind, _ in results if kind == "stats") > 8  # read in many ranges: runs merged in passes
        return {name: table(out, name) for name in ("packets", "sessions", "violations")}

    in_memory = rows(tmp_path / "memory")
    monkeypatch.setattr(job, "SORT_BYTES", 0)  # every run written out, read back a block at a time
    monkeypatch.setattr(job, "SORT_BLOCK", 3000)
    on_disk = rows(tmp_path / "disk")
    for name in ("packets", "sessions", "violations"):
        expected = sorted(whole[name], key=lambda r: json.dumps(r, sort_keys=True, default=str))
        assert in_memory[name] == on_disk[name] == expected, name
    assert whole["violations"]


def test_a_split_read_by_ranges_streams_its_connections(tmp_path: Path) -> None:
    # the ranges' own connections are analysed as their segments are read (no list per connection)
    path, manifest = capture(tmp_path, sessions=40, rate=0.3, seed=22, concurrency=3)
    split = Split(str(path), 0, path.stat().st_size)
    local = job.RangeLocal(False, frozenset())
    out = tmp_path / "out"
    items = list(job.read_task([split], frozenset({1801}), local=local, out=str(out), index=0))
    assert [k[0] for k, _v in items] == ["s", "c"]  # nothing shuffled
    whole, _counts = process_local([str(path)])
    for name in ("packets", "sessions", "violations"):
        assert table(out, name) == sorted(whole[name], key=lambda r: json.dumps(r, sort_keys=True, default=str))
    assert len(whole["sessions"]) == manifest["sessions"]
