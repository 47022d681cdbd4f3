"""Capture pipeline speed against the targets of issues 12 and 23, on one synthetic capture.

The capture is written by ``msmq-harness synth`` (sessions of EstablishConnection,
ConnectionParameters, UserMessages and acknowledgments, [MS-MQQB] 3.1, over TCP 1801).  Every
row names its competitor.  Compared, on the same file, each run ``BENCH_PIPELINE_REPEAT`` times
(default 1; 3 with --quick) and the best kept:

- reading, the reader's ceiling: a struct/memoryview loop decoding each record to its TCP
  payload (the competitor), dpkt doing the same, scapy's PcapReader (frames dissected, the MSMQ
  layers bound);
- pipeline local[1] and local[2]: ``python -m harness.pipeline`` as a user runs it, each in a
  process of its own (a fresh JVM and Spark session), 2 tasks per core, Parquet written; its CPU
  is that of the whole process tree (the driver's own at its exit, the JVM's and the Python
  workers' sampled from /proc), so MB/s "per CPU-second" counts every core it used.  The
  start-up is the same command on a capture of about ``BENCH_PIPELINE_TINY_SESSIONS`` sessions
  (default 120, about 1.7 MB), shown apart, and the rate is also given with its CPU taken off;
- one process: the same functions in one Python process (:func:`harness.pipeline.flows.iter_local`:
  read, decode frames, reassemble, ``decode_pieces``, the observer) with the rows written to
  Parquet by the job's own :class:`harness.pipeline.tasks.PartWriter`, per CPU-second of this
  process;
- scapy: ``rdpcap`` with the MSMQ scapy layers bound to TCP 1801, on the first ``SCAPY_FRAMES``
  frames (its rate is per frame).

Every row states its start-up apart: ``startup`` says "in process, no start-up" for work timed
inside the benchmark's own process; rows that time a process carry the start-up's own figures
(``startup_cpu_s_*`` of the process tree, ``startup_wall_s_*``, ``startup_*peak*``) and their
rates are given both with it and with it taken off (``*_after_startup``).  Every rate "per
CPU-second" of a Spark run counts the CPU of its whole process tree (driver, JVM, Python
workers); the in-process rows count this process's.

Rows with a target carry it and whether it is met (``yes`` / ``no``): at least 30 MB per
CPU-second of the process tree end to end (decode + session checks + Parquet), the one-process
path at least 40; local[2] at least 1.8x local[1] and faster than one process (wall).  The
shuffle row says how many TCP segments (and payload bytes) the reading tasks analysed
themselves and how many went through the shuffle (``summary.json``'s ``read_task_*`` and
``shuffled_*``).

Sizes: ``BENCH_PIPELINE_FRAMES`` (default 1,600,000 frames, which carry more than 1,000,000 MSMQ
packets; 20,000 with --quick) and ``BENCH_PIPELINE_SCAPY_FRAMES`` (default 20,000; 5,000 with --quick).

Stages: the one-process chain's stages each alone (:mod:`benchmarks.pipeline_stages`) on the first
``BENCH_PIPELINE_STAGE_FRAMES`` frames (default 100,000; 20,000 with --quick), beside the whole
chain on them, and the rate the stages alone allow.

Parse calls per packet: ``packets.parse`` calls counted through the one-process chain (every
packet parsed once, for its row and for the observer).

Decode memory: peak resident memory of ``msmq-harness decode --json`` written to /dev/null, on
captures of ``BENCH_PIPELINE_DECODE_SESSIONS`` (default 13,000 sessions, about 185 MB; 1,000 with
--quick; 0 skips it) and twice as many sessions: it must not grow with the capture; the start-up's
is ``decode --help`` (the interpreter and decode's imports).

Driver memory: ``msmq-harness pipeline --master local[2]`` in a subprocess on captures of half and
all of ``BENCH_PIPELINE_BIG_BYTES`` (default 2,000,000,000; 50,000,000 with --quick; 0 skips it),
with the
resident memory of the driver (its Python process and the Spark driver JVM it starts) and of the
whole process tree (with the Python workers) sampled from /proc every 0.1 s; the start-up's is the
same command on a capture of about 1.2 MB.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TypeVar

FRAMES_PER_SESSION = 22  # about, with 8 UserMessages per session
TARGET_MB_PER_CORE = 30.0  # issue 23: per CPU-second of the whole process tree
TARGET_ONE_PROCESS_MB_PER_CORE = 40.0  # issue 23
TARGET_LOCAL2_VS_LOCAL1 = 1.8
TARGET_LOCAL2_VS_ONE_PROCESS = 1.0  # faster than one process
IN_PROCESS = "in process, no start-up"

T = TypeVar("T")


def _capture(folder: Path, frames: int, name: str = "bench") -> tuple[Path, int]:
    from harness.pipeline.synth import synthesize

    path = folder / f"{name}.pcap"
    manifest = synthesize(path, max(1, frames // FRAMES_PER_SESSION), 0.02, seed=11, manifest=folder / f"{name}.json")
    return path, int(manifest["records"])


def _head(src: Path, dst: Path, frames: int) -> None:
    """The first ``frames`` records of a classic pcap file."""
    import struct

    with src.open("rb") as f, dst.open("wb") as out:
        out.write(f.read(24))
        for _ in range(frames):
            head = f.read(16)
            if len(head) < 16:
                break
            caplen = struct.unpack("<I", head[8:12])[0]
            out.write(head + f.read(caplen))


def _best(repeat: int, work: Callable[[], T], clock: Callable[[], float] = time.perf_counter) -> tuple[float, T]:
    """The shortest time (wall, or ``clock``'s) of ``repeat`` runs of ``work``, and what the last
    run returned."""
    best = float("inf")
    result: Any = None
    for _ in range(max(1, repeat)):
        t = clock()
        result = work()
        best = min(best, clock() - t)
    return best, result


def _dpkt(path: Path) -> int:
    """dpkt's bare iteration: every record read and decoded to its TCP payload (payload bytes)."""
    import dpkt

    payload = 0
    with path.open("rb") as f:
        for _ts, buf in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(buf).data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP):
                payload += len(ip.data.data)
    return payload


def _struct_loop(path: Path) -> int:
    """The reader's ceiling: every record of a classic pcap read with struct from a memoryview and
    decoded to its TCP payload (Ethernet, IPv4, TCP headers; payload bytes)."""
    data = memoryview(path.read_bytes())
    magic = data[:4].tobytes()
    order = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    record = struct.Struct(order + "IIII")
    unpack_record, size = record.unpack_from, len(data)
    payload, at = 0, 24
    while at + 16 <= size:
        _s, _us, caplen, _len = unpack_record(data, at)
        at += 16
        frame = data[at : at + caplen]
        at += caplen
        if caplen < 34 or frame[12] != 0x08 or frame[13] != 0x00:  # IPv4 over Ethernet
            continue
        ihl = (frame[14] & 0x0F) * 4
        total = frame[16] << 8 | frame[17]
        if frame[23] != 6:  # TCP
            continue
        tcp = 14 + ihl
        offset = (frame[tcp + 12] >> 4) * 4
        payload += max(0, min(total + 14, caplen) - tcp - offset)
    return payload


def _scapy_reader(path: Path) -> float:
    """MB/s per CPU-second of scapy's PcapReader iterating ``path`` (frames dissected, MSMQ layers
    bound to TCP 1801)."""
    from scapy.utils import PcapReader

    import packets.scapy_layers  # noqa: F401

    start = time.process_time()
    with PcapReader(str(path)) as reader:
        for _pkt in reader:
            pass
    return path.stat().st_size / 1e6 / (time.process_time() - start)


def _cpu_of(work: Callable[[], Any]) -> float:
    """CPU seconds of this process while ``work`` runs."""
    start = time.process_time()
    work()
    return time.process_time() - start


# Runs the pipeline's command line in this interpreter and, at exit, writes the CPU seconds of
# the driver process itself (RUSAGE_SELF) to argv[1].
_PIPELINE_WITH_CPU = """
import atexit, json, resource, runpy, sys
out = sys.argv.pop(1)
@atexit.register
def _report():
    u = resource.getrusage(resource.RUSAGE_SELF)
    with open(out, "w") as f:
        json.dump({"self": u.ru_utime + u.ru_stime}, f)
sys.argv[0] = "harness.pipeline"
runpy.run_module("harness.pipeline", run_name="__main__")
"""


