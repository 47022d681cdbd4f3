"""``run -n N`` from paths (harness.cases.workers.WorkerCorpus): the parent pauses its cyclic garbage
collector while it takes in the workers' identities and results, and gives it back as it found it,
whether the run ends, stops early (--maxfail) or was started with the collector off."""

from __future__ import annotations

import gc
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cases.cache import CaseCache
from harness.cases.runner import run
from harness.cases.workers import WorkerCorpus

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cases_dir(tmp_path: Path) -> Path:
    """A few model case files of cases/mqdmpr."""
    top = tmp_path / "cases"
    shutil.copytree(ROOT / "cases" / "mqdmpr" / "purge", top / "purge")
    shutil.copytree(ROOT / "cases" / "mqdmpr" / "transactions", top / "transactions")
    return top


def _cache(tmp_path: Path) -> CaseCache:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700, exist_ok=True)
    return CaseCache(folder)


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_the_collector_is_back_after_the_run_and_paused_while_the_results_come_in(
    cases_dir: Path, tmp_path: Path, collector_on: None
) -> None:
    seen: list[bool] = []
    with WorkerCorpus([cases_dir], 2, cache=_cache(tmp_path)) as corpus:
        assert gc.isenabled()  # the identities taken in: given back
        result = run(corpus.cases, "reference", corpus=corpus, progress=lambda r: seen.append(gc.isenabled()))
    assert result.ran == len(corpus.cases) > 1
    assert seen and not any(seen)
    assert gc.isenabled()


def test_the_collector_is_back_when_the_run_stops_early(cases_dir: Path, tmp_path: Path, collector_on: None) -> None:
    with WorkerCorpus([cases_dir], 2, cache=_cache(tmp_path)) as corpus:
        known = {c.full_id for c in corpus.cases}  # every case a known failure that passes: xpass, fails the run
        result = run(corpus.cases, "reference", corpus=corpus, known_failures=known, maxfail=1)
    assert result.stopped and result.not_run
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off(cases_dir: Path, tmp_path: Path) -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        with WorkerCorpus([cases_dir], 2, cache=_cache(tmp_path)) as corpus:
            run(corpus.cases, "reference", corpus=corpus)
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()
