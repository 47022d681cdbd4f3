"""The Cursor of [MS-MQDMPR] section 3.2.

Renders the Cursor ADM element and its states (3.2.1.2: Handle, OpenQueueDescriptorReference,
MessagePositionReference, CursorState in {Unread, Read, WaitPeek, WaitReceive}) and its events
3.2.7.1 Initialize, 3.2.7.2 Get Message For Peek, 3.2.7.3 Get Next Message For Peek,
3.2.7.4 Get Next Message For Dequeue, 3.2.7.5 Message Available and 3.2.7.6 Wait Time Expired.
A cursor sees its queue manager only through :class:`CursorHost`, the two things 3.2.7 asks of
it: a handle unique across cursors (3.2.7.1) and Seek Available Message Position (3.1.7.3.2);
a subclass of the QueueManager overriding that rule changes cursors too.  Where 3.2.7 is silent (an ``interpretation``
of cases/requirements.yaml) the reading the model takes is an overridable hook, named after what
it decides (:meth:`Cursor.peek_while_waiting`, :meth:`Cursor.dequeue_while_waiting`); a
QueueManager takes a Cursor subclass through its ``cursor_factory``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from harness.model.enums import CursorState, CursorStatus, MessagePositionState, SeekDirection
from harness.model.errors import UndefinedBehaviour

if TYPE_CHECKING:
    from harness.model.adm import OpenQueueDescriptor, Queue
    from harness.model.messages import MessagePosition

CursorResult = tuple[CursorStatus, "MessagePosition | None"]

_Unread = CursorState.Unread
_Read = CursorState.Read
_WaitPeek = CursorState.WaitPeek
_WaitReceive = CursorState.WaitReceive
_Available = MessagePositionState.Available
_Forward = SeekDirection.Forward


class CursorHost(Protocol):
    """What a Cursor asks of its queue manager (harness.model.queue_manager.QueueManager)."""

    def new_handle(self) -> int:
        """A value unique across the queue manager's descriptors and cursors (3.2.7.1)."""
        ...

    def seek_available_message_position(
        self,
        iInitialPosition: MessagePosition,
        iQueue: Queue,
        iPeekOperation: bool,
        iSeekDirection: SeekDirection = ...,
    ) -> MessagePosition:
        """3.1.7.3.2 Seek Available Message Position."""
        ...


