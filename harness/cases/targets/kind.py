"""A target kind: the ``--target`` scheme it answers, its syntax, one line of help and its
factory (docs/cases.md, "Targets"; docs/adapters.md).  A target module declares its kind once with
:func:`target_kind`; :data:`KINDS` holds them, in the order they were declared, and
harness.cases.targets.registry finds a ``--target`` value's kind there.  The ``?key=value``
options of a target value are read by :func:`spec_query` and :func:`parse_scale`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["KINDS", "TargetKind", "parse_scale", "spec_query", "target_kind"]


@dataclass(frozen=True)
class TargetKind:
    scheme: str  # "reference" (the whole value, or before "?"), "plugin:", "cmd:", "mqqb://"
    syntax: str
    summary: str
    make: Callable[[str, float], Any]

    def claims(self, spec: str) -> bool:
        if self.scheme.endswith((":", "//")):
            return spec.startswith(self.scheme)
        return spec == self.scheme or spec.startswith(self.scheme + "?")


KINDS: dict[str, TargetKind] = {}


def _qualified(make: Callable[..., Any]) -> str:
    """A factory's module and qualified name: a module that runs again (imported anew, e.g. under
    pytester, which drops the modules an in-process run imported) registers the same factory again,
    which replaces its own entry; another factory for the same scheme is an error."""
    return f"{make.__module__}.{make.__qualname__}"


def target_kind(
    scheme: str, syntax: str, summary: str
) -> Callable[[Callable[[str, float], Any]], Callable[[str, float], Any]]:
    """Register the decorated factory ``(spec, timeout) -> Target`` for ``scheme``."""

    def register(make: Callable[[str, float], Any]) -> Callable[[str, float], Any]:
        known = KINDS.get(scheme)
        if known is not None and _qualified(known.make) != _qualified(make):
            raise ValueError(f"target kind {scheme!r} registered twice")
        KINDS[scheme] = TargetKind(scheme, syntax, summary, make)
        return make

    return register


def spec_query(spec: str, known: tuple[str, ...]) -> dict[str, str]:
    """The ``?key=value&...`` query of a target value; ValueError names an unknown key."""
    query = spec.partition("?")[2]
    out: dict[str, str] = {}
    for item in query.split("&") if query else []:
        key, _, value = item.partition("=")
        if key not in known:
            raise ValueError(f"{spec!r}: unknown query {key!r} (expected {' or '.join(k + '=...' for k in known)})")
        out[key] = value
    return out


def parse_scale(spec: str, value: str) -> float:
    """A time scale in (0, 1] of a target value's ``scale=S``."""
    try:
        scale = float(value)
    except ValueError:
        scale = 0.0
    if not 0 < scale <= 1:
        raise ValueError(f"{spec!r}: scale=S takes a time scale in (0, 1]")
    return scale
