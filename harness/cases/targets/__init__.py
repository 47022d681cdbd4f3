"""Targets a conformance run can validate (docs/cases.md, "Targets"; docs/adapters.md).

Every module of this package that declares a target kind (harness.cases.targets.kind:
``reference``, ``plugin:``, ``cmd:``, ``mqqb://``) is imported here (harness.cases.targets.registry
``load_kinds``), so that :func:`make_target` and :func:`target_help` know every kind.
"""

from __future__ import annotations

from harness.cases.targets.command import CommandTarget
from harness.cases.targets.kind import KINDS
from harness.cases.targets.plugin import PluginTarget
from harness.cases.targets.reference import ReferenceTarget
from harness.cases.targets.registry import load_kinds, make_target, target_help

__all__ = ["KINDS", "CommandTarget", "PluginTarget", "ReferenceTarget", "make_target", "target_help"]

load_kinds()
