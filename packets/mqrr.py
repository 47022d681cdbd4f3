"""The headers [MS-MQRR] 2.2.5 adds to a message read remotely (the Message Packet Structure).

Renders [MS-MQRR] 2.2.5.1.2.1 SRMPEnvelopeHeader and 2.2.5.1.2.2 CompoundMessageHeader (inside
the UserMessage, between DebugHeader and SoapHeader, present if and only if UserHeader.Flags.AH;
2.2.5.1.1 Binary Message: AH clear and both absent), and the headers that follow the
UserMessage in 2.2.5 Message Packet Structure: 2.2.5.2 ExtensionHeader (always, 12 bytes),
2.2.5.3 SubqueueHeader (148 bytes, iff ExtensionHeader.Flags.SQ), 2.2.5.4 DeadLetterHeader
(iff Flags.DL; path padded to 4) and 2.2.5.5 ExtendedAddressHeader (28 bytes, iff Flags.EA).
None of them is announced by a UserMessage flag: they exist only in the Message Packet
Structure that R_StartReceive/R_StartTransactionalReceive return, never on an [MS-MQQB]
session; BaseHeader.PacketSize (a UserMessage field) does not count them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import construct as c
from construct import Computed, Container, Default, If, Rebuild, Tell, this

from packets.errors import PacketError
from packets.fields import (
    BitFlags,
    Data,
    FlagsField,
    Header,
    Hex16ul,
    Hex32ul,
    Int16ul,
    Int32ul,
    Pad,
    Utf16z,
    decode_utf16,
    encode_utf16z,
    header_parser,
    pad4,
)
from packets.layout import Check, Slot, always
from packets.user import Utf16Terminated, flag, is_valid_message_class

__all__ = [
    "COMPOUND_MESSAGE_HEADER",
    "DEAD_LETTER_HEADER",
    "EXTENDED_ADDRESS_HEADER",
    "EXTENSION_HEADER",
    "MESSAGE_PACKET_TRAILER",
    "SRMP_ENVELOPE_HEADER",
    "SRMP_SLOTS",
    "SUBQUEUE_HEADER",
    "CompoundMessageHeader",
    "DeadLetterHeader",
    "ExtendedAddressHeader",
    "ExtensionHeader",
    "ExtensionHeaderFlags",
    "SRMPEnvelopeHeader",
    "SubqueueHeader",
    "SubqueueHeaderBits",
    "check_binary_message",
    "check_compound_message_header",
    "check_dead_letter_header",
    "check_extended_address_header",
    "check_extension_header",
    "check_srmp_envelope_header",
    "check_subqueue_header",
    "fixed_utf16",
]

SRMP_SECTION = "MS-MQRR 2.2.5.1.2.1"
COMPOUND_SECTION = "MS-MQRR 2.2.5.1.2.2"
BINARY_SECTION = "MS-MQRR 2.2.5.1.1"
EXTENSION_SECTION = "MS-MQRR 2.2.5.2"
SUBQUEUE_SECTION = "MS-MQRR 2.2.5.3"
DEAD_LETTER_SECTION = "MS-MQRR 2.2.5.4"
EXTENDED_ADDRESS_SECTION = "MS-MQRR 2.2.5.5"

EXTENSION_HEADER_SIZE = 12
SUBQUEUE_HEADER_SIZE = 148
EXTENDED_ADDRESS_HEADER_SIZE = 28
SUBQUEUE_NAME_SIZE = 64
IP_ADDRESS_TYPE = 0x0001
IPV6_ADDRESS_TYPE = 0x0006


# --------------------------------------------------------------------------------------------
# 2.2.5.1.2.1 SRMPEnvelopeHeader, 2.2.5.1.2.2 CompoundMessageHeader


def _wchars(key: str) -> Any:
    def count(ctx: Any) -> int:
        text = ctx.get(key)
        return 0 if text is None else len(encode_utf16z(text)) // 2

    return count


SRMPEnvelopeHeader = Header(
    "HeaderId" / Hex16ul,
    "Reserved" / Default(Hex16ul, 0),
    # "the length of the data in the Data field", the Data being WCHARs with their NUL: read
    # as a WCHAR count, like SoapHeader.HeaderDataLength ([MS-MQMQ] 2.2.20.7).
    "DataLength" / Default(Int32ul, _wchars("Data")),
    "Data" / If(this.DataLength > 0, Utf16z(this.DataLength * 2)),
    # No padding is stated; [MS-MQMQ] 2.2.19.1 keeps headers on 4-byte boundaries.
    "_pad" / Pad((4 - this.DataLength * 2 % 4) % 4),
)
SRMP_ENVELOPE_HEADER = header_parser("SRMPEnvelopeHeader", SRMPEnvelopeHeader)


CompoundMessageHeader = Header(
    "HeaderId" / Hex16ul,
    "Reserved" / Default(Hex16ul, 0),
    "HTTPBodySize" / Default(Int32ul, lambda ctx: len(ctx.get("Data") or b"")),
    "MsgBodySize" / Int32ul,
    "MsgBodyOffset" / Int32ul,
    "Data" / Data(this.HTTPBodySize),
    "_pad" / Pad((4 - this.HTTPBodySize % 4) % 4),
)
COMPOUND_MESSAGE_HEADER = header_parser("CompoundMessageHeader", CompoundMessageHeader)


def check_srmp_envelope_header(headers: Container) -> Iterator[tuple[str, str, str]]:
    """[MS-MQRR] 2.2.5.1.2.1: Data is WCHARs including the NULL terminator."""
    env = headers.SRMPEnvelopeHeader
    data = env.get("Data")
    if env.DataLength == 0:
        if data is not None:
            yield ("SRMPEnvelopeHeader.Data", "present although DataLength is 0", SRMP_SECTION)
        return
    if data is None or len(encode_utf16z(data)) // 2 != env.DataLength:
        yield (
            "SRMPEnvelopeHeader.Data",
            "MUST include the NULL terminator as its last WCHAR (DataLength does not match)",
            SRMP_SECTION,
        )


def check_compound_message_header(headers: Container) -> Iterator[tuple[str, str, str]]:
    """[MS-MQRR] 2.2.5.1.2.2: sizes and the body offset lie within Data."""
    cmh = headers.CompoundMessageHeader
    data = cmh.get("Data") or b""
    if cmh.HTTPBodySize != len(data):
        yield ("CompoundMessageHeader.HTTPBodySize", f"MUST be the size of Data ({len(data)})", COMPOUND_SECTION)
    if cmh.MsgBodyOffset + cmh.MsgBodySize > cmh.HTTPBodySize:
        yield (
            "CompoundMessageHeader.MsgBodyOffset",
            f"the body ({cmh.MsgBodySize} bytes at {cmh.MsgBodyOffset}) lies outside Data ({cmh.HTTPBodySize} bytes)",
            COMPOUND_SECTION,
        )


def check_binary_message(headers: Container) -> Iterator[tuple[str, str, str]]:
    """[MS-MQRR] 2.2.5.1.1/2.2.5.1.2: both SRMP headers present if and only if AH is set."""
    ah = bool(int(headers.UserHeader.Flags) >> 25 & 1)
    for name in ("SRMPEnvelopeHeader", "CompoundMessageHeader"):
        present = headers.get(name) is not None
        if present and not ah:
            yield (name, "MUST NOT be present in a Binary Message (UserHeader.Flags.AH clear)", BINARY_SECTION)
        if ah and not present:
            yield (name, "MUST be present in an SRMP Message (UserHeader.Flags.AH set)", "MS-MQRR 2.2.5.1.2")


def _ah(headers: Container) -> bool:
    return bool(headers["UserHeader"]["Flags"] & 0x02000000)


SRMP_SLOTS: tuple[Slot, ...] = (
    Slot("SRMPEnvelopeHeader", SRMP_ENVELOPE_HEADER, _ah, SRMP_SECTION, (check_srmp_envelope_header,)),
    Slot("CompoundMessageHeader", COMPOUND_MESSAGE_HEADER, _ah, COMPOUND_SECTION, (check_compound_message_header,)),
)
"""The two [MS-MQRR] 2.2.5.1 headers between DebugHeader and SoapHeader."""


# --------------------------------------------------------------------------------------------
# 2.2.5.2 ExtensionHeader


class ExtensionHeaderFlags(BitFlags):
    """ExtensionHeader.Flags ([MS-MQRR] 2.2.5.2): DL, SQ, X2, DI, EA, X5-X7."""

    DL: int
    SQ: int
    X2: int
    DI: int
    EA: int
    X5: int
    X6: int
    X7: int
    _width_ = 8
    _fields_ = (
        ("DL", 0, 1),
        ("SQ", 1, 1),
        ("X2", 2, 1),
        ("DI", 3, 1),
        ("EA", 4, 1),
        ("X5", 5, 1),
        ("X6", 6, 1),
        ("X7", 7, 1),
    )


TRAILER_NAMES = ("SubqueueHeader", "DeadLetterHeader", "ExtendedAddressHeader")


def _remaining_headers_size(ctx: Any) -> int:
    packet = ctx.get("_") or {}
    total = 0
    for name, parser in zip(TRAILER_NAMES, (SUBQUEUE_HEADER, DEAD_LETTER_HEADER, EXTENDED_ADDRESS_HEADER), strict=True):
        if packet.get(name) is not None:
            try:
                total += len(parser.build(packet[name]))
            except PacketError as e:  # its offset, from the ExtensionHeader's first byte
                if e.offset < 0:
                    raise
                raise PacketError(e.field_path, EXTENSION_HEADER_SIZE + total + e.offset, e.reason, e.section) from None
    return total


ExtensionHeader = Header(
    "HeaderSize" / Default(Int32ul, EXTENSION_HEADER_SIZE),
    "RemainingHeadersSize" / Default(Int32ul, _remaining_headers_size),
    "Flags" / FlagsField(ExtensionHeaderFlags),
    "Reserved" / Default(c.Bytes(3), bytes(3)),
)


# --------------------------------------------------------------------------------------------
# 2.2.5.3 SubqueueHeader


class SubqueueHeaderBits(BitFlags):
    """The second 32-bit word of the SubqueueHeader ([MS-MQRR] 2.2.5.3): TM (1 bit),
    AcknowledgementClass (16 bits), Reserved (15 bits), bit 0 = least-significant bit."""

    TM: int
    AcknowledgementClass: int
    Reserved: int
    _width_ = 32
    _fields_ = (("TM", 0, 1), ("AcknowledgementClass", 1, 16), ("Reserved", 17, 15))


def _subqueue_bits(ctx: Any) -> SubqueueHeaderBits:
    return SubqueueHeaderBits.make(  # type: ignore[return-value]
        TM=ctx.get("TM") or 0,
        AcknowledgementClass=ctx.get("AcknowledgementClass") or 0,
        Reserved=ctx.get("Reserved") or 0,
    )


SubqueueHeader = Header(
    "HeaderSize" / Default(Int32ul, SUBQUEUE_HEADER_SIZE),
    # TM, AcknowledgementClass and Reserved share one 32-bit word that has no name of its own:
    # the word is kept under "_word" and its three spec fields are read out of it.
    "_word" / Rebuild(FlagsField(SubqueueHeaderBits), _subqueue_bits),
    "TM" / Computed(flag(this._word, SubqueueHeaderBits, "TM")),
    "AcknowledgementClass" / Computed(flag(this._word, SubqueueHeaderBits, "AcknowledgementClass")),
    "Reserved" / Computed(flag(this._word, SubqueueHeaderBits, "Reserved")),
    "AbortCounter" / Int32ul,
    "MoveCounter" / Int32ul,
    "LastMoveTime" / Int32ul,
    "SubqueueName" / Default(c.Bytes(SUBQUEUE_NAME_SIZE), bytes(SUBQUEUE_NAME_SIZE)),
    "TargetSubqueueName" / Default(c.Bytes(SUBQUEUE_NAME_SIZE), bytes(SUBQUEUE_NAME_SIZE)),
)
SUBQUEUE_HEADER = header_parser("SubqueueHeader", SubqueueHeader)


def fixed_utf16(text: str, size: int = SUBQUEUE_NAME_SIZE) -> bytes:
    """A null-terminated UTF-16LE name in a zero-filled field of ``size`` bytes."""
    data = encode_utf16z(text)
    if len(data) > size:
        raise ValueError(f"{text!r} needs {len(data)} bytes, the field holds {size}")
    return data + bytes(size - len(data))


def _check_fixed_name(path: str, raw: bytes) -> Iterator[tuple[str, str, str]]:
    units = [raw[i : i + 2] for i in range(0, len(raw), 2)]
    if b"\0\0" not in units:
        yield (path, "the name MUST be null-terminated within its 64 bytes", SUBQUEUE_SECTION)
        return
    end = units.index(b"\0\0")
    if any(raw[2 * end :]):
        yield (path, "the bytes after the terminating null character MUST be 0x00", SUBQUEUE_SECTION)


def subqueue_name(raw: bytes) -> str:
    """The text of a SubqueueName/TargetSubqueueName field (empty when all zero)."""
    units = [raw[i : i + 2] for i in range(0, len(raw) - len(raw) % 2, 2)]
    end = units.index(b"\0\0") if b"\0\0" in units else len(units)
    return decode_utf16(b"".join(units[:end]))


def check_subqueue_header(headers: Container) -> Iterator[tuple[str, str, str]]:
    """MUSTs of [MS-MQRR] 2.2.5.3."""
    sq = headers.SubqueueHeader
    if sq.HeaderSize != SUBQUEUE_HEADER_SIZE:
        yield ("SubqueueHeader.HeaderSize", f"MUST be the header size 148, found {sq.HeaderSize}", SUBQUEUE_SECTION)
    if sq.TM:
        yield ("SubqueueHeader.TM", "MUST be set to 0", SUBQUEUE_SECTION)
    if not is_valid_message_class(sq.AcknowledgementClass):
        yield (
            "SubqueueHeader.AcknowledgementClass",
            f"0x{sq.AcknowledgementClass:04X} is not a message class ([MS-MQMQ] 2.2.18.1.6)",
            SUBQUEUE_SECTION,
        )
    yield from _check_fixed_name("SubqueueHeader.SubqueueName", bytes(sq.SubqueueName))
    yield from _check_fixed_name("SubqueueHeader.TargetSubqueueName", bytes(sq.TargetSubqueueName))


# --------------------------------------------------------------------------------------------
# 2.2.5.4 DeadLetterHeader


def _dead_letter_size(ctx: Any) -> int:
    n = len(encode_utf16z(ctx.get("DeadLetterPathName") or ""))
    return 4 + n + pad4(n)


DeadLetterHeader = Header(
    "_start" / Tell,
    "HeaderSize" / Default(Int32ul, _dead_letter_size),
    "DeadLetterPathName" / Utf16Terminated(),
    "_end" / Tell,
    # "aligned up to the next 4-byte boundary by adding padding zeros"; HeaderSize is the total.
    "_pad" / Pad(this.HeaderSize - (this._end - this._start), "HeaderSize", this._start),
)
DEAD_LETTER_HEADER = header_parser("DeadLetterHeader", DeadLetterHeader)


def check_dead_letter_header(headers: Container) -> Iterator[tuple[str, str, str]]:
    """MUSTs of [MS-MQRR] 2.2.5.4."""
    dl = headers.DeadLetterHeader
    n = len(encode_utf16z(dl.DeadLetterPathName or ""))
    if dl.HeaderSize != 4 + n + pad4(n):
        yield (
            "DeadLetterHeader.HeaderSize",
            f"MUST be the total size {4 + n + pad4(n)} (path with its NUL, aligned up to 4), found {dl.HeaderSize}",
            DEAD_LETTER_SECTION,
        )
    if any(dl.get("_pad") or b""):
        yield ("DeadLetterHeader.DeadLetterPathName", "padding MUST be zeros", DEAD_LETTER_SECTION)
    if "\0" in (dl.DeadLetterPathName or ""):
        yield ("DeadLetterHeader.DeadLetterPathName", "NUL inside the path", DEAD_LETTER_SECTION)


# --------------------------------------------------------------------------------------------
# 2.2.5.5 ExtendedAddressHeader


ExtendedAddressHeader = Header(
    "HeaderSize" / Default(Int32ul, EXTENDED_ADDRESS_HEADER_SIZE),
    "AddressLength" / Int16ul,
    "AddressType" / Hex16ul,
    "AddressScope" / Default(Hex32ul, 0),
    "Address" / Default(c.Bytes(16), bytes(16)),
)
EXTENDED_ADDRESS_HEADER = header_parser("ExtendedAddressHeader", ExtendedAddressHeader)


def check_extended_address_header(headers: Container) -> Iterator[tuple[str, str, str]]:
    """MUSTs of [MS-MQRR] 2.2.5.5 (AddressType 0x0000: the header MUST be ignored)."""
    ea = headers.ExtendedAddressHeader
    section = EXTENDED_ADDRESS_SECTION
    if ea.HeaderSize != EXTENDED_ADDRESS_HEADER_SIZE:
        yield ("ExtendedAddressHeader.HeaderSize", f"MUST be the header size 28, found {ea.HeaderSize}", section)
    if ea.AddressType == 0:
        return
    if ea.AddressType not in (IP_ADDRESS_TYPE, IPV6_ADDRESS_TYPE):
        yield (
            "ExtendedAddressHeader.AddressType",
            f"MUST be 0x0000, 0x0001 or 0x0006, found 0x{ea.AddressType:04X}",
            section,
        )
        return
    expected = 4 if ea.AddressType == IP_ADDRESS_TYPE else 16
    if ea.AddressLength != expected:
        yield (
            "ExtendedAddressHeader.AddressLength",
            f"MUST be the address length {expected}, found {ea.AddressLength}",
            section,
        )
    if ea.AddressType == IP_ADDRESS_TYPE and ea.AddressScope != 0:
        yield ("ExtendedAddressHeader.AddressScope", "MUST be 0x00000000 unless the address is IPv6", section)


# --------------------------------------------------------------------------------------------
# ExtensionHeader checks and the trailer layout


def check_extension_header(headers: Container) -> Iterator[tuple[str, str, str]]:
    """MUSTs of [MS-MQRR] 2.2.5.2."""
    ext = headers.ExtensionHeader
    flags = ExtensionHeaderFlags(int(ext.Flags))
    section = EXTENSION_SECTION
    if ext.HeaderSize != EXTENSION_HEADER_SIZE:
        yield ("ExtensionHeader.HeaderSize", f"MUST be the header size 12, found {ext.HeaderSize}", section)
    if not flags.SQ:
        yield ("ExtensionHeader.Flags.SQ", "MUST be set to 1", section)
    if not flags.EA:
        yield ("ExtensionHeader.Flags.EA", "MUST be set to 1", section)
    for bit, name in (("DL", "DeadLetterHeader"), ("SQ", "SubqueueHeader"), ("EA", "ExtendedAddressHeader")):
        if bool(getattr(flags, bit)) != (headers.get(name) is not None):
            yield (f"ExtensionHeader.Flags.{bit}", f"MUST be 1 if and only if the {name} is present", section)
    try:
        remaining = _remaining_headers_size(Container(_=headers))
    except Exception:  # a trailing header that cannot be encoded is reported by its own check
        return
    if ext.RemainingHeadersSize != remaining:
        yield (
            "ExtensionHeader.RemainingHeadersSize",
            f"MUST be the sum of the sizes of the headers that follow ({remaining}), found {ext.RemainingHeadersSize}",
            section,
        )


EXTENSION_HEADER = header_parser("ExtensionHeader", ExtensionHeader)


def _ext_flag(bit: str) -> Any:
    def present(headers: Container) -> bool:
        ext = headers.get("ExtensionHeader")
        return ext is not None and bool(getattr(ExtensionHeaderFlags(int(ext.Flags)), bit))

    return present


_checks: dict[str, tuple[Check, ...]] = {
    "ExtensionHeader": (check_extension_header,),
    "SubqueueHeader": (check_subqueue_header,),
    "DeadLetterHeader": (check_dead_letter_header,),
    "ExtendedAddressHeader": (check_extended_address_header,),
}

MESSAGE_PACKET_TRAILER: tuple[Slot, ...] = (
    Slot("ExtensionHeader", EXTENSION_HEADER, always, EXTENSION_SECTION, _checks["ExtensionHeader"], counted=False),
    Slot(
        "SubqueueHeader", SUBQUEUE_HEADER, _ext_flag("SQ"), SUBQUEUE_SECTION, _checks["SubqueueHeader"], counted=False
    ),
    Slot(
        "DeadLetterHeader",
        DEAD_LETTER_HEADER,
        _ext_flag("DL"),
        DEAD_LETTER_SECTION,
        _checks["DeadLetterHeader"],
        counted=False,
    ),
    Slot(
        "ExtendedAddressHeader",
        EXTENDED_ADDRESS_HEADER,
        _ext_flag("EA"),
        EXTENDED_ADDRESS_SECTION,
        _checks["ExtendedAddressHeader"],
        counted=False,
    ),
)
"""The headers after the UserMessage in [MS-MQRR] 2.2.5, in the order of its diagram."""
