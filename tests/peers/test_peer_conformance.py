"""Acceptance 4: the SimulatedPeer validates whoever connects to it.

For every initiator-side rule the peer checks ([MS-MQQB] 3.1.5.1-3.1.5.8 and 3.1.6 as an acceptor
observes them), a plain-socket client (bytes from ``packets.build``, no harness.session code)
sends a session broken in that one way, and the rule appears with its spec section in the peer's
JSON-lines report.  A conformant sender, plain-socket or the project's Initiator, leaves the
report empty.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from peerkit import (
    CLIENT,
    OTHER,
    NormalSession,
    RawClient,
    cp_request,
    ec_request,
    final_ack_bytes,
    message_headers,
    order_ack_bytes,
    session_ack_bytes,
    user_message_bytes,
)

import packets
from harness.peers import SimulatedPeer
from harness.session import RULES, SessionConfig
from harness.session.rules import initiator_rules
from packets import NULL_GUID, base
from packets import session as sp

# Timers the acceptor chooses ([MS-MQQB] 3.1.2.1 <43>, 3.1.2.7, 3.1.3.2), short enough for a test.
PEER_CONFIG = SessionConfig(session_initialization=0.5, order_ack_timeout=0.02, maximum_order_ack_delay=0.05)

Scenario = Callable[[RawClient, SimulatedPeer], None]


def _patched(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


def _open(c: RawClient, peer: SimulatedPeer) -> None:
    c.handshake()


def _read_until(c: RawClient, kind: str, timeout: float = 5.0, tx_number: int = 0) -> None:
    """Read until a packet of ``kind`` (an OrderAck for at least ``tx_number``) arrives."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = c.read(1, deadline - time.monotonic())
        if any(p.kind == kind and (not tx_number or p.body.TxSequenceNumber >= tx_number) for p in got):
            return
        if c.eof:
            break
    raise AssertionError(f"no {kind} from the peer")


def signature(c: RawClient, peer: SimulatedPeer) -> None:
    c.send(_patched(ec_request(), 4, "<L", 0x4C494F52))  # BaseHeader.Signature byte-swapped


def malformed(c: RawClient, peer: SimulatedPeer) -> None:
    c.send(_patched(ec_request()[:24], 8, "<L", 24))  # an EstablishConnection Packet of 24 bytes


def unknown_packet(c: RawClient, peer: SimulatedPeer) -> None:
    flags = base.BaseHeaderFlags.make(PR=3, IN=1)
    c.send(struct.pack("<BBHLLL", 0x10, 0, flags, 0x524F494C, 20, 0xFFFFFFFF) + struct.pack("<HH", 0, 5))  # PT 5


def ec_twice(c: RawClient, peer: SimulatedPeer) -> None:
    c.handshake()
    c.send(ec_request())


def cp_first(c: RawClient, peer: SimulatedPeer) -> None:
    c.send(cp_request())


def _after_ec(packet: Callable[[SimulatedPeer], bytes]) -> Scenario:
    def scenario(c: RawClient, peer: SimulatedPeer) -> None:
        c.send(ec_request())
        c.read(1)
        c.send(packet(peer))

    return scenario


def user_message_first(c: RawClient, peer: SimulatedPeer) -> None:
    c.send(user_message_bytes(peer.identifier, 1, b"early"))


def ec_request_cs(c: RawClient, peer: SimulatedPeer) -> None:
    c.send(ec_request(cs=True))
    c.read(1)


def cp_after_refusal(c: RawClient, peer: SimulatedPeer) -> None:
    c.send(ec_request(OTHER))  # a ServerGuid that is not the peer's: refused (CS=1)
    (reply,) = c.read(1)
    assert reply.InternalHeader.Flags.CS
    c.send(cp_request())


def cp_request_cs(c: RawClient, peer: SimulatedPeer) -> None:
    c.send(ec_request())
    c.read(1)
    c.send(cp_request(cs=True))


def count_mismatch(c: RawClient, peer: SimulatedPeer) -> None:
    c.handshake()
    c.send(user_message_bytes(peer.identifier, 1), user_message_bytes(peer.identifier, 2))
    c.send(session_ack_bytes(0, sent=5))  # two UserMessages were sent, not five


def ack_beyond_sent(c: RawClient, peer: SimulatedPeer) -> None:
    c.handshake()
    c.send(session_ack_bytes(3))  # the peer sent no UserMessage


