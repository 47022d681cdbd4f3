"""The result of one case: a :class:`harness.results.CaseResult` built from the Case that ran.

Outcomes are those of docs/cases.md ("Outcomes"); each difference is put in the context of its
case (the step's inputs and line, the requirement's sentence as cases/requirements.yaml quotes
the spec), and an error or an Unsupported reply names the step it stopped at, attributed to the
requirement that step's event renders (harness.cases.grading).
"""

from __future__ import annotations

import re
import time

from harness.cases.grading import attribute, case_outcome, section_of
from harness.cases.model import Case
from harness.results import CaseResult, Outcome, StepFailure, clean, clean_failure

__all__ = ["case_result", "case_result_since", "graded_result"]

_AT_STEP = re.compile(r"step (\d+) \((?:[^)]*)\): ")


def _in_context(f: StepFailure, case: Case) -> StepFailure:
    """``f`` with what the case knows of it: the step's inputs and line, the requirement's sentence."""
    if 0 <= f.step < len(case.when):
        step = case.when[f.step]
        if not f.inputs:
            f.inputs = dict(step.args)
        f.line = f.line or step.line
    found = case.requirements.get(f.requirement) if f.requirement else None
    if found is not None and not f.quote:
        f.quote = found.quote
    return f


def _stopped(case: Case, outcome: Outcome, failures: list[StepFailure], detail: str) -> StepFailure | None:
    """The step an error (or an Unsupported reply) stopped ``case`` at, read from the runners'
    ``"step N (event, line L): what the target said"`` detail; None when none is named."""
    if failures or outcome not in (Outcome.error, Outcome.unsupported):
        return None
    found = _AT_STEP.match(detail)
    if found is None or int(found.group(1)) >= len(case.when):
        return None
    index = int(found.group(1))
    step = case.when[index]
    requirement, level = attribute(case, step)
    stopped = StepFailure(
        step=index,
        event=step.event,
        field="",
        expected=None,
        observed=clean(detail[found.end() :]),
        section=section_of(case, requirement),
        message=clean(detail),
        requirement=requirement,
        level=str(level),
    )
    return clean_failure(_in_context(stopped, case))


def case_result(
    case: Case, outcome: Outcome, duration: float, failures: list[StepFailure], detail: str
) -> CaseResult:
    """The result of ``case`` (one variant) with its identity taken from the case."""
    return CaseResult(
        case_id=case.full_id,
        title=case.title,
        sections=case.sections,
        level=str(case.level),
        outcome=outcome,
        duration=duration,
        failures=[clean_failure(_in_context(f, case)) for f in failures],
        detail=clean(detail),
        source=case.source,
        line=case.line,
        tags=list(case.tags),
        requirements=list(case.requirements) or [r.requirement for r in case.spec if r.requirement],
        stopped=_stopped(case, outcome, failures, detail),
    )


def case_result_since(
    case: Case, outcome: Outcome, start: float, failures: list[StepFailure] | None = None, detail: str = ""
) -> CaseResult:
    """The result of ``case`` whose run began at ``start`` (``time.perf_counter()``); when
    ``failures`` are given and ``detail`` is not, the detail is their messages."""
    failures = list(failures or [])
    detail = detail or "\n".join(f.message for f in failures)
    return case_result(case, outcome, time.perf_counter() - start, failures, detail)


def graded_result(case: Case, start: float, failures: list[StepFailure]) -> CaseResult:
    """The result of a case that stopped at these graded differences: the worst grade among them
    (:func:`harness.cases.grading.case_outcome`), the differences as its detail."""
    return case_result_since(case, Outcome(case_outcome(failures)), start, failures)
