"""The SimulatedPeer's selection of behaviours per connection, its connection bound, IPv6 loopback,
and the InitiatorLink against faulty acceptors ([MS-MQQB] 3.1.5.2/3.1.5.3.2: a refused or
unreadable EstablishConnection response ends the attempt, and the initiator retries, 3.1.6.1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from peerkit import CLIENT, FAST, RawClient, bodies, cp_request, ec_request, no_crash, user_message_bytes

from harness.capture.streams import capture_streams
from harness.model.enums import ConnectionStatus
from harness.peers import InitiatorLink, LinkError, PeerError, SimulatedPeer, parse_address
from harness.session import Initiator, user_message


def sending_link(peer: SimulatedPeer, count: int) -> InitiatorLink:
    link = InitiatorLink(Initiator(CLIENT, peer.identifier, config=FAST), peer.address, timeout=5.0)
    for n in range(count):
        link.send_message(user_message(CLIENT, peer.identifier, b"m%d" % n))
    return link


def test_queued_behaviours_apply_to_the_next_connections_in_turn() -> None:
    with SimulatedPeer() as peer:
        peer.queue_behaviours(["refuse", "refuse", "normal"])
        with sending_link(peer, 3) as link:
            assert link.run_until(lambda: len(peer.delivered) == 3, 10.0)
            history = [e.Status for e in link.initiator.OutgoingQueueReference.ConnectionHistory]
        assert [c.behaviour for c in peer.connections] == ["refuse", "refuse", "normal"]
        assert history.count(ConnectionStatus.ConnectionRefused) == 2
        assert ConnectionStatus.Established in history
        assert link.connections == 3
        refused_reply = peer.connections[0].packets[1]
        assert refused_reply[0] == "s2c" and refused_reply[1][22] & 0x10  # InternalHeader.Flags.CS
        no_crash(peer)


@pytest.mark.parametrize(
    "behaviour,rule_id,closes",
    [
        ("garbage-reply", "MQQB-3.1.5.1.2-signature", True),
        ("bad-signature", "MQQB-3.1.5.1.2-signature", True),
        ("bad-padding", "MQQB-2.2.3.1-response-padding", False),  # reported; the session goes on
    ],
)
def test_link_reports_a_faulty_acceptor(behaviour: str, rule_id: str, closes: bool) -> None:
    with SimulatedPeer(behaviour=behaviour) as peer:
        with sending_link(peer, 2) as link:
            assert link.run_until(lambda: any(v.rule_id == rule_id for v in link.violations), 5.0), link.violations
            peer.behaviour = "normal"
            assert link.run_until(lambda: sorted(bodies(peer.delivered)) == [b"m0", b"m1"], 10.0)
        delivered_on = [c.behaviour for c in peer.connections if c.delivered]
        assert delivered_on == (["normal"] if closes else ["bad-padding"])
        assert (link.connections > 1) == closes
        no_crash(peer)


def test_unknown_behaviour_is_refused() -> None:
    with pytest.raises(PeerError, match="unknown acceptor behaviour"):
        SimulatedPeer(behaviour="no-such-behaviour")
    with SimulatedPeer() as peer:
        with pytest.raises(PeerError):
            peer.behaviour = "close-after-x"
        with pytest.raises(PeerError):
            peer.queue_behaviours(["normal", "nonsense"])


def test_a_connection_beyond_max_connections_takes_the_slot_of_the_longest_idle() -> None:
    """Every slot taken by an open session: a newcomer is served in the slot of the session idle
    longest (issue 21, item 6), which the peer closes; the other session is untouched."""
    with SimulatedPeer(max_connections=2) as peer:
        first, second = RawClient(peer.address), RawClient(peer.address)
        try:
            first.handshake()
            second.handshake()
            second.send(user_message_bytes(peer.identifier, 2, b"b"))  # second is the one heard from last
            assert peer.wait_for(lambda: bodies(peer.delivered) == [b"b"], 5.0)
            with RawClient(peer.address) as third:
                assert first.wait_eof(5.0)
                third.send(ec_request(), cp_request(), user_message_bytes(peer.identifier, 3, b"c"))
                assert [p.kind for p in third.read(2)] == ["EstablishConnection", "ConnectionParameters"]
                assert peer.wait_for(lambda: sorted(bodies(peer.delivered)) == [b"b", b"c"], 5.0)
            assert peer.evicted == 1 and peer.rejected == 0
            assert peer.connections[0].closed_by == "evicted" and not peer.connections[0].violations
            second.send(user_message_bytes(peer.identifier, 4, b"d"))
            assert peer.wait_for(lambda: sorted(bodies(peer.delivered)) == [b"b", b"c", b"d"], 5.0)
        finally:
            first.close()
            second.close()
        assert peer.wait_for(lambda: all(c.closed for c in peer.connections), 5.0)
        with RawClient(peer.address) as again:  # slots free again
            again.send(ec_request(), cp_request())
            assert [p.kind for p in again.read(2)] == ["EstablishConnection", "ConnectionParameters"]


def test_ipv6_loopback_session_is_served_and_recorded(tmp_path: Path) -> None:
    pcap = tmp_path / "v6.pcap"
    with SimulatedPeer("::1", record=pcap) as peer:
        assert peer.address[0] == "::1"
        with sending_link(peer, 5) as link:
            assert link.run_until(lambda: len(peer.delivered) == 5, 10.0)
        assert peer.wait_for(lambda: all(c.closed for c in peer.connections), 5.0)
    client, server = capture_streams(pcap, {peer.address[1]})
    assert client.flow.count("::1") == 2 or "[::1]" in client.name
    assert b"".join(d for _, d in client.pieces) == b"".join(d for x, d, _ in peer.connections[0].packets if x == "c2s")
    assert b"".join(d for _, d in server.pieces) == b"".join(d for x, d, _ in peer.connections[0].packets if x == "s2c")


def test_link_addresses() -> None:
    assert parse_address(("127.0.0.1", 1801)) == ("127.0.0.1", 1801)
    assert parse_address("mqqb://127.0.0.1:1801") == ("127.0.0.1", 1801)
    assert parse_address("[::1]:1801") == ("::1", 1801)
    with pytest.raises(LinkError):
        parse_address("mqqb://host-without-port")
