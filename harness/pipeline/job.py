"""The capture pipeline as a PySpark job: captures in, Parquet tables of MSMQ packets, sessions and
[MS-MQQB] 3.1 rule violations out.

Stages: the driver lists the inputs and plans tasks (:func:`harness.pipeline.splits.plan_tasks`:
large classic pcap files cut into byte ranges, small files packed); each task reads its ranges
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

import hashlib
import heapq
import json
import os
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from operator import add
from pathlib import Path
from typing import Any

from harness.capture.pcapfile import CaptureProblem
from harness.capture.spill import SpillPool
from harness.capture.streams import _Spill, segment_connection
from harness.capture.tcp import FlowKey
from harness.errors import HarnessError
from harness.pipeline.cluster import (
    DEFAULT_EXECUTOR_TIMEOUT,
    JobWatch,
    MasterUnreachable,
    NoExecutors,
    run_watched,
    spark_session,
    stop_session,
)
from harness.pipeline.flows import (
    DEFAULT_PORTS,
    FlowRows,
    FrameCounts,
    first_reading,
    flow_id,
    flow_rows,
    segments_of,
)
from harness.pipeline.hadoop import input_spec, list_inputs
from harness.pipeline.outputs import FsFolder
from harness.pipeline.splits import (
    InputFile,
    Split,
    SplitError,
    SplitResult,
    check_chaining,
    describe,
    expand_inputs,
    is_local,
    plan_tasks,
    read_split,
)

__all__ = ["SCHEMAS", "PipelineError", "run_pipeline", "spark_session"]

MIN_SPLIT = 1 << 20
#: capture bytes per shuffle partition (a partition's connections are held in memory together)
SHUFFLE_BYTES = 64 << 20
#: segments (and payload bytes) a read task holds before handing its per-connection lists on (PySpark
#: holds up to ten lists per shuffle partition, at most 1,000, before writing them: small lists keep
#: a worker small)
FLUSH_SEGMENTS = 20_000
FLUSH_BYTES = 1 << 20
#: connections that only one range of a local input holds are analysed by the task reading it,
#: not shuffled (found by a first pass over the ranges that reads connection keys only)
LOCAL_CONNECTIONS = True
TABLES = ("packets", "sessions", "violations")
LISTED_PROBLEMS = 1000  # sessions that broke a rule listed in summary.json and report.txt (the first, by time)

#: column name -> Spark SQL type, in order, for each table
SCHEMAS: dict[str, list[tuple[str, str]]] = {
    "packets": [
        ("input", "string"),
        ("flow", "string"),
        ("direction", "string"),
        ("index", "long"),
        ("stream_offset", "long"),
        ("timestamp", "double"),
        ("kind", "string"),
        ("size", "long"),
        ("message_id", "long"),
        ("source_qm", "string"),
        ("destination_qm", "string"),
        ("delivery", "string"),
        ("ack_sequence_number", "long"),
        ("user_msg_sequence_number", "long"),
        ("tx_sequence_number", "long"),
        ("cs", "long"),
        ("problems", "array<string>"),
    ],
    "sessions": [
        ("input", "string"),
        ("flow", "string"),
        ("client", "string"),
        ("server", "string"),
        ("client_qm", "string"),
        ("server_qm", "string"),
        ("first_ts", "double"),
        ("last_ts", "double"),
        ("segments", "long"),
        ("packets_client", "long"),
        ("packets_server", "long"),
        ("user_messages", "long"),
        ("session_acks", "long"),
        ("order_acks", "long"),
        ("final_acks", "long"),
        ("gaps", "long"),
        ("gap_bytes", "long"),
        ("retransmitted_bytes", "long"),
        ("closed", "boolean"),
        ("violations", "long"),
        ("outcome", "string"),
        ("problems", "array<string>"),
    ],
    "violations": [
        ("input", "string"),
        ("flow", "string"),
        ("server", "string"),
        ("rule_id", "string"),
        ("section", "string"),
        ("direction", "string"),
        ("packet_index", "long"),
        ("evidence", "string"),
    ],
}


class PipelineError(HarnessError):
    """The pipeline could not run: bad arguments, no inputs, Spark failed."""


# ---------------------------------------------------------------------------------------------
# executor side (module-level functions: pickled by reference, imported on the executors)


def connection_id(path: str, key: Any, joined: bool) -> int:
    """A 64-bit digest of a connection (of its input too, unless the inputs are joined): what the
    first stage exchanges instead of the connection keys, so that the driver holds only the
    connections more than one range holds.  Two connections sharing a digest are both shuffled,
    which costs time, never a result."""
    text = repr(key if joined else (path, key)).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")


def range_ends(split: Split, ports: frozenset[int]) -> dict[Any, int]:
    """Connection -> offset of its last record in the range (:func:`flows.first_reading`: no
    segments built, no frames copied)."""
    last: dict[Any, int] = {}
    for offset, _ts, key in first_reading(split, ports):
        last[key] = offset
    return last


def range_connections(part: Iterable[list[Split]], ports: frozenset[int], joined: bool) -> Iterator[int]:
    """The first stage for local ranges: the digest (:func:`connection_id`) of each connection
    each range holds, once per range."""
    for splits in part:
        for split in splits:
            for key in range_ends(split, ports):
                yield connection_id(split.path, key, joined)


@dataclass(frozen=True)
class RangeLocal:
    """What the first stage found: the digests of the connections more than one range holds
    (shuffled); the others are analysed by the task reading their range, as soon as their last
    record there has been read (the task finds those offsets itself, :func:`range_ends`)."""

    joined: bool
    cross: frozenset[int]

    def shuffled(self, path: str, key: Any) -> bool:
        return connection_id(path, key, self.joined) in self.cross


def read_task(
    splits: Iterable[Split],
    ports: frozenset[int],
    order: dict[str, int] | None = None,
    data: bytes | None = None,
    local: RangeLocal | None = None,
    out: str | FsFolder = "",
    index: int = 0,
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """One task: the segments of its ranges grouped by connection (a list per connection, handed
    on every :data:`FLUSH_SEGMENTS` segments so memory stays bounded), then one stats record per
    range.  With ``order`` (input path -> position) the inputs are one capture cut into files:
    connections are keyed by 5-tuple alone and segments ordered by (file position, offset).
    With ``data`` the one split is a whole file whose bytes Spark read.

    With ``local`` (:class:`RangeLocal`) a connection no other range holds is not shuffled: it
    is analysed here as soon as its last record has been read, its rows written to ``out`` as
    ``part-r<index>`` files, and the counts for the summary handed on as one ``"c"`` record."""
    ids: dict[tuple[str, int, str, int], str] = {}
    writers = {t: PartWriter(t, out, index, "r") for t in TABLES} if local is not None else {}
    tallies: Counter[tuple[str, str]] = Counter()
    try:
        for split in splits:
            yield from _read_range(split, ports, order, data, local, ids, writers, tallies)
    except BaseException as e:
        for writer in writers.values():
            writer.__exit__(type(e), e, None)
        raise
    for table, writer in writers.items():
        writer.__exit__(None, None, None)
        tallies["table", table] += writer.count
    if writers:
        yield ("c", "", str(index)), tallies


def _read_range(
    split: Split,
    ports: frozenset[int],
    order: dict[str, int] | None,
    data: bytes | None,
    local: RangeLocal | None,
    ids: dict[tuple[str, int, str, int], str],
    writers: dict[str, PartWriter],
    tallies: Counter[tuple[str, str]],
) -> Iterator[tuple[tuple[str, ...], Any]]:
    counts = FrameCounts(split.path)
    result = SplitResult(split)
    pending: dict[tuple[str, ...], list[Any]] = {}
    held = 0
    ends: frozenset[int] = frozenset()
    local_keys: dict[Any, bool] = {}  # connection -> analysed here (not shuffled)
    if local is not None:
        last = range_ends(split, ports)
        local_keys = {key: not local.shuffled(split.path, key) for key in last}
        ends = frozenset(off for key, off in last.items() if local_keys[key])
        del last
    whole: dict[Any, tuple[FlowRows, list[int]]] = {}  # connections analysed here, as their segments come
    pool = SpillPool()
    kept = kept_bytes = moved = moved_bytes = held_bytes = 0
    for offset, ts, seg in segments_of(read_split(split, result, data), counts, ports):
        if local is not None:
            key = segment_connection(seg)
            here = local_keys.get(key)
            if here is None:  # not seen by range_ends (cannot happen)
                here = local_keys[key] = not local.shuffled(split.path, key)
            if here:
                kept += 1
                kept_bytes += len(seg.payload)
                entry = whole.get(key)
                if entry is None:
                    fkey = FlowKey.of(seg.src, seg.sport, seg.dst, seg.dport)[0]
                    entry = whole[key] = (FlowRows(split.path, fkey, ports, writers["packets"].add, pool), [0])
                entry[1][0] += 1
                entry[0].feed(ts, seg, entry[1][0])
                if offset in ends:
                    _write_tables(whole.pop(key)[0].finish(), writers, tallies)
                continue
        moved += 1
        moved_bytes += len(seg.payload)
        who = (seg.src, seg.sport, seg.dst, seg.dport)
        fid = ids.get(who)
        if fid is None:
            fid = ids[who] = flow_id(seg)
        if order is None:
            pending.setdefault(("f", split.path, fid), []).append((offset, ts, seg))
        else:
            pending.setdefault(("f", "", fid), []).append(((order[split.path], offset), ts, seg))
        held += 1
        held_bytes += len(seg.payload)
        if held >= FLUSH_SEGMENTS or held_bytes >= FLUSH_BYTES:
            yield from pending.items()
            pending, held, held_bytes = {}, 0, 0
    yield from pending.items()
    for builder, _position in whole.values():  # not ended where range_ends saw them end (cannot happen)
        _write_tables(builder.finish(), writers, tallies)
    pool.close()
    counts.problems.extend(str(p) for p in result.problems)
    stats = {
        "counts": counts,
        "start": split.start,
        "end": split.end,
        "first": result.first,
        "next": result.next,
        "records": result.records,
        "had_problems": bool(result.problems),
        "analysed_segments": kept,
        "analysed_bytes": kept_bytes,
        "shuffled_segments": moved,
        "shuffled_bytes": moved_bytes,
    }
    yield ("s", split.path, str(split.start)), stats


def _write_rows(
    name: str,
    segments: list[Any],
    ports: frozenset[int],
    writers: dict[str, PartWriter],
    counts: Counter[tuple[str, str]],
) -> None:
    """One connection's rows to the part files, and its counts for the summary."""
    _write_tables(flow_rows(name, segments, ports), writers, counts)


