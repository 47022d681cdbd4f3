"""Input-triggered faults of the simulated peer: a crash or a hang on one specific packet.

Real acceptors fail on particular inputs: CVE-2023-21554 ("QueueJumper") was one UserMessage whose
header announced more bytes than it carried.  These behaviours make the simulated peer of
:mod:`harness.peers.server` fail the same way, so that ``msmq-harness fuzz`` (docs/fuzz.md) has
something to find and its tests and users can watch it find it.  Every other packet is served as
by the ``normal`` behaviour ([MS-MQQB] 3.1.5).

Effects:

- ``crash``: the process dies as a crash does: every connection is reset, the TCP port and the
  ping port ([MS-MQQB] 2.1.2) stop answering, and the queue manager comes back
  :data:`RESTART_SECONDS` (scaled like the 3.1.2 timers, at least :data:`MIN_RESTART`) later, as
  a service restarted by its manager does.
- ``leak``: the packet is served as usual, but the connection's file descriptor is kept open
  (duplicated) for good, as an error path that forgets to release it does.
- ``hang``: the connection's handler stops for good: the packet is never processed, nothing is
  sent, the session's timers are stopped, the connection is never closed; the other connections
  are served as usual.

Triggers (each reads the packet's bytes as they come, with the SessionState of [MS-MQQB]
3.1.1.3.1 the connection is in):

- ``crash-soap-length``: a UserMessage Packet whose SoapHeader ([MS-MQMQ] 2.2.20.7, announced by
  UserHeader.Flags.HH) has a HeaderDataLength or BodyDataLength that counts more WCHARs than the
  packet holds after it (the acceptor trusts the length, as QueueJumper's victim did).
- ``crash-mqf-count``: a UserMessage Packet whose MultiQueueFormatHeader ([MS-MQMQ] 2.2.20.1)
  Destination MQFAddressHeader (2.2.20.2) has an ElementCount of more elements than its
  HeaderSize can hold (at least 4 bytes each).
- ``leak-fd-on-malformed``: a UserMessage Packet that does not decode ([MS-MQMQ] 2.2.19-2.2.20),
  which the acceptor discards, closing the session ([MS-MQQB] 3.1.5.1.3).
- ``hang-cp-when-open``: a ConnectionParameters Packet ([MS-MQQB] 2.2.2) in SessionState OPEN: a
  packet valid field by field but wrong for the state (3.1.5.4: the session MUST be closed).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import struct
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import packets
from harness.peers.sockets import tcp_listener
from harness.session import AcceptorBehaviour, SessionState
from packets import StreamSplitter

__all__ = [
    "FAULTS",
    "MIN_RESTART",
    "RESTART_SECONDS",
    "Fault",
    "FaultWatch",
    "Loop",
    "crashes",
    "fault_lines",
    "leaked",
    "strike",
    "tick",
    "watch_for",
]

MAX_LEAKS = 256  # descriptors a leaking peer keeps at most (the process's limit is not ours to exhaust)
RESTART_SECONDS = 10.0  # a crashed peer is back after this (the Session Retry Connect Timer, 3.1.2.3), scaled
MIN_RESTART = 0.5  # ... but never sooner: a crash must be seen as one (the port refuses connections)

Trigger = Callable[[SessionState, bytes], bool]


@dataclass(frozen=True)
class Fault:
    """A named input-triggered fault: its ``effect``, the ``trigger`` it fires on (the connection's
    SessionState and one whole packet), the one-line ``summary`` and the ``sections`` at stake."""

    name: str
    effect: Literal["crash", "hang", "leak"]
    trigger: Trigger
    summary: str
    sections: tuple[str, ...]

    @property
    def behaviour(self) -> AcceptorBehaviour:
        """The acceptor behaviour the peer runs: ``normal`` in every way, under this name."""
        return AcceptorBehaviour(self.name, summary=self.summary, sections=self.sections)


def _is_user_message(data: bytes) -> bool:
    """BaseHeader.Flags.IN clear and a UserHeader: a UserMessage Packet ([MS-MQQB] 3.1.5.1.1)."""
    return len(data) >= 64 and not struct.unpack_from("<H", data, 2)[0] & 0x0008


def _user_flag(data: bytes, bit: int) -> bool:
    return bool(struct.unpack_from("<L", data, 60)[0] >> bit & 1)  # UserHeader.Flags ([MS-MQMQ] 2.2.19.2)


def _u32_at(data: bytes, path: str) -> tuple[int, int] | None:
    """(value, offset) of the u32 field at ``path`` of a UserMessage, read however damaged the rest is."""
    where = packets.field_offset(data, path, "UserMessage")
    if where is None or where[0] + 4 > len(data):
        return None
    leaf = path.rpartition(".")[2]
    if where[1] - where[0] != 4 and leaf not in ("HeaderDataLength", "BodyDataLength", "ElementCount"):
        return None
    return struct.unpack_from("<L", data, where[0])[0], where[0]


def soap_length_beyond_packet(state: SessionState, data: bytes) -> bool:
    """A SoapHeader length counting more WCHARs than the packet holds after it ([MS-MQMQ] 2.2.20.7)."""
    if not _is_user_message(data) or not _user_flag(data, 28):  # UserHeader.Flags.HH
        return False
    for path in ("SoapHeader.HeaderDataLength", "SoapHeader.BodyDataLength"):
        found = _u32_at(data, path)
        if found is not None and found[0] * 2 > len(data) - found[1] - 4:
            return True
    return False


def mqf_count_beyond_size(state: SessionState, data: bytes) -> bool:
    """A Destination MQFAddressHeader whose ElementCount needs more bytes than its HeaderSize
    ([MS-MQMQ] 2.2.20.2; every MQFFormatNameElement takes at least 4)."""
    if not _is_user_message(data) or not _user_flag(data, 23):  # UserHeader.Flags.MQ
        return False
    size = _u32_at(data, "MultiQueueFormatHeader.Destination.HeaderSize")
    count = _u32_at(data, "MultiQueueFormatHeader.Destination.ElementCount")
    return size is not None and count is not None and count[0] * 4 > max(0, size[0] - 12)


def cp_when_open(state: SessionState, data: bytes) -> bool:
    """A ConnectionParameters Packet ([MS-MQQB] 2.2.2, InternalHeader.Flags.PT 3) in state OPEN."""
    if state is not SessionState.OPEN or len(data) < 20 or not struct.unpack_from("<H", data, 2)[0] & 0x0008:
        return False
    return struct.unpack_from("<H", data, 18)[0] & 0x000F == 3


def malformed_user_message(state: SessionState, data: bytes) -> bool:
    """A UserMessage Packet that does not decode as [MS-MQMQ] 2.2.19-2.2.20 define it."""
    if not _is_user_message(data):
        return False
    try:
        packets.parse(data, strict=True)
    except packets.PacketError:
        return True
    return False


FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault(
            "crash-soap-length",
            "crash",
            soap_length_beyond_packet,
            "crashes (restarts 10 s later) on a UserMessage whose SoapHeader HeaderDataLength or BodyDataLength "
            "counts more WCHARs than the packet holds",
            ("MS-MQMQ 2.2.20.7", "MS-MQQB 3.1.5.1.3"),
        ),
        Fault(
            "crash-mqf-count",
            "crash",
            mqf_count_beyond_size,
            "crashes (restarts 10 s later) on a UserMessage whose MultiQueueFormatHeader Destination has an "
            "ElementCount its HeaderSize cannot hold",
            ("MS-MQMQ 2.2.20.1", "MS-MQMQ 2.2.20.2", "MS-MQQB 3.1.5.1.3"),
        ),
        Fault(
            "leak-fd-on-malformed",
            "leak",
            malformed_user_message,
            f"keeps a file descriptor open for every malformed UserMessage it discards (at most {MAX_LEAKS}); "
            "serves as normal",
            ("MS-MQQB 3.1.5.1.3", "MS-MQQB 3.1.5.9"),
        ),
        Fault(
            "hang-cp-when-open",
            "hang",
            cp_when_open,
            "hangs the session (no reply, no close, timers stopped) on a ConnectionParameters Packet in state OPEN",
            ("MS-MQQB 3.1.5.4",),
        ),
    )
}


def fault_lines(width: int) -> list[str]:
    """``peer --list-behaviours`` lines for the input-triggered faults."""
    return [f"{f.name:<{width}}  {'fault':<8}  {f.summary} [{', '.join(f.sections)}]" for f in FAULTS.values()]


@dataclass
class FaultWatch:
    """One connection's watch for its fault's trigger: the packets it completes, in order."""

    fault: Fault
    splitter: StreamSplitter = field(default_factory=StreamSplitter)
    broken: bool = False  # the stream could not be cut into packets: nothing more is watched

    def fires(self, state: SessionState, data: bytes) -> bool:
        """Does a packet ``data`` completes trigger the fault?  ``state``: the session's before it."""
        if self.broken:
            return False
        try:
            pieces = [p.data for p in self.splitter.feed(data)]
        except packets.PacketError:
            self.broken = True
            pieces = [self.splitter.remainder()]
        return any(self.fault.trigger(state, bytes(p)) for p in pieces if p)


