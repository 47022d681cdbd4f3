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
(:class:`harness.capture.framing.StreamDecoder`, where the framing's other names live too), a
capture's connections are fed segment by segment, and what must wait to be printed in order waits in
a temporary file beyond a budget. Devices, FIFOs and sockets are never read (:mod:`harness.files`).
"""
from __future__ import annotations

import heapq
import itertools
import re
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from harness.capture.connection import Connection, ConnectionResult
from harness.capture.frames import TcpSegment
from harness.capture.framing import DecodedPacket, StreamDecoder, StreamReport, decode_stream
from harness.capture.spill import SpillFifo, SpillFile, SpillPool
from harness.capture.streams import (
    CaptureReading,
    connection_ends,
    numbered_segments,
    record_connections,
    segment_connection,
)
from harness.capture.tcp import FlowKey
from harness.files import open_regular
from packets import parse

__all__ = ["INPUT_PREFIX", "ORDERS", "PCAP_MAGICS", "decode_file", "hex_text", "read_hex"]

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


#: bytes of packets held for capture order while an earlier connection is still open (then spilled)
HOLD_BYTES = 64 << 20
_BLOCK = 512  # items per spilled block


class _Held:
    """Items ``(frame, seq, report)`` waiting to be written in capture order: a heap in memory up
    to ``hold`` bytes (by the packets' sizes), then spilled to a temporary file as a sorted run
    read back one block at a time, so memory does not grow with the capture."""

    def __init__(self, hold: int) -> None:
        self.hold = hold
        self.heap: list[tuple[int, int, StreamReport]] = []
        self.weight = 0
        self.spill = SpillFile()
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
    return DecodedPacket(t[0], t[1], t[2], parse(t[3], strict=False), t[3], t[4], t[5])


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


class _CaptureDecode:
    """The second reading of :func:`_decode_capture`: the open connections, the reports ready to
    be yielded and, per order, what waits -- ``stream``: the finished connections after the one
    due; ``capture``: the packets held (:class:`_Held`) below the lowest frame an open connection
    may still stamp (its floor)."""

    def __init__(
        self, ports: frozenset[int], ends: frozenset[int], ranks: dict[int, int], hold: int | None, pool: SpillPool
    ) -> None:
        self.ports = ports
        self.ends = ends
        self.ranks = ranks
        self.pool = pool
        self.unknown = itertools.count(len(ranks))  # connections the first reading did not see
        self.serials = itertools.count()
        self.ready: deque[StreamReport] = deque()
        self.opened: dict[Any, _Open] = {}
        self.by_rank: dict[int, _Open] = {}
        self.waiting: dict[int, _Open] = {}
        self.due = 0
        self.held = _Held(hold) if hold is not None else None
        self.seq = itertools.count()
        self.floors: list[tuple[int, int]] = []  # (lowest frame a connection may still stamp, serial), lazily
        self.floor_of: dict[int, int] = {}

    # -- stream order: a connection's client packets, notes, server packets, notes -----------------

    def sink_of(self, entry: _Open) -> Callable[[str, DecodedPacket, Any], None]:
        held, ready = self.held, self.ready

        def sink(direction: str, item: DecodedPacket, _key: Any) -> None:
            if held is not None:
                held.push((item.frame, next(self.seq), StreamReport(item.stream, packets=[item], flow=entry.conn.id)))
            elif entry.live and direction == "client":
                ready.append(StreamReport(item.stream, packets=[item], flow=entry.conn.id))
            else:
                entry.tapes[direction].push(item)

        return sink

    def play(self, entry: _Open, direction: str) -> None:
        tape = entry.tapes[direction]
        while len(tape):
            item = tape.pop()
            self.ready.append(StreamReport(item.stream, packets=[item], flow=entry.conn.id))

    def flush(self, entry: _Open) -> None:
        assert entry.tails is not None
        self.play(entry, "client")
        tails = {r.name: r for r in entry.tails}
        client = entry.conn.decoders["client"].name
        if client in tails:
            self.ready.append(tails.pop(client))
        self.play(entry, "server")
        self.ready.extend(tails.values())

    def advance(self) -> None:
        """Print the finished connections now due, then let the next one print as it comes."""
        while True:
            if self.due in self.waiting:
                self.flush(self.waiting.pop(self.due))
                self.due += 1
                continue
            entry = self.by_rank.get(self.due)
            if entry is not None and not entry.live:
                entry.live = True
                self.play(entry, "client")
            return

    # -- both orders -----------------------------------------------------------------------------

    def open(self, key: Any, offset: int, seg: TcpSegment) -> _Open:
        """The connection whose first segment (of this reading) ``seg`` at ``offset`` is."""
        n = self.ranks.get(offset)
        rank = next(self.unknown) if n is None else n
        tapes = {d: SpillFifo(self.pool, _item_weight, _strip_item, _restore_item) for d in ("client", "server")}
        entry = _Open(rank, next(self.serials), tapes)
        fkey = FlowKey.of(seg.src, seg.sport, seg.dst, seg.dport)[0]
        entry.conn = Connection(fkey, self.ports, self.sink_of(entry), pool=self.pool)
        self.opened[key] = entry
        if self.held is None:
            self.by_rank[rank] = entry
            if rank == self.due:
                entry.live = True
        return entry

    def finish(self, key: Any, entry: _Open) -> None:
        del self.opened[key]
        self.by_rank.pop(entry.rank, None)
        self.floor_of.pop(entry.serial, None)
        result = entry.conn.finish()
        entry.tails = _tail_reports(result)
        if self.held is not None:
            self.hold_tails(entry)
            return
        self.waiting[entry.rank] = entry
        self.advance()

    # -- capture order: by the frame that completed each packet ----------------------------------

    def hold_tails(self, entry: _Open) -> None:
        """A finished connection's notes and violations, held at the frame of its last segment."""
        assert self.held is not None and entry.tails is not None
        end = entry.conn.frame
        for report in entry.tails:
            found, report.violations = report.violations, []
            if report.gaps or report.errors or report.trailing or report.problems or report.skipped:
                self.held.push((end, next(self.seq), report))
            if found:
                self.held.push((end, next(self.seq), StreamReport(entry.conn.id, violations=found, flow=entry.conn.id)))

    def note_floor(self, entry: _Open) -> None:
        """The lowest frame ``entry`` (still open) may yet stamp a packet with."""
        low = entry.conn.floor()
        if low != self.floor_of.get(entry.serial, 0):
            self.floor_of[entry.serial] = low
            if low:
                heapq.heappush(self.floors, (low, entry.serial))

    def release(self, frame: int) -> Iterator[StreamReport]:
        """The held packets no open connection can still precede, once frame ``frame`` is read."""
        assert self.held is not None
        floors, floor_of = self.floors, self.floor_of
        while floors and floor_of.get(floors[0][1]) != floors[0][0]:
            heapq.heappop(floors)
        yield from self.held.pop_below(min(frame + 1, floors[0][0]) if floors else frame + 1)

    # -- the reading -----------------------------------------------------------------------------

    def reports(self, segments: Iterator[tuple[int, float, int, TcpSegment]]) -> Iterator[StreamReport]:
        held, ready = self.held, self.ready
        for offset, ts, frame, seg in segments:
            key = segment_connection(seg)
            entry = self.opened.get(key)
            if entry is None:
                entry = self.open(key, offset, seg)
            entry.conn.feed(ts, seg, frame)
            if offset in self.ends:
                self.finish(key, entry)
            elif held is not None:
                self.note_floor(entry)
            if held is not None:
                yield from self.release(frame)
            while ready:
                yield ready.popleft()
        yield from self.rest()

    def rest(self) -> Iterator[StreamReport]:
        """After the last segment: the connections the first reading did not see end, then
        everything still held or waiting."""
        for key, entry in sorted(self.opened.items(), key=lambda kv: kv[1].rank):
            self.finish(key, entry)
        if self.held is not None:
            yield from self.held.pop_below(float("inf"))
        for rank in sorted(self.waiting):  # after a connection the second reading never met
            self.flush(self.waiting.pop(rank))
        while self.ready:
            yield self.ready.popleft()

    def close(self) -> None:
        self.pool.close()
        if self.held is not None:
            self.held.close()


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
    ends, ranks = connection_ends(record_connections(path, ports), ordered=order == "stream")
    pool = pool if pool is not None else SpillPool()
    run = _CaptureDecode(ports, ends, ranks, hold if order == "capture" else None, pool)
    try:
        yield from run.reports(numbered_segments(path, ports, reading))
    finally:
        run.close()


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
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {order!r}")
    path = Path(path)
    with open_regular(path) as f:
        head = f.read(4)
    if _is_capture(head):
        reading = CaptureReading()
        yield from _decode_capture(path, frozenset(ports), order, reading)
        if reading.problems:
            yield StreamReport(path.name, problems=reading.problems)
        return
    yield from _decode_bytes(path)
