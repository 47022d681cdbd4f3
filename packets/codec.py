"""parse and build: whole MSMQ packets from and to bytes.

Walks the header layouts of [MS-MQMQ] 2.2.20 (UserMessage Packet, with the [MS-MQRR] 2.2.5
additions) and [MS-MQQB] 2.2 (internal packets), identifies the packet kind by [MS-MQQB]
3.1.5.1.1, and checks the packet-level rules of [MS-MQMQ] 2.2.19.1 (BaseHeader.PacketSize).

Parsing runs the compiled construct parsers first.  Only when they fail, or a rule is broken,
does it run the interpreted parsers again to find the field path and byte offset for the
:class:`~packets.errors.PacketError` (strict) or the :class:`~packets.errors.Violation` list
(non-strict), so valid traffic pays nothing for good diagnostics.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from io import BytesIO
from typing import Any

from construct import Container

from packets import base
from packets.errors import PacketError, Violation
from packets.fields import Fields
from packets.layout import Check, PacketKind, Slot

__all__ = ["Packet", "PacketKind", "build", "parse", "parse_ping"]


@dataclass(frozen=True)
class _Spec:
    """The layouts and packet-level rules, imported once (the header modules import the codec's
    helpers, so they are bound lazily)."""

    user: tuple[Slot, ...]
    internal: tuple[Slot, ...]
    check_user_message: Callable[[Container, bool], Iterable[tuple[str, str, str]]]
    check_internal_packet: Check
    check_transactional_ack: Check
    identify: Callable[[Container], tuple[PacketKind, Container | None]]


@cache
def _spec() -> _Spec:
    from packets import message, session

    return _Spec(
        tuple(message.USER_MESSAGE_LAYOUT),
        tuple(session.INTERNAL_LAYOUT),
        message.check_user_message,
        session.check_internal_packet,
        session.check_transactional_ack,
        session.identify,
    )


def layout_for(base_header: Mapping[str, Any]) -> tuple[Slot, ...]:
    """The header sequence after the BaseHeader: internal packets when BaseHeader.Flags.IN."""
    spec = _spec()
    flags = base_header.get("Flags") or 0
    return spec.internal if int(flags) & 0x8 else spec.user


@dataclass(eq=False)
class Packet:
    """A decoded packet: its kind and its headers by their spec names.

    ``packet.BaseHeader.Flags.PR`` reads a header field; ``packet.headers`` is the ordered
    Container of headers; ``body`` is the decoded OrderAck/FinalAck body ([MS-MQQB] 2.2.4.1,
    2.2.5.1) when the packet is one; ``violations`` lists what a non-strict parse found.
    Two packets are equal when their kinds and headers are.
    """

    kind: PacketKind
    headers: Container
    violations: list[Violation] = field(default_factory=list)
    size: int = 0
    body: Container | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self.__dict__["headers"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __contains__(self, name: str) -> bool:
        return name in self.headers

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Packet):
            return self.kind == other.kind and self.headers == other.headers
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    @property
    def ok(self) -> bool:
        return not self.violations


# ---------------------------------------------------------------------------------------------
# parse


class _Walk:
    """One pass over a packet's headers (compiled or diagnostic)."""

    __slots__ = ("data", "headers", "io", "offsets", "slot_spans")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.io = BytesIO(data)
        self.headers = Fields()
        self.offsets: dict[str, int] = {}
        self.slot_spans: list[tuple[Slot | None, int, int]] = []

    def fast(self) -> None:
        io, headers, spans = self.io, self.headers, self.slot_spans
        ctx: dict[str, Any] = {"_params": {}}
        headers["BaseHeader"] = ctx["BaseHeader"] = base.BASE_HEADER.parse_fast(io, ctx)
        spans.append((None, 0, io.tell()))
        for slot in layout_for(headers["BaseHeader"]):
            if slot.present(headers):
                start = io.tell()
                headers[slot.name] = ctx[slot.name] = slot.parser.parse_fast(io, ctx)
                spans.append((slot, start, io.tell()))

    def diagnose(self) -> None:
        """Interpreted pass recording offsets; raises PacketError at the first bad field."""
        io, headers, offsets = self.io, self.headers, self.offsets
        io.seek(0)
        headers.clear()
        self.slot_spans.clear()
        headers.BaseHeader = _diagnose_one(base.BASE_HEADER.diagnose, io, offsets, "BaseHeader")
        self.slot_spans.append((None, 0, io.tell()))
        for slot in layout_for(headers.BaseHeader):
            if _present(slot, headers, io.tell()):
                start = io.tell()
                offsets[slot.name] = start
                value = _diagnose_one(slot.parser.diagnose, io, offsets, slot.name, headers)
                headers[slot.name] = value
                self.slot_spans.append((slot, start, io.tell()))


