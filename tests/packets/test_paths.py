"""Fields by spec path (packets.paths): what set_field writes, build encodes, parse decodes and
get_field reads back, at the bytes field_offset names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import packets
from packets import GUID
from packets import session as sp

G = "{6B29FC40-CA47-1067-B31D-00DD010662DA}"


def test_set_build_parse_get_round_trip_with_offsets() -> None:
    headers = sp.establish_connection(packets.GUID(G), packets.NULL_GUID, 1234)
    packets.set_field(headers, "EstablishConnection.EstablishConnectionHeader.ServerGuid", G)
    packets.set_field(headers, "InternalHeader.Flags.CS", 1)
    data = packets.build(headers)
    packet = packets.parse(data, strict=False)
    assert packets.get_field(packet, "EstablishConnectionHeader.ServerGuid") == (True, packets.GUID(G))
    present, cs = packets.get_field(packet, "EstablishConnection.InternalHeader.Flags.CS")
    assert present and int(cs) == 1
    assert packets.get_field(packet, "EstablishConnectionHeader.NoSuchField") == (False, None)
    start, end = packets.field_offset(data, "EstablishConnectionHeader.ServerGuid", "EstablishConnection") or (0, 0)
    assert data[start : start + 16] == bytes(packets.GUID(G)) and end - start >= 16
    assert packets.field_offset(data, "Nothing.Here", "EstablishConnection") is None


def test_an_order_ack_body_is_read_by_its_section_name() -> None:
    headers = sp.order_ack(1, 7, source_qm=G, destination_qm=G)
    packet = packets.parse(packets.build(headers), strict=False)
    assert packets.get_field(packet, "OrderAckBody.TxSequenceNumber") == (True, 7)
    assert packets.get_field(packet, "body.TxPreviousSequenceNumber") == (True, 6)


# --- the [MS-MQQB] 4.1 example frames and the fuzz seeds -----------------------------------------------------------

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _hex_file(path: Path) -> bytes:
    return bytes.fromhex(" ".join(line for line in path.read_text().splitlines() if not line.startswith("#")))


def _leaves(value: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _leaves(inner, f"{prefix}.{key}" if prefix else key)
    else:
        yield prefix, value


def _same(observed: Any, listed: Any) -> bool:
    if isinstance(listed, str) and listed.startswith("{") and len(listed) == 38:
        return GUID(observed) == GUID(listed)
    if isinstance(listed, int) and not isinstance(listed, bool):
        return int(observed) == listed
    if isinstance(listed, list):
        return len(observed) == len(listed)
    if isinstance(observed, bytes | bytearray) and isinstance(listed, str):
        return bytes(observed) == bytes.fromhex(listed)
    return bool(observed == listed)


@pytest.mark.parametrize("frame", range(3, 9))
def test_every_field_of_an_example_frame_is_found_by_its_path(frame: int) -> None:
    """[MS-MQQB] 4.1.3-4.1.8: each field the example lists reads back by spec path, with and
    without the packet kind, at a byte range inside the packet."""
    example = json.loads((FIXTURES / "mqqb-examples" / f"frame{frame}.json").read_text())
    data = _hex_file(FIXTURES / "mqqb-examples" / f"frame{frame}.hex")
    packet = packets.parse(data, strict=False)
    kind = packet.kind.name
    for path, listed in _leaves(example["headers"], ""):
        present, observed = packets.get_field(packet, path)
        assert (present, observed) == (False, None) if listed is None else present and _same(observed, listed), path
        assert packets.get_field(packet, f"{kind}.{path}") == (present, observed)
        span = packets.field_offset(data, path, kind)
        assert span is not None and 0 <= span[0] < span[1] <= len(data), path
        assert packets.field_offset(data, f"{kind}.{path}", kind) == span
        if present and type(observed) is int and span[1] - span[0] in (1, 2, 4, 8):
            assert int.from_bytes(data[span[0] : span[1]], "little") == observed, path


@pytest.mark.parametrize("seed", sorted((FIXTURES / "fuzz-seeds").glob("*.hex")), ids=lambda p: p.stem)
def test_set_field_of_what_get_field_reads_builds_the_same_bytes(seed: Path) -> None:
    """Every top-level field of a fuzz seed: set_field(get_field(...)) on its headers leaves the
    built packet byte-identical, and field_offset names the bytes that hold an integer field."""
    data = _hex_file(seed)
    packet = packets.parse(data, strict=False)
    if packet.violations:
        return
    headers = packet.headers
    for header, fields in list(headers.items()):
        if not isinstance(fields, dict) or header.startswith("_"):
            continue
        for name in [k for k in fields if not k.startswith("_")]:
            path = f"{header}.{name}"
            present, value = packets.get_field(packet, path)
            assert present or value is None
            if present:
                packets.set_field(headers, path, value)
            span = packets.field_offset(data, path, packet.kind.name)
            if present and type(value) is int and span is not None and span[1] - span[0] in (1, 2, 4, 8):
                assert int.from_bytes(data[span[0] : span[1]], "little") == value, path
    assert packets.build(headers) == data


# --- hex or decimal, from the construct definitions (packets.paths.hex_digits, display_value) ----------------------


@pytest.mark.parametrize(
    ("path", "digits"),
    [
        ("BaseHeader.Signature", 8),  # a HexField
        ("BaseHeader.VersionNumber", 2),
        ("UserMessage.BaseHeader.Signature", 8),  # a leading packet kind
        ("BaseHeader.Flags", 4),  # a flag word, at its width
        ("UserHeader.Flags", 8),
        ("EstablishConnectionHeader.OperatingSystem.RE", 2),  # a sub-field of a byte
        ("SubqueueHeader.AcknowledgementClass", 4),  # a Computed read out of an unnamed flag word
        ("UserHeader.DestinationQueue.PrivateQueueIdentifier", 8),  # through a Switch
        ("MultiQueueFormatHeader.Destination.FormatNameList.0.FormatType", 4),  # through an element list
        ("Ping.Signature", 4),  # the kind names the header
        ("body.TxSequenceID", 16),
        ("BaseHeader.Flags.PR", 0),  # sub-fields narrower than a byte
        ("BaseHeader.Flags.IN", 0),
        ("InternalHeader.Flags.PT", 0),
        ("BaseHeader.PacketSize", 0),  # sizes, counts, times, sequence numbers
        ("BaseHeader.TimeToReachQueue", 0),
        ("ConnectionParametersHeader.AckTimeout", 0),
        ("SessionHeader.AckSequenceNumber", 0),
        ("EstablishConnectionHeader.ServerGuid", 0),
        ("BaseHeader.NoSuchField", 0),
        ("rMessagePosition", 0),  # not a packet field
        ("queues.q[1].State", 0),
    ],
)
def test_hex_digits_come_from_the_definitions(path: str, digits: int) -> None:
    assert packets.paths.hex_digits(path) == digits


def test_display_value() -> None:
    show = packets.paths.display_value
    assert show("BaseHeader.Signature", 0x524F494C) == "0x524F494C (1380927820)"
    assert show("BaseHeader.VersionNumber", 0x10) == "0x10 (16)"
    assert show("InternalHeader.Reserved", 0) == "0x0000"  # hex and decimal agree below 10
    assert show("BaseHeader.Flags", 0x0103) == "0x0103 (PR=3, TR=1)"
    assert show("EstablishConnectionHeader.OperatingSystem", 0x0110) == "0x0110 (RE=0x10, SE=1)"
    assert show("BaseHeader.Flags", {"PR": 3}, repr) == "{'PR': 3}"  # a flag word by its sub-fields
    assert show("BaseHeader.Signature", {"not": 0}, repr) == "{'not': 0x00000000}"
    assert show("BaseHeader.Signature", True) == "True" and show("BaseHeader.Signature", "x", repr) == "'x'"
    assert show("BaseHeader.Flags.PR", 3) == "3" and show("BaseHeader.PacketSize", 572) == "572"
    assert show("", 16) == "16"
