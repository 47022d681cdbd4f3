"""The Spark side of the capture pipeline's driver: the session (its network and Python settings
from Spark's own configuration, the code shipped to a cluster's workers) and the watch kept on a
running job (progress per stage, executors that never come, tasks retried and executors lost).

The tasks run the [MS-MQQB] 2.1.1 / [MS-MQMQ] 2.2.19.1 decoding and the [MS-MQQB] 3.1 observer of
:mod:`harness.pipeline.job`; nothing here knows the protocol.

A ``local[...]`` master (the embedded default) runs its Python workers on this machine: the
driver is pinned to loopback, and the workers run this interpreter with this checkout on their
path.  Any other master is a cluster: no address is set (Spark's ``spark.driver.host``,
``spark.driver.bindAddress``, ``SPARK_LOCAL_IP``, ``spark-defaults.conf`` and ``--conf`` decide),
the workers run their own Python (``spark.pyspark.python`` or ``PYSPARK_PYTHON``, else
``python3``), and the project (:func:`harness.pipeline.ship.project_zip`) and, unless told not
to, its dependencies (:func:`harness.pipeline.ship.deps_archive`) travel with the job.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.pipeline.errors import PipelineError
from harness.pipeline.ship import DEPS_FOLDER, default_cache, deps_archive, project_zip

__all__ = [
    "DEFAULT_EXECUTOR_TIMEOUT",
    "JobWatch",
    "MasterUnreachable",
    "NoExecutors",
    "check_master",
    "is_local_master",
    "spark_session",
]

ROOT = Path(__file__).resolve().parent.parent.parent
#: seconds a running job may go without any executor before it is abandoned
DEFAULT_EXECUTOR_TIMEOUT = 90.0


def is_local_master(master: str) -> bool:
    return master.startswith("local")


def _defaults_master() -> str:
    """``spark.master`` of the ``spark-defaults.conf`` spark-submit would read, or ""."""
    folder = os.environ.get("SPARK_CONF_DIR") or (
        os.path.join(os.environ["SPARK_HOME"], "conf") if os.environ.get("SPARK_HOME") else ""
    )
    if not folder:
        try:
            import pyspark  # pyspark: optional heavy dependency (the spark extra), only to find its conf folder

            folder = os.path.join(os.path.dirname(pyspark.__file__), "conf")
        except ImportError:  # pragma: no cover
            return ""
    try:
        with open(os.path.join(folder, "spark-defaults.conf"), encoding="utf-8") as f:
            for line in f:
                words = line.split(None, 1)
                if len(words) == 2 and words[0] == "spark.master":
                    return words[1].strip()
    except OSError:
        return ""
    return ""


#: the driver JVM's options for a local master (``--conf spark.driver.extraJavaOptions`` replaces them)
LOCAL_DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"


def spark_session(
    master: str | None,
    partitions: int,
    app: str = "msmq-harness pipeline",
    conf: dict[str, str] | None = None,
    ship_deps: bool = True,
) -> Any:
    """A SparkSession for the pipeline.  ``conf`` (``--conf KEY=VALUE``) is applied last, over
    the pipeline's own settings; ``master`` over ``spark.master`` of ``conf``, then of
    spark-submit's configuration, then ``local[*]``."""
    try:
        # pyspark: imported only when a Spark job runs; `msmq-harness run` must not pay for the JVM bridge
        from pyspark.sql import SparkSession
    except ImportError as e:  # pragma: no cover - pyspark is an optional dependency
        raise PipelineError("pyspark is not installed (pip install 'msmq-harness[spark]')") from e
    user = dict(conf or {})
    if master:
        user["spark.master"] = master
    chosen = _chosen_master(user)
    local = is_local_master(chosen if chosen is not None else _submitted_master())
    settings, env = _session_settings(user, chosen, partitions, local, ship_deps)
    if chosen:
        check_master(chosen)
    builder = SparkSession.builder.appName(app)
    for k, v in settings.items():
        builder = builder.config(k, v)
    with _environ(env):
        spark = builder.getOrCreate()
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    if not is_local_master(str(sc.master)):
        try:
            _ship(sc, ship_deps)
        except BaseException:
            spark.stop()
            raise
    return spark


