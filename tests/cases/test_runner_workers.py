"""``run -n N`` from paths (harness.cases.workers.WorkerCorpus): the workers load the files they are
handed (through the case cache) and run them; the parent reorders the results.  The results are
those of loading in the parent and running in one process, case by case and in the same order; a
bad file or a duplicate id is the CaseError ``load_paths`` raises, before any case runs; a target
that cannot be greeted is a ConfigurationError before any case runs; the cases of a worker that
died are errors, one per case."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.cases import loader
from harness.cases.cache import CaseCache
from harness.cases.execute import ConfigurationError
from harness.cases.lines import CaseError
from harness.cases.loader import load_paths
from harness.cases.model import Case
from harness.cases.pool import chunk_spans, longest_first
from harness.cases.runner import run, select
from harness.cases.workers import WorkerCorpus, _shares
from harness.cli import main
from harness.model import QueueManager
from harness.model.adm import Queue
from harness.results import CaseResult, Outcome

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks.bench_cases import _matrix_corpus  # noqa: E402

# The module fixture ``corpus_made`` once: under pytest-xdist --dist loadgroup the module's tests share a worker.
pytestmark = pytest.mark.xdist_group("runner-workers")


def _make_corpus(top: Path) -> Path:
    """Model cases, a matrix corpus and a few quick wire cases, under the folder ``top``."""
    shutil.copytree(ROOT / "cases" / "mqdmpr", top / "mqdmpr")
    (top / "matrix").mkdir()
    _matrix_corpus(top / "matrix", 150)
    for f in (top / "matrix").iterdir():  # the matrix corpus repeats the model ids
        f.write_text(f.read_text().replace("id: dmpr.", "id: matrix."))
    (top / "mqqb").mkdir()
    shutil.copy(ROOT / "cases" / "mqqb" / "acceptor.yaml", top / "mqqb" / "acceptor.yaml")
    shutil.copy(ROOT / "cases" / "requirements.yaml", top / "requirements.yaml")
    return top


@pytest.fixture(scope="module")
def corpus_made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus of :func:`_make_corpus`, made once for the module (the matrix corpus is generated)."""
    return _make_corpus(tmp_path_factory.mktemp("runner-workers") / "cases")


def _corpus(made: Path, tmp_path: Path) -> Path:
    """A copy of the module's corpus in ``tmp_path``, for one test to read and change."""
    return Path(shutil.copytree(made, tmp_path / "cases"))


def _rows(results: list[CaseResult]) -> list[tuple[str, str, Any, str]]:
    return [(r.case_id, str(r.outcome), r.failures, r.detail) for r in results]


@pytest.fixture
def cache(tmp_path: Path) -> CaseCache:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    return CaseCache(folder)


@pytest.mark.parametrize("cached", [True, False])
def test_workers_load_and_run_what_one_process_loads_and_runs(
    corpus_made: Path, tmp_path: Path, cache: CaseCache, cached: bool
) -> None:
    top = _corpus(corpus_made, tmp_path)
    serial = load_paths([top])
    assert len(serial) > 250 and any(c.wire for c in serial)
    known = {serial[3].id, serial[-1].full_id}
    expected = run(serial, "reference", known_failures=known)
    seen: list[str] = []
    with WorkerCorpus([top], 2, cache=cache if cached else None) as corpus:
        assert [(c.full_id, c.source, c.line, c.wire) for c in corpus.cases] == [
            (c.full_id, c.source, c.line, c.wire) for c in serial
        ]
        got = run(
            corpus.cases, "reference", workers=2, known_failures=known, progress=lambda r: seen.append(r.case_id),
            corpus=corpus,
        )  # fmt: skip
    assert _rows(got.results) == _rows(expected.results)
    assert seen == [c.full_id for c in serial]
    assert {str(r.outcome) for r in got.results} == {"passed", "xpass"}
    if cached:
        assert any(cache.folder.glob("*.pickle"))


def test_a_selection_runs_in_the_workers(corpus_made: Path, tmp_path: Path, cache: CaseCache) -> None:
    top = _corpus(corpus_made, tmp_path)
    expected = run(select(load_paths([top]), keyword="purge or acceptor"), "reference")
    with WorkerCorpus([top], 2, cache=cache) as corpus:
        chosen = select(corpus.cases, keyword="purge or acceptor")
        got = run(chosen, "reference", workers=2, corpus=corpus)
    assert len(got.results) > 5
    assert _rows(got.results) == _rows(expected.results)


def _bad_yaml(top: Path) -> str:
    (top / "mqdmpr" / "zz_bad.yaml").write_text("id: x.bad\ntitle: {unclosed\n")
    with pytest.raises(CaseError) as e:
        load_paths([top])
    return str(e.value)


