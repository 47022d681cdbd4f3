"""The fuzzer's oracles: crash, hang and protocol violation, each bounded by the spec's timers.

- **hang**: the acceptor neither answers nor closes within the timer that applies, computed from
  the values the fuzzer sent, scaled like the target's timers, plus 25 % and 0.5 s (as the case
  runner waits, docs/cases.md "Waits"): before OPEN, the Session Initialization Timer ([MS-MQQB]
  3.1.2.1; the harness's 30 s, the duration is implementation-dependent) within which a
  conformant acceptor answers or closes (3.1.6.6); in OPEN, a conformant probe UserMessage is
  sent after the injected packet and its acknowledgment is due within the Session Ack Send Timer
  (3.1.2.5: AckTimeout sent / 2; at least the RecoverableAckTimeout sent once a recoverable
  message went out, 3.1.5.8.7).  A packet that announces more bytes than were sent is judged by
  the Session Initialization Timer before OPEN (it runs from the connection on, 3.1.5.10, and
  closes the session, 3.1.6.6, whatever the acceptor waits for), never a hang in OPEN: the
  acceptor may wait for the rest, and no timer of 3.1.2 obliges it to act before its
  implementation-dependent Session Cleanup Timer (3.1.2.2) -- a BaseHeader.PacketSize
  beyond the bytes ([MS-MQMQ] 2.2.19.1), or an [MS-MQRR] 2.2.5.2 ExtensionHeader whose
  RemainingHeadersSize announces more headers than follow (framed as ``packets.StreamSplitter``
  frames the stream).
- **crash**: after the acceptor closed a session or stayed silent, a new TCP connection is
  refused, or reset, or its EstablishConnection request (3.1.5.3.1) is not answered within
  the Session Initialization Timer, or a Ping Request (2.1.2, 3.1.7.7) is not answered within the
  Ping Response Timer (3.1.2.9) when the target names its ping port.
- **violation**: a passive :class:`harness.session.Observer` of the connection reports a rule the
  acceptor broke in its replies (direction s2c), graded by the rule's requirement level in
  cases/requirements.yaml (rule ids are requirement ids).
"""

from __future__ import annotations

import functools
import socket
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import packets
from harness.cases.lines import CaseError
from harness.cases.loader import load_requirements
from harness.cases.model import Requirement
from harness.fuzz.generate import Context
from harness.fuzz.states import CONNECT_TIMEOUT, STATES, Connection, build
from harness.session import Observer, SessionState
from harness.session.transitions import Role, transition
from packets import GUID, NULL_GUID, PacketKind, StreamSplitter
from packets import session as sp

__all__ = [
    "Reaction",
    "Timers",
    "alive",
    "close_requirement",
    "incomplete",
    "observe",
    "observed_packets",
    "requirement_level",
    "target_violations",
]

GRACE = 0.05  # seconds the fuzzer waits for a close before it probes
PREFIX_REPLIES = max(sum(step.reply is not None for step in s.prefix) for s in STATES)  # awaited to reach a state
REQUIREMENTS = Path(__file__).resolve().parent.parent.parent / "cases" / "requirements.yaml"


@dataclass(frozen=True)
class Timers:
    """The [MS-MQQB] 3.1.2 timers that bound the fuzzer's waits, at the target's time ``scale``."""

    scale: float = 1.0
    session_initialization: float = 30.0  # 3.1.2.1 (the harness's; implementation-dependent)
    ping_response: float = 1.0  # 3.1.2.9

    @staticmethod
    def bound(seconds: float) -> float:
        return seconds * 1.25 + 0.5

    def initialization(self) -> float:
        return self.bound(self.session_initialization * self.scale)

    def ack_send(self, ctx: Context, recoverable: bool) -> float:
        """3.1.2.5: AckTimeout / 2 of the values sent; RecoverableAckTimeout once a recoverable one went out."""
        seconds = ctx.ack_timeout / 2000
        if recoverable:
            seconds = max(seconds, ctx.recoverable_ack_timeout / 1000)
        return self.bound(seconds * self.scale)

    def ping(self) -> float:
        return self.bound(self.ping_response * self.scale)

    def round(self) -> float:
        """The longest one round of the acceptor fuzzer waits by these bounds, the duration of a run
        being checked between rounds: its connection and the live check's made (``CONNECT_TIMEOUT``
        each), the replies of the longest prefix (``PREFIX_REPLIES``), the reaction to the injected
        packet and the live check's EstablishConnection each within the longest bound (before OPEN
        or the Session Ack Send Timer's), a Ping Response."""
        longest = max(self.initialization(), self.ack_send(Context(NULL_GUID), True))
        return 2 * CONNECT_TIMEOUT + (PREFIX_REPLIES + 2) * longest + GRACE + self.ping()


