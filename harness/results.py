"""Results of a conformance run, grouped by requirement and spec section for the reports.

A leaf: it imports nothing of ``harness`` (cases build results through
``harness.cases.caseresult``; reports read them), so both layers depend on it and neither on
the other.

Outcomes, worst first (docs/cases.md, "Outcomes"): ``error`` (a harness or setup problem, or a
target that crashed, hung or answered nonsense), ``failed`` (a MUST broken), ``xpass`` (listed as
a known failure, but passed: fails the run), ``non_strict`` (a SHOULD, a MAY or an
interpretation the spec does not settle, answered differently: a failure only under
``--strict``), ``xfail`` (failed, and listed in ``--known-failures``), ``unsupported`` (the
target declared it does not implement an event or action the case raises), ``not_applicable``
(with its reason, e.g. a wire case that needs a fault behaviour only the simulated peer has) and
``passed``.  A failure counts once, under the requirement and the section it broke.
"""

from __future__ import annotations

import dataclasses
import math
import operator
import re
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any

__all__ = [
    "DOCUMENTS",
    "SEVERITY",
    "CaseResult",
    "Outcome",
    "RunResult",
    "StepFailure",
    "clean",
    "clean_failure",
    "printable",
    "ran_count",
    "run_ok",
    "section_key",
]


class Outcome(StrEnum):
    passed = "passed"
    failed = "failed"  # a MUST broken
    non_strict = "non_strict"  # a SHOULD, MAY or interpretation answered differently
    error = "error"  # a harness or setup problem; the target crashed, hung or answered nonsense
    xfail = "xfail"  # failed, and listed in --known-failures
    xpass = "xpass"  # listed in --known-failures, but passed
    unsupported = "unsupported"  # the target declared it does not implement what the case raises
    not_applicable = "not_applicable"

    def bad(self, strict: bool = False) -> bool:
        """Whether this outcome fails a run (non_strict only under ``--strict``)."""
        return self in _BAD or (strict and self is Outcome.non_strict)

    @property
    def ran(self) -> bool:
        """Whether the case ran against the target (not excluded before its first step)."""
        return self not in (Outcome.unsupported, Outcome.not_applicable)


_BAD = frozenset({Outcome.failed, Outcome.error, Outcome.xpass})
# worst first: the order of the reports' summaries
SEVERITY = (
    Outcome.error,
    Outcome.failed,
    Outcome.xpass,
    Outcome.non_strict,
    Outcome.xfail,
    Outcome.unsupported,
    Outcome.not_applicable,
    Outcome.passed,
)


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
    requirement: str = ""  # the requirement id the expectation checks (harness.cases.grading)
    level: str = "MUST"  # that requirement's level: MUST, SHOULD, MAY or interpretation
    quote: str = ""  # that requirement's sentence, as cases/requirements.yaml quotes the spec
    inputs: dict[str, Any] = dataclasses.field(default_factory=dict)  # the step's arguments, as the case wrote them
    line: int = 0  # line of the step in the case file (0: the case's line)
    # an expectation of an interpretation's readings (harness.cases.grading): its id, the named
    # reading the observed value is ("" when none is), and each reading with what it gives
    interpretation: str = ""
    reading: str = ""
    readings: list[dict[str, Any]] = dataclasses.field(default_factory=list)


_SURROGATE = re.compile("[\ud800-\udfff]")
# what a terminal acts on instead of showing: every control character (C0, DEL, C1) but tab and
# newline, and lone surrogates (which no terminal encoding holds)
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


def clean(value: Any) -> Any:
    """``value`` as every report can hold it: each lone surrogate of its text written as
    ``\\udXXX`` (text an implementation sent, a JSON reply may carry ``"\\ud800"``, that no
    report, terminal or UTF-8 file could otherwise hold), and each number JSON cannot hold
    (NaN, infinities) as its name, a string (``"NaN"``, ``"Infinity"``, ``"-Infinity"``).  Lists,
    tuples and mappings are cleaned through."""
    if isinstance(value, str):
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", value) if _SURROGATE.search(value) else value
    if isinstance(value, float) and not math.isfinite(value):
        return _NON_FINITE.get(value, "NaN")
    if isinstance(value, list | tuple):
        return type(value)(clean(v) for v in value)
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    return value


