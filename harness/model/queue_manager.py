"""The QueueManager of [MS-MQDMPR]: ADM element 3.1.1.1 and the events of 3.1.4, 3.1.6, 3.1.7.

Renders the QueueManager ADM element (3.1.1.1) and, as one method each, the higher-layer events
3.1.4.1-3.1.4.5 and 3.1.4.12-3.1.4.15, the timer event 3.1.6.3, the events raised by related
protocols 3.1.7.1.1-3.1.7.1.17 and 3.1.7.1.27-3.1.7.1.29, 3.1.7.1.33, 3.1.7.1.34, the events
consumed by related protocols 3.1.7.2.1-3.1.7.2.7 and the internal events 3.1.7.3.1-3.1.7.3.9.
Sans-IO: time comes from an injected clock, identifiers from an injected generator; waiting is a
WaitingMessageReadOperation the caller resolves (a message becoming available, or the caller
firing the timer via ``waiting_message_read_timer_expired`` / ``fire_due_timers``).
"""

from __future__ import annotations

import heapq
import itertools
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from harness.model.adm import (
    DispatchEntry,
    Message,
    OpenQueueDescriptor,
    OutgoingQueue,
    Queue,
    ReadResult,
    Transaction,
    TransactionalOperation,
    WaitingMessageReadOperation,
)
from harness.model.cursor import Cursor
from harness.model.enums import (
    INFINITE,
    CursorStatus,
    DirectoryOperationResult,
    EnqueueStatus,
    MessageClass,
    MessagePositionState,
    MessageSeekAction,
    MQStatus,
    OperationType,
    OutgoingQueueState,
    QueueAccessType,
    QueueManagerState,
    QueueShareMode,
    QueueType,
    SeekDirection,
)
from harness.model.errors import UndefinedBehaviour
from harness.model.positions import (
    IndexedMessagePositionList,
    MessagePosition,
    MessagePositionList,
)
from packets.formatname import (
    FormatNameError,
    format_name_kind,
    parse_format_names,
    parse_path_name,
    try_parse_format_name,
)

_Available = MessagePositionState.Available
_Locked = MessagePositionState.Locked
_Deleted = MessagePositionState.Deleted
_PurgePending = MessagePositionState.PurgePending
_Forward = SeekDirection.Forward
_Backward = SeekDirection.Backward
_OK = MQStatus.MQ_OK
_PEEK_ACCESS = (QueueAccessType.PeekAccess, QueueAccessType.PeekAdminAccess)

Resume = Callable[[MQStatus, "MessagePosition | None"], ReadResult]
PositionSubscriber = Callable[[Queue, MessagePosition], None]


def _counter_ids() -> Callable[[], uuid.UUID]:
    counter = itertools.count(1)
    return lambda: uuid.UUID(int=next(counter))


