"""[MS-MQDMPR] 3.1.4.4 Transaction Commit and 3.1.4.5 Transaction Abort on a big transaction: each
TransactionalOperation is applied in order and removed from the collection after it, with work
linear in their number (removing each from the front moved every later one: quadratic), and the
same outcome, an operation that fails included."""

from __future__ import annotations

from typing import Any

import pytest
from dmpr_helpers import make_queue, open_desc

from harness.model import Message, MessagePositionState, QueueManager

OPERATIONS = 20_000


class MovesCounted(list[Any]):
    """A list that counts the elements its removals shift (the work a removal from the front
    does); every other operation is the list's own."""

    moved = 0

    def pop(self, index: Any = -1) -> Any:
        i = index % len(self) if self else 0
        self.moved += len(self) - i - 1
        return super().pop(index)

    def __delitem__(self, key: Any) -> None:
        if isinstance(key, slice):
            _start, stop, _step = key.indices(len(self))
            self.moved += len(self) - stop
        else:
            self.moved += len(self) - key % len(self) - 1
        super().__delitem__(key)


@pytest.mark.parametrize("end", ["commit", "abort"])
def test_ending_a_big_transaction_moves_no_operation_and_applies_each_in_order(qm: QueueManager, end: str) -> None:
    q = make_queue(qm)
    t = qm.create_transaction("t")
    t.TransactionalOperationCollection = ops = MovesCounted()
    messages = [Message(b"%d" % n) for n in range(OPERATIONS)]
    for m in messages:
        qm.enqueue_message(q, m, t)
    assert len(ops) == OPERATIONS
    status = qm.transaction_commit("t") if end == "commit" else qm.transaction_abort("t")
    assert status == 0 and "t" not in qm.TransactionCollection and not ops
    assert ops.moved <= OPERATIONS  # before: 199,990,000 (each removal from the front moved the rest)
    if end == "commit":  # 3.1.4.4 Enqueue: Message Position Available, in the transaction's order
        assert [p.MessageReference for p in q.MessagePositionList] == messages
        assert all(p.State is MessagePositionState.Available for p in q.MessagePositionList)
    else:  # 3.1.4.5 Enqueue: each position removed from the list
        assert len(q.MessagePositionList) == 0


def test_an_operation_that_fails_stops_the_loop_with_it_and_the_rest_left(qm: QueueManager) -> None:
    q = make_queue(qm)
    open_desc(qm)
    t = qm.create_transaction("t")
    messages = [Message(b"%d" % n) for n in range(3)]
    for m in messages:
        qm.enqueue_message(q, m, t)
    ops = list(t.TransactionalOperationCollection)
    ops[1].MessagePositionReference.QueueReference = None  # its queue cannot be found
    with pytest.raises(AssertionError):
        qm.transaction_commit("t")
    assert t.TransactionalOperationCollection == ops[1:]  # the first applied and removed, as before
    assert ops[0].MessagePositionReference.State is MessagePositionState.Available
    assert "t" in qm.TransactionCollection
