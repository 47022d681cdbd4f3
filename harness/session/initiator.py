"""The initiator end of an MSMQ binary session (sans-IO): establishment, sending, acknowledgments.

Renders [MS-MQQB] 3.1.5.2 Establish a Protocol Session (3.1.5.2.1 Resolve Host Address,
3.1.5.2.2 Ping Mechanism, optional; 3.1.5.2.3 Sending an EstablishConnection Request Packet),
3.1.5.3.2 Receiving an EstablishConnection Response, 3.1.5.4.2 Receiving a ConnectionParameters
Response, 3.1.3.2 Session Initialization, 3.1.7.12 Message Position Available, 3.1.7.1 Send User
Message Event (3.1.7.1.1 MessageID, 3.1.7.1.3 Updating the UserMessage Packet: 3.1.1.4 session and
3.1.1.5 transactional sequences), 3.1.5.5 Receiving a SessionAck Packet (3.1.5.5.1-3.1.5.5.5),
3.1.5.6 Receiving an OrderAck Packet, 3.1.5.7 Receiving a FinalAck Packet, the timers 3.1.6.1
(retry connect), 3.1.6.3 (Session Ack Wait), 3.1.6.5 (Transactional Ack Wait), 3.1.6.6 (Session
Initialization), and 3.1.5.9 Closing a Session with its ConnectionHistory entries on the
[MS-MQDMPR] 3.1.1.3 OutgoingQueue.  One Initiator object serves one OutgoingQueue across
reconnections.  What it keeps of the session is bounded by constants, not by the packets: the
MessageIDs and TxSequenceIDs it sent as ranges (:class:`harness.session.msgids.Ranges`; a FinalAck
or OrderAck naming one no longer known either way is judged by neither 3.1.5.7 nor 3.1.5.6) and
the latest packets received (:class:`harness.session.msgids.Latest`).
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from construct import Container

import packets
from harness.model.adm import ConnectionHistoryEntry, OutgoingQueue
from harness.model.enums import ConnectionStatus, OutgoingQueueState
from harness.session.actions import (
    Acked,
    Action,
    Connect,
    Deliver,
    DeliveryClass,
    Send,
    SendPing,
    SessionConfig,
    SessionError,
    SessionState,
    Timer,
)
from harness.session.core import ACK_FLAG_BITS, U16, SessionEngine, check_cp_response, check_ec_response, tx_sequence_id
from harness.session.messages import MessageTemplate, prepare_message
from harness.session.msgids import Latest, Ranges
from harness.session.rules import RuleId
from harness.session.transitions import Role
from packets import GUID, NULL_GUID, Packet, PacketKind, base
from packets import session as sp

__all__ = ["MQ_ERROR_RESOLVE_ADDRESS", "Initiator", "OutgoingMessagePosition", "destination_host_name"]

MQ_ERROR_RESOLVE_ADDRESS = 0xC00E0099  # the HRESULT of a DnsFailure ConnectionHistory entry


def destination_host_name(address: str) -> str:
    """destinationHostName ([MS-MQQB] 3.1.5.2.1) of a RemoteQMAddress: ``host``, ``host:port``,
    ``[v6]:port`` or ``mqqb://host:port`` give ``host`` (an IPv6 literal without its brackets)."""
    text = address.removeprefix("mqqb://").rstrip("/")
    if text.startswith("["):
        return text[1:].partition("]")[0]
    host, sep, port = text.rpartition(":")
    if sep and port.isdigit() and ":" not in host:
        return host
    return text


