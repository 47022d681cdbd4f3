"""Fields by spec path (packets.paths): what set_field writes, build encodes, parse decodes and
get_field reads back, at the bytes field_offset names."""

from __future__ import annotations

import packets
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
