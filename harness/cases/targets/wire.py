"""Wire targets: running [MS-MQQB] wire cases over real loopback TCP, and the ``mqqb://`` target.

A wire case (harness.cases.wire, docs/cases.md "Wire cases") checks one side of an [MS-MQQB]
2.1.1 protocol session:

- ``under_test: initiator``: the embedded reference sends.  The [MS-MQDMPR] model
  (``harness.model.QueueManager``) raises Message Position Available;
  ``harness.session.OutgoingQueueProcessing`` ([MS-MQQB] 3.1.7.12, 3.1.7.11, 3.1.7.16) hands the
  message to the ``harness.session.Initiator`` of its OutgoingQueue, which establishes the
  session (3.1.5.2-3.1.5.4) and sends (3.1.7.1) over a real TCP connection to the peer: a
  simulated peer (``harness.peers.SimulatedPeer``) started for the case on port 0 with the case's
  behaviour, or the live acceptor ``mqqb://host:port`` names.
- ``under_test: acceptor``: the case is the initiator, on a plain socket: it sends the packets
  the case crafts and checks each reply of the acceptor (3.1.5.3.1, 3.1.5.4.1, 3.1.5.5, 3.1.5.8)
  field by field.  The acceptor is the simulated peer (target ``reference``) or the live one.

A case that needs a fault behaviour of the simulated peer, or what only the simulated peer
records, is ``not_applicable`` against a live target; a wire case against a target that only
has the [MS-MQDMPR] model (``plugin:``, ``cmd:``) is ``not_applicable`` too, as is a model case
against ``mqqb://``.

Time.  Every wait of a wire step is bounded by the [MS-MQQB] 3.1.2 timers it names
(``within: SessionAckSend``; harness.cases.wire.TIMERS), computed by ``_WireRun.bound`` from the
timer durations the harness uses (:class:`harness.session.SessionConfig`), the spec's fixed ones
(OrderAckTimeout 500 ms, 3.1.3.2; the Ping Response Timer's second, 3.1.2.9) and the values the
harness itself sent in its ConnectionParameters (AckTimeout, RecoverableAckTimeout, 2.2.2.1), each
multiplied by the time scale of the side that runs the timer; ``within`` adds a margin of 25 % and
half a real second (a twentieth when the step expects that nothing happens: it always waits its
bound out), ``before`` (nothing may happen before the timers run out) takes 25 % off.  The
reference Initiators run over ``harness.peers.InitiatorLink`` on a clock scaled by
``given.peer.timers`` (default 0.05 against the simulated peer: the 3.1.2 timers run a twentieth
of their durations; 1 against a live target, or the target's ``?scale=``).  The simulated peer's
own timers (:class:`harness.peers.SimulatedPeer` ``time_scale``) run at the same scale or faster.

Target options: ``reference?peer=BEHAVIOUR`` runs every case whose simulated peer would behave
``normal`` against BEHAVIOUR instead (e.g. a boundary-conformant one), ``reference?scale=S`` sets
the time scale of the simulated sessions; ``mqqb://host:port?scale=S`` says the live acceptor runs
its timers S times their durations (default 1).
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import packets
from harness.cases.grading import case_outcome, graded, unwrap
from harness.cases.model import Case, Step
from harness.cases.target import TargetError, TargetInfo
from harness.cases.wire import (
    TIMERS,
    behaviours_of,
    brief,
    field_span,
    field_value,
    hexdump,
    needs_simulated_peer,
    normalise,
    parse_bound,
    wire_matches,
)
from harness.report.results import CaseResult, Outcome, StepFailure
from packets import GUID, NULL_GUID, PacketKind, StreamSplitter
from packets import session as sp

if TYPE_CHECKING:
    from harness.cases.targets.reference import ReferenceTarget

__all__ = [
    "LiveWireTarget",
    "WireOptions",
    "parse_mqqb_address",
    "reference_target",
    "run_wire_case",
    "wire_applicability",
]

DEFAULT_TIMER_SCALE = 0.05
DEFAULT_WINDOW = 2
CONNECT_TIMEOUT = 2.0
WITHIN_FACTOR = 1.25  # `within`: the timers' durations plus a quarter ...
WITHIN_SLACK = 0.5  # ... plus this many real seconds (scheduling, loopback, a busy machine) ...
QUIET_SLACK = 0.05  # ... or this many when the step expects that nothing happens (the wait always runs out)
BEFORE_FACTOR = 0.75  # `before`: a quarter less than the timers' durations
# What the case's own client sends in a ConnectionParameters request unless a step overrides it
# ([MS-MQQB] 2.2.2.1): RecoverableAckTimeout 10 s, AckTimeout 20 s (the smallest valid), WindowSize 64.
CLIENT_RECOVERABLE_ACK_TIMEOUT = 0x2710
CLIENT_ACK_TIMEOUT = 0x4E20
CLIENT_WINDOW = 64
MAX_RECOVERABLE_ACK_TIMEOUT = 0x1D4C0  # 2.2.2.1: the largest valid RecoverableAckTimeout (ms)
ORDER_ACK_TIMEOUT = 0.5  # OrderAckTimeout, 3.1.3.2: "MUST be set to a value of 500 milliseconds"
MAXIMUM_ORDER_ACK_DELAY = 10.0  # MaximumOrderAckDelay, 3.1.3.2: "SHOULD be set to 10 seconds"
TIME_TO_REACH_QUEUE = 0x54600  # seconds (4 days): what the model gives a message ([MS-MQDMPR] 3.1.1.12)


@dataclass(frozen=True)
class WireOptions:
    """How wire cases run on the reference target (``reference?peer=...&scale=...``) or a live
    one (``mqqb://...?scale=...``): the behaviour that replaces ``normal`` for the simulated peer,
    the time scale of the sessions (None: 0.05 simulated, 1 live), and the sender whose
    [MS-MQQB] 3.1.7.12 processing the initiator cases judge (None: the reference
    harness.session.OutgoingQueueProcessing; a subclass through ``plugin:pkg.mod:Class``)."""

    peer: str | None = None
    scale: float | None = None
    sender: type | None = None


def _parse_scale(spec: str, value: str) -> float:
    try:
        scale = float(value)
    except ValueError:
        scale = 0.0
    if not 0 < scale <= 1:
        raise ValueError(f"{spec!r}: scale=S takes a time scale in (0, 1]")
    return scale


class WireCaseError(Exception):
    """A wire case could not be carried out (not a conformance failure: the case errs)."""


# ===================================================================================== targets
def parse_mqqb_address(spec: str) -> tuple[str, int]:
    """``mqqb://host:port`` (host may be ``[::1]``; a ``?ping=PORT`` query is ignored) -> (host, port)."""
    rest = spec.removeprefix("mqqb://").partition("?")[0].rstrip("/")
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"{spec!r}: expected mqqb://host:port")
    return host.strip("[]"), int(port)


