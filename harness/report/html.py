"""The HTML report of a conformance run: one self-contained page, read from the top down.

Renders a :class:`~harness.report.results.RunResult` as a single HTML page with inline CSS and
a few lines of plain inline JavaScript and no external resource (no stylesheet, script, font or
image is fetched), so that it can be archived by a CI and opened anywhere.  In reading order:

1. the verdict (``#verdict``: PASSED, FAILED or NOTHING RAN), the totals per outcome, the target
   and the duration;
2. a search box and filters by spec section, level, outcome and tag (``#filters``; shown once
   the script ran), applied to the failures and to the list of every case;
3. the failures (``#failures``), worst first and grouped by the requirement they break: the
   requirement's id, level and section and the spec's sentence head each group, then one
   ``<article class="explanation">`` per difference with the rows every report shows
   (harness.report.explain: where the step is written, its event and inputs, the value,
   expected, observed, what the target said) and the evidence (the annotated hex dump of a
   wire case); the non-strict differences (a SHOULD, a MAY or an interpretation) follow apart;
4. the conformance matrix, ``<table id="conformance-matrix">``: one row per spec section,
   grouped by document (MS-MQDMPR, MS-MQQB, MS-MQMQ, one ``<tbody data-document=...>`` each),
   sorted numerically by section number, one column per outcome (worst first) and the total,
   cells colored by outcome; a case counts once per section: under the sections of the
   requirements it broke, else under each section it cites.  Only the sections with problems
   are shown until "show all sections" is pressed (every row is there without the script);
5. every case, grouped by section (a ``<details>`` per section, open where there are problems),
   each with its outcome badge, linked from the matrix.

A wire case run with ``--record DIR`` links to its transcript (``<a class="transcript">``: the page
of harness.report.transcript, every packet of the case decoded, the failing one marked), in the
list of every case and in its explanations; the link is relative to the report's folder when the
report is written to a file.

Long values and ids wrap; the evidence scrolls inside its own box: the page never scrolls
sideways.  Every text taken from the run is escaped (``html.escape``).  The script marks the
document ``class="js"`` once it has run.
"""

from __future__ import annotations

import html as _html
import os
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from harness.outdir import write_file_atomically
from harness.report.explain import Explanation, explain, rows
from harness.report.formats import ReportFormat
from harness.report.identity import identity_rows
from harness.report.terminal import (
    BAD_OUTCOMES,
    OUTCOMES,
    SHOWN_OUTCOMES,
    baseline_lines,
    sections_by_document,
    verdict,
)
from harness.results import SEVERITY, CaseResult, Outcome, RunResult, section_key

__all__ = ["BASE_CSS", "escape", "render_html", "section_anchor", "transcript_href", "write_html"]

_UNSPECIFIED = "unspecified"
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_LEVELS = ("MUST", "SHOULD", "MAY", "interpretation")


def escape(text: str) -> str:
    """``html.escape`` (quotes too), with control characters HTML does not allow shown as ``\\xNN``."""
    return _html.escape(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text))


# shared with the comparison page (harness.report.compare)
BASE_CSS = """
:root { --passed:#1a7f37; --failed:#cf222e; --error:#8250df; --xfail:#9a6700; --xpass:#bc4c00;
  --not_applicable:#6e7781; --non_strict:#9a6700; --unsupported:#0969da; --missing:#d0d7de;
  --bg:#ffffff; --fg:#1f2328; --muted:#656d76; --line:#d0d7de; }
* { box-sizing: border-box; }
html { overflow-wrap: anywhere; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
  background: var(--bg); margin: 0 auto; padding: 1em 1.5em 4em; max-width: 1200px; }
h1 { font-size: 1.35em; margin: 0 0 .3em; } h2 { margin: 1.4em 0 .5em; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.05em; margin: 1em 0 .3em; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
code { overflow-wrap: anywhere; word-break: break-word; }
pre { background: #f6f8fa; border: 1px solid var(--line); padding: .5em .8em; overflow-x: auto; margin: .3em 0;
  max-width: 100%; }
.verdict { display: inline-block; font-weight: 700; font-size: 1.3em; padding: .15em .8em; border-radius: 4px;
  color: #fff; }
.verdict.pass { background: var(--passed); } .verdict.fail { background: var(--failed); }
.verdict.none { background: var(--not_applicable); }
.badge { display: inline-block; min-width: 7.5em; text-align: center; border-radius: 3px; color: #fff;
  font-size: 11.5px; font-weight: 700; padding: 0 .4em; margin-right: .5em; text-transform: uppercase; }
.b-passed { background: var(--passed); } .b-failed { background: var(--failed); }
.b-error { background: var(--error); } .b-xfail { background: var(--xfail); }
.b-xpass { background: var(--xpass); } .b-not_applicable { background: var(--not_applicable); }
.b-non_strict { background: var(--non_strict); } .b-unsupported { background: var(--unsupported); }
.b-missing { background: var(--missing); color: var(--fg); }
table { border-collapse: collapse; max-width: 100%; }
.muted { color: var(--muted); } .warning { color: var(--xfail); font-weight: 600; margin: .3em 0; }
#filters { display: flex; flex-wrap: wrap; gap: .4em .8em; align-items: center; margin: .6em 0;
  padding: .4em .6em; background: #f6f8fa; border: 1px solid var(--line); border-radius: 4px; }
#filters input[type=search] { flex: 1 1 14em; min-width: 8em; font: inherit; padding: .15em .4em; }
#filters select { font: inherit; max-width: 14em; }
#filters .shown { color: var(--muted); font-size: 12.5px; }
[hidden] { display: none !important; }
"""

