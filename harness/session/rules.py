"""The table of session rules: one stable id per rule a peer can break on an MSMQ binary session.

Every rule cites its [MS-MQQB] section (3.1.5.1 Receiving Any Packet, 3.1.5.2-3.1.5.4 session
establishment, 3.1.5.5 Receiving a SessionAck Packet, 3.1.5.6/3.1.5.7 OrderAck/FinalAck,
3.1.5.8 Receiving a UserMessage Packet, 3.1.6 timer events, 3.1.7.1 Send User Message Event,
3.1.1.4-3.1.1.6 sequences and acknowledgments) or the [MS-MQMQ]/[MS-MQQB] 2.2 packet section whose
rule it is.  The Initiator, the Acceptor and the Observer report :class:`~harness.session.events.Violation`
records with these ids; nothing else defines a rule id.

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
from typing import Literal

__all__ = ["RULES", "Rule", "Side", "closing_rules", "initiator_rules", "rule"]

Side = Literal["initiator", "acceptor", "both", "record"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: its id, the spec section that states it, whose behaviour it constrains, the rule in
    words, and the section that closes the session on it ("" when the session goes on)."""

    id: str
    section: str
    text: str
    side: Side = "both"
    close_section: str = ""

    @property
    def closes_session(self) -> bool:
        """The spec makes the receiving end close the session when this rule is broken."""
        return bool(self.close_section)


