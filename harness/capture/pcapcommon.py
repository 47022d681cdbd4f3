"""What the capture file readers share: the records and problems they yield, the file header, the
bounded read-ahead window, the sanity limits, and the one plausibility test of each format's
record header -- a classic pcap record header (libpcap format: ts_sec, ts_usec or ts_nsec,
incl_len, orig_len) and a pcapng Block Total Length (draft-ietf-opsawg-pcapng 3.1) -- used by the
readers (:mod:`harness.capture.pcap`, :mod:`harness.capture.pcapng`), their resynchronisation and
the pipeline's split boundaries (:mod:`harness.pipeline.splits`).

Layer: ``harness.capture`` (standard library only).
"""

from __future__ import annotations

import struct
from typing import BinaryIO, NamedTuple

__all__ = [
    "MAX_BLOCK",
    "MAX_CAPLEN",
    "MAX_SKIP_BLOCK",
    "MAX_WIRELEN",
    "RESYNC_CHAIN",
    "RESYNC_CHAIN_ANCHORED",
    "RESYNC_TS_WINDOW",
    "CaptureProblem",
    "Interface",
    "PcapHeader",
    "ReadWindow",
    "Record",
    "RecordView",
    "caplen_limit",
    "fraction_limit",
    "new_record",
    "plausible_block_length",
    "plausible_record_header",
    "record_header_fault",
]

#: Largest captured length accepted for one packet (libpcap's own MAXIMUM_SNAPLEN is 262144).
MAX_CAPLEN = 256 * 1024
#: Largest pcapng block read into memory (a packet block: MAX_CAPLEN plus room for options).
MAX_BLOCK = MAX_CAPLEN + 64 * 1024
#: Largest pcapng block of an unknown or non-packet type that is skipped (read and discarded in
#: bounded chunks, never held in memory).
MAX_SKIP_BLOCK = 64 * 1024 * 1024
#: Timestamps of a resynchronisation candidate must lie within this many seconds of the last good
#: record (and of each other along the verification chain).
RESYNC_TS_WINDOW = 86400
#: Largest wire length a resynchronisation candidate may announce (covers TSO/GRO super-frames).
MAX_WIRELEN = 16 * 1024 * 1024
#: Number of consecutive plausible record headers that confirm a resynchronisation point: two when
#: the timestamp of the last good record anchors the search, three without such an anchor.
RESYNC_CHAIN = 3
RESYNC_CHAIN_ANCHORED = 2

_CHUNK = 1 << 20

_U32 = {"<": struct.Struct("<I"), ">": struct.Struct(">I")}


class Record(NamedTuple):
    """One captured packet."""

    offset: int  #: file offset of the record header (classic pcap) or of the block (pcapng)
    ts: float  #: seconds since the epoch (0.0 for a pcapng Simple Packet Block, which has none)
    linktype: int  #: LINKTYPE_* value of the interface
    data: bytes  #: the captured bytes
    wirelen: int  #: length of the packet on the wire
    interface: int  #: pcapng interface id (always 0 in classic pcap)


new_record = tuple.__new__  # Record's fields without NamedTuple's Python-level __new__


class CaptureProblem(NamedTuple):
    """Bad input found at ``offset`` of the file at ``path``."""

    path: str
    offset: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path or '<stream>'}@{self.offset}: {self.reason}"


class Interface(NamedTuple):
    """A pcapng Interface Description Block (classic pcap has one implicit interface)."""

    linktype: int
    snaplen: int
    ts_unit: float  #: seconds per timestamp tick (``if_tsresol``; 1e-6 by default)
    ts_offset: int  #: seconds added to every timestamp (``if_tsoffset``)


class PcapHeader(NamedTuple):
    """What the file header says. ``length`` is the size of the file header (the SHB in pcapng)."""

    format: str  #: "pcap" or "pcapng"
    byteorder: str  #: "<" (little-endian) or ">" (big-endian)
    linktype: int  #: of the (first) interface; -1 in pcapng when no IDB precedes the first packet
    snaplen: int
    ts_unit: float  #: seconds per tick of the timestamp fraction (1e-6, 1e-9; pcapng: if_tsresol)
    version: tuple[int, int]
    length: int
    interfaces: tuple[Interface, ...] = ()  #: pcapng IDBs found directly after the SHB


#: what :func:`harness.capture.pcapfile.iter_record_views` yields for a record: (offset, ts,
#: linktype, buffer, start, stop), the captured bytes being ``buffer[start:stop]``
RecordView = tuple[int, float, int, bytes, int, int]


