"""The capture pipeline as a PySpark job: captures in, Parquet tables of MSMQ packets, sessions and
[MS-MQQB] 3.1 rule violations out.

Stages: the driver lists the inputs and plans tasks (harness.pipeline.plan ,
:func:`harness.pipeline.splits.plan_tasks`: large classic pcap files cut into byte ranges, small
files packed); each task (harness.pipeline.tasks) reads its ranges
(inputs on other file systems -- ``hdfs://``, ``s3a://``, ... -- are listed through the Hadoop
FileSystem API and read whole by ``binaryFiles``, :mod:`harness.pipeline.hadoop`) and decodes
frames to TCP segments on the MSMQ ports ([MS-MQQB] 2.1.1); the segments are shuffled by TCP
connection (input file and bidirectional 5-tuple); each connection is reassembled, decoded
by [MS-MQMQ] 2.2.19.1 BaseHeader.PacketSize with ``packets.parse(strict=False)`` and checked by
the passive session observer (:func:`harness.pipeline.flows.flow_rows`, the functions of
``msmq-harness decode``), and each shuffle partition writes its rows with pyarrow as one Parquet
file per table (so the output folder must be reachable from every executor: a local folder, a
shared file system on a cluster, or a folder on a file system pyarrow writes,
:mod:`harness.pipeline.outputs`).  The Spark session, the code shipped to a cluster and the watch
kept on the jobs are :mod:`harness.pipeline.cluster`'s.  Outputs in the output folder: ``packets/``, ``sessions/``,
``violations/`` (Parquet), ``summary.json`` (counts, violations per rule and per peer, and per
input the reconciliation frames read = frames decoded + frames rejected, with every capture
problem and its offset) and ``report.txt``.

summary.json also says how much was shuffled: ``read_task_segments`` / ``read_task_bytes`` (TCP
segments on the MSMQ ports, and their payload bytes, of the connections analysed by the task that
read them), ``shuffled_segments`` / ``shuffled_bytes`` (those handed to the shuffle: the
connections more than one range holds, ``shuffled_connections`` of them, and every segment of an
input read through the Hadoop layer), and ``first_pass_seconds`` (the wall time of the first,
light pass that finds the connections to shuffle; 0 when there is none).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from operator import add
from pathlib import Path
from typing import Any

from harness.outdir import OutputError, StagedOutput, refusal
from harness.pipeline.cluster import (
    DEFAULT_EXECUTOR_TIMEOUT,
    JobWatch,
    MasterUnreachable,
    NoExecutors,
    run_watched,
    spark_session,
    stop_session,
)
from harness.pipeline.errors import ClusterError, PipelineError
from harness.pipeline.flows import DEFAULT_PORTS
from harness.pipeline.hadoop import input_spec, list_inputs
from harness.pipeline.outputs import FsFolder, OutError, OutTarget, RemoteStagedOutput, out_target
from harness.pipeline.plan import JobPlan, plan_job
from harness.pipeline.splits import InputFile, Split, SplitError, describe, expand_inputs, is_local
from harness.pipeline.summary import Executed, summarise, write_summary
from harness.pipeline.tasks import (
    EndedRanges,
    RangeLocal,
    analyse_partition,
    range_connections,
    read_files,
    read_task,
    task_ends,
)

__all__ = [
    "run_pipeline",
    "spark_failure",
]

#: connections that only one range of a local input holds are analysed by the task reading it,
#: not shuffled (found by a first pass over the ranges that reads connection keys only)
LOCAL_CONNECTIONS = True


def run_pipeline(
    inputs: Iterable[str],
    out: str | Path,
    *,
    master: str | None = "local[*]",
    partitions: int = 0,
    ports: frozenset[int] = DEFAULT_PORTS,
    split_size: int = 0,
    progress: bool = True,
    spark: Any = None,
    join_files: bool = False,
    hadoop: bool = False,
    force: bool = False,
    conf: dict[str, str] | None = None,
    ship_deps: bool = True,
    executor_timeout: float = DEFAULT_EXECUTOR_TIMEOUT,
) -> dict[str, Any]:
    """Run the job; returns the summary also written to ``out/summary.json``.

    ``join_files``: the inputs, in the order given, are one capture cut into files (a rotated
    capture), so a TCP connection may continue from one file into the next.  Inputs with a URI
    scheme other than ``file`` are read through Spark's Hadoop layer; ``hadoop`` reads every input
    that way (local paths as ``file:`` URIs).

    ``out`` is a local folder (a path or ``file:`` URI) or a folder on a file system pyarrow
    writes (:func:`harness.pipeline.outputs.out_target`; another scheme: :class:`PipelineError`
    before any work).  The outputs are written into a temporary sibling of ``out`` and renamed
    into place when complete (:class:`harness.outdir.StagedOutput`,
    :class:`harness.pipeline.outputs.RemoteStagedOutput`): an existing ``out`` is replaced only
    when it is empty or holds a previous output of the pipeline and nothing else, or with
    ``force`` (else :class:`PipelineError`, before any work); a failed or interrupted job leaves
    ``out`` as it was.

    ``conf``: Spark settings (``--conf``); ``ship_deps``: on a cluster, the dependencies travel
    with the job (:mod:`harness.pipeline.ship`); ``executor_timeout``: seconds a job may go
    without any executor before it is abandoned (:class:`ClusterError`)."""
    started = time.monotonic()
    inputs = list(inputs)
    target, stage_ctx = _staged(inputs, out, force)
    through_hadoop = hadoop or not all(is_local(raw) for raw in inputs)
    if not through_hadoop:
        files = _list(None, inputs, False)
    own = spark is None
    try:
        if own:
            spark = spark_session(master, partitions, conf=conf, ship_deps=ship_deps)
        if through_hadoop:
            files = _list(spark, inputs, hadoop)
        args = (partitions, ports, split_size, progress, started, join_files)
        return _into(stage_ctx, target, lambda where, shown: _run(spark, files, where, *args, shown, executor_timeout))
    except (NoExecutors, MasterUnreachable) as e:
        raise ClusterError(str(e)) from None
    except Exception as e:
        if type(e).__module__.startswith(("py4j", "pyspark")):  # the job failed: say why, not the Java trace
            raise ClusterError(spark_failure(e)) from None
        raise
    finally:
        if own and spark is not None:
            stop_session(spark)


def _into(
    stage_ctx: StagedOutput | RemoteStagedOutput,
    target: OutTarget,
    job: Callable[[Path | FsFolder, str], dict[str, Any]],
) -> dict[str, Any]:
    """``job(folder, shown)`` writing into the staged folder, which is then put in place."""
    with stage_ctx as stage:
        if isinstance(stage, StagedOutput):
            where: Path | FsFolder = stage.path
            shown = str(target.local)
        else:
            where, shown = stage.folder, target.given
        summary = job(where, shown)
        try:
            stage.commit()
        except (OutputError, OSError) as e:
            raise PipelineError(str(e)) from e
    return summary


def _staged(inputs: list[str], out: str | Path, force: bool) -> tuple[OutTarget, StagedOutput | RemoteStagedOutput]:
    """The output folder ``out`` and how it is written (staged, then renamed into place);
    PipelineError, before any work, when it may not be replaced."""
    try:
        target = out_target(str(out))
        stage_ctx: StagedOutput | RemoteStagedOutput
        if target.local is not None:
            why = refusal(target.local, COMMAND, force=force) or _input_inside(inputs, target.local)
            stage_ctx = StagedOutput(target.local, COMMAND, force=force)
        else:
            stage_ctx = RemoteStagedOutput(target, COMMAND, force=force)
            why = stage_ctx.refusal()
    except (OutError, OSError) as e:
        raise PipelineError(str(e)) from e
    if why:
        raise PipelineError(why)
    return target, stage_ctx


def spark_failure(e: Exception) -> str:
    """What a failed Spark job reports, in a few lines: Spark's reason and the Python error of the
    task, with what to do when the workers lack a module."""
    text = str(e)
    reason = next((ln.strip() for ln in text.splitlines() if "Job aborted" in ln or "SparkException:" in ln), "")
    reason = reason.split("most recent failure:")[0].strip() or text.strip().splitlines()[0] if text.strip() else ""
    python = ""
    if "Traceback (most recent call last)" in text:
        tail = text.split("Traceback (most recent call last)", 1)[1].splitlines()
        python = next((ln.strip() for ln in tail[1:] if ln and not ln[0].isspace() and ":" in ln), "")
    message = f"the Spark job failed: {reason}" + (f"; a task said: {python}" if python else "")
    if "No module named" in python:
        message += (
            "; the workers' Python lacks a module the tasks import: let the pipeline ship its dependencies "
            "(the default), or give the workers an archive of them (docs/pipeline.md, Running on a cluster)"
        )
    return message


COMMAND = "pipeline"  # the command an output folder's marker names (harness.outdir)


def _input_inside(inputs: list[str], out: Path) -> str:
    """ "" unless a local input lies in the folder ``out`` (which the output replaces)."""
    folder = out.resolve()
    for raw in inputs:
        if not is_local(raw):
            continue
        try:
            found = expand_inputs([raw])
        except (SplitError, OSError):  # reported where the inputs are read
            continue
        for name in found:
            path = Path(name).resolve()
            if folder in path.parents:
                return f"--out {out}: the input {name} is in it, and the output replaces the folder; name another one"
    return ""


def _list(spark: Any, inputs: list[str], hadoop: bool) -> list[InputFile]:
    """Every input file, in the order of the inputs, duplicates dropped."""
    seen: dict[str, InputFile] = {}
    try:
        for raw in inputs:
            if hadoop or not is_local(raw):
                found = list_inputs(spark, [raw])
            else:
                found = [describe(p) for p in expand_inputs([raw])]
            for f in found:
                seen.setdefault(f.path, f)
    except (SplitError, OSError) as e:
        raise PipelineError(str(e)) from e
    return list(seen.values())


def _run(
    spark: Any,
    files: list[InputFile],
    out: Path | FsFolder,
    partitions: int,
    ports: frozenset[int],
    split_size: int,
    progress: bool,
    started: float,
    join_files: bool = False,
    shown: str | None = None,
    executor_timeout: float = DEFAULT_EXECUTOR_TIMEOUT,
) -> dict[str, Any]:
    """The job, writing into the folder ``out`` (local, or on a pyarrow file system): plan,
    execute, summarise.  The summary names the folder as ``shown`` (where the output is put once
    complete)."""
    sc = spark.sparkContext
    plan = plan_job(files, sc.defaultParallelism, partitions, split_size, join_files)
    # a fresh folder (run_pipeline): nothing of another run in it
    target: str | FsFolder = out if isinstance(out, FsFolder) else str(out.resolve())
    done = _execute(sc, plan, ports, target, join_files, progress, executor_timeout)
    summary = summarise(plan, done, files, sc.master, str(shown if shown is not None else out), started)
    write_summary(out, summary)
    return summary


def _execute(
    sc: Any,
    plan: JobPlan,
    ports: frozenset[int],
    target: str | FsFolder,
    join_files: bool,
    progress: bool,
    executor_timeout: float,
) -> Executed:
    """The Spark jobs: the first pass (:func:`_first_pass`), then the read tasks and the shuffle
    partitions that analyse the connections, watched (harness.pipeline.cluster.JobWatch)."""
    paths = plan.paths

    def analyse(index: int, part: Iterable[tuple[tuple[str, ...], Any]]) -> Iterator[tuple[str, Any]]:
        return analyse_partition(index, part, ports, target, paths)

    with JobWatch(sc, progress, executor_timeout) as watch, _Reading(sc, plan, ports, target, join_files) as reading:
        keyed = reading.keyed(watch)
        tallies: Counter[tuple[str, str]] = Counter()
        stats: list[dict[str, Any]] = []
        analysed = run_watched(
            watch, "msmq-analyse", keyed.partitionBy(plan.shuffle).mapPartitionsWithIndex(analyse).collect
        )
        for kind, value in analysed:
            if kind == "stats":
                stats.append(value)
            else:
                tallies.update(value)
    return Executed(
        tallies,
        stats,
        reading.cross,
        reading.first_pass,
        keyed.getNumPartitions(),
        watch.failed_tasks,
        watch.lost_executors,
    )


class _Reading:
    """The read side of the job: the inputs read directly (their ranges, with the first pass
    before them: :func:`_first_pass`) and those Spark reads whole, as one RDD keyed by
    connection; the first pass's results, cached for the read tasks, released on exit."""

    def __init__(self, sc: Any, plan: JobPlan, ports: frozenset[int], target: str | FsFolder, joined: bool) -> None:
        self.sc, self.plan, self.ports, self.target, self.joined = sc, plan, ports, target, joined
        self.cross = 0
        self.first_pass = 0.0
        self.ended: Any = None  # the cached RDD of EndedRanges

    def __enter__(self) -> _Reading:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.ended is not None:
            self.ended.unpersist()

    def keyed(self, watch: JobWatch) -> Any:
        sc, plan, ports, order, target = self.sc, self.plan, self.ports, self.plan.order, self.target
        sources = []
        if plan.ranges and LOCAL_CONNECTIONS:
            clock = time.monotonic()
            # each task's ranges with their connections' last records, kept for its read
            self.ended = sc.parallelize(plan.ranges, len(plan.ranges)).map(lambda t: task_ends(t, ports)).cache()
            found = _first_pass(watch, self.ended, self.joined)
            self.cross = len(found)
            whole = sc.broadcast(RangeLocal(self.joined, frozenset(found)))
            del found
            self.first_pass = time.monotonic() - clock

            def read_ended(index: int, part: Iterable[EndedRanges]) -> Iterator[tuple[tuple[str, ...], Any]]:
                for splits, ends in part:
                    yield from read_task(splits, ports, order, local=whole.value, out=target, index=index, ends=ends)

            sources.append(self.ended.mapPartitionsWithIndex(read_ended))
        elif plan.ranges:

            def read(part: Iterable[list[Split]]) -> Iterator[tuple[tuple[str, ...], Any]]:
                for splits in part:
                    yield from read_task(splits, ports, order)

            sources.append(sc.parallelize(plan.ranges, len(plan.ranges)).mapPartitions(read))
        if plan.remote:

            def read_whole(part: Iterable[tuple[str, bytes]]) -> Iterator[tuple[tuple[str, ...], Any]]:
                return read_files(part, ports, order)

            remote = plan.remote
            sources.append(sc.binaryFiles(input_spec(remote), min(plan.tasks, len(remote))).mapPartitions(read_whole))
        return sources[0] if len(sources) == 1 else sc.union(sources)


def _first_pass(watch: JobWatch, ended: Any, joined: bool) -> list[int]:
    """A first, light pass: which connections more than one range holds (only those are
    shuffled; the others are analysed by the task that reads them), from each task's ranges and
    their connections' last records (``ended``, an RDD of :data:`EndedRanges`, cached: the read
    tasks take them from there).  Only the digests held by more than one range reach the
    driver."""

    def connections(part: Iterable[EndedRanges]) -> Iterator[int]:
        return range_connections(part, joined)

    found: list[int] = run_watched(
        watch,
        "msmq-first-pass",
        ended.mapPartitions(connections)
        .map(lambda cid: (cid, 1))
        .reduceByKey(add)
        .filter(lambda kv: kv[1] > 1)
        .keys()
        .collect,
    )
    return found
