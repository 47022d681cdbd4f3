"""Shared construct pieces for the MSMQ wire formats.

Renders the common packet data types of [MS-MQMQ] 2.2.18.1 (GUID in the [MS-DTYP] 2.3.4 packet
representation, little-endian integers, UTF-16LE strings, 4-byte alignment) and the flag words
of every header, whose bit 0 is the least-significant bit of the little-endian field.

Every piece here is a real ``construct`` class with a parser, a builder and a compiled-code
emitter, so a header written with them is both readable (one line per spec field) and fast
(``Header.compile()``).  Compiled code does not check lengths; the pieces below emit exact reads
so a short input fails loudly, and :class:`Header` records field offsets on the slow,
diagnostic path so a :class:`~packets.errors.PacketError` can name the field and its byte.

Nothing is allocated from a number before it is checked against what a packet can carry
([MS-MQMQ] 2.2.19.1: BaseHeader.PacketSize, the size of the whole packet, is at most
:data:`MAX_PACKET_SIZE`; the length fields range up to "the size limit imposed by the value of
BaseHeader.PacketSize", 2.2.19.3, 2.2.20.2, 2.2.20.3): reading never takes more bytes than the input
holds (:func:`read_exact`), and building refuses, with a PacketError naming the length field and
its offset, a padding a length field makes longer than that (:class:`Pad`), or an integer given
for bytes (:class:`Data`) or a GUID whose zero bytes would be more than that.
"""

from __future__ import annotations

import codecs
import functools
import struct
import uuid
from array import array
from collections.abc import Callable, Iterator, Mapping, MutableSequence
from io import BytesIO
from typing import Any, ClassVar

import construct as c
from construct import ConstructError, Container, ListContainer, StreamError

from packets.errors import PacketError

__all__ = [
    "GUID",
    "MAX_PACKET_SIZE",
    "NULL_GUID",
    "BitFlags",
    "Data",
    "ElementList",
    "Elements",
    "Fields",
    "FlagsField",
    "Guid",
    "GuidConstruct",
    "Header",
    "Hex8ul",
    "Hex16ul",
    "Hex32ul",
    "Hex64ul",
    "HexField",
    "Int8ul",
    "Int16ul",
    "Int32ul",
    "Int64ul",
    "Pad",
    "Utf16z",
    "fields_new",
    "fixed_format",
    "header_parser",
    "new_fields",
    "new_guid",
    "pad4",
    "read_exact",
    "set_dict",
]

#: [MS-MQMQ] 2.2.19.1: "This field has a maximum value of 0x00400000" (BaseHeader.PacketSize)
MAX_PACKET_SIZE = 0x00400000
PACKET_SIZE_SECTION = "MS-MQMQ 2.2.19.1"

Int8ul = c.Int8ul
Int16ul = c.Int16ul
Int32ul = c.Int32ul
Int64ul = c.Int64ul


class HexField(c.FormatField):
    """An unsigned little-endian integer the spec writes in hexadecimal: a signature, a version,
    a code, an identifier, a reserved word (``BaseHeader.Signature`` 0x524F494C).  It parses,
    builds and generates exactly as its ``Int*ul`` twin; only its display differs: reports show
    its values in hex (packets.paths.display_value).  A count, a size, a time or a sequence
    number stays an ``Int*ul``."""


Hex8ul = HexField("<", "B")
Hex16ul = HexField("<", "H")
Hex32ul = HexField("<", "L")
Hex64ul = HexField("<", "Q")


def pad4(n: int) -> int:
    """Bytes needed to round ``n`` up to a multiple of 4 (the headers' alignment)."""
    return -n % 4


def read_exact(io: BytesIO, n: int) -> bytes:
    """Read exactly ``n`` bytes or raise; never allocates more than the stream holds."""
    if n < 0:
        raise StreamError(f"negative length {n}")
    data = io.read(n)
    if len(data) != n:
        raise StreamError(f"needs {n} bytes, only {len(data)} remain")
    return data


# --------------------------------------------------------------------------------------------
# GUID ([MS-MQMQ] 2.2.18.1.1, [MS-DTYP] 2.3.4)


class GUID(bytes):
    """A GUID kept as its 16 wire bytes (``bytes_le`` order); prints as ``{xxxxxxxx-...}``."""

    __slots__ = ()

    def __new__(cls, value: bytes | str | uuid.UUID | GUID = b"\0" * 16) -> GUID:
        if isinstance(value, GUID):
            return value
        if isinstance(value, int):  # bytes(n) would be n zero bytes, made before any check
            raise TypeError(f"a GUID is 16 bytes, a string or a UUID, not the integer {value}")
        if isinstance(value, uuid.UUID):
            value = value.bytes_le
        elif isinstance(value, str):
            value = uuid.UUID(value.strip("{}")).bytes_le
        return super().__new__(cls, value)

    @property
    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes_le=bytes(self))

    def __str__(self) -> str:
        if len(self) != 16:
            return self.hex()
        return "{" + str(self.uuid).upper() + "}"

    def __repr__(self) -> str:
        return f"GUID('{self}')"

    @property
    def is_null(self) -> bool:
        return not any(self)


