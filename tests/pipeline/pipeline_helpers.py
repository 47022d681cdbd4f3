"""Small synthetic captures and damaged copies of them for the pipeline tests."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from harness.capture.pcapfile import Record, iter_records
from harness.pipeline.synth import synthesize


def capture(tmp: Path, name: str = "c.pcap", sessions: int = 12, rate: float = 0.0, seed: int = 1,
            **kw: Any) -> tuple[Path, dict[str, Any]]:
    path = tmp / name
    manifest = synthesize(path, sessions, rate, seed=seed, **kw)
    return path, manifest


def records(path: Path) -> list[tuple[int, float, bytes]]:
    with path.open("rb") as f:
        return [(r.offset, r.ts, r.data) for r in iter_records(f, path=str(path)) if isinstance(r, Record)]


def record_offsets(path: Path) -> list[int]:
    return [off for off, _, _ in records(path)]


def set_caplen(data: bytearray, offset: int, caplen: int) -> None:
    struct.pack_into("<I", data, offset + 8, caplen)
