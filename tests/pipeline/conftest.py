"""Fixtures the pipeline tests share: what several tests need the same of is made once per run,
whichever pytest-xdist worker asks first (the others wait for it and read it).

- ``local2``: the inputs of :func:`pipeline_helpers.make_inputs` (a capture with anomalies, a
  clean one, damaged files, a loopback recording) and their tables from ``local[2]``
  (:func:`pipeline_helpers.local_run`): the reference the cluster tests compare with, and what the
  local[2] test checks.
- ``spark_cache``: the ``XDG_CACHE_HOME`` of the cluster commands, with the dependency archive the
  driver ships (:func:`harness.pipeline.ship.deps_archive`) made in it once.
- ``spark_archive``, ``spark_jvm``: the run's class-data sharing archive of Spark's classes,
  which the first test to ask starts making in the background
  (:func:`standalone.start_class_archive`), and the options of the Spark JVMs the tests start
  (clusters, drivers): the first compiler tier, one GC thread, the archive.  A test asking for
  them waits (:data:`ARCHIVE_WAIT` at most) until the archive is made: mapping it saves about 4 of
  the 10 CPU-seconds a Spark JVM spends starting, and a test run's first JVMs (its clusters, its
  first drivers) would otherwise all start without it.
- ``spark_local``: this worker's Spark JVM, the one every in-process local session runs on
  (PySpark keeps one per process, across sessions), started with those options.

The tests that ask for ``spark_local`` or ``local2`` (whose first caller runs its local[2] job in
process) and belong to no other ``xdist_group`` form one (:data:`IN_PROCESS`): under ``make
test`` they run on one worker, whose Spark JVM serves them all, instead of starting one on each
worker that happens to run one of them (4 JVMs of 5 to 9 CPU-seconds each under ``-n 4``).
"""

from __future__ import annotations

import fcntl
import functools
import os
import pickle
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pipeline_helpers import local_run, make_inputs
from standalone import ARCHIVE_SETTLED, CLASS_ARCHIVE, jvm_options, kept_archive, start_class_archive

from harness.pipeline.cluster import spark_session, stop_session

#: the ``xdist_group`` of the tests that run Spark in process (:func:`spark_local`, :func:`local2`)
IN_PROCESS = "spark-local"


