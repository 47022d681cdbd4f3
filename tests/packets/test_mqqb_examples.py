"""The example frames of [MS-MQQB] section 4 (4.1.1 FRAME 1 ... 4.1.8 FRAME 8).

fixtures/mqqb-examples/frameN.hex holds each frame encoded from the example's decoded field values
(frameN.json) where those agree with the structure sections (2.x); PUBLISHED below holds the
example's own hex dump.  Every frame must parse to its listed values and build back
byte-identical, and must equal the published dump everywhere except at the disagreements, each
of which has one test named test_frameN_<what_disagrees> that asserts the 2.x reading and states
the example's value.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from construct import Container

from packets import codec, session
from packets.fields import GUID
from packets.layout import PacketKind

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "mqqb-examples"
FRAMES = range(1, 9)

GUID_FIELDS = {"QMGuid", "ClientGuid", "ServerGuid", "SourceQueueManager", "QueueManagerAddress", "SourceGUID"}
TEXT_FIELDS = {"Label", "DirectFormatName"}

CLIENT_QM = GUID("{C626EA11-E6B6-9749-9595-9150557358D1}")
SERVER_QM = GUID("{FCA09E90-7890-4544-8F11-394C43CD8907}")


def _hex(text: str) -> bytes:
    return bytes.fromhex(" ".join(text.split()))


# The hex dumps as printed in [MS-MQQB] 4.1.x.  FRAME 3/4: the first 64 bytes, then 0x5A up to
# the 572 bytes of PacketSize (the dumps' last line holds 12 bytes: 572 = 35 * 16 + 12).  FRAME 7:
# the 13 lines of page 122, the "20 00 6C 00 ..." line, then "61 00" to the end of the dump,
# 1650 bytes in all (located by character offsets in the PDF text: 90 lines of 16 from the
# "20 00 6C" line, plus a last line "61 00").
PUBLISHED: dict[int, bytes] = {
    1: _hex("01 7D 48 55 04 00 00 00 D1 58 73 55 50 91 95 95 49 97 B6 E6 11 EA 26 C6"),
    2: _hex("95 B2 48 55 04 00 00 00 07 89 CD 43 4C 39 11 8F 44 45 90 78 90 9E A0 FC"),
    3: _hex(
        "10 C0 0B 00 4C 49 4F 52 3C 02 00 00 FF FF FF FF 00 00 02 00 D1 58 73 55 50 91 95 95 49 97 B6 E6"
        "11 EA 26 C6 07 89 CD 43 4C 39 11 8F 44 45 90 78 90 9E A0 FC 4E CA DE 1D 10 03 00 00"
    )
    + b"\x5a" * 512,
    4: _hex(
        "10 5A 0B 00 4C 49 4F 52 3C 02 00 00 FF FF FF FF 00 00 02 00 05 23 74 1F 5E BE 77 41 BC 77 C4 DD"
        "77 19 E4 74 EB 6A 3A 3C 67 F5 43 41 87 D3 85 CF 4D 68 CE B4 4E CA DE 1D 10 03 00 00"
    )
    + b"\x5a" * 512,
    5: _hex("10 C0 0B 00 4C 49 4F 52 20 00 00 00 FF FF FF FF 00 00 03 00 D8 05 00 00 C0 D4 01 00 00 00 40 00"),
    6: _hex("10 C0 0B 00 4C 49 4F 52 20 00 00 00 FF FF FF FF 00 00 03 00 D8 05 00 00 C0 D4 01 00 00 00 40 00"),
    7: _hex(
        """
        10 00 03 00 4C 49 4F 52 B0 08 00 00 00 46 05 00
        D1 58 73 55 50 91 95 95 49 97 B6 E6 11 EA 26 C6
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        FF FF FF FF 4C 49 4F 52 EE 08 00 00 00 1C 28 00
        1A 00 4F 00 53 00 3A 00 61 00 30 00 34 00 62 00
        6D 00 30 00 32 00 5C 00 71 00 00 00 01 00 1C 00
        00 00 00 00 00 00 00 00 00 00 00 00 01 05 00 00
        00 00 00 05 15 00 00 00 AD 4A 9E BD 36 D9 FA 3D
        63 A6 56 DA E8 03 00 00 0F 0F 00 00 00 00 00 00
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        08 00 00 00 00 00 00 00 D0 07 00 00 D0 07 00 00
        00 00 00 00 04 80 00 00 01 68 00 00 00 00 00 00
        6D 00 71 00 73 00 65 00 6E 00 64 00 65 00 72 00
        20 00 6C 00 61 00 62 00 65 00 6C 00 00 00 61 00
        """
    )
    + b"a\0" * (8 * 89 + 1),
    8: _hex(
        "10 CD 1B 00 4C 49 4F 52 24 00 00 00 FF FF FF FF 00 00 01 00 01 00 00 00 00 00 00 00 00 00 00 0040 00 00 00"
    ),
}

# Byte ranges [start, end) where the encoding from the listed values differs from the dump; each
# range is the subject of one test below.
DIFFERENCES: dict[int, list[tuple[int, int]]] = {
    1: [(8, 24)],  # QMGuid byte order
    2: [(8, 24)],  # QMGuid byte order
    3: [(20, 52)],  # ClientGuid/ServerGuid byte order
    4: [(20, 52)],  # the dump's GUIDs are other GUIDs
    5: [],
    6: [(30, 32)],  # WindowSize
    7: [(16, 32), (52, 56), (136, 137)],  # SourceQueueManager order, SentTime, MessagePropertiesHeader.Flags
    8: [],
}


def listing(n: int) -> dict[str, Any]:
    return json.loads((FIXTURES / f"frame{n}.json").read_text())  # type: ignore[no-any-return]


def fixture_bytes(n: int) -> bytes:
    text = (FIXTURES / f"frame{n}.hex").read_text()
    return _hex(" ".join(line for line in text.splitlines() if not line.startswith("#")))


def typed(value: Any, key: str = "") -> Any:
    """JSON values to the codec's: GUID text to GUID, hex text to bytes, objects to Containers."""
    if isinstance(value, dict):
        return Container({k: typed(v, k) for k, v in value.items()})
    if isinstance(value, str):
        if key in GUID_FIELDS:
            return GUID(value)
        if key in TEXT_FIELDS:
            return value
        return bytes.fromhex(value)
    return value


