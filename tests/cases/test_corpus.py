"""The bundled corpus (cases/): loads, cites the requirements of cases/requirements.yaml, passes
against the reference, covers every requirement, and catches every shipped mutant (issue 4,
acceptance 1)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harness.cases.actions import ACTIONS
from harness.cases.coverage import coverage, graded_requirements, render_coverage
from harness.cases.events import PSEUDO_EVENTS, event_section
from harness.cases.grading import annotation, attribute, processing_requirement
from harness.cases.loader import load_paths, load_requirements, load_text
from harness.cases.model import Case, Level, Requirement, Step
from harness.cases.mutants import MUTANTS, render, run_mutant, run_mutants
from harness.cases.runner import run

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "cases"


def _then_values(then: dict[str, Any]) -> list[Any]:
    """The values of ``then`` an expectation grades (``peer.violations`` is graded per rule)."""
    out: list[Any] = []
    for positions in (then.get("queues") or {}).values():
        for entry in positions or []:
            out.extend(v for k, v in (entry or {}).items() if k != "message")
    for group in ("cursors", "outgoing"):
        for attrs in (then.get(group) or {}).values():
            out.extend(v for k, v in (attrs or {}).items() if k != "OutgoingMessagePositions")
    for key, value in (then.get("peer") or {}).items():
        if key != "violations":
            out.extend(value.values() if key == "sent" and isinstance(value, dict) else [value])
    return out


@pytest.fixture(scope="module")
def corpus() -> list:
    return load_paths([CASES], events=PSEUDO_EVENTS)


def test_corpus_loads(corpus: list) -> None:
    assert len(corpus) >= 80
    assert all(c.spec and all(ref.requirement for ref in c.spec) for c in corpus)


def _expectations(case: Case) -> list[tuple[Step | None, Any]]:
    """Every (step, expectation) of a case the loader attributes (None: ``then``); a wire step that
    waits and names no expectation is graded by its step's requirement (expectation None)."""
    out: list[tuple[Step | None, Any]] = []
    for step in case.when:
        values = list((step.expect or {}).values()) + ([step.expect_error] if step.expect_error else [])
        if not values and step.action and (action := ACTIONS.get(step.action)) is not None and action.waits:
            values = [None]
        out.extend((step, value) for value in values)
    out.extend((None, value) for value in _then_values(case.then or {}))
    return out


def test_every_expectation_is_graded_by_a_requirement_of_the_list(corpus: list) -> None:
    """Each case resolves its ids against cases/requirements.yaml (no nearer list shadows it), and
    every expectation of its steps and final state is attributed to one of them, resolved in
    ``case.requirements``: one the case cites, or one attribution derives, the processing
    requirement of the step's event section (``DMPR-<section>-PROCESSING``), which the case does
    not cite but the list holds."""
    listed = {r.id: r for r in load_requirements(CASES / "requirements.yaml")}
    derived: set[str] = set()
    checked = 0
    for case in corpus:
        assert case.requirements and all(listed.get(rid) == req for rid, req in case.requirements.items()), case.id
        cited = {ref.requirement for ref in case.spec}
        for step, expected in _expectations(case):
            rid, level = attribute(case, step, expected)
            where = (case.id, step.event if step else "then", expected)
            assert rid in listed and rid in case.requirements and level == listed[rid].level, (*where, rid)
            checked += 1
            named = annotation(expected) or (step.requirement if step else str(case.then.get("requirement") or ""))
            if rid not in cited and rid != named:  # not cited: attribution derived it
                assert step is not None and not step.action, (*where, rid)
                assert rid == processing_requirement(event_section(step.event)), (*where, rid)
                assert listed[rid].level is Level.MUST
                derived.add(rid)
    assert checked > 500
    assert derived and all(rid.endswith("-PROCESSING") for rid in derived)


def test_corpus_passes_against_reference(corpus: list) -> None:
    result = run(corpus, "reference", workers=4)  # the wire cases mostly wait on timers
    bad = [(r.case_id, r.outcome, r.detail) for r in result.results if str(r.outcome) != "passed"]
    assert not bad


