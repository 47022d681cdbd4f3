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
from tests.cases.reference_proxy import proxy_target

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "harness.cli"]
FILES = ("cases/mqqb/establish.yaml", "cases/mqqb/faults.yaml")

# the reference sender behind a proxy that declares no Session Retry Connect Timer in its wire_setup
# reply; the sender's timer set to a day, it indeed does not retry within a run, as it declares
NO_RETRY = {"wire_setup": {"timers": {"SessionRetryConnect": None}}}


def test_a_sender_without_the_retry_timer_gets_unsupported_on_the_retry_cases_and_nothing_worse(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out.json"
    target = proxy_target(tmp_path, retry=86400.0, edit=NO_RETRY)
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
