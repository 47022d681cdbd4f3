"""The JSON report of a conformance run: one record per case, for tools and dashboards.

Renders a :class:`~harness.report.results.RunResult` in the shape of ``RunResult.to_dict()``
(``target``, ``strict``, ``duration``, ``counts``, ``by_requirement`` (requirement id ->
outcome counts, a difference counted once under the requirement it broke), ``results``: one
record per case variant with ``case_id``, ``title``, ``sections``, ``level``, ``outcome``,
``duration``, ``failures`` (each ``step``, ``event``, ``field``, ``expected``, ``observed``,
``section``, ``message``, ``evidence``, ``requirement``, ``level``, ``quote`` (the
requirement's sentence), ``inputs`` (the step's arguments), ``line`` (the step's line)),
``detail``, ``source``, ``line``, ``tags``, ``requirements``, ``stopped`` (the step an error
stopped the case at, or null), ``explanations`` (why the case did not pass, as every report
shows it: harness.report.explain) and, for a wire case run with ``--record DIR``, ``transcript``
(its transcript page, harness.report.transcript)), ``unmatched_known_failures`` when
``--known-failures`` named cases the run does not have (each ``entry`` and the ``closest`` case
id, or null), ``run`` (what identifies the run: argv, OS, selection, the target's own name and
version from hello, harness version, start; harness.report.identity), ``baseline`` with
``--baseline`` (its ``regressions``, ``improvements`` and ``stale`` entries: harness.cases.baseline),
``stopped`` and ``not_run`` when ``--maxfail`` or ``--budget`` stopped the run early, plus the run's
metadata: ``format`` (:data:`FORMAT`),
``generated`` (UTC, ISO 8601), ``harness_version``, ``python``, ``host``, ``ok`` and
``by_section`` (spec section -> outcome counts, a case counted once per section, sorted by
document and section number), and whatever ``metadata`` the caller adds.  Values JSON cannot hold (bytes, sets,
enumerations) are written as hex, sorted lists and their string.  :func:`read_json` reads a
report back into a RunResult.  harness/report/results.schema.json (:data:`SCHEMA`) is the JSON
Schema of the format; a change of the format's shape changes :data:`FORMAT`'s number.
"""

from __future__ import annotations

import json
import os
import platform
import socket
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness import __version__
from harness.outdir import write_file_atomically
from harness.report.explain import explain
from harness.report.formats import ReportFormat
from harness.results import CaseResult, Outcome, RunResult, StepFailure, section_key

__all__ = [
    "FORMAT",
    "READABLE",
    "SCHEMA",
    "case_result",
    "load_schema",
    "read_json",
    "render_json",
    "to_json_dict",
    "write_json",
]

FORMAT = "msmq-harness-results/2"
# the formats read_json reads: /2 added each failure's quote, inputs and line, each result's
# stopped and explanations; /1 reports read as they are
READABLE = ("msmq-harness-results/1", FORMAT)
SCHEMA = Path(__file__).with_name("results.schema.json")


def _default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    if isinstance(value, tuple):
        return list(value)
    return str(value)


def to_json_dict(run: RunResult, *, metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The report as a dict (see the module docstring)."""
    out: dict[str, Any] = {
        "format": FORMAT,
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "harness_version": __version__,
        "python": platform.python_version(),
        "host": socket.gethostname(),
    }
    out.update(run.to_dict())
    for record, result in zip(out["results"], run.results, strict=True):
        record["explanations"] = [e.to_dict() for e in explain(result)]
    out["ok"] = run.ok
    out["by_section"] = {
        section: dict(counts) for section, counts in sorted(run.by_section().items(), key=lambda i: section_key(i[0]))
    }
    if metadata:
        out.update(metadata)
    return out


def render_json(run: RunResult, *, metadata: Mapping[str, Any] | None = None) -> str:
    """The report as JSON text."""
    return json.dumps(to_json_dict(run, metadata=metadata), indent=2, ensure_ascii=False, default=_default) + "\n"


def write_json(run: RunResult, path: str | os.PathLike[str], *, metadata: Mapping[str, Any] | None = None) -> Path:
    """Write the JSON report of ``run`` to ``path``, whole or not at all (a previous report stays
    until the new one is complete: harness.outdir.write_file_atomically); returns the path."""
    out = Path(path)
    write_file_atomically(out, render_json(run, metadata=metadata))
    return out


def load_schema() -> dict[str, Any]:
    """The JSON Schema of the report (:data:`SCHEMA`, draft 2020-12), whose ``format`` is :data:`FORMAT`."""
    schema: dict[str, Any] = json.loads(SCHEMA.read_text(encoding="utf-8"))
    return schema


def case_result(record: Mapping[str, Any]) -> CaseResult:
    """A result record of a report (or ``CaseResult.to_dict()``) back as a CaseResult."""
    fields = dict(record)
    fields["outcome"] = Outcome(fields["outcome"])
    fields["failures"] = [StepFailure(**f) for f in fields.get("failures", [])]
    fields.pop("explanations", None)  # derived from the rest (harness.report.explain)
    if fields.get("stopped") is not None:
        fields["stopped"] = StepFailure(**fields["stopped"])
    return CaseResult(**fields)


def read_json(path: str | os.PathLike[str]) -> RunResult:
    """A report written by :func:`write_json`, back as a RunResult (values as JSON holds them)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("format", READABLE[0]) not in READABLE:
        raise ValueError(f"{path}: format {data.get('format')!r} is none of {', '.join(READABLE)}")
    results = [case_result(record) for record in data["results"]]
    unmatched = [(u["entry"], u["closest"] or "") for u in data.get("unmatched_known_failures", [])]
    return RunResult(
        target=data["target"],
        results=results,
        duration=data.get("duration", 0.0),
        strict=data.get("strict", False),
        unmatched_known_failures=unmatched,
        info=dict(data.get("run") or {}),
        baseline=data.get("baseline"),
        stopped=data.get("stopped", ""),
        not_run=list(data.get("not_run", [])),
    )


REPORT_FORMAT = ReportFormat(
    "json",
    render_json,
    write_json,
    help="write the results as JSON (harness/report/results.schema.json; - for stdout)",
    plugin_help="write the cases' results as JSON (run --json)",
    metadata=True,
    order=20,
)