class Cursor:
    """Cursor ADM element (3.2.1.2) with the events of 3.2.7."""

    __slots__ = (
        "CursorState",
        "Handle",
        "MessagePositionReference",
        "OpenQueueDescriptorReference",
        "_host",
    )

    def __init__(self, queue_manager: CursorHost) -> None:
        self._host = queue_manager
        self.Handle = 0
        self.OpenQueueDescriptorReference: OpenQueueDescriptor | None = None
        self.MessagePositionReference: MessagePosition | None = None
        self.CursorState = _Unread

    def _queue(self, section: str) -> Queue:
        desc = self.OpenQueueDescriptorReference
        queue = desc.QueueReference if desc is not None else None
        if queue is None:
            raise UndefinedBehaviour(section, "cursor's OpenQueueDescriptor has no QueueReference")
        return queue

    def initialize(self, iQueueDesc: OpenQueueDescriptor) -> None:
        """3.2.7.1 Initialize."""
        # If iQueueDesc.QueueReference is NULL: take no further action.
        if iQueueDesc.QueueReference is None:
            return
        # Set Handle to a value unique across all Cursor instances on the local queue manager.
        self.Handle = self._host.new_handle()
        self.OpenQueueDescriptorReference = iQueueDesc
        # MessagePositionReference := iQueueDesc.QueueReference.MessagePositionList.Start
        self.MessagePositionReference = iQueueDesc.QueueReference.MessagePositionList.Start
        self.CursorState = _Unread

    def get_message_for_peek(self) -> CursorResult:
        """3.2.7.2 Get Message For Peek: returns (rStatus, rPosition)."""
        iQueue = self._queue("3.2.7.2")
        state = self.CursorState
        if state is _Unread:
            current = self.MessagePositionReference
            assert current is not None
            r = self._host.seek_available_message_position(current, iQueue, True, _Forward)
            # If rMessagePosition is End: CursorState := WaitPeek; rStatus := Waiting.
            if r is iQueue.MessagePositionList.End:
                self.CursorState = _WaitPeek
                return (CursorStatus.Waiting, None)
            # Else: CursorState := Read; MessagePositionReference := rMessagePosition; Succeeded.
            self.CursorState = _Read
            self.MessagePositionReference = r
            return (CursorStatus.Succeeded, r)
        if state is _Read:
            pos = self.MessagePositionReference
            assert pos is not None
            # If Cursor.MessagePositionReference.State is Available: Succeeded.
            if pos.State is _Available:
                return (CursorStatus.Succeeded, pos)
            # Else: AlreadyReceived.
            return (CursorStatus.AlreadyReceived, None)
        return self.peek_while_waiting(iQueue)

    def get_next_message_for_peek(self) -> CursorResult:
        """3.2.7.3 Get Next Message For Peek: returns (rStatus, rPosition)."""
        iQueue = self._queue("3.2.7.3")
        state = self.CursorState
        if state is _Unread:
            # Unread: rStatus := IllegalCursorAction.
            return (CursorStatus.IllegalCursorAction, None)
        if state is _Read:
            current = self.MessagePositionReference
            assert current is not None
            r = self._host.seek_available_message_position(current, iQueue, True, _Forward)
            if r is iQueue.MessagePositionList.End:
                self.CursorState = _WaitPeek
                return (CursorStatus.Waiting, None)
            self.CursorState = _Read
            self.MessagePositionReference = r
            return (CursorStatus.Succeeded, r)
        raise UndefinedBehaviour("3.2.7.3", f"no branch for CursorState {state.value}")

    def get_next_message_for_dequeue(self, iNoWait: bool) -> CursorResult:
        """3.2.7.4 Get Next Message For Dequeue: returns (rStatus, rPosition)."""
        iQueue = self._queue("3.2.7.4")
        state = self.CursorState
        if state is _Unread:
            current = self.MessagePositionReference
            assert current is not None
            r = self._host.seek_available_message_position(current, iQueue, False, _Forward)
            if r is iQueue.MessagePositionList.End:
                # If iNoWait is True: rStatus := NotFound.
                if iNoWait:
                    return (CursorStatus.NotFound, None)
                self.CursorState = _WaitReceive
                return (CursorStatus.Waiting, None)
            # Else: MessagePositionReference := rMessagePosition; Succeeded (state stays Unread).
            self.MessagePositionReference = r
            return (CursorStatus.Succeeded, r)
        if state is _Read:
            pos = self.MessagePositionReference
            assert pos is not None
            if pos.State is _Available:
                # CursorState := Unread; rPosition := MessagePositionReference; Succeeded.
                self.CursorState = _Unread
                return (CursorStatus.Succeeded, pos)
            return (CursorStatus.AlreadyReceived, None)
        return self.dequeue_while_waiting(iQueue, iNoWait)

    def message_available(self, iMessagePosition: MessagePosition) -> None:
        """3.2.7.5 Message Available."""
        if self.CursorState is _WaitPeek:
            self.CursorState = _Read
        elif self.CursorState is _WaitReceive:
            self.CursorState = _Unread
        # Set MessagePositionReference to iMessagePosition.
        self.MessagePositionReference = iMessagePosition

    def wait_time_expired(self) -> None:
        """3.2.7.6 Wait Time Expired.

        The cursor is left on End; its next seek starts at End.Next, which the model takes to be
        End (DMPR-3.1.1.2-END-NEXT, reading end-is-end): it finds no later message.
        """
        if self.CursorState is _WaitReceive:
            desc = self.OpenQueueDescriptorReference
            queue = desc.QueueReference if desc is not None else None
            if queue is not None:
                self.MessagePositionReference = queue.MessagePositionList.End
            self.CursorState = _Unread

    # ------------------------------------------------------------------ readings (hooks)
    def peek_while_waiting(self, iQueue: Queue) -> CursorResult:
        """What Get Message For Peek (3.2.7.2) does for a WaitPeek or WaitReceive cursor: its
        selection on CursorState has arms for Unread and Read only.

        Interpretation DMPR-3.2.7.2-WAIT-STATES: the model takes no-branch (it reports
        UndefinedBehaviour, the spec gives no outcome, and leaves the cursor as it is); as-unread
        takes the Unread steps, still-waiting answers Waiting.
        """
        raise UndefinedBehaviour("3.2.7.2", f"no branch for CursorState {self.CursorState.value}")

    def dequeue_while_waiting(self, iQueue: Queue, iNoWait: bool) -> CursorResult:
        """What Get Next Message For Dequeue (3.2.7.4) does for a WaitPeek or WaitReceive cursor:
        its selection on CursorState has arms for Unread and Read only.

        Interpretation DMPR-3.2.7.4-WAIT-STATES: the model takes no-branch (it reports
        UndefinedBehaviour, the spec gives no outcome, and leaves the cursor as it is); as-unread
        takes the Unread steps, still-waiting answers Waiting (NotFound with iNoWait).
        """
        raise UndefinedBehaviour("3.2.7.4", f"no branch for CursorState {self.CursorState.value}")

    def __repr__(self) -> str:
        return f"<Cursor {self.Handle} {self.CursorState.value} at {self.MessagePositionReference}>"
