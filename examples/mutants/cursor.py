"""Mutants of the Cursor events of [MS-MQDMPR] 3.2.7."""

from __future__ import annotations

from harness.model import Cursor, QueueManager
from harness.model.cursor import CursorResult
from harness.model.enums import CursorState, CursorStatus


class _ReadReceiveKeepsRead(Cursor):
    __slots__ = ()

    def get_next_message_for_dequeue(self, iNoWait: bool) -> CursorResult:
        if self.CursorState is CursorState.Read:
            status, pos = super().get_next_message_for_dequeue(iNoWait)
            if status is CursorStatus.Succeeded:
                self.CursorState = CursorState.Read
            return (status, pos)
        return super().get_next_message_for_dequeue(iNoWait)


class ReceiveFromReadKeepsRead(QueueManager):
    """Breaks 3.2.7.4 (Read, position Available): "Set the CursorState ADM attribute of the
    Cursor ADM element instance to Unread" - this cursor stays Read after the receive."""

    cursor_factory = _ReadReceiveKeepsRead


class _NoWaitIgnored(Cursor):
    __slots__ = ()

    def get_next_message_for_dequeue(self, iNoWait: bool) -> CursorResult:
        return super().get_next_message_for_dequeue(False)


class NoWaitIgnored(QueueManager):
    """Breaks 3.2.7.4: with iNoWait True the queue manager "MUST NOT wait" and returns NotFound;
    this cursor ignores iNoWait and goes to WaitReceive."""

    cursor_factory = _NoWaitIgnored


class _ReadPeekIgnoresState(Cursor):
    __slots__ = ()

    def get_message_for_peek(self) -> CursorResult:
        if self.CursorState is CursorState.Read:
            return (CursorStatus.Succeeded, self.MessagePositionReference)
        return super().get_message_for_peek()


class PeekFromReadIgnoresState(QueueManager):
    """Breaks 3.2.7.2 (Read): "If Cursor.MessagePositionReference.State is Available ... Else:
    Set rStatus to AlreadyReceived" - this cursor returns its position even when it is no longer
    Available."""

    cursor_factory = _ReadPeekIgnoresState


class _UnreadPeekNextAllowed(Cursor):
    __slots__ = ()

    def get_next_message_for_peek(self) -> CursorResult:
        if self.CursorState is CursorState.Unread:
            return self.get_message_for_peek()
        return super().get_next_message_for_peek()


class PeekNextFromUnreadAllowed(QueueManager):
    """Breaks 3.2.7.3 (Unread): "Set rStatus to IllegalCursorAction" - this cursor peeks the
    first message instead."""

    cursor_factory = _UnreadPeekNextAllowed


class _WaitExpiredKeepsPosition(Cursor):
    __slots__ = ()

    def wait_time_expired(self) -> None:
        if self.CursorState is CursorState.WaitReceive:
            self.CursorState = CursorState.Unread


class WaitExpiredKeepsPosition(QueueManager):
    """Breaks 3.2.7.6: a WaitReceive cursor's MessagePositionReference is set to the queue's
    End on Wait Time Expired; this cursor keeps its old position."""

    cursor_factory = _WaitExpiredKeepsPosition
