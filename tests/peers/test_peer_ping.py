"""Ping ([MS-MQQB] 2.1.2, 2.2.7): the SimulatedPeer answers Ping Requests on a UDP port of its own
as 3.1.7.7 Receive Ping Request says, and the InitiatorLink sends the Initiator's Ping Request over
UDP and feeds the response back (3.1.5.2.2, 3.1.7.6, 3.1.7.8)."""

from __future__ import annotations

import socket

import pytest
from peerkit import CLIENT, FAST, bodies, no_crash, still_serves

import packets
from harness.model.enums import ConnectionStatus
from harness.peers import InitiatorLink, PeerError, SimulatedPeer
from harness.session import Initiator, user_message
from packets import GUID, PacketKind
from packets import session as sp


def ping_exchange(address: tuple[str, int], datagram: bytes, timeout: float = 2.0) -> bytes | None:
    """Send one datagram from a plain UDP socket; the datagram that comes back, if any within ``timeout``."""
    with socket.socket(socket.AF_INET6 if ":" in address[0] else socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        s.sendto(datagram, address)
        try:
            return s.recv(2048)
        except TimeoutError:
            return None


def request(cookie: int, rc: bool = False) -> bytes:
    return packets.build_ping(sp.ping(cookie, CLIENT, rc=rc))


@pytest.mark.parametrize("rc", [False, True])
def test_the_peer_answers_a_ping_request_as_3_1_7_7_says(rc: bool) -> None:
    with SimulatedPeer() as peer:
        raw = ping_exchange(peer.ping_address, request(0x01020304, rc=rc))
        assert raw is not None
        reply = packets.parse_ping(raw)
        assert reply.kind is PacketKind.Ping and not reply.violations
        ping = reply.headers.Ping
        assert ping.Signature == sp.PING_SIGNATURE
        assert ping.Cookie == 0x01020304  # Response.Cookie = Request.Cookie
        assert int(rc) == ping.Flags.RC  # Response.Flags.RC = Request.Flags.RC
        assert ping.Flags.RF == 0  # it will accept a session
        assert GUID(ping.QMGuid) == peer.identifier  # QueueManager.Identifier
        assert peer.ping_address[0] == "127.0.0.1" and peer.ping_address[1] != 0
        (exchange,) = peer.pings
        assert exchange.response == raw and exchange.behaviour == "normal"


@pytest.mark.parametrize("behaviour", ["ping-refuse", "refuse"])
def test_a_refusing_peer_sets_rf(behaviour: str) -> None:
    with SimulatedPeer(behaviour=behaviour) as peer:
        raw = ping_exchange(peer.ping_address, request(9))
        assert raw is not None
        ping = packets.parse_ping(raw).headers.Ping
        assert ping.Flags.RF == 1 and ping.Cookie == 9


def test_the_ping_is_answered_with_the_behaviour_of_the_next_connection() -> None:
    with SimulatedPeer() as peer:
        peer.queue_behaviours(["ping-refuse", "normal"])
        raw = ping_exchange(peer.ping_address, request(1))
        assert raw is not None and packets.parse_ping(raw).headers.Ping.Flags.RF == 1
        assert [c.behaviour for c in peer.connections] == []  # nothing was taken from the queue


def test_a_silent_peer_and_a_bad_signature_get_no_response() -> None:
    with SimulatedPeer(behaviour="ping-silent") as peer:
        assert ping_exchange(peer.ping_address, request(1), timeout=0.5) is None
        assert [p.response for p in peer.pings] == [None]
    with SimulatedPeer() as peer:
        bad = bytearray(request(2))
        bad[2:4] = b"\x00\x00"  # Signature
        assert ping_exchange(peer.ping_address, bytes(bad), timeout=0.5) is None
        assert ping_exchange(peer.ping_address, b"\x01", timeout=0.5) is None  # no Ping Packet at all
        assert ping_exchange(peer.ping_address, request(3), timeout=2.0) is not None  # still answering
        assert [p.response is None for p in peer.pings] == [True, True, False]
        still_serves(peer)
        no_crash(peer)


def test_a_peer_without_a_ping_port() -> None:
    with SimulatedPeer(ping_port=None) as peer, pytest.raises(PeerError, match="does not listen for pings"):
        _ = peer.ping_address
    with pytest.raises(PeerError, match="not started"):
        _ = SimulatedPeer().ping_address


def ec_se(link: InitiatorLink) -> list[int]:
    """OperatingSystem.SE of every EstablishConnection request the link sent."""
    return [
        int(packets.parse(data).EstablishConnectionHeader.OperatingSystem.SE)
        for direction, data, _ in link.packets
        if direction == "c2s" and packets.parse(data, strict=False).kind is PacketKind.EstablishConnection
    ]


def test_the_link_pings_and_connects_on_the_response() -> None:
    with SimulatedPeer() as peer:
        init = Initiator(CLIENT, peer.identifier, ping=True, config=FAST)
        with InitiatorLink(init, peer.address, timeout=5.0, ping_address=peer.ping_address) as link:
            link.send_message(user_message(CLIENT, peer.identifier, b"pinged"))
            assert link.pings and link.connections == 0  # the ping goes first (3.1.5.2.2)
            assert link.run_until(lambda: bodies(peer.delivered) == [b"pinged"], 5.0)
            history = [e.Status for e in init.OutgoingQueueReference.ConnectionHistory]
        assert len(link.ping_responses) == 1 and len(peer.pings) == 1
        assert peer.pings[0].request == link.pings[0]
        assert ConnectionStatus.PingFailure not in history
        assert ec_se(link) == [0]  # 3.1.5.2.3: a Ping Request was sent for this session
        assert link.connections == 1


@pytest.mark.parametrize("behaviour,responses", [("ping-refuse", 1), ("ping-silent", 0)])
def test_a_failed_ping_is_recorded_and_the_retry_connects_without_one(behaviour: str, responses: int) -> None:
    with SimulatedPeer(behaviour=behaviour) as peer:
        init = Initiator(CLIENT, peer.identifier, ping=True, config=FAST)
        with InitiatorLink(init, peer.address, timeout=5.0, ping_address=peer.ping_address) as link:
            link.send_message(user_message(CLIENT, peer.identifier, b"later"))
            assert link.run_until(lambda: bodies(peer.delivered) == [b"later"], 5.0)
            history = [e.Status for e in init.OutgoingQueueReference.ConnectionHistory]
        assert history[0] is ConnectionStatus.PingFailure
        assert history[1:] == [
            ConnectionStatus.InProcess,
            ConnectionStatus.EstablishPacketReceived,
            ConnectionStatus.Established,
        ]
        assert len(link.pings) == 1 and len(link.ping_responses) == responses  # no ping on the retry
        assert ec_se(link) == [1]
        no_crash(peer)


def test_the_peer_command_answers_pings_on_the_port_it_prints() -> None:
    import re
    import subprocess
    import sys

    command = [sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())"]
    args = ["peer", "--listen", "127.0.0.1:0", "--duration", "3", "--behaviour", "ping-refuse"]
    proc = subprocess.Popen([*command, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        m = re.search(r"as (\{[0-9A-F-]+\}), behaviour ping-refuse, pings on UDP port (\d+)$", first.strip())
        assert m, first
        raw = ping_exchange(("127.0.0.1", int(m.group(2))), request(5))
        assert raw is not None
        ping = packets.parse_ping(raw).headers.Ping
        assert ping.Flags.RF == 1 and GUID(ping.QMGuid) == GUID(m.group(1))
        proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0
