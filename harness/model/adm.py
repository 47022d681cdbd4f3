"""ADM elements of [MS-MQDMPR] 3.1.1 other than the QueueManager, the Message and the MessagePosition.

Renders Queue (3.1.1.2), OutgoingQueue (3.1.1.3, as data for a later session layer: State incl.
Locked and OnHold, Multicast, DestinationFormatName, NextHops, ConnectionHistory and the
OutgoingMessageTable the MS-MQQB session keeps per outgoing queue), WaitingMessageReadOperation
(3.1.1.10), TransactionalOperation (3.1.1.13), Transaction (3.1.1.14),
OpenQueueDescriptor (3.1.1.16) and DispatchEntry (3.1.1.18). Attribute names keep the spec's
spelling; python-only helpers are snake_case.

Between ``messages.py`` (Message, MessagePosition, the MessagePositionList interface), which it
imports, and the Cursor (``cursor.py``, 3.2) and the QueueManager (``qm_core.py``), which import
it: a descriptor and a waiting read keep their cursor as :class:`DescriptorCursor`, and a Queue
keeps its owning QueueManager as a plain reference nothing here reads.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from harness.model.enums import (
    ConnectionStatus,
    MessageClass,
    MQStatus,
    OperationType,
    OutgoingQueueState,
    QueueAccessType,
    QueueShareMode,
    QueueType,
    RemoteReadState,
)
from harness.model.messages import GUID_NULL, Message, MessagePosition, MessagePositionList

__all__ = [
    "ConnectionHistoryEntry",
    "DescriptorCursor",
    "DispatchEntry",
    "OpenQueueDescriptor",
    "OutgoingQueue",
    "Queue",
    "ReadResult",
    "Transaction",
    "TransactionalOperation",
    "WaitingMessageReadOperation",
]


class DescriptorCursor(Protocol):
    """A Cursor (3.2.1.2, :class:`harness.model.cursor.Cursor`) as an OpenQueueDescriptor's
    CursorCollection and a WaitingMessageReadOperation's CursorReference hold it: what Close
    Cursor (3.1.7.1.2) reads of it."""

    @property
    def OpenQueueDescriptorReference(self) -> OpenQueueDescriptor | None: ...



class Queue:
    """Queue ADM element (3.1.1.2)."""

    def __init__(self, Pathname: str = "", **attrs: Any) -> None:
        # directory/persistent attributes (defaults: Set Queue Defaults, 3.1.7.1.33)
        self.Identifier: uuid.UUID = GUID_NULL
        self.Label = ""
        self.CreateTime = 0
        self.ModifyTime = 0
        self.Type: uuid.UUID = GUID_NULL
        self.Pathname = Pathname
        self.QualifiedPathname = ""
        self.PrivateQueueNumber = 0
        self.Journaling = False
        self.Quota = 0xFFFFFFFF
        self.JournalQuota = 0xFFFFFFFF
        self.Authentication = False
        self.PrivacyLevel = "Optional"
        self.Transactional = False
        self.MulticastAddress: str | None = None
        self.Security: Any = None
        self.BasePriority = 0
        self.FullPath = ""
        self.DirectoryPath = ""
        self.Scope = "Enterprise"
        # non-directory attributes
        self.TotalBytes = 0
        self.QueueManager: object | None = None  # the owning QueueManager (qm_core.py)
        self.QueueType = QueueType.Private
        self.JournalQueueReference: Queue | None = None
        self.SubqueueCollection: list[Queue] = []
        self.IncomingTransactionalTransferInfoCollection: list[Any] = []
        self.MessagePositionList: MessagePositionList = None  # type: ignore[assignment]
        self.OpenQueueDescriptorCollection: list[OpenQueueDescriptor] = []
        for name, value in attrs.items():
            if not hasattr(self, name):
                raise AttributeError(f"Queue has no ADM attribute {name!r} (3.1.1.2)")
            setattr(self, name, value)

    @property
    def Active(self) -> bool:
        """Active (3.1.1.2), computed: an outgoing queue with messages, or open descriptors."""
        return bool(self.OpenQueueDescriptorCollection)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.Pathname!r}>"


@dataclass
class ConnectionHistoryEntry:
    """One element of OutgoingQueue.ConnectionHistory (3.1.1.3)."""

    Status: ConnectionStatus
    ConnectionHistoryTime: int
    Error: int = 0
    AddressList: list[str] = field(default_factory=list)


class OutgoingQueue(Queue):
    """OutgoingQueue ADM element (3.1.1.3), data only: the MS-MQQB session layer drives it."""

    def __init__(self, Pathname: str = "", **attrs: Any) -> None:
        self.DestinationFormatName = ""
        self.NextHops: list[str] | None = None
        self.Multicast = False
        self.OutgoingTransferInfoReference: Any = None
        self.State = OutgoingQueueState.Inactive
        self.ConnectionHistory: list[ConnectionHistoryEntry] = []
        #: python-only: per-position transfer state kept by MS-MQQB (OutgoingMessagePosition)
        self.OutgoingMessageTable: dict[int, Any] = {}
        super().__init__(Pathname, **attrs)

    @property
    def Active(self) -> bool:
        """Active (3.1.1.2): True when a message awaits transfer or a descriptor is open."""
        return len(self.MessagePositionList) > 0 or bool(self.OpenQueueDescriptorCollection)


class TransactionalOperation:
    """TransactionalOperation ADM element (3.1.1.13)."""

    __slots__ = ("DequeueReason", "MessagePositionReference", "OperationType", "TargetQueueReference")

    def __init__(
        self,
        OperationType: OperationType,
        MessagePositionReference: MessagePosition,
        TargetQueueReference: Queue | None = None,
        DequeueReason: MessageClass | None = None,
    ) -> None:
        self.OperationType = OperationType
        self.MessagePositionReference = MessagePositionReference
        self.TargetQueueReference = TargetQueueReference
        self.DequeueReason = DequeueReason

    def __repr__(self) -> str:
        return f"<TransactionalOperation {self.OperationType.value} {self.MessagePositionReference}>"


class Transaction:
    """Transaction ADM element (3.1.1.14)."""

    __slots__ = ("Identifier", "SinglePhase", "TransactionalOperationCollection")

    def __init__(self, Identifier: Any, SinglePhase: bool = True) -> None:
        self.Identifier = Identifier
        self.TransactionalOperationCollection: list[TransactionalOperation] = []
        self.SinglePhase = SinglePhase

    def __repr__(self) -> str:
        return f"<Transaction {self.Identifier}>"


class ReadResult(NamedTuple):
    """Outcome of a read event (3.1.7.1.10-15): rStatus and rMessage.

    ``pending`` is set (and ``rStatus`` is None) when the event is blocked in Wait For New
    Message (3.1.7.3.1); the final result then appears in ``pending.result``.
    """

    rStatus: MQStatus | None
    rMessage: Message | None = None
    pending: WaitingMessageReadOperation | None = None


class WaitingMessageReadOperation:
    """WaitingMessageReadOperation ADM element (3.1.1.10), plus the blocked event's continuation.

    Python-only attributes: ``timeout`` and ``deadline`` (the Waiting Message Read Timer,
    3.1.2.3), ``result`` (the blocked event's final ReadResult once resolved) and
    ``queue_descriptor`` (the OpenQueueDescriptor whose collection holds it).
    """

    __slots__ = (
        "CursorReference",
        "DestructiveRead",
        "Tag",
        "_resume",
        "deadline",
        "queue_descriptor",
        "result",
        "timeout",
    )

    def __init__(
        self,
        DestructiveRead: bool,
        Tag: Any = None,
        CursorReference: DescriptorCursor | None = None,
    ) -> None:
        self.DestructiveRead = DestructiveRead
        self.Tag = Tag
        self.CursorReference = CursorReference
        self.timeout: float = 0.0
        self.deadline: float = 0.0
        self.result: ReadResult | None = None
        self.queue_descriptor: OpenQueueDescriptor | None = None
        self._resume: Callable[[MQStatus, MessagePosition | None], ReadResult] | None = None

    @property
    def done(self) -> bool:
        return self.result is not None

    def __repr__(self) -> str:
        return f"<WaitingMessageReadOperation destructive={self.DestructiveRead} tag={self.Tag}>"


class OpenQueueDescriptor:
    """OpenQueueDescriptor ADM element (3.1.1.16)."""

    def __init__(
        self,
        Handle: int,
        ContextValue: int,
        AccessType: QueueAccessType,
        ShareMode: QueueShareMode,
        QueueReference: Queue | None,
        FormatName: str,
        Multiple: bool = False,
    ) -> None:
        self.Handle = Handle
        self.ContextValue = ContextValue
        self.AccessType = AccessType
        self.ShareMode = ShareMode
        self.QueueReference = QueueReference
        self.FormatName = FormatName
        self.Multiple = Multiple
        self.OpenQueueDescriptorCollection: list[OpenQueueDescriptor] = []
        self.RemoteReadState = RemoteReadState.NoneState
        self.CursorCollection: list[DescriptorCursor] = []
        self.WaitingMessageReadOperationCollection: list[WaitingMessageReadOperation] = []

    def __repr__(self) -> str:
        return f"<OpenQueueDescriptor {self.Handle} {self.FormatName!r}>"


@dataclass
class DispatchEntry:
    """DispatchEntry ADM element (3.1.1.18)."""

    MessagePositionReference: MessagePosition
    ProtocolData: Any
    Priority: int
    SendInProgress: bool = False
