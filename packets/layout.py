"""The header sequence of each packet: which header follows which, and when it is present.

A :class:`Slot` names one header by its spec name, says (from the headers parsed before it)
whether the packet carries it, and lists the rules a receiver checks on it.  The UserMessage
Packet ([MS-MQMQ] 2.2.20, with the [MS-MQRR] 2.2.5 additions) and the internal packets of
[MS-MQQB] 2.2 are each one ordered list of slots; ``packets.codec`` walks them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from construct import Container

from packets.fields import HeaderParser

# A rule yields (field path, reason, spec section) for every violation it finds.
Check = Callable[[Container], Iterable[tuple[str, str, str]]]
Presence = Callable[[Container], bool]


@dataclass(frozen=True)
class Slot:
    """One header position in a packet layout."""

    name: str
    parser: HeaderParser
    present: Presence
    section: str
    checks: tuple[Check, ...] = field(default=())
    # Whether the header's bytes count in BaseHeader.PacketSize ([MS-MQMQ] 2.2.19.1 excludes a
    # UserMessage's trailing SessionHeader).
    counted: bool = True


def always(_headers: Container) -> bool:
    return True


class PacketKind(StrEnum):
    """Packet kinds of [MS-MQQB] 3.1.5.1.1 Identifying Packet Type (Ping: [MS-MQQB] 2.2.7)."""

    EstablishConnection = "EstablishConnection"
    ConnectionParameters = "ConnectionParameters"
    SessionAck = "SessionAck"
    OrderAck = "OrderAck"
    FinalAck = "FinalAck"
    UserMessage = "UserMessage"
    Ping = "Ping"
    Unknown = "Unknown"


# The kinds sent on an [MS-MQQB] 2.1.1 session's TCP connection (every kind but the UDP Ping of
# 2.2.7 and Unknown), in the order of 2.2.
SESSION_KINDS: tuple[PacketKind, ...] = tuple(k for k in PacketKind if k not in (PacketKind.Ping, PacketKind.Unknown))
# The kinds that are UserMessage Packets on the wire (IN clear, 3.1.5.1.1): the OrderAck and the
# FinalAck are UserMessage Packets too, counted alike by the acknowledgment numbers (3.1.1.4).
USER_MESSAGE_KINDS: frozenset[PacketKind] = frozenset(
    {PacketKind.UserMessage, PacketKind.OrderAck, PacketKind.FinalAck}
)


# A rule's fast form: True exactly when the rule yields nothing for these headers.
Holds = Callable[[Container], bool]
_FAST_FORMS: dict[Check, Holds] = {}


def fast_form_of(check: Check) -> Callable[[Holds], Holds]:
    """Register the decorated predicate as ``check``'s fast form.

    ``packets.parse`` evaluates the fast forms first and runs the checks themselves (which word
    the violations) only when one of them fails, so a fast form MUST return True exactly when
    its check yields nothing (tests/packets/test_fast_rules.py compares them)."""

    def register(holds: Holds) -> Holds:
        _FAST_FORMS[check] = holds
        return holds

    return register


def fast_form(check: Check) -> Holds:
    """``check``'s registered fast form, or a predicate that runs the check itself."""
    holds = _FAST_FORMS.get(check)
    if holds is None:

        def holds(headers: Container) -> bool:
            return next(iter(check(headers)), None) is None

    return holds


def fast_forms() -> dict[Check, Holds]:
    """Every registered (check, fast form) pair (for the tests that compare them)."""
    return dict(_FAST_FORMS)
