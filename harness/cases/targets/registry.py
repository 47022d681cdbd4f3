"""The registry of target kinds: every kind a module of this package declares
(harness.cases.targets.kind), and what is read from them.

:func:`make_target` finds the kind of a ``--target`` value by its scheme and :func:`target_help`
writes the ``--target`` help of the CLI and the pytest plugin from the registry.  The kinds are
found by listing the modules of the package (:func:`load_kinds`), so a new kind is one new module.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import pkgutil
from pathlib import Path
from typing import Any

from harness.cases.targets.kind import KINDS, TargetKind

__all__ = [
    "did_you_mean",
    "load_kinds",
    "make_target",
    "target_help",
]


@functools.cache
def load_kinds() -> None:
    """Import every module of harness.cases.targets: each declares its kind (:data:`KINDS`)."""
    package = __name__.rpartition(".")[0]
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        importlib.import_module(f"{package}.{module.name}")


def make_target(spec: str, *, timeout: float = 10.0) -> Any:
    """The target a ``--target`` value names; ``timeout`` is a subprocess target's per-request
    timeout (in-process targets are timed by the runner).  ValueError lists the kinds."""
    load_kinds()

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
    load_kinds()

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
    load_kinds()

    return "; ".join(f"{k.syntax}: {k.summary}" for k in KINDS.values())
