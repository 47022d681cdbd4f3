"""MSMQ framing of a TCP byte stream: [MS-MQMQ] 2.2.19.1 BaseHeader.PacketSize cuts a stream into
packets, each parsed non-strictly (a UserMessage keeps the [MS-MQRR] 2.2.5 headers that follow it),
after a gap from the next plausible BaseHeader; a Ping datagram ([MS-MQQB] 2.2.7) is recognised.

The capture's middle step (frames -> flows -> **streams -> packets**): :class:`StreamDecoder` takes
one direction of a TCP connection chunk by chunk as reassembly delivers it and holds at most one
incomplete packet, never the stream; :func:`decode_pieces` and :func:`decode_stream` cut whole runs
the same way.  What a stream held is a :class:`StreamReport` of :class:`DecodedPacket` s, framing
errors (field path and byte offset, :class:`packets.PacketError`), gaps and undecoded bytes.

Layer: ``harness.capture`` (imports ``packets`` only); :mod:`harness.decoding` (the edge that
reads a user's files) and :mod:`harness.capture.connection` build on it.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import packets
from packets import Packet, PacketError, wire_length
from packets.base import BASE_HEADER_SIZE, MAX_PACKET_SIZE, SIGNATURE

__all__ = [
    "DecodedPacket",
    "Event",
    "Key",
    "RowSink",
    "StreamDecoder",
    "StreamReport",
    "decode_pieces",
    "decode_stream",
    "resync",
]

_U32 = struct.Struct("<L")
_BASE = struct.Struct("<BBHLLL")  # [MS-MQMQ] 2.2.19.1 BaseHeader
_SESSION_HEADER_SIZE = 16  # a UserMessage's SessionHeader, not counted in PacketSize
_EXTENSION_HEADER_SIZE = 12  # [MS-MQRR] 2.2.5.2 ExtensionHeader.HeaderSize


@dataclass(slots=True)
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


#: what a stream's packets may be given to instead of a ``sink`` of :class:`DecodedPacket`: the
#: packet's index, stream offset, parse, bytes and :data:`Key` (no object made per packet)
RowSink = Callable[[int, int, Packet, bytes, Key], None]


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
    with its :data:`Key` (given ``rows`` instead, a :data:`RowSink`, the packet's fields go to it
    as they are, no object made per packet); :attr:`report` gathers the rest (gaps, resynchronisations, framing
    errors, the bytes of an incomplete packet at the end of each run).  :meth:`chunk`,
    :meth:`gap` and :meth:`end` return the :class:`Event` of the first run for the session
    observer: a run in which framing fails gives the error, and not the packets completed by the
    chunk that completed the bad header (a splitter fed those chunks never returns them)."""

    def __init__(
        self,
        name: str,
        sink: Callable[[DecodedPacket, Key], None] | None = None,
        flow: str = "",
        *,
        rows: RowSink | None = None,
    ) -> None:
        self.name = name
        self.sink = sink
        self.rows = rows
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
        rows = self.rows
        marks = self._marks
        unpack = _BASE.unpack_from
        parse = packets.parse
        base = self._at
        index = self.index
        while n - pos >= 16:
            at = base + pos
            _v, _r, flags, signature, size, _t = unpack(buf, pos)
            if signature != SIGNATURE or not BASE_HEADER_SIZE <= size <= MAX_PACKET_SIZE:  # as wire_length
                self.index = index
                return self._bad_header(at, out)
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
            if rows is not None:
                rows(index, at, packet, raw, key)
            elif sink is not None:
                when = frame_ts if frame else (ts if timed else None)
                sink(DecodedPacket(self.name, index, at, packet, raw, frame, when), key)
            index += 1
            if first:
                if out is _NO_EVENTS:
                    out = []
                out.append(_new_event(Event, (key, at, raw, packet, None, chunk)))
            pos += length
        self.index = index
        if pos:
            del buf[:pos]
            self._at += pos
            self._trim()
        return out

    def _bad_header(self, at: int, out: list[Event]) -> list[Event]:
        """The BaseHeader at stream offset ``at`` cannot start a packet: the run's framing stops
        (the error reported); in the first run the observer is given the error in place of the
        packets completed by the chunk that completed the bad header."""
        pos = at - self._at
        e = _framing_error(bytes(self._buf[pos : pos + 16]), at)
        self.report.errors.append(e)
        self._mode = _DEAD
        if self.run == 0:
            stamp = self._stamp(at + 15)  # the splitter raises once the header's 16 bytes are in
            out = [ev for ev in out if ev.chunk != stamp[4]]
            out.append(Event((stamp[1], stamp[2]), at, None, None, e, stamp[4]))
        self._buf = bytearray()
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
