"""Record boundaries are proven, not guessed: message bodies that hold bytes looking like pcap
record headers -- a whole pcap file, chains of plausible record headers, ``03 00 00 00`` runs --
cannot make a range start inside a record.  At any split size the ranges the driver plans give
exactly the sequential reader's records, and they chain."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from harness.capture.pcapfile import iter_records
from harness.pipeline.splits import SplitResult, check_chaining, describe, plan_tasks, read_split

TS = 1_700_000_000


def _pcap(records: list[bytes], ts: int = TS) -> bytes:
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for i, data in enumerate(records):
        out.append(struct.pack("<IIII", ts + i, i, len(data), len(data)) + data)
    return b"".join(out)


def _adversarial_body(rng: random.Random, i: int) -> bytes:
    kind = i % 4
    if kind == 0:  # a whole pcap file of plausible records, timestamps next to the real ones
        inner = [bytes(rng.randrange(256) for _ in range(rng.randrange(20, 60))) for _ in range(24)]
        return _pcap(inner, TS + i)[24:] + _pcap(inner[:3], TS + i)
    if kind == 1:  # a run of 03 00 00 00
        return b"\x03\x00\x00\x00" * rng.randrange(20, 200)
    if kind == 2:  # record headers whose lengths point at further headers
        chain = b""
        for k in range(20):
            chain += struct.pack("<IIII", TS + i, k, 8, 8) + b"\x00" * 8
        return chain
    return bytes(rng.randrange(256) for _ in range(rng.randrange(10, 400)))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = random.Random(11)
    path = tmp_path_factory.mktemp("adversarial") / "bodies.pcap"
    path.write_bytes(_pcap([_adversarial_body(rng, i) for i in range(160)]))
    return path


def _sequential(path: Path) -> list[tuple[int, bytes]]:
    with path.open("rb") as f:
        return [(r.offset, r.data) for r in iter_records(f, path=str(path)) if hasattr(r, "data")]


@pytest.mark.parametrize("split_size", [97, 500, 1_000, 4_096, 20_000])
def test_any_split_size_gives_the_sequential_records(hostile: Path, split_size: int) -> None:
    expected = _sequential(hostile)
    assert len(expected) == 160
    plan = plan_tasks([describe(str(hostile))], split_size, tasks=8)
    splits = [s for task in plan for s in task]
    assert len(splits) > 1 and all(s.proven for s in splits)
    got: list[tuple[int, bytes]] = []
    results = []
    for split in sorted(splits, key=lambda s: s.start):
        result = SplitResult(split)
        got += [(r.offset, r.data) for r in read_split(split, result)]
        results.append(result)
    assert got == expected
    assert not check_chaining(results) and not [p for r in results for p in r.problems]


def test_a_damaged_chain_is_read_by_one_task(tmp_path: Path) -> None:
    data = bytearray(_pcap([b"x" * 100] * 50))
    struct.pack_into("<I", data, 24 + 20 * 116 + 8, 0x7FFFFFFF)  # record 20: an impossible caplen
    path = tmp_path / "damaged.pcap"
    path.write_bytes(bytes(data))
    plan = plan_tasks([describe(str(path))], 500, tasks=4)
    assert [len(task) for task in plan] == [1] and not plan[0][0].proven


@pytest.mark.usefixtures("spark_local")  # its local Spark jobs run in process
def test_the_spark_job_equals_the_sequential_functions_whatever_the_bodies_hold(tmp_path: Path) -> None:
    """A real loopback session whose UserMessage bodies hold a pcap file and record-header-shaped
    bytes, cut into small ranges on local[2]: packets, sessions and violations equal those of the
    same functions run on the whole file, and the reconciliation balances."""
    import json

    from pipeline_helpers import CLIENT_QM, table

    from harness.cli import main as cli_main
    from harness.peers import InitiatorLink, SimulatedPeer
    from harness.pipeline.flows import process_local
    from harness.session import Initiator, SessionConfig, user_message

    rng = random.Random(5)
    pcap = tmp_path / "bodies.pcap"
    with SimulatedPeer(record=pcap) as peer:
        initiator = Initiator(CLIENT_QM, peer.identifier, config=SessionConfig())
        with InitiatorLink(initiator, peer.address, timeout=5.0) as link:
            for n in range(12):
                link.send_message(user_message(CLIENT_QM, peer.identifier, _adversarial_body(rng, n)), "express")
            assert link.run_until(lambda: len(peer.delivered) == 12, 10.0)
        port = int(peer.address[1])
    out = tmp_path / "out"
    argv = ["pipeline", str(pcap), "--out", str(out), "--master", "local[2]", "--quiet", "--split-size", "2048",
            "--ports", str(port)]  # fmt: skip
    assert cli_main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert all(r["balanced"] for r in summary["reconciliation"]), summary["reconciliation"]
    whole, _counts = process_local([str(pcap)], ports=frozenset({port}))
    for name in ("packets", "sessions", "violations"):
        assert table(out, name) == sorted(whole[name], key=lambda r: json.dumps(r, sort_keys=True, default=str)), name
    assert len(table(out, "packets")) >= 12
