"""Streaming reader for capture files: renders the libpcap file format (classic pcap: 24-byte
global header, 16-byte record headers, both byte orders, microsecond magic 0xA1B2C3D4 and
nanosecond magic 0xA1B23C4D) and the IETF pcapng draft (draft-ietf-opsawg-pcapng: Section Header
Block in either byte order, Interface Description Block with its link type and ``if_tsresol`` /
``if_tsoffset`` options, Enhanced Packet Block, Simple Packet Block, the obsolete Packet Block;
every other block type is skipped by its length). The reader never loads a whole file and never
allocates from a length field before checking it against what the file can hold and against a
sanity limit; bad input never raises out of :func:`iter_records` but is yielded as a
:class:`CaptureProblem` naming the byte offset, after which the reader resynchronises on the next
plausible record header (classic pcap) or the next block whose type and repeated trailing length
agree (pcapng), so that one damaged record does not cost the rest of the file. A pcapng block of
any type, known or not, is taken by its Block Total Length only when that length is plausible
(at least 12, a multiple of 4, within the file, repeated at the block's end; a block too long to
hold is checked by seeking to its end before it is skipped), and an Interface Description Block
whose option overruns the block keeps its interface (link type and snaplen are in its fixed part).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO, NamedTuple

__all__ = [
    "MAX_CAPLEN",
    "CaptureProblem",
    "Interface",
    "PcapHeader",
    "Record",
    "find_record_boundary",
    "iter_record_views",
    "iter_records",
    "plausible_record_header",
    "read_header",
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

_PCAP_MAGIC_US = 0xA1B2C3D4
_PCAP_MAGIC_NS = 0xA1B23C4D
_SHB_TYPE = 0x0A0D0D0A
_BYTE_ORDER_MAGIC = 0x1A2B3C4D
_IDB, _PB, _SPB, _EPB = 1, 2, 3, 6
#: Block types of the pcapng draft (and common vendor blocks) accepted as resync points.
_KNOWN_BLOCKS = frozenset({_SHB_TYPE, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0x0BAD, 0x40000BAD})

# Cheap pre-filter for resynchronisation candidates (checked in C by the regex engine): the
# timestamp fraction is below 10**9 and caplen is at most MAX_CAPLEN (0x40000).
_CANDIDATE = {
    "<": re.compile(rb"(?=[\s\S]{7}[\x00-\x3b][\s\S]{2}[\x00-\x04]\x00)"),
    ">": re.compile(rb"(?=[\s\S]{4}[\x00-\x3b][\s\S]{3}\x00[\x00-\x04])"),
}
_U32 = {"<": struct.Struct("<I"), ">": struct.Struct(">I")}
_REC = {"<": struct.Struct("<IIII"), ">": struct.Struct(">IIII")}
_GLOBAL = {"<": struct.Struct("<IHHiIII"), ">": struct.Struct(">IHHiIII")}
_BLOCK_HDR = {"<": struct.Struct("<II"), ">": struct.Struct(">II")}
_SHB_BODY = {"<": struct.Struct("<IHHq"), ">": struct.Struct(">IHHq")}
_IDB_BODY = {"<": struct.Struct("<HHI"), ">": struct.Struct(">HHI")}
_EPB_BODY = {"<": struct.Struct("<IIIII"), ">": struct.Struct(">IIIII")}
_PB_BODY = {"<": struct.Struct("<HHIIII"), ">": struct.Struct(">HHIIII")}
_OPT = {"<": struct.Struct("<HH"), ">": struct.Struct(">HH")}
_Q = {"<": struct.Struct("<q"), ">": struct.Struct(">q")}


class Record(NamedTuple):
    """One captured packet."""

    offset: int  #: file offset of the record header (classic pcap) or of the block (pcapng)
    ts: float  #: seconds since the epoch (0.0 for a pcapng Simple Packet Block, which has none)
    linktype: int  #: LINKTYPE_* value of the interface
    data: bytes  #: the captured bytes
    wirelen: int  #: length of the packet on the wire
    interface: int  #: pcapng interface id (always 0 in classic pcap)


_new_record = tuple.__new__  # Record's fields without NamedTuple's Python-level __new__


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


class _Reader:
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
# headers


def _parse_pcap_global(head: bytes) -> PcapHeader | str:
    if len(head) < 4:
        return "truncated file header"
    magic_le = _U32["<"].unpack_from(head, 0)[0]
    if magic_le in (_PCAP_MAGIC_US, _PCAP_MAGIC_NS):
        bo = "<"
    elif _U32[">"].unpack_from(head, 0)[0] in (_PCAP_MAGIC_US, _PCAP_MAGIC_NS):
        bo = ">"
    else:
        return f"bad magic 0x{head[:4].hex()}"
    if len(head) < 24:
        return "truncated pcap global header"
    magic, vmaj, vmin, _zone, _sigfigs, snaplen, network = _GLOBAL[bo].unpack_from(head, 0)
    unit = 1e-9 if magic == _PCAP_MAGIC_NS else 1e-6
    linktype = network & 0x03FFFFFF  # upper bits carry FCS information
    iface = Interface(linktype, snaplen, unit, 0)
    return PcapHeader("pcap", bo, linktype, snaplen, unit, (vmaj, vmin), 24, (iface,))


def _shb_byteorder(head: bytes) -> str | None:
    if len(head) < 12:
        return None
    if _U32["<"].unpack_from(head, 8)[0] == _BYTE_ORDER_MAGIC:
        return "<"
    if _U32[">"].unpack_from(head, 8)[0] == _BYTE_ORDER_MAGIC:
        return ">"
    return None


def _parse_idb(body: bytes, bo: str) -> tuple[Interface | None, list[str]]:
    """The interface an IDB body declares and the problems of its options.

    Link type and snaplen sit in the fixed part, so an option that runs past the options area
    costs only itself (and the options after it, which can no longer be found): the interface is
    kept with what the options before it said. None only when the fixed part itself is missing.
    """
    if len(body) < 8:
        return None, ["interface description block too short"]
    linktype, _res, snaplen = _IDB_BODY[bo].unpack_from(body, 0)
    unit, ts_offset = 1e-6, 0
    problems: list[str] = []
    opt = _OPT[bo]
    p = 8
    while p + 4 <= len(body):
        code, olen = opt.unpack_from(body, p)
        p += 4
        if code == 0:
            break
        if p + olen > len(body):
            problems.append(
                f"option {code} of the interface description block claims {olen} bytes, "
                f"{len(body) - p} left: option ignored, interface kept"
            )
            break
        if code == 9 and olen >= 1:
            v = body[p]
            unit = 2.0 ** -(v & 0x7F) if v & 0x80 else 10.0**-v
        elif code == 14 and olen >= 8:
            ts_offset = _Q[bo].unpack_from(body, p)[0]
        p += (olen + 3) & ~3
    return Interface(linktype, snaplen, unit, ts_offset), problems


#: Stands in for an interface whose block is too short to declare one, so that the interface ids
#: of the packets after it still name the right interfaces.
_NO_INTERFACE = Interface(-1, 0, 1e-6, 0)


def read_header(stream: BinaryIO) -> PcapHeader | CaptureProblem:
    """Read the file header at the stream's current position.

    For pcapng this is the Section Header Block plus the Interface Description Blocks that
    directly follow it (within the first 64 KiB). The stream is left at an unspecified position.
    """
    head = stream.read(64 * 1024)
    if len(head) >= 4 and _U32["<"].unpack_from(head, 0)[0] == _SHB_TYPE:
        bo = _shb_byteorder(head)
        if bo is not None and len(head) == 64 * 1024:  # a section header longer than the first read
            blen = _U32[bo].unpack_from(head, 4)[0]
            if len(head) < blen <= MAX_BLOCK:
                head += stream.read(blen)
        res = _parse_shb_and_idbs(head)
    else:
        res = _parse_pcap_global(head)
    if isinstance(res, str):
        return CaptureProblem("", 0, res)
    return res


def _parse_shb_and_idbs(head: bytes) -> PcapHeader | str:
    bo = _shb_byteorder(head)
    if bo is None:
        return "bad pcapng byte-order magic" if len(head) >= 12 else "truncated section header block"
    blen = _U32[bo].unpack_from(head, 4)[0]
    if blen < 28 or blen % 4 or blen > MAX_BLOCK:
        return f"section header block length {blen} invalid"
    if len(head) < blen:
        return "truncated section header block"
    _m, vmaj, vmin, _slen = _SHB_BODY[bo].unpack_from(head, 8)
    ifaces: list[Interface] = []
    p = blen
    hdr = _BLOCK_HDR[bo]
    while p + 8 <= len(head):
        btype, l2 = hdr.unpack_from(head, p)
        if btype != _IDB or l2 < 12 or l2 % 4 or p + l2 > len(head):
            break
        if _U32[bo].unpack_from(head, p + l2 - 4)[0] != l2:
            break  # the reader resynchronises here: the interfaces after it are not declared yet
        idb, _problems = _parse_idb(head[p + 8 : p + l2 - 4], bo)  # the reader reports the problems
        ifaces.append(idb or _NO_INTERFACE)  # as the reader numbers them
        p += l2
    first = ifaces[0] if ifaces else Interface(-1, 0, 1e-6, 0)
    return PcapHeader("pcapng", bo, first.linktype, first.snaplen, first.ts_unit, (vmaj, vmin), blen, tuple(ifaces))


# --------------------------------------------------------------------------------------------
# classic pcap


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


def _plausible_chain(
    buf: bytes | memoryview,
    p: int,
    bo: str,
    snaplen: int,
    frac_max: int,
    prev_ts: int | None,
    at_eof: bool,
) -> bool:
    """Is ``p`` the start of a run of plausible record headers in ``buf``?

    A record header is plausible when its fraction is below one second, 0 < wirelen <=
    MAX_WIRELEN, caplen <= wirelen, caplen <= snaplen (or the sanity limit when snaplen is 0) and
    its seconds lie within RESYNC_TS_WINDOW of the previous record's. RESYNC_CHAIN consecutive
    headers must pass (RESYNC_CHAIN_ANCHORED when ``prev_ts`` is known), unless the chain ends
    exactly at the end of ``buf`` and ``at_eof`` says that ``buf`` ends where the file does.
    """
    rec = _REC[bo]
    limit = min(snaplen, MAX_CAPLEN) if snaplen else MAX_CAPLEN
    n = len(buf)
    q = p
    ts_ref = prev_ts
    for _ in range(RESYNC_CHAIN if prev_ts is None else RESYNC_CHAIN_ANCHORED):
        if q == n and at_eof and q > p:
            return True
        if q + 16 > n:
            return False
        sec, frac, caplen, wirelen = rec.unpack_from(buf, q)
        if not plausible_record_header(sec, frac, caplen, wirelen, frac_max, limit, ts_ref):
            return False
        ts_ref = sec
        q += 16 + caplen
    return True


def find_record_boundary(
    buf: bytes, header: PcapHeader, prev_ts: int | None = None, at_eof: bool = False
) -> int | None:
    """Offset in ``buf`` of the first plausible classic-pcap record header, or None.

    The same test the reader uses to resynchronise (see :func:`_plausible_chain`): RESYNC_CHAIN
    consecutive plausible headers, so ``buf`` should hold a few records' worth of bytes (for
    example 3 * (16 + snaplen)); pass ``at_eof`` when ``buf`` runs to the end of the file. For
    pcapng, the offset of the first block whose type is known and whose leading and trailing
    lengths agree.
    """
    if header.format == "pcapng":
        return _find_block_boundary(buf, header.byteorder, 0)
    frac_max = 1_000_000_000 if header.ts_unit < 1e-6 else 1_000_000
    return _scan(buf, 0, len(buf) - 15, header.byteorder, header.snaplen, frac_max, prev_ts, at_eof)


def _scan(
    buf: bytes,
    start: int,
    stop: int,
    bo: str,
    snaplen: int,
    frac_max: int,
    prev_ts: int | None,
    at_eof: bool,
) -> int | None:
    """First p in [start, stop) where :func:`_plausible_chain` holds."""
    for m in _CANDIDATE[bo].finditer(buf, start, min(len(buf), stop + 15)):
        p = m.start()
        if p >= stop:
            break
        if _plausible_chain(buf, p, bo, snaplen, frac_max, prev_ts, at_eof):
            return p
    return None


def _followed_by_record(rd: _Reader, caplen: int, bo: str, frac_max: int, sec: int) -> bool:
    """Does a plausible record header (or the end of the file) follow a record of ``caplen``?"""
    rd.fill(32 + caplen)
    buf, nxt = rd.buf, rd.pos + 16 + caplen
    if rd.eof and nxt == len(buf):
        return True
    if nxt + 16 > len(buf):
        return False
    sec2, frac2, caplen2, wirelen2 = _REC[bo].unpack_from(buf, nxt)
    return plausible_record_header(sec2, frac2, caplen2, wirelen2, frac_max, MAX_CAPLEN, sec)


#: what :func:`iter_record_views` yields for a record: (offset, ts, linktype, buffer, start, stop),
#: the captured bytes being ``buffer[start:stop]``
RecordView = tuple[int, float, int, bytes, int, int]


def _iter_pcap(
    rd: _Reader, hdr: PcapHeader, path: str, end: int | None, views: bool = False
) -> Iterator[Any]:
    bo = hdr.byteorder
    rec = _REC[bo]
    unpack = rec.unpack_from
    unit = hdr.ts_unit
    linktype = hdr.linktype
    snaplen = hdr.snaplen
    limit = min(snaplen, MAX_CAPLEN) if snaplen else MAX_CAPLEN
    frac_max = 1_000_000_000 if unit < 1e-6 else 1_000_000
    prev_sec: int | None = None
    while True:
        if end is not None and rd.offset >= end:
            return
        # the common case first: sound records wholly in the window, taken without touching the
        # reader (anything else -- a record to fill for, a header to report -- goes the long way)
        buf, pos, base = rd.buf, rd.pos, rd.base
        n = len(buf)
        stop = n if end is None else min(n, end - base)
        while pos < stop and pos + 16 <= n:
            sec, frac, caplen, wirelen = unpack(buf, pos)
            nxt = pos + 16 + caplen
            if caplen > limit or caplen > wirelen or frac >= frac_max or nxt > n:
                break
            prev_sec = sec
            if views:
                yield (base + pos, sec + frac * unit, linktype, buf, pos + 16, nxt)
            else:
                yield _new_record(Record, (base + pos, sec + frac * unit, linktype, buf[pos + 16 : nxt], wirelen, 0))
            pos = nxt
        rd.pos = pos
        if end is not None and rd.offset >= end:
            return
        if not rd.fill(16):
            if rd.remaining_hint():
                yield CaptureProblem(path, rd.offset, f"truncated record header ({rd.remaining_hint()} of 16 bytes)")
            return
        buf, pos = rd.buf, rd.pos
        sec, frac, caplen, wirelen = unpack(buf, pos)
        reason = None
        if caplen > MAX_CAPLEN:
            reason = f"caplen {caplen} above the {MAX_CAPLEN}-byte sanity limit"
        elif snaplen and caplen > snaplen:
            reason = f"caplen {caplen} above snaplen {snaplen}"
            if caplen <= wirelen and frac < frac_max and _followed_by_record(rd, caplen, bo, frac_max, sec):
                # a header that understates the snapshot length (common with TSO/jumbo frames):
                # the record is sound, so report it and keep it rather than lose it
                yield CaptureProblem(path, rd.offset, reason + " (record kept: the next record header follows)")
                reason = None
        elif caplen > wirelen:
            reason = f"caplen {caplen} above wire length {wirelen}"
        elif frac >= frac_max:
            reason = f"timestamp fraction {frac} not below one second"
        if reason is None:
            if len(buf) - pos < 16 + caplen and not rd.fill(16 + caplen):
                yield CaptureProblem(
                    path, rd.offset, f"truncated record data ({rd.remaining_hint() - 16} of {caplen} bytes)"
                )
                return
            buf, pos = rd.buf, rd.pos
            off = rd.base + pos
            rd.pos = pos + 16 + caplen
            prev_sec = sec
            if views:
                yield (off, sec + frac * unit, linktype, buf, pos + 16, pos + 16 + caplen)
            else:
                yield Record(off, sec + frac * unit, linktype, buf[pos + 16 : pos + 16 + caplen], wirelen, 0)
            continue
        yield CaptureProblem(path, rd.offset, reason)
        # resynchronise: scan forward for a run of plausible record headers
        bad_at = rd.offset
        rd.pos += 1
        window = RESYNC_CHAIN * (16 + limit)
        while True:
            rd.fill(2 * window)
            buf, pos = rd.buf, rd.pos
            # keep a full verification window ahead of every candidate unless the file ends
            scan_end = len(buf) - 15 if rd.eof else len(buf) - window
            found = _scan(buf, pos, scan_end, bo, snaplen, frac_max, prev_sec, rd.eof)
            if found is not None:
                rd.pos = found
                msg = f"resynchronised at offset {rd.offset}, skipped {rd.offset - bad_at} bytes"
                yield CaptureProblem(path, bad_at, msg)
                break
            if rd.eof:
                skipped = len(buf) - pos
                rd.pos = len(buf)
                yield CaptureProblem(path, bad_at, f"no plausible record header in the remaining {skipped + 1} bytes")
                return
            rd.pos = max(pos, scan_end)


# --------------------------------------------------------------------------------------------
# pcapng


def _block_ok(buf: bytes | memoryview, p: int, bo: str) -> bool:
    if p + 12 > len(buf):
        return False
    btype, blen = _BLOCK_HDR[bo].unpack_from(buf, p)
    if btype == _SHB_TYPE:
        b2 = _shb_byteorder(bytes(buf[p : p + 12]))
        if b2 is None:
            return False
        btype, blen = _BLOCK_HDR[b2].unpack_from(buf, p)
        bo = b2
    if btype not in _KNOWN_BLOCKS or blen < 12 or blen % 4 or blen > MAX_BLOCK or p + blen > len(buf):
        return False
    return bool(_U32[bo].unpack_from(buf, p + blen - 4)[0] == blen)


_BLOCK_CANDIDATE = {
    bo: re.compile(b"(?=" + b"|".join(re.escape(struct.pack(bo + "I", t)) for t in sorted(_KNOWN_BLOCKS)) + b")")
    for bo in "<>"
}


def _find_block_boundary(buf: bytes, bo: str, start: int, stop: int | None = None) -> int | None:
    """First p in [start, stop) where a known block type sits with agreeing lengths."""
    stop = len(buf) - 11 if stop is None else stop
    for m in _BLOCK_CANDIDATE[bo].finditer(buf, start, min(len(buf), stop + 4)):
        p = m.start()
        if p >= stop:
            break
        if _block_ok(buf, p, bo):
            return p
    return None


@dataclass(slots=True)
class _Section:
    """Where a pcapng reader is: the byte order of its section, the interfaces declared so far
    (an unreadable one as a placeholder, so that numbering stays aligned), whether a Section
    Header Block has begun a section."""

    bo: str
    ifaces: list[Interface]
    started: bool


BlockItems = Record | CaptureProblem | list[Record | CaptureProblem] | None


def _on_section_header(section: _Section, btype: int, body: bytes, off: int, path: str) -> BlockItems:
    """Section Header Block: a new section, with no interfaces yet (its byte order is read with
    the block's header, :func:`_block_header`)."""
    if len(body) < 16:
        return CaptureProblem(path, off, "section header block too short")
    section.started = True
    section.ifaces = []
    return None


def _on_interface(section: _Section, btype: int, body: bytes, off: int, path: str) -> BlockItems:
    """Interface Description Block: one more interface, with the problems of its options."""
    idb, problems = _parse_idb(body, section.bo)
    section.ifaces.append(idb or _NO_INTERFACE)  # keep interface numbering aligned
    return [CaptureProblem(path, off, problem) for problem in problems] or None


def _block_header(rd: _Reader, section: _Section) -> tuple[int, int, str | None]:
    """(Block Type, Block Total Length, what is wrong with them or None) of the block at the
    reader; a Section Header Block sets the section's byte order from its Byte-Order Magic."""
    buf, pos = rd.buf, rd.pos
    btype = _U32[section.bo].unpack_from(buf, pos)[0]
    reason: str | None = None
    if btype == _SHB_TYPE or _U32["<"].unpack_from(buf, pos)[0] == _SHB_TYPE:
        b2 = _shb_byteorder(buf[pos : pos + 12])
        if b2 is None:
            reason = "bad pcapng byte-order magic"
        else:
            section.bo = b2
            btype = _SHB_TYPE
    elif not section.started:
        reason = f"bad magic 0x{buf[pos : pos + 4].hex()}"
    blen = _U32[section.bo].unpack_from(buf, pos + 4)[0]
    if reason is None and (blen < 12 or blen % 4):
        reason = f"block length {blen} invalid"
    return btype, blen, reason


def _skip_other_block(rd: _Reader, btype: int, blen: int, bo: str) -> tuple[str, str]:
    """Skip a block of a type not read (:data:`_BLOCK_HANDLERS`) too large to hold, in bounded
    chunks, once its trailing length agrees: ("skipped", ""), ("truncated", why: the file ends
    within it) or ("bad", why: the lengths disagree; the reader is where resynchronising starts)."""
    if blen > MAX_SKIP_BLOCK:
        return "bad", f"block length {blen} above the {MAX_SKIP_BLOCK}-byte sanity limit"
    trail_raw = rd.peek(rd.offset + blen - 4, 4)
    if trail_raw is not None:  # checked before skipping: a bogus length costs only this block
        if len(trail_raw) < 4:
            return "bad", f"truncated block of type 0x{btype:x} ({blen} bytes declared, the file ends first)"
        trail = _U32[bo].unpack_from(trail_raw, 0)[0]
        if trail != blen:
            return "bad", (
                f"block length inconsistent ({blen} leading, {trail} trailing; "
                "checked by seeking, not skipped unverified)"
            )
        if rd.skip(blen) < blen:  # the file shrank under us
            return "truncated", f"truncated block of type 0x{btype:x} ({blen} bytes)"
        return "skipped", ""
    # a stream that cannot seek: skip, then check
    got = rd.skip(blen - 4)
    if got < blen - 4 or not rd.fill(4):
        return "truncated", f"truncated block of type 0x{btype:x} ({blen} bytes declared)"
    trail = _U32[bo].unpack_from(rd.buf, rd.pos)[0]
    if trail == blen:
        rd.pos += 4
        return "skipped", ""
    rd.pos -= 1  # the resync starts one byte further on, i.e. right here
    return "bad", f"block length inconsistent ({blen} leading, {trail} trailing; skipped unverified)"


def _load_block(rd: _Reader, blen: int, bo: str) -> str | None:
    """Bring a whole block of ``blen`` bytes into the window; what is wrong with it, or None."""
    if blen > MAX_BLOCK:
        return f"block length {blen} above the {MAX_BLOCK}-byte sanity limit"
    if not rd.fill(blen):
        # a block running past the end of the file: the last one, cut short, or a bogus length
        # followed by more blocks
        return f"truncated block ({rd.remaining_hint()} of {blen} bytes)"
    trail = _U32[bo].unpack_from(rd.buf, rd.pos + blen - 4)[0]
    if trail != blen:
        return f"block length inconsistent ({blen} leading, {trail} trailing)"
    return None


def _resync_block(rd: _Reader, path: str, bo: str, off: int) -> Generator[CaptureProblem, None, bool]:
    """Resynchronise after the bad block at ``off`` on the next block whose type and trailing
    length agree; False when the file holds none."""
    rd.pos += 1
    while True:
        rd.fill(2 * MAX_BLOCK)
        buf, pos = rd.buf, rd.pos
        scan_end = len(buf) - 11 if rd.eof else len(buf) - MAX_BLOCK
        found = _find_block_boundary(buf, bo, pos, scan_end)
        if found is not None:
            rd.pos = found
            yield CaptureProblem(path, off, f"resynchronised at offset {rd.offset}, skipped {rd.offset - off} bytes")
            return True
        if rd.eof:
            rd.pos = len(buf)
            yield CaptureProblem(path, off, "no further valid block")
            return False
        rd.pos = max(pos, scan_end)


def _sound_packet_blocks(
    rd: _Reader, section: _Section, end: int | None, path: str
) -> Iterator[Record | CaptureProblem]:
    """The common case first: Enhanced Packet Blocks wholly in the window whose leading and
    trailing lengths agree, each handed to :func:`_packet_block` without touching the reader's
    window; anything else (a block to fill for, of another type, or bad) is left to the long way
    of :func:`_iter_pcapng`."""
    buf, pos, base = rd.buf, rd.pos, rd.base
    n = len(buf)
    stop = n if end is None else min(n, end - base)
    header, u32 = _BLOCK_HDR[section.bo].unpack_from, _U32[section.bo].unpack_from
    while pos < stop and pos + 12 <= n:
        btype, blen = header(buf, pos)
        nxt = pos + blen
        if btype != _EPB or blen < 12 or blen % 4 or blen > MAX_BLOCK or nxt > n or u32(buf, nxt - 4)[0] != blen:
            return
        rd.pos = nxt
        item = _packet_block(section, btype, buf[pos + 8 : nxt - 4], base + pos, path)
        if isinstance(item, list):
            yield from item
        elif item is not None:
            yield item
        pos = nxt


def _iter_pcapng(rd: _Reader, path: str, end: int | None, hdr: PcapHeader | None) -> Iterator[Record | CaptureProblem]:
    """Every block from the reader on: its header checked (:func:`_block_header`), a large block
    of another type skipped (:func:`_skip_other_block`), the block loaded (:func:`_load_block`)
    and handed to the handler of its type (:data:`_BLOCK_HANDLERS`); a bad block reported and
    resynchronised past (:func:`_resync_block`)."""
    section = _Section(hdr.byteorder if hdr else "<", list(hdr.interfaces) if hdr else [], hdr is not None)
    while True:
        if section.started:
            yield from _sound_packet_blocks(rd, section, end, path)
        if end is not None and rd.offset >= end:
            return
        if not rd.fill(12):
            if rd.remaining_hint():
                yield CaptureProblem(path, rd.offset, f"truncated block header ({rd.remaining_hint()} bytes)")
            return
        off = rd.offset
        btype, blen, reason = _block_header(rd, section)
        if reason is None and blen > MAX_BLOCK and btype not in _BLOCK_HANDLERS:
            verdict, why = _skip_other_block(rd, btype, blen, section.bo)
            if verdict == "skipped":
                continue
            if verdict == "truncated":
                yield CaptureProblem(path, off, why)
                return
            reason = why
        if reason is None:
            reason = _load_block(rd, blen, section.bo)
        if reason is None:
            body = rd.buf[rd.pos + 8 : rd.pos + blen - 4]
            rd.pos += blen
            handler = _BLOCK_HANDLERS.get(btype)
            items = handler(section, btype, body, off, path) if handler is not None else None
            if isinstance(items, list):
                yield from items
            elif items is not None:
                yield items
            continue
        yield CaptureProblem(path, off, reason)
        if not (yield from _resync_block(rd, path, section.bo, off)):
            return


def _packet_block(section: _Section, btype: int, body: bytes, off: int, path: str) -> BlockItems:
    """Enhanced, Simple or (obsolete) Packet Block: its record, or what is wrong with it."""
    bo, ifaces = section.bo, section.ifaces
    if btype == _EPB:
        if len(body) < 20:
            return CaptureProblem(path, off, "enhanced packet block too short")
        ifid, ts_hi, ts_lo, caplen, wirelen = _EPB_BODY[bo].unpack_from(body, 0)
        start = 20
    elif btype == _PB:
        if len(body) < 20:
            return CaptureProblem(path, off, "packet block too short")
        ifid, _drops, ts_hi, ts_lo, caplen, wirelen = _PB_BODY[bo].unpack_from(body, 0)
        start = 20
    else:  # _SPB
        if len(body) < 4:
            return CaptureProblem(path, off, "simple packet block too short")
        wirelen = _U32[bo].unpack_from(body, 0)[0]
        ifid, ts_hi, ts_lo, start = 0, 0, 0, 4
        caplen = min(wirelen, len(body) - 4)
        if ifaces and ifaces[0].snaplen:
            caplen = min(caplen, ifaces[0].snaplen)
    if ifid >= len(ifaces):
        return CaptureProblem(path, off, f"packet for undeclared interface {ifid}")
    iface = ifaces[ifid]
    if caplen > MAX_CAPLEN:
        return CaptureProblem(path, off, f"caplen {caplen} above the {MAX_CAPLEN}-byte sanity limit")
    if start + caplen > len(body):
        return CaptureProblem(path, off, f"block length inconsistent (caplen {caplen} exceeds the block body)")
    ts = ((ts_hi << 32) | ts_lo) * iface.ts_unit + iface.ts_offset if btype != _SPB else 0.0
    record = Record(off, ts, iface.linktype, body[start : start + caplen], wirelen, ifid)
    if iface.snaplen and caplen > iface.snaplen:
        # the block's lengths agree, so the data is sound: report the header and keep the packet
        return [CaptureProblem(path, off, f"caplen {caplen} above snaplen {iface.snaplen} (record kept)"), record]
    return record


#: the blocks whose body is read, by type; every other block is skipped by its length
_BLOCK_HANDLERS: dict[int, Callable[[_Section, int, bytes, int, str], BlockItems]] = {
    _SHB_TYPE: _on_section_header,
    _IDB: _on_interface,
    _EPB: _packet_block,
    _SPB: _packet_block,
    _PB: _packet_block,
}


# --------------------------------------------------------------------------------------------


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
    rd = _Reader(stream, start_offset)
    if header is None:
        if not rd.fill(24) and not rd.fill(4):
            yield CaptureProblem(path, start_offset, f"truncated file header ({rd.remaining_hint()} bytes)")
            return
        head = rd.buf[rd.pos : rd.pos + 24]
        if _U32["<"].unpack_from(head, 0)[0] == _SHB_TYPE:
            yield from _iter_pcapng(rd, path, end_offset, None)
            return
        parsed = _parse_pcap_global(head)
        if isinstance(parsed, str):
            yield CaptureProblem(path, start_offset, parsed)
            return
        rd.pos += 24
        header = parsed
    if header.format == "pcapng":
        yield from _iter_pcapng(rd, path, end_offset, header)
    else:
        yield from _iter_pcap(rd, header, path, end_offset)


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
    yield from _iter_pcap(_Reader(stream, start_offset), header, path, end_offset, views=True)
