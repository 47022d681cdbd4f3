"""What the simulated peer keeps and writes: its records, its history and its report sink.

The details of every connection the peer ([MS-MQQB] 2.1.1, harness.peers.server) served: the
packets that crossed it (2.2), the UserMessage Packets the Acceptor delivered ([MS-MQMQ] 2.2.19-
2.2.20), the session rules the initiator broke ([MS-MQQB] 3.1, harness.session.rules) and the Ping
exchanges of 2.1.2.  Totals count everything; the details sit in one ring (:class:`History`) that
lets the oldest go; violations are written to the ``report`` as JSON lines (:class:`JsonLines`),
and an output that fails is a :class:`SinkFailure`, never a change of protocol behaviour.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from harness.peers.recorder import PcapRecorder
from harness.session import Deliver, RuleViolation
from packets import Packet

__all__ = ["History", "JsonLines", "PeerConnection", "PeerRecords", "PeerTotals", "PingExchange", "SinkFailure"]

log = logging.getLogger(__name__)


@dataclass
class PeerConnection:
    """What happened on one accepted connection.

    ``packets``: (direction "c2s"/"s2c", bytes, wall-clock timestamp) for whole packets in the
    order the peer read or wrote them; bytes left over that never made a whole packet (a truncated
    or unreadable stream) form one last "c2s" entry.  ``delivered``: the UserMessage Packets the
    Acceptor accepted.  ``violations``: the Acceptor's RuleViolation actions.  The three hold the
    latest details the peer's history keeps; ``packet_count``, ``byte_count``,
    ``delivered_count`` and ``violation_count`` count everything.  ``closed_by``: "acceptor" (the
    session engine closed), "client", "read-timeout", "evicted" (every slot was taken and this
    connection was the one idle longest), "error" or "stopped" (``close_reason`` says how many
    bytes of an unfinished packet the stop cut off).  ``processing``: packets read are recorded in
    ``packets`` while what the Acceptor does with them is not yet recorded (wait until it is
    False to read the three as one state).
    """

    index: int
    behaviour: str
    client: tuple[str, int]
    packets: deque[tuple[str, bytes, float]] = field(default_factory=deque)
    delivered: deque[Packet] = field(default_factory=deque)
    violations: deque[RuleViolation] = field(default_factory=deque)
    packet_count: int = 0
    byte_count: int = 0
    delivered_count: int = 0
    violation_count: int = 0
    closed: bool = False
    error: str | None = None
    closed_by: str = ""
    close_reason: str = ""
    stopped_mid_packet: int = 0  # bytes of an unfinished packet when the peer stopped
    processing: bool = False  # c2s packets recorded, what the Acceptor made of them not yet
    opened: float = 0.0  # wall-clock time the connection was accepted
    ended: float = 0.0  # ... and the time it closed (with ``closed``)


@dataclass
class PeerTotals:
    """Everything the peer counted since it started (details may have left the history)."""

    connections: int = 0
    packets: int = 0
    bytes: int = 0
    delivered: int = 0
    violations: int = 0
    pings: int = 0
    rejected: int = 0  # closed at once: every slot was taken and none could be given up
    evicted: int = 0  # closed to make room for a newcomer: the longest-idle connection


@dataclass
class SinkFailure:
    """An output the peer could not write (see the module docstring): ``sink`` "report" or
    "record", its ``path``, the ``error``, the records it holds (``written``: violations or pcap
    frames, the file cut back to the last whole one) and those it lost since (``lost``)."""

    sink: str
    path: str
    error: str
    written: int
    lost: int = 0

    @property
    def unit(self) -> str:
        return "violations" if self.sink == "report" else "frames"

    def __str__(self) -> str:
        return (
            f"cannot write the {self.sink} {self.path}: {self.error}; it is incomplete after "
            f"{self.written} {self.unit} (the peer goes on serving)"
        )


class JsonLines:
    """The ``report`` file: one JSON line per violation, flushed as it is written.  The first
    failing write ends it: the file is cut back to its last whole line and ``failure`` is set;
    later lines are counted as lost.  Never raises after opening."""

    def __init__(self, path: Path, on_failure: Callable[[SinkFailure], None]) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[bytes] | None = path.open("wb")
        self._on_failure = on_failure
        self._good = 0  # bytes of whole lines in the file
        self.written = 0
        self.failure: SinkFailure | None = None

    def write(self, record: dict[str, Any]) -> None:
        if self.failure is not None or self._file is None:
            if self.failure is not None:
                self.failure.lost += 1
            return
        line = (json.dumps(record) + "\n").encode("utf-8")
        try:
            self._file.write(line)
            self._file.flush()
        except OSError as e:
            self._fail(e, lost=1)
            return
        self._good += len(line)
        self.written += 1

    def _fail(self, e: OSError, lost: int = 0) -> None:
        file, self._file = self._file, None
        if file is not None:
            with contextlib.suppress(OSError, ValueError):
                file.close()
        with contextlib.suppress(OSError):
            if self.path.is_file():  # not a device such as /dev/full
                os.truncate(self.path, self._good)
        self.failure = SinkFailure("report", str(self.path), e.strerror or str(e), self.written, lost=lost)
        self._on_failure(self.failure)

    def close(self) -> None:
        if self._file is None:
            return
        try:
            self._file.flush()
        except OSError as e:
            self._fail(e)
            return
        with contextlib.suppress(OSError):
            self._file.close()
        self._file = None


class History:
    """The ring of details: every kept packet, delivered message and violation, oldest first,
    with the deque it sits in; the oldest leave (from the left of their own deque, where the
    oldest of each sits) when there are more than ``limit`` or their bytes pass ``max_bytes``."""

    def __init__(self, limit: int, max_bytes: int) -> None:
        self.limit, self.max_bytes = limit, max_bytes
        self._ring: deque[tuple[deque[Any], int]] = deque()
        self.bytes = 0

    def keep(self, where: deque[Any], item: Any, size: int) -> None:
        where.append(item)
        self._ring.append((where, size))
        self.bytes += size
        while self._ring and (len(self._ring) > self.limit or self.bytes > self.max_bytes):
            oldest, n = self._ring.popleft()
            oldest.popleft()
            self.bytes -= n


@dataclass(frozen=True)
class PingExchange:
    """One Ping Request the peer received ([MS-MQQB] 2.1.2): where from, the datagram, the Ping
    Response sent back (None when none was: a silent behaviour or not a Ping Packet), and the
    behaviour that answered."""

    client: tuple[str, int]
    request: bytes
    response: bytes | None
    behaviour: str
    time: float


class PeerRecords:
    """The peer's bookkeeping of what its connections did: counts, the history, the report and
    the pcap record, and the outputs that failed."""

    totals: PeerTotals
    _history: History
    _report: JsonLines | None
    _recorder: PcapRecorder | None
    _sink_failures: list[SinkFailure]
    _on_sink_failure: Callable[[SinkFailure], None] | None
    _lock: threading.RLock

    @property
    def sink_failures(self) -> list[SinkFailure]:
        """The outputs (``report``, ``record``) that could not be written, with what they hold."""
        with self._lock:
            failures = list(self._sink_failures)
        if self._recorder is not None:  # frames lost after the failure go on being counted
            for f in failures:
                if f.sink == "record":
                    f.lost = self._recorder.lost
        return failures

    def _close_sinks(self) -> None:
        """Close the outputs opened (what is written is whole: each sink cuts a failed write back)."""
        if self._recorder is not None:
            self._recorder.close()
        if self._report is not None:
            self._report.close()

    def _record_failed(self, e: OSError) -> None:
        rec = self._recorder  # None while the recorder is being made (its file header failed)
        written, lost = (rec.frames, rec.lost) if rec is not None else (0, 0)
        self._sink_failed(SinkFailure("record", str(e.filename), e.strerror or str(e), written, lost))

    def _sink_failed(self, failure: SinkFailure) -> None:
        """An output failed (once per output): keep it and tell ``on_sink_failure``; never raises."""
        with self._lock:
            self._sink_failures.append(failure)
        if self._on_sink_failure is None:
            log.warning("%s", failure)
        else:
            try:
                self._on_sink_failure(failure)
            except Exception:
                log.debug("on_sink_failure failed", exc_info=True)

    def _keep(self, conn: PeerConnection, direction: str, data: bytes, ts: float) -> None:
        conn.packet_count += 1
        conn.byte_count += len(data)
        self.totals.packets += 1
        self.totals.bytes += len(data)
        self._history.keep(conn.packets, (direction, data, ts), len(data))

    def _record(self, conn: PeerConnection, act: Deliver | RuleViolation) -> None:
        """Count a delivered message or a violation, keep its details in the history, report it."""
        if isinstance(act, Deliver):
            conn.delivered_count += 1
            self.totals.delivered += 1
            self._history.keep(conn.delivered, act.packet, act.packet.size)
        else:
            conn.violation_count += 1
            self.totals.violations += 1
            self._history.keep(conn.violations, act, 64 + len(act.evidence))
            self._write_report(conn, act)

    def _write_report(self, conn: PeerConnection, v: RuleViolation) -> None:
        """One JSON line; a failing report is the sink's failure, never the connection's."""
        if self._report is None:
            return
        record = {
            "connection": conn.index,
            "rule": v.rule_id,
            "section": v.section,
            "packet_index": v.packet_index,
            "evidence": v.evidence,
        }
        self._report.write(record)
