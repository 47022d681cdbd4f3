"""Out-of-reading mutants: for each [MS-MQDMPR] ``interpretation`` of cases/requirements.yaml, the
reference queue manager answering, through the hook where the model takes its reading
(``harness.model.QueueManager``, "readings" block), with a value that NO reading gives.

A reading is an answer, never an excuse: an implementation that answers outside every named reading
breaks the MUST sentence that frames the choice (the interpretation's ``frame``), and the corpus
must fail it there (harness.cases.grading).  The mutants are generated from :data:`TABLE`
(interpretation id -> hook -> out-of-reading answer): :func:`generate` builds one QueueManager
subclass per row, each a module attribute, so ``plugin:examples.mutants.readings:<name>`` loads it.
``python -m harness.cases.mutants`` runs them apart from the other mutants (heading
"out-of-reading mutants"); :data:`MUTANTS` lists (interpretation id, class path).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.model import MQStatus, QueueManager
from harness.model.adm import Queue, WaitingMessageReadOperation
from harness.model.cursor import Cursor
from harness.model.enums import CursorStatus
from harness.model.messages import Message, MessagePosition


@dataclass(frozen=True)
class OutOfReading:
    """One row: the mutant ``name`` answers ``answer`` at ``hook`` for ``interpretation``.

    ``answer`` is the hook's new value: a constant for a class attribute, a function (taking
    the queue manager and the hook's arguments) for a method.  A hook of a Cursor event
    (``harness.model.cursor.Cursor``) is answered through ``cursor_factory``: the answer is a
    Cursor subclass that overrides it (:func:`_cursor_answering`).  ``says`` is what the answer is, in
    words, for the mutant's docstring."""

    interpretation: str
    name: str
    hook: str
    answer: Any
    says: str


def _head_next(peek: bool) -> Callable[..., MessagePosition]:
    """A cursorless read (receive when ``peek`` is False, peek when True) that seeks from Head.Next:
    the walk starts one position further than either reading (from-head: Head, after-head:
    Head.Next)."""

    def answer(qm: QueueManager, iQueue: Queue, iPeekOperation: bool = False) -> MessagePosition:
        plist = iQueue.MessagePositionList
        if iPeekOperation is not peek:
            return plist.Start
        return plist.Head.Next

    return answer


def _cancel_next_readers(qm: QueueManager, iQueue: Queue, iReader: WaitingMessageReadOperation) -> bool:
    """The readers after a satisfied peek without cursor end at once with
    MQ_ERROR_OPERATION_CANCELLED: neither released to the message nor left blocked."""
    for desc in list(iQueue.OpenQueueDescriptorCollection):
        for reader in list(desc.WaitingMessageReadOperationCollection):
            if reader is not iReader and not reader.done:
                desc.WaitingMessageReadOperationCollection.remove(reader)
                qm.waiting_message_read_timer_stop(reader, MQStatus.MQ_ERROR_OPERATION_CANCELLED)
    return False


def _cursor_answering(name: str, hook: str, answer: Callable[..., Any]) -> type[Cursor]:
    """A Cursor subclass whose ``hook`` (a method of harness.model.cursor.Cursor) is ``answer``
    (taking the cursor and the hook's arguments): the value of a row whose hook is
    ``cursor_factory``."""
    if not hasattr(Cursor, hook):
        raise AttributeError(f"{name}: Cursor has no hook {hook!r}")
    cls = type(name, (Cursor,), {"__module__": __name__, "__qualname__": name, hook: answer})
    globals()[name] = cls  # found by its qualified name, as the generated queue managers are
    return cls


def _counted_twice(qm: QueueManager, iQueue: Queue, iPosition: MessagePosition) -> int:
    message: Message | None = iPosition.MessageReference
    return 2 * qm.message_storage_size(message) if message is not None else 0


