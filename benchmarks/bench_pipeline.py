"""Capture pipeline speed: frames and MSMQ packets per second on a synthetic capture.

The capture is written by ``msmq-harness synth`` (sessions of EstablishConnection,
ConnectionParameters, UserMessages and acknowledgments, [MS-MQQB] 3.1, over TCP 1801).  Compared:

- pipeline: the Spark job (:func:`harness.pipeline.job.run_pipeline`) on ``local[2]``, Parquet
  written, JVM start-up excluded (the session is created before the clock starts);
- one process: the same functions in one Python process (:func:`harness.pipeline.flows.iter_local`:
  read, decode frames, reassemble, ``decode_pieces``, the observer; rows handed on per connection
  and dropped), no output written;
- scapy: ``rdpcap`` with the MSMQ scapy layers bound to TCP 1801 (every frame dissected down to its
  MSMQ layers), on the first ``SCAPY_FRAMES`` frames (scapy is slow; its rate is per frame).

Sizes: ``BENCH_PIPELINE_FRAMES`` (default 1,600,000 frames, which carry more than 1,000,000 MSMQ
packets; 20,000 with --quick) and ``BENCH_PIPELINE_SCAPY_FRAMES`` (default 20,000; 5,000 with --quick).

Parse calls per packet: ``packets.parse`` calls counted through the one-process chain (every
packet parsed once, for its row and for the observer).

Decode memory: peak resident memory of ``msmq-harness decode --json`` written to /dev/null, on
captures of ``BENCH_PIPELINE_DECODE_SESSIONS`` (default 13,000 sessions, about 185 MB; 1,000 with
--quick; 0 skips it) and twice as many sessions: it must not grow with the capture.

Driver memory: ``msmq-harness pipeline --master local[2]`` in a subprocess on a capture of
``BENCH_PIPELINE_BIG_BYTES`` (default 2,000,000,000; 50,000,000 with --quick; 0 skips it), with the
resident memory of the driver (its Python process and the Spark driver JVM it starts) and of the
whole process tree (with the Python workers) sampled from /proc every 0.1 s.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FRAMES_PER_SESSION = 22  # about, with 8 UserMessages per session


def _capture(folder: Path, frames: int) -> tuple[Path, int]:
    from harness.pipeline.synth import synthesize

    path = folder / "bench.pcap"
    manifest = synthesize(path, max(1, frames // FRAMES_PER_SESSION), 0.02, seed=11, manifest=folder / "m.json")
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


def run(quick: bool = False) -> list[dict[str, Any]]:
    frames = int(os.environ.get("BENCH_PIPELINE_FRAMES", 20_000 if quick else 1_600_000))
    scapy_frames = int(os.environ.get("BENCH_PIPELINE_SCAPY_FRAMES", 5_000 if quick else 20_000))
    folder = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    try:
        t = time.perf_counter()
        path, records = _capture(folder, frames)
        synth_s = time.perf_counter() - t
        size = path.stat().st_size

        from harness.pipeline.flows import iter_local

        t = time.perf_counter()
        msmq_packets = sum(len(tables["packets"]) for tables in iter_local([str(path)]))
        local_s = time.perf_counter() - t
        calls_per_packet = _parse_calls(path) / max(1, msmq_packets)

        from harness.pipeline.job import run_pipeline, spark_session

        spark = spark_session("local[2]", 4)
        try:
            t = time.perf_counter()
            summary = run_pipeline([str(path)], folder / "out", spark=spark, partitions=4, progress=False)
            spark_s = time.perf_counter() - t
        finally:
            spark.stop()

        from scapy.utils import rdpcap

        import packets.scapy_layers  # noqa: F401  (binds the MSMQ layers to TCP 1801)

        small = folder / "head.pcap"
        _head(path, small, scapy_frames)
        t = time.perf_counter()
        dissected = rdpcap(str(small))
        layers = sum(1 for p in dissected for _ in _msmq_layers(p))
        scapy_s = time.perf_counter() - t
        scapy_rate = len(dissected) / scapy_s
        rows = [
            {
                "name": f"synth capture ({records:,} frames, {size / 1e6:.0f} MB)",
                "unit": "frames/s",
                "synth": records / synth_s,
            },
            {
                "name": "frames decoded to MSMQ packets and sessions",
                "unit": "frames/s",
                "pipeline_local2": records / spark_s,
                "one_process": records / local_s,
                "scapy_rdpcap": scapy_rate,
                "pipeline_vs_scapy": records / spark_s / scapy_rate,
                "one_process_vs_scapy": records / local_s / scapy_rate,
            },
            {
                "name": "MSMQ packets decoded and checked",
                "unit": "packets/s",
                "pipeline_local2": summary["packets"] / spark_s,
                "one_process": msmq_packets / local_s,
                "scapy_rdpcap": layers / scapy_s,
                "msmq_packets": summary["packets"],
            },
            {
                "name": "wall time",
                "unit": "s",
                "pipeline_local2": spark_s,
                "one_process": local_s,
                "scapy_rdpcap": scapy_s,
                "scapy_frames": len(dissected),
            },
        ]
        rows.append(
            {"name": "packets.parse calls per MSMQ packet (one process)", "unit": "calls", "calls": calls_per_packet}
        )
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

    row: dict[str, Any] = {"name": "decode --json > /dev/null, peak RSS at 1x and 2x the capture", "unit": "MiB"}
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


def _driver_memory(folder: Path, size: int) -> dict[str, Any]:
    """Peak resident memory of the pipeline's driver on a capture of about ``size`` bytes."""
    import subprocess
    import sys

    from harness.pipeline.synth import synthesize

    path = folder / "big.pcap"
    synthesize(path, max(1, size // BYTES_PER_SESSION), 0.02, seed=12, manifest=folder / "big.json")
    actual = path.stat().st_size
    cmd = [sys.executable, "-m", "harness.pipeline", str(path), "--out", str(folder / "big-out"),
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
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}")
    return {
        "name": f"driver memory, {actual / 1e9:.2f} GB capture on local[2]",
        "unit": "MiB (limit 2048)",
        "driver_peak": round(driver / 2**20),
        "process_tree_peak": round(tree / 2**20),
        "wall_s": round(elapsed, 1),
    }


def _msmq_layers(pkt: Any) -> Any:
    from packets.scapy_layers import MSMQ

    layer = pkt.getlayer(MSMQ)
    while layer is not None:
        yield layer
        layer = layer.payload.getlayer(MSMQ) if layer.payload else None
