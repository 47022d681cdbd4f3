"""The internal packets of an MSMQ binary session, the Ping Packet, and packet identification.

Renders [MS-MQQB] 2.2.1 InternalHeader, 2.2.2 ConnectionParameters Packet (2.2.2.1
ConnectionParametersHeader), 2.2.3 EstablishConnection Packet (2.2.3.1
EstablishConnectionHeader), 2.2.4.1 OrderAck Body, 2.2.5.1 FinalAck Body, 2.2.6 SessionAck Packet
(with the [MS-MQMQ] 2.2.20.4 SessionHeader), 2.2.7 Ping Packet, and 3.1.5.1.1 Identifying Packet
Type; plus the rules of [MS-MQMQ] 2.2.19.1 that apply to a BaseHeader outside a UserMessage
Packet.  The OrderAck and FinalAck Packets (2.2.4, 2.2.5) are UserMessage-shaped: their headers
are parsed by the UserMessage layout and only their 36-byte bodies are defined here.
``SAMPLES`` holds one packet of each session kind (3.1.5.1.1) built with neutral values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from io import BytesIO
from types import MappingProxyType
from typing import Any

from construct import Container, Default

from packets import base
from packets.errors import PacketError
from packets.fields import (
    GUID,
    NULL_GUID,
    BitFlags,
    Data,
    Fields,
    FlagsField,
    Guid,
    Header,
    HeaderParser,
    Hex16ul,
    Hex64ul,
    Int16ul,
    Int32ul,
    header_parser,
)
from packets.layout import Holds, PacketKind, Slot, always, fast_form_of
from packets.optional import SESSION_HEADER, check_session_header
from packets.properties import default_message_properties_header
from packets.user import UserHeaderFlags, default_user_header

__all__ = [
    "CONNECTION_PARAMETERS_HEADER",
    "ESTABLISH_CONNECTION_HEADER",
    "FINAL_ACK_BODY",
    "INTERNAL_HEADER",
    "INTERNAL_KINDS",
    "INTERNAL_LAYOUT",
    "ORDER_ACK_BODY",
    "PING",
    "SAMPLES",
    "SAMPLE_QM",
    "TRANSACTIONAL_ACKS",
    "TRANSACTIONAL_ACK_KINDS",
    "ConnectionParametersHeader",
    "EstablishConnectionHeader",
    "FinalAckBody",
    "InternalHeader",
    "InternalHeaderFlags",
    "InternalKind",
    "OperatingSystemFlags",
    "OrderAckBody",
    "PingFlags",
    "PingPacket",
    "TransactionalAck",
    "check_internal_packet",
    "check_ping",
    "check_transactional_ack",
    "connection_parameters",
    "connection_parameters_header_holds",
    "establish_connection",
    "establish_connection_header_holds",
    "final_ack",
    "identify",
    "identify_holding",
    "internal_packet_holds",
    "is_order_queue",
    "order_ack",
    "ping",
    "session_ack",
    "transactional_ack_holds",
]

# ---------------------------------------------------------------------------------------------
# Constants

PT_SESSION_ACK = 0x1
PT_ESTABLISH_CONNECTION = 0x2
PT_CONNECTION_PARAMETERS = 0x3

RECOVERABLE_ACK_TIMEOUT_RANGE = (0x000001F4, 0x0001D4C0)  # ms, [MS-MQQB] 2.2.2.1
ACK_TIMEOUT_RANGE = (0x00004E20, 0x0001D4C0)  # ms, [MS-MQQB] 2.2.2.1

OPERATING_SYSTEM_RE = 0x10  # [MS-MQQB] 2.2.3.1: OperatingSystem.RE MUST be 0x10
PADDING_SIZE = 512
RESPONSE_PADDING_BYTE = 0x5A  # [MS-MQQB] 2.2.3.1: every Padding byte of a server's response
ESTABLISH_CONNECTION_HEADER_SIZE = 552

PING_SIGNATURE = 0x5548  # [MS-MQQB] 2.2.7
PING_PORT = 3527  # [MS-MQQB] 2.1.2

ORDER_ACK_LABEL = "QM Ordering Ack"  # [MS-MQQB] 2.2.4, 2.2.5, 3.1.5.1.1
ACK_BODY_SIZE = 0x24  # MessageSize of an OrderAck/FinalAck ([MS-MQQB] 2.2.4, 2.2.5)
ORDER_QUEUE_NAME = "order_queue$"
ORDER_QUEUE_PRIVATE_ID = 0x00000004  # PrivateQueueIdentifier of order_queue$ ([MS-MQQB] 2.2.4)
MQMSG_CLASS_NORMAL = 0x0000
MQMSG_CLASS_ORDER_ACK = 0x00FF
MQMSG_CLASS_ACK_RECEIVE = 0x4000
# The negative classes [MS-MQQB] 2.2.5 allows in a FinalAck, with their [MS-MQMQ] 2.2.18.1.6
# values (arrival NACKs 0x8000 + n, receive NACKs 0xC000 + n).
FINAL_ACK_NACK_CLASSES = {
    0x8000: "MQMSG_CLASS_NACK_BAD_DST_Q",
    0x8003: "MQMSG_CLASS_NACK_Q_EXCEED_QUOTA",
    0x8004: "MQMSG_CLASS_NACK_ACCESS_DENIED",
    0x8006: "MQMSG_CLASS_NACK_BAD_SIGNATURE",
    0x8007: "MQMSG_CLASS_NACK_BAD_ENCRYPTION",
    0x8009: "MQMSG_CLASS_NACK_NOT_TRANSACTIONAL_Q",
    0x800B: "MQMSG_CLASS_NACK_UNSUPPORTED_CRYPTO_PROVIDER",
    0xC000: "MQMSG_CLASS_NACK_Q_DELETED",
    0xC001: "MQMSG_CLASS_NACK_Q_PURGED",
    0xC002: "MQMSG_CLASS_NACK_RECEIVE_TIMEOUT",
}
FINAL_ACK_CLASSES = frozenset({MQMSG_CLASS_ACK_RECEIVE, *FINAL_ACK_NACK_CLASSES})

S_INTERNAL = "MS-MQQB 2.2.1"
S_CP = "MS-MQQB 2.2.2.1"
S_EC = "MS-MQQB 2.2.3.1"
S_ORDER_ACK = "MS-MQQB 2.2.4"
S_ORDER_ACK_BODY = "MS-MQQB 2.2.4.1"
S_FINAL_ACK = "MS-MQQB 2.2.5"
S_FINAL_ACK_BODY = "MS-MQQB 2.2.5.1"
S_SESSION_ACK = "MS-MQQB 2.2.6"
S_PING = "MS-MQQB 2.2.7"
S_BASE = base.SECTION

Violations = Iterator[tuple[str, str, str]]


# ---------------------------------------------------------------------------------------------
# 2.2.1 InternalHeader


class InternalHeaderFlags(BitFlags):
    """InternalHeader.Flags ([MS-MQQB] 2.2.1): PT packet type (4 bits), CS connection refused;
    X5-X15 reserved."""

    _width_ = 16
    _fields_ = (
        ("PT", 0, 4),
        ("CS", 4, 1),
        *((f"X{bit}", bit, 1) for bit in range(5, 16)),
    )


InternalHeader = Header(
    "Reserved" / Hex16ul,
    "Flags" / FlagsField(InternalHeaderFlags),
)
INTERNAL_HEADER = header_parser("InternalHeader", InternalHeader)


# ---------------------------------------------------------------------------------------------
# 2.2.2.1 ConnectionParametersHeader

ConnectionParametersHeader = Header(
    "RecoverableAckTimeout" / Int32ul,
    "AckTimeout" / Int32ul,
    "Reserved" / Hex16ul,
    "WindowSize" / Int16ul,
)
CONNECTION_PARAMETERS_HEADER = header_parser("ConnectionParametersHeader", ConnectionParametersHeader)


# ---------------------------------------------------------------------------------------------
# 2.2.3.1 EstablishConnectionHeader


class OperatingSystemFlags(BitFlags):
    """EstablishConnectionHeader.OperatingSystem ([MS-MQQB] 2.2.3.1): RE reserved byte (0x10),
    SE no Ping Request was sent, OS server-class initiator, QS GQoS transport; X11-X15 unused."""

    _width_ = 16
    _fields_ = (
        ("RE", 0, 8),
        ("SE", 8, 1),
        ("OS", 9, 1),
        ("QS", 10, 1),
        *((f"X{bit}", bit, 1) for bit in range(11, 16)),
    )


EstablishConnectionHeader = Header(
    "ClientGuid" / Guid,
    "ServerGuid" / Guid,
    "TimeStamp" / Int32ul,
    "OperatingSystem" / FlagsField(OperatingSystemFlags),
    "Reserved" / Hex16ul,
    "Padding" / Default(Data(PADDING_SIZE), bytes([RESPONSE_PADDING_BYTE]) * PADDING_SIZE),
)
ESTABLISH_CONNECTION_HEADER = header_parser("EstablishConnectionHeader", EstablishConnectionHeader)


# ---------------------------------------------------------------------------------------------
# 2.2.4.1 OrderAck Body and 2.2.5.1 FinalAck Body (MessagePropertiesHeader.MessageBody)

OrderAckBody = Header(
    "TxSequenceID" / Hex64ul,  # [MS-MQMQ] 2.2.18.1.2: Ordinal (low u32), TimeStamp (high u32)
    "TxSequenceNumber" / Int32ul,
    "TxPreviousSequenceNumber" / Int32ul,
    "Reserved" / Default(Data(20), b"\0" * 20),
)
ORDER_ACK_BODY = header_parser("OrderAckBody", OrderAckBody)

FinalAckBody = Header(
    "TxSequenceID" / Hex64ul,
    "TxSequenceNumber" / Int32ul,
    "TxPreviousSequenceNumber" / Int32ul,
    "SourceGUID" / Guid,
    "MessageID" / Int32ul,
)
FINAL_ACK_BODY = header_parser("FinalAckBody", FinalAckBody)


# ---------------------------------------------------------------------------------------------
# 2.2.7 Ping Packet


class PingFlags(BitFlags):
    """Ping Packet Flags ([MS-MQQB] 2.2.7): RC initiator is not a server, RF acceptor would refuse
    a session; the other 14 bits are unused (MAY be set, MUST be ignored).

    RC and RF are bits 0 and 1: FRAME 1 (flags ``01 7D``) decodes RC = 1 ("Client") from bit 0
    and FRAME 2 (``95 B2``) likewise; the PDF rendering of 2.2.7 draws them at bits 14-15."""

    _width_ = 16
    _fields_ = (
        ("RC", 0, 1),
        ("RF", 1, 1),
    )


PingPacket = Header(
    "Flags" / FlagsField(PingFlags),
    "Signature" / Hex16ul,
    "Cookie" / Int32ul,
    "QMGuid" / Guid,
)
PING = header_parser(PacketKind.Ping.value, PingPacket)
PING_PACKET_SIZE = 24


# ---------------------------------------------------------------------------------------------
# Checks (each yields (field path, reason, section))


def check_internal_header(headers: Container) -> Violations:
    """[MS-MQQB] 2.2.1: PT is a packet type (those of :data:`INTERNAL_KINDS`: 1, 2 or 3); CS only
    in an EstablishConnection or ConnectionParameters Packet."""
    flags = headers.InternalHeader.Flags
    types = sorted(k.pt for k in INTERNAL_KINDS)
    if flags.PT not in types:
        named = ", ".join(f"0x{pt:X}" for pt in types[:-1]) + f" or 0x{types[-1]:X}"
        yield (
            "InternalHeader.Flags.PT",
            f"0x{flags.PT:X} is not a packet type ({named}); the session MUST be closed",
            S_INTERNAL,
        )
    elif flags.CS and flags.PT not in (PT_ESTABLISH_CONNECTION, PT_CONNECTION_PARAMETERS):
        yield (
            "InternalHeader.Flags.CS",
            "MUST NOT be set in a packet other than an EstablishConnection or ConnectionParameters Packet",
            S_INTERNAL,
        )


def check_connection_parameters_header(headers: Container) -> Violations:
    """[MS-MQQB] 2.2.2.1: the two timeouts' valid ranges (WindowSize may be any u16)."""
    cp = headers.ConnectionParametersHeader
    for name, (low, high) in (
        ("RecoverableAckTimeout", RECOVERABLE_ACK_TIMEOUT_RANGE),
        ("AckTimeout", ACK_TIMEOUT_RANGE),
    ):
        value = cp[name]
        if not low <= value <= high:
            yield (
                f"ConnectionParametersHeader.{name}",
                f"0x{value:X} is outside its valid range 0x{low:08X}-0x{high:08X}",
                S_CP,
            )


