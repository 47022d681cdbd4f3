"""The passive Observer on recorded sessions ([MS-MQQB] 3.1.5.1-3.1.5.9, 3.1.1.6, 3.1.7.1, 2.2).

Clean sessions recorded from the in-memory wire give no violation; faulty acceptor behaviours and
hand-built broken server replies give the rule ids of the acceptor's side; how the bytes are cut
does not change what the Observer finds.
"""

from __future__ import annotations

import pytest
from brokenstreams import ACC, CONFORMANT, INI, cp, ec, order_ack, run, sa, um
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from sessionloop import Wire

import packets
from harness.session import Acceptor, Initiator, Observer, user_message
from packets import session as sp


def observe(recording: list[tuple[str, bytes]], acceptor: object = ACC) -> Observer:
    o = Observer(acceptor)  # type: ignore[arg-type]
    for direction, data in recording:
        (o.client_data if direction == "client" else o.server_data)(data)
    o.end()
    return o


def wire(behaviour: str, express: int = 60, transactional: int = 20) -> Wire:
    w = Wire(Initiator(INI, ACC), Acceptor(ACC, behaviour), tick=0.05)
    for n in range(express):
        w.send(user_message(INI, ACC, b"e%d" % n), ("express", "recoverable")[n % 2])
    for n in range(transactional):
        w.send(user_message(INI, ACC, b"t%d" % n), "transactional")
    w.finish()
    return w


@pytest.mark.parametrize("behaviour", ["normal", "close-after-40", "window-1", "delayed-ack", "refuse"])
def test_clean_sessions_from_the_wire_have_no_violation(behaviour: str) -> None:
    w = wire(behaviour) if behaviour != "refuse" else None
    if w is None:  # a refused session: EC, EC(CS=1), then the initiator closes; nothing else
        w = Wire(Initiator(INI, ACC), Acceptor(ACC, "refuse"))
        w.send(user_message(INI, ACC, b"x"))
        w.step()
        w.pump()
    assert w.recording
    for connection in w.recording:
        recording = [("client" if d == "client" else "server", data) for d, data in connection]
        assert observe(recording).violations == [], behaviour
    assert not w.violations


@pytest.mark.parametrize(
    ("behaviour", "rule_id"),
    [
        ("bad-padding", "MQQB-2.2.3.1-response-padding"),
        ("bad-signature", "MQQB-3.1.5.1.2-signature"),
        ("bad-version", "MQQB-3.1.5.1.2-signature"),
        ("garbage-reply", "MQQB-3.1.5.1.2-signature"),
    ],
)
def test_faulty_acceptor_behaviours_are_found(behaviour: str, rule_id: str) -> None:
    w = Wire(Initiator(INI, ACC), Acceptor(ACC, behaviour))
    w.send(user_message(INI, ACC, b"x"))
    w.run(max_steps=6)
    found = observe(w.recording[0]).violations
    assert [v.rule_id for v in found] == [rule_id]
    assert found[0].direction == "s2c" and found[0].packet_index == 1


def _server_reply(**ec_fields: object) -> bytes:
    headers = sp.establish_connection(INI, ACC, 1000, response=True)
    for name, value in ec_fields.items():
        headers.EstablishConnectionHeader[name] = value
    return packets.build(headers)


def _ids(recording: list[tuple[str, bytes]]) -> list[str]:
    return [v.rule_id for v in observe(recording).violations]


def test_broken_acceptor_replies_are_found_with_their_rule() -> None:
    # a TimeStamp that is not echoed does not close the session (3.1.5.3.2 does not test it): the
    # recording that ends there shows a session closed before OPEN with no rule that closes it
    assert _ids([("client", ec()), ("server", _server_reply(TimeStamp=5))]) == [
        "MQQB-3.1.5.3.1-ec-echo",
        "MQQB-3.1.5.9-closed-early",
    ]
    # accepting a request for another queue manager: the initiator finds the response invalid and
    # closes (3.1.5.3.2), which explains the end
    assert _ids(
        [("client", ec(packets.GUID("{99999999-9999-9999-9999-999999999999}"))), ("server", _server_reply())]
    ) == [
        "MQQB-2.2.3.1-server-guid",
        "MQQB-3.1.5.3.1-refusal",
        "MQQB-3.1.5.3.2-ec-response",
    ]
    cp_reply = packets.build(sp.connection_parameters(0x1F4, 0x4E21, 64))
    assert _ids([("client", ec()), ("server", _server_reply()), ("client", cp()), ("server", cp_reply)]) == [
        "MQQB-3.1.5.4.1-cp-echo"
    ]
    opened = [("client", ec()), ("server", _server_reply()), ("client", cp()), ("server", cp())]
    assert _ids([*opened, ("server", order_ack())]) == ["MQQB-3.1.5.6-order-ack-unsent"]
    assert _ids([*opened, ("client", um(1)), ("server", sa(2, 0))]) == ["MQQB-3.1.5.5.1-ack-beyond-sent"]
    tx = [("client", um(n, "transactional", tx=(1, n, n - 1))) for n in (1, 2)]
    assert _ids([*opened, *tx, ("server", order_ack(1, 2)), ("server", order_ack(1, 1))]) == [
        "MQQB-3.1.1.6.2-order-ack-order"
    ]
    assert _ids([("server", _server_reply())]) == ["MQQB-3.1.5.3-wrong-state"]


def test_a_broken_initiator_is_found_on_the_client_side() -> None:
    opened = [("client", ec()), ("server", _server_reply()), ("client", cp()), ("server", cp())]
    found = observe([*opened, ("client", um(0)), ("client", um(3)), ("client", um(3))]).violations
    assert [(v.rule_id, v.direction, v.packet_index) for v in found] == [
        ("MQQB-3.1.7.1.1-message-id", "c2s", 4),
        ("MQQB-3.1.5.8.1-duplicate", "c2s", 6),
    ]


@settings(max_examples=30, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink])
@given(cuts=st.lists(st.integers(1, 300), min_size=1, max_size=5))
def test_how_the_bytes_are_cut_does_not_change_the_findings(cuts: list[int]) -> None:
    r = run([*CONFORMANT[:-1], um(11), um(11)])
    whole = [(v.rule_id, v.packet_index) for v in observe(r.recording).violations]
    assert whole == [("MQQB-3.1.5.8.1-duplicate", len(r.recording) - 1)]
    o = Observer(ACC)
    k = 0
    for direction, data in r.recording:
        feed = o.client_data if direction == "client" else o.server_data
        pos = 0
        while pos < len(data):
            feed(data[pos : pos + cuts[k % len(cuts)]])
            pos += cuts[k % len(cuts)]
            k += 1
    o.end()
    assert [(v.rule_id, v.packet_index) for v in o.violations] == whole


def test_truncated_recording_and_end_once() -> None:
    o = Observer()
    o.client_data(ec()[:100])
    found = o.end()
    assert [v.rule_id for v in found] == ["MQQB-3.1.5.1.3-truncated"]
    assert o.end() == []
