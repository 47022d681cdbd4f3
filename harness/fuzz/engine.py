"""The fuzzing session: state by state, packet kind by packet kind, one mutated field per connection.

Each round opens a TCP connection to the acceptor ([MS-MQQB] 2.1.1), reaches one session state
through conformant traffic (:mod:`harness.fuzz.states`), sends one packet of one kind with one
field mutated (:mod:`harness.fuzz.generate`) and judges the reaction (:mod:`harness.fuzz.oracles`).
Rounds visit the (state x packet kind) pairs in turn, so that every pair is reached within the
first rounds; then, in turn, the pairs with a class of mutation not injected yet (as built, a
length, a flag word, a string, an identifier, another integer: :func:`mutation_class`); then a
pair in proportion to the mutations it has left.  Within a pair, every mutation is tried once,
lengths and counts first.  A crash or a
hang is re-run to confirm it, then minimised and written as a case and a pcap
(:mod:`harness.fuzz.minimise`).  Bounded by ``max_packets`` and ``duration``, paced to ``rate``
packets a second, stopped by the first confirmed crash unless ``keep_going``.

The ``seed`` makes the same run again against a target that answers the same: every draw comes
from ``random.Random`` streams the seed starts (one for the run, one per pair's mutations), and
the budget counts the packets each round generates (:func:`harness.fuzz.oracles.observed_packets`),
not those the timing let out: an acceptor's close that comes before or after the probe
UserMessage is one answer.  What the target answers -- a reply, a close, silence past a timer's
bound (a hang), a crash -- decides the rest, and ``duration`` cuts the run by the wall clock
(docs/fuzz.md "Seeds").
"""

from __future__ import annotations

import functools
import random
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import packets
from harness.fuzz.casefiles import write_finding_pcap
from harness.fuzz.generate import (
    AS_BUILT,
    KINDS,
    LENGTH_WORDS,
    Context,
    Mutation,
    leaves,
    mutations_for,
    template,
)
from harness.fuzz.minimise import confirm_and_minimise, replay
from harness.fuzz.oracles import alive, observe, observed_packets, target_violations
from harness.fuzz.resources import FD_GROWTH, listener_pid, usage
from harness.fuzz.runs import Finding, FuzzOptions, FuzzReport, TargetDown
from harness.fuzz.states import STATES, Connection, State, reach
from harness.peers.cli import is_loopback
from packets import GUID, BitFlags

__all__ = ["MUTATION_CLASSES", "Fuzzer", "mutation_class"]

RESOURCE_EVERY = 32  # rounds between two looks at the target's descriptors
RESOURCE_REPLAYS = 4  # times each recent session is sent again to find the one that leaks


MUTATION_CLASSES = ("as-built", "length", "flags", "string", "identifier", "integer")


@functools.cache
def _field_values(template_name: str) -> dict[str, Any]:
    """Each field of a template's conformant packet (as mutations name it) and its decoded value."""
    decoded = packets.parse(packets.build(template(template_name).build(Context(GUID(bytes(16))))), strict=False)
    return dict(leaves(decoded.headers))


def mutation_class(m: Mutation) -> str:
    """What a mutation changes: nothing ("as-built": a conformant packet, wrong for the state), a
    length, size or count, a flag word, a string, a GUID or byte field ("identifier"), another integer."""
    if m.op == AS_BUILT:
        return "as-built"
    value = _field_values(m.template).get(m.field)
    if isinstance(value, str) or m.op in ("max-length", "beyond-max", "unpaired-surrogate", "empty"):
        return "string"
    if isinstance(value, BitFlags):
        return "flags"
    if isinstance(value, GUID | bytes | bytearray):
        return "identifier"
    if any(w in m.field.rpartition(".")[2] for w in LENGTH_WORDS):
        return "length"
    return "integer"