def _in_process(item: pytest.Item) -> bool:
    return bool({"spark_local", "local2"} & set(getattr(item, "fixturenames", ())))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that run Spark in process, in no other group, in :data:`IN_PROCESS` (before
    tests/conftest.py writes the groups where pytest-xdist reads them)."""
    for item in items:
        if _in_process(item) and not any(item.iter_markers("xdist_group")):
            item.add_marker(pytest.mark.xdist_group(IN_PROCESS))


def _run_folder(factory: pytest.TempPathFactory) -> Path:
    """The folder of this run that every xdist worker sees (each worker's base is a child of it)."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], Any]) -> Any:
    """``make(folder)`` run once per test run, in ``<run>/shared-<name>/``; its result is kept
    beside it (pickled) and returned to every later caller, on any worker."""
    folder = _run_folder(factory) / f"shared-{name}"
    done = folder.with_name(folder.name + ".pickle")
    with _locked(folder.with_name(folder.name + ".lock")):
        if not done.exists():
            folder.mkdir(exist_ok=True)
            result = make(folder)
            done.write_bytes(pickle.dumps(result))
    return pickle.loads(done.read_bytes())


def _local2(jvm: str, folder: Path) -> dict[str, Any]:
    inputs = make_inputs(folder / "inputs")
    start_local_jvm(jvm)
    return {"inputs": inputs, "local": str(local_run(inputs, folder / "local"))}


@pytest.fixture(scope="session")
def local2(tmp_path_factory: pytest.TempPathFactory, spark_jvm: str) -> tuple[dict[str, Any], Path]:
    """(inputs, the folder of their local[2] tables); read only: made once for every test (the
    worker that makes them runs them on its :func:`spark_local` JVM)."""
    made = once(tmp_path_factory, "local2", functools.partial(_local2, spark_jvm))
    return made["inputs"], Path(made["local"])


def _deps(folder: Path) -> str:
    from harness.pipeline.ship import deps_archive

    return str(deps_archive(folder / "msmq-harness"))


@pytest.fixture(scope="session")
def spark_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """XDG_CACHE_HOME of the cluster commands: the dependency archive is made there once per run."""
    once(tmp_path_factory, "cache", _deps)
    return _run_folder(tmp_path_factory) / "shared-cache"


#: seconds the test run waits, at its end, for the class archive to be written
ARCHIVE_TIMEOUT = 300
#: seconds a test asking for the class archive waits, at most, for it to be made (then its JVMs
#: load their classes as usual)
ARCHIVE_WAIT = 240
#: tests that start Spark JVMs from which the archive pays back its making (about 25 CPU-seconds,
#: against about 4 saved by each JVM, a test starting two to four of them)
ARCHIVE_PAYS_BACK = 4


def _wait_until_settled(folder: Path) -> None:
    """Until the archive's making, on any worker, has ended (:data:`ARCHIVE_SETTLED`)."""
    deadline = time.monotonic() + ARCHIVE_WAIT
    while not (folder / ARCHIVE_SETTLED).exists() and time.monotonic() < deadline:
        time.sleep(0.2)


def _linked(kept: Path, archive: Path) -> bool:
    """``archive`` made a link to the kept one (or a copy of it), if there is one."""
    try:
        os.link(kept, archive)
    except FileNotFoundError:
        return False
    except OSError:
        try:
            shutil.copyfile(kept, archive)
        except OSError:
            return False
    return True


@pytest.fixture(scope="session")
def spark_archive(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where the run's class archive of Spark's JVMs is (:func:`standalone.class_sharing`), once
    made; the first caller of the run, on any worker, starts making it, and every caller waits
    until it is made (:func:`_wait_until_settled`).  A run of fewer than :data:`ARCHIVE_PAYS_BACK`
    such tests makes none.  An archive a previous run made for the same Java and Spark
    (:func:`standalone.kept_archive`) is taken instead of making one."""
    folder = _run_folder(tmp_path_factory) / "shared-jvm"
    maker = None
    users = sum("spark_archive" in getattr(item, "fixturenames", ()) for item in request.session.items)
    with _locked(folder.with_name(folder.name + ".lock")):
        if not folder.exists():
            folder.mkdir()
            keep = kept_archive()
            if keep is not None and _linked(keep, folder / CLASS_ARCHIVE):
                (folder / ARCHIVE_SETTLED).touch()
            elif users >= ARCHIVE_PAYS_BACK:
                maker = start_class_archive(folder, keep)
            else:
                (folder / ARCHIVE_SETTLED).touch()
    _wait_until_settled(folder)
    yield folder / CLASS_ARCHIVE
    if maker is not None:
        try:
            maker.wait(timeout=ARCHIVE_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(maker.pid, signal.SIGKILL)
            maker.wait(timeout=30)


@pytest.fixture(scope="session")
def spark_jvm(spark_archive: Path) -> str:
    """JVM options of the tests' Spark JVMs (:func:`standalone.jvm_options`)."""
    return jvm_options(spark_archive)


def start_local_jvm(jvm: str) -> None:
    """This process's Spark JVM -- the driver, and the whole engine, of every local session it
    starts: PySpark keeps it across sessions -- started, unless it runs, with the JVM options
    ``jvm`` (``JAVA_TOOL_OPTIONS``) by a session of the pipeline's own (:func:`spark_session`),
    stopped at once."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("JAVA_TOOL_OPTIONS", jvm)
        stop_session(spark_session("local[1]", 1))


@pytest.fixture(scope="session")
def spark_local(spark_jvm: str) -> None:
    """This worker's Spark JVM (:func:`start_local_jvm`) with the options of the tests' other
    Spark JVMs (:func:`standalone.jvm_options`: the class archive, one GC thread).  A test that
    runs a local Spark job in process asks for it first."""
    start_local_jvm(spark_jvm)
