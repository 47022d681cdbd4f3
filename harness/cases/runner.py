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
known-failures file into ``xfail`` and ``xpass``.  :class:`WorkerCorpus` (``run -n N`` from
paths) has its workers load the case files as well as run them, the parent only listing the
files, checking ids and putting the results back in case order.
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
import shutil
import signal
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Collection, Generator, Mapping, Sequence
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

from harness.cases.compare import compare_result, compare_then
from harness.cases.grading import graded, graded_result
from harness.cases.model import Case, Requirement, SpecRef, Step
from harness.cases.target import Target, TargetError, TargetInfo
from harness.cases.targets import make_target
from harness.cases.targets.reference import event_section
from harness.report.results import CaseResult, Outcome, RunResult, StepFailure

if TYPE_CHECKING:
    from harness.cases.cache import CaseCache
    from harness.cases.loader import CaseError

__all__ = [
    "ConfigurationError",
    "StepTimeout",
    "WorkerCorpus",
    "applicability",
    "apply_known_failures",
    "load_known_failures",
    "open_target",
    "run",
    "run_case",
    "select",
    "step_section",
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
def step_section(case: Case, event: str, requirement: str = "") -> str:
    """The spec section a step's failure is reported under.

    The SpecRef whose requirement the step names, else the one whose section defines the
    step's event ([MS-MQDMPR] section of the model method), else the case's first.
    """
    if requirement:
        for ref in case.spec:
            if ref.requirement == requirement:
                return ref.section
    defining = event_section(event)
    if defining:
        for ref in case.spec:
            if ref.section == defining:
                return ref.section
    return case.spec[0].section if case.spec else ""



def _crash(exc: BaseException) -> str:
    if isinstance(exc, TargetError):
        return f"{exc.kind}: {exc.message}"
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {tb[-1].filename}:{tb[-1].lineno}" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


def unsupported_by(case: Case, info: TargetInfo | None) -> list[str]:
    """The events or actions of ``case`` that the target's hello does not list (a target that
    lists none implements all)."""
    if info is None or not info.events or case.wire:  # wire actions: harness.cases.targets.wire
        return []
    return list(dict.fromkeys(s.event for s in case.when if s.event not in info.events))


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


def _grader(case: Case, step: Step | None) -> Callable[[StepFailure, Any], StepFailure]:
    def grader(failure: StepFailure, expected: Any) -> StepFailure:
        return graded(case, step, failure, expected)

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
        return CaseResult.since(case, excluded[0], start, [], excluded[1])
    if case.wire:  # [MS-MQQB] wire cases run over TCP: harness.cases.targets.wire
        from harness.cases.targets.wire import run_wire_case

        return run_wire_case(case, target, info, step_timeout=step_timeout, record_dir=record_dir)
    where = "setup"
    try:
        _with_timeout(target, step_timeout, target.setup, case.given)
        for index, step in enumerate(case.when):
            where = f"step {index} ({step.event}, line {step.line})" if step.line else f"step {index} ({step.event})"
            section = step_section(case, step.event, step.requirement)
            try:
                result = _with_timeout(target, step_timeout, target.event, step.event, step.args)
            except TargetError as e:
                if e.kind == "Unsupported" and step.expect_error != "Unsupported":
                    return CaseResult.since(case, Outcome.unsupported, start, [], f"{where}: {e.message}")
                if e.kind == "Error" and step.expect_error != "Error":
                    raise
                if step.expect_error == e.kind:
                    continue
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
            if not isinstance(result, dict):
                raise TargetError("Error", f"event returned {type(result).__name__}, not a mapping")
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
                    return graded_result(case, start, failures)
        then = case.then or {}
        queues = list(then.get("queues") or {})
        cursors = list(then.get("cursors") or {})
        if queues or cursors:
            where = "then"
            observed = _with_timeout(target, step_timeout, target.observe, queues, cursors)
            section = case.spec[0].section if case.spec else ""
            failures = compare_then(then, observed, section, _grader(case, None))
            if failures:
                return graded_result(case, start, failures)
    except StepTimeout:
        return CaseResult.since(case, Outcome.error, start, [], f"{where}: timed out after {step_timeout:g} s")
    except Exception as e:
        return CaseResult.since(case, Outcome.error, start, [], f"{where}: {_crash(e)}")
    return CaseResult.since(case, Outcome.passed, start, [], "")


# ====================================================================================== run
def load_known_failures(path: str | Path) -> set[str]:
    """Case ids (full ids, or ids meaning every variant), one per line; ``#`` starts a comment."""
    ids = set()
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            ids.add(line)
    return ids


def apply_known_failures(result: CaseResult, case: Case, known: Collection[str]) -> CaseResult:
    """A listed case: failed or error -> xfail, passed -> xpass (which fails the run)."""
    if case.full_id in known or case.id in known:
        if result.outcome in (Outcome.failed, Outcome.error):
            result.outcome = Outcome.xfail
        elif result.outcome is Outcome.passed:
            result.outcome = Outcome.xpass
            result.detail = "listed as a known failure, but passed"
    return result


class ConfigurationError(Exception):
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
        return CaseResult.since(case, Outcome.error, time.perf_counter(), [], _WORKER["problem"])
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


def _chunks(cases: Sequence[Case], workers: int, files: Sequence[int] = ()) -> list[tuple[int, int]]:
    """Consecutive cases, as (start, stop): a wire case alone (it waits on the spec's timers and
    would hold up the cases queued behind it), model cases up to 16 at a time, fewer when there
    are few cases, so that each worker gets several chunks.  ``files``: the file each case comes
    from (one per case), when a chunk must hold the cases of one file only."""
    size = max(1, min(16, len(cases) // (workers * 8)))
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
                    yield CaseResult.since(case, Outcome.error, time.perf_counter(), [], f"worker process died: {e}")
            finally:
                for future in futures:
                    future.cancel()
    finally:
        _SHARED.pop(run_id, None)
        if method == "fork":
            gc.unfreeze()


# ============================================================ run -n N from paths: workers load
Identity = tuple[Any, ...]  # a case's identity as a worker sends it: _identity / _shell


def _identity(case: Case) -> Identity:
    """What the parent of a run needs of a case its worker loaded (selection, known failures,
    reports of a worker that died), as plain data: its cited requirements by id only (the parent
    has them), nor its steps."""
    spec = tuple((ref.section, ref.requirement) for ref in case.spec)
    peer = case.given["peer"] if case.wire else None
    return (case.id, case.title, spec, case.tags, case.variant, peer, case.requires, case.source, case.line,
            tuple(case.requirements))  # fmt: skip


def _shell(identity: Identity, known: Mapping[str, Requirement]) -> Case:
    """The case of ``identity`` without its steps; its requirements resolved in ``known``."""
    case_id, title, spec, tags, variant, peer, requires, source, line, cited = identity
    return Case(
        id=case_id,
        title=title,
        spec=[SpecRef(section, requirement) for section, requirement in spec],
        tags=tags,
        given={"peer": peer} if peer is not None else {},
        variant=variant,
        requires=requires,
        source=source,
        line=line,
        requirements={rid: known[rid] for rid in cited if rid in known},
    )


Segment = tuple[int, str, list[int]]  # the positions of cases in one file: (file index, path, positions)


def _worker_main(conn: Any, events: tuple[str, ...], cache: CaseCache) -> None:
    """A worker of a WorkerCorpus: loads the files it is handed (keeping their cases), runs the
    chunks it is handed, until it receives None.  Messages: ``("load", index, path)`` ->
    ``("loaded", index, shells | CaseError)``; ``("run", chunk, settings, segments)`` ->
    ``("ran", chunk, results | str)``.  The target is opened on the first chunk (the parent
    greeted it before any chunk was handed out)."""
    from harness.cases.loader import CaseError, load_file

    files: dict[int, list[Case]] = dict(_INHERITED)  # read by the parent before the fork

    def cases_of(index: int, path: str) -> list[Case]:
        if index not in files:  # loaded by another worker: read back from the cache
            files[index] = load_file(path, events=events, cache=cache)
        return files[index]

    gc.freeze()  # the parent's heap, copied at the fork: not scanned by this worker's collections
    if hasattr(signal, "SIGINT"):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the run
    try:
        while True:
            message = conn.recv()
            if message is None:
                break
            if message[0] == "load":
                _, index, path = message
                try:
                    shells: list[Identity] | CaseError = [_identity(c) for c in cases_of(index, path)]
                except CaseError as e:
                    shells = e
                conn.send(("loaded", index, shells))
                gc.freeze()  # the cases loaded: not scanned again by this worker's collections
                continue
            _, chunk, settings, segments = message
            if _WORKER.get("settings") != settings:
                _worker_close()
                _worker_init(*settings)
                _WORKER["settings"] = settings
            results: list[CaseResult] | str = []
            for index, path, positions in segments:
                try:
                    cases = cases_of(index, path)
                except CaseError as e:
                    results = f"{path} changed during the run: {e}"
                    break
                if max(positions) >= len(cases):
                    results = f"{path} changed during the run: it holds {len(cases)} cases now"
                    break
                assert isinstance(results, list)
                results.extend(_worker_run(cases[p]) for p in positions)
            conn.send(("ran", chunk, results))
    except (EOFError, OSError, KeyboardInterrupt):  # the parent is gone
        pass
    finally:
        _worker_close()


def _worker_close() -> None:
    """Close this worker's target, if one is open (once: the finalizer _worker_init registered)."""
    close = _WORKER.pop("close", None)
    _WORKER["target"] = None
    if close is not None:
        with contextlib.suppress(Exception):
            close()


# The files the parent of a WorkerCorpus read back from the cache before forking its workers
# (by file index): the workers find them in their copy of its memory.
_INHERITED: dict[int, list[Case]] = {}


class _Worker:
    def __init__(self, ctx: Any, events: tuple[str, ...], cache: CaseCache) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, events, cache), daemon=True)
        self.process.start()
        child.close()
        self.busy: dict[Any, Any] = {}  # what it was handed and has not answered: key -> task
        self.alive = True

    def send(self, key: Any, message: Any) -> bool:
        """Hand it a task; False when it is gone (it is then marked dead)."""
        try:
            self.conn.send(message)
        except (OSError, ValueError):
            self.alive = False
            return False
        self.busy[key] = message
        return True


class WorkerCorpus:
    """The case files of ``paths`` loaded by ``workers`` worker processes, which then run them
    (``run(corpus.cases, ..., corpus=corpus)``): loading is parallel, as running is.

    The parent lists the files (loader.case_files) and hands them out, the largest first, to the
    workers as they become free (the files ``cache`` already holds are read back here first and
    reach the forked workers through memory); a worker loads each through ``cache`` (a folder
    of this run's when None), keeps its cases and sends back their identities (:func:`_identity`, made
    :func:`_shell` cases here).  ``cases`` holds
    them in the order ``load_paths`` gives, ids checked unique across files, and the first bad file
    in that order raises its CaseError, as ``load_paths`` does.  A chunk of cases goes to the
    worker that loaded its file when it is free (a worker with none of its own left takes
    another's: it reads the file back from the cache); wire chunks, which wait on the spec's
    timers, go first to whichever worker is free.  A worker that dies: its chunks' cases are
    errors, the others go on.  A context manager; ``close()`` stops the workers.
    """

    DEPTH = 2  # tasks handed to a worker before it answers (one running, one queued)

    def __init__(
        self,
        paths: Sequence[str | Path],
        workers: int,
        *,
        events: Collection[str] = (),
        cache: CaseCache | None = None,
    ) -> None:
        from harness.cases.cache import CaseCache
        from harness.cases.loader import case_files

        self.files = [str(f) for f in case_files(paths)]
        self.events = tuple(events)
        self._scratch: str | None = None
        if cache is None:
            self._scratch = tempfile.mkdtemp(prefix="msmq-harness-run-")
            cache = CaseCache(self._scratch)
        self.cache = cache
        self.cases: list[Case] = []
        self._where: dict[int, tuple[int, int]] = {}  # id(shell) -> (file index, position)
        self._owner: dict[int, _Worker] = {}  # file index -> the worker that loaded it
        methods = multiprocessing.get_all_start_methods()
        fork = "fork" in methods
        # Files the cache holds are read back here (about 0.07 ms a case, against 1 ms to load
        # one) and handed to forked workers through memory; the workers load the others.
        self._read = self._read_back() if fork and self._scratch is None else {}
        ctx = multiprocessing.get_context("fork" if fork else "spawn")
        _INHERITED.clear()
        _INHERITED.update(self._read)
        if fork:
            gc.freeze()  # the cases and the rest of this heap: not scanned (nor copied) by the workers' collections
        try:
            self.workers = [_Worker(ctx, self.events, cache) for _ in range(max(1, workers))]
        finally:
            _INHERITED.clear()
            if fork:
                gc.unfreeze()
        try:
            self._load()
        except BaseException:
            self.close()
            raise

    def _read_back(self) -> dict[int, list[Case]]:
        """The cases of every file the cache holds (a bad file is never cached: a worker loads
        it, and the error is reported in file order)."""
        from harness.cases.cache import NotCached
        from harness.cases.loader import CaseError, load_file

        view = self.cache.read_only()
        out: dict[int, list[Case]] = {}
        for i, path in enumerate(self.files):
            try:
                out[i] = load_file(path, events=self.events, cache=view)
            except (NotCached, CaseError):
                continue
        return out

    @property
    def pool(self) -> list[_Worker] | None:
        """The live workers; None when there are none (the cases then run in the parent)."""
        live = [w for w in self.workers if w.alive]
        return live or None

    def _answers(self) -> Generator[tuple[_Worker, Any], None, None]:
        """(worker, message) as they come; a worker that died yields (worker, None) once."""
        from multiprocessing.connection import wait

        while True:
            live = [w for w in self.workers if w.alive and w.busy]
            if not live:
                return
            ready = wait([w.conn for w in live] + [w.process.sentinel for w in live])
            for w in live:
                if w.conn in ready:
                    try:
                        message = w.conn.recv()
                    except (EOFError, OSError):
                        message = None
                elif w.process.sentinel in ready:
                    message = None
                else:
                    continue
                if message is None:
                    w.alive = False
                    w.process.join(1)
                yield w, message

    def _load(self) -> None:
        from harness.cases.loader import CaseError, check_unique, load_file, requirements_for

        def size(i: int) -> int:
            with contextlib.suppress(OSError):
                return os.stat(self.files[i]).st_size
            return 0

        todo = sorted((i for i in range(len(self.files)) if i not in self._read), key=size, reverse=True)
        got: dict[int, list[Identity] | CaseError] = {}

        def feed(w: _Worker) -> None:
            while todo and w.alive and len(w.busy) < self.DEPTH:
                i = todo.pop(0)
                if not w.send(i, ("load", i, self.files[i])):
                    todo.insert(0, i)

        for w in self.workers:
            feed(w)
        for w, message in self._answers():
            if message is None:  # died: its files are loaded elsewhere
                todo[:0] = list(w.busy)
                w.busy.clear()
                for other in self.workers:
                    feed(other)
                continue
            _, index, shells = message
            del w.busy[index]
            got[index] = shells
            self._owner[index] = w
            feed(w)
        first: dict[str, Case] = {}
        by_folder: dict[str, Mapping[str, Requirement]] = {}
        for i, path in enumerate(self.files):
            if i in self._read:  # read back here: the cases themselves
                for position, case in enumerate(self._read[i]):
                    check_unique(case, first)
                    self._where[id(case)] = (i, position)
                    self.cases.append(case)
                continue
            if i not in got:  # every worker died: loaded here
                got[i] = [_identity(c) for c in load_file(path, events=self.events, cache=self.cache)]
            identities = got[i]
            if isinstance(identities, CaseError):
                raise identities
            folder = os.path.dirname(path)
            if identities and folder not in by_folder:  # the requirement list is found by folder
                by_folder[folder] = requirements_for(path)
            known = by_folder.get(folder, {})
            for position, identity in enumerate(identities):
                case = _shell(identity, known)
                check_unique(case, first)
                self._where[id(case)] = (i, position)
                self.cases.append(case)

    def __enter__(self) -> WorkerCorpus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the workers (their targets are closed) and remove this run's cache folder."""
        for w in self.workers:
            if w.alive:
                with contextlib.suppress(OSError, ValueError):
                    w.conn.send(None)
        for w in self.workers:
            w.process.join(5)
            if w.process.is_alive():
                w.process.terminate()
                w.process.join(1)
            w.alive = False
            w.conn.close()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def locate(self, cases: Sequence[Case]) -> list[tuple[int, int]]:
        """(file index, position) of each of ``cases``, shells of this corpus; ValueError else."""
        try:
            return [self._where[id(case)] for case in cases]
        except KeyError:
            raise ValueError("run(..., corpus=...) runs cases of that corpus only") from None

    def resolve(self, cases: Sequence[Case]) -> list[Case]:
        """The cases themselves, loaded here (read back from the cache)."""
        from harness.cases.loader import load_file

        loaded: dict[int, list[Case]] = {}
        out = []
        for index, position in self.locate(cases):
            if index not in loaded:
                loaded[index] = load_file(self.files[index], events=self.events, cache=self.cache)
            out.append(loaded[index][position])
        return out

    def iter_run(
        self, cases: list[Case], target_spec: str, step_timeout: float, record_dir: str | None = None
    ) -> Generator[CaseResult, None, None]:
        """The results of ``cases`` (shells of this corpus) in their order, run by the workers in
        chunks (:func:`_chunks`; a chunk may span files); the cases of a chunk whose worker died
        are errors."""
        where = self.locate(cases)
        live = [w for w in self.workers if w.alive]
        chunks = _chunks(cases, max(1, len(live)))
        settings = (target_spec, step_timeout, record_dir)

        def segments(k: int) -> list[Segment]:
            begin, stop = chunks[k]
            out: list[Segment] = []
            for index, position in where[begin:stop]:
                if out and out[-1][0] == index:
                    out[-1][2].append(position)
                else:
                    out.append((index, self.files[index], [position]))
            return out

        keys = [f"{case.source}::{case.full_id}" for case in cases]
        last = self.cache.durations() if self._scratch is None else {}
        wire = [k for k in _longest_first(cases, chunks, [last.get(key) for key in keys]) if cases[chunks[k][0]].wire]
        own: dict[int, list[int]] = {id(w): [] for w in live}  # model chunks by the worker that loaded them
        for k, (begin, _) in enumerate(chunks):
            if not cases[begin].wire:
                owner = self._owner.get(where[begin][0])
                own[id(owner) if owner is not None and owner.alive else id(live[k % len(live)])].append(k)
        done: dict[int, list[CaseResult] | str] = {}
        took: dict[str, float] = {}  # seconds each wire case took

        def feed(w: _Worker) -> None:
            while w.alive and len(w.busy) < self.DEPTH:
                if wire:
                    k = wire.pop(0)
                elif own.get(id(w)):
                    k = own[id(w)].pop(0)
                else:  # none of its own left: take from the end of the longest other list
                    longest = max(own.values(), key=len, default=[])
                    if not longest:
                        return
                    k = longest.pop()
                if not w.send(k, ("run", k, settings, segments(k))):
                    wire.insert(0, k)  # another worker takes it

        answers = self._answers()
        try:
            for w in live:
                feed(w)
            for k, (begin, stop) in enumerate(chunks):
                while k not in done:
                    try:
                        w, message = next(answers)
                    except StopIteration:  # no worker left
                        died = "worker process died: no worker left to run it"
                        done.update((j, died) for j in range(len(chunks)) if j not in done)
                        break
                    if message is None:
                        code = w.process.exitcode
                        handed = list(w.busy)  # the first was running; the others wait for a worker
                        w.busy.clear()
                        if handed:
                            done[handed[0]] = f"worker process died (exit code {code}) while running these cases"
                            wire[:0] = handed[1:]
                        mine = own.pop(id(w), [])
                        others = [x for x in self.workers if x.alive]
                        if others:
                            own[id(others[0])] = sorted(own.get(id(others[0]), []) + mine)
                            for x in others:
                                feed(x)
                        else:
                            done.update((j, "worker process died: no worker left to run it") for j in mine + wire)
                            wire.clear()
                        continue
                    _, j, results = message
                    del w.busy[j]
                    done[j] = results
                    feed(w)
                got = done.pop(k)
                if isinstance(got, str):
                    now = time.perf_counter()
                    yield from (CaseResult.since(case, Outcome.error, now, [], got) for case in cases[begin:stop])
                else:
                    for i, result in enumerate(got, begin):
                        if cases[i].wire:
                            took[keys[i]] = result.duration
                    yield from got
        finally:
            answers.close()
            if took and self._scratch is None:  # for the next run's order
                self.cache.record_durations(took)


def run(
    cases: list[Case],
    target_spec: str,
    *,
    workers: int = 1,
    step_timeout: float = 10.0,
    known_failures: Collection[str] = (),
    strict: bool = False,
    progress: Callable[[CaseResult], None] | None = None,
    record_dir: str | os.PathLike[str] | None = None,
    corpus: WorkerCorpus | None = None,
) -> RunResult:
    """Run ``cases`` on the target ``target_spec`` (make_target); results in the cases' order.

    The target is opened and greeted first: ConfigurationError, before any case runs, when it
    cannot be.  ``workers > 1`` runs the cases in that many processes, each with its own target.
    ``strict`` makes non_strict outcomes fail the run.  ``record_dir``: each wire case's pcap
    and transcript page go there (harness.report.transcript).  ``corpus``: ``cases`` are shells
    of that :class:`WorkerCorpus`, whose workers loaded them and run them (``workers`` is then
    the corpus's).
    """
    start = time.perf_counter()
    known = set(known_failures)
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
    out = RunResult(target=target_spec, strict=strict)
    for case, result in zip(cases, results, strict=False):
        result = apply_known_failures(result, case, known)
        out.results.append(result)
        if progress is not None:
            progress(result)
    results.close()  # closes the target(s)
    out.duration = time.perf_counter() - start
    return out