#: interpretation id -> hook -> out-of-reading answer (one generated mutant per row).
TABLE: list[OutOfReading] = [
    OutOfReading(
        "DMPR-3.1.7.3.2-BWD-START", "BackwardMissReturnsHead", "backward_seek_miss",
        lambda qm, iQueue: iQueue.MessagePositionList.Head,
        "a backward seek that finds no Available position returns the Head (neither Start nor End)",
    ),
    OutOfReading(
        "DMPR-3.1.1.2-END-NEXT", "ForwardSeekFromEndReturnsStart", "forward_seek_from_end",
        lambda qm, iQueue, iPeekOperation: iQueue.MessagePositionList.Start,
        "a forward seek from End returns Start (neither End nor the first Available message)",
    ),
    OutOfReading(
        "DMPR-3.1.1.2-START-PREVIOUS", "BackwardSeekFromStartReturnsHead", "backward_seek_from_start",
        lambda qm, iQueue, iPeekOperation: iQueue.MessagePositionList.Head,
        "a backward seek from Start returns the Head whatever its state (neither no message nor the"
        " last Available one)",
    ),
    OutOfReading(
        "DMPR-3.1.1.11-REMOVED-NEXT", "RemovedPositionSeeksFromEnd", "removed_position_origin",
        lambda qm, iQueue, iPosition: iQueue.MessagePositionList.End,
        "a cursor whose position left the list seeks from End and finds no message (neither the"
        " message after its place nor the first of the list)",
    ),
    OutOfReading(
        "DMPR-3.1.7.2.1-STORAGE", "MessagesConsumeNoStorage", "message_storage_size",
        lambda qm, message: 0,
        "a message consumes no storage (less than its body, which every reading counts)",
    ),
    OutOfReading(
        "DMPR-3.1.7.2.2-TOTALBYTES", "AvailableCountsTwice", "storage_added_when_available",
        _counted_twice,
        "Message Position Available adds twice the message's storage, each time (neither once per"
        " event nor once per message)",
    ),
    OutOfReading(
        "DMPR-3.1.7.1.10-HEAD", "ReceiveFromHeadNext", "cursorless_initial_position",
        _head_next(peek=False),
        "a receive without cursor seeks from Head.Next, one position further than after-head",
    ),
    OutOfReading(
        "DMPR-3.1.7.1.13-END", "LookupPastEndTimesOut", "LOOKUP_WITHOUT_MESSAGE_STATUS",
        MQStatus.MQ_ERROR_IO_TIMEOUT,
        "a read by lookup identifier whose seek finds no message reports MQ_ERROR_IO_TIMEOUT (neither"
        " MQ_ERROR_MESSAGE_NOT_FOUND nor MQ_OK)",
    ),
    OutOfReading(
        "DMPR-3.1.7.3.3-CURRENT-RECEIVE", "CurrentReceiveTransactionUsage", "current_receive_unavailable",
        lambda qm, messagePos: (MQStatus.MQ_ERROR_TRANSACTION_USAGE, None),
        "SeekCurrent for a receive of a message that is not Available reports"
        " MQ_ERROR_TRANSACTION_USAGE (the peek's status for a Locked message; neither"
        " MQ_ERROR_MESSAGE_NOT_FOUND nor MQ_OK)",
    ),
    OutOfReading(
        "DMPR-3.1.7.1.15-HEAD", "PeekFromHeadNext", "cursorless_initial_position",
        _head_next(peek=True),
        "a peek without cursor seeks from Head.Next, one position further than after-head",
    ),
    OutOfReading(
        "DMPR-3.1.7.1.15-RELEASE", "PeekWithoutCursorCancelsNext", "peek_without_cursor_releases",
        _cancel_next_readers,
        "the readers after a satisfied peek without cursor end with MQ_ERROR_OPERATION_CANCELLED"
        " (neither released to the message nor blocked)",
    ),
    OutOfReading(
        "DMPR-3.1.7.3.1-FAILED-STATUS", "FailedWaitReturnsOK", "WAIT_FAILED_STATUS",
        MQStatus.MQ_OK,
        "a read whose wait fails at once reports MQ_OK (no error status at all)",
    ),
    OutOfReading(
        "DMPR-3.1.7.2.2-DESCRIPTOR-ORDER", "NoDescriptorVisited", "descriptor_visit_order",
        lambda qm, iQueue: [],
        "Message Position Available visits no descriptor: the message satisfies no waiting reader"
        " (no order gives that)",
    ),
    OutOfReading(
        "DMPR-3.1.7.1.5-SHARE-PEEK", "PeekPastDenyReceiveUnsupported", "PEEK_PAST_DENY_RECEIVE_STATUS",
        MQStatus.MQ_ERROR_UNSUPPORTED_ACCESS_MODE,
        "a peek open past a DenyReceive receiver reports MQ_ERROR_UNSUPPORTED_ACCESS_MODE (neither"
        " MQ_OK nor MQ_ERROR_SHARING_VIOLATION)",
    ),
    OutOfReading(
        "DMPR-3.2.7.2-WAIT-STATES", "WaitingPeekAlreadyReceived", "cursor_factory",
        _cursor_answering(
            "WaitingCursorPeekAlreadyReceived", "peek_while_waiting",
            lambda cursor, iQueue: (CursorStatus.AlreadyReceived, None),
        ),
        "Get Message For Peek on a WaitPeek or WaitReceive cursor reports AlreadyReceived, the cursor"
        " unchanged (neither no outcome, nor the Unread steps' Succeeded or Waiting, nor Waiting)",
    ),
    OutOfReading(
        "DMPR-3.2.7.4-WAIT-STATES", "WaitingDequeueNotFound", "cursor_factory",
        _cursor_answering(
            "WaitingCursorDequeueNotFound", "dequeue_while_waiting",
            lambda cursor, iQueue, iNoWait: (CursorStatus.NotFound, None),
        ),
        "Get Next Message For Dequeue on a WaitPeek or WaitReceive cursor reports NotFound even when"
        " iNoWait is False, the cursor unchanged (neither no outcome, nor the Unread steps, nor"
        " Waiting)",
    ),
]


def generate(rows: list[OutOfReading]) -> dict[str, type[QueueManager]]:
    """One QueueManager subclass per row: the hook replaced by the row's answer."""
    classes: dict[str, type[QueueManager]] = {}
    for row in rows:
        if not hasattr(QueueManager, row.hook):
            raise AttributeError(f"{row.name}: QueueManager has no hook {row.hook!r}")
        doc = (
            f"Out of every reading of {row.interpretation}: {row.says}.\n\n"
            f"Generated by examples.mutants.readings.generate (hook ``{row.hook}``); the corpus must"
            " fail it under the interpretation's frame."
        )
        attrs: dict[str, Any] = {"__doc__": doc, "__module__": __name__, "__qualname__": row.name, row.hook: row.answer}
        classes[row.name] = type(row.name, (QueueManager,), attrs)
    return classes


GENERATED = generate(TABLE)
globals().update(GENERATED)

#: (interpretation id, ``module:Class``) of each generated mutant, in the order of :data:`TABLE`.
MUTANTS: list[tuple[str, str]] = [(row.interpretation, f"{__name__}:{row.name}") for row in TABLE]
