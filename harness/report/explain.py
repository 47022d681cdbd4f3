"""Why a case did not pass, as data: the one explanation every report renders.

A difference a run found (:class:`~harness.report.results.StepFailure`) or the step an error
stopped a case at (``CaseResult.stopped``) becomes an :class:`Explanation`: the case (id, title,
outcome), where it is written (``file:line`` of the step), the requirement it checks with the
spec's own sentence (the ``quote`` of cases/requirements.yaml, docs/cases.md "Requirements and
grading") and its level, the step (its number in ``when``, its event or wire action and the
inputs the case gave it), the value checked with the expected and the observed value, what the
target said (an adapter's error text, how a wire wait was bounded) and, for wire cases, the
annotated hex dump of the packet (the evidence: the field's bytes bracketed and marked).

:func:`explain` builds them; :func:`rows` gives the labelled rows (``requirement``, ``spec
says``, ``at``, ``inputs``, ``value``, ``expected``, ``observed``, ``target said``) in the order
every report shows them; :func:`explanation_lines` the text the terminal summary, JUnit XML and
the pytest plugin print; ``Explanation.to_dict()`` the record of the JSON report's
``explanations`` (harness/report/results.schema.json).  The HTML report renders the same rows
as a table.
"""

from __future__ import annotations

import dataclasses
import json
import re
import textwrap
from dataclasses import dataclass
from typing import Any

from harness.results import CaseResult, Outcome, StepFailure
from packets.paths import display_value

__all__ = [
    "LABELS",
    "Explanation",
    "explain",
    "explanation_lines",
    "format_inputs",
    "rows",
    "show_value",
]

# the rows of an explanation, in the order every report shows them
LABELS: tuple[str, ...] = (
    "requirement",
    "section",
    "spec says",
    "at",
    "inputs",
    "value",
    "expected",
    "observed",
    "readings",
    "target said",
)
_LONG = 100  # an expected or observed value longer than this is shortened (the evidence shows it whole)
_INPUT = 120  # a longer input value is shortened


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=_default)
    except (TypeError, ValueError):
        return repr(value)


def _default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    return str(value)


_BRIEF = re.compile(r"\.\.\. \((\d+) chars\)$")  # harness.cases.wirematch.brief's mark of a cut value


def show_value(value: Any, limit: int = _LONG, field: str = "") -> str:
    """An expected or observed value as compact JSON, a long one cut to ``limit`` characters
    with its full length said (``"0000000000000000... (1024 chars)"``); an integer of a packet
    field the spec writes in hex (``field``: its spec path) in hex beside its decimal,
    ``0x524F494C (1380927820)`` (packets.paths.display_value)."""
    text = display_value(field, value, _json)
    if len(text) <= limit:
        return text
    if isinstance(value, str):
        cut = _BRIEF.search(value)
        length = int(cut.group(1)) if cut else len(value)
        head = value[: cut.start()] if cut else value
        return _json(head[: limit - 24] + f"... ({length} chars)")
    return text[: limit - 24] + f"... ({len(text)} chars)"


def _input(value: Any) -> str:
    text = value if isinstance(value, str) and value.strip() == value and value else _json(value)
    return text if len(text) <= _INPUT else text[: _INPUT - 20] + f"... ({len(text)} chars)"


def format_inputs(inputs: dict[str, Any]) -> str:
    """A step's inputs as the case wrote them: ``iInitialPosition: Start, iPeekOperation: false``."""
    return ", ".join(f"{name}: {_input(value)}" for name, value in inputs.items())


