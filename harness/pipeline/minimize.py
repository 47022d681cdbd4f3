"""``capture-to-case --minimize``: the smallest replay case that still fails the same way.

A case made from a captured session (harness.pipeline.tocase) replays every packet the initiator
sent.  To hand a bug to whoever fixes it, the case is shrunk by delta debugging (Zeller's ddmin)
while it keeps reproducing: run against the chosen target, it must still fail, and on the same
expectations -- the same (section, value) pairs of its failures, e.g. ``MS-MQQB 3.1.5.5.1``,
``SessionHeader.AckSequenceNumber``, each observed (or each absent) as before.  What is removed, in this order:

1. steps, in units of a ``send`` and the ``receive`` steps that follow it (a reply belongs to its
   request); ddmin removes complements of ever finer partitions of the units;
2. the MessageBody of each UserMessage sent as raw bytes, halved while the failure stays
   (the packet is built again by the codec, its lengths and PacketSize computed: [MS-MQMQ]
   2.2.19.1, 2.2.19.3), so every packet the case sends is still well formed; a packet whose
   lengths are not what the codec computes (a malformed packet the acceptor must discard) is
   kept byte for byte.

A candidate reproduces when it fails on the same (section, value) pairs, each observed or absent
as before, expecting the same thing (a range as a range): a case that fails because the session
closed where the original expected a reply does not stand for one that expected the close.

The number of runs is bounded (``max_runs``); the result says how much was removed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

import packets
from harness.cases.execute import open_target, run_case
from harness.cases.loader import load_text
from harness.errors import HarnessError
from harness.results import CaseResult, Outcome

__all__ = ["Minimized", "Reproducer", "failure_signature", "minimize"]

Signature = frozenset[tuple[str, str, bool, str]]
ABSENT = "<absent>"  # how a failure shows a value that was not there (harness.cases.wireruns.base)
Case = dict[str, Any]


def _expected_key(expected: Any) -> str:
    """What a difference expected, as the signature keeps it: a ``range`` as such (its bound is
    counted again over the steps kept, see :func:`_recounted`), any other value as it is."""
    if isinstance(expected, dict) and "range" in expected:
        return "range"
    return repr(expected)


def failure_signature(result: CaseResult) -> Signature:
    """The (section, value) pairs a failed result's differences name, each with whether the value
    was observed at all (a packet that never came is another failure than a field that is wrong)
    and what was expected: a case that fails because the session closed where the original
    expected it open fails another way than one expecting the close."""
    return frozenset((f.section, f.field, f.observed != ABSENT, _expected_key(f.expected)) for f in result.failures)


class Reproducer:
    """Runs a case mapping against a target and says whether it fails with the signature."""

    def __init__(self, target_spec: str = "reference", step_timeout: float = 10.0) -> None:
        self.target, self.info = open_target(target_spec, step_timeout)
        self.step_timeout = step_timeout
        self.runs = 0

    def run(self, case: Case) -> CaseResult:
        self.runs += 1
        (loaded,) = load_text(yaml.safe_dump(case, sort_keys=False), f"<minimizing {case.get('id', 'case')}>")
        return run_case(loaded, self.target, step_timeout=self.step_timeout, info=self.info)

    def close(self) -> None:
        self.target.close()


@dataclass
class Minimized:
    case: Case
    signature: Signature
    runs: int
    steps_before: int
    steps_after: int
    bytes_before: int
    bytes_after: int

    def summary(self) -> str:
        return (
            f"minimized in {self.runs} runs: {self.steps_before} -> {self.steps_after} steps, "
            f"{self.bytes_before:,} -> {self.bytes_after:,} bytes of YAML "
            f"({self.bytes_before / max(1, self.bytes_after):.1f}x smaller), still failing on "
            + ", ".join(f"{section} {field}" for section, field, _, _ in sorted(self.signature))
        )


class NotReproduced(HarnessError):
    """The case does not fail against the target: there is nothing to minimize."""


def _size(case: Case) -> int:
    return len(yaml.safe_dump(case, sort_keys=False, width=110))


def _units(steps: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The steps grouped: each ``send`` with the ``receive`` steps that follow it."""
    units: list[list[dict[str, Any]]] = []
    for step in steps:
        if step.get("action") == "send" or not units:
            units.append([step])
        else:
            units[-1].append(step)
    return units


def _with_units(case: Case, units: list[list[dict[str, Any]]]) -> Case:
    return _recounted({**case, "when": [s for u in units for s in u]})


