"""One TCP connection of a capture, segment by segment: reassembly, packets, and the session rules
checked in the order the capture proves -- in memory bounded by the packets in flight, not by the
connection.

A :class:`Connection` is fed the connection's segments in capture order (frame order) with their
capture times and frame numbers.  Each direction is reassembled by sequence number
(:class:`harness.capture.tcp.TcpReassembler`: the order within a direction) and cut into packets
as its bytes are delivered (:class:`harness.capture.framing.StreamDecoder`); each packet goes to the
caller's sink as soon as it is whole.  The passive observer ([MS-MQQB] 3.1,
:class:`harness.session.Observer`) is handed the packets of both directions merged by their
:data:`harness.capture.framing.Key` -- the latest capture time of the chunks up to the packet's last byte,
and of those the latest frame number: capture time orders the two directions and **frame order
breaks every tie of time** (equal timestamps, a clock of one second, zero timestamps).

The capture establishes the order of two packets of opposite directions when their times and
their frames agree (or their times are equal).  When a direction's bytes arrive with a capture
time earlier than one the other direction already showed (times that contradict the frame order:
a clock stepped back, captures merged without sorting), the order is not established from there:
the observer is given nothing from that point on -- as after a gap -- the violations it already
found from that point are withdrawn, and the connection reports "order not established".  So a
cross-direction order the capture cannot establish never produces a violation against either side.

Memory: per direction the reassembler's out-of-order bytes (bounded, ``MAX_AHEAD``), the bytes of
one incomplete packet, and the observer's queue of packets waiting for the other direction to
show that nothing earlier can come (out-of-order data held ahead of a hole, a UserMessage held for
what follows it); that queue waits in a temporary file beyond its share of a
:class:`harness.capture.spill.SpillPool`.  :func:`replay_flow` feeds a connection already
reassembled (:class:`harness.capture.tcp.Flow`) through the same steps.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import packets
from harness.capture.frames import ACK, FIN, RST, SYN, TcpSegment
from harness.capture.framing import DecodedPacket, Event, Key, StreamDecoder, StreamReport
from harness.capture.spill import SpillFifo, SpillPool
from harness.capture.tcp import Chunk, Direction, Flow, FlowKey, Gap, TcpReassembler, a_is_client
from harness.session.observer import Observer

__all__ = ["INF", "Connection", "ConnectionResult", "PacketSink", "RowsSink", "merge_key", "replay_flow"]

#: a key above every packet's
INF: Key = (math.inf, sys.maxsize)
DIRECTIONS = ("client", "server")
_SYN_FIN_RST = SYN | FIN | RST
_OTHER = {"client": "server", "server": "client"}

#: (direction, packet, key) of each packet, as soon as it is whole
PacketSink = Callable[[str, DecodedPacket, Key], None]
#: (direction, index, stream offset, parse, bytes, key) of each packet, as soon as it is whole: a
#: :data:`PacketSink` without the :class:`DecodedPacket` (:data:`harness.capture.framing.RowSink`)
RowsSink = Callable[[str, int, int, Any, bytes, Key], None]


@dataclass
class ConnectionResult:
    """What a connection held once its last segment is in: the flow (endpoints and the
    reassembly's counts; no bytes), per direction the report of everything but the packets (gaps,
    resynchronisations, framing errors, unfinished bytes, reassembly problems) and whether it
    carried bytes, and the session violations."""

    flow: Flow
    reports: dict[str, StreamReport]
    carried: dict[str, bool]
    violations: list[Any] = field(default_factory=list)
    unordered: str = ""  #: why the order was not established from some point ("" when it was)
    failed: str = ""  #: an analysis that broke (a bug), with what broke it


def _weight(ev: Event) -> int:
    return 200 + (3 * len(ev.data) + 3000 if ev.data is not None else 0)


def _strip(ev: Event) -> Event:
    return ev._replace(packet=None)


def _restore(ev: Event) -> Event:
    return ev if ev.data is None else ev._replace(packet=packets.parse(ev.data, strict=False))


#: an event's place in the merged order: its key, its direction (client first), the number of the
#: chunk that completed it and its stream offset
Place = tuple[float, int, int, int, int]
_ORDER = {"client": 0, "server": 1}


def merge_key(direction: str, key: Key) -> tuple[float, int, int]:
    """Where a packet of ``direction`` completed at ``key`` stands in the order the observer is
    given both directions: by key, the client's first on equal keys.  A stable sort by it keeps
    each direction's stream order (keys grow along a stream)."""
    return (key[0], key[1], _ORDER[direction])


