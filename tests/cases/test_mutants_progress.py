"""``python -m harness.cases.mutants`` (``make mutants``) says how far it is as each mutant ends."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cases.mutants import run_mutants

SEEK = str(Path(__file__).resolve().parents[2] / "cases" / "mqdmpr" / "seek")
TWO = ["examples.mutants.seek:PeekReturnsAnyLocked", "examples.mutants.queue:PauseIsNoop"]


@pytest.mark.parametrize("workers", [1, 2])
def test_each_mutant_that_ends_is_a_line(workers: int) -> None:
    lines: list[str] = []
    results = run_mutants(TWO, [SEEK], workers, progress=lines.append)
    assert [r.mutant for r in results] == TWO  # in order, however they ended
    assert len(lines) == 2
    assert [re.match(r"mutants: (\d)/2 done \(\d+ s\): ", line).group(1) for line in lines] == ["1", "2"]
    caught = {line.split(": ", 2)[2] for line in lines}
    assert caught == {f"{TWO[0]} caught by {len(results[0].caught_by)} cases", f"{TWO[1]} SURVIVED"}
