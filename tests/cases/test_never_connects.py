"""A sender that never connects fails fast, and a long run says how far it is when piped.

The mutant NeverConnects (examples/mutants/sender.py: it never establishes the connection
[MS-MQQB] 3.1.7.12 requires) runs the wire cases of cases/mqqb through the reference adapter, as
the reference sender does: each case that waits for a connection ends once the Ping Response
Timer (3.1.2.9, at the sender's scale) has run out with no connection, filed under
MQQB-3.1.7.12-CONNECT, instead of after the whole wait of its step (the fault cases run their
timers unscaled: 38 to 45 s each before).  Both runs are piped: the heartbeat shows on standard
error.  Both use four workers (``-n 4``) and run side by side: the cases mostly wait on timers.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from harness.cases.mutants import target_of

ROOT = Path(__file__).resolve().parents[2]
ADAPTER = ROOT / "examples" / "reference_adapter.py"


def _start(target: str, report: Path) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "harness.cli", "run", "cases/mqqb", "-n4", "--target", target, "--json", report]
    return subprocess.Popen(
        [*map(str, command), "--heartbeat", "2"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _finish(proc: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    try:
        stdout, stderr = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def test_a_never_connecting_sender_fails_at_the_first_timer_that_proves_it(tmp_path: Path) -> None:
    reference = f"cmd:{sys.executable} {ADAPTER} --no-adm"  # the same adapter, the reference sender
    mutant = target_of("examples.mutants.sender:NeverConnects")
    # side by side: both runs mostly wait on timers, and nothing below reads a run's wall time
    runs = [_start(reference, tmp_path / "reference.json"), _start(mutant, tmp_path / "mutant.json")]
    try:
        done = _finish(runs[0])
    finally:
        mutant_done = _finish(runs[1])
    if done.returncode != 0:
        results = json.loads((tmp_path / "reference.json").read_text(encoding="utf-8"))["results"]
        bad = [(r["case_id"], r["detail"]) for r in results if r["outcome"] in ("failed", "error", "non_strict")]
        raise AssertionError(bad[:5])
    done = mutant_done
    assert done.returncode == 1, done.stderr[-2000:]
    # How fast is read from each case (below), never from the two runs' wall times: the load of the
    # machine changes between them (67 s against 28 s was seen on two loaded cores)

    # piped output: a heartbeat line every 2 s on standard error
    beats = re.findall(r"^msmq-harness: (\d+)/(\d+) cases done, (\d+) failed, \d+ s$", done.stderr, re.M)
    assert len(beats) >= 3 and all(total == "110" for _, total, _ in beats)
    assert [int(d) for d, _, _ in beats] == sorted(int(d) for d, _, _ in beats)

    results = json.loads((tmp_path / "mutant.json").read_text(encoding="utf-8"))["results"]
    never = [r for r in results if "the sender never connected" in r["detail"]]
    assert len(never) > 40
    for r in never:
        assert r["outcome"] == "failed"
        (failure,) = r["failures"]
        assert failure["requirement"] == "MQQB-3.1.7.12-CONNECT" and failure["level"] == "MUST"
        assert (failure["field"], failure["expected"], failure["observed"]) == ("connections", 1, 0)
        assert "the Ping Response Timer" in failure["message"]
        bound = float(re.search(r"= ([\d.]+) s\)?$", failure["message"]).group(1))
        assert bound <= 1.75  # PingResponse, 1 s at scale 1 at most, +25% +0.5 s
    faults = {r["case_id"]: r for r in never if r["case_id"].startswith("mqqb.fault.")}
    assert len(faults) >= 7  # the unscaled fault cases: cut at 1.75 s, not at their 38-45 s wait
    assert all(r["duration"] < 10 for r in faults.values()), {k: r["duration"] for k, r in faults.items()}
