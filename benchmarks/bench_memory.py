"""Memory of ``decode`` and of a pipeline worker on one long TCP connection (issue 21, item 5).

The capture: one clean MSMQ session of about ``BENCH_MEMORY_BYTES`` bytes (default 120,000,000;
12,000,000 with --quick) on one TCP connection, written by
:func:`harness.pipeline.synth.single_connection` with UserMessages of synth's sizes (16 to 2,400
bytes of body, about 115,000 of them at 120 MB).  Each row is the peak resident memory of a
process started for the purpose (its output to /dev/null), against the limit of 300 MiB:

- ``decode --json`` (stream order) and ``decode --json --order capture``;
- a pipeline worker, three ways: the one-process chain (:func:`harness.pipeline.flows.iter_local`,
  what a Spark task runs on a whole file); the two stages of a Spark job on a capture cut into
  ranges, each in its own process -- the read task (:func:`harness.pipeline.tasks.read_task` over
  every range, the connection's segments handed on, here to a file) and the shuffle partition
  (:func:`harness.pipeline.tasks.analyse_partition` reading them back one list at a time, as Spark
  hands them over); and ``msmq-harness pipeline --master local[1]`` itself, the largest of its
  Python worker processes, sampled from /proc every 0.1 s (``BENCH_MEMORY_SPARK=0`` skips it).

And the passive observer's state for one session ([MS-MQQB] 3.1.5.8.1, 3.1.5.7: the MessageIDs
sent on it, :mod:`harness.session.msgids`), in bytes of the objects it holds, after 1,000 and after
1,000,000 (100,000 with --quick) sequential UserMessages fed to :meth:`Observer.packet`.
"""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_pipeline import _peak_rss, _tree

LIMIT_MIB = 300
MIX = (16, 64, 200, 900, 2400)  # synth's UserMessage body sizes

_ONE_PROCESS = """
import sys
from harness.pipeline.flows import iter_local
for _tables in iter_local([sys.argv[1]]):
    pass
"""

_READ_TASKS = """
import pickle, sys
from harness.pipeline import tasks
from harness.pipeline.splits import describe, plan_tasks
plan = plan_tasks([describe(sys.argv[1])], int(sys.argv[3]), 4)
with open(sys.argv[2], "wb") as out:
    for splits in plan:
        for item in tasks.read_task(splits, frozenset({1801})):
            pickle.dump(item, out, protocol=pickle.HIGHEST_PROTOCOL)
"""

_PARTITION = """
import pickle, sys
from harness.pipeline import tasks

def items():
    with open(sys.argv[1], "rb") as f:
        while True:
            try:
                yield pickle.load(f)
            except EOFError:
                return

for _kind, _value in tasks.analyse_partition(0, items(), frozenset({1801}), sys.argv[2]):
    pass
"""


def _met(peak: int) -> str:
    return "yes" if peak < LIMIT_MIB else "no"


def _spark_worker_peak(path: Path, out: Path) -> tuple[int, int, float]:
    """(largest Python worker, whole process tree) peak resident MiB of ``msmq-harness pipeline
    --master local[1]``, and its wall seconds."""
    cmd = [sys.executable, "-m", "harness.pipeline", str(path), "--out", str(out), "--master", "local[1]", "--quiet"]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = tree = 0
    while proc.poll() is None:
        procs = _tree(proc.pid)
        workers = [rss for pid, (name, rss) in procs.items() if pid != proc.pid and name.startswith("python")]
        worker = max(worker, max(workers, default=0))
        tree = max(tree, sum(rss for _, rss in procs.values()))
        time.sleep(0.1)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}")
    return worker >> 20, tree >> 20, time.perf_counter() - start


def deep_size(root: object) -> int:
    """Bytes of ``root`` and of every object it reaches (classes, modules and functions aside)."""
    seen: set[int] = set()
    total, todo = 0, [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, type) or type(obj).__name__ in ("module", "function", "cell"):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        todo.extend(gc.get_referents(obj))
    return total


