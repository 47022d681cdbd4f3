"""The Spark job end to end: a synthetic capture with injected anomalies and damaged files through
``msmq-harness pipeline`` on local[2], and the same inputs through spark-submit on a real standalone
cluster on loopback giving identical Parquet content."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pipeline_helpers import capture, record_offsets, records, set_caplen
from standalone import SPARK_HOME, spark_env, standalone_cluster

from harness.cli import main as cli_main
from harness.peers import InitiatorLink, SimulatedPeer
from harness.session import Initiator, SessionConfig, user_message

ROOT = Path(__file__).resolve().parent.parent.parent
SPLIT = 24 * 1024  # small ranges, so the anomaly capture is read by several tasks
CLIENT_QM = "{6B1D2C3A-4E5F-4A6B-8C7D-9E0F1A2B3C4D}"


def record_loopback(pcap: Path) -> int:
    """A real exchange on loopback recorded by the simulated peer: the first connection answered
    with a bad BaseHeader.Signature (the initiator closes and retries), the second one clean."""
    peer_config = SessionConfig(order_ack_timeout=0.02, maximum_order_ack_delay=0.05)
    with SimulatedPeer(config=peer_config, record=pcap) as peer:
        peer.queue_behaviours(["bad-signature", "normal"])
        initiator = Initiator(CLIENT_QM, peer.identifier, config=SessionConfig(session_retry_connect=0.01))
        with InitiatorLink(initiator, peer.address, timeout=5.0) as link:
            for n in range(5):
                link.send_message(user_message(CLIENT_QM, peer.identifier, b"m%d" % n), "express")
            assert link.run_until(lambda: len(peer.delivered) == 5, 10.0)
        assert peer.wait_for(lambda: len(peer.connections) == 2 and all(c.closed for c in peer.connections), 5.0)
        return int(peer.address[1])


def table(out: Path, name: str) -> list[dict[str, Any]]:
    rows = pq.read_table(out / name).to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("inputs")
    anomalies, manifest = capture(d, "anomalies.pcap", sessions=24, rate=0.5, seed=5)
    clean, clean_manifest = capture(d, "clean.pcap", sessions=6, seed=6)
    data = clean.read_bytes()
    offs = record_offsets(clean)
    bad = d / "bad"
    bad.mkdir()
    (bad / "truncated.pcap").write_bytes(data[: offs[-3] + 20])
    (bad / "badmagic.pcap").write_bytes(b"\xde\xad\xbe\xef" + data[4:])
    damaged = bytearray(data)
    set_caplen(damaged, offs[30], 70000)
    (bad / "caplen.pcap").write_bytes(bytes(damaged))
    garbage = bytes(random.Random(9).randrange(256) for _ in range(41))
    (bad / "garbage.pcap").write_bytes(data[: offs[50] + 30] + garbage + data[offs[50] + 30 :])
    loopback = d / "loopback" / "peer.pcap"
    loopback.parent.mkdir()
    port = record_loopback(loopback)
    return {
        "paths": [str(anomalies), str(clean), str(bad), str(loopback)],
        "loopback": str(loopback),
        "ports": f"1801,{port}",
        "manifest": manifest,
        "clean_manifest": clean_manifest,
        "bad": {"truncated": offs[-3], "badmagic": 0, "caplen": offs[30], "garbage": offs[50]},
        "bad_dir": bad,
    }


@pytest.fixture(scope="module")
def local_run(inputs: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("local") / "out"
    argv = ["pipeline", *inputs["paths"], "--out", str(out), "--master", "local[2]", "--partitions", "4",
            "--split-size", str(SPLIT), "--ports", inputs["ports"], "--quiet"]
    assert cli_main(argv) == 0
    return out


def test_every_injected_anomaly_is_reported_and_clean_sessions_report_none(
    inputs: dict[str, Any], local_run: Path
) -> None:
    manifest = inputs["manifest"]
    violations = table(local_run, "violations")
    sessions = {(s["input"], s["flow"]): s for s in table(local_run, "sessions")}
    anomalies_path = inputs["paths"][0]
    found = {(v["flow"], v["rule_id"]) for v in violations if v["input"] == anomalies_path}
    where = {(v["flow"], v["rule_id"], v["direction"], v["packet_index"]) for v in violations}
    kinds = {a["kind"] for a in manifest["anomalies"]}
    assert kinds == {"bad-signature", "packet-size", "sequence-gap", "ack-beyond-sent",
                     "out-of-order", "retransmission", "overlap", "missing-segment"}
    with_rule = {a["flow"] for a in manifest["anomalies"] if a["rule"]}
    for a in manifest["anomalies"]:
        if a["rule"]:
            assert (a["flow"], a["rule"]) in found, a
            assert (a["flow"], a["rule"], a["direction"], a["session_index"]) in where, a
            assert sessions[(anomalies_path, a["flow"])]["outcome"] == "violations"
        else:  # TCP anomalies are not violations; a missing segment is a recorded gap
            assert not [v for v in violations if v["flow"] == a["flow"]], a
            session = sessions[(anomalies_path, a["flow"])]
            if a.get("gap"):
                assert session["outcome"] == "gap" and session["gaps"] >= 1 and session["gap_bytes"] > 0
            else:
                assert session["outcome"] == "ok", session
    clean_flows = [f["flow"] for f in manifest["flows"] if "anomaly" not in f]
    assert clean_flows
    assert not [v for v in violations if v["input"] == anomalies_path and v["flow"] not in with_rule]
    for flow in clean_flows:
        assert sessions[(anomalies_path, flow)]["outcome"] == "ok"
    assert len([s for s in sessions if s[0] == anomalies_path]) == manifest["sessions"]
    clean_path = inputs["paths"][1]
    assert not [v for v in violations if v["input"] == clean_path]
    assert [s["outcome"] for k, s in sessions.items() if k[0] == clean_path] == ["ok"] * 6


def test_loopback_capture_from_the_simulated_peer(inputs: dict[str, Any], local_run: Path) -> None:
    loopback = inputs["loopback"]
    sessions = sorted((s for s in table(local_run, "sessions") if s["input"] == loopback), key=lambda s: s["first_ts"])
    violations = [v for v in table(local_run, "violations") if v["input"] == loopback]
    assert len(sessions) == 2
    bad, good = sessions
    rules = {v["rule_id"] for v in violations if v["flow"] == bad["flow"]}
    assert "MQQB-3.1.5.1.2-signature" in rules and rules <= {"MQQB-3.1.5.1.2-signature", "MQQB-3.1.5.9-closed-early"}
    assert bad["outcome"] == "violations" and bad["user_messages"] == 0
    assert good["outcome"] == "ok" and good["user_messages"] == 5
    assert not [v for v in violations if v["flow"] == good["flow"]]
    assert good["client_qm"] == CLIENT_QM and good["server_qm"] not in (None, CLIENT_QM)


def test_packets_table_holds_every_session_packet(inputs: dict[str, Any], local_run: Path) -> None:
    packets = table(local_run, "packets")
    manifest = inputs["manifest"]
    anomalies_path = inputs["paths"][0]
    mine = [p for p in packets if p["input"] == anomalies_path]
    expected = sum(f["packets"]["client"] + f["packets"]["server"] for f in manifest["flows"])
    dropped = [a for a in manifest["anomalies"] if a["kind"] in ("missing-segment", "bad-signature", "packet-size")]
    assert expected - 2 * len(dropped) * 8 <= len(mine) <= expected
    kinds = {p["kind"] for p in mine}
    assert {"EstablishConnection", "ConnectionParameters", "UserMessage", "SessionAck", "OrderAck"} <= kinds
    um = [p for p in mine if p["kind"] == "UserMessage" and not p["problems"]]
    assert um and all(p["message_id"] and p["source_qm"] and p["delivery"] for p in um)
    assert [p for p in mine if p["kind"] == "UserMessage" and p["problems"]]  # the PacketSize anomaly
    assert all(p["timestamp"] > 1.6e9 for p in mine)


def test_reconciliation_and_bad_files(inputs: dict[str, Any], local_run: Path) -> None:
    summary = json.loads((local_run / "summary.json").read_text())
    by_input = {r["input"]: r for r in summary["reconciliation"]}
    bad_dir = inputs["bad_dir"]
    assert len(by_input) == 2 + 4 + 1
    for path, item in by_input.items():
        assert item["balanced"] and item["frames_read"] == item["frames_decoded"] + item["frames_rejected"]
        assert item["frames_read"] == len(records(Path(path))), path
    for path in inputs["paths"][:2]:
        assert by_input[path]["problems"] == []
        assert by_input[path]["frames_read"] > 0
    for name, offset in inputs["bad"].items():
        item = by_input[str(bad_dir / f"{name}.pcap")]
        assert item["problems"], name
        assert item["problems"][0].startswith(f"{bad_dir / name}.pcap@{offset}: "), (name, item["problems"])
    assert by_input[str(bad_dir / "badmagic.pcap")]["frames_read"] == 0
    assert "bad magic" in by_input[str(bad_dir / "badmagic.pcap")]["problems"][0]
    for name in ("truncated", "caplen", "garbage"):  # the rest of each damaged file is still processed
        assert by_input[str(bad_dir / f"{name}.pcap")]["frames_read"] >= summary["reconciliation"][1]["frames_read"] - 3
    sessions = table(local_run, "sessions")
    assert {s["input"] for s in sessions} >= {str(bad_dir / f"{n}.pcap") for n in ("truncated", "caplen", "garbage")}
    report = (local_run / "report.txt").read_text()
    assert "violations per rule:" in report and "MQQB-3.1.5.1.2-signature" in report


def test_standalone_cluster_gives_identical_parquet(
    inputs: dict[str, Any], local_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    with standalone_cluster(tmp_path / "spark") as url:
        env = spark_env(tmp_path / "spark")
        env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        cmd = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", url, "--conf", "spark.executor.memory=512m",
               str(ROOT / "harness" / "pipeline" / "__main__.py"), *inputs["paths"], "--out", str(out),
               "--partitions", "3", "--split-size", str(SPLIT // 2), "--ports", inputs["ports"], "--quiet"]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr[-4000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["master"] == url
    for name in ("packets", "sessions", "violations"):
        cluster, local = table(out, name), table(local_run, name)
        assert cluster == local, name
        assert local
    local_summary = json.loads((local_run / "summary.json").read_text())
    assert summary["reconciliation"] == local_summary["reconciliation"]
