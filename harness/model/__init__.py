"""harness.model: the [MS-MQDMPR] reference queue manager (sans-IO, deterministic).

Renders the abstract data model of MS-MQDMPR 3.1.1 (QueueManager, Queue and its
MessagePositionList, OutgoingQueue, WaitingMessageReadOperation, MessagePosition, Message,
TransactionalOperation, Transaction, OpenQueueDescriptor, Enumerations, DispatchEntry) and
3.2 (Cursor), with one method per event of 3.1.4, 3.1.6.3, 3.1.7.1-3.1.7.3 and 3.2.7. Clock and
identifiers are injected; nothing here does I/O. ``harness.model.literal`` holds the literal
oracle used by the tests and the benchmark.

Layer rules (the import-linter contracts of pyproject.toml):

- Rule 1: the model imports ``packets`` (format names, [MS-MQMQ] 2.1) and nothing else of the
  harness: no session, no edge.
- Rule 2: sans-IO: the clock and the identifiers are injected; a wait is an object the caller
  resolves.
- Rule 3: the QueueManager's event families build one on another (``qm_core`` < ``qm_positions``
  < ``qm_timers`` < ``qm_transactions`` < ``qm_reads`` < ``qm_queues`` < ``qm_outgoing``, composed
  in ``queue_manager``); a Cursor sees its queue manager only through ``cursor.CursorHost``.
- Rule 4: the ADM modules import one way, no cycle: ``messages`` (Message, MessagePosition, the
  MessagePositionList interface) < ``positions`` (the indexed list) and ``adm`` (Queue, the
  descriptors, transactions) < ``cursor`` < ``qm_core``.  A lower element keeps a reference to a
  higher one through a Protocol (``messages.PositionQueue``, ``adm.DescriptorCursor``).
"""

from harness.model.adm import (
    ConnectionHistoryEntry,
    DispatchEntry,
    OpenQueueDescriptor,
    OutgoingQueue,
    Queue,
    ReadResult,
    Transaction,
    TransactionalOperation,
    WaitingMessageReadOperation,
)
from harness.model.cursor import Cursor, CursorHost
from harness.model.enums import (
    INFINITE,
    CursorState,
    CursorStatus,
    DeliveryGuarantee,
    EnqueueStatus,
    MessageClass,
    MessagePositionState,
    MessageSeekAction,
    MQStatus,
    OperationType,
    OutgoingQueueState,
    QueueAccessType,
    QueueShareMode,
    QueueType,
    SeekDirection,
)
from harness.model.errors import ModelError, UndefinedBehaviour
from harness.model.messages import Message, MessagePosition, MessagePositionList
from harness.model.positions import IndexedMessagePositionList
from harness.model.queue_manager import QueueManager

__all__ = [
    "INFINITE",
    "ConnectionHistoryEntry",
    "Cursor",
    "CursorHost",
    "CursorState",
    "CursorStatus",
    "DeliveryGuarantee",
    "DispatchEntry",
    "EnqueueStatus",
    "IndexedMessagePositionList",
    "MQStatus",
    "Message",
    "MessageClass",
    "MessagePosition",
    "MessagePositionList",
    "MessagePositionState",
    "MessageSeekAction",
    "ModelError",
    "OpenQueueDescriptor",
    "OperationType",
    "OutgoingQueue",
    "OutgoingQueueState",
    "Queue",
    "QueueAccessType",
    "QueueManager",
    "QueueShareMode",
    "QueueType",
    "ReadResult",
    "SeekDirection",
    "Transaction",
    "TransactionalOperation",
    "UndefinedBehaviour",
    "WaitingMessageReadOperation",
]
