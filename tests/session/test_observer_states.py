"""The passive Observer runs the one transition table (harness.session.transitions) for both
ends: each establishment packet moves the receiving end's SessionState as TRANSITIONS says, and
a packet its sender could not send in its own state (SENDS) breaks the kind's wrong-state rule
([MS-MQQB] 3.1.5.3, 3.1.5.4)."""

from __future__ import annotations

from brokenstreams import ACC, INI, cp, ec, um

import packets
from harness.session import Observer, SessionState
from harness.session.rules import RuleId
from harness.session.transitions import SENDS, TRANSITIONS
from packets import PacketKind
from packets import session as sp

S = SessionState


def test_each_establishment_packet_moves_the_receiver_as_the_table_says() -> None:
    o = Observer(ACC)
    reply = packets.build(sp.establish_connection(INI, ACC, 1000, response=True))
    expected = [
        (S.WAITING_ECR_MSG, TRANSITIONS[("acceptor", S.WAITING_EC_MSG, PacketKind.EstablishConnection)]),
        (TRANSITIONS[("initiator", S.WAITING_ECR_MSG, PacketKind.EstablishConnection)], S.WAITING_CP_MSG),
        (S.WAITING_CPR_MSG, TRANSITIONS[("acceptor", S.WAITING_CP_MSG, PacketKind.ConnectionParameters)]),
        (TRANSITIONS[("initiator", S.WAITING_CPR_MSG, PacketKind.ConnectionParameters)], S.OPEN),
    ]
    assert o.state == {"initiator": S.WAITING_ECR_MSG, "acceptor": S.WAITING_EC_MSG}
    for (sender, data), (initiator, acceptor) in zip(
        (("client", ec()), ("server", reply), ("client", cp()), ("server", cp())), expected, strict=True
    ):
        o.packet(sender, data)
        assert (o.state["initiator"], o.state["acceptor"]) == (initiator, acceptor)
    assert o.phase == "open" and not o.violations


def test_a_packet_sent_before_its_senders_state_allows_it_breaks_its_rule() -> None:
    # the initiator's ConnectionParameters request before the EstablishConnection response: the
    # acceptor's row would take it (WAITING_CP_MSG), the initiator could not send it (SENDS)
    assert SENDS[("initiator", PacketKind.ConnectionParameters)] is S.WAITING_CPR_MSG
    o = Observer(ACC)
    o.packet("client", ec())
    found = o.packet("client", cp())
    assert [v.rule_id for v in found] == [RuleId.MQQB_3_1_5_4_WRONG_STATE]
    assert o.state == {"initiator": S.WAITING_ECR_MSG, "acceptor": S.WAITING_CP_MSG}  # nothing moved
    found = o.packet("client", um(1))
    assert [v.rule_id for v in found] == [RuleId.MQQB_3_1_5_8_WRONG_STATE]
