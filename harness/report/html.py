"""The HTML report of a conformance run: one self-contained file with the conformance matrix.

Renders a :class:`~harness.report.results.RunResult` as a single HTML page with inline CSS and
a few lines of inline JavaScript and no external resource (no stylesheet, script, font or
image is fetched), so that it can be archived by a CI and opened anywhere:

- a header with the target, the verdict, the totals per outcome and the duration;
- the conformance matrix, ``<table id="conformance-matrix">``: one row per spec section,
  grouped by document (MS-MQDMPR, MS-MQQB, MS-MQMQ, in one ``<tbody data-document=...>``
  each) and sorted numerically by section number, one column per outcome (worst first:
  error, failed, xpass, non_strict, xfail, unsupported, not_applicable, passed) and the total,
  cells colored by outcome; a case counts once per section: under the sections of the
  requirements it broke, else under each section it cites; each row links to that section's
  cases;
- the cases, grouped by section, each with an outcome badge; every difference shows its
  section, the requirement it breaks with its level, the step and value, the expected and the
  observed value, and the evidence (pre-formatted) when there is some; an error shows the
  target's detail.

Every text taken from the run is escaped (``html.escape``).  The script marks the document
``class="js"`` once it has run and adds a filter that shows only the cases that did not pass.
"""

from __future__ import annotations

import html as _html
import os
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from harness.report.results import CaseResult, Outcome, RunResult, StepFailure
from harness.report.terminal import (
    BAD_OUTCOMES,
    OUTCOMES,
    SHOWN_OUTCOMES,
    format_value,
    sections_by_document,
    verdict,
)

__all__ = ["render_html", "section_anchor", "write_html"]

_UNSPECIFIED = "unspecified"
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def escape(text: str) -> str:
    """``html.escape`` (quotes too), with control characters HTML does not allow shown as ``\\xNN``."""
    return _html.escape(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text))


_CSS = """
:root { --passed:#1a7f37; --failed:#cf222e; --error:#8250df; --xfail:#9a6700; --xpass:#bc4c00;
  --not_applicable:#6e7781; --non_strict:#9a6700; --unsupported:#0969da;
  --bg:#ffffff; --fg:#1f2328; --muted:#656d76; --line:#d0d7de; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
  background: var(--bg); margin: 0 auto; padding: 1.5em 2em 4em; max-width: 1200px; }
h1 { font-size: 1.6em; margin: 0 0 .3em; } h2 { margin-top: 1.8em; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.05em; margin: 1.4em 0 .4em; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
.meta { display: grid; grid-template-columns: max-content auto; gap: .15em 1em; margin: .5em 0; }
.meta dt { color: var(--muted); } .meta dd { margin: 0; }
.verdict { display: inline-block; font-weight: 700; padding: .2em .8em; border-radius: 4px; color: #fff; }
.verdict.pass { background: var(--passed); } .verdict.fail { background: var(--failed); }
ul.totals { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: .5em; }
ul.totals li { border: 1px solid var(--line); border-radius: 4px; padding: .2em .6em; }
table { border-collapse: collapse; }
#conformance-matrix th, #conformance-matrix td { border: 1px solid var(--line); padding: .25em .7em; }
#conformance-matrix thead th { background: #f6f8fa; }
#conformance-matrix td { text-align: right; min-width: 4.5em; font-variant-numeric: tabular-nums; }
#conformance-matrix th[scope=row] { text-align: left; font-weight: normal; white-space: nowrap; }
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
.badge { display: inline-block; min-width: 7.5em; text-align: center; border-radius: 3px; color: #fff;
  font-size: 11.5px; font-weight: 700; padding: 0 .4em; margin-right: .5em; text-transform: uppercase; }
.b-passed { background: var(--passed); } .b-failed { background: var(--failed); }
.b-error { background: var(--error); } .b-xfail { background: var(--xfail); }
.b-xpass { background: var(--xpass); } .b-not_applicable { background: var(--not_applicable); }
.b-non_strict { background: var(--non_strict); } .b-unsupported { background: var(--unsupported); }
.failure.soft { border-left-color: var(--non_strict); background: #fffbeb; }
ul.cases { list-style: none; padding: 0; margin: 0; }
ul.cases > li { border-top: 1px solid #eaeef2; padding: .3em 0; }
.case .title { color: var(--muted); } .case .where, .case .dur { color: var(--muted); font-size: 12px; }
.failure { margin: .4em 0 .4em 8.5em; border-left: 3px solid var(--failed); padding: .2em .8em; background: #fff8f8; }
.failure table th { text-align: left; color: var(--muted); font-weight: normal; padding-right: 1em;
  vertical-align: top; }
.failure .expected { color: var(--passed); } .failure .observed { color: var(--failed); }
pre { background: #f6f8fa; border: 1px solid var(--line); padding: .5em .8em; overflow-x: auto; margin: .3em 0; }
pre.detail { margin-left: 8.5em; }
.filters button { font: inherit; margin-right: .4em; }
body.problems-only li.case.good { display: none; }
body.problems-only section.cases-of.clean { display: none; }
"""

