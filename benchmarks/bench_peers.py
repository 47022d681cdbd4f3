"""Benchmark of the session layer on real sockets: express messages/s from initiator to simulated peer.

An :class:`harness.session.Initiator` driven by :class:`harness.peers.InitiatorLink` sends express
UserMessage Packets ([MS-MQQB] 3.1.7.1, window 64, SessionAck by count 3.1.5.8.2/3.1.6.4) over
loopback TCP to a :class:`harness.peers.SimulatedPeer`; the clock runs from the first
``send_message`` until the peer has delivered the last message.  The peer runs in a process of its
own (as ``msmq-harness peer`` does) and, second, in a thread of the sending process, where both
ends share one interpreter lock.  The same engines paired in memory (no sockets, no threads) give
the ceiling the socket edges are measured against.  ``python -m benchmarks.bench_peers [--quick]``
prints the rows as JSON; ``run(quick)`` returns them; ``--profile`` prints :func:`profile_ours`.

Sender CPU (:func:`cpu_per_message`): ours against an independent sender written with ``socket``
and ``struct`` only (:func:`stdlib_send`), the same bodies, the same bytes on the wire.  What ours
still spends per express message (20,000 messages, 2-core machine, Python 3.11; the engine alone
measured in memory against SessionAcks by count, the rest by difference): about 1.3 us queueing
(``send_bodies``: an OutgoingMessagePosition, the UserMessage from the template's bytes with
PacketSize, MessageID, MessageSize and AllocationBodySize written in, 0.6 us of it; the table and
the dispatch collection), 1.4 us for [MS-MQQB] 3.1.7.1 (sequence numbers, AwaitingAck, the Session
Ack Wait Timer, the piggy-back test of 3.1.7.11, a ``Send`` action per packet), 1.3 us for the
SessionAcks (one per 32 messages: the packet parsed and its rules checked, 3.1.5.5.1-3.1.5.5.5,
each message marked and deleted, an ``Acked`` action), and 2-3 us in the link (performing the
actions, the packet log, select/recv/send on the socket, which the stdlib sender pays too).  Each
is a handful of Python object operations per message that the spec's bookkeeping needs and a
hand-rolled loop over a byte buffer does not keep (the stdlib sender keeps no table, no timers, no
per-message state); ``send_message`` with headers per message adds a private copy of the headers
and their generic encoding (``packets.build``), about 10 us, and the collector's work on them.
"""

from __future__ import annotations

import json
import multiprocessing
import select
import socket
import struct
import sys
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any

import packets
from benchmarks import messages as hand
from benchmarks.messages import sized_user_message
from harness.peers import InitiatorLink, SimulatedPeer
from harness.session import Acceptor, Initiator, Send, user_message
from harness.session.messages import MessageTemplate
from packets import GUID, StreamSplitter
from packets import session as sp

CLIENT = "{11111111-2222-3333-4444-555555555555}"
SERVER = "{AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE}"
_TIMEOUTS = (sp.RECOVERABLE_ACK_TIMEOUT_RANGE[0], sp.ACK_TIMEOUT_RANGE[0])


def _messages(count: int) -> list[Any]:
    return [user_message(CLIENT, SERVER, b"bench message %d" % n) for n in range(count)]


def loopback_rate(count: int) -> float:
    """Express messages/s, InitiatorLink -> SimulatedPeer over 127.0.0.1."""
    messages = _messages(count)
    with SimulatedPeer(identifier=SERVER) as peer:
        link = InitiatorLink(Initiator(CLIENT, SERVER), peer.address, timeout=10.0)

        def done() -> bool:
            connections = peer.connections
            return bool(connections) and connections[0].delivered_count >= count

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
            delivered.value = peer.totals.delivered
            time.sleep(0.002)


