"""Initiator against Acceptor in memory ([MS-MQQB] 3.1.5.2-3.1.5.10, 3.1.6, 3.1.7.1)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from sessionloop import Fragmenter, Wire

from harness.model.enums import ConnectionStatus, OutgoingQueueState
from harness.session import Acceptor, Initiator, SessionState, Timer, user_message
from harness.session.actions import Action, Send

INI = "{11111111-2222-3333-4444-555555555555}"
ACC = "{AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE}"


def pair(behaviour: str = "normal", **kw: object) -> Wire:
    return Wire(Initiator(INI, ACC), Acceptor(ACC, behaviour), **kw)  # type: ignore[arg-type]


def load(w: Wire, express: int, transactional: int) -> None:
    for n in range(express):
        w.send(user_message(INI, ACC, b"e%d" % n))
    for n in range(transactional):
        w.send(user_message(INI, ACC, b"t%d" % n), "transactional")


def check_exactly_once(w: Wire, express: int, transactional: int) -> None:
    bodies = [bytes(p.MessagePropertiesHeader.MessageBody) for p in w.delivered]
    counts = Counter(bodies)
    assert not [b for b, c in counts.items() if c > 1], "duplicates delivered"
    assert set(bodies) == {b"e%d" % n for n in range(express)} | {b"t%d" % n for n in range(transactional)}
    tx = [b for b in bodies if b.startswith(b"t")]
    assert tx == [b"t%d" % n for n in range(transactional)], "transactional messages out of order"
    assert sorted(w.acked) == sorted(set(w.acked)), "a message acknowledged twice"
    assert len(w.acked) == express + transactional
    assert not w.i.OutgoingMessageTable


def test_establishment_follows_the_state_machine() -> None:
    w = pair()
    w.start()
    assert w.connect_requested
    w.connect()
    assert w.i.SessionState is SessionState.WAITING_ECR_MSG
    assert w.a.SessionState is SessionState.WAITING_EC_MSG
    w.finish()
    assert w.i.SessionState is SessionState.OPEN and w.a.SessionState is SessionState.OPEN
    assert [s.packet_kind for _, s in w.sent] == [
        "EstablishConnection",
        "EstablishConnection",
        "ConnectionParameters",
        "ConnectionParameters",
    ]
    history = [e.Status for e in w.i.OutgoingQueueReference.ConnectionHistory]
    assert history == [
        ConnectionStatus.InProcess,
        ConnectionStatus.EstablishPacketReceived,
        ConnectionStatus.Established,
    ]
    assert w.i.OutgoingQueueReference.State is OutgoingQueueState.Connected
    assert w.a.RemoteQMGuid == w.i.identifier and w.i.RemoteQMGuid == w.a.identifier
    assert Timer.SessionInitialization not in w.i.running_timers | w.a.running_timers
    assert not w.violations


def test_thousand_express_hundred_transactional_exactly_once_in_order() -> None:
    w = pair()
    load(w, 1000, 100)
    w.finish()
    check_exactly_once(w, 1000, 100)
    assert not w.violations and not w.closes


def test_acceptor_closing_every_50_packets_loses_and_duplicates_nothing() -> None:
    w = pair("close-after-50", tick=0.02)
    load(w, 1000, 100)
    w.finish()
    check_exactly_once(w, 1000, 100)
    assert w.connections > 20
    assert not w.violations
    assert w.a.duplicates_discarded > 0  # retransmissions after reconnect were recognised


def test_refused_connection_records_connection_refused_and_retries() -> None:
    w = pair("refuse")
    w.send(user_message(INI, ACC, b"x"))
    w.step()  # connect
    w.pump()
    assert w.closes and w.closes[0][0] == "i"
    statuses = [e.Status for e in w.i.OutgoingQueueReference.ConnectionHistory]
    assert statuses == [ConnectionStatus.InProcess, ConnectionStatus.ConnectionRefused]
    assert w.i.SessionState is SessionState.WAITING_RECONNECT
    assert Timer.SessionRetryConnect in w.timers["i"]
    assert not w.delivered


def test_ec_for_another_server_guid_is_refused_by_the_acceptor() -> None:
    other = "{99999999-9999-9999-9999-999999999999}"
    w = Wire(Initiator(INI, other), Acceptor(ACC))
    w.send(user_message(INI, other, b"x"))
    w.step()
    w.pump()
    reply = next(s for side, s in w.sent if side == "a")
    assert reply.data[22] & 0x10  # InternalHeader.Flags.CS
    assert w.i.OutgoingQueueReference.ConnectionHistory[-1].Status is ConnectionStatus.ConnectionRefused


def test_missing_session_ack_closes_on_the_session_ack_wait_timer() -> None:
    w = pair("missing-ack")
    load(w, 3, 0)
    w.pump()
    w.step()
    w.pump()
    assert len(w.delivered) == 3
    assert Timer.SessionAckWait in w.timers["i"]
    w.fire("i", Timer.SessionAckWait)  # ReceivedAck was TRUE (the CP response): restart
    assert not w.closes
    w.fire("i", Timer.SessionAckWait)  # nothing received since: close
    assert w.closes[-1][1].section == "MS-MQQB 3.1.6.3"
    assert any(v.rule_id == "MQQB-3.1.6.3-ack-timeout" for v in w.violations)
    assert w.i.SessionState is SessionState.WAITING_RECONNECT
    assert len(w.i.OutgoingMessageTable) == 3


def test_window_1_keeps_one_message_in_flight() -> None:
    in_flight: list[int] = []

    class Watched(Wire):
        def handle(self, side: str, actions: list[Action]) -> None:
            super().handle(side, actions)
            in_flight.append(self.i.UnAckedMessageCount)

    w = Watched(Initiator(INI, ACC), Acceptor(ACC, "window-1"))
    load(w, 20, 5)
    w.finish()
    check_exactly_once(w, 20, 5)
    assert max(in_flight) == 1
    assert w.i.send_window == 1


def test_delayed_session_ack_still_delivers_on_the_timer() -> None:
    w = pair("delayed-ack")
    load(w, 200, 10)
    w.finish()
    check_exactly_once(w, 200, 10)
    assert w.timers["a"] == {} or Timer.SessionAckSend not in w.timers["a"]


def test_missing_order_ack_keeps_transactional_messages_and_resends() -> None:
    w = pair("missing-order-ack")
    load(w, 0, 3)
    w.run(max_steps=40)
    assert len(w.delivered) == 3
    assert len(w.i.OutgoingMessageTable) == 3  # retained until an OrderAck (3.1.1.6.2)
    assert w.a.TxMessageRejectCount > 0  # the resends were recognised as duplicates


def test_bad_signature_reply_is_a_violation_and_closes() -> None:
    for name, rule_id in (
        ("bad-signature", "MQQB-3.1.5.1.2-signature"),
        ("bad-version", "MQQB-3.1.5.1.2-signature"),
        ("garbage-reply", "MQQB-3.1.5.1.2-signature"),
    ):
        w = pair(name)
        w.send(user_message(INI, ACC, b"x"))
        w.step()
        w.pump()
        assert [v.rule_id for v in w.violations] == [rule_id], name
        assert w.closes[0][0] == "i"
        assert w.i.OutgoingQueueReference.ConnectionHistory[-1].Status is ConnectionStatus.UnknownFailure


def test_bad_padding_reply_is_reported() -> None:
    w = pair("bad-padding")
    w.send(user_message(INI, ACC, b"x"))
    w.finish()
    assert [v.rule_id for v in w.violations] == ["MQQB-2.2.3.1-response-padding"]
    assert len(w.delivered) == 1


def test_user_message_before_establishment_closes_the_acceptor() -> None:
    import packets

    a = Acceptor(ACC)
    a.connection_made()
    actions = a.receive_data(packets.build(user_message(INI, ACC, b"early")))
    assert [x.rule_id for x in actions if hasattr(x, "rule_id")] == ["MQQB-3.1.5.8-wrong-state"]
    assert a.SessionState is SessionState.CLOSED


def _fragmented_run(fragment: Fragmenter | None) -> tuple[list[tuple[str, bytes]], list[bytes], list[int], list[str]]:
    w = pair("close-after-40", fragment=fragment, tick=0.1)
    load(w, 40, 10)
    assert w.run(max_steps=500) < 500
    check_exactly_once(w, 40, 10)
    assert w.connections > 1
    return (
        [(side, s.data) for side, s in w.sent],
        [bytes(p.MessagePropertiesHeader.MessageBody) for p in w.delivered],
        w.acked,
        [v.rule_id for v in w.violations],
    )


_UNFRAGMENTED = _fragmented_run(None)


@settings(max_examples=15, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink])
@given(cuts=st.lists(st.integers(1, 700), min_size=1, max_size=8), seed=st.integers(0, 3))
def test_fragmentation_never_changes_the_outcome(cuts: list[int], seed: int) -> None:
    def fragment(data: bytes) -> list[bytes]:
        out, pos, k = [], 0, seed
        while pos < len(data):
            n = cuts[k % len(cuts)]
            out.append(data[pos : pos + n])
            pos += n
            k += 1
        return out

    assert _fragmented_run(fragment) == _UNFRAGMENTED
    assert _UNFRAGMENTED[3] == []


@settings(max_examples=100, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink])
@given(chunks=st.lists(st.binary(max_size=64), max_size=6), prefix=st.booleans())
def test_random_bytes_never_raise_in_the_acceptor(chunks: list[bytes], prefix: bool) -> None:
    import packets
    from packets import session as sp

    a = Acceptor(ACC)
    a.connection_made()
    if prefix:
        a.receive_data(packets.build(sp.establish_connection(INI, ACC)))
    for chunk in chunks:
        for act in a.receive_data(chunk):
            assert not isinstance(act, Send) or act.data
    a.timer_fired(Timer.SessionAckSend)
    a.connection_lost()


@pytest.mark.parametrize("behaviour", ["normal", "close-after-500"])
def test_ten_thousand_express_and_a_thousand_transactional_exactly_once(behaviour: str) -> None:
    """Issue acceptance 1 in memory: none lost or duplicated, the transactional ones in order, also
    when the acceptor closes the connection after every 500 packets it receives."""
    w = pair(behaviour)
    load(w, 10_000, 1_000)
    w.finish(max_steps=5_000)
    check_exactly_once(w, 10_000, 1_000)
    assert not w.violations
    if behaviour != "normal":
        assert w.connections > 20
        assert [c.section for _, c in w.closes] == ["MS-MQQB 3.1.5.9"] * len(w.closes)


def test_ec_request_se_says_whether_a_ping_was_sent_for_this_session() -> None:
    """[MS-MQQB] 2.2.3.1 OperatingSystem.SE: 0 when a Ping Request was sent while creating the
    session (3.1.5.2.2), 1 otherwise, e.g. on a retry after a ping failure (3.1.6.1)."""
    import packets
    from harness.session import Connect, SendPing
    from packets import session as sp

    init = Initiator(INI, ACC, ping=True)
    actions = init.send_message(user_message(INI, ACC, b"x"))
    ping = next(a for a in actions if isinstance(a, SendPing))
    reply = sp.ping(packets.parse_ping(ping.data).headers.Ping.Cookie, ACC)
    assert any(isinstance(a, Connect) for a in init.ping_response(packets.build_ping(reply)))
    ec = next(a for a in init.connection_made() if isinstance(a, Send))
    assert packets.parse(ec.data).EstablishConnectionHeader.OperatingSystem.SE == 0
    init.connection_lost()
    assert any(isinstance(a, Connect) for a in init.timer_fired(Timer.SessionRetryConnect))
    ec = next(a for a in init.connection_made() if isinstance(a, Send))
    assert packets.parse(ec.data).EstablishConnectionHeader.OperatingSystem.SE == 1
