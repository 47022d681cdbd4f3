"""Seed 000: [MS-MQDMPR] 3.1.7.3.2 Seek Available Message Position, every branch, both ways."""

from __future__ import annotations

from dmpr_helpers import fill, make_queue

from harness.model import QueueManager, SeekDirection

F, B = SeekDirection.Forward, SeekDirection.Backward


def seek(qm: QueueManager, q, initial, peek: bool, direction=F):  # type: ignore[no-untyped-def]
    return qm.seek_available_message_position(initial, q, peek, direction)


def test_forward_from_start_sets_iterator_to_head(qm: QueueManager) -> None:
    """'If iIterator is equivalent to the StartMessagePosition: Set iIterator to Head'."""
    q = make_queue(qm)
    p = fill(qm, q, ["A", "A"])
    assert q.MessagePositionList.Head is p[0]
    assert seek(qm, q, q.MessagePositionList.Start, False) is p[0]


def test_forward_else_sets_iterator_to_initial_next(qm: QueueManager) -> None:
    """'Else: Set iIterator to iInitialPosition.Next' — the initial position itself is skipped."""
    q = make_queue(qm)
    p = fill(qm, q, ["A", "A", "A"])
    assert seek(qm, q, p[0], False) is p[1]
    assert seek(qm, q, p[1], True) is p[2]


def test_forward_while_not_available_walks_next(qm: QueueManager) -> None:
    """'While iIterator is not End and iIterator.State is not Available: ... Set iIterator to
    iIterator.Next' — Locked, PurgePending and still-linked Deleted positions are walked past."""
    q = make_queue(qm)
    p = fill(qm, q, ["L", "P", "M", "LP", "A"])
    assert seek(qm, q, q.MessagePositionList.Start, False) is p[4]


def test_forward_locked_peek_allow_peek_when_locked_returns_it(qm: QueueManager) -> None:
    """'If iIterator.State is Locked and iPeekOperation is True and
    iIterator.MessageReference.AllowPeekWhenLocked is True: Set rMessagePosition to iIterator'."""
    q = make_queue(qm)
    p = fill(qm, q, ["L", "LP", "A"])
    assert seek(qm, q, q.MessagePositionList.Start, True) is p[1]


def test_forward_locked_allow_peek_but_receive_is_skipped(qm: QueueManager) -> None:
    """iPeekOperation False: a Locked position is walked past even with AllowPeekWhenLocked."""
    q = make_queue(qm)
    p = fill(qm, q, ["LP", "A"])
    assert seek(qm, q, q.MessagePositionList.Start, False) is p[1]


def test_forward_locked_peek_without_allow_peek_is_skipped(qm: QueueManager) -> None:
    """iPeekOperation True but AllowPeekWhenLocked False: the Locked position is walked past."""
    q = make_queue(qm)
    p = fill(qm, q, ["L", "A"])
    assert seek(qm, q, q.MessagePositionList.Start, True) is p[1]


def test_forward_reaches_end_when_nothing_available(qm: QueueManager) -> None:
    """'While iIterator is not equivalent to End' — the walk stops on End: rMessagePosition End."""
    q = make_queue(qm)
    fill(qm, q, ["L", "P", "LP"])
    end = q.MessagePositionList.End
    assert seek(qm, q, q.MessagePositionList.Start, False) is end


def test_forward_empty_list_head_is_end(qm: QueueManager) -> None:
    """3.1.1.2 'If the list is empty, Head MUST equal End': a seek from Start returns End."""
    q = make_queue(qm)
    plist = q.MessagePositionList
    assert plist.Head is plist.End
    assert seek(qm, q, plist.Start, True) is plist.End


def test_forward_from_end_returns_end(qm: QueueManager) -> None:
    """'Set iIterator to iInitialPosition.Next' with iInitialPosition End: End.Next is End."""
    q = make_queue(qm)
    fill(qm, q, ["A"])
    plist = q.MessagePositionList
    assert seek(qm, q, plist.End, False) is plist.End