def _write_tables(
    tables: dict[str, list[dict[str, Any]]], writers: dict[str, PartWriter], counts: Counter[tuple[str, str]]
) -> None:
    """Rows of one connection (the last of them: its session and violations) to the part files,
    and their counts for the summary."""
    for table, rows in tables.items():
        writers[table].add(rows)
    broken: dict[str, set[str]] = {}
    for row in tables["violations"]:
        counts["rule", row["rule_id"]] += 1
        counts["peer", row["server"]] += 1
        broken.setdefault(row["flow"], set()).add(row["rule_id"])
    for row in tables["sessions"]:
        counts["outcome", row["outcome"]] += 1
        rules = broken.get(row["flow"])
        if rules and counts["listed", "problem"] < LISTED_PROBLEMS:  # the first ones of each task
            counts["listed", "problem"] += 1
            keys = ("input", "flow", "client", "server", "first_ts", "last_ts")
            entry = {**{k: row[k] for k in keys}, "rules": sorted(rules)}
            counts["problem", json.dumps(entry, sort_keys=True)] = 1


def read_files(
    part: Iterable[tuple[str, bytes]], ports: frozenset[int], order: dict[str, int] | None = None
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """A ``binaryFiles`` task: each (path, whole file) record read as one range."""
    for path, data in part:
        yield from read_task([Split(path, 0, max(len(data), 1), 0)], ports, order, data)


def _arrow_schema(table: str) -> Any:
    import pyarrow as pa

    types = {"string": pa.string(), "long": pa.int64(), "double": pa.float64(), "boolean": pa.bool_(),
             "array<string>": pa.list_(pa.string())}
    return pa.schema([(name, types[kind]) for name, kind in SCHEMAS[table]])


def write_part(rows: list[dict[str, Any]], table: str, out: str | FsFolder, index: int) -> None:
    """One Parquet file of a table, named after the partition (a retried task rewrites it)."""
    with PartWriter(table, out, index) as writer:
        writer.add(rows)


#: rows a :class:`PartWriter` holds before writing them as one row group
ROW_GROUP = 20_000


class PartWriter:
    """One Parquet file of a table, named after the partition, written a row group at a time as
    rows arrive (so a partition's rows are never all in memory), moved into place when closed
    (a retried task rewrites it; a failed one leaves no file)."""

    def __init__(self, table: str, out: str | FsFolder, index: int, prefix: str = "") -> None:
        self.schema = _arrow_schema(table)
        name = f"part-{prefix}{index:05d}.parquet"
        self.fs: Any = None
        if isinstance(out, FsFolder):  # a folder on another file system, written through pyarrow's client
            self.fs = out.fs
            self.fs.create_dir(out.join(table), recursive=True)
            self.final = out.join(table, name)
        else:
            folder = os.path.join(out, table)
            os.makedirs(folder, exist_ok=True)
            self.final = os.path.join(folder, name)
        self.tmp = self.final + ".tmp"
        self.rows: list[dict[str, Any]] = []
        self.count = 0
        self._writer: Any = None

    def add(self, rows: list[dict[str, Any]]) -> None:
        self.rows += rows
        self.count += len(rows)
        if len(self.rows) >= ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        columns = {name: [row.get(name) for row in self.rows] for name in self.schema.names}
        batch = pa.table(columns, schema=self.schema)
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.tmp, self.schema, compression="snappy", filesystem=self.fs)
        self._writer.write_table(batch)
        self.rows = []

    def __enter__(self) -> PartWriter:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is None:
            if self.rows or self._writer is None:
                self._flush()
            self._writer.close()
            if self.fs is not None:
                self.fs.move(self.tmp, self.final)
            else:
                os.replace(self.tmp, self.final)
        elif self._writer is not None:
            self._writer.close()
            if self.fs is not None:
                self.fs.delete_file(self.tmp)
            else:
                os.remove(self.tmp)


