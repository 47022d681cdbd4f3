"""A Wireshark dissector (Lua) generated from the construct definitions.

Renders, for Wireshark and tshark, every header of the [MS-MQMQ] 2.2.19-2.2.20 UserMessage
Packet (with the [MS-MQRR] 2.2.5.1 SRMP headers), the [MS-MQQB] 2.2 session packets
(EstablishConnection, ConnectionParameters, SessionAck, OrderAck and FinalAck with their 2.2.4.1
and 2.2.5.1 bodies) on TCP port 1801, and the [MS-MQQB] 2.2.7 Ping Packet on UDP port 3527.

Nothing here lists a field: the Lua source is written by walking the same ``Header``
definitions the codec parses with (``packets.generate`` walks them to write Python), piece by
piece — ``Struct``, ``Int*ul``, ``FlagsField`` (one bitmask sub-field per spec abbreviation),
``Guid``, ``Data``, ``Pad``, ``Utf16z`` / ``Utf16Terminated``, ``If``, ``Switch``, ``Tell`` and
``ElementList``.  Every field is registered under its spec path (``msmq.BaseHeader.PacketSize``,
``msmq.UserHeader.Flags.DQ``).  Which optional headers follow is taken from the codec's layouts
(``packets.message.USER_MESSAGE_LAYOUT``, ``packets.session.INTERNAL_LAYOUT``): each slot's
presence rule is probed over the sub-fields of the two flag words it may read (as
``packets.generate.LayoutParser`` evaluates it), turned into a Lua condition and checked on
random flag words; the same probe finds the BaseHeader flag that chooses the internal layout and
the headers BaseHeader.PacketSize does not count (the UserMessage's SessionHeader, the framing
rule of ``packets.stream.wire_length``), so TCP reassembly (``dissect_tcp_pdus``) cuts the
stream as the codec's splitter does.  Packet identification ([MS-MQQB] 3.1.5.1.1) is rendered
from the table ``packets.session.identify`` reads (``INTERNAL_KINDS``, ``TRANSACTIONAL_ACKS``),
which also names the acknowledgments whose body is dissected.

Usage: ``python -m packets.dissector > msmq.lua``, then ``wireshark -X lua_script:msmq.lua`` (or
copy the file into Wireshark's personal Lua plugins folder).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from string import Template
from typing import Any

import construct as c
from construct import expr as cexpr

from packets import base, message, session
from packets.codec import layout_for
from packets.fields import BitFlags, Data, ElementList, Fields, FlagsField, GuidConstruct, Pad, Utf16z
from packets.generate import this_path
from packets.layout import PacketKind, Slot, always

__all__ = [
    "DEFAULT_TCP_PORT",
    "DEFAULT_UDP_PORT",
    "PROTO",
    "LuaField",
    "generate_lua",
    "lua_fields",
]

PROTO = "msmq"
DEFAULT_TCP_PORT = 1801  # [MS-MQQB] 2.1.1
DEFAULT_UDP_PORT = session.PING_PORT  # [MS-MQQB] 2.1.2


class DissectorError(Exception):
    """A construct piece or a presence rule the generator cannot render."""


@dataclass(frozen=True)
class LuaField:
    """One Wireshark field: its filter name (spec path), label, type, display base and mask."""

    abbr: str
    name: str
    ftype: str  # ProtoField constructor: uint8/16/32/64, guid, bytes, string, none
    base: str | None = None
    mask: int | None = None
    blurb: str = ""

    def lua(self) -> str:
        args = [_q(self.abbr), _q(self.name)]
        if self.ftype.startswith("uint"):
            args += [self.base or "base.DEC", "nil", f"0x{self.mask:X}" if self.mask is not None else "nil"]
        elif self.ftype == "bytes":
            args += ["base.NONE"]
        elif self.ftype == "string":
            args += ["base.UNICODE"]
        if self.blurb:
            args.append(_q(self.blurb))
        return f"ProtoField.{self.ftype}({', '.join(args)})"


def _q(text: str) -> str:
    """A Lua string literal."""
    out = []
    for ch in text:
        if ch in '\\"':
            out.append("\\" + ch)
        elif 32 <= ord(ch) < 127:
            out.append(ch)
        else:
            out.extend(f"\\{b}" for b in ch.encode("utf-8"))
    return '"' + "".join(out) + '"'


def _unwrap(sc: c.Construct) -> c.Construct:
    while isinstance(sc, c.Renamed | c.Default):
        sc = sc.subcon
    return sc


_UINTS = {"<B": ("uint8", 1, "le_uint"), "<H": ("uint16", 2, "le_uint"), "<L": ("uint32", 4, "le_uint")}
_UINTS["<Q"] = ("uint64", 8, "le_uint64")
_FLAG_TYPES = {8: "uint8", 16: "uint16", 32: "uint32"}


# ---------------------------------------------------------------------------------------------
# Lua source of one header, walked from its construct definition


class _Scope:
    """Names of one struct being generated -> the Lua expression holding each value; the root
    scope reads the headers decoded before (``h.<Header>``), as construct's context does."""

    def __init__(self, parent: _Scope | None, table: str) -> None:
        self.parent = parent
        self.table = table
        self.names: set[str] = set()

    def resolve(self, name: str) -> str:
        if name in self.names:
            return f"{self.table}[{_q(name)}]"
        if self.parent is None and not name.startswith("_"):
            return f"h[{_q(name)}]"
        raise DissectorError(f"field {name!r} is read before it is decoded")