@dataclass
class Reaction:
    """What the acceptor did with the injected packet: "answered", "closed", "silent" (neither
    within the bound: a hang), "incomplete" (the packet announced more bytes than sent) or
    "refused" (the packet could not even be written); ``waited`` the bound, ``why`` in words."""

    outcome: str
    waited: float = 0.0
    why: str = ""


def _has_session_header(data: bytes) -> bool:
    try:
        return "SessionHeader" in packets.parse(data, strict=False).headers
    except packets.PacketError:
        return False


def incomplete(data: bytes) -> bool:
    """True when a receiver that frames the stream as the spec does still waits for bytes after
    ``data``: a BaseHeader.PacketSize beyond the bytes sent ([MS-MQMQ] 2.2.19.1), a SessionHeader
    announced and missing, an [MS-MQRR] 2.2.5.2 ExtensionHeader whose RemainingHeadersSize
    announces more headers than follow (:class:`packets.StreamSplitter`).  A stream that cannot
    be framed (a wrong Signature, a PacketSize out of bounds) is not waited on: it is closed
    ([MS-MQQB] 3.1.5.1.3)."""
    splitter = StreamSplitter()
    try:
        splitter.feed(data)
        return splitter.buffered > 0
    except packets.PacketError:
        return False


def observed_packets(data: bytes, session_state: str) -> int:
    """The packets :func:`observe` sends for ``data``: the packet, and in OPEN the probe UserMessage
    after it unless the packet announces more bytes than were sent.  The probe is not written when
    the acceptor's close came within :data:`GRACE`, which is a matter of timing: the budget of a
    run counts it either way, so that what the seed generates does not depend on it."""
    return 2 if session_state == "OPEN" and not incomplete(data) else 1


def observe(conn: Connection, data: bytes, session_state: str, ctx: Context, timers: Timers) -> Reaction:
    """Send ``data`` on ``conn`` (in ``session_state``) and judge what the acceptor does; it sends
    :func:`observed_packets` packets at most."""
    if not conn.send(data):
        return Reaction("refused", why="the connection was gone before the packet was written")
    waits = incomplete(data)
    first = conn.read(GRACE)
    if conn.closed:
        return Reaction("closed", GRACE, "the acceptor closed the session")
    if waits and session_state == "OPEN":
        return Reaction("incomplete", GRACE, "the packet announces more bytes than were sent")
    if session_state != "OPEN":  # the Session Initialization Timer runs (3.1.5.10), even for the rest of a packet
        if first is not None:
            return Reaction("answered", GRACE)
        bound = timers.initialization()
        reply = conn.read(bound)
        if reply is not None:
            return Reaction("answered", bound)
        if conn.closed:
            return Reaction("closed", bound, "the acceptor closed the session")
        return Reaction(
            "silent",
            bound,
            ("the packet announces more bytes than were sent, but " if waits else "")
            + f"neither a reply nor a close within the Session Initialization Timer (MS-MQQB 3.1.2.1, "
            f"{timers.session_initialization:g} s x scale {timers.scale:g}, +25% +0.5 s = {bound:.3g} s)",
        )
    probe = build("UserMessage[express]", ctx)
    bound = timers.ack_send(ctx, ctx.recoverable_sent)
    sent_at = len(conn.log)
    if not conn.send(probe):
        return Reaction("closed", GRACE, "the acceptor closed the session")
    end = time.monotonic() + bound
    while time.monotonic() < end:
        reply = conn.read(end - time.monotonic())
        if reply is None:
            break
        if _has_session_header(reply):
            return Reaction("answered", bound)
    if conn.closed:
        return Reaction("closed", bound, "the acceptor closed the session")
    if any(d == "s2c" for d, _, _ in conn.log[sent_at:]):
        return Reaction("answered", bound)
    return Reaction(
        "silent",
        bound,
        f"no acknowledgment of a conformant UserMessage sent after it and no close within the Session Ack "
        f"Send Timer (MS-MQQB 3.1.2.5, AckTimeout {ctx.ack_timeout} ms / 2 x scale {timers.scale:g}, "
        f"+25% +0.5 s = {bound:.3g} s)",
    )