class ReadWindow:
    """A bounded read-ahead window over a stream, tracking absolute file offsets."""

    __slots__ = ("base", "buf", "eof", "pos", "stream")

    def __init__(self, stream: BinaryIO, base: int) -> None:
        self.stream = stream
        self.buf = b""
        self.pos = 0
        self.base = base  # file offset of buf[0]
        self.eof = False

    @property
    def offset(self) -> int:
        return self.base + self.pos

    def fill(self, n: int) -> bool:
        """Make at least ``n`` bytes available at ``pos`` (``n`` is always bounded by callers)."""
        have = len(self.buf) - self.pos
        if have >= n:
            return True
        if self.eof:
            return False
        parts = [self.buf[self.pos :]]
        self.base += self.pos
        self.pos = 0
        while have < n:
            chunk = self.stream.read(max(_CHUNK, n - have))
            if not chunk:
                self.eof = True
                break
            parts.append(chunk)
            have += len(chunk)
        self.buf = b"".join(parts)
        return have >= n

    def skip(self, n: int) -> int:
        """Advance ``n`` bytes without holding them; return how many were actually skipped."""
        done = 0
        while done < n:
            if not self.fill(1):
                break
            step = min(n - done, len(self.buf) - self.pos)
            self.pos += step
            done += step
        return done

    def remaining_hint(self) -> int:
        return len(self.buf) - self.pos

    def peek(self, offset: int, n: int) -> bytes | None:
        """The ``n`` bytes at file ``offset`` (at or after the window's start), fewer where the file
        ends, without moving the window or holding what lies between: a seek to them and back.
        None when the stream cannot seek."""
        end = self.base + len(self.buf)
        if offset + n <= end:
            start = offset - self.base
            return self.buf[start : start + n]
        if self.eof:
            return self.buf[offset - self.base :] if offset < end else b""
        try:
            if not self.stream.seekable():
                return None
            here = self.stream.tell()
            self.stream.seek(here + offset - end)
            try:
                return self.stream.read(n)
            finally:
                self.stream.seek(here)
        except (OSError, ValueError):
            return None


# --------------------------------------------------------------------------------------------
# the plausibility of a record header (classic pcap) and of a block length (pcapng)


def caplen_limit(snaplen: int) -> int:
    """The largest captured length a record may have: the snaplen, within the sanity limit."""
    return min(snaplen, MAX_CAPLEN) if snaplen else MAX_CAPLEN


def fraction_limit(ts_unit: float) -> int:
    """What a timestamp fraction stays below: one second in microseconds or nanoseconds."""
    return 1_000_000_000 if ts_unit < 1e-6 else 1_000_000


def record_header_fault(frac: int, caplen: int, wirelen: int, snaplen: int, frac_max: int) -> str | None:
    """Why the reader cannot take a classic-pcap record header as it stands, or None: its caplen
    above the sanity limit or the snaplen (:func:`caplen_limit`) or its wire length, or its
    timestamp fraction not below one second (``frac_max``, :func:`fraction_limit`).  The one test
    of the reader (whose loop over sound records inlines it) and of the pipeline's split planning."""
    if caplen > MAX_CAPLEN:
        return f"caplen {caplen} above the {MAX_CAPLEN}-byte sanity limit"
    if snaplen and caplen > snaplen:
        return f"caplen {caplen} above snaplen {snaplen}"
    if caplen > wirelen:
        return f"caplen {caplen} above wire length {wirelen}"
    if frac >= frac_max:
        return f"timestamp fraction {frac} not below one second"
    return None


def plausible_record_header(
    sec: int, frac: int, caplen: int, wirelen: int, frac_max: int, limit: int, prev_sec: int | None
) -> bool:
    """Is (ts_sec, ts_frac, caplen, wirelen) a plausible classic-pcap record header?  Its fraction
    is below one second (``frac_max``: 10**6 or 10**9), 0 < wirelen <= MAX_WIRELEN, caplen <=
    wirelen, caplen <= ``limit`` (the snaplen, or the sanity limit) and its seconds lie within
    RESYNC_TS_WINDOW of ``prev_sec`` (the previous record's, when known).  The one test of the
    reader's resynchronisation and of the pipeline's split boundaries (harness.pipeline.splits)."""
    return (
        frac < frac_max
        and 0 < wirelen <= MAX_WIRELEN
        and caplen <= wirelen
        and caplen <= limit
        and (prev_sec is None or abs(sec - prev_sec) <= RESYNC_TS_WINDOW)
    )


def plausible_block_length(blen: int) -> bool:
    """Can ``blen`` be a pcapng Block Total Length the reader holds: at least 12 (type, two
    lengths), a multiple of 4, within :data:`MAX_BLOCK`?  The one test of the pcapng reader's
    resynchronisation and of the pipeline's split boundaries."""
    return 12 <= blen <= MAX_BLOCK and not blen % 4
