"""An in-memory wire between an Initiator and an Acceptor: passes Send.data across, fires timers by hand."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

from harness.session import (
    Acceptor,
    Acked,
    Action,
    CancelTimer,
    Close,
    Connect,
    Deliver,
    Initiator,
    RuleViolation,
    Send,
    StartTimer,
    Timer,
)
from packets import Packet

# Simulated time: each packet delivered advances the clock by ``tick``; a timer fires when the clock
# passes its deadline, and an idle wire jumps to the next deadline.  The Session Cleanup Timer never
# fires (it would end every idle session).
NEVER = {Timer.SessionCleanup}

Fragmenter = Callable[[bytes], Iterable[bytes]]


class Wire:
    def __init__(
        self, initiator: Initiator, acceptor: Acceptor, fragment: Fragmenter | None = None, tick: float = 0.001
    ) -> None:
        self.now = 0.0
        self.tick = tick
        initiator.clock = acceptor.clock = self.clock
        self.i, self.a = initiator, acceptor
        self.fragment = fragment or (lambda b: [b])
        self.queues: dict[str, deque[bytes]] = {"i": deque(), "a": deque()}  # bytes travelling *to* side
        self.timers: dict[str, dict[str, float]] = {"i": {}, "a": {}}
        self.delivered: list[Packet] = []
        self.acked: list[int] = []
        self.acked_by: list[tuple[int, str]] = []
        self.violations: list[RuleViolation] = []
        self.closes: list[tuple[str, Close]] = []
        self.sent: list[tuple[str, Send]] = []
        self.connected = False
        self.connect_requested = False
        self.connections = 0
        # Recorded streams per connection: (client bytes, server bytes) in send order with direction.
        self.recording: list[list[tuple[str, bytes]]] = []

    def clock(self) -> float:
        return self.now

    def engine(self, side: str) -> Initiator | Acceptor:
        return self.i if side == "i" else self.a

    def handle(self, side: str, actions: list[Action]) -> None:
        other = "a" if side == "i" else "i"
        for act in actions:
            if isinstance(act, Send):
                self.sent.append((side, act))
                if self.connected:
                    self.queues[other].append(act.data)
                    self.recording[-1].append(("client" if side == "i" else "server", act.data))
            elif isinstance(act, StartTimer):
                self.timers[side][act.name] = self.now + act.seconds
            elif isinstance(act, CancelTimer):
                self.timers[side].pop(act.name, None)
            elif isinstance(act, Close):
                self.closes.append((side, act))
                self._disconnect(side)
            elif isinstance(act, Connect):
                self.connect_requested = True
            elif isinstance(act, Deliver):
                if side == "a":
                    self.delivered.append(act.packet)
            elif isinstance(act, Acked):
                self.acked.extend(act.message_ids)
                self.acked_by.extend((m, act.by) for m in act.message_ids)
            elif isinstance(act, RuleViolation):
                self.violations.append(act)

    def _disconnect(self, closer: str) -> None:
        if not self.connected:
            return
        other = "a" if closer == "i" else "i"
        # Nothing reaches the closer any more, and what the other side sends from now on is lost;
        # what the closer sent before closing still arrives, then the other side sees the close.
        self.connected = False
        self.queues[closer].clear()
        pending, self.queues[other] = self.queues[other], deque()
        for data in pending:
            for piece in self.fragment(data):
                self.handle(other, self.engine(other).receive_data(piece))
        self.handle(other, self.engine(other).connection_lost())

    def connect(self) -> None:
        self.connect_requested = False
        self.connected = True
        self.connections += 1
        self.recording.append([])
        self.handle("a", self.a.connection_made())
        self.handle("i", self.i.connection_made())

    def start(self) -> None:
        self.handle("i", self.i.start())

    def send(self, message: object, delivery: str = "express") -> None:
        self.handle("i", self.i.send_message(message, delivery))  # type: ignore[arg-type]

    def fire(self, side: str, name: str) -> None:
        self.timers[side].pop(name, None)
        self.handle(side, self.engine(side).timer_fired(name))

    def pump(self) -> bool:
        moved = False
        while self.connected and (self.queues["i"] or self.queues["a"]):
            for side in ("a", "i"):
                while self.connected and self.queues[side]:
                    data = self.queues[side].popleft()
                    for piece in self.fragment(data):
                        if not self.connected:
                            break
                        self.handle(side, self.engine(side).receive_data(piece))
                    moved = True
                    self.now += self.tick
                    self.fire_due()
        return moved

    def _next_timer(self) -> tuple[float, str, str] | None:
        due = [(t, side, name) for side in ("a", "i") for name, t in self.timers[side].items() if name not in NEVER]
        return min(due) if due else None

    def fire_due(self) -> None:
        while (nxt := self._next_timer()) is not None and nxt[0] <= self.now:
            self.fire(nxt[1], nxt[2])

    def step(self) -> bool:
        """Move data, connect, or fire the first idle timer; False when nothing is left to do."""
        if self.pump():
            return True
        if self.connect_requested:
            self.connect()
            return True
        nxt = self._next_timer()
        if nxt is None:
            return False
        self.now = max(self.now, nxt[0])
        self.fire(nxt[1], nxt[2])
        return True

    def run(self, max_steps: int = 20_000) -> int:
        steps = 0
        while steps < max_steps and self.step():
            steps += 1
        return steps

    def finish(self, max_steps: int = 20_000) -> int:
        """Run until nothing is left to do; a session that is still busy after ``max_steps`` is stuck."""
        steps = self.run(max_steps)
        assert steps < max_steps, f"still busy after {steps} steps ({self.connections} connections)"
        return steps
