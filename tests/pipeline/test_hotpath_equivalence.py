"""The one-process chain's results do not move when its hot path is made faster: the decoded
tables (packets, sessions, violations: [MS-MQQB] 3.1 session rules, [MS-MQMQ] 2.2.19-2.2.20
packets), the per-input reconciliation, the Parquet files the job writes from them and the
strict verdicts of ``msmq-harness decode --json`` are compared, on a synthetic capture with every
kind of anomaly and on the held-out capture of ``fixtures/captures``, with what the chain gave
before its hot path was cut (digests in ``hotpath_golden.json``, written by :func:`digests`).

On a difference, the test names the capture and the table; ``python -m
tests.pipeline.test_hotpath_equivalence`` prints the digests of the code as it is (to compare
with an older checkout's)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from harness.cli import main as cli_main
from harness.pipeline.flows import iter_local
from harness.pipeline.synth import ANOMALIES, synthesize
from harness.pipeline.tasks import TABLES, PartWriter

ROOT = Path(__file__).resolve().parent.parent.parent
GOLDEN = Path(__file__).with_name("hotpath_golden.json")
HELD_OUT = ROOT / "fixtures" / "captures" / "msmq-fixtures.pcap"


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=repr))


def _tables(path: Path, out: Path) -> dict[str, Any]:
    """The chain's rows (in the order made, and as the job writes them to Parquet, read back)
    and the input's reconciliation."""
    made: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}
    counts: list[Any] = []
    with ExitStack() as stack:
        writers = {t: stack.enter_context(PartWriter(t, str(out), 0)) for t in TABLES}
        for tables in iter_local([str(path)], counts=counts):
            for table, rows in tables.items():
                made[table].extend(dict(r) for r in rows)
                writers[table].add(rows)
    found: dict[str, Any] = {}
    for table in TABLES:
        for row in made[table]:
            row.pop("input", None)
        found[table] = {"rows": len(made[table]), "digest": _digest(made[table])}
        written = pq.read_table(out / table).to_pylist()
        for row in written:
            row.pop("input", None)
        found[f"{table}.parquet"] = _digest(_sorted(written))
    reconciliation = [c.row() for c in counts]
    for row in reconciliation:
        row.pop("input", None)
    found["counts"] = _digest(reconciliation)
    found["verdicts"] = _verdicts(path)
    return found


def _verdicts(path: Path) -> dict[str, Any]:
    """``msmq-harness decode --json``: every packet's row and the session verdicts."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = cli_main(["decode", "--json", str(path)])
    text = buffer.getvalue().replace(str(path), "<capture>")
    return {"exit": code, "lines": text.count("\n"), "digest": _digest(text)}


def _synthetic(folder: Path) -> Path:
    path = folder / "synth.pcap"
    synthesize(path, 60, 0.5, seed=23, kinds=tuple(ANOMALIES), manifest=folder / "synth.json")
    return path


def digests() -> dict[str, Any]:
    """The digests of every capture's tables, as the code computes them now."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        return {
            "synthetic": _tables(_synthetic(folder), folder / "synth-out"),
            "held_out": _tables(HELD_OUT, folder / "held-out-out"),
        }


def test_the_hot_path_gives_the_tables_and_verdicts_it_gave() -> None:
    golden = json.loads(GOLDEN.read_text())
    now = digests()
    for capture, tables in golden.items():
        for table, expected in tables.items():
            assert now[capture][table] == expected, f"{capture}: {table} differs"
    assert now["synthetic"]["violations"]["rows"] > 10  # the anomalies are judged
    assert now["synthetic"]["packets"]["rows"] > 500 and now["held_out"]["packets"]["rows"] > 10


if __name__ == "__main__":
    json.dump(digests(), sys.stdout, indent=2)
    print()
