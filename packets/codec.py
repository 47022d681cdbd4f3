"""parse and build: whole MSMQ packets from and to bytes.

Walks the header layouts of [MS-MQMQ] 2.2.20 (UserMessage Packet, with the [MS-MQRR] 2.2.5
additions) and [MS-MQQB] 2.2 (internal packets), identifies the packet kind by [MS-MQQB]
3.1.5.1.1, and checks the packet-level rules of [MS-MQMQ] 2.2.19.1 (BaseHeader.PacketSize).

Parsing runs the compiled construct parsers first.  Only when they fail, or a rule is broken,
does it run the interpreted parsers again to find the field path and byte offset for the
:class:`~packets.errors.PacketError` (strict) or the :class:`~packets.errors.Violation` list
(non-strict), so valid traffic pays nothing for good diagnostics.

Building by template (:class:`UserMessageTemplate`): UserMessage Packets that differ only in
UserHeader.MessageID and the body ([MS-MQMQ] 2.2.19.2, 2.2.19.3) are written by copying the bytes
encoded once and writing the fields that change at the offsets the diagnostic walk records.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from io import BytesIO
from typing import Any

from construct import Container

from packets import base, message, session
from packets.errors import PacketError, Violation
from packets.fields import HeaderParser, new_fields
from packets.fused import FusedParsers
from packets.generate import (
    HeaderBuilder,
    HeaderFunction,
    LayoutParser,
    NeedsContext,
    Shape,
    builder_function,
    header_function,
)
from packets.layout import Check, Holds, PacketKind, Slot, fast_form

__all__ = [
    "Packet",
    "UserMessageTemplate",
    "Walk",
    "build",
    "parse",
    "parse_ping",
]


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
    base: HeaderFunction
    user_parser: LayoutParser
    internal_parser: LayoutParser
    user_message_holds: Holds
    internal_packet_holds: Holds
    message_packet: tuple[Slot, ...]  # [MS-MQRR] 2.2.5: the UserMessage, then the headers after it
    user_fused: FusedParsers
    internal_fused: FusedParsers


@cache
def _spec() -> _Spec:
    user_parser = LayoutParser(tuple(message.USER_MESSAGE_LAYOUT))
    internal_parser = LayoutParser(tuple(session.INTERNAL_LAYOUT))
    return _Spec(
        tuple(message.USER_MESSAGE_LAYOUT),
        tuple(session.INTERNAL_LAYOUT),
        message.check_user_message,
        session.check_internal_packet,
        session.check_transactional_ack,
        session.identify,
        header_function(base.BASE_HEADER),
        user_parser,
        internal_parser,
        message.user_message_holds,
        session.internal_packet_holds,
        tuple(message.MESSAGE_PACKET_LAYOUT),
        FusedParsers(base.BASE_HEADER, user_parser, Packet, _base_header_holds, message.user_message_holds,
                     session.pinned_kind, session.identify_holding),
        FusedParsers(base.BASE_HEADER, internal_parser, Packet, _base_header_holds, session.internal_packet_holds,
                     session.pinned_kind),
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


class Walk:
    """One pass over a packet's headers (generated or diagnostic)."""

    __slots__ = ("consumed", "counted", "data", "headers", "offsets", "shape", "slots")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.headers = new_fields()
        self.offsets: dict[str, int] = {}
        self.slots: tuple[Slot, ...] | list[Slot] = ()  # the headers present after the BaseHeader
        self.consumed = 0  # bytes the headers occupy
        self.counted = 0  # bytes BaseHeader.PacketSize counts
        self.shape: Shape | None = None  # the generated shape that decoded it (fast pass)

    def fast(self) -> None:
        """Generated parsers (packets.generate); may raise anything on bad input."""
        data, headers = self.data, self.headers
        spec = _spec()
        base_header, pos = spec.base(data, 0, headers)
        headers["BaseHeader"] = base_header
        layout = spec.internal_parser if base_header["Flags"] & 0x8 else spec.user_parser
        self.slots, self.consumed, counted, self.shape = layout.parse(data, pos, headers)
        self.counted = pos + counted
        if self.consumed < len(data) and layout is spec.user_parser:
            self.trailer(None)

    def trailer(self, offsets: dict[str, int] | None) -> None:
        """The [MS-MQRR] 2.2.5 headers after a UserMessage, when the bytes left begin with an
        ExtensionHeader (packets.message.parse_trailer).  PacketSize may leave them out (the
        Message Packet Structure is the UserMessage, then them) or count them (the public
        CVE-2023-21554 scanner does): either is taken."""
        found = message.parse_trailer(self.data, self.consumed, self.headers, offsets)
        if found is not None:
            size = found[1] - self.consumed
            if self.headers["BaseHeader"]["PacketSize"] == self.counted + size:
                self.counted += size  # a sender that counts them in PacketSize (as the scanner does)
            self.slots = (*self.slots, *found[0])
            self.consumed = found[1]
            self.shape = None  # the trailer's rules are checked slot by slot

    def diagnose(self) -> None:
        """Interpreted pass recording offsets; raises PacketError at the first bad field."""
        io, headers, offsets = BytesIO(self.data), self.headers, self.offsets
        headers.clear()
        self.slots = []
        headers.BaseHeader = _diagnose_one(base.BASE_HEADER.diagnose, io, offsets, "BaseHeader")
        self.consumed = self.counted = io.tell()
        for slot in layout_for(headers.BaseHeader):
            if _present(slot, headers, io.tell()):
                start = io.tell()
                offsets[slot.name] = start
                value = _diagnose_one(slot.parser.diagnose, io, offsets, slot.name, headers)
                headers[slot.name] = value
                self.slots.append(slot)
                self.consumed = io.tell()
                if slot.counted:
                    self.counted += self.consumed - start
        if self.consumed < len(self.data) and not int(headers.BaseHeader.Flags) & 0x8:
            self.trailer(offsets)


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


def _rule_violations(walk: Walk, kind: PacketKind) -> list[tuple[str, str, str]]:
    """Every rule a receiver checks on this packet, in header order."""
    headers = walk.headers
    spec = _spec()
    found: list[tuple[str, str, str]] = []
    extend = found.extend
    try:
        extend(base.check_base_header(headers))
        for slot in walk.slots:
            for check in slot.checks:
                extend(check(headers))
        extend(_check_packet_size(walk))
        if headers["BaseHeader"]["Flags"] & 0x8:
            extend(spec.check_internal_packet(headers))
        else:
            extend(spec.check_user_message(headers, False))
            if kind in session.TRANSACTIONAL_ACK_KINDS:
                extend(spec.check_transactional_ack(headers))
    except Exception as e:  # a rule that cannot even be evaluated is itself a finding
        found.append(("BaseHeader", f"rules could not be evaluated: {e!r}", ""))
    return found


_SLOT_FAST_FORMS: dict[int, tuple[Holds, ...]] = {}


def _slot_fast_forms(slot: Slot) -> tuple[Holds, ...]:
    forms = _SLOT_FAST_FORMS.get(id(slot))
    if forms is None:
        forms = _SLOT_FAST_FORMS[id(slot)] = tuple(fast_form(check) for check in slot.checks)
    return forms


_base_header_holds = fast_form(base.check_base_header)


def _rules_hold(walk: Walk, kind: PacketKind) -> bool:
    """True when :func:`_rule_violations` would find nothing: the same rules through their fast
    forms (packets.layout.fast_form_of).  False sends the packet through the checks themselves,
    which word the violations."""
    headers = walk.headers
    try:
        base_header = headers["BaseHeader"]
        if (
            not _base_header_holds(headers)
            or base_header["PacketSize"] != walk.counted
            or walk.consumed != len(walk.data)
        ):
            return False
        shape = walk.shape
        if shape is not None:
            if not shape.hold(headers):
                return False
        else:
            for slot in walk.slots:
                for holds in _slot_fast_forms(slot):
                    if not holds(headers):
                        return False
        if base_header["Flags"] & 0x8:
            return _spec().internal_packet_holds(headers)
        if kind is PacketKind.UserMessage:
            return _spec().user_message_holds(headers)
        return (
            kind in session.TRANSACTIONAL_ACK_KINDS
            and _spec().user_message_holds(headers)
            and session.transactional_ack_holds(headers)
        )
    except Exception:  # let the checks themselves report it
        return False


def _check_packet_size(walk: Walk) -> Iterator[tuple[str, str, str]]:
    """[MS-MQMQ] 2.2.19.1: PacketSize is the size of the entire packet including padding,
    excluding a UserMessage's SessionHeader."""
    declared = walk.headers.BaseHeader.PacketSize
    counted = walk.counted
    if declared != counted:
        yield (
            "BaseHeader.PacketSize",
            f"declares {declared} bytes but the headers occupy {counted}",
            base.SECTION,
        )
    consumed = walk.consumed
    if consumed < len(walk.data):
        yield ("BaseHeader.PacketSize", f"{len(walk.data) - consumed} bytes follow the packet", base.SECTION)


_U16 = struct.Struct("<H")
_FUSED: dict[int, FusedParsers] = {}  # by BaseHeader.Flags.IN


_NOT_MADE: Any = object()


def _fill_fused() -> None:
    spec = _spec()
    _FUSED.update({0: spec.user_fused, 0x8: spec.internal_fused})


def fused_function(data: bytes, force: bool = False) -> Callable[[bytes], Packet | None] | None:
    """The whole-packet function (packets.fused) for the flag words of ``data``, if there is one
    yet (``force``: made now)."""
    if len(data) < 20:
        return None
    spec = _spec()
    (flags,) = _U16.unpack_from(data, 2)  # BaseHeader.Flags ([MS-MQMQ] 2.2.19.1)
    parsers = spec.internal_fused if flags & 0x8 else spec.user_fused
    at, fmt, _ = parsers.first_flags
    if len(data) < at + fmt.size:
        return None
    return parsers.function(flags, fmt.unpack_from(data, at)[0], force)


def parse(data: bytes | bytearray | memoryview, strict: bool = True) -> Packet:
    """Decode one packet (a BaseHeader and everything it announces).

    strict=True raises :class:`PacketError` at the first structural failure or broken rule.
    strict=False decodes what it can and returns the violations in ``Packet.violations``
    (``kind`` is ``Unknown`` when the packet could not be identified).
    """
    data = bytes(data)
    if not _FUSED:
        _fill_fused()
    parsers: FusedParsers | None = None
    fused: Any = _NOT_MADE
    try:  # fused_function, inline: the packet's two flag words pick its whole-packet function
        parsers = _FUSED[data[2] & 0x8]  # BaseHeader.Flags.IN: the layout
        flags, first = parsers.key_format.unpack_from(data)
        key = flags << 32 | first
        fused = parsers.functions.get(key, _NOT_MADE)
    except Exception:  # too short for the flags
        parsers = None
    if fused is not _NOT_MADE and fused is not None:
        try:
            packet = fused(data)
        except Exception:  # the usual path decodes it, and words what is wrong
            packet = None
        if packet is not None:
            return packet
    walk = Walk(data)
    try:
        walk.fast()
    except Exception:
        return _parse_diagnosed(data, strict, walk, False)
    try:
        kind, body = _spec().identify(walk.headers)
    except Exception:
        return _parse_diagnosed(data, strict, walk, True)
    if _rules_hold(walk, kind):
        if fused is _NOT_MADE and parsers is not None:  # a valid packet of a shape with no function yet
            parsers.sighted(flags, key & 0xFFFFFFFF)
        return Packet(kind, walk.headers, [], walk.consumed, body)
    return _parse_diagnosed(data, strict, walk, True)


def _parse_diagnosed(data: bytes, strict: bool, walk: Walk, structural_ok: bool) -> Packet:
    """The rest of :func:`parse` for a packet the generated parsers did not decode, or whose
    rules do not all hold: the diagnostic pass, the checks themselves, the violations."""
    violations: list[Violation] = []
    if not structural_ok:
        walk = Walk(data)
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
            offsets_walk = Walk(data)
            with contextlib.suppress(PacketError):  # the fast pass decoded it; offsets suffice
                offsets_walk.diagnose()
            offsets = offsets_walk.offsets
        else:
            offsets = walk.offsets
        violations.extend(Violation(p, _offset_of(p, offsets), r, s) for p, r, s in rules)
    if violations and strict:
        raise violations[0].error()
    return Packet(kind, walk.headers, violations, walk.consumed, body)


def parse_ping(datagram: bytes | bytearray | memoryview, strict: bool = True) -> Packet:
    """Decode a [MS-MQQB] 2.2.7 Ping Packet (a UDP datagram; no BaseHeader)."""
    data = bytes(datagram)
    offsets: dict[str, int] = {}
    violations: list[Violation] = []
    headers = Container()
    try:
        headers.Ping = _diagnose_one(session.PING.diagnose, BytesIO(data), offsets, session.PING.name)
    except PacketError as e:
        if strict:
            raise
        return Packet(PacketKind.Ping, headers, [e.violation], len(data))
    rules = list(session.check_ping(headers))
    extra = len(data) - session.PING.header.sizeof()
    if extra > 0:
        rules.append((session.PING.name, f"{extra} bytes follow the packet", "MS-MQQB 2.2.7"))
    violations = [Violation(p, _offset_of(p, offsets), r, s) for p, r, s in rules]
    if violations and strict:
        raise violations[0].error()
    return Packet(PacketKind.Ping, headers, violations, len(data))


# ---------------------------------------------------------------------------------------------
# build


