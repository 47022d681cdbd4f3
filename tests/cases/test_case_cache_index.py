"""The case cache's per-file index (harness.cases.cache, issue 23 item 4): collecting a file reads
its cases' index, not its pickled cases, which are read back (or loaded again) only when first
asked for; a file that does not load has neither entry nor index and is still an error at its
line; an entry written without an index (``msmq-harness run``'s) gets one; a filling view (the
pytest plugin's prefetch under pytest-xdist) writes the index and keeps what it loaded; and a
pytest session reads the pickled cases of only the files whose cases it runs.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cases.cache import CaseCache, CaseIndex
from harness.cases.lines import CaseError
from harness.cases.loader import load_file
from tests.cases.casekit import case, plugin_args, write_cases


def _cache(tmp_path: Path) -> CaseCache:
    cache = CaseCache(tmp_path / "cache")
    cache.folder.mkdir()
    return cache


def test_a_file_is_collected_from_its_index_and_its_cases_read_when_asked(tmp_path: Path) -> None:
    write_cases(tmp_path)
    path = tmp_path / "cases" / "extra" / "seek.yaml"
    cache = _cache(tmp_path)
    loaded = load_file(path)
    first = cache.indexing()
    assert load_file(path, cache=first) == []  # the view keeps the file's index instead
    assert first.found is not None and (first.hits, first.misses) == (0, 1)  # loaded, stored with its index
    assert first.found.index == [CaseIndex.of(c) for c in loaded]
    assert [c.full_id for c in first.found.cases()] == [c.full_id for c in loaded]
    (entry,) = cache.folder.glob("*.pickle")
    assert entry.with_suffix(".index").is_file()
    entry.write_bytes(pickle.dumps("torn"))  # read back, this entry is loaded again
    again = cache.indexing()
    load_file(path, cache=again)
    assert again.found is not None and again.found.index == first.found.index
    assert (again.hits, again.misses) == (1, 0)  # the index only: the cases are not read yet
    assert [c.full_id for c in again.found.cases()] == [c.full_id for c in loaded]
    assert (again.hits, again.misses) == (1, 1)  # asked for: read back (torn), so loaded again
    row = again.found.index[0]
    assert row.full_id == loaded[0].full_id and row.line == loaded[0].line and row.level == str(loaded[0].level)
    assert row.requirements == ("P-SEEK-HEAD",) and row.sections == tuple(loaded[0].sections)


def test_a_file_that_does_not_load_has_no_index_and_errs_at_its_line(tmp_path: Path) -> None:
    write_cases(tmp_path)
    bad = tmp_path / "cases" / "bad.yaml"
    bad.write_text(case("x.bad", "m1").replace("seek_available_message_position", "seek_availble"), encoding="utf-8")
    cache = _cache(tmp_path)
    for _ in range(2):
        view = cache.indexing()
        with pytest.raises(CaseError) as raised:
            load_file(bad, cache=view)
        assert str(raised.value).startswith(f"{bad}:10: when[0].event: unknown event 'seek_availble'")
        assert view.found is None
        assert not [p for p in cache.folder.iterdir() if p.suffix in (".pickle", ".index")]


def test_an_entry_stored_without_an_index_gets_one_and_is_read_back(tmp_path: Path) -> None:
    write_cases(tmp_path)
    path = tmp_path / "cases" / "extra" / "seek.yaml"
    cache = _cache(tmp_path)
    stored = load_file(path, cache=cache)  # as msmq-harness run stores it: no index
    assert not list(cache.folder.glob("*.index"))
    view = cache.indexing()
    load_file(path, cache=view)
    assert view.found is not None and (view.hits, view.misses) == (1, 0)  # read back, not loaded
    assert view.found.index == [CaseIndex.of(c) for c in stored]
    assert len(list(cache.folder.glob("*.index"))) == 1


def test_a_filling_view_writes_the_index_and_keeps_the_cases_it_loaded(tmp_path: Path) -> None:
    write_cases(tmp_path)
    path = tmp_path / "cases" / "extra" / "seek.yaml"
    cache = _cache(tmp_path)
    filled = load_file(path, cache=cache.filling())
    (entry,) = cache.folder.glob("*.pickle")
    entry.write_bytes(pickle.dumps("torn"))  # read back, it would be loaded again
    view = cache.indexing()
    load_file(path, cache=view)
    assert view.found is not None and view.found.cases() is filled  # kept: neither read back nor loaded
    assert (view.hits, view.misses) == (1, 0)
    other = cache.indexing()  # handed out once: another asks the cache
    load_file(path, cache=other)
    assert other.found is not None and [c.full_id for c in other.found.cases()] == [c.full_id for c in filled]
    assert other.misses == 1


def _entries_by_file(folder: Path) -> dict[str, Path]:
    """The pickled entry of each case file (named by its first case's id), found by its index."""
    found = {}
    for index in folder.glob("*.index"):
        rows = pickle.loads(index.read_bytes())
        found[rows[0][0]] = index.with_suffix(".pickle")
    return found


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_session_reads_the_cases_of_only_the_files_it_runs(tmp_path: Path, workers: str) -> None:
    write_cases(tmp_path)
    env = {**os.environ, "MSMQ_HARNESS_CASE_CACHE": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "pytest", *plugin_args(), "cases", "-p", "no:cacheprovider", "-q", "-n", workers]
    first = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert first.returncode == 1, first.stdout[-2000:]
    entries = _entries_by_file(tmp_path / "cache")
    assert set(entries) == {"x.pass[peek=False]", "x.error"}  # seek.yaml's and other.yaml's
    for entry in entries.values():
        entry.write_bytes(pickle.dumps("torn"))  # read back, an entry is loaded again and stored anew
    again = subprocess.run(
        [*command, "-k", "x.fail"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert again.returncode == 1 and "1 failed" in again.stdout, again.stdout[-2000:]
    assert pickle.loads(entries["x.error"].read_bytes()) == "torn"  # other.yaml: collected, not run, not read
    assert isinstance(pickle.loads(entries["x.pass[peek=False]"].read_bytes()), list)  # seek.yaml: run, so read
