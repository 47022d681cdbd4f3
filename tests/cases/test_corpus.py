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
from harness.cases.mutants import MUTANTS, render, run_mutant, run_mutants
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
    results = run_mutants(sender, SENDER_CASES, workers=2)
    assert not [r.mutant for r in results if not r.caught], render(results)
    assert not [r.mutant for r in results if r.erred], render(results)
    assert all(r.mutant for r in results if r.caught_by)
    assert run(load_paths(SENDER_CASES), "reference").ok  # the reference passes the same cases


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