def ack_regressed(c: RawClient, peer: SimulatedPeer) -> None:
    c.handshake()
    c.send(user_message_bytes(peer.identifier, 1, delivery="transactional", tx=(1, 0)))
    _read_until(c, "OrderAck")  # the peer's first UserMessage Packet on the session
    c.send(session_ack_bytes(1, sent=1, recoverable_sent=1))
    c.send(session_ack_bytes(0, sent=1, recoverable_sent=1))


def ack_unsent_recoverable(c: RawClient, peer: SimulatedPeer) -> None:
    c.handshake()
    c.send(session_ack_bytes(0, recoverable_base=1, flags=0x1))  # the peer sent no recoverable message


def order_ack_unsent(c: RawClient, peer: SimulatedPeer) -> None:
    c.handshake()
    c.send(order_ack_bytes(peer.identifier))


def final_ack_unknown(c: RawClient, peer: SimulatedPeer) -> None:
    c.handshake()
    c.send(final_ack_bytes(peer.identifier))


def init_timeout(c: RawClient, peer: SimulatedPeer) -> None:
    c.send(ec_request())
    c.read(1)  # and never a ConnectionParameters request


def truncated(c: RawClient, peer: SimulatedPeer) -> None:
    c.send(ec_request())
    c.read(1)
    c.send(cp_request()[:10])
    c.sock.shutdown(socket.SHUT_WR)


def closed_early(c: RawClient, peer: SimulatedPeer) -> None:
    c.send(ec_request())
    c.read(1)
    c.sock.shutdown(socket.SHUT_WR)


def duplicate(c: RawClient, peer: SimulatedPeer) -> None:
    c.handshake()
    c.send(user_message_bytes(peer.identifier, 5), user_message_bytes(peer.identifier, 5))


def sender_ack_fields(c: RawClient, peer: SimulatedPeer) -> None:
    c.handshake()
    c.send(session_ack_bytes(0, recoverable_base=0, flags=0x1))  # flags set, yet no recoverable message came


def _ec(**changes: object) -> bytes:
    """An EstablishConnection request with EstablishConnectionHeader fields changed."""
    headers = sp.establish_connection(CLIENT, NULL_GUID, 1)
    headers.EstablishConnectionHeader.update(changes)
    return packets.build(headers)


def _cp(recoverable_ack_timeout: int = 0x1F4, ack_timeout: int = 0x4E20, reserved: int = 0, window: int = 64) -> bytes:
    headers = sp.connection_parameters(recoverable_ack_timeout, ack_timeout, window)
    headers.ConnectionParametersHeader.Reserved = reserved
    return packets.build(headers)


def _handshake_with(cp: bytes) -> Scenario:
    def scenario(c: RawClient, peer: SimulatedPeer) -> None:
        c.send(ec_request())
        c.read(1)
        c.send(cp)

    return scenario


def internal_reserved(c: RawClient, peer: SimulatedPeer) -> None:
    c.send(_patched(ec_request(), 16, "<H", 1))  # InternalHeader.Reserved


def cs_in_session_ack(c: RawClient, peer: SimulatedPeer) -> None:
    c.handshake()
    c.send(_patched(session_ack_bytes(), 18, "<H", 0x1 | 0x10))  # InternalHeader.Flags: PT 1, CS


def time_to_reach_queue(c: RawClient, peer: SimulatedPeer) -> None:
    c.send(_patched(ec_request(), 12, "<L", 60))  # BaseHeader.TimeToReachQueue of an internal packet


def _send_after_open(*make: Callable[[SimulatedPeer], bytes]) -> Scenario:
    def scenario(c: RawClient, peer: SimulatedPeer) -> None:
        c.handshake()
        c.send(*(m(peer) for m in make))

    return scenario


def _tx(message_id: int, number: int, previous: int, sequence: int = 1) -> Callable[[SimulatedPeer], bytes]:
    return lambda p: user_message_bytes(
        p.identifier, message_id, delivery="transactional", tx=(number, previous), tx_sequence_id=sequence
    )


def window_exceeded(c: RawClient, peer: SimulatedPeer) -> None:
    c.send(ec_request())
    c.read(1)
    c.send(cp_request(window=2))  # the initiator announces WindowSize 2 ...
    c.read(1)
    c.send(*(user_message_bytes(peer.identifier, n) for n in (1, 2, 3)))  # ... and sends 3 unacknowledged


