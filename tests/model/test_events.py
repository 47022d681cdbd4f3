"""[MS-MQDMPR] events beyond the seeds: 3.1.4 (transactions, pause/resume), 3.1.6.3, 3.1.7.1,
3.1.7.2 and 3.1.7.3 (waiting readers, timers, subscribers, lookup identifiers, quotas)."""

from __future__ import annotations

from dmpr_helpers import FORMAT, fill, make_queue, open_desc

from harness.model import (
    CursorState,
    EnqueueStatus,
    Message,
    MessageClass,
    MessagePositionState,
    MessageSeekAction,
    MQStatus,
    OutgoingQueue,
    OutgoingQueueState,
    QueueAccessType,
    QueueManager,
    QueueShareMode,
)

S = MessagePositionState
R, SEND = QueueAccessType.ReceiveAccess, QueueAccessType.SendAccess
DN, DR = QueueShareMode.DenyNone, QueueShareMode.DenyReceive


def test_commit_unknown_transaction_is_sequence_error(qm: QueueManager) -> None:
    """3.1.4.4/3.1.4.5: 'If a Transaction is not found, rStatus := MQ_ERROR_TRANSACTION_SEQUENCE'."""
    assert qm.transaction_commit("nope") == MQStatus.MQ_ERROR_TRANSACTION_SEQUENCE
    assert qm.transaction_abort("nope") == MQStatus.MQ_ERROR_TRANSACTION_SEQUENCE


def test_commit_enqueue_makes_available_and_dequeue_deletes(qm: QueueManager) -> None:
    """3.1.4.4: Enqueue -> Message Position Available; Dequeue -> Message Position Deleted;
    the transaction leaves TransactionCollection."""
    q = make_queue(qm)
    d = open_desc(qm)
    (p,) = fill(qm, q, ["A"])
    t = qm.create_transaction("t")
    m = Message(b"new")
    qm.enqueue_message(q, m, t)
    qm.dequeue_message(d, 0, iTransaction=t)
    assert qm.transaction_commit("t") == 0
    assert p.State is S.Deleted and m.MessagePositionReference is not None
    assert m.MessagePositionReference.State is S.Available
    assert "t" not in qm.TransactionCollection


def test_abort_enqueue_removes_position(qm: QueueManager) -> None:
    """3.1.4.5 Enqueue: 'Remove the MessagePosition ... from the MessagePositionList'."""
    q = make_queue(qm)
    t = qm.create_transaction("t")
    m = Message()
    qm.enqueue_message(q, m, t)
    assert qm.transaction_abort("t") == 0
    assert len(q.MessagePositionList) == 0


def test_purge_then_abort_deletes_purge_pending(qm: QueueManager) -> None:
    """3.1.7.1.7 Locked -> PurgePending; 3.1.4.5 'If State is PurgePending: Message Position
    Deleted' with the DequeueReason."""
    q = make_queue(qm)
    d = open_desc(qm)
    (p,) = fill(qm, q, ["A"])
    reasons: list[MessageClass] = []
    qm.message_position_deleted_subscribers.append(lambda q_, p_, r: reasons.append(r))
    t = qm.create_transaction("t")
    qm.dequeue_message(d, 0, iTransaction=t)
    qm.purge_queue(q)
    assert p.State is S.PurgePending
    qm.transaction_abort("t")
    assert p.State is S.Deleted and reasons == [MessageClass.AckReceive]


def test_waiting_receive_satisfied_by_enqueue_and_subscribers(qm: QueueManager) -> None:
    """3.1.7.1.10 Wait For New Message; 3.1.7.2.2 wakes the waiting reader and (model hook)
    notifies subscribers with (iQueue, iPosition)."""
    q = make_queue(qm)
    d = open_desc(qm)
    seen = []
    qm.message_position_available_subscribers.append(lambda q_, p_: seen.append((q_, p_)))
    r = qm.dequeue_message(d, 10)
    assert r.rStatus is None and r.pending is not None
    assert d.WaitingMessageReadOperationCollection == [r.pending]
    m = Message(b"x")
    qm.enqueue_message(q, m)
    assert r.pending.result is not None and r.pending.result.rMessage is m
    assert m.MessagePositionReference is not None
    assert m.MessagePositionReference.State is S.Deleted
    assert seen == [(q, m.MessagePositionReference)]
    assert d.WaitingMessageReadOperationCollection == []


def test_peekers_all_released_then_first_receiver_takes(qm: QueueManager) -> None:
    """3.1.7.2.2: non-destructive readers are satisfied in turn (Release Next Reader); the first
    destructive one takes the message and the rest 'remain blocked'."""
    make_queue(qm)
    d = open_desc(qm)
    p1 = qm.peek_message(d, 10)
    r1 = qm.dequeue_message(d, 10)
    r2 = qm.dequeue_message(d, 10)
    q = d.QueueReference
    assert q is not None
    m = Message()
    qm.enqueue_message(q, m)
    assert p1.pending and p1.pending.result and p1.pending.result.rMessage is m
    assert r1.pending and r1.pending.result and r1.pending.result.rMessage is m
    assert r2.pending and r2.pending.result is None


