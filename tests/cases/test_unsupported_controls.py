"""An honest partial sender: ``Unsupported`` to a control operation makes the case unsupported.

A ``cmd:`` adapter that offers ``wire:initiator`` and answers every control operation with
``{"ok": false, "kind": "Unsupported"}`` runs the [MS-MQQB] corpus: every initiator case is
``unsupported`` (naming the operation), every other case ``not_applicable``, nothing failed or
erred, and ``run`` exits 5 (nothing ran).  A model adapter that cannot build a ``given`` it does
not implement answers ``setup`` the same way: the case is ``unsupported``, not an error.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "harness.cli"]

ADAPTER = r'''
import json, sys
CAPABILITIES = sys.argv[1].split(",")
for line in sys.stdin:
    request = json.loads(line)
    op = request.get("op")
    if op == "bye":
        break
    if op == "hello":
        reply = {"ok": True, "name": "partial", "events": ["dequeue_message"], "capabilities": CAPABILITIES}
    else:
        what = request.get("control") or op
        reply = {"ok": False, "kind": "Unsupported", "error": f"{what} is not implemented"}
    reply["id"] = request.get("id")
    print(json.dumps(reply), flush=True)
'''


def _run(tmp_path: Path, cases: str, capabilities: str) -> tuple[int, list[dict]]:
    script = tmp_path / "partial.py"
    script.write_text(ADAPTER, encoding="utf-8")
    out = tmp_path / "out.json"
    done = subprocess.run(
        [*CLI, "run", cases, "--target", f"cmd:{sys.executable} {script} {capabilities}", "--json", str(out)],
        capture_output=True, text=True, timeout=300, cwd=ROOT, check=False,
    )  # fmt: skip
    return done.returncode, json.loads(out.read_text(encoding="utf-8"))["results"]


def test_a_sender_that_implements_no_control_operation_gets_only_unsupported(tmp_path: Path) -> None:
    status, results = _run(tmp_path, "cases/mqqb", "wire:initiator")
    outcomes = {r["outcome"] for r in results}
    assert outcomes == {"unsupported", "not_applicable"}, outcomes
    assert status == 5
    unsupported = [r for r in results if r["outcome"] == "unsupported"]
    assert unsupported and all("is not implemented" in r["detail"] for r in unsupported)


def test_setup_answered_unsupported_makes_the_case_unsupported(tmp_path: Path) -> None:
    status, results = _run(tmp_path, "cases/mqdmpr/dequeue/dequeue_message.yaml", "model")
    dequeue_only = [r for r in results if r["outcome"] != "unsupported"]
    assert all(r["outcome"] == "unsupported" for r in results), dequeue_only
    assert any("setup" in r["detail"] and "is not implemented" in r["detail"] for r in results)
    assert status == 5