_CSS = (
    BASE_CSS
    + """
header .headline { display: flex; flex-wrap: wrap; align-items: center; gap: .6em; margin: .2em 0 .4em; }
ul.totals { list-style: none; padding: 0; margin: .3em 0; display: flex; flex-wrap: wrap; gap: .4em; }
ul.totals li { border: 1px solid var(--line); border-radius: 4px; padding: .1em .5em; }
ul.totals li.zero { opacity: .45; }
.meta { display: flex; flex-wrap: wrap; gap: .2em 1.5em; margin: .2em 0; color: var(--muted); font-size: 13px; }
.meta dt { display: inline; } .meta dd { display: inline; margin: 0 0 0 .3em; color: var(--fg); }
.meta div { min-width: 0; }
.req-group { border-left: 4px solid var(--failed); padding: .1em 0 .3em .8em; margin: .6em 0 1em; }
.req-group.soft { border-left-color: var(--non_strict); }
.req-group h3 { margin: .2em 0; }
.req-group .level { font-size: 12px; font-weight: 700; padding: 0 .4em; border: 1px solid currentColor;
  border-radius: 3px; margin-left: .3em; }
blockquote.quote { margin: .2em 0 .5em; padding: .2em .8em; border-left: 3px solid var(--line);
  color: #3d444d; font-style: italic; }
article.explanation { margin: .5em 0 .8em; padding: .4em .7em; background: #fff8f8; border: 1px solid #ffd7d5;
  border-radius: 4px; }
article.explanation.soft { background: #fffbeb; border-color: #f5e0a0; }
.ex-head { margin-bottom: .2em; } .ex-head .title { color: var(--muted); }
table.rows { width: 100%; table-layout: fixed; }
table.rows th { width: 8.5em; text-align: left; color: var(--muted); font-weight: normal; vertical-align: top;
  padding: .05em .8em .05em 0; }
table.rows td { padding: .05em 0; overflow-wrap: anywhere; }
table.rows tr.expected td { color: var(--passed); } table.rows tr.observed td { color: var(--failed); }
table.rows tr.spec-says td { font-style: italic; }
table.rows tr.target-said td { white-space: pre-wrap; }
#conformance-matrix { width: 100%; }
#conformance-matrix th, #conformance-matrix td { border: 1px solid var(--line); padding: .2em .45em; }
#conformance-matrix thead th { background: #f6f8fa; font-size: 12px; overflow-wrap: anywhere; }
#conformance-matrix td { text-align: right; font-variant-numeric: tabular-nums; }
#conformance-matrix th[scope=row] { text-align: left; font-weight: normal; overflow-wrap: anywhere; }
#conformance-matrix tr.doc-head th { text-align: left; background: #eef1f4; font-weight: 700; }
#conformance-matrix td.zero { color: #b7bdc3; }
#conformance-matrix tfoot th, #conformance-matrix tfoot td { font-weight: 700; background: #f6f8fa; }
td.c-passed:not(.zero) { background: #dafbe1; color: var(--passed); }
td.c-failed:not(.zero) { background: #ffebe9; color: var(--failed); font-weight: 700; }
td.c-error:not(.zero) { background: #fbefff; color: var(--error); font-weight: 700; }
td.c-xfail:not(.zero) { background: #fff8c5; color: var(--xfail); }
td.c-xpass:not(.zero) { background: #fff1e5; color: var(--xpass); font-weight: 700; }
td.c-not_applicable:not(.zero) { background: #f6f8fa; color: var(--not_applicable); }
td.c-non_strict:not(.zero) { background: #fff8c5; color: var(--non_strict); }
td.c-unsupported:not(.zero) { background: #ddf4ff; color: var(--unsupported); }
tr.row-bad th[scope=row] { border-left: 4px solid var(--failed); }
tr.row-ok th[scope=row] { border-left: 4px solid var(--passed); }
tr.row-warn th[scope=row] { border-left: 4px solid var(--xfail); }
html.js #conformance-matrix:not(.expanded) tr.section.row-ok { display: none; }
html.js #conformance-matrix:not(.expanded) tbody.clean { display: none; }
#expand-matrix { font: inherit; margin: .3em 0; }
details.cases-of { margin: .2em 0; } details.cases-of > summary { cursor: pointer; font-weight: 600; }
details.cases-of > summary small { font-weight: normal; color: var(--muted); }
ul.cases { list-style: none; padding: 0; margin: .2em 0 .6em; }
ul.cases > li { border-top: 1px solid #eaeef2; padding: .25em 0; }
.case .title { color: var(--muted); } .case .where, .case .dur { color: var(--muted); font-size: 12px; }
pre.detail { margin: .2em 0 .2em 1em; white-space: pre-wrap; }
"""
)

