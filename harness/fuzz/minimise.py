"""Confirming a finding, shrinking it, and writing it down as a wire case and a pcap.

A finding is first re-run: the packets of its session are sent again on a new connection
(after a crashed target is back) and the same oracle must fire (a violation: the same rule).  The packets are then
shrunk by delta debugging (Zeller's ddmin, :func:`harness.pipeline.minimize.ddmin`, the one
``capture-to-case --minimize`` uses) to the fewest that still make the same oracle fire, and the
last one's optional headers the finding does not need are removed ([MS-MQMQ] 2.2.20,
harness.fuzz.shrink).  The
minimal packets become an acceptor wire case (docs/cases.md "Wire cases"): each packet sent as
raw bytes, each EstablishConnection and ConnectionParameters request followed by the reply
[MS-MQQB] 3.1.5.3.1 and 3.1.5.4.1 demand, then what a conformant acceptor does with the last
packet -- as the project's conformant simulated peer does it, replayed in process: close the
session (3.1.5.1.3 for a malformed packet, 3.1.5.3 / 3.1.5.4 / 3.1.5.5 / 3.1.5.8 for a packet
wrong for the state: harness.fuzz.oracles.close_requirement), or acknowledge a conformant
UserMessage sent after it within the Session Ack Send Timer (3.1.2.5) -- and, for a crash, that
a new connection's EstablishConnection is still answered (3.1.5.3.1); for a violation,
``then.peer.violations: []`` (the rule graded by its own requirement, harness.cases.violations).
The case passes against a conformant acceptor and fails while the fault is there; it is run once
against the target to show it.  The pcap holds the minimal session (both written by
harness.fuzz.casefiles).
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any, Protocol

import packets
from harness.fuzz.casefiles import run_case, wire_hex, write_case, write_finding_pcap
from harness.fuzz.generate import Context, packet_kind
from harness.fuzz.oracles import (
    GRACE,
    Reaction,
    Timers,
    alive,
    close_requirement,
    observe,
    requirement_level,
    requirement_section,
    target_violations,
)
from harness.fuzz.runs import Finding, FuzzOptions
from harness.fuzz.shrink import shrink_last
from harness.fuzz.states import Connection, note_sent, opening
from harness.peers.server import SimulatedPeer
from harness.pipeline.minimize import ddmin
from packets import GUID

__all__ = ["Replaying", "case_of", "confirm_and_minimise", "replay"]

# The kinds of request the acceptor answers as its session opens, and the state it is in then.
_ANSWERED = {kind.value: after.value for _, kind, after in opening("acceptor")}
CS_VALID = "MQQB-3.1.5.3.1-CS-VALID"
SEND_ACK = "MQQB-3.1.6.4-SEND-ACK"
INIT = "SessionInitialization"


def replay(
    units: list[bytes], address: tuple[str, int], timers: Timers, ping: tuple[str, int] | None = None
) -> tuple[str, str, Connection, Reaction | None]:
    """Send ``units`` on a new connection, the last one judged as the fuzzer judges an injected
    packet: (oracle that fired or "", why, the connection, the reaction)."""
    conn = Connection(address)
    try:
        conn.open()
    except OSError as e:
        return "crash", f"the port refuses connections ({e.strerror or e})", conn, None
    ctx = Context(GUID(uuid.uuid4().bytes_le))
    state = "WAITING_EC_MSG"
    try:
        for u in units[:-1]:
            if not conn.send(u):
                break
            note_sent(u, ctx)
            kind = packet_kind(u)
            reply = conn.read(timers.initialization() if kind in _ANSWERED else GRACE)
            if reply is not None and packet_kind(reply) == kind and kind in _ANSWERED:
                state = _ANSWERED[kind]
                if kind == "EstablishConnection":
                    with contextlib.suppress(Exception):
                        ctx.server_guid = GUID(packets.parse(reply, strict=False).EstablishConnectionHeader.ServerGuid)
            if conn.closed:
                break
        reaction = observe(conn, units[-1], state, ctx, timers)
    finally:
        conn.close()
    if reaction.outcome == "silent":
        return "hang", reaction.why, conn, reaction
    if reaction.outcome in ("closed", "refused", "incomplete"):
        why = alive(address, timers, ping)
        if why:
            return "crash", why, conn, reaction
    return "", "", conn, reaction


class Replaying(Protocol):
    """What confirming a finding needs of the fuzzer that found it (harness.fuzz.engine.Fuzzer):
    its options, a wait for a crashed target to serve again, the count of the packets sent."""

    o: FuzzOptions

    def wait_alive(self) -> str: ...

    def note(self, conn: Connection) -> None: ...


def confirm_and_minimise(fuzzer: Replaying, f: Finding) -> None:
    """Re-run ``f`` (confirmed when the same oracle fires), shrink it, write its case and pcap."""
    o = fuzzer.o
    runs = 0

    def again(units: list[bytes]) -> tuple[str, Connection]:
        nonlocal runs
        runs += 1
        if f.oracle == "crash" and fuzzer.wait_alive():
            return "", Connection(o.address)  # the target never came back: nothing can be shown
        oracle, _why, conn, _ = replay(units, o.address, o.timers, o.ping)
        fuzzer.note(conn)
        if f.oracle == "violation":  # the same rule broken again, in the acceptor's replies
            broken = {str(rule) for rule, _section, _level, _evidence in target_violations(conn)}
            oracle = "violation" if f.requirement in broken else ""
        return oracle, conn

    fired, _ = again(f.packets)
    f.confirmed = fired == f.oracle
    if not f.confirmed:
        return
    minimal = ddmin(list(f.packets), lambda us: bool(us) and again(us)[0] == f.oracle, lambda: runs < o.minimise_runs)
    minimal = shrink_last(minimal, f.field, lambda us: again(us)[0] == f.oracle, lambda: runs < o.minimise_runs)
    fired, conn = again(minimal)
    if fired != f.oracle:  # the last trial did not hold (a flaky target): keep what was confirmed
        minimal = list(f.packets)
        fired, conn = again(minimal)
    f.minimal = minimal
    case = case_of(f, minimal, _reference_reaction(minimal, o.timers, f))
    case_path = write_case(o, f, _header(f), case)
    write_finding_pcap(o, f, conn, o.address)
    if f.oracle == "crash":
        fuzzer.wait_alive()
    f.case_outcome = run_case(o, case_path, o.target)
    if f.oracle == "crash":
        fuzzer.wait_alive()


def _header(f: Finding) -> str:
    return (
        f"# {f.oracle} found by msmq-harness fuzz --seed {f.seed} (round {f.round}): {f.why}\n"
        f"# injected in {f.state}: {f.template} {f.field} {f.op}; minimised from {len(f.packets)} to "
        f"{len(f.minimal)} packets\n"
    )


def _reference_reaction(units: list[bytes], timers: Timers, f: Finding) -> str:
    """What the project's conformant simulated peer does with the last of ``units``: "closed" or
    "answered" (it is the queue manager the packets were addressed to: its identifier is theirs)."""
    server = _server_guid(units)
    with SimulatedPeer(identifier=server, time_scale=timers.scale, ping_port=None) as peer:
        _oracle, _why, _conn, reaction = replay(units, peer.address, timers)
    return reaction.outcome if reaction is not None else "closed"


def _server_guid(units: list[bytes]) -> GUID | None:
    for u in units:
        with contextlib.suppress(Exception):
            p = packets.parse(u, strict=False)
            address = p.headers["UserHeader"].QueueManagerAddress
            if not GUID(address).is_null:
                return GUID(address)
    return None


def _step(action: str, requirement: str, **args: Any) -> dict[str, Any]:
    return {"action": action, "args": args, "requirement": requirement}


def _steps(f: Finding, units: list[bytes], reference: str) -> tuple[list[dict[str, Any]], str]:
    """The case's steps (see the module docstring) and the requirement its close checks."""
    state, steps = "WAITING_EC_MSG", []
    for u in units[:-1]:
        kind = packet_kind(u)
        steps.append(_step("send", CS_VALID, packet="raw", hex=wire_hex(u)))
        if kind in _ANSWERED:
            steps.append(_step("receive", CS_VALID, packet=kind, within=INIT, skip=["SessionAck"]))
            state = _ANSWERED[kind]
    close = close_requirement("acceptor", units[-1], state)
    steps.append(_step("send", close, packet="raw", hex=wire_hex(units[-1])))
    if reference == "closed":
        steps.append(_step("wait_for", close, closed=1, within=INIT))
    elif state == "OPEN":
        steps += [_step("send", SEND_ACK, packet="UserMessage"), _step("receive", SEND_ACK, within="SessionAckSend")]
    else:
        steps.append(_step("receive", CS_VALID, within=INIT))
    if f.oracle == "crash":
        steps.append(_step("send", CS_VALID, packet="EstablishConnection", new_connection=True))
        steps.append(_step("receive", CS_VALID, packet="EstablishConnection", within=INIT))
    return steps, close