class OutgoingMessagePosition:
    """OutgoingMessagePosition ADM element ([MS-MQQB] 3.1.1.3.1.2), with the spec's attribute names.

    ``MessagePosition`` is the [MS-MQDMPR] MessagePosition it stands for (None when a message was
    handed to :meth:`Initiator.send_message` directly).  Python-only: ``message_id`` (the
    UserHeader.MessageID that keys the OutgoingMessageTable), ``delivery`` (express, recoverable or
    transactional, from UserHeader.Flags.DM and the TransactionHeader), ``tx_numbered`` (the
    TransactionHeader numbers were assigned on a first transmission, kept across sessions) and
    ``wire`` (the UserMessage encoded when it joined the table, without a piggy-backed
    SessionHeader: what each transmission of an express or recoverable message sends unless it
    carries one; None for a transactional message, whose TransactionHeader is filled when sent).

    A position of :meth:`Initiator.send_bodies` holds its ``template`` (a
    :class:`~harness.session.messages.MessageTemplate`) and ``body``; its ``UserMessage`` headers
    are made from them (with its MessageID) the first time they are read.  The attributes not
    given to the constructor have the class's defaults (every flag False, every number 0).
    """

    MessagePosition: Any = None
    SequenceNumber: int = 0
    RecoverableSequenceNumber: int = 0
    TxSequenceNumber: int = 0
    AwaitingAck: bool = False
    ReceivedSessionAck: bool = False
    ReceivedOrderAck: bool = False
    Transmitted: bool = False
    message_id: int = 0
    delivery: DeliveryClass = DeliveryClass.express
    tx_numbered: bool = False
    wire: bytes | None = None
    template: MessageTemplate | None = None
    body: bytes = b""
    _user_message: Container | None = None

    _FIELDS = (
        "MessagePosition",
        "UserMessage",
        "SequenceNumber",
        "RecoverableSequenceNumber",
        "TxSequenceNumber",
        "AwaitingAck",
        "ReceivedSessionAck",
        "ReceivedOrderAck",
        "Transmitted",
        "message_id",
        "delivery",
        "tx_numbered",
        "wire",
    )
    _SETTABLE = frozenset(_FIELDS) - {"UserMessage"} | {"template", "body"}

    def __init__(self, *, UserMessage: Container | None = None, **fields: Any) -> None:
        if UserMessage is not None:
            self._user_message = UserMessage
        if fields:
            unknown = fields.keys() - self._SETTABLE
            if unknown:
                raise TypeError(f"OutgoingMessagePosition has no attribute {sorted(unknown)[0]!r}")
            self.__dict__.update(fields)
        if UserMessage is None and self.template is None:
            raise TypeError("OutgoingMessagePosition needs UserMessage (or a template and a body)")

    @classmethod
    def of_body(
        cls, template: MessageTemplate, body: bytes, message_id: int, wire: bytes | None
    ) -> OutgoingMessagePosition:
        """The position of one body of ``template`` (its headers made when read)."""
        pos = cls.__new__(cls)
        pos.template = template
        pos.body = body
        pos.message_id = message_id
        pos.delivery = template.delivery
        pos.wire = wire
        return pos

    @property
    def UserMessage(self) -> Container:
        """The headers of the UserMessage Packet this position sends."""
        headers = self._user_message
        if headers is None:
            assert self.template is not None
            headers = self._user_message = self.template.message(self.body, self.message_id)
        return headers

    @UserMessage.setter
    def UserMessage(self, headers: Container) -> None:
        self._user_message = headers

    @property
    def has_headers(self) -> bool:
        """The UserMessage headers exist (given, or made from the template since)."""
        return self._user_message is not None

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._FIELDS)
        return f"OutgoingMessagePosition({fields})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]


