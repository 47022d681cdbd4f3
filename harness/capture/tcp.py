"""TCP flows and stream reassembly, sans-IO: renders the RFC 9293 sequence-space rules (section 3.4:
sequence numbers modulo 2**32, the SYN and FIN each occupying one sequence number, the initial
sequence number carried by the SYN) for a passive observer. A :class:`TcpReassembler` is fed one
direction's segments in capture order and hands back the in-order byte stream as :class:`Chunk`
events tagged with stream offsets and capture timestamps; out-of-order data is buffered (bounded),
retransmitted and overlapping bytes are dropped with the first copy winning (a conflicting
retransmission is recorded), and every range that never arrives is reported as a :class:`Gap` in
the event stream and in :attr:`TcpReassembler.gaps` -- the stream continues after it, it is never
papered over. :func:`reassemble` groups segments into bidirectional flows keyed by :class:`FlowKey`.
"""

from __future__ import annotations

import bisect
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

from harness.capture.frames import FIN, RST, SYN, TcpSegment

__all__ = [
    "Chunk",
    "Direction",
    "Flow",
    "FlowKey",
    "Gap",
    "StreamProblem",
    "TcpReassembler",
    "a_is_client",
    "reassemble",
]

_MOD = 1 << 32
_HALF = 1 << 31

#: Default bound on out-of-order data held ahead of the next expected byte.
MAX_AHEAD = 1 << 20
#: Delivered bytes kept to compare retransmissions against (detects conflicting overlaps).
HISTORY = 1 << 16


class Chunk(NamedTuple):
    offset: int  #: stream offset of data[0] (0 = first byte after the SYN, or first byte seen)
    ts: float  #: capture timestamp of the segment that carried these bytes
    data: bytes
    frame: int = 0  #: frame number (1-based record index in the capture) of that segment; 0 unknown


_new_chunk = tuple.__new__  # a Chunk of all its fields without NamedTuple's Python-level __new__


class Gap(NamedTuple):
    stream_offset: int
    length: int
    reason: str = "missing"


class StreamProblem(NamedTuple):
    stream_offset: int
    ts: float
    reason: str


@lru_cache(maxsize=65536)
def _addr_key(addr: str) -> tuple[int, bytes]:
    if ":" in addr:
        return (6, socket.inet_pton(socket.AF_INET6, addr))
    try:
        return (4, socket.inet_pton(socket.AF_INET, addr))
    except OSError:
        return (9, addr.encode())


def _endpoint(addr: str, port: int) -> str:
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


class FlowKey(NamedTuple):
    """A TCP connection independent of direction: endpoint ``a`` sorts before endpoint ``b``."""

    a: str
    a_port: int
    b: str
    b_port: int

    @classmethod
    def of(cls, src: str, sport: int, dst: str, dport: int) -> tuple[FlowKey, bool]:
        """The canonical key and whether (src, sport) is endpoint ``a``."""
        if (_addr_key(src), sport) <= (_addr_key(dst), dport):
            return cls(src, sport, dst, dport), True
        return cls(dst, dport, src, sport), False

    @property
    def id(self) -> str:
        """Stable text id, e.g. ``10.0.0.1:49759-10.0.0.2:1801/tcp``."""
        return f"{_endpoint(self.a, self.a_port)}-{_endpoint(self.b, self.b_port)}/tcp"

    def __str__(self) -> str:
        return self.id


