# ruff: noqa: E501  (the text of a Markdown page and of JSON lines, one line each)
"""docs/adapters.md, written from the registries so that it cannot drift from the code.

``python -m harness.cases.adapterdoc`` writes it, and the list of wire actions of
``harness/cases/case.schema.json``; a test fails when either differs from what the registries say,
and another runs the example session against the reference adapter.  Sources:
target kinds (harness.cases.targets.registry), capabilities (harness.cases.target), model events
(harness.cases.events), control operations and case actions (harness.cases.actions).
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Any

import harness.cases.targets  # noqa: F401  (imports every target kind)
from harness.cases.actions import CONTROL_OPS
from harness.cases.events import HARNESS_OPERATIONS, VALUE_KINDS, argument_kind, event_results, spec_events
from harness.cases.schema import SCHEMA_PATH
from harness.cases.target import CAPABILITIES
from harness.cases.targets.command import MAX_LINE
from harness.cases.targets.kind import KINDS
from harness.cases.wirecheck import load_actions
from harness.cases.wireruns.base import DEFAULT_TIMER_SCALE, DEFAULT_WINDOW
from harness.model import Message, OutgoingQueue, Queue, QueueManager
from harness.model.enums import (
    CursorState,
    CursorStatus,
    DirectoryOperationResult,
    EnqueueStatus,
    MessagePositionState,
    MQStatus,
)
from harness.session.attributes import ACKNOWLEDGMENTS, ENCRYPTION_ALGORITHMS, HASH_ALGORITHMS, PRIVACY_LEVELS

__all__ = ["EXAMPLE", "HARNESS_EXAMPLE", "PATH", "render", "vocabulary"]

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


# A worked exchange of every harness operation (docs/adapters.md, "Harness operations"); a test
# runs it against the reference adapter.  ``"…": "…"`` in a reply object stands for its other
# members.
HARNESS_EXAMPLE = """\
> {"id": 1, "op": "hello"}
< {"id": 1, "ok": true, "name": "reference", "events": "…", "capabilities": "…"}
> {"id": 2, "op": "setup", "given": {"queues": [{"name": "q"}, {"name": "out", "DestinationFormatName": "DIRECT=TCP:192.0.2.1\\\\private$\\\\remote"}], "open": [{"name": "h", "queue": "q"}]}}
< {"id": 2, "ok": true}
> {"id": 3, "op": "event", "event": "dequeue_message", "args": {"iQueueDesc": "h", "iTimeout": 5}}
< {"id": 3, "ok": true, "result": {"rPending": "read1"}}
> {"id": 4, "op": "event", "event": "advance_clock", "args": {"seconds": 4}}
< {"id": 4, "ok": true, "result": {"rFired": 0}}
> {"id": 5, "op": "event", "event": "read_result", "args": {"iReader": "read1"}}
< {"id": 5, "ok": true, "result": {"rPending": "read1"}}
> {"id": 6, "op": "event", "event": "advance_clock", "args": {"seconds": 2}}
< {"id": 6, "ok": true, "result": {"rFired": 1}}
> {"id": 7, "op": "event", "event": "read_result", "args": {"iReader": "read1"}}
< {"id": 7, "ok": true, "result": {"rStatus": "MQ_ERROR_IO_TIMEOUT"}}
> {"id": 8, "op": "event", "event": "peek_message", "args": {"iQueueDesc": "h", "iTimeout": 10}}
< {"id": 8, "ok": true, "result": {"rPending": "read2"}}
> {"id": 9, "op": "event", "event": "enqueue_message", "args": {"iQueue": "q", "iMessage": {"id": "m1"}}}
< {"id": 9, "ok": true, "result": {"rStatus": "NoError"}}
> {"id": 10, "op": "event", "event": "read_result", "args": {"iReader": "read2"}}
< {"id": 10, "ok": true, "result": {"rStatus": "MQ_OK", "rMessage": "m1"}}
> {"id": 11, "op": "event", "event": "fire_due_timers", "args": {}}
< {"id": 11, "ok": true, "result": {"rFired": 0}}
> {"id": 12, "op": "event", "event": "pause_queue", "args": {"iQueue": "out"}}
< {"id": 12, "ok": true, "result": {}}
> {"id": 13, "op": "event", "event": "queue_attributes", "args": {"iQueue": "out"}}
< {"id": 13, "ok": true, "result": {"State": "OnHold", "Multicast": false, "Quota": 4294967295, "Active": false, "MessageCount": 0, "…": "…"}}
> {"op": "bye"}
"""


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _args(args: dict[str, str]) -> str:
    return "; ".join(f"`{k}`: {v}" for k, v in args.items()) or "none"


# ------------------------------------------------------------------------------ vocabulary
def _enum_names(enum: Any) -> list[str]:
    return list(enum.__members__)


def _queue_attributes() -> dict[str, str]:
    """ADM attribute name -> kind and default, of a Queue as Set Queue Defaults leaves it and of
    an OutgoingQueue (3.1.1.2, 3.1.1.3): what a queue of `given` may set."""
    qm = QueueManager()
    out: dict[str, str] = {}
    for cls in (Queue, OutgoingQueue):
        q = qm.new_queue(cls, "")
        if cls is Queue:
            qm.set_queue_defaults(q)
        for key, value in vars(q).items():
            if not key[:1].isupper() or key in out:
                continue
            if isinstance(value, Enum):
                out[key] = (
                    f"{type(value).__name__}: one of {', '.join(_enum_names(type(value)))} (default {value.name})"
                )
            elif isinstance(value, bool):
                out[key] = f"boolean (default {str(value).lower()})"
            elif isinstance(value, int):
                out[key] = f"integer (default {value})"
            elif isinstance(value, str):
                out[key] = f"text (default {value!r})"
    out["Pathname"] = "text (default `LOCALHOST\\private$\\<name>` for a local queue)"
    out["DestinationFormatName"] = "text: an [MS-MQMQ] 2.1 format name; makes the queue an OutgoingQueue (3.1.1.3)"
    out["Quota"] = "integer: kilobytes (1024 bytes): the most the queue's messages may hold (default 4294967295)"
    out["JournalQuota"] = "integer: kilobytes (default 4294967295)"
    return dict(sorted(out.items()))


def _message_attributes() -> dict[str, tuple[str, str]]:
    """Message ADM attribute (3.1.1.12) -> (its form in `given` and event arguments, its form in
    a control operation's `message`)."""
    m = Message()
    names = [n for n in dir(m) if n[:1].isupper() and not callable(getattr(m, n))]
    skip = {"Identifier", "LookupIdentifier", "MessagePositionReference", "ArrivalTime", "TransactionIdentifier"}
    out: dict[str, tuple[str, str]] = {}
    for name in sorted(set(names) - skip):
        out[name] = _named_form(name) or _typed_form(name, getattr(m, name))
    out["Label"] = (out["Label"][0], "text (default: the message's id)")
    out["DeliveryGuarantee"] = (
        out["DeliveryGuarantee"][0],
        "not sent: `delivery` (express | recoverable | transactional) says it",
    )
    return out


def _named_form(name: str) -> tuple[str, str] | None:
    """The forms of the attributes written otherwise than their type says (None: by their type)."""
    one = {
        "HashAlgorithm": f"text: one of {', '.join(HASH_ALGORITHMS)} (default SHA1)",
        "EncryptionAlgorithm": f"text: one of {', '.join(ENCRYPTION_ALGORITHMS)} (default RC4)",
        "PrivacyLevel": f"text: one of {', '.join(PRIVACY_LEVELS)} (default None)",
        "AcknowledgementsRequested": f"list of text, each one of {', '.join(ACKNOWLEDGMENTS)} (default: empty)",
        "CorrelationIdentifier": "[GUID text, integer]: the GUID and the sequence number (default: the null GUID, 0)",
    }
    if name == "Body":
        return (
            "text: its UTF-8 encoding is the body (default: empty)",
            "text: its UTF-8 encoding is the body (default: the message's id)",
        )
    return (one[name],) * 2 if name in one else None


def _typed_form(name: str, value: Any) -> tuple[str, str]:
    """The forms of an attribute by the type of its default ``value``."""
    if isinstance(value, bytes):
        return "text: its UTF-8 encoding (default: empty)", "text: hexadecimal digits, two per byte (default: empty)"
    if isinstance(value, uuid.UUID):
        return ("GUID text, braces optional (default: the null GUID)",) * 2
    if isinstance(value, Enum) and isinstance(value, int):
        return (
            f"{type(value).__name__} name ({', '.join(_enum_names(type(value))[:4])}, ...) (default {value.name})",
            f"integer: the {type(value).__name__} value (default {int(value)})",
        )
    if isinstance(value, Enum):
        return (f"one of {', '.join(_enum_names(type(value)))} (default {value.name})",) * 2
    if isinstance(value, bool):
        return (f"boolean (default {str(value).lower()})",) * 2
    if isinstance(value, int):
        unit = " seconds" if name in ("TimeToBeReceived", "TimeToReachQueue") else ""
        return (f"integer{unit} (default {value})",) * 2
    if isinstance(value, float):
        return (f"number: seconds (default {value:g})",) * 2
    if isinstance(value, tuple):
        return ("list of text (default: empty)",) * 2
    if isinstance(value, str):
        return (f"text (default {value!r})",) * 2
    return ("text or null",) * 2


def vocabulary() -> dict[str, Any]:
    """What docs/adapters.md lists, as data: every event and harness operation with its arguments
    and results, the values of each enumerated kind, the keys of `given` and of `observe`, the
    queue and message attributes.  tests/cases/test_adapter_vocabulary.py walks the corpus against it."""
    events = {}
    for e in spec_events().values():
        if e.name in HARNESS_OPERATIONS:
            op = HARNESS_OPERATIONS[e.name]
            arguments = {a: k for a, k in op.arguments}
        else:
            arguments = {a: argument_kind(e.name, a) for a in e.parameters}
        events[e.name] = {"arguments": arguments, "results": {**event_results(e.name), "error": "error kind"}}
    values = {
        "MQStatus": _enum_names(MQStatus),
        "EnqueueStatus": _enum_names(EnqueueStatus),
        "CursorStatus": _enum_names(CursorStatus),
        "WaitStatus": ["Failed"],
        "DirectoryOperationResult": _enum_names(DirectoryOperationResult),
        "MQStatus or DirectoryOperationResult": _enum_names(MQStatus) + _enum_names(DirectoryOperationResult),
        "error kind": ["UndefinedBehaviour", "Unsupported", "Error"],
        "MessagePositionState": _enum_names(MessagePositionState),
        "CursorState": _enum_names(CursorState),
    }
    return {
        "events": events,
        "values": values,
        "given": {
            "keys": ["queues", "transactions", "open", "cursors", "locked"],
            "queue": ["name", "messages", *_queue_attributes()],
            "message": ["id", "State", *_message_attributes()],
            "open": ["name", "queue", "access", "share"],
            "cursor": ["name", "open"],
            "locked": ["message", "transaction"],
        },
        "observe": {"position": ["message", "State"], "cursor": ["CursorState", "MessagePositionReference"]},
        "control_message": ["id", "delivery", *_message_attributes()],
    }


def render() -> str:
    """The text of docs/adapters.md: :data:`_TEMPLATE` filled with the tables of the registries."""
    vocab = vocabulary()
    return _TEMPLATE.format(
        **_target_tables(),
        **_event_tables(vocab),
        **_value_tables(vocab),
        **_wire_tables(),
        EXAMPLE=EXAMPLE,
        HARNESS_EXAMPLE=HARNESS_EXAMPLE,
        DEFAULT_TIMER_SCALE=DEFAULT_TIMER_SCALE,
        DEFAULT_WINDOW=DEFAULT_WINDOW,
        max_line_mib=MAX_LINE >> 20,
    )


def _target_tables() -> dict[str, str]:
    """The target kinds and capabilities."""
    kinds = _table(("`--target`", "what it is"), [(f"`{k.syntax}`", k.summary) for k in KINDS.values()])
    capabilities = _table(("capability", "what the target can do"), [(f"`{k}`", v) for k, v in CAPABILITIES.items()])
    return {"kinds": kinds, "capabilities": capabilities}


def _event_tables(vocab: dict[str, Any]) -> dict[str, str]:
    """The spec events and the harness operations."""
    events = _table(
        ("event", "section", "arguments: how each value is carried", "results: the kind of each value"),
        [
            (
                f"`{e.name}`",
                e.section,
                "; ".join(f"`{a}`: {k}" for a, k in vocab["events"][e.name]["arguments"].items()) or "none",
                "; ".join(f"`{r}`: {k}" for r, k in event_results(e.name).items()) or "none (`{}`)",
            )
            for e in sorted(spec_events().values(), key=lambda e: e.name)
            if e.name not in HARNESS_OPERATIONS
        ],
    )
    operations = "\n\n".join(
        f"### `{op.name}`\n\n{op.meaning}\n\n"
        + _table(
            ("", "name", "kind and meaning"),
            [("argument", f"`{a}`", k) for a, k in op.arguments] + [("result", f"`{r}`", k) for r, k in op.results],
        )
        for op in HARNESS_OPERATIONS.values()
    )
    return {"events": events, "operations": operations}


def _value_tables(vocab: dict[str, Any]) -> dict[str, str]:
    """The kinds of values, the statuses, the names of the other values and the ADM attributes."""
    kinds_table = _table(("kind", "values"), [(f"{k}", v) for k, v in VALUE_KINDS.items()])
    statuses = _table(("MQStatus", "code"), [(f"`{m.name}`", f"0x{int(m.value):08X}") for m in MQStatus])
    enqueue_statuses = _table(("EnqueueStatus", "value"), [(f"`{m.name}`", str(int(m.value))) for m in EnqueueStatus])
    other_values = _table(
        ("kind", "names"),
        [
            ("CursorStatus", ", ".join(f"`{n}`" for n in vocab["values"]["CursorStatus"])),
            ("DirectoryOperationResult", ", ".join(f"`{n}`" for n in vocab["values"]["DirectoryOperationResult"])),
            (
                "MessagePositionState (`State` of a position)",
                ", ".join(f"`{n}`" for n in vocab["values"]["MessagePositionState"]),
            ),
            ("CursorState", ", ".join(f"`{n}`" for n in vocab["values"]["CursorState"])),
        ],
    )
    queue_attributes = _table(
        ("Queue attribute", "kind and default"), [(f"`{k}`", v) for k, v in _queue_attributes().items()]
    )
    message_attributes = _table(
        ("Message attribute", "in `given` and event arguments", "in a control operation's `message`"),
        [(f"`{k}`", g, c) for k, (g, c) in _message_attributes().items()],
    )
    return {
        "kinds_table": kinds_table,
        "statuses": statuses,
        "enqueue_statuses": enqueue_statuses,
        "other_values": other_values,
        "queue_attributes": queue_attributes,
        "message_attributes": message_attributes,
    }


def _wire_tables() -> dict[str, str]:
    """The control operations and the case actions."""
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
    return {"controls": controls, "actions": actions}


# docs/adapters.md, its tables and values in braces (str.format: literal braces doubled)
_TEMPLATE = """<!-- Written by `python -m harness.cases.adapterdoc` from the registries; do not edit by hand. -->
# The adapter protocol

An implementation is put behind the harness as a **target**. A Python implementation can be a
`plugin:` class; any other speaks the JSON-lines protocol below as a `cmd:` adapter: the
harness starts the command, writes one JSON request per line on its stdin and reads exactly one
JSON reply per line from its stdout. `examples/reference_adapter.py` is the reference
implementation behind this protocol: copy it and replace the calls into the reference.

## Target kinds

{kinds}

## Hello and capabilities

The first request is `hello`. The reply names the implementation (`name`, and `version`, its own
version, which every report shows: optional), lists the model events and
harness operations it implements (`events`: a case that raises one the list leaves out is
`unsupported`; `[]` is none; leave `events` out for every one) and its `capabilities`. The runner
decides from the capabilities alone which cases run; a case that needs one the target lacks is
`not_applicable`, with the missing capability and its meaning as the reason. A hello without
`capabilities` is an adapter of the model alone (`["model"]`). A `cmd:` adapter can offer
`model`, `wire:initiator`, `wire:sender-ping` and `adm:outgoing`; an acceptor is reached over TCP
(`mqqb://host:port`), not through an adapter. A sender that does without one of its own [MS-MQQB]
3.1.2 timers says so in its `wire_setup` reply with `null` (`"timers": {{"SessionRetryConnect":
null}}`: it never retries a failed connection): a case whose waits are bounded by that timer is
`unsupported`, naming it. `msmq-harness run --dry-run --target SPEC` says hello, runs no case and
shows per spec section how many cases would run, be `unsupported` or `not_applicable`, with the
events or capabilities missing; docs/profiles.md lists what each focus section's cases need.

{capabilities}

## Requests

| request | reply |
|---|---|
| `{{"op": "hello"}}` | `{{"ok": true, "name", "version", "events": [...], "capabilities": [...]}}` |
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
the adapter is started again for the next case. A reply is data: NaN, Infinity and numbers too
large for a double are refused as a protocol error, and so is a reply nested more than 100 arrays
and objects deep; text an adapter sends is shown with its control characters escaped (`\\xNN`).
Once the adapter has exited, the harness waits at most a second for a reply and kills, and names
on standard error, every process it left behind (in its process group, or holding its pipes).

## Model cases

A model case is `setup`, then one `event` request per step of its `when` (steps are numbered from
0 in failure output: `step 0` is the first), then, when the case has a `then`, one `observe`.

### Setup: `given`

`setup` carries the case's `given` as the case wrote it (matrix values substituted), without
defaults filled in: the adapter applies them. It builds, in this order and from scratch (nothing of
an earlier case survives):

- `queues`: each `{{name, messages, <Queue attribute>: value}}`, created by [MS-MQDMPR] 3.1.7.1.3
  Create Queue from a queue that 3.1.7.1.33 Set Queue Defaults set up, with the attributes given
  (a queue with a `DestinationFormatName` is an OutgoingQueue, 3.1.1.3, put in the queue
  manager's QueueCollection as it is). The queue manager's own QueueManagerQuota is not limited.
  `messages` are enqueued in order by 3.1.7.1.9 Enqueue Message (each must return `NoError`),
  each `{{id, State, <Message attribute>: value}}`: `id` names the message in the case (it is no
  ADM attribute); `State` (default `Available`) is the state of its MessagePosition once every
  message is in. `State: Locked` without a transaction is a position that nothing holds: no
  transaction's TransactionalOperationCollection names it, as a two-phase receive
  (3.1.7.1.11 Dequeue Message Begin) leaves it; it stays Locked until an event of the case
  changes it (no transaction's commit or abort releases it). `State: PurgePending` likewise.
- `transactions`: names; each a transaction created by 3.1.7.1.8 Create Transaction with that
  name as its identifier.
- `open`: each `{{name, queue, access, share}}`: 3.1.7.1.5 Open Queue of the queue's format name
  (DIRECT=OS for a local queue, its DestinationFormatName for an OutgoingQueue); `access`
  (QueueAccessType) defaults to `ReceiveAccess`, `share` (QueueShareMode) to `DenyNone`.
- `cursors`: each `{{name, open}}`: 3.1.7.1.1 Open Cursor on that descriptor.
- `locked`: each `{{message, transaction}}`: the message received under that transaction, as
  3.1.7.1.10 Dequeue Message leaves it: its position Locked and a Dequeue TransactionalOperation
  for it in the transaction (the transaction's commit deletes it, its abort makes it Available).

{queue_attributes}

Message attributes, in `given`, in an `iMessage` argument (`{{id, <attribute>: value}}`, a new
message) and in a control operation's `message`:

{message_attributes}

### Events

Each step is `{{"op": "event", "event": NAME, "args": {{...}}}}` with the spec's argument names, as
the case wrote them: an argument the case leaves out is absent (the event's own default applies).
Objects of the case travel by name and come back by name; the result names are the spec's (an
event that returns nothing answers `"result": {{}}`); a result the event does not produce (no
message, no position) is left out, never `null`. An expectation `error: <kind>` reads the `kind`
of an `{{"ok": false}}` reply to that event.

{events}

### Values

{kinds_table}

An `MQStatus` travels by its name; its numeric value (the Message Queuing error code of that name) is:

{statuses}

{enqueue_statuses}

{other_values}

### Observe

`{{"op": "observe", "queues": [...], "cursors": [...]}}` asks for the state `then` checks:
for each queue, its MessagePositionList in order, Head first (3.1.1.2), one object per position
with at least `message` (the message's id) and `State` (MessagePositionState); other members
(`Priority`, `Label`, ...) may be added and are ignored unless the case names them. For each
cursor (3.2.1.2) `CursorState` and `MessagePositionReference` (a position: a message id, `Start`
or `End`).

## Harness operations

These are operations of the adapter protocol, not events of [MS-MQDMPR]: the spec leaves the
clock, the return of a read that waited and the reading of a queue's attributes to the
implementation, and a case needs all three. They travel as event requests
(`{{"op": "event", "event": NAME, "args": {{...}}}}`), are listed in `hello`'s `events` like the
model events, and an implementation that cannot serve one answers `Unsupported` (its cases are
`unsupported`).

{operations}

A worked exchange of every one (it runs in the test suite against `examples/reference_adapter.py`;
`"…": "…"` stands for the other members of an object):

```
{HARNESS_EXAMPLE}```

## Control operations: a sender under test

An initiator wire case (docs/cases.md, "Wire cases") judges the implementation's sender. The
harness starts its own acceptor (the simulated peer, with the case's behaviour) on 127.0.0.1 and
sends `wire_setup` with its address: `scale` is the time scale the case asks for (the case's
`given.peer.timers`, else {DEFAULT_TIMER_SCALE:g}), `window` the WindowSize (`given.peer.window`, else
{DEFAULT_WINDOW}). The reply says what the sender runs: every wait bound of the case is computed from
the `scale` and `timers` it declares (undeclared timers take the spec's defaults, and the failure
message says so); a case that needs a `window` the sender does not run is `not_applicable`. Then
each case action is one control operation, and the sender connects to the harness by itself over
real TCP. What the case checks on the wire is what the harness's acceptor saw; a case may have that
acceptor answer the sender's packets with bytes it gives (`given.peer.replies`: the finding cases of
`msmq-harness fuzz --target cmd:...`, docs/fuzz.md), and a sender that exits while a case runs fails
it (`error`, with the adapter's exit status, or the wait that shows it). Result keys marked
`adm:outgoing` are ADM state: a target without that capability leaves them out, and the
expectations on them are listed as not checked (a case with nothing else to check is
`not_applicable`).

{controls}

## Case actions

{actions}

## Time, sessions and processes

- **Model cases** run on the clock of `advance_clock`: no timer of [MS-MQDMPR] 3.1.2 fires in
  real time while a case runs, and `iTimeout` and `TimeToBeReceived` count in seconds of that
  clock. Each `setup` starts a fresh clock.
- **Initiator wire cases** run on real time scaled by the `scale` the sender's `wire_setup` reply
  declares (its [MS-MQQB] 3.1.2 timers run `scale` times their durations); the harness's acceptor
  (the simulated peer) runs at min({DEFAULT_TIMER_SCALE:g}, that scale) for a `cmd:` target (the embedded
  reference takes the run's scale from `reference?scale=S`). The bounds of a wait are computed
  from the timers the sender declares. A case's final state is read once its steps end. When a
  connection opened after that, as long after the one before it ended as the sender's Session
  Retry Connect Timer allows (at least three quarters of it), it is the retry of a conformant
  sender: the final state is judged as it was before that connection opened (the readings of
  `observe_outgoing` that came before it, the connections opened before it), and when no reading
  came before it the case is an `error` saying the state was read too late, never a failure. A
  connection opened sooner is judged.
- **One adapter process serves many cases**, one after another (each worker of `--workers` starts
  its own): `hello` once, then for each case `setup` (model) or `wire_setup` (wire), which must
  start afresh, and at the end of a wire case `wire_close`, which must close every connection;
  a connection left idle between requests stays open until then. After the last case the harness
  sends `bye` and closes stdin; an adapter still running two seconds later is killed.
- **The command line** of `cmd:'<command>'` is split as a POSIX shell splits words (Python's
  `shlex.split`: quotes and backslashes, no variables, pipes, redirections or globbing; a command
  quoted as a whole is unquoted once) and run directly, without a shell, in the harness's working
  directory with its environment. stdin carries requests, stdout is for replies only (a debug
  line there is a protocol error; write it to stderr), each reply one line of at most
  {max_line_mib} MiB; the last lines of stderr are shown when a case errs.

## Example session

Requests are marked `>`, replies `<`; `…` stands for a value that varies (this session runs in
the test suite against `examples/reference_adapter.py`, 1801 replaced by the port of a simulated
peer).

```
{EXAMPLE}```
"""


def schema_text() -> str:
    """harness/cases/case.schema.json with its list of wire actions from the action registry."""
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    schema["$defs"]["wireStep"]["properties"]["action"]["enum"] = sorted(load_actions())
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    PATH.write_text(render(), encoding="utf-8")
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
    print(f"wrote {PATH} and {SCHEMA_PATH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
