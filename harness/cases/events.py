# ruff: noqa: E501  (descriptions rendered into docs/adapters.md, one line each)
"""The registry of what a model case may raise: [MS-MQDMPR] spec events and harness operations.

A spec event is a public method of the reference model (``harness.model.QueueManager``, 3.1.4,
3.1.6.3, 3.1.7; ``harness.model.Cursor``, 3.2.7) whose docstring opens with the section that
defines it; its parameters are the spec's argument names, and :data:`ARG_KINDS` says which of
them name an object of the case (a queue, an open descriptor, a cursor, a transaction, a message
position by its message's id, ...).  Its results (:func:`event_results`) follow from the return
type the method declares, and the values of each result from :data:`VALUE_KINDS`.

The harness operations (:data:`HARNESS_OPERATIONS`) are part of the adapter protocol, not of the
spec: what the spec leaves to the implementation and a case still has to drive or read: the
clock the timers of 3.1.2 run on (``advance_clock``, ``fire_due_timers``), the final result of a
read that waited in 3.1.7.3.1 Wait For New Message (``read_result``) and a queue's ADM attributes
(``queue_attributes``).  They travel as event requests; docs/adapters.md documents each with its
meaning, arguments, result and a worked exchange (harness.cases.adapterdoc).

The case loader checks events and arguments against this registry, and the reference target
raises events and resolves their arguments from it: a string argument becomes the enumeration
member the event's *declared* parameter type names (``iSeekDirection: Backward`` ->
``SeekDirection.Backward``), the type annotated on the method of the class that defines the event
(the reference model's, for an event a plugin's subclass overrides: an override needs no
annotations of its own).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import SimpleNamespace
from typing import Any

from harness.model import Cursor, QueueManager

__all__ = [
    "ARG_KINDS",
    "HARNESS_OPERATIONS",
    "PSEUDO_EVENTS",
    "PYTHON_ONLY_PARAMETERS",
    "RESULT_KINDS",
    "VALUE_KINDS",
    "HarnessOperation",
    "SpecEvent",
    "argument_kind",
    "event_results",
    "event_section",
    "second_result",
    "spec_events",
]


@dataclass(frozen=True)
class HarnessOperation:
    """An operation of the adapter protocol that is no [MS-MQDMPR] event: its meaning, its
    arguments and results (name -> kind and meaning), and a worked exchange (the ``args`` of its
    request after a setup, the ``result`` of the reply; harness.cases.adapterdoc runs it)."""

    name: str
    meaning: str
    arguments: tuple[tuple[str, str], ...]
    results: tuple[tuple[str, str], ...]


#: The harness operations of the adapter protocol (docs/adapters.md, "Harness operations").
HARNESS_OPERATIONS: dict[str, HarnessOperation] = {
    op.name: op
    for op in (
        HarnessOperation(
            "advance_clock",
            "Move the queue manager's clock forward by `seconds`, then fire every timer that is due "
            "by the new time, earliest expiry first: the Waiting Message Read Timer of [MS-MQDMPR] "
            "3.1.2.3 (which raises 3.1.6.3 Waiting Message Read Timer Expired) and the Time To Be "
            "Received Timer of 3.1.2.4 (3.1.7.2.7, for a message still in its queue). A model case's "
            "clock moves only by this operation: no timer fires in real time while a case runs.",
            (("seconds", "number: seconds, > 0 (a fraction is allowed)"),),
            (("rFired", "integer: how many timers fired"),),
        ),
        HarnessOperation(
            "fire_due_timers",
            "Fire the timers of [MS-MQDMPR] 3.1.2.3 and 3.1.2.4 that are due by the clock as it is "
            "(a timer tick that does not move the clock).",
            (),
            (("rFired", "integer: how many timers fired"),),
        ),
        HarnessOperation(
            "read_result",
            "The final result of a read event (Dequeue Message, Peek Message, ...) that blocked in "
            "[MS-MQDMPR] 3.1.7.3.1 Wait For New Message: the event answered `rPending` with the name "
            "of its waiting reader (its WaitingMessageReadOperation); once the wait has ended "
            "(satisfied by 3.1.7.3.6, timed out by 3.1.6.3, cancelled by 3.1.7.1.17) the blocked "
            "event's own return values, as it would have returned them; while it still waits, "
            "`rPending` again.",
            (
                (
                    "iReader",
                    "reader: the name `rPending` gave (read1, read2, ... in the order the case's reads began to wait)",
                ),
            ),
            (
                ("rStatus", "MQStatus: the read's status, once the wait ended"),
                ("rMessage", "message: the message read, if one was"),
                ("rPending", "reader: the same reader, while it still waits (then nothing else)"),
            ),
        ),
        HarnessOperation(
            "queue_attributes",
            "The ADM attributes of a queue ([MS-MQDMPR] 3.1.1.2 Queue, 3.1.1.3 OutgoingQueue) by "
            "their names, each a number, boolean, text or the name of an enumeration value "
            "(OutgoingQueue `State`: Connected, Disconnected, Inactive, Locked, NeedValidation, "
            "OnHold, Waiting), plus `Active` (boolean) and `MessageCount` (the length of its "
            "MessagePositionList). An attribute the implementation does not keep may be left out; "
            "an expectation on it then fails.",
            (("iQueue", "queue: a queue of the case"),),
            (("<attribute>", "the value of the ADM attribute of that name"),),
        ),
    )
}

#: Every harness operation's argument names (the loader knows them as events).
PSEUDO_EVENTS: dict[str, tuple[str, ...]] = {
    name: tuple(arg for arg, _ in op.arguments) for name, op in HARNESS_OPERATIONS.items()
}

#: Parameters of the reference model's event methods that are Python only (a continuation), never
#: arguments of a case or of the protocol.
PYTHON_ONLY_PARAMETERS = frozenset({"resume"})

#: What an event's declared return type becomes in its reply: result name -> kind of its value
#: (:data:`VALUE_KINDS`).  A tuple's second value is named by its second entry (:func:`second_result`).
_RETURNS: dict[str, dict[str, str]] = {
    "None": {},
    "MQStatus": {"rStatus": "MQStatus"},
    "EnqueueStatus": {"rStatus": "EnqueueStatus"},
    "ReadResult": {"rStatus": "MQStatus", "rMessage": "message", "rPending": "reader"},
    "CursorResult": {"rStatus": "CursorStatus", "rPosition": "position"},
    "Transaction": {"rTransaction": "transaction"},
    "Cursor | None": {"rCursor": "cursor"},
    "MessagePosition": {"rMessagePosition": "position"},
    "WaitingMessageReadOperation | None": {"rPending": "reader", "rStatus": "WaitStatus"},
    "tuple[MQStatus | DirectoryOperationResult, Queue | None]": {
        "rStatus": "MQStatus or DirectoryOperationResult",
        "rQueue": "queue",
    },
    "tuple[bool, str | None]": {"rStatus": "boolean", "rOutputFormatName": "text"},
    "tuple[MQStatus, OpenQueueDescriptor | None]": {"rStatus": "MQStatus", "rOpenQueueDescriptor": "open"},
    "tuple[MQStatus, MessagePosition | None]": {"rStatus": "MQStatus", "rMessagePosition": "position"},
}

#: Every result name a spec event's reply may carry -> the kind of its value (:data:`VALUE_KINDS`).
RESULT_KINDS: dict[str, str] = {name: kind for returns in _RETURNS.values() for name, kind in returns.items()}

#: The values of each kind a result (or an argument) takes, as the protocol carries them.
VALUE_KINDS: dict[str, str] = {
    "MQStatus": "the name of an [MS-MQDMPR] status (table below), never its number",
    "EnqueueStatus": "the name of an Enqueue Message status (table below)",
    "CursorStatus": "the name of a cursor event's outcome (table below)",
    "WaitStatus": "Failed: the read cannot wait (no queue, or iTimeout 0); Success is never returned (the reader is `rPending`)",
    "DirectoryOperationResult": "the name of a 3.1.1.17 DirectoryOperationResult (table below)",
    "MQStatus or DirectoryOperationResult": "a name of either table",
    "boolean": "true or false",
    "text": "a JSON string",
    "error kind": '`UndefinedBehaviour`, `Unsupported` or `Error`: the `kind` of an `{"ok": false}` reply, which an expectation `error` reads',
    "message": "a message's `id` as the case named it (a message the case did not name: `#` and its LookupIdentifier in hex)",
    "position": "a MessagePosition by its message's `id`, or `Start` / `End` (the special positions of 3.1.1.2)",
    "reader": "a waiting reader: read1, read2, ... in the order the case's reads began to wait",
    "cursor": "a cursor by the name the case gave it; one an event opened: cursor1, cursor2, ...",
    "open": "an OpenQueueDescriptor by the name the case gave it; one an event opened: open1, open2, ...",
    "transaction": "a transaction by the name (identifier) the case gave it",
    "queue": "a queue by the name the case gave it",
}

#: Arguments whose values the protocol carries in a form of its own (the others follow their
#: declared type: an enumeration by member name, a bool, a number, text).
_ARGUMENT_FORMS: dict[str, str] = {
    "iTimeout": "number: seconds (0: do not wait), or `Infinite`",
    "iLookupId": "message: the message whose LookupIdentifier is meant, by its `id`",
    "iFormatName": "text: an [MS-MQMQ] 2.1 format name, or a queue's name (meaning that queue's DIRECT=OS format name)",
    "iInputFormatName": "text: an [MS-MQMQ] 2.1 format name, or a queue's name",
    "iTag": "any JSON value: the caller's tag, returned as given",
    "iData": "any JSON value",
    "iStatus": "MQStatus: a status name",
    "iTransactional": "boolean or null",
}

#: Arguments whose value names an object of the case (the spec's parameter names) -> its kind.
#: ``transaction-id``: a transaction named by its identifier, which is passed as it is.
ARG_KINDS: dict[str, str] = {
    "iQueue": "queue",
    "iTargetQueue": "queue",
    "iReleaseOnQueue": "queue",
    "iOutgoingQueue": "queue",
    "iQueueDesc": "open",
    "iOpenQueueDescriptor": "open",
    "cursor": "cursor",
    "iCursor": "cursor",
    "iTransaction": "transaction",
    "iTransactionIdentifier": "transaction-id",
    "iInitialPosition": "position",
    "iPosition": "position",
    "iMessagePosition": "position",
    "iMessagePos": "position",
    "iMessage": "message",
    "iReader": "reader",
}

# A spec event's docstring starts with its section number: "3.1.7.3.2 Seek Available ...".
_SECTION_DOC = re.compile(r"^(\d+\.\d+(?:\.\d+)+) ")


@dataclass(frozen=True)
class SpecEvent:
    """One event: its name, the [MS-MQDMPR] section that defines it ("" for a pseudo-event), the
    ADM element whose method raises it, its arguments by the spec's names and their declared
    types (from the method that defines the event, never an override's)."""

    name: str
    section: str
    owner: str  # "QueueManager", "Cursor" or "target"
    parameters: tuple[str, ...]
    types: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def kind_of(self, argument: str) -> str | None:
        return ARG_KINDS.get(argument)


def _spec_methods(cls: type) -> Iterator[tuple[str, str, Callable[..., Any]]]:
    for name, fn in inspect.getmembers(cls, inspect.isfunction):
        if name.startswith("_"):
            continue
        m = _SECTION_DOC.match(inspect.getdoc(fn) or "")
        if m:
            yield name, m.group(1), fn


def _declared_types(fn: Callable[..., Any]) -> dict[str, Any]:
    """The parameter types ``fn`` declares; one annotation that does not resolve (a name imported
    for type checking only) leaves that parameter out, not the others."""
    notes = {k: v for k, v in getattr(fn, "__annotations__", {}).items() if k != "return"}
    try:
        return typing.get_type_hints(SimpleNamespace(__annotations__=notes, __globals__=fn.__globals__))
    except Exception:
        pass
    out: dict[str, Any] = {}
    for name, note in notes.items():
        with contextlib.suppress(Exception):
            one = SimpleNamespace(__annotations__={name: note}, __globals__=fn.__globals__)
            out[name] = typing.get_type_hints(one)[name]
    return out


_CACHE: dict[tuple[type | None, type | None], dict[str, SpecEvent]] = {}


def spec_events(qm_class: type | None = None, cursor_class: type | None = None) -> dict[str, SpecEvent]:
    """Every event of the model (a QueueManager and Cursor class; the reference's by default),
    then the harness operations.  The base classes' events count even when a subclass overrides one
    without the docstring; a Cursor event takes ``cursor`` first.  An event's types are those
    its defining class declares (the reference model's, when the subclass overrides it)."""
    cached = _CACHE.get((qm_class, cursor_class))
    if cached is not None:
        return cached
    events: dict[str, SpecEvent] = {}
    for owner, classes, extra in (
        ("QueueManager", (QueueManager, qm_class), ()),
        ("Cursor", (Cursor, cursor_class), ("cursor",)),
    ):
        for cls in classes:
            if cls is None:
                continue
            for name, section, fn in _spec_methods(cls):
                names = [
                    p.name
                    for p in list(inspect.signature(fn).parameters.values())[1:]
                    if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in PYTHON_ONLY_PARAMETERS
                ]
                defined = events.get(name)
                types = defined.types if defined is not None and defined.owner == owner else _declared_types(fn)
                events[name] = SpecEvent(name, f"MS-MQDMPR {section}", owner, (*extra, *names), types)
    for name, params in PSEUDO_EVENTS.items():
        events.setdefault(name, SpecEvent(name, "", "target", params))
    _CACHE[(qm_class, cursor_class)] = events
    return events


def _return_text(fn: Callable[..., Any]) -> str:
    note = getattr(fn, "__annotations__", {}).get("return", "None")
    text = note if isinstance(note, str) else getattr(note, "__name__", repr(note))
    return "None" if text in ("None", "NoneType") else text


def event_results(event: str) -> dict[str, str]:
    """The result names of a spec event's reply -> the kind of each value (:data:`VALUE_KINDS`),
    from the return type its reference method declares; a harness operation's results by its
    registry entry.  KeyError for a return type the protocol does not map (a test keeps every
    event mapped)."""
    if event in HARNESS_OPERATIONS:
        return {name: kind.split(":", 1)[0] for name, kind in HARNESS_OPERATIONS[event].results}

    owner = spec_events()[event].owner
    fn = getattr(QueueManager if owner == "QueueManager" else Cursor, event)
    return dict(_RETURNS[_return_text(fn)])


@functools.cache
def second_result(event: str) -> str:
    """The result name of the second value of an event that returns (rStatus, value), as its
    declared return type names it (:func:`event_results`): ``rOpenQueueDescriptor`` for
    open_queue, ``rPosition`` for the cursor reads."""
    return next((name for name in event_results(event) if name != "rStatus"), "rValue")


def argument_kind(event: str, argument: str) -> str:
    """How the protocol carries an argument of a spec event: an object of the case by name
    (:data:`ARG_KINDS`), a form of its own, or its declared type (an enumeration's member names)."""
    if argument in ARG_KINDS:
        return ARG_KINDS[argument]
    if argument in _ARGUMENT_FORMS:
        return _ARGUMENT_FORMS[argument]
    hint = spec_events()[event].types.get(argument)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return f"{hint.__name__}: one of " + ", ".join(hint.__members__)
    for kind, words in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "text")):
        if hint is kind:
            return words
    return "any JSON value"


def event_section(event: str) -> str:
    """ "MS-MQDMPR <section>" of a model event ("" for harness operations and unknown names)."""
    found = spec_events().get(event)
    return found.section if found is not None else ""
