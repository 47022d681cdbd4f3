"""The acceptor-side wire run: the harness is the initiator, the acceptor is under test.

A case with ``under_test: acceptor`` is the initiator of an [MS-MQQB] 2.1.1 session on a plain
socket: it sends the packets the case crafts (``send``: EstablishConnection and
ConnectionParameters as 3.1.5.2-3.1.5.4 build them, SessionAck, UserMessage Packets of [MS-MQMQ]
2.2.19-2.2.20 within the window of 3.1.7.1, any field overridden by spec path, or raw bytes), reads
the acceptor's replies (``receive``, checked field by field against 3.1.5.3.1, 3.1.5.4.1, 3.1.5.5,
3.1.5.8; cut by PacketSize whatever their Signature, which 3.1.5.1.2 judges) and pings it
(``ping``, 2.1.2, 3.1.7.6).  The acceptor is the simulated peer (a target with the
``peer-behaviours`` capability: the reference) or the live ``mqqb://`` one.  ``then.peer.violations``
has a passive Observer check every reply against the session rules (harness.session.rules), each
rule the acceptor broke graded by its requirement (harness.cases.violations).
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import packets
from harness.cases.actions import action
from harness.cases.wire import PACKET_KINDS, RAW
from harness.cases.wirefields import field_value
from harness.cases.wirematch import wire_matches
from harness.cases.wireruns.base import (
    DEFAULT_TIMER_SCALE,
    Failure,
    WireCaseError,
    WireRun,
    kind_of,
    violation_failures,
)
from harness.cases.wireruns.framing import PacketFramer
from harness.cases.wireruns.peer import close_peer, simulated_peer
from harness.peers.recording import RecordedConnection
from harness.session import DeliveryClass, Observer, RuleViolation, user_message
from packets import GUID, NULL_GUID
from packets import session as sp
from packets.layout import USER_MESSAGE_KINDS, PacketKind
from packets.paths import set_field

__all__ = ["CLIENT_PACKETS", "AcceptorRun", "client_packet"]

CONNECT_TIMEOUT = 2.0
# What the case's own client sends in a ConnectionParameters request unless a step overrides it
# ([MS-MQQB] 2.2.2.1): RecoverableAckTimeout 10 s, AckTimeout 20 s (the smallest valid), WindowSize 64.
CLIENT_RECOVERABLE_ACK_TIMEOUT = 0x2710
CLIENT_ACK_TIMEOUT = 0x4E20
CLIENT_WINDOW = 64
SYNC = 10.0  # real seconds the simulated acceptor may take to take in what reached it (a bound on the machine)
DRAIN_PACKETS = 1000  # packets read past a bound that ran out (what had arrived by then)
TIME_TO_REACH_QUEUE = 0x54600  # seconds (4 days): what the model gives a message ([MS-MQDMPR] 3.1.1.12)
# TxSequenceID of the case's transactional messages ([MS-MQMQ] 2.2.18.1.2: Ordinal 1 in the low
# 32 bits, TimeStamp 0x10 in the high ones), and of the OrderAck and FinalAck Packets it sends
TX_SEQUENCE_ID = 0x10_0000_0001


# -- the packets the case's client sends ---------------------------------------------------------
# Each builds the headers of one kind of packet as the case's client sends it ([MS-MQQB] 2.2.2-2.2.6),
# from what the run knows of its session, before the step's ``fields`` override any of them.
def _establish_connection(run: AcceptorRun, args: Mapping[str, Any]) -> Any:
    """2.2.2, as 3.1.5.2 builds it: the client's QueueManager.Identifier, no server GUID yet."""
    return sp.establish_connection(run.client_guid, NULL_GUID, int(time.monotonic() * 1000) & 0xFFFFFFFF)


def _connection_parameters(run: AcceptorRun, args: Mapping[str, Any]) -> Any:
    """2.2.2.1, as 3.1.5.4 builds it: the client's timeouts and window (CLIENT_*)."""
    return sp.connection_parameters(CLIENT_RECOVERABLE_ACK_TIMEOUT, CLIENT_ACK_TIMEOUT, CLIENT_WINDOW)


def _session_ack(run: AcceptorRun, args: Mapping[str, Any]) -> Any:
    """2.2.3: what the client received and sent on this session so far."""
    return sp.session_ack(
        ack_sequence_number=run.received_user_messages % 0x10000,
        user_msg_sequence_number=run.user_messages_sent % 0x10000,
    )


