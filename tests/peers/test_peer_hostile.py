"""The simulated peer ([MS-MQQB] 3.1.5 acceptor) against hostile clients: one connection's work
never holds up another's replies, the read timeout bounds the time to complete a packet, the
details kept are bounded while everything is counted, and SIGTERM / SIGINT stop with a complete
summary (exit 3 when a packet was cut off)."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from peerkit import NormalSession, RawClient, ec_request, still_serves, user_message_bytes

from harness.peers import SimulatedPeer, reactor
from harness.peers import connections as peer_connections
from harness.session import SessionState, user_message

COMMAND = [sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())"]


class _GatedAcceptor(peer_connections.Acceptor):
    """An Acceptor whose handling of a read on a worker thread (one that completes more than
    INLINE_BYTES of packets) waits on a gate: a parse that takes as long as the test wants."""

    gate = threading.Event()
    entered = threading.Event()

    def receive_data(self, data: bytes) -> list[Any]:
        if ":parse_" in threading.current_thread().name:
            type(self).entered.set()
            type(self).gate.wait(30)
        return super().receive_data(data)


def test_a_connection_parsing_a_huge_packet_does_not_hold_up_another(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peer_connections, "Acceptor", _GatedAcceptor)
    _GatedAcceptor.gate.clear()
    _GatedAcceptor.entered.clear()
    with SimulatedPeer() as peer:
        big = user_message_bytes(peer.identifier, 1, b"\0" * (2 << 20))
        hostile = RawClient(peer.address)
        try:
            hostile.handshake(peer.identifier)
            hostile.send(big)
            assert _GatedAcceptor.entered.wait(10), "the big packet never reached the Acceptor"
            # While that packet is being handled, another initiator holds a whole session.
            still_serves(peer, "meanwhile")
            assert not _GatedAcceptor.gate.is_set()
        finally:
            _GatedAcceptor.gate.set()
        assert peer.wait_for(lambda: peer.totals.delivered >= 4, 10)  # the big one too, afterwards
        hostile.close()
        assert any(len(p.MessagePropertiesHeader.MessageBody) == 2 << 20 for p in peer.delivered)


class _OpenGatedAcceptor(peer_connections.Acceptor):
    """An Acceptor whose handling of a read in SessionState Open on the thread named ``where``
    waits on a gate: the packet is read and recorded, what the Acceptor makes of it not yet."""

    gate = threading.Event()
    entered = threading.Event()
    worker = False

    def receive_data(self, data: bytes) -> list[Any]:
        on_worker = ":parse_" in threading.current_thread().name
        if self.SessionState is SessionState.OPEN and on_worker == type(self).worker:
            type(self).entered.set()
            type(self).gate.wait(30)
        return super().receive_data(data)


@pytest.mark.parametrize("size", [100, 2 << 20], ids=["on-the-loop", "on-a-worker"])
def test_a_packet_read_is_never_seen_without_what_the_acceptor_made_of_it(
    monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """A snapshot shows a packet read with its delivery, or neither (a UserMessage seen on the wire
    but not yet in ``delivered`` once failed a conformant sender).  On the loop, a snapshot taken
    while the Acceptor handles the packet waits for the end of that event; on a worker, ``settled``
    is False from the moment the packet is recorded until its delivery is."""
    monkeypatch.setattr(peer_connections, "Acceptor", _OpenGatedAcceptor)
    monkeypatch.setattr(_OpenGatedAcceptor, "worker", size > reactor.INLINE_BYTES)
    _OpenGatedAcceptor.gate.clear()
    _OpenGatedAcceptor.entered.clear()
    with SimulatedPeer() as peer:
        client = RawClient(peer.address)
        try:
            client.handshake(peer.identifier)
            assert peer.wait_for(lambda: peer.settled, 5)
            client.send(user_message_bytes(peer.identifier, 1, b"\0" * size))
            assert _OpenGatedAcceptor.entered.wait(10)
            if size > reactor.INLINE_BYTES:  # read while the worker parses: unsettled, nothing delivered
                snap = peer.snapshot()
                directions = [d for c in snap.connections for d, _, _ in c.packets]
                assert directions == ["c2s", "s2c", "c2s", "s2c", "c2s"] and snap.delivered == []
                assert not snap.settled
            else:  # the snapshot waits for the end of the event: the packet and its delivery
                opens = threading.Timer(0.5, _OpenGatedAcceptor.gate.set)
                opens.start()
                snap = peer.snapshot()
                opens.join()
                directions = [d for c in snap.connections for d, _, _ in c.packets]
                assert directions.count("c2s") == 3 and len(snap.delivered) == 1 and snap.settled
        finally:
            _OpenGatedAcceptor.gate.set()
        snap = peer.settled_snapshot(10)
        assert snap.settled
        assert [len(p.MessagePropertiesHeader.MessageBody) for p in snap.delivered] == [size]
        client.close()


def test_the_read_timeout_bounds_the_time_to_complete_a_packet_not_the_gap_between_bytes() -> None:
    with SimulatedPeer(read_timeout=0.5) as peer:
        data = user_message_bytes(peer.identifier, 1, b"x" * 200)
        with RawClient(peer.address) as client:
            client.handshake(peer.identifier)
            sent = 0
            for byte in data[:-1]:  # one byte every 50 ms: each gap is well inside the timeout
                try:
                    client.send(bytes([byte]))
                except OSError:
                    break
                sent += 1
                if peer.wait_for(lambda: bool(peer.connections[0].closed), 0.05):
                    break
            assert peer.connections[0].closed_by == "read-timeout", peer.connections[0]
            assert sent < len(data) - 1
            assert "not complete 0.5 s after its first byte" in (peer.connections[0].error or "")


def test_history_keeps_the_latest_details_and_counts_everything() -> None:
    with SimulatedPeer(history=40) as peer:
        for n in range(3):
            s = NormalSession(peer, f"s{n}")
            try:
                s.deliver(30)
            finally:
                s.close()
        assert peer.wait_for(lambda: all(c.closed for c in peer.connections), 5)
        t = peer.totals
        assert (t.connections, t.delivered, t.violations) == (3, 90, 0)
        assert t.packets >= 3 * (4 + 30)  # EC and CP both ways, the messages
        conns = peer.connections
        kept = sum(len(c.packets) + len(c.delivered) + len(c.violations) for c in conns)
        assert kept <= 40
        assert sum(c.delivered_count for c in conns) == 90
        assert [len(c.delivered) for c in conns][-1] > 0  # the latest details are the ones kept


def test_history_bytes_bound_the_packet_bytes_kept() -> None:
    with SimulatedPeer(history_bytes=1 << 20) as peer:
        s = NormalSession(peer, "big")
        body = b"\xab" * (200 << 10)
        try:
            for n in range(12):  # 2.4 MB of bodies, each kept twice (packet and delivered message)
                s.link.send_message(user_message(s.client, peer.identifier, body + bytes([n])))
            assert s.link.run_until(lambda: peer.totals.delivered >= 12, 10)
        finally:
            s.close()
        conn = peer.connections[0]
        kept = sum(len(d) for _, d, _ in conn.packets) + sum(p.size for p in conn.delivered)
        assert kept <= 1 << 20
        assert conn.delivered_count == 12 and conn.byte_count > 12 * len(body)


def test_garbage_datagrams_are_counted_not_all_kept() -> None:
    with SimulatedPeer(history=20) as peer:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for n in range(200):
                s.sendto(b"garbage %d" % n, peer.ping_address)
                if n % 20 == 19:
                    peer.wait_for(lambda n=n: peer.totals.pings > n - 5, 1)
        assert peer.wait_for(lambda: peer.totals.pings >= 150, 5)  # loopback may drop a few
        assert len(peer.pings) == 20


def _start_peer(*extra: str) -> tuple[subprocess.Popen[str], tuple[str, int], str]:
    """``msmq-harness peer`` on an ephemeral loopback port: (process, address, identifier)."""
    proc = subprocess.Popen(
        [*COMMAND, "peer", "--listen", "127.0.0.1:0", "--duration", "60", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    m = re.match(r"listening on 127\.0\.0\.1:(\d+) as (\{[0-9A-F-]+\})", first)
    assert m, first
    return proc, ("127.0.0.1", int(m.group(1))), m.group(2)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_mid_packet_stops_with_a_complete_summary_and_exit_3(sig: signal.Signals) -> None:
    proc, address, _ = _start_peer()
    try:
        with RawClient(address) as client:
            client.send(ec_request())
            assert client.read(1)
            client.send(b"\x10\x00\xc0\x0b")  # the first bytes of a BaseHeader: a packet begun
            time.sleep(0.2)
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 3, (out, err)
    assert "closed by stopped (the peer stopped with 4 bytes of an unfinished packet)" in out
    assert re.search(r"^1 connections, 2 packets, 0 delivered, 0 violations$", out, re.M), out
    assert "stopped with an unfinished packet on connection 0" in out
    assert "Traceback" not in err


def test_a_signal_between_packets_stops_cleanly_with_exit_0() -> None:
    proc, address, _ = _start_peer()
    try:
        with RawClient(address) as client:
            client.send(ec_request())
            assert client.read(1)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0, (out, err)
    assert "1 connections, 2 packets" in out
