# ruff: noqa: E501  (the text of a Markdown page and of JSON lines, one line each)
"""docs/adapters.md, written from the registries so that it cannot drift from the code.

``python -m harness.cases.adapterdoc`` writes it, and the list of wire actions of
``harness/cases/case.schema.json``; a test fails when either differs from what the registries say,
and another runs the example session against the reference adapter.  Sources:
target kinds (harness.cases.targets.registry), capabilities (harness.cases.target), model events
(harness.cases.events), control operations and case actions (harness.cases.actions).
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["EXAMPLE", "PATH", "render"]

PATH = Path(__file__).resolve().parents[2] / "docs" / "adapters.md"

# The example session: requests (">") and the replies the reference adapter gives ("<"); "…" in
# a reply stands for any value, and 1801 for the port of the harness's acceptor.
EXAMPLE = """\
> {"id": 1, "op": "hello"}
< {"id": 1, "ok": true, "name": "reference", "events": "…", "capabilities": ["model", "wire:initiator", "wire:sender-ping", "adm:outgoing"]}
> {"id": 2, "op": "setup", "given": {"queues": [{"name": "q", "messages": [{"id": "m1"}, {"id": "m2", "Priority": 7}]}], "open": [{"name": "h", "queue": "q", "access": "ReceiveAccess", "share": "DenyNone"}]}}
< {"id": 2, "ok": true}
> {"id": 3, "op": "event", "event": "dequeue_message", "args": {"iQueueDesc": "h", "iTimeout": 0}}
< {"id": 3, "ok": true, "result": {"rStatus": "MQ_OK", "rMessage": "m2"}}
> {"id": 4, "op": "observe", "queues": ["q"], "cursors": []}
< {"id": 4, "ok": true, "queues": {"q": [{"message": "m1", "State": "Available", "Priority": 3, "Label": "", "AllowPeekWhenLocked": false}]}, "cursors": {}}
> {"id": 5, "op": "control", "control": "wire_setup", "args": {"host": "127.0.0.1", "port": 1801, "ping_port": null, "scale": 0.05, "window": 2, "ping": false}}
< {"id": 5, "ok": true, "result": {"scale": 0.05, "window": 2, "QueueManager.Identifier": "…", "timers": "…"}}
> {"id": 6, "op": "control", "control": "create_outgoing_queue", "args": {"name": "out", "DestinationFormatName": "DIRECT=TCP:127.0.0.1\\\\private$\\\\out", "address": {"host": "127.0.0.1", "port": 1801}}}
< {"id": 6, "ok": true, "result": {"State": "Inactive"}}
> {"id": 7, "op": "control", "control": "enqueue", "args": {"queue": "out", "message": {"id": "m1", "delivery": "recoverable", "Priority": 5}}}
< {"id": 7, "ok": true, "result": {"rStatus": "NoError", "connection_requested": true, "OutgoingMessagePosition": "…", "State": "…", "ConnectionHistory": "…"}}
> {"id": 8, "op": "control", "control": "observe_outgoing", "args": {"queues": ["out"]}}
< {"id": 8, "ok": true, "result": {"queues": {"out": {"State": "…", "ConnectionHistory": "…", "OutgoingMessagePositions": "…"}}}}
> {"id": 9, "op": "control", "control": "wire_close", "args": {}}
< {"id": 9, "ok": true, "result": {}}
> {"op": "bye"}
"""


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _args(args: dict[str, str]) -> str:
    return "; ".join(f"`{k}`: {v}" for k, v in args.items()) or "none"


def render() -> str:
    """The text of docs/adapters.md."""
    import harness.cases.targets  # noqa: F401
    from harness.cases.actions import CONTROL_OPS, load_actions
    from harness.cases.events import ARG_KINDS, spec_events
    from harness.cases.target import CAPABILITIES
    from harness.cases.targets.registry import KINDS, make_target  # noqa: F401  (imports every kind)
    from harness.cases.wireruns.base import DEFAULT_TIMER_SCALE, DEFAULT_WINDOW

    kinds = _table(("`--target`", "what it is"), [(f"`{k.syntax}`", k.summary) for k in KINDS.values()])
    capabilities = _table(("capability", "what the target can do"), [(f"`{k}`", v) for k, v in CAPABILITIES.items()])
    events = _table(
        ("event", "section", "arguments (kind of the value)"),
        [
            (
                f"`{e.name}`",
                e.section or "the reference target's own",
                ", ".join(f"`{p}`" + (f" ({ARG_KINDS[p]})" if p in ARG_KINDS else "") for p in e.parameters) or "none",
            )
            for e in sorted(spec_events().values(), key=lambda e: (e.owner == "target", e.name))
        ],
    )
    controls = _table(
        ("control", "what it does", "args", "result keys"),
        [(f"`{op.name}`", op.doc, _args(dict(op.args)), _args(dict(op.result))) for op in CONTROL_OPS.values()],
    )
    actions = _table(
        ("action", "side under test", "required", "optional", "checks unless `expect` says otherwise", "what it does"),
        [
            (
                f"`{a.name}`",
                ", ".join(sorted(a.sides)),
                _args(dict(a.required)),
                _args(dict(a.optional)),
                ", ".join(f"`{k}: {str(v).lower()}`" for k, v in a.defaults({"packet": "<packet>"}, {}).items()) or "-",
                a.doc,
            )
            for a in sorted(load_actions().values(), key=lambda a: a.name)
        ],
    )
    return f"""<!-- Written by `python -m harness.cases.adapterdoc` from the registries; do not edit by hand. -->
