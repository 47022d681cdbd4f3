"""Decoding inputs a user hands the harness: hex dumps, raw session streams and captures.

The edge between files and the codec: reads a hex file, a raw TCP byte stream or a pcap/pcapng
capture (TCP payloads on the MSMQ ports, reassembled per direction), cuts each stream into
packets by [MS-MQMQ] 2.2.19.1 BaseHeader.PacketSize and decodes them non-strictly, so every
problem is reported with its stream offset, field path and byte offset, and nothing stops the
rest of the input from being decoded.  Ping datagrams ([MS-MQQB] 2.2.7) are recognised in hex
input.  A capture's packets carry the frame number (Wireshark's) and capture time of the frame
that completed them, and each TCP connection is checked against the [MS-MQQB] 3.1 session rules by
the passive observer in the order the capture proves, exactly as the pipeline checks it
(:class:`harness.capture.connection.Connection`, shared with :mod:`harness.pipeline.flows`).

Memory does not grow with an input: a stream is cut into packets as its bytes come
(:class:`StreamDecoder`), a capture's connections are fed segment by segment, and what must wait
to be printed in order waits in a temporary file beyond a budget.  Devices, FIFOs and sockets
are never read (:mod:`harness.files`).
"""
from __future__ import annotations

import heapq
import itertools
import re
import struct
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

import packets
from packets import Packet, PacketError, wire_length
from packets.base import BASE_HEADER_SIZE, MAX_PACKET_SIZE, SIGNATURE

if TYPE_CHECKING:
    from harness.capture.connection import Connection, ConnectionResult
    from harness.capture.spill import SpillFifo, SpillPool
    from harness.capture.streams import CaptureReading

__all__ = [
    "ORDERS",
    "DecodedPacket",
    "Event",
    "Key",
    "StreamDecoder",
    "StreamReport",
    "decode_file",
    "decode_pieces",
    "decode_stream",
    "read_hex",
    "resync",
]

#: orders of a capture's packets: per stream (connections by first segment, client stream first)
#: or in capture order (by the frame that completed each packet, across streams)
ORDERS = ("stream", "capture")

PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1",
    b"\xa1\xb2\xc3\xd4",
    b"\x4d\x3c\xb2\xa1",
    b"\xa1\xb2\x3c\x4d",
    b"\x0a\x0d\x0d\x0a",
}
_HEX_LINE = re.compile(r"^[0-9A-Fa-f\s]*$")
_U32 = struct.Struct("<L")
_BASE = struct.Struct("<BBHLLL")  # [MS-MQMQ] 2.2.19.1 BaseHeader
_SESSION_HEADER_SIZE = 16  # a UserMessage's SessionHeader, not counted in PacketSize
_EXTENSION_HEADER_SIZE = 12  # [MS-MQRR] 2.2.5.2 ExtensionHeader.HeaderSize


@dataclass
class DecodedPacket:
    """A packet and where it was found: stream name, index and stream offset; in a capture also
    the frame number (1-based record index, as Wireshark numbers frames) and capture time of the
    frame that completed it."""

    stream: str
    index: int
    offset: int
    packet: Packet
    data: bytes
    frame: int = 0  #: 0: not from a capture
    time: float | None = None


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
    #: the session rules the TCP connection broke ([MS-MQQB] 3.1, :class:`harness.session.RuleViolation`),
    #: on the last report of the connection
    violations: list[Any] = field(default_factory=list)
    flow: str = ""  #: the TCP connection (flow id) of a capture stream


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


#: a packet's place in capture order: the latest capture time and the latest frame number of the
#: chunks of its stream up to its last byte (each a running maximum: both grow along a stream)
Key = tuple[float, int]


#: a chunk's stream offset and what the chunks of its stream up to it say: the latest capture time,
#: the latest frame number and that frame's capture time, the chunk's number in the stream, and
#: whether any came with a capture time
_Stamp = tuple[int, float, int, float, int, bool]