_TABLE: tuple[tuple[str, str, Side, str, str], ...] = (
    # (id, section, side, rule in words, the section that closes the session on it or "")
    # 3.1.5.1 Receiving Any Packet
    ("MQQB-3.1.5.1.2-signature", "MS-MQQB 3.1.5.1.2", "both",
     "BaseHeader.VersionNumber MUST be 0x10 and BaseHeader.Signature 0x524F494C; otherwise discard and close",
     "MS-MQQB 3.1.5.1.2"),
    ("MQQB-3.1.5.1.3-malformed", "MS-MQQB 3.1.5.1.3", "both",
     "a packet that does not conform to the structures of section 2 is discarded and the session closed",
     "MS-MQQB 3.1.5.1.3"),
    ("MQQB-3.1.5.1.3-truncated", "MS-MQQB 3.1.5.1.3", "both",
     "the stream ended inside a packet (fewer bytes than BaseHeader.PacketSize announces)",
     ""),
    ("MQQB-3.1.5.1.1-unknown-packet", "MS-MQQB 3.1.5.1.1", "both",
     "the packet is none of the packet types of 3.1.5.1.1 (InternalHeader.Flags.PT other than 1, 2, 3)",
     "MS-MQQB 3.1.5.1.3"),
    # packet fields an endpoint sets (section 2.2 / [MS-MQMQ] 2.2.19), beyond the structure itself
    ("MQQB-2.2.1-reserved", "MS-MQQB 2.2.1", "initiator",
     "InternalHeader.Reserved MUST be set to zero when sent",
     ""),
    ("MQQB-2.2.1-cs-flag", "MS-MQQB 2.2.1", "both",
     "InternalHeader.Flags.CS MUST NOT be set in any packet other than an EstablishConnection or "
     "ConnectionParameters Packet",
     "MS-MQQB 3.1.5.1.3"),
    ("MQMQ-2.2.19.1-time-to-reach-queue", "MS-MQMQ 2.2.19.1", "both",
     "BaseHeader.TimeToReachQueue MUST be 0xFFFFFFFF in a packet that is not a UserMessage Packet",
     "MS-MQQB 3.1.5.1.3"),
    ("MQQB-2.2.2.1-recoverable-ack-timeout", "MS-MQQB 2.2.2.1", "initiator",
     "ConnectionParametersHeader.RecoverableAckTimeout has a valid range of 0x000001F4-0x0001D4C0",
     "MS-MQQB 3.1.5.1.3"),
    ("MQQB-2.2.2.1-ack-timeout", "MS-MQQB 2.2.2.1", "initiator",
     "ConnectionParametersHeader.AckTimeout has a valid range of 0x00004E20-0x0001D4C0",
     "MS-MQQB 3.1.5.1.3"),
    ("MQQB-2.2.2.1-reserved", "MS-MQQB 2.2.2.1", "initiator",
     "ConnectionParametersHeader.Reserved MUST be set to 0x0000 by the sender",
     ""),
    ("MQQB-2.2.3.1-client-guid", "MS-MQQB 2.2.3.1", "initiator",
     "an EstablishConnection request's ClientGuid is the initiator's QueueManager.Identifier, a globally "
     "unique GUID (3.1.3.2), never GUID_NULL",
     ""),
    ("MQQB-2.2.3.1-server-guid", "MS-MQQB 2.2.3.1", "initiator",
     "in a connection request the initiator MUST specify the acceptor's queue manager GUID, or zero-fill "
     "ServerGuid for a direct format name",
     ""),
    ("MQQB-2.2.3.1-operating-system", "MS-MQQB 2.2.3.1", "both",
     "EstablishConnectionHeader.OperatingSystem.RE MUST be set to 0x10",
     "MS-MQQB 3.1.5.1.3"),
    ("MQQB-2.2.3.1-reserved", "MS-MQQB 2.2.3.1", "initiator",
     "EstablishConnectionHeader.Reserved MUST be set to zero when sent",
     ""),
    # wrong state (the first line of 3.1.5.3-3.1.5.8)
    ("MQQB-3.1.5.3-wrong-state", "MS-MQQB 3.1.5.3", "both",
     "an EstablishConnection Packet outside WAITING_EC_MSG/WAITING_ECR_MSG closes the session",
     "MS-MQQB 3.1.5.3"),
    ("MQQB-3.1.5.4-wrong-state", "MS-MQQB 3.1.5.4", "both",
     "a ConnectionParameters Packet outside WAITING_CP_MSG/WAITING_CPR_MSG closes the session",
     "MS-MQQB 3.1.5.4"),
    ("MQQB-3.1.5.5-wrong-state", "MS-MQQB 3.1.5.5", "both",
     "a SessionAck Packet (or SessionHeader) when SessionState is not OPEN closes the session",
     "MS-MQQB 3.1.5.5"),
    ("MQQB-3.1.5.6-wrong-state", "MS-MQQB 3.1.5.6", "both",
     "an OrderAck Packet when SessionState is not OPEN closes the session",
     "MS-MQQB 3.1.5.6"),
    ("MQQB-3.1.5.7-wrong-state", "MS-MQQB 3.1.5.7", "both",
     "a FinalAck Packet when SessionState is not OPEN closes the session",
     "MS-MQQB 3.1.5.7"),
    ("MQQB-3.1.5.8-wrong-state", "MS-MQQB 3.1.5.8", "both",
     "a UserMessage Packet when SessionState is not OPEN closes the session",
     "MS-MQQB 3.1.5.8"),
    # 3.1.5.2.3 / 3.1.5.3.1 / 3.1.5.3.2 EstablishConnection
    ("MQQB-3.1.5.2.3-ec-request", "MS-MQQB 3.1.5.2.3", "initiator",
     "an EstablishConnection request has InternalHeader.Flags.CS 0 and ClientGuid = QueueManager.Identifier",
     ""),
    ("MQQB-3.1.5.3.1-refusal", "MS-MQQB 3.1.5.3.1", "acceptor",
     "CS MUST be 1 when the request's ServerGuid is neither the acceptor's identifier nor GUID_NULL",
     ""),
    ("MQQB-3.1.5.3.1-ec-echo", "MS-MQQB 3.1.5.3.1", "acceptor",
     "the EstablishConnection response echoes ClientGuid, TimeStamp and OperatingSystem.SE of the request",
     ""),
    ("MQQB-2.2.3.1-response-padding", "MS-MQQB 2.2.3.1", "acceptor",
     "every byte of an EstablishConnection response's Padding MUST be 0x5A",
     ""),
    ("MQQB-3.1.5.3.2-ec-response", "MS-MQQB 3.1.5.3.2", "acceptor",
     "a valid response has ClientGuid = QueueManager.Identifier, ServerGuid = RemoteQMGuid and CS 0; "
     "otherwise close",
     "MS-MQQB 3.1.5.3.2"),
    ("MQQB-3.1.5.3.2-after-refusal", "MS-MQQB 3.1.5.3.2", "initiator",
     "after a refused (CS=1) or invalid EstablishConnection response the initiator closes the session",
     "MS-MQQB 3.1.5.3.1"),
    # 3.1.5.4 ConnectionParameters
    ("MQQB-3.1.5.4.1-cp-echo", "MS-MQQB 3.1.5.4.1", "acceptor",
     "the ConnectionParameters response echoes RecoverableAckTimeout and AckTimeout, with CS 0",
     ""),
    ("MQQB-3.1.5.3.2-cp-request", "MS-MQQB 3.1.5.3.2", "initiator",
     "a ConnectionParameters request has InternalHeader.Flags.CS 0",
     ""),
    # 3.1.5.5 SessionAck
    ("MQQB-3.1.5.5.5-count-mismatch", "MS-MQQB 3.1.5.5.5", "both",
     "SessionHeader.UserMsgSequenceNumber/RecoverableMsgSeqNumber MUST equal MessageReceivedCount/"
     "RecoverableMessageReceivedCount of the receiver (a piggy-backed SessionHeader carries the sender's "
     "MessageSentCount including its own packet, 3.1.7.1.3: 1, 2, 3, ...); otherwise close",
     "MS-MQQB 3.1.5.5.5"),
    ("MQQB-3.1.5.5.1-ack-beyond-sent", "MS-MQQB 3.1.5.5.1", "both",
     "SessionHeader.AckSequenceNumber acknowledges UserMessages that were never sent",
     ""),
    ("MQQB-3.1.5.5.1-ack-regressed", "MS-MQQB 3.1.1.6.1", "both",
     "SessionHeader.AckSequenceNumber (the total received on the session) went backwards",
     ""),
    ("MQQB-3.1.5.5.3-ack-unsent-recoverable", "MS-MQQB 3.1.5.5.3", "both",
     "RecoverableMsgAckSeqNumber/RecoverableMsgAckFlags acknowledge recoverable messages that were never sent",
     ""),
    ("MQQB-3.1.1.6.1-sender-ack-fields", "MS-MQQB 3.1.1.6.1", "both",
     "a SessionHeader from an endpoint that received no recoverable message has RecoverableMsgAckSeqNumber "
     "0x0000 and RecoverableMsgAckFlags 0x00000000",
     ""),
    # 3.1.5.6 / 3.1.5.7 OrderAck, FinalAck
    ("MQQB-3.1.5.6-order-ack-unsent", "MS-MQQB 3.1.5.6", "both",
     "an OrderAck acknowledges a transactional message (TxSequenceID, TxSequenceNumber) that was never sent",
     ""),
    ("MQQB-3.1.1.6.2-order-ack-order", "MS-MQQB 3.1.1.6.2", "acceptor",
     "transactional messages are acknowledged strictly in sequence order (OrderAck numbers never go back)",
     ""),
    ("MQQB-3.1.5.7-final-ack-unknown", "MS-MQQB 3.1.5.7", "both",
     "a FinalAck names a MessageID that was never sent on the session",
     ""),
    # 3.1.5.8 / 3.1.7.1 UserMessage
    ("MQQB-3.1.7.1-window-exceeded", "MS-MQQB 3.1.7.1", "both",
     "a UserMessage is sent only while UnAckedMessageCount < WindowSize",
     ""),
    ("MQQB-3.1.7.1.2-expired", "MS-MQQB 3.1.7.1.2", "both",
     "the protocol MUST check the message for expiration before sending: an expired message (CURRENT_TIME - "
     "UserHeader.SentTime > BaseHeader.TimeToReachQueue, 0xFFFFFFFF infinite) MUST NOT be sent to the remote "
     "queue manager; one that arrives expired was sent expired (beyond the receiver's clock tolerance), and the "
     "receiver ignores it ([MS-MQMQ] 2.2.19.1)",
     ""),
    ("MQQB-3.1.7.1.1-message-id", "MS-MQQB 3.1.7.1.1", "initiator",
     "a Message whose Identifier is 0 gets MessageIdOrdinal before it is sent: UserHeader.MessageID is never 0",
     ""),
    ("MQQB-3.1.1.5-tx-sequence", "MS-MQQB 3.1.1.5", "initiator",
     "a newly numbered transactional message has TxSequenceNumber = previous + 1 and "
     "PreviousTxSequenceNumber = TxSequenceNumber - 1 within one TxSequenceID: it never follows a number "
     "that was not sent",
     ""),
    ("MQMQ-2.2.20.5-tx-number", "MS-MQMQ 2.2.20.5", "initiator",
     "TransactionHeader.TxSequenceNumber has a valid range of 0x00000001-0xFFFFFFFF (the first message of a "
     "sequence is number 1, [MS-MQQB] 3.1.1.5)",
     "MS-MQQB 3.1.5.1.3"),
    ("MQQB-3.1.7.1.3-tx-previous", "MS-MQQB 3.1.7.1.3", "initiator",
     "TransactionHeader.PreviousTxSequenceNumber is OutgoingTxSequenceNumber - 1 when first sent, or the "
     "number of an earlier message when resent: always less than TxSequenceNumber",
     ""),
    ("MQQB-3.1.1.5-prior-sequence", "MS-MQQB 3.1.1.5", "initiator",
     "messages MUST NOT be sent on prior transactional sequences (a TxSequenceID below one already used)",
     ""),
    ("MQQB-3.1.1.5-new-sequence", "MS-MQQB 3.1.1.5", "initiator",
     "a new transactional sequence starts at number 1: its first message has PreviousTxSequenceNumber 0",
     ""),
    ("MQQB-3.1.5.8.6-tx-rejected", "MS-MQQB 3.1.5.8.6", "record",
     "a transactional message out of order or duplicated is not accepted (TxMessageRejectCount)",
     ""),
    ("MQQB-3.1.5.8.1-duplicate", "MS-MQQB 3.1.1.4", "initiator",
     "a UserMessage is sent once per session: the same (SourceQueueManager, MessageID) twice on one session "
     "is a retransmission no timer of the sender allows (3.1.5.8.1 discards it)",
     ""),
    # timers
    ("MQQB-3.1.6.3-ack-timeout", "MS-MQQB 3.1.6.3", "acceptor",
     "no session acknowledgment arrived for messages awaiting one within the Session Ack Wait Timer",
     "MS-MQQB 3.1.6.3"),
    ("MQQB-3.1.6.6-init-timeout", "MS-MQQB 3.1.6.6", "both",
     "session initialization did not complete before the Session Initialization Timer expired",
     "MS-MQQB 3.1.6.6"),
    # transport
    ("MQQB-3.1.5.9-closed-early", "MS-MQQB 3.1.5.9", "both",
     "the transport connection closed before the session reached OPEN (other than after a refusal)",
     ""),
)  # fmt: skip

RULES: dict[str, Rule] = {rid: Rule(rid, section, text, side, closes) for rid, section, side, text, closes in _TABLE}
"""Rule id -> :class:`Rule`, the only place rule ids are defined."""


def rule(rule_id: str) -> Rule:
    """The rule with this id (KeyError names the unknown id)."""
    try:
        return RULES[rule_id]
    except KeyError:
        raise KeyError(f"unknown session rule id {rule_id!r}") from None


def initiator_rules() -> list[Rule]:
    """The rules the Acceptor checks of whoever connects to it (side "initiator" or "both"), in table order."""
    return [r for r in RULES.values() if r.side in ("initiator", "both")]


def closing_rules() -> dict[str, str]:
    """Rule id -> the section that closes the session on it, for every rule that closes."""
    return {r.id: r.close_section for r in RULES.values() if r.closes_session}
