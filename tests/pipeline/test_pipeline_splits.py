"""Splittable pcap reading: byte ranges resynchronise on record boundaries; bad input reported."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from pipeline_helpers import capture, record_offsets, records, set_caplen, write_pcapng

from harness.pipeline.splits import (
    InputFile,
    Split,
    SplitError,
    SplitResult,
    check_chaining,
    describe,
    expand_inputs,
    plan_tasks,
    read_split,
)


def read_in_ranges(path: Path, cuts: list[int]) -> tuple[list[tuple[int, float, bytes]], list[SplitResult]]:
    size = path.stat().st_size
    bounds = [0, *cuts, size]
    got: list[tuple[int, float, bytes]] = []
    results = []
    for i in range(len(bounds) - 1):
        result = SplitResult(Split(str(path), bounds[i], bounds[i + 1], i))
        got += [(r.offset, r.ts, r.data) for r in read_split(result.split, result)]
        results.append(result)
    return got, results


def test_any_split_points_give_exactly_the_sequential_records(tmp_path: Path) -> None:
    path, _ = capture(tmp_path, sessions=20, rate=0.5)
    expected = records(path)
    size = path.stat().st_size
    rng = random.Random(7)
    offsets = [off for off, _, _ in expected]
    for trial in range(150):
        if trial < 40:  # cuts right at, just before and just after record boundaries
            cuts = sorted({max(1, offsets[rng.randrange(1, len(offsets))] + rng.choice((-1, 0, 1, 16)))})
        else:
            cuts = sorted({rng.randrange(1, size) for _ in range(rng.randrange(1, 16))})
        got, results = read_in_ranges(path, cuts)
        assert got == expected, f"cuts {cuts}"
        assert not check_chaining(results)
        assert not [p for r in results for p in r.problems]
    got, results = read_in_ranges(path, list(range(100, size, 100)))  # ranges shorter than a record
    assert got == expected
    assert sum(1 for r in results if r.records == 0) > 0


def test_big_file_is_cut_and_small_files_packed_into_balanced_tasks(tmp_path: Path) -> None:
    big, _ = capture(tmp_path, "big.pcap", sessions=40)
    smalls = [capture(tmp_path, f"s{i}.pcap", sessions=1 + i % 3, seed=i)[0] for i in range(9)]
    files = [describe(str(p)) for p in [big, *smalls]]
    plan = plan_tasks(files, split_size=-(-big.stat().st_size // 5), tasks=4)
    assert len(plan) == 4
    pieces = [s for task in plan for s in task]
    for f in files:  # every byte of every file in exactly one range
        ranges = sorted((s.start, s.end) for s in pieces if s.path == f.path)
        assert ranges[0][0] == 0 and ranges[-1][1] == f.size
        assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    assert len([s for s in pieces if s.path == str(big)]) == 5
    loads = [sum(s.length for s in task) for task in plan]
    assert max(loads) - min(loads) <= max(s.length for s in pieces)
    expected = sum(len(records(Path(f.path))) for f in files)
    assert sum(1 for s in pieces for _ in read_split(s)) == expected


def test_expand_inputs_folders_globs_and_missing(tmp_path: Path) -> None:
    for name in ("a.pcap", "b.pcapng", "notes.txt"):
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.cap").write_bytes(b"x")
    listed = expand_inputs([str(tmp_path)])
    assert [Path(p).name for p in listed] == ["a.pcap", "b.pcapng", "c.cap"]
    assert [Path(p).name for p in expand_inputs([str(tmp_path / "*.pcap*"), str(tmp_path / "a.pcap")])] == [
        "a.pcap",
        "b.pcapng",
    ]
    with pytest.raises(SplitError, match="no such file"):
        expand_inputs([str(tmp_path / "missing.pcap")])
    assert expand_inputs([f"file://{tmp_path}/a.pcap", f"file:{tmp_path}/sub"]) == [
        str(tmp_path / "a.pcap"),
        str(tmp_path / "sub" / "c.cap"),
    ]
    with pytest.raises(SplitError, match=r"^hdfs://nn/x\.pcap: not a local path"):  # read through Spark's Hadoop layer
        expand_inputs(["hdfs://nn/x.pcap"])


def damaged(tmp_path: Path) -> dict[str, tuple[Path, int]]:
    """Damaged copies of one capture: name -> (path, offset of the damage)."""
    path, _ = capture(tmp_path, "good.pcap", sessions=10)
    data = path.read_bytes()
    offs = record_offsets(path)
    out: dict[str, tuple[Path, int]] = {}
    cut = offs[-5] + 30
    (tmp_path / "truncated.pcap").write_bytes(data[:cut])
    out["truncated"] = (tmp_path / "truncated.pcap", offs[-5])
    (tmp_path / "badmagic.pcap").write_bytes(b"\x00\x01\x02\x03" + data[4:])
    out["bad magic"] = (tmp_path / "badmagic.pcap", 0)
    big = bytearray(data)
    set_caplen(big, offs[40], 70000)
    (tmp_path / "caplen.pcap").write_bytes(bytes(big))
    out["caplen"] = (tmp_path / "caplen.pcap", offs[40])
    garbage = bytes(random.Random(3).randrange(256) for _ in range(37))
    (tmp_path / "garbage.pcap").write_bytes(data[: offs[60] + 20] + garbage + data[offs[60] + 20 :])
    out["garbage"] = (tmp_path / "garbage.pcap", offs[61])  # record 60 keeps its length: its tail moves on
    return out


def test_bad_input_is_reported_with_its_offset_and_the_rest_is_read(tmp_path: Path) -> None:
    files = damaged(tmp_path)
    good = records(tmp_path / "good.pcap")
    for what, (path, at) in files.items():
        result = SplitResult(Split(str(path), 0, path.stat().st_size))
        got = list(read_split(result.split, result))
        assert result.problems, what
        assert result.problems[0].offset == at, (what, result.problems)
        assert result.problems[0].path == str(path)
        if what == "bad magic":
            assert describe(str(path)).format == "bad" and not got
            continue
        assert len(got) >= len(good) - 5, what  # only the damaged records are lost
        if what in ("caplen", "garbage"):
            assert got[-1].data == good[-1][2]  # read on to the end after resynchronising
    # split reading of the damaged files: the ranges still give the sequential records
    for what in ("caplen", "garbage", "truncated"):
        path = files[what][0]
        expected = records(path)
        size = path.stat().st_size
        for k in range(1, 12):
            got, _results = read_in_ranges(path, [size * k // 12])
            assert got == expected, (what, k)


def test_plan_rejects_a_zero_split_size() -> None:
    with pytest.raises(SplitError):
        plan_tasks([InputFile("x", 10)], 0, 2)


def test_pcapng_is_cut_at_block_boundaries_and_gives_the_sequential_records(tmp_path: Path) -> None:
    pcap, _ = capture(tmp_path, sessions=12, rate=0.5)
    path = tmp_path / "c.pcapng"
    write_pcapng(pcap, path)
    info = describe(str(path))
    assert info.format == "pcapng" and info.splittable
    expected = records(path)
    assert [data for _, _, data in expected] == [data for _, _, data in records(pcap)]
    size = path.stat().st_size
    rng = random.Random(11)
    for _ in range(60):
        cuts = sorted({rng.randrange(1, size) for _ in range(rng.randrange(1, 10))})
        got, results = read_in_ranges(path, cuts)
        assert got == expected, f"cuts {cuts}"
        assert not [p for r in results for p in r.problems]
    assert len(plan_tasks([info], size // 4 + 1, 4)) == 4
