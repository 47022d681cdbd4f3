"""Reaching each session state of an acceptor through conformant traffic, on a plain TCP socket.

The fuzzer is the initiator of an [MS-MQQB] 2.1.1 session.  A :class:`State` names where it
injects and the conformant packets that get there: nothing (``WAITING_EC_MSG``, 3.1.5.10), an
EstablishConnection request and its response (``WAITING_CP_MSG``, 3.1.5.3.1), a
ConnectionParameters request and its response (``OPEN``, 3.1.5.4.1), then a UserMessage whose
acknowledgment is not read yet (``OPEN+in-flight``, 3.1.7.1), one whose SessionAck came
(``OPEN+acked``, 3.1.5.5), or a transactional UserMessage (``OPEN+transaction``, 3.1.5.8.6).
The first three are the acceptor's opening as the transition table has it
(:func:`opening`, harness.session.transitions: the kind each state moves on by); the sender's
states the fuzzer injects in as its acceptor (:data:`SENDER_STATES`) are the initiator's.
:class:`Connection` sends packets and reads whole ones (``packets.StreamSplitter``), keeping
both directions with their times for the oracles, the case and the pcap.
"""

from __future__ import annotations

import contextlib
import socket
import time
from dataclasses import dataclass, field

import packets
from harness.fuzz.generate import Context, packet_kind, template
from harness.session import SessionState
from harness.session.transitions import TRANSITIONS, Role
from packets import GUID, PacketKind, StreamSplitter
from packets.layout import USER_MESSAGE_KINDS

__all__ = ["SENDER_STATES", "STATES", "Connection", "Prefix", "State", "opening", "reach"]

CONNECT_TIMEOUT = 2.0


@dataclass(frozen=True)
class Prefix:
    """One conformant step towards a state: the template sent and the kind of the reply awaited
    (None: none is read before going on)."""

    template: str
    reply: str | None


@dataclass(frozen=True)
class State:
    name: str
    session_state: str  # the SessionState ADM element ([MS-MQQB] 3.1.1.3.1) the acceptor is in
    prefix: tuple[Prefix, ...]
    section: str


def opening(role: Role) -> tuple[tuple[SessionState, PacketKind, SessionState], ...]:
    """How ``role``'s session opens, by the transition table (harness.session.transitions): each
    state from the first one (WAITING_EC_MSG for the acceptor, WAITING_ECR_MSG for the initiator
    once it sent its request, 3.1.5.2.3), the kind of the packet received there that moves it on,
    and the state that follows, until OPEN."""
    state = SessionState.WAITING_EC_MSG if role == "acceptor" else SessionState.WAITING_ECR_MSG
    steps = []
    while state is not SessionState.OPEN:
        ((kind, after),) = [(k, n) for (r, s, k), n in TRANSITIONS.items() if (r, s) == (role, state) and n != s]
        steps.append((state, kind, after))
        state = after
    return tuple(steps)


# The section each state of the opening is entered by: the acceptor's (3.1.5.10 on a new
# connection, 3.1.5.3.1, 3.1.5.4.1) and the initiator's (3.1.5.2.3, 3.1.5.3.2, 3.1.5.4.2).
_ENTERED: dict[tuple[Role, SessionState], str] = {
    ("acceptor", SessionState.WAITING_EC_MSG): "MS-MQQB 3.1.5.10",
    ("acceptor", SessionState.WAITING_CP_MSG): "MS-MQQB 3.1.5.3.1",
    ("acceptor", SessionState.OPEN): "MS-MQQB 3.1.5.4.1",
    ("initiator", SessionState.WAITING_ECR_MSG): "MS-MQQB 3.1.5.2.3",
    ("initiator", SessionState.WAITING_CPR_MSG): "MS-MQQB 3.1.5.3.2",
    ("initiator", SessionState.OPEN): "MS-MQQB 3.1.5.4.2",
}


def _opening_states(role: Role) -> tuple[State, ...]:
    """A :class:`State` for each state of ``role``'s opening and OPEN.  The fuzzer reaches the
    acceptor's by sending the request of each kind that moves it on and reading the response of
    that kind (3.1.5.3.1, 3.1.5.4.1); a sender reaches its own, the fuzzer answering (no prefix)."""
    steps = opening(role)
    names = [state for state, _, _ in steps] + [SessionState.OPEN]
    requests = [Prefix(kind.value, kind.value) for _, kind, _ in steps] if role == "acceptor" else []
    return tuple(State(n.value, n.value, tuple(requests[:i]), _ENTERED[role, n]) for i, n in enumerate(names))


_OPENED = _opening_states("acceptor")[-1].prefix  # the requests that open a session, each answered
STATES: tuple[State, ...] = (
    *_opening_states("acceptor"),
    State("OPEN+in-flight", "OPEN", (*_OPENED, Prefix("UserMessage[express]", None)), "MS-MQQB 3.1.7.1"),
    State("OPEN+acked", "OPEN", (*_OPENED, Prefix("UserMessage[recoverable]", "SessionAck")), "MS-MQQB 3.1.5.5"),
    State("OPEN+transaction", "OPEN", (*_OPENED, Prefix("UserMessage[transactional]", None)), "MS-MQQB 3.1.5.8.6"),
)

