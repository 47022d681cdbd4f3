"""Decoding inputs a user hands the harness: hex dumps, raw session streams and captures.

The edge between files and the codec: reads a hex file, a raw TCP byte stream or a pcap/pcapng
capture (TCP payloads on the MSMQ ports, reassembled per direction), cuts each stream into
packets by [MS-MQMQ] 2.2.19.1 BaseHeader.PacketSize and decodes them non-strictly, so every
problem is reported with its stream offset, field path and byte offset, and nothing stops the
rest of the input from being decoded.  Ping datagrams ([MS-MQQB] 2.2.7) are recognised in hex
input.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import packets
from packets import Packet, PacketError, StreamSplitter

__all__ = ["DecodedPacket", "StreamReport", "decode_file", "decode_stream", "read_hex"]

PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1",
    b"\xa1\xb2\xc3\xd4",
    b"\x4d\x3c\xb2\xa1",
    b"\xa1\xb2\x3c\x4d",
    b"\x0a\x0d\x0d\x0a",
}
_HEX_LINE = re.compile(r"^[0-9A-Fa-f\s]*$")


@dataclass
class DecodedPacket:
    """A packet and where it was found: stream name, index and stream offset."""

    stream: str
    index: int
    offset: int
    packet: Packet
    data: bytes


@dataclass
class StreamReport:
    """What one stream held: its packets, a fatal framing error, and undecoded trailing bytes."""

    name: str
    packets: list[DecodedPacket] = field(default_factory=list)
    error: PacketError | None = None
    trailing: int = 0
    gaps: list[tuple[int, int]] = field(default_factory=list)


def read_hex(text: str) -> bytes:
    """Bytes of a hex dump: whitespace-separated hex digits; '#' starts a comment."""
    digits: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0]
        if not _HEX_LINE.match(line):
            raise ValueError(f"line {number}: not hex: {line.strip()[:40]!r}")
        digits.append("".join(line.split()))
    joined = "".join(digits)
    if len(joined) % 2:
        raise ValueError("odd number of hex digits")
    return bytes.fromhex(joined)


def _looks_like_ping(data: bytes) -> bool:
    try:
        packets.parse_ping(data, strict=True)
    except PacketError:
        return False
    return True


def decode_stream(name: str, data: bytes, gaps: list[tuple[int, int]] | None = None) -> StreamReport:
    """Cut a TCP byte stream into packets and decode each (non-strict)."""
    report = StreamReport(name, gaps=list(gaps or []))
    if _looks_like_ping(data):
        ping = packets.parse_ping(data, strict=False)
        report.packets.append(DecodedPacket(name, 0, 0, ping, data))
        return report
    splitter = StreamSplitter()
    try:
        for index, piece in enumerate(splitter.feed(data)):
            packet = packets.parse(piece.data, strict=False)
            report.packets.append(DecodedPacket(name, index, piece.offset, packet, piece.data))
    except PacketError as e:
        report.error = e
    report.trailing = len(data) - splitter.offset
    return report


def _is_capture(head: bytes) -> bool:
    return head[:4] in PCAP_MAGICS


def decode_file(path: str | Path, ports: frozenset[int] = frozenset({1801})) -> Iterator[StreamReport]:
    """Decode a hex file, a raw stream or a capture; one report per stream (per direction)."""
    path = Path(path)
    with path.open("rb") as f:
        head = f.read(4)
    if _is_capture(head):
        from harness.capture.sessions import capture_streams

        for stream in capture_streams(path, ports):
            yield decode_stream(stream.name, stream.data, stream.gaps)
        return
    raw = path.read_bytes()
    try:
        data = read_hex(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        data = raw
    yield decode_stream(path.name, data)
