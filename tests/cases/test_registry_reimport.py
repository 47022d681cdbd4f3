"""The registries of case actions (harness.cases.actions) and target kinds
(harness.cases.targets.kind) survive their declaring modules being imported anew, as pytester's
in-process runs cause: pytester drops from ``sys.modules`` the modules a run imported, the next
import runs them again, and each declaration is made a second time while the registry, imported
before, still holds the first (it was "case action 'wait_for' declared twice").  A second
declaration by another function is still an error.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest

from harness.cases.actions import _DECLARED, ACTIONS, Action, action
from harness.cases.targets.kind import KINDS, target_kind
from harness.cases.targets.registry import target_help
from harness.cases.wirecheck import load_actions


def _drop(monkeypatch: pytest.MonkeyPatch, prefix: str) -> None:
    """Drop ``prefix`` and its submodules from ``sys.modules`` as pytester does (the test's end
    puts the modules of before back, and the parent package's attribute)."""
    for name in [m for m in sys.modules if m == prefix or m.startswith(prefix + ".")]:
        monkeypatch.delitem(sys.modules, name)
    parent, _, child = prefix.rpartition(".")
    monkeypatch.setattr(sys.modules[parent], child, getattr(sys.modules[parent], child))


def _keep(monkeypatch: pytest.MonkeyPatch, registry: dict[str, Any]) -> None:
    """Put ``registry``'s entries back at the test's end, as ``_drop`` puts the modules back: the
    later tests meet the classes they imported, not the ones the modules imported anew made."""
    for key, value in list(registry.items()):
        monkeypatch.setitem(registry, key, dict(value) if isinstance(value, dict) else value)


def _view(actions: dict[str, Action]) -> dict[str, Any]:
    return {
        name: (a.sides, dict(a.required), list(a.optional.items()), a.doc, a.nothing, dict(a.result))
        for name, a in actions.items()
    }


def test_wire_runs_imported_anew_declare_the_same_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    before = _view(load_actions())
    assert "wait_for" in before and before["wait_for"][0] == frozenset({"initiator", "acceptor"})
    _keep(monkeypatch, ACTIONS)
    _keep(monkeypatch, _DECLARED)
    _drop(monkeypatch, "harness.cases.wireruns")
    importlib.import_module("harness.cases.wireruns")  # raised ValueError: 'wait_for' declared twice
    assert _view(ACTIONS) == before


def test_another_method_declaring_an_action_of_the_same_side_is_refused() -> None:
    before = _view(load_actions())

    def wait_for() -> None:
        """Another wait."""

    with pytest.raises(ValueError, match="case action 'wait_for' declared twice"):
        action("wait_for", sides=("acceptor",), nothing=ACTIONS["wait_for"].nothing)(wait_for)
    assert _view(ACTIONS) == before


def test_target_modules_imported_anew_register_the_same_kinds(monkeypatch: pytest.MonkeyPatch) -> None:
    schemes, help_text = list(KINDS), target_help()
    assert {"reference", "cmd:", "plugin:", "mqqb://"} <= set(schemes)
    _keep(monkeypatch, KINDS)
    for module in ("harness.cases.targets.command", "harness.cases.targets.live"):
        _drop(monkeypatch, module)
        importlib.import_module(module)  # raised ValueError: target kind ... registered twice
    assert list(KINDS) == schemes and target_help() == help_text
    assert KINDS["cmd:"].make is sys.modules["harness.cases.targets.command"]._make  # the module run anew


def test_another_factory_for_a_registered_scheme_is_refused() -> None:
    def make(spec: str, timeout: float) -> object:
        return object()

    known = KINDS["reference"]
    with pytest.raises(ValueError, match="target kind 'reference' registered twice"):
        target_kind("reference", "reference", "another reference")(make)
    assert KINDS["reference"] is known
