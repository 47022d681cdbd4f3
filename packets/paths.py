"""Fields by spec path: ``BaseHeader.PacketSize``, ``UserHeader.Flags.DQ``, ``OrderAckBody.TxSequenceNumber``.

A path names a header of the packet, then a field, then (for a flag set, [MS-MQMQ] 2.2.19-2.2.20,
[MS-MQQB] 2.2) one of its sub-fields by the spec's name; it may start with the packet kind
(``EstablishConnection.EstablishConnectionHeader.ServerGuid``).  ``body`` names the decoded body of
an OrderAck or FinalAck Packet ([MS-MQQB] 2.2.4.1, 2.2.5.1).  :func:`get_field` reads a field of a
decoded packet, :func:`set_field` writes one into headers about to be built, and
:func:`field_offset` finds its bytes in an encoded packet.  :func:`display_value` writes a
field's value as the spec writes it: in hex for a flag word, a constant, a code or an
identifier (``0x524F494C (1380927820)``), in decimal for a flag bit, a count, a size or a time;
which is which, :func:`hex_digits` reads from the field's construct definition.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping
from typing import Any

import construct as c
from construct import Container

from packets import base, message, session
from packets.codec import Walk
from packets.fields import GUID, BitFlags, Data, ElementList, FlagsField, HexField
from packets.layout import PacketKind

__all__ = ["display_value", "field_offset", "get_field", "hex_digits", "set_field"]

_KINDS = frozenset(k.value for k in PacketKind)
_BODIES = tuple(ack.body for ack in session.TRANSACTIONAL_ACKS)  # the MessageBody structures


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
    walk = Walk(data)
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


# --------------------------------------------------------------------------------------------
# How a field's value is written: hex or decimal, from its construct definition

_SMALL = 8  # a flag sub-field narrower than a byte (a bit, PR, DQ) is a small number: decimal


@functools.cache
def _headers() -> dict[str, c.Construct]:
    """Every header's construct definition by its spec name (the codec's layouts)."""
    out: dict[str, c.Construct] = {"BaseHeader": base.BaseHeader}
    for slot in (*message.MESSAGE_PACKET_LAYOUT, *session.INTERNAL_LAYOUT):
        out.setdefault(slot.name, slot.parser.header)
    out.update({ack.body: ack.body_parser.header for ack in session.TRANSACTIONAL_ACKS})
    out[session.PING.name] = session.PingPacket
    return out


def _unwrap(sc: c.Construct) -> c.Construct:
    while True:
        if isinstance(sc, c.Renamed | c.Default | c.Rebuild):
            sc = sc.subcon
        elif isinstance(sc, c.IfThenElse):
            sc = sc.thensubcon
        else:
            return sc


_Shape = tuple[int, type[BitFlags] | None]  # (hex digits, the flag word's class), (0, None): decimal
_DECIMAL: _Shape = (0, None)


def _shape(sc: c.Construct, parts: list[str]) -> _Shape:
    sc = _unwrap(sc)
    if not parts:
        if isinstance(sc, FlagsField):
            return (sc.flags_cls._width_ + 3) // 4, sc.flags_cls
        if isinstance(sc, HexField):
            return 2 * sc.length, None
        if isinstance(sc, Data | c.Bytes):  # bytes: an integer said of them is a byte ({every_byte: 0x5A})
            return 2, None
        return _DECIMAL
    head, rest = parts[0], parts[1:]
    if isinstance(sc, FlagsField):
        width = sc.flags_cls._known_.get(head, (0, 0))[1]
        return ((width + 3) // 4, None) if width >= _SMALL and not rest else _DECIMAL
    if isinstance(sc, ElementList):
        return _shape(sc.subcon, rest if head.isdigit() else parts)
    if isinstance(sc, c.Switch):
        for case in (*sc.cases.values(), sc.default):
            found = _shape(case, parts)
            if found != _DECIMAL:
                return found
        return _DECIMAL
    if isinstance(sc, c.Struct):
        named = {sub.name: sub for sub in sc.subcons if sub.name}
        sub = named.get(head)
        if sub is None:
            return _DECIMAL
        if isinstance(_unwrap(sub), c.Computed):  # a sub-field read out of an unnamed flag word
            words = [w for w in named.values() if isinstance(_unwrap(w), FlagsField)]
            return next((s for w in words if (s := _shape(w, parts)) != _DECIMAL), _DECIMAL)
        return _shape(sub, rest)
    return _DECIMAL


@functools.cache
def _shape_of(path: str) -> _Shape:
    headers = _headers()
    parts = path.split(".")
    if len(parts) > 2 and parts[0] in _KINDS and parts[1] in headers:
        parts = parts[1:]  # a leading packet kind
    if parts[0] == "body":
        return next((s for b in _BODIES if (s := _shape(headers[b], parts[1:])) != _DECIMAL), _DECIMAL)
    header = headers.get(parts[0])
    return _DECIMAL if header is None or len(parts) < 2 else _shape(header, parts[1:])


def hex_digits(path: str) -> int:
    """Hex digits the spec writes the field at ``path`` with (its width in nibbles), 0 for a
    decimal field or a path that names no field.  Hex: a flag word, a field the definitions
    declare as :class:`~packets.fields.HexField` (a signature, a version, a code, an
    identifier, a reserved word), a byte of a byte string (``{every_byte: 0x5A}`` of
    ``EstablishConnectionHeader.Padding``), a flag sub-field of a byte or more
    (``EstablishConnectionHeader.OperatingSystem.RE``).  Decimal: a flag sub-field narrower than
    a byte (``BaseHeader.Flags.PR``, ``UserHeader.Flags.DQ``), a count, a size, a time, a
    sequence number."""
    return _shape_of(path)[0]


def _hex(value: int, shape: _Shape) -> str:
    digits, flags = shape
    text = f"0x{value:0{digits}X}"
    if flags is not None:  # a flag word: the sub-fields it sets say more than its decimal
        if value >> flags._width_:
            return f"{text} ({value})"
        word = flags(value)
        named = ", ".join(
            f"{name}=0x{v:0{(width + 3) // 4}X}" if width >= _SMALL else f"{name}={v}"
            for name, _, width in flags._fields_
            if (v := getattr(word, name))
        )
        return f"{text} ({named})" if named else text
    return f"{text} ({value})" if value > 9 else text


def display_value(path: str, value: Any, text: Callable[[Any], str] = str) -> str:
    """``value`` of the field at ``path`` as every report writes it: each integer of a field the
    spec writes in hex (:func:`hex_digits`) in hex at the field's width, beside its decimal
    (``0x524F494C (1380927820)``; a flag word beside the sub-fields it sets, ``0x0103 (PR=3,
    TR=1)``), also inside an expectation (``{any_of: [...]}``, ``{range: [...]}``); anything
    else, and every value of a decimal field, by ``text``."""
    shape = _shape_of(path) if path else _DECIMAL
    if shape == _DECIMAL:
        return text(value)

    def show(v: Any) -> str:
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            return _hex(int(v), shape)
        if isinstance(v, Mapping) and shape[1] is not None and v and set(v) <= set(shape[1]._known_):
            return text(v)  # a flag word written by its sub-fields
        if isinstance(v, Mapping):
            return "{" + ", ".join(f"{text(k)}: {show(x)}" for k, x in v.items()) + "}"
        if isinstance(v, list | tuple):
            return "[" + ", ".join(show(x) for x in v) + "]"
        return text(v)

    return show(value)