_JS = """
(function () {
  var root = document.documentElement;
  root.className = "js";
  var matrix = document.getElementById("conformance-matrix");
  var expand = document.getElementById("expand-matrix");
  if (expand && matrix) {
    expand.hidden = false;
    expand.addEventListener("click", function () {
      var open = matrix.classList.toggle("expanded");
      expand.textContent = open ? expand.getAttribute("data-less") : expand.getAttribute("data-more");
    });
  }
  var links = document.querySelectorAll("#conformance-matrix a[href^='#']");
  for (var i = 0; i < links.length; i++) {
    links[i].addEventListener("click", function (ev) {
      var target = document.getElementById(ev.currentTarget.getAttribute("href").slice(1));
      if (target && target.tagName === "DETAILS") { target.open = true; }
    });
  }
})();
"""

#: The search box and filters of a page (``form#filters``, hidden until this script shows it):
#: an element with ``data-filterable`` is shown when its text holds every word searched and, for
#: each select with a value, its ``data-<select name>`` holds that value (values separated by
#: ``|``); an element with ``data-group`` is hidden when none of its filterable elements is shown
#: (and opened, if a ``details``, while a filter is active); ``.shown`` counts the shown LI and TR
#: elements.  Also used by the comparison page (harness.report.compare).
FILTER_JS = """
(function () {
  var form = document.getElementById("filters");
  if (!form) { return; }
  form.hidden = false;
  var items = document.querySelectorAll("[data-filterable]");
  var search = form.querySelector("input[type=search]");
  var selects = form.querySelectorAll("select");
  var shown = form.querySelector(".shown");
  function matches(item) {
    var words = search.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var text = item.textContent.toLowerCase();
    for (var w = 0; w < words.length; w++) { if (text.indexOf(words[w]) < 0) { return false; } }
    for (var s = 0; s < selects.length; s++) {
      var want = selects[s].value, key = selects[s].name;
      if (!want) { continue; }
      var have = "|" + (item.getAttribute("data-" + key) || "") + "|";
      if (have.indexOf("|" + want + "|") < 0) { return false; }
    }
    return true;
  }
  function apply() {
    var active = search.value.trim() !== "";
    for (var s = 0; s < selects.length; s++) { if (selects[s].value) { active = true; } }
    var count = 0;
    for (var i = 0; i < items.length; i++) {
      var ok = matches(items[i]);
      items[i].hidden = !ok;
      if (ok && (items[i].tagName === "LI" || items[i].tagName === "TR")) { count++; }
    }
    var groups = document.querySelectorAll("[data-group]");
    for (var g = 0; g < groups.length; g++) {
      var any = groups[g].querySelector("[data-filterable]:not([hidden])") !== null;
      groups[g].hidden = !any;
      if (active && any && groups[g].tagName === "DETAILS") { groups[g].open = true; }
    }
    shown.textContent = active ? count + " cases match" : "";
  }
  search.addEventListener("input", apply);
  for (var s = 0; s < selects.length; s++) { selects[s].addEventListener("change", apply); }
  form.addEventListener("submit", function (ev) { ev.preventDefault(); });
})();
"""


