"""Matrix expansion of a case document (docs/cases.md, "Matrices").

A case with ``matrix: {name: [v1, v2, ...], ...}`` stands for one variant per combination of the
values (the cartesian product, in the order the keys and values are written).  In each variant,
``${name}`` is replaced in every string of the document, keys included: a string that is exactly
one placeholder takes the value itself (``Priority: ${prio}`` gives an integer), a placeholder
inside a longer string takes ``str(value)``.  ``id`` and ``matrix`` are never substituted.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from typing import Any

from harness.cases.lines import Lines, PathT

__all__ = ["PLACEHOLDER", "check_placeholders", "expand", "substitute"]

PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_WHOLE = re.compile(r"^\$\{([^}]*)\}$")
_FIXED = ("id", "matrix")  # top-level keys that are never substituted
MAX_VARIANTS = 1000  # variants one matrix may expand to


def _strings(obj: Any, path: PathT) -> Iterator[tuple[PathT, str]]:
    if isinstance(obj, str):
        yield path, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(k, str):
                yield (*path, k), k
            yield from _strings(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _strings(v, (*path, i))


def check_placeholders(doc: dict[str, Any], lines: Lines) -> None:
    """Every ``${name}`` names a key of the document's matrix, and the id has none."""
    matrix = doc.get("matrix")
    keys = set(matrix) if isinstance(matrix, dict) else set()
    for top, value in doc.items():
        if top == "matrix":
            continue
        for path, text in _strings({top: value}, ()):
            for name in PLACEHOLDER.findall(text):
                if top in _FIXED:
                    raise lines.error(path, "the id cannot hold a placeholder: variants are named id[name=value,...]")
                if name not in keys:
                    known = ", ".join(sorted(keys)) or "none (the case has no matrix)"
                    raise lines.error(path, f"placeholder ${{{name}}} has no matrix key; matrix keys: {known}")


def _sub_str(text: str, values: dict[str, Any]) -> Any:
    whole = _WHOLE.match(text)
    if whole and whole.group(1) in values:
        return values[whole.group(1)]
    return PLACEHOLDER.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), text)


def _key_substituter(values: dict[str, Any]) -> Callable[[str], str]:
    def sub(key: str) -> str:
        return str(_sub_str(key, values)) if "${" in key else key

    return sub


def substitute(obj: Any, values: dict[str, Any]) -> Any:
    """``obj`` with every ``${name}`` replaced by ``values[name]`` (keys of mappings included)."""
    if isinstance(obj, str):
        return _sub_str(obj, values) if "${" in obj else obj
    if isinstance(obj, dict):
        return {
            (_sub_str(k, values) if isinstance(k, str) and "${" in k else k): substitute(v, values)
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [substitute(v, values) for v in obj]
    return obj


def expand(doc: dict[str, Any], lines: Lines) -> list[tuple[dict[str, Any], dict[str, Any], Lines]]:
    """The variants of a document: (variant values, substituted document, its lines).

    A document without a matrix is its own single variant, with empty values.
    """
    matrix = doc.get("matrix")
    if not isinstance(matrix, dict) or not matrix:
        return [({}, doc, lines)]
    names = list(matrix)
    count = 1
    for n in names:
        count *= len(matrix[n]) if isinstance(matrix[n], list) else 1
    if count > MAX_VARIANTS:
        raise lines.error(("matrix",), f"{count} variants: a matrix expands to at most {MAX_VARIANTS}")
    variants = []
    for combo in itertools.product(*(matrix[n] for n in names)):
        values = dict(zip(names, combo, strict=True))
        out = {k: (v if k in _FIXED else substitute(v, values)) for k, v in doc.items()}
        variants.append((values, out, lines.mapped(_key_substituter(values))))
    return variants
