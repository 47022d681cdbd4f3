"""The table of session rules: one stable id per rule a peer can break on an MSMQ binary session.

Every rule cites its [MS-MQQB] section (3.1.5.1 Receiving Any Packet, 3.1.5.2-3.1.5.4 session
establishment, 3.1.5.5 Receiving a SessionAck Packet, 3.1.5.6/3.1.5.7 OrderAck/FinalAck,
3.1.5.8 Receiving a UserMessage Packet, 3.1.6 timer events, 3.1.7.1 Send User Message Event,
3.1.1.4-3.1.1.6 sequences and acknowledgments) or the [MS-MQMQ]/[MS-MQQB] 2.2 packet section whose
rule it is.  The Initiator, the Acceptor and the Observer report :class:`~harness.session.events.Violation`
records with these ids; nothing else defines a rule id.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RULES", "Rule", "rule"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: its id, the spec section that states it, and the rule in words."""

    id: str
    section: str
    text: str


_TABLE: tuple[tuple[str, str, str], ...] = (
    # 3.1.5.1 Receiving Any Packet
    (
        "MQQB-3.1.5.1.2-signature",
        "MS-MQQB 3.1.5.1.2",
        "BaseHeader.VersionNumber MUST be 0x10 and BaseHeader.Signature 0x524F494C; otherwise discard and close",
    ),
    (
        "MQQB-3.1.5.1.3-malformed",
        "MS-MQQB 3.1.5.1.3",
        "a packet that does not conform to the structures of section 2 is discarded and the session closed",
    ),
    (
        "MQQB-3.1.5.1.3-truncated",
        "MS-MQQB 3.1.5.1.3",
        "the stream ended inside a packet (fewer bytes than BaseHeader.PacketSize announces)",
    ),
    (
        "MQQB-3.1.5.1.1-unknown-packet",
        "MS-MQQB 3.1.5.1.1",
        "the packet is none of the packet types of 3.1.5.1.1 (InternalHeader.Flags.PT other than 1, 2, 3)",
    ),
    # wrong state (the first line of 3.1.5.3-3.1.5.8)
    (
        "MQQB-3.1.5.3-wrong-state",
        "MS-MQQB 3.1.5.3",
        "an EstablishConnection Packet outside WAITING_EC_MSG/WAITING_ECR_MSG closes the session",
    ),
    (
        "MQQB-3.1.5.4-wrong-state",
        "MS-MQQB 3.1.5.4",
        "a ConnectionParameters Packet outside WAITING_CP_MSG/WAITING_CPR_MSG closes the session",
    ),
    (
        "MQQB-3.1.5.5-wrong-state",
        "MS-MQQB 3.1.5.5",
        "a SessionAck Packet (or SessionHeader) when SessionState is not OPEN closes the session",
    ),
    (
        "MQQB-3.1.5.6-wrong-state",
        "MS-MQQB 3.1.5.6",
        "an OrderAck Packet when SessionState is not OPEN closes the session",
    ),
    (
        "MQQB-3.1.5.7-wrong-state",
        "MS-MQQB 3.1.5.7",
        "a FinalAck Packet when SessionState is not OPEN closes the session",
    ),
    (
        "MQQB-3.1.5.8-wrong-state",
        "MS-MQQB 3.1.5.8",
        "a UserMessage Packet when SessionState is not OPEN closes the session",
    ),
    (
        "MQQB-2.1.1-wrong-direction",
        "MS-MQQB 2.1.1",
        "a packet only the other endpoint sends (an acceptor's response from the initiator, or the reverse)",
    ),
    # 3.1.5.2.3 / 3.1.5.3.1 / 3.1.5.3.2 EstablishConnection
    (
        "MQQB-3.1.5.2.3-ec-request",
        "MS-MQQB 3.1.5.2.3",
        "an EstablishConnection request has InternalHeader.Flags.CS 0 and ClientGuid = QueueManager.Identifier",
    ),
    (
        "MQQB-3.1.5.3.1-refusal",
        "MS-MQQB 3.1.5.3.1",
        "CS MUST be 1 exactly when the request's ServerGuid is neither the acceptor's identifier nor GUID_NULL",
    ),
    (
        "MQQB-3.1.5.3.1-ec-echo",
        "MS-MQQB 3.1.5.3.1",
        "the EstablishConnection response echoes ClientGuid, TimeStamp and OperatingSystem.SE of the request",
    ),
    (
        "MQQB-2.2.3.1-response-padding",
        "MS-MQQB 2.2.3.1",
        "every byte of an EstablishConnection response's Padding MUST be 0x5A",
    ),
    (
        "MQQB-3.1.5.3.2-ec-response",
        "MS-MQQB 3.1.5.3.2",
        "a valid response has ClientGuid = QueueManager.Identifier, ServerGuid = RemoteQMGuid and CS 0; "
        "otherwise close",
    ),
    (
        "MQQB-3.1.5.3.2-after-refusal",
        "MS-MQQB 3.1.5.3.2",
        "after a refused (CS=1) or invalid EstablishConnection response the initiator closes the session",
    ),
    # 3.1.5.4 ConnectionParameters
    (
        "MQQB-3.1.5.4.1-cp-echo",
        "MS-MQQB 3.1.5.4.1",
        "the ConnectionParameters response echoes RecoverableAckTimeout and AckTimeout, with CS 0",
    ),
    ("MQQB-3.1.5.3.2-cp-request", "MS-MQQB 3.1.5.3.2", "a ConnectionParameters request has InternalHeader.Flags.CS 0"),
    # 3.1.5.5 SessionAck
    (
        "MQQB-3.1.5.5.5-count-mismatch",
        "MS-MQQB 3.1.5.5.5",
        "SessionHeader.UserMsgSequenceNumber/RecoverableMsgSeqNumber MUST equal MessageReceivedCount/"
        "RecoverableMessageReceivedCount of the receiver; otherwise close",
    ),
    (
        "MQQB-3.1.5.5.1-ack-beyond-sent",
        "MS-MQQB 3.1.5.5.1",
        "SessionHeader.AckSequenceNumber acknowledges UserMessages that were never sent",
    ),
    (
        "MQQB-3.1.5.5.1-ack-regressed",
        "MS-MQQB 3.1.1.6.1",
        "SessionHeader.AckSequenceNumber (the total received on the session) went backwards",
    ),
    (
        "MQQB-3.1.5.5.3-ack-unsent-recoverable",
        "MS-MQQB 3.1.5.5.3",
        "RecoverableMsgAckSeqNumber/RecoverableMsgAckFlags acknowledge recoverable messages that were never sent",
    ),
    (
        "MQQB-3.1.1.6.1-sender-ack-fields",
        "MS-MQQB 3.1.1.6.1",
        "a SessionHeader that acknowledges no recoverable message has RecoverableMsgAckFlags 0",
    ),
    # 3.1.5.6 / 3.1.5.7 OrderAck, FinalAck
    (
        "MQQB-3.1.5.6-order-ack-unsent",
        "MS-MQQB 3.1.5.6",
        "an OrderAck acknowledges a transactional message (TxSequenceID, TxSequenceNumber) that was never sent",
    ),
    (
        "MQQB-3.1.1.6.2-order-ack-order",
        "MS-MQQB 3.1.1.6.2",
        "transactional messages are acknowledged strictly in sequence order (OrderAck numbers never go back)",
    ),
    (
        "MQQB-3.1.5.7-final-ack-unknown",
        "MS-MQQB 3.1.5.7",
        "a FinalAck names a MessageID that was never sent on the session",
    ),
    # 3.1.5.8 / 3.1.7.1 UserMessage
    (
        "MQQB-3.1.7.1-window-exceeded",
        "MS-MQQB 3.1.7.1",
        "a UserMessage is sent only while UnAckedMessageCount < WindowSize",
    ),
    (
        "MQQB-3.1.1.5-tx-sequence",
        "MS-MQQB 3.1.1.5",
        "a newly numbered transactional message has TxSequenceNumber = previous + 1 and "
        "PreviousTxSequenceNumber = TxSequenceNumber - 1 within one TxSequenceID",
    ),
    (
        "MQQB-3.1.5.8.6-tx-rejected",
        "MS-MQQB 3.1.5.8.6",
        "a transactional message out of order or duplicated is not accepted (TxMessageRejectCount)",
    ),
    (
        "MQQB-3.1.5.8.1-duplicate",
        "MS-MQQB 3.1.5.8.1",
        "a non-transactional message whose MessageID is in the MessageIDHistoryTable is discarded",
    ),
    # timers
    (
        "MQQB-3.1.6.3-ack-timeout",
        "MS-MQQB 3.1.6.3",
        "no session acknowledgment arrived for messages awaiting one within the Session Ack Wait Timer",
    ),
    (
        "MQQB-3.1.6.6-init-timeout",
        "MS-MQQB 3.1.6.6",
        "session initialization did not complete before the Session Initialization Timer expired",
    ),
    # transport
    ("MQQB-3.1.5.9-closed-early", "MS-MQQB 3.1.5.9", "the transport connection closed before the session reached OPEN"),
)

RULES: dict[str, Rule] = {rid: Rule(rid, section, text) for rid, section, text in _TABLE}
"""Rule id -> :class:`Rule`, the only place rule ids are defined."""


def rule(rule_id: str) -> Rule:
    """The rule with this id (KeyError names the unknown id)."""
    try:
        return RULES[rule_id]
    except KeyError:
        raise KeyError(f"unknown session rule id {rule_id!r}") from None
