"""An acceptor case reads the acceptor's replies packet by packet whatever their BaseHeader
Signature ([MS-MQQB] 3.1.5.1.2; [MS-MQMQ] 2.2.19.1 PacketSize frames them), so that how the loaded
machine let TCP bundle them never changes a verdict (docs/cases.md "Wire cases").

The acceptor of ``bad-signature`` writes a wrong Signature into every reply.  With a window of 2
([MS-MQQB] 2.2.2.1) it sends a SessionAck Packet (2.2.6) per UserMessage (3.1.1.6.1, by message
count); mqqb.acceptor.session-ack[n=2] waits for the one that counts 2 (3.1.5.8.2).  Both
SessionAcks reach the case's client before it reads (the peer synced first: lateness made, not
waited for): the one counting 2 is still read, and the verdict is the Signature the acceptor
broke (then.peer.violations), not a SessionAck that never came.

mqqb.acceptor.session-ack[n=5] sends past that window: the client waits for an acknowledgment
([MS-MQQB] 3.1.7.1) within SessionAckSend; the acceptor's loop held past that bound by a gate, the
SessionAcks it owed for what reached it still count once it synced (the message is sent, not
"sent: false" because the loaded machine ran the acceptor late).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import packets
from harness.cases.loader import load_text
from harness.cases.targets.wire import WireOptions
from harness.cases.wireruns import AcceptorRun
from harness.session.rules import RuleId

CASE = """\
id: w.reply-framing
title: t
spec: [{section: MS-MQQB 3.1.5.8.2, requirement: MQQB-3.1.5.8.2-COUNT}]
given:
  peer: {under_test: acceptor, behaviour: bad-signature}
when:
  - action: receive
    args: {within: SessionAckSend}
"""


def _open_session(window: int) -> AcceptorRun:
    """A run of CASE against the simulated ``bad-signature`` acceptor, its session established
    with the client's WindowSize ``window`` (the first four steps of mqqb.acceptor.session-ack)."""
    (case,) = load_text(CASE, "framing.yaml")
    run = AcceptorRun(case, WireOptions())
    run.start()
    run.send({"packet": "EstablishConnection"})
    assert run.receive({"packet": "EstablishConnection", "within": "SessionInitialization"})["kind"] == (
        "EstablishConnection"
    )
    run.send({"packet": "ConnectionParameters", "fields": {"ConnectionParametersHeader.WindowSize": window}})
    assert run.receive({"packet": "ConnectionParameters", "within": "SessionInitialization"})["kind"] == (
        "ConnectionParameters"
    )
    return run


def test_replies_bundled_in_one_read_are_each_read_whatever_their_signature() -> None:
    run = _open_session(2)
    try:
        run.send({"packet": "UserMessage", "count": 2})
        assert run.peer.sync(10)  # both SessionAcks are sent before the client reads one byte
        result = run.receive(
            {"packet": "SessionAck", "within": "SessionAckSend", "until": {"SessionHeader.AckSequenceNumber": 2}}
        )
        assert result == {"closed": False, "timed_out": False, "kind": "SessionAck"}
        assert run.last_packet is not None
        ack = packets.parse(run.last_packet, strict=False)
        assert int(ack.SessionHeader.AckSequenceNumber) == 2
        assert int(ack.BaseHeader.Signature) == 0x4C494F52  # read as sent: the Signature is judged
        replies = [data for direction, data, _ in run.wire_log[-1].packets if direction == "s2c"]
        assert [packets.parse(d, strict=False).kind.name for d in replies] == [
            "EstablishConnection",
            "ConnectionParameters",
            "SessionAck",
            "SessionAck",
        ]
        assert [v.rule_id for v in run.acceptor_violations()] == [RuleId.MQQB_3_1_5_1_2_SIGNATURE]
    finally:
        run.close()


def test_an_acknowledgment_owed_past_the_bound_opens_the_window(
    stall_peer_loop: Callable[[], tuple[threading.Event, threading.Event]],
) -> None:
    run = _open_session(2)
    try:
        gate, held = stall_peer_loop()
        assert held.wait(10)
        assert run.send({"packet": "UserMessage", "count": 2}) == {"sent": True}  # within the window
        run.bound = lambda args, default="": (0.0, "no time")  # type: ignore[method-assign]
        opens = threading.Timer(0.5, gate.set)
        opens.start()
        try:
            third = run.send({"packet": "UserMessage"})  # past the window: waits for a SessionAck
        finally:
            gate.set()
            opens.join()
        assert third == {"sent": True}
        assert run.peer_acked >= 1 and run.user_messages_sent == 3
    finally:
        run.close()
