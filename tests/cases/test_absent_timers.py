"""Honest partial implementations: a sender that declares a timer absent, and what a hello's
``events`` means.

A sender whose wire_setup reply says ``"timers": {"SessionRetryConnect": null}`` does not retry
a failed connection ([MS-MQQB] 3.1.2.3): every case whose waits are bounded by that timer (the
retry cases) is ``unsupported``, naming the timer, and no case gets anything worse than the
sender that runs the timer gets.  A hello's ``events`` absent is every event, ``[]`` none
(harness.cases.target.hello_events).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cases.loader import load_paths
from harness.cases.target import TargetInfo, hello_events
from harness.cases.wireruns.base import WireCaseError, absent_timers
from harness.cases.wiretimers import bound_timers

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "harness.cli"]
FILES = ("cases/mqqb/establish.yaml", "cases/mqqb/faults.yaml")

# examples/reference_adapter.py behind a proxy whose sender declares no Session Retry Connect Timer;
# its sender (NO_RETRY_SENDER) indeed does not retry within a run, so what it declares is true
NO_RETRY = r"""
import json, os, subprocess, sys
here = os.path.dirname(os.path.abspath(__file__))
adapter = subprocess.Popen(
    [sys.executable, sys.argv[1] + "/examples/reference_adapter.py", "--sender", "no_retry_sender:NoRetry"],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
    env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)},
)
for line in sys.stdin:
    request = json.loads(line)
    adapter.stdin.write(line)
    adapter.stdin.flush()
    if request.get("op") == "bye":
        break
    reply = json.loads(adapter.stdout.readline())
    if request.get("op") == "control" and request.get("control") == "wire_setup" and reply.get("ok"):
        result = reply["result"]
        result["timers"] = {**(result.get("timers") or {}), "SessionRetryConnect": None}
    print(json.dumps(reply), flush=True)
adapter.stdin.close()
adapter.wait(timeout=10)
"""

# the reference sender with a Session Retry Connect Timer of a day: no retry within a run
NO_RETRY_SENDER = r"""
import dataclasses
from harness.session.outgoing import OutgoingQueueProcessing

class NoRetry(OutgoingQueueProcessing):
    def __init__(self, qm, **kwargs):
        if kwargs.get("config") is not None:
            kwargs["config"] = dataclasses.replace(kwargs["config"], session_retry_connect=86400.0)
        super().__init__(qm, **kwargs)
"""


def test_a_sender_without_the_retry_timer_gets_unsupported_on_the_retry_cases_and_nothing_worse(
    tmp_path: Path,
) -> None:
    script, out = tmp_path / "no_retry.py", tmp_path / "out.json"
    script.write_text(NO_RETRY, encoding="utf-8")
    (tmp_path / "no_retry_sender.py").write_text(NO_RETRY_SENDER, encoding="utf-8")
    target = f"cmd:{sys.executable} {script} {ROOT}"
    done = subprocess.run(
        [*CLI, "run", *FILES, "--target", target, "--json", str(out), "-n", "4"],
        capture_output=True, text=True, timeout=600, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    results = {r["case_id"]: r for r in json.loads(out.read_text(encoding="utf-8"))["results"]}
    cases = load_paths([ROOT / f for f in FILES])
    retry = {c.full_id for c in cases if "SessionRetryConnect" in bound_timers(c.when)}
    assert retry, "the retry cases wait within SessionRetryConnect"
    unsupported = {cid for cid, r in results.items() if r["outcome"] == "unsupported"}
    assert unsupported == retry
    for cid in unsupported:
        assert "SessionRetryConnect" in results[cid]["detail"] and "absent" in results[cid]["detail"]
    worse = {cid: r["outcome"] for cid, r in results.items() if r["outcome"] in ("failed", "error")}
    assert not worse, worse


def test_only_the_senders_own_timers_can_be_absent() -> None:
    assert absent_timers({"SessionRetryConnect": None, "SessionInitialization": 5}) == ["SessionRetryConnect"]
    with pytest.raises(WireCaseError, match="AckWaitTimeout cannot be null"):
        absent_timers({"AckWaitTimeout": None})
    with pytest.raises(WireCaseError, match="SessionAckSend"):
        absent_timers({"SessionAckSend": None})  # the acceptor's timer


def test_bound_timers_name_where_each_timer_bounds_a_wait() -> None:
    (case,) = [c for c in load_paths([ROOT / "cases/mqqb/establish.yaml"]) if c.id == "mqqb.establish.connect-retry"]
    where = bound_timers(case.when)["SessionRetryConnect"]
    assert where and where[0].startswith("step ") and "within 2 * SessionRetryConnect" in where[0]


def test_hello_events_absent_is_every_event_and_an_empty_list_none() -> None:
    assert hello_events({"ok": True}) is None
    assert hello_events({"ok": True, "events": None}) is None
    assert hello_events({"ok": True, "events": []}) == []
    assert hello_events({"ok": True, "events": ["dequeue_message"]}) == ["dequeue_message"]
    with pytest.raises(ValueError, match="list of event names"):
        hello_events({"events": "dequeue_message"})
    assert TargetInfo("all").lacks(["peek_message", "peek_message"]) == []
    assert TargetInfo("none", []).lacks(["peek_message", "peek_message"]) == ["peek_message"]
    assert TargetInfo("one", ["dequeue_message"]).lacks(["dequeue_message", "peek_message"]) == ["peek_message"]
