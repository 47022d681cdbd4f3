"""A live-peer client: drives the sans-IO :class:`harness.session.Initiator` over a real TCP socket.

Renders the transport side of [MS-MQQB] 2.1.1 (one TCP connection per protocol session) for the
initiator: the ``Connect`` action opens the connection (3.1.5.2): first 3.1.5.2.1 Resolve Host
Address, ``socket.getaddrinfo`` on the destinationHostName of the action's address (the link's own
address when the action names none), a name that resolves to no address being the engine's
``resolve_host_address_failed`` (DnsFailure); then the TCP connect, a failure of which is reported
to the engine as SocketConnectFailure; ``Send`` writes one packet, ``Close`` ends the connection
(3.1.5.9), a connection closed by the acceptor is the engine's ``connection_lost`` (3.1.7.3), and
the timers of 3.1.2 run on ``time.monotonic``.  Everything runs in the caller's thread.

Ping ([MS-MQQB] 2.1.2, 3.1.5.2.2): a ``SendPing`` action goes out as a UDP datagram to the
acceptor's ping address (by default UDP port 3527 of the acceptor's host, as 2.1.2 says), from an
ephemeral port the link keeps listening on; each datagram that comes back is handed to the
engine's ``ping_response`` (3.1.7.8), which starts the connection or records PingFailure.

Transport: a plain non-blocking ``socket`` with ``packets.StreamSplitter`` framing, not scapy's
``StreamSocket``.  ``StreamSocket.recv`` peeks a buffer, dissects all of it with the ``MSMQ``
layer and consumes what it dissected, so when one read holds a whole packet and the start of the
next, the partial packet is swallowed as a trailing layer and lost; and a hostile
BaseHeader.PacketSize leaves it buffering for ever.  The engine also needs the bytes, not layers.
"""

from __future__ import annotations

import select
import selectors
import socket
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.peers.recorder import PcapRecorder, TcpFlow
from harness.session import (
    Acked,
    CancelTimer,
    Close,
    Connect,
    Deliver,
    DeliveryClass,
    Initiator,
    RuleViolation,
    Send,
    SendPing,
    StartTimer,
)
from harness.session.initiator import destination_host_name
from harness.session.messages import MessageTemplate
from packets import Packet, PacketError, StreamSplitter
from packets.session import PING_PORT

__all__ = ["InitiatorLink", "LinkError"]

RECV_SIZE = 1 << 18


class LinkError(HarnessError):
    """The link was given an unusable address or used after close."""


