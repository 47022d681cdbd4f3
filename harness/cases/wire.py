"""Wire cases: [MS-MQQB] session cases as data, their checks, and how their failures are shown.

A wire case names a peer (``given.peer``: which side of an [MS-MQQB] 2.1.1 protocol session is
under test, and the fault behaviour of the simulated peer) and steps that are wire actions
(``action:`` instead of ``event:``): create an [MS-MQDMPR] 3.1.1.3 OutgoingQueue, enqueue
messages so that Message Position Available ([MS-MQQB] 3.1.7.12) runs, wait for packets or a
condition, send crafted packets ([MS-MQQB] 2.2, [MS-MQMQ] 2.2.19-2.2.20) and receive the replies.
Every wait is bounded by the [MS-MQQB] 3.1.2 timers it names (``within: SessionAckSend``,
``before: SessionInitialization``; :data:`TIMERS`, :func:`parse_bound`), never by a number of
seconds: the wire target computes the bound from the timer durations and the values the harness
sent (harness.cases.targets.wire).  Expectations name packet fields by spec path
(``EstablishConnectionHeader.ServerGuid``, ``BaseHeader.Flags.SH``) and the OutgoingQueue state
(State, ConnectionHistory Status values of [MS-MQDMPR] 3.1.1.3, OutgoingMessagePosition
attributes of [MS-MQQB] 3.1.1.3.1.2).  This module
holds the vocabulary of a wire case and the semantic checks the loader runs on one
(:func:`check_wire_case`); the timers that bound its waits are harness.cases.wiretimers, the
comparison of observed values harness.cases.wirematch, packet field lookup by spec path and the
hex dump with the checked field marked harness.cases.wirefields.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from harness.cases.grading import unwrap
from harness.cases.schema import Lines, PathT
from harness.cases.wiretimers import TIMERS, parse_bound
from packets.layout import SESSION_KINDS, PacketKind

__all__ = [
    "DELIVERY",
    "PACKET_KINDS",
    "RAW",
    "behaviours_of",
    "check_wire_case",
    "is_wire_doc",
    "needs_simulated_peer",
    "sends_transactional",
]

_WAIT_CONDITIONS = ("packet", "acked", "connection_history", "connections", "closed")
RAW = "raw"  # a step's packet given as bytes (``hex``)
# The packets a wire case's ``send``, ``receive`` and ``wait_for`` name: the session's kinds
# (packets.layout.PacketKind), or raw bytes.
PACKET_KINDS: tuple[str, ...] = (*(str(k) for k in SESSION_KINDS), RAW)
DELIVERY = ("express", "recoverable", "transactional")


def sends_transactional(steps: Iterable[Any]) -> bool:
    """Whether a wire case's client sends a transactional UserMessage Packet ([MS-MQQB] 3.1.5.8.6):
    the acceptor under test then needs a transactional queue."""
    return any(
        s.action == "send"
        and s.args.get("packet") == PacketKind.UserMessage
        and s.args.get("delivery") == "transactional"
        for s in steps
    )


def is_wire_doc(doc: Mapping[str, Any]) -> bool:
    """A wire case: ``given.peer`` is present, or a step is an ``action``."""
    given = doc.get("given")
    if isinstance(given, Mapping) and "peer" in given:
        return True
    return any(isinstance(s, Mapping) and "action" in s for s in doc.get("when") or [])


def behaviours_of(peer: Mapping[str, Any]) -> list[str]:
    """The simulated peer's behaviours, one per connection (the last one repeats)."""
    b = peer.get("behaviour", "normal")
    return [b] if isinstance(b, str) else list(b)


def needs_simulated_peer(case_given: Mapping[str, Any], then: Mapping[str, Any]) -> str:
    """Why a wire case needs the simulated peer ("" when it runs against a live target too):
    a fault behaviour, or checks of what only the simulated peer records."""
    peer = case_given.get("peer") or {}
    faults = [b for b in behaviours_of(peer) if b != "normal"]
    if faults:
        return f"needs the simulated peer's behaviour {', '.join(faults)}"
    if peer.get("listening") is False or peer.get("silent"):
        return "needs the simulated peer not listening or silent"
    if peer.get("replies"):
        return "needs the simulated peer's replies"
    if peer.get("ping"):  # [MS-MQQB] 2.1.2: an acceptor MAY listen for Ping Requests, on a port of its choice
        return "needs the simulated peer's Ping listener"
    tp = then.get("peer") or {}
    if "delivered" in tp or ("violations" in tp and peer.get("under_test") != "acceptor"):
        return "checks what the simulated peer delivered and reported"
    return ""  # an acceptor's replies are checked against the rules by a passive observer, live ones too


