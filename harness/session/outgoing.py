"""Outgoing-queue processing: the [MS-MQQB] events the [MS-MQDMPR] queue manager raises for a remote queue.

Renders [MS-MQQB] 3.1.7.12 Message Position Available Event (seed 003: skip a queue that is not an
OutgoingQueue, is Multicast, Locked or OnHold, or whose DestinationFormatName is a direct HTTP or
HTTPS format name; establish a connection (3.1.5.2) when ConnectionHistory is empty; construct the
OutgoingMessagePosition of 3.1.1.3.1.2 with every flag FALSE and every sequence number 0; raise
[MS-MQDMPR] 3.1.7.1.28 Add Message To Dispatch Collection), 3.1.7.11 Construction of a UserMessage
Packet ([MS-MQDMPR] 3.1.7.1.30 Construct a UserMessage Packet, the fields of [MS-MQMQ] 2.2.19-2.2.20)
and 3.1.7.16 Send User Message Wrapper (3.1.7.1 Send User Message Event, then [MS-MQDMPR] 3.1.7.1.29
Remove Message From Dispatch Collection).  One :class:`~harness.session.Initiator` serves each
OutgoingQueue; the actions it returns (Connect, Send, timers, ...) wait in :attr:`pending` for
the IO driver.  Pure: no sockets, no clock of its own (the session clock and the wall clock that
stamps UserHeader.SentTime are injected).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from construct import Container

from harness.model import (
    DeliveryGuarantee,
    Message,
    MessagePosition,
    OutgoingQueue,
    OutgoingQueueState,
    Queue,
    QueueManager,
)
from harness.session import attributes
from harness.session.events import Action, DeliveryClass, SessionConfig, SessionError
from harness.session.initiator import Initiator, OutgoingMessagePosition
from harness.session.messages import prepare_message
from packets import GUID, NULL_GUID, base
from packets.formatname import FormatNameError, direct_machine, is_direct_http, parse_format_name
from packets.properties import default_message_properties_header
from packets.user import UserHeaderFlags, default_user_header

__all__ = ["OutgoingQueueProcessing"]


def _guid(value: Any) -> GUID:
    if isinstance(value, uuid.UUID):
        return GUID(value.bytes_le)
    return GUID(value)


class OutgoingQueueProcessing:
    """The sending side of [MS-MQQB] attached to a :class:`~harness.model.QueueManager`.

    Subscribes :meth:`message_position_available` to ``qm.message_position_available_subscribers``
    and :meth:`send_user_message_wrapper` to ``qm.send_user_message_subscribers``.  ``address_of``
    gives the RemoteQMAddress of an OutgoingQueue (default: its DestinationFormatName's machine);
    ``remote_qm_of`` the destination queue manager's GUID (default GUID_NULL, the direct format
    name case of 3.1.5.2.3).  :meth:`take` hands the IO driver the pending actions, each with the
    Initiator that returned it.  ``wall_clock`` gives the current time in seconds since midnight,
    January 1, 1970 (UTC), the unit of UserHeader.SentTime ([MS-MQMQ] 2.2.19.2); without it a
    message is sent with the SentTime its Message carries.
    """

    def __init__(
        self,
        qm: QueueManager,
        *,
        address_of: Callable[[OutgoingQueue], str] | None = None,
        remote_qm_of: Callable[[OutgoingQueue], GUID] | None = None,
        config: SessionConfig | None = None,
        clock: Callable[[], float] | None = None,
        ping: bool = False,
        wall_clock: Callable[[], float] | None = None,
    ) -> None:
        self.qm = qm
        self.address_of = address_of or (lambda q: direct_machine(q.DestinationFormatName))
        self.remote_qm_of = remote_qm_of or (lambda q: NULL_GUID)
        self.config = config
        self.clock = clock or qm.clock
        self.ping = ping
        self.wall_clock = wall_clock
        self.initiators: dict[int, Initiator] = {}
        self.pending: list[tuple[Initiator, Action]] = []
        qm.message_position_available_subscribers.append(self.message_position_available)
        qm.send_user_message_subscribers.append(self.send_user_message_wrapper)

    # -- plumbing ------------------------------------------------------------------------------------

    def initiator(self, queue: OutgoingQueue) -> Initiator:
        """The Initiator (one session state) of ``queue``, created on first use."""
        init = self.initiators.get(id(queue))
        if init is None:
            init = Initiator(
                _guid(self.qm.Identifier),
                self.remote_qm_of(queue),
                outgoing_queue=queue,
                address=self.address_of(queue),
                ping=self.ping,
                config=self.config,
                clock=self.clock,
            )
            self.initiators[id(queue)] = init
        return init

    def _queue(self, init: Initiator, actions: list[Action]) -> None:
        self.pending.extend((init, a) for a in actions)

    def take(self) -> list[tuple[Initiator, Action]]:
        """The actions waiting for the IO driver, oldest first; the list is emptied."""
        out, self.pending = self.pending, []
        return out

    # -- 3.1.7.12 ------------------------------------------------------------------------------------

    def message_position_available(self, iQueue: Queue, iPosition: MessagePosition) -> None:
        """[MS-MQQB] 3.1.7.12 Message Position Available Event (seed 003), step by step."""
        # If iQueue is not an OutgoingQueue, take no further action.
        if not isinstance(iQueue, OutgoingQueue):
            return
        # If iQueue.Multicast is True, take no further action.
        if iQueue.Multicast:
            return
        # If iQueue.State is Locked or OnHold, take no further action.
        if iQueue.State in (OutgoingQueueState.Locked, OutgoingQueueState.OnHold):
            return
        # If iQueue.DestinationFormatName is a direct format name with HTTP or HTTPS, take no further action.
        if is_direct_http(iQueue.DestinationFormatName):
            return
        init = self.initiator(iQueue)
        # If iQueue.ConnectionHistory is empty, establish a connection (3.1.5.2).
        if not iQueue.ConnectionHistory:
            self._queue(init, init.establish_a_protocol_session())
        # Construct an OutgoingMessagePosition and add it to the OutgoingMessageTable.
        message = iPosition.MessageReference
        if message is None:
            raise SessionError("3.1.7.12: the available MessagePosition has no MessageReference")
        user_message = self.construction_of_a_user_message_packet(message)
        pos = OutgoingMessagePosition(
            MessagePosition=iPosition,
            UserMessage=user_message,
            AwaitingAck=False,
            ReceivedSessionAck=False,
            ReceivedOrderAck=False,
            Transmitted=False,
            SequenceNumber=0x0000,
            RecoverableSequenceNumber=0x0000,
            TxSequenceNumber=0x00000000,
            delivery=_delivery(message),
        )
        init.add_outgoing_message_position(pos)
        # Raise Add Message To Dispatch Collection (iPosition := pos.MessagePosition, iData := pos).
        self.qm.add_message_to_dispatch_collection(pos, pos.MessagePosition)

    # -- 3.1.7.16 ------------------------------------------------------------------------------------

    def send_user_message_wrapper(self, iPosition: OutgoingMessagePosition, iMessagePosition: MessagePosition) -> None:
        """[MS-MQQB] 3.1.7.16 Send User Message Wrapper: the Send User Message Event (3.1.7.1) with
        iQueue := iPosition.MessagePosition.QueueReference, then Remove Message From Dispatch
        Collection ([MS-MQDMPR] 3.1.7.1.29) for iMessagePosition."""
        queue = iPosition.MessagePosition.QueueReference
        init = self.initiators.get(id(queue))
        if init is None:
            raise SessionError("3.1.7.16: no session serves the OutgoingQueue of this position")
        self._queue(init, init.send_user_message_event(iPosition))
        self.qm.remove_message_from_dispatch_collection(iMessagePosition)

    # -- 3.1.7.11 ------------------------------------------------------------------------------------

    def construction_of_a_user_message_packet(self, iMessage: Message) -> Container:
        """[MS-MQQB] 3.1.7.11 Construction of a UserMessage Packet: [MS-MQDMPR] 3.1.7.1.30, its fields
        as [MS-MQDMPR] 3.1.7.1.32 Serialize Message to Buffer sets them from the Message's attributes
        (the value tables: harness.session.attributes).

        - BaseHeader ([MS-MQMQ] 2.2.19.1): Flags.PR := Priority (0 with a TransactionHeader,
          3.1.7.1.32), TimeToReachQueue.
        - UserHeader (2.2.19.2): SourceQueueManager := QueueManager.Identifier; the destination from
          DestinationQueueFormatName (DIRECT= -> DQ 0x7 with a NULL QueueManagerAddress;
          PRIVATE=guid\\id -> DQ 0x3); TimeToBeReceived; SentTime (the Message's, else the wall clock
          now: [MS-MQMQ] 2.2.19.2 makes it "the time when the packet was sent", from which
          TimeToReachQueue counts; a retransmission keeps it); MessageID (the Identifier's
          uniquifier, 0 when none: 3.1.7.1.1 assigns one); DM := DeliveryGuarantee; JP / JN :=
          Positive / NegativeJournalingRequested; AQ and AdminQueue := AdministrationQueueType and
          AdministrationQueueFormatName, RQ and ResponseQueue := ResponseQueueType and
          ResponseQueueFormatName.
        - TransactionHeader (TH) when TransactionIdentifier is specified, its numbers filled when
          sent (3.1.7.1.3).
        - MessagePropertiesHeader (MP, 2.2.19.3): Flags := AcknowledgementsRequested, MessageClass :=
          Class, CorrelationID := CorrelationIdentifier, BodyType, ApplicationTag, PrivacyLevel,
          HashAlgorithm, EncryptionAlgorithm, Label, ExtensionData := Extension, MessageBody := Body.

        A Message that needs a SecurityHeader (AuthenticationLevel, or a PrivacyLevel other than
        None), a DebugHeader (TracingRequested, TracingQueueIdentifier: Flags.TR and DH) or a
        MultiQueueFormatHeader is not constructed
        here: SessionError.  The piggy-backed SessionHeader of 3.1.7.11 is added when the packet is
        sent (harness.session.Initiator), when the timer it depends on is known."""
        if iMessage.AuthenticationLevel != "None" or str(iMessage.PrivacyLevel) != "None":
            raise SessionError(
                "3.1.7.1.30: a SecurityHeader (AuthenticationLevel, PrivacyLevel) is not constructed here"
            )
        if iMessage.TracingQueueIdentifier != uuid.UUID(int=0) or iMessage.TracingRequested:
            # 3.1.7.1.32: BaseHeader.Flags.TR and .DH := TracingRequested, DH announcing a DebugHeader
            raise SessionError(
                "3.1.7.1.30: a DebugHeader (TracingRequested, TracingQueueIdentifier) is not constructed here"
            )
        if iMessage.DestinationMultiQueueFormatName:
            raise SessionError("3.1.7.1.30: a MultiQueueFormatHeader is not constructed here")
        dq, destination, destination_qm = _destination(iMessage.DestinationQueueFormatName)
        source = self.qm.Identifier
        aq, admin = attributes.queue_reference(
            iMessage.AdministrationQueueFormatName, iMessage.AdministrationQueueType, source, destination_qm
        )
        rq, response = attributes.queue_reference(
            iMessage.ResponseQueueFormatName, iMessage.ResponseQueueType, source, destination_qm, response=True
        )
        body = bytes(iMessage.Body)
        headers = Container(
            BaseHeader=base.default_base_header(
                Flags=base.BaseHeaderFlags.make(
                    PR=int(iMessage.Priority) & 0x7, TR=int(bool(iMessage.TracingRequested))
                ),
                TimeToReachQueue=int(iMessage.TimeToReachQueue) & 0xFFFFFFFF,
            ),
            UserHeader=default_user_header(
                SourceQueueManager=_guid(source),
                QueueManagerAddress=destination_qm,
                TimeToBeReceived=int(iMessage.TimeToBeReceived) & 0xFFFFFFFF,
                SentTime=self._sent_time(iMessage),
                MessageID=_uniquifier(iMessage.Identifier),
                Flags=UserHeaderFlags.make(
                    MP=1,
                    DQ=dq,
                    AQ=aq,
                    RQ=rq,
                    JP=int(bool(iMessage.PositiveJournalingRequested)),
                    JN=int(bool(iMessage.NegativeJournalingRequested)),
                ),
                DestinationQueue=destination,
                AdminQueue=admin,
                ResponseQueue=response,
            ),
            MessagePropertiesHeader=default_message_properties_header(
                body,
                Flags=attributes.ack_flags(iMessage.AcknowledgementsRequested),
                MessageClass=int(iMessage.Class),
                CorrelationID=_correlation(iMessage.CorrelationIdentifier),
                BodyType=int(iMessage.BodyType),
                ApplicationTag=int(iMessage.ApplicationTag),
                PrivacyLevel=attributes.privacy_level(iMessage.PrivacyLevel),
                HashAlgorithm=attributes.hash_algorithm(iMessage.HashAlgorithm),
                EncryptionAlgorithm=attributes.encryption_algorithm(iMessage.EncryptionAlgorithm),
                ExtensionSize=len(iMessage.Extension),
                Label=iMessage.Label or None,
                ExtensionData=bytes(iMessage.Extension),
            ),
        )
        return prepare_message(headers, _delivery(iMessage))

    def _sent_time(self, message: Message) -> int:
        """UserHeader.SentTime: the Message's SentTime, or now (seconds since 1970) when it has none."""
        sent = int(message.SentTime)
        if not sent and self.wall_clock is not None:
            sent = int(self.wall_clock())
            message.SentTime = sent
        return sent & 0xFFFFFFFF


