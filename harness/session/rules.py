"""The table of session rules: one stable id per rule a peer can break on an MSMQ binary session.

Every rule cites its [MS-MQQB] section (3.1.5.1 Receiving Any Packet, 3.1.5.2-3.1.5.4 session
establishment, 3.1.5.5 Receiving a SessionAck Packet, 3.1.5.6/3.1.5.7 OrderAck/FinalAck,
3.1.5.8 Receiving a UserMessage Packet, 3.1.6 timer events, 3.1.7.1 Send User Message Event,
3.1.1.4-3.1.1.6 sequences and acknowledgments) or the [MS-MQMQ]/[MS-MQQB] 2.2 packet section whose
rule it is.  The Initiator, the Acceptor and the Observer report :class:`~harness.session.events.Violation`
records with these ids (:class:`RuleId`, a StrEnum: its values are the ids written in cases,
reports and Parquet); nothing else defines a rule id.

``Rule.side`` names whose behaviour the rule constrains: "initiator" (the Acceptor checks it of
whoever connects), "acceptor" (the Initiator checks it of the remote queue manager), "both"
(either end can break it and both check it), or "record" (an event worth counting that breaks no
rule: a retransmission the receiver rejects).  :func:`initiator_rules` lists what the Acceptor
checks of an initiator.

``Rule.close_section`` is the policy "report everything, close only where the spec closes",
declared once per rule: the section that makes the receiving end close the session when it meets
the break (3.1.5.1.2 and 3.1.5.1.3 "discard the received packet ... and then close the session";
the first line of 3.1.5.3-3.1.5.8 for a packet in the wrong state; 3.1.5.3.2 for an invalid
EstablishConnection response; 3.1.5.3.1 "If the connection is rejected, the protocol closes the
session"; 3.1.5.5.5 Validate Message Counts; the timer events 3.1.6.3 and 3.1.6.6), or "" when
the spec prescribes no close and the session goes on, so that one session shows every break of
the peer.  A field rule the codec checks (:data:`harness.session.core.CODEC_RULES`) is a packet
that "does not conform to the structures specified in Messages (section 2)": 3.1.5.1.3 closes.
A rule about a field the receiver "MUST ignore on receipt" (the Reserved fields of 2.2.1, 2.2.2.1,
2.2.3.1) never closes.  The Initiator, the Acceptor and the Observer read ``closes_session``;
no handler decides it on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

__all__ = ["RULES", "Rule", "RuleId", "Side", "closing_rules", "codec_rules", "initiator_rules", "rule"]

Side = Literal["initiator", "acceptor", "both", "record"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: its id, the spec section that states it, whose behaviour it constrains, the rule in
    words, and the section that closes the session on it ("" when the session goes on)."""

    id: RuleId
    section: str
    text: str
    side: Side = "both"
    close_section: str = ""
    codec_field: str = ""  # the field path whose codec check (packets) stems this rule, if any

    @property
    def closes_session(self) -> bool:
        """The spec makes the receiving end close the session when this rule is broken."""
        return bool(self.close_section)


