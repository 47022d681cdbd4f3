"""UserMessage Packet headers: [MS-MQMQ] 2.2.18.1, 2.2.19.2, 2.2.19.3, 2.2.20 and [MS-MQRR] 2.2.5.

Byte layouts are written with ``struct`` from the spec's field tables; whole packets go through
``packets.parse``/``packets.build`` (and the [MS-MQRR] Message Packet Structure, which is not a
session packet, through ``packets.message.parse_headers``/``build_headers``).
"""

from __future__ import annotations

import struct
from io import BytesIO
from typing import Any

import pytest
from construct import Container, ListContainer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import packets
from packets import base, message, mqrr, optional, properties, user
from packets.errors import PacketError
from packets.fields import GUID, HeaderParser
from packets.message import MESSAGE_PACKET_LAYOUT, USER_MESSAGE_LAYOUT, build_headers, parse_headers
from tests.packets import strategies_user as S
from tests.packets.messagekit import (
    AH,
    BSH,
    MP,
    QM,
    SESSION,
    aq,
    direct,
    dq,
    props_bytes,
    rq,
    user_fixed,
    user_message_bytes,
)

QM2 = GUID("{fca09e90-7890-4544-8f11-394c43cd8907}")

PARSERS: dict[str, HeaderParser] = {slot.name: slot.parser for slot in MESSAGE_PACKET_LAYOUT}
CHECKS = {slot.name: slot.checks for slot in MESSAGE_PACKET_LAYOUT}


def roundtrip(parser: HeaderParser, h: Any, ctx: dict[str, Any] | None = None) -> tuple[bytes, Container]:
    """build, then parse with both parsers; they must agree and rebuild the same bytes."""
    data = parser.build(h, ctx or {})
    fast = parser.parse_fast(BytesIO(data), Container(ctx or {}, _params=Container()))
    slow = parser.diagnose(BytesIO(data), {}, Container(ctx or {}))
    assert fast == slow
    assert parser.build(fast, ctx or {}) == data
    return data, fast


def parse_one(parser: HeaderParser, data: bytes, ctx: dict[str, Any] | None = None) -> Container:
    io = BytesIO(data)
    value = parser.parse_fast(io, Container(ctx or {}, _params=Container()))
    assert io.tell() == len(data), "header did not consume exactly its bytes"
    return value


def violations(headers: Container, name: str) -> list[tuple[str, str, str]]:
    return [v for check in CHECKS[name] for v in check(headers)]


def paths(found: list[tuple[str, str, str]]) -> set[str]:
    return {p for p, _, _ in found}


# ============================================================================================
# 2.2.19.2 UserHeader and the queue format types


def test_user_header_flag_bits_match_frame_7() -> None:
    """[MS-MQQB] FRAME 7: UserHeader.Flags 0x281C00 = DQ 7, SH (SecurityHeader), MP."""
    f = user.UserHeaderFlags(0x281C00)
    assert (f.DQ, f.SH, f.MP, f.TH, f.AQ, f.RQ, f.RC, f.DM) == (7, 1, 1, 0, 0, 0, 0, 0)
    assert user.UserHeaderFlags.make(RC=0x1D, DM=1, JN=1, JP=1, CQ=1, MQ=1, AH=1, HH=1) == (
        0x1D | 1 << 5 | 1 << 8 | 1 << 9 | 1 << 22 | 1 << 23 | 1 << 25 | 1 << 28
    )
    assert user.UserHeaderFlags.make(X1=1, X2=1, X3=3, X4=7) == 1 << 7 | 1 << 24 | 3 << 26 | 7 << 29


def test_user_header_private_destination_by_id() -> None:
    data = user_fixed(MP | dq(3), bytes(QM2)) + struct.pack("<L", 0x2A)
    h = parse_one(user.USER_HEADER, data)
    assert h.SourceQueueManager == QM and h.QueueManagerAddress == QM2
    assert (h.TimeToBeReceived, h.SentTime, h.MessageID) == (0xFFFFFFFF, 1_700_000_000, 7)
    assert h.DestinationQueue == Container(PrivateQueueIdentifier=0x2A)
    assert h.AdminQueue is None and h.ResponseQueue is None and h.ConnectorType is None
    assert user.USER_HEADER.build(h) == data


def test_user_header_public_destination_is_a_guid() -> None:
    data = user_fixed(MP | dq(5), bytes(QM2)) + bytes(QM)
    h = parse_one(user.USER_HEADER, data)
    assert h.DestinationQueue.PublicQueueIdentifier == QM


@pytest.mark.parametrize(
    ("name", "count", "pad"),
    [("", 2, 0), ("a", 4, 2), ("ab", 6, 0), ("abc", 8, 2), ("OS:host\\private$\\q", 38, 0)],
)
def test_direct_queue_format_name_count_in_bytes_and_padding(name: str, count: int, pad: int) -> None:
    """2.2.18.1.5.2: Count = bytes including the NUL, excluding the padding to 4 from the
    start of the UserHeader."""
    data = user_fixed(MP | dq(7)) + direct(name)
    assert len(data) == 48 + 2 + count + pad
    h = parse_one(user.USER_HEADER, data)
    assert h.DestinationQueue.Count == count
    assert h.DestinationQueue.DirectFormatName == name
    assert len(user.USER_HEADER.build(h)) % 4 == 0


def test_direct_queue_padding_bytes_survive_a_round_trip() -> None:
    """ "There are no restrictions on the value of the padding bytes": kept, and rebuilt."""
    data = user_fixed(MP | dq(7)) + struct.pack("<H", 4) + "a\0".encode("utf-16-le") + b"\xaa\xbb"
    h = parse_one(user.USER_HEADER, data)
    assert user.USER_HEADER.build(h) == data
    h2 = Container(h)
    h2.DestinationQueue = Container(Count=4, DirectFormatName="a")
    assert user.USER_HEADER.build(h2).endswith(b"\0\0")