# The adapter protocol

An implementation is put behind the harness as a **target**. A Python implementation can be a
`plugin:` class; any other speaks the JSON-lines protocol below as a `cmd:` adapter: the
harness starts the command, writes one JSON request per line on its stdin and reads exactly one
JSON reply per line from its stdout. `examples/reference_adapter.py` is the reference
implementation behind this protocol: copy it and replace the calls into the reference.

## Target kinds

{kinds}

## Hello and capabilities

The first request is `hello`. The reply names the implementation, lists the model events it
implements (`events`; an empty list means every event) and its `capabilities`. The runner
decides from the capabilities alone which cases run; a case that needs one the target lacks is
`not_applicable`, with the missing capability and its meaning as the reason. A hello without
`capabilities` is an adapter of the model alone (`["model"]`). A `cmd:` adapter can offer
`model`, `wire:initiator`, `wire:sender-ping` and `adm:outgoing`; an acceptor is reached over TCP
(`mqqb://host:port`), not through an adapter.

{capabilities}

## Requests

| request | reply |
|---|---|
| `{{"op": "hello"}}` | `{{"ok": true, "name", "events": [...], "capabilities": [...]}}` |
| `{{"op": "setup", "given": {{...}}}}` | `{{"ok": true}}`: a fresh state built from the case's `given` (docs/cases.md), matrix values substituted |
| `{{"op": "event", "event": NAME, "args": {{...}}}}` | `{{"ok": true, "result": {{...}}}}`: the event's return values by the spec's names (`rStatus`, `rMessage`, ...), objects named as the case named them |
| `{{"op": "observe", "queues": [...], "cursors": [...]}}` | `{{"ok": true, "queues": {{q: [{{"message", "State"}}, ...]}}, "cursors": {{c: {{"CursorState", "MessagePositionReference"}}}}}}` |
| `{{"op": "control", "control": OP, "args": {{...}}}}` | `{{"ok": true, "result": {{...}}}}`: a control operation (below) |
| `{{"op": "bye"}}` | none: the adapter exits |

Every request but `bye` carries an `id` (1, 2, 3, ... for one adapter process), and its reply
MUST echo it: a reply with another `id` (an unsolicited line, or a late answer to a request that
timed out) is one protocol error: the case errs, the adapter is killed and started afresh, and the
next cases are not shifted by it. A reply line is at most 16 MiB. The adapter runs in a process
group of its own, killed as a whole (a wrapper script's children too).

A reply `{{"ok": false, "error": "...", "kind": "UndefinedBehaviour" | "Unsupported" | "Error"}}` fails
the step (or satisfies its `expect_error`); `Unsupported` to any request (an event, `setup` of a
`given` the implementation cannot build, `observe`, or a control operation such as `wire_setup`)
makes the case `unsupported`, naming the request, never `failed` or `error`. Every
request has a timeout, `--step-timeout` (10 s by default): an adapter that hangs, exits or answers
something that is not a reply is killed, the case errs with the tail of the adapter's stderr, and
the adapter is started again for the next case.

## Model events

{events}

## Control operations: a sender under test

An initiator wire case (docs/cases.md, "Wire cases") judges the implementation's sender. The
harness starts its own acceptor (the simulated peer, with the case's behaviour) on 127.0.0.1 and
sends `wire_setup` with its address: `scale` is the time scale the case asks for (the case's
`given.peer.timers`, else {DEFAULT_TIMER_SCALE:g}), `window` the WindowSize (`given.peer.window`, else
{DEFAULT_WINDOW}). The reply says what the sender runs: every wait bound of the case is computed from
the `scale` and `timers` it declares (undeclared timers take the spec's defaults, and the failure
message says so); a case that needs a `window` the sender does not run is `not_applicable`. Then
each case action is one control operation, and the sender connects to the harness by itself over
real TCP. What the case checks on the wire is what the harness's acceptor saw. Result keys marked
`adm:outgoing` are ADM state: a target without that capability leaves them out, and the
expectations on them are listed as not checked (a case with nothing else to check is
`not_applicable`).

{controls}

## Case actions

{actions}

## Example session

Requests are marked `>`, replies `<`; `…` stands for a value that varies (this session runs in
the test suite against `examples/reference_adapter.py`, 1801 replaced by the port of a simulated
peer).

```
{EXAMPLE}```
"""


def schema_text() -> str:
    """harness/cases/case.schema.json with its list of wire actions from the action registry."""
    import json

    from harness.cases.actions import load_actions
    from harness.cases.schema import SCHEMA_PATH

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    schema["$defs"]["wireStep"]["properties"]["action"]["enum"] = sorted(load_actions())
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    from harness.cases.schema import SCHEMA_PATH

    PATH.write_text(render(), encoding="utf-8")
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
    print(f"wrote {PATH} and {SCHEMA_PATH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