class _PeerProcess:
    """``_serve`` in a spawned process: its address, delivered count and resident memory."""

    def __enter__(self) -> _PeerProcess:
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        self.delivered = ctx.Value("q", 0)
        self.stop = ctx.Event()
        self.proc = ctx.Process(target=_serve, args=(child, self.delivered, self.stop), daemon=True)
        self.proc.start()
        if not parent.poll(30.0):
            raise RuntimeError("the peer process did not start")
        self.address = parent.recv()
        return self

    def rss_mib(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            kib = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        return kib / 1024

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.proc.join(10.0)
        if self.proc.is_alive():
            self.proc.kill()


def _round_trip(address: Any) -> float:
    """Seconds from an EstablishConnection request to its response on a new connection."""
    t = time.perf_counter()
    with socket.create_connection(address, timeout=60) as s:
        s.sendall(packets.build(sp.establish_connection(GUID(CLIENT), GUID(SERVER), 1)))
        splitter = StreamSplitter()
        while not splitter.feed(s.recv(4096)):
            pass
    return time.perf_counter() - t


def fairness(quick: bool) -> dict[str, Any]:
    """Another connection's EstablishConnection round trip while one connection sends the costliest
    packet there is (4 MiB of MultiQueueFormatHeader Direct elements), against the same round trip
    on an idle peer."""
    data = sized_user_message(1 << 20 if quick else 4 << 20, "mqf-direct")
    with _PeerProcess() as peer:
        idle = sorted(_round_trip(peer.address) for _ in range(20))
        hostile = socket.create_connection(peer.address, timeout=30)
        hostile.sendall(packets.build(sp.establish_connection(GUID(CLIENT), GUID(SERVER), 2)))
        hostile.recv(4096)
        hostile.sendall(packets.build(sp.connection_parameters(*_TIMEOUTS, 64)))
        hostile.recv(4096)
        busy: list[float] = []
        for _ in range(3):
            hostile.sendall(data)
            end = time.perf_counter() + 1.0
            while time.perf_counter() < end:
                busy.append(_round_trip(peer.address))
        hostile.close()
    return {
        "name": f"EstablishConnection round trip while another connection sends {len(data):,} B packets",
        "competitor": "the same round trip on an idle peer",
        "unit": "ms",
        "worst_while_parsing": 1000 * max(busy),
        "median_while_parsing": 1000 * sorted(busy)[len(busy) // 2],
        "median_idle": 1000 * idle[len(idle) // 2],
    }


def long_run_memory(quick: bool) -> dict[str, Any]:
    """The peer process's resident memory after sessions of many messages each: the history keeps
    the last 10,000 details, the MessageIDHistoryTable ([MS-MQQB] 3.1.1.3) the last 65,536 ids,
    so it levels off once both are full."""
    sessions, per_session = (5, 500) if quick else (50, 2000)
    with _PeerProcess() as peer:
        start = peer.rss_mib()
        samples = []
        for n in range(sessions):
            client = f"{{11111111-2222-3333-4444-{n:012d}}}"
            link = InitiatorLink(Initiator(client, SERVER), peer.address, timeout=10.0)
            goal = (n + 1) * per_session
            for m in range(per_session):
                link.send_message(user_message(client, SERVER, b"long run %d" % m))
            if not link.run_until(lambda g=goal: peer.delivered.value >= g, 120.0):
                raise RuntimeError(f"only {peer.delivered.value} of {goal} delivered")
            link.close()
            samples.append(peer.rss_mib())
    return {
        "name": f"peer resident memory, {sessions} sessions x {per_session:,} messages",
        "competitor": "the peer at start",
        "unit": "MiB",
        "at_start": start,
        "after_first_tenth": samples[max(0, sessions // 10 - 1)],
        "at_half": samples[sessions // 2 - 1],
        "at_end": samples[-1],
    }


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


# --- an independent sender: socket and struct only ----------------------------------------------

_SESSION_ACK = struct.Struct("<BBHLLLHHHHLHHHH")  # BaseHeader, InternalHeader, SessionHeader ([MS-MQQB] 2.2.6)


def _guid_le(text: str) -> bytes:
    return uuid.UUID(text).bytes_le


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        more = sock.recv(n - len(data))
        if not more:
            raise RuntimeError("stdlib sender: the peer closed the connection")
        data += more
    return data


def _stdlib_user_message(source: bytes, destination: bytes, message_id: int, body: bytes) -> bytes:
    """What :func:`harness.session.user_message` describes, encoded by hand ([MS-MQMQ] 2.2.19-2.2.20):
    BaseHeader PR 3, TimeToReachQueue INFINITE; UserHeader DQ 0x3 (PrivateQueueIdentifier 1), MP;
    MessagePropertiesHeader of a normal message (SHA1, RC4), no label."""
    user = source + destination + struct.pack("<LLLLL", 0xFFFFFFFF, 0, message_id, (3 << 10) | (1 << 21), 1)
    props = struct.pack("<BBH20sLLLLLLLL", 0, 0, 0, bytes(20), 0, 0, len(body), len(body), 0, 0x8004, 0x6801, 0)
    props += body + bytes(-len(body) % 4)
    size = 16 + len(user) + len(props)
    return hand.base_header(0x0003, size, 0xFFFFFFFF) + user + props


def stdlib_send(address: Any, bodies: list[bytes], delivered: Callable[[], bool], timeout: float = 120.0) -> None:
    """An independent express sender written with ``socket`` and ``struct`` only: the
    EstablishConnection ([MS-MQQB] 2.2.3, 3.1.5.2.3) and ConnectionParameters (2.2.2, 3.1.5.3.2)
    handshake, then one UserMessage per body, MessageIDs 1, 2, ..., as many unacknowledged as the
    window allows (3.1.7.1: the smaller of ours and the acceptor's WindowSize), the window moved by
    each SessionAck's AckSequenceNumber (2.2.6, 3.1.5.5), until ``delivered()``."""
    client, server = _guid_le(CLIENT), _guid_le(SERVER)
    with socket.create_connection(address, timeout=timeout) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        ec = client + server + struct.pack("<LHH", 0, 0x0110, 0) + b"\x5a" * 512  # RE 0x10, SE 1
        sock.sendall(hand.base_header(0x000B, 572) + struct.pack("<HH", 0, 2) + ec)
        reply = _recv_exact(sock, 572)
        if reply[20:36] != client or struct.unpack_from("<H", reply, 18)[0] & 0x10:  # InternalHeader.Flags.CS
            raise RuntimeError("stdlib sender: EstablishConnection refused")
        sock.sendall(hand.connection_parameters())
        reply = _recv_exact(sock, 32)
        window = max(1, min(64, struct.unpack_from("<H", reply, 30)[0]))
        sock.setblocking(False)
        pending, received = bytearray(), bytearray()
        sent = acked = 0
        deadline = time.monotonic() + timeout
        while not delivered():
            if time.monotonic() > deadline:
                raise RuntimeError(f"stdlib sender: {acked} of {len(bodies)} acknowledged")
            room = min(window - (sent - acked), len(bodies) - sent)
            for _ in range(max(0, room)):
                pending += _stdlib_user_message(client, server, sent + 1, bodies[sent])
                sent += 1
            while pending:
                try:
                    n = sock.send(pending)
                except BlockingIOError:
                    break
                del pending[:n]
            readable, _, _ = select.select([sock], [sock] if pending else [], [], 0.05)
            if readable:
                data = sock.recv(1 << 16)
                if not data:
                    raise RuntimeError("stdlib sender: the peer closed the connection")
                received += data
                while len(received) >= 16:  # BaseHeader.PacketSize frames each packet
                    size = struct.unpack_from("<L", received, 8)[0]
                    if len(received) < size:
                        break
                    fields = _SESSION_ACK.unpack_from(received) if size == _SESSION_ACK.size else ()
                    if fields and fields[2] & 0x8 and fields[7] & 0xF == 1:  # IN, InternalHeader PT 1
                        ack = fields[8]  # SessionHeader.AckSequenceNumber
                        acked += (ack - acked) % 0x10000
                    del received[:size]
        if pending:
            raise RuntimeError("stdlib sender: unsent bytes")


def _ours(address: Any, count: int, delivered: Callable[[], bool], bodies: list[bytes] | None) -> float:
    """CPU seconds of ours sending ``count`` express messages until ``delivered()``: the bodies
    through one :class:`MessageTemplate` (``send_bodies``), or, with ``bodies`` None, packet headers
    made beforehand, one ``send_message`` each."""
    link = InitiatorLink(Initiator(CLIENT, SERVER), address, timeout=10.0)
    headers = _messages(count) if bodies is None else []
    t0 = time.process_time()
    if bodies is not None:
        link.send_bodies(MessageTemplate(user_message(CLIENT, SERVER)), bodies)
    for message in headers:
        link.send_message(message)
    ok = link.run_until(delivered, 120.0)
    cpu = time.process_time() - t0
    link.close()
    if not ok:
        raise RuntimeError(f"ours: not all {count} messages were delivered")
    return cpu


def cpu_per_message(count: int) -> dict[str, Any]:
    """CPU seconds per express message of the sending process (``time.process_time``), ours
    (Initiator + InitiatorLink) against :func:`stdlib_send`, each sending the same ``count``
    messages to a SimulatedPeer in its own process, from the first message until the peer has
    delivered the last, the better of two runs each.  Ours takes what the stdlib sender takes,
    the bodies, through a :class:`MessageTemplate` (``ours``); ``ours_send_message`` is ours
    given a packet's headers per message (``send_message``: a private copy and a full encoding
    of each)."""
    bodies = [b"bench message %d" % n for n in range(count)]
    first = user_message(CLIENT, SERVER, bodies[0], message_id=1)
    stdlib_bytes = _stdlib_user_message(_guid_le(CLIENT), _guid_le(SERVER), 1, bodies[0])
    template = MessageTemplate(user_message(CLIENT, SERVER))
    if (
        packets.build(first) != stdlib_bytes
        or template.codec is None
        or template.codec.build(1, bodies[0]) != stdlib_bytes
    ):
        raise RuntimeError("the stdlib sender and ours would not send the same UserMessage")
    results: dict[str, float] = {}

    def best(name: str, cpu: float) -> None:
        results[name] = min(results.get(name, float("inf")), cpu)

    for _ in range(2):
        for name, given in (("ours", bodies), ("ours_send_message", None)):
            with _PeerProcess() as peer:
                best(name, _ours(peer.address, count, lambda p=peer: p.delivered.value >= count, given))
        with _PeerProcess() as peer:
            t0 = time.process_time()
            stdlib_send(peer.address, bodies, lambda: peer.delivered.value >= count)
            best("stdlib", time.process_time() - t0)
    return {
        "name": f"sender CPU per express message, -> SimulatedPeer in its own process, {count:,} messages",
        "competitor": "a sender written with the standard library's socket and struct",
        "unit": "us CPU per message",
        "ours": 1e6 * results["ours"] / count,
        "stdlib_sender": 1e6 * results["stdlib"] / count,
        "ours_vs_stdlib": results["ours"] / results["stdlib"],
        "ours_send_message": 1e6 * results["ours_send_message"] / count,
    }


def profile_ours(count: int, top: int = 25) -> str:
    """The ``ours`` half of :func:`cpu_per_message` under cProfile on CPU time: the functions by
    their own time (``python -m benchmarks.bench_peers --profile``)."""
    import cProfile
    import io
    import pstats

    bodies = [b"bench message %d" % n for n in range(count)]
    profile = cProfile.Profile(time.process_time)
    with _PeerProcess() as peer:
        profile.enable()
        _ours(peer.address, count, lambda: peer.delivered.value >= count, bodies)
        profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


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
        cpu_per_message(count),
        fairness(quick),
        long_run_memory(quick),
        {
            "name": f"express messages, Initiator -> SimulatedPeer over loopback TCP, {count:,} messages",
            "competitor": "the same engines exchanging bytes in memory",
            "unit": "messages/s",
            "peer_in_own_process": other_process,
            "peer_in_a_thread": same_process,
            "engines_in_memory": memory,
            "own_process_vs_in_memory": other_process / memory,
        },
    ]


if __name__ == "__main__":
    if "--profile" in sys.argv:
        print(profile_ours(2_000 if "--quick" in sys.argv else 20_000))
        sys.exit(0)
    rows = run(quick="--quick" in sys.argv)
    for row in rows:
        print(row)
    print(json.dumps(rows, indent=2))
