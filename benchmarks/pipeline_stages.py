"""Where the one-process chain's CPU goes: each stage of :func:`harness.pipeline.flows.iter_local`
timed alone on the same capture, in MB of capture per CPU-second of this process (in process, no
start-up), beside the whole chain with its rows written to Parquet (as the one-process row of
``bench_pipeline`` runs it: every stage below is part of it).

The stages: the first pass (record views to connection keys), reading the records in place and
decoding their TCP segments (as the chain reads them: :func:`harness.pipeline.flows.view_segments`),
``packets.parse`` ([MS-MQMQ] 2.2.19-2.2.20, non-strict, as the chain parses) of every packet the
chain framed, the passive observer ([MS-MQQB] 3.1 session rules) given those
packets in the order the chain gave them (its own CPU: parse and observer together, less the
parse), and the Parquet writer given the chain's rows as the chain hands them on (packet rows
as :class:`harness.pipeline.flows.PacketRows`: columns, no dictionary per row).
``ceiling_stages_only`` is the chain's rate if everything between the stages (reassembly,
framing, events, rows, collection of garbage) cost nothing: what the stages alone allow, whatever
is done to the rest.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

IN_PROCESS = "in process, no start-up"


def _best(work: Callable[[], Any], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best


def _chain(path: Path, out: Path) -> None:
    """The one-process path: :func:`harness.pipeline.flows.iter_local` with its rows written to
    Parquet by the job's own writers (as ``bench_pipeline``'s one-process row runs it)."""
    from harness.pipeline.flows import iter_local
    from harness.pipeline.tasks import TABLES, PartWriter

    shutil.rmtree(out, ignore_errors=True)
    with ExitStack() as stack:
        writers = {t: stack.enter_context(PartWriter(t, str(out), 0)) for t in TABLES}
        for tables in iter_local([str(path)]):
            for table, rows in tables.items():
                writers[table].add(rows)


def _collect(path: Path, folder: Path) -> tuple[float, list[list[tuple[str, bytes, float]]], list[tuple[str, Any]]]:
    """The whole chain's CPU on ``path`` (Parquet written; the best of two runs), what its observer
    was given (per connection: direction, packet bytes, capture time) and its rows, (table,
    batch) as the chain handed them on."""
    from harness.pipeline.flows import iter_local
    from harness.session.observer import Observer

    given: dict[int, list[tuple[str, bytes, float]]] = {}
    observers: list[Any] = []  # kept alive: no id is reused while the chain runs
    real = Observer.packet

    def keep(observer: Any, direction: str, data: bytes, packet: Any = None, timestamp: Any = None) -> Any:
        session = given.get(id(observer))
        if session is None:
            session = given[id(observer)] = []
            observers.append(observer)
        session.append((direction, data, timestamp))
        return real(observer, direction, data, packet, timestamp)

    batches: list[tuple[str, Any]] = []
    chain = _best(lambda: _chain(path, folder / "chain-out"), 2)
    Observer.packet = keep  # type: ignore[method-assign]
    try:
        for found in iter_local([str(path)]):
            batches.extend(found.items())
    finally:
        Observer.packet = real  # type: ignore[method-assign]
    return chain, list(given.values()), batches


def stage_row(path: Path, folder: Path) -> dict[str, Any]:
    """The stages of the chain on ``path``, alone, against the whole chain."""
    import packets
    from harness.pipeline.flows import DEFAULT_PORTS, FrameCounts, first_reading, view_segments
    from harness.pipeline.splits import Split, SplitResult, read_split_views
    from harness.pipeline.tasks import TABLES, PartWriter
    from harness.session import Observer

    mb = path.stat().st_size / 1e6
    chain, sessions, batches = _collect(path, folder)
    split = Split(str(path), 0, path.stat().st_size)
    parse = packets.parse

    def parse_all() -> None:
        for session in sessions:
            for _d, data, _ts in session:
                parse(data, False)

    def parse_and_observe() -> None:
        for session in sessions:
            observer = Observer()
            for direction, data, ts in session:
                observer.packet(direction, data, parse(data, False), ts)
            observer.end({"client": 0, "server": 0})

    def parquet() -> None:
        out = folder / "stages-out"
        shutil.rmtree(out, ignore_errors=True)
        with ExitStack() as stack:
            writers = {t: stack.enter_context(PartWriter(t, str(out), 0)) for t in TABLES}
            for table, rows in batches:
                writers[table].add(rows)

    counts = FrameCounts(str(path))
    cpu = {
        "first_pass": _best(lambda: sum(1 for _ in first_reading(split, DEFAULT_PORTS))),
        "reading_and_tcp": _best(
            lambda: sum(1 for _ in view_segments(read_split_views(split, SplitResult(split)), counts))
        ),
        "parse": _best(parse_all),
        "parquet": _best(parquet),
    }
    cpu["observer"] = max(_best(parse_and_observe) - cpu["parse"], 1e-6)
    stages = sum(cpu.values())
    row: dict[str, Any] = {
        "name": f"one-process chain by stage, each alone ({mb:.0f} MB head of the capture)",
        "unit": "MB/s per CPU-second",
        "competitor": "the whole chain (iter_local, Parquet written) on the same capture",
        "startup": IN_PROCESS,
        "whole_chain": mb / chain,
    }
    row.update({stage: mb / t for stage, t in cpu.items()})
    row["ceiling_stages_only"] = mb / stages
    row.update({f"{stage}_pct_of_chain": 100 * t / chain for stage, t in cpu.items()})
    row["between_stages_pct_of_chain"] = 100 * max(chain - stages, 0.0) / chain
    row["packets"] = sum(len(s) for s in sessions)
    return row


if __name__ == "__main__":  # python -m benchmarks.pipeline_stages CAPTURE
    import json
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(stage_row(Path(sys.argv[1]), Path(tmp)), indent=1))