def assert_listed(decoded: Any, expected: Any, path: str) -> None:
    """Every listed field has the listed value (fields the listing leaves out are not compared)."""
    if isinstance(expected, Container):
        for key, value in expected.items():
            assert key in decoded, f"{path}.{key} missing"
            assert_listed(decoded[key], value, f"{path}.{key}")
    else:
        assert decoded == expected, f"{path}: decoded {decoded!r}, listed {expected!r}"


def decode(n: int) -> codec.Packet:
    data = fixture_bytes(n)
    return codec.parse_ping(data) if n in (1, 2) else codec.parse(data)


# ---------------------------------------------------------------------------------------------
# Every frame


def test_there_is_one_fixture_per_frame_with_its_section_comment() -> None:
    for n in FRAMES:
        first = (FIXTURES / f"frame{n}.hex").read_text().splitlines()[0]
        meta = listing(n)
        assert first == f"# [MS-MQQB] 4.1.{n} FRAME {n}: {meta['title']}"
        assert meta["section"] == f"MS-MQQB 4.1.{n}" and meta["frame"] == n


@pytest.mark.parametrize("n", FRAMES)
def test_frame_parses_strictly_to_the_listed_values(n: int) -> None:
    meta = listing(n)
    packet = decode(n)
    assert packet.kind == PacketKind(meta["kind"])
    assert packet.violations == []
    expected = typed(meta["headers"])
    for name, header in expected.items():
        assert_listed(packet.headers[name], header, name)


@pytest.mark.parametrize("n", FRAMES)
def test_frame_builds_back_byte_identical(n: int) -> None:
    data = fixture_bytes(n)
    packet = decode(n)
    assert (codec.build_ping(packet) if n in (1, 2) else codec.build(packet)) == data


@pytest.mark.parametrize("n", FRAMES)
def test_frame_builds_from_the_listed_values(n: int) -> None:
    headers = typed(listing(n)["headers"])
    built = codec.build_ping(headers.Ping) if n in (1, 2) else codec.build(headers)
    assert built == fixture_bytes(n)