@fast_form_of(check_connection_parameters_header)
def connection_parameters_header_holds(headers: Container) -> bool:
    """Fast form of :func:`check_connection_parameters_header` (plain lookups: a header's fields
    read as attributes bind it to its mapping first, packets.fields.Fields)."""
    cp = headers["ConnectionParametersHeader"]
    return bool(
        RECOVERABLE_ACK_TIMEOUT_RANGE[0] <= cp["RecoverableAckTimeout"] <= RECOVERABLE_ACK_TIMEOUT_RANGE[1]
        and ACK_TIMEOUT_RANGE[0] <= cp["AckTimeout"] <= ACK_TIMEOUT_RANGE[1]
    )


def check_establish_connection_header(headers: Container) -> Violations:
    """[MS-MQQB] 2.2.3.1: OperatingSystem.RE MUST be 0x10.  (Reserved MUST be zero when sent but
    MUST be ignored on receipt, so a receiver does not reject it; the 0x5A Padding of a response
    needs the session state: :func:`check_establish_connection_response`.)"""
    ec = headers.EstablishConnectionHeader
    if ec.OperatingSystem.RE != OPERATING_SYSTEM_RE:
        yield (
            "EstablishConnectionHeader.OperatingSystem.RE",
            f"MUST be 0x10, found 0x{ec.OperatingSystem.RE:02X}",
            S_EC,
        )


