"""The model's error type: what [MS-MQDMPR] leaves undefined, reported rather than guessed.

Used where an event of 3.1.7 or 3.2.7 reaches a case the spec gives no outcome for (for
example Get Message For Peek (3.2.7.2) on a cursor left in WaitPeek, which no branch of the
"Select from CursorState" covers).
"""

from __future__ import annotations

from harness.errors import HarnessError


class ModelError(HarnessError):
    """Error raised by the reference queue manager; carries the spec section."""

    def __init__(self, section: str, reason: str) -> None:
        super().__init__(f"[MS-MQDMPR] {section}: {reason}")
        self.section = section
        self.reason = reason


class UndefinedBehaviour(ModelError):
    """The spec defines no outcome for this input (no branch of the event's steps applies)."""
