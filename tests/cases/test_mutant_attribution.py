"""Acceptance (issue 19): no failure of the bundled [MS-MQDMPR] corpus run against the mutants of
examples/mutants/ is attributed outside its event's section.

Each model mutant of harness.cases.mutants.MUTANTS (a QueueManager subclass breaking one rule) and
each out-of-reading mutant (examples/mutants/readings.py: an answer no reading of an
interpretation gives) runs the cases of cases/mqdmpr as ``plugin:<mutant>``.  Every difference it
shows, whatever its grade, must be filed under

- a requirement of the section of its step's spec event (harness.cases.events.event_section);
- or one the case names for it explicitly: the expectation's ``requirement:``, the step's, or for
  ``then`` ``then.requirement``; where the step renders no section (a pseudo event, ``then``), the
  case's only cited requirement names it (rule 4 of harness.cases.grading);
- or the frame of the interpretation the failure names (``failure.interpretation``: a value no
  reading gives fails the MUST that frames the choice).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.cases import grading
from harness.cases.events import PSEUDO_EVENTS, event_section
from harness.cases.loader import load_paths, load_requirements
from harness.cases.model import Case
from harness.cases.mutants import MUTANTS, out_of_reading_mutants, target_of
from harness.cases.runner import run
from harness.results import Outcome, StepFailure

CASES = Path(__file__).resolve().parents[2] / "cases"
DMPR = CASES / "mqdmpr"
REQUIREMENTS = {r.id: r for r in load_requirements(CASES / "requirements.yaml")}

#: the model mutants (the sender ones run the [MS-MQQB] initiator cases on the wire) and the
#: out-of-reading ones of the [MS-MQDMPR] interpretations, each with the interpretation it answers
#: outside of ("" for a model mutant)
MODEL = [(m, "") for m in MUTANTS if target_of(m).startswith("plugin:")]
OUT_OF_READING = [(m, i) for i, m in out_of_reading_mutants() if i.startswith("DMPR-")]


@pytest.fixture(scope="module")
def corpus() -> dict[str, Case]:
    cases = load_paths([DMPR], events=PSEUDO_EVENTS)
    assert len(cases) >= 100
    return {c.full_id: c for c in cases}


def _then_value(then: dict[str, Any], field: str) -> Any:
    """The part of ``then`` a difference's field names: ``cursors.c.CursorState`` the value,
    ``queues.q`` (a list compared whole, ``queues.q[1].State`` its entry) the queue's positions."""
    group, _, rest = field.partition(".")
    if group == "queues":
        return (then.get("queues") or {}).get(rest.split("[")[0])
    if group in ("cursors", "outgoing"):
        name, _, attribute = rest.partition(".")
        return ((then.get(group) or {}).get(name) or {}).get(attribute)
    return {k: v for k, v in then.items() if k != grading.ANNOTATION}


def _allowed(case: Case, failure: StepFailure) -> dict[str, str]:
    """requirement id -> why a failure of ``case`` may be filed under it (besides any requirement of
    its event's section)."""
    cited = list(dict.fromkeys(ref.requirement for ref in case.spec))
    only = cited[0] if len(cited) == 1 else ""
    allowed: dict[str, str] = {}
    if failure.step < 0:  # then
        then: dict[str, Any] = case.then or {}
        allowed[str(then.get(grading.ANNOTATION) or "") or only] = "then.requirement (or the only citation)"
        for _, rid in grading.requirement_annotations(_then_value(then, failure.field)):
            allowed[rid] = "named on the value in then"
    else:
        step = case.when[failure.step]
        allowed[step.requirement] = "the step's requirement"
        expected = (step.expect or {}).get(failure.field)
        if expected is not None:
            allowed[grading.annotation(expected)] = "the expectation's requirement"
        if step.action or not event_section(step.event):
            allowed[only] = "the only citation of a case whose step renders no section"
    if failure.interpretation:
        frame = REQUIREMENTS[failure.interpretation].frame
        allowed[frame] = f"the frame of {failure.interpretation}"
    allowed.pop("", None)
    return allowed


def _misfiled(corpus: dict[str, Case], mutant: str) -> tuple[list[str], int, list[str]]:
    """Run the corpus against ``mutant``: (each difference filed outside its event's section and
    outside what its case names, the number of differences, the cases that erred)."""
    result = run(list(corpus.values()), f"plugin:{mutant}")
    wrong: list[str] = []
    seen = 0
    for r in result.results:
        case = corpus[r.case_id]
        for f in r.failures:
            seen += 1
            section = event_section(case.when[f.step].event) if f.step >= 0 else ""
            requirement = REQUIREMENTS.get(f.requirement)
            if requirement is None:
                wrong.append(f"{r.case_id} step {f.step} {f.field}: {f.requirement!r} is not a listed requirement")
                continue
            assert f.section == requirement.section, (r.case_id, f)
            if section and requirement.section == section:
                continue
            if f.requirement in _allowed(case, f):
                continue
            event = case.when[f.step].event if f.step >= 0 else "then"
            wrong.append(
                f"{r.case_id} step {f.step} ({event}, section {section or '-'}) {f.field}: filed under "
                f"{f.requirement} ({requirement.section}), interpretation {f.interpretation or '-'}"
            )
    erred = [r.case_id for r in result.results if r.outcome is Outcome.error]
    return wrong, seen, erred


def test_the_mutants_are_the_shipped_ones() -> None:
    assert len(MODEL) >= 10 and len(OUT_OF_READING) >= 10
    assert all(i in REQUIREMENTS and REQUIREMENTS[i].frame in REQUIREMENTS for _, i in OUT_OF_READING)
    assert all(target_of(m) == f"plugin:{m}" for m, _ in MODEL + OUT_OF_READING)  # QueueManager subclasses


def test_no_failure_against_a_mutant_is_attributed_outside_its_events_section(corpus: dict[str, Case]) -> None:
    wrong: dict[str, list[str]] = {}
    caught = 0
    for mutant, _ in MODEL + OUT_OF_READING:
        misfiled, seen, erred = _misfiled(corpus, mutant)
        assert not erred, f"{mutant}: erred in {erred}"
        assert seen, f"{mutant} shows no difference"
        caught += 1
        if misfiled:
            wrong[mutant] = misfiled
    assert caught == len(MODEL) + len(OUT_OF_READING)
    report = "\n".join(f"{m}:\n  " + "\n  ".join(lines[:10]) for m, lines in wrong.items())
    assert not wrong, f"differences filed outside their event's section:\n{report}"


def test_a_misfiled_difference_is_reported(corpus: dict[str, Case]) -> None:
    """The check itself: a difference of a step filed under a requirement of another section, which
    neither the case nor an interpretation names, is what the acceptance test reports."""
    case = next(c for c in corpus.values() if c.when and event_section(c.when[0].event) and not c.when[0].requirement)
    section = event_section(case.when[0].event)
    cited = {ref.requirement for ref in case.spec}
    elsewhere = next(
        r
        for r in REQUIREMENTS.values()
        if r.section.startswith("MS-MQDMPR") and r.section != section and r.id not in cited
    )
    failure = StepFailure(0, case.when[0].event, "nothing", 1, 2, elsewhere.section, requirement=elsewhere.id)
    assert elsewhere.id not in _allowed(case, failure)
    framed = next(r for r in REQUIREMENTS.values() if r.frame and r.id.startswith("DMPR-"))
    failure.interpretation = framed.id
    assert _allowed(case, failure)[framed.frame] == f"the frame of {framed.id}"
