"""The bundled corpus (cases/): loads, cites the requirements of cases/requirements.yaml, passes
against the reference, covers every requirement, and catches every shipped mutant (issue 4,
acceptance 1)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.cases.coverage import coverage
from harness.cases.grading import attribute
from harness.cases.loader import load_paths, load_requirements
from harness.cases.mutants import MUTANTS, run_mutants
from harness.cases.runner import run
from harness.cases.targets.reference import PSEUDO_EVENTS

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "cases"


@pytest.fixture(scope="module")
def corpus() -> list:
    return load_paths([CASES], events=PSEUDO_EVENTS)


def test_corpus_loads(corpus: list) -> None:
    assert len(corpus) >= 80
    assert all(c.spec and all(ref.requirement for ref in c.spec) for c in corpus)


def test_every_expectation_is_graded_by_a_requirement_of_the_list(corpus: list) -> None:
    """Each case resolves its ids against cases/requirements.yaml (no nearer list shadows it), and
    every step and the final state are attributed to one of them."""
    listed = {r.id: r for r in load_requirements(CASES / "requirements.yaml")}
    for case in corpus:
        assert case.requirements and all(listed.get(rid) == req for rid, req in case.requirements.items()), case.id
        for step in [*case.when, None]:
            rid, level = attribute(case, step)
            assert rid in case.requirements and level == listed[rid].level, (case.id, step)


def test_corpus_passes_against_reference(corpus: list) -> None:
    result = run(corpus, "reference")
    bad = [(r.case_id, r.outcome, r.detail) for r in result.results if str(r.outcome) != "passed"]
    assert not bad


def test_every_requirement_has_a_case(corpus: list) -> None:
    report = coverage(load_requirements(CASES / "requirements.yaml"), corpus)
    assert not report.uncovered, [r.id for r in report.uncovered]
    assert not report.unknown, report.unknown
    assert not report.mismatched, report.mismatched


def test_every_mutant_is_caught() -> None:
    assert len(MUTANTS) >= 10
    results = run_mutants(MUTANTS, [str(CASES)], workers=2)
    survivors = [r.mutant for r in results if not r.caught]
    assert not survivors


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