def section_anchor(section: str) -> str:
    """The fragment id of a section's cases: ``sec-MS-MQDMPR-3.1.7.3.2``."""
    return "sec-" + (re.sub(r"[^A-Za-z0-9.\-]+", "-", section).strip("-") or "x")


def _attr(values: list[str]) -> str:
    return escape("|".join(values))


def _filter_attrs(outcome: str, level: str, sections: list[str], tags: list[str]) -> str:
    return (
        f' data-filterable data-outcome="{escape(outcome)}" data-level="{escape(level)}"'
        f' data-section="{_attr(sections)}" data-tag="{_attr(tags)}"'
    )


def transcript_href(result: CaseResult, base: str | os.PathLike[str] | None = None) -> str:
    """The URL of a recorded wire case's transcript (``""``: it has none), relative to the folder
    ``base`` when given."""
    if not result.transcript:
        return ""
    path = result.transcript
    if base is not None:
        try:
            path = os.path.relpath(os.path.abspath(path), os.path.abspath(base))
        except ValueError:  # another drive (Windows): the path as written
            path = os.path.abspath(path)
    return quote(Path(path).as_posix())


def _transcript_link(href: str) -> str:
    return f' <a class="transcript" href="{escape(href)}">transcript</a>' if href else ""


def explanation_html(
    e: Explanation, result: CaseResult, *, skip: tuple[str, ...] = (), anchor: str = "", transcript: str = ""
) -> str:
    """One explanation (harness.report.explain) as an ``<article class="explanation">``: the
    case, the rows every report shows (but those in ``skip``), the evidence; ``transcript``: the
    URL of the case's transcript page (a recorded wire case)."""
    outcome = e.outcome
    soft = " soft" if outcome == str(Outcome.non_strict) else ""
    sections = list(dict.fromkeys([e.section, *result.sections] if e.section else result.sections))
    table = "".join(
        f'<tr class="{escape(label.replace(" ", "-"))}"><th>{escape(label)}</th><td>{escape(text)}</td></tr>'
        for label, text in rows(e)
        if label not in skip
    )
    evidence = f'<pre class="evidence">{escape(e.evidence)}</pre>' if e.evidence else ""
    ident = f' id="{escape(anchor)}"' if anchor else ""
    return (
        f'<article class="explanation o-{escape(outcome)}{soft}"{ident}'
        f"{_filter_attrs(outcome, e.level, sections, result.tags)}>"
        f'<div class="ex-head"><span class="badge b-{escape(outcome)}">{escape(outcome.replace("_", " "))}</span>'
        f'<code class="id">{escape(e.case_id)}</code> <span class="title">{escape(e.title)}</span>'
        f"{_transcript_link(transcript)}</div>"
        f'<table class="rows">{table}</table>{evidence}</article>'
    )


_RANK = {str(o): i for i, o in enumerate(SEVERITY)}


def _worst(item: tuple[str, list[tuple[Explanation, CaseResult]]]) -> tuple[int, int, str]:
    """Sort key of a requirement's group: its worst outcome, then the most cases, then the id."""
    req, members = item
    return min(_RANK[m[0].outcome] for m in members), -len(members), req or "~"