def case_of(f: Finding, units: list[bytes], reference: str) -> dict[str, Any]:
    """The acceptor wire case of the minimal packets (see the module docstring)."""
    steps, close = _steps(f, units, reference)
    cited = [str(r) for r in dict.fromkeys(s["requirement"] for s in steps)]
    then: dict[str, Any] = {}
    if f.oracle == "violation":  # the rule the acceptor broke is graded by its own requirement
        then = {"then": {"peer": {"violations": []}}}
        cited.append(f.requirement)
    else:
        f.requirement = close if reference == "closed" else cited[-1]
        f.level, f.section = requirement_level(f.requirement), requirement_section(f.requirement)
    what = {"crash": "a new connection is still served", "hang": "the acceptor still reacts"}.get(
        f.oracle, f"the replies break no rule ({f.requirement})"
    )
    return {
        "id": f"fuzz.{f.oracle}.seed{f.seed}.round{f.round}",
        "title": f"After {f.template} with {f.field or 'no field'} {f.op} in {f.state}, {what} "
        f"({'closes the session' if reference == 'closed' else 'answers'})",
        "spec": [{"section": requirement_section(r), "requirement": r} for r in cited],
        "tags": ["fuzz", f.oracle],
        "given": {"peer": {"under_test": "acceptor"}},
        "when": steps,
        **then,
    }