class QueueManager:
    """QueueManager ADM element (3.1.1.1) and the MS-MQDMPR events, one method per event.

    Python-only configuration: ``position_list_factory`` (the MessagePositionList
    implementation), ``cursor_factory``, the subscriber lists
    ``message_position_available_subscribers`` (callables ``(iQueue, iPosition)``, e.g. MS-MQQB
    3.1.7.12), ``message_position_deleted_subscribers`` (``(iQueue, iPosition, iReason)``) and
    ``send_user_message_subscribers`` (``(iPosition, iMessagePosition)``, the Send User Message
    Wrapper of 3.1.7.3.9).

    Where the spec is silent or contradicts itself (an ``interpretation`` requirement of
    cases/requirements.yaml), the reading the model takes is one overridable hook, named after
    what it decides and citing the requirement: the class attributes ``WAIT_FAILED_STATUS``,
    ``LOOKUP_WITHOUT_MESSAGE_STATUS``, ``PEEK_PAST_DENY_RECEIVE_STATUS`` and the methods of the
    "readings" block below (examples/readings renders the other readings through them).
    """

    position_list_factory: Callable[[Queue | None], MessagePositionList] = (
        IndexedMessagePositionList
    )
    cursor_factory: Callable[[QueueManager], Cursor] = Cursor
    #: The MQ status of a read whose Wait For New Message is Failed (iTimeout <= 0, 3.1.7.3.1):
    #: interpretation DMPR-3.1.7.3.1-FAILED-STATUS, reading io-timeout.
    WAIT_FAILED_STATUS = MQStatus.MQ_ERROR_IO_TIMEOUT
    #: rStatus of Read Message By Lookup Identifier (3.1.7.1.13) when its seek returned End or
    #: Start with MQ_OK (no message): interpretation DMPR-3.1.7.1.13-END, reading not-found (MQ_OK
    #: gives ok-without-message: rMessage is None).
    LOOKUP_WITHOUT_MESSAGE_STATUS = MQStatus.MQ_ERROR_MESSAGE_NOT_FOUND
    #: rStatus of Open Queue (3.1.7.1.5) for a PeekAccess or PeekAdminAccess open with DenyNone
    #: while a descriptor holds the queue with ReceiveAccess and DenyReceive: interpretation
    #: DMPR-3.1.7.1.5-SHARE-PEEK, reading steps-allow-peek (MQ_OK: the open goes on).
    PEEK_PAST_DENY_RECEIVE_STATUS = MQStatus.MQ_OK

    def __init__(
        self,
        clock: Callable[[], float] | None = None,
        id_generator: Callable[[], uuid.UUID] | None = None,
        *,
        ComputerName: str = "LOCALHOST",
        QualifiedComputerName: str = "",
        QueueManagerQuota: int = 0x00100000,
        HardenedSecurity: bool = False,
    ) -> None:
        self.clock: Callable[[], float] = clock if clock is not None else (lambda: 0.0)
        self.id_generator = id_generator if id_generator is not None else _counter_ids()
        # --- 3.1.1.1 attributes used by the processing rules ---
        self.Identifier: uuid.UUID = self.id_generator()
        self.ComputerName = ComputerName
        self.QualifiedComputerName = QualifiedComputerName or ComputerName
        self.QueueManagerQuota = QueueManagerQuota
        self.JournalQuota = 0xFFFFFFFF
        self.DirectoryIntegrated = False
        self.DirectoryOffline = False
        self.Throttled = False
        self.ConnectionActive = True
        self.HardenedSecurity = HardenedSecurity
        self.QueueManagerState = QueueManagerState.Ready
        self.SystemDeadletterQueue: Queue | None = None
        self.SystemTransactionalDeadletterQueue: Queue | None = None
        self.SystemJournalQueue: Queue | None = None
        self.QueueCollection: list[Queue] = []
        self.TransactionCollection: dict[Any, Transaction] = {}
        self.SequentialID = 0
        self.DispatchCollection: list[DispatchEntry] = []
        # --- python-only ---
        self.message_position_available_subscribers: list[PositionSubscriber] = []
        self.message_position_deleted_subscribers: list[
            Callable[[Queue, MessagePosition, MessageClass], None]
        ] = []
        self.send_user_message_subscribers: list[Callable[[Any, MessagePosition], None]] = []
        self._handles = itertools.count(1)
        self._total_bytes = 0
        self._timer_seq = itertools.count()
        self._wait_timers: list[tuple[float, int, WaitingMessageReadOperation]] = []
        self._ttbr_timers: list[tuple[float, int, Message]] = []

    # ------------------------------------------------------------------ python-only helpers
    def new_handle(self) -> int:
        """A value unique across descriptors and cursors of this queue manager (3.1.1.16, 3.2)."""
        return next(self._handles)

    # ------------------------------------------------------------------ readings (hooks)
    def message_storage_size(self, message: Message) -> int:
        """Bytes a message consumes for TotalBytes and quotas (3.1.7.2.1-2): body + extension.

        3.1.7.2.1 counts "the headers and body", whose stored size is the implementation's own:
        interpretation DMPR-3.1.7.2.1-STORAGE, reading body-and-extension.
        """
        return len(message.Body) + len(message.Extension)

    def storage_added_when_available(self, iQueue: Queue, iPosition: MessagePosition) -> int:
        """Bytes Message Position Available (3.1.7.2.2) adds to iQueue.TotalBytes.

        Interpretation DMPR-3.1.7.2.2-TOTALBYTES: the model takes adds-again (the message's
        storage, each time, also for a Locked position that becomes Available again and was
        never decremented); counted-once adds nothing for a message already counted.
        """
        message = iPosition.MessageReference
        return self.message_storage_size(message) if message is not None else 0

    def cursorless_initial_position(self, iQueue: Queue, iPeekOperation: bool = False) -> MessagePosition:
        """Initial position of a seek for a read without a cursor (3.1.7.1.10, 3.1.7.1.15).

        The spec passes MessagePositionList.Head, but Seek Available Message Position starts
        at iInitialPosition.Next, which would skip the first message; the model passes Start,
        which makes the walk begin at Head. Override to render the literal reading.
        Interpretations DMPR-3.1.7.1.10-HEAD (receive, ``iPeekOperation`` False) and
        DMPR-3.1.7.1.15-HEAD (peek, True): the model takes the reading from-head; the literal one
        (after-head) passes the Head.
        """
        return iQueue.MessagePositionList.Start

    def forward_seek_from_end(self, iQueue: Queue, iPeekOperation: bool) -> MessagePosition:
        """What a forward Seek Available Message Position (3.1.7.3.2) from End returns: the walk
        starts at End.Next, which no section defines.

        Interpretation DMPR-3.1.1.2-END-NEXT: the model takes end-is-end (End.Next is End: End);
        end-next-is-head walks the list from its Head again.
        """
        return iQueue.MessagePositionList.End

    def backward_seek_from_start(self, iQueue: Queue, iPeekOperation: bool) -> MessagePosition:
        """What a backward Seek Available Message Position (3.1.7.3.2) from Start returns: the
        walk starts at Start.Previous, which no section defines.

        Interpretation DMPR-3.1.1.2-START-PREVIOUS: the model takes start-is-start
        (Start.Previous is Start: the walk finds nothing, :meth:`backward_seek_miss`);
        start-previous-is-tail walks the list from its Tail.
        """
        return self.backward_seek_miss(iQueue)

    def backward_seek_miss(self, iQueue: Queue) -> MessagePosition:
        """What a backward Seek Available Message Position (3.1.7.3.2) that finds no Available
        position returns.

        Interpretation DMPR-3.1.7.3.2-BWD-START: the model takes returns-start (the walk stops on
        Start, and its last step returns it); returns-end returns End, as the Return Value says.
        """
        return iQueue.MessagePositionList.Start

    def removed_position_origin(self, iQueue: Queue, iPosition: MessagePosition) -> MessagePosition:
        """Where a seek (3.1.7.3.2) from a position that has left iQueue.MessagePositionList starts
        (a cursor keeps referencing the position of the message it received, 3.2.7.4).

        Interpretation DMPR-3.1.1.11-REMOVED-NEXT: the model takes keeps-place (the position
        itself, whose Next is the first position still in the list that followed it);
        restarts-at-start seeks as from Start.
        """
        return iPosition

    def current_receive_unavailable(self, messagePos: MessagePosition) -> tuple[MQStatus, MessagePosition | None]:
        """(rStatus, rMessagePosition) of Seek Available Message Position With Id (3.1.7.3.3)
        with SeekCurrent for a receive (iPeekOperation False) whose position is not Available.

        Interpretation DMPR-3.1.7.3.3-CURRENT-RECEIVE: the model takes not-found-or-received (the
        Deleted and otherwise branches apply to a receive too: Deleted gives
        MQ_ERROR_MESSAGE_ALREADY_RECEIVED, any other state MQ_ERROR_MESSAGE_NOT_FOUND);
        ok-without-position leaves rStatus MQ_OK and rMessagePosition unset.
        """
        if messagePos.State is _Deleted:
            return (MQStatus.MQ_ERROR_MESSAGE_ALREADY_RECEIVED, None)
        return (MQStatus.MQ_ERROR_MESSAGE_NOT_FOUND, None)

    def peek_without_cursor_releases(self, iQueue: Queue, iReader: WaitingMessageReadOperation) -> bool:
        """Whether a waiting peek without cursor, once Message Position Available (3.1.7.2.2) has
        satisfied it, lets the processing go on to the next waiting reader (a peek with a cursor
        generates Release Next Reader, 3.1.7.3.7; 3.1.7.1.15 generates none without one).

        Interpretation DMPR-3.1.7.1.15-RELEASE: the model takes released (True); blocked is False.
        """
        return True

    def descriptor_visit_order(self, iQueue: Queue) -> list[OpenQueueDescriptor]:
        """The order in which Message Position Available (3.1.7.2.2) visits the descriptors of
        iQueue.OpenQueueDescriptorCollection ("A collection", 3.1.1.2: no order).

        Interpretation DMPR-3.1.7.2.2-DESCRIPTOR-ORDER: the model takes open-order (the order the
        descriptors were opened); any-order lets the implementation choose.
        """
        return list(iQueue.OpenQueueDescriptorCollection)

    def new_queue(self, cls: type[Queue] = Queue, Pathname: str = "", **attrs: Any) -> Queue:
        """Python-only: an unattached Queue with its MessagePositionList (for Create Queue)."""
        q = cls(Pathname, **attrs)
        q.MessagePositionList = self.position_list_factory(q)
        q.QueueManager = self
        return q

    def fire_due_timers(self) -> int:
        """Fire every Waiting Message Read Timer (3.1.2.3) and Time To Be Received Timer
        (3.1.2.4) whose expiry is due by the injected clock; returns how many fired."""
        now = self.clock()
        fired = 0
        while self._wait_timers and self._wait_timers[0][0] <= now:
            _, _, reader = heapq.heappop(self._wait_timers)
            if not reader.done:
                self.waiting_message_read_timer_expired(reader)
                fired += 1
        while self._ttbr_timers and self._ttbr_timers[0][0] <= now:
            _, _, message = heapq.heappop(self._ttbr_timers)
            pos = message.MessagePositionReference
            # "if that message is still in the queue" (3.1.2.4)
            if pos is not None and pos.in_list:
                self.time_to_be_received_timer_expired(message)
                fired += 1
        return fired

    def waiting_readers(self) -> Iterator[WaitingMessageReadOperation]:
        """Python-only: every WaitingMessageReadOperation of every open descriptor."""
        for q in self.QueueCollection:
            for d in q.OpenQueueDescriptorCollection:
                yield from d.WaitingMessageReadOperationCollection

    # ================================================================ 3.1.4 higher layer
    def queue_manager_started(self) -> None:
        """3.1.4.1 Queue Manager Started (the MS-MQSO 6.6.2 initialization is out of scope)."""
        self.QueueManagerState = QueueManagerState.Ready

    def queue_manager_stopped(self) -> None:
        """3.1.4.2 Queue Manager Stopped: no processing steps in this protocol."""

    def transaction_prepare(self, iTransactionIdentifier: Any, iSinglePhase: bool = True) -> MQStatus:
        """3.1.4.3 Transaction Prepare."""
        transObj = self.TransactionCollection.get(iTransactionIdentifier)
        # If a Transaction is not found: MQ_ERROR_TRANSACTION_SEQUENCE.
        if transObj is None:
            return MQStatus.MQ_ERROR_TRANSACTION_SEQUENCE
        transObj.SinglePhase = iSinglePhase
        ops = transObj.TransactionalOperationCollection
        if ops:
            first = ops[0].MessagePositionReference.MessageReference
            last = ops[-1].MessagePositionReference.MessageReference
            if first is not None:
                first.FirstInTransaction = True
            if last is not None:
                last.LastInTransaction = True
        return _OK

    def transaction_commit(self, iTransactionIdentifier: Any) -> MQStatus:
        """3.1.4.4 Transaction Commit."""
        transObj = self.TransactionCollection.get(iTransactionIdentifier)
        if transObj is None:
            return MQStatus.MQ_ERROR_TRANSACTION_SEQUENCE
        ops = transObj.TransactionalOperationCollection
        while ops:
            transOp = ops[0]
            pos = transOp.MessagePositionReference
            queue = pos.QueueReference
            assert queue is not None
            if transOp.OperationType is OperationType.Enqueue:
                self.message_position_available(queue, pos)
            elif transOp.OperationType is OperationType.Dequeue:
                assert transOp.DequeueReason is not None
                self.message_position_deleted(queue, pos, transOp.DequeueReason)
            else:  # Move
                pos.State = _Deleted
                target = transOp.TargetQueueReference
                assert target is not None and pos.MessageReference is not None
                newMessagePos = self._create_position(target, pos.MessageReference)
                self.message_position_available(target, newMessagePos)
            # Remove transOp from transObj.TransactionalOperationCollection.
            ops.pop(0)
        del self.TransactionCollection[iTransactionIdentifier]
        return _OK

    def transaction_abort(self, iTransactionIdentifier: Any) -> MQStatus:
        """3.1.4.5 Transaction Abort."""
        transObj = self.TransactionCollection.get(iTransactionIdentifier)
        if transObj is None:
            return MQStatus.MQ_ERROR_TRANSACTION_SEQUENCE
        ops = transObj.TransactionalOperationCollection
        while ops:
            transOp = ops[0]
            pos = transOp.MessagePositionReference
            queue = pos.QueueReference
            assert queue is not None
            if transOp.OperationType in (OperationType.Dequeue, OperationType.Move):
                if pos.State is _PurgePending:
                    reason = transOp.DequeueReason
                    self.message_position_deleted(
                        queue, pos, reason if reason is not None else MessageClass.NackQueuePurged
                    )
                else:
                    self.message_position_available(queue, pos)
            else:  # Enqueue: remove the position from the list (its State is left as it is)
                queue.MessagePositionList.remove(pos)
            ops.pop(0)
        del self.TransactionCollection[iTransactionIdentifier]
        return _OK

    def take_offline(self) -> None:
        """3.1.4.12 Take Offline."""
        self.ConnectionActive = False

    def bring_online(self) -> None:
        """3.1.4.13 Bring Online."""
        self.ConnectionActive = True

    def pause_queue(self, iQueue: OutgoingQueue) -> None:
        """3.1.4.14 Pause Queue (administrator): generates Pause Queue 3.1.7.2.3."""
        self.process_pause_queue(iQueue)

    def resume_queue(self, iQueue: OutgoingQueue) -> None:
        """3.1.4.15 Resume Queue (administrator): generates Resume Queue 3.1.7.2.4."""
        self.process_resume_queue(iQueue)

    # ================================================================ 3.1.6 timer events
    def waiting_message_read_timer_expired(self, iReader: WaitingMessageReadOperation) -> None:
        """3.1.6.3 Waiting Message Read Timer Expired."""
        self.waiting_message_read_timer_stop(iReader, MQStatus.MQ_ERROR_IO_TIMEOUT)

    # ================================================================ 3.1.7.1
    def open_cursor(self, iQueueDesc: OpenQueueDescriptor) -> Cursor | None:
        """3.1.7.1.1 Open Cursor."""
        if iQueueDesc.QueueReference is None:
            return None
        newCursor = self.cursor_factory(self)
        iQueueDesc.CursorCollection.append(newCursor)
        newCursor.initialize(iQueueDesc)
        return newCursor

    def close_cursor(self, iCursor: Cursor) -> None:
        """3.1.7.1.2 Close Cursor."""
        desc = iCursor.OpenQueueDescriptorReference
        if desc is None:
            return
        readers = desc.WaitingMessageReadOperationCollection
        readers[:] = [r for r in readers if r.CursorReference is not iCursor]
        if iCursor in desc.CursorCollection:
            desc.CursorCollection.remove(iCursor)

    def set_queue_defaults(self, iQueue: Queue) -> None:
        """3.1.7.1.33 Set Queue Defaults."""
        iQueue.Label = ""
        iQueue.Type = uuid.UUID(int=0)
        iQueue.Journaling = False
        iQueue.Quota = 0xFFFFFFFF
        iQueue.JournalQuota = 0xFFFFFFFF
        iQueue.Authentication = False
        iQueue.PrivacyLevel = "Optional"
        iQueue.Transactional = False
        iQueue.MulticastAddress = None
        # 3.1.7.1.3.1 needs LDAP and SIDs; the model records that the default applies.
        iQueue.Security = "DefaultQueueSecurityDescriptor"
        iQueue.BasePriority = 0

    def create_queue(
        self, iQueue: Queue, iSkipDirectory: bool = False
    ) -> tuple[MQStatus | DirectoryOperationResult, Queue | None]:
        """3.1.7.1.3 Create Queue: returns (rStatus, rQueue)."""
        path = iQueue.Pathname
        try:
            pathName = parse_path_name(path)  # [MS-MQMQ] 2.1.1
        except FormatNameError:
            return (MQStatus.MQ_ERROR_ILLEGAL_FORMATNAME, None)
        newQueue = self.new_queue(type(iQueue))
        if not (pathName.subqueue or pathName.system):  # not a subqueue: create its queue journal
            newQueue.JournalQueueReference = self.new_queue(Queue, path + ";journal")
        for name in (
            "Label", "Type", "Pathname", "Journaling", "Quota", "JournalQuota", "Authentication",
            "PrivacyLevel", "Transactional", "MulticastAddress", "Security", "BasePriority",
        ):
            setattr(newQueue, name, getattr(iQueue, name))
        if pathName.private:
            newQueue.QueueType = QueueType.Private
        elif pathName.system:
            newQueue.QueueType = QueueType.System
        else:
            newQueue.QueueType = QueueType.Public
        now = int(self.clock())
        newQueue.CreateTime = now
        newQueue.ModifyTime = now
        newQueue.QualifiedPathname = self.QualifiedComputerName + path[len(pathName.computer) :]
        newQueue.Scope = "Enterprise"
        if newQueue.QueueType is QueueType.Private:
            used = {q.PrivateQueueNumber for q in self.QueueCollection
                    if q.QueueType is QueueType.Private}
            newQueue.PrivateQueueNumber = next(n for n in itertools.count(1) if n not in used)
        newQueue.Identifier = self.id_generator()
        if newQueue.QueueType is QueueType.Public and not iSkipDirectory:
            # Create Directory Object (3.1.7.1.18): the model has no directory service.
            return (DirectoryOperationResult.DirectoryNotConnected, None)
        self.QueueCollection.append(newQueue)
        return (_OK, newQueue)

    def delete_queue(self, iQueue: Queue, iSkipDirectory: bool = False) -> MQStatus:
        """3.1.7.1.4 Delete Queue."""
        for iMessagePosition in list(iQueue.MessagePositionList):
            self.message_position_deleted(iQueue, iMessagePosition, MessageClass.NackQueueDeleted)
        for iQueueDesc in iQueue.OpenQueueDescriptorCollection:
            iQueueDesc.QueueReference = None
        if iQueue in self.QueueCollection:
            self.QueueCollection.remove(iQueue)
        return _OK

    # --- format names (MS-MQMQ 2.1) used by Open Queue ---
    def find_queue(self, iFormatName: str) -> Queue | None:
        """Python-only: the Queue in QueueCollection that a format name designates (3.1.7.1.5)."""
        low = iFormatName.lower()
        for q in self.QueueCollection:
            if isinstance(q, OutgoingQueue) and q.DestinationFormatName.lower() == low:
                return q
        fmt = try_parse_format_name(iFormatName)  # [MS-MQMQ] 2.1
        if fmt is None:
            return None
        if fmt.kind == "DIRECT":
            machine, qpart = fmt.machine, fmt.queue_path
            if machine.lower() not in (".", self.ComputerName.lower(),
                                       self.QualifiedComputerName.lower()):
                return None
            for q in self.QueueCollection:
                if isinstance(q, OutgoingQueue):
                    continue
                if q.Pathname.split("\\", 1)[-1].lower() == qpart.lower():
                    return q
        elif fmt.kind == "PRIVATE":
            if fmt.guid != self.Identifier:
                return None
            for q in self.QueueCollection:
                if q.QueueType is QueueType.Private and q.PrivateQueueNumber == fmt.number:
                    return q
        elif fmt.kind == "PUBLIC":
            for q in self.QueueCollection:
                if q.Identifier == fmt.guid:
                    return q
        return None

    def open_queue(
        self,
        iFormatName: str,
        iRequiredAccess: QueueAccessType,
        iSharedMode: QueueShareMode,
    ) -> tuple[MQStatus, OpenQueueDescriptor | None]:
        """3.1.7.1.5 Open Queue: returns (rStatus, rOpenQueueDescriptor)."""
        ok, expanded = self.expand_format_name(iFormatName)
        if not ok or expanded is None:
            return (MQStatus.MQ_ERROR_ILLEGAL_FORMATNAME, None)
        iFormatName = expanded
        Send = QueueAccessType.SendAccess
        if "," in iFormatName:  # multiple-element format name (MS-MQMQ 2.1.7)
            if iRequiredAccess is not Send:
                return (MQStatus.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION, None)
            if iSharedMode is not QueueShareMode.DenyNone:
                return (MQStatus.MQ_ERROR_UNSUPPORTED_ACCESS_MODE, None)
            handle = self.new_handle()
            newDesc = OpenQueueDescriptor(
                handle, handle, Send, QueueShareMode.DenyNone, None, iFormatName, Multiple=True
            )
            for single in iFormatName.split(","):
                status, desc = self.open_queue(single, Send, QueueShareMode.DenyNone)
                if status is not _OK or desc is None:
                    self.close_queue(newDesc)
                    return (status, None)
                newDesc.OpenQueueDescriptorCollection.append(desc)
            return (_OK, newDesc)
        kind = format_name_kind(iFormatName)  # [MS-MQMQ] 2.1
        fmt = try_parse_format_name(iFormatName)
        machine = fmt.machine if fmt is not None else ""
        if kind == "DIRECT" and fmt is not None and fmt.is_http and iRequiredAccess is not Send:
            return (MQStatus.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION, None)
        if kind == "MACHINE" and iRequiredAccess is Send:
            return (MQStatus.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION, None)
        if kind == "MULTICAST" and iRequiredAccess is not Send:
            return (MQStatus.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION, None)
        queueObj = self.find_queue(iFormatName)
        if queueObj is None:
            if iRequiredAccess is not Send:
                return (MQStatus.MQ_ERROR_QUEUE_NOT_FOUND, None)
            if kind == "DIRECT" and machine.lower() in (self.ComputerName.lower(), "."):
                return (MQStatus.MQ_ERROR_QUEUE_NOT_FOUND, None)
            if kind == "PUBLIC":
                # Read Directory (3.1.7.1.20) finds nothing: the model has no directory.
                return (MQStatus.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION, None)
            if kind == "PRIVATE":
                if fmt is None:
                    return (MQStatus.MQ_ERROR_ILLEGAL_FORMATNAME, None)
                if fmt.guid == self.Identifier:
                    return (MQStatus.MQ_ERROR_QUEUE_NOT_FOUND, None)
            newQueue = self.new_queue(OutgoingQueue)
            assert isinstance(newQueue, OutgoingQueue)
            newQueue.Identifier = self.id_generator()
            newQueue.Label = iFormatName
            newQueue.DestinationFormatName = iFormatName
            newQueue.NextHops = None
            newQueue.State = OutgoingQueueState.Inactive
            if not (fmt is not None and fmt.is_http) and self.HardenedSecurity:
                newQueue.State = OutgoingQueueState.Locked
            if kind == "MULTICAST":
                newQueue.Multicast = True
            # The new outgoing queue joins QueueCollection so later opens share it (3.1.3
            # iterates QueueCollection for OutgoingQueue instances).
            self.QueueCollection.append(newQueue)
            queueObj = newQueue
        Receive = QueueAccessType.ReceiveAccess
        DenyReceive = QueueShareMode.DenyReceive
        descs = queueObj.OpenQueueDescriptorCollection
        if any(d.ShareMode is DenyReceive and d.AccessType is Receive for d in descs):
            if iSharedMode is DenyReceive or (
                iSharedMode is QueueShareMode.DenyNone and iRequiredAccess is Receive
            ):
                return (MQStatus.MQ_ERROR_SHARING_VIOLATION, None)
            # The steps let a peek open through, although 3.1.1.17 says DenyReceive denies
            # peeking too (DMPR-3.1.7.1.5-SHARE-PEEK: PEEK_PAST_DENY_RECEIVE_STATUS).
            if iRequiredAccess in _PEEK_ACCESS and self.PEEK_PAST_DENY_RECEIVE_STATUS is not _OK:
                return (self.PEEK_PAST_DENY_RECEIVE_STATUS, None)
        elif any(
            d.ShareMode is DenyReceive
            and d.AccessType in (QueueAccessType.PeekAccess, QueueAccessType.PeekAdminAccess)
            for d in descs
        ):
            if iRequiredAccess is Receive:
                return (MQStatus.MQ_ERROR_SHARING_VIOLATION, None)
        elif iSharedMode is DenyReceive and any(
            d.ShareMode is QueueShareMode.DenyNone and d.AccessType is Receive for d in descs
        ):
            return (MQStatus.MQ_ERROR_SHARING_VIOLATION, None)
        handle = self.new_handle()
        newDesc = OpenQueueDescriptor(
            handle, handle, iRequiredAccess, iSharedMode, queueObj, iFormatName, Multiple=False
        )
        descs.append(newDesc)
        return (_OK, newDesc)

    def close_queue(self, iQueueDesc: OpenQueueDescriptor) -> None:
        """3.1.7.1.6 Close Queue."""
        if iQueueDesc.Multiple:
            # (the spec's first step, "If QueueReference is NULL", would end here for every
            # multiple-element descriptor; its members are closed as the next step says)
            for d in list(iQueueDesc.OpenQueueDescriptorCollection):
                self.close_queue(d)
            return
        queue = iQueueDesc.QueueReference
        if queue is None:
            return
        for readOp in list(iQueueDesc.WaitingMessageReadOperationCollection):
            if readOp.Tag is not None:
                self.cancel_waiting_message_read_request(
                    queue, readOp.Tag, MQStatus.MQ_ERROR_OPERATION_CANCELLED
                )
        for cursorObj in list(iQueueDesc.CursorCollection):
            self.close_cursor(cursorObj)
        if iQueueDesc in queue.OpenQueueDescriptorCollection:
            queue.OpenQueueDescriptorCollection.remove(iQueueDesc)

    def purge_queue(self, iQueue: Queue) -> None:
        """3.1.7.1.7 Purge Queue."""
        for iMessagePosition in list(iQueue.MessagePositionList):
            if iMessagePosition.State is not _Available:
                iMessagePosition.State = _PurgePending
            else:
                self.message_position_deleted(
                    iQueue, iMessagePosition, MessageClass.NackQueuePurged
                )

    def create_transaction(self, iTransactionIdentifier: Any) -> Transaction:
        """3.1.7.1.8 Create Transaction."""
        newTransaction = Transaction(iTransactionIdentifier)
        self.TransactionCollection[iTransactionIdentifier] = newTransaction
        return newTransaction

    def _create_position(self, iQueue: Queue, iMessage: Message) -> MessagePosition:
        """Create a MessagePosition for iMessage and insert it by the rules of 3.1.1.2."""
        plist = iQueue.MessagePositionList
        newMessagePos = MessagePosition(iMessage, iQueue, plist)
        iMessage.MessagePositionReference = newMessagePos
        plist.insert(newMessagePos)
        return newMessagePos

    def enqueue_message(
        self, iQueue: Queue, iMessage: Message, iTransaction: Transaction | None = None
    ) -> EnqueueStatus:
        """3.1.7.1.9 Enqueue Message."""
        size = self.message_storage_size(iMessage)
        # Throttled, or QueueManagerQuota would be exceeded: rStatus := 2.
        if self.Throttled or self._total_bytes + size > self.QueueManagerQuota:
            return EnqueueStatus.QueueManagerQuotaExceeded
        # iQueue.Quota (kilobytes) would be exceeded: rStatus := 1.
        if iQueue.TotalBytes + size > iQueue.Quota * 1024:
            return EnqueueStatus.QueueQuotaExceeded
        # Increment LocalQueueManager.SequentialID.
        self.SequentialID += 1
        # High-order byte of LookupIdentifier: 0x07 - Priority when the message has a
        # TransactionalMessageSequenceIdentifier, else 0x00; low 7 bytes: SequentialID.
        high = (0x07 - iMessage.Priority) & 0xFF if iMessage.TransactionalMessageSequenceIdentifier else 0
        iMessage.LookupIdentifier = (high << 56) | (self.SequentialID & 0x00FFFFFFFFFFFFFF)
        iMessage.ArrivalTime = self.clock()
        # Create newMessagePos and insert it according to the MessagePositionList rules.
        newMessagePos = self._create_position(iQueue, iMessage)
        # Start a Time To Be Received Timer (3.1.2.4) unless TimeToBeReceived is infinite.
        if iMessage.TimeToBeReceived != 0xFFFFFFFF:
            heapq.heappush(
                self._ttbr_timers,
                (self.clock() + iMessage.TimeToBeReceived, next(self._timer_seq), iMessage),
            )
        if iTransaction is not None:
            newMessagePos.State = _Locked
            iTransaction.TransactionalOperationCollection.append(
                TransactionalOperation(OperationType.Enqueue, newMessagePos)
            )
        else:
            self.message_position_available(iQueue, newMessagePos)
        return EnqueueStatus.NoError

    def _complete_dequeue(
        self,
        iQueue: Queue,
        iPosition: MessagePosition,
        iTransaction: Transaction | None,
        iTwoPhaseRead: bool,
    ) -> ReadResult:
        """The common tail of 3.1.7.1.10 once iPosition references an Available position."""
        if iTransaction is not None:
            if iTransaction.Identifier is not None:
                iPosition.State = _Locked
                iTransaction.TransactionalOperationCollection.append(
                    TransactionalOperation(
                        OperationType.Dequeue, iPosition, DequeueReason=MessageClass.AckReceive
                    )
                )
        elif iTwoPhaseRead:
            iPosition.State = _Locked
        else:
            self.message_position_deleted(iQueue, iPosition, MessageClass.AckReceive)
        return ReadResult(_OK, iPosition.MessageReference)

    def dequeue_message(
        self,
        iQueueDesc: OpenQueueDescriptor,
        iTimeout: float | None = None,
        iCursor: Cursor | None = None,
        iTransaction: Transaction | None = None,
        iTag: Any = None,
        iTwoPhaseRead: bool = False,
    ) -> ReadResult:
        """3.1.7.1.10 Dequeue Message: returns ReadResult(rStatus, rMessage[, pending])."""
        iQueue = iQueueDesc.QueueReference
        if iQueue is None:
            return ReadResult(MQStatus.MQ_ERROR_QUEUE_NOT_AVAILABLE)
        if iTimeout is None:
            iTimeout = INFINITE
        if iCursor is not None:
            status, iPosition = iCursor.get_next_message_for_dequeue(iTimeout == 0)
            if status is CursorStatus.AlreadyReceived:
                return ReadResult(MQStatus.MQ_ERROR_MESSAGE_ALREADY_RECEIVED)
            if status is CursorStatus.NotFound:
                return ReadResult(MQStatus.MQ_ERROR_MESSAGE_NOT_FOUND)
            if status is CursorStatus.Waiting:
                cursor = iCursor

                def resume_cursor(st: MQStatus, position: MessagePosition | None) -> ReadResult:
                    if st is _OK and position is not None:
                        cursor.message_available(position)
                        return self._complete_dequeue(iQueue, position, iTransaction, iTwoPhaseRead)
                    cursor.wait_time_expired()
                    return ReadResult(st)

                return self._wait(iQueueDesc, iTimeout, True, iTag, iCursor, resume_cursor)
            assert iPosition is not None
        else:
            iPosition = self.seek_available_message_position(
                self.cursorless_initial_position(iQueue, False), iQueue, False, _Forward
            )
            if iPosition is iQueue.MessagePositionList.End:

                def resume(st: MQStatus, position: MessagePosition | None) -> ReadResult:
                    if st is _OK and position is not None:
                        return self._complete_dequeue(iQueue, position, iTransaction, iTwoPhaseRead)
                    return ReadResult(st)

                return self._wait(iQueueDesc, iTimeout, True, iTag, None, resume)
        return self._complete_dequeue(iQueue, iPosition, iTransaction, iTwoPhaseRead)

    def _wait(
        self,
        iQueueDesc: OpenQueueDescriptor,
        iTimeout: float,
        iDestructiveRead: bool,
        iTag: Any,
        iCursor: Cursor | None,
        resume: Resume,
    ) -> ReadResult:
        """Generate Wait For New Message; a Failed wait resumes at once with WAIT_FAILED_STATUS
        (DMPR-3.1.7.3.1-FAILED-STATUS, reading io-timeout: the reads pass on "Failed", which is
        no MQ status)."""
        readOp = self.wait_for_new_message(iQueueDesc, iTimeout, iDestructiveRead, iTag, iCursor, resume)
        if readOp is None:
            return resume(self.WAIT_FAILED_STATUS, None)
        return ReadResult(None, None, readOp)

    def dequeue_message_begin(
        self,
        iQueueDesc: OpenQueueDescriptor,
        iTimeout: float | None = None,
        iCursor: Cursor | None = None,
        iTag: Any = None,
        iTransaction: Transaction | None = None,
    ) -> ReadResult:
        """3.1.7.1.11 Dequeue Message Begin."""
        if iQueueDesc.QueueReference is None:
            return ReadResult(MQStatus.MQ_ERROR_QUEUE_NOT_AVAILABLE)
        if iTimeout is None:
            iTimeout = INFINITE
        return self.dequeue_message(iQueueDesc, iTimeout, iCursor, iTransaction, iTag, True)

    def dequeue_message_end(
        self,
        iQueueDesc: OpenQueueDescriptor,
        iMessage: Message,
        iDeleteMessage: bool,
        iTransactional: bool | None = None,
    ) -> MQStatus:
        """3.1.7.1.12 Dequeue Message End."""
        iQueue = iQueueDesc.QueueReference
        if iQueue is None:
            return MQStatus.MQ_ERROR_QUEUE_NOT_AVAILABLE
        pos = iMessage.MessagePositionReference
        assert pos is not None
        if pos.State is _Available:
            return MQStatus.MQ_ERROR_TRANSACTION_SEQUENCE
        if iTransactional:
            return _OK
        if iDeleteMessage or pos.State is _PurgePending:
            reason = (
                MessageClass.NackQueuePurged if pos.State is _PurgePending
                else MessageClass.AckReceive
            )
            self.message_position_deleted(iQueue, pos, reason)
        else:
            self.message_position_available(iQueue, pos)
        return _OK

    def read_message_by_lookup_identifier(
        self,
        iQueueDesc: OpenQueueDescriptor,
        iLookupId: int,
        iPeekOperation: bool,
        iLookupOperation: MessageSeekAction,
        iTransaction: Transaction | None = None,
        iTwoPhaseRead: bool = False,
    ) -> ReadResult:
        """3.1.7.1.13 Read Message By Lookup Identifier."""
        iQueue = iQueueDesc.QueueReference
        if iQueue is None:
            return ReadResult(MQStatus.MQ_ERROR_QUEUE_NOT_AVAILABLE)
        status, iPosition = self.seek_available_message_position_with_id(
            iQueue, iLookupId, iPeekOperation, iLookupOperation
        )
        if status is not _OK:
            return ReadResult(status)
        # The seek returned End (or Start, backward) with MQ_OK: the spec then reads an
        # undefined message (DMPR-3.1.7.1.13-END: LOOKUP_WITHOUT_MESSAGE_STATUS).
        if iPosition is None or iPosition.is_special:
            return ReadResult(self.LOOKUP_WITHOUT_MESSAGE_STATUS)
        if not iPeekOperation:
            if iTransaction is not None:
                if iTransaction.Identifier is not None:
                    iPosition.State = _Locked
                    iTransaction.TransactionalOperationCollection.append(
                        TransactionalOperation(
                            OperationType.Dequeue, iPosition, DequeueReason=MessageClass.AckReceive
                        )
                    )
            elif iTwoPhaseRead:
                iPosition.State = _Locked
            else:
                self.message_position_deleted(iQueue, iPosition, MessageClass.AckReceive)
        return ReadResult(_OK, iPosition.MessageReference)

    def _peek_wait(
        self,
        iQueueDesc: OpenQueueDescriptor,
        iQueue: Queue,
        iTimeout: float,
        iCursor: Cursor | None,
    ) -> ReadResult:
        cursor = iCursor

        def resume(st: MQStatus, position: MessagePosition | None) -> ReadResult:
            if st is _OK and position is not None:
                rMessage = position.MessageReference
                if cursor is not None:
                    cursor.message_available(position)
                # Release Next Reader (3.1.7.3.7) lets Message Position Available go on. Without a
                # cursor 3.1.7.1.15 generates none; the model releases all the same
                # (DMPR-3.1.7.1.15-RELEASE, reading released).
                self.release_next_reader(iQueue)
                return ReadResult(_OK, rMessage)
            if cursor is not None:
                cursor.wait_time_expired()
            return ReadResult(st)

        return self._wait(iQueueDesc, iTimeout, False, None, iCursor, resume)

    def peek_next_message(
        self, iQueueDesc: OpenQueueDescriptor, iTimeout: float | None, iCursor: Cursor
    ) -> ReadResult:
        """3.1.7.1.14 Peek Next Message."""
        iQueue = iQueueDesc.QueueReference
        if iQueue is None:
            return ReadResult(MQStatus.MQ_ERROR_QUEUE_NOT_AVAILABLE)
        if iTimeout is None:
            iTimeout = INFINITE
        status, rPosition = iCursor.get_next_message_for_peek()
        if status is CursorStatus.Succeeded:
            assert rPosition is not None
            return ReadResult(_OK, rPosition.MessageReference)
        if status is CursorStatus.IllegalCursorAction:
            return ReadResult(MQStatus.MQ_ERROR_ILLEGAL_CURSOR_ACTION)
        return self._peek_wait(iQueueDesc, iQueue, iTimeout, iCursor)

    def peek_message(
        self,
        iQueueDesc: OpenQueueDescriptor,
        iTimeout: float | None = None,
        iCursor: Cursor | None = None,
    ) -> ReadResult:
        """3.1.7.1.15 Peek Message."""
        iQueue = iQueueDesc.QueueReference
        if iQueue is None:
            return ReadResult(MQStatus.MQ_ERROR_QUEUE_NOT_AVAILABLE)
        if iTimeout is None:
            iTimeout = INFINITE
        if iCursor is not None:
            status, rPosition = iCursor.get_message_for_peek()
            if status is CursorStatus.Succeeded:
                assert rPosition is not None
                return ReadResult(_OK, rPosition.MessageReference)
            if status is CursorStatus.AlreadyReceived:
                return ReadResult(MQStatus.MQ_ERROR_MESSAGE_ALREADY_RECEIVED)
            return self._peek_wait(iQueueDesc, iQueue, iTimeout, iCursor)
        r = self.seek_available_message_position(
            self.cursorless_initial_position(iQueue, True), iQueue, True, _Forward
        )
        if r is iQueue.MessagePositionList.End:
            return self._peek_wait(iQueueDesc, iQueue, iTimeout, None)
        return ReadResult(_OK, r.MessageReference)

    def move_message(
        self,
        iMessagePos: MessagePosition,
        iTargetQueue: Queue,
        iTransaction: Transaction | None = None,
    ) -> None:
        """3.1.7.1.16 Move Message."""
        if iTransaction is None:
            iMessagePos.State = _Deleted
            assert iMessagePos.MessageReference is not None
            newMessagePos = self._create_position(iTargetQueue, iMessagePos.MessageReference)
            newMessagePos.State = _Available
            if iTargetQueue.QueueType is not QueueType.System:
                self.message_position_available(iTargetQueue, newMessagePos)
        else:
            iMessagePos.State = _Locked
            iTransaction.TransactionalOperationCollection.append(
                TransactionalOperation(OperationType.Move, iMessagePos, iTargetQueue)
            )

    def cancel_waiting_message_read_request(
        self, iQueue: Queue, iTag: Any, iStatus: MQStatus
    ) -> MQStatus:
        """3.1.7.1.17 Cancel Waiting Message Read Request."""
        for queueDesc in list(iQueue.OpenQueueDescriptorCollection):
            readers = queueDesc.WaitingMessageReadOperationCollection
            for readOp in list(readers):
                if readOp.Tag is not None and readOp.Tag == iTag:
                    readers.remove(readOp)
                    self.waiting_message_read_timer_stop(readOp, iStatus)
                    return _OK
        return MQStatus.STATUS_NOT_FOUND

    def enqueue_message_to_an_open_queue(
        self,
        iOpenQueueDescriptor: OpenQueueDescriptor,
        iMessage: Message,
        iTransaction: Transaction | None = None,
    ) -> EnqueueStatus:
        """3.1.7.1.27 Enqueue Message To An Open Queue."""
        if not iOpenQueueDescriptor.Multiple:
            queue = iOpenQueueDescriptor.QueueReference
            if queue is None:
                raise UndefinedBehaviour("3.1.7.1.27", "descriptor has no QueueReference")
            return self.enqueue_message(queue, iMessage, iTransaction)
        iMessage.DestinationMultiQueueFormatName = iOpenQueueDescriptor.FormatName
        for single in iOpenQueueDescriptor.OpenQueueDescriptorCollection:
            copy = iMessage.copy()
            copy.DestinationQueueFormatName = single.FormatName
            queue = single.QueueReference
            if queue is None:
                raise UndefinedBehaviour("3.1.7.1.27", "member descriptor has no QueueReference")
            status = self.enqueue_message(queue, copy, iTransaction)
            if status is not EnqueueStatus.NoError:
                return status
        return EnqueueStatus.NoError

    def add_message_to_dispatch_collection(self, iData: Any, iPosition: MessagePosition) -> None:
        """3.1.7.1.28 Add Message To Dispatch Collection."""
        queue = iPosition.QueueReference
        message = iPosition.MessageReference
        assert queue is not None and message is not None
        self.DispatchCollection.append(
            DispatchEntry(iPosition, iData, queue.BasePriority + message.Priority, False)
        )
        self.dispatch_send_message()

    def remove_message_from_dispatch_collection(self, iPosition: MessagePosition) -> None:
        """3.1.7.1.29 Remove Message From Dispatch Collection."""
        for entry in self.DispatchCollection:
            if entry.MessagePositionReference is iPosition:
                self.DispatchCollection.remove(entry)
                break
        self.dispatch_send_message()

    def remove_messages_from_dispatch_collection_by_queue(self, iOutgoingQueue: Queue) -> None:
        """3.1.7.1.34 Remove Messages From Dispatch Collection By Queue."""
        self.DispatchCollection[:] = [
            e for e in self.DispatchCollection
            if e.MessagePositionReference.QueueReference is not iOutgoingQueue
        ]

    # ================================================================ 3.1.7.2
    def message_position_deleted(
        self, iQueue: Queue, iPosition: MessagePosition, iReason: MessageClass
    ) -> None:
        """3.1.7.2.1 Message Position Deleted."""
        message = iPosition.MessageReference
        size = self.message_storage_size(message) if message is not None else 0
        # Decrement iQueue.TotalBytes by the storage the message consumes.
        iQueue.TotalBytes -= size
        self._total_bytes -= size
        # Set iPosition.State to Deleted.
        iPosition.State = _Deleted
        # Remove iPosition from iQueue.MessagePositionList.
        iQueue.MessagePositionList.remove(iPosition)
        for subscriber in self.message_position_deleted_subscribers:
            subscriber(iQueue, iPosition, iReason)

    def message_position_available(self, iQueue: Queue, iPosition: MessagePosition) -> None:
        """3.1.7.2.2 Message Position Available.

        Satisfies waiting readers (first-in first-out per descriptor) until a destructive one
        takes the message, then notifies ``message_position_available_subscribers``.

        Readings the model takes where the spec leaves a choice (cases/requirements.yaml):
        - DMPR-3.1.7.2.2-TOTALBYTES, adds-again: TotalBytes is incremented as the step says, also
          for a Locked position that becomes Available again (abort, Dequeue Message End), which
          was never decremented (:meth:`storage_added_when_available`).
        - DMPR-3.1.7.2.2-DESCRIPTOR-ORDER, open-order: the descriptors are visited in the order
          they were opened (:meth:`descriptor_visit_order`).
        - DMPR-3.1.7.1.15-RELEASE, released: a non-destructive reader never holds processing up
          (the wait for Release Next Reader is synchronous here), with or without a cursor
          (:meth:`peek_without_cursor_releases`).
        """
        # Increment iQueue.TotalBytes by the message's storage (DMPR-3.1.7.2.2-TOTALBYTES).
        size = self.storage_added_when_available(iQueue, iPosition)
        iQueue.TotalBytes += size
        self._total_bytes += size
        iPosition.State = _Available
        for desc in self.descriptor_visit_order(iQueue):
            for iReader in list(desc.WaitingMessageReadOperationCollection):
                if iReader.done or iReader not in desc.WaitingMessageReadOperationCollection:
                    continue
                self.waiting_message_read_satisfied(iReader, iPosition)
                if iReader.DestructiveRead or (
                    iReader.CursorReference is None and not self.peek_without_cursor_releases(iQueue, iReader)
                ):
                    # Discontinue processing; remaining readers stay blocked.
                    self._notify_available(iQueue, iPosition)
                    return
                # Else: the peek's continuation generated Release Next Reader; go on.
        self._notify_available(iQueue, iPosition)

    def _notify_available(self, iQueue: Queue, iPosition: MessagePosition) -> None:
        for subscriber in self.message_position_available_subscribers:
            subscriber(iQueue, iPosition)

    def process_pause_queue(self, iQueue: OutgoingQueue) -> None:
        """3.1.7.2.3 Pause Queue."""
        iQueue.State = OutgoingQueueState.OnHold

    def process_resume_queue(self, iQueue: OutgoingQueue) -> None:
        """3.1.7.2.4 Resume Queue."""
        iQueue.State = OutgoingQueueState.Inactive

    def begin_flow_control(self) -> None:
        """3.1.7.2.5 Begin Flow Control."""
        self.Throttled = True

    def end_flow_control(self) -> None:
        """3.1.7.2.6 End Flow Control."""
        self.Throttled = False

    def time_to_be_received_timer_expired(self, iMessage: Message) -> None:
        """3.1.7.2.7 Time To Be Received Timer Expired."""
        pos = iMessage.MessagePositionReference
        assert pos is not None
        if iMessage.TransactionIdentifier is not None:
            pos.State = _Locked
            op = TransactionalOperation(
                OperationType.Dequeue, pos, DequeueReason=MessageClass.NackReceiveTimeout
            )
            trans = self.TransactionCollection.get(iMessage.TransactionIdentifier)
            if trans is not None:
                trans.TransactionalOperationCollection.append(op)
        else:
            queue = pos.QueueReference
            assert queue is not None
            self.message_position_deleted(queue, pos, MessageClass.NackReceiveTimeout)

    # ================================================================ 3.1.7.3 internal
    def wait_for_new_message(
        self,
        iQueueDesc: OpenQueueDescriptor,
        iTimeout: float,
        iDestructiveRead: bool,
        iTag: Any = None,
        iCursor: Cursor | None = None,
        resume: Resume | None = None,
    ) -> WaitingMessageReadOperation | None:
        """3.1.7.3.1 Wait For New Message.

        Returns None when the spec's rStatus is Failed (no queue, or iTimeout <= 0); otherwise
        the WaitingMessageReadOperation that now waits. ``resume`` (python-only) is the blocked
        event's continuation, called with (rStatus, rMessagePosition) when the wait ends.
        """
        if iQueueDesc.QueueReference is None:
            return None
        if iTimeout <= 0:
            return None
        readOp = WaitingMessageReadOperation(iDestructiveRead, iTag, iCursor)
        readOp.queue_descriptor = iQueueDesc
        readOp._resume = resume
        iQueueDesc.WaitingMessageReadOperationCollection.append(readOp)
        self.waiting_message_read_timer_start(readOp, iTimeout)
        return readOp

    def _end_wait(
        self,
        iReader: WaitingMessageReadOperation,
        status: MQStatus,
        position: MessagePosition | None,
    ) -> None:
        """The end of Wait For New Message: delete the reader, resume the blocked event."""
        desc = iReader.queue_descriptor
        if desc is not None and iReader in desc.WaitingMessageReadOperationCollection:
            desc.WaitingMessageReadOperationCollection.remove(iReader)
        resume = iReader._resume
        iReader._resume = None
        iReader.result = resume(status, position) if resume is not None else ReadResult(status)

    def seek_available_message_position(
        self,
        iInitialPosition: MessagePosition,
        iQueue: Queue,
        iPeekOperation: bool,
        iSeekDirection: SeekDirection = _Forward,
    ) -> MessagePosition:
        """3.1.7.3.2 Seek Available Message Position (index form).

        The spec walks Next (Forward; from Head when iInitialPosition is Start) or Previous
        (Backward; from Tail when it is End) while the position is not Available, returning a
        Locked position at once when iPeekOperation is True and its message
        AllowPeekWhenLocked; the walk ends on End (Forward) or Start (Backward). The indexed
        MessagePositionList answers the same question in O(log n): the first/last position
        beyond iInitialPosition that is Available (or Locked + AllowPeekWhenLocked for a peek).
        ``harness.model.literal.LiteralQueueManager`` renders the walk step by step.

        Readings taken where the spec leaves a choice (cases/requirements.yaml), each a hook:
        End.Next (DMPR-3.1.1.2-END-NEXT, :meth:`forward_seek_from_end`), Start.Previous
        (DMPR-3.1.1.2-START-PREVIOUS, :meth:`backward_seek_from_start`), what a backward walk
        that finds nothing returns (DMPR-3.1.7.3.2-BWD-START, :meth:`backward_seek_miss`) and
        where a seek from a position no longer in the list starts (DMPR-3.1.1.11-REMOVED-NEXT,
        :meth:`removed_position_origin`).
        """
        plist = iQueue.MessagePositionList
        assert isinstance(plist, IndexedMessagePositionList)
        if not iInitialPosition._in_list and not iInitialPosition._special:
            iInitialPosition = self.removed_position_origin(iQueue, iInitialPosition)
        if iSeekDirection is not _Backward:
            if iInitialPosition is plist.End:
                return self.forward_seek_from_end(iQueue, iPeekOperation)
            return plist.seek(iInitialPosition, iPeekOperation, True)
        if iInitialPosition is plist.Start:
            return self.backward_seek_from_start(iQueue, iPeekOperation)
        r = plist.seek(iInitialPosition, iPeekOperation, False)
        return self.backward_seek_miss(iQueue) if r is plist.Start else r

    def seek_available_message_position_with_id(
        self,
        iQueue: Queue,
        iLookupId: int,
        iPeekOperation: bool,
        iLookupAction: MessageSeekAction,
    ) -> tuple[MQStatus, MessagePosition | None]:
        """3.1.7.3.3 Seek Available Message Position With Id: returns (rStatus, rMessagePosition).

        SeekCurrent on a position that is neither Available nor (peek and Locked) is resolved
        as: Deleted -> MQ_ERROR_MESSAGE_ALREADY_RECEIVED, otherwise MQ_ERROR_MESSAGE_NOT_FOUND
        (the flattened nesting of the spec leaves the non-peek case without an outcome):
        interpretation DMPR-3.1.7.3.3-CURRENT-RECEIVE, :meth:`current_receive_unavailable`.
        """
        plist = iQueue.MessagePositionList
        iInitialPosition = plist.find_by_lookup_identifier(iLookupId)
        if iInitialPosition is None:
            return (MQStatus.MQ_ERROR_MESSAGE_NOT_FOUND, None)
        if iLookupAction is MessageSeekAction.SeekFirst:
            return (_OK, self.seek_available_message_position(plist.Start, iQueue, iPeekOperation, _Forward))
        if iLookupAction is MessageSeekAction.SeekPrevious:
            return (_OK, self.seek_available_message_position(iInitialPosition, iQueue, iPeekOperation, _Backward))
        if iLookupAction is MessageSeekAction.SeekNext:
            return (_OK, self.seek_available_message_position(iInitialPosition, iQueue, iPeekOperation, _Forward))
        if iLookupAction is MessageSeekAction.SeekLast:
            return (_OK, self.seek_available_message_position(plist.End, iQueue, iPeekOperation, _Backward))
        # SeekCurrent
        messagePos = iInitialPosition
        state = messagePos.State
        if state is _Available:
            return (_OK, messagePos)
        if not iPeekOperation:  # DMPR-3.1.7.3.3-CURRENT-RECEIVE
            return self.current_receive_unavailable(messagePos)
        if state is _Locked:
            message = messagePos.MessageReference
            if message is not None and message.AllowPeekWhenLocked:
                return (_OK, messagePos)
            return (MQStatus.MQ_ERROR_TRANSACTION_USAGE, None)
        if state is _Deleted:
            return (MQStatus.MQ_ERROR_MESSAGE_ALREADY_RECEIVED, None)
        return (MQStatus.MQ_ERROR_MESSAGE_NOT_FOUND, None)

    def waiting_message_read_timer_start(
        self, iReader: WaitingMessageReadOperation, iTimeout: float
    ) -> None:
        """3.1.7.3.4 Waiting Message Read Timer Start (the timer, 3.1.2.3, fires via the caller)."""
        iReader.timeout = iTimeout
        iReader.deadline = self.clock() + iTimeout
        if iTimeout != INFINITE:
            heapq.heappush(self._wait_timers, (iReader.deadline, next(self._timer_seq), iReader))

    def waiting_message_read_timer_stop(
        self, iReader: WaitingMessageReadOperation, iStatus: MQStatus
    ) -> MQStatus:
        """3.1.7.3.5 Waiting Message Read Timer Stop: rStatus := iStatus, consumed by 3.1.7.3.1."""
        rStatus = iStatus
        if not iReader.done:
            self._end_wait(iReader, rStatus, None)
        return rStatus

    def waiting_message_read_satisfied(
        self, iReader: WaitingMessageReadOperation, iPosition: MessagePosition
    ) -> None:
        """3.1.7.3.6 Waiting Message Read Satisfied, consumed by Wait For New Message (3.1.7.3.1):
        rStatus := Success, rMessagePosition := iPosition, the timer is cancelled and the
        reader deleted from its collection."""
        if not iReader.done:
            iReader.deadline = INFINITE
            self._end_wait(iReader, _OK, iPosition)

    def release_next_reader(self, iReleaseOnQueue: Queue) -> None:
        """3.1.7.3.7 Release Next Reader: consumed by Message Position Available (synchronous
        here, so it has nothing left to do)."""

    def expand_format_name(self, iInputFormatName: str) -> tuple[bool, str | None]:
        """3.1.7.3.8 Expand Format Name: returns (rStatus, rOutputFormatName)."""
        if format_name_kind(iInputFormatName) != "DL" and "," not in iInputFormatName:
            return (True, iInputFormatName)
        try:
            parsed = parse_format_names(iInputFormatName)  # [MS-MQMQ] 2.1.7
        except FormatNameError:
            return (False, None)
        if any(e.kind == "DL" for e in parsed):
            # Resolve Distribution List (MS-MQDSSM 3.1.6.9) needs the directory.
            return (False, None)
        seen: dict[str, str] = {}  # one element per queue: the name as written, keyed by its canonical form
        for text, e in sorted(zip(iInputFormatName.split(","), parsed, strict=True), key=lambda p: p[0].lower()):
            seen.setdefault(str(e).lower(), text)
        output = list(seen.values())
        if len(output) == 1:
            return (True, output[0])
        return (True, ",".join(output))

    def dispatch_send_message(self) -> None:
        """3.1.7.3.9 Dispatch Send Message."""
        if any(e.SendInProgress for e in self.DispatchCollection):
            return
        candidates = [
            e for e in self.DispatchCollection
            if e.MessagePositionReference.State is not _Deleted
            and e.MessagePositionReference.QueueReference is not None
            and e.MessagePositionReference.QueueReference.Active
        ]
        if not candidates:
            return
        nextEntryToBeDispatched = max(candidates, key=lambda e: e.Priority)
        nextEntryToBeDispatched.SendInProgress = True
        for subscriber in self.send_user_message_subscribers:
            subscriber(
                nextEntryToBeDispatched.ProtocolData,
                nextEntryToBeDispatched.MessagePositionReference,
            )