def _order_ack(run: AcceptorRun, args: Mapping[str, Any]) -> Any:
    """2.2.4, to the acceptor's order_queue$ (PrivateQueueIdentifier 4): the client's last
    transactional message (TX_SEQUENCE_ID)."""
    return sp.order_ack(
        TX_SEQUENCE_ID, max(1, run.tx_number), source_qm=run.client_guid, destination_qm=run.server_guid
    )


def _final_ack(run: AcceptorRun, args: Mapping[str, Any]) -> Any:
    """2.2.5: ACK_RECEIVE of the acceptor's message 1."""
    number = max(1, run.tx_number)
    return sp.final_ack(
        TX_SEQUENCE_ID,
        number,
        number - 1,
        run.server_guid,
        1,
        source_qm=run.client_guid,
        destination_qm=run.server_guid,
    )


def _user_message(run: AcceptorRun, args: Mapping[str, Any]) -> Any:
    """A UserMessage Packet ([MS-MQMQ] 2.2.19-2.2.20) of the step's ``delivery`` and ``body``;
    a transactional one takes the client's next TxSequenceNumber."""
    delivery = DeliveryClass(args.get("delivery", "express"))
    body = args.get("body", "wire case")
    # [MS-MQMQ] 2.2.19.2: SentTime is the time the packet is sent, in seconds since
    # 1970; TimeToReachQueue (2.2.19.1) counts from it: the message is not expired
    headers = user_message(
        run.client_guid,
        run.server_guid,
        body.encode() if isinstance(body, str) else bytes(body),
        label="wire case",
        queue_id=run.queue_ids[delivery is DeliveryClass.transactional],
        message_id=next(run.message_ids),
        sent_time=int(time.time()) & 0xFFFFFFFF,
        delivery=delivery,
    )
    headers.BaseHeader.TimeToReachQueue = TIME_TO_REACH_QUEUE
    if delivery is not DeliveryClass.express:
        run.recoverable_sent = True
    if delivery is DeliveryClass.transactional:
        th = headers.TransactionHeader
        th.TxSequenceID = {"Ordinal": TX_SEQUENCE_ID & 0xFFFFFFFF, "TimeStamp": TX_SEQUENCE_ID >> 32}
        run.tx_number += 1
        th.TxSequenceNumber = run.tx_number
        th.PreviousTxSequenceNumber = run.tx_number - 1
    return headers


#: kind -> the headers the case's client builds for a ``send`` of it from what the run knows of
#: its session, for the kinds of packets.layout.SESSION_KINDS, in their order; a session kind
#: without an entry is sent as its neutral sample (packets.session.SAMPLES).
CLIENT_PACKETS: dict[PacketKind, Callable[[AcceptorRun, Mapping[str, Any]], Any]] = {
    PacketKind.EstablishConnection: _establish_connection,
    PacketKind.ConnectionParameters: _connection_parameters,
    PacketKind.SessionAck: _session_ack,
    PacketKind.OrderAck: _order_ack,
    PacketKind.FinalAck: _final_ack,
    PacketKind.UserMessage: _user_message,
}
_PACKETS = " | ".join(PACKET_KINDS)  # the kinds ``send`` takes: every session kind, and ``raw``


def client_packet(run: AcceptorRun, kind: PacketKind, args: Mapping[str, Any]) -> Any:
    """The headers of a ``kind`` packet as the case's client builds it (:data:`CLIENT_PACKETS`,
    else the kind's sample, ``packets.session.SAMPLES``)."""
    build = CLIENT_PACKETS.get(kind)
    if build is not None:
        return build(run, args)
    sample = sp.SAMPLES.get(kind)
    if sample is None:
        raise WireCaseError(f"a wire case cannot send a {kind} packet")
    return sample()