def test_admin_queue_kinds_and_private_queue_format_name() -> None:
    """AQ 2/3: PrivateQueueFormatNameId; AQ 6: PrivateQueueFormatName (GUID + id, 20 bytes);
    AQ 5: public; AQ 7: direct (padding relative to the header start, after the destination)."""
    for kind, tail, expect in (
        (2, struct.pack("<L", 9), Container(PrivateQueueIdentifier=9)),
        (3, struct.pack("<L", 9), Container(PrivateQueueIdentifier=9)),
        (5, bytes(QM2), Container(PublicQueueIdentifier=QM2)),
        (6, bytes(QM2) + struct.pack("<L", 11), Container(SourceQueueManager=QM2, PrivateQueueIdentifier=11)),
    ):
        data = user_fixed(MP | dq(7) | aq(kind)) + direct("abc") + tail
        h = parse_one(user.USER_HEADER, data)
        assert h.AdminQueue == expect, kind
    data = user_fixed(MP | dq(7) | aq(7)) + direct("abc") + direct("ab")
    h = parse_one(user.USER_HEADER, data)
    assert h.AdminQueue == Container(Count=6, DirectFormatName="ab")


@pytest.mark.parametrize("kind", range(8))
def test_response_queue_table(kind: int) -> None:
    """RQ 0 and 1 carry no name; 2, 3, 4 an id; 5 a GUID; 6 GUID + id; 7 a direct name."""
    tails = {
        0: b"",
        1: b"",
        2: struct.pack("<L", 5),
        3: struct.pack("<L", 5),
        4: struct.pack("<L", 5),
        5: bytes(QM2),
        6: bytes(QM2) + struct.pack("<L", 5),
        7: direct("r"),
    }
    data = user_fixed(MP | dq(7) | aq(2) | rq(kind)) + direct("d") + struct.pack("<L", 1) + tails[kind]
    h = parse_one(user.USER_HEADER, data)
    assert (h.ResponseQueue is None) == (kind in (0, 1))
    assert user.USER_HEADER.build(h) == data


def test_spec_disagreement_rq_1_is_listed_as_present_and_absent() -> None:
    """2.2.19.2 says ResponseQueue "MUST be present when RQ is 0x1, 0x2, ..." and "MUST NOT be
    present when RQ is 0x0 or 0x1", and leaves 0x4 out of the present list; the table gives
    RQ 0x1 the data type None ("same as the administration queue") and 0x4 a
    PrivateQueueFormatNameId. The table is followed: no bytes for 0x1, four for 0x4."""
    assert user.RQ_FORMATS[0x1] is None
    assert user.RQ_FORMATS[0x4] is user.PrivateQueueFormatNameId
    data = user_fixed(MP | dq(3) | rq(1), bytes(QM2)) + struct.pack("<L", 1)
    assert parse_one(user.USER_HEADER, data).ResponseQueue is None


def test_connector_type_iff_cq() -> None:
    data = user_fixed(MP | 1 << 22) + bytes(QM2)
    h = parse_one(user.USER_HEADER, data)
    assert h.ConnectorType == QM2
    assert parse_one(user.USER_HEADER, user_fixed(MP)).ConnectorType is None


def test_unlisted_dq_and_aq_values_carry_nothing_and_are_reported() -> None:
    for bad_dq in (1, 2, 4, 6):
        h = parse_one(user.USER_HEADER, user_fixed(MP | dq(bad_dq)))
        assert h.DestinationQueue is None
        assert "UserHeader.Flags.DQ" in paths(violations(Container(UserHeader=h), "UserHeader"))
    for bad_aq in (1, 4):
        h = parse_one(user.USER_HEADER, user_fixed(MP | aq(bad_aq)))
        assert "UserHeader.Flags.AQ" in paths(violations(Container(UserHeader=h), "UserHeader"))


def _user(**flags: int) -> Container:
    kind = flags.get("DQ", 0)
    queue = {0: None, 3: Container(PrivateQueueIdentifier=1), 5: Container(PublicQueueIdentifier=QM2)}
    dest = queue.get(kind, Container(Count=4, DirectFormatName="a"))
    return Container(
        SourceQueueManager=QM,
        QueueManagerAddress=GUID() if kind in (0, 7) else QM2,
        TimeToBeReceived=0,
        SentTime=0,
        MessageID=0,
        Flags=user.UserHeaderFlags.make({"MP": 1, **flags}),
        DestinationQueue=dest,
        AdminQueue=None,
        ResponseQueue=None,
        ConnectorType=None,
    )


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (dict(RC=0x1E), "UserHeader.Flags.RC"),
        (dict(DM=2), "UserHeader.Flags.DM"),
        (dict(TH=1, DM=0), "UserHeader.Flags.TH"),
        (dict(MP=0), "UserHeader.Flags.MP"),
        (dict(AH=1), "UserHeader.Flags.AH"),
        (dict(CQ=1), "UserHeader.ConnectorType"),
    ],
)
def test_user_header_checks(change: dict[str, int], path: str) -> None:
    h = _user(DQ=7, **change)
    assert path in paths(list(user.check_user_header(Container(UserHeader=h))))
    assert list(user.check_user_header(Container(UserHeader=_user(DQ=7)))) == []


def test_queue_manager_address_rules() -> None:
    h = _user(DQ=7)
    h.QueueManagerAddress = QM2
    assert "UserHeader.QueueManagerAddress" in paths(list(user.check_user_header(Container(UserHeader=h))))
    h = _user(DQ=3)
    h.QueueManagerAddress = GUID()
    assert "UserHeader.QueueManagerAddress" in paths(list(user.check_user_header(Container(UserHeader=h))))
    assert list(user.check_user_header(Container(UserHeader=_user(DQ=5)))) == []


def test_direct_name_without_terminating_nul_is_reported() -> None:
    """Count 6 over "abc" with no NUL: parsed text keeps 3 characters, Count wants 2 + NUL."""
    data = user_fixed(MP | dq(7)) + struct.pack("<H", 6) + "abc".encode("utf-16-le") + bytes(0)
    h = parse_one(user.USER_HEADER, data)
    found = list(user.check_user_header(Container(UserHeader=h)))
    assert any("terminating null" in r for p, r, _ in found if p == "UserHeader.DestinationQueue.DirectFormatName")


def test_direct_name_with_odd_count_fails_to_parse_with_its_field() -> None:
    data = user_fixed(MP | dq(7)) + struct.pack("<H", 5) + b"a\0b\0\0\0\0\0"
    with pytest.raises(PacketError) as e:
        user.USER_HEADER.diagnose(BytesIO(data), {})
    assert e.value.field_path.startswith("UserHeader.DestinationQueue")
    assert e.value.offset == 50


