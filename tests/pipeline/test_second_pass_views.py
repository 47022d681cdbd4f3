"""The chain's second pass reads records in place (:func:`harness.pipeline.splits.read_split_views`
with a :class:`~harness.pipeline.splits.SplitResult`, :func:`harness.pipeline.flows.view_segments`,
:func:`harness.capture.frames.decode_tcp_view`: the TCP payload the one copy of a frame) and must
give what reading each record's bytes gives -- the same records, the same problems and range
bounds, the same segments ([RFC 9293] 3.1) and the same per-input reconciliation -- on clean,
damaged, pcapng and hostile captures, whole, in ranges and from bytes Spark read."""

from __future__ import annotations

import itertools
import random
import struct
from pathlib import Path

import pytest

from harness.capture.frames import decode_tcp, decode_tcp_view
from harness.pipeline.flows import FrameCounts, segments_of, view_segments
from harness.pipeline.splits import Split, SplitResult, describe, plan_tasks, read_split, read_split_views
from tests.pipeline.pipeline_helpers import capture, record_offsets, set_caplen, write_pcapng

PORTS = frozenset({1801})


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    d = tmp_path_factory.mktemp("second-pass")
    clean, _ = capture(d, "anomalies.pcap", sessions=20, rate=0.5, seed=7)
    data = clean.read_bytes()
    offs = record_offsets(clean)
    damaged = bytearray(data)
    set_caplen(damaged, offs[20], 70000)  # above snaplen, the next header follows: kept
    set_caplen(damaged, offs[70], 300000)  # above the sanity limit: resynchronised after
    (d / "damaged.pcap").write_bytes(bytes(damaged[: offs[-2] + 21]))  # and cut inside a record
    frames = bytearray(data[:24])  # frames the in-place path does not take
    for i, off in enumerate(offs[:150]):
        sec, frac, caplen, wirelen = struct.unpack_from("<IIII", data, off)
        frame = data[off + 16 : off + 16 + caplen]
        if i % 6 == 1:
            frame = frame[:12] + b"\x81\x00\x00\x07" + frame[12:]  # a VLAN tag
        elif i % 6 == 2:
            frame = frame[:23] + b"\x11" + frame[24:]  # UDP
        elif i % 6 == 3:
            frame = frame[: max(40, len(frame) - 7)]  # cut by the snapshot length
        elif i % 6 == 4:
            frame = frame[:46] + b"\xf0" + frame[47:]  # a TCP data offset beyond the IP payload
        frames += struct.pack("<IIII", sec, frac, len(frame), max(len(frame), wirelen)) + frame
    (d / "frames.pcap").write_bytes(bytes(frames))
    pcapng = d / "anomalies.pcapng"
    write_pcapng(clean, pcapng)
    return [clean, d / "damaged.pcap", d / "frames.pcap", pcapng]


def _splits(path: Path) -> list[Split]:
    size = path.stat().st_size
    found = [Split(str(path), 0, size)]
    found += [s for task in plan_tasks([describe(str(path))], 20_000, 4) for s in task]
    cuts = [0, *sorted(random.Random(4).sample(range(1, size), 4)), size]
    found += [Split(str(path), a, b, i) for i, (a, b) in enumerate(itertools.pairwise(cuts))]
    return found


def test_views_give_the_records_problems_and_bounds(captures: list[Path]) -> None:
    problems = 0
    for path in captures:
        whole = path.read_bytes()
        for split in _splits(path):
            for data in (None, whole) if split.start == 0 and split.end >= len(whole) else (None,):
                by_record, in_place = SplitResult(split), SplitResult(split)
                records = [(r.offset, r.ts, r.linktype, r.data) for r in read_split(split, by_record, data)]
                views = [(o, t, lt, bytes(buf[a:b])) for o, t, lt, buf, a, b in read_split_views(split, in_place, data)]
                assert views == records, (path.name, split)
                assert in_place == by_record, (path.name, split)
                problems += len(by_record.problems)
    assert problems  # the damaged capture's problems were met


def test_view_segments_give_the_segments_and_counts(captures: list[Path]) -> None:
    seen_problems = 0
    for path in captures:
        for split in _splits(path):
            by_record, in_place = FrameCounts(str(path)), FrameCounts(str(path))
            expected = list(segments_of(read_split(split), by_record, PORTS))
            assert list(view_segments(read_split_views(split), in_place, PORTS)) == expected, (path.name, split)
            assert in_place.row() == by_record.row(), (path.name, split)
            seen_problems += by_record.undecodable
    assert seen_problems  # the hostile frames were met


def test_decode_in_place_equals_decoding_the_copy(captures: list[Path]) -> None:
    for path in captures[:3]:
        buf = path.read_bytes()
        for off in record_offsets(path)[:150] if path.name != "damaged.pcap" else []:
            caplen = struct.unpack_from("<I", buf, off + 8)[0]
            start, stop = off + 16, off + 16 + caplen
            padded = b"\x00" * 3 + buf[start:stop] + b"\xff" * 5  # the frame inside a larger buffer
            assert decode_tcp_view(1, padded, 3, 3 + caplen) == decode_tcp(1, buf[start:stop])
            assert decode_tcp_view(1, buf, start, stop) == decode_tcp(1, buf[start:stop])