def _chosen_master(user: dict[str, str]) -> str | None:
    """``spark.master`` of the user's settings; else, under spark-submit, None (it set the master);
    else that of spark-submit's configuration, else ``local[*]``."""
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit set the master
    return user.get("spark.master") or (None if under_submit else _defaults_master() or "local[*]")


def _session_settings(
    user: dict[str, str], chosen: str | None, partitions: int, local: bool, ship_deps: bool
) -> tuple[dict[str, str], dict[str, str]]:
    """The session's settings (the pipeline's own, the user's over them) and the environment for
    the session's start only (PySpark reads it then)."""
    own: dict[str, str] = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.compression.codec": "snappy",
    }
    if chosen:
        own["spark.master"] = chosen
    if partitions:
        own["spark.sql.shuffle.partitions"] = str(partitions)
    env: dict[str, str] = {}
    if user.get("spark.pyspark.python"):  # PySpark starts its workers with PYSPARK_PYTHON
        env["PYSPARK_PYTHON"] = user["spark.pyspark.python"]
    if local:
        own.update(_local_workers(env))
    settings = {**own, **user}
    if not local and ship_deps:  # the dependency archive's folder (in each executor's working folder)
        given = user.get("spark.executorEnv.PYTHONPATH", "")
        settings["spark.executorEnv.PYTHONPATH"] = os.pathsep.join(p for p in (DEPS_FOLDER, given) if p)
    return settings, env


def _local_workers(env: dict[str, str]) -> dict[str, str]:
    """The settings of a local master, whose workers are this machine's: loopback, this
    interpreter, this checkout (``SPARK_LOCAL_IP`` and ``PYSPARK_PYTHON`` set in ``env``)."""
    env["SPARK_LOCAL_IP"] = os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")
    python = env["PYSPARK_PYTHON"] = env.get("PYSPARK_PYTHON") or os.environ.get("PYSPARK_PYTHON") or sys.executable
    return {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.executorEnv.PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
        "spark.executorEnv.PYSPARK_PYTHON": python,
        "spark.pyspark.python": python,
        # the driver JVM (the whole engine when local) compiles with C1 only: its hot code is
        # the shuffle's, small beside the Python workers, and C2's compiling cost a third of the
        # CPU of a local run's start-up and a fifth of a 200 MB run's; and it collects its
        # garbage with one thread: it holds little, and the parallel collector's threads cost
        # about a CPU-second of a run (docs/performance.md)
        "spark.driver.extraJavaOptions": f"{LOCAL_DRIVER_JAVA_OPTIONS} -XX:+UseSerialGC",
        # the Python workers import pyspark from this interpreter's copy, not from Spark's zips
        # (compiled from source by every worker): harness.pipeline.workerdaemon
        "spark.python.daemon.module": "harness.pipeline.workerdaemon",
    }


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    """``values`` in the environment, then the environment as it was."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _submitted_master() -> str:
    """The master spark-submit was given (its JVM is running: read from its configuration)."""
    from pyspark import SparkConf, SparkContext  # pyspark: optional heavy dependency, imported only under spark-submit

    SparkContext._ensure_initialized()
    return str(SparkConf().get("spark.master", "") or "")


def _ship(sc: Any, ship_deps: bool) -> None:
    """The project (and its dependencies) added to the job, from a temporary folder removed by
    :func:`stop_session`."""
    folder = Path(tempfile.mkdtemp(prefix="msmq-harness-ship-"))
    _SHIPPED[id(sc)] = folder
    sc.addPyFile(str(project_zip(folder)))
    if ship_deps:
        try:
            archive = deps_archive(default_cache())
        except OSError:  # no writable cache: one for this run
            archive = deps_archive(folder)
        sc.addArchive(f"{archive}#{DEPS_FOLDER}")


_SHIPPED: dict[int, Path] = {}


def stop_session(spark: Any) -> None:
    """Stop the session and remove what it shipped."""
    key = id(spark.sparkContext)
    try:
        spark.stop()
    finally:
        folder = _SHIPPED.pop(key, None)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


class NoExecutors(HarnessError):
    """A job had no executor for longer than the time allowed."""


class MasterUnreachable(HarnessError):
    """No master of a ``spark://`` URL accepts a connection."""


