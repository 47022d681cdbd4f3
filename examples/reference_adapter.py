#!/usr/bin/env python3
"""The reference [MS-MQDMPR] model behind the JSON-lines target protocol of docs/cases.md.

Run as ``python examples/reference_adapter.py`` (or ``--target "cmd:python
examples/reference_adapter.py"``): it reads one JSON request per line on stdin and writes one
JSON reply per line on stdout, a thin loop over ``harness.cases.targets.reference.
ReferenceTarget``.  Copy it to put another implementation behind the harness: replace the
target's ``setup``, ``event`` and ``observe`` with calls into that implementation.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the harness, when run from a checkout

from harness.cases.target import TargetError
from harness.cases.targets.reference import ReferenceTarget


def handle(target: ReferenceTarget, request: dict[str, Any]) -> dict[str, Any] | None:
    """One request -> its reply (None for ``bye``)."""
    op = request.get("op")
    try:
        if op == "hello":
            info = target.hello()
            return {"ok": True, "name": info.name, "events": info.events, "capabilities": info.capabilities}
        if op == "setup":
            target.setup(request.get("given") or {})
            return {"ok": True}
        if op == "event":
            return {"ok": True, "result": target.event(str(request.get("event")), request.get("args") or {})}
        if op == "observe":
            return {"ok": True, **target.observe(request.get("queues") or [], request.get("cursors") or [])}
        if op == "bye":
            return None
        return {"ok": False, "kind": "Unsupported", "error": f"unknown op {op!r}"}
    except TargetError as e:
        return {"ok": False, "kind": e.kind, "error": e.message}
    except Exception as e:  # a bug here must not kill the adapter
        return {"ok": False, "kind": "Error", "error": f"{type(e).__name__}: {e}"}


def main() -> int:
    target = ReferenceTarget()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError as e:
            reply: dict[str, Any] | None = {"ok": False, "kind": "Error", "error": f"not JSON: {e}"}
        else:
            reply = handle(target, request) if isinstance(request, dict) else {
                "ok": False, "kind": "Error", "error": "a request is a JSON object"}
        if reply is None:
            break
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    target.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
