"""The case schema and the checks it cannot express: the rules of docs/cases.md, enforced.

Renders the case format of docs/cases.md in two layers: ``case.schema.json`` (JSON Schema draft
2020-12: keys, types, patterns; validated with ``jsonschema``), then semantic checks on a
schema-valid document: every step's ``event`` is a spec event ([MS-MQDMPR] 3.1.4, 3.1.6, 3.1.7
and 3.2.7, as ``harness.model.QueueManager`` and ``harness.model.Cursor`` render them, see
:func:`known_events`) with the spec's argument names, and every queue, message, open descriptor,
cursor and transaction named in ``given.locked``, ``when`` and ``then`` is one that ``given``
defines.  Every failure is a :class:`CaseError` naming file, line and key.
"""

from __future__ import annotations

import argparse
import difflib
import enum
import functools
import json
import math
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError, best_match

from harness.cases.events import ARG_KINDS, PSEUDO_EVENTS, RESULT_KINDS
from harness.cases.events import spec_events as model_spec_events
from harness.cases.lines import CaseError, Lines, PathT, format_path
from harness.cases.matrix import PLACEHOLDER
from harness.cases.wire import is_wire_doc
from harness.cases.wirecheck import check_wire_case, load_actions

__all__ = [
    "SCHEMA_PATH",
    "WHOLE_DOCUMENT",
    "VariantCheck",
    "case_id",
    "check_case",
    "event_parameters",
    "known_events",
    "register_events",
    "schema",
    "substitution_units",
    "validate",
    "validate_def",
]

SCHEMA_PATH = Path(__file__).with_name("case.schema.json")

# Names a target may add to the spec events (register_events); loaders accept them too.
_EXTRA_EVENTS: set[str] = set()


# ------------------------------------------------------------------------------- the events
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


# ------------------------------------------------------------------------------- the schema
@functools.cache
def schema() -> dict[str, Any]:
    """case.schema.json, parsed, with the wire actions of the action registry
    (harness.cases.actions; a test keeps the file's own list equal to it)."""
    result: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    result["$defs"]["wireStep"]["properties"]["action"]["enum"] = sorted(load_actions())
    return result


def _inline_refs(node: Any, defs: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """``node`` with every ``{"$ref": "#/$defs/X"}`` replaced by X itself (the schema has no
    recursive definitions), so that validation does not resolve references case after case."""
    if isinstance(node, dict):
        ref = node.get("$ref", "")
        if len(node) == 1 and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in seen:
                raise ValueError(f"case.schema.json: recursive definition {name!r}")
            return _inline_refs(defs[name], defs, (*seen, name))
        return {k: v if k == "$defs" else _inline_refs(v, defs, seen) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline_refs(v, defs, seen) for v in node]
    return node


@functools.cache
def _inlined() -> dict[str, Any]:
    full = schema()
    inlined: dict[str, Any] = _inline_refs(full, full["$defs"])
    return inlined


@functools.cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(_inlined())


_TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}


