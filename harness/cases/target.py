"""The Target protocol: what the runner needs from an implementation under test.

A target raises the spec's events ([MS-MQDMPR] 3.1.4, 3.1.7, 3.2.7 by their snake_case
names) on its own state and reports results and state by the names the case gave its objects.
The embedded reference model, a plugin class, a subprocess speaking JSON lines (docs/cases.md)
and, for [MS-MQQB] wire cases, a live or simulated peer all implement it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["Target", "TargetError", "TargetInfo"]


@dataclass
class TargetInfo:
    """What a target says of itself when the run starts."""

    name: str
    events: list[str] = field(default_factory=list)  # spec events it can raise
    capabilities: list[str] = field(default_factory=list)  # e.g. "peer-behaviour" for wire cases


class TargetError(Exception):
    """A target could not do what a step asked.

    kind: "UndefinedBehaviour" (the spec gives no outcome), "Unsupported" (the target does not
    implement the event), or "Error" (anything else, including a crash).
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@runtime_checkable
class Target(Protocol):
    def hello(self) -> TargetInfo:
        """Name, events and capabilities; called once before the first case."""
        ...

    def setup(self, given: dict[str, Any]) -> None:
        """Start from a fresh state and build the case's ``given``."""
        ...

    def event(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Raise one spec event; return its return values by the spec's names (rStatus, ...),
        with objects named as the case named them (a position by its message's id)."""
        ...

    def observe(self, queues: list[str], cursors: list[str]) -> dict[str, Any]:
        """The state ``then`` checks: {"queues": {q: [{"message", "State"}...]},
        "cursors": {c: {"CursorState", "MessagePositionReference"}}}."""
        ...

    def close(self) -> None:
        ...
