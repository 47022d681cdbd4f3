"""The adapter protocol (docs/adapters.md): written from the registries, its example session runs
against the reference adapter, and every registry agrees with what reads it."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from harness.cases.actions import CONTROL_OPS
from harness.cases.adapterdoc import EXAMPLE, PATH, render
from harness.cases.schema import SCHEMA_PATH
from harness.cases.targets import make_target
from harness.cases.targets.command import CommandTarget
from harness.cases.targets.kind import KINDS
from harness.cases.targets.registry import target_help
from harness.cases.wirecheck import load_actions
from harness.peers import SimulatedPeer

REPO = Path(__file__).resolve().parents[2]
ADAPTER = f"{sys.executable} {REPO / 'examples' / 'reference_adapter.py'}"


def test_docs_adapters_md_is_what_the_registries_say() -> None:
    assert PATH.read_text(encoding="utf-8") == render(), "run: python -m harness.cases.adapterdoc"


def test_the_case_schema_lists_the_actions_of_the_registry() -> None:
    from harness.cases.adapterdoc import schema_text

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert sorted(schema["$defs"]["wireStep"]["properties"]["action"]["enum"]) == sorted(load_actions())
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), "run: python -m harness.cases.adapterdoc"


def test_every_control_operation_is_served_by_the_reference_sender() -> None:
    from harness.cases.targets.sender import ReferenceSender

    assert all(callable(getattr(ReferenceSender, f"_op_{op}", None)) for op in CONTROL_OPS)


def test_the_target_help_names_every_kind() -> None:
    text = target_help()
    assert {"reference", "plugin:", "cmd:", "mqqb://"} <= set(KINDS)
    assert all(kind.syntax in text for kind in KINDS.values())


def _matches(expected: Any, observed: Any) -> bool:
    if expected == "…":
        return True
    if isinstance(expected, dict):
        return (
            isinstance(observed, dict)
            and set(expected) == set(observed)
            and all(_matches(v, observed[k]) for k, v in expected.items())
        )
    if isinstance(expected, list):
        return (
            isinstance(observed, list)
            and len(expected) == len(observed)
            and all(_matches(e, o) for e, o in zip(expected, observed, strict=True))
        )
    return bool(expected == observed)


def test_the_example_session_runs_against_the_reference_adapter() -> None:
    assert "```\n" + EXAMPLE + "```" in PATH.read_text(encoding="utf-8")
    target = CommandTarget(ADAPTER, timeout=10.0)
    exchanges = re.findall(r"^> (.*)\n(?:< (.*)\n)?", EXAMPLE, re.M)
    assert len(exchanges) >= 9
    with SimulatedPeer() as peer:
        port = str(peer.address[1])
        try:
            for request_text, reply_text in exchanges:
                request = json.loads(request_text.replace("1801", port))
                if request["op"] == "bye":
                    break
                reply = target._request({k: v for k, v in request.items() if k != "id"}, start=True)
                assert _matches(json.loads(reply_text), reply), (request_text, reply)
        finally:
            target.close()
        assert peer.wait_for(lambda: len(peer.connections) >= 1, 5.0)  # the sender connected to the peer


def test_a_cmd_adapter_cannot_claim_an_acceptor_it_does_not_serve(tmp_path: Path) -> None:
    adapter = tmp_path / "claims.py"
    adapter.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    r = json.loads(line)\n"
        "    if r['op'] == 'bye': break\n"
        "    print(json.dumps({'id': r['id'], 'ok': True, 'name': 'x', 'events': [],"
        " 'capabilities': ['model', 'wire:acceptor', 'peer-behaviours', 'wire:initiator']}), flush=True)\n"
    )
    target = make_target(f"cmd:{sys.executable} {adapter}")
    try:
        assert target.hello().capabilities == ["model", "wire:initiator"]
    finally:
        target.close()


def _adapter(tmp_path: Path, body: str) -> str:
    script = tmp_path / "adapter.py"
    script.write_text("import json, sys, time\n" + body)
    return f"{sys.executable} {script}"


def test_an_unsolicited_reply_is_one_protocol_error_not_a_cascade(tmp_path: Path) -> None:
    """The adapter answers its first event twice: that event's case is fine, the next request
    gets a reply with the wrong id (one error), and a fresh adapter answers the rest in step."""
    body = (
        "for line in sys.stdin:\n"
        "    r = json.loads(line)\n"
        "    if r['op'] == 'bye': break\n"
        "    reply = {'id': r['id'], 'ok': True, 'name': 'x', 'events': [], 'result': {}}\n"
        "    print(json.dumps(reply), flush=True)\n"
        "    if r['id'] == 2:  # the first event, answered twice\n"
        "        print(json.dumps(reply), flush=True)\n"
    )
    target = CommandTarget(_adapter(tmp_path, body), timeout=5.0)
    try:
        target.hello()
        assert target.event("a", {}) == {}
        try:
            target.event("b", {})
        except Exception as e:
            assert "out of step" in str(e)
        else:
            raise AssertionError("the shifted reply was taken as an answer")
        target.setup({})  # a fresh adapter
        assert target.event("c", {}) == {}
        assert target.event("d", {}) == {}
    finally:
        target.close()


def test_a_reply_line_without_end_is_cut_at_the_limit(tmp_path: Path, monkeypatch: Any) -> None:
    import harness.cases.targets.command as command

    monkeypatch.setattr(command, "MAX_LINE", 1 << 16)
    body = "for line in sys.stdin:\n    sys.stdout.write('x' * (1 << 20)); sys.stdout.flush(); time.sleep(30)\n"
    target = CommandTarget(_adapter(tmp_path, body), timeout=5.0)
    try:
        target.hello()
    except Exception as e:
        assert "longer than 65536 bytes" in str(e)
    else:
        raise AssertionError("an endless line was accepted")
    finally:
        target.close()


def test_a_wrapper_whose_child_keeps_stdout_open_is_killed_as_a_group(tmp_path: Path) -> None:
    import time

    child = tmp_path / "child.py"
    child.write_text("import time\ntime.sleep(120)\n")
    body = (
        "import subprocess\n"
        f"subprocess.Popen([sys.executable, {str(child)!r}])  # inherits stdout, outlives us\n"
        "sys.exit(0)\n"
    )
    target = CommandTarget(_adapter(tmp_path, body), timeout=1.0)
    start = time.monotonic()
    try:
        target.hello()
    except Exception as e:
        assert "exited" in str(e) or "no reply" in str(e)
    else:
        raise AssertionError("a hello without a reply")
    finally:
        target.close()
    assert time.monotonic() - start < 10