def _present(slot: Slot, headers: Container, offset: int) -> bool:
    try:
        return bool(slot.present(headers))
    except Exception as e:
        raise PacketError(slot.name, offset, f"cannot tell whether it is present: {e}") from None


def _diagnose_one(
    fn: Any, io: BytesIO, offsets: dict[str, int], name: str, parents: Container | None = None
) -> Container:
    start = io.tell()
    try:
        return fn(io, offsets, parents) if parents is not None else fn(io, offsets)
    except PacketError:
        raise
    except Exception as e:  # a decoder's own error: still one error type for callers
        raise PacketError(name, start, f"undecodable: {e}") from None


def _offset_of(path: str, offsets: Mapping[str, int]) -> int:
    """Offset of a field path, or of its nearest enclosing field that has one."""
    while path:
        if path in offsets:
            return offsets[path]
        path = path.rpartition(".")[0]
    return 0


def _rule_violations(walk: _Walk, kind: PacketKind) -> list[tuple[str, str, str]]:
    """Every rule a receiver checks on this packet, in header order."""
    headers = walk.headers
    spec = _spec()
    found: list[tuple[str, str, str]] = []
    extend = found.extend
    try:
        extend(base.check_base_header(headers))
        for slot, _start, _end in walk.slot_spans:
            if slot is not None:
                for check in slot.checks:
                    extend(check(headers))
        extend(_check_packet_size(walk))
        if headers["BaseHeader"]["Flags"] & 0x8:
            extend(spec.check_internal_packet(headers))
        else:
            extend(spec.check_user_message(headers, False))
            if kind is PacketKind.OrderAck or kind is PacketKind.FinalAck:
                extend(spec.check_transactional_ack(headers))
    except Exception as e:  # a rule that cannot even be evaluated is itself a finding
        found.append(("BaseHeader", f"rules could not be evaluated: {e!r}", ""))
    return found


def _check_packet_size(walk: _Walk) -> Iterator[tuple[str, str, str]]:
    """[MS-MQMQ] 2.2.19.1: PacketSize is the size of the entire packet including padding,
    excluding a UserMessage's SessionHeader."""
    declared = walk.headers.BaseHeader.PacketSize
    counted = sum(end - start for slot, start, end in walk.slot_spans if slot is None or slot.counted)
    if declared != counted:
        yield (
            "BaseHeader.PacketSize",
            f"declares {declared} bytes but the headers occupy {counted}",
            base.SECTION,
        )
    consumed = walk.slot_spans[-1][2]
    if consumed < len(walk.data):
        yield ("BaseHeader.PacketSize", f"{len(walk.data) - consumed} bytes follow the packet", base.SECTION)


