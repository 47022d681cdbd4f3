"""The registry of the events a model case may raise: [MS-MQDMPR] spec events and pseudo-events.

A spec event is a public method of the reference model (``harness.model.QueueManager``, 3.1.4,
3.1.6.3, 3.1.7; ``harness.model.Cursor``, 3.2.7) whose docstring opens with the section that
defines it; its parameters are the spec's argument names, and :data:`ARG_KINDS` says which of
them name an object of the case (a queue, an open descriptor, a cursor, a transaction, a message
position by its message's id, ...).  The pseudo-events (:data:`PSEUDO_EVENTS`) are the reference
target's handles on what the spec leaves to the implementation: its clock, the final result of a
blocked read, a queue's ADM attributes.  The case loader checks events and arguments against this
registry, and the reference target raises events and resolves their arguments from it: a
string argument becomes the enumeration member the event's *declared* parameter type names
(``iSeekDirection: Backward`` -> ``SeekDirection.Backward``), the type annotated on the method
of the class that defines the event (the reference model's, for an event a plugin's subclass
overrides: an override needs no annotations of its own).
"""

from __future__ import annotations

import contextlib
import inspect
import re
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

__all__ = ["ARG_KINDS", "PSEUDO_EVENTS", "SpecEvent", "event_section", "spec_events"]

#: The reference target's events besides the spec's, with their arguments.
PSEUDO_EVENTS: dict[str, tuple[str, ...]] = {
    "advance_clock": ("seconds",),  # clock += seconds, then fire the due timers: {rFired}
    "fire_due_timers": (),  # {rFired}
    "read_result": ("iReader",),  # a blocked read's final {rStatus, rMessage} or {rPending}
    "queue_attributes": ("iQueue",),  # the queue's scalar ADM attributes by name
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
    then the pseudo-events.  The base classes' events count even when a subclass overrides one
    without the docstring; a Cursor event takes ``cursor`` first.  An event's types are those
    its defining class declares (the reference model's, when the subclass overrides it)."""
    from harness.model import Cursor, QueueManager

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
                    if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                ]
                defined = events.get(name)
                types = defined.types if defined is not None and defined.owner == owner else _declared_types(fn)
                events[name] = SpecEvent(name, f"MS-MQDMPR {section}", owner, (*extra, *names), types)
    for name, params in PSEUDO_EVENTS.items():
        events.setdefault(name, SpecEvent(name, "", "target", params))
    _CACHE[(qm_class, cursor_class)] = events
    return events


def event_section(event: str) -> str:
    """ "MS-MQDMPR <section>" of a model event ("" for pseudo-events and unknown names)."""
    found = spec_events().get(event)
    return found.section if found is not None else ""
