"""Timers of [MS-MQDMPR]: waiting readers and the time to be received.

Renders the Waiting Message Read Timer (3.1.2.3) with its events 3.1.7.3.4 Start,
3.1.7.3.5 Stop and 3.1.6.3 Expired; 3.1.7.3.1 Wait For New Message, which creates the
WaitingMessageReadOperation (3.1.1.10) the timer bounds; 3.1.7.3.7 Release Next Reader; and the
Time To Be Received Timer (3.1.2.4) with 3.1.7.2.7 Time To Be Received Timer Expired.  Sans-IO:
a timer is an entry in a heap keyed by the injected clock; the caller fires what is due
(:meth:`Timers.fire_due_timers`).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Any

from harness.model.adm import OpenQueueDescriptor, Queue, TransactionalOperation, WaitingMessageReadOperation
from harness.model.cursor import Cursor
from harness.model.enums import INFINITE, MessageClass, MessagePositionState, MQStatus, OperationType
from harness.model.messages import Message
from harness.model.qm_core import Resume
from harness.model.qm_positions import PositionEvents

__all__ = ["Timers"]

_Locked = MessagePositionState.Locked


class Timers(PositionEvents):
    """3.1.2.3-3.1.2.4, 3.1.6.3, 3.1.7.2.7, 3.1.7.3.1, 3.1.7.3.4-3.1.7.3.5 and 3.1.7.3.7."""

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

    def start_time_to_be_received_timer(self, iMessage: Message) -> None:
        """Start a Time To Be Received Timer (3.1.2.4) for iMessage (whose TimeToBeReceived is not
        infinite, 0xFFFFFFFF)."""
        heapq.heappush(
            self._ttbr_timers,
            (self.clock() + iMessage.TimeToBeReceived, next(self._timer_seq), iMessage),
        )

    # ================================================================ 3.1.6 timer events
    def waiting_message_read_timer_expired(self, iReader: WaitingMessageReadOperation) -> None:
        """3.1.6.3 Waiting Message Read Timer Expired."""
        self.waiting_message_read_timer_stop(iReader, MQStatus.MQ_ERROR_IO_TIMEOUT)
    # ================================================================ 3.1.7.2.7
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
            assert isinstance(queue, Queue)
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

    def release_next_reader(self, iReleaseOnQueue: Queue) -> None:
        """3.1.7.3.7 Release Next Reader: consumed by Message Position Available (synchronous
        here, so it has nothing left to do)."""
