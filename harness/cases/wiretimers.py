"""The [MS-MQQB] 3.1.2 timers that bound a wire case's waits.

Every wait of a wire case is bounded by the timers it names (``within: SessionAckSend``,
``before: SessionInitialization``), never by a number of seconds: :func:`parse_bound` reads a sum
of timers with factors, :func:`bound_timers` lists those a case needs, and the wire target
computes each bound from the timer durations and the values the harness sent
(harness.cases.wireruns.base).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["SIDED_TIMERS", "SIDES", "TIMERS", "Bound", "bound_timers", "parse_bound", "timer_info"]

# The [MS-MQQB] 3.1.2 timers a wait can be bounded by: name -> (section, the side that runs it).
# Every wire case checks one side of a session whose initiator is the harness (the reference
# sender, or the case's own client), so "acceptor" timers are the side under test's (or the
# simulated peer's) and "initiator" timers the harness's own.
TIMERS: dict[str, tuple[str, str]] = {
    "SessionInitialization": ("MS-MQQB 3.1.2.1", "initiator"),
    "SessionRetryConnect": ("MS-MQQB 3.1.2.3", "initiator"),
    "SessionAckWait": ("MS-MQQB 3.1.2.4", "initiator"),
    "SessionAckSend": ("MS-MQQB 3.1.2.5", "acceptor"),
    "TransactionalAckWait": ("MS-MQQB 3.1.2.6", "initiator"),
    "OrderAckSend": ("MS-MQQB 3.1.2.7", "acceptor"),
    "PingResponse": ("MS-MQQB 3.1.2.9", "initiator"),
}
# A timer both sides run, named with the side that runs it (``initiator.SessionAckSend``): the
# other side's instance of a timer of :data:`TIMERS`, for a wait on what that side does when its
# own timer runs out.  The Session Ack Send Timer (3.1.2.5) of the initiator is started by the
# UserMessage Packets it receives (the OrderAck Packets of transactional messages) and runs its
# own AckWaitTimeout / 2 (3.1.5.8.2), the AckTimeout it sent (3.1.5.3.2), at its own time scale.
SIDED_TIMERS: dict[str, tuple[str, str, str]] = {  # name -> (timer, section, side)
    "initiator.SessionAckSend": ("SessionAckSend", "MS-MQQB 3.1.2.5", "initiator"),
}
SIDES = ("initiator", "acceptor")


Bound = tuple[tuple[float, str], ...]  # a sum of timer durations: ((factor, timer name), ...)


def parse_bound(text: Any) -> Bound:
    """``"SessionInitialization + 2 * SessionAckWait"`` -> ((1, "SessionInitialization"),
    (2, "SessionAckWait")): a sum of [MS-MQQB] 3.1.2 timers (:data:`TIMERS`), each with an
    optional positive factor, and optionally named with the side that runs it
    (``initiator.SessionAckSend``, :data:`SIDED_TIMERS`; a timer named with the side
    :data:`TIMERS` gives it is that timer).  ValueError names what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"expected the name of an [MS-MQQB] 3.1.2 timer (one of {', '.join(TIMERS)}), got {text!r}")
    terms: list[tuple[float, str]] = []
    for term in text.split("+"):
        m = re.fullmatch(r"\s*(?:(\d+(?:\.\d+)?)\s*\*\s*)?(?:([A-Za-z]+)\.)?([A-Za-z]+)\s*", term)
        if m is None:
            raise ValueError(f"{term.strip()!r} is not a timer or N * timer (a timer may name its side: side.Timer)")
        factor, side, name = float(m.group(1) or 1), m.group(2), m.group(3)
        if name not in TIMERS:
            close = difflib.get_close_matches(name, list(TIMERS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"unknown timer {name!r}{hint}; the [MS-MQQB] 3.1.2 timers are: {', '.join(TIMERS)}")
        if side is not None and side not in SIDES:
            raise ValueError(f"{side}.{name}: the side that runs a timer is one of {', '.join(SIDES)}")
        if side is not None and side != TIMERS[name][1]:
            name = f"{side}.{name}"
            if name not in SIDED_TIMERS:
                sided = ", ".join(SIDED_TIMERS)
                raise ValueError(f"the harness does not derive {name}; the timers named with a side are: {sided}")
        if factor <= 0:
            raise ValueError(f"the factor of {name} is not positive")
        terms.append((factor, name))
    return tuple(terms)


def timer_info(name: str) -> tuple[str, str]:
    """(section, the side that runs it) of a timer as :func:`parse_bound` names it."""
    if name in SIDED_TIMERS:
        _, section, side = SIDED_TIMERS[name]
        return section, side
    return TIMERS[name]


def bound_timers(steps: Iterable[Any]) -> dict[str, list[str]]:
    """The [MS-MQQB] 3.1.2 timers that bound the waits of ``steps`` (a case's ``when``), each
    with where it is named (``step 3 (wait_for, line 40): within 2 * SessionRetryConnect``):
    a case needs every one of them, so a sender that declares one absent
    (``timers: {"SessionRetryConnect": null}`` in its wire_setup reply) cannot run the case.
    A timer named with its side (``initiator.SessionAckSend``) is listed by that name."""
    needed: dict[str, list[str]] = {}
    for index, step in enumerate(steps):
        args = getattr(step, "args", None) or {}
        for key in ("within", "before"):
            if key not in args:
                continue
            try:
                terms = parse_bound(args[key])
            except ValueError:
                continue
            line = f", line {step.line}" if getattr(step, "line", 0) else ""
            where = f"step {index} ({getattr(step, 'action', '') or step.event}{line}): {key} {args[key]}"
            for _, name in terms:
                needed.setdefault(name, []).append(where)
    return needed
