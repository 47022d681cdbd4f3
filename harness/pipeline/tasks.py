"""The capture pipeline's tasks, run on the Spark executors (module-level functions: pickled by
reference, imported there): a read task reads its byte ranges of the inputs and decodes frames
to TCP segments on the MSMQ ports ([MS-MQQB] 2.1.1), hands the segments on by TCP connection,
and analyses itself the connections no other range holds (:func:`read_task`, :class:`RangeLocal`,
found by the first pass :func:`range_connections`); a shuffle partition merges each
connection's segments in record order, reassembles and decodes it by [MS-MQMQ] 2.2.19.1
BaseHeader.PacketSize and checks it with the passive session observer
(:func:`harness.pipeline.flows.flow_rows`), writing the rows as Parquet
(:func:`analyse_partition`, :class:`PartWriter`).  The driver's side is harness.pipeline.job.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from harness.capture.spill import SpillFile, SpillPool
from harness.capture.streams import segment_connection
from harness.capture.tcp import FlowKey
from harness.pipeline.flows import (
    KIND_COLUMNS,
    FlowRows,
    FrameCounts,
    PacketRows,
    Tables,
    first_reading,
    flow_id,
    flow_rows,
    view_segments,
)
from harness.pipeline.outputs import FsFolder
from harness.pipeline.splits import Split, SplitResult, read_split_views

__all__ = [
    "LISTED_PROBLEMS",
    "SCHEMAS",
    "TABLES",
    "EndedRanges",
    "PartWriter",
    "RangeLocal",
    "analyse_partition",
    "range_connections",
    "read_files",
    "read_task",
    "task_ends",
    "write_part",
]

#: segments (and payload bytes) a read task holds before handing its per-connection lists on (PySpark
#: holds up to ten lists per shuffle partition, at most 1,000, before writing them: small lists keep
#: a worker small)
FLUSH_SEGMENTS = 20_000
FLUSH_BYTES = 1 << 20
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
        *((column, "long") for column in KIND_COLUMNS.values()),  # packets per kind (flows.KIND_COLUMNS)
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


#: a read task's ranges and, for each, its connections' last records (:func:`range_ends`)
EndedRanges = tuple[list[Split], list[dict[Any, int]]]


def task_ends(splits: list[Split], ports: frozenset[int]) -> EndedRanges:
    """The first stage of a read task's ranges: each range's connections and the offsets of their
    last records there (:func:`range_ends`), kept for the read task, which so reads its ranges
    once more only, not twice."""
    return splits, [range_ends(split, ports) for split in splits]


def range_connections(part: Iterable[EndedRanges], joined: bool) -> Iterator[int]:
    """The digest (:func:`connection_id`) of each connection each range of :func:`task_ends`
    holds, once per range."""
    for splits, ends in part:
        for split, last in zip(splits, ends, strict=True):
            for key in last:
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
    ends: Sequence[dict[Any, int]] | None = None,
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """One task: the segments of its ranges grouped by connection (a list per connection, handed
    on every :data:`FLUSH_SEGMENTS` segments so memory stays bounded), then one stats record per
    range.  With ``order`` (input path -> position) the inputs are one capture cut into files:
    connections are keyed by 5-tuple alone and segments ordered by (file position, offset).
    With ``data`` the one split is a whole file whose bytes Spark read.

    With ``local`` (:class:`RangeLocal`) a connection no other range holds is not shuffled: it
    is analysed here as soon as its last record has been read, its rows written to ``out`` as
    ``part-r<index>`` files, and the counts for the summary handed on as one ``"c"`` record.
    ``ends``: each range's :func:`range_ends` as the first stage found them (else found here)."""
    ids: dict[tuple[str, int, str, int], str] = {}
    writers = {t: PartWriter(t, out, index, "r") for t in TABLES} if local is not None else {}
    tallies: Counter[tuple[str, str]] = Counter()
    splits = list(splits)
    given: Sequence[dict[Any, int] | None] = ends if ends is not None else [None] * len(splits)
    try:
        for split, last in zip(splits, given, strict=True):
            analysed = _Analysed(split, ports, local, writers, tallies, last) if local is not None else None
            yield from _read_range(split, ports, order, data, analysed, ids)
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
    analysed: _Analysed | None,
    ids: dict[tuple[str, int, str, int], str],
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """One range: its segments on the MSMQ ports, those of a connection no other range holds
    analysed here (``analysed``, :class:`_Analysed`), the others handed on by connection every
    :data:`FLUSH_SEGMENTS` segments (or :data:`FLUSH_BYTES`), then the range's statistics."""
    counts = FrameCounts(split.path)
    result = SplitResult(split)
    pending: dict[tuple[str, ...], list[Any]] = {}
    held = held_bytes = moved = moved_bytes = 0
    for offset, ts, seg in view_segments(read_split_views(split, result, data), counts, ports):
        if analysed is not None and analysed.take(offset, ts, seg):
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
    if analysed is not None:
        analysed.close()
    counts.problems.extend(str(p) for p in result.problems)
    stats = {
        "counts": counts,
        "start": split.start,
        "end": split.end,
        "first": result.first,
        "next": result.next,
        "records": result.records,
        "had_problems": bool(result.problems),
        "analysed_segments": analysed.segments if analysed is not None else 0,
        "analysed_bytes": analysed.bytes if analysed is not None else 0,
        "shuffled_segments": moved,
        "shuffled_bytes": moved_bytes,
    }
    yield ("s", split.path, str(split.start)), stats