class _Emitter:
    """Generated Lua lines and the fields they register."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.fields: dict[str, LuaField] = {}
        self._ids = 0

    def var(self, hint: str) -> str:
        self._ids += 1
        return f"{hint}{self._ids}"

    def add(self, indent: int, line: str) -> None:
        self.lines.append("  " * indent + line)

    def field(self, f: LuaField) -> str:
        """Register ``f`` (once per filter name; a second definition must agree) -> its Lua name."""
        old = self.fields.get(f.abbr)
        if old is None:
            self.fields[f.abbr] = f
        elif (old.ftype, old.base, old.mask) != (f.ftype, f.base, f.mask):
            raise DissectorError(f"{f.abbr} is defined twice with different types ({old} and {f})")
        return f"F[{_q(f.abbr)}]"

    # -- expressions -------------------------------------------------------------------------

    def expr(self, e: Any, scope: _Scope) -> str:
        if isinstance(e, bool):
            return "true" if e else "false"
        if isinstance(e, int):
            return repr(e)
        if isinstance(e, cexpr.BinExpr):
            lhs, rhs, op = self.expr(e.lhs, scope), self.expr(e.rhs, scope), cexpr.opnames[e.op]
            calls = {"&": "band", "|": "bor", "^": "bxor", "<<": "lshift", ">>": "rshift"}
            if op in calls:
                return f"{calls[op]}({lhs}, {rhs})"
            if op == "//":
                return f"math.floor({lhs} / {rhs})"
            if op == "**":
                return f"({lhs} ^ {rhs})"
            if op == "!=":
                return f"({lhs} ~= {rhs})"
            if op in ("+", "-", "*", "/", "%", ">", ">=", "<", "<=", "=="):
                return f"({lhs} {op} {rhs})"
            raise DissectorError(f"operator {op!r}")
        if isinstance(e, cexpr.UniExpr):
            op = cexpr.opnames[e.op]
            if op == "not":
                return f"(not truthy({self.expr(e.operand, scope)}))"
            if op in ("-", "+"):
                return f"({op}{self.expr(e.operand, scope)})"
            raise DissectorError(f"operator {op!r}")
        if isinstance(e, cexpr.Path):
            found = this_path(e, scope)
            if found is None:
                raise DissectorError(f"expression {e!r}")
            s, chain = found
            return s.resolve(chain[0]) + "".join(f"[{_q(k)}]" for k in chain[1:])
        raise DissectorError(f"expression {e!r}")

    # -- pieces ------------------------------------------------------------------------------

    def struct(
        self, sc: c.Struct, path: str, scope: _Scope, target: str, tree: str, indent: int, label: str = ""
    ) -> None:
        """A struct: a subtree (an FT_NONE field named by its path) and a Lua table of values."""
        table, item, start = self.var("v"), self.var("t"), self.var("s")
        name = path.rsplit(".", 1)[-1]
        blurb = label
        self.add(indent, f"local {table}, {start} = {{}}, off")
        self.add(
            indent,
            f"local {item} = {tree}:add({self.field(LuaField(path, name, 'none', blurb=blurb))}, tvb:range(off, 0))",
        )
        inner = _Scope(scope, table)
        for sub in sc.subcons:
            if not sub.name:
                raise DissectorError(f"{path}: a nameless piece")
            value = f"{table}[{_q(sub.name)}]"
            self.piece(sub, f"{path}.{sub.name}", inner, value, item, indent)
            inner.names.add(sub.name)
        self.add(indent, f"{item}:set_len(off - {start})")
        self.add(indent, f"{target} = {table}")

    def piece(self, sc: c.Construct, path: str, scope: _Scope, target: str, tree: str, indent: int) -> None:
        """One construct piece at ``off``: its value into ``target``, its field under ``tree``
        (none for a name starting with ``_``), ``off`` past it."""
        sc = _unwrap(sc)
        if isinstance(sc, c.FormatField) and sc.fmtstr in _UINTS:
            self._uint(sc, path, target, tree, indent)
        elif isinstance(sc, FlagsField):
            self.flags(sc.flags_cls, path, target, tree, indent)
        elif isinstance(sc, GuidConstruct):
            self._guid(path, target, tree, indent)
        elif isinstance(sc, Data | Pad | Utf16z):
            self._sized(sc, path, scope, target, tree, indent)
        elif type(sc).__name__ == "Utf16Terminated":
            self._utf16_terminated(path, target, tree, indent)
        elif isinstance(sc, c.Struct):
            self.struct(sc, path, scope, target, tree, indent)
        elif isinstance(sc, c.IfThenElse):
            self.add(indent, f"if truthy({self.expr(sc.condfunc, scope)}) then")
            self.piece(sc.thensubcon, path, scope, target, tree, indent + 1)
            self.add(indent, "else")
            self.piece(sc.elsesubcon, path, scope, target, tree, indent + 1)
            self.add(indent, "end")
        elif isinstance(sc, c.Switch):
            self._switch(sc, path, scope, target, tree, indent)
        elif sc is c.Pass:
            self.add(indent, f"{target} = nil")
        elif sc is c.Tell:
            self.add(indent, f"{target} = off")
        elif sc is c.Error:
            self.add(indent, f'fail({_q(path)}, off, "no such case")')
        elif isinstance(sc, ElementList):
            self.elements(sc, path, scope, target, tree, indent)
        else:
            raise DissectorError(f"{path}: no Lua rendering for {type(sc).__name__}")

    def _shown(self, path: str, ftype: str) -> str | None:
        """The Lua name of the field ``path`` registers as ``ftype``; None for a hidden piece."""
        name = path.rsplit(".", 1)[-1]
        return None if name.startswith("_") else self.field(LuaField(path, name, ftype))

    def _uint(self, sc: c.FormatField, path: str, target: str, tree: str, indent: int) -> None:
        """A little-endian unsigned integer (``Int*ul``)."""
        ftype, size, reader = _UINTS[sc.fmtstr]
        r = self.var("r")
        self.add(indent, f"local {r} = take(tvb, off, {size}, {_q(path)})")
        self.add(indent, f"{target} = {r}:{reader}()")
        fld = self._shown(path, ftype)
        if fld is not None:
            self.add(indent, f"{tree}:add_le({fld}, {r})")
        self.add(indent, f"off = off + {size}")

    def _guid(self, path: str, target: str, tree: str, indent: int) -> None:
        """A GUID (16 bytes, bytes_le)."""
        r = self.var("r")
        self.add(indent, f"local {r} = take(tvb, off, 16, {_q(path)})")
        self.add(indent, f"{target} = {r}:bytes()")
        fld = self._shown(path, "guid")
        if fld is not None:
            self.add(indent, f"{tree}:add_le({fld}, {r})")
        self.add(indent, "off = off + 16")

    def _sized(self, sc: Data | Pad | Utf16z, path: str, scope: _Scope, target: str, tree: str, indent: int) -> None:
        """Bytes of a length the packet gives: data, alignment padding or UTF-16 text."""
        n, r = self.var("n"), self.var("r")
        self.add(indent, f"local {n} = {self.expr(sc.length, scope)}")
        self.add(indent, f"local {r} = take(tvb, off, {n}, {_q(path)})")
        if isinstance(sc, Utf16z):
            self.add(
                indent,
                f'if {n} % 2 ~= 0 then fail({_q(path)}, off, "UTF-16 string of odd byte length " .. {n}) end',
            )
            self.add(indent, f"{target} = utf16({r}, {n})")
            fld = self._shown(path, "string")
            if fld is not None:
                self.add(indent, f"{tree}:add({fld}, {r}, {target})")
        elif isinstance(sc, Data):
            self.add(indent, f"{target} = {{offset = off, len = {n}}}")
            fld = self._shown(path, "bytes")
            if fld is not None:
                self.add(indent, f"{tree}:add({fld}, {r})")
        else:  # alignment padding: skipped, as the decoded packet leaves it out
            self.add(indent, f"{target} = {{offset = off, len = {n}}}")
        self.add(indent, f"off = off + {n}")

    def _utf16_terminated(self, path: str, target: str, tree: str, indent: int) -> None:
        """UTF-16 text up to its terminating NUL."""
        end = self.var("e")
        self.add(indent, f"local {end} = utf16_end(tvb, off, {_q(path)})")
        self.add(indent, f"{target} = utf16(tvb:range(off, {end} - off), {end} - off)")
        fld = self._shown(path, "string")
        if fld is not None:
            self.add(indent, f"{tree}:add({fld}, tvb:range(off, {end} - off), {target})")
        self.add(indent, f"off = {end}")

    def _switch(self, sc: c.Switch, path: str, scope: _Scope, target: str, tree: str, indent: int) -> None:
        """A Switch on an integer key: one Lua branch per case, the default last."""
        key = self.var("k")
        self.add(indent, f"local {key} = {self.expr(sc.keyfunc, scope)}")
        keyword = "if"
        for case, sub in sc.cases.items():
            if isinstance(case, bool) or not isinstance(case, int):
                raise DissectorError(f"{path}: switch key {case!r}")
            self.add(indent, f"{keyword} {key} == {case} then")
            self.piece(sub, path, scope, target, tree, indent + 1)
            keyword = "elseif"
        self.add(indent, "else")
        self.piece(sc.default, path, scope, target, tree, indent + 1)
        self.add(indent, "end")

    def flags(self, cls: type[BitFlags], path: str, target: str, tree: str, indent: int) -> None:
        """A flag word: the word (hex) and one bitmask sub-field per spec abbreviation."""
        size = cls._width_ // 8
        r, item = self.var("r"), self.var("fi")
        ftype = _FLAG_TYPES[cls._width_]
        name = path.rsplit(".", 1)[-1]
        self.add(indent, f"local {r} = take(tvb, off, {size}, {_q(path)})")
        self.add(indent, f"{target} = {r}:le_uint()")
        fld = self.field(LuaField(path, name, ftype, "base.HEX", blurb=" ".join((cls.__doc__ or "").split())))
        self.add(indent, f"local {item} = {tree}:add_le({fld}, {r})")
        for sub, shift, width in cls._fields_:
            mask = ((1 << width) - 1) << shift
            base_ = "base.HEX" if width >= 8 else "base.DEC"
            sub_field = self.field(LuaField(f"{path}.{sub}", sub, ftype, base_, mask))
            self.add(indent, f"{item}:add_le({sub_field}, {r})")
        self.add(indent, f"off = off + {size}")

    def elements(self, sc: ElementList, path: str, scope: _Scope, target: str, tree: str, indent: int) -> None:
        """``count`` elements, each a subtree named by the element type."""
        count, item, start, i = self.var("c"), self.var("t"), self.var("s"), self.var("i")
        name = path.rsplit(".", 1)[-1]
        self.add(indent, f"local {count}, {start} = {self.expr(sc.count, scope)}, off")
        self.add(indent, f'if {count} < 0 then fail({_q(path)}, off, "invalid count " .. {count}) end')
        self.add(indent, f"local {item} = {tree}:add({self.field(LuaField(path, name, 'none'))}, tvb:range(off, 0))")
        self.add(indent, f"{target} = {{}}")
        self.add(indent, f"for {i} = 1, {count} do")
        element = self.var("el")
        self.add(indent + 1, f"local {element}, at = nil, off")
        inner = _Scope(None, "nil")
        self.struct(_unwrap(sc.subcon), f"{path}.{sc.element_name}", inner, element, item, indent + 1)
        self.add(indent + 1, f'if off <= at then fail({_q(path)}, off, "an element of no bytes") end')
        self.add(indent + 1, f"{target}[{i}] = {element}")
        self.add(indent, "end")
        self.add(indent, f"{item}:set_len(off - {start})")


def _header_function(em: _Emitter, name: str, header: c.Construct, section: str) -> str:
    """``parse_<name>(tvb, tree, off, h) -> off``: decodes the header into ``h[name]``."""
    fn = f"parse_{name}"
    em.add(0, f"local function {fn}(tvb, tree, off, h)")
    sc = _unwrap(header)
    if not isinstance(sc, c.Struct):
        raise DissectorError(f"{name} is not a Struct")
    em.struct(sc, f"{PROTO}.{name}", _Scope(None, "h"), f"h[{_q(name)}]", "tree", 1, label=section)
    em.add(1, "return off")
    em.add(0, "end")
    em.add(0, "")
    return fn


# ---------------------------------------------------------------------------------------------
# Presence rules, probed from the codec's layouts


@dataclass(frozen=True)
class _SubField:
    word: str  # "key" (BaseHeader.Flags) or "first" (the layout's first header's Flags)
    name: str
    shift: int
    width: int

    def values(self, rng: random.Random) -> list[int]:
        if self.width <= 8:
            return list(range(1 << self.width))
        return sorted({0, (1 << self.width) - 1, *(rng.getrandbits(self.width) for _ in range(30))})

    def get(self, key: int, first: int) -> int:
        word = key if self.word == "key" else first
        return (word >> self.shift) & ((1 << self.width) - 1)

    def put(self, key: int, first: int, value: int) -> tuple[int, int]:
        mask = ((1 << self.width) - 1) << self.shift
        if self.word == "key":
            return (key & ~mask) | (value << self.shift), first
        return key, (first & ~mask) | (value << self.shift)


def _subfields(word: str, cls: type[BitFlags]) -> list[_SubField]:
    out = [_SubField(word, name, shift, width) for name, shift, width in cls._fields_]
    covered = 0
    for _, shift, width in cls._fields_:
        covered |= ((1 << width) - 1) << shift
    out += [_SubField(word, f"bit{b}", b, 1) for b in range(cls._width_) if not covered >> b & 1]
    return out


@dataclass(frozen=True)
class _Rule:
    """A presence rule as the sub-field values that make it true."""

    fields: tuple[_SubField, ...]
    true_rows: tuple[tuple[int, ...], ...]
    constant: bool | None = None

    def lua(self, words: dict[str, str]) -> str:
        if self.constant is not None:
            return "true" if self.constant else "false"

        def value(f: _SubField) -> str:
            return f"band(rshift({words[f.word]}, {f.shift}), 0x{(1 << f.width) - 1:X})"

        rows = []
        for row in self.true_rows:
            rows.append(" and ".join(f"{value(f)} == {v}" for f, v in zip(self.fields, row, strict=True)))
        return "(" + " or ".join(f"({r})" for r in rows) + ")" if rows else "false"

    def evaluate(self, key: int, first: int) -> bool:
        if self.constant is not None:
            return self.constant
        return tuple(f.get(key, first) for f in self.fields) in set(self.true_rows)


_MAX_ROWS = 4096


def derive_rule(
    present: Callable[[int, int], bool],
    candidates: Sequence[_SubField],
    *,
    seed: int = 0,
    samples: int = 2000,
    label: str = "",
) -> _Rule:
    """The presence rule ``present(key_flags, first_flags)`` as sub-field values: which of the
    ``candidates`` it reads (probed from several baselines), its truth table over them, checked
    on ``samples`` random flag words.  Raises DissectorError for a rule it cannot render."""
    rng = random.Random(seed)
    widths = {f.word: 0 for f in candidates}
    for f in candidates:
        widths[f.word] = max(widths[f.word], f.shift + f.width)
    baselines = [(0, 0), ((1 << widths.get("key", 0)) - 1, (1 << widths.get("first", 0)) - 1)]
    baselines += [
        (rng.getrandbits(max(widths.get("key", 1), 1)), rng.getrandbits(max(widths.get("first", 1), 1)))
        for _ in range(24)
    ]
    used: list[_SubField] = []
    for f in candidates:
        values = f.values(rng)
        for key, first in baselines:
            outcomes = {present(*f.put(key, first, v)) for v in values}
            if len(outcomes) > 1:
                used.append(f)
                break
    if not used:
        constant = present(0, 0)
        rule = _Rule((), (), constant)
    else:
        spaces = [f.values(rng) for f in used]
        total = 1
        for s in spaces:
            total *= len(s)
        if total > _MAX_ROWS or any(f.width > 8 for f in used):
            raise DissectorError(f"{label}: the presence rule reads too many flag bits ({[f.name for f in used]})")
        rows = []
        for row in itertools.product(*spaces):
            key, first = 0, 0
            for f, v in zip(used, row, strict=True):
                key, first = f.put(key, first, v)
            if present(key, first):
                rows.append(tuple(row))
        rule = _Rule(tuple(used), tuple(rows))
    for _ in range(samples):
        key, first = rng.getrandbits(max(widths.get("key", 1), 1)), rng.getrandbits(max(widths.get("first", 1), 1))
        if rule.evaluate(key, first) != present(key, first):
            raise DissectorError(f"{label}: the presence rule is not a function of the flag sub-fields it reads")
    return rule


def _flags_class(header: c.Construct) -> type[BitFlags]:
    for sub in _unwrap(header).subcons:
        if sub.name == "Flags" and isinstance(_unwrap(sub), FlagsField):
            return _unwrap(sub).flags_cls
    raise DissectorError("the first header of a layout has no Flags word")


@dataclass(frozen=True)
class _LayoutPlan:
    """A layout rendered: its first header and, for each slot after it, the Lua presence test."""

    slots: tuple[Slot, ...]
    first: Slot
    first_cls: type[BitFlags]
    rules: tuple[_Rule, ...]


def _plan_layout(slots: tuple[Slot, ...], label: str) -> _LayoutPlan:
    first = slots[0]
    if first.present is not always:
        raise DissectorError(f"{label}: the first header of a layout must always be present")
    first_cls = _flags_class(first.parser.header)
    candidates = _subfields("key", base.BaseHeaderFlags) + _subfields("first", first_cls)
    rules = []
    for slot in slots[1:]:
        if slot.present is always:
            rules.append(_Rule((), (), True))
            continue

        def present(key: int, flags: int, slot: Slot = slot) -> bool:
            probe = Fields()
            probe["BaseHeader"] = Fields(Flags=base.BaseHeaderFlags(key))
            probe[first.name] = Fields(Flags=first_cls(flags))
            try:
                return bool(slot.present(probe))
            except Exception as e:
                raise DissectorError(f"{label}.{slot.name}: presence reads more than the flag words ({e!r})") from None

        rules.append(derive_rule(present, candidates, label=f"{label}.{slot.name}"))
    return _LayoutPlan(slots, first, first_cls, tuple(rules))


def _internal_rule() -> _Rule:
    """The BaseHeader flags that choose the internal layout (``packets.codec.layout_for``)."""
    internal = tuple(session.INTERNAL_LAYOUT)

    def present(key: int, _first: int) -> bool:
        return tuple(layout_for({"Flags": base.BaseHeaderFlags(key)})) == internal

    return derive_rule(present, _subfields("key", base.BaseHeaderFlags), label="layout")


def _uncounted(plan: _LayoutPlan) -> list[tuple[_Rule, int]]:
    """(presence rule, size) of every slot BaseHeader.PacketSize does not count; such a rule may
    read only BaseHeader.Flags (the framing sees nothing else) and the header has a fixed size."""
    out = []
    for slot, rule in zip(plan.slots[1:], plan.rules, strict=True):
        if slot.counted:
            continue
        if any(f.word != "key" for f in rule.fields) or (rule.constant is not None and rule.constant):
            raise DissectorError(f"{slot.name}: an uncounted header must be announced by BaseHeader.Flags")
        try:
            size = int(_unwrap(slot.parser.header).sizeof())
        except c.SizeofError:
            raise DissectorError(f"{slot.name}: an uncounted header must have a fixed size") from None
        out.append((rule, size))
    return out


# ---------------------------------------------------------------------------------------------
# The whole dissector


_PRELUDE = r"""-- MSMQ ([MS-MQMQ] 2.2.19-2.2.20, [MS-MQQB] 2.2) dissector for Wireshark.
-- Generated by `python -m packets.dissector` from the msmq-harness construct definitions:
-- do not edit; regenerate.
--   wireshark -X lua_script:msmq.lua capture.pcap
--   tshark -X lua_script:msmq.lua -r capture.pcap -V -Y msmq

