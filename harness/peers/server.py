"""A simulated remote queue manager: the acceptor side of MSMQ binary sessions on a real TCP socket.

Renders [MS-MQQB] 2.1.1 (a protocol session is a TCP connection, one per initiator) and 3.1.5.10
Handling an Incoming Transport Connection around the sans-IO :class:`harness.session.Acceptor`,
which does everything the spec says an acceptor does (3.1.5.3.1, 3.1.5.4.1, 3.1.5.8, the timers of
3.1.2/3.1.6) and reports every initiator rule break as a ``Violation``.  One background thread runs
a ``selectors`` loop over the listening socket and every connection; each connection gets its own
Acceptor (with the behaviour chosen for it), its timers run on ``time.monotonic`` (``time_scale``
times their durations: 0.05 runs the 3.1.2 timers a twentieth of theirs, for tests and for a
live ``mqqb://...?scale=0.05`` target), its CURRENT_TIME for message expiration ([MS-MQMQ]
2.2.19.1) is ``time.time`` (never scaled: SentTime is wall-clock time), and the queue
manager state of [MS-MQQB] 3.1.1.3 that outlives a session (MessageIDHistoryTable, the incoming
transactional sequences of [MS-MQDMPR] 3.1.1.5) is shared by all of them.  A connection that
stalls inside a packet is closed after ``read_timeout`` seconds; anything a client sends, and any
error while handling it, ends that connection only.  Every packet in both directions and every
delivered message is kept per connection; violations go to ``report`` as JSON lines and the
traffic to ``record`` as a pcap with TCP framing (:mod:`harness.peers.recorder`).

The peer also listens for Ping Requests ([MS-MQQB] 2.1.2) on a UDP port of its own (``ping_port``,
0 for an ephemeral one; 2.1.2 names 3527) and answers each as 3.1.7.7 Receive Ping Request says
(:func:`harness.session.ping_response`), with the behaviour the next connection would get: RF set
for ``refuse`` and ``ping-refuse``, no answer for ``ping-silent``.  Every request and its response
is kept in ``pings``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import selectors
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from harness.peers.recorder import PcapRecorder, TcpFlow
from harness.session import (
    Acceptor,
    AcceptorBehaviour,
    CancelTimer,
    Close,
    Deliver,
    Send,
    SessionConfig,
    StartTimer,
    Violation,
    named_behaviour,
    ping_response,
)
from packets import GUID, Packet, PacketError, StreamSplitter

__all__ = ["PeerConnection", "PeerError", "PingExchange", "SimulatedPeer"]

log = logging.getLogger(__name__)

RECV_SIZE = 1 << 18
# Acceptor attributes that belong to the queue manager, not the session: the MessageIDHistoryTable
# ([MS-MQQB] 3.1.1.3), the incoming transactional sequences ([MS-MQDMPR] 3.1.1.5) and what the
# initiators' TransactionHeaders revealed so far (3.1.1.5).
QUEUE_MANAGER_STATE = ("MessageIDHistoryTable", "incoming_tx", "tx_checker")
TICK = 0.25  # longest sleep of the loop: how soon it notices close()
READS_PER_SECOND = 20  # a slow reader (AcceptorBehaviour.read_rate) reads this often, read_rate / 20 bytes each


class PeerError(Exception):
    """The simulated peer could not be set up or was used wrongly (bad address, behaviour, state)."""


Behaviour = AcceptorBehaviour | str


def _behaviour(b: Behaviour) -> AcceptorBehaviour:
    if isinstance(b, AcceptorBehaviour):
        return b
    try:
        return named_behaviour(b)
    except KeyError as e:
        raise PeerError(str(e.args[0])) from None


@dataclass
class PeerConnection:
    """What happened on one accepted connection.

    ``packets``: (direction "c2s"/"s2c", bytes, wall-clock timestamp) for every whole packet in
    the order the peer read or wrote it; bytes left over that never made a whole packet (a
    truncated or unreadable stream) form one last "c2s" entry.  ``delivered``: the UserMessage
    Packets the Acceptor accepted.  ``violations``: the Acceptor's Violation actions.
    ``closed_by``: "acceptor" (the session engine closed), "client", "read-timeout", "error" or
    "stopped".
    """

    index: int
    behaviour: str
    client: tuple[str, int]
    packets: list[tuple[str, bytes, float]] = field(default_factory=list)
    delivered: list[Packet] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    closed: bool = False
    error: str | None = None
    closed_by: str = ""
    close_reason: str = ""


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
        self.last_rx = time.monotonic()
        self.closing = False  # the acceptor closed: flush what is queued, then close
        self.close_deadline = 0.0
        self.mask = 0
        self.read_resume = 0.0  # a slow reader reads again at this time (0: not paused)


class SimulatedPeer:
    """A loopback TCP server hosting one :class:`Acceptor` per connection (see the module docstring).

    Use as a context manager: ``with SimulatedPeer() as peer: ... peer.address``.  ``time_scale``
    multiplies the durations of the Acceptors' [MS-MQQB] 3.1.2 timers (1: the real ones).  ``behaviour``
    (settable) applies to connections accepted later; ``queue_behaviours([...])`` sets the
    behaviours of the next connections one by one.  ``max_connections`` bounds the connections
    served at once (more are accepted and closed at once, counted in ``rejected``).
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
    ) -> None:
        if not time_scale > 0:
            raise PeerError(f"time scale {time_scale!r} is not a positive number")
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
        self.rejected = 0
        self._queued: deque[AcceptorBehaviour] = deque()
        self._connections: list[PeerConnection] = []
        self._slots: dict[int, _Slot] = {}
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sel: selectors.BaseSelector | None = None
        self._listener: socket.socket | None = None
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._recorder: PcapRecorder | None = None
        self._report: IO[str] | None = None
        self._address: tuple[str, int] | None = None
        self._ping_sock: socket.socket | None = None
        self._ping_address: tuple[str, int] | None = None
        self._pings: list[PingExchange] = []
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
        with self._lock:
            return list(self._connections)

    @property
    def delivered(self) -> list[Packet]:
        """Every delivered UserMessage Packet, connection by connection."""
        return [p for c in self.connections for p in list(c.delivered)]

    @property
    def violations(self) -> list[tuple[int, Violation]]:
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
        try:
            if self.record_path is not None:
                self._recorder = PcapRecorder(self.record_path)
            if self.report_path is not None:
                self.report_path.parent.mkdir(parents=True, exist_ok=True)
                self._report = self.report_path.open("w", encoding="utf-8")
        except OSError as e:
            listener.close()
            if self._recorder is not None:
                self._recorder.close()
            raise PeerError(f"cannot write {e.filename}: {e.strerror or e}") from e
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
            if slot.timers:
                deadline = min(deadline, min(slot.timers.values()))
            if slot.closing:
                deadline = min(deadline, slot.close_deadline)
                continue
            if slot.read_resume:
                deadline = min(deadline, slot.read_resume)
            if slot.splitter.buffered:
                deadline = min(deadline, slot.last_rx + self.read_timeout)
        return deadline

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
        assert self._listener is not None and self._sel is not None
        while True:
            try:
                sock, client = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # e.g. EMFILE: leave the rest in the backlog
                log.warning("accept failed: %s", e)
                return
            if len(self._slots) >= self.max_connections:
                self.rejected += 1
                sock.close()
                continue
            self._open(sock, client[:2])

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
            conn = PeerConnection(len(self._connections), behaviour.name, client)
            self._connections.append(conn)
        if behaviour.receive_buffer is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, behaviour.receive_buffer)
        acceptor = Acceptor(
            self.identifier, behaviour, config=self.config, clock=self._session_clock, wall_clock=time.time
        )
        # One queue manager behind every connection: what outlives a session is shared.
        for name in QUEUE_MANAGER_STATE:
            if hasattr(self._queue_manager, name):
                setattr(acceptor, name, getattr(self._queue_manager, name))
        flow = self._recorder.flow(client, self._address, time.time()) if self._recorder else None
        slot = _Slot(sock, conn, acceptor, flow)
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
        slot.last_rx = now
        if rate is not None:  # a slow reader: no more reading until the rate allows it
            slot.read_resume = now + len(data) / rate
            self._set_mask(slot)
        if slot.flow is not None:
            slot.flow.data("c2s", data, ts)
        self._keep_packets(slot, data, ts)
        if slot.closing:
            return  # the session is closed: the bytes are recorded, not processed
        self._perform(slot, slot.acceptor.receive_data(data))

    def _keep_packets(self, slot: _Slot, data: bytes, ts: float) -> None:
        if slot.unframed:
            slot.unframed += data
            return
        try:
            for piece in slot.splitter.feed(data):
                slot.conn.packets.append(("c2s", piece.data, ts))
        except PacketError:
            slot.unframed += slot.splitter.remainder()

    def _perform(self, slot: _Slot, actions: list[Any]) -> None:
        conn, now = slot.conn, time.monotonic()
        for act in actions:
            if isinstance(act, Send):
                ts = time.time()
                slot.out += act.data
                conn.packets.append(("s2c", act.data, ts))
                if slot.flow is not None:
                    slot.flow.data("s2c", act.data, ts)
            elif isinstance(act, StartTimer):
                slot.timers[act.name] = now + act.seconds * self.time_scale
            elif isinstance(act, CancelTimer):
                slot.timers.pop(act.name, None)
            elif isinstance(act, Deliver):
                conn.delivered.append(act.packet)
            elif isinstance(act, Violation):
                conn.violations.append(act)
                self._write_report(conn, act)
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
        reading = not slot.closing and slot.read_resume <= time.monotonic()
        mask = (selectors.EVENT_READ if reading else 0) | (selectors.EVENT_WRITE if slot.out else 0)
        if mask == 0:
            if slot.read_resume > time.monotonic():
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
        if not slot.closing:
            try:
                self._perform_quiet(slot, slot.acceptor.connection_lost())
            except Exception as e:
                slot.conn.error = f"{type(e).__name__}: {e}"
        self._finish(slot, by, reason, closer="c2s" if by == "client" else "s2c")

    def _perform_quiet(self, slot: _Slot, actions: list[Any]) -> None:
        """Actions after the transport is gone: keep the records, send nothing."""
        for act in actions:
            if isinstance(act, Deliver):
                slot.conn.delivered.append(act.packet)
            elif isinstance(act, Violation):
                slot.conn.violations.append(act)
                self._write_report(slot.conn, act)

    def _finish(self, slot: _Slot, by: str, reason: str, closer: str) -> None:
        """Close the connection and its record; never raises (it is the last resort of ``_guard``)."""
        conn = slot.conn
        if conn.closed:
            return
        conn.closed = True
        self._slots.pop(conn.index, None)
        slot.timers.clear()
        leftover = bytes(slot.unframed) or slot.splitter.remainder()
        if leftover:
            conn.packets.append(("c2s", leftover, time.time()))
        conn.closed_by, conn.close_reason = by, conn.close_reason or reason
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
            if slot.conn.closed:
                continue
            if slot.closing:
                if now >= slot.close_deadline:
                    slot.conn.error = slot.conn.error or f"send failed: {len(slot.out)} bytes unsent at close"
                    self._finish(slot, "acceptor", slot.conn.close_reason, closer="s2c")
                continue
            if slot.read_resume and now >= slot.read_resume:  # a slow reader's pause is over
                slot.read_resume = 0.0
                self._set_mask(slot)
            if slot.splitter.buffered and not slot.unframed and now - slot.last_rx >= self.read_timeout:
                reason = (
                    f"read timeout: {slot.splitter.buffered} bytes of an incomplete packet, "
                    f"nothing for {self.read_timeout:g} s"
                )
                slot.conn.error = reason
                self._guard(slot, lambda s, r=reason: self._lost(s, "read-timeout", r))  # type: ignore[misc]
                continue
            for name, deadline in sorted(slot.timers.items(), key=lambda kv: kv[1]):
                if deadline <= now and not slot.conn.closed and not slot.closing:
                    slot.timers.pop(name, None)
                    self._guard(slot, lambda s, n=name: self._perform(s, s.acceptor.timer_fired(n)))  # type: ignore[misc]

    def _write_report(self, conn: PeerConnection, v: Violation) -> None:
        if self._report is None:
            return
        record = {
            "connection": conn.index,
            "rule": v.rule_id,
            "section": v.section,
            "packet_index": v.packet_index,
            "evidence": v.evidence,
        }
        self._report.write(json.dumps(record) + "\n")
        self._report.flush()

    def _shutdown(self) -> None:
        for slot in list(self._slots.values()):
            self._finish(slot, "stopped", "the peer stopped", closer="s2c")
        for s in (self._listener, self._ping_sock, self._wake_r, self._wake_w):
            if s is not None:
                s.close()
        if self._sel is not None:
            self._sel.close()
        if self._recorder is not None:
            self._recorder.close()
        if self._report is not None:
            self._report.close()