def analyse_partition(
    index: int,
    part: Iterable[tuple[tuple[str, ...], Any]],
    ports: frozenset[int],
    out: str | FsFolder,
    inputs: list[str] | None = None,
) -> Iterator[tuple[str, Any]]:
    """One shuffle partition: every connection in it analysed, the rows written as Parquet, and the
    counts for the summary (rows per table, violations per rule and per peer, session outcomes)
    and the range statistics handed back.

    A connection's segments come in lists (one per read task flush, each in record order) in any
    order: each list is a sorted run, kept in memory up to :data:`SORT_BYTES` for the partition
    and written to a temporary file beyond; each connection's runs are then merged by record
    offset into its :class:`harness.pipeline.flows.FlowRows` -- so memory holds one block of each
    run and the connection's packets in flight, never the connection."""
    runs = _Runs()
    try:
        for key, value in part:
            if key[0] == "s":
                yield "stats", value
            elif key[0] == "c":  # a read task's counts for the connections it analysed itself
                yield "counts", value
            else:
                runs.add(key, value)
        counts: Counter[tuple[str, str]] = Counter()
        pool = SpillPool()
        with ExitStack() as stack:
            stack.callback(pool.close)
            writers = {table: stack.enter_context(PartWriter(table, out, index)) for table in TABLES}
            for key in sorted(runs.keys()):
                builder: FlowRows | None = None
                for position, (at, ts, seg) in enumerate(runs.merged(key), 1):
                    if builder is None:
                        name = key[1]
                        if not name and inputs:  # joined inputs: named after the file holding the first segment
                            name = inputs[at[0]]
                        fkey = FlowKey.of(seg.src, seg.sport, seg.dst, seg.dport)[0]
                        builder = FlowRows(name, fkey, ports, writers["packets"].add, pool)
                    builder.feed(ts, seg, position)
                if builder is not None:
                    _write_tables(builder.finish(), writers, counts)
        for table, writer in writers.items():
            counts["table", table] += writer.count
        yield "counts", counts
    finally:
        runs.close()