@pytest.mark.parametrize("n", FRAMES)
def test_frame_equals_the_published_dump_except_where_documented(n: int) -> None:
    ours, published = fixture_bytes(n), PUBLISHED[n]
    if n != 7:
        assert len(ours) == len(published)
    differing = {i for i in range(min(len(ours), len(published))) if ours[i] != published[i]}
    documented = {i for start, end in DIFFERENCES[n] for i in range(start, end)}
    assert differing <= documented, sorted(differing - documented)
    for start, end in DIFFERENCES[n]:  # every documented range does differ
        assert ours[start:end] != published[start:end]


def test_frame_sequence_is_one_session() -> None:
    """FRAME 2 answers FRAME 1 (cookie, RC copied); FRAME 4 echoes FRAME 3 (2.2.3.1, 3.1.5.3.1)."""
    ping_request, ping_response = decode(1).Ping, decode(2).Ping
    assert ping_response.Cookie == ping_request.Cookie and ping_response.Flags.RC == ping_request.Flags.RC
    assert ping_response.Flags.RF == 0
    request, response = decode(3).EstablishConnectionHeader, decode(4).EstablishConnectionHeader
    assert response.ClientGuid == request.ClientGuid == ping_request.QMGuid
    assert response.ServerGuid == request.ServerGuid == ping_response.QMGuid
    assert response.TimeStamp == request.TimeStamp
    assert response.OperatingSystem.SE == request.OperatingSystem.SE
    assert list(session.check_establish_connection_response(decode(4).headers)) == []
    assert (
        decode(6).ConnectionParametersHeader.RecoverableAckTimeout
        == decode(5).ConnectionParametersHeader.RecoverableAckTimeout
    )


# ---------------------------------------------------------------------------------------------
# One test per disagreement between an example and the structure sections


def test_frame1_qmguid_byte_order() -> None:
    """Listing: QMGUID {C626EA11-E6B6-9749-9595-9150557358D1}.  [MS-DTYP] 2.3.4.2 packet order is
    11 EA 26 C6 B6 E6 49 97 95 95 91 50 55 73 58 D1; the dump prints D1 58 73 55 50 91 95 95 49 97
    B6 E6 11 EA 26 C6, the GUID's text digits as one 128-bit number written little-endian (the
    RFC 4122 big-endian bytes reversed)."""
    assert decode(1).Ping.QMGuid == CLIENT_QM
    assert fixture_bytes(1)[8:24] == CLIENT_QM
    assert PUBLISHED[1][8:24] == CLIENT_QM.uuid.bytes[::-1]


def test_frame1_ping_flags_rc_rf_are_bits_0_and_1() -> None:
    """The PDF rendering of 2.2.7 draws RC/RF at bits 14-15 (SPEC-MAP Pitfall 12); the learn page
    and both frames put them at bits 0-1: StateFlag 0x7D01 decodes "Client: ...1" from bit 0 and
    the reserved bits 01111101000000 from bits 2-15."""
    flags = decode(1).Ping.Flags
    assert int(flags) == 0x7D01 and (flags.RC, flags.RF) == (1, 0)
    assert int(flags) >> 2 == 0b01111101000000
    response = decode(2).Ping.Flags
    assert int(response) == 0xB295 and (response.RC, response.RF) == (1, 0)
    assert int(response) >> 2 == 0b10110010100101


def test_frame2_qmguid_byte_order() -> None:
    """Listing: QMGUID {FCA09E90-7890-4544-8F11-394C43CD8907}; the dump has it as a 128-bit
    little-endian number (07 89 CD 43 ... A0 FC), as in FRAME 1."""
    assert decode(2).Ping.QMGuid == SERVER_QM
    assert PUBLISHED[2][8:24] == SERVER_QM.uuid.bytes[::-1]


def test_frame3_guid_byte_order() -> None:
    """ClientGUID/ServerGUID as listed, in packet order; the dump has each as a 128-bit
    little-endian number, as in FRAME 1."""
    ec = decode(3).EstablishConnectionHeader
    assert (ec.ClientGuid, ec.ServerGuid) == (CLIENT_QM, SERVER_QM)
    assert PUBLISHED[3][20:36] == CLIENT_QM.uuid.bytes[::-1]
    assert PUBLISHED[3][36:52] == SERVER_QM.uuid.bytes[::-1]


