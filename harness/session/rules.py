"""The table of session rules: one stable id per rule a peer can break on an MSMQ binary session.

Every rule cites its [MS-MQQB] section (3.1.5.1 Receiving Any Packet, 3.1.5.2-3.1.5.4 session
establishment, 3.1.5.5 Receiving a SessionAck Packet, 3.1.5.6/3.1.5.7 OrderAck/FinalAck,
3.1.5.8 Receiving a UserMessage Packet, 3.1.6 timer events, 3.1.7.1 Send User Message Event,
3.1.1.4-3.1.1.6 sequences and acknowledgments, 3.1.3.2 initialization) or the [MS-MQMQ]/[MS-MQQB]
2.2 packet section whose rule it is.  The Initiator, the Acceptor and the Observer report
:class:`~harness.session.actions.RuleViolation` records with these ids (:class:`RuleId`, a StrEnum: its
values are the ids written in cases, reports and Parquet); nothing else defines a rule id.

A rule id is a requirement id, and the rule's entry is its requirement too: the spec's sentence
that states the rule (``quote``), its level (MUST, SHOULD or interpretation, with the ``alternatives``
readings and the ``frame`` of an interpretation) and a ``note``, by which a wire case grades each
rule a peer broke (docs/cases.md, "Rules the peer reports").  cases/requirements.yaml does not
write them again: its ``- include: session-rules`` entry stands for them, and harness.cases.loader
lists them there (this module reads no file: the session core is free of YAML and of
harness.cases).  A new rule is one ``Rule(...)`` entry here, a member of :class:`RuleId` (whose
members are the entries: RuleId and :data:`RULES` are derived from them), plus the engine that
detects it.

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

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Literal

__all__ = [
    "RULES",
    "Reading",
    "Rule",
    "RuleId",
    "RuleLevel",
    "Side",
    "closing_rules",
    "codec_rules",
    "initiator_rules",
    "rule",
]

Side = Literal["initiator", "acceptor", "both", "record"]
#: The level of a rule's requirement (harness.cases.model.Level): how a break of it is graded.
RuleLevel = Literal["MUST", "SHOULD", "MAY", "interpretation"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Reading:
    """One reading of an ``interpretation`` rule a conformant implementation may take (the first
    is the one the engines report by)."""

    name: str
    reading: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One rule, declared by keyword: its id (also its requirement's id), the spec section that
    states it, whose behaviour it constrains, the rule in words, the section that closes the
    session on it ("" when the session goes on), the field path whose codec check (packets) stems
    it ("" when none); and its requirement: the level, the spec's sentence (``quote``, verbatim; "[...]"
    marks text left out), the ``note`` (what the engines report it of, in the harness's words) and,
    for an interpretation, the readings it allows and the MUST requirement that frames the choice."""

    id: str  # the rule's id; in RULES (RuleId.X.rule) the RuleId member itself
    section: str
    side: Side
    text: str
    close_section: str = ""
    codec_field: str = ""
    level: RuleLevel = "MUST"
    quote: str
    note: str = ""
    alternatives: tuple[Reading, ...] = ()
    frame: str = ""

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


#: The readings of a valid range the spec gives without a MUST (the timeouts of [MS-MQQB] 2.2.2.1),
#: shared by the rules about those fields.
RANGE_READINGS = (
    Reading(
        name="outside-is-malformed",
        reading=(
            "A value outside the valid range makes a packet that does not conform to the structures of "
            "section 2; the receiver discards it and closes the session (3.1.5.1.3)."
        ),
    ),
    Reading(
        name="range-informative",
        reading=(
            "The range tells the values senders use; a receiver takes (or clamps) a value outside it and "
            "the session goes on."
        ),
    ),
)


