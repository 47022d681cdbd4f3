"""Seed 004: [MS-MQDMPR] 3.1.1.11 MessagePosition — states, Next/Previous, persistence, removal."""

from __future__ import annotations

from dmpr_helpers import fill, make_queue, open_desc

from harness.model import (
    DeliveryGuarantee,
    Message,
    MessagePositionState,
    QueueManager,
)

S = MessagePositionState


def test_available_when_enqueued_outside_a_transaction(qm: QueueManager) -> None:
    """Available: 'available for receive operations' — Enqueue Message without iTransaction
    generates Message Position Available (3.1.7.1.9)."""
    q = make_queue(qm)
    (p,) = fill(qm, q, ["A"])
    assert p.State is S.Available and p.QueueReference is q


def test_locked_when_received_in_a_transaction_or_enqueued_in_one(qm: QueueManager) -> None:
    """Locked: 'received within a transaction that has not committed' (3.1.7.1.10) and a
    transactional enqueue (3.1.7.1.9)."""
    q = make_queue(qm)
    d = open_desc(qm)
    (p,) = fill(qm, q, ["A"])
    t = qm.create_transaction("t1")
    assert qm.dequeue_message(d, 0, iTransaction=t).rStatus == 0
    assert p.State is S.Locked
    m = Message(b"x")
    qm.enqueue_message(q, m, t)
    assert m.MessagePositionReference is not None
    assert m.MessagePositionReference.State is S.Locked


def test_locked_by_two_phase_read(qm: QueueManager) -> None:
    """Locked: 'read by a remote application and has not yet been acknowledged' (3.1.7.1.11)."""
    q = make_queue(qm)
    d = open_desc(qm)
    (p,) = fill(qm, q, ["A"])
    r = qm.dequeue_message_begin(d, 0)
    assert r.rStatus == 0 and p.State is S.Locked


def test_purge_pending_when_locked_at_purge(qm: QueueManager) -> None:
    """PurgePending: 'was in a Locked state when a Purge Queue event was generated'."""
    q = make_queue(qm)
    p = fill(qm, q, ["L", "A"])
    qm.purge_queue(q)
    assert p[0].State is S.PurgePending and p[0].in_list
    assert p[1].State is S.Deleted and not p[1].in_list


def test_deleted_and_removed_from_list(qm: QueueManager) -> None:
    """Deleted: 'the referenced Message has been deleted' (3.1.7.2.1 also removes it)."""
    q = make_queue(qm)
    p = fill(qm, q, ["A", "D", "A"])
    assert p[1].State is S.Deleted
    assert list(q.MessagePositionList) == [p[0], p[2]]


def test_next_and_previous_links_with_end_and_start(qm: QueueManager) -> None:
    """Next: 'the next MessagePosition ... or the reserved End entry'; Previous: the previous one,
    or the reserved entry before the first position (Start)."""
    q = make_queue(qm)
    p = fill(qm, q, ["A", "L", "A"])
    plist = q.MessagePositionList
    assert [p[0].Next, p[1].Next, p[2].Next] == [p[1], p[2], plist.End]
    assert [p[0].Previous, p[1].Previous, p[2].Previous] == [plist.Start, p[0], p[1]]
    assert plist.Head is p[0] and plist.Tail is p[2]


def test_persistent_when_recoverable(qm: QueueManager) -> None:
    """'If the DeliveryGuarantee ... is Recoverable, the preceding attributes MUST be treated as
    Persistent'."""
    assert Message(DeliveryGuarantee=DeliveryGuarantee.Recoverable).is_persistent
    assert not Message().is_persistent


def test_removed_position_stays_usable_while_referenced(qm: QueueManager) -> None:
    """'can be removed from the system when there is no MessagePositionReference ... referencing
    it': a cursor still referencing a received position iterates on from it."""
    q = make_queue(qm)
    d = open_desc(qm)
    p = fill(qm, q, ["A", "A"])
    c = qm.open_cursor(d)
    assert c is not None
    assert qm.peek_message(d, 0, c).rMessage is p[0].MessageReference
    assert qm.dequeue_message(d, 0).rMessage is p[0].MessageReference  # removed under the cursor
    assert c.MessagePositionReference is p[0] and not p[0].in_list
    assert qm.peek_next_message(d, 0, c).rMessage is p[1].MessageReference


def test_aborted_receive_is_available_again_in_place(qm: QueueManager) -> None:
    """Transaction Abort (3.1.4.5) of a Dequeue generates Message Position Available: the same
    position, same neighbours."""
    q = make_queue(qm)
    d = open_desc(qm)
    p = fill(qm, q, ["A", "A", "A"])
    t = qm.create_transaction("t")
    assert qm.dequeue_message(d, 0, iTransaction=t).rMessage is p[0].MessageReference
    assert qm.dequeue_message(d, 0).rMessage is p[1].MessageReference
    assert qm.transaction_abort("t") == 0
    assert p[0].State is S.Available and list(q.MessagePositionList) == [p[0], p[2]]
    assert qm.dequeue_message(d, 0).rMessage is p[0].MessageReference
