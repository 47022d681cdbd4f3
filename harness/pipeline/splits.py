"""Splittable reading of capture files: byte ranges of one file read in parallel, small files
packed into balanced tasks.

A classic pcap file (libpcap format: 24-byte global header, 16-byte record headers) is cut into
byte ranges; the task of a range that does not start the file finds the first record boundary at
or after its start with :func:`harness.capture.pcapfile.find_record_boundary` (a chain of
plausible record headers: fraction below one second, caplen <= snaplen, caplen <= wire length,
timestamps close together) and then confirms it by walking :data:`CONFIRM` further headers, each
starting where the previous record ends; it reads from there up to the boundary the next range
starts at (found by the same search), so the last record may end beyond the range.  Each task
reports where its first record started and where its last one ended, so the driver can check
that the ranges chain exactly.  A pcapng file (draft-ietf-opsawg-pcapng) is cut the same way at
block boundaries (a known block type whose leading and trailing Block Total Length agree, confirmed
by the blocks that follow) when its Interface Description Blocks directly follow the Section
Header Block; otherwise it is read whole by one task.
Bad input is reported per file with its byte offset (:class:`~harness.capture.pcapcommon.CaptureProblem`)
and the rest is still read.
"""

from __future__ import annotations

import glob
import io
import itertools
import os
import re
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, TypeVar

from harness.capture.pcapcommon import (
    MAX_BLOCK,
    CaptureProblem,
    PcapHeader,
    Record,
    RecordView,
    caplen_limit,
    fraction_limit,
    plausible_block_length,
    plausible_record_header,
    record_header_fault,
)
from harness.capture.pcapfile import find_record_boundary, iter_record_views, iter_records, read_header
from harness.errors import HarnessError
from harness.files import describe_mode

__all__ = [
    "CONFIRM",
    "InputFile",
    "Split",
    "SplitError",
    "SplitResult",
    "check_chaining",
    "describe",
    "expand_inputs",
    "find_split_start",
    "index_starts",
    "is_local",
    "plan_tasks",
    "read_split",
    "read_split_views",
    "scheme_of",
]

#: Record headers walked after a candidate boundary to confirm it (when the file has that many).
CONFIRM = 16
CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap", ".dmp")
_REC = {"<": struct.Struct("<IIII"), ">": struct.Struct(">IIII")}
_U32 = {"<": struct.Struct("<I"), ">": struct.Struct(">I")}
_BLOCK = {"<": struct.Struct("<II"), ">": struct.Struct(">II")}  # pcapng Block Type, Block Total Length


class SplitError(HarnessError):
    """An input that cannot be listed or planned."""


@dataclass(frozen=True)
class InputFile:
    path: str
    size: int
    #: "pcap", "pcapng", "bad" (the file header could not be read) or "unread" (a file read through
    #: Spark's Hadoop layer, whose header the task reading it checks)
    format: str = "pcap"
    problem: str = ""  #: why the header could not be read (with its offset)
    splittable: bool = True  #: can be read in byte ranges


@dataclass(frozen=True)
class Split:
    """The records of ``path`` that start in [start, end); ``start`` 0 means from the file header."""

    path: str
    start: int
    end: int
    index: int = 0  #: position of this range within its file
    #: ``start`` and ``end`` are record (block) boundaries the driver walked to (:func:`index_starts`):
    #: the range is read from ``start`` to ``end`` with no search
    proven: bool = False

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass
class SplitResult:
    """What a task found besides the records: where they started and ended, and the problems."""

    split: Split
    records: int = 0
    first: int | None = None  #: offset of the first record read
    next: int | None = None  #: offset right after the last record read
    problems: list[CaptureProblem] = field(default_factory=list)


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/")


def scheme_of(path: str) -> str:
    """The URI scheme of an input (``hdfs``, ``s3a``, ``file``, ...), or "" for a plain path."""
    m = _SCHEME.match(path)
    return m.group(1).lower() if m else ""


def is_local(path: str) -> bool:
    """A plain path or a ``file:`` URI (read with the operating system's file calls)."""
    return scheme_of(path) in ("", "file")


def _local(path: str) -> str:
    if scheme_of(path) == "file":
        rest = path[len("file:") :]
        if rest.startswith("//"):  # file:///x, or file://localhost/x
            rest = rest[2:]
            rest = rest[rest.index("/") :] if "/" in rest else "/"
        return rest
    if not is_local(path):
        raise SplitError(f"{path}: not a local path (read it through Spark's Hadoop layer)")
    return path


