"""A sender's finding as an initiator wire case: the fuzzed packet is the simulated acceptor's reply.

The fuzzer answered the sender conformantly up to the state it injected in, then sent one fuzzed
packet (harness.fuzz.sender).  Minimising keeps the fewest of those packets -- the conformant
answers ([MS-MQQB] 3.1.5.3.1 EstablishConnection response, 3.1.5.4.1 ConnectionParameters
response) before the fuzzed one -- that still make the same oracle fire, by the delta debugging
``capture-to-case --minimize`` uses (:func:`harness.pipeline.minimize.ddmin`): a shorter prefix is
the same packet injected in an earlier state (WAITING_ECR_MSG after 3.1.5.2.3, WAITING_CPR_MSG
after 3.1.5.3.2, OPEN after 3.1.5.4.2); then the optional headers of the fuzzed packet the finding
does not need are removed ([MS-MQMQ] 2.2.20, harness.fuzz.shrink).  The case (docs/cases.md
"Replies of the peer") has the simulated acceptor answer the sender's packet of that state with the fuzzed bytes
(``given.peer.replies``, the request's ClientGuid and TimeStamp, or RecoverableAckTimeout and
AckTimeout, echoed unless they are the mutated field), then waits for what the reference sender
does with them -- it closes the session (3.1.5.1.3 for a packet that does not decode, 3.1.5.3.2,
3.1.5.3, 3.1.5.4, 3.1.5.5, 3.1.5.8 for one invalid or wrong for the state) and, for a crash, connects again
when its Session Retry Connect Timer expires (3.1.6.1); or it goes on with its next packet
(3.1.5.3.2, 3.1.5.4.2, 3.1.7.12) -- each within the timers that bound it.  Which of the two is
decided by running the case against the embedded reference sender (target ``reference``): the
case passes there and fails while the fault is there.

A crash is the sender's adapter gone (harness.fuzz.sender), and the case of one ends in ``error``,
its detail the adapter's exit status, however the crash and the case's steps interleave: the
sender may crash before its adapter replies to the ``enqueue`` that made it connect (that step
sees it), or after (then a wait would see it on the wire, and fail).  So that it is always a
control operation that sees it, a crash case waits for the reaction first whatever comes (a sync,
``satisfied: {any_of: [true, false]}``), then asks the sender for one (``create_outgoing_queue``
of a queue that holds no message: nothing is sent), and only then checks the reaction.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from harness.fuzz.casefiles import run_case, wire_hex, write_case, write_finding_pcap
from harness.fuzz.generate import Mutation
from harness.fuzz.oracles import Timers, close_requirement, requirement_level, requirement_section
from harness.fuzz.runs import Finding, FuzzOptions, SenderDown
from harness.fuzz.shrink import shrink, without
from harness.fuzz.states import SENDER_STATES, Connection, State
from harness.pipeline.minimize import ddmin

__all__ = ["Playing", "confirm_and_minimise_sender", "sender_case"]

# state -> (the sender's packet the fuzzed one answers, the requirement it is sent by)
ANSWERS = {
    "WAITING_ECR_MSG": ("EstablishConnection", "MQQB-3.1.7.12-CONNECT"),
    "WAITING_CPR_MSG": ("ConnectionParameters", "MQQB-3.1.5.3.2-CP-REQUEST"),
    "OPEN": ("UserMessage", "MQQB-3.1.5.4.2-ESTABLISHED"),
}
# state -> (the sender's next packet after a reply it accepts, its count, the requirement)
NEXT = {
    "WAITING_ECR_MSG": ("ConnectionParameters", 1, "MQQB-3.1.5.3.2-CP-REQUEST"),
    "WAITING_CPR_MSG": ("UserMessage", 1, "MQQB-3.1.5.4.2-ESTABLISHED"),
    "OPEN": ("UserMessage", 2, "MQQB-3.1.7.12-DISPATCH"),
}
ORDER = tuple(s.name for s in SENDER_STATES)  # a state's conformant answers: its index
ECHO = {  # the fields a response echoes from its request (3.1.5.3.1, 3.1.5.4.1), by the fuzzer's template
    "EstablishConnection[response]": ("EstablishConnectionHeader.ClientGuid", "EstablishConnectionHeader.TimeStamp"),
    "ConnectionParameters[response]": (
        "ConnectionParametersHeader.RecoverableAckTimeout",
        "ConnectionParametersHeader.AckTimeout",
    ),
}
RETRY = "MQQB-3.1.6.1-RETRY"
ALIVE = "fuzz-alive"  # the queue a crash case creates to see the sender still running
INIT = "SessionInitialization"


class Playing(Protocol):
    """What confirming a sender's finding needs of the fuzzer that found it
    (harness.fuzz.sender.SenderFuzzer): its options, the sender's timers as its ``wire_setup``
    declared them, the address it listens on, and a play of one round."""

    o: FuzzOptions
    sender_timers: Timers
    address: tuple[str, int]

    def play(
        self, state: State, mutation: Mutation, rng: random.Random, shape: Callable[[bytes], bytes | None] | None = None
    ) -> tuple[str, str, Connection | None, bytes]: ...


def _step(action: str, requirement: str = "", **args: Any) -> dict[str, Any]:
    return {"action": action, "args": args, **({"requirement": requirement} if requirement else {})}


def _message(n: int) -> dict[str, Any]:
    return {"id": f"m{n}", "delivery": "express", "Body": "fuzz"}


def _reaction(state: str, injected: bytes, reaction: str) -> tuple[dict[str, Any], str]:
    """The wait for what the reference sender does with ``injected`` in ``state`` ("closed": it
    closes the session; "next": it goes on with its next packet), and the requirement it checks."""
    if reaction == "closed":
        judged = close_requirement("initiator", injected, state)
        return _step("wait_for", judged, closed=1, by="initiator", within=INIT), judged
    kind, count, judged = NEXT[state]
    return _step("wait_for", judged, packet=kind, count=count, within=INIT), judged


def _still_running(wait: dict[str, Any]) -> list[dict[str, Any]]:
    """A crash case's look at the sender once it has taken in the fuzzed packet: ``wait``, the wait
    for its reaction, passing whatever came (a sync only: the reaction is checked next), then a
    control operation (a queue of no message: nothing is sent) that a crashed sender's adapter
    cannot answer.  A crash is so always seen by a control operation, the case's outcome an
    ``error`` naming the adapter's exit status, whichever comes first (see the module docstring)."""
    return [{**wait, "expect": {"satisfied": {"any_of": [True, False]}}}, _step("create_outgoing_queue", name=ALIVE)]


