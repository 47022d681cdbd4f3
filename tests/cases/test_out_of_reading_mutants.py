"""An answer that no reading gives fails the MUST that frames the interpretation (issue 19, item 5).

examples/mutants/readings.py generates, for each [MS-MQDMPR] ``interpretation``, the reference
answering outside every named reading through the hook where the model takes its own.  The
[MS-MQDMPR] corpus must fail each one with a difference graded under the interpretation's frame
and naming the interpretation; ``python -m harness.cases.mutants`` reports them apart.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from examples.mutants.readings import GENERATED, MUTANTS, TABLE
from harness.cases.events import PSEUDO_EVENTS
from harness.cases.loader import load_paths, load_requirements
from harness.cases.model import Level
from harness.cases.mutants import MUTANTS as SHIPPED
from harness.cases.mutants import out_of_reading_mutants, render, run_mutant
from harness.cases.runner import run
from harness.model import QueueManager
from harness.results import Outcome

CASES = Path(__file__).resolve().parents[2] / "cases"
REQUIREMENTS = {r.id: r for r in load_requirements(CASES / "requirements.yaml")}


@pytest.fixture(scope="module")
def corpus() -> list:
    return load_paths([CASES / "mqdmpr"], events=PSEUDO_EVENTS)


def test_one_generated_mutant_per_dmpr_interpretation() -> None:
    interpretations = {
        r.id for r in REQUIREMENTS.values() if r.level is Level.interpretation and r.id.startswith("DMPR-")
    }
    assert sorted(rid for rid, _ in MUTANTS) == sorted(interpretations)
    for row in TABLE:
        cls = GENERATED[row.name]
        assert issubclass(cls, QueueManager) and row.interpretation in (cls.__doc__ or "")
        assert getattr(cls, row.hook) is not getattr(QueueManager, row.hook)  # the hook is the one change
        assert REQUIREMENTS[row.interpretation].frame in REQUIREMENTS


def test_registered_apart_from_the_other_mutants() -> None:
    assert out_of_reading_mutants() == MUTANTS
    assert not {m for _, m in MUTANTS} & set(SHIPPED)


@pytest.mark.parametrize(("interpretation", "mutant"), MUTANTS, ids=[m.split(":")[1] for _, m in MUTANTS])
def test_fails_under_the_frame(corpus: list, interpretation: str, mutant: str) -> None:
    frame = REQUIREMENTS[interpretation].frame
    result = run(corpus, f"plugin:{mutant}")
    assert not [r.case_id for r in result.results if r.outcome is Outcome.error]
    caught = [
        r.case_id
        for r in result.results
        if r.outcome is Outcome.failed
        and any(f.requirement == frame and f.interpretation == interpretation and f.level == "MUST" for f in r.failures)
    ]
    assert caught, f"no case fails {mutant} under {frame} ({interpretation})"


def test_run_mutant_counts_only_failures_under_the_frame() -> None:
    """harness.cases.mutants catches an out-of-reading mutant only under the frame: the same
    mutant counted against another interpretation is caught by no case."""
    paths = [str(CASES / "mqdmpr" / "waiting" / "waiting_readers.yaml")]
    interpretation, mutant = next(m for m in MUTANTS if m[0] == "DMPR-3.1.7.3.1-FAILED-STATUS")
    result = run_mutant(mutant, paths, interpretation)
    assert result.caught and result.interpretation == interpretation
    assert all(c.startswith("dmpr.wait.timeout-zero-status") for c in result.caught_by)
    assert result.failed_elsewhere  # dmpr.wait.timeout-zero-fails fails the frame with no reading
    other = run_mutant(mutant, paths, "DMPR-3.1.7.2.2-DESCRIPTOR-ORDER")
    assert not other.caught and other.failed_elsewhere
    text = render([result, other], heading="out-of-reading mutant")
    assert text.splitlines()[0].startswith("out-of-reading mutant")
    assert "SURVIVED (no case fails under the frame of DMPR-3.1.7.2.2-DESCRIPTOR-ORDER)" in text
    assert text.endswith("1/2 out-of-reading mutants caught")
