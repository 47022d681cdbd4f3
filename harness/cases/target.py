"""The Target protocol: what the runner needs from an implementation under test.

A target raises the spec's events ([MS-MQDMPR] 3.1.4, 3.1.7, 3.2.7 by their snake_case
names) on its own state and reports results and state by the names the case gave its objects.
The embedded reference model, a plugin class, a subprocess speaking JSON lines (docs/cases.md)
and, for [MS-MQQB] wire cases, a live or simulated peer all implement it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from harness.errors import HarnessError

__all__ = [
    "ADM_OUTGOING",
    "CAPABILITIES",
    "MODEL",
    "PEER_BEHAVIOURS",
    "TARGET_ERRORS",
    "WIRE_ACCEPTOR",
    "WIRE_INITIATOR",
    "WIRE_PING_PORT",
    "WIRE_SENDER_PING",
    "WIRE_TX_QUEUE",
    "Target",
    "TargetError",
    "TargetInfo",
    "TargetUndefinedBehaviour",
    "TargetUnsupported",
    "hello_events",
    "target_error",
]

# Capabilities a target lists in its hello; the runner decides from them alone which cases run.
MODEL = "model"
WIRE_INITIATOR = "wire:initiator"
WIRE_SENDER_PING = "wire:sender-ping"
ADM_OUTGOING = "adm:outgoing"
WIRE_ACCEPTOR = "wire:acceptor"
PEER_BEHAVIOURS = "peer-behaviours"
WIRE_PING_PORT = "wire:ping-port"
WIRE_TX_QUEUE = "wire:tx-queue"
CAPABILITIES: dict[str, str] = {
    MODEL: "raises the [MS-MQDMPR] events of model cases (setup, event, observe)",
    WIRE_INITIATOR: "a sender the harness drives through control operations: it connects to the harness's "
    "acceptor over TCP (initiator wire cases)",
    WIRE_SENDER_PING: "its sender pings the acceptor before connecting when wire_setup asks ([MS-MQQB] 3.1.7.6)",
    ADM_OUTGOING: "reports the ADM state of its OutgoingQueues (State, ConnectionHistory, OutgoingMessagePositions)",
    WIRE_ACCEPTOR: "an acceptor the harness connects to over TCP (acceptor wire cases)",
    PEER_BEHAVIOURS: "its acceptor is the harness's simulated peer, with fault behaviours and what it records",
    WIRE_PING_PORT: "its acceptor answers Ping Requests on a known UDP port ([MS-MQQB] 2.1.2)",
    WIRE_TX_QUEUE: "its acceptor has a transactional queue the case's transactional messages address",
}


@dataclass
class TargetInfo:
    """What a target says of itself when the run starts.

    ``events``: the spec events it raises, or None for every event the cases use (a ``model``
    target whose hello lists none: :func:`hello_events`); ``[]`` is no event at all (a target
    without ``model``).  ``capabilities`` (of :data:`CAPABILITIES`) alone decide whether model
    cases (``model``) and which wire cases apply, never the events."""

    name: str
    events: list[str] | None = None
    capabilities: list[str] = field(default_factory=lambda: [MODEL])  # of CAPABILITIES
    version: str = ""  # the implementation's own version, as its hello says it ("" when it does not)

    def lacks(self, events: Iterable[str]) -> list[str]:
        """The events of ``events`` the target does not raise, each once, in order."""
        wanted = list(dict.fromkeys(events))
        if self.events is None:
            return []
        return [e for e in wanted if e not in self.events]


def hello_events(reply: Mapping[str, Any]) -> list[str] | None:
    """The ``events`` of a hello reply as :attr:`TargetInfo.events`: a list names the events the
    target raises (``[]``: none); ``events`` absent (or null) is every event, which only a target
    with the ``model`` capability raises at all.  ValueError when it is neither."""
    if reply.get("events") is None:
        return None
    events = reply["events"]
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        raise ValueError(f"hello: events is a list of event names or absent (every event), not {events!r}")
    return list(events)


class TargetError(HarnessError):
    """A target could not do what a step asked: anything but the cases of the subclasses below,
    including a crash (the adapter protocol's error kind ``Error``)."""

    #: the adapter protocol's name of the error (docs/adapters.md): what ``expect.error`` reads
    kind: ClassVar[str] = "Error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class TargetUnsupported(TargetError):
    """The target does not implement what the step asks (error kind ``Unsupported``): the case is
    unsupported, not failed."""

    kind: ClassVar[str] = "Unsupported"


class TargetUndefinedBehaviour(TargetError):
    """The spec gives no outcome for what the step asks (error kind ``UndefinedBehaviour``)."""

    kind: ClassVar[str] = "UndefinedBehaviour"


#: The adapter protocol's error kinds -> the error each one is.
TARGET_ERRORS: dict[str, type[TargetError]] = {
    cls.kind: cls for cls in (TargetError, TargetUnsupported, TargetUndefinedBehaviour)
}


def target_error(kind: str, message: str) -> TargetError:
    """The error of an adapter's ``{"ok": false, "kind": ...}`` reply (an unknown kind is ``Error``)."""
    return TARGET_ERRORS.get(kind, TargetError)(message)


@runtime_checkable
class Target(Protocol):
    def hello(self) -> TargetInfo:
        """Name, events and capabilities; called once before the first case."""
        ...

    def setup(self, given: dict[str, Any]) -> None:
        """Start from a fresh state and build the case's ``given``."""
        ...

    def event(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Raise one spec event; return its return values by the spec's names (rStatus, ...),
        with objects named as the case named them (a position by its message's id)."""
        ...

    def observe(self, queues: list[str], cursors: list[str]) -> dict[str, Any]:
        """The state ``then`` checks: {"queues": {q: [{"message", "State"}...]},
        "cursors": {c: {"CursorState", "MessagePositionReference"}}}."""
        ...

    def close(self) -> None: ...


# A target with the wire:initiator capability also has
#     def control(self, op: str, args: dict[str, Any]) -> dict[str, Any]
# (the control operations of harness.cases.actions.CONTROL_OPS), and one with wire:acceptor but
# not peer-behaviours has
#     def acceptor(self) -> harness.cases.targets.live.LiveAcceptor
