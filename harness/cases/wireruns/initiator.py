"""The initiator-side wire run: the sending queue manager is under test, the harness accepts.

A case with ``under_test: initiator`` judges a sender ([MS-MQQB] 3.1.7.12 Message Position
Available, 3.1.5.2-3.1.5.4 session establishment, 3.1.7.1 and 3.1.7.11 sending, 3.1.6 timers).
The harness runs the acceptor: its simulated peer (:class:`harness.peers.SimulatedPeer`, with the
case's behaviour, and its ``replies``: bytes the case gives, sent in answer to a packet of the
sender, harness.cases.wireruns.peer), a silent listener, or a port where nothing listens.  The sender is driven
through the control operations of the target protocol (harness.cases.actions.CONTROL_OPS):
``wire_setup`` names the harness's acceptor, then each case action (``create_outgoing_queue``,
``enqueue``, ``pause_queue``, ...) is one control operation; the sender connects by itself over
real TCP.  Everything a step checks on the wire is what the harness's acceptor saw: the packets
of each connection in both directions, the Ping Requests, the messages delivered, the rules the
sender broke (``then.peer.violations``: each rule one difference, graded by the rule's own
requirement, harness.cases.violations).  ADM expectations (ConnectionHistory, OutgoingQueue
State, OutgoingMessagePosition attributes, [MS-MQDMPR] 3.1.1.3 and [MS-MQQB] 3.1.1.3.1.2) are
checked where the target reports ADM state (capability ``adm:outgoing``) and listed as not checked
where it does not.

A sender that opens no connection at all is caught at the first timer that proves it, not at the
end of every wait: once a message was made available (``enqueue``, ``resume_queue``: [MS-MQQB]
3.1.7.12, whose connection 3.1.5.2 begins at once, after at most a Ping Request and its Ping
Response Timer, 3.1.2.9), a wait that needs a connection ends as soon as that timer (at the
sender's scale, with the ``within`` margin) has run out with no connection opened and no Ping
Request seen (:attr:`InitiatorRun.never_connected` says so; harness.cases.targets.wire files the
difference under MQQB-3.1.7.12-CONNECT).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Mapping
from itertools import pairwise
from typing import Any

import packets
from harness.cases.actions import action
from harness.cases.grading import readings_of, unwrap
from harness.cases.target import TargetError, TargetUnsupported
from harness.cases.wirematch import wire_matches
from harness.cases.wireruns.base import (
    DEFAULT_TIMER_SCALE,
    Failure,
    WireCaseError,
    WireRun,
    absent_timers,
    max_in_flight,
    violation_failures,
)
from harness.cases.wireruns.peer import (
    SilentListener,
    WireConnection,
    close_peer,
    peer_replies,
    peer_state,
    simulated_peer,
)
from harness.errors import HarnessError
from harness.peers.recording import RecordedConnection
from harness.session import SessionConfig
from packets.formatname import direct_machine
from packets.layout import PacketKind
from packets.paths import get_field

__all__ = ["ADM", "InitiatorRun", "NotApplicable"]

ADM = "adm:outgoing"
ADM_KEYS = ("connection_requested", "OutgoingMessagePosition", "State", "ConnectionHistory")
_NO_ADM = f"the target reports no ADM state (capability {ADM})"
POLL = 0.01  # real seconds between two looks at what the harness's acceptor saw
SETTLE = 0.5  # real seconds the reported ADM state may take to show what crossed the wire
# real seconds the harness's own acceptor may take to take in what reached its sockets (a bound on
# the harness, not on the sender: only a machine too loaded to run the case exceeds it)
SYNC = 10.0


class NotApplicable(HarnessError):
    """The case cannot judge this sender as configured (the reason says which setting differs)."""


class _ClosedPort:
    """The view of a port where nothing listens: no connection is ever accepted.  The port is
    held bound, without listening, for as long as the case runs: a connection to it is refused,
    and no other listener (another case's peer, in this process or another) can take it."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        host, port = self._sock.getsockname()[:2]
        self.address = (str(host), int(port))

    def state(self) -> list[WireConnection]:
        return []

    def connections(self) -> list[list[tuple[str, bytes]]]:
        return []

    def close(self) -> None:
        self._sock.close()


class _PeerView:
    """What the simulated peer saw, in the shape the run reads: each reading one snapshot of the
    peer's records (harness.peers.server.SimulatedPeer.snapshot), never pieces of two moments."""

    def __init__(self, peer: Any) -> None:
        self.peer = peer
        self.address = tuple(peer.address[:2])

    def state(self) -> list[WireConnection]:
        return peer_state(self.peer)

    def connections(self) -> list[list[tuple[str, bytes]]]:
        return _packets_of(self.state())

    def sync(self, timeout: float) -> bool:
        return bool(self.peer.sync(timeout))

    def close(self) -> None:
        close_peer(self.peer)


def _packets_of(state: list[WireConnection]) -> list[list[tuple[str, bytes]]]:
    return [[(d, data) for d, data, _ in c.packets] for c in state]


def _address_host(format_name: str, peer_host: str) -> str:
    """The host the harness names for a destination: the peer's, except for a direct name whose
    machine lies under the reserved ``.invalid`` top-level domain (RFC 6761: it never resolves),
    which is named as it is."""
    machine = direct_machine(format_name)
    return machine if machine.lower().rstrip(".").endswith(".invalid") else peer_host


class InitiatorRun(WireRun):
    """One case checking a sender driven through ``control`` (a target's control operations)."""

    side = "initiator"

    def __init__(
        self, case: Any, options: Any, control: Callable[[str, dict[str, Any]], dict[str, Any]], adm: bool
    ) -> None:
        super().__init__(case, options)
        self.control = control
        self.adm = adm
        peer_spec = case.given["peer"]
        default = options.scale if options.scale is not None else DEFAULT_TIMER_SCALE
        self.requested_scale = float(peer_spec.get("timers", default))
        self.default_scale = default
        self.view: Any = None
        self.setup: dict[str, Any] = {}  # the sender's wire_setup reply
        self.messages: dict[str, Mapping[str, Any]] = {}  # case id -> the message as enqueued
        self.queues: list[str] = []
        self.step_not_applicable = ""  # why the current step's expectations are not checked
        self._parsed: dict[bytes, Any] = {}
        self.available_at: float | None = None  # when a message was last made available (3.1.7.12)
        self.never_connected = ""  # a wait ended because the sender never connected: how long it waited
        # the wall-clock time a quiet wait's bound ran out: its last look counts what the harness's
        # acceptor recorded by then, not what came later (None: everything recorded)
        self.until: float | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        peer_spec = self.case.given["peer"]
        if peer_spec.get("silent"):
            self.view = SilentListener()
        elif peer_spec.get("listening") is False:  # a port that refuses connections
            self.view = _ClosedPort()
        else:
            scale = min(self.default_scale, self.requested_scale)
            self.view = _PeerView(simulated_peer(self.behaviours, scale, peer_replies(peer_spec)))
        host, port = self.view.address
        ping_port = self.view.peer.ping_address[1] if isinstance(self.view, _PeerView) else None
        reply = self.control(
            "wire_setup",
            {
                "host": host,
                "port": port,
                "ping_port": ping_port,
                "scale": self.requested_scale,
                "window": self.window,
                "ping": bool(peer_spec.get("ping", False)),
            },
        )
        self.setup = reply
        self._configure(reply)

    def _configure(self, reply: Mapping[str, Any]) -> None:
        """The sender's time scale and implementation-dependent timer values, as it declared them."""
        try:
            scale = float(reply.get("scale", 1.0))
        except (TypeError, ValueError):
            raise WireCaseError(f"wire_setup: scale {reply.get('scale')!r} is not a number") from None
        if not 0 < scale <= 1:
            raise WireCaseError(f"wire_setup: scale {scale!r} is not in (0, 1]")
        self.initiator_scale = scale
        self.acceptor_scale = min(self.default_scale, scale)
        window = reply.get("window", self.window)
        if "window" in self.case.given["peer"] and window != self.window:
            raise NotApplicable(f"the case needs a sender with WindowSize {self.window}; this one sends {window}")
        timers = reply.get("timers") or {}
        self.absent = absent_timers(timers)  # null: the sender does not run that timer (base.absent_timers)
        timers = {name: value for name, value in timers.items() if value is not None}
        defaults = SessionConfig()
        fields = {
            "SessionInitialization": "session_initialization",
            "SessionRetryConnect": "session_retry_connect",
            "AckWaitTimeout": "ack_wait_timeout_ms",
            "SessionAckWaitMultiple": "ack_wait_multiple",
        }
        values: dict[str, Any] = {"window_size": int(window)}
        for name, attr in fields.items():
            declared = name in timers
            values[attr] = type(getattr(defaults, attr))(timers[name]) if declared else getattr(defaults, attr)
            self.timer_origin[name] = "the sender's declared" if declared else "the spec's default (not declared)"
        if "ResendInterval" in timers:
            values["resend_intervals"] = (float(timers["ResendInterval"]),)
        self.timer_origin["ResendInterval"] = (
            "the sender's declared" if "ResendInterval" in timers else "the spec's default (not declared)"
        )
        self.config = SessionConfig(**values)
        self.require_timers()

    def close(self) -> None:
        try:
            if self.setup:
                self.control("wire_close", {})
        finally:
            if self.view is not None:
                self.view.close()

    def sent_packets(self) -> list[tuple[float, bytes]]:
        """Every packet the harness (its acceptor) sent, with the wall-clock time it was written."""
        if not isinstance(self.view, _PeerView):
            return []
        return [(ts, data) for c in self.view.peer.connections for d, data, ts in list(c.packets) if d == "s2c"]

    def recorded_connections(self) -> list[RecordedConnection]:
        """The TCP connections of the session as the harness's acceptor saw them (``--record``)."""
        view = self.view
        if isinstance(view, _PeerView):
            server = (str(view.address[0]), int(view.address[1]))
            out = []
            for c in view.peer.connections:
                closed_by = ("c2s" if c.closed_by == "client" else "s2c") if c.closed else ""
                client = (str(c.client[0]), int(c.client[1]))
                out.append(RecordedConnection(client, server, list(c.packets), closed_by))
            return out
        if isinstance(view, SilentListener):
            server = view.address
            return [
                RecordedConnection(
                    r.client,
                    server,
                    [("c2s", data, ts) for data, ts in zip(list(r.packets), list(r.times), strict=False)],
                    "c2s" if r.closed else "",
                    r.opened,
                )
                for r in list(view.records)
            ]
        return []

    # -- the hooks of WireRun ------------------------------------------------------------------------
    def _parse(self, data: bytes) -> Any:
        parsed = self._parsed.get(data)
        if parsed is None:
            try:
                parsed = packets.parse(data, strict=False)
            except Exception:
                parsed = False
            self._parsed[data] = parsed
        return parsed or None

    def _kind(self, data: bytes) -> str:
        p = self._parse(data)
        return p.kind.name if p is not None else "Unknown"

    def connection_parameters(self) -> tuple[int | None, int, str]:
        for conn in self.view.connections():
            for direction, data in conn:
                if direction == "c2s" and self._kind(data) == PacketKind.ConnectionParameters:
                    cp = self._parse(data).ConnectionParametersHeader
                    return int(cp.RecoverableAckTimeout), int(cp.AckTimeout), "sent"
        # not sent yet: AckWaitTimeout is the sender's configuration; RecoverableAckSendTimeout
        # comes from the round trip of the EstablishConnection Packet (3.1.5.3.2), at most 0x1D4C0
        return None, self.config.ack_wait_timeout_ms, "to be sent"

    def recoverable(self) -> bool:
        return any(m.get("delivery", "express") != "express" for m in self.messages.values())

    def transactional_count(self) -> int:
        return sum(m.get("delivery") == "transactional" for m in self.messages.values())

    def resolve(self, expected: Any) -> Any:
        """``QueueManager.Identifier`` in an expectation: the sender's, as its wire_setup said."""
        if expected == "QueueManager.Identifier" and "QueueManager.Identifier" in self.setup:
            return str(self.setup["QueueManager.Identifier"]).upper()
        if isinstance(expected, Mapping) and len(expected) == 1:
            ((k, v),) = expected.items()
            if k in ("not", "any_of"):
                return {k: [self.resolve(x) for x in v] if k == "any_of" else self.resolve(v)}
        return expected

    def check_step(
        self, action: str, args: Mapping[str, Any], expect: Mapping[str, Any] | None, result: dict[str, Any]
    ) -> tuple[list[Failure], list[str]]:
        """A step's expectations; an OutgoingQueue State the sender reported is read again until
        it matches or :data:`SETTLE` runs out: the sender may not yet have processed what crossed
        the wire (a close by the harness's acceptor), and no timer of the spec bounds that delay."""
        want = (expect or {}).get("State")
        if self.adm and want is not None and "queue" in args and "State" in result:
            wanted, queue = self.resolve(unwrap(want)), str(args["queue"])
            end = time.monotonic() + SETTLE
            while not wire_matches(wanted, result.get("State")) and time.monotonic() < end:
                time.sleep(POLL)
                observed = self._control("observe_outgoing", {"queues": [queue]}).get("queues") or {}
                result = {**result, "State": (observed.get(queue) or {}).get("State")}
        return super().check_step(action, args, expect, result)

    def skipped(self, key: str) -> str:
        if self.step_not_applicable:
            return self.step_not_applicable
        if not self.adm and key.split(".", 1)[0] in ADM_KEYS:
            return _NO_ADM
        return ""

    # -- control ---------------------------------------------------------------------------------------
    def _control(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        try:
            return self.control(op, args)
        except TargetError as e:
            if isinstance(e, TargetUnsupported):  # an honest partial sender: the case is unsupported (targets.wire)
                raise
            raise WireCaseError(f"the sender's {op} failed: {e.kind}: {e.message}") from None

    # -- actions -------------------------------------------------------------------------------------
    @action(
        "create_outgoing_queue",
        sides=("initiator",),
        required={"name": "text: the case's name for the queue"},
        optional={
            "DestinationFormatName": "text: an [MS-MQMQ] 2.1 format name "
            "(DIRECT=TCP:<the peer's host>\\private$\\<name>)",
            "State": "Connected | Disconnected | Inactive | Locked | NeedValidation | Waiting | OnHold",
            "Multicast": "boolean",
            "Transactional": "boolean",
        },
        result={"State": "text (adm:outgoing)"},
    )
    def create_outgoing_queue(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """An [MS-MQDMPR] 3.1.1.3 OutgoingQueue whose destination is the harness's acceptor."""
        host, port = self.view.address
        name = str(args["name"])
        fmt = str(args.get("DestinationFormatName", f"DIRECT=TCP:{host}\\private$\\{name}"))
        request = {
            "name": name,
            "DestinationFormatName": fmt,
            "address": {"host": _address_host(fmt, host), "port": port},
            **{k: args[k] for k in ("State", "Multicast", "Transactional") if k in args},
        }
        self.queues.append(name)
        return self._control("create_outgoing_queue", request)

    @action(
        "create_local_queue",
        sides=("initiator",),
        required={"name": "text"},
        optional={"Transactional": "boolean"},
    )
    def create_local_queue(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """A local [MS-MQDMPR] 3.1.1.2 Queue (not an OutgoingQueue)."""
        return self._control("create_local_queue", dict(args))

    @action(
        "enqueue",
        sides=("initiator",),
        required={
            "queue": "text: a queue the case created",
            "message": "mapping: {id, delivery, Body, <Message attribute>: value}",
        },
        result={
            "rStatus": "text",
            "connection_requested": "boolean (adm:outgoing)",
            "OutgoingMessagePosition": "mapping (adm:outgoing)",
            "State": "text (adm:outgoing)",
            "ConnectionHistory": "list (adm:outgoing)",
        },
    )
    def enqueue(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """[MS-MQDMPR] 3.1.7.1.9 Enqueue Message, which raises [MS-MQQB] 3.1.7.12 Message Position Available."""
        message = dict(args["message"])
        self.messages[str(message["id"])] = message
        try:
            return self._control("enqueue", {"queue": args["queue"], "message": message})
        finally:
            self.available_at = time.monotonic()

    @action("pause_queue", sides=("initiator",), required={"queue": "text"}, result={"State": "text (adm:outgoing)"})
    def pause_queue(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """[MS-MQDMPR] 3.1.4.14 Pause Queue on an OutgoingQueue."""
        return self._control("pause_queue", {"queue": args["queue"]})

    @action("resume_queue", sides=("initiator",), required={"queue": "text"}, result={"State": "text (adm:outgoing)"})
    def resume_queue(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """[MS-MQDMPR] 3.1.4.15 Resume Queue on an OutgoingQueue."""
        try:
            return self._control("resume_queue", {"queue": args["queue"]})
        finally:
            self.available_at = time.monotonic()

    @action(
        "wait_for",
        sides=("initiator",),
        optional={
            "packet": "packet kind: wait until the acceptor saw it (count times)",
            "direction": "c2s (from the sender, default) | s2c",
            "count": "integer",
            "acked": "list of message ids: wait until the acceptor acknowledged each",
            "connection_history": "integer: wait until the OutgoingQueues' ConnectionHistory has this many "
            "entries (adm:outgoing)",
            "connections": "integer: wait until the sender opened this many connections",
            "closed": "integer: wait until this many connections ended",
            "by": "initiator | acceptor: with closed, count only the connections that side closed ([MS-MQQB] 3.1.5.9)",
        },
        defaults=lambda args, expect: {"satisfied": True},
        nothing=("satisfied", False),
        result={
            "satisfied": "boolean",
            "pings": "integer: the Ping Requests the sender had sent when the wait ended (the harness's acceptor)",
        },
    )
    def wait_for(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Wait, within the bound the step's timers give, until the condition holds."""
        view = self.view
        if "packet" in args:
            kind, direction, count = args["packet"], args.get("direction", "c2s"), int(args.get("count", 1))

            def pred() -> bool:
                return len(self._packets(kind, direction)) >= count
        elif "acked" in args:
            wanted = [str(m) for m in args["acked"]]

            def pred() -> bool:
                return all(self._acked(m) for m in wanted)
        elif "connection_history" in args:
            if not self.adm:  # the wait still runs its bound out: later steps see the same time pass
                self.step_not_applicable = _NO_ADM
                self._run_within(lambda: False, args)
                return {}
            n = int(args["connection_history"])

            def pred() -> bool:
                observed = self._control("observe_outgoing", {"queues": self.queues}).get("queues") or {}
                return sum(len(q.get("ConnectionHistory") or []) for q in observed.values()) >= n
        elif "connections" in args:
            n = int(args["connections"])

            def pred() -> bool:
                return len(self.state()) >= n
        else:
            n, by = int(args["closed"]), args.get("by")

            def pred() -> bool:
                ended = [c for c in self.state() if c.ended is not None]
                return len([c for c in ended if not by or c.by_initiator == (by == "initiator")]) >= n

        needs = "packet" in args or "acked" in args or int(args.get("connections", args.get("closed", 0)) or 0) > 0
        ok = self._run_within(pred, args, needs_connection=needs)
        if "packet" in args:
            found = self._packets(args["packet"], args.get("direction", "c2s"))
            if found:
                self.last_packet = found[min(int(args.get("count", 1)), len(found)) - 1]
        if isinstance(view, _PeerView):
            return {"satisfied": ok, "pings": len(view.peer.pings)}
        return {"satisfied": ok}

    def _run_within(self, pred: Callable[[], bool], args: Mapping[str, Any], needs_connection: bool = False) -> bool:
        """Poll ``pred()`` until it holds or the step's bound runs out (recomputed as the session
        shows the values it depends on: the ConnectionParameters sent); ``needs_connection``: a
        condition only a connection can meet ends as soon as :meth:`_never_connected` proves none
        will come.  Load cannot change the verdict: the last look follows a :meth:`_sync`, so what
        the sender had sent when the bound ran out is judged however late the harness's acceptor
        (or this thread) ran; and a step that expects that nothing happens (:attr:`quiet`) judges
        only what the acceptor had recorded when its bound ran out (:attr:`until`), never what came
        after it, however late it looks."""
        start = time.monotonic()
        try:
            while True:
                seconds, self.waited = self.bound(args)
                deadline = start + seconds
                if self.quiet:
                    self.until = time.time() - (time.monotonic() - deadline)
                if time.monotonic() >= deadline:
                    self._sync()
                    return bool(pred())
                if pred():
                    return True
                if needs_connection and not self.quiet and self._never_connected():
                    return bool(pred())
                time.sleep(POLL)
        finally:
            self.until = None

    def state(self) -> list[WireConnection]:
        """The connections the harness's acceptor recorded, read at one moment (as of
        :attr:`until` when set)."""
        state = self.view.state()
        if self.until is None:
            return state
        until = self.until
        return [c.as_of(until) for c in state if c.opened <= until]

    def _sync(self) -> None:
        """Have the harness's acceptor take in everything that reached its sockets by now
        (harness.peers.server.SimulatedPeer.sync, SilentListener.sync)."""
        sync = getattr(self.view, "sync", None)
        if sync is not None and not sync(SYNC):
            raise WireCaseError(f"the harness's acceptor did not take in what reached it within {SYNC:g} s")

    def _never_connected(self) -> bool:
        """The sender opened no connection (nor sent a Ping Request) although a message was made
        available longer ago than the Ping Response Timer ([MS-MQQB] 3.1.2.9) at its scale, with
        the ``within`` margin: 3.1.7.12 connects at once (3.1.5.2), so none will come."""
        view = self.view
        if self.available_at is None or not isinstance(view, _PeerView | SilentListener) or self.state():
            return False
        if isinstance(view, _PeerView) and view.peer.pings:
            return False
        bound, how = self.bound({"within": "PingResponse"})
        waited = time.monotonic() - self.available_at
        if waited < bound:
            return False
        self._sync()  # a connection (or a Ping Request) that reached the acceptor by now counts
        if self.state() or (isinstance(view, _PeerView) and view.peer.pings):
            return False
        self.never_connected = (
            f"no connection {waited:.2f} s after the message was made available (the Ping Response Timer: {how})"
        )
        return True

    def _packets(self, kind: str, direction: str) -> list[bytes]:
        return [d for c in self.state() for (dr, d, _) in c.packets if dr == direction and self._kind(d) == kind]

    def _acked(self, message_id: str) -> bool:
        """The harness's acceptor acknowledged the message ([MS-MQQB] 3.1.5.5.1): a SessionHeader it
        sent on the connection counts the UserMessage that carried the message's Label; for a
        transactional message ([MS-MQQB] 3.1.5.6), an OrderAck it sent numbers its TxSequenceNumber."""
        label = str(self.messages.get(message_id, {}).get("Label", message_id))
        for conn in _packets_of(self.state()):
            number, acked, mine, tx, ordered = 0, 0, 0, None, -1
            for direction, data in conn:
                p = self._parse(data)
                if p is None:
                    continue
                if direction == "c2s" and p.kind is PacketKind.UserMessage:
                    number += 1
                    mph = p.headers.get("MessagePropertiesHeader")
                    if mph is not None and not mine and str(mph.Label).rstrip("\x00") == label:
                        mine = number
                        th = p.headers.get("TransactionHeader")
                        tx = int(th.TxSequenceNumber) if th is not None else None
                elif direction == "s2c" and p.kind is PacketKind.OrderAck:
                    present, number = get_field(p, "OrderAckBody.TxSequenceNumber")  # 2.2.4.1 OrderAck Body
                    ordered = max(ordered, int(number)) if present else ordered
                if direction == "s2c" and p.headers.get("SessionHeader") is not None:
                    acked = max(acked, int(p.headers.SessionHeader.AckSequenceNumber))
            if mine and acked >= mine and (tx is None or ordered >= tx):
                return True
        return False

    # -- then ------------------------------------------------------------------------------------------
    def observe_then(self) -> tuple[list[Failure], list[str]]:
        """The final state's failures, and what could not be checked.  The state is the one
        before a retry of the sender's (:meth:`_retry_opened`) when one began after the steps."""
        began = time.time()  # the case's steps have ended (wall clock, as the connections' times)
        then = self.case.then or {}
        not_checked: list[str] = []
        outgoing = then.get("outgoing") or {}
        readings: list[tuple[float, list[Failure]]] = []
        if outgoing and not self.adm:
            not_checked.extend(f"outgoing.{q} ({_NO_ADM})" for q in outgoing)
        elif outgoing:
            readings = self._outgoing_readings(outgoing)
        tp = then.get("peer") or {}
        if tp:
            peer_failures, retry = self._peer(tp, began)
        else:
            peer_failures, retry = [], self._retry_opened(_times(self.view.state()), began)
        return self._read_before(readings, retry) + peer_failures, not_checked

    def _outgoing_readings(self, outgoing: Mapping[str, Any]) -> list[tuple[float, list[Failure]]]:
        """The sender's reported state of the queues ``outgoing`` names, read until it settles
        (once the sender has processed what crossed the wire: as expected, or what another named
        reading gives) or :data:`SETTLE` passes: each reading's wall-clock time and failures."""
        readings: list[tuple[float, list[Failure]]] = []
        end = time.monotonic() + SETTLE
        while True:
            observed = self._control("observe_outgoing", {"queues": list(outgoing)}).get("queues") or {}
            found = [f for q, want in outgoing.items() for f in self._outgoing(q, want, observed.get(q) or {})]
            readings.append((time.time(), found))
            if all(_another_reading(f) for f in found) or time.monotonic() >= end:
                return readings
            time.sleep(POLL)

    def _retry_opened(self, times: list[tuple[float, float | None]], began: float) -> float | None:
        """When (wall clock) a connection opened after the case's steps ended (``began``), as long
        after the one before it ended as the sender's Session Retry Connect Timer allows ([MS-MQQB]
        3.1.2.3, the ``before`` bound): the retry of a conformant sender, which the final state was
        not written to see; None when there is none, or the sender declared the timer absent
        (it does not retry: every connection it opens is judged).  ``times``: each connection's
        opening and end, in the order opened."""
        if "SessionRetryConnect" in self.absent:
            return None
        least, _how = self.bound({"before": "SessionRetryConnect"})
        for (_opened, ended), (opened, _ended) in pairwise(times):
            if ended is not None and opened >= began and opened - ended >= least:
                return opened
        return None

    def _read_before(self, readings: list[tuple[float, list[Failure]]], retry: float | None) -> list[Failure]:
        """The failures of the last reading of the sender's state; with ``retry`` (a retry's
        connection opened then), of the last reading that came before it.  WireCaseError when
        none did: the state was read too late to be judged."""
        if retry is not None and readings:
            readings = [r for r in readings if r[0] < retry]
            if not readings:
                _least, how = self.bound({"before": "SessionRetryConnect"})
                raise WireCaseError(
                    "the final state was read too late to be judged: the sender's retry, which its Session "
                    f"Retry Connect Timer allows ({how}), opened a connection before its state was read; "
                    "the machine ran the case too slowly for its time scale"
                )
        return readings[-1][1] if readings else []

    @staticmethod
    def _outgoing(qname: str, want: Mapping[str, Any], got: Mapping[str, Any]) -> list[Failure]:
        failures = []
        where = f"outgoing.{qname}"
        if "State" in want and got.get("State") != want["State"]:
            failures.append(Failure(f"{where}.State", want["State"], got.get("State", "<absent>")))
        if "ConnectionHistory" in want and not wire_matches(want["ConnectionHistory"], got.get("ConnectionHistory")):
            written = want["ConnectionHistory"]
            failures.append(
                Failure(
                    f"{where}.ConnectionHistory",
                    unwrap(written),
                    got.get("ConnectionHistory"),
                    raw=written,
                    matcher=_observed(got.get("ConnectionHistory"), True),
                )
            )
        if "OutgoingMessagePositions" in want:
            table = list(got.get("OutgoingMessagePositions") or [])
            want_ids = [p["message"] for p in want["OutgoingMessagePositions"]]
            got_ids = [p.get("message") for p in table]
            if got_ids != want_ids:
                failures.append(Failure(f"{where}.OutgoingMessagePositions", want_ids, got_ids))
            else:
                for j, (w, p) in enumerate(zip(want["OutgoingMessagePositions"], table, strict=True)):
                    for k, v in w.items():
                        if k != "message" and p.get(k) != v:
                            failures.append(Failure(f"{where}.OutgoingMessagePositions[{j}].{k}", v, p.get(k)))
        return failures

    def _peer_state(
        self, began: float
    ) -> tuple[list[list[tuple[str, bytes]]], dict[str, Any], list[Any], float | None]:
        """What the harness's acceptor saw, up to a retry of the sender's opened after the steps
        (:meth:`_retry_opened`, its time the last value): the connections' packets, the counts the
        final state names, and the rules the sender broke."""
        view = self.view
        if isinstance(view, _PeerView):  # one state: what the acceptor read, with what it made of it
            snap = view.peer.settled_snapshot(SYNC)
            if not snap.settled:
                raise WireCaseError(f"the harness's acceptor had not processed the packets it read {SYNC:g} s later")
            retry = self._retry_opened([(c.opened, c.ended if c.closed else None) for c in snap.connections], began)
            kept = [c for c in snap.connections if retry is None or c.opened < retry]
            observed: dict[str, Any] = {"connections": len(kept)}
            observed["pings"] = len(snap.pings)
            observed["ping_responses"] = sum(p.response is not None for p in snap.pings)
            observed["delivered"] = [str(p.MessagePropertiesHeader.Label) for c in kept for p in list(c.delivered)]
            seen = [v for c in kept for v in c.violations]
            return [[(d, data) for d, data, _ in c.packets] for c in kept], observed, seen, retry
        state = view.state()
        retry = self._retry_opened(_times(state), began)
        connections = _packets_of([c for c in state if retry is None or c.opened < retry])
        return (
            connections,
            {"connections": len(connections), "pings": 0, "ping_responses": 0, "delivered": []},
            [],
            retry,
        )

    def _peer(self, tp: Mapping[str, Any], began: float) -> tuple[list[Failure], float | None]:
        """The failures of the final state's ``peer``, and when a retry of the sender's opened
        after the steps (None if none)."""
        self._sync()
        connections, observed, seen, retry = self._peer_state(began)
        observed["max_in_flight"] = max_in_flight(connections)
        failures = []
        if "violations" in tp:  # each rule the sender broke: a difference graded by the rule's requirement
            failures.extend(violation_failures(tp["violations"], seen))
        for key in ("connections", "max_in_flight", "pings", "ping_responses", "delivered"):
            if key in tp and not wire_matches(tp[key], observed.get(key), present=key in observed):
                failures.append(
                    Failure(
                        f"peer.{key}",
                        unwrap(tp[key]),
                        observed.get(key, "<absent>"),
                        raw=tp[key],
                        matcher=_observed(observed.get(key), key in observed),
                    )
                )
        kinds: dict[str, int] = {}
        for conn in connections:
            for d, data in conn:
                if d == "c2s":
                    kinds[self._kind(data)] = kinds.get(self._kind(data), 0) + 1
        for kind, want_n in (tp.get("sent") or {}).items():
            if not wire_matches(want_n, kinds.get(kind, 0)):
                failures.append(
                    Failure(
                        f"peer.sent.{kind}",
                        unwrap(want_n),
                        kinds.get(kind, 0),
                        raw=want_n,
                        matcher=_observed(kinds.get(kind, 0), True),
                    )
                )
        return failures, retry


def _times(state: list[WireConnection]) -> list[tuple[float, float | None]]:
    """Each connection's wall-clock opening and end (None while open)."""
    return [(c.opened, c.ended) for c in state]


def _another_reading(f: Failure) -> bool:
    """The difference is what another named reading of its interpretation gives."""
    readings = readings_of(f.raw)
    return readings is not None and f.matcher is not None and any(f.matcher(v) for v in readings.values())


def _observed(value: Any, present: bool) -> Callable[[Any], bool]:
    """Tests any expectation (a reading's value) against an observed value (harness.cases.grading)."""
    return lambda expected: wire_matches(expected, value, present=present)
