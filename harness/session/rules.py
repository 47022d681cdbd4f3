"""The table of session rules: one stable id per rule a peer can break on an MSMQ binary session.

Every rule cites its [MS-MQQB] section (3.1.5.1 Receiving Any Packet, 3.1.5.2-3.1.5.4 session
establishment, 3.1.5.5 Receiving a SessionAck Packet, 3.1.5.6/3.1.5.7 OrderAck/FinalAck,
3.1.5.8 Receiving a UserMessage Packet, 3.1.6 timer events, 3.1.7.1 Send User Message Event,
3.1.1.4-3.1.1.6 sequences and acknowledgments, 3.1.3.2 initialization) or the [MS-MQMQ]/[MS-MQQB]
2.2 packet section whose rule it is.  The Initiator, the Acceptor and the Observer report
:class:`~harness.session.actions.RuleViolation` records with these ids (:class:`RuleId`, a StrEnum: its
values are the ids written in cases, reports and Parquet); nothing else defines a rule id.

A rule id is a requirement id: cases/requirements.yaml holds, under the same id and the same
section, the spec's sentence that states the rule and its level (MUST, SHOULD or interpretation),
by which a wire case grades each rule a peer broke (docs/cases.md, "Rules the peer reports").  This
module does not read that file (the session core reads no files): tests/session/test_rule_requirements.py
keeps the two in step.

``Rule.side`` names whose behaviour the rule constrains: "initiator" (the Acceptor checks it of
whoever connects), "acceptor" (the Initiator checks it of the remote queue manager), "both"
(either end can break it and both check it), or "record" (an event worth counting that breaks no
rule; it is reported, never graded).  :func:`initiator_rules` lists what the Acceptor checks of an
initiator.

``Rule.close_section`` is the policy "report everything, close only where the spec closes",
declared once per rule: the section that makes the receiving end close the session when it meets
the break (3.1.5.1.2 and 3.1.5.1.3 "discard the received packet ... and then close the session";
the first line of 3.1.5.3-3.1.5.8 for a packet in the wrong state; 3.1.5.3.2 for an invalid
EstablishConnection response; 3.1.5.3.1 "If the connection is rejected, the protocol closes the
session"; 3.1.5.5.5 Validate Message Counts; the timer events 3.1.6.3 and 3.1.6.6), or "" when
the spec prescribes no close and the session goes on, so that one session shows every break of
the peer.  A field rule the codec checks (``Rule.codec_field``,
:data:`harness.session.core.CODEC_RULES`) is a packet that "does not conform to the structures
specified in Messages (section 2)": 3.1.5.1.3 closes.  A rule about a field the receiver "MUST
ignore on receipt" (the Reserved fields of 2.2.1, 2.2.2.1, 2.2.3.1) never closes.  The Initiator,
the Acceptor and the Observer read ``closes_session``; no handler decides it on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

__all__ = ["RULES", "Rule", "RuleId", "Side", "closing_rules", "codec_rules", "initiator_rules", "rule"]

Side = Literal["initiator", "acceptor", "both", "record"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One rule, declared by keyword: its id (the id of its requirement in cases/requirements.yaml),
    the spec section that states it, whose behaviour it constrains, the rule in words, the section
    that closes the session on it ("" when the session goes on), and the field path whose codec
    check (packets) stems it ("" when none)."""

    id: RuleId
    section: str
    side: Side
    text: str
    close_section: str = ""
    codec_field: str = ""

    @property
    def closes_session(self) -> bool:
        """The spec makes the receiving end close the session when this rule is broken."""
        return bool(self.close_section)

    @property
    def timer(self) -> bool:
        """Only a timer event ([MS-MQQB] 3.1.6) raises the rule: an engine running its timers
        reports it, a passive observer of a recording cannot."""
        return self.section.startswith("MS-MQQB 3.1.6")

    @property
    def graded(self) -> bool:
        """A break of the rule is graded by its requirement (a "record" rule is only counted)."""
        return self.side != "record"


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


