"""Helpers for the [MS-MQDMPR] model tests: building queues and positions in given states."""

from __future__ import annotations

from collections.abc import Callable

from harness.model import (
    Message,
    MessageClass,
    MessagePosition,
    MessagePositionState,
    OpenQueueDescriptor,
    Queue,
    QueueAccessType,
    QueueManager,
    QueueShareMode,
)

PATH = "LOCALHOST\\private$\\q"
FORMAT = "DIRECT=OS:LOCALHOST\\private$\\q"


class Clock:
    """Injected clock the tests advance by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_queue(qm: QueueManager, path: str = PATH) -> Queue:
    template = qm.new_queue(Queue, path)
    qm.set_queue_defaults(template)
    template.Pathname = path
    status, queue = qm.create_queue(template)
    assert status == 0 and queue is not None
    return queue


def open_desc(
    qm: QueueManager,
    access: QueueAccessType = QueueAccessType.ReceiveAccess,
    share: QueueShareMode = QueueShareMode.DenyNone,
    fmt: str = FORMAT,
) -> OpenQueueDescriptor:
    status, desc = qm.open_queue(fmt, access, share)
    assert status == 0 and desc is not None
    return desc


Spec = tuple[str, bool, int]  # (state, AllowPeekWhenLocked, Priority)


def fill(qm: QueueManager, queue: Queue, specs: list[str | Spec]) -> list[MessagePosition]:
    """Enqueue one message per spec, then put its position in the given state.

    A spec is a state name ("A" Available, "L" Locked, "LP" Locked + AllowPeekWhenLocked,
    "P" PurgePending, "D" Deleted (removed by Message Position Deleted), "M" Deleted but
    still linked, as Move Message leaves it) or a (state, apwl, priority) tuple.
    """
    positions = []
    for i, spec in enumerate(specs):
        state, apwl, prio = (spec, spec == "LP", 3) if isinstance(spec, str) else spec
        m = Message(b"m%d" % i, Priority=prio, AllowPeekWhenLocked=apwl)
        assert qm.enqueue_message(queue, m) == 0
        pos = m.MessagePositionReference
        assert pos is not None
        positions.append(pos)
    for pos, spec in zip(positions, specs, strict=True):
        state = spec if isinstance(spec, str) else spec[0]
        apply_state(qm, queue, pos, state)
    return positions


def apply_state(qm: QueueManager, queue: Queue, pos: MessagePosition, state: str) -> None:
    S = MessagePositionState
    setters: dict[str, Callable[[], None]] = {
        "A": lambda: None,
        "L": lambda: setattr(pos, "State", S.Locked),
        "LP": lambda: setattr(pos, "State", S.Locked),
        "P": lambda: setattr(pos, "State", S.PurgePending),
        "M": lambda: setattr(pos, "State", S.Deleted),
        "D": lambda: qm.message_position_deleted(queue, pos, MessageClass.AckReceive),
    }
    setters[state]()
