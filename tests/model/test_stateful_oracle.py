"""Hypothesis stateful test: the indexed [MS-MQDMPR] model against the literal oracle.

Random sequences of Enqueue Message (3.1.7.1.9, priorities, AllowPeekWhenLocked, in and out of
transactions), Dequeue Message / Begin / End (3.1.7.1.10-12, with and without cursors, with
timeouts that wait), Peek Message / Peek Next Message (3.1.7.1.14-15), forward and backward
Seek Available Message Position (3.1.7.3.2) and Seek With Id (3.1.7.3.3, via 3.1.7.1.13),
Transaction Commit / Abort (3.1.4.4-5), Purge Queue (3.1.7.1.7), Close Cursor / Close Queue
(3.1.7.1.2, 3.1.7.1.6) and the Waiting Message Read Timer (3.1.6.3). After every step both
implementations must agree on every return value, every position state and order, every cursor;
no message may be received twice or lost, and an aborted receive must be Available again in
its place.
"""

from __future__ import annotations

from typing import Any

import pytest
from dmpr_helpers import FORMAT, PATH, Clock
from hypothesis import HealthCheck, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from harness.model import (
    Cursor,
    Message,
    MessageClass,
    MessagePosition,
    MessagePositionState,
    MessageSeekAction,
    OpenQueueDescriptor,
    Queue,
    QueueAccessType,
    QueueManager,
    QueueShareMode,
    ReadResult,
    SeekDirection,
    Transaction,
)
from harness.model.errors import UndefinedBehaviour
from harness.model.literal import LiteralQueueManager

N_CURSORS = 3
N_TX = 3
STEPS = 50
EXAMPLES = 1400
PARTS = 4  # each a seed of its own; together EXAMPLES sequences


class Env:
    """One implementation under test and the handles the machine holds on it."""

    def __init__(self, cls: type[QueueManager]) -> None:
        self.clock = Clock()
        self.qm = cls(clock=self.clock, QueueManagerQuota=1 << 40)
        template = self.qm.new_queue(Queue, PATH)
        self.qm.set_queue_defaults(template)
        template.Pathname = PATH
        _, queue = self.qm.create_queue(template)
        assert queue is not None
        self.queue: Queue = queue
        self.desc: OpenQueueDescriptor = self.open()
        self.cursors: list[Cursor | None] = [self.qm.open_cursor(self.desc) for _ in range(N_CURSORS)]
        self.tx: list[Transaction | None] = [None] * N_TX
        self.messages: dict[str, Message] = {}
        self.pending: list[ReadResult] = []
        self.deleted: list[tuple[str, MessageClass]] = []
        self.qm.message_position_deleted_subscribers.append(
            lambda q, p, reason: self.deleted.append((label(p), reason))
        )

    def open(self) -> OpenQueueDescriptor:
        status, desc = self.qm.open_queue(
            FORMAT, QueueAccessType.ReceiveAccess, QueueShareMode.DenyNone
        )
        assert status == 0 and desc is not None
        return desc


def label(p: MessagePosition | None) -> str:
    if p is None:
        return "None"
    if p.is_special:
        return repr(p)
    assert p.MessageReference is not None
    return p.MessageReference.Label


def summarize(r: ReadResult) -> tuple[Any, ...]:
    msg = r.rMessage.Label if r.rMessage is not None else None
    return (r.rStatus, msg, r.pending is not None)