def expired_message(peer: SimulatedPeer, message_id: int = 1, age: int = 3600, ttrq: int = 60) -> bytes:
    """A UserMessage whose SentTime is ``age`` seconds ago and TimeToReachQueue ``ttrq`` seconds: expired
    before it was sent ([MS-MQQB] 3.1.7.1.2, [MS-MQMQ] 2.2.19.1)."""
    headers = message_headers(peer.identifier, message_id, b"late")
    headers.UserHeader.SentTime = int(time.time()) - age
    headers.BaseHeader.TimeToReachQueue = ttrq
    return packets.build(headers)


# rule id -> (broken session, peer behaviour)
SCENARIOS: dict[str, tuple[Scenario, str]] = {
    "MQQB-3.1.5.1.2-signature": (signature, "normal"),
    "MQQB-3.1.5.1.3-malformed": (malformed, "normal"),
    "MQQB-3.1.5.1.3-truncated": (truncated, "normal"),
    "MQQB-3.1.5.1.1-unknown-packet": (unknown_packet, "normal"),
    "MQQB-2.2.1-reserved": (internal_reserved, "normal"),
    "MQQB-2.2.1-cs-flag": (cs_in_session_ack, "normal"),
    "MQMQ-2.2.19.1-time-to-reach-queue": (time_to_reach_queue, "normal"),
    "MQQB-2.2.2.1-recoverable-ack-timeout": (_handshake_with(_cp(recoverable_ack_timeout=0x10)), "normal"),
    "MQQB-2.2.2.1-ack-timeout": (_handshake_with(_cp(ack_timeout=0x100)), "normal"),
    "MQQB-2.2.2.1-reserved": (_handshake_with(_cp(reserved=1)), "normal"),
    "MQQB-2.2.3.1-client-guid": (lambda c, p: c.send(_ec(ClientGuid=NULL_GUID)), "normal"),
    "MQQB-2.2.3.1-server-guid": (lambda c, p: c.send(ec_request(OTHER)), "normal"),
    "MQQB-2.2.3.1-operating-system": (
        lambda c, p: c.send(_ec(OperatingSystem=sp.OperatingSystemFlags.make(RE=0x11, SE=1))),
        "normal",
    ),
    "MQQB-2.2.3.1-reserved": (lambda c, p: c.send(_ec(Reserved=7)), "normal"),
    "MQQB-3.1.5.3-wrong-state": (ec_twice, "normal"),
    "MQQB-3.1.5.4-wrong-state": (cp_first, "normal"),
    "MQQB-3.1.5.5-wrong-state": (_after_ec(lambda p: session_ack_bytes()), "normal"),
    "MQQB-3.1.5.6-wrong-state": (_after_ec(lambda p: order_ack_bytes(p.identifier)), "normal"),
    "MQQB-3.1.5.7-wrong-state": (_after_ec(lambda p: final_ack_bytes(p.identifier)), "normal"),
    "MQQB-3.1.5.8-wrong-state": (user_message_first, "normal"),
    "MQQB-3.1.5.2.3-ec-request": (ec_request_cs, "normal"),
    "MQQB-3.1.5.3.2-after-refusal": (cp_after_refusal, "normal"),
    "MQQB-3.1.5.3.2-cp-request": (cp_request_cs, "normal"),
    "MQQB-3.1.5.5.5-count-mismatch": (count_mismatch, "normal"),
    "MQQB-3.1.5.5.1-ack-beyond-sent": (ack_beyond_sent, "normal"),
    "MQQB-3.1.5.5.1-ack-regressed": (ack_regressed, "normal"),
    "MQQB-3.1.5.5.3-ack-unsent-recoverable": (ack_unsent_recoverable, "normal"),
    "MQQB-3.1.1.6.1-sender-ack-fields": (sender_ack_fields, "normal"),
    "MQQB-3.1.5.6-order-ack-unsent": (order_ack_unsent, "normal"),
    "MQQB-3.1.5.7-final-ack-unknown": (final_ack_unknown, "normal"),
    "MQQB-3.1.7.1-window-exceeded": (window_exceeded, "missing-ack"),  # no SessionAck by count
    "MQQB-3.1.7.1.1-message-id": (_send_after_open(lambda p: user_message_bytes(p.identifier, 0)), "normal"),
    "MQQB-3.1.1.5-tx-sequence": (_send_after_open(_tx(1, 1, 0), _tx(2, 3, 2)), "normal"),  # 2 never sent
    "MQMQ-2.2.20.5-tx-number": (_send_after_open(_tx(1, 0, 0)), "normal"),
    "MQQB-3.1.7.1.3-tx-previous": (_send_after_open(_tx(1, 2, 2)), "normal"),
    "MQQB-3.1.1.5-prior-sequence": (_send_after_open(_tx(1, 1, 0, sequence=2), _tx(2, 1, 0, sequence=1)), "normal"),
    "MQQB-3.1.1.5-new-sequence": (_send_after_open(_tx(1, 1, 0, sequence=1), _tx(2, 2, 1, sequence=2)), "normal"),
    "MQQB-3.1.5.8.1-duplicate": (duplicate, "normal"),
    "MQQB-3.1.7.1.2-expired": (_send_after_open(expired_message), "normal"),
    "MQQB-3.1.6.6-init-timeout": (init_timeout, "normal"),
    "MQQB-3.1.5.9-closed-early": (closed_early, "normal"),
}


