"""The generated Wireshark dissector (packets.dissector) against the codec, field by field.

tshark runs the generated Lua on captures -- the bundled fixtures capture (every hex fixture:
UserMessages with every optional header, EstablishConnection, ConnectionParameters, SessionAck,
OrderAck, FinalAck on TCP 1801, cut into awkward segments; Ping packets on UDP 3527) and a
synthetic capture of interleaved sessions (harness.pipeline.synth) -- and every MSMQ PDU it
shows is compared, field by field in order, with what ``msmq-harness decode --json`` prints for
the same packet.  tshark is installed by ``make test`` (target ``tshark``); the test skips only
when tshark is missing outside CI.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from harness.capture.tcp import FlowKey
from harness.decoding import decode_file
from harness.dissector_cli import main
from packets import base, session
from packets.dissector import generate_lua, lua_fields
from packets.layout import PacketKind
from packets.stream import wire_length
from tests.packets.dissector_captures import FIXTURES, fixture_capture

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).parent / "msmq-harness"
BUNDLED = FIXTURES / "captures" / "msmq-fixtures.pcap"
SKIP_KEYS = {"stream", "index", "offset", "frame", "time", "size", "violations", "kind", "body"}


def _tshark() -> str:
    path = shutil.which("tshark")
    if path is None:
        pytest.fail("tshark is not installed: `make tshark` (which `make test` runs) installs it")
    return path


# The module fixture ``lua_script`` once per run: under pytest-xdist --dist loadgroup the module's tests
# share a worker (else each worker that gets one of them makes it again).
pytestmark = pytest.mark.xdist_group("dissector")


@pytest.fixture(scope="module")
def lua_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lua") / "msmq.lua"
    path.write_text(generate_lua())
    return path


# ---------------------------------------------------------------------------------------------
# flattening both sides to (spec path, value) in wire order

FIELDS = lua_fields()


def _normal(path: str, value: Any) -> Any:
    """A value as the field's Wireshark type shows it."""
    ftype = FIELDS["msmq." + path].ftype
    if ftype == "guid":
        return str(value).strip("{}").upper()
    if ftype == "bytes":
        return str(value).replace(":", "").lower()
    if ftype.startswith("uint"):
        return int(value, 0) if isinstance(value, str) else int(value)
    return value


def _flatten_json(prefix: str, value: Any, out: list[tuple[str, Any]], elements: Any = None) -> None:
    if value is None:
        return
    if isinstance(value, dict) and "value" in value:  # a flag word and its sub-fields
        out.append((prefix, _normal(prefix, value["value"])))
        for sub, v in value.items():
            if sub != "value":
                out.append((f"{prefix}.{sub}", _normal(f"{prefix}.{sub}", v)))
    elif isinstance(value, dict):
        for k, v in value.items():
            _flatten_json(f"{prefix}.{k}" if prefix else k, v, out, elements)
    elif isinstance(value, list):  # an element list: each element under the list's subtree name
        name = next(a for a in FIELDS if a.startswith(f"msmq.{prefix}.") and FIELDS[a].ftype == "none")
        for element in value:
            _flatten_json(name[len("msmq.") :], element, out, elements)
    else:
        out.append((prefix, _normal(prefix, value)))


def expected_fields(record: dict[str, Any], packet: Any = None) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in record.items():
        if key not in SKIP_KEYS:
            _flatten_json(key, value, out, packet)
    out.append(("PacketKind", record["kind"]))
    if record.get("body") is not None:
        _flatten_json(f"{record['kind']}Body", record["body"], out)
    return out


def _flatten_pdml(node: ET.Element, out: list[tuple[str, Any]]) -> None:
    for child in node.findall("field"):
        name = child.get("name", "")
        if name in FIELDS and FIELDS[name].ftype != "none":
            path = name[len("msmq.") :]
            ftype = FIELDS[name].ftype
            raw = child.get("value", "") if ftype == "bytes" else child.get("show", "")
            out.append((path, _normal(path, raw)))
        _flatten_pdml(child, out)