def parse_address(address: tuple[str, int] | str) -> tuple[str, int]:
    """``(host, port)``, ``"host:port"``, ``"[v6]:port"`` or ``"mqqb://host:port"`` as (host, port)."""
    if isinstance(address, tuple):
        return str(address[0]), int(address[1])
    text = address.removeprefix("mqqb://").rstrip("/")
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise LinkError(f"address {address!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


class InitiatorLink:
    """Performs an :class:`Initiator`'s actions on a TCP socket (see the module docstring).

    ``perform(actions)`` carries out what an engine call returned; ``send_message``,
    ``send_bodies`` (many bodies of one :class:`~harness.session.messages.MessageTemplate`) and
    ``start`` are shortcuts.  ``run_until(predicate, timeout)`` moves bytes and fires timers until
    the predicate holds.  Kept: ``packets`` ((direction "c2s"/"s2c", bytes, wall-clock time) per
    packet), ``acked`` (MessageIDs), ``delivered`` (packets the acceptor sent that the engine
    delivered), ``violations`` (the acceptor's rule breaks the engine saw), ``closes``,
    ``connections`` (how many were opened), ``pings`` (the Ping Requests sent, to
    ``ping_address``) and ``ping_responses`` (the datagrams that came back).  ``record`` writes
    every connection as a pcap with TCP framing (:class:`harness.peers.recorder.PcapRecorder`); a
    write to it that fails never changes the session: the file is cut back to its last whole frame,
    no more is written, and ``record_error`` says why (naming the path).
    """

    def __init__(
        self,
        initiator: Initiator,
        address: tuple[str, int] | str,
        *,
        timeout: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        record: str | Path | None = None,
        ping_address: tuple[str, int] | str | None = None,
    ) -> None:
        self.initiator = initiator
        self.address = parse_address(address)
        self.ping_address = parse_address(ping_address) if ping_address is not None else (self.address[0], PING_PORT)
        self.timeout = timeout
        self.clock = clock
        initiator.clock = clock
        self.packets: list[tuple[str, bytes, float]] = []
        self.acked: list[int] = []
        self.delivered: list[Packet] = []
        self.violations: list[RuleViolation] = []
        self.closes: list[Close] = []
        self.pings: list[bytes] = []
        self.ping_responses: list[bytes] = []
        self.ping_errors: list[str] = []
        self._udp: socket.socket | None = None
        self.connections = 0
        self.connect_errors: list[str] = []
        self.resolve_errors: list[str] = []
        self._connect_to = ""  # the address of the pending Connect action
        self.timers: dict[str, float] = {}
        self._sock: socket.socket | None = None
        self._sel = selectors.DefaultSelector()
        self._out = bytearray()
        self._splitter = StreamSplitter()
        self._connect_pending = False
        self._closed = False
        self.record_error: str | None = None
        self._recorder = PcapRecorder(record, on_failure=self._record_failed) if record is not None else None
        self._flow: TcpFlow | None = None

    def _record_failed(self, e: OSError) -> None:
        self.record_error = f"cannot write the record {e.filename}: {e.strerror or e}"

    # -- engine events --------------------------------------------------------------------------

    def start(self) -> None:
        self.perform(self.initiator.start())

    def send_message(self, message: Any, delivery: DeliveryClass | str = DeliveryClass.express) -> None:
        self.perform(self.initiator.send_message(message, delivery))

    def send_bodies(self, template: MessageTemplate, bodies: Iterable[bytes]) -> None:
        """One message of ``template`` per body (:meth:`harness.session.Initiator.send_bodies`)."""
        self.perform(self.initiator.send_bodies(template, bodies))

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def perform(self, actions: list[Any]) -> None:
        """Carry out engine actions in order; the packets they send are recorded with one time."""
        now = self.clock()
        ts = time.time()  # the wall-clock time of the packets these actions send
        for act in actions:
            if isinstance(act, Send):
                if self._sock is not None:
                    self._out += act.data
                    self.packets.append(("c2s", act.data, ts))
                    if self._flow is not None:
                        self._flow.data("c2s", act.data, ts)
            elif isinstance(act, StartTimer):
                self.timers[act.name] = now + act.seconds
            elif isinstance(act, CancelTimer):
                self.timers.pop(act.name, None)
            elif isinstance(act, Close):
                self.closes.append(act)
                self._flush(block=True)
                self._drop("c2s")
            elif isinstance(act, Connect):
                self._connect_pending = True
                self._connect_to = act.address
            elif isinstance(act, Acked):
                self.acked.extend(act.message_ids)
            elif isinstance(act, Deliver):
                self.delivered.append(act.packet)
            elif isinstance(act, RuleViolation):
                self.violations.append(act)
            elif isinstance(act, SendPing):
                self.pings.append(act.data)
                self._send_ping(act.data)
        self._flush()

    # -- transport ------------------------------------------------------------------------------

    def _connect(self) -> None:
        self._connect_pending = False
        if self._closed:
            return
        target = self._resolve_host_address(self._connect_to)
        if target is None:
            return
        try:
            sock = socket.create_connection(target, timeout=self.timeout)
        except OSError as e:
            self.connect_errors.append(str(e))
            self.perform(self.initiator.connection_failed())
            return
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        self._sock = sock
        if self._recorder is not None:
            local, remote = sock.getsockname()[:2], sock.getpeername()[:2]
            self._flow = self._recorder.flow(local, remote, time.time())
        self._sel.register(sock, selectors.EVENT_READ)
        self._out.clear()
        self._splitter = StreamSplitter()
        self.connections += 1
        self.perform(self.initiator.connection_made())

    def _resolve_host_address(self, address: str) -> tuple[str, int] | None:
        """[MS-MQQB] 3.1.5.2.1: resolve destinationHostName to addresses usable by TCP (2.1.1); the
        port is the address's own or the link's.  None when it resolves to none: the engine has been
        told (``resolve_host_address_failed``)."""
        host, port = self.address
        if address:
            text = address.removeprefix("mqqb://").rstrip("/")
            host = destination_host_name(address)
            if host != text.strip("[]"):  # the address names a port too
                port = int(text.rpartition(":")[2])
        try:
            resolved = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as e:  # socket.gaierror is an OSError
            resolved, error = [], str(e)
        else:
            error = f"{host!r} resolved to no address"
        if not resolved:
            self.resolve_errors.append(error)
            self.perform(self.initiator.resolve_host_address_failed())
            return None
        return host, port

    def _send_ping(self, data: bytes) -> None:
        """[MS-MQQB] 2.1.2: the Ping Request to the acceptor's ping port, from a UDP port this link
        listens on for the Ping Response.  A datagram that cannot be sent is a ping without a
        response: the engine's Ping Response Timer decides (3.1.6.8)."""
        if self._closed:
            return
        try:
            if self._udp is None:
                family = socket.AF_INET6 if ":" in self.ping_address[0] else socket.AF_INET
                self._udp = socket.socket(family, socket.SOCK_DGRAM)
                self._udp.setblocking(False)
                self._sel.register(self._udp, selectors.EVENT_READ)
            self._udp.sendto(data, self.ping_address)
        except OSError as e:
            self.ping_errors.append(str(e))

    def _read_ping(self) -> None:
        """Datagrams on the ping port: each goes to the engine's ``ping_response`` (3.1.7.8)."""
        assert self._udp is not None
        for _ in range(16):
            try:
                data = self._udp.recv(2048)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # e.g. ICMP port unreachable for the request
                self.ping_errors.append(str(e))
                continue
            self.ping_responses.append(data)
            self.perform(self.initiator.ping_response(data))

    def _drop(self, closer: str = "c2s") -> None:
        if self._sock is None:
            return
        if self._flow is not None:
            self._flow.fin(closer, time.time())
            self._flow = None
        self._sel.unregister(self._sock)
        self._sock.close()
        self._sock = None
        self._out.clear()

    def _flush(self, block: bool = False) -> None:
        sock = self._sock
        if sock is None:
            return
        deadline = time.monotonic() + self.timeout
        while self._out:
            try:
                n = sock.send(self._out)
            except (BlockingIOError, InterruptedError):
                if not block or time.monotonic() > deadline:
                    break
                select.select([], [sock], [], min(0.05, max(0.0, deadline - time.monotonic())))
                continue
            except OSError:
                self._lost()
                return
            del self._out[:n]
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if self._out else 0)
        if self._sock is not None:
            self._sel.modify(self._sock, events)

    def _lost(self) -> None:
        """The acceptor closed the connection (or it broke): [MS-MQQB] 3.1.7.3."""
        if self._sock is None:
            return
        self._drop("s2c")
        self.perform(self.initiator.connection_lost())

    def _read(self) -> None:
        sock = self._sock
        if sock is None:
            return
        try:
            data = sock.recv(RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._lost()
            return
        if not data:
            self._lost()
            return
        ts = time.time()
        if self._flow is not None:
            self._flow.data("s2c", data, ts)
        try:
            for piece in self._splitter.feed(data):
                self.packets.append(("s2c", piece.data, ts))
        except PacketError:
            self.packets.append(("s2c", data, ts))
        self.perform(self.initiator.receive_data(data))

    def _fire_due(self) -> None:
        now = self.clock()
        for name, deadline in sorted(self.timers.items(), key=lambda kv: kv[1]):
            if deadline <= now and self.timers.get(name) == deadline:
                del self.timers[name]
                self.perform(self.initiator.timer_fired(name))

    def step(self, wait: float) -> None:
        """One round: connect if asked, move bytes (waiting up to ``wait`` s), fire due timers."""
        if self._closed:
            raise LinkError("the link is closed")
        if self._connect_pending:
            self._connect()
        if self._sock is None and self._udp is None:
            time.sleep(max(0.0, min(wait, self._until_next_timer())))
        else:
            for key, mask in self._sel.select(max(0.0, min(wait, self._until_next_timer()))):
                if key.fileobj is self._udp and self._udp is not None:
                    self._read_ping()
                    continue
                if mask & selectors.EVENT_WRITE:
                    self._flush()
                if mask & selectors.EVENT_READ and key.fileobj is self._sock:
                    self._read()
        self._fire_due()

    def _until_next_timer(self) -> float:
        if not self.timers:
            return 3600.0
        return min(self.timers.values()) - self.clock()

    def run_until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Drive the session until ``predicate()`` holds or ``timeout`` real seconds pass; its last value.
        (The engine's timers run on ``clock``, which a caller may scale.)"""
        deadline = time.monotonic() + timeout
        while not predicate():
            left = deadline - time.monotonic()
            if left <= 0:
                return bool(predicate())
            self.step(min(left, 0.05))
        return True

    def close(self) -> None:
        """Close the socket without telling the engine (the test or case is over)."""
        if self._closed:
            return
        self._flush(block=True)
        self._drop()
        self._closed = True
        if self._udp is not None:
            self._sel.unregister(self._udp)
            self._udp.close()
            self._udp = None
        self._sel.close()
        if self._recorder is not None:
            self._recorder.close()

    def __enter__(self) -> InitiatorLink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