@fast_form_of(check_establish_connection_header)
def establish_connection_header_holds(headers: Container) -> bool:
    """Fast form of :func:`check_establish_connection_header` (plain lookups)."""
    return bool(headers["EstablishConnectionHeader"]["OperatingSystem"].RE == OPERATING_SYSTEM_RE)


def check_establish_connection_response(headers: Container) -> Violations:
    """[MS-MQQB] 2.2.3.1, for an EstablishConnection Packet known to be a server's response:
    every Padding byte MUST be 0x5A."""
    padding = bytes(headers.EstablishConnectionHeader.Padding)
    bad = next((i for i, b in enumerate(padding) if b != RESPONSE_PADDING_BYTE), None)
    if bad is not None:
        yield (
            "EstablishConnectionHeader.Padding",
            f"byte {bad} is 0x{padding[bad]:02X}; a response's padding MUST be 0x5A throughout",
            S_EC,
        )


def check_internal_packet(headers: Container) -> Violations:
    """Rules across the headers of a packet whose BaseHeader.Flags.IN is set.

    [MS-MQMQ] 2.2.19.1: TimeToReachQueue MUST be 0xFFFFFFFF outside a UserMessage Packet; DH MUST
    NOT be set outside one; SH set means the packet carries a SessionHeader (only a SessionAck
    does).  [MS-MQQB] 2.2.6: a SessionAck Packet has BaseHeader.Flags.SH set."""
    base_header = headers.BaseHeader
    if base_header.TimeToReachQueue != base.INFINITE:
        yield (
            "BaseHeader.TimeToReachQueue",
            f"MUST be 0xFFFFFFFF outside a UserMessage Packet, found 0x{base_header.TimeToReachQueue:08X}",
            S_BASE,
        )
    if base_header.Flags.DH:
        yield ("BaseHeader.Flags.DH", "MUST NOT be set outside a UserMessage Packet", S_BASE)
    internal = headers.get("InternalHeader")
    if internal is None:
        return
    pt = internal.Flags.PT
    if pt == PT_SESSION_ACK and not base_header.Flags.SH:
        yield ("BaseHeader.Flags.SH", "MUST be set in a SessionAck Packet", S_SESSION_ACK)
    if pt in (PT_ESTABLISH_CONNECTION, PT_CONNECTION_PARAMETERS) and base_header.Flags.SH:
        yield (
            "BaseHeader.Flags.SH",
            "announces a SessionHeader, which an EstablishConnection/ConnectionParameters Packet does not carry",
            S_BASE,
        )


def internal_packet_holds(headers: Container) -> bool:
    """Fast form of :func:`check_internal_packet`: True exactly when it finds nothing."""
    base_header = headers["BaseHeader"]
    flags = int(base_header["Flags"])
    if base_header["TimeToReachQueue"] != base.INFINITE or flags & 0x20:  # DH
        return False
    internal = headers.get("InternalHeader")
    if internal is None:
        return True
    pt = int(internal["Flags"]) & 0xF
    if pt == PT_SESSION_ACK:
        return bool(flags & 0x10)  # SH
    return not (pt in (PT_ESTABLISH_CONNECTION, PT_CONNECTION_PARAMETERS) and flags & 0x10)


def check_ping(headers: Container) -> Violations:
    """[MS-MQQB] 2.2.7: Signature MUST be 0x5548 (a receiver ignores the packet otherwise)."""
    packet = headers.Ping
    if packet.Signature != PING_SIGNATURE:
        yield ("Ping.Signature", f"MUST be 0x5548, found 0x{packet.Signature:04X}", S_PING)


# ---------------------------------------------------------------------------------------------
# The layout after the BaseHeader of an internal packet


def _pt(headers: Container) -> int:
    return int(headers.InternalHeader.Flags.PT)


INTERNAL_LAYOUT: tuple[Slot, ...] = (
    Slot("InternalHeader", INTERNAL_HEADER, always, S_INTERNAL, (check_internal_header,)),
    Slot(
        "SessionHeader",
        SESSION_HEADER,
        lambda h: _pt(h) == PT_SESSION_ACK,
        S_SESSION_ACK,
        (check_session_header,),
        # A SessionAck's PacketSize counts its SessionHeader (FRAME 8: 36); [MS-MQMQ] 2.2.19.1
        # excludes only the SessionHeader piggy-backed on a UserMessage.
        counted=True,
    ),
    Slot(
        "EstablishConnectionHeader",
        ESTABLISH_CONNECTION_HEADER,
        lambda h: _pt(h) == PT_ESTABLISH_CONNECTION,
        S_EC,
        (check_establish_connection_header,),
    ),
    Slot(
        "ConnectionParametersHeader",
        CONNECTION_PARAMETERS_HEADER,
        lambda h: _pt(h) == PT_CONNECTION_PARAMETERS,
        S_CP,
        (check_connection_parameters_header,),
    ),
)


