"""The registries of the wire layer: case actions and the control operations of the target protocol.

A **case action** is a step of an [MS-MQQB] wire case (``action: enqueue``).  It is declared
once, by the :func:`action` decorator on the method of the wire run that executes it
(``harness.cases.wireruns``): its name, the side under test of the cases that may use it, its
required and optional arguments, the expectations it checks when the case writes none, and
whether its wait is bounded by the [MS-MQQB] 3.1.2 timers.  The case schema's list of actions,
the loader's argument checks and docs/adapters.md are all read from :data:`ACTIONS`, complete
once the wire runs are imported (``harness.cases.wirecheck.load_actions``; this module imports
none of its users).

A **control operation** is what the harness asks of the sending queue manager under test in an
initiator case (create an OutgoingQueue for a destination the harness names, enqueue, pause,
resume, read ADM state back), carried by the target protocol (a plugin's ``control`` method, the
``{"op": "control"}`` request of a ``cmd:`` adapter).  :data:`CONTROL_OPS` declares each with its
arguments and result keys; :class:`harness.cases.targets.sender.ReferenceSender` implements them
on the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

__all__ = ["ACTIONS", "CONTROL_OPS", "Action", "ControlOp", "action"]

Side = Literal["initiator", "acceptor"]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Action:
    """One case action: ``sides`` (the side under test of the cases that may use it), its
    arguments (name -> what the value is), the default expectations (``defaults(args, expect)``:
    what the step checks besides what its ``expect`` names), ``nothing`` (the expectation that says
    nothing happened within the bound: a ``before`` bound needs it) and ``result`` (key -> what
    the value is)."""

    name: str
    sides: frozenset[str]
    required: Mapping[str, str]
    optional: Mapping[str, str]
    doc: str
    defaults: Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]] = field(default=lambda args, expect: {})
    nothing: tuple[str, Any] | None = None
    result: Mapping[str, str] = field(default_factory=dict)

    @property
    def waits(self) -> bool:
        """The step waits, bounded by ``within`` or ``before`` the [MS-MQQB] 3.1.2 timers it names."""
        return self.nothing is not None

    @property
    def arguments(self) -> frozenset[str]:
        return frozenset(self.required) | frozenset(self.optional)


ACTIONS: dict[str, Action] = {}
# Each action's declarations, by the qualified name of the method that declares it: one per side
# it is an action of.  A module that runs again (imported anew, e.g. under pytester, which drops
# the modules an in-process run imported) declares its actions again: the method replaces its own
# declaration; a second method on the same side is an error.
_DECLARED: dict[str, dict[str, Action]] = {}


def action(
    name: str,
    *,
    sides: tuple[Side, ...],
    required: Mapping[str, str] | None = None,
    optional: Mapping[str, str] | None = None,
    defaults: Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]] | None = None,
    nothing: tuple[str, Any] | None = None,
    result: Mapping[str, str] | None = None,
) -> Callable[[F], F]:
    """Declare the decorated wire-run method as the case action ``name`` (its docstring is the
    action's documentation)."""

    def register(method: F) -> F:
        declaration = Action(
            name=name,
            sides=frozenset(sides),
            required=dict(required or {}),
            optional=dict(optional or {}),
            doc=" ".join((method.__doc__ or "").split()),
            defaults=defaults or (lambda args, expect: {}),
            nothing=nothing,
            result=dict(result or {}),
        )
        declared = _DECLARED.setdefault(name, {})
        key = f"{method.__module__}.{method.__qualname__}"
        for other_key, other in declared.items():
            if other_key != key and (
                other.sides & declaration.sides or other.nothing != nothing or other.required != declaration.required
            ):
                raise ValueError(f"case action {name!r} declared twice")
        declared[key] = declaration
        ACTIONS[name] = _merged(list(declared.values()))
        return method

    return register


def _merged(declarations: list[Action]) -> Action:
    """One action of the declarations of its sides, in the order they were made: the sides and
    optional arguments merged, the docs joined, the last one's defaults and result; every waiting
    action is bounded by the timers it names."""
    first, last = declarations[0], declarations[-1]
    optional: dict[str, str] = {}
    for d in declarations:
        optional.update(d.optional)
        if first.nothing is not None:
            optional.setdefault("within", "[MS-MQQB] 3.1.2 timers: the wait ends when they would have run out")
            optional.setdefault("before", "[MS-MQQB] 3.1.2 timers: nothing may happen before they run out")
    return Action(
        name=first.name,
        sides=frozenset().union(*(d.sides for d in declarations)),
        required=first.required,
        optional=optional,
        doc=" ".join(d.doc for d in declarations),
        defaults=last.defaults,
        nothing=first.nothing,
        result=last.result,
    )


@dataclass(frozen=True)
class ControlOp:
    """One control operation of the target protocol: its arguments and result keys (name ->
    what the value is); ``adm`` names the result keys only a target with ``adm:outgoing``
    reports."""

    name: str
    doc: str
    args: Mapping[str, str]
    result: Mapping[str, str]
    adm: tuple[str, ...] = ()


_MESSAGE = (
    "{id, delivery: express|recoverable|transactional, Body, and any [MS-MQDMPR] 3.1.1.12 Message "
    "attribute by its name (Label defaults to id)}"
)
_ADM_RESULT = {
    "connection_requested": "boolean: [MS-MQQB] 3.1.7.12 asked for a connection (adm:outgoing)",
    "OutgoingMessagePosition": "object: the [MS-MQQB] 3.1.1.3.1.2 attributes of the position built, "
    "absent if none (adm:outgoing)",
    "State": "text: the OutgoingQueue's [MS-MQDMPR] 3.1.1.3 State (adm:outgoing)",
    "ConnectionHistory": "list of text: its ConnectionHistory Status values, oldest first (adm:outgoing)",
}
CONTROL_OPS: dict[str, ControlOp] = {
    op.name: op
    for op in (
        ControlOp(
            "wire_setup",
            "Start afresh: a queue manager with no queues whose sender connects to the harness's acceptor.",
            {
                "host": "text: the host of the harness's acceptor (127.0.0.1)",
                "port": "integer: its TCP port",
                "ping_port": "integer or null: its UDP ping port ([MS-MQQB] 2.1.2)",
                "scale": "number in (0, 1]: run the [MS-MQQB] 3.1.2 timers this many times their durations",
                "window": "integer: the WindowSize to send in ConnectionParameters ([MS-MQQB] 2.2.2.1)",
                "ping": "boolean: ping the acceptor before connecting ([MS-MQQB] 3.1.7.6)",
            },
            {
                "scale": "number: the time scale the sender runs (the harness's bounds use it)",
                "window": "integer: the WindowSize it sends",
                "QueueManager.Identifier": "GUID text: its QueueManager.Identifier (EstablishConnection ClientGuid)",
                "timers": "object: its implementation-dependent [MS-MQQB] 3.1.2 values: SessionInitialization, "
                "SessionRetryConnect, ResendInterval (seconds), AckWaitTimeout (ms), SessionAckWaitMultiple",
            },
        ),
        ControlOp(
            "create_outgoing_queue",
            "An [MS-MQDMPR] 3.1.1.3 OutgoingQueue whose messages go to the address the harness names.",
            {
                "name": "text: the case's name for the queue",
                "DestinationFormatName": "text: an [MS-MQMQ] 2.1 format name",
                "address": "{host, port}: where the destination's messages go (the host is resolved; "
                "names under .invalid never resolve)",
                "State": "text: the initial State (Inactive unless given)",
                "Multicast": "boolean",
                "Transactional": "boolean",
            },
            {"State": _ADM_RESULT["State"]},
            adm=("State",),
        ),
        ControlOp(
            "create_local_queue",
            "A local [MS-MQDMPR] 3.1.1.2 Queue (not an OutgoingQueue).",
            {"name": "text", "Transactional": "boolean"},
            {},
        ),
        ControlOp(
            "enqueue",
            "[MS-MQDMPR] 3.1.7.1.9 Enqueue Message (a transactional message under a committed "
            "transaction), which raises [MS-MQQB] 3.1.7.12 Message Position Available.",
            {"queue": "text: a queue name", "message": _MESSAGE},
            {"rStatus": "text: the Enqueue Message status", **_ADM_RESULT},
            adm=tuple(_ADM_RESULT),
        ),
        ControlOp(
            "pause_queue",
            "[MS-MQDMPR] 3.1.4.14 Pause Queue on an OutgoingQueue.",
            {"queue": "text"},
            {"State": _ADM_RESULT["State"]},
            adm=("State",),
        ),
        ControlOp(
            "resume_queue",
            "[MS-MQDMPR] 3.1.4.15 Resume Queue on an OutgoingQueue.",
            {"queue": "text"},
            {"State": _ADM_RESULT["State"]},
            adm=("State",),
        ),
        ControlOp(
            "observe_outgoing",
            "The ADM state of OutgoingQueues (adm:outgoing only).",
            {"queues": "list of queue names"},
            {
                "queues": "object: name -> {State, ConnectionHistory, OutgoingMessagePositions: "
                "[{message, AwaitingAck, ReceivedSessionAck, ReceivedOrderAck, Transmitted, SequenceNumber, "
                "RecoverableSequenceNumber, TxSequenceNumber}]}"
            },
            adm=("queues",),
        ),
        ControlOp("wire_close", "Stop sending: close every connection.", {}, {}),
    )
}
