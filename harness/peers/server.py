"""A simulated remote queue manager: the acceptor side of MSMQ binary sessions on a real TCP socket.

Renders [MS-MQQB] 2.1.1 (a protocol session is a TCP connection, one per initiator) and 3.1.5.10
Handling an Incoming Transport Connection around the sans-IO :class:`harness.session.Acceptor`,
which does everything the spec says an acceptor does (3.1.5.3.1, 3.1.5.4.1, 3.1.5.8, the timers of
3.1.2/3.1.6) and reports every initiator rule break as a ``RuleViolation``.  One background thread runs
a ``selectors`` loop over the listening socket and every connection; each connection gets its own
Acceptor (with the behaviour chosen for it), its timers run on ``time.monotonic`` (``time_scale``
times their durations: 0.05 runs the 3.1.2 timers a twentieth of theirs, for tests and for a
live ``mqqb://...?scale=0.05`` target), its CURRENT_TIME for message expiration ([MS-MQMQ]
2.2.19.1) is ``time.time`` (never scaled: SentTime is wall-clock time), and the queue
manager state of [MS-MQQB] 3.1.1.3 that outlives a session (MessageIDHistoryTable, the incoming
transactional sequences of [MS-MQDMPR] 3.1.1.5) is shared by all of them.  A connection whose
packet is not complete ``read_timeout`` seconds after its first byte arrived is closed (however
the bytes are spread); anything a client sends, and any error while handling it, ends that
connection only.

Slots: ``max_connections`` connections are served at once.  One that sends nothing holds its slot
until the Acceptor's Session Initialization Timer ([MS-MQQB] 3.1.2.1, started when the transport
connection is accepted, 3.1.5.10; scaled like every timer) closes it, one that stops before OPEN
likewise, an idle open session until its Session Cleanup Timer (3.1.2.2).  When every slot is
taken, a newcomer takes the slot of the connection idle longest (its client's last byte, or its
opening, longest ago) of the first group that has one: closed sessions still flushing to a client
that does not read, connections that never sent a byte, connections in session initialization,
open sessions; never one whose packet a worker is parsing.  At most ``ACCEPTS_PER_ROUND``
connections are taken in per round of the loop, so a newcomer's first bytes are read before a
stream of later newcomers makes it the oldest.  The evicted connection is closed by the peer
(``closed_by`` "evicted", no violation: the client broke no rule), so a flood of idle connections,
re-opened as fast as they are closed, never keeps a well-behaved sender out.

Fairness: no connection delays another's timers or replies.  A read hands the Acceptor at most
``INLINE_BYTES`` of whole packets on the loop; a read that completes more (a packet of megabytes)
is handed to a worker thread, and that connection is neither read nor timed until the worker is
done, while the loop goes on serving every other connection.

Bounded memory: totals are counted for everything (``PeerConnection`` counters,
:attr:`SimulatedPeer.totals`), details are kept in a ring: the last ``history`` packets, delivered
messages and violations of all connections together, no more than ``history_bytes`` of packet
bytes, the last ``history`` closed connections and Ping exchanges.  Violations go to ``report``
as JSON lines and the traffic to ``record`` as a pcap with TCP framing
(:mod:`harness.peers.recorder`), both written as they happen.

Output failures never change protocol behaviour: a file that cannot be opened is a set-up error
(:class:`PeerError` naming it), but once opened, a write that fails (a full disk, a quota, an I/O
error) stops that sink only: it is cut back to its last whole record, kept in
:attr:`SimulatedPeer.sink_failures` (a :class:`SinkFailure` naming the path) and handed once to
``on_sink_failure``; every connection goes on exactly as it would have, and the totals still
count everything.

The peer also listens for Ping Requests ([MS-MQQB] 2.1.2) on a UDP port of its own (``ping_port``,
0 for an ephemeral one; 2.1.2 names 3527) and answers each as 3.1.7.7 Receive Ping Request says
(:func:`harness.session.ping_response`), with the behaviour the next connection would get: RF set
for ``refuse`` and ``ping-refuse``, no answer for ``ping-silent``.  Every request and its response
is kept in ``pings``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import selectors
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from harness.errors import HarnessError
from harness.peers import faults
from harness.peers.recorder import PcapRecorder, TcpFlow
from harness.session import (
    Acceptor,
    AcceptorBehaviour,
    CancelTimer,
    Close,
    Deliver,
    RuleViolation,
    Send,
    SessionConfig,
    SessionState,
    StartTimer,
    named_behaviour,
    ping_response,
)
from packets import GUID, Packet, PacketError, StreamSplitter

__all__ = ["PeerConnection", "PeerError", "PingExchange", "SimulatedPeer", "SinkFailure"]

log = logging.getLogger(__name__)

RECV_SIZE = 1 << 16
INLINE_BYTES = 1 << 16  # whole-packet bytes a read may hand the Acceptor on the loop; more go to a worker
WORKERS = 2  # threads parsing what a read completed beyond INLINE_BYTES
HISTORY = 10_000  # default: packets, delivered messages and violations kept in detail (all connections)
HISTORY_BYTES = 256 << 20  # default: packet bytes kept in detail
# Acceptor attributes that belong to the queue manager, not the session: the MessageIDHistoryTable
# ([MS-MQQB] 3.1.1.3), the incoming transactional sequences ([MS-MQDMPR] 3.1.1.5) and what the
# initiators' TransactionHeaders revealed so far (3.1.1.5).
QUEUE_MANAGER_STATE = ("MessageIDHistoryTable", "incoming_tx", "tx_checker")
TICK = 0.25  # longest sleep of the loop: how soon it notices close()
READS_PER_SECOND = 20  # a slow reader (AcceptorBehaviour.read_rate) reads this often, read_rate / 20 bytes each
ACCEPTS_PER_ROUND = 32  # connections taken in per loop round; the open ones are served between


class PeerError(HarnessError):
    """The simulated peer could not be set up or was used wrongly (bad address, behaviour, state)."""


Behaviour = AcceptorBehaviour | str


def _behaviour(b: Behaviour) -> AcceptorBehaviour:
    if isinstance(b, AcceptorBehaviour):
        return b
    if b in faults.FAULTS:  # input-triggered crashes and hangs (harness.peers.faults)
        return faults.FAULTS[b].behaviour
    try:
        return named_behaviour(b)
    except KeyError as e:
        raise PeerError(str(e.args[0])) from None


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
    bytes of an unfinished packet the stop cut off).
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


class _JsonLines:
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


class _History:
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


class _Slot:
    """The loop's private state for one connection."""

    def __init__(self, sock: socket.socket, conn: PeerConnection, acceptor: Acceptor, flow: TcpFlow | None) -> None:
        self.sock = sock
        self.conn = conn
        self.acceptor = acceptor
        self.flow = flow
        self.out = bytearray()
        self.timers: dict[str, float] = {}
        self.splitter = StreamSplitter()
        self.unframed = bytearray()  # bytes after a framing error
        self.last_rx = time.monotonic()  # when the client's last byte arrived (or the connection opened)
        self.heard = False  # the client sent at least one byte
        self.packet_started = 0.0  # when the first byte of the unfinished packet arrived (0: none)
        self.busy: Future[list[Any]] | None = None  # a worker is handling what the last read completed
        self.lost: tuple[str, str] | None = None  # the transport went away while busy: (by, reason)
        self.closing = False  # the acceptor closed: flush what is queued, then close
        self.close_deadline = 0.0
        self.mask = 0
        self.read_resume = 0.0  # a slow reader reads again at this time (0: not paused)
        self.fault: faults.FaultWatch | None = None  # an input-triggered fault's watch (harness.peers.faults)