class Fuzzer:
    """Runs the rounds (see the module docstring); ``say`` prints progress lines."""

    def __init__(self, options: FuzzOptions, say: Callable[[str], None] = lambda _: None) -> None:
        self.o = options
        self.say = say
        self.report = FuzzReport(options)
        self.rng = random.Random(options.seed)
        self.states = [s for s in STATES if not options.states or s.name in options.states]
        self.kinds = [k for k in KINDS if not options.kinds or k in options.kinds]
        self.queues: dict[tuple[str, str], deque[Mutation]] = {}
        self.last: tuple[State, Mutation, list[bytes]] | None = None
        self.pid: int | None = None  # the target's process, when it runs here (resource growth)
        self.recent: deque[list[bytes]] = deque(maxlen=RESOURCE_EVERY)  # the sessions since the last look
        self.baseline: Any = None
        self.previous: Any = None
        self._seen: dict[tuple[str, str, str, str], Finding] = {}
        self.untried: dict[tuple[str, str], set[str]] = {}  # classes of mutation a pair has not had

    # -- the loop ------------------------------------------------------------------------------------
    def run(self) -> FuzzReport:
        start = time.monotonic()
        pairs = [(s, k) for s in self.states for k in self.kinds]
        r = self.report
        self._watch_resources()
        while True:
            if r.packets >= self.o.max_packets:
                r.stopped = f"--max-packets {self.o.max_packets} sent"
                break
            if time.monotonic() - start >= self.o.duration:
                r.stopped = f"--duration {self.o.duration:g} s elapsed"
                break
            state, kind = self._pick(pairs)
            r.rounds += 1
            crash = self._round(state, kind)
            if self.pid is not None and r.rounds % RESOURCE_EVERY == 0:
                self._resources()
            r.seconds = time.monotonic() - start
            self._pace(start)
            if crash and not self.o.keep_going:
                r.stopped = "the first confirmed crash (--continue goes on)"
                break
        r.seconds = time.monotonic() - start
        return r

    # -- resource growth (harness.fuzz.resources) ---------------------------------------------------------
    def _watch_resources(self) -> None:
        host, port = self.o.address
        self.pid = listener_pid(port) if port and is_loopback(host) else None
        self.baseline = usage(self.pid) if self.pid is not None else None
        self.previous = self.baseline

    def _resources(self) -> None:
        """Descriptors more than :data:`FD_GROWTH` above the run's start and still growing since the
        last look: a leak, confirmed when the last round's packets, sent again, leak again."""
        assert self.pid is not None
        now = usage(self.pid)
        if now is None or self.baseline is None or self.previous is None:
            return
        growing = now.fds > self.previous.fds
        self.previous = now
        if now.fds - self.baseline.fds < FD_GROWTH or not growing or self.last is None:
            return
        state, mutation, units = self.last
        before = now
        why = (
            f"the target's process {self.pid} holds {now.fds} open descriptors, {now.fds - self.baseline.fds} more "
            f"than at the start, still growing over the last {RESOURCE_EVERY} rounds (resident "
            f"{self.baseline.rss_kib} -> {now.rss_kib} KiB)"
        )
        f = self._new("resource-growth", why, state, mutation, units)
        assert f is not None
        self.report.findings.append(f)
        self.say(f"round {f.round}: resource growth: {why}")
        after: Any = before
        for candidate in list(self.recent)[::-1]:  # the latest sessions first: which one leaks?
            start = usage(self.pid)
            for _ in range(RESOURCE_REPLAYS):
                _oracle, _why, conn, _ = replay(candidate, self.o.address, self.o.timers)
                self.note(conn)
            after = usage(self.pid)
            if start is not None and after is not None and after.fds - start.fds >= RESOURCE_REPLAYS:
                f.confirmed, f.packets, f.minimal = True, list(candidate), list(candidate)
                write_finding_pcap(self.o, f, conn, self.o.address)
                break
        self.say(
            f"  {'confirmed' if f.confirmed else 'NOT confirmed'}"
            + (f": each of {RESOURCE_REPLAYS} replays of a session left a descriptor more" if f.confirmed else "")
        )
        self.baseline = self.previous = after  # one finding per run of growth
        self.pid = None if f.confirmed else self.pid  # reported once

    def _pace(self, start: float) -> None:
        ahead = self.report.packets / self.o.rate - (time.monotonic() - start)
        if ahead > 0:
            time.sleep(min(ahead, 1.0))

    def _pick(self, pairs: list[tuple[State, str]]) -> tuple[State, str]:
        """Every pair once, in order; then, in turn, the pairs with a class of mutation (see
        :func:`mutation_class`) not injected yet; then :meth:`_weighted`."""
        r = self.report.rounds
        if r < len(pairs):
            return pairs[r]
        pending = [(s, k) for s, k in pairs if self._untried(s, k)]
        return pending[r % len(pending)] if pending else self._weighted(pairs)

    def _untried(self, state: State, kind: str) -> set[str]:
        key = (state.name, kind)
        if key not in self.untried:
            self.untried[key] = {mutation_class(m) for m in self._queue(state, kind)}
        return self.untried[key]

    def _weighted(self, pairs: list[tuple[State, str]]) -> tuple[State, str]:
        """After the first sweep (every pair once): a pair drawn in proportion to the mutations it
        has not tried yet, so that the kinds with many fields (UserMessage) get their share."""
        weights = [len(self._queue(s, k)) or 1 for s, k in pairs]
        return self.rng.choices(pairs, weights)[0]

    def _queue(self, state: State, kind: str) -> deque[Mutation]:
        key = (state.name, kind)
        queue = self.queues.get(key)
        if not queue:
            ctx = Context(GUID(bytes(16)), GUID(bytes(range(16))), self.o.queue_id, self.o.tx_queue_id)
            seed = f"{self.o.seed}/{state.name}/{kind}"
            queue = self.queues[key] = deque(mutations_for(kind, ctx, random.Random(seed)))
        return queue

    def _next(self, state: State, kind: str) -> Mutation:
        """The first mutation of a class this pair has not had yet, else the next one in the queue."""
        queue, untried = self._queue(state, kind), self._untried(state, kind)
        for i, m in enumerate(queue):
            if mutation_class(m) in untried:
                del queue[i]
                return m
        untried.clear()  # the classes left have no mutation left in this pass
        return queue.popleft()

    def _covered(self, state: State, kind: str, mutation: Mutation) -> None:
        """``mutation`` was injected in ``state``: counted in the coverage tables."""
        cls = mutation_class(mutation)
        self.report.coverage[(state.name, kind, mutation.field or "-")] += 1
        self.report.classes[(state.name, kind, cls)] += 1
        self._untried(state, kind).discard(cls)

    def _context(self) -> Context:
        return Context(GUID(self.rng.randbytes(16)), queue_id=self.o.queue_id, tx_queue_id=self.o.tx_queue_id)

    def _round(self, state: State, kind: str) -> bool:
        """One connection; True when a confirmed crash was found."""
        r, t = self.report, self.o.timers
        mutation = self._next(state, kind)
        ctx = self._context()
        conn = Connection(self.o.address)
        try:
            conn.open()
        except OSError as e:
            return self._lost(f"the port refuses connections ({e.strerror or e})")
        try:
            try:
                prefix = reach(conn, state, ctx, t.initialization())
            except ValueError:
                r.packets += conn.sent
                why = alive(self.o.address, t, self.o.ping)
                return self._lost(why) if why else False
            try:
                data = mutation.apply(template(mutation.template).build(ctx), self.rng)
            except ValueError:
                r.packets += len(prefix)
                r.skipped += 1
                return False
            reaction = observe(conn, data, state.session_state, ctx, t)
            r.packets += len(prefix) + observed_packets(data, state.session_state)  # the probe even if not written
            self._covered(state, kind, mutation)
            units = [*prefix, data]
            self.last = (state, mutation, units)
            self.recent.append(units)
            oracle, why = "", ""
            if reaction.outcome == "silent":
                oracle, why = "hang", reaction.why
            elif reaction.outcome in ("closed", "refused", "incomplete"):
                dead = alive(self.o.address, t, self.o.ping)
                if dead:
                    oracle, why = "crash", dead
            if oracle:
                return self._found(oracle, why, state, mutation, units)
            for rule, section, level, evidence in target_violations(conn):
                self._violation(state, mutation, units, str(rule), section, level, evidence)
            return False
        finally:
            conn.close()

    def _lost(self, why: str) -> bool:
        """The target stopped serving between rounds: blame the last round's packet."""
        if self.last is None:
            self.report.stopped = f"the target does not serve: {why}"
            raise TargetDown(why)
        state, mutation, units = self.last
        self.last = None
        return self._found("crash", why, state, mutation, units)

    # -- findings ----------------------------------------------------------------------------------------
    def _new(self, oracle: str, why: str, state: State, mutation: Mutation, units: list[bytes]) -> Finding | None:
        kind = template(mutation.template).kind
        f = Finding(
            id=f"fuzz-{oracle}-{len(self.report.findings) + 1}",
            oracle=oracle,
            why=why,
            state=state.name,
            kind=kind,
            template=mutation.template,
            field=mutation.field,
            op=mutation.op,
            round=self.report.rounds,
            seed=self.o.seed,
            packets=list(units),
        )
        return f

    def confirm(self, f: Finding) -> None:
        """Re-run the finding, minimise it, write its case and pcap (harness.fuzz.minimise)."""
        confirm_and_minimise(self, f)

    def _found(self, oracle: str, why: str, state: State, mutation: Mutation, units: list[bytes]) -> bool:
        f = self._new(oracle, why, state, mutation, units)
        assert f is not None
        earlier = self._seen.get(f.signature)
        if earlier is not None:
            earlier.duplicates += 1
            if oracle == "crash":
                self.wait_alive()
            return False
        self._seen[f.signature] = f
        self.report.findings.append(f)
        self.say(f"round {f.round}: {oracle} in {state.name} after {mutation.template} {mutation.label}: {why}")
        self.confirm(f)
        self.say(
            f"  {'confirmed' if f.confirmed else 'NOT confirmed'}"
            + (f", minimal case {f.case} ({len(f.minimal)} packets; run: {f.case_outcome})" if f.case else "")
            + (f", pcap {f.pcap}" if f.pcap else "")
        )
        return oracle == "crash" and f.confirmed

    def _violation(
        self, state: State, mutation: Mutation, units: list[bytes], rule: str, section: str, level: str, evidence: str
    ) -> None:
        f = self._new("violation", evidence, state, mutation, units)
        assert f is not None
        f.requirement, f.level, f.section = rule, level, section
        earlier = self._seen.get(f.signature)
        if earlier is not None:
            earlier.duplicates += 1
            return
        self._seen[f.signature] = f
        self.report.findings.append(f)
        self.say(f"round {f.round}: violation {rule} ({level}, {section}) in {state.name}: {evidence}")
        self.confirm(f)
        self.say(
            f"  {'confirmed' if f.confirmed else 'NOT confirmed'}" + (f", minimal case {f.case}" if f.case else "")
        )

    def wait_alive(self) -> str:
        """Wait (at most ``restart_wait``) until the target serves again; "" then, else why not."""
        end = time.monotonic() + self.o.restart_wait
        why = alive(self.o.address, self.o.timers, self.o.ping)
        while why and time.monotonic() < end:
            time.sleep(0.1)
            why = alive(self.o.address, self.o.timers, self.o.ping)
        return why

    def note(self, conn: Connection) -> None:
        self.report.packets += conn.sent
