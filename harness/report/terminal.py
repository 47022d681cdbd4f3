"""The terminal summary of a conformance run, and the progress bar of a long run.

:func:`print_summary` renders a :class:`~harness.report.results.RunResult` for a person at a
terminal: the target, the outcome counts and the duration; every failed, errored or
unexpectedly passing case, then every non-strict one, with the section and the requirement
(id and level) the difference breaks, the value checked, the expected and the observed value;
and the conformance table (spec section by outcome, grouped by document and sorted by section
number).  On a terminal it uses rich (colors, boxed tables); into a file or a
pipe it writes plain text.  :class:`Progress` is a rich progress bar fed one
:class:`~harness.report.results.CaseResult` at a time (``run(..., progress=p.advance)``); it
is silent when its output is not a terminal.

The formatting helpers shared by the other reports live here too: :func:`section_key` (the
document, then the section number numerically), :func:`format_value` and
:func:`failure_line`.

What a target said is data: every text of the run is shown with its control characters
escaped (``\x1b``, harness.report.results.printable), as the HTML report escapes them, so an
adapter's error text cannot clear the screen, move the cursor or hide a line.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import Counter
from types import TracebackType
from typing import IO, Any

from harness.report.explain import Explanation, explain, explanation_lines, show_value
from harness.report.identity import identity_rows
from harness.results import (
    SEVERITY,
    CaseResult,
    Outcome,
    RunResult,
    StepFailure,
    printable,
    ran_count,
    run_ok,
    section_key,
)
from packets.paths import display_value

__all__ = [
    "BAD_OUTCOMES",
    "OUTCOMES",
    "SHOWN_OUTCOMES",
    "Progress",
    "baseline_lines",
    "case_headline",
    "case_lines",
    "failure_line",
    "format_value",
    "make_console",
    "print_summary",
    "render_summary",
    "requirement_tag",
    "sections_by_document",
    "styled",
    "verdict",
]

OUTCOMES: tuple[str, ...] = tuple(str(o) for o in SEVERITY)  # every table's columns, worst first
BAD_OUTCOMES = frozenset({Outcome.failed, Outcome.error, Outcome.xpass})
SHOWN_OUTCOMES = BAD_OUTCOMES | {Outcome.non_strict}  # listed with their differences

_STYLES = {
    "passed": "green",
    "failed": "bold red",
    "error": "bold magenta",
    "xfail": "yellow",
    "xpass": "bold red",
    "non_strict": "yellow",
    "unsupported": "cyan",
    "not_applicable": "dim",
}
_SHORT = {  # column labels of a narrow terminal
    "error": "err",
    "failed": "fail",
    "xpass": "xpass",
    "non_strict": "n-s",
    "xfail": "xfail",
    "unsupported": "unsup",
    "not_applicable": "n/a",
    "passed": "pass",
}
_NON_STRICT_NOTE = "a SHOULD, MAY or interpretation answered differently: a failure only under --strict"


# ================================================================================ helpers
def sections_by_document(run: RunResult) -> list[tuple[str, list[tuple[str, Counter[str]]]]]:
    """[(document, [(section, outcome counts), ...]), ...] in :func:`section_key` order."""
    groups: dict[str, list[tuple[str, Counter[str]]]] = {}
    for section, counts in sorted(run.by_section().items(), key=lambda item: section_key(item[0])):
        document = section.partition(" ")[0]
        groups.setdefault(document, []).append((section, counts))
    return list(groups.items())


def format_value(value: Any, field: str = "") -> str:
    """An expected or observed value as compact JSON (``"MQ_OK"``, ``{"any_of": [...]}``), an
    integer of a packet field the spec writes in hex (``field``: its spec path) in hex beside
    its decimal (packets.paths.display_value)."""
    return display_value(field, value, _json_text)


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=False, default=_json_default)
    except (TypeError, ValueError):
        return repr(value)


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    return str(value)


def requirement_tag(failure: StepFailure) -> str:
    """``MS-MQDMPR 3.1.7.3.2 [DMPR-3.1.7.3.2-FWD-END, MUST]``: where a difference counts."""
    tag = ", ".join(x for x in (failure.requirement, failure.level) if x)
    return " ".join(x for x in (failure.section, f"[{tag}]" if tag else "") if x)


def failure_line(failure: StepFailure) -> str:
    """``MS-MQDMPR 3.1.7.3.2 [DMPR-..., MUST]: step 0 (seek_...): rMessagePosition expected "m2",
    observed "m3"`` (a long value cut, harness.report.explain.show_value)."""
    where = "then" if failure.step < 0 else f"step {failure.step} ({failure.event})"
    limit = 60 if failure.evidence else 100  # the evidence below shows the value whole
    expected = show_value(failure.expected, limit, failure.field)
    observed = show_value(failure.observed, limit, failure.field)
    text = f"{where}: {failure.field} expected {expected}, observed {observed}"
    tag = requirement_tag(failure)
    return printable(f"{tag}: {text}" if tag else text)


def verdict(run: RunResult, counts: Counter[str] | None = None) -> str:
    """PASSED, FAILED or NOTHING RAN (no case ran against the target); ``counts``: the run's
    :meth:`~harness.results.RunResult.counts`, when the caller has them already."""
    counts = run.counts() if counts is None else counts
    if not ran_count(counts):
        return "NOTHING RAN"
    return "PASSED" if run_ok(counts, run.strict) else "FAILED"


def case_headline(result: CaseResult) -> str:
    """One line saying why a case did not pass: its first failure, else its detail."""
    if result.failures:
        return failure_line(result.failures[0])
    first = result.detail.strip().splitlines()[0] if result.detail.strip() else str(result.outcome)
    section = result.sections[0] if result.sections else ""
    return printable(f"{section}: {first}" if section else first)


def _is_tty(file: IO[str]) -> bool:
    try:
        return bool(file.isatty())
    except (AttributeError, ValueError):
        return False


def _env_set(name: str) -> bool:
    """A convention variable is on when present and not empty (no-color.org, force-color.org)."""
    return bool(os.environ.get(name, ""))


def styled(file: IO[str]) -> bool:
    """Whether ``file`` gets the rich rendering: a terminal, or ``FORCE_COLOR`` set (force-color.org)."""
    return _is_tty(file) or (_env_set("FORCE_COLOR") and not _env_set("NO_COLOR"))


def make_console(file: IO[str]) -> Any:
    """A rich Console on ``file`` following the conventions: ``NO_COLOR`` (no-color.org; it wins
    over FORCE_COLOR) writes no ANSI style at all, neither color nor bold or italic;
    ``FORCE_COLOR`` (force-color.org) styles output that is not a terminal."""
    from rich.console import Console  # rich: heavy to import, only when output goes to a terminal

    if _env_set("NO_COLOR"):
        return Console(file=file, highlight=False, color_system=None)
    force = True if _env_set("FORCE_COLOR") else None
    return Console(file=file, highlight=False, force_terminal=force)


def _listed(run: RunResult, counts: Counter[str]) -> list[tuple[str, list[CaseResult]]]:
    """The groups of results the summary lists with their differences: failures, non-strict
    (``counts``: the run's outcome counts; a group none of whose outcomes occur is not looked for)."""
    groups = []
    failing = BAD_OUTCOMES | ({Outcome.non_strict} if run.strict else set())
    if any(counts[str(o)] for o in failing):
        groups.append(("Failures", [r for r in run.results if r.outcome in failing]))
    if counts[str(Outcome.non_strict)] and not run.strict:
        soft = [r for r in run.results if r.outcome is Outcome.non_strict]
        groups.append((f"Non-strict ({_NON_STRICT_NOTE})", soft))
    return groups


_DETAIL_INDENT = "          "  # the rows of an explanation, under its case and difference
_ROW_STYLES = {"expected": "green", "observed": "red", "spec says": "italic", "target said": "yellow"}


def _explained(result: CaseResult) -> list[tuple[Explanation, StepFailure | None]]:
    """Each explanation of ``result`` with the difference it explains (None for an error)."""
    explanations = explain(result)
    failures: list[StepFailure | None] = list(result.failures) or [None] * len(explanations)
    return list(zip(explanations, failures, strict=True))


def case_lines(result: CaseResult, width: int = 100) -> list[str]:
    """The lines under a listed case: its title, then for each difference its headline
    (:func:`failure_line`) and its explanation (harness.report.explain), the evidence last."""
    lines = [f"      {result.title}"] if result.title else []
    for e, f in _explained(result):
        if f is not None:
            lines.append(f"      {failure_line(f)}")
        lines.extend(explanation_lines(e, _DETAIL_INDENT, width))
    return [printable(line) for line in lines]


def _count_line(counts: Counter[str]) -> str:
    return ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts[o])