#: payload bytes of the sorted runs a shuffle partition holds in memory before writing them out
SORT_BYTES = 16 << 20
#: bytes (payload and about 200 per segment) of a block of a run written out: a merge holds one
#: block of each run
SORT_BLOCK = 64 << 10
#: runs merged at once (more are merged in passes)
SORT_FAN_IN = 32


class _Runs:
    """Per connection, the sorted runs of its segments (lists in record order), in memory up to
    :data:`SORT_BYTES` of payload, then in a temporary file in blocks of about :data:`SORT_BLOCK`
    bytes."""

    def __init__(self) -> None:
        #: per connection: its runs, each a list of segments or the blocks it was written out in
        self.runs: dict[tuple[str, ...], list[tuple[list[Any], list[tuple[int, int]]]]] = {}
        self.held = 0
        self.spill = _Spill()

    def keys(self) -> list[tuple[str, ...]]:
        return list(self.runs)

    def add(self, key: tuple[str, ...], segments: list[Any]) -> None:
        runs = self.runs.setdefault(key, [])
        size = sum(len(s[2].payload) for s in segments)
        if self.held + size > SORT_BYTES:
            runs.append(([], self._write(segments)))
        else:
            runs.append((segments, []))
            self.held += size

    def _write(self, segments: Iterable[Any]) -> list[tuple[int, int]]:
        """A run written out in blocks of about :data:`SORT_BLOCK` bytes."""
        blocks, block, weight = [], [], 0
        for s in segments:
            block.append(s)
            weight += 200 + len(s[2].payload)
            if weight >= SORT_BLOCK:
                blocks.append(self.spill.put(block))
                block, weight = [], 0
        if block:
            blocks.append(self.spill.put(block))
        return blocks

    def _read(self, blocks: list[tuple[int, int]]) -> Iterator[Any]:
        for where in blocks:
            yield from self.spill.get(where)

    def _open(self, run: tuple[list[Any], list[tuple[int, int]]]) -> Iterator[Any]:
        segments, blocks = run
        if blocks:
            return self._read(blocks)
        self.held -= sum(len(s[2].payload) for s in segments)
        return iter(segments)

    def merged(self, key: tuple[str, ...]) -> Iterator[Any]:
        """The connection's segments in record order (its runs dropped as they are read): more
        than :data:`SORT_FAN_IN` runs are first merged, that many at a time, into longer runs
        written out, so a merge holds one block of at most that many runs."""
        runs = self.runs.pop(key)
        while len(runs) > SORT_FAN_IN:
            group, runs = runs[:SORT_FAN_IN], runs[SORT_FAN_IN:]
            merged = heapq.merge(*(self._open(r) for r in group), key=lambda s: s[0])
            runs.append(([], self._write(merged)))
        yield from heapq.merge(*(self._open(r) for r in runs), key=lambda s: s[0])

    def close(self) -> None:
        self.spill.close()


