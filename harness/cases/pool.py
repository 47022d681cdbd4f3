"""How a run's cases reach the target: one after the other in this process
(:func:`iter_serial`), or in chunks handed to worker processes, each with its own target
(:func:`iter_parallel`; :func:`chunk_spans`, :func:`longest_first`: a wire case alone, first, since
it waits on the [MS-MQQB] 3.1.2 timers).  The worker side (:func:`worker_init`,
:func:`worker_run`) is shared with harness.cases.workers, whose workers load the case files too.
Each case runs through harness.cases.execute.run_case; the results come back in case order.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import gc
import itertools
import math
import multiprocessing
import time
from collections.abc import Generator, Sequence
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from harness.cases.caseresult import case_result_since
from harness.cases.execute import ConfigurationError, open_target, run_case
from harness.cases.model import Case
from harness.cases.target import Target, TargetInfo
from harness.results import CaseResult, Outcome

__all__ = [
    "CHUNK",
    "WORKER",
    "chunk_spans",
    "iter_parallel",
    "iter_serial",
    "longest_first",
    "worker_init",
    "worker_run",
]


def iter_serial(
    cases: list[Case], target: Target, info: TargetInfo, step_timeout: float, record_dir: str | None = None
) -> Generator[CaseResult, None, None]:
    """The results of ``cases`` in their order, run one after the other in this process against
    ``target``, which is closed at the end."""
    try:
        for case in cases:
            yield run_case(case, target, step_timeout=step_timeout, info=info, record_dir=record_dir)
    finally:
        with contextlib.suppress(Exception):
            target.close()


#: this worker process's target and settings (worker_init), and what harness.cases.workers keeps there
WORKER: dict[str, Any] = {}


def worker_init(target_spec: str, step_timeout: float, record_dir: str | None = None) -> None:
    """Open this worker process's target (:data:`WORKER`); one that cannot be opened is reported
    by each case the worker runs."""
    try:
        target, info = open_target(target_spec, step_timeout)
    except ConfigurationError as e:  # it answered in the parent: report it per case
        WORKER.update(target=None, problem=str(e))
        return
    WORKER.update(target=target, info=info, problem="", step_timeout=step_timeout, record_dir=record_dir)
    WORKER["close"] = multiprocessing.util.Finalize(None, target.close, exitpriority=10)  # once


def worker_run(case: Case) -> CaseResult:
    """The result of ``case`` run against this worker process's target (:func:`worker_init`)."""
    target = WORKER["target"]
    if target is None:
        return case_result_since(case, Outcome.error, time.perf_counter(), [], WORKER["problem"])
    return run_case(
        case, target, step_timeout=WORKER["step_timeout"], info=WORKER["info"], record_dir=WORKER["record_dir"]
    )


# The cases of the runs under way, by run: a forked worker finds its run's cases here (copied
# with the parent's memory), so that a chunk travels as (run, start, stop), not as pickled cases.
_SHARED: dict[int, list[Case]] = {}
_RUN_IDS = itertools.count()

Chunk = tuple[int, int, int] | list[Case]  # (run, start, stop) of _SHARED, or the cases themselves


def _worker_chunk(chunk: Chunk) -> list[CaseResult]:
    cases = _SHARED[chunk[0]][chunk[1] : chunk[2]] if isinstance(chunk, tuple) else chunk
    return [worker_run(case) for case in cases]


CHUNK = 64  # model cases a chunk holds at most: tens of milliseconds of a worker's time, one message


def chunk_spans(cases: Sequence[Case], workers: int, files: Sequence[int] = ()) -> list[tuple[int, int]]:
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


def longest_first(
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


def iter_parallel(
    cases: list[Case], target_spec: str, step_timeout: float, workers: int, record_dir: str | None = None
) -> Generator[CaseResult, None, None]:
    """The results of ``cases`` in their order, run by ``workers`` processes that take chunks
    (:func:`chunk_spans`) as they become free.  Forked workers read the cases from the parent's
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
            initializer=worker_init,
            initargs=(target_spec, step_timeout, record_dir),
        ) as pool:
            try:
                chunks = chunk_spans(cases, workers)
                by_chunk: dict[int, concurrent.futures.Future[list[CaseResult]]] = {}
                for k in longest_first(cases, chunks):
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
