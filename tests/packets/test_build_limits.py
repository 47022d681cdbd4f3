"""``packets.build`` makes nothing from a number past what a packet can carry ([MS-MQMQ] 2.2.19.1:
BaseHeader.PacketSize "has a maximum value of 0x00400000"; the length fields range up to "the size
limit imposed by the value of BaseHeader.PacketSize", 2.2.20.2).  A HeaderSize whose padding
would be longer (MQFAddressHeader, [MS-MQRR] 2.2.5.4 DeadLetterHeader), or an integer given where
bytes are (a MessageBody, a GUID), is refused with a PacketError naming the field and its byte
offset in the packet, before anything of that size is made: the memory a refusal takes is a
small constant (traced), where building allocated 4 GiB for a HeaderSize of 0xFFFFFFFF.  A
HeaderSize that is wrong but fits still builds (malformed packets on purpose)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import pytest
from construct import Container

import packets
from benchmarks.messages import sized_user_message
from packets import mqrr
from packets.base import MAX_PACKET_SIZE
from tests.packets.messagekit import extension_header, srmp_user_message

SECTION = "MS-MQMQ 2.2.19.1"
MQF = "MultiQueueFormatHeader."
GENEROUS = 16 << 20  # bytes traced while refusing: a packet's worth of work, not the length asked


def _mqf() -> tuple[bytes, packets.Packet]:
    data = sized_user_message(1024, "mqf-direct")
    return data, packets.parse(data)


def _dead_letter() -> tuple[bytes, packets.Packet]:
    dl = mqrr.DEAD_LETTER_HEADER.build(dict(DeadLetterPathName="DIRECT=OS:host\\private$\\dlq"))
    data = srmp_user_message() + extension_header(len(dl), 0x01) + dl  # Flags.DL
    return data, packets.parse(data, strict=False)


def _mqf_header_size(part: str, value: int) -> Callable[[packets.Packet], None]:
    def change(p: packets.Packet) -> None:
        p.MultiQueueFormatHeader[part].HeaderSize = value

    return change


def _dead_letter_size(value: int, computed_remaining: bool) -> Callable[[packets.Packet], None]:
    def change(p: packets.Packet) -> None:
        p.DeadLetterHeader.HeaderSize = value
        if computed_remaining:  # the ExtensionHeader's RemainingHeadersSize builds the header to size it
            p.headers.ExtensionHeader = Container(p.ExtensionHeader, RemainingHeadersSize=None)

    return change


def _body(value: int) -> Callable[[packets.Packet], None]:
    def change(p: packets.Packet) -> None:
        p.MessagePropertiesHeader.MessageBody = value
        p.MessagePropertiesHeader.MessageSize = p.MessagePropertiesHeader.AllocationBodySize = 0

    return change


def _source(value: int) -> Callable[[packets.Packet], None]:
    def change(p: packets.Packet) -> None:
        p.UserHeader.SourceQueueManager = value

    return change


CASES = {
    "mqf-destination-4-GiB": (_mqf, _mqf_header_size("Destination", 0xFFFFFFFF), MQF + "Destination.HeaderSize"),
    "mqf-response-just-past": (_mqf, _mqf_header_size("Response", MAX_PACKET_SIZE + 16), MQF + "Response.HeaderSize"),
    "dead-letter-4-GiB": (_dead_letter, _dead_letter_size(0xFFFFFFFF, False), "DeadLetterHeader.HeaderSize"),
    "dead-letter-sized-by-extension": (
        _dead_letter,
        _dead_letter_size(0xFFFFFF00, True),
        "DeadLetterHeader.HeaderSize",
    ),
    "body-an-integer": (_mqf, _body(0xFFFFFFFF), "MessagePropertiesHeader.MessageBody"),
    "guid-an-integer": (_mqf, _source(0xFFFFFFFF), "UserHeader.SourceQueueManager"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_length_past_the_packet_limit_is_refused_naming_the_field_before_it_is_made(case: str) -> None:
    make, change, path = CASES[case]
    data, p = make()
    span = packets.field_offset(data, path, "UserMessage")
    assert span is not None
    change(p)
    p.BaseHeader.PacketSize = None
    tracemalloc.start()
    try:
        with pytest.raises(packets.PacketError) as info:
            packets.build(p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    e = info.value
    assert peak < GENEROUS, f"{peak} bytes traced while refusing"
    assert (e.field_path, e.offset) == (path, span[0]), str(e)
    assert e.section in (SECTION, "MS-MQMQ 2.2.18.1.1")


def test_a_wrong_header_size_that_fits_still_builds_and_parses_back_as_the_violation() -> None:
    data, p = _mqf()
    p.MultiQueueFormatHeader.Destination.HeaderSize += 64 << 10  # 64 KiB of padding: wrong, but it fits
    p.BaseHeader.PacketSize = None
    built = packets.build(p)
    assert len(built) == len(data) + (64 << 10)
    again = packets.parse(built, strict=False)
    assert [v.field_path for v in again.violations] == ["MultiQueueFormatHeader.Destination.HeaderSize"]
