"""The scapy layers (packets.scapy_layers) against the codec, both ways, for every packet kind
([MS-MQMQ] 2.2.19-2.2.20, [MS-MQRR] 2.2.5.1, [MS-MQQB] 2.2) and every hex fixture.

Built from fields: ``raw(MSMQ.from_headers(h)) == packets.build(h)``.  Dissected:
``MSMQ(b).to_headers() == packets.parse(b).headers`` (every header and field by spec name) and
``raw(MSMQ(b)) == b``.  Crafted from a few fields with the layers' defaults: the same bytes as the
codec's header builders.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from construct import Container
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.compat import raw
from scapy.layers.inet import IP, TCP, UDP

import packets
from packets import session as sp
from packets.fields import GUID, NULL_GUID
from packets.layout import PacketKind
from packets.optional import default_transaction_header
from packets.properties import default_message_properties_header
from packets.scapy_layers import HEADER_LAYERS, MSMQ, MSMQPing, header_layer
from packets.user import DirectQueueFormatName, PrivateQueueFormatNameId, UserHeaderFlags, default_user_header
from tests.packets import strategies_session as ss
from tests.packets import strategies_user as su

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CLIENT = GUID("{C626EA11-E6B6-9749-9595-9150557358D1}")
SERVER = GUID("{FCA09E90-7890-4544-8F11-394C43CD8907}")

UserHeader = HEADER_LAYERS["UserHeader"]
MessagePropertiesHeader = HEADER_LAYERS["MessagePropertiesHeader"]
TransactionHeader = HEADER_LAYERS["TransactionHeader"]
EstablishConnectionHeader = HEADER_LAYERS["EstablishConnectionHeader"]
ConnectionParametersHeader = HEADER_LAYERS["ConnectionParametersHeader"]
SessionHeader = HEADER_LAYERS["SessionHeader"]
BaseHeader = HEADER_LAYERS["BaseHeader"]
DirectQueue = header_layer(DirectQueueFormatName)
PrivateQueueId = header_layer(PrivateQueueFormatNameId)


def both_ways(headers: Container) -> None:
    """Fields -> scapy -> bytes is packets.build; bytes -> scapy -> fields is packets.parse."""
    data = packets.build(headers)
    crafted = MSMQ.from_headers(headers)
    assert raw(crafted) == data
    dissected = MSMQ(data)
    assert raw(dissected) == data
    decoded = packets.parse(data, strict=False)
    assert dissected.to_headers() == decoded.headers
    assert dissected.kind == str(decoded.kind)
    assert [v.field_path for v in dissected.violations] == [v.field_path for v in decoded.violations]
    # Every header read through scapy equals the codec's, field by field.
    for name, value in decoded.headers.items():
        assert dissected.getfieldval(name).to_fields() == value, name
    # A dissected layer whose fields were copied builds the same bytes from its fields.
    assert packets.build(MSMQ.from_headers(decoded).to_headers()) == data


# ---------------------------------------------------------------------------------------------
# Property: every packet kind


@PROPERTY
@given(su.user_messages())
def test_user_messages_both_ways(headers: Container) -> None:
    both_ways(headers)


@PROPERTY
@given(su.user_messages(present=frozenset(su.OPTIONAL_NAMES)))
def test_user_messages_with_every_optional_header_both_ways(headers: Container) -> None:
    both_ways(headers)


@PROPERTY
@given(
    st.sampled_from([PacketKind.EstablishConnection, PacketKind.ConnectionParameters, PacketKind.SessionAck]).flatmap(
        lambda kind: st.booleans().flatmap(lambda valid: ss.internal_packet(kind, valid))
    )
)
def test_internal_packets_both_ways(headers: Container) -> None:
    both_ways(headers)


@PROPERTY
@given(ss.undefined_pt_packet())
def test_undefined_internal_packets_both_ways(headers: Container) -> None:
    both_ways(headers)


@PROPERTY
@given(st.sampled_from([PacketKind.OrderAck, PacketKind.FinalAck]).flatmap(ss.transactional_ack_packet))
def test_transactional_acks_both_ways(headers: Container) -> None:
    both_ways(headers)
    assert MSMQ(packets.build(headers)).kind in ("OrderAck", "FinalAck")


@PROPERTY
@given(st.booleans().flatmap(ss.ping_packet))
def test_ping_both_ways(fields: Container) -> None:
    data = packets.build_ping(fields)
    assert raw(MSMQPing(**{k: v for k, v in fields.items()})) == data
    dissected = MSMQPing(data)
    assert raw(dissected) == data
    assert dissected.to_fields() == packets.parse_ping(data, strict=False).headers.Ping


# ---------------------------------------------------------------------------------------------
# Every fixture


def _read_hex(text: str) -> bytes:
    return bytes.fromhex("".join(re.sub(r"#.*", "", line) for line in text.splitlines()).replace(" ", ""))


HEX_FIXTURES = sorted(FIXTURES.rglob("*.hex"))


def test_there_are_fixtures() -> None:
    assert len(HEX_FIXTURES) >= 50


@pytest.mark.parametrize("path", HEX_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_both_ways(path: Path) -> None:
    data = _read_hex(path.read_text())
    if (len(data) == sp.PING_PACKET_SIZE and "ping" in path.name.lower()) or _is_ping_frame(path):
        dissected = MSMQPing(data)
        assert raw(dissected) == data
        assert dissected.to_fields() == packets.parse_ping(data).headers.Ping
        assert raw(MSMQPing(**dict(packets.parse_ping(data).headers.Ping))) == data
        return
    decoded = packets.parse(data, strict=False)
    both_ways(decoded.headers)
    assert raw(MSMQ(data)) == data


def _is_ping_frame(path: Path) -> bool:
    description = path.with_suffix(".json")
    return description.exists() and '"kind": "Ping"' in description.read_text()


# ---------------------------------------------------------------------------------------------
# Crafting from a few fields: the defaults are the codec's header builders


def test_empty_msmq_is_the_default_user_message() -> None:
    expected = packets.build(
        Container(
            BaseHeader=packets.base.default_base_header(),
            UserHeader=default_user_header(),
            MessagePropertiesHeader=default_message_properties_header(),
        )
    )
    assert raw(MSMQ()) == expected
    assert MSMQ().violations == []
    assert MSMQ().kind == "UserMessage"


def test_session_packets_from_a_few_fields() -> None:
    assert raw(MSMQ(EstablishConnectionHeader=EstablishConnectionHeader(ClientGuid=CLIENT))) == packets.build(
        sp.establish_connection(CLIENT)
    )
    assert raw(
        MSMQ(EstablishConnectionHeader=EstablishConnectionHeader(ClientGuid=CLIENT, ServerGuid=SERVER, TimeStamp=7))
    ) == packets.build(sp.establish_connection(CLIENT, SERVER, 7))
    assert raw(MSMQ(ConnectionParametersHeader=ConnectionParametersHeader())) == packets.build(
        sp.connection_parameters()
    )
    assert raw(MSMQ(ConnectionParametersHeader={"WindowSize": 8})) == packets.build(
        sp.connection_parameters(window_size=8)
    )
    assert raw(MSMQ(SessionHeader=SessionHeader(AckSequenceNumber=3, WindowSize=9))) == packets.build(
        sp.session_ack(3, window_size=9)
    )
    for pkt in (
        MSMQ(EstablishConnectionHeader=EstablishConnectionHeader(ClientGuid=CLIENT)),
        MSMQ(ConnectionParametersHeader={}),
        MSMQ(SessionHeader={}),
    ):
        assert pkt.violations == [], pkt.summary()


def test_user_message_from_a_few_fields() -> None:
    name = "TCP:192.0.2.1\\private$\\q"
    pkt = MSMQ(
        UserHeader={"DestinationQueue": {"DirectFormatName": name}, "MessageID": 5},
        MessagePropertiesHeader={"MessageBody": b"hello", "Label": "hi"},
    )
    expected = Container(
        BaseHeader=packets.base.default_base_header(),
        UserHeader=default_user_header(
            MessageID=5,
            Flags=UserHeaderFlags.make(MP=1, DQ=7),
            DestinationQueue=Container(DirectFormatName=name),
        ),
        MessagePropertiesHeader=default_message_properties_header(b"hello", Label="hi"),
    )
    assert raw(pkt) == packets.build(expected)
    assert pkt.violations == []
    assert pkt.UserHeader.Flags.DQ is None  # left to the packet: computed when built
    assert MSMQ(raw(pkt)).UserHeader.Flags.DQ == 7
    assert MSMQ(raw(pkt)).MessagePropertiesHeader.MessageSize == 5


def test_transactional_message_from_a_few_fields() -> None:
    pkt = MSMQ(
        UserHeader=UserHeader(DestinationQueue=PrivateQueueId(PrivateQueueIdentifier=9), QueueManagerAddress=SERVER),
        TransactionHeader=TransactionHeader(),
        MessagePropertiesHeader=MessagePropertiesHeader(MessageBody=b"tx"),
    )
    expected = Container(
        BaseHeader=packets.base.default_base_header(Flags=packets.base.BaseHeaderFlags.make(PR=0)),
        UserHeader=default_user_header(
            QueueManagerAddress=SERVER,
            Flags=UserHeaderFlags.make(MP=1, DQ=3, DM=1, TH=1),
            DestinationQueue=Container(PrivateQueueIdentifier=9),
        ),
        TransactionHeader=default_transaction_header(),
        MessagePropertiesHeader=default_message_properties_header(b"tx"),
    )
    assert raw(pkt) == packets.build(expected)
    assert pkt.violations == []


def test_given_values_are_written_as_given() -> None:
    """Fault injection is one field away: nothing given is corrected."""
    pkt = MSMQ(BaseHeader={"VersionNumber": 0x11, "PacketSize": 99})
    data = raw(pkt)
    assert data[0] == 0x11 and int.from_bytes(data[8:12], "little") == 99
    paths = {v.field_path for v in pkt.violations}
    assert {"BaseHeader.VersionNumber", "BaseHeader.PacketSize"} <= paths
    pkt = MSMQ(UserHeader={"Flags": {"MP": 0}})  # a flag given as 0 stays 0
    assert "UserHeader.Flags.MP" in {v.field_path for v in pkt.violations}


def test_changing_a_dissected_field_rebuilds_through_the_codec() -> None:
    original = sp.order_ack(5, 7, source_qm=CLIENT, destination_qm=SERVER)
    data = packets.build(original)
    pkt = MSMQ(data)
    pkt.UserHeader.MessageID = 1234
    original.UserHeader.MessageID = 1234
    assert raw(pkt) == packets.build(original)
    pkt = MSMQ(data)
    pkt.UserHeader.Flags.DM = 1
    assert MSMQ(raw(pkt)).UserHeader.Flags.DM == 1
    # An OrderAck's UserHeader.Flags MUST be MP and DQ only ([MS-MQQB] 2.2.4).
    assert [v.field_path for v in MSMQ(raw(pkt)).violations] == ["UserHeader.Flags"]


def test_flag_words_accept_integers_and_mappings() -> None:
    word = UserHeaderFlags.make(MP=1, DQ=3, JN=1)
    a = UserHeader(Flags=int(word), DestinationQueue={"PrivateQueueIdentifier": 1})
    b = UserHeader(Flags={"MP": 1, "DQ": 3, "JN": 1}, DestinationQueue={"PrivateQueueIdentifier": 1})
    assert a.to_fields() == b.to_fields()
    assert int(a.Flags) == int(word)
    assert a.Flags.JN == 1


def test_header_layer_alone_builds_its_codec_bytes() -> None:
    fields = default_transaction_header(0x1_0000_0002)
    assert raw(TransactionHeader(**dict(fields))) == packets.optional.TRANSACTION_HEADER.build(fields)
    again = TransactionHeader(raw(TransactionHeader(**dict(fields))))
    assert again.TxSequenceID.TimeStamp == 1 and again.TxSequenceID.Ordinal == 2


def test_show_show2_summary() -> None:
    pkt = IP() / TCP(sport=40000, dport=1801) / MSMQ(SessionHeader={"AckSequenceNumber": 1})
    text = pkt.show(dump=True)
    assert "SessionHeader" in text and "AckSequenceNumber= 1" in text
    assert "UserHeader" not in text  # absent headers are not listed
    assert "InternalHeader" not in text
    dissected = IP(raw(pkt))
    assert "PT        = 1" in dissected.show(dump=True)
    assert dissected.show2(dump=True) == dissected.show(dump=True)
    assert dissected.summary().endswith("MSMQ SessionAck (36 bytes)")
    assert dissected[MSMQ].InternalHeader.Flags.PT == 1
    ping = IP() / UDP(sport=3527, dport=3527) / MSMQPing(Cookie=4, QMGuid=CLIENT)
    assert IP(raw(ping))[MSMQPing].Cookie == 4
    assert "{C626EA11-E6B6-9749-9595-9150557358D1}" in IP(raw(ping)).show(dump=True)


def test_segment_with_several_packets_is_a_chain() -> None:
    one = packets.build(sp.session_ack(1))
    two = packets.build(sp.connection_parameters())
    pkt = IP(raw(IP() / TCP(sport=1801, dport=40000) / (one + two + one[:10])))
    layers = []
    layer: Any = pkt.getlayer(MSMQ)
    while isinstance(layer, MSMQ):
        layers.append(layer)
        layer = layer.payload
    assert [m.kind for m in layers[:2]] == ["SessionAck", "ConnectionParameters"]
    assert raw(pkt[TCP].payload) == one + two + one[:10]


def test_null_guid_and_copies() -> None:
    pkt = MSMQ(raw(MSMQ(EstablishConnectionHeader={"ClientGuid": str(CLIENT)})))
    assert pkt.EstablishConnectionHeader.ServerGuid == NULL_GUID
    clone = pkt.copy()
    assert raw(clone) == raw(pkt)
    clone.EstablishConnectionHeader.TimeStamp = 1
    assert raw(clone) != raw(pkt)
