"""packets.scapy_stream holds what constants bound, whatever the capture holds: the TCP directions
it follows at once (a SYN flood no longer grows it without end), the early segments over every
direction, and the errors it keeps; a direction it dropped mid-stream is skipped until a SYN opens
it again, never framed from the middle of a packet into an error the stream does not have
([MS-MQQB] 2.1.1 framing by [MS-MQMQ] 2.2.19.1 BaseHeader.PacketSize)."""

from __future__ import annotations

from scapy.compat import raw

from packets.scapy_stream import MAX_ERRORS, MAX_FLOWS, MSMQReassembler
from tests.packets.scapykit import DATA, STREAM, segment


def test_a_syn_flood_keeps_the_directions_followed_bounded_and_the_recent_ones_exact() -> None:
    r = MSMQReassembler()
    half = len(STREAM[0]) // 2
    r.feed(segment(0, b"", "S", sport=1000))
    assert r.feed(segment(1, DATA[:half], sport=1000)) == []  # half a packet, then the flood
    for port in range(2000, 2000 + 2 * MAX_FLOWS):
        r.feed(segment(0, b"", "S", sport=port))
    assert len(r._flows) == MAX_FLOWS  # before: one per SYN ever seen
    recent = 2000 + 2 * MAX_FLOWS - 1
    assert [raw(p) for p in r.feed(segment(1, DATA, sport=recent))] == STREAM
    # the dropped direction's rest: skipped, no error made up from the middle of its packet
    assert r.feed(segment(1 + half, DATA[half:], sport=1000)) == [] and r.errors == []
    r.feed(segment(100, b"", "S", sport=1000))  # opened again: followed again
    assert [raw(p) for p in r.feed(segment(101, DATA, sport=1000))] == STREAM


def test_early_segments_are_bounded_over_every_direction() -> None:
    r = MSMQReassembler(max_gap=1000, max_held=2500)
    for port in range(3000, 3010):  # each direction holds one early segment of 1,000 bytes
        r.feed(segment(0, b"", "S", sport=port))
        r.feed(segment(50, bytes(1000), sport=port))
    assert r.held == 2000  # before: 10,000 (only each direction's own max_gap was looked at)
    r.feed(segment(0, b"", "S", sport=3000))  # a direction opened again lets its bytes go
    assert r.held == 1000


def test_the_errors_kept_are_the_latest() -> None:
    r = MSMQReassembler()
    bad = b"\x10\x00\x03\x00XXXX" + bytes(8)
    for port in range(4000, 4000 + MAX_ERRORS + 10):
        r.feed(segment(0, bad, sport=port))
    assert len(r.errors) == MAX_ERRORS  # before: one per direction ever broken
    assert r.errors[-1][0][1] == 4000 + MAX_ERRORS + 9
    assert all(e.field_path == "BaseHeader.Signature" for _, e in r.errors)
