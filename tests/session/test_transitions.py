"""The transition table (harness.session.transitions, [MS-MQQB] 3.1.5.3-3.1.5.8): every
(role, state, packet kind) has a row, the engines follow it, and a kind the session protocol does
not know is a violation in every state, never an exception."""

from __future__ import annotations

import itertools

import pytest
from brokenstreams import ACC, INI, cp, ec, sa, um

import packets
from harness.session import Acceptor, Initiator, Observer, RuleViolation, SessionState
from harness.session.observer import _PHASES
from harness.session.rules import RuleId
from harness.session.transitions import ESTABLISHMENT, ROLES, START, TRANSITIONS, WRONG_STATE, transition
from packets import PacketKind


@pytest.mark.parametrize(("role", "state", "kind"), list(itertools.product(ROLES, SessionState, PacketKind)))
def test_every_role_state_and_kind_has_a_row(role: str, state: SessionState, kind: PacketKind) -> None:
    row = transition(role, state, kind)  # type: ignore[arg-type]
    if (role, state, kind) in TRANSITIONS:
        assert row.accepted and row.rule is None and row.next is TRANSITIONS[(role, state, kind)]  # type: ignore[index]
    else:
        assert not row.accepted
        assert row.rule is WRONG_STATE.get(kind, RuleId.MQQB_3_1_5_1_1_UNKNOWN_PACKET)


def test_a_kind_the_protocol_does_not_know_breaks_3_1_5_1_1() -> None:
    row = transition("acceptor", SessionState.OPEN, "Gossip")
    assert not row.accepted and row.rule is RuleId.MQQB_3_1_5_1_1_UNKNOWN_PACKET


def test_the_acceptor_follows_the_table_through_establishment() -> None:
    a = Acceptor(ACC)
    a.connection_made(("127.0.0.1", 1))
    states = [a.SessionState]
    for data in (ec(), cp(), um(1)):
        a.receive_data(data)
        states.append(a.SessionState)
    assert states == [SessionState.WAITING_EC_MSG, SessionState.WAITING_CP_MSG, SessionState.OPEN, SessionState.OPEN]


@pytest.mark.parametrize("first", ["cp", "sa", "um"])
def test_a_packet_before_its_state_is_the_wrong_state_rule_of_its_kind(first: str) -> None:
    data = {"cp": cp(), "sa": sa(), "um": um(1)}[first]
    kind = packets.parse(data, strict=False).kind
    a = Acceptor(ACC)
    a.connection_made(("127.0.0.1", 1))
    out = a.receive_data(data)
    assert [v.rule_id for v in out if isinstance(v, RuleViolation)][:1] == [WRONG_STATE[kind]]


ODD = {
    "a Ping Packet on the stream": packets.build_ping(packets.session.ping(1, INI)),
    "an unknown packet type": bytes.fromhex("10 00 00 00 4C 49 4F 52 20 00 00 00 FF FF FF FF") + bytes(16),
    "garbage": b"\x00" * 40,
}


@pytest.mark.parametrize("name", list(ODD))
@pytest.mark.parametrize("before", [0, 1, 2, 3])
def test_odd_input_in_every_state_is_a_violation_never_an_exception(name: str, before: int) -> None:
    """The Acceptor, the Initiator and the Observer, each after 0-3 packets of establishment."""
    handshake = [ec(), cp(), um(1)][:before]
    a = Acceptor(ACC)
    a.connection_made(("127.0.0.1", 1))
    for data in handshake:
        a.receive_data(data)
    out = a.receive_data(ODD[name])
    assert any(isinstance(v, RuleViolation) for v in out), out
    o = Observer(ACC)
    for data in handshake:
        o.client_data(data)
    o.client_data(ODD[name])
    o.server_data(ODD[name])
    assert o.violations
    i = Initiator(INI)
    i.start()
    i.connection_made()
    found = [v for v in i.receive_data(ODD[name]) if isinstance(v, RuleViolation)]
    assert found


def test_the_establishment_is_read_off_the_tables() -> None:
    """3.1.5.2.3, 3.1.5.3.1, 3.1.5.3.2, 3.1.5.4.1, 3.1.5.4.2: request, response, request, response."""
    assert START == {"initiator": SessionState.WAITING_ECR_MSG, "acceptor": SessionState.WAITING_EC_MSG}
    assert (
        ("initiator", PacketKind.EstablishConnection),
        ("acceptor", PacketKind.EstablishConnection),
        ("initiator", PacketKind.ConnectionParameters),
        ("acceptor", PacketKind.ConnectionParameters),
    ) == ESTABLISHMENT


def test_the_observer_names_the_phases_of_the_establishment_as_it_always_has() -> None:
    """The Observer's phase names (its evidence says them) come from the establishment, unchanged."""
    s = SessionState
    assert _PHASES == {
        (s.WAITING_ECR_MSG, s.WAITING_EC_MSG): "start",
        (s.WAITING_ECR_MSG, s.WAITING_CP_MSG): "ec-sent",
        (s.WAITING_CPR_MSG, s.WAITING_CP_MSG): "ec-replied",
        (s.WAITING_CPR_MSG, s.OPEN): "cp-sent",
        (s.OPEN, s.OPEN): "open",
    }
