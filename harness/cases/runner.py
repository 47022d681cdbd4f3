"""Running conformance cases against a target: selection, known failures, the run.

Renders the runner of docs/cases.md: :func:`select` picks cases by a pytest-like ``-k``
expression over id, title and tags and by spec section prefix; :func:`run` opens the target once
(harness.cases.execute.open_target: a target that cannot be made or does not answer hello is a
:class:`ConfigurationError`, before any case runs), runs the cases in this process or in worker
processes (harness.cases.pool: each with its own target), in case order, each through
harness.cases.execute.run_case (which never raises: a target that errs, crashes or hangs past the
step timeout makes that case an ``error``), and turns the cases listed in a known-failures file
into ``xfail`` and ``xpass``.  ``run -n N`` from paths goes through
:class:`harness.cases.workers.WorkerCorpus`, whose workers load the case files as well as run
them.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import time
from collections.abc import Callable, Collection, Generator, Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.cases.baseline import Baseline
from harness.cases.execute import (
    open_target,
)
from harness.cases.model import Case
from harness.cases.pool import iter_parallel, iter_serial
from harness.cases.target import Target, TargetInfo
from harness.cases.workers import WorkerCorpus
from harness.results import CaseResult, Outcome, RunResult

__all__ = [
    "apply_known_failures",
    "keyword_matcher",
    "load_known_failures",
    "run",
    "select",
    "unmatched_known_failures",
]


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
    results = _case_results(cases, target_spec, target, info, workers, step_timeout, record, corpus)
    out = RunResult(target=target_spec, strict=strict, info=dict(run_info or {}))
    out.info.update(target_name=info.name, target_version=info.version)
    _collect(out, cases, results, judge, strict, progress, maxfail, budget, start)
    results.close()  # closes the target(s)
    if baseline is None:
        out.unmatched_known_failures = unmatched_known_failures(known, cases)
    else:
        out.baseline = baseline.judge(out, {c.full_id: c.id for c in cases}, strict).to_dict()
    out.duration = time.perf_counter() - start
    return out


def _case_results(
    cases: list[Case],
    target_spec: str,
    target: Target,
    info: TargetInfo,
    workers: int,
    step_timeout: float,
    record: str | None,
    corpus: WorkerCorpus | None,
) -> Generator[CaseResult, None, None]:
    """The results of ``cases`` in their order: from the corpus's workers, from a pool of
    ``workers`` processes (``target`` closed: each worker opens its own), or from ``target``."""
    if corpus is not None and corpus.pool is not None:
        with contextlib.suppress(Exception):
            target.close()
        return corpus.iter_run(cases, target_spec, step_timeout, record)
    if workers > 1 and len(cases) > 1:
        with contextlib.suppress(Exception):
            target.close()
        loaded = corpus.resolve(cases) if corpus is not None else cases  # its workers are gone
        return iter_parallel(loaded, target_spec, step_timeout, min(workers, len(cases)), record)
    loaded = corpus.resolve(cases) if corpus is not None else cases
    return iter_serial(loaded, target, info, step_timeout, record)


def _collect(
    out: RunResult,
    cases: list[Case],
    results: Iterator[CaseResult],
    judge: Baseline,
    strict: bool,
    progress: Callable[[CaseResult], None] | None,
    maxfail: int,
    budget: float,
    start: float,
) -> None:
    """The results into ``out``, each judged by the known failures or the baseline, until
    ``maxfail`` cases failed the run or the ``budget`` ran out (``out.stopped``, ``out.not_run``)."""
    failing = 0
    judging = len(judge) > 0  # no entry: Baseline.apply leaves every result as it is
    for case, result in zip(cases, results, strict=False):
        if judging:
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
