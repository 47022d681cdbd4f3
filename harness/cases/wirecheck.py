"""The checks of an [MS-MQQB] wire case that the case schema cannot express (docs/cases.md,
"Wire cases"): the peer (``given.peer``: the side under test of the [MS-MQQB] 2.1.1 protocol
session, the simulated peer's behaviours and replies), each step's action and its arguments as
the action declares them (harness.cases.actions), the [MS-MQQB] 3.1.2 timers that bound each
wait, the [MS-MQDMPR] 3.1.1.3 OutgoingQueues and 3.1.1.12 Messages a step or ``then`` names, and
the session rules ``then.peer.violations`` names.

This module sits above the wire runs (harness.cases.wireruns), whose methods declare the case
actions: importing it makes :data:`harness.cases.actions.ACTIONS` complete (:func:`load_actions`).
The semantic checks (harness.cases.semantics) call :func:`check_wire_case` for a wire document.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import harness.cases.wireruns  # noqa: F401  (its wire runs declare the case actions)
from harness.cases.actions import ACTIONS, Action
from harness.cases.grading import unwrap
from harness.cases.lines import Lines, PathT
from harness.cases.wire import DELIVERY, PACKET_KINDS, RAW, behaviours_of
from harness.cases.wireruns.peer import check_replies
from harness.cases.wiretimers import TIMERS, parse_bound
from harness.model import Message
from harness.session import named_behaviour
from harness.session.rules import RULES

__all__ = ["check_wire_case", "load_actions"]

_WAIT_CONDITIONS = ("packet", "acked", "connection_history", "connections", "closed")
_QUEUE_STATES = ("Connected", "Disconnected", "Inactive", "Locked", "NeedValidation", "Waiting", "OnHold")


def load_actions() -> dict[str, Action]:
    """:data:`harness.cases.actions.ACTIONS`, complete: this module imports the wire runs that
    declare them."""
    return ACTIONS


@dataclass
class _Defined:
    """What the steps before the one being checked defined: queues (name -> "outgoing" or
    "local") and message ids."""

    side: str
    queues: dict[str, str] = field(default_factory=dict)
    messages: set[str] = field(default_factory=set)


def check_wire_case(doc: dict[str, Any], lines: Lines) -> None:
    """The checks the schema cannot express, on a schema-valid wire case (one variant)."""
    defined = _Defined(_check_peer(doc.get("given") or {}, lines))
    actions = load_actions()
    allowed = {name for name, a in actions.items() if defined.side in a.sides}
    for i, step in enumerate(doc.get("when") or []):
        if "action" not in step:
            raise lines.error(("when", i, "event"), "a wire case has wire actions only (action: ...), not spec events")
        action = step["action"]
        if action not in allowed:
            raise lines.error(
                ("when", i, "action"),
                f"{action} is not an action of a case checking the {defined.side}; "
                f"allowed: {', '.join(sorted(allowed))}",
            )
        args: dict[str, Any] = step.get("args") or {}
        declared = actions[action]
        _check_arguments(declared, args, ("when", i), lines)
        check = _ACTION_CHECKS.get(action)
        if check is not None:
            check(args, ("when", i, "args"), lines, defined)
        _check_wait(declared, args, step.get("expect") or {}, ("when", i), lines)
    _check_then(doc.get("then") or {}, defined, lines)


def _check_peer(given: Mapping[str, Any], lines: Lines) -> str:
    """``given`` names the peer and nothing a model case builds; the peer's behaviours and
    replies are the simulated peer's.  The side under test."""
    if "peer" not in given:
        raise lines.error(("given",), "a case with wire actions names its peer: given.peer {under_test, behaviour}")
    for key in ("queues", "transactions", "open", "cursors", "locked"):
        if key in given:
            raise lines.error(("given", key), "a wire case builds its queues with wire actions, not given." + key)
    peer = given["peer"]
    for i, name in enumerate(behaviours_of(peer)):
        try:
            named_behaviour(name)
        except KeyError as e:
            where: PathT = ("given", "peer", "behaviour") + ((i,) if not isinstance(peer.get("behaviour"), str) else ())
            raise lines.error(where, str(e.args[0])) from None
    check_replies(peer, lines)
    side: str = peer["under_test"]
    return side


