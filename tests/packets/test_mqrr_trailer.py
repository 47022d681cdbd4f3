"""[MS-MQRR] 2.2.5 headers after a UserMessage on the wire (issue 20, item 5).

A sender may append to a UserMessage the headers that follow it in the [MS-MQRR] 2.2.5 Message
Packet Structure: the ExtensionHeader (2.2.5.2: HeaderSize, RemainingHeadersSize (4 bytes each),
Flags (1 byte: DL, SQ, X2, DI, EA, X5-X7), Reserved (3 bytes)) and the SubqueueHeader,
DeadLetterHeader and ExtendedAddressHeader its Flags announce -- as the public CVE-2023-21554
scanner does after an SRMP envelope and a CompoundMessageHeader sent over the binary protocol.
No flag of the UserMessage announces them and BaseHeader.PacketSize does not count them; the
codec decodes them with their spec names instead of reporting "12 bytes follow the packet", and
the stream splitter keeps them with their UserMessage.
"""

from __future__ import annotations

import struct

import pytest
from construct import Container

import packets
from packets import mqrr
from packets.stream import StreamSplitter
from tests.packets.messagekit import BSH, SESSION, extension_header, srmp_user_message


def fields(p: packets.Packet) -> list[str]:
    return [v.field_path for v in p.violations]


def test_a_12_byte_extension_header_after_the_compound_message_decodes_with_spec_names() -> None:
    um = srmp_user_message()
    data = um + extension_header()
    p = packets.parse(data, strict=False)
    assert p.kind is packets.PacketKind.UserMessage
    assert list(p.headers)[-3:] == ["SRMPEnvelopeHeader", "CompoundMessageHeader", "ExtensionHeader"]
    ext = p.ExtensionHeader
    assert (ext.HeaderSize, ext.RemainingHeadersSize, ext.Reserved) == (12, 0, bytes(3))
    assert (ext.Flags.DL, ext.Flags.SQ, ext.Flags.DI, ext.Flags.EA) == (0, 0, 0, 0)
    assert p.size == len(data) and p.BaseHeader.PacketSize == len(um)  # not counted in PacketSize
    assert not any("follow" in v.reason for v in p.violations), p.violations
    # what is left is what the spec says of these headers: AH is not sent on [MS-MQMQ]; SQ and EA
    # MUST be 1 in an ExtensionHeader ([MS-MQRR] 2.2.5.2), at the Flags byte (12 bytes in: +8)
    assert fields(p) == ["UserHeader.Flags.AH", "ExtensionHeader.Flags.SQ", "ExtensionHeader.Flags.EA"]
    assert {v.offset for v in p.violations if v.field_path.startswith("ExtensionHeader")} == {len(um) + 8}
    assert packets.build(p) == data
    assert packets.parse(packets.build(p), strict=False) == p


def test_a_packet_size_that_counts_the_extension_header_is_taken_too() -> None:
    """The scanner's PacketSize counts its ExtensionHeader (the 2.2.5 structure is one unit)."""
    um = srmp_user_message()
    data = bytearray(um + extension_header())
    struct.pack_into("<L", data, 8, len(data))
    p = packets.parse(bytes(data), strict=False)
    assert fields(p) == ["UserHeader.Flags.AH", "ExtensionHeader.Flags.SQ", "ExtensionHeader.Flags.EA"]
    assert packets.build(p) == bytes(data)
    assert [len(s.data) for s in StreamSplitter().feed(bytes(data) + um)] == [len(data), len(um)]
    struct.pack_into("<L", data, 8, len(data) + 4)  # neither
    assert "BaseHeader.PacketSize" in fields(packets.parse(bytes(data), strict=False))


def test_the_headers_the_extension_header_announces_follow_it_and_round_trip() -> None:
    um = srmp_user_message(BSH | 3, session=SESSION)  # after the UserMessage's SessionHeader
    sq = mqrr.SUBQUEUE_HEADER.build(dict(AbortCounter=1, MoveCounter=0, LastMoveTime=0))
    dl = mqrr.DEAD_LETTER_HEADER.build(dict(DeadLetterPathName="DIRECT=OS:host\\private$\\dlq"))
    ea = mqrr.EXTENDED_ADDRESS_HEADER.build(
        dict(AddressLength=4, AddressType=1, Address=bytes([10, 0, 0, 1]) + bytes(12))
    )
    data = um + extension_header(len(sq + dl + ea), 0x13) + sq + dl + ea  # DL, SQ, EA
    p = packets.parse(data, strict=False)
    assert list(p.headers)[-5:] == [
        "SessionHeader",
        "ExtensionHeader",
        "SubqueueHeader",
        "DeadLetterHeader",
        "ExtendedAddressHeader",
    ]
    assert fields(p) == ["UserHeader.Flags.AH"]
    assert p.DeadLetterHeader.DeadLetterPathName == "DIRECT=OS:host\\private$\\dlq"
    assert packets.build(p) == data
    computed = Container(p.headers)
    computed.ExtensionHeader = Container(p.ExtensionHeader, RemainingHeadersSize=None)
    assert packets.build(computed) == data  # RemainingHeadersSize: the sizes of what follows


def test_a_remaining_headers_size_that_does_not_add_up_is_reported() -> None:
    um = srmp_user_message()
    sq = mqrr.SUBQUEUE_HEADER.build(dict(AbortCounter=0, MoveCounter=0, LastMoveTime=0))
    ea = mqrr.EXTENDED_ADDRESS_HEADER.build(dict(AddressLength=0, AddressType=0, Address=bytes(16)))
    data = um + extension_header(len(sq + ea) + 4, 0x12) + sq + ea
    p = packets.parse(data, strict=False)
    assert fields(p) == ["UserHeader.Flags.AH", "ExtensionHeader.RemainingHeadersSize"]


@pytest.mark.parametrize(
    "tail",
    [bytes(8), struct.pack("<LLB", 13, 0, 0x12) + bytes(3), extension_header(148, 0x12)],
    ids=["8 zero bytes", "HeaderSize 13", "SubqueueHeader missing"],
)
def test_bytes_that_are_no_extension_header_still_follow_the_packet(tail: bytes) -> None:
    um = srmp_user_message()
    p = packets.parse(um + tail, strict=False)
    assert "ExtensionHeader" not in p.headers
    assert any(v.reason == f"{len(tail)} bytes follow the packet" for v in p.violations), p.violations
    with pytest.raises(packets.PacketError):
        packets.parse(um + tail)


def test_the_stream_splitter_keeps_the_trailer_with_its_user_message() -> None:
    um = srmp_user_message()
    trailer = extension_header()
    stream = um + trailer + um
    whole = StreamSplitter().feed(stream)
    assert [(s.offset, len(s.data)) for s in whole] == [(0, len(um) + 12), (len(um) + 12, len(um))]
    assert "ExtensionHeader" in packets.parse(whole[0].data, strict=False).headers
    # fed byte by byte: a UserMessage with nothing after it yet is not held back ...
    s = StreamSplitter()
    assert [len(p.data) for p in s.feed(um)] == [len(um)]
    # ... and one whose trailer has begun waits for all of it
    s = StreamSplitter()
    assert s.feed(um + trailer[:6]) == []
    assert [len(p.data) for p in s.feed(trailer[6:] + um)] == [len(um) + 12, len(um)]
