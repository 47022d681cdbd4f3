"""Detection power: the corpus against deliberately broken variants of the reference.

Each entry of :data:`MUTANTS` is a class under ``examples/mutants/`` that breaks exactly one
rule (its docstring names the rule and section): a ``QueueManager`` subclass for an [MS-MQDMPR]
processing rule, run by the model cases as the target ``plugin:<entry>``, or an
``OutgoingQueueProcessing`` subclass for a rule of [MS-MQQB] 3.1.7.12, run by the initiator wire
cases as an external sender: the target ``cmd:python examples/reference_adapter.py --sender
<entry> --no-adm``, a separate process that reports no ADM state, so that it is caught through
the wire alone.  ``python -m harness.cases.mutants [--cases cases] [-n N]`` runs the corpus
against each one and prints which cases caught it.  A mutant is caught only by a
case that ``failed``: a MUST expectation the mutant broke.  Cases that erred or were only
non-strict against it are listed apart and catch nothing (a crash or a reading the spec allows
is no verdict on the rule).  The exit status is 1 when a mutant is not caught or when the corpus
does not pass against the reference itself.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

__all__ = ["MUTANTS", "MutantResult", "main", "run_mutant", "run_mutants", "target_of"]

MUTANTS: list[str] = [
    "examples.mutants.seek:SeekIgnoresAllowPeekWhenLocked",
    "examples.mutants.seek:PeekReturnsAnyLocked",
    "examples.mutants.seek:ForwardSeekIncludesInitial",
    "examples.mutants.seek:EnqueueIgnoresPriority",
    "examples.mutants.cursor:ReceiveFromReadKeepsRead",
    "examples.mutants.cursor:NoWaitIgnored",
    "examples.mutants.cursor:PeekFromReadIgnoresState",
    "examples.mutants.cursor:PeekNextFromUnreadAllowed",
    "examples.mutants.cursor:WaitExpiredKeepsPosition",
    "examples.mutants.queue:PurgeDeletesLocked",
    "examples.mutants.queue:AbortRequeuesAtTail",
    "examples.mutants.queue:CommitLeavesReceiveLocked",
    "examples.mutants.queue:TimeoutReturnsOK",
    "examples.mutants.queue:DestructiveReaderDoesNotStop",
    "examples.mutants.queue:TransactionalReceiveDeletes",
    "examples.mutants.queue:PauseIsNoop",
    "examples.mutants.sender:ProcessesLocalQueues",
    "examples.mutants.sender:ProcessesMulticastQueues",
    "examples.mutants.sender:ProcessesLockedQueues",
    "examples.mutants.sender:ProcessesOnHoldQueues",
    "examples.mutants.sender:ProcessesHttpQueues",
    "examples.mutants.sender:NeverConnects",
    "examples.mutants.sender:ConnectsAgainWhileAwaitingEstablishConnection",
    "examples.mutants.sender:ConnectsAgainWhileOpen",
    "examples.mutants.sender:ConnectsAgainWhileAwaitingReconnect",
]


@dataclass
class MutantResult:
    mutant: str
    caught_by: list[str] = field(default_factory=list)  # full ids of the cases that failed (a MUST broken)
    erred: list[str] = field(default_factory=list)  # cases that erred against it: no catch
    non_strict: list[str] = field(default_factory=list)  # cases only non-strict against it: no catch

    @property
    def caught(self) -> bool:
        return bool(self.caught_by)


def _load(paths: Sequence[str]) -> list:
    from harness.cases.loader import load_paths

    return load_paths(paths)


def target_of(mutant: str) -> str:
    """The target a mutant runs as: a sender through the adapter protocol, on the wire alone;
    any other class in process."""
    from pathlib import Path

    from harness.cases.targets.plugin import load_plugin_class
    from harness.session import OutgoingQueueProcessing

    if issubclass(load_plugin_class(mutant), OutgoingQueueProcessing):
        adapter = Path(__file__).resolve().parents[2] / "examples" / "reference_adapter.py"
        return f"cmd:{sys.executable} {adapter} --sender {mutant} --no-adm"
    return f"plugin:{mutant}"


def run_mutant(mutant: str, paths: Sequence[str] = ("cases",)) -> MutantResult:
    """The corpus against one mutant: the cases that failed against it, and those that erred or
    were only non-strict (which catch nothing)."""
    from harness.cases.runner import run

    result = run(_load(paths), target_of(mutant))

    def ids(outcome: str) -> list[str]:
        return [r.case_id for r in result.results if str(r.outcome) == outcome]

    return MutantResult(mutant, ids("failed"), ids("error"), ids("non_strict"))


def run_mutants(
    mutants: Sequence[str] = tuple(MUTANTS), paths: Sequence[str] = ("cases",), workers: int = 1
) -> list[MutantResult]:
    """Every mutant against the corpus, in order (``workers`` > 1: separate processes)."""
    if workers <= 1:
        return [run_mutant(m, paths) for m in mutants]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(run_mutant, mutants, [tuple(paths)] * len(mutants)))


def render(results: Sequence[MutantResult], first: int = 3) -> str:
    width = max((len(r.mutant) for r in results), default=6)
    lines = [f"{'mutant':<{width}}  caught by", f"{'-' * width}  ---------"]
    for r in results:
        if r.caught:
            more = f", ... (+{len(r.caught_by) - first})" if len(r.caught_by) > first else ""
            lines.append(f"{r.mutant:<{width}}  {len(r.caught_by):3d} cases: {', '.join(r.caught_by[:first])}{more}")
        else:
            lines.append(f"{r.mutant:<{width}}  SURVIVED (no case fails on a MUST)")
        for word, found in (("erred", r.erred), ("non-strict", r.non_strict)):
            if found:
                lines.append(f"{'':<{width}}  ({len(found)} {word}, no catch: {', '.join(found[:first])})")
    caught = sum(r.caught for r in results)
    lines.append(f"{caught}/{len(results)} mutants caught")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.cases.mutants", description=__doc__.split("\n")[0])
    parser.add_argument("--cases", action="append", help="case files or folders (default: cases)")
    parser.add_argument("-n", "--workers", type=int, default=1, help="worker processes")
    args = parser.parse_args(argv)
    paths = args.cases or ["cases"]

    from harness.cases.runner import run

    baseline = run(_load(paths), "reference")
    if not baseline.ok:
        bad = [r.case_id for r in baseline.results if str(r.outcome) != "passed"]
        print(f"the corpus does not pass against the reference: {', '.join(bad[:10])}", file=sys.stderr)
        return 1
    results = run_mutants(MUTANTS, paths, args.workers)
    print(render(results))
    return 0 if all(r.caught for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
