"""Fields by spec path: ``BaseHeader.PacketSize``, ``UserHeader.Flags.DQ``, ``OrderAckBody.TxSequenceNumber``.

A path names a header of the packet, then a field, then (for a flag set, [MS-MQMQ] 2.2.19-2.2.20,
[MS-MQQB] 2.2) one of its sub-fields by the spec's name; it may start with the packet kind
(``EstablishConnection.EstablishConnectionHeader.ServerGuid``).  ``body`` names the decoded body of
an OrderAck or FinalAck Packet ([MS-MQQB] 2.2.4.1, 2.2.5.1).  :func:`get_field` reads a field of a
decoded packet, :func:`set_field` writes one into headers about to be built, and
:func:`field_offset` finds its bytes in an encoded packet.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from packets.fields import GUID, BitFlags
from packets.layout import PacketKind

__all__ = ["field_offset", "get_field", "set_field"]

_KINDS = frozenset(k.value for k in PacketKind)
_BODIES = ("OrderAckBody", "FinalAckBody")


def _strip_kind(path: str, kind: str) -> str:
    head, _, rest = path.partition(".")
    return rest if head in _KINDS or head == kind else path


def get_field(packet: Any, path: str) -> tuple[bool, Any]:
    """(present, value) of a field of a decoded packet (``packets.Packet``) by spec path."""
    stripped = _strip_kind(path, packet.kind.name)
    head = path.partition(".")[0]
    if stripped != path and stripped.partition(".")[0] not in packet.headers and head in packet.headers:
        stripped = path  # the kind names a header too (Ping.Cookie of a Ping Packet)
    obj: Any = packet.headers
    for part in stripped.split("."):
        if obj is packet.headers and (part == "body" or part in _BODIES) and getattr(packet, "body", None) is not None:
            obj = packet.body
            continue
        try:
            obj = obj[part]
        except (KeyError, TypeError, IndexError):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                return False, None
        if obj is None:
            return False, None
    return True, obj


def set_field(headers: Any, path: str, value: Any) -> None:
    """Set a field (or a flag sub-field) of headers to be built (``packets.build``) by spec path.
    A GUID field takes GUID text, a bytes field hex text; a mapping sets a whole sub-header
    (a piggy-backed SessionHeader, [MS-MQMQ] 2.2.20.5)."""
    from construct import Container

    parts = path.split(".")
    if parts[0] not in headers and len(parts) > 1 and parts[1] in headers:
        parts = parts[1:]  # a leading packet kind
    obj = headers
    for i, part in enumerate(parts[:-1]):
        nxt = obj[part]
        if isinstance(nxt, BitFlags) and i == len(parts) - 2:
            obj[part] = type(nxt).make(int(nxt), **{parts[-1]: int(value)})
            return
        obj = nxt
    last = parts[-1]
    if isinstance(value, Mapping):
        obj[last] = Container({k: (GUID(v) if k.endswith("Guid") else v) for k, v in value.items()})
        return
    current = obj.get(last) if hasattr(obj, "get") else None
    if isinstance(current, GUID) or (isinstance(value, str) and last.endswith("Guid")):
        value = GUID(value)
    elif isinstance(value, str) and isinstance(current, bytes | bytearray):
        value = bytes.fromhex(value)
    obj[last] = value


def field_offset(data: bytes, path: str, kind: str) -> tuple[int, int] | None:
    """Byte range [start, end) of a field in an encoded packet of ``kind`` (its enclosing field's
    when the path names a flag sub-field), from the codec's offsets; None when it has no such
    field.  A damaged packet gives the offsets up to the damage."""
    from packets.codec import _Walk

    walk = _Walk(data)
    with contextlib.suppress(Exception):
        walk.diagnose()
    offsets = walk.offsets
    offsets.setdefault("BaseHeader", 0)
    p = _strip_kind(path, kind)
    while p and p not in offsets:
        p = p.rpartition(".")[0]
    if not p:
        return None
    start = offsets[p]
    later = [o for k, o in offsets.items() if o > start and not k.startswith(p + ".")]
    end = min(later) if later else len(data)
    return start, max(end, start + 1)