class OracleMachine(RuleBasedStateMachine):
    runs: list[int] = []

    def __init__(self) -> None:
        super().__init__()
        self.envs = [Env(QueueManager), Env(LiteralQueueManager)]
        self.serial = 0
        self.steps = 0
        self.enqueued: dict[str, tuple[int, int]] = {}  # label -> order key (7-prio, serial)
        self.aborted_enqueues: set[str] = set()
        self.handed_out: set[str] = set()  # destructively read, not yet given back
        self.tx_reads: list[list[str]] = [[] for _ in range(N_TX)]
        self.tx_enqueues: list[list[str]] = [[] for _ in range(N_TX)]
        self.tx_gen = 0
        self.two_phase_locked: set[str] = set()
        self.waits: list[tuple[ReadResult, int | None, bool]] = []  # env0 pending receives
        OracleMachine.runs.append(0)

    # -------------------------------------------------------------------- helpers
    def both(self, fn: Any) -> Any:
        """Run fn on both implementations; they must agree (UndefinedBehaviour included)."""
        outs = []
        for env in self.envs:
            try:
                outs.append(("ok", fn(env)))
            except UndefinedBehaviour as exc:
                outs.append(("undefined", exc.section))
        assert outs[0] == outs[1], outs
        return outs[0]

    def received(self, msg: str | None, destructive: bool) -> None:
        if msg is None or not destructive:
            return
        assert msg not in self.handed_out, f"{msg} received twice"
        self.handed_out.add(msg)

    # -------------------------------------------------------------------- rules
    @rule(priority=st.integers(0, 7), apwl=st.booleans(), tx=st.none() | st.integers(0, N_TX - 1))
    def enqueue(self, priority: int, apwl: bool, tx: int | None) -> None:
        self.serial += 1
        name = f"m{self.serial}"
        self.enqueued[name] = (7 - priority, self.serial)
        use_tx = tx is not None and self.envs[0].tx[tx] is not None

        def go(env: Env) -> Any:
            m = Message(b"x" * (self.serial % 5), Priority=priority, AllowPeekWhenLocked=apwl,
                        Label=name)
            env.messages[name] = m
            return env.qm.enqueue_message(env.queue, m, env.tx[tx] if use_tx and tx is not None else None)

        self.both(go)
        if use_tx and tx is not None:
            self.tx_enqueues[tx].append(name)

    @rule(
        cursor=st.none() | st.integers(0, N_CURSORS - 1),
        tx=st.none() | st.integers(0, N_TX - 1),
        timeout=st.sampled_from([0, 0, 0, 5]),
        two_phase=st.booleans(),
    )
    def receive(self, cursor: int | None, tx: int | None, timeout: int, two_phase: bool) -> None:
        use_tx = tx is not None and self.envs[0].tx[tx] is not None
        two_phase = two_phase and not use_tx

        def go(env: Env) -> Any:
            c = env.cursors[cursor] if cursor is not None else None
            if cursor is not None and c is None:
                return "closed"
            t = env.tx[tx] if use_tx and tx is not None else None
            if two_phase:
                r = env.qm.dequeue_message_begin(env.desc, timeout, c)
            else:
                r = env.qm.dequeue_message(env.desc, timeout, c, t)
            if r.pending is not None:
                env.pending.append(r)
                if env is self.envs[0]:
                    self.waits.append((r, tx if use_tx else None, two_phase))
            return summarize(r)

        kind, out = self.both(go)
        if kind == "ok" and out != "closed" and out[0] == 0:
            self.took(out[1], tx if use_tx else None, two_phase)

    def took(self, name: str, tx: int | None, two_phase: bool) -> None:
        self.received(name, True)
        if tx is not None:
            self.tx_reads[tx].append(name)
        if two_phase:
            self.two_phase_locked.add(name)

    @rule(cursor=st.none() | st.integers(0, N_CURSORS - 1), nxt=st.booleans(),
          timeout=st.sampled_from([0, 0, 5]))
    def peek(self, cursor: int | None, nxt: bool, timeout: int) -> None:
        def go(env: Env) -> Any:
            c = env.cursors[cursor] if cursor is not None else None
            if cursor is not None and c is None:
                return "closed"
            if nxt and c is not None:
                r = env.qm.peek_next_message(env.desc, timeout, c)
            else:
                r = env.qm.peek_message(env.desc, timeout, c)
            if r.pending is not None:
                env.pending.append(r)
            return summarize(r)

        self.both(go)

    @rule(cursor=st.none() | st.integers(0, N_CURSORS - 1), peek=st.booleans(),
          backward=st.booleans())
    def seek(self, cursor: int | None, peek: bool, backward: bool) -> None:
        direction = SeekDirection.Backward if backward else SeekDirection.Forward

        def go(env: Env) -> Any:
            plist = env.queue.MessagePositionList
            c = env.cursors[cursor] if cursor is not None else None
            start = c.MessagePositionReference if c is not None else None
            if start is None:
                start = plist.End if backward else plist.Start
            r = env.qm.seek_available_message_position(start, env.queue, peek, direction)
            return label(r)

        self.both(go)

    @rule(which=st.integers(0, 10_000), action=st.sampled_from(list(MessageSeekAction)),
          peek=st.booleans())
    def read_by_lookup_id(self, which: int, action: MessageSeekAction, peek: bool) -> None:
        if not self.enqueued:
            return
        names = sorted(self.enqueued, key=lambda n: int(n[1:]))
        name = names[which % len(names)]

        def go(env: Env) -> Any:
            lid = env.messages[name].LookupIdentifier
            r = env.qm.read_message_by_lookup_identifier(env.desc, lid, peek, action)
            return summarize(r)

        kind, out = self.both(go)
        if kind == "ok" and out[0] == 0 and not peek:
            self.took(out[1], None, False)

    @rule(tx=st.integers(0, N_TX - 1))
    def begin_transaction(self, tx: int) -> None:
        if self.envs[0].tx[tx] is not None:
            return
        self.tx_gen += 1
        ident = f"tx{self.tx_gen}"

        def go(env: Env) -> Any:
            env.tx[tx] = env.qm.create_transaction(ident)
            return ident

        self.both(go)

    @rule(tx=st.integers(0, N_TX - 1), commit=st.booleans())
    def end_transaction(self, tx: int, commit: bool) -> None:
        if self.envs[0].tx[tx] is None:
            return
        reads = self.tx_reads[tx]
        enqueues = self.tx_enqueues[tx]
        before = {
            n: label(self.envs[0].messages[n].MessagePositionReference) for n in reads
        }

        def go(env: Env) -> Any:
            t = env.tx[tx]
            assert t is not None
            env.tx[tx] = None
            if commit:
                return env.qm.transaction_commit(t.Identifier)
            return env.qm.transaction_abort(t.Identifier)

        self.both(go)
        if not commit:
            for n in reads:
                pos = self.envs[0].messages[n].MessagePositionReference
                assert pos is not None and label(pos) == before[n]
                # an aborted receive is Available again, in its place; it may at once have been
                # taken by a waiting receiver or deleted because the queue was purged meanwhile
                self.handed_out.discard(n)
                if pos.in_list:
                    assert pos.State is MessagePositionState.Available
                else:
                    assert pos.State is MessagePositionState.Deleted
            self.aborted_enqueues.update(enqueues)
        self.tx_reads[tx] = []
        self.tx_enqueues[tx] = []

    @rule(which=st.integers(0, 10_000), delete=st.booleans())
    def dequeue_end(self, which: int, delete: bool) -> None:
        if not self.enqueued:
            return
        # only for messages locked by a two-phase read (Dequeue Message Begin)
        if not self.two_phase_locked:
            return
        names = sorted(self.two_phase_locked, key=lambda n: int(n[1:]))
        name = names[which % len(names)]
        self.two_phase_locked.discard(name)

        def go(env: Env) -> Any:
            return env.qm.dequeue_message_end(env.desc, env.messages[name], delete)

        kind, out = self.both(go)
        if kind == "ok" and out == 0 and not delete:
            # given back: a waiting receive may take it again (counted when its wait resolves)
            self.handed_out.discard(name)

    @rule()
    def purge(self) -> None:
        self.both(lambda env: env.qm.purge_queue(env.queue))

    @rule(cursor=st.integers(0, N_CURSORS - 1))
    def close_and_reopen_cursor(self, cursor: int) -> None:
        def go(env: Env) -> Any:
            c = env.cursors[cursor]
            if c is not None:
                env.qm.close_cursor(c)
            env.cursors[cursor] = env.qm.open_cursor(env.desc)
            return None

        self.both(go)

    @rule()
    def close_and_reopen_queue(self) -> None:
        def go(env: Env) -> Any:
            env.qm.close_queue(env.desc)
            env.desc = env.open()
            env.cursors = [env.qm.open_cursor(env.desc) for _ in range(N_CURSORS)]
            return None

        self.both(go)

    @rule(seconds=st.sampled_from([1, 3, 10]))
    def advance_clock(self, seconds: int) -> None:
        def go(env: Env) -> Any:
            env.clock.now += seconds
            return env.qm.fire_due_timers()

        self.both(go)

    # -------------------------------------------------------------------- invariants
    @invariant()
    def same_state(self) -> None:
        # invariants run once before the first step and after every step
        OracleMachine.runs[-1] = self.steps
        self.steps += 1
        views = []
        for env in self.envs:
            plist = env.queue.MessagePositionList
            positions = [(label(p), p.State) for p in plist]
            cursors = [
                (c.CursorState, label(c.MessagePositionReference)) if c is not None else None
                for c in env.cursors
            ]
            pending = [
                (r.pending.result and summarize(r.pending.result)) if r.pending else None
                for r in env.pending
            ]
            views.append((
                positions, label(plist.Head), label(plist.Tail), len(plist), cursors, pending,
                env.queue.TotalBytes, env.deleted,
            ))
        assert views[0] == views[1]

        self.ordered_none_lost_none_twice()

    def ordered_none_lost_none_twice(self) -> None:
        env = self.envs[0]
        live = [label(p) for p in env.queue.MessagePositionList]
        keys = [self.enqueued[n] for n in live]
        assert keys == sorted(keys), "MessagePositionList out of priority/arrival order"
        deleted = [n for n, _ in env.deleted]
        assert len(deleted) == len(set(deleted)), "a position was deleted twice"
        removed = self.aborted_enqueues
        assert set(live).isdisjoint(deleted) and set(live).isdisjoint(removed)
        assert set(live) | set(deleted) | removed == set(self.enqueued), "a message was lost"
        still = []
        for r, tx, two_phase in self.waits:  # a satisfied destructive wait is a receive too
            res = r.pending.result if r.pending is not None else None
            if res is None:
                still.append((r, tx, two_phase))
            elif res.rStatus == 0 and res.rMessage is not None:
                live_tx = tx is not None and self.envs[0].tx[tx] is not None
                self.took(res.rMessage.Label, tx if live_tx else None, two_phase)
        self.waits = still


@pytest.mark.parametrize("part", range(PARTS))
def test_indexed_model_agrees_with_literal_oracle(part: int) -> None:
    """1,400 sequences of STEPS steps in PARTS seeded parts (run side by side under xdist), at
    least 1,000 of them full length: indexed model == literal oracle."""
    OracleMachine.runs = []
    run_state_machine_as_test(
        seed(part)(type(f"OracleMachine{part}", (OracleMachine,), {})),
        settings=settings(
            max_examples=EXAMPLES // PARTS,
            stateful_step_count=STEPS,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
    full = [n for n in OracleMachine.runs if n >= STEPS]
    assert len(full) >= 1000 // PARTS, (len(full), len(OracleMachine.runs))