def expand_inputs(inputs: Iterable[str]) -> list[str]:
    """Files named, every capture file under the folders named, and the matches of globs (sorted,
    duplicates dropped, order of the inputs kept)."""
    seen: dict[str, None] = {}
    for raw in inputs:
        item = _local(raw)
        if os.path.isdir(item):
            found = sorted(
                str(p) for p in Path(item).rglob("*") if p.is_file() and p.suffix.lower() in CAPTURE_SUFFIXES
            )
        elif any(c in item for c in "*?["):
            found = sorted(p for p in glob.glob(item, recursive=True) if os.path.isfile(p))
        elif os.path.isfile(item):
            found = [item]
        elif os.path.exists(item):  # a device, a FIFO or a socket is never read
            raise SplitError(f"{raw}: {describe_mode(os.stat(item).st_mode)}, not a capture file: never read")
        else:
            raise SplitError(f"{raw}: no such file or folder")
        if not found:
            raise SplitError(f"{raw}: no capture files")
        for p in found:
            seen.setdefault(os.path.abspath(p), None)
    return list(seen)


def describe(path: str) -> InputFile:
    """Size and format of one input (reads the file header only)."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = read_header(f)
    if isinstance(head, CaptureProblem):
        return InputFile(path, size, "bad", str(head._replace(path=path)), splittable=False)
    return InputFile(path, size, head.format, splittable=_splittable(head))


def _splittable(header: PcapHeader) -> bool:
    """Classic pcap always; pcapng when its interfaces are declared right after the Section Header
    Block (a range starting later must know every interface its packets name)."""
    return header.format == "pcap" or bool(header.interfaces)


def index_starts(path: str, header: PcapHeader, size: int, cuts: list[int]) -> list[int] | None:
    """The offset of the first record (pcap) or block (pcapng) at or after each cut, found by
    walking the chain of record headers from the first record, reading the headers only and seeking
    over the data: the boundaries the sequential reader meets, proven rather than guessed (a record
    body may hold bytes that look like record headers).  A cut past the last record gets ``size``.
    None when the chain is not whole (a header the sequential reader would resynchronise after,
    a pcapng section that starts again): such a file is read by one task."""
    out: list[int] = []
    pending = sorted(cuts)
    with open(path, "rb") as f:
        pos = header.length
        if header.format == "pcapng":
            after = _skip_interfaces(f, header, pos, size)
            if after is None:
                return None
            pos = after
        while pending:
            while pending and pending[0] <= pos:
                out.append(pos)
                pending.pop(0)
            if pos >= size:
                break
            step = _record_length(f, header, pos, size)
            if step is None:
                return None
            pos += step
        out.extend(size for _ in pending)
    return out


_SHB = 0x0A0D0D0A
_IDB = 0x00000001


def _skip_interfaces(f: BinaryIO, header: PcapHeader, pos: int, size: int) -> int | None:
    """Past the Interface Description Blocks that follow the Section Header Block."""
    unpack = _U32[header.byteorder].unpack
    while pos + 8 <= size:
        f.seek(pos)
        btype = unpack(f.read(4))[0]
        if btype != _IDB:
            return pos
        step = _record_length(f, header, pos, size)
        if step is None:
            return None
        pos += step
    return pos


def _record_length(f: BinaryIO, header: PcapHeader, pos: int, size: int) -> int | None:
    """The length of the record (pcap: 16-byte header and data) or block (pcapng) at ``pos`` when
    the sequential reader would take it as it stands, else None."""
    f.seek(pos)
    if header.format == "pcap":
        raw = f.read(16)
        if len(raw) < 16:
            return None
        _, frac, caplen, wirelen = _REC[header.byteorder].unpack(raw)
        fault = record_header_fault(frac, caplen, wirelen, header.snaplen, fraction_limit(header.ts_unit))
        if fault is not None or pos + 16 + caplen > size:
            return None
        return 16 + caplen
    raw = f.read(8)
    if len(raw) < 8:
        return None
    btype, blen = _BLOCK[header.byteorder].unpack(raw)
    if btype == _SHB or not plausible_block_length(blen) or pos + blen > size:
        return None
    f.seek(pos + blen - 4)
    if _U32[header.byteorder].unpack(f.read(4))[0] != blen:
        return None
    return int(blen)


def plan_tasks(files: list[InputFile], split_size: int, tasks: int) -> list[list[Split]]:
    """Cut splittable files larger than ``split_size`` into ranges at record boundaries the driver
    walked to (:func:`index_starts`; a file whose chain is not whole is read by one task) and pack
    everything into at least ``tasks`` task lists of about equal bytes (largest first onto the
    lightest task)."""
    if split_size <= 0:
        raise SplitError("split size must be positive")
    pieces: list[Split] = []
    for f in files:
        starts = _proven_cuts(f, split_size)
        if starts is None:
            pieces.append(Split(f.path, 0, max(f.size, 1), 0))
            continue
        bounds = [0, *starts, f.size]
        ranges = [(a, b) for a, b in itertools.pairwise(bounds) if b > a]
        pieces.extend(Split(f.path, a, b, i, proven=True) for i, (a, b) in enumerate(ranges))
    n_tasks = max(1, min(tasks, len(pieces)))
    loads = [0] * n_tasks
    plan: list[list[Split]] = [[] for _ in range(n_tasks)]
    for piece in sorted(pieces, key=lambda p: (-p.length, p.path, p.start)):
        i = min(range(n_tasks), key=lambda k: (loads[k], k))
        plan[i].append(piece)
        loads[i] += piece.length
    for task in plan:
        task.sort(key=lambda p: (p.path, p.start))
    return [t for t in plan if t]


def _proven_cuts(f: InputFile, split_size: int) -> list[int] | None:
    """The record boundaries a splittable local file larger than ``split_size`` is cut at."""
    if not (f.splittable and f.size > split_size and is_local(f.path)):
        return None
    n = -(-f.size // split_size)
    step = -(-f.size // n)
    with open(_local(f.path), "rb") as stream:
        header = read_header(stream)
    if isinstance(header, CaptureProblem):
        return None
    starts = index_starts(_local(f.path), header, f.size, list(range(step, f.size, step)))
    return sorted(set(starts)) if starts is not None else None


def _confirm(buf: bytes, p: int, header: PcapHeader, at_eof: bool) -> bool:
    """Do :data:`CONFIRM` record headers chain from ``p`` (or the chain run to the end of the file)?"""
    unpack = _REC[header.byteorder].unpack_from
    limit = caplen_limit(header.snaplen)
    frac_max = fraction_limit(header.ts_unit)
    prev: int | None = None
    q = p
    for _ in range(CONFIRM):
        if q + 16 > len(buf):
            return at_eof
        sec, frac, caplen, wirelen = unpack(buf, q)
        if not plausible_record_header(sec, frac, caplen, wirelen, frac_max, limit, prev):
            return False
        prev = sec
        q += 16 + caplen
    return True


def _confirm_blocks(buf: bytes, p: int, header: PcapHeader, at_eof: bool) -> bool:
    """Do :data:`CONFIRM` pcapng blocks follow each other from ``p``, each with its leading and
    trailing Block Total Length equal (or the chain run to the end of the file)?"""
    unpack = _U32[header.byteorder].unpack_from
    q = p
    for _ in range(CONFIRM):
        if q + 12 > len(buf):
            return at_eof
        blen = unpack(buf, q + 4)[0]
        if not plausible_block_length(blen):
            return False
        if q + blen > len(buf):
            return at_eof
        if unpack(buf, q + blen - 4)[0] != blen:
            return False
        q += blen
    return True


def find_split_start(f: BinaryIO, start: int, end: int, header: PcapHeader, size: int) -> int | None:
    """File offset of the first confirmed record (pcap) or block (pcapng) boundary in [start, end)
    of an open file, or None."""
    if header.format == "pcapng":
        window, confirm = (CONFIRM + 2) * MAX_BLOCK, _confirm_blocks
    else:
        limit = caplen_limit(header.snaplen)
        window, confirm = (CONFIRM + 2) * (16 + limit), _confirm
    pos = start
    while pos < end:
        f.seek(pos)
        buf = f.read(2 * window)
        at_eof = pos + len(buf) >= size
        scan_limit = min(end - pos, len(buf) if at_eof else window)
        p = 0
        while p < scan_limit:
            q = find_record_boundary(buf[p:], header, at_eof=at_eof)
            if q is None or p + q >= scan_limit:
                break
            if confirm(buf, p + q, header, at_eof):
                return pos + p + q
            p += q + 1
        if at_eof:
            return None
        pos += scan_limit
    return None


def _bounds(f: BinaryIO, split: Split, size: int, header: PcapHeader) -> tuple[int | None, int | None]:
    """Where the records of the split start (0: from the file header; None: the range holds no
    record start) and the offset they stop before (None: the end of the file)."""
    splittable = _splittable(header)
    if split.proven:  # boundaries the driver walked to
        stop: int | None = split.end if split.end < size else None
    else:
        stop = find_split_start(f, split.end, size, header, size) if splittable and split.end < size else None
    if split.start == 0:
        return 0, stop
    if split.proven:
        return split.start, stop
    return (find_split_start(f, split.start, split.end, header, size) if splittable else None), stop


def read_split_views(
    split: Split, result: SplitResult | None = None, data: bytes | None = None
) -> Iterator[RecordView]:
    """The records of :func:`read_split`, each as a :data:`harness.capture.pcapcommon.RecordView`
    -- ``(offset, ts, linktype, buffer, start, stop)``, no bytes copied out of the read window --
    with the problems and where the records started and ended given to ``result`` as
    :func:`read_split` gives them."""
    result = result if result is not None else SplitResult(split)
    size = os.path.getsize(split.path) if data is None else len(data)
    with open(split.path, "rb") if data is None else io.BytesIO(data) as f:
        header = read_header(f)
        if isinstance(header, CaptureProblem):
            if split.start == 0:
                result.problems.append(header._replace(path=split.path))
            return
        begin, stop = _bounds(f, split, size, header)
        if begin is None:
            return
        if begin == 0 and header.format != "pcap":  # a pcapng section's blocks, read from its start
            f.seek(0)
            items: Iterator[RecordView | CaptureProblem] = _as_views(
                iter_records(f, path=split.path, end_offset=stop)
            )
        else:
            begin = begin or header.length
            f.seek(begin)
            items = iter_record_views(f, start_offset=begin, path=split.path, header=header, end_offset=stop)
        yield from _tallied(items, result, header.format == "pcap", _captured_in_view)


def _as_views(items: Iterator[Record | CaptureProblem]) -> Iterator[RecordView | CaptureProblem]:
    for item in items:
        yield (item.offset, item.ts, item.linktype, item.data, 0, len(item.data)) if isinstance(item, Record) else item


_R = TypeVar("_R", RecordView, Record)  # a record read in place, or copied out


def _captured_in_view(view: RecordView) -> int:
    return view[5] - view[4]


def _captured_in_record(record: Record) -> int:
    return len(record.data)


def _tallied(
    items: Iterator[_R | CaptureProblem], result: SplitResult, pcap: bool, length: Callable[[_R], int]
) -> Iterator[_R]:
    """The records among ``items`` (views or records: their offset first, ``length`` their captured
    bytes), the problems given to ``result`` with the first record's offset, the count and
    (``pcap``: a pcapng block's end is not in the record) where the last one ended."""
    problems = result.problems
    records = 0
    last: _R | None = None
    try:  # the counts kept in locals, given to ``result`` when the reading ends or stops
        for item in items:
            if isinstance(item, CaptureProblem):
                problems.append(item)
                continue
            if last is None and result.first is None:
                result.first = item[0]
            records += 1
            last = item
            yield item
    finally:
        result.records += records
        if pcap and last is not None:
            result.next = last[0] + 16 + length(last)


def read_split(split: Split, result: SplitResult | None = None, data: bytes | None = None) -> Iterator[Record]:
    """The records of the split (problems go to ``result.problems``), read from the file
    ``split.path`` or, given ``data``, from those bytes (the whole file, read by Spark).

    A range owns the records from the first confirmed boundary at or after its start up to the
    first confirmed boundary at or after its end -- the boundary the next range starts at, found by
    the same deterministic search -- so consecutive ranges neither lose nor repeat a record.
    """
    result = result if result is not None else SplitResult(split)
    size = os.path.getsize(split.path) if data is None else len(data)
    with open(split.path, "rb") if data is None else io.BytesIO(data) as f:
        header = read_header(f)
        if isinstance(header, CaptureProblem):
            if split.start == 0:
                result.problems.append(header._replace(path=split.path))
            return
        begin, stop = _bounds(f, split, size, header)
        if begin == 0:
            f.seek(0)
            items = iter_records(f, path=split.path, end_offset=stop)
        elif begin is None:
            return
        else:
            f.seek(begin)
            items = iter_records(f, start_offset=begin, path=split.path, header=header, end_offset=stop)
        yield from _tallied(items, result, header.format == "pcap", _captured_in_record)


def check_chaining(results: list[SplitResult]) -> list[CaptureProblem]:
    """Problems where consecutive ranges of one file do not meet exactly (without other problems
    in between, the first record of a range must start where the previous range's last ended)."""
    out: list[CaptureProblem] = []
    by_file: dict[str, list[SplitResult]] = {}
    for r in results:
        by_file.setdefault(r.split.path, []).append(r)
    for path, rs in by_file.items():
        rs.sort(key=lambda r: r.split.start)
        prev: SplitResult | None = None
        for r in rs:
            if r.first is None:
                continue
            if prev is not None and prev.next is not None and not prev.problems and prev.next != r.first:
                out.append(CaptureProblem(path, r.split.start, f"ranges do not chain: {prev.next} then {r.first}"))
            prev = r
    return out
