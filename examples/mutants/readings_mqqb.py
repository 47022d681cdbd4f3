"""Out-of-reading mutants of [MS-MQQB]: for an ``interpretation`` of cases/requirements.yaml, the
reference answering, where it takes its reading, with a value that NO reading gives.

As for [MS-MQDMPR] (examples/mutants/readings.py): a reading is an answer, never an excuse; an
implementation that answers outside every named reading breaks the MUST sentence that frames the
choice (the interpretation's ``frame``), and the corpus must fail it there.  Generated from
:data:`TABLE` (interpretation id -> side -> hook -> out-of-reading answer) by :func:`generate`:

- an acceptor-side row becomes a behaviour of the simulated peer, an
  :class:`~harness.session.AcceptorBehaviour` (a module attribute, so that the target
  ``reference?peer=examples.mutants.readings_mqqb:<Name>`` runs it): the row's ``fields`` set, its
  hook replaced through ``reading_hooks``;
- a sender-side row becomes an :class:`~harness.session.OutgoingQueueProcessing` subclass whose
  :class:`~harness.session.Initiator` (``initiator_class``) has the hook replaced, run as an
  external sender through the reference adapter (harness.cases.mutants.target_of).

:data:`MUTANTS` lists (interpretation id, ``module:Name``); ``python -m harness.cases.mutants``
runs them with the [MS-MQDMPR] ones under "out-of-reading mutants".  :data:`NO_MUTANT` says, for
each other [MS-MQQB] interpretation, why no answer is outside every reading where a case checks it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from harness.model.enums import ConnectionStatus
from harness.session import AcceptorBehaviour, Initiator, OutgoingQueueProcessing
from harness.session.actions import Action, Connect


@dataclass(frozen=True)
class OutOfReading:
    """One row: the mutant ``name`` answers ``answer`` at ``hook`` (a method of the Acceptor or of
    the Initiator, replaced by a function taking the engine and the hook's arguments) and sets
    the AcceptorBehaviour ``fields`` (acceptor side); ``says`` is the answer in words."""

    interpretation: str
    name: str
    side: Literal["acceptor", "sender"]
    says: str
    hook: str = ""
    answer: Any = None
    fields: dict[str, Any] = field(default_factory=dict)


def _cumulative(acceptor: Any, lowest: int, flags: int) -> tuple[int, int]:
    """RecoverableMsgAckSeqNumber the highest recoverable message persisted, no flag set."""
    if not flags:
        return lowest, flags
    return lowest + flags.bit_length() - 1, 0


def _socket_failure_entry(initiator: Any, status: ConnectionStatus) -> None:
    """A failure after 3.1.5.2's steps recorded as SocketConnectFailure, which did not happen."""
    initiator._failure_recorded = True
    initiator._history(ConnectionStatus.SocketConnectFailure, 1)


def _retry_without_entry(initiator: Any, status: ConnectionStatus = ConnectionStatus.SocketConnectFailure) -> list:
    """A transport connection that cannot be made: the retry timer starts, no entry is appended."""
    from harness.session.actions import SessionState, Timer

    initiator._connecting = False
    if initiator.OutgoingMessageTable:
        initiator._start_timer(Timer.SessionRetryConnect, initiator.config.session_retry_connect)
        initiator.SessionState = SessionState.WAITING_RECONNECT
    out: list[Action] = initiator._take()
    return out


def _retry_claims_ping(initiator: Any, retry: bool = False) -> None:
    """A session the retry timer creates sends no Ping Request, yet its EstablishConnection has
    OperatingSystem.SE 0 (the Ping Mechanism was used, 2.2.3.1)."""
    Initiator._start(initiator, retry)
    if retry and any(isinstance(a, Connect) for a in initiator._out):
        initiator._ping_sent = True


#: interpretation id -> side -> hook -> out-of-reading answer (one generated mutant per row).
TABLE: list[OutOfReading] = [
    OutOfReading(
        "MQQB-2.2.7-FLAG-BITS", "PingFlagsSwapped", "acceptor",
        "Ping Responses carry RC in bit 1 and RF in bit 0 of Flags (neither the example frames' bits 0, 1 nor"
        " the diagram's 14, 15)",
        fields={"ping_flag_bits": (1, 0)},
    ),
    OutOfReading(
        "MQQB-3.1.5.1.2-SIGNATURE-BYTE-ORDER", "SignatureNeitherOrder", "acceptor",
        "every packet sent carries the Signature bytes 4C 4F 49 52 (0x524F494C in neither byte order)",
        fields={"reply_signature": 0x52494F4C},
    ),
    OutOfReading(
        "MQQB-3.1.6.4-RECOVERABLE-ACK-BASE", "RecoverableAckCumulative", "acceptor",
        "a SessionHeader acknowledges recoverable messages by RecoverableMsgAckSeqNumber alone: the highest"
        " persisted, RecoverableMsgAckFlags 0 (no reading leaves the flags empty)",
        hook="recoverable_ack_fields", answer=_cumulative,
    ),
    OutOfReading(
        "MQQB-3.1.5.2-ENTRY-AFTER-ESTABLISH-STEPS", "LateFailureSocketConnectFailure", "sender",
        "a session that fails after 3.1.5.2's steps appends SocketConnectFailure (neither an entry that"
        " describes the error nor none)",
        hook="_failed_establishment", answer=_socket_failure_entry,
    ),
    OutOfReading(
        "MQQB-3.1.5.2-RETRY-AFTER-CONNECT-FAILURE", "RetryWithoutEntries", "sender",
        "a transport connection that cannot be made appends no entry, and the retry timer tries again"
        " (neither reading: each appends its SocketConnectFailure)",
        hook="connection_failed", answer=_retry_without_entry,
    ),
    OutOfReading(
        "MQQB-3.1.5.2.2-NO-PING-ON-RETRY", "RetryClaimsPing", "sender",
        "a session the Session Retry Connect Timer creates pings no more, yet its EstablishConnection says"
        " it did (OperatingSystem.SE 0): neither reading's request",
        hook="_start", answer=_retry_claims_ping,
    ),
]

#: The [MS-MQQB] interpretations without an out-of-reading mutant, and why: every value a case can
#: observe where it checks the interpretation is some reading's.
NO_MUTANT: dict[str, str] = {
    "MQQB-2.2.1-CS-NULL-SERVERGUID": "CS is one bit, and the two readings give 0 and 1",
    "MQQB-2.2.2.1-WINDOWSIZE-ZERO": "the first reading, zero-valid, admits every WindowSize 0x0000-0xFFFF",
    "MQQB-3.1.1.6.1-ACK-COUNT": "the case checks whether a SessionAck came before the timer: yes and no are the"
    " two readings",
    "MQQB-3.1.5.1.3-BAD-PADDING": "the case checks whether a ConnectionParameters request followed: yes and no"
    " are the two readings",
    "MQQB-3.1.5.2.1-RESOLVE-FAILURE": "entry-only leaves the State to the implementation (any value) and the"
    " retry is yes or no",
    "MQQB-3.1.7.1-PEER-WINDOW": "four messages never exceed the sender's own window of 8: every count is"
    " own-window's",
    "MQQB-3.1.7.12-NO-CONNECT": "each case first checks connection_requested, yes or no, both may-connect's,"
    " and a case stops at its first step with a difference",
    "MQQB-2.2.2.1-recoverable-ack-timeout": "a session rule: graded through then.peer.violations, which names"
    " no readings",
    "MQQB-2.2.2.1-ack-timeout": "a session rule: graded through then.peer.violations, which names no readings",
    "MQQB-3.1.1.6.1-sender-ack-fields": "a session rule: graded through then.peer.violations, which names no"
    " readings",
    "MQQB-3.1.5.7-final-ack-unknown": "a session rule: graded through then.peer.violations, which names no"
    " readings",
    "MQQB-3.1.5.8.1-duplicate": "a session rule: graded through then.peer.violations, which names no readings",
    "MQQB-3.1.5.9-closed-early": "a session rule: graded through then.peer.violations, which names no readings",
}


def _doc(row: OutOfReading) -> str:
    where = f"hook ``{row.hook}``" if row.hook else f"fields {', '.join(sorted(row.fields))}"
    return (
        f"Out of every reading of {row.interpretation}: {row.says}.\n\n"
        f"Generated by examples.mutants.readings_mqqb.generate ({row.side} side, {where}); the corpus must"
        " fail it under the interpretation's frame."
    )


def generate(rows: list[OutOfReading]) -> dict[str, Any]:
    """One mutant per row: an AcceptorBehaviour (acceptor side) or an OutgoingQueueProcessing
    subclass running an Initiator subclass (sender side), each with the row's answer."""
    from harness.session import Acceptor

    made: dict[str, Any] = {}
    for row in rows:
        if row.side == "acceptor":
            if row.hook and not hasattr(Acceptor, row.hook):
                raise AttributeError(f"{row.name}: Acceptor has no hook {row.hook!r}")
            hooks = ((row.hook, row.answer),) if row.hook else ()
            made[row.name] = AcceptorBehaviour(
                f"{__name__}:{row.name}", reading_hooks=hooks, summary=_doc(row).split("\n")[0], **row.fields
            )
            continue
        if not hasattr(Initiator, row.hook):
            raise AttributeError(f"{row.name}: Initiator has no hook {row.hook!r}")
        engine = type(
            f"{row.name}Initiator",
            (Initiator,),
            {"__module__": __name__, "__qualname__": f"{row.name}Initiator", row.hook: row.answer},
        )
        made[f"{row.name}Initiator"] = engine
        made[row.name] = type(
            row.name,
            (OutgoingQueueProcessing,),
            {"__doc__": _doc(row), "__module__": __name__, "__qualname__": row.name, "initiator_class": engine},
        )
    return made


GENERATED = generate(TABLE)
globals().update(GENERATED)

#: (interpretation id, ``module:Name``) of each generated mutant, in the order of :data:`TABLE`.
MUTANTS: list[tuple[str, str]] = [(row.interpretation, f"{__name__}:{row.name}") for row in TABLE]
