"""``run -n N`` from paths (harness.cases.workers.WorkerCorpus): the chunks a run hands out.  A chunk
of model cases holds cases of the files one worker loaded, in case order, so that a worker reads
back no file another worker loaded (the shares interleave: the files go out largest first, each
to the worker with the fewest bytes), but for the chunks it takes over at the end of the run; a
wire case is a chunk of its own; the results still come back in case order."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.cases.cache import CaseCache
from harness.cases.loader import load_paths
from harness.cases.model import Case, SpecRef
from harness.cases.pool import CHUNK
from harness.cases.runner import run
from harness.cases.workers import WorkerCorpus, _Dispatch, _owned_chunks

ROOT = Path(__file__).resolve().parents[2]


def _case(n: int, wire: bool = False) -> Case:
    given = {"peer": {"behaviour": "conformant"}} if wire else {}
    return Case(id=f"c{n}", title=f"case {n}", spec=[SpecRef("MS-MQDMPR 3.1.7.1.1")], given=given)


def test_a_model_chunk_holds_one_owner_s_cases_in_case_order_and_a_wire_case_is_alone() -> None:
    owners = [0, 1, 0, 0, 1, 1, 0, 1] * 40 + [0] * 3
    cases = [_case(n, wire=n in (5, 100)) for n in range(len(owners))]
    chunks = _owned_chunks(cases, owners, 2)
    assert sorted(i for chunk in chunks for i in chunk) == list(range(len(cases)))  # each case once
    assert [chunk[0] for chunk in chunks] == sorted(chunk[0] for chunk in chunks)  # by their first case
    size = min(CHUNK, len(cases) // 16)
    for chunk in chunks:
        if cases[chunk[0]].wire:
            assert len(chunk) == 1
            continue
        assert not any(cases[i].wire for i in chunk) and len({owners[i] for i in chunk}) == 1
        assert chunk == sorted(chunk) and len(chunk) <= size
    for owner in (0, 1):  # each owner's cases fill its chunks in turn: only its last is short
        mine = [chunk for chunk in chunks if not cases[chunk[0]].wire and owners[chunk[0]] == owner]
        expected = [i for i, o in enumerate(owners) if o == owner and i not in (5, 100)]
        assert [i for chunk in mine for i in chunk] == expected
        assert all(len(chunk) == size for chunk in mine[:-1])


def _corpus(tmp_path: Path) -> Path:
    top = tmp_path / "cases"
    shutil.copytree(ROOT / "cases" / "mqdmpr", top / "mqdmpr")
    (top / "mqqb").mkdir()
    shutil.copy(ROOT / "cases" / "mqqb" / "acceptor.yaml", top / "mqqb" / "acceptor.yaml")
    shutil.copy(ROOT / "cases" / "requirements.yaml", top / "requirements.yaml")
    return top


def test_each_chunk_of_a_run_is_of_the_files_its_worker_loaded(tmp_path: Path) -> None:
    top = _corpus(tmp_path)
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    serial = run(load_paths([top]), "reference")
    with WorkerCorpus([top], 2, cache=CaseCache(folder)) as corpus:
        assert all(corpus.shares)  # both workers loaded files: the shares interleave in file order
        plan = _Dispatch(corpus, corpus.cases, ("reference", 10.0, None))
        loaded_by = {i: id(w) for w in corpus.workers for i in corpus.shares[corpus.workers.index(w)]}
        for chunk in plan.chunks:
            if corpus.cases[chunk[0]].wire:
                assert len(chunk) == 1
            else:
                assert len({loaded_by[plan.where[i][0]] for i in chunk}) == 1
        assert any(len({plan.where[i][0] for i in chunk}) > 1 for chunk in plan.chunks)  # a chunk spans files
        got = run(corpus.cases, "reference", workers=2, corpus=corpus)
    assert [(r.case_id, r.outcome, r.failures, r.detail) for r in got.results] == [
        (r.case_id, r.outcome, r.failures, r.detail) for r in serial.results
    ]
