"""Issue 20: the adapter protocol tells a vendor everything a case needs.

docs/adapters.md is generated from the registries (harness.cases.adapterdoc.vocabulary); these
tests walk the bundled corpus and fail when a case uses an event, an argument, a result name, a
status value, a `given` key or attribute, an `observe` key or a control operation's message
attribute that the docs do not list; they run the worked exchange of the harness operations
against the reference adapter, and every bundled MS-MQDMPR case through that adapter (written
against the docs) with the outcomes of the embedded reference.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cases.adapterdoc import HARNESS_EXAMPLE, PATH, vocabulary
from harness.cases.events import HARNESS_OPERATIONS, PSEUDO_EVENTS, event_results, spec_events
from harness.cases.loader import load_paths
from harness.cases.model import Case
from harness.cases.targets.command import CommandTarget

REPO = Path(__file__).resolve().parents[2]
ADAPTER = f"{sys.executable} {REPO / 'examples' / 'reference_adapter.py'}"
DOC = PATH.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def model_cases() -> list[Case]:
    return [c for c in load_paths([REPO / "cases" / "mqdmpr"], events=PSEUDO_EVENTS) if not c.given.get("peer")]


@pytest.fixture(scope="module")
def wire_cases() -> list[Case]:
    return [c for c in load_paths([REPO / "cases" / "mqqb"], events=PSEUDO_EVENTS) if c.given.get("peer")]


def _literals(expected: Any) -> Iterator[Any]:
    """The values an expectation accepts: a literal, `is`, each of `any_of`, each reading's."""
    if isinstance(expected, dict):
        if "readings" in expected:
            for value in expected["readings"].values():
                yield from _literals(value)
        elif "any_of" in expected:
            for value in expected["any_of"]:
                yield from _literals(value)
        elif "is" in expected:
            yield from _literals(expected["is"])
        return  # {absent: true}
    yield expected


def _documented(name: str) -> bool:
    return f"`{name}`" in DOC


def test_no_event_is_the_reference_targets_own() -> None:
    assert not re.search(r"reference's own|reference target's own", DOC, re.I)
    for name in HARNESS_OPERATIONS:
        assert f"### `{name}`" in DOC
    assert "resume" not in spec_events()["wait_for_new_message"].parameters


def test_every_spec_event_has_documented_results() -> None:
    for name in spec_events():
        event_results(name)  # KeyError: a return type the protocol does not map


def test_the_corpus_uses_only_documented_events_arguments_results_and_values(model_cases: list[Case]) -> None:
    vocab = vocabulary()
    values = vocab["values"]
    problems: list[str] = []
    for case in model_cases:
        names = _case_names(case)
        for index, step in enumerate(case.when):
            where = f"{case.full_id} step {index}"
            entry = vocab["events"].get(step.event)
            if entry is None or not _documented(step.event):
                problems.append(f"{where}: event {step.event!r} is not documented")
                continue
            for arg, value in (step.args or {}).items():
                if arg not in entry["arguments"]:
                    problems.append(f"{where}: argument {arg!r} of {step.event} is not documented")
                    continue
                kind = entry["arguments"][arg]
                if ": one of " in kind and isinstance(value, str):  # an enumeration by member name
                    if value not in kind.split(": one of ", 1)[1].split(", "):
                        problems.append(f"{where}: {arg} value {value!r} is not among the documented {kind}")
                elif arg == "iTimeout" and isinstance(value, str) and value != "Infinite":
                    problems.append(f"{where}: iTimeout {value!r} is neither a number nor Infinite")
                elif kind == "position" and value not in names and value not in ("Start", "End"):
                    problems.append(f"{where}: {arg} value {value!r} names no position of the case")
            for result, expected in (step.expect or {}).items():
                kind = entry["results"].get(result)
                if kind is None and "<attribute>" in entry["results"]:
                    if result not in vocab["given"]["queue"] and result not in ("Active", "MessageCount"):
                        problems.append(f"{where}: attribute {result!r} of {step.event} is not documented")
                    continue
                if kind is None:
                    problems.append(f"{where}: result {result!r} of {step.event} is not documented")
                    continue
                for value in _literals(expected):
                    if value is None or isinstance(value, bool | int | float):
                        continue
                    if kind in values:
                        if value not in values[kind] or not _documented(str(value)):
                            problems.append(f"{where}: {result} value {value!r} is not among the documented {kind}")
                    elif value not in names and value not in ("Start", "End"):
                        problems.append(f"{where}: {result} value {value!r} names nothing of the case")
    assert not problems, "\n".join(problems)


def _case_names(case: Case) -> set[str]:
    names: set[str] = set()
    given = case.given
    for q in given.get("queues") or []:
        names.add(q["name"])
        names.update(m["id"] for m in q.get("messages") or [])
    names.update(given.get("transactions") or [])
    names.update(o["name"] for o in given.get("open") or [])
    names.update(c["name"] for c in given.get("cursors") or [])
    for step in case.when:
        for value in (step.args or {}).values():
            if isinstance(value, dict) and "id" in value:
                names.add(value["id"])
            elif isinstance(value, dict) and "name" in value:
                names.add(value["name"])
    names.update(f"read{n}" for n in range(1, 10))
    return names