class Event(NamedTuple):
    """A packet (``data`` and its parse) or a framing ``error`` of a stream's first run, for the
    session observer, with its :data:`Key` and the number of the chunk that completed it."""

    key: Key
    offset: int
    data: bytes | None
    packet: Packet | None
    error: PacketError | None
    chunk: int


_new_event = tuple.__new__  # an Event of all its fields without NamedTuple's Python-level __new__

_FRAME, _RESYNC, _DEAD = 0, 1, 2
_NO_EVENTS: list[Event] = []  # returned when there is none (never changed)
_HOLD = -1  # a UserMessage whose following bytes do not yet say whether an ExtensionHeader follows
_LIOR = b"LIOR"


def _framing_error(header: bytes, at: int) -> PacketError:
    """What :func:`packets.wire_length` raises for a BaseHeader at stream offset ``at`` that cannot
    start a packet."""
    try:
        wire_length(header, at)
    except PacketError as e:
        return e
    raise AssertionError(f"wire_length took the BaseHeader at {at}")  # pragma: no cover


class StreamDecoder:
    """One direction of a TCP connection, chunk by chunk as reassembly delivers it: each run of
    bytes between gaps is cut into packets by [MS-MQMQ] 2.2.19.1 BaseHeader.PacketSize and each
    packet parsed non-strictly, exactly as :func:`decode_pieces` cuts whole runs -- after a gap
    from the next plausible BaseHeader (:func:`resync`); a UserMessage keeps the [MS-MQRR] 2.2.5
    headers that follow it (:class:`packets.StreamSplitter`), so it is held until four more bytes
    say whether an ExtensionHeader follows or its run ends; at a header that cannot start a packet
    the run's framing stops (the error is reported) until the next gap.

    What it holds: the bytes of one incomplete packet (with those four), or after a gap the few
    bytes searched for a BaseHeader -- never the stream.  Each packet goes to ``sink`` as a
    :class:`DecodedPacket` stamped with the frame that completed it (the latest frame number of
    the chunks up to its last byte, as Wireshark numbers frames) and that frame's capture time,
    with its :data:`Key`; :attr:`report` gathers the rest (gaps, resynchronisations, framing
    errors, the bytes of an incomplete packet at the end of each run).  :meth:`chunk`,
    :meth:`gap` and :meth:`end` return the :class:`Event` of the first run for the session
    observer: a run in which framing fails gives the error, and not the packets completed by the
    chunk that completed the bad header (a splitter fed those chunks never returns them)."""

    def __init__(self, name: str, sink: Callable[[DecodedPacket, Key], None] | None = None, flow: str = "") -> None:
        self.name = name
        self.sink = sink
        self.report = StreamReport(name, flow=flow)  #: everything but the packets (given to ``sink``)
        self.index = 0  #: packets so far
        self.run = -1  #: the current run (0: the first)
        self.ts = 0.0  #: the latest capture time of the chunks so far
        self.frame = 0  #: the latest frame number of the chunks so far
        self.offset = 0  #: stream offset of the latest chunk
        self.chunks = 0
        self.carried = False  #: a byte was delivered
        self.gapped = False  #: a gap was met
        #: the key and number of the first chunk after the first gap
        self.cut: tuple[float, int, int] | None = None
        self.held: Key | None = None  #: the key of a whole UserMessage held for what follows it
        self._frame_ts = 0.0
        self._timed = False
        self._mode = _DEAD
        self._boundary = True  # the next chunk starts a run
        self._buf = bytearray()
        self._at = 0  # stream offset of _buf[0]
        self._run_base = 0
        self._run_end = 0
        self._scan = 0
        self._want = 0  # stream offset the bytes must reach to complete the packet begun
        self._marks: deque[_Stamp] = deque()  # of the chunks in _buf

    @property
    def buffered(self) -> int:
        """Bytes held (an incomplete packet, or bytes searched for a BaseHeader)."""
        return len(self._buf)

    def chunk(self, offset: int, data: bytes, ts: float | None = None, frame: int = 0) -> list[Event]:
        """The bytes at stream ``offset``, captured at ``ts`` in frame number ``frame``."""
        if not data:
            return _NO_EVENTS
        self.carried = True
        if self._boundary:
            self._start(offset)
        if ts is not None:
            self._timed = True
            if ts > self.ts:
                self.ts = ts
        if frame > self.frame:
            self.frame, self._frame_ts = frame, ts if ts is not None else 0.0
        self.chunks += 1
        self.offset = offset
        if self.gapped and self.cut is None:
            self.cut = (self.ts, self.frame, self.chunks)
        self._run_end = offset + len(data)
        if self._mode == _DEAD:
            return _NO_EVENTS
        self._marks.append((offset, self.ts, self.frame, self._frame_ts, self.chunks, self._timed))
        self._buf += data
        if self._mode == _RESYNC:
            if not self._resync(False):
                return _NO_EVENTS
        elif self._run_end < self._want:  # the packet begun is not whole yet
            return _NO_EVENTS
        return self._frame(False)

    def gap(self, offset: int, length: int) -> list[Event]:
        """``length`` bytes at ``offset`` never arrived: the run ends."""
        self.report.gaps.append((offset, length))
        self.gapped = True
        return self.boundary()

    def boundary(self) -> list[Event]:
        """The run ends (the next chunk starts one, after a gap)."""
        out = self._end_run() if not self._boundary else _NO_EVENTS
        self._boundary = True
        return out

    def end(self) -> list[Event]:
        """The end of the stream."""
        return self.boundary()

    # ---------------------------------------------------------------------------------------

    def _start(self, offset: int) -> None:
        self.run += 1
        self._boundary = False
        self._mode = _FRAME if self.run == 0 else _RESYNC
        self._buf = bytearray()
        self._at = self._run_base = self._run_end = offset
        self._scan = 0
        self._want = 0
        self._marks.clear()
        self.held = None

    def _end_run(self) -> list[Event]:
        out = _NO_EVENTS
        if self._mode == _RESYNC and not self._resync(True):
            length = self._run_end - self._run_base
            if length:
                self.report.skipped.append((self._run_base, length))
            self._mode = _DEAD
        if self._mode == _FRAME:
            out = self._frame(True)
            if self._mode == _FRAME:
                self.report.trailing += len(self._buf)
        self._mode = _DEAD
        self._buf = bytearray()
        self._marks.clear()
        self.held = None
        return out

    def _trim(self) -> None:
        marks, at = self._marks, self._at
        while len(marks) > 1 and marks[1][0] <= at:
            marks.popleft()

    def _stamp(self, offset: int) -> _Stamp:
        """The stamp of the chunk holding stream offset ``offset`` (offsets asked only grow)."""
        marks = self._marks
        while len(marks) > 1 and marks[1][0] <= offset:
            marks.popleft()
        return marks[0]

    def _resync(self, final: bool) -> bool:
        """After a gap: drop bytes up to the first plausible BaseHeader (as :func:`resync` finds it
        in the whole run); True once found, framing from there."""
        buf = self._buf
        start = max(self._scan, 4 - (self._at - self._run_base))
        while True:
            hit = buf.find(_LIOR, start)
            if hit < 0:
                break
            c = hit - 4
            if len(buf) < c + 16:
                if not final:
                    self._scan = hit
                    return False
                start = hit + 1
                continue
            if buf[c] == 0x10:
                try:
                    wire_length(bytes(buf[c : c + 16]))
                except PacketError:
                    pass
                else:
                    skip = self._at + c - self._run_base
                    if skip:
                        self.report.skipped.append((self._run_base, skip))
                    del buf[:c]
                    self._at += c
                    self._scan = 0
                    self._mode = _FRAME
                    self._trim()
                    return True
            start = hit + 1
        nxt = max(start, len(buf) - 3)  # a signature may begin in the last three bytes
        cut = max(0, nxt - 4)  # and its BaseHeader four bytes before
        if cut:
            del buf[:cut]
            self._at += cut
            self._trim()
        self._scan = nxt - cut
        return False

    def _trailer(self, pos: int, length: int, final: bool) -> int | None:
        """As :meth:`packets.StreamSplitter._trailer` for the packet of ``length`` bytes at ``pos``,
        but a UserMessage with fewer than four bytes after it is held (:data:`_HOLD`) until its run
        ends: the whole run decides, as when it is fed at once."""
        buf = self._buf
        at = pos + length
        left = len(buf) - at
        if buf[pos + 2] & 0x8:
            return 0
        if left < 4:
            return 0 if final else _HOLD
        if _U32.unpack_from(buf, at)[0] != _EXTENSION_HEADER_SIZE:
            return 0
        if left < _EXTENSION_HEADER_SIZE:
            return None
        total = _EXTENSION_HEADER_SIZE + _U32.unpack_from(buf, at + 4)[0]
        if length + total > MAX_PACKET_SIZE:
            return 0
        return total if left >= total else None

    def _frame(self, final: bool) -> list[Event]:
        buf = self._buf
        n = len(buf)
        pos = 0
        out = _NO_EVENTS
        self.held = None
        self._want = 0
        first = self.run == 0
        sink = self.sink
        marks = self._marks
        unpack = _BASE.unpack_from
        parse = packets.parse
        while n - pos >= 16:
            at = self._at + pos
            _v, _r, flags, signature, size, _t = unpack(buf, pos)
            if signature != SIGNATURE or not BASE_HEADER_SIZE <= size <= MAX_PACKET_SIZE:  # as wire_length
                e = _framing_error(bytes(buf[pos : pos + 16]), at)
                self.report.errors.append(e)
                self._mode = _DEAD
                if first:
                    stamp = self._stamp(at + 15)  # the splitter raises once the header's 16 bytes are in
                    out = [ev for ev in out if ev.chunk != stamp[4]]
                    out.append(Event((stamp[1], stamp[2]), at, None, None, e, stamp[4]))
                self._buf = bytearray()
                return out
            length = size + (_SESSION_HEADER_SIZE if flags & 0x10 and not flags & 0x8 else 0)
            if n - pos < length:
                self._want = at + length
                break
            # not internal: an ExtensionHeader may follow (not if the next 4 bytes are no HeaderSize 12)
            if not flags & 0x8 and (n - pos - length < 4 or _U32.unpack_from(buf, pos + length)[0] == 12):
                extra = self._trailer(pos, length, final)
                if extra is None:
                    break
                if extra == _HOLD:
                    stamp = self._stamp(at + length - 1)
                    self.held = (stamp[1], stamp[2])
                    break
                length += extra
            raw = bytes(memoryview(buf)[pos : pos + length])  # one copy (the view is gone at once)
            last = at + length - 1
            while len(marks) > 1 and marks[1][0] <= last:
                marks.popleft()
            _start, ts, frame, frame_ts, chunk, timed = marks[0]
            packet = parse(raw, False)
            key = (ts, frame)
            if sink is not None:
                when = frame_ts if frame else (ts if timed else None)
                sink(DecodedPacket(self.name, self.index, at, packet, raw, frame, when), key)
            self.index += 1
            if first:
                if out is _NO_EVENTS:
                    out = []
                out.append(_new_event(Event, (key, at, raw, packet, None, chunk)))
            pos += length
        if pos:
            del buf[:pos]
            self._at += pos
            self._trim()
        return out