_JS = """
(function () {
  document.documentElement.className = "js";
  var body = document.body, buttons = document.querySelectorAll(".filters button");
  for (var i = 0; i < buttons.length; i++) {
    buttons[i].addEventListener("click", function (ev) {
      body.classList.toggle("problems-only", ev.target.getAttribute("data-filter") === "problems");
    });
  }
  var filters = document.querySelector(".filters");
  if (filters) { filters.hidden = false; }
})();
"""


def section_anchor(section: str) -> str:
    """The fragment id of a section's cases: ``sec-MS-MQDMPR-3.1.7.3.2``."""
    return "sec-" + (re.sub(r"[^A-Za-z0-9.\-]+", "-", section).strip("-") or "x")


def _value(value: object) -> str:
    return f"<code>{escape(format_value(value))}</code>"


def _failure(f: StepFailure) -> str:
    where = "then (final state)" if f.step < 0 else f"step {f.step}: {f.event}"
    rows = [
        f"<tr><th>section</th><td>{escape(f.section or '-')}</td></tr>",
        f"<tr><th>requirement</th><td>{escape(f.requirement or '-')} ({escape(f.level)})</td></tr>",
        f"<tr><th>where</th><td>{escape(where)}</td></tr>",
        f"<tr><th>value</th><td><code>{escape(f.field)}</code></td></tr>",
        f'<tr class="expected"><th>expected</th><td>{_value(f.expected)}</td></tr>',
        f'<tr class="observed"><th>observed</th><td>{_value(f.observed)}</td></tr>',
    ]
    if f.message:
        rows.append(f"<tr><th>message</th><td>{escape(f.message)}</td></tr>")
    evidence = f'<pre class="evidence">{escape(f.evidence)}</pre>' if f.evidence else ""
    soft = " soft" if f.level != "MUST" else ""
    return f'<div class="failure{soft}"><table>{"".join(rows)}</table>{evidence}</div>'