NULL_GUID = GUID()
# GUID from 16 wire bytes without the checks of GUID.__new__ (generated parsers).
new_guid = functools.partial(bytes.__new__, GUID)


class GuidConstruct(c.Construct):
    """A 16-byte GUID field ([MS-MQMQ] 2.2.18.1.1): :data:`Guid`; the generators and the dissectors
    recognise a GUID by this class."""

    def __init__(self) -> None:
        super().__init__()

    def _parse(self, stream: Any, context: Any, path: str) -> GUID:
        return GUID(c.stream_read(stream, 16, path))

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> GUID:
        if isinstance(obj, int):
            raise Refused(f"a GUID is 16 bytes, not the integer {obj}", path, stream.tell(), "MS-MQMQ 2.2.18.1.1")
        guid = GUID(obj if obj is not None else NULL_GUID)
        if len(guid) != 16:
            raise PacketError(path_of(path), -1, f"a GUID is 16 bytes, got {len(guid)}")
        c.stream_write(stream, guid, 16, path)
        return guid

    def _sizeof(self, context: Any, path: str) -> int:
        return 16

    def _emitparse(self, code: Any) -> str:
        code.append("from packets.fields import new_guid, read_exact")
        return "new_guid(read_exact(io, 16))"


Guid = GuidConstruct()


# --------------------------------------------------------------------------------------------
# Byte strings, padding and UTF-16 strings whose length comes from another field


class Refused(ConstructError):
    """A value building refuses before it makes anything of it (more bytes than a packet can
    carry, [MS-MQMQ] 2.2.19.1; an integer for a GUID): names the field (construct's ``path``) and
    its offset in the header being built (``msmq_offset``, as the diagnostic parse records it)."""

    def __init__(self, message: str, path: str, offset: int, section: str = PACKET_SIZE_SECTION) -> None:
        super().__init__(message, path=path)
        self.msmq_offset = offset
        self.msmq_section = section


_OVER_LIMIT = f"no packet carries more than 0x{MAX_PACKET_SIZE:08X} bytes (BaseHeader.PacketSize)"


class Data(c.Construct):
    """Exactly ``length`` raw bytes (``length`` may be a ``this`` expression).  Built from the bytes
    given; an integer given instead is that many zero bytes, refused past :data:`MAX_PACKET_SIZE`."""

    def __init__(self, length: Any) -> None:
        super().__init__()
        self.length = length

    def _parse(self, stream: Any, context: Any, path: str) -> bytes:
        return bytes(c.stream_read(stream, c.evaluate(self.length, context), path))

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> bytes:
        if isinstance(obj, int) and obj > MAX_PACKET_SIZE:
            raise Refused(f"the integer {obj} given for bytes is {obj} zero bytes; {_OVER_LIMIT}", path, stream.tell())
        data = bytes(obj or b"")
        c.stream_write(stream, data, len(data), path)
        return data

    def _sizeof(self, context: Any, path: str) -> int:
        return int(c.evaluate(self.length, context))

    def _emitparse(self, code: Any) -> str:
        code.append("from packets.fields import read_exact")
        return f"read_exact(io, {self.length})"


class Pad(c.Construct):
    """Alignment padding of ``length`` bytes.

    Parsed bytes are kept (under a ``_``-prefixed key, which Container equality ignores) so a
    packet whose padding is not zero still builds back byte-identical; building without them
    writes zeros.  ``field``: the length field ``length`` is computed from (a HeaderSize that
    counts the padding), at offset ``at`` (an expression) of the header; a padding longer than a
    packet can carry (:data:`MAX_PACKET_SIZE`) is refused before it is made, naming that field.
    """

    def __init__(self, length: Any, field: str = "", at: Any = None) -> None:
        super().__init__()
        self.length = length
        self.field = field
        self.at = at
        self.flagbuildnone = True

    def _parse(self, stream: Any, context: Any, path: str) -> bytes:
        return bytes(c.stream_read(stream, c.evaluate(self.length, context), path))

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> bytes:
        n = c.evaluate(self.length, context)
        if n > MAX_PACKET_SIZE:
            raise self._too_long(n, stream, context, path)
        data = bytes(obj) if isinstance(obj, bytes | bytearray) and len(obj) == n else b"\0" * n
        c.stream_write(stream, data, n, path)
        return data

    def _too_long(self, n: int, stream: Any, context: Any, path: str) -> Refused:
        if not self.field:
            return Refused(f"{n} bytes of padding; {_OVER_LIMIT}", path, stream.tell())
        parent = path.rpartition("->")[0]
        where = f"{parent}-> {self.field}" if parent else self.field
        value = context.get(self.field)
        offset = int(c.evaluate(self.at, context)) if self.at is not None else stream.tell()
        shown = f"0x{value:08X}" if isinstance(value, int) else repr(value)
        return Refused(f"{shown} makes {n} bytes of padding; {_OVER_LIMIT}", where, offset)

    def _sizeof(self, context: Any, path: str) -> int:
        return int(c.evaluate(self.length, context))

    def _emitparse(self, code: Any) -> str:
        code.append("from packets.fields import read_exact")
        return f"read_exact(io, {self.length})"