def decode_pieces(
    name: str, pieces: list[tuple[int, bytes]], gaps: list[tuple[int, int]] | None = None
) -> StreamReport:
    """Decode the runs of one stream; after a gap, resynchronise on the next BaseHeader."""
    found: list[DecodedPacket] = []
    decoder = StreamDecoder(name, lambda item, _key: found.append(item))
    for base, data in pieces:
        decoder.boundary()
        decoder.chunk(base, data)
    decoder.end()
    report = decoder.report
    report.packets = found
    report.gaps = list(gaps or [])
    return report


def decode_stream(name: str, data: bytes) -> StreamReport:
    """Cut a TCP byte stream (or one Ping datagram) into packets and decode each (non-strict)."""
    if _looks_like_ping(data):
        report = StreamReport(name)
        report.packets.append(DecodedPacket(name, 0, 0, packets.parse_ping(data, strict=False), data))
        return report
    return decode_pieces(name, [(0, data)])


#: bytes of packets held for capture order while an earlier connection is still open (then spilled)
HOLD_BYTES = 64 << 20
_BLOCK = 512  # items per spilled block


class _Held:
    """Items ``(frame, seq, report)`` waiting to be written in capture order: a heap in memory up
    to ``hold`` bytes (by the packets' sizes), then spilled to a temporary file as a sorted run
    read back one block at a time, so memory does not grow with the capture."""

    def __init__(self, hold: int) -> None:
        from harness.capture.streams import _Spill

        self.hold = hold
        self.heap: list[tuple[int, int, StreamReport]] = []
        self.weight = 0
        self.spill = _Spill()
        self.runs: list[tuple[tuple[int, int, StreamReport], int]] = []  # (head, run number)
        self.rest: list[Iterator[tuple[int, int, StreamReport]]] = []

    @staticmethod
    def _size(report: StreamReport) -> int:
        return 300 + sum(len(p.data) for p in report.packets)

    def push(self, item: tuple[int, int, StreamReport]) -> None:
        heapq.heappush(self.heap, item)
        self.weight += self._size(item[2])
        if self.weight > self.hold:
            items = sorted(self.heap)
            self.heap, self.weight = [], 0
            blocks = [self.spill.put(items[i : i + _BLOCK]) for i in range(0, len(items), _BLOCK)]
            run = self._read(blocks)
            self.rest.append(run)
            heapq.heappush(self.runs, (next(run), len(self.rest) - 1))

    def _read(self, blocks: list[tuple[int, int]]) -> Iterator[tuple[int, int, StreamReport]]:
        for where in blocks:
            yield from self.spill.get(where)

    def pop_below(self, low: float) -> Iterator[StreamReport]:
        """The items whose frame is below ``low``, in order."""
        while True:
            in_memory = self.heap[0] if self.heap else None
            spilled = self.runs[0][0] if self.runs else None
            if in_memory is not None and (spilled is None or in_memory < spilled):
                if in_memory[0] >= low:
                    return
                heapq.heappop(self.heap)
                self.weight -= self._size(in_memory[2])
                yield in_memory[2]
            elif spilled is not None:
                if spilled[0] >= low:
                    return
                _head, number = heapq.heappop(self.runs)
                following = next(self.rest[number], None)
                if following is not None:
                    heapq.heappush(self.runs, (following, number))
                yield spilled[2]
            else:
                return

    def close(self) -> None:
        self.spill.close()


