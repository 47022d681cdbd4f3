"""Bad input gets one clear error: PacketError with field path and offset, never anything else.

The robustness promise of the codec ([MS-MQMQ] 2.2.19-2.2.20, [MS-MQQB] 2.2): hostile length
fields (the CVE-2023-21554 "QueueJumper" pattern of a length with its top bit set), sizes past
the end, truncations at every byte, and a short run of the fuzzer that ``make fuzz`` runs at
full size.
"""

from __future__ import annotations

import struct
import tracemalloc

import pytest

import packets
from benchmarks import messages
from fuzz.fuzz_codec import fuzz
from packets import PacketError

MESSAGE = messages.typical_user_message(False)
NAME_COUNT_AT = 16 + 48  # UserHeader.DestinationQueue.Count
PROPS_AT = 16 + 48 + 2 + len((messages.DIRECT_NAME + "\0").encode("utf-16-le"))
PROPS_AT += -(PROPS_AT - 16) % 4


def patched(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


def test_the_hand_encoded_message_is_valid() -> None:
    p = packets.parse(MESSAGE)
    assert p.kind == packets.PacketKind.UserMessage
    assert p.UserHeader.Flags.DQ == 7
    assert p.MessagePropertiesHeader.MessageSize == 1024


@pytest.mark.parametrize(
    "offset,fmt,value,field",
    [
        (8, "<L", 0xFFFFFFFF, "BaseHeader.PacketSize"),
        (NAME_COUNT_AT, "<H", 0x8000, "UserHeader.DestinationQueue"),
        (NAME_COUNT_AT, "<H", 0xFFFF, "UserHeader.DestinationQueue"),
        (PROPS_AT + 32, "<L", 0x80000000, "MessagePropertiesHeader"),  # MessageSize
        (PROPS_AT + 52, "<L", 0xFFFFFFFF, "MessagePropertiesHeader"),  # ExtensionSize
        (PROPS_AT + 1, "<B", 0xFF, "MessagePropertiesHeader"),  # LabelLength
    ],
)
def test_hostile_lengths_raise_packet_error_naming_the_field(offset: int, fmt: str, value: int, field: str) -> None:
    data = patched(MESSAGE, offset, fmt, value)
    tracemalloc.start()
    try:
        with pytest.raises(PacketError) as e:
            packets.parse(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert e.value.field_path.startswith(field)
    assert 0 <= e.value.offset < len(data)
    assert peak < 64 * len(data)  # nothing allocated from the length field
    lenient = packets.parse(data, strict=False)
    assert lenient.violations and lenient.violations[0].field_path.startswith(field)


def test_label_length_255_in_a_ten_byte_tail() -> None:
    data = bytearray(MESSAGE[: PROPS_AT + 56 + 10])
    data[PROPS_AT + 1] = 0xFF
    struct.pack_into("<L", data, 8, len(data))
    with pytest.raises(PacketError) as e:
        packets.parse(bytes(data))
    assert e.value.field_path.startswith("MessagePropertiesHeader")


def test_every_truncation_is_a_packet_error() -> None:
    for cut in range(len(MESSAGE)):
        with pytest.raises(PacketError):
            packets.parse(MESSAGE[:cut])
        assert packets.parse(MESSAGE[:cut], strict=False).violations


def test_short_fuzz_run_finds_no_unexpected_exception_hang_or_asymmetry() -> None:
    result = fuzz(iterations=4_000, workers=1, seed=7, alloc_every=50)
    assert result["inputs"] == 4_000
    assert result["unexpected"] == 0, result["failures"][:1]
    assert result["hangs"] == 0
    assert result["roundtrip_mismatches"] == 0, result["failures"][:1]
    assert result["parsed"] > 0 and result["packet_errors"] > 0
    assert result["max_alloc_ratio"] < 64  # peak <= 64 x max(input, 4 KiB): nothing sized by a length field
