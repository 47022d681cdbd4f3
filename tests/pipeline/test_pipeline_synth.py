"""msmq-harness synth: real pcap files (TCP handshakes, checksums, sequence numbers) carrying the
session engines' packets, and a manifest that says exactly what was injected."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest
from pipeline_helpers import capture
from scapy.layers.inet import IP, TCP
from scapy.utils import rdpcap

from harness.capture.framing import decode_pieces
from harness.capture.streams import capture_streams
from harness.cli import main as cli_main
from harness.pipeline.synth import ANOMALIES, SynthError, synthesize


def test_frames_have_valid_checksums_and_handshakes(tmp_path: Path) -> None:
    path, manifest = capture(tmp_path, sessions=6, rate=0.5, seed=2)
    frames = rdpcap(str(path))
    assert len(frames) == manifest["records"]
    for frame in frames:
        ip, tcp = frame[IP], frame[TCP]
        rebuilt = frame.__class__(bytes(frame))
        del rebuilt[IP].chksum
        del rebuilt[TCP].chksum
        rebuilt = rebuilt.__class__(bytes(rebuilt))
        assert (rebuilt[IP].chksum, rebuilt[TCP].chksum) == (ip.chksum, tcp.chksum)
    first: dict[tuple[int, int], list[str]] = {}
    for frame in frames:
        tcp = frame[TCP]
        key = (tcp.sport, tcp.dport) if tcp.dport == 1801 else (tcp.dport, tcp.sport)
        first.setdefault(key, []).append(str(tcp.flags))
    assert len(first) == 6
    for flags in first.values():
        assert flags[:3] == ["S", "SA", "A"]
        assert flags[-3:] == ["FA", "FA", "A"]


def test_streams_reassemble_to_the_engines_packets(tmp_path: Path) -> None:
    path, manifest = capture(tmp_path, sessions=16, rate=0.5, seed=3)
    anomalies = {a["flow"]: a for a in manifest["anomalies"]}
    expected = {f["flow"]: f["packets"] for f in manifest["flows"]}
    streams = list(capture_streams(path))
    assert {s.flow for s in streams} == set(expected)
    for s in streams:
        kind = anomalies.get(s.flow, {}).get("kind")
        if kind == "missing-segment" and s.direction == "client":
            assert s.gaps, "the missing segment is a recorded gap"
            continue
        assert not s.gaps, (s.flow, kind)
        report = decode_pieces(s.name, s.pieces)
        n = len(report.packets)
        if kind in ("bad-signature",) and s.direction == "server":
            assert report.errors and n == 0
        else:
            assert n == expected[s.flow][s.direction], (s.flow, s.direction, kind)
        if kind == "packet-size" and s.direction == "client":
            assert [p for p in report.packets if p.packet.violations]


def test_manifest_records_every_kind_with_its_rule(tmp_path: Path) -> None:
    _, manifest = capture(tmp_path, sessions=40, rate=0.4, seed=8)
    kinds = Counter(a["kind"] for a in manifest["anomalies"])
    assert sum(kinds.values()) == 16 and set(kinds) == set(ANOMALIES)
    rules = {a["kind"]: a["rule"] for a in manifest["anomalies"]}
    assert rules == {
        "bad-signature": "MQQB-3.1.5.1.2-signature",
        "packet-size": "MQQB-3.1.5.1.3-malformed",
        "sequence-gap": "MQQB-3.1.5.5.5-count-mismatch",
        "ack-beyond-sent": "MQQB-3.1.5.5.1-ack-beyond-sent",
        "out-of-order": None,
        "retransmission": None,
        "overlap": None,
        "missing-segment": None,
    }
    for a in manifest["anomalies"]:
        if a["rule"]:
            assert a["direction"] in ("client", "server") and a["packet_index"] >= 0
    assert len({f["flow"] for f in manifest["flows"]}) == 40


def test_same_seed_same_bytes_and_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = synthesize(tmp_path / "a.pcap", 5, 0.4, seed=9)
    b = synthesize(tmp_path / "b.pcap", 5, 0.4, seed=9)
    digest = [hashlib.sha256((tmp_path / n).read_bytes()).hexdigest() for n in ("a.pcap", "b.pcap")]
    assert digest[0] == digest[1] and a["anomalies"] == b["anomalies"]
    out = tmp_path / "c.pcap"
    assert cli_main(["synth", "--sessions", "3", "--anomalies", "0.0", "--out", str(out), "--seed", "1"]) == 0
    assert "3 sessions" in capsys.readouterr().out and (tmp_path / "c.pcap.json").exists()
    assert cli_main(["synth", "--sessions", "3", "--anomalies", "2", "--out", str(out)]) == 2
    assert cli_main(["synth", "--sessions", "3", "--kinds", "nope", "--out", str(out)]) == 2
    with pytest.raises(SynthError):
        synthesize(out, -1)
