"""StreamSplitter: cutting a TCP stream by BaseHeader.PacketSize ([MS-MQMQ] 2.2.19.1)."""

from __future__ import annotations

import struct

import pytest

from packets import PacketError, StreamSplitter, wire_length


def base_header(size: int, flags: int = 0x3, signature: int = 0x524F494C) -> bytes:
    return struct.pack("<BBHLLL", 0x10, 0, flags, signature, size, 0xFFFFFFFF)


def packet(size: int, flags: int = 0x3, fill: int = 0xAB) -> bytes:
    return base_header(size, flags) + bytes([fill]) * (size - 16)


def test_packets_come_out_whole_however_the_stream_is_cut() -> None:
    stream = packet(36, 0x1B) + packet(20) + packet(572, 0xB)
    for cut in range(1, len(stream)):
        s = StreamSplitter()
        out = s.feed(stream[:cut]) + s.feed(stream[cut:])
        assert [p.data for p in out] == [stream[:36], stream[36:56], stream[56:]]
        assert [p.offset for p in out] == [0, 36, 56]
        assert s.needed == 16 and s.remainder() == b""


def test_needed_counts_down_to_the_packet_end() -> None:
    s = StreamSplitter()
    assert s.needed == 16
    s.feed(packet(100)[:10])
    assert s.needed == 6
    s.feed(packet(100)[10:40])
    assert s.needed == 60


def test_usermessage_session_header_follows_packet_size() -> None:
    # BaseHeader.Flags.SH with IN clear: the SessionHeader is not counted in PacketSize.
    assert wire_length(base_header(100, flags=0x13)) == 116
    # SessionAck (IN and SH): PacketSize counts the whole packet ([MS-MQQB] 2.2.6 FRAME 8).
    assert wire_length(base_header(36, flags=0x1B)) == 36


@pytest.mark.parametrize("size", [0, 15, 0x00400001, 0xFFFFFFFF])
def test_packet_size_out_of_range_is_rejected_before_waiting_for_it(size: int) -> None:
    s = StreamSplitter()
    with pytest.raises(PacketError) as e:
        s.feed(base_header(size))
    assert e.value.field_path == "BaseHeader.PacketSize" and e.value.offset == 8
    assert s.buffered == 16  # nothing was allocated from the length field
    with pytest.raises(PacketError):
        s.feed(b"more")


def test_bad_signature_names_its_stream_offset() -> None:
    s = StreamSplitter()
    s.feed(packet(20))
    with pytest.raises(PacketError) as e:
        s.feed(base_header(20, signature=0x11223344))
    assert e.value.field_path == "BaseHeader.Signature" and e.value.offset == 24