class TcpReassembler:
    """One direction of a TCP connection: sequence numbers in, ordered stream chunks out.

    :meth:`feed` and :meth:`flush` return the events (:class:`Chunk` and :class:`Gap`) in stream
    order; gaps and problems are also accumulated in :attr:`gaps` and :attr:`problems`.
    """

    def __init__(self, max_ahead: int = MAX_AHEAD, history: int = HISTORY) -> None:
        self.max_ahead = max_ahead
        self.history = history
        self.isn: int | None = None  #: sequence number of stream offset 0
        self.syn_seen = False
        self.next = 0  #: stream offset of the next expected byte
        self.fin_at: int | None = None  #: stream offset where the FIN sits
        self.reset = False
        self.gaps: list[Gap] = []
        self.problems: list[StreamProblem] = []
        self.retransmitted = 0  #: bytes received again (identical or not) after delivery
        self.keepalives = 0  #: one-byte keep-alive probes at the last delivered byte (not compared)
        self._starts: list[int] = []  # sorted starts of buffered out-of-order pieces
        self._pieces: dict[int, tuple[float, bytes, int]] = {}
        self._ahead = 0  # buffered bytes
        self._hist = bytearray()  # the last `history` delivered bytes, ending at self.next
        self._last_ts = 0.0
        #: while out-of-order data is held: the lowest capture time and the lowest frame number of
        #: the pieces held since the hold began (a lower bound of those still held), else None
        self.floor: tuple[float, int] | None = None

    # ---------------------------------------------------------------- helpers

    def _offset(self, seq: int) -> int:
        """Stream offset of ``seq``: the representative nearest the next expected byte."""
        assert self.isn is not None
        rel = (seq - self.isn) % _MOD
        return self.next + ((rel - self.next + _HALF) % _MOD - _HALF)

    def _deliver(self, ts: float, data: bytes, out: list[Chunk | Gap], frame: int = 0) -> None:
        out.append(_new_chunk(Chunk, (self.next, ts, data, frame)))
        self.next += len(data)
        h = self._hist
        h += data
        if len(h) > 2 * self.history:
            del h[: len(h) - self.history]

    def _check_old(self, off: int, ts: float, data: bytes) -> None:
        """Compare bytes before ``self.next`` with what was delivered (first copy wins)."""
        self.retransmitted += len(data)
        hist_start = self.next - len(self._hist)
        lo = max(off, hist_start)
        hi = min(off + len(data), self.next)
        if lo < hi and data[lo - off : hi - off] != bytes(self._hist[lo - hist_start : hi - hist_start]):
            self.problems.append(StreamProblem(lo, ts, f"conflicting retransmission of {hi - lo} bytes at {lo}"))

    def _buffer(self, off: int, ts: float, data: bytes, frame: int = 0) -> None:
        """Store the parts of an out-of-order segment not already buffered (first copy wins)."""
        starts, pieces = self._starts, self._pieces
        end = off + len(data)
        i = bisect.bisect_right(starts, off) - 1
        if i < 0:
            i = 0
        cur = off
        while cur < end:
            if i < len(starts) and starts[i] <= cur:
                s = starts[i]
                pdata = pieces[s][1]
                pend = s + len(pdata)
                if pend > cur:
                    hi = min(pend, end)
                    if data[cur - off : hi - off] != pdata[cur - s : hi - s]:
                        self.problems.append(
                            StreamProblem(cur, ts, f"conflicting overlap of {hi - cur} bytes at {cur}")
                        )
                    self.retransmitted += hi - cur
                    cur = hi
                i += 1
                continue
            nxt = starts[i] if i < len(starts) else end
            hi = min(nxt, end)
            if hi > cur:
                piece = data[cur - off : hi - off]
                bisect.insort(starts, cur)
                pieces[cur] = (ts, piece, frame)
                self._ahead += len(piece)
                floor = self.floor
                self.floor = (ts, frame) if floor is None else (min(floor[0], ts), min(floor[1], frame))
                i = bisect.bisect_right(starts, cur)
                cur = hi
            else:
                i += 1

    def _drain(self, out: list[Chunk | Gap]) -> None:
        starts, pieces = self._starts, self._pieces
        while starts and starts[0] <= self.next:
            s = starts.pop(0)
            ts, data, frame = pieces.pop(s)
            self._ahead -= len(data)
            if s + len(data) > self.next:
                self._deliver(ts, data[self.next - s :], out, frame)
        if not starts:
            self.floor = None

    def _skip_to(self, off: int, reason: str, out: list[Chunk | Gap]) -> None:
        gap = Gap(self.next, off - self.next, reason)
        self.gaps.append(gap)
        out.append(gap)
        self.next = off
        self._hist.clear()

    # ---------------------------------------------------------------- events

    def feed(self, ts: float, seq: int, flags: int, payload: bytes, frame: int = 0) -> list[Chunk | Gap]:
        """One segment of this direction, in capture order (``frame``: its frame number, if known)."""
        out: list[Chunk | Gap] = []
        self._last_ts = ts
        if flags & SYN:
            if self.isn is None:
                self.isn = (seq + 1) % _MOD
                self.syn_seen = True
            elif (seq + 1) % _MOD == self.isn:
                self.syn_seen = True
            else:
                if self.syn_seen or self.next or self._starts:
                    self.problems.append(StreamProblem(self.next, ts, f"SYN with a different sequence number {seq}"))
                else:
                    self.isn = (seq + 1) % _MOD
                    self.syn_seen = True
            seq = (seq + 1) % _MOD  # data on a SYN starts after it
        if self.isn is None:
            if not payload and not flags & (FIN | RST):
                return out  # a bare ACK fixes nothing yet: wait for data
            self.isn = seq
        off = self._offset(seq)
        if payload:
            self._data(off, ts, payload, out, frame)
        if flags & FIN:
            fin_at = off + len(payload)
            if self.fin_at is None:
                self.fin_at = fin_at
            elif self.fin_at != fin_at:
                self.problems.append(StreamProblem(fin_at, ts, f"second FIN at {fin_at}, first at {self.fin_at}"))
        if flags & RST:
            self.reset = True
        return out

    def feed_next(self, ts: float, seq: int, payload: bytes) -> int:
        """A segment with ``payload`` (not empty) and no SYN, FIN or RST, taken in place of
        :meth:`feed` where it carries exactly the next expected bytes while nothing is held out of
        order and no FIN was seen: they are delivered (no :class:`Chunk` made) and their stream
        offset returned.  -1, nothing done, for any other segment: :meth:`feed` it."""
        isn = self.isn
        nxt = self.next
        if isn is None or self._starts or self.fin_at is not None or (seq - isn) % _MOD != nxt % _MOD:
            return -1
        self._last_ts = ts
        self.next = nxt + len(payload)
        h = self._hist
        h += payload
        if len(h) > 2 * self.history:
            del h[: len(h) - self.history]
        return nxt

    def _data(self, off: int, ts: float, payload: bytes, out: list[Chunk | Gap], frame: int = 0) -> None:
        end = off + len(payload)
        if self.fin_at is not None and end > self.fin_at:
            self.problems.append(StreamProblem(self.fin_at, ts, f"{end - self.fin_at} bytes after the FIN"))
        if off < 0:
            where = "the first seen segment (no SYN seen)" if not self.syn_seen else "the SYN"
            lost = min(end, 0) - off
            self.problems.append(StreamProblem(off, ts, f"{lost} bytes before {where}, dropped"))
            if end <= 0:
                return
            payload, off = payload[-off:], 0
        while off > self.next and (end - self.next > self.max_ahead or self._ahead + len(payload) > self.max_ahead):
            # too far ahead to hold: give up on the oldest missing range and move on
            target = self._starts[0] if self._starts and self._starts[0] < off else off
            self._skip_to(target, f"not received within {self.max_ahead} bytes", out)
            self._drain(out)
        if end <= self.next:
            if end == self.next and len(payload) == 1:
                self.keepalives += 1  # keep-alive probe: one old byte, often garbage (RFC 9293 3.8.4)
                return
            self._check_old(off, ts, payload)
            return
        if off < self.next:
            self._check_old(off, ts, payload[: self.next - off])
            payload = payload[self.next - off :]
            off = self.next
        if off == self.next and (not self._starts or end <= self._starts[0]):
            self._deliver(ts, payload, out, frame)
            if self._starts:
                self._drain(out)
            return
        self._buffer(off, ts, payload, frame)  # buffered pieces keep their bytes (first copy wins)
        if off == self.next:
            self._drain(out)

    def flush(self) -> list[Chunk | Gap]:
        """End of capture: every buffered range is delivered with its preceding gap reported."""
        out: list[Chunk | Gap] = []
        while self._starts:
            first = self._starts[0]
            if first > self.next:
                self._skip_to(first, "never received", out)
            self._drain(out)
        if self.fin_at is not None and self.fin_at > self.next:
            self._skip_to(self.fin_at, "never received before the FIN", out)
        return out


