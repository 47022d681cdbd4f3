"""What changed between runs, and implementations side by side: ``msmq-harness compare A.json B.json ...``.

Reads the JSON reports of runs of the same corpus (harness.report.json_report, any readable
format: the same target before and after a change, or different targets) and renders one
matrix: a row per case variant, a column per run, each cell that run's outcome and, for a case
that fails, its failure signature (harness.cases.baseline.signature: the outcome and, per
difference, the requirement, the expectation and the observed value), the rows grouped by spec
section (a case's first section; sections in document and numeric order).  Each later run is
compared with the first: a case that fails now and did not is a **regression**; one that fails
in both with another signature (another requirement, expectation or observed value) a
**changed failure**; one that failed and no longer does a **fix**; any other change of outcome
(passed to not_applicable, say) is listed apart.  They come first, in that order, then the cases
where every run agrees.  By default only the cases present in every run are compared; the others
are counted per run (``--include-missing`` lists them as rows, their missing cells marked).  For
a case that did not pass, a cell carries the first line of its explanation
(harness.report.explain: the requirement, the value, expected and observed).

The terminal gets the changes case by case, grouped, and, for the agreements, one line per section;
``--html FILE`` writes the whole matrix as one self-contained page (inline CSS and script, no
external resource; everything shows without the script), changes first by group, agreements folded
per section, with a search box (case ids, titles, reasons) and a filter by outcome.  ``--all`` lists the
agreeing cases one by one in the terminal too.  ``--name LABEL`` (once per report, in order) names
the columns; by default a column is named by its run's target (with the file name when two runs
share one).  Each report is checked against the results schema of its format
(harness/report/results.schema.json) before it is compared: a JSON array, or an object that is
not a run's report, is refused naming what is wrong and where.  Exit status: 0 no regression
(fixes and other changes allowed), 1 a regression or a changed failure (a failure that changed is
a regression, as ``run --baseline`` counts it), 2 a report cannot be read or is not a report.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match

from harness.cases.baseline import signature
from harness.report.explain import explain
from harness.report.html import BASE_CSS, FILTER_JS, escape, options
from harness.report.json_report import FORMAT, READABLE, load_schema, read_json
from harness.report.terminal import verdict
from harness.results import SEVERITY, CaseResult, RunResult, printable, section_key

__all__ = [
    "MISSING",
    "Comparison",
    "Implementation",
    "Row",
    "add_parser",
    "check_report",
    "cmd_compare",
    "compare",
    "read_report",
    "render_compare_html",
    "render_compare_text",
    "write_compare_html",
]

MISSING = "missing"  # the case is not in that run
# what a row's later cells are against its first (Row.change), in the order they are listed
REGRESSION, CHANGED, FIX, OTHER = "regression", "changed failure", "fix", "other change"
CHANGES = (REGRESSION, CHANGED, FIX, OTHER)
_FAILING = frozenset({"failed", "error", "xfail"})


def failing(result: CaseResult | None, strict: bool = False) -> bool:
    """Whether ``result`` is a failure of the case (failed, error, a known failure, non_strict in a
    strict run); an xpass passed."""
    if result is None:
        return False
    return str(result.outcome) in _FAILING or (strict and str(result.outcome) == "non_strict")


def change(before: CaseResult | None, after: CaseResult | None, strict: tuple[bool, bool] = (False, False)) -> str:
    """What changed from ``before`` to ``after`` (one of :data:`CHANGES`, "" when nothing did)."""
    if before is None or after is None:
        return ""
    was, now = failing(before, strict[0]), failing(after, strict[1])
    if now and not was:
        return REGRESSION
    if was and not now:
        return FIX
    if was and now:
        return CHANGED if signature(before) != signature(after) else ""
    return OTHER if before.outcome != after.outcome else ""


@dataclass
class Implementation:
    """One run's report: its column of the matrix."""

    name: str
    source: str  # the report file
    run: RunResult


@dataclass
class Row:
    """One case variant across the implementations."""

    case_id: str
    title: str
    section: str
    cells: list[CaseResult | None]  # per implementation, None when its run lacks the case
    # the worst change of a later cell against the first (:data:`CHANGES`; "" none)
    change: str = ""

    @property
    def outcomes(self) -> list[str]:
        return [str(c.outcome) if c is not None else MISSING for c in self.cells]

    @property
    def agree(self) -> bool:
        return len(set(self.outcomes)) == 1 and not self.change