def check_wire_case(doc: dict[str, Any], lines: Lines) -> None:
    """The checks the schema cannot express, on a schema-valid wire case (one variant)."""
    given: dict[str, Any] = doc.get("given") or {}
    if "peer" not in given:
        raise lines.error(("given",), "a case with wire actions names its peer: given.peer {under_test, behaviour}")
    for key in ("queues", "transactions", "open", "cursors", "locked"):
        if key in given:
            raise lines.error(("given", key), "a wire case builds its queues with wire actions, not given." + key)
    peer = given["peer"]
    from harness.session import named_behaviour

    names = behaviours_of(peer)
    for i, name in enumerate(names):
        try:
            named_behaviour(name)
        except KeyError as e:
            where: PathT = ("given", "peer", "behaviour") + ((i,) if not isinstance(peer.get("behaviour"), str) else ())
            raise lines.error(where, str(e.args[0])) from None
    from harness.cases.wireruns.peer import check_replies

    check_replies(peer, lines)
    side = peer["under_test"]
    from harness.cases.actions import load_actions

    actions = load_actions()
    allowed = {name for name, a in actions.items() if side in a.sides}
    queues: dict[str, str] = {}
    messages: set[str] = set()
    for i, step in enumerate(doc.get("when") or []):
        if "action" not in step:
            raise lines.error(("when", i, "event"), "a wire case has wire actions only (action: ...), not spec events")
        action = step["action"]
        if action not in allowed:
            raise lines.error(
                ("when", i, "action"),
                f"{action} is not an action of a case checking the {side}; allowed: {', '.join(sorted(allowed))}",
            )
        args: dict[str, Any] = step.get("args") or {}
        declared = actions[action]
        required, optional = frozenset(declared.required), frozenset(declared.optional)
        for arg in args:
            if arg == "timeout" and declared.waits:
                raise lines.error(
                    ("when", i, "args", arg),
                    "a wait is not a number of seconds: name the [MS-MQQB] 3.1.2 timer that bounds it "
                    f"(within: <timer>); timers: {', '.join(TIMERS)}",
                )
            if arg not in required | optional:
                known = ", ".join(sorted(required | optional))
                raise lines.error(("when", i, "args", arg), f"unknown argument {arg!r} of {action}; expected: {known}")
        for arg in sorted(required):
            if arg not in args:
                raise lines.error(("when", i, "args"), f"missing required key {arg!r} ({action})")
        _check_action(action, args, ("when", i, "args"), lines, queues, messages, side)
        _check_wait(declared, args, step.get("expect") or {}, ("when", i), lines)
    then: dict[str, Any] = doc.get("then") or {}
    if "queues" in then or "cursors" in then:
        raise lines.error(("then",), "a wire case checks then.outgoing and then.peer")
    for q, state in (then.get("outgoing") or {}).items():
        if queues.get(q) != "outgoing":
            raise lines.error(("then", "outgoing", q), f"unknown outgoing queue reference {q!r}")
        for j, pos in enumerate(state.get("OutgoingMessagePositions") or []):
            if pos["message"] not in messages:
                raise lines.error(
                    ("then", "outgoing", q, "OutgoingMessagePositions", j), f"unknown message {pos['message']!r}"
                )
    for j, m in enumerate((then.get("peer") or {}).get("delivered") or []):
        if m not in messages:
            raise lines.error(("then", "peer", "delivered", j), f"unknown message reference {m!r}")
    _check_violations(then, lines)
    if side == "acceptor" and ("outgoing" in then or set(then.get("peer") or {}) - {"violations"}):
        raise lines.error(
            ("then",),
            "a case checking the acceptor checks the replies it receives (receive ... expect) and the rules "
            "they break (then.peer.violations)",
        )