def test_frame3_operating_system_and_reserved_swapped() -> None:
    """Listing: "Reserved: 784 (0x310)", "OperatingSystem: 0 (0x0)".  2.2.3.1 puts
    OperatingSystem (RE MUST be 0x10) before Reserved (MUST be zero): the bytes 10 03 00 00, the
    same in the dump and in our encoding, are OperatingSystem 0x0310 (RE 0x10, SE 1, OS 1) and
    Reserved 0."""
    for n in (3, 4):
        ec = decode(n).EstablishConnectionHeader
        assert (int(ec.OperatingSystem), ec.Reserved) == (0x0310, 0)
        assert (ec.OperatingSystem.RE, ec.OperatingSystem.SE, ec.OperatingSystem.OS) == (0x10, 1, 1)
        assert PUBLISHED[n][56:60] == fixture_bytes(n)[56:60] == bytes.fromhex("10030000")
    headers = decode(3).headers
    headers.EstablishConnectionHeader.OperatingSystem = 0
    headers.EstablishConnectionHeader.Reserved = 0x310
    listed = codec.parse(codec.build(headers), strict=False)
    assert [v.field_path for v in listed.violations] == ["EstablishConnectionHeader.OperatingSystem.RE"]


def test_frame3_se_bit_contradicts_the_ping_of_frame1() -> None:
    """3.1.5.2.3: SE MUST be 0 when a Ping Request was sent.  FRAME 1 is a Ping Request of the
    same session, yet the bytes of FRAME 3 carry SE = 1 (the listing prints "Session: 0 - Not a
    new session" for its misplaced field).  The frame is decoded as sent, not corrected."""
    assert decode(1).kind == PacketKind.Ping
    assert decode(3).EstablishConnectionHeader.OperatingSystem.SE == 1


def test_frame4_guids_differ_from_the_listing() -> None:
    """Listing: the request's ClientGUID/ServerGUID, as 2.2.3.1 and 3.1.5.3.1 require of a
    response.  The dump carries two other GUIDs, not even the byte-reversed listed ones."""
    ec = decode(4).EstablishConnectionHeader
    assert (ec.ClientGuid, ec.ServerGuid) == (CLIENT_QM, SERVER_QM)
    dump_client, dump_server = GUID(PUBLISHED[4][20:36]), GUID(PUBLISHED[4][36:52])
    for dumped in (dump_client, dump_server):
        assert dumped not in (CLIENT_QM, SERVER_QM)
        assert dumped.uuid.bytes[::-1] not in (CLIENT_QM, SERVER_QM)
        assert bytes(dumped)[::-1] not in (CLIENT_QM, SERVER_QM)
    assert str(dump_client) == "{1F742305-BE5E-4177-BC77-C4DD7719E474}"


def test_frame6_window_size() -> None:
    """Listing: WindowSize 32 (0x20).  The dump, byte for byte FRAME 5's, has 40 00 (64)."""
    assert decode(6).ConnectionParametersHeader.WindowSize == 32
    assert PUBLISHED[6][30:32] == bytes.fromhex("4000") and PUBLISHED[6] == PUBLISHED[5]


def test_frame7_source_queue_manager_byte_order() -> None:
    """Listing: SourceQueueManager {C626EA11-...}; the dump has the FRAME 1 byte order."""
    assert decode(7).UserHeader.SourceQueueManager == CLIENT_QM
    assert PUBLISHED[7][16:32] == CLIENT_QM.uuid.bytes[::-1]


def test_frame7_sent_time() -> None:
    """Listing: SentTime 1141966310 (0x441105E6).  The dump has 4C 49 4F 52 there, the BaseHeader
    signature bytes."""
    assert decode(7).UserHeader.SentTime == 0x441105E6
    assert PUBLISHED[7][52:56] == b"LIOR"