def _item_weight(item: DecodedPacket) -> int:
    return 3000 + 3 * len(item.data)


def _strip_item(item: DecodedPacket) -> tuple[str, int, int, bytes, int, float | None]:
    return (item.stream, item.index, item.offset, item.data, item.frame, item.time)


def _restore_item(t: tuple[str, int, int, bytes, int, float | None]) -> DecodedPacket:
    return DecodedPacket(t[0], t[1], t[2], packets.parse(t[3], strict=False), t[3], t[4], t[5])


def _tail_reports(result: ConnectionResult) -> list[StreamReport]:
    """The reports decode prints after a connection's packets: the directions that carried bytes
    or lost some (their notes), the violations on the last one."""
    out = [r for d, r in result.reports.items() if result.carried[d] or r.gaps]
    if result.violations:
        if not out:
            out.append(result.reports["client"])
        out[-1].violations = list(result.violations)
    return out


class _Open:
    """A connection being decoded, and where its packets go until it is printed."""

    __slots__ = ("conn", "live", "rank", "serial", "tails", "tapes")
    conn: Connection  # given once the connection can name its sink

    def __init__(self, rank: int, serial: int, tapes: dict[str, SpillFifo[DecodedPacket]]) -> None:
        self.rank = rank
        self.serial = serial
        self.tapes = tapes
        self.live = False  # its client packets are printed as they come
        self.tails: list[StreamReport] | None = None  # once finished


