"""Message positions of [MS-MQDMPR]: the events that make a position available or delete it, and
the seeks.

Renders 3.1.7.2.1 Message Position Deleted, 3.1.7.2.2 Message Position Available (with the
Waiting Message Read Satisfied it generates, 3.1.7.3.6, and the end of the wait that consumes
it, 3.1.7.3.1), 3.1.7.3.2 Seek Available Message Position and 3.1.7.3.3 Seek Available Message
Position With Id, over the MessagePositionList of 3.1.1.2 (harness.model.positions).  The
seeks are what a Cursor (3.2, harness.model.cursor) calls through its CursorHost.
"""

from __future__ import annotations

from harness.model.adm import Queue, ReadResult, WaitingMessageReadOperation
from harness.model.enums import INFINITE, MessageClass, MessagePositionState, MessageSeekAction, MQStatus, SeekDirection
from harness.model.messages import MessagePosition
from harness.model.positions import IndexedMessagePositionList
from harness.model.qm_core import QueueManagerCore

__all__ = ["PositionEvents"]

_Available = MessagePositionState.Available
_Locked = MessagePositionState.Locked
_Deleted = MessagePositionState.Deleted
_Forward = SeekDirection.Forward
_Backward = SeekDirection.Backward
_OK = MQStatus.MQ_OK


class PositionEvents(QueueManagerCore):
    """3.1.7.2.1-3.1.7.2.2, 3.1.7.3.2-3.1.7.3.3 and 3.1.7.3.6."""

    # ================================================================ 3.1.7.2 position events
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
    # ================================================================ 3.1.7.3.6 and the end of a wait
    def waiting_message_read_satisfied(
        self, iReader: WaitingMessageReadOperation, iPosition: MessagePosition
    ) -> None:
        """3.1.7.3.6 Waiting Message Read Satisfied, consumed by Wait For New Message (3.1.7.3.1):
        rStatus := Success, rMessagePosition := iPosition, the timer is cancelled and the
        reader deleted from its collection."""
        if not iReader.done:
            iReader.deadline = INFINITE
            self._end_wait(iReader, _OK, iPosition)

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
    # ================================================================ 3.1.7.3.2-3.1.7.3.3 seeks
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
