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
from packets import Packet, PacketError, StreamSplitter, wire_length

__all__ = ["DecodedPacket", "StreamReport", "decode_file", "decode_pieces", "decode_stream", "read_hex", "resync"]

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
    """What one stream held: its packets, framing errors, gaps and undecoded bytes."""

    name: str
    packets: list[DecodedPacket] = field(default_factory=list)
    errors: list[PacketError] = field(default_factory=list)
    trailing: int = 0
    gaps: list[tuple[int, int]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    skipped: list[tuple[int, int]] = field(default_factory=list)  # resynchronised after a gap


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


def resync(data: bytes, start: int = 0) -> int | None:
    """Index of the first plausible BaseHeader at or after ``start`` (after a capture gap)."""
    at = data.find(b"LIOR", start + 4)
    while at != -1:
        candidate = at - 4
        if data[candidate] == 0x10:
            try:
                wire_length(data[candidate : candidate + 16])
                return candidate
            except PacketError:
                pass
        at = data.find(b"LIOR", at + 1)
    return None


def decode_pieces(
    name: str, pieces: list[tuple[int, bytes]], gaps: list[tuple[int, int]] | None = None
) -> StreamReport:
    """Decode the runs of one stream; after a gap, resynchronise on the next BaseHeader."""
    report = StreamReport(name, gaps=list(gaps or []))
    index = 0
    for number, (base, data) in enumerate(pieces):
        start = 0
        if number:
            found = resync(data)
            start = len(data) if found is None else found
            if start:
                report.skipped.append((base, start))
        splitter = StreamSplitter()
        try:
            for piece in splitter.feed(data[start:]):  # the run at once: on a framing error, nothing
                packet = packets.parse(piece.data, strict=False)
                report.packets.append(DecodedPacket(name, index, base + start + piece.offset, packet, piece.data))
                index += 1
        except PacketError as e:
            # the whole packets before the header that cannot start one are kept, as in any other run
            for offset, raw in _framed_before_error(data, start, base):
                report.packets.append(DecodedPacket(name, index, offset, packets.parse(raw, strict=False), raw))
                index += 1
            report.errors.append(PacketError(e.field_path, base + start + e.offset, e.reason, e.section))
        else:
            report.trailing += splitter.buffered
    return report


def _framed_before_error(data: bytes, start: int, base: int) -> list[tuple[int, bytes]]:
    """(stream offset, bytes) of the whole packets before the first BaseHeader of ``data[start:]``
    that cannot start a packet (framed as :class:`packets.StreamSplitter` frames)."""
    out = []
    at = start
    while len(data) - at >= 16:
        try:
            length = wire_length(data[at : at + 16])
        except PacketError:
            break
        if len(data) - at < length:
            break
        out.append((base + at, data[at : at + length]))
        at += length
    return out


def decode_stream(name: str, data: bytes) -> StreamReport:
    """Cut a TCP byte stream (or one Ping datagram) into packets and decode each (non-strict)."""
    if _looks_like_ping(data):
        report = StreamReport(name)
        report.packets.append(DecodedPacket(name, 0, 0, packets.parse_ping(data, strict=False), data))
        return report
    return decode_pieces(name, [(0, data)])


def _is_capture(head: bytes) -> bool:
    return head[:4] in PCAP_MAGICS


def decode_file(path: str | Path, ports: frozenset[int] = frozenset({1801})) -> Iterator[StreamReport]:
    """Decode a hex file, a raw stream or a capture; one report per stream (per direction)."""
    path = Path(path)
    with path.open("rb") as f:
        head = f.read(4)
    if _is_capture(head):
        from harness.capture.streams import CaptureReading, capture_streams

        reading = CaptureReading()
        for stream in capture_streams(path, ports, reading):
            gaps = [(g.stream_offset, g.length) for g in stream.gaps]
            report = decode_pieces(stream.name, stream.pieces, gaps)
            report.problems.extend(f"{p.reason} at stream offset {p.stream_offset}" for p in stream.problems)
            yield report
        if reading.problems:
            yield StreamReport(path.name, problems=reading.problems)
        return
    raw = path.read_bytes()
    try:
        data = read_hex(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        data = raw
    yield decode_stream(path.name, data)