#: seconds to wait for a standalone master to accept a connection
MASTER_CONNECT_TIMEOUT = 10.0


def check_master(master: str) -> None:
    """For ``spark://host:port[,host:port...]``: at least one master accepts a TCP connection
    (else :class:`MasterUnreachable`, at once, not after Spark's minute of retries)."""
    if not master.startswith("spark://"):
        return
    problems = []
    for hostport in master[len("spark://") :].split(","):
        host, _, port = hostport.rpartition(":")
        host = host.strip("[]")
        try:
            with socket.create_connection((host, int(port)), timeout=MASTER_CONNECT_TIMEOUT):
                return
        except (OSError, ValueError) as e:
            problems.append(f"{hostport}: {getattr(e, 'strerror', None) or e}")
    raise MasterUnreachable(
        f"cannot connect to the Spark master {master} ({'; '.join(problems)}): start the master, or give its "
        "URL as its log says it (Starting Spark master at spark://HOST:PORT)"
    )


#: what each stage of the pipeline's jobs does, by job group and place (map stages, the result stage)
STAGE_LABELS = {
    ("msmq-first-pass", "map"): "first pass: read each range's connection keys",
    ("msmq-first-pass", "result"): "first pass: connections more than one range holds",
    ("msmq-analyse", "map"): "read ranges, decode frames, analyse connections whole in a range",
    ("msmq-analyse", "result"): "reassemble shuffled connections, decode packets, observe, write Parquet",
}


