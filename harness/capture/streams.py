"""From a capture file to the MSMQ byte streams it holds.

Reads a pcap/pcapng file (pcapfile), decodes each frame to its TCP segment (frames), keeps the
segments of the MSMQ ports ([MS-MQQB] 2.1.1: TCP 1801) and reassembles each direction of each
flow (tcp).  Every problem on the way — a damaged record, an undecodable frame, a gap in a
stream — is kept with its offset, so the caller can report it next to the packets.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness.capture.frames import FrameProblem, TcpSegment, decode_tcp
from harness.capture.pcapfile import CaptureProblem, Record, iter_records
from harness.capture.tcp import Gap, StreamProblem, reassemble

__all__ = ["CaptureStream", "capture_segments", "capture_streams"]


@dataclass
class CaptureStream:
    """One direction of one flow: contiguous runs of bytes between gaps."""

    flow: str
    direction: str  # "client" (towards the MSMQ port) or "server"
    pieces: list[tuple[int, bytes]]
    gaps: list[Gap] = field(default_factory=list)
    problems: list[StreamProblem] = field(default_factory=list)
    timestamps: dict[int, float] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.flow} {self.direction}"


@dataclass
class CaptureReading:
    """What reading the file produced besides segments: the problems, with offsets."""

    records: int = 0
    frames_not_tcp: int = 0
    problems: list[str] = field(default_factory=list)


def capture_segments(
    path: str | Path, ports: Iterable[int], reading: CaptureReading
) -> Iterator[tuple[float, TcpSegment]]:
    """TCP segments to or from ``ports``, in capture order; problems go to ``reading``."""
    port_set = frozenset(ports)
    with open(path, "rb") as f:
        for item in iter_records(f, path=str(path)):
            if isinstance(item, CaptureProblem):
                reading.problems.append(str(item))
                continue
            assert isinstance(item, Record)
            reading.records += 1
            seg = decode_tcp(item.linktype, item.data)
            if seg is None:
                reading.frames_not_tcp += 1
            elif isinstance(seg, FrameProblem):
                reading.problems.append(f"{path}: record at {item.offset}: {seg.reason} (frame byte {seg.offset})")
            elif seg.sport in port_set or seg.dport in port_set:
                yield item.ts, seg


def capture_streams(
    path: str | Path, ports: Iterable[int] = frozenset({1801}), reading: CaptureReading | None = None
) -> Iterator[CaptureStream]:
    """Both directions of every MSMQ flow in the capture, client side first."""
    reading = reading if reading is not None else CaptureReading()
    port_set = frozenset(ports)
    flows = reassemble(capture_segments(path, port_set, reading), port_set)
    for flow in sorted(flows.values(), key=lambda f: f.first_ts):
        for direction, side in (("client", flow.client), ("server", flow.server)):
            if side.pieces or side.gaps:
                yield CaptureStream(flow.id, direction, side.pieces, side.gaps, side.problems, side.timestamps)
