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

The loop is :mod:`harness.peers.reactor` (its slots and its fairness), each connection's session
:mod:`harness.peers.connections`, the records, the report, the pcap record and the outputs that
failed :mod:`harness.peers.history`, the Ping responder :mod:`harness.peers.ping`; this module
sets them up (:meth:`SimulatedPeer.start`: listen, open the outputs, listen for pings, serve) and
answers the caller.
"""

from __future__ import annotations

import dataclasses
import selectors
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.peers import faults
from harness.peers.connections import Connections
from harness.peers.history import History, JsonLines, PeerConnection, PeerTotals, PingExchange, SinkFailure
from harness.peers.reactor import WORKERS, Slot
from harness.peers.recorder import PcapRecorder
from harness.peers.sockets import tcp_listener
from harness.session import Acceptor, AcceptorBehaviour, RuleViolation, SessionConfig, named_behaviour
from packets import GUID, Packet

__all__ = ["PeerError", "PeerSnapshot", "SimulatedPeer"]

HISTORY = 10_000  # default: packets, delivered messages and violations kept in detail (all connections)
HISTORY_BYTES = 256 << 20  # default: packet bytes kept in detail
# rounds of the loop a sync waits for: the one under way (it may have looked at the sockets before
# the sync), one that looks after it (accepts, reads), one that reads what a connection it
# accepted sent
SYNC_ROUNDS = 3


class PeerError(HarnessError):
    """The simulated peer could not be set up or was used wrongly (bad address, behaviour, state)."""


Behaviour = AcceptorBehaviour | str


def _identifier(identifier: GUID | bytes | str | None) -> GUID:
    """The simulated queue manager's identifier: a new GUID when none is given, never the null GUID."""
    guid = GUID(identifier) if identifier is not None else GUID(uuid.uuid4())
    if guid.is_null:
        raise PeerError("the simulated queue manager needs a non-null identifier")
    return guid


def _behaviour(b: Behaviour) -> AcceptorBehaviour:
    if isinstance(b, AcceptorBehaviour):
        return b
    if b in faults.FAULTS:  # input-triggered crashes and hangs (harness.peers.faults)
        return faults.FAULTS[b].behaviour
    try:
        return named_behaviour(b)
    except KeyError as e:
        raise PeerError(str(e.args[0])) from None


@dataclass(frozen=True)
class PeerSnapshot:
    """What the peer had recorded at one moment (:meth:`SimulatedPeer.snapshot`): copies of its
    connections (the open ones and the last closed ones, in the order accepted) and its Ping
    exchanges."""

    connections: list[PeerConnection]
    pings: list[PingExchange]

    @property
    def settled(self) -> bool:
        """Every packet read is recorded with what the Acceptor made of it."""
        return not any(c.processing for c in self.connections)

    @property
    def delivered(self) -> list[Packet]:
        return [p for c in self.connections for p in c.delivered]