@dataclass
class Comparison:
    implementations: list[Implementation]
    rows: list[Row] = field(default_factory=list)
    # per run, how many of its cases are not in every run (not compared unless include_missing)
    only_in: list[int] = field(default_factory=list)
    include_missing: bool = False

    @property
    def disagreements(self) -> list[Row]:
        return [r for r in self.rows if not r.agree]

    def changed(self, kind: str) -> list[Row]:
        """The rows whose change is ``kind`` (:data:`CHANGES`)."""
        return [r for r in self.rows if r.change == kind]

    @property
    def regressed(self) -> bool:
        """A regression or a changed failure: what fails ``compare`` (exit 1)."""
        return any(r.change in (REGRESSION, CHANGED) for r in self.rows)

    @property
    def agreements(self) -> list[Row]:
        return [r for r in self.rows if r.agree]

    def ordered(self) -> list[Row]:
        """Every row, disagreements first; within each part, grouped by section in order."""
        return self.disagreements + self.agreements

    @staticmethod
    def by_section(rows: Sequence[Row]) -> list[tuple[str, list[Row]]]:
        """``rows`` grouped by section, sections in document and numeric order (rows in order)."""
        groups: dict[str, list[Row]] = {}
        for row in rows:
            groups.setdefault(row.section, []).append(row)
        return sorted(groups.items(), key=lambda item: section_key(item[0]))


def compare(
    runs: Sequence[tuple[str, RunResult]], names: Sequence[str] = (), *, include_missing: bool = False
) -> Comparison:
    """The comparison of ``runs`` ((report file, run) pairs), each later run against the first;
    ``names`` label the columns; ``include_missing``: the cases not in every run are rows too
    (else only counted, :attr:`Comparison.only_in`)."""
    labels = list(names) + [run.target or Path(source).stem for source, run in runs[len(names) :]]
    given = list(labels)
    for i, label in enumerate(given):
        if given.count(label) > 1 and i >= len(names):
            labels[i] = f"{label} ({Path(runs[i][0]).name})"
    impls = [Implementation(label, source, run) for label, (source, run) in zip(labels, runs, strict=True)]
    order: dict[str, CaseResult] = {}
    for impl in impls:
        for result in impl.run.results:
            order.setdefault(result.case_id, result)
    by_impl = [{r.case_id: r for r in impl.run.results} for impl in impls]
    strict = [impl.run.strict for impl in impls]
    rows = []
    only_in = [0] * len(impls)
    for case_id, first in order.items():
        cells = [table.get(case_id) for table in by_impl]
        if None in cells and not include_missing:
            for i, cell in enumerate(cells):
                only_in[i] += cell is not None
            continue
        changes = {change(cells[0], cell, (strict[0], strict[i])) for i, cell in enumerate(cells[1:], 1)}
        rows.append(
            Row(
                case_id=case_id,
                title=first.title,
                section=first.sections[0] if first.sections else "unspecified",
                cells=cells,
                change=next((c for c in CHANGES if c in changes), ""),
            )
        )
    comparison = Comparison(impls, only_in=only_in, include_missing=include_missing)
    for part in [[r for r in rows if r.change == c] for c in CHANGES] + [
        [r for r in rows if not r.change and not r.agree],
        [r for r in rows if r.agree],
    ]:
        for _, group in Comparison.by_section(part):
            comparison.rows.extend(group)
    return comparison


def signature_line(result: CaseResult | None) -> str:
    """A failing cell's signature in a line: ``failed: REQ step 0 rStatus observed "x"``; ""
    for a cell that does not fail."""
    if result is None or not failing(result, True):
        return ""
    outcome, diffs = signature(result)
    parts = [" ".join(x for x in (req, where, f"observed {obs}") if x) for req, where, obs in diffs]
    return f"{outcome}: " + "; ".join(parts)


def why(result: CaseResult | None) -> str:
    """One line on why a cell did not pass ("" when it passed or is missing)."""
    if result is None:
        return ""
    explained = explain(result)
    if not explained:
        return result.detail.strip().splitlines()[0] if result.detail.strip() else ""
    e = explained[0]
    if e.compared:
        text = f"{e.field}: expected {e.expected_text}, observed {e.observed_text}"
    else:
        text = e.said.splitlines()[0] if e.said else e.where
    where = f"{e.where} ({e.event})" if e.where.startswith("step") else e.where
    head = " ".join(x for x in (e.requirement, where) if x)
    return f"{head}: {text}" if head else text


