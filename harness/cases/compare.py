"""Comparing what a target returned and the state it ended in with what a case expects.

Renders the expectation rules of docs/cases.md ("References and values"): an expected value is
a literal, ``{any_of: [...]}`` (the spec allows more than one reaction; any of them passes, as
h2spec's verifiers do) or ``{absent: true}`` (the event returns no such value); ``then.queues``
lists every position of a queue's MessagePositionList ([MS-MQDMPR] 3.1.1.2) in order, each
with the attributes it checks; ``then.cursors`` checks the listed attributes of a Cursor
(3.2.1.2).  Each mismatch is a :class:`~harness.report.results.StepFailure` naming the step,
the value, expected and observed, and the spec section.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from harness.cases.grading import unwrap
from harness.results import StepFailure

__all__ = ["THEN_STEP", "compare_result", "compare_then", "describe", "field_matcher", "matches", "values_equal"]

THEN_STEP = -1  # StepFailure.step of a `then` check

_MISSING = object()


def values_equal(expected: Any, observed: Any) -> bool:
    """Literal equality on JSON-like data; booleans are never numbers, ints equal floats."""
    if isinstance(expected, bool) or isinstance(observed, bool):
        return isinstance(expected, bool) and isinstance(observed, bool) and expected == observed
    if isinstance(expected, int | float) and isinstance(observed, int | float):
        return expected == observed
    if isinstance(expected, list | tuple) and isinstance(observed, list | tuple):
        return len(expected) == len(observed) and all(
            values_equal(e, o) for e, o in zip(expected, observed, strict=True)
        )
    if isinstance(expected, Mapping) and isinstance(observed, Mapping):
        return expected.keys() == observed.keys() and all(values_equal(v, observed[k]) for k, v in expected.items())
    return type(expected) is type(observed) and bool(expected == observed)


def matches(expected: Any, observed: Any = _MISSING) -> bool:
    """Whether ``observed`` (``_MISSING`` when the value is absent) satisfies ``expected``.

    ``null`` expects the value absent or null; ``{absent: true}`` expects it absent (or null);
    ``{is: X}`` is the literal X; a ``requirement`` annotation (harness.cases.grading) is ignored.
    """
    expected = unwrap(expected)
    present = observed is not _MISSING and observed is not None
    if isinstance(expected, Mapping) and set(expected) == {"any_of"}:
        return any(matches(e, observed) for e in expected["any_of"])
    if isinstance(expected, Mapping) and set(expected) == {"absent"}:
        return (not present) if expected["absent"] else present
    if expected is None:
        return not present
    return present and values_equal(expected, observed)


def describe(value: Any = _MISSING) -> Any:
    """An observed value for a report: ``"<absent>"`` when missing."""
    return "<absent>" if value is _MISSING else value


#: Grades a failure: (failure, the expectation as written, a matcher of any expectation against
#: the observed value) -> the failure attributed (harness.cases.grading.graded).
Grader = Callable[[StepFailure, Any, Callable[[Any], bool]], StepFailure]


def _as_is(failure: StepFailure, expected: Any, matcher: Callable[[Any], bool]) -> StepFailure:
    return failure


def _matcher(observed: Any) -> Callable[[Any], bool]:
    return lambda expected: matches(expected, observed)


def field_matcher(result: Mapping[str, Any], name: str) -> Callable[[Any], bool]:
    """Tests any expectation against the value ``name`` of an event's result (absent: missing)."""
    return _matcher(result.get(name, _MISSING))


def compare_result(
    index: int,
    event: str,
    expect: Mapping[str, Any],
    result: Mapping[str, Any],
    section: str,
    grader: Grader = _as_is,
) -> list[StepFailure]:
    """A step's ``expect`` against the values the event returned; ``grader`` attributes each
    failure to its requirement (harness.cases.grading.graded)."""
    failures = []
    for name, expected in expect.items():
        observed = result.get(name, _MISSING)
        if not matches(expected, observed):
            failure = StepFailure(
                step=index,
                event=event,
                field=name,
                expected=unwrap(expected),
                observed=describe(observed),
                section=section,
                message=(
                    f"step {index} ({event}): {name} expected {_show(expected)}, "
                    f"observed {_show(describe(observed))}"
                ),
            )
            failures.append(grader(failure, expected, _matcher(observed)))
    return failures


def _show(value: Any) -> str:
    value = unwrap(value)
    if isinstance(value, Mapping) and set(value) == {"any_of"}:
        return "any of " + ", ".join(map(str, value["any_of"]))
    if isinstance(value, Mapping) and set(value) == {"absent"}:
        return "absent"
    return str(value)


def _position_label(entry: Mapping[str, Any]) -> str:
    state = unwrap(entry.get("State"))
    return f"{entry.get('message')}:{state}" if state is not None else str(entry.get("message"))


def compare_then(
    then: Mapping[str, Any], observed: Mapping[str, Any], section: str, grader: Grader = _as_is
) -> list[StepFailure]:
    """``then`` against ``observe()``: positions exactly and in order, cursors by listed attributes."""
    failures: list[StepFailure] = []

    def fail(field: str, expected: Any, got: Any, raw: Any = _MISSING) -> None:
        failure = StepFailure(
            step=THEN_STEP,
            event="then",
            field=field,
            expected=unwrap(expected),
            observed=got,
            section=section,
            message=f"then: {field} expected {_show(expected)}, observed {_show(got)}",
        )
        failures.append(grader(failure, expected, _matcher(raw)))

    obs_queues: Mapping[str, Any] = observed.get("queues") or {}
    for qname, want in (then.get("queues") or {}).items():
        got = obs_queues.get(qname)
        if not isinstance(got, list):
            fail(f"queues.{qname}", [_position_label(e) for e in want], describe(got if got is not None else _MISSING))
            continue
        want_ids = [e.get("message") for e in want]
        got_ids = [e.get("message") if isinstance(e, Mapping) else e for e in got]
        if want_ids != got_ids:
            fail(
                f"queues.{qname}",
                [_position_label(e) for e in want],
                [_position_label(e) if isinstance(e, Mapping) else e for e in got],
            )
            continue
        for j, (w, g) in enumerate(zip(want, got, strict=True)):
            for key, expected in w.items():
                if key == "message":
                    continue
                value = g.get(key, _MISSING)
                if not matches(expected, value):
                    fail(f"queues.{qname}[{j}].{key}", expected, describe(value), value)

    obs_cursors: Mapping[str, Any] = observed.get("cursors") or {}
    for cname, want_c in (then.get("cursors") or {}).items():
        got_c = obs_cursors.get(cname)
        if not isinstance(got_c, Mapping):
            fail(f"cursors.{cname}", want_c, describe(got_c if got_c is not None else _MISSING))
            continue
        for key, expected in want_c.items():
            value = got_c.get(key, _MISSING)
            # A null MessagePositionReference expects null; an absent value does not satisfy a literal.
            if not matches(expected, value):
                fail(f"cursors.{cname}.{key}", expected, describe(value), value)
    return failures
