"""Message, MessagePosition and the MessagePositionList of [MS-MQDMPR] 3.1.1.12, 3.1.1.11 and 3.1.1.2.

Renders the Message ADM element (3.1.1.12), the MessagePosition ADM element (3.1.1.11: State,
MessageReference, Next, Previous, QueueReference) and the interface of the Queue.MessagePositionList
attribute (3.1.1.2: ascending order by arrival time within priority, the special Head, Tail,
Start and End locations), whose two implementations are ``IndexedMessagePositionList`` in
``positions.py`` and ``LinkedMessagePositionList`` in ``literal.py``.

A Message and its MessagePosition reference each other, so they live here together; the lowest
of the ADM modules, this one imports no other.  The Queue a position is in (3.1.1.2,
``harness.model.adm``, which holds the lists and the descriptors above this module) is kept as
:class:`PositionQueue`: a position only carries the reference; the queue manager, which knows it
holds a Queue, narrows it where it reads the queue's attributes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any, Protocol

from harness.model.enums import DeliveryGuarantee, MessageClass, MessagePositionState

__all__ = ["GUID_NULL", "RANKS", "Message", "MessagePosition", "MessagePositionList", "PositionQueue", "priority_rank"]

GUID_NULL = uuid.UUID(int=0)

#: number of priority ranks (Message.Priority 0..7, 3.1.1.12)
RANKS = 8


class PositionQueue(Protocol):
    """The Queue (3.1.1.2, :class:`harness.model.adm.Queue`) a MessagePosition references, as this
    module sees it: only the reference, nothing read."""


class Message:
    """Message ADM element (3.1.1.12).

    The attributes every queue operation touches live in ``__slots__``; the many attributes the
    queue manager only carries (journaling, security, SOAP, ...) are class-level defaults that an
    instance overrides lazily (the per-instance ``__dict__`` is only created when one is set),
    which keeps a million queued messages well under 1 GiB.
    """

    __slots__ = (
        "AllowPeekWhenLocked",
        "ArrivalTime",
        "Body",
        "Class",
        "DeliveryGuarantee",
        "Extension",
        "Identifier",
        "Label",
        "LookupIdentifier",
        "MessagePositionReference",
        "Priority",
        "SentTime",
        "TimeToBeReceived",
        "TransactionIdentifier",
        "TransactionalMessageSequenceIdentifier",
        "__dict__",
    )

    # Cold attributes (3.1.1.12), with the spec's defaults.
    ApplicationDeadletterQueue: str = ""
    PrivacyLevel: str = "None"
    AuthenticationLevel: str = "None"
    TracingRequested: bool = False
    TracingQueueIdentifier: uuid.UUID = GUID_NULL
    PositiveJournalingRequested: bool = False
    NegativeJournalingRequested: bool = False
    ResponseQueueFormatName: str = ""
    ResponseMultiQueueFormatName: tuple[str, ...] = ()
    DestinationQueueFormatName: str = ""
    DestinationMultiQueueFormatName: tuple[str, ...] | str = ()
    AdministrationQueueFormatName: str = ""
    AdministrationMultiQueueFormatName: tuple[str, ...] = ()
    MultipleDestinationSignature: bytes = b""
    ApplicationTag: int = 0
    SourceMachineIdentifier: uuid.UUID = GUID_NULL
    BodyType: int = 0
    CorrelationIdentifier: tuple[uuid.UUID, int] = (GUID_NULL, 0)
    AcknowledgementsRequested: tuple[str, ...] = ()
    TimeToReachQueue: int = 0x54600
    HashAlgorithm: str = "SHA1"
    EncryptionAlgorithm: str = "RC4"
    DestinationQueueManagerIdentifier: uuid.UUID = GUID_NULL
    DestinationQueueType: str = "PrivateQueue"
    AdministrationQueueType: str = "None"
    ResponseQueueType: str = "None"
    SenderIdentifier: bytes = b""
    SenderCertificate: bytes = b""
    SenderIdentifierType: str = "Sid"
    ConnectorTypeIdentifier: uuid.UUID = GUID_NULL
    ConnectorQueueManagerIdentifier: uuid.UUID = GUID_NULL
    TransactionStatusQueueFormatName: str = ""
    SymmetricKey: bytes = b""
    Signature: bytes = b""
    AuthenticationProviderType: int = 0
    AuthenticationProviderName: str = ""
    TransactionSequenceNumber: int = 0
    TransactionPreviousSequenceNumber: int = 0
    FinalAckRequired: bool = False
    FirstInTransaction: bool = False
    LastInTransaction: bool = False
    SoapEnvelope: str = ""
    SoapCompoundMessage: str = ""
    SoapBody: str = ""
    SoapHeader: str = ""

    def __init__(
        self,
        Body: bytes = b"",
        *,
        Priority: int = 3,
        AllowPeekWhenLocked: bool = False,
        DeliveryGuarantee: DeliveryGuarantee = DeliveryGuarantee.Express,
        Identifier: Any = None,
        Label: str = "",
        Class: MessageClass = MessageClass.Normal,
        TimeToBeReceived: int = 0xFFFFFFFF,
        SentTime: float = 0.0,
        Extension: bytes = b"",
        TransactionIdentifier: Any = None,
        TransactionalMessageSequenceIdentifier: Any = None,
        **cold: Any,
    ) -> None:
        self.Body = Body
        self.Priority = Priority
        self.AllowPeekWhenLocked = AllowPeekWhenLocked
        self.DeliveryGuarantee = DeliveryGuarantee
        self.Identifier = Identifier
        self.Label = Label
        self.Class = Class
        self.TimeToBeReceived = TimeToBeReceived
        self.SentTime = SentTime
        self.Extension = Extension
        self.TransactionIdentifier = TransactionIdentifier
        self.TransactionalMessageSequenceIdentifier = TransactionalMessageSequenceIdentifier
        self.LookupIdentifier = 0
        self.ArrivalTime = 0.0
        self.MessagePositionReference: MessagePosition | None = None
        for name, value in cold.items():
            if not hasattr(type(self), name):
                raise AttributeError(f"Message has no ADM attribute {name!r} (3.1.1.12)")
            setattr(self, name, value)

    def copy(self) -> Message:
        """Python-only: a copy (Enqueue Message To An Open Queue, 3.1.7.1.27)."""
        new = Message.__new__(Message)
        for name in Message.__slots__:
            if name != "__dict__":
                setattr(new, name, getattr(self, name))
        new.__dict__.update(self.__dict__)
        new.MessagePositionReference = None
        return new

    @property
    def is_persistent(self) -> bool:
        """All attributes are Persistent when DeliveryGuarantee is Recoverable (3.1.1.12)."""
        return self.DeliveryGuarantee is DeliveryGuarantee.Recoverable

    def __repr__(self) -> str:
        return f"<Message {self.LookupIdentifier:#x} p={self.Priority} {self.Body[:16]!r}>"


class MessagePosition:
    """MessagePosition ADM element (3.1.1.11).

    ``State`` is a property so that the list's indices follow every state change the events
    make; ``Next`` and ``Previous`` are computed by the owning list.
    """

    __slots__ = (
        "MessageReference", "QueueReference", "_idx", "_in_list", "_list", "_lnext", "_lprev", "_rank",
        "_special", "_state",
    )

    def __init__(
        self,
        message: Message | None,
        queue: PositionQueue | None,
        position_list: MessagePositionList,
        special: str = "",
    ) -> None:
        self.MessageReference = message
        self.QueueReference = queue
        self._state: MessagePositionState | None = None
        self._list = position_list
        self._in_list = False
        self._special = special
        self._rank = -1 if special == "Start" else RANKS if special == "End" else 0
        self._idx = 0
        self._lnext: MessagePosition | None = None
        self._lprev: MessagePosition | None = None

    @property
    def State(self) -> MessagePositionState | None:
        """State (3.1.1.11); None only for the special Start and End entries."""
        return self._state

    @State.setter
    def State(self, value: MessagePositionState | None) -> None:
        old = self._state
        if old is value:
            return
        self._state = value
        if self._in_list:
            self._list._state_changed(self, old, value)

    @property
    def Next(self) -> MessagePosition:
        """Next (3.1.1.11): the next position in the list, or End (End.Next is End:
        DMPR-3.1.1.2-END-NEXT, reading end-is-end)."""
        return self._list.next_of(self)

    @property
    def Previous(self) -> MessagePosition:
        """Previous (3.1.1.11): the previous position in the list, or Start (3.1.1.11 says the
        "reserved Head entry": DMPR-3.1.7.3.2-BWD-START, reading returns-start)."""
        return self._list.previous_of(self)

    @property
    def in_list(self) -> bool:
        """Python-only: whether the position is currently linked in its MessagePositionList."""
        return self._in_list

    @property
    def is_special(self) -> bool:
        """Python-only: whether this is the reserved Start or End entry."""
        return bool(self._special)

    def order_key(self) -> tuple[int, int]:
        """Python-only: (priority rank, arrival sequence) — the list order of 3.1.1.2."""
        return (self._rank, self._idx)

    def __repr__(self) -> str:
        if self._special:
            return f"<{self._special}>"
        m = self.MessageReference
        lid = m.LookupIdentifier if m is not None else None
        state = self._state.value if self._state is not None else None
        return f"<MessagePosition {lid:#x} {state}>" if lid is not None else f"<MP {state}>"


def priority_rank(message: Message) -> int:
    """Rank of a message in the list order: higher Priority first (3.1.1.2, 3.1.1.12)."""
    return 7 - min(max(message.Priority, 0), 7)


class MessagePositionList:
    """Queue.MessagePositionList (3.1.1.2): interface shared by the indexed and literal lists."""

    Start: MessagePosition
    End: MessagePosition

    def __init__(self, queue: PositionQueue | None) -> None:
        self.Start = MessagePosition(None, queue, self, "Start")
        self.End = MessagePosition(None, queue, self, "End")

    # --- 3.1.1.2 special locations -------------------------------------------------------
    @property
    def Head(self) -> MessagePosition:
        raise NotImplementedError

    @property
    def Tail(self) -> MessagePosition:
        raise NotImplementedError

    # --- structure ------------------------------------------------------------------------
    def insert(self, position: MessagePosition) -> None:
        """Insert by the rules of 3.1.1.2: ascending arrival within priority."""
        raise NotImplementedError

    def remove(self, position: MessagePosition) -> None:
        raise NotImplementedError

    def next_of(self, position: MessagePosition) -> MessagePosition:
        raise NotImplementedError

    def previous_of(self, position: MessagePosition) -> MessagePosition:
        raise NotImplementedError

    def _state_changed(
        self,
        position: MessagePosition,
        old: MessagePositionState | None,
        new: MessagePositionState | None,
    ) -> None:
        """Hook called by MessagePosition.State's setter for positions in the list."""

    def find_by_lookup_identifier(self, lookup_id: int) -> MessagePosition | None:
        raise NotImplementedError

    def __iter__(self) -> Iterator[MessagePosition]:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError
