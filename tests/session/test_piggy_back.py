"""[MS-MQQB] 3.1.7.11: a UserMessage sent when more than 75 percent of the Session Ack Send Timer
has elapsed, with something received and not yet acknowledged, carries the acknowledgment: a
SessionHeader, BaseHeader.Flags.SH, the counters reset and the timer restarted."""

from __future__ import annotations

from brokenstreams import um
from sessionkit import open_session, receive_user_message

import packets
from harness.session import Initiator, Send, StartTimer
from harness.session.actions import Timer


def _sent_user_message(i: Initiator) -> tuple[packets.Packet, list[object]]:
    out = i.send_message(um(7))
    (data,) = [a.data for a in out if isinstance(a, Send) and a.packet_kind.name == "UserMessage"]
    return packets.parse(data), out


def test_after_three_quarters_of_the_timer_the_user_message_carries_the_acknowledgment() -> None:
    clock = [0.0]
    i = open_session(clock)
    seconds = receive_user_message(i)
    clock[0] += seconds * 0.8
    packet, out = _sent_user_message(i)
    assert packet.BaseHeader.Flags.SH == 1
    sh = packet.SessionHeader
    assert sh.AckSequenceNumber == 1  # MessageReceivedCount
    assert sh.UserMsgSequenceNumber == i.counters.MessageSentCount == 1  # its own packet counted
    assert i.counters.UnackedReceivedMsgCount == 0 and i.counters.RecoverableMsgAckFlags == 0
    assert [a.seconds for a in out if isinstance(a, StartTimer) and a.name == Timer.SessionAckSend] == [seconds]


def test_before_three_quarters_or_with_nothing_to_acknowledge_no_session_header() -> None:
    clock = [0.0]
    i = open_session(clock)
    seconds = receive_user_message(i)
    clock[0] += seconds * 0.7
    packet, _ = _sent_user_message(i)
    assert packet.BaseHeader.Flags.SH == 0 and packet.headers.get("SessionHeader") is None
    assert i.counters.UnackedReceivedMsgCount == 1
    fresh = open_session([0.0])
    packet, _ = _sent_user_message(fresh)  # nothing received: no timer, nothing owed
    assert packet.BaseHeader.Flags.SH == 0