def test_queue_present_for_a_queue_type_without_name_is_reported() -> None:
    h = _user(DQ=7)
    h.ResponseQueue = Container(PrivateQueueIdentifier=1)  # RQ is 0
    assert "UserHeader.ResponseQueue" in paths(list(user.check_user_header(Container(UserHeader=h))))


def test_message_identifier_and_tx_sequence_id_layouts() -> None:
    assert user.MessageIdentifier.build(dict(QueueManagerGuid=QM, Ordinal=5)) == bytes(QM) + struct.pack("<L", 5)
    tx = user.TxSequenceID.parse(struct.pack("<LL", 1, 2))
    assert (tx.Ordinal, tx.TimeStamp) == (1, 2)  # Ordinal is the low-order half


def test_message_class_table_and_custom_classes() -> None:
    assert user.MessageClass.MQMSG_CLASS_ORDER_ACK == 0xFF
    assert user.MessageClass.MQMSG_CLASS_NACK_RECEIVE_REJECTED == 0xC004
    assert 0x8008 not in user.MessageClass._value2member_map_
    assert user.is_valid_message_class(0xC004)
    assert user.is_valid_message_class(0xE1FF)  # custom: bits of mask 0xE1FF only
    assert not user.is_valid_message_class(0x0200)


# ============================================================================================
# 2.2.19.3 MessagePropertiesHeader


def test_message_properties_without_label() -> None:
    data = props_bytes(None, b"", b"xyz")
    assert len(data) == 60  # 56 + 3, padded to 60
    h = parse_one(properties.MESSAGE_PROPERTIES_HEADER, data)
    assert (h.LabelLength, h.Label, h.MessageSize, h.MessageBody) == (0, None, 3, b"xyz")
    assert properties.MESSAGE_PROPERTIES_HEADER.build(h) == data


def test_message_properties_label_length_counts_wchars_with_nul() -> None:
    data = props_bytes("QM Ordering Ack", b"", bytes(36))
    h = parse_one(properties.MESSAGE_PROPERTIES_HEADER, data)
    assert h.LabelLength == 16 and h.Label == "QM Ordering Ack"
    built = properties.MESSAGE_PROPERTIES_HEADER.build(
        dict(
            Flags=0,
            MessageClass=0,
            BodyType=0x11,
            ApplicationTag=0,
            PrivacyLevel=0,
            HashAlgorithm=0x800E,
            EncryptionAlgorithm=0x6610,
            Label="QM Ordering Ack",
            ExtensionData=b"",
            MessageBody=bytes(36),
        )
    )
    assert built == data


@pytest.mark.parametrize(
    ("label", "ext", "body"), [("a", b"", b""), ("ab", b"e", b"bb"), (None, b"123", b"4"), ("", b"", b"")]
)
def test_extension_data_and_body_are_unaligned_and_total_padded(label: str | None, ext: bytes, body: bytes) -> None:
    data = props_bytes(label, ext, body)
    h = parse_one(properties.MESSAGE_PROPERTIES_HEADER, data)
    assert (h.ExtensionData, h.MessageBody) == (ext, body)
    start = 56 + 2 * h.LabelLength
    assert data[start : start + len(ext) + len(body)] == ext + body
    assert len(data) % 4 == 0


def _props(**kw: Any) -> Container:
    h = parse_one(properties.MESSAGE_PROPERTIES_HEADER, props_bytes("lab", b"", b"body"))
    h.update(kw)
    return h


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (dict(LabelLength=0xFB, Label="x" * 0xFA), "MessagePropertiesHeader.LabelLength"),
        (dict(LabelLength=0, Label="x"), "MessagePropertiesHeader.Label"),
        (dict(LabelLength=3, Label="abc"), "MessagePropertiesHeader.Label"),  # NUL missing
        (dict(LabelLength=4, Label="a\0b"), "MessagePropertiesHeader.Label"),
        (dict(MessageClass=0x0200), "MessagePropertiesHeader.MessageClass"),
        (dict(MessageSize=9), "MessagePropertiesHeader.MessageSize"),
        (dict(PrivacyLevel=2), "MessagePropertiesHeader.PrivacyLevel"),
        (dict(PrivacyLevel=5, EncryptionAlgorithm=0x6602), "MessagePropertiesHeader.EncryptionAlgorithm"),
        (dict(PrivacyLevel=1, EncryptionAlgorithm=0x6610), "MessagePropertiesHeader.EncryptionAlgorithm"),
    ],
)
def test_message_properties_checks(change: dict[str, Any], path: str) -> None:
    assert list(properties.check_message_properties(Container(MessagePropertiesHeader=_props()))) == []
    found = list(properties.check_message_properties(Container(MessagePropertiesHeader=_props(**change))))
    assert path in paths(found)


def test_label_without_terminating_nul_on_the_wire_is_reported() -> None:
    raw = bytearray(props_bytes("abc"))
    raw[56 + 6 : 56 + 8] = "d".encode("utf-16-le")  # overwrite the NUL
    h = parse_one(properties.MESSAGE_PROPERTIES_HEADER, bytes(raw))
    assert h.Label == "abcd"
    found = list(properties.check_message_properties(Container(MessagePropertiesHeader=h)))
    assert any("terminating null" in r for _, r, _ in found)


def test_hash_and_encryption_algorithms_need_the_security_header() -> None:
    h = _props(HashAlgorithm=0x1234, EncryptionAlgorithm=0x1234)
    assert list(properties.check_message_properties(Container(MessagePropertiesHeader=h))) == []
    sec = Container(Flags=optional.SecurityHeaderFlags.make(EB=1), SignatureSize=4)
    found = paths(list(properties.check_message_properties(Container(MessagePropertiesHeader=h, SecurityHeader=sec))))
    assert found == {"MessagePropertiesHeader.HashAlgorithm", "MessagePropertiesHeader.EncryptionAlgorithm"}


