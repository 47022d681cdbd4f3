"""The registry of the events a model case may raise: [MS-MQDMPR] spec events and pseudo-events.

A spec event is a public method of the reference model (``harness.model.QueueManager``, 3.1.4,
3.1.6.3, 3.1.7; ``harness.model.Cursor``, 3.2.7) whose docstring opens with the section that
defines it; its parameters are the spec's argument names, and :data:`ARG_KINDS` says which of
them name an object of the case (a queue, an open descriptor, a cursor, a transaction, a message
position by its message's id, ...).  The pseudo-events (:data:`PSEUDO_EVENTS`) are the reference
target's handles on what the spec leaves to the implementation: its clock, the final result of a
blocked read, a queue's ADM attributes.  The case loader checks events and arguments against this
registry, and the reference target raises events and resolves their arguments from it.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
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
    ADM element whose method raises it, and its arguments by the spec's names."""

    name: str
    section: str
    owner: str  # "QueueManager", "Cursor" or "target"
    parameters: tuple[str, ...]

    def kind_of(self, argument: str) -> str | None:
        return ARG_KINDS.get(argument)


def _spec_methods(cls: type) -> Iterator[tuple[str, str, Callable[..., Any]]]:
    for name, fn in inspect.getmembers(cls, inspect.isfunction):
        if name.startswith("_"):
            continue
        m = _SECTION_DOC.match(inspect.getdoc(fn) or "")
        if m:
            yield name, m.group(1), fn


_CACHE: dict[tuple[type | None, type | None], dict[str, SpecEvent]] = {}


def spec_events(qm_class: type | None = None, cursor_class: type | None = None) -> dict[str, SpecEvent]:
    """Every event of the model (a QueueManager and Cursor class; the reference's by default),
    then the pseudo-events.  The base classes' events count even when a subclass overrides one
    without the docstring; a Cursor event takes ``cursor`` first."""
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
                events[name] = SpecEvent(name, f"MS-MQDMPR {section}", owner, (*extra, *names))
    for name, params in PSEUDO_EVENTS.items():
        events.setdefault(name, SpecEvent(name, "", "target", params))
    _CACHE[(qm_class, cursor_class)] = events
    return events


def event_section(event: str) -> str:
    """ "MS-MQDMPR <section>" of a model event ("" for pseudo-events and unknown names)."""
    found = spec_events().get(event)
    return found.section if found is not None else ""