@dataclass(frozen=True)
class Explanation:
    """Why a case did not pass, at one step (see the module docstring)."""

    case_id: str
    title: str
    outcome: str
    location: str  # "cases/mqdmpr/seek.yaml:17": the step's line, else the case's ("" when unknown)
    section: str
    requirement: str  # the requirement id the step or value checks ("" when none is known)
    level: str  # its level: MUST, SHOULD, MAY or interpretation
    quote: str  # the spec's sentence, as cases/requirements.yaml quotes it
    step: int | None  # index in `when`; None for the final state (`then`) or no step at all
    where: str  # "step 1", "then" or "" (setup, or the case as a whole)
    event: str  # the spec event or wire action of the step ("then" for the final state)
    inputs: dict[str, Any] = dataclasses.field(default_factory=dict)
    field: str = ""  # the value checked ("" for an error: nothing was compared)
    expected: Any = None
    observed: Any = None
    said: str = ""  # what the target said: an adapter's error text, how a wait was bounded
    evidence: str = ""  # the annotated hex dump of a wire case's packet
    # an expectation of an interpretation's readings (harness.cases.grading): its id, the reading
    # the observed value is ("" when none), each reading {name, expected, reading, matched}
    interpretation: str = ""
    reading: str = ""
    readings: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    @property
    def readings_text(self) -> str:
        """Each reading of the interpretation with what it gives, the observed one marked."""
        if not self.readings:
            return ""
        lines = [f"{self.interpretation}: the readings the spec allows, and what each gives"]
        for i, r in enumerate(self.readings):
            mark = " <- observed" if r.get("matched") else ""
            checked = " (the reading the corpus checks)" if i == 0 else ""
            lines.append(f"- {r['name']}{checked}: {r['expected']}{mark}")
        if not self.reading and not any(r.get("matched") for r in self.readings):
            lines.append("the observed value is none of them")
        return "\n".join(lines)

    @property
    def compared(self) -> bool:
        """Whether the explanation compares an expected with an observed value."""
        return bool(self.field)

    @property
    def expected_text(self) -> str:
        return show_value(self.expected, field=self.field) if self.compared else ""

    @property
    def observed_text(self) -> str:
        text = show_value(self.observed, field=self.field) if self.compared else ""
        return text + " (the evidence shows it)" if text.endswith('chars)"') and self.evidence else text

    def to_dict(self) -> dict[str, Any]:
        """The JSON report's record (harness/report/results.schema.json, ``explanation``)."""
        return {
            "case_id": self.case_id,
            "title": self.title,
            "outcome": self.outcome,
            "location": self.location,
            "section": self.section,
            "requirement": self.requirement,
            "level": self.level,
            "quote": self.quote,
            "step": self.step,
            "where": self.where,
            "event": self.event,
            "inputs": self.inputs,
            "field": self.field,
            "expected": self.expected,
            "observed": self.observed,
            "expected_text": self.expected_text,
            "observed_text": self.observed_text,
            "said": self.said,
            "evidence": self.evidence,
            "interpretation": self.interpretation,
            "reading": self.reading,
            "readings": self.readings,
            "rows": [[label, text] for label, text in rows(self)],
        }


_STANDARD = re.compile(r"^(?:step \d+ \([^)]*\)|then): \S+ expected .*, observed .*$", re.S)
_WAITED = re.compile(r" \(waited (.*)\)$", re.S)
_REPORTED = re.compile(r"(?:the target reported|the event returned) (.*)$", re.S)


def _said(f: StepFailure) -> str:
    """The part of a difference's message the other rows do not already say."""
    message = f.message.strip()
    waited = _WAITED.search(message)
    if waited:
        return "waited " + waited.group(1)
    if not message or _STANDARD.match(message):
        return ""
    reported = _REPORTED.search(message)
    return reported.group(1) if reported else message


def _location(result: CaseResult, line: int) -> str:
    if not result.source:
        return ""
    return f"{result.source}:{line or result.line}"