def test_frame7_message_properties_flags() -> None:
    """Listing: Flags with PositiveArriveAck/PositiveReceiveAck/NegativeDeliveryAck/
    NegativeReceiveAck all 0.  The dump has 0x0F; [MS-MQMQ] 2.2.19.2 then requires an AdminQueue,
    which this packet (AQ 0) does not carry."""
    packet = decode(7)
    assert int(packet.MessagePropertiesHeader.Flags) == 0 and packet.UserHeader.Flags.AQ == 0
    assert PUBLISHED[7][136] == 0x0F
    headers = packet.headers
    headers.MessagePropertiesHeader.Flags = 0x0F
    as_dumped = codec.parse(codec.build(headers), strict=False)
    assert as_dumped.violations, "flags 0x0F without an AdminQueue must be reported"


def test_frame7_allocation_body_size() -> None:
    """Listing: AllocatedBodySize 20 (0x14).  The dump (D0 07 00 00) and MessageSize say 2000."""
    props = decode(7).MessagePropertiesHeader
    assert props.AllocationBodySize == 2000 == props.MessageSize
    assert PUBLISHED[7][172:176] == (2000).to_bytes(4, "little")


def test_frame7_encryption_algorithm() -> None:
    """Listing: "26113 (RC4 Algorithm) (0x6601)".  RC4 is 0x00006801 ([MS-MQQB] 2.4.2), which the
    dump (01 68 00 00) carries."""
    assert decode(7).MessagePropertiesHeader.EncryptionAlgorithm == 0x6801
    assert PUBLISHED[7][184:188] == bytes.fromhex("01680000")


def test_frame7_label_size() -> None:
    """Listing: "Label: Binary Large Object (15 Bytes)".  LabelLength counts WCHARs with the NUL
    ([MS-MQMQ] 2.2.19.3): "mqsender label" + NUL is 15 WCHARs, 30 bytes."""
    props = decode(7).MessagePropertiesHeader
    assert props.LabelLength == 15 and props.Label == "mqsender label"
    assert fixture_bytes(7)[192:222] == "mqsender label\0".encode("utf-16-le")


def test_frame7_message_body_size() -> None:
    """Listing: "MessageBody: Binary Large Object (20 Bytes)".  MessageSize is 2000 and the body
    is 2000 bytes (1000 UTF-16 'a'), which PacketSize 2224 accounts for."""
    props = decode(7).MessagePropertiesHeader
    assert len(props.MessageBody) == props.MessageSize == 2000
    assert props.MessageBody == b"a\0" * 1000


def test_frame7_padding() -> None:
    """Listing: "Padding: 1 Bytes".  56 + 30 + 0 + 2000 = 2086 bytes of MessagePropertiesHeader pad
    to 2088 ([MS-MQMQ] 2.2.19.3): 2 bytes."""
    data = fixture_bytes(7)
    assert len(data) - 2 == 136 + 56 + 30 + 2000
    assert data[-2:] == b"\0\0"


def test_frame7_dump_shorter_than_packet_size() -> None:
    """PacketSize 2224 (0x8B0); the published dump stops after 1650 bytes, 714 of the body's 1000
    characters."""
    assert decode(7).BaseHeader.PacketSize == 2224 == len(fixture_bytes(7))
    assert len(PUBLISHED[7]) == 1650
    with pytest.raises(Exception):  # noqa: B017 - a truncated packet does not parse
        codec.parse(PUBLISHED[7])


def test_frame8_packet_size_counts_the_session_header() -> None:
    """[MS-MQMQ] 2.2.19.1: PacketSize "MUST NOT include the SessionHeader size"; FRAME 8's SessionAck
    says 36 = 16 + 4 + 16, SessionHeader included, as [MS-MQQB] 2.2.6's layout implies.  The
    exclusion is read as applying to a SessionHeader piggy-backed on a UserMessage (SPEC-MAP
    Pitfall 6): a SessionAck declaring 20 is reported."""
    packet = decode(8)
    assert packet.BaseHeader.PacketSize == 36 == len(fixture_bytes(8))
    headers = packet.headers
    headers.BaseHeader.PacketSize = 20
    excluded = codec.parse(codec.build(headers), strict=False)
    assert [v.field_path for v in excluded.violations] == ["BaseHeader.PacketSize"]
