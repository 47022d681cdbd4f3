"""Streaming reader for capture files: renders the libpcap file format (classic pcap:
:mod:`harness.capture.pcap`) and the IETF pcapng draft (draft-ietf-opsawg-pcapng:
:mod:`harness.capture.pcapng`, a handler per block type); what both share -- records, problems,
the file header, the read window, the sanity limits and the plausibility tests -- is in
:mod:`harness.capture.pcapcommon`, where callers import them from.  This module picks the format.

The reader never loads a whole file and never allocates from a length field before checking it
against what the file can hold and against a sanity limit; bad input never raises out of
:func:`iter_records` but is yielded as a :class:`CaptureProblem` naming the byte offset, after
which the reader resynchronises on the next plausible record header (classic pcap) or the next
block whose type and repeated trailing length agree (pcapng), so that one damaged record does not
cost the rest of the file.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import BinaryIO

from harness.capture.pcap import find_pcap_boundary, iter_pcap, parse_global_header
from harness.capture.pcapcommon import (
    CaptureProblem,
    PcapHeader,
    ReadWindow,
    Record,
    RecordView,
)
from harness.capture.pcapng import SHB_TYPE, find_block_boundary, iter_pcapng, read_section_header

__all__ = [
    "find_record_boundary",
    "iter_record_views",
    "iter_records",
    "read_header",
]

_U32LE = struct.Struct("<I")


def read_header(stream: BinaryIO) -> PcapHeader | CaptureProblem:
    """Read the file header at the stream's current position.

    For pcapng this is the Section Header Block plus the Interface Description Blocks that
    directly follow it (within the first 64 KiB). The stream is left at an unspecified position.
    """
    head = stream.read(64 * 1024)
    if len(head) >= 4 and _U32LE.unpack_from(head, 0)[0] == SHB_TYPE:
        res = read_section_header(head, stream)
    else:
        res = parse_global_header(head)
    if isinstance(res, str):
        return CaptureProblem("", 0, res)
    return res


def find_record_boundary(
    buf: bytes, header: PcapHeader, prev_ts: int | None = None, at_eof: bool = False
) -> int | None:
    """Offset in ``buf`` of the first plausible classic-pcap record header, or None.

    The same test the reader uses to resynchronise: RESYNC_CHAIN consecutive plausible headers
    (:func:`plausible_record_header`), so ``buf`` should hold a few records' worth of bytes (for
    example 3 * (16 + snaplen)); pass ``at_eof`` when ``buf`` runs to the end of the file. For
    pcapng, the offset of the first block whose type is known and whose leading and trailing
    lengths agree.
    """
    if header.format == "pcapng":
        return find_block_boundary(buf, header.byteorder, 0)
    return find_pcap_boundary(buf, header, prev_ts, at_eof)


def iter_records(
    stream: BinaryIO,
    *,
    start_offset: int = 0,
    path: str = "",
    header: PcapHeader | None = None,
    end_offset: int | None = None,
) -> Iterator[Record | CaptureProblem]:
    """Yield every record of a capture, and a :class:`CaptureProblem` for every bad spot.

    ``start_offset`` is the file offset of the stream's current position (offsets in the output
    are file offsets). Without ``header`` the stream must be at the file header. With ``header``
    (from :func:`read_header`) the stream must be at a record/block boundary, for example one
    found by :func:`find_record_boundary` when splitting a file into byte ranges; records are
    then yielded until the first one starting at or after ``end_offset``.
    """
    rd = ReadWindow(stream, start_offset)
    if header is None:
        if not rd.fill(24) and not rd.fill(4):
            yield CaptureProblem(path, start_offset, f"truncated file header ({rd.remaining_hint()} bytes)")
            return
        head = rd.buf[rd.pos : rd.pos + 24]
        if _U32LE.unpack_from(head, 0)[0] == SHB_TYPE:
            yield from iter_pcapng(rd, path, end_offset, None)
            return
        parsed = parse_global_header(head)
        if isinstance(parsed, str):
            yield CaptureProblem(path, start_offset, parsed)
            return
        rd.pos += 24
        header = parsed
    if header.format == "pcapng":
        yield from iter_pcapng(rd, path, end_offset, header)
    else:
        yield from iter_pcap(rd, header, path, end_offset)


def iter_record_views(
    stream: BinaryIO, *, start_offset: int, header: PcapHeader, path: str = "", end_offset: int | None = None
) -> Iterator[RecordView | CaptureProblem]:
    """:func:`iter_records` with a header given, each record as a :data:`RecordView` --
    ``(offset, ts, linktype, buffer, start, stop)``, its captured bytes ``buffer[start:stop]`` --
    rather than a :class:`Record`: the same records and problems, without copying the bytes out
    of the read window (for a pass that looks at a few header bytes of each frame)."""
    if header.format != "pcap":
        for item in iter_records(stream, start_offset=start_offset, path=path, header=header, end_offset=end_offset):
            if isinstance(item, Record):
                yield (item.offset, item.ts, item.linktype, item.data, 0, len(item.data))
            else:
                yield item
        return
    yield from iter_pcap(ReadWindow(stream, start_offset), header, path, end_offset, views=True)