# ---------------------------------------------------------------------------------------------
# 3.1.5.1.1 Identifying Packet Type: the one table of packet kinds.  identify (and pinned_kind,
# its form for packets.fused), the codec's rules and the generated Wireshark dissector
# (packets.dissector) all read it; a UserMessage is every IN-clear packet none of it claims.


@dataclass(frozen=True)
class InternalKind:
    """An internal packet (BaseHeader.Flags.IN set) of the kind its InternalHeader.Flags.PT
    names, when ``base_flag`` (a BaseHeader.Flags sub-field) is also set if one is named."""

    kind: PacketKind
    pt: int
    base_flag: str | None = None

    @property
    def base_mask(self) -> int:
        """The bit of ``base_flag`` in BaseHeader.Flags (0: none is needed)."""
        if self.base_flag is None:
            return 0
        shift, width = base.BaseHeaderFlags._known_[self.base_flag]
        return ((1 << width) - 1) << shift


@dataclass(frozen=True)
class TransactionalAck:
    """A transactional acknowledgment: an IN-clear packet to order_queue$ with the label "QM
    Ordering Ack" whose MessageClass is in ``classes`` (lowest, highest; None: no bound above),
    with the rules of its section and its 36-byte ``body`` structure."""

    kind: PacketKind
    classes: tuple[int, int | None]
    section: str
    body: str  # the spec name of the MessageBody's structure
    body_parser: HeaderParser
    body_section: str
    user_flags: tuple[str, ...]  # the UserHeader.Flags set besides DQ
    allowed_classes: frozenset[int] | None  # None: every class that identifies it
    previous_is_one_less: bool  # TxPreviousSequenceNumber MUST be TxSequenceNumber - 1

    def claims(self, message_class: int) -> bool:
        lowest, highest = self.classes
        return lowest <= message_class and (highest is None or message_class <= highest)


INTERNAL_KINDS: tuple[InternalKind, ...] = (
    InternalKind(PacketKind.EstablishConnection, PT_ESTABLISH_CONNECTION),
    InternalKind(PacketKind.ConnectionParameters, PT_CONNECTION_PARAMETERS),
    InternalKind(PacketKind.SessionAck, PT_SESSION_ACK, base_flag="SH"),
)
TRANSACTIONAL_ACKS: tuple[TransactionalAck, ...] = (
    TransactionalAck(
        PacketKind.OrderAck,
        (MQMSG_CLASS_ORDER_ACK, MQMSG_CLASS_ORDER_ACK),
        S_ORDER_ACK,
        "OrderAckBody",
        ORDER_ACK_BODY,
        S_ORDER_ACK_BODY,
        user_flags=("MP",),
        allowed_classes=None,
        previous_is_one_less=True,
    ),
    TransactionalAck(
        PacketKind.FinalAck,
        (MQMSG_CLASS_ACK_RECEIVE, None),
        S_FINAL_ACK,
        "FinalAckBody",
        FINAL_ACK_BODY,
        S_FINAL_ACK_BODY,
        user_flags=("MP", "DM"),
        allowed_classes=FINAL_ACK_CLASSES,
        previous_is_one_less=False,
    ),
)
TRANSACTIONAL_ACK_KINDS: frozenset[PacketKind] = frozenset(ack.kind for ack in TRANSACTIONAL_ACKS)
_INTERNAL_BY_PT = {entry.pt: entry for entry in INTERNAL_KINDS}
_ACK_BY_KIND = {ack.kind: ack for ack in TRANSACTIONAL_ACKS}


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):  # decoded headers: the cheap test first
        return obj.get(name, default)
    if isinstance(obj, int):  # a flag word: never a Mapping, and the ABC test is slow
        return getattr(obj, name, default)
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _direct_name(queue: Any) -> str | None:
    """The DirectFormatName text of a decoded DirectQueueFormatName (or the text itself)."""
    if isinstance(queue, str):
        return queue
    for key in ("DirectFormatName", "Name", "Value"):
        value = _get(queue, key)
        if isinstance(value, str):
            return value
    return None


def _private_id(queue: Any) -> int | None:
    if isinstance(queue, int) and not isinstance(queue, bool):
        return queue
    value = _get(queue, "PrivateQueueIdentifier")
    return int(value) if isinstance(value, int) else None


def is_order_queue(user_header: Any) -> bool:
    """Whether UserHeader.DestinationQueue addresses the local private queue "order_queue$"
    ([MS-MQQB] 3.1.5.1.1): DQ 0x3 with PrivateQueueIdentifier 0x00000004, or DQ 0x7 with a
    direct name ``<TCP|SPX>:<address>\\PRIVATE$\\order_queue$`` ([MS-MQQB] 2.2.4)."""
    # a decoded header's Flags by a plain lookup (read as an attribute, it binds the header first: Fields)
    flags = user_header.get("Flags") if type(user_header) is Fields else None
    if flags is None:
        flags = user_header.Flags
    dq = int(_get(flags, "DQ", 0))
    queue = _get(user_header, "DestinationQueue")
    if dq == 0x3:
        return _private_id(queue) == ORDER_QUEUE_PRIVATE_ID
    if dq == 0x7:
        name = _direct_name(queue)
        if name is None:
            return False
        parts = name.replace("/", "\\").split("\\")
        return (
            len(parts) == 3
            and parts[1].upper() == "PRIVATE$"
            and parts[2].lower() == ORDER_QUEUE_NAME
            and parts[0].upper().startswith(("TCP:", "SPX:"))
        )
    return False


