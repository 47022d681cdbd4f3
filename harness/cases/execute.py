"""Running one conformance case on a target (docs/cases.md, "Outcomes"): :func:`run_case` builds
the case's ``given`` on the target, raises each step's spec event ([MS-MQDMPR] 3.1.4, 3.1.6,
3.1.7, 3.2.7), checks its ``expect``/``expect_error`` and then the ``then`` state
(harness.cases.compare), grades each difference by the level of the requirement it breaks
(harness.cases.grading), and never raises: a target that errs, crashes or hangs past the step
timeout (:func:`_with_timeout`, :class:`StepTimeout`) makes that case an ``error``, an event the
target declared it does not implement makes it ``unsupported``, a case the target lacks a
capability for is ``not_applicable`` (:func:`applicability`).  An [MS-MQQB] wire case runs through
harness.cases.targets.wire.  :func:`open_target` makes and greets a target
(:class:`ConfigurationError` when it cannot be).  The runs of many cases are harness.cases.runner.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable
from types import FrameType
from typing import Any, TypeVar

from harness.cases.caseresult import case_result_since, graded_result
from harness.cases.compare import Grader, compare_result, compare_then, field_matcher
from harness.cases.grading import derived_requirement, graded, reconcile, section_of
from harness.cases.model import Case, Step
from harness.cases.target import CAPABILITIES, MODEL, Target, TargetError, TargetInfo, TargetUnsupported
from harness.cases.targets import make_target
from harness.cases.targets.wire import run_wire_case
from harness.errors import HarnessError
from harness.results import CaseResult, Outcome, StepFailure

__all__ = [
    "ConfigurationError",
    "StepTimeout",
    "applicability",
    "open_target",
    "run_case",
    "step_section",
    "unsupported_by",
]

T = TypeVar("T")


# ================================================================================= timeouts
class StepTimeout(BaseException):
    """A step (or setup, or the final observe) ran past the step timeout.

    A BaseException, so that a target's own ``except Exception`` does not swallow it.
    """


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise StepTimeout()


def _with_timeout(target: Target, timeout: float, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, interrupted after ``timeout`` seconds.

    A target that enforces its own timeout (``handles_timeout``, the cmd target's per-request
    timeout) is called directly; in the main thread SIGALRM interrupts the call; elsewhere a
    watchdog thread runs it and the step is reported when it does not finish in time.
    """
    if timeout <= 0 or getattr(target, "handles_timeout", False):
        return fn(*args)
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        old = signal.signal(signal.SIGALRM, _alarm)
        before, _ = signal.setitimer(signal.ITIMER_REAL, timeout)
        started = time.monotonic()
        try:
            return fn(*args)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
            if before > 0:  # someone else's timer was running: let it go on
                signal.setitimer(signal.ITIMER_REAL, max(before - (time.monotonic() - started), 1e-3))
    box: dict[str, Any] = {}

    def call() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as e:
            box["error"] = e

    worker = threading.Thread(target=call, daemon=True, name="msmq-harness-step")
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise StepTimeout()
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


# ================================================================================= run_case
def step_section(case: Case, step: Step | None) -> str:
    """The spec section a step's (None: the ``then``'s) failure is reported under: the section of
    the requirement it renders (harness.cases.grading.derived_requirement)."""
    return section_of(case, derived_requirement(case, step))


def _crash(exc: BaseException) -> str:
    if isinstance(exc, TargetError):
        return f"{exc.kind}: {exc.message}"
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {tb[-1].filename}:{tb[-1].lineno}" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


def unsupported_by(case: Case, info: TargetInfo | None) -> list[str]:
    """The events of a model ``case`` that the target's hello does not list (a hello without
    ``events`` raises every event: harness.cases.target.hello_events)."""
    if info is None or case.wire:  # wire actions: harness.cases.targets.wire
        return []
    return info.lacks(s.event for s in case.when)


def applicability(case: Case, info: TargetInfo | None) -> tuple[Outcome, str] | None:
    """``(unsupported | not_applicable, reason)`` when the case cannot run on the target."""
    if info is None:
        return None
    needed = list(case.requires) if case.wire else [MODEL, *case.requires]
    missing = [c for c in needed if c not in info.capabilities]
    if missing:
        said = ", ".join(f"{c} ({CAPABILITIES[c]})" if c in CAPABILITIES else c for c in missing)
        return Outcome.not_applicable, f"the target lacks {said}"
    absent = unsupported_by(case, info)
    if absent:
        return Outcome.unsupported, f"the target does not implement: {', '.join(absent)}"
    return None


def _grader(case: Case, step: Step | None) -> Grader:
    def grader(failure: StepFailure, expected: Any, matcher: Callable[[Any], bool]) -> StepFailure:
        return graded(case, step, failure, expected, matcher)

    return grader


