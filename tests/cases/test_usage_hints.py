"""Hints where a user or a vendor gets something slightly wrong (issue 20, item 6): did-you-mean
for a mistyped target kind (``msmq-harness run`` and the pytest plugin's ``--msmq-target``) and
for a case path that does not exist (``\\`` separators get "use /"), the README naming every
subcommand of the CLI, and a ``cmd:`` adapter that prints something other than a reply on its
standard output told that standard output is reserved for replies."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pytest

from harness.cases.execute import ConfigurationError, open_target
from harness.cases.loader import load_text
from harness.cases.runner import run
from harness.cases.targets.registry import did_you_mean, make_target
from harness.cli import build_parser, main
from harness.results import Outcome
from tests.cases.casekit import plugin_args, write_cases

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]


# ============================================================================ target kinds
@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("refrence", "reference"),
        ("Reference", "reference"),
        ("referenc?peer=bad-signature", "reference?peer=bad-signature"),
        ("cmd ./adapter --jsonl", "cmd:./adapter --jsonl"),
        ("command:./adapter", "cmd:./adapter"),
        ("plugn:vendor.qm:QueueManager", "plugin:vendor.qm:QueueManager"),
        ("mqqb:127.0.0.1:1801", "mqqb://127.0.0.1:1801"),
        ("mqq://127.0.0.1:1801", "mqqb://127.0.0.1:1801"),
        ("python adapter.py", "cmd:python adapter.py"),
    ],
)
def test_a_mistyped_target_kind_gets_the_value_it_probably_meant(typed: str, meant: str) -> None:
    assert did_you_mean(typed) == meant
    with pytest.raises(ValueError, match=re.escape(f"(did you mean {meant!r}?)")):
        make_target(typed)


def test_a_target_value_near_no_kind_gets_no_guess() -> None:
    assert did_you_mean("xyzzy") == ""
    with pytest.raises(ValueError) as e:
        make_target("xyzzy")
    assert "did you mean" not in str(e.value) and "expected cmd:" in str(e.value)
    with pytest.raises(ConfigurationError, match=re.escape("(did you mean 'reference'?)")):
        open_target("refrence", 1.0)


def test_run_with_a_mistyped_target_exits_2_with_the_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(REPO / "cases" / "mqdmpr"), "-k", "purge", "--target", "refrence"]) == 2
    err = capsys.readouterr().err
    assert "unknown target 'refrence' (did you mean 'reference'?)" in err


def test_the_plugin_target_option_suggests_the_kind(pytester: pytest.Pytester) -> None:
    write_cases(pytester.path)
    result = pytester.runpytest(*plugin_args(), "--msmq-target=refrence?peer=bad-signature")
    assert result.ret == 2
    result.stdout.fnmatch_lines(
        ["*unknown target 'refrence?peer=bad-signature' (did you mean 'reference?peer=bad-signature'?)*"]
    )


# ============================================================================== case paths
@pytest.mark.parametrize(
    ("typed", "hint"),
    [
        ("cases\\mqdmpr", "cases\\mqdmpr (use / between folders: cases/mqdmpr)"),
        ("cases\\mqdmpr\\seek", "(use / between folders: cases/mqdmpr/seek)"),
        ("cases\\mqdmp", "(use / between folders: did you mean cases/mqdmpr?)"),
        ("cases/mqdmp", "cases/mqdmp (did you mean cases/mqdmpr?)"),
        ("cazes/mqdmpr/sek", "(did you mean cases/mqdmpr/seek?)"),
    ],
)
def test_a_missing_case_path_gets_a_hint(
    typed: str, hint: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    assert main(["run", typed, "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("msmq-harness run: no such file or folder: ")
    assert hint in err


def test_a_missing_path_near_nothing_gets_no_guess(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    assert main(["run", "cases/no-such-thing-at-all", "--dry-run"]) == 2
    assert capsys.readouterr().err == "msmq-harness run: no such file or folder: cases/no-such-thing-at-all\n"


# ================================================================================== README
def test_the_readme_command_list_names_every_subcommand() -> None:
    parser = build_parser()
    (subs,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    (row,) = [line for line in readme.splitlines() if line.startswith("| command line |")]
    listed = re.search(r"`msmq-harness ([^`]*)`", row)
    assert listed is not None, row
    named = {word.strip() for word in listed.group(1).split("/")}
    assert set(subs.choices) <= named, f"README.md's command list lacks {sorted(set(subs.choices) - named)}"
    assert named <= set(subs.choices), f"README.md's command list names {sorted(named - set(subs.choices))}"


# ========================================================================= adapter stdout
CHATTY_ADAPTER = """\
import json, sys
for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "event" and req["event"] == "purge_queue":
        print("debug: purging", req["args"], flush=True)  # a debug line on stdout
        continue
    if req["op"] == "event" and req["event"] == "close_queue":
        print(42, flush=True)  # JSON, but no reply
        continue
    if req["op"] == "hello":
        reply = {"ok": True, "name": "chatty", "events": ["purge_queue", "close_queue"]}
    elif req["op"] == "observe":
        reply = {"ok": True, "queues": {q: [] for q in req["queues"]}, "cursors": {}}
    else:
        reply = {"ok": True, "result": {}}
    print(json.dumps({"id": req.get("id"), **reply}), flush=True)
"""

REQUIREMENTS = """\
- id: R-PURGE
  section: MS-MQDMPR 3.1.7.1.7
  level: MUST
  quote: >-
    If iMessagePosition.State is not Available: Set iMessagePosition.State to PurgePending.
"""


def test_a_line_on_stdout_that_is_no_reply_says_stdout_is_for_replies(tmp_path: Path) -> None:
    adapter = tmp_path / "chatty.py"
    adapter.write_text(CHATTY_ADAPTER, encoding="utf-8")
    requirements = tmp_path / "requirements.yaml"
    requirements.write_text(REQUIREMENTS, encoding="utf-8")
    cases = []
    for event, args in (("purge_queue", "{iQueue: q}"), ("close_queue", "{iQueueDesc: h}")):
        text = (
            f"id: t.{event}\ntitle: {event}\nspec:\n  - {{section: MS-MQDMPR 3.1.7.1.7, requirement: R-PURGE}}\n"
            "given:\n  queues: [{name: q}]\n  open: [{name: h, queue: q}]\n"
            f"when:\n  - event: {event}\n    args: {args}\n"
        )
        cases += load_text(text, str(tmp_path / f"{event}.yaml"))  # requirements.yaml beside it
    result = run(cases, f"cmd:{sys.executable} {adapter}", step_timeout=5.0)
    details = {r.case_id: r.detail for r in result.results}
    assert [r.outcome for r in result.results] == [Outcome.error, Outcome.error]
    assert "the reply is not JSON: \"debug: purging {'iQueue': 'q'}\"" in details["t.purge_queue"]
    assert "no boolean 'ok': '42'" in details["t.close_queue"]
    for detail in details.values():
        assert "standard output is reserved for its JSON replies" in detail
        assert "write debug output to standard error" in detail