class RuleId(StrEnum):
    """Every rule, declared once by keyword: each member is a ``Rule(...)`` entry, its value the rule's
    id and its name that id in upper case, punctuation as underscores (the name the engines use);
    :attr:`rule` is its :class:`Rule`, whose ``id`` is the member.  :data:`RULES` lists them by id."""

    rule: Rule

    def __new__(cls, rule: Rule) -> RuleId:
        member = str.__new__(cls, rule.id)
        member._value_ = rule.id
        member.rule = replace(rule, id=member)
        return member

    # 3.1.5.1 Receiving Any Packet
    MQQB_3_1_5_1_2_SIGNATURE = (
        Rule(
            id="MQQB-3.1.5.1.2-signature",
            section="MS-MQQB 3.1.5.1.2",
            side="both",
            text=(
                "BaseHeader.VersionNumber MUST be 0x10 and BaseHeader.Signature 0x524F494C; otherwise discard and close"
            ),
            close_section="MS-MQQB 3.1.5.1.2",
            quote=(
                "A packet is valid when the BaseHeader.VersionNumber field is set to 0x10 and the BaseHeader.Signature "
                "field is set to 0x524F494C (big-endian order). Any other value indicates an invalid packet. [...] If "
                "signature validation fails, the protocol MUST discard the received packet, perform no further "
                "processing for it, and then close the session as specified in Closing a Session (section 3.1.5.9)."
            ),
            note=(
                "Reported of a packet whose VersionNumber is not 0x10 or whose Signature is not the little-endian "
                '0x524F494C ([MS-MQMQ] 2.2.19.1: both "MUST be set"); the byte order is '
                "MQQB-3.1.5.1.2-SIGNATURE-BYTE-ORDER.  The receiver closes the session."
            ),
        ),
    )
    MQQB_3_1_5_1_3_MALFORMED = (
        Rule(
            id="MQQB-3.1.5.1.3-malformed",
            section="MS-MQQB 3.1.5.1.3",
            side="both",
            text="a packet that does not conform to the structures of section 2 is discarded and the session closed",
            close_section="MS-MQQB 3.1.5.1.3",
            quote=(
                "If the protocol receives a request that does not conform to the structures specified in Messages "
                "(section 2), the protocol MUST discard the received packet, perform no further processing for it, and "
                "then close the session as specified in Closing a Session (section 3.1.5.9)."
            ),
            note=(
                "Reported of a packet the codec cannot read as a section 2 structure (a field path and byte offset in "
                "the evidence); a field outside its valid range is the rule of that field "
                "(harness.session.core.CODEC_RULES).  The receiver closes the session."
            ),
        ),
    )
    MQQB_3_1_5_1_3_TRUNCATED = (
        Rule(
            id="MQQB-3.1.5.1.3-truncated",
            section="MS-MQQB 3.1.5.1.3",
            side="both",
            text="the stream ended inside a packet (fewer bytes than BaseHeader.PacketSize announces)",
            quote=(
                "If the protocol receives a request that does not conform to the structures specified in Messages "
                "(section 2), the protocol MUST discard the received packet, perform no further processing for it, and "
                "then close the session as specified in Closing a Session (section 3.1.5.9)."
            ),
            note=(
                "The stream ended inside a packet: fewer bytes came than its BaseHeader.PacketSize announces "
                '([MS-MQMQ] 2.2.19.1: PacketSize "MUST be set to the size, in bytes, of the entire packet").  The '
                "connection is gone already, so no close follows.  In a capture the recording itself may have been "
                "cut: the pipeline reports it all the same."
            ),
        ),
    )
    MQQB_3_1_5_1_1_UNKNOWN_PACKET = (
        Rule(
            id="MQQB-3.1.5.1.1-unknown-packet",
            section="MS-MQQB 3.1.5.1.1",
            side="both",
            text="the packet is none of the packet types of 3.1.5.1.1 (InternalHeader.Flags.PT other than 1, 2, 3)",
            close_section="MS-MQQB 3.1.5.1.3",
            codec_field="InternalHeader.Flags.PT",
            quote=(
                "A packet is identified by inspecting the BaseHeader ([MS-MQMQ] section 2.2.19.1) and possibly "
                "subsequent packet headers. The following list describes how to identify each packet type. "
                "EstablishConnection Packet (section 2.2.3): The BaseHeader.Flags.IN field MUST be set, and the "
                "InternalHeader.Flags.PT field MUST be set to 0x2. ConnectionParameters Packet (section 2.2.2): The "
                "BaseHeader.Flags.IN field MUST be set, and the InternalHeader.Flags.PT field MUST be set to 0x3. "
                "SessionAck Packet (section 2.2.6): The BaseHeader.Flags.IN and BaseHeader.Flags.SH fields MUST be "
                "set, and the InternalHeader.Flags.PT field MUST be set to 0x1."
            ),
            note=(
                "Reported of an internal packet (BaseHeader.Flags.IN) whose InternalHeader.Flags.PT is none of 0x1, "
                '0x2, 0x3: no packet type of this list.  2.2.1 has the receiver close ("Any value not specified in '
                'the preceding table MUST be treated as an error by closing the session", MQQB-2.2.1-PT-CLOSE), and '
                "so does 3.1.5.1.3."
            ),
        ),
    )
    # packet fields an endpoint sets (section 2.2 / [MS-MQMQ] 2.2.19), beyond the structure itself
    MQQB_2_2_1_RESERVED = (
        Rule(
            id="MQQB-2.2.1-reserved",
            section="MS-MQQB 2.2.1",
            side="initiator",
            text="InternalHeader.Reserved MUST be set to zero when sent",
            quote=(
                "Reserved (2 bytes): A 16-bit unsigned short integer reserved for future use. MUST be set to zero when "
                "sent and MUST be ignored on receipt."
            ),
            note=(
                "Reported of an InternalHeader.Reserved other than 0; the receiver ignores it and the session goes on."
            ),
        ),
    )
    MQQB_2_2_1_CS_FLAG = (
        Rule(
            id="MQQB-2.2.1-cs-flag",
            section="MS-MQQB 2.2.1",
            side="both",
            text=(
                "InternalHeader.Flags.CS MUST NOT be set in any packet other than an EstablishConnection or "
                "ConnectionParameters Packet"
            ),
            close_section="MS-MQQB 3.1.5.1.3",
            codec_field="InternalHeader.Flags.CS",
            quote=(
                "A - CS (1 bit): Specifies connection state. This field is used during the session negotiation to "
                "establish a connection. When set, CS indicates that the connection is refused. This field MUST NOT be "
                "set in any packet other than an EstablishConnection Packet or a ConnectionParameters Packet."
            ),
            note=(
                "Reported of a SessionAck Packet with InternalHeader.Flags.CS set; the codec rejects it, and 3.1.5.1.3 "
                "closes."
            ),
        ),
    )
    MQMQ_2_2_19_1_TIME_TO_REACH_QUEUE = (
        Rule(
            id="MQMQ-2.2.19.1-time-to-reach-queue",
            section="MS-MQMQ 2.2.19.1",
            side="both",
            text="BaseHeader.TimeToReachQueue MUST be 0xFFFFFFFF in a packet that is not a UserMessage Packet",
            close_section="MS-MQQB 3.1.5.1.3",
            codec_field="BaseHeader.TimeToReachQueue",
            quote=(
                "TimeToReachQueue (4 bytes): A 32-bit unsigned integer that indicates the length of time, in seconds, "
                "that a UserMessage Packet has to reach its destination queue manager. [...] When the BaseHeader is "
                "not part of a UserMessage Packet, this value MUST be set to 0xFFFFFFFF."
            ),
            note=(
                "Reported of an EstablishConnection, ConnectionParameters or SessionAck Packet whose TimeToReachQueue "
                "is not 0xFFFFFFFF; the codec rejects it, and [MS-MQQB] 3.1.5.1.3 closes."
            ),
        ),
    )
    MQQB_2_2_2_1_RECOVERABLE_ACK_TIMEOUT = (
        Rule(
            id="MQQB-2.2.2.1-recoverable-ack-timeout",
            section="MS-MQQB 2.2.2.1",
            side="initiator",
            text="ConnectionParametersHeader.RecoverableAckTimeout has a valid range of 0x000001F4-0x0001D4C0",
            close_section="MS-MQQB 3.1.5.1.3",
            codec_field="ConnectionParametersHeader.RecoverableAckTimeout",
            level="interpretation",
            quote=(
                "RecoverableAckTimeout (4 bytes): A 32-bit unsigned long integer that specifies the minimum time, in "
                "milliseconds, that the protocol waits before sending a SessionAck Packet (section 2.2.6) "
                "acknowledgment after receiving a recoverable UserMessage Packet ([MS-MQMQ] section 2.2.20). This "
                "field has a valid range from 0x000001F4 to 0x0001D4C0, inclusive."
            ),
            note=(
                "Reported of a ConnectionParameters request whose RecoverableAckTimeout lies outside the valid range.  "
                "The sentence gives the range without a MUST, and no sentence says what a receiver does with a value "
                "outside it; an initiator that follows 3.1.5.3.2 never sends one (it clamps RecoverableAckSendTimeout "
                '"to the closest limit").  The engines take the first reading (the codec rejects the packet and the '
                "receiver closes); a sender outside the range is graded non-strict."
            ),
            alternatives=RANGE_READINGS,
            frame="MQQB-3.1.5.1.3-DISCARD-CLOSE",
        ),
    )
    MQQB_2_2_2_1_ACK_TIMEOUT = (
        Rule(
            id="MQQB-2.2.2.1-ack-timeout",
            section="MS-MQQB 2.2.2.1",
            side="initiator",
            text="ConnectionParametersHeader.AckTimeout has a valid range of 0x00004E20-0x0001D4C0",
            close_section="MS-MQQB 3.1.5.1.3",
            codec_field="ConnectionParametersHeader.AckTimeout",
            level="interpretation",
            quote=(
                "AckTimeout (4 bytes): A 32-bit unsigned long integer that specifies the time, in milliseconds, that "
                "the protocol waits for a SessionAck Packet before closing the session. This field has a valid range "
                "from 0x00004E20 to 0x0001D4C0, inclusive."
            ),
            note=(
                "Reported of a ConnectionParameters request whose AckTimeout lies outside the valid range.  The "
                "sentence gives the range without a MUST, and AckWaitTimeout, which the request carries (3.1.5.3.2), "
                'is "set based on the system configuration" (3.1.3.2).  The engines take the first reading (the '
                "codec rejects the packet and the receiver closes); a sender outside the range is graded non-strict."
            ),
            alternatives=RANGE_READINGS,
            frame="MQQB-3.1.5.1.3-DISCARD-CLOSE",
        ),
    )
    MQQB_2_2_2_1_RESERVED = (
        Rule(
            id="MQQB-2.2.2.1-reserved",
            section="MS-MQQB 2.2.2.1",
            side="initiator",
            text="ConnectionParametersHeader.Reserved MUST be set to 0x0000 by the sender",
            quote=(
                "Reserved (2 bytes): A 16-bit unsigned integer reserved for future use. MUST be set to 0x0000 by the "
                "sender, and MUST be ignored by the receiver."
            ),
            note=(
                "Reported of a ConnectionParametersHeader.Reserved other than 0; the receiver ignores it and the "
                "session goes on."
            ),
        ),
    )
    MQQB_2_2_3_1_CLIENT_GUID = (
        Rule(
            id="MQQB-2.2.3.1-client-guid",
            section="MS-MQQB 3.1.3.2",
            side="initiator",
            text=(
                "an EstablishConnection request's ClientGuid is the initiator's QueueManager.Identifier, a globally "
                "unique GUID (3.1.3.2), never GUID_NULL"
            ),
            quote=(
                "The value of QueueManager.Identifier MUST be globally unique and set based on system configuration, "
                "which is implementation-dependent."
            ),
            note=(
                "Reported of an EstablishConnection request whose ClientGuid is GUID_NULL.  The request carries the "
                "initiator's identifier (3.1.5.2.3: \"EstablishConnectionHeader.ClientGuid MUST be set to "
                'QueueManager.Identifier"; 2.2.3.1: "The GUID for the queue manager of the initiator"), and '
                "GUID_NULL identifies no queue manager uniquely.  The rule's section is this one, whose sentence makes "
                "it a MUST (2.2.3.1, which its id names, states none)."
            ),
        ),
    )
    MQQB_2_2_3_1_SERVER_GUID = (
        Rule(
            id="MQQB-2.2.3.1-server-guid",
            section="MS-MQQB 2.2.3.1",
            side="initiator",
            text=(
                "in a connection request the initiator MUST specify the acceptor's queue manager GUID, or zero-fill "
                "ServerGuid for a direct format name"
            ),
            quote=(
                "ServerGuid (16 bytes): The GUID that identifies the queue manager of the acceptor responding to the "
                "connection request. In a connection request, the initiator MUST specify the acceptor queue manager "
                "GUID or MUST zero fill this field if a direct format name is used."
            ),
            note=(
                "Reported by an acceptor that knows its identifier, of a request whose ServerGuid is neither that "
                "identifier nor GUID_NULL (the acceptor refuses it, 3.1.5.3.1)."
            ),
        ),
    )
    MQQB_2_2_3_1_OPERATING_SYSTEM = (
        Rule(
            id="MQQB-2.2.3.1-operating-system",
            section="MS-MQQB 2.2.3.1",
            side="both",
            text="EstablishConnectionHeader.OperatingSystem.RE MUST be set to 0x10",
            close_section="MS-MQQB 3.1.5.1.3",
            codec_field="EstablishConnectionHeader.OperatingSystem.RE",
            quote="RE (1 byte): This field is reserved. MUST be set to 0x10.",
            note=(
                "Reported of an EstablishConnection Packet whose OperatingSystem.RE is not 0x10; the codec rejects it, "
                "and 3.1.5.1.3 closes."
            ),
        ),
    )
    MQQB_2_2_3_1_RESERVED = (
        Rule(
            id="MQQB-2.2.3.1-reserved",
            section="MS-MQQB 2.2.3.1",
            side="initiator",
            text="EstablishConnectionHeader.Reserved MUST be set to zero when sent",
            quote=(
                "Reserved (2 bytes): A 16-bit unsigned integer field reserved for future use. MUST be set to zero when "
                "sent and MUST be ignored on receipt."
            ),
            note=(
                "Reported of an EstablishConnectionHeader.Reserved other than 0 in a request; the receiver ignores it."
            ),
        ),
    )
    # wrong state (the first line of 3.1.5.3-3.1.5.8)
    MQQB_3_1_5_3_WRONG_STATE = (
        Rule(
            id="MQQB-3.1.5.3-wrong-state",
            section="MS-MQQB 3.1.5.3",
            side="both",
            text="an EstablishConnection Packet outside WAITING_EC_MSG/WAITING_ECR_MSG closes the session",
            close_section="MS-MQQB 3.1.5.3",
            quote=(
                "If the SessionState ADM element is not set to WAITING_EC_MSG or WAITING_ECR_MSG, the protocol MUST "
                "close the session as specified in Closing a Session (section 3.1.5.9)."
            ),
            note=(
                "Reported of the end that sent an EstablishConnection Packet its peer was not waiting for (a second "
                "request, a response to no request); the receiver closes.  MQQB-3.1.5.3-WRONG-STATE is the close a "
                "case checks of the target."
            ),
        ),
    )
    MQQB_3_1_5_4_WRONG_STATE = (
        Rule(
            id="MQQB-3.1.5.4-wrong-state",
            section="MS-MQQB 3.1.5.4",
            side="both",
            text="a ConnectionParameters Packet outside WAITING_CP_MSG/WAITING_CPR_MSG closes the session",
            close_section="MS-MQQB 3.1.5.4",
            quote=(
                "If SessionState is not set to WAITING_CP_MSG or WAITING_CPR_MSG, the protocol MUST close the session "
                "as specified in Closing a Session (section 3.1.5.9)."
            ),
            note=(
                "Reported of the end that sent a ConnectionParameters Packet its peer was not waiting for; the "
                "receiver closes.  MQQB-3.1.5.4-WRONG-STATE is the close a case checks of the target."
            ),
        ),
    )
    MQQB_3_1_5_5_WRONG_STATE = (
        Rule(
            id="MQQB-3.1.5.5-wrong-state",
            section="MS-MQQB 3.1.5.5",
            side="both",
            text="a SessionAck Packet (or SessionHeader) when SessionState is not OPEN closes the session",
            close_section="MS-MQQB 3.1.5.5",
            quote=(
                "If the SessionState ADM element is not set to the value OPEN, the protocol MUST close the session as "
                "specified in Closing a Session (section 3.1.5.9)."
            ),
            note=(
                "Reported of the end that sent a SessionAck Packet (or a SessionHeader) before the session was OPEN; "
                "the receiver closes.  MQQB-3.1.5.5-WRONG-STATE is the close a case checks of the target."
            ),
        ),
    )
    MQQB_3_1_5_6_WRONG_STATE = (
        Rule(
            id="MQQB-3.1.5.6-wrong-state",
            section="MS-MQQB 3.1.5.6",
            side="both",
            text="an OrderAck Packet when SessionState is not OPEN closes the session",
            close_section="MS-MQQB 3.1.5.6",
            quote=(
                "If the SessionState ADM element is not set to the value OPEN, the protocol MUST close the session as "
                "specified in Closing a Session (section 3.1.5.9)."
            ),
            note="Reported of the end that sent an OrderAck Packet before the session was OPEN; the receiver closes.",
        ),
    )
    MQQB_3_1_5_7_WRONG_STATE = (
        Rule(
            id="MQQB-3.1.5.7-wrong-state",
            section="MS-MQQB 3.1.5.7",
            side="both",
            text="a FinalAck Packet when SessionState is not OPEN closes the session",
            close_section="MS-MQQB 3.1.5.7",
            quote=(
                "If the SessionState ADM element is not set to the value OPEN, the protocol MUST close the session as "
                "specified in Closing a Session (section 3.1.5.9)."
            ),
            note="Reported of the end that sent a FinalAck Packet before the session was OPEN; the receiver closes.",
        ),
    )
    MQQB_3_1_5_8_WRONG_STATE = (
        Rule(
            id="MQQB-3.1.5.8-wrong-state",
            section="MS-MQQB 3.1.5.8",
            side="both",
            text="a UserMessage Packet when SessionState is not OPEN closes the session",
            close_section="MS-MQQB 3.1.5.8",
            quote=(
                "If the SessionState ADM element is not set to the value OPEN, the protocol MUST close the session as "
                "specified in Closing a Session (section 3.1.5.9)."
            ),
            note=(
                "Reported of the end that sent a UserMessage Packet before the session was OPEN; the receiver closes.  "
                "MQQB-3.1.5.8-WRONG-STATE is the close a case checks of the target."
            ),
        ),
    )
    # 3.1.5.2.3 / 3.1.5.3.1 / 3.1.5.3.2 EstablishConnection
    MQQB_3_1_5_2_3_EC_REQUEST = (
        Rule(
            id="MQQB-3.1.5.2.3-ec-request",
            section="MS-MQQB 3.1.5.2.3",
            side="initiator",
            text=(
                "an EstablishConnection request has InternalHeader.Flags.CS 0 and ClientGuid = QueueManager.Identifier"
            ),
            quote=(
                "The following fields MUST be set in the EstablishConnection Packet: [...] InternalHeader.Flags.CS "
                "MUST be set to 0. EstablishConnectionHeader.ClientGuid MUST be set to QueueManager.Identifier."
            ),
            note=(
                "Reported of an EstablishConnection request with InternalHeader.Flags.CS set (CS refuses a connection: "
                "only a response carries it); a GUID_NULL ClientGuid is MQQB-2.2.3.1-client-guid."
            ),
        ),
    )
    MQQB_3_1_5_3_1_REFUSAL = (
        Rule(
            id="MQQB-3.1.5.3.1-refusal",
            section="MS-MQQB 3.1.5.3.1",
            side="acceptor",
            text="CS MUST be 1 when the request's ServerGuid is neither the acceptor's identifier nor GUID_NULL",
            quote=(
                "The protocol MUST reply to a connection request by sending an EstablishConnection Packet response "
                "with the following values: [...] The packet is valid if the EstablishConnectionHeader.ServerGuid "
                "field is equal to QueueManager.Identifier or the EstablishConnectionHeader.ServerGuid field is "
                "GUID_NULL ({00000000-0000-0000-0000-000000000000}). [...] If the packet is invalid, the "
                "InternalHeader.Flags.CS bit field MUST be set to 1."
            ),
            note=(
                "Reported of an acceptor that accepts (CS 0) a request naming another queue manager's GUID as "
                "ServerGuid.  MQQB-3.1.5.3.1-CS-INVALID is the same sentence as a case checks it."
            ),
        ),
    )
    MQQB_3_1_5_3_1_EC_ECHO = (
        Rule(
            id="MQQB-3.1.5.3.1-ec-echo",
            section="MS-MQQB 3.1.5.3.1",
            side="acceptor",
            text="the EstablishConnection response echoes ClientGuid, TimeStamp and OperatingSystem.SE of the request",
            quote=(
                "The protocol MUST reply to a connection request by sending an EstablishConnection Packet response "
                "with the following values: [...] The EstablishConnectionHeader.ClientGuid field MUST be set to the "
                "EstablishConnectionHeader.ClientGuid field value in the original packet. [...] The "
                "EstablishConnectionHeader.TimeStamp field MUST be set to the EstablishConnectionHeader.TimeStamp "
                "field value in the original packet. The EstablishConnectionHeader.OperatingSystem.SE field MUST be "
                "set to the value of this field in the request packet."
            ),
            note=(
                "Reported of an EstablishConnection response whose ClientGuid, TimeStamp or OperatingSystem.SE differs "
                "from the request's.  MQQB-3.1.5.3.1-ECHO is the same sentence as a case checks it."
            ),
        ),
    )
    MQQB_2_2_3_1_RESPONSE_PADDING = (
        Rule(
            id="MQQB-2.2.3.1-response-padding",
            section="MS-MQQB 2.2.3.1",
            side="acceptor",
            text="every byte of an EstablishConnection response's Padding MUST be 0x5A",
            quote=(
                "Padding (512 bytes): A fixed-length array of 512 bytes of padding to fill the remainder of the "
                "EstablishConnectionHeader packet. When the EstablishConnectionHeader is part of a response packet "
                "from a server, each byte of this array MUST be filled with the value 0x5A."
            ),
            note=(
                "Reported of an EstablishConnection response with a Padding byte other than 0x5A; whether the "
                "initiator closes on it is MQQB-3.1.5.1.3-BAD-PADDING (the engines go on). "
                "MQQB-2.2.3.1-RESPONSE-PADDING is the same sentence as a case checks it."
            ),
        ),
    )
    MQQB_3_1_5_3_2_EC_RESPONSE = (
        Rule(
            id="MQQB-3.1.5.3.2-ec-response",
            section="MS-MQQB 3.1.5.3.2",
            side="acceptor",
            text=(
                "a valid response has ClientGuid = QueueManager.Identifier, ServerGuid = RemoteQMGuid and CS 0; "
                "otherwise close"
            ),
            close_section="MS-MQQB 3.1.5.3.2",
            quote=(
                "The packet is valid if EstablishConnectionHeader.ClientGuid is equal to QueueManager.Identifier and "
                "EstablishConnectionHeader.ServerGUID is equal to RemoteQMGuid and InternalHeader.Flags.CS is set to "
                "0. If the packet is invalid, the protocol MUST discard the packet and close the session as specified "
                "in Closing a Session (section 3.1.5.9)."
            ),
            note=(
                "Reported of a response that accepts (CS 0) but names another client, or another server than a "
                "non-null ServerGuid the request named; the initiator closes.  A refusal (CS 1) is a valid answer of "
                "3.1.5.3.1 and is not this rule: after it the initiator closes too (MQQB-3.1.5.3.2-after-refusal)."
            ),
        ),
    )
    MQQB_3_1_5_3_2_AFTER_REFUSAL = (
        Rule(
            id="MQQB-3.1.5.3.2-after-refusal",
            section="MS-MQQB 3.1.5.3.2",
            side="initiator",
            text="after a refused (CS=1) or invalid EstablishConnection response the initiator closes the session",
            close_section="MS-MQQB 3.1.5.3.1",
            quote=(
                "The packet is valid if EstablishConnectionHeader.ClientGuid is equal to QueueManager.Identifier and "
                "EstablishConnectionHeader.ServerGUID is equal to RemoteQMGuid and InternalHeader.Flags.CS is set to "
                "0. If the packet is invalid, the protocol MUST discard the packet and close the session as specified "
                "in Closing a Session (section 3.1.5.9)."
            ),
            note=(
                "Reported of an initiator that went on (sent a ConnectionParameters request) after an "
                'EstablishConnection response with CS set, instead of closing; 3.1.5.3.1 has the acceptor close ("If '
                'the connection is rejected, the protocol closes the session").'
            ),
        ),
    )
    # 3.1.5.4 ConnectionParameters
    MQQB_3_1_5_4_1_CP_ECHO = (
        Rule(
            id="MQQB-3.1.5.4.1-cp-echo",
            section="MS-MQQB 3.1.5.4.1",
            side="acceptor",
            text="the ConnectionParameters response echoes RecoverableAckTimeout and AckTimeout, with CS 0",
            quote=(
                "The protocol MUST reply to a connection request by sending a ConnectionParameters Packet response "
                "with the following values: [...] The InternalHeader.Flags.CS bit field MUST be set to 0. The "
                "ConnectionParametersHeader.RecoverableAckTimeout field MUST be set to the value of the "
                "ConnectionParametersHeader.RecoverableAckTimeout field in the received packet. The "
                "ConnectionParametersHeader.AckTimeout field MUST be set to the value of the "
                "ConnectionParametersHeader.AckTimeout field in the received packet."
            ),
            note=(
                "Reported of a ConnectionParameters response with CS set or a RecoverableAckTimeout or AckTimeout "
                "other than the request's.  MQQB-3.1.5.4.1-CP-RESPONSE is the whole reply as a case checks it."
            ),
        ),
    )
    MQQB_3_1_5_3_2_CP_REQUEST = (
        Rule(
            id="MQQB-3.1.5.3.2-cp-request",
            section="MS-MQQB 3.1.5.3.2",
            side="initiator",
            text="a ConnectionParameters request has InternalHeader.Flags.CS 0",
            quote=(
                "The protocol MUST reply to a connection response by sending a ConnectionParameters Packet with the "
                "following field values: [...] The InternalHeader.Flags.CS field MUST be set to 0."
            ),
            note="Reported of a ConnectionParameters request with InternalHeader.Flags.CS set.",
        ),
    )
    # 3.1.5.5 SessionAck
    MQQB_3_1_5_5_5_COUNT_MISMATCH = (
        Rule(
            id="MQQB-3.1.5.5.5-count-mismatch",
            section="MS-MQQB 3.1.5.5.5",
            side="both",
            text=(
                "SessionHeader.UserMsgSequenceNumber/RecoverableMsgSeqNumber MUST equal "
                "MessageReceivedCount/RecoverableMessageReceivedCount of the receiver (a piggy-backed SessionHeader "
                "carries the sender's MessageSentCount including its own packet, 3.1.7.1.3: 1, 2, 3, ...); otherwise "
                "close"
            ),
            close_section="MS-MQQB 3.1.5.5.5",
            quote=(
                "If the SessionHeader.UserMsgSequenceNumber field is not equal to the MessageReceivedCount ADM element "
                "or the SessionHeader.RecoverableMsgSeqNumber field is not equal to the "
                "RecoverableMessageReceivedCount ADM element, the protocol MUST close the session as specified in "
                "Closing a Session (section 3.1.5.9)."
            ),
            note=(
                "Reported of the end whose SessionHeader counts differ from what its peer received (a piggy-backed "
                "SessionHeader counts its own packet, 3.1.7.1.3); the receiver closes. MQQB-3.1.5.5.5-VALIDATE is the "
                "close a case checks of the target."
            ),
        ),
    )
    MQQB_3_1_5_5_1_ACK_BEYOND_SENT = (
        Rule(
            id="MQQB-3.1.5.5.1-ack-beyond-sent",
            section="MS-MQQB 3.1.5.5.1",
            side="both",
            text="SessionHeader.AckSequenceNumber acknowledges UserMessages that were never sent",
            quote=(
                "The protocol MUST set the ReceivedSessionAck ADM attribute to TRUE for each OutgoingMessagePosition "
                "(section 3.1.1.3.1.2) ADM element instance rOutgoingMessagePosition in the OutgoingMessageTable ADM "
                "element where rOutgoingMessagePosition.SequenceNumber is less than or equal to the "
                "SessionHeader.AckSequenceNumber field."
            ),
            note=(
                "Reported of a SessionHeader whose AckSequenceNumber is above the number of UserMessage Packets its "
                'receiver sent: it marks messages that do not exist.  AckSequenceNumber "MUST be set to the '
                'MessageReceivedCount ADM element" (3.1.6.4, 3.1.7.1.3), which counts only what came.  The session '
                "goes on."
            ),
        ),
    )
    MQQB_3_1_5_5_1_ACK_REGRESSED = (
        Rule(
            id="MQQB-3.1.5.5.1-ack-regressed",
            section="MS-MQQB 3.1.6.4",
            side="both",
            text="SessionHeader.AckSequenceNumber (the total received on the session) went backwards",
            quote=(
                "When the Session Ack Send Timer (section 3.1.2.5) expires, if and only if the UnackedReceivedMsgCount "
                "ADM element does not equal 0x0000, a SessionAck Packet (section 2.2.6) MUST be sent to the remote "
                "host with the following values: [...] The SessionHeader.AckSequenceNumber field MUST be set to the "
                "MessageReceivedCount ADM element."
            ),
            note=(
                "Reported of a SessionHeader whose AckSequenceNumber is below one the same end sent earlier on the "
                'session.  MessageReceivedCount only grows on a session (3.1.5.8.2: "MUST be incremented by 1"), and '
                'AckSequenceNumber "specifies the total number of messages that have been received on the session" '
                "(3.1.1.6.1, which states it without a MUST; a piggy-backed SessionHeader is set alike, 3.1.7.1.3).  "
                "The session goes on."
            ),
        ),
    )
    MQQB_3_1_5_5_3_ACK_UNSENT_RECOVERABLE = (
        Rule(
            id="MQQB-3.1.5.5.3-ack-unsent-recoverable",
            section="MS-MQQB 3.1.5.5.3",
            side="both",
            text=(
                "RecoverableMsgAckSeqNumber/RecoverableMsgAckFlags acknowledge recoverable messages that were never "
                "sent"
            ),
            quote=(
                "The protocol MUST delete each OutgoingMessagePosition (section 3.1.1.3.1.2) ADM element instance "
                "rOutgoingMessagePosition from the OutgoingMessageTable ADM element where "
                "rOutgoingMessagePosition.RecoverableSequenceNumber is less than or equal to the "
                "SessionHeader.RecoverableMsgAckSeqNumber field and rOutgoingMessagePosition.TxSequenceNumber is set "
                "to 0x00000000. The protocol MUST delete each OutgoingMessagePosition ADM element instance "
                "sOutgoingMessagePosition from the OutgoingMessageTable ADM element where "
                "sOutgoingMessagePosition.RecoverableSequenceNumber is represented in the "
                "SessionHeader.RecoverableMsgAckFlags field with a bit set to 1 and "
                "sOutgoingMessagePosition.TxSequenceNumber is set to 0x00000000."
            ),
            note=(
                "Reported when RecoverableMsgAckSeqNumber, or the highest number a bit of RecoverableMsgAckFlags "
                "stands for, is above the recoverable messages its receiver sent: every reading of "
                "MQQB-3.1.6.4-RECOVERABLE-ACK-BASE is accepted (the highest of the base and base + k for each bit k), "
                "so only an acknowledgment no reading explains is reported.  The session goes on."
            ),
        ),
    )
    MQQB_3_1_1_6_1_SENDER_ACK_FIELDS = (
        Rule(
            id="MQQB-3.1.1.6.1-sender-ack-fields",
            section="MS-MQQB 3.1.1.6.1",
            side="both",
            text=(
                "a SessionHeader from an endpoint that received no recoverable message has "
                "RecoverableMsgAckSeqNumber 0x0000 and RecoverableMsgAckFlags 0x00000000"
            ),
            level="interpretation",
            quote=(
                "The SessionHeader.RecoverableMsgAckSeqNumber and SessionHeader.RecoverableMsgAckFlags fields specify "
                "the recoverable messages that the receiver has successfully saved to disk since the last session "
                "acknowledgment. [...] The sender MUST set SessionHeader.RecoverableMsgAckSeqNumber to 0x0000. The "
                "sender MUST set SessionHeader.RecoverableMsgAckFlags to 0x00000000."
            ),
            note=(
                "Reported of a SessionHeader with a non-zero RecoverableMsgAckSeqNumber or RecoverableMsgAckFlags from "
                "an end that received no recoverable message.  The readings are those of "
                "MQQB-3.1.6.4-RECOVERABLE-ACK-BASE, which this sentence contradicts once a recoverable message came; "
                "before any came, every reading has RecoverableMsgAckFlags 0 (3.1.5.8.7 sets a bit per recoverable "
                "message received), and only lowest-persisted leaves RecoverableMsgAckSeqNumber open (no message "
                "persisted yet: 0, or the number the next one will have).  The rule grades as the interpretation does: "
                "non-strict."
            ),
            alternatives=(
                Reading(
                    name="lowest-persisted",
                    reading=(
                        "RecoverableMsgAckSeqNumber names the lowest recoverable message persisted and not yet "
                        "acknowledged (3.1.6.4); with none received the flags are 0 and the number is 0 or the next "
                        "one (1)."
                    ),
                ),
                Reading(
                    name="zero-base",
                    reading=(
                        "RecoverableMsgAckSeqNumber is 0 (3.1.1.6.1) and bit k of the flags stands for message k; with "
                        "none received both are 0."
                    ),
                ),
                Reading(
                    name="zero-with-offset-bits",
                    reading=(
                        "RecoverableMsgAckSeqNumber is 0 and the bit of 3.1.5.8.7 is set per message; with none "
                        "received both are 0."
                    ),
                ),
            ),
            frame="MQQB-3.1.6.4-SEND-COUNTS",
        ),
    )
    # 3.1.5.6 / 3.1.5.7 OrderAck, FinalAck
    MQQB_3_1_5_6_ORDER_ACK_UNSENT = (
        Rule(
            id="MQQB-3.1.5.6-order-ack-unsent",
            section="MS-MQQB 3.1.5.6",
            side="both",
            text=(
                "an OrderAck acknowledges a transactional message (TxSequenceID, TxSequenceNumber) that was never sent"
            ),
            quote=(
                "The ADM elements and ADM attributes defined in Session State (section 3.1.1.3.1) MUST be updated as "
                "follows: [...] The incoming OrderAck.MessagePropertiesHeader.MessageBody.TxSequenceNumber field MUST "
                "be compared against the stored value of TxOutgoingSequence.LastAck.SeqNo. When the stored value is "
                "less, it is replaced with the value of the incoming "
                "OrderAck.MessagePropertiesHeader.MessageBody.TxSequenceNumber field."
            ),
            note=(
                "Reported of an OrderAck whose TxSequenceID and TxSequenceNumber name no transactional message its "
                'receiver sent: LastAck.SeqNo would pass messages not yet sent.  The OrderAck Body names "the '
                'transactional sequence number of the message being acknowledged" (2.2.4.1, MUST; '
                "MQQB-2.2.4.1-ORDERACK-BODY).  The session goes on."
            ),
        ),
    )
    MQQB_3_1_1_6_2_ORDER_ACK_ORDER = (
        Rule(
            id="MQQB-3.1.1.6.2-order-ack-order",
            section="MS-MQQB 3.1.1.6.2",
            side="acceptor",
            text="transactional messages are acknowledged strictly in sequence order (OrderAck numbers never go back)",
            quote=(
                "An OrderAck Packet includes a TxSequenceID ([MS-MQMQ] section 2.2.18.1.2) and TxSequenceNumber that "
                "specify the Transactional Message being acknowledged. The receiver MUST acknowledge transactional "
                "messages in sequence order. For example, if the receiver has received messages 1, 2, and 4 within a "
                "sequence, it cannot send an acknowledgment for message 4 until it has received, saved to disk, and "
                "acknowledged message 3."
            ),
            note=(
                "Reported of an OrderAck whose TxSequenceNumber is below one an earlier OrderAck of the same sequence "
                "acknowledged.  The session goes on."
            ),
        ),
    )
    MQQB_3_1_5_7_FINAL_ACK_UNKNOWN = (
        Rule(
            id="MQQB-3.1.5.7-final-ack-unknown",
            section="MS-MQQB 3.1.5.7",
            side="both",
            text="a FinalAck names a MessageID that was never sent on the session",
            level="interpretation",
            quote=(
                "A FinalAck Packet (section 2.2.5) indicates that the message represented by the "
                "FinalAck.MessagePropertiesHeader.MessageBody.MessageID field has been rejected by the receiver or "
                "removed from the destination queue. The message where the UserMessage.UserHeader.MessageID field is "
                "equal to the FinalAck.MessagePropertiesHeader.MessageBody.MessageID field in the OutgoingMessageTable "
                "ADM element or the AwaitingFinalACKTable ADM element MUST be moved to the system journal queue if the "
                "UserMessage.UserHeader.Flags.JP bit field is set and the FinalAck.MessagePropertyHeader.MessageClass "
                "field is equal to MQMSG_CLASS_ACK_RECEIVE."
            ),
            note=(
                "Reported of a FinalAck whose (SourceGUID, MessageID) names no message its receiver sent on the "
                "session.  A FinalAck is end to end and comes when the message leaves the destination queue "
                "(3.1.1.7.3), which may be after the session that carried the message has closed: the spec does not "
                "tie it to one session.  The engines take the first reading; a report is graded non-strict."
            ),
            alternatives=(
                Reading(
                    name="same-session",
                    reading=(
                        "A FinalAck answers a message sent on the session it comes on; one naming a message never sent "
                        "there is the peer's fault."
                    ),
                ),
                Reading(
                    name="any-session",
                    reading=(
                        "A FinalAck may come on any later session to the original sender; 3.1.5.7 looks the message up "
                        "in the OutgoingMessageTable and the AwaitingFinalACKTable, and one it does not find is no "
                        "fault."
                    ),
                ),
            ),
            frame="MQQB-3.1.5.7-wrong-state",
        ),
    )
    # 3.1.5.8 / 3.1.7.1 UserMessage
    MQQB_3_1_7_1_WINDOW_EXCEEDED = (
        Rule(
            id="MQQB-3.1.7.1-window-exceeded",
            section="MS-MQQB 3.1.7.1",
            side="both",
            text="a UserMessage is sent only while UnAckedMessageCount < WindowSize",
            quote=(
                "The following steps MUST be performed to process this event: [...] If the UnAckedMessageCount ADM "
                "element is greater than or equal to the WindowSize ADM element, take no further action."
            ),
            note=(
                "Reported once per window of a sender with more UserMessage Packets unacknowledged than the WindowSize "
                "it sent in its own ConnectionParameters Packet (MQQB-3.1.7.1-WINDOW; the receiver's advertised window "
                "is MQQB-3.1.7.1-PEER-WINDOW).  The session goes on."
            ),
        ),
    )
    MQQB_3_1_7_1_2_EXPIRED = (
        Rule(
            id="MQQB-3.1.7.1.2-expired",
            section="MS-MQQB 3.1.7.1.2",
            side="both",
            text=(
                "the protocol MUST check the message for expiration before sending: an expired message (CURRENT_TIME "
                "- UserHeader.SentTime > BaseHeader.TimeToReachQueue, 0xFFFFFFFF infinite) MUST NOT be sent to the "
                "remote queue manager; one that arrives expired was sent expired (beyond the receiver's clock "
                "tolerance), and the receiver ignores it ([MS-MQMQ] 2.2.19.1)"
            ),
            quote=(
                "The value of the UserMessage.BaseHeader.TimeToReachQueue field controls the message lifetime. The "
                "protocol MUST check the message for expiration before sending. [...] If CURRENT_TIME minus the "
                "UserMessage.UserHeader.SentTime field value is greater than the "
                "UserMessage.BaseHeader.TimeToReachQueue field value, the message has expired. An expired message MUST "
                "be deleted from the OutgoingMessageTable ADM element and MUST NOT be sent to the remote queue manager."
            ),
            note=(
                "Reported of a UserMessage that is expired when it arrives (beyond the receiver's clock tolerance): it "
                'was sent expired.  The receiver ignores it ([MS-MQMQ] 2.2.19.1: "MUST be deleted by a sender and '
                'ignored by a receiver"); the session goes on.'
            ),
        ),
    )
    MQQB_3_1_7_1_1_MESSAGE_ID = (
        Rule(
            id="MQQB-3.1.7.1.1-message-id",
            section="MS-MQQB 3.1.7.1.1",
            side="initiator",
            text=(
                "a Message whose Identifier is 0 gets MessageIdOrdinal before it is sent: UserHeader.MessageID is "
                "never 0"
            ),
            quote=(
                "The protocol MUST serialize the message to be sent by performing the following actions: If "
                "iPosition.MessagePosition.MessageReference.Identifier is set to 0x00000000, the "
                "iPosition.MessagePosition.MessageReference.Identifier MUST be set to the MessageIdOrdinal ADM "
                "element, and the MessageIdOrdinal ADM element MUST be incremented by 1."
            ),
            note="Reported of a UserMessage whose UserHeader.MessageID is 0; the session goes on.",
        ),
    )
    MQQB_3_1_1_5_TX_SEQUENCE = (
        Rule(
            id="MQQB-3.1.1.5-tx-sequence",
            section="MS-MQQB 3.1.1.5",
            side="initiator",
            text=(
                "a newly numbered transactional message has TxSequenceNumber = previous + 1 and "
                "PreviousTxSequenceNumber = TxSequenceNumber - 1 within one TxSequenceID: it never follows a number "
                "that was not sent"
            ),
            quote=(
                "Whenever a transactional message is sent for the first time, the protocol MUST create a new "
                "SEQUENCE_INFO ([MS-MQMQ] section 2.2.5) structure instance and set its values as follows: SeqID to "
                "OutgoingTxSequenceID SeqNo to OutgoingTxSequenceNumber PrevNo to OutgoingTxSequenceNumber - 1"
            ),
            note=(
                "Reported of a transactional message sent for the first time whose TxSequenceNumber does not follow "
                "the last one of its TxSequenceID by 1, or whose PreviousTxSequenceNumber is not TxSequenceNumber - 1 "
                "(3.1.7.1.3 sets the TransactionHeader from the same ADM elements and increments "
                'OutgoingTxSequenceNumber).  Gaps "are allowed" only where messages expired, and a message sent '
                "again bridges them (MQQB-3.1.7.1.3-tx-previous).  The session goes on."
            ),
        ),
    )
    MQMQ_2_2_20_5_TX_NUMBER = (
        Rule(
            id="MQMQ-2.2.20.5-tx-number",
            section="MS-MQMQ 2.2.20.5",
            side="initiator",
            text=(
                "TransactionHeader.TxSequenceNumber has a valid range of 0x00000001-0xFFFFFFFF (the first message of "
                "a sequence is number 1, [MS-MQQB] 3.1.1.5)"
            ),
            close_section="MS-MQQB 3.1.5.1.3",
            codec_field="TransactionHeader.TxSequenceNumber",
            quote=(
                "TxSequenceNumber (4 bytes): A 32-bit unsigned integer that is the message sequence number within the "
                "TxSequenceID sequence. This field MUST be set to the value that represents the message position "
                "within the transactional sequence. The first message within a sequence MUST be set to the value 1. "
                "This field has a valid range from 0x00000001 to 0xFFFFFFFF."
            ),
            note=(
                "Reported of a TransactionHeader with TxSequenceNumber 0; the codec rejects it, and [MS-MQQB] "
                "3.1.5.1.3 closes."
            ),
        ),
    )
    MQQB_3_1_7_1_3_TX_PREVIOUS = (
        Rule(
            id="MQQB-3.1.7.1.3-tx-previous",
            section="MS-MQQB 3.1.7.1.3",
            side="initiator",
            text=(
                "TransactionHeader.PreviousTxSequenceNumber is OutgoingTxSequenceNumber - 1 when first sent, or the "
                "number of an earlier message when resent: always less than TxSequenceNumber"
            ),
            quote=(
                "If the UserMessage Packet ([MS-MQMQ] section 2.2.20) contains a TransactionHeader ([MS-MQMQ] section "
                "2.2.20.5) and the UserMessage.UserHeader.SourceQueueManager field is equal to QueueManager.Identifier "
                "and iPosition.Transmitted is FALSE, the following steps MUST be performed: [...] The "
                "UserMessage.TransactionHeader.PreviousTxSequenceNumber field MUST be set to the "
                "OutgoingTxSequenceNumber ADM element - 1. The UserMessage.TransactionHeader.TxSequenceNumber field "
                "MUST be set to the OutgoingTxSequenceNumber ADM element. [...] If the UserMessage Packet contains a "
                "TransactionHeader and iPosition.Transmitted is TRUE, the TransactionHeader.PreviousTxSequenceNumber "
                "field MUST be set to the TxSequenceNumber ADM element of the previous transactional message in the "
                "OutgoingMessageTable ADM element."
            ),
            note=(
                "Reported of a TransactionHeader whose PreviousTxSequenceNumber is not below its TxSequenceNumber: "
                "neither the first sending nor a resend gives one.  The session goes on."
            ),
        ),
    )
    MQQB_3_1_1_5_PRIOR_SEQUENCE = (
        Rule(
            id="MQQB-3.1.1.5-prior-sequence",
            section="MS-MQQB 3.1.1.5",
            side="initiator",
            text="messages MUST NOT be sent on prior transactional sequences (a TxSequenceID below one already used)",
            quote=(
                "When all the messages within a transactional sequence have been acknowledged, the protocol MUST "
                "increment the OutgoingTxSequenceID.Ordinal by 1 and MUST reset OutgoingTxSequenceNumber to 1. This "
                "process creates a new transactional sequence. Subsequent transactional messages MUST be sent using "
                "the new OutgoingTxSequenceID. Messages MUST NOT be sent on prior transactional sequences."
            ),
            note=(
                "Reported of a transactional message whose TxSequenceID is below one the sender already used; the "
                "session goes on."
            ),
        ),
    )
    MQQB_3_1_1_5_NEW_SEQUENCE = (
        Rule(
            id="MQQB-3.1.1.5-new-sequence",
            section="MS-MQQB 3.1.1.5",
            side="initiator",
            text="a new transactional sequence starts at number 1: its first message has PreviousTxSequenceNumber 0",
            quote=(
                "The first message within a transactional sequence is assigned a sequence number of 1. [...] When all "
                "the messages within a transactional sequence have been acknowledged, the protocol MUST increment the "
                "OutgoingTxSequenceID.Ordinal by 1 and MUST reset OutgoingTxSequenceNumber to 1."
            ),
            note=(
                "Reported of the first message of a new TxSequenceID whose PreviousTxSequenceNumber is not 0 (it "
                "follows no message of its sequence); the session goes on."
            ),
        ),
    )
    MQQB_3_1_5_8_1_DUPLICATE = (
        Rule(
            id="MQQB-3.1.5.8.1-duplicate",
            section="MS-MQQB 3.1.5.8.1",
            side="initiator",
            text=(
                "a UserMessage is sent once per session: the same (SourceQueueManager, MessageID) twice on one "
                "session is a retransmission no timer of the sender allows (3.1.5.8.1 discards it)"
            ),
            level="interpretation",
            quote=(
                "If the message is not transactional and the MessageIDHistoryTable ADM element table contains a "
                "MessageIDHistoryEntry.MessageIdentifier.Ordinal that matches the UserMessage.UserHeader.MessageID "
                "field, the protocol MUST perform the following logic: [...] The protocol MUST discard this message "
                "and perform no further processing."
            ),
            note=(
                "Reported of a non-transactional UserMessage whose (SourceQueueManager, MessageID) came before on the "
                "same session; the receiver discards it and the session goes on.  No sentence forbids the sender to "
                "send it again: the retransmissions the spec names come on a new session (3.1.6.1), but 3.1.5.5.1 "
                "raises Add Message To Dispatch Collection again for every message a SessionAck did not cover.  The "
                "engines take the first reading; a report is graded non-strict."
            ),
            alternatives=(
                Reading(
                    name="once-per-session",
                    reading=(
                        "A sender sends a message once on a session; it sends it again only on a new session, after "
                        "the old one closed (3.1.5.9, 3.1.6.1)."
                    ),
                ),
                Reading(
                    name="redispatch",
                    reading=(
                        "A message a SessionAck did not cover is dispatched again (3.1.5.5.1) and may go out again on "
                        "the same session; the receiver discards the copy (3.1.5.8.1)."
                    ),
                ),
            ),
            frame="MQQB-3.1.5.5.1-MARK",
        ),
    )
    # timers
    MQQB_3_1_6_3_ACK_TIMEOUT = (
        Rule(
            id="MQQB-3.1.6.3-ack-timeout",
            section="MS-MQQB 3.1.6.3",
            side="acceptor",
            text="no session acknowledgment arrived for messages awaiting one within the Session Ack Wait Timer",
            close_section="MS-MQQB 3.1.6.3",
            level="SHOULD",
            quote=(
                "The Session Ack Wait Timer event indicates a timeout while waiting for a session acknowledgment from "
                "the remote host. When the Session Ack Wait Timer (section 3.1.2.4) expires, the protocol SHOULD apply "
                "the following logic to close an idle session: [...] Else if the ReceivedAck ADM element is FALSE, the "
                "protocol MUST close the session as specified in section 3.1.5.9."
            ),
            note=(
                "Reported by an initiator whose Session Ack Wait Timer expired twice with messages awaiting an "
                "acknowledgment and no packet received in between: the acceptor did not acknowledge in time (3.1.6.4, "
                "3.1.5.8.2).  The MUST sits inside logic the protocol SHOULD apply, as in MQQB-3.1.6.3-ACK-TIMEOUT; "
                "the initiator closes."
            ),
        ),
    )
    MQQB_3_1_6_6_INIT_TIMEOUT = (
        Rule(
            id="MQQB-3.1.6.6-init-timeout",
            section="MS-MQQB 3.1.6.6",
            side="both",
            text="session initialization did not complete before the Session Initialization Timer expired",
            close_section="MS-MQQB 3.1.6.6",
            quote=(
                "For the initiator, the Session Initialization Timer Event indicates a time-out while contacting the "
                "acceptor during session initialization. For the acceptor, the Session Initialization Timer Event "
                "indicates a time-out while responding to the initiator during session initialization. When the "
                "Session Initialization Timer (section 3.1.2.1) expires, the protocol MUST close the session as "
                "specified in section 3.1.5.9."
            ),
            note=(
                "Reported of the peer when the engine's own Session Initialization Timer expired before the session "
                "was OPEN (the peer did not send the packet the engine waited for); the engine closes. The timer's "
                'duration is the engine\'s own (3.1.2.1: "implementation-dependent"). MQQB-3.1.6.6-INIT-TIMEOUT is '
                "the close a case checks of the target."
            ),
        ),
    )
    # transport
    MQQB_3_1_5_9_CLOSED_EARLY = (
        Rule(
            id="MQQB-3.1.5.9-closed-early",
            section="MS-MQQB 3.1.5.9",
            side="both",
            text="the transport connection closed before the session reached OPEN (other than after a refusal)",
            level="interpretation",
            quote=(
                "A protocol session is closed by executing the following steps. The protocol does not send a packet to "
                "indicate session closure; instead, the underlying transport connection is simply closed."
            ),
            note=(
                "Reported of an initiator that closed the transport connection before the session was OPEN, without a "
                "refusal, a broken rule or a timer of the engine to explain it.  3.1.5.9 says how a session closes, "
                "not when: an initiator's own Session Initialization Timer (3.1.6.6, its duration "
                "implementation-dependent) closes it too.  The engines take the first reading; a report is graded "
                "non-strict."
            ),
            alternatives=(
                Reading(
                    name="explained-closes",
                    reading=(
                        "A session closes before OPEN only where the spec has it close (a refusal, a rule of "
                        "3.1.5.1-3.1.5.8 broken, a timer of 3.1.6); any other early close is the initiator's fault."
                    ),
                ),
                Reading(
                    name="own-reasons",
                    reading=(
                        "An initiator may give up a session before OPEN for reasons of its own (its own Session "
                        "Initialization Timer, resources); the acceptor closes its end (3.1.7.3)."
                    ),
                ),
            ),
            frame="MQQB-3.1.6.6-INIT-TIMEOUT",
        ),
    )


RULES: dict[str, Rule] = {member: member.rule for member in RuleId}
"""Rule id -> :class:`Rule`, the only place rules and their requirements are defined."""


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
    return {member.rule.codec_field: member for member in RuleId if member.rule.codec_field}


def closing_rules() -> dict[str, str]:
    """Rule id -> the section that closes the session on it, for every rule that closes."""
    return {r.id: r.close_section for r in RULES.values() if r.closes_session}
