"""The passive Observer accepts a packet by one lookup in a table it derives from the transition
table (harness.session.transitions): in every pair of SessionStates and for every kind either end
sends on a session ([MS-MQQB] 3.1.5.3-3.1.5.8), it accepts exactly what TRANSITIONS (the
receiver's row) and SENDS (the sender's state) accept, moves the receiver as TRANSITIONS says, and
otherwise reports the receiver's row's rule (the kind's wrong-state rule) and moves nothing."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from brokenstreams import ACC, INI, cp, ec, final_ack, order_ack, sa, um

import packets
from harness.session import Observer, SessionState
from harness.session.transitions import ROLES, SENDS, TRANSITIONS, WRONG_STATE, Role, other_role, transition
from packets import PacketKind
from packets import session as sp

K = PacketKind
SENDERS: dict[Role, str] = {"initiator": "client", "acceptor": "server"}


def _packet(sender: Role, kind: PacketKind) -> bytes:
    """A valid packet of ``kind`` as ``sender`` sends it (the acceptor's establishment packets are
    responses)."""
    if kind is K.EstablishConnection and sender == "acceptor":
        return packets.build(sp.establish_connection(INI, ACC, 1000, response=True))
    builders: dict[PacketKind, Callable[[], bytes]] = {
        K.EstablishConnection: ec,
        K.ConnectionParameters: cp,
        K.SessionAck: sa,
        K.OrderAck: order_ack,
        K.FinalAck: final_ack,
        K.UserMessage: lambda: um(1),
    }
    return builders[kind]()


@pytest.mark.parametrize(("sender", "kind"), list(itertools.product(ROLES, WRONG_STATE)))
def test_the_observer_accepts_what_the_transition_table_accepts(sender: Role, kind: PacketKind) -> None:
    receiver = other_role(sender)
    data = _packet(sender, kind)
    for mine, theirs in itertools.product(SessionState, repeat=2):
        o = Observer(ACC)
        o.state = {sender: mine, receiver: theirs}
        found = o.packet(SENDERS[sender], data)
        after = TRANSITIONS.get((receiver, theirs, kind))
        if after is not None and SENDS[(sender, kind)] is mine:
            assert o.state == {sender: mine, receiver: after}, (mine, theirs)
            assert not any(v.rule_id == WRONG_STATE[kind] for v in found), (mine, theirs)
        else:
            rule = transition(receiver, theirs, kind).rule or WRONG_STATE[kind]
            assert [v.rule_id for v in found] == [rule], (mine, theirs)
            assert o.state == {sender: mine, receiver: theirs}, (mine, theirs)
