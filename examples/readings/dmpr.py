"""[MS-MQDMPR] readings the reference does not take (see examples/readings/__init__.py)."""

from __future__ import annotations

from harness.model import MQStatus, QueueManager
from harness.model.adm import Queue
from harness.model.enums import SeekDirection
from harness.model.positions import MessagePosition


class BackwardMissReturnsEnd(QueueManager):
    """DMPR-3.1.7.3.2-BWD-START, reading returns-end: a backward seek that finds no Available
    position returns End, as the Return Value of 3.1.7.3.2 says ("The End position indicates that
    no message was available"), not the Start its walk ends on."""

    def seek_available_message_position(
        self,
        iInitialPosition: MessagePosition,
        iQueue: Queue,
        iPeekOperation: bool,
        iSeekDirection: SeekDirection = SeekDirection.Forward,
    ) -> MessagePosition:
        r = super().seek_available_message_position(iInitialPosition, iQueue, iPeekOperation, iSeekDirection)
        return iQueue.MessagePositionList.End if r is iQueue.MessagePositionList.Start else r


class FailedWaitNotFound(QueueManager):
    """DMPR-3.1.7.3.1-FAILED-STATUS, reading other-error: a read whose Wait For New Message fails
    at once (iTimeout <= 0) reports MQ_ERROR_MESSAGE_NOT_FOUND rather than MQ_ERROR_IO_TIMEOUT."""

    WAIT_FAILED_STATUS = MQStatus.MQ_ERROR_MESSAGE_NOT_FOUND
