"""The pipeline on a Spark cluster of more than one host: a standalone master on the host side of
a veth pair and a worker inside a network namespace of its own (tests/pipeline/standalone.py),
whose Python has neither the project nor its packages.  The code and the dependencies travel
with the job; the tables match local[2] row for row; docs/pipeline.md's "Running on a cluster"
lines run as written; a job with no executor, or executors that cannot reach the driver, ends
within the time given with the cause and the fix."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pipeline_helpers import ROOT, SPLIT, capture, table
from standalone import BASE_PYTHON, RemoteCluster, master_only, netns_cluster

from harness.cli import main as cli_main
from harness.pipeline.ship import _dist_files, worker_distributions

HARNESS = str(Path(sys.executable).parent / "msmq-harness")
TIMEOUT = 300

# A namespace cluster per group of tests, one group per pytest-xdist worker (--dist loadgroup): the
# documented commands on one cluster, the other tests of a cluster on another, side by side.  The
# tests that start no namespace cluster run wherever a worker is free.
DOCUMENTED = pytest.mark.xdist_group("spark-cluster")
CLUSTER = pytest.mark.xdist_group("spark-cluster-2")


@pytest.fixture(scope="module")
def cache(spark_cache: Path) -> Path:
    """XDG_CACHE_HOME of the commands (where the dependency archive is made once per run)."""
    return spark_cache


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory, spark_jvm: str) -> Iterator[RemoteCluster]:
    with netns_cluster(tmp_path_factory.mktemp("netns"), jvm=spark_jvm) as cluster:
        yield cluster


def _env(cache: Path, jvm: str) -> dict[str, str]:
    """A shell's environment with no virtual environment activated and nothing of Spark or PySpark set.

    The drivers' JVMs run as the clusters' do (``jvm``, :func:`standalone.jvm_options`, through
    ``JAVA_TOOL_OPTIONS``): the first compiler tier, one GC thread, the run's class archive; a
    driver of a cluster master otherwise spends about 6 of its 15 CPU-seconds in the optimising
    compiler, for a job of seconds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_", "VIRTUAL_ENV", "PYTHON"))}
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    env["XDG_CACHE_HOME"] = str(cache)
    env["JAVA_TOOL_OPTIONS"] = jvm
    return env


