"""Known failures and baselines: which failures of a target are known, and what changed since.

A case's failure is identified by its *signature*: the outcome (failed, error, or non_strict in a
``--strict`` run) and, per difference, the requirement it broke (cases/requirements.yaml, as
graded by harness.cases.grading), the expectation (the step and the value checked, docs/cases.md
"References and values") and the observed value; an error's signature is the step it stopped at,
that step's requirement and the first line of what the target said.  A *baseline* (the YAML file
:func:`render_baseline` writes, ``msmq-harness baseline REPORT.json``; or a JSON report of
``run --json`` itself) lists the failing cases of a run with their signatures and, per entry, a
``reason`` and a ``ticket``.  Against a baseline (:meth:`Baseline.judge`), a case that fails with
the signature its entry records is ``xfail``; a case that fails without an entry, or with another
signature (another requirement, expectation or observed value: a changed failure), is a
*regression* and keeps its outcome; a listed case that no longer fails is an *improvement*; an
entry that names no case of the run is *stale*.  A ``--known-failures`` file is the same YAML, or
the older text form (one case id per line, ``#`` comments): an entry without a signature takes
any failure of its case; a listed case that passes is ``xpass`` there (it fails the run), where a
baseline reports it as an improvement.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError
from harness.results import CaseResult, Outcome, RunResult

__all__ = [
    "FORMAT",
    "Baseline",
    "BaselineError",
    "Entry",
    "Judgement",
    "baseline_of_run",
    "load_baseline",
    "render_baseline",
    "signature",
]

FORMAT = "msmq-harness-baseline/1"
_AT = re.compile(r" at \S+:\d+$")  # the harness's own traceback place in an error: not the target's


class BaselineError(HarnessError, ValueError):
    """A baseline or known-failures file that cannot be read: names the file and the entry."""


Difference = tuple[str, str, str]  # (requirement, expectation, observed as JSON text)


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def failed_outcome(result: CaseResult) -> str:
    """The outcome a failure is recorded under: an xfail keeps what it was (failed when it has
    differences, else error)."""
    if result.outcome is Outcome.xfail:
        return "failed" if result.failures else "error"
    return str(result.outcome)


def signature(result: CaseResult) -> tuple[str, tuple[Difference, ...]]:
    """``(outcome, differences)`` of a result that did not pass (see the module docstring)."""
    outcome = failed_outcome(result)
    if result.failures:
        diffs = tuple(
            (f.requirement, f"{'then' if f.step < 0 else f'step {f.step}'} {f.field}".strip(), _text(f.observed))
            for f in result.failures
        )
        return outcome, diffs
    stopped = result.stopped
    said = (result.detail.strip().splitlines() or [""])[0]
    said = _AT.sub("", said)
    if stopped is not None:
        return outcome, ((stopped.requirement, f"step {stopped.step}", _text(said)),)
    return outcome, (("", "", _text(said)),)


@dataclass
class Entry:
    """One entry: a case id (a full id, or an id meaning every variant) and, when recorded, the
    signature its failure is known by."""

    case: str
    outcome: str = ""  # "" : any failure (a known-failures entry without a signature)
    differences: tuple[Difference, ...] = ()
    reason: str = ""
    ticket: str = ""
    line: int = 0  # in the file (0: not from a file)

    @property
    def recorded(self) -> bool:
        return bool(self.outcome)

    def matches(self, result: CaseResult) -> bool:
        """Does ``result``'s failure have this entry's signature (any failure when none is recorded)?"""
        if not self.recorded:
            return True
        return signature(result) == (self.outcome, self.differences)

    def describe(self) -> str:
        """The recorded failure in a line: ``failed: REQ step 0 rStatus observed "x"``."""
        if not self.recorded:
            return "any failure"
        parts = [
            " ".join(x for x in (req, where, f"observed {observed}" if observed else "") if x)
            for req, where, observed in self.differences
        ]
        return f"{self.outcome}: " + "; ".join(parts) if parts else self.outcome


@dataclass
class Judgement:
    """What a baseline says of a run: the regressions (id, why), the improvements (id, the entry's
    failure, the outcome now), the stale entries (entry, closest case id or ""); the file."""

    source: str = ""
    regressions: list[tuple[str, str]] = field(default_factory=list)
    improvements: list[tuple[str, str, str]] = field(default_factory=list)
    stale: list[tuple[str, str]] = field(default_factory=list)
    known: int = 0  # cases that failed as their entry records (xfail)

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.source,
            "known": self.known,
            "regressions": [{"case_id": c, "why": w} for c, w in self.regressions],
            "improvements": [{"case_id": c, "was": was, "now": now} for c, was, now in self.improvements],
            "stale": [{"entry": e, "closest": c or None} for e, c in self.stale],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Judgement:
        return cls(
            source=str(data.get("file", "")),
            known=int(data.get("known", 0)),
            regressions=[(r["case_id"], r["why"]) for r in data.get("regressions", [])],
            improvements=[(r["case_id"], r["was"], r["now"]) for r in data.get("improvements", [])],
            stale=[(r["entry"], r["closest"] or "") for r in data.get("stale", [])],
        )


@dataclass
class Baseline:
    """The entries of a baseline or known-failures file, by case id; ``strict_xpass``: a listed
    case that passes is xpass (``--known-failures``), not an improvement (``--baseline``)."""

    entries: dict[str, Entry] = field(default_factory=dict)
    source: str = ""
    strict_xpass: bool = False

    @classmethod
    def of_ids(cls, ids: Iterable[str], *, strict_xpass: bool = True) -> Baseline:
        return cls({i: Entry(i) for i in ids}, strict_xpass=strict_xpass)

    def __contains__(self, case_id: object) -> bool:
        return case_id in self.entries

    def __iter__(self) -> Any:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def entry_for(self, result: CaseResult, short_id: str = "") -> Entry | None:
        found = self.entries.get(result.case_id)
        if found is None and short_id:
            found = self.entries.get(short_id)
        return found

    def apply(self, result: CaseResult, short_id: str = "", strict: bool = False) -> CaseResult:
        """``result`` as the baseline sees it (see the module docstring); its detail says why."""
        entry = self.entry_for(result, short_id)
        if entry is None:
            return result
        if result.outcome.bad(strict):
            if entry.matches(result):
                result.outcome = Outcome.xfail
                why = entry.reason or "known failure"
                result.detail = f"{why}{f' ({entry.ticket})' if entry.ticket else ''}\n{result.detail}".strip()
            else:
                result.detail = f"changed failure: the baseline records {entry.describe()}\n{result.detail}".strip()
        elif result.outcome is Outcome.passed and self.strict_xpass:
            result.outcome = Outcome.xpass
            result.detail = "listed as a known failure, but passed"
        return result

    def judge(self, run: RunResult, short_ids: Mapping[str, str] | None = None, strict: bool = False) -> Judgement:
        """The regressions, improvements and stale entries of ``run`` (whose results have been
        through :meth:`apply`); ``short_ids``: full id -> id, for entries naming every variant."""
        short_ids = short_ids or {}
        out = Judgement(self.source)
        seen: set[str] = set()
        for r in run.results:
            entry = self.entry_for(r, short_ids.get(r.case_id, ""))
            if entry is not None:
                seen.add(entry.case)
            if r.outcome is Outcome.xfail:
                out.known += 1
            elif r.outcome.bad(strict):
                outcome, diffs = signature(r)
                what = "; ".join(" ".join(x for x in (req, where, f"observed {obs}") if x) for req, where, obs in diffs)
                if entry is None:
                    out.regressions.append((r.case_id, f"new {outcome}: {what}"))
                else:
                    out.regressions.append((r.case_id, f"changed {outcome}: {what} (was {entry.describe()})"))
            elif entry is not None:
                out.improvements.append((r.case_id, entry.describe(), str(r.outcome)))
        ids = [r.case_id for r in run.results] + list(short_ids.values())
        out.stale = [(e, _closest(e, ids)) for e in sorted(self.entries) if e not in seen]
        return out


def _closest(entry: str, ids: Collection[str]) -> str:
    close = difflib.get_close_matches(entry, list(dict.fromkeys(ids)), n=1, cutoff=0.6)
    return close[0] if close else ""


# ================================================================================ files
def _entry(item: Any, where: str, line: int) -> Entry:
    if isinstance(item, str):
        return Entry(item, line=line)
    if not isinstance(item, Mapping) or not isinstance(item.get("case"), str):
        raise BaselineError(f"{where}: an entry is a case id or a mapping with 'case' (a case id)")
    unknown = set(item) - {"case", "outcome", "failures", "reason", "ticket"}
    if unknown:
        raise BaselineError(
            f"{where}: unknown key {sorted(unknown)[0]!r}; an entry has case, outcome, failures, reason, ticket"
        )
    outcome = str(item.get("outcome") or "")
    if outcome and outcome not in ("failed", "error", "non_strict"):
        raise BaselineError(f"{where}: outcome {outcome!r} is none of failed, error, non_strict")
    diffs = []
    for k, d in enumerate(item.get("failures") or []):
        if not isinstance(d, Mapping):
            raise BaselineError(f"{where}: failures[{k}] is a mapping of requirement, expectation, observed")
        diffs.append((str(d.get("requirement", "")), str(d.get("expectation", "")), _text(d.get("observed"))))
    if diffs and not outcome:
        raise BaselineError(f"{where}: failures without an outcome")
    return Entry(
        item["case"],
        outcome,
        tuple(diffs),
        str(item.get("reason") or ""),
        str(item.get("ticket") or ""),
        line,
    )


ReportReader = Callable[[str], RunResult]  # a run --json report read back (harness.report.compare.read_report)


def load_baseline(path: str | Path, *, strict_xpass: bool = False, read_report: ReportReader | None = None) -> Baseline:
    """The entries of a baseline or known-failures file: the YAML of :func:`render_baseline`
    (``entries:``, or a bare list of entries), a JSON report of ``run --json`` (read by
    ``read_report``, which the edge that reads reports passes: the failing cases of the run), or
    text with one case id per line (``#`` comments).  BaselineError names the file and the entry;
    OSError when it cannot be read."""
    name = str(path)
    text = Path(path).read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise BaselineError(f"{name}: not JSON: {e}") from None
        if not isinstance(data, dict) or "results" not in data or read_report is None:
            raise BaselineError(f"{name}: a JSON file here is a report of run --json (with results)")
        try:
            run = read_report(name)
        except (KeyError, TypeError, ValueError) as e:
            raise BaselineError(f"{name}: not a report of run --json: {e}") from None
        found = Baseline(source=name, strict_xpass=strict_xpass)
        found.entries = {entry.case: entry for entry in baseline_of_run(run)}
        return found
    data = None
    if any(line.split("#", 1)[0].strip().startswith(("-", "entries:", "format:")) for line in text.splitlines()):
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise BaselineError(f"{name}: not YAML: {e}") from None
    out = Baseline(source=name, strict_xpass=strict_xpass)
    if data is None:  # the text form: one id per line
        for number, line in enumerate(text.splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if line:
                out.entries[line] = Entry(line, line=number)
        return out
    items = data.get("entries") if isinstance(data, dict) else data
    if isinstance(data, dict) and data.get("format", FORMAT) != FORMAT:
        raise BaselineError(f"{name}: format {data.get('format')!r} is not {FORMAT}")
    if not isinstance(items, list):
        raise BaselineError(f"{name}: expected 'entries:' holding a list of entries")
    lines = [n for n, line in enumerate(text.splitlines(), 1) if line.lstrip().startswith("- ")]
    for k, item in enumerate(items):
        at = lines[k] if k < len(lines) else 0
        entry = _entry(item, f"{name}: entries[{k}]" + (f" (line {at})" if at else ""), at)
        out.entries[entry.case] = entry
    return out


def baseline_of_run(run: RunResult) -> list[Entry]:
    """An entry for each case of ``run`` that did not pass (failed, error, an xfail, non_strict in a
    strict run), with its signature and an empty reason and ticket."""
    out = []
    for r in run.results:
        if r.outcome is Outcome.xfail or r.outcome in (Outcome.failed, Outcome.error) or (
            run.strict and r.outcome is Outcome.non_strict
        ):
            outcome, diffs = signature(r)
            out.append(Entry(r.case_id, outcome, diffs))
    return out


def render_baseline(run: RunResult, source: str = "") -> str:
    """The YAML baseline of ``run`` (``msmq-harness baseline``): every failing case with its
    signature, a ``reason`` to fill in and a ``ticket``."""
    entries = baseline_of_run(run)
    lines = [
        f"# msmq-harness baseline of {source or 'a run'} (target {run.target}): the failures known of it.",
        "# run --baseline FILE fails only on cases that fail otherwise; fill in each reason (and ticket).",
        f"format: {FORMAT}",
        f"target: {_dump(run.target)}",
        f"strict: {'true' if run.strict else 'false'}",
        "entries:" + ("" if entries else " []"),
    ]
    for entry in entries:
        lines.append(f"  - case: {_dump(entry.case)}")
        lines.append(f"    outcome: {entry.outcome}")
        lines.append("    failures:")
        for req, where, observed in entry.differences:
            lines.append(f"      - requirement: {_dump(req)}")
            lines.append(f"        expectation: {_dump(where)}")
            lines.append(f"        observed: {_dump(json.loads(observed))}")
        lines.append('    reason: ""')
        lines.append('    ticket: ""')
    return "\n".join(lines) + "\n"


def _dump(value: Any) -> str:
    """``value`` as one line of YAML flow style (JSON is YAML)."""
    return json.dumps(value, ensure_ascii=False, default=str)