def observer_state(messages: int) -> dict[str, Any]:
    """The observer's state after 1,000 and after ``messages`` sequential UserMessages."""
    import packets
    from harness.session import Observer, user_message
    from packets import GUID
    from packets import session as sp

    ini, acc = GUID("{11111111-2222-3333-4444-555555555555}"), GUID("{AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE}")
    o = Observer(acc)
    cp = packets.build(sp.connection_parameters(0x1F4, 0x4E20, 64))
    o.packet("client", packets.build(sp.establish_connection(ini, acc, 1000)))
    o.packet("server", packets.build(sp.establish_connection(ini, acc, 1000, response=True)))
    o.packet("client", cp)
    o.packet("server", cp)
    data = packets.build(user_message(ini, acc, b"m", message_id=1))
    packet = packets.parse(data, strict=False)
    sizes = {}
    start = time.perf_counter()
    for n in range(1, messages + 1):
        packet.UserHeader.MessageID = n
        o.packet("client", data, packet)
        if n in (1_000, messages):
            sizes[n] = deep_size(o)
    wall = time.perf_counter() - start
    return {
        "name": f"observer state of one session, 1,000 vs {messages:,} sequential UserMessages",
        "unit": "bytes",
        "competitor": "itself after 1,000 messages (flat: bounded), in this process (no start-up)",
        "after_1000": sizes[1_000],
        f"after_{messages}": sizes[messages],
        "growth": sizes[messages] - sizes[1_000],
        "met": "yes" if sizes[messages] - sizes[1_000] < 1024 else "no",
        "wall_s": wall,
    }


def run(quick: bool = False) -> list[dict[str, Any]]:
    from harness.pipeline.synth import single_connection

    size = int(os.environ.get("BENCH_MEMORY_BYTES", 12_000_000 if quick else 120_000_000))
    folder = Path(tempfile.mkdtemp(prefix="bench-memory-"))
    try:
        path = folder / "one-connection.pcap"
        t = time.perf_counter()
        made = single_connection(path, size, seed=21, bodies=MIX)
        synth_s = time.perf_counter() - t
        mb = made["bytes"] / 1e6
        what = f"{mb:.0f} MB, {made['messages']:,} UserMessages, {made['records']:,} frames"
        rows: list[dict[str, Any]] = [{"name": f"one TCP connection: {what}", "unit": "s", "synth": synth_s}]
        python = sys.executable

        # the competitor of each process's peak: the start-up alone (the interpreter, the harness
        # imported, nothing read), stated apart in each row
        def startup_of(imports: str) -> dict[str, Any]:
            rss, wall = _peak_rss([python, "-c", f"import {imports}"])
            return {
                "competitor": f"start-up alone: python -c 'import {imports}' (startup_peak)",
                "startup_peak": rss >> 20,
                "startup_wall_s": wall,
            }

        startup = startup_of("harness.cli")
        for order in ("stream", "capture"):
            rss, wall = _peak_rss([python, "-m", "harness.cli", "decode", "--json", "--order", order, str(path)])
            peak = rss >> 20
            rows.append(
                {
                    "name": f"decode --json --order {order} > /dev/null, peak RSS",
                    "unit": f"MiB (limit {LIMIT_MIB})",
                    "peak": peak,
                    "met": _met(peak),
                    "per_MB_of_capture": peak / mb,
                    "wall_s": wall,
                    **startup,
                }
            )
        rss, wall = _peak_rss([python, "-c", _ONE_PROCESS, str(path)])
        rows.append(
            {
                "name": "pipeline worker, one process (iter_local), peak RSS",
                "unit": f"MiB (limit {LIMIT_MIB})",
                "peak": rss >> 20,
                "met": _met(rss >> 20),
                "wall_s": wall,
                **startup_of("harness.pipeline.flows"),
            }
        )
        shuffled = folder / "shuffled.pickle"
        ranges = max(1 << 20, made["bytes"] // 16)  # cut into 16 ranges: the connection is shuffled
        read_rss, read_wall = _peak_rss([python, "-c", _READ_TASKS, str(path), str(shuffled), str(ranges)])
        part_rss, part_wall = _peak_rss([python, "-c", _PARTITION, str(shuffled), str(folder / "tables")])
        rows.append(
            {
                "name": "pipeline worker, 16 ranges: read task / shuffle partition, peak RSS",
                "unit": f"MiB (limit {LIMIT_MIB})",
                "read_task_peak": read_rss >> 20,
                "partition_peak": part_rss >> 20,
                "met": _met(max(read_rss, part_rss) >> 20),
                "read_task_wall_s": read_wall,
                "partition_wall_s": part_wall,
                **startup_of("harness.pipeline.job"),
            }
        )
        if os.environ.get("BENCH_MEMORY_SPARK", "1") != "0":
            worker, tree, wall = _spark_worker_peak(path, folder / "spark-out")
            rows.append(
                {
                    "name": "pipeline --master local[1]: largest Python worker, peak RSS",
                    "unit": f"MiB (limit {LIMIT_MIB})",
                    "worker_peak": worker,
                    "met": _met(worker),
                    "process_tree_peak": tree,
                    "wall_s": wall,
                }
            )
        rows.append(observer_state(100_000 if quick else 1_000_000))
        return rows
    finally:
        shutil.rmtree(folder, ignore_errors=True)
