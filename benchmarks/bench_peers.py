"""Benchmark of the session layer on real sockets: express messages/s from initiator to simulated peer.

An :class:`harness.session.Initiator` driven by :class:`harness.peers.InitiatorLink` sends express
UserMessage Packets ([MS-MQQB] 3.1.7.1, window 64, SessionAck by count 3.1.5.8.2/3.1.6.4) over
loopback TCP to a :class:`harness.peers.SimulatedPeer`; the clock runs from the first
``send_message`` until the peer has delivered the last message.  The peer runs in a process of its
own (as ``msmq-harness peer`` does) and, second, in a thread of the sending process, where both
ends share one interpreter lock.  The same engines paired in memory (no sockets, no threads) give
the ceiling the socket edges are measured against.  ``python -m benchmarks.bench_peers [--quick]``
prints the rows as JSON; ``run(quick)`` returns them.
"""

from __future__ import annotations

import json
import multiprocessing
import sys
import time
from collections import deque
from typing import Any

from harness.peers import InitiatorLink, SimulatedPeer
from harness.session import Acceptor, Initiator, Send, user_message

CLIENT = "{11111111-2222-3333-4444-555555555555}"
SERVER = "{AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE}"


def _messages(count: int) -> list[Any]:
    return [user_message(CLIENT, SERVER, b"bench message %d" % n) for n in range(count)]


def loopback_rate(count: int) -> float:
    """Express messages/s, InitiatorLink -> SimulatedPeer over 127.0.0.1."""
    messages = _messages(count)
    with SimulatedPeer(identifier=SERVER) as peer:
        link = InitiatorLink(Initiator(CLIENT, SERVER), peer.address, timeout=10.0)

        def done() -> bool:
            connections = peer.connections
            return bool(connections) and len(connections[0].delivered) >= count

        t0 = time.perf_counter()
        for m in messages:
            link.send_message(m)
        ok = link.run_until(done, 120.0)
        elapsed = time.perf_counter() - t0
        link.close()
    if not ok:
        raise RuntimeError(f"only {len(peer.delivered)} of {count} messages delivered")
    return count / elapsed


def _serve(address: Any, delivered: Any, stop: Any) -> None:
    """The simulated peer in a process of its own; ``delivered`` mirrors its delivered count."""
    with SimulatedPeer(identifier=SERVER) as peer:
        address.send(peer.address)
        while not stop.is_set():
            connections = peer.connections
            delivered.value = sum(len(c.delivered) for c in connections)
            time.sleep(0.002)


def separate_process_rate(count: int) -> float:
    """Express messages/s with the peer in another process (no shared interpreter lock)."""
    messages = _messages(count)
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    delivered = ctx.Value("q", 0)
    stop = ctx.Event()
    proc = ctx.Process(target=_serve, args=(child, delivered, stop), daemon=True)
    proc.start()
    try:
        if not parent.poll(30.0):
            raise RuntimeError("the peer process did not start")
        address = parent.recv()
        link = InitiatorLink(Initiator(CLIENT, SERVER), address, timeout=10.0)
        t0 = time.perf_counter()
        for m in messages:
            link.send_message(m)
        ok = link.run_until(lambda: delivered.value >= count, 120.0)
        elapsed = time.perf_counter() - t0
        link.close()
    finally:
        stop.set()
        proc.join(10.0)
        if proc.is_alive():
            proc.kill()
    if not ok:
        raise RuntimeError(f"only {delivered.value} of {count} messages delivered")
    return count / elapsed


def in_memory_rate(count: int) -> float:
    """The same engines with Send.data handed across in memory: the ceiling without sockets."""
    messages = _messages(count)
    initiator, acceptor = Initiator(CLIENT, SERVER), Acceptor(SERVER)
    to_acceptor: deque[bytes] = deque()
    to_initiator: deque[bytes] = deque()

    def perform(queue: deque[bytes], actions: list[Any]) -> None:
        queue.extend(act.data for act in actions if isinstance(act, Send))

    t0 = time.perf_counter()
    for m in messages:
        initiator.send_message(m)  # queued until the session is OPEN
    acceptor.connection_made()
    perform(to_acceptor, initiator.connection_made())
    while to_acceptor or to_initiator:
        while to_acceptor:
            perform(to_initiator, acceptor.receive_data(to_acceptor.popleft()))
        while to_initiator:
            perform(to_acceptor, initiator.receive_data(to_initiator.popleft()))
    elapsed = time.perf_counter() - t0
    if len(acceptor.delivered) < count:
        raise RuntimeError(f"in memory: only {len(acceptor.delivered)} of {count} delivered")
    return count / elapsed


def run(quick: bool = False) -> list[dict[str, Any]]:
    count = 2_000 if quick else 20_000
    same_process = loopback_rate(count)
    other_process = separate_process_rate(count)
    memory = in_memory_rate(count)
    return [
        {
            "name": f"express messages, Initiator -> SimulatedPeer over loopback TCP, {count:,} messages",
            "unit": "messages/s",
            "peer_in_own_process": other_process,
            "peer_in_a_thread": same_process,
            "engines_in_memory": memory,
            "own_process_vs_in_memory": other_process / memory,
        }
    ]


if __name__ == "__main__":
    rows = run(quick="--quick" in sys.argv)
    for row in rows:
        print(row)
    print(json.dumps(rows, indent=2))
