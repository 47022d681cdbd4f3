"""Benchmark of the [MS-MQDMPR] reference model: receives/s and memory, indexed vs literal.

Measures Dequeue Message (3.1.7.1.10, no cursor, iTimeout 0) on a queue of 1,000,000 messages
with 0, 1,000 and 100,000 Locked positions (3.1.1.11) ahead of the first Available one, for the
indexed model (harness.model.QueueManager) and the literal oracle
(harness.model.literal.LiteralQueueManager, the step-by-step walk of 3.1.7.3.2); and the
resident-memory growth of 1,000,000 queued messages with empty bodies, measured in a subprocess
from /proc/self/status VmRSS. ``python -m benchmarks.bench_model [--quick]`` prints a table and
JSON; ``run(quick)`` returns the rows.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

from harness.model import (
    Message,
    Queue,
    QueueAccessType,
    QueueManager,
    QueueShareMode,
)
from harness.model.literal import LiteralQueueManager

PATH = "LOCALHOST\\private$\\bench"
FORMAT = "DIRECT=OS:LOCALHOST\\private$\\bench"


def _setup(cls: type[QueueManager], n: int, locked: int) -> tuple[QueueManager, Any]:
    qm = cls(QueueManagerQuota=1 << 62)
    template = qm.new_queue(Queue, PATH)
    qm.set_queue_defaults(template)
    template.Pathname = PATH
    _, queue = qm.create_queue(template)
    assert queue is not None
    tx = qm.create_transaction("bench")
    enqueue = qm.enqueue_message
    for _ in range(locked):  # Locked: enqueued inside a transaction that never commits
        enqueue(queue, Message(), tx)
    for _ in range(n - locked):
        enqueue(queue, Message())
    _, desc = qm.open_queue(FORMAT, QueueAccessType.ReceiveAccess, QueueShareMode.DenyNone)
    return qm, desc


def _receives_per_second(cls: type[QueueManager], n: int, locked: int, receives: int) -> float:
    qm, desc = _setup(cls, n, locked)
    dequeue = qm.dequeue_message
    t0 = time.perf_counter()
    for _ in range(receives):
        r = dequeue(desc, 0)
        if r.rStatus != 0:
            raise RuntimeError(f"receive failed: {r}")
    elapsed = time.perf_counter() - t0
    return receives / elapsed


_RSS_SCRIPT = r"""
import gc, sys
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) * 1024
from harness.model import Message, Queue, QueueManager
n = int(sys.argv[1])
qm = QueueManager(QueueManagerQuota=1 << 62)
t = qm.new_queue(Queue, 'LOCALHOST\\private$\\m'); qm.set_queue_defaults(t)
t.Pathname = 'LOCALHOST\\private$\\m'
_, q = qm.create_queue(t)
gc.collect(); before = rss()
for _ in range(n):
    qm.enqueue_message(q, Message())
gc.collect(); after = rss()
assert len(q.MessagePositionList) == n
print(after - before)
"""


def _rss_growth(n: int) -> int:
    out = subprocess.run(
        [sys.executable, "-c", _RSS_SCRIPT, str(n)], capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip())


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Rows: name, ours, literal, unit, ratio (ours / literal, or ours / limit for memory)."""
    n = 100_000 if quick else 1_000_000
    rows: list[dict[str, Any]] = []
    for locked in (0, 1_000, 100_000):
        lk = min(locked, n // 2)
        ours = _receives_per_second(QueueManager, n, lk, 20_000 if quick else 100_000)
        lit_receives = 20_000 if lk == 0 else max(20, 2_000_000 // max(lk, 1))
        if quick:
            lit_receives = min(lit_receives, 2_000)
        literal = _receives_per_second(LiteralQueueManager, n, lk, lit_receives)
        rows.append({
            "name": f"receive, {n:,} queued, {lk:,} Locked ahead",
            "competitor": "the literal message-position list (the test oracle)",
            "ours": round(ours),
            "literal": round(literal),
            "unit": "receives/s",
            "ratio": round(ours / literal, 2),
        })
    m = 100_000 if quick else 1_000_000
    growth = _rss_growth(m)
    rows.append({
        "name": f"RSS growth, {m:,} queued empty messages",
        "competitor": "the 1 GiB limit",
        "ours": round(growth / 2**20, 1),
        "literal": None,
        "unit": "MiB (limit 1024)",
        "ratio": round(growth / 2**30, 3),
    })
    return rows


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    rows = run(quick="--quick" in args)
    print(f"{'benchmark':52} {'ours':>12} {'literal':>12} {'ratio':>8}  unit")
    for r in rows:
        lit = "-" if r["literal"] is None else f"{r['literal']:,}"
        print(f"{r['name']:52} {r['ours']:>12,} {lit:>12} {r['ratio']:>8}  {r['unit']}")
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