def _delivery(message: Message) -> DeliveryClass:
    if message.TransactionIdentifier is not None:
        return DeliveryClass.transactional
    if message.DeliveryGuarantee is DeliveryGuarantee.Recoverable:
        return DeliveryClass.recoverable
    return DeliveryClass.express


def _uniquifier(identifier: Any) -> int:
    """The uniquifier (ordinal) of a Message.Identifier (an OBJECTID, [MS-MQMQ] 2.2.8), 0 if none."""
    if isinstance(identifier, int):
        return identifier & 0xFFFFFFFF
    if isinstance(identifier, tuple) and identifier and isinstance(identifier[-1], int):
        return identifier[-1] & 0xFFFFFFFF
    return 0


def _correlation(value: Any) -> bytes:
    """CorrelationID (20 bytes): an OBJECTID as GUID (bytes_le) then the u32 uniquifier."""
    lineage, uniquifier = value if isinstance(value, tuple) else (uuid.UUID(int=0), 0)
    return bytes(_guid(lineage)) + int(uniquifier).to_bytes(4, "little")


def _destination(format_name: str) -> tuple[int, Container, GUID]:
    """UserHeader.Flags.DQ, DestinationQueue and QueueManagerAddress ([MS-MQMQ] 2.2.19.2,
    2.2.18.1.5) for a format name ([MS-MQMQ] 2.1.2, 2.1.4)."""
    try:
        fmt = parse_format_name(format_name)
    except FormatNameError as e:
        raise SessionError(f"3.1.7.1.30: {e}") from None
    if fmt.kind == "DIRECT":  # the DirectFormatName is the name after "DIRECT=", as written
        return 0x7, Container(DirectFormatName=format_name[len("DIRECT=") :]), NULL_GUID
    if fmt.kind == "PRIVATE":
        assert fmt.guid is not None and fmt.number is not None
        return 0x3, Container(PrivateQueueIdentifier=fmt.number), GUID(fmt.guid.bytes_le)
    raise SessionError(f"3.1.7.1.30: destination format name {format_name!r} is not direct or private")
