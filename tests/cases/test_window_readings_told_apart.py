"""mqqb.fault.window tells an own-window sender from a narrowed one however late the case's
``enqueue`` steps reach the sender ([MS-MQQB] 3.1.7.1, 3.1.5.4.2; MQQB-3.1.7.1-PEER-WINDOW).

The case's acceptor advertises a WindowSize of 1 or 2, below the sender's own 8.  A sender that
keeps to its own window only (reading own-window, examples.readings.mqqb.OwnWindowOnly) shows it
only by having more UserMessages unacknowledged than the acceptor's window.  Here each
``enqueue`` reaches the sender 0.1 s after the one before (an adapter behind a proxy: a loaded
machine, a slow adapter); the acceptor acknowledges on its Session Ack Send Timer only
(``window-<N>-late-ack``), so the messages enqueued before it runs out are in flight together
and the reading is told apart (non_strict, graded by its interpretation), while the reference
sender, which keeps to the acceptor's window, still passes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.cases.reference_proxy import case_results, proxy_target

CASE = "mqqb.fault.window"
LATE = 0.1  # seconds each enqueue reaches the sender after the one before it


def _results(tmp_path: Path, sender: str | None) -> dict[str, dict[str, Any]]:
    """The case's variants (case id -> result) with each enqueue passed on LATE seconds late."""
    target = proxy_target(tmp_path, sender=sender, delay={"enqueue": LATE})
    return {str(r["case_id"]): r for r in case_results(tmp_path, target, "cases/mqqb/faults.yaml", CASE)}


def test_an_own_window_sender_is_told_apart_when_the_enqueues_come_late(tmp_path: Path) -> None:
    results = _results(tmp_path, "examples.readings.mqqb:OwnWindowOnly")
    assert len(results) == 2, results  # n = 1 and n = 2
    for case_id, result in results.items():
        assert result["outcome"] == "non_strict", (case_id, result["outcome"], result.get("detail"))
        graded = {(f["interpretation"], f["reading"]) for f in result["failures"]}
        assert graded == {("MQQB-3.1.7.1-PEER-WINDOW", "own-window")}, (case_id, result["failures"])


def test_the_reference_sender_still_passes_when_the_enqueues_come_late(tmp_path: Path) -> None:
    results = _results(tmp_path, None)
    assert len(results) == 2, results
    assert {r["outcome"] for r in results.values()} == {"passed"}, {k: r.get("detail") for k, r in results.items()}
