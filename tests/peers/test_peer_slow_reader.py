"""The simulated peer's slow reader (AcceptorBehaviour.read_rate): it reads each connection at a
bounded rate with a small receive buffer, so a sender meets TCP back-pressure, and still accepts
every UserMessage Packet exactly once ([MS-MQQB] 3.1.5.8) and acknowledges it (3.1.5.8.2)."""

from __future__ import annotations

import socket
import time

import pytest
from peerkit import RawClient, bodies, cp_request, ec_request, no_crash, still_serves, user_message_bytes

from harness.peers import SimulatedPeer
from harness.session import AcceptorBehaviour, named_behaviour

RATE = 40_000  # bytes per second
BODY = 4000
COUNT = 20  # about 80 KB of UserMessage Packets: two seconds of reading at RATE
SLACK = 40_000  # more than the kernel buffers both ends hold at these SO_SNDBUF / SO_RCVBUF sizes


def test_slow_reader_behaviours_are_named() -> None:
    slow = named_behaviour("slow-reader")
    assert slow.read_rate and slow.receive_buffer
    assert named_behaviour("slow-reader-1234").read_rate == 1234
    with pytest.raises(KeyError):
        named_behaviour("slow-reader-0")
    assert AcceptorBehaviour().read_rate is None


def test_a_slow_reader_pushes_back_on_the_sender_and_delivers_everything_once() -> None:
    with SimulatedPeer(behaviour=f"slow-reader-{RATE}") as peer:
        with RawClient(peer.address, timeout=20.0) as client:
            client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
            client.send(ec_request())
            client.read(1)
            client.send(cp_request(window=1000))  # a window wide enough for every message in flight
            client.read(1)
            data = b"".join(
                user_message_bytes(peer.identifier, n, b"%04d" % n + b"x" * (BODY - 4)) for n in range(1, COUNT + 1)
            )
            client.sock.settimeout(20.0)
            start = time.monotonic()
            client.sock.sendall(data)  # blocks while the peer's window is closed: TCP back-pressure
            sent_in = time.monotonic() - start
            assert peer.wait_for(lambda: len(peer.delivered) >= COUNT, 20.0)
            read_in = time.monotonic() - start
        # what the kernel buffers hold is all a sender can get ahead of the reader; the rest waits
        # for the reading pace
        assert sent_in >= (len(data) - SLACK) / RATE, (sent_in, len(data))
        assert read_in >= (len(data) - RATE / 20) / RATE, (read_in, len(data))
        assert sorted(bodies(peer.delivered)) == sorted(b"%04d" % n + b"x" * (BODY - 4) for n in range(1, COUNT + 1))
        assert peer.connections[0].behaviour == f"slow-reader-{RATE}"
        no_crash(peer)
        peer.behaviour = "normal"
        still_serves(peer)


def test_the_default_slow_reader_paces_a_small_session() -> None:
    """``slow-reader`` (5000 bytes/s): ten 1000-byte messages take about two seconds to read."""
    with SimulatedPeer(behaviour="slow-reader") as peer:
        with RawClient(peer.address, timeout=10.0) as client:
            client.handshake()
            data = b"".join(user_message_bytes(peer.identifier, n, b"y" * 1000) for n in range(1, 11))
            client.sock.settimeout(10.0)
            start = time.monotonic()
            client.send(data)
            assert peer.wait_for(lambda: len(peer.delivered) == 10, 10.0)
            elapsed = time.monotonic() - start
        rate = named_behaviour("slow-reader").read_rate
        assert rate is not None
        assert elapsed >= (len(data) - rate / 20) / rate, elapsed
        no_crash(peer)