def test_every_requirement_has_a_case(corpus: list) -> None:
    """Every requirement is cited, watched (a session rule) or graded by derivation: a processing
    requirement no case cites is covered by the cases whose steps attribution grades under it."""
    report = coverage(load_requirements(CASES / "requirements.yaml"), corpus)
    assert not report.uncovered, [r.id for r in report.uncovered]
    assert not report.unknown, report.unknown
    assert not report.mismatched, report.mismatched
    processing = [row for row in report.rows if row.requirement.id.endswith("-PROCESSING")]
    assert processing and all(row.derived for row in processing if not row.cited)


COVERAGE_REQUIREMENTS = {
    r.id: r
    for r in (
        Requirement(
            "C-SEEK-HEAD",
            "MS-MQDMPR 3.1.7.3.2",
            "If iIterator is equivalent to the StartMessagePosition ADM element instance defined for "
            "iQueue.MessagePositionList: Set iIterator to iQueue.MessagePositionList.Head",
        ),
        Requirement(
            "DMPR-3.1.7.1.10-PROCESSING",
            "MS-MQDMPR 3.1.7.1.10",
            "The queue manager MUST perform the following actions to process this event:",
        ),
        Requirement(
            "DMPR-3.1.7.1.6-PROCESSING",
            "MS-MQDMPR 3.1.7.1.6",
            "The queue manager MUST perform the following actions to process this event:",
        ),
    )
}

# A seek case whose dequeue step is graded under the processing requirement of 3.1.7.1.10 (the
# case cites nothing of that section); the close step checks nothing, so 3.1.7.1.6 grades nothing.
DERIVING_CASE = """\
id: c.derives
title: a dequeue the case cites nothing of
spec: [{section: MS-MQDMPR 3.1.7.3.2, requirement: C-SEEK-HEAD}]
given:
  queues: [{name: q, messages: [{id: m1}]}]
  open: [{name: h, queue: q}]
when:
  - event: seek_available_message_position
    args: {iInitialPosition: Start, iQueue: q, iPeekOperation: false}
    expect: {rMessagePosition: m1}
  - event: dequeue_message
    args: {iQueueDesc: h, iTimeout: 0}
    expect: {rStatus: MQ_OK, rMessage: m1}
  - event: close_queue
    args: {iQueueDesc: h}
"""


def test_coverage_counts_a_requirement_graded_by_derivation() -> None:
    """``msmq-harness coverage``: a requirement no case cites is covered by a case that grades an
    expectation under it by derivation (grading.attribute), listed as such; one attribution never
    reaches stays uncovered."""
    (case,) = load_text(DERIVING_CASE, "derives.yaml", requirements=COVERAGE_REQUIREMENTS)
    assert attribute(case, case.when[1]) == ("DMPR-3.1.7.1.10-PROCESSING", Level.MUST)
    assert graded_requirements(case) == {"C-SEEK-HEAD", "DMPR-3.1.7.1.10-PROCESSING"}
    report = coverage(list(COVERAGE_REQUIREMENTS.values()), [case])
    rows = {row.requirement.id: row for row in report.rows}
    assert (rows["C-SEEK-HEAD"].cited, rows["C-SEEK-HEAD"].derived) == (["c.derives"], [])
    assert (rows["DMPR-3.1.7.1.10-PROCESSING"].cited, rows["DMPR-3.1.7.1.10-PROCESSING"].derived) == ([], ["c.derives"])
    assert rows["DMPR-3.1.7.1.10-PROCESSING"].covered and rows["DMPR-3.1.7.1.10-PROCESSING"].only_derived
    assert [r.id for r in report.uncovered] == ["DMPR-3.1.7.1.6-PROCESSING"]  # close_queue checks nothing
    # a case built without the loader (case.requirements empty) is graded by derivation all the same
    bare = replace(case, requirements={"C-SEEK-HEAD": COVERAGE_REQUIREMENTS["C-SEEK-HEAD"]})
    assert coverage(list(COVERAGE_REQUIREMENTS.values()), [bare]).rows[1].derived == ["c.derives"]

    table = render_coverage(report)
    assert "DMPR-3.1.7.1.10-PROCESSING  [MUST]  MS-MQDMPR 3.1.7.1.10  1 case: c.derives" in table
    assert "    graded by derivation in 1 case not citing it: c.derives" in table
    assert "2/3 requirements have cases (66.7%)" in table
    assert "  1 of them only by derivation" in table
    assert "without cases: DMPR-3.1.7.1.6-PROCESSING" in table
    data = json.loads(render_coverage(report, as_json=True))
    assert [(r["id"], r["derived"]) for r in data["requirements"]] == [
        ("C-SEEK-HEAD", []),
        ("DMPR-3.1.7.1.10-PROCESSING", ["c.derives"]),
        ("DMPR-3.1.7.1.6-PROCESSING", []),
    ]
    assert data["only_derived"] == ["DMPR-3.1.7.1.10-PROCESSING"] and data["uncovered"] == ["DMPR-3.1.7.1.6-PROCESSING"]


