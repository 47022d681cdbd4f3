"""Message attributes as UserMessage Packet fields: [MS-MQDMPR] 3.1.7.1.32 Serialize Message to Buffer.

The value tables of [MS-MQDMPR] 3.1.7.1.32 (those of 3.1.7.1.31 Deserialize Message From Buffer,
read the other way): Message.Class -> MessagePropertiesHeader.MessageClass, HashAlgorithm and EncryptionAlgorithm ->
their CALG constants, PrivacyLevel, AcknowledgementsRequested -> MessagePropertiesHeader.Flags
(PA, PR, NA, NR of [MS-MQMQ] 2.2.19.3, from the meaning [MS-MQDMPR] 3.1.1.12 gives each
acknowledgment kind), and the administration and response queues -> UserHeader.Flags.AQ / RQ and
the queue format of [MS-MQMQ] 2.2.18.1.5 (AdministrationQueueType, ResponseQueueType).  A value
the tables do not map raises :class:`~harness.session.actions.SessionError` naming the attribute.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from construct import Container

from harness.session.actions import SessionError
from packets import GUID, BitFlags
from packets.formatname import FormatNameError, parse_format_name
from packets.properties import MessagePropertiesFlags

__all__ = [
    "ack_flags",
    "encryption_algorithm",
    "hash_algorithm",
    "privacy_level",
    "queue_reference",
]

# 3.1.7.1.32: MessagePropertiesHeader.HashAlgorithm (3.1.7.1.31 lists 0x8003 as MD4 a second time;
# 3.1.7.1.32 names it MD5).  SHA is "the SHA-1 algorithm" (3.1.1.12), no value of its own: 0x8004.
HASH_ALGORITHMS = {"MD2": 0x8001, "MD4": 0x8002, "MD5": 0x8003, "SHA1": 0x8004, "SHA": 0x8004,
                   "SHA_256": 0x800C, "SHA_512": 0x800E}  # fmt: skip
ENCRYPTION_ALGORITHMS = {"RC2": 0x6602, "RC4": 0x6801, "AES256": 0x6610, "AES128": 0x660E, "AES192": 0x660F}
PRIVACY_LEVELS = {"None": 0x0, "Base": 0x1, "Enhanced": 0x3, "Advanced": 0x5}
# 3.1.1.12 AcknowledgementsRequested -> the administration acknowledgments of [MS-MQMQ] 2.2.19.3
# Flags: PA (positive arrival), PR (positive receive), NA (negative arrival), NR (negative receive).
ACKNOWLEDGMENTS: dict[str, tuple[str, ...]] = {
    "None": (),
    "AckPosArrival": ("PA",),
    "AckPosReceive": ("PR",),
    "AckNegArrival": ("NA",),
    "AckNegReceive": ("NR",),
    "AckNackReachQueue": ("NA",),  # "Same as AckNegArrival"
    "AckFullReachQueue": ("PA", "NA"),  # inserted in the destination queue, or cannot be delivered
    "AckNackReceive": ("NA", "NR"),  # cannot be delivered, or is not received
    "AckFullReceive": ("NA", "PR", "NR"),  # cannot be delivered, is received, or is not received
}
# [MS-MQMQ] 2.2.19.2 UserHeader.Flags.AQ / RQ values by the ADM queue types of 3.1.1.12
QUEUE_TYPES = {
    "None": 0x0,
    "SameAsAdministrationQueue": 0x1,
    "PrivateQueueOnSource": 0x2,
    "PrivateQueueOnDestination": 0x3,
    "PrivateQueueOnAdmin": 0x4,
    "PublicQueue": 0x5,
    "PrivateQueueOnOther": 0x6,
    "DirectQueue": 0x7,
}
# 3.1.7.1.32: AdministrationQueueType takes no SameAsAdministrationQueue (0x1) or PrivateQueueOnAdmin (0x4)
ADMINISTRATION_QUEUE_TYPES = {k: v for k, v in QUEUE_TYPES.items() if v not in (0x1, 0x4)}


def _lookup(table: dict[str, int], value: Any, attribute: str) -> int:
    name = getattr(value, "name", value)
    try:
        return table[str(name)]
    except KeyError:
        raise SessionError(
            f"[MS-MQDMPR] 3.1.7.1.31 maps no value of {attribute} {name!r}; it maps {', '.join(table)}"
        ) from None


def hash_algorithm(value: Any) -> int:
    return _lookup(HASH_ALGORITHMS, value, "Message.HashAlgorithm")


def encryption_algorithm(value: Any) -> int:
    return _lookup(ENCRYPTION_ALGORITHMS, value, "Message.EncryptionAlgorithm")


def privacy_level(value: Any) -> int:
    return _lookup(PRIVACY_LEVELS, value, "Message.PrivacyLevel")


def ack_flags(requested: Iterable[Any] | str) -> BitFlags:
    """MessagePropertiesHeader.Flags for Message.AcknowledgementsRequested (a list of kinds)."""
    kinds = [requested] if isinstance(requested, str) else list(requested)
    bits: dict[str, int] = {}
    for kind in kinds:
        name = str(getattr(kind, "name", kind))
        if name not in ACKNOWLEDGMENTS:
            raise SessionError(f"Message.AcknowledgementsRequested {name!r} is none of {', '.join(ACKNOWLEDGMENTS)}")
        bits.update(dict.fromkeys(ACKNOWLEDGMENTS[name], 1))
    return MessagePropertiesFlags.make(0, **bits)


def queue_reference(
    format_name: str, queue_type: Any, source_qm: GUID, destination_qm: GUID, *, response: bool = False
) -> tuple[int, Container | None]:
    """(UserHeader.Flags.AQ or RQ, the AdminQueue or ResponseQueue field) for an administration or
    response queue format name ([MS-MQMQ] 2.2.19.2, 2.2.18.1.5).  The type is the Message's
    AdministrationQueueType / ResponseQueueType when given, else the one the format name says:
    DIRECT= a direct queue, PUBLIC= a public queue, PRIVATE= a private queue on the source or
    destination queue manager when its GUID is theirs, on another one otherwise."""
    type_name = str(getattr(queue_type, "name", queue_type) or "None")
    if not format_name:
        return (
            (QUEUE_TYPES["SameAsAdministrationQueue"], None) if type_name == "SameAsAdministrationQueue" else (0, None)
        )
    try:
        fmt = parse_format_name(format_name)
    except FormatNameError as e:
        raise SessionError(f"3.1.7.1.32: {e}") from None
    if type_name == "None":
        if fmt.kind == "DIRECT":
            type_name = "DirectQueue"
        elif fmt.kind == "PUBLIC":
            type_name = "PublicQueue"
        elif fmt.kind == "PRIVATE" and fmt.guid is not None and GUID(fmt.guid.bytes_le) == source_qm:
            type_name = "PrivateQueueOnSource"
        elif fmt.kind == "PRIVATE" and fmt.guid is not None and GUID(fmt.guid.bytes_le) == destination_qm:
            type_name = "PrivateQueueOnDestination"
        elif fmt.kind == "PRIVATE":
            type_name = "PrivateQueueOnOther"
        else:
            raise SessionError(f"3.1.7.1.32: {format_name!r} is no queue a UserHeader can name")
    if response:
        value = _lookup(QUEUE_TYPES, type_name, "ResponseQueueType")
    else:
        value = _lookup(ADMINISTRATION_QUEUE_TYPES, type_name, "AdministrationQueueType")
    if value == 0x7:
        return value, Container(DirectFormatName=format_name[len("DIRECT=") :])
    if value == 0x5 and fmt.guid is not None:
        return value, Container(PublicQueueIdentifier=GUID(fmt.guid.bytes_le))
    if value == 0x6 and fmt.guid is not None and fmt.number is not None:
        return value, Container(SourceQueueManager=GUID(fmt.guid.bytes_le), PrivateQueueIdentifier=fmt.number)
    if value in (0x2, 0x3, 0x4) and fmt.number is not None:
        return value, Container(PrivateQueueIdentifier=fmt.number)
    raise SessionError(f"3.1.7.1.32: {type_name} does not fit the format name {format_name!r}")
