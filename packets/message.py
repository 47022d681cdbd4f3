"""The UserMessage Packet: which headers follow the BaseHeader, in which order, and when.

Renders [MS-MQMQ] 2.2.20 UserMessage Packet (header order BaseHeader, UserHeader,
TransactionHeader, SecurityHeader, MessagePropertiesHeader, DebugHeader, SoapHeader,
MultiQueueFormatHeader, SessionHeader) merged with [MS-MQRR] 2.2.5.1 (SRMPEnvelopeHeader and
CompoundMessageHeader between DebugHeader and SoapHeader, iff UserHeader.Flags.AH; absent in a
2.2.5.1.1 Binary Message), the packet-level rules of 2.2.20 and 2.2.19.1, and the [MS-MQRR] 2.2.5
Message Packet Structure (the UserMessage followed by ExtensionHeader, SubqueueHeader,
DeadLetterHeader and ExtendedAddressHeader) with a small parse/build for it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from io import BytesIO
from typing import Any

from construct import Container

from packets import base, mqrr, optional, properties, user
from packets.errors import PacketError
from packets.generate import header_function
from packets.layout import Slot, always

__all__ = [
    "MESSAGE_PACKET_LAYOUT",
    "USER_MESSAGE_LAYOUT",
    "build_headers",
    "check_user_message",
    "parse_headers",
    "parse_trailer",
    "user_message_holds",
]

SECTION = "MS-MQMQ 2.2.20"


def _user_flag(mask: int) -> Any:
    def present(headers: Container) -> bool:
        return bool(headers["UserHeader"]["Flags"] & mask)

    return present


def _base_flag(mask: int) -> Any:
    def present(headers: Container) -> bool:
        return bool(headers["BaseHeader"]["Flags"] & mask)

    return present


# UserHeader.Flags: SH bit 19, TH bit 20, MQ bit 23, HH bit 28; BaseHeader.Flags: SH bit 4, DH bit 5.
_TH, _USER_SH, _MQ, _HH = 1 << 20, 1 << 19, 1 << 23, 1 << 28
_BASE_SH, _DH = 1 << 4, 1 << 5

USER_MESSAGE_LAYOUT: tuple[Slot, ...] = (
    Slot("UserHeader", user.USER_HEADER, always, "MS-MQMQ 2.2.19.2", (user.check_user_header,)),
    Slot(
        "TransactionHeader",
        optional.TRANSACTION_HEADER,
        _user_flag(_TH),
        optional.TRANSACTION_HEADER_SECTION,
        (optional.check_transaction_header,),
    ),
    Slot(
        "SecurityHeader",
        optional.SECURITY_HEADER,
        _user_flag(_USER_SH),
        optional.SECURITY_HEADER_SECTION,
        (optional.check_security_header,),
    ),
    # "This header MUST be present" (2.2.20); UserHeader.Flags.MP "MUST always be set" is checked.
    Slot(
        "MessagePropertiesHeader",
        properties.MESSAGE_PROPERTIES_HEADER,
        always,
        properties.SECTION,
        (properties.check_message_properties, properties.check_admin_queue),
    ),
    Slot(
        "DebugHeader",
        optional.DEBUG_HEADER,
        _base_flag(_DH),
        optional.DEBUG_HEADER_SECTION,
        (optional.check_debug_header,),
    ),
    *mqrr.SRMP_SLOTS,
    Slot(
        "SoapHeader", optional.SOAP_HEADER, _user_flag(_HH), optional.SOAP_HEADER_SECTION, (optional.check_soap_header,)
    ),
    Slot(
        "MultiQueueFormatHeader",
        optional.MULTI_QUEUE_FORMAT_HEADER,
        _user_flag(_MQ),
        optional.MQF_SECTION,
        (optional.check_multi_queue_format_header,),
    ),
    # BaseHeader.PacketSize "MUST NOT include the SessionHeader size" (2.2.19.1).
    Slot(
        "SessionHeader",
        optional.SESSION_HEADER,
        _base_flag(_BASE_SH),
        optional.SESSION_HEADER_SECTION,
        (optional.check_session_header,),
        counted=False,
    ),
)
"""Every header after the BaseHeader of a UserMessage Packet, in wire order."""

MESSAGE_PACKET_LAYOUT: tuple[Slot, ...] = USER_MESSAGE_LAYOUT + mqrr.MESSAGE_PACKET_TRAILER
"""[MS-MQRR] 2.2.5 Message Packet Structure: the UserMessage, then the MQRR trailer headers."""

_TRAILER_FUNCTIONS: dict[str, Any] = {}


def parse_trailer(
    data: bytes, pos: int, headers: Any, offsets: dict[str, int] | None = None
) -> tuple[tuple[Slot, ...], int] | None:
    """The [MS-MQRR] 2.2.5 headers that follow a UserMessage ending at ``pos``: the
    ExtensionHeader (2.2.5.2: HeaderSize, RemainingHeadersSize, Flags, Reserved; 12 bytes) and the
    SubqueueHeader, DeadLetterHeader and ExtendedAddressHeader its Flags SQ, DL and EA announce,
    decoded into ``headers`` (``offsets``: with the diagnostic parsers, recording where each field
    starts).  No UserMessage flag announces them and BaseHeader.PacketSize does not count them
    (a sender such as a Message Packet Structure copied onto the wire appends them), so they are
    taken when the bytes after the UserMessage begin with an ExtensionHeader -- a HeaderSize of 12,
    where a next packet would begin with BaseHeader.VersionNumber 0x10 -- and decode; None (and
    ``headers`` as it was) otherwise.  Returns the slots decoded and the offset after them."""
    size = mqrr.EXTENSION_HEADER_SIZE
    if len(data) - pos < size or int.from_bytes(data[pos : pos + 4], "little") != size:
        return None
    found: list[Slot] = []
    try:
        for slot in mqrr.MESSAGE_PACKET_TRAILER:
            if not slot.present(headers):
                continue
            if offsets is not None:
                io = BytesIO(data)
                io.seek(pos)
                offsets[slot.name] = pos
                value = slot.parser.diagnose(io, offsets, headers)
                after = io.tell()
            else:
                function = _TRAILER_FUNCTIONS.get(slot.name)
                if function is None:
                    function = _TRAILER_FUNCTIONS[slot.name] = header_function(slot.parser)
                value, after = function(data, pos, headers)
            headers[slot.name] = value
            found.append(slot)
            pos = after
    except Exception:
        for slot in found:
            del headers[slot.name]
        return None
    return tuple(found), pos


_PRESENCE_RULES = {
    "TransactionHeader": "UserHeader.Flags.TH",
    "SecurityHeader": "UserHeader.Flags.SH",
    "DebugHeader": "BaseHeader.Flags.DH",
    "SoapHeader": "UserHeader.Flags.HH",
    "MultiQueueFormatHeader": "UserHeader.Flags.MQ",
    "SessionHeader": "BaseHeader.Flags.SH",
    "SRMPEnvelopeHeader": "UserHeader.Flags.AH",
    "CompoundMessageHeader": "UserHeader.Flags.AH",
}


def check_user_message(headers: Container, presence: bool = True) -> Iterator[tuple[str, str, str]]:
    """Packet-level MUSTs of [MS-MQMQ] 2.2.20 (and 2.2.19.1 on a UserMessage's BaseHeader).

    ``presence=False`` skips the header-iff-flag rules, which hold by construction for headers
    that ``packets.parse`` decoded (it reads a header exactly when its flag announces it)."""
    base_flags = int(headers["BaseHeader"]["Flags"])
    if base_flags & 0x8:  # IN
        yield ("BaseHeader.Flags.IN", "MUST NOT be set in a UserMessage Packet", SECTION)
    if headers.get("UserHeader") is None:
        yield ("UserHeader", "MUST be present in every UserMessage Packet", SECTION)
        return
    if headers.get("MessagePropertiesHeader") is None:
        yield ("MessagePropertiesHeader", "MUST be present in every UserMessage Packet", SECTION)
    if headers["UserHeader"]["Flags"] & _TH and base_flags & 0x7:  # PR
        yield (
            "BaseHeader.Flags.PR",
            f"MUST be 0x0 in a packet that contains a transactional message, found 0x{base_flags & 0x7:X}",
            base.SECTION,
        )
    # Each optional header is present if and only if its flag is set (checked on built packets
    # too, where a header can be given without its flag).
    if not presence:
        return
    for slot in USER_MESSAGE_LAYOUT:
        rule = _PRESENCE_RULES.get(slot.name)
        if rule is None:
            continue
        present = headers.get(slot.name) is not None
        if present != bool(slot.present(headers)):
            state = "present" if present else "absent"
            flag_state = "clear" if present else "set"
            yield (slot.name, f"{state} but {rule} is {flag_state}: MUST be present if and only if it is set", SECTION)


def user_message_holds(headers: Container) -> bool:
    """Fast form of ``check_user_message(headers, presence=False)`` (as ``packets.parse`` runs
    it): True exactly when it finds nothing."""
    base_flags = int(headers["BaseHeader"]["Flags"])
    user_header = headers.get("UserHeader")
    return not (
        base_flags & 0x8
        or user_header is None
        or headers.get("MessagePropertiesHeader") is None
        or (user_header["Flags"] & _TH and base_flags & 0x7)
    )


# --------------------------------------------------------------------------------------------
# A plain walk over a layout (the [MS-MQRR] Message Packet Structure is not a session packet,
# so packets.codec does not parse it; these also serve the header-level tests).


_TRAILER_NAMES = frozenset(slot.name for slot in mqrr.MESSAGE_PACKET_TRAILER)


def parse_headers(data: bytes, layout: tuple[Slot, ...] = MESSAGE_PACKET_LAYOUT) -> Container:
    """Decode a BaseHeader and the headers of ``layout`` it announces (compiled parsers, then the
    interpreted ones to name the failing field); no rule checks.  A header whose presence rule
    needs bytes that are not there ends the walk (the [MS-MQRR] trailer is optional on input)."""
    try:
        return _walk(data, layout, fast=True)
    except Exception:
        return _walk(data, layout, fast=False)


def _walk(data: bytes, layout: tuple[Slot, ...], fast: bool) -> Container:
    io = BytesIO(data)
    headers = Container()
    ctx = Container(_params=Container())
    offsets: dict[str, int] = {}

    def one(parser: Any, name: str) -> Container:
        value = parser.parse_fast(io, ctx) if fast else parser.diagnose(io, offsets, headers)
        headers[name] = ctx[name] = value
        return value

    one(base.BASE_HEADER, "BaseHeader")
    for slot in layout:
        if slot.name in _TRAILER_NAMES and io.tell() == len(data):
            break
        if slot.present(headers):
            one(slot.parser, slot.name)
    if io.tell() != len(data):
        raise PacketError("", io.tell(), f"{len(data) - io.tell()} bytes follow the last header")
    return headers


def build_headers(headers: Mapping[str, Any], layout: tuple[Slot, ...] = MESSAGE_PACKET_LAYOUT) -> bytes:
    """Encode the headers present in ``headers`` in ``layout`` order; BaseHeader.PacketSize is
    computed (from the counted slots) when it is None or missing."""
    base_header = base.default_base_header(**dict(headers.get("BaseHeader") or {}))
    context = Container(headers)
    context.BaseHeader = base_header
    parts: list[bytes] = []
    counted = base.BASE_HEADER_SIZE
    for slot in layout:
        value = headers.get(slot.name)
        if value is None:
            continue
        data = slot.parser.build(value, context)
        parts.append(data)
        if slot.counted:
            counted += len(data)
    if base_header.get("PacketSize") is None:
        base_header.PacketSize = counted
    return base.BASE_HEADER.build(base_header) + b"".join(parts)
