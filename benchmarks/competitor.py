"""The codec's competitor: a UserMessage parser written by hand with struct, named fields and
the receiver's checks, as a user who needs strict parsing would write it.

It covers what the benchmark messages carry ([MS-MQMQ] 2.2.19.1 BaseHeader, 2.2.19.2 UserHeader
with no, a private, a public or a direct DestinationQueue and no other queue, 2.2.20.5
TransactionHeader without ConnectorQMGuid, 2.2.19.3 MessagePropertiesHeader without extension,
2.2.20.4 SessionHeader) and checks every rule ``packets.parse`` checks on them: version,
signature, PacketSize (range, the bytes the headers occupy, nothing after the packet), the
UserHeader flag values and queue-manager address, the direct name's Count and NUL, the
transaction numbers, the label's length and NUL, the message class, the privacy level and its
algorithm, the acknowledgment request against the AdminQueue, TH without PR, the SessionHeader's
WindowSize and [MS-MQQB] 3.1.5.1.1's ordering-acknowledgment label.  It raises ValueError with
the field's name at the first broken rule and returns plain dictionaries (str, bytes, int).
The rule tables are the spec's (imported from ``packets`` as data).
"""

from __future__ import annotations

import struct
from typing import Any, NoReturn

from packets import GUID, Packet, PacketKind
from packets.base import BaseHeaderFlags
from packets.fields import Fields
from packets.optional import TransactionHeaderFlags
from packets.properties import (
    ALLOWED_BY_PRIVACY_LEVEL,
    MAX_LABEL_LENGTH,
    PRIVACY_LEVELS,
    MessagePropertiesFlags,
    is_valid_message_class,
)
from packets.user import UserHeaderFlags

_BASE = struct.Struct("<BBHLLL")
_USER = struct.Struct("<16s16sLLLL")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<L")
_GUID = struct.Struct("<16s")
_TX = struct.Struct("<LLLLL")
_PROPS = struct.Struct("<BBH20sLLLLLLLL")
_SESSION = struct.Struct("<HHLHHHH")
_NULL_GUID = bytes(16)
_UNREAD = 1 << 19 | 1 << 22 | 1 << 23 | 1 << 28


def _fail(field: str, why: str) -> NoReturn:
    raise ValueError(f"{field}: {why}")


def _same(value: Any) -> Any:
    return value