_utf_16_le_decode = codecs.utf_16_le_decode


def decode_utf16(raw: bytes) -> str:
    """UTF-16LE to str, dropping one terminating NUL; lone surrogates survive a round trip."""
    text = _utf_16_le_decode(raw, "surrogatepass", True)[0]
    return text[:-1] if text.endswith("\0") else text


def encode_utf16z(text: str) -> bytes:
    """str to UTF-16LE with the terminating NUL the spec's strings carry."""
    return (text + "\0").encode("utf-16-le", "surrogatepass")


class Utf16z(c.Construct):
    """A null-terminated UTF-16LE string occupying ``length`` bytes on the wire.

    The parsed value is the text without its terminating NUL; building appends it.  The length
    field that announces the string is a separate field of the header (spec vocabulary), whose
    unit (bytes or characters) the header states.  Odd byte counts are rejected.
    """

    def __init__(self, length: Any) -> None:
        super().__init__()
        self.length = length

    def _parse(self, stream: Any, context: Any, path: str) -> str:
        n = c.evaluate(self.length, context)
        if n % 2:
            raise c.ValidationError(f"UTF-16 string of odd byte length {n}", path=path)
        return decode_utf16(c.stream_read(stream, n, path))

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> str:
        data = encode_utf16z(obj or "")
        c.stream_write(stream, data, len(data), path)
        return str(obj or "")

    def _sizeof(self, context: Any, path: str) -> int:
        return int(c.evaluate(self.length, context))

    def _emitparse(self, code: Any) -> str:
        code.append("from packets.fields import decode_utf16, read_exact")
        return f"decode_utf16(read_exact(io, {self.length}))"


# --------------------------------------------------------------------------------------------
# Flag words: bit 0 is the least-significant bit of the little-endian integer


def _subfield_getter(shift: int, mask: int) -> Callable[[int], int]:
    def get(self: int) -> int:
        return (int(self) >> shift) & mask

    return get


class BitFlags(int):
    """An integer flag word whose sub-fields are read by the spec's abbreviations.

    Subclasses list ``_fields_`` as ``(name, first_bit, width)``; ``Flags.PR`` then reads bits
    ``first_bit .. first_bit+width-1``.  Build one with ``Cls.make(PR=3, IN=1)`` or from a
    mapping.  Equality is integer equality; a mapping of sub-fields also compares equal.
    """

    __slots__ = ()
    _fields_: ClassVar[tuple[tuple[str, int, int], ...]] = ()
    _width_: ClassVar[int] = 32
    _known_: ClassVar[dict[str, tuple[int, int]]] = {}  # name -> (shift, width), from _fields_

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, shift, width in cls._fields_:
            setattr(cls, name, property(_subfield_getter(shift, (1 << width) - 1)))
        cls._known_ = {name: (shift, width) for name, shift, width in cls._fields_}

    @classmethod
    def make(cls, value: int | Mapping[str, int] = 0, **fields: int) -> BitFlags:
        """Flags from an integer, a mapping of sub-fields, or keyword sub-fields (or both)."""
        if not fields and type(value) is int:  # the common case: a plain flag word
            return cls(value)
        if isinstance(value, Mapping):
            fields = {**value, **fields}
            value = 0
        out = int(value)
        known = cls._known_
        for name, v in fields.items():
            if name not in known:
                raise PacketError(cls.__name__ + "." + name, -1, "no such flag")
            shift, width = known[name]
            v = int(v)
            if not 0 <= v < (1 << width):
                raise PacketError(cls.__name__ + "." + name, -1, f"{v} does not fit {width} bits")
            out = (out & ~(((1 << width) - 1) << shift)) | (v << shift)
        return cls(out)

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name, _, _ in self._fields_}

    def undefined_bits(self) -> int:
        """The bits set that no named sub-field covers."""
        covered = 0
        for _, shift, width in self._fields_:
            covered |= ((1 << width) - 1) << shift
        return int(self) & ~covered

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            try:
                return int(self) == int(type(self).make(other))
            except PacketError:
                return False
        return int(self) == other

    __hash__ = int.__hash__

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={v}" for k, v in self.as_dict().items() if v)
        return f"{type(self).__name__}(0x{int(self):0{self._width_ // 4}X}{': ' if parts else ''}{parts})"

    __str__ = __repr__


