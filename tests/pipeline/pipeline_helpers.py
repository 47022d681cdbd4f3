"""Small synthetic captures and damaged copies of them for the pipeline tests."""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from scapy.layers.l2 import Ether  # noqa: F401  (frames read back as Ethernet)
from scapy.utils import PcapNgWriter, rdpcap

from harness.capture.pcapcommon import Record
from harness.capture.pcapfile import iter_records
from harness.cli import main as cli_main
from harness.peers import InitiatorLink, SimulatedPeer
from harness.pipeline.synth import synthesize
from harness.session import Initiator, SessionConfig, user_message


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


ROOT = Path(__file__).resolve().parent.parent.parent
SPLIT = 24 * 1024  # small ranges, so the anomaly capture is read by several tasks
CLIENT_QM = "{6B1D2C3A-4E5F-4A6B-8C7D-9E0F1A2B3C4D}"


def record_loopback(pcap: Path) -> int:
    """A real exchange on loopback recorded by the simulated peer: the first connection answered
    with a bad BaseHeader.Signature (the initiator closes and retries), the second one clean."""
    peer_config = SessionConfig(order_ack_timeout=0.02, maximum_order_ack_delay=0.05)
    with SimulatedPeer(config=peer_config, record=pcap) as peer:
        peer.queue_behaviours(["bad-signature", "normal"])
        initiator = Initiator(CLIENT_QM, peer.identifier, config=SessionConfig(session_retry_connect=0.01))
        with InitiatorLink(initiator, peer.address, timeout=5.0) as link:
            for n in range(5):
                link.send_message(user_message(CLIENT_QM, peer.identifier, b"m%d" % n), "express")
            assert link.run_until(lambda: len(peer.delivered) == 5, 10.0)
        assert peer.wait_for(lambda: len(peer.connections) == 2 and all(c.closed for c in peer.connections), 5.0)
        return int(peer.address[1])


def write_pcapng(src: Path, dst: Path) -> None:
    """The same frames as a pcapng file (Section Header, Interface Description, Enhanced Packet Blocks)."""
    writer = PcapNgWriter(str(dst))
    for frame in rdpcap(str(src)):
        writer.write(frame)
    writer.close()


def table(out: Path, name: str) -> list[dict[str, Any]]:
    rows = pq.read_table(out / name).to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def make_inputs(d: Path) -> dict[str, Any]:
    """A synthetic capture with anomalies, a clean one, four damaged files and a loopback recording."""
    d.mkdir(parents=True, exist_ok=True)
    anomalies, manifest = capture(d, "anomalies.pcap", sessions=24, rate=0.5, seed=5)
    clean, clean_manifest = capture(d, "clean.pcap", sessions=6, seed=6)
    data = clean.read_bytes()
    offs = record_offsets(clean)
    bad = d / "bad"
    bad.mkdir()
    (bad / "truncated.pcap").write_bytes(data[: offs[-3] + 20])
    (bad / "badmagic.pcap").write_bytes(b"\xde\xad\xbe\xef" + data[4:])
    damaged = bytearray(data)
    set_caplen(damaged, offs[30], 70000)
    (bad / "caplen.pcap").write_bytes(bytes(damaged))
    garbage = bytes(random.Random(9).randrange(256) for _ in range(41))
    (bad / "garbage.pcap").write_bytes(data[: offs[50] + 30] + garbage + data[offs[50] + 30 :])
    pcapng = d / "clean.pcapng"
    write_pcapng(clean, pcapng)
    loopback = d / "loopback" / "peer.pcap"
    loopback.parent.mkdir()
    port = record_loopback(loopback)
    return {
        "paths": [str(anomalies), str(clean), str(bad), str(loopback), str(pcapng)],
        "pcapng": str(pcapng),
        "loopback": str(loopback),
        "ports": f"1801,{port}",
        "manifest": manifest,
        "clean_manifest": clean_manifest,
        "bad": {"truncated": offs[-3], "badmagic": 0, "caplen": offs[30], "garbage": offs[50]},
        "bad_dir": bad,
    }


def local_run(inputs: dict[str, Any], out: Path) -> Path:
    argv = ["pipeline", *inputs["paths"], "--out", str(out), "--master", "local[2]", "--partitions", "4",
            "--split-size", str(SPLIT), "--ports", inputs["ports"], "--quiet"]
    assert cli_main(argv) == 0
    return out
