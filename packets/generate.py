"""Header parsers and builders generated from the construct definitions.

Python source is generated from the same ``Header`` definitions that render [MS-MQMQ] 2.2.19-2.2.20
and [MS-MQQB] 2.2 (there is no second field list).

Parsers: each construct piece becomes straight-line code that reads the packet's bytes at an
offset (``struct.unpack_from`` for every run of fixed-size fields, slices for the rest), keeps
every field in a local variable for the length and selector expressions that follow, and
returns one :class:`~packets.fields.Fields` per header, with the same keys and values as the
interpreted parser.  A packet's *shape* — which optional headers it carries — is decided by
the flag words of its BaseHeader and of the first header of its layout (UserHeader.Flags for a
UserMessage, InternalHeader.Flags for an internal packet).  :class:`LayoutParser` evaluates the
layout's presence rules once per pair of flag words (a bounded cache) and keeps, per shape, the
generated parsers of the headers it carries and the rules they bring.  A presence rule that
reads anything but those two flag words makes the shape uncacheable; such packets are walked
header by header, still with generated code.  Generated parsers check exactly what the pieces
need to be decoded (every read must fit the input; anything else that is off raises some
exception), never a spec rule: the caller falls back to the interpreted parsers to name the
field and its byte offset.

Builders: each piece becomes the code construct's ``_build`` runs for it (same bytes written,
same built values for the expressions that follow); a header with a piece or an expression
the generator has no rule for, or a left-out field whose default construct computes from its
context, is built by construct instead.
"""

from __future__ import annotations

import codecs
import functools
import struct
from collections.abc import Callable, Mapping
from io import BytesIO
from typing import Any, Protocol, TypeVar

import construct as c
from construct import expr as cexpr

from packets.fields import (
    GUID,
    MAX_PACKET_SIZE,
    NULL_GUID,
    Data,
    ElementList,
    Fields,
    FlagsField,
    GuidConstruct,
    HeaderParser,
    Pad,
    Utf16z,
    decode_utf16,
    encode_utf16z,
    fields_new,
    fixed_format,
    new_guid,
    set_dict,
)
from packets.layout import Slot, always, fast_form

__all__ = [
    "FieldScope",
    "GeneratedSource",
    "HeaderBuilder",
    "HeaderFunction",
    "LayoutParser",
    "NeedsContext",
    "Shape",
    "ShapeFunction",
    "ShortInput",
    "UnsupportedConstruct",
    "builder_function",
    "element_functions",
    "header_function",
    "read_utf16_terminated_at",
    "skip_utf16_terminated_at",
    "this_path",
    "unwrap",
]

# (data, offset, headers parsed before) -> (decoded header, offset after it)
HeaderFunction = Callable[[bytes, int, Mapping[str, Any]], tuple[Fields, int]]


class ShortInput(Exception):
    """A generated read that does not fit the input (or asks for a negative length)."""


class UnsupportedConstruct(Exception):
    """A construct piece the generator has no rule for (its header falls back to construct's
    own generated parser)."""


def read_utf16_terminated_at(data: bytes, pos: int) -> tuple[str, int]:
    """A UTF-16LE string up to its first NUL code unit at ``pos``: (text, offset after the NUL)."""
    at = pos
    while True:
        end = data.find(b"\0\0", at)
        if end < 0:
            raise ShortInput("UTF-16 string without a terminating NUL")
        if (end - pos) % 2 == 0:
            return decode_utf16(data[pos:end]), end + 2
        at = end + 1


def skip_utf16_terminated_at(data: bytes, pos: int) -> int:
    """The offset after the UTF-16LE string at ``pos`` and its NUL (read_utf16_terminated_at
    without the decoding: any code units decode, lone surrogates included)."""
    at = pos
    while True:
        end = data.find(b"\0\0", at)
        if end < 0:
            raise ShortInput("UTF-16 string without a terminating NUL")
        if (end - pos) % 2 == 0:
            return end + 2
        at = end + 1


ScopeT = TypeVar("ScopeT", bound="_HasParent")


class _HasParent(Protocol):
    @property
    def parent(self) -> Any: ...


def this_path(e: Any, scope: ScopeT) -> tuple[ScopeT, list[str]] | None:
    """A construct ``this.a._.b.c`` path resolved against nested scopes (each ``_`` one scope up):
    (the scope that holds the first name, the names), or None when the path does not start at
    ``this`` or climbs past the outermost scope."""
    chain: list[str] = []
    p: Any = e
    while p._Path__parent is not None:
        chain.append(p._Path__field)
        p = p._Path__parent
    if p._Path__name != "this":
        return None
    chain.reverse()
    s: ScopeT | None = scope
    while chain and chain[0] == "_" and s is not None:
        chain.pop(0)
        s = s.parent
    if s is None or not chain:
        return None
    return s, chain