class RuleId(StrEnum):
    """Every rule id: the member's name is its id in upper case, punctuation as underscores."""

    MQQB_3_1_5_1_2_SIGNATURE = "MQQB-3.1.5.1.2-signature"
    MQQB_3_1_5_1_3_MALFORMED = "MQQB-3.1.5.1.3-malformed"
    MQQB_3_1_5_1_3_TRUNCATED = "MQQB-3.1.5.1.3-truncated"
    MQQB_3_1_5_1_1_UNKNOWN_PACKET = "MQQB-3.1.5.1.1-unknown-packet"
    MQQB_2_2_1_RESERVED = "MQQB-2.2.1-reserved"
    MQQB_2_2_1_CS_FLAG = "MQQB-2.2.1-cs-flag"
    MQMQ_2_2_19_1_TIME_TO_REACH_QUEUE = "MQMQ-2.2.19.1-time-to-reach-queue"
    MQQB_2_2_2_1_RECOVERABLE_ACK_TIMEOUT = "MQQB-2.2.2.1-recoverable-ack-timeout"
    MQQB_2_2_2_1_ACK_TIMEOUT = "MQQB-2.2.2.1-ack-timeout"
    MQQB_2_2_2_1_RESERVED = "MQQB-2.2.2.1-reserved"
    MQQB_2_2_3_1_CLIENT_GUID = "MQQB-2.2.3.1-client-guid"
    MQQB_2_2_3_1_SERVER_GUID = "MQQB-2.2.3.1-server-guid"
    MQQB_2_2_3_1_OPERATING_SYSTEM = "MQQB-2.2.3.1-operating-system"
    MQQB_2_2_3_1_RESERVED = "MQQB-2.2.3.1-reserved"
    MQQB_3_1_5_3_WRONG_STATE = "MQQB-3.1.5.3-wrong-state"
    MQQB_3_1_5_4_WRONG_STATE = "MQQB-3.1.5.4-wrong-state"
    MQQB_3_1_5_5_WRONG_STATE = "MQQB-3.1.5.5-wrong-state"
    MQQB_3_1_5_6_WRONG_STATE = "MQQB-3.1.5.6-wrong-state"
    MQQB_3_1_5_7_WRONG_STATE = "MQQB-3.1.5.7-wrong-state"
    MQQB_3_1_5_8_WRONG_STATE = "MQQB-3.1.5.8-wrong-state"
    MQQB_3_1_5_2_3_EC_REQUEST = "MQQB-3.1.5.2.3-ec-request"
    MQQB_3_1_5_3_1_REFUSAL = "MQQB-3.1.5.3.1-refusal"
    MQQB_3_1_5_3_1_EC_ECHO = "MQQB-3.1.5.3.1-ec-echo"
    MQQB_2_2_3_1_RESPONSE_PADDING = "MQQB-2.2.3.1-response-padding"
    MQQB_3_1_5_3_2_EC_RESPONSE = "MQQB-3.1.5.3.2-ec-response"
    MQQB_3_1_5_3_2_AFTER_REFUSAL = "MQQB-3.1.5.3.2-after-refusal"
    MQQB_3_1_5_4_1_CP_ECHO = "MQQB-3.1.5.4.1-cp-echo"
    MQQB_3_1_5_3_2_CP_REQUEST = "MQQB-3.1.5.3.2-cp-request"
    MQQB_3_1_5_5_5_COUNT_MISMATCH = "MQQB-3.1.5.5.5-count-mismatch"
    MQQB_3_1_5_5_1_ACK_BEYOND_SENT = "MQQB-3.1.5.5.1-ack-beyond-sent"
    MQQB_3_1_5_5_1_ACK_REGRESSED = "MQQB-3.1.5.5.1-ack-regressed"
    MQQB_3_1_5_5_3_ACK_UNSENT_RECOVERABLE = "MQQB-3.1.5.5.3-ack-unsent-recoverable"
    MQQB_3_1_1_6_1_SENDER_ACK_FIELDS = "MQQB-3.1.1.6.1-sender-ack-fields"
    MQQB_3_1_5_6_ORDER_ACK_UNSENT = "MQQB-3.1.5.6-order-ack-unsent"
    MQQB_3_1_1_6_2_ORDER_ACK_ORDER = "MQQB-3.1.1.6.2-order-ack-order"
    MQQB_3_1_5_7_FINAL_ACK_UNKNOWN = "MQQB-3.1.5.7-final-ack-unknown"
    MQQB_3_1_7_1_WINDOW_EXCEEDED = "MQQB-3.1.7.1-window-exceeded"
    MQQB_3_1_7_1_2_EXPIRED = "MQQB-3.1.7.1.2-expired"
    MQQB_3_1_7_1_1_MESSAGE_ID = "MQQB-3.1.7.1.1-message-id"
    MQQB_3_1_1_5_TX_SEQUENCE = "MQQB-3.1.1.5-tx-sequence"
    MQMQ_2_2_20_5_TX_NUMBER = "MQMQ-2.2.20.5-tx-number"
    MQQB_3_1_7_1_3_TX_PREVIOUS = "MQQB-3.1.7.1.3-tx-previous"
    MQQB_3_1_1_5_PRIOR_SEQUENCE = "MQQB-3.1.1.5-prior-sequence"
    MQQB_3_1_1_5_NEW_SEQUENCE = "MQQB-3.1.1.5-new-sequence"
    MQQB_3_1_5_8_1_DUPLICATE = "MQQB-3.1.5.8.1-duplicate"
    MQQB_3_1_6_3_ACK_TIMEOUT = "MQQB-3.1.6.3-ack-timeout"
    MQQB_3_1_6_6_INIT_TIMEOUT = "MQQB-3.1.6.6-init-timeout"
    MQQB_3_1_5_9_CLOSED_EARLY = "MQQB-3.1.5.9-closed-early"