def _decode_capture(
    path: Path,
    ports: frozenset[int],
    order: str,
    reading: CaptureReading,
    hold: int = HOLD_BYTES,
    pool: SpillPool | None = None,
) -> Iterator[StreamReport]:
    """A capture's reports, each connection's segments fed to a
    :class:`harness.capture.connection.Connection` as they are read (the file is read twice: a
    first, light pass finds where each connection ends and, for ``stream`` order, the order of
    their first records).

    ``stream``: connections by their first record's capture time (ties: file order), each one's
    client packets, notes, server packets, notes and violations -- the connection due is printed
    as it is read (its server packets wait for its end), the others wait, beyond a budget in a
    temporary file (:class:`harness.capture.spill.SpillPool`).  ``capture``: one report per
    packet by the frame that completed it, across connections, each held until no connection
    can still bring an earlier frame (beyond ``hold`` bytes in a temporary file); a
    connection's notes and violations at the frame of its last segment."""
    from harness.capture.connection import Connection
    from harness.capture.spill import SpillFifo, SpillPool
    from harness.capture.streams import _connections, _segments, segment_connection
    from harness.capture.tcp import FlowKey

    firsts: dict[Any, tuple[float, int]] = {}
    lasts: dict[Any, int] = {}
    for offset, ts, key in _connections(path, ports):
        if key not in firsts:
            firsts[key] = (ts, offset)
        lasts[key] = offset
    ends = frozenset(lasts.values())
    ranks = {at[1]: n for n, at in enumerate(sorted(firsts.values()))} if order == "stream" else {}
    del firsts, lasts
    unknown = itertools.count(len(ranks))
    serials = itertools.count()
    pool = pool if pool is not None else SpillPool()
    ready: deque[StreamReport] = deque()
    opened: dict[Any, _Open] = {}
    by_rank: dict[int, _Open] = {}
    waiting: dict[int, _Open] = {}
    due = 0
    capture = order == "capture"
    held = _Held(hold) if capture else None
    seq = itertools.count()
    floors: list[tuple[int, int]] = []  # (lowest frame a connection may still stamp, serial), lazily
    floor_of: dict[int, int] = {}

    def sink_of(entry: _Open) -> Callable[[str, DecodedPacket, Any], None]:
        def sink(direction: str, item: DecodedPacket, _key: Any) -> None:
            if held is not None:
                held.push((item.frame, next(seq), StreamReport(item.stream, packets=[item], flow=entry.conn.id)))
            elif entry.live and direction == "client":
                ready.append(StreamReport(item.stream, packets=[item], flow=entry.conn.id))
            else:
                entry.tapes[direction].push(item)

        return sink

    def play(entry: _Open, direction: str) -> None:
        tape = entry.tapes[direction]
        while len(tape):
            item = tape.pop()
            ready.append(StreamReport(item.stream, packets=[item], flow=entry.conn.id))

    def flush(entry: _Open) -> None:
        assert entry.tails is not None
        play(entry, "client")
        tails = {r.name: r for r in entry.tails}
        client = entry.conn.decoders["client"].name
        if client in tails:
            ready.append(tails.pop(client))
        play(entry, "server")
        ready.extend(tails.values())

    def advance() -> None:
        nonlocal due
        while True:
            if due in waiting:
                flush(waiting.pop(due))
                due += 1
                continue
            entry = by_rank.get(due)
            if entry is not None and not entry.live:
                entry.live = True
                play(entry, "client")
            return

    def finish(key: Any, entry: _Open) -> None:
        del opened[key]
        by_rank.pop(entry.rank, None)
        floor_of.pop(entry.serial, None)
        result = entry.conn.finish()
        entry.tails = _tail_reports(result)
        if held is not None:
            end = entry.conn.frame
            for report in entry.tails:
                found, report.violations = report.violations, []
                if report.gaps or report.errors or report.trailing or report.problems or report.skipped:
                    held.push((end, next(seq), report))
                if found:
                    held.push((end, next(seq), StreamReport(entry.conn.id, violations=found, flow=entry.conn.id)))
            return
        waiting[entry.rank] = entry
        advance()

    frame = 0
    try:
        for offset, ts, frame, seg in _segments(path, ports, reading):
            key = segment_connection(seg)
            entry = opened.get(key)
            if entry is None:
                n = ranks.get(offset)
                rank = next(unknown) if n is None else n
                tapes = {d: SpillFifo(pool, _item_weight, _strip_item, _restore_item) for d in ("client", "server")}
                entry = _Open(rank, next(serials), tapes)
                fkey = FlowKey.of(seg.src, seg.sport, seg.dst, seg.dport)[0]
                entry.conn = Connection(fkey, ports, sink_of(entry), pool=pool)
                opened[key] = entry
                if not capture:
                    by_rank[rank] = entry
                    if rank == due:
                        entry.live = True
            entry.conn.feed(ts, seg, frame)
            if offset in ends:
                finish(key, entry)
            elif held is not None:
                low = entry.conn.floor()
                if low != floor_of.get(entry.serial, 0):
                    floor_of[entry.serial] = low
                    if low:
                        heapq.heappush(floors, (low, entry.serial))
            if held is not None:
                while floors and floor_of.get(floors[0][1]) != floors[0][0]:
                    heapq.heappop(floors)
                yield from held.pop_below(min(frame + 1, floors[0][0]) if floors else frame + 1)
            while ready:
                yield ready.popleft()
        for key, entry in sorted(opened.items(), key=lambda kv: kv[1].rank):  # not seen to end by the first pass
            finish(key, entry)
        if held is not None:
            yield from held.pop_below(float("inf"))
        for rank in sorted(waiting):  # after a connection the second reading never met
            flush(waiting.pop(rank))
        while ready:
            yield ready.popleft()
    finally:
        pool.close()
        if held is not None:
            held.close()