def _place(direction: str, ev: Event) -> Place:
    return (*merge_key(direction, ev.key), ev.chunk, ev.offset)


class _Judge:
    """The observer, fed the events of both directions merged by key."""

    def __init__(self, pool: SpillPool) -> None:
        self.observer = Observer()
        self.queues = {d: SpillFifo(pool, _weight, _strip, _restore) for d in DIRECTIONS}
        self.qc, self.qs = self.queues["client"], self.queues["server"]
        #: nothing at or after this place is judged: (key, direction order, chunk number)
        self.cutoff: tuple[float, int, int, int] | None = None
        self.found: list[tuple[Place, Any]] = []

    def push(self, direction: str, events: list[Event]) -> None:
        queue, cutoff = self.queues[direction], self.cutoff
        for ev in events:
            if cutoff is None or _place(direction, ev) < cutoff:
                queue.push(ev)

    def offer(self, direction: str, events: list[Event], bound: Key) -> None:
        """Events of ``direction``, judged at once while nothing waits and they lie below
        ``bound`` (what the other direction may still bring), else queued."""
        if self.qc._count or self.qs._count:  # something waits: in order behind it
            self.push(direction, events)
            return
        cutoff = self.cutoff
        packet = self.observer.packet
        for n, ev in enumerate(events):
            if cutoff is not None and _place(direction, ev) >= cutoff:
                return
            if ev.key >= bound:
                self.push(direction, events[n:])
                return
            data = ev.data
            if data is None:  # a framing error
                self._observe(direction, ev)
                continue
            # as _observe: the capture time is the clock message expiry is judged by ([MS-MQQB] 3.1.7.1.2)
            found = packet(direction, data, ev.packet, ev.key[0])
            if found:
                place = _place(direction, ev)
                self.found += [(place, v) for v in found]

    def waiting(self) -> bool:
        return bool(len(self.queues["client"]) or len(self.queues["server"]))

    def _observe(self, direction: str, ev: Event) -> None:
        if ev.error is not None:
            found = self.observer.unframed(direction, ev.error)
        else:
            assert ev.data is not None
            # the capture time is the clock message expiry is judged by ([MS-MQQB] 3.1.7.1.2)
            found = self.observer.packet(direction, ev.data, ev.packet, ev.key[0])
        if found:
            place = _place(direction, ev)
            self.found += [(place, v) for v in found]

    def cut(self, direction: str, key: Key, chunk: int) -> bool:
        """Nothing from the chunk ``chunk`` of ``direction`` (at ``key``) on is judged; what was
        found from there is withdrawn.  False when that is no earlier than the cut-off already."""
        at = (key[0], key[1], _ORDER[direction], chunk)
        if self.cutoff is not None and at >= self.cutoff:
            return False
        self.cutoff = at
        self.found = [(k, v) for k, v in self.found if k < at]
        return True

    def release(self, bounds: dict[str, Key]) -> None:
        """Hand the observer every waiting event below what either direction may still bring."""
        qc, qs = self.queues["client"], self.queues["server"]
        while True:
            hc, hs = qc.peek(), qs.peek()
            if hc is None and hs is None:
                return
            if hs is None or (hc is not None and hc.key <= hs.key):  # equal keys: the client's first
                direction, head, queue = "client", hc, qc
            else:
                direction, head, queue = "server", hs, qs
            assert head is not None
            if head.key >= bounds[_OTHER[direction]]:
                return
            queue.pop()
            if self.cutoff is not None and _place(direction, head) >= self.cutoff:
                qc.clear()
                qs.clear()
                return
            self._observe(direction, head)

    def finish(self, unfinished: dict[str, int], ended: bool) -> list[Any]:
        self.release({d: INF for d in DIRECTIONS})
        if ended and self.cutoff is None:
            self.found += [((*INF, 2, 0, 0), v) for v in self.observer.end(unfinished)]
        return [v for _k, v in self.found]