def _transactional_ack_class(headers: Container) -> TransactionalAck | None:
    """OrderAck/FinalAck by destination, label and class (3.1.5.1.1), tested before the
    UserMessage rule (a non-NORMAL class is otherwise still a UserMessage, SPEC-MAP Pitfall 10)."""
    user = headers.get("UserHeader")
    props = headers.get("MessagePropertiesHeader")
    if user is None or props is None:
        return None
    if _get(props, "Label") != ORDER_ACK_LABEL or not is_order_queue(user):  # cheap test first
        return None
    message_class = int(_get(props, "MessageClass", 0))
    for ack in TRANSACTIONAL_ACKS:
        if ack.claims(message_class):
            return ack
    return None


def decode_ack_body(kind: PacketKind, body: bytes) -> Container:
    """Decode a 36-byte OrderAck Body (2.2.4.1) or FinalAck Body (2.2.5.1)."""
    ack = _ACK_BY_KIND[kind]
    if len(body) != ACK_BODY_SIZE:
        raise PacketError(
            "MessagePropertiesHeader.MessageBody",
            -1,
            f"a {kind} body is 36 bytes, found {len(body)}",
            ack.body_section,
        )
    return ack.body_parser.parse_fast(BytesIO(body), Container(_params=Container()))


def identify(headers: Container) -> tuple[PacketKind, Container | None]:
    """[MS-MQQB] 3.1.5.1.1 Identifying Packet Type.

    IN set: PT 0x2 EstablishConnection, PT 0x3 ConnectionParameters, PT 0x1 with SH SessionAck,
    anything else Unknown.  IN clear: a packet addressed to order_queue$ with the label "QM
    Ordering Ack" is an OrderAck (class MQMSG_CLASS_ORDER_ACK) or a FinalAck (class not less than
    0x4000), returned with its decoded body (None when the body is not 36 bytes; the violation is
    reported by :func:`check_transactional_ack`); every other IN-clear packet is a UserMessage,
    whatever its class (administration acknowledgments and reports are UserMessages too).
    The remaining OrderAck/FinalAck MUSTs (BaseHeader.Flags 0, MessageSize 0x24, ...) are rules
    of those packets, checked by :func:`check_transactional_ack`, not identification keys.
    """
    base_header = headers["BaseHeader"]
    base_flags = int(base_header["Flags"])
    if base_flags & 0x8:  # IN
        internal = headers.get("InternalHeader")
        if internal is None:
            return PacketKind.Unknown, None
        return _internal_kind(base_flags, int(internal.Flags.PT)), None
    ack = _transactional_ack_class(headers)
    if ack is not None:
        body = bytes(_get(headers.MessagePropertiesHeader, "MessageBody") or b"")
        return ack.kind, decode_ack_body(ack.kind, body) if len(body) == ACK_BODY_SIZE else None
    if headers.get("UserHeader") is None:
        return PacketKind.Unknown, None
    return PacketKind.UserMessage, None


def _internal_kind(base_flags: int, pt: int) -> PacketKind:
    """The kind of an internal packet (IN set) by its InternalHeader.Flags.PT (INTERNAL_KINDS)."""
    entry = _INTERNAL_BY_PT.get(pt)
    if entry is None or base_flags & entry.base_mask != entry.base_mask:
        return PacketKind.Unknown
    return entry.kind


def _not_labelled_an_ack(headers: Container) -> bool:
    """The cheap test of :func:`_transactional_ack_class` (the label): True for a UserMessage;
    False for a packet that may be an OrderAck or a FinalAck, which :func:`identify_holding`
    then identifies."""
    props = headers.get("MessagePropertiesHeader")
    return props is not None and type(props) is Fields and props.get("Label") != ORDER_ACK_LABEL


def pinned_kind(pins: Mapping[str, int]) -> tuple[PacketKind, Holds | None] | None:
    """:func:`identify` for every packet of one shape (BaseHeader.Flags and the Flags of the
    header after it fixed; packets.fused): the kind, and a guard that must hold for a packet to be
    of that kind (None: every one is).  IN set: the kind follows from the flags alone.  IN clear:
    a UserMessage when its label is not an acknowledgment's; the guard leaves the others to
    :func:`identify_holding`."""
    base_flags = pins["BaseHeader"]
    if not base_flags & 0x8:
        return PacketKind.UserMessage, _not_labelled_an_ack
    internal = pins.get("InternalHeader")
    if internal is None:
        return None
    shift, width = InternalHeaderFlags._known_["PT"]
    return _internal_kind(base_flags, internal >> shift & ((1 << width) - 1)), None


def check_transactional_ack(headers: Container) -> Violations:
    """The MUSTs of [MS-MQQB] 2.2.4/2.2.4.1 (OrderAck) and 2.2.5/2.2.5.1 (FinalAck) for a packet
    that :func:`identify` names so; nothing for other packets."""
    ack = _transactional_ack_class(headers)
    if ack is None:
        return
    yield from _check_ack_flags(headers, ack)
    props = headers.MessagePropertiesHeader
    yield from _check_ack_properties(props, ack)
    yield from _check_ack_body(props, ack)


def _check_ack_flags(headers: Container, ack: TransactionalAck) -> Violations:
    """BaseHeader.Flags all 0; UserHeader.Flags MP (and DM for a FinalAck) and DQ only."""
    section = ack.section
    base_header = headers.BaseHeader
    if int(base_header.Flags) != 0:
        yield ("BaseHeader.Flags", f"MUST have all bits 0, found 0x{int(base_header.Flags):04X}", section)
    user_flags = headers.UserHeader.Flags
    allowed = {"MP": 1, "DQ": int(user_flags.DQ)} | dict.fromkeys(ack.user_flags, 1)
    expected = type(user_flags).make(allowed)
    if int(user_flags) != int(expected):
        yield (
            "UserHeader.Flags",
            f"MUST be 0x{int(expected):08X} ({', '.join(ack.user_flags)} and DQ only), found 0x{int(user_flags):08X}",
            section,
        )


