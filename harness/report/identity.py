"""What identifies a conformance run in every report: the same facts in JSON, JUnit, HTML and terminal.

A run's ``info`` (:attr:`harness.results.RunResult.info`) holds the command line (``argv``), the
operating system and Python, the harness version, when the run started (UTC, ISO 8601), the
selection (case paths, ``-k``, ``--spec``, ``--profile``), ``--strict``, the files that judged it
(``--known-failures``, ``--baseline``), the ``--record`` folder, and the target: the ``--target``
given and the implementation's own name and version from its hello (docs/adapters.md, "hello").
:func:`run_info` gathers them when the run starts; :func:`identity_rows` lists them, labelled, in
one order, for the reports that show them.
"""

from __future__ import annotations

import platform
import shlex
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from harness import __version__
from harness.results import RunResult

__all__ = ["identity_rows", "now", "run_info"]


def now() -> str:
    """The time now, UTC, ISO 8601 to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def run_info(
    *,
    argv: Sequence[str] | None = None,
    paths: Sequence[str] = (),
    keyword: str | None = None,
    sections: Sequence[str] = (),
    profile: str | None = None,
    strict: bool = False,
    known_failures: str | None = None,
    baseline: str | None = None,
    record: str | None = None,
    started: str = "",
) -> dict[str, Any]:
    """The ``info`` of a run starting now (see the module docstring)."""
    selection: dict[str, Any] = {"paths": list(paths)}
    if keyword:
        selection["k"] = keyword
    if sections:
        selection["spec"] = list(sections)
    if profile:
        selection["profile"] = profile
    info: dict[str, Any] = {
        "argv": list(sys.argv if argv is None else argv),
        "os": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "python": platform.python_version(),
        "harness_version": __version__,
        "started": started or now(),
        "selection": selection,
        "strict": strict,
    }
    for key, value in (("known_failures", known_failures), ("baseline", baseline), ("record", record)):
        if value:
            info[key] = value
    return info


def _selection(selection: Any) -> str:
    if not isinstance(selection, dict):
        return str(selection)
    parts = [" ".join(selection.get("paths") or []) or "cases/ (default)"]
    if selection.get("k"):
        parts.append(f"-k {shlex.quote(str(selection['k']))}")
    for section in selection.get("spec") or []:
        parts.append(f"--spec {shlex.quote(str(section))}")
    if selection.get("profile"):
        parts.append(f"--profile {selection['profile']}")
    return " ".join(parts)


def identity_rows(run: RunResult) -> list[tuple[str, str]]:
    """(label, text) of each fact identifying ``run``, in the reports' order; only those known."""
    info = run.info
    target = run.target
    name, version = str(info.get("target_name") or ""), str(info.get("target_version") or "")
    said = " ".join(x for x in (name, version) if x)
    rows = [("target", f"{target} ({said})" if said and said != target else target)]
    if "selection" in info:
        rows.append(("selection", _selection(info["selection"])))
    if info.get("argv"):
        rows.append(("command", shlex.join(str(a) for a in info["argv"])))
    for key, label in (
        ("harness_version", "harness"),
        ("os", "os"),
        ("python", "python"),
        ("started", "started"),
        ("known_failures", "known failures"),
        ("baseline", "baseline"),
        ("record", "transcripts"),
    ):
        if info.get(key):
            rows.append((label, str(info[key])))
    if info:
        rows.append(("strict", "yes" if run.strict else "no"))
    return rows