def run_case(
    case: Case,
    target: Target,
    *,
    step_timeout: float = 10.0,
    info: TargetInfo | None = None,
    record_dir: str | os.PathLike[str] | None = None,
) -> CaseResult:
    """Run one case on ``target``; never raises (a target failure is an ``error`` result).
    ``record_dir``: a wire case's transcript goes there (``--record``, harness.report.transcript).

    The case stops at the first step with a difference; its outcome is the worst grade among
    that step's differences (harness.cases.grading).
    """
    start = time.perf_counter()
    excluded = applicability(case, info)
    if excluded is not None:
        return case_result_since(case, excluded[0], start, [], excluded[1])
    if case.wire:  # [MS-MQQB] wire cases run over TCP: harness.cases.targets.wire
        return run_wire_case(case, target, info, step_timeout=step_timeout, record_dir=record_dir)
    run = _ModelRun(case, target, step_timeout, start)
    try:
        ended = run.steps() or run.then()
    except StepTimeout:
        return case_result_since(case, Outcome.error, start, [], f"{run.where}: timed out after {step_timeout:g} s")
    except TargetError as e:  # setup or observe: an honest Unsupported makes the case unsupported
        outcome = Outcome.unsupported if isinstance(e, TargetUnsupported) else Outcome.error
        return case_result_since(case, outcome, start, [], f"{run.where}: {e.kind}: {e.message}")
    except Exception as e:
        return case_result_since(case, Outcome.error, start, [], f"{run.where}: {_crash(e)}")
    return ended or case_result_since(case, Outcome.passed, start, [], "")


class _ModelRun:
    """One model case on a target: ``given``, each step's event and its checks, then ``then``.
    ``where`` names the part under way, for the message of an error.  Each part returns the
    case's result when it ends the case, None when the case goes on."""

    def __init__(self, case: Case, target: Target, step_timeout: float, start: float) -> None:
        self.case, self.target, self.step_timeout, self.start = case, target, step_timeout, start
        self.where = "setup"

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        return _with_timeout(self.target, self.step_timeout, fn, *args)

    def steps(self) -> CaseResult | None:
        self._call(self.target.setup, self.case.given)
        for index, step in enumerate(self.case.when):
            line = f", line {step.line}" if step.line else ""
            self.where = f"step {index} ({step.event}{line})"
            ended = self._step(index, step)
            if ended is not None:
                return ended
        return None

    def _step(self, index: int, step: Step) -> CaseResult | None:
        case, where = self.case, self.where
        section = step_section(case, step)
        try:
            result = self._call(self.target.event, step.event, step.args)
        except TargetError as e:
            if step.expect_error == e.kind:
                return None
            ended = self._error(index, step, e, section)
            if ended is not None:
                return ended
            # `expect` grades the error as a value (docs/cases.md): the event gave {error: kind}
            # and nothing else; an event that returns normally gives no `error`.
            result = {"error": e.kind}
        if not isinstance(result, dict):
            raise TargetError(f"event returned {type(result).__name__}, not a mapping")
        if step.expect_error:
            failure = StepFailure(
                step=index,
                event=step.event,
                field="error",
                expected=step.expect_error,
                observed=result,
                section=section,
                message=f"{where}: expected {step.expect_error}, the event returned {result}",
            )
            return graded_result(case, self.start, [graded(case, step, failure)])
        if step.expect:
            failures = compare_result(index, step.event, step.expect, result, section, _grader(case, step))
            if failures:
                reconcile(case, failures, [(e, field_matcher(result, n)) for n, e in step.expect.items()])
                return graded_result(case, self.start, failures)
        return None

    def _error(self, index: int, step: Step, e: TargetError, section: str) -> CaseResult | None:
        """An error the step did not expect: the case's result, or None when ``expect`` grades the
        error as a value; a TargetError of no kind the cases know is raised on."""
        case, where = self.case, self.where
        if isinstance(e, TargetUnsupported):
            return case_result_since(case, Outcome.unsupported, self.start, [], f"{where}: {e.message}")
        if type(e) is TargetError:
            raise e
        if step.expect_error or "error" not in (step.expect or {}):
            expected = step.expect_error or "no error"
            failure = StepFailure(
                step=index,
                event=step.event,
                field="error",
                expected=expected,
                observed=e.kind,
                section=section,
                message=f"{where}: expected {expected}, the target reported {e.kind}: {e.message}",
            )
            return graded_result(case, self.start, [graded(case, step, failure)])
        return None

    def then(self) -> CaseResult | None:
        then = self.case.then or {}
        queues = list(then.get("queues") or {})
        cursors = list(then.get("cursors") or {})
        if not (queues or cursors):
            return None
        self.where = "then"
        observed = self._call(self.target.observe, queues, cursors)
        failures = compare_then(then, observed, step_section(self.case, None), _grader(self.case, None))
        return graded_result(self.case, self.start, failures) if failures else None


class ConfigurationError(HarnessError):
    """The run cannot start: the target cannot be made or does not answer hello."""


def open_target(target_spec: str, step_timeout: float) -> tuple[Target, TargetInfo]:
    """The target of ``target_spec`` after its hello; ConfigurationError when either fails."""
    try:
        target = make_target(target_spec, timeout=step_timeout)
    except Exception as e:
        raise ConfigurationError(f"cannot make target {target_spec!r}: {_crash(e)}") from None
    try:
        info = _with_timeout(target, step_timeout, target.hello)
    except BaseException as e:
        with contextlib.suppress(Exception):
            target.close()
        what = f"no answer within {step_timeout:g} s" if isinstance(e, StepTimeout) else _crash(e)
        raise ConfigurationError(f"target {target_spec!r} did not answer hello: {what}") from None
    return target, info
