"""What the capture pipeline's driver plans before any task runs (docs/pipeline.md): the input
files read directly cut into byte ranges and packed into tasks
(:func:`harness.pipeline.splits.plan_tasks`: classic pcap files at record boundaries), those
read through the Hadoop layer, the number of shuffle partitions (one per
:data:`SHUFFLE_BYTES` of capture at least), and, for inputs that are one capture cut into files,
their order.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.pipeline.splits import InputFile, Split, plan_tasks

__all__ = ["MIN_SPLIT", "SHUFFLE_BYTES", "JobPlan", "plan_job"]

MIN_SPLIT = 1 << 20
#: capture bytes per shuffle partition (a partition's connections are held in memory together)
SHUFFLE_BYTES = 64 << 20


@dataclass(frozen=True)
class JobPlan:
    """``paths``: every input, in order; ``ranges``: the read tasks of the inputs read directly,
    each a list of ranges; ``remote``: the inputs Spark reads whole (``binaryFiles``); ``bad``:
    input -> why it is not read; ``order``: input -> position when the inputs are one capture
    (``join_files``), else None; ``tasks``: the parallelism asked for; ``shuffle``: the shuffle
    partitions."""

    paths: list[str]
    ranges: list[list[Split]]
    remote: list[str]
    bad: dict[str, str]
    order: dict[str, int] | None
    tasks: int
    split_size: int
    shuffle: int
    total: int


def plan_job(
    files: list[InputFile], parallelism: int, partitions: int, split_size: int, join_files: bool
) -> JobPlan:
    """The plan for ``files`` on a cluster of ``parallelism`` (Spark's default); ``partitions``
    and ``split_size`` as the user gave them (0: derived)."""
    paths = [f.path for f in files]
    local = [f for f in files if f.format != "unread"]
    tasks = partitions or 2 * parallelism
    total = sum(f.size for f in files)
    split_size = split_size or max(MIN_SPLIT, -(-total // tasks))
    return JobPlan(
        paths=paths,
        ranges=plan_tasks(local, split_size, tasks) if local else [],
        remote=[f.path for f in files if f.format == "unread"],
        bad={f.path: f.problem for f in files if f.format == "bad"},
        order={p: i for i, p in enumerate(paths)} if join_files else None,
        tasks=tasks,
        split_size=split_size,
        shuffle=max(tasks, -(-total // SHUFFLE_BYTES)),
        total=total,
    )