def printable(text: str) -> str:
    """``text`` for a terminal: every control character but tab and newline (NUL, backspace,
    carriage return, ESC, DEL, the C1 controls such as CSI) and every lone surrogate written as
    ``\\xNN`` (``\\udXXX``), as the HTML report writes the control characters HTML does not
    allow (harness.report.html.escape): what a target said is shown, never acted on."""
    if not _UNPRINTABLE.search(text):
        return text
    return _UNPRINTABLE.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text
    )


def clean_failure(f: StepFailure) -> StepFailure:
    """``f`` with every value and text :func:`clean`."""
    return replace(
        f,
        expected=clean(f.expected),
        observed=clean(f.observed),
        message=clean(f.message),
        evidence=clean(f.evidence),
        inputs=clean(f.inputs),
    )


DOCUMENTS: tuple[str, ...] = ("MS-MQDMPR", "MS-MQQB", "MS-MQMQ")  # the order of documents in tables


def section_key(section: str) -> tuple[int, str, tuple[tuple[int, str], ...]]:
    """Sort key of "MS-MQDMPR 3.1.7.3.2": documents in :data:`DOCUMENTS` order, then numerically."""
    document, _, number = section.partition(" ")
    rank = DOCUMENTS.index(document) if document in DOCUMENTS else len(DOCUMENTS)
    parts = tuple((int(p), "") if p.isdigit() else (1 << 30, p) for p in number.split(".") if p)
    return rank, document, parts


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
    requirements: list[str] = field(default_factory=list)  # the ids the case cites
    # an error (or unsupported) at a step: that step, its inputs and requirement; ``observed``
    # holds what the target said (harness.report.explain)
    stopped: StepFailure | None = None
    # a wire case run with ``--record DIR``: its transcript page, the path as the run wrote it
    # (DIR/<id>.html, next to DIR/<id>.pcap; harness.report.transcript); None otherwise
    transcript: str | None = None

    def counted_sections(self) -> list[str]:
        """The sections this result counts under (see RunResult.by_section), each once."""
        broken = [f.section for f in self.failures if f.section]
        return list(dict.fromkeys(broken or self.sections))

    def counted_requirements(self) -> list[str]:
        """The requirements this result counts under (see RunResult.by_requirement), each once."""
        broken = [f.requirement for f in self.failures if f.requirement]
        return list(dict.fromkeys(broken or self.requirements))

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["outcome"] = str(self.outcome)
        if self.transcript is None:  # optional: only a recorded wire case has one
            del out["transcript"]
        return out