def checked_rules() -> list[str]:
    """The initiator-side rules the peer checks ([MS-MQQB] 3.1.5.1-3.1.7.1 as an acceptor sees them)."""
    return [r.id for r in initiator_rules()]


def read_report(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("rule_id", checked_rules())
def test_broken_session_is_reported_with_its_section(rule_id: str, tmp_path: Path) -> None:
    assert rule_id in SCENARIOS, f"no broken session written for {rule_id}"
    scenario, behaviour = SCENARIOS[rule_id]
    report = tmp_path / "report.jsonl"
    with SimulatedPeer(behaviour=behaviour, config=PEER_CONFIG, report=report) as peer:
        with RawClient(peer.address) as c:
            scenario(c, peer)
            seen = peer.wait_for(lambda: any(v.rule_id == rule_id for _, v in peer.violations), 5.0)
        assert seen, f"{rule_id} not reported; reported: {[v.rule_id for _, v in peer.violations]}"
    lines = [r for r in read_report(report) if r["rule"] == rule_id]
    assert lines, read_report(report)
    record = lines[0]
    assert record["section"] == RULES[rule_id].section
    assert record["connection"] == 0
    assert isinstance(record["packet_index"], int) and record["packet_index"] >= -1
    assert isinstance(record["evidence"], str) and record["evidence"]
    assert set(record) == {"connection", "rule", "section", "packet_index", "evidence"}


def test_plain_socket_conformant_sender_leaves_the_report_empty(tmp_path: Path) -> None:
    report = tmp_path / "report.jsonl"
    with SimulatedPeer(config=PEER_CONFIG, report=report) as peer:
        with RawClient(peer.address) as c:
            ec, cp = c.handshake()
            assert not ec.InternalHeader.Flags.CS and cp.ConnectionParametersHeader.WindowSize == 64
            q = peer.identifier
            c.send(*(user_message_bytes(q, n, b"x%d" % n) for n in range(1, 6)))
            c.send(*(user_message_bytes(q, n, b"r%d" % n, delivery="recoverable") for n in (6, 7)))
            tx = [user_message_bytes(q, 7 + k, b"t%d" % k, delivery="transactional", tx=(k, k - 1)) for k in (1, 2, 3)]
            c.send(*tx)
            _read_until(c, "OrderAck", tx_number=3)
            order_acks = sum(p.kind == "OrderAck" for p in c.received)
            # acknowledge the peer's OrderAck(s); 10 UserMessages sent, 5 of them recoverable (3.1.1.4)
            c.send(session_ack_bytes(order_acks, sent=10, recoverable_sent=5))
            assert peer.wait_for(lambda: len(peer.delivered) == 10, 5.0)
            time.sleep(0.1)  # the SessionAck is processed
        assert peer.wait_for(lambda: all(conn.closed for conn in peer.connections), 5.0)
    assert peer.violations == []
    assert report.exists() and report.read_text() == ""


def test_the_project_initiator_leaves_the_report_empty(tmp_path: Path) -> None:
    report = tmp_path / "report.jsonl"
    with SimulatedPeer(config=PEER_CONFIG, report=report) as peer:
        session = NormalSession(peer, "clean")
        try:
            session.deliver(100)
        finally:
            session.close()
        assert peer.wait_for(lambda: all(conn.closed for conn in peer.connections), 5.0)
    assert peer.violations == []
    assert report.read_text() == ""