def watch_for(name: str) -> FaultWatch | None:
    """A watch for the connection of a behaviour named ``name``; None for every other behaviour."""
    fault = FAULTS.get(name)
    return FaultWatch(fault) if fault is not None else None


# -- the effects, on the peer's loop --------------------------------------------------------------


class Loop(Protocol):
    """What the effects touch of the peer's loop (:class:`harness.peers.reactor.Reactor`, which
    calls :func:`tick` and :func:`strike`): its sockets, its connections, and how it closes one.
    A Protocol, so that this module does not import the loop that imports it."""

    time_scale: float
    max_connections: int
    _sel: selectors.BaseSelector | None
    _listener: socket.socket | None
    _ping_sock: socket.socket | None
    _ping_address: tuple[str, int] | None
    _address: tuple[str, int] | None
    _slots: dict[int, Any]

    def _set_mask(self, slot: Any) -> None: ...

    def _finish(self, slot: Any, by: str, reason: str, closer: str) -> None: ...



@dataclass
class _Down:
    until: float
    address: tuple[str, int]
    ping: tuple[str, int] | None
    crashes: int = 0


_DOWN: weakref.WeakKeyDictionary[Any, _Down] = weakref.WeakKeyDictionary()


def crashes(peer: Loop) -> int:
    """How many times ``peer`` crashed."""
    down = _DOWN.get(peer)
    return down.crashes if down is not None else 0


