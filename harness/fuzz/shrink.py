"""Shrinking the injected packet of a finding: its optional headers removed one by one.

After delta debugging has kept the fewest whole packets (harness.fuzz.minimise,
harness.fuzz.sendercase), the injected UserMessage may still carry optional headers the finding
does not need.  Each group below is one optional header of [MS-MQMQ] 2.2.20 with the flag that
announces it ([MS-MQMQ] 2.2.19.1 BaseHeader.Flags, 2.2.19.2 UserHeader.Flags: a header is
present if and only if its flag is set), or the [MS-MQRR] 2.2.5.2 ExtensionHeader with the
headers it announces (SubqueueHeader, DeadLetterHeader, ExtendedAddressHeader).  A group is
removed from the packet as decoded (``packets.parse`` without the strict checks, so the mutated
field keeps its mutated value), its flag cleared and BaseHeader.PacketSize computed again (unless
PacketSize is the field mutated), and the packet built again; the removal is kept when the
finding still reproduces.  A packet the codec does not give back byte for byte (its mutation
damaged the decoding) is left whole, and so is the group that holds the field mutated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import packets
from packets.paths import set_field

__all__ = ["GROUPS", "droppable", "shrink", "shrink_last", "without"]

# group -> (its headers, the flags that announce them)
GROUPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "TransactionHeader": (("TransactionHeader",), ("UserHeader.Flags.TH",)),
    "SecurityHeader": (("SecurityHeader",), ("UserHeader.Flags.SH",)),
    "DebugHeader": (("DebugHeader",), ("BaseHeader.Flags.DH",)),
    "SRMPEnvelopeHeader": (("SRMPEnvelopeHeader", "CompoundMessageHeader"), ("UserHeader.Flags.AH",)),
    "SoapHeader": (("SoapHeader",), ("UserHeader.Flags.HH",)),
    "MultiQueueFormatHeader": (("MultiQueueFormatHeader",), ("UserHeader.Flags.MQ",)),
    "SessionHeader": (("SessionHeader",), ("BaseHeader.Flags.SH",)),
    "ExtensionHeader": (("ExtensionHeader", "SubqueueHeader", "DeadLetterHeader", "ExtendedAddressHeader"), ()),
}


def _decoded(data: bytes) -> dict[str, object] | None:
    """The headers of ``data`` when the codec gives the packet back byte for byte, else None."""
    try:
        headers = dict(packets.parse(data, strict=False).headers)
        return headers if packets.build(headers) == data else None
    except Exception:  # a packet its mutation damaged: no header of it can be told apart
        return None


def droppable(data: bytes, field: str) -> list[str]:
    """The groups ``data`` carries, except the one holding ``field`` (in :data:`GROUPS` order)."""
    headers = _decoded(data)
    if headers is None:
        return []
    owner = field.split(".", 1)[0]
    return [g for g, (names, _) in GROUPS.items() if owner not in names and any(n in headers for n in names)]


def without(data: bytes, groups: Sequence[str], field: str) -> bytes | None:
    """``data`` with ``groups`` removed (see the module docstring); None when that cannot be done."""
    headers = _decoded(data)
    if headers is None or not groups:
        return None
    for group in groups:
        names, flags = GROUPS[group]
        for name in names:
            headers.pop(name, None)
        for flag in flags:
            set_field(headers, flag, 0)
    if field != "BaseHeader.PacketSize":
        set_field(headers, "BaseHeader.PacketSize", None)
    try:
        return packets.build(headers)
    except packets.PacketError:
        return None


def shrink(
    data: bytes, field: str, holds: Callable[[tuple[str, ...]], bool], budget: Callable[[], bool]
) -> tuple[str, ...]:
    """The groups whose removal keeps the finding (``holds`` of the groups removed so far and
    one more), tried one by one while ``budget()`` allows."""
    removed: tuple[str, ...] = ()
    for group in droppable(data, field):
        if not budget():
            break
        if without(data, (*removed, group), field) is not None and holds((*removed, group)):
            removed = (*removed, group)
    return removed


def shrink_last(
    units: list[bytes], field: str, holds: Callable[[list[bytes]], bool], budget: Callable[[], bool]
) -> list[bytes]:
    """``units`` with the groups of its last packet removed that ``holds`` of the units allows."""
    last = units[-1]

    def smaller(groups: Sequence[str]) -> list[bytes]:
        return [*units[:-1], without(last, groups, field) or last]

    removed = shrink(last, field, lambda groups: holds(smaller(groups)), budget)
    return smaller(removed) if removed else units
