"""The packet row's key fields ([MS-MQMQ] 2.2.20 UserHeader, [MS-MQQB] 2.2.1 EstablishConnection,
2.2.20.4 SessionHeader, 2.2.20.5 TransactionHeader) read by plain lookups from the parser's
headers are those the reading of headers of any shape gives, for every packet of a capture with
every anomaly and for headers that are missing, None or not dictionaries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.pipeline import flows
from harness.pipeline.synth import ANOMALIES, synthesize
from packets import PacketKind


class _Packet:
    def __init__(self, kind: PacketKind, headers: Any) -> None:
        self.kind, self.headers, self.violations = kind, headers, []


class _Object:
    """A header that is no dictionary: its fields read by item."""

    def __init__(self, **fields: Any) -> None:
        self.fields = fields

    def __getitem__(self, name: str) -> Any:
        return self.fields[name]


def test_plain_lookups_give_what_any_shape_gives(tmp_path: Path) -> None:
    path = tmp_path / "c.pcap"
    synthesize(path, 30, 0.6, seed=5, kinds=tuple(ANOMALIES))
    seen: list[Any] = []
    real = flows.FlowRows._row

    def keep(self: flows.FlowRows, direction: str, index: int, offset: int, packet: Any, data: bytes, key: Any) -> None:
        seen.append(packet)
        real(self, direction, index, offset, packet, data, key)

    flows.FlowRows._row = keep  # type: ignore[method-assign]
    try:
        for _tables in flows.iter_local([str(path)]):
            pass
    finally:
        flows.FlowRows._row = real  # type: ignore[method-assign]
    kinds = {p.kind for p in seen}
    assert {PacketKind.UserMessage, PacketKind.EstablishConnection, PacketKind.ConnectionParameters} <= kinds
    for packet in seen:
        assert flows.key_fields(packet) == flows._key_fields_any(packet.headers, packet.kind.name)


def test_odd_headers_read_as_before() -> None:
    guid = bytes(range(16))
    odd = [
        _Packet(PacketKind.UserMessage, {"UserHeader": None, "SessionHeader": None}),
        _Packet(PacketKind.UserMessage, {"UserHeader": _Object(MessageID=7, SourceQueueManager=guid,
                                                               QueueManagerAddress=guid, Flags=None)}),
        _Packet(PacketKind.UserMessage, {"UserHeader": {"MessageID": "9"}, "TransactionHeader": {}}),
        _Packet(PacketKind.UserMessage, {"UserHeader": {}, "SessionHeader": _Object(AckSequenceNumber=3)}),
        _Packet(PacketKind.EstablishConnection, {"EstablishConnectionHeader": _Object(ClientGuid=guid)}),
        _Packet(PacketKind.EstablishConnection, {"EstablishConnectionHeader": None}),
        _Packet(PacketKind.ConnectionParameters, {"InternalHeader": {"Flags": None}}),
        _Packet(PacketKind.UserMessage, _Object(UserHeader={"MessageID": 1})),
    ]
    for packet in odd:
        assert flows.key_fields(packet) == flows._key_fields_any(packet.headers, packet.kind.name)
    assert flows.key_fields(odd[1])["message_id"] == 7 and flows.key_fields(odd[2])["message_id"] == 9
    assert flows.key_fields(odd[3])["ack_sequence_number"] == 3
