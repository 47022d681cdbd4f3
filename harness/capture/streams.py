"""From a capture file to the MSMQ byte streams it holds.

Reads a pcap/pcapng file (pcapfile), decodes each frame to its TCP segment (frames), keeps the
segments of the MSMQ ports ([MS-MQQB] 2.1.1: TCP 1801) and reassembles each direction of each
flow (tcp).  Every problem on the way — a damaged record, an undecodable frame, a gap in a
stream — is kept with its offset, so the caller can report it next to the packets.
"""

from __future__ import annotations

import heapq
import itertools
import struct
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from harness.capture.frames import (
    ENDPOINTS4_SEEN,
    ETH_IPV4_ENDPOINTS,
    ETH_IPV4_TCP,
    TCP_HEADER,
    FrameProblem,
    TcpSegment,
    addr4,
    decode_tcp,
    endpoints4,
)
from harness.capture.pcapcommon import CaptureProblem, Record, RecordView
from harness.capture.pcapfile import iter_records
from harness.capture.spill import SpillFile
from harness.capture.tcp import Flow, Gap, StreamProblem, reassemble
from harness.files import open_regular

__all__ = [
    "CaptureStream",
    "by_connection",
    "capture_flows",
    "capture_segments",
    "capture_streams",
    "connection_ends",
    "connection_key",
    "numbered_segments",
    "record_connections",
    "segment_connection",
    "view_connections",
]

T = TypeVar("T")

_U16 = struct.Struct("!H")

#: bytes of finished connections held in memory while an earlier one is still open (then spilled)
HOLD_BYTES = 64 << 20


@dataclass
class CaptureStream:
    """One direction of one flow: contiguous runs of bytes between gaps."""

    flow: str
    direction: str  # "client" (towards the MSMQ port) or "server"
    pieces: list[tuple[int, bytes]]
    gaps: list[Gap] = field(default_factory=list)
    problems: list[StreamProblem] = field(default_factory=list)
    timestamps: dict[int, float] = field(default_factory=dict)
    frames: dict[int, int] = field(default_factory=dict)  #: stream offset of a chunk -> frame number

    @property
    def name(self) -> str:
        return f"{self.flow} {self.direction}"


@dataclass
class CaptureReading:
    """What reading the file produced besides segments: the problems, with offsets."""

    records: int = 0  #: records read so far: the frame number of the last one (Wireshark's numbering)
    frames_not_tcp: int = 0
    problems: list[str] = field(default_factory=list)


Connection = tuple[tuple[str, int], tuple[str, int]]


def connection_key(linktype: int, data: bytes, ports: frozenset[int]) -> Connection | None:
    """The TCP connection (its two endpoints, in sorted order) of a frame that
    :func:`harness.capture.frames.decode_tcp` decodes to a segment to or from ``ports``, else
    None; untagged Ethernet II + IPv4 + TCP frames (decode_tcp's fast path, same conditions) are
    read without building the segment."""
    if linktype == 1 and len(data) >= 54:
        etype, vihl, total, frag, proto, src, dst = ETH_IPV4_TCP.unpack_from(data, 0)
        if etype == 0x0800 and vihl == 0x45 and proto == 6 and not frag & 0x3FFF and total >= 40:
            sport, dport, _seq, _ack, offl = TCP_HEADER.unpack_from(data, 34)
            hl = (offl >> 12) * 4
            if hl >= 20 and 34 + hl <= 14 + total and 34 + hl <= len(data):
                if sport not in ports and dport not in ports:
                    return None
                a, b = (addr4(src), sport), (addr4(dst), dport)
                return (a, b) if a <= b else (b, a)
    seg = decode_tcp(linktype, data)
    if not isinstance(seg, TcpSegment) or (seg.sport not in ports and seg.dport not in ports):
        return None
    return segment_connection(seg)


def view_connections(views: Iterable[RecordView], ports: frozenset[int]) -> Iterator[tuple[int, float, Connection]]:
    """(record offset, timestamp, connection) of the records (as
    :data:`harness.capture.pcapcommon.RecordView`) for which :func:`connection_key` gives one: the
    first, light pass of a two-pass reading.  Untagged Ethernet II + IPv4 + TCP frames are read in
    place (no bytes copied); the others go through :func:`connection_key`."""
    eth = ETH_IPV4_ENDPOINTS.unpack_from
    u16 = _U16.unpack_from
    cache = ENDPOINTS4_SEEN
    for offset, ts, linktype, buf, start, stop in views:
        if linktype == 1 and stop - start >= 54:
            etype, vihl, total, frag, proto, ends = eth(buf, start)
            if etype == 0x0800 and vihl == 0x45 and proto == 6 and not frag & 0x3FFF and total >= 40:
                hl = (u16(buf, start + 46)[0] >> 12) * 4  # the TCP data offset
                if hl >= 20 and 34 + hl <= 14 + total and 34 + hl <= stop - start:
                    e = cache.get(ends) or endpoints4(ends)
                    if e[1] in ports or e[3] in ports:
                        yield offset, ts, e[4]
                    continue
        key = connection_key(linktype, buf[start:stop], ports)
        if key is not None:
            yield offset, ts, key


