"""Running conformance cases against a target: selection, steps, checks, timeouts, workers.

Renders the runner of docs/cases.md: :func:`select` picks cases by a pytest-like ``-k``
expression over id, title and tags and by spec section prefix; :func:`run_case` builds the
case's ``given`` on a target, raises each step's spec event, checks its ``expect``/
``expect_error`` and then the ``then`` state (harness.cases.compare), grades each difference by
the level of the requirement it breaks (harness.cases.grading), and never raises: a target that
errs, crashes or hangs past the step timeout makes that case an ``error``, an event the target
declared it does not implement makes it ``unsupported``; :func:`run` opens the target once
(:func:`open_target`: a target that cannot be made or does not answer hello is a
:class:`ConfigurationError`, before any case runs), runs the cases in this process or in worker
processes (each with its own target), in case order, and turns the cases listed in a
known-failures file into ``xfail`` and ``xpass``.  ``run -n N`` from paths goes through
:class:`harness.cases.workers.WorkerCorpus`, whose workers load the case files as well as run
them.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import gc
import itertools
import math
import multiprocessing
import os
import re
import signal
import threading
import time
import traceback
from collections.abc import Callable, Collection, Generator, Sequence
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

from harness.cases.baseline import Baseline
from harness.cases.caseresult import case_result_since, graded_result
from harness.cases.compare import Grader, compare_result, compare_then, field_matcher
from harness.cases.grading import derived_requirement, graded, reconcile, section_of
from harness.cases.model import Case, Step
from harness.cases.target import Target, TargetError, TargetInfo, TargetUnsupported
from harness.cases.targets import make_target
from harness.errors import HarnessError
from harness.results import CaseResult, Outcome, RunResult, StepFailure

if TYPE_CHECKING:
    from harness.cases.workers import WorkerCorpus

__all__ = [
    "ConfigurationError",
    "StepTimeout",
    "applicability",
    "apply_known_failures",
    "keyword_matcher",
    "load_known_failures",
    "open_target",
    "run",
    "run_case",
    "select",
    "step_section",
    "unmatched_known_failures",
]

T = TypeVar("T")


# =================================================================================== select
class _KeywordExpr:
    """A pytest ``-k`` expression: words (case-insensitive substrings), and, or, not, parens."""

    _TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = [m.group(1) for m in self._TOKEN.finditer(text)]
        self.pos = 0
        if not self.tokens:
            self.tree: Any = ("true",)
            return
        self.tree = self._or()
        if self.pos != len(self.tokens):
            raise ValueError(f"-k {text!r}: unexpected {self.tokens[self.pos]!r}")

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _or(self) -> Any:
        node = self._and()
        while self._peek() == "or":
            self.pos += 1
            node = ("or", node, self._and())
        return node

    def _and(self) -> Any:
        node = self._not()
        while self._peek() == "and":
            self.pos += 1
            node = ("and", node, self._not())
        return node

    def _not(self) -> Any:
        tok = self._peek()
        if tok == "not":
            self.pos += 1
            return ("not", self._not())
        if tok == "(":
            self.pos += 1
            node = self._or()
            if self._peek() != ")":
                raise ValueError(f"-k {self.text!r}: missing ')'")
            self.pos += 1
            return node
        if tok is None or tok in (")", "and", "or"):
            raise ValueError(f"-k {self.text!r}: expected a word, got {tok or 'the end'}")
        self.pos += 1
        return ("word", tok.lower())

    def matches(self, haystack: Sequence[str]) -> bool:
        names = [h.lower() for h in haystack]

        def ev(node: Any) -> bool:
            op = node[0]
            if op == "true":
                return True
            if op == "word":
                return any(node[1] in h for h in names)
            if op == "not":
                return not ev(node[1])
            if op == "and":
                return ev(node[1]) and ev(node[2])
            return ev(node[1]) or ev(node[2])

        return ev(self.tree)


def _section_matches(prefix: str, section: str) -> bool:
    """"MS-MQDMPR 3.1.7" selects 3.1.7 and 3.1.7.x; a bare "3.1.7" matches any document."""
    prefix = prefix.strip()
    if " " not in prefix:
        section = section.split(" ", 1)[-1]
    return section == prefix or section.startswith(prefix + ".")


def keyword_matcher(keyword: str) -> Callable[[Sequence[str]], bool]:
    """The ``-k`` expression ``keyword`` as a test of a case's texts (its full id, title and tags:
    a word matches when it is part of one of them, case-insensitively), as ``run -k`` and the
    pytest plugin select; a bad expression raises ValueError."""
    return _KeywordExpr(keyword).matches


def select(cases: list[Case], *, keyword: str | None = None, sections: Sequence[str] = ()) -> list[Case]:
    """The cases a run executes, in their order; a bad ``keyword`` raises ValueError."""
    expr = _KeywordExpr(keyword) if keyword else None
    out = []
    for case in cases:
        if sections and not any(_section_matches(p, s) for p in sections for s in case.sections):
            continue
        if expr is None or expr.matches([case.full_id, case.title, *case.tags]):
            out.append(case)
    return out


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
    from harness.cases.target import CAPABILITIES, MODEL

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
        from harness.cases.targets.wire import run_wire_case

        return run_wire_case(case, target, info, step_timeout=step_timeout, record_dir=record_dir)
    where = "setup"
    try:
        _with_timeout(target, step_timeout, target.setup, case.given)
        for index, step in enumerate(case.when):
            where = f"step {index} ({step.event}, line {step.line})" if step.line else f"step {index} ({step.event})"
            section = step_section(case, step)
            try:
                result = _with_timeout(target, step_timeout, target.event, step.event, step.args)
            except TargetError as e:
                if isinstance(e, TargetUnsupported) and step.expect_error != e.kind:
                    return case_result_since(case, Outcome.unsupported, start, [], f"{where}: {e.message}")
                if type(e) is TargetError and step.expect_error != e.kind:
                    raise
                if step.expect_error == e.kind:
                    continue
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
                    return graded_result(case, start, [graded(case, step, failure)])
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
                return graded_result(case, start, [graded(case, step, failure)])
            if step.expect:
                failures = compare_result(index, step.event, step.expect, result, section, _grader(case, step))
                if failures:
                    reconcile(case, failures, [(e, field_matcher(result, n)) for n, e in step.expect.items()])
                    return graded_result(case, start, failures)
        then = case.then or {}
        queues = list(then.get("queues") or {})
        cursors = list(then.get("cursors") or {})
        if queues or cursors:
            where = "then"
            observed = _with_timeout(target, step_timeout, target.observe, queues, cursors)
            section = step_section(case, None)
            failures = compare_then(then, observed, section, _grader(case, None))
            if failures:
                return graded_result(case, start, failures)
    except StepTimeout:
        return case_result_since(case, Outcome.error, start, [], f"{where}: timed out after {step_timeout:g} s")
    except TargetError as e:  # setup or observe: an honest Unsupported makes the case unsupported
        outcome = Outcome.unsupported if isinstance(e, TargetUnsupported) else Outcome.error
        return case_result_since(case, outcome, start, [], f"{where}: {e.kind}: {e.message}")
    except Exception as e:
        return case_result_since(case, Outcome.error, start, [], f"{where}: {_crash(e)}")
    return case_result_since(case, Outcome.passed, start, [], "")


# ====================================================================================== run
def load_known_failures(path: str | Path) -> set[str]:
    """Case ids (full ids, or ids meaning every variant), one per line; ``#`` starts a comment."""
    ids = set()
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            ids.add(line)
    return ids