def _query(spec: str, known: tuple[str, ...]) -> dict[str, str]:
    query = spec.partition("?")[2]
    out: dict[str, str] = {}
    for item in query.split("&") if query else []:
        key, _, value = item.partition("=")
        if key not in known:
            raise ValueError(f"{spec!r}: unknown query {key!r} (expected {' or '.join(k + '=...' for k in known)})")
        out[key] = value
    return out


LIVE_QUERY = ("ping", "scale", "queue", "tx-queue")  # the queries of mqqb://host:port?...


def parse_ping_port(spec: str) -> int | None:
    """The UDP port of ``mqqb://host:port?ping=PORT`` (where the acceptor listens for Ping
    Requests, [MS-MQQB] 2.1.2; 3527 for MSMQ), None without the query."""
    value = _query(spec, LIVE_QUERY).get("ping")
    if value is None:
        return None
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise ValueError(f"{spec!r}: ping=PORT takes a UDP port number")
    return int(value)


def parse_live_queue(spec: str, key: str) -> int | None:
    """``mqqb://host:port?queue=ID`` / ``?tx-queue=ID``: the PrivateQueueIdentifier ([MS-MQMQ]
    2.2.18.1.5.1) of a private queue of the live acceptor that the case's UserMessages address,
    ``tx-queue`` one that is transactional; None without the query."""
    value = _query(spec, LIVE_QUERY).get(key)
    if value is None:
        return None
    if not value.isdigit() or not 0 < int(value) <= 0xFFFFFFFF:
        raise ValueError(f"{spec!r}: {key}=ID takes a private queue identifier (1 to 0xFFFFFFFF)")
    return int(value)


def parse_live_scale(spec: str) -> float:
    """``mqqb://host:port?scale=S``: the live acceptor runs its [MS-MQQB] 3.1.2 timers S times
    their durations (e.g. the project's own peer on a scaled clock); 1 without the query."""
    value = _query(spec, LIVE_QUERY).get("scale")
    return 1.0 if value is None else _parse_scale(spec, value)


def reference_target(spec: str) -> ReferenceTarget:
    """``reference`` or ``reference?peer=BEHAVIOUR&scale=S``: the embedded reference target,
    with wire options (:class:`WireOptions`): every case whose simulated peer would behave
    ``normal`` runs against BEHAVIOUR ([MS-MQQB] peer behaviours, harness.session.named_behaviour),
    and the simulated sessions run their timers S times their durations (default 0.05)."""
    from harness.cases.targets.reference import ReferenceTarget

    query = _query(spec, ("peer", "scale"))
    peer = query.get("peer")
    if peer is not None:
        from harness.session import named_behaviour

        try:
            named_behaviour(peer)
        except KeyError as e:
            raise ValueError(f"{spec!r}: {e.args[0]}") from None
    scale = _parse_scale(spec, query["scale"]) if "scale" in query else None
    target = ReferenceTarget()
    if peer is not None or scale is not None:
        target.wire_options = WireOptions(peer, scale)  # type: ignore[attr-defined]
        target.name = spec
    return target


