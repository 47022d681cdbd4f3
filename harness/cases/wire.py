"""Wire cases: [MS-MQQB] session cases as data, their checks, and how their failures are shown.

A wire case names a peer (``given.peer``: which side of an [MS-MQQB] 2.1.1 protocol session is
under test, and the fault behaviour of the simulated peer) and steps that are wire actions
(``action:`` instead of ``event:``): create an [MS-MQDMPR] 3.1.1.3 OutgoingQueue, enqueue
messages so that Message Position Available ([MS-MQQB] 3.1.7.12) runs, wait for packets or a
condition, send crafted packets ([MS-MQQB] 2.2, [MS-MQMQ] 2.2.19-2.2.20) and receive the replies.
Every wait is bounded by the [MS-MQQB] 3.1.2 timers it names (``within: SessionAckSend``,
``before: SessionInitialization``; harness.cases.wiretimers), never by a number of
seconds: the wire target computes the bound from the timer durations and the values the harness
sent (harness.cases.targets.wire).  Expectations name packet fields by spec path
(``EstablishConnectionHeader.ServerGuid``, ``BaseHeader.Flags.SH``) and the OutgoingQueue state
(State, ConnectionHistory Status values of [MS-MQDMPR] 3.1.1.3, OutgoingMessagePosition
attributes of [MS-MQQB] 3.1.1.3.1.2).

This module holds the vocabulary of a wire case, which the wire runs (harness.cases.wireruns)
read; the semantic checks the loader runs on one are harness.cases.wirecheck, the timers that
bound its waits harness.cases.wiretimers, the comparison of observed values
harness.cases.wirematch, packet field lookup by spec path and the hex dump with the checked field
marked harness.cases.wirefields.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from packets.layout import SESSION_KINDS, PacketKind

__all__ = [
    "DELIVERY",
    "PACKET_KINDS",
    "RAW",
    "behaviours_of",
    "is_wire_doc",
    "needs_simulated_peer",
    "sends_transactional",
]

RAW = "raw"  # a step's packet given as bytes (``hex``)
# The packets a wire case's ``send``, ``receive`` and ``wait_for`` name: the session's kinds
# (packets.layout.PacketKind), or raw bytes.
PACKET_KINDS: tuple[str, ...] = (*(str(k) for k in SESSION_KINDS), RAW)
DELIVERY = ("express", "recoverable", "transactional")


def sends_transactional(steps: Iterable[Any]) -> bool:
    """Whether a wire case's client sends a transactional UserMessage Packet ([MS-MQQB] 3.1.5.8.6):
    the acceptor under test then needs a transactional queue."""
    return any(
        s.action == "send"
        and s.args.get("packet") == PacketKind.UserMessage
        and s.args.get("delivery") == "transactional"
        for s in steps
    )


def is_wire_doc(doc: Mapping[str, Any]) -> bool:
    """A wire case: ``given.peer`` is present, or a step is an ``action``."""
    given = doc.get("given")
    if isinstance(given, Mapping) and "peer" in given:
        return True
    return any(isinstance(s, Mapping) and "action" in s for s in doc.get("when") or [])


def behaviours_of(peer: Mapping[str, Any]) -> list[str]:
    """The simulated peer's behaviours, one per connection (the last one repeats)."""
    b = peer.get("behaviour", "normal")
    return [b] if isinstance(b, str) else list(b)


def needs_simulated_peer(case_given: Mapping[str, Any], then: Mapping[str, Any]) -> str:
    """Why a wire case needs the simulated peer ("" when it runs against a live target too):
    a fault behaviour, or checks of what only the simulated peer records."""
    peer = case_given.get("peer") or {}
    faults = [b for b in behaviours_of(peer) if b != "normal"]
    if faults:
        return f"needs the simulated peer's behaviour {', '.join(faults)}"
    if peer.get("listening") is False or peer.get("silent"):
        return "needs the simulated peer not listening or silent"
    if peer.get("replies"):
        return "needs the simulated peer's replies"
    if peer.get("ping"):  # [MS-MQQB] 2.1.2: an acceptor MAY listen for Ping Requests, on a port of its choice
        return "needs the simulated peer's Ping listener"
    tp = then.get("peer") or {}
    if "delivered" in tp or ("violations" in tp and peer.get("under_test") != "acceptor"):
        return "checks what the simulated peer delivered and reported"
    return ""  # an acceptor's replies are checked against the rules by a passive observer, live ones too