@pytest.mark.parametrize(
    ("ack_flags", "admin", "bad"), [(0, 0, False), (1, 2, False), (8, 0, True), (0, 3, True), (0x10, 0, False)]
)
def test_admin_queue_iff_acknowledgments(ack_flags: int, admin: int, bad: bool) -> None:
    headers = Container(
        UserHeader=Container(Flags=user.UserHeaderFlags.make(MP=1, AQ=admin)),
        MessagePropertiesHeader=Container(Flags=properties.MessagePropertiesFlags(ack_flags)),
    )
    assert bool(list(properties.check_admin_queue(headers))) == bad


# ============================================================================================
# 2.2.20.x optional headers


def test_transaction_header_20_or_36_bytes() -> None:
    raw = struct.pack("<LLLLL", 0x4 | 0x8 | 5 << 4, 1, 2, 3, 2)
    h = parse_one(optional.TRANSACTION_HEADER, raw)
    assert (h.Flags.FM, h.Flags.LM, h.Flags.ID, h.Flags.CG) == (1, 1, 5, 0)
    assert (h.TxSequenceID.Ordinal, h.TxSequenceID.TimeStamp, h.TxSequenceNumber, h.PreviousTxSequenceNumber) == (
        1,
        2,
        3,
        2,
    )
    assert h.ConnectorQMGuid is None
    raw = struct.pack("<LLLLL", 1, 1, 2, 3, 2) + bytes(QM)
    assert parse_one(optional.TRANSACTION_HEADER, raw).ConnectorQMGuid == QM


def test_transaction_header_checks() -> None:
    good = parse_one(optional.TRANSACTION_HEADER, struct.pack("<LLLLL", 0, 1, 2, 1, 0))
    assert list(optional.check_transaction_header(Container(TransactionHeader=good))) == []
    bad = Container(good, TxSequenceNumber=0, PreviousTxSequenceNumber=0xFFFFFFFF)
    found = paths(list(optional.check_transaction_header(Container(TransactionHeader=bad))))
    assert found == {"TransactionHeader.TxSequenceNumber", "TransactionHeader.PreviousTxSequenceNumber"}


def test_spec_disagreement_transaction_flags_unknown_values() -> None:
    """2.2.20.5 says "any value not specified in the table MUST be treated as an error by
    closing the session" and also that X1-X8 "MUST be ignored on receipt". The bit table is
    followed: X bits set are not a violation."""
    h = parse_one(optional.TRANSACTION_HEADER, struct.pack("<LLLLL", 0xFF000000, 1, 2, 1, 0))
    assert list(optional.check_transaction_header(Container(TransactionHeader=h))) == []


def test_security_data_items_are_each_aligned_to_4() -> None:
    raw = struct.pack("<HHHHLL", 0x2 | 0x80, 16, 0, 5, 1, 0) + bytes(QM) + b"sign5" + bytes(3) + b"c" + bytes(3)
    h = parse_one(optional.SECURITY_HEADER, raw)
    assert h.SecurityData.SecurityID == bytes(QM)
    assert h.SecurityData.Signature == b"sign5" and h.SecurityData.SenderCert == b"c"
    assert h.SecurityData.EncryptionKey == b"" and h.SecurityData.ProviderInfo == b""
    assert optional.SECURITY_HEADER.build(h) == raw


@pytest.mark.parametrize(
    ("flags", "sizes", "path"),
    [
        (3, (0, 0, 4, 0, 0), "SecurityHeader.Flags.ST"),
        (0, (4, 0, 0, 0, 0), "SecurityHeader.SenderIdSize"),
        (0x10, (0, 0, 4, 0, 0), "SecurityHeader.Flags.AU"),
        (0x100, (0, 0, 4, 0, 0), "SecurityHeader.Flags.AS"),
        (0, (0, 0, 0, 0, 0), "SecurityHeader"),
        (0, (0, 0, 0, 0x10000, 0), "SecurityHeader.SenderCertSize"),
    ],
)
def test_security_header_checks(flags: int, sizes: tuple[int, ...], path: str) -> None:
    names = ("SecurityID", "EncryptionKey", "Signature", "SenderCert", "ProviderInfo")
    h = Container(
        Flags=optional.SecurityHeaderFlags(flags),
        **dict(zip(optional.SECURITY_SIZES, sizes, strict=True)),
        SecurityData=Container({n: bytes(s) for n, s in zip(names, sizes, strict=True)}),
    )
    assert path in paths(list(optional.check_security_header(Container(SecurityHeader=h))))


def test_debug_header_4_or_20_bytes_and_checks() -> None:
    assert parse_one(optional.DEBUG_HEADER, struct.pack("<HH", 0, 0)).QueueIdentifier is None
    h = parse_one(optional.DEBUG_HEADER, struct.pack("<HH", 1, 0) + bytes(QM))
    assert h.QueueIdentifier == QM
    bad = parse_one(optional.DEBUG_HEADER, struct.pack("<HH", 2, 0))
    assert paths(list(optional.check_debug_header(Container(DebugHeader=bad)))) == {"DebugHeader.Flags.QT"}


def test_soap_header_lengths_in_wchars_with_nul() -> None:
    raw = struct.pack("<HHL", 0x320, 0, 3) + "ab\0".encode("utf-16-le")
    raw += struct.pack("<HHL", 0x384, 0, 2) + "c\0".encode("utf-16-le")
    raw += bytes(-len(raw) % 4)
    h = parse_one(optional.SOAP_HEADER, raw)
    assert (h.Header, h.Body, h.HeaderDataLength, h.BodyDataLength) == ("ab", "c", 3, 2)
    assert optional.SOAP_HEADER.build(h) == raw


def test_spec_disagreement_soap_header_padding() -> None:
    """2.2.20.7 states no padding, yet 2.2.19.1 counts "padding bytes used to align the various
    message headers on 4-byte boundaries" in PacketSize: the SoapHeader is padded to 4 so the
    MultiQueueFormatHeader/SessionHeader after it start aligned."""
    h = dict(Header="a", Body=None)  # 8 + 4 + 8 = 20 bytes: already aligned
    assert len(optional.SOAP_HEADER.build(h)) == 20
    h = dict(Header="ab", Body=None)  # 8 + 6 + 8 = 22 -> 24
    assert len(optional.SOAP_HEADER.build(h)) == 24