_SHORT = {
    "error": "ERROR",
    "failed": "FAILED",
    "xpass": "XPASS",
    "non_strict": "non-strict",
    "xfail": "xfail",
    "unsupported": "unsupported",
    "not_applicable": "n/a",
    "passed": "passed",
    MISSING: "-",
}


# ================================================================================ terminal
def _cell_lines(row: Row, width: int) -> list[str]:
    """Under a listed row: per run, why its cell did not pass and its failure signature."""
    lines = []
    for i, cell in enumerate(row.cells):
        reason = why(cell)
        if reason and cell is not None and str(cell.outcome) != "passed":
            lines.append(f"    {'':{width}}  [{i + 1}] {reason}")
        sig = signature_line(cell)
        if sig and row.change == CHANGED:
            lines.append(f"    {'':{width}}  [{i + 1}] signature {sig}")
    return lines


_TITLES = {
    REGRESSION: "Regressions (failing now, not before)",
    CHANGED: "Changed failures (failing otherwise than before: another requirement, expectation or observed value)",
    FIX: "Fixes (failing before, not now)",
    OTHER: "Other changes of outcome",
}


def render_compare_text(comparison: Comparison, *, show_all: bool = False) -> str:
    """The comparison for a terminal: the runs, then each later run against the first case by
    case, grouped (regressions, changed failures, fixes, other changes: why each cell did not
    pass), the cases only in some runs counted, the agreements per section (case by case with
    ``show_all``)."""
    impls = comparison.implementations
    lines = ["msmq-harness compare:"]
    for i, impl in enumerate(impls):
        counts = impl.run.counts()
        summary = ", ".join(f"{counts[str(o)]} {o}" for o in SEVERITY if counts[str(o)])
        lines.append(f"  [{i + 1}] {impl.name}: {verdict(impl.run)} ({summary or 'no cases'})  <- {impl.source}")
    if len(impls) > 1:
        lines.append(f"  each later run against [1]; {len(comparison.rows)} cases compared")
    width = max([len(_SHORT[o]) for o in _SHORT] + [3])
    header = "  ".join(f"[{i + 1}]".ljust(width) for i in range(len(impls)))
    for kind in CHANGES:
        rows = comparison.changed(kind)
        lines.append("")
        lines.append(f"{_TITLES[kind]}: {len(rows)}")
        for section, group in Comparison.by_section(rows):
            lines.append(f"  {section}")
            lines.append(f"    {header}  case")
            for row in group:
                cells = "  ".join(_SHORT[o].ljust(width) for o in row.outcomes)
                lines.append(f"    {cells}  {row.case_id}")
                lines.extend(_cell_lines(row, width))
    unchanged = [r for r in comparison.rows if not r.change and not r.agree]
    if unchanged:  # --include-missing: a case missing from a run
        lines.append("")
        lines.append(f"In some runs only: {len(unchanged)}")
        for row in unchanged:
            cells = "  ".join(_SHORT[o].ljust(width) for o in row.outcomes)
            lines.append(f"    {cells}  {row.case_id}")
    if any(comparison.only_in):
        lines.append("")
        counted = ", ".join(f"[{i + 1}] {n}" for i, n in enumerate(comparison.only_in) if n)
        lines.append(f"Not compared (not in every run; --include-missing lists them): {counted}")
    lines.append("")
    agree = comparison.agreements
    lines.append(f"Agreements: {len(agree)} cases")
    for section, rows in Comparison.by_section(agree):
        outcomes: dict[str, int] = {}
        for row in rows:
            outcomes[row.outcomes[0]] = outcomes.get(row.outcomes[0], 0) + 1
        said = ", ".join(f"{n} {o}" for o, n in outcomes.items())
        lines.append(f"  {section}: {len(rows)} case{'s' if len(rows) != 1 else ''}, all {said}")
        if show_all:
            lines.extend(f"    {_SHORT[row.outcomes[0]]:<{width}}  {row.case_id}" for row in rows)
    lines.append("")
    word = "REGRESSED" if comparison.regressed else "NO REGRESSION"
    lines.append(f"{word}: {_counts_text(comparison)}")
    return "\n".join(lines) + "\n"