# The sender's states the fuzzer injects in, as its acceptor (harness.fuzz.sender): the sender
# reaches each by itself, the fuzzer answering conformantly.
SENDER_STATES: tuple[State, ...] = _opening_states("initiator")


@dataclass
class Connection:
    """A TCP connection to the acceptor, both directions kept as (direction, bytes, time)."""

    address: tuple[str, int]
    sock: socket.socket | None = None
    splitter: StreamSplitter = field(default_factory=StreamSplitter)
    inbox: list[bytes] = field(default_factory=list)
    log: list[tuple[str, bytes, float]] = field(default_factory=list)
    closed: bool = False  # the acceptor closed (or reset) the connection
    local: tuple[str, int] = ("", 0)
    sent: int = 0

    def open(self) -> Connection:
        """Connect; ConnectionRefusedError (an OSError) when nothing listens."""
        self.sock = socket.create_connection(self.address, timeout=CONNECT_TIMEOUT)
        with contextlib.suppress(OSError):
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        here = self.sock.getsockname()
        self.local = (str(here[0]), int(here[1]))
        return self

    def send(self, data: bytes) -> bool:
        assert self.sock is not None
        self.log.append(("c2s", data, time.time()))
        self.sent += 1
        try:
            self.sock.sendall(data)
        except OSError:
            self.closed = True
            return False
        return True

    def read(self, timeout: float) -> bytes | None:
        """The acceptor's next whole packet within ``timeout`` seconds; None when none came (see ``closed``)."""
        end = time.monotonic() + timeout
        while not self.inbox:
            left = end - time.monotonic()
            if self.closed or left <= 0 or self.sock is None:
                return None
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                return None
            except OSError:
                data = b""
            if not data:
                self.closed = True
                return None
            now = time.time()
            try:
                chunks = [c.data for c in self.splitter.feed(data)]
            except packets.PacketError:
                chunks = [data]
            for chunk in chunks:
                self.log.append(("s2c", chunk, now))
            self.inbox.extend(chunks)
        return self.inbox.pop(0)

    def wait_closed(self, timeout: float) -> bool:
        """Read (and keep) whatever comes until the acceptor closes, at most ``timeout`` seconds."""
        end = time.monotonic() + timeout
        while not self.closed and time.monotonic() < end:
            self.inbox.clear()
            if self.read(end - time.monotonic()) is None and not self.closed:
                break
        return self.closed

    def close(self) -> None:
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.close()
            self.sock = None


def build(name: str, ctx: Context) -> bytes:
    """The conformant packet of template ``name`` for the session ``ctx``, its counters advanced."""
    data = packets.build(template(name).build(ctx))
    note_sent(data, ctx)
    return data


def note_sent(data: bytes, ctx: Context) -> None:
    """Count a UserMessage the fuzzer sent ([MS-MQQB] 3.1.1.4) and its transactional number."""
    if packet_kind(data) == "UserMessage":
        ctx.sent_user += 1
        with contextlib.suppress(Exception):
            headers = packets.parse(data, strict=False).headers
            th = headers.get("TransactionHeader")
            if th is not None:
                ctx.tx_number = int(th.TxSequenceNumber)
            ctx.recoverable_sent |= th is not None or bool(headers.UserHeader.Flags.DM)


_USER_MESSAGES = frozenset(k.value for k in USER_MESSAGE_KINDS)  # counted alike (3.1.1.4)


def reach(conn: Connection, state: State, ctx: Context, reply_timeout: float) -> list[bytes]:
    """Send the conformant prefix of ``state``; the packets sent.  ValueError names the reply
    that did not come (the acceptor closed or was silent)."""
    sent = []
    for step in state.prefix:
        data = build(step.template, ctx)
        sent.append(data)
        if not conn.send(data):
            raise ValueError(f"the acceptor closed before {step.template} of {state.name}")
        if step.reply is None:
            continue
        while True:
            reply = conn.read(reply_timeout)
            if reply is None:
                why = "closed the connection" if conn.closed else f"sent nothing within {reply_timeout:.3g} s"
                raise ValueError(f"the acceptor {why} after {step.template} (reaching {state.name})")
            kind = packet_kind(reply)
            if kind == "EstablishConnection":
                with contextlib.suppress(Exception):
                    ctx.server_guid = GUID(packets.parse(reply, strict=False).EstablishConnectionHeader.ServerGuid)
            if kind in _USER_MESSAGES:
                ctx.received_user += 1
            if kind == step.reply or (step.reply == "SessionAck" and _has_session_header(reply)):
                break
    return sent


def _has_session_header(data: bytes) -> bool:
    try:
        return "SessionHeader" in packets.parse(data, strict=False).headers
    except packets.PacketError:
        return False
