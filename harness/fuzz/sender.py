"""Fuzzing a sender (``--target "cmd:..."``): the fuzzer is the acceptor it connects to.

The sender under test is driven through the control operations of docs/adapters.md (its
``wire:initiator`` capability): ``wire_setup`` names the fuzzer's listening socket, then
``create_outgoing_queue`` and ``enqueue`` make a message available ([MS-MQDMPR] 3.1.7.1.9,
[MS-MQQB] 3.1.7.12), and the sender connects by itself.  The fuzzer answers conformantly up to
the state it injects in -- ``WAITING_ECR_MSG`` (the sender's EstablishConnection request read,
3.1.5.2.3), ``WAITING_CPR_MSG`` (the response sent, its ConnectionParameters request read,
3.1.5.3.2), ``OPEN`` (the response sent, its UserMessage read, 3.1.5.4.2) -- and there sends one
packet of one kind (responses instead of requests) with one field mutated.  Oracles: **crash**,
the adapter process exits or a control operation fails; **hang**, the sender neither sends its
next packet nor closes within its Session Initialization Timer (3.1.2.1, as its ``wire_setup``
declared it, else the harness's 30 s; scaled, +25 % +0.5 s) -- in OPEN after a second message is
made available.  A finding is confirmed by running its round again with the same packet, then minimised and
written as an initiator wire case whose simulated acceptor replies with the fuzzed packet, with a
pcap of the session and the seed (harness.fuzz.sendercase).
"""

from __future__ import annotations

import contextlib
import random
import socket
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import packets
from harness.cases.target import TargetError
from harness.fuzz.engine import Fuzzer
from harness.fuzz.generate import KINDS, Context, Mutation, mutations_for, packet_kind, template
from harness.fuzz.oracles import Timers
from harness.fuzz.runs import Finding, FuzzOptions, SenderDown
from harness.fuzz.sendercase import confirm_and_minimise_sender
from harness.fuzz.states import SENDER_STATES, Connection, State, opening
from harness.session import SessionState
from harness.session.transitions import SENDS
from packets import GUID

__all__ = ["SenderFuzzer"]


def _goes_on(state: SessionState) -> frozenset[str]:
    """The kinds of packet a sender sends next once it accepted the fuzzer's packet in ``state``:
    those it sends in the state the packet moves it to (transitions.TRANSITIONS, SENDS), and a
    SessionAck in any state: the sender went on (whether it may is for the Observer to say)."""
    after = next((n for s, _, n in opening("initiator") if s == state), state)
    return frozenset({"SessionAck", *(k.value for (r, k), s in SENDS.items() if (r, s) == ("initiator", after))})


# state -> the kinds a sender that goes on sends: ConnectionParameters after the EstablishConnection
# response (3.1.5.3.2), acknowledgments and messages once open (3.1.5.4.2, 3.1.7.12)
_NEXT = {s.name: _goes_on(SessionState(s.session_state)) for s in SENDER_STATES}


@dataclass
class _Session:
    conn: Connection
    ctx: Context


