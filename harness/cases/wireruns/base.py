"""What every wire run shares: wait bounds from the [MS-MQQB] 3.1.2 timers, and step checks.

Every wait of a wire step is bounded by the [MS-MQQB] 3.1.2 timers it names (``within:
SessionAckSend``; harness.cases.wiretimers.TIMERS), computed by :meth:`WireRun.bound` from the timer
durations of the side that runs them: the implementation-dependent values the sender under test
declared (initiator cases; the harness's own :class:`harness.session.SessionConfig` for its
client in acceptor cases), the spec's fixed ones (OrderAckTimeout 500 ms, 3.1.3.2; the Ping
Response Timer's second, 3.1.2.9) and the values sent in the ConnectionParameters request
(AckTimeout, RecoverableAckTimeout, 2.2.2.1), each multiplied by the time scale of the side that
runs the timer.  A timer named with its side (``initiator.SessionAckSend``,
harness.cases.wiretimers.SIDED_TIMERS) is that side's own instance: the sender's Session Ack Send Timer
runs the AckTimeout it sent / 2 at the sender's time scale.  ``within`` adds a margin of 25 % and
half a real second (a twentieth when the step expects that nothing happens: it always waits its
bound out); ``before`` (nothing may happen before the timers run out) takes 25 % off.

A sender may declare a timer of its own absent (``"timers": {"SessionRetryConnect": null}`` in
its wire_setup reply: it never retries a failed connection): a case whose waits are bounded by
that timer (harness.cases.wiretimers.bound_timers) cannot judge it and is ``unsupported``, naming the
timer (:func:`absent_timers`, :meth:`WireRun.require_timers`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import packets
from harness.cases.actions import ACTIONS
from harness.cases.grading import unwrap
from harness.cases.model import Case
from harness.cases.target import TargetUnsupported
from harness.cases.wire import behaviours_of
from harness.cases.wirefields import field_span, field_value, hexdump
from harness.cases.wirematch import normalise, wire_matches
from harness.cases.wiretimers import TIMERS, bound_timers, parse_bound, timer_info
from harness.errors import HarnessError
from harness.session import RuleViolation, SessionConfig
from harness.session.rules import RULES
from packets import PacketKind

__all__ = [
    "DEFAULT_TIMER_SCALE",
    "Failure",
    "WireCaseError",
    "WireRun",
    "absent_timers",
    "flatten",
    "kind_of",
    "max_in_flight",
    "violation_failures",
]

DEFAULT_TIMER_SCALE = 0.05
DEFAULT_WINDOW = 2
WITHIN_FACTOR = 1.25  # `within`: the timers' durations plus a quarter ...
WITHIN_SLACK = 0.5  # ... plus this many real seconds (scheduling, loopback, a busy machine) ...
QUIET_SLACK = 0.05  # ... or this many when the step expects that nothing happens (the wait always runs out)
BEFORE_FACTOR = 0.75  # `before`: a quarter less than the timers' durations
MAX_RECOVERABLE_ACK_TIMEOUT = 0x1D4C0  # 2.2.2.1: the largest valid RecoverableAckTimeout (ms)
ORDER_ACK_TIMEOUT = 0.5  # OrderAckTimeout, 3.1.3.2: "MUST be set to a value of 500 milliseconds"
MAXIMUM_ORDER_ACK_DELAY = 10.0  # MaximumOrderAckDelay, 3.1.3.2: "SHOULD be set to 10 seconds"


def absent_timers(timers: Mapping[str, Any]) -> list[str]:
    """The timers a sender's wire_setup reply declares absent (``null``): [MS-MQQB] 3.1.2 timers
    of the sender's own side (harness.cases.wiretimers.TIMERS), such as SessionRetryConnect for a
    sender that does not retry.  A value the session cannot do without (ResendInterval,
    AckWaitTimeout, SessionAckWaitMultiple) or another side's timer cannot be absent:
    WireCaseError."""
    absent = [str(name) for name, value in timers.items() if value is None]
    own = [name for name, (_, side) in TIMERS.items() if side == "initiator"]
    wrong = [name for name in absent if name not in own]
    if wrong:
        raise WireCaseError(
            f"wire_setup: timers {', '.join(wrong)} cannot be null; a sender may declare absent only "
            f"timers of its own ([MS-MQQB] 3.1.2): {', '.join(own)}"
        )
    return absent


class WireCaseError(HarnessError):
    """A wire case could not run as written (not a difference of the implementation)."""


@dataclass
class Failure:
    field: str
    expected: Any  # as shown: without its requirement annotation
    observed: Any
    evidence: str = ""
    raw: Any = None  # as written in the case (its requirement annotation grades the failure)
    # tests any expectation (a reading's value) against what was observed (harness.cases.grading)
    matcher: Callable[[Any], bool] | None = None
    rule: str = ""  # a session rule the peer broke: the failure is graded by the rule's requirement


def violation_failures(written: Any, seen: Sequence[RuleViolation]) -> list[Failure]:
    """The differences of a ``then.peer.violations`` expectation (``written``: the rule ids the case
    expects) from the rules the session showed (``seen``): one per rule seen that the case does not
    name, and one per named rule that was not seen, each graded by that rule's requirement
    (harness.cases.violations).  A "record" rule is never a difference."""
    expected = [str(r) for r in (unwrap(written) or [])]
    by_rule: dict[str, list[RuleViolation]] = {}
    for v in seen:
        by_rule.setdefault(str(v.rule_id), []).append(v)
    failures = []
    for rule_id, found in by_rule.items():
        known = RULES.get(rule_id)
        if rule_id in expected or (known is not None and not known.graded):
            continue
        first = found[0]
        where = f"packet {first.packet_index}" if first.packet_index >= 0 else "no packet"
        sender = {"c2s": "initiator", "s2c": "acceptor"}.get(first.direction, "")
        times = f"{len(found)} time{'s' if len(found) != 1 else ''}"
        observed = f"reported {times}; first at {where}{f' ({sender})' if sender else ''}: {first.evidence}"
        evidence = "\n".join(f"{v.section} at packet {v.packet_index} {v.direction}: {v.evidence}" for v in found)
        failures.append(
            Failure(f"peer.violations[{rule_id}]", "not reported", observed, evidence, raw=written, rule=rule_id)
        )
    reported = sorted(by_rule) or "none reported"
    for rule_id in dict.fromkeys(r for r in expected if r not in by_rule):
        failures.append(Failure(f"peer.violations[{rule_id}]", "reported", reported, raw=written, rule=rule_id))
    return failures


def kind_of(data: bytes) -> str:
    try:
        return packets.parse(data, strict=False).kind.name
    except Exception:
        return "Unknown"


class WireRun:
    """One wire case: the side it checks, its time scales, its timer bounds and its checks.
    Subclasses run one side (harness.cases.wireruns.initiator / .acceptor) and execute the
    case actions they declare (harness.cases.actions)."""

    side = ""

    def __init__(self, case: Case, options: Any) -> None:
        self.case = case
        self.options = options
        # the last step's expectations as written, each with a matcher of what was observed
        self.step_checks: list[tuple[Any, Callable[[Any], bool]]] = []
        peer_spec = case.given["peer"]
        self.behaviours = [options.peer if b == "normal" and options.peer else b for b in behaviours_of(peer_spec)]
        self.window = int(peer_spec.get("window", DEFAULT_WINDOW))
        self.config = SessionConfig(window_size=self.window)  # the durations of the harness's own timers
        self.initiator_scale = 1.0  # the time scale of the initiator's 3.1.2 timers
        self.acceptor_scale = 1.0  # ... and of the acceptor's
        self.waited = ""  # how the last waiting step's bound was derived
        self.quiet = False  # the current step expects that nothing happens
        self.last_packet: bytes | None = None  # the packet the current step's expectations read
        self.last_ping: bytes | None = None  # the Ping Response of the last ping step
        self.timer_origin: dict[str, str] = {}  # timer -> where its duration comes from
        self.absent: list[str] = []  # the timers the side under test declares it does not run

    # -- hooks of a side ---------------------------------------------------------------------------
    def connection_parameters(self) -> tuple[int | None, int, str]:
        """(RecoverableAckTimeout, AckTimeout) in ms of the ConnectionParameters request of the
        session (None: not known yet), and where they come from."""
        raise NotImplementedError

    def recoverable(self) -> bool:
        """A recoverable (or transactional) message was sent on the session."""
        raise NotImplementedError

    def transactional_count(self) -> int:
        raise NotImplementedError

    def sent_value(self, path: str) -> Any:
        """A field of the packet the harness last sent of its kind (``{sent: Kind.Header.Field}``)."""
        return None

    def resolve(self, expected: Any) -> Any:
        """An expectation with the run's own values in place of their names."""
        return expected

    def start(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # -- wait bounds ([MS-MQQB] 3.1.2) --------------------------------------------------------------
    def _absent_timer(self, name: str, where: str) -> TargetUnsupported:
        section = TIMERS[name][0] if name in TIMERS else "MS-MQQB 3.1.2"
        who = "sender" if self.side == "initiator" else self.side
        return TargetUnsupported(
            f"the {name} timer ([{section.replace(' ', '] ', 1)}): the {who} declares it absent "
            f'(wire_setup "timers": {{"{name}": null}}) and {where}',
        )

    def require_timers(self) -> None:
        """TargetError ``Unsupported`` when a wait of the case is bounded by a timer the side under
        test declared absent (:attr:`absent`): the case cannot judge it."""
        needed = bound_timers(self.case.when)
        for name in self.absent:
            if name in needed:
                raise self._absent_timer(name, needed[name][0])

    def timer(self, name: str) -> tuple[float, str]:
        """The duration in seconds of an [MS-MQQB] 3.1.2 timer in this run (unscaled), and how it
        was derived."""
        if name in self.absent:
            raise self._absent_timer(name, "a wait is bounded by it")
        c = self.config
        origin = self.timer_origin.get(name, "the harness's")
        if name == "SessionInitialization":  # 3.1.2.1: implementation-dependent <43>
            return c.session_initialization, f"{origin} {c.session_initialization:g} s"
        if name == "SessionRetryConnect":  # 3.1.2.3: implementation-dependent <45>
            return c.session_retry_connect, f"{origin} {c.session_retry_connect:g} s"
        recoverable, ack, how = self.connection_parameters()
        if name == "SessionAckWait":  # 3.1.2.4: a multiple of AckWaitTimeout
            return c.ack_wait_multiple * ack / 1000, f"{c.ack_wait_multiple} x AckTimeout {ack} ms {how}"
        if name == "SessionAckSend":  # 3.1.5.8.2: AckWaitTimeout / 2; 3.1.5.8.7: RecoverableAckSendTimeout
            seconds, text = ack / 2000, f"AckTimeout {ack} ms {how} / 2"
            if self.recoverable():
                rec, rec_how = (
                    (recoverable, how) if recoverable is not None else (MAX_RECOVERABLE_ACK_TIMEOUT, "at most")
                )
                if rec / 1000 > seconds:
                    seconds, text = rec / 1000, f"RecoverableAckTimeout {rec} ms {rec_how} (recoverable messages)"
            return seconds, text
        if name == "initiator.SessionAckSend":  # 3.1.5.8.2 on the initiator: its own AckWaitTimeout / 2
            # (the AckTimeout it sends, 3.1.5.3.2); the UserMessage Packets it receives (OrderAck
            # Packets) are express, so RecoverableAckSendTimeout never restarts it (3.1.5.8.7)
            return ack / 2000, f"the initiator's AckWaitTimeout: AckTimeout {ack} ms {how} / 2"
        if name == "TransactionalAckWait":  # 3.1.2.6: TxOutgoingSequence.ResendInterval
            origin = self.timer_origin.get("ResendInterval", "the harness's")
            return c.resend_intervals[0], f"{origin} first ResendTimerTable entry"
        if name == "OrderAckSend":  # 3.1.2.7 / 3.1.5.8.6
            if self.transactional_count() > 1:  # restarted by each later one within MaximumOrderAckDelay
                return ORDER_ACK_TIMEOUT + MAXIMUM_ORDER_ACK_DELAY, "OrderAckTimeout 500 ms + MaximumOrderAckDelay 10 s"
            return ORDER_ACK_TIMEOUT, "OrderAckTimeout 500 ms"
        if name == "PingResponse":  # 3.1.2.9: "always one second"
            return c.ping_response, "one second"
        raise WireCaseError(f"unknown timer {name!r}")

    def bound(self, args: Mapping[str, Any], default: str = "") -> tuple[float, str]:
        """The real seconds a waiting step waits (``within`` / ``before`` its timers, see the
        module docstring), and a sentence saying how they were derived."""
        key = "before" if "before" in args else "within"
        expr = str(args.get(key, default))
        total = 0.0
        parts = []
        for factor, name in parse_bound(expr):
            seconds, how = self.timer(name)
            section, side = timer_info(name)
            scale = self.initiator_scale if side == "initiator" else self.acceptor_scale
            total += factor * seconds * scale
            times = "" if factor == 1 else f"{factor:g} x "
            parts.append(f"{times}{name} ({section}, {how}: {seconds:g} s) x scale {scale:g}")
        if key == "within":
            slack = QUIET_SLACK if self.quiet else WITHIN_SLACK
            real, margin = total * WITHIN_FACTOR + slack, f"+{WITHIN_FACTOR - 1:.0%} +{slack:g} s"
        else:
            real, margin = total * BEFORE_FACTOR, f"-{1 - BEFORE_FACTOR:.0%}"
        return real, f"{key} {expr}: {' + '.join(parts)} = {total:.3g} s, {margin} = {real:.3g} s"

    # -- checks -------------------------------------------------------------------------------------
    def expectations(self, action: str, args: Mapping[str, Any], expect: Mapping[str, Any] | None) -> dict[str, Any]:
        """The step's expectations: the action's defaults (harness.cases.actions), then the case's."""
        written = dict(expect or {})
        return {**ACTIONS[action].defaults(args, written), **written}

    def skipped(self, key: str) -> str:
        """Why an expectation on ``key`` is not checked on this run ("" when it is)."""
        return ""

    def check_step(
        self, action: str, args: Mapping[str, Any], expect: Mapping[str, Any] | None, result: dict[str, Any]
    ) -> tuple[list[Failure], list[str]]:
        """The differences of one step, and the expectations not checked (with why)."""
        failures: list[Failure] = []
        not_checked: list[str] = []
        flat = flatten(result)
        self.step_checks = []
        raw = self.last_packet if action in ("receive", "wait_for") else None
        packet = packets.parse(raw, strict=False) if raw else None
        if action == "ping" and self.last_ping is not None:
            raw, packet = self.last_ping, packets.parse_ping(self.last_ping, strict=False)
        for key, written in self.expectations(action, args, expect).items():
            why = self.skipped(key) if key not in flat else ""
            if why:
                not_checked.append(f"{key} ({why})")
                continue
            if key in flat:
                present, observed = True, flat[key]
            elif packet is not None and key not in ("satisfied", "closed", "timed_out", "kind", "answered"):
                present, observed = field_value(packet, key)
            else:
                present, observed = False, None
            expected = self.resolve(unwrap(written))
            self.step_checks.append((written, self._matcher(observed, present)))
            if not wire_matches(expected, observed, self.sent_value, present):
                evidence = ""
                if raw is not None and packet is not None and key not in flat:
                    evidence = hexdump(raw, field_span(raw, key, packet.kind.name))
                failures.append(
                    Failure(
                        key,
                        expected,
                        observed if present else "<absent>",
                        evidence,
                        written,
                        self._matcher(observed, present),
                    )
                )
        return failures, not_checked

    def _matcher(self, observed: Any, present: bool) -> Callable[[Any], bool]:
        return lambda expected: wire_matches(self.resolve(expected), observed, self.sent_value, present)

    def observe_then(self) -> tuple[list[Failure], list[str]]:
        """The differences of the case's ``then``, and what of it was not checked (with why)."""
        return [], []


def flatten(result: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in result.items():
        if isinstance(v, Mapping):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = normalise(v)
    return out


def max_in_flight(connections: list[list[tuple[str, bytes]]]) -> int:
    """The most UserMessages the initiator had sent and not yet seen acknowledged (by the
    AckSequenceNumber of a SessionHeader it received) on one connection: the window in use."""
    best = 0
    for conn in connections:
        sent = acked = 0
        for direction, data in conn:
            try:
                p = packets.parse(data, strict=False)
            except Exception:
                continue
            if direction == "c2s" and p.kind is PacketKind.UserMessage:
                sent += 1
                best = max(best, sent - acked)
            elif direction == "s2c" and "SessionHeader" in p.headers and p.headers.SessionHeader is not None:
                acked = max(acked, int(p.headers.SessionHeader.AckSequenceNumber))
    return best