def sender_case(f: Finding, state: str, injected: bytes, reaction: str, scale: float) -> dict[str, Any]:
    """The initiator wire case of a sender's finding, the packet injected in ``state`` (see the
    module docstring); ``reaction``: "closed" or "next", what the reference sender does with it."""
    answered, sent_by = ANSWERS[state]
    echo = [path for path in ECHO.get(f.template, ()) if path != f.field]
    reply: dict[str, Any] = {"to": answered, **({"echo": echo} if echo else {}), "raw": wire_hex(injected)}
    steps = [
        _step("create_outgoing_queue", name="fuzz"),
        _step("enqueue", queue="fuzz", message=_message(1)),
        _step("wait_for", sent_by, packet=answered, within=INIT),
    ]
    if state == "OPEN":  # the fuzzer makes a second message available after the injected packet
        steps.append(_step("enqueue", queue="fuzz", message=_message(2)))
    wait, judged = _reaction(state, injected, reaction)
    if f.oracle == "crash":
        steps += _still_running(wait)
    steps.append(wait)
    if reaction == "closed" and f.oracle == "crash":  # a sender still running connects again (3.1.6.1)
        steps.append(_step("wait_for", RETRY, connections=2, within=f"SessionRetryConnect + {INIT}"))
    cited = [str(r) for r in dict.fromkeys(s["requirement"] for s in steps if "requirement" in s)]
    f.requirement = judged
    f.level, f.section = requirement_level(judged), requirement_section(judged)
    what = "closes the session" if reaction == "closed" else f"goes on with its {NEXT[state][0]}"
    return {
        "id": f"fuzz.sender.{f.oracle}.seed{f.seed}.round{f.round}",
        "title": f"A sender that receives {f.template} with {f.field or 'no field'} {f.op} in {state} {what}",
        "spec": [{"section": requirement_section(r), "requirement": r} for r in cited],
        "tags": ["fuzz", "sender", f.oracle],
        "given": {"peer": {"under_test": "initiator", "timers": scale, "replies": [reply]}},
        "when": steps,
    }


def _as_sender_sees_it(conn: Connection) -> Connection:
    """The fuzzer's connection with the sender as the pcap's client: the directions swapped (the
    fuzzer's log calls what it sent c2s), and a close by the sender its client's."""
    swap = {"c2s": "s2c", "s2c": "c2s"}
    return dataclasses.replace(conn, log=[(swap[d], data, ts) for d, data, ts in conn.log], closed=not conn.closed)