class SimulatedPeer(Connections):
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
        self.identifier = _identifier(identifier)
        self.record_path = Path(record) if record is not None else None
        self.report_path = Path(report) if report is not None else None
        self.read_timeout = read_timeout
        self.max_connections = max_connections
        self.config = config
        self.history = history
        self.totals = PeerTotals()
        self._history = History(history, history_bytes)
        self._queued: deque[AcceptorBehaviour] = deque()
        self._connections: dict[int, PeerConnection] = {}  # the open ones and the last closed ones
        self._closed: deque[int] = deque()
        self._slots: dict[int, Slot] = {}
        self._workers: ThreadPoolExecutor | None = None
        self._done: deque[Slot] = deque()  # slots whose worker finished, for the loop to pick up
        self._lock = threading.RLock()  # the records; the loop holds it while it handles an event
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sel: selectors.BaseSelector | None = None
        self._listener: socket.socket | None = None
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._recorder: PcapRecorder | None = None
        self._report: JsonLines | None = None
        self._on_sink_failure = on_sink_failure
        self._sink_failures: list[SinkFailure] = []
        self._address: tuple[str, int] | None = None
        self._ping_sock: socket.socket | None = None
        self._ping_address: tuple[str, int] | None = None
        self._pings: deque[PingExchange] = deque(maxlen=history)
        self.rounds = 0
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
    def settled(self) -> bool:
        """Every packet read so far is recorded with what the Acceptor made of it (delivered,
        rule broken, answer sent): no worker is parsing one."""
        return not any(c.processing for c in self.connections)

    def snapshot(self) -> PeerSnapshot:
        """Copies of the connections' records and of the Ping exchanges, all read at one moment
        between two events of the loop (see harness.peers.reactor): packets, deliveries,
        violations and closes that one event records are all in it or none is."""
        with self._lock:
            conns = [
                dataclasses.replace(
                    c, packets=deque(c.packets), delivered=deque(c.delivered), violations=deque(c.violations)
                )
                for c in self._connections.values()
            ]
            return PeerSnapshot(conns, list(self._pings))

    def settled_snapshot(self, timeout: float) -> PeerSnapshot:
        """A :meth:`snapshot` taken once the peer is settled (no packet read whose processing a
        worker has not finished); after ``timeout`` seconds, the last one (``settled`` False)."""
        end = time.monotonic() + timeout
        while True:
            snap = self.snapshot()
            if snap.settled or time.monotonic() >= end:
                return snap
            self.wait_for(lambda: self.settled, max(0.0, end - time.monotonic()))

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

    def sync(self, timeout: float) -> bool:
        """Wait until the loop has handled everything that reached the peer's sockets before this
        call (connections to accept, bytes to read, Ping Requests): :data:`SYNC_ROUNDS` rounds
        of the loop end, each begun after the last (a round waits on the sockets, then handles
        every one that is ready; a connection accepted in one round is read in the next).  A
        reader that synced reads what the client sent by then, however late the loop ran.
        False when ``timeout`` seconds pass first, or the peer is not serving."""
        end = time.monotonic() + timeout
        for _ in range(SYNC_ROUNDS):
            if self._thread is None or not self._thread.is_alive():
                return False
            with self._cond:
                begun = self.rounds
            self._wake()
            if not self.wait_for(lambda b=begun: self.rounds > b, max(0.0, end - time.monotonic())):  # type: ignore[misc]
                return False
        return True

    def start(self) -> SimulatedPeer:
        """Listen (TCP, and UDP for Ping Requests unless ``ping_port`` is None), open the outputs,
        then serve on the loop's thread; a :class:`PeerError` names what could not be set up, and
        nothing set up before it is left open."""
        if self._thread is not None:
            raise PeerError("the peer is already started")
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        listener = self._listen(family)
        try:
            self._open_sinks()
            if self.ping_port is not None:
                self._listen_for_pings(family)
        except PeerError:
            listener.close()
            self._close_sinks()
            raise
        self._serve(listener)
        return self

    def _listen(self, family: socket.AddressFamily) -> socket.socket:
        """The listening TCP socket of [MS-MQQB] 2.1.1 (connections beyond the backlog wait in the
        kernel until the loop accepts them)."""
        try:
            return tcp_listener(family, (self.host, self.port), self.max_connections)
        except OSError as e:
            raise PeerError(f"cannot listen on {self.host}:{self.port}: {e.strerror or e}") from e

    def _open_sinks(self) -> None:
        """The outputs: the pcap ``record`` and the JSON-lines ``report`` (the history's sinks)."""
        sink, path = "", None
        try:
            if self.record_path is not None:
                sink, path = "record", self.record_path
                self._recorder = PcapRecorder(self.record_path, on_failure=self._record_failed)
            if self.report_path is not None:
                sink, path = "report", self.report_path
                self._report = JsonLines(self.report_path, self._sink_failed)
        except OSError as e:
            where = e.filename if e.filename is not None else path
            raise PeerError(f"cannot write the {sink} {where}: {e.strerror or e}") from e

    def _listen_for_pings(self, family: socket.AddressFamily) -> None:
        """The UDP socket the Ping responder answers on ([MS-MQQB] 2.1.2, :mod:`harness.peers.ping`)."""
        pinger = socket.socket(family, socket.SOCK_DGRAM)
        try:
            pinger.bind((self.host, self.ping_port))
        except OSError as e:
            pinger.close()
            where = f"UDP {self.host}:{self.ping_port}"
            raise PeerError(f"cannot listen for pings on {where}: {e.strerror or e}") from e
        pinger.setblocking(False)
        self._ping_sock = pinger
        self._ping_address = pinger.getsockname()[:2]

    def _serve(self, listener: socket.socket) -> None:
        """Hand the sockets to the loop (:mod:`harness.peers.reactor`) and start its thread."""
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
