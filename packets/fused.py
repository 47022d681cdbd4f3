"""Whole-packet parsers for the packet shapes traffic repeats.

A packet's shape ([MS-MQMQ] 2.2.20: which optional headers follow, which queue format names the
UserHeader carries; [MS-MQQB] 2.2.1: which internal header follows) is decided by two flag words:
BaseHeader.Flags ([MS-MQMQ] 2.2.19.1) and UserHeader.Flags (2.2.19.2) or InternalHeader.Flags
([MS-MQQB] 2.2.1).  Once the codec's usual path has decoded ``FUSE_AFTER`` valid packets of a pair
of flag words, one Python function is generated for it from the construct definitions
(``packets.generate``), decoding every header of that shape in one pass with those two words
pinned: each ``Switch`` and ``If`` they select is resolved when the function is written, not
when it runs, and so is every rule whose fast form reads nothing but them and which headers are
present (:func:`pinned`).  The function then checks what ``packets.codec`` checks on its fast
path (BaseHeader.PacketSize, no bytes after the packet, the other rules' fast forms, [MS-MQQB]
3.1.5.1.1 identification) and returns the same :class:`~packets.codec.Packet`, or None to let the
codec's usual path decode (and word) the packet.  It never words an error and never returns a
packet the usual path would not.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import construct as c
from construct import expr as cexpr

from packets.fields import FlagsField, HeaderParser, fields_new, fixed_format
from packets.generate import (
    FieldScope,
    GeneratedSource,
    LayoutParser,
    Shape,
    UnsupportedConstruct,
    header_function,
    this_path,
    unwrap,
)
from packets.layout import Holds, fast_form

__all__ = ["FusedParsers", "flags_at"]

# data -> the decoded packet, or None (the codec's usual path then decodes it)
FusedFunction = Callable[[bytes], Any]
# headers of a packet a shape's guard turned away -> (its kind, its body), or None (the usual path)
TurnedAway = Callable[[Any], tuple[Any, Any] | None]

#: a pair of flag words gets its own function after this many valid packets
FUSE_AFTER = 64
_MAX_FUNCTIONS = 256
_MAX_COUNTED = 4096


def flags_at(parser: HeaderParser) -> tuple[int, struct.Struct, type[Any]]:
    """Where a header's ``Flags`` word lies: (offset in the header, its struct, its BitFlags
    class); the fields before it must all be of fixed size."""
    offset = 0
    for sub in unwrap(parser.header).subcons:
        inner = unwrap(sub)
        if sub.name == "Flags" and isinstance(inner, FlagsField):
            return offset, inner.fmt, inner.flags_cls
        fixed = fixed_format(sub)
        if fixed is None:
            break
        offset += struct.calcsize("<" + fixed[0])
    raise ValueError(f"{parser.name} has no Flags word at a fixed offset")


def _key_format(*words: tuple[int, struct.Struct, type[Any]]) -> struct.Struct:
    """One struct reading flag words at their offsets from a packet's start (each given as
    :func:`flags_at` gives it, the offset from the packet's start, in increasing order)."""
    fmt, at = "<", 0
    for offset, word, _cls in words:
        fmt += f"{offset - at}x{word.format.lstrip('<')}"
        at = offset + word.size
    return struct.Struct(fmt)