_LEAKS: weakref.WeakKeyDictionary[Any, list[int]] = weakref.WeakKeyDictionary()


def leaked(peer: Loop) -> int:
    """How many descriptors ``peer`` leaked."""
    return len(_LEAKS.get(peer, ()))


def strike(peer: Loop, slot: Any) -> bool:
    """The fault of ``slot``'s behaviour fired on the packet just read: crash the peer, hang the
    connection (True: the packet is not processed) or leak a descriptor (False: it is, as usual)."""
    watch: FaultWatch = slot.fault
    if watch.fault.effect == "leak":
        leaks = _LEAKS.get(peer)
        if leaks is None:
            leaks = _LEAKS[peer] = []
            weakref.finalize(peer, _close_all, leaks)
        if len(leaks) < MAX_LEAKS:
            with contextlib.suppress(OSError):
                leaks.append(os.dup(slot.sock.fileno()))
        return False
    if watch.fault.effect == "hang":
        slot.busy = Future()  # never done: the loop neither reads nor times the connection again
        slot.timers.clear()
        peer._set_mask(slot)
        return True
    _PENDING[peer] = watch.fault.name  # at the start of the next round: the rest of this one is served
    return True


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


_PENDING: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def tick(peer: Loop) -> None:
    """At the start of every round of the peer's loop: crash when a fault struck, listen again
    once the restart time of a crash has come."""
    name = _PENDING.pop(peer, None)
    if name is not None:
        _crash(peer, name)
    else:
        _revive(peer)


def _crash(peer: Loop, name: str) -> None:
    assert peer._sel is not None
    previous = _DOWN.get(peer)
    ping = peer._ping_address if peer._ping_sock is not None else None
    assert peer._address is not None
    down = _Down(time.monotonic() + max(MIN_RESTART, RESTART_SECONDS * peer.time_scale), peer._address, ping)
    down.crashes = (previous.crashes if previous is not None else 0) + 1
    _DOWN[peer] = down
    for sock in (peer._listener, peer._ping_sock):  # first: a client that sees its reset finds the port closed
        if sock is not None:
            with contextlib.suppress(KeyError, ValueError):
                peer._sel.unregister(sock)
            sock.close()
    peer._listener = peer._ping_sock = None
    for slot in list(peer._slots.values()):
        with contextlib.suppress(OSError):  # reset, as the kernel does for a process that died
            slot.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        peer._finish(slot, "crashed", f"the peer crashed ({name})", closer="s2c")


def _revive(peer: Loop) -> None:
    down = _DOWN.get(peer)
    if down is None or peer._listener is not None or time.monotonic() < down.until:
        return
    assert peer._sel is not None
    family = socket.AF_INET6 if ":" in down.address[0] else socket.AF_INET
    try:
        listener = tcp_listener(family, down.address, peer.max_connections)
    except OSError:
        down.until = time.monotonic() + MIN_RESTART  # try again
        return
    listener.setblocking(False)
    peer._listener = listener
    peer._sel.register(listener, 1, "listen")  # selectors.EVENT_READ
    if down.ping is not None:
        pinger = socket.socket(family, socket.SOCK_DGRAM)
        try:
            pinger.bind(down.ping)
        except OSError:
            pinger.close()
            return
        pinger.setblocking(False)
        peer._ping_sock = pinger
        peer._sel.register(pinger, 1, "ping")