class _Half:
    """One endpoint's segments."""

    __slots__ = ("direction", "is_a", "rsm", "saw_pure_syn", "saw_synack", "segments", "who")

    def __init__(self, who: tuple[str, int, str, int], is_a: bool) -> None:
        self.who = who
        self.is_a = is_a
        self.rsm = TcpReassembler()
        self.saw_pure_syn = False
        self.saw_synack = False
        self.segments = 0
        self.direction = ""


class Connection:
    """One TCP connection, fed its segments in capture order (:meth:`feed`), ended by
    :meth:`finish`.  The client is the side that sent a SYN without ACK, else the other side of
    the SYN+ACK sender, else the side talking to ``ports``, decided when the first byte (or gap)
    of the connection is delivered.  ``judge``: check the session rules; ``rows``: given each
    packet's fields (:data:`RowsSink`, no :class:`DecodedPacket` made) in place of ``sink``.
    A segment carrying the next bytes of its direction while nothing is held out of order goes
    from the reassembler to the framing as it is (:meth:`TcpReassembler.feed_next`)."""

    def __init__(
        self,
        key: FlowKey,
        ports: Iterable[int] = frozenset({1801}),
        sink: PacketSink | None = None,
        *,
        judge: bool = True,
        pool: SpillPool | None = None,
        rows: RowsSink | None = None,
    ) -> None:
        self.key = key
        self.id = key.id
        self.ports = frozenset(ports)
        self.sink = sink
        self.rows = rows
        self.pool = pool if pool is not None else SpillPool()
        self.halves: dict[tuple[str, int, str, int], _Half] = {}
        self._by_direction: dict[str, _Half] = {}
        self.decoders: dict[str, StreamDecoder] = {}
        self.first_ts = 0.0
        self.last_ts = 0.0
        self.segments = 0
        self.frame = 0  #: the frame number of the latest segment
        self.judge = _Judge(self.pool) if judge else None
        self.unordered = ""  #: why the order is not established from some point ("" when it is)
        self._unordered_in = ""
        self._client: bool | None = None  # is endpoint a the client (once decided)

    # -- feeding -------------------------------------------------------------------------------

    def feed(self, ts: float, seg: TcpSegment, frame: int) -> None:
        """One segment of this connection, captured at ``ts`` in frame number ``frame`` (frames
        given in increasing order)."""
        who = (seg.src, seg.sport, seg.dst, seg.dport)
        half = self.halves.get(who)
        if half is None:
            half = self._half(who)
        if not self.segments:
            self.first_ts = ts
        self.segments += 1
        self.last_ts = ts
        self.frame = frame
        half.segments += 1
        flags = seg.flags
        if not seg.payload and not flags & _SYN_FIN_RST:
            return  # a bare acknowledgment: nothing for the reassembly
        if flags & SYN:
            if flags & ACK:
                half.saw_synack = True
            else:
                half.saw_pure_syn = True
        payload = seg.payload
        offset = half.rsm.feed_next(ts, seg.seq, payload) if payload and not flags & _SYN_FIN_RST else -1
        if offset >= 0:  # the next bytes of the stream, nothing held: no Chunk made
            if self._client is None:
                self.decide()
            self._chunk(half.direction, offset, payload, ts, frame)
        else:
            events = half.rsm.feed(ts, seg.seq, flags, payload, frame)
            if events:
                self.deliver(half, events)
        judge = self.judge
        if judge is not None and (judge.qc._count or judge.qs._count):
            judge.release(self.bounds())

    def _half(self, who: tuple[str, int, str, int]) -> _Half:
        _key, is_a = FlowKey.of(*who)
        half = self.halves[who] = _Half(who, is_a)
        if self._client is not None:
            half.direction = "client" if is_a == self._client else "server"
            self._by_direction[half.direction] = half
        return half

    def decide(self, a_client: bool | None = None) -> None:
        """Which side is the client (``a_client``: is endpoint ``a`` of the key; by default from
        the SYNs seen so far and the ports)."""
        if self._client is not None:
            return
        if a_client is None:
            a = next((h for h in self.halves.values() if h.is_a), None)
            b = next((h for h in self.halves.values() if not h.is_a), None)
            syns = [(False, False) if h is None else (h.saw_pure_syn, h.saw_synack) for h in (a, b)]
            a_client = a_is_client(syns[0], syns[1], self.key, self.ports)
        self._client = a_client
        for half in self.halves.values():
            half.direction = "client" if half.is_a == a_client else "server"
            self._by_direction[half.direction] = half
        rows = self.rows
        for d in DIRECTIONS:
            row_sink = None if rows is None else partial(rows, d)
            self.decoders[d] = StreamDecoder(f"{self.id} {d}", self._sink_of(d), flow=self.id, rows=row_sink)

    def _sink_of(self, direction: str) -> Callable[[DecodedPacket, Key], None] | None:
        return None if self.sink is None else partial(self.sink, direction)

    def deliver(self, half: _Half | str, events: Iterable[Chunk | Gap]) -> None:
        """Reassembled bytes and gaps of one direction (a :class:`_Half` or its direction name)."""
        if self._client is None:
            self.decide()
        direction = half if isinstance(half, str) else half.direction
        decoder = self.decoders[direction]
        for ev in events:
            if type(ev) is Chunk:
                self._chunk(direction, ev.offset, ev.data, ev.ts, ev.frame)
                continue
            assert isinstance(ev, Gap)
            found = decoder.gap(ev.stream_offset, ev.length)
            if found and self.judge is not None:
                self.judge.offer(direction, found, self._bound(_OTHER[direction]))

    def _chunk(self, direction: str, offset: int, data: bytes, ts: float, frame: int) -> None:
        """Reassembled bytes of ``direction`` at stream ``offset``: framed, and the packets they
        complete offered to the observer."""
        decoder = self.decoders[direction]
        found = decoder.chunk(offset, data, ts, frame)
        judge = self.judge
        if judge is None:
            return
        if decoder.cut is not None:  # after a gap nothing more is judged
            judge.cut(direction, decoder.cut[:2], decoder.cut[2])
        other = self.decoders[_OTHER[direction]]
        if decoder.ts < other.ts and other.chunks:
            self._not_ordered(direction, decoder, other)
        if found:
            judge.offer(direction, found, self._bound(_OTHER[direction]))

    def _not_ordered(self, direction: str, decoder: StreamDecoder, other: StreamDecoder) -> None:
        """``direction``'s bytes came with a capture time earlier than one the other direction
        showed in an earlier frame: time and frame disagree, the order is not established."""
        assert self.judge is not None
        if not self.judge.cut(direction, (decoder.ts, decoder.frame), decoder.chunks):
            return
        self._unordered_in = direction
        self.unordered = (
            f"order not established at {direction} stream offset {decoder.offset}: its capture time "
            f"{decoder.ts:.6f} is earlier than {other.ts:.6f}, already seen from the {_OTHER[direction]} "
            f"(the capture's times contradict its frame order); the session rules are not checked from there"
        )

    def bounds(self) -> dict[str, Key]:
        """Per direction, a key below which it can bring no more event for the observer."""
        return {d: self._bound(d) for d in DIRECTIONS}

    def _bound(self, direction: str) -> Key:
        """A key below which ``direction`` can bring no more event for the observer: its held
        UserMessage, or the first bytes held ahead of a hole (after which a gap would stop the
        judging); above anything when it holds neither (what it brings later comes in a later
        frame, at a later time unless the times contradict the frames)."""
        decoder = self.decoders.get(direction)
        if decoder is None or decoder.gapped:
            return INF
        bound = decoder.held if decoder.held is not None else INF
        half = self._by_direction.get(direction)
        floor = half.rsm.floor if half is not None else None
        if floor is not None:
            bound = min(bound, (max(decoder.ts, floor[0]), max(decoder.frame, floor[1])))
        return bound

    def floor(self) -> int:
        """The lowest frame number a packet still to come may be stamped with (0: none held)."""
        if self._client is None:
            return 0
        lows = []
        for half in self.halves.values():
            decoder = self.decoders[half.direction]
            if decoder.held is not None:  # a whole UserMessage: the frame that completed it
                lows.append(decoder.held[1])
            floor = half.rsm.floor
            if floor is not None:  # bytes ahead of a hole: delivered after what came so far
                lows.append(max(decoder.frame, floor[1]))
        return min(lows, default=0)

    # -- the end -------------------------------------------------------------------------------

    def finish(self, flow: Flow | None = None) -> ConnectionResult:
        """The end of the connection: what the reassembly still holds is delivered (after the gaps
        it leaves), the streams end, and the observer is given what waited.  ``flow``: the
        endpoints and counts of a connection delivered already reassembled (:func:`replay_flow`)."""
        for half in list(self.halves.values()):
            events = half.rsm.flush()
            if events:
                self.deliver(half, events)
        if self._client is None:
            self.decide()
        for d in DIRECTIONS:
            found = self.decoders[d].end()
            if found and self.judge is not None:
                self.judge.push(d, found)
        flow = flow if flow is not None else self._flow()
        any_gap = bool(flow.client.gaps or flow.server.gaps)
        violations: list[Any] = []
        if self.judge is not None:
            unfinished = {d: self.decoders[d].report.trailing for d in DIRECTIONS}
            violations = self.judge.finish(unfinished, not any_gap)
        reports: dict[str, StreamReport] = {}
        for d, side in (("client", flow.client), ("server", flow.server)):
            report = self.decoders[d].report
            report.problems.extend(f"{p.reason} at stream offset {p.stream_offset}" for p in side.problems)
            if self.unordered and d == self._unordered_in:
                report.problems.append(self.unordered)
            reports[d] = report
        carried = {d: self.decoders[d].carried for d in DIRECTIONS}
        return ConnectionResult(flow, reports, carried, violations, self.unordered)

    def _flow(self) -> Flow:
        key = self.key
        a_who = (key.a, key.a_port, key.b, key.b_port)
        b_who = (key.b, key.b_port, key.a, key.a_port)
        sides = {}
        for who in (a_who, b_who):
            d = Direction(*who)
            half = self.halves.get(who)
            if half is not None:
                r = half.rsm
                d.gaps, d.problems = list(r.gaps), list(r.problems)
                d.syn_seen, d.fin, d.reset = r.syn_seen, r.fin_at is not None, r.reset
                d.segments, d.retransmitted = half.segments, r.retransmitted
            sides[who] = d
        client, server = (sides[a_who], sides[b_who]) if self._client else (sides[b_who], sides[a_who])
        return Flow(key, client, server, self.first_ts, self.last_ts)