def test_soap_header_checks() -> None:
    h = parse_one(optional.SOAP_HEADER, optional.SOAP_HEADER.build(dict(Header="h", Body="b")))
    assert list(optional.check_soap_header(Container(SoapHeader=h))) == []
    bad = Container(h, HeaderSectionID=1, BodySectionID=2, HeaderDataLength=5)
    found = paths(list(optional.check_soap_header(Container(SoapHeader=bad))))
    assert found == {"SoapHeader.HeaderSectionID", "SoapHeader.BodySectionID", "SoapHeader.Header"}


def test_mqf_elements_alignment() -> None:
    """Public (2 + 16 bytes) leaves the next FormatName on a 4-byte boundary; a direct name
    ending at 2 mod 4 makes the DL GUID after it round up by 2."""
    elements = [
        Container(FormatType=1, FormatName=Container(PublicQueueIdentifier=QM)),
        Container(FormatType=2, FormatName=Container(SourceQueueManager=QM2, PrivateQueueIdentifier=3)),
        Container(FormatType=3, FormatName=Container(DirectFormatName="xy")),
        Container(FormatType=6, FormatName=Container(DistributionListIdentifier=QM)),
    ]
    h = dict(HeaderID=0x64, FormatNameList=elements)
    data = optional.MQF_ADDRESS_HEADER.build(h)
    expect = struct.pack("<H", 1) + bytes(QM)  # at 12
    expect += struct.pack("<H", 2) + bytes(QM2) + struct.pack("<L", 3)  # at 30: type, GUID at 32
    expect += struct.pack("<H", 3) + "xy\0".encode("utf-16-le")  # at 52: type, string at 54
    expect += struct.pack("<H", 6) + bytes(2) + bytes(QM)  # at 60: type, 2 pad bytes, GUID at 64
    assert data == struct.pack("<LHHL", 12 + len(expect), 0x64, 0, 4) + expect
    parsed = parse_one(optional.MQF_ADDRESS_HEADER, data)
    assert parsed.FormatNameList == ListContainer(elements)
    assert parsed.HeaderSize == 80


def test_mqf_address_header_size_covers_end_padding() -> None:
    h = dict(HeaderID=0xC8, FormatNameList=[Container(FormatType=3, FormatName=Container(DirectFormatName="ab"))])
    data = optional.MQF_ADDRESS_HEADER.build(h)
    assert len(data) == 20 and struct.unpack_from("<L", data)[0] == 20  # 12 + 2 + 6 -> 20


def test_mqf_address_header_size_too_small_fails_at_its_field() -> None:
    """HeaderSize 12 for a header whose list holds 18 bytes: the padding would be negative."""
    data = struct.pack("<LHHL", 12, 0x64, 0, 1) + struct.pack("<H", 1) + bytes(QM)
    with pytest.raises(PacketError) as e:
        optional.MQF_ADDRESS_HEADER.diagnose(BytesIO(data), {})
    assert e.value.field_path.startswith("MQFAddressHeader")


def test_multi_queue_format_header_checks() -> None:
    h = parse_one(
        optional.MULTI_QUEUE_FORMAT_HEADER,
        optional.MULTI_QUEUE_FORMAT_HEADER.build(
            dict(
                Destination=dict(HeaderID=0x64, FormatNameList=[]),
                Administration=dict(HeaderID=0xC8, FormatNameList=[]),
                Response=dict(HeaderID=0x12C, FormatNameList=[]),
                Signature=dict(Signature=b"abc"),
            )
        ),
    )
    assert list(optional.check_multi_queue_format_header(Container(MultiQueueFormatHeader=h))) == []
    h.Response.HeaderID = 0x64
    h.Signature.ID = 1
    h.Destination.ElementCount = 2
    found = paths(list(optional.check_multi_queue_format_header(Container(MultiQueueFormatHeader=h))))
    assert found == {
        "MultiQueueFormatHeader.Response.HeaderID",
        "MultiQueueFormatHeader.Signature.ID",
        "MultiQueueFormatHeader.Destination.ElementCount",
    }


def test_unknown_format_type_is_a_parse_error() -> None:
    data = struct.pack("<LHHL", 16, 0x64, 0, 1) + struct.pack("<HH", 4, 0)
    with pytest.raises(PacketError) as e:
        optional.MQF_ADDRESS_HEADER.diagnose(BytesIO(data), {})
    assert "FormatNameList" in e.value.field_path


# ============================================================================================
# [MS-MQRR] 2.2.5


def test_mqrr_fixed_sizes() -> None:
    assert len(mqrr.EXTENSION_HEADER.build(dict(Flags=0x12))) == 12
    assert len(mqrr.SUBQUEUE_HEADER.build(dict(AbortCounter=0, MoveCounter=0, LastMoveTime=0))) == 148
    assert len(mqrr.EXTENDED_ADDRESS_HEADER.build(dict(AddressLength=0, AddressType=0))) == 28


def test_subqueue_header_layout_follows_the_diagram() -> None:
    """Learn-page diagram: HeaderSize, then one 32-bit word TM (bit 0) | AcknowledgementClass
    (16 bits) | Reserved (15 bits), then the counters and two 64-byte names. (The PDF text
    extraction prints the TM/AcknowledgementClass/Reserved row before HeaderSize; the
    AcknowledgementClass is called "2 bytes" yet starts at bit 1; it cites "[MS-MQQB] section
    2.2.18.1.6" for the classes, which are [MS-MQMQ] 2.2.18.1.6.)"""
    word = 1 | 0x8001 << 1 | 0x1234 << 17
    raw = struct.pack("<LLLLL", 148, word, 2, 3, 4) + mqrr.fixed_utf16("poison") + bytes(64)
    h = parse_one(mqrr.SUBQUEUE_HEADER, raw)
    assert (h.HeaderSize, h.TM, h.AcknowledgementClass, h.Reserved) == (148, 1, 0x8001, 0x1234)
    assert (h.AbortCounter, h.MoveCounter, h.LastMoveTime) == (2, 3, 4)
    assert mqrr.subqueue_name(h.SubqueueName) == "poison" and mqrr.subqueue_name(h.TargetSubqueueName) == ""
    assert mqrr.SUBQUEUE_HEADER.build(h) == raw
    h.TM = 0  # editing a field rebuilds the word
    assert mqrr.SUBQUEUE_HEADER.build(h)[4:8] == struct.pack("<L", word & ~1)
    found = paths(list(mqrr.check_subqueue_header(Container(SubqueueHeader=Container(h, TM=1)))))
    assert found == {"SubqueueHeader.TM"}