def _receive_defaults(args: Mapping[str, Any], expect: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "closed" not in expect and "timed_out" not in expect:
        out.update(closed=False, timed_out=False)
    if args.get("packet") and "closed" not in expect:
        out["kind"] = args["packet"]
    return out


class AcceptorRun(WireRun):
    """One case checking an acceptor: the simulated peer (``live`` None) or a live one."""

    side = "acceptor"

    def __init__(self, case: Any, options: Any, live: Any = None) -> None:
        super().__init__(case, options)
        self.live = live  # harness.cases.targets.live.LiveWireTarget, or None for the simulated peer
        # a live acceptor's timers run at the scale its target names (1: real durations)
        default = options.scale if options.scale is not None else DEFAULT_TIMER_SCALE
        scale = live.scale if live is not None else default
        self.acceptor_scale = scale
        self.initiator_scale = scale  # the case's client runs its timers as the acceptor does
        self.peer: Any = None
        self.address: tuple[str, int] = live.wire_address if live is not None else ("", 0)
        self.ping_address: tuple[str, int] | None = live.ping_address if live is not None else None
        # PrivateQueueIdentifier the case's UserMessages address: (express/recoverable, transactional)
        self.queue_ids: tuple[int, int] = (live.queue_id, live.tx_queue_id or 1) if live is not None else (1, 1)
        self.client: socket.socket | None = None
        self.client_closed = False
        self.framer = PacketFramer()
        self._unframed_at = 0  # index in the session's wire log of the last piece read
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
        self.wire_log: list[RecordedConnection] = []  # each connection, both directions (--record)

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        if self.live is None:
            self.peer = simulated_peer(self.behaviours, self.acceptor_scale)
            host, port = self.peer.address[:2]
            self.address = (str(host), int(port))
            self.ping_address = self.peer.ping_address

    def close(self) -> None:
        if self.client is not None:
            self._closing("c2s")
            with contextlib.suppress(OSError):
                self.client.close()
        if self.peer is not None:
            close_peer(self.peer)

    def sent_packets(self) -> list[tuple[float, bytes]]:
        """Every packet the harness sent, with the wall-clock time it was written."""
        return list(self.client_log)

    def recorded_connections(self) -> list[RecordedConnection]:
        """The case's TCP connections, as its client saw them (``--record``)."""
        return list(self.wire_log)

    def acceptor_violations(self) -> list[RuleViolation]:
        """The session rules the acceptor broke in its replies, as a passive Observer of each of the
        case's connections sees them (harness.session.Observer; a connection the acceptor or the
        case closed is ended, the open one is not).  What the case's own client broke, on purpose
        or not, is the client's (direction c2s) and is left out."""
        found: list[RuleViolation] = []
        for conn in self.wire_log:
            observer = Observer()
            for direction, data, ts in conn.packets:
                (observer.client_data if direction == "c2s" else observer.server_data)(data, ts)
            if conn.closed_by:
                observer.end()
            found += [v for v in observer.violations if v.direction == "s2c"]
        return found

    def observe_then(self) -> tuple[list[Failure], list[str]]:
        """``then.peer.violations``: each rule the acceptor broke in its replies that the case does
        not name is one difference, graded by the rule's requirement (harness.cases.violations)."""
        tp = (self.case.then or {}).get("peer") or {}
        if "violations" not in tp:
            return [], []
        return violation_failures(tp["violations"], self.acceptor_violations()), []

    def _closing(self, direction: str) -> None:
        """The current connection ends, its ``direction``'s side first (the first close counts)."""
        if self.wire_log and not self.wire_log[-1].closed_by:
            self.wire_log[-1].closed_by = direction

    # -- the hooks of WireRun -------------------------------------------------------------------------
    def connection_parameters(self) -> tuple[int | None, int, str]:
        headers = self.sent.get("ConnectionParameters")
        if headers is None:
            return CLIENT_RECOVERABLE_ACK_TIMEOUT, CLIENT_ACK_TIMEOUT, "to be sent"
        cp = headers.ConnectionParametersHeader
        return int(cp.RecoverableAckTimeout), int(cp.AckTimeout), "sent"

    def recoverable(self) -> bool:
        return self.recoverable_sent

    def transactional_count(self) -> int:
        return self.tx_number

    @action(
        "wait_for",
        sides=("acceptor",),
        optional={"closed": "integer: wait until the acceptor has closed the connection"},
        defaults=lambda args, expect: {"satisfied": True},
        nothing=("satisfied", False),
        result={"satisfied": "boolean"},
    )
    def wait_for(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Wait until the acceptor closed the case's connection."""
        seconds, self.waited = self.bound(args)
        return {"satisfied": self._client_wait_closed(seconds)}

    # -- actions ----------------------------------------------------------------------------------------
    def _connect(self) -> socket.socket:
        if self.client is None:
            try:
                self.client = socket.create_connection(self.address, timeout=CONNECT_TIMEOUT)
            except OSError as e:
                raise WireCaseError(
                    f"cannot connect to the acceptor at {self.address[0]}:{self.address[1]}: {e}"
                ) from e
            here = self.client.getsockname()
            self.wire_log.append(
                RecordedConnection(
                    (str(here[0]), int(here[1])), (str(self.address[0]), int(self.address[1])), opened=time.time()
                )
            )
        return self.client

    @action(
        "send",
        sides=("acceptor",),
        required={"packet": _PACKETS},
        optional={
            "fields": "mapping: packet field path -> value ({received: Kind.Header.Field} copies a received one)",
            "hex": "text: the bytes of a raw packet",
            "count": "integer: send it this many times",
            "delivery": "express | recoverable | transactional (a UserMessage)",
            "body": "text: the message body (a UserMessage)",
            "new_connection": "boolean: close the connection first and open a new one",
        },
        defaults=lambda args, expect: {"sent": True},
        result={"sent": "boolean: written to the connection"},
    )
    def send(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Send a packet the case crafts to the acceptor."""
        renewed = False
        if args.get("new_connection") and self.client is not None:
            renewed = True
            self._closing("c2s")
            with contextlib.suppress(OSError):
                self.client.close()
            self.client, self.client_closed, self.inbox = None, False, []
            self.framer = PacketFramer()
            self.user_messages_sent = self.received_user_messages = self.tx_number = 0  # a new session
            self.recoverable_sent = False
            self.peer_acked = 0
        try:
            sock = self._connect()
        except WireCaseError:
            if not renewed:
                raise
            return {"sent": False}  # the acceptor stopped accepting connections during the case
        kind = args["packet"]
        for _ in range(int(args.get("count", 1))):
            if kind == PacketKind.UserMessage and not self._window_room(self._client_window(), args):
                return {"sent": False}  # the acceptor acknowledged nothing within SessionAckSend
            if kind == RAW:
                data = bytes.fromhex(str(args["hex"]).replace(" ", ""))
            else:
                headers = client_packet(self, PacketKind(kind), args)
                for path, value in (args.get("fields") or {}).items():
                    if isinstance(value, Mapping) and set(value) == {"received"}:
                        value = self.received_value(str(value["received"]))
                    set_field(headers, path, value)
                data = packets.build(headers)
                self.sent[kind] = headers
                if kind == PacketKind.UserMessage:
                    self.user_messages_sent += 1
            try:
                now = time.time()
                self.client_log.append((now, data))
                self.wire_log[-1].packets.append(("c2s", data, now))
                sock.sendall(data)
            except OSError:
                self.client_closed = True
                self._closing("s2c")
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
            if not self._fill(end - time.monotonic()) and not self._synced_fill():
                return None, self.client_closed
        return self.inbox.pop(0), False

    def _synced_fill(self) -> bool:
        """The bound ran out with nothing read: the simulated peer (in this process) first takes in
        what reached it by now and answers what was due (harness.peers.server.SimulatedPeer.sync),
        then what it sent is read: its answers are judged, not how late the loaded machine let its
        loop run.  Not for a step that expects nothing (what is due after its bound must not show),
        nor for a live acceptor (False)."""
        if self.peer is None or self.quiet or self.client_closed:
            return False
        if not self.peer.sync(SYNC):
            raise WireCaseError(f"the simulated acceptor did not take in what reached it within {SYNC:g} s")
        return self._fill(0.0)

    def _fill(self, timeout: float) -> bool:
        """Read what the acceptor sent into the inbox (waiting at most ``timeout`` seconds); False
        when nothing came (the time ran out or the connection closed).  A time already run out
        still reads what had arrived: the bound is on the acceptor, not on how soon this thread
        ran again."""
        if self.client_closed:
            return False
        sock = self._connect()
        sock.settimeout(max(0.0, timeout))  # 0: what is there, without waiting
        try:
            data = sock.recv(65536)
        except (TimeoutError, BlockingIOError):
            return False
        except OSError:
            data = b""
        if not data:
            self.client_closed = True
            self._closing("s2c")
            return False
        now = time.time()
        chunks = self.framer.feed(data)
        logged = self.wire_log[-1].packets
        if not chunks and self.framer.unframed is not None:  # the lost stream's piece grew
            _, _, first = logged[self._unframed_at]
            logged[self._unframed_at] = ("s2c", self.framer.unframed, first)
        for chunk in chunks:
            self._note_ack(chunk)
            self._unframed_at = len(logged)
            logged.append(("s2c", chunk, now))
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
        unacknowledged; it waits for the acceptor's acknowledgment within SessionAckSend (the
        simulated acceptor synced once the bound ran out, as :meth:`_read_packet` does: an
        acknowledgment it owed for what reached it counts, however late its loop ran)."""
        if self.user_messages_sent - self.peer_acked < window:
            return True
        seconds, self.waited = self.bound({"within": "SessionAckSend"})
        end = time.monotonic() + seconds
        while self.user_messages_sent - self.peer_acked >= window:
            if not self._fill(end - time.monotonic()) and not self._synced_fill():
                return False
        return True

    def _client_wait_closed(self, timeout: float) -> bool:
        """Read until the acceptor closes the connection or ``timeout`` runs out; once it has,
        what had arrived still counts (at most :data:`DRAIN_PACKETS` more packets: an acceptor
        that keeps sending never closes)."""
        end = time.monotonic() + timeout
        late = 0
        while not self.client_closed and late <= DRAIN_PACKETS:
            data, closed = self._read_packet(max(0.0, end - time.monotonic()))
            if data is None and not closed:
                break
            late += time.monotonic() >= end
        return self.client_closed

    @action(
        "receive",
        sides=("acceptor",),
        optional={
            "packet": f"{_PACKETS}: the kind expected",
            "skip": "list of packet kinds to read past",
            "until": "mapping: field path -> value; read past packets that do not match",
        },
        defaults=_receive_defaults,
        nothing=("timed_out", True),
        result={"kind": "text: the kind of the packet read", "closed": "boolean", "timed_out": "boolean"},
    )
    def receive(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Read the acceptor's next packet; the step's expectations read its fields by path."""
        timeout, self.waited = self.bound(args)
        skip = set(args.get("skip") or [])
        end = time.monotonic() + timeout
        late: bytes | None = None  # read after the bound ran out, and ``until`` did not match it
        drained = 0
        while True:
            read, closed = self._read_packet(max(0.0, end - time.monotonic()))
            if read is None:
                if late is None:
                    self.last_packet = None
                    return {"closed": closed, "timed_out": not closed}
                data = late  # nothing more had arrived: the last one read is the one the expectations show
            else:
                data = read
                if kind_of(data) in skip:
                    continue
                until = args.get("until")
                if until and not self._satisfies(data, until):
                    if time.monotonic() < end:
                        continue
                    if drained < DRAIN_PACKETS:  # a packet that had arrived when the bound ran out still counts
                        late, drained = data, drained + 1
                        continue
            kind = kind_of(data)
            self.last_packet = data
            self.received[kind] = data
            if kind in USER_MESSAGE_KINDS:  # counted alike ([MS-MQQB] 3.1.1.4)
                self.received_user_messages += 1
            if kind == PacketKind.EstablishConnection:
                with contextlib.suppress(Exception):
                    self.server_guid = GUID(packets.parse(data, strict=False).EstablishConnectionHeader.ServerGuid)
            return {"closed": False, "timed_out": False, "kind": kind}

    @action(
        "ping",
        sides=("acceptor",),
        optional={"Cookie": "integer", "RC": "0 or 1", "Signature": "integer: a wrong Signature to send"},
        defaults=lambda args, expect: {"answered": True},
        nothing=("answered", False),
        result={"answered": "boolean"},
    )
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
        self.sent[PacketKind.Ping] = request
        host = self.ping_address[0]
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.sendto(data, self.ping_address)
            end = time.monotonic() + timeout
            while True:  # a response that had come when the bound ran out still counts
                udp.settimeout(max(0.0, end - time.monotonic()))
                try:
                    reply = udp.recv(2048)
                except (TimeoutError, BlockingIOError):
                    break
                except OSError:  # e.g. ICMP port unreachable: no response
                    break
                self.last_ping = reply
                return {"answered": True}
        self.last_ping = None
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
        if kind == PacketKind.Ping:  # a UDP Ping Packet (2.2.7): its one header is named Ping too
            return field_value(packets.parse_ping(packets.build_ping(headers), strict=False), path)[1]
        packet = packets.parse(packets.build(headers), strict=False)
        return field_value(packet, rest)[1]
