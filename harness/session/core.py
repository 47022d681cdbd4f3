"""What the initiator, the acceptor and the observer share: packet intake and the session sequence.

Renders [MS-MQQB] 3.1.5.1 Receiving Any Packet (3.1.5.1.1 identification, 3.1.5.1.2 signature,
3.1.5.1.3 incorrectly formatted packets), 3.1.1.4 Session Message Sequence with the counters of
3.1.3.2 Session Initialization, SessionAck construction (3.1.6.4, 3.1.5.8.7), SessionHeader
processing common to both ends (3.1.5.5, 3.1.5.5.5 Validate Message Counts, 3.1.5.8.4), the
counting of received UserMessages (3.1.5.8.2, 3.1.5.8.7), the Session Ack Send Timer (3.1.2.5,
3.1.6.4) and Closing a Session (3.1.5.9).  The pure rule checks (``check_*``) are used by the
engines and by :class:`~harness.session.observer.Observer` alike.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, MutableSequence
from dataclasses import dataclass
from typing import Any

from construct import Container

import packets
from harness.session.actions import (
    Action,
    CancelTimer,
    Close,
    RuleViolation,
    Send,
    SessionConfig,
    SessionState,
    StartTimer,
    Timer,
)
from harness.session.msgids import MAX_SOURCES, Recent
from harness.session.rules import RuleId, codec_rules, rule
from harness.session.transitions import Role, transition
from packets import GUID, NULL_GUID, Packet, PacketError, PacketKind, StreamSplitter
from packets import session as sp
from packets.base import BASE_HEADER_SIZE, INFINITE, MAX_PACKET_SIZE, SIGNATURE, VERSION_NUMBER
from packets.stream import wire_length

__all__ = [
    "CODEC_RULES",
    "Counters",
    "Finding",
    "SessionEngine",
    "TxSequenceChecker",
    "check_cp_request",
    "check_cp_response",
    "check_ec_request",
    "check_ec_response",
    "check_expiry",
    "check_internal_reserved",
    "check_message_id",
    "check_packet",
    "check_session_header",
    "current_time",
    "time_to_be_received_elapsed",
    "tx_sequence_id",
]

U16 = 0x10000
ACK_FLAG_BITS = 32  # RecoverableMsgAckFlags is a 32-bit field ([MS-MQMQ] 2.2.20.4)
_RESPONSE_PADDING = bytes([sp.RESPONSE_PADDING_BYTE])  # [MS-MQQB] 2.2.3.1: a response's Padding byte

# (rule id, evidence) — what a check finds; the caller adds packet index and direction.
Finding = tuple[str, str]


def tx_sequence_id(value: Any) -> int:
    """A TxSequenceID ([MS-MQMQ] 2.2.18.1.2) as the u64 it is compared as: Ordinal is the low half."""
    if isinstance(value, int):
        return value
    return int(value["Ordinal"]) | (int(value["TimeStamp"]) << 32)


# ---------------------------------------------------------------------------------------------
# Pure checks

# Field rules the codec checks (packets/), by field path, that have a rule id of their own here; any
# other codec finding is MQQB-3.1.5.1.3-malformed.  Either way the packet is discarded (3.1.5.1.3).
CODEC_RULES: dict[str, RuleId] = codec_rules()  # field path -> rule (harness.session.rules)


def check_packet(data: bytes) -> tuple[Packet | None, list[Finding]]:
    """[MS-MQQB] 3.1.5.1: verify the signature (3.1.5.1.2), parse (3.1.5.1.3) and identify
    (3.1.5.1.1) one packet.  Returns the packet (None when it must be discarded) and findings."""
    if len(data) < 16:
        return None, [(RuleId.MQQB_3_1_5_1_3_MALFORMED, f"{len(data)} bytes cannot hold a BaseHeader")]
    version = data[0]
    (signature,) = struct.unpack_from("<I", data, 4)
    if version != VERSION_NUMBER or signature != SIGNATURE:
        return None, [
            (
                RuleId.MQQB_3_1_5_1_2_SIGNATURE,
                f"BaseHeader.VersionNumber 0x{version:02X}, Signature 0x{signature:08X} (expected 0x10, 0x524F494C)",
            )
        ]
    try:
        packet = packets.parse(data, strict=False)
    except Exception as e:  # the codec promises PacketError only; never let a peer crash us
        return None, [(RuleId.MQQB_3_1_5_1_3_MALFORMED, f"undecodable: {e}")]
    if packet.violations:  # every rule the packet breaks, each once (they all close: 3.1.5.1.3)
        by_rule: dict[str, list[str]] = {}
        for v in packet.violations:
            by_rule.setdefault(CODEC_RULES.get(v.field_path, RuleId.MQQB_3_1_5_1_3_MALFORMED), []).append(str(v))
        return None, [(rule_id, "; ".join(found[:3])) for rule_id, found in by_rule.items()]
    if packet.kind == PacketKind.Unknown:
        pt = packet.headers.get("InternalHeader")
        what = f"InternalHeader.Flags 0x{int(pt.Flags):04X}" if pt is not None else "no InternalHeader"
        return None, [(RuleId.MQQB_3_1_5_1_1_UNKNOWN_PACKET, what)]
    return packet, []


def check_ec_response(request: Container | None, response: Packet) -> list[Finding]:
    """An EstablishConnection response against its request ([MS-MQQB] 3.1.5.3.1, 2.2.3.1): padding
    0x5A, ClientGuid/TimeStamp/SE echoed, CS set exactly when the request's ServerGuid was neither
    the acceptor's identifier (the response's ServerGuid) nor GUID_NULL."""
    found: list[Finding] = []
    headers = response.headers
    ec = headers["EstablishConnectionHeader"]
    padding = bytes(ec["Padding"])
    if padding != _RESPONSE_PADDING * len(padding):
        bad = len(padding) - len(padding.lstrip(_RESPONSE_PADDING))  # the first byte that is not 0x5A
        found.append(
            (RuleId.MQQB_2_2_3_1_RESPONSE_PADDING, f"EC reply padding not 0x5A: byte {bad} is 0x{padding[bad]:02X}")
        )
    if request is None:
        return found
    req = request["EstablishConnectionHeader"]
    for name in ("ClientGuid", "TimeStamp"):
        if req[name] != ec[name]:
            found.append((RuleId.MQQB_3_1_5_3_1_EC_ECHO, f"{name} {ec[name]} does not echo the request's {req[name]}"))
    if req["OperatingSystem"].SE != ec["OperatingSystem"].SE:
        found.append((RuleId.MQQB_3_1_5_3_1_EC_ECHO, f"OperatingSystem.SE {ec['OperatingSystem'].SE} not echoed"))
    requested = GUID(req["ServerGuid"])
    must_refuse = not (requested.is_null or requested == GUID(ec["ServerGuid"]))
    refused = bool(headers["InternalHeader"]["Flags"].CS)
    if must_refuse and not refused:  # a valid request MAY still be refused by policy (2.2.1 <12>)
        found.append(
            (
                RuleId.MQQB_3_1_5_3_1_REFUSAL,
                f"CS={int(refused)} but the request asked for ServerGuid {requested} and the acceptor is "
                f"{GUID(ec['ServerGuid'])}",
            )
        )
    return found


def check_internal_reserved(packet: Packet) -> list[Finding]:
    """[MS-MQQB] 2.2.1: InternalHeader.Reserved MUST be zero when sent."""
    internal = packet.headers.get("InternalHeader")
    if internal is not None and int(internal["Reserved"]) != 0:
        return [(RuleId.MQQB_2_2_1_RESERVED, f"InternalHeader.Reserved 0x{int(internal['Reserved']):04X}")]
    return []


def check_ec_request(request: Packet, acceptor: GUID | None = None) -> list[Finding]:
    """An EstablishConnection request ([MS-MQQB] 2.2.3.1, 3.1.5.2.3): CS 0, ClientGuid not GUID_NULL,
    Reserved 0, and (when the acceptor's identifier is known) ServerGuid that identifier or GUID_NULL."""
    found = check_internal_reserved(request)
    headers = request.headers
    ec = headers["EstablishConnectionHeader"]
    if headers["InternalHeader"]["Flags"].CS:
        found.append((RuleId.MQQB_3_1_5_2_3_EC_REQUEST, "EstablishConnection request with InternalHeader.Flags.CS=1"))
    if GUID(ec["ClientGuid"]).is_null:
        found.append((RuleId.MQQB_2_2_3_1_CLIENT_GUID, "EstablishConnectionHeader.ClientGuid is GUID_NULL"))
    server = GUID(ec["ServerGuid"])
    if acceptor is not None and not (server.is_null or server == acceptor):
        found.append(
            (
                RuleId.MQQB_2_2_3_1_SERVER_GUID,
                f"EstablishConnectionHeader.ServerGuid {server}, the acceptor is {acceptor}",
            )
        )
    if int(ec["Reserved"]) != 0:
        found.append((RuleId.MQQB_2_2_3_1_RESERVED, f"EstablishConnectionHeader.Reserved 0x{int(ec['Reserved']):04X}"))
    return found


def check_cp_request(request: Packet) -> list[Finding]:
    """A ConnectionParameters request ([MS-MQQB] 3.1.5.3.2, 2.2.2.1): CS 0, Reserved 0 (the timeout
    ranges are codec rules: :data:`CODEC_RULES`)."""
    found = check_internal_reserved(request)
    headers = request.headers
    if headers["InternalHeader"]["Flags"].CS:
        found.append((RuleId.MQQB_3_1_5_3_2_CP_REQUEST, "ConnectionParameters request with InternalHeader.Flags.CS=1"))
    cp = headers["ConnectionParametersHeader"]
    if int(cp["Reserved"]) != 0:
        found.append((RuleId.MQQB_2_2_2_1_RESERVED, f"ConnectionParametersHeader.Reserved 0x{int(cp['Reserved']):04X}"))
    return found


def check_message_id(packet: Packet) -> list[Finding]:
    """[MS-MQQB] 3.1.7.1.1: a sent UserMessage never has UserHeader.MessageID 0."""
    if int(packet.headers["UserHeader"]["MessageID"]) == 0:
        return [(RuleId.MQQB_3_1_7_1_1_MESSAGE_ID, "UserHeader.MessageID is 0")]
    return []


def current_time(wall_clock_seconds: float) -> int:
    """CURRENT_TIME of [MS-MQQB] 3.1.7.1.2 / [MS-MQMQ] 2.2.19.1: whole seconds since 1970-01-01 UTC."""
    return int(wall_clock_seconds)


def check_expiry(packet: Packet, now: int, tolerance: int = 0) -> tuple[bool, list[Finding]]:
    """[MS-MQMQ] 2.2.19.1 and [MS-MQQB] 3.1.7.1.2 for a UserMessage Packet that arrived at
    CURRENT_TIME ``now``: (expired, findings).

    [MS-MQMQ] 2.2.19.1: "If CURRENT_TIME - UserMessage.UserHeader.SentTime is greater than the value
    of this field, then the UserMessage Packet has expired and MUST be deleted by a sender and
    ignored by a receiver"; 0xFFFFFFFF "indicates an infinite time".  ``expired`` says the receiver
    ignores the message.  [MS-MQQB] 3.1.7.1.2 makes the check the sender's duty ("An expired message
    ... MUST NOT be sent to the remote queue manager"), so an expired arrival is the sender's
    violation, reported when it is expired by more than ``tolerance`` seconds (the clocks of two
    machines, whole seconds, the time on the wire)."""
    headers = packet.headers
    ttrq = int(headers["BaseHeader"]["TimeToReachQueue"])
    if ttrq == INFINITE:
        return False, []
    sent = int(headers["UserHeader"]["SentTime"])
    age = now - sent
    if age <= ttrq:
        return False, []
    if age <= ttrq + tolerance:
        return True, []
    return True, [
        (
            RuleId.MQQB_3_1_7_1_2_EXPIRED,
            f"expired on arrival: CURRENT_TIME {now} - UserHeader.SentTime {sent} = {age} s > "
            f"BaseHeader.TimeToReachQueue {ttrq} s; the sender MUST NOT send an expired message",
        )
    ]


def time_to_be_received_elapsed(packet: Packet, now: int) -> bool:
    """[MS-MQMQ] 2.2.19.2 UserHeader.TimeToBeReceived (0xFFFFFFFF infinite) is "measured from when
    the sending protocol receives the message", which is no later than SentTime, "If the value is
    exceeded, the message MUST be removed from the destination queue": True when CURRENT_TIME -
    SentTime already exceeds it on arrival, so the message never stays in a queue.  No sender rule
    is broken (3.1.7.1.2 checks TimeToReachQueue only)."""
    uh = packet.headers["UserHeader"]
    ttbr = int(uh["TimeToBeReceived"])
    return ttbr != INFINITE and now - int(uh["SentTime"]) > ttbr


class TxSequenceChecker:
    """What a receiver sees of a sender's transactional sequences ([MS-MQQB] 3.1.1.5, 3.1.7.1.3),
    per sending queue manager and across sessions: the highest TxSequenceID and, within it, the
    highest TxSequenceNumber seen (accepted or not).  Only what any conformant sender satisfies is
    checked: a receiver that meets a sender mid-sequence (it started later) learns before it judges.
    At most :data:`~harness.session.msgids.MAX_SOURCES` senders are kept, the least recently seen
    forgotten (:class:`~harness.session.msgids.Recent`): one met again is met as for the first time,
    so no rule that needs its past (3.1.1.5 prior, new and next sequence) is judged on it."""

    def __init__(self) -> None:
        self.seen: Recent = Recent(MAX_SOURCES)  # sender -> (TxSequenceID, highest TxSequenceNumber)

    def check(self, sender: bytes, th: Container) -> list[Finding]:
        seq_id = tx_sequence_id(th["TxSequenceID"])
        number, previous = int(th["TxSequenceNumber"]), int(th["PreviousTxSequenceNumber"])
        found: list[Finding] = []
        if number == 0:
            found.append((RuleId.MQMQ_2_2_20_5_TX_NUMBER, f"TxSequenceNumber 0 in sequence {seq_id:#x}"))
        elif previous >= number:
            found.append(
                (RuleId.MQQB_3_1_7_1_3_TX_PREVIOUS, f"PreviousTxSequenceNumber {previous} >= TxSequenceNumber {number}")
            )
        known = self.seen.get(sender)
        if known is not None:
            known_id, highest = known
            if seq_id < known_id:
                found.append(
                    (
                        RuleId.MQQB_3_1_1_5_PRIOR_SEQUENCE,
                        f"TxSequenceID {seq_id:#x} after sequence {known_id:#x} was used",
                    )
                )
                return found
            if seq_id > known_id and previous != 0:
                found.append(
                    (
                        RuleId.MQQB_3_1_1_5_NEW_SEQUENCE,
                        f"first message of sequence {seq_id:#x} has PreviousTxSequenceNumber {previous}",
                    )
                )
            elif seq_id == known_id and number > highest and highest < previous < number:
                found.append(
                    (
                        RuleId.MQQB_3_1_1_5_TX_SEQUENCE,
                        f"TxSequenceNumber {number} follows {previous}, but the highest sent so far is {highest}",
                    )
                )
            if seq_id == known_id:
                self.seen[sender] = (seq_id, max(highest, number))
                return found
        self.seen[sender] = (seq_id, number)
        return found


def check_cp_response(request: Container | None, response: Packet) -> list[Finding]:
    """A ConnectionParameters response ([MS-MQQB] 3.1.5.4.1): CS 0, timeouts echoed."""
    found: list[Finding] = []
    headers = response.headers
    if headers["InternalHeader"]["Flags"].CS:
        found.append((RuleId.MQQB_3_1_5_4_1_CP_ECHO, "ConnectionParameters response has CS=1"))
    if request is not None:
        req, cp = request["ConnectionParametersHeader"], headers["ConnectionParametersHeader"]
        for name in ("RecoverableAckTimeout", "AckTimeout"):
            if req[name] != cp[name]:
                found.append(
                    (RuleId.MQQB_3_1_5_4_1_CP_ECHO, f"{name} {cp[name]} does not echo the request's {req[name]}")
                )
    return found


def check_session_header(
    sh: Container,
    *,
    sent: int,
    recoverable_sent: int,
    received: int,
    recoverable_received: int,
    last_ack: int,
) -> list[Finding]:
    """A SessionHeader received by an endpoint that has sent ``sent`` UserMessages (``recoverable_sent``
    recoverable) and received ``received`` (``recoverable_received``) on this session.

    3.1.5.5.5: UserMsgSequenceNumber/RecoverableMsgSeqNumber equal the receiver's counts (the
    only finding that closes the session, always first when present); 3.1.5.5.1/3.1.1.6.1:
    AckSequenceNumber within what was sent and not going back; 3.1.5.5.3: recoverable
    acknowledgments only for recoverable messages sent."""
    found: list[Finding] = []
    user_seq, recoverable_seq = sh["UserMsgSequenceNumber"], sh["RecoverableMsgSeqNumber"]
    if user_seq != received % U16 or recoverable_seq != recoverable_received % U16:
        found.append(
            (
                RuleId.MQQB_3_1_5_5_5_COUNT_MISMATCH,
                f"SessionHeader.UserMsgSequenceNumber {user_seq}/RecoverableMsgSeqNumber "
                f"{recoverable_seq} but {received % U16}/{recoverable_received % U16} "
                f"UserMessages (all/recoverable) were received from that endpoint",
            )
        )
    ack = int(sh["AckSequenceNumber"])
    if ack > sent % U16 and sent < U16:
        found.append(
            (
                RuleId.MQQB_3_1_5_5_1_ACK_BEYOND_SENT,
                f"SessionAck.AckSequenceNumber {ack} but only {sent} UserMessages were sent",
            )
        )
    elif ack < last_ack and sent < U16:
        found.append((RuleId.MQQB_3_1_5_5_1_ACK_REGRESSED, f"AckSequenceNumber {ack} after {last_ack}"))
    base, flags = int(sh["RecoverableMsgAckSeqNumber"]), int(sh["RecoverableMsgAckFlags"])
    acked = flags & ((1 << ACK_FLAG_BITS) - 1)  # bit n acknowledges recoverable message base + n (3.1.5.8.7)
    highest = base + acked.bit_length() - 1 if acked else base
    if highest > recoverable_sent and recoverable_sent < U16:
        found.append(
            (
                RuleId.MQQB_3_1_5_5_3_ACK_UNSENT_RECOVERABLE,
                f"RecoverableMsgAckSeqNumber {base} with flags 0x{flags:08X} acknowledge recoverable message "
                f"{highest} but only {recoverable_sent} were sent",
            )
        )
    elif recoverable_sent == 0 and (base or flags):
        found.append(
            (
                RuleId.MQQB_3_1_1_6_1_SENDER_ACK_FIELDS,
                f"RecoverableMsgAckSeqNumber {base}, RecoverableMsgAckFlags 0x{flags:08X} but no recoverable "
                f"message was sent to that endpoint",
            )
        )
    return found


# ---------------------------------------------------------------------------------------------
# The byte order of BaseHeader.Signature (MQQB-3.1.5.1.2-SIGNATURE-BYTE-ORDER)

SIGNATURE_LITTLE_ENDIAN = struct.pack("<I", SIGNATURE)  # 4C 49 4F 52, the example frames' bytes
SIGNATURE_BIG_ENDIAN = struct.pack(">I", SIGNATURE)  # 52 4F 49 4C: 0x524F494C "(big-endian order)"


class ByteSwappedSignatures:
    """For an end that takes the BaseHeader.Signature bytes 52 4F 49 4C as valid too (the reading
    big-endian of MQQB-3.1.5.1.2-SIGNATURE-BYTE-ORDER): at each packet boundary of a stream,
    those bytes are read as the Signature 0x524F494C, so that framing (packets.StreamSplitter) and
    parsing see a valid packet.  Bytes of a BaseHeader not complete yet are held back (the
    splitter would wait for them as well); after a BaseHeader that cannot start a packet the
    rest of the stream passes unchanged, for the splitter to reject."""

    def __init__(self) -> None:
        self._held = b""
        self._skip = 0  # bytes of the current packet still to pass
        self._through = False  # a framing error: everything passes

    @property
    def held(self) -> int:
        return len(self._held)

    def feed(self, data: bytes) -> bytes:
        if self._through:
            return data
        buf, self._held = self._held + bytes(data), b""
        out = bytearray()
        i = 0
        while i < len(buf):
            if self._skip:
                n = min(self._skip, len(buf) - i)
                out += buf[i : i + n]
                i += n
                self._skip -= n
                continue
            if len(buf) - i < BASE_HEADER_SIZE:
                self._held = buf[i:]
                break
            header = bytearray(buf[i : i + BASE_HEADER_SIZE])
            if header[4:8] == SIGNATURE_BIG_ENDIAN:
                header[4:8] = SIGNATURE_LITTLE_ENDIAN
            try:
                length = wire_length(bytes(header), 0, MAX_PACKET_SIZE)
            except PacketError:
                out += header + buf[i + BASE_HEADER_SIZE :]
                self._through = True
                break
            out += header
            i += BASE_HEADER_SIZE
            self._skip = length - BASE_HEADER_SIZE
        return bytes(out)


# ---------------------------------------------------------------------------------------------
# Session sequence counters


@dataclass
class Counters:
    """The per-session counts of [MS-MQQB] 3.1.1.4 (u16 on the wire), initialized by 3.1.3.2."""

    MessageSentCount: int = 0
    RecoverableMessageSentCount: int = 0
    MessageReceivedCount: int = 0
    RecoverableMessageReceivedCount: int = 0
    RecoverableMsgAckFlags: int = 0
    LastAckedRecoverableMsgSeqNumber: int = 0
    UnackedReceivedMsgCount: int = 0

    def session_header(self, window_size: int) -> Container:
        """SessionHeader fields of an acknowledgment (3.1.6.4, 3.1.5.8.7, 3.1.7.1.3).

        RecoverableMsgAckSeqNumber is "the lowest unacknowledged recoverable message sequence
        number that has been persisted": bit 0 of RecoverableMsgAckFlags stands for
        LastAckedRecoverableMsgSeqNumber + 1 (3.1.5.8.7), so that is the base when a bit is set;
        with no bit set the base stays at the last acknowledged number (0 when none; FRAME 8),
        which 3.1.5.5.3's "less than or equal" acknowledges again harmlessly."""
        base = self.LastAckedRecoverableMsgSeqNumber + (1 if self.RecoverableMsgAckFlags else 0)
        return Container(
            AckSequenceNumber=self.MessageReceivedCount % U16,
            RecoverableMsgAckSeqNumber=base % U16,
            RecoverableMsgAckFlags=self.RecoverableMsgAckFlags,
            UserMsgSequenceNumber=self.MessageSentCount % U16,
            RecoverableMsgSeqNumber=self.RecoverableMessageSentCount % U16,
            WindowSize=max(1, window_size),
            Reserved=0,
        )

    def acknowledged(self) -> None:
        """After a SessionHeader went out (3.1.6.4): nothing left to acknowledge."""
        self.RecoverableMsgAckFlags = 0
        self.UnackedReceivedMsgCount = 0
        self.LastAckedRecoverableMsgSeqNumber = self.RecoverableMessageReceivedCount


# ---------------------------------------------------------------------------------------------
# The engine base


class SessionEngine:
    """State and behaviour common to :class:`Initiator` and :class:`Acceptor` (sans-IO).

    Every public event handler returns the list of actions to perform, in order.  The engine
    tracks which timers it started so that "stop all timers" (3.1.5.9) cancels exactly those, and
    ignores a ``timer_fired`` for a timer it does not consider running (a late expiry).

    Policy: every rule the peer breaks is reported (:meth:`_violation`), and the session is closed
    exactly when the rule's ``closes_session`` says the spec closes it
    (:data:`harness.session.rules.RULES`); handlers never decide that themselves.
    ``wall_clock`` gives CURRENT_TIME (seconds since 1970, UTC) for message expiration
    ([MS-MQMQ] 2.2.19.1); without it received messages are not checked for expiration.
    """

    role = "engine"
    peer_direction = ""  # the direction of the packets this end receives: "c2s" (acceptor) or "s2c" (initiator)

    ROLE: Role  # "initiator" or "acceptor": its rows of the transition table

    def __init__(
        self,
        identifier: GUID | bytes | str,
        config: SessionConfig | None,
        clock: Callable[[], float],
        wall_clock: Callable[[], float] | None = None,
    ):
        self.identifier = GUID(identifier)  # QueueManager.Identifier
        self.config = config or SessionConfig()
        self.clock = clock
        self.wall_clock = wall_clock
        self.SessionState = SessionState.CLOSED
        self.counters = Counters()
        self.RemoteQMGuid: GUID = NULL_GUID
        self.WindowSize = self.config.window_size
        self.ReceivedWindowSize = self.config.window_size
        self.AckWaitTimeout = self.config.ack_wait_timeout_ms
        self.RecoverableAckSendTimeout = 0xFFFFFFFF
        self.SessionActive = False
        self.ReceivedAck = False
        self.violations: MutableSequence[RuleViolation] = []
        self.expired_ignored = 0  # UserMessages ignored as expired ([MS-MQMQ] 2.2.19.1), python-only
        self.packets_received = 0  # python-only: packets taken from this connection's stream
        self._last_ack_received = 0
        self._last_ack_sent = 0
        self._timers: set[str] = set()
        self._timer_started: dict[str, tuple[float, float]] = {}  # timer -> (clock when started, seconds)
        self._out: list[Action] = []
        self._splitter = StreamSplitter()
        self._swapped: ByteSwappedSignatures | None = None  # see accepts_byte_swapped_signature
        self._transport = False  # a transport connection is attached

    # -- plumbing ------------------------------------------------------------------------------

    def _take(self) -> list[Action]:
        out, self._out = self._out, []
        return out

    def _start_timer(self, name: str, seconds: float) -> None:
        self._timers.add(name)
        self._timer_started[name] = (self.clock(), seconds)
        self._out.append(StartTimer(name, seconds))

    def _elapsed_fraction(self, name: str) -> float:
        """How much of a running timer's duration has elapsed (0 when it is not running)."""
        if name not in self._timers or name not in self._timer_started:
            return 0.0
        started, seconds = self._timer_started[name]
        return (self.clock() - started) / seconds if seconds > 0 else 1.0

    def _start_if_stopped(self, name: str, seconds: float) -> None:
        if name not in self._timers:
            self._start_timer(name, seconds)

    def _stop_timer(self, name: str) -> None:
        if name in self._timers:
            self._timers.discard(name)
            self._out.append(CancelTimer(name))

    def _stop_all_timers(self, keep: Iterable[str] = ()) -> None:
        for name in sorted(self._timers - set(keep)):
            self._stop_timer(name)

    @property
    def running_timers(self) -> frozenset[str]:
        """Timers this engine started and has not stopped (python-only, for wrappers and tests)."""
        return frozenset(self._timers)

    def _violation(self, rule_id: str, evidence: str, index: int = -1) -> bool:
        """Report a broken rule; close the session when the rule says the spec closes it
        (``Rule.closes_session``).  True when the session is closed (the caller stops)."""
        v = RuleViolation.of(rule_id, index, evidence, self.peer_direction)
        self.violations.append(v)
        self._out.append(v)
        r = rule(rule_id)
        if r.closes_session:
            self._close(f"packet {index}: {evidence}" if index >= 0 else evidence, r.close_section)
        return not self._transport

    def _report(self, findings: Iterable[Finding], index: int = -1) -> bool:
        """Report every finding; the first one whose rule closes the session closes it after all
        are reported.  True when the session is closed."""
        closing: tuple[str, str] | None = None
        for rule_id, evidence in findings:
            v = RuleViolation.of(rule_id, index, evidence, self.peer_direction)
            self.violations.append(v)
            self._out.append(v)
            if closing is None and rule(rule_id).closes_session:
                closing = (rule_id, evidence)
        if closing is not None:
            self._close(f"packet {index}: {closing[1]}" if index >= 0 else closing[1], rule(closing[0]).close_section)
        return not self._transport

    def _expired(self, packet: Packet, index: int) -> bool:
        """Message expiration of a received UserMessage Packet ([MS-MQMQ] 2.2.19.1: an expired one
        is ignored by a receiver; [MS-MQQB] 3.1.7.1.2: sending it was the sender's violation).
        True when the message is to be ignored.  Needs ``wall_clock``."""
        if self.wall_clock is None:
            return False
        expired, findings = check_expiry(packet, current_time(self.wall_clock()), self.config.expiry_tolerance)
        self._report(findings, index)
        if expired:
            self.expired_ignored += 1
        return expired

    def _send_packet(self, headers: Container, kind: PacketKind) -> None:
        self._out.append(Send(self._encode(headers), kind))

    def _encode(self, headers: Container) -> bytes:
        return packets.build(headers)

    def _session_initialization(self) -> None:
        """[MS-MQQB] 3.1.3.2 Session Initialization (the parts every session has)."""
        self.counters = Counters()
        self._last_ack_received = 0
        self._last_ack_sent = 0  # MessageReceivedCount when this end last sent a SessionHeader
        for name in (Timer.SessionAckWait, Timer.SessionAckSend, Timer.TransactionalAckWait, Timer.OrderAckSend):
            self._stop_timer(name)
        self._start_timer(Timer.SessionCleanup, self.config.session_cleanup)
        self.WindowSize = self.config.window_size
        self.ReceivedWindowSize = self.config.window_size
        self.SessionActive = False
        self.ReceivedAck = False
        self.AckWaitTimeout = self.config.ack_wait_timeout_ms
        self.RecoverableAckSendTimeout = 0xFFFFFFFF
        self.SessionState = SessionState.WAITING_EC_MSG
        self._splitter = StreamSplitter()
        self._swapped = ByteSwappedSignatures() if self.accepts_byte_swapped_signature() else None
        self.packets_received = 0
        self._transport = True

    # -- readings: where this end takes its reading of an interpretation --------------------------

    def accepts_byte_swapped_signature(self) -> bool:
        """MQQB-3.1.5.1.2-SIGNATURE-BYTE-ORDER ([MS-MQQB] 3.1.5.1.2: "the BaseHeader.Signature field
        is set to 0x524F494C (big-endian order)"; 2.2: little-endian byte order): whether a packet
        whose Signature bytes are 52 4F 49 4C is valid too.  The reference reads little-endian
        (False: those bytes are invalid, the packet is discarded and the session closed); True
        reads them as the Signature written in big-endian order (:class:`ByteSwappedSignatures`)."""
        return False

    def field_rule_tolerated(self, rule_id: str) -> bool:
        """MQQB-2.2.2.1-recoverable-ack-timeout, MQQB-2.2.2.1-ack-timeout ([MS-MQQB] 2.2.2.1 gives
        each timeout's valid range without a MUST): whether a packet the codec rejects for this field
        rule only is taken rather than discarded.  The reference (outside-is-malformed): False, the
        packet does not conform to section 2 and 3.1.5.1.3 discards it and closes; True takes it
        (range-informative) and reports nothing."""
        return False

    def recoverable_ack_fields(self, lowest: int, flags: int) -> tuple[int, int]:
        """MQQB-3.1.6.4-RECOVERABLE-ACK-BASE (3.1.6.4: RecoverableMsgAckSeqNumber "MUST be set to the
        lowest unacknowledged recoverable message sequence number that has been persisted";
        3.1.1.6.1: "The sender MUST set SessionHeader.RecoverableMsgAckSeqNumber to 0x0000"):
        (RecoverableMsgAckSeqNumber, RecoverableMsgAckFlags) of a SessionHeader this end sends,
        given the reference's (lowest-persisted: ``lowest``, whose bit 0 of ``flags`` stands for
        it, 3.1.5.8.7).  Unchanged here."""
        return lowest, flags

    def _session_header(self) -> Container:
        """The SessionHeader of an acknowledgment (3.1.6.4), with this end's recoverable fields."""
        sh = self.counters.session_header(self.WindowSize)
        sh.RecoverableMsgAckSeqNumber, sh.RecoverableMsgAckFlags = self.recoverable_ack_fields(
            int(sh.RecoverableMsgAckSeqNumber), int(sh.RecoverableMsgAckFlags)
        )
        return sh

    # -- events --------------------------------------------------------------------------------

    def receive_data(self, data: bytes) -> list[Action]:
        """Bytes from the transport connection, in any fragmentation ([MS-MQQB] 2.1.1, 3.1.5.1)."""
        if not self._transport or not data:
            return self._take()
        if self._swapped is not None:
            data = self._swapped.feed(data)
        try:
            chunks = self._splitter.feed(data)
        except PacketError as e:
            rule_id = (
                RuleId.MQQB_3_1_5_1_2_SIGNATURE
                if e.field_path == "BaseHeader.Signature"
                else RuleId.MQQB_3_1_5_1_3_MALFORMED
            )
            self._violation(rule_id, f"unreadable stream: {e}", self.packets_received)
            return self._take()
        for chunk in chunks:
            if not self._transport:
                break
            self._receive_packet(chunk.data)
        return self._take()

    def _receive_packet(self, data: bytes) -> None:
        """[MS-MQQB] 3.1.5.1 Receiving Any Packet: ReceivedAck, signature, format, then by type."""
        index = self.packets_received
        self.packets_received += 1
        self.ReceivedAck = True
        packet, findings = check_packet(data)
        if packet is None and findings and all(self.field_rule_tolerated(r) for r, _ in findings):
            packet, findings = packets.parse(data, strict=False), []  # taken as it is (range-informative)
        if packet is None:  # discarded: every finding is a rule whose break closes (3.1.5.1.2, 3.1.5.1.3)
            self._report(findings, index)
            return
        getattr(self, f"_on_{packet.kind.name}")(packet, index)
        self._after_packet(index)

    def _after_packet(self, index: int) -> None:
        """Hook run after each received packet was processed."""

    def _accepts(self, kind: PacketKind, packet: Packet, index: int) -> bool:
        """The transition table (harness.session.transitions): a packet of ``kind`` is accepted in
        this SessionState, or it breaks the first line of 3.1.5.3-3.1.5.8 (the rule closes)."""
        row = transition(self.ROLE, self.SessionState, kind)
        if row.rule is not None:
            self._violation(row.rule, f"{packet.kind} in SessionState {self.SessionState.value}", index)
        return row.accepted

    def connection_lost(self) -> list[Action]:
        """The transport connection closed ([MS-MQQB] 3.1.7.3 Handling a Network Disconnect -> 3.1.5.9)."""
        if self._transport:
            self._connection_lost()
            self._closing(peer_closed=True)
            self._close_steps()
        return self._take()

    def _connection_lost(self) -> None:
        """Hook: the peer closed the transport while this end still had it open."""

    # -- 3.1.5.5 Receiving a SessionAck Packet (and 3.1.5.8.4) -----------------------------------

    def _on_SessionAck(self, packet: Packet, index: int) -> None:
        """[MS-MQQB] 3.1.5.5 Receiving a SessionAck Packet."""
        if not self._accepts(PacketKind.SessionAck, packet, index):
            return
        self._process_session_header(packet.SessionHeader, index)

    def _process_session_header(self, sh: Container, index: int) -> None:
        """[MS-MQQB] 3.1.5.5.1-3.1.5.5.5 for one SessionHeader (stand-alone or piggy-backed)."""
        c = self.counters
        findings = check_session_header(
            sh,
            sent=c.MessageSentCount,
            recoverable_sent=c.RecoverableMessageSentCount,
            received=c.MessageReceivedCount,
            recoverable_received=c.RecoverableMessageReceivedCount,
            last_ack=self._last_ack_received,
        )
        counts = [f for f in findings if f[0] == RuleId.MQQB_3_1_5_5_5_COUNT_MISMATCH]
        self._report([f for f in findings if f[0] != RuleId.MQQB_3_1_5_5_5_COUNT_MISMATCH], index)
        if not self._transport:
            return
        self._last_ack_received = int(sh.AckSequenceNumber)
        self.ReceivedWindowSize = max(1, int(sh.WindowSize))
        self._session_acknowledged(sh)  # 3.1.5.5.1-3.1.5.5.4
        if self._report(counts, index):  # 3.1.5.5.5 Validate Message Counts comes last
            return
        self._after_session_ack()

    def _session_acknowledged(self, sh: Container) -> None:
        """3.1.5.5.1-3.1.5.5.4 against the OutgoingMessageTable (the initiator has one)."""

    def _after_session_ack(self) -> None:
        """3.1.5.5.5's timer restart and the sender's next dispatch (the initiator)."""

    # -- 3.1.5.8.2 / 3.1.5.8.7 counting a received UserMessage ------------------------------------

    def _ack_threshold(self) -> int:
        """Acknowledge by count once this many UserMessages are unacknowledged: half the window the
        sender works with (3.1.1.6.1 "based on message count and session window size")."""
        return max(1, min(self.WindowSize, self.ReceivedWindowSize) // 2)

    def _count_received(self, packet: Packet, recoverable: bool) -> None:
        """[MS-MQQB] 3.1.5.8.2 (MessageReceivedCount, UnackedReceivedMsgCount, Session Ack Send Timer,
        SessionActive) and 3.1.5.8.7 Recoverable Message Processing."""
        c = self.counters
        c.MessageReceivedCount += 1
        c.UnackedReceivedMsgCount += 1
        self._start_if_stopped(Timer.SessionAckSend, self.AckWaitTimeout / 2000)
        self.SessionActive = True
        if recoverable:
            if c.RecoverableMessageReceivedCount - c.LastAckedRecoverableMsgSeqNumber >= ACK_FLAG_BITS:
                self._send_session_ack()  # immediately: the flags are full
            c.RecoverableMessageReceivedCount += 1
            if c.RecoverableMsgAckFlags == 0:
                self._stop_timer(Timer.SessionAckSend)
                self._start_timer(Timer.SessionAckSend, min(self.RecoverableAckSendTimeout, 0x1D4C0) / 1000)
            c.RecoverableMsgAckFlags |= 1 << (
                c.RecoverableMessageReceivedCount - c.LastAckedRecoverableMsgSeqNumber - 1
            )

    def _maybe_ack_by_count(self) -> None:
        if self.counters.UnackedReceivedMsgCount >= self._ack_threshold():
            self._send_session_ack()
            self._stop_timer(Timer.SessionAckSend)

    def _send_session_ack(self) -> None:
        """Send a SessionAck Packet ([MS-MQQB] 3.1.6.4 / 3.1.5.8.7) and reset the ack state."""
        sh = self._session_header()
        packet = sp.session_ack()
        packet.SessionHeader = sh
        self._send_packet(packet, PacketKind.SessionAck)
        self._last_ack_sent = self.counters.MessageReceivedCount
        self.counters.acknowledged()

    def _session_ack_send_timer(self) -> None:
        """[MS-MQQB] 3.1.6.4 Session Ack Send Timer Event: send iff UnackedReceivedMsgCount != 0.

        The timer is started again only while something is left to acknowledge (3.1.2.5), which
        after sending is nothing; the next received UserMessage starts it."""
        if self.counters.UnackedReceivedMsgCount != 0 and self.SessionState == SessionState.OPEN:
            self._send_session_ack()

    # -- 3.1.5.9 Closing a Session -----------------------------------------------------------------

    def _closing(self, peer_closed: bool = False) -> None:
        """Hook before the common close steps (the initiator's OutgoingQueue bookkeeping)."""

    def _close(self, reason: str, section: str) -> None:
        """[MS-MQQB] 3.1.5.9 Closing a Session: close the transport, stop all timers, CLOSED."""
        if not self._transport:
            return
        self._closing()
        self._out.append(Close(reason, section))
        self._close_steps()

    def _close_steps(self) -> None:
        self._transport = False
        self._stop_all_timers(keep=self._timers_kept_on_close())
        self.SessionState = SessionState.CLOSED
        self._closed()

    def _timers_kept_on_close(self) -> Iterable[str]:
        return ()

    def _closed(self) -> None:
        """Hook after CLOSED (the initiator may go to WAITING_RECONNECT)."""

    # -- timers ------------------------------------------------------------------------------------

    def timer_fired(self, name: str) -> list[Action]:
        """A timer this engine started has expired ([MS-MQQB] 3.1.6); unknown or stopped ones are ignored."""
        if name not in self._timers:
            return self._take()
        self._timers.discard(name)
        handler = getattr(self, f"_timer_{name}", None)
        if handler is not None:
            handler()
        return self._take()

    def _timer_SessionAckSend(self) -> None:
        self._session_ack_send_timer()

    def _timer_SessionInitialization(self) -> None:
        """[MS-MQQB] 3.1.6.6 Session Initialization Timer Event: close (the rule closes)."""
        self._violation(RuleId.MQQB_3_1_6_6_INIT_TIMEOUT, f"SessionState still {self.SessionState.value}")

    def _timer_SessionCleanup(self) -> None:
        """[MS-MQQB] 3.1.6.2 Session Cleanup Timer Event: close an idle session."""
        if not self.SessionActive:
            self._close("idle session", "MS-MQQB 3.1.6.2")
        else:
            self.SessionActive = False
            self._start_timer(Timer.SessionCleanup, self.config.session_cleanup)
