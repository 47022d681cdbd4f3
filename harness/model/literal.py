"""The literal oracle: [MS-MQDMPR] 3.1.1.2 MessagePositionList and 3.1.7.3.2 walked step by step.

A deliberately simple rendering used only by tests and benchmarks: ``LinkedMessagePositionList``
is the doubly linked list of 3.1.1.2 (insertion walks from the Tail to keep ascending arrival
within priority), and ``LiteralQueueManager.seek_available_message_position`` is the walk of
3.1.7.3.2 written out as the spec writes it. Every other event is shared with
``harness.model.QueueManager``, so comparing the two checks the indexed list and seek.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from harness.model.adm import Queue
from harness.model.enums import MessagePositionState, SeekDirection
from harness.model.messages import MessagePosition, MessagePositionList, priority_rank
from harness.model.queue_manager import QueueManager


class LinkedMessagePositionList(MessagePositionList):
    """MessagePositionList (3.1.1.2) as a plain doubly linked list."""

    def __init__(self, queue: Queue | None) -> None:
        super().__init__(queue)
        self._first: MessagePosition | None = None
        self._last: MessagePosition | None = None
        self._seq = 0
        self._count = 0

    @property
    def Head(self) -> MessagePosition:
        # If the list is empty, Head MUST equal End.
        return self._first if self._first is not None else self.End

    @property
    def Tail(self) -> MessagePosition:
        # Tail of an empty list: Start (DMPR-3.1.7.3.2-BWD-START, reading returns-start).
        return self._last if self._last is not None else self.Start

    def insert(self, position: MessagePosition) -> None:
        """Ascending order by arrival time within priority: walk back from the Tail past every
        position of lower priority, insert after the first of equal or higher priority."""
        message = position.MessageReference
        assert message is not None
        self._seq += 1
        position._rank = priority_rank(message)
        position._idx = self._seq
        after = self._last
        while after is not None and after._rank > position._rank:
            after = after._lprev
        before = after._lnext if after is not None else self._first
        position._lprev = after
        position._lnext = before
        if after is None:
            self._first = position
        else:
            after._lnext = position
        if before is None:
            self._last = position
        else:
            before._lprev = position
        position._in_list = True
        self._count += 1

    def remove(self, position: MessagePosition) -> None:
        if not position._in_list:
            return
        prev, nxt = position._lprev, position._lnext
        if prev is None:
            self._first = nxt
        else:
            prev._lnext = nxt
        if nxt is None:
            self._last = prev
        else:
            nxt._lprev = prev
        position._in_list = False
        self._count -= 1

    def next_of(self, position: MessagePosition) -> MessagePosition:
        if position is self.Start:
            return self.Head
        if position is self.End:  # DMPR-3.1.1.2-END-NEXT, reading end-is-end
            return self.End
        if position._in_list:
            return position._lnext if position._lnext is not None else self.End
        # A removed position keeps its place: the first linked position after it
        # (DMPR-3.1.1.11-REMOVED-NEXT, reading keeps-place).
        key = (position._rank, position._idx)
        node = self._first
        while node is not None and (node._rank, node._idx) <= key:
            node = node._lnext
        return node if node is not None else self.End

    def previous_of(self, position: MessagePosition) -> MessagePosition:
        if position is self.End:
            return self.Tail
        if position is self.Start:  # DMPR-3.1.1.2-START-PREVIOUS, reading start-is-start
            return self.Start
        if position._in_list:
            # The first position's Previous is Start (DMPR-3.1.7.3.2-BWD-START, returns-start).
            return position._lprev if position._lprev is not None else self.Start
        key = (position._rank, position._idx)
        node = self._last
        while node is not None and (node._rank, node._idx) >= key:
            node = node._lprev
        return node if node is not None else self.Start

    def find_by_lookup_identifier(self, lookup_id: int) -> MessagePosition | None:
        found = None
        for position in self:
            message = position.MessageReference
            if message is not None and message.LookupIdentifier == lookup_id:
                found = position
        return found

    def __iter__(self) -> Iterator[MessagePosition]:
        node = self._first
        while node is not None:
            nxt = node._lnext
            yield node
            node = nxt

    def __len__(self) -> int:
        return self._count


class LiteralQueueManager(QueueManager):
    """QueueManager whose list is the linked list and whose seek is the spec's walk."""

    position_list_factory: Callable[[Queue | None], MessagePositionList] = (
        LinkedMessagePositionList
    )

    def seek_available_message_position(
        self,
        iInitialPosition: MessagePosition,
        iQueue: Queue,
        iPeekOperation: bool,
        iSeekDirection: SeekDirection = SeekDirection.Forward,
    ) -> MessagePosition:
        """3.1.7.3.2 Seek Available Message Position, step by step."""
        Available = MessagePositionState.Available
        Locked = MessagePositionState.Locked
        plist = iQueue.MessagePositionList
        # Define iIterator ... and set it to iInitialPosition.
        iIterator = iInitialPosition
        # If iSeekDirection is Forward or if the iSeekDirection argument is not supplied:
        if iSeekDirection is SeekDirection.Forward:
            # If iIterator is equivalent to the StartMessagePosition: iIterator := Head
            if iIterator is plist.Start:  # noqa: SIM108
                iIterator = plist.Head
            else:  # Else: Set iIterator to iInitialPosition.Next.
                iIterator = iInitialPosition.Next
            # While iIterator is not End and iIterator.State is not Available:
            while iIterator is not plist.End and iIterator.State is not Available:
                m = iIterator.MessageReference
                # If Locked and iPeekOperation and MessageReference.AllowPeekWhenLocked:
                if (
                    iIterator.State is Locked
                    and iPeekOperation
                    and m is not None
                    and m.AllowPeekWhenLocked
                ):
                    return iIterator  # Set rMessagePosition to iIterator; no further action
                iIterator = iIterator.Next
        else:
            # If iIterator is equivalent to the EndMessagePosition: iIterator := Tail
            if iIterator is plist.End:  # noqa: SIM108
                iIterator = plist.Tail
            else:  # Else: Set iIterator to iInitialPosition.Previous.
                iIterator = iInitialPosition.Previous
            # While iIterator is not Start and iIterator.State is not Available:
            while iIterator is not plist.Start and iIterator.State is not Available:
                m = iIterator.MessageReference
                if (
                    iIterator.State is Locked
                    and iPeekOperation
                    and m is not None
                    and m.AllowPeekWhenLocked
                ):
                    return iIterator
                iIterator = iIterator.Previous
        # Set rMessagePosition to iIterator.
        return iIterator
