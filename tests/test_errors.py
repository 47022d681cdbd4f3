"""One root for the harness's own errors (harness.errors.HarnessError), and a target's errors as
typed subclasses, not kind strings: the runner tells an unsupported event from an error by the
error's class; an adapter's ``{"ok": false, "kind": ...}`` reply becomes the class of that kind."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any

import pytest

import harness
from harness.cases.baseline import BaselineError
from harness.cases.execute import ConfigurationError, run_case
from harness.cases.lines import CaseError
from harness.cases.loader import load_text
from harness.cases.target import (
    TARGET_ERRORS,
    TargetError,
    TargetUndefinedBehaviour,
    TargetUnsupported,
    target_error,
)
from harness.cases.targets.reference import ReferenceTarget
from harness.cases.wireruns.base import WireCaseError
from harness.errors import HarnessError
from harness.model.errors import ModelError, UndefinedBehaviour
from harness.outdir import OutputError
from harness.peers.link import LinkError
from harness.peers.server import PeerError
from harness.results import Outcome
from harness.session import SessionError
from tests.peek_case import peek_case


@pytest.mark.parametrize(
    "error",
    [
        BaselineError,
        CaseError,
        ConfigurationError,
        LinkError,
        ModelError,
        OutputError,
        PeerError,
        SessionError,
        TargetError,
        UndefinedBehaviour,
        WireCaseError,
    ],
)
def test_every_error_of_the_harness_derives_from_one_root(error: type[Exception]) -> None:
    assert issubclass(error, HarnessError)


#: exceptions of the harness that are not errors it reports: each says why
NOT_ERRORS = {
    # a BaseException on purpose, so that a target's own ``except Exception`` does not swallow it
    "harness.cases.execute.StepTimeout",
}


def _exceptions_defined_in_harness() -> list[type[BaseException]]:
    """Every public exception class a module of ``harness`` defines (warnings are not errors)."""
    found = []
    for info in pkgutil.walk_packages(harness.__path__, "harness."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and not issubclass(value, Warning)
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found.append(value)
    return found


def test_every_exception_class_in_the_harness_derives_from_the_root() -> None:
    found = _exceptions_defined_in_harness()
    names = {f"{e.__module__}.{e.__qualname__}" for e in found}
    assert "harness.pipeline.errors.PipelineError" in names  # the walk reaches the top layer
    assert names >= NOT_ERRORS  # no stale exemption
    strays = sorted(
        f"{e.__module__}.{e.__qualname__}"
        for e in found
        if not issubclass(e, HarnessError) and f"{e.__module__}.{e.__qualname__}" not in NOT_ERRORS
    )
    assert strays == []


def test_an_adapter_error_kind_is_a_class() -> None:
    assert type(target_error("Unsupported", "m")) is TargetUnsupported
    assert type(target_error("UndefinedBehaviour", "m")) is TargetUndefinedBehaviour
    assert type(target_error("Error", "m")) is TargetError
    assert type(target_error("Whatever", "m")) is TargetError  # an unknown kind is an Error
    assert {k: c.kind for k, c in TARGET_ERRORS.items()} == {k: k for k in TARGET_ERRORS}
    assert target_error("Unsupported", "no such event").message == "no such event"


CASE = peek_case("e.kinds")


class _Raising(ReferenceTarget):
    """The reference, raising one error on its first event."""

    def __init__(self, error: TargetError) -> None:
        super().__init__()
        self.error = error

    def event(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        raise self.error


@pytest.mark.parametrize(
    ("error", "outcome"),
    [(TargetUnsupported("not here"), Outcome.unsupported), (TargetError("broken"), Outcome.error)],
)
def test_the_runner_grades_a_target_error_by_its_class(error: TargetError, outcome: Outcome) -> None:
    (case,) = load_text(CASE, "kinds.yaml")
    assert run_case(case, ReferenceTarget()).outcome is Outcome.passed
    result = run_case(case, _Raising(error))
    assert result.outcome is outcome
    assert error.message in result.detail
