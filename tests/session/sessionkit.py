"""Helpers the tests of tests/session share: an Initiator brought to OPEN by an acceptor's replies
built here ([MS-MQQB] 3.1.5.3.1 EstablishConnection and 3.1.5.4.1 ConnectionParameters responses,
each field changeable to break a rule), and the inputs that make the Initiator or the Observer emit
each rule of an acceptor (:data:`ACCEPTOR_SIDE`).  No test module imports another: they import this.
"""

from __future__ import annotations

from collections.abc import Callable

from brokenstreams import ACC, INI, NOW, cp, ec, order_ack, um

import packets
from harness.session import Initiator, Observer, RuleViolation, Send, SessionState, StartTimer, user_message
from harness.session.actions import Timer
from harness.session.rules import RuleId
from packets import session as sp

__all__ = ["ACCEPTOR_SIDE", "cp_reply", "ec_reply", "open_initiator", "open_session", "receive_user_message"]

OTHER = packets.GUID("{12121212-3434-5656-7878-909090909090}")


def ec_reply(request: bytes, **changes: object) -> bytes:
    """The acceptor's EstablishConnection response to ``request`` (3.1.5.3.1), with ``changes`` to
    its EstablishConnectionHeader fields (``padding``: its Padding)."""
    req = packets.parse(request).EstablishConnectionHeader
    headers = sp.establish_connection(req.ClientGuid, ACC, req.TimeStamp, ping_sent=not req.OperatingSystem.SE)
    for name, value in changes.items():
        if name == "padding":
            headers.EstablishConnectionHeader.Padding = value
        else:
            headers.EstablishConnectionHeader[name] = value
    return packets.build(headers)


def cp_reply(request: bytes, **changes: int) -> bytes:
    """The acceptor's ConnectionParameters response to ``request`` (3.1.5.4.1), echoing its timeouts
    but for ``changes``."""
    cp_req = packets.parse(request).ConnectionParametersHeader
    values = {"RecoverableAckTimeout": cp_req.RecoverableAckTimeout, "AckTimeout": cp_req.AckTimeout, **changes}
    return packets.build(sp.connection_parameters(values["RecoverableAckTimeout"], values["AckTimeout"], 64))


def open_initiator(ec_changes: dict[str, object], cp_changes: dict[str, int]) -> tuple[Initiator, list[object]]:
    """An Initiator fed the two responses (changed as given), and every action it took."""
    i = Initiator(INI, wall_clock=lambda: NOW)
    actions: list[object] = [*i.start(), *i.connection_made()]
    request = next(a.data for a in actions if isinstance(a, Send) and a.packet_kind.name == "EstablishConnection")
    out = i.receive_data(ec_reply(request, **ec_changes))
    actions += out
    if i.SessionState is SessionState.WAITING_CPR_MSG:
        cp_request = next(a.data for a in out if isinstance(a, Send) and a.packet_kind.name == "ConnectionParameters")
        actions += i.receive_data(cp_reply(cp_request, **cp_changes))
    return i, actions


def open_session(clock: list[float]) -> Initiator:
    """An Initiator on the clock ``clock[0]``, its session OPEN."""
    i = Initiator(INI, clock=lambda: clock[0], wall_clock=lambda: NOW)
    actions = [*i.start(), *i.connection_made()]
    request = next(a.data for a in actions if isinstance(a, Send) and a.packet_kind.name == "EstablishConnection")
    out = i.receive_data(ec_reply(request))
    cp_request = next(a.data for a in out if isinstance(a, Send) and a.packet_kind.name == "ConnectionParameters")
    i.receive_data(cp_reply(cp_request))
    assert i.SessionState is SessionState.OPEN
    return i


def receive_user_message(i: Initiator) -> float:
    """A UserMessage from the acceptor: the Session Ack Send Timer starts; its duration."""
    back = packets.build(user_message(ACC, INI, b"back", message_id=1, sent_time=NOW))
    out = i.receive_data(back)
    (start,) = [a for a in out if isinstance(a, StartTimer) and a.name == Timer.SessionAckSend]
    return start.seconds


# ------------------------------------------------------------------ rules of an acceptor, emitted


def _initiator(ec_changes: dict[str, object], cp_changes: dict[str, int] | None = None) -> list[str]:
    i, _ = open_initiator(ec_changes, cp_changes or {})
    return [str(v.rule_id) for v in i.violations]


def _refusal() -> list[str]:
    """The request names a ServerGuid (OTHER) that is not the acceptor's, and the reply accepts."""
    i = Initiator(packets.GUID("{11111111-2222-3333-4444-555555555555}"), OTHER)
    actions = [*i.start(), *i.connection_made()]
    request = next(a.data for a in actions if isinstance(a, Send) and a.packet_kind.name == "EstablishConnection")
    i.receive_data(ec_reply(request))
    return [str(v.rule_id) for v in i.violations]


def open_observer() -> Observer:
    """An Observer of the acceptor side that has seen a session established (EstablishConnection and
    ConnectionParameters, each request and reply)."""
    o = Observer(ACC)
    request, cp_request = ec(), cp()
    o.client_data(request)
    o.server_data(ec_reply(request))
    o.client_data(cp_request)
    o.server_data(cp_reply(cp_request))
    return o


def _order_ack_order() -> list[str]:
    """Two transactional messages, then OrderAcks for number 2 and then number 1."""
    o = open_observer()
    o.client_data(um(1, "transactional", tx=(1, 1, 0)))
    o.client_data(um(2, "transactional", tx=(1, 2, 1)))
    o.server_data(order_ack(1, 2))
    o.server_data(order_ack(1, 1))
    return [str(v.rule_id) for v in o.violations]


def _ack_timeout() -> list[str]:
    """A message awaiting its acknowledgment when the Session Ack Wait Timer expires, nothing received."""
    i, _ = open_initiator({}, {})
    assert i.SessionState is SessionState.OPEN
    i.send_message(um(1), "express")
    out = [
        *i.timer_fired("SessionAckWait"),
        *i.timer_fired("SessionAckWait"),
    ]  # 3.1.6.3: the second finds nothing received
    return [str(a.rule_id) for a in out if isinstance(a, RuleViolation)]


#: Rule of an acceptor -> the rule ids the Initiator (or the Observer) reports on an input that breaks it.
ACCEPTOR_SIDE: dict[str, Callable[[], list[str]]] = {
    RuleId.MQQB_2_2_3_1_RESPONSE_PADDING: lambda: _initiator({"padding": b"\x00" * packets.session.PADDING_SIZE}),
    RuleId.MQQB_3_1_5_3_1_EC_ECHO: lambda: _initiator({"TimeStamp": 5}),
    RuleId.MQQB_3_1_5_3_2_EC_RESPONSE: lambda: _initiator({"ClientGuid": OTHER}),
    RuleId.MQQB_3_1_5_4_1_CP_ECHO: lambda: _initiator({}, {"AckTimeout": 0x4E21}),
    RuleId.MQQB_3_1_5_3_1_REFUSAL: _refusal,
    RuleId.MQQB_3_1_1_6_2_ORDER_ACK_ORDER: _order_ack_order,
    RuleId.MQQB_3_1_6_3_ACK_TIMEOUT: _ack_timeout,
}
