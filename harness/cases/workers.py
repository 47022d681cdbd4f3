"""``msmq-harness run -n N`` from paths: worker processes that load the case files as well as run
them (:class:`WorkerCorpus`).  The parent lists the files and shares them out by size before it
forks the workers; each worker loads its share (through the case cache: read back, or loaded and
stored) and sends back what the parent needs of each case (:func:`_identity`), all at once; the
parent then checks ids, hands out chunks of cases and puts the results back in case order.  The
parent reads no case file.  The workers run cases as :mod:`harness.cases.pool`'s do
(``worker_init`` / ``worker_run``: one target per worker)."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import multiprocessing
import operator
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Collection, Generator, Iterator, Sequence
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from harness.cases import loader  # loader.load_file looked up when called (a test records the loads)
from harness.cases.cache import CaseCache
from harness.cases.caseresult import case_result_since
from harness.cases.lines import CaseError
from harness.cases.loader import case_file_sizes, check_unique
from harness.cases.model import Case
from harness.cases.pool import CHUNK, WORKER, longest_first, worker_init, worker_run
from harness.results import CaseResult, Outcome

__all__ = ["WorkerCorpus"]


Identity = tuple[Any, ...]  # a case's identity as a worker sends it: _identity / _shell


def _identity(case: Case, known: dict[Any, Any]) -> Identity:
    """What the parent of a run needs of a case its worker loaded (selection, known failures,
    reports of a worker that died), as plain data, without its steps.  The requirements it cites
    and its spec references (both frozen) are each replaced by the equal one in ``known`` (added
    when new): the files a worker reads back from the cache hold a copy each of the requirements
    they cite, which one message then carries once; the parent then makes no SpecRef of its own."""
    spec = tuple(known.setdefault(ref, ref) for ref in case.spec)
    peer = case.given["peer"] if case.wire else None
    cited = {rid: known.setdefault(r, r) for rid, r in case.requirements.items()}
    return (case.id, case.title, spec, case.tags, case.variant, peer, case.requires, case.source, case.line,
            cited)  # fmt: skip


def _shell(identity: Identity) -> Case:
    """The case of ``identity`` without its steps (the requirements it cites and its spec
    references travel with it: pickled once per message, however many cases cite them)."""
    case_id, title, spec, tags, variant, peer, requires, source, line, cited = identity
    return Case(
        id=case_id,
        title=title,
        spec=list(spec),
        tags=tags,
        given={"peer": peer} if peer is not None else {},
        variant=variant,
        requires=requires,
        source=source,
        line=line,
        requirements=cited,
    )


# A result travels back as its fields' values, in CaseResult's field order: a tuple of plain values
# unpickles in a fraction of the time an object with its attribute dict takes, and the parent makes
# the same CaseResult of it (``CaseResult(*fields)``: its fields are all positional).
_FIELDS = operator.attrgetter(*(f.name for f in dataclasses.fields(CaseResult)))


Segment = tuple[int, str, list[int]]  # the positions of cases in one file: (file index, path, positions)
Loaded = dict[int, "list[Identity] | CaseError"]  # what a worker loaded, by file index
LOAD = "load"  # (LOAD, n): the key of a loading task among a worker's busy tasks


def _loading(key: Any) -> bool:
    return isinstance(key, tuple) and key[0] == LOAD


def _worker_main(conn: Any, events: tuple[str, ...], cache: CaseCache, share: list[tuple[int, str]]) -> None:
    """A worker of a WorkerCorpus: loads the files of its ``share`` (keeping their cases) and sends
    ``("loaded", {index: identities | CaseError})`` once, then answers what it is handed until it
    receives None: ``("load", [(index, path), ...])`` (the share of a worker that died) ->
    ``("loaded", {...})``; ``("run", chunk, settings, segments)`` -> ``("ran", chunk, results | str)``,
    each result as its fields (:data:`_FIELDS`).
    The target is opened on the first chunk (the parent greeted it before any chunk was handed
    out)."""
    files: dict[int, list[Case]] = {}
    known: dict[Any, Any] = {}  # the requirements and spec references sent so far: each sent as one object

    def cases_of(index: int, path: str) -> list[Case]:
        if index not in files:  # loaded here, or read back from the cache (a file another worker loaded)
            hits = cache.hits
            files[index] = loader.load_file(path, events=events, cache=cache)
            if cache.hits > hits:  # read back: no garbage made, and the cases are kept; not scanned again
                gc.freeze()
        return files[index]

    def load(paths: list[tuple[int, str]]) -> Loaded:
        loaded: Loaded = {}
        for index, path in paths:
            try:
                loaded[index] = [_identity(c, known) for c in cases_of(index, path)]
            except CaseError as e:
                loaded[index] = e
        gc.freeze()  # the cases loaded: not scanned again by this worker's collections
        return loaded

    gc.freeze()  # the parent's heap, copied at the fork: not scanned by this worker's collections
    if hasattr(signal, "SIGINT"):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the run
    try:
        conn.send(("loaded", load(share)))
        while True:
            message = conn.recv()
            if message is None:
                break
            if message[0] == "load":
                conn.send(("loaded", load(message[1])))
                continue
            _, chunk, settings, segments = message
            if WORKER.get("settings") != settings:
                _worker_close()
                worker_init(*settings)
                WORKER["settings"] = settings
            conn.send(("ran", chunk, _run_segments(segments, cases_of)))
    except (EOFError, OSError, KeyboardInterrupt):  # the parent is gone
        pass
    finally:
        _worker_close()


def _run_segments(segments: list[Segment], cases_of: Callable[[int, str], list[Case]]) -> list[tuple[Any, ...]] | str:
    """The results of the cases of ``segments`` (this worker's target), each as its fields
    (:data:`_FIELDS`), or why they cannot run: a file that no longer loads, or holds fewer cases,
    than when the run began."""
    results: list[tuple[Any, ...]] = []
    for index, path, positions in segments:
        try:
            cases = cases_of(index, path)
        except CaseError as e:
            return f"{path} changed during the run: {e}"
        if max(positions) >= len(cases):
            return f"{path} changed during the run: it holds {len(cases)} cases now"
        results.extend(_FIELDS(worker_run(cases[p])) for p in positions)
    return results


def _worker_close() -> None:
    """Close this worker's target, if one is open (once: the finalizer worker_init registered)."""
    close = WORKER.pop("close", None)
    WORKER["target"] = None
    if close is not None:
        with contextlib.suppress(Exception):
            close()


def _shares(sizes: Sequence[int], workers: int) -> list[list[int]]:
    """The files (by index) each of ``workers`` loads: the largest first, each to the worker with
    the fewest bytes so far (the first such worker on a tie), each share then in file order.
    Sizes are known without reading a file; the same files give the same shares."""
    shares: list[list[int]] = [[] for _ in range(max(1, workers))]
    load = [0] * len(shares)
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        k = load.index(min(load))
        shares[k].append(i)
        load[k] += max(sizes[i], 1)
    return [sorted(share) for share in shares]


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Within: no cyclic garbage collection in this process, the parent of the run (restored after;
    the workers are forked before, and keep theirs).  What the parent makes meanwhile (the cases'
    identities and shells, their results) holds no reference cycle and is kept until the run ends:
    the collector would only scan it again and again, freeing nothing (on 5,070 cases, some 120
    young and 10 older collections, about 0.01 CPU-seconds)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _Worker:
    def __init__(self, ctx: Any, events: tuple[str, ...], cache: CaseCache, share: list[tuple[int, str]]) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, events, cache, share), daemon=True)
        self.process.start()
        child.close()
        self.busy: dict[Any, Any] = {(LOAD, 0): ("load", share)}  # handed and not answered yet: key -> task
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
    (``run(corpus.cases, ..., corpus=corpus)``): loading is parallel, as running is, and the
    parent does no per-file work besides listing the files.

    The parent lists the files (loader.case_files) and shares them out by size (:func:`_shares`)
    before it forks the workers; each worker loads its share through ``cache`` (a folder of this
    run's when None: what one worker stores, another reads back), keeps its cases and sends back
    their identities (:func:`_identity`, made :func:`_shell` cases here) in one message.  ``cases``
    holds them in the order ``load_paths`` gives, ids checked unique across files, and the first bad
    file in that order raises its CaseError, as ``load_paths`` does.  The share of a worker that
    dies while loading is loaded by another (by the parent when none is left).  A chunk of cases
    goes to the worker that loaded its file when it is free (a worker with none of its own left
    takes another's: it reads the file back from the cache); wire chunks, which wait on the spec's
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
        sizes = case_file_sizes(paths)
        self.files = [str(f) for f in sizes]
        self.events = tuple(events)
        self._scratch: str | None = None
        if cache is None:
            self._scratch = tempfile.mkdtemp(prefix="msmq-harness-run-")
            cache = CaseCache(self._scratch)
        self.cache = cache
        self.cases: list[Case] = []
        self._where: dict[int, tuple[int, int]] = {}  # id(shell) -> (file index, position)
        self._owner: dict[int, _Worker] = {}  # file index -> the worker that loaded it
        fork = "fork" in multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if fork else "spawn")
        self.shares = _shares(list(sizes.values()), max(1, workers))
        # this heap (and, once loaded, the cases): not scanned (nor copied) by the workers'
        # collections, nor by this process's while the results come in; let go in close()
        gc.freeze()
        self._frozen = True
        self.workers: list[_Worker] = []
        try:
            for share in self.shares:
                self.workers.append(_Worker(ctx, self.events, cache, [(i, self.files[i]) for i in share]))
            with _collector_paused():  # the workers forked: none inherits the pause
                self._load()
        except BaseException:
            self.close()
            raise
        gc.freeze()

    @property
    def pool(self) -> list[_Worker] | None:
        """The live workers; None when there are none (the cases then run in the parent)."""
        live = [w for w in self.workers if w.alive]
        return live or None

    def _answers(self) -> Generator[tuple[_Worker, Any], None, None]:
        """(worker, message) as they come; a worker that died yields (worker, None) once."""
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
        """Wait for every worker's share; a dead worker's share goes to a live one."""
        got: Loaded = {}
        handed = itertools.count(1)
        for w, message in self._answers():
            if message is None:  # died while loading: its files are loaded by another
                orphans = [task[1] for key, task in w.busy.items() if _loading(key)]
                w.busy.clear()
                for share in orphans:
                    heir = min((x for x in self.workers if x.alive), key=lambda x: len(x.busy), default=None)
                    if heir is not None and heir.send((LOAD, next(handed)), ("load", share)):
                        continue
                    for i, path in share:  # no worker left: loaded here
                        try:
                            loaded = loader.load_file(path, events=self.events, cache=self.cache)
                            got[i] = [_identity(c, {}) for c in loaded]
                        except CaseError as e:
                            got[i] = e
                continue
            del w.busy[next(k for k in w.busy if _loading(k))]  # a worker answers in order
            for index in message[1]:
                self._owner[index] = w
            got.update(message[1])
        first: dict[str, Case] = {}
        for i in range(len(self.files)):
            identities = got[i]
            if isinstance(identities, CaseError):
                raise identities
            for position, identity in enumerate(identities):
                case = _shell(identity)
                check_unique(case, first)
                self._where[id(case)] = (i, position)
                self.cases.append(case)

    def __enter__(self) -> WorkerCorpus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the workers (their targets are closed) and remove this run's cache folder."""
        if self._frozen:
            self._frozen = False
            gc.unfreeze()
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
        loaded: dict[int, list[Case]] = {}
        out = []
        for index, position in self.locate(cases):
            if index not in loaded:
                loaded[index] = loader.load_file(self.files[index], events=self.events, cache=self.cache)
            out.append(loaded[index][position])
        return out

    def iter_run(
        self, cases: list[Case], target_spec: str, step_timeout: float, record_dir: str | None = None
    ) -> Generator[CaseResult, None, None]:
        """The results of ``cases`` (shells of this corpus) in their order, run by the workers in
        chunks (:func:`_owned_chunks`: a chunk may span files, of one worker's share); the cases of a
        chunk whose worker died are errors."""
        plan = _Dispatch(self, cases, (target_spec, step_timeout, record_dir))
        answers = self._answers()
        try:
            with _collector_paused():  # until the last result is handed on (or the run stops)
                for w in plan.live:
                    plan.feed(w)
                for i in range(len(cases)):
                    yield plan.wait_for(i, answers)
        finally:
            answers.close()
            if plan.took and self._scratch is None:  # for the next run's order
                self.cache.record_durations(plan.took)


class _Dispatch:
    """The chunks of one run of a :class:`WorkerCorpus`, handed out as workers become free: the
    wire chunks first, longest first by the durations of the last run, then each worker's own
    model chunks, then, its own done, the end of the longest other list.  A model chunk holds
    cases of the files one worker loaded (:func:`_owned_chunks`), so that a worker reads back no
    file another loaded but for the chunks it takes over at the end.  The chunks of a worker that
    dies go to the others; its running chunk is an error.  The results are put back in case order."""

    def __init__(self, corpus: WorkerCorpus, cases: list[Case], settings: tuple[str, float, str | None]) -> None:
        self.corpus, self.cases, self.settings = corpus, cases, settings
        self.where = corpus.locate(cases)
        self.live = [w for w in corpus.workers if w.alive]
        owners = [self._owner(index) for index, _ in self.where]
        self.chunks = _owned_chunks(cases, [id(w) for w in owners], len(self.live))
        self.keys = [f"{case.source}::{case.full_id}" if case.wire else "" for case in cases]
        last = corpus.cache.durations() if corpus._scratch is None and any(self.keys) else {}
        firsts = [(chunk[0], chunk[0] + 1) for chunk in self.chunks]  # a wire chunk is one case
        order = longest_first(cases, firsts, [last.get(key) for key in self.keys])
        self.wire = [k for k in order if cases[self.chunks[k][0]].wire]
        self.own: dict[int, list[int]] = {id(w): [] for w in self.live}  # model chunks by the worker that loaded them
        for k, chunk in enumerate(self.chunks):
            if not cases[chunk[0]].wire:
                self.own[id(owners[chunk[0]])].append(k)
        self.pending = set(range(len(self.chunks)))  # chunks whose results have not come back
        self.ready: dict[int, CaseResult] = {}  # results come back, by case, not yet handed on
        self.took: dict[str, float] = {}  # seconds each wire case took

    def _owner(self, index: int) -> _Worker:
        """The worker that loaded file ``index`` (a live one: another when it died)."""
        owner = self.corpus._owner.get(index)
        return owner if owner is not None and owner.alive else self.live[index % len(self.live)]

    def segments(self, k: int) -> list[Segment]:
        out: list[Segment] = []
        for index, position in (self.where[i] for i in self.chunks[k]):
            if out and out[-1][0] == index:
                out[-1][2].append(position)
            else:
                out.append((index, self.corpus.files[index], [position]))
        return out

    def feed(self, w: _Worker) -> None:
        while w.alive and len(w.busy) < self.corpus.DEPTH:
            if self.wire:
                k = self.wire.pop(0)
            elif self.own.get(id(w)):
                k = self.own[id(w)].pop(0)
            else:  # none of its own left: take from the end of the longest other list
                longest = max(self.own.values(), key=len, default=[])
                if not longest:
                    return
                k = longest.pop()
            if not w.send(k, ("run", k, self.settings, self.segments(k))):
                self.wire.insert(0, k)  # another worker takes it

    def wait_for(self, i: int, answers: Iterator[tuple[_Worker, Any]]) -> CaseResult:
        """The result of case ``i``, once the workers' answers brought it."""
        while i not in self.ready:
            try:
                w, message = next(answers)
            except StopIteration:  # no worker left
                for k in sorted(self.pending):
                    self._done(k, "worker process died: no worker left to run it")
                continue
            if message is None:
                self._died(w)
                continue
            _, k, results = message
            del w.busy[k]
            self._done(k, results)
            self.feed(w)
        return self.ready.pop(i)

    def _done(self, k: int, got: list[tuple[Any, ...]] | str) -> None:
        """Chunk ``k``'s results (as their fields) put in place (errors, one per case, when its
        worker died)."""
        self.pending.discard(k)
        chunk = self.chunks[k]
        if isinstance(got, str):
            now = time.perf_counter()
            results = [case_result_since(self.cases[i], Outcome.error, now, [], got) for i in chunk]
        else:
            results = [CaseResult(*fields) for fields in got]
        self.ready.update(zip(chunk, results, strict=True))
        keys = self.keys  # a wire case's: how long it took, for the next run's order
        self.took.update((keys[i], r.duration) for i, r in zip(chunk, results, strict=True) if keys[i])

    def _died(self, w: _Worker) -> None:
        code = w.process.exitcode
        handed = list(w.busy)  # the first was running; the others wait for a worker
        w.busy.clear()
        if handed:
            self._done(handed[0], f"worker process died (exit code {code}) while running these cases")
            self.wire[:0] = handed[1:]
        mine = self.own.pop(id(w), [])
        others = [x for x in self.corpus.workers if x.alive]
        if others:
            self.own[id(others[0])] = sorted(self.own.get(id(others[0]), []) + mine)
            for x in others:
                self.feed(x)
        else:
            for k in mine + self.wire:
                self._done(k, "worker process died: no worker left to run it")
            self.wire.clear()


def _owned_chunks(cases: Sequence[Case], owners: Sequence[int], workers: int) -> list[list[int]]:
    """The chunks of a run, as the cases (by index) each holds, in the order of their first case: a
    wire case alone (it waits on the spec's timers), model cases of one owner (``owners``: the
    worker that loaded each case's file) in case order, up to :data:`CHUNK` at a time, fewer when
    there are few cases, so that each worker gets at least 8 chunks (as harness.cases.pool.chunk_spans)."""
    size = max(1, min(CHUNK, len(cases) // (max(1, workers) * 8)))
    chunks: list[list[int]] = []
    filling: dict[int, list[int]] = {}  # the chunk of each owner being filled
    for i, case in enumerate(cases):
        if case.wire:
            chunks.append([i])
            continue
        chunk = filling.get(owners[i])
        if chunk is None or len(chunk) == size:
            chunk = filling[owners[i]] = []
            chunks.append(chunk)
        chunk.append(i)
    return chunks
