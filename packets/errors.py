"""PacketError: the one error type of the codec.

Every failure to parse or validate an MSMQ packet ([MS-MQMQ] 2.2.18-2.2.20, [MS-MQQB] 2.2,
[MS-MQRR] 2.2.5) is reported as a :class:`PacketError` naming the field path in the spec's
vocabulary (``UserHeader.DestinationQueue.Count``), the absolute byte offset of that field in
the input, the reason, and where known the spec section whose rule was broken.  Non-strict
parsing collects the same information as :class:`Violation` records instead of raising.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PacketError", "Violation"]


@dataclass(frozen=True, slots=True)
class Violation:
    """One rule a packet breaks: where (field path and byte offset), why, and which section."""

    field_path: str
    offset: int
    reason: str
    section: str = ""

    def __str__(self) -> str:
        where = f"{self.field_path} at byte {self.offset}"
        cite = f" [{self.section}]" if self.section else ""
        return f"{where}: {self.reason}{cite}"

    def error(self) -> PacketError:
        return PacketError(self.field_path, self.offset, self.reason, self.section)


class PacketError(ValueError):
    """A packet could not be parsed, built or validated.

    Attributes:
        field_path: dotted path of the offending field, e.g. ``BaseHeader.PacketSize``.
        offset: absolute byte offset of that field in the parsed input (-1 when building).
        reason: what is wrong, in words.
        section: the spec section of the rule, e.g. ``MS-MQMQ 2.2.19.1``.
    """

    def __init__(self, field_path: str, offset: int, reason: str, section: str = "") -> None:
        self.field_path = field_path
        self.offset = offset
        self.reason = reason
        self.section = section
        super().__init__(str(self.violation))

    @property
    def violation(self) -> Violation:
        return Violation(self.field_path, self.offset, self.reason, self.section)

    def __reduce__(self) -> tuple[type[PacketError], tuple[str, int, str, str]]:
        return (PacketError, (self.field_path, self.offset, self.reason, self.section))