@dataclass
class Direction:
    """One direction of a flow, fully reassembled.

    ``data`` is the delivered bytes joined; offsets in ``pieces``, ``timestamps``, ``gaps`` and
    ``problems`` are TCP stream offsets, which differ from indexes into ``data`` after a gap
    (``pieces`` lists the contiguous runs between gaps).
    """

    src: str
    sport: int
    dst: str
    dport: int
    data: bytes = b""
    pieces: list[tuple[int, bytes]] = field(default_factory=list)
    timestamps: dict[int, float] = field(default_factory=dict)  #: stream offset of a chunk -> ts
    gaps: list[Gap] = field(default_factory=list)
    problems: list[StreamProblem] = field(default_factory=list)
    syn_seen: bool = False
    fin: bool = False
    reset: bool = False
    segments: int = 0
    retransmitted: int = 0
    #: stream offset of a chunk -> frame number of the segment that carried it (its position among
    #: the segments when they were given without frame numbers, see :func:`reassemble`)
    frames: dict[int, int] = field(default_factory=dict)


@dataclass
class Flow:
    key: FlowKey
    client: Direction  #: bytes sent by the client (the SYN sender, else the side talking to ``ports``)
    server: Direction
    first_ts: float = 0.0
    last_ts: float = 0.0

    @property
    def id(self) -> str:
        return self.key.id


class _Side:
    __slots__ = ("chunks", "events", "first_seq", "rsm", "saw_pure_syn", "saw_synack", "segments", "who")

    def __init__(self, who: tuple[str, int, str, int]) -> None:
        self.who = who
        self.rsm = TcpReassembler()
        self.events: list[Chunk | Gap] = []
        self.saw_pure_syn = False
        self.saw_synack = False
        self.segments = 0


