"""Acceptance 3: the SimulatedPeer survives hostile clients and keeps serving the others.

Each test keeps a normal session open while a hostile client does its thing, then checks that the
session goes on over the same connection and that a new connection is served.  The hostile
inputs: random bytes, every truncation of a valid stream, a UserMessage before any
EstablishConnection ([MS-MQQB] 3.1.5.8: not OPEN, close), the QueueJumper packet (an SRMP
Message whose SRMPEnvelopeHeader.DataLength has its top bit set, [MS-MQRR] 2.2.5.1.2.1 ->
[MS-MQQB] 3.1.5.1.3), 200 connections at once, and connections stalled mid-packet (closed by the
read timeout).
"""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

from peerkit import (
    NormalSession,
    RawClient,
    bodies,
    cp_request,
    ec_request,
    no_crash,
    queue_jumper,
    still_serves,
    user_message_bytes,
)

from harness.peers import SimulatedPeer
from packets import GUID


@contextmanager
def served_throughout(peer: SimulatedPeer) -> Iterator[None]:
    """A normal session delivers before and after the block, over one connection."""
    session = NormalSession(peer, "alongside")
    try:
        session.deliver(3)
        yield
        session.deliver(3)
        assert session.link.connections == 1, "the normal session was disconnected"
        assert not session.link.violations
    finally:
        session.close()
    still_serves(peer)


def wait_closed(peer: SimulatedPeer, count: int, timeout: float = 10.0) -> None:
    """Wait until ``count`` connections besides the normal session's (index 0) are closed."""
    assert peer.wait_for(lambda: sum(c.closed for c in peer.connections[1:]) >= count, timeout), [
        (c.index, c.closed_by) for c in peer.connections[1:] if not c.closed
    ]


def test_random_bytes() -> None:
    rng = random.Random(1801)
    with SimulatedPeer() as peer, served_throughout(peer):
        blobs = [rng.randbytes(rng.randrange(1, 3000)) for _ in range(40)]
        # random bytes behind a plausible BaseHeader (version 0x10, signature "LIOR")
        blobs += [b"\x10\x00\x0b\x00LIOR" + rng.randbytes(rng.randrange(8, 3000)) for _ in range(20)]
        # and behind a whole valid session start
        blobs += [ec_request() + cp_request() + rng.randbytes(rng.randrange(1, 3000)) for _ in range(20)]
        for blob in blobs:
            with RawClient(peer.address) as c:
                c.send(blob)
                c.sock.shutdown(socket.SHUT_WR)
                c.wait_eof(5.0)
        wait_closed(peer, len(blobs))
        no_crash(peer)
        hostile = peer.connections[1:]
        assert not any(c.delivered for c in hostile)
        assert sum(bool(c.violations) for c in hostile) >= len(blobs) // 2  # most are reported