class _PinnedSource(GeneratedSource):
    """Generated lines with the two flag words known: a Switch or If whose selector reads only
    them is resolved here (construct's own rule: ``cases.get(key, default)``, ``then if cond``)."""

    def __init__(self) -> None:
        super().__init__()
        self.known: dict[str, int] = {}  # generated expression -> its value
        self.pin: int | None = None  # the value of the next top-level header's Flags
        self.pinned: dict[str, int] = {}  # variable of a pinned Flags word -> its value, until unpacked

    def bound(self, scope: FieldScope, name: str, value: str) -> None:
        if name == "Flags" and self.pin is not None and scope.parent is not None and scope.parent.parent is None:
            self.known[value] = self.pinned[value] = self.pin
            self.pin = None

    def fixed(self, run: list[tuple[str, str, str]], indent: int) -> None:
        """As :meth:`GeneratedSource.fixed`; a pinned Flags word read from the bytes must be the
        one the function was written for, and is then one flag-word object made when the function
        was written (a BitFlags is an immutable int)."""
        pinned = [(target, wrap) for target, _, wrap in run if target in self.pinned and wrap]
        if not pinned:
            super().fixed(run, indent)
            return
        super().fixed([(target, fmt, "" if target in self.pinned else wrap) for target, fmt, wrap in run], indent)
        for target, wrap in pinned:
            value = self.pinned.pop(target)
            self.add(indent, f"if {target} != {value}: return None")
            self.add(indent, f"{target} = {self.const(self.namespace[wrap](value), 'pinned')}")

    def static(self, e: Any, scope: FieldScope) -> Any:
        """The value of a construct expression when it reads only pinned words, else None."""
        if isinstance(e, bool) or not isinstance(e, int | cexpr.ExprMixin):
            return None
        if isinstance(e, int):
            return e
        if isinstance(e, cexpr.BinExpr):
            lhs, rhs = self.static(e.lhs, scope), self.static(e.rhs, scope)
            return None if lhs is None or rhs is None else e.op(lhs, rhs)
        if isinstance(e, cexpr.UniExpr):
            operand = self.static(e.operand, scope)
            return None if operand is None else e.op(operand)
        if isinstance(e, cexpr.Path):
            found = this_path(e, scope)
            if found is None:
                return None
            s, chain = found
            try:
                code = s.resolve(chain[0]) + "".join(f"[{k!r}]" for k in chain[1:])
            except UnsupportedConstruct:
                return None
            return self.known.get(code)
        return None

    def construct(self, sc: c.Construct, scope: FieldScope, target: str, indent: int) -> None:
        inner = unwrap(sc)
        if isinstance(inner, c.IfThenElse):
            cond = self.static(inner.condfunc, scope)
            if cond is not None:
                self.construct(inner.thensubcon if cond else inner.elsesubcon, scope, target, indent)
                return
        elif isinstance(inner, c.Switch):
            key = self.static(inner.keyfunc, scope)
            if key is not None:
                self.construct(inner.cases.get(key, inner.default), scope, target, indent)
                return
        super().construct(sc, scope, target, indent)


