"""A cache of loaded case files, shared by the processes of a run and by later runs.

Loading a case file (YAML composition, the schema and the semantic checks of docs/cases.md:
harness.cases.loader) costs about a millisecond per case; under pytest-xdist every worker collects
every file.  The cases of a file that has not changed are read back instead, pickled, from a
folder of the current user's.  An entry is keyed by the file (its path as given and resolved, and
a digest of its text: a rewrite within the file system's timestamp granularity is still seen),
the requirement list its citations resolve against (path and digest), every event the loader
accepts, and a fingerprint of what loading depends on: the schema with the action registry, the
model's spec events and their parameters, the sources of ``harness.cases`` and the Python version.
A file that one process is loading is waited for, not loaded again, by another (one ``flock`` per
entry where the platform has it).  Only files that load without error are stored; an error is
found again on every load, with its file and line.  Entries not written for two weeks are removed
when a process first opens the cache.  ``durations.json`` keeps the seconds each wire case took
when it last ran, so that ``run -n N`` hands out the longest first.

The folder is ``$MSMQ_HARNESS_CASE_CACHE`` (``off`` disables the cache), else
``msmq-harness-<uid>/cases`` in the system's temporary folder.  A folder that another user owns,
or that others may write to, is not used: its pickles are not trusted.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import pickle
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.cases import eventnames, schema
from harness.cases.model import Case
from harness.errors import HarnessError

__all__ = ["ENV", "CaseCache", "NotCached", "fingerprint"]

ENV = "MSMQ_HARNESS_CASE_CACHE"
MAX_AGE_DAYS = 14  # an entry not written for this long is removed (CaseCache.prune)
DURATIONS = "durations.json"  # seconds the wire cases took when they last ran, by case
MAX_DURATIONS = 10_000


@functools.cache
def fingerprint() -> str:
    """A digest of everything besides the file that the cases loaded from it depend on."""
    digest = hashlib.sha256()
    digest.update(sys.version.encode())
    digest.update(json.dumps(schema.schema(), sort_keys=True).encode())
    digest.update(repr(sorted(eventnames.spec_events())).encode())
    digest.update(repr(sorted((e, eventnames.event_parameters(e)) for e in eventnames.spec_events())).encode())
    package = Path(schema.__file__).parent
    for source in sorted([*package.glob("*.py"), schema.SCHEMA_PATH]):
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` for the block (none where ``fcntl`` is missing)."""
    try:
        import fcntl  # POSIX only: an optional platform module
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with path.open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _private(folder: Path) -> bool:
    """Is ``folder`` a folder of the current user's that no one else may write to?"""
    try:
        st = folder.stat()
    except OSError:
        return False
    mine = not hasattr(os, "getuid") or st.st_uid == os.getuid()
    return stat.S_ISDIR(st.st_mode) and mine and not st.st_mode & 0o022