def _type_word(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    for name, word in (("object", dict), ("array", list), ("string", str), ("integer", int), ("number", float)):
        if isinstance(value, word):
            return _TYPE_WORDS[name]
    return "null" if value is None else type(value).__name__


def _suggest(name: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _resolve(subschema: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = subschema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _resolve(schema()["$defs"][ref.rsplit("/", 1)[1]])
    return subschema


def _known_keys(subschema: Mapping[str, Any]) -> list[str]:
    return list(_resolve(subschema).get("properties", {}))


def _schema_error(error: ValidationError, lines: Lines, prefix: PathT = ()) -> CaseError:
    path: PathT = prefix + tuple(error.absolute_path)
    v, inst = error.validator, error.instance
    vv: Any = error.validator_value
    sch: Any = error.schema
    in_names = "propertyNames" in error.absolute_schema_path
    if in_names and isinstance(inst, str):
        # An unknown key where ADM attribute names (PascalCase) are allowed besides the known keys.
        hint = f"; did you mean {inst[:1].upper() + inst[1:]!r}?" if inst[:1].islower() else ""
        return lines.error((*path, inst), f"unknown key {inst!r} (ADM attribute names are PascalCase{hint})")
    if v == "required":
        missing = [k for k in vv if isinstance(inst, dict) and k not in inst]
        key = missing[0] if missing else ""
        return CaseError(lines.file, lines.line(path), format_path((*path, key)), f"missing required key {key!r}")
    if v == "additionalProperties" and isinstance(inst, dict):
        known = list(sch.get("properties", {}))
        extra = [k for k in inst if k not in known]
        key = extra[0] if extra else ""
        return lines.error(
            (*path, key),
            f"unknown key {key!r}{_suggest(key, known)}; expected one of: {', '.join(known)}",
        )
    if len(path) == 4 and path[0] == "when" and path[2] == "expect":
        return lines.error(
            path,
            "an expected value is a literal, {is: ...}, {any_of: [...]}, {absent: true} or "
            "{readings: {NAME: value, ...}, requirement: <id>}, each with an optional requirement: <id>",
        )
    if v == "not" and len(path) == 2 and path[0] == "when":
        return lines.error((*path, "expect_error"), "a step has either expect or expect_error, not both")
    if v == "type":
        types = vv if isinstance(vv, list) else [vv]
        want = " or ".join(_TYPE_WORDS.get(str(t), str(t)) for t in types)
        return lines.error(path, f"wrong type: expected {want}, got {_type_word(inst)} ({inst!r})")
    if v == "enum":
        return lines.error(path, f"{inst!r} is not one of: {', '.join(map(str, vv))}")
    if v == "const":
        return lines.error(path, f"must be {json.dumps(vv)}, got {json.dumps(inst, default=str)}")
    if v == "pattern":
        return lines.error(path, f"{inst!r} does not match the pattern {vv!r}")
    if v == "minItems":
        return lines.error(path, "must not be empty")
    if v == "minLength":
        return lines.error(path, "must not be empty")
    return lines.error(path, error.message)


def validate(doc: Any, lines: Lines) -> None:
    """Raise the best-matching schema violation of ``doc`` as a CaseError (none: return).

    The compiled validator answers ``is_valid`` first; only a document that fails is walked again
    with ``iter_errors`` for the best-matching error (file, line and key of the message).
    """
    validator = _validator()
    if validator.is_valid(doc):
        return
    error = best_match(validator.iter_errors(doc))
    if error is not None:
        raise _schema_error(error, lines)


# ----------------------------------------------------------------------- matrix variants
# A variant of a matrix document differs from the document's first variant only where a
# ``${name}`` was substituted (harness.cases.matrix: strings, keys included; ``id`` and ``matrix``
# never).  A whole placeholder may become any value and a key may change, so the first variant is
# validated in full, and every other variant only in its *units*: for each placeholder, the
# deepest part of the document above it that the schema checks on its own.  The schema is walked
# from the root down the placeholder's path for as long as each level only constrains its parts
# one by one (an object: type, properties, additionalProperties, required; a list: type, items,
# a length that substitution cannot change) and the key taken is not itself a placeholder; the
# part reached is the unit, checked against the subschema reached.  No placeholder above the
# root's properties: the unit is the whole document.
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
    sub: dict[str, Any] = _inlined()
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
        # (a $ref beside other keywords is left in place by _inline_refs: it needs the $defs)
        validator = jsonschema.Draft202012Validator({**sub, "$defs": _inlined()["$defs"]})
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


@functools.cache
def _def_validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({"$defs": schema()["$defs"], "$ref": f"#/$defs/{name}"})


def validate_def(name: str, value: Any, path: PathT, lines: Lines) -> None:
    """Validate one part of a document (``value`` at ``path``) against ``$defs/<name>``."""
    validator = _def_validator(name)
    if validator.is_valid(value):
        return
    error = best_match(validator.iter_errors(value))
    if error is not None:
        raise _schema_error(error, lines, path)


# --------------------------------------------------------------------------- semantic checks
# Argument names whose string values name an object of `given` (harness.cases.events.ARG_KINDS).
_ARG_KINDS = {arg: kind.removesuffix("-id") for arg, kind in ARG_KINDS.items() if kind != "reader"}
# Return values that name a position or a message (by its message's id, or Start/End).
_RESULT_KINDS = {name: "position" for name, kind in RESULT_KINDS.items() if kind in ("position", "message")}
SPECIAL_POSITIONS = ("Start", "End")

#: The error kinds ``expect.error`` can grade (harness.cases.runner): an Unsupported event makes
#: the case unsupported and an Error makes it an error, whatever the step expects.
GRADED_ERROR_KINDS = ("UndefinedBehaviour",)


def _check_error_values(value: Any, path: PathT, lines: Lines) -> None:
    """Each kind an ``error`` expectation names (in its readings, ``any_of`` or ``is``) is one
    the runner grades: a misspelt kind would never match."""
    if isinstance(value, dict) and isinstance(value.get("readings"), dict):
        for name, reading in value["readings"].items():
            _check_error_values(reading, (*path, "readings", name), lines)
        return
    if isinstance(value, dict) and isinstance(value.get("any_of"), list):
        values = value["any_of"]
    elif isinstance(value, dict) and "is" in value:
        values = [value["is"]]
    else:
        values = [value]
    for v in values:
        if isinstance(v, str) and v not in GRADED_ERROR_KINDS:
            raise lines.error(
                path,
                f"error {v!r} is not an error kind the runner grades; expected one of: "
                f"{', '.join(GRADED_ERROR_KINDS)} (Unsupported and Error are not graded values)",
            )


_KIND_WORDS = {"open": "open descriptor"}

#: Arguments that are a number of seconds, or ``Infinite`` (harness.cases.events: iTimeout of the
#: read events, [MS-MQDMPR] 3.1.7.1.10, 3.1.2.3; ``seconds`` of the advance_clock operation).
_SECONDS_ARGUMENTS = frozenset({"iTimeout", "seconds"})
_INFINITE_WORDS = ("Infinite", "INFINITE")
#: Arguments the protocol carries otherwise than their declared type (iLookupId: a message by its id)
_OWN_FORMS = frozenset({"iLookupId"})


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)


def _value_text(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_seconds(arg: str, value: Any, path: PathT, lines: Lines) -> None:
    """iTimeout and ``seconds``: a number of seconds, or ``Infinite`` (iTimeout may be null)."""
    if value is None and arg == "iTimeout":
        return
    if not (_is_number(value) or (isinstance(value, str) and value in _INFINITE_WORDS)):
        what = "NaN" if isinstance(value, float) else _type_word(value)
        raise lines.error(
            path,
            f"{arg} {_value_text(value)} is not a number of seconds (expected a number, or Infinite; "
            f"{what} is not one)",
        )


_SCALARS: dict[type, tuple[Callable[[Any], bool], str]] = {
    bool: (lambda v: isinstance(v, bool), "true or false"),
    int: (lambda v: isinstance(v, int) and not isinstance(v, bool), "a whole number"),
    float: (_is_number, "a number"),
}


def _expected_of(choice: Any, value: Any) -> str | None:
    """What ``value`` should have been to be of the declared type ``choice``: None when it is
    (or when ``choice`` is a type the protocol carries otherwise, text or any value: not checked
    here)."""
    scalar = _SCALARS.get(choice)
    if scalar is not None:
        return None if scalar[0](value) else scalar[1]
    if isinstance(choice, type) and issubclass(choice, enum.Enum):
        if isinstance(value, str) and value in choice.__members__:
            return None
        members = list(choice.__members__)
        return f"a {choice.__name__} name ({', '.join(members)}){_suggest(str(value), members)}"
    return None


def _check_argument_value(event: str, arg: str, value: Any, path: PathT, lines: Lines) -> None:
    """An argument's value is of the type the protocol carries it as (harness.cases.events
    ``argument_kind``): a number of seconds (or ``Infinite``) for iTimeout and ``seconds``, and
    for an argument the reference model declares as a boolean, a whole number, a number or an
    enumeration, a value of that type (an enumeration by a member's name); ``null`` where the
    declared type allows it.  A value of another type would reach the target as a TypeError
    of the implementation, not as the case's mistake."""
    if arg in ARG_KINDS or arg in _OWN_FORMS:  # objects of the case: checked by name
        return
    if arg in _SECONDS_ARGUMENTS:
        _check_seconds(arg, value, path, lines)
        return
    found = model_spec_events().get(event)
    hint = found.types.get(arg) if found is not None else None
    if hint is None:
        return
    optional = False
    choices: tuple[Any, ...] = (hint,)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        choices = tuple(a for a in typing.get_args(hint) if a is not type(None))
        optional = len(choices) < len(typing.get_args(hint))
    if value is None and optional:
        return
    expected = []
    for choice in choices:
        missed = _expected_of(choice, value)
        if missed is None:
            return
        expected.append(missed)
    if optional:
        expected.append("null")
    raise lines.error(path, f"{arg} {_value_text(value)} is not {' or '.join(expected)} ({event})")


class _Names:
    def __init__(self) -> None:
        self.defined: dict[str, dict[str, PathT]] = {
            k: {} for k in ("queue", "message", "open", "cursor", "transaction")
        }

    def define(self, kind: str, name: Any, path: PathT, lines: Lines, unique: bool = True) -> None:
        if not isinstance(name, str):
            return
        seen = self.defined[kind]
        if unique and name in seen:
            first = lines.line(seen[name])
            raise lines.error(path, f"duplicate {kind} name {name!r} (first defined at line {first})")
        seen.setdefault(name, path)

    def check(self, kind: str, value: Any, path: PathT, lines: Lines) -> None:
        if isinstance(value, dict) and isinstance(value.get("readings"), dict):
            for name, reading in value["readings"].items():
                self.check(kind, reading, (*path, "readings", name), lines)
            return
        if isinstance(value, dict) and "any_of" in value:
            values = value["any_of"]
        elif isinstance(value, dict) and "is" in value:
            values = [value["is"]]
        else:
            values = [value]
        for v in values:
            if not isinstance(v, str):
                continue
            if kind == "position":
                if v in SPECIAL_POSITIONS or v in self.defined["message"]:
                    continue
                kind_word, known = "message", [*self.defined["message"], *SPECIAL_POSITIONS]
            else:
                if v in self.defined[kind]:
                    continue
                kind_word, known = _KIND_WORDS.get(kind, kind), list(self.defined[kind])
            listed = ", ".join(known) if known else "none"
            raise lines.error(path, f"unknown {kind_word} reference {v!r}{_suggest(v, known)}; given defines: {listed}")


def _define_given(given: Mapping[str, Any], names: _Names, lines: Lines) -> None:
    """The objects ``given`` creates (queues, messages, transactions, descriptors, cursors)."""
    for i, q in enumerate(given.get("queues") or []):
        names.define("queue", q.get("name"), ("given", "queues", i, "name"), lines)
        for j, m in enumerate(q.get("messages") or []):
            names.define("message", m.get("id"), ("given", "queues", i, "messages", j, "id"), lines)
    for i, t in enumerate(given.get("transactions") or []):
        names.define("transaction", t, ("given", "transactions", i), lines)
    for i, d in enumerate(given.get("open") or []):
        names.define("open", d.get("name"), ("given", "open", i, "name"), lines)
        names.check("queue", d.get("queue"), ("given", "open", i, "queue"), lines)
    for i, c in enumerate(given.get("cursors") or []):
        names.define("cursor", c.get("name"), ("given", "cursors", i, "name"), lines)
        names.check("open", c.get("open"), ("given", "cursors", i, "open"), lines)


def _define_step_objects(steps: list[dict[str, Any]], names: _Names, lines: Lines) -> None:
    """Objects a step creates: a mapping argument with ``id`` (a message) or ``name`` (the kind of
    the argument), and the transaction Create Transaction (3.1.7.1.8) creates."""
    for i, step in enumerate(steps):
        for arg, value in (step.get("args") or {}).items():
            path = ("when", i, "args", arg)
            if isinstance(value, dict):
                if isinstance(value.get("id"), str):
                    names.define("message", value["id"], path, lines, unique=False)
                kind = _ARG_KINDS.get(arg)
                if kind and kind != "position" and isinstance(value.get("name"), str):
                    names.define(kind, value["name"], path, lines, unique=False)
            elif step["event"] == "create_transaction" and arg == "iTransactionIdentifier":
                names.define("transaction", value, path, lines, unique=False)


def _check_event_arguments(i: int, event: str, args: Mapping[str, Any], allowed: frozenset[str], lines: Lines) -> None:
    """Step ``i`` raises a known event with that event's arguments (and a Cursor event its cursor)."""
    if event not in allowed:
        raise lines.error(
            ("when", i, "event"),
            f"unknown event {event!r}{_suggest(event, allowed)}; events are the [MS-MQDMPR] "
            "events of QueueManager and Cursor in snake_case",
        )
    params = event_parameters(event)
    if params is None:
        return
    for arg in args:
        if arg not in params:
            raise lines.error(
                ("when", i, "args", arg),
                f"unknown argument {arg!r} of {event}{_suggest(arg, params)}; "
                f"expected: {', '.join(params) or 'none'}",
            )
    if params[:1] == ("cursor",) and "cursor" not in args:
        raise lines.error(("when", i, "args", "cursor"), f"missing required key 'cursor' ({event} is a Cursor event)")


def _check_step(i: int, step: Mapping[str, Any], allowed: frozenset[str], names: _Names, lines: Lines) -> None:
    """Step ``i``: its event and arguments, the objects its arguments and results name, its errors."""
    event = step["event"]
    args: dict[str, Any] = step.get("args") or {}
    _check_event_arguments(i, event, args, allowed, lines)
    for arg, value in args.items():
        kind = _ARG_KINDS.get(arg)
        if kind is not None and not isinstance(value, dict):
            names.check(kind, value, ("when", i, "args", arg), lines)
        _check_argument_value(event, arg, value, ("when", i, "args", arg), lines)
    expect: dict[str, Any] = step.get("expect") or {}
    for name, value in expect.items():
        kind = _RESULT_KINDS.get(name)
        if kind is not None:
            names.check(kind, value, ("when", i, "expect", name), lines)
    if "error" in expect:
        _check_error_values(expect["error"], ("when", i, "expect", "error"), lines)


def _check_then(then: Mapping[str, Any], names: _Names, lines: Lines) -> None:
    """The objects ``then`` names: queues, their messages, cursors and the positions they reference."""
    for q, positions in (then.get("queues") or {}).items():
        names.check("queue", q, ("then", "queues", q), lines)
        for j, pos in enumerate(positions):
            names.check("message", pos.get("message"), ("then", "queues", q, j, "message"), lines)
    for c, state in (then.get("cursors") or {}).items():
        names.check("cursor", c, ("then", "cursors", c), lines)
        if "MessagePositionReference" in state:
            ref_path: PathT = ("then", "cursors", c, "MessagePositionReference")
            names.check("position", state["MessagePositionReference"], ref_path, lines)


def check_case(doc: dict[str, Any], lines: Lines, events: Iterable[str] = ()) -> None:
    """The checks the schema cannot express, on a schema-valid document (one matrix variant):
    every object a case names is defined (by ``given`` or by a step), every step raises a known
    event with its arguments, each of the type the protocol carries it as."""
    if is_wire_doc(doc):  # [MS-MQQB] wire cases: harness.cases.wire
        check_wire_case(doc, lines)
        return
    allowed = known_events(events)
    given: dict[str, Any] = doc.get("given") or {}
    steps: list[dict[str, Any]] = doc.get("when") or []
    names = _Names()
    _define_given(given, names, lines)
    _define_step_objects(steps, names, lines)
    for i, lock in enumerate(given.get("locked") or []):
        names.check("message", lock.get("message"), ("given", "locked", i, "message"), lines)
        names.check("transaction", lock.get("transaction"), ("given", "locked", i, "transaction"), lines)
    for i, step in enumerate(steps):
        _check_step(i, step, allowed, names, lines)
    _check_then(doc.get("then") or {}, names, lines)


@functools.cache
def _case_id_pattern() -> re.Pattern[str]:
    return re.compile(schema()["properties"]["id"]["pattern"])


def case_id(text: str) -> str:
    """A case id as the case schema has it (``harness/cases/case.schema.json``: letters, digits,
    ``.``, ``_`` and ``-``, starting with a letter or digit): what ``run`` loads, and never a path.
    An argparse ``type`` (as those of harness.argtypes): anything else is a usage error."""
    pattern = _case_id_pattern()
    if not pattern.match(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a case id (letters, digits, '.', '_' and '-', starting with a letter or digit: "
            f"the pattern {pattern.pattern} of harness/cases/case.schema.json)"
        )
    return text