def test_timer_expiry_times_out_cursor_wait(qm: QueueManager) -> None:
    """3.1.6.3 -> 3.1.7.3.5 with MQ_ERROR_IO_TIMEOUT; the cursor gets Wait Time Expired (3.2.7.6)."""
    q = make_queue(qm)
    d = open_desc(qm)
    c = qm.open_cursor(d)
    assert c is not None
    r = qm.dequeue_message(d, 5, c)
    assert r.pending is not None and c.CursorState is CursorState.WaitReceive
    qm.clock.now += 4  # type: ignore[attr-defined]
    assert qm.fire_due_timers() == 0
    qm.clock.now += 1  # type: ignore[attr-defined]
    assert qm.fire_due_timers() == 1
    assert r.pending.result is not None
    assert r.pending.result.rStatus == MQStatus.MQ_ERROR_IO_TIMEOUT
    assert c.CursorState is CursorState.Unread
    assert c.MessagePositionReference is q.MessagePositionList.End


def test_close_queue_cancels_tagged_waits(qm: QueueManager) -> None:
    """3.1.7.1.6 -> 3.1.7.1.17 with MQ_ERROR_OPERATION_CANCELLED; the descriptor is removed."""
    q = make_queue(qm)
    d = open_desc(qm)
    r = qm.dequeue_message(d, 10, iTag=7)
    qm.close_queue(d)
    assert r.pending is not None and r.pending.result is not None
    assert r.pending.result.rStatus == MQStatus.MQ_ERROR_OPERATION_CANCELLED
    assert d not in q.OpenQueueDescriptorCollection
    assert qm.cancel_waiting_message_read_request(q, 7, MQStatus.MQ_OK) == MQStatus.STATUS_NOT_FOUND


def test_dequeue_statuses(qm: QueueManager) -> None:
    """3.1.7.1.10: NotFound with a cursor and iTimeout 0; QUEUE_NOT_AVAILABLE once deleted."""
    q = make_queue(qm)
    d = open_desc(qm)
    c = qm.open_cursor(d)
    assert qm.dequeue_message(d, 0, c).rStatus == MQStatus.MQ_ERROR_MESSAGE_NOT_FOUND
    assert qm.dequeue_message(d, 0).rStatus == MQStatus.MQ_ERROR_IO_TIMEOUT
    assert qm.peek_next_message(d, 0, c).rStatus == MQStatus.MQ_ERROR_ILLEGAL_CURSOR_ACTION
    qm.delete_queue(q)
    assert qm.dequeue_message(d, 0).rStatus == MQStatus.MQ_ERROR_QUEUE_NOT_AVAILABLE


def test_dequeue_end(qm: QueueManager) -> None:
    """3.1.7.1.12: Available -> TRANSACTION_SEQUENCE; iDeleteMessage False -> Available again."""
    q = make_queue(qm)
    d = open_desc(qm)
    (p,) = fill(qm, q, ["A"])
    m = p.MessageReference
    assert m is not None
    assert qm.dequeue_message_end(d, m, True) == MQStatus.MQ_ERROR_TRANSACTION_SEQUENCE
    assert qm.dequeue_message_begin(d, 0).rMessage is m and p.State is S.Locked
    assert qm.dequeue_message_end(d, m, False) == 0 and p.State is S.Available
    qm.dequeue_message_begin(d, 0)
    assert qm.dequeue_message_end(d, m, True) == 0 and p.State is S.Deleted


def test_lookup_identifier_and_seek_with_id(qm: QueueManager) -> None:
    """3.1.7.1.9 LookupIdentifier (high byte 0 without a TransactionalMessageSequenceIdentifier,
    else 0x07-Priority); 3.1.7.1.13 / 3.1.7.3.3 seek actions and statuses."""
    q = make_queue(qm)
    d = open_desc(qm)
    p = fill(qm, q, ["A", "L", "A"])
    ids = [x.MessageReference.LookupIdentifier for x in p]  # type: ignore[union-attr]
    assert ids == [qm.SequentialID - 2, qm.SequentialID - 1, qm.SequentialID]
    tm = Message(Priority=2, TransactionalMessageSequenceIdentifier=(1, 2))
    qm.enqueue_message(q, tm)
    assert tm.LookupIdentifier >> 56 == 5
    rd = qm.read_message_by_lookup_identifier
    A = MessageSeekAction
    assert rd(d, ids[1], True, A.SeekCurrent).rStatus == MQStatus.MQ_ERROR_TRANSACTION_USAGE
    assert rd(d, ids[0], True, A.SeekNext).rMessage is p[2].MessageReference
    assert rd(d, ids[2], True, A.SeekPrevious).rMessage is p[0].MessageReference
    assert rd(d, ids[0], True, A.SeekLast).rMessage is tm
    assert rd(d, 999_999, True, A.SeekFirst).rStatus == MQStatus.MQ_ERROR_MESSAGE_NOT_FOUND
    assert rd(d, ids[0], False, A.SeekCurrent).rMessage is p[0].MessageReference
    assert p[0].State is S.Deleted


