"""JUnit XML of a conformance run, for CI servers.

Renders a :class:`~harness.report.results.RunResult` as ``<testsuites>`` with one
``<testsuite>`` for the run (or, ``per_document=True``, one per spec document: MS-MQDMPR,
MS-MQQB, MS-MQMQ, by each case's first section) and one ``<testcase>`` per case variant:
``classname`` is the spec document and the case file, ``MS-MQDMPR.seek`` (one dot, which CI
reporters such as Jenkins split into package and class: no other dot), ``name`` its full id
(matrix values included), ``time`` its duration, ``file`` the case file relative to the working
directory (or the repository), ``line`` its line.  A failed case has a ``<failure>`` whose
one-line ``message`` is the first failure's section with the expected and the observed value and
whose text explains every
failure as the terminal does (harness.report.explain: the case's title, the requirement and the
spec's sentence, the step and its inputs, expected and observed, what the target said, the
evidence);
a case the target errored on has an ``<error>``; a known failure that passed (xpass) is a
``<failure>`` too, and so is a non_strict case in a ``--strict`` run.  A non_strict case of
an ordinary run passes, with its differences in ``<system-out>`` and the property
``outcome=non_strict``.  A known failure (xfail) is ``<skipped message="known failure: REASON">``,
a case that does not apply to the target ``<skipped message="not applicable: ...">``, one whose
events the target does not implement ``<skipped message="unsupported: ...">``.  Properties, each
name and value once: on each suite what identifies the run (harness.report.identity: the target
and its own name and version from hello, harness version, strict, the known-failures or
baseline file, selection, command, OS) and the sections; on each case the spec sections, the
requirements, the level, the outcome, the title and, with ``--record``, the transcript page.
The suite's ``timestamp`` is when the run started.
Characters XML 1.0 cannot carry are written as ``\\xNN``.
"""

from __future__ import annotations

import os
import re
import socket
import textwrap
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path

from harness.outdir import write_file_atomically
from harness.report.formats import ReportFormat
from harness.report.identity import identity_rows
from harness.report.terminal import case_headline, case_lines, failure_line
from harness.results import DOCUMENTS, CaseResult, Outcome, RunResult, section_key

__all__ = ["classname", "relative_file", "render_junit", "to_element", "write_junit", "xfail_message"]

_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean(text: str) -> str:
    return _ILLEGAL_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _document(result: CaseResult) -> str:
    return result.sections[0].partition(" ")[0] if result.sections else "unspecified"


_NAME_PART = re.compile(r"[^A-Za-z0-9_-]+")


def classname(result: CaseResult) -> str:
    """``MS-MQDMPR.seek``: the spec document of the case's first section and its case file's name,
    joined by the only dot (CI reporters split a classname on its last dot into package and
    class); "unspecified" for what is not known."""
    document = _NAME_PART.sub("_", _document(result)) or "unspecified"
    stem = Path(result.source).name.split(".")[0] if result.source else ""
    return f"{document}.{_NAME_PART.sub('_', stem).strip('_') or 'cases'}"


def relative_file(source: str) -> str:
    """A case file as CI reporters link it: relative to the working directory when below it, else
    to the repository (the folder of the harness package), else as given."""
    path = Path(source)
    if not path.is_absolute():
        return source
    for base in (Path.cwd(), Path(__file__).resolve().parents[2]):
        try:
            return path.relative_to(base).as_posix()
        except ValueError:
            continue
    return source


def xfail_message(result: CaseResult) -> str:
    """``known failure: REASON: how it fails``, one line: a known failure's explanation (the
    entry's reason and ticket, harness.cases.baseline; the first difference or what was said)."""
    lines = result.detail.strip().splitlines()
    reason = lines[0] if lines and lines[0] != "known failure" else ""
    how = failure_line(result.failures[0]) if result.failures else (lines[1] if len(lines) > 1 else "")
    said = ": ".join(_one_line(p) for p in (reason, how) if p)
    return f"known failure: {said}" if said else "known failure"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _properties(parent: ET.Element, pairs: list[tuple[str, str]]) -> None:
    """``<properties>`` holding each (name, value) once, in order."""
    props = ET.SubElement(parent, "properties")
    for name, value in dict.fromkeys(pairs):
        ET.SubElement(props, "property", name=name, value=_clean(value))