RULES: dict[str, Rule] = {
    r.id: r
    for r in (
        # 3.1.5.1 Receiving Any Packet
        Rule(
            id=RuleId.MQQB_3_1_5_1_2_SIGNATURE,
            section="MS-MQQB 3.1.5.1.2",
            side="both",
            text=(
                "BaseHeader.VersionNumber MUST be 0x10 and BaseHeader.Signature 0x524F494C; otherwise discard and close"
            ),
            close_section="MS-MQQB 3.1.5.1.2",
        ),
        Rule(
            id=RuleId.MQQB_3_1_5_1_3_MALFORMED,
            section="MS-MQQB 3.1.5.1.3",
            side="both",
            text="a packet that does not conform to the structures of section 2 is discarded and the session closed",
            close_section="MS-MQQB 3.1.5.1.3",
        ),
        Rule(
            id=RuleId.MQQB_3_1_5_1_3_TRUNCATED,
            section="MS-MQQB 3.1.5.1.3",
            side="both",
            text="the stream ended inside a packet (fewer bytes than BaseHeader.PacketSize announces)",
        ),
        Rule(
            id=RuleId.MQQB_3_1_5_1_1_UNKNOWN_PACKET,
            section="MS-MQQB 3.1.5.1.1",
            side="both",
            text="the packet is none of the packet types of 3.1.5.1.1 (InternalHeader.Flags.PT other than 1, 2, 3)",
            close_section="MS-MQQB 3.1.5.1.3",
            codec_field="InternalHeader.Flags.PT",
        ),
        # packet fields an endpoint sets (section 2.2 / [MS-MQMQ] 2.2.19), beyond the structure itself
        Rule(
            id=RuleId.MQQB_2_2_1_RESERVED,
            section="MS-MQQB 2.2.1",
            side="initiator",
            text="InternalHeader.Reserved MUST be set to zero when sent",
        ),
        Rule(
            id=RuleId.MQQB_2_2_1_CS_FLAG,
            section="MS-MQQB 2.2.1",
            side="both",
            text=(
                "InternalHeader.Flags.CS MUST NOT be set in any packet other than an EstablishConnection or "
                "ConnectionParameters Packet"
            ),
            close_section="MS-MQQB 3.1.5.1.3",
            codec_field="InternalHeader.Flags.CS",
        ),
        Rule(
            id=RuleId.MQMQ_2_2_19_1_TIME_TO_REACH_QUEUE,
            section="MS-MQMQ 2.2.19.1",
            side="both",
            text="BaseHeader.TimeToReachQueue MUST be 0xFFFFFFFF in a packet that is not a UserMessage Packet",
            close_section="MS-MQQB 3.1.5.1.3",
            codec_field="BaseHeader.TimeToReachQueue",
        ),
        Rule(
            id=RuleId.MQQB_2_2_2_1_RECOVERABLE_ACK_TIMEOUT,
            section="MS-MQQB 2.2.2.1",
            side="initiator",
            text="ConnectionParametersHeader.RecoverableAckTimeout has a valid range of 0x000001F4-0x0001D4C0",
            close_section="MS-MQQB 3.1.5.1.3",
            codec_field="ConnectionParametersHeader.RecoverableAckTimeout",
        ),
        Rule(
            id=RuleId.MQQB_2_2_2_1_ACK_TIMEOUT,
            section="MS-MQQB 2.2.2.1",
            side="initiator",
            text="ConnectionParametersHeader.AckTimeout has a valid range of 0x00004E20-0x0001D4C0",
            close_section="MS-MQQB 3.1.5.1.3",
            codec_field="ConnectionParametersHeader.AckTimeout",
        ),
        Rule(
            id=RuleId.MQQB_2_2_2_1_RESERVED,
            section="MS-MQQB 2.2.2.1",
            side="initiator",
            text="ConnectionParametersHeader.Reserved MUST be set to 0x0000 by the sender",
        ),
        Rule(
            id=RuleId.MQQB_2_2_3_1_CLIENT_GUID,
            section="MS-MQQB 3.1.3.2",
            side="initiator",
            text=(
                "an EstablishConnection request's ClientGuid is the initiator's QueueManager.Identifier, a globally "
                "unique GUID (3.1.3.2), never GUID_NULL"
            ),
        ),
        Rule(
            id=RuleId.MQQB_2_2_3_1_SERVER_GUID,
            section="MS-MQQB 2.2.3.1",
            side="initiator",
            text=(
                "in a connection request the initiator MUST specify the acceptor's queue manager GUID, or zero-fill "
                "ServerGuid for a direct format name"
            ),
        ),
        Rule(
            id=RuleId.MQQB_2_2_3_1_OPERATING_SYSTEM,
            section="MS-MQQB 2.2.3.1",
            side="both",
            text="EstablishConnectionHeader.OperatingSystem.RE MUST be set to 0x10",
            close_section="MS-MQQB 3.1.5.1.3",
            codec_field="EstablishConnectionHeader.OperatingSystem.RE",
        ),
        Rule(
            id=RuleId.MQQB_2_2_3_1_RESERVED,
            section="MS-MQQB 2.2.3.1",
            side="initiator",
            text="EstablishConnectionHeader.Reserved MUST be set to zero when sent",
        ),
        # wrong state (the first line of 3.1.5.3-3.1.5.8)
        Rule(
            id=RuleId.MQQB_3_1_5_3_WRONG_STATE,
            section="MS-MQQB 3.1.5.3",
            side="both",
            text="an EstablishConnection Packet outside WAITING_EC_MSG/WAITING_ECR_MSG closes the session",
            close_section="MS-MQQB 3.1.5.3",
        ),
        Rule(
            id=RuleId.MQQB_3_1_5_4_WRONG_STATE,
            section="MS-MQQB 3.1.5.4",
            side="both",
            text="a ConnectionParameters Packet outside WAITING_CP_MSG/WAITING_CPR_MSG closes the session",
            close_section="MS-MQQB 3.1.5.4",
        ),
        Rule(
            id=RuleId.MQQB_3_1_5_5_WRONG_STATE,
            section="MS-MQQB 3.1.5.5",
            side="both",
            text="a SessionAck Packet (or SessionHeader) when SessionState is not OPEN closes the session",
            close_section="MS-MQQB 3.1.5.5",
        ),
        Rule(
            id=RuleId.MQQB_3_1_5_6_WRONG_STATE,
            section="MS-MQQB 3.1.5.6",
            side="both",
            text="an OrderAck Packet when SessionState is not OPEN closes the session",
            close_section="MS-MQQB 3.1.5.6",
        ),
        Rule(
            id=RuleId.MQQB_3_1_5_7_WRONG_STATE,
            section="MS-MQQB 3.1.5.7",
            side="both",
            text="a FinalAck Packet when SessionState is not OPEN closes the session",
            close_section="MS-MQQB 3.1.5.7",
        ),
        Rule(
            id=RuleId.MQQB_3_1_5_8_WRONG_STATE,
            section="MS-MQQB 3.1.5.8",
            side="both",
            text="a UserMessage Packet when SessionState is not OPEN closes the session",
            close_section="MS-MQQB 3.1.5.8",
        ),
        # 3.1.5.2.3 / 3.1.5.3.1 / 3.1.5.3.2 EstablishConnection
        Rule(
            id=RuleId.MQQB_3_1_5_2_3_EC_REQUEST,
            section="MS-MQQB 3.1.5.2.3",
            side="initiator",
            text=(
                "an EstablishConnection request has InternalHeader.Flags.CS 0 and ClientGuid = QueueManager.Identifier"
            ),
        ),
        Rule(
            id=RuleId.MQQB_3_1_5_3_1_REFUSAL,
            section="MS-MQQB 3.1.5.3.1",
            side="acceptor",
            text="CS MUST be 1 when the request's ServerGuid is neither the acceptor's identifier nor GUID_NULL",
        ),
        Rule(
            id=RuleId.MQQB_3_1_5_3_1_EC_ECHO,
            section="MS-MQQB 3.1.5.3.1",
            side="acceptor",
            text="the EstablishConnection response echoes ClientGuid, TimeStamp and OperatingSystem.SE of the request",
        ),
        Rule(
            id=RuleId.MQQB_2_2_3_1_RESPONSE_PADDING,
            section="MS-MQQB 2.2.3.1",
            side="acceptor",
            text="every byte of an EstablishConnection response's Padding MUST be 0x5A",
        ),
        Rule(
            id=RuleId.MQQB_3_1_5_3_2_EC_RESPONSE,
            section="MS-MQQB 3.1.5.3.2",
            side="acceptor",
            text=(
                "a valid response has ClientGuid = QueueManager.Identifier, ServerGuid = RemoteQMGuid and CS 0; "
                "otherwise close"
            ),
            close_section="MS-MQQB 3.1.5.3.2",
        ),
        Rule(
            id=RuleId.MQQB_3_1_5_3_2_AFTER_REFUSAL,
            section="MS-MQQB 3.1.5.3.2",
            side="initiator",
            text="after a refused (CS=1) or invalid EstablishConnection response the initiator closes the session",
            close_section="MS-MQQB 3.1.5.3.1",
        ),
        # 3.1.5.4 ConnectionParameters
        Rule(
            id=RuleId.MQQB_3_1_5_4_1_CP_ECHO,
            section="MS-MQQB 3.1.5.4.1",
            side="acceptor",
            text="the ConnectionParameters response echoes RecoverableAckTimeout and AckTimeout, with CS 0",
        ),
        Rule(
            id=RuleId.MQQB_3_1_5_3_2_CP_REQUEST,
            section="MS-MQQB 3.1.5.3.2",
            side="initiator",
            text="a ConnectionParameters request has InternalHeader.Flags.CS 0",
        ),
        # 3.1.5.5 SessionAck
        Rule(
            id=RuleId.MQQB_3_1_5_5_5_COUNT_MISMATCH,
            section="MS-MQQB 3.1.5.5.5",
            side="both",
            text=(
                "SessionHeader.UserMsgSequenceNumber/RecoverableMsgSeqNumber MUST equal "
                "MessageReceivedCount/RecoverableMessageReceivedCount of the receiver (a piggy-backed SessionHeader "
                "carries the sender's MessageSentCount including its own packet, 3.1.7.1.3: 1, 2, 3, ...); otherwise "
                "close"
            ),
            close_section="MS-MQQB 3.1.5.5.5",
        ),
        Rule(
            id=RuleId.MQQB_3_1_5_5_1_ACK_BEYOND_SENT,
            section="MS-MQQB 3.1.5.5.1",
            side="both",
            text="SessionHeader.AckSequenceNumber acknowledges UserMessages that were never sent",
        ),
        Rule(
            id=RuleId.MQQB_3_1_5_5_1_ACK_REGRESSED,
            section="MS-MQQB 3.1.6.4",
            side="both",
            text="SessionHeader.AckSequenceNumber (the total received on the session) went backwards",
        ),
        Rule(
            id=RuleId.MQQB_3_1_5_5_3_ACK_UNSENT_RECOVERABLE,
            section="MS-MQQB 3.1.5.5.3",
            side="both",
            text=(
                "RecoverableMsgAckSeqNumber/RecoverableMsgAckFlags acknowledge recoverable messages that were never "
                "sent"
            ),
        ),
        Rule(
            id=RuleId.MQQB_3_1_1_6_1_SENDER_ACK_FIELDS,
            section="MS-MQQB 3.1.1.6.1",
            side="both",
            text=(
                "a SessionHeader from an endpoint that received no recoverable message has "
                "RecoverableMsgAckSeqNumber 0x0000 and RecoverableMsgAckFlags 0x00000000"
            ),
        ),
        # 3.1.5.6 / 3.1.5.7 OrderAck, FinalAck
        Rule(
            id=RuleId.MQQB_3_1_5_6_ORDER_ACK_UNSENT,
            section="MS-MQQB 3.1.5.6",
            side="both",
            text=(
                "an OrderAck acknowledges a transactional message (TxSequenceID, TxSequenceNumber) that was never sent"
            ),
        ),
        Rule(
            id=RuleId.MQQB_3_1_1_6_2_ORDER_ACK_ORDER,
            section="MS-MQQB 3.1.1.6.2",
            side="acceptor",
            text="transactional messages are acknowledged strictly in sequence order (OrderAck numbers never go back)",
        ),
        Rule(
            id=RuleId.MQQB_3_1_5_7_FINAL_ACK_UNKNOWN,
            section="MS-MQQB 3.1.5.7",
            side="both",
            text="a FinalAck names a MessageID that was never sent on the session",
        ),
        # 3.1.5.8 / 3.1.7.1 UserMessage
        Rule(
            id=RuleId.MQQB_3_1_7_1_WINDOW_EXCEEDED,
            section="MS-MQQB 3.1.7.1",
            side="both",
            text="a UserMessage is sent only while UnAckedMessageCount < WindowSize",
        ),
        Rule(
            id=RuleId.MQQB_3_1_7_1_2_EXPIRED,
            section="MS-MQQB 3.1.7.1.2",
            side="both",
            text=(
                "the protocol MUST check the message for expiration before sending: an expired message (CURRENT_TIME "
                "- UserHeader.SentTime > BaseHeader.TimeToReachQueue, 0xFFFFFFFF infinite) MUST NOT be sent to the "
                "remote queue manager; one that arrives expired was sent expired (beyond the receiver's clock "
                "tolerance), and the receiver ignores it ([MS-MQMQ] 2.2.19.1)"
            ),
        ),
        Rule(
            id=RuleId.MQQB_3_1_7_1_1_MESSAGE_ID,
            section="MS-MQQB 3.1.7.1.1",
            side="initiator",
            text=(
                "a Message whose Identifier is 0 gets MessageIdOrdinal before it is sent: UserHeader.MessageID is "
                "never 0"
            ),
        ),
        Rule(
            id=RuleId.MQQB_3_1_1_5_TX_SEQUENCE,
            section="MS-MQQB 3.1.1.5",
            side="initiator",
            text=(
                "a newly numbered transactional message has TxSequenceNumber = previous + 1 and "
                "PreviousTxSequenceNumber = TxSequenceNumber - 1 within one TxSequenceID: it never follows a number "
                "that was not sent"
            ),
        ),
        Rule(
            id=RuleId.MQMQ_2_2_20_5_TX_NUMBER,
            section="MS-MQMQ 2.2.20.5",
            side="initiator",
            text=(
                "TransactionHeader.TxSequenceNumber has a valid range of 0x00000001-0xFFFFFFFF (the first message of "
                "a sequence is number 1, [MS-MQQB] 3.1.1.5)"
            ),
            close_section="MS-MQQB 3.1.5.1.3",
            codec_field="TransactionHeader.TxSequenceNumber",
        ),
        Rule(
            id=RuleId.MQQB_3_1_7_1_3_TX_PREVIOUS,
            section="MS-MQQB 3.1.7.1.3",
            side="initiator",
            text=(
                "TransactionHeader.PreviousTxSequenceNumber is OutgoingTxSequenceNumber - 1 when first sent, or the "
                "number of an earlier message when resent: always less than TxSequenceNumber"
            ),
        ),
        Rule(
            id=RuleId.MQQB_3_1_1_5_PRIOR_SEQUENCE,
            section="MS-MQQB 3.1.1.5",
            side="initiator",
            text="messages MUST NOT be sent on prior transactional sequences (a TxSequenceID below one already used)",
        ),
        Rule(
            id=RuleId.MQQB_3_1_1_5_NEW_SEQUENCE,
            section="MS-MQQB 3.1.1.5",
            side="initiator",
            text="a new transactional sequence starts at number 1: its first message has PreviousTxSequenceNumber 0",
        ),
        Rule(
            id=RuleId.MQQB_3_1_5_8_1_DUPLICATE,
            section="MS-MQQB 3.1.5.8.1",
            side="initiator",
            text=(
                "a UserMessage is sent once per session: the same (SourceQueueManager, MessageID) twice on one "
                "session is a retransmission no timer of the sender allows (3.1.5.8.1 discards it)"
            ),
        ),
        # timers
        Rule(
            id=RuleId.MQQB_3_1_6_3_ACK_TIMEOUT,
            section="MS-MQQB 3.1.6.3",
            side="acceptor",
            text="no session acknowledgment arrived for messages awaiting one within the Session Ack Wait Timer",
            close_section="MS-MQQB 3.1.6.3",
        ),
        Rule(
            id=RuleId.MQQB_3_1_6_6_INIT_TIMEOUT,
            section="MS-MQQB 3.1.6.6",
            side="both",
            text="session initialization did not complete before the Session Initialization Timer expired",
            close_section="MS-MQQB 3.1.6.6",
        ),
        # transport
        Rule(
            id=RuleId.MQQB_3_1_5_9_CLOSED_EARLY,
            section="MS-MQQB 3.1.5.9",
            side="both",
            text="the transport connection closed before the session reached OPEN (other than after a refusal)",
        ),
    )
}
"""Rule id -> :class:`Rule`, the only place rules are defined (its id is also the id of the rule's
requirement in cases/requirements.yaml)."""


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
