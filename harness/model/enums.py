"""Enumerations and status codes of the [MS-MQDMPR] abstract data model.

Renders section 3.1.1.17 (DirectoryOperationResult, MessageSeekAction, QueueAccessType,
QueueShareMode), the enumerated ADM attributes of 3.1.1.2 (QueueType), 3.1.1.3 (OutgoingQueue
State, ConnectionHistory Status), 3.1.1.11 (MessagePosition State), 3.1.1.12 (Class,
DeliveryGuarantee), 3.1.1.13 (OperationType), 3.1.1.16 (RemoteReadState) and 3.2.1.2
(CursorState), the cursor-event outcomes of 3.2.7.2-3.2.7.4, the seek direction of 3.1.7.3.2,
and the MQ_ERROR status codes that the events of 3.1.4 and 3.1.7 return.
"""

from __future__ import annotations

from enum import Enum, IntEnum


class MQStatus(IntEnum):
    """Status codes named by the events of [MS-MQDMPR] 3.1.4 and 3.1.7."""

    MQ_OK = 0x00000000
    MQ_ERROR_QUEUE_NOT_FOUND = 0xC00E0003
    MQ_ERROR_OPERATION_CANCELLED = 0xC00E0008
    MQ_ERROR_SHARING_VIOLATION = 0xC00E0009
    MQ_ERROR_IO_TIMEOUT = 0xC00E001B
    MQ_ERROR_ILLEGAL_CURSOR_ACTION = 0xC00E001C
    MQ_ERROR_MESSAGE_ALREADY_RECEIVED = 0xC00E001D
    MQ_ERROR_ILLEGAL_FORMATNAME = 0xC00E001E
    MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION = 0xC00E0020
    MQ_ERROR_UNSUPPORTED_ACCESS_MODE = 0xC00E0045
    MQ_ERROR_QUEUE_NOT_AVAILABLE = 0xC00E004B
    MQ_ERROR_TRANSACTION_USAGE = 0xC00E0050
    MQ_ERROR_TRANSACTION_SEQUENCE = 0xC00E0051
    MQ_ERROR_MESSAGE_NOT_FOUND = 0xC00E0088
    STATUS_NOT_FOUND = 0xC0000225


class EnqueueStatus(IntEnum):
    """rStatus of Enqueue Message (3.1.7.1.9) and Enqueue Message To An Open Queue (3.1.7.1.27)."""

    NoError = 0
    QueueQuotaExceeded = 1
    QueueManagerQuotaExceeded = 2
    TimedOutInTransit = 3


class MessagePositionState(Enum):
    """MessagePosition.State (3.1.1.11)."""

    Available = "Available"
    Locked = "Locked"
    Deleted = "Deleted"
    PurgePending = "PurgePending"


class CursorState(Enum):
    """Cursor.CursorState (3.2.1.2)."""

    Unread = "Unread"
    Read = "Read"
    WaitPeek = "WaitPeek"
    WaitReceive = "WaitReceive"


class CursorStatus(Enum):
    """rStatus values of the cursor events 3.2.7.2, 3.2.7.3 and 3.2.7.4."""

    Succeeded = "Succeeded"
    NotFound = "NotFound"
    AlreadyReceived = "AlreadyReceived"
    Waiting = "Waiting"
    IllegalCursorAction = "IllegalCursorAction"


class SeekDirection(Enum):
    """iSeekDirection of Seek Available Message Position (3.1.7.3.2)."""

    Forward = "Forward"
    Backward = "Backward"


class WaitStatus(Enum):
    """rStatus of Wait For New Message (3.1.7.3.1) when it does not come from a timer stop."""

    Success = "Success"
    Failed = "Failed"


class MessageSeekAction(Enum):
    """MessageSeekAction (3.1.1.17)."""

    SeekFirst = "SeekFirst"
    SeekPrevious = "SeekPrevious"
    SeekCurrent = "SeekCurrent"
    SeekNext = "SeekNext"
    SeekLast = "SeekLast"


class QueueAccessType(Enum):
    """QueueAccessType (3.1.1.17)."""

    ReceiveAccess = "ReceiveAccess"
    SendAccess = "SendAccess"
    PeekAccess = "PeekAccess"
    MoveAccess = "MoveAccess"
    ReceiveAdminAccess = "ReceiveAdminAccess"
    PeekAdminAccess = "PeekAdminAccess"