class SenderFuzzer(Fuzzer):
    """:class:`Fuzzer` with the roles swapped (see the module docstring); ``target`` is an opened
    ``cmd:`` target (harness.cases.targets.command)."""

    def __init__(self, options: FuzzOptions, target: Any, say: Any = lambda _: None) -> None:
        super().__init__(options, say)
        self.target = target
        self.states = [s for s in SENDER_STATES if not options.states or s.name in options.states]
        self.kinds = [k for k in KINDS if not options.kinds or k in options.kinds]
        self.guid = GUID(uuid.UUID(int=options.seed % (1 << 128)).bytes_le)  # the fuzzer's queue manager
        self.sender_timers = Timers(options.timers.scale)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = self.listener.getsockname()[:2]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.close()

    def _queue(self, state: State, kind: str) -> Any:
        key = (state.name, kind)
        queue = self.queues.get(key)
        if not queue:
            ctx = Context(self.guid, GUID(bytes(range(16))))
            seed = f"{self.o.seed}/sender/{state.name}/{kind}"
            queue = self.queues[key] = deque(mutations_for(kind, ctx, random.Random(seed), "initiator"))
        return queue

    # -- control --------------------------------------------------------------------------------------
    def _control(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        try:
            return dict(self.target.control(op, args))
        except TargetError as e:
            raise SenderDown(f"the sender's {op} failed: {e.kind}: {e.message}") from None

    def _setup(self) -> None:
        scale = self.o.timers.scale
        reply = self._control(
            "wire_setup",
            {
                "host": self.address[0],
                "port": self.address[1],
                "ping_port": None,
                "scale": scale,
                "window": 64,
                "ping": False,
            },
        )
        timers = reply.get("timers") or {}
        seconds = timers.get("SessionInitialization")
        sender_scale = float(reply.get("scale", scale))
        self.sender_timers = Timers(sender_scale, float(seconds) if seconds else 30.0)
        self._control(
            "create_outgoing_queue",
            {
                "name": "fuzz",
                "DestinationFormatName": f"DIRECT=TCP:{self.address[0]}\\private$\\fuzz",
                "address": {"host": self.address[0], "port": self.address[1]},
            },
        )

    def _enqueue(self, n: int) -> None:
        self._control("enqueue", {"queue": "fuzz", "message": {"id": f"m{n}", "delivery": "express", "Body": "fuzz"}})

    def _accept(self) -> Connection | None:
        self.listener.settimeout(self.sender_timers.initialization())
        try:
            sock, _ = self.listener.accept()
        except TimeoutError:
            return None
        conn = Connection(self.address)
        conn.sock = sock
        peer = sock.getpeername()
        conn.local = (str(peer[0]), int(peer[1]))  # the pcap's client is the sender
        return conn

    # -- one round -------------------------------------------------------------------------------------
    def _round(self, state: State, kind: str) -> bool:
        mutation = self._next(state, kind)
        rng = random.Random(f"{self.o.seed}/{self.report.rounds}")
        try:
            oracle, why, conn, data = self.play(state, mutation, rng)
        except SenderDown as e:
            return self._lost(str(e))
        if conn is None:
            return False
        self._covered(state, kind, mutation)
        self.last = (state, mutation, [data])
        return bool(oracle) and self._found(oracle, why, state, mutation, [data])

    def wait_alive(self) -> str:
        """A crashed adapter is started again by the next ``wire_setup`` (harness.cases.targets.command)."""
        return ""

    def play(
        self, state: State, mutation: Mutation, rng: random.Random, shape: Callable[[bytes], bytes | None] | None = None
    ) -> tuple[str, str, Connection | None, bytes]:
        """One session with the sender: (oracle that fired or "", why, the connection, the packet
        injected); ``shape`` changes the mutated packet before it is sent (None: it cannot)."""
        self._setup()
        self._enqueue(1)
        conn = self._accept()
        if conn is None:
            return "", "", None, b""
        ctx = Context(self.guid, queue_id=1)
        data = b""
        try:
            if not self._reach(conn, state, ctx):
                return "", "", None, b""
            try:
                data = mutation.apply(template(mutation.template).build(ctx), rng)
                shaped = shape(data) if shape is not None else data
                if shaped is None:
                    raise ValueError("the packet cannot be shaped")
                data = shaped
            except ValueError:
                self.report.skipped += 1
                return "", "", None, b""
            self.report.packets += 1
            conn.send(data)
            if state.name == "OPEN":
                self._enqueue(2)
            oracle, why = self._judge(conn, state)
            return oracle, why, conn, data
        except SenderDown as e:
            return "crash", str(e), conn, data
        finally:
            conn.close()

    def _reach(self, conn: Connection, state: State, ctx: Context) -> bool:
        """Answer the sender conformantly up to ``state`` (3.1.5.3.1, 3.1.5.4.1); False when it
        does not send what that takes."""
        bound = self.sender_timers.initialization()
        first = conn.read(bound)
        if first is None or packet_kind(first) != "EstablishConnection":
            return False
        ec = packets.parse(first, strict=False).EstablishConnectionHeader
        ctx.server_guid, ctx.time_stamp = GUID(ec.ClientGuid), int(ec.TimeStamp)
        if state.name == "WAITING_ECR_MSG":
            return True
        conn.send(packets.build(template("EstablishConnection[response]").build(ctx)))
        cp = conn.read(bound)
        if cp is None or packet_kind(cp) != "ConnectionParameters":
            return False
        h = packets.parse(cp, strict=False).ConnectionParametersHeader
        ctx.recoverable_ack_timeout, ctx.ack_timeout = int(h.RecoverableAckTimeout), int(h.AckTimeout)
        ctx.window = int(h.WindowSize)
        if state.name == "WAITING_CPR_MSG":
            return True
        conn.send(packets.build(template("ConnectionParameters[response]").build(ctx)))
        um = conn.read(bound)
        ctx.received_user = 1
        return um is not None and packet_kind(um) == "UserMessage"

    def _judge(self, conn: Connection, state: State) -> tuple[str, str]:
        """After the injected packet: the sender's next packet or its close within its Session
        Initialization Timer, else a hang; a control operation that fails, a crash."""
        bound = self.sender_timers.initialization()
        end = time.monotonic() + bound
        reacted = False
        while time.monotonic() < end and not conn.closed and not reacted:
            reply = conn.read(end - time.monotonic())
            reacted = reply is not None and packet_kind(reply) in _NEXT[state.name]
        try:
            self._control("wire_close", {})
        except SenderDown as e:
            return "crash", str(e)
        if reacted or conn.closed:
            return "", ""
        return "hang", (
            f"the sender neither sent its next packet nor closed within its Session Initialization Timer "
            f"(MS-MQQB 3.1.2.1, {self.sender_timers.session_initialization:g} s x scale "
            f"{self.sender_timers.scale:g}, +25% +0.5 s = {bound:.3g} s)"
        )

    def confirm(self, f: Finding) -> None:
        """Play the finding's round again (the same oracle must fire), minimise it, write its case
        and pcap (harness.fuzz.sendercase)."""
        confirm_and_minimise_sender(self, f)
