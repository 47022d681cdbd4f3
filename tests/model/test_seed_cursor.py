"""Seeds 001 and 002: [MS-MQDMPR] 3.2.7.2 Get Message For Peek and 3.2.7.4 Get Next Message For
Dequeue, every branch; plus 3.2.7.1, 3.2.7.3, 3.2.7.5 and 3.2.7.6."""

from __future__ import annotations

import pytest
from dmpr_helpers import fill, make_queue, open_desc

from harness.model import CursorState, CursorStatus, MessagePositionState, QueueManager
from harness.model.errors import UndefinedBehaviour

S = CursorStatus


def cursor_on(qm: QueueManager, specs):  # type: ignore[no-untyped-def]
    q = make_queue(qm)
    p = fill(qm, q, specs)
    d = open_desc(qm)
    c = qm.open_cursor(d)
    assert c is not None
    return q, p, d, c


# ---------------------------------------------------------------- 3.2.7.1 Initialize
def test_initialize_sets_start_and_unread(qm: QueueManager) -> None:
    """3.2.7.1: 'MessagePositionReference := ...MessagePositionList.Start', 'CursorState :=
    Unread', Handle unique."""
    q, _, d, c = cursor_on(qm, [])
    c2 = qm.open_cursor(d)
    assert c.MessagePositionReference is q.MessagePositionList.Start
    assert c.CursorState is CursorState.Unread
    assert c.OpenQueueDescriptorReference is d
    assert c2 is not None and c2.Handle != c.Handle


# ---------------------------------------------------------------- 3.2.7.2 seed 001
def test_peek_unread_end_sets_waitpeek_waiting(qm: QueueManager) -> None:
    """3.2.7.2 Unread: 'If rMessagePosition ... is equivalent to End: CursorState := WaitPeek;
    rStatus := Waiting'."""
    _, _, _, c = cursor_on(qm, ["L"])
    assert c.get_message_for_peek() == (S.Waiting, None)
    assert c.CursorState is CursorState.WaitPeek


def test_peek_unread_found_sets_read_and_reference(qm: QueueManager) -> None:
    """3.2.7.2 Unread, 'Else if ... not End: CursorState := Read; MessagePositionReference :=
    rMessagePosition; rStatus := Succeeded'."""
    _, p, _, c = cursor_on(qm, ["L", "A"])
    assert c.get_message_for_peek() == (S.Succeeded, p[1])
    assert c.CursorState is CursorState.Read
    assert c.MessagePositionReference is p[1]


def test_peek_unread_uses_peek_seek_locked_allow_peek(qm: QueueManager) -> None:
    """3.2.7.2 Unread generates the seek with 'iPeekOperation := True': a Locked position whose
    message AllowPeekWhenLocked is returned."""
    _, p, _, c = cursor_on(qm, ["LP", "A"])
    assert c.get_message_for_peek() == (S.Succeeded, p[0])


def test_peek_read_available_returns_same_position(qm: QueueManager) -> None:
    """3.2.7.2 Read: 'If Cursor.MessagePositionReference.State is Available: rPosition :=
    MessagePositionReference; Succeeded' — no advance."""
    _, p, _, c = cursor_on(qm, ["A", "A"])
    c.get_message_for_peek()
    assert c.get_message_for_peek() == (S.Succeeded, p[0])
    assert c.CursorState is CursorState.Read


def test_peek_read_no_longer_available_already_received(qm: QueueManager) -> None:
    """3.2.7.2 Read: 'Else: rStatus := AlreadyReceived' (the message was received meanwhile)."""
    _, _, d, c = cursor_on(qm, ["A"])
    c.get_message_for_peek()
    assert qm.dequeue_message(d, 0).rStatus == 0
    assert c.get_message_for_peek() == (S.AlreadyReceived, None)


def test_peek_read_locked_allow_peek_is_already_received(qm: QueueManager) -> None:
    """3.2.7.2 Read checks 'State is Available' only: a Locked + AllowPeekWhenLocked position the
    cursor peeked at is AlreadyReceived on the second peek."""
    _, p, _, c = cursor_on(qm, ["LP"])
    assert c.get_message_for_peek() == (S.Succeeded, p[0])
    assert c.get_message_for_peek() == (S.AlreadyReceived, None)


def test_peek_waitpeek_has_no_branch(qm: QueueManager) -> None:
    """3.2.7.2 'Select from CursorState' has no WaitPeek branch: the model reports it."""
    _, _, _, c = cursor_on(qm, [])
    c.get_message_for_peek()
    with pytest.raises(UndefinedBehaviour):
        c.get_message_for_peek()


# ---------------------------------------------------------------- 3.2.7.3
def test_peek_next_unread_is_illegal(qm: QueueManager) -> None:
    """3.2.7.3 Unread: 'Set rStatus to IllegalCursorAction'."""
    _, _, _, c = cursor_on(qm, ["A"])
    assert c.get_next_message_for_peek() == (S.IllegalCursorAction, None)