def _own_cpu(pid: int) -> float:
    """CPU seconds a process has used itself (utime + stime of /proc/PID/stat), 0 if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: the processes of a pipeline run its CPU is given by (:func:`_pipeline_process`)
PROCESS_KINDS = ("driver", "jvm", "python_workers", "other")


def _pipeline_process(path: Path, out: Path, cores: int) -> dict[str, float]:
    """``python -m harness.pipeline PATH --master local[cores]`` in a process of its own: wall
    seconds (start-up included) and CPU seconds of the whole process tree: the driver's own (at
    its exit) plus every descendant's (the JVM, the Python workers), sampled from /proc every
    0.1 s (a descendant's last 0.1 s before it exits may be missed); and that CPU by process:
    ``driver_cpu``, ``jvm_cpu`` (the JVM: Spark's engine), ``python_workers_cpu`` (the Python
    worker daemon and the workers it forks), ``other_cpu`` (anything else)."""
    shutil.rmtree(out, ignore_errors=True)
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        cmd = [sys.executable, "-c", _PIPELINE_WITH_CPU, report.name, str(path), "--out", str(out),
               "--master", f"local[{cores}]", "--partitions", str(2 * cores), "--quiet"]  # fmt: skip
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        seen: dict[int, float] = {}
        kinds: dict[int, str] = {}
        while proc.poll() is None:
            for pid, (name, _rss) in _tree(proc.pid).items():
                if pid != proc.pid:
                    seen[pid] = max(seen.get(pid, 0.0), _own_cpu(pid))
                    kinds[pid] = _process_kind(name, pid, kinds.get(pid))
            time.sleep(0.1)
        wall = time.perf_counter() - start
        stderr = proc.stderr.read().decode() if proc.stderr else ""
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}: {stderr[-2000:]}")
        driver = json.loads(Path(report.name).read_text())["self"]
    by_kind = {kind: sum(cpu for pid, cpu in seen.items() if kinds[pid] == kind) for kind in PROCESS_KINDS[1:]}
    return {"wall": wall, "cpu": driver + sum(seen.values()), "driver_cpu": driver,
            **{f"{kind}_cpu": round(cpu, 2) for kind, cpu in by_kind.items()}}  # fmt: skip


def _process_kind(name: str, pid: int, before: str | None) -> str:
    """What a descendant of a pipeline's driver is: "jvm", "python_workers" (the worker daemon,
    or a worker it forked) or "other" (a launcher script, before it becomes the JVM)."""
    if before in ("jvm", "python_workers"):
        return before
    if name == "java":
        return "jvm"
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return before or "other"
    daemon = len(args) > 2 and args[1] == b"-m" and args[2].endswith(b"daemon")  # python -m ...daemon
    return "python_workers" if daemon else "other"


def _one_process(path: Path, out: Path) -> int:
    """:func:`iter_local` with its rows written to Parquet as the job writes them; MSMQ packets."""
    from harness.pipeline.flows import iter_local
    from harness.pipeline.tasks import TABLES, PartWriter

    shutil.rmtree(out, ignore_errors=True)
    packets = 0
    with ExitStack() as stack:
        writers = {t: stack.enter_context(PartWriter(t, str(out), 0)) for t in TABLES}
        for tables in iter_local([str(path)]):
            for table, rows in tables.items():
                writers[table].add(rows)
            packets += len(tables["packets"])
    return packets


def _met(ok: bool) -> str:
    return "yes" if ok else "no"


def run(quick: bool = False) -> list[dict[str, Any]]:
    frames = int(os.environ.get("BENCH_PIPELINE_FRAMES", 20_000 if quick else 1_600_000))
    scapy_frames = int(os.environ.get("BENCH_PIPELINE_SCAPY_FRAMES", 5_000 if quick else 20_000))
    repeat = int(os.environ.get("BENCH_PIPELINE_REPEAT", 3 if quick else 1))
    tiny_sessions = int(os.environ.get("BENCH_PIPELINE_TINY_SESSIONS", 120))
    folder = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    try:
        t = time.perf_counter()
        path, records = _capture(folder, frames)
        synth_s = time.perf_counter() - t
        size = path.stat().st_size
        mb = size / 1e6
        tiny, tiny_records = _capture(folder, tiny_sessions * FRAMES_PER_SESSION, "tiny")

        dpkt_s, _payload = _best(repeat, lambda: _dpkt(path), time.process_time)
        local_s, msmq_packets = _best(repeat, lambda: _one_process(path, folder / "one"))
        calls_per_packet = _parse_calls(path) / max(1, msmq_packets)

        # Spark as a user runs it: ``python -m harness.pipeline`` in a process of its own for each of
        # local[1] and local[2] (a fresh JVM and Spark session each), CPU of the whole process tree
        # (driver, JVM, Python workers); the start-up (the same command on the tiny capture) apart.
        spark: dict[int, dict[str, float]] = {}
        spark_startup: dict[int, dict[str, float]] = {}
        summaries: dict[int, dict[str, Any]] = {}
        for cores in (1, 2):
            spark_startup[cores] = _pipeline_process(tiny, folder / f"tiny-out-{cores}", cores)
            runs = [_pipeline_process(path, folder / f"out-{cores}", cores) for _ in range(repeat)]
            spark[cores] = min(runs, key=lambda r: r["wall"])
            summaries[cores] = json.loads((folder / f"out-{cores}" / "summary.json").read_text())
        spark_s = {cores: spark[cores]["wall"] for cores in spark}
        startup: dict[str, Any] = {
            f"local{cores}_{what}": round(spark_startup[cores][key], 2)
            for cores in (1, 2)
            for what, key in (("wall_s", "wall"), ("cpu_s", "cpu"))
        }
        startup["one_process_s"], _ = _best(repeat, lambda: _one_process(tiny, folder / "tiny-one"))
        local_cpu = _cpu_of(lambda: _one_process(path, folder / "one"))
        spark_cpu = {cores: spark[cores]["cpu"] for cores in spark}
        # CPU of the whole process tree with the start-up's taken off
        warm_cpu = {cores: max(spark_cpu[cores] - spark_startup[cores]["cpu"], 1e-6) for cores in spark}
        startup_fields: dict[str, Any] = {
            "startup_cpu_s_local2": round(spark_startup[2]["cpu"], 2),
            "startup_cpu_s_local1": round(spark_startup[1]["cpu"], 2),
            "startup_one_process": IN_PROCESS,
        }
        struct_s, struct_payload = _best(repeat, lambda: _struct_loop(path), time.process_time)
        _dpkt_check = _dpkt(path)
        assert struct_payload == _dpkt_check, (struct_payload, _dpkt_check)
        summary = summaries[2]

        from scapy.utils import rdpcap

        import packets.scapy_layers  # noqa: F401  (binds the MSMQ layers to TCP 1801)

        small = folder / "head.pcap"
        _head(path, small, scapy_frames)
        t = time.perf_counter()
        dissected = rdpcap(str(small))
        layers = sum(1 for p in dissected for _ in _msmq_layers(p))
        scapy_s = time.perf_counter() - t
        scapy_cpu, _ = _best(1, lambda: rdpcap(str(small)), time.process_time)
        scapy_rate = len(dissected) / scapy_cpu
        scapy_reader_mb = _scapy_reader(small)
        per_core = {  # MB per CPU-second of the whole process tree
            "pipeline_local2": mb / spark[2]["cpu"],
            "pipeline_local1": mb / spark[1]["cpu"],
            "pipeline_local2_after_startup": mb / warm_cpu[2],
            "pipeline_local1_after_startup": mb / warm_cpu[1],
            "one_process": mb / local_cpu,
            "competitor_struct_loop": mb / struct_s,
            "dpkt_iteration": mb / dpkt_s,
        }
        local2_vs_local1 = spark_s[1] / spark_s[2]
        local2_vs_one = local_s / spark_s[2]
        segments = summary["read_task_segments"] + summary["shuffled_segments"]
        payload = summary["read_task_bytes"] + summary["shuffled_bytes"]
        rows = [
            {
                "name": f"synth capture ({records:,} frames, {mb:.0f} MB)",
                "unit": "frames/s",
                "competitor": "none (the benchmark's input)",
                "startup": IN_PROCESS,
                "synth": records / synth_s,
            },
            {
                "name": "reading a pcap to TCP payloads (the reader's ceiling)",
                "unit": "MB/s per CPU-second",
                "competitor": "a struct/memoryview loop",
                "startup": IN_PROCESS,
                "struct_memoryview_loop": mb / struct_s,
                "dpkt": mb / dpkt_s,
                "scapy_PcapReader": scapy_reader_mb,
                "dpkt_vs_struct_loop": struct_s / dpkt_s,
                "struct_loop_cpu_s": struct_s,
                "dpkt_cpu_s": dpkt_s,
            },
            {
                "name": "end to end: decode + session checks + Parquet, each Spark run a fresh process",
                "unit": "MB/s per CPU-second of the process tree",
                "competitor": "the struct/memoryview reading loop (reading alone)",
                **startup_fields,
                **per_core,
                "wall_MB_s_local2": mb / spark_s[2],
                "wall_MB_s_local1": mb / spark_s[1],
                "cpu_s_local2": spark[2]["cpu"],
                "cpu_s_local1": spark[1]["cpu"],
                "cpu_s_local2_by_process": {k: spark[2][f"{k}_cpu"] for k in PROCESS_KINDS},
                "startup_cpu_s_local2_by_process": {k: spark_startup[2][f"{k}_cpu"] for k in PROCESS_KINDS},
                "target": TARGET_MB_PER_CORE,
                "local2_met": _met(per_core["pipeline_local2"] >= TARGET_MB_PER_CORE),
                "local1_met": _met(per_core["pipeline_local1"] >= TARGET_MB_PER_CORE),
                "local2_after_startup_met": _met(per_core["pipeline_local2_after_startup"] >= TARGET_MB_PER_CORE),
                "one_process_target": TARGET_ONE_PROCESS_MB_PER_CORE,
                "one_process_met": _met(per_core["one_process"] >= TARGET_ONE_PROCESS_MB_PER_CORE),
                "local2_of_struct_loop": per_core["pipeline_local2"] / per_core["competitor_struct_loop"],
                "one_process_of_struct_loop": per_core["one_process"] / per_core["competitor_struct_loop"],
            },
            {
                "name": "local[2] speed-up (same capture, wall, each a fresh process)",
                "unit": "x",
                "competitor": "local[1] and the one-process path",
                "startup_wall_s_local2": round(spark_startup[2]["wall"], 2),
                "startup_wall_s_local1": round(spark_startup[1]["wall"], 2),
                "startup_one_process": IN_PROCESS,
                "local2_vs_local1_after_startup": (spark_s[1] - spark_startup[1]["wall"])
                / max(spark_s[2] - spark_startup[2]["wall"], 1e-6),
                "local2_vs_local1": local2_vs_local1,
                "target_vs_local1": TARGET_LOCAL2_VS_LOCAL1,
                "vs_local1_met": _met(local2_vs_local1 >= TARGET_LOCAL2_VS_LOCAL1),
                "local2_vs_one_process": local2_vs_one,
                "target_vs_one_process": TARGET_LOCAL2_VS_ONE_PROCESS,
                "vs_one_process_met": _met(local2_vs_one > TARGET_LOCAL2_VS_ONE_PROCESS),
            },
            {
                "name": f"start-up: the same command on a {tiny.stat().st_size / 1e6:.1f} MB capture "
                f"({tiny_records:,} frames)",
                "unit": "s",
                "competitor": "the one-process path",
                "startup": "this row is the start-up: the whole command on a capture with almost nothing to do",
                **startup,
            },
            {
                "name": "TCP segments analysed in the reading task vs shuffled (local[2])",
                "unit": "segments",
                "competitor": "none: a count (segments the reading tasks analysed themselves against those "
                "the shuffle moved), the ideal being no shuffle",
                "startup": "not applicable (a count)",
                "read_task": summary["read_task_segments"],
                "shuffled": summary["shuffled_segments"],
                "shuffled_pct": 100 * summary["shuffled_segments"] / max(1, segments),
                "shuffled_bytes_pct": 100 * summary["shuffled_bytes"] / max(1, payload),
                "shuffled_connections": summary["shuffled_connections"],
                "connections": summary["sessions"],
                "first_pass_s": summary["first_pass_seconds"],
            },
            {
                "name": "frames decoded to MSMQ packets and sessions",
                "unit": "frames per CPU-second of the process tree",
                "competitor": "scapy rdpcap with the project's MSMQ layers (in process)",
                **startup_fields,
                "pipeline_local2": records / spark_cpu[2],
                "pipeline_local1": records / spark_cpu[1],
                "pipeline_local2_after_startup": records / warm_cpu[2],
                "pipeline_local1_after_startup": records / warm_cpu[1],
                "one_process": records / local_cpu,
                "dpkt_iteration": records / dpkt_s,
                "scapy_rdpcap": scapy_rate,
                "pipeline_local2_vs_scapy": records / spark_cpu[2] / scapy_rate,
                "one_process_vs_scapy": records / local_cpu / scapy_rate,
            },
            {
                "name": "MSMQ packets decoded and checked",
                "unit": "packets per CPU-second of the process tree",
                "competitor": "scapy rdpcap with the project's MSMQ layers (in process)",
                **startup_fields,
                "pipeline_local2": summary["packets"] / spark_cpu[2],
                "pipeline_local1": summaries[1]["packets"] / spark_cpu[1],
                "pipeline_local2_after_startup": summary["packets"] / warm_cpu[2],
                "pipeline_local1_after_startup": summaries[1]["packets"] / warm_cpu[1],
                "one_process": msmq_packets / local_cpu,
                "scapy_rdpcap": layers / scapy_cpu,
                "msmq_packets": summary["packets"],
            },
            {
                "name": "wall time (load on the machine included)",
                "unit": "s",
                "competitor": "the one-process path and scapy rdpcap (in process)",
                "startup_wall_s_local2": round(spark_startup[2]["wall"], 2),
                "startup_wall_s_local1": round(spark_startup[1]["wall"], 2),
                "startup_one_process": IN_PROCESS,
                "pipeline_local2": spark_s[2],
                "pipeline_local1": spark_s[1],
                "one_process": local_s,
                "scapy_rdpcap": scapy_s,
                "scapy_frames": len(dissected),
                "repeat": repeat,
            },
        ]
        rows.append(
            {
                "name": "packets.parse calls per MSMQ packet (one process)",
                "unit": "calls",
                "competitor": "one call",
                "startup": IN_PROCESS,
                "calls": calls_per_packet,
            }
        )
        from benchmarks.pipeline_stages import stage_row

        head = folder / "stages.pcap"
        _head(path, head, int(os.environ.get("BENCH_PIPELINE_STAGE_FRAMES", 20_000 if quick else 100_000)))
        rows.append(stage_row(head, folder))
        sessions = int(os.environ.get("BENCH_PIPELINE_DECODE_SESSIONS", 1_000 if quick else 13_000))
        if sessions:
            rows.append(_decode_memory(folder, sessions))
        big = int(os.environ.get("BENCH_PIPELINE_BIG_BYTES", 50_000_000 if quick else 2_000_000_000))
        if big:
            rows.append(_driver_memory(folder, big))
        return rows
    finally:
        shutil.rmtree(folder, ignore_errors=True)


BYTES_PER_SESSION = 10_050  # synth's sessions, on average, in a classic pcap file
TINY_BYTES = 120 * BYTES_PER_SESSION  # the start-up's capture, as the tiny capture of run()


def _parse_calls(path: Path) -> int:
    """``packets.parse`` calls while the one-process chain reads ``path``."""
    import packets
    from harness.pipeline.flows import iter_local

    real = packets.parse
    calls = 0

    def counting(data: Any, strict: bool = True) -> Any:
        nonlocal calls
        calls += 1
        return real(data, strict)

    packets.parse = counting  # type: ignore[assignment]
    try:
        for _tables in iter_local([str(path)]):
            pass
    finally:
        packets.parse = real  # type: ignore[assignment]
    return calls


_MEASURE = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_pid, status, usage = os.wait4(proc.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def _peak_rss(cmd: list[str]) -> tuple[int, float]:
    """Peak resident bytes and wall seconds of ``cmd``, its output to /dev/null.  Linux keeps a
    process's peak across fork and exec, so a child forked from this (large) process would report
    this process's size: ``cmd`` is started by a small Python process started for the purpose."""
    import subprocess

    start = time.perf_counter()
    said = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], capture_output=True, text=True, check=True)
    code, peak_kib = (int(x) for x in said.stdout.split())
    if code != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {code}")
    return peak_kib * 1024, time.perf_counter() - start