def replay_flow(flow: Flow, sink: PacketSink | None = None, *, judge: bool = True) -> ConnectionResult:
    """A connection already reassembled (its :class:`Flow`: runs, gaps, the capture time and frame
    number of each chunk) through the steps of :class:`Connection`: each direction's chunks and
    gaps in stream order, the two directions merged by the frame at which each chunk became
    deliverable (the latest frame of the chunks up to it)."""
    conn = Connection(flow.key, sink=sink, judge=judge)
    conn.decide(flow.client.src == flow.key.a and flow.client.sport == flow.key.a_port)
    timeline: list[tuple[int, int, int, Chunk | Gap]] = []
    for order, side in enumerate((flow.client, flow.server)):
        events: list[Chunk | Gap] = []
        starts = sorted(side.timestamps)
        gaps = sorted(side.gaps)
        g = 0
        for base, data in side.pieces:
            while g < len(gaps) and gaps[g].stream_offset < base:
                events.append(gaps[g])
                g += 1
            end = base + len(data)
            cuts = [a for a in starts if base <= a < end]
            if not cuts or cuts[0] != base:
                cuts.insert(0, base)
            for a, b in zip(cuts, [*cuts[1:], end], strict=True):
                events.append(Chunk(a, side.timestamps.get(a, 0.0), data[a - base : b - base], side.frames.get(a, 0)))
        events.extend(gaps[g:])
        latest = 0
        pending: list[Gap] = []
        for ev in events:
            if isinstance(ev, Gap):
                pending.append(ev)  # delivered with the chunk after it
                continue
            latest = max(latest, ev.frame)
            for gap in pending:
                timeline.append((latest, order, len(timeline), gap))
            pending = []
            timeline.append((latest, order, len(timeline), ev))
        for gap in pending:
            timeline.append((sys.maxsize, order, len(timeline), gap))
    timeline.sort(key=lambda t: (t[0], t[1], t[2]))
    for _frame, order, _n, ev in timeline:
        conn.deliver(DIRECTIONS[order], [ev])
    return conn.finish(flow)