def _is_capture(head: bytes) -> bool:
    return head[:4] in PCAP_MAGICS


#: bytes of an input decode's input check reads, at most (a hex dump is judged by the complete
#: lines in them)
INPUT_PREFIX = 1 << 16
#: bytes of a raw stream or hex dump decoded in memory at once; a longer one is read in pieces
_WHOLE = 1 << 16
_HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")


def hex_text(raw: bytes, whole: bool) -> str:
    """The text of ``raw`` -- the first bytes of an input, or all of it when ``whole`` -- that
    :func:`read_hex` judges whether the input is a hex dump by: all of it, else its complete
    lines (of a first line longer than ``raw``, an even number of its hex digits).  Raises
    UnicodeDecodeError when the bytes are not ASCII."""
    text = raw.decode("ascii")
    if whole:
        return text
    cut = text.rfind("\n")
    if cut >= 0:
        return text[: cut + 1]
    body = text.split("#", 1)[0]
    if sum(c in "0123456789abcdefABCDEF" for c in body) % 2:
        last = max(body.rfind(c) for c in "0123456789abcdefABCDEF")
        text = text[:last]
    return text


_HEX_RUN = re.compile(rb"[0-9A-Fa-f \t\n\r\x0b\x0c\x1c-\x1f]*")
_LINE_BREAK = re.compile(rb"[\n\r\x0b\x0c\x1c\x1d\x1e]")
_SPACE = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"


