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
against ``mqqb://``.  The reference Initiators run over ``harness.peers.InitiatorLink`` on a clock
scaled by ``given.peer.timers`` (default 0.05), so that their 3.1.2 timers (retry, acknowledgment,
session initialization) run a twentieth of their durations.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import packets
from harness.cases.model import Case
from harness.cases.target import TargetError, TargetInfo
from harness.cases.wire import (
    MAX_WAIT,
    behaviours_of,
    brief,
    field_span,
    field_value,
    hexdump,
    needs_simulated_peer,
    normalise,
    wire_matches,
)
from harness.report.results import CaseResult, Outcome, StepFailure
from packets import GUID, NULL_GUID, PacketKind, StreamSplitter
from packets import session as sp

__all__ = ["LiveWireTarget", "parse_mqqb_address", "run_wire_case", "wire_applicability"]

DEFAULT_TIMER_SCALE = 0.05
DEFAULT_WINDOW = 2
CONNECT_TIMEOUT = 2.0


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


def parse_ping_port(spec: str) -> int | None:
    """The UDP port of ``mqqb://host:port?ping=PORT`` (where the acceptor listens for Ping
    Requests, [MS-MQQB] 2.1.2; 3527 for MSMQ), None without the query."""
    query = spec.partition("?")[2]
    for item in query.split("&") if query else []:
        key, _, value = item.partition("=")
        if key == "ping":
            if not value.isdigit() or not 0 < int(value) < 65536:
                raise ValueError(f"{spec!r}: ping=PORT takes a UDP port number")
            return int(value)
        raise ValueError(f"{spec!r}: unknown query {key!r} (expected ping=PORT)")
    return None


class LiveWireTarget:
    """``--target mqqb://host:port[?ping=PORT]``: a live [MS-MQQB] acceptor, for wire cases only;
    ``ping=PORT`` names the UDP port it answers Ping Requests on ([MS-MQQB] 2.1.2)."""

    wire_only = True
    handles_timeout = True

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.wire_address = parse_mqqb_address(spec)
        port = parse_ping_port(spec)
        self.ping_address = (self.wire_address[0], port) if port is not None else None

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
        return (f"{why}; the target is a live peer" if why else ""), tuple(live)
    if type(target) is ReferenceTarget:
        return "", None
    return "a wire case needs an [MS-MQQB] target (reference or mqqb://host:port); this one has the model only", None


# ====================================================================== the simulated peer
def _simulated_peer(behaviours: list[str]) -> Any:
    """A simulated acceptor (harness.peers.SimulatedPeer) on 127.0.0.1 port 0."""
    from harness.peers import SimulatedPeer

    peer = SimulatedPeer("127.0.0.1", 0, behaviour=behaviours[-1], read_timeout=5.0)
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
    expected: Any
    observed: Any
    evidence: str = ""