def test_subqueue_name_checks() -> None:
    h = Container(
        HeaderSize=150,
        TM=0,
        AcknowledgementClass=0x0200,
        Reserved=0,
        AbortCounter=0,
        MoveCounter=0,
        LastMoveTime=0,
        SubqueueName=b"a\0" * 32,
        TargetSubqueueName=b"a\0\0\0b\0" + bytes(58),
    )
    found = paths(list(mqrr.check_subqueue_header(Container(SubqueueHeader=h))))
    assert found == {
        "SubqueueHeader.HeaderSize",
        "SubqueueHeader.AcknowledgementClass",
        "SubqueueHeader.SubqueueName",
        "SubqueueHeader.TargetSubqueueName",
    }


@pytest.mark.parametrize(("path", "size"), [("", 8), ("a", 8), ("ab", 12), ("abc", 12)])
def test_dead_letter_header_padded_to_4(path: str, size: int) -> None:
    data = mqrr.DEAD_LETTER_HEADER.build(dict(DeadLetterPathName=path))
    assert len(data) == size and struct.unpack_from("<L", data)[0] == size
    h = parse_one(mqrr.DEAD_LETTER_HEADER, data)
    assert h.DeadLetterPathName == path
    assert list(mqrr.check_dead_letter_header(Container(DeadLetterHeader=h))) == []


def test_dead_letter_header_checks() -> None:
    raw = struct.pack("<L", 12) + "ab\0".encode("utf-16-le") + b"\x01\x02"
    h = parse_one(mqrr.DEAD_LETTER_HEADER, raw)
    assert mqrr.DEAD_LETTER_HEADER.build(h) == raw
    assert paths(list(mqrr.check_dead_letter_header(Container(DeadLetterHeader=h)))) == {
        "DeadLetterHeader.DeadLetterPathName"
    }
    h = parse_one(mqrr.DEAD_LETTER_HEADER, struct.pack("<L", 16) + "ab\0".encode("utf-16-le") + bytes(6))
    assert paths(list(mqrr.check_dead_letter_header(Container(DeadLetterHeader=h)))) == {"DeadLetterHeader.HeaderSize"}


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (dict(HeaderSize=24), "ExtendedAddressHeader.HeaderSize"),
        (dict(AddressType=2), "ExtendedAddressHeader.AddressType"),
        (dict(AddressLength=16), "ExtendedAddressHeader.AddressLength"),
        (dict(AddressScope=3), "ExtendedAddressHeader.AddressScope"),
    ],
)
def test_extended_address_checks(change: dict[str, int], path: str) -> None:
    h = Container(HeaderSize=28, AddressLength=4, AddressType=1, AddressScope=0, Address=bytes(16))
    assert list(mqrr.check_extended_address_header(Container(ExtendedAddressHeader=h))) == []
    found = paths(list(mqrr.check_extended_address_header(Container(ExtendedAddressHeader=Container(h, **change)))))
    assert path in found
    ignored = Container(h, AddressType=0, AddressScope=9, AddressLength=99)
    assert list(mqrr.check_extended_address_header(Container(ExtendedAddressHeader=ignored))) == []


def test_compound_and_srmp_checks() -> None:
    cmh = Container(HeaderId=0, Reserved=0, HTTPBodySize=4, MsgBodySize=3, MsgBodyOffset=2, Data=b"abcd")
    assert paths(list(mqrr.check_compound_message_header(Container(CompoundMessageHeader=cmh)))) == {
        "CompoundMessageHeader.MsgBodyOffset"
    }
    env = Container(HeaderId=0, Reserved=0, DataLength=2, Data="ab")
    assert paths(list(mqrr.check_srmp_envelope_header(Container(SRMPEnvelopeHeader=env)))) == {
        "SRMPEnvelopeHeader.Data"
    }


def test_spec_note_srmp_envelope_data_length_unit() -> None:
    """2.2.5.1.2.1 DataLength is "the length of the data in the Data field" without a unit;
    Data is WCHARs with their NUL. Read as a WCHAR count (like SoapHeader.HeaderDataLength)."""
    data = mqrr.SRMP_ENVELOPE_HEADER.build(dict(HeaderId=1, Data="<e/>"))
    assert struct.unpack_from("<L", data, 4)[0] == 5 and len(data) == 8 + 10 + 2


# ============================================================================================
# Presence, order and PacketSize of the whole UserMessage Packet (2.2.20)

TH, USH, MQ, HH = 1 << 20, 1 << 19, 1 << 23, 1 << 28
DH = 1 << 5

TX = struct.pack("<LLLLL", 0, 1, 1, 1, 0)
SEC = struct.pack("<HHHHLL", 0x80, 0, 0, 4, 0, 0) + b"sign"
DBG = struct.pack("<HH", 0, 0)
SOAP = optional.SOAP_HEADER.build(dict(Header="h", Body="b"))
MQFH = optional.MULTI_QUEUE_FORMAT_HEADER.build(
    dict(
        Destination=dict(HeaderID=0x64, FormatNameList=[]),
        Administration=dict(HeaderID=0xC8, FormatNameList=[]),
        Response=dict(HeaderID=0x12C, FormatNameList=[]),
        Signature=dict(Signature=b""),
    )
)