SENDER_CASES = [str(CASES / "mqqb" / "outgoing.yaml")]


def test_every_model_mutant_is_caught_by_a_failed_expectation() -> None:
    model = [m for m in MUTANTS if not m.startswith("examples.mutants.sender:")]
    assert len(model) >= 10
    results = run_mutants(model, [str(CASES / "mqdmpr")], workers=2)
    assert not [r.mutant for r in results if not r.caught], render(results)


def test_every_sender_mutant_is_caught_through_the_wire() -> None:
    """[MS-MQQB] 3.1.7.12: each skip condition and the connect step of an empty ConnectionHistory,
    broken by one mutant, is caught by a MUST the initiator wire cases check (a connection while
    ConnectionHistory is not empty is a reading of MQQB-3.1.7.12-NO-CONNECT, not a broken rule)."""
    sender = [m for m in MUTANTS if m.startswith("examples.mutants.sender:")]
    assert len(sender) >= 6
    results = run_mutants(sender, SENDER_CASES, workers=len(sender))  # each mostly waits on timers
    assert not [r.mutant for r in results if not r.caught], render(results)
    assert not [r.mutant for r in results if r.erred], render(results)
    assert all(r.mutant for r in results if r.caught_by)
    assert run(load_paths(SENDER_CASES), "reference", workers=4).ok  # the reference passes the same cases


CRASHING = """
from harness.model import QueueManager


class Crashes(QueueManager):
    def seek_available_message_position(self, *args, **kwargs):
        raise RuntimeError("a crash is no verdict")
"""


def test_a_mutant_that_only_crashes_is_not_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "crashing_mutant.py").write_text(CRASHING)
    monkeypatch.syspath_prepend(str(tmp_path))
    seek = [str(CASES / "mqdmpr" / "seek")]
    result = run_mutant("crashing_mutant:Crashes", seek)
    assert result.erred and not result.caught_by
    assert not result.caught
    assert "SURVIVED" in render([result]) and "erred, no catch" in render([result])


def test_the_corpus_through_the_cmd_adapter_gives_identical_outcomes(corpus: list) -> None:
    """Issue 4, acceptance 2: the reference behind the JSON-lines protocol (examples/) gives the
    same outcome and the same failure detail for every case and variant."""
    adapter = f"cmd:{sys.executable} {ROOT / 'examples' / 'reference_adapter.py'}"
    model_cases = [c for c in corpus if c.source.startswith(str(CASES / "mqdmpr"))]
    assert len(model_cases) >= 100
    embedded = run(model_cases, "reference")
    through_cmd = run(model_cases, adapter, workers=2, step_timeout=30)
    assert [(r.case_id, str(r.outcome), r.failures) for r in through_cmd.results] == [
        (r.case_id, str(r.outcome), r.failures) for r in embedded.results
    ]