def _run(argv: list[str], env: dict[str, str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)


def _same_tables(out: Path, local: Path) -> None:
    for name in ("packets", "sessions", "violations"):
        rows = table(local, name)
        assert rows, name
        assert table(out, name) == rows, name
    summary = json.loads((out / "summary.json").read_text())
    local_summary = json.loads((local / "summary.json").read_text())
    for key in ("frames_read", "packets", "sessions", "violations", "violations_by_rule", "session_outcomes",
                "reconciliation"):
        assert summary[key] == local_summary[key], key


def _executors(cluster: RemoteCluster, app_before: set[str]) -> list[Path]:
    """The executors the worker in the namespace ran for applications started since ``app_before``."""
    apps = [a for a in cluster.work.glob("app-*") if a.name not in app_before]
    return sorted(e for a in apps for e in a.iterdir() if (e / "stderr").exists())


@CLUSTER
def test_the_workers_python_has_neither_the_project_nor_its_packages(remote: RemoteCluster) -> None:
    for module in ("harness", "packets", "construct", "pyarrow"):
        proc = subprocess.run([remote.python, "-c", f"import {module}"], cwd="/", env=remote.env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode != 0 and "No module named" in proc.stderr, module


@CLUSTER
def test_worker_on_another_host_without_the_project_gives_the_tables_of_local2(
    remote: RemoteCluster, cache: Path, spark_jvm: str, local2: tuple[dict[str, Any], Path], tmp_path: Path
) -> None:
    inputs, local = local2
    out = tmp_path / "cluster"
    before = {a.name for a in remote.work.glob("app-*")}
    argv = [HARNESS, "pipeline", *inputs["paths"], "--out", f"file://{out}", "--master", remote.url,
            "--conf", f"spark.driver.host={remote.driver_host}", "--conf", f"spark.pyspark.python={remote.python}",
            "--conf", "spark.executor.memory=512m", "--partitions", "3", "--split-size", str(SPLIT // 2),
            "--ports", inputs["ports"], "--quiet"]
    result = _run(argv, _env(cache, spark_jvm), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    _same_tables(out, local)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["master"] == remote.url and summary["tasks"] != _summary(local)["tasks"]
    assert summary["failed_tasks"] == 0 and summary["lost_executors"] == 0
    executors = _executors(remote, before)
    assert executors, "no executor ran in the namespace"
    log = "".join((e / "stderr").read_text(errors="replace") for e in executors)
    assert f"Driver from {remote.driver_host}:" in log or remote.driver_host in log
    assert "Finished task" in log
    assert all((e / "msmq-harness-deps" / "pyarrow").is_dir() for e in executors)  # what the job shipped


def _cluster_section() -> list[str]:
    """The command lines of docs/pipeline.md's "Running on a cluster" (its bash blocks)."""
    text = (ROOT / "docs" / "pipeline.md").read_text()
    section = text.split("## Running on a cluster", 1)[1].split("\n## ", 1)[0]
    lines = []
    for block in re.findall(r"^ *```bash\n(.*?)^ *```", section, flags=re.M | re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #", 1)[0].strip()
            if line:
                lines.append(line)
    return lines


#: the lines that are not run, and why
NOT_RUN = {
    "python3.11 -m pip install --target worker-deps construct pyarrow": "needs the package index: "
    "worker-deps/ is made from the driver's installed construct and pyarrow instead",
}


@pytest.mark.usefixtures("spark_local")  # its local Spark jobs run in process
@DOCUMENTED
def test_the_documented_cluster_commands_run_as_written(
    remote: RemoteCluster, cache: Path, spark_jvm: str, tmp_path: Path
) -> None:
    lines = _cluster_section()
    assert any("spark-submit" in line for line in lines) and any("msmq-harness pipeline" in line for line in lines)
    shared = tmp_path / "shared"
    (shared / "captures").mkdir(parents=True)
    capture(shared / "captures", "a.pcap", sessions=10, rate=0.5, seed=3)
    capture(shared / "captures", "b.pcap", sessions=6, rate=0.3, seed=4)
    local = tmp_path / "local"
    assert cli_main(["pipeline", str(shared / "captures"), "--out", str(local), "--master", "local[2]", "--quiet"]) == 0
    work = tmp_path / "checkout"  # the checkout's files as the lines name them, and worker-deps/ beside them
    work.mkdir()
    for name in (".venv", "harness", "packets"):
        (work / name).symlink_to(ROOT / name)
    deps = work / "worker-deps"
    for dist in worker_distributions():
        for file, name in _dist_files(dist):
            (deps / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, deps / name)
    env = _env(cache, spark_jvm)
    ran = []
    for line in lines:
        if line in NOT_RUN:
            continue
        line = line.replace("spark://MASTER:7077", remote.url).replace("DRIVER_ADDRESS", remote.driver_host)
        line = line.replace("/shared/", f"{shared}/")
        line = line.replace("python3 -m zipfile", f"{shlex.quote(BASE_PYTHON)} -m zipfile")
        result = subprocess.run(["bash", "-c", line], cwd=work, env=env, capture_output=True, text=True,
                                timeout=TIMEOUT)
        assert result.returncode == 0, f"{line}\n{result.stderr[-4000:]}"
        ran.append(line)
        out = re.search(r"--out (\S+)", line)
        if out:
            _same_tables(Path(out.group(1)), local)
            assert json.loads((Path(out.group(1)) / "summary.json").read_text())["master"] == remote.url
    assert len(ran) == len(lines) - len(NOT_RUN) and set(NOT_RUN) <= set(lines)


def _bounded(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    result = _run(argv, env, cwd)
    return result, time.monotonic() - started


def test_a_master_with_no_worker_ends_within_the_time_given_with_the_cause(
    cache: Path, spark_jvm: str, tmp_path: Path
) -> None:
    path, _manifest = capture(tmp_path, "c.pcap", sessions=4)
    with master_only(tmp_path / "spark", spark_jvm) as url:
        argv = [HARNESS, "pipeline", str(path), "--out", str(tmp_path / "out"), "--master", url,
                "--executor-timeout", "4", "--quiet"]
        result, took = _bounded(argv, _env(cache, spark_jvm), tmp_path)
    assert result.returncode == 3, result.stderr[-3000:]
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("msmq-harness pipeline: no executor ran for 4 s on " + url), message
    for words in ("no worker with the cores and memory", "spark.driver.host", "--executor-timeout"):
        assert words in message
    assert took < 90, took  # 4 s of waiting, with Spark's start and stop
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.partial")]


@CLUSTER
def test_executors_that_cannot_reach_the_driver_end_the_job_within_the_time_given(
    remote: RemoteCluster, cache: Path, spark_jvm: str, tmp_path: Path
) -> None:
    """The driver announced at 127.0.0.1: the executors in the namespace are refused there."""
    path, _manifest = capture(tmp_path, "c.pcap", sessions=4)
    argv = [HARNESS, "pipeline", str(path), "--out", str(tmp_path / "out"), "--master", remote.url,
            "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
            "--executor-timeout", "6", "--quiet"]
    result, took = _bounded(argv, _env(cache, spark_jvm), tmp_path)
    assert result.returncode == 3, result.stderr[-3000:]
    message = result.stderr.strip().splitlines()[-1]
    assert "no executor ran for 6 s" in message and "could not connect back to the driver at 127.0.0.1:" in message
    assert took < 120, took
    assert not (tmp_path / "out").exists()


def _summary(out: Path) -> dict[str, Any]:
    return dict(json.loads((out / "summary.json").read_text()))


def _executor_pids(app: str) -> list[int]:
    """The executor processes (JVMs) of the application ``app`` (started by the test's worker)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in argv and app.encode() in argv:
            found.append(int(proc.name))
    return found


@pytest.mark.usefixtures("spark_local")  # its local Spark jobs run in process
@CLUSTER
def test_an_executor_lost_mid_job_is_retried_and_counted(
    remote: RemoteCluster, cache: Path, spark_jvm: str, tmp_path: Path
) -> None:
    """The executor is killed once it runs the reading stage: Spark starts another, the task
    is retried, the tables are those of local[2], and summary.json counts the failure."""
    path, _manifest = capture(tmp_path, "c.pcap", sessions=300, rate=0.2, seed=8)
    local = tmp_path / "local"
    assert cli_main(["pipeline", str(path), "--out", str(local), "--master", "local[2]", "--quiet"]) == 0
    before = {a.name for a in remote.work.glob("app-*")}
    out = tmp_path / "cluster"
    argv = [HARNESS, "pipeline", str(path), "--out", str(out), "--master", remote.url,
            "--conf", f"spark.driver.host={remote.driver_host}", "--quiet"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=_env(cache, spark_jvm), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    killed: list[int] = []
    try:
        deadline = time.monotonic() + TIMEOUT
        while not killed and proc.poll() is None and time.monotonic() < deadline:
            for app in (a for a in remote.work.glob("app-*") if a.name not in before):
                logs = "".join(e.read_text(errors="replace") for e in app.glob("*/stderr"))
                if re.search(r"Running task \S+ in stage 2\.0", logs):
                    for pid in _executor_pids(app.name):
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
            time.sleep(0.05)
        _stdout, stderr = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    assert killed, "the job ended before its reading stage was seen running"
    assert proc.returncode == 0, stderr[-4000:]
    _same_tables(out, local)
    summary = _summary(out)
    assert summary["failed_tasks"] >= 1 and summary["lost_executors"] >= 1, summary


@CLUSTER
def test_without_the_shipped_dependencies_the_workers_fail_and_the_command_says_why(
    remote: RemoteCluster, cache: Path, spark_jvm: str, tmp_path: Path
) -> None:
    """--no-ship-deps on workers that lack construct: exit 3 with Spark's reason, the task's Python
    error and what to do, not a Java trace."""
    path, _manifest = capture(tmp_path, "c.pcap", sessions=2)
    argv = [HARNESS, "pipeline", str(path), "--out", str(tmp_path / "out"), "--master", remote.url,
            "--conf", f"spark.driver.host={remote.driver_host}", "--no-ship-deps", "--quiet"]
    result = _run(argv, _env(cache, spark_jvm), tmp_path)
    assert result.returncode == 3, result.stderr[-3000:]
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("msmq-harness pipeline: the Spark job failed: "), message
    assert "No module named 'construct'" in message and "Running on a cluster" in message, message
    assert "Traceback" not in result.stderr.split("msmq-harness pipeline:")[-1]
    assert not (tmp_path / "out").exists()


def test_a_master_that_cannot_be_reached_exits_3_before_spark_starts(
    cache: Path, spark_jvm: str, tmp_path: Path
) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path, _manifest = capture(tmp_path, "c.pcap", sessions=2)
    url = f"spark://127.0.0.1:{port}"
    result, took = _bounded([HARNESS, "pipeline", str(path), "--out", str(tmp_path / "out"), "--master", url,
                             "--quiet"], _env(cache, spark_jvm), tmp_path)
    assert result.returncode == 3, result.stderr[-3000:]
    assert result.stderr.strip() == (
        f"msmq-harness pipeline: cannot connect to the Spark master {url} (127.0.0.1:{port}: Connection refused): "
        "start the master, or give its URL as its log says it (Starting Spark master at spark://HOST:PORT)"
    )
    assert took < 30, took  # not Spark's minute of retries
    assert not (tmp_path / "out").exists()