class FieldScope:
    """The fields of one struct being generated: spec name -> expression holding its value.

    The root scope is the packet: any name there reads ``headers[name]``, the headers parsed
    before (construct's context of a top-level header holds them the same way)."""

    __slots__ = ("fields", "parent")

    def __init__(self, parent: FieldScope | None) -> None:
        self.parent = parent
        self.fields: dict[str, str] = {}

    def resolve(self, name: str) -> str:
        if name in self.fields:
            return self.fields[name]
        if self.parent is None and not name.startswith("_"):
            return f"headers[{name!r}]"
        raise UnsupportedConstruct(f"field {name!r}")


def unwrap(sc: c.Construct) -> c.Construct:
    """The construct under a field's name and default (``Renamed``, ``Default``)."""
    while isinstance(sc, c.Renamed | c.Default):
        sc = sc.subcon
    return sc


class GeneratedSource:
    """Generated lines and the objects they name."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = {
            "ShortInput": ShortInput,
            "Fields": Fields,
            "fields_new": fields_new,
            "set_dict": set_dict,
            "new_guid": new_guid,
            "decode_utf16": decode_utf16,
            "_utf_16_le_decode": codecs.utf_16_le_decode,
            "read_utf16_terminated_at": read_utf16_terminated_at,
            "skip_utf16_terminated_at": skip_utf16_terminated_at,
            "ListContainer": c.ListContainer,
            "ExplicitError": c.ExplicitError,
        }
        self._ids = 0
        self._consts: dict[int, str] = {}
        # A scanner: the same reads and checks, no values built (structs, strings, wrappers).
        self.skip = False

    def var(self, hint: str) -> str:
        self._ids += 1
        return f"{hint}_{self._ids}"

    def const(self, obj: Any, hint: str) -> str:
        key = id(obj)
        if key not in self._consts:
            name = self.var(hint)
            self.namespace[name] = obj
            self._consts[key] = name
        return self._consts[key]

    def add(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    # -- expressions -----------------------------------------------------------------------

    def expr(self, e: Any, scope: FieldScope) -> str:
        if isinstance(e, bool) or not isinstance(e, int | cexpr.ExprMixin):
            raise UnsupportedConstruct(f"expression {e!r}")
        if isinstance(e, int):
            return repr(e)
        if isinstance(e, cexpr.BinExpr):
            return f"({self.expr(e.lhs, scope)} {cexpr.opnames[e.op]} {self.expr(e.rhs, scope)})"
        if isinstance(e, cexpr.UniExpr):
            return f"({cexpr.opnames[e.op]} {self.expr(e.operand, scope)})"
        if isinstance(e, cexpr.Path):
            found = this_path(e, scope)
            if found is None:
                raise UnsupportedConstruct(f"expression {e!r}")
            s, chain = found
            return s.resolve(chain[0]) + "".join(f"[{k!r}]" for k in chain[1:])
        raise UnsupportedConstruct(f"expression {e!r}")

    # -- constructs ------------------------------------------------------------------------

    def take(self, length: str, indent: int) -> tuple[str, str]:
        """Lines that reserve ``length`` bytes at pos: returns (start, end) variable names."""
        n, start = self.var("n"), self.var("at")
        self.add(indent, f"{n} = {length}")
        self.add(indent, f"{start} = pos")
        self.add(indent, "pos += " + n)
        self.add(indent, f"if {n} < 0 or pos > size: raise ShortInput({n})")
        return start, "pos"

    def fixed(self, run: list[tuple[str, str, str]], indent: int) -> None:
        """One unpack_from for a run of fixed-size fields: (target, struct format, wrapper)."""
        fmt = "<" + "".join(f for _, f, _ in run)
        s = self.const(struct.Struct(fmt), "fused")
        targets = ", ".join(t for t, _, _ in run)
        self.add(indent, f"{targets}, = {s}.unpack_from(data, pos)")
        self.add(indent, f"pos += {struct.calcsize(fmt)}")
        for target, _, wrap in run:
            if wrap and not self.skip:
                self.add(indent, f"{target} = {wrap}({target})")

    def bound(self, scope: FieldScope, name: str, value: str) -> None:
        """Called once a struct's field ``name`` has its variable ``value`` (packets.fused pins
        the flag words there)."""

    def wrapper(self, sc: c.Construct) -> str:
        sc = unwrap(sc)
        if isinstance(sc, FlagsField):
            return self.const(sc.flags_cls, sc.flags_cls.__name__)
        if isinstance(sc, GuidConstruct):
            return "new_guid"
        return ""

    def struct_(self, sc: c.Struct, scope: FieldScope, target: str, indent: int) -> None:
        inner = FieldScope(scope)
        stored: list[tuple[str, str]] = []
        run: list[tuple[str, str, str]] = []
        for sub in sc.subcons:
            fixed = fixed_format(sub) if sub.name else None
            value = self.var("f")
            if fixed is not None:
                run.append((value, fixed[0], self.wrapper(sub)))
            else:
                if run:
                    self.fixed(run, indent)
                    run = []
                self.construct(sub, inner, value, indent)
            if sub.name:
                inner.fields[sub.name] = value
                stored.append((sub.name, value))
                self.bound(inner, sub.name, value)
        if run:
            self.fixed(run, indent)
        if self.skip:
            return
        self.add(indent, f"{target} = fields_new(Fields)")  # bound to itself when first read
        for name, value in stored:
            self.add(indent, f"{target}[{name!r}] = {value}")

    def construct(self, sc: c.Construct, scope: FieldScope, target: str, indent: int) -> None:
        """Lines parsing the piece ``sc`` at ``pos`` into ``target`` (scanning it when ``skip``)."""
        sc = unwrap(sc)
        fixed = fixed_format(sc)
        if fixed is not None:
            self.fixed([(target, fixed[0], self.wrapper(sc))], indent)
        elif isinstance(sc, c.Struct):
            self.struct_(sc, scope, target, indent)
        elif isinstance(sc, Data | Pad | Utf16z):
            self.counted_bytes(sc, scope, target, indent)
        elif type(sc).__name__ == "Utf16Terminated":
            self.utf16_terminated(target, indent)
        elif isinstance(sc, ElementList) and not self.skip:
            count = self.expr(sc.count, scope)
            self.add(indent, f"{target}, pos = {self.const(sc, 'elements')}.parse_at(data, pos, {count})")
        elif isinstance(sc, c.IfThenElse):
            self.add(indent, f"if {self.expr(sc.condfunc, scope)}:")
            self.construct(sc.thensubcon, scope, target, indent + 1)
            self.add(indent, "else:")
            self.construct(sc.elsesubcon, scope, target, indent + 1)
        elif isinstance(sc, c.Switch):
            self.switch(sc, scope, target, indent)
        elif sc is c.Pass:
            self.add(indent, f"{target} = None")
        elif sc is c.Tell:
            self.add(indent, f"{target} = pos")
        elif sc is c.Error:
            self.add(indent, "raise ExplicitError('parsing hit an Error construct')")
        elif isinstance(sc, c.Array) and not sc.discard and not self.skip:
            self.array(sc, scope, target, indent)
        else:
            raise UnsupportedConstruct(type(sc).__name__)

    def counted_bytes(self, sc: Data | Pad | Utf16z, scope: FieldScope, target: str, indent: int) -> None:
        """A piece of as many bytes as its length expression says: raw bytes, or a UTF-16 string
        whose terminating NUL (if any) is dropped."""
        start, end = self.take(self.expr(sc.length, scope), indent)
        raw = f"data[{start}:{end}]"
        if self.skip:
            if isinstance(sc, Utf16z):  # decoding rejects an odd byte count
                self.add(indent, f"if ({end} - {start}) % 2: raise ShortInput('odd UTF-16 length')")
        elif isinstance(sc, Utf16z):  # decode_utf16, inline
            self.add(indent, f"{target} = _utf_16_le_decode({raw}, 'surrogatepass', True)[0]")
            self.add(indent, f"if {target}[-1:] == '\\0': {target} = {target}[:-1]")
        else:
            self.add(indent, f"{target} = {raw}")

    def utf16_terminated(self, target: str, indent: int) -> None:
        """A UTF-16 string up to its first NUL code unit (no length field)."""
        if self.skip:  # skip_utf16_terminated_at, inline
            end = self.var("end")
            self.add(indent, f"{end} = data.find(b'\\0\\0', pos)")
            self.add(indent, f"while {end} >= 0 and ({end} - pos) % 2: {end} = data.find(b'\\0\\0', {end} + 1)")
            self.add(indent, f"if {end} < 0: raise ShortInput('UTF-16 string without a terminating NUL')")
            self.add(indent, f"pos = {end} + 2")
        else:
            self.add(indent, f"{target}, pos = read_utf16_terminated_at(data, pos)")

    def switch(self, sc: c.Switch, scope: FieldScope, target: str, indent: int) -> None:
        """A piece selected by a key expression (an optional header's presence, a selector)."""
        key = self.var("key")
        self.add(indent, f"{key} = {self.expr(sc.keyfunc, scope)}")
        keyword = "if"
        if sc.default is c.Pass:  # the common "absent" case first, with one set lookup
            self.add(indent, f"if {key} not in {self.const(frozenset(sc.cases), 'cases')}:")
            self.add(indent + 1, f"{target} = None")
            keyword = "elif"
        for case, sub in sc.cases.items():
            if isinstance(case, bool) or not isinstance(case, int):
                raise UnsupportedConstruct(f"switch key {case!r}")
            self.add(indent, f"{keyword} {key} == {case!r}:")
            self.construct(sub, scope, target, indent + 1)
            keyword = "elif"
        self.add(indent, "else:")
        self.construct(sc.default, scope, target, indent + 1)

    def array(self, sc: c.Array, scope: FieldScope, target: str, indent: int) -> None:
        """``count`` pieces of one type, decoded into a list."""
        count, item = self.var("count"), self.var("item")
        self.add(indent, f"{count} = {self.expr(sc.count, scope)}")
        self.add(indent, f"if {count} < 0: raise ShortInput({count})")
        self.add(indent, f"{target} = ListContainer()")
        self.add(indent, f"for _ in range({count}):")
        self.construct(sc.subcon, scope, item, indent + 1)
        self.add(indent + 1, f"{target}.append({item})")

    def compile(self, label: str) -> dict[str, Any]:
        source = "\n".join(self.lines) + "\n"
        exec(compile(source, f"<generated {label}>", "exec"), self.namespace)
        return self.namespace


def _construct_fallback(parser: HeaderParser) -> HeaderFunction:
    """construct's own generated parser over a stream, for a header the generator cannot render."""
    compiled = parser.compiled

    def parse(data: bytes, pos: int, headers: Mapping[str, Any]) -> tuple[Fields, int]:
        io = BytesIO(data)
        io.seek(pos)
        context: dict[str, Any] = {"_params": {}}
        context.update(headers)
        value = compiled(io, context)
        return value, io.tell()

    return parse


def _emit_header(src: GeneratedSource, parser: HeaderParser, target: str, indent: int) -> bool:
    """Lines parsing ``parser``'s header into ``target``; False when a piece is unsupported (the
    lines are then not emitted)."""
    root = FieldScope(None)
    mark, ids = len(src.lines), src._ids
    try:
        src.construct(parser.header, root, target, indent)
    except UnsupportedConstruct:
        del src.lines[mark:]
        src._ids = ids
        return False
    return True


@functools.cache
def header_function(parser: HeaderParser) -> HeaderFunction:
    """A generated ``(data, offset, headers) -> (header, offset after)`` for one header."""
    src = GeneratedSource()
    src.add(0, "def parse(data, pos, headers):")
    src.add(1, "size = len(data)")
    if not _emit_header(src, parser, "result", 1):
        return _construct_fallback(parser)
    src.add(1, "return result, pos")
    fn: HeaderFunction = src.compile(parser.name)["parse"]
    return fn


_MAX_SHAPES = 1024
_UNKNOWN: Any = object()

# (data, offset, headers) -> (offset after the headers, bytes of the counted ones); fills headers
ShapeFunction = Callable[[bytes, int, Fields], tuple[int, int]]


class Shape:
    """The headers a packet carries after its first one, for one pair of flag words.

    ``parse`` decodes all of them in order into the packet's headers with their generated
    parsers (one per header type, so the code generated stays bounded whatever the flags);
    ``slots`` lists them with the first; ``checks`` are every rule of those slots (in slot
    order) and ``hold(headers)`` is true when all their fast forms are."""

    __slots__ = ("checks", "hold", "parse", "slots")

    def __init__(self, first: Slot, rest: tuple[Slot, ...]) -> None:
        self.slots = (first, *rest)
        self.checks = tuple(check for slot in self.slots for check in slot.checks)
        self.parse = _chained(rest)
        self.hold = _all_hold(tuple(fast_form(check) for check in self.checks))


def _all_hold(forms: tuple[Callable[[Any], bool], ...]) -> Callable[[Any], bool]:
    """One generated ``hold(headers)``: the fast forms, in order, joined by ``and``."""
    src = GeneratedSource()
    names = [src.const(form, "holds") for form in forms]
    src.add(0, "def hold(headers):")
    src.add(1, "return " + (" and ".join(f"{name}(headers)" for name in names) or "True"))
    hold: Callable[[Any], bool] = src.compile("rules")["hold"]
    return hold


def _chained(slots: tuple[Slot, ...]) -> ShapeFunction:
    """A generated function calling the generated parsers of ``slots`` in order (a few lines
    per header: the header code itself is generated once per header type)."""
    src = GeneratedSource()
    src.add(0, "def parse(data, pos, headers):")
    src.add(1, "counted = 0")
    for slot in slots:
        fn = src.const(header_function(slot.parser), "parse_" + slot.name)
        if slot.counted:
            src.add(1, "start = pos")
        src.add(1, f"headers[{slot.name!r}], pos = {fn}(data, pos, headers)")
        if slot.counted:
            src.add(1, "counted += pos - start")
    src.add(1, "return pos, counted")
    parse: ShapeFunction = src.compile("shape " + " ".join(slot.name for slot in slots))["parse"]
    return parse


class LayoutParser:
    """Parses the headers of one layout (the slots after a BaseHeader) with generated code."""

    def __init__(self, slots: tuple[Slot, ...], key_header: str = "BaseHeader") -> None:
        self.slots = slots
        self.key_header = key_header
        self.first = slots[0] if slots and slots[0].present is always else None
        self.first_function = header_function(self.first.parser) if self.first is not None else None
        # (BaseHeader.Flags, first header's Flags) as ints -> shape; bounded (cleared when full)
        self._shapes: dict[int, Shape | None] = {}

    def shape(self, key_flags: Any, first_flags: Any) -> Shape | None:
        key = int(key_flags) << 32 | int(first_flags)
        try:
            return self._shapes[key]
        except KeyError:
            pass
        if len(self._shapes) >= _MAX_SHAPES:
            self._shapes.clear()
        shape = self._shapes[key] = self._shape(key_flags, first_flags)
        return shape

    def _shape(self, key_flags: Any, first_flags: Any) -> Shape | None:
        """The slots after the first that a packet with these flag words carries; None when a
        presence rule reads more than the two flag words."""
        assert self.first is not None
        probe = Fields()
        probe[self.key_header] = Fields(Flags=key_flags)
        probe[self.first.name] = Fields(Flags=first_flags)
        try:
            present = tuple(slot for slot in self.slots[1:] if slot.present(probe))
        except Exception:
            return None
        return _shape_of(self.first, present)

    def parse(self, data: bytes, pos: int, headers: Fields) -> tuple[tuple[Slot, ...], int, int, Shape | None]:
        """Parse the layout's headers into ``headers`` from ``pos``.

        Returns the slots present, the offset after the last header, the bytes of the counted
        headers and the shape (None when the packet was walked header by header).  Raises
        anything on input that does not decode.
        """
        first = self.first
        if first is not None:
            value, after = self.first_function(data, pos, headers)  # type: ignore[misc]
            headers[first.name] = value
            flags = value["Flags"]
            key = int(headers[self.key_header]["Flags"]) << 32 | int(flags)
            shape = self._shapes.get(key, _UNKNOWN)
            if shape is _UNKNOWN:
                shape = self.shape(headers[self.key_header]["Flags"], flags)
            if shape is not None:
                end, counted = shape.parse(data, after, headers)
                return shape.slots, end, counted + (after - pos if first.counted else 0), shape
        slots = []
        counted = 0
        for slot in self.slots:
            if slot.present(headers):
                value, after = header_function(slot.parser)(data, pos, headers)
                headers[slot.name] = value
                slots.append(slot)
                if slot.counted:
                    counted += after - pos
                pos = after
        return tuple(slots), pos, counted, None


@functools.cache
def _shape_of(first: Slot, rest: tuple[Slot, ...]) -> Shape:
    return Shape(first, rest)


# ---------------------------------------------------------------------------------------------
# Builders


class NeedsContext(Exception):
    """A generated builder met a value it leaves to construct's own builder (a left-out field
    whose default is computed from the construct context)."""


def _pack_guid(value: Any) -> GUID:
    """GUID built as ``Guid`` builds it: a GUID of 16 bytes or an error."""
    guid = GUID(value if value is not None else NULL_GUID)
    if len(guid) != 16:
        raise ShortInput(len(guid))
    return guid


class _BuildSource(GeneratedSource):
    """Generated lines of one header builder: ``build(obj) -> bytes``.

    Mirrors construct's ``_build`` piece by piece (Struct, Default, FormatField, the pieces of
    packets.fields, If/IfThenElse, Switch, Tell, Pass): the same values are written and the same
    built values are what later length and selector expressions read.  Anything else — a
    piece with no rule here, an expression naming another header — makes the header
    unsupported (construct builds it); a computed default met at run time raises
    :class:`NeedsContext`.
    """

    def __init__(self, track_pos: bool = True) -> None:
        super().__init__()
        self.track_pos = track_pos  # only a Tell reads the offset
        self.namespace.update(
            {
                "NeedsContext": NeedsContext,
                "ShortInput": ShortInput,
                "GUID": GUID,
                "_pack_guid": _pack_guid,
                "encode_utf16z": encode_utf16z,
            }
        )

    def advance(self, indent: int, length: str) -> None:
        if self.track_pos:
            self.add(indent, f"pos += {length}")

    def default(self, sc: c.Construct, value: str, indent: int, context: str | None = None) -> c.Construct:
        """Lines replacing a None ``value`` by the Default's value; returns the inner piece.

        ``context`` is an expression for what construct's context holds at this field (the
        header's given fields, those built before it, this one None): a computed default marked
        ``reads_own_fields`` is called with it; any other computed default raises NeedsContext."""
        while isinstance(sc, c.Renamed | c.Default):
            if isinstance(sc, c.Default):
                dflt = sc.value
                if callable(dflt) and getattr(dflt, "reads_own_fields", False) and context is not None:
                    self.add(indent, f"if {value} is None: {value} = {self.const(dflt, 'computed')}({context})")
                elif callable(dflt) and not isinstance(dflt, cexpr.ExprMixin):
                    self.add(indent, f"if {value} is None: raise NeedsContext({sc.name!r})")
                elif isinstance(dflt, int | bytes) and not isinstance(dflt, bool):
                    self.add(indent, f"if {value} is None: {value} = {self.const(dflt, 'dflt')}")
                else:
                    raise UnsupportedConstruct(f"default {dflt!r}")
            sc = sc.subcon
        return sc

    def fixed_build(self, sc: c.Construct) -> str | None:
        """struct format of a piece built by packing its value: FormatField, flags, GUID."""
        if isinstance(sc, c.FormatField) and sc.fmtstr[0] == "<":
            return sc.fmtstr[1:]
        if isinstance(sc, FlagsField):
            return sc.fmt.format[1:]
        if isinstance(sc, GuidConstruct):
            return "16s"
        return None

    def convert(self, sc: c.Construct, value: str, indent: int) -> None:
        """Lines turning ``value`` into what the fixed piece writes and returns."""
        if isinstance(sc, FlagsField):
            cls = self.const(sc.flags_cls, sc.flags_cls.__name__)
            self.add(indent, f"if type({value}) is not {cls}: {value} = {cls}.make(0 if {value} is None else {value})")
        elif isinstance(sc, GuidConstruct):
            self.add(indent, f"if type({value}) is not GUID or len({value}) != 16: {value} = _pack_guid({value})")

    def flush(self, run: list[tuple[str, str]], indent: int) -> None:
        if not run:
            return
        fmt = "<" + "".join(f for _, f in run)
        s = self.const(struct.Struct(fmt), "fused")
        self.add(indent, f"parts.append({s}.pack({', '.join(v for v, _ in run)}))")
        self.advance(indent, str(struct.calcsize(fmt)))
        run.clear()

    def build_struct(self, sc: c.Struct, obj: str, scope: FieldScope, built: str, indent: int) -> None:
        inner = FieldScope(scope)
        run: list[tuple[str, str]] = []
        names: list[tuple[str, str]] = []
        for sub in sc.subcons:
            if not sub.name:
                raise UnsupportedConstruct("a nameless piece")
            value = self.var("v")
            getter = f"{obj}.get({sub.name!r})" if sub.flagbuildnone else f"{obj}[{sub.name!r}]"
            self.add(indent, f"{value} = {getter}")
            context = "{" + ", ".join([f"**{obj}", *(f"{n!r}: {v}" for n, v in names), f"{sub.name!r}: None"]) + "}"
            piece = self.default(sub, value, indent, context)
            fmt = self.fixed_build(piece)
            if fmt is not None:
                self.convert(piece, value, indent)
                run.append((value, fmt))
            else:
                self.flush(run, indent)
                self.build_piece(piece, inner, value, indent)
            inner.fields[sub.name] = value
            names.append((sub.name, value))
        self.flush(run, indent)
        if built:
            items = ", ".join(f"{name!r}: {value}" for name, value in names)
            self.add(indent, f"{built} = {{**{obj}, {items}}}")

    def build_piece(self, sc: c.Construct, scope: FieldScope, value: str, indent: int) -> None:
        """Lines building ``value`` (a variable holding the piece's object) with ``sc``; the
        variable then holds the built value."""
        sc = self.default(sc, value, indent)
        fmt = self.fixed_build(sc)
        if fmt is not None:
            self.convert(sc, value, indent)
            self.flush([(value, fmt)], indent)
        elif isinstance(sc, c.Struct):
            obj = self.var("obj")
            self.add(indent, f"{obj} = {{}} if {value} is None else {value}")
            self.build_struct(sc, obj, scope, value, indent)
        elif isinstance(sc, Data):
            self.build_data(value, indent)
        elif isinstance(sc, Pad):
            self.build_pad(sc, scope, value, indent)
        elif isinstance(sc, Utf16z) or type(sc).__name__ == "Utf16Terminated":
            self.build_utf16(value, indent)
        elif isinstance(sc, c.IfThenElse):
            self.build_if_then_else(sc, scope, value, indent)
        elif isinstance(sc, c.Switch):
            self.build_switch(sc, scope, value, indent)
        elif isinstance(sc, ElementList):
            self.build_elements(sc, scope, value, indent)
        elif sc is c.Pass:
            pass
        elif sc is c.Tell:
            self.add(indent, f"{value} = pos")
        elif sc is c.Error:
            self.add(indent, "raise ExplicitError('building hit an Error construct')")
        else:
            raise UnsupportedConstruct(type(sc).__name__)

    def build_data(self, value: str, indent: int) -> None:
        """Raw bytes, written as given (an integer past what a packet carries: construct's
        builder refuses it)."""
        self.add(indent, f"if isinstance({value}, int) and {value} > {MAX_PACKET_SIZE}: raise ShortInput({value})")
        self.add(indent, f"{value} = bytes({value} or b'')")
        self.add(indent, f"parts.append({value})")
        self.advance(indent, f"len({value})")

    def build_pad(self, sc: Pad, scope: FieldScope, value: str, indent: int) -> None:
        """Padding of as many bytes as its length expression says: the given bytes when they
        are that many, zeros otherwise."""
        n = self.var("n")
        self.add(indent, f"{n} = {self.expr(sc.length, scope)}")
        # past what a packet carries: construct's builder refuses it, naming the length field
        self.add(indent, f"if {n} < 0 or {n} > {MAX_PACKET_SIZE}: raise ShortInput({n})")
        self.add(
            indent,
            f"{value} = bytes({value}) if isinstance({value}, (bytes, bytearray)) and len({value}) == {n}"
            f" else b'\\0' * {n}",
        )
        self.add(indent, f"parts.append({value})")
        self.advance(indent, n)

    def build_utf16(self, value: str, indent: int) -> None:
        """A UTF-16LE string and its terminating NUL."""
        raw = self.var("raw")
        self.add(indent, f"{raw} = encode_utf16z({value} or '')")
        self.add(indent, f"{value} = str({value} or '')")
        self.add(indent, f"parts.append({raw})")
        self.advance(indent, f"len({raw})")

    def build_if_then_else(self, sc: c.IfThenElse, scope: FieldScope, value: str, indent: int) -> None:
        """A piece present (or of one form or the other) as its condition says."""
        self.add(indent, f"if {self.expr(sc.condfunc, scope)}:")
        self.build_piece(sc.thensubcon, scope, value, indent + 1)
        self.add(indent + 1, "pass")
        self.add(indent, "else:")
        self.build_piece(sc.elsesubcon, scope, value, indent + 1)
        self.add(indent + 1, "pass")

    def build_switch(self, sc: c.Switch, scope: FieldScope, value: str, indent: int) -> None:
        """A piece selected by a key expression."""
        key = self.var("key")
        self.add(indent, f"{key} = {self.expr(sc.keyfunc, scope)}")
        keyword = "if"
        for case, sub in sc.cases.items():
            if isinstance(case, bool) or not isinstance(case, int):
                raise UnsupportedConstruct(f"switch key {case!r}")
            self.add(indent, f"{keyword} {key} == {case!r}:")
            self.build_piece(sub, scope, value, indent + 1)
            self.add(indent + 1, "pass")
            keyword = "elif"
        self.add(indent, "else:")
        self.build_piece(sc.default, scope, value, indent + 1)
        self.add(indent + 1, "pass")

    def build_elements(self, sc: ElementList, scope: FieldScope, value: str, indent: int) -> None:
        """The elements of an ElementList, built at the current offset.  The built value stays
        the given list: no expression reads into the elements."""
        raw = self.var("raw")
        count = self.expr(sc.count, scope)
        self.add(indent, f"{raw} = {self.const(sc, 'elements')}.encode({value}, pos, {count})")
        self.add(indent, f"parts.append({raw})")
        self.advance(indent, f"len({raw})")


class _BuildScope(FieldScope):
    """A builder's scope: only the fields built before, in this header (a name from another
    header would be construct's context, which the builder has no copy of)."""

    def resolve(self, name: str) -> str:
        if name in self.fields:
            return self.fields[name]
        raise UnsupportedConstruct(f"field {name!r}")


HeaderBuilder = Callable[[Mapping[str, Any]], bytes]


def _has_tell(sc: Any, seen: set[int] | None = None) -> bool:
    """Whether a Tell is anywhere inside ``sc`` (the builder then keeps the offset)."""
    seen = set() if seen is None else seen
    if id(sc) in seen:
        return False
    seen.add(id(sc))
    if sc is c.Tell:
        return True
    subs = [getattr(sc, "subcon", None), getattr(sc, "thensubcon", None), getattr(sc, "elsesubcon", None)]
    subs += list(getattr(sc, "subcons", ()) or ())
    cases = getattr(sc, "cases", None)
    if isinstance(cases, dict):
        subs += list(cases.values())
    subs.append(getattr(sc, "default", None) if isinstance(sc, c.Switch) else None)
    return any(_has_tell(sub, seen) for sub in subs if isinstance(sub, c.Construct))


@functools.cache
def builder_function(parser: HeaderParser) -> HeaderBuilder | None:
    """A generated ``build(obj) -> bytes`` for one header, or None when a piece of it has no
    rule here (construct builds such a header).  The generated builder raises on anything it
    does not build exactly as construct would; the caller then lets construct build it."""
    fn: HeaderBuilder | None = _struct_builder(parser.header, parser.name, at_offset=False)
    return fn


def _struct_builder(sc: c.Construct, label: str, at_offset: bool) -> Callable[..., bytes] | None:
    """``build(obj) -> bytes``, or ``build(obj, pos) -> bytes`` writing at offset ``pos`` of
    the header being built (for the elements of an ElementList); None when unsupported."""
    src = _BuildSource(track_pos=at_offset or _has_tell(sc))
    src.add(0, "def build(obj, pos):" if at_offset else "def build(obj):")
    src.add(1, "parts = []")
    if not at_offset:
        src.add(1, "pos = 0")
    src.add(1, "v_0 = obj")
    try:
        header = unwrap(sc)
        if not isinstance(header, c.Struct):
            raise UnsupportedConstruct(type(header).__name__)
        src.add(1, "if v_0 is None: v_0 = {}")
        src.build_struct(header, "v_0", _BuildScope(None), "", 1)
    except UnsupportedConstruct:
        return None
    src.add(1, "return b''.join(parts)")
    fn: Callable[..., bytes] = src.compile(label + " builder")["build"]
    return fn


# ---------------------------------------------------------------------------------------------
# Elements of an ElementList

ElementScanner = Callable[[bytes, int, int, Any], int]
ElementDecoder = Callable[[bytes, int], tuple[Any, int]]
ElementBuilder = Callable[[Any, int], bytes]


def element_functions(
    sc: c.Construct, name: str
) -> tuple[ElementScanner, ElementDecoder, ElementBuilder | None]:
    """Generated functions for the elements of an :class:`~packets.fields.ElementList`:

    - ``scan(data, pos, count, offsets) -> end``: walks ``count`` elements from ``pos``,
      appending where each starts to ``offsets``, with the reads and checks of the element's
      parser and none of its values built; raises on input the parser would reject (the
      failing element is the last offset appended).  An element that occupies no bytes is an
      error, so the offsets never outnumber the input's bytes.
    - ``decode(data, pos) -> (element, end)``: the element's generated parser.
    - ``build(obj, pos) -> bytes`` (or None: construct builds the elements).
    """
    src = GeneratedSource()
    src.add(0, "def decode(data, pos):")
    src.add(1, "size = len(data)")
    src.add(1, "headers = {}")
    src.construct(sc, FieldScope(None), "result", 1)
    src.add(1, "return result, pos")
    decode: ElementDecoder = src.compile(name)["decode"]

    scan_src = GeneratedSource()
    scan_src.skip = True
    scan_src.add(0, "def scan(data, pos, count, offsets):")
    scan_src.add(1, "size = len(data)")
    scan_src.add(1, "headers = {}")
    scan_src.add(1, "append = offsets.append")
    scan_src.add(1, "for _ in range(count):")
    scan_src.add(2, "append(pos)")
    scan_src.add(2, "start = pos")
    try:
        scan_src.construct(sc, FieldScope(None), "element", 2)
        scan_src.add(2, "if pos <= start: raise ShortInput('an element of no bytes')")
        scan_src.add(1, "return pos")
        scan: ElementScanner = scan_src.compile(name + " scanner")["scan"]
    except UnsupportedConstruct:
        scan = _decoding_scanner(decode)
    return scan, decode, _struct_builder(sc, name, at_offset=True)


def _decoding_scanner(decode: ElementDecoder) -> ElementScanner:
    """A scanner that decodes each element (for an element the scanner generator cannot render)."""

    def scan(data: bytes, pos: int, count: int, offsets: Any) -> int:
        for _ in range(count):
            offsets.append(pos)
            _, end = decode(data, pos)
            if end <= pos:
                raise ShortInput("an element of no bytes")
            pos = end
        return pos

    return scan