@dataclass
class JobWatch:
    """A thread that polls Spark's status tracker while the pipeline's jobs run: progress bars
    named after the stages (:data:`STAGE_LABELS`), the tasks that failed (each retried, or the
    job failed), the executors that went away, and -- on a cluster -- a job that has had no
    executor for ``timeout`` seconds: its jobs are cancelled and :attr:`stalled` says why."""

    sc: Any
    progress: bool
    timeout: float = DEFAULT_EXECUTOR_TIMEOUT
    poll: float = 0.3
    failed_tasks: int = 0
    lost_executors: int = 0
    stalled: str = ""
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _failed: dict[int, int] = field(default_factory=dict)
    _seen: set[str] = field(default_factory=set)

    @property
    def cluster(self) -> bool:
        return not is_local_master(str(self.sc.master))

    def __enter__(self) -> JobWatch:
        if self.progress or self.cluster:  # else nothing to show or wait for: the failures are counted at the end
            self._thread = threading.Thread(target=self._run, name="pipeline-watch", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        with contextlib.suppress(Exception):  # the context is gone: what was counted stands
            self._tally(self.sc.statusTracker())

    def _labels(self, tracker: Any) -> dict[int, str]:
        labels: dict[int, str] = {}
        for group in ("msmq-first-pass", "msmq-analyse"):
            for job in tracker.getJobIdsForGroup(group):
                info = tracker.getJobInfo(job)
                if info is None or not info.stageIds:
                    continue
                last = max(info.stageIds)
                for stage in info.stageIds:
                    labels[stage] = STAGE_LABELS[group, "result" if stage == last else "map"]
        return labels

    def _tally(self, tracker: Any) -> None:
        for group in ("msmq-first-pass", "msmq-analyse"):
            for job in tracker.getJobIdsForGroup(group):
                info = tracker.getJobInfo(job)
                for stage in info.stageIds if info is not None else []:
                    s = tracker.getStageInfo(stage)
                    if s is not None:
                        self._failed[stage] = max(self._failed.get(stage, 0), s.numFailedTasks)
        self.failed_tasks = sum(self._failed.values())

    def _executors(self, tracker: Any) -> int:
        """Executors now (the driver is listed too); those listed before and gone are counted lost.
        An executor is known by its block manager's address (port 0 until it has registered)."""
        infos = tracker.getExecutorInfos()
        now = {f"{e.host}:{e.port}" for e in infos if e.port}
        self.lost_executors += len(self._seen - now)
        self._seen = now
        return max(len(infos) - 1, 0)

    def _run(self) -> None:
        try:
            self._watch()
        except Exception as e:  # never the reason a job fails; say why the watch stopped
            if not self._stop.is_set():
                print(f"msmq-harness pipeline: job watch stopped: {e}", file=sys.stderr)

    def _watch(self) -> None:
        tracker = self.sc.statusTracker()
        cluster = self.cluster
        since: float | None = None
        with _Bars(self.progress) as bars:
            while not self._stop.wait(self.poll):
                labels = self._labels(tracker)
                for stage_id in sorted({*labels, *tracker.getActiveStageIds()}):  # those done between polls too
                    info = tracker.getStageInfo(stage_id)
                    if info is not None:
                        bars.show(stage_id, labels.get(stage_id, info.name), info.numTasks, info.numCompletedTasks)
                        self._failed[stage_id] = max(self._failed.get(stage_id, 0), info.numFailedTasks)
                if not cluster:
                    continue
                busy = bool(tracker.getActiveJobsIds())
                if self._executors(tracker) or not busy:
                    since = None
                    continue
                since = since if since is not None else time.monotonic()
                if time.monotonic() - since >= self.timeout:
                    self.stalled = no_executor_message(self.sc, f"no executor ran for {self.timeout:g} s")
                    self.sc.cancelAllJobs()
                    return
            labels = self._labels(tracker)
            for stage_id in sorted({*labels, *bars.bars}):
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    bars.show(stage_id, labels.get(stage_id, info.name), info.numTasks, info.numCompletedTasks)


class _Bars:
    """rich progress bars, one per stage (nothing when disabled)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bars: dict[int, Any] = {}
        self._progress: Any = None

    def __enter__(self) -> _Bars:
        if self.enabled:
            # rich.progress: only for a job's progress bars; importing it costs `msmq-harness` start-up 20 ms
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()
            )
            self._progress.__enter__()
        return self

    def show(self, stage: int, label: str, total: int, done: int) -> None:
        if self._progress is None:
            return
        if stage not in self.bars:
            self.bars[stage] = self._progress.add_task(f"stage {stage}: {label}", total=total)
        self._progress.update(self.bars[stage], completed=done)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(None, None, None)


def no_executor_message(sc: Any, what: str) -> str:
    """``what`` happened on the cluster, its two causes and their fixes."""
    conf = sc.getConf()
    host = conf.get("spark.driver.host", "?")
    port = conf.get("spark.driver.port", "?")
    app = conf.get("spark.app.id", "?")
    return (
        f"{what} on {sc.master} (application {app}): either the master "
        "has no worker with the cores and memory this application asks for (start a worker, or lower "
        "--conf spark.executor.memory / spark.executor.cores), or executors were started but could not "
        f"connect back to the driver at {host}:{port} (give an address of this machine the workers reach: "
        "--conf spark.driver.host=ADDRESS, or SPARK_LOCAL_IP=ADDRESS; open the driver's ports); the master's "
        "web UI and the workers' logs (work/app-*/*/stderr) say which; --executor-timeout sets the wait"
    )


def run_watched(watch: JobWatch, group: str, action: Callable[[], Any]) -> Any:
    """``action`` (a Spark action) run in the job group ``group``; :class:`NoExecutors` when the
    watch cancelled it."""
    sc = watch.sc
    sc.setJobGroup(group, STAGE_LABELS[group, "result"], interruptOnCancel=False)
    try:
        return action()
    except Exception:
        if watch.stalled:
            raise NoExecutors(watch.stalled) from None
        raise
    finally:
        with contextlib.suppress(Exception):  # a context Spark stopped
            sc.setLocalProperty("spark.jobGroup.id", None)
