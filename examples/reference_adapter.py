#!/usr/bin/env python3
"""The reference implementation behind the JSON-lines adapter protocol of docs/adapters.md.

Run as ``--target "cmd:python examples/reference_adapter.py"``: it reads one JSON request per
line on stdin and writes one JSON reply per line on stdout, a thin loop over
``harness.cases.targets.reference.ReferenceTarget``: the [MS-MQDMPR] model (``setup``,
``event``, ``observe``) and the [MS-MQQB] sender (``control``: the sender connects to the
harness's acceptor over TCP from this process).  ``--sender pkg.mod:Class`` runs an
OutgoingQueueProcessing subclass as the sender; ``--no-adm`` reports no ADM state, so that the
sender is judged on the wire alone.  Copy it to put another implementation behind the harness:
replace the target's ``setup``, ``event``, ``observe`` and ``control`` with calls into that
implementation.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the harness, when run from a checkout

from harness.cases.target import TargetError
from harness.cases.targets.reference import ReferenceTarget

SERVED = ("model", "wire:initiator", "wire:sender-ping", "adm:outgoing")


def handle(target: ReferenceTarget, request: dict[str, Any]) -> dict[str, Any] | None:
    """One request -> its reply, which echoes the request's ``id`` (None for ``bye``)."""
    reply = _answer(target, request)
    if reply is not None and "id" in request:
        reply = {"id": request["id"], **reply}
    return reply


def _answer(target: ReferenceTarget, request: dict[str, Any]) -> dict[str, Any] | None:
    op = request.get("op")
    try:
        if op == "hello":
            info = target.hello()
            served = [c for c in info.capabilities if c in SERVED]  # the acceptor is not behind this adapter
            return {"ok": True, "name": info.name, "events": info.events, "capabilities": served}
        if op == "setup":
            target.setup(request.get("given") or {})
            return {"ok": True}
        if op == "event":
            return {"ok": True, "result": target.event(str(request.get("event")), request.get("args") or {})}
        if op == "control":
            return {"ok": True, "result": target.control(str(request.get("control")), request.get("args") or {})}
        if op == "observe":
            return {"ok": True, **target.observe(request.get("queues") or [], request.get("cursors") or [])}
        if op == "bye":
            return None
        return {"ok": False, "kind": "Unsupported", "error": f"unknown op {op!r}"}
    except TargetError as e:
        return {"ok": False, "kind": e.kind, "error": e.message}
    except Exception as e:  # a bug here must not kill the adapter
        return {"ok": False, "kind": "Error", "error": f"{type(e).__name__}: {e}"}


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sender", metavar="pkg.mod:Class", help="an OutgoingQueueProcessing subclass as the sender")
    parser.add_argument("--no-adm", action="store_true", help="report no ADM state (judged on the wire alone)")
    options = parser.parse_args(argv)
    sender = None
    if options.sender:
        from harness.cases.targets.plugin import load_plugin_class

        sender = load_plugin_class(options.sender)
    target = ReferenceTarget(sender_class=sender, report_adm=not options.no_adm)
    for line in sys.stdin:
        if not line.strip():
            continue
        request: Any = None
        try:
            request = json.loads(line)
        except ValueError as e:
            reply: dict[str, Any] | None = {"ok": False, "kind": "Error", "error": f"not JSON: {e}"}
        else:
            reply = (
                handle(target, request)
                if isinstance(request, dict)
                else {"ok": False, "kind": "Error", "error": "a request is a JSON object"}
            )
        if reply is None:
            break
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    target.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