def test_a_bad_file_is_the_error_load_paths_raises_naming_file_and_line(corpus_made: Path, tmp_path: Path) -> None:
    top = _corpus(corpus_made, tmp_path)
    message = _bad_yaml(top)
    assert "zz_bad.yaml:2" in message or "zz_bad.yaml:3" in message
    with pytest.raises(CaseError) as e:
        WorkerCorpus([top], 2)
    assert str(e.value) == message


def test_a_duplicate_id_across_files_is_the_error_load_paths_raises(corpus_made: Path, tmp_path: Path) -> None:
    top = _corpus(corpus_made, tmp_path)
    shutil.copy(top / "mqdmpr" / "purge" / "purge_queue.yaml", top / "mqqb" / "again.yaml")
    with pytest.raises(CaseError) as serial:
        load_paths([top])
    with pytest.raises(CaseError) as e:
        WorkerCorpus([top], 2)
    assert str(e.value) == str(serial.value) and "duplicate case id" in str(e.value)


def test_a_target_that_cannot_be_greeted_stops_the_run_before_any_case(tmp_path: Path) -> None:
    seen: list[CaseResult] = []
    with WorkerCorpus([ROOT / "cases" / "mqdmpr"], 2) as corpus, pytest.raises(ConfigurationError, match="no hello"):
        # test_runner.py's target whose hello fails
        run(corpus.cases, "plugin:test_runner:_NoHello", workers=2, progress=seen.append, corpus=corpus)
    assert seen == []


class _Dies(QueueManager):
    """A queue manager whose process dies when a queue is purged."""

    def purge_queue(self, iQueue: Queue) -> None:
        os._exit(3)


def test_the_cases_of_a_worker_that_died_are_errors_one_per_case() -> None:
    with WorkerCorpus([ROOT / "cases" / "mqdmpr"], 2) as corpus:
        got = run(corpus.cases, f"plugin:{__name__}:_Dies", workers=2, corpus=corpus)
    assert [r.case_id for r in got.results] == [c.full_id for c in corpus.cases]
    loaded = load_paths([ROOT / "cases" / "mqdmpr"])
    lethal = {c.full_id for c in loaded if any(s.event == "purge_queue" for s in c.when)}
    died = [r for r in got.results if r.case_id in lethal]
    assert died and all(r.outcome is Outcome.error and "worker process died" in r.detail for r in died)
    assert any(r.outcome is Outcome.passed for r in got.results)  # the other worker went on


def test_chunks_hold_one_file_each_and_wire_chunks_go_first() -> None:
    model = Case("m", "t", [])
    wire = Case("w", "t", [], given={"peer": {"under_test": "initiator"}})
    cases = [model] * 5 + [wire] + [model] * 30
    files = [0] * 3 + [1] * 3 + [2] * 30
    chunks = chunk_spans(cases, 2, files)
    assert [i for a, b in chunks for i in range(a, b)] == list(range(len(cases)))
    assert all(len({files[i] for i in range(a, b)}) == 1 for a, b in chunks)
    order = longest_first(cases, chunks)
    assert sorted(order) == list(range(len(chunks))) and chunks[order[0]] == (5, 6)


def test_the_command_line_gives_the_report_of_one_worker(
    corpus_made: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    top = _corpus(corpus_made, tmp_path)
    reports = []
    for n in ("1", "2"):
        assert main(["run", str(top), "-n", n, "-k", "not acceptor", "--json", str(tmp_path / f"{n}.json")]) == 0
        results = json.loads((tmp_path / f"{n}.json").read_text())["results"]
        reports.append([(r["case_id"], r["outcome"], r["detail"]) for r in results])
    assert reports[0] == reports[1] and len(reports[0]) > 250
    message = _bad_yaml(top)
    capsys.readouterr()
    assert main(["run", str(top), "-n", "2"]) == 2
    assert message in capsys.readouterr().err


def test_wire_chunks_go_longest_first_by_their_last_durations() -> None:
    model = Case("m", "t", [])
    wire = Case("w", "t", [], given={"peer": {"under_test": "initiator"}})
    cases = [model, wire, wire, wire, model]
    chunks = chunk_spans(cases, 1)
    assert chunks == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]
    order = longest_first(cases, chunks, [None, 0.1, 5.0, 1.0, None])
    assert [chunks[k] for k in order] == [(2, 3), (3, 4), (1, 2), (0, 1), (4, 5)]
    order = longest_first(cases, chunks, [None, 0.1, None, 1.0, None])
    assert [chunks[k][0] for k in order if cases[chunks[k][0]].wire] == [2, 3, 1]  # not known: first


def test_the_cache_keeps_the_last_durations(cache: CaseCache) -> None:
    assert cache.durations() == {}
    cache.record_durations({"a": 1.5, "b": 0.25})
    cache.record_durations({"a": 2.0})
    assert cache.durations() == {"b": 0.25, "a": 2.0}
    (cache.folder / "durations.json").write_text("[not a mapping")
    assert cache.durations() == {}