@pytest.mark.parametrize(
    ("base_flags", "user_flags", "parts", "names"),
    [
        (3, 0, [], []),
        (0, TH | 1 << 5, [TX], ["TransactionHeader"]),
        (3, USH, [SEC], ["SecurityHeader"]),
        (DH | 3, 0, ["P", DBG], ["DebugHeader"]),
        (3, HH, ["P", SOAP], ["SoapHeader"]),
        (3, MQ, ["P", MQFH], ["MultiQueueFormatHeader"]),
        (
            0 | DH,
            TH | 1 << 5 | USH | HH | MQ,
            [TX, SEC, "P", DBG, SOAP, MQFH],
            ["TransactionHeader", "SecurityHeader", "DebugHeader", "SoapHeader", "MultiQueueFormatHeader"],
        ),
    ],
)
def test_each_flag_announces_its_header_in_wire_order(
    base_flags: int, user_flags: int, parts: list[Any], names: list[str]
) -> None:
    props = props_bytes("l", b"", b"body")
    if "P" not in parts:
        parts = [*parts, "P"]
    body = [props if p == "P" else p for p in parts]
    data = user_message_bytes(base_flags, MP | dq(7) | user_flags, *body)
    p = packets.parse(data)
    assert p.kind == packets.PacketKind.UserMessage and p.ok
    assert [n for n in p.headers if n not in ("BaseHeader", "UserHeader", "MessagePropertiesHeader")] == names
    assert packets.build(p) == data
    assert parse_headers(data) == p.headers


def test_session_header_is_last_and_not_counted_in_packet_size() -> None:
    data = user_message_bytes(BSH | 3, MP | dq(7), props_bytes(None), session=SESSION)
    size = struct.unpack_from("<L", data, 8)[0]
    assert size == len(data) - 16
    p = packets.parse(data)
    assert p.ok and p.SessionHeader.WindowSize == 64
    assert list(p.headers)[-1] == "SessionHeader"
    built = packets.build(
        {k: v for k, v in p.headers.items() if k != "BaseHeader"}
        | {"BaseHeader": Container(p.BaseHeader, PacketSize=None)}
    )
    assert built == data


def test_packet_size_counting_the_session_header_is_a_violation() -> None:
    data = bytearray(user_message_bytes(BSH | 3, MP | dq(7), props_bytes(None), session=SESSION))
    struct.pack_into("<L", data, 8, len(data))
    p = packets.parse(bytes(data), strict=False)
    assert "BaseHeader.PacketSize" in {v.field_path for v in p.violations}


def test_user_message_packet_level_rules() -> None:
    p = packets.parse(user_message_bytes(3, MP | dq(7) | TH | 1 << 5, TX, props_bytes(None)), strict=False)
    assert {v.field_path for v in p.violations} == {"BaseHeader.Flags.PR"}
    headers = Container(packets.parse(user_message_bytes(3, MP | dq(7), props_bytes(None))).headers)
    headers.DebugHeader = Container(Flags=0, Reserved=0, QueueIdentifier=None)  # DH clear
    found = list(message.check_user_message(headers))
    assert [p for p, _, _ in found] == ["DebugHeader"]
    headers = Container(headers, BaseHeader=Container(headers.BaseHeader, Flags=base.BaseHeaderFlags.make(PR=3, DH=1)))
    assert list(message.check_user_message(headers)) == []
    del headers["DebugHeader"]
    assert [p for p, _, _ in message.check_user_message(headers)] == ["DebugHeader"]


def test_in_flag_is_forbidden_on_a_user_message() -> None:
    headers = packets.parse(user_message_bytes(3, MP | dq(7), props_bytes(None))).headers
    bad = Container(headers, BaseHeader=Container(headers.BaseHeader, Flags=base.BaseHeaderFlags.make(PR=3, IN=1)))
    assert "BaseHeader.Flags.IN" in paths(list(message.check_user_message(bad)))


def test_admin_queue_required_by_ack_flags_in_a_packet() -> None:
    p = packets.parse(user_message_bytes(3, MP | dq(7), props_bytes(None, flags=0x1)), strict=False)
    assert [v.field_path for v in p.violations] == ["UserHeader.AdminQueue"]
    with pytest.raises(PacketError) as e:
        packets.parse(user_message_bytes(3, MP | dq(7), props_bytes(None, flags=0x1)))
    assert e.value.section == "MS-MQMQ 2.2.19.2"


def test_bad_dq_is_reported_with_its_offset() -> None:
    data = user_message_bytes(3, MP | dq(1), props_bytes(None))
    data = data[:64] + data[64 + len(direct("OS:host\\q")) :]  # no destination bytes
    data = data[:8] + struct.pack("<L", len(data)) + data[12:]
    with pytest.raises(PacketError) as e:
        packets.parse(data)
    assert e.value.field_path == "UserHeader.Flags.DQ" and e.value.offset == 60


def test_srmp_headers_iff_ah_between_debug_and_soap() -> None:
    """[MS-MQRR] 2.2.5.1: SRMPEnvelopeHeader and CompoundMessageHeader follow the DebugHeader and
    precede the SoapHeader, only with UserHeader.Flags.AH (which [MS-MQMQ] 2.2.19.2 says MUST
    NOT be set when sent, so an MQQB receiver reports it)."""
    env = mqrr.SRMP_ENVELOPE_HEADER.build(dict(HeaderId=1, Data="<e/>"))
    cmh = mqrr.COMPOUND_MESSAGE_HEADER.build(dict(HeaderId=2, MsgBodySize=1, MsgBodyOffset=0, Data=b"x"))
    data = user_message_bytes(DH | 3, MP | dq(7) | AH | HH, props_bytes(None), DBG, env, cmh, SOAP)
    p = packets.parse(data, strict=False)
    assert list(p.headers)[2:] == [
        "MessagePropertiesHeader",
        "DebugHeader",
        "SRMPEnvelopeHeader",
        "CompoundMessageHeader",
        "SoapHeader",
    ]
    assert [v.field_path for v in p.violations] == ["UserHeader.Flags.AH"]
    assert packets.build(p) == data


# ============================================================================================
# [MS-MQRR] 2.2.5 Message Packet Structure