def _failures(run: RunResult, base: str | os.PathLike[str] | None = None) -> tuple[str, dict[str, str]]:
    """The failures, grouped by requirement (worst group first), and each listed case's anchor."""
    hard = [r for r in run.results if r.outcome.bad(run.strict)]
    soft = [r for r in run.results if r.outcome is Outcome.non_strict and not run.strict]
    anchors: dict[str, str] = {}
    out: list[str] = []
    counter = 0
    for title, results, is_soft in (("Failures", hard, False), ("Non-strict differences", soft, True)):
        if not results:
            continue
        groups: dict[str, list[tuple[Explanation, CaseResult]]] = {}
        for result in results:
            for e in explain(result):
                groups.setdefault(e.requirement, []).append((e, result))
        count = sum(len(members) for members in groups.values())
        note = (
            " <small class='muted'>(a SHOULD, a MAY or an interpretation the spec does not settle, answered "
            "differently: a failure only under --strict)</small>"
            if is_soft
            else ""
        )
        out.append(f'<h2 id="{"non-strict" if is_soft else "failures-head"}">{title} ({count}){note}</h2>')
        for req, members in sorted(groups.items(), key=_worst):
            first = members[0][0]
            level = first.level if req else ""
            section = first.section
            head = (
                f'<code>{escape(req)}</code> <span class="level">{escape(level)}</span> '
                f'<span class="muted">{escape(section)}</span>'
                if req
                else '<span class="muted">no requirement: the case as a whole (setup, harness or target)</span>'
            )
            quote = f'<blockquote class="quote">{escape(first.quote.strip())}</blockquote>' if first.quote else ""
            cards = []
            for e, result in members:
                counter += 1
                anchor = f"fail-{counter}"
                anchors.setdefault(result.case_id, anchor)
                skip = ("requirement", "spec says") if req else ()
                link = transcript_href(result, base)
                cards.append(explanation_html(e, result, skip=skip, anchor=anchor, transcript=link))
            cls = "req-group soft" if is_soft else "req-group"
            out.append(
                f'<section class="{cls}" data-group data-requirement="{escape(req)}">'
                f"<h3>{head} <small class='muted'>({len(members)})</small></h3>{quote}{''.join(cards)}</section>"
            )
    if not out:
        return '<p class="none">No failures.</p>', anchors
    return "\n".join(out), anchors


def _row_class(counts: Counter[str]) -> str:
    if any(counts[str(o)] for o in BAD_OUTCOMES):
        return "row-bad"
    if counts[str(Outcome.xfail)] or counts[str(Outcome.non_strict)]:
        return "row-warn"
    return "row-ok"


def _cells(counts: Counter[str], total: int) -> str:
    cells = [
        f'<td class="c-{o}{"" if counts[o] else " zero"}" data-outcome="{o}">{counts[o]}</td>' for o in OUTCOMES
    ]
    cells.append(f'<td class="c-total" data-outcome="total">{total}</td>')
    return "".join(cells)


def _matrix(run: RunResult, anchors: dict[str, str]) -> str:
    table = sections_by_document(run)
    problems = sum(_row_class(counts) != "row-ok" for _, rows_ in table for _, counts in rows_)
    every = sum(len(rows_) for _, rows_ in table)
    expanded = "" if problems and problems < every else ' class="expanded"'
    head = "".join(f'<th scope="col">{escape(o)}</th>' for o in OUTCOMES)
    out = []
    if expanded == "":
        more = f"show all {every} sections"
        less = f"show only the {problems} sections with problems"
        out.append(
            f'<p>{problems} of {every} sections have problems; the others are folded. <button type="button" '
            f'id="expand-matrix" hidden data-more="{more}" data-less="{less}">{more}</button></p>'
        )
    out += [
        f'<table id="conformance-matrix"{expanded}>',
        f'<thead><tr><th scope="col">spec section</th>{head}<th scope="col">total</th></tr></thead>',
    ]
    for document, rows_ in table:
        clean = all(_row_class(counts) == "row-ok" for _, counts in rows_)
        out.append(f'<tbody class="document{" clean" if clean else ""}" data-document="{escape(document)}">')
        out.append(f'<tr class="doc-head"><th colspan="{len(OUTCOMES) + 2}">{escape(document)}</th></tr>')
        for section, counts in rows_:
            link = f'<a href="#{anchors[section]}">{escape(section)}</a>'
            out.append(
                f'<tr class="section {_row_class(counts)}" data-section="{escape(section)}">'
                f'<th scope="row">{link}</th>{_cells(counts, sum(counts.values()))}</tr>'
            )
        out.append("</tbody>")
    totals = run.counts()
    out.append(
        f'<tfoot><tr class="all-cases"><th scope="row">all cases (each once)</th>'
        f"{_cells(totals, len(run.results))}</tr></tfoot>"
    )
    out.append("</table>")
    return "\n".join(out)


