"""``mqqb://host:port``: a live [MS-MQQB] acceptor, judged by the acceptor wire cases.

``--target mqqb://host:port[?ping=PORT][&scale=S][&queue=ID][&tx-queue=ID]``: the harness opens
TCP connections to the acceptor and plays the initiator (harness.cases.wireruns.acceptor).
``ping=PORT`` names the UDP port it answers Ping Requests on ([MS-MQQB] 2.1.2), ``scale=S`` the
time scale of its 3.1.2 timers, ``queue=ID`` and ``tx-queue=ID`` the private queues the case's
UserMessages address.  Its capabilities say which cases it can run: ``wire:acceptor``, plus
``wire:ping-port`` and ``wire:tx-queue`` when the query names them.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any

from harness.cases.target import (
    WIRE_ACCEPTOR,
    WIRE_PING_PORT,
    WIRE_TX_QUEUE,
    TargetError,
    TargetInfo,
    TargetUnsupported,
)
from harness.cases.targets.kind import parse_scale, spec_query, target_kind

__all__ = ["LiveAcceptor", "LiveWireTarget", "parse_mqqb_address"]


@dataclass(frozen=True)
class LiveAcceptor:
    """Where a live acceptor is, and what the harness knows of it."""

    wire_address: tuple[str, int]
    ping_address: tuple[str, int] | None
    queue_id: int
    tx_queue_id: int | None
    scale: float


def parse_mqqb_address(spec: str) -> tuple[str, int]:
    """``mqqb://host:port`` (host may be ``[::1]``; a ``?ping=PORT`` query is ignored) -> (host, port)."""
    rest = spec.removeprefix("mqqb://").partition("?")[0].rstrip("/")
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"{spec!r}: expected mqqb://host:port")
    return host.strip("[]"), int(port)


LIVE_QUERY = ("ping", "scale", "queue", "tx-queue")  # the queries of mqqb://host:port?...


def parse_ping_port(spec: str) -> int | None:
    """The UDP port of ``mqqb://host:port?ping=PORT`` (where the acceptor listens for Ping
    Requests, [MS-MQQB] 2.1.2; 3527 for MSMQ), None without the query."""
    value = spec_query(spec, LIVE_QUERY).get("ping")
    if value is None:
        return None
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise ValueError(f"{spec!r}: ping=PORT takes a UDP port number")
    return int(value)


def parse_live_queue(spec: str, key: str) -> int | None:
    """``mqqb://host:port?queue=ID`` / ``?tx-queue=ID``: the PrivateQueueIdentifier ([MS-MQMQ]
    2.2.18.1.5.1) of a private queue of the live acceptor that the case's UserMessages address,
    ``tx-queue`` one that is transactional; None without the query."""
    value = spec_query(spec, LIVE_QUERY).get(key)
    if value is None:
        return None
    if not value.isdigit() or not 0 < int(value) <= 0xFFFFFFFF:
        raise ValueError(f"{spec!r}: {key}=ID takes a private queue identifier (1 to 0xFFFFFFFF)")
    return int(value)


def parse_live_scale(spec: str) -> float:
    """``mqqb://host:port?scale=S``: the live acceptor runs its [MS-MQQB] 3.1.2 timers S times
    their durations (e.g. the project's own peer on a scaled clock); 1 without the query."""
    value = spec_query(spec, LIVE_QUERY).get("scale")
    return 1.0 if value is None else parse_scale(spec, value)


class LiveWireTarget:
    """``--target mqqb://host:port[?ping=PORT][&scale=S][&queue=ID][&tx-queue=ID]``: a live
    [MS-MQQB] acceptor, for wire cases only; ``ping=PORT`` names the UDP port it answers Ping
    Requests on ([MS-MQQB] 2.1.2), ``scale=S`` the time scale of its 3.1.2 timers (1, real
    durations, by default), ``queue=ID`` the private queue the case's express and recoverable
    UserMessages address (1 by default) and ``tx-queue=ID`` a transactional private queue for its
    transactional ones (without it, a case that sends one is not applicable: a message to a queue
    that does not exist or is not transactional is answered by a negative acknowledgment, not an
    OrderAck, [MS-MQQB] 3.1.5.8.5, 3.1.5.8.6)."""

    handles_timeout = True

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.wire_address = parse_mqqb_address(spec)
        port = parse_ping_port(spec)
        self.ping_address = (self.wire_address[0], port) if port is not None else None
        self.scale = parse_live_scale(spec)
        self.queue_id = parse_live_queue(spec, "queue") or 1
        self.tx_queue_id = parse_live_queue(spec, "tx-queue")

    def hello(self) -> TargetInfo:
        """The target's hello: one TCP connection to the acceptor, opened and closed, so that an
        address where nothing listens is a configuration error before any case, not a failure."""
        try:
            socket.create_connection(self.wire_address, timeout=5.0).close()
        except OSError as e:
            host, port = self.wire_address
            raise TargetError(f"nothing accepts TCP connections at {host}:{port}: {e.strerror or e}") from None
        capabilities = [WIRE_ACCEPTOR]
        if self.ping_address is not None:
            capabilities.append(WIRE_PING_PORT)
        if self.tx_queue_id is not None:
            capabilities.append(WIRE_TX_QUEUE)
        return TargetInfo(name=self.spec, events=[], capabilities=capabilities)

    def acceptor(self) -> LiveAcceptor:
        return LiveAcceptor(self.wire_address, self.ping_address, self.queue_id, self.tx_queue_id, self.scale)

    def setup(self, given: dict[str, Any]) -> None:
        raise TargetUnsupported(f"{self.spec} is an [MS-MQQB] endpoint: it runs wire cases only")

    def event(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        raise TargetUnsupported(f"{self.spec} is an [MS-MQQB] endpoint: it runs wire cases only")

    def observe(self, queues: list[str], cursors: list[str]) -> dict[str, Any]:
        raise TargetUnsupported(f"{self.spec} is an [MS-MQQB] endpoint: it runs wire cases only")

    def close(self) -> None:
        pass


@target_kind(
    "mqqb://",
    "mqqb://host:port[?ping=PORT][&scale=S][&queue=ID][&tx-queue=ID]",
    "a live [MS-MQQB] acceptor (acceptor wire cases only)",
)
def _make(spec: str, timeout: float) -> Any:
    return LiveWireTarget(spec)
