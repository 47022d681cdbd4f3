"""Decoding inputs a user hands the harness: hex dumps, raw session streams and captures.

The edge between files and the codec: reads a hex file, a raw TCP byte stream or a pcap/pcapng
capture (TCP payloads on the MSMQ ports, reassembled per direction), cuts each stream into
packets by [MS-MQMQ] 2.2.19.1 BaseHeader.PacketSize and decodes them non-strictly, so every
problem is reported with its stream offset, field path and byte offset, and nothing stops the
rest of the input from being decoded.  Ping datagrams ([MS-MQQB] 2.2.7) are recognised in hex
input.  A capture's packets carry the frame number (Wireshark's) and capture time of the frame
that completed them, and each TCP connection is checked against the [MS-MQQB] 3.1 session rules by
the passive observer, exactly as the pipeline checks it (:func:`observe_flow`, shared with
:mod:`harness.pipeline.flows`).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import packets
from packets import Packet, PacketError, StreamSplitter, wire_length

if TYPE_CHECKING:
    from harness.capture.tcp import Direction, Flow

__all__ = [
    "ORDERS",
    "DecodedPacket",
    "StreamReport",
    "decode_file",
    "decode_flow",
    "decode_pieces",
    "decode_stream",
    "flow_runs",
    "observe_flow",
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
    #: the session rules the TCP connection broke ([MS-MQQB] 3.1, :class:`harness.session.Violation`),
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


def decode_pieces(
    name: str, pieces: list[tuple[int, bytes]], gaps: list[tuple[int, int]] | None = None
) -> StreamReport:
    """Decode the runs of one stream; after a gap, resynchronise on the next BaseHeader."""
    report = StreamReport(name, gaps=list(gaps or []))
    index = 0
    for number, (base, data) in enumerate(pieces):
        start = 0
        if number:
            found = resync(data)
            start = len(data) if found is None else found
            if start:
                report.skipped.append((base, start))
        splitter = StreamSplitter()
        try:
            for piece in splitter.feed(data[start:]):  # the run at once: on a framing error, nothing
                packet = packets.parse(piece.data, strict=False)
                report.packets.append(DecodedPacket(name, index, base + start + piece.offset, packet, piece.data))
                index += 1
        except PacketError as e:
            # the whole packets before the header that cannot start one are kept, as in any other run
            for offset, raw in _framed_before_error(data, start, base):
                report.packets.append(DecodedPacket(name, index, offset, packets.parse(raw, strict=False), raw))
                index += 1
            report.errors.append(PacketError(e.field_path, base + start + e.offset, e.reason, e.section))
        else:
            report.trailing += splitter.buffered
    return report


def _framed_before_error(data: bytes, start: int, base: int) -> list[tuple[int, bytes]]:
    """(stream offset, bytes) of the whole packets before the first BaseHeader of ``data[start:]``
    that cannot start a packet (framed as :class:`packets.StreamSplitter` frames)."""
    out = []
    at = start
    while len(data) - at >= 16:
        try:
            length = wire_length(data[at : at + 16])
        except PacketError:
            break
        if len(data) - at < length:
            break
        out.append((base + at, data[at : at + length]))
        at += length
    return out


def decode_stream(name: str, data: bytes) -> StreamReport:
    """Cut a TCP byte stream (or one Ping datagram) into packets and decode each (non-strict)."""
    if _looks_like_ping(data):
        report = StreamReport(name)
        report.packets.append(DecodedPacket(name, 0, 0, packets.parse_ping(data, strict=False), data))
        return report
    return decode_pieces(name, [(0, data)])


def flow_runs(side: Direction) -> list[tuple[float, int, bool]]:
    """(timestamp, stream offset, follows a gap) of each delivered run, in stream order.

    A run is stamped with the capture time at which it became deliverable: a piece that arrived
    ahead of a missing one is stamped no earlier than the piece that filled the hole."""
    starts = sorted(side.timestamps)
    gap_ends = {g.stream_offset + g.length for g in side.gaps}
    out = []
    latest = 0.0
    for base, data in side.pieces:
        i = bisect.bisect_left(starts, base)
        end = base + len(data)
        j = bisect.bisect_left(starts, end, i)
        cuts = starts[i:j]
        if not cuts or cuts[0] != base:
            cuts.insert(0, base)
        for a in cuts:
            latest = max(latest, side.timestamps.get(a, 0.0))
            out.append((latest, a, a in gap_ends))
    return out


#: the observer's direction of the packet that broke a rule -> the stream direction names
_SENDER = {"c2s": "client", "s2c": "server"}


def observe_flow(
    flow: Flow, reports: dict[str, StreamReport], runs: dict[str, list[tuple[float, int, bool]]]
) -> list[Any]:
    """The observer's violations for a flow whose directions ``decode_pieces`` has already framed
    and parsed: each packet is handed over parsed (:meth:`harness.session.Observer.packet`), in
    the order and with the capture time at which replaying the delivered runs of both directions
    in capture order would complete it (runs sorted by timestamp, client first, stream offset),
    up to the first run after a gap -- after a gap nothing more is given to the observer: the
    session cannot be judged beyond what was captured.  A stream that cannot be framed is
    reported where the replay would meet it: in the run that completes the bad BaseHeader, whose
    other completed packets the replayed splitter never returns."""
    from harness.session import Observer

    events: list[tuple[tuple[float, int, int], int, Any]] = []
    cutoff: tuple[float, int, int] | None = None
    for order, direction in enumerate(("client", "server")):
        side = flow.client if order == 0 else flow.server
        side_runs = runs[direction]
        gap_run = next(((ts, order, off) for ts, off, gap in side_runs if gap), None)
        if gap_run is not None and (cutoff is None or gap_run < cutoff):
            cutoff = gap_run
        if not side.pieces:
            continue
        starts = [off for _ts, off, _gap in side_runs]

        def run_of(offset: int, starts: list[int] = starts, runs: list[Any] = side_runs, order: int = order) -> Any:
            ts, off, _gap = runs[bisect.bisect_right(starts, offset) - 1]
            return (ts, order, off)

        base, data = side.pieces[0]  # the replay stops at the first gap: only the first run counts
        end = base + len(data)
        report = reports[direction]
        error = report.errors[0] if report.errors and report.errors[0].offset < end else None
        first = [(item.offset, item.data, item.packet) for item in report.packets if item.offset < end]
        error_run = None
        if error is not None:
            header = first[-1][0] + len(first[-1][1]) if first else base
            error_run = run_of(header + 15)  # the splitter raises once 16 bytes of the header are in
            events.append((error_run, header, (direction, None, None, error)))
        for offset, raw, packet in first:
            at = run_of(offset + len(raw) - 1)
            if at != error_run:
                events.append((at, offset, (direction, raw, packet, None)))
    events.sort(key=lambda e: (e[0], e[1]))
    observer = Observer()
    found: list[Any] = []
    for at, _offset, (direction, raw, packet, error) in events:
        if cutoff is not None and at >= cutoff:
            break
        if raw is None:
            found += observer.unframed(direction, error)
        else:
            # the capture time is the clock message expiry is judged by ([MS-MQQB] 3.1.7.1.2)
            found += observer.packet(direction, raw, packet, at[0])
    if not (flow.client.gaps or flow.server.gaps):
        found += observer.end({d: r.trailing for d, r in reports.items()})
    return found


def _stamp(report: StreamReport, side: Direction, side_runs: list[tuple[float, int, bool]]) -> None:
    """Set each packet's frame and time: the frame that completed it (the latest frame, in capture
    order, of the chunks up to its last byte) and that frame's capture time; without frame numbers
    the time of the run that completed it (as the pipeline's ``timestamp``)."""
    starts = sorted(side.timestamps)
    best: list[tuple[int, float]] = []  # per chunk: latest (frame, its time) of the chunks so far
    top = (0, 0.0)
    for at in starts:
        frame = side.frames.get(at, 0)
        if frame > top[0]:
            top = (frame, side.timestamps[at])
        best.append(top)
    run_starts = [off for _ts, off, _gap in side_runs]
    for item in report.packets:
        last = item.offset + len(item.data) - 1
        i = bisect.bisect_right(starts, last) - 1
        if i >= 0 and best[i][0]:
            item.frame, item.time = best[i]
        else:
            j = bisect.bisect_right(run_starts, last) - 1
            item.time = side_runs[j][0] if j >= 0 else None


def decode_flow(flow: Flow) -> tuple[dict[str, StreamReport], dict[str, list[tuple[float, int, bool]]], list[Any]]:
    """Decode both directions of a reassembled flow (each packet parsed once) and check the session:
    the reports by direction (packets stamped with frame and time), the delivered runs
    (:func:`flow_runs`) and the observer's violations (:func:`observe_flow`)."""
    reports: dict[str, StreamReport] = {}
    runs: dict[str, list[tuple[float, int, bool]]] = {}
    for direction, side in (("client", flow.client), ("server", flow.server)):
        gaps = [(g.stream_offset, g.length) for g in side.gaps]
        report = decode_pieces(f"{flow.id} {direction}", side.pieces, gaps)
        report.problems.extend(f"{p.reason} at stream offset {p.stream_offset}" for p in side.problems)
        report.flow = flow.id
        reports[direction] = report
        runs[direction] = flow_runs(side)
        _stamp(report, side, runs[direction])
    return reports, runs, observe_flow(flow, reports, runs)


def _flow_reports(flow: Flow) -> list[StreamReport]:
    """The reports decode prints for a flow: the directions that carried bytes or lost some, the
    violations on the last one."""
    reports, _runs, found = decode_flow(flow)
    out = [r for d, r in reports.items() if (flow.client if d == "client" else flow.server).pieces or r.gaps]
    if found:
        if not out:
            out.append(reports["client"])
        out[-1].violations = found
    return out


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


def _capture_order(flows: Iterator[tuple[Flow, int]], hold: int = HOLD_BYTES) -> Iterator[StreamReport]:
    """One report per packet (and one per stream's notes, per connection's violations), by the
    frame that completed each: a connection's items wait until no connection still open can hold
    an earlier frame (the low mark of :func:`harness.capture.streams.capture_flows`), in a
    temporary file beyond ``hold`` bytes.  Notes and violations come after the connection's last
    packet."""
    held = _Held(hold)
    seq = itertools.count()
    try:
        for flow, low in flows:
            reports = _flow_reports(flow)
            end = max(itertools.chain(flow.client.frames.values(), flow.server.frames.values()), default=0)
            for report in reports:
                for item in report.packets:
                    held.push((item.frame, next(seq), StreamReport(report.name, packets=[item], flow=flow.id)))
                found, report.packets, report.violations = report.violations, [], []
                if report.gaps or report.errors or report.trailing or report.problems or report.skipped:
                    held.push((end, next(seq), report))
                if found:
                    held.push((end, next(seq), StreamReport(flow.id, violations=found, flow=flow.id)))
            yield from held.pop_below(low)
        yield from held.pop_below(float("inf"))
    finally:
        held.close()


def _is_capture(head: bytes) -> bool:
    return head[:4] in PCAP_MAGICS


def decode_file(
    path: str | Path, ports: frozenset[int] = frozenset({1801}), order: str = "stream"
) -> Iterator[StreamReport]:
    """Decode a hex file, a raw stream or a capture; one report per stream (per direction).

    In a capture, each connection's session violations are on the last report of the connection;
    with ``order="capture"`` each report holds one packet (or a stream's notes, or a connection's
    violations) and they come by the frame that completed them, across streams."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {order!r}")
    path = Path(path)
    with path.open("rb") as f:
        head = f.read(4)
    if _is_capture(head):
        from harness.capture.streams import CaptureReading, capture_flows

        reading = CaptureReading()
        if order == "capture":
            yield from _capture_order(capture_flows(path, ports, reading, ordered=False))
        else:
            for flow, _low in capture_flows(path, ports, reading):
                yield from _flow_reports(flow)
        if reading.problems:
            yield StreamReport(path.name, problems=reading.problems)
        return
    raw = path.read_bytes()
    try:
        data = read_hex(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        data = raw
    yield decode_stream(path.name, data)