def _case(result: CaseResult, failure_anchor: str, base: str | os.PathLike[str] | None = None) -> str:
    outcome = str(result.outcome)
    good = result.outcome not in SHOWN_OUTCOMES
    where = f'<span class="where">{escape(result.source)}:{result.line}</span>' if result.source else ""
    parts = [
        f'<li class="case o-{outcome}{" good" if good else ""}"'
        f"{_filter_attrs(outcome, result.level, result.counted_sections(), result.tags)}>",
        f'<span class="badge b-{outcome}">{escape(outcome.replace("_", " "))}</span>',
        f'<code class="id">{escape(result.case_id)}</code> <span class="title">{escape(result.title)}</span> ',
        f'<span class="dur">[{escape(result.level)}] {result.duration * 1000:.1f} ms</span> {where}',
    ]
    if failure_anchor:
        parts.append(f' <a href="#{failure_anchor}">why</a>')
    parts.append(_transcript_link(transcript_href(result, base)))
    detail = result.detail.strip()
    if detail and not failure_anchor:  # not applicable, unsupported, xfail: the reason, here
        parts.append(f'<pre class="detail">{escape(detail)}</pre>')
    parts.append("</li>")
    return "".join(parts)


def options(name: str, label: str, values: list[str]) -> str:
    options = "".join(f'<option value="{escape(v)}">{escape(v.replace("_", " "))}</option>' for v in values)
    return f'<label>{label} <select name="{name}"><option value="">all</option>{options}</select></label>'


def _identity(run: RunResult) -> str:
    """The facts that identify the run (harness.report.identity), as the terminal lists them."""
    facts = identity_rows(run)
    said = facts[0][1] if facts and facts[0][1] != run.target else ""
    out = [f'<div><dt>implementation</dt><dd id="implementation">{escape(said)}</dd></div>'] if said else []
    out += [
        f'<div><dt>{escape(label)}</dt><dd class="run-{escape(label.replace(" ", "-"))}">{escape(text)}</dd></div>'
        for label, text in facts[1:]
    ]
    return "".join(out)


def _baseline(run: RunResult) -> str:
    """What ``--baseline`` says of the run: regressions, improvements, stale entries (as the terminal)."""
    lines = baseline_lines(run)
    return f'<pre id="baseline">{escape(chr(10).join(lines).strip())}</pre>' if lines else ""


def _filters(run: RunResult, sections: list[str]) -> str:
    present = {str(r.outcome) for r in run.results}
    levels = {r.level for r in run.results} | {f.level for r in run.results for f in r.failures}
    tags = sorted({t for r in run.results for t in r.tags})
    return (
        '<form id="filters" role="search" hidden>'
        '<input type="search" name="q" placeholder="search ids, titles, requirements, values..." '
        'aria-label="search">'
        + options("section", "section", sections)
        + options("level", "level", [lv for lv in _LEVELS if lv in levels])
        + options("outcome", "outcome", [o for o in OUTCOMES if o in present])
        + options("tag", "tag", tags)
        + '<span class="shown" aria-live="polite"></span></form>'
    )


def _cases_by_section(run: RunResult) -> dict[str, list[CaseResult]]:
    """The cases under each section they count in (:meth:`CaseResult.counted_sections`; a case
    citing none under "unspecified"), sections in the order the run first names them."""
    by_section: dict[str, list[CaseResult]] = {}
    for result in run.results:
        for section in result.counted_sections() or [_UNSPECIFIED]:
            by_section.setdefault(section, []).append(result)
    return by_section


def _section_anchors(by_section: dict[str, list[CaseResult]]) -> dict[str, str]:
    """Each section's anchor in the page (:func:`section_anchor`), made unique."""
    anchors: dict[str, str] = {}
    for section in by_section:
        anchor = section_anchor(section)
        while anchor in anchors.values():
            anchor += "-"
        anchors[section] = anchor
    return anchors


def _summary(run: RunResult) -> str:
    """The headline's sentence: how many cases fail the run, of how many."""
    counts = run.counts()
    bad = sum(counts[str(o)] for o in BAD_OUTCOMES) + (counts[str(Outcome.non_strict)] if run.strict else 0)
    summary = f"{bad} of {len(run.results)} cases fail the run" if bad else f"{len(run.results)} cases"
    if run.strict:
        summary += " (strict: non_strict outcomes fail the run)"
    return summary