def test_every_truncation_of_a_valid_stream() -> None:
    with SimulatedPeer() as peer, served_throughout(peer):
        head = ec_request() + cp_request()
        message_len = len(user_message_bytes(peer.identifier, 1, b"m"))
        stream_len = len(head) + 3 * message_len
        # per connection, in the order opened (and accepted): its client port, the whole
        # UserMessages in its prefix (a port may come again for a later cut: it keys nothing)
        expected: list[tuple[int, int]] = []
        cuts = list(range(stream_len))
        for batch in range(0, len(cuts), 50):
            clients = []
            for cut in cuts[batch : batch + 50]:
                ids = range(3 * cut + 1, 3 * cut + 4)  # fresh MessageIDs: no duplicate detection across cuts
                stream = head + b"".join(user_message_bytes(peer.identifier, i, b"m") for i in ids)
                c = RawClient(peer.address)
                expected.append((c.sock.getsockname()[1], max(0, (cut - len(head)) // message_len)))
                c.send(stream[:cut])
                c.sock.shutdown(socket.SHUT_WR)
                clients.append(c)
            for c in clients:
                assert c.wait_eof(5.0)
                c.close()
        wait_closed(peer, len(cuts))
        no_crash(peer)
        got = [(c.client[1], len(c.delivered)) for c in peer.connections[1:]]
        assert got == expected
        assert sum(n for _, n in expected) == message_len * (0 + 1 + 2)  # 0, 1, 2 whole messages along the cuts


def test_user_message_before_establish_connection() -> None:
    with SimulatedPeer() as peer, served_throughout(peer):
        with RawClient(peer.address) as c:
            c.send(user_message_bytes(peer.identifier, 1, b"early"))
            assert c.wait_eof(5.0), "the peer did not close the session"
        wait_closed(peer, 1)
        hostile = peer.connections[1]
        assert [v.rule_id for v in hostile.violations] == ["MQQB-3.1.5.8-wrong-state"]
        assert hostile.closed_by == "acceptor" and not hostile.delivered
        no_crash(peer)


def test_queue_jumper_packet() -> None:
    with SimulatedPeer() as peer, served_throughout(peer):
        with RawClient(peer.address) as c:  # before any EstablishConnection
            c.send(queue_jumper(peer.identifier))
            assert c.wait_eof(5.0)
        with RawClient(peer.address) as c:  # on an open session
            c.handshake()
            c.send(queue_jumper(peer.identifier, 2))
            assert c.wait_eof(5.0)
        wait_closed(peer, 2)
        for hostile in peer.connections[1:3]:
            assert hostile.closed_by == "acceptor" and not hostile.delivered
            assert [v.rule_id for v in hostile.violations] == ["MQQB-3.1.5.1.3-malformed"]
            assert "SRMPEnvelopeHeader" in hostile.violations[0].evidence
        no_crash(peer)


def test_two_hundred_concurrent_connections() -> None:
    with SimulatedPeer(max_connections=256) as peer, served_throughout(peer):
        clients = []
        try:
            for n in range(200):
                c = RawClient(peer.address)
                clients.append(c)
                c.send(ec_request(), cp_request(), user_message_bytes(peer.identifier, 10_000 + n, b"c%d" % n))
            for c in clients:  # every one gets its EstablishConnection and ConnectionParameters replies
                ec, cp = c.read(2)
                assert ec.kind == "EstablishConnection" and not ec.InternalHeader.Flags.CS
                assert GUID(ec.EstablishConnectionHeader.ServerGuid) == peer.identifier
                assert cp.kind == "ConnectionParameters"
            assert peer.wait_for(lambda: len(peer.delivered) >= 203, 20.0)
            assert sum(not c.closed for c in peer.connections) == 201  # all open at once
        finally:
            for c in clients:
                c.close()
        wait_closed(peer, 200)
        assert sorted(b for b in bodies(peer.delivered) if b.startswith(b"c")) == sorted(b"c%d" % n for n in range(200))
        assert peer.rejected == 0
        no_crash(peer)


def test_connections_stalled_mid_packet_are_closed_by_the_read_timeout() -> None:
    with SimulatedPeer(read_timeout=0.5) as peer, served_throughout(peer):
        clients = [RawClient(peer.address) for _ in range(4)]
        try:
            clients[0].send(ec_request()[:10])  # inside the BaseHeader
            clients[1].send(ec_request()[:300])  # inside the EstablishConnectionHeader
            clients[2].send(ec_request())
            clients[2].read(1)
            clients[2].send(cp_request()[:20])  # inside the ConnectionParameters Packet
            clients[3].handshake()
            clients[3].send(user_message_bytes(peer.identifier, 1, b"x" * 100)[:-1])  # one byte short
            started = time.monotonic()
            for c in clients:
                assert c.wait_eof(5.0), "a stalled connection was left open"
            assert time.monotonic() - started < 4.0
        finally:
            for c in clients:
                c.close()
        stalled = peer.connections[1:5]
        assert [c.closed_by for c in stalled] == ["read-timeout"] * 4
        assert all(c.error and c.error.startswith("read timeout") for c in stalled)
        assert not any(c.delivered for c in stalled)
        # what arrived of the incomplete packet is kept as the last entry
        short = len(user_message_bytes(peer.identifier, 1, b"x" * 100)) - 1
        assert [len(c.packets[-1][1]) for c in stalled] == [10, 300, 20, short]
