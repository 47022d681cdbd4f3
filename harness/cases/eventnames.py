"""The events a case may raise: the names ``when`` steps use, and the argument names each takes.

Renders "Events and arguments" of docs/cases.md: a step's ``event`` is a spec event in snake_case,
a method of ``harness.model.QueueManager`` or ``harness.model.Cursor`` that renders an event of
[MS-MQDMPR] 3.1.4, 3.1.6, 3.1.7 or 3.2.7 (harness.cases.events reads them from the reference
model), with the spec's parameter names as its arguments; or a pseudo-event of the reference
target, or an event a target registers beyond the spec's (:func:`register_events`, whose
arguments are not checked).  The semantic checks (harness.cases.semantics), the loader and its
cache ask this module which events and arguments a case may use.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.cases.events import PSEUDO_EVENTS
from harness.cases.events import spec_events as model_spec_events

__all__ = ["event_parameters", "known_events", "register_events", "spec_events"]

# Names a target may add to the spec events (register_events); loaders accept them too.
_EXTRA_EVENTS: set[str] = set()
_MODEL_EVENTS: list[tuple[object, dict[str, tuple[str, ...]]]] = []  # (registry, its events), the last one


def _model_events() -> dict[str, tuple[str, ...]]:
    """Spec event -> argument names (harness.cases.events: the reference model's methods whose
    docstring opens with their [MS-MQDMPR] section; pseudo-events are the target's, registered).

    Built once per registry (harness.cases.events caches it), not once per step checked."""
    events = model_spec_events()
    if _MODEL_EVENTS and _MODEL_EVENTS[0][0] is events:
        return _MODEL_EVENTS[0][1]
    built = {e.name: e.parameters for e in events.values() if e.owner != "target"}
    _MODEL_EVENTS[:] = [(events, built)]
    return built


def register_events(*names: str) -> None:
    """Add events a target provides beyond the spec's (their arguments are not checked)."""
    _EXTRA_EVENTS.update(names)


def spec_events() -> frozenset[str]:
    """The [MS-MQDMPR] events the model implements (no target-specific additions)."""
    return frozenset(_model_events())


def known_events(extra: Iterable[str] = ()) -> frozenset[str]:
    """Every event a case may raise: the model's spec events, the reference target's
    pseudo-events (harness.cases.events), registered names and ``extra``."""
    return spec_events() | frozenset(PSEUDO_EVENTS) | _EXTRA_EVENTS | frozenset(extra)


def event_parameters(event: str) -> tuple[str, ...] | None:
    """The argument names of a model spec event (None for an event a target added)."""
    return _model_events().get(event)

