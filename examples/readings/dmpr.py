"""[MS-MQDMPR] readings the reference does not take (see examples/readings/__init__.py).

Each class is the reference queue manager with one other reading of one ``interpretation``
requirement of cases/requirements.yaml, rendered through the hook where the model takes its own
reading (``harness.model.QueueManager``, "readings" block; for a cursor event, the hooks of
``harness.model.cursor.Cursor``, taken through ``QueueManager.cursor_factory``): its docstring
names the requirement, the alternative and the section, and says what the reading gives.
"""

from __future__ import annotations

from typing import Any

from harness.model import MessageClass, MQStatus, QueueManager
from harness.model.adm import OpenQueueDescriptor, Queue, WaitingMessageReadOperation
from harness.model.cursor import Cursor, CursorResult
from harness.model.enums import CursorState, CursorStatus, SeekDirection
from harness.model.messages import Message, MessagePosition
from packets.base import BASE_HEADER_SIZE
from packets.properties import MESSAGE_PROPERTIES_FIXED_SIZE
from packets.user import USER_HEADER_FIXED_SIZE


class BackwardMissReturnsEnd(QueueManager):
    """DMPR-3.1.7.3.2-BWD-START, reading returns-end (MS-MQDMPR 3.1.7.3.2): a seek that finds no
    Available position returns End in either direction, as the Return Value says ("The End
    position indicates that no message was available"), not the Start a backward walk ends on."""

    def backward_seek_miss(self, iQueue: Queue) -> MessagePosition:
        return iQueue.MessagePositionList.End


class EndNextIsHead(QueueManager):
    """DMPR-3.1.1.2-END-NEXT, reading end-next-is-head (MS-MQDMPR 3.1.1.2): End.Next is the Head of
    the list (End closes the list as a ring), so a forward seek from End walks the list from its
    first position again: it returns what a seek from Start returns."""

    def forward_seek_from_end(self, iQueue: Queue, iPeekOperation: bool) -> MessagePosition:
        start = iQueue.MessagePositionList.Start
        return self.seek_available_message_position(start, iQueue, iPeekOperation, SeekDirection.Forward)


class StartPreviousIsTail(QueueManager):
    """DMPR-3.1.1.2-START-PREVIOUS, reading start-previous-is-tail (MS-MQDMPR 3.1.1.2):
    Start.Previous is the Tail of the list (Start closes the list as a ring), so a backward seek
    from Start walks the list from its last position: it returns what a seek from End returns."""

    def backward_seek_from_start(self, iQueue: Queue, iPeekOperation: bool) -> MessagePosition:
        end = iQueue.MessagePositionList.End
        return self.seek_available_message_position(end, iQueue, iPeekOperation, SeekDirection.Backward)


class RemovedPositionRestartsAtStart(QueueManager):
    """DMPR-3.1.1.11-REMOVED-NEXT, reading restarts-at-start (MS-MQDMPR 3.1.1.11): a cursor whose
    position has left the list seeks as from Start, so it finds the first Available message of
    the list."""

    def removed_position_origin(self, iQueue: Queue, iPosition: MessagePosition) -> MessagePosition:
        return iQueue.MessagePositionList.Start


#: The fixed headers an [MS-MQMQ] UserMessage stores with its body: BaseHeader (2.2.19.1),
#: UserHeader up to its Flags (2.2.19.2) and MessagePropertiesHeader up to ExtensionSize (2.2.19.3).
STORED_HEADER_BYTES = BASE_HEADER_SIZE + USER_HEADER_FIXED_SIZE + MESSAGE_PROPERTIES_FIXED_SIZE


class StoredSizeWithHeaders(QueueManager):
    """DMPR-3.1.7.2.1-STORAGE, reading stored-size (MS-MQDMPR 3.1.7.2.1): a message consumes what
    its store uses for it, headers included: here the fixed headers of its [MS-MQMQ] UserMessage
    (:data:`STORED_HEADER_BYTES`), its label (UTF-16, with its terminating null) and its body and
    extension."""

    def message_storage_size(self, message: Message) -> int:
        label = 2 * (len(message.Label) + 1) if message.Label else 0
        return STORED_HEADER_BYTES + label + len(message.Body) + len(message.Extension)