class FlagsField(c.Construct):
    """A little-endian flag word parsed into a :class:`BitFlags` subclass."""

    _FORMATS: ClassVar[dict[int, str]] = {8: "<B", 16: "<H", 32: "<L"}

    def __init__(self, flags_cls: type[BitFlags]) -> None:
        super().__init__()
        self.flags_cls = flags_cls
        self.fmt = struct.Struct(self._FORMATS[flags_cls._width_])
        self.flagbuildnone = True

    def _parse(self, stream: Any, context: Any, path: str) -> BitFlags:
        return self.flags_cls(self.fmt.unpack(c.stream_read(stream, self.fmt.size, path))[0])

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> BitFlags:
        flags = self.flags_cls.make(obj if obj is not None else 0)
        c.stream_write(stream, self.fmt.pack(int(flags)), self.fmt.size, path)
        return flags

    def _sizeof(self, context: Any, path: str) -> int:
        return self.fmt.size

    def _emitparse(self, code: Any) -> str:
        cls = self.flags_cls
        fid = code.allocateId()
        code.append(f"from {cls.__module__} import {cls.__name__}")
        code.append(f"flagsfmt_{fid} = struct.Struct({self.fmt.format!r})")
        return f"{cls.__name__}(flagsfmt_{fid}.unpack(io.read({self.fmt.size}))[0])"


# --------------------------------------------------------------------------------------------
# Headers: a Struct that records field offsets on the diagnostic path


def path_of(construct_path: str) -> str:
    """'UserHeader -> Flags' -> 'UserHeader.Flags' (construct's path notation to ours)."""
    return ".".join(p.strip() for p in construct_path.split("->") if p.strip() != "(parsing)")