def _totals(run: RunResult) -> str:
    """A badge and a count per outcome (an outcome no case had marked ``zero``)."""
    counts = run.counts()
    return "".join(
        f'<li class="o-{o}{"" if counts[o] else " zero"}"><span class="badge b-{o}">'
        f"{escape(o.replace('_', ' '))}</span><b>{counts[o]}</b></li>"
        for o in OUTCOMES
    )


def _sections_html(
    run: RunResult,
    by_section: dict[str, list[CaseResult]],
    anchors: dict[str, str],
    failure_anchors: dict[str, str],
    base: str | os.PathLike[str] | None,
) -> str:
    """All cases, folded per section (open where one has a problem), sections in document order."""
    ordered = [s for _, rows_ in sections_by_document(run) for s, _ in rows_]
    ordered += [s for s in by_section if s not in ordered]
    sections_html = []
    for section in ordered:
        results = by_section[section]
        problem = any(r.outcome in SHOWN_OUTCOMES for r in results)
        items = "".join(_case(r, failure_anchors.get(r.case_id, ""), base) for r in results)
        sections_html.append(
            f'<details class="cases-of{"" if problem else " clean"}" id="{anchors[section]}" data-group'
            f'{" open" if problem else ""}><summary>{escape(section)} '
            f"<small>({len(results)} case{'s' if len(results) != 1 else ''})</small></summary>"
            f'<ul class="cases">{items}</ul></details>'
        )
    return "".join(sections_html)


def render_html(
    run: RunResult, *, title: str = "MSMQ conformance report", base: str | os.PathLike[str] | None = None
) -> str:
    """The report as one HTML document (see the module docstring); ``base``: the folder the page
    is written to, which the links to transcripts are relative to (None: the paths as the run
    wrote them)."""
    by_section = _cases_by_section(run)
    anchors = _section_anchors(by_section)
    generated = datetime.now(UTC).isoformat(timespec="seconds")
    word = verdict(run)
    kind = {"PASSED": "pass", "FAILED": "fail"}.get(word, "none")
    failures_html, failure_anchors = _failures(run, base)
    sections_html = _sections_html(run, by_section, anchors, failure_anchors, base)
    filter_sections = sorted((s for s in by_section if s != _UNSPECIFIED), key=section_key)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}: {escape(run.target)}</title>
<style>{_CSS}</style>
</head>
<body>
<header>
<h1>{escape(title)}</h1>
<div class="headline"><span class="verdict {kind}" id="verdict">{word}</span>
<span id="summary">{escape(_summary(run))}</span></div>
<ul class="totals" id="totals">{_totals(run)}</ul>
<dl class="meta">
<div><dt>target</dt><dd><code id="target">{escape(run.target)}</code></dd></div>
<div><dt>cases</dt><dd id="total-cases">{len(run.results)}</dd></div>
<div><dt>duration</dt><dd id="duration">{run.duration:.2f} s</dd></div>
<div><dt>generated</dt><dd>{escape(generated)}</dd></div>
{_identity(run)}
</dl>
{"".join(f'<p class="warning">warning: {escape(w)}</p>' for w in run.warnings())}
{_baseline(run)}
{_filters(run, filter_sections)}
</header>
<main>
<section id="failures">
{failures_html}
</section>
<section id="matrix">
<h2>Conformance by spec section</h2>
<p class="muted">A case counts once per section: under the sections of the requirements it broke, else
under each section it cites. <i>non_strict</i>: a SHOULD, a MAY or an interpretation the spec does not
settle, answered differently (a failure only under --strict).</p>
{_matrix(run, anchors)}
</section>
<section id="cases">
<h2>All cases</h2>
{sections_html or "<p>No cases were run.</p>"}
</section>
</main>
<script>{_JS}{FILTER_JS}</script>
</body>
</html>
"""


def write_html(run: RunResult, path: str | os.PathLike[str], *, title: str = "MSMQ conformance report") -> Path:
    """Write the HTML report of ``run`` to ``path``, whole or not at all (a previous report stays
    until the new one is complete: harness.outdir.write_file_atomically); returns the path."""
    out = Path(path)
    write_file_atomically(out, render_html(run, title=title, base=out.parent))
    return out


REPORT_FORMAT = ReportFormat(
    "html",
    render_html,
    write_html,
    help="write an HTML report (- for standard output)",
    plugin_help="write an HTML report of the cases (run --html)",
    order=30,
)
