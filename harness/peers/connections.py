"""The simulated peer's side of each connection: one sans-IO :class:`harness.session.Acceptor`
per [MS-MQQB] 2.1.1 connection (3.1.5.10 Handling an Incoming Transport Connection), its actions
performed on the socket (packets sent, timers started and cancelled, messages delivered, rule
breaks recorded, the close of 3.1.5.9), the transport lost under it (3.1.7.3), the connection's
end, and which connection gives its slot to a newcomer when every one is taken.  The queue
manager state of 3.1.1.3 that outlives a session is shared by every Acceptor.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import time
from typing import Any

from harness.peers import faults
from harness.peers.history import PeerConnection, PingExchange
from harness.peers.ping import answer_pings
from harness.peers.reactor import Reactor, Slot
from harness.session import (
    Acceptor,
    AcceptorBehaviour,
    CancelTimer,
    Close,
    Deliver,
    RuleViolation,
    Send,
    SessionState,
    StartTimer,
)

__all__ = ["QUEUE_MANAGER_STATE", "Connections"]

log = logging.getLogger(__name__)

ACCEPTS_PER_ROUND = 32  # connections taken in per loop round; the open ones are served between

# Acceptor attributes that belong to the queue manager, not the session: the MessageIDHistoryTable
# ([MS-MQQB] 3.1.1.3), the incoming transactional sequences ([MS-MQDMPR] 3.1.1.5) and what the
# initiators' TransactionHeaders revealed so far (3.1.1.5).
QUEUE_MANAGER_STATE = ("MessageIDHistoryTable", "incoming_tx", "tx_checker")


class Connections(Reactor):
    """The session's side of the loop (see the module docstring)."""

    def _session_clock(self) -> float:
        raise NotImplementedError

    def _open(self, sock: socket.socket, client: tuple[str, int]) -> None:
        assert self._sel is not None and self._address is not None
        sock.setblocking(False)
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            behaviour = self._queued.popleft() if self._queued else self._behaviour
            conn = PeerConnection(self.totals.connections, behaviour.name, client, opened=time.time())
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
        slot = Slot(sock, conn, acceptor, flow)
        slot.fault = faults.watch_for(behaviour.name)
        self._slots[conn.index] = slot
        slot.mask = selectors.EVENT_READ
        self._sel.register(sock, slot.mask, slot)
        self._guard(slot, lambda s: self._perform(s, s.acceptor.connection_made(client[0])))

    def _perform(self, slot: Slot, actions: list[Any]) -> None:
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

    def _lost(self, slot: Slot, by: str, reason: str) -> None:
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

    def _perform_quiet(self, slot: Slot, actions: list[Any]) -> None:
        """Actions after the transport is gone: keep the records, send nothing."""
        for act in actions:
            if isinstance(act, Deliver | RuleViolation):
                self._record(slot.conn, act)

    def _finish(self, slot: Slot, by: str, reason: str, closer: str) -> None:
        """Close the connection and its record; never raises (it is the last resort of ``_guard``)."""
        conn = slot.conn
        if conn.closed or slot.finished:
            return
        slot.finished = True
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
        conn.ended = time.time()
        conn.closed = True  # last: a record read closed says who closed it, why and when
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

    def _idlest(self) -> Slot | None:
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

    def _evict(self, slot: Slot) -> None:
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
        assert self._ping_sock is not None
        answer_pings(self._ping_sock, self.identifier, self._next_behaviour, self._keep_ping)

    def _next_behaviour(self) -> AcceptorBehaviour:
        """The behaviour the next connection gets (and a Ping Request's answer, 2.1.2)."""
        with self._lock:
            return self._queued[0] if self._queued else self._behaviour

    def _keep_ping(self, exchange: PingExchange) -> None:
        with self._lock:
            self._pings.append(exchange)
            self.totals.pings += 1
