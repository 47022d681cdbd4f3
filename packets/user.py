"""UserHeader and the queue format data types of the UserMessage Packet.

Renders [MS-MQMQ] 2.2.19.2 UserHeader (SourceQueueManager, QueueManagerAddress,
TimeToBeReceived, SentTime, MessageID, Flags, DestinationQueue/AdminQueue/ResponseQueue chosen by
Flags.DQ/AQ/RQ, ConnectorType iff Flags.CQ) and the packet data types of [MS-MQMQ] 2.2.18.1:
2.2.18.1.2 TxSequenceID, 2.2.18.1.3 MessageIdentifier, 2.2.18.1.4 MQFFormatNameElement with
2.2.18.1.4.1 MQFDirectQueueFormatName and 2.2.18.1.4.2 MQFDistributionQueueFormatName,
2.2.18.1.5.1 PrivateQueueFormatNameId, 2.2.18.1.5.2 DirectQueueFormatName, 2.2.18.1.6 Message
Class Identifiers, 2.2.18.1.7.1 PublicQueueFormatName and 2.2.18.1.7.2 PrivateQueueFormatName,
with the MUST rules a receiver can check on the UserHeader alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import IntEnum
from typing import Any

import construct as c
from construct import Container, Default, If, Pass, Switch, Tell, this

from packets.fields import (
    NULL_GUID,
    BitFlags,
    FlagsField,
    Guid,
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
    utf16z_bytes,
)
from packets.layout import fast_form_of

__all__ = [
    "AQ_FORMATS",
    "DQ_FORMATS",
    "RQ_FORMATS",
    "USER_HEADER",
    "DirectQueueFormatName",
    "MQFDirectQueueFormatName",
    "MQFDistributionQueueFormatName",
    "MQFFormatNameElement",
    "MessageClass",
    "MessageIdentifier",
    "PrivateQueueFormatName",
    "PrivateQueueFormatNameId",
    "PublicQueueFormatName",
    "TxSequenceID",
    "UserHeader",
    "UserHeaderFlags",
    "Utf16Terminated",
    "check_user_header",
    "default_user_header",
    "flag",
    "is_valid_message_class",
    "read_utf16_terminated",
]

SECTION = "MS-MQMQ 2.2.19.2"
SECTION_DIRECT = "MS-MQMQ 2.2.18.1.5.2"
USER_HEADER_FIXED_SIZE = 48  # SourceQueueManager .. Flags


def flag(word: Any, flags_cls: type[BitFlags], name: str) -> Any:
    """A ``this`` expression reading sub-field ``name`` of a flag word (compilable).

    ``this.Flags.DQ`` compiles to ``this['Flags']['DQ']``, which an int cannot answer; a shift
    and a mask can, in both the interpreted and the compiled parser.
    """
    for field, shift, width in flags_cls._fields_:
        if field == name:
            return (word >> shift) & ((1 << width) - 1)
    raise KeyError(f"{flags_cls.__name__} has no field {name}")


# --------------------------------------------------------------------------------------------
# 2.2.18.1 Packet data types


TxSequenceID = Header(
    "Ordinal" / Int32ul,
    "TimeStamp" / Int32ul,
)
"""[MS-MQMQ] 2.2.18.1.2: compared as a u64 with Ordinal the low-order half."""


MessageIdentifier = Header(
    "QueueManagerGuid" / Guid,
    "Ordinal" / Int32ul,
)
"""[MS-MQMQ] 2.2.18.1.3: 20 bytes."""


def read_utf16_terminated(io: Any) -> str:
    """A UTF-16LE string up to and including its terminating NUL (no length field before it)."""
    chunks = []
    while True:
        unit = io.read(2)
        if len(unit) != 2:
            raise c.StreamError("UTF-16 string without a terminating NUL")
        if unit == b"\0\0":
            break
        chunks.append(unit)
    return decode_utf16(b"".join(chunks))


class Utf16Terminated(c.Construct):
    """A null-terminated UTF-16LE string whose length only its NUL tells (value without NUL)."""

    def _parse(self, stream: Any, context: Any, path: str) -> str:
        try:
            return read_utf16_terminated(stream)
        except c.StreamError as e:
            raise c.StreamError(str(e), path=path) from None

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> str:
        data = encode_utf16z(obj or "")
        c.stream_write(stream, data, len(data), path)
        return str(obj or "")

    def _sizeof(self, context: Any, path: str) -> int:
        raise c.SizeofError("null-terminated string", path=path)

    def _emitparse(self, code: Any) -> str:
        code.append("from packets.user import read_utf16_terminated")
        return "read_utf16_terminated(io)"


PrivateQueueFormatNameId = Header(
    "PrivateQueueIdentifier" / Hex32ul,
)
"""[MS-MQMQ] 2.2.18.1.5.1."""


DirectQueueFormatName = Header(
    "Count" / Default(Int16ul, utf16z_bytes("DirectFormatName")),
    "DirectFormatName" / Utf16z(this.Count),
    # "padded up to the next 4-byte boundary relative to the start of the header that contains
    # the queue format name": every UserHeader piece before it is a multiple of 4 bytes, so the
    # pad depends on Count alone.
    "_pad" / Pad((4 - (2 + this.Count) % 4) % 4),
)
"""[MS-MQMQ] 2.2.18.1.5.2: Count in bytes including the NUL, not including the padding."""


PublicQueueFormatName = Header(
    "PublicQueueIdentifier" / Guid,
)
"""[MS-MQMQ] 2.2.18.1.7.1."""


PrivateQueueFormatName = Header(
    # "The start of this field is rounded up to the next 4-byte boundary" (of the stream; every
    # header starts on one, so this is also relative to the containing header).
    "_at" / Tell,
    "_pad" / Pad((4 - this._at % 4) % 4),
    "SourceQueueManager" / Guid,
    "PrivateQueueIdentifier" / Hex32ul,
)
"""[MS-MQMQ] 2.2.18.1.7.2."""


MQFDirectQueueFormatName = Header(
    "_at" / Tell,
    "_pad" / Pad(this._at % 2),  # "start ... rounded up to the next 2-byte boundary"
    "DirectFormatName" / Utf16Terminated(),
)
"""[MS-MQMQ] 2.2.18.1.4.1: no count; the NUL ends the string."""


MQFDistributionQueueFormatName = Header(
    "_at" / Tell,
    "_pad" / Pad((4 - this._at % 4) % 4),
    "DistributionListIdentifier" / Guid,
)
"""[MS-MQMQ] 2.2.18.1.4.2."""


class FormatType(IntEnum):
    """MQFFormatNameElement.FormatType ([MS-MQMQ] 2.2.18.1.4)."""

    Public = 0x0001
    Private = 0x0002
    Direct = 0x0003
    DistributionList = 0x0006


MQFFormatNameElement = Header(
    "FormatType" / Hex16ul,
    "FormatName"
    / Switch(
        this.FormatType,
        {
            int(FormatType.Public): PublicQueueFormatName,
            int(FormatType.Private): PrivateQueueFormatName,
            int(FormatType.Direct): MQFDirectQueueFormatName,
            int(FormatType.DistributionList): MQFDistributionQueueFormatName,
        },
        default=c.Error,
    ),
)
"""[MS-MQMQ] 2.2.18.1.4: an unknown FormatType leaves the rest undecodable (a parse error)."""


class MessageClass(IntEnum):
    """MESSAGE_CLASS_VALUES ([MS-MQMQ] 2.2.18.1.6)."""

    MQMSG_CLASS_NORMAL = 0x0000
    MQMSG_CLASS_REPORT = 0x0001
    MQMSG_CLASS_ACK_REACH_QUEUE = 0x0002
    MQMSG_CLASS_ORDER_ACK = 0x00FF
    MQMSG_CLASS_ACK_RECEIVE = 0x4000
    MQMSG_CLASS_NACK_BAD_DST_Q = 0x8000
    MQMSG_CLASS_NACK_DELETED = 0x8001
    MQMSG_CLASS_NACK_REACH_QUEUE_TIMEOUT = 0x8002
    MQMSG_CLASS_NACK_Q_EXCEED_QUOTA = 0x8003
    MQMSG_CLASS_NACK_ACCESS_DENIED = 0x8004
    MQMSG_CLASS_NACK_HOP_COUNT_EXCEEDED = 0x8005
    MQMSG_CLASS_NACK_BAD_SIGNATURE = 0x8006
    MQMSG_CLASS_NACK_BAD_ENCRYPTION = 0x8007
    MQMSG_CLASS_NACK_NOT_TRANSACTIONAL_Q = 0x8009
    MQMSG_CLASS_NACK_NOT_TRANSACTIONAL_MSG = 0x800A
    MQMSG_CLASS_NACK_UNSUPPORTED_CRYPTO_PROVIDER = 0x800B
    MQMSG_CLASS_NACK_Q_DELETED = 0xC000
    MQMSG_CLASS_NACK_Q_PURGED = 0xC001
    MQMSG_CLASS_NACK_RECEIVE_TIMEOUT = 0xC002
    MQMSG_CLASS_NACK_RECEIVE_REJECTED = 0xC004


CUSTOM_CLASS_MASK = 0xE1FF
"""2.2.18.1.6: an application may set a custom class from bits of this mask, the rest zero."""


def is_valid_message_class(value: int) -> bool:
    """A MESSAGE_CLASS_VALUES member, or a custom class within mask 0xE1FF (2.2.18.1.6)."""
    return value in MessageClass._value2member_map_ or not value & ~CUSTOM_CLASS_MASK & 0xFFFF


# --------------------------------------------------------------------------------------------
# 2.2.19.2 UserHeader


class UserHeaderFlags(BitFlags):
    """UserHeader.Flags ([MS-MQMQ] 2.2.19.2), bit 0 = least-significant bit."""

    RC: int
    DM: int
    X1: int
    JN: int
    JP: int
    DQ: int
    AQ: int
    RQ: int
    SH: int
    TH: int
    MP: int
    CQ: int
    MQ: int
    X2: int
    AH: int
    X3: int
    HH: int
    X4: int
    _width_ = 32
    _fields_ = (
        ("RC", 0, 5),
        ("DM", 5, 2),
        ("X1", 7, 1),
        ("JN", 8, 1),
        ("JP", 9, 1),
        ("DQ", 10, 3),
        ("AQ", 13, 3),
        ("RQ", 16, 3),
        ("SH", 19, 1),
        ("TH", 20, 1),
        ("MP", 21, 1),
        ("CQ", 22, 1),
        ("MQ", 23, 1),
        ("X2", 24, 1),
        ("AH", 25, 1),
        ("X3", 26, 2),
        ("HH", 28, 1),
        ("X4", 29, 3),
    )


# Queue type tables of 2.2.19.2: flag value -> data type (None: no queue name).
DQ_FORMATS: dict[int, Header | None] = {
    0x0: None,
    0x3: PrivateQueueFormatNameId,
    0x5: PublicQueueFormatName,
    0x7: DirectQueueFormatName,
}
AQ_FORMATS: dict[int, Header | None] = {
    0x0: None,
    0x2: PrivateQueueFormatNameId,
    0x3: PrivateQueueFormatNameId,
    0x5: PublicQueueFormatName,
    0x6: PrivateQueueFormatName,
    0x7: DirectQueueFormatName,
}
# RQ 0x1 ("same as the administration queue") carries no name: the table's "None" data type and
# "MUST NOT be present when ... 0x0 or 0x1" win over the sentence that lists 0x1 as present.
RQ_FORMATS: dict[int, Header | None] = {
    0x0: None,
    0x1: None,
    0x2: PrivateQueueFormatNameId,
    0x3: PrivateQueueFormatNameId,
    0x4: PrivateQueueFormatNameId,
    0x5: PublicQueueFormatName,
    0x6: PrivateQueueFormatName,
    0x7: DirectQueueFormatName,
}


def _queue(selector: Any, table: dict[int, Header | None]) -> c.Construct:
    # Values the table does not list carry nothing; check_user_header reports them.
    return Switch(selector, {k: v for k, v in table.items() if v is not None}, default=Pass)


_flags = this.Flags
UserHeader = Header(
    "SourceQueueManager" / Guid,
    "QueueManagerAddress" / Guid,
    "TimeToBeReceived" / Int32ul,
    "SentTime" / Int32ul,
    "MessageID" / Int32ul,
    "Flags" / FlagsField(UserHeaderFlags),
    "DestinationQueue" / _queue(flag(_flags, UserHeaderFlags, "DQ"), DQ_FORMATS),
    "AdminQueue" / _queue(flag(_flags, UserHeaderFlags, "AQ"), AQ_FORMATS),
    "ResponseQueue" / _queue(flag(_flags, UserHeaderFlags, "RQ"), RQ_FORMATS),
    "ConnectorType" / If(flag(_flags, UserHeaderFlags, "CQ") == 1, Guid),
)
USER_HEADER = header_parser("UserHeader", UserHeader)


def _check_direct(path: str, queue: Any) -> Iterator[tuple[str, str, str]]:
    if not isinstance(queue, dict) or "DirectFormatName" not in queue:
        return
    count = queue.get("Count")
    name = queue.get("DirectFormatName") or ""
    if count is None:
        return
    if count % 2:
        yield (f"{path}.Count", f"odd byte count {count} for a WCHAR buffer", SECTION_DIRECT)
    elif count != len(encode_utf16z(name)):
        yield (
            f"{path}.DirectFormatName",
            f"Count {count} does not cover the string and its terminating NUL "
            f"({len(encode_utf16z(name))} bytes): the terminating null character is missing or misplaced",
            SECTION_DIRECT,
        )
    if "\0" in name:
        yield (f"{path}.DirectFormatName", "NUL inside the direct format name", SECTION_DIRECT)


def check_user_header(headers: Container) -> Iterator[tuple[str, str, str]]:
    """MUSTs of [MS-MQMQ] 2.2.19.2 that need the UserHeader alone."""
    user = headers["UserHeader"]
    word = int(user["Flags"])
    rc, dm, dq, aq, rq = word & 0x1F, word >> 5 & 3, word >> 10 & 7, word >> 13 & 7, word >> 16 & 7
    if rc > 0x1D:
        yield ("UserHeader.Flags.RC", f"MUST be in 0x00-0x1D, found 0x{rc:02X}", SECTION)
    if dm > 1:
        yield ("UserHeader.Flags.DM", f"MUST be 0x0 or 0x1, found 0x{dm:X}", SECTION)
    if dq not in DQ_FORMATS:
        yield (
            "UserHeader.Flags.DQ",
            f"MUST be 0x0, 0x3, 0x5 or 0x7, found 0x{dq:X} (the session MUST be closed)",
            SECTION,
        )
    if aq not in AQ_FORMATS:
        yield (
            "UserHeader.Flags.AQ",
            f"MUST be 0x0, 0x2, 0x3, 0x5, 0x6 or 0x7, found 0x{aq:X} (the session MUST be closed)",
            SECTION,
        )
    if word & _TH and dm == 0:
        yield ("UserHeader.Flags.TH", "TH is set, so DM MUST NOT be 0x0", SECTION)
    if not word & _MP:
        yield ("UserHeader.Flags.MP", "MUST always be set", SECTION)
    if word & _AH:
        yield ("UserHeader.Flags.AH", "MUST NOT be set when sent", SECTION)
    qm = user["QueueManagerAddress"]
    if dq == 0x7 and qm and any(qm):
        yield (
            "UserHeader.QueueManagerAddress",
            "MUST be a NULL GUID for a direct format name destination",
            SECTION,
        )
    if dq in (0x3, 0x5) and not (qm and any(qm)):
        yield (
            "UserHeader.QueueManagerAddress",
            f"MUST be the destination queue manager GUID when DQ is 0x{dq:X}, found a NULL GUID",
            SECTION,
        )
    for name, selector, table in (
        ("DestinationQueue", dq, DQ_FORMATS),
        ("AdminQueue", aq, AQ_FORMATS),
        ("ResponseQueue", rq, RQ_FORMATS),
    ):
        queue = user.get(name)
        if queue is None:
            continue
        if table.get(selector) is None:
            yield (f"UserHeader.{name}", f"MUST NOT be present when the queue type is 0x{selector:X}", SECTION)
        if selector == 0x7:
            yield from _check_direct(f"UserHeader.{name}", queue)
    if bool(word & _CQ) != (user.get("ConnectorType") is not None):
        yield ("UserHeader.ConnectorType", "MUST be present if and only if Flags.CQ is set", SECTION)


_TH, _MP, _CQ, _AH = 1 << 20, 1 << 21, 1 << 22, 1 << 25


def _utf16z_size(text: str) -> int:
    """len(encode_utf16z(text)), without encoding ASCII text."""
    return 2 * len(text) + 2 if type(text) is str and text.isascii() else len(encode_utf16z(text))


def _direct_holds(queue: Any) -> bool:
    """True exactly when :func:`_check_direct` finds nothing."""
    if not isinstance(queue, dict) or "DirectFormatName" not in queue:
        return True
    count = queue.get("Count")
    if count is None:
        return True
    name = queue.get("DirectFormatName") or ""
    return not count % 2 and count == _utf16z_size(name) and "\0" not in name


_NULL16 = bytes(16)


def _flags_hold(word: int) -> bool:
    """Whether the flag-word MUSTs of :func:`check_user_header` hold for ``word`` (remembered)."""
    dm, dq, aq = word >> 5 & 3, word >> 10 & 7, word >> 13 & 7
    holds = not (
        word & 0x1F > 0x1D
        or dm > 1
        or dq not in DQ_FORMATS
        or aq not in AQ_FORMATS
        or (word & _TH and dm == 0)
        or not word & _MP
        or word & _AH
    )
    if len(_FLAGS_HOLD) >= 4096:
        _FLAGS_HOLD.clear()
    _FLAGS_HOLD[word] = holds
    return holds


_FLAGS_HOLD: dict[int, bool] = {}


@fast_form_of(check_user_header)
def user_header_holds(headers: Container) -> bool:
    """Fast form of :func:`check_user_header`: True exactly when it finds nothing."""
    user = headers["UserHeader"]
    word = int(user["Flags"])
    flags_hold = _FLAGS_HOLD.get(word)
    if flags_hold is None:
        flags_hold = _flags_hold(word)
    if not flags_hold:
        return False
    dq, aq = word >> 10 & 7, word >> 13 & 7
    qm = user["QueueManagerAddress"]
    if dq:  # 0x3, 0x5 need a named queue manager, 0x7 a NULL GUID
        named = qm != _NULL16 if isinstance(qm, bytes) and len(qm) == 16 else bool(qm and any(qm))
        if named == (dq == 0x7):
            return False
    queue = user.get("DestinationQueue")
    if queue is not None and (DQ_FORMATS.get(dq) is None or (dq == 0x7 and not _direct_holds(queue))):
        return False
    queue = user.get("AdminQueue")
    if queue is not None and (AQ_FORMATS.get(aq) is None or (aq == 0x7 and not _direct_holds(queue))):
        return False
    queue = user.get("ResponseQueue")
    if queue is not None:
        rq = word >> 16 & 7
        if RQ_FORMATS.get(rq) is None or (rq == 0x7 and not _direct_holds(queue)):
            return False
    return bool(word & _CQ) == (user.get("ConnectorType") is not None)


def default_user_header(**fields: object) -> Container:
    """A UserHeader ([MS-MQMQ] 2.2.19.2) with the values every builder starts from: GUID_NULL
    queue managers, TimeToBeReceived INFINITE (0xFFFFFFFF), SentTime and MessageID 0, Flags MP
    (a MessagePropertiesHeader follows) and no queues; ``fields`` override them (the
    DestinationQueue and its Flags.DQ among them)."""
    header = Container(
        SourceQueueManager=NULL_GUID,
        QueueManagerAddress=NULL_GUID,
        TimeToBeReceived=0xFFFFFFFF,
        SentTime=0,
        MessageID=0,
        Flags=UserHeaderFlags.make(MP=1),
        DestinationQueue=None,
        AdminQueue=None,
        ResponseQueue=None,
        ConnectorType=None,
    )
    header.update(fields)
    return header
