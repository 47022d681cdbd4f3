"""harness.peers.scapy_session.ScapySession against the SimulatedPeer on loopback: the engine
establishes the session ([MS-MQQB] 3.1.5.2-3.1.5.4), crafted layers go out as crafted, the peer's
packets come back as MSMQ layers, the engine's findings are ``violations``; every wait is bounded."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from scapy.compat import raw
from scapy.utils import rdpcap

from harness.peers import SimulatedPeer
from harness.peers.scapy_session import ScapySession, ScapySessionError
from harness.session import SessionState, user_message
from packets import GUID
from packets.scapy_layers import MSMQ
from packets.scapy_stream import MSMQSession, msmq_layers

CLIENT = GUID("{11111111-2222-3333-4444-555555555555}")


def message(peer: SimulatedPeer, message_id: int, body: bytes = b"x") -> MSMQ:
    return MSMQ(
        UserHeader={
            "MessageID": message_id,
            "SourceQueueManager": CLIENT,
            "QueueManagerAddress": peer.identifier,
            "DestinationQueue": {"PrivateQueueIdentifier": 1},
        },
        MessagePropertiesHeader={"MessageBody": body},
    )


def test_crafted_messages_are_acknowledged_without_findings() -> None:
    with SimulatedPeer(time_scale=0.05) as peer, ScapySession(peer.address, identifier=CLIENT) as s:
        assert s.state is SessionState.OPEN and not s.closed
        assert s.engine.RemoteQMGuid == peer.identifier  # named by the EstablishConnection response
        sent = s.send(message(peer, 1, b"one"))
        assert sent == raw(message(peer, 1, b"one"))
        s.send(message(peer, 2, b"two"))
        ack = s.recv(timeout=5)
        assert ack is not None and ack.kind == "SessionAck"
        while ack.SessionHeader.AckSequenceNumber < 2:
            ack = s.recv(timeout=5)
            assert ack is not None
        assert s.violations == []  # the counts of the crafted messages were kept
        assert peer.wait_for(lambda: len(peer.delivered) == 2, 5)
        assert [p.MessagePropertiesHeader.MessageBody for p in peer.delivered] == [b"one", b"two"]
        assert peer.violations == []
        kinds = [p.kind for p in s.received()]
        assert kinds[:2] == ["EstablishConnection", "ConnectionParameters"]
        assert set(kinds[2:]) == {"SessionAck"}


def test_sr1_and_messages_through_the_engine() -> None:
    with SimulatedPeer(time_scale=0.05) as peer, ScapySession(peer.address, identifier=CLIENT) as s:
        reply = s.sr1(message(peer, 100), timeout=5)  # not a MessageID the engine will use
        assert reply is not None and reply.SessionHeader.AckSequenceNumber == 1
        message_id = s.send_message(user_message(CLIENT, peer.identifier, b"engine"), "recoverable")
        assert message_id != 0
        s.wait(0.2)
        assert s.link.run_until(lambda: message_id in s.link.acked, 5)
        assert peer.wait_for(lambda: len(peer.delivered) == 2, 5)
        assert s.violations == [] and peer.violations == []


def test_a_wrong_field_is_the_peers_violation_and_closes() -> None:
    with SimulatedPeer(time_scale=0.05) as peer, ScapySession(peer.address, identifier=CLIENT) as s:
        bad = message(peer, 1)
        bad.UserHeader.Flags.RC = 0x1F  # MUST be in 0x00-0x1D ([MS-MQMQ] 2.2.19.2)
        assert [v.field_path for v in bad.violations] == ["UserHeader.Flags.RC"]
        s.send(bad)
        assert s.recv(timeout=5) is None
        assert s.closed
        assert peer.wait_for(lambda: len(peer.violations) == 1, 5)
        assert "UserHeader.Flags.RC" in peer.violations[0][1].evidence
        with pytest.raises(ScapySessionError):
            s.send(message(peer, 2))


def test_the_peers_faults_are_the_engines_violations() -> None:
    with SimulatedPeer(behaviour="bad-version", time_scale=0.05) as peer:
        s = ScapySession(peer.address, identifier=CLIENT, connect=False)
        with s, pytest.raises(ScapySessionError):
            s.connect(timeout=5)
        assert s.violations and "VersionNumber" in s.violations[0].evidence


def test_refused_and_unreachable_sessions_fail_within_the_timeout() -> None:
    with SimulatedPeer(behaviour="refuse", time_scale=0.05) as peer, pytest.raises(ScapySessionError):
        ScapySession(peer.address, identifier=CLIENT, timeout=5)
    with SimulatedPeer() as peer:
        address = peer.address
    start = time.monotonic()
    with pytest.raises(ScapySessionError):
        ScapySession(address, timeout=2)
    assert time.monotonic() - start < 5


def test_recv_is_bounded() -> None:
    with SimulatedPeer() as peer, ScapySession(peer.address) as s:  # timers at full length: no SessionAck
        start = time.monotonic()
        assert s.recv(timeout=0.3) is None
        assert time.monotonic() - start < 2


def test_recorded_session_reads_back_as_whole_layers(tmp_path: Path) -> None:
    """Packets larger than the recorder's 32 KiB segments come back whole, from rdpcap and sniff."""
    pcap = tmp_path / "big.pcap"
    bodies = [bytes([n]) * size for n, size in enumerate((10, 100_000, 70_001, 5))]
    with SimulatedPeer(time_scale=0.05, record=pcap) as peer:
        with ScapySession(peer.address, identifier=CLIENT) as s:
            for n, body in enumerate(bodies, 1):
                s.send(message(peer, n, body))
            assert peer.wait_for(lambda: len(peer.delivered) == len(bodies), 10)
        assert peer.wait_for(lambda: all(c.closed for c in peer.connections), 5)
        recorded = [data for _, data, _ in peer.connections[0].packets]
    port = peer.address[1]
    layers = list(msmq_layers(rdpcap(str(pcap)), ports={port}))
    assert [raw(layer) for layer in layers] == recorded
    got = [layer.MessagePropertiesHeader.MessageBody for layer in layers if layer.kind == "UserMessage"]
    assert got == bodies
    assert all(layer.flow[3] == port or layer.flow[1] == port for layer in layers)
    from scapy.sendrecv import sniff

    seen: list[str] = []
    sniffed = sniff(offline=str(pcap), session=MSMQSession(ports={port}), prn=lambda p: seen.append(p.kind))
    assert [raw(p) for p in sniffed] == recorded
    assert seen == [layer.kind for layer in layers]