class Initiator(SessionEngine):
    """The initiator: connects, establishes the session, sends UserMessages within the window.

    Events: ``start()``, ``ping_response(datagram)``, ``resolve_host_address_failed(error)``,
    ``connection_made()``, ``connection_failed(status)``, ``receive_data(bytes)``,
    ``send_message(message, delivery)``, ``timer_fired(name)``, ``connection_lost()``; each returns
    actions.  Messages leave the OutgoingMessageTable through :class:`Acked` actions carrying their
    UserHeader.MessageID.
    """

    role = "initiator"
    peer_direction = "s2c"

    ROLE: Role = "initiator"  # its rows of the transition table (harness.session.transitions)

    def __init__(
        self,
        identifier: GUID | bytes | str,
        remote_qm: GUID | bytes | str = NULL_GUID,
        *,
        outgoing_queue: OutgoingQueue | None = None,
        address: str = "",
        ping: bool = False,
        config: SessionConfig | None = None,
        clock: Callable[[], float] = lambda: 0.0,
        tx_sequence_id: int = 1,
        wall_clock: Callable[[], float] | None = None,
    ) -> None:
        super().__init__(identifier, config, clock, wall_clock)
        self.OutgoingQueueReference = outgoing_queue if outgoing_queue is not None else OutgoingQueue("outgoing")
        self.OutgoingMessageTable: dict[int, OutgoingMessagePosition] = self.OutgoingQueueReference.OutgoingMessageTable
        self.target_qm = GUID(remote_qm)  # destinationQmGuid (NULL for a direct format name)
        self.RemoteQMGuid = self.target_qm
        self.RemoteQMAddress = address
        self.ping = ping
        self.UnAckedMessageCount = 0
        self.MessageIdOrdinal = 1
        self.OutgoingTxSequenceID = tx_sequence_id  # u64: Ordinal low, TimeStamp high
        self.OutgoingTxSequenceNumber = 1
        self.UnackedSequence: list[int] = []  # TxOutgoingSequence.UnackedSequence (SeqNo values)
        self.LastAckSeqNo = 0  # TxOutgoingSequence.LastAck.SeqNo
        self.ResendIntervalIndex = 0
        # TxSequenceIDs and MessageIDs sent, as ranges (both are assigned in sequence: bounded)
        self.used_tx_sequence_ids = Ranges()
        self.sent_message_ids = Ranges()
        self.final_acks: list[Packet] = Latest()  # python-only: the latest FinalAcks received
        self.received: list[Packet] = Latest()  # python-only: the latest UserMessages received
        self._dispatch: deque[int] = deque()
        self._sent: dict[int, OutgoingMessagePosition] = {}  # sent on this session (SequenceNumber != 0)
        self._tx_numbers: list[int] = []  # TxSequenceNumbers in the table, sorted
        self._ec_request: Container | None = None
        self._cp_request: Container | None = None
        self._connecting = False
        self._failure_recorded = False
        self._ping_sent = False  # a Ping Request went out for the session being created (2.2.3.1 SE)
        self._ping_cookie = 0
        self._acked: list[int] = []
        self._acked_by = "SessionAck"
        self.SessionState = SessionState.CLOSED

    # -- readings: where the initiator takes its reading of an interpretation -------------------

    def entry_after_establish_steps(self) -> bool:
        """MQQB-3.1.5.2-ENTRY-AFTER-ESTABLISH-STEPS (3.1.5.2: "If the session cannot be established
        ... due to an error in these steps, the protocol MUST append an entry"): whether a session
        that fails after 3.1.5.2.1-3.1.5.2.3 (a refused or invalid EstablishConnection response, the
        Session Initialization Timer, a close before OPEN) appends a failure entry too.  The
        reference (entry): True; False appends nothing (3.1.5.9 closes the session)."""
        return True

    def retries_after_connect_failure(self) -> bool:
        """MQQB-3.1.5.2-RETRY-AFTER-CONNECT-FAILURE: whether a transport connection that cannot be
        made (3.1.5.2.3) starts the Session Retry Connect Timer while messages wait.  The reference
        (retry): True, the failed session is closed as 3.1.5.9 says; False only appends the entry."""
        return True

    def resolve_failure_as_lookup_failure(self) -> bool:
        """MQQB-3.1.5.2.1-RESOLVE-FAILURE: whether a destinationHostName that resolves to no address
        takes 3.1.5.2.1's failure steps (the Session Retry Connect Timer, State NeedValidation)
        besides 3.1.5.2's DnsFailure entry.  The reference (as-lookup-failure): True; False appends
        the entry only."""
        return True

    def pings_on_retry(self) -> bool:
        """MQQB-3.1.5.2.2-NO-PING-ON-RETRY (3.1.5.2.2: "If the session is not being created in
        response to a Session Retry Connect Timer Event ..., the initiator MAY send a Ping
        Request"): whether a session the retry timer creates pings first too.  The reference
        (no-ping-on-retry): False."""
        return False

    def bad_padding_is_malformed(self) -> bool:
        """MQQB-3.1.5.1.3-BAD-PADDING (2.2.3.1 fills a response's Padding with 0x5A; 3.1.5.1.3
        discards "a request that does not conform to the structures specified in Messages"):
        whether an EstablishConnection response whose Padding is not all 0x5A is discarded and the
        session closed.  The reference (filler): False, it reports the padding and goes on."""
        return False

    # -- ConnectionHistory -------------------------------------------------------------------------

    def _history(self, status: ConnectionStatus, error: int = 0) -> None:
        """Append to OutgoingQueueReference.ConnectionHistory ([MS-MQQB] 3.1.5.2, [MS-MQDMPR] 3.1.1.3)."""
        self.OutgoingQueueReference.ConnectionHistory.append(
            ConnectionHistoryEntry(
                status, int(self.clock()), error, [self.RemoteQMAddress] if self.RemoteQMAddress else []
            )
        )

    def _set_queue_state(self, state: OutgoingQueueState) -> None:
        if self.OutgoingQueueReference.State is not OutgoingQueueState.OnHold:
            self.OutgoingQueueReference.State = state

    # -- 3.1.5.2 Establish a Protocol Session ------------------------------------------------------

    @property
    def destinationHostName(self) -> str:
        """[MS-MQQB] 3.1.5.2.1: the host name the wrapper resolves (the host of RemoteQMAddress)."""
        return destination_host_name(self.RemoteQMAddress)

    def start(self, retry: bool = False) -> list[Action]:
        """[MS-MQQB] 3.1.5.2: ping (3.1.5.2.2, unless skipped or a retry), then ask the wrapper to
        connect; the wrapper resolves :attr:`destinationHostName` (3.1.5.2.1) and reports a failure
        with ``resolve_host_address_failed``; EC goes out on ``connection_made``."""
        self._start(retry)
        return self._take()

    def _start(self, retry: bool = False) -> None:
        if self._transport or self._connecting:
            return
        self._connecting = True
        if self.ping and (not retry or self.pings_on_retry()):
            self._ping_cookie = (self._ping_cookie + 1) & 0xFFFFFFFF
            self._ping_sent = True
            self._out.append(SendPing(packets.build_ping(sp.ping(self._ping_cookie, self.identifier))))
            self._start_timer(Timer.PingResponse, self.config.ping_response)
        else:
            self._ping_sent = False
            self._out.append(Connect(self.RemoteQMAddress))

    def ping_response(self, datagram: bytes) -> list[Action]:
        """[MS-MQQB] 3.1.7.8 Receive Ping Response: a matching cookie without RF lets us connect."""
        if Timer.PingResponse not in self._timers:
            return self._take()
        try:
            reply = packets.parse_ping(datagram).headers.Ping
        except packets.PacketError:
            return self._take()
        if reply.Cookie != self._ping_cookie:
            return self._take()
        self._stop_timer(Timer.PingResponse)
        if reply.Flags.RF:
            self._ping_failed()
        else:
            self._out.append(Connect(self.RemoteQMAddress))
        return self._take()

    def _timer_PingResponse(self) -> None:
        """[MS-MQQB] 3.1.6.8 -> 3.1.5.2.2: no Ping Response: PingFailure."""
        self._ping_failed()

    def _ping_failed(self) -> None:
        self._connecting = False
        self._history(ConnectionStatus.PingFailure, 1)
        if self.OutgoingMessageTable:
            self._start_timer(Timer.SessionRetryConnect, self.config.session_retry_connect)
            self.SessionState = SessionState.WAITING_RECONNECT

    def resolve_host_address_failed(self, error: int = MQ_ERROR_RESOLVE_ADDRESS) -> list[Action]:
        """[MS-MQQB] 3.1.5.2.1 Resolve Host Address: destinationHostName resolved to no address, so
        the session cannot be established.  3.1.5.2: a ConnectionHistory entry whose Status describes
        the error, DnsFailure ([MS-MQDMPR] 3.1.1.3), Error an HRESULT, AddressList RemoteQMAddress.
        3.1.5.2.1's failure steps: with the OutgoingMessageTable not empty and the OutgoingQueue not
        OnHold, start the Session Retry Connect Timer (3.1.2.3) and set State to NeedValidation."""
        self._connecting = False
        self._history(ConnectionStatus.DnsFailure, error)
        if not self.resolve_failure_as_lookup_failure():
            return self._take()
        if self.OutgoingMessageTable and self.OutgoingQueueReference.State is not OutgoingQueueState.OnHold:
            self._start_timer(Timer.SessionRetryConnect, self.config.session_retry_connect)
            self.SessionState = SessionState.WAITING_RECONNECT
            self.OutgoingQueueReference.State = OutgoingQueueState.NeedValidation
        return self._take()

    def connection_failed(self, status: ConnectionStatus = ConnectionStatus.SocketConnectFailure) -> list[Action]:
        """The transport could not connect: 3.1.5.2's history entry and a retry (3.1.2.3)."""
        self._connecting = False
        self._history(status, 1)
        if self.OutgoingMessageTable and self.retries_after_connect_failure():
            self._start_timer(Timer.SessionRetryConnect, self.config.session_retry_connect)
            self.SessionState = SessionState.WAITING_RECONNECT
        return self._take()

    def connection_made(self) -> list[Action]:
        """The transport connected: [MS-MQQB] 3.1.3.2 Session Initialization, then 3.1.5.2.3 Sending
        an EstablishConnection Request Packet (WAITING_ECR_MSG, InProcess, Session Initialization Timer)."""
        self._connecting = False
        self._failure_recorded = False
        self._stop_timer(Timer.SessionRetryConnect)
        self._session_initialization()
        self.UnAckedMessageCount = 0
        self.LastAckSeqNo = 0
        self.ResendIntervalIndex = 0
        for pos in self.OutgoingMessageTable.values():
            pos.AwaitingAck = pos.ReceivedSessionAck = pos.ReceivedOrderAck = pos.Transmitted = False
            pos.SequenceNumber = pos.RecoverableSequenceNumber = 0
        self._sent = {}
        self.RemoteQMGuid = self.target_qm
        self._stop_timer(Timer.SessionInitialization)
        request = sp.establish_connection(
            self.identifier, self.RemoteQMGuid, int(self.clock() * 1000) & 0xFFFFFFFF, ping_sent=self._ping_sent
        )
        self._ec_request = request
        self._send_packet(request, PacketKind.EstablishConnection)
        self.SessionState = SessionState.WAITING_ECR_MSG
        self._history(ConnectionStatus.InProcess)
        self._start_timer(Timer.SessionInitialization, self.config.session_initialization)
        self._set_queue_state(OutgoingQueueState.Waiting)
        return self._take()

    def _on_EstablishConnection(self, packet: Packet, index: int) -> None:
        """[MS-MQQB] 3.1.5.3 / 3.1.5.3.2 Receiving an EstablishConnection Response Packet."""
        if not self._accepts(PacketKind.EstablishConnection, packet, index):
            return
        ec = packet.EstablishConnectionHeader
        findings = check_ec_response(self._ec_request, packet)
        if self._report(findings, index):
            return
        if self.bad_padding_is_malformed() and any(r == RuleId.MQQB_2_2_3_1_RESPONSE_PADDING for r, _ in findings):
            self._close("EstablishConnection response Padding not 0x5A: discarded", "MS-MQQB 3.1.5.1.3")
            return
        refused = bool(packet.InternalHeader.Flags.CS)
        server = GUID(ec.ServerGuid)
        expected = self.RemoteQMGuid
        valid = GUID(ec.ClientGuid) == self.identifier and (expected.is_null or server == expected) and not refused
        if not valid:
            why = (
                "CS=1: connection refused"
                if refused
                else f"ClientGuid {GUID(ec.ClientGuid)} / ServerGuid {server} "
                f"do not match {self.identifier} / {expected}"
            )
            self._failed_establishment(
                ConnectionStatus.ConnectionRefused if refused else ConnectionStatus.UnknownFailure
            )
            if refused:  # a refusal breaks no rule; 3.1.5.3.2 discards the response and closes
                self._close(why, "MS-MQQB 3.1.5.3.2")
            else:  # the rule closes (3.1.5.3.2)
                self._violation(RuleId.MQQB_3_1_5_3_2_EC_RESPONSE, why, index)
            return
        if expected.is_null:
            self.RemoteQMGuid = server  # a direct format name: the acceptor names itself
        rtt_ms = int(self.clock() * 1000) - int(ec.TimeStamp)
        self.RecoverableAckSendTimeout = min(
            max(rtt_ms * 8, sp.RECOVERABLE_ACK_TIMEOUT_RANGE[0]), sp.RECOVERABLE_ACK_TIMEOUT_RANGE[1]
        )
        request = sp.connection_parameters(self.RecoverableAckSendTimeout, self.AckWaitTimeout, self.WindowSize)
        self._cp_request = request
        self._send_packet(request, PacketKind.ConnectionParameters)
        self.SessionState = SessionState.WAITING_CPR_MSG
        self._history(ConnectionStatus.EstablishPacketReceived)

    def _on_ConnectionParameters(self, packet: Packet, index: int) -> None:
        """[MS-MQQB] 3.1.5.4 / 3.1.5.4.2 Receiving a ConnectionParameters Response Packet: OPEN."""
        if not self._accepts(PacketKind.ConnectionParameters, packet, index):
            return
        if self._report(check_cp_response(self._cp_request, packet), index):
            return
        self.ReceivedWindowSize = max(1, int(packet.ConnectionParametersHeader.WindowSize))
        self.OutgoingQueueReference.NextHops = [self.RemoteQMAddress] if self.RemoteQMAddress else []
        self._stop_timer(Timer.SessionInitialization)
        self.SessionState = SessionState.OPEN
        self._history(ConnectionStatus.Established)
        self._set_queue_state(OutgoingQueueState.Connected)
        self._redispatch_all()
        self._send_pending()

    def _failed_establishment(self, status: ConnectionStatus) -> None:
        self._failure_recorded = True
        if self.entry_after_establish_steps():
            self._history(status, 1)

    # -- 3.1.7.12 / 3.1.7.1 sending ------------------------------------------------------------------

    def send_message(
        self, message: Packet | Mapping[str, Any] | bytes, delivery: DeliveryClass | str = DeliveryClass.express
    ) -> list[Action]:
        """A message for this queue without the [MS-MQDMPR] model: what [MS-MQQB] 3.1.7.12 Message
        Position Available does (connect when ConnectionHistory is empty, add an
        OutgoingMessagePosition) followed by 3.1.7.16/3.1.7.1 (dispatch, send within the window).
        :class:`~harness.session.outgoing.OutgoingQueueProcessing` does the same steps through the
        model.  ``last_message_id`` holds the UserHeader.MessageID used."""
        if type(delivery) is not DeliveryClass:
            delivery = DeliveryClass(delivery)
        self._position_available(
            OutgoingMessagePosition(UserMessage=prepare_message(message, delivery), delivery=delivery)
        )
        self._send_pending()
        return self._take()

    def _position_available(self, pos: OutgoingMessagePosition) -> None:
        """3.1.7.12 without the model: connect when ConnectionHistory is empty, add ``pos`` to the
        OutgoingMessageTable, and to the dispatch collection."""
        if not self.OutgoingQueueReference.ConnectionHistory:
            self._start()
        self.add_outgoing_message_position(pos)
        self._dispatch.append(pos.message_id)

    def send_bodies(self, template: MessageTemplate, bodies: Iterable[bytes]) -> list[Action]:
        """One message of ``template`` per body, in order: for each what :meth:`send_message` does
        with ``template.message(body)`` and ``template.delivery`` (connect when ConnectionHistory is
        empty, an OutgoingMessagePosition with the next MessageIdOrdinal (3.1.7.1.1) in the
        OutgoingMessageTable, dispatch), then 3.1.7.1 sends what the window allows.  The bytes sent
        are the same; an express or recoverable message is encoded from the template's bytes and
        its headers are made only when read (:attr:`OutgoingMessagePosition.UserMessage`).
        ``last_message_id`` holds the last UserHeader.MessageID used."""
        codec = template.codec
        if codec is None:  # transactional: headers of its own per message
            for body in bodies:
                self._position_available(
                    OutgoingMessagePosition(UserMessage=template.message(body), delivery=template.delivery)
                )
            self._send_pending()
            return self._take()
        if not self.OutgoingQueueReference.ConnectionHistory:
            self._start()
        table, dispatch, encode = self.OutgoingMessageTable, self._dispatch, codec.build
        of_body = OutgoingMessagePosition.of_body
        message_id = self.MessageIdOrdinal
        try:
            for body in bodies:
                if type(body) is not bytes:  # a caller's buffer may change after the call
                    body = bytes(body)
                mid = message_id
                message_id += 1
                if mid in table:
                    raise SessionError(f"MessageID {mid} is already in the OutgoingMessageTable")
                table[mid] = of_body(template, body, mid, encode(mid, body))
                dispatch.append(mid)
                self.last_message_id = mid
        finally:
            self.MessageIdOrdinal = message_id
        self._send_pending()
        return self._take()

    def establish_a_protocol_session(self) -> list[Action]:
        """[MS-MQQB] 3.1.5.2 Establish a Protocol Session (unless one is open or being opened)."""
        if not self._transport:
            self._start()
        return self._take()

    def add_outgoing_message_position(self, pos: OutgoingMessagePosition) -> None:
        """Add ``pos`` to the OutgoingMessageTable ([MS-MQQB] 3.1.7.12).  A UserHeader.MessageID of
        0 gets MessageIdOrdinal here, once, rather than at its first transmission (3.1.7.1.1): the
        table is keyed by it, and retransmissions keep it."""
        headers = pos.UserMessage
        uh = headers["UserHeader"]
        if not uh["MessageID"]:
            uh["MessageID"] = self.MessageIdOrdinal
            self.MessageIdOrdinal += 1
        message_id = int(uh["MessageID"])
        if message_id in self.OutgoingMessageTable:
            raise SessionError(f"MessageID {message_id} is already in the OutgoingMessageTable")
        if pos.delivery is not DeliveryClass.transactional:
            pos.wire = self._encode(headers)
        pos.message_id = message_id
        self.last_message_id = message_id
        self.OutgoingMessageTable[message_id] = pos

    def send_user_message_event(self, pos: OutgoingMessagePosition) -> list[Action]:
        """[MS-MQQB] 3.1.7.1 Send User Message Event for ``pos``: it joins this session's dispatch
        order and goes out now if OutgoingQueueReference.State is Connected and UnAckedMessageCount
        < WindowSize, else when the session opens or the window has room."""
        self._dispatch.append(pos.message_id)
        self._send_pending()
        return self._take()

    def _redispatch_all(self) -> None:
        """Add Message To Dispatch Collection for every position in table order (3.1.6.1, 3.1.6.5)."""
        self._dispatch = deque(
            mid for mid, pos in self.OutgoingMessageTable.items() if not pos.AwaitingAck and not pos.ReceivedSessionAck
        )

    @property
    def send_window(self) -> int:
        """The window the sender works with: its WindowSize, narrowed by the peer's advertised one."""
        return max(1, min(self.WindowSize, self.ReceivedWindowSize))

    def _send_pending(self) -> None:
        """[MS-MQQB] 3.1.7.1 Send User Message Event for the dispatch collection, in order, while
        OutgoingQueueReference.State is Connected and UnAckedMessageCount < WindowSize.  Sending
        changes neither the state, the queue's State nor the window, so they are read once."""
        dispatch = self._dispatch
        if not (dispatch and self._transport and self.SessionState is SessionState.OPEN):
            return
        if self.OutgoingQueueReference.State is not OutgoingQueueState.Connected:
            return
        window = self.send_window
        table = self.OutgoingMessageTable
        send = self._send_user_message
        while dispatch and self.UnAckedMessageCount < window:
            pos = table.get(dispatch.popleft())
            if pos is None or pos.AwaitingAck or pos.ReceivedSessionAck:  # not eligible
                continue
            send(pos)

    def _send_user_message(self, pos: OutgoingMessagePosition) -> None:
        """[MS-MQQB] 3.1.7.1.3 Updating the UserMessage Packet and 3.1.7.1.6 Sending the Packet."""
        delivery = pos.delivery
        if delivery is DeliveryClass.transactional:
            th = pos.UserMessage.TransactionHeader
            if not pos.tx_numbered:
                seq_id = self.OutgoingTxSequenceID
                th.TxSequenceID = Container(Ordinal=seq_id & 0xFFFFFFFF, TimeStamp=seq_id >> 32)
                th.PreviousTxSequenceNumber = self.OutgoingTxSequenceNumber - 1
                th.TxSequenceNumber = self.OutgoingTxSequenceNumber
                pos.TxSequenceNumber = self.OutgoingTxSequenceNumber
                bisect.insort(self._tx_numbers, pos.TxSequenceNumber)
                self.UnackedSequence.append(self.OutgoingTxSequenceNumber)
                self.used_tx_sequence_ids.add(seq_id)
                self.OutgoingTxSequenceNumber += 1
                pos.tx_numbered = True
            else:  # a retransmission bridges gaps left by removed messages
                k = bisect.bisect_left(self._tx_numbers, pos.TxSequenceNumber)
                if k:
                    th.PreviousTxSequenceNumber = self._tx_numbers[k - 1]
            self._start_if_stopped(Timer.TransactionalAckWait, self._resend_interval())
        c = self.counters
        sent = c.MessageSentCount = c.MessageSentCount + 1
        pos.SequenceNumber = sent % U16 or U16
        if delivery is not DeliveryClass.express:
            c.RecoverableMessageSentCount += 1
            pos.RecoverableSequenceNumber = c.RecoverableMessageSentCount % U16 or U16
        self.UnAckedMessageCount += 1
        pos.AwaitingAck = True
        if Timer.SessionAckWait not in self._timers:
            self._start_timer(Timer.SessionAckWait, self._ack_wait_seconds())
        self.SessionActive = True
        message_id = pos.message_id
        self._sent[message_id] = pos
        data = pos.wire
        # 3.1.7.11: only a packet owing an acknowledgment, or one that carried one before, is looked at
        if ((c.UnackedReceivedMsgCount or pos._user_message is not None) and self._piggy_back(pos)) or data is None:
            data = self._encode(pos.UserMessage)
        self._out.append(Send(data, PacketKind.UserMessage))
        self.sent_message_ids.add(message_id)
        pos.Transmitted = True

    def _piggy_back(self, pos: OutgoingMessagePosition) -> bool:
        """[MS-MQQB] 3.1.7.11: "If more than 75 percent of the time on the Session Ack Send Timer
        (section 3.1.2.5) has elapsed and the UnackedReceivedMsgCount ADM element does not equal
        0x0000", the UserMessage Packet carries a SessionHeader acknowledging what was received
        (AckSequenceNumber := MessageReceivedCount, UserMsgSequenceNumber := MessageSentCount, its
        own packet counted, ...), BaseHeader.Flags.SH is set, RecoverableMsgAckFlags and
        UnackedReceivedMsgCount become 0, LastAckedRecoverableMsgSeqNumber :=
        RecoverableMessageReceivedCount, and the Session Ack Send Timer is restarted.  The packet is
        constructed when the message becomes available, long before it is sent; the test is made
        when it is sent, the moment the acknowledgment goes out.  A retransmission carries no
        acknowledgment it does not owe.  True when the packet carries a SessionHeader."""
        due = self.counters.UnackedReceivedMsgCount != 0 and self._elapsed_fraction(Timer.SessionAckSend) > 0.75
        if not due:
            if pos.has_headers:  # headers not made yet never carried one
                headers = pos.UserMessage
                if headers.get("SessionHeader") is not None:
                    headers.SessionHeader = None
                    headers.BaseHeader.Flags = base.BaseHeaderFlags.make(int(headers.BaseHeader.Flags), SH=0)
            return False
        headers = pos.UserMessage
        flags = int(headers.BaseHeader.Flags)
        seconds = self._timer_started[Timer.SessionAckSend][1]
        headers.SessionHeader = self._session_header()
        headers.BaseHeader.Flags = base.BaseHeaderFlags.make(flags, SH=1)
        self._last_ack_sent = self.counters.MessageReceivedCount
        self.counters.acknowledged()
        self._stop_timer(Timer.SessionAckSend)
        self._start_timer(Timer.SessionAckSend, seconds)
        return True

    def _ack_wait_seconds(self) -> float:
        return self.config.ack_wait_multiple * self.AckWaitTimeout / 1000

    def _resend_interval(self) -> float:
        table = self.config.resend_intervals
        return table[min(self.ResendIntervalIndex, len(table) - 1)]

    # -- 3.1.5.5 SessionAck ------------------------------------------------------------------------

    def _session_acknowledged(self, sh: Container) -> None:
        """[MS-MQQB] 3.1.5.5.1 Mark, 3.1.5.5.2 Delete express, 3.1.5.5.3 Delete recoverable."""
        ack = int(sh.AckSequenceNumber)
        base, flags = int(sh.RecoverableMsgAckSeqNumber), int(sh.RecoverableMsgAckFlags)
        done: list[int] = []
        express, recoverable = DeliveryClass.express, DeliveryClass.recoverable
        for mid, pos in self._sent.items():
            if not pos.ReceivedSessionAck and pos.AwaitingAck and pos.SequenceNumber <= ack:
                pos.ReceivedSessionAck = True
                pos.AwaitingAck = False
                self.UnAckedMessageCount -= 1
            delivery = pos.delivery
            if delivery is express:
                if pos.ReceivedSessionAck:
                    done.append(mid)
            elif delivery is recoverable:
                r = pos.RecoverableSequenceNumber  # acknowledged: up to base, or its bit of the flags
                if r and (r <= base or (r - base < ACK_FLAG_BITS and flags >> (r - base) & 1)):
                    done.append(mid)
            elif pos.ReceivedSessionAck and pos.ReceivedOrderAck:
                done.append(mid)
        self._delete(done, "SessionAck")

    def _delete(self, message_ids: list[int], by: str) -> None:
        for mid in message_ids:
            pos = self.OutgoingMessageTable.pop(mid)
            self._sent.pop(mid, None)
            if pos.TxSequenceNumber:
                k = bisect.bisect_left(self._tx_numbers, pos.TxSequenceNumber)
                if k < len(self._tx_numbers) and self._tx_numbers[k] == pos.TxSequenceNumber:
                    del self._tx_numbers[k]
            if pos.AwaitingAck and not pos.ReceivedSessionAck:
                self.UnAckedMessageCount -= 1
        if message_ids:
            self._out.append(Acked(tuple(message_ids), by))

    def _after_session_ack(self) -> None:
        """3.1.5.5.5: restart the Session Ack Wait Timer while messages await acknowledgment; then
        the window may have room (3.1.7.1)."""
        if self.UnAckedMessageCount > 0:  # a message AwaitingAck
            self._stop_timer(Timer.SessionAckWait)
            self._start_timer(Timer.SessionAckWait, self._ack_wait_seconds())
        self._send_pending()

    # -- 3.1.5.6 / 3.1.5.7 ---------------------------------------------------------------------------

    def _on_OrderAck(self, packet: Packet, index: int) -> None:
        """[MS-MQQB] 3.1.5.6 Receiving an OrderAck Packet."""
        if not self._accepts(PacketKind.OrderAck, packet, index):
            return
        self._count_received(packet, recoverable=False)  # an express UserMessage Packet (3.1.1.4)
        body = packet.body
        if body is None:  # 2.2.4.1: an OrderAck carries its body (the rule closes, 3.1.5.1.3)
            self._violation(RuleId.MQQB_3_1_5_1_3_MALFORMED, "OrderAck Packet without an OrderAck Body", index)
            return
        seq_id, number = tx_sequence_id(body.TxSequenceID), int(body.TxSequenceNumber)
        if self.used_tx_sequence_ids.sent(seq_id) is False or (
            seq_id == self.OutgoingTxSequenceID and number >= self.OutgoingTxSequenceNumber
        ):
            self._violation(
                RuleId.MQQB_3_1_5_6_ORDER_ACK_UNSENT,
                f"OrderAck for ({seq_id:#x}, {number}) which was never sent",
                index,
            )
        elif seq_id == self.OutgoingTxSequenceID:
            self.ResendIntervalIndex = min(self.ResendIntervalIndex + 1, len(self.config.resend_intervals) - 1)
            if number > self.LastAckSeqNo:
                self.LastAckSeqNo = number
            self.UnackedSequence = [n for n in self.UnackedSequence if n > self.LastAckSeqNo]
            if not self.UnackedSequence:
                self.ResendIntervalIndex = 0
                self._stop_timer(Timer.TransactionalAckWait)
            done = []
            for mid, pos in self.OutgoingMessageTable.items():
                if 0 < pos.TxSequenceNumber <= number:
                    pos.ReceivedOrderAck = True
                    if pos.ReceivedSessionAck:
                        done.append(mid)
            self._delete(done, "OrderAck")
            if not self._tx_numbers:
                self.OutgoingTxSequenceID += 1  # Ordinal + 1
                self.OutgoingTxSequenceNumber = 1
                self.LastAckSeqNo = 0
        self._maybe_ack_by_count()

    def _on_FinalAck(self, packet: Packet, index: int) -> None:
        """[MS-MQQB] 3.1.5.7 Receiving a FinalAck Packet (recorded; journaling is the model's)."""
        if not self._accepts(PacketKind.FinalAck, packet, index):
            return
        self._count_received(packet, recoverable=packet.UserHeader.Flags.DM == 1)
        # a MessageID no longer known either way (sent(...) None) is not judged
        if packet.body is not None and self.sent_message_ids.sent(int(packet.body.MessageID)) is False:
            self._violation(
                RuleId.MQQB_3_1_5_7_FINAL_ACK_UNKNOWN, f"FinalAck for MessageID {int(packet.body.MessageID)}", index
            )
        self.final_acks.append(packet)
        self._maybe_ack_by_count()

    def _on_UserMessage(self, packet: Packet, index: int) -> None:
        """[MS-MQQB] 3.1.5.8 on the initiator: a message the acceptor sent back on the session."""
        if not self._accepts(PacketKind.UserMessage, packet, index):
            return
        self._count_received(packet, recoverable=packet.UserHeader.Flags.DM == 1)
        sh = packet.headers.get("SessionHeader")
        if sh is not None:
            self._process_session_header(sh, index)
            if not self._transport:
                return
        if not self._expired(packet, index):  # Message Expiration ([MS-MQMQ] 2.2.19.1)
            self.received.append(packet)
            self._out.append(Deliver(packet))
        self._maybe_ack_by_count()

    # -- timers --------------------------------------------------------------------------------------

    def _timer_SessionAckWait(self) -> None:
        """[MS-MQQB] 3.1.6.3 Session Ack Wait Timer Event."""
        if not any(p.AwaitingAck for p in self.OutgoingMessageTable.values()):
            self.ReceivedAck = False
        elif not self.ReceivedAck:
            waiting = sum(p.AwaitingAck for p in self.OutgoingMessageTable.values())
            self._violation(  # the rule closes (3.1.6.3)
                RuleId.MQQB_3_1_6_3_ACK_TIMEOUT, f"{waiting} UserMessages unacknowledged, no packet received"
            )
        else:
            self._start_timer(Timer.SessionAckWait, self._ack_wait_seconds())
            self.ReceivedAck = False

    def _timer_TransactionalAckWait(self) -> None:
        """[MS-MQQB] 3.1.6.5 Transactional Ack Wait Timer Event: resend unacknowledged transactional messages."""
        for pos in self.OutgoingMessageTable.values():
            if pos.TxSequenceNumber and not pos.ReceivedOrderAck:
                if pos.AwaitingAck and not pos.ReceivedSessionAck:
                    self.UnAckedMessageCount -= 1
                pos.AwaitingAck = pos.ReceivedSessionAck = False
        self._redispatch_all()
        self._send_pending()

    def _timer_SessionRetryConnect(self) -> None:
        """[MS-MQQB] 3.1.6.1 Session Retry Connect Timer Event: reconnect (without a ping) when
        messages remain; the dispatch collection is rebuilt when the session opens."""
        if self.OutgoingMessageTable:
            self._start(retry=True)

    def _timer_SessionInitialization(self) -> None:
        self._failed_establishment(ConnectionStatus.UnknownFailure)
        super()._timer_SessionInitialization()

    # -- 3.1.5.9 -------------------------------------------------------------------------------------

    def _closing(self, peer_closed: bool = False) -> None:
        """3.1.5.2: a session closed before it opened leaves a ConnectionHistory entry (UnknownFailure
        unless the failure already recorded its own Status)."""
        establishing = self.SessionState in (SessionState.WAITING_ECR_MSG, SessionState.WAITING_CPR_MSG)
        if establishing and not self._failure_recorded:
            self._failed_establishment(ConnectionStatus.UnknownFailure)
        self._set_queue_state(OutgoingQueueState.Disconnecting)

    def _closed(self) -> None:
        """3.1.5.9: Disconnected; with messages left, WAITING_RECONNECT and the retry timer."""
        self._set_queue_state(OutgoingQueueState.Disconnected)
        self._connecting = False
        if self.OutgoingMessageTable:
            self._start_timer(Timer.SessionRetryConnect, self.config.session_retry_connect)
            self.SessionState = SessionState.WAITING_RECONNECT
