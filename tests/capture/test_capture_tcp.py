"""harness.capture.tcp: RFC 9293 sequence space for a passive observer -- in-order, out-of-order,
retransmitted, overlapping and wrapped segments, gaps reported with their offsets, flows and
client/server roles, end to end from a scapy-written capture file."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

from capture_helpers import T0, read_all, tcp_pkt, write_pcap
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.capture.frames import ACK, FIN, PSH, RST, SYN, TcpSegment, decode_tcp
from harness.capture.pcapcommon import Record
from harness.capture.tcp import Chunk, FlowKey, Gap, TcpReassembler, reassemble

DATA = bytes(range(256)) * 8  # 2048 distinct-ish bytes


def segments(isn: int, data: bytes, size: int) -> list[tuple[int, bytes]]:
    """(seq, payload) pieces of ``data`` sent after a SYN with sequence number ``isn``."""
    return [((isn + 1 + i) % 2**32, data[i : i + size]) for i in range(0, len(data), size)]


def run(r: TcpReassembler, segs: list[tuple[int, bytes]], isn: int | None = None) -> list[Chunk | Gap]:
    out: list[Chunk | Gap] = []
    if isn is not None:
        out += r.feed(0.0, isn, SYN, b"")
    for i, (seq, payload) in enumerate(segs):
        out += r.feed(1.0 + i, seq, ACK | PSH, payload)
    out += r.flush()
    return out


def stream(events: list[Chunk | Gap]) -> bytes:
    return b"".join(e.data for e in events if isinstance(e, Chunk))


def contiguous(events: list[Chunk | Gap]) -> bool:
    pos = 0
    for e in events:
        start = e.offset if isinstance(e, Chunk) else e.stream_offset
        if start != pos:
            return False
        pos += len(e.data) if isinstance(e, Chunk) else e.length
    return True


def test_in_order_with_syn() -> None:
    r = TcpReassembler()
    ev = run(r, segments(1000, DATA, 100), isn=1000)
    assert stream(ev) == DATA and contiguous(ev)
    assert [e.offset for e in ev if isinstance(e, Chunk)] == list(range(0, len(DATA), 100))
    assert [e.ts for e in ev if isinstance(e, Chunk)][:2] == [1.0, 2.0]
    assert r.gaps == [] and r.problems == [] and r.syn_seen


def test_out_of_order_is_buffered_and_released_in_order() -> None:
    segs = segments(5, DATA, 64)
    shuffled = segs[:]
    random.Random(7).shuffle(shuffled)
    r = TcpReassembler()
    ev = run(r, shuffled, isn=5)
    assert stream(ev) == DATA and contiguous(ev)
    assert r.gaps == [] and r.problems == []
    # chunks keep the timestamp of the segment that carried them
    ts_of = {seq: 1.0 + i for i, (seq, _) in enumerate(shuffled)}
    for c in ev:
        assert isinstance(c, Chunk) and c.ts == ts_of[(5 + 1 + c.offset) % 2**32]


def test_retransmission_identical_is_dropped_quietly() -> None:
    segs = segments(0, DATA[:500], 100)
    r = TcpReassembler()
    ev = run(r, [*segs[:3], segs[1], segs[2], *segs[3:], segs[4]], isn=0)
    assert stream(ev) == DATA[:500]
    assert r.problems == [] and r.retransmitted == 300


def test_overlap_first_copy_wins_and_conflicts_are_reported() -> None:
    r = TcpReassembler()
    out = r.feed(0, 99, SYN, b"")
    out += r.feed(1, 100, ACK, b"AAAAAAAAAA")  # offsets 0..10, delivered
    out += r.feed(2, 130, ACK, b"CCCCCCCCCC")  # 30..40, buffered
    out += r.feed(3, 105, ACK, b"XXXXXBBBBBBBBBBBBBBBBBBBBZZZ")  # 5..33: conflicts both sides
    out += r.flush()
    assert stream(out) == b"AAAAAAAAAA" + b"B" * 20 + b"C" * 10
    assert [(p.stream_offset, p.reason) for p in r.problems] == [
        (5, "conflicting retransmission of 5 bytes at 5"),
        (30, "conflicting overlap of 3 bytes at 30"),
    ]


def test_overlap_between_buffered_segments() -> None:
    r = TcpReassembler()
    r.feed(0, 0, SYN, b"")
    out = r.feed(1, 21, ACK, b"c" * 10)  # 20..30 buffered
    out += r.feed(2, 16, ACK, b"b" * 20)  # 15..35: disagrees on 20..30
    out += r.feed(3, 1, ACK, b"a" * 15)  # 0..15 releases everything
    assert stream(out) == b"a" * 15 + b"b" * 5 + b"c" * 10 + b"b" * 5 and contiguous(out)
    assert [(p.stream_offset, p.reason) for p in r.problems] == [(20, "conflicting overlap of 10 bytes at 20")]
    r2 = TcpReassembler()
    r2.feed(0, 0, SYN, b"")
    r2.feed(1, 21, ACK, b"c" * 10)
    r2.feed(2, 16, ACK, b"b" * 5 + b"c" * 10 + b"b" * 5)  # agrees: a plain overlap
    out2 = r2.feed(3, 1, ACK, b"a" * 15)
    assert stream(out2) == b"a" * 15 + b"b" * 5 + b"c" * 10 + b"b" * 5
    assert r2.problems == [] and r2.retransmitted == 10


def test_keepalive_probe_is_not_a_conflict() -> None:
    r = TcpReassembler()
    r.feed(0, 0, SYN, b"")
    r.feed(1, 1, ACK, b"hello")
    assert r.feed(2, 5, ACK, b"\x00") == []  # seq = next - 1 with one garbage byte
    assert r.problems == [] and r.keepalives == 1
    r.feed(3, 3, ACK, b"XX")  # a real conflicting retransmission still is one
    assert len(r.problems) == 1


def test_sequence_wrap_around() -> None:
    isn = 2**32 - 300
    segs = segments(isn, DATA, 128)
    assert any(seq < 1000 for seq, _ in segs)  # the sequence numbers really wrap
    order = segs[:]
    order[2], order[3] = order[3], order[2]
    r = TcpReassembler()
    ev = run(r, order, isn=isn)
    assert stream(ev) == DATA and r.gaps == [] and r.problems == []


def test_gap_is_reported_with_its_offset_and_stream_continues() -> None:
    segs = segments(10, DATA[:1000], 100)
    r = TcpReassembler()
    ev = run(r, segs[:4] + segs[5:], isn=10)  # bytes 400..500 never arrive
    assert r.gaps == [Gap(400, 100, "never received")]
    assert Gap(400, 100, "never received") in ev and contiguous(ev)
    assert stream(ev) == DATA[:400] + DATA[500:1000]


def test_unknown_isn_starts_at_first_segment() -> None:
    segs = segments(77777, DATA[:300], 100)
    r = TcpReassembler()
    ev = run(r, segs)
    assert stream(ev) == DATA[:300] and not r.syn_seen and ev[0].offset == 0  # type: ignore[union-attr]


def test_data_before_the_first_seen_segment_is_reported() -> None:
    segs = segments(0, DATA[:300], 100)
    r = TcpReassembler()
    ev = run(r, [segs[1], segs[0], segs[2]])  # no SYN, first capture starts mid-stream
    assert stream(ev) == DATA[100:300]
    assert len(r.problems) == 1 and "before the first seen segment" in r.problems[0].reason


def test_bounded_buffer_skips_forward_with_a_gap() -> None:
    r = TcpReassembler(max_ahead=1000)
    r.feed(0, 0, SYN, b"")
    r.feed(1, 1, ACK, b"x" * 100)
    ev = r.feed(2, 1 + 5000, ACK, b"y" * 100)  # 4900 bytes ahead > max_ahead
    assert r.gaps == [Gap(100, 4900, "not received within 1000 bytes")]
    assert ev == [Gap(100, 4900, "not received within 1000 bytes"), Chunk(5000, 2, b"y" * 100)]
    # many small out-of-order pieces beyond the bound: oldest hole is given up first
    r2 = TcpReassembler(max_ahead=300)
    r2.feed(0, 0, SYN, b"")
    for i in range(1, 6):
        r2.feed(i, 1 + 100 * i, ACK, b"z" * 50)  # holes at 0..100, 150..200, ...
    assert r2.gaps and r2.gaps[0] == Gap(0, 100, "not received within 300 bytes")


def test_fin_rst_and_missing_bytes_before_fin() -> None:
    r = TcpReassembler()
    r.feed(0, 0, SYN, b"")
    r.feed(1, 1, ACK, b"a" * 10)
    r.feed(2, 21, ACK | FIN, b"c" * 10)  # 10..20 missing, FIN at 30
    ev = r.flush()
    assert r.fin_at == 30
    assert ev == [Gap(10, 10, "never received"), Chunk(20, 2, b"c" * 10)]
    r2 = TcpReassembler()
    r2.feed(0, 0, SYN, b"")
    r2.feed(1, 1, ACK | FIN, b"")
    r2.feed(2, 1, ACK, b"late")
    assert "after the FIN" in r2.problems[0].reason
    r3 = TcpReassembler()
    r3.feed(0, 0, SYN, b"")
    r3.feed(0, 0, RST, b"")
    assert r3.reset


@settings(max_examples=60, deadline=None)
@given(
    isn=st.integers(0, 2**32 - 1),
    data=st.binary(min_size=1, max_size=3000),
    cuts=st.lists(st.integers(1, 2999), max_size=30),
    seed=st.integers(0, 2**16),
    dup=st.integers(0, 5),
)
def test_any_segmentation_order_and_duplication_gives_the_stream(
    isn: int, data: bytes, cuts: list[int], seed: int, dup: int
) -> None:
    bounds = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    segs = [((isn + 1 + a) % 2**32, data[a:b]) for a, b in itertools.pairwise(bounds)]
    rng = random.Random(seed)
    segs += [rng.choice(segs) for _ in range(dup)]
    rng.shuffle(segs)
    r = TcpReassembler()
    ev = run(r, segs, isn=isn)
    assert stream(ev) == data and r.gaps == [] and r.problems == [] and contiguous(ev)


@settings(max_examples=60, deadline=None)
@given(
    isn=st.integers(0, 2**32 - 1),
    n=st.integers(2, 40),
    lost=st.sets(st.integers(0, 39), min_size=1),
    seed=st.integers(0, 2**16),
)
def test_lost_segments_become_exactly_the_reported_gaps(isn: int, n: int, lost: set[int], seed: int) -> None:
    size = 37
    data = bytes((i * 7) % 251 for i in range(n * size))
    segs = segments(isn, data, size)
    kept = [s for i, s in enumerate(segs) if i not in lost]
    random.Random(seed).shuffle(kept)
    r = TcpReassembler()
    r.feed(0, isn, SYN, b"")
    ev: list[Chunk | Gap] = []
    for i, (seq, payload) in enumerate(kept):
        ev += r.feed(1.0 + i, seq, ACK, payload)
    ev += r.feed(99.0, (isn + 1 + len(data)) % 2**32, ACK | FIN, b"")
    ev += r.flush()
    want_gaps = []
    for is_lost, grp in itertools.groupby(range(n), key=lambda i: i in lost):
        idx = list(grp)
        if is_lost:
            want_gaps.append((idx[0] * size, len(idx) * size))
    assert [(g.stream_offset, g.length) for g in r.gaps] == want_gaps
    assert stream(ev) == b"".join(p for i, (_, p) in enumerate(segs) if i not in lost)
    assert contiguous(ev) and r.problems == []


# ---------------------------------------------------------------- flows


def seg(src: str, sport: int, dst: str, dport: int, seq: int, flags: int, payload: bytes = b"") -> TcpSegment:
    return TcpSegment(src, sport, dst, dport, seq, 0, flags, payload)


def test_flow_key_is_canonical_and_has_a_text_id() -> None:
    k1, a1 = FlowKey.of("10.0.0.2", 1801, "10.0.0.1", 49759)
    k2, a2 = FlowKey.of("10.0.0.1", 49759, "10.0.0.2", 1801)
    assert k1 == k2 and a1 != a2
    assert k1.id == "10.0.0.1:49759-10.0.0.2:1801/tcp" == str(k1)
    k6, _ = FlowKey.of("2001:db8::2", 1801, "2001:db8::1", 5000)
    assert k6.id == "[2001:db8::1]:5000-[2001:db8::2]:1801/tcp"
    k9, _ = FlowKey.of("10.0.0.10", 1, "10.0.0.9", 1)  # numeric, not text, ordering
    assert k9.a == "10.0.0.9"


def test_reassemble_roles_by_syn_and_by_port() -> None:
    c, s = ("10.0.0.9", 2000), ("10.0.0.1", 3000)  # client sorts after server; no known port
    segs = [
        (0.0, seg(*c, *s, 100, SYN)),
        (0.1, seg(*s, *c, 500, SYN | ACK)),
        (0.2, seg(*c, *s, 101, ACK | PSH, b"hello")),
        (0.3, seg(*s, *c, 501, ACK | PSH, b"world!")),
        (0.4, seg(*c, *s, 106, ACK | FIN)),
        # a second flow seen mid-stream: the side talking to port 1801 is the client
        (1.0, seg("10.0.0.1", 1801, "10.0.0.5", 40000, 9000, ACK, b"reply")),
        (1.1, seg("10.0.0.5", 40000, "10.0.0.1", 1801, 7000, ACK, b"request")),
    ]
    flows = reassemble(segs)
    assert len(flows) == 2
    f1 = flows[FlowKey.of(*c, *s)[0]]
    assert (f1.client.src, f1.client.sport, f1.client.data, f1.server.data) == ("10.0.0.9", 2000, b"hello", b"world!")
    assert f1.client.syn_seen and f1.client.fin and f1.client.timestamps == {0: 0.2}
    assert (f1.first_ts, f1.last_ts) == (0.0, 0.4)
    f2 = flows[FlowKey.of("10.0.0.1", 1801, "10.0.0.5", 40000)[0]]
    assert (f2.client.sport, f2.client.data, f2.server.data) == (40000, b"request", b"reply")
    assert f2.id == "10.0.0.1:1801-10.0.0.5:40000/tcp"


def test_end_to_end_capture_with_reordering_and_a_hole(tmp_path: Path) -> None:
    """pcap file -> records -> segments -> flows: a lost segment surfaces as a Gap at its offset."""
    cli = {"src": "192.168.1.10", "dst": "192.168.1.20", "sport": 50000, "dport": 1801}
    srv = {"src": "192.168.1.20", "dst": "192.168.1.10", "sport": 1801, "dport": 50000}
    msg = b"".join(bytes([65 + i]) * 100 for i in range(8))
    pieces = [(i * 100, msg[i * 100 : (i + 1) * 100]) for i in range(8)]
    pkts = [tcp_pkt(seq=2**32 - 2, flags="S", ts=T0, **cli), tcp_pkt(seq=42, ack=0, flags="SA", ts=T0 + 0.01, **srv)]
    order = [0, 2, 1, 3, 3, 4, 6, 7]  # 2 before 1, 3 retransmitted, 5 lost
    for k, i in enumerate(order):
        off, data = pieces[i]
        pkts.append(tcp_pkt(data, seq=(2**32 - 1 + off) % 2**32, flags="PA", ts=T0 + 0.1 + k * 0.01, **cli))
    pkts.append(tcp_pkt(b"OK", seq=43, flags="PA", ts=T0 + 0.5, **srv))
    recs, probs = read_all(write_pcap(tmp_path / "e2e.pcap", pkts))
    assert probs == []
    segs = []
    for r in recs:
        assert isinstance(r, Record)
        s = decode_tcp(r.linktype, r.data)
        assert isinstance(s, TcpSegment)
        segs.append((r.ts, s))
    (flow,) = reassemble(segs).values()
    assert flow.id == "192.168.1.10:50000-192.168.1.20:1801/tcp"
    assert flow.client.gaps == [Gap(500, 100, "never received")]
    assert flow.client.data == msg[:500] + msg[600:]
    assert flow.client.pieces == [(0, msg[:500]), (600, msg[600:])]
    assert flow.client.retransmitted == 100 and flow.client.problems == []
    assert flow.server.data == b"OK" and flow.server.gaps == []
    assert abs(flow.client.timestamps[600] - (T0 + 0.16)) < 1e-6