def _decode_memory(folder: Path, sessions: int) -> dict[str, Any]:
    """Peak resident memory of ``decode --json`` on a capture of ``sessions`` sessions and on one
    of twice as many: flat when decode streams."""
    import sys

    from harness.pipeline.synth import synthesize

    row: dict[str, Any] = {
        "name": "decode --json > /dev/null, peak RSS at 1x and 2x the capture",
        "unit": "MiB",
        "competitor": "itself on half the capture (flat: streaming)",
    }
    rss, wall = _peak_rss([sys.executable, "-m", "harness.cli", "decode", "--help"])
    row["startup_peak"] = round(rss / 2**20)  # the interpreter and decode's imports, no capture
    row["startup_wall_s"] = round(wall, 1)
    for scale in (1, 2):
        path = folder / f"decode-{scale}x.pcap"
        synthesize(path, sessions * scale, 0.02, seed=11, manifest=folder / f"decode-{scale}x.json")
        rss, wall = _peak_rss([sys.executable, "-m", "harness.cli", "decode", "--json", str(path)])
        row[f"capture_{scale}x_MB"] = round(path.stat().st_size / 1e6)
        row[f"peak_{scale}x"] = round(rss / 2**20)
        row[f"wall_{scale}x_s"] = round(wall, 1)
        path.unlink()
    row["peak_2x_over_1x"] = row["peak_2x"] / max(1, row["peak_1x"])
    return row