class Fields(dict[str, Any]):
    """A decoded header: a dictionary by spec field name whose fields also read as attributes.

    construct's Container (an OrderedDict) answers ``header.Flags`` through a Python
    ``__getattr__`` (about 2.5 us a read) and stores keys at half a dict's speed; here the
    instance's attribute dictionary is the mapping itself, so ``header.Flags`` is a plain
    dictionary lookup.  It behaves as a Container where it shows: equality ignores keys
    starting with "_" (and compares with Containers both ways), printing and ``repr`` are
    Container's, ``copy`` keeps the type.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        object.__setattr__(self, "__dict__", self)

    __eq__ = Container.__eq__
    __ne__ = Container.__ne__
    __hash__ = None

    def __repr__(self) -> str:
        return repr(Container(self))

    def __str__(self) -> str:
        return str(Container(self))

    def copy(self) -> Fields:
        return Fields(self)

    # A Fields the generated parsers make (``fields_new``) is bound to its own mapping as its
    # attribute dictionary when an attribute is first read or written, not when it is made.

    def __getattr__(self, name: str) -> Any:
        if name[:2] == "__":  # protocol probes (copy, pickle): never fields
            raise AttributeError(name)
        set_dict(self, "__dict__", self)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'") from None

    def __setattr__(self, name: str, value: Any) -> None:
        set_dict(self, "__dict__", self)
        self[name] = value

    def __delattr__(self, name: str) -> None:
        set_dict(self, "__dict__", self)
        try:
            del self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __reduce__(self) -> tuple[Any, ...]:
        return (Fields, (dict(self),))


def new_fields() -> Fields:
    """An empty Fields without running ``__init__`` (used by generated parsers)."""
    obj = fields_new(Fields)
    set_dict(obj, "__dict__", obj)
    return obj


#: Fields.__new__: a Fields without ``__init__`` (generated parsers, packets.fused)
fields_new = Fields.__new__
#: object.__setattr__: binds a Fields' ``__dict__`` to itself past its own __setattr__
set_dict = object.__setattr__


def fixed_format(sc: c.Construct) -> tuple[str, str] | None:
    """(struct format, wrapper) of a fixed-size little-endian field, or None.

    The wrapper turns the unpacked value into the field's value: "" (as is), a class name.
    """
    while isinstance(sc, c.Renamed | c.Default):
        sc = sc.subcon
    if isinstance(sc, c.FormatField) and sc.fmtstr[0] == "<":
        return sc.fmtstr[1:], ""
    if isinstance(sc, FlagsField):
        return sc.fmt.format[1:], sc.flags_cls.__name__
    if isinstance(sc, GuidConstruct):
        return "16s", "new_guid"
    if isinstance(sc, Data | Pad) and isinstance(sc.length, int):
        return f"{sc.length}s", ""
    return None


class Header(c.Struct):
    """A Struct for one spec header.

    The compiled parser (fast path) reads each run of consecutive fixed-size fields with one
    ``struct.unpack`` and builds a :class:`Fields`.  The interpreted parser (diagnostic path)
    records the absolute offset of every field in ``context._params.offsets`` when that mapping
    is supplied, and tags the first error with the offset of the field that failed.
    """

    def _emitparse(self, code: Any) -> str:
        fname = f"parse_header_{code.allocateId()}"
        code.append("from packets.fields import read_exact, new_guid, new_fields")
        # A header made only of fixed fields needs no construct context at all.
        needs_context = any(fixed_format(sc) is None or not sc.name for sc in self.subcons)
        lines = [f"def {fname}(io, this):", "    result = new_fields()"]
        if needs_context:
            # The keys construct's generated expressions read; _root, _subcons and the
            # _parsing/_building flags are never read by the headers' expressions.
            lines.append("    this = {'_': this, '_params': this['_params'], '_io': io, '_index': None}")
        store = "result[{0!r}] = this[{0!r}] = " if needs_context else "result[{0!r}] = "
        run: list[tuple[str, str, str]] = []

        def flush() -> None:
            if not run:
                return
            fmt = "<" + "".join(f for _, f, _ in run)
            fid = code.allocateId()
            code.append(f"fused_{fid} = struct.Struct({fmt!r})")
            lines.append(f"    v = fused_{fid}.unpack(read_exact(io, {struct.calcsize(fmt)}))")
            for i, (name, _, wrap) in enumerate(run):
                value = f"{wrap}(v[{i}])" if wrap else f"v[{i}]"
                lines.append("    " + store.format(name) + value)
            run.clear()

        for sc in self.subcons:
            fixed = fixed_format(sc) if sc.name else None
            if fixed is not None:
                if fixed[1] and fixed[1] != "new_guid":
                    cls = sc.subcon
                    while not isinstance(cls, FlagsField):
                        cls = cls.subcon
                    code.append(f"from {cls.flags_cls.__module__} import {fixed[1]}")
                run.append((sc.name, fixed[0], fixed[1]))
                continue
            flush()
            target = store.format(sc.name) if sc.name else ""
            lines.append(f"    {target}{sc._compileparse(code)}")
        flush()
        lines.append("    return result")
        code.append("\n".join(lines))
        return f"{fname}(io, this)"

    def _parse(self, stream: Any, context: Any, path: str) -> Container:
        obj = Fields()
        context = Container(
            _=context,
            _params=context._params,
            _root=None,
            _parsing=context._parsing,
            _building=context._building,
            _sizing=context._sizing,
            _subcons=self._subcons,
            _io=stream,
            _index=context.get("_index", None),
        )
        context._root = context._.get("_root", context)
        offsets = context._params.get("offsets")
        for sc in self.subcons:
            start = stream.tell()
            if offsets is not None and sc.name:
                offsets[path_of(f"{path} -> {sc.name}")] = start
            try:
                subobj = sc._parsereport(stream, context, path)
            except ConstructError as e:
                if getattr(e, "msmq_offset", None) is None:
                    e.msmq_offset = start
                raise
            if sc.name:
                obj[sc.name] = subobj
                context[sc.name] = subobj
        return obj


_COMPILED_PRELUDE = """
from construct import *
from construct.lib import *
from io import BytesIO
import struct
import collections
import itertools
def restream(data, func):
    return func(BytesIO(data))
def reuse(obj, func):
    return func(obj)
