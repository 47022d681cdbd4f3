"""Reads and cursors of [MS-MQDMPR]: enqueue, dequeue, peek, lookup, move, and the cursors.

Renders 3.1.7.1.1 Open Cursor, 3.1.7.1.2 Close Cursor, 3.1.7.1.9 Enqueue Message,
3.1.7.1.10 Dequeue Message, 3.1.7.1.11 Dequeue Message Begin, 3.1.7.1.12 Dequeue Message End,
3.1.7.1.13 Read Message By Lookup Identifier, 3.1.7.1.14 Peek Next Message, 3.1.7.1.15 Peek
Message, 3.1.7.1.16 Move Message and 3.1.7.1.17 Cancel Waiting Message Read Request.  A read
that finds no message waits (Wait For New Message, 3.1.7.3.1): it returns a pending
ReadResult whose continuation the wait's end resumes.
"""

from __future__ import annotations

from typing import Any

from harness.model.adm import OpenQueueDescriptor, Queue, ReadResult, Transaction, TransactionalOperation
from harness.model.cursor import Cursor
from harness.model.enums import (
    INFINITE,
    CursorStatus,
    EnqueueStatus,
    MessageClass,
    MessagePositionState,
    MessageSeekAction,
    MQStatus,
    OperationType,
    QueueType,
    SeekDirection,
)
from harness.model.messages import Message, MessagePosition
from harness.model.qm_core import Resume
from harness.model.qm_transactions import Transactions

__all__ = ["Reads"]

_Available = MessagePositionState.Available
_Locked = MessagePositionState.Locked
_Deleted = MessagePositionState.Deleted
_PurgePending = MessagePositionState.PurgePending
_Forward = SeekDirection.Forward
_OK = MQStatus.MQ_OK


class Reads(Transactions):
    """3.1.7.1.1-3.1.7.1.2 and 3.1.7.1.9-3.1.7.1.17."""

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
            self.start_time_to_be_received_timer(iMessage)
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
        """The receive's tail of 3.1.7.1.10 and 3.1.7.1.13 once iPosition is the position read: lock
        it in iTransaction, lock it for a two-phase read (3.1.7.1.11), or delete it."""
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
        if iPeekOperation:
            return ReadResult(_OK, iPosition.MessageReference)
        return self._complete_dequeue(iQueue, iPosition, iTransaction, iTwoPhaseRead)

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