def _tree(root: int) -> dict[int, tuple[str, int]]:
    """pid -> (command name, resident bytes) of ``root`` and its descendants, from /proc."""
    found: dict[int, tuple[str, int]] = {}
    children: dict[int, list[int]] = {}
    info: dict[int, tuple[str, int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        rss = int(fields.get("VmRSS", "0 kB").split()[0]) * 1024
        info[int(entry.name)] = (fields.get("Name", "").strip(), rss)
        children.setdefault(int(fields.get("PPid", "0").strip()), []).append(int(entry.name))
    stack = [root]
    while stack:
        pid = stack.pop()
        if pid in info:
            found[pid] = info[pid]
            stack.extend(children.get(pid, []))
    return found


def _driver_peak(folder: Path, size: int) -> tuple[int, int, int, float]:
    """(capture bytes, driver peak, process tree peak, wall seconds) of ``msmq-harness pipeline``
    on ``local[2]`` on a capture of about ``size`` bytes; the driver is the Python process and
    its JVM."""
    import subprocess

    from harness.pipeline.synth import synthesize

    path = folder / f"big-{size}.pcap"
    synthesize(path, max(1, size // BYTES_PER_SESSION), 0.02, seed=12, manifest=folder / f"big-{size}.json")
    actual = path.stat().st_size
    cmd = [sys.executable, "-m", "harness.pipeline", str(path), "--out", str(folder / f"big-{size}-out"),
           "--master", "local[2]", "--quiet"]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    driver = tree = 0
    while proc.poll() is None:
        procs = _tree(proc.pid)
        own = sum(rss for pid, (name, rss) in procs.items() if pid == proc.pid or name == "java")
        driver, tree = max(driver, own), max(tree, sum(rss for _, rss in procs.values()))
        time.sleep(0.1)
    elapsed = time.perf_counter() - start
    path.unlink()
    shutil.rmtree(folder / f"big-{size}-out", ignore_errors=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}")
    return actual, driver, tree, elapsed


def _driver_memory(folder: Path, size: int) -> dict[str, Any]:
    """Peak resident memory of the pipeline's driver on captures of about ``size / 2`` and
    ``size`` bytes: flat in capture size when the second is no larger than the first (within
    the JVM's own heap growth)."""
    half, driver_half, tree_half, wall_half = _driver_peak(folder, size // 2)
    full, driver, tree, wall = _driver_peak(folder, size)
    _tiny, driver_startup, tree_startup, wall_startup = _driver_peak(folder, TINY_BYTES)
    return {
        "name": f"driver memory, {half / 1e9:.2f} GB and {full / 1e9:.2f} GB captures on local[2]",
        "unit": "MiB (limit 2048)",
        "competitor": "itself on half the capture, and the 2 GiB limit",
        "startup_driver_peak": round(driver_startup / 2**20),
        "startup_process_tree_peak": round(tree_startup / 2**20),
        "startup_wall_s": round(wall_startup, 1),
        "driver_peak_half": round(driver_half / 2**20),
        "driver_peak": round(driver / 2**20),
        "driver_full_over_half": round(driver / max(1, driver_half), 2),
        "process_tree_peak_half": round(tree_half / 2**20),
        "process_tree_peak": round(tree / 2**20),
        "wall_s_half": round(wall_half, 1),
        "wall_s": round(wall, 1),
    }


def _msmq_layers(pkt: Any) -> Any:
    from packets.scapy_layers import MSMQ

    layer = pkt.getlayer(MSMQ)
    while layer is not None:
        yield layer
        layer = layer.payload.getlayer(MSMQ) if layer.payload else None
