"""The QueueManager ADM element of [MS-MQDMPR] 3.1.1.1, and the readings the model takes.

The base of the queue manager (harness.model.queue_manager): the attributes of 3.1.1.1 the
processing rules use, the Python-only configuration (injected clock and identifiers, the
MessagePositionList and Cursor factories, the subscriber lists), the handles of 3.1.1.16 and 3.2,
creating a MessagePosition by the insertion rules of 3.1.1.2, and every reading the model takes
where the spec is silent or contradicts itself (an ``interpretation`` requirement of
cases/requirements.yaml), each one overridable hook named after what it decides.

The event families build on this base, each on the ones before it: message positions
(harness.model.qm_positions: 3.1.7.2.1-3.1.7.2.2, 3.1.7.3.2-3.1.7.3.3, 3.1.7.3.6), timers
(harness.model.qm_timers: 3.1.2.3-3.1.2.4, 3.1.6.3, 3.1.7.2.7, 3.1.7.3.1, 3.1.7.3.4-3.1.7.3.5,
3.1.7.3.7), transactions (harness.model.qm_transactions), reads and cursors
(harness.model.qm_reads), queues and open/close (harness.model.qm_queues), outgoing queues and
dispatch (harness.model.qm_outgoing).  Sans-IO: nothing here reads a clock or does I/O.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from typing import Any

from harness.model.adm import (
    DispatchEntry,
    OpenQueueDescriptor,
    Queue,
    ReadResult,
    Transaction,
    WaitingMessageReadOperation,
)
from harness.model.cursor import Cursor, CursorHost
from harness.model.enums import MessageClass, MessagePositionState, MQStatus, QueueManagerState
from harness.model.messages import Message, MessagePosition, MessagePositionList
from harness.model.positions import IndexedMessagePositionList

__all__ = ["PositionSubscriber", "QueueManagerCore", "Resume"]

_Deleted = MessagePositionState.Deleted

Resume = Callable[[MQStatus, MessagePosition | None], ReadResult]
PositionSubscriber = Callable[[Queue, MessagePosition], None]


def _counter_ids() -> Callable[[], uuid.UUID]:
    counter = itertools.count(1)
    return lambda: uuid.UUID(int=next(counter))


class QueueManagerCore:
    """The QueueManager ADM element (3.1.1.1): its attributes, handles and readings."""

    position_list_factory: Callable[[Queue | None], MessagePositionList] = (
        IndexedMessagePositionList
    )
    cursor_factory: Callable[[CursorHost], Cursor] = Cursor
    #: The MQ status of a read whose Wait For New Message is Failed (iTimeout <= 0, 3.1.7.3.1):
    #: interpretation DMPR-3.1.7.3.1-FAILED-STATUS, reading io-timeout.
    WAIT_FAILED_STATUS = MQStatus.MQ_ERROR_IO_TIMEOUT
    #: rStatus of Read Message By Lookup Identifier (3.1.7.1.13) when its seek returned End or
    #: Start with MQ_OK (no message): interpretation DMPR-3.1.7.1.13-END, reading not-found (MQ_OK
    #: gives ok-without-message: rMessage is None).
    LOOKUP_WITHOUT_MESSAGE_STATUS = MQStatus.MQ_ERROR_MESSAGE_NOT_FOUND
    #: rStatus of Open Queue (3.1.7.1.5) for a PeekAccess or PeekAdminAccess open with DenyNone
    #: while a descriptor holds the queue with ReceiveAccess and DenyReceive: interpretation
    #: DMPR-3.1.7.1.5-SHARE-PEEK, reading steps-allow-peek (MQ_OK: the open goes on).
    PEEK_PAST_DENY_RECEIVE_STATUS = MQStatus.MQ_OK

    def __init__(
        self,
        clock: Callable[[], float] | None = None,
        id_generator: Callable[[], uuid.UUID] | None = None,
        *,
        ComputerName: str = "LOCALHOST",
        QualifiedComputerName: str = "",
        QueueManagerQuota: int = 0x00100000,
        HardenedSecurity: bool = False,
    ) -> None:
        self.clock: Callable[[], float] = clock if clock is not None else (lambda: 0.0)
        self.id_generator = id_generator if id_generator is not None else _counter_ids()
        # --- 3.1.1.1 attributes used by the processing rules ---
        self.Identifier: uuid.UUID = self.id_generator()
        self.ComputerName = ComputerName
        self.QualifiedComputerName = QualifiedComputerName or ComputerName
        self.QueueManagerQuota = QueueManagerQuota
        self.JournalQuota = 0xFFFFFFFF
        self.DirectoryIntegrated = False
        self.DirectoryOffline = False
        self.Throttled = False
        self.ConnectionActive = True
        self.HardenedSecurity = HardenedSecurity
        self.QueueManagerState = QueueManagerState.Ready
        self.SystemDeadletterQueue: Queue | None = None
        self.SystemTransactionalDeadletterQueue: Queue | None = None
        self.SystemJournalQueue: Queue | None = None
        self.QueueCollection: list[Queue] = []
        self.TransactionCollection: dict[Any, Transaction] = {}
        self.SequentialID = 0
        self.DispatchCollection: list[DispatchEntry] = []
        # --- python-only ---
        self.message_position_available_subscribers: list[PositionSubscriber] = []
        self.message_position_deleted_subscribers: list[
            Callable[[Queue, MessagePosition, MessageClass], None]
        ] = []
        self.send_user_message_subscribers: list[Callable[[Any, MessagePosition], None]] = []
        self._handles = itertools.count(1)
        self._total_bytes = 0
        self._timer_seq = itertools.count()
        self._wait_timers: list[tuple[float, int, WaitingMessageReadOperation]] = []
        self._ttbr_timers: list[tuple[float, int, Message]] = []

    # ------------------------------------------------------------------ python-only helpers
    def new_handle(self) -> int:
        """A value unique across descriptors and cursors of this queue manager (3.1.1.16, 3.2)."""
        return next(self._handles)

    def new_queue(self, cls: type[Queue] = Queue, Pathname: str = "", **attrs: Any) -> Queue:
        """Python-only: an unattached Queue with its MessagePositionList (for Create Queue)."""
        q = cls(Pathname, **attrs)
        q.MessagePositionList = self.position_list_factory(q)
        q.QueueManager = self
        return q

    def _create_position(self, iQueue: Queue, iMessage: Message) -> MessagePosition:
        """Create a MessagePosition for iMessage and insert it by the rules of 3.1.1.2."""
        plist = iQueue.MessagePositionList
        newMessagePos = MessagePosition(iMessage, iQueue, plist)
        iMessage.MessagePositionReference = newMessagePos
        plist.insert(newMessagePos)
        return newMessagePos

    # ------------------------------------------------------------------ readings (hooks)
    def message_storage_size(self, message: Message) -> int:
        """Bytes a message consumes for TotalBytes and quotas (3.1.7.2.1-2): body + extension.

        3.1.7.2.1 counts "the headers and body", whose stored size is the implementation's own:
        interpretation DMPR-3.1.7.2.1-STORAGE, reading body-and-extension.
        """
        return len(message.Body) + len(message.Extension)

    def storage_added_when_available(self, iQueue: Queue, iPosition: MessagePosition) -> int:
        """Bytes Message Position Available (3.1.7.2.2) adds to iQueue.TotalBytes.

        Interpretation DMPR-3.1.7.2.2-TOTALBYTES: the model takes adds-again (the message's
        storage, each time, also for a Locked position that becomes Available again and was
        never decremented); counted-once adds nothing for a message already counted.
        """
        message = iPosition.MessageReference
        return self.message_storage_size(message) if message is not None else 0

    def cursorless_initial_position(self, iQueue: Queue, iPeekOperation: bool = False) -> MessagePosition:
        """Initial position of a seek for a read without a cursor (3.1.7.1.10, 3.1.7.1.15).

        The spec passes MessagePositionList.Head, but Seek Available Message Position starts
        at iInitialPosition.Next, which would skip the first message; the model passes Start,
        which makes the walk begin at Head. Override to render the literal reading.
        Interpretations DMPR-3.1.7.1.10-HEAD (receive, ``iPeekOperation`` False) and
        DMPR-3.1.7.1.15-HEAD (peek, True): the model takes the reading from-head; the literal one
        (after-head) passes the Head.
        """
        return iQueue.MessagePositionList.Start

    def forward_seek_from_end(self, iQueue: Queue, iPeekOperation: bool) -> MessagePosition:
        """What a forward Seek Available Message Position (3.1.7.3.2) from End returns: the walk
        starts at End.Next, which no section defines.

        Interpretation DMPR-3.1.1.2-END-NEXT: the model takes end-is-end (End.Next is End: End);
        end-next-is-head walks the list from its Head again.
        """
        return iQueue.MessagePositionList.End

    def backward_seek_from_start(self, iQueue: Queue, iPeekOperation: bool) -> MessagePosition:
        """What a backward Seek Available Message Position (3.1.7.3.2) from Start returns: the
        walk starts at Start.Previous, which no section defines.

        Interpretation DMPR-3.1.1.2-START-PREVIOUS: the model takes start-is-start
        (Start.Previous is Start: the walk finds nothing, :meth:`backward_seek_miss`);
        start-previous-is-tail walks the list from its Tail.
        """
        return self.backward_seek_miss(iQueue)

    def backward_seek_miss(self, iQueue: Queue) -> MessagePosition:
        """What a backward Seek Available Message Position (3.1.7.3.2) that finds no Available
        position returns.

        Interpretation DMPR-3.1.7.3.2-BWD-START: the model takes returns-start (the walk stops on
        Start, and its last step returns it); returns-end returns End, as the Return Value says.
        """
        return iQueue.MessagePositionList.Start

    def removed_position_origin(self, iQueue: Queue, iPosition: MessagePosition) -> MessagePosition:
        """Where a seek (3.1.7.3.2) from a position that has left iQueue.MessagePositionList starts
        (a cursor keeps referencing the position of the message it received, 3.2.7.4).

        Interpretation DMPR-3.1.1.11-REMOVED-NEXT: the model takes keeps-place (the position
        itself, whose Next is the first position still in the list that followed it);
        restarts-at-start seeks as from Start.
        """
        return iPosition

    def current_receive_unavailable(self, messagePos: MessagePosition) -> tuple[MQStatus, MessagePosition | None]:
        """(rStatus, rMessagePosition) of Seek Available Message Position With Id (3.1.7.3.3)
        with SeekCurrent for a receive (iPeekOperation False) whose position is not Available.

        Interpretation DMPR-3.1.7.3.3-CURRENT-RECEIVE: the model takes not-found-or-received (the
        Deleted and otherwise branches apply to a receive too: Deleted gives
        MQ_ERROR_MESSAGE_ALREADY_RECEIVED, any other state MQ_ERROR_MESSAGE_NOT_FOUND);
        ok-without-position leaves rStatus MQ_OK and rMessagePosition unset.
        """
        if messagePos.State is _Deleted:
            return (MQStatus.MQ_ERROR_MESSAGE_ALREADY_RECEIVED, None)
        return (MQStatus.MQ_ERROR_MESSAGE_NOT_FOUND, None)

    def peek_without_cursor_releases(self, iQueue: Queue, iReader: WaitingMessageReadOperation) -> bool:
        """Whether a waiting peek without cursor, once Message Position Available (3.1.7.2.2) has
        satisfied it, lets the processing go on to the next waiting reader (a peek with a cursor
        generates Release Next Reader, 3.1.7.3.7; 3.1.7.1.15 generates none without one).

        Interpretation DMPR-3.1.7.1.15-RELEASE: the model takes released (True); blocked is False.
        """
        return True

    def descriptor_visit_order(self, iQueue: Queue) -> list[OpenQueueDescriptor]:
        """The order in which Message Position Available (3.1.7.2.2) visits the descriptors of
        iQueue.OpenQueueDescriptorCollection ("A collection", 3.1.1.2: no order).

        Interpretation DMPR-3.1.7.2.2-DESCRIPTOR-ORDER: the model takes open-order (the order the
        descriptors were opened); any-order lets the implementation choose.
        """
        return list(iQueue.OpenQueueDescriptorCollection)
