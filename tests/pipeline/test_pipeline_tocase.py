"""capture-to-case: a wire case replaying a captured session fails against the simulated peer for
the reason the session broke a rule, and passes once the peer behaviour that caused it is gone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pipeline_helpers import capture

from harness.cli import main as cli_main


def flows_by_kind(manifest: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for a in manifest["anomalies"]:
        out.setdefault(a["kind"], a["flow"])
    out["clean"] = next(f["flow"] for f in manifest["flows"] if "anomaly" not in f)
    return out


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    d = tmp_path_factory.mktemp("tocase")
    path, manifest = capture(d, "c.pcap", sessions=6, rate=0.5, seed=4, kinds=("bad-signature", "packet-size"))
    return path, flows_by_kind(manifest)


def make_case(tmp_path: Path, cap: Path, flow: str, *extra: str) -> Path:
    out = tmp_path / "case.yaml"
    assert cli_main(["capture-to-case", str(cap), "--flow", flow, "--out", str(out), *extra]) == 0
    return out


def test_case_from_a_bad_signature_session_fails_on_the_signature_then_passes_without_the_fault(
    synthetic: tuple[Path, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap, flows = synthetic
    case_path = make_case(tmp_path, cap, flows["bad-signature"], "--behaviour", "bad-signature")
    case = yaml.safe_load(case_path.read_text())
    assert case["given"]["peer"] == {"under_test": "acceptor", "behaviour": "bad-signature"}
    assert "MQQB-3.1.5.1.2-signature" in case["title"]
    assert any(s["section"] == "MS-MQQB 3.1.5.1.2" for s in case["spec"])
    capsys.readouterr()
    assert cli_main(["run", str(case_path)]) == 1
    out = capsys.readouterr().out
    assert "BaseHeader.Signature expected 0x524F494C (1380927820), observed 0x4C494F52 (1279872850)" in out
    del case["given"]["peer"]["behaviour"]
    case_path.write_text(yaml.safe_dump(case, sort_keys=False))
    assert cli_main(["run", str(case_path)]) == 0


def test_case_from_a_malformed_initiator_packet_expects_the_close(
    synthetic: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    cap, flows = synthetic
    case_path = make_case(tmp_path, cap, flows["packet-size"])
    case = yaml.safe_load(case_path.read_text())
    actions = [(s["action"], s["args"].get("packet")) for s in case["when"]]
    assert actions[:4] == [("send", "EstablishConnection"), ("receive", "EstablishConnection"),
                           ("send", "ConnectionParameters"), ("receive", "ConnectionParameters")]
    assert actions[-2] == ("send", "raw") and case["when"][-1]["expect"] == {"closed": True}
    assert "MQQB-3.1.5.1.3-malformed" in case["title"]
    assert cli_main(["run", str(case_path)]) == 0


def test_clean_session_case_passes_and_unknown_flow_is_an_error(
    synthetic: tuple[Path, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap, flows = synthetic
    case_path = make_case(tmp_path, cap, flows["clean"])
    case = yaml.safe_load(case_path.read_text())
    assert "broke no rule" in case["title"]
    assert sum(1 for s in case["when"] if s["args"].get("packet") == "raw") >= 8  # the UserMessages
    assert cli_main(["run", str(case_path)]) == 0
    assert cli_main(["capture-to-case", str(cap), "--flow", "1.2.3.4:1-5.6.7.8:1801/tcp",
                     "--out", str(tmp_path / "x.yaml")]) == 2
    assert "no TCP flow" in capsys.readouterr().err
