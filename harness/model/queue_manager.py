"""The QueueManager of [MS-MQDMPR]: ADM element 3.1.1.1 and the events of 3.1.4, 3.1.6, 3.1.7.

Renders the QueueManager ADM element (3.1.1.1) and, as one method each, the higher-layer events
3.1.4.1-3.1.4.5 and 3.1.4.12-3.1.4.15, the timer event 3.1.6.3, the events raised by related
protocols 3.1.7.1.1-3.1.7.1.17 and 3.1.7.1.27-3.1.7.1.29, 3.1.7.1.33, 3.1.7.1.34, the events
consumed by related protocols 3.1.7.2.1-3.1.7.2.7 and the internal events 3.1.7.3.1-3.1.7.3.9.
Sans-IO: time comes from an injected clock, identifiers from an injected generator; waiting is a
WaitingMessageReadOperation the caller resolves (a message becoming available, or the caller
firing the timer via ``waiting_message_read_timer_expired`` / ``fire_due_timers``).

The events are grouped by the spec's section families, one module each, every family building on
the ones before it: the ADM element and its readings (harness.model.qm_core), message positions
and seeks (qm_positions), timers (qm_timers), transactions (qm_transactions), reads and cursors
(qm_reads), queues and open/close (qm_queues), outgoing queues and dispatch (qm_outgoing).
"""

from __future__ import annotations

from harness.model.qm_outgoing import Outgoing

__all__ = ["QueueManager"]


class QueueManager(Outgoing):
    """QueueManager ADM element (3.1.1.1) and the MS-MQDMPR events, one method per event.

    Python-only configuration: ``position_list_factory`` (the MessagePositionList
    implementation), ``cursor_factory``, the subscriber lists
    ``message_position_available_subscribers`` (callables ``(iQueue, iPosition)``, e.g. MS-MQQB
    3.1.7.12), ``message_position_deleted_subscribers`` (``(iQueue, iPosition, iReason)``) and
    ``send_user_message_subscribers`` (``(iPosition, iMessagePosition)``, the Send User Message
    Wrapper of 3.1.7.3.9).

    Where the spec is silent or contradicts itself (an ``interpretation`` requirement of
    cases/requirements.yaml), the reading the model takes is one overridable hook, named after
    what it decides and citing the requirement: the class attributes ``WAIT_FAILED_STATUS``,
    ``LOOKUP_WITHOUT_MESSAGE_STATUS``, ``PEEK_PAST_DENY_RECEIVE_STATUS`` and the methods of the
    "readings" block of harness.model.qm_core (examples/readings renders the other readings
    through them).
    """
