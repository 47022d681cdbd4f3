"""Mutants of the sender: [MS-MQQB] 3.1.7.12 Message Position Available Event, one rule broken each.

Each class is a ``harness.session.OutgoingQueueProcessing`` that breaks exactly one step of
3.1.7.12 (seed 003); ``plugin:examples.mutants.sender:Name`` runs the initiator wire cases with it
in place of the reference sender, against the simulated peer, so that a mutant is caught through
what it does on the wire and to the OutgoingQueue.  :class:`RuleBroken` renders the event with
the skip conditions and the ConnectionHistory rule as switches; every other step is the
reference's.  Its ``connect_again_in`` (a connection although ConnectionHistory is not empty) is no
mutant: it is the reading may-connect of MQQB-3.1.7.12-NO-CONNECT (examples/readings/mqqb.py).
"""

from __future__ import annotations

from harness.model import MessagePosition, OutgoingQueue, OutgoingQueueState, Queue
from harness.session import OutgoingQueueProcessing
from harness.session.actions import SessionError, SessionState
from harness.session.initiator import Initiator, OutgoingMessagePosition
from harness.session.outgoing import _delivery
from packets.formatname import is_direct_http


class RuleBroken(OutgoingQueueProcessing):
    """3.1.7.12 with its skip conditions and its connect step as switches (all as the spec says)."""

    skip_not_outgoing = True  # "If iQueue is not an OutgoingQueue ... take no further action."
    skip_multicast = True  # "If iQueue.Multicast is True, take no further action."
    skip_states: tuple[OutgoingQueueState, ...] = (OutgoingQueueState.Locked, OutgoingQueueState.OnHold)
    skip_http = True  # "... specifies usage of the HTTP or HTTPS protocol, take no further action."
    connect_when_empty = True  # "If the iQueue.ConnectionHistory array is empty, ... MUST establish a connection"
    connect_again_in: tuple[SessionState, ...] = ()  # states it connects in although not empty (a reading)

    def message_position_available(self, iQueue: Queue, iPosition: MessagePosition) -> None:
        if not isinstance(iQueue, OutgoingQueue):
            if self.skip_not_outgoing:
                return
            iQueue = self._as_outgoing(iQueue)
        if iQueue.Multicast and self.skip_multicast:
            return
        if iQueue.State in self.skip_states:
            return
        if is_direct_http(iQueue.DestinationFormatName) and self.skip_http:
            return
        init = self.initiator(iQueue)
        history = list(iQueue.ConnectionHistory)
        if history and init.SessionState in self.connect_again_in:  # a new session beside the first
            self.initiators.pop(id(iQueue))
            init = self.initiator(iQueue)
            self._queue(init, init.establish_a_protocol_session())
        elif not history and self.connect_when_empty:
            self._queue(init, init.establish_a_protocol_session())
        try:
            self._add_position(init, iQueue, iPosition)
        except SessionError:  # a destination it cannot address: the message stays where it is
            return

    def _add_position(self, init: Initiator, iQueue: OutgoingQueue, iPosition: MessagePosition) -> None:
        """The rest of the event, as the reference does it: the OutgoingMessagePosition (every
        flag FALSE, every sequence number 0) and Add Message To Dispatch Collection."""
        message = iPosition.MessageReference
        assert message is not None
        pos = OutgoingMessagePosition(
            MessagePosition=iPosition,
            UserMessage=self.construction_of_a_user_message_packet(message),
            AwaitingAck=False,
            ReceivedSessionAck=False,
            ReceivedOrderAck=False,
            Transmitted=False,
            SequenceNumber=0x0000,
            RecoverableSequenceNumber=0x0000,
            TxSequenceNumber=0x00000000,
            delivery=_delivery(message),
        )
        init.add_outgoing_message_position(pos)
        self.qm.add_message_to_dispatch_collection(pos, pos.MessagePosition)

    def _as_outgoing(self, queue: Queue) -> OutgoingQueue:
        """A local queue taken for an OutgoingQueue to its own machine."""
        stand_in = self.qm.new_queue(OutgoingQueue)
        assert isinstance(stand_in, OutgoingQueue)
        stand_in.DestinationFormatName = "DIRECT=OS:localhost\\private$\\local"
        stand_in.State = OutgoingQueueState.Inactive
        return stand_in


class ProcessesLocalQueues(RuleBroken):
    """Breaks the first step of 3.1.7.12: a message available in a queue that is not an
    OutgoingQueue is sent, as if the queue were an OutgoingQueue to its own machine."""

    skip_not_outgoing = False


class ProcessesMulticastQueues(RuleBroken):
    """Breaks "If iQueue.Multicast is True, take no further action" (3.1.7.12): a Multicast
    OutgoingQueue opens a session."""

    skip_multicast = False


class ProcessesLockedQueues(RuleBroken):
    """Breaks "If iQueue.State is Locked or OnHold, take no further action" (3.1.7.12) for Locked."""

    skip_states = (OutgoingQueueState.OnHold,)


class ProcessesOnHoldQueues(RuleBroken):
    """Breaks "If iQueue.State is Locked or OnHold, take no further action" (3.1.7.12) for OnHold:
    a queue paused by Pause Queue ([MS-MQQB] 3.1.7.13) still sends."""

    skip_states = (OutgoingQueueState.Locked,)


class ProcessesHttpQueues(RuleBroken):
    """Breaks the direct HTTP/HTTPS skip of 3.1.7.12: such a queue opens an [MS-MQQB] session
    instead of leaving the message to the SOAP protocol."""

    skip_http = False


class NeverConnects(RuleBroken):
    """Breaks "If the iQueue.ConnectionHistory array is empty, the protocol MUST establish a
    connection" (3.1.7.12): the message waits for a session that is never established."""

    connect_when_empty = False
