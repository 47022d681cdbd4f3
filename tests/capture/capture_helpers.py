"""Helpers for the capture tests: packets built with scapy, capture files written with scapy's
writers, and hand-built pcapng blocks for the cases scapy cannot write (big-endian sections,
if_tsresol, Simple and obsolete Packet Blocks, unknown blocks)."""

from __future__ import annotations

import io
import struct
from pathlib import Path

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw
from scapy.utils import PcapNgWriter, wrpcap

from harness.capture.pcapcommon import CaptureProblem, Record
from harness.capture.pcapfile import iter_records

T0 = 1_700_000_000.0


def tcp_pkt(
    payload: bytes = b"",
    *,
    seq: int = 1000,
    ack: int = 0,
    flags: str = "PA",
    src: str = "10.0.0.1",
    dst: str = "10.0.0.2",
    sport: int = 49759,
    dport: int = 1801,
    ts: float = T0,
) -> Packet:
    p = (
        Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
        / IP(src=src, dst=dst)
        / TCP(sport=sport, dport=dport, seq=seq, ack=ack, flags=flags)
    )
    if payload:
        p = p / Raw(payload)
    p.time = ts
    return p


def sample_packets(n: int = 10, *, size: int = 50) -> list[Packet]:
    return [tcp_pkt(bytes([i % 256]) * (size + i), seq=1000 + i * 1000, ts=T0 + i * 0.25 + i * 1e-6) for i in range(n)]


def write_pcap(path: Path, pkts: list[Packet], **kw: object) -> bytes:
    wrpcap(str(path), pkts, **kw)  # type: ignore[arg-type]
    return path.read_bytes()


def write_pcapng(path: Path, pkts: list[Packet]) -> bytes:
    w = PcapNgWriter(str(path))
    for p in pkts:
        w.write(p)
    w.close()
    return path.read_bytes()


def read_all(data: bytes, **kw: object) -> tuple[list[Record], list[CaptureProblem]]:
    recs: list[Record] = []
    probs: list[CaptureProblem] = []
    for item in iter_records(io.BytesIO(data), **kw):  # type: ignore[arg-type]
        (recs if isinstance(item, Record) else probs).append(item)
    return recs, probs


def record_offsets(data: bytes, endian: str = "<") -> list[int]:
    """Offsets of the records of a well-formed classic pcap, walked independently of the reader."""
    offs = []
    p = 24
    while p + 16 <= len(data):
        offs.append(p)
        caplen = struct.unpack_from(endian + "I", data, p + 8)[0]
        p += 16 + caplen
    return offs


# ---------------------------------------------------------------- pcapng by hand


def block(bo: str, btype: int, body: bytes, trailing: int | None = None) -> bytes:
    body += b"\x00" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack(bo + "II", btype, n) + body + struct.pack(bo + "I", n if trailing is None else trailing)


def shb(bo: str) -> bytes:
    return block(bo, 0x0A0D0D0A, struct.pack(bo + "IHHq", 0x1A2B3C4D, 1, 0, -1))


def option(bo: str, code: int, value: bytes) -> bytes:
    return struct.pack(bo + "HH", code, len(value)) + value + b"\x00" * (-len(value) % 4)


def idb(bo: str, linktype: int, snaplen: int = 0, tsresol: int | None = None, tsoffset: int | None = None) -> bytes:
    opts = b""
    if tsresol is not None:
        opts += option(bo, 9, bytes([tsresol]))
    if tsoffset is not None:
        opts += option(bo, 14, struct.pack(bo + "q", tsoffset))
    if opts:
        opts += struct.pack(bo + "HH", 0, 0)
    return block(bo, 1, struct.pack(bo + "HHI", linktype, 0, snaplen) + opts)


def epb(bo: str, ifid: int, ticks: int, data: bytes, wirelen: int | None = None, trailing: int | None = None) -> bytes:
    wl = len(data) if wirelen is None else wirelen
    body = struct.pack(bo + "IIIII", ifid, ticks >> 32, ticks & 0xFFFFFFFF, len(data), wl) + data
    return block(bo, 6, body, trailing)


def spb(bo: str, data: bytes) -> bytes:
    return block(bo, 3, struct.pack(bo + "I", len(data)) + data)


def old_pb(bo: str, ifid: int, ticks: int, data: bytes) -> bytes:
    body = struct.pack(bo + "HHIIII", ifid, 0, ticks >> 32, ticks & 0xFFFFFFFF, len(data), len(data)) + data
    return block(bo, 2, body)
