"""The [MS-MQQB] 2.2 session packets: headers, INTERNAL_LAYOUT, checks, 3.1.5.1.1 identification,
the OrderAck/FinalAck bodies, the Ping Packet, the convenience constructors, and hypothesis round
trips (``parse(build(p)) == p`` and ``build(parse(b)) == b``) for every kind."""

from __future__ import annotations

import struct
from io import BytesIO

import pytest
from construct import Container
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from packets import base, session
from packets.errors import PacketError
from packets.fields import GUID, NULL_GUID
from packets.layout import PacketKind
from packets.user import UserHeaderFlags
from tests.packets import strategies_session as S

CLIENT = GUID("{C626EA11-E6B6-9749-9595-9150557358D1}")
SERVER = GUID("{FCA09E90-7890-4544-8F11-394C43CD8907}")
RT = settings(max_examples=600, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
RT_PACKETS = settings(RT, max_examples=300)


def parse1(parser: object, data: bytes) -> Container:
    return parser.parse_fast(BytesIO(data), Container(_params=Container()))  # type: ignore[attr-defined]


def paths(data: bytes) -> list[tuple[str, str]]:
    return S.decode(data, strict=False)[2]


# ---------------------------------------------------------------------------------------------
# Header shapes


def test_header_sizes_match_the_spec() -> None:
    assert session.InternalHeader.sizeof() == 4  # 2.2.1
    assert session.ConnectionParametersHeader.sizeof() == 12  # 2.2.2.1
    assert session.EstablishConnectionHeader.sizeof() == 552  # 2.2.3.1
    assert session.OrderAckBody.sizeof() == 36  # 2.2.4.1
    assert session.FinalAckBody.sizeof() == 36  # 2.2.5.1
    assert session.PingPacket.sizeof() == 24  # 2.2.7


def test_every_header_compiles() -> None:
    for parser in (
        session.INTERNAL_HEADER,
        session.CONNECTION_PARAMETERS_HEADER,
        session.ESTABLISH_CONNECTION_HEADER,
        session.ORDER_ACK_BODY,
        session.FINAL_ACK_BODY,
        session.PING,
    ):
        assert callable(parser.compiled)


def test_internal_header_flags_bit_positions() -> None:
    flags = parse1(session.INTERNAL_HEADER, bytes.fromhex("0000 1300")).Flags
    assert (flags.PT, flags.CS) == (3, 1)
    assert session.InternalHeaderFlags.make(PT=2, CS=1) == 0x12
    assert session.InternalHeaderFlags(0x8000).X15 == 1


def test_operating_system_re_is_the_low_byte_and_se_os_qs_follow() -> None:
    os_flags = session.OperatingSystemFlags(0x0710)
    assert (os_flags.RE, os_flags.SE, os_flags.OS, os_flags.QS) == (0x10, 1, 1, 1)
    ec = session.establish_connection(CLIENT, SERVER, 7, ping_sent=True).EstablishConnectionHeader
    assert int(ec.OperatingSystem) == 0x0010  # SE 0: a Ping Request was sent (3.1.5.2.3)


def test_ping_flags_rc_is_bit_0_and_rf_bit_1() -> None:
    assert session.PingFlags(0x0001).RC == 1 and session.PingFlags(0x0001).RF == 0
    assert session.PingFlags(0x0002).RF == 1 and session.PingFlags(0x8000).RC == 0


def test_establish_connection_padding_defaults_to_0x5a() -> None:
    data = session.ESTABLISH_CONNECTION_HEADER.build(
        Container(ClientGuid=CLIENT, ServerGuid=NULL_GUID, TimeStamp=1, OperatingSystem=0x0310, Reserved=0)
    )
    assert data[-512:] == b"\x5a" * 512 and len(data) == 552


# ---------------------------------------------------------------------------------------------
# INTERNAL_LAYOUT and the packets


@pytest.mark.parametrize(
    ("headers", "kind", "present", "size"),
    [
        (session.session_ack(1, window_size=64), PacketKind.SessionAck, "SessionHeader", 36),
        (
            session.establish_connection(CLIENT, SERVER, 1),
            PacketKind.EstablishConnection,
            "EstablishConnectionHeader",
            572,
        ),
        (
            session.connection_parameters(1496, 120000, 64),
            PacketKind.ConnectionParameters,
            "ConnectionParametersHeader",
            32,
        ),
    ],
)
def test_layout_chooses_the_header_by_pt(headers: Container, kind: PacketKind, present: str, size: int) -> None:
    data = S.encode(headers)
    assert len(data) == size
    got_kind, got, violations = S.decode(data)
    assert got_kind == kind and violations == []
    assert [k for k in got if not k.startswith("_")] == ["BaseHeader", "InternalHeader", present]
    assert got.BaseHeader.PacketSize == size


def test_undefined_pt_has_only_the_internal_header_and_is_a_violation() -> None:
    data = base.BASE_HEADER.build(base.default_base_header(Flags=0x000B, PacketSize=20)) + struct.pack("<HH", 0, 5)
    kind, headers, violations = S.decode(data, strict=False)
    assert kind == PacketKind.Unknown
    assert "SessionHeader" not in headers and "ConnectionParametersHeader" not in headers
    assert ("InternalHeader.Flags.PT", "MS-MQQB 2.2.1") in violations
    with pytest.raises(PacketError) as err:
        S.decode(data)
    assert err.value.field_path == "InternalHeader.Flags.PT"


def test_session_ack_without_sh_is_reported_and_not_identified() -> None:
    headers = session.session_ack(1)
    headers.BaseHeader.Flags = base.BaseHeaderFlags.make(PR=3, IN=1)
    kind, _, violations = S.decode(S.encode(headers), strict=False)
    assert kind == PacketKind.Unknown
    assert ("BaseHeader.Flags.SH", "MS-MQQB 2.2.6") in violations


def test_cs_is_allowed_in_ec_and_cp_but_not_in_a_session_ack() -> None:
    assert paths(S.encode(session.establish_connection(CLIENT, SERVER, 1, refused=True))) == []
    assert paths(S.encode(session.connection_parameters(refused=True))) == []
    headers = session.session_ack(1)
    headers.InternalHeader.Flags = session.InternalHeaderFlags.make(PT=1, CS=1)
    assert ("InternalHeader.Flags.CS", "MS-MQQB 2.2.1") in paths(S.encode(headers))


@pytest.mark.parametrize(
    ("field", "value", "ok"),
    [
        ("RecoverableAckTimeout", 0x1F4, True),
        ("RecoverableAckTimeout", 0x1F3, False),
        ("RecoverableAckTimeout", 0x1D4C0, True),
        ("RecoverableAckTimeout", 0x1D4C1, False),
        ("AckTimeout", 0x4E20, True),
        ("AckTimeout", 0x4E1F, False),
        ("AckTimeout", 0x1D4C0, True),
        ("AckTimeout", 0x1D4C1, False),
    ],
)
def test_connection_parameters_timeout_ranges(field: str, value: int, ok: bool) -> None:
    headers = session.connection_parameters()
    headers.ConnectionParametersHeader[field] = value
    found = paths(S.encode(headers))
    assert (found == []) is ok
    if not ok:
        assert found == [(f"ConnectionParametersHeader.{field}", "MS-MQQB 2.2.2.1")]


def test_connection_parameters_window_size_zero_is_valid() -> None:
    assert paths(S.encode(session.connection_parameters(window_size=0))) == []


def test_session_ack_window_size_zero_is_a_violation() -> None:
    assert ("SessionHeader.WindowSize", "MS-MQMQ 2.2.20.4") in paths(S.encode(session.session_ack(1, window_size=0)))


def test_establish_connection_re_must_be_0x10() -> None:
    headers = session.establish_connection(CLIENT, SERVER, 1)
    headers.EstablishConnectionHeader.OperatingSystem = session.OperatingSystemFlags(0x0300)
    assert paths(S.encode(headers)) == [("EstablishConnectionHeader.OperatingSystem.RE", "MS-MQQB 2.2.3.1")]


def test_establish_connection_reserved_is_ignored_on_receipt() -> None:
    headers = session.establish_connection(CLIENT, SERVER, 1)
    headers.EstablishConnectionHeader.Reserved = 0x310
    headers.InternalHeader.Reserved = 0xFFFF
    assert paths(S.encode(headers)) == []


def test_response_padding_must_be_0x5a() -> None:
    good = session.establish_connection(CLIENT, SERVER, 1, response=True)
    assert list(session.check_establish_connection_response(good)) == []
    bad = session.establish_connection(CLIENT, SERVER, 1, padding=b"\x5a" * 100 + b"\0" + b"\x5a" * 411)
    (violation,) = session.check_establish_connection_response(bad)
    assert violation[0] == "EstablishConnectionHeader.Padding" and "byte 100" in violation[1]


def test_time_to_reach_queue_must_be_infinite_on_internal_packets() -> None:
    headers = session.connection_parameters()
    headers.BaseHeader.TimeToReachQueue = 345600
    assert paths(S.encode(headers)) == [("BaseHeader.TimeToReachQueue", "MS-MQMQ 2.2.19.1")]


def test_dh_must_not_be_set_on_internal_packets() -> None:
    headers = session.connection_parameters()
    headers.BaseHeader.Flags = base.BaseHeaderFlags.make(PR=3, IN=1, DH=1)
    assert ("BaseHeader.Flags.DH", "MS-MQMQ 2.2.19.1") in paths(S.encode(headers))


def test_sh_on_an_establish_connection_is_reported() -> None:
    headers = session.establish_connection(CLIENT, SERVER, 1)
    headers.BaseHeader.Flags = base.BaseHeaderFlags.make(PR=3, IN=1, SH=1)
    assert ("BaseHeader.Flags.SH", "MS-MQMQ 2.2.19.1") in paths(S.encode(headers))


def test_short_establish_connection_fails_structurally() -> None:
    data = S.encode(session.establish_connection(CLIENT, SERVER, 1))[:300]
    with pytest.raises(Exception):  # noqa: B017 - codec: PacketError; header walk: a stream error
        S.decode(data)


# ---------------------------------------------------------------------------------------------
# 3.1.5.1.1 Identifying Packet Type (UserMessage-shaped packets)


def user_shaped(
    *,
    dq: int = 7,
    queue: object = None,
    label: str = session.ORDER_ACK_LABEL,
    message_class: int = session.MQMSG_CLASS_ORDER_ACK,
    body: bytes | None = None,
    base_flags: int = 0,
    user_flags: dict[str, int] | None = None,
    message_size: int | None = None,
) -> Container:
    if queue is None:
        queue = Container(DirectFormatName="TCP:10.0.0.1\\PRIVATE$\\order_queue$")
    if body is None:
        body = session.order_ack_body(0x0000000500000001, 7)
    flags = UserHeaderFlags.make({"MP": 1, "DQ": dq, **(user_flags or {})})
    return Container(
        BaseHeader=base.default_base_header(Flags=base.BaseHeaderFlags(base_flags), PacketSize=0),
        UserHeader=Container(Flags=flags, DestinationQueue=queue),
        MessagePropertiesHeader=Container(
            Flags=0,
            Label=label,
            MessageSize=len(body) if message_size is None else message_size,
            MessageClass=message_class,
            BodyType=0,
            MessageBody=body,
        ),
    )


def test_order_ack_is_identified_with_its_body() -> None:
    kind, body = session.identify(user_shaped())
    assert kind == PacketKind.OrderAck
    assert body is not None
    assert (body.TxSequenceID, body.TxSequenceNumber, body.TxPreviousSequenceNumber) == (0x0000000500000001, 7, 6)
    assert list(session.check_transactional_ack(user_shaped())) == []


def test_order_ack_by_private_queue_id_4() -> None:
    packet = user_shaped(dq=3, queue=Container(PrivateQueueIdentifier=4))
    assert session.identify(packet)[0] == PacketKind.OrderAck
    other = user_shaped(dq=3, queue=Container(PrivateQueueIdentifier=5))
    assert session.identify(other)[0] == PacketKind.UserMessage


@pytest.mark.parametrize(
    "name", ["TCP:10.0.0.1\\PRIVATE$\\ORDER_QUEUE$", "SPX:00000001.0000c0a80001\\private$\\order_queue$"]
)
def test_order_queue_name_is_case_insensitive(name: str) -> None:
    assert session.identify(user_shaped(queue=Container(DirectFormatName=name)))[0] == PacketKind.OrderAck


def test_final_ack_classes_from_0x4000() -> None:
    body = session.final_ack_body(1, 7, 6, CLIENT, 2286)
    for message_class in (0x4000, 0x8000, 0xC002):
        kind, decoded = session.identify(user_shaped(message_class=message_class, body=body, user_flags={"DM": 1}))
        assert kind == PacketKind.FinalAck
        assert decoded is not None and decoded.SourceGUID == CLIENT and decoded.MessageID == 2286
    assert (
        list(session.check_transactional_ack(user_shaped(message_class=0xC001, body=body, user_flags={"DM": 1}))) == []
    )


def test_label_and_queue_are_tested_before_the_class() -> None:
    """SPEC-MAP Pitfall 10: ACK_RECEIVE (0x4000) to an application queue is an administration
    acknowledgment, a UserMessage, not a FinalAck."""
    admin_ack = user_shaped(queue=Container(DirectFormatName="TCP:10.0.0.1\\PRIVATE$\\admin"), message_class=0x4000)
    assert session.identify(admin_ack) == (PacketKind.UserMessage, None)
    other_label = user_shaped(label="hello", message_class=0x4000)
    assert session.identify(other_label) == (PacketKind.UserMessage, None)
    normal_to_order_queue = user_shaped(message_class=0)
    assert session.identify(normal_to_order_queue) == (PacketKind.UserMessage, None)


def test_order_ack_rules() -> None:
    found = {
        path
        for path, _, _ in session.check_transactional_ack(
            user_shaped(
                base_flags=0x3,
                user_flags={"JN": 1},
                body=session.ORDER_ACK_BODY.build(
                    Container(TxSequenceID=1, TxSequenceNumber=9, TxPreviousSequenceNumber=7, Reserved=bytes(20))
                ),
            )
        )
    }
    assert found == {"BaseHeader.Flags", "UserHeader.Flags", "OrderAckBody.TxPreviousSequenceNumber"}
    short = user_shaped(body=b"\0" * 20)
    assert session.identify(short) == (PacketKind.OrderAck, None)
    assert {p for p, _, _ in session.check_transactional_ack(short)} == {
        "MessagePropertiesHeader.MessageSize",
        "MessagePropertiesHeader.MessageBody",
    }


def test_final_ack_rules() -> None:
    body = session.final_ack_body(1, 0, 0xFFFFFFFF, CLIENT, 1)
    found = {p for p, _, _ in session.check_transactional_ack(user_shaped(message_class=0x8002, body=body))}
    assert found == {
        "UserHeader.Flags",  # DM must be 1
        "MessagePropertiesHeader.MessageClass",  # NACK_REACH_QUEUE_TIMEOUT is not listed in 2.2.5
        "FinalAckBody.TxSequenceNumber",
        "FinalAckBody.TxPreviousSequenceNumber",
    }


def test_internal_packets_are_identified_by_pt() -> None:
    for headers, kind in (
        (session.session_ack(), PacketKind.SessionAck),
        (session.establish_connection(CLIENT), PacketKind.EstablishConnection),
        (session.connection_parameters(), PacketKind.ConnectionParameters),
    ):
        assert session.identify(headers) == (kind, None)


@pytest.mark.parametrize("sh", [0, 1])
@pytest.mark.parametrize("pt", range(16))
def test_identify_and_pinned_kind_read_the_one_table(pt: int, sh: int) -> None:
    """identify and its flag-word form for packets.fused name the same kind for every PT and SH,
    the one INTERNAL_KINDS names (Unknown for a PT it does not list, or without its flag)."""
    flags = base.BaseHeaderFlags.make(PR=3, IN=1, SH=sh)
    headers = Container(
        BaseHeader=base.default_base_header(Flags=flags),
        InternalHeader=Container(Flags=session.InternalHeaderFlags.make(PT=pt)),
    )
    kind, _ = session.identify(headers)
    pinned = session.pinned_kind({"BaseHeader": int(flags), "InternalHeader": pt})
    assert pinned == (kind, None)
    listed = [e.kind for e in session.INTERNAL_KINDS if e.pt == pt and (e.base_flag is None or sh)]
    assert [kind] == (listed or [PacketKind.Unknown])


def test_ack_constructors_build_identifiable_headers() -> None:
    oa = session.order_ack(3, 10, source_qm=SERVER, destination="TCP:192.168.0.1\\PRIVATE$\\order_queue$")
    assert session.identify(oa)[0] == PacketKind.OrderAck
    assert list(session.check_transactional_ack(oa)) == []
    fa = session.final_ack(3, 10, 9, CLIENT, 44, source_qm=SERVER, destination_qm=CLIENT, message_class=0xC000)
    kind, body = session.identify(fa)
    assert kind == PacketKind.FinalAck and body is not None and body.TxPreviousSequenceNumber == 9
    assert list(session.check_transactional_ack(fa)) == []


# ---------------------------------------------------------------------------------------------
# Ping


def test_ping_constructor_and_signature_check() -> None:
    request = session.ping(4, CLIENT, rc=True, unused=0x1F40)
    data = session.PING.build(request)
    assert data[:2] == bytes.fromhex("017D") and len(data) == 24
    assert list(session.check_ping(Container(Ping=parse1(session.PING, data)))) == []
    bad = Container(Ping=Container(request, Signature=0x4855))
    assert list(session.check_ping(bad)) == [("Ping.Signature", "MUST be 0x5548, found 0x4855", "MS-MQQB 2.2.7")]


# ---------------------------------------------------------------------------------------------
# Hypothesis round trips


@pytest.mark.parametrize(
    "kind", [PacketKind.SessionAck, PacketKind.EstablishConnection, PacketKind.ConnectionParameters]
)
@RT_PACKETS
@given(data=st.data())
def test_valid_internal_packets_round_trip_strictly(kind: PacketKind, data: st.DataObject) -> None:
    headers = data.draw(S.internal_packet(kind, valid=True))
    wire = S.encode(headers)
    got_kind, got, violations = S.decode(wire, strict=True)
    assert got_kind == kind and violations == []
    assert S.headers_only(got) == S.headers_only(headers)
    assert S.encode(got) == wire


@pytest.mark.parametrize(
    "kind", [PacketKind.SessionAck, PacketKind.EstablishConnection, PacketKind.ConnectionParameters]
)
@RT_PACKETS
@given(data=st.data())
def test_any_internal_packet_round_trips(kind: PacketKind, data: st.DataObject) -> None:
    headers = data.draw(S.internal_packet(kind, valid=False))
    wire = S.encode(headers)
    _, got, _ = S.decode(wire, strict=False)
    assert S.headers_only(got) == S.headers_only(headers)
    assert S.encode(got) == wire


@RT_PACKETS
@given(headers=S.undefined_pt_packet())
def test_undefined_pt_packets_round_trip(headers: Container) -> None:
    wire = S.encode(headers)
    kind, got, violations = S.decode(wire, strict=False)
    assert kind == PacketKind.Unknown and ("InternalHeader.Flags.PT", "MS-MQQB 2.2.1") in violations
    assert S.headers_only(got) == S.headers_only(headers)
    assert S.encode(got) == wire


@RT
@given(wire=st.binary(min_size=24, max_size=24))
def test_any_24_bytes_are_a_ping_that_builds_back(wire: bytes) -> None:
    assert session.PING.build(parse1(session.PING, wire)) == wire


@RT
@given(packet=S.ping_packet(valid=False))
def test_ping_round_trip(packet: Container) -> None:
    assert parse1(session.PING, session.PING.build(packet)) == packet


@RT
@given(body=S.order_ack_body(valid=False))
def test_order_ack_body_round_trip(body: Container) -> None:
    wire = session.ORDER_ACK_BODY.build(body)
    assert len(wire) == 36 and parse1(session.ORDER_ACK_BODY, wire) == body
    assert session.ORDER_ACK_BODY.build(parse1(session.ORDER_ACK_BODY, wire)) == wire


@RT
@given(body=S.final_ack_body())
def test_final_ack_body_round_trip(body: Container) -> None:
    wire = session.FINAL_ACK_BODY.build(body)
    assert len(wire) == 36 and parse1(session.FINAL_ACK_BODY, wire) == body


@RT
@given(body=S.order_ack_body(valid=True))
def test_valid_order_ack_bodies_pass_the_body_rules(body: Container) -> None:
    packet = user_shaped(body=session.ORDER_ACK_BODY.build(body))
    assert list(session.check_transactional_ack(packet)) == []


# ---------------------------------------------------------------------------------------------
# Through packets.codec: whole OrderAck/FinalAck packets and Ping datagrams


@pytest.mark.parametrize("kind", [PacketKind.OrderAck, PacketKind.FinalAck])
@RT_PACKETS
@given(data=st.data())
def test_transactional_acks_round_trip_through_the_codec(kind: PacketKind, data: st.DataObject) -> None:
    from packets import codec

    headers = data.draw(S.transactional_ack_packet(kind))
    wire = codec.build(headers)
    packet = codec.parse(wire)
    assert packet.kind == kind and packet.violations == []
    assert packet.body == session.identify(headers)[1]
    assert list(session.check_transactional_ack(packet.headers)) == []
    assert codec.build(packet) == wire
    assert codec.parse(codec.build(packet)) == packet


@RT
@given(packet=S.ping_packet(valid=True))
def test_ping_round_trips_through_the_codec(packet: Container) -> None:
    from packets import codec

    wire = codec.build_ping(packet)
    parsed = codec.parse_ping(wire)
    assert parsed.kind == PacketKind.Ping and parsed.violations == [] and parsed.Ping == packet
    assert codec.build_ping(parsed) == wire


def test_private_order_queue_needs_the_destination_qm() -> None:
    with pytest.raises(PacketError):
        session.order_ack(1, 2, source_qm=CLIENT)
    headers = session.order_ack(1, 2, source_qm=CLIENT, destination_qm=SERVER)
    assert headers.UserHeader.QueueManagerAddress == SERVER