class FusedParsers:
    """The whole-packet functions of one layout (the headers after a BaseHeader), per pair of
    flag words.  ``packet(kind, headers, violations, size, body)`` makes the codec's Packet;
    ``base_holds`` and ``packet_holds`` are the fast forms of the BaseHeader's rules and of the
    layout's packet-level rules; ``kind_of(pins)`` is [MS-MQQB] 3.1.5.1.1 for every packet of a
    shape: its kind and a guard that must hold for it (None: none), or None when the shape's
    packets take the usual path.  ``turned_away(headers)``, when given, is what a packet the guard
    turns away is (among UserMessages, one that may be an OrderAck or a FinalAck): its kind and
    body when its own rules hold too, else None (the usual path)."""

    def __init__(
        self,
        base: HeaderParser,
        layout: LayoutParser,
        packet: Callable[..., Any],
        base_holds: Holds,
        packet_holds: Holds,
        kind_of: Callable[[dict[str, int]], tuple[Any, Holds | None] | None],
        turned_away: TurnedAway | None = None,
    ) -> None:
        assert layout.first is not None
        self.base = base
        self.layout = layout
        self.packet = packet
        self.base_holds = base_holds
        self.packet_holds = packet_holds
        self.kind_of = kind_of
        self.turned_away = turned_away
        self.base_flags = flags_at(base)
        at, fmt, cls = flags_at(layout.first.parser)
        self.first_flags = (16 + at, fmt, cls)  # the first header follows the 16-byte BaseHeader
        self.key_format = _key_format(self.base_flags, self.first_flags)
        self.functions: dict[int, FusedFunction | None] = {}
        self.seen: dict[int, int] = {}

    def function(self, base_flags: int, first_flags: int, force: bool = False) -> FusedFunction | None:
        """The function for this pair of flag words if it has been made (``force``: made now);
        None when it has not, or when the shape reads more than the two words, or none of its
        packets can pass the rules."""
        key = base_flags << 32 | first_flags
        fn = self.functions.get(key, _MISSING)
        if fn is not _MISSING:
            return fn
        return self._made(key, base_flags, first_flags) if force else None

    def sighted(self, base_flags: int, first_flags: int) -> None:
        """A valid packet of this pair of flag words was decoded by the usual path: its function
        is made at the FUSE_AFTER-th."""
        key = base_flags << 32 | first_flags
        seen = self.seen.get(key, 0) + 1
        if seen < FUSE_AFTER:
            if len(self.seen) >= _MAX_COUNTED:
                self.seen.clear()
            self.seen[key] = seen
        else:
            self._made(key, base_flags, first_flags)

    def _made(self, key: int, base_flags: int, first_flags: int) -> FusedFunction | None:
        self.seen.pop(key, None)
        if len(self.functions) >= _MAX_FUNCTIONS:
            self.functions.clear()
        fn = self.functions[key] = self._make(base_flags, first_flags)
        return fn

    def _make(self, base_flags: int, first_flags: int) -> FusedFunction | None:
        assert self.layout.first is not None
        first = self.layout.first.name
        flags = {"BaseHeader": self.base_flags[2](base_flags), first: self.first_flags[2](first_flags)}
        shape = self.layout.shape(flags["BaseHeader"], flags[first])
        if shape is None:
            return None
        pins = {"BaseHeader": base_flags, first: first_flags}
        kind = self.kind_of(pins)
        if kind is None:
            return None
        present = frozenset(("BaseHeader", *(slot.name for slot in shape.slots)))
        rules: list[Holds] = []
        for holds in (self.base_holds, *(fast_form(check) for check in shape.checks), self.packet_holds):
            verdict = pinned(holds, flags, present)
            if verdict is False:
                return None  # no packet of this shape passes: the usual path words why
            if verdict is not True:
                rules.append(verdict)
        guard = None if kind[1] is None else (kind[1], self.turned_away)
        return _generate(self.base, shape, pins, tuple(rules), (kind[0], guard), self.packet)


_MISSING: Any = object()


class _DataNeeded(BaseException):
    """A rule read something the flag words do not decide."""


class _HeaderProbe(dict[str, Any]):
    """A header of a shape: present, and (``flags`` given) its Flags word; reading anything else
    of it raises :class:`_DataNeeded`."""

    def __init__(self, flags: Any = None) -> None:
        if flags is None:
            super().__init__()
        else:
            super().__init__(Flags=flags)
        object.__setattr__(self, "__dict__", self)

    def __getitem__(self, key: str) -> Any:
        if key != "Flags" or not dict.__len__(self):
            raise _DataNeeded(key)
        return dict.__getitem__(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key]

    def __getattr__(self, key: str) -> Any:
        raise _DataNeeded(key)

    def _unknown(self, *args: Any) -> Any:
        raise _DataNeeded("a header's fields")

    __contains__ = __len__ = __iter__ = keys = items = values = _unknown


class _PacketProbe(dict[str, Any]):
    """A packet's headers as its shape decides them: which are present, and two flag words."""

    def __init__(self, flags: dict[str, Any], present: frozenset[str]) -> None:
        super().__init__({name: _HeaderProbe(flags.get(name)) for name in present})
        object.__setattr__(self, "__dict__", self)