def test_peek_next_read_advances_or_waits(qm: QueueManager) -> None:
    """3.2.7.3 Read: seek from MessagePositionReference; found -> Read + Succeeded; End ->
    WaitPeek + Waiting."""
    _, p, _, c = cursor_on(qm, ["A", "L", "A"])
    c.get_message_for_peek()
    assert c.get_next_message_for_peek() == (S.Succeeded, p[2])
    assert c.get_next_message_for_peek() == (S.Waiting, None)
    assert c.CursorState is CursorState.WaitPeek


# ---------------------------------------------------------------- 3.2.7.4 seed 002
def test_dequeue_unread_end_nowait_notfound(qm: QueueManager) -> None:
    """3.2.7.4 Unread, End: 'If iNoWait is set to True: rStatus := NotFound' (state unchanged)."""
    q, _, _, c = cursor_on(qm, ["L"])
    assert c.get_next_message_for_dequeue(True) == (S.NotFound, None)
    assert c.CursorState is CursorState.Unread
    assert c.MessagePositionReference is q.MessagePositionList.Start


def test_dequeue_unread_end_wait_sets_waitreceive(qm: QueueManager) -> None:
    """3.2.7.4 Unread, End, iNoWait False: 'CursorState := WaitReceive; rStatus := Waiting'."""
    _, _, _, c = cursor_on(qm, [])
    assert c.get_next_message_for_dequeue(False) == (S.Waiting, None)
    assert c.CursorState is CursorState.WaitReceive


def test_dequeue_unread_found_sets_reference_stays_unread(qm: QueueManager) -> None:
    """3.2.7.4 Unread, found: 'MessagePositionReference := rMessagePosition; Succeeded'; the
    seek is made with 'iPeekOperation := False' (Locked + AllowPeekWhenLocked is skipped)."""
    _, p, _, c = cursor_on(qm, ["LP", "A"])
    assert c.get_next_message_for_dequeue(True) == (S.Succeeded, p[1])
    assert c.MessagePositionReference is p[1]
    assert c.CursorState is CursorState.Unread


def test_dequeue_read_available_sets_unread(qm: QueueManager) -> None:
    """3.2.7.4 Read, 'If Cursor.MessagePositionReference.State is Available: CursorState :=
    Unread; rPosition := MessagePositionReference; Succeeded'."""
    _, p, _, c = cursor_on(qm, ["A", "A"])
    c.get_message_for_peek()
    assert c.get_next_message_for_dequeue(False) == (S.Succeeded, p[0])
    assert c.CursorState is CursorState.Unread


def test_dequeue_read_not_available_already_received(qm: QueueManager) -> None:
    """3.2.7.4 Read, 'Else: rStatus := AlreadyReceived' (the position was locked by a
    transaction after the peek)."""
    _, p, _, c = cursor_on(qm, ["A"])
    c.get_message_for_peek()
    p[0].State = MessagePositionState.Locked
    assert c.get_next_message_for_dequeue(False) == (S.AlreadyReceived, None)


def test_dequeue_waitreceive_has_no_branch(qm: QueueManager) -> None:
    """3.2.7.4 has no WaitReceive branch: the model reports it."""
    _, _, _, c = cursor_on(qm, [])
    c.get_next_message_for_dequeue(False)
    with pytest.raises(UndefinedBehaviour):
        c.get_next_message_for_dequeue(False)


# ---------------------------------------------------------------- 3.2.7.5 / 3.2.7.6
def test_message_available_transitions(qm: QueueManager) -> None:
    """3.2.7.5: WaitPeek -> Read, WaitReceive -> Unread, MessagePositionReference :=
    iMessagePosition."""
    _, p, _, c = cursor_on(qm, ["A"])
    c.CursorState = CursorState.WaitPeek
    c.message_available(p[0])
    assert (c.CursorState, c.MessagePositionReference) == (CursorState.Read, p[0])
    c.CursorState = CursorState.WaitReceive
    c.message_available(p[0])
    assert c.CursorState is CursorState.Unread


def test_wait_time_expired_waitreceive_moves_to_end(qm: QueueManager) -> None:
    """3.2.7.6: WaitReceive -> MessagePositionReference := End, CursorState := Unread; other
    states unchanged."""
    q, _, _, c = cursor_on(qm, [])
    c.get_next_message_for_dequeue(False)
    c.wait_time_expired()
    assert c.CursorState is CursorState.Unread
    assert c.MessagePositionReference is q.MessagePositionList.End
    c.CursorState = CursorState.WaitPeek
    c.wait_time_expired()
    assert c.CursorState is CursorState.WaitPeek
