"""Results of a conformance run, grouped by spec section for the reports.

Outcomes follow the usual test vocabulary plus the conformance-specific ones: a case a target is
known to fail (``xfail``), a known failure that now passes (``xpass``, which fails the run), and
a case that does not apply to the target (``not_applicable``, e.g. a wire case that needs a
fault behaviour only the simulated peer has).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.cases.model import Case

__all__ = ["CaseResult", "Outcome", "RunResult", "StepFailure"]


class Outcome(StrEnum):
    passed = "passed"
    failed = "failed"
    error = "error"  # the target crashed, hung or answered nonsense
    xfail = "xfail"  # failed, and listed in --known-failures
    xpass = "xpass"  # listed in --known-failures, but passed
    not_applicable = "not_applicable"


@dataclass
class StepFailure:
    """Where a case failed: the step, the value, expected against observed, and the section."""

    step: int  # index in `when`; -1 for the `then` check
    event: str
    field: str  # e.g. "rStatus", "queues.q[1].State"
    expected: Any
    observed: Any
    section: str
    message: str = ""
    evidence: str = ""  # e.g. a hex dump with the field marked, for wire cases


@dataclass
class CaseResult:
    case_id: str
    title: str
    sections: list[str]
    level: str
    outcome: Outcome
    duration: float = 0.0
    failures: list[StepFailure] = field(default_factory=list)
    detail: str = ""
    source: str = ""
    line: int = 0
    tags: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, case: Case, outcome: Outcome, duration: float, failures: list[StepFailure], detail: str) -> CaseResult:
        """The result of ``case`` (one variant) with its identity taken from the case."""
        return cls(
            case_id=case.full_id,
            title=case.title,
            sections=case.sections,
            level=str(case.level),
            outcome=outcome,
            duration=duration,
            failures=failures,
            detail=detail,
            source=case.source,
            line=case.line,
            tags=list(case.tags),
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["outcome"] = str(self.outcome)
        return out


@dataclass
class RunResult:
    target: str
    results: list[CaseResult] = field(default_factory=list)
    duration: float = 0.0

    def counts(self) -> Counter[str]:
        return Counter(str(r.outcome) for r in self.results)

    @property
    def ok(self) -> bool:
        bad = {Outcome.failed, Outcome.error, Outcome.xpass}
        return not any(r.outcome in bad for r in self.results)

    def by_section(self) -> dict[str, Counter[str]]:
        """Spec section -> outcome counts (a case counts under every section it cites)."""
        table: dict[str, Counter[str]] = {}
        for r in self.results:
            for section in r.sections:
                table.setdefault(section, Counter())[str(r.outcome)] += 1
        return dict(sorted(table.items()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "duration": self.duration,
            "counts": dict(self.counts()),
            "results": [r.to_dict() for r in self.results],
        }
