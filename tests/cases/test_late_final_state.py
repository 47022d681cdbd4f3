"""A case's final state read too late to be judged is an error, not a failure ([MS-MQQB] 3.1.2.3,
harness.cases.wireruns.initiator ``_retry_opened``, ``_read_before``).

After the Session Initialization Timer closes the session (mqqb.establish.session-initialization-
timeout), a conformant sender retries once its Session Retry Connect Timer runs out (0.5 s at the
time scale of the run).  When the harness reads the final state later than that (a loaded
machine: here an adapter that answers ``observe_outgoing`` 2 s late), the retry's connection is
not the sender's fault: the case ends in an error that says so.  A sender that reconnects before
its timer allows still fails, and so does a state read wrong before the retry opened
(tests/cases/test_readings_mqqb.py, the mutant LateFailureSocketConnectFailure).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASE = "mqqb.establish.session-initialization-timeout"

# examples/reference_adapter.py (with the --sender given after the delay, if any) behind a proxy
# that answers observe_outgoing DELAY seconds late
SLOW = r"""
import json, os, subprocess, sys, time
root, delay, sender = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
here = os.path.dirname(os.path.abspath(__file__))
adapter = subprocess.Popen(
    [sys.executable, root + "/examples/reference_adapter.py", *(["--sender", *sender] if sender else [])],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
    env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)},
)
for line in sys.stdin:
    request = json.loads(line)
    if request.get("op") == "control" and request.get("control") == "observe_outgoing":
        time.sleep(delay)
    adapter.stdin.write(line)
    adapter.stdin.flush()
    if request.get("op") == "bye":
        break
    print(adapter.stdout.readline().strip(), flush=True)
adapter.stdin.close()
adapter.wait(timeout=10)
"""

# the reference sender retrying at once, though its wire_setup reply declares a 10 s timer
EAGER = r"""
import dataclasses
from harness.session.outgoing import OutgoingQueueProcessing

class Eager(OutgoingQueueProcessing):
    def __init__(self, qm, **kwargs):
        if kwargs.get("config") is not None:
            kwargs["config"] = dataclasses.replace(kwargs["config"], session_retry_connect=0.0)
        super().__init__(qm, **kwargs)
"""


def _run(tmp_path: Path, delay: float, *sender: str) -> dict[str, object]:
    script, out = tmp_path / "slow.py", tmp_path / "out.json"
    script.write_text(SLOW, encoding="utf-8")
    (tmp_path / "eager_sender.py").write_text(EAGER, encoding="utf-8")
    target = f"cmd:{sys.executable} {script} {ROOT} {delay} {' '.join(sender)}".strip()
    subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", "cases/mqqb/establish.yaml", "-k", CASE, "--target", target,
         "--json", str(out)],
        capture_output=True, text=True, timeout=300, cwd=ROOT, check=False,
    )  # fmt: skip
    (result,) = json.loads(out.read_text(encoding="utf-8"))["results"]
    return dict(result)


@pytest.mark.parametrize("delay", [0.0, 2.0])
def test_a_conformant_sender_is_never_failed_for_a_late_reading(tmp_path: Path, delay: float) -> None:
    result = _run(tmp_path, delay)
    if delay == 0.0:
        assert result["outcome"] == "passed", result
    else:
        assert result["outcome"] == "error", result
        assert "read too late to be judged" in str(result["detail"])
        assert "Session Retry Connect Timer allows" in str(result["detail"])


def test_a_sender_reconnecting_before_its_timer_allows_still_fails(tmp_path: Path) -> None:
    result = _run(tmp_path, 2.0, "eager_sender:Eager")
    assert result["outcome"] == "failed", result
    assert "peer.connections" in json.dumps(result)