def test_forward_from_removed_position_continues_in_place(qm: QueueManager) -> None:
    """iInitialPosition.Next of a position removed by Message Position Deleted (3.1.7.2.1) is the
    next position still in the list."""
    q = make_queue(qm)
    p = fill(qm, q, ["A", "D", "A"])
    assert not p[1].in_list
    assert p[1].Next is p[2]
    assert seek(qm, q, p[1], False) is p[2]
    assert seek(qm, q, p[1], False, B) is p[0]


def test_forward_priority_order(qm: QueueManager) -> None:
    """3.1.1.2: positions are in ascending arrival order within priority (7 first)."""
    q = make_queue(qm)
    p = fill(qm, q, [("A", False, 1), ("A", False, 7), ("A", False, 1), ("A", False, 5)])
    order = list(q.MessagePositionList)
    assert order == [p[1], p[3], p[0], p[2]]
    assert seek(qm, q, q.MessagePositionList.Start, False) is p[1]
    assert seek(qm, q, p[3], False) is p[0]


def test_backward_from_end_sets_iterator_to_tail(qm: QueueManager) -> None:
    """'If iIterator is equivalent to the EndMessagePosition: Set iIterator to Tail'."""
    q = make_queue(qm)
    p = fill(qm, q, ["A", "A"])
    assert q.MessagePositionList.Tail is p[1]
    assert seek(qm, q, q.MessagePositionList.End, False, B) is p[1]


def test_backward_else_sets_iterator_to_initial_previous(qm: QueueManager) -> None:
    """'Else: Set iIterator to iInitialPosition.Previous'."""
    q = make_queue(qm)
    p = fill(qm, q, ["A", "A", "A"])
    assert seek(qm, q, p[2], False, B) is p[1]


def test_backward_while_not_available_walks_previous(qm: QueueManager) -> None:
    """'While iIterator is not Start and iIterator.State is not Available: ... Previous'."""
    q = make_queue(qm)
    p = fill(qm, q, ["A", "L", "P", "M", "LP"])
    assert seek(qm, q, q.MessagePositionList.End, False, B) is p[0]


def test_backward_locked_peek_allow_peek_when_locked_returns_it(qm: QueueManager) -> None:
    """Backward: 'If iIterator.State is Locked and iPeekOperation ... AllowPeekWhenLocked is True:
    Set rMessagePosition to iIterator'."""
    q = make_queue(qm)
    p = fill(qm, q, ["A", "LP", "L"])
    assert seek(qm, q, q.MessagePositionList.End, True, B) is p[1]
    assert seek(qm, q, q.MessagePositionList.End, False, B) is p[0]


def test_backward_reaches_start_when_nothing_available(qm: QueueManager) -> None:
    """Backward: 'While iIterator is not equivalent to Start' — the walk stops on Start, which is
    what is returned (the Backward branch never yields End)."""
    q = make_queue(qm)
    fill(qm, q, ["L", "LP"])
    plist = q.MessagePositionList
    assert seek(qm, q, plist.End, False, B) is plist.Start


def test_backward_from_start_returns_start(qm: QueueManager) -> None:
    """Backward from Start: Start.Previous is Start, the while loop does not run."""
    q = make_queue(qm)
    fill(qm, q, ["A"])
    plist = q.MessagePositionList
    assert seek(qm, q, plist.Start, True, B) is plist.Start


def test_backward_empty_list_tail_is_start(qm: QueueManager) -> None:
    """Backward from End on an empty list: Tail is Start, returned as is."""
    q = make_queue(qm)
    plist = q.MessagePositionList
    assert seek(qm, q, plist.End, True, B) is plist.Start


def test_seek_default_direction_is_forward(qm: QueueManager) -> None:
    """'If iSeekDirection is Forward or if the iSeekDirection argument is not supplied'."""
    q = make_queue(qm)
    p = fill(qm, q, ["A", "A"])
    assert qm.seek_available_message_position(p[0], q, False) is p[1]
