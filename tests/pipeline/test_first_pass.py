"""The first, light pass reads frames in place (:func:`harness.pipeline.splits.read_split_views`,
:func:`harness.capture.streams.view_connections`) and must find exactly what reading the records
and asking :func:`harness.capture.streams.connection_key` finds -- on clean, damaged, pcapng and
hostile captures, in whole files and in ranges, proven or searched; and the classic pcap reader's
fast loop over its read window gives the records the record-by-record path gives, whatever the
window's size."""

from __future__ import annotations

import itertools
import random
import struct
from pathlib import Path
from typing import Any

import pytest

from harness.capture import pcapcommon
from harness.capture.pcapfile import iter_record_views, iter_records, read_header
from harness.capture.streams import connection_key, view_connections
from harness.pipeline.splits import Split, describe, plan_tasks, read_split, read_split_views
from tests.pipeline.pipeline_helpers import capture, record_offsets, set_caplen, write_pcapng

PORTS = frozenset({1801})


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    d = tmp_path_factory.mktemp("first-pass")
    anomalies, _ = capture(d, "anomalies.pcap", sessions=30, rate=0.5, seed=5)
    data = anomalies.read_bytes()
    offs = record_offsets(anomalies)
    damaged = bytearray(data)
    set_caplen(damaged, offs[30], 70000)  # above snaplen, the next header follows: kept
    set_caplen(damaged, offs[90], 300000)  # above the sanity limit: resynchronised after
    struct.pack_into("<I", damaged, offs[120] + 4, 2_000_000)  # a fraction above one second
    (d / "damaged.pcap").write_bytes(bytes(damaged))
    garbage = bytes(random.Random(9).randrange(256) for _ in range(41))
    (d / "garbage.pcap").write_bytes(data[: offs[50] + 30] + garbage + data[offs[50] + 30 : offs[-3] + 20])
    # frames the fast paths do not take: a VLAN tag, IPv4 options, not TCP, short frames
    frames = bytearray(data[:24])
    for i, off in enumerate(offs[:200]):
        sec, frac, caplen, wirelen = struct.unpack_from("<IIII", data, off)
        frame = data[off + 16 : off + 16 + caplen]
        if i % 5 == 1:
            frame = frame[:12] + b"\x81\x00\x00\x07" + frame[12:]
        elif i % 5 == 2:
            frame = frame[:23] + b"\x11" + frame[24:]  # UDP
        elif i % 5 == 3:
            frame = frame[:40]
        frames += struct.pack("<IIII", sec, frac, len(frame), max(len(frame), wirelen)) + frame
    (d / "frames.pcap").write_bytes(bytes(frames))
    pcapng = d / "anomalies.pcapng"
    write_pcapng(anomalies, pcapng)
    return [anomalies, d / "damaged.pcap", d / "garbage.pcap", d / "frames.pcap", pcapng]


def _expected(split: Split) -> list[tuple[int, float, Any]]:
    out = []
    for rec in read_split(split):
        key = connection_key(rec.linktype, rec.data, PORTS)
        if key is not None:
            out.append((rec.offset, rec.ts, key))
    return out


def _splits(path: Path) -> list[Split]:
    size = path.stat().st_size
    found = [Split(str(path), 0, size)]
    for split_size in (3_000, 40_000):
        found += [s for task in plan_tasks([describe(str(path))], split_size, 4) for s in task]
    cuts = [0, *sorted(random.Random(3).sample(range(1, size), 5)), size]
    found += [Split(str(path), a, b, i) for i, (a, b) in enumerate(itertools.pairwise(cuts))]
    return found


def test_the_views_pass_finds_what_the_records_give(captures: list[Path]) -> None:
    for path in captures:
        seen = 0
        for split in _splits(path):
            expected = _expected(split)
            assert list(view_connections(read_split_views(split), PORTS)) == expected, (path.name, split)
            seen += len(expected)
        assert seen, path.name


@pytest.mark.parametrize("chunk", [61, 700, 4096, 1 << 20])
def test_any_read_window_gives_the_same_records(
    captures: list[Path], chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = {}
    for path in captures[:4]:
        with path.open("rb") as f:
            reference[path] = list(iter_records(f, path=str(path)))
    monkeypatch.setattr(pcapcommon, "_CHUNK", chunk)  # the read window's chunk (harness.capture.pcapcommon.ReadWindow)
    for path in captures[:4]:
        with path.open("rb") as f:
            assert list(iter_records(f, path=str(path))) == reference[path], path.name
        with path.open("rb") as f:
            header = read_header(f)
            assert not isinstance(header, pcapcommon.CaptureProblem)
            f.seek(24)
            views = list(iter_record_views(f, start_offset=24, header=header, path=str(path)))
        as_records = [
            v if isinstance(v, pcapcommon.CaptureProblem) else (v[0], v[1], v[2], v[3][v[4] : v[5]]) for v in views
        ]
        assert as_records == [
            r if isinstance(r, pcapcommon.CaptureProblem) else (r.offset, r.ts, r.linktype, r.data)
            for r in reference[path]
        ], path.name