def test_a_run_records_its_wire_durations_for_the_next(tmp_path: Path, cache: CaseCache) -> None:
    top = tmp_path / "cases"
    top.mkdir()
    shutil.copy(ROOT / "cases" / "mqqb" / "acceptor.yaml", top / "acceptor.yaml")
    shutil.copy(ROOT / "cases" / "requirements.yaml", top / "requirements.yaml")
    with WorkerCorpus([top], 2, cache=cache) as corpus:
        got = run(corpus.cases, "reference", workers=2, corpus=corpus)
    recorded = cache.durations()
    wire = [c for c in corpus.cases if c.wire]
    assert wire and set(recorded) == {f"{c.source}::{c.full_id}" for c in wire}
    assert all(r.outcome is Outcome.passed for r in got.results)


def _record_loads(monkeypatch: pytest.MonkeyPatch, log: Path, lethal: str = "") -> None:
    """Every ``load_file`` call, in whichever process (the workers are forked with it), appends
    ``pid path`` to ``log``; the first process that loads a file named ``lethal`` dies instead."""
    real = loader.load_file

    def load_file(path: Any, **kwargs: Any) -> list[Case]:
        if lethal and Path(path).name == lethal:
            try:
                os.close(os.open(log.with_suffix(".died"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass
            else:
                os._exit(3)
        with log.open("a") as f:
            f.write(f"{os.getpid()} {path}\n")
        return real(path, **kwargs)

    monkeypatch.setattr(loader, "load_file", load_file)


def test_the_parent_reads_no_case_file_each_worker_loads_its_share(
    corpus_made: Path, tmp_path: Path, cache: CaseCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    top = _corpus(corpus_made, tmp_path)
    load_paths([top / "matrix"], cache=cache)  # read back from the cache by the workers; the others loaded
    serial = load_paths([top])
    expected = run(serial, "reference")
    log = tmp_path / "loads.log"
    _record_loads(monkeypatch, log)
    with WorkerCorpus([top], 2, cache=cache) as corpus:
        loads = [line.split(" ", 1) for line in log.read_text().splitlines()]
        assert str(os.getpid()) not in {pid for pid, _ in loads}  # not one file read here
        assert sorted(path for _, path in loads) == sorted(corpus.files)  # each file once, by one worker
        by_pid: dict[str, set[str]] = {}
        for pid, path in loads:
            by_pid.setdefault(pid, set()).add(path)
        assert sorted(map(sorted, by_pid.values())) == sorted(sorted(corpus.files[i] for i in s) for s in corpus.shares)
        got = run(corpus.cases, "reference", workers=2, corpus=corpus)
    assert _rows(got.results) == _rows(expected.results)
    message = _bad_yaml(top)  # a bad file beside cached ones: the same error
    with pytest.raises(CaseError) as e:
        WorkerCorpus([top], 2, cache=cache)
    assert str(e.value) == message


def test_shares_are_made_by_size_before_a_file_is_read() -> None:
    sizes = [100, 10, 300, 50, 60, 0, 200]
    shares = _shares(sizes, 2)
    assert sorted(i for share in shares for i in share) == list(range(len(sizes)))
    assert all(share == sorted(share) for share in shares)  # each in file order
    weights = [sum(sizes[i] for i in share) for share in shares]
    assert max(weights) - min(weights) <= max(sizes) and shares == _shares(sizes, 2)
    assert _shares(sizes, 3)[0] == [2] and _shares([5], 4) == [[0], [], [], []]


def test_the_share_of_a_worker_that_died_while_loading_is_loaded_by_another(
    corpus_made: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    top = _corpus(corpus_made, tmp_path)
    shutil.copy(top / "mqdmpr" / "purge" / "purge_queue.yaml", top / "mqdmpr" / "zz_lethal.yaml")
    text = (top / "mqdmpr" / "zz_lethal.yaml").read_text().replace("id: dmpr.", "id: lethal.")
    (top / "mqdmpr" / "zz_lethal.yaml").write_text(text)
    serial = load_paths([top])
    log = tmp_path / "loads.log"
    _record_loads(monkeypatch, log, lethal="zz_lethal.yaml")
    with WorkerCorpus([top], 2) as corpus:
        assert log.with_suffix(".died").exists() and len(corpus.pool or []) == 1
        assert [(c.full_id, c.source, c.line) for c in corpus.cases] == [(c.full_id, c.source, c.line) for c in serial]
        got = run(corpus.cases, "reference", workers=2, corpus=corpus)
    assert [r.case_id for r in got.results] == [c.full_id for c in serial]
    assert all(r.outcome is Outcome.passed for r in got.results)
