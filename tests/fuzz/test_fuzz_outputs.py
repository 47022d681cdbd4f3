"""``msmq-harness fuzz --out DIR`` destroys nothing it did not write (harness.outdir): DIR is written
beside its place and put there when the run ends, replacing only a previous run's output; a folder
holding a file of the user's is refused (exit 2, naming it) before any packet is sent, unless
``--force``; an interrupted run (Ctrl-C) still ends with its reports.  Real sockets on loopback
(the simulated peer, timers x0.05)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.fuzz.casefiles import run_case, write_case
from harness.fuzz.runs import Finding, FuzzOptions
from harness.outdir import MARKER
from harness.peers import SimulatedPeer

SCALE = 0.05
ROOT = Path(__file__).resolve().parents[2]


def _target(peer: SimulatedPeer) -> str:
    host, port = peer.address
    return f"mqqb://{host}:{port}?scale={SCALE}"


def test_fuzz_out_replaces_a_previous_run_and_refuses_a_users_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "findings"
    with SimulatedPeer(time_scale=SCALE, ping_port=None) as peer:
        args = ["fuzz", "--target", _target(peer), "--seed", "1", "--max-packets", "8", "--out", str(out)]
        assert main(args) == 0
        assert json.loads((out / MARKER).read_text()) == {"command": "fuzz", "files": ["report.html", "report.json"]}
        assert main(args) == 0  # the previous run's output, untouched: replaced
        assert [p.name for p in tmp_path.iterdir()] == ["findings"]  # no sibling left behind
        (out / "notes.txt").write_text("mine")
        before = (out / "report.json").read_bytes()
        capsys.readouterr()
        assert main(args) == 2
        err = capsys.readouterr().err
        assert "notes.txt" in err and "--force" in err, err
        assert (out / "notes.txt").read_text() == "mine" and (out / "report.json").read_bytes() == before
        assert main([*args, "--force"]) == 0
        assert sorted(p.name for p in out.iterdir()) == [MARKER, "report.html", "report.json"]


def test_fuzz_out_refuses_a_folder_of_someone_elses_before_any_round(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing is sent: the refusal comes before the target is even looked at."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "thesis.tex").write_text("years of work")
    assert main(["fuzz", "--target", "mqqb://127.0.0.1:9", "--out", str(tmp_path / "data")]) == 2
    err = capsys.readouterr().err
    assert "thesis.tex" in err and "fuzz" in err, err
    assert (tmp_path / "data" / "thesis.tex").read_text() == "years of work"


def test_an_interrupted_fuzz_run_ends_with_its_reports(tmp_path: Path) -> None:
    out = tmp_path / "findings"
    with SimulatedPeer(time_scale=SCALE, ping_port=None) as peer:
        command = [sys.executable, "-m", "harness.cli", "fuzz", "--target", _target(peer), "--seed", "2"]
        command += ["--duration", "60", "--rate", "20", "--out", str(out)]
        fuzz = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert fuzz.stdout is not None and fuzz.stdout.readline().startswith("fuzzing ")
            end = time.monotonic() + 30.0  # the first round began: its connection reached the peer
            while not peer.connections and time.monotonic() < end:
                time.sleep(0.05)
            assert peer.connections, "no round began within 30 s"
            fuzz.send_signal(signal.SIGINT)
            stdout, stderr = fuzz.communicate(timeout=60)
        finally:
            fuzz.kill()
    assert fuzz.returncode == 130, stderr
    report = json.loads((out / "report.json").read_text())
    assert report["stopped"] == "interrupted (Ctrl-C)" and report["rounds"] > 0
    assert "stopped: interrupted (Ctrl-C)" in stdout and (out / "report.html").is_file()


def test_a_findings_case_is_written_whole_and_named_where_the_output_goes(tmp_path: Path) -> None:
    """One writer for every finding's case (an acceptor's and a sender's): into the folder being
    written, named where it is put when the run ends."""
    stage, final = tmp_path / ".out.partial", tmp_path / "out"
    options = FuzzOptions(("127.0.0.1", 1), "mqqb://127.0.0.1:1", 5, out=stage, shown=final)
    f = Finding("fuzz-crash-1", "crash", "why", "OPEN", "UserMessage", "t", "f", "op", 3, 5, [b"x"])
    written = write_case(options, f, "# found\n", {"id": "fuzz.crash.seed5.round3", "title": "a title"})
    assert written == stage / "fuzz-crash-1-seed5.yaml" and f.case == str(final / "fuzz-crash-1-seed5.yaml")
    assert written.read_text() == "# found\nid: fuzz.crash.seed5.round3\ntitle: a title\n"
    assert [p.name for p in stage.iterdir()] == [written.name]
    outcome = run_case(options, written, "reference")  # no case: refused by the loader, naming it
    assert outcome.startswith("error: ") and f"{final}/{written.name}" in outcome and str(stage) not in outcome