def baseline_lines(run: RunResult) -> list[str]:
    """What ``--baseline`` says of the run (harness.cases.baseline): the regressions (which fail
    the run), the improvements and the stale entries, each case on its line; [] without one."""
    judged = run.baseline
    if judged is None:
        return []
    regressions, improvements, stale = judged["regressions"], judged["improvements"], judged["stale"]
    lines = [
        f"Against the baseline {judged['file']}: {len(regressions)} regressions, {judged['known']} known failures, "
        f"{len(improvements)} improvements, {len(stale)} stale entries"
    ]
    for title, rows in (
        ("Regressions (fail the run)", [f"{r['case_id']}: {r['why']}" for r in regressions]),
        ("Improvements (no longer fail)", [f"{r['case_id']}: now {r['now']} (was {r['was']})" for r in improvements]),
        (
            "Stale baseline entries (match no case of this run)",
            [e["entry"] + (f" (did you mean {e['closest']}?)" if e.get("closest") else "") for e in stale],
        ),
    ):
        if rows:
            lines.append(f"{title}:")
            lines.extend(f"  {row}" for row in rows)
    return [*lines, ""]


# ================================================================================ summary
def render_summary(run: RunResult) -> str:
    """The plain-text summary :func:`print_summary` writes when its output is not a terminal."""
    counts = run.counts()
    total = len(run.results)
    lines = [
        f"msmq-harness: target {identity_rows(run)[0][1]}",
        *(f"  {label}: {text}" for label, text in identity_rows(run)[1:]),
        f"{total} cases in {run.duration:.2f} s: {_count_line(counts) or 'nothing run'}",
        *(f"warning: {w}" for w in run.warnings()),
        "",
    ]
    lines.extend(baseline_lines(run))
    for title, shown in _listed(run, counts):
        lines.append(f"{title}:")
        for r in shown:
            lines.append(f"  {str(r.outcome).upper()} {r.case_id}" + (f"  ({r.source}:{r.line})" if r.source else ""))
            lines.extend(case_lines(r))
        lines.append("")
    table = sections_by_document(run)
    if table:
        width = max(len(section) for _, rows in table for section, _ in rows)
        header = f"{'section':<{width}}  " + "  ".join(f"{o:>{max(len(o), 5)}}" for o in OUTCOMES)
        lines.append("By spec section:")
        lines.append(header)
        for _, rows in table:
            for section, row in rows:
                cells = "  ".join(f"{row[o]:>{max(len(o), 5)}}" for o in OUTCOMES)
                lines.append(f"{section:<{width}}  {cells}")
        lines.append("")
    lines.append(verdict(run, counts) + f": {_count_line(counts) or 'no cases'}" + (" (strict)" if run.strict else ""))
    return printable("\n".join(lines)) + "\n"