local band, bor, bxor, lshift, rshift
if bit32 then
  band, bor, bxor, lshift, rshift = bit32.band, bit32.bor, bit32.bxor, bit32.lshift, bit32.rshift
else -- Lua 5.3+: native integer operators (loaded as text so Lua 5.2 still parses this file)
  band, bor, bxor, lshift, rshift = load([[return
    function(a, b) return a & b end, function(a, b) return a | b end, function(a, b) return a ~ b end,
    function(a, b) return (a << b) & 0xFFFFFFFF end, function(a, b) return a >> b end]])()
end

local msmq = Proto("msmq", "Microsoft Message Queuing (MSMQ)")
local F = {}
"""

_HELPERS = r"""
local function truthy(v) return v ~= nil and v ~= false and v ~= 0 end

-- A decoding error: the field path, its byte offset in the packet, the reason (as PacketError).
local function fail(path, offset, reason)
  error({msmq = true, path = path, offset = offset, reason = reason}, 0)
end

local function take(tvb, off, n, path)
  if n < 0 then fail(path, off, "negative length " .. n) end
  local left = tvb:len() - off
  if n > left then fail(path, off, "needs " .. n .. " bytes, only " .. math.max(left, 0) .. " remain") end
  return tvb:range(off, n)
end

-- UTF-16LE text without its terminating NUL.
local function utf16(range, n)
  if n == 0 then return "" end
  return range:le_ustring()