# ---------------------------------------------------------------------------------------------
# driver side


def _reconcile(stats: list[dict[str, Any]], inputs: list[str], bad: dict[str, str]) -> list[dict[str, Any]]:
    by_input: dict[str, FrameCounts] = {p: FrameCounts(p) for p in inputs}
    results: list[SplitResult] = []
    for s in stats:
        counts: FrameCounts = s["counts"]
        by_input[counts.input].merge(counts)
        r = SplitResult(Split(counts.input, s["start"], s["end"]), s["records"], s["first"], s["next"])
        if s["had_problems"]:
            r.problems = [CaptureProblem(counts.input, s["start"], "problems in this range")]
        results.append(r)
    for problem in check_chaining(results):
        by_input[problem.path].problems.append(str(problem))
    read = {s["counts"].input for s in stats}
    for path in inputs:
        if path not in read:
            by_input[path].problems.append(f"{path}@0: not read (no task returned this input)")
    for path, reason in bad.items():
        if reason not in by_input[path].problems:
            by_input[path].problems.append(reason)
    return [by_input[p].row() for p in inputs]


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
    from harness.outdir import OutputError, StagedOutput, refusal
    from harness.pipeline.outputs import OutError, RemoteStagedOutput, out_target

    started = time.monotonic()
    inputs = list(inputs)
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
    through_hadoop = hadoop or not all(is_local(raw) for raw in inputs)
    if not through_hadoop:
        files = _list(None, inputs, False)
    own = spark is None
    try:
        if own:
            spark = spark_session(master, partitions, conf=conf, ship_deps=ship_deps)
        if through_hadoop:
            files = _list(spark, inputs, hadoop)
        with stage_ctx as stage:
            if isinstance(stage, StagedOutput):
                where: Path | FsFolder = stage.path
                shown = str(target.local)
            else:
                where, shown = stage.folder, target.given
            summary = _run(
                spark, files, where, partitions, ports, split_size, progress, started, join_files, shown,
                executor_timeout,
            )
            try:
                stage.commit()
            except (OutputError, OSError) as e:
                raise PipelineError(str(e)) from e
        return summary
    except (NoExecutors, MasterUnreachable) as e:
        raise ClusterError(str(e)) from None
    except Exception as e:
        if type(e).__module__.startswith(("py4j", "pyspark")):  # the job failed: say why, not the Java trace
            raise ClusterError(spark_failure(e)) from None
        raise
    finally:
        if own and spark is not None:
            stop_session(spark)


