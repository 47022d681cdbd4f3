"""Requirement coverage: which spec requirements of cases/requirements.yaml have cases.

Renders ``msmq-harness coverage`` (docs/cases.md, "Requirements and coverage"): for each
requirement (id, [MS-MQDMPR]/[MS-MQQB]/[MS-MQMQ] section, level), the ids of the cases that cite
it (``spec``, a step's ``requirement`` or an expectation's); the requirements no case covers; the
citations of requirement ids the list does not hold; and citations whose section differs from the
requirement's.  Output is a text table or JSON.

A requirement no case cites is covered too when a case grades an expectation under it **by
derivation** (harness.cases.grading.attribute over every expectation of every step and of
``then``): the processing requirement of an event's section (``DMPR-<section>-PROCESSING``) that
grades a step whose case cites nothing of that section, or the frame of an interpretation an
expectation gives readings of (a value no reading gives fails it).  The output lists those cases
apart from the citing ones.

The model requirements and the session rules (harness.session.rules: a rule id is a requirement
id) are listed together.  A session rule's requirement is covered by the cases that cite it, and
by the cases that watch it: a wire case whose ``then.peer.violations`` grades every rule of the
kind its session can report (harness.cases.violations.watched_rules).  The output marks each rule
and tells cited from watched.
"""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from harness.cases.actions import ACTIONS
from harness.cases.grading import attribute, requirement_annotations
from harness.cases.model import Case, Requirement
from harness.cases.violations import WATCH, watched_rules
from harness.session.rules import RULES

__all__ = ["Citation", "CoverageReport", "CoverageRow", "coverage", "graded_requirements", "render_coverage"]

WATCHED_SHOWN = 5  # the watching (or deriving) cases a text row names (the JSON names them all)


@dataclass
class CoverageRow:
    requirement: Requirement
    # case ids that cite it, or (as the loader resolves them) grade it (a matrix case counts once)
    cases: list[str] = field(default_factory=list)
    rule: str = ""  # a session rule's side (harness.session.rules.Rule.side), "" for a model requirement
    watched: list[str] = field(default_factory=list)  # case ids whose then.peer.violations can report it
    # case ids that do not cite it but grade an expectation under it by derivation (module doc)
    derived: list[str] = field(default_factory=list)

    @property
    def covered(self) -> bool:
        return bool(self.cases or self.watched or self.derived)

    @property
    def only_derived(self) -> bool:
        """Covered by derivation alone: no case cites it and none watches it."""
        return bool(self.derived) and not self.cited and not self.watched

    @property
    def cited(self) -> list[str]:
        """The cases that cite it (``cases`` holds the deriving ones too, as the loader resolves them)."""
        return [c for c in self.cases if c not in self.derived]


@dataclass(frozen=True)
class Citation:
    """A case's reference to a requirement id (``spec[].requirement``)."""

    case: str
    requirement: str
    section: str
    source: str = ""
    line: int = 0


@dataclass
class CoverageReport:
    rows: list[CoverageRow]
    unknown: list[Citation] = field(default_factory=list)  # cite an id requirements.yaml lacks
    mismatched: list[Citation] = field(default_factory=list)  # cite an id under another section

    @property
    def uncovered(self) -> list[Requirement]:
        return [row.requirement for row in self.rows if not row.covered]

    @property
    def covered_count(self) -> int:
        return sum(row.covered for row in self.rows)

    @property
    def rules(self) -> list[CoverageRow]:
        """The rows of the session rules."""
        return [row for row in self.rows if row.rule]

    @property
    def ok(self) -> bool:
        """Every requirement has a case and every citation names a listed requirement."""
        return not self.uncovered and not self.unknown

    def to_dict(self) -> dict[str, Any]:
        return {
            "requirements": [
                {
                    "id": row.requirement.id,
                    "section": row.requirement.section,
                    "level": str(row.requirement.level),
                    "quote": row.requirement.quote,
                    "note": row.requirement.note,
                    "alternatives": [
                        {"name": a.name, "reading": a.reading} for a in row.requirement.alternatives
                    ],
                    "cases": row.cases,
                    "rule": row.rule,
                    "watched": row.watched,
                    "derived": row.derived,
                }
                for row in self.rows
            ],
            "covered": self.covered_count,
            "total": len(self.rows),
            "only_derived": [row.requirement.id for row in self.rows if row.only_derived],
            "rules": {
                "total": len(self.rules),
                "cited": sum(bool(row.cases) for row in self.rules),
                "only_watched": sum(bool(row.watched and not row.cases) for row in self.rules),
                "watch": WATCH,
            },
            "uncovered": [r.id for r in self.uncovered],
            "unknown": [_citation_dict(c) for c in self.unknown],
            "mismatched": [_citation_dict(c) for c in self.mismatched],
        }


