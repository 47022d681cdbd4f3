"""The classic libpcap file format: the 24-byte global header (both byte orders, microsecond magic
0xA1B2C3D4 and nanosecond magic 0xA1B23C4D) and the 16-byte record headers that follow it.

Records wholly in the read window whose header is sound are taken at once; any other header is
checked (:func:`harness.capture.pcapcommon.record_header_fault`), a record whose caplen only
overstates the snaplen kept when a plausible header follows it, and after a bad header the reader
resynchronises on the next run of plausible record headers
(:func:`harness.capture.pcapcommon.plausible_record_header`), so one damaged record does not cost
the rest of the file.  Read through :func:`harness.capture.pcapfile.iter_records`.

Layer: ``harness.capture`` (standard library only).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any

from harness.capture.pcapcommon import (
    MAX_CAPLEN,
    RESYNC_CHAIN,
    RESYNC_CHAIN_ANCHORED,
    CaptureProblem,
    Interface,
    PcapHeader,
    ReadWindow,
    Record,
    caplen_limit,
    fraction_limit,
    new_record,
    plausible_record_header,
    record_header_fault,
)

__all__ = ["find_pcap_boundary", "iter_pcap", "parse_global_header"]


_PCAP_MAGIC_US = 0xA1B2C3D4
_PCAP_MAGIC_NS = 0xA1B23C4D

# Cheap pre-filter for resynchronisation candidates (checked in C by the regex engine): the
# timestamp fraction is below 10**9 and caplen is at most MAX_CAPLEN (0x40000).
_CANDIDATE = {
    "<": re.compile(rb"(?=[\s\S]{7}[\x00-\x3b][\s\S]{2}[\x00-\x04]\x00)"),
    ">": re.compile(rb"(?=[\s\S]{4}[\x00-\x3b][\s\S]{3}\x00[\x00-\x04])"),
}
_U32 = {"<": struct.Struct("<I"), ">": struct.Struct(">I")}
_REC = {"<": struct.Struct("<IIII"), ">": struct.Struct(">IIII")}
_GLOBAL = {"<": struct.Struct("<IHHiIII"), ">": struct.Struct(">IHHiIII")}


def parse_global_header(head: bytes) -> PcapHeader | str:
    """The global header at the start of ``head``, or what is wrong with it."""
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
    limit = caplen_limit(snaplen)
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


def find_pcap_boundary(buf: bytes, header: PcapHeader, prev_ts: int | None = None, at_eof: bool = False) -> int | None:
    """Offset in ``buf`` of the first plausible classic-pcap record header, or None: the test the
    reader resynchronises by (:func:`_plausible_chain`)."""
    frac_max = fraction_limit(header.ts_unit)
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


def _followed_by_record(rd: ReadWindow, caplen: int, bo: str, frac_max: int, sec: int) -> bool:
    """Does a plausible record header (or the end of the file) follow a record of ``caplen``?"""
    rd.fill(32 + caplen)
    buf, nxt = rd.buf, rd.pos + 16 + caplen
    if rd.eof and nxt == len(buf):
        return True
    if nxt + 16 > len(buf):
        return False
    sec2, frac2, caplen2, wirelen2 = _REC[bo].unpack_from(buf, nxt)
    return plausible_record_header(sec2, frac2, caplen2, wirelen2, frac_max, MAX_CAPLEN, sec)




@dataclass(slots=True)
class _PcapRead:
    """Where a classic-pcap reader is: its window, what the global header says, and the seconds
    of the last record taken (the anchor of a resynchronisation)."""

    rd: ReadWindow
    path: str
    end: int | None
    views: bool
    bo: str
    linktype: int
    unit: float
    snaplen: int
    limit: int  #: :func:`caplen_limit` of the snaplen
    frac_max: int  #: :func:`fraction_limit` of the timestamp unit
    prev_sec: int | None = None

    def at_end(self) -> bool:
        """The reader reached the end of its byte range."""
        return self.end is not None and self.rd.offset >= self.end


def _sound_records(st: _PcapRead) -> Iterator[Any]:
    """The common case first: records wholly in the window whose header is sound (the test of
    :func:`record_header_fault`, inlined), taken without touching the reader's window until the
    first that is not (a record to fill for, a header to report: the long way of
    :func:`iter_pcap`)."""
    rd = st.rd
    buf, pos, base = rd.buf, rd.pos, rd.base
    n = len(buf)
    stop = n if st.end is None else min(n, st.end - base)
    unpack = _REC[st.bo].unpack_from
    limit, frac_max, unit, linktype, views = st.limit, st.frac_max, st.unit, st.linktype, st.views
    prev_sec = st.prev_sec
    while pos < stop and pos + 16 <= n:
        sec, frac, caplen, wirelen = unpack(buf, pos)
        nxt = pos + 16 + caplen
        if caplen > limit or caplen > wirelen or frac >= frac_max or nxt > n:
            break
        prev_sec = sec
        if views:
            yield (base + pos, sec + frac * unit, linktype, buf, pos + 16, nxt)
        else:
            yield new_record(Record, (base + pos, sec + frac * unit, linktype, buf[pos + 16 : nxt], wirelen, 0))
        pos = nxt
    rd.pos = pos
    st.prev_sec = prev_sec


def _kept_above_snaplen(st: _PcapRead, sec: int, frac: int, caplen: int, wirelen: int) -> bool:
    """A header that understates the snapshot length (common with TSO/jumbo frames): its caplen
    above the snaplen and nothing else wrong, and a plausible record header (or the end of the
    file) right after its record.  The record is sound: it is reported and kept rather than lost."""
    return (
        bool(st.snaplen)
        and st.snaplen < caplen <= MAX_CAPLEN
        and caplen <= wirelen
        and frac < st.frac_max
        and _followed_by_record(st.rd, caplen, st.bo, st.frac_max, sec)
    )


def _long_record(st: _PcapRead, sec: int, frac: int, caplen: int, wirelen: int) -> Any:
    """The record whose header (checked) is at the reader, its data filled for; a
    :class:`CaptureProblem` when the file ends first."""
    rd = st.rd
    if len(rd.buf) - rd.pos < 16 + caplen and not rd.fill(16 + caplen):
        short = f"truncated record data ({rd.remaining_hint() - 16} of {caplen} bytes)"
        return CaptureProblem(st.path, rd.offset, short)
    buf, pos = rd.buf, rd.pos
    off = rd.base + pos
    rd.pos = pos + 16 + caplen
    st.prev_sec = sec
    if st.views:
        return (off, sec + frac * st.unit, st.linktype, buf, pos + 16, pos + 16 + caplen)
    return Record(off, sec + frac * st.unit, st.linktype, buf[pos + 16 : pos + 16 + caplen], wirelen, 0)


def _resync_record(st: _PcapRead) -> Generator[CaptureProblem, None, bool]:
    """After the bad record header at the reader: scan forward for a run of plausible record
    headers (:func:`_scan`), keeping a full verification window ahead of every candidate unless
    the file ends; False when the file holds none."""
    rd = st.rd
    bad_at = rd.offset
    rd.pos += 1
    window = RESYNC_CHAIN * (16 + st.limit)
    while True:
        rd.fill(2 * window)
        buf, pos = rd.buf, rd.pos
        scan_end = len(buf) - 15 if rd.eof else len(buf) - window
        found = _scan(buf, pos, scan_end, st.bo, st.snaplen, st.frac_max, st.prev_sec, rd.eof)
        if found is not None:
            rd.pos = found
            msg = f"resynchronised at offset {rd.offset}, skipped {rd.offset - bad_at} bytes"
            yield CaptureProblem(st.path, bad_at, msg)
            return True
        if rd.eof:
            skipped = len(buf) - pos
            rd.pos = len(buf)
            yield CaptureProblem(st.path, bad_at, f"no plausible record header in the remaining {skipped + 1} bytes")
            return False
        rd.pos = max(pos, scan_end)


def iter_pcap(rd: ReadWindow, hdr: PcapHeader, path: str, end: int | None, views: bool = False) -> Iterator[Any]:
    """Every record from the reader on (as a :class:`Record`, or with ``views`` as a
    :data:`harness.capture.pcapcommon.RecordView`), until the first at or after ``end``: sound
    records in the window at once (:func:`_sound_records`), any other header checked
    (:func:`record_header_fault`, :func:`_kept_above_snaplen`) and its record read
    (:func:`_long_record`), a bad one reported and resynchronised past (:func:`_resync_record`)."""
    st = _PcapRead(
        rd, path, end, views, hdr.byteorder, hdr.linktype, hdr.ts_unit, hdr.snaplen,
        caplen_limit(hdr.snaplen), fraction_limit(hdr.ts_unit),
    )  # fmt: skip
    unpack = _REC[st.bo].unpack_from
    while not st.at_end():
        yield from _sound_records(st)
        if st.at_end():
            return
        if not rd.fill(16):
            if rd.remaining_hint():
                yield CaptureProblem(path, rd.offset, f"truncated record header ({rd.remaining_hint()} of 16 bytes)")
            return
        sec, frac, caplen, wirelen = unpack(rd.buf, rd.pos)
        reason = record_header_fault(frac, caplen, wirelen, st.snaplen, st.frac_max)
        if reason is not None and _kept_above_snaplen(st, sec, frac, caplen, wirelen):
            yield CaptureProblem(path, rd.offset, reason + " (record kept: the next record header follows)")
            reason = None
        if reason is None:
            item = _long_record(st, sec, frac, caplen, wirelen)
            yield item
            if isinstance(item, CaptureProblem):
                return
            continue
        yield CaptureProblem(path, rd.offset, reason)
        if not (yield from _resync_record(st)):
            return