def segment_connection(seg: TcpSegment) -> Connection:
    """The connection of a decoded segment, as :func:`connection_key` names it."""
    a, b = (seg.src, seg.sport), (seg.dst, seg.dport)
    return (a, b) if a <= b else (b, a)


def connection_ends(
    first: Iterable[tuple[int, float, Hashable]], ordered: bool = True
) -> tuple[frozenset[int], dict[int, int]]:
    """What the first, light reading of a capture (``(record offset, timestamp, connection)`` of
    the records kept, in file order) tells the second: the offset of each connection's last
    record and, with ``ordered``, each connection's rank by the timestamp of its first record
    (ties: file order), keyed by that record's offset."""
    firsts: dict[Hashable, tuple[float, int]] = {}  # only to order the connections
    lasts: dict[Hashable, int] = {}
    for offset, ts, key in first:
        if ordered and key not in firsts:
            firsts[key] = (ts, offset)
        lasts[key] = offset
    starts = {at[1]: n for n, at in enumerate(sorted(firsts.values()))} if ordered else {}
    return frozenset(lasts.values()), starts


class _Waiting(Generic[T]):
    """Finished connections waiting for the one due, by rank: in memory up to ``hold`` bytes (by
    ``size``), beyond that pickled to a temporary file (:class:`SpillFile`)."""

    def __init__(self, size: Callable[[T], int], hold: int) -> None:
        self.size = size
        self.hold = hold
        self.held = 0
        self.spill = SpillFile()
        self.by_rank: dict[int, tuple[list[T] | None, tuple[int, int], int]] = {}  # items or where, weight

    def __contains__(self, rank: int) -> bool:
        return rank in self.by_rank

    def put(self, rank: int, items: list[T]) -> None:
        weight = sum(self.size(i) for i in items)
        if self.held + weight > self.hold:
            self.by_rank[rank] = (None, self.spill.put(items), 0)
        else:
            self.by_rank[rank] = (items, (0, 0), weight)
            self.held += weight

    def park(self, rank: int, items: list[T]) -> None:
        """Keep ``items`` in memory whatever they weigh (the reading is over)."""
        self.by_rank[rank] = (items, (0, 0), 0)

    def take(self, rank: int) -> list[T]:
        items, where, weight = self.by_rank.pop(rank)
        if items is None:
            spilled: list[T] = self.spill.get(where)
            return spilled
        self.held -= weight
        return items

    def ranks(self) -> list[int]:
        return sorted(self.by_rank)

    def close(self) -> None:
        self.spill.close()


def by_connection(
    first: Iterable[tuple[int, float, Hashable]],
    second: Iterable[tuple[int, Hashable, T]],
    *,
    ordered: bool = True,
    size: Callable[[T], int] = lambda item: 100,
    hold: int = HOLD_BYTES,
) -> Iterator[list[T]]:
    """The items of each TCP connection, as soon as the connection's last one has been read.

    ``first`` and ``second`` are two readings of the same capture: ``(record offset, timestamp,
    connection)`` and ``(record offset, connection, item)`` of the records kept, in file order
    (the connection values of the two readings need not be alike: only offsets are compared).
    With ``ordered`` the connections come in the order of their first record's timestamp (ties:
    file order), as :func:`reassemble` sorted by ``Flow.first_ts`` gives them; a connection that
    ends before an earlier one waits, in a temporary file once more than ``hold`` bytes (by
    ``size``) wait.  Without, each comes as it ends.  Memory: the open connections, the waiting
    ones up to ``hold``, and two small numbers per connection."""
    ends, starts = connection_ends(first, ordered)
    unknown = itertools.count(len(starts))  # connections the first reading did not see
    open_: dict[Hashable, list[T]] = {}
    rank: dict[Hashable, int] = {}
    waiting = _Waiting(size, hold)
    due = 0
    try:
        for offset, key, item in second:
            items = open_.get(key)
            if items is None:
                items = open_[key] = []
                n = starts.get(offset)
                rank[key] = next(unknown) if n is None else n
            items.append(item)
            if offset not in ends:
                continue
            del open_[key]
            n = rank.pop(key)
            if not ordered:
                yield items
            elif n != due:
                waiting.put(n, items)
            else:
                yield items
                due += 1
                while due in waiting:
                    yield waiting.take(due)
                    due += 1
        # whatever the first reading did not see end (a file that changed in between)
        for key in sorted(open_, key=lambda k: rank[k]):
            waiting.park(rank[key], open_.pop(key))
        for n in waiting.ranks():
            yield waiting.take(n)
    finally:
        waiting.close()


