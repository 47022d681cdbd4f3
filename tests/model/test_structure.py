"""The shape of the [MS-MQDMPR] model: the queue manager split by the spec's section families
(harness.model.qm_*), no module over 400 lines, no function over 60 lines or of cyclomatic
complexity over 15, and a Cursor (3.2) that sees its queue manager only through CursorHost.
Plus the receive tail Read Message By Lookup Identifier (3.1.7.1.13) shares with Dequeue
Message (3.1.7.1.10): a transaction locks the position, a two-phase read locks it, a plain
receive deletes it."""

from __future__ import annotations

from pathlib import Path

import grimp
from dmpr_helpers import fill, make_queue, open_desc

from harness.model import (
    Cursor,
    MessagePosition,
    MessagePositionState,
    MessageSeekAction,
    MQStatus,
    Queue,
    QueueManager,
    SeekDirection,
)
from tools.function_size import offenders

MODEL = Path(__file__).resolve().parents[2] / "harness" / "model"
S = MessagePositionState


def test_every_model_module_is_at_most_400_lines() -> None:
    sizes = {p.name: p.read_text().count("\n") for p in MODEL.glob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 400} == {}
    assert {"qm_core.py", "qm_positions.py", "qm_timers.py", "qm_transactions.py", "qm_reads.py",
            "qm_queues.py", "qm_outgoing.py"} <= set(sizes)


def test_no_model_function_over_60_lines_or_complexity_15() -> None:
    assert offenders([MODEL]) == []


def test_cursor_imports_nothing_of_the_queue_manager() -> None:
    graph = grimp.build_graph("harness", cache_dir=None)
    imported = graph.find_modules_directly_imported_by("harness.model.cursor")
    assert not {m for m in imported if m == "harness.model.queue_manager" or m.startswith("harness.model.qm_")}


class _Host:
    """A CursorHost that is no QueueManager: handles from 100, seeks counted."""

    def __init__(self) -> None:
        self.seeks = 0
        self.qm = QueueManager()

    def new_handle(self) -> int:
        return 100

    def seek_available_message_position(
        self,
        iInitialPosition: MessagePosition,
        iQueue: Queue,
        iPeekOperation: bool,
        iSeekDirection: SeekDirection = SeekDirection.Forward,
    ) -> MessagePosition:
        self.seeks += 1
        return self.qm.seek_available_message_position(iInitialPosition, iQueue, iPeekOperation, iSeekDirection)


def test_cursor_runs_on_any_cursor_host() -> None:
    host = _Host()
    queue = make_queue(host.qm)
    desc = open_desc(host.qm)
    (first, _) = fill(host.qm, queue, ["A", "A"])
    cursor = Cursor(host)
    cursor.initialize(desc)
    assert cursor.Handle == 100
    assert cursor.get_message_for_peek()[1] is first
    assert host.seeks == 1


def test_lookup_receive_in_a_transaction_locks_then_commit_deletes(qm: QueueManager) -> None:
    q = make_queue(qm)
    d = open_desc(qm)
    (p,) = fill(qm, q, ["A"])
    lid = p.MessageReference.LookupIdentifier  # type: ignore[union-attr]
    t = qm.create_transaction("t1")
    r = qm.read_message_by_lookup_identifier(d, lid, False, MessageSeekAction.SeekCurrent, t)
    assert r.rStatus == MQStatus.MQ_OK and r.rMessage is p.MessageReference and p.State is S.Locked
    assert qm.transaction_commit("t1") == MQStatus.MQ_OK
    assert p.State is S.Deleted


def test_lookup_two_phase_receive_locks(qm: QueueManager) -> None:
    q = make_queue(qm)
    d = open_desc(qm)
    (p,) = fill(qm, q, ["A"])
    lid = p.MessageReference.LookupIdentifier  # type: ignore[union-attr]
    r = qm.read_message_by_lookup_identifier(d, lid, False, MessageSeekAction.SeekCurrent, None, True)
    assert r.rMessage is p.MessageReference and p.State is S.Locked