def _is_user_message(step: dict[str, Any]) -> bool:
    args = step.get("args") or {}
    if step.get("action") != "send" or args.get("packet") != "raw":
        return False
    try:
        packet = packets.parse(bytes.fromhex(args["hex"].replace(" ", "")), strict=False)
    except Exception:
        return False
    return packet.kind is packets.PacketKind.UserMessage


def _recounted(case: Case) -> Case:
    """The case with each SessionAck's bound on SessionHeader.AckSequenceNumber (at most the
    UserMessages sent before it, harness.pipeline.tocase) counted again over the steps kept."""
    sent, steps = 0, []
    for step in case["when"]:
        expect = step.get("expect") or {}
        bound = expect.get("SessionHeader.AckSequenceNumber")
        if isinstance(bound, dict) and "range" in bound:
            step = {**step, "expect": {**expect, "SessionHeader.AckSequenceNumber": {"range": [0, sent]}}}
        sent += _is_user_message(step)
        steps.append(step)
    return {**case, "when": steps}


def ddmin(items: list[Any], holds: Callable[[list[Any]], bool], budget: Callable[[], bool]) -> list[Any]:
    """A 1-minimal sublist of ``items`` for which ``holds`` (true of ``items``) still holds, as far
    as ``budget()`` allows (Zeller and Hildebrandt, "Simplifying and Isolating Failure-Inducing
    Input", 2002: test complements of n parts, doubling n when none holds)."""
    n = 2
    while len(items) >= 2 and budget():
        chunk = -(-len(items) // n)
        parts = [items[i : i + chunk] for i in range(0, len(items), chunk)]
        for i in range(len(parts)):
            complement = [x for j, p in enumerate(parts) if j != i for x in p]
            if budget() and holds(complement):
                items, n = complement, max(n - 1, 2)
                break
        else:
            if n >= len(items):
                break
            n = min(len(items), 2 * n)
    return items


def _shorter_body(hex_text: str) -> str | None:
    """The raw UserMessage with its MessageBody halved, built again by the codec (lengths and
    PacketSize computed); None when it is no UserMessage or has no body to shorten."""
    try:
        p = packets.parse(bytes.fromhex(hex_text.replace(" ", "")), strict=False)
    except Exception:
        return None
    mph = p.headers.get("MessagePropertiesHeader") if p.kind is packets.PacketKind.UserMessage else None
    if mph is None or not mph.MessageBody:
        return None
    body = bytes(mph.MessageBody)
    mph.MessageSize = mph.AllocationBodySize = None
    p.BaseHeader.PacketSize = None
    try:
        if packets.build(p) != bytes.fromhex(hex_text.replace(" ", "")):
            return None  # lengths the codec would not write (a packet-size fault): kept byte for byte
        mph.MessageBody = body[: len(body) // 2]
        data = packets.build(p)
    except Exception:
        return None
    return " ".join(data[i : i + 32].hex() for i in range(0, len(data), 32))


def minimize(
    case: Case, reproducer: Reproducer, *, max_runs: int = 300, max_seconds: float = 300.0
) -> Minimized:
    """The smallest case found that fails against ``reproducer``'s target with the same signature
    as ``case``; NotReproduced when ``case`` itself does not fail there."""
    first = reproducer.run(case)
    if first.outcome is not Outcome.failed:
        raise NotReproduced(f"the case does not fail against the target ({first.outcome.value}: {first.detail})")
    signature = failure_signature(first)
    start_runs, deadline = reproducer.runs, time.monotonic() + max_seconds

    def budget() -> bool:
        return reproducer.runs - start_runs < max_runs and time.monotonic() < deadline

    def reproduces(candidate: Case) -> bool:
        result = reproducer.run(candidate)
        return result.outcome is Outcome.failed and signature <= failure_signature(result)

    units = ddmin(_units(case["when"]), lambda us: reproduces(_with_units(case, us)), budget)
    best = _with_units(case, units)
    for i, step in enumerate(best["when"]):
        args = step.get("args") or {}
        while budget() and step.get("action") == "send" and args.get("packet") == "raw":
            shorter = _shorter_body(args["hex"])
            if shorter is None:
                break
            steps = list(best["when"])
            steps[i] = {**step, "args": {**args, "hex": shorter}}
            candidate = {**best, "when": steps}
            if not reproduces(candidate):
                break
            best, step, args = candidate, steps[i], steps[i]["args"]
    return Minimized(
        case=best,
        signature=signature,
        runs=reproducer.runs,
        steps_before=len(case["when"]),
        steps_after=len(best["when"]),
        bytes_before=_size(case),
        bytes_after=_size(best),
    )
