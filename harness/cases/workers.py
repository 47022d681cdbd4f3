"""``msmq-harness run -n N`` from paths: worker processes that load the case files as well as run
them (:class:`WorkerCorpus`); the parent only lists the files, checks ids and puts the results
back in case order.  The workers run cases as :mod:`harness.cases.runner`'s pool does
(``_worker_init`` / ``_worker_run``: one target per worker)."""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Collection, Generator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cases.caseresult import case_result_since
from harness.cases.model import Case, Requirement, SpecRef
from harness.cases.runner import _WORKER, _chunks, _longest_first, _worker_init, _worker_run
from harness.results import CaseResult, Outcome

if TYPE_CHECKING:
    from harness.cases.cache import CaseCache
    from harness.cases.loader import CaseError

__all__ = ["WorkerCorpus"]


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
                    yield from (case_result_since(case, Outcome.error, now, [], got) for case in cases[begin:stop])
                else:
                    for i, result in enumerate(got, begin):
                        if cases[i].wire:
                            took[keys[i]] = result.duration
                    yield from got
        finally:
            answers.close()
            if took and self._scratch is None:  # for the next run's order
                self.cache.record_durations(took)