def _check_ack_properties(props: Container, ack: TransactionalAck) -> Violations:
    """The MessagePropertiesHeader of an acknowledgment: Flags 0, MessageSize 0x24, a FinalAck's
    MessageClass, BodyType VT_EMPTY."""
    section = ack.section
    if int(_get(props, "Flags", 0)) != 0:
        yield ("MessagePropertiesHeader.Flags", "MUST have all bits 0", section)
    if int(_get(props, "MessageSize", 0)) != ACK_BODY_SIZE:
        yield (
            "MessagePropertiesHeader.MessageSize",
            f"MUST be 0x00000024, found 0x{int(_get(props, 'MessageSize', 0)):08X}",
            section,
        )
    message_class = int(_get(props, "MessageClass", 0))
    if ack.allowed_classes is not None and message_class not in ack.allowed_classes:
        yield (
            "MessagePropertiesHeader.MessageClass",
            f"0x{message_class:04X} is neither MQMSG_CLASS_ACK_RECEIVE nor a NACK allowed in a {ack.kind}",
            section,
        )
    body_type = _get(props, "BodyType")
    if body_type is not None and int(body_type) != 0:  # VT_EMPTY
        yield ("MessagePropertiesHeader.BodyType", f"MUST be VT_EMPTY (0), found {int(body_type)}", section)


def _check_ack_body(props: Container, ack: TransactionalAck) -> Violations:
    """The OrderAck Body (2.2.4.1) or FinalAck Body (2.2.5.1): 36 bytes, the sequence numbers
    in range (and an OrderAck's previous one its own minus one)."""
    body_section = ack.body_section
    body = bytes(_get(props, "MessageBody") or b"")
    if len(body) != ACK_BODY_SIZE:
        yield ("MessagePropertiesHeader.MessageBody", f"MUST be 36 bytes, found {len(body)}", body_section)
        return
    decoded = decode_ack_body(ack.kind, body)
    prefix = ack.body
    if decoded.TxSequenceNumber == 0:
        yield (f"{prefix}.TxSequenceNumber", "valid range is 0x00000001-0xFFFFFFFF, found 0", body_section)
    if decoded.TxPreviousSequenceNumber == 0xFFFFFFFF:
        yield (
            f"{prefix}.TxPreviousSequenceNumber",
            "valid range is 0x00000000-0xFFFFFFFE, found 0xFFFFFFFF",
            body_section,
        )
    if (
        ack.previous_is_one_less
        and decoded.TxSequenceNumber != 0
        and decoded.TxPreviousSequenceNumber != decoded.TxSequenceNumber - 1
    ):
        yield (
            f"{prefix}.TxPreviousSequenceNumber",
            f"MUST be TxSequenceNumber - 1 = {decoded.TxSequenceNumber - 1}, found {decoded.TxPreviousSequenceNumber}",
            body_section,
        )


@fast_form_of(check_transactional_ack)
def transactional_ack_holds(headers: Container) -> bool:
    """Fast form of :func:`check_transactional_ack`: True exactly when it finds nothing."""
    ack = _transactional_ack_class(headers)
    return ack is None or _held_ack_body(headers, ack) is not None


def identify_holding(headers: Container) -> tuple[PacketKind, Container | None] | None:
    """:func:`identify` and :func:`transactional_ack_holds` at once, for an IN-clear packet whose
    other rules hold that :func:`pinned_kind`'s guard turned away (packets.fused): a UserMessage,
    or an OrderAck or a FinalAck with its decoded body when it breaks none of their MUSTs; None
    for one that does (the codec's usual path then words what it breaks)."""
    ack = _transactional_ack_class(headers)
    if ack is None:
        return (PacketKind.UserMessage, None) if headers.get("UserHeader") is not None else None
    body = _held_ack_body(headers, ack)
    return None if body is None else (ack.kind, body)


def _held_ack_body(headers: Container, ack: TransactionalAck) -> Container | None:
    """The decoded body when :func:`_check_ack_flags`, :func:`_check_ack_properties` and
    :func:`_check_ack_body` find nothing (the same tests, in their order, by plain lookups), else
    None."""
    base_header, user_flags = headers["BaseHeader"], headers["UserHeader"]["Flags"]
    if int(base_header["Flags"]) != 0 or int(user_flags) != _ack_user_flags(user_flags, ack):
        return None
    props = headers["MessagePropertiesHeader"]
    if int(_get(props, "Flags", 0)) != 0 or int(_get(props, "MessageSize", 0)) != ACK_BODY_SIZE:
        return None
    message_class = int(_get(props, "MessageClass", 0))
    if ack.allowed_classes is not None and message_class not in ack.allowed_classes:
        return None
    body_type = _get(props, "BodyType")
    if body_type is not None and int(body_type) != 0:
        return None
    body = bytes(_get(props, "MessageBody") or b"")
    if len(body) != ACK_BODY_SIZE:
        return None
    decoded = decode_ack_body(ack.kind, body)
    number, previous = decoded["TxSequenceNumber"], decoded["TxPreviousSequenceNumber"]
    if number == 0 or previous == 0xFFFFFFFF or (ack.previous_is_one_less and previous != number - 1):
        return None
    return decoded


def _ack_user_flags(user_flags: Any, ack: TransactionalAck) -> int:
    """The UserHeader.Flags ``ack`` allows with the DQ of ``user_flags``: MP, the ack's own flags
    and DQ only ([MS-MQQB] 2.2.4, 2.2.5; :func:`_check_ack_flags`), remembered."""
    key = (type(user_flags), int(user_flags.DQ), ack.kind)
    allowed = _ACK_USER_FLAGS.get(key)
    if allowed is None:
        allowed = int(type(user_flags).make({"MP": 1, "DQ": key[1]} | dict.fromkeys(ack.user_flags, 1)))
        if len(_ACK_USER_FLAGS) >= 256:
            _ACK_USER_FLAGS.clear()
        _ACK_USER_FLAGS[key] = allowed
    return allowed


_ACK_USER_FLAGS: dict[tuple[type, int, PacketKind], int] = {}


# ---------------------------------------------------------------------------------------------
# Convenience constructors: header Containers ready for packets.codec.build


def _base(flags: BitFlags, **fields: Any) -> Container:
    return base.default_base_header(Flags=flags, **fields)


def _internal_flags(pt: int, cs: int = 0) -> InternalHeaderFlags:
    return InternalHeaderFlags.make(PT=pt, CS=cs)  # type: ignore[return-value]