def _hex_digits(f: BinaryIO) -> Iterator[bytes]:
    """The hex digits of a hex dump (:func:`read_hex`: whitespace-separated hex digits, ``#`` to
    the end of the line a comment), a piece of the file at a time; ValueError at the first byte
    that is neither (or not ASCII)."""
    in_comment = False
    while True:
        chunk = f.read(_WHOLE)
        if not chunk:
            return
        out = bytearray()
        pos = 0
        while pos < len(chunk):
            if in_comment:
                m = _LINE_BREAK.search(chunk, pos)
                end = m.end() if m else len(chunk)
                if not chunk[pos:end].isascii():
                    raise ValueError("not ASCII")
                in_comment = m is None
                pos = end
                continue
            m = _HEX_RUN.match(chunk, pos)
            assert m is not None
            out += m.group().translate(None, _SPACE)
            pos = m.end()
            if pos < len(chunk):
                if chunk[pos] != ord("#"):
                    raise ValueError(f"not hex at byte {pos}")
                in_comment = True
                pos += 1
        yield bytes(out)


def _is_hex_file(f: BinaryIO) -> bool:
    """Is the whole file a hex dump that :func:`read_hex` takes (digits, an even number of them)?"""
    try:
        digits = sum(len(piece) for piece in _hex_digits(f))
    except ValueError:
        return False
    return digits > 0 and digits % 2 == 0


