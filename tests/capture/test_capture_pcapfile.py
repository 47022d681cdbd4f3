"""harness.capture.pcapfile against capture files written by scapy and hand-built pcapng blocks,
including damaged files: every problem must name its offset and the reader must recover."""

from __future__ import annotations

import io
import itertools
import struct
from pathlib import Path

import pytest
from capture_helpers import (
    T0,
    block,
    epb,
    idb,
    old_pb,
    read_all,
    record_offsets,
    sample_packets,
    shb,
    spb,
    tcp_pkt,
    write_pcap,
    write_pcapng,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.capture.pcapcommon import MAX_CAPLEN, CaptureProblem, PcapHeader, Record
from harness.capture.pcapfile import find_record_boundary, iter_records, read_header

# ---------------------------------------------------------------- well-formed files


@pytest.mark.parametrize("endianness", ["<", ">"])
def test_classic_pcap_both_byte_orders(tmp_path: Path, endianness: str) -> None:
    pkts = sample_packets(8)
    data = write_pcap(tmp_path / "a.pcap", pkts, endianness=endianness)
    assert data[:4] == (b"\xd4\xc3\xb2\xa1" if endianness == "<" else b"\xa1\xb2\xc3\xd4")
    recs, probs = read_all(data, path="a.pcap")
    assert probs == []
    assert [r.offset for r in recs] == record_offsets(data, endianness)
    assert [r.data for r in recs] == [bytes(p) for p in pkts]
    assert [r.wirelen for r in recs] == [len(p) for p in pkts]
    for r, p in zip(recs, pkts, strict=True):
        assert r.ts == pytest.approx(float(p.time), abs=1e-6)
        assert (r.linktype, r.interface) == (1, 0)
    hdr = read_header(io.BytesIO(data))
    assert isinstance(hdr, PcapHeader)
    assert (hdr.format, hdr.byteorder, hdr.linktype, hdr.snaplen, hdr.ts_unit) == ("pcap", endianness, 1, 65535, 1e-6)


def test_nanosecond_pcap(tmp_path: Path) -> None:
    p = tcp_pkt(b"x", ts=1000.0)
    p.time = 1000.123456789  # small epoch so that a float can carry nanoseconds
    q = tcp_pkt(b"y", ts=1000.0)
    q.time = 1000.123456790
    data = write_pcap(tmp_path / "n.pcap", [p, q], nano=True)
    assert data[:4] == b"\x4d\x3c\xb2\xa1"
    hdr = read_header(io.BytesIO(data))
    assert isinstance(hdr, PcapHeader) and hdr.ts_unit == 1e-9
    recs, probs = read_all(data)
    assert probs == []
    assert recs[0].ts == pytest.approx(1000.123456789, abs=2e-9)
    assert recs[1].ts - recs[0].ts == pytest.approx(1e-9, abs=5e-10)


def test_pcapng_written_by_scapy(tmp_path: Path) -> None:
    pkts = sample_packets(5)
    data = write_pcapng(tmp_path / "a.pcapng", pkts)
    recs, probs = read_all(data)
    assert probs == []
    assert [r.data for r in recs] == [bytes(p) for p in pkts]
    assert all(r.linktype == 1 for r in recs)
    for r, p in zip(recs, pkts, strict=True):
        assert r.ts == pytest.approx(float(p.time), abs=1e-6)
        assert data[r.offset : r.offset + 4] == b"\x06\x00\x00\x00"  # offset is the EPB's
    hdr = read_header(io.BytesIO(data))
    assert isinstance(hdr, PcapHeader)
    assert (hdr.format, hdr.byteorder, hdr.linktype) == ("pcapng", "<", 1)


def test_pcapng_by_hand_all_block_kinds_and_both_byte_orders() -> None:
    a, b, c, d, e = (bytes([i]) * (10 + i) for i in range(5))
    be = (
        shb(">")
        + idb(">", 101, 0, tsresol=9)  # interface 0: raw IP, nanoseconds
        + block(">", 0xDEAD, b"unknown block body")  # skipped by its length
        + idb(">", 1, 1500, tsresol=0x83, tsoffset=100)  # interface 1: Ethernet, 1/8 s, +100 s
        + epb(">", 0, 1_500_000_000_123, a)
        + epb(">", 1, 12, b)
        + spb(">", c)
    )
    le = shb("<") + idb("<", 113) + old_pb("<", 0, 2_000_000, d) + epb("<", 0, 3_000_000, e, wirelen=99)
    data = be + le
    recs, probs = read_all(data)
    assert probs == []
    assert [r.data for r in recs] == [a, b, c, d, e]
    assert [r.linktype for r in recs] == [101, 1, 101, 113, 113]
    assert [r.interface for r in recs] == [0, 1, 0, 0, 0]
    assert recs[0].ts == pytest.approx(1500.000000123, abs=1e-9)
    assert recs[1].ts == pytest.approx(100 + 12 / 8)
    assert recs[2].ts == 0.0  # a Simple Packet Block has no timestamp
    assert recs[3].ts == pytest.approx(2.0)
    assert recs[4].wirelen == 99
    assert recs[3].offset == len(be) + len(shb("<")) + len(idb("<", 113))
    hdr = read_header(io.BytesIO(data))
    assert isinstance(hdr, PcapHeader)
    assert (hdr.byteorder, hdr.linktype, hdr.ts_unit) == (">", 101, 1e-9)


# ---------------------------------------------------------------- damaged files


def test_bad_magic() -> None:
    recs, probs = read_all(b"GIF89a" + b"\x00" * 100, path="x.pcap")
    assert recs == []
    assert probs == [CaptureProblem("x.pcap", 0, "bad magic 0x47494638")]
    assert isinstance(read_header(io.BytesIO(b"GIF89a")), CaptureProblem)


def test_empty_and_short_files() -> None:
    assert read_all(b"")[1][0].reason.startswith("truncated file header")
    assert read_all(b"\xd4\xc3\xb2\xa1\x02\x00")[1][0].reason == "truncated pcap global header"


def test_truncated_record_data_and_header(tmp_path: Path) -> None:
    data = write_pcap(tmp_path / "t.pcap", sample_packets(4))
    offs = record_offsets(data)
    recs, probs = read_all(data[: offs[3] + 20], path="t")
    assert len(recs) == 3
    assert len(probs) == 1 and probs[0].offset == offs[3] and "truncated record data" in probs[0].reason
    recs, probs = read_all(data[: offs[2] + 7])
    assert len(recs) == 2
    assert probs[0].offset == offs[2] and "truncated record header" in probs[0].reason


def test_caplen_above_snaplen_is_reported_and_the_sound_record_kept(tmp_path: Path) -> None:
    pkts = sample_packets(6, size=40)
    pkts[2] = tcp_pkt(b"Z" * 300, ts=T0 + 0.6)
    data = write_pcap(tmp_path / "s.pcap", pkts, snaplen=200)
    offs = record_offsets(data)
    recs, probs = read_all(data, path="s")
    assert probs == [
        CaptureProblem("s", offs[2], "caplen 354 above snaplen 200 (record kept: the next record header follows)")
    ]
    assert [r.offset for r in recs] == offs
    assert [r.data for r in recs] == [bytes(p) for p in pkts]


def test_caplen_above_snaplen_and_wrong_is_skipped_and_the_rest_recovered(tmp_path: Path) -> None:
    pkts = sample_packets(6, size=40)
    pkts[2] = tcp_pkt(b"Z" * 300, ts=T0 + 0.6)
    data = bytearray(write_pcap(tmp_path / "s.pcap", pkts, snaplen=200))
    offs = record_offsets(bytes(data))
    struct.pack_into("<I", data, offs[2] + 8, 250)  # caplen > snaplen, and not where the next record is
    recs, probs = read_all(bytes(data), path="s")
    assert probs[0] == CaptureProblem("s", offs[2], "caplen 250 above snaplen 200")
    assert probs[1].offset == offs[2] and f"resynchronised at offset {offs[3]}" in probs[1].reason
    assert len(probs) == 2
    assert [r.offset for r in recs] == offs[:2] + offs[3:]
    assert [r.data for r in recs] == [bytes(p) for i, p in enumerate(pkts) if i != 2]


def test_caplen_above_sanity_limit_never_allocates(tmp_path: Path) -> None:
    data = bytearray(write_pcap(tmp_path / "g.pcap", sample_packets(5), snaplen=0))
    offs = record_offsets(bytes(data))
    struct.pack_into("<I", data, offs[1] + 8, 0xFFFFFFF0)

    class Counting(io.BytesIO):
        biggest = 0

        def read(self, n: int | None = -1) -> bytes:
            Counting.biggest = max(Counting.biggest, n if n is not None and n >= 0 else 1 << 62)
            return super().read(n)

    items = list(iter_records(Counting(bytes(data))))
    assert Counting.biggest <= 2 << 20
    probs = [i for i in items if isinstance(i, CaptureProblem)]
    assert probs[0].offset == offs[1] and f"{MAX_CAPLEN}-byte sanity limit" in probs[0].reason
    assert [i.offset for i in items if isinstance(i, Record)] == [offs[0], *offs[2:]]


def test_garbage_inside_the_file_resyncs_on_the_next_record(tmp_path: Path) -> None:
    pkts = sample_packets(10)
    clean = write_pcap(tmp_path / "c.pcap", pkts)
    offs = record_offsets(clean)
    # overwrite the middle of record 4's header and splice 333 bytes of garbage before record 7
    junk = bytes((i * 37 + 11) % 256 for i in range(333))
    damaged = bytearray(clean[: offs[7]] + junk + clean[offs[7] :])
    damaged[offs[4] + 8 : offs[4] + 16] = b"\xee" * 8
    recs, probs = read_all(bytes(damaged), path="d")
    got = [bytes(r.data) for r in recs]
    want = [bytes(p) for i, p in enumerate(pkts) if i != 4]
    assert got == want  # record 4 is lost, everything else is recovered
    assert [p.offset for p in probs] == [offs[4], offs[4], offs[7], offs[7]]
    assert "caplen" in probs[0].reason and "resynchronised" in probs[1].reason
    assert probs[3].reason == f"resynchronised at offset {offs[7] + 333}, skipped 333 bytes"
    assert recs[-1].offset == offs[9] + 333


def test_garbage_until_end_of_file(tmp_path: Path) -> None:
    clean = write_pcap(tmp_path / "e.pcap", sample_packets(3))
    recs, probs = read_all(clean + b"\xff" * 1000)
    assert len(recs) == 3
    assert probs[0].offset == len(clean)
    assert "no plausible record header" in probs[-1].reason


def test_pcapng_inconsistent_block_length_resyncs(tmp_path: Path) -> None:
    pkts = [bytes([i]) * (20 + i) for i in range(6)]
    blocks = [epb("<", 0, 1000 + i, p, trailing=999 if i == 2 else None) for i, p in enumerate(pkts)]
    head = shb("<") + idb("<", 1)
    data = head + b"".join(blocks)
    recs, probs = read_all(data, path="n")
    bad = len(head) + sum(map(len, blocks[:2]))
    assert [r.data for r in recs] == pkts[:2] + pkts[3:]
    assert probs[0].offset == bad and probs[0].reason.startswith("block length inconsistent")
    assert probs[1].reason.startswith(f"resynchronised at offset {bad + len(blocks[2])}")
    assert len(probs) == 2


def test_pcapng_garbage_between_blocks_resyncs() -> None:
    head = shb("<") + idb("<", 1)
    blocks = [epb("<", 0, 1000 + i, bytes([i]) * 30) for i in range(4)]
    junk = bytes((i * 53 + 7) % 256 for i in range(101))
    data = head + blocks[0] + blocks[1] + junk + blocks[2] + blocks[3]
    recs, probs = read_all(data, path="g")
    assert [r.data[0] for r in recs] == [0, 1, 2, 3]
    bad = len(head) + len(blocks[0]) + len(blocks[1])
    assert [p.offset for p in probs] == [bad, bad]
    assert probs[1].reason == f"resynchronised at offset {bad + 101}, skipped 101 bytes"
    assert recs[2].offset == bad + 101


def test_pcapng_unknown_blocks_small_and_large() -> None:
    head = shb("<") + idb("<", 1)
    pkt = epb("<", 0, 1, b"abcd")
    big = block("<", 0x80000001, b"\x00" * 500_000)  # above MAX_BLOCK: skipped in bounded chunks
    recs, probs = read_all(head + big + pkt + block("<", 0xB00B, b"x" * 8) + pkt)
    assert probs == [] and len(recs) == 2 and recs[0].offset == len(head) + len(big)
    bad_small = block("<", 0xB00B, b"x" * 8, trailing=7)
    recs, probs = read_all(head + bad_small + pkt)
    assert len(recs) == 1 and probs[0].offset == len(head) and "inconsistent" in probs[0].reason
    bad_big = block("<", 0x80000001, b"\x00" * 500_000, trailing=5)
    recs, probs = read_all(head + bad_big + pkt)
    assert len(recs) == 1 and recs[0].offset == len(head) + len(bad_big)
    assert probs[0].offset == len(head) and "skipped unverified" in probs[0].reason


def test_pcapng_sanity_limits_and_truncation() -> None:
    head = shb("<") + idb("<", 1)
    good = epb("<", 0, 1, b"abcd")
    huge = struct.pack("<II", 6, 0x7FFFFFF0) + b"\x00" * 40
    recs, probs = read_all(head + good + huge + good)
    assert len(recs) == 2
    assert probs[0].offset == len(head + good) and "sanity limit" in probs[0].reason
    recs, probs = read_all(head + good + good[:-6])
    assert len(recs) == 1 and probs[0].reason.startswith("truncated block")
    recs, probs = read_all(head + epb("<", 3, 1, b"abcd"))
    assert recs == [] and probs[0].reason == "packet for undeclared interface 3"
    small = shb("<") + idb("<", 1, snaplen=3)
    recs, probs = read_all(small + epb("<", 0, 1, b"abcd") + epb("<", 0, 2, b"ab"))
    assert [r.data for r in recs] == [b"abcd", b"ab"]
    assert probs == [CaptureProblem("", len(small), "caplen 4 above snaplen 3 (record kept)")]


# ---------------------------------------------------------------- byte-range splitting


def test_find_record_boundary_and_byte_ranges(tmp_path: Path) -> None:
    pkts = sample_packets(40)
    data = write_pcap(tmp_path / "r.pcap", pkts)
    offs = record_offsets(data)
    hdr = read_header(io.BytesIO(data))
    assert isinstance(hdr, PcapHeader)
    mid = offs[5] + 3
    b = find_record_boundary(data[mid : mid + 4096], hdr)
    assert b is not None and mid + b == offs[6]
    assert find_record_boundary(b"\x00" * 200, hdr) is None
    # three byte ranges: each starts at the first record boundary in it, ends where the next starts
    cuts = [0, len(data) // 3, 2 * len(data) // 3, len(data)]
    seen: list[int] = []
    for lo, hi in itertools.pairwise(cuts):
        rel = 24 if lo == 0 else find_record_boundary(data[lo : lo + 4096], hdr)
        assert rel is not None
        start = lo + rel if lo else rel
        stream = io.BytesIO(data)
        stream.seek(start)
        for item in iter_records(stream, start_offset=start, header=hdr, end_offset=hi):
            assert isinstance(item, Record)
            seen.append(item.offset)
    assert seen == offs


def test_pcapng_byte_ranges(tmp_path: Path) -> None:
    data = write_pcapng(tmp_path / "r.pcapng", sample_packets(30))
    whole, probs = read_all(data)
    assert probs == [] and len(whole) == 30
    hdr = read_header(io.BytesIO(data))
    assert isinstance(hdr, PcapHeader) and hdr.interfaces
    cuts = [hdr.length + len(idb("<", 1)), len(data) // 2, len(data)]
    got: list[Record] = []
    for lo, hi in itertools.pairwise(cuts):
        rel = find_record_boundary(data[lo : lo + 8192], hdr)
        assert rel is not None
        stream = io.BytesIO(data)
        stream.seek(lo + rel)
        for item in iter_records(stream, start_offset=lo + rel, header=hdr, end_offset=hi):
            assert isinstance(item, Record)
            got.append(item)
    assert got == whole


# ---------------------------------------------------------------- robustness


_CLEAN_PCAPNG = shb("<") + idb("<", 1) + b"".join(epb("<", 0, 1000 + i, bytes([i]) * (20 + i)) for i in range(8))


@settings(max_examples=150, deadline=None)
@given(
    fmt=st.sampled_from(["pcap", "pcapng"]),
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.binary(min_size=1, max_size=8)), max_size=6),
    cut=st.integers(0, 10_000),
)
def test_mutated_files_never_raise_and_offsets_stay_inside(fmt: str, edits: list[tuple[int, bytes]], cut: int) -> None:
    base = bytearray(_pcap_bytes() if fmt == "pcap" else _CLEAN_PCAPNG)
    for pos, junk in edits:
        p = pos % len(base)
        base[p : p + len(junk)] = junk
    data = bytes(base[: max(1, cut % (len(base) + 1))])
    for item in iter_records(io.BytesIO(data)):
        assert 0 <= item.offset < len(data)
        if isinstance(item, Record):
            assert len(item.data) <= MAX_CAPLEN and item.offset + len(item.data) <= len(data)


def _pcap_bytes() -> bytes:
    buf = io.BytesIO()
    buf.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for i in range(8):
        frame = bytes([i]) * (40 + i)
        buf.write(struct.pack("<IIII", int(T0) + i, i, len(frame), len(frame)) + frame)
    return buf.getvalue()
