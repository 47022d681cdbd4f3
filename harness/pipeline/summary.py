"""The capture pipeline's summary (docs/pipeline.md, "Outputs"): ``summary.json`` (counts,
[MS-MQQB] 3.1 rule violations per rule and per peer, session outcomes, the first sessions that
broke a rule, and per input the reconciliation frames read = frames decoded + frames rejected,
with every capture problem and its offset) and ``report.txt``, made of what the tasks handed
back (:class:`Executed`) and the driver's plan (harness.pipeline.plan).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.capture.pcapcommon import CaptureProblem
from harness.pipeline.flows import FrameCounts
from harness.pipeline.outputs import FsFolder
from harness.pipeline.plan import JobPlan
from harness.pipeline.splits import InputFile, Split, SplitResult, check_chaining
from harness.pipeline.tasks import LISTED_PROBLEMS, TABLES

__all__ = ["Executed", "summarise", "write_summary"]


@dataclass
class Executed:
    """What the job's tasks handed back: the counts (``tallies``, as :func:`analyse_partition`
    and the read tasks keep them), each range's statistics, the connections the first pass found
    in more than one range and the seconds it took, the read stage's partitions, and what the
    cluster lost on the way."""

    tallies: Counter[tuple[str, str]]
    stats: list[dict[str, Any]]
    cross: int
    first_pass: float
    partitions: int
    failed_tasks: int
    lost_executors: int


def summarise(
    plan: JobPlan, done: Executed, files: list[InputFile], master: str, shown: str, started: float
) -> dict[str, Any]:
    """The summary of a job: ``shown`` names the output folder, ``started`` is when the job began
    (time.monotonic)."""
    tallies, stats = done.tallies, done.stats
    counts = {table: tallies[("table", table)] for table in TABLES}
    by_rule = {k[1]: n for k, n in tallies.items() if k[0] == "rule"}
    by_peer = {k[1]: n for k, n in tallies.items() if k[0] == "peer"}
    outcomes = {k[1]: n for k, n in tallies.items() if k[0] == "outcome"}
    problems = [json.loads(k[1]) for k in tallies if k[0] == "problem"]
    problems.sort(key=lambda e: (e["first_ts"], e["flow"]))
    reconciliation = _reconcile(stats, plan.paths, plan.bad)
    return {
        "out": shown,
        "master": master,
        "tasks": done.partitions,
        "hadoop_inputs": len(plan.remote),
        "split_size": plan.split_size,
        "joined_files": plan.order is not None,
        "inputs": len(plan.paths),
        "bytes": sum(f.size for f in files),
        "frames_read": sum(r["frames_read"] for r in reconciliation),
        "packets": counts["packets"],
        "sessions": counts["sessions"],
        "violations": counts["violations"],
        "violations_by_rule": dict(sorted(by_rule.items())),
        "violations_by_peer": dict(sorted((str(k), v) for k, v in by_peer.items())),
        "session_outcomes": dict(sorted(outcomes.items())),
        "sessions_with_problems": problems[:LISTED_PROBLEMS],
        "reconciliation": reconciliation,
        "read_task_segments": sum(s["analysed_segments"] for s in stats),
        "read_task_bytes": sum(s["analysed_bytes"] for s in stats),
        "shuffled_segments": sum(s["shuffled_segments"] for s in stats),
        "shuffled_bytes": sum(s["shuffled_bytes"] for s in stats),
        "shuffled_connections": done.cross,
        "first_pass_seconds": round(done.first_pass, 3),
        "failed_tasks": done.failed_tasks,
        "lost_executors": done.lost_executors,
        "seconds": round(time.monotonic() - started, 3),
    }


def write_summary(out: Path | FsFolder, summary: dict[str, Any]) -> None:
    """``summary.json`` and ``report.txt`` into the folder ``out``."""
    _write_text(out, "summary.json", json.dumps(summary, indent=2))
    _write_text(out, "report.txt", _report(summary))


def _reconcile(stats: list[dict[str, Any]], inputs: list[str], bad: dict[str, str]) -> list[dict[str, Any]]:
    by_input: dict[str, FrameCounts] = {p: FrameCounts(p) for p in inputs}
    results: list[SplitResult] = []
    for s in stats:
        counts: FrameCounts = s["counts"]
        by_input[counts.input].merge(counts)
        r = SplitResult(Split(counts.input, s["start"], s["end"]), s["records"], s["first"], s["next"])
        if s["had_problems"]:
            r.problems = [CaptureProblem(counts.input, s["start"], "problems in this range")]
        results.append(r)
    for problem in check_chaining(results):
        by_input[problem.path].problems.append(str(problem))
    read = {s["counts"].input for s in stats}
    for path in inputs:
        if path not in read:
            by_input[path].problems.append(f"{path}@0: not read (no task returned this input)")
    for path, reason in bad.items():
        if reason not in by_input[path].problems:
            by_input[path].problems.append(reason)
    return [by_input[p].row() for p in inputs]


def _write_text(out: Path | FsFolder, name: str, text: str) -> None:
    if isinstance(out, FsFolder):
        with out.fs.open_output_stream(out.join(name)) as f:
            f.write(text.encode())
    else:
        (out / name).write_text(text)


def _report(summary: dict[str, Any]) -> str:
    lines = [
        f"inputs {summary['inputs']}, frames {summary['frames_read']}, packets {summary['packets']}, "
        f"sessions {summary['sessions']}, violations {summary['violations']}",
        "",
        "violations per rule:",
        *(f"  {k:<45} {v}" for k, v in summary["violations_by_rule"].items()),
        "",
        "violations per peer:",
        *(f"  {k:<45} {v}" for k, v in summary["violations_by_peer"].items()),
        "",
        "session outcomes:",
        *(f"  {k:<45} {v}" for k, v in summary["session_outcomes"].items()),
        "",
        "sessions that broke a rule (capture-to-case INPUT --flow FLOW --out case.yaml makes a case of one):",
        *(
            f"  {p['flow']}  {p['client']} -> {p['server']}  {p['first_ts']:.6f}-{p['last_ts']:.6f}  "
            f"{', '.join(p['rules'])}  [{p['input']}]"
            for p in summary["sessions_with_problems"]
        ),
        "",
        "inputs (frames read = decoded + rejected):",
    ]
    for r in summary["reconciliation"]:
        mark = "ok" if r["balanced"] else "MISMATCH"
        lines.append(
            f"  {r['input']}: {r['frames_read']} = {r['frames_decoded']} + {r['frames_rejected']} [{mark}], "
            f"{len(r['problems'])} capture problems"
        )
        lines += [f"    {p}" for p in r["problems"]]
    return "\n".join(lines) + "\n"
