"""The fuzzer's per-kind tables come from the cores': the kinds it injects from ``PacketKind``
(``packets.layout.SESSION_KINDS``), the states it reaches and the close a case checks from the
transition table (harness.session.transitions), and a kind without templates of its own is
fuzzed from its sample (packets.session.SAMPLES), so that a new packet kind needs no change in
harness/fuzz (docs/extending.md)."""

from __future__ import annotations

import random

import pytest

import packets
from harness.fuzz import generate
from harness.fuzz.generate import AS_BUILT, KINDS, Context, mutations_for, template, templates_of
from harness.fuzz.minimise import _ANSWERED
from harness.fuzz.oracles import DISCARD_CLOSE, close_requirement
from harness.fuzz.states import SENDER_STATES, STATES, opening
from harness.session import SessionState
from harness.session.transitions import ROLES, transition
from packets import GUID, PacketKind
from packets import session as sp
from packets.layout import SESSION_KINDS

CTX = Context(GUID(bytes(range(16))), GUID(bytes(range(1, 17))))


def _packet(kind: str) -> bytes:
    return packets.build(templates_of(kind)[0].build(CTX))


def test_the_kinds_injected_are_the_session_kinds_each_with_a_template_to_each_end() -> None:
    assert tuple(k.value for k in SESSION_KINDS) == KINDS
    for kind in KINDS:
        for to in ("acceptor", "initiator"):
            assert templates_of(kind, to), f"{kind}: no template sent to an {to}"
            assert {packets.parse(packets.build(t.build(CTX)), strict=False).kind for t in templates_of(kind, to)} == {
                PacketKind(kind)
            }


def test_a_kind_without_templates_is_fuzzed_from_its_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the SessionAck's templates taken out, the SessionAck is still sent to each end: its
    sample, as built and with every field of its layout mutated (the SessionHeader's too)."""
    monkeypatch.setattr(generate, "_TEMPLATES", tuple(t for t in generate._TEMPLATES if t.kind != "SessionAck"))
    for to in ("acceptor", "initiator"):
        (only,) = templates_of("SessionAck", to)
        assert only.name == "SessionAck" and template("SessionAck") == only
        assert packets.build(only.build(CTX)) == packets.build(sp.SAMPLES[PacketKind.SessionAck]())
    mutations = mutations_for("SessionAck", CTX, random.Random(1))
    assert mutations[0].op == AS_BUILT and {m.template for m in mutations} == {"SessionAck"}
    fields = {m.field.partition(".")[0] for m in mutations[1:]}
    assert {"BaseHeader", "InternalHeader", "SessionHeader"} <= fields
    mutated = next(m for m in mutations if m.field == "SessionHeader.WindowSize" and m.op == "max")
    data = mutated.apply(template("SessionAck").build(CTX), random.Random(1))
    assert packets.parse(data, strict=False).headers.SessionHeader.WindowSize == 0xFFFF


def test_a_kind_with_templates_keeps_them() -> None:
    """The sample stands in only for a kind with no template: a kind with templates is sent as
    they build it (and a seed's run keeps its sequence)."""
    for kind in {t.kind for t in generate._TEMPLATES}:
        for to in ("acceptor", "initiator"):
            own = [t for t in generate._TEMPLATES if t.kind == kind and t.to in (to, "both")]
            assert templates_of(kind, to) == own


def test_the_states_reached_are_the_opening_of_the_transition_table() -> None:
    assert [(s.value, k.value, n.value) for s, k, n in opening("acceptor")] == [
        ("WAITING_EC_MSG", "EstablishConnection", "WAITING_CP_MSG"),
        ("WAITING_CP_MSG", "ConnectionParameters", "OPEN"),
    ]
    assert [s.name for s in STATES[:3]] == ["WAITING_EC_MSG", "WAITING_CP_MSG", "OPEN"]
    assert [[(p.template, p.reply) for p in s.prefix] for s in STATES[:3]] == [
        [],
        [("EstablishConnection", "EstablishConnection")],
        [("EstablishConnection", "EstablishConnection"), ("ConnectionParameters", "ConnectionParameters")],
    ]
    assert all(s.prefix[:2] == STATES[2].prefix for s in STATES[3:])
    assert [s.name for s in SENDER_STATES] == ["WAITING_ECR_MSG", "WAITING_CPR_MSG", "OPEN"]
    assert _ANSWERED == {"EstablishConnection": "WAITING_CP_MSG", "ConnectionParameters": "OPEN"}


@pytest.mark.parametrize("role", ROLES)
def test_the_close_a_case_checks_is_the_wrong_state_rule_of_the_transition_table(role: str) -> None:
    states = [s for s, _, _ in opening(role)] + [SessionState.OPEN]  # type: ignore[arg-type]
    for state in states:
        for kind in KINDS:
            got = close_requirement(role, _packet(kind), state.value)  # type: ignore[arg-type]
            if transition(role, state, kind).accepted:  # type: ignore[arg-type]
                assert got in (DISCARD_CLOSE, "MQQB-3.1.5.3.2-INVALID-CLOSE"), (state, kind)
            else:
                assert got in (str(transition(role, state, kind).rule).upper(), DISCARD_CLOSE), (state, kind)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("role", "state", "kind", "requirement"),
    [
        ("acceptor", "OPEN", "EstablishConnection", "MQQB-3.1.5.3-WRONG-STATE"),
        ("acceptor", "WAITING_EC_MSG", "ConnectionParameters", "MQQB-3.1.5.4-WRONG-STATE"),
        ("acceptor", "WAITING_CP_MSG", "SessionAck", "MQQB-3.1.5.5-WRONG-STATE"),
        ("acceptor", "WAITING_EC_MSG", "UserMessage", "MQQB-3.1.5.8-WRONG-STATE"),
        ("acceptor", "WAITING_CP_MSG", "OrderAck", DISCARD_CLOSE),  # no MQQB-3.1.5.6-WRONG-STATE to check
        ("acceptor", "WAITING_EC_MSG", "EstablishConnection", DISCARD_CLOSE),  # accepted: closed as invalid
        ("initiator", "WAITING_ECR_MSG", "EstablishConnection", "MQQB-3.1.5.3.2-INVALID-CLOSE"),
        ("initiator", "WAITING_CPR_MSG", "EstablishConnection", "MQQB-3.1.5.3-WRONG-STATE"),
        ("initiator", "OPEN", "ConnectionParameters", "MQQB-3.1.5.4-WRONG-STATE"),
        ("initiator", "WAITING_CPR_MSG", "FinalAck", DISCARD_CLOSE),
    ],
)
def test_close_requirement(role: str, state: str, kind: str, requirement: str) -> None:
    assert close_requirement(role, _packet(kind), state) == requirement  # type: ignore[arg-type]


def test_a_packet_that_does_not_decode_is_discarded() -> None:
    data = bytearray(packets.build(template("UserMessage[express]").build(CTX)))
    data[4:8] = b"XXXX"  # BaseHeader.Signature
    assert close_requirement("acceptor", bytes(data), "OPEN") == DISCARD_CLOSE