def alive(address: tuple[str, int], timers: Timers, ping: tuple[str, int] | None = None) -> str:
    """ "" when the acceptor still serves: it accepts a new connection and answers its
    EstablishConnection request within the Session Initialization Timer (and a Ping Request,
    when its ping port is known); else why not."""
    conn = Connection(address)
    try:
        conn.open()
    except OSError as e:
        return f"the port refuses connections ({e.strerror or e})"
    try:
        if not conn.send(build("EstablishConnection", Context(GUID(uuid.uuid4().bytes_le)))):
            return "a new connection was reset before its EstablishConnection request was written"
        bound = timers.initialization()
        if conn.read(bound) is None:
            if conn.closed:
                return "a new connection was closed before its EstablishConnection request was answered"
            return f"a new connection's EstablishConnection request was not answered within {bound:.3g} s"
    finally:
        conn.close()
    if ping is not None and not _pinged(ping, timers):
        return f"a Ping Request to UDP port {ping[1]} was not answered within {timers.ping():.3g} s"
    return ""


def _pinged(address: tuple[str, int], timers: Timers) -> bool:
    request = packets.build_ping(sp.ping(0x46555A5A, GUID(uuid.uuid4().bytes_le)))
    family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as udp:
        udp.settimeout(timers.ping())
        try:
            udp.sendto(request, address)
            udp.recv(2048)
        except OSError:
            return False
    return True


@functools.cache
def _requirements() -> dict[str, Requirement]:
    """The requirements by id, read once as the case loader reads them (cases/requirements.yaml,
    the session rules' entries included: harness.cases.loader.load_requirements)."""
    try:
        return {r.id: r for r in load_requirements(REQUIREMENTS)}
    except CaseError:
        return {}


def requirement_section(rule_id: str, default: str = "MS-MQQB 3.1.5.1.3") -> str:
    """The section of the requirement a rule id names (``default`` when none does)."""
    found = _requirements().get(rule_id)
    return found.section if found is not None else default


def requirement_level(rule_id: str) -> str:
    """The level of the requirement a rule id names (MUST, SHOULD, MAY, interpretation; "record")."""
    found = _requirements().get(rule_id)
    return str(found.level.value) if found is not None else "MUST"


def target_violations(conn: Connection) -> list[tuple[str, str, str, str]]:
    """(rule id, section, level, evidence) of every rule the acceptor broke in its replies on ``conn``
    that a passive Observer sees; the fuzzer's own (c2s) are its doing and left out."""
    observer = Observer()
    for direction, data, ts in conn.log:
        (observer.client_data if direction == "c2s" else observer.server_data)(data, ts)
    if conn.closed:
        observer.end()
    found = []
    for v in observer.violations:
        level = requirement_level(v.rule_id)
        if v.direction == "s2c" and level in ("MUST", "SHOULD"):
            found.append((v.rule_id, v.section, level, v.evidence))
    return found


DISCARD_CLOSE = "MQQB-3.1.5.1.3-DISCARD-CLOSE"
# A packet the receiving end accepts in its state (harness.session.transitions) and closes the
# session on all the same, by the requirement it fails: the EstablishConnection response a sender
# finds invalid (3.1.5.3.2); any other such packet is discarded (3.1.5.1.3).
_INVALID_CLOSE: dict[tuple[Role, PacketKind], str] = {
    ("initiator", PacketKind.EstablishConnection): "MQQB-3.1.5.3.2-INVALID-CLOSE",
}


def close_requirement(role: Role, data: bytes, state: str) -> str:
    """The requirement that makes a conformant ``role`` close the session on ``data`` received in
    ``state`` (a SessionState): a packet that does not decode is discarded (3.1.5.1.3); one whose
    kind the transition table does not accept in ``state`` breaks that kind's wrong-state rule, the
    close a case checks being the requirement of the rule's id upper-cased (cases/requirements.yaml,
    e.g. MQQB-3.1.5.3-WRONG-STATE; the discard where there is none); one it accepts, see
    :data:`_INVALID_CLOSE`."""
    try:
        kind = packets.parse(data, strict=True).kind
    except packets.PacketError:
        return DISCARD_CLOSE
    row = transition(role, SessionState(state), kind)
    if row.accepted:
        return _INVALID_CLOSE.get((role, kind), DISCARD_CLOSE)
    checked = str(row.rule).upper()
    return checked if checked in _requirements() else DISCARD_CLOSE
