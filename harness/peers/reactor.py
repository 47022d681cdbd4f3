"""The simulated peer's reactor: one ``selectors`` loop over the listening socket, the Ping
socket and every [MS-MQQB] 2.1.1 connection, with the connections' timers (3.1.2, scaled) as its
deadlines and a pool of workers for reads that complete megabytes of packets.

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
"""

from __future__ import annotations

import functools
import logging
import selectors
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from harness.peers import faults
from harness.peers.history import PeerConnection, PeerRecords, PingExchange
from harness.peers.recorder import PcapRecorder, TcpFlow
from harness.session import Acceptor, AcceptorBehaviour, SessionConfig
from packets import GUID, PacketError, StreamSplitter

__all__ = ["Reactor", "Slot"]

log = logging.getLogger(__name__)

RECV_SIZE = 1 << 16
INLINE_BYTES = 1 << 16  # whole-packet bytes a read may hand the Acceptor on the loop; more go to a worker
WORKERS = 2  # threads parsing what a read completed beyond INLINE_BYTES
TICK = 0.25  # longest sleep of the loop: how soon it notices close()
READS_PER_SECOND = 20  # a slow reader (AcceptorBehaviour.read_rate) reads this often, read_rate / 20 bytes each


class Slot:
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
        self.finished = False  # _finish began: the connection is being closed


class Reactor(PeerRecords):
    """The loop of :class:`harness.peers.server.SimulatedPeer`; what it does with a connection's
    session (open it, perform the Acceptor's actions, lose it, finish it) is the subclass's."""

    identifier: GUID
    config: SessionConfig | None
    time_scale: float
    read_timeout: float
    max_connections: int
    history: int
    _behaviour: AcceptorBehaviour
    _queued: deque[AcceptorBehaviour]
    _connections: dict[int, PeerConnection]
    _closed: deque[int]
    _slots: dict[int, Slot]
    _workers: ThreadPoolExecutor | None
    _done: deque[Slot]
    _lock: threading.RLock  # held by the loop while it handles an event (see _round)
    _cond: threading.Condition
    _stop: threading.Event
    _sel: selectors.BaseSelector | None
    _listener: socket.socket | None
    _wake_r: socket.socket | None
    _wake_w: socket.socket | None
    _recorder: PcapRecorder | None
    _address: tuple[str, int] | None
    _ping_sock: socket.socket | None
    _ping_address: tuple[str, int] | None
    _pings: deque[PingExchange]
    _queue_manager: Acceptor
    rounds: int  # rounds of the loop done (see SimulatedPeer.sync)

    # -- the session's side (harness.peers.connections) ---------------------------------------------
    def _open(self, sock: socket.socket, client: tuple[str, int]) -> None:
        raise NotImplementedError

    def _perform(self, slot: Slot, actions: list[Any]) -> None:
        raise NotImplementedError

    def _lost(self, slot: Slot, by: str, reason: str) -> None:
        raise NotImplementedError

    def _finish(self, slot: Slot, by: str, reason: str, closer: str) -> None:
        raise NotImplementedError

    def _answer_pings(self) -> None:
        raise NotImplementedError

    def _accept(self) -> None:
        raise NotImplementedError

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
            with self._lock:
                self._shutdown()
            self._notify()

    def _round(self) -> None:
        """One round: wait for the sockets or the next deadline (the records free to read), then
        handle what came with ``_lock`` held: a reader holding it (:meth:`snapshot`) sees the
        records between two events, never half of one (a packet without what the Acceptor made
        of it, a connection closed without who closed it)."""
        sel = self._sel
        assert sel is not None
        with self._lock:
            faults.tick(self)
            timeout = max(0.0, min(TICK, self._next_deadline() - time.monotonic()))
        events = sel.select(timeout)
        with self._lock:
            for key, mask in events:
                if key.data == "listen":
                    self._accept()
                elif key.data == "ping":
                    self._answer_pings()
                elif key.data == "wake":
                    self._drain_wake()
                else:
                    slot: Slot = key.data
                    if mask & selectors.EVENT_WRITE:
                        self._guard(slot, self._flush)
                    if mask & selectors.EVENT_READ and slot.sock.fileno() != -1:
                        self._guard(slot, self._readable)
            while self._done:
                self._resume(self._done.popleft())
            self._due()

    def _notify(self) -> None:
        with self._cond:
            self.rounds += 1
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

    def _read_deadline(self, slot: Slot) -> float:
        """When the unfinished packet times out: ``read_timeout`` after its first byte arrived; for
        a slow reader (which itself delays the bytes) after the last byte."""
        if slot.acceptor.behaviour.read_rate is not None:
            return slot.last_rx + self.read_timeout
        return slot.packet_started + self.read_timeout

    def _guard(self, slot: Slot, step: Callable[[Slot], None]) -> None:
        """Run one step for a connection; any exception ends that connection only."""
        if slot.conn.closed:
            return
        try:
            step(slot)
        except Exception as e:
            log.debug("connection %d failed", slot.conn.index, exc_info=True)
            slot.conn.error = f"{type(e).__name__}: {e}"
            self._finish(slot, "error", slot.conn.error, closer="s2c")

    def _readable(self, slot: Slot) -> None:
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
        # A reader sees the packets these bytes complete and what processing them did (messages
        # delivered, rules broken) together: within this event (``_lock`` held), and across a
        # worker's parse by ``processing``, which holds until both are recorded.  A packet a fault
        # hangs on is never processed: nothing more will be recorded for it.
        submitted = False
        try:
            completed = self._keep_packets(slot, data, ts, now)
            if slot.closing:
                return  # the session is closed: the bytes are recorded, not processed
            fires = slot.fault is not None and slot.fault.fires(slot.acceptor.SessionState, data)
            if fires and faults.strike(self, slot):
                return  # a crash or a hang on this packet: it is never processed
            if completed <= INLINE_BYTES:
                self._perform(slot, slot.acceptor.receive_data(data))
                return
            # Megabytes of whole packets: a worker parses them; this connection waits (not read,
            # not timed) while the loop serves the others; it stays ``processing`` until resumed.
            assert self._workers is not None
            slot.conn.processing = submitted = True
            slot.busy = self._workers.submit(slot.acceptor.receive_data, data)
            slot.busy.add_done_callback(functools.partial(self._worker_done, slot))
            self._set_mask(slot)
        finally:
            slot.conn.processing = submitted

    def _worker_done(self, slot: Slot, _: Future[list[Any]]) -> None:
        """In the worker: hand the slot back to the loop."""
        self._done.append(slot)
        self._wake()

    def _resume(self, slot: Slot) -> None:
        """On the loop: take what the worker's Acceptor call produced, then serve the slot again."""
        future, slot.busy = slot.busy, None
        try:
            self._resume_with(slot, future)
        finally:
            slot.conn.processing = False

    def _resume_with(self, slot: Slot, future: Future[list[Any]] | None) -> None:
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

    def _keep_packets(self, slot: Slot, data: bytes, ts: float, now: float) -> int:
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

    def _flush(self, slot: Slot) -> None:
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

    def _set_mask(self, slot: Slot) -> None:
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
        self._close_sinks()  # a failure is the sink's (reported), never raised
