"""`msmq-harness decode` on a capture, lined up with Wireshark: each packet carries the frame number
(the 1-based index of the record in the file, every record counted) and the capture time of the
frame that completed it; `--order capture` interleaves the streams by frame; and each TCP
connection's session violations are the pipeline's, from the same observer."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from capture_helpers import T0, tcp_pkt, write_pcap
from scapy.layers.l2 import Ether  # noqa: F401  (frames read back as Ethernet)
from scapy.utils import PcapNgWriter, rdpcap

from benchmarks.messages import connection_parameters, establish_connection
from harness.capture.frames import TcpSegment, decode_tcp
from harness.capture.pcapcommon import Record
from harness.capture.pcapfile import iter_records
from harness.cli import main as cli_main
from harness.decoding import decode_file
from harness.pipeline.flows import process_local
from harness.pipeline.synth import synthesize


def _records(path: Path) -> list[Record]:
    with path.open("rb") as f:
        return [r for r in iter_records(f, path=str(path)) if isinstance(r, Record)]


def _decode_json(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, list[dict[str, Any]]]:
    code = cli_main(["decode", "--json", *extra, str(path)])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    return code, lines


def _to_pcapng(src: Path, dst: Path) -> Path:
    writer = PcapNgWriter(str(dst))
    for frame in rdpcap(str(src)):
        writer.write(frame)
    writer.close()
    return dst


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("decode-frames") / "clean.pcap"
    synthesize(path, 8, 0.0, seed=3)
    return path


@pytest.fixture(scope="module")
def anomalies(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("decode-frames") / "anomalies.pcap"
    synthesize(path, 24, 0.5, seed=5)
    return path


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_frames_and_times_are_those_of_the_records(
    clean: Path, fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = clean if fmt == "pcap" else _to_pcapng(clean, tmp_path / "clean.pcapng")
    records = _records(path)
    scapy_times = [float(p.time) for p in rdpcap(str(path))]
    assert len(scapy_times) == len(records)
    # bytes of each direction delivered by each frame, in capture order (the synthetic capture is clean)
    delivered: dict[tuple[str, int, str, int], list[tuple[int, int]]] = {}
    for number, rec in enumerate(records, 1):
        seg = decode_tcp(rec.linktype, rec.data)
        if isinstance(seg, TcpSegment) and seg.payload:
            side = delivered.setdefault((seg.src, seg.sport, seg.dst, seg.dport), [])
            side.append((number, (side[-1][1] if side else 0) + len(seg.payload)))
    _code, lines = _decode_json(path, capsys)
    packets = [line for line in lines if "kind" in line]
    assert packets and all({"stream", "index", "offset", "frame", "time"} <= set(p) for p in packets)
    for p in packets:
        rec = records[p["frame"] - 1]
        assert p["time"] == rec.ts == pytest.approx(scapy_times[p["frame"] - 1], abs=1e-6)
        seg = decode_tcp(rec.linktype, rec.data)
        assert isinstance(seg, TcpSegment) and seg.payload
        flow, direction = p["stream"].rsplit(" ", 1)
        client_port = seg.dport == 1801
        assert (direction == "client") == client_port
        assert f"{seg.src}:{seg.sport}" in flow and f"{seg.dst}:{seg.dport}" in flow
        # the frame completes the packet: its end is delivered by this frame and not before
        end = p["offset"] + p["size"]
        side = delivered[(seg.src, seg.sport, seg.dst, seg.dport)]
        upto = [total for number, total in side if number <= p["frame"]]
        before = [total for number, total in side if number < p["frame"]]
        assert upto[-1] >= end and (not before or before[-1] < end)


def test_frames_count_every_record_not_only_msmq(tmp_path: Path) -> None:
    ec = establish_connection()
    frames = [
        tcp_pkt(b"not msmq", sport=40000, dport=80, seq=1, ts=T0),  # frame 1: another port
        tcp_pkt(ec[:300], seq=1000, ts=T0 + 1),  # frame 2
        tcp_pkt(b"x", sport=40000, dport=80, seq=9, ts=T0 + 2),  # frame 3: another port
        tcp_pkt(ec[300:], seq=1300, ts=T0 + 3),  # frame 4 completes the EstablishConnection
        tcp_pkt(connection_parameters(), seq=1000 + len(ec), ts=T0 + 4),  # frame 5
    ]
    path = tmp_path / "mixed.pcap"
    write_pcap(path, frames)
    decoded = [p for r in decode_file(path) for p in r.packets]
    assert {p.stream for p in decoded} == {decoded[0].stream}  # one stream
    assert [(p.frame, p.time) for p in decoded] == [(4, T0 + 3), (5, T0 + 4)]


def test_text_output_shows_frame_and_time(clean: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["decode", str(clean)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    records = _records(clean)
    frame = int(first.split(", frame ")[1].split(",")[0])
    assert f", time {records[frame - 1].ts:.6f}: EstablishConnection" in first


def test_capture_order_is_by_frame_and_holds_the_same_lines(
    anomalies: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code_stream, by_stream = _decode_json(anomalies, capsys)
    code_capture, by_capture = _decode_json(anomalies, capsys, "--order", "capture")
    assert code_stream == code_capture == 0
    frames = [line["frame"] for line in by_capture if "frame" in line]
    assert frames == sorted(frames) and len(frames) > 100
    assert frames != [line["frame"] for line in by_stream if "frame" in line]  # the streams interleave

    def key(line: dict[str, Any]) -> str:
        return json.dumps(line, sort_keys=True)

    assert sorted(map(key, by_stream)) == sorted(map(key, by_capture))


def _pipeline_violations(path: Path) -> list[tuple[Any, ...]]:
    tables, _counts = process_local([str(path)])
    return sorted(
        (v["flow"], v["rule_id"], v["section"], v["direction"], v["packet_index"], v["evidence"])
        for v in tables["violations"]
    )


@pytest.mark.parametrize("order", ["stream", "capture"])
def test_decode_reports_the_pipelines_violations(
    anomalies: Path, order: str, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = _pipeline_violations(anomalies)
    assert len({v[1] for v in expected}) >= 3  # several rules are broken
    _code, lines = _decode_json(anomalies, capsys, "--order", order)
    found = sorted(
        (
            line["stream"],
            line["violation"]["rule_id"],
            line["violation"]["section"],
            line["violation"]["direction"],
            line["violation"]["packet_index"],
            line["violation"]["evidence"],
        )
        for line in lines
        if "violation" in line
    )
    assert found == expected


def test_violations_follow_the_connections_packets_in_text(anomalies: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli_main(["decode", str(anomalies)])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[")]
    expected = _pipeline_violations(anomalies)
    shown = [line for line in lines if "] violation " in line]
    assert len(shown) == len(expected)
    for line in shown:
        flow = line[1:].split("]", 1)[0]
        at = lines.index(line)
        # every line of this connection comes before its violations
        assert all(not other.startswith(f"[{flow} ") for other in lines[at + 1 :])
        assert any(other.startswith(f"[{flow} ") for other in lines[:at])


def test_session_violations_count_toward_fail_on_violation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "acks.pcap"
    synthesize(path, 4, 1.0, seed=2, kinds=("ack-beyond-sent",))
    code, lines = _decode_json(path, capsys, "--fail-on-violation")
    assert not any(line.get("violations") for line in lines if "kind" in line)  # every packet decodes cleanly
    assert [line["violation"]["rule_id"] for line in lines if "violation" in line]
    assert code == 1
    assert cli_main(["decode", str(path)]) == 0  # without the flag
    capsys.readouterr()


@pytest.mark.parametrize("order", ["stream", "capture"])
def test_decode_spilled_to_disk_is_the_same(anomalies: Path, order: str) -> None:
    from harness.capture.spill import SpillPool
    from harness.capture.streams import CaptureReading
    from harness.decode_cli import _print_report
    from harness.decoding import _decode_capture

    def lines(hold: int, pool: SpillPool) -> list[str]:
        out: list[str] = []
        for report in _decode_capture(anomalies, frozenset({1801}), order, CaptureReading(), hold=hold, pool=pool):
            _print_report(report, True, out)
        return out

    spilled = SpillPool(budget=0, block=1, least=1)  # every packet waiting is written out
    assert lines(1, spilled) == lines(1 << 30, SpillPool())
    assert order == "capture" or spilled.written > 100


def test_frames_and_times_match_wireshark(anomalies: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.fail("tshark is not installed: `make tshark` (which `make test` runs) installs it")
    fields = subprocess.run(
        [tshark, "-r", str(anomalies), "-T", "fields", "-e", "frame.number", "-e", "frame.time_epoch"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    times = {int(n): float(t) for n, t in zip(fields[::2], fields[1::2], strict=True)}
    _code, lines = _decode_json(anomalies, capsys)
    packets = [line for line in lines if "frame" in line]
    assert packets
    for p in packets:
        assert p["time"] == pytest.approx(times[p["frame"]], abs=1e-6)