linkedinstances = {}
linkedparsers = {}
linkedbuilders = {}
len_ = len
sum_ = sum
min_ = min
max_ = max
abs_ = abs
"""


def compile_parser(construct: c.Construct) -> Callable[[BytesIO, Container], Container]:
    """construct's code generator, parse side only.

    ``Construct.compile()`` also emits builders, which cannot hold the lambdas that compute a
    length field's default; the builder stays interpreted, so only the parser is generated.
    """
    code = c.CodeGen()
    code.append(_COMPILED_PRELUDE)
    code.append(f"def parseall(io, this):\n    return {construct._compileparse(code)}\n")
    # Results become Fields (fast attribute reads); the per-struct context, which never leaves
    # the parser, becomes a plain dict instead of a Container.
    source = code.toString().replace("result = Container()", "result = new_fields()")
    source = source.replace("this = Container(_ = this,", "this = dict(_ = this,")
    namespace: dict[str, Any] = {"new_fields": new_fields}
    exec(compile(source, f"<compiled {construct!r:.40}>", "exec"), namespace)
    namespace["linkedinstances"].update(code.linkedinstances)
    namespace["linkedparsers"].update(code.linkedparsers)
    return namespace["parseall"]


class HeaderParser:
    """A header with its compiled (fast) and interpreted (diagnostic) parsers."""

    __slots__ = ("_compiled", "header", "name")

    def __init__(self, name: str, header: c.Construct) -> None:
        self.name = name
        self.header = header
        self._compiled: Any = None

    @property
    def compiled(self) -> Callable[[BytesIO, Container], Container]:
        if self._compiled is None:
            self._compiled = compile_parser(self.header)
        return self._compiled

    def parse_fast(self, io: BytesIO, context: Container) -> Container:
        """Compiled parse; may raise anything on bad input (callers fall back to diagnose)."""
        return self.compiled(io, context)

    def diagnose(self, io: BytesIO, offsets: dict[str, int], parents: Mapping[str, Any] | None = None) -> Container:
        """Interpreted parse from ``io``'s position; raises PacketError naming field and offset.

        ``parents`` are the headers parsed before this one (reachable as ``this._``).
        """
        start = io.tell()
        context = Container(parents or {})
        context._parsing = True
        context._building = False
        context._sizing = False
        context._params = Container(offsets=offsets)
        try:
            return self.header._parsereport(io, context, self.name)
        except ConstructError as e:
            offset = getattr(e, "msmq_offset", None)
            field = path_of(e.path or self.name)
            message = str(e).split("\n", 1)[-1]
            raise PacketError(field, start if offset is None else offset, message) from None

    def build(self, obj: Mapping[str, Any], context: Mapping[str, Any] | None = None) -> bytes:
        stream = BytesIO()
        ctx = Container(**(context or {}))
        ctx._parsing = False
        ctx._building = True
        ctx._sizing = False
        ctx._params = ctx
        try:
            self.header._build(obj, stream, ctx, self.name)
        except ConstructError as e:
            offset, section = getattr(e, "msmq_offset", -1), getattr(e, "msmq_section", "")
            raise PacketError(path_of(e.path or self.name), offset, str(e).split("\n", 1)[-1], section) from None
        except (TypeError, ValueError, KeyError, AttributeError) as e:
            if isinstance(e, PacketError):
                raise
            raise PacketError(self.name, -1, f"cannot build: {e!r}") from None
        return stream.getvalue()


def header_parser(name: str, header: c.Construct) -> HeaderParser:
    return HeaderParser(name, header)


def reads_own_fields(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Mark a Default's computed value as reading only fields of its own header, with
    ``ctx.get(name)``: a generated builder may then compute it from those fields (the values
    built before it, the given ones after it) instead of leaving the header to construct."""
    fn.reads_own_fields = True  # type: ignore[attr-defined]
    return fn


# A tiny helper for headers whose length field is derived from a string when left out.
def utf16z_bytes(key: str) -> Callable[[Any], int]:
    """Byte length (with NUL) of the string field ``key`` — a default for its length field."""
    return reads_own_fields(lambda ctx: len(encode_utf16z(ctx.get(key) or "")))