def test_enqueue_quotas_and_throttle(qm: QueueManager) -> None:
    """3.1.7.1.9: rStatus 2 when Throttled (3.1.7.2.5) or QueueManagerQuota exceeded; 1 when the
    queue Quota (kilobytes) would be exceeded."""
    q = make_queue(qm)
    q.Quota = 1
    assert qm.enqueue_message(q, Message(b"x" * 1024)) == EnqueueStatus.NoError
    assert qm.enqueue_message(q, Message(b"x")) == EnqueueStatus.QueueQuotaExceeded
    qm.begin_flow_control()
    assert qm.enqueue_message(q, Message()) == EnqueueStatus.QueueManagerQuotaExceeded
    qm.end_flow_control()
    qm.QueueManagerQuota = 1024
    q.Quota = 0xFFFFFFFF
    assert qm.enqueue_message(q, Message(b"y")) == EnqueueStatus.QueueManagerQuotaExceeded
    assert q.TotalBytes == 1024


def test_open_queue_statuses_and_outgoing_queue(qm: QueueManager) -> None:
    """3.1.7.1.5: QUEUE_NOT_FOUND, SHARING_VIOLATION, multiple-element rules, and an
    OutgoingQueue (State Inactive) for a remote send; 3.1.4.14/15 Pause -> OnHold, Resume ->
    Inactive."""
    make_queue(qm)
    st, _ = qm.open_queue("DIRECT=OS:LOCALHOST\\private$\\none", R, DN)
    assert st == MQStatus.MQ_ERROR_QUEUE_NOT_FOUND
    open_desc(qm, R, DR)
    assert qm.open_queue(FORMAT, R, DN)[0] == MQStatus.MQ_ERROR_SHARING_VIOLATION
    multi = FORMAT + ",DIRECT=OS:remote\\private$\\x"
    assert qm.open_queue(multi, R, DN)[0] == MQStatus.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION
    assert qm.open_queue(multi, SEND, DR)[0] == MQStatus.MQ_ERROR_UNSUPPORTED_ACCESS_MODE
    st, md = qm.open_queue(multi, SEND, DN)
    assert st == 0 and md is not None and md.Multiple and len(md.OpenQueueDescriptorCollection) == 2
    # Expand Format Name (3.1.7.3.8) sorts the elements case-insensitively: local first
    out = md.OpenQueueDescriptorCollection[1].QueueReference
    assert isinstance(out, OutgoingQueue) and out.State is OutgoingQueueState.Inactive
    assert qm.enqueue_message_to_an_open_queue(md, Message(b"fan")) == 0
    assert len(out.MessagePositionList) == 1 and out.Active
    qm.pause_queue(out)
    assert out.State is OutgoingQueueState.OnHold
    qm.resume_queue(out)
    assert out.State is OutgoingQueueState.Inactive


def test_dispatch_collection(qm: QueueManager) -> None:
    """3.1.7.1.28 Add -> Dispatch Send Message (3.1.7.3.9) picks the highest Priority entry of
    an Active queue; 3.1.7.1.29 removes the entry."""
    q = make_queue(qm)
    open_desc(qm)
    p = fill(qm, q, [("A", False, 1), ("A", False, 6)])
    sent = []
    qm.send_user_message_subscribers.append(lambda data, pos: sent.append((data, pos)))
    qm.add_message_to_dispatch_collection("x", p[0])
    assert sent == [("x", p[0])] and qm.DispatchCollection[0].SendInProgress
    qm.add_message_to_dispatch_collection("y", p[1])
    assert len(sent) == 1  # a send is in progress
    qm.remove_message_from_dispatch_collection(p[0])
    assert sent[-1] == ("y", p[1])


def test_time_to_be_received_expiry(qm: QueueManager) -> None:
    """3.1.2.4 / 3.1.7.2.7: an expired message is deleted with NackReceiveTimeout."""
    q = make_queue(qm)
    m = Message(TimeToBeReceived=3)
    qm.enqueue_message(q, m)
    qm.clock.now += 3  # type: ignore[attr-defined]
    assert qm.fire_due_timers() == 1
    assert m.MessagePositionReference is not None
    assert m.MessagePositionReference.State is S.Deleted


def test_move_message(qm: QueueManager) -> None:
    """3.1.7.1.16 without a transaction: source Deleted (still linked), new Available position in
    the target; with one, Locked until Transaction Commit (3.1.4.4) moves it."""
    q = make_queue(qm)
    q2 = make_queue(qm, "LOCALHOST\\private$\\q2")
    p = fill(qm, q, ["A", "A"])
    qm.move_message(p[0], q2)
    assert p[0].State is S.Deleted and p[0].in_list
    assert [x.MessageReference for x in q2.MessagePositionList] == [p[0].MessageReference]
    t = qm.create_transaction("t")
    qm.move_message(p[1], q2, t)
    assert p[1].State is S.Locked
    qm.transaction_commit("t")
    assert p[1].State is S.Deleted and len(q2.MessagePositionList) == 2