def unmatched_known_failures(known: Collection[str], cases: Collection[Case]) -> list[tuple[str, str]]:
    """The entries of ``known`` that name none of ``cases`` (by full id or id), sorted, each with
    the closest case id ("" when none is close): a mistyped or stale entry, which the reports warn of."""
    import difflib

    if not known:
        return []
    ids = {name for case in cases for name in (case.full_id, case.id)}
    out = []
    for entry in sorted(set(known) - ids):
        close = difflib.get_close_matches(entry, ids, n=1, cutoff=0.6)
        out.append((entry, close[0] if close else ""))
    return out


def apply_known_failures(
    result: CaseResult, case: Case, known: Collection[str] | Baseline, strict: bool = False
) -> CaseResult:
    """A listed case: failed or error -> xfail, passed -> xpass (which fails the run).  ``known``
    may be a :class:`~harness.cases.baseline.Baseline` (a YAML known-failures file or a
    baseline): an entry that records a signature takes only that failure, another one stays a
    failure, a changed failure (harness.cases.baseline)."""
    if isinstance(known, Baseline):
        return known.apply(result, case.id, strict)
    if case.full_id in known or case.id in known:
        if result.outcome in (Outcome.failed, Outcome.error):
            result.outcome = Outcome.xfail
        elif result.outcome is Outcome.passed:
            result.outcome = Outcome.xpass
            result.detail = "listed as a known failure, but passed"
    return result


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


def _iter_serial(
    cases: list[Case], target: Target, info: TargetInfo, step_timeout: float, record_dir: str | None = None
) -> Generator[CaseResult, None, None]:
    try:
        for case in cases:
            yield run_case(case, target, step_timeout=step_timeout, info=info, record_dir=record_dir)
    finally:
        with contextlib.suppress(Exception):
            target.close()


