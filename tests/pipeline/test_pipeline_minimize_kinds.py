"""capture-to-case --minimize picks the target that reproduces what a session broke (issue 20,
item 5): for every anomaly kind ``msmq-harness synth`` injects, the command succeeds on its flow --
a session whose acceptor broke a rule is shrunk against the simulated peer behaviour that breaks
it, one whose initiator sent a packet the acceptor must discard against a peer that takes it, and
one that broke no rule is written as it is -- and the minimized case still passes against the
conformant reference."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pipeline_helpers import capture

from harness.cli import main as cli_main
from harness.pipeline.synth import ANOMALIES, SESSION_ANOMALIES
from harness.pipeline.tocase_targets import reproducing_target


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    d = tmp_path_factory.mktemp("kinds")
    return capture(d, "k.pcap", sessions=len(ANOMALIES), rate=1.0, seed=3, messages=4)


@pytest.mark.parametrize("kind", ANOMALIES)
def test_every_anomaly_kind_minimizes(
    kind: str, synthetic: tuple[Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap, manifest = synthetic
    anomaly = next(a for a in manifest["anomalies"] if a["kind"] == kind)
    out = tmp_path / "case.yaml"
    args = ["capture-to-case", str(cap), "--flow", anomaly["flow"], "--out", str(out), "--minimize"]
    assert cli_main([*args, "--step-timeout", "5"]) == 0, capsys.readouterr().err
    said = capsys.readouterr()
    case = yaml.safe_load(out.read_text())
    if kind in SESSION_ANOMALIES:
        assert "minimized in" in said.out and anomaly["section"] in said.out, said
        assert "minimizing against --target 'reference?peer=" in said.err, said.err
        target = said.err.split("--target '", 1)[1].split("'", 1)[0]
        assert cli_main(["run", str(out), "--target", target]) == 1  # still fails there
        failed = capsys.readouterr().out
        assert anomaly["section"] in failed, failed
    else:  # out-of-order, retransmitted, overlapping segments and a gap break no rule
        assert anomaly["rule"] is None
        assert "not minimized: the session broke no rule" in said.err, said.err
    assert [s for s in case["when"] if s["action"] == "send"]
    assert cli_main(["run", str(out)]) == 0  # the conformant reference passes it
    capsys.readouterr()


def test_an_unknown_rule_gets_no_made_up_target() -> None:
    choice = reproducing_target([{"rule_id": "MQQB-3.1.5.8.6-something", "direction": "server"}])
    assert choice.target is None and choice.broke
    assert "no simulated peer is known to break MQQB-3.1.5.8.6-something (acceptor)" in choice.reason
