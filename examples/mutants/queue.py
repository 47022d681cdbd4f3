"""Mutants of the queue, transaction and waiting-reader events of [MS-MQDMPR] 3.1.4 and 3.1.7."""

from __future__ import annotations

from typing import Any

from harness.model import MessageClass, MessagePositionState, MQStatus, QueueManager
from harness.model.adm import Queue, WaitingMessageReadOperation
from harness.model.enums import OperationType
from harness.model.messages import MessagePosition


class PurgeDeletesLocked(QueueManager):
    """Breaks 3.1.7.1.7: "If iMessagePosition.State is not Available: Set iMessagePosition.State
    to PurgePending" - this purge deletes Locked positions as well."""

    def purge_queue(self, iQueue: Queue) -> None:
        for pos in list(iQueue.MessagePositionList):
            self.message_position_deleted(iQueue, pos, MessageClass.NackQueuePurged)


class AbortRequeuesAtTail(QueueManager):
    """Breaks 3.1.4.5: an aborted receive generates Message Position Available on the same
    position (the message is Available again in its place); this mutant re-enqueues it at the
    tail of its priority as a new position."""

    def transaction_abort(self, iTransactionIdentifier: Any) -> MQStatus:
        transObj = self.TransactionCollection.get(iTransactionIdentifier)
        if transObj is not None:
            for op in transObj.TransactionalOperationCollection:
                pos = op.MessagePositionReference
                if op.OperationType is OperationType.Dequeue and pos.State is not MessagePositionState.PurgePending:
                    queue = pos.QueueReference
                    assert queue is not None and pos.MessageReference is not None
                    queue.MessagePositionList.remove(pos)
                    newpos = self._create_position(queue, pos.MessageReference)
                    newpos.State = MessagePositionState.Locked
                    op.MessagePositionReference = newpos
        return super().transaction_abort(iTransactionIdentifier)


class CommitLeavesReceiveLocked(QueueManager):
    """Breaks 3.1.4.4: for a Dequeue operation commit generates Message Position Deleted; this
    mutant drops the operation and leaves the position Locked."""

    def transaction_commit(self, iTransactionIdentifier: Any) -> MQStatus:
        transObj = self.TransactionCollection.get(iTransactionIdentifier)
        if transObj is not None:
            transObj.TransactionalOperationCollection[:] = [
                op for op in transObj.TransactionalOperationCollection
                if op.OperationType is not OperationType.Dequeue
            ]
        return super().transaction_commit(iTransactionIdentifier)


class TimeoutReturnsOK(QueueManager):
    """Breaks 3.1.6.3 / 3.1.7.3.1: an expired (or zero) wait ends with MQ_ERROR_IO_TIMEOUT;
    this mutant reports MQ_OK."""

    WAIT_FAILED_STATUS = MQStatus.MQ_OK

    def waiting_message_read_timer_expired(self, iReader: WaitingMessageReadOperation) -> None:
        self.waiting_message_read_timer_stop(iReader, MQStatus.MQ_OK)


class DestructiveReaderDoesNotStop(QueueManager):
    """Breaks 3.1.7.2.2: "If iReader.DestructiveRead is True: Discontinue processing this
    event" - this mutant hands the position to every waiting reader."""

    def message_position_available(self, iQueue: Queue, iPosition: MessagePosition) -> None:
        message = iPosition.MessageReference
        size = self.message_storage_size(message) if message is not None else 0
        iQueue.TotalBytes += size
        self._total_bytes += size
        iPosition.State = MessagePositionState.Available
        for desc in list(iQueue.OpenQueueDescriptorCollection):
            for reader in list(desc.WaitingMessageReadOperationCollection):
                if not reader.done:
                    self.waiting_message_read_satisfied(reader, iPosition)
        self._notify_available(iQueue, iPosition)


class TransactionalReceiveDeletes(QueueManager):
    """Breaks 3.1.7.1.10: with iTransaction the position is set Locked (and a Dequeue operation
    recorded); this mutant deletes the message at once, as a non-transactional receive."""

    def dequeue_message(self, iQueueDesc: Any, iTimeout: Any = None, iCursor: Any = None,
                        iTransaction: Any = None, iTag: Any = None, iTwoPhaseRead: bool = False) -> Any:
        return super().dequeue_message(iQueueDesc, iTimeout, iCursor, None, iTag, iTwoPhaseRead)


class PauseIsNoop(QueueManager):
    """Breaks 3.1.4.14 / 3.1.7.2.3: Pause Queue sets the outgoing queue's State to OnHold; this
    mutant leaves it unchanged."""

    def process_pause_queue(self, iQueue: Any) -> None:
        return None