def _records(path: str | Path) -> Iterator[Record | CaptureProblem]:
    with open_regular(path) as f:  # a device or a FIFO is never read
        yield from iter_records(f, path=str(path))


def numbered_segments(
    path: str | Path, ports: frozenset[int], reading: CaptureReading
) -> Iterator[tuple[int, float, int, TcpSegment]]:
    """The TCP segments to or from ``ports`` as (record offset, timestamp, frame number, segment),
    in file order; problems go to ``reading``.  The frame number is the 1-based index of
    the record among all the records of the file, as Wireshark numbers frames."""
    for item in _records(path):
        if isinstance(item, CaptureProblem):
            reading.problems.append(str(item))
            continue
        assert isinstance(item, Record)
        reading.records += 1
        seg = decode_tcp(item.linktype, item.data)
        if seg is None:
            reading.frames_not_tcp += 1
        elif isinstance(seg, FrameProblem):
            reading.problems.append(f"{path}: record at {item.offset}: {seg.reason} (frame byte {seg.offset})")
        elif seg.sport in ports or seg.dport in ports:
            yield item.offset, item.ts, reading.records, seg


def capture_segments(
    path: str | Path, ports: Iterable[int], reading: CaptureReading
) -> Iterator[tuple[float, TcpSegment]]:
    """TCP segments to or from ``ports``, in capture order; problems go to ``reading``."""
    for _offset, ts, _frame, seg in numbered_segments(path, frozenset(ports), reading):
        yield ts, seg


def record_connections(path: str | Path, ports: frozenset[int]) -> Iterator[tuple[int, float, Connection]]:
    """(record offset, timestamp, connection) of the records of ``path`` that :func:`connection_key`
    gives a connection to or from ``ports``: the first, light reading of a capture file."""
    for item in _records(path):
        if isinstance(item, Record):
            key = connection_key(item.linktype, item.data, ports)
            if key is not None:
                yield item.offset, item.ts, key


def capture_streams(
    path: str | Path, ports: Iterable[int] = frozenset({1801}), reading: CaptureReading | None = None
) -> Iterator[CaptureStream]:
    """Both directions of every MSMQ flow in the capture, client side first, flows in the order
    of their first segment's timestamp; each flow as soon as it is whole (the file is read twice:
    :func:`by_connection`), so memory does not grow with the capture."""
    for flow, _low in capture_flows(path, ports, reading):
        for direction, side in (("client", flow.client), ("server", flow.server)):
            if side.pieces or side.gaps:
                yield CaptureStream(
                    flow.id, direction, side.pieces, side.gaps, side.problems, side.timestamps, side.frames
                )


def capture_flows(
    path: str | Path,
    ports: Iterable[int] = frozenset({1801}),
    reading: CaptureReading | None = None,
    *,
    ordered: bool = True,
) -> Iterator[tuple[Flow, int]]:
    """Every MSMQ flow of the capture, reassembled with the frame number of each chunk
    (:attr:`harness.capture.tcp.Direction.frames`), as soon as it is whole (:func:`by_connection`):
    with ``ordered`` in the order of their first segment's timestamp, else as each ends.

    Each flow comes with a low mark: without ``ordered``, every flow still to come has all its
    frames at or above it (the lowest first frame of the connections still open, else the next
    frame to read), so what was completed by an earlier frame can be written out in capture
    order; with ``ordered`` the mark is 0."""
    reading = reading if reading is not None else CaptureReading()
    port_set = frozenset(ports)
    open_first: dict[Connection, int] = {}
    firsts: list[tuple[int, Connection]] = []

    def keyed() -> Iterator[tuple[int, Connection, tuple[float, TcpSegment, int]]]:
        for offset, ts, frame, seg in numbered_segments(path, port_set, reading):
            key = segment_connection(seg)
            if not ordered and key not in open_first:
                open_first[key] = frame
                heapq.heappush(firsts, (frame, key))
            yield offset, key, (ts, seg, frame)

    for segments in by_connection(record_connections(path, port_set), keyed(), ordered=ordered, size=_segment_size):
        low = 0
        if not ordered:
            open_first.pop(segment_connection(segments[0][1]), None)
            while firsts and open_first.get(firsts[0][1]) != firsts[0][0]:
                heapq.heappop(firsts)
            low = firsts[0][0] if firsts else reading.records + 1
        for flow in reassemble(segments, port_set).values():
            yield flow, low


def _segment_size(item: tuple[float, TcpSegment, int]) -> int:
    return 200 + len(item[1].payload)
