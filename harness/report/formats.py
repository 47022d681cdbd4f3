"""The report formats of a run, one table: :func:`formats` maps a format's name to its writer.

Each format's module in ``harness/report`` declares ``REPORT_FORMAT = ReportFormat(...)``; this
module finds them, and the edges derive their options from the table: ``msmq-harness run
--NAME FILE`` for every format, the pytest plugin's ``--msmq-NAME FILE`` for those that offer
it.  A new format is its module (and its test): nothing else names it.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ReportFormat", "formats"]


@dataclass(frozen=True)
class ReportFormat:
    """One report format: its name (the option ``--NAME``), how it is rendered and written."""

    name: str
    #: ``render(run, **notes) -> str``: the report as text (``-``: standard output)
    render: Callable[..., str]
    #: ``write(run, path, **notes) -> Path``: the report written to ``path``
    write: Callable[..., Path]
    #: the help of ``msmq-harness run --NAME``
    help: str
    #: the help of the pytest plugin's ``--msmq-NAME``; "" when the plugin does not offer it
    plugin_help: str = ""
    #: ``render`` and ``write`` take ``metadata=`` (what an interrupted run says of itself)
    metadata: bool = False
    #: where the format is listed among the others (then by name)
    order: int = 50

    def writing(self, metadata: dict[str, Any] | None) -> ReportFormat:
        """This format with ``metadata`` handed to its writers (when they take it)."""
        if not metadata or not self.metadata:
            return self
        render, write = self.render, self.write
        return ReportFormat(
            self.name,
            lambda run: render(run, metadata=metadata),
            lambda run, path: write(run, path, metadata=metadata),
            self.help,
            self.plugin_help,
            self.metadata,
            self.order,
        )


@functools.cache
def formats() -> dict[str, ReportFormat]:
    """Every format a module of ``harness/report`` declares, by name, in listing order."""
    package = __name__.rpartition(".")[0]
    found: list[ReportFormat] = []
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__, package + "."):
        declared = getattr(importlib.import_module(info.name), "REPORT_FORMAT", None)
        if isinstance(declared, ReportFormat):
            found.append(declared)
    names = [f.name for f in found]
    if len(set(names)) != len(names):
        raise ValueError(f"two report formats of one name: {sorted(names)}")
    return {f.name: f for f in sorted(found, key=lambda f: (f.order, f.name))}