class _Analysed:
    """The connections of one range that no other range holds (:class:`RangeLocal`), analysed as
    their segments come: each one's rows written once its last record there has been read
    (``last``: :func:`range_ends`, found here when not given)."""

    def __init__(
        self,
        split: Split,
        ports: frozenset[int],
        local: RangeLocal,
        writers: dict[str, PartWriter],
        tallies: Counter[tuple[str, str]],
        last: dict[Any, int] | None = None,
    ) -> None:
        self.split, self.ports, self.local, self.writers, self.tallies = split, ports, local, writers, tallies
        last = range_ends(split, ports) if last is None else last
        self.here = {key: not local.shuffled(split.path, key) for key in last}  # connection -> analysed here
        self.ends = frozenset(off for key, off in last.items() if self.here[key])
        self.whole: dict[Any, tuple[FlowRows, list[int]]] = {}  # connections analysed here, as their segments come
        self.pool = SpillPool()
        self.segments = self.bytes = 0

    def take(self, offset: int, ts: float, seg: Any) -> bool:
        """Whether the segment is of a connection analysed here (then it is fed to its rows)."""
        key = segment_connection(seg)
        here = self.here.get(key)
        if here is None:  # not seen by range_ends (cannot happen)
            here = self.here[key] = not self.local.shuffled(self.split.path, key)
        if not here:
            return False
        self.segments += 1
        self.bytes += len(seg.payload)
        entry = self.whole.get(key)
        if entry is None:
            fkey = FlowKey.of(seg.src, seg.sport, seg.dst, seg.dport)[0]
            rows = FlowRows(self.split.path, fkey, self.ports, self.writers["packets"].add, self.pool)
            entry = self.whole[key] = (rows, [0])
        entry[1][0] += 1
        entry[0].feed(ts, seg, entry[1][0])
        if offset in self.ends:
            _write_tables(self.whole.pop(key)[0].finish(), self.writers, self.tallies)
        return True

    def close(self) -> None:
        for builder, _position in self.whole.values():  # not ended where range_ends saw them end (cannot happen)
            _write_tables(builder.finish(), self.writers, self.tallies)
        self.pool.close()


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
    tables: Tables, writers: dict[str, PartWriter], counts: Counter[tuple[str, str]]
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
    import pyarrow as pa  # an optional heavy dependency (the spark extra), imported on the executors

    types = {"string": pa.string(), "long": pa.int64(), "double": pa.float64(), "boolean": pa.bool_(),
             "array<string>": pa.list_(pa.string())}
    return pa.schema([(name, types[kind]) for name, kind in SCHEMAS[table]])


def write_part(rows: Sequence[dict[str, Any]], table: str, out: str | FsFolder, index: int) -> None:
    """One Parquet file of a table, named after the partition (a retried task rewrites it)."""
    with PartWriter(table, out, index) as writer:
        writer.add(rows)


#: rows a :class:`PartWriter` holds before writing them as one row group
ROW_GROUP = 20_000


class PartWriter:
    """One Parquet file of a table, named after the partition, written a row group at a time as
    rows arrive (so a partition's rows are never all in memory), moved into place when closed
    (a retried task rewrites it; a failed one leaves no file).  Rows are held as columns, each
    row group written as one Arrow record batch: packet rows (:class:`harness.pipeline.flows.PacketRows`)
    come as columns already, other rows as dictionaries."""

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
        self.columns: dict[str, list[Any]] = {column: [] for column in self.schema.names}
        self.held = 0  #: rows held, not yet written
        self.count = 0
        self._writer: Any = None

    def add(self, rows: Sequence[dict[str, Any]]) -> None:
        if isinstance(rows, PacketRows):
            given = rows.columns()
            for column, values in self.columns.items():
                values += given[column]
        else:
            for column, values in self.columns.items():
                values += [row.get(column) for row in rows]
        self.held += len(rows)
        self.count += len(rows)
        if self.held >= ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa  # an optional heavy dependency (the spark extra), imported on the executors
        import pyarrow.parquet as pq  # (as pyarrow above)

        arrays = [pa.array(self.columns[f.name], type=f.type) for f in self.schema]
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.tmp, self.schema, compression="snappy", filesystem=self.fs)
        self._writer.write_batch(batch)
        self.columns = {column: [] for column in self.schema.names}
        self.held = 0

    def __enter__(self) -> PartWriter:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is None:
            if self.held or self._writer is None:
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
        self.spill = SpillFile()

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