def test_message_packet_trailer_follows_the_user_message_and_session_header() -> None:
    """2.2.5: UserMessage (ending with its optional SessionHeader), then ExtensionHeader,
    SubqueueHeader, DeadLetterHeader (iff DL), ExtendedAddressHeader. [MS-MQMQ] 2.2.20 calls the
    SessionHeader last in the UserMessage Packet; the trailer is outside that packet, so
    PacketSize does not count it."""
    um = user_message_bytes(BSH | 3, MP | dq(7), props_bytes(None), session=SESSION)
    sq = mqrr.SUBQUEUE_HEADER.build(dict(AbortCounter=1, MoveCounter=0, LastMoveTime=0))
    dl = mqrr.DEAD_LETTER_HEADER.build(dict(DeadLetterPathName="q"))
    ea = mqrr.EXTENDED_ADDRESS_HEADER.build(
        dict(AddressLength=4, AddressType=1, Address=bytes([10, 0, 0, 1]) + bytes(12))
    )
    ext = struct.pack("<LLB", 12, len(sq + dl + ea), 0x13) + bytes(3)
    data = um + ext + sq + dl + ea
    h = parse_headers(data)
    assert list(h)[-5:] == [
        "SessionHeader",
        "ExtensionHeader",
        "SubqueueHeader",
        "DeadLetterHeader",
        "ExtendedAddressHeader",
    ]
    assert build_headers(h) == data
    for slot in MESSAGE_PACKET_LAYOUT:
        if slot.name in h:
            assert [v for check in slot.checks for v in check(h)] == [], slot.name
    h2 = Container(h)
    h2.ExtensionHeader = Container(h.ExtensionHeader, RemainingHeadersSize=None)
    assert build_headers(h2) == data  # RemainingHeadersSize computed from what follows
    no_dl = Container({k: v for k, v in h.items() if k != "DeadLetterHeader"})
    found = paths(list(mqrr.check_extension_header(no_dl)))
    assert found == {"ExtensionHeader.Flags.DL", "ExtensionHeader.RemainingHeadersSize"}


def test_message_packet_without_trailer_and_extension_flag_rules() -> None:
    um = user_message_bytes(3, MP | dq(7), props_bytes(None))
    assert "ExtensionHeader" not in parse_headers(um)
    ext = Container(HeaderSize=13, RemainingHeadersSize=0, Flags=mqrr.ExtensionHeaderFlags(0), Reserved=bytes(3))
    found = paths(list(mqrr.check_extension_header(Container(ExtensionHeader=ext))))
    assert found == {"ExtensionHeader.HeaderSize", "ExtensionHeader.Flags.SQ", "ExtensionHeader.Flags.EA"}


def test_binary_message_rule() -> None:
    u = Container(Flags=user.UserHeaderFlags.make(MP=1))
    assert paths(list(mqrr.check_binary_message(Container(UserHeader=u, SRMPEnvelopeHeader=Container())))) == {
        "SRMPEnvelopeHeader"
    }
    u = Container(Flags=user.UserHeaderFlags.make(MP=1, AH=1))
    assert paths(list(mqrr.check_binary_message(Container(UserHeader=u)))) == {
        "SRMPEnvelopeHeader",
        "CompoundMessageHeader",
    }


# ============================================================================================
# Hypothesis round trips

SETTINGS = dict(derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", sorted(S.HEADER_STRATEGIES))
def test_every_header_round_trips(name: str) -> None:
    parser = PARSERS[name]

    @settings(max_examples=120, **SETTINGS)  # type: ignore[arg-type]
    @given(S.HEADER_STRATEGIES[name])
    def run(h: Container) -> None:
        data, parsed = roundtrip(parser, h)
        assert parsed == h
        assert len(data) % 4 == 0  # every header keeps the next one on a 4-byte boundary
        own_check = CHECKS[name][0]  # the header's own rules (valid values: none fires)
        assert list(own_check(Container({name: parsed}))) == []

    run()


def test_header_sizes_follow_the_field_tables() -> None:
    @settings(max_examples=100, **SETTINGS)  # type: ignore[arg-type]
    @given(
        S.user_headers(),
        S.message_properties_headers(),
        S.security_headers(),
        S.soap_headers(),
        S.multi_queue_format_headers(),
    )
    def run(u: Container, mph: Container, sec: Container, soap: Container, mqf: Container) -> None:
        assert len(user.USER_HEADER.build(u)) == S.user_header_size(u)
        assert len(properties.MESSAGE_PROPERTIES_HEADER.build(mph)) == S.message_properties_size(mph)
        assert len(optional.SECURITY_HEADER.build(sec)) == S.security_header_size(sec)
        assert len(optional.SOAP_HEADER.build(soap)) == S.soap_header_size(soap)
        assert len(optional.MULTI_QUEUE_FORMAT_HEADER.build(mqf)) == S.multi_queue_format_size(mqf)

    run()


COMBINATIONS = [frozenset(n for i, n in enumerate(S.OPTIONAL_NAMES) if mask >> i & 1) for mask in range(64)]


@pytest.mark.parametrize("present", COMBINATIONS, ids=lambda s: "+".join(sorted(n[:4] for n in s)) or "plain")
def test_user_message_round_trips_for_every_optional_header_combination(present: frozenset[str]) -> None:
    @settings(max_examples=20, **SETTINGS)  # type: ignore[arg-type]
    @given(S.user_messages(present=present))
    def run(headers: Container) -> None:
        data = packets.build(headers)
        assert len(data) == headers.BaseHeader.PacketSize + (16 if "SessionHeader" in present else 0)
        p = packets.parse(data)  # strict: a valid packet breaks no rule
        assert p.kind == packets.PacketKind.UserMessage
        assert p.headers == headers
        assert packets.build(p) == data
        assert list(p.headers) == [n for n in ("BaseHeader", *(s.name for s in USER_MESSAGE_LAYOUT)) if n in headers]

    run()


def test_message_packet_structure_round_trips() -> None:
    @settings(max_examples=150, **SETTINGS)  # type: ignore[arg-type]
    @given(S.user_messages(trailer=True))
    def run(headers: Container) -> None:
        data = build_headers(headers)
        parsed = parse_headers(data)
        assert parsed == headers
        assert build_headers(parsed) == data
        for slot in MESSAGE_PACKET_LAYOUT:
            if slot.name in parsed:
                assert [v for check in slot.checks for v in check(parsed)] == [], slot.name

    run()


def test_truncated_user_messages_fail_with_a_field_path() -> None:
    @settings(max_examples=100, **SETTINGS)  # type: ignore[arg-type]
    @given(S.user_messages(), st.data())
    def run(headers: Container, data: st.DataObject) -> None:
        raw = packets.build(headers)
        cut = data.draw(st.integers(16, len(raw) - 1))
        p = packets.parse(raw[:cut], strict=False)
        assert p.violations
        assert all(v.field_path for v in p.violations)

    run()