class ClusterError(PipelineError):
    """The job could not run to its end on the Spark cluster (no executors, tasks that kept failing)."""


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
    """The job, writing into the folder ``out`` (local, or on a pyarrow file system); the summary
    names the folder as ``shown`` (where the output is put once complete)."""
    sc = spark.sparkContext
    paths = [f.path for f in files]
    local = [f for f in files if f.format != "unread"]
    remote = [f.path for f in files if f.format == "unread"]
    tasks = partitions or 2 * sc.defaultParallelism
    total = sum(f.size for f in files)
    split_size = split_size or max(MIN_SPLIT, -(-total // tasks))
    plan = plan_tasks(local, split_size, tasks) if local else []
    bad = {f.path: f.problem for f in files if f.format == "bad"}
    order = {p: i for i, p in enumerate(paths)} if join_files else None

    # a fresh folder (run_pipeline): nothing of another run in it
    target: str | FsFolder = out if isinstance(out, FsFolder) else str(out.resolve())
    whole: Any = None  # a broadcast RangeLocal

    def read(index: int, part: Iterable[list[Split]]) -> Iterator[tuple[tuple[str, ...], Any]]:
        range_local = whole.value if whole is not None else None
        for splits in part:
            yield from read_task(splits, ports, order, local=range_local, out=target, index=index)

    def connections(part: Iterable[list[Split]]) -> Iterator[int]:
        return range_connections(part, ports, join_files)

    def read_whole(part: Iterable[tuple[str, bytes]]) -> Iterator[tuple[tuple[str, ...], Any]]:
        return read_files(part, ports, order)

    def analyse(index: int, part: Iterable[tuple[tuple[str, ...], Any]]) -> Iterator[tuple[str, Any]]:
        return analyse_partition(index, part, ports, target, paths)

    shuffle = max(tasks, -(-total // SHUFFLE_BYTES))
    first_pass = 0.0
    cross = 0
    with JobWatch(sc, progress, executor_timeout) as watch:
        sources = []
        if plan:
            if LOCAL_CONNECTIONS:
                # a first, light pass: which connections more than one range holds (only those are
                # shuffled; the others are analysed by the task that reads them)
                clock = time.monotonic()
                # (only the digests held by more than one range reach the driver)
                found = run_watched(
                    watch,
                    "msmq-first-pass",
                    sc.parallelize(plan, len(plan))
                    .mapPartitions(connections)
                    .map(lambda cid: (cid, 1))
                    .reduceByKey(add)
                    .filter(lambda kv: kv[1] > 1)
                    .keys()
                    .collect,
                )
                cross = len(found)
                whole = sc.broadcast(RangeLocal(join_files, frozenset(found)))
                del found
                first_pass = time.monotonic() - clock
            sources.append(sc.parallelize(plan, len(plan)).mapPartitionsWithIndex(read))
        if remote:
            sources.append(sc.binaryFiles(input_spec(remote), min(tasks, len(remote))).mapPartitions(read_whole))
        keyed = sources[0] if len(sources) == 1 else sc.union(sources)
        tallies: Counter[tuple[str, str]] = Counter()
        stats: list[dict[str, Any]] = []
        analysed = run_watched(
            watch, "msmq-analyse", keyed.partitionBy(shuffle).mapPartitionsWithIndex(analyse).collect
        )
        for kind, value in analysed:
            if kind == "stats":
                stats.append(value)
            else:
                tallies.update(value)
    counts = {table: tallies[("table", table)] for table in TABLES}
    by_rule = {k[1]: n for k, n in tallies.items() if k[0] == "rule"}
    by_peer = {k[1]: n for k, n in tallies.items() if k[0] == "peer"}
    outcomes = {k[1]: n for k, n in tallies.items() if k[0] == "outcome"}
    problems = [json.loads(k[1]) for k in tallies if k[0] == "problem"]
    problems.sort(key=lambda e: (e["first_ts"], e["flow"]))
    reconciliation = _reconcile(stats, paths, bad)
    summary = {
        "out": str(shown if shown is not None else out),
        "master": sc.master,
        "tasks": keyed.getNumPartitions(),
        "hadoop_inputs": len(remote),
        "split_size": split_size,
        "joined_files": join_files,
        "inputs": len(paths),
        "bytes": sum(f.size for f in files),
        "frames_read": sum(r["frames_read"] for r in reconciliation),
        "packets": counts["packets"],
        "sessions": counts["sessions"],
        "violations": counts["violations"],
        "violations_by_rule": dict(sorted(by_rule.items())),
        "violations_by_peer": dict(sorted((str(k), v) for k, v in by_peer.items())),
        "session_outcomes": dict(sorted(outcomes.items())),
        "sessions_with_problems": problems[:LISTED_PROBLEMS],
        "reconciliation": reconciliation,
        "read_task_segments": sum(s["analysed_segments"] for s in stats),
        "read_task_bytes": sum(s["analysed_bytes"] for s in stats),
        "shuffled_segments": sum(s["shuffled_segments"] for s in stats),
        "shuffled_bytes": sum(s["shuffled_bytes"] for s in stats),
        "shuffled_connections": cross,
        "first_pass_seconds": round(first_pass, 3),
        "failed_tasks": watch.failed_tasks,
        "lost_executors": watch.lost_executors,
        "seconds": round(time.monotonic() - started, 3),
    }
    _write_text(out, "summary.json", json.dumps(summary, indent=2))
    _write_text(out, "report.txt", _report(summary))
    return summary


def _write_text(out: Path | FsFolder, name: str, text: str) -> None:
    if isinstance(out, FsFolder):
        with out.fs.open_output_stream(out.join(name)) as f:
            f.write(text.encode())
    else:
        (out / name).write_text(text)


def _report(summary: dict[str, Any]) -> str:
    lines = [
        f"inputs {summary['inputs']}, frames {summary['frames_read']}, packets {summary['packets']}, "
        f"sessions {summary['sessions']}, violations {summary['violations']}",
        "",
        "violations per rule:",
        *(f"  {k:<45} {v}" for k, v in summary["violations_by_rule"].items()),
        "",
        "violations per peer:",
        *(f"  {k:<45} {v}" for k, v in summary["violations_by_peer"].items()),
        "",
        "session outcomes:",
        *(f"  {k:<45} {v}" for k, v in summary["session_outcomes"].items()),
        "",
        "sessions that broke a rule (capture-to-case INPUT --flow FLOW --out case.yaml makes a case of one):",
        *(
            f"  {p['flow']}  {p['client']} -> {p['server']}  {p['first_ts']:.6f}-{p['last_ts']:.6f}  "
            f"{', '.join(p['rules'])}  [{p['input']}]"
            for p in summary["sessions_with_problems"]
        ),
        "",
        "inputs (frames read = decoded + rejected):",
    ]
    for r in summary["reconciliation"]:
        mark = "ok" if r["balanced"] else "MISMATCH"
        lines.append(
            f"  {r['input']}: {r['frames_read']} = {r['frames_decoded']} + {r['frames_rejected']} [{mark}], "
            f"{len(r['problems'])} capture problems"
        )
        lines += [f"    {p}" for p in r["problems"]]
    return "\n".join(lines) + "\n"
