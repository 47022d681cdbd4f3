"""A case's final state read too late to be judged is an error, not a failure ([MS-MQQB] 3.1.2.3,
harness.cases.wireruns.initiator ``_retry_opened``, ``_read_before``).

After the Session Initialization Timer closes the session (mqqb.establish.session-initialization-
timeout), a conformant sender retries once its Session Retry Connect Timer runs out (0.5 s at the
time scale of the run).  When the harness reads the final state later than that (a loaded
machine: here an adapter that answers ``observe_outgoing`` 2 s late), the retry's connection is
not the sender's fault: the case ends in an error that says so.  A sender that reconnects before
its timer allows still fails, and so does a state read wrong before the retry opened
(tests/cases/test_readings_mqqb.py, the mutant LateFailureSocketConnectFailure).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cases.reference_proxy import case_results, proxy_target

CASE = "mqqb.establish.session-initialization-timeout"


def _run(tmp_path: Path, delay: float, retry: float | None = None) -> dict[str, object]:
    """The case's result with the reference sender behind a proxy that answers observe_outgoing
    ``delay`` seconds late (its Session Retry Connect Timer at ``retry`` seconds, when given)."""
    target = proxy_target(tmp_path, retry=retry, delay={"observe_outgoing": delay})
    (result,) = case_results(tmp_path, target, "cases/mqqb/establish.yaml", CASE)
    return result


@pytest.mark.parametrize("delay", [0.0, 2.0])
def test_a_conformant_sender_is_never_failed_for_a_late_reading(tmp_path: Path, delay: float) -> None:
    result = _run(tmp_path, delay)
    if delay == 0.0:
        assert result["outcome"] == "passed", result
    else:
        assert result["outcome"] == "error", result
        assert "read too late to be judged" in str(result["detail"])
        assert "Session Retry Connect Timer allows" in str(result["detail"])


def test_a_sender_reconnecting_before_its_timer_allows_still_fails(tmp_path: Path) -> None:
    result = _run(tmp_path, 2.0, retry=0.0)  # it retries at once, though its wire_setup reply says 10 s
    assert result["outcome"] == "failed", result
    assert "peer.connections" in json.dumps(result)