_TABLE: tuple[tuple[RuleId, str, Side, str, str], ...] = (
    # (id, section, side, rule in words, the section that closes the session on it or "")
    # 3.1.5.1 Receiving Any Packet
    (RuleId.MQQB_3_1_5_1_2_SIGNATURE, "MS-MQQB 3.1.5.1.2", "both",
     "BaseHeader.VersionNumber MUST be 0x10 and BaseHeader.Signature 0x524F494C; otherwise discard and close",
     "MS-MQQB 3.1.5.1.2"),
    (RuleId.MQQB_3_1_5_1_3_MALFORMED, "MS-MQQB 3.1.5.1.3", "both",
     "a packet that does not conform to the structures of section 2 is discarded and the session closed",
     "MS-MQQB 3.1.5.1.3"),
    (RuleId.MQQB_3_1_5_1_3_TRUNCATED, "MS-MQQB 3.1.5.1.3", "both",
     "the stream ended inside a packet (fewer bytes than BaseHeader.PacketSize announces)",
     ""),
    (RuleId.MQQB_3_1_5_1_1_UNKNOWN_PACKET, "MS-MQQB 3.1.5.1.1", "both",
     "the packet is none of the packet types of 3.1.5.1.1 (InternalHeader.Flags.PT other than 1, 2, 3)",
     "MS-MQQB 3.1.5.1.3"),
    # packet fields an endpoint sets (section 2.2 / [MS-MQMQ] 2.2.19), beyond the structure itself
    (RuleId.MQQB_2_2_1_RESERVED, "MS-MQQB 2.2.1", "initiator",
     "InternalHeader.Reserved MUST be set to zero when sent",
     ""),
    (RuleId.MQQB_2_2_1_CS_FLAG, "MS-MQQB 2.2.1", "both",
     "InternalHeader.Flags.CS MUST NOT be set in any packet other than an EstablishConnection or "
     "ConnectionParameters Packet",
     "MS-MQQB 3.1.5.1.3"),
    (RuleId.MQMQ_2_2_19_1_TIME_TO_REACH_QUEUE, "MS-MQMQ 2.2.19.1", "both",
     "BaseHeader.TimeToReachQueue MUST be 0xFFFFFFFF in a packet that is not a UserMessage Packet",
     "MS-MQQB 3.1.5.1.3"),
    (RuleId.MQQB_2_2_2_1_RECOVERABLE_ACK_TIMEOUT, "MS-MQQB 2.2.2.1", "initiator",
     "ConnectionParametersHeader.RecoverableAckTimeout has a valid range of 0x000001F4-0x0001D4C0",
     "MS-MQQB 3.1.5.1.3"),
    (RuleId.MQQB_2_2_2_1_ACK_TIMEOUT, "MS-MQQB 2.2.2.1", "initiator",
     "ConnectionParametersHeader.AckTimeout has a valid range of 0x00004E20-0x0001D4C0",
     "MS-MQQB 3.1.5.1.3"),
    (RuleId.MQQB_2_2_2_1_RESERVED, "MS-MQQB 2.2.2.1", "initiator",
     "ConnectionParametersHeader.Reserved MUST be set to 0x0000 by the sender",
     ""),
    (RuleId.MQQB_2_2_3_1_CLIENT_GUID, "MS-MQQB 2.2.3.1", "initiator",
     "an EstablishConnection request's ClientGuid is the initiator's QueueManager.Identifier, a globally "
     "unique GUID (3.1.3.2), never GUID_NULL",
     ""),
    (RuleId.MQQB_2_2_3_1_SERVER_GUID, "MS-MQQB 2.2.3.1", "initiator",
     "in a connection request the initiator MUST specify the acceptor's queue manager GUID, or zero-fill "
     "ServerGuid for a direct format name",
     ""),
    (RuleId.MQQB_2_2_3_1_OPERATING_SYSTEM, "MS-MQQB 2.2.3.1", "both",
     "EstablishConnectionHeader.OperatingSystem.RE MUST be set to 0x10",
     "MS-MQQB 3.1.5.1.3"),
    (RuleId.MQQB_2_2_3_1_RESERVED, "MS-MQQB 2.2.3.1", "initiator",
     "EstablishConnectionHeader.Reserved MUST be set to zero when sent",
     ""),
    # wrong state (the first line of 3.1.5.3-3.1.5.8)
    (RuleId.MQQB_3_1_5_3_WRONG_STATE, "MS-MQQB 3.1.5.3", "both",
     "an EstablishConnection Packet outside WAITING_EC_MSG/WAITING_ECR_MSG closes the session",
     "MS-MQQB 3.1.5.3"),
    (RuleId.MQQB_3_1_5_4_WRONG_STATE, "MS-MQQB 3.1.5.4", "both",
     "a ConnectionParameters Packet outside WAITING_CP_MSG/WAITING_CPR_MSG closes the session",
     "MS-MQQB 3.1.5.4"),
    (RuleId.MQQB_3_1_5_5_WRONG_STATE, "MS-MQQB 3.1.5.5", "both",
     "a SessionAck Packet (or SessionHeader) when SessionState is not OPEN closes the session",
     "MS-MQQB 3.1.5.5"),
    (RuleId.MQQB_3_1_5_6_WRONG_STATE, "MS-MQQB 3.1.5.6", "both",
     "an OrderAck Packet when SessionState is not OPEN closes the session",
     "MS-MQQB 3.1.5.6"),
    (RuleId.MQQB_3_1_5_7_WRONG_STATE, "MS-MQQB 3.1.5.7", "both",
     "a FinalAck Packet when SessionState is not OPEN closes the session",
     "MS-MQQB 3.1.5.7"),
    (RuleId.MQQB_3_1_5_8_WRONG_STATE, "MS-MQQB 3.1.5.8", "both",
     "a UserMessage Packet when SessionState is not OPEN closes the session",
     "MS-MQQB 3.1.5.8"),
    # 3.1.5.2.3 / 3.1.5.3.1 / 3.1.5.3.2 EstablishConnection
    (RuleId.MQQB_3_1_5_2_3_EC_REQUEST, "MS-MQQB 3.1.5.2.3", "initiator",
     "an EstablishConnection request has InternalHeader.Flags.CS 0 and ClientGuid = QueueManager.Identifier",
     ""),
    (RuleId.MQQB_3_1_5_3_1_REFUSAL, "MS-MQQB 3.1.5.3.1", "acceptor",
     "CS MUST be 1 when the request's ServerGuid is neither the acceptor's identifier nor GUID_NULL",
     ""),
    (RuleId.MQQB_3_1_5_3_1_EC_ECHO, "MS-MQQB 3.1.5.3.1", "acceptor",
     "the EstablishConnection response echoes ClientGuid, TimeStamp and OperatingSystem.SE of the request",
     ""),
    (RuleId.MQQB_2_2_3_1_RESPONSE_PADDING, "MS-MQQB 2.2.3.1", "acceptor",
     "every byte of an EstablishConnection response's Padding MUST be 0x5A",
     ""),
    (RuleId.MQQB_3_1_5_3_2_EC_RESPONSE, "MS-MQQB 3.1.5.3.2", "acceptor",
     "a valid response has ClientGuid = QueueManager.Identifier, ServerGuid = RemoteQMGuid and CS 0; "
     "otherwise close",
     "MS-MQQB 3.1.5.3.2"),
    (RuleId.MQQB_3_1_5_3_2_AFTER_REFUSAL, "MS-MQQB 3.1.5.3.2", "initiator",
     "after a refused (CS=1) or invalid EstablishConnection response the initiator closes the session",
     "MS-MQQB 3.1.5.3.1"),
    # 3.1.5.4 ConnectionParameters
    (RuleId.MQQB_3_1_5_4_1_CP_ECHO, "MS-MQQB 3.1.5.4.1", "acceptor",
     "the ConnectionParameters response echoes RecoverableAckTimeout and AckTimeout, with CS 0",
     ""),
    (RuleId.MQQB_3_1_5_3_2_CP_REQUEST, "MS-MQQB 3.1.5.3.2", "initiator",
     "a ConnectionParameters request has InternalHeader.Flags.CS 0",
     ""),
    # 3.1.5.5 SessionAck
    (RuleId.MQQB_3_1_5_5_5_COUNT_MISMATCH, "MS-MQQB 3.1.5.5.5", "both",
     "SessionHeader.UserMsgSequenceNumber/RecoverableMsgSeqNumber MUST equal MessageReceivedCount/"
     "RecoverableMessageReceivedCount of the receiver (a piggy-backed SessionHeader carries the sender's "
     "MessageSentCount including its own packet, 3.1.7.1.3: 1, 2, 3, ...); otherwise close",
     "MS-MQQB 3.1.5.5.5"),
    (RuleId.MQQB_3_1_5_5_1_ACK_BEYOND_SENT, "MS-MQQB 3.1.5.5.1", "both",
     "SessionHeader.AckSequenceNumber acknowledges UserMessages that were never sent",
     ""),
    (RuleId.MQQB_3_1_5_5_1_ACK_REGRESSED, "MS-MQQB 3.1.1.6.1", "both",
     "SessionHeader.AckSequenceNumber (the total received on the session) went backwards",
     ""),
    (RuleId.MQQB_3_1_5_5_3_ACK_UNSENT_RECOVERABLE, "MS-MQQB 3.1.5.5.3", "both",
     "RecoverableMsgAckSeqNumber/RecoverableMsgAckFlags acknowledge recoverable messages that were never sent",
     ""),
    (RuleId.MQQB_3_1_1_6_1_SENDER_ACK_FIELDS, "MS-MQQB 3.1.1.6.1", "both",
     "a SessionHeader from an endpoint that received no recoverable message has RecoverableMsgAckSeqNumber "
     "0x0000 and RecoverableMsgAckFlags 0x00000000",
     ""),
    # 3.1.5.6 / 3.1.5.7 OrderAck, FinalAck
    (RuleId.MQQB_3_1_5_6_ORDER_ACK_UNSENT, "MS-MQQB 3.1.5.6", "both",
     "an OrderAck acknowledges a transactional message (TxSequenceID, TxSequenceNumber) that was never sent",
     ""),
    (RuleId.MQQB_3_1_1_6_2_ORDER_ACK_ORDER, "MS-MQQB 3.1.1.6.2", "acceptor",
     "transactional messages are acknowledged strictly in sequence order (OrderAck numbers never go back)",
     ""),
    (RuleId.MQQB_3_1_5_7_FINAL_ACK_UNKNOWN, "MS-MQQB 3.1.5.7", "both",
     "a FinalAck names a MessageID that was never sent on the session",
     ""),
    # 3.1.5.8 / 3.1.7.1 UserMessage
    (RuleId.MQQB_3_1_7_1_WINDOW_EXCEEDED, "MS-MQQB 3.1.7.1", "both",
     "a UserMessage is sent only while UnAckedMessageCount < WindowSize",
     ""),
    (RuleId.MQQB_3_1_7_1_2_EXPIRED, "MS-MQQB 3.1.7.1.2", "both",
     "the protocol MUST check the message for expiration before sending: an expired message (CURRENT_TIME - "
     "UserHeader.SentTime > BaseHeader.TimeToReachQueue, 0xFFFFFFFF infinite) MUST NOT be sent to the remote "
     "queue manager; one that arrives expired was sent expired (beyond the receiver's clock tolerance), and the "
     "receiver ignores it ([MS-MQMQ] 2.2.19.1)",
     ""),
    (RuleId.MQQB_3_1_7_1_1_MESSAGE_ID, "MS-MQQB 3.1.7.1.1", "initiator",
     "a Message whose Identifier is 0 gets MessageIdOrdinal before it is sent: UserHeader.MessageID is never 0",
     ""),
    (RuleId.MQQB_3_1_1_5_TX_SEQUENCE, "MS-MQQB 3.1.1.5", "initiator",
     "a newly numbered transactional message has TxSequenceNumber = previous + 1 and "
     "PreviousTxSequenceNumber = TxSequenceNumber - 1 within one TxSequenceID: it never follows a number "
     "that was not sent",
     ""),
    (RuleId.MQMQ_2_2_20_5_TX_NUMBER, "MS-MQMQ 2.2.20.5", "initiator",
     "TransactionHeader.TxSequenceNumber has a valid range of 0x00000001-0xFFFFFFFF (the first message of a "
     "sequence is number 1, [MS-MQQB] 3.1.1.5)",
     "MS-MQQB 3.1.5.1.3"),
    (RuleId.MQQB_3_1_7_1_3_TX_PREVIOUS, "MS-MQQB 3.1.7.1.3", "initiator",
     "TransactionHeader.PreviousTxSequenceNumber is OutgoingTxSequenceNumber - 1 when first sent, or the "
     "number of an earlier message when resent: always less than TxSequenceNumber",
     ""),
    (RuleId.MQQB_3_1_1_5_PRIOR_SEQUENCE, "MS-MQQB 3.1.1.5", "initiator",
     "messages MUST NOT be sent on prior transactional sequences (a TxSequenceID below one already used)",
     ""),
    (RuleId.MQQB_3_1_1_5_NEW_SEQUENCE, "MS-MQQB 3.1.1.5", "initiator",
     "a new transactional sequence starts at number 1: its first message has PreviousTxSequenceNumber 0",
     ""),
    (RuleId.MQQB_3_1_5_8_1_DUPLICATE, "MS-MQQB 3.1.1.4", "initiator",
     "a UserMessage is sent once per session: the same (SourceQueueManager, MessageID) twice on one session "
     "is a retransmission no timer of the sender allows (3.1.5.8.1 discards it)",
     ""),
    # timers
    (RuleId.MQQB_3_1_6_3_ACK_TIMEOUT, "MS-MQQB 3.1.6.3", "acceptor",
     "no session acknowledgment arrived for messages awaiting one within the Session Ack Wait Timer",
     "MS-MQQB 3.1.6.3"),
    (RuleId.MQQB_3_1_6_6_INIT_TIMEOUT, "MS-MQQB 3.1.6.6", "both",
     "session initialization did not complete before the Session Initialization Timer expired",
     "MS-MQQB 3.1.6.6"),
    # transport
    (RuleId.MQQB_3_1_5_9_CLOSED_EARLY, "MS-MQQB 3.1.5.9", "both",
     "the transport connection closed before the session reached OPEN (other than after a refusal)",
     ""),
)  # fmt: skip