def _check_arguments(declared: Action, args: Mapping[str, Any], path: PathT, lines: Lines) -> None:
    """The step's arguments are those its action declares, the required ones all there; a wait
    is bounded by timers, never by seconds."""
    required, optional = frozenset(declared.required), frozenset(declared.optional)
    for arg in args:
        if arg == "timeout" and declared.waits:
            raise lines.error(
                (*path, "args", arg),
                "a wait is not a number of seconds: name the [MS-MQQB] 3.1.2 timer that bounds it "
                f"(within: <timer>); timers: {', '.join(TIMERS)}",
            )
        if arg not in required | optional:
            known = ", ".join(sorted(required | optional))
            raise lines.error((*path, "args", arg), f"unknown argument {arg!r} of {declared.name}; expected: {known}")
    for arg in sorted(required):
        if arg not in args:
            raise lines.error((*path, "args"), f"missing required key {arg!r} ({declared.name})")


def _check_then(then: Mapping[str, Any], defined: _Defined, lines: Lines) -> None:
    """``then`` checks the OutgoingQueues and the peer of the wire case, naming only the queues
    and messages its steps defined."""
    if "queues" in then or "cursors" in then:
        raise lines.error(("then",), "a wire case checks then.outgoing and then.peer")
    for q, state in (then.get("outgoing") or {}).items():
        if defined.queues.get(q) != "outgoing":
            raise lines.error(("then", "outgoing", q), f"unknown outgoing queue reference {q!r}")
        for j, pos in enumerate(state.get("OutgoingMessagePositions") or []):
            if pos["message"] not in defined.messages:
                raise lines.error(
                    ("then", "outgoing", q, "OutgoingMessagePositions", j), f"unknown message {pos['message']!r}"
                )
    for j, m in enumerate((then.get("peer") or {}).get("delivered") or []):
        if m not in defined.messages:
            raise lines.error(("then", "peer", "delivered", j), f"unknown message reference {m!r}")
    _check_violations(then, lines)
    if defined.side == "acceptor" and ("outgoing" in then or set(then.get("peer") or {}) - {"violations"}):
        raise lines.error(
            ("then",),
            "a case checking the acceptor checks the replies it receives (receive ... expect) and the rules "
            "they break (then.peer.violations)",
        )


