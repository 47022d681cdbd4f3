"""Mutants of [MS-MQDMPR] 3.1.7.3.2 Seek Available Message Position and 3.1.1.2 list order."""

from __future__ import annotations

from harness.model import MessagePositionState, QueueManager
from harness.model.adm import Queue
from harness.model.enums import SeekDirection
from harness.model.messages import MessagePosition
from harness.model.positions import IndexedMessagePositionList


class SeekIgnoresAllowPeekWhenLocked(QueueManager):
    """Breaks 3.1.7.3.2: "If iIterator.State is Locked and iPeekOperation is True and
    iIterator.MessageReference.AllowPeekWhenLocked is True: Set rMessagePosition to iIterator" -
    every seek behaves as a receive seek, so a peekable Locked position is skipped."""

    def seek_available_message_position(
        self,
        iInitialPosition: MessagePosition,
        iQueue: Queue,
        iPeekOperation: bool,
        iSeekDirection: SeekDirection = SeekDirection.Forward,
    ) -> MessagePosition:
        return super().seek_available_message_position(iInitialPosition, iQueue, False, iSeekDirection)


class PeekReturnsAnyLocked(QueueManager):
    """Breaks 3.1.7.3.2: a peek seek returns a Locked position whatever the message's
    AllowPeekWhenLocked (the rule requires AllowPeekWhenLocked True)."""

    def seek_available_message_position(
        self,
        iInitialPosition: MessagePosition,
        iQueue: Queue,
        iPeekOperation: bool,
        iSeekDirection: SeekDirection = SeekDirection.Forward,
    ) -> MessagePosition:
        plist = iQueue.MessagePositionList
        forward = iSeekDirection is not SeekDirection.Backward
        if forward:
            it = plist.Head if iInitialPosition is plist.Start else iInitialPosition.Next
            stop = plist.End
        else:
            it = plist.Tail if iInitialPosition is plist.End else iInitialPosition.Previous
            stop = plist.Start
        while it is not stop and it.State is not MessagePositionState.Available:
            if it.State is MessagePositionState.Locked and iPeekOperation:
                return it
            it = it.Next if forward else it.Previous
        return it


class ForwardSeekIncludesInitial(QueueManager):
    """Breaks 3.1.7.3.2 (Forward): "Else: Set iIterator to iInitialPosition.Next" - this mutant
    starts the walk at iInitialPosition itself, returning it again when it is Available."""

    def seek_available_message_position(
        self,
        iInitialPosition: MessagePosition,
        iQueue: Queue,
        iPeekOperation: bool,
        iSeekDirection: SeekDirection = SeekDirection.Forward,
    ) -> MessagePosition:
        if (
            iSeekDirection is not SeekDirection.Backward
            and not iInitialPosition.is_special
            and iInitialPosition.in_list
            and iInitialPosition.State is MessagePositionState.Available
        ):
            return iInitialPosition
        return super().seek_available_message_position(iInitialPosition, iQueue, iPeekOperation, iSeekDirection)


class _FifoList(IndexedMessagePositionList):
    """A MessagePositionList that ignores Priority: every position gets the same rank."""

    def insert(self, position: MessagePosition) -> None:
        message = position.MessageReference
        assert message is not None
        saved = message.Priority
        message.Priority = 3  # rank of the default priority, for every message
        try:
            super().insert(position)
        finally:
            message.Priority = saved


class EnqueueIgnoresPriority(QueueManager):
    """Breaks 3.1.7.1.9 ("Insert newMessagePos into iQueue.MessagePositionList according to the
    rules defined for the MessagePositionList", 3.1.1.2): positions are kept in plain arrival
    order (FIFO), whatever their Priority."""

    position_list_factory = _FifoList