def test_the_corpus_given_and_then_use_only_documented_keys(model_cases: list[Case]) -> None:
    vocab = vocabulary()
    given_vocab = vocab["given"]
    problems: list[str] = []
    for case in model_cases:
        given = case.given
        for key in given:
            if key not in given_vocab["keys"] or not _documented(key):
                problems.append(f"{case.full_id}: given.{key}")
        for q in given.get("queues") or []:
            problems += [f"{case.full_id}: queue attribute {k}" for k in q if k not in given_vocab["queue"]]
            for m in q.get("messages") or []:
                problems += [f"{case.full_id}: message attribute {k}" for k in m if k not in given_vocab["message"]]
                if "State" in m and m["State"] not in vocab["values"]["MessagePositionState"]:
                    problems.append(f"{case.full_id}: State {m['State']}")
        for kind in ("open", "cursor", "locked"):
            for entry in given.get("cursors" if kind == "cursor" else kind) or []:
                problems += [f"{case.full_id}: {kind}.{k}" for k in entry if k not in given_vocab[kind]]
        for entry in given.get("open") or []:
            if (
                entry.get("access", "ReceiveAccess")
                not in spec_events()["open_queue"].types["iRequiredAccess"].__members__
            ):
                problems.append(f"{case.full_id}: access {entry['access']}")
        for step in case.when:
            for value in (step.args or {}).values():
                if isinstance(value, dict) and "id" in value:
                    problems += [
                        f"{case.full_id}: message attribute {k}" for k in value if k not in given_vocab["message"]
                    ]
        then = case.then or {}
        for entries in (then.get("queues") or {}).values():
            for entry in entries:
                problems += [
                    f"{case.full_id}: then position key {k}" for k in entry if k not in vocab["observe"]["position"]
                ]
                for value in _literals(entry.get("State")):
                    if value is not None and value not in vocab["values"]["MessagePositionState"]:
                        problems.append(f"{case.full_id}: then State {value}")
        for state in (then.get("cursors") or {}).values():
            problems += [f"{case.full_id}: then cursor key {k}" for k in state if k not in vocab["observe"]["cursor"]]
            for value in _literals(state.get("CursorState")):
                if value is not None and value not in vocab["values"]["CursorState"]:
                    problems.append(f"{case.full_id}: then CursorState {value}")
    for name in [*given_vocab["queue"], *given_vocab["message"]]:
        if name not in ("name", "messages", "id", "State") and not _documented(name):
            problems.append(f"attribute {name} is in the vocabulary but not in docs/adapters.md")
    assert not problems, "\n".join(problems)


def test_the_wire_corpus_uses_only_documented_message_attributes(wire_cases: list[Case]) -> None:
    allowed = vocabulary()["control_message"]
    problems = []
    for case in wire_cases:
        for step in case.when:
            if step.action == "enqueue":
                problems += [f"{case.full_id}: message.{k}" for k in step.args["message"] if k not in allowed]
    for name in allowed:
        if name not in ("id", "delivery") and not _documented(name):
            problems.append(f"{name} is not in docs/adapters.md")
    assert wire_cases and not problems, "\n".join(problems)


def _matches(expected: Any, observed: Any) -> bool:
    """``"…"`` matches any value; ``"…": "…"`` in an object stands for its other members."""
    if expected == "…":
        return True
    if isinstance(expected, dict):
        keys = set(expected) - {"…"}
        if not isinstance(observed, dict) or not keys <= set(observed):
            return False
        if "…" not in expected and set(observed) != keys:
            return False
        return all(_matches(expected[k], observed[k]) for k in keys)
    if isinstance(expected, list):
        return (
            isinstance(observed, list)
            and len(expected) == len(observed)
            and all(_matches(e, o) for e, o in zip(expected, observed, strict=True))
        )
    return bool(expected == observed)


def test_the_harness_operations_exchange_runs_against_the_reference_adapter() -> None:
    assert "```\n" + HARNESS_EXAMPLE + "```" in DOC
    exchanges = re.findall(r"^> (.*)\n(?:< (.*)\n)?", HARNESS_EXAMPLE, re.M)
    used = {json.loads(r).get("event") for r, _ in exchanges}
    assert set(HARNESS_OPERATIONS) <= used
    target = CommandTarget(ADAPTER, timeout=10.0)
    try:
        for request_text, reply_text in exchanges:
            request = json.loads(request_text)
            if request["op"] == "bye":
                break
            reply = target._request({k: v for k, v in request.items() if k != "id"}, start=True)
            assert _matches(json.loads(reply_text), reply), (request_text, reply)
    finally:
        target.close()


def test_the_reference_adapter_uses_no_reference_target_internals() -> None:
    source = (REPO / "examples" / "reference_adapter.py").read_text(encoding="utf-8")
    assert "harness.cases.targets.reference" not in source
    assert "ReferenceTarget" not in source


def test_every_bundled_model_case_has_the_embedded_references_outcome_through_the_adapter(
    model_cases: list[Case],
) -> None:
    from harness.cases.runner import run

    embedded = run(model_cases, "reference")
    through_cmd = run(model_cases, f"cmd:{ADAPTER}", step_timeout=20)
    assert len(embedded.results) == len(model_cases) >= 100
    assert {r.outcome.name for r in through_cmd.results} <= {"passed", "non_strict"}
    assert [(r.case_id, r.outcome, r.failures) for r in through_cmd.results] == [
        (r.case_id, r.outcome, r.failures) for r in embedded.results
    ]