class _WireRun:
    """One wire case against one peer (simulated or live)."""

    def __init__(self, case: Case, live: tuple[str, int] | None, step_timeout: float) -> None:
        self.case = case
        self.live = live
        self.step_timeout = step_timeout
        peer_spec = case.given["peer"]
        self.side = peer_spec["under_test"]
        self.behaviours = behaviours_of(peer_spec)
        # a live acceptor gets the spec's timer durations unless the case scales them
        self.scale = float(peer_spec.get("timers", DEFAULT_TIMER_SCALE if live is None else 1.0))
        self.window = int(peer_spec.get("window", DEFAULT_WINDOW))
        self.peer: Any = None
        self.silent: socket.socket | None = None
        self.address: tuple[str, int] = live if live is not None else ("", 0)
        self.ping_address: tuple[str, int] | None = None  # the simulated peer's UDP ping port
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
        self._last_packet: bytes | None = None  # the packet the current step's expectations read
        self._last_ping: bytes | None = None  # the Ping Response of the last ping step

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        if self.live is None:
            self.peer = _simulated_peer(self.behaviours)
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
            from harness.session import SessionConfig

            self.link = _SenderLink(self.address, self.scale, self.ping_address)
            self.qm = QueueManager(clock=self.link.clock, id_generator=uuid.uuid4)
            from harness.session import OutgoingQueueProcessing

            host, port = self.address
            self.oqp = OutgoingQueueProcessing(
                self.qm,
                address_of=lambda queue: f"{_unresolvable(queue) or host}:{port}",
                config=SessionConfig(window_size=self.window),
                clock=self.link.clock,
                ping=bool(self.case.given["peer"].get("ping", False)),
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
        timeout = min(float(args.get("timeout", 3.0)), MAX_WAIT, self.step_timeout)
        if self.side == "acceptor":
            return {"satisfied": self._client_wait_closed(timeout)}
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

        ok = link.run_until(self._initiators(), pred, timeout)
        out: dict[str, Any] = {"satisfied": ok}
        if "packet" in args:
            found = self._packets(args["packet"], args.get("direction", "c2s"))
            if found:
                self._last_packet = found[min(int(args.get("count", 1)), len(found)) - 1]
        return out

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
        sock = self._connect()
        kind = args["packet"]
        for _ in range(int(args.get("count", 1))):
            if kind == "raw":
                data = bytes.fromhex(str(args["hex"]).replace(" ", ""))
            else:
                if kind == "EstablishConnection":
                    headers = sp.establish_connection(
                        self.client_guid, NULL_GUID, int(time.monotonic() * 1000) & 0xFFFFFFFF
                    )
                elif kind == "ConnectionParameters":
                    headers = sp.connection_parameters(0x2710, 0x4E20, 64)
                elif kind == "SessionAck":
                    headers = sp.session_ack(
                        ack_sequence_number=self.received_user_messages % 0x10000,
                        user_msg_sequence_number=self.user_messages_sent % 0x10000,
                    )
                else:
                    delivery = DeliveryClass(args.get("delivery", "express"))
                    body = args.get("body", "wire case")
                    headers = user_message(
                        self.client_guid,
                        self.server_guid,
                        body.encode() if isinstance(body, str) else bytes(body),
                        label="wire case",
                        message_id=next(self.message_ids),
                        delivery=delivery,
                    )
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
                sock.sendall(data)
            except OSError:
                self.client_closed = True
                return {"sent": False}
        return {"sent": True}

    def _read_packet(self, timeout: float) -> tuple[bytes | None, bool]:
        """The next whole packet from the acceptor: (packet, closed)."""
        if self.inbox:
            return self.inbox.pop(0), False
        if self.client_closed:
            return None, True
        sock = self._connect()
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return None, False
            sock.settimeout(left)
            try:
                data = sock.recv(65536)
            except TimeoutError:
                return None, False
            except OSError:
                data = b""
            if not data:
                self.client_closed = True
                return None, True
            try:
                chunks = self.splitter.feed(data)
            except packets.PacketError:
                self.inbox.append(data)
                chunks = []
            self.inbox.extend(c.data for c in chunks)
            if self.inbox:
                return self.inbox.pop(0), False

    def _client_wait_closed(self, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while not self.client_closed and time.monotonic() < end:
            data, closed = self._read_packet(end - time.monotonic())
            if data is None and not closed:
                break
        return self.client_closed

    def receive(self, args: Mapping[str, Any]) -> dict[str, Any]:
        timeout = min(float(args.get("timeout", 3.0)), MAX_WAIT, self.step_timeout)
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
        timeout = min(float(args.get("timeout", 2.0)), MAX_WAIT, self.step_timeout)
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
        flat = _flatten(result)
        raw = self._last_packet if action in ("receive", "wait_for") else None
        packet = packets.parse(raw, strict=False) if raw else None
        if action == "ping" and self._last_ping is not None:
            raw, packet = self._last_ping, packets.parse_ping(self._last_ping, strict=False)
        for key, expected in expect.items():
            if key in flat:
                present, observed = True, flat[key]
            elif packet is not None and key not in ("satisfied", "closed", "timed_out", "kind", "answered"):
                present, observed = field_value(packet, key)
            else:
                present, observed = False, None
            expected = self._resolve(expected)
            if not wire_matches(expected, observed, self.sent_value, present):
                evidence = ""
                if raw is not None and packet is not None and key not in flat:
                    evidence = hexdump(raw, field_span(raw, key, packet.kind.name))
                failures.append(_Failure(key, expected, observed if present else "<absent>", evidence))
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
                    failures.append(_Failure(f"outgoing.{qname}.ConnectionHistory", want["ConnectionHistory"], got))
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
                    failures.append(_Failure(f"peer.{key}", tp[key], observed.get(key, "<absent>")))
            for kind, want_n in (tp.get("sent") or {}).items():
                if not wire_matches(want_n, kinds.get(kind, 0)):
                    failures.append(_Failure(f"peer.sent.{kind}", want_n, kinds.get(kind, 0)))
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


def _section(case: Case, requirement: str) -> str:
    for ref in case.spec:
        if requirement and ref.requirement == requirement:
            return ref.section
    return case.spec[0].section if case.spec else ""


def _result(case: Case, outcome: Outcome, start: float, failures: list[StepFailure], detail: str) -> CaseResult:
    return CaseResult.of(case, outcome, time.perf_counter() - start, failures, detail)


def run_wire_case(case: Case, target: Any, *, step_timeout: float = 10.0) -> CaseResult:
    """Run one wire case against ``target``; never raises."""
    start = time.perf_counter()
    why, live = wire_applicability(case, target)
    if why:
        return _result(case, Outcome.not_applicable, start, [], why)
    run = _WireRun(case, live, step_timeout)
    if live is not None:
        run.ping_address = getattr(target, "ping_address", None)
    where = "setup"
    try:
        run.start()
        for index, step in enumerate(case.when):
            where = f"step {index} ({step.action}, line {step.line})"
            run._last_packet = None
            result = getattr(run, step.action)(step.args)
            failures = run.check_step(step.action, step.args, step.expect, result)
            if failures:
                section = _section(case, step.requirement)
                out = [
                    StepFailure(
                        step=index,
                        event=step.action,
                        field=f.field,
                        expected=f.expected,
                        observed=brief(f.observed, 200),
                        section=section,
                        message=f"{where}: {f.field} expected {f.expected}, observed {brief(f.observed)}",
                        evidence=f.evidence,
                    )
                    for f in failures
                ]
                return _result(case, Outcome.failed, start, out, "\n".join(f.message for f in out))
        where = "then"
        failures = run.observe_then()
        if failures:
            section = _section(case, "")
            out = [
                StepFailure(
                    step=-1,
                    event="then",
                    field=f.field,
                    expected=f.expected,
                    observed=f.observed,
                    section=section,
                    message=f"then: {f.field} expected {f.expected}, observed {f.observed}",
                )
                for f in failures
            ]
            return _result(case, Outcome.failed, start, out, "\n".join(f.message for f in out))
    except Exception as e:
        return _result(case, Outcome.error, start, [], f"{where}: {type(e).__name__}: {e}")
    finally:
        with contextlib.suppress(Exception):
            run.close()
    return _result(case, Outcome.passed, start, [], "")
