"""The checks the schema cannot express, on a schema-valid case (one matrix variant).

Renders "Events and arguments" and "References and values" of docs/cases.md: every step's
``event`` is one a case may raise (harness.cases.eventnames: the [MS-MQDMPR] 3.1.4, 3.1.6, 3.1.7
and 3.2.7 events of ``harness.model.QueueManager`` and ``harness.model.Cursor``) with that
event's argument names, and a Cursor event its ``cursor``; every argument's value is of the type
the protocol carries it as (iTimeout, [MS-MQDMPR] 3.1.7.1.10 and 3.1.2.3, and ``seconds``: a
number of seconds or ``Infinite``; a boolean, whole number, number or enumeration where the
reference model declares one); every queue, message, open descriptor, cursor and transaction
named in ``given.locked``, ``when`` and ``then`` is one that ``given`` or a step defines (a
position: a message, or ``Start``/``End`` of [MS-MQDMPR] 3.1.1.2); an ``error`` expectation
names a kind the runner grades.  A wire case ([MS-MQQB]) is checked by harness.cases.wirecheck.
Every failure is a :class:`~harness.cases.lines.CaseError` naming file, line and key.
"""

from __future__ import annotations

import enum
import json
import math
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from harness.cases.eventnames import event_parameters, known_events
from harness.cases.events import ARG_KINDS, RESULT_KINDS
from harness.cases.events import spec_events as model_spec_events
from harness.cases.lines import Lines, PathT
from harness.cases.schema import did_you_mean, type_word
from harness.cases.wire import is_wire_doc
from harness.cases.wirecheck import check_wire_case

__all__ = ["GRADED_ERROR_KINDS", "SPECIAL_POSITIONS", "check_case"]

# Argument names whose string values name an object of `given` (harness.cases.events.ARG_KINDS).
_ARG_KINDS = {arg: kind.removesuffix("-id") for arg, kind in ARG_KINDS.items() if kind != "reader"}
# Return values that name a position or a message (by its message's id, or Start/End).
_RESULT_KINDS = {name: "position" for name, kind in RESULT_KINDS.items() if kind in ("position", "message")}
SPECIAL_POSITIONS = ("Start", "End")

#: The error kinds ``expect.error`` can grade (harness.cases.runner): an Unsupported event makes
#: the case unsupported and an Error makes it an error, whatever the step expects.
GRADED_ERROR_KINDS = ("UndefinedBehaviour",)


def _expected_values(value: Any, path: PathT) -> Iterator[tuple[Any, PathT]]:
    """Each value an expectation admits, with the path of the expectation that names it: the values
    of its ``readings`` (each under its reading's path), the members of ``any_of``, the value of
    ``is``, or the value itself."""
    if isinstance(value, dict) and isinstance(value.get("readings"), dict):
        for name, reading in value["readings"].items():
            yield from _expected_values(reading, (*path, "readings", name))
        return
    if isinstance(value, dict) and isinstance(value.get("any_of"), list):
        values = value["any_of"]
    elif isinstance(value, dict) and "is" in value:
        values = [value["is"]]
    else:
        values = [value]
    for v in values:
        yield v, path


def _check_error_values(value: Any, path: PathT, lines: Lines) -> None:
    """Each kind an ``error`` expectation names (in its readings, ``any_of`` or ``is``) is one
    the runner grades: a misspelt kind would never match."""
    for v, where in _expected_values(value, path):
        if isinstance(v, str) and v not in GRADED_ERROR_KINDS:
            raise lines.error(
                where,
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
        what = "NaN" if isinstance(value, float) else type_word(value)
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
        return f"a {choice.__name__} name ({', '.join(members)}){did_you_mean(str(value), members)}"
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
        for v, where in _expected_values(value, path):
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
            raise lines.error(
                where, f"unknown {kind_word} reference {v!r}{did_you_mean(v, known)}; given defines: {listed}"
            )


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
            f"unknown event {event!r}{did_you_mean(event, allowed)}; events are the [MS-MQDMPR] "
            "events of QueueManager and Cursor in snake_case",
        )
    params = event_parameters(event)
    if params is None:
        return
    for arg in args:
        if arg not in params:
            raise lines.error(
                ("when", i, "args", arg),
                f"unknown argument {arg!r} of {event}{did_you_mean(arg, params)}; "
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