# ==================================================================================== html
_CSS = (
    BASE_CSS
    + """
.impls { list-style: none; padding: 0; display: grid; gap: .3em; }
.impls li { border: 1px solid var(--line); border-radius: 4px; padding: .3em .6em; }
table.compare { width: 100%; table-layout: fixed; margin: .4em 0 1em; }
table.compare th, table.compare td { border: 1px solid var(--line); padding: .2em .4em; vertical-align: top;
  overflow-wrap: anywhere; }
table.compare thead th { background: #f6f8fa; font-size: 12.5px; }
table.compare th.case { width: 30%; text-align: left; font-weight: normal; }
table.compare tr.section-head th { text-align: left; background: #eef1f4; font-weight: 700; }
table.compare td .why { display: block; color: var(--muted); font-size: 12px; margin-top: .15em; }
table.compare tr.disagree th.case { border-left: 4px solid var(--failed); }
table.compare .badge { min-width: 0; }
details.agree > summary { cursor: pointer; font-weight: 600; margin: .3em 0; }
details.agree > summary small { font-weight: normal; color: var(--muted); }
"""
)


def _table(comparison: Comparison, rows: Sequence[Row], kind: str) -> str:
    impls = comparison.implementations
    head = "".join(f'<th scope="col">[{i + 1}] {escape(impl.name)}</th>' for i, impl in enumerate(impls))
    out = [f'<table class="compare {kind}"><thead><tr><th class="case" scope="col">case</th>{head}</tr></thead>']
    for section, group in Comparison.by_section(rows):
        out.append(f'<tbody data-section="{escape(section)}" data-group>')
        out.append(f'<tr class="section-head"><th colspan="{len(impls) + 1}">{escape(section)}</th></tr>')
        for row in group:
            cells = []
            for cell, outcome in zip(row.cells, row.outcomes, strict=True):
                reason = why(cell) if outcome not in ("passed", MISSING) else ""
                if row.change == CHANGED and signature_line(cell):
                    reason = f"{reason} [signature {signature_line(cell)}]" if reason else signature_line(cell)
                label = outcome.replace("_", " ")
                badge = f'<span class="badge b-{escape(outcome)}">{escape(label)}</span>'
                detail = f'<span class="why">{escape(reason)}</span>' if reason else ""
                cells.append(f'<td data-outcome="{escape(outcome)}">{badge}{detail}</td>')
            out.append(
                f'<tr class="case-row {kind}" data-case="{escape(row.case_id)}" data-filterable'
                f' data-outcome="{escape("|".join(sorted(set(row.outcomes))))}"><th class="case" scope="row">'
                f'<code>{escape(row.case_id)}</code> <span class="muted">{escape(row.title)}</span></th>'
                f"{''.join(cells)}</tr>"
            )
        out.append("</tbody>")
    out.append("</table>")
    return "".join(out)


def render_compare_html(comparison: Comparison, *, title: str = "MSMQ implementations compared") -> str:
    """The comparison as one self-contained HTML page: disagreements first (see the module docstring)."""
    disagree, agree = comparison.disagreements, comparison.agreements
    generated = datetime.now(UTC).isoformat(timespec="seconds")
    word = "REGRESSED" if comparison.regressed else "NO REGRESSION"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<style>{_CSS}</style>
