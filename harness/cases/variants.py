"""The schema check of a matrix document's variants: only what substitution can change.

Renders "Matrices" and "Loading at scale" of docs/cases.md (the schema checked once per document).
A variant of a matrix document differs from the document's first variant only where a
``${name}`` was substituted (harness.cases.matrix: strings, keys included; ``id`` and ``matrix``
never).  A whole placeholder may become any value and a key may change, so the first variant is
validated in full (harness.cases.schema.validate), and every other variant only in its *units*:
for each placeholder, the deepest part of the document above it that the schema checks on its
own.  The schema is walked from the root down the placeholder's path for as long as each level
only constrains its parts one by one (an object: type, properties, additionalProperties,
required; a list: type, items, a length that substitution cannot change) and the key taken is not
itself a placeholder; the part reached is the unit, checked against the subschema reached.  No
placeholder above the root's properties: the unit is the whole document.  A unit that fails makes
the whole variant go through the full check, so that the message is the one a full check gives.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import jsonschema

from harness.cases.lines import Lines, PathT
from harness.cases.matrix import PLACEHOLDER
from harness.cases.schema import inlined_schema, validate

__all__ = ["WHOLE_DOCUMENT", "VariantCheck", "substitution_units"]

WHOLE_DOCUMENT: PathT = ()
_OBJECT_ONLY = frozenset({"type", "properties", "additionalProperties", "required", "description", "title"})
_OBJECT_ONLY_ROOT = _OBJECT_ONLY | {"$schema", "$id", "$defs"}
_LIST_ONLY = frozenset({"type", "items", "minItems", "maxItems", "description"})
_SUB_VALIDATORS: dict[int, jsonschema.Draft202012Validator] = {}


def _placeholder_paths(obj: Any, path: PathT) -> Iterable[PathT]:
    if isinstance(obj, str):
        if "${" in obj:
            yield path
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(k, str) and "${" in k:
                yield (*path, k)
            yield from _placeholder_paths(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _placeholder_paths(v, (*path, i))


def _unit_of(doc: dict[str, Any], path: PathT) -> tuple[PathT, dict[str, Any]]:
    """The unit above the placeholder at ``path`` of ``doc``, and its subschema."""
    sub: dict[str, Any] = inlined_schema()
    node: Any = doc
    unit: PathT = ()
    for part in path:
        if isinstance(part, str) and "${" in part:
            break  # a key that substitution renames: its mapping is the unit
        keywords = _OBJECT_ONLY_ROOT if not unit else _OBJECT_ONLY
        if isinstance(node, dict) and set(sub) <= keywords and part in node:
            additional = sub.get("additionalProperties")
            nxt = sub.get("properties", {}).get(part, additional if isinstance(additional, dict) else None)
        elif isinstance(node, list) and set(sub) <= _LIST_ONLY and isinstance(sub.get("items"), dict):
            nxt = sub["items"]
        else:
            break
        if not isinstance(nxt, dict):
            break
        unit, sub, node = (*unit, part), nxt, node[part]
    return unit, sub


def substitution_units(doc: dict[str, Any], fixed: Iterable[str] = ("id", "matrix")) -> dict[PathT, dict[str, Any]]:
    """The parts of a matrix document that substitution can change, each with the subschema it
    is checked against in every variant (:data:`WHOLE_DOCUMENT`: the whole schema)."""
    skip = set(fixed)
    units: dict[PathT, dict[str, Any]] = {}
    for path in _placeholder_paths({k: v for k, v in doc.items() if k not in skip}, ()):
        unit, sub = _unit_of(doc, path)
        units.setdefault(unit, sub)
    if WHOLE_DOCUMENT in units:
        return {WHOLE_DOCUMENT: units[WHOLE_DOCUMENT]}
    return {u: sub for u, sub in units.items() if not any(u[: len(o)] == o and u != o for o in units)}


def _sub_validator(sub: dict[str, Any]) -> jsonschema.Draft202012Validator:
    validator = _SUB_VALIDATORS.get(id(sub))
    if validator is None:  # subschemas of the cached, inlined schema: ids are stable
        # (a $ref beside other keywords is left in place by inlined_schema: it needs the $defs)
        validator = jsonschema.Draft202012Validator({**sub, "$defs": inlined_schema()["$defs"]})
        _SUB_VALIDATORS[id(sub)] = validator
    return validator


def _unit_value(doc: Any, unit: PathT) -> tuple[bool, Any]:
    """(found, the value at ``unit`` of ``doc``)."""
    node = doc
    for part in unit:
        inside = part in node if isinstance(node, dict) else isinstance(node, list) and 0 <= int(part) < len(node)
        if not inside:
            return False, None
        node = node[part]
    return True, node


def _cited_names(obj: Any, pattern: re.Pattern[str]) -> list[str]:
    """The placeholder names in the strings (keys included) of ``obj``."""
    if isinstance(obj, str):
        return pattern.findall(obj) if "${" in obj else []
    names: list[str] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            names += _cited_names(k, pattern) + _cited_names(v, pattern)
    elif isinstance(obj, list):
        for v in obj:
            names += _cited_names(v, pattern)
    return names


class VariantCheck:
    """The schema check of the variants of one matrix document, whose first variant passed
    :func:`validate`: in each variant only the units (:func:`substitution_units`) are checked, and
    a unit only once per combination of the matrix values it cites (its substituted value is a
    function of the document and those values).  A unit that fails makes the whole variant go
    through :func:`validate`, for the very message a full check gives."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.units = substitution_units(doc)
        self.cited: dict[PathT, list[str]] = {}
        for unit in self.units:
            template = {k: v for k, v in doc.items() if k not in ("id", "matrix")} if not unit else doc
            _, value = _unit_value(template, unit)
            self.cited[unit] = list(dict.fromkeys(_cited_names(value, PLACEHOLDER)))
        self.passed: set[tuple[PathT, str]] = set()
        self.calls = 0  # units validated (the others were known to pass)

    def check(self, variant: dict[str, Any], lines: Lines, values: Mapping[str, Any]) -> None:
        """Raise the schema violation of ``variant`` (substituted with ``values``), if any."""
        for unit, sub in self.units.items():
            seen = (unit, repr([values.get(name) for name in self.cited[unit]]))
            if seen in self.passed:
                continue
            self.calls += 1
            found, value = _unit_value(variant, unit)
            if not (found and _sub_validator(sub).is_valid(value)):
                validate(variant, lines)
                return
            self.passed.add(seen)