class CaseCache:
    """Loaded cases by file, pickled in ``folder`` (see the module's docstring)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.hits = 0
        self.misses = 0

    @classmethod
    def default(cls) -> CaseCache | None:
        """The cache of ``$MSMQ_HARNESS_CASE_CACHE`` or of the temporary folder; None when it is
        ``off`` or the folder cannot be made private."""
        setting = os.environ.get(ENV, "")
        if setting.lower() in ("off", "0", "no", "false", "none"):
            return None
        if setting:
            folder = Path(setting)
        else:
            uid = os.getuid() if hasattr(os, "getuid") else os.getpid()
            folder = Path(tempfile.gettempdir()) / f"msmq-harness-{uid}" / "cases"
        made = (folder,) if setting else (folder.parent, folder)
        try:
            for part in made:
                part.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:
            return None
        if not all(_private(part) for part in made):
            return None
        cache = cls(folder)
        cache.prune()
        return cache

    def prune(self, days: float = MAX_AGE_DAYS) -> None:
        """Remove the entries (and their locks) not written for ``days``: a changed file or
        harness leaves its old entries behind."""
        horizon = time.time() - days * 86400
        with contextlib.suppress(OSError), os.scandir(self.folder) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.name.endswith((".pickle", ".lock", ".tmp")) and entry.stat().st_mtime < horizon:
                        os.unlink(entry.path)

    def key(self, parts: tuple[Any, ...]) -> str:
        """The entry name of a file described by ``parts`` (the loader's: path, text digest,
        requirement list, events)."""
        return hashlib.sha256(repr((fingerprint(), parts)).encode()).hexdigest()

    def _read(self, entry: Path) -> list[Case] | None:
        try:
            with entry.open("rb") as f:
                cases = pickle.load(f)
        except Exception:  # none yet, or a torn or stale entry: load the file again
            return None
        return cases if isinstance(cases, list) else None

    def _write(self, entry: Path, cases: list[Case]) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=entry.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(cases, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, entry)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def durations(self) -> dict[str, float]:
        """Seconds each case took when it last ran (:meth:`record_durations`), by the key the runner
        gives it; {} when none were recorded or the file cannot be read."""
        try:
            data = json.loads((self.folder / DURATIONS).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {str(k): float(v) for k, v in data.items() if isinstance(v, (int, float))}

    def record_durations(self, durations: Mapping[str, float]) -> None:
        """Keep ``durations`` (key -> seconds) for the next run, which hands out the longest cases
        first (harness.cases.workers.WorkerCorpus); the most recent :data:`MAX_DURATIONS` are kept."""
        merged = self.durations()
        for key, seconds in durations.items():
            merged.pop(key, None)
            merged[key] = round(seconds, 4)
        kept = dict(list(merged.items())[-MAX_DURATIONS:])
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=DURATIONS, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(kept, handle)
            os.replace(tmp, self.folder / DURATIONS)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def read_only(self) -> CaseCache:
        """A view of this cache that reads its entries and raises :class:`NotCached` for a file it
        does not hold, instead of loading the file (harness.cases.workers.WorkerCorpus)."""
        return _ReadOnly(self.folder)

    def filling(self) -> CaseCache:
        """A view of this cache that loads and stores a file it does not hold and reads back none
        that it holds (its ``load`` returns [] for those): a process filling the cache for others
        (the pytest plugin's prefetch under pytest-xdist) does not unpickle what it will not use."""
        return _Filling(self.folder)

    def load(self, parts: tuple[Any, ...], loader: Callable[[], list[Case]]) -> list[Case]:
        """The cases stored under ``parts``, else ``loader()`` (stored when it returns)."""
        entry = self.folder / f"{self.key(parts)}.pickle"
        cases = self._read(entry)
        if cases is not None:
            self.hits += 1
            return cases
        return self._load_locked(entry, self._read, loader)

    def _load_locked(
        self, entry: Path, stored: Callable[[Path], list[Case] | None], loader: Callable[[], list[Case]]
    ) -> list[Case]:
        """With the entry's lock held: ``stored(entry)`` when another process stored it meanwhile,
        else ``loader()``, stored."""
        with contextlib.ExitStack() as stack:
            with contextlib.suppress(OSError):
                stack.enter_context(_locked(entry.with_suffix(".lock")))
            cases = stored(entry)
            if cases is not None:
                self.hits += 1
                return cases
            self.misses += 1
            cases = loader()
            self._write(entry, cases)
            return cases


class NotCached(HarnessError, LookupError):
    """The cache holds no entry for the file (raised by :meth:`CaseCache.read_only` views)."""


class _ReadOnly(CaseCache):
    def load(self, parts: tuple[Any, ...], loader: Callable[[], list[Case]]) -> list[Case]:
        cases = self._read(self.folder / f"{self.key(parts)}.pickle")
        if cases is None:
            raise NotCached(parts[0])
        self.hits += 1
        return cases


class _Filling(CaseCache):
    def load(self, parts: tuple[Any, ...], loader: Callable[[], list[Case]]) -> list[Case]:
        entry = self.folder / f"{self.key(parts)}.pickle"
        if entry.exists():
            self.hits += 1
            return []
        return self._load_locked(entry, lambda e: [] if e.exists() else None, loader)