class LiveWireTarget:
    """``--target mqqb://host:port[?ping=PORT][&scale=S][&queue=ID][&tx-queue=ID]``: a live
    [MS-MQQB] acceptor, for wire cases only; ``ping=PORT`` names the UDP port it answers Ping
    Requests on ([MS-MQQB] 2.1.2), ``scale=S`` the time scale of its 3.1.2 timers (1, real
    durations, by default), ``queue=ID`` the private queue the case's express and recoverable
    UserMessages address (1 by default) and ``tx-queue=ID`` a transactional private queue for its
    transactional ones (without it, a case that sends one is not applicable: a message to a queue
    that does not exist or is not transactional is answered by a negative acknowledgment, not an
    OrderAck, [MS-MQQB] 3.1.5.8.5, 3.1.5.8.6)."""

    wire_only = True
    handles_timeout = True

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.wire_address = parse_mqqb_address(spec)
        port = parse_ping_port(spec)
        self.ping_address = (self.wire_address[0], port) if port is not None else None
        self.wire_options = WireOptions(scale=parse_live_scale(spec))
        self.queue_id = parse_live_queue(spec, "queue") or 1
        self.tx_queue_id = parse_live_queue(spec, "tx-queue")

    def hello(self) -> TargetInfo:
        """The target's hello: one TCP connection to the acceptor, opened and closed, so that an
        address where nothing listens is a configuration error before any case, not a failure."""
        import socket

        try:
            socket.create_connection(self.wire_address, timeout=5.0).close()
        except OSError as e:
            host, port = self.wire_address
            raise TargetError("Error", f"nothing accepts TCP connections at {host}:{port}: {e.strerror or e}") from None
        return TargetInfo(name=self.spec, events=[], capabilities=["wire"])

    def setup(self, given: dict[str, Any]) -> None:
        raise TargetError("Unsupported", f"{self.spec} is an [MS-MQQB] endpoint: it runs wire cases only")

    def event(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        raise TargetError("Unsupported", f"{self.spec} is an [MS-MQQB] endpoint: it runs wire cases only")

    def observe(self, queues: list[str], cursors: list[str]) -> dict[str, Any]:
        raise TargetError("Unsupported", f"{self.spec} is an [MS-MQQB] endpoint: it runs wire cases only")

    def close(self) -> None:
        pass


def wire_applicability(case: Case, target: Any) -> tuple[str, tuple[str, int] | None]:
    """("", address or None for the simulated peer) when the case runs on ``target``;
    (why not, None) when it is not applicable."""
    from harness.cases.targets.reference import ReferenceTarget

    live = getattr(target, "wire_address", None)
    if live is not None:
        why = needs_simulated_peer(case.given, case.then)
        if not why and getattr(target, "ping_address", None) is None and any(s.action == "ping" for s in case.when):
            # [MS-MQQB] 2.1.2: an acceptor MAY listen for Ping Requests, on a port of its own
            why = "pings the acceptor, and the target names no UDP ping port (mqqb://host:port?ping=PORT)"
            return why, None
        transactional = any(
            s.action == "send" and s.args.get("packet") == "UserMessage" and s.args.get("delivery") == "transactional"
            for s in case.when
        )
        if not why and transactional and getattr(target, "tx_queue_id", None) is None:
            why = (
                "sends a transactional UserMessage, and the target names no transactional private queue "
                "(mqqb://host:port?tx-queue=ID)"
            )
            return why, None
        return (f"{why}; the target is a live peer" if why else ""), tuple(live)
    inner = getattr(target, "inner", target)  # a plugin runs behind the reference target
    if isinstance(inner, ReferenceTarget):
        from harness.model import QueueManager

        if inner.queue_manager_class is not QueueManager:
            return "wire cases run the reference queue manager; this plugin replaces the model only", None
        return "", None
    return "a wire case needs an [MS-MQQB] target (reference or mqqb://host:port); this one has the model only", None


# ====================================================================== the simulated peer
def _simulated_peer(behaviours: list[str], scale: float) -> Any:
    """A simulated acceptor (harness.peers.SimulatedPeer) on 127.0.0.1 port 0, its timers run
    ``scale`` times their durations."""
    from harness.peers import SimulatedPeer

    peer = SimulatedPeer("127.0.0.1", 0, behaviour=behaviours[-1], read_timeout=5.0, time_scale=scale)
    if len(behaviours) > 1:  # one per connection, the last one for every later connection
        peer.queue_behaviours(behaviours[:-1])
    peer.__enter__()
    return peer


def _close_peer(peer: Any) -> None:
    exit_ = getattr(peer, "__exit__", None)
    if exit_ is not None:
        exit_(None, None, None)
    else:
        peer.close()


# ====================================================================== the reference sender
def _unresolvable(queue: Any) -> str:
    """The machine of ``queue``'s direct format name when it lies under the reserved ``.invalid``
    top-level domain (RFC 6761: never resolves), else "": every other destination resolves to the peer."""
    kind, _, rest = (getattr(queue, "DestinationFormatName", "") or "").partition("=")
    machine = rest.split(":", 1)[-1].split("\\", 1)[0] if kind.strip().upper() == "DIRECT" else ""
    return machine if machine.lower().rstrip(".").endswith(".invalid") else ""


class _SenderLink:
    """The reference Initiators over real TCP: one ``harness.peers.InitiatorLink`` per Initiator,
    driven in the caller's thread on one clock, the monotonic clock divided by ``scale`` (so that
    the 3.1.2 timers run ``scale`` times their durations); what crossed the wire, per connection."""

    def __init__(self, address: tuple[str, int], scale: float, ping_address: tuple[str, int] | None = None) -> None:
        self.address = address
        self.ping_address = ping_address  # None: UDP port 3527 of the acceptor's host ([MS-MQQB] 2.1.2)
        self.scale = scale
        self.t0 = time.monotonic()
        self.links: dict[int, Any] = {}

    def clock(self) -> float:
        return (time.monotonic() - self.t0) / self.scale

    def _link(self, init: Any) -> Any:
        from harness.peers import InitiatorLink

        link = self.links.get(id(init))
        if link is None:
            link = InitiatorLink(
                init,
                self.address,
                timeout=CONNECT_TIMEOUT / self.scale,
                clock=self.clock,
                ping_address=self.ping_address,
            )
            self.links[id(init)] = link
        return link

    def perform(self, init: Any, actions: list[Any]) -> None:
        """Carry out an Initiator's actions; a connection it asked for is made at once."""
        link = self._link(init)
        link.perform(actions)
        link.step(0.0)

    def run_until(self, initiators: list[Any], predicate: Callable[[], bool], timeout: float) -> bool:
        """Move bytes and fire timers until ``predicate()`` or ``timeout`` real seconds."""
        links = [self._link(i) for i in initiators]
        end = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() >= end:
                return bool(predicate())
            if not links:
                time.sleep(0.01)
            for link in links:
                link.step(0.01 / len(links))
        return True

    @property
    def connections(self) -> list[list[tuple[str, bytes]]]:
        """Per TCP connection, in order: (direction, packet); a connection starts with the
        initiator's EstablishConnection request."""
        out: list[list[tuple[str, bytes]]] = []
        for link in self.links.values():
            for direction, data, _ in list(link.packets):
                if (direction == "c2s" and _kind_of(data) == "EstablishConnection") or not out:
                    out.append([])
                out[-1].append((direction, data))
        return out

    @property
    def opened(self) -> int:
        return sum(link.connections for link in self.links.values())

    @property
    def closed(self) -> int:
        """Connections that ended (closed by either end)."""
        return sum(link.connections - int(link.connected) for link in self.links.values())

    @property
    def acked(self) -> set[int]:
        return {m for link in self.links.values() for m in link.acked}

    def close(self) -> None:
        for link in self.links.values():
            with contextlib.suppress(Exception):
                link.close()


# ====================================================================== running a case
def _kind_of(data: bytes) -> str:
    try:
        return packets.parse(data, strict=False).kind.name
    except Exception:
        return "Unknown"


@dataclass
class _Failure:
    field: str
    expected: Any  # as shown: without its requirement annotation
    observed: Any
    evidence: str = ""
    raw: Any = None  # as written in the case (its requirement annotation grades the failure)


class _WireRun:
    """One wire case against one peer (simulated or live)."""

    def __init__(
        self, case: Case, live: tuple[str, int] | None, step_timeout: float, options: WireOptions | None = None
    ) -> None:
        from harness.session import SessionConfig

        self.case = case
        self.live = live
        self.step_timeout = step_timeout
        options = options or WireOptions()
        self.options = options
        peer_spec = case.given["peer"]
        self.side = peer_spec["under_test"]
        self.behaviours = [options.peer if b == "normal" and options.peer else b for b in behaviours_of(peer_spec)]
        # Time scales: the session's timers run `scale` times their durations.  A live acceptor
        # gets the spec's durations unless the target says otherwise; the reference initiator's
        # clock is the case's `timers` when it names one; the simulated peer runs no slower than
        # the initiator (a peer slower than the initiator's own timers would look late).
        default = options.scale if options.scale is not None else (DEFAULT_TIMER_SCALE if live is None else 1.0)
        self.scale = float(peer_spec.get("timers", default))  # the reference initiator's clock
        self.acceptor_scale = default if live is not None else min(default, self.scale)
        # the harness's own timers: the reference initiator's, or (acceptor side) the case's client
        self.initiator_scale = self.scale if self.side == "initiator" else self.acceptor_scale
        self.window = int(peer_spec.get("window", DEFAULT_WINDOW))
        self.config = SessionConfig(window_size=self.window)
        self.peer: Any = None
        self.silent: socket.socket | None = None
        self.address: tuple[str, int] = live if live is not None else ("", 0)
        self.ping_address: tuple[str, int] | None = None  # the simulated peer's UDP ping port
        # PrivateQueueIdentifier the case's UserMessages address: (express/recoverable, transactional)
        self.queue_ids: tuple[int, int] = (1, 1)
        # initiator side
        self.qm: Any = None
        self.link: _SenderLink | None = None
        self.oqp: Any = None  # harness.session.OutgoingQueueProcessing
        self.message_id: dict[str, int] = {}  # case message id -> UserHeader.MessageID
        self.queues: dict[str, Any] = {}
        self.messages: dict[str, Any] = {}  # case id -> Message
        # acceptor side
        self.client: socket.socket | None = None
        self.client_closed = False
        self.splitter = StreamSplitter()
        self.inbox: list[bytes] = []
        self.sent: dict[str, Any] = {}  # kind -> headers last sent
        self.received: dict[str, bytes] = {}  # kind -> packet last received
        self.client_guid = GUID(uuid.uuid4().bytes_le)
        self.server_guid = NULL_GUID
        self.message_ids = itertools.count(1)
        self.received_user_messages = 0  # UserMessage Packets (OrderAcks and FinalAcks too) from the acceptor
        self.user_messages_sent = 0
        self.tx_number = 0  # TxSequenceNumber of the last transactional message sent (TxSequenceID 1)
        self.recoverable_sent = False  # a recoverable (or transactional) UserMessage on this connection
        self.peer_acked = 0  # the highest AckSequenceNumber the acceptor sent on this connection
        self.client_log: list[tuple[float, bytes]] = []  # (time.time(), packet) the case's client sent
        self._last_packet: bytes | None = None  # the packet the current step's expectations read
        self._last_ping: bytes | None = None  # the Ping Response of the last ping step
        self._initiator_cp: tuple[int, int] | None = None  # (RecoverableAckTimeout, AckTimeout) it sent
        self.waited = ""  # how the last waiting step's bound was derived
        self.quiet = False  # the current step expects that nothing happens (satisfied/answered false, timed_out)

    # -- wait bounds ([MS-MQQB] 3.1.2) ------------------------------------------------------------
    def _connection_parameters(self) -> tuple[int | None, int, str]:
        """(RecoverableAckTimeout, AckTimeout) in ms of the ConnectionParameters request the
        harness sent (or will send) on the session, and where they come from."""
        if self.side == "acceptor":
            headers = self.sent.get("ConnectionParameters")
            if headers is None:
                return CLIENT_RECOVERABLE_ACK_TIMEOUT, CLIENT_ACK_TIMEOUT, "to be sent"
            cp = headers.ConnectionParametersHeader
            return int(cp.RecoverableAckTimeout), int(cp.AckTimeout), "sent"
        if self._initiator_cp is None and self.link is not None:
            for conn in self.link.connections:
                for direction, data in conn:
                    if direction == "c2s" and _kind_of(data) == "ConnectionParameters":
                        cp = packets.parse(data, strict=False).ConnectionParametersHeader
                        self._initiator_cp = (int(cp.RecoverableAckTimeout), int(cp.AckTimeout))
        if self._initiator_cp is not None:
            return (*self._initiator_cp, "sent")
        # not sent yet: AckWaitTimeout is the initiator's configuration; RecoverableAckSendTimeout
        # comes from the round trip of the EstablishConnection Packet (3.1.5.3.2), at most 0x1D4C0
        return None, self.config.ack_wait_timeout_ms, "to be sent"

    def _recoverable(self) -> bool:
        if self.side == "acceptor":
            return self.recoverable_sent
        from harness.model import DeliveryGuarantee

        return any(
            m.DeliveryGuarantee is DeliveryGuarantee.Recoverable or m.TransactionIdentifier is not None
            for m in self.messages.values()
        )

    def _transactional_count(self) -> int:
        if self.side == "acceptor":
            return self.tx_number
        return sum(m.TransactionIdentifier is not None for m in self.messages.values())

    def timer(self, name: str) -> tuple[float, str]:
        """The duration in seconds of an [MS-MQQB] 3.1.2 timer in this run (unscaled), and how it
        was derived."""
        c = self.config
        if name == "SessionInitialization":  # 3.1.2.1: implementation-dependent <43>
            return c.session_initialization, f"the harness's {c.session_initialization:g} s"
        if name == "SessionRetryConnect":  # 3.1.2.3: implementation-dependent <45>
            return c.session_retry_connect, f"the harness's {c.session_retry_connect:g} s"
        recoverable, ack, how = self._connection_parameters()
        if name == "SessionAckWait":  # 3.1.2.4: a multiple of AckWaitTimeout
            return c.ack_wait_multiple * ack / 1000, f"{c.ack_wait_multiple} x AckTimeout {ack} ms {how}"
        if name == "SessionAckSend":  # 3.1.5.8.2: AckWaitTimeout / 2; 3.1.5.8.7: RecoverableAckSendTimeout
            seconds, text = ack / 2000, f"AckTimeout {ack} ms {how} / 2"
            if self._recoverable():
                rec, rec_how = (
                    (recoverable, how) if recoverable is not None else (MAX_RECOVERABLE_ACK_TIMEOUT, "at most")
                )
                if rec / 1000 > seconds:
                    seconds, text = rec / 1000, f"RecoverableAckTimeout {rec} ms {rec_how} (recoverable messages)"
            return seconds, text
        if name == "TransactionalAckWait":  # 3.1.2.6: TxOutgoingSequence.ResendInterval
            return c.resend_intervals[0], "the first ResendTimerTable entry"
        if name == "OrderAckSend":  # 3.1.2.7 / 3.1.5.8.6
            if self._transactional_count() > 1:  # restarted by each later one within MaximumOrderAckDelay
                return ORDER_ACK_TIMEOUT + MAXIMUM_ORDER_ACK_DELAY, "OrderAckTimeout 500 ms + MaximumOrderAckDelay 10 s"
            return ORDER_ACK_TIMEOUT, "OrderAckTimeout 500 ms"
        if name == "PingResponse":  # 3.1.2.9: "always one second"
            return c.ping_response, "one second"
        raise WireCaseError(f"unknown timer {name!r}")

    def bound(self, args: Mapping[str, Any], default: str = "") -> tuple[float, str]:
        """The real seconds a waiting step waits (``within`` / ``before`` its timers, see the
        module docstring), and a sentence saying how they were derived."""
        key = "before" if "before" in args else "within"
        expr = str(args.get(key, default))
        total = 0.0
        parts = []
        for factor, name in parse_bound(expr):
            seconds, how = self.timer(name)
            section, side = TIMERS[name]
            scale = self.initiator_scale if side == "initiator" else self.acceptor_scale
            total += factor * seconds * scale
            times = "" if factor == 1 else f"{factor:g} x "
            parts.append(f"{times}{name} ({section}, {how}: {seconds:g} s) x scale {scale:g}")
        if key == "within":
            slack = QUIET_SLACK if self.quiet else WITHIN_SLACK
            real, margin = total * WITHIN_FACTOR + slack, f"+{WITHIN_FACTOR - 1:.0%} +{slack:g} s"
        else:
            real, margin = total * BEFORE_FACTOR, f"-{1 - BEFORE_FACTOR:.0%}"
        return real, f"{key} {expr}: {' + '.join(parts)} = {total:.3g} s, {margin} = {real:.3g} s"

    def sent_packets(self) -> list[tuple[float, bytes]]:
        """Every packet the harness sent on the session, with the wall-clock time it was written."""
        out = list(self.client_log)
        if self.link is not None:
            for link in self.link.links.values():
                out.extend((ts, data) for direction, data, ts in list(link.packets) if direction == "c2s")
        return out

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        if self.live is None:
            self.peer = _simulated_peer(self.behaviours, self.acceptor_scale)
            host, port = self.peer.address[:2]
            self.address = (str(host), int(port))
            self.ping_address = self.peer.ping_address
            peer_spec = self.case.given["peer"]
            if peer_spec.get("listening") is False or peer_spec.get("silent"):
                _close_peer(self.peer)  # its port now refuses connections
                self.peer = None
            if peer_spec.get("silent"):  # connections are accepted (by the backlog) and never answered
                self.silent = socket.create_server(("127.0.0.1", 0))
                host, port = self.silent.getsockname()[:2]
                self.address = (str(host), int(port))
        if self.side == "initiator":
            from harness.model import QueueManager

            self.link = _SenderLink(self.address, self.scale, self.ping_address)
            self.qm = QueueManager(clock=self.link.clock, id_generator=uuid.uuid4)
            from harness.session import OutgoingQueueProcessing

            host, port = self.address
            sender = self.options.sender or OutgoingQueueProcessing
            self.oqp = sender(
                self.qm,
                address_of=lambda queue: f"{_unresolvable(queue) or host}:{port}",
                config=self.config,
                clock=self.link.clock,
                ping=bool(self.case.given["peer"].get("ping", False)),
                wall_clock=time.time,  # UserHeader.SentTime: seconds since 1970 ([MS-MQMQ] 2.2.19.2)
            )

    def close(self) -> None:
        if self.link is not None:
            self.link.close()
        if self.client is not None:
            with contextlib.suppress(OSError):
                self.client.close()
        if self.peer is not None:
            _close_peer(self.peer)
        if self.silent is not None:
            self.silent.close()

    def _flush(self) -> None:
        """Perform what the sending side asked for, in order."""
        assert self.oqp is not None and self.link is not None
        for init, action in self.oqp.take():
            self.link.perform(init, [action])

    def _initiators(self) -> list[Any]:
        return list(self.oqp.initiators.values()) if self.oqp is not None else []

    # -- actions: initiator side ----------------------------------------------------------------
    def create_outgoing_queue(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from harness.model import OutgoingQueue, OutgoingQueueState

        host = self.address[0]
        q = self.qm.new_queue(OutgoingQueue)
        q.Identifier = uuid.uuid4()
        q.DestinationFormatName = args.get("DestinationFormatName", f"DIRECT=TCP:{host}\\private$\\{args['name']}")
        q.Label = q.DestinationFormatName
        q.Multicast = bool(args.get("Multicast", False))
        q.Transactional = bool(args.get("Transactional", False))
        q.State = OutgoingQueueState[args.get("State", "Inactive")]
        self.qm.QueueCollection.append(q)
        self.queues[args["name"]] = q
        return {"State": q.State.name}

    def create_local_queue(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from harness.model import Queue

        q = self.qm.new_queue(Queue)
        q.Transactional = bool(args.get("Transactional", False))
        self.qm.QueueCollection.append(q)
        self.queues[args["name"]] = q
        return {}

    def enqueue(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from harness.model import DeliveryGuarantee, Message

        spec = args["message"]
        delivery = spec.get("delivery", "express")
        body = spec.get("Body", spec["id"])
        message = Message(
            body.encode() if isinstance(body, str) else bytes(body),
            Priority=int(spec.get("Priority", 3)),
            DeliveryGuarantee=DeliveryGuarantee.Express if delivery == "express" else DeliveryGuarantee.Recoverable,
            Label=str(spec.get("Label", spec["id"])),
        )
        queue = self.queues[args["queue"]]
        message.DestinationQueueFormatName = getattr(queue, "DestinationFormatName", "")
        self.messages[spec["id"]] = message
        assert self.oqp is not None
        before = len(self.oqp.pending)
        if delivery == "transactional":  # enqueued under a transaction that is then committed
            tx = f"tx-{spec['id']}"
            self.qm.create_transaction(tx)
            message.TransactionIdentifier = tx
            status = self.qm.enqueue_message(queue, message, self.qm.TransactionCollection[tx])
            self.qm.transaction_commit(tx)
        else:
            status = self.qm.enqueue_message(queue, message)
        from harness.session import Connect, SendPing

        new = [action for _, action in self.oqp.pending[before:]]
        result: dict[str, Any] = {
            "rStatus": normalise(status),
            "connection_requested": any(isinstance(a, Connect | SendPing) for a in new),
        }
        pos = self._position(spec["id"])
        if pos is not None:
            self.message_id[spec["id"]] = pos.message_id
            result["OutgoingMessagePosition"] = _position_state(pos)
        self._flush()
        if hasattr(queue, "ConnectionHistory"):  # after the actions ran (3.1.5.2.3)
            result["State"] = queue.State.name
            result["ConnectionHistory"] = [e.Status.name for e in queue.ConnectionHistory]
        return result

    def _position(self, message_id: str) -> Any:
        """The OutgoingMessagePosition of a case's message, if one was built."""
        message = self.messages.get(message_id)
        for init in self._initiators():
            for pos in init.OutgoingMessageTable.values():
                mp = pos.MessagePosition
                if mp is not None and mp.MessageReference is message:
                    return pos
        return None

    def pause_queue(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """[MS-MQDMPR] 3.1.4.14 Pause Queue on an OutgoingQueue."""
        queue = self.queues[args["queue"]]
        self.qm.pause_queue(queue)
        return {"State": queue.State.name}

    def wait_for(self, args: Mapping[str, Any]) -> dict[str, Any]:
        if self.side == "acceptor":
            seconds, self.waited = self.bound(args)
            return {"satisfied": self._client_wait_closed(seconds)}
        assert self.link is not None and self.oqp is not None
        self._flush()
        link = self.link
        if "packet" in args:
            kind, direction, count = args["packet"], args.get("direction", "c2s"), int(args.get("count", 1))

            def pred() -> bool:
                return len(self._packets(kind, direction)) >= count
        elif "acked" in args:
            wanted = list(args["acked"])

            def pred() -> bool:
                ids = [self.message_id.get(m) for m in wanted]
                return all(i is not None and i in link.acked for i in ids)
        elif "connection_history" in args:
            n = int(args["connection_history"])

            def pred() -> bool:
                return sum(len(getattr(q, "ConnectionHistory", [])) for q in self.queues.values()) >= n
        elif "connections" in args:
            n = int(args["connections"])

            def pred() -> bool:
                return link.opened >= n
        else:
            n = int(args["closed"])

            def pred() -> bool:
                return link.closed >= n

        ok = self._run_within(pred, args)
        out: dict[str, Any] = {"satisfied": ok}
        if "packet" in args:
            found = self._packets(args["packet"], args.get("direction", "c2s"))
            if found:
                self._last_packet = found[min(int(args.get("count", 1)), len(found)) - 1]
        return out

    def _run_within(self, pred: Callable[[], bool], args: Mapping[str, Any]) -> bool:
        """Drive the reference Initiators until ``pred()`` or the step's bound, recomputed as the
        session learns the values it depends on (the ConnectionParameters sent)."""
        assert self.link is not None
        start = time.monotonic()
        while True:
            seconds, self.waited = self.bound(args)
            if pred():
                return True
            left = start + seconds - time.monotonic()
            if left <= 0:
                return bool(pred())
            if self.link.run_until(self._initiators(), pred, min(left, 0.1)):
                return True

    def _packets(self, kind: str, direction: str) -> list[bytes]:
        assert self.link is not None
        return [d for conn in self.link.connections for (dr, d) in conn if dr == direction and _kind_of(d) == kind]

    # -- actions: acceptor side -------------------------------------------------------------------
    def _connect(self) -> socket.socket:
        if self.client is None:
            try:
                self.client = socket.create_connection(self.address, timeout=CONNECT_TIMEOUT)
            except OSError as e:
                raise WireCaseError(
                    f"cannot connect to the acceptor at {self.address[0]}:{self.address[1]}: {e}"
                ) from e
        return self.client

    def send(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from harness.session import DeliveryClass, user_message

        if args.get("new_connection") and self.client is not None:
            with contextlib.suppress(OSError):
                self.client.close()
            self.client, self.client_closed, self.inbox = None, False, []
            self.splitter = StreamSplitter()
            self.user_messages_sent = self.received_user_messages = self.tx_number = 0  # a new session
            self.recoverable_sent = False
            self.peer_acked = 0
        sock = self._connect()
        kind = args["packet"]
        for _ in range(int(args.get("count", 1))):
            if kind == "UserMessage" and not self._window_room(self._client_window(), args):
                return {"sent": False}  # the acceptor acknowledged nothing within SessionAckSend
            if kind == "raw":
                data = bytes.fromhex(str(args["hex"]).replace(" ", ""))
            else:
                if kind == "EstablishConnection":
                    headers = sp.establish_connection(
                        self.client_guid, NULL_GUID, int(time.monotonic() * 1000) & 0xFFFFFFFF
                    )
                elif kind == "ConnectionParameters":
                    headers = sp.connection_parameters(
                        CLIENT_RECOVERABLE_ACK_TIMEOUT, CLIENT_ACK_TIMEOUT, CLIENT_WINDOW
                    )
                elif kind == "SessionAck":
                    headers = sp.session_ack(
                        ack_sequence_number=self.received_user_messages % 0x10000,
                        user_msg_sequence_number=self.user_messages_sent % 0x10000,
                    )
                else:
                    delivery = DeliveryClass(args.get("delivery", "express"))
                    body = args.get("body", "wire case")
                    # [MS-MQMQ] 2.2.19.2: SentTime is the time the packet is sent, in seconds since
                    # 1970; TimeToReachQueue (2.2.19.1) counts from it: the message is not expired
                    headers = user_message(
                        self.client_guid,
                        self.server_guid,
                        body.encode() if isinstance(body, str) else bytes(body),
                        label="wire case",
                        queue_id=self.queue_ids[delivery is DeliveryClass.transactional],
                        message_id=next(self.message_ids),
                        sent_time=int(time.time()) & 0xFFFFFFFF,
                        delivery=delivery,
                    )
                    headers.BaseHeader.TimeToReachQueue = TIME_TO_REACH_QUEUE
                    if delivery is not DeliveryClass.express:
                        self.recoverable_sent = True
                    if delivery is DeliveryClass.transactional:
                        th = headers.TransactionHeader
                        th.TxSequenceID = {"Ordinal": 1, "TimeStamp": 0x10}
                        self.tx_number += 1
                        th.TxSequenceNumber = self.tx_number
                        th.PreviousTxSequenceNumber = self.tx_number - 1
                for path, value in (args.get("fields") or {}).items():
                    if isinstance(value, Mapping) and set(value) == {"received"}:
                        value = self.received_value(str(value["received"]))
                    _set_field(headers, path, value)
                data = packets.build(headers)
                self.sent[kind] = headers
                if kind == "UserMessage":
                    self.user_messages_sent += 1
            try:
                self.client_log.append((time.time(), data))
                sock.sendall(data)
            except OSError:
                self.client_closed = True
                return {"sent": False}
        return {"sent": True}

    def _client_window(self) -> int:
        """The case's client's WindowSize: the one it sent in its ConnectionParameters request."""
        headers = self.sent.get("ConnectionParameters")
        window = int(headers.ConnectionParametersHeader.WindowSize) if headers is not None else CLIENT_WINDOW
        return max(1, window)

    def _read_packet(self, timeout: float) -> tuple[bytes | None, bool]:
        """The next whole packet from the acceptor: (packet, closed)."""
        end = time.monotonic() + timeout
        while not self.inbox:
            if self.client_closed:
                return None, True
            if not self._fill(end - time.monotonic()):
                return None, self.client_closed
        return self.inbox.pop(0), False

    def _fill(self, timeout: float) -> bool:
        """Read what the acceptor sent into the inbox (at most ``timeout`` seconds); False when
        nothing came (the time ran out or the connection closed)."""
        if self.client_closed or timeout <= 0:
            return False
        sock = self._connect()
        sock.settimeout(timeout)
        try:
            data = sock.recv(65536)
        except TimeoutError:
            return False
        except OSError:
            data = b""
        if not data:
            self.client_closed = True
            return False
        try:
            chunks = [c.data for c in self.splitter.feed(data)]
        except packets.PacketError:
            chunks = [data]
        for chunk in chunks:
            self._note_ack(chunk)
        self.inbox.extend(chunks)
        return True

    def _note_ack(self, data: bytes) -> None:
        """The AckSequenceNumber of a SessionHeader the acceptor sent: how many of the case's
        UserMessages it acknowledged ([MS-MQQB] 3.1.5.5.1)."""
        with contextlib.suppress(Exception):
            sh = packets.parse(data, strict=False).headers.get("SessionHeader")
            if sh is not None:
                self.peer_acked = max(self.peer_acked, int(sh.AckSequenceNumber))

    def _window_room(self, window: int, args: Mapping[str, Any]) -> bool:
        """[MS-MQQB] 3.1.7.1: the case's client, a sender, sends a UserMessage only while fewer
        than its WindowSize (the one it sent in its ConnectionParameters request) are
        unacknowledged; it waits for the acceptor's acknowledgment within SessionAckSend."""
        if self.user_messages_sent - self.peer_acked < window:
            return True
        seconds, self.waited = self.bound({"within": "SessionAckSend"})
        end = time.monotonic() + seconds
        while self.user_messages_sent - self.peer_acked >= window:
            if not self._fill(end - time.monotonic()):
                return False
        return True

    def _client_wait_closed(self, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while not self.client_closed and time.monotonic() < end:
            data, closed = self._read_packet(end - time.monotonic())
            if data is None and not closed:
                break
        return self.client_closed

    def receive(self, args: Mapping[str, Any]) -> dict[str, Any]:
        timeout, self.waited = self.bound(args)
        skip = set(args.get("skip") or [])
        end = time.monotonic() + timeout
        while True:
            data, closed = self._read_packet(max(0.0, end - time.monotonic()))
            if data is None:
                self._last_packet = None
                return {"closed": closed, "timed_out": not closed}
            kind = _kind_of(data)
            if kind in skip:
                continue
            until = args.get("until")
            if until and not self._satisfies(data, until) and time.monotonic() < end:
                continue
            self._last_packet = data
            self.received[kind] = data
            if kind in ("UserMessage", "OrderAck", "FinalAck"):  # counted alike ([MS-MQQB] 3.1.1.4)
                self.received_user_messages += 1
            if kind == "EstablishConnection":
                with contextlib.suppress(Exception):
                    self.server_guid = GUID(packets.parse(data, strict=False).EstablishConnectionHeader.ServerGuid)
            return {"closed": False, "timed_out": False, "kind": kind}

    def ping(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """[MS-MQQB] 2.1.2: a Ping Request (2.2.7, fields as 3.1.7.6 sets them: QMGuid the case's
        client GUID, ``Cookie``, ``RC``; ``Signature`` to send a wrong one) from a UDP port of its
        own to the acceptor's ping port; the Ping Response is the packet the step's expectations
        read (``Ping.Cookie``, ``Ping.Flags.RF``, ...).  Returns ``answered``."""
        if self.ping_address is None:
            raise WireCaseError("the acceptor has no known ping port")
        timeout, self.waited = self.bound(args, "PingResponse")
        request = sp.ping(int(args.get("Cookie", 1)), self.client_guid, rc=bool(args.get("RC", 0)))
        if "Signature" in args:
            request.Signature = int(args["Signature"])
        data = packets.build_ping(request)
        self.sent["Ping"] = request
        host = self.ping_address[0]
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.sendto(data, self.ping_address)
            end = time.monotonic() + timeout
            while (left := end - time.monotonic()) > 0:
                udp.settimeout(left)
                try:
                    reply = udp.recv(2048)
                except TimeoutError:
                    break
                except OSError:  # e.g. ICMP port unreachable: no response
                    break
                self._last_ping = reply
                return {"answered": True}
        self._last_ping = None
        return {"answered": False}

    def received_value(self, path: str) -> Any:
        """A field of the last packet of its kind received from the acceptor (``Kind.Header.Field``)."""
        kind, _, rest = path.partition(".")
        data = self.received.get(kind)
        if data is None:
            raise WireCaseError(f"{path}: no {kind} packet was received")
        present, value = field_value(packets.parse(data, strict=False), rest)
        if not present:
            raise WireCaseError(f"{path}: the {kind} packet received has no such field")
        return value

    @staticmethod
    def _satisfies(data: bytes, until: Mapping[str, Any]) -> bool:
        packet = packets.parse(data, strict=False)
        for path, want in until.items():
            present, value = field_value(packet, path)
            if not wire_matches(want, value, present=present):
                return False
        return True

    # -- checks -------------------------------------------------------------------------------------
    def sent_value(self, path: str) -> Any:
        kind, _, rest = path.partition(".")
        headers = self.sent.get(kind)
        if headers is None:
            return None
        if kind == "Ping":  # a UDP Ping Packet (2.2.7): its one header is named Ping too
            return field_value(packets.parse_ping(packets.build_ping(headers), strict=False), path)[1]
        packet = packets.parse(packets.build(headers), strict=False)
        return field_value(packet, rest)[1]

    def check_step(
        self, action: str, args: Mapping[str, Any], expect: Mapping[str, Any] | None, result: dict[str, Any]
    ) -> list[_Failure]:
        failures: list[_Failure] = []
        expect = dict(expect or {})
        if action == "receive" and args.get("packet") and "kind" not in expect and "closed" not in expect:
            expect = {"kind": args["packet"], **expect}
        if action == "wait_for" and "satisfied" not in expect:
            expect = {"satisfied": True, **expect}
        if action == "receive" and not any(k in expect for k in ("closed", "timed_out")):
            expect = {"closed": False, "timed_out": False, **expect}
        if action == "ping" and "answered" not in expect:
            expect = {"answered": True, **expect}
        if action == "send" and "sent" not in expect:
            expect = {"sent": True, **expect}
        flat = _flatten(result)
        raw = self._last_packet if action in ("receive", "wait_for") else None
        packet = packets.parse(raw, strict=False) if raw else None
        if action == "ping" and self._last_ping is not None:
            raw, packet = self._last_ping, packets.parse_ping(self._last_ping, strict=False)
        for key, written in expect.items():
            if key in flat:
                present, observed = True, flat[key]
            elif packet is not None and key not in ("satisfied", "closed", "timed_out", "kind", "answered"):
                present, observed = field_value(packet, key)
            else:
                present, observed = False, None
            expected = self._resolve(unwrap(written))
            if not wire_matches(expected, observed, self.sent_value, present):
                evidence = ""
                if raw is not None and packet is not None and key not in flat:
                    evidence = hexdump(raw, field_span(raw, key, packet.kind.name))
                failures.append(_Failure(key, expected, observed if present else "<absent>", evidence, written))
        return failures

    def _resolve(self, expected: Any) -> Any:
        """``QueueManager.Identifier`` in an expectation: the reference sender's identifier."""
        if expected == "QueueManager.Identifier" and self.qm is not None:
            return normalise(GUID(self.qm.Identifier.bytes_le))
        if isinstance(expected, Mapping) and len(expected) == 1:
            ((k, v),) = expected.items()
            if k in ("not", "any_of"):
                return {k: [self._resolve(x) for x in v] if k == "any_of" else self._resolve(v)}
        return expected

    def observe_then(self) -> list[_Failure]:
        then = self.case.then or {}
        failures: list[_Failure] = []
        for qname, want in (then.get("outgoing") or {}).items():
            q = self.queues[qname]
            if "State" in want and q.State.name != want["State"]:
                failures.append(_Failure(f"outgoing.{qname}.State", want["State"], q.State.name))
            if "ConnectionHistory" in want:
                got = [e.Status.name for e in q.ConnectionHistory]
                if not wire_matches(want["ConnectionHistory"], got):
                    written = want["ConnectionHistory"]
                    failures.append(_Failure(f"outgoing.{qname}.ConnectionHistory", unwrap(written), got, raw=written))
            if "OutgoingMessagePositions" in want:
                names = {mid: n for n, mid in self.message_id.items()}
                table = list(q.OutgoingMessageTable.values())
                got_ids = [names.get(p.message_id, str(p.message_id)) for p in table]
                want_ids = [p["message"] for p in want["OutgoingMessagePositions"]]
                if got_ids != want_ids:
                    failures.append(_Failure(f"outgoing.{qname}.OutgoingMessagePositions", want_ids, got_ids))
                else:
                    for j, (w, p) in enumerate(zip(want["OutgoingMessagePositions"], table, strict=True)):
                        state = _position_state(p)
                        for k, v in w.items():
                            if k != "message" and state.get(k) != v:
                                failures.append(
                                    _Failure(f"outgoing.{qname}.OutgoingMessagePositions[{j}].{k}", v, state.get(k))
                                )
        tp = then.get("peer") or {}
        if tp:
            assert self.link is not None
            observed: dict[str, Any] = {"connections": self.link.opened}
            observed["max_in_flight"] = _max_in_flight(self.link.connections)
            observed["pings"] = sum(len(link.pings) for link in self.link.links.values())
            observed["ping_responses"] = sum(len(link.ping_responses) for link in self.link.links.values())
            kinds: dict[str, int] = {}
            for conn in self.link.connections:
                for d, data in conn:
                    if d == "c2s":
                        kinds[_kind_of(data)] = kinds.get(_kind_of(data), 0) + 1
            if self.peer is not None:
                conns = list(self.peer.connections)
                observed["delivered"] = [str(p.MessagePropertiesHeader.Label) for c in conns for p in c.delivered]
                observed["violations"] = [v.rule_id for c in conns for v in c.violations]
            for key in ("connections", "max_in_flight", "pings", "ping_responses", "delivered", "violations"):
                if key in tp and not wire_matches(tp[key], observed.get(key), present=key in observed):
                    got = observed.get(key, "<absent>")
                    failures.append(_Failure(f"peer.{key}", unwrap(tp[key]), got, raw=tp[key]))
            for kind, want_n in (tp.get("sent") or {}).items():
                if not wire_matches(want_n, kinds.get(kind, 0)):
                    failures.append(_Failure(f"peer.sent.{kind}", unwrap(want_n), kinds.get(kind, 0), raw=want_n))
        return failures


def _set_field(headers: Any, path: str, value: Any) -> None:
    """Set a header field (or flag sub-field) of headers to be built, by spec path."""
    from packets import BitFlags

    parts = path.split(".")
    if parts[0] not in headers and len(parts) > 1 and parts[1] in headers:
        parts = parts[1:]  # a leading packet kind
    obj = headers
    for i, part in enumerate(parts[:-1]):
        nxt = obj[part]
        if isinstance(nxt, BitFlags) and i == len(parts) - 2:
            obj[part] = type(nxt).make(int(nxt), **{parts[-1]: int(value)})
            return
        obj = nxt
    last = parts[-1]
    if isinstance(value, Mapping):  # a whole header, e.g. a piggy-backed SessionHeader
        from construct import Container

        obj[last] = Container({k: (GUID(v) if k.endswith("Guid") else v) for k, v in value.items()})
        return
    current = obj.get(last) if hasattr(obj, "get") else None
    if isinstance(current, GUID) or (isinstance(value, str) and last.endswith("Guid")):
        value = GUID(value)
    elif isinstance(value, str) and isinstance(current, bytes | bytearray):
        value = bytes.fromhex(value)
    obj[last] = value


def _position_state(pos: Any) -> dict[str, Any]:
    return {
        k: getattr(pos, k)
        for k in (
            "AwaitingAck",
            "ReceivedSessionAck",
            "ReceivedOrderAck",
            "Transmitted",
            "SequenceNumber",
            "RecoverableSequenceNumber",
            "TxSequenceNumber",
        )
    }


def _flatten(result: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in result.items():
        if isinstance(v, Mapping):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = normalise(v)
    return out


def _max_in_flight(connections: list[list[tuple[str, bytes]]]) -> int:
    """The most UserMessages the initiator had sent and not yet seen acknowledged (by the
    AckSequenceNumber of a SessionHeader it received) on one connection: the window in use."""
    best = 0
    for conn in connections:
        sent = acked = 0
        for direction, data in conn:
            try:
                p = packets.parse(data, strict=False)
            except Exception:
                continue
            if direction == "c2s" and p.kind is PacketKind.UserMessage:
                sent += 1
                best = max(best, sent - acked)
            elif direction == "s2c" and "SessionHeader" in p.headers and p.headers.SessionHeader is not None:
                acked = max(acked, int(p.headers.SessionHeader.AckSequenceNumber))
    return best


def _graded(case: Case, step: Step | None, index: int, where: str, f: _Failure, waited: str) -> StepFailure:
    """A wire difference as a StepFailure graded by the requirement it checks (harness.cases.grading)."""
    message = f"{where}: {f.field} expected {f.expected}, observed {brief(f.observed)}"
    if waited and f.field in ("satisfied", "closed", "timed_out", "kind", "answered", "sent"):
        message += f" (waited {waited})"
    failure = StepFailure(
        step=index,
        event=step.action if step is not None else "then",
        field=f.field,
        expected=f.expected,
        observed=brief(f.observed, 200),
        section=case.spec[0].section if case.spec else "",
        message=message,
        evidence=f.evidence,
    )
    return graded(case, step, failure, f.raw)


_NOTHING = {"satisfied": False, "timed_out": True, "answered": False}


def _expects_nothing(step: Step) -> bool:
    """The step checks that nothing happens within its bound (its wait always runs out)."""
    expect = step.expect or {}
    return any(k in expect and unwrap(expect[k]) is v for k, v in _NOTHING.items())


def _result(case: Case, outcome: Outcome, start: float, failures: list[StepFailure], detail: str) -> CaseResult:
    return CaseResult.of(case, outcome, time.perf_counter() - start, failures, detail)


def _options(target: Any) -> WireOptions:
    options = getattr(getattr(target, "inner", target), "wire_options", None)
    return options if isinstance(options, WireOptions) else WireOptions()


def run_wire_case(
    case: Case,
    target: Any,
    *,
    step_timeout: float = 10.0,
    on_sent: Callable[[float, bytes], None] | None = None,
) -> CaseResult:
    """Run one wire case against ``target``; never raises.  A step's differences are graded by
    the requirements they check and the case stops at the first step that has any (its outcome
    is the worst grade among them, as for model cases).  ``on_sent`` sees every packet the harness
    sent, with the wall-clock time it was written (``time.time()``).  ``step_timeout`` (the runner's)
    bounds no wire wait: those are bounded by the [MS-MQQB] 3.1.2 timers the steps name."""
    start = time.perf_counter()
    why, live = wire_applicability(case, target)
    if why:
        return _result(case, Outcome.not_applicable, start, [], why)
    run = _WireRun(case, live, step_timeout, _options(target))
    if live is not None:
        run.ping_address = getattr(target, "ping_address", None)
        run.queue_ids = (getattr(target, "queue_id", 1), getattr(target, "tx_queue_id", None) or 1)
    where = "setup"
    failures: list[StepFailure] = []
    try:
        run.start()
        for index, step in enumerate(case.when):
            where = f"step {index} ({step.action}, line {step.line})"
            run._last_packet = None
            run.waited = ""
            run.quiet = _expects_nothing(step)
            result = getattr(run, step.action)(step.args)
            found = run.check_step(step.action, step.args, step.expect, result)
            if found:
                failures = [_graded(case, step, index, where, f, run.waited) for f in found]
                break
        else:
            where = "then"
            failures = [_graded(case, None, -1, "then", f, "") for f in run.observe_then()]
    except Exception as e:
        return _result(case, Outcome.error, start, [], f"{where}: {type(e).__name__}: {e}")
    finally:
        with contextlib.suppress(Exception):
            run.close()
        if on_sent is not None:
            for ts, data in run.sent_packets():
                on_sent(ts, data)
    if failures:
        return _result(case, Outcome(case_outcome(failures)), start, failures, "\n".join(f.message for f in failures))
    return _result(case, Outcome.passed, start, [], "")
