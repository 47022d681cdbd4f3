"""JUnit XML of a conformance run, for CI servers.

Renders a :class:`~harness.report.results.RunResult` as ``<testsuites>`` with one
``<testsuite>`` for the run (or, ``per_document=True``, one per spec document: MS-MQDMPR,
MS-MQQB, MS-MQMQ, by each case's first section) and one ``<testcase>`` per case variant:
``classname`` is the case's first spec section, ``name`` its full id (matrix values included),
``time`` its duration.  A failed case has a ``<failure>`` whose ``message`` is the first
failure's section with the expected and the observed value and whose text explains every
failure as the terminal does (harness.report.explain: the case's title, the requirement and the
spec's sentence, the step and its inputs, expected and observed, what the target said, the
evidence);
a case the target errored on has an ``<error>``; a known failure that passed (xpass) is a
``<failure>`` too, and so is a non_strict case in a ``--strict`` run.  A non_strict case of
an ordinary run passes, with its differences in ``<system-out>`` and the property
``outcome=non_strict``.  A known failure (xfail) is ``<skipped message="known failure">``, a
case that does not apply to the target ``<skipped message="not applicable: ...">``, one whose
events the target does not implement ``<skipped message="unsupported: ...">``.  Properties: the
target on each suite; the spec sections, the requirements, the level, the outcome and the case
file on each case.
Characters XML 1.0 cannot carry are written as ``\\xNN``.
"""

from __future__ import annotations

import os
import re
import socket
import textwrap
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

from harness.report.terminal import DOCUMENTS, case_headline, case_lines, section_key
from harness.results import CaseResult, Outcome, RunResult

__all__ = ["render_junit", "to_element", "write_junit"]

_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean(text: str) -> str:
    return _ILLEGAL_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _document(result: CaseResult) -> str:
    return result.sections[0].partition(" ")[0] if result.sections else "unspecified"


def _testcase(result: CaseResult, strict: bool = False) -> ET.Element:
    element = ET.Element(
        "testcase",
        classname=_clean(result.sections[0] if result.sections else "unspecified"),
        name=_clean(result.case_id),
        time=f"{result.duration:.6f}",
    )
    if result.source:
        element.set("file", _clean(result.source))
        element.set("line", str(result.line))
    props = ET.SubElement(element, "properties")
    for section in result.sections:
        ET.SubElement(props, "property", name="spec", value=_clean(section))
    for requirement in result.requirements:
        ET.SubElement(props, "property", name="requirement", value=_clean(requirement))
    ET.SubElement(props, "property", name="level", value=_clean(result.level))
    ET.SubElement(props, "property", name="outcome", value=str(result.outcome))
    if result.title:
        ET.SubElement(props, "property", name="title", value=_clean(result.title))
    text = textwrap.dedent("\n".join(case_lines(result)))  # harness.report.explain, as the terminal shows it
    detail = result.detail.strip()
    outcome = result.outcome
    if outcome is Outcome.failed or (outcome is Outcome.non_strict and strict):
        kind = "conformance" if outcome is Outcome.failed else "non_strict"
        ET.SubElement(element, "failure", message=_clean(case_headline(result)), type=kind).text = _clean(text)
    elif outcome is Outcome.non_strict:
        ET.SubElement(element, "system-out").text = _clean("non_strict (a failure only under --strict)\n" + text)
    elif outcome is Outcome.error:
        ET.SubElement(element, "error", message=_clean(case_headline(result)), type="target-error").text = _clean(text)
    elif outcome is Outcome.xpass:
        message = "known failure passed unexpectedly"
        ET.SubElement(element, "failure", message=message, type="xpass").text = _clean(text or message)
    elif outcome is Outcome.xfail:
        ET.SubElement(element, "skipped", message="known failure", type="xfail").text = _clean(text)
    elif outcome in (Outcome.not_applicable, Outcome.unsupported):
        what = str(outcome).replace("_", " ")
        message = f"{what}: {detail}" if detail else what
        ET.SubElement(element, "skipped", message=_clean(message), type=str(outcome))
    return element


_SKIPPED = (Outcome.xfail, Outcome.not_applicable, Outcome.unsupported)


def _failures(outcomes: list[Outcome], strict: bool) -> int:
    return sum(o in (Outcome.failed, Outcome.xpass) or (strict and o is Outcome.non_strict) for o in outcomes)


def _testsuite(name: str, target: str, results: list[CaseResult], timestamp: str, strict: bool = False) -> ET.Element:
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
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="target", value=_clean(target))
    for section in sorted({s for r in results for s in r.sections}, key=section_key):
        ET.SubElement(props, "property", name="spec", value=_clean(section))
    for result in results:
        suite.append(_testcase(result, strict))
    return suite


def to_element(run: RunResult, *, per_document: bool = False, name: str = "msmq-harness") -> ET.Element:
    """The ``<testsuites>`` element of ``run``."""
    timestamp = datetime.now(UTC).isoformat(timespec="seconds")
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
            root.append(_testsuite(f"{name} {document}", run.target, groups[document], timestamp, run.strict))
    else:
        root.append(_testsuite(name, run.target, run.results, timestamp, run.strict))
    return root


def render_junit(run: RunResult, *, per_document: bool = False) -> str:
    """The JUnit XML document of ``run`` as text."""
    root = to_element(run, per_document=per_document)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(run: RunResult, path: str | os.PathLike[str], *, per_document: bool = False) -> Path:
    """Write the JUnit XML of ``run`` to ``path``; returns the path."""
    out = Path(path)
    out.write_text(render_junit(run, per_document=per_document), encoding="utf-8")
    return out
