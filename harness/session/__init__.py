"""harness.session: the [MS-MQQB] session state machines, sans-IO.

Renders [MS-MQQB] 3.1 (session establishment 3.1.5.2-3.1.5.4, SessionAck 3.1.5.5, OrderAck and
FinalAck 3.1.5.6-3.1.5.7, UserMessage 3.1.5.8, closing 3.1.5.9-3.1.5.10, the timers of 3.1.2/3.1.6 and
the Send User Message Event 3.1.7.1) as three objects fed events that return actions:

- :class:`Initiator` (``start``, ``connection_made``, ``receive_data``, ``send_message``,
  ``timer_fired``, ``connection_lost``) drives an [MS-MQDMPR] OutgoingQueue;
- :class:`Acceptor` (``connection_made``, ``receive_data``, ``timer_fired``, ``connection_lost``)
  with fault and boundary-conformant :class:`AcceptorBehaviour` selected by name (``BEHAVIOURS``);
- :class:`Observer` (``client_data``, ``server_data``, ``end``) checks a recorded session passively;
- :class:`OutgoingQueueProcessing` attaches the sending side to an [MS-MQDMPR] QueueManager
  (3.1.7.12 Message Position Available, 3.1.7.11, 3.1.7.16), one Initiator per OutgoingQueue.

Actions: :class:`Send`, :class:`StartTimer`, :class:`CancelTimer`, :class:`Close`, :class:`Deliver`,
:class:`Acked`, :class:`RuleViolation` (plus :class:`Connect`, :class:`SendPing`).  Rule ids live in
:mod:`harness.session.rules`, with whether the spec closes the session on each (``closes_session``):
every violation is reported, the session is closed only where its rule says so.
No sockets, clocks (injected), threads or files.

Layer rules (the import-linter contracts of pyproject.toml): Rule 1: imports ``packets`` and
``harness.model`` only, never an edge (peers, capture, cases, report, pipeline, CLI). Rule 2: no
sockets, clocks (injected), threads or files.
"""

from harness.session.acceptor import (
    BEHAVIOURS,
    Acceptor,
    AcceptorBehaviour,
    boundary_behaviours,
    named_behaviour,
    ping_response,
)
from harness.session.actions import (
    Acked,
    Action,
    CancelTimer,
    Close,
    Connect,
    Deliver,
    DeliveryClass,
    RuleViolation,
    Send,
    SendPing,
    SessionConfig,
    SessionError,
    SessionState,
    StartTimer,
    Timer,
)
from harness.session.initiator import Initiator, OutgoingMessagePosition
from harness.session.messages import MessageTemplate, user_message
from harness.session.observer import Observer
from harness.session.outgoing import OutgoingQueueProcessing
from harness.session.rules import RULES, Rule, closing_rules, initiator_rules

__all__ = [
    "BEHAVIOURS",
    "RULES",
    "Acceptor",
    "AcceptorBehaviour",
    "Acked",
    "Action",
    "CancelTimer",
    "Close",
    "Connect",
    "Deliver",
    "DeliveryClass",
    "Initiator",
    "MessageTemplate",
    "Observer",
    "OutgoingMessagePosition",
    "OutgoingQueueProcessing",
    "Rule",
    "RuleViolation",
    "Send",
    "SendPing",
    "SessionConfig",
    "SessionError",
    "SessionState",
    "StartTimer",
    "Timer",
    "boundary_behaviours",
    "closing_rules",
    "initiator_rules",
    "named_behaviour",
    "ping_response",
    "user_message",
]