class SimulatedPeer:
    """A loopback TCP server hosting one :class:`Acceptor` per connection (see the module docstring).

    Use as a context manager: ``with SimulatedPeer() as peer: ... peer.address``.  ``time_scale``
    multiplies the durations of the Acceptors' [MS-MQQB] 3.1.2 timers (1: the real ones).  ``behaviour``
    (settable) applies to connections accepted later; ``queue_behaviours([...])`` sets the
    behaviours of the next connections one by one.  ``max_connections`` bounds the connections
    served at once: a newcomer beyond them takes the slot of the longest-idle connection (counted in
    ``evicted``; see the module docstring), or is closed at once when no slot can be given up
    (counted in ``rejected``).  ``history`` and ``history_bytes`` bound the details kept (see the
    module docstring); :attr:`totals` counts everything.  ``on_sink_failure`` is called once per
    output (``report``, ``record``) that could not be written, on the peer's thread, with the
    :class:`SinkFailure` :attr:`sink_failures` keeps.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        behaviour: Behaviour = "normal",
        identifier: GUID | bytes | str | None = None,
        record: str | Path | None = None,
        report: str | Path | None = None,
        read_timeout: float = 10.0,
        max_connections: int = 256,
        config: SessionConfig | None = None,
        ping_port: int | None = 0,
        time_scale: float = 1.0,
        history: int = HISTORY,
        history_bytes: int = HISTORY_BYTES,
        on_sink_failure: Callable[[SinkFailure], None] | None = None,
    ) -> None:
        if not time_scale > 0:
            raise PeerError(f"time scale {time_scale!r} is not a positive number")
        if history < 1 or history_bytes < 0:
            raise PeerError(f"history {history} / {history_bytes} bytes: keep at least one detail")
        self.time_scale = float(time_scale)
        self.host, self.port = host, port
        self.ping_port = ping_port  # None: no Ping listener
        self._behaviour = _behaviour(behaviour)
        self.identifier = GUID(identifier) if identifier is not None else GUID(uuid.uuid4())
        if self.identifier.is_null:
            raise PeerError("the simulated queue manager needs a non-null identifier")
        self.record_path = Path(record) if record is not None else None
        self.report_path = Path(report) if report is not None else None
        self.read_timeout = read_timeout
        self.max_connections = max_connections
        self.config = config
        self.history = history
        self.totals = PeerTotals()
        self._history = _History(history, history_bytes)
        self._queued: deque[AcceptorBehaviour] = deque()
        self._connections: dict[int, PeerConnection] = {}  # the open ones and the last closed ones
        self._closed: deque[int] = deque()
        self._slots: dict[int, _Slot] = {}
        self._workers: ThreadPoolExecutor | None = None
        self._done: deque[_Slot] = deque()  # slots whose worker finished, for the loop to pick up
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sel: selectors.BaseSelector | None = None
        self._listener: socket.socket | None = None
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._recorder: PcapRecorder | None = None
        self._report: _JsonLines | None = None
        self._on_sink_failure = on_sink_failure
        self._sink_failures: list[SinkFailure] = []
        self._address: tuple[str, int] | None = None
        self._ping_sock: socket.socket | None = None
        self._ping_address: tuple[str, int] | None = None
        self._pings: deque[PingExchange] = deque(maxlen=history)
        # Holds the queue manager state every session shares ([MS-MQQB] 3.1.1.3, [MS-MQDMPR] 3.1.1.5).
        self._queue_manager = Acceptor(self.identifier, config=config)

    # -- public ---------------------------------------------------------------------------------

    @property
    def address(self) -> tuple[str, int]:
        if self._address is None:
            raise PeerError("the peer is not started")
        return self._address

    @property
    def ping_address(self) -> tuple[str, int]:
        """The UDP address the peer answers Ping Requests on ([MS-MQQB] 2.1.2)."""
        if self._ping_address is None:
            why = "is not started" if self._address is None else "does not listen for pings"
            raise PeerError(f"the peer {why}")
        return self._ping_address

    @property
    def rejected(self) -> int:
        """Connections closed at once because ``max_connections`` were being served."""
        return self.totals.rejected

    @property
    def evicted(self) -> int:
        """Connections closed to give their slot to a newcomer (the longest-idle ones)."""
        return self.totals.evicted

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

    @property
    def pings(self) -> list[PingExchange]:
        with self._lock:
            return list(self._pings)

    @property
    def behaviour(self) -> AcceptorBehaviour:
        return self._behaviour

    @behaviour.setter
    def behaviour(self, value: Behaviour) -> None:
        self._behaviour = _behaviour(value)

    def queue_behaviours(self, behaviours: Iterable[Behaviour]) -> None:
        """Behaviours for the next connections, one each, before ``behaviour`` applies again."""
        resolved = [_behaviour(b) for b in behaviours]
        with self._lock:
            self._queued.extend(resolved)

    @property
    def connections(self) -> list[PeerConnection]:
        """The open connections and the last ``history`` closed ones, in the order accepted."""
        with self._lock:
            return list(self._connections.values())

    @property
    def delivered(self) -> list[Packet]:
        """Every delivered UserMessage Packet, connection by connection."""
        return [p for c in self.connections for p in list(c.delivered)]

    @property
    def violations(self) -> list[tuple[int, RuleViolation]]:
        """(connection index, violation) for every violation reported so far."""
        return [(c.index, v) for c in self.connections for v in list(c.violations)]

    def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``predicate()`` holds (checked whenever the peer did something); its last value."""
        with self._cond:
            return bool(self._cond.wait_for(predicate, timeout))

    def start(self) -> SimulatedPeer:
        if self._thread is not None:
            raise PeerError("the peer is already started")
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((self.host, self.port))
            listener.listen(min(max(self.max_connections, 16), socket.SOMAXCONN))
        except OSError as e:
            listener.close()
            raise PeerError(f"cannot listen on {self.host}:{self.port}: {e.strerror or e}") from e
        sink, path = "", None
        try:
            if self.record_path is not None:
                sink, path = "record", self.record_path
                self._recorder = PcapRecorder(self.record_path, on_failure=self._record_failed)
            if self.report_path is not None:
                sink, path = "report", self.report_path
                self._report = _JsonLines(self.report_path, self._sink_failed)
        except OSError as e:
            listener.close()
            if self._recorder is not None:
                self._recorder.close()
            where = e.filename if e.filename is not None else path
            raise PeerError(f"cannot write the {sink} {where}: {e.strerror or e}") from e
        if self.ping_port is not None:
            pinger = socket.socket(family, socket.SOCK_DGRAM)
            try:
                pinger.bind((self.host, self.ping_port))
            except OSError as e:
                pinger.close()
                listener.close()
                if self._recorder is not None:
                    self._recorder.close()
                if self._report is not None:
                    self._report.close()
                where = f"UDP {self.host}:{self.ping_port}"
                raise PeerError(f"cannot listen for pings on {where}: {e.strerror or e}") from e
            pinger.setblocking(False)
            self._ping_sock = pinger
            self._ping_address = pinger.getsockname()[:2]
        listener.setblocking(False)
        self._listener = listener
        self._address = listener.getsockname()[:2]
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(listener, selectors.EVENT_READ, "listen")
        if self._ping_sock is not None:
            self._sel.register(self._ping_sock, selectors.EVENT_READ, "ping")
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._workers = ThreadPoolExecutor(WORKERS, thread_name_prefix=f"SimulatedPeer:{self._address[1]}:parse")
        self._thread = threading.Thread(target=self._run, name=f"SimulatedPeer:{self._address[1]}", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving: close every connection (FIN), the listening socket and the files."""
        if self._thread is None or self._stop.is_set():
            return
        self._stop.set()
        self._wake()
        self._thread.join(timeout=10.0)

    def __enter__(self) -> SimulatedPeer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

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

    def _session_clock(self) -> float:
        """The sessions' clock: monotonic seconds divided by the time scale, so that durations the
        Acceptor measures (MaximumOrderAckDelay, 3.1.5.8.6) scale like its timers."""
        return time.monotonic() / self.time_scale

    # -- the loop -------------------------------------------------------------------------------

    def _wake(self) -> None:
        try:
            assert self._wake_w is not None
            self._wake_w.send(b"x")
        except OSError:
            pass

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    self._round()
                except Exception:  # a fault outside any one connection: log it, keep serving
                    log.exception("simulated peer loop round failed")
                    time.sleep(0.01)
                self._notify()
        finally:
            self._shutdown()
            self._notify()

    def _round(self) -> None:
        sel = self._sel
        assert sel is not None
        faults.tick(self)
        timeout = max(0.0, min(TICK, self._next_deadline() - time.monotonic()))
        for key, mask in sel.select(timeout):
            if key.data == "listen":
                self._accept()
            elif key.data == "ping":
                self._answer_pings()
            elif key.data == "wake":
                self._drain_wake()
            else:
                slot: _Slot = key.data
                if mask & selectors.EVENT_WRITE:
                    self._guard(slot, self._flush)
                if mask & selectors.EVENT_READ and slot.sock.fileno() != -1:
                    self._guard(slot, self._readable)
        while self._done:
            self._resume(self._done.popleft())
        self._due()

    def _notify(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def _drain_wake(self) -> None:
        assert self._wake_r is not None
        try:
            while self._wake_r.recv(4096):
                pass
        except OSError:
            pass

    def _next_deadline(self) -> float:
        deadline = time.monotonic() + TICK
        for slot in self._slots.values():
            if slot.busy is not None:
                continue  # the worker's end wakes the loop
            if slot.timers:
                deadline = min(deadline, min(slot.timers.values()))
            if slot.closing:
                deadline = min(deadline, slot.close_deadline)
                continue
            if slot.read_resume:
                deadline = min(deadline, slot.read_resume)
            if slot.splitter.buffered:
                deadline = min(deadline, self._read_deadline(slot))
        return deadline

    def _read_deadline(self, slot: _Slot) -> float:
        """When the unfinished packet times out: ``read_timeout`` after its first byte arrived; for
        a slow reader (which itself delays the bytes) after the last byte."""
        if slot.acceptor.behaviour.read_rate is not None:
            return slot.last_rx + self.read_timeout
        return slot.packet_started + self.read_timeout

    def _guard(self, slot: _Slot, step: Callable[[_Slot], None]) -> None:
        """Run one step for a connection; any exception ends that connection only."""
        if slot.conn.closed:
            return
        try:
            step(slot)
        except Exception as e:
            log.debug("connection %d failed", slot.conn.index, exc_info=True)
            slot.conn.error = f"{type(e).__name__}: {e}"
            self._finish(slot, "error", slot.conn.error, closer="s2c")

    def _accept(self) -> None:
        """Take in the waiting connections, at most ``ACCEPTS_PER_ROUND``: the connections already
        open are read between two batches (a newcomer's first bytes before it is the oldest)."""
        assert self._listener is not None and self._sel is not None
        for _ in range(ACCEPTS_PER_ROUND):
            try:
                sock, client = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # e.g. EMFILE: leave the rest in the backlog
                log.warning("accept failed: %s", e)
                return
            if len(self._slots) >= self.max_connections:
                idlest = self._idlest()
                if idlest is None:
                    self.totals.rejected += 1
                    sock.close()
                    continue
                self._evict(idlest)
            self._open(sock, client[:2])

    def _idlest(self) -> _Slot | None:
        """The slot a newcomer takes when every one is taken: the longest-idle connection (its
        client's last byte, or its opening, longest ago) of the first group that has one: closed
        sessions still flushing their last bytes to a client that does not read them; connections
        that never sent a byte; connections in session initialization; open sessions.  Never one
        whose packet a worker is parsing."""
        candidates = [s for s in self._slots.values() if s.busy is None and not s.conn.closed]
        if not candidates:
            return None
        return min(
            candidates,
            key=lambda s: (not s.closing, s.heard, s.acceptor.SessionState is SessionState.OPEN, s.last_rx),
        )

    def _evict(self, slot: _Slot) -> None:
        """Close the connection to give its slot away: the peer's doing, so no violation and no
        Acceptor event (the client broke no rule)."""
        idle = time.monotonic() - slot.last_rx
        self.totals.evicted += 1
        reason = (
            f"evicted: every one of the {self.max_connections} slots was taken and this connection was "
            f"the longest idle ({idle:.3g} s without a byte from the client, SessionState "
            f"{slot.acceptor.SessionState.value})"
        )
        self._finish(slot, "evicted", reason, closer="s2c")

    def _answer_pings(self) -> None:
        """[MS-MQQB] 3.1.7.7 Receive Ping Request for every datagram waiting; the Ping Response goes
        to the request's source address and port (2.1.2)."""
        assert self._ping_sock is not None
        for _ in range(64):  # bounded: the TCP connections get their turn
            try:
                data, source = self._ping_sock.recvfrom(2048)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # e.g. an ICMP error for an earlier response
                log.debug("ping socket: %s", e)
                continue
            with self._lock:
                behaviour = self._queued[0] if self._queued else self._behaviour
            try:
                response = ping_response(data, self.identifier, behaviour)
            except Exception:
                log.debug("ping request from %s failed", source, exc_info=True)
                response = None
            with self._lock:  # kept before it goes out: whoever got the response finds it here
                self._pings.append(PingExchange(source[:2], data, response, behaviour.name, time.time()))
                self.totals.pings += 1
            if response is not None:
                try:
                    self._ping_sock.sendto(response, source)
                except OSError as e:
                    log.debug("ping response to %s failed: %s", source, e)

    def _open(self, sock: socket.socket, client: tuple[str, int]) -> None:
        assert self._sel is not None and self._address is not None
        sock.setblocking(False)
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            behaviour = self._queued.popleft() if self._queued else self._behaviour
            conn = PeerConnection(self.totals.connections, behaviour.name, client)
            self._connections[conn.index] = conn
            self.totals.connections += 1
        if behaviour.receive_buffer is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, behaviour.receive_buffer)
        acceptor = Acceptor(
            self.identifier,
            behaviour,
            config=self.config,
            clock=self._session_clock,
            wall_clock=time.time,
            keep=0,  # the peer keeps the details (its history)
        )
        # One queue manager behind every connection: what outlives a session is shared.
        for name in QUEUE_MANAGER_STATE:
            if hasattr(self._queue_manager, name):
                setattr(acceptor, name, getattr(self._queue_manager, name))
        flow = self._recorder.flow(client, self._address, time.time()) if self._recorder else None
        slot = _Slot(sock, conn, acceptor, flow)
        slot.fault = faults.watch_for(behaviour.name)
        self._slots[conn.index] = slot
        slot.mask = selectors.EVENT_READ
        self._sel.register(sock, slot.mask, slot)
        self._guard(slot, lambda s: self._perform(s, s.acceptor.connection_made(client[0])))

    def _readable(self, slot: _Slot) -> None:
        rate = slot.acceptor.behaviour.read_rate
        if rate is not None and time.monotonic() < slot.read_resume:
            return
        try:
            data = slot.sock.recv(RECV_SIZE if rate is None else max(1, rate // READS_PER_SECOND))
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            slot.conn.error = f"receive failed: {e.strerror or e}"
            self._lost(slot, "client", slot.conn.error)
            return
        if not data:
            self._lost(slot, "client", "the client closed the connection")
            return
        now, ts = time.monotonic(), time.time()
        slot.last_rx, slot.heard = now, True
        if rate is not None:  # a slow reader: no more reading until the rate allows it
            slot.read_resume = now + len(data) / rate
            self._set_mask(slot)
        if slot.flow is not None:
            slot.flow.data("c2s", data, ts)
        completed = self._keep_packets(slot, data, ts, now)
        if slot.closing:
            return  # the session is closed: the bytes are recorded, not processed
        if slot.fault is not None and slot.fault.fires(slot.acceptor.SessionState, data) and faults.strike(self, slot):
            return  # a crash or a hang on this packet: it is never processed
        if completed <= INLINE_BYTES:
            self._perform(slot, slot.acceptor.receive_data(data))
            return
        # Megabytes of whole packets: a worker parses them; this connection waits (not read, not
        # timed) while the loop serves the others.
        assert self._workers is not None
        slot.busy = self._workers.submit(slot.acceptor.receive_data, data)
        slot.busy.add_done_callback(functools.partial(self._worker_done, slot))
        self._set_mask(slot)

    def _worker_done(self, slot: _Slot, _: Future[list[Any]]) -> None:
        """In the worker: hand the slot back to the loop."""
        self._done.append(slot)
        self._wake()

    def _resume(self, slot: _Slot) -> None:
        """On the loop: take what the worker's Acceptor call produced, then serve the slot again."""
        future, slot.busy = slot.busy, None
        if future is None or slot.conn.closed:
            return
        if slot.packet_started:  # the time the connection was not read is not the client's
            slot.packet_started = max(slot.packet_started, time.monotonic())
        try:
            actions = future.result()
        except Exception as e:
            log.debug("connection %d failed", slot.conn.index, exc_info=True)
            slot.conn.error = f"{type(e).__name__}: {e}"
            self._finish(slot, "error", slot.conn.error, closer="s2c")
            return
        self._guard(slot, lambda s: self._perform(s, actions))
        if slot.lost is not None and not slot.conn.closed:
            by, reason = slot.lost
            self._guard(slot, lambda s: self._lost(s, by, reason))
        elif not slot.conn.closed:
            self._set_mask(slot)

    def _keep_packets(self, slot: _Slot, data: bytes, ts: float, now: float) -> int:
        """Record the whole packets ``data`` completes; their bytes (0 after a framing error)."""
        if slot.unframed:
            slot.unframed += data
            return 0
        completed = 0
        try:
            for piece in slot.splitter.feed(data):
                completed += len(piece.data)
                self._keep(slot.conn, "c2s", piece.data, ts)
        except PacketError:
            slot.unframed += slot.splitter.remainder()
        if not slot.splitter.buffered:
            slot.packet_started = 0.0
        elif completed or not slot.packet_started:  # a new packet began in this read
            slot.packet_started = now
        return completed

    def _keep(self, conn: PeerConnection, direction: str, data: bytes, ts: float) -> None:
        conn.packet_count += 1
        conn.byte_count += len(data)
        self.totals.packets += 1
        self.totals.bytes += len(data)
        self._history.keep(conn.packets, (direction, data, ts), len(data))

    def _perform(self, slot: _Slot, actions: list[Any]) -> None:
        conn, now = slot.conn, time.monotonic()
        for act in actions:
            if isinstance(act, Send):
                ts = time.time()
                slot.out += act.data
                self._keep(conn, "s2c", act.data, ts)
                if slot.flow is not None:
                    slot.flow.data("s2c", act.data, ts)
            elif isinstance(act, StartTimer):
                slot.timers[act.name] = now + act.seconds * self.time_scale
            elif isinstance(act, CancelTimer):
                slot.timers.pop(act.name, None)
            elif isinstance(act, Deliver | RuleViolation):
                self._record(conn, act)
            elif isinstance(act, Close):
                slot.closing = True
                slot.timers.clear()
                slot.close_deadline = now + self.read_timeout
                conn.close_reason = f"{act.reason} ({act.section})"
        if slot.out:
            self._flush(slot)
        elif slot.closing:
            self._finish(slot, "acceptor", conn.close_reason, closer="s2c")

    def _flush(self, slot: _Slot) -> None:
        assert self._sel is not None
        while slot.out:
            try:
                n = slot.sock.send(slot.out)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as e:
                slot.out.clear()
                slot.conn.error = f"send failed: {e.strerror or e}"
                self._lost(slot, "client", slot.conn.error)
                return
            del slot.out[:n]
        if not slot.out and slot.closing:
            self._finish(slot, "acceptor", slot.conn.close_reason, closer="s2c")
            return
        self._set_mask(slot)

    def _set_mask(self, slot: _Slot) -> None:
        """Watch a connection for writing while output is queued, for reading unless it is closing
        or a slow reader's pause runs (then the selector times out at ``read_resume``)."""
        assert self._sel is not None
        paused = slot.read_resume > time.monotonic() or slot.busy is not None
        reading = not slot.closing and not paused
        mask = (selectors.EVENT_READ if reading else 0) | (selectors.EVENT_WRITE if slot.out else 0)
        if mask == 0:
            if paused:
                # nothing to watch during the pause: unregister until _due resumes reading
                if slot.mask:
                    self._sel.unregister(slot.sock)
                    slot.mask = 0
                return
            mask = selectors.EVENT_READ
        if slot.mask == 0:
            self._sel.register(slot.sock, mask, slot)
        elif mask != slot.mask:
            self._sel.modify(slot.sock, mask, slot)
        slot.mask = mask

    def _lost(self, slot: _Slot, by: str, reason: str) -> None:
        """The transport connection went away under the acceptor ([MS-MQQB] 3.1.7.3)."""
        if slot.busy is not None:  # the worker's Acceptor call comes first
            slot.lost = slot.lost or (by, reason)
            return
        if not slot.closing:
            try:
                self._perform_quiet(slot, slot.acceptor.connection_lost())
            except Exception as e:
                slot.conn.error = f"{type(e).__name__}: {e}"
        self._finish(slot, by, reason, closer="c2s" if by == "client" else "s2c")

    def _perform_quiet(self, slot: _Slot, actions: list[Any]) -> None:
        """Actions after the transport is gone: keep the records, send nothing."""
        for act in actions:
            if isinstance(act, Deliver | RuleViolation):
                self._record(slot.conn, act)

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

    def _finish(self, slot: _Slot, by: str, reason: str, closer: str) -> None:
        """Close the connection and its record; never raises (it is the last resort of ``_guard``)."""
        conn = slot.conn
        if conn.closed:
            return
        conn.closed = True
        self._slots.pop(conn.index, None)
        slot.timers.clear()
        leftover = bytes(slot.unframed) or slot.splitter.remainder()
        if leftover:  # kept with the packets, not counted as one
            conn.byte_count += len(leftover)
            self._history.keep(conn.packets, ("c2s", leftover, time.time()), len(leftover))
        if by == "stopped" and slot.splitter.buffered and not slot.unframed:
            conn.stopped_mid_packet = slot.splitter.buffered
            reason = f"{reason} with {slot.splitter.buffered} bytes of an unfinished packet"
        conn.closed_by, conn.close_reason = by, conn.close_reason or reason
        with self._lock:  # the history keeps the last closed connections
            self._closed.append(conn.index)
            while len(self._closed) > self.history:
                self._connections.pop(self._closed.popleft(), None)
        if slot.flow is not None:
            try:
                slot.flow.fin(closer, time.time())
            except Exception as e:
                conn.error = conn.error or f"recording failed: {type(e).__name__}: {e}"
        assert self._sel is not None
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(slot.sock)
        if by == "acceptor":
            with contextlib.suppress(OSError):
                slot.sock.shutdown(socket.SHUT_RDWR)
        slot.sock.close()

    def _due(self) -> None:
        now = time.monotonic()
        for slot in list(self._slots.values()):
            if slot.conn.closed or slot.busy is not None:
                continue
            if slot.closing:
                if now >= slot.close_deadline:
                    slot.conn.error = slot.conn.error or f"send failed: {len(slot.out)} bytes unsent at close"
                    self._finish(slot, "acceptor", slot.conn.close_reason, closer="s2c")
                continue
            if slot.read_resume and now >= slot.read_resume:  # a slow reader's pause is over
                slot.read_resume = 0.0
                self._set_mask(slot)
            if slot.splitter.buffered and not slot.unframed and now >= self._read_deadline(slot):
                reason = (
                    f"read timeout: {slot.splitter.buffered} bytes of a packet not complete "
                    f"{self.read_timeout:g} s after its first byte"
                )
                slot.conn.error = reason
                self._guard(slot, lambda s, r=reason: self._lost(s, "read-timeout", r))  # type: ignore[misc]
                continue
            for name, deadline in sorted(slot.timers.items(), key=lambda kv: kv[1]):
                if deadline <= now and not slot.conn.closed and not slot.closing:
                    slot.timers.pop(name, None)
                    self._guard(slot, lambda s, n=name: self._perform(s, s.acceptor.timer_fired(n)))  # type: ignore[misc]

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

    def _shutdown(self) -> None:
        if self._workers is not None:  # a worker's packet is taken in before the connections stop
            self._workers.shutdown(wait=True)
            while self._done:
                self._resume(self._done.popleft())
        for slot in list(self._slots.values()):
            self._finish(slot, "stopped", "the peer stopped", closer="s2c")
        for s in (self._listener, self._ping_sock, self._wake_r, self._wake_w):
            if s is not None:
                s.close()
        if self._sel is not None:
            self._sel.close()
        if self._recorder is not None:
            self._recorder.close()  # a failure is the sink's (reported), never raised
        if self._report is not None:
            self._report.close()