def print_summary(run: RunResult, *, file: IO[str] | None = None) -> None:
    """Print the summary of ``run`` to ``file`` (stdout): rich on a terminal (or with
    ``FORCE_COLOR``), plain text otherwise; ``NO_COLOR``: no ANSI style (:func:`console`)."""
    out = file if file is not None else sys.stdout
    if not styled(out):
        out.write(render_summary(run))
        out.flush()
        return
    _print_rich(run, out)


def _print_rich(run: RunResult, out: IO[str]) -> None:
    """The summary styled for a terminal: what :func:`render_summary` says, in the same order."""
    from rich.text import Text  # rich: heavy to import, only when the summary goes to a terminal

    console = make_console(out)
    counts = run.counts()
    console.print(Text.assemble(("msmq-harness", "bold"), f": target {printable(identity_rows(run)[0][1])}"))
    for label, text in identity_rows(run)[1:]:
        console.print(Text(printable(f"  {label}: {text}"), style="dim"), crop=False)
    summary = Text(f"{len(run.results)} cases in {run.duration:.2f} s: ")
    for i, outcome in enumerate(o for o in OUTCOMES if counts[o]):
        summary.append(", " if i else "")
        summary.append(f"{counts[outcome]} {outcome}", style=_STYLES[outcome])
    console.print(summary)
    for warning in run.warnings():
        console.print(Text.assemble(("warning", "bold yellow"), f": {printable(warning)}"))
    for said in baseline_lines(run):
        console.print(Text(printable(said)), crop=False)
    for title, shown in _listed(run, counts):
        console.rule(title)
        for r in shown:
            _print_rich_case(console, r)
    _print_rich_sections(console, run)
    word = verdict(run, counts)
    head = Text(word, style="bold green" if word == "PASSED" else "bold red")
    console.print(Text.assemble(head, f": {_count_line(counts) or 'no cases'}" + (" (strict)" if run.strict else "")))


