"""MSMQ wire packets: parse and build every packet of an MSMQ binary session.

Public API ([MS-MQMQ] 2.2.18-2.2.20, [MS-MQRR] 2.2.5, [MS-MQQB] 2.2):

- ``parse(data, strict=True) -> Packet``: one packet; its ``kind`` and its headers by spec
  name (``p.BaseHeader.Flags.PR``, ``p.UserHeader.Flags.DQ``); strict=False returns the
  violations in ``p.violations`` instead of raising.
- ``build(packet) -> bytes``: PacketSize, lengths and padding computed when left out.
- ``UserMessageTemplate(headers).build(message_id, body)``: UserMessages that differ only in
  UserHeader.MessageID and the body, written from bytes encoded once.
- ``parse_ping(datagram)`` / ``build_ping(fields)``: the UDP Ping Packet ([MS-MQQB] 2.2.7).
- ``StreamSplitter``: cuts a TCP byte stream into packets by BaseHeader.PacketSize.
- ``PacketError(field_path, offset, reason)``: the only error the codec raises.
- ``get_field`` / ``set_field`` / ``field_offset``: a field by spec path (``UserHeader.Flags.DQ``).
- ``parse_format_name``: an [MS-MQMQ] 2.1 format name (``FormatNameError`` names the offset).

``import packets`` imports neither scapy nor anything of ``harness``.

Layer rules (the import-linter contracts of pyproject.toml, run by ``make lint`` and
tests/test_layers.py):

- Rule 1: ``packets`` is the lowest layer: it imports nothing of ``harness``.
- Rule 2: it is a sans-IO core: bytes in, objects out; no sockets, files or clocks (scapy only
  on demand, in ``packets.scapy_layers``).
"""

from packets.codec import Packet, UserMessageTemplate, build, build_ping, parse, parse_ping
from packets.errors import PacketError, Violation
from packets.fields import GUID, NULL_GUID, BitFlags
from packets.formatname import FormatName, FormatNameError, parse_format_name
from packets.layout import PacketKind
from packets.paths import field_offset, get_field, set_field
from packets.stream import StreamPacket, StreamSplitter, wire_length

__all__ = [
    "GUID",
    "NULL_GUID",
    "BitFlags",
    "FormatName",
    "FormatNameError",
    "Packet",
    "PacketError",
    "PacketKind",
    "StreamPacket",
    "StreamSplitter",
    "UserMessageTemplate",
    "Violation",
    "build",
    "build_ping",
    "field_offset",
    "get_field",
    "parse",
    "parse_format_name",
    "parse_ping",
    "set_field",
    "wire_length",
]
