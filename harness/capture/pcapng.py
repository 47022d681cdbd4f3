"""The pcapng file format (draft-ietf-opsawg-pcapng): the Section Header Block in either byte
order, the Interface Description Block with its link type and ``if_tsresol`` / ``if_tsoffset``
options, the Enhanced Packet Block, the Simple Packet Block and the obsolete Packet Block, each
read by the handler of its type (:data:`BLOCK_HANDLERS`); every other block type is skipped by its
length.

A block of any type, known or not, is taken by its Block Total Length only when that length is
plausible (:func:`harness.capture.pcapcommon.plausible_block_length`, within the file, repeated at
the block's end; a block too long to hold is checked by seeking to its end before it is skipped);
after a bad block the reader resynchronises on the next block whose type and repeated trailing
length agree.  An Interface Description Block whose option overruns the block keeps its interface
(link type and snaplen are in its fixed part).  Read through
:func:`harness.capture.pcapfile.iter_records`.

Layer: ``harness.capture`` (standard library only).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from harness.capture.pcapcommon import (
    MAX_BLOCK,
    MAX_CAPLEN,
    MAX_SKIP_BLOCK,
    CaptureProblem,
    Interface,
    PcapHeader,
    ReadWindow,
    Record,
    plausible_block_length,
)

__all__ = [
    "BLOCK_HANDLERS",
    "SHB_TYPE",
    "find_block_boundary",
    "iter_pcapng",
    "parse_section_header",
    "read_section_header",
]

SHB_TYPE = 0x0A0D0D0A
_BYTE_ORDER_MAGIC = 0x1A2B3C4D
_IDB, _PB, _SPB, _EPB = 1, 2, 3, 6
#: Block types of the pcapng draft (and common vendor blocks) accepted as resync points.
_KNOWN_BLOCKS = frozenset({SHB_TYPE, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0x0BAD, 0x40000BAD})

_U32 = {"<": struct.Struct("<I"), ">": struct.Struct(">I")}
_BLOCK_HDR = {"<": struct.Struct("<II"), ">": struct.Struct(">II")}
_SHB_BODY = {"<": struct.Struct("<IHHq"), ">": struct.Struct(">IHHq")}
_IDB_BODY = {"<": struct.Struct("<HHI"), ">": struct.Struct(">HHI")}
_EPB_BODY = {"<": struct.Struct("<IIIII"), ">": struct.Struct(">IIIII")}
_PB_BODY = {"<": struct.Struct("<HHIIII"), ">": struct.Struct(">HHIIII")}
_OPT = {"<": struct.Struct("<HH"), ">": struct.Struct(">HH")}
_Q = {"<": struct.Struct("<q"), ">": struct.Struct(">q")}


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


def read_section_header(head: bytes, stream: BinaryIO) -> PcapHeader | str:
    """The Section Header Block at the start of ``head`` (the first bytes read of ``stream``, read
    on when the block is longer) and the Interface Description Blocks that directly follow it."""
    bo = _shb_byteorder(head)
    if bo is not None and len(head) == 64 * 1024:  # a section header longer than the first read
        blen = _U32[bo].unpack_from(head, 4)[0]
        if len(head) < blen <= MAX_BLOCK:
            head += stream.read(blen)
    return parse_section_header(head)



def parse_section_header(head: bytes) -> PcapHeader | str:
    """The Section Header Block at the start of ``head`` and the Interface Description Blocks
    that directly follow it, or what is wrong with the block."""
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



def _block_ok(buf: bytes | memoryview, p: int, bo: str) -> bool:
    if p + 12 > len(buf):
        return False
    btype, blen = _BLOCK_HDR[bo].unpack_from(buf, p)
    if btype == SHB_TYPE:
        b2 = _shb_byteorder(bytes(buf[p : p + 12]))
        if b2 is None:
            return False
        btype, blen = _BLOCK_HDR[b2].unpack_from(buf, p)
        bo = b2
    if btype not in _KNOWN_BLOCKS or not plausible_block_length(blen) or p + blen > len(buf):
        return False
    return bool(_U32[bo].unpack_from(buf, p + blen - 4)[0] == blen)


_BLOCK_CANDIDATE = {
    bo: re.compile(b"(?=" + b"|".join(re.escape(struct.pack(bo + "I", t)) for t in sorted(_KNOWN_BLOCKS)) + b")")
    for bo in "<>"
}


def find_block_boundary(buf: bytes, bo: str, start: int, stop: int | None = None) -> int | None:
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


def _block_header(rd: ReadWindow, section: _Section) -> tuple[int, int, str | None]:
    """(Block Type, Block Total Length, what is wrong with them or None) of the block at the
    reader; a Section Header Block sets the section's byte order from its Byte-Order Magic."""
    buf, pos = rd.buf, rd.pos
    btype = _U32[section.bo].unpack_from(buf, pos)[0]
    reason: str | None = None
    if btype == SHB_TYPE or _U32["<"].unpack_from(buf, pos)[0] == SHB_TYPE:
        b2 = _shb_byteorder(buf[pos : pos + 12])
        if b2 is None:
            reason = "bad pcapng byte-order magic"
        else:
            section.bo = b2
            btype = SHB_TYPE
    elif not section.started:
        reason = f"bad magic 0x{buf[pos : pos + 4].hex()}"
    blen = _U32[section.bo].unpack_from(buf, pos + 4)[0]
    if reason is None and (blen < 12 or blen % 4):
        reason = f"block length {blen} invalid"
    return btype, blen, reason


def _skip_other_block(rd: ReadWindow, btype: int, blen: int, bo: str) -> tuple[str, str]:
    """Skip a block of a type not read (:data:`BLOCK_HANDLERS`) too large to hold, in bounded
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


def _load_block(rd: ReadWindow, blen: int, bo: str) -> str | None:
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


def _resync_block(rd: ReadWindow, path: str, bo: str, off: int) -> Generator[CaptureProblem, None, bool]:
    """Resynchronise after the bad block at ``off`` on the next block whose type and trailing
    length agree; False when the file holds none."""
    rd.pos += 1
    while True:
        rd.fill(2 * MAX_BLOCK)
        buf, pos = rd.buf, rd.pos
        scan_end = len(buf) - 11 if rd.eof else len(buf) - MAX_BLOCK
        found = find_block_boundary(buf, bo, pos, scan_end)
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
    rd: ReadWindow, section: _Section, end: int | None, path: str
) -> Iterator[Record | CaptureProblem]:
    """The common case first: Enhanced Packet Blocks wholly in the window whose leading and
    trailing lengths agree (:func:`plausible_block_length`, inlined), each handed to
    :func:`_packet_block` without touching the reader's window; anything else (a block to fill
    for, of another type, or bad) is left to the long way of :func:`iter_pcapng`."""
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


def iter_pcapng(
    rd: ReadWindow, path: str, end: int | None, hdr: PcapHeader | None
) -> Iterator[Record | CaptureProblem]:
    """Every block from the reader on: its header checked (:func:`_block_header`), a large block
    of another type skipped (:func:`_skip_other_block`), the block loaded (:func:`_load_block`)
    and handed to the handler of its type (:data:`BLOCK_HANDLERS`); a bad block reported and
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
        if reason is None and blen > MAX_BLOCK and btype not in BLOCK_HANDLERS:
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
            handler = BLOCK_HANDLERS.get(btype)
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
BLOCK_HANDLERS: dict[int, Callable[[_Section, int, bytes, int, str], BlockItems]] = {
    SHB_TYPE: _on_section_header,
    _IDB: _on_interface,
    _EPB: _packet_block,
    _SPB: _packet_block,
    _PB: _packet_block,
}


