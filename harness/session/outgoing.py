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
from harness.session.actions import Action, DeliveryClass, SessionConfig, SessionError
from harness.session.initiator import Initiator, OutgoingMessagePosition
from harness.session.messages import prepare_message
from packets import GUID, NULL_GUID, base
from packets.formatname import FormatNameError, direct_machine, is_direct_http, parse_format_name
from packets.optional import DebugHeaderFlags, TransactionHeaderFlags, default_transaction_header
from packets.properties import ACK_BITS, default_message_properties_header
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

    #: The Initiator each OutgoingQueue's session runs: a subclass takes another reading of an
    #: interpretation of the session (examples/readings/mqqb.py); the reference's own by default.
    initiator_class: type[Initiator] = Initiator

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
            init = self.initiator_class(
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
        """[MS-MQQB] 3.1.7.11 Construction of a UserMessage Packet: [MS-MQDMPR] 3.1.7.1.30 Construct a
        UserMessage Packet (which headers, [MS-MQMQ] 2.2.20) with the fields [MS-MQDMPR] 3.1.7.1.32
        Serialize Message to Buffer sets from the Message's attributes (its value tables:
        harness.session.attributes).  One helper per header, each one step per Message attribute in
        the order of the table:

        - Priority -> BaseHeader.Flags.PR (0x0 with a TransactionHeader); TracingRequested ->
          BaseHeader.Flags.TR and .DH with a DebugHeader ([MS-MQMQ] 2.2.20.8), whose QT and
          QueueIdentifier say TracingQueueIdentifier (a DebugHeader is also included when only
          TracingQueueIdentifier is specified, 3.1.7.1.30; DH then announces it, [MS-MQMQ] 2.2.19.1);
          TimeToReachQueue -> BaseHeader.TimeToReachQueue.
        - MessagePropertiesHeader ([MS-MQMQ] 2.2.19.3): Label (LabelLength), BodyType, Body
          (MessageSize, MessageBody), Extension (ExtensionSize, ExtensionData), EncryptionAlgorithm,
          HashAlgorithm, ApplicationTag, CorrelationIdentifier, AcknowledgementsRequested (Flags),
          Class (MessageClass), PrivacyLevel.
        - TransactionHeader ([MS-MQMQ] 2.2.20.5) when TransactionIdentifier is specified:
          FinalAckRequired -> Flags.FA, FirstInTransaction -> FM, LastInTransaction -> LM,
          ConnectorQueueManagerIdentifier -> CG and ConnectorQMGuid; the sequence fields are filled
          when it is sent ([MS-MQQB] 3.1.7.1.3).
        - UserHeader ([MS-MQMQ] 2.2.19.2): DestinationQueueManagerIdentifier -> QueueManagerAddress
          (else the GUID a PRIVATE= destination names; NULL for a direct one, [MS-MQMQ] 2.2.19.2);
          ConnectorTypeIdentifier -> CQ and ConnectorType; SentTime (the Message's, else the wall clock now, kept for
          retransmissions); DestinationQueueFormatName -> DQ and DestinationQueue;
          AdministrationQueueType and AdministrationQueueFormatName -> AQ and AdminQueue;
          ResponseQueueType and ResponseQueueFormatName -> RQ and ResponseQueue; TimeToBeReceived;
          Identifier -> MessageID (0 when none: [MS-MQQB] 3.1.7.1.1 assigns one);
          SourceMachineIdentifier -> SourceQueueManager (QueueManager.Identifier when none);
          DeliveryGuarantee -> DM; PositiveJournalingRequested -> JP; NegativeJournalingRequested -> JN.

        A Message whose packet could not conform to [MS-MQMQ] 2.2.19.2 (an AdminQueue without an
        acknowledgment requested, or the other way round) is refused (SessionError), as are the
        headers not constructed here: the SecurityHeader (AuthenticationLevel other than
        None, or a PrivacyLevel other than None, whose body encryption needs it: Flags.EB) and the
        MultiQueueFormatHeader (DestinationMultiQueueFormatName).  The piggy-backed SessionHeader of
        3.1.7.11 is added when the packet is sent (harness.session.Initiator), when the Session Ack
        Send Timer it depends on is known."""
        self._refuse_unconstructed_headers(iMessage)
        base_header, debug_header = self._base_header(iMessage)
        properties_header = self._message_properties_header(iMessage)
        transaction_header = self._transaction_header(iMessage)
        user_header = self._user_header(iMessage, properties_header.Flags)
        # 3.1.7.1.30: DebugHeader when TracingQueueIdentifier is specified (or TracingRequested: DH),
        # TransactionHeader when TransactionIdentifier is
        optional = {"DebugHeader": debug_header, "TransactionHeader": transaction_header}
        headers = Container(
            BaseHeader=base_header,
            UserHeader=user_header,
            MessagePropertiesHeader=properties_header,
            **{name: header for name, header in optional.items() if header is not None},
        )
        # UserHeader.Flags.DM := DeliveryGuarantee (with TH: prepare_message)
        return prepare_message(headers, _delivery(iMessage))

    @staticmethod
    def _base_header(iMessage: Message) -> tuple[Container, Container | None]:
        """The BaseHeader ([MS-MQMQ] 2.2.19.1) rows of Serialize Message to Buffer (3.1.7.1.32), and
        the DebugHeader ([MS-MQMQ] 2.2.20.8) of 3.1.7.1.30 that BaseHeader.Flags.DH announces."""
        # BaseHeader.Flags.PR := Priority (0x0 with a TransactionHeader: prepare_message)
        base_flags = {"PR": int(iMessage.Priority) & 0x7}
        # BaseHeader.Flags.TR and .DH := TracingRequested; DebugHeader := TracingQueueIdentifier
        tracing_queue = _guid(iMessage.TracingQueueIdentifier)
        base_flags["TR"] = int(bool(iMessage.TracingRequested))
        debug_header = None
        if iMessage.TracingRequested or not tracing_queue.is_null:
            base_flags["DH"] = 1
            debug_header = Container(
                Flags=DebugHeaderFlags.make(QT=0 if tracing_queue.is_null else 1),
                Reserved=0,
                QueueIdentifier=None if tracing_queue.is_null else tracing_queue,
            )
        base_header = base.default_base_header(
            Flags=base.BaseHeaderFlags.make(**base_flags),
            # BaseHeader.TimeToReachQueue := TimeToReachQueue
            TimeToReachQueue=int(iMessage.TimeToReachQueue) & 0xFFFFFFFF,
        )
        return base_header, debug_header

    @staticmethod
    def _message_properties_header(iMessage: Message) -> Container:
        """The MessagePropertiesHeader ([MS-MQMQ] 2.2.19.3) rows of Serialize Message to Buffer
        (3.1.7.1.32); 3.1.7.1.30 always includes it (UserHeader.Flags.MP)."""
        return default_message_properties_header(
            # MessagePropertiesHeader.MessageSize, .MessageBody := Body
            bytes(iMessage.Body),
            # MessagePropertiesHeader.LabelLength, .Label := Label
            Label=iMessage.Label or None,
            # MessagePropertiesHeader.BodyType := BodyType
            BodyType=int(iMessage.BodyType),
            # MessagePropertiesHeader.ExtensionSize, .ExtensionData := Extension
            ExtensionSize=len(iMessage.Extension),
            ExtensionData=bytes(iMessage.Extension),
            # MessagePropertiesHeader.EncryptionAlgorithm := EncryptionAlgorithm
            EncryptionAlgorithm=attributes.encryption_algorithm(iMessage.EncryptionAlgorithm),
            # MessagePropertiesHeader.HashAlgorithm := HashAlgorithm
            HashAlgorithm=attributes.hash_algorithm(iMessage.HashAlgorithm),
            # MessagePropertiesHeader.ApplicationTag := ApplicationTag ("Message.AppSpecific" in the table)
            ApplicationTag=int(iMessage.ApplicationTag) & 0xFFFFFFFF,
            # MessagePropertiesHeader.CorrelationID := CorrelationIdentifier
            CorrelationID=_correlation(iMessage.CorrelationIdentifier),
            # MessagePropertiesHeader.Flags := AcknowledgementsRequested
            Flags=attributes.ack_flags(iMessage.AcknowledgementsRequested),
            # MessagePropertiesHeader.MessageClass := Class
            MessageClass=int(iMessage.Class) & 0xFFFF,
            # MessagePropertiesHeader.PrivacyLevel := PrivacyLevel
            PrivacyLevel=attributes.privacy_level(iMessage.PrivacyLevel),
        )

    @staticmethod
    def _transaction_header(iMessage: Message) -> Container | None:
        """The TransactionHeader ([MS-MQMQ] 2.2.20.5, UserHeader.Flags.TH) 3.1.7.1.30 includes when
        TransactionIdentifier is specified, with its rows of 3.1.7.1.32; None otherwise."""
        if iMessage.TransactionIdentifier is None:
            return None
        connector = _guid(iMessage.ConnectorQueueManagerIdentifier)
        return default_transaction_header(
            Flags=TransactionHeaderFlags.make(
                CG=int(not connector.is_null),
                FA=int(bool(iMessage.FinalAckRequired)),  # := FinalAckRequired
                FM=int(bool(iMessage.FirstInTransaction)),  # := FirstInTransaction
                LM=int(bool(iMessage.LastInTransaction)),  # := LastInTransaction
            ),
            ConnectorQMGuid=None if connector.is_null else connector,  # := ConnectorQueueManagerIdentifier
        )

    def _user_header(self, iMessage: Message, acknowledgements: int) -> Container:
        """The UserHeader ([MS-MQMQ] 2.2.19.2) rows of Serialize Message to Buffer (3.1.7.1.32), to
        the rules of 2.2.19.2 that 3.1.7.1.30 constructs to (``acknowledgements``: the
        MessagePropertiesHeader.Flags, which an AdminQueue goes with)."""
        user_flags: dict[str, int] = {"MP": 1}
        user_fields: dict[str, Any] = {}
        # UserHeader.Flags.DQ, .DestinationQueue := DestinationQueueFormatName
        dq, destination, named_qm = _destination(iMessage.DestinationQueueFormatName)
        user_flags["DQ"] = dq
        user_fields["DestinationQueue"] = destination
        # UserHeader.QueueManagerAddress := DestinationQueueManagerIdentifier ([MS-MQMQ] 2.2.19.2: a
        # NULL GUID for a direct destination, whatever the attribute says)
        destination_qm = _guid(iMessage.DestinationQueueManagerIdentifier)
        if destination_qm.is_null or dq == 0x7:
            destination_qm = named_qm
        user_fields["QueueManagerAddress"] = destination_qm
        # UserHeader.Flags.CQ, .ConnectorType := ConnectorTypeIdentifier
        connector_type = _guid(iMessage.ConnectorTypeIdentifier)
        if not connector_type.is_null:
            user_flags["CQ"] = 1
            user_fields["ConnectorType"] = connector_type
        # UserHeader.SentTime := SentTime
        user_fields["SentTime"] = self._sent_time(iMessage)
        # UserHeader.SourceQueueManager := SourceMachineIdentifier
        source = _guid(iMessage.SourceMachineIdentifier)
        if source.is_null:
            source = _guid(self.qm.Identifier)
        user_fields["SourceQueueManager"] = source
        # UserHeader.Flags.AQ, .AdminQueue := AdministrationQueueType, AdministrationQueueFormatName
        user_flags["AQ"], user_fields["AdminQueue"] = attributes.queue_reference(
            iMessage.AdministrationQueueFormatName, iMessage.AdministrationQueueType, source, destination_qm
        )
        # UserHeader.Flags.RQ, .ResponseQueue := ResponseQueueType, ResponseQueueFormatName
        user_flags["RQ"], user_fields["ResponseQueue"] = attributes.queue_reference(
            iMessage.ResponseQueueFormatName, iMessage.ResponseQueueType, source, destination_qm, response=True
        )
        # [MS-MQMQ] 2.2.19.2 (the rules 3.1.7.1.30 constructs to): an AdminQueue if and only if
        # MessagePropertiesHeader.Flags requests an administration acknowledgment
        if bool(int(acknowledgements) & ACK_BITS) != bool(user_flags["AQ"]):
            raise SessionError(
                "3.1.7.1.30, [MS-MQMQ] 2.2.19.2: UserHeader.AdminQueue is present if and only if an acknowledgment "
                f"is requested; AcknowledgementsRequested {iMessage.AcknowledgementsRequested!r}, "
                f"AdministrationQueueFormatName {iMessage.AdministrationQueueFormatName!r}"
            )
        # UserHeader.TimeToBeReceived := TimeToBeReceived
        user_fields["TimeToBeReceived"] = int(iMessage.TimeToBeReceived) & 0xFFFFFFFF
        # UserHeader.MessageID := Identifier
        user_fields["MessageID"] = _uniquifier(iMessage.Identifier)
        # UserHeader.Flags.JP := PositiveJournalingRequested, .JN := NegativeJournalingRequested
        user_flags["JP"] = int(bool(iMessage.PositiveJournalingRequested))
        user_flags["JN"] = int(bool(iMessage.NegativeJournalingRequested))
        return default_user_header(Flags=UserHeaderFlags.make(**user_flags), **user_fields)

    @staticmethod
    def _refuse_unconstructed_headers(iMessage: Message) -> None:
        """The headers of [MS-MQDMPR] 3.1.7.1.30 this sender does not construct: SessionError."""
        if str(getattr(iMessage.AuthenticationLevel, "name", iMessage.AuthenticationLevel)) != "None":
            raise SessionError("3.1.7.1.30: a SecurityHeader (AuthenticationLevel) is not constructed here")
        if str(getattr(iMessage.PrivacyLevel, "name", iMessage.PrivacyLevel)) != "None":
            raise SessionError(
                "3.1.7.1.32: a PrivacyLevel other than None needs the SecurityHeader (Flags.EB) and an "
                "encrypted body ([MS-MQQB] 3.1.7.1.5), which are not constructed here"
            )
        if iMessage.DestinationMultiQueueFormatName:
            raise SessionError("3.1.7.1.30: a MultiQueueFormatHeader is not constructed here")

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