def parse(data: bytes | bytearray | memoryview, strict: bool = True) -> Packet:
    """Decode one packet (a BaseHeader and everything it announces).

    strict=True raises :class:`PacketError` at the first structural failure or broken rule.
    strict=False decodes what it can and returns the violations in ``Packet.violations``
    (``kind`` is ``Unknown`` when the packet could not be identified).
    """
    data = bytes(data)
    walk = _Walk(data)
    try:
        walk.fast()
        structural_ok = True
    except Exception:
        structural_ok = False
    violations: list[Violation] = []
    if not structural_ok:
        walk = _Walk(data)
        try:
            walk.diagnose()
        except PacketError as e:
            if strict:
                raise
            violations.append(e.violation)
            return Packet(PacketKind.Unknown, walk.headers, violations, len(data), None)
    try:
        kind, body = _spec().identify(walk.headers)
    except Exception as e:
        kind, body = PacketKind.Unknown, None
        violations.append(Violation("MessagePropertiesHeader.MessageBody", 0, f"undecodable body: {e}"))
    rules = _rule_violations(walk, kind)
    if rules:
        if structural_ok:  # offsets are only gathered on the diagnostic path
            offsets_walk = _Walk(data)
            with contextlib.suppress(PacketError):  # the fast pass decoded it; offsets suffice
                offsets_walk.diagnose()
            offsets = offsets_walk.offsets
        else:
            offsets = walk.offsets
        violations.extend(Violation(p, _offset_of(p, offsets), r, s) for p, r, s in rules)
    if violations and strict:
        raise violations[0].error()
    return Packet(kind, walk.headers, violations, walk.slot_spans[-1][2], body)


def parse_ping(datagram: bytes | bytearray | memoryview, strict: bool = True) -> Packet:
    """Decode a [MS-MQQB] 2.2.7 Ping Packet (a UDP datagram; no BaseHeader)."""
    from packets.session import PING, check_ping

    data = bytes(datagram)
    offsets: dict[str, int] = {}
    violations: list[Violation] = []
    headers = Container()
    try:
        headers.Ping = _diagnose_one(PING.diagnose, BytesIO(data), offsets, "Ping")
    except PacketError as e:
        if strict:
            raise
        return Packet(PacketKind.Ping, headers, [e.violation], len(data))
    rules = list(check_ping(headers))
    if len(data) > PING.header.sizeof():
        rules.append(("Ping", f"{len(data) - PING.header.sizeof()} bytes follow the packet", "MS-MQQB 2.2.7"))
    violations = [Violation(p, _offset_of(p, offsets), r, s) for p, r, s in rules]
    if violations and strict:
        raise violations[0].error()
    return Packet(PacketKind.Ping, headers, violations, len(data))


# ---------------------------------------------------------------------------------------------
# build


def _headers_of(packet: Packet | Mapping[str, Any]) -> Container:
    if isinstance(packet, Packet):
        return packet.headers
    if isinstance(packet, Mapping):
        return Container(packet)
    raise PacketError("", -1, f"build takes a Packet or a mapping of headers, not {type(packet).__name__}")


def build(packet: Packet | Mapping[str, Any]) -> bytes:
    """Encode a packet from its headers (a :class:`Packet` or a mapping by spec name).

    Headers are written in the layout's order, those absent skipped; flags are written as
    given (so malformed packets can be built on purpose).  BaseHeader.PacketSize, length
    fields and padding are computed when left out (None or missing).
    """
    headers = _headers_of(packet)
    base_header = base.default_base_header(**dict(headers.get("BaseHeader") or {}))
    layout = layout_for(base_header)
    known = {slot.name for slot in layout} | {"BaseHeader"}
    unknown = [name for name in headers if not name.startswith("_") and name not in known]
    if unknown:
        raise PacketError(unknown[0], -1, "not a header of this packet layout")
    context = Container(headers)
    context.BaseHeader = base_header
    parts: list[bytes] = []
    counted = base.BASE_HEADER_SIZE
    for slot in layout:
        if slot.name in headers and headers[slot.name] is not None:
            data = slot.parser.build(headers[slot.name], context)
            parts.append(data)
            if slot.counted:
                counted += len(data)
    if base_header.get("PacketSize") is None:
        base_header.PacketSize = counted
    return base.BASE_HEADER.build(base_header) + b"".join(parts)


def build_ping(ping: Packet | Mapping[str, Any]) -> bytes:
    """Encode a [MS-MQQB] 2.2.7 Ping Packet from its fields (or a Packet from parse_ping)."""
    from packets.session import PING

    fields = ping.headers.Ping if isinstance(ping, Packet) else ping
    return PING.build(fields)