def _headers_of(packet: Packet | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(packet, dict):  # a Container (the usual case), before the slower Mapping test
        return packet
    if isinstance(packet, Packet):
        return packet.headers
    if isinstance(packet, Mapping):
        return packet
    raise PacketError("", -1, f"build takes a Packet or a mapping of headers, not {type(packet).__name__}")


# The BaseHeader fields every build starts from (base.default_base_header's values).
_BASE_DEFAULTS: dict[str, Any] = dict(base.default_base_header())


def build(packet: Packet | Mapping[str, Any]) -> bytes:
    """Encode a packet from its headers (a :class:`Packet` or a mapping by spec name).

    Headers are written in the layout's order, those absent skipped; flags are written as
    given (so malformed packets can be built on purpose).  BaseHeader.PacketSize, length
    fields and padding are computed when left out (None or missing).  Nothing is made from a
    number past what a packet can carry ([MS-MQMQ] 2.2.19.1, 0x00400000 bytes): a length field
    that asks for a longer padding, or an integer given for bytes that large, raises PacketError
    naming the field and its byte offset in the packet, before anything of that size is made.

    Each header is built by its generated builder (packets.generate); a header it leaves out
    (a computed default, a value it cannot write) is built by construct with the packet's
    headers as context, which also words the PacketError.
    """
    headers = _headers_of(packet)
    given = headers.get("BaseHeader")
    base_header = {**_BASE_DEFAULTS, **given} if given else dict(_BASE_DEFAULTS)
    layout = layout_for(base_header)
    if "ExtensionHeader" in headers and layout is _spec().user:  # [MS-MQRR] 2.2.5: after the UserMessage
        layout = _spec().message_packet
    context: Container | None = None
    parts: list[bytes] = []
    counted = at = base.BASE_HEADER_SIZE
    for _, (_, name, parser, builder, is_counted), value in _headers_given(headers, _build_steps(layout)):
        try:
            if builder is None:
                raise NeedsContext(name)
            data = builder(value)
        except Exception:
            if context is None:
                context = Container(headers)
                context.BaseHeader = Container(base_header)
            try:
                data = parser.build(value, context)
            except PacketError as e:  # an offset in the header: made one in the packet
                if e.offset < 0:
                    raise
                raise PacketError(e.field_path, at + e.offset, e.reason, e.section) from None
        parts.append(data)
        at += len(data)
        if is_counted:
            counted += len(data)
    if base_header["PacketSize"] is None:
        base_header["PacketSize"] = counted
    try:
        data = _build_base_header(base_header)
    except Exception:
        data = base.BASE_HEADER.build(Container(base_header))
    parts.insert(0, data)
    return b"".join(parts)


def _headers_given(headers: Mapping[str, Any], steps: dict[str, _BuildStep]) -> list[tuple[int, _BuildStep, Any]]:
    """The headers given (not None) with their build steps, in the layout's order; a name that is
    no header of the layout is an error (the BaseHeader and ``_``-prefixed names aside)."""
    present: list[tuple[int, _BuildStep, Any]] = []
    ordered = True
    last = -1
    for name, value in headers.items():
        step = steps.get(name)
        if step is None:
            if name != "BaseHeader" and not name.startswith("_"):
                raise PacketError(name, -1, "not a header of this packet layout")
            continue
        if value is None:
            continue
        index = step[0]
        if index < last:
            ordered = False
        last = index
        present.append((index, step, value))
    if not ordered:
        present.sort(key=lambda item: item[0])
    return present


def _build_base_header(base_header: Mapping[str, Any]) -> bytes:
    builder = builder_function(base.BASE_HEADER)
    if builder is None:
        raise NeedsContext("BaseHeader")
    return builder(base_header)


# (position in the layout, name, parser, generated builder, whether PacketSize counts it)
_BuildStep = tuple[int, str, HeaderParser, HeaderBuilder | None, bool]
_BUILD_STEPS: dict[int, tuple[tuple[Slot, ...], dict[str, _BuildStep]]] = {}


def _build_steps(layout: tuple[Slot, ...]) -> dict[str, _BuildStep]:
    """Per header name of a layout: its build step (kept per layout object)."""
    entry = _BUILD_STEPS.get(id(layout))
    if entry is None or entry[0] is not layout:
        steps = {s.name: (i, s.name, s.parser, builder_function(s.parser), s.counted) for i, s in enumerate(layout)}
        entry = _BUILD_STEPS[id(layout)] = (layout, steps)
    return entry[1]


def build_ping(ping: Packet | Mapping[str, Any]) -> bytes:
    """Encode a [MS-MQQB] 2.2.7 Ping Packet from its fields (or a Packet from parse_ping)."""
    fields = ping.headers.Ping if isinstance(ping, Packet) else ping
    return session.PING.build(fields)


# ---------------------------------------------------------------------------------------------
# build by template

_U32 = struct.Struct("<L")
# The fields a template patches: fixed 32-bit fields whose offsets the diagnostic walk records.
_PATCHED = (
    "BaseHeader.PacketSize",
    "UserHeader.MessageID",
    "MessagePropertiesHeader.MessageSize",
    "MessagePropertiesHeader.AllocationBodySize",
)
_BODY = "MessagePropertiesHeader.MessageBody"


def _with_body(headers: Mapping[str, Any], message_id: int, body: bytes) -> Container:
    """``headers`` with UserHeader.MessageID := ``message_id``, MessagePropertiesHeader.MessageBody
    := ``body``, MessageSize and AllocationBodySize computed from it, BaseHeader.PacketSize computed
    (a one-level copy: the packet's mapping and the three headers are new)."""
    out = Container(headers)
    out["BaseHeader"] = Container(headers.get("BaseHeader") or {}, PacketSize=None)
    out["UserHeader"] = Container(headers["UserHeader"], MessageID=message_id)
    out["MessagePropertiesHeader"] = Container(
        headers["MessagePropertiesHeader"], MessageBody=body, MessageSize=None, AllocationBodySize=None
    )
    return out


class UserMessageTemplate:
    """A UserMessage Packet ([MS-MQMQ] 2.2.20) encoded once, to encode packets that differ from it
    only in UserHeader.MessageID (2.2.19.2) and MessagePropertiesHeader.MessageBody (2.2.19.3) with
    the fields that follow from the body: MessageSize, AllocationBodySize, the padding after the
    body and BaseHeader.PacketSize (2.2.19.1).

    ``build(message_id, body)`` gives exactly what :func:`build` gives for ``headers`` with those
    fields replaced (:func:`_with_body`): a copy of the template's bytes up to the body with the
    four 32-bit fields written at the offsets the codec's own diagnostic walk records for them
    (:class:`Walk`, as :func:`packets.field_offset`), then the body, the padding and the bytes
    after the MessagePropertiesHeader, which do not depend on the body.  The construction checks
    that claim against :func:`build` on bodies of every length modulo 4 and another MessageID, and
    raises :class:`PacketError` for headers it does not hold for: not a UserMessage Packet, no
    MessageBody, a MessageSize, AllocationBodySize or BaseHeader.PacketSize other than the one the
    body gives (the headers then say something a new body would contradict).
    """

    __slots__ = ("_at", "_head", "_sizes", "_tails", "at", "headers")

    def __init__(self, headers: Packet | Mapping[str, Any]) -> None:
        headers = _headers_of(headers)
        self.headers = headers
        uh, mph = headers.get("UserHeader"), headers.get("MessagePropertiesHeader")
        given = headers.get("BaseHeader") or {}
        if uh is None or mph is None or int(given.get("Flags") or 0) & 0x8:
            raise PacketError("UserHeader", -1, "a template needs a UserMessage Packet with a MessagePropertiesHeader")
        body = mph.get("MessageBody")
        if not isinstance(body, bytes):
            raise PacketError(_BODY, -1, "a template needs a MessageBody (bytes)")
        message_id = int(uh.get("MessageID") or 0)
        data = build(headers)
        if data != build(_with_body(headers, message_id, body)):
            raise PacketError(
                "MessagePropertiesHeader.MessageSize",
                -1,
                "MessageSize, AllocationBodySize or BaseHeader.PacketSize is not the one the body gives",
            )
        n0 = len(body)
        tails: dict[int, bytes] = {}  # per body length modulo 4: the padding and what follows the header
        pads: dict[int, int] = {}
        for n in range(n0, n0 + 4):
            probe = data if n == n0 else build(_with_body(headers, message_id, b"\xa5" * n))
            walk = Walk(probe)
            walk.diagnose()
            offsets = walk.offsets
            start = offsets[_BODY]
            mph_start = offsets["MessagePropertiesHeader"]
            later = [o for k, o in offsets.items() if "." not in k and o > mph_start]
            end = min(later) if later else len(probe)  # the end of the MessagePropertiesHeader
            tails[n % 4] = probe[start + n :]
            pads[n % 4] = end - start - n
            if n == n0:
                self.at = {path: offsets[path] for path in _PATCHED}
                self._head = probe[:start]
                size_base = _U32.unpack_from(probe, self.at["BaseHeader.PacketSize"])[0] - n0 - pads[n0 % 4]
        self._tails = tuple(tails[r] for r in range(4))
        self._sizes = tuple(size_base + pads[r] for r in range(4))  # PacketSize less the body's length
        self._at = tuple(self.at[path] for path in _PATCHED)
        for n, mid in ((n0, 0x01020304), (n0 + 1, message_id), (n0 + 6, 0xFFFFFFFF), (0, 1), (n0 + 4097, 2)):
            probe_body = b"\x5a" * n
            if self.build(mid, probe_body) != build(_with_body(headers, mid, probe_body)):
                raise PacketError(_BODY, -1, "the packet's bytes after the body depend on the body")

    def build(self, message_id: int, body: bytes) -> bytes:
        """The packet for ``message_id`` and ``body`` (see the class docstring)."""
        n = len(body)
        packet_size, mid, size, allocation = self._at
        head = bytearray(self._head)
        pack_into = _U32.pack_into
        pack_into(head, packet_size, self._sizes[n & 3] + n)
        pack_into(head, mid, message_id)
        pack_into(head, size, n)
        pack_into(head, allocation, n)
        return b"".join((head, body, self._tails[n & 3]))