_WORKER: dict[str, Any] = {}


def _worker_init(target_spec: str, step_timeout: float, record_dir: str | None = None) -> None:
    try:
        target, info = open_target(target_spec, step_timeout)
    except ConfigurationError as e:  # it answered in the parent: report it per case
        _WORKER.update(target=None, problem=str(e))
        return
    _WORKER.update(target=target, info=info, problem="", step_timeout=step_timeout, record_dir=record_dir)
    _WORKER["close"] = multiprocessing.util.Finalize(None, target.close, exitpriority=10)  # once


def _worker_run(case: Case) -> CaseResult:
    target = _WORKER["target"]
    if target is None:
        return case_result_since(case, Outcome.error, time.perf_counter(), [], _WORKER["problem"])
    return run_case(
        case, target, step_timeout=_WORKER["step_timeout"], info=_WORKER["info"], record_dir=_WORKER["record_dir"]
    )


# The cases of the runs under way, by run: a forked worker finds its run's cases here (copied
# with the parent's memory), so that a chunk travels as (run, start, stop), not as pickled cases.
_SHARED: dict[int, list[Case]] = {}
_RUN_IDS = itertools.count()

Chunk = tuple[int, int, int] | list[Case]  # (run, start, stop) of _SHARED, or the cases themselves


def _worker_chunk(chunk: Chunk) -> list[CaseResult]:
    cases = _SHARED[chunk[0]][chunk[1] : chunk[2]] if isinstance(chunk, tuple) else chunk
    return [_worker_run(case) for case in cases]


CHUNK = 64  # model cases a chunk holds at most: tens of milliseconds of a worker's time, one message