def _check_violations(then: Mapping[str, Any], lines: Lines) -> None:
    """``then.peer.violations`` names session rules (harness.session.rules.RuleId: the ids of
    their requirements)."""
    for j, rule_id in enumerate((then.get("peer") or {}).get("violations") or []):
        if rule_id not in RULES:
            close = difflib.get_close_matches(str(rule_id), list(RULES), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise lines.error(("then", "peer", "violations", j), f"{rule_id!r} is not a session rule{hint}")


# ------------------------------------------------------------------------ the actions' arguments


def _check_create(args: Mapping[str, Any], path: PathT, lines: Lines, defined: _Defined, *, kind: str) -> None:
    """``create_outgoing_queue`` / ``create_local_queue``: a new queue name, a known State."""
    name = args["name"]
    if not isinstance(name, str) or name in defined.queues:
        raise lines.error((*path, "name"), f"queue name {name!r} is not a new name")
    defined.queues[name] = kind
    state = args.get("State")
    if state is not None and state not in _QUEUE_STATES:
        raise lines.error((*path, "State"), f"{state!r} is not one of: {', '.join(_QUEUE_STATES)}")


def _check_enqueue(args: Mapping[str, Any], path: PathT, lines: Lines, defined: _Defined) -> None:
    """``enqueue``: a created queue, a new message id, [MS-MQDMPR] 3.1.1.12 Message attributes."""
    if args["queue"] not in defined.queues:
        raise lines.error(
            (*path, "queue"),
            f"unknown queue reference {args['queue']!r}; created: {', '.join(defined.queues) or 'none'}",
        )
    message = args["message"]
    if not isinstance(message, dict) or not isinstance(message.get("id"), str):
        raise lines.error((*path, "message"), "a message is a mapping {id, delivery, Body, Label, Priority}")
    if message["id"] in defined.messages:
        raise lines.error((*path, "message", "id"), f"duplicate message id {message['id']!r}")
    for key in message:
        if key not in ("id", "delivery", "Body") and (key.startswith("_") or not hasattr(Message, key)):
            raise lines.error(
                (*path, "message", key),
                f"unknown key {key!r}; expected id, delivery, Body or an [MS-MQDMPR] 3.1.1.12 Message attribute",
            )
    if message.get("delivery", "express") not in DELIVERY:
        raise lines.error((*path, "message", "delivery"), f"delivery is one of: {', '.join(DELIVERY)}")
    defined.messages.add(message["id"])


def _check_outgoing(args: Mapping[str, Any], path: PathT, lines: Lines, defined: _Defined) -> None:
    """``pause_queue`` / ``resume_queue``: an OutgoingQueue the case created."""
    if defined.queues.get(args["queue"]) != "outgoing":
        raise lines.error((*path, "queue"), f"unknown outgoing queue reference {args['queue']!r}")


def _check_wait_for(args: Mapping[str, Any], path: PathT, lines: Lines, defined: _Defined) -> None:
    """``wait_for``: one condition, of the side under test, on known messages and packet kinds;
    ``by`` (the closes of one side of a sender's sessions) with ``closed`` only."""
    given = [c for c in _WAIT_CONDITIONS if c in args]
    if len(given) != 1:
        raise lines.error(path, f"wait_for takes exactly one of: {', '.join(_WAIT_CONDITIONS)}")
    if defined.side == "acceptor" and given[0] != "closed":
        raise lines.error(path, "a case checking the acceptor waits with receive (or wait_for closed)")
    for m in args.get("acked") or []:
        if m not in defined.messages:
            raise lines.error((*path, "acked"), f"unknown message reference {m!r}")
    if "packet" in args and args["packet"] not in PACKET_KINDS:
        raise lines.error((*path, "packet"), f"packet is one of: {', '.join(PACKET_KINDS)}")
    if args.get("direction", "c2s") not in ("c2s", "s2c"):
        raise lines.error((*path, "direction"), "direction is c2s (initiator to acceptor) or s2c")
    by = args.get("by")
    if "by" in args and (defined.side != "initiator" or "closed" not in args or by not in ("initiator", "acceptor")):
        raise lines.error((*path, "by"), "by: initiator or acceptor, with closed, in a case checking the sender")


def _check_send(args: Mapping[str, Any], path: PathT, lines: Lines, defined: _Defined) -> None:
    """``send``: a packet kind (raw bytes given as hex, and only they) and a delivery class."""
    if args["packet"] not in PACKET_KINDS:
        raise lines.error((*path, "packet"), f"packet is one of: {', '.join(PACKET_KINDS)}")
    if (args["packet"] == RAW) != ("hex" in args):
        raise lines.error(path, "a raw packet is given as hex, and only a raw packet")
    if args.get("delivery", "express") not in DELIVERY:
        raise lines.error((*path, "delivery"), f"delivery is one of: {', '.join(DELIVERY)}")


def _check_receive(args: Mapping[str, Any], path: PathT, lines: Lines, defined: _Defined) -> None:
    """``receive``: a packet kind, when it names one."""
    if args.get("packet") is not None and args["packet"] not in PACKET_KINDS:
        raise lines.error((*path, "packet"), f"packet is one of: {', '.join(PACKET_KINDS)}")


def _create(kind: str) -> Callable[[Mapping[str, Any], PathT, Lines, _Defined], None]:
    def check(args: Mapping[str, Any], path: PathT, lines: Lines, defined: _Defined) -> None:
        _check_create(args, path, lines, defined, kind=kind)

    return check


# The checks of an action's arguments beyond those it declares (an action not named has none).
_ACTION_CHECKS: dict[str, Callable[[Mapping[str, Any], PathT, Lines, _Defined], None]] = {
    "create_outgoing_queue": _create("outgoing"),
    "create_local_queue": _create("local"),
    "enqueue": _check_enqueue,
    "pause_queue": _check_outgoing,
    "resume_queue": _check_outgoing,
    "wait_for": _check_wait_for,
    "send": _check_send,
    "receive": _check_receive,
}


def _check_wait(
    declared: Action, args: Mapping[str, Any], expect: Mapping[str, Any], path: PathT, lines: Lines
) -> None:
    """A waiting step names the [MS-MQQB] 3.1.2 timers that bound it: ``within`` (the wait ends
    when the timers would have run out, plus a margin) or ``before`` (less a margin: the step
    checks that nothing happened before they ran out); ``ping`` defaults to within PingResponse."""
    if declared.nothing is None:  # not a waiting action
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