def _direction(side: _Side | None, who: tuple[str, int, str, int]) -> Direction:
    d = Direction(*who)
    if side is None:
        return d
    side.events.extend(side.rsm.flush())
    parts: list[bytes] = []
    run_start: int | None = None
    run: list[bytes] = []
    for ev in side.events:
        if isinstance(ev, Gap):
            if run:
                assert run_start is not None
                d.pieces.append((run_start, b"".join(run)))
            run, run_start = [], None
            continue
        if run_start is None:
            run_start = ev.offset
        run.append(ev.data)
        parts.append(ev.data)
        d.timestamps.setdefault(ev.offset, ev.ts)
        if ev.frame:
            d.frames.setdefault(ev.offset, ev.frame)
    if run:
        assert run_start is not None
        d.pieces.append((run_start, b"".join(run)))
    d.data = b"".join(parts)
    r = side.rsm
    d.gaps, d.problems = list(r.gaps), list(r.problems)
    d.syn_seen, d.fin, d.reset = r.syn_seen, r.fin_at is not None, r.reset
    d.segments, d.retransmitted = side.segments, r.retransmitted
    return d


def a_is_client(a: tuple[bool, bool], b: tuple[bool, bool], key: FlowKey, ports: frozenset[int]) -> bool:
    """Is endpoint ``a`` of ``key`` the client, given (sent a SYN without ACK, sent a SYN+ACK)
    for each endpoint: the SYN sender, else the other side of the SYN+ACK sender, else the side
    talking to ``ports``, else ``a``."""
    if a[0]:
        return True
    if b[0]:
        return False
    if a[1]:
        return False
    if b[1]:
        return True
    if key.b_port in ports:
        return True
    return key.a_port not in ports


def _syns(side: _Side | None) -> tuple[bool, bool]:
    return (False, False) if side is None else (side.saw_pure_syn, side.saw_synack)


def _a_is_client(sa: _Side | None, sb: _Side | None, key: FlowKey, ports: frozenset[int]) -> bool:
    return a_is_client(_syns(sa), _syns(sb), key, ports)


def reassemble(
    segments: Iterable[tuple[float, TcpSegment] | tuple[float, TcpSegment, int]],
    ports: Iterable[int] = frozenset({1801}),
) -> dict[FlowKey, Flow]:
    """Group segments (in capture order) into flows and reassemble both directions.

    Each item is ``(timestamp, segment)`` or ``(timestamp, segment, frame number)``; the frame
    number of each delivered chunk is kept (:attr:`Direction.frames`): the one given, else the
    1-based position of the segment among those given -- capture order either way, which breaks
    the ties of capture time between the two directions.

    The client is the side that sent a SYN without ACK (else the side that answered with SYN+ACK
    is the server), else the side whose destination port is in ``ports``, else endpoint ``a``.
    A new SYN on a key whose flow already finished is not split into a second flow (port reuse
    within one capture is reported as a problem by the reassembler).
    """
    port_set = frozenset(ports)
    sides: dict[FlowKey, list[_Side | None]] = {}
    times: dict[FlowKey, list[float]] = {}
    by_tuple: dict[tuple[str, int, str, int], tuple[_Side, list[float]]] = {}
    for position, item in enumerate(segments, 1):
        ts, seg = item[0], item[1]
        frame = item[2] if len(item) > 2 else position
        who = (seg.src, seg.sport, seg.dst, seg.dport)
        hit = by_tuple.get(who)
        if hit is None:
            key, is_a = FlowKey.of(*who)
            pair = sides.get(key)
            if pair is None:
                pair = sides[key] = [None, None]
                times[key] = [ts, ts]
            side = _Side(who)
            pair[0 if is_a else 1] = side
            hit = by_tuple[who] = (side, times[key])
        side, span = hit
        span[1] = ts
        side.segments += 1
        flags = seg.flags
        if flags & SYN:
            if flags & 0x10:
                side.saw_synack = True
            else:
                side.saw_pure_syn = True
        events = side.rsm.feed(ts, seg.seq, flags, seg.payload, frame)
        if events:
            side.events.extend(events)
    flows: dict[FlowKey, Flow] = {}
    for key, (sa, sb) in sides.items():
        a_who = (key.a, key.a_port, key.b, key.b_port)
        b_who = (key.b, key.b_port, key.a, key.a_port)
        a_client = _a_is_client(sa, sb, key, port_set)
        da, db = _direction(sa, a_who), _direction(sb, b_who)
        client, server = (da, db) if a_client else (db, da)
        t0, t1 = times[key]
        flows[key] = Flow(key, client, server, t0, t1)
    return flows