def _citation_dict(c: Citation) -> dict[str, Any]:
    return {"case": c.case, "requirement": c.requirement, "section": c.section, "source": c.source, "line": c.line}


def _cited(case: Case) -> set[str]:
    """The requirement ids a case names: ``spec``, a step's ``requirement``, an expectation's
    annotation, ``then.requirement``."""
    out = {ref.requirement for ref in case.spec if ref.requirement}
    for step in case.when:
        if step.requirement:
            out.add(step.requirement)
        out.update(rid for _, rid in requirement_annotations(step.expect))
    out.update(rid for _, rid in requirement_annotations(case.then))
    return out


def _then_values(then: dict[str, Any]) -> list[Any]:
    """The values of ``then`` an expectation grades (harness.cases.loader attributes the same):
    each position's and cursor's attributes, a wire case's ADM state and peer values, but not
    ``peer.violations`` (each rule is graded by its own requirement)."""
    out: list[Any] = []
    for positions in (then.get("queues") or {}).values():
        for entry in positions or []:
            out.extend(v for k, v in (entry or {}).items() if k != "message")
    for group, skip in (("cursors", ""), ("outgoing", "OutgoingMessagePositions")):
        for attrs in (then.get(group) or {}).values():
            out.extend(v for k, v in (attrs or {}).items() if k != skip)
    for key, value in (then.get("peer") or {}).items():
        if key != "violations":
            out.extend(value.values() if key == "sent" and isinstance(value, dict) else [value])
    return out


def graded_requirements(case: Case) -> set[str]:
    """Every requirement id an expectation of ``case`` is graded under: the one
    harness.cases.grading.attribute gives each expectation of each step (a wire step that waits and
    names no expectation: the step's) and of ``then``, and the frame of each interpretation so
    attributed."""
    graded: set[str] = set()
    for step in case.when:
        values: list[Any] = list((step.expect or {}).values())
        if step.expect_error:
            values.append(step.expect_error)
        if values:
            graded.update(attribute(case, step, value)[0] for value in values)
        elif step.action and (found := ACTIONS.get(step.action)) is not None and found.waits:
            graded.add(attribute(case, step)[0])
    graded.update(attribute(case, None, value)[0] for value in _then_values(case.then or {}))
    graded.discard("")
    for rid in list(graded):
        found_req = case.requirements.get(rid)
        if found_req is not None and found_req.frame:
            graded.add(found_req.frame)
    return graded


def coverage(requirements: list[Requirement], cases: list[Case]) -> CoverageReport:
    """Which requirement ids have cases, in the order of ``requirements``: the cases that cite each,
    those that grade it by derivation, and for a session rule the cases that watch it."""
    by_id = {r.id: CoverageRow(r, rule=RULES[r.id].side if r.id in RULES else "") for r in requirements}
    for case in cases:
        for rid in watched_rules(case):
            row = by_id.get(rid)
            if row is not None and case.id not in row.watched:
                row.watched.append(case.id)
        for rid in sorted(graded_requirements(case) - _cited(case)):
            row = by_id.get(rid)
            if row is not None and case.id not in row.derived:
                row.derived.append(case.id)
    unknown: dict[tuple[str, str], Citation] = {}
    mismatched: dict[tuple[str, str], Citation] = {}
    for case in cases:
        for rid in case.requirements:  # cited by a step or an expectation: covered too
            row = by_id.get(rid)
            if row is not None and case.id not in row.cases:
                row.cases.append(case.id)
        for ref in case.spec:
            if not ref.requirement:
                continue
            cite = Citation(case.id, ref.requirement, ref.section, case.source, case.line)
            row = by_id.get(ref.requirement)
            if row is None:
                unknown.setdefault((case.id, ref.requirement), cite)
                continue
            if case.id not in row.cases:
                row.cases.append(case.id)
            if ref.section != row.requirement.section:
                mismatched.setdefault((case.id, ref.requirement), cite)
    return CoverageReport(list(by_id.values()), list(unknown.values()), list(mismatched.values()))


