"""The case schema: ``case.schema.json``, validated, and its violations told as docs/cases.md's errors.

Renders "Keys" and "Errors" of docs/cases.md as far as JSON Schema (draft 2020-12, validated with
``jsonschema``) can say them: the keys of a case, their types, patterns and enumerations, the
wire actions of the action registry (harness.cases.actions).  A violation is the best-matching
error of ``jsonschema``, told as one :class:`CaseError` naming file, line and key (an unknown key
with the known one it is closest to, a wrong type with the type expected, ...).  Also the case id
of the schema as an argparse type (:func:`case_id`).  The other variants of a matrix document are
checked only where substitution changed them (harness.cases.variants); what the schema cannot
express is checked after it (harness.cases.semantics).
"""

from __future__ import annotations

import argparse
import difflib
import functools
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError, best_match

from harness.cases.lines import CaseError, Lines, PathT, format_path
from harness.cases.wirecheck import load_actions

__all__ = [
    "SCHEMA_PATH",
    "case_id",
    "did_you_mean",
    "inlined_schema",
    "schema",
    "type_word",
    "validate",
    "validate_def",
]

SCHEMA_PATH = Path(__file__).with_name("case.schema.json")


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
def inlined_schema() -> dict[str, Any]:
    """:func:`schema` with its ``$defs`` references inlined (:func:`_inline_refs`): what the
    validators check against, and whose subschemas the matrix variants are checked with."""
    full = schema()
    inlined: dict[str, Any] = _inline_refs(full, full["$defs"])
    return inlined


@functools.cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(inlined_schema())


_TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}


def type_word(value: Any) -> str:
    """The JSON type of ``value`` as an error message says it ("a mapping", "a list", ...)."""
    if isinstance(value, bool):
        return "a boolean"
    for name, word in (("object", dict), ("array", list), ("string", str), ("integer", int), ("number", float)):
        if isinstance(value, word):
            return _TYPE_WORDS[name]
    return "null" if value is None else type(value).__name__


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """What an error message adds for a misspelt ``name``: " (did you mean 'x'?)" with the choice
    closest to it, or "" when none is close."""
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
            f"unknown key {key!r}{did_you_mean(key, known)}; expected one of: {', '.join(known)}",
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
        return lines.error(path, f"wrong type: expected {want}, got {type_word(inst)} ({inst!r})")
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