def _testcase(result: CaseResult, strict: bool = False) -> ET.Element:
    element = ET.Element(
        "testcase",
        classname=_clean(classname(result)),
        name=_clean(result.case_id),
        time=f"{result.duration:.6f}",
    )
    if result.source:
        element.set("file", _clean(relative_file(result.source)))
        element.set("line", str(result.line))
    pairs = [("spec", s) for s in result.sections]
    pairs += [("requirement", r) for r in result.requirements]
    pairs += [("level", result.level), ("outcome", str(result.outcome))]
    if result.title:
        pairs.append(("title", result.title))
    if result.transcript:
        pairs.append(("transcript", result.transcript))
    _properties(element, pairs)
    text = textwrap.dedent("\n".join(case_lines(result)))  # harness.report.explain, as the terminal shows it
    detail = result.detail.strip()
    outcome = result.outcome
    headline = _clean(_one_line(case_headline(result)))
    if outcome is Outcome.failed or (outcome is Outcome.non_strict and strict):
        kind = "conformance" if outcome is Outcome.failed else "non_strict"
        ET.SubElement(element, "failure", message=headline, type=kind).text = _clean(text)
    elif outcome is Outcome.non_strict:
        ET.SubElement(element, "system-out").text = _clean("non_strict (a failure only under --strict)\n" + text)
    elif outcome is Outcome.error:
        ET.SubElement(element, "error", message=headline, type="target-error").text = _clean(text)
    elif outcome is Outcome.xpass:
        message = "known failure passed unexpectedly"
        ET.SubElement(element, "failure", message=message, type="xpass").text = _clean(text or message)
    elif outcome is Outcome.xfail:
        ET.SubElement(element, "skipped", message=_clean(xfail_message(result)), type="xfail").text = _clean(text)
    elif outcome in (Outcome.not_applicable, Outcome.unsupported):
        what = str(outcome).replace("_", " ")
        message = f"{what}: {_one_line(detail)}" if detail else what
        ET.SubElement(element, "skipped", message=_clean(message), type=str(outcome))
    return element


_SKIPPED = (Outcome.xfail, Outcome.not_applicable, Outcome.unsupported)


def _failures(outcomes: list[Outcome], strict: bool) -> int:
    return sum(o in (Outcome.failed, Outcome.xpass) or (strict and o is Outcome.non_strict) for o in outcomes)


def _testsuite(run: RunResult, name: str, results: list[CaseResult], timestamp: str) -> ET.Element:
    strict = run.strict
    outcomes = [r.outcome for r in results]
    suite = ET.Element(
        "testsuite",
        name=_clean(name),
        tests=str(len(results)),
        failures=str(_failures(outcomes, strict)),
        errors=str(outcomes.count(Outcome.error)),
        skipped=str(sum(o in _SKIPPED for o in outcomes)),
        time=f"{sum(r.duration for r in results):.6f}",
        timestamp=timestamp,
        hostname=_clean(socket.gethostname()),
    )
    info = run.info
    pairs = [("target", run.target)]
    for key, prop in (
        ("target_name", "target.name"),
        ("target_version", "target.version"),
        ("harness_version", "harness.version"),
    ):
        if info.get(key):
            pairs.append((prop, str(info[key])))
    pairs.append(("strict", "true" if strict else "false"))
    for key, prop in (("known_failures", "known-failures"), ("baseline", "baseline"), ("record", "transcripts")):
        if info.get(key):
            pairs.append((prop, str(info[key])))
    rows = dict(identity_rows(run))
    for label in ("selection", "command", "os", "started"):
        if label in rows:
            pairs.append((label, rows[label]))
    if run.stopped:
        pairs.append(("stopped", run.stopped))
    if run.baseline is not None:  # harness.cases.baseline: what the baseline says of the run
        judged = run.baseline
        pairs += [(f"baseline.{k}", str(len(judged[k]))) for k in ("regressions", "improvements", "stale")]
        pairs += [("baseline.improvement", r["case_id"]) for r in judged["improvements"]]
        pairs += [("baseline.stale", e["entry"]) for e in judged["stale"]]
    pairs += [("warning", w) for w in run.warnings()]
    pairs += [("spec", s) for s in sorted({s for r in results for s in r.sections}, key=section_key)]
    _properties(suite, pairs)
    for result in results:
        suite.append(_testcase(result, strict))
    return suite


def to_element(run: RunResult, *, per_document: bool = False, name: str = "msmq-harness") -> ET.Element:
    """The ``<testsuites>`` element of ``run``."""
    started = str(run.info.get("started") or "")  # when the run started
    timestamp = started or (datetime.now(UTC) - timedelta(seconds=run.duration)).isoformat(timespec="seconds")
    outcomes = [r.outcome for r in run.results]
    root = ET.Element(
        "testsuites",
        name=_clean(name),
        tests=str(len(run.results)),
        failures=str(_failures(outcomes, run.strict)),
        errors=str(outcomes.count(Outcome.error)),
        skipped=str(sum(o in _SKIPPED for o in outcomes)),
        time=f"{run.duration:.6f}",
    )
    if per_document:
        groups: dict[str, list[CaseResult]] = {}
        for result in run.results:
            groups.setdefault(_document(result), []).append(result)
        order = sorted(groups, key=lambda d: (DOCUMENTS.index(d) if d in DOCUMENTS else len(DOCUMENTS), d))
        for document in order:
            root.append(_testsuite(run, f"{name} {document}", groups[document], timestamp))
    else:
        root.append(_testsuite(run, name, run.results, timestamp))
    return root


def render_junit(run: RunResult, *, per_document: bool = False) -> str:
    """The JUnit XML document of ``run`` as text."""
    root = to_element(run, per_document=per_document)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(run: RunResult, path: str | os.PathLike[str], *, per_document: bool = False) -> Path:
    """Write the JUnit XML of ``run`` to ``path``, whole or not at all (a previous report stays
    until the new one is complete: harness.outdir.write_file_atomically); returns the path."""
    out = Path(path)
    write_file_atomically(out, render_junit(run, per_document=per_document))
    return out


REPORT_FORMAT = ReportFormat(
    "junit",
    render_junit,
    write_junit,
    help="write a JUnit XML report (- for standard output)",
    order=10,  # the plugin leaves it to pytest's --junitxml
)
