"""Initiator.send_bodies with a MessageTemplate ([MS-MQQB] 3.1.7.1 Send User Message Event,
3.1.7.1.1 MessageID, 3.1.7.11 piggy-backed SessionHeader, 3.1.1.5 transactional sequences): the
bytes on the wire are those ``send_message`` sends for ``template.message(body)``, across
retransmissions on new connections, for every delivery class."""

from __future__ import annotations

import pytest
from brokenstreams import ACC, INI, NOW
from sessionkit import open_session, receive_user_message
from sessionloop import Wire

import packets
from harness.session import Acceptor, Initiator, Send, SessionError, user_message
from harness.session.acceptor import AcceptorBehaviour
from harness.session.messages import MessageTemplate, prepare_message

BODIES = [b"", b"a", b"ab", b"abc", b"abcd", b"body %d" % 5, bytes(range(200))] + [b"m%d" % n for n in range(90)]


def _run(delivery: str, use_template: bool, behaviour: AcceptorBehaviour) -> Wire:
    wire = Wire(Initiator(INI, ACC, wall_clock=lambda: NOW), Acceptor(ACC, behaviour, wall_clock=lambda: NOW))
    template = MessageTemplate(user_message(INI, ACC, label="t"), delivery)
    wire.start()
    if use_template:
        wire.handle("i", wire.i.send_bodies(template, BODIES[:40]))
        wire.run(50)
        wire.handle("i", wire.i.send_bodies(template, BODIES[40:]))
    else:
        for n, body in enumerate(BODIES):
            wire.send(template.message(body), delivery)
            if n == 39:
                wire.run(50)
    wire.finish()
    return wire


@pytest.mark.parametrize("delivery", ["express", "recoverable", "transactional"])
@pytest.mark.parametrize("close_after", [None, 40, 77])
def test_send_bodies_sends_what_send_message_sends(delivery: str, close_after: int | None) -> None:
    behaviour = AcceptorBehaviour(close_after_packets=close_after)
    ours, reference = _run(delivery, True, behaviour), _run(delivery, False, behaviour)
    assert ours.recording == reference.recording
    assert [(s, a.data) for s, a in ours.sent] == [(s, a.data) for s, a in reference.sent]
    assert ours.acked == reference.acked
    assert [p.MessagePropertiesHeader.MessageBody for p in ours.delivered][: len(BODIES)] == BODIES
    assert not ours.violations and not ours.i.OutgoingMessageTable


def test_positions_show_the_headers_send_message_would_hold() -> None:
    template = MessageTemplate(user_message(INI, ACC), "recoverable")
    ours, reference = Initiator(INI, ACC), Initiator(INI, ACC)
    ours.send_bodies(template, [b"one", b"two"])
    for body in (b"one", b"two"):
        reference.send_message(user_message(INI, ACC, body), "recoverable")
    assert ours.last_message_id == reference.last_message_id == 2
    for mid in (1, 2):
        pos, ref = ours.OutgoingMessageTable[mid], reference.OutgoingMessageTable[mid]
        assert not pos.has_headers  # made when read
        assert pos.wire == ref.wire == packets.build(ref.UserMessage)
        assert packets.build(pos.UserMessage) == pos.wire
        assert packets.parse(packets.build(pos.UserMessage)) == packets.parse(packets.build(ref.UserMessage))
        assert pos.UserMessage.UserHeader.MessageID == mid
        ref.UserMessage = pos.UserMessage
        assert pos == ref
    assert prepare_message(template.message(b"x"), template.delivery) == template.message(b"x")


def test_a_piggy_backed_session_header_is_the_same() -> None:
    template = MessageTemplate(user_message(INI, ACC))
    sent = []
    for use_template in (True, False):
        clock = [0.0]
        i = open_session(clock)
        clock[0] += receive_user_message(i) * 0.8
        out = i.send_bodies(template, [b"piggy"]) if use_template else i.send_message(template.message(b"piggy"))
        sent.append([a.data for a in out if isinstance(a, Send)])
    assert sent[0] == sent[1]
    assert packets.parse(sent[0][0]).BaseHeader.Flags.SH == 1


def test_a_template_does_not_change_the_callers_headers_and_has_no_message_id() -> None:
    headers = user_message(INI, ACC, b"x")
    before = packets.build(headers)
    template = MessageTemplate(headers)
    Initiator(INI, ACC).send_bodies(template, [b"a", b"b"])
    assert packets.build(headers) == before
    with pytest.raises(SessionError):
        MessageTemplate(user_message(INI, ACC, message_id=5))


def test_a_message_id_in_use_is_refused_and_skipped() -> None:
    template = MessageTemplate(user_message(INI, ACC))
    i = Initiator(INI, ACC)
    i.send_message(user_message(INI, ACC, message_id=2))
    i.send_bodies(template, [b"one"])
    with pytest.raises(SessionError):
        i.send_bodies(template, [b"two"])
    assert i.MessageIdOrdinal == 3
    i.send_bodies(template, [b"three"])
    assert sorted(i.OutgoingMessageTable) == [1, 2, 3]


def test_a_body_buffer_changed_after_the_call_changes_nothing_sent() -> None:
    template = MessageTemplate(user_message(INI, ACC), "express")
    initiator = Initiator(INI, ACC)
    buffer = bytearray(b"first")
    initiator.send_bodies(template, [buffer])
    buffer[:] = b"XXXXX"
    pos = initiator.OutgoingMessageTable[1]
    assert pos.UserMessage.MessagePropertiesHeader.MessageBody == b"first"
    assert pos.wire == packets.build(user_message(INI, ACC, b"first", message_id=1))