def _check_violations(then: Mapping[str, Any], lines: Lines) -> None:
    """``then.peer.violations`` names session rules (harness.session.rules.RuleId: the ids of
    their requirements)."""
    from harness.session.rules import RULES

    for j, rule_id in enumerate((then.get("peer") or {}).get("violations") or []):
        if rule_id not in RULES:
            import difflib

            close = difflib.get_close_matches(str(rule_id), list(RULES), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise lines.error(("then", "peer", "violations", j), f"{rule_id!r} is not a session rule{hint}")


def _check_closed_by(args: Mapping[str, Any], side: str, path: PathT, lines: Lines) -> None:
    """``wait_for {closed: N, by: initiator | acceptor}``: the closes of one side of a sender's sessions."""
    if "by" in args and (side != "initiator" or "closed" not in args or args["by"] not in ("initiator", "acceptor")):
        raise lines.error((*path, "by"), "by: initiator or acceptor, with closed, in a case checking the sender")


def _check_action(
    action: str,
    args: dict[str, Any],
    path: PathT,
    lines: Lines,
    queues: dict[str, str],
    messages: set[str],
    side: str,
) -> None:
    if action in ("create_outgoing_queue", "create_local_queue"):
        name = args["name"]
        if not isinstance(name, str) or name in queues:
            raise lines.error((*path, "name"), f"queue name {name!r} is not a new name")
        queues[name] = "outgoing" if action == "create_outgoing_queue" else "local"
        state = args.get("State")
        allowed = ("Connected", "Disconnected", "Inactive", "Locked", "NeedValidation", "Waiting", "OnHold")
        if state is not None and state not in allowed:
            raise lines.error((*path, "State"), f"{state!r} is not one of: {', '.join(allowed)}")
    elif action == "enqueue":
        if args["queue"] not in queues:
            raise lines.error(
                (*path, "queue"), f"unknown queue reference {args['queue']!r}; created: {', '.join(queues) or 'none'}"
            )
        message = args["message"]
        if not isinstance(message, dict) or not isinstance(message.get("id"), str):
            raise lines.error((*path, "message"), "a message is a mapping {id, delivery, Body, Label, Priority}")
        if message["id"] in messages:
            raise lines.error((*path, "message", "id"), f"duplicate message id {message['id']!r}")
        from harness.model import Message

        for key in message:
            if key not in ("id", "delivery", "Body") and (key.startswith("_") or not hasattr(Message, key)):
                raise lines.error(
                    (*path, "message", key),
                    f"unknown key {key!r}; expected id, delivery, Body or an [MS-MQDMPR] 3.1.1.12 Message attribute",
                )
        if message.get("delivery", "express") not in DELIVERY:
            raise lines.error((*path, "message", "delivery"), f"delivery is one of: {', '.join(DELIVERY)}")
        messages.add(message["id"])
    elif action in ("pause_queue", "resume_queue"):
        if queues.get(args["queue"]) != "outgoing":
            raise lines.error((*path, "queue"), f"unknown outgoing queue reference {args['queue']!r}")
    elif action == "wait_for":
        given = [c for c in _WAIT_CONDITIONS if c in args]
        if len(given) != 1:
            raise lines.error(path, f"wait_for takes exactly one of: {', '.join(_WAIT_CONDITIONS)}")
        if side == "acceptor" and given[0] != "closed":
            raise lines.error(path, "a case checking the acceptor waits with receive (or wait_for closed)")
        for m in args.get("acked") or []:
            if m not in messages:
                raise lines.error((*path, "acked"), f"unknown message reference {m!r}")
        if "packet" in args and args["packet"] not in PACKET_KINDS:
            raise lines.error((*path, "packet"), f"packet is one of: {', '.join(PACKET_KINDS)}")
        if args.get("direction", "c2s") not in ("c2s", "s2c"):
            raise lines.error((*path, "direction"), "direction is c2s (initiator to acceptor) or s2c")
        _check_closed_by(args, side, path, lines)
    elif action == "send":
        if args["packet"] not in PACKET_KINDS:
            raise lines.error((*path, "packet"), f"packet is one of: {', '.join(PACKET_KINDS)}")
        if (args["packet"] == "raw") != ("hex" in args):
            raise lines.error(path, "a raw packet is given as hex, and only a raw packet")
        if args.get("delivery", "express") not in DELIVERY:
            raise lines.error((*path, "delivery"), f"delivery is one of: {', '.join(DELIVERY)}")
    elif action == "receive" and args.get("packet") is not None and args["packet"] not in PACKET_KINDS:
        raise lines.error((*path, "packet"), f"packet is one of: {', '.join(PACKET_KINDS)}")


def _check_wait(declared: Any, args: dict[str, Any], expect: Mapping[str, Any], path: PathT, lines: Lines) -> None:
    """A waiting step names the [MS-MQQB] 3.1.2 timers that bound it: ``within`` (the wait ends
    when the timers would have run out, plus a margin) or ``before`` (less a margin: the step
    checks that nothing happened before they ran out); ``ping`` defaults to within PingResponse."""
    if not declared.waits:
        return
    action = declared.name
    given = [k for k in ("within", "before") if k in args]
    if len(given) > 1:
        raise lines.error((*path, "args"), f"{action} takes within or before, not both")
    if not given:
        if action == "ping":
            return
        raise lines.error(
            (*path, "args"),
            f"{action} names the [MS-MQQB] 3.1.2 timer that bounds its wait: within: <timer> (or before: <timer>); "
            f"timers: {', '.join(TIMERS)}",
        )
    key = given[0]
    try:
        parse_bound(args[key])
    except ValueError as e:
        raise lines.error((*path, "args", key), str(e)) from None
    if key == "before":
        name, value = declared.nothing
        if unwrap(expect.get(name)) is not value:  # a literal, {is: ...} or the first reading
            raise lines.error(
                (*path, "args", "before"),
                f"before bounds a check that nothing happened before the timer ran out: expect {{{name}: {value}}}",
            )
