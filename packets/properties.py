"""MessagePropertiesHeader: the message properties and the application payload.

Renders [MS-MQMQ] 2.2.19.3 MessagePropertiesHeader (Flags PA/PR/NA/NR, LabelLength in WCHARs
including the NUL, MessageClass from 2.2.18.1.6, CorrelationID, BodyType, ApplicationTag,
MessageSize, AllocationBodySize, PrivacyLevel, HashAlgorithm, EncryptionAlgorithm, ExtensionSize,
Label absent when LabelLength is 0, ExtensionData and MessageBody unaligned, the whole header
padded to a multiple of 4) and the rules of 2.2.19.2/2.2.19.3 that tie it to the UserHeader
(AdminQueue iff acknowledgments are requested) and the SecurityHeader (hash and encryption
algorithms).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from construct import Container, Default, If, this

from packets.fields import (
    BitFlags,
    Data,
    FlagsField,
    Header,
    Hex16ul,
    Hex32ul,
    Int8ul,
    Int32ul,
    Pad,
    Utf16z,
    encode_utf16z,
    header_parser,
    reads_own_fields,
)
from packets.layout import fast_form_of
from packets.user import is_valid_message_class

__all__ = [
    "ENCRYPTION_ALGORITHMS",
    "HASH_ALGORITHMS",
    "MESSAGE_PROPERTIES_FIXED_SIZE",
    "MESSAGE_PROPERTIES_HEADER",
    "PRIVACY_LEVELS",
    "MessagePropertiesFlags",
    "MessagePropertiesHeader",
    "check_admin_queue",
    "check_message_properties",
    "default_message_properties_header",
]

SECTION = "MS-MQMQ 2.2.19.3"
MESSAGE_PROPERTIES_FIXED_SIZE = 56  # Flags .. ExtensionSize
MAX_LABEL_LENGTH = 0xFA


class MessagePropertiesFlags(BitFlags):
    """MessagePropertiesHeader.Flags ([MS-MQMQ] 2.2.19.3): administration acknowledgments."""

    PA: int
    PR: int
    NA: int
    NR: int
    X4: int
    X5: int
    X6: int
    X7: int
    _width_ = 8
    _fields_ = (
        ("PA", 0, 1),
        ("PR", 1, 1),
        ("NA", 2, 1),
        ("NR", 3, 1),
        ("X4", 4, 1),
        ("X5", 5, 1),
        ("X6", 6, 1),
        ("X7", 7, 1),
    )


ACK_BITS = 0x0F  # PA | PR | NA | NR

PRIVACY_LEVELS = {0x00000000: "none", 0x00000001: "40-bit", 0x00000003: "128-bit", 0x00000005: "AES"}
HASH_ALGORITHMS = {
    0x00008001: "MD2",
    0x00008002: "MD4",
    0x00008003: "MD5",
    0x00008004: "SHA-1",
    0x0000800C: "SHA-256",
    0x0000800E: "SHA-512",
}
ENCRYPTION_ALGORITHMS = {
    0x00006602: "RC2",
    0x00006610: "AES 256",
    0x0000660E: "AES 128",
    0x0000660F: "AES 192",
    0x00006801: "RC4",
}
ALLOWED_BY_PRIVACY_LEVEL = {
    0x00000001: {0x00006602, 0x00006801},
    0x00000003: {0x00006602, 0x00006801},
    0x00000005: {0x0000660E, 0x0000660F, 0x00006610},
}


@reads_own_fields
def _label_length(ctx: Any) -> int:
    label = ctx.get("Label")
    return 0 if label is None else len(encode_utf16z(label)) // 2


def _size_of(key: str) -> Any:
    return reads_own_fields(lambda ctx: len(ctx.get(key) or b""))


MessagePropertiesHeader = Header(
    "Flags" / FlagsField(MessagePropertiesFlags),
    "LabelLength" / Default(Int8ul, _label_length),
    "MessageClass" / Hex16ul,
    "CorrelationID" / Default(Data(20), bytes(20)),
    "BodyType" / Hex32ul,
    "ApplicationTag" / Int32ul,
    "MessageSize" / Default(Int32ul, _size_of("MessageBody")),
    "AllocationBodySize" / Default(Int32ul, _size_of("MessageBody")),
    "PrivacyLevel" / Hex32ul,
    "HashAlgorithm" / Hex32ul,
    "EncryptionAlgorithm" / Hex32ul,
    "ExtensionSize" / Default(Int32ul, _size_of("ExtensionData")),
    "Label" / If(this.LabelLength > 0, Utf16z(this.LabelLength * 2)),
    "ExtensionData" / Data(this.ExtensionSize),
    "MessageBody" / Data(this.MessageSize),
    "_pad" / Pad((4 - (this.LabelLength * 2 + this.ExtensionSize + this.MessageSize) % 4) % 4),
)
MESSAGE_PROPERTIES_HEADER = header_parser("MessagePropertiesHeader", MessagePropertiesHeader)


_PATH = "MessagePropertiesHeader"


def check_message_properties(headers: Container) -> Iterator[tuple[str, str, str]]:
    """MUSTs of [MS-MQMQ] 2.2.19.3 (and the algorithm rules that need the SecurityHeader)."""
    mph = headers.MessagePropertiesHeader
    yield from _check_label(mph)
    if not is_valid_message_class(mph.MessageClass):
        yield (
            f"{_PATH}.MessageClass",
            f"0x{mph.MessageClass:04X} is neither a MESSAGE_CLASS_VALUES value nor a custom class within mask 0xE1FF",
            SECTION,
        )
    yield from _check_sizes(mph)
    yield from _check_privacy(mph)
    security = headers.get("SecurityHeader")
    if security is not None:
        yield from _check_security_algorithms(mph, security)


def _check_label(mph: Container) -> Iterator[tuple[str, str, str]]:
    """LabelLength (0x00-0xFA WCHARs, the terminating null included) and the Label it counts."""
    length = mph.LabelLength
    label = mph.get("Label")
    if length > MAX_LABEL_LENGTH:
        yield (f"{_PATH}.LabelLength", f"MUST be in 0x00-0xFA, found 0x{length:02X}", SECTION)
    if length == 0 and label is not None:
        yield (f"{_PATH}.Label", "MUST NOT be present when LabelLength is 0x00", SECTION)
    if length > 0 and label is not None:
        if len(encode_utf16z(label)) // 2 != length:
            yield (
                f"{_PATH}.Label",
                f"LabelLength {length} MUST count the WCHARs including the terminating null "
                f"character; the label holds {len(encode_utf16z(label)) // 2 - 1} before a NUL "
                "(terminating null character missing or misplaced)",
                SECTION,
            )
        if "\0" in label:
            yield (f"{_PATH}.Label", "label = 0*249(%x0001-FFFF) 0x0000: NUL inside the label", SECTION)
    if length > 0 and label is None:
        yield (f"{_PATH}.Label", f"MUST be present: LabelLength is {length}", SECTION)


def _check_sizes(mph: Container) -> Iterator[tuple[str, str, str]]:
    """MessageSize and ExtensionSize: the bytes of MessageBody and ExtensionData."""
    body = mph.get("MessageBody") or b""
    if mph.MessageSize != len(body):
        yield (f"{_PATH}.MessageSize", f"{mph.MessageSize} but the body holds {len(body)} bytes", SECTION)
    ext = mph.get("ExtensionData") or b""
    if mph.ExtensionSize != len(ext):
        yield (f"{_PATH}.ExtensionSize", f"{mph.ExtensionSize} but ExtensionData holds {len(ext)} bytes", SECTION)


def _check_privacy(mph: Container) -> Iterator[tuple[str, str, str]]:
    """PrivacyLevel (0, 1, 3 or 5) and the EncryptionAlgorithm values it allows."""
    if mph.PrivacyLevel not in PRIVACY_LEVELS:
        yield (
            f"{_PATH}.PrivacyLevel",
            f"0x{mph.PrivacyLevel:08X} is not 0, 1, 3 or 5 (MUST be treated as an authentication failure)",
            SECTION,
        )
    elif mph.PrivacyLevel in ALLOWED_BY_PRIVACY_LEVEL and (
        mph.EncryptionAlgorithm not in ALLOWED_BY_PRIVACY_LEVEL[mph.PrivacyLevel]
    ):
        yield (
            f"{_PATH}.EncryptionAlgorithm",
            f"0x{mph.EncryptionAlgorithm:08X} is not allowed with PrivacyLevel 0x{mph.PrivacyLevel:X}",
            SECTION,
        )


def _check_security_algorithms(mph: Container, security: Container) -> Iterator[tuple[str, str, str]]:
    """HashAlgorithm when the SecurityHeader carries a signature, EncryptionAlgorithm when it
    says the body is encrypted (Flags.EB)."""
    if security.get("SignatureSize") and mph.HashAlgorithm not in HASH_ALGORITHMS:
        yield (
            f"{_PATH}.HashAlgorithm",
            f"0x{mph.HashAlgorithm:08X} is not a listed hash algorithm and a signature is present "
            "(MUST be treated as an authentication failure)",
            SECTION,
        )
    if int(security.Flags) & 0x20 and mph.EncryptionAlgorithm not in ENCRYPTION_ALGORITHMS:  # EB
        yield (
            f"{_PATH}.EncryptionAlgorithm",
            f"0x{mph.EncryptionAlgorithm:08X} is not a listed algorithm and the body is encrypted "
            "(MUST be treated as a failed decryption)",
            SECTION,
        )


def check_admin_queue(headers: Container) -> Iterator[tuple[str, str, str]]:
    """[MS-MQMQ] 2.2.19.2 AdminQueue: present if and only if MessagePropertiesHeader.Flags
    requests an acknowledgment (PA, PR, NA or NR; the X bits MUST be ignored on receipt)."""
    mph = headers.get("MessagePropertiesHeader")
    if mph is None:
        return
    wants_ack = bool(int(mph.Flags) & ACK_BITS)
    has_admin = int(headers.UserHeader.Flags) >> 13 & 7 != 0
    if wants_ack and not has_admin:
        yield (
            "UserHeader.AdminQueue",
            "MUST be specified: MessagePropertiesHeader.Flags requests an administration acknowledgment",
            "MS-MQMQ 2.2.19.2",
        )
    if has_admin and not wants_ack:
        yield (
            "UserHeader.AdminQueue",
            "MUST NOT be specified: MessagePropertiesHeader.Flags requests no acknowledgment",
            "MS-MQMQ 2.2.19.2",
        )


@fast_form_of(check_message_properties)
def message_properties_hold(headers: Container) -> bool:
    """Fast form of :func:`check_message_properties`: True exactly when it finds nothing."""
    mph = headers["MessagePropertiesHeader"]
    length = mph["LabelLength"]
    label = mph.get("Label")
    if length > MAX_LABEL_LENGTH:
        return False
    if length == 0 and label is not None:
        return False
    if length > 0:
        if label is None or "\0" in label:
            return False
        if (len(label) + 1 if type(label) is str and label.isascii() else len(encode_utf16z(label)) // 2) != length:
            return False
    if not is_valid_message_class(mph["MessageClass"]):
        return False
    if mph["MessageSize"] != len(mph.get("MessageBody") or b""):
        return False
    if mph["ExtensionSize"] != len(mph.get("ExtensionData") or b""):
        return False
    privacy = mph["PrivacyLevel"]
    if privacy not in PRIVACY_LEVELS:
        return False
    allowed = ALLOWED_BY_PRIVACY_LEVEL.get(privacy)
    if allowed is not None and mph["EncryptionAlgorithm"] not in allowed:
        return False
    security = headers.get("SecurityHeader")
    if security is not None:
        if security.get("SignatureSize") and mph["HashAlgorithm"] not in HASH_ALGORITHMS:
            return False
        if int(security["Flags"]) & 0x20 and mph["EncryptionAlgorithm"] not in ENCRYPTION_ALGORITHMS:
            return False
    return True


@fast_form_of(check_admin_queue)
def admin_queue_holds(headers: Container) -> bool:
    """Fast form of :func:`check_admin_queue`: True exactly when it finds nothing."""
    mph = headers.get("MessagePropertiesHeader")
    if mph is None:
        return True
    return bool(int(mph["Flags"]) & ACK_BITS) == (int(headers["UserHeader"]["Flags"]) >> 13 & 7 != 0)


def default_message_properties_header(body: bytes = b"", **fields: object) -> Container:
    """A MessagePropertiesHeader ([MS-MQMQ] 2.2.19.3) of a normal message carrying ``body``: no
    flags, MessageClass MQMSG_CLASS_NORMAL (0), a zero CorrelationID, BodyType 0, ApplicationTag 0,
    PrivacyLevel 0, HashAlgorithm 0x8004 and EncryptionAlgorithm 0x6801 (CALG_SHA1 and CALG_RC4,
    the [MS-MQDMPR] 3.1.1.12 defaults SHA1 and RC4), no extension and no label; MessageSize is the
    body's length.  ``fields`` override them."""
    header = Container(
        Flags=0,
        MessageClass=0,
        CorrelationID=b"\0" * 20,
        BodyType=0,
        ApplicationTag=0,
        MessageSize=len(body),
        PrivacyLevel=0,
        HashAlgorithm=0x8004,
        EncryptionAlgorithm=0x6801,
        ExtensionSize=0,
        Label=None,
        ExtensionData=b"",
        MessageBody=body,
    )
    header.update(fields)
    return header