class AvailableCountedOnce(QueueManager):
    """DMPR-3.1.7.2.2-TOTALBYTES, reading counted-once (MS-MQDMPR 3.1.7.2.2): TotalBytes is the
    storage of the messages in the queue (3.1.1.2), so a message that becomes Available again (a
    receive in a transaction that aborts, Dequeue Message End without delete) is not counted a
    second time: Message Position Available adds the storage of a position only once."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._counted: set[MessagePosition] = set()

    def storage_added_when_available(self, iQueue: Queue, iPosition: MessagePosition) -> int:
        if iPosition in self._counted:
            return 0
        self._counted.add(iPosition)
        return super().storage_added_when_available(iQueue, iPosition)

    def message_position_deleted(self, iQueue: Queue, iPosition: MessagePosition, iReason: MessageClass) -> None:
        self._counted.discard(iPosition)
        super().message_position_deleted(iQueue, iPosition, iReason)


class ReceiveAfterHead(QueueManager):
    """DMPR-3.1.7.1.10-HEAD, reading after-head (MS-MQDMPR 3.1.7.1.10): a receive without cursor
    seeks from the Head as written, and Seek Available Message Position starts at Head.Next (as
    for any iInitialPosition other than Start): the message at the Head is never received without
    a cursor."""

    def cursorless_initial_position(self, iQueue: Queue, iPeekOperation: bool = False) -> MessagePosition:
        if iPeekOperation:
            return super().cursorless_initial_position(iQueue, iPeekOperation)
        return iQueue.MessagePositionList.Head


class LookupPastEndOk(QueueManager):
    """DMPR-3.1.7.1.13-END, reading ok-without-message (MS-MQDMPR 3.1.7.1.13): when the seek returns
    End or Start with MQ_OK, the steps go on as written: rStatus is MQ_OK and rMessage is what the
    special position references, no message."""

    LOOKUP_WITHOUT_MESSAGE_STATUS = MQStatus.MQ_OK


class CurrentReceiveOkWithoutPosition(QueueManager):
    """DMPR-3.1.7.3.3-CURRENT-RECEIVE, reading ok-without-position (MS-MQDMPR 3.1.7.3.3): the Deleted
    and otherwise branches belong to "Else if iPeekOperation is True", so SeekCurrent for a receive
    of a message that is not Available leaves rStatus MQ_OK and rMessagePosition unset."""

    def current_receive_unavailable(self, messagePos: MessagePosition) -> tuple[MQStatus, MessagePosition | None]:
        return (MQStatus.MQ_OK, None)


class PeekAfterHead(QueueManager):
    """DMPR-3.1.7.1.15-HEAD, reading after-head (MS-MQDMPR 3.1.7.1.15): a peek without cursor seeks
    from the Head as written, and the walk starts at Head.Next: the message at the Head is never
    returned by a peek without a cursor."""

    def cursorless_initial_position(self, iQueue: Queue, iPeekOperation: bool = False) -> MessagePosition:
        if not iPeekOperation:
            return super().cursorless_initial_position(iQueue, iPeekOperation)
        return iQueue.MessagePositionList.Head


class PeekWithoutCursorBlocks(QueueManager):
    """DMPR-3.1.7.1.15-RELEASE, reading blocked (MS-MQDMPR 3.1.7.1.15): a waiting peek without cursor
    generates no Release Next Reader once satisfied, so Message Position Available does not go on:
    the readers after it stay blocked."""

    def peek_without_cursor_releases(self, iQueue: Queue, iReader: WaitingMessageReadOperation) -> bool:
        return False


class FailedWaitNotFound(QueueManager):
    """DMPR-3.1.7.3.1-FAILED-STATUS, reading other-error (MS-MQDMPR 3.1.7.3.1): a read whose Wait For
    New Message fails at once (iTimeout <= 0) reports MQ_ERROR_MESSAGE_NOT_FOUND (the status of a
    cursor receive with iTimeout zero) rather than MQ_ERROR_IO_TIMEOUT."""

    WAIT_FAILED_STATUS = MQStatus.MQ_ERROR_MESSAGE_NOT_FOUND


class DescriptorsLastOpenedFirst(QueueManager):
    """DMPR-3.1.7.2.2-DESCRIPTOR-ORDER, reading any-order (MS-MQDMPR 3.1.7.2.2): Message Position
    Available visits the descriptors in an order of the implementation's choosing; this one visits
    the last opened first."""

    def descriptor_visit_order(self, iQueue: Queue) -> list[OpenQueueDescriptor]:
        return list(reversed(iQueue.OpenQueueDescriptorCollection))


class DenyReceiveDeniesPeek(QueueManager):
    """DMPR-3.1.7.1.5-SHARE-PEEK, reading deny-receive-denies-peek (MS-MQDMPR 3.1.7.1.5): a peek open
    while another descriptor holds the queue with ReceiveAccess and DenyReceive fails with
    MQ_ERROR_SHARING_VIOLATION, as the definition of DenyReceive (3.1.1.17) says ("Other protocols
    are not allowed to receive or peek messages from this queue")."""

    PEEK_PAST_DENY_RECEIVE_STATUS = MQStatus.MQ_ERROR_SHARING_VIOLATION


class WaitingCursorPeeksAsUnread(Cursor):
    """The cursor of :class:`WaitingPeekAsUnread`: Get Message For Peek on a waiting cursor takes
    it as Unread."""

    def peek_while_waiting(self, iQueue: Queue) -> CursorResult:
        self.CursorState = CursorState.Unread
        return self.get_message_for_peek()


class WaitingPeekAsUnread(QueueManager):
    """DMPR-3.2.7.2-WAIT-STATES, reading as-unread (MS-MQDMPR 3.2.7.2): a WaitPeek or WaitReceive
    cursor has read nothing yet, so Get Message For Peek takes the Unread steps: a peek seek from
    Cursor.MessagePositionReference gives Succeeded and a Read cursor on the position it finds, or
    Waiting and WaitPeek when it finds End."""

    cursor_factory = WaitingCursorPeeksAsUnread


class WaitingCursorDequeuesAsUnread(Cursor):
    """The cursor of :class:`WaitingDequeueAsUnread`: Get Next Message For Dequeue on a waiting
    cursor takes it as Unread."""

    def dequeue_while_waiting(self, iQueue: Queue, iNoWait: bool) -> CursorResult:
        self.CursorState = CursorState.Unread
        return self.get_next_message_for_dequeue(iNoWait)


class WaitingDequeueAsUnread(QueueManager):
    """DMPR-3.2.7.4-WAIT-STATES, reading as-unread (MS-MQDMPR 3.2.7.4): a WaitPeek or WaitReceive
    cursor has read nothing yet, so Get Next Message For Dequeue takes the Unread steps: a seek that
    is not a peek from Cursor.MessagePositionReference gives Succeeded with the cursor on the
    position it finds (Unread, as the Unread arm leaves it), else NotFound with iNoWait, else
    Waiting and WaitReceive."""

    cursor_factory = WaitingCursorDequeuesAsUnread


class WaitingCursorPeekStillWaits(Cursor):
    """The cursor of :class:`WaitingPeekStillWaits`: a peek on a waiting cursor answers Waiting."""

    def peek_while_waiting(self, iQueue: Queue) -> CursorResult:
        return (CursorStatus.Waiting, None)


class WaitingCursorDequeueStillWaits(Cursor):
    """The cursor of :class:`WaitingDequeueStillWaits`: a receive on a waiting cursor answers
    Waiting (NotFound with iNoWait)."""

    def dequeue_while_waiting(self, iQueue: Queue, iNoWait: bool) -> CursorResult:
        return (CursorStatus.NotFound if iNoWait else CursorStatus.Waiting, None)


class WaitingPeekStillWaits(QueueManager):
    """DMPR-3.2.7.2-WAIT-STATES, reading still-waiting (MS-MQDMPR 3.2.7.2): a cursor whose read is
    still waiting answers Waiting, and its state is left as it is."""

    cursor_factory = WaitingCursorPeekStillWaits


class WaitingDequeueStillWaits(QueueManager):
    """DMPR-3.2.7.4-WAIT-STATES, reading still-waiting (MS-MQDMPR 3.2.7.4): a cursor whose read is
    still waiting answers Waiting (NotFound with iNoWait), and its state is left as it is."""

    cursor_factory = WaitingCursorDequeueStillWaits