def _header(f: Finding, state: str, groups: tuple[str, ...]) -> str:
    removed = f", without its {', '.join(groups)}" if groups else ""
    return (
        f"# {f.oracle} of the sender found by msmq-harness fuzz --seed {f.seed} (round {f.round}): {f.why}\n"
        f"# injected in {f.state}: {f.template} {f.field} {f.op}; minimised to {state}, after "
        f"{len(f.minimal) - 1} conformant answers{removed}\n"
        "# replay: msmq-harness fuzz --replay THIS.yaml --target ...\n"
    )


def _write_case(
    fuzzer: Playing, f: Finding, state: str, injected: bytes, groups: tuple[str, ...] = ()
) -> tuple[Path, str]:
    """Write the case whose reaction the reference sender gives (tried in turn: "closed",
    "next"): the path written and the reference's outcome of the case written."""
    outcome, path = "", Path()
    for reaction in ("closed", "next"):
        case = sender_case(f, state, injected, reaction, fuzzer.sender_timers.scale)
        path = write_case(fuzzer.o, f, _header(f, state, groups), case)
        outcome = run_case(fuzzer.o, path, "reference")
        if outcome == "passed":
            break
    return path, outcome


class _Trials:
    """Plays of a finding's round against the sender, the last one that fired kept."""

    def __init__(self, fuzzer: Playing, f: Finding) -> None:
        self.fuzzer, self.f = fuzzer, f
        self.mutation = Mutation(f.template, f.field, f.op)
        self.runs = 0
        self.last: dict[str, Any] = {}

    def budget(self) -> bool:
        return self.runs < self.fuzzer.o.minimise_runs

    def again(self, state_name: str, groups: tuple[str, ...] = ()) -> bool:
        """Play the round injecting in ``state_name``, the packet without ``groups``: the oracle fired."""
        self.runs += 1
        f = self.f
        state = next(s for s in SENDER_STATES if s.name == state_name)
        shape = (lambda data: without(data, groups, f.field)) if groups else None
        try:
            rng = random.Random(f"{self.fuzzer.o.seed}/{f.round}")
            oracle, _why, conn, data = self.fuzzer.play(state, self.mutation, rng, shape)
        except SenderDown:
            oracle, conn, data = "crash", None, b""
        if oracle == f.oracle and conn is not None and conn.log:
            self.last = {"state": state_name, "groups": groups, "conn": conn, "data": data}
        return oracle == f.oracle

    def minimal(self) -> dict[str, Any]:
        """The fewest conformant answers (an earlier state), then the fewest optional headers of
        the injected packet, that still make the oracle fire; the play that shows it."""
        f, confirmed = self.f, dict(self.last)
        units = [*ORDER[: ORDER.index(f.state)], "injected"]  # the conformant answers, then the fuzzed packet

        def holds(sub: list[str]) -> bool:
            prefix = sub[:-1]
            if not sub or sub[-1] != "injected" or prefix != list(ORDER[: len(prefix)]):
                return False  # only a shorter prefix of the conformant answers is an earlier state
            return self.again(ORDER[len(prefix)])

        state = ORDER[len(ddmin(units, holds, self.budget)) - 1]
        base = self.last["data"] if self.last.get("state") == state else confirmed["data"]
        groups = shrink(base, f.field, lambda gs: self.again(state, gs), self.budget)
        if (self.last.get("state"), self.last.get("groups")) != (state, groups) and not self.again(state, groups):
            return confirmed  # the last trial was another, and this one does not hold (a flaky sender)
        return self.last


def confirm_and_minimise_sender(fuzzer: Playing, f: Finding) -> None:
    """Re-run ``f`` (confirmed when the same oracle fires), minimise it (:class:`_Trials`), write
    its case and pcap, and run the case against the target."""
    o = fuzzer.o
    trials = _Trials(fuzzer, f)
    f.confirmed = trials.again(f.state)
    if not f.confirmed or "conn" not in trials.last:
        return
    best = trials.minimal()
    conn, injected, state = best["conn"], best["data"], best["state"]
    f.minimal = [p for d, p, _ in conn.log if d == "c2s"]  # what the fuzzer sent
    write_finding_pcap(o, f, _as_sender_sees_it(conn), fuzzer.address)
    path, reference = _write_case(fuzzer, f, state, injected, best["groups"])
    if reference != "passed":
        f.case_outcome = f"the reference sender does not pass it ({reference}); not run against the target"
        return
    f.case_outcome = run_case(o, path, o.target)