# The codec checks of packets (a field outside its valid range) and the rule each one breaks.
_CODEC_FIELDS: dict[RuleId, str] = {
    RuleId.MQQB_3_1_5_1_1_UNKNOWN_PACKET: "InternalHeader.Flags.PT",
    RuleId.MQQB_2_2_1_CS_FLAG: "InternalHeader.Flags.CS",
    RuleId.MQMQ_2_2_19_1_TIME_TO_REACH_QUEUE: "BaseHeader.TimeToReachQueue",
    RuleId.MQQB_2_2_2_1_RECOVERABLE_ACK_TIMEOUT: "ConnectionParametersHeader.RecoverableAckTimeout",
    RuleId.MQQB_2_2_2_1_ACK_TIMEOUT: "ConnectionParametersHeader.AckTimeout",
    RuleId.MQQB_2_2_3_1_OPERATING_SYSTEM: "EstablishConnectionHeader.OperatingSystem.RE",
    RuleId.MQMQ_2_2_20_5_TX_NUMBER: "TransactionHeader.TxSequenceNumber",
}

RULES: dict[str, Rule] = {
    rid: Rule(rid, section, text, side, closes, _CODEC_FIELDS.get(rid, ""))
    for rid, section, side, text, closes in _TABLE
}
"""Rule id -> :class:`Rule`, the only place rules are defined."""


def rule(rule_id: str) -> Rule:
    """The rule with this id (KeyError names the unknown id)."""
    try:
        return RULES[rule_id]
    except KeyError:
        raise KeyError(f"unknown session rule id {rule_id!r}") from None


def initiator_rules() -> list[Rule]:
    """The rules the Acceptor checks of whoever connects to it (side "initiator" or "both"), in table order."""
    return [r for r in RULES.values() if r.side in ("initiator", "both")]


def codec_rules() -> dict[str, RuleId]:
    """Field path -> the rule its codec check breaks (:attr:`Rule.codec_field`)."""
    return {r.codec_field: r.id for r in RULES.values() if r.codec_field}


def closing_rules() -> dict[str, str]:
    """Rule id -> the section that closes the session on it, for every rule that closes."""
    return {r.id: r.close_section for r in RULES.values() if r.closes_session}
