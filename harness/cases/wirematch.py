"""How a wire case's expectations compare with what was observed.

An observed value of a packet field ([MS-MQQB] 2.2, [MS-MQMQ] 2.2.18-2.2.20) is normalised to the
form a case writes (:func:`normalise`: enumerations by name, GUIDs as "{...}" text, bytes as hex)
and compared with the expectation (:func:`wire_matches`: a literal, ``is``, ``not``, ``any_of``,
``range``, ``every_byte``, ``sent`` naming a field the harness sent, or the readings of
harness.cases.grading); :func:`brief` shortens a value for a one-line message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any

from harness.cases.compare import matches
from harness.cases.grading import ANNOTATION, READINGS, unwrap
from packets import GUID
from packets.fields import Elements

__all__ = ["brief", "normalise", "wire_matches"]


def normalise(value: Any) -> Any:
    """An observed value as a case writes it: enums by name, flags and ints as ints, GUIDs as
    "{...}" text (upper case), bytes as hex."""
    if isinstance(value, GUID):
        return str(value).upper()
    if isinstance(value, Enum):
        return value.name
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, list | tuple | Elements):  # Elements: a parsed element list (packets.fields)
        return [normalise(v) for v in value]
    return value


def _expected_text(expected: Any) -> Any:
    if isinstance(expected, str) and re.fullmatch(
        r"\{?[0-9A-Fa-f]{8}-([0-9A-Fa-f]{4}-){3}[0-9A-Fa-f]{12}\}?", expected
    ):
        return "{" + expected.strip("{}").upper() + "}"
    if isinstance(expected, list):
        return [_expected_text(e) for e in expected]
    return expected


def wire_matches(expected: Any, observed: Any, sent: Callable[[str], Any] | None = None, present: bool = True) -> bool:
    """Whether an observed (normalised) value satisfies an expected one of a wire case.

    Besides a literal, ``any_of`` and ``absent``: ``{not: X}``, ``{range: [lo, hi]}`` (inclusive),
    ``{every_byte: N}`` (a byte string all of whose bytes are N) and ``{sent: path}`` (equal to
    that field of the last packet of its kind the case sent: an echo); ``{is: X}`` is the literal X,
    and a ``requirement`` annotation (harness.cases.grading) is ignored.
    """
    if isinstance(expected, Mapping) and ANNOTATION in expected:
        expected = {k: v for k, v in expected.items() if k != ANNOTATION}
    if isinstance(expected, Mapping) and set(expected) == {READINGS}:  # the reading the corpus checks
        return wire_matches(unwrap(expected), observed, sent, present)
    if isinstance(expected, Mapping) and set(expected) == {"is"}:
        literal = _expected_text(expected["is"])
        return matches({"is": literal}, observed) if present else matches({"is": literal})
    if isinstance(expected, Mapping) and len(expected) == 1:
        ((key, arg),) = expected.items()
        if key == "any_of":
            return any(wire_matches(e, observed, sent, present) for e in arg)
        if key == "not":
            return present and not wire_matches(arg, observed, sent, present)
        if key == "range":
            return (
                present
                and isinstance(observed, int)
                and not isinstance(observed, bool)
                and arg[0] <= observed <= arg[1]
            )
        if key == "every_byte":
            if not present or not isinstance(observed, str):
                return False
            try:
                data = bytes.fromhex(observed)
            except ValueError:
                return False
            return bool(data) and all(b == arg for b in data)
        if key == "sent":
            return present and sent is not None and normalise(sent(arg)) == observed
        if key == "absent":
            return matches(expected, observed) if present else matches(expected)
    if not present:
        return matches(expected)
    return matches(_expected_text(expected), observed)


def brief(value: Any, limit: int = 80) -> Any:
    """A value for a one-line message: long strings cut to ``limit`` characters."""
    text = value if isinstance(value, str) else None
    if text is not None and len(text) > limit:
        return text[: limit - 3] + f"... ({len(text)} chars)"
    return value