def _of_failure(result: CaseResult, f: StepFailure) -> Explanation:
    then = f.step < 0
    return Explanation(
        case_id=result.case_id,
        title=result.title,
        outcome=str(result.outcome),
        location=_location(result, f.line),
        section=f.section,
        requirement=f.requirement,
        level=f.level,
        quote=f.quote,
        step=None if then else f.step,
        where="then" if then else f"step {f.step}",
        event=f.event,
        inputs=dict(f.inputs),
        field=f.field,
        expected=f.expected,
        observed=f.observed,
        said=_said(f),
        evidence=f.evidence,
        interpretation=f.interpretation,
        reading=f.reading,
        readings=[dict(r) for r in f.readings],
    )


def _of_stop(result: CaseResult, f: StepFailure) -> Explanation:
    """The step an error stopped at: nothing was compared, the target's words are what it said."""
    detail = result.detail.strip()
    said = str(f.observed) if f.observed is not None else detail
    return dataclasses.replace(
        _of_failure(result, f), step=f.step, where=f"step {f.step}", field="", expected=None, observed=None,
        said=said, evidence="",
    )  # fmt: skip


def _of_case(result: CaseResult) -> Explanation:
    requirement = result.requirements[0] if len(result.requirements) == 1 else ""
    where = "setup" if result.detail.startswith("setup:") else ""
    return Explanation(
        case_id=result.case_id,
        title=result.title,
        outcome=str(result.outcome),
        location=_location(result, 0),
        section=result.sections[0] if result.sections else "",
        requirement=requirement,
        level=result.level,
        quote="",
        step=None,
        where=where,
        event="",
        said=result.detail.strip() or str(result.outcome),
    )


_QUIET = (Outcome.passed, Outcome.not_applicable, Outcome.unsupported)


def explain(result: CaseResult) -> list[Explanation]:
    """Why ``result`` did not pass: one explanation per difference, else one for the step an
    error stopped it at, else one for the case (a setup error, a known failure that passed);
    none for a case that passed, does not apply or is unsupported."""
    if result.failures:
        return [_of_failure(result, f) for f in result.failures]
    if result.stopped is not None:
        return [_of_stop(result, result.stopped)]
    if result.outcome in _QUIET:
        return []
    return [_of_case(result)]


def rows(e: Explanation) -> list[tuple[str, str]]:
    """The labelled rows of ``e`` (:data:`LABELS` order, empty ones left out); the evidence,
    many lines, is not among them."""
    out: list[tuple[str, str]] = []
    if e.requirement:
        what = ", ".join(x for x in (e.level, e.section) if x)
        out.append(("requirement", f"{e.requirement} ({what})"))
    elif e.section:
        out.append(("section", e.section))
    if e.quote:
        out.append(("spec says", e.quote.strip()))
    step = e.where if e.where != "then" else "then (final state)"
    at = ", ".join(x for x in (e.location, step) if x)
    if e.event and e.event != "then":
        at += f": {e.event}"
    if at:
        out.append(("at", at))
    if e.inputs:
        out.append(("inputs", format_inputs(e.inputs)))
    if e.compared:
        out.append(("value", e.field))
        out.append(("expected", e.expected_text))
        out.append(("observed", e.observed_text))
    if e.readings:
        out.append(("readings", e.readings_text))
    if e.said:
        out.append(("target said", e.said))
    return out


def explanation_lines(e: Explanation, indent: str = "", width: int = 100) -> list[str]:
    """``e`` as text: one ``label: value`` line per row (the spec's sentence wrapped at
    ``width``, many-line values indented under their label), then the evidence."""
    pad = max(len(label) for label in LABELS) + 2
    lines: list[str] = []
    for label, text in rows(e):
        head = f"{indent}{label + ':':<{pad}}"
        body = text.splitlines() or [""]
        if label == "spec says":
            body = textwrap.wrap(text, max(40, width - len(head))) or [""]
        lines.append(head + body[0])
        lines.extend(" " * len(head) + rest for rest in body[1:])
    if e.evidence:
        lines.append(f"{indent}evidence:")
        lines.extend(f"{indent}  {line}" for line in e.evidence.splitlines())
    return lines