</head>
<body>
<header>
<h1>{escape(title)}</h1>
<p><span class="verdict {"pass" if not comparison.regressed else "fail"}" id="verdict">{word}</span>
<span id="summary">{_counts_text(comparison)}</span>
<span class="muted">({escape(generated)})</span></p>
<ol class="impls" id="implementations">{_implementations_html(comparison)}</ol>
{_filters(comparison)}
</header>
<main>
<section id="disagreements">
<h2>What changed ({len(disagree)})</h2>
{_disagreements_html(comparison)}
{_not_compared_html(comparison)}
</section>
<section id="agreements">
<h2>Where they agree ({len(agree)})</h2>
{_agreements_html(comparison) or "<p>None.</p>"}
</section>
</main>
<script>{FILTER_JS}</script>
</body>
</html>
"""


def _implementations_html(comparison: Comparison) -> str:
    """One list item per run, in column order: its verdict, its outcome counts and its source."""
    items = []
    for i, impl in enumerate(comparison.implementations):
        counts = impl.run.counts()
        summary = ", ".join(f"{counts[str(o)]} {o}" for o in SEVERITY if counts[str(o)])
        word = verdict(impl.run)
        kind = {"PASSED": "pass", "FAILED": "fail"}.get(word, "none")
        items.append(
            f'<li><b>[{i + 1}] {escape(impl.name)}</b> <span class="verdict {kind}" style="font-size:1em">'
            f"{word}</span> {escape(summary or 'no cases')} <span class=\"muted\">{escape(impl.source)}</span></li>"
        )
    return "".join(items)


def _disagreements_html(comparison: Comparison) -> str:
    """The cases whose runs disagree: a table per kind of change (:data:`CHANGES`, in order), then
    the cases in some runs only."""
    disagree = comparison.disagreements
    if not disagree:
        return "<p>None: every case has one outcome and one failure signature.</p>"
    groups = [(_TITLES[kind], comparison.changed(kind)) for kind in CHANGES]
    groups.append(("In some runs only", [r for r in disagree if not r.change]))
    return "".join(
        f'<h3 data-change="{escape(title)}">{escape(title)} ({len(rows)})</h3>' + _table(comparison, rows, "disagree")
        for title, rows in groups
        if rows
    )


def _agreements_html(comparison: Comparison) -> str:
    """The cases where every run agrees, folded per spec section ("" when there are none)."""
    folded = []
    for section, rows in Comparison.by_section(comparison.agreements):
        outcomes = sorted({r.outcomes[0] for r in rows}, key=lambda o: [str(s) for s in SEVERITY].index(o))
        folded.append(
            f'<details class="agree" data-section="{escape(section)}" data-group><summary>{escape(section)} '
            f"<small>({len(rows)} case{'s' if len(rows) != 1 else ''}, all {escape(', '.join(outcomes))})"
            f"</small></summary>{_table(comparison, rows, 'agree')}</details>"
        )
    return "".join(folded)


def _not_compared_html(comparison: Comparison) -> str:
    """The count of cases per run left out for not being in every run ("" when none was)."""
    counted = ", ".join(f"[{i + 1}] {n}" for i, n in enumerate(comparison.only_in) if n)
    return f'<p id="not-compared">Not compared (not in every run): {escape(counted)}</p>' if counted else ""


def _counts_text(comparison: Comparison) -> str:
    n = {kind: len(comparison.changed(kind)) for kind in CHANGES}
    return (
        f"{n[REGRESSION]} regressions, {n[CHANGED]} changed failures, {n[FIX]} fixes, {n[OTHER]} other changes "
        f"in {len(comparison.rows)} cases across {len(comparison.implementations)} runs"
    )


def _filters(comparison: Comparison) -> str:
    """The search box and the outcome filter (shown by :data:`FILTER_JS`): a row is shown when
    its text (case id, title, each cell's reason) holds every word searched and one of its cells
    has the outcome chosen."""
    present = {o for row in comparison.rows for o in row.outcomes}
    ordered = [str(o) for o in SEVERITY if str(o) in present] + ([MISSING] if MISSING in present else [])
    return (
        '<form id="filters" role="search" hidden>'
        '<input type="search" name="q" placeholder="search case ids, titles, reasons..." aria-label="search">'
        + options("outcome", "any implementation", ordered)
        + '<span class="shown" aria-live="polite"></span></form>'
    )


def write_compare_html(comparison: Comparison, path: str | os.PathLike[str]) -> Path:
    out = Path(path)
    out.write_text(render_compare_html(comparison), encoding="utf-8")
    return out


# ===================================================================================== CLI
def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``compare`` on the ``msmq-harness`` subcommand parser."""
    p: argparse.ArgumentParser = sub.add_parser(
        "compare",
        help="what changed between runs (regressions, fixes, changed failures), from their run --json reports",
        description="Compare the JSON reports (msmq-harness run --json) of several implementations: one matrix "
        "of cases by run, grouped by spec section, each later run against the first: regressions, changed failures "
        "(another requirement, expectation or observed value), fixes and other changes first; only the cases in "
        "every run are compared (the others counted) unless --include-missing. Exit status: 0 no regression, "
        "1 a regression or a changed failure, 2 a report cannot be read or does not match the results schema "
        "(harness/report/results.schema.json).",
    )
    p.add_argument("reports", nargs="+", metavar="REPORT.json", help="the JSON reports, one per implementation")
    p.add_argument("--html", metavar="FILE", help="write the matrix as a self-contained HTML page")
    p.add_argument("--name", action="append", default=[], metavar="LABEL", help="the column of each report, in order")
    p.add_argument("--all", action="store_true", help="list the agreeing cases one by one in the terminal too")
    p.add_argument(
        "--include-missing",
        action="store_true",
        help="list the cases not in every run as rows too (by default they are only counted)",
    )
    p.set_defaults(func=cmd_compare)
    return p


_SHOWN_VALUE = 60  # characters of an offending value shown in a report's refusal


def _where(error: Any) -> str:
    """Where a schema error is, as a JSON path (``results[3].outcome``; ``the report`` at the top)."""
    where = ""
    for part in error.absolute_path:
        where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
    return where or "the report"


@functools.cache
def _validator(readable: str) -> Any:
    """The results schema (harness/report/results.schema.json) of the format ``readable``: the
    current one as it is; an earlier one (msmq-harness-results/1, which read_json reads) with the
    fields its successors added left optional."""
    schema = load_schema()
    if readable != FORMAT:
        schema = copy.deepcopy(schema)
        schema["properties"]["format"] = {"const": readable}
        schema["required"] = ["target", "results"]
        added = {"result": {"stopped", "explanations"}, "failure": {"quote", "inputs", "line"}}
        for name, fields in added.items():
            definition = schema["$defs"][name]
            definition["required"] = [f for f in definition["required"] if f not in fields]
    return jsonschema.Draft202012Validator(schema)


def check_report(data: Any) -> str:
    """ "" when ``data`` (a parsed JSON document) is a report ``compare`` reads -- an object of a
    format read_json reads, valid against the results schema of that format
    (harness/report/results.schema.json) -- else why not, in a sentence naming the place."""
    if not isinstance(data, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(data), "a number")
        return f"{kind}, not a report (a JSON object, as msmq-harness run --json writes)"
    form = data.get("format", READABLE[0])
    if form not in READABLE:
        return f"format {str(form)[:_SHOWN_VALUE]!r} is none of {', '.join(READABLE)}"
    error = best_match(_validator(form).iter_errors(data))
    if error is None:
        return ""
    message = error.message if len(error.message) <= 2 * _SHOWN_VALUE else error.message[: 2 * _SHOWN_VALUE] + "..."
    return f"not a report of the results schema ({form}): {_where(error)}: {message}"


def read_report(path: str | os.PathLike[str]) -> RunResult:
    """A run's JSON report, checked against the results schema first: ValueError naming what is
    wrong and where (:func:`check_report`); OSError when it cannot be read."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise ValueError(f"not UTF-8 text: {e}") from None
    except RecursionError:
        raise ValueError("nested too deeply to be a report") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON: {e}") from None
    why = check_report(data)
    if why:
        raise ValueError(why)
    return read_json(path)


def cmd_compare(args: argparse.Namespace) -> int:
    """``msmq-harness compare``: see the module docstring."""
    runs = []
    for path in args.reports:
        try:
            runs.append((str(path), read_report(path)))
        except OSError as e:
            print(f"msmq-harness compare: {path}: cannot read the report: {e.strerror or e}", file=sys.stderr)
            return 2
        except (ValueError, KeyError, TypeError) as e:
            print(f"msmq-harness compare: {path}: cannot read the report: {printable(str(e))}", file=sys.stderr)
            return 2
    if len(args.name) > len(runs):
        print(f"msmq-harness compare: {len(args.name)} --name for {len(runs)} reports", file=sys.stderr)
        return 2
    comparison = compare(runs, args.name, include_missing=args.include_missing)
    if args.html:
        try:
            write_compare_html(comparison, args.html)
        except OSError as e:
            print(f"msmq-harness compare: cannot write {args.html}: {e.strerror or e}", file=sys.stderr)
            return 2
    sys.stdout.write(printable(render_compare_text(comparison, show_all=args.all)))  # a report's text is data
    if args.html:
        print(f"report: {args.html}")
    return 1 if comparison.regressed else 0