def _hex_pieces(f: BinaryIO) -> Iterator[bytes]:
    """The bytes of a hex dump (:func:`_is_hex_file`), a piece at a time."""
    pending = b""
    for digits in _hex_digits(f):
        pending += digits
        even = len(pending) - len(pending) % 2
        if even:
            yield bytes.fromhex(pending[:even].decode("ascii"))
            pending = pending[even:]


def _decode_bytes(path: Path) -> Iterator[StreamReport]:
    """A raw stream or a hex dump: in memory when short (a Ping datagram is recognised), else cut
    into packets a piece at a time (:class:`StreamDecoder`), the packets reported as they come."""
    from harness.files import open_regular

    with open_regular(path) as f:
        hexed = _is_hex_file(f)
        f.seek(0)
        pieces: Iterator[bytes] = _hex_pieces(f) if hexed else iter(lambda: f.read(_WHOLE), b"")
        first = next(pieces, b"")
        second = next(pieces, b"")
        if not second:  # all of it in one piece
            yield decode_stream(path.name, first)
            return
        found: list[DecodedPacket] = []
        decoder = StreamDecoder(path.name, lambda item, _key: found.append(item))
        offset = 0
        for piece in itertools.chain((first, second), pieces):
            decoder.chunk(offset, piece)
            offset += len(piece)
            if found:
                yield StreamReport(path.name, packets=found)
                found = []
        decoder.end()
        if found:
            yield StreamReport(path.name, packets=found)
        yield decoder.report


def decode_file(
    path: str | Path, ports: frozenset[int] = frozenset({1801}), order: str = "stream"
) -> Iterator[StreamReport]:
    """Decode a hex file, a raw stream or a capture; the packets of each stream (per direction)
    in one report or several, then one with its notes.

    In a capture, each connection's session violations are on the last report of the connection;
    with ``order="capture"`` each report holds one packet (or a stream's notes, or a connection's
    violations) and they come by the frame that completed them, across streams.  A device, a
    FIFO or a socket is never read (:class:`harness.files.NotRegularFile`)."""
    from harness.files import open_regular

    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {order!r}")
    path = Path(path)
    with open_regular(path) as f:
        head = f.read(4)
    if _is_capture(head):
        from harness.capture.streams import CaptureReading

        reading = CaptureReading()
        yield from _decode_capture(path, frozenset(ports), order, reading)
        if reading.problems:
            yield StreamReport(path.name, problems=reading.problems)
        return
    yield from _decode_bytes(path)