def _where(c: Citation) -> str:
    return f"{c.source}:{c.line}: " if c.source else ""


def render_coverage(report: CoverageReport, as_json: bool = False) -> str:
    """Each requirement (id, level, section, its cases) with the spec's sentence under it and,
    for an interpretation, the readings it allows; then the totals and the problems; or JSON."""
    if as_json:
        return json.dumps(report.to_dict(), indent=2)
    out: list[str] = []
    for row in report.rows:
        r = row.requirement
        cases = f"{len(row.cases)} case{'s' if len(row.cases) != 1 else ''}"
        rule = f"  rule ({row.rule})" if row.rule else ""
        out.append(f"{r.id}  [{r.level}]  {r.section}{rule}  {cases}: {', '.join(row.cases) or '-'}")
        if row.watched:
            shown = ", ".join(row.watched[:WATCHED_SHOWN]) + (", ..." if len(row.watched) > WATCHED_SHOWN else "")
            out.append(f"    watched by {len(row.watched)} case{'s' if len(row.watched) != 1 else ''}: {shown}")
        if row.derived:
            shown = ", ".join(row.derived[:WATCHED_SHOWN]) + (", ..." if len(row.derived) > WATCHED_SHOWN else "")
            n = len(row.derived)
            out.append(f"    graded by derivation in {n} case{'s' if n != 1 else ''} not citing it: {shown}")
        out.extend(textwrap.wrap(f"\u201c{r.quote}\u201d", 100, initial_indent="    ", subsequent_indent="     "))
        for alt in r.alternatives:
            text = f"- {alt.name}: {alt.reading}"
            out.extend(textwrap.wrap(text, 100, initial_indent="      ", subsequent_indent="        "))
    total = len(report.rows)
    pct = 100.0 * report.covered_count / total if total else 100.0
    levels = Counter(str(row.requirement.level) for row in report.rows)
    out.append("")
    out.append(f"{report.covered_count}/{total} requirements have cases ({pct:.1f}%); "
               + ", ".join(f"{n} {lv}" for lv, n in sorted(levels.items())))
    derived_only = [row.requirement.id for row in report.rows if row.only_derived]
    if derived_only:
        out.append(
            f"  {len(derived_only)} of them only by derivation (no case cites them; an expectation is attributed "
            "to the event section's processing requirement, or graded by an interpretation they frame)"
        )
    rules = report.rules
    if rules:
        cited = sum(bool(row.cases) for row in rules)
        watched = sum(bool(row.watched and not row.cases) for row in rules)
        out.append(
            f"session rules: {len(rules)} of them (harness.session.rules, each id a requirement id): {cited} cited "
            f"by a case, {watched} only watched, {len(rules) - cited - watched} neither"
        )
        out.append(
            "  cited: a case cites the requirement (spec, a step or an expectation); watched: a wire case's "
            "then.peer.violations grades the rule whenever its session shows it"
        )
        out.extend(f"  {side} cases watch: {how}" for side, how in WATCH.items())
    if report.uncovered:
        out.append("without cases: " + ", ".join(r.id for r in report.uncovered))
    for c in report.unknown:
        out.append(f"{_where(c)}case {c.case} cites unknown requirement {c.requirement}")
    for c in report.mismatched:
        out.append(f"{_where(c)}case {c.case} cites {c.requirement} under {c.section}, listed under another section")
    return "\n".join(out) + "\n"
