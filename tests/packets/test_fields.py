"""The shared construct pieces of packets/fields.py ([MS-MQMQ] 2.2.18.1)."""

from __future__ import annotations

import uuid
from io import BytesIO

import pytest
from construct import Container, Default, this

from packets.errors import PacketError
from packets.fields import (
    GUID,
    BitFlags,
    Data,
    FlagsField,
    Guid,
    Header,
    Int16ul,
    Int32ul,
    Pad,
    Utf16z,
    header_parser,
    pad4,
    utf16z_bytes,
)


class DemoFlags(BitFlags):
    _width_ = 16
    _fields_ = (("PR", 0, 3), ("IN", 3, 1), ("TR", 8, 1))


Demo = Header(
    "Flags" / FlagsField(DemoFlags),
    "Id" / Guid,
    "Count" / Default(Int16ul, utf16z_bytes("Name")),
    "Name" / Utf16z(this.Count),
    "_pad" / Pad((4 - (this.Count + 2) % 4) % 4),
    "Size" / Int32ul,
    "Blob" / Data(this.Size),
)
DEMO = header_parser("Demo", Demo)
ID = GUID("{c626ea11-e6b6-9749-9595-9150557358d1}")


def demo(**kw: object) -> Container:
    c = Container(Flags=DemoFlags.make(PR=3, TR=1), Id=ID, Name="q1", Size=3, Blob=b"abc")
    c.update(kw)
    return c


def test_guid_is_kept_in_wire_order_and_prints_as_text() -> None:
    u = uuid.UUID("c626ea11-e6b6-9749-9595-9150557358d1")
    assert GUID(u) == u.bytes_le == ID
    assert str(ID) == "{C626EA11-E6B6-9749-9595-9150557358D1}"
    assert bytes(ID)[:4] == bytes.fromhex("11ea26c6")
    assert GUID().is_null and not ID.is_null


def test_bitflags_read_lsb_first_subfields() -> None:
    flags = DemoFlags(0x010B)
    assert (flags.PR, flags.IN, flags.TR) == (3, 1, 1)
    assert DemoFlags.make(PR=3, IN=1, TR=1) == 0x010B
    assert flags == {"PR": 3, "IN": 1, "TR": 1}
    assert DemoFlags(0x8000).undefined_bits() == 0x8000


def test_bitflags_reject_values_that_do_not_fit() -> None:
    with pytest.raises(PacketError, match="PR"):
        DemoFlags.make(PR=8)
    with pytest.raises(PacketError, match="no such flag"):
        DemoFlags.make(XX=1)


def test_header_builds_lengths_and_padding_when_left_out_and_parses_back() -> None:
    data = DEMO.build(demo())
    # Flags, GUID, Count=6 (3 WCHARs incl. NUL), "q1\0", 0 pad (2+6=8), Size, Blob
    assert data[:2] == b"\x03\x01"
    assert data[18:20] == b"\x06\x00"
    assert data[20:26] == "q1\0".encode("utf-16-le")
    parsed = DEMO.parse_fast(BytesIO(data), Container(_params=Container()))
    assert parsed.Count == 6 and parsed.Name == "q1" and parsed.Blob == b"abc"
    assert parsed == DEMO.diagnose(BytesIO(data), {})


def test_padding_bytes_survive_a_round_trip() -> None:
    data = bytearray(DEMO.build(demo(Name="abc")))  # Count 8 -> 2 pad bytes
    pad_at = 18 + 2 + 8
    data[pad_at : pad_at + 2] = b"\xaa\xbb"
    parsed = DEMO.parse_fast(BytesIO(bytes(data)), Container(_params=Container()))
    assert DEMO.build(parsed) == bytes(data)


def test_explicit_length_is_written_as_given_for_fault_injection() -> None:
    data = DEMO.build(demo(Count=2))
    assert data[18:20] == b"\x02\x00"


def test_diagnose_names_field_and_offset_of_a_short_read() -> None:
    data = DEMO.build(demo())
    offsets: dict[str, int] = {}
    with pytest.raises(PacketError) as e:
        DEMO.diagnose(BytesIO(data[:-2]), offsets)
    assert e.value.field_path == "Demo.Blob"
    assert e.value.offset == len(data) - 3


def test_odd_utf16_length_is_an_error() -> None:
    data = bytearray(DEMO.build(demo()))
    data[18] = 5
    with pytest.raises(PacketError) as e:
        DEMO.diagnose(BytesIO(bytes(data)), {})
    assert e.value.field_path == "Demo.Name" and "odd" in e.value.reason
    assert e.value.offset == 20


def test_compiled_parser_fails_on_short_input_instead_of_returning_short_fields() -> None:
    data = DEMO.build(demo())
    with pytest.raises(Exception):  # noqa: B017 - any error: the codec falls back to diagnose
        DEMO.parse_fast(BytesIO(data[:-1]), Container(_params=Container()))


@pytest.mark.parametrize("n,expected", [(0, 0), (1, 3), (2, 2), (3, 1), (4, 0), (5, 3)])
def test_pad4(n: int, expected: int) -> None:
    assert pad4(n) == expected


def test_decoded_headers_read_write_and_delete_fields_as_attributes() -> None:
    """A header the generated parsers make is bound to its own mapping when an attribute is first
    used: reads, writes and deletions by attribute are the mapping's, whichever comes first."""
    import packets
    from benchmarks.messages import typical_user_message

    data = typical_user_message(True)
    for _ in range(packets.fused.FUSE_AFTER + 1):  # the whole-packet function's headers too
        packet = packets.parse(data)
    for first in ("read", "write", "delete", "missing"):
        header = packets.parse(data).headers["UserHeader"]
        if first == "read":
            assert header.MessageID == header["MessageID"] == 4711
        elif first == "write":
            header.MessageID = 5
            assert header["MessageID"] == 5 and header.MessageID == 5
        elif first == "delete":
            del header.ConnectorType
            assert "ConnectorType" not in header and not hasattr(header, "ConnectorType")
        else:
            assert not hasattr(header, "NoSuchField") and getattr(header, "NoSuchField", 7) == 7
        assert vars(header) is header
        header.Extra = 1
        assert header["Extra"] == 1
    assert packet.UserHeader.DestinationQueue.DirectFormatName == "TCP:192.168.1.20\\private$\\orders"
