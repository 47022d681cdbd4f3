"""A run's outcome counts and tables (harness.results.RunResult): ``ran``, ``ok``, ``by_section`` and
``by_requirement``, counted in one pass or by (key, outcome) pairs, are what counting result after
result gives, the outcomes of each key in the order they first came (the JSON report keeps it)."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from harness.results import CaseResult, Outcome, RunResult, StepFailure

SECTIONS = ["MS-MQDMPR 3.1.7.1.1", "MS-MQDMPR 3.1.7.3.2", "MS-MQQB 3.1.5.1", ""]
REQUIREMENTS = ["R-1", "R-2", "R-3", ""]

failures = st.lists(
    st.builds(
        lambda section, requirement: StepFailure(0, "e", "f", 1, 2, section, requirement=requirement),
        st.sampled_from(SECTIONS),
        st.sampled_from(REQUIREMENTS),
    ),
    max_size=3,
)
results = st.lists(
    st.builds(
        lambda n, outcome, sections, requirements, broke: CaseResult(
            f"c{n}", "t", sections, "MUST", outcome, failures=broke, requirements=requirements
        ),
        st.integers(0, 9),
        st.sampled_from(list(Outcome)),
        st.lists(st.sampled_from(SECTIONS[:3]), max_size=3),
        st.lists(st.sampled_from(REQUIREMENTS[:3]), max_size=3),
        failures,
    ),
    max_size=30,
)


def _one_by_one(run: RunResult, keys_of: str) -> dict[str, Counter[str]]:
    table: dict[str, Counter[str]] = {}
    for r in run.results:
        for key in getattr(r, keys_of)():
            table.setdefault(key, Counter())[str(r.outcome)] += 1
    return dict(sorted(table.items()))


@given(results, st.booleans())
def test_counts_and_tables_are_those_of_one_result_after_the_other(cases: list[CaseResult], strict: bool) -> None:
    run = RunResult("reference", cases, strict=strict)
    assert run.counts() == Counter(str(r.outcome) for r in cases)
    assert run.ran == sum(1 for r in cases if r.outcome.ran)
    assert run.ok == (not any(r.outcome.bad(strict) for r in cases))
    for table, keys_of in ((run.by_section(), "counted_sections"), (run.by_requirement(), "counted_requirements")):
        expected = _one_by_one(run, keys_of)
        assert [(k, list(v.items())) for k, v in table.items()] == [(k, list(v.items())) for k, v in expected.items()]
