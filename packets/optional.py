"""Optional headers of the UserMessage Packet.

Renders [MS-MQMQ] 2.2.20.4 SessionHeader (also the body of the [MS-MQQB] 2.2.6 SessionAck
Packet), 2.2.20.5 TransactionHeader (ConnectorQMGuid iff Flags.CG), 2.2.20.6 SecurityHeader
(SecurityData items each aligned up to 4 bytes), 2.2.20.8 DebugHeader (QueueIdentifier iff
Flags.QT is 1), 2.2.20.7 SoapHeader, and 2.2.20.1 MultiQueueFormatHeader with its 2.2.20.2
MQFAddressHeader parts and 2.2.20.3 MQFSignatureHeader, with the MUST rules a receiver can check
on each.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from construct import Container, Default, If, Tell, this

from packets.fields import (
    BitFlags,
    Data,
    ElementList,
    Elements,
    FlagsField,
    Guid,
    Header,
    Hex16ul,
    Hex32ul,
    Int16ul,
    Int32ul,
    Pad,
    Utf16z,
    encode_utf16z,
    header_parser,
    pad4,
    reads_own_fields,
)
from packets.generate import element_functions
from packets.layout import fast_form_of
from packets.user import MQFFormatNameElement, TxSequenceID, flag

SESSION_HEADER_SECTION = "MS-MQMQ 2.2.20.4"

SessionHeader = Header(
    "AckSequenceNumber" / Int16ul,
    "RecoverableMsgAckSeqNumber" / Int16ul,
    "RecoverableMsgAckFlags" / Hex32ul,
    "UserMsgSequenceNumber" / Int16ul,
    "RecoverableMsgSeqNumber" / Int16ul,
    "WindowSize" / Int16ul,
    "Reserved" / Hex16ul,
)
SESSION_HEADER = header_parser("SessionHeader", SessionHeader)


def check_session_header(headers: Container) -> Iterator[tuple[str, str, str]]:
    """[MS-MQMQ] 2.2.20.4: WindowSize has a valid range from 0x0001 to 0xFFFF."""
    if headers.SessionHeader.WindowSize == 0:
        yield ("SessionHeader.WindowSize", "MUST be in 0x0001-0xFFFF, found 0", SESSION_HEADER_SECTION)


@fast_form_of(check_session_header)
def session_header_holds(headers: Container) -> bool:
    """Fast form of :func:`check_session_header`."""
    return bool(headers["SessionHeader"]["WindowSize"] != 0)


# --------------------------------------------------------------------------------------------
# 2.2.20.5 TransactionHeader

TRANSACTION_HEADER_SECTION = "MS-MQMQ 2.2.20.5"


class TransactionHeaderFlags(BitFlags):
    """TransactionHeader.Flags ([MS-MQMQ] 2.2.20.5): CG, FA, FM, LM, 20-bit ID, X1-X8."""

    CG: int
    FA: int
    FM: int
    LM: int
    ID: int
    X1: int
    X2: int
    X3: int
    X4: int
    X5: int
    X6: int
    X7: int
    X8: int
    _width_ = 32
    _fields_ = (
        ("CG", 0, 1),
        ("FA", 1, 1),
        ("FM", 2, 1),
        ("LM", 3, 1),
        ("ID", 4, 20),
        ("X1", 24, 1),
        ("X2", 25, 1),
        ("X3", 26, 1),
        ("X4", 27, 1),
        ("X5", 28, 1),
        ("X6", 29, 1),
        ("X7", 30, 1),
        ("X8", 31, 1),
    )


TransactionHeader = Header(
    "Flags" / FlagsField(TransactionHeaderFlags),
    "TxSequenceID" / TxSequenceID,
    "TxSequenceNumber" / Int32ul,
    "PreviousTxSequenceNumber" / Int32ul,
    "ConnectorQMGuid" / If(flag(this.Flags, TransactionHeaderFlags, "CG") == 1, Guid),
)
TRANSACTION_HEADER = header_parser("TransactionHeader", TransactionHeader)


def default_transaction_header(tx_sequence_id: int = 0, **fields: object) -> Container:
    """A TransactionHeader ([MS-MQMQ] 2.2.20.5) of the first and last message of a one-message
    transaction: Flags FM and LM, no ConnectorQMGuid (CG 0), TxSequenceNumber 1,
    PreviousTxSequenceNumber 0; ``tx_sequence_id`` is the 64-bit TxSequenceID (2.2.18.1.2: Ordinal
    its low 32 bits, TimeStamp its high 32 bits); ``fields`` override the rest."""
    header = Container(
        Flags=TransactionHeaderFlags.make(FM=1, LM=1),
        TxSequenceID=Container(Ordinal=tx_sequence_id & 0xFFFFFFFF, TimeStamp=tx_sequence_id >> 32 & 0xFFFFFFFF),
        TxSequenceNumber=1,
        PreviousTxSequenceNumber=0,
        ConnectorQMGuid=None,
    )
    header.update(fields)
    return header


def check_transaction_header(headers: Container) -> Iterator[tuple[str, str, str]]:
    """MUSTs of [MS-MQMQ] 2.2.20.5.

    The header says "any value not specified in the table MUST be treated as an error by
    closing the session", while its bit table says X1-X8 "MUST be ignored on receipt": the bit
    table is the more specific rule, so set X bits are not reported.
    """
    tx = headers.TransactionHeader
    flags = TransactionHeaderFlags(int(tx.Flags))
    section = TRANSACTION_HEADER_SECTION
    if tx.TxSequenceNumber == 0:
        yield ("TransactionHeader.TxSequenceNumber", "MUST be in 0x00000001-0xFFFFFFFF, found 0", section)
    if tx.PreviousTxSequenceNumber == 0xFFFFFFFF:
        yield (
            "TransactionHeader.PreviousTxSequenceNumber",
            "MUST be in 0x00000000-0xFFFFFFFE, found 0xFFFFFFFF",
            section,
        )
    if bool(flags.CG) != (tx.get("ConnectorQMGuid") is not None):
        yield ("TransactionHeader.ConnectorQMGuid", "MUST be present if and only if Flags.CG is set", section)


@fast_form_of(check_transaction_header)
def transaction_header_holds(headers: Container) -> bool:
    """Fast form of :func:`check_transaction_header`: True exactly when it finds nothing."""
    tx = headers["TransactionHeader"]
    return (
        tx["TxSequenceNumber"] != 0
        and tx["PreviousTxSequenceNumber"] != 0xFFFFFFFF
        and bool(int(tx["Flags"]) & 1) == (tx.get("ConnectorQMGuid") is not None)
    )


# --------------------------------------------------------------------------------------------
# 2.2.20.6 SecurityHeader

SECURITY_HEADER_SECTION = "MS-MQMQ 2.2.20.6"


class SecurityHeaderFlags(BitFlags):
    """SecurityHeader.Flags ([MS-MQMQ] 2.2.20.6): ST, AU, EB, DE, AI, AS, X12-X15."""

    ST: int
    AU: int
    EB: int
    DE: int
    AI: int
    AS: int
    X12: int
    X13: int
    X14: int
    X15: int
    _width_ = 16
    _fields_ = (
        ("ST", 0, 4),
        ("AU", 4, 1),
        ("EB", 5, 1),
        ("DE", 6, 1),
        ("AI", 7, 1),
        ("AS", 8, 4),
        ("X12", 12, 1),
        ("X13", 13, 1),
        ("X14", 14, 1),
        ("X15", 15, 1),
    )


def _aligned_item(name: str, size: Any, pad_name: str) -> tuple[Any, Any]:
    """A SecurityData item of ``size`` bytes and its padding up to the next 4-byte boundary
    (an item of size zero occupies no space)."""
    return (name / Data(size), pad_name / Pad((4 - size % 4) % 4))


SecurityData = Header(
    *_aligned_item("SecurityID", this._.SenderIdSize, "_pad0"),
    *_aligned_item("EncryptionKey", this._.EncryptionKeySize, "_pad1"),
    *_aligned_item("Signature", this._.SignatureSize, "_pad2"),
    *_aligned_item("SenderCert", this._.SenderCertSize, "_pad3"),
    *_aligned_item("ProviderInfo", this._.ProviderInfoSize, "_pad4"),
)
"""[MS-MQMQ] 2.2.20.6 SecurityData: five items in this order, each aligned up to 4 bytes."""


def _security_size(item: str) -> Any:
    return reads_own_fields(lambda ctx: len((ctx.get("SecurityData") or {}).get(item) or b""))


SecurityHeader = Header(
    "Flags" / FlagsField(SecurityHeaderFlags),
    "SenderIdSize" / Default(Int16ul, _security_size("SecurityID")),
    "EncryptionKeySize" / Default(Int16ul, _security_size("EncryptionKey")),
    "SignatureSize" / Default(Int16ul, _security_size("Signature")),
    "SenderCertSize" / Default(Int32ul, _security_size("SenderCert")),
    "ProviderInfoSize" / Default(Int32ul, _security_size("ProviderInfo")),
    "SecurityData" / SecurityData,
)
SECURITY_HEADER = header_parser("SecurityHeader", SecurityHeader)

SECURITY_SIZES = ("SenderIdSize", "EncryptionKeySize", "SignatureSize", "SenderCertSize", "ProviderInfoSize")
SECURITY_ITEMS = ("SecurityID", "EncryptionKey", "Signature", "SenderCert", "ProviderInfo")


def check_security_header(headers: Container) -> Iterator[tuple[str, str, str]]:
    """MUSTs of [MS-MQMQ] 2.2.20.6."""
    sec = headers.SecurityHeader
    flags = SecurityHeaderFlags(int(sec.Flags))
    section = SECURITY_HEADER_SECTION
    if flags.ST not in (0, 1, 2):
        yield ("SecurityHeader.Flags.ST", f"MUST be 0x0, 0x1 or 0x2, found 0x{flags.ST:X}", section)
    if flags.ST == 0 and sec.SenderIdSize != 0:
        yield ("SecurityHeader.SenderIdSize", "MUST be 0x0000 when Flags.ST is 0x0", section)
    if flags.AU:
        yield ("SecurityHeader.Flags.AU", "MUST be set to 0", section)
    if flags.AS:
        yield ("SecurityHeader.Flags.AS", f"MUST be set to 0, found 0x{flags.AS:X}", section)
    if not any(sec[name] for name in SECURITY_SIZES):
        yield (
            "SecurityHeader",
            "at least one of SenderIdSize, EncryptionKeySize, SignatureSize, SenderCertSize and "
            "ProviderInfoSize MUST be nonzero",
            section,
        )
    if sec.SenderCertSize > 0xFFFF:
        yield ("SecurityHeader.SenderCertSize", f"MUST be at most 0x0000FFFF, found 0x{sec.SenderCertSize:X}", section)
    data = sec.get("SecurityData") or {}
    for size_name, item in zip(SECURITY_SIZES, SECURITY_ITEMS, strict=True):
        held = len(data.get(item) or b"")
        if held != sec[size_name]:
            yield (f"SecurityHeader.{size_name}", f"{sec[size_name]} but SecurityData.{item} holds {held}", section)


# --------------------------------------------------------------------------------------------
# 2.2.20.8 DebugHeader

DEBUG_HEADER_SECTION = "MS-MQMQ 2.2.20.8"


class DebugHeaderFlags(BitFlags):
    """DebugHeader.Flags ([MS-MQMQ] 2.2.20.8): QT (2 bits), X2-X15."""

    QT: int
    X2: int
    X3: int
    X4: int
    X5: int
    X6: int
    X7: int
    X8: int
    X9: int
    X10: int
    X11: int
    X12: int
    X13: int
    X14: int
    X15: int
    _width_ = 16
    _fields_ = (("QT", 0, 2), *((f"X{i}", i, 1) for i in range(2, 16)))


DebugHeader = Header(
    "Flags" / FlagsField(DebugHeaderFlags),
    "Reserved" / Default(Hex16ul, 0),
    "QueueIdentifier" / If(flag(this.Flags, DebugHeaderFlags, "QT") == 1, Guid),
)
DEBUG_HEADER = header_parser("DebugHeader", DebugHeader)


def check_debug_header(headers: Container) -> Iterator[tuple[str, str, str]]:
    """MUSTs of [MS-MQMQ] 2.2.20.8."""
    dbg = headers.DebugHeader
    qt = int(dbg.Flags) & 0x3
    if qt not in (0, 1):
        yield ("DebugHeader.Flags.QT", f"MUST be 0x0 or 0x1, found 0x{qt:X}", DEBUG_HEADER_SECTION)
    if (qt == 1) != (dbg.get("QueueIdentifier") is not None):
        yield (
            "DebugHeader.QueueIdentifier",
            "MUST be present when Flags.QT is 0x1 and MUST NOT be present otherwise",
            DEBUG_HEADER_SECTION,
        )


# --------------------------------------------------------------------------------------------
# 2.2.20.7 SoapHeader

SOAP_HEADER_SECTION = "MS-MQMQ 2.2.20.7"
SOAP_HEADER_SECTION_ID = 0x0320
SOAP_BODY_SECTION_ID = 0x0384


def _wchars_of(key: str) -> Any:
    @reads_own_fields
    def count(ctx: Any) -> int:
        text = ctx.get(key)
        return 0 if text is None else len(encode_utf16z(text)) // 2

    return count


SoapHeader = Header(
    "HeaderSectionID" / Default(Hex16ul, SOAP_HEADER_SECTION_ID),
    "Reserved" / Default(Hex16ul, 0),
    "HeaderDataLength" / Default(Int32ul, _wchars_of("Header")),
    "Header" / If(this.HeaderDataLength > 0, Utf16z(this.HeaderDataLength * 2)),
    "BodySectionID" / Default(Hex16ul, SOAP_BODY_SECTION_ID),
    "Reserved1" / Default(Hex16ul, 0),
    "BodyDataLength" / Default(Int32ul, _wchars_of("Body")),
    "Body" / If(this.BodyDataLength > 0, Utf16z(this.BodyDataLength * 2)),
    # 2.2.20.7 states no padding, but 2.2.19.1 keeps every header on a 4-byte boundary
    # (PacketSize counts "padding bytes used to align the various message headers").
    "_pad" / Pad((4 - (this.HeaderDataLength + this.BodyDataLength) * 2 % 4) % 4),
)
SOAP_HEADER = header_parser("SoapHeader", SoapHeader)


def _check_wchars(path: str, length: int, text: str | None, section: str) -> Iterator[tuple[str, str, str]]:
    if length == 0:
        if text is not None:
            yield (path, "present although its length is 0", section)
        return
    if text is None:
        yield (path, f"missing although its length is {length}", section)
        return
    if len(encode_utf16z(text)) // 2 != length:
        yield (
            path,
            f"length {length} MUST count the WCHARs including the terminating null character "
            "(terminating null character missing or misplaced)",
            section,
        )


def check_soap_header(headers: Container) -> Iterator[tuple[str, str, str]]:
    """MUSTs of [MS-MQMQ] 2.2.20.7."""
    soap = headers.SoapHeader
    section = SOAP_HEADER_SECTION
    if soap.HeaderSectionID != SOAP_HEADER_SECTION_ID:
        yield ("SoapHeader.HeaderSectionID", f"MUST be 0x0320, found 0x{soap.HeaderSectionID:04X}", section)
    if soap.BodySectionID != SOAP_BODY_SECTION_ID:
        yield ("SoapHeader.BodySectionID", f"MUST be 0x0384, found 0x{soap.BodySectionID:04X}", section)
    yield from _check_wchars("SoapHeader.Header", soap.HeaderDataLength, soap.get("Header"), section)
    yield from _check_wchars("SoapHeader.Body", soap.BodyDataLength, soap.get("Body"), section)


# --------------------------------------------------------------------------------------------
# 2.2.20.1 MultiQueueFormatHeader, 2.2.20.2 MQFAddressHeader, 2.2.20.3 MQFSignatureHeader

MQF_SECTION = "MS-MQMQ 2.2.20.1"
MQF_ADDRESS_SECTION = "MS-MQMQ 2.2.20.2"
MQF_SIGNATURE_SECTION = "MS-MQMQ 2.2.20.3"
MQF_DESTINATION_ID = 0x0064
MQF_ADMIN_ID = 0x00C8
MQF_RESPONSE_ID = 0x012C
MQF_SIGNATURE_ID = 0x015E
MQF_ADDRESS_FIXED_SIZE = 12


FORMAT_NAME_LIST = ElementList(this.ElementCount, MQFFormatNameElement, "MQFFormatNameElement", element_functions)
"""ElementCount MQFFormatNameElement structures ([MS-MQMQ] 2.2.18.1.4), one after another."""


def format_name_list_size(elements: Any) -> int:
    """Bytes of a FormatNameList starting on a 4-byte boundary, before its end padding."""
    return FORMAT_NAME_LIST.encoded_size(elements or [], 0)


@reads_own_fields
def _address_header_size(ctx: Any) -> int:
    n = format_name_list_size(ctx.get("FormatNameList") or [])
    return MQF_ADDRESS_FIXED_SIZE + n + pad4(n)


MQFAddressHeader = Header(
    "_start" / Tell,
    "HeaderSize" / Default(Int32ul, _address_header_size),
    "HeaderID" / Hex16ul,
    "Reserved" / Default(Hex16ul, 0),
    "ElementCount" / Default(Int32ul, reads_own_fields(lambda ctx: len(ctx.get("FormatNameList") or []))),
    "FormatNameList" / FORMAT_NAME_LIST,
    "_end" / Tell,
    # "The end of this field is rounded up to the next 4-byte boundary"; HeaderSize counts it.
    "_pad" / Pad(this.HeaderSize - (this._end - this._start), "HeaderSize", this._start),
)
MQF_ADDRESS_HEADER = header_parser("MQFAddressHeader", MQFAddressHeader)


MQFSignatureHeader = Header(
    "ID" / Default(Hex16ul, MQF_SIGNATURE_ID),
    "Reserved" / Default(Hex16ul, 0),
    "Size" / Default(Int32ul, lambda ctx: len(ctx.get("Signature") or b"")),
    "Signature" / Data(this.Size),
)
MQF_SIGNATURE_HEADER = header_parser("MQFSignatureHeader", MQFSignatureHeader)


MultiQueueFormatHeader = Header(
    "Destination" / MQFAddressHeader,
    "Administration" / MQFAddressHeader,
    "Response" / MQFAddressHeader,
    "Signature" / MQFSignatureHeader,
    # 2.2.20.1 rounds only the three address parts; 2.2.19.1 keeps headers 4-byte aligned.
    "_pad" / Pad((4 - this.Signature.Size % 4) % 4),
)
MULTI_QUEUE_FORMAT_HEADER = header_parser("MultiQueueFormatHeader", MultiQueueFormatHeader)


def check_multi_queue_format_header(headers: Container) -> Iterator[tuple[str, str, str]]:
    """MUSTs of [MS-MQMQ] 2.2.20.1-2.2.20.3."""
    mqf = headers.MultiQueueFormatHeader
    for part, expected in (
        ("Destination", MQF_DESTINATION_ID),
        ("Administration", MQF_ADMIN_ID),
        ("Response", MQF_RESPONSE_ID),
    ):
        addr = mqf[part]
        path = f"MultiQueueFormatHeader.{part}"
        if addr.HeaderID != expected:
            yield (
                f"{path}.HeaderID",
                f"MUST be 0x{expected:04X} for the {part} part, found 0x{addr.HeaderID:04X}",
                MQF_ADDRESS_SECTION,
            )
        elements = addr.get("FormatNameList") or []
        if addr.ElementCount != len(elements):
            reason = f"{addr.ElementCount} but the list holds {len(elements)}"
            yield (f"{path}.ElementCount", reason, MQF_ADDRESS_SECTION)
        try:
            n = format_name_list_size(elements)
        except Exception:  # an element that cannot be encoded: reported by the parser already
            continue
        if addr.HeaderSize < MQF_ADDRESS_FIXED_SIZE:
            yield (f"{path}.HeaderSize", f"MUST be at least 0x0000000C, found {addr.HeaderSize}", MQF_ADDRESS_SECTION)
        elif addr.HeaderSize != MQF_ADDRESS_FIXED_SIZE + n + pad4(n):
            yield (
                f"{path}.HeaderSize",
                f"{addr.HeaderSize} but the header with its list rounded up to 4 bytes is "
                f"{MQF_ADDRESS_FIXED_SIZE + n + pad4(n)}",
                MQF_ADDRESS_SECTION,
            )
        # A parsed list's elements not read since end at their first NUL: only those held as
        # objects can hold one.
        held = elements.decoded() if isinstance(elements, Elements) else enumerate(elements)
        for i, element in held:
            if element.FormatType == 0x0003 and "\0" in (element.FormatName.get("DirectFormatName") or ""):
                where = f"{path}.FormatNameList.{i}.FormatName"
                yield (where, "NUL inside the direct format name", "MS-MQMQ 2.2.18.1.4.1")
    sig = mqf.Signature
    if sig.ID != MQF_SIGNATURE_ID:
        yield ("MultiQueueFormatHeader.Signature.ID", f"MUST be 0x015E, found 0x{sig.ID:04X}", MQF_SIGNATURE_SECTION)
    if sig.Size != len(sig.get("Signature") or b""):
        yield ("MultiQueueFormatHeader.Signature.Size", "does not match the Signature bytes", MQF_SIGNATURE_SECTION)
