"""Packets up to the 4 MiB PacketSize limit ([MS-MQMQ] 2.2.19.1) cost memory in proportion to their
size, whatever makes them large: a MessageBody, or a MultiQueueFormatHeader ([MS-MQMQ] 2.2.20.1)
listing a million Direct elements (2.2.18.1.4), the most elements a packet can hold."""

from __future__ import annotations

import pickle
import tracemalloc

import pytest
from construct import Container

import packets
from benchmarks.messages import sized_user_message

LIMIT = 4 << 20


def _peak(fn: object) -> int:
    """Peak bytes allocated by ``fn()``, the codec made ready first: a parser generated or a
    table filled on first use (again after another test imported the modules anew) is not the
    packet's cost."""
    packets.parse(sized_user_message(300, "mqf-direct"), strict=False)
    tracemalloc.start()
    try:
        fn()  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("shape", ["body", "mqf-direct", "mqf-named"])
def test_a_4_mib_packet_parses_in_memory_a_small_multiple_of_its_size(shape: str) -> None:
    data = sized_user_message(LIMIT, shape)
    assert len(data) > LIMIT - 64
    peak = _peak(lambda: packets.parse(data))
    assert peak < 2 * len(data), f"{peak / len(data):.1f} times the packet's size"


def test_a_million_direct_elements_read_back_build_back_and_pickle() -> None:
    data = sized_user_message(LIMIT, "mqf-direct")
    p = packets.parse(data)
    restored = pickle.loads(pickle.dumps(p))  # the packet as parsed, before the changes below
    names = p.MultiQueueFormatHeader.Destination.FormatNameList
    count = int(p.MultiQueueFormatHeader.Destination.ElementCount)
    assert count == len(names) > 1_000_000 - 100
    assert names[0] == names[-1] == Container(FormatType=3, FormatName=Container(DirectFormatName=""))
    assert packets.build(p) == data
    names[5] = Container(FormatType=3, FormatName=Container(DirectFormatName="x"))  # one element changed
    p.MultiQueueFormatHeader.Destination.HeaderSize = None  # computed again, as PacketSize
    p.BaseHeader.PacketSize = None
    changed = packets.build(p)
    assert len(changed) == len(data) + 4  # "x" and its alignment
    again = packets.parse(changed, strict=False)  # 4 bytes past the PacketSize limit: a violation, decoded
    assert again.MultiQueueFormatHeader.Destination.FormatNameList[5].FormatName.DirectFormatName == "x"
    assert packets.build(restored) == data


def test_an_element_count_larger_than_the_bytes_allow_is_a_parse_error_naming_the_field() -> None:
    data = bytearray(sized_user_message(64 << 10, "mqf-direct"))
    span = packets.field_offset(bytes(data), "MultiQueueFormatHeader.Destination.ElementCount", "UserMessage")
    assert span is not None
    at = span[0]
    data[at : at + 4] = (0xFFFFFFF0).to_bytes(4, "little")
    packets.parse(bytes(data), strict=False)  # the violation's first report made ready, as _peak's parse
    peak = _peak(lambda: packets.parse(bytes(data), strict=False))
    assert peak < 4 * len(data)
    with pytest.raises(packets.PacketError) as e:
        packets.parse(bytes(data))
    assert e.value.field_path.startswith("MultiQueueFormatHeader.Destination")


def test_a_parsed_element_list_renders_as_a_list() -> None:
    from packets.render import to_jsonable

    p = packets.parse(sized_user_message(300, "mqf-named"))
    rendered = to_jsonable(p)["MultiQueueFormatHeader"]["Destination"]["FormatNameList"]
    name = "TCP:192.168.1.20\\private$\\orders"
    assert rendered and rendered[0] == {"FormatType": 3, "FormatName": {"DirectFormatName": name}}
