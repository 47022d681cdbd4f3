"""capture-to-case --minimize: delta debugging shrinks a replay case to the smallest one that
still fails the same expectations against the target; without --flow the command lists the
sessions that broke a rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pipeline_helpers import capture

from harness.cli import main as cli_main
from harness.pipeline.minimize import ddmin


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    d = tmp_path_factory.mktemp("minimize")
    return capture(d, "m.pcap", sessions=4, rate=0.25, seed=7, kinds=("ack-beyond-sent",), messages=12)


def test_minimized_case_is_five_times_shorter_and_fails_the_same_rule(
    synthetic: tuple[Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap, manifest = synthetic
    flow = next(a["flow"] for a in manifest["anomalies"] if a["kind"] == "ack-beyond-sent")
    full, small = tmp_path / "full.yaml", tmp_path / "small.yaml"
    # the acceptor that acknowledged more than it received, as a peer behaviour of the reference
    args = ["capture-to-case", str(cap), "--flow", flow, "--behaviour", "ack-beyond-sent"]
    assert cli_main([*args, "--out", str(full)]) == 0
    capsys.readouterr()
    assert cli_main([*args, "--out", str(small), "--minimize"]) == 0
    said = capsys.readouterr().out
    assert "minimized in" in said and "SessionHeader.AckSequenceNumber" in said, said
    before, after = yaml.safe_load(full.read_text()), yaml.safe_load(small.read_text())
    assert len(full.read_text()) >= 5 * len(small.read_text())
    assert len(after["when"]) < len(before["when"])
    assert [s for s in after["when"] if s["action"] == "send"]  # something is still replayed
    for path in (full, small):  # both fail, on the same value
        assert cli_main(["run", str(path)]) == 1
        out = capsys.readouterr().out
        assert "SessionHeader.AckSequenceNumber expected" in out, out
    after["given"]["peer"].pop("behaviour")  # and the small one passes once the fault is gone
    small.write_text(yaml.safe_dump(after, sort_keys=False))
    assert cli_main(["run", str(small)]) == 0


def test_a_session_that_broke_no_rule_is_written_unminimized(
    synthetic: tuple[Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap, manifest = synthetic
    clean = next(f["flow"] for f in manifest["flows"] if "anomaly" not in f)
    out, full = tmp_path / "c.yaml", tmp_path / "full.yaml"
    assert cli_main(["capture-to-case", str(cap), "--flow", clean, "--out", str(out), "--minimize"]) == 0
    err = capsys.readouterr().err
    assert "not minimized: the session broke no rule" in err, err
    assert cli_main(["capture-to-case", str(cap), "--flow", clean, "--out", str(full)]) == 0
    assert out.read_text() == full.read_text()  # the replay as it is: no failure to keep


def test_a_target_that_does_not_reproduce_names_the_one_that_does(
    synthetic: tuple[Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap, manifest = synthetic
    flow = next(a["flow"] for a in manifest["anomalies"] if a["kind"] == "ack-beyond-sent")
    out = tmp_path / "c.yaml"
    args = ["capture-to-case", str(cap), "--flow", flow, "--out", str(out), "--minimize", "--target", "reference"]
    assert cli_main(args) == 2
    err = capsys.readouterr().err
    assert "does not fail against the target" in err, err
    assert "use --target 'reference?peer=harness.pipeline.tocase_targets:ACK_BEYOND_SENT'" in err, err
    assert "acceptor broke MQQB-3.1.5.5.1" in err, err
    assert not out.exists()


def test_without_flow_the_sessions_that_broke_a_rule_are_listed(
    synthetic: tuple[Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    cap, manifest = synthetic
    assert cli_main(["capture-to-case", str(cap)]) == 0
    out = capsys.readouterr().out
    for a in manifest["anomalies"]:
        assert a["flow"] in out
    clean = [f["flow"] for f in manifest["flows"] if "anomaly" not in f]
    assert clean and not any(f in out for f in clean)
    assert "MQQB-3.1.5.5.1-ack-beyond-sent" in out


def test_ddmin_finds_a_one_minimal_subset() -> None:
    calls = []

    def holds(xs: list[int]) -> bool:
        calls.append(1)
        return {3, 11} <= set(xs)

    assert ddmin(list(range(16)), holds, lambda: True) == [3, 11]
    assert len(calls) < 60
    assert ddmin(list(range(16)), holds, lambda: len(calls) < 62) in ([3, 11], list(range(16)))