def _print_rich_case(console: Any, r: CaseResult) -> None:
    """A listed case styled: its outcome and id, its title, then each difference's headline and
    its explanation (:func:`case_lines`)."""
    from rich.text import Text  # rich: heavy to import, only when the summary goes to a terminal

    head = Text(f"{str(r.outcome).upper()} ", style=_STYLES[str(r.outcome)])
    head.append(printable(r.case_id), style="bold")
    if r.source:
        head.append(printable(f"  ({r.source}:{r.line})"), style="dim")
    console.print(head)
    if r.title:
        console.print(Text(printable(f"      {r.title}"), style="italic"))
    for e, f in _explained(r):
        if f is not None:
            line = Text("      ")
            line.append(printable(requirement_tag(f)) or "-", style="cyan")
            line.append(printable(f"  {'then' if f.step < 0 else f'step {f.step} ({f.event})'}: {f.field} "))
            line.append("expected ", style="dim")
            line.append(printable(show_value(f.expected, field=f.field)), style="green")
            line.append(", observed ", style="dim")
            line.append(printable(show_value(f.observed, field=f.field)), style="red")
            console.print(line)
        for text in map(printable, explanation_lines(e, _DETAIL_INDENT, max(60, console.width))):
            label, colon, rest = text.partition(":")
            styled = (
                Text(label + colon, style="dim") if colon and not label.startswith(" " * 12) else Text(label + colon)
            )
            styled.append(rest, style=_ROW_STYLES.get(label.strip(), ""))
            console.print(styled, no_wrap=text.startswith(_DETAIL_INDENT + "  "), crop=False)


def _print_rich_sections(console: Any, run: RunResult) -> None:
    """The table of outcomes by spec section, a group per document (nothing when no case ran);
    the outcomes abbreviated (and the abbreviations said) when the whole table would not fit."""
    from rich.table import Table  # rich: heavy to import, only when the summary goes to a terminal
    from rich.text import Text  # rich: heavy to import, only when the summary goes to a terminal

    table = sections_by_document(run)
    if not table:
        return
    longest = max(len(section) for _, rows in table for section, _ in rows)
    labels = list(OUTCOMES)
    if longest + sum(map(len, labels)) + 3 * len(labels) + 4 > console.width:  # keep the sections whole
        labels = [_SHORT[o] for o in OUTCOMES]
    grid = Table(title="Conformance by spec section", header_style="bold")
    grid.add_column("section", no_wrap=True, min_width=longest)
    for label in labels:
        grid.add_column(label, justify="right")
    for index, (_, rows) in enumerate(table):
        if index:
            grid.add_section()
        for section, row in rows:
            cells = [Text(str(row[o]), style=_STYLES[o] if row[o] else "dim") for o in OUTCOMES]
            grid.add_row(Text(printable(section)), *cells)
    console.print(grid)
    if labels != list(OUTCOMES):
        console.print(Text(", ".join(f"{_SHORT[o]} = {o}" for o in OUTCOMES), style="dim"))


# ================================================================================ progress
class Progress:
    """A progress bar over ``total`` cases; ``advance(result)`` after each one.

    A context manager; a rich bar with the counts of failures so far when ``file`` (stderr) is a
    terminal, nothing at all otherwise.
    """

    def __init__(
        self, total: int, *, file: IO[str] | None = None, description: str = "cases", heartbeat: float = 0.0
    ) -> None:
        self.total = total
        self.counts: Counter[str] = Counter()
        self.file = file if file is not None else sys.stderr
        self.description = description
        self.enabled = _is_tty(self.file) and total > 0
        self._progress: Any = None
        self._task: Any = None
        # not a terminal: a line every ``heartbeat`` seconds instead of the bar (0: none)
        self.heartbeat = heartbeat if not self.enabled and total > 0 else 0.0
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self._started = time.monotonic()

    def heartbeat_line(self) -> str:
        """``msmq-harness: 12/130 cases done, 3 failed, 45 s``: what the heartbeat prints."""
        done = sum(self.counts.values())
        bad = sum(self.counts[str(o)] for o in BAD_OUTCOMES)
        took = time.monotonic() - self._started
        return f"msmq-harness: {done}/{self.total} {self.description} done, {bad} failed, {took:.0f} s"

    def _beating(self) -> None:
        while not self._stop.wait(self.heartbeat):
            try:
                self.file.write(self.heartbeat_line() + "\n")
                self.file.flush()
            except (OSError, ValueError):  # the output is gone: the run goes on
                return

    def __enter__(self) -> Progress:
        self._started = time.monotonic()
        if self.heartbeat > 0:
            self._beat = threading.Thread(target=self._beating, daemon=True, name="msmq-harness-heartbeat")
            self._beat.start()
        if self.enabled:
            # rich: heavy to import, only when standard error is a terminal
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
            from rich.progress import Progress as RichProgress

            self._progress = RichProgress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[status]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=make_console(self.file),
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(self.description, total=self.total, status="")
        return self

    def advance(self, result: CaseResult) -> None:
        """Count ``result`` and move the bar one case on."""
        self.counts[str(result.outcome)] += 1
        if self._progress is not None:
            bad = sum(self.counts[str(o)] for o in BAD_OUTCOMES)
            status = f"[red]{bad} failing[/red]" if bad else "[green]ok[/green]"
            self._progress.update(self._task, advance=1, status=status)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join(1)
            self._beat = None
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