def establish_connection(
    client_guid: GUID | bytes | str,
    server_guid: GUID | bytes | str = NULL_GUID,
    time_stamp: int = 0,
    *,
    response: bool = False,
    refused: bool = False,
    ping_sent: bool = False,
    server_os: bool = False,
    qos: bool = False,
    padding: bytes | None = None,
    priority: int = 3,
    base_reserved: int = 0,
) -> Container:
    """An EstablishConnection Packet ([MS-MQQB] 2.2.3, 3.1.5.2.3, 3.1.5.3.1).

    OperatingSystem: RE 0x10, SE = not ping_sent, OS, QS; Reserved 0.  Padding: 0x5A throughout
    (a response MUST use it; a request's padding is uninitialized, 0x5A as in FRAME 3) unless
    ``padding`` is given.  ``refused`` sets InternalHeader.Flags.CS.
    """
    if padding is None:
        padding = bytes([RESPONSE_PADDING_BYTE]) * PADDING_SIZE
    if len(padding) != PADDING_SIZE:
        raise PacketError("EstablishConnectionHeader.Padding", -1, f"is 512 bytes, got {len(padding)}", S_EC)
    del response  # request and response share one layout; the 0x5A padding serves both
    return Container(
        BaseHeader=_base(base.BaseHeaderFlags.make(PR=priority, IN=1), Reserved=base_reserved),
        InternalHeader=Container(Reserved=0, Flags=_internal_flags(PT_ESTABLISH_CONNECTION, int(refused))),
        EstablishConnectionHeader=Container(
            ClientGuid=GUID(client_guid),
            ServerGuid=GUID(server_guid),
            TimeStamp=time_stamp,
            OperatingSystem=OperatingSystemFlags.make(
                RE=OPERATING_SYSTEM_RE, SE=int(not ping_sent), OS=int(server_os), QS=int(qos)
            ),
            Reserved=0,
            Padding=padding,
        ),
    )


def connection_parameters(
    recoverable_ack_timeout: int = RECOVERABLE_ACK_TIMEOUT_RANGE[0],
    ack_timeout: int = ACK_TIMEOUT_RANGE[0],
    window_size: int = 64,
    *,
    refused: bool = False,
    priority: int = 3,
    base_reserved: int = 0,
) -> Container:
    """A ConnectionParameters Packet ([MS-MQQB] 2.2.2, 3.1.5.3.2, 3.1.5.4.1); timeouts in ms."""
    return Container(
        BaseHeader=_base(base.BaseHeaderFlags.make(PR=priority, IN=1), Reserved=base_reserved),
        InternalHeader=Container(Reserved=0, Flags=_internal_flags(PT_CONNECTION_PARAMETERS, int(refused))),
        ConnectionParametersHeader=Container(
            RecoverableAckTimeout=recoverable_ack_timeout,
            AckTimeout=ack_timeout,
            Reserved=0,
            WindowSize=window_size,
        ),
    )


def session_ack(
    ack_sequence_number: int = 0,
    recoverable_msg_ack_seq_number: int = 0,
    recoverable_msg_ack_flags: int = 0,
    user_msg_sequence_number: int = 0,
    recoverable_msg_seq_number: int = 0,
    window_size: int = 64,
    *,
    priority: int = 3,
    base_reserved: int = 0,
) -> Container:
    """A SessionAck Packet ([MS-MQQB] 2.2.6): BaseHeader IN+SH, InternalHeader PT 1, SessionHeader."""
    return Container(
        BaseHeader=_base(base.BaseHeaderFlags.make(PR=priority, IN=1, SH=1), Reserved=base_reserved),
        InternalHeader=Container(Reserved=0, Flags=_internal_flags(PT_SESSION_ACK)),
        SessionHeader=Container(
            AckSequenceNumber=ack_sequence_number,
            RecoverableMsgAckSeqNumber=recoverable_msg_ack_seq_number,
            RecoverableMsgAckFlags=recoverable_msg_ack_flags,
            UserMsgSequenceNumber=user_msg_sequence_number,
            RecoverableMsgSeqNumber=recoverable_msg_seq_number,
            WindowSize=window_size,
            Reserved=0,
        ),
    )


def order_ack_body(tx_sequence_id: int, tx_sequence_number: int, reserved: bytes = b"\0" * 20) -> bytes:
    """The 36-byte OrderAck Body ([MS-MQQB] 2.2.4.1); TxPreviousSequenceNumber = seq - 1."""
    return ORDER_ACK_BODY.build(
        Container(
            TxSequenceID=tx_sequence_id,
            TxSequenceNumber=tx_sequence_number,
            TxPreviousSequenceNumber=(tx_sequence_number - 1) & 0xFFFFFFFF,
            Reserved=reserved,
        )
    )


def final_ack_body(
    tx_sequence_id: int,
    tx_sequence_number: int,
    tx_previous_sequence_number: int,
    source_guid: GUID | bytes | str,
    message_id: int,
) -> bytes:
    """The 36-byte FinalAck Body ([MS-MQQB] 2.2.5.1)."""
    return FINAL_ACK_BODY.build(
        Container(
            TxSequenceID=tx_sequence_id,
            TxSequenceNumber=tx_sequence_number,
            TxPreviousSequenceNumber=tx_previous_sequence_number,
            SourceGUID=GUID(source_guid),
            MessageID=message_id,
        )
    )


def _ack_packet(
    body: bytes,
    message_class: int,
    source_qm: GUID | bytes | str,
    destination: str | int,
    delivery_mode: int,
    sent_time: int,
    message_id: int,
    destination_qm: GUID | bytes | str | None,
) -> Container:
    """Headers of a UserMessage-shaped transactional acknowledgment ([MS-MQQB] 2.2.4/2.2.5).

    ``destination`` is the order queue: an int is a PrivateQueueFormatNameId (DQ 0x3, id 4, with
    ``destination_qm`` as QueueManagerAddress), a str the direct name
    ``TCP:<ip>\\PRIVATE$\\order_queue$`` (DQ 0x7, NULL QueueManagerAddress).  Field names follow
    [MS-MQMQ] 2.2.19.2/2.2.19.3; the UserHeader/MessagePropertiesHeader builders of
    packets.user/packets.properties compute the lengths left out.
    """
    if isinstance(destination, int):
        if destination_qm is None:
            raise PacketError(
                "UserHeader.QueueManagerAddress", -1, "DQ 0x3 needs the destination QM GUID", "MS-MQMQ 2.2.19.2"
            )
        dq, queue, address = 0x3, Container(PrivateQueueIdentifier=destination), GUID(destination_qm)
    else:
        dq, queue, address = 0x7, Container(DirectFormatName=destination), NULL_GUID
    return Container(
        BaseHeader=_base(base.BaseHeaderFlags.make(0)),
        UserHeader=default_user_header(
            SourceQueueManager=GUID(source_qm),
            QueueManagerAddress=address,
            SentTime=sent_time,
            MessageID=message_id,
            Flags=UserHeaderFlags.make(MP=1, DQ=dq, DM=delivery_mode),
            DestinationQueue=queue,
        ),
        MessagePropertiesHeader=default_message_properties_header(
            body,
            MessageClass=message_class,
            MessageSize=ACK_BODY_SIZE,
            HashAlgorithm=0,
            EncryptionAlgorithm=0,
            Label=ORDER_ACK_LABEL,
        ),
    )


