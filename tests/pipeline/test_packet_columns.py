"""Packet rows held as columns ([MS-MQMQ] 2.2.19-2.2.20 packets, one tuple a packet,
:class:`harness.pipeline.flows.PacketRows`) read as the row dictionaries they stand for, and the
Parquet writer gives the same table from them as from those dictionaries."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from harness.pipeline.flows import PACKET_ROW_KEYS, PacketRows, iter_local
from harness.pipeline.synth import ANOMALIES, synthesize
from harness.pipeline.tasks import SCHEMAS, PartWriter


def _batches(tmp_path: Path) -> list[PacketRows]:
    path = tmp_path / "c.pcap"
    synthesize(path, 12, 0.6, seed=3, kinds=tuple(ANOMALIES))
    found = [t["packets"] for t in iter_local([str(path)])]
    assert all(isinstance(b, PacketRows) for b in found)
    return [b for b in found if isinstance(b, PacketRows)]


def test_rows_read_as_dictionaries(tmp_path: Path) -> None:
    batches = _batches(tmp_path)
    assert sum(len(b) for b in batches) > 50
    assert {name for name, _kind in SCHEMAS["packets"]} == set(PACKET_ROW_KEYS)
    problems = 0
    for batch in batches:
        rows = list(batch)
        assert len(rows) == len(batch)
        assert all(list(row) == list(PACKET_ROW_KEYS) for row in rows)
        assert [batch[i] for i in range(len(batch))] == rows
        assert batch[1:3] == rows[1:3] and (not rows or batch[-1] == rows[-1])
        columns = batch.columns()
        for name in PACKET_ROW_KEYS:
            values = [list(v) for v in columns[name]] if name == "problems" else list(columns[name])
            assert values == [row[name] for row in rows], name
        for row in rows:
            problems += bool(row["problems"])
            row["problems"].append("changed")  # each row's list is its own
        assert not any("changed" in r["problems"] for r in batch)
    assert problems  # the anomalies broke rules: some rows carry problems


def test_parquet_from_columns_equals_parquet_from_rows(tmp_path: Path) -> None:
    batches = _batches(tmp_path)
    with PartWriter("packets", str(tmp_path / "columns"), 0) as writer:
        for batch in batches:
            writer.add(batch)
    with PartWriter("packets", str(tmp_path / "rows"), 0) as writer:
        for batch in batches:
            writer.add(list(batch))
    a = pq.read_table(tmp_path / "columns" / "packets")
    b = pq.read_table(tmp_path / "rows" / "packets")
    assert a.schema == b.schema and a.num_rows == sum(len(x) for x in batches)
    assert a.to_pylist() == b.to_pylist() == [row for x in batches for row in x]
    empty = PacketRows("x", "f")
    assert len(empty) == 0 and list(empty) == [] and all(not v for v in empty.columns().values())
