"""Acceptance 1: the Initiator over a real loopback TCP socket delivers 10,000 express and 1,000
transactional messages to the SimulatedPeer exactly once, the transactional ones in order
([MS-MQQB] 3.1.1.5, 3.1.5.8.1, 3.1.5.8.6), also when the peer closes the connection after every
500 packets it receives (behaviour close-after-500; the initiator reconnects, 3.1.5.9, 3.1.6.1).
"""

from __future__ import annotations

from collections import Counter

from peerkit import CLIENT, FAST, bodies, no_crash

from harness.peers import InitiatorLink, SimulatedPeer
from harness.session import Initiator, SessionConfig, user_message

EXPRESS, TRANSACTIONAL = 10_000, 1_000
# OrderAckTimeout and MaximumOrderAckDelay are the acceptor's to choose ([MS-MQQB] 3.1.2.7,
# 3.1.3.2); a session of 500 packets on loopback lasts well under the default 500 ms, so the
# peer acknowledges order sooner or no session would ever carry an OrderAck.
PEER_CONFIG = SessionConfig(order_ack_timeout=0.01, maximum_order_ack_delay=0.05)


def deliver_all(behaviour: str) -> tuple[SimulatedPeer, InitiatorLink]:
    # every packet and delivered message kept in detail (the default history keeps the last 10,000)
    with SimulatedPeer(behaviour=behaviour, config=PEER_CONFIG, history=100_000) as peer:
        initiator = Initiator(CLIENT, peer.identifier, config=FAST)
        link = InitiatorLink(initiator, peer.address, timeout=5.0)
        for n in range(EXPRESS):
            link.send_message(user_message(CLIENT, peer.identifier, b"e%d" % n))
        for n in range(TRANSACTIONAL):
            link.send_message(user_message(CLIENT, peer.identifier, b"t%d" % n), "transactional")
        total = EXPRESS + TRANSACTIONAL
        done = link.run_until(lambda: len(peer.delivered) >= total, 60.0)
        link.close()
    assert done, f"only {len(peer.delivered)} of {total} messages delivered"
    return peer, link


def check_exactly_once_in_order(peer: SimulatedPeer, link: InitiatorLink) -> None:
    delivered = bodies(peer.delivered)
    duplicates = [b for b, n in Counter(delivered).items() if n > 1]
    assert not duplicates, f"{len(duplicates)} messages delivered twice, e.g. {duplicates[:3]}"
    assert set(delivered) == {b"e%d" % n for n in range(EXPRESS)} | {b"t%d" % n for n in range(TRANSACTIONAL)}
    assert [b for b in delivered if b.startswith(b"t")] == [b"t%d" % n for n in range(TRANSACTIONAL)]
    assert len(link.acked) == len(set(link.acked)), "a message was acknowledged twice"
    assert not link.violations
    assert not [(i, v) for i, v in peer.violations], peer.violations[:3]
    no_crash(peer)  # a reset when the link closes with acknowledgments unread is the transport's doing


def test_ten_thousand_express_and_a_thousand_transactional_exactly_once() -> None:
    peer, link = deliver_all("normal")
    check_exactly_once_in_order(peer, link)
    assert link.connections == 1 and len(peer.connections) == 1
    # every UserMessage crossed the wire once: no retransmission on a healthy session
    sent = sum(1 for d, data, _ in peer.connections[0].packets if d == "c2s" and len(data) > 36)
    assert sent == EXPRESS + TRANSACTIONAL + 1  # + the EstablishConnection request


def test_the_same_when_the_peer_closes_after_every_500_packets() -> None:
    peer, link = deliver_all("close-after-500")
    check_exactly_once_in_order(peer, link)
    closed = [c for c in peer.connections if c.closed_by == "acceptor"]
    assert len(closed) >= (EXPRESS + TRANSACTIONAL) // 500  # each session carried at most 500 packets
    assert all(sum(d == "c2s" for d, _, _ in c.packets) >= 500 for c in closed)
    assert link.connections == len(peer.connections)