def _chunks(cases: Sequence[Case], workers: int, files: Sequence[int] = ()) -> list[tuple[int, int]]:
    """Consecutive cases, as (start, stop): a wire case alone (it waits on the spec's timers and
    would hold up the cases queued behind it), model cases up to :data:`CHUNK` at a time, fewer
    when there are few cases, so that each worker gets at least 8 chunks.  ``files``: the file each
    case comes from (one per case), when a chunk must hold the cases of one file only."""
    size = max(1, min(CHUNK, len(cases) // (workers * 8)))
    out: list[tuple[int, int]] = []
    begin = 0
    for i, case in enumerate(cases):
        if files and begin < i and files[i] != files[begin]:
            out.append((begin, i))
            begin = i
        if case.wire:
            if begin < i:
                out.append((begin, i))
            out.append((i, i + 1))
            begin = i + 1
        elif i + 1 - begin == size:
            out.append((begin, i + 1))
            begin = i + 1
    if begin < len(cases):
        out.append((begin, len(cases)))
    return out


def _longest_first(
    cases: Sequence[Case], chunks: Sequence[tuple[int, int]], expected: Sequence[float | None] = ()
) -> list[int]:
    """The order chunks are handed out in: wire chunks first (each waits on the spec's timers, a
    model chunk takes milliseconds: the short chunks then fill the gaps at the end), then model
    chunks in case order.  ``expected``: the seconds each case took when it last ran (None: not
    known), one per case; wire chunks then go longest first, those not known before the others
    (they may be long), else in case order."""
    wire = [k for k, (begin, _) in enumerate(chunks) if cases[begin].wire]
    if expected:

        def longest(k: int) -> float:
            begin, stop = chunks[k]
            known = [expected[i] for i in range(begin, stop)]
            return math.inf if None in known else sum(s for s in known if s is not None)

        wire.sort(key=longest, reverse=True)  # stable: case order among equals
    return wire + [k for k, (begin, _) in enumerate(chunks) if not cases[begin].wire]


def _iter_parallel(
    cases: list[Case], target_spec: str, step_timeout: float, workers: int, record_dir: str | None = None
) -> Generator[CaseResult, None, None]:
    """The results of ``cases`` in their order, run by ``workers`` processes that take chunks
    (:func:`_chunks`) as they become free.  Forked workers read the cases from the parent's
    memory; spawned ones receive them pickled."""
    methods = multiprocessing.get_all_start_methods()
    method = "fork" if "fork" in methods else "spawn"
    ctx = multiprocessing.get_context(method)
    run_id = next(_RUN_IDS)
    _SHARED[run_id] = cases
    if method == "fork":
        gc.freeze()  # the cases and the rest of the parent's heap: not scanned (nor copied) by the workers' collections
    done = 0
    futures: list[concurrent.futures.Future[list[CaseResult]]] = []
    try:
        with concurrent.futures.ProcessPoolExecutor(
            max_workers=workers,
            mp_context=ctx,
            initializer=_worker_init,
            initargs=(target_spec, step_timeout, record_dir),
        ) as pool:
            try:
                chunks = _chunks(cases, workers)
                by_chunk: dict[int, concurrent.futures.Future[list[CaseResult]]] = {}
                for k in _longest_first(cases, chunks):
                    begin, stop = chunks[k]
                    chunk: Chunk = (run_id, begin, stop) if method == "fork" else cases[begin:stop]
                    by_chunk[k] = pool.submit(_worker_chunk, chunk)
                futures = [by_chunk[k] for k in range(len(chunks))]
                for future in futures:
                    for result in future.result():
                        done += 1
                        yield result
            except BrokenProcessPool as e:
                for case in cases[done:]:
                    yield case_result_since(case, Outcome.error, time.perf_counter(), [], f"worker process died: {e}")
            finally:
                for future in futures:
                    future.cancel()
    finally:
        _SHARED.pop(run_id, None)
        if method == "fork":
            gc.unfreeze()


def run(
    cases: list[Case],
    target_spec: str,
    *,
    workers: int = 1,
    step_timeout: float = 10.0,
    known_failures: Collection[str] | Baseline = (),
    strict: bool = False,
    progress: Callable[[CaseResult], None] | None = None,
    record_dir: str | os.PathLike[str] | None = None,
    corpus: WorkerCorpus | None = None,
    baseline: Baseline | None = None,
    maxfail: int = 0,
    budget: float = 0.0,
    run_info: dict[str, Any] | None = None,
) -> RunResult:
    """Run ``cases`` on the target ``target_spec`` (make_target); results in the cases' order.

    The target is opened and greeted first: ConfigurationError, before any case runs, when it
    cannot be.  ``workers > 1`` runs the cases in that many processes, each with its own target.
    ``strict`` makes non_strict outcomes fail the run.  ``record_dir``: each wire case's pcap
    and transcript page go there (harness.report.transcript).  ``corpus``: ``cases`` are shells
    of that :class:`WorkerCorpus`, whose workers loaded them and run them (``workers`` is then
    the corpus's).  ``baseline`` (harness.cases.baseline): a case fails the run only when it fails
    otherwise than its entry records; the run's ``baseline`` holds the regressions, improvements and
    stale entries.  ``maxfail`` (> 0): stop after that many cases failed the run; ``budget`` (> 0
    seconds): stop once the run has taken that long (checked between cases); the cases that did
    not run are the run's ``not_run``, and ``stopped`` says why.  ``run_info``: what identifies the run
    (harness.report.identity), completed with the target's own name and version from hello.
    """
    start = time.perf_counter()
    known = known_failures if isinstance(known_failures, Baseline) else Baseline.of_ids(known_failures)
    judge = baseline if baseline is not None else known
    record = None if record_dir is None else os.fspath(record_dir)
    target, info = open_target(target_spec, step_timeout)
    results: Generator[CaseResult, None, None]
    if corpus is not None and corpus.pool is not None:
        with contextlib.suppress(Exception):
            target.close()
        results = corpus.iter_run(cases, target_spec, step_timeout, record)
    elif workers > 1 and len(cases) > 1:
        with contextlib.suppress(Exception):
            target.close()
        loaded = corpus.resolve(cases) if corpus is not None else cases  # its workers are gone
        results = _iter_parallel(loaded, target_spec, step_timeout, min(workers, len(cases)), record)
    else:
        loaded = corpus.resolve(cases) if corpus is not None else cases
        results = _iter_serial(loaded, target, info, step_timeout, record)
    out = RunResult(target=target_spec, strict=strict, info=dict(run_info or {}))
    out.info.update(target_name=info.name, target_version=info.version)
    failing = 0
    for case, result in zip(cases, results, strict=False):
        result = judge.apply(result, case.id, strict)
        out.results.append(result)
        if progress is not None:
            progress(result)
        failing += result.outcome.bad(strict)
        if maxfail and failing >= maxfail and len(out.results) < len(cases):
            out.stopped = f"--maxfail {maxfail}: {failing} cases failed"
        elif budget and time.perf_counter() - start >= budget and len(out.results) < len(cases):
            out.stopped = f"--budget {budget:g} s ran out after {time.perf_counter() - start:.1f} s"
        if out.stopped:
            out.not_run = [c.full_id for c in cases[len(out.results) :]]
            break
    results.close()  # closes the target(s)
    if baseline is None:
        out.unmatched_known_failures = unmatched_known_failures(known, cases)
    else:
        out.baseline = baseline.judge(out, {c.full_id: c.id for c in cases}, strict).to_dict()
    out.duration = time.perf_counter() - start
    return out
