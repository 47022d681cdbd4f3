"""The registry of target kinds: each kind registers the ``--target`` scheme it answers.

A target module declares its kind once (:func:`target_kind`: scheme, syntax, one line of help,
the factory); :func:`make_target` finds the kind of a ``--target`` value by its scheme and
:func:`target_help` writes the ``--target`` help of the CLI and the pytest plugin from the
registry.  ``harness.cases.targets`` imports every module of its package, so a new kind is one
new module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "KINDS",
    "TargetKind",
    "did_you_mean",
    "make_target",
    "parse_scale",
    "spec_query",
    "target_help",
    "target_kind",
]


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


def target_kind(
    scheme: str, syntax: str, summary: str
) -> Callable[[Callable[[str, float], Any]], Callable[[str, float], Any]]:
    """Register the decorated factory ``(spec, timeout) -> Target`` for ``scheme``."""

    def register(make: Callable[[str, float], Any]) -> Callable[[str, float], Any]:
        if scheme in KINDS:
            raise ValueError(f"target kind {scheme!r} registered twice")
        KINDS[scheme] = TargetKind(scheme, syntax, summary, make)
        return make

    return register


def make_target(spec: str, *, timeout: float = 10.0) -> Any:
    """The target a ``--target`` value names; ``timeout`` is a subprocess target's per-request
    timeout (in-process targets are timed by the runner).  ValueError lists the kinds."""
    import harness.cases.targets  # noqa: F401  (registers every kind)

    for kind in KINDS.values():
        if kind.claims(spec):
            return kind.make(spec, timeout)
    hint = did_you_mean(spec)
    raise ValueError(
        f"unknown target {spec!r}{f' (did you mean {hint!r}?)' if hint else ''}: "
        f"expected {' | '.join(k.syntax for k in KINDS.values())}"
    )


def did_you_mean(spec: str) -> str:
    """The ``--target`` value ``spec`` probably meant, its kind's scheme corrected ("refrence" ->
    "reference", "cmd ./a" or "command:./a" -> "cmd:./a", "mqqb:host" -> "mqqb://host", a bare
    command line -> "cmd:<it>"); "" when no registered kind is close."""
    import difflib

    import harness.cases.targets  # noqa: F401

    best, best_score, best_rest = "", 0.0, ""
    for kind in KINDS.values():
        word = kind.scheme.rstrip(":/")
        for head, rest in _splits(spec, kind):
            score = difflib.SequenceMatcher(None, head.lower(), word).ratio()
            if score > best_score:
                best, best_score, best_rest = kind.scheme, score, rest
    if best_score < 0.6:  # a bare command line ("python adapter.py", "./adapter") is a cmd: target
        bare = spec.strip()
        command = bool(bare) and (" " in bare or bare.startswith((".", "/")) or bare.endswith(".py"))
        command = command and "cmd:" in KINDS
        return "cmd:" + bare if command else ""
    if not best.endswith((":", "//")) and best_rest and not best_rest.startswith("?"):
        best_rest = "?" + best_rest.lstrip(":/ ")  # reference's options follow a "?"
    return best + best_rest


def _splits(spec: str, kind: TargetKind) -> list[tuple[str, str]]:
    """Ways to read ``spec`` as a (mistyped) scheme word and the rest of the value."""
    out = []
    stripped = spec.strip()
    for sep in ("://", ":", "?", " "):
        head, found, rest = stripped.partition(sep)
        if found:
            out.append((head, rest.lstrip() if sep == " " else rest))
    out.append((stripped, ""))
    if kind.scheme.endswith((":", "//")):  # "cmdpython a.py": a scheme without its separator
        word = kind.scheme.rstrip(":/")
        if stripped.lower().startswith(word) and len(stripped) > len(word):
            out.append((word, stripped[len(word) :].lstrip(":/ ")))
    return out


def target_help() -> str:
    """The ``--target`` help: every registered kind, its syntax and what it is."""
    import harness.cases.targets  # noqa: F401

    return "; ".join(f"{k.syntax}: {k.summary}" for k in KINDS.values())


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