@dataclass
class RunResult:
    target: str
    results: list[CaseResult] = field(default_factory=list)
    duration: float = 0.0
    strict: bool = False  # non_strict outcomes fail the run (--strict)
    # --known-failures entries that named no case of the run: (entry, closest case id or "")
    unmatched_known_failures: list[tuple[str, str]] = field(default_factory=list)
    # what identifies the run in every report (harness.report.identity): argv, OS, selection,
    # the target's own name and version from hello, harness version, start time, files named
    info: dict[str, Any] = field(default_factory=dict)
    # --baseline: its regressions, improvements and stale entries (harness.cases.baseline.Judgement.to_dict)
    baseline: dict[str, Any] | None = None
    # a run stopped early (--maxfail, --budget): why, and the cases that did not run
    stopped: str = ""
    not_run: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.target = clean(self.target)  # argv may carry undecodable bytes as lone surrogates

    def warnings(self) -> list[str]:
        """What the run's reports warn of besides the results: each known-failures entry that
        named no case, with the closest case id; each stale baseline entry; an early stop."""
        return [
            f"--known-failures entry {entry!r} matches no case of this run"
            + (f" (did you mean {closest!r}?)" if closest else "")
            for entry, closest in self.unmatched_known_failures
        ] + [
            f"--baseline entry {e['entry']!r} is stale: it matches no case of this run"
            + (f" (did you mean {e['closest']!r}?)" if e.get("closest") else "")
            for e in (self.baseline or {}).get("stale", [])
        ] + (
            [f"stopped early: {self.stopped}; {len(self.not_run)} cases did not run"] if self.stopped else []
        )

    def counts(self) -> Counter[str]:
        """Outcome -> how many results have it (one pass, no Python code per result)."""
        return Counter(map(str, map(_OUTCOME_OF, self.results)))

    @property
    def ok(self) -> bool:
        """No case failed, erred or passed unexpectedly (nor, under ``strict``, was non_strict)."""
        return run_ok(self.counts(), self.strict)

    @property
    def ran(self) -> int:
        """How many cases ran against the target (not unsupported or not applicable)."""
        return ran_count(self.counts())

    def by_section(self) -> dict[str, Counter[str]]:
        """Spec section -> outcome counts, each case counted once per section.

        A case with differences counts under the sections of the requirements it broke; any
        other case under each distinct section it cites.
        """
        return _table(self.results, "section", "sections")

    def by_requirement(self) -> dict[str, Counter[str]]:
        """Requirement id -> outcome counts: a difference counts under the requirement it
        broke, once per case; a case without differences under each requirement it cites."""
        return _table(self.results, "requirement", "requirements")

    def to_dict(self) -> dict[str, Any]:
        out = {
            "target": self.target,
            "strict": self.strict,
            "duration": self.duration,
            "counts": dict(self.counts()),
            "by_requirement": {k: dict(v) for k, v in self.by_requirement().items()},
            "results": [r.to_dict() for r in self.results],
        }
        if self.unmatched_known_failures:  # only when there are: reports without stay as they were
            out["unmatched_known_failures"] = [
                {"entry": entry, "closest": closest or None} for entry, closest in self.unmatched_known_failures
            ]
        if self.info:
            out["run"] = self.info
        if self.baseline is not None:
            out["baseline"] = self.baseline
        if self.stopped:
            out["stopped"] = self.stopped
            out["not_run"] = list(self.not_run)
        return out


_OUTCOME_OF = operator.attrgetter("outcome")
_NOT_RUN = (str(Outcome.unsupported), str(Outcome.not_applicable))  # excluded before their first step
_BAD_NAMES = tuple(str(o) for o in SEVERITY if o in _BAD)


def ran_count(counts: Counter[str]) -> int:
    """How many cases ran, from a run's :meth:`RunResult.counts`: not unsupported or not applicable
    (:attr:`Outcome.ran`)."""
    return sum(counts.values()) - sum(counts[o] for o in _NOT_RUN)


def run_ok(counts: Counter[str], strict: bool) -> bool:
    """No outcome that fails a run (:meth:`Outcome.bad`) among a run's :meth:`RunResult.counts`."""
    return not any(counts[o] for o in _BAD_NAMES) and not (strict and counts[str(Outcome.non_strict)])


def _table(results: list[CaseResult], broke: str, cites: str) -> dict[str, Counter[str]]:
    """Key -> outcome counts, each result counted once per key: under the ``broke`` attribute
    (section, requirement) of its differences that have one, else under each key its ``cites``
    (sections, requirements) lists (CaseResult.counted_sections, counted_requirements).

    The (key, outcome) pairs are counted at once, then split by key: each key's Counter holds its
    outcomes in the order they first came, as one counted result after the other gives."""
    pairs: list[tuple[str, str]] = []
    for r in results:
        keys = [k for f in r.failures if (k := getattr(f, broke))] if r.failures else None
        outcome = str(r.outcome)
        pairs.extend((k, outcome) for k in dict.fromkeys(keys or getattr(r, cites)))
    table: dict[str, Counter[str]] = {}
    for (key, outcome), n in Counter(pairs).items():
        counts = table.get(key)
        if counts is None:  # a Counter made when the key is new only
            counts = table[key] = Counter()
        counts[outcome] = n
    return dict(sorted(table.items()))
