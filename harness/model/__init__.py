"""harness.model: the [MS-MQDMPR] reference queue manager (sans-IO, deterministic).

Renders the abstract data model of MS-MQDMPR 3.1.1 (QueueManager, Queue and its
MessagePositionList, OutgoingQueue, WaitingMessageReadOperation, MessagePosition, Message,
TransactionalOperation, Transaction, OpenQueueDescriptor, Enumerations, DispatchEntry) and
3.2 (Cursor), with one method per event of 3.1.4, 3.1.6.3, 3.1.7.1-3.1.7.3 and 3.2.7. Clock and
identifiers are injected; nothing here does I/O. ``harness.model.literal`` holds the literal
oracle used by the tests and the benchmark.
"""

from harness.model.adm import (
    ConnectionHistoryEntry,
    DispatchEntry,
    Message,
    OpenQueueDescriptor,
    OutgoingQueue,
    Queue,
    ReadResult,
    Transaction,
    TransactionalOperation,
    WaitingMessageReadOperation,
)
from harness.model.cursor import Cursor
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
from harness.model.positions import (
    IndexedMessagePositionList,
    MessagePosition,
    MessagePositionList,
)
from harness.model.queue_manager import QueueManager

__all__ = [
    "INFINITE",
    "ConnectionHistoryEntry",
    "Cursor",
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
