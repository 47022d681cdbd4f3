"""Transactions of [MS-MQDMPR]: the Transaction and TransactionalOperation ADM elements
(3.1.1.14-3.1.1.15) driven by 3.1.7.1.8 Create Transaction and the higher-layer events
3.1.4.3 Transaction Prepare, 3.1.4.4 Transaction Commit and 3.1.4.5 Transaction Abort, which
make the positions a transaction locked available again or delete them (3.1.7.2.1-3.1.7.2.2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.model.adm import Queue, Transaction, TransactionalOperation
from harness.model.enums import MessageClass, MessagePositionState, MQStatus, OperationType
from harness.model.messages import MessagePosition
from harness.model.qm_timers import Timers

__all__ = ["Transactions"]

_Deleted = MessagePositionState.Deleted
_PurgePending = MessagePositionState.PurgePending
_OK = MQStatus.MQ_OK


class Transactions(Timers):
    """3.1.4.3-3.1.4.5 and 3.1.7.1.8."""

    def create_transaction(self, iTransactionIdentifier: Any) -> Transaction:
        """3.1.7.1.8 Create Transaction."""
        newTransaction = Transaction(iTransactionIdentifier)
        self.TransactionCollection[iTransactionIdentifier] = newTransaction
        return newTransaction

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
        return self._end_transaction(iTransactionIdentifier, self._commit_operation)

    def _commit_operation(self, transOp: TransactionalOperation, pos: MessagePosition, queue: Queue) -> None:
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

    def transaction_abort(self, iTransactionIdentifier: Any) -> MQStatus:
        """3.1.4.5 Transaction Abort."""
        return self._end_transaction(iTransactionIdentifier, self._abort_operation)

    def _abort_operation(self, transOp: TransactionalOperation, pos: MessagePosition, queue: Queue) -> None:
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

    def _end_transaction(
        self,
        iTransactionIdentifier: Any,
        apply: Callable[[TransactionalOperation, MessagePosition, Queue], None],
    ) -> MQStatus:
        """The loop 3.1.4.4 and 3.1.4.5 share: ``apply`` each TransactionalOperation in order,
        removing it from the collection after it, then remove the Transaction.

        The operations applied are removed together once the loop ends (or stops on an error), not
        one by one from the front, which moved every later one each time: linear in the number of
        operations, not quadratic.  Nothing reads the collection while the loop runs; one appended
        meanwhile is applied too, as before."""
        transObj = self.TransactionCollection.get(iTransactionIdentifier)
        if transObj is None:
            return MQStatus.MQ_ERROR_TRANSACTION_SEQUENCE
        ops = transObj.TransactionalOperationCollection
        done = 0
        try:
            while done < len(ops):
                transOp = ops[done]
                pos = transOp.MessagePositionReference
                queue = pos.QueueReference
                assert isinstance(queue, Queue)
                apply(transOp, pos, queue)
                done += 1
        finally:
            # Remove each transOp applied from transObj.TransactionalOperationCollection.
            del ops[:done]
        del self.TransactionCollection[iTransactionIdentifier]
        return _OK
