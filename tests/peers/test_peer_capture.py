"""Acceptance 5: what the SimulatedPeer records (``record=``) is a pcap with real TCP framing that
``msmq-harness decode`` and the passive Observer read back: the same bytes per direction, zero
violations for a clean run, and for a faulty run the violations the peer itself reported
([MS-MQQB] 2.1.1; the checks of 3.1.5.1-3.1.5.8 applied passively).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from peerkit import CLIENT, NormalSession, RawClient, cp_request, ec_request, user_message_bytes
from scapy.layers.inet import TCP
from scapy.utils import rdpcap

from harness.capture.streams import CaptureReading, capture_segments, capture_streams
from harness.cli import main
from harness.peers import InitiatorLink, SimulatedPeer
from harness.session import Initiator, SessionConfig, user_message

PEER_CONFIG = SessionConfig(order_ack_timeout=0.02, maximum_order_ack_delay=0.05)


def clean_run(tmp_path: Path) -> tuple[SimulatedPeer, Path]:
    pcap = tmp_path / "clean.pcap"
    with SimulatedPeer(config=PEER_CONFIG, record=pcap) as peer:
        session = NormalSession(peer, "clean")
        try:
            session.deliver(20)
        finally:
            session.close()
        initiator = Initiator(CLIENT, peer.identifier, config=SessionConfig(session_retry_connect=0.01))
        with InitiatorLink(initiator, peer.address) as link:
            for n in range(5):
                link.send_message(user_message(CLIENT, peer.identifier, b"t%d" % n), "transactional")
            assert link.run_until(lambda: len(link.acked) == 5, 10.0)  # OrderAck and SessionAck came back
        assert peer.wait_for(lambda: all(c.closed for c in peer.connections), 5.0)
    return peer, pcap


def faulty_run(tmp_path: Path) -> tuple[SimulatedPeer, Path]:
    pcap = tmp_path / "faulty.pcap"
    with SimulatedPeer(config=PEER_CONFIG, record=pcap) as peer:
        with RawClient(peer.address) as c:  # an EstablishConnection request with CS=1, then a session
            c.send(ec_request(cs=True))
            c.read(1)
            c.send(cp_request())
            c.read(1)
            c.send(user_message_bytes(peer.identifier, 1, b"x"))
            assert peer.wait_for(lambda: len(peer.delivered) == 1, 5.0)
        with RawClient(peer.address) as c:  # a UserMessage before any EstablishConnection
            c.send(user_message_bytes(peer.identifier, 2, b"y"))
            assert c.wait_eof(5.0)
        assert peer.wait_for(lambda: len(peer.connections) == 2 and all(c.closed for c in peer.connections), 5.0)
    return peer, pcap


def recorded_stream(peer: SimulatedPeer, index: int, direction: str) -> bytes:
    return b"".join(data for d, data, _ in peer.connections[index].packets if d == direction)


def decode_json(pcap: Path, port: int, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, list[Any]]:
    rc = main(["decode", "--json", "--ports", str(port), *extra, str(pcap)])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    return rc, lines


def observe(pcap: Path, port: int) -> dict[int, list[Any]]:
    """Feed every flow of the capture, in capture order, to its own passive Observer."""
    from harness.session import Observer  # type: ignore[attr-defined]

    observers: dict[int, Any] = {}
    for _, seg in capture_segments(pcap, {port}, CaptureReading()):
        client_port = seg.sport if seg.dport == port else seg.dport
        obs = observers.setdefault(client_port, Observer())
        if seg.payload:
            (obs.client_data if seg.dport == port else obs.server_data)(seg.payload)
    found: dict[int, list[Any]] = {}
    for client_port, obs in observers.items():
        obs.end()
        found[client_port] = list(obs.violations)
    return found


def test_recorded_pcap_has_tcp_framing_and_the_bytes_that_crossed(tmp_path: Path) -> None:
    peer, pcap = clean_run(tmp_path)
    port = peer.address[1]
    frames = rdpcap(str(pcap))
    for conn in peer.connections:
        flow = [f[TCP] for f in frames if conn.client[1] in (f[TCP].sport, f[TCP].dport)]
        assert [str(t.flags) for t in flow[:3]] == ["S", "SA", "A"]
        assert [str(t.flags) for t in flow[-3:]] == ["FA", "FA", "A"]
        syn, synack = flow[0], flow[1]
        assert synack.ack == syn.seq + 1
        next_seq = {conn.client[1]: syn.seq + 1, port: synack.seq + 1}
        for t in flow[2:]:
            assert t.seq == next_seq[t.sport], "a gap or overlap in the sequence space"
            assert t.ack == next_seq[t.dport]
            next_seq[t.sport] += len(bytes(t.payload)) + (1 if "F" in str(t.flags) else 0)
    streams = list(capture_streams(pcap, {port}))
    assert len(streams) == 2 * len(peer.connections)
    for n, conn in enumerate(peer.connections):
        client, server = streams[2 * n], streams[2 * n + 1]
        assert not client.gaps and not server.gaps and not client.problems and not server.problems
        assert b"".join(data for _, data in client.pieces) == recorded_stream(peer, conn.index, "c2s")
        assert b"".join(data for _, data in server.pieces) == recorded_stream(peer, conn.index, "s2c")


def test_clean_run_decodes_without_violations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    peer, pcap = clean_run(tmp_path)
    rc, lines = decode_json(pcap, peer.address[1], capsys, "--fail-on-violation")
    assert rc == 0
    packets_out = [r for r in lines if "kind" in r]
    assert len(packets_out) == sum(len(c.packets) for c in peer.connections) == len(lines)
    assert not [r for r in packets_out if r.get("violations")]
    kinds = {r["kind"] for r in packets_out}
    assert {"EstablishConnection", "ConnectionParameters", "UserMessage", "SessionAck", "OrderAck"} <= kinds


def test_faulty_run_decodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    peer, pcap = faulty_run(tmp_path)
    rc, lines = decode_json(pcap, peer.address[1], capsys)
    assert rc == 0
    assert len([r for r in lines if "kind" in r]) == sum(len(c.packets) for c in peer.connections)
    first = next(r for r in lines if r.get("kind") == "EstablishConnection")
    assert first["InternalHeader"]["Flags"]["CS"] == 1
    assert [v.rule_id for _, v in peer.violations] == ["MQQB-3.1.5.2.3-ec-request", "MQQB-3.1.5.8-wrong-state"]


def test_observer_finds_nothing_in_a_clean_run(tmp_path: Path) -> None:
    peer, pcap = clean_run(tmp_path)
    found = observe(pcap, peer.address[1])
    assert set(found) == {c.client[1] for c in peer.connections}
    assert found == {port: [] for port in found}


def test_observer_finds_what_the_peer_reported_in_a_faulty_run(tmp_path: Path) -> None:
    peer, pcap = faulty_run(tmp_path)
    found = observe(pcap, peer.address[1])
    for conn in peer.connections:
        expected = {(v.rule_id, v.section) for v in conn.violations}
        observed = {(v.rule_id, v.section) for v in found[conn.client[1]]}
        assert expected and expected <= observed, (conn.index, expected, observed)


def test_link_and_peer_recordings_agree_on_every_connection(tmp_path: Path) -> None:
    peer_pcap, link_pcap = tmp_path / "peer.pcap", tmp_path / "link.pcap"
    with SimulatedPeer(behaviour="close-after-50", config=PEER_CONFIG, record=peer_pcap) as peer:
        initiator = Initiator(CLIENT, peer.identifier, config=SessionConfig(session_retry_connect=0.01))
        with InitiatorLink(initiator, peer.address, record=link_pcap) as link:
            for n in range(100):  # the peer acknowledges every 32 and closes after 50 packets
                link.send_message(user_message(CLIENT, peer.identifier, b"r%d" % n))
            assert link.run_until(lambda: len(peer.delivered) == 100, 10.0)
        assert peer.wait_for(lambda: all(c.closed for c in peer.connections), 5.0)
    port = peer.address[1]
    by_peer = {s.name: b"".join(d for _, d in s.pieces) for s in capture_streams(peer_pcap, {port})}
    by_link = {s.name: b"".join(d for _, d in s.pieces) for s in capture_streams(link_pcap, {port})}
    assert list(by_link) == list(by_peer)
    assert len(by_peer) == 2 * len(peer.connections) >= 4  # the peer closed and the link reconnected
    for name, peer_bytes in by_peer.items():
        # each end records what it wrote and what it read: a connection the acceptor closed may
        # leave bytes written by one end and never read by the other
        written, read = (by_link[name], peer_bytes) if name.endswith("client") else (peer_bytes, by_link[name])
        assert written.startswith(read) and read, name


def test_observer_finds_the_acceptor_fault_the_link_saw(tmp_path: Path) -> None:
    pcap = tmp_path / "bad-padding.pcap"
    with SimulatedPeer(behaviour="bad-padding", config=PEER_CONFIG, record=pcap) as peer:
        initiator = Initiator(CLIENT, peer.identifier, config=SessionConfig(session_retry_connect=0.01))
        with InitiatorLink(initiator, peer.address) as link:
            link.send_message(user_message(CLIENT, peer.identifier, b"p"))
            assert link.run_until(lambda: len(peer.delivered) == 1, 5.0)
        assert peer.wait_for(lambda: all(c.closed for c in peer.connections), 5.0)
    assert [v.rule_id for v in link.violations] == ["MQQB-2.2.3.1-response-padding"]
    assert peer.violations == []  # the initiator did nothing wrong
    (observed,) = observe(pcap, peer.address[1]).values()
    assert [v.rule_id for v in observed] == ["MQQB-2.2.3.1-response-padding"]
