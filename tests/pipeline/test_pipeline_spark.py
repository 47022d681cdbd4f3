"""The Spark job end to end: a synthetic capture with injected anomalies, a capture recorded from
the simulated peer on loopback and damaged files through ``msmq-harness pipeline`` on local[2]."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from pipeline_helpers import CLIENT_QM, capture, record_offsets, records, table

from harness.cli import main as cli_main
from harness.pipeline.flows import process_local


def check_anomalies(inputs: dict[str, Any], local_run: Path) -> None:
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
    for clean_path in (inputs["paths"][1], inputs["pcapng"]):  # the same frames, as pcap and as pcapng
        assert not [v for v in violations if v["input"] == clean_path]
        assert [s["outcome"] for k, s in sessions.items() if k[0] == clean_path] == ["ok"] * 6
    # summary.json and report.txt list the sessions that broke a rule, with their rules
    summary = json.loads((local_run / "summary.json").read_text())
    listed = {(p["input"], p["flow"]): p["rules"] for p in summary["sessions_with_problems"]}
    broken: dict[tuple[str, str], set[str]] = {}
    for v in violations:
        broken.setdefault((v["input"], v["flow"]), set()).add(v["rule_id"])
    assert {k: set(v) for k, v in listed.items()} == broken
    report = (local_run / "report.txt").read_text()
    assert all(flow in report for _input, flow in listed)
    flows = {k[1]: s for k, s in sessions.items() if k[0] == inputs["paths"][1]}
    for (path, flow), s in sessions.items():
        if path == inputs["pcapng"]:
            assert s["user_messages"] == flows[flow]["user_messages"] and s["segments"] == flows[flow]["segments"]


def check_loopback(inputs: dict[str, Any], local_run: Path) -> None:
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


def check_packets(inputs: dict[str, Any], local_run: Path) -> None:
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
    # the packets are those ``msmq-harness decode`` finds in the same capture
    with redirect_stdout(io.StringIO()) as text:
        assert cli_main(["decode", "--json", anomalies_path]) == 0
    decoded = [json.loads(line) for line in text.getvalue().splitlines() if line.strip()]
    by_decode = sorted(
        (r["stream"], r["index"], r["offset"], r["kind"], bool(r.get("violations")))
        for r in decoded if "kind" in r and "index" in r
    )
    by_pipeline = sorted(
        (f"{p['flow']} {p['direction']}", p["index"], p["stream_offset"], p["kind"], bool(p["problems"])) for p in mine
    )
    assert by_pipeline == by_decode


def check_reconciliation(inputs: dict[str, Any], local_run: Path) -> None:
    summary = json.loads((local_run / "summary.json").read_text())
    by_input = {r["input"]: r for r in summary["reconciliation"]}
    bad_dir = inputs["bad_dir"]
    assert len(by_input) == 2 + 4 + 1 + 1
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


def test_pipeline_on_local2_reports_anomalies_sessions_packets_and_reconciles_every_input(
    local2: tuple[dict[str, Any], Path]
) -> None:
    inputs, out = local2  # make_inputs, then local_run: made once for the tests that compare with it
    check_anomalies(inputs, out)
    check_loopback(inputs, out)
    check_packets(inputs, out)
    check_reconciliation(inputs, out)


@pytest.mark.usefixtures("spark_local")  # its local Spark jobs run in process
def test_a_capture_cut_into_files_is_joined_back(tmp_path: Path) -> None:
    """A rotated capture: the sessions of the two halves, joined, are the sessions of the whole."""
    whole, manifest = capture(tmp_path, "whole.pcap", sessions=8, rate=0.5, seed=12)
    data = whole.read_bytes()
    offsets = record_offsets(whole)
    cut = offsets[len(offsets) // 2]
    (tmp_path / "part-1.pcap").write_bytes(data[:cut])
    (tmp_path / "part-2.pcap").write_bytes(data[:24] + data[cut:])
    out = tmp_path / "out"
    parts = [str(tmp_path / "part-1.pcap"), str(tmp_path / "part-2.pcap")]
    argv = ["pipeline", *parts, "--out", str(out), "--master", "local[2]", "--quiet", "--join-files",
            "--split-size", str(16 * 1024)]
    assert cli_main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["joined_files"] and summary["frames_read"] == len(offsets)
    whole_tables, _counts = process_local([str(whole)])  # the same functions on the uncut capture

    def without_input(rows: list[dict[str, Any]]) -> list[str]:
        return sorted(json.dumps({k: v for k, v in r.items() if k != "input"}, sort_keys=True) for r in rows)

    for name in ("sessions", "violations", "packets"):
        joined = table(out, name)
        assert joined and without_input(joined) == without_input(whole_tables[name]), name
    sessions = table(out, "sessions")
    assert len(sessions) == manifest["sessions"] and {s["input"] for s in sessions} <= set(parts)
