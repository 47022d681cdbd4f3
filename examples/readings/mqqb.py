"""[MS-MQQB] readings the reference does not take (see examples/readings/__init__.py).

For each [MS-MQQB] ``interpretation`` of cases/requirements.yaml, an implementation that takes
another reading than the reference's (the requirement's first alternative):

- sender-side readings (the initiator's: establishment, retries, pings, the window, when to
  acknowledge, what 3.1.7.12 connects for) are :class:`~harness.session.OutgoingQueueProcessing`
  subclasses, each running an :class:`~harness.session.Initiator` subclass (``initiator_class``)
  that answers one reading hook differently; :func:`target` runs one through the reference adapter
  as an external sender (``cmd:<python> examples/reference_adapter.py --sender <module:Class>``, which
  connects to the harness's acceptor from its own process and reports its ADM state);
- acceptor-side readings (the acceptor's: the ServerGuid it accepts, the Ping Flags, the Signature's
  byte order, the recoverable acknowledgment fields, the ranges and FinalAcks it takes) are the
  simulated peer's reading behaviours (``harness.session.acceptor.READING_BEHAVIOURS``, named after
  the reading; ``msmq-harness peer --list-behaviours``), run as the target
  ``reference?peer=NAME``.

Each class's docstring names the requirement, the alternative and the sections, and what the
reading does.  :data:`SENDERS` lists the sender classes; examples/readings/__init__.py registers
every alternative in ``MQQB_READINGS``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from examples.mutants.sender import RuleBroken
from harness.session import OutgoingQueueProcessing
from harness.session.actions import SessionState
from harness.session.initiator import Initiator

__all__ = [
    "ADAPTER",
    "SENDERS",
    "AcknowledgesEachMessage",
    "BadPaddingMalformed",
    "ConnectsAgainWhileAwaitingEstablishConnection",
    "ConnectsAgainWhileAwaitingReconnect",
    "ConnectsAgainWhileOpen",
    "GivesUpSlowEstablishment",
    "NoEntryAfterEstablishSteps",
    "NoRetryAfterConnectFailure",
    "OwnWindowOnly",
    "PingOnRetry",
    "RedispatchesUncovered",
    "ResolveFailureEntryOnly",
    "target",
]

ADAPTER = Path(__file__).resolve().parents[1] / "reference_adapter.py"


def target(spec: str, *, adm: bool = True) -> str:
    """The target that runs one alternative: ``sender:pkg.mod:Class`` through the reference adapter
    as an external sender (``adm`` False: it reports no ADM state, judged on the wire alone), any
    other spec (``reference?peer=NAME``) as it is."""
    if spec.startswith("sender:"):
        return f"cmd:{sys.executable} {ADAPTER} --sender {spec.removeprefix('sender:')}" + ("" if adm else " --no-adm")
    return spec


# --------------------------------------------------------------------------------------- sender


class _NoEntryInitiator(Initiator):
    def entry_after_establish_steps(self) -> bool:
        return False


class NoEntryAfterEstablishSteps(OutgoingQueueProcessing):
    """MQQB-3.1.5.2-ENTRY-AFTER-ESTABLISH-STEPS, reading no-entry (MS-MQQB 3.1.5.2, 3.1.5.9): only
    an error in 3.1.5.2.1-3.1.5.2.3 appends a ConnectionHistory entry; a session that fails later,
    before it is OPEN (a refused or invalid EstablishConnection response, the Session
    Initialization Timer, a transport closed by the acceptor), is closed by 3.1.5.9, which appends
    nothing."""

    initiator_class = _NoEntryInitiator


class _NoRetryInitiator(Initiator):
    def retries_after_connect_failure(self) -> bool:
        return False


class NoRetryAfterConnectFailure(OutgoingQueueProcessing):
    """MQQB-3.1.5.2-RETRY-AFTER-CONNECT-FAILURE, reading no-retry (MS-MQQB 3.1.5.2, 3.1.5.2.3): a
    transport connection that cannot be made appends its SocketConnectFailure entry and nothing
    more; no Session Retry Connect Timer is started (3.1.5.2.1 and 3.1.5.2.2 start it on their own
    failures, 3.1.5.2.3 names none), so nothing connects again until another event asks."""

    initiator_class = _NoRetryInitiator


class _EntryOnlyInitiator(Initiator):
    def resolve_failure_as_lookup_failure(self) -> bool:
        return False


class ResolveFailureEntryOnly(OutgoingQueueProcessing):
    """MQQB-3.1.5.2.1-RESOLVE-FAILURE, reading entry-only (MS-MQQB 3.1.5.2.1, 3.1.5.2): a
    destinationHostName that resolves to no address appends the DnsFailure entry 3.1.5.2 requires
    and nothing else: the OutgoingQueue's State is left as it was and no retry is started (the
    failure steps of 3.1.5.2.1 are written for Get Destination Info and Get Next Hops)."""

    initiator_class = _EntryOnlyInitiator


class _PingOnRetryInitiator(Initiator):
    def pings_on_retry(self) -> bool:
        return True


class PingOnRetry(OutgoingQueueProcessing):
    """MQQB-3.1.5.2.2-NO-PING-ON-RETRY, reading ping-on-retry (MS-MQQB 3.1.5.2.2): the permission to
    ping is given for sessions the Session Retry Connect Timer does not create, and no sentence
    forbids it on a retry: a sender that pings (with ``ping`` on) pings before every attempt, retries
    included."""

    initiator_class = _PingOnRetryInitiator


class _BadPaddingInitiator(Initiator):
    def bad_padding_is_malformed(self) -> bool:
        return True


class BadPaddingMalformed(OutgoingQueueProcessing):
    """MQQB-3.1.5.1.3-BAD-PADDING, reading malformed (MS-MQQB 2.2.3.1, 3.1.5.1.3): an
    EstablishConnection response whose Padding is not all 0x5A does not conform to the structures
    of section 2; the initiator discards it and closes the session (no ConnectionParameters
    request)."""

    initiator_class = _BadPaddingInitiator


class _OwnWindowInitiator(Initiator):
    @property
    def send_window(self) -> int:
        return max(1, self.WindowSize)


class OwnWindowOnly(OutgoingQueueProcessing):
    """MQQB-3.1.7.1-PEER-WINDOW, reading own-window (MS-MQQB 3.1.7.1, 3.1.5.4.2): only the sender's
    own WindowSize limits UnAckedMessageCount, as the sentence of 3.1.7.1 says; the
    ReceivedWindowSize of the acceptor's ConnectionParameters response is recorded and not
    consulted (``Initiator.send_window``)."""

    initiator_class = _OwnWindowInitiator


class _AckEachInitiator(Initiator):
    def _ack_threshold(self) -> int:
        return 1


class AcknowledgesEachMessage(OutgoingQueueProcessing):
    """MQQB-3.1.1.6.1-ACK-COUNT, reading sooner (MS-MQQB 3.1.1.6.1, 3.1.6.4): the message count at
    which a receiver acknowledges is its own choice, down to one: the sender acknowledges each
    UserMessage Packet it receives (an OrderAck) at once, before its Session Ack Send Timer runs
    out (``Initiator._ack_threshold``, the reference's: half the smaller window)."""

    initiator_class = _AckEachInitiator


class _RedispatchInitiator(Initiator):
    def connection_made(self) -> list:
        self._copied: set[int] = set()  # positions sent again on this session
        return super().connection_made()

    def _after_session_ack(self) -> None:
        # 3.1.5.5.1: Add Message To Dispatch Collection for every position whose ReceivedSessionAck
        # is FALSE, in table order; a message in flight that this SessionAck did not cover goes out
        # again (once on a session: the copy takes its place in the window and its SequenceNumber)
        copies = [
            mid
            for mid, pos in self.OutgoingMessageTable.items()
            if mid in self._sent and pos.AwaitingAck and not pos.ReceivedSessionAck and mid not in self._copied
        ]
        for mid in copies:
            self._copied.add(mid)
            self.OutgoingMessageTable[mid].AwaitingAck = False
            self.UnAckedMessageCount -= 1
        self._dispatch.extendleft(reversed(copies))
        super()._after_session_ack()


class RedispatchesUncovered(OutgoingQueueProcessing):
    """MQQB-3.1.5.8.1-duplicate, reading redispatch (MS-MQQB 3.1.5.5.1, 3.1.5.8.1): 3.1.5.5.1 raises
    Add Message To Dispatch Collection for every OutgoingMessagePosition whose ReceivedSessionAck is
    FALSE, so a message in flight that a SessionAck did not cover goes out again on the same
    session, before the messages after it (here once per session, within the window); the receiver
    discards the copy (3.1.5.8.1)."""

    initiator_class = _RedispatchInitiator


#: The timer of :class:`GivesUpSlowEstablishment` (python-only; the driver fires it by name).
ESTABLISHMENT_PATIENCE = "EstablishmentPatience"


class _GivesUpInitiator(Initiator):
    def connection_made(self) -> list:
        actions = super().connection_made()
        self._start_timer(ESTABLISHMENT_PATIENCE, self.config.session_initialization / 2)
        return actions + self._take()

    def _timer_EstablishmentPatience(self) -> None:
        if self.SessionState in (SessionState.WAITING_ECR_MSG, SessionState.WAITING_CPR_MSG):
            why = "gives up: the session is not OPEN after half the Session Initialization Timer"
            self._close(why, "MS-MQQB 3.1.5.9")


class GivesUpSlowEstablishment(OutgoingQueueProcessing):
    """MQQB-3.1.5.9-closed-early, reading own-reasons (MS-MQQB 3.1.5.9, 3.1.2.1, 3.1.7.3): 3.1.5.9
    says how a session closes, not when; this initiator gives up, for a reason of its own, a
    session that is not OPEN after half its Session Initialization Timer (the timer's duration is
    implementation-dependent), and the acceptor closes its end (3.1.7.3)."""

    initiator_class = _GivesUpInitiator


# NO-CONNECT: 3.1.7.12 with a connection begun although ConnectionHistory is not empty (moved here
# from examples/mutants/sender.py, where they were mutants before NO-CONNECT became an
# interpretation; RuleBroken renders the rest of the event as the reference does).


class ConnectsAgainWhileAwaitingEstablishConnection(RuleBroken):
    """MQQB-3.1.7.12-NO-CONNECT, reading may-connect (MS-MQQB 3.1.7.12), in SessionState
    WAITING_ECR_MSG: a message made available while the EstablishConnection request awaits its
    response begins a second connection of the queue (ConnectionHistory holds InProcess: the
    sentence requires a connection only when it is empty, and forbids none)."""

    connect_again_in = (SessionState.WAITING_ECR_MSG,)


class ConnectsAgainWhileOpen(RuleBroken):
    """MQQB-3.1.7.12-NO-CONNECT, reading may-connect (MS-MQQB 3.1.7.12), in SessionState OPEN: every
    message made available while a session is open begins a new session of the queue."""

    connect_again_in = (SessionState.OPEN,)


class ConnectsAgainWhileAwaitingReconnect(RuleBroken):
    """MQQB-3.1.7.12-NO-CONNECT, reading may-connect (MS-MQQB 3.1.7.12, 3.1.5.9, 3.1.6.1), in
    SessionState WAITING_RECONNECT: a message made available after the session closed with messages
    pending connects at once instead of waiting for the Session Retry Connect Timer."""

    connect_again_in = (SessionState.WAITING_RECONNECT,)


#: Every sender-side alternative, as ``module:Class``.
SENDERS: list[str] = [
    f"{__name__}:{name}"
    for name in (
        "NoEntryAfterEstablishSteps",
        "NoRetryAfterConnectFailure",
        "ResolveFailureEntryOnly",
        "PingOnRetry",
        "BadPaddingMalformed",
        "OwnWindowOnly",
        "AcknowledgesEachMessage",
        "RedispatchesUncovered",
        "GivesUpSlowEstablishment",
        "ConnectsAgainWhileAwaitingEstablishConnection",
        "ConnectsAgainWhileOpen",
        "ConnectsAgainWhileAwaitingReconnect",
    )
]