def _case(result: CaseResult) -> str:
    outcome = str(result.outcome)
    good = result.outcome not in SHOWN_OUTCOMES
    where = f'<span class="where">{escape(result.source)}:{result.line}</span>' if result.source else ""
    parts = [
        f'<li class="case o-{outcome}{" good" if good else ""}" data-outcome="{outcome}">',
        f'<span class="badge b-{outcome}">{escape(outcome.replace("_", " "))}</span>',
        f'<code class="id">{escape(result.case_id)}</code> <span class="title">{escape(result.title)}</span> ',
        f'<span class="dur">[{escape(result.level)}] {result.duration * 1000:.1f} ms</span> {where}',
    ]
    parts.extend(_failure(f) for f in result.failures)
    detail = result.detail.strip()
    if detail and (not result.failures or result.outcome not in (Outcome.failed, Outcome.non_strict)):
        parts.append(f'<pre class="detail">{escape(detail)}</pre>')
    parts.append("</li>")
    return "".join(parts)


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
    head = "".join(f'<th scope="col">{escape(o)}</th>' for o in OUTCOMES)
    out = [
        '<table id="conformance-matrix">',
        f'<thead><tr><th scope="col">spec section</th>{head}<th scope="col">total</th></tr></thead>',
    ]
    for document, rows in sections_by_document(run):
        out.append(f'<tbody class="document" data-document="{escape(document)}">')
        out.append(f'<tr class="doc-head"><th colspan="{len(OUTCOMES) + 2}">{escape(document)}</th></tr>')
        for section, counts in rows:
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


def render_html(run: RunResult, *, title: str = "MSMQ conformance report") -> str:
    """The report as one HTML document (see the module docstring)."""
    counts = run.counts()
    by_section: dict[str, list[CaseResult]] = {}
    for result in run.results:
        for section in result.counted_sections() or [_UNSPECIFIED]:
            by_section.setdefault(section, []).append(result)
    anchors: dict[str, str] = {}
    for section in by_section:
        anchor = section_anchor(section)
        while anchor in anchors.values():
            anchor += "-"
        anchors[section] = anchor
    ordered = [s for _, rows in sections_by_document(run) for s, _ in rows]
    ordered += [s for s in by_section if s not in ordered]

    totals = "".join(
        f'<li class="o-{o}"><span class="badge b-{o}">{escape(o.replace("_", " "))}</span><b>{counts[o]}</b></li>'
        for o in OUTCOMES
    )
    generated = datetime.now(UTC).isoformat(timespec="seconds")
    word = verdict(run)
    verdict_html = f'<span class="verdict {"pass" if word == "PASSED" else "fail"}">{word}</span>'
    if run.strict:
        verdict_html += " <small>(strict: non_strict outcomes fail the run)</small>"
    sections_html = []
    for section in ordered:
        results = by_section[section]
        clean = all(r.outcome not in SHOWN_OUTCOMES for r in results)
        sections_html.append(
            f'<section class="cases-of{" clean" if clean else ""}" id="{anchors[section]}">'
            f"<h3>{escape(section)} <small>({len(results)} case{'s' if len(results) != 1 else ''})</small></h3>"
            f'<ul class="cases">{"".join(_case(r) for r in results)}</ul></section>'
        )
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
{verdict_html}
<dl class="meta">
<dt>target</dt><dd><code id="target">{escape(run.target)}</code></dd>
<dt>cases</dt><dd id="total-cases">{len(run.results)}</dd>
<dt>duration</dt><dd id="duration">{run.duration:.2f} s</dd>
<dt>generated</dt><dd>{escape(generated)}</dd>
</dl>
<ul class="totals" id="totals">{totals}</ul>
</header>
<main>
<h2>Conformance matrix</h2>
<p>Cases by spec section and outcome; a case counts once per section: under the sections of the
requirements it broke, else under each section it cites. <i>non_strict</i>: a SHOULD, a MAY or an
interpretation the spec does not settle, answered differently (a failure only under --strict).</p>
{_matrix(run, anchors)}
<h2>Cases</h2>
<div class="filters" hidden>show: <button type="button" data-filter="all">all cases</button><button
 type="button" data-filter="problems">failures only</button></div>
{"".join(sections_html) or "<p>No cases were run.</p>"}
</main>
<script>{_JS}</script>
</body>
</html>
"""


def write_html(run: RunResult, path: str | os.PathLike[str], *, title: str = "MSMQ conformance report") -> Path:
    """Write the HTML report of ``run`` to ``path``; returns the path."""
    out = Path(path)
    out.write_text(render_html(run, title=title), encoding="utf-8")
    return out
