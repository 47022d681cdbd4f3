"""Actions, states, timers and configuration shared by the sans-IO session engines.

Renders the SessionState values of [MS-MQQB] 3.1.1.3.1, the timers of 3.1.2.1-3.1.2.7 (by name),
the user message delivery classes of 1.3.2.1 (express, recoverable, transactional), and the
implementation-dependent durations of 3.1.2/3.1.3.2 as one :class:`SessionConfig`.  The engines
return lists of the small action dataclasses below; the wrapper (socket peer, capture checker, test
loop) performs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from harness.errors import HarnessError
from harness.session.rules import rule
from packets import PacketKind

__all__ = [
    "Acked",
    "Action",
    "CancelTimer",
    "Close",
    "Connect",
    "Deliver",
    "DeliveryClass",
    "RuleViolation",
    "Send",
    "SendPing",
    "SessionConfig",
    "SessionError",
    "SessionState",
    "StartTimer",
    "Timer",
]


class SessionError(HarnessError):
    """A session engine was driven wrongly by its caller (not a peer's fault: those are RuleViolations)."""


class SessionState(Enum):
    """SessionState ADM element ([MS-MQQB] 3.1.1.3.1)."""

    WAITING_EC_MSG = "WAITING_EC_MSG"
    WAITING_ECR_MSG = "WAITING_ECR_MSG"
    WAITING_CP_MSG = "WAITING_CP_MSG"
    WAITING_CPR_MSG = "WAITING_CPR_MSG"
    OPEN = "OPEN"
    CLOSED = "CLOSED"
    WAITING_RECONNECT = "WAITING_RECONNECT"


class Timer:
    """Timer names ([MS-MQQB] 3.1.2); ``timer_fired(name)`` takes these strings."""

    SessionInitialization = "SessionInitialization"  # 3.1.2.1 / 3.1.6.6
    SessionCleanup = "SessionCleanup"  # 3.1.2.2 / 3.1.6.2
    SessionRetryConnect = "SessionRetryConnect"  # 3.1.2.3 / 3.1.6.1
    SessionAckWait = "SessionAckWait"  # 3.1.2.4 / 3.1.6.3
    SessionAckSend = "SessionAckSend"  # 3.1.2.5 / 3.1.6.4
    TransactionalAckWait = "TransactionalAckWait"  # 3.1.2.6 / 3.1.6.5
    OrderAckSend = "OrderAckSend"  # 3.1.2.7 / 3.1.6.9
    PingResponse = "PingResponse"  # 3.1.2.9 / 3.1.6.8


class DeliveryClass(Enum):
    """How a UserMessage is delivered ([MS-MQQB] 1.3.2.1): UserHeader.Flags.DM and TransactionHeader."""

    express = "express"
    recoverable = "recoverable"
    transactional = "transactional"


@dataclass(frozen=True)
class SessionConfig:
    """Implementation-dependent values of [MS-MQQB] 3.1.2 and 3.1.3.2 (seconds unless named _ms).

    ``ack_wait_timeout_ms`` is AckWaitTimeout (sent as ConnectionParametersHeader.AckTimeout, valid
    0x4E20-0x1D4C0); the Session Ack Wait Timer runs ``ack_wait_multiple`` times it (3.1.2.4 <46>).
    The Session Ack Send Timer runs AckWaitTimeout / 2 (3.1.5.8.2), or RecoverableAckSendTimeout
    after the first recoverable message since the last acknowledgment (3.1.5.8.7).
    ``expiry_tolerance``: see [MS-MQQB] 3.1.7.1.2 and :func:`harness.session.core.check_expiry`.
    """

    window_size: int = 64  # WindowSize, 3.1.3.2 SHOULD 64
    session_initialization: float = 30.0  # 3.1.2.1 <43>
    session_cleanup: float = 300.0  # 3.1.2.2 <44>
    session_retry_connect: float = 10.0  # 3.1.2.3 <45>
    ack_wait_timeout_ms: int = 0x4E20  # AckWaitTimeout, 3.1.3.2 <51>
    ack_wait_multiple: int = 1  # 3.1.2.4 <46>
    order_ack_timeout: float = 0.5  # OrderAckTimeout, 3.1.3.2: 500 ms
    maximum_order_ack_delay: float = 10.0  # MaximumOrderAckDelay, 3.1.3.2 SHOULD 10 s
    resend_intervals: tuple[float, ...] = (30.0,) * 3 + (300.0,) * 3 + (1800.0,) * 3 + (21600.0,)  # 3.1.1.3
    ping_response: float = 1.0  # 3.1.2.9: always one second
    # Seconds a received UserMessage may look expired by before it is reported as sent expired
    # (3.1.7.1.2): SentTime and CURRENT_TIME are whole seconds of two clocks, and a message sent in
    # the last moment of a second arrives in the next one.  It is ignored either way ([MS-MQMQ] 2.2.19.1).
    expiry_tolerance: int = 1


# ---------------------------------------------------------------------------------------------
# Actions


@dataclass(frozen=True)
class Send:
    """Write ``data`` (one whole packet) to the transport connection."""

    data: bytes
    packet_kind: PacketKind


@dataclass(frozen=True)
class SendPing:
    """Send a Ping Request datagram ([MS-MQQB] 2.1.2, 3.1.7.6) to the acceptor's ping port."""

    data: bytes


@dataclass(frozen=True)
class Connect:
    """Open the transport connection to the remote queue manager ([MS-MQQB] 2.1.1, 3.1.5.2)."""

    address: str


@dataclass(frozen=True)
class StartTimer:
    """Start (or restart) the named timer; the wrapper later calls ``timer_fired(name)``."""

    name: str
    seconds: float


@dataclass(frozen=True)
class CancelTimer:
    """Stop the named timer."""

    name: str


@dataclass(frozen=True)
class Close:
    """Close the transport connection ([MS-MQQB] 3.1.5.9); ``section`` is the rule that demanded it."""

    reason: str
    section: str


@dataclass(frozen=True)
class Deliver:
    """A UserMessage the acceptor accepted for its local queue ([MS-MQQB] 3.1.5.8.8)."""

    packet: Any  # packets.Packet


@dataclass(frozen=True)
class Acked:
    """Sender side: messages removed from the OutgoingMessageTable as acknowledged.

    ``message_ids`` are the UserHeader.MessageID values of the messages (``send_message`` assigns
    them from MessageIdOrdinal when 0); ``by`` names the packet that completed the acknowledgment
    ("SessionAck" for express/recoverable, "OrderAck" or "SessionAck" for transactional).
    """

    message_ids: tuple[int, ...]
    by: str


@dataclass(frozen=True)
class RuleViolation:
    """A rule the peer broke (see :mod:`harness.session.rules`).

    ``packet_index`` counts the packets of the session from 0 (both directions, in the order the
    engine or observer saw them); -1 when the violation concerns no packet (a timer, the end).
    ``direction`` is the direction of the offending packets: "c2s" (sent by the initiator, the
    client) or "s2c" (sent by the acceptor, the server).
    """

    rule_id: str
    section: str
    packet_index: int
    evidence: str
    direction: str = ""

    @classmethod
    def of(cls, rule_id: str, packet_index: int, evidence: str, direction: str = "") -> RuleViolation:
        return cls(rule_id, rule(rule_id).section, packet_index, evidence, direction)


Action = Send | SendPing | Connect | StartTimer | CancelTimer | Close | Deliver | Acked | RuleViolation