end

-- Offset after the NUL code unit that ends the UTF-16LE string at off.
local function utf16_end(tvb, off, path)
  local p, len = off, tvb:len()
  while p + 2 <= len do
    if tvb:range(p, 2):le_uint() == 0 then return p + 2 end
    p = p + 2
  end
  fail(path, off, "UTF-16 string without a terminating NUL")
end

local ef_malformed = ProtoExpert.new("msmq.malformed", "Malformed MSMQ packet", expert.group.MALFORMED,
  expert.severity.ERROR)
local ef_trailing = ProtoExpert.new("msmq.trailing", "Bytes after the last header", expert.group.MALFORMED,
  expert.severity.WARN)
msmq.experts = {ef_malformed, ef_trailing}
"""


_IDENTIFY_LUA = Template("""
local function is_order_queue(user)
  local dq = band(rshift(user.Flags, $dq_shift), 0x$dq_mask)
  local queue = user.DestinationQueue
  if queue == nil then return false end
  if dq == 0x3 then return queue.PrivateQueueIdentifier == $order_queue_id end
  if dq == 0x7 and type(queue.DirectFormatName) == "string" then
    local parts = {}
    for part in (queue.DirectFormatName:gsub("/", "\\\\") .. "\\\\"):gmatch("(.-)\\\\") do parts[#parts + 1] = part end
    local head = (parts[1] or ""):upper()
    return #parts == 3 and parts[2]:upper() == "PRIVATE$$" and parts[3]:lower() == $order_queue_name
      and (head:sub(1, 4) == "TCP:" or head:sub(1, 4) == "SPX:")
  end
  return false
end

local function identify(h)
  local bflags = h.BaseHeader.Flags
  if $internal_chosen then
    local ih = h.InternalHeader
    if ih == nil then return $unknown end
    local pt = band(rshift(ih.Flags, $pt_shift), 0x$pt_mask)
${internal_kinds}    return $unknown
  end
  local user, props = h.UserHeader, h.MessagePropertiesHeader
  if user ~= nil and props ~= nil and props.Label == $order_ack_label and is_order_queue(user) then
${transactional_acks}  end
  if user == nil then return $unknown end
  return $user_message
end
""")


def _identify_lua(internal: _Rule, plans: dict[str, _LayoutPlan]) -> str:
    """[MS-MQQB] 3.1.5.1.1 Identifying Packet Type, from the table ``packets.session.identify``
    reads (``INTERNAL_KINDS``, ``TRANSACTIONAL_ACKS``)."""
    pt = session.InternalHeaderFlags._known_["PT"]
    dq = plans["user"].first_cls._known_["DQ"]
    kinds = _Emitter()
    for entry in session.INTERNAL_KINDS:
        cond = f"pt == {entry.pt}"
        if entry.base_flag is not None:
            shift, width = base.BaseHeaderFlags._known_[entry.base_flag]
            mask = (1 << width) - 1
            cond += f" and band(rshift(bflags, {shift}), {mask}) == {mask}"
        kinds.add(2, f"if {cond} then return {_q(entry.kind)} end")
    acks = _Emitter()
    for ack in session.TRANSACTIONAL_ACKS:
        lowest, highest = ack.classes
        if lowest == highest:
            cond = f"props.MessageClass == {lowest}"
        else:
            cond = f"props.MessageClass >= {lowest}"
            if highest is not None:
                cond += f" and props.MessageClass <= {highest}"
        acks.add(2, f"if {cond} then return {_q(ack.kind)} end")
    return _IDENTIFY_LUA.substitute(
        dq_shift=dq[0],
        dq_mask=f"{(1 << dq[1]) - 1:X}",
        order_queue_id=session.ORDER_QUEUE_PRIVATE_ID,
        order_queue_name=_q(session.ORDER_QUEUE_NAME),
        internal_chosen=internal.lua({"key": "bflags"}),
        pt_shift=pt[0],
        pt_mask=f"{(1 << pt[1]) - 1:X}",
        internal_kinds="".join(line + "\n" for line in kinds.lines),
        order_ack_label=_q(session.ORDER_ACK_LABEL),
        transactional_acks="".join(line + "\n" for line in acks.lines),
        unknown=_q(PacketKind.Unknown),
        user_message=_q(PacketKind.UserMessage),
    )


def _walk_lua(em: _Emitter, plan: _LayoutPlan, parsers: dict[str, str], indent: int) -> None:
    first = plan.first
    em.add(indent, f"off = {parsers[first.name]}(tvb, root, off, h)")
    words = {"key": "h.BaseHeader.Flags", "first": f"h[{_q(first.name)}].Flags"}
    for slot, rule in zip(plan.slots[1:], plan.rules, strict=True):
        cond = rule.lua(words)
        if cond == "true":
            em.add(indent, f"off = {parsers[slot.name]}(tvb, root, off, h)")
        else:
            em.add(indent, f"if {cond} then off = {parsers[slot.name]}(tvb, root, off, h) end")


def generate_lua(tcp_port: int = DEFAULT_TCP_PORT, udp_port: int = DEFAULT_UDP_PORT) -> str:
    """The Lua source of a Wireshark dissector for MSMQ on ``tcp_port`` and ``udp_port``."""
    return _generate(tcp_port, udp_port)[0]


_PDU_LENGTH_LUA = Template("""\
-- Bytes a packet occupies in the TCP stream, from its BaseHeader (packets.stream.wire_length).
local function pdu_length(tvb, pinfo, offset)
  local flags = tvb:range(offset + 2, 2):le_uint()
  local signature, size = tvb:range(offset + 4, 4):le_uint(), tvb:range(offset + 8, 4):le_uint()
  if signature ~= 0x$signature or size < $base_size or size > 0x$max_size then
    return tvb:len() - offset -- not at a packet boundary: the rest is shown undecoded
  end
${uncounted}  return size
end

""")

_DISSECT_LUA = Template("""\
local function add_error(tree, e)
  if type(e) == "table" and e.msmq then
    tree:add_proto_expert_info(ef_malformed, e.path:gsub("^msmq%.", "") .. " at byte " .. e.offset .. ": " .. e.reason)
  else
    tree:add_proto_expert_info(ef_malformed, tostring(e))
  end
end

-- One packet of the TCP stream (tvb starts at its BaseHeader).
local function dissect_pdu(tvb, pinfo, tree)
  local root = tree:add(msmq, tvb())
  local h, off = {}, 0
  local ok, err = pcall(function()
    off = $base_parser(tvb, root, off, h)
    if $internal_chosen then
${walk_internal}    else
${walk_user}    end
  end)
  local kind = $unknown
  if h.BaseHeader ~= nil then
    local ok2, k = pcall(identify, h)
    if ok2 then kind = k end
  end
  root:add(F["msmq.PacketKind"], tvb:range(0, 0), kind)
  if not ok then add_error(root, err)
  elseif off < tvb:len() then
    root:add_proto_expert_info(ef_trailing, (tvb:len() - off) .. " bytes follow the last header")
  end
${bodies}  root:append_text(", " .. kind)
  pinfo.cols.protocol = "MSMQ"
  local info = tostring(pinfo.cols.info)
  if info:find("^MSMQ ") then pinfo.cols.info:append(", " .. kind)
  else pinfo.cols.info:set("MSMQ " .. kind) end
  return tvb:len()
end

-- A Ping Packet: one UDP datagram ([MS-MQQB] 2.2.7).
local function dissect_ping(tvb, pinfo, tree)
  local root = tree:add(msmq, tvb())
  local h = {}
  local ok, res = pcall($ping_parser, tvb, root, 0, h)
  root:add(F["msmq.PacketKind"], tvb:range(0, 0), $ping_kind)
  if not ok then add_error(root, res)
  elseif res < tvb:len() then
    root:add_proto_expert_info(ef_trailing, (tvb:len() - res) .. " bytes follow the packet")
  end
  root:append_text(", $ping")
  pinfo.cols.protocol = "MSMQ"
  pinfo.cols.info:set("MSMQ $ping")
  return tvb:len()
end

local PT_UDP = 3 -- Pinfo.port_type of a UDP datagram
function msmq.dissector(tvb, pinfo, tree)
  if pinfo.port_type == PT_UDP then return dissect_ping(tvb, pinfo, tree) end
  dissect_tcp_pdus(tvb, tree, $base_size, pdu_length, dissect_pdu, true)
  return tvb:len()
end

DissectorTable.get("tcp.port"):add($tcp_port, msmq)
DissectorTable.get("udp.port"):add($udp_port, msmq)
""")

def _pdu_length_lua(plans: dict[str, _LayoutPlan], internal: _Rule) -> str:
    """Framing: PacketSize plus the headers it does not count ([MS-MQMQ] 2.2.19.1)."""
    em = _Emitter()
    for key, plan in plans.items():
        extra = _uncounted(plan)
        if not extra:
            continue
        chooses = internal.lua({"key": "flags"})
        em.add(1, f"if {'' if key == 'internal' else 'not '}{chooses} then")
        for rule, size in extra:
            em.add(2, f"if {rule.lua({'key': 'flags', 'first': 'nil'})} then size = size + {size} end")
        em.add(1, "end")
    return _PDU_LENGTH_LUA.substitute(
        signature=f"{base.SIGNATURE:08X}",
        base_size=base.BASE_HEADER_SIZE,
        max_size=f"{base.MAX_PACKET_SIZE:08X}",
        uncounted="".join(line + "\n" for line in em.lines),
    )


def _dissect_lua(
    plans: dict[str, _LayoutPlan], internal: _Rule, parsers: dict[str, str], tcp_port: int, udp_port: int
) -> str:
    """The dissector functions: a TCP packet (its headers as the layouts say, its kind, the body
    of an OrderAck or FinalAck), a Ping Packet, and their registration on the two ports."""
    walks = {}
    for key in ("internal", "user"):
        em = _Emitter()
        _walk_lua(em, plans[key], parsers, 3)
        walks[key] = "".join(line + "\n" for line in em.lines)
    bodies = _Emitter()
    for ack in session.TRANSACTIONAL_ACKS:  # the packets whose MessageBody is itself a structure
        bodies.add(1, f"if kind == {_q(ack.kind)} and h.MessagePropertiesHeader.MessageBody ~= nil")
        bodies.add(2, f"and h.MessagePropertiesHeader.MessageBody.len == {session.ACK_BODY_SIZE} then")
        bodies.add(2, "local b = h.MessagePropertiesHeader.MessageBody")
        bodies.add(2, f"local okb, errb = pcall({parsers[ack.body]}, tvb:range(b.offset, b.len):tvb(), root, 0, h)")
        bodies.add(2, "if not okb then add_error(root, errb) end")
        bodies.add(1, "end")
    return _DISSECT_LUA.substitute(
        base_parser=parsers["BaseHeader"],
        internal_chosen=internal.lua({"key": "h.BaseHeader.Flags"}),
        walk_internal=walks["internal"],
        walk_user=walks["user"],
        bodies="".join(line + "\n" for line in bodies.lines),
        ping_parser=parsers[session.PING.name],
        ping_kind=_q(PacketKind.Ping),
        unknown=_q(PacketKind.Unknown),
        ping=PacketKind.Ping,
        base_size=base.BASE_HEADER_SIZE,
        tcp_port=int(tcp_port),
        udp_port=int(udp_port),
    )


def _generate(tcp_port: int = DEFAULT_TCP_PORT, udp_port: int = DEFAULT_UDP_PORT) -> tuple[str, dict[str, LuaField]]:
    """The Lua source and the fields it registers: one parser function per header (walking its
    construct definition), the framing, the dissector functions (:data:`_DISSECT_LUA`) and the
    identification of 3.1.5.1.1 (:func:`_identify_lua`)."""
    plans = {
        "user": _plan_layout(tuple(message.USER_MESSAGE_LAYOUT), PacketKind.UserMessage),
        "internal": _plan_layout(tuple(session.INTERNAL_LAYOUT), "internal"),
    }
    internal = _internal_rule()
    em = _Emitter()
    parsers: dict[str, str] = {}
    headers: list[tuple[str, c.Construct, str]] = [("BaseHeader", base.BaseHeader, base.SECTION)]
    for plan in plans.values():
        headers += [(slot.name, slot.parser.header, slot.section) for slot in plan.slots]
    headers += [(ack.body, ack.body_parser.header, ack.body_section) for ack in session.TRANSACTIONAL_ACKS]
    headers.append((session.PING.name, session.PingPacket, session.S_PING))
    for name, header, section in headers:
        if name not in parsers:
            parsers[name] = _header_function(em, name, header, section)
    em.lines += _pdu_length_lua(plans, internal).splitlines()
    em.lines += _dissect_lua(plans, internal, parsers, tcp_port, udp_port).splitlines()

    em.field(LuaField(f"{PROTO}.PacketKind", "PacketKind", "string", blurb="MS-MQQB 3.1.5.1.1"))
    field_lines = [f"F[{_q(f.abbr)}] = {f.lua()}" for f in em.fields.values()]
    field_lines.append("do local list = {} for _, f in pairs(F) do list[#list + 1] = f end msmq.fields = list end")
    text = "\n".join([_PRELUDE, *field_lines, _HELPERS, _identify_lua(internal, plans), *em.lines]) + "\n"
    return text, em.fields


def lua_fields() -> dict[str, LuaField]:
    """Every field the generated dissector registers, by filter name."""
    return dict(_generate()[1])
