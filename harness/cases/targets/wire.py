"""Running [MS-MQQB] wire cases: which target can run a case, and one case from start to verdict.

A wire case (harness.cases.wire, docs/cases.md "Wire cases") checks one side of an [MS-MQQB]
2.1.1 protocol session over real loopback TCP:

- ``under_test: initiator``: the target's sender (capability ``wire:initiator``) is driven
  through control operations and connects to the harness's acceptor
  (harness.cases.wireruns.initiator);
- ``under_test: acceptor``: the harness is the initiator and the target's acceptor answers: the
  simulated peer (capability ``peer-behaviours``) or a live one (harness.cases.wireruns.acceptor).

Which cases a target runs is decided from the capabilities of its hello alone
(:func:`wire_applicability`; harness.cases.target.CAPABILITIES), the reason shown in the
``not_applicable`` result.  A step's differences are graded by the requirements they check
(harness.cases.grading); the case stops at the first step that has any.  With ``record_dir``
(``msmq-harness run --record DIR``) the session's TCP connections, as the harness's end saw them,
are written as a pcap and a transcript page with the failing step's packet marked
(harness.report.transcript, handed in through harness.cases.transcripts).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.cases.actions import ACTIONS
from harness.cases.caseresult import case_result_since, graded_result
from harness.cases.grading import graded, reconcile, unwrap
from harness.cases.lines import CaseError
from harness.cases.loader import BUNDLED_REQUIREMENTS, load_requirements
from harness.cases.model import Case, Step
from harness.cases.target import (
    ADM_OUTGOING,
    CAPABILITIES,
    PEER_BEHAVIOURS,
    WIRE_ACCEPTOR,
    WIRE_INITIATOR,
    WIRE_PING_PORT,
    WIRE_SENDER_PING,
    WIRE_TX_QUEUE,
    TargetError,
    TargetInfo,
    TargetUnsupported,
)
from harness.cases.transcripts import transcript_writer
from harness.cases.violations import graded_violation
from harness.cases.wire import needs_simulated_peer, sends_transactional
from harness.cases.wirematch import brief
from harness.cases.wireruns import AcceptorRun, InitiatorRun, NotApplicable
from harness.results import CaseResult, Outcome, StepFailure
from packets.paths import display_value

__all__ = ["WireOptions", "run_wire_case", "wire_applicability"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WireOptions:
    """How wire cases run on a target: the behaviour that replaces ``normal`` for the simulated
    peer (``reference?peer=...``) and the time scale of the harness's sessions (None: 0.05
    against the simulated peer, 1 against a live one)."""

    peer: str | None = None
    scale: float | None = None


def _lacks(info: TargetInfo, capability: str, why: str) -> str:
    if capability in info.capabilities:
        return ""
    return f"{why}; the target lacks {capability} ({CAPABILITIES[capability]})"


def wire_applicability(case: Case, info: TargetInfo) -> str:
    """Why ``case`` cannot run on a target with ``info`` ("" when it can)."""
    peer = case.given["peer"]
    if peer["under_test"] == "initiator":
        why = _lacks(info, WIRE_INITIATOR, "the case judges a sender")
        if not why and peer.get("ping"):
            why = _lacks(info, WIRE_SENDER_PING, "the case has the sender ping the acceptor first")
        return why
    why = _lacks(info, WIRE_ACCEPTOR, "the case judges an acceptor")
    if why:
        return why
    simulated = needs_simulated_peer(case.given, case.then)
    if simulated:
        return _lacks(info, PEER_BEHAVIOURS, f"the case {simulated.removeprefix('needs ')}")
    if any(s.action == "ping" for s in case.when):
        why = _lacks(info, WIRE_PING_PORT, "the case pings the acceptor (mqqb://host:port?ping=PORT)")
        if why:
            return why
    transactional = sends_transactional(case.when)
    if transactional and PEER_BEHAVIOURS not in info.capabilities:
        return _lacks(info, WIRE_TX_QUEUE, "the case sends a transactional UserMessage (mqqb://host:port?tx-queue=ID)")
    return ""


def _graded(case: Case, step: Step | None, index: int, where: str, f: Any, waited: str) -> StepFailure:
    """A wire difference as a StepFailure graded by the requirement it checks (harness.cases.grading)."""
    expected, observed = display_value(f.field, f.expected), display_value(f.field, brief(f.observed))
    message = f"{where}: {f.field} expected {expected}, observed {observed}"
    if waited and f.field in ("satisfied", "closed", "timed_out", "kind", "answered", "sent"):
        message += f" (waited {waited})"
    failure = StepFailure(
        step=index,
        event=step.action if step is not None else "then",
        field=f.field,
        expected=f.expected,
        observed=brief(f.observed, 200),
        section=case.spec[0].section if case.spec else "",
        message=message,
        evidence=f.evidence,
    )
    if f.rule:  # a session rule the peer broke: graded by the rule's own requirement
        return graded_violation(case, step, failure, f.rule)
    return graded(case, step, failure, f.raw, f.matcher)


CONNECT = "MQQB-3.1.7.12-CONNECT"  # "... the protocol MUST establish a connection" ([MS-MQQB] 3.1.7.12)


def _never_connected(case: Case, index: int, where: str, why: str) -> StepFailure:
    """A wait that ended because the sender opened no connection after a message was made
    available (harness.cases.wireruns.initiator): one difference, filed under the requirement the
    connect step renders, :data:`CONNECT` (the case's own, else the bundled requirements')."""
    failure = StepFailure(
        step=index,
        event="wait_for",
        field="connections",
        expected=1,
        observed=0,
        section="MS-MQQB 3.1.7.12",
        message=f"{where}: the sender never connected: {why}",
    )
    requirement = case.requirements.get(CONNECT) or _bundled(CONNECT)
    failure.requirement, failure.level = CONNECT, "MUST"
    if requirement is not None:
        failure.level, failure.quote = str(requirement.level), requirement.quote
        failure.section = requirement.section or failure.section
    return failure


def _bundled(requirement_id: str) -> Any:
    """A requirement of the bundled cases/requirements.yaml (None when it cannot be read)."""
    try:
        return next((r for r in load_requirements(BUNDLED_REQUIREMENTS) if r.id == requirement_id), None)
    except (CaseError, OSError):
        return None


def _expects_nothing(step: Step) -> bool:
    """The step checks that nothing happens within its bound (its wait always runs out)."""
    nothing = ACTIONS[step.action].nothing
    expect = step.expect or {}
    return nothing is not None and nothing[0] in expect and unwrap(expect[nothing[0]]) is nothing[1]



def _run_for(case: Case, target: Any, info: TargetInfo) -> Any:
    options = getattr(target, "wire_options", None) or WireOptions()
    if case.given["peer"]["under_test"] == "initiator":
        return InitiatorRun(case, options, target.control, ADM_OUTGOING in info.capabilities)
    live = None if PEER_BEHAVIOURS in info.capabilities else target.acceptor()
    return AcceptorRun(case, options, live)


def run_wire_case(
    case: Case,
    target: Any,
    info: TargetInfo | None = None,
    *,
    step_timeout: float = 10.0,
    on_sent: Callable[[float, bytes], None] | None = None,
    record_dir: str | os.PathLike[str] | None = None,
) -> CaseResult:
    """Run one wire case against ``target`` (``info``: its hello); never raises.  ``on_sent``
    sees every packet the harness sent, with the wall-clock time it was written.
    ``step_timeout`` (the runner's) bounds no wire wait: those are bounded by the [MS-MQQB]
    3.1.2 timers the steps name.  ``record_dir``: write the case's transcript there, a pcap and
    an HTML page (harness.cases.transcripts), and name the page in the result's ``transcript``."""
    start = time.perf_counter()
    info = info if info is not None else target.hello()
    why = wire_applicability(case, info)
    if why:
        return case_result_since(case, Outcome.not_applicable, start, [], why)
    run = _run_for(case, target, info)
    result, failing = _run_steps(case, run, start, on_sent)
    if record_dir is not None:
        _record(Path(record_dir), run, result, failing)
    return result


def _run_steps(
    case: Case, run: Any, start: float, on_sent: Callable[[float, bytes], None] | None
) -> tuple[CaseResult, bytes | None]:
    """The case's steps and ``then`` on ``run``: its result, and the packet the failing step's
    expectations read (None when the difference read none)."""
    where = "setup"
    failures: list[StepFailure] = []
    failing: bytes | None = None
    not_checked: list[str] = []
    checked = 0
    try:
        run.start()
        for index, step in enumerate(case.when):
            where = f"step {index} ({step.action}, line {step.line})"
            run.last_packet = None
            run.waited = ""
            run.step_not_applicable = ""
            run.quiet = _expects_nothing(step)
            result = getattr(run, step.action)(step.args)
            found, skipped = run.check_step(step.action, step.args, step.expect, result)
            not_checked.extend(f"{where}: {s}" for s in skipped)
            checked += len(run.expectations(step.action, step.args, step.expect)) - len(skipped)
            if found and getattr(run, "never_connected", ""):  # the sender never connected: the connect step's
                failures = [_never_connected(case, index, where, run.never_connected)]
            elif found:
                failures = [_graded(case, step, index, where, f, run.waited) for f in found]
                reconcile(case, failures, getattr(run, "step_checks", []))
            if found:
                failing = run.last_packet if step.action in ("receive", "wait_for") else None
                break
        else:
            where = "then"
            found, skipped = run.observe_then()
            not_checked.extend(f"then: {s}" for s in skipped)
            then = case.then or {}
            checked += len(then.get("outgoing") or {}) + bool(then.get("peer")) - len(skipped)
            failures = [_graded(case, None, -1, "then", f, "") for f in found]
    except NotApplicable as e:
        return case_result_since(case, Outcome.not_applicable, start, [], str(e)), None
    except TargetError as e:
        if not isinstance(e, TargetUnsupported):
            return case_result_since(case, Outcome.error, start, [], f"{where}: {e.kind}: {e.message}"), None
        return case_result_since(case, Outcome.unsupported, start, [], f"{where}: the target does not implement it: "
                                f"{e.message}"), None
    except Exception as e:
        return case_result_since(case, Outcome.error, start, [], f"{where}: {type(e).__name__}: {e}"), None
    finally:
        with contextlib.suppress(Exception):
            run.close()
        if on_sent is not None:
            for ts, data in run.sent_packets():
                on_sent(ts, data)
    if failures:
        return graded_result(case, start, failures), failing
    detail = ("not checked: " + "; ".join(not_checked)) if not_checked else ""
    if not_checked and checked <= 0:
        return case_result_since(case, Outcome.not_applicable, start, [], detail), None
    return case_result_since(case, Outcome.passed, start, [], detail), None


def _record(directory: Path, run: Any, result: CaseResult, failing: bytes | None) -> None:
    """Write the case's transcript (``--record``) with the writer the run's edge handed in
    (harness.cases.transcripts) and name it in ``result``; a transcript that cannot be written is
    logged and leaves the verdict as it is."""
    writer = transcript_writer()
    if writer is None:
        log.warning("%s: no transcript writer is registered (import harness.report): none written", result.case_id)
        return
    try:
        page = writer(directory, result, run.side, run.recorded_connections(), failing)
    except Exception as e:
        log.warning("%s: the transcript could not be written to %s: %s", result.case_id, directory, e)
        return
    result.transcript = str(page)