def pinned(holds: Holds, flags: dict[str, Any], present: frozenset[str]) -> Holds | bool:
    """A rule's fast form for every packet of a shape: its verdict when it reads nothing but
    which headers are present and the two flag words (the same for every packet of the shape),
    else the fast form itself."""
    try:
        return bool(holds(_PacketProbe(flags, present)))
    except (_DataNeeded, Exception):
        return holds


def _generate(
    base: HeaderParser,
    shape: Shape,
    pins: dict[str, int],
    rules: tuple[Holds, ...],
    kind: tuple[Any, tuple[Holds, TurnedAway | None] | None],
    packet: Callable[..., Any],
) -> FusedFunction:
    """The function of one shape: ``kind`` is the shape's packet kind and its guard, with what a
    packet the guard turns away is (see :class:`FusedParsers`)."""
    src = _PinnedSource()
    src.namespace.update({"fields_new": fields_new, "_int_ne": int.__ne__, "packet": packet, "kind": kind[0]})
    src.add(0, "def parse(data):")
    src.add(1, "size = len(data)")
    src.add(1, "headers = fields_new(Fields)")
    src.add(1, "pos = 0")
    for name, value in pins.items():
        src.known[f"headers[{name!r}]['Flags']"] = value
    _header(src, "BaseHeader", base, pins)
    src.add(1, "counted = pos")  # PacketSize counts the BaseHeader
    for slot in shape.slots:
        if slot.counted:
            src.add(1, "start = pos")
        _header(src, slot.name, slot.parser, pins)
        if slot.counted:
            src.add(1, "counted += pos - start")
    src.add(1, "if pos != size or h_BaseHeader['PacketSize'] != counted: return None")
    for holds in rules:
        src.add(1, f"if not {src.const(holds, 'holds')}(headers): return None")
    if kind[1] is not None:
        _turned_away(src, *kind[1])
    src.add(1, "return packet(kind, headers, [], pos, None)")
    names = "+".join(slot.name for slot in shape.slots)
    label = f"packet {pins['BaseHeader']:#x}/{pins[shape.slots[0].name]:#x} {names}"
    fn: FusedFunction = src.compile(label)["parse"]
    return fn


def _turned_away(src: _PinnedSource, guard: Holds, turned_away: TurnedAway | None) -> None:
    """Lines for a packet the guard turns away: the packet ``turned_away`` makes of it, else None."""
    src.add(1, f"if not {src.const(guard, 'guard')}(headers):")
    if turned_away is None:
        src.add(2, "return None")
        return
    src.add(2, f"found = {src.const(turned_away, 'turned_away')}(headers)")
    src.add(2, "return None if found is None else packet(found[0], headers, [], pos, found[1])")


def _header(src: _PinnedSource, name: str, parser: HeaderParser, pins: dict[str, int]) -> None:
    """Lines decoding one header into ``h_<name>`` and ``headers[name]``; a pinned Flags word
    read from the bytes must be the one the function was written for."""
    target = f"h_{name}"
    mark, ids, known = len(src.lines), src._ids, dict(src.known)
    src.pin = pins.get(name)
    try:
        src.construct(parser.header, FieldScope(None), target, 1)
    except UnsupportedConstruct:
        del src.lines[mark:]
        src._ids, src.known = ids, known
        src.pinned.clear()
        fn = src.const(header_function(parser), "parse_" + name)
        src.add(1, f"{target}, pos = {fn}(data, pos, headers)")
    src.pin = None
    src.add(1, f"headers[{name!r}] = {target}")
    checked = _checked_pin(src, known)
    src.pinned.clear()
    if name in pins and not checked:
        src.add(1, f"if _int_ne({target}['Flags'], {pins[name]}): return None")


def _checked_pin(src: _PinnedSource, before: dict[str, int]) -> bool:
    """Whether the header just written checked its pinned Flags word as it read it
    (:meth:`_PinnedSource.fixed`)."""
    return any(var not in before and var not in src.pinned for var in src.known)