def utf16z_chars(key: str) -> Callable[[Any], int]:
    """Character count (with NUL) of the string field ``key`` — a default for its length field."""
    return reads_own_fields(lambda ctx: len(encode_utf16z(ctx.get(key) or "")) // 2)


# --------------------------------------------------------------------------------------------
# Repeated elements: a count field, then that many elements of one type


class ElementList(c.Construct):
    """``count`` elements of ``subcon`` one after another (``count`` may be a ``this``
    expression), parsed into an :class:`Elements`.

    Parsing walks the elements with a generated scanner (the element's own construct
    definition with the value-building left out) that records where each element starts, and
    decodes an element only when it is read; so a list of a million small elements
    costs one pass and an offset per element, not a decoded object per element.  Building an
    :class:`Elements` that was not changed copies its bytes; anything else is built element by
    element (generated builders).  A scan that fails runs the interpreted parser of the failing
    element alone, which names its field and offset.  ``name`` identifies the element type (a
    pickled :class:`Elements` finds it again by this name).  ``generate`` makes the (scan,
    decode, build) functions of an element, on first use: packets.generate.element_functions,
    given by the module that declares the list (packets.generate reads the pieces of this
    module, so this module does not import it).
    """

    _REGISTRY: ClassVar[dict[str, ElementList]] = {}

    def __init__(
        self,
        count: Any,
        subcon: c.Construct,
        name: str,
        generate: Callable[[c.Construct, str], tuple[Any, Any, Any]],
    ) -> None:
        super().__init__()
        self.count = count
        self.subcon = subcon
        self.element_name = name
        self._generate = generate
        self._functions: tuple[Any, Any, Any] | None = None
        ElementList._REGISTRY[name] = self

    @property
    def functions(self) -> tuple[Any, Any, Any]:
        """(scan, decode, build) generated for the element (``generate``)."""
        if self._functions is None:
            self._functions = self._generate(self.subcon, self.element_name)
        return self._functions

    # -- parsing ---------------------------------------------------------------------------

    def parse_at(self, data: bytes, pos: int, count: int) -> tuple[Elements, int]:
        """The ``count`` elements at ``pos``: (elements, offset after them); raises anything
        (an element that does not decode, a count the bytes cannot hold) on bad input."""
        if count < 0:
            raise c.RangeError(f"invalid count {count}")
        offsets = _offset_array(len(data))
        end = self.functions[0](data, pos, count, offsets)
        return Elements._parsed(self, data, offsets, end), end

    def _parse(self, stream: Any, context: Any, path: str) -> Elements:
        count = c.evaluate(self.count, context)
        if count < 0:
            raise c.RangeError(f"invalid count {count}", path=path)
        data = stream.getvalue()  # an unwritten BytesIO shares its bytes
        pos = stream.tell()
        offsets = _offset_array(len(data))
        try:
            end = self.functions[0](data, pos, count, offsets)
        except Exception:
            failed = len(offsets) - 1
            if failed < 0:  # nothing scanned
                raise c.StreamError("cannot read the elements", path=path) from None
            stream.seek(offsets[failed])
            self.subcon._parsereport(stream, context, f"{path} -> {failed}")
            raise c.StreamError(f"element {failed} does not decode", path=path) from None
        stream.seek(end)
        return Elements._parsed(self, data, offsets, end)

    def _emitparse(self, code: Any) -> str:
        code.linkedinstances[id(self)] = self
        return f"linkedinstances[{id(self)}]._parse(io, this, '(compiled)')"

    # -- building --------------------------------------------------------------------------

    def encode(self, obj: Any, pos: int, count: int | None = None) -> bytes:
        """The bytes of ``obj``'s elements written at offset ``pos`` of the header being built
        (the elements' padding depends on it); ``count``, when given, must be their number."""
        if obj is None:
            obj = ()
        n = len(obj)
        if count is not None and count != n:
            raise c.RangeError(f"expected {count} elements, found {n}")
        if isinstance(obj, Elements) and obj._kind is self:
            return obj._encode(pos)
        build = self.functions[2]
        out = bytearray()
        for element in obj:
            out += self.encode_one(element, pos + len(out), build)
        return bytes(out)

    def encode_one(self, element: Any, pos: int, build: Any = None) -> bytes:
        """One element written at ``pos`` (its generated builder; construct's own, which words
        the error, when that declines)."""
        try:
            return bytes((build or self.functions[2])(element, pos))
        except Exception:
            pass
        stream = BytesIO()
        stream.write(bytes(pos % 4))  # every alignment of the spec's elements divides 4
        ctx = Container(_parsing=False, _building=True, _sizing=False, _params=Container(), _index=None)
        ctx._params = ctx
        self.subcon._build(element, stream, ctx, self.element_name)
        return stream.getvalue()[pos % 4 :]

    def encoded_size(self, obj: Any, pos: int = 0) -> int:
        """Bytes ``obj``'s elements occupy when written at ``pos``."""
        if isinstance(obj, Elements) and obj._kind is self:
            return obj._encoded_size(pos)
        return len(self.encode(obj, pos))

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        count = c.evaluate(self.count, context)
        if count < 0:
            raise c.RangeError(f"invalid count {count}", path=path)
        try:
            data = self.encode(obj, stream.tell(), count)
        except ConstructError as e:
            e.path = e.path or path
            raise
        c.stream_write(stream, data, len(data), path)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise c.SizeofError("elements of variable size", path=path)


def _offset_array(size: int) -> array:
    return array("I" if size < 1 << 32 else "Q")


def _restore_elements(name: str, raw: bytes, start: int, offsets: array, cache: dict[int, Any]) -> Elements:
    """Unpickle an :class:`Elements` (raw bytes rebased to offset ``start``)."""
    data = bytes(start) + raw
    elements = Elements._parsed(ElementList._REGISTRY[name], data, offsets, len(data))
    elements._cache.update(cache)
    return elements


class Elements(MutableSequence):
    """The decoded elements of an :class:`ElementList`: a list whose elements are read from the
    packet's bytes when first used (and kept, so a change to one sticks).

    Built from items (``Elements([...])``) it is an ordinary list.  Equality is a list's (with
    lists, ``ListContainer`` and other ``Elements``); it prints as a ``ListContainer``.  An
    insertion or a deletion turns a parsed one into an ordinary list of its decoded elements.
    """

    __slots__ = ("_cache", "_data", "_end", "_items", "_kind", "_offsets")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, items: Any = ()) -> None:
        self._items: list[Any] | None = list(items)
        self._kind: ElementList | None = None
        self._data = b""
        self._offsets: array | None = None
        self._end = 0
        self._cache: dict[int, Any] = {}

    @classmethod
    def _parsed(cls, kind: ElementList, data: bytes, offsets: array, end: int) -> Elements:
        self = cls.__new__(cls)
        self._items = None
        self._kind, self._data, self._offsets, self._end = kind, data, offsets, end
        self._cache = {}
        return self

    # -- reading ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._items) if self._items is not None else len(self._offsets)  # type: ignore[arg-type]

    def __getitem__(self, index: Any) -> Any:
        if self._items is not None:
            return self._items[index] if isinstance(index, int) else ListContainer(self._items[index])
        if isinstance(index, slice):
            return ListContainer(self[i] for i in range(*index.indices(len(self))))
        i = self._index(index)
        try:
            return self._cache[i]
        except KeyError:
            value = self._cache[i] = self._decode(i)
            return value

    def __iter__(self) -> Iterator[Any]:
        if self._items is not None:
            yield from self._items
        else:
            for i in range(len(self)):
                yield self[i]

    def _index(self, index: int) -> int:
        n = len(self)
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError("element index out of range")
        return int(i)

    def _decode(self, i: int) -> Any:
        value, _ = self._kind.functions[1](self._data, self._offsets[i])  # type: ignore[union-attr,index]
        return value

    def decoded(self) -> Iterator[tuple[int, Any]]:
        """(index, element) of every element held as an object: those read (or set) so far of a
        parsed list, every element of an ordinary one.  The others are still their parsed bytes."""
        if self._items is not None:
            yield from enumerate(self._items)
        else:
            yield from sorted(self._cache.items())

    # -- changing --------------------------------------------------------------------------

    def __setitem__(self, index: Any, value: Any) -> None:
        if self._items is None and isinstance(index, int):
            self._cache[self._index(index)] = value
            return
        self._materialise()[index] = value

    def __delitem__(self, index: Any) -> None:
        del self._materialise()[index]

    def insert(self, index: int, value: Any) -> None:
        self._materialise().insert(index, value)

    def _materialise(self) -> list[Any]:
        if self._items is None:
            self._items = list(self)
            self._kind, self._data, self._offsets, self._cache = None, b"", None, {}
        return self._items

    # -- as a list -------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if isinstance(other, Elements) and self._unchanged() and other._unchanged():
            same_alignment = (self._start() - other._start()) % 4 == 0
            if self._kind is other._kind and same_alignment and self._raw() == other._raw():
                return True
        if not isinstance(other, list | tuple | Elements):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __repr__(self) -> str:
        return repr(ListContainer(self))

    def __str__(self) -> str:
        return str(ListContainer(self))

    def __reduce__(self) -> tuple[Any, ...]:
        if self._items is not None or self._kind is None:
            return (Elements, (self._items or [],))
        assert self._offsets is not None
        start = self._offsets[0] if len(self._offsets) else self._end
        return (
            _restore_elements,
            (self._kind.element_name, self._raw(), start, self._offsets, dict(self._cache)),
        )

    def copy(self) -> Elements:
        return Elements(self)

    # -- building --------------------------------------------------------------------------

    def _unchanged(self) -> bool:
        return self._items is None and not self._cache

    def _start(self) -> int:
        assert self._offsets is not None
        return self._offsets[0] if len(self._offsets) else self._end

    def _raw(self) -> bytes:
        return self._data[self._start() : self._end]

    def _encoded_size(self, pos: int) -> int:
        if self._unchanged() and (pos - self._start()) % 4 == 0:
            return self._end - self._start()
        return len(self._encode(pos))

    def _encode(self, pos: int) -> bytes:
        """The elements written at ``pos``: the parsed bytes of every element not read since
        (while ``pos`` keeps their alignment), the others through their builder."""
        kind = self._kind
        if self._items is not None or kind is None:
            return kind.encode(self._items or [], pos) if kind is not None else b""
        offsets, data, cache = self._offsets, self._data, self._cache
        assert offsets is not None
        if (pos - self._start()) % 4 == 0 and not cache:
            return self._raw()
        _, decode, build = kind.functions
        out = bytearray()
        n = len(offsets)
        i = 0
        while i < n:
            at = pos + len(out)
            start = offsets[i]
            if (at - start) % 4 == 0:  # the parsed bytes hold until the next element read
                j = i
                while j < n and j not in cache:
                    j += 1
                if j > i:
                    out += data[start : offsets[j] if j < n else self._end]
                    i = j
                    continue
            element = cache[i] if i in cache else decode(data, start)[0]
            out += kind.encode_one(element, at, build)
            i += 1
        return bytes(out)
