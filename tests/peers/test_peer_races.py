"""What a reader of the simulated peer's records sees while its loop works: one state between two
events ([MS-MQQB] 2.1.1 connections, 3.1.5.9 closes), never half of one; a connection a fault
hangs on is settled (its packet will never be processed); ``sync`` takes in what reached the
peer's sockets however late the loop runs.  The loop is held at a chosen point by a gate, never by
a sleep: each test fails on a peer whose readers can see half an event."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

import pytest
from peerkit import RawClient, cp_request

from harness.peers import SimulatedPeer, reactor
from packets import StreamSplitter


class _GatedSplitter(StreamSplitter):
    """A splitter whose ``remainder`` (read by the peer while it closes a connection, between
    marking it closed and recording who closed it, on a peer that does both apart) waits on a
    gate once armed."""

    armed = threading.Event()
    entered = threading.Event()
    gate = threading.Event()

    def remainder(self) -> bytes:
        if type(self).armed.is_set():
            type(self).entered.set()
            type(self).gate.wait(30)
        return super().remainder()


def test_a_connection_its_client_closed_is_never_read_closed_by_nobody(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader that sees the connection closed sees who closed it (a client's close once read
    as closed by nobody counted as the acceptor's: ``wait_for: {closed: 1, by: acceptor}``)."""
    monkeypatch.setattr(reactor, "StreamSplitter", _GatedSplitter)
    for e in (_GatedSplitter.armed, _GatedSplitter.entered, _GatedSplitter.gate):
        e.clear()
    with SimulatedPeer() as peer:
        client = RawClient(peer.address)
        try:
            client.handshake(peer.identifier)
            _GatedSplitter.armed.set()
            client.close()
            assert _GatedSplitter.entered.wait(10)  # the loop is closing the connection
            opens = threading.Timer(0.5, _GatedSplitter.gate.set)  # bounds the reader's wait
            opens.start()
            seen = [(c.closed, c.closed_by) for c in peer.connections]
            opens.join()
        finally:
            _GatedSplitter.gate.set()
    assert seen == [(True, "client")]  # the reader waited for the end of the event


def test_a_packet_a_fault_hangs_on_leaves_the_peer_settled() -> None:
    """``hang-cp-when-open`` never processes the ConnectionParameters Packet it hangs on: nothing
    more will be recorded for it, so the peer is settled (it was unsettled for good: every
    ``then: peer`` check of such a case waited its whole bound)."""
    with SimulatedPeer(behaviour="hang-cp-when-open") as peer:
        client = RawClient(peer.address)
        try:
            client.handshake(peer.identifier)
            client.send(cp_request())
            assert peer.wait_for(lambda: sum(c.packet_count for c in peer.connections) == 5, 10)
            assert peer.wait_for(lambda: peer.settled, 10)
            (conn,) = peer.connections
            assert not conn.closed and conn.delivered_count == 0
        finally:
            client.close()


def test_sync_takes_in_a_connection_the_loop_has_not_accepted_yet(
    stall_peer_loop: Callable[[], tuple[threading.Event, threading.Event]],
) -> None:
    """A connection the kernel completed while the loop was held is the peer's once ``sync``
    returns, however long the loop was held (a sender that connected at once was once judged never
    to have connected because the loop had not accepted it yet)."""
    with SimulatedPeer() as peer:
        gate, held = stall_peer_loop()
        try:
            assert held.wait(10)
            with socket.create_connection(peer.address, timeout=5):  # the kernel completes it
                opens = threading.Timer(0.5, gate.set)
                opens.start()
                assert peer.sync(10)
                opens.join()
                assert len(peer.connections) == 1
        finally:
            gate.set()


def test_a_snapshot_copies_the_records_of_one_moment() -> None:
    """What a snapshot holds does not change as the peer goes on."""
    with SimulatedPeer() as peer:
        client = RawClient(peer.address)
        try:
            client.handshake(peer.identifier)
            assert peer.sync(10)
            snap = peer.snapshot()
            before = [len(c.packets) for c in snap.connections]
            client.send(cp_request())
            assert peer.sync(10)
            assert [len(c.packets) for c in snap.connections] == before
            assert [len(c.packets) for c in peer.snapshot().connections] != before
        finally:
            client.close()