def order_ack(
    tx_sequence_id: int,
    tx_sequence_number: int,
    *,
    source_qm: GUID | bytes | str,
    destination: str | int = ORDER_QUEUE_PRIVATE_ID,
    destination_qm: GUID | bytes | str | None = None,
    sent_time: int = 0,
    message_id: int = 0,
) -> Container:
    """An OrderAck Packet ([MS-MQQB] 2.2.4) acknowledging ``tx_sequence_number``."""
    body = order_ack_body(tx_sequence_id, tx_sequence_number)
    return _ack_packet(body, MQMSG_CLASS_ORDER_ACK, source_qm, destination, 0, sent_time, message_id, destination_qm)


def final_ack(
    tx_sequence_id: int,
    tx_sequence_number: int,
    tx_previous_sequence_number: int,
    acked_source_guid: GUID | bytes | str,
    acked_message_id: int,
    *,
    source_qm: GUID | bytes | str,
    message_class: int = MQMSG_CLASS_ACK_RECEIVE,
    destination: str | int = ORDER_QUEUE_PRIVATE_ID,
    destination_qm: GUID | bytes | str | None = None,
    sent_time: int = 0,
    message_id: int = 0,
) -> Container:
    """A FinalAck Packet ([MS-MQQB] 2.2.5): DM 1, class ACK_RECEIVE or an allowed NACK."""
    body = final_ack_body(
        tx_sequence_id, tx_sequence_number, tx_previous_sequence_number, acked_source_guid, acked_message_id
    )
    return _ack_packet(body, message_class, source_qm, destination, 1, sent_time, message_id, destination_qm)


def ping(
    cookie: int,
    qm_guid: GUID | bytes | str,
    *,
    rc: bool = False,
    rf: bool = False,
    unused: int = 0,
) -> Container:
    """A Ping Packet ([MS-MQQB] 2.2.7) for ``packets.codec.build_ping``.

    Request: RC set when the initiator is not a server OS, RF clear.  Response: RC copied from the
    request, RF set when the acceptor would refuse a session.  ``unused`` fills bits 2-15 (which
    Windows leaves uninitialized, FRAME 1/2).
    """
    if not 0 <= unused < (1 << 14):
        raise PacketError("Ping.Flags", -1, f"unused bits 2-15 hold 14 bits, got 0x{unused:X}", S_PING)
    return Container(
        Flags=PingFlags.make(PingFlags(unused << 2), RC=int(rc), RF=int(rf)),
        Signature=PING_SIGNATURE,
        Cookie=cookie,
        QMGuid=GUID(qm_guid),
    )


def headers_of(parser: HeaderParser, data: bytes) -> Container:
    """Decode one header from ``data`` (compiled path); used by tests and tools."""
    return parser.parse_fast(BytesIO(data), Container(_params=Container()))


# ---------------------------------------------------------------------------------------------
# Samples: one packet of each session kind, built with neutral values

# The queue manager a sample is addressed to: [MS-MQMQ] 2.2.19.2 wants a non-null GUID in
# UserHeader.QueueManagerAddress when DQ is 0x3 (a UserMessage, an OrderAck, a FinalAck).
SAMPLE_QM = GUID("00000000-0000-0000-0000-000000000001")


def _sample_user_message() -> Container:
    """A UserMessage Packet ([MS-MQMQ] 2.2.19-2.2.20): express, empty body, from the null queue
    manager to private queue 1 (DQ 0x3) of :data:`SAMPLE_QM`, class MQMSG_CLASS_NORMAL."""
    return Container(
        BaseHeader=_base(base.BaseHeaderFlags.make(PR=3)),
        UserHeader=default_user_header(
            SourceQueueManager=NULL_GUID,
            QueueManagerAddress=SAMPLE_QM,
            Flags=UserHeaderFlags.make(MP=1, DQ=0x3),
            DestinationQueue=Container(PrivateQueueIdentifier=1),
        ),
        MessagePropertiesHeader=default_message_properties_header(b""),
    )


#: One packet of each kind of ``packets.layout.SESSION_KINDS``, in their order: its builder
#: called with neutral values (null GUIDs but :data:`SAMPLE_QM`, sequence numbers 0 or 1, the smallest valid timeouts),
#: a packet that :func:`identify` names as its kind and the codec finds no violation in.  Who
#: needs a packet of a kind and knows nothing of a session reads it: the wire case's client for
#: a kind without a builder of its own (harness.cases.wireruns.acceptor.CLIENT_PACKETS), the
#: fuzzer for a kind without templates (harness.fuzz.generate).  A new kind adds its entry here
#: (tests/packets/test_samples.py fails for a session kind without one).
SAMPLES: Mapping[PacketKind, Callable[[], Container]] = MappingProxyType(
    {
        PacketKind.EstablishConnection: lambda: establish_connection(NULL_GUID),
        PacketKind.ConnectionParameters: connection_parameters,
        PacketKind.SessionAck: session_ack,
        PacketKind.OrderAck: lambda: order_ack(1, 1, source_qm=NULL_GUID, destination_qm=SAMPLE_QM),
        PacketKind.FinalAck: lambda: final_ack(1, 1, 0, SAMPLE_QM, 1, source_qm=NULL_GUID, destination_qm=SAMPLE_QM),
        PacketKind.UserMessage: _sample_user_message,
    }
)