def dissected(tshark: str, lua: Path, capture: Path, *extra: str) -> list[dict[str, Any]]:
    """Every MSMQ PDU tshark shows: its transport endpoints and its fields in tree order."""
    result = subprocess.run(
        [tshark, "-n", "-X", f"lua_script:{lua}", "-r", str(capture), "-T", "pdml", *extra],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Lua" not in result.stderr or "error" not in result.stderr.lower(), result.stderr
    pdus = []
    for packet in ET.fromstring(result.stdout).findall("packet"):
        values: dict[str, str] = {}
        for proto in packet.findall("proto"):
            for f in proto.iter("field"):
                if f.get("name") in ("ip.src", "ip.dst", "tcp.srcport", "tcp.dstport", "udp.srcport", "udp.dstport"):
                    values.setdefault(f.get("name", ""), f.get("show", ""))
        for proto in packet.findall("proto"):
            if proto.get("name") == "msmq":
                fields: list[tuple[str, Any]] = []
                _flatten_pdml(proto, fields)
                errors = [f.get("showname") for f in proto.iter("field") if f.get("name") == "_ws.expert"]
                pdus.append({**values, "fields": fields, "errors": errors})
    return pdus


def decoded(capture: Path) -> dict[str, list[dict[str, Any]]]:
    """``msmq-harness decode --json`` of a capture: records by stream name, in stream order."""
    result = subprocess.run([str(CLI), "decode", "--json", str(capture)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    streams: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in result.stdout.splitlines():
        record = json.loads(line)
        if "violation" in record:  # a session rule the connection broke (not a packet)
            continue
        assert "kind" in record, f"decode reported a stream problem: {record}"
        streams[record["stream"]].append(record)
    return streams


def _stream_name(pdu: dict[str, Any], ports: frozenset[int]) -> str:
    src, sport, dst, dport = pdu["ip.src"], int(pdu["tcp.srcport"]), pdu["ip.dst"], int(pdu["tcp.dstport"])
    direction = "client" if dport in ports else "server"
    return f"{FlowKey.of(src, sport, dst, dport)[0].id} {direction}"


def compare(expected: list[tuple[str, Any]], got: list[tuple[str, Any]], where: str) -> int:
    for i, (want, have) in enumerate(zip(expected, got, strict=False)):
        assert want == have, f"{where}: field {i}: decode has {want}, the dissector shows {have}"
    assert len(expected) == len(got), (
        f"{where}: decode has {len(expected)} fields, the dissector {len(got)}: "
        f"first difference {expected[len(got)] if len(expected) > len(got) else got[len(expected)]}"
    )
    return len(expected)


def check_capture(tshark: str, lua: Path, capture: Path, ports: frozenset[int] = frozenset({1801})) -> dict[str, int]:
    """Compare every TCP PDU of ``capture`` with decode --json; returns counts."""
    pdus = [p for p in dissected(tshark, lua, capture) if "tcp.srcport" in p]
    streams = decoded(capture)
    packets_by_stream: dict[str, list[Any]] = defaultdict(list)
    for report in decode_file(capture, ports):  # a stream's packets come in several reports
        packets_by_stream[report.name] += [item.packet for item in report.packets]
    seen: dict[str, int] = defaultdict(int)
    fields = 0
    for pdu in pdus:
        assert not pdu["errors"], pdu["errors"]
        name = _stream_name(pdu, ports)
        index = seen[name]
        seen[name] += 1
        assert index < len(streams[name]), f"{name}: the dissector shows more packets than decode"
        record = streams[name][index]
        expected = expected_fields(record, packets_by_stream[name][index])
        fields += compare(expected, pdu["fields"], f"{capture.name} {name} #{index} ({record['kind']})")
    assert dict(seen) == {name: len(records) for name, records in streams.items()}
    return {"packets": len(pdus), "fields": fields}


# ---------------------------------------------------------------------------------------------


def test_generated_lua_registers_spec_paths() -> None:
    text = generate_lua()
    for abbr in (
        "msmq.BaseHeader.PacketSize",
        "msmq.UserHeader.Flags.DQ",
        "msmq.SessionHeader.WindowSize",
        "msmq.EstablishConnectionHeader.OperatingSystem.SE",
        "msmq.Ping.Flags.RC",
        "msmq.MultiQueueFormatHeader.Destination.FormatNameList.MQFFormatNameElement.FormatType",
    ):
        assert "ProtoField." in text and f'"{abbr}"' in text, abbr
    assert "dissect_tcp_pdus" in text
    assert 'DissectorTable.get("tcp.port"):add(1801, msmq)' in text
    assert 'DissectorTable.get("udp.port"):add(3527, msmq)' in text
    assert generate_lua() == text  # deterministic


def test_lua_identify_returns_the_kinds_of_the_one_table() -> None:
    """The dissector's identification is written from the table packets.session.identify reads:
    each kind of INTERNAL_KINDS and TRANSACTIONAL_ACKS, besides UserMessage and Unknown."""
    text = generate_lua()
    identify = text[text.index("local function identify(h)") :]
    identify = identify[: identify.index("\nend\n")]
    table = {entry.kind for entry in session.INTERNAL_KINDS} | {ack.kind for ack in session.TRANSACTIONAL_ACKS}
    assert set(re.findall(r'return "(\w+)"', identify)) == {*table, PacketKind.UserMessage, PacketKind.Unknown}


def test_cli_writes_the_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-o", str(tmp_path / "m.lua"), "--tcp-port", "2801"]) == 0
    assert 'DissectorTable.get("tcp.port"):add(2801, msmq)' in (tmp_path / "m.lua").read_text()
    assert main([]) == 0
    assert capsys.readouterr().out == generate_lua()
    import argparse

    from harness.dissector_cli import add_parser

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["dissector", "--udp-port", "3600"])
    assert args.func(args) == 0
    assert 'DissectorTable.get("udp.port"):add(3600, msmq)' in capsys.readouterr().out


def test_framing_rule_matches_the_stream_splitter() -> None:
    """pdu_length in Lua is the rendering of the uncounted slots; here, its Python twin checks
    every BaseHeader flag word against packets.stream.wire_length."""
    import re

    text = generate_lua()
    body = text[text.index("local function pdu_length") : text.index("return size")]
    extra = [
        (int(s), int(n))
        for s, n in re.findall(r"band\(rshift\(flags, (\d+)\), 0x1\) == 1\)\) then size = size \+ (\d+)", body)
    ]
    layout_bit = int(re.search(r"if not \(\(band\(rshift\(flags, (\d+)\)", body).group(1))  # type: ignore[union-attr]
    for flags in range(1 << 16):
        header = bytes([base.VERSION_NUMBER, 0]) + flags.to_bytes(2, "little")
        header += base.SIGNATURE.to_bytes(4, "little") + (100).to_bytes(4, "little") + bytes(4)
        size = 100
        if not flags >> layout_bit & 1:
            size += sum(n for shift, n in extra if flags >> shift & 1)
        assert size == wire_length(header), hex(flags)


def test_bundled_capture_is_current(tmp_path: Path) -> None:
    """fixtures/captures/msmq-fixtures.pcap is what the fixtures give today."""
    fresh = fixture_capture(tmp_path / "fresh.pcap")
    assert BUNDLED.read_bytes() == fresh.read_bytes(), (
        "regenerate: python -m tests.packets.dissector_captures fixtures/captures"
    )


def test_tshark_matches_decode_on_the_fixtures_capture(lua_script: Path) -> None:
    tshark = _tshark()
    counts = check_capture(tshark, lua_script, BUNDLED)
    assert counts["packets"] == 52  # the 6 TCP example frames, 41 TCP fuzz seeds and 5 rich_messages
    # the Ping datagrams on UDP 3527, against decode --json of each datagram
    from scapy.layers.inet import UDP
    from scapy.utils import rdpcap

    datagrams = [bytes(p[UDP].payload) for p in rdpcap(str(BUNDLED)) if UDP in p]
    pings = [p for p in dissected(tshark, lua_script, BUNDLED) if "udp.srcport" in p]
    assert len(pings) == len(datagrams) == 5
    for i, (datagram, pdu) in enumerate(zip(datagrams, pings, strict=True)):
        path = Path(lua_script.parent / f"ping{i}.bin")
        path.write_bytes(datagram)
        (record,) = decoded(path).values()
        compare(expected_fields(record[0]), pdu["fields"], f"ping {i}")


def test_tshark_matches_decode_on_synthetic_sessions(lua_script: Path, tmp_path: Path) -> None:
    from harness.pipeline.synth import synthesize

    tshark = _tshark()
    capture = tmp_path / "sessions.pcap"
    synthesize(capture, 6, 0.0, seed=3, messages=6)
    counts = check_capture(tshark, lua_script, capture)
    assert counts["packets"] > 60


def test_decode_as_other_ports(lua_script: Path, tmp_path: Path) -> None:
    """A capture on another TCP port, dissected with ``-d tcp.port==PORT,msmq``."""
    tshark = _tshark()
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap

    from packets import build
    from packets.session import connection_parameters

    payload = build(connection_parameters())
    frame = Ether() / IP(src="10.0.0.2", dst="10.0.0.1") / TCP(sport=40000, dport=2801, flags="PA", seq=1) / payload
    capture = tmp_path / "port.pcap"
    wrpcap(str(capture), [frame])
    assert not dissected(tshark, lua_script, capture)
    (pdu,) = dissected(tshark, lua_script, capture, "-d", "tcp.port==2801,msmq")
    assert ("PacketKind", "ConnectionParameters") in pdu["fields"]
    assert ("BaseHeader.PacketSize", len(payload)) in pdu["fields"]


def test_malformed_packet_names_the_field(lua_script: Path, tmp_path: Path) -> None:
    """A packet whose header runs past PacketSize is flagged with the field path, as PacketError."""
    tshark = _tshark()
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap

    from packets import build
    from packets.session import connection_parameters

    payload = bytearray(build(connection_parameters()))
    payload[8:12] = (24).to_bytes(4, "little")  # PacketSize cuts the ConnectionParametersHeader
    frame = Ether() / IP(src="10.0.0.2", dst="10.0.0.1") / TCP(sport=40000, dport=1801, flags="PA", seq=1)
    wrpcap(str(tmp_path / "bad.pcap"), [frame / bytes(payload[:24])])
    (pdu,) = dissected(tshark, lua_script, tmp_path / "bad.pcap")
    assert any("ConnectionParametersHeader.AckTimeout at byte 24" in (e or "") for e in pdu["errors"]), pdu["errors"]