class QueueShareMode(Enum):
    """QueueShareMode (3.1.1.17)."""

    DenyNone = "DenyNone"
    DenyReceive = "DenyReceive"


class DirectoryOperationResult(Enum):
    """DirectoryOperationResult (3.1.1.17)."""

    Success = "Success"
    GenericError = "GenericError"
    DirectoryNotConnected = "DirectoryNotConnected"
    ObjectNotFound = "ObjectNotFound"
    AttributeNotFound = "AttributeNotFound"
    EndOfData = "EndOfData"
    ObjectAlreadyExists = "ObjectAlreadyExists"


class OperationType(Enum):
    """TransactionalOperation.OperationType (3.1.1.13)."""

    Enqueue = "Enqueue"
    Dequeue = "Dequeue"
    Move = "Move"


class DeliveryGuarantee(Enum):
    """Message.DeliveryGuarantee (3.1.1.12)."""

    Express = "Express"
    Recoverable = "Recoverable"


class MessageClass(IntEnum):
    """Message.Class (3.1.1.12) with the MQMSG_CLASS constants of 3.1.7.1.31."""

    Normal = 0x0000
    Report = 0x0001
    AckReachQueue = 0x0002
    OrderAck = 0x00FF  # no wire constant is listed for OrderAck in 3.1.7.1.31; model-only value
    AckReceive = 0x4000
    NackBadDestQueue = 0x8000
    NackPurged = 0x8001
    NackReachQueueTimeout = 0x8002
    NackQueueExceedQuota = 0x8003
    NackAccessDenied = 0x8004
    NackHopCountExceeded = 0x8005
    NackBadSignature = 0x8006
    NackBadEncryption = 0x8007
    NackCouldNotEncrypt = 0x8008
    NackNotTransactionalQueue = 0x8009
    NackNotTransactionalMessage = 0x800A
    NackUnsupportedCryptoProvider = 0x800B
    NackSourceComputerGuidChanged = 0x800C
    NackQueueDeleted = 0xC000
    NackQueuePurged = 0xC001
    NackReceiveTimeout = 0xC002
    NackReceiveTimeoutAtSender = 0xC003
    NackReceiveRejected = 0xC004


class QueueType(Enum):
    """Queue.QueueType (3.1.1.2)."""

    Private = "Private"
    Public = "Public"
    System = "System"
    Connector = "Connector"


class OutgoingQueueState(Enum):
    """OutgoingQueue.State (3.1.1.3)."""

    Connected = "Connected"
    Disconnected = "Disconnected"
    Disconnecting = "Disconnecting"
    Inactive = "Inactive"
    Locked = "Locked"
    NeedValidation = "NeedValidation"
    Waiting = "Waiting"
    OnHold = "OnHold"


class ConnectionStatus(Enum):
    """ConnectionHistory Status of an OutgoingQueue (3.1.1.3)."""

    InProcess = "InProcess"
    EstablishPacketReceived = "EstablishPacketReceived"
    Established = "Established"
    UnknownFailure = "UnknownFailure"
    PingFailure = "PingFailure"
    SocketCreateFailure = "SocketCreateFailure"
    SocketBindFailure = "SocketBindFailure"
    SocketConnectFailure = "SocketConnectFailure"
    TcpNotEnabled = "TcpNotEnabled"
    SocketSendFailure = "SocketSendFailure"
    ConnectionNotReady = "ConnectionNotReady"
    DnsFailure = "DnsFailure"
    CertificateValidationFailure = "CertificateValidationFailure"
    ConnectionLimitReached = "ConnectionLimitReached"
    ConnectionRefused = "ConnectionRefused"
    RoutingDataNotAvailable = "RoutingDataNotAvailable"
    LowResource = "LowResource"


class RemoteReadState(Enum):
    """OpenQueueDescriptor.RemoteReadState (3.1.1.16)."""

    NoneState = "None"
    Opened = "Opened"
    ReadyForRead = "ReadyForRead"


class QueueManagerState(Enum):
    """QueueManager.QueueManagerState (3.1.1.1)."""

    Stopped = "Stopped"
    Initializing = "Initializing"
    Ready = "Ready"
    Stopping = "Stopping"


INFINITE: float = float("inf")
"""The Infinite timeout of 3.1.7.1.10 and 3.1.2.3 (the timer never expires)."""
