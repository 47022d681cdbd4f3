"""Suite-wide pytest configuration: ``xdist_group`` marks hold under ``--dist loadgroup``.

pytest-xdist (3.8) groups the tests of one ``xdist_group`` by a suffix it writes to
``item._nodeid``; pytest 9 reads the node id from ``item._id``, so the suffix never reaches the
scheduler and a group's tests (and its module fixtures: a Spark cluster, a set of wire runs) are
spread over every worker.  The hook below writes the suffix where pytest 9 reads it.

Under ``--dist loadgroup`` the scheduler hands the tests out in collection order, a group of
more tests before one of fewer (pytest-xdist's ``--loadscope-reorder``: a group of several tests
before single tests): the hook puts the longest tests (:data:`LONGEST`, from ``--durations``)
first among those, so that none of them starts when the others are nearly done and holds the
run up alone.

Where the environment sets ``PYTHONDONTWRITEBYTECODE`` (bytecode kept out of the checkout), the
suite's processes -- the xdist workers, and the hundreds of ``msmq-harness``, ``pytest`` and adapter
processes the tests start -- would each compile every module they import from its source again
(about half the CPU of a command line's start-up).  They keep their bytecode instead in a private
folder outside the checkout (``PYTHONPYCACHEPREFIX``), as benchmarks/bench_cases.py does for the
processes it measures: nothing is written beside the sources, and what they run is unchanged.

SIGINT ignored where the run was started (a background job of a shell without job control) is
given back its default disposition, so the processes the tests interrupt with it can be.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _pytest.nodeid import NodeId

from harness.peers import faults

#: node id prefixes of the longest tests, longest first (``make test``'s ``--durations``); the ones that
#: mostly wait on [MS-MQQB] timers (a corpus's wire runs) stand between ones that keep a core busy
LONGEST = (
    "tests/pipeline/test_pipeline_cluster.py::test_the_documented_cluster_commands_run_as_written",
    "tests/pipeline/test_pipeline_standalone.py::test_standalone_cluster_gives_identical_parquet_to_local2",
    "tests/cases/test_docs_commands_run.py::test_other_command_line_runs",
    "tests/cases/test_docs_commands_run.py::test_command_example_runs[README.md: .venv/bin/msmq-harness run cases/",
    "tests/cases/test_pytest_plugin.py::test_pytest_n2_and_runner_give_the_same_outcomes",
    "tests/packets/test_large_packets.py::test_a_million_direct_elements",
    "tests/cases/test_readings_mqqb.py::",
    "tests/cases/test_never_connects.py::",
    "tests/pipeline/test_output_folders.py::",
    "tests/cases/test_pytest_front_end.py::test_case_files_are_collected_where",
    "tests/fuzz/test_fuzz_no_false_findings.py::",
    "tests/model/test_stateful_oracle.py::test_indexed_model_agrees_with_literal_oracle",
    "tests/fuzz/test_fuzz_sender.py::test_a_crashing_sender_is_found_confirmed_and_written_as_a_case",
    "tests/pipeline/test_parse_once.py::test_spark_analyses_connections_whole_in_a_range",
    "tests/cases/test_wire_cases.py::test_wire_corpus_passes_under_the_pytest_plugin_with_two_workers",
    "tests/pipeline/test_adversarial_splits.py::test_the_spark_job_equals_the_sequential_functions",
    "tests/cases/test_wire_cases.py::test_wire_corpus_passes_under_msmq_harness_run",
    "tests/pipeline/test_pipeline_hadoop.py::test_hadoop_route_gives_the_tables_of_the_local_route",
    "tests/pipeline/test_pipeline_outputs.py::",
    "tests/pipeline/test_pipeline_sparkconf.py::",
    "tests/cases/test_docs_commands_run.py::test_command_example_runs",
    "tests/pipeline/test_memory_bounded.py::test_a_pipeline_worker_holds_the_packets_in_flight",
    "tests/cases/test_plugin_inputs.py::test_a_fifo_or_a_device_among_the_cases",
    "tests/fuzz/test_fuzz_demo.py::",
    "tests/fuzz/test_fuzz_sender.py::test_a_hanging_sender",
    "tests/pipeline/test_pipeline_cluster.py::test_a_master_with_no_worker_ends_within_the_time_given",
    "tests/pipeline/test_hotpath_jit.py::",
)


def _private_folder(folder: Path) -> bool:
    """Is ``folder`` (made if missing) a folder of the current user's that no one else may write to?
    (Bytecode read from a folder others could write to would run their code.)"""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = folder.stat()
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def _bytecode_outside_the_checkout() -> None:
    """Under ``PYTHONDONTWRITEBYTECODE`` (and no ``PYTHONPYCACHEPREFIX`` of the caller's), this
    process and the processes started after it cache bytecode in a private temporary folder."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    if not hasattr(os, "getuid"):  # pragma: no cover - Windows: the environment is left as it is
        return
    top = Path(tempfile.gettempdir()) / f"msmq-harness-{os.getuid()}"
    folder = top / "pycache"
    if not (_private_folder(top) and _private_folder(folder)):
        return
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = str(folder)
    sys.pycache_prefix = str(folder)
    sys.dont_write_bytecode = False
    _forget_gone_sources(folder)


def _forget_gone_sources(folder: Path) -> None:
    """The bytecode of the test runs' temporary folders (adapters, conftests a test writes) that
    pytest has since removed: removed too, so the folder does not grow run after run."""
    mirror = folder / Path(tempfile.gettempdir()).relative_to(Path(tempfile.gettempdir()).anchor)
    for runs in mirror.glob("pytest-of-*"):
        for run in runs.iterdir():
            source = Path(tempfile.gettempdir()) / runs.name / run.name
            if not source.exists():
                shutil.rmtree(run, ignore_errors=True)


_bytecode_outside_the_checkout()


def _interruptible_children() -> None:
    """SIGINT (Ctrl-C) of the processes the tests start has its default disposition.  A test run
    started where SIGINT is ignored (a shell without job control ignores it in the commands it
    puts in the background) would pass that on to every process it starts, and the tests that
    interrupt a command with SIGINT would check how the run was launched, not the command."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


_interruptible_children()


def _rank(item: pytest.Item) -> int:
    return next((n for n, prefix in enumerate(LONGEST) if item.nodeid.startswith(prefix)), len(LONGEST))


def _groups(item: pytest.Item) -> list[str]:
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    return sorted(names)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not getattr(config.option, "loadgroup", False):  # set on the workers of --dist loadgroup
        return
    items.sort(key=_rank)  # stable: the other tests keep their order
    for item in items:
        groups = _groups(item)
        if groups and not item.nodeid.endswith("@" + "_".join(groups)):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(groups)}")  # type: ignore[attr-defined]


@pytest.fixture
def stall_peer_loop(monkeypatch: pytest.MonkeyPatch) -> Callable[[], tuple[threading.Event, threading.Event]]:
    """``stall()`` holds every simulated peer's loop at the start of its next round (before it
    looks at its sockets) until the returned gate opens; the other event is set once it is held:
    lateness made, not waited for."""

    def stall() -> tuple[threading.Event, threading.Event]:
        gate, held = threading.Event(), threading.Event()
        tick = faults.tick

        def stalled(peer: Any) -> None:
            held.set()
            gate.wait(30)
            tick(peer)

        monkeypatch.setattr(faults, "tick", stalled)
        return gate, held

    return stall
