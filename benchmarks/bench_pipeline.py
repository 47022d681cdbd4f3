"""Capture pipeline speed: frames and MSMQ packets per second on a synthetic capture.

The capture is written by ``msmq-harness synth`` (sessions of EstablishConnection,
ConnectionParameters, UserMessages and acknowledgments, [MS-MQQB] 3.1, over TCP 1801).  Compared:

- pipeline: the Spark job (:func:`harness.pipeline.job.run_pipeline`) on ``local[2]``, Parquet
  written, JVM start-up excluded (the session is created before the clock starts);
- one process: the same functions in one Python process (:func:`harness.pipeline.flows.process_local`:
  read, decode frames, reassemble, ``decode_pieces``, the observer), no output written;
- scapy: ``rdpcap`` with the MSMQ scapy layers bound to TCP 1801 (every frame dissected down to its
  MSMQ layers), on the first ``SCAPY_FRAMES`` frames (scapy is slow; its rate is per frame).

Sizes: ``BENCH_PIPELINE_FRAMES`` (default 100,000; 20,000 with --quick) and
``BENCH_PIPELINE_SCAPY_FRAMES`` (default 20,000; 5,000 with --quick).
"""

from __future__ import annotations

import os
import shutil
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
    frames = int(os.environ.get("BENCH_PIPELINE_FRAMES", 20_000 if quick else 100_000))
    scapy_frames = int(os.environ.get("BENCH_PIPELINE_SCAPY_FRAMES", 5_000 if quick else 20_000))
    folder = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    try:
        t = time.perf_counter()
        path, records = _capture(folder, frames)
        synth_s = time.perf_counter() - t
        size = path.stat().st_size

        from harness.pipeline.flows import process_local

        t = time.perf_counter()
        tables, _counts = process_local([str(path)])
        local_s = time.perf_counter() - t
        msmq_packets = len(tables["packets"])

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
        return [
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
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _msmq_layers(pkt: Any) -> Any:
    from packets.scapy_layers import MSMQ

    layer = pkt.getlayer(MSMQ)
    while layer is not None:
        yield layer
        layer = layer.payload.getlayer(MSMQ) if layer.payload else None
