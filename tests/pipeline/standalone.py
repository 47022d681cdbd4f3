"""A real Spark standalone cluster (one master, one worker) on loopback, started with spark-class
from the pyspark package and always torn down."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
START_TIMEOUT = 90.0


def spark_env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOCAL_DIRS=str(work / "local"),
        SPARK_WORKER_DIR=str(work / "worker"),
        SPARK_LOG_DIR=str(work / "logs"),
        SPARK_DAEMON_MEMORY="384m",
        SPARK_NO_DAEMONIZE="1",
    )
    return env


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen[bytes], deadline: float) -> re.Match[str]:
    rx = re.compile(pattern)
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        m = rx.search(text)
        if m:
            return m
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited with {proc.returncode}:\n{text[-3000:]}")
        time.sleep(0.2)
    raise TimeoutError(f"no {pattern!r} in {log} within {START_TIMEOUT} s:\n{log.read_text(errors='replace')[-3000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)


@contextmanager
def standalone_cluster(work: Path, cores: int = 2, memory: str = "1g") -> Iterator[str]:
    """Yield the master URL (spark://127.0.0.1:PORT) of a running master with one registered worker."""
    work.mkdir(parents=True, exist_ok=True)
    env = spark_env(work)
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        deadline = time.monotonic() + START_TIMEOUT
        master_log = work / "master.log"
        with master_log.open("wb") as out:
            procs.append(
                subprocess.Popen(
                    [spark_class, "org.apache.spark.deploy.master.Master",
                     "--host", "127.0.0.1", "--port", "0", "--webui-port", "0"],
                    stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                )
            )
        url = _wait_for(master_log, r"Starting Spark master at (spark://127\.0\.0\.1:\d+)", procs[0], deadline).group(1)
        worker_log = work / "worker.log"
        with worker_log.open("wb") as out:
            procs.append(
                subprocess.Popen(
                    [spark_class, "org.apache.spark.deploy.worker.Worker", url,
                     "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                     "--cores", str(cores), "--memory", memory, "--work-dir", str(work / "worker")],
                    stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                )
            )
        _wait_for(worker_log, r"Successfully registered with master", procs[1], deadline)
        yield url
    finally:
        for proc in reversed(procs):
            _stop(proc)