def strict_named(data: bytes, objects: bool = False) -> Any:
    """The headers of one UserMessage Packet by spec name, every rule checked: plain dictionaries
    of ints, bytes and str, or (``objects``) the codec's objects made through their public
    constructors (a ``packets.Packet`` of ``Fields`` headers, ``GUID`` and flag-word classes),
    as ``packets.parse`` returns them."""
    header, guid = (Fields, GUID) if objects else (_same, _same)
    size = len(data)
    version, reserved, base_flags, signature, packet_size, ttrq = _BASE.unpack_from(data, 0)
    if version != 0x10:
        _fail("BaseHeader.VersionNumber", "MUST be 0x10")
    if signature != 0x524F494C:
        _fail("BaseHeader.Signature", "MUST be 0x524F494C")
    if not 16 <= packet_size <= 0x00400000:
        _fail("BaseHeader.PacketSize", "out of range")
    if base_flags & 0x100 and not base_flags & 0x20:
        _fail("BaseHeader.Flags.TR", "TR is set, so DH MUST also be set")
    if base_flags & 0x8:
        _fail("BaseHeader.Flags.IN", "not a UserMessage")
    out: dict[str, Any] = {
        "BaseHeader": header(
            {
                "VersionNumber": version,
                "Reserved": reserved,
                "Flags": BaseHeaderFlags(base_flags) if objects else base_flags,
                "Signature": signature,
                "PacketSize": packet_size,
                "TimeToReachQueue": ttrq,
            }
        )
    }
    source, qm, ttbr, sent, message_id, flags = _USER.unpack_from(data, 16)
    rc, dm, dq, aq, rq = flags & 0x1F, flags >> 5 & 3, flags >> 10 & 7, flags >> 13 & 7, flags >> 16 & 7
    th = flags >> 20 & 1
    if rc > 0x1D:
        _fail("UserHeader.Flags.RC", "MUST be in 0x00-0x1D")
    if dm > 1:
        _fail("UserHeader.Flags.DM", "MUST be 0x0 or 0x1")
    if th and dm == 0:
        _fail("UserHeader.Flags.TH", "TH is set, so DM MUST NOT be 0x0")
    if not flags >> 21 & 1:
        _fail("UserHeader.Flags.MP", "MUST always be set")
    if flags >> 25 & 1:
        _fail("UserHeader.Flags.AH", "MUST NOT be set when sent")
    if aq or rq or flags & _UNREAD or base_flags & 0x20:  # SH, CQ, MQ, HH; DH
        _fail("UserHeader.Flags", "a header or queue this parser does not read")
    if th and base_flags & 0x7:
        _fail("BaseHeader.Flags.PR", "a transactional message MUST have PR 0")
    at = 64
    destination: dict[str, Any] | None
    if dq == 0:
        destination = None
    elif dq == 3:
        destination = header({"PrivateQueueIdentifier": _U32.unpack_from(data, at)[0]})
        at += 4
    elif dq == 5:
        destination = header({"PublicQueueIdentifier": guid(_GUID.unpack_from(data, at)[0])})
        at += 16
    elif dq == 7:
        (count,) = _U16.unpack_from(data, at)
        end = at + 2 + count
        if end > size:
            _fail("UserHeader.DestinationQueue.Count", "runs past the packet")
        if count % 2:
            _fail("UserHeader.DestinationQueue.Count", "odd byte count")
        name = data[at + 2 : end].decode("utf-16-le", "surrogatepass")
        if not name.endswith("\0") or "\0" in name[:-1]:
            _fail("UserHeader.DestinationQueue.DirectFormatName", "NUL missing, misplaced or inside")
        pad = end + (-(end - 16) % 4)
        destination = header({"Count": count, "DirectFormatName": name[:-1], "_pad": data[end:pad]})
        at = pad
    else:
        _fail("UserHeader.Flags.DQ", "MUST be 0x0, 0x3, 0x5 or 0x7")
    if (dq == 7) == (qm != _NULL_GUID) and dq:
        _fail("UserHeader.QueueManagerAddress", "NULL for a direct name, a GUID for 0x3 and 0x5")
    out["UserHeader"] = header(
        {
            "SourceQueueManager": guid(source),
            "QueueManagerAddress": guid(qm),
            "TimeToBeReceived": ttbr,
            "SentTime": sent,
            "MessageID": message_id,
            "Flags": UserHeaderFlags(flags) if objects else flags,
            "DestinationQueue": destination,
            "AdminQueue": None,
            "ResponseQueue": None,
            "ConnectorType": None,
        }
    )
    if th:
        tx_flags, ordinal, timestamp, number, previous = _TX.unpack_from(data, at)
        at += 20
        if tx_flags & 1:
            _fail("TransactionHeader.Flags.CG", "a ConnectorQMGuid this parser does not read")
        if number == 0:
            _fail("TransactionHeader.TxSequenceNumber", "MUST be in 0x00000001-0xFFFFFFFF")
        if previous == 0xFFFFFFFF:
            _fail("TransactionHeader.PreviousTxSequenceNumber", "MUST be in 0x00000000-0xFFFFFFFE")
        out["TransactionHeader"] = header(
            {
                "Flags": TransactionHeaderFlags(tx_flags) if objects else tx_flags,
                "TxSequenceID": header({"Ordinal": ordinal, "TimeStamp": timestamp}),
                "TxSequenceNumber": number,
                "PreviousTxSequenceNumber": previous,
                "ConnectorQMGuid": None,
            }
        )
    start = at
    (mflags, label_length, message_class, correlation, body_type, tag, message_size, allocation, privacy, hash_alg,
     encryption, extension_size) = _PROPS.unpack_from(data, at)  # fmt: skip
    at += 56
    if label_length > MAX_LABEL_LENGTH:
        _fail("MessagePropertiesHeader.LabelLength", "MUST be at most 250")
    label = None
    if label_length:
        raw = data[at : at + 2 * label_length]
        if len(raw) != 2 * label_length:
            _fail("MessagePropertiesHeader.Label", "runs past the packet")
        label = raw.decode("utf-16-le", "surrogatepass")
        if not label.endswith("\0") or "\0" in label[:-1]:
            _fail("MessagePropertiesHeader.Label", "NUL missing, misplaced or inside")
        label = label[:-1]
        at += 2 * label_length
    if extension_size:
        _fail("MessagePropertiesHeader.ExtensionSize", "an extension this parser does not read")
    if not is_valid_message_class(message_class):
        _fail("MessagePropertiesHeader.MessageClass", "not a message class")
    body = data[at : at + message_size]
    if len(body) != message_size:
        _fail("MessagePropertiesHeader.MessageSize", "runs past the packet")
    at += message_size
    pad = at + -(at - start) % 4
    padding = data[at:pad]
    at = pad
    if privacy not in PRIVACY_LEVELS:
        _fail("MessagePropertiesHeader.PrivacyLevel", "MUST be 0, 1, 3 or 5")
    allowed = ALLOWED_BY_PRIVACY_LEVEL.get(privacy)
    if allowed is not None and encryption not in allowed:
        _fail("MessagePropertiesHeader.EncryptionAlgorithm", "not allowed with this PrivacyLevel")
    if bool(mflags & 0x0F) != (aq != 0):
        _fail("UserHeader.AdminQueue", "present if and only if an acknowledgment is requested")
    out["MessagePropertiesHeader"] = header(
        {
            "Flags": MessagePropertiesFlags(mflags) if objects else mflags,
            "LabelLength": label_length,
            "MessageClass": message_class,
            "CorrelationID": correlation,
            "BodyType": body_type,
            "ApplicationTag": tag,
            "MessageSize": message_size,
            "AllocationBodySize": allocation,
            "PrivacyLevel": privacy,
            "HashAlgorithm": hash_alg,
            "EncryptionAlgorithm": encryption,
            "ExtensionSize": extension_size,
            "Label": label,
            "ExtensionData": b"",
            "MessageBody": body,
            "_pad": padding,
        }
    )
    if at != packet_size:
        _fail("BaseHeader.PacketSize", "not the bytes the headers occupy")
    if base_flags & 0x10:
        if at + 16 > size:
            _fail("SessionHeader", "runs past the packet")
        values = _SESSION.unpack_from(data, at)
        at += 16
        if values[5] == 0:
            _fail("SessionHeader.WindowSize", "MUST be in 0x0001-0xFFFF")
        out["SessionHeader"] = header(dict(zip(_SESSION_NAMES, values, strict=True)))
    if at != size:
        _fail("BaseHeader.PacketSize", "bytes follow the packet")
    if label == "QM Ordering Ack" and dq == 7 and destination is not None:
        parts = destination["DirectFormatName"].replace("/", "\\").split("\\")
        if len(parts) == 3 and parts[1].upper() == "PRIVATE$" and parts[2].lower() == "order_queue$":
            _fail("MessagePropertiesHeader.Label", "an ordering acknowledgment, not a UserMessage")
    if objects:
        return Packet(PacketKind.UserMessage, Fields(out), [], size, None)
    return out


_SESSION_NAMES = (
    "AckSequenceNumber",
    "RecoverableMsgAckSeqNumber",
    "RecoverableMsgAckFlags",
    "UserMsgSequenceNumber",
    "RecoverableMsgSeqNumber",
    "WindowSize",
    "Reserved",
)
