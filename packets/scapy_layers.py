"""scapy layers for MSMQ, generated from the construct definitions.

``MSMQ`` (one packet of an MSMQ binary session: [MS-MQMQ] 2.2.19-2.2.20 with the [MS-MQRR] 2.2.5.1
headers, [MS-MQQB] 2.2.1-2.2.6) is bound to TCP port 1801 ([MS-MQQB] 2.1.1) and ``MSMQPing``
([MS-MQQB] 2.2.7) to UDP port 3527 ([MS-MQQB] 2.1.2).

Every header is a scapy layer of its own (``BaseHeader``, ``UserHeader``, ...) whose fields are
walked from the header's construct ``Header`` (as ``packets.generate`` walks them, so there is no
second field list): integers, GUIDs (``GuidField``), byte strings, UTF-16 strings (``str``), flag
words as a layer of their own whose fields are the spec's abbreviations (``UserHeaderFlags``:
``pkt.UserHeader.Flags.DQ``), nested structures as ``PacketField``, a queue chosen by a flag as a
``PacketField`` holding the case's layer, repeated elements as ``PacketListField``, alignment
padding as ``_pad`` fields (None: zeros).  ``MSMQ``'s fields are the headers of both packet
layouts (``message.USER_MESSAGE_LAYOUT``, ``session.INTERNAL_LAYOUT``), each None when absent.

Building never runs scapy's field packers: ``raw(layer)`` is ``packets.build`` of the layer's
fields, so the bytes are exactly the codec's.  What is left None is computed: lengths and
BaseHeader.PacketSize by ``packets.build``; flag sub-fields that say which header or queue type
follows (BaseHeader.Flags.IN/SH/DH, UserHeader.Flags.DQ/AQ/RQ/CQ/TH/SH/MQ/HH/AH,
InternalHeader.Flags.PT, TransactionHeader.Flags.CG, DebugHeader.Flags.QT,
MQFFormatNameElement.FormatType) from what is present; BaseHeader.Flags.PR is 0 with a
TransactionHeader ([MS-MQMQ] 2.2.20) and 3 otherwise, UserHeader.Flags.DM 1 with one (2.2.19.2).
Defaults are those of the codec's header builders (``default_base_header``,
``default_user_header``, ``default_message_properties_header``, ``default_transaction_header``,
``session.establish_connection`` / ``connection_parameters`` / ``session_ack``), so ``MSMQ()`` is a
conformant empty UserMessage.  A value given is written as given, so a malformed packet is one
field away.

Dissection goes through ``packets.parse(strict=False)`` (``layer.decoded`` keeps the codec's
Packet and ``layer.violations`` its violations) and is lazy: a header becomes its layer, holding
the codec's decoded header, when it is first read (``pkt.UserHeader``), and within it each
field becomes scapy's value (a flag word, a queue, a nested structure or an element list its
layer) when it is read (``pkt.UserHeader.Flags``); reading a layer's fields as a whole
(``show``, ``==``, ``copy``) makes them all.  A layer made in dissection gets the attributes
scapy's constructor gives it directly, without the constructor's walk over keyword arguments.
An unchanged dissected layer builds back its own bytes, and its kind, violations and bytes need
no header made.  A TCP segment carrying several packets dissects into a chain of MSMQ layers;
``packets.scapy_stream`` reassembles packets split across segments.

Imported on demand only: ``import packets`` does not import scapy.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Iterable, Mapping
from io import BytesIO
from typing import Any, ClassVar

import construct as c
from construct import Container
from construct import expr as cexpr
from scapy.fields import Field, PacketField, PacketListField, StrField
from scapy.layers.inet import TCP, UDP
from scapy.packet import NoPayload, Raw, bind_layers
from scapy.packet import Packet as ScapyPacket

from packets import base, message, mqrr, optional, properties, session, user
from packets.base import BASE_HEADER_SIZE
from packets.codec import Packet, build, build_ping, parse, parse_ping
from packets.errors import PacketError, Violation
from packets.fields import (
    GUID,
    NULL_GUID,
    BitFlags,
    Data,
    ElementList,
    Fields,
    FlagsField,
    GuidConstruct,
    Header,
    HeaderParser,
    Pad,
    Utf16z,
)
from packets.stream import wire_length

__all__ = [
    "HEADER_LAYERS",
    "MSMQ",
    "MSMQ_PORT",
    "PING_PORT",
    "GuidField",
    "MSMQPing",
    "header_layer",
]

MSMQ_PORT = 1801
PING_PORT = 3527

# scapy's own storage of a layer's field values (a slot); MSMQ reads it under its lazy ``fields``.
_FIELDS_SLOT: Any = ScapyPacket.__dict__["fields"]
_NO_PAYLOAD: Any = NoPayload()  # scapy's payload of a layer that has none (one object)


# ---------------------------------------------------------------------------------------------
# Fields


class GuidField(Field[GUID | None, bytes]):
    """A GUID ([MS-MQMQ] 2.2.18.1.1): its 16 wire bytes, shown as ``{XXXXXXXX-...}``; accepts a
    GUID, its text, a ``uuid.UUID`` or 16 bytes."""

    def __init__(self, name: str, default: Any) -> None:
        super().__init__(name, None if default is None else GUID(default), "16s")

    def any2i(self, pkt: Any, x: Any) -> GUID | None:
        return None if x is None else GUID(x)

    def i2repr(self, pkt: Any, x: Any) -> str:
        return "None" if x is None else str(GUID(x))


class TextField(Field[str | None, bytes]):
    """A UTF-16 string of the spec, held as text without its terminating NUL (None: absent)."""

    def __init__(self, name: str, default: str | None) -> None:
        super().__init__(name, default, "0s")

    def any2i(self, pkt: Any, x: Any) -> str | None:
        return x if x is None or isinstance(x, str) else str(x)

    def i2repr(self, pkt: Any, x: Any) -> str:
        return repr(x)


class BytesField(StrField):
    """Raw bytes of the spec (a body, a signature, padding); None leaves them to the codec."""

    def any2i(self, pkt: Any, x: Any) -> Any:
        return None if x is None else bytes(x)


class IntField(Field[int | None, int]):
    """A little-endian unsigned integer of ``size`` bytes; None: computed by ``packets.build``."""

    _FORMATS: ClassVar[dict[int, str]] = {1: "<B", 2: "<H", 4: "<I", 8: "<Q"}

    def __init__(self, name: str, default: int | None, size: int) -> None:
        super().__init__(name, default, self._FORMATS[size])

    def any2i(self, pkt: Any, x: Any) -> int | None:
        return None if x is None else int(x)

    def i2repr(self, pkt: Any, x: Any) -> str:
        return "None" if x is None else f"{x} (0x{x:X})" if x > 9 else str(x)


class _LayerField(PacketField):
    """A nested structure (or flag word): its own layer; accepts the layer, a mapping of its
    fields or (for flag words) an integer."""

    def any2i(self, pkt: Any, x: Any) -> Any:
        if x is None or isinstance(x, ScapyPacket):
            return x
        cls: Any = self.cls
        return cls.from_value(x)


class _ChoiceField(PacketField):
    """A construct ``Switch``: one of several structures (the queue format names), chosen by a
    flag; holds the chosen case's layer (None: no queue)."""

    __slots__ = ("cases",)

    def __init__(self, name: str, cases: Mapping[int, type[_Header]]) -> None:
        self.cases = dict(cases)
        super().__init__(name, None, next(iter(self.cases.values())))

    def choose(self, value: Mapping[str, Any]) -> type[_Header]:
        """The case whose fields hold every key given (the smallest such case)."""
        keys = {k for k in value if not str(k).startswith("_")}
        fits = [cls for cls in dict.fromkeys(self.cases.values()) if keys <= cls.field_names()]
        if not fits:
            raise PacketError(str(self.name), -1, f"no queue format has the fields {sorted(keys)}")
        return min(fits, key=lambda cls: len(cls.field_names()))

    def any2i(self, pkt: Any, x: Any) -> Any:
        if x is None or isinstance(x, ScapyPacket):
            return x
        return self.choose(x).from_value(x)


class _ListField(PacketListField):
    """A construct ``ElementList``: its elements as layers."""

    def any2i(self, pkt: Any, x: Any) -> Any:
        if not x:
            return []
        cls: Any = self.cls
        return [e if isinstance(e, ScapyPacket) else cls.from_value(e) for e in x]


# ---------------------------------------------------------------------------------------------
# Layers


class _Flags(ScapyPacket):
    """A flag word ([MS-MQMQ]/[MS-MQQB] header Flags): one field per sub-field abbreviation; bit 0
    is the least-significant bit of the little-endian word.  A sub-field left None is computed
    where the packet says what it must be (the header or queue it announces), else 0."""

    flags_cls: ClassVar[type[BitFlags]]
    rest_mask: ClassVar[int] = 0  # bits no sub-field names (kept in ``unused_bits``)

    @classmethod
    def from_value(cls, value: Any) -> _Flags:
        if isinstance(value, Mapping):
            return _make(cls, value)
        word = int(value)
        fields = {name: (word >> shift) & ((1 << width) - 1) for name, shift, width in cls.flags_cls._fields_}
        if cls.rest_mask:
            fields["unused_bits"] = word & cls.rest_mask
        layer: _Flags = _filled(cls, fields)
        return layer

    def to_flags(self, computed: Mapping[str, int] | None = None) -> BitFlags:
        computed = computed or {}
        values: dict[str, int] = {}
        for name, _, _ in self.flags_cls._fields_:
            v = self.getfieldval(name)
            values[name] = int(computed.get(name, 0) if v is None else v)
        rest = int(self.getfieldval("unused_bits") or 0) if self.rest_mask else 0
        return self.flags_cls.make(self.flags_cls(rest), **values)

    def __int__(self) -> int:
        return int(self.to_flags())

    def do_build(self) -> bytes:
        width = self.flags_cls._width_ // 8
        return int(self.to_flags()).to_bytes(width, "little") + self.do_build_payload()

    def do_dissect(self, s: bytes) -> bytes:
        width = self.flags_cls._width_ // 8
        if len(s) < width:
            raise PacketError(str(self.name), 0, f"a flag word of {width} bytes, got {len(s)}")
        other = self.from_value(int.from_bytes(s[:width], "little"))
        self.fields.update(other.fields)
        return s[width:]

    def mysummary(self) -> str:
        return repr(self.to_flags())


def _is_flags_field(fld: Any) -> bool:
    return isinstance(fld, _LayerField) and isinstance(fld.cls, type) and issubclass(fld.cls, _Flags)


# (sub-field or field to compute, the field it depends on, how): how is a dict {layer class: key}
# for a Switch (the case a layer is) or an int for an If (the value when the field is present).
_Rule = tuple[str, str | None, str, Any]


def _make(cls: Any, fields: Mapping[str, Any]) -> Any:
    """``cls(**fields)`` (scapy's Packet signature hides keyword fields from type checkers)."""
    return cls(**dict(fields))


# What scapy's constructor (``Packet.__init__``) gives a layer made in dissection
# (``_internal=1``), per layer class: its name, the class's cached field information (scapy's
# ``class_default_fields``, ``class_fieldtype``, ``class_packetfields``), the fields whose default
# is a mutable value (copied into each layer that does not hold another) and ``_overload_fields``.
_Parts = tuple[str, dict[str, Any], dict[str, Any], list[Any], tuple[str, ...], dict[Any, Any]]
_PARTS: dict[type, _Parts] = {}


def _class_parts(cls: Any) -> _Parts:
    parts = _PARTS.get(cls)
    if parts is None:
        if ScapyPacket.class_default_fields.get(cls) is None:
            cls(_internal=1)  # scapy caches a class's field information when its first layer is made
        name = cls.__name__ if cls._name is None else cls._name
        parts = (
            name,
            ScapyPacket.class_default_fields[cls],
            ScapyPacket.class_fieldtype[cls],
            ScapyPacket.class_packetfields[cls],
            tuple(ScapyPacket.class_default_fields_ref.get(cls, ())),
            cls._overload_fields,
        )
        _PARTS[cls] = parts
    return parts


# The attributes ``Packet.__init__`` sets (scapy's slots), in its order: each slot's own setter.
_SLOTS = (
    "time", "sent_time", "name", "default_fields", "overload_fields", "overloaded_fields", "fields",
    "fieldtype", "packetfields", "payload", "underlayer", "parent", "original", "explicit",
    "raw_packet_cache", "raw_packet_cache_fields", "wirelen", "direction", "sniffed_on", "comments",
    "process_information", "stop_dissection_after", "post_transforms",
)  # fmt: skip
_SLOT_SETTERS = tuple(next(k.__dict__[n] for k in ScapyPacket.__mro__ if n in k.__dict__).__set__ for n in _SLOTS)


def _init_layer(
    layer: Any,
    parts: _Parts,
    original: bytes = b"",
    stamp: float = 0.0,
    underlayer: Any = None,
    parent: Any = None,
    stop_dissection_after: Any = None,
) -> None:
    """Every attribute ``Packet.__init__`` sets, as it sets them before dissecting (no field
    value yet): scapy's constructor at the cost of its assignments alone, without walking the
    fields to look each up among keyword arguments none of which are given."""
    values: tuple[Any, ...] = (
        stamp, None, parts[0], parts[1], parts[5], {}, {}, parts[2], parts[3], _NO_PAYLOAD, underlayer,
        parent, original, 0, None, None, None, None, None, None, None, stop_dissection_after, [],
    )  # fmt: skip
    for set_slot, value in zip(_SLOT_SETTERS, values, strict=True):
        set_slot(layer, value)


def _filled(cls: Any, values: Mapping[str, Any], pending: dict[str, Any] | None = None) -> Any:
    """``cls(**values)`` for a layer made from decoded values, at a fraction of the cost: the
    layer gets what scapy's constructor gives it (:func:`_init_layer`), each value goes through
    its field's ``any2i`` and a mutable default not given is copied, as scapy does.
    ``pending``: decoded values of fields made when first read (:class:`_Lazy`)."""
    parts = _PARTS.get(cls) or _class_parts(cls)
    layer = object.__new__(cls)
    _init_layer(layer, parts)
    fields = _FIELDS_SLOT.__get__(layer)
    fieldtype = parts[2]
    for name, value in values.items():
        fields[name] = fieldtype[name].any2i(layer, value)
    for name in parts[4]:
        if name not in fields and (pending is None or name not in pending):
            fields[name] = parts[1][name].copy()
    if pending:
        object.__setattr__(layer, "_pending", pending)
    return layer


class _Lazy(ScapyPacket):
    """A layer some of whose fields are kept as decoded values (``_pending``) and made into their
    layers when first read (``getfieldval``, ``pkt.Field``); whatever reads the fields as a whole
    (``fields``, ``show``, ``==``, ``copy``) makes them all first."""

    def _make_pending(self, name: str, value: Any) -> Any:
        """The value field ``name`` holds for the decoded ``value`` (``_ABSENT``: none)."""
        raise NotImplementedError

    @property
    def fields(self) -> dict[str, Any]:
        pending = self.__dict__.get("_pending")
        if pending:
            for name in list(pending):
                self._materialize(name)
        fields: dict[str, Any] = _FIELDS_SLOT.__get__(self)
        return fields

    @fields.setter
    def fields(self, value: dict[str, Any]) -> None:
        _FIELDS_SLOT.__set__(self, value)

    def _materialize(self, name: str) -> None:
        pending = self.__dict__.get("_pending")
        if pending and name in pending:
            value = self._make_pending(name, pending.pop(name))
            if value is not _ABSENT:
                _FIELDS_SLOT.__get__(self)[name] = value

    def getfieldval(self, attr: str) -> Any:
        self._materialize(attr)
        fields = _FIELDS_SLOT.__get__(self)
        if attr in fields:
            return fields[attr]
        if attr in self.default_fields and attr not in self.overloaded_fields:
            return self.default_fields[attr]
        return super().getfieldval(attr)

    def getfield_and_val(self, attr: str) -> Any:
        self._materialize(attr)
        fields = _FIELDS_SLOT.__get__(self)
        if attr in fields:
            return self.fieldtype[attr], fields[attr]
        if attr in self.default_fields and attr not in self.overloaded_fields:
            return self.fieldtype[attr], self.default_fields[attr]
        return super().getfield_and_val(attr)


_ABSENT: Any = object()


class _Header(_Lazy):
    """One structure of the spec (a header or a piece of one), fields from its construct Struct.
    Made from given values (``from_value``), its fields that hold layers (flag words, queues,
    nested structures, element lists) are made when first read; made from the codec's decoded
    header (``from_decoded``), every field is."""

    construct: ClassVar[c.Struct]
    rules: ClassVar[tuple[_Rule, ...]] = ()
    _field_names: ClassVar[frozenset[str] | None] = None
    _all_names: ClassVar[frozenset[str] | None] = None  # every field's name, padding's included

    @classmethod
    def field_names(cls) -> frozenset[str]:
        if cls.__dict__.get("_field_names") is None:
            cls._field_names = frozenset(f.name for f in cls.fields_desc if not f.name.startswith("_"))
        return cls._field_names  # type: ignore[return-value]

    @classmethod
    def from_value(cls, value: Mapping[str, Any]) -> _Header:
        """The layer of a decoded (or given) mapping of fields, as ``packets.parse`` returns them."""
        kwargs: dict[str, Any] = {}
        pending: dict[str, Any] = {}
        for fld in cls.fields_desc:
            if fld.name not in value:
                continue
            v = value[fld.name]
            if isinstance(fld, _ChoiceField | _ListField | _LayerField) and (v or _is_flags_field(fld)):
                pending[fld.name] = v  # made into its layer when first read
            else:
                kwargs[fld.name] = v
        layer: _Header = _filled(cls, kwargs, pending)
        if pending:
            object.__setattr__(layer, "_decoded", value)
        return layer

    @classmethod
    def from_decoded(cls, value: Mapping[str, Any]) -> _Header:
        """The layer of a header as ``packets.parse`` decoded it, every field kept as decoded and
        made (``any2i``, or its layer) when first read: what ``from_value`` gives, field by field."""
        names = cls.__dict__.get("_all_names")
        if names is None:
            names = frozenset(f.name for f in cls.fields_desc)
            cls._all_names = names
        pending = dict(value)
        if not pending.keys() <= names:
            pending = {name: v for name, v in value.items() if name in names}
        layer: _Header = _filled(cls, {}, pending)
        object.__setattr__(layer, "_decoded", value)
        return layer

    def _make_pending(self, name: str, value: Any) -> Any:
        """What ``from_value`` makes of a field's decoded value: a Switch's case layer, a flag
        word's layer, a nested structure's or an element list's layers."""
        fld: Any = self.fieldtype[name]
        if isinstance(fld, _ChoiceField) and isinstance(value, Mapping):
            return _case_of(type(self), fld, self.__dict__["_decoded"], value).from_value(value)
        if _is_flags_field(fld):
            return fld.cls.from_value(0 if value is None else value)
        return fld.any2i(self, value)

    def to_fields(self, computed: Mapping[str, Mapping[str, int]] | None = None) -> Fields:
        """The fields as ``packets.build`` takes them; ``computed`` gives, per flag word, values for
        sub-fields left None (the headers around this one decide them)."""
        outer = computed or {}
        inner: dict[str, dict[str, int]] = {}
        ints: dict[str, int] = {}
        for target, sub, source, how in self.rules:
            value = self.getfieldval(source)
            if isinstance(how, dict):
                key = 0 if value is None else how.get(type(value), 0)
            else:
                key = 0 if value is None else how
            if sub is None:
                ints[target] = key
            else:
                inner.setdefault(target, {})[sub] = key
        out = Fields()
        for fld in self.fields_desc:
            name = fld.name
            v = self.getfieldval(name)
            if isinstance(fld, _ChoiceField):
                out[name] = None if v is None else v.to_fields()
            elif isinstance(fld, _ListField):
                out[name] = [e.to_fields() for e in v or ()]
            elif isinstance(fld, _LayerField):
                layer = v if v is not None else _make(fld.cls, {})
                if isinstance(layer, _Flags):
                    out[name] = layer.to_flags({**inner.get(name, {}), **outer.get(name, {})})
                else:
                    out[name] = layer.to_fields()
            elif v is None and name in ints:
                out[name] = ints[name]
            else:
                out[name] = v
        return out

    @classmethod
    def _parser(cls) -> HeaderParser:
        parser = cls.__dict__.get("_header_parser")
        if parser is None:
            parser = HeaderParser(cls.__name__, cls.construct)
            cls._header_parser = parser  # type: ignore[attr-defined]
        return parser

    def do_build(self) -> bytes:
        """The structure alone (as if it started at offset 0), by the codec's construct builder."""
        return self._parser().build(self.to_fields()) + self.do_build_payload()

    def do_dissect(self, s: bytes) -> bytes:
        io = BytesIO(s)
        value = self._parser().diagnose(io, {})
        self.fields.update(self.from_value(value).fields)
        return s[io.tell() :]


def _case_of(
    cls: type[_Header], fld: _ChoiceField, parent: Mapping[str, Any], value: Mapping[str, Any]
) -> type[_Header]:
    """The case of a Switch for a decoded value: the selector evaluated on the decoded parent,
    or (for a value its flags do not announce) the case whose fields it holds."""
    switch = _unwrap(_subcon_named(cls.construct, fld.name))
    try:
        case = switch.cases.get(switch.keyfunc(parent))
    except Exception:
        case = None
    if case is not None:
        return header_layer(case)
    return fld.choose(value)


def _unwrap(sc: Any) -> Any:
    while isinstance(sc, c.Renamed | c.Default):
        sc = sc.subcon
    return sc


def _subcon_named(struct: c.Struct, name: str) -> Any:
    for sc in struct.subcons:
        if sc.name == name:
            return sc
    raise KeyError(name)


# ---------------------------------------------------------------------------------------------
# Generating the layers from the construct definitions


def _construct_names() -> dict[int, str]:
    """Spec name of every Header defined in the codec's modules (by object identity)."""
    names: dict[int, str] = {}
    for module in (base, user, properties, optional, session, mqrr):
        for attr, obj in vars(module).items():
            if isinstance(obj, Header) and not attr.startswith("_"):
                names.setdefault(id(obj), "MSMQPing" if obj is session.PingPacket else attr)
    return names


def _defaults() -> dict[int, Mapping[str, Any]]:
    """The values the codec's header builders start from, by construct object."""
    ec = session.establish_connection(NULL_GUID)
    cp = session.connection_parameters()
    return {
        id(base.BaseHeader): base.default_base_header(),
        id(user.UserHeader): user.default_user_header(),
        id(properties.MessagePropertiesHeader): properties.default_message_properties_header(),
        id(optional.TransactionHeader): optional.default_transaction_header(),
        id(session.EstablishConnectionHeader): ec.EstablishConnectionHeader,
        id(session.ConnectionParametersHeader): cp.ConnectionParametersHeader,
        id(optional.SessionHeader): session.session_ack().SessionHeader,
        id(session.InternalHeader): cp.InternalHeader,
        id(session.PingPacket): session.ping(0, NULL_GUID),
    }


# Flag sub-fields the packet decides (the headers that follow, [MS-MQMQ] 2.2.19.1, 2.2.20,
# [MS-MQQB] 2.2.1): left None by default, computed by MSMQ.to_headers.
_PACKET_DECIDES: dict[str, set[str]] = {"BaseHeader": {"IN", "SH", "DH", "PR"}, "UserHeader": {"DM"}}
for _path in message._PRESENCE_RULES.values():
    _hdr, _, _sub = _path.partition(".Flags.")
    _PACKET_DECIDES.setdefault(_hdr, set()).add(_sub)
_INTERNAL_SELECTOR = ("InternalHeader", "PT")  # session._pt: InternalHeader.Flags.PT picks the header
_DEFAULT_PR = int(base.default_base_header().Flags) & 0x7  # BaseHeader.Flags.PR of default_base_header
_PACKET_DECIDES.setdefault(_INTERNAL_SELECTOR[0], set()).add(_INTERNAL_SELECTOR[1])

_NAMES: dict[int, str] = {}
_DEFAULTS: dict[int, Mapping[str, Any]] = {}
_LAYERS: dict[int, type[_Header]] = {}
_FLAG_LAYERS: dict[type[BitFlags], type[_Flags]] = {}


def _path_name(e: Any) -> str | None:
    """``this.X`` -> "X"."""
    if isinstance(e, cexpr.Path):
        parent = e._Path__parent
        if parent is not None and parent._Path__parent is None and parent._Path__name == "this":
            return str(e._Path__field)
    return None


def _flag_ref(e: Any, struct: c.Struct) -> tuple[str, str] | None:
    """``(this.F >> shift) & mask`` (``packets.user.flag``) -> (F, sub-field name)."""
    if not (isinstance(e, cexpr.BinExpr) and e.op is operator.and_ and isinstance(e.lhs, cexpr.BinExpr)):
        return None
    if e.lhs.op is not operator.rshift or not isinstance(e.lhs.rhs, int):
        return None
    word = _path_name(e.lhs.lhs)
    if word is None:
        return None
    flags = _unwrap(_subcon_named(struct, word))
    if not isinstance(flags, FlagsField):
        return None
    for name, shift, _ in flags.flags_cls._fields_:
        if shift == e.lhs.rhs:
            return word, name
    return None


def _rules(struct: c.Struct) -> list[_Rule]:
    """The fields a Switch or an If of ``struct`` reads, and how the value present decides them."""
    rules: list[_Rule] = []
    for sc in struct.subcons:
        inner = _unwrap(sc)
        if isinstance(inner, c.Switch):
            cases: dict[type[_Header], int] = {}
            for key, case in inner.cases.items():
                cases.setdefault(header_layer(case), key)
            ref = _flag_ref(inner.keyfunc, struct)
            if ref is not None:
                rules.append((ref[0], ref[1], sc.name, cases))
            elif (name := _path_name(inner.keyfunc)) is not None:
                rules.append((name, None, sc.name, cases))
        elif isinstance(inner, c.IfThenElse) and inner.elsesubcon is c.Pass:
            cond = inner.condfunc
            if isinstance(cond, cexpr.BinExpr) and cond.op is operator.eq and isinstance(cond.rhs, int):
                ref = _flag_ref(cond.lhs, struct)
                if ref is not None:
                    rules.append((ref[0], ref[1], sc.name, cond.rhs))
    return rules


def _flags_layer(flags_cls: type[BitFlags], defaults: Mapping[str, int | None]) -> type[_Flags]:
    layer = _FLAG_LAYERS.get(flags_cls)
    if layer is not None:
        return layer
    covered = 0
    for _, shift, width in flags_cls._fields_:
        covered |= ((1 << width) - 1) << shift
    rest = ((1 << flags_cls._width_) - 1) & ~covered
    fields: list[Any] = [IntField(name, defaults.get(name, 0), 4) for name, _, _ in flags_cls._fields_]
    if rest:
        fields.append(IntField("unused_bits", 0, 4))
    layer = type(
        flags_cls.__name__,
        (_Flags,),
        {"fields_desc": fields, "flags_cls": flags_cls, "rest_mask": rest, "__module__": __name__},
    )
    _FLAG_LAYERS[flags_cls] = layer
    return layer


_MISSING: Any = object()


def _scapy_field(struct: c.Struct, sc: Any, default: Any, decided: set[str]) -> Any:
    """The scapy field of one construct piece; ``default`` is the header builder's value
    (``_MISSING``: it has none; None: the codec computes it)."""
    name = sc.name
    wrapped = sc.subcon if isinstance(sc, c.Renamed) else sc
    computed = (
        isinstance(wrapped, c.Default) and callable(wrapped.value) and not isinstance(wrapped.value, cexpr.ExprMixin)
    )
    if default is _MISSING:
        default = wrapped.value if isinstance(wrapped, c.Default) and not computed else None
    elif default is None:
        computed = True
    inner = _unwrap(sc)
    if isinstance(inner, c.IfThenElse):
        inner = _unwrap(inner.thensubcon)
    if isinstance(inner, c.FormatField) and inner.fmtstr[0] == "<" and inner.fmtstr[1] in "BHILQ":
        return IntField(name, None if computed else (0 if default is None else int(default)), inner.length)
    if isinstance(inner, FlagsField):
        word = int(default or 0)
        subs: dict[str, int | None] = {}
        for sub, shift, width in inner.flags_cls._fields_:
            subs[sub] = None if sub in decided else (word >> shift) & ((1 << width) - 1)
        layer = _flags_layer(inner.flags_cls, subs)
        return _LayerField(name, _make(layer, subs), layer)
    if isinstance(inner, GuidConstruct):
        return GuidField(name, default)
    if isinstance(inner, Pad):
        return BytesField(name, None)
    if isinstance(inner, Data):
        return BytesField(name, None if computed else (b"" if default is None else bytes(default)))
    if isinstance(inner, Utf16z) or type(inner).__name__ == "Utf16Terminated":
        return TextField(name, default)
    if isinstance(inner, c.Switch):
        cases = {key: header_layer(case) for key, case in inner.cases.items()}
        return _ChoiceField(name, cases)
    if isinstance(inner, ElementList):
        element = header_layer(inner.subcon)
        return _ListField(name, [], element)
    if isinstance(inner, c.Struct):
        struct_layer = header_layer(inner)
        value = struct_layer.from_value(default) if isinstance(default, Mapping) else _make(struct_layer, {})
        return _LayerField(name, value, struct_layer)
    raise TypeError(f"no scapy field for {name} ({type(inner).__name__})")


def header_layer(struct: Any) -> type[_Header]:
    """The scapy layer of a construct Struct of the codec (generated once)."""
    layer = _LAYERS.get(id(struct))
    if layer is not None:
        return layer
    if not _NAMES:
        _NAMES.update(_construct_names())
        _DEFAULTS.update(_defaults())
    name = _NAMES.get(id(struct), f"Struct{len(_LAYERS)}")
    defaults = _DEFAULTS.get(id(struct), {})
    rules = _rules(struct)
    decided = {sub for _, sub, _, _ in rules if sub is not None} | _PACKET_DECIDES.get(name, set())
    fields = []
    for sc in struct.subcons:
        if not sc.name or _unwrap(sc) is c.Tell:
            continue
        fields.append(_scapy_field(struct, sc, defaults.get(sc.name, _MISSING), decided))
    int_rules = {target for target, sub, _, _ in rules if sub is None}
    for fld in fields:
        if fld.name in int_rules:
            fld.default = None
    layer = type(name, (_Header,), {"fields_desc": fields, "construct": struct, "__module__": __name__})
    layer.rules = tuple(rules)
    _LAYERS[id(struct)] = layer
    return layer


_USER_NAMES = tuple(slot.name for slot in message.USER_MESSAGE_LAYOUT)
_INTERNAL_NAMES = tuple(slot.name for slot in session.INTERNAL_LAYOUT)
HEADER_NAMES: tuple[str, ...] = tuple(dict.fromkeys(("BaseHeader", *_USER_NAMES, *_INTERNAL_NAMES)))
_INTERNAL_ONLY = frozenset(_INTERNAL_NAMES) - frozenset(_USER_NAMES)
_CONSTRUCTS: dict[str, Any] = {
    "BaseHeader": base.BaseHeader,
    **{slot.name: slot.parser.header for slot in (*message.USER_MESSAGE_LAYOUT, *session.INTERNAL_LAYOUT)},
}
HEADER_LAYERS: dict[str, type[_Header]] = {name: header_layer(_CONSTRUCTS[name]) for name in HEADER_NAMES}
"""The layer of every header an MSMQ packet can carry, by spec name."""


def _internal_pt(present: Iterable[str]) -> int:
    """InternalHeader.Flags.PT announcing exactly the internal headers ``present`` (0 if none does)."""
    wanted = set(present)
    flags_cls = session.InternalHeaderFlags
    for pt in range(16):
        fake = Container(InternalHeader=Container(Flags=flags_cls.make(PT=pt)))
        if all(slot.present(fake) == (slot.name in wanted) for slot in session.INTERNAL_LAYOUT[1:]):
            return pt
    return 0


def _complete_length(data: bytes) -> int | None:
    """Wire length of the packet at the start of ``data`` if it is all there."""
    if len(data) < BASE_HEADER_SIZE:
        return None
    try:
        n = wire_length(data[:BASE_HEADER_SIZE])
    except PacketError:
        return None
    return n if n <= len(data) else None


class _Wire(_Lazy):
    """What MSMQ and MSMQPing share: dissection keeps the codec's Packet and the bytes; an unchanged
    dissected layer builds back its own bytes; everything else is built by the codec."""

    decoded: Packet | None = None
    _wire: bytes | None = None
    _snapshot: dict[str, Any] | None = None

    def __init__(
        self,
        _pkt: bytes = b"",
        post_transform: Any = None,
        _internal: int = 0,
        _underlayer: Any = None,
        _parent: Any = None,
        stop_dissection_after: Any = None,
        **fields: Any,
    ) -> None:
        """scapy's constructor; dissecting bytes (no field given) sets its attributes directly
        (:func:`_init_layer`) and dissects as it does."""
        if fields or post_transform is not None or not _pkt:
            super().__init__(_pkt, post_transform, _internal, _underlayer, _parent, stop_dissection_after, **fields)
            return
        if isinstance(_pkt, bytearray):
            _pkt = bytes(_pkt)
        stamp = 0.0 if _internal else time.time()
        parts = _PARTS.get(type(self)) or _class_parts(type(self))
        _init_layer(self, parts, _pkt, stamp, _underlayer, _parent, stop_dissection_after)
        self.dissect(_pkt)
        if not _internal:
            self.dissection_done(self)

    def _remember(self, data: bytes, decoded: Packet | None) -> None:
        object.__setattr__(self, "_wire", data)
        object.__setattr__(self, "decoded", decoded)
        object.__setattr__(self, "_snapshot", {f.name: self._copy_value(f.name) for f in self.fields_desc})

    def _copy_value(self, name: str) -> Any:
        v = self.fields.get(name)
        if isinstance(v, ScapyPacket):
            return v.copy()
        if isinstance(v, list):
            return [e.copy() if isinstance(e, ScapyPacket) else e for e in v]
        return v

    def _unchanged(self) -> bool:
        snap = self._snapshot
        return snap is not None and all(self.fields.get(k) == v for k, v in snap.items())

    def _codec_bytes(self) -> bytes:
        raise NotImplementedError

    def self_build(self) -> bytes:
        if self._wire is not None and self._unchanged():
            return self._wire
        return self._codec_bytes()

    def do_build(self) -> bytes:
        return self.self_build() + self.do_build_payload()

    _KEPT = ("decoded", "_wire", "_snapshot")

    def _kept(self, clone: Any) -> Any:
        """``clone`` given this layer's decoded packet, received bytes and snapshot."""
        for attr in self._KEPT:
            if attr in self.__dict__:
                object.__setattr__(clone, attr, self.__dict__[attr])
        return clone

    def copy(self) -> Any:
        clone = super().copy()
        return self._kept(clone)

    def clone_with(self, payload: Any = None, **kargs: Any) -> Any:
        """scapy builds an implicit packet from clones (``Packet.__iter__``): they keep the bytes
        received, so an unchanged dissected layer still builds back exactly those bytes."""
        clone = super().clone_with(payload=payload, **kargs)
        return self._kept(clone)

    @property
    def violations(self) -> list[Violation]:
        """What the codec finds in this packet (the dissected one's, else the built bytes')."""
        if self.decoded is not None and self._unchanged():
            return list(self.decoded.violations)
        return list(self._parse_built().violations)

    @property
    def kind(self) -> str:
        if self.decoded is not None and self._unchanged():
            return str(self.decoded.kind)
        try:
            return str(self._parse_built().kind)
        except Exception:
            return "Unknown"

    def _parse_built(self) -> Packet:
        raise NotImplementedError

    def mysummary(self) -> str:
        if self.decoded is None and self._wire is not None:
            return f"{self.name} (incomplete, {len(self._wire)} bytes)"
        try:
            decoded = self.decoded if self.decoded is not None and self._unchanged() else self._parse_built()
        except Exception as e:
            return f"{self.name} (unbuildable: {e})"
        bad = f", {len(decoded.violations)} violations" if decoded.violations else ""
        return f"{self.name} {decoded.kind} ({decoded.size} bytes{bad})"




def _header_layer_of(name: str, value: Any) -> Any:
    """The layer of a decoded header, or None when it was decoded only in part (its bytes then
    stay as received)."""
    try:
        return HEADER_LAYERS[name].from_decoded(value)
    except Exception:
        return None


class MSMQ(_Wire):
    """One packet of an MSMQ binary session ([MS-MQMQ] 2.2.19-2.2.20, [MS-MQQB] 2.2): one field
    per header, None when absent (see the module docstring for what a field left None means)."""

    name = "MSMQ"
    fields_desc: ClassVar[list[Any]] = [_LayerField(n, None, HEADER_LAYERS[n]) for n in HEADER_NAMES]

    @classmethod
    def from_headers(cls, headers: Packet | Mapping[str, Any]) -> MSMQ:
        """The layer of a decoded Packet or a mapping of headers by spec name (``packets.build``'s
        input): every field as given."""
        given: Mapping[str, Any] = headers.headers if isinstance(headers, Packet) else headers
        unknown = [n for n in given if n not in HEADER_LAYERS and not str(n).startswith("_")]
        if unknown:
            raise PacketError(unknown[0], -1, "not a header of an MSMQ session packet")
        layers = {n: HEADER_LAYERS[n].from_value(v) for n, v in given.items() if v is not None and n in HEADER_LAYERS}
        return _make(cls, layers)

    def is_internal(self) -> bool:
        """Whether this is an internal packet ([MS-MQQB] 2.2.1): BaseHeader.Flags.IN when given,
        else whether an internal header (or only a SessionHeader: a SessionAck) is present."""
        base_layer = self.getfieldval("BaseHeader")
        flags = base_layer.getfieldval("Flags") if base_layer is not None else None
        given_in = flags.getfieldval("IN") if flags is not None else None
        if given_in is not None:
            return bool(given_in)
        present = {n for n in HEADER_NAMES if self.getfieldval(n) is not None} - {"BaseHeader"}
        return bool(present & _INTERNAL_ONLY) or present == {"SessionHeader"}

    def to_headers(self) -> Container:
        """The headers as ``packets.build`` takes them, with what was left None decided."""
        internal = self.is_internal()
        names = _INTERNAL_NAMES if internal else _USER_NAMES
        given = {n: v for n in HEADER_NAMES if (v := self.getfieldval(n)) is not None}
        required = ("InternalHeader",) if internal else ("UserHeader", "MessagePropertiesHeader")
        for name in required:
            if name not in given:
                given[name] = HEADER_LAYERS[name]()
        present = {n for n in given if n != "BaseHeader"}
        computed: dict[str, dict[str, int]] = {n: {} for n in HEADER_NAMES}
        base_flags = computed["BaseHeader"]
        base_flags["IN"] = int(internal)
        if internal:
            base_flags["SH"] = int("SessionHeader" in present)
            header, sub = _INTERNAL_SELECTOR
            computed[header][sub] = _internal_pt(present & set(_INTERNAL_NAMES))
        else:
            for slot_name, path in message._PRESENCE_RULES.items():
                header, _, sub = path.partition(".Flags.")
                computed[header][sub] = computed[header].get(sub, 0) | int(slot_name in present)
            transactional = "TransactionHeader" in present
            computed["UserHeader"]["DM"] = int(transactional)
            base_flags["PR"] = 0 if transactional else _DEFAULT_PR
        base_flags.setdefault("PR", _DEFAULT_PR)
        headers = Container()
        headers.BaseHeader = given.get("BaseHeader", HEADER_LAYERS["BaseHeader"]()).to_fields({"Flags": base_flags})
        for name in (*names, *(n for n in given if n not in names and n != "BaseHeader")):
            if name in given:
                headers[name] = given[name].to_fields({"Flags": computed.get(name, {})})
        return headers

    def _codec_bytes(self) -> bytes:
        return build(self.to_headers())

    def _show_or_dump(
        self,
        dump: bool = False,
        indent: int = 3,
        lvl: str = "",
        label_lvl: str = "",
        first_call: bool = True,
    ) -> str | None:
        """scapy's ``show()`` without the lines of the headers the packet does not carry."""
        text = super()._show_or_dump(True, indent, lvl, label_lvl, False) or ""
        absent = {f"{n}=None" for n in HEADER_NAMES}
        kept = [line for line in text.split("\n") if "|" in line or line.replace(" ", "") not in absent]
        text = "\n".join(kept)
        if first_call and not dump:
            print(text)
            return None
        return text

    def _parse_built(self) -> Packet:
        return parse(self.self_build(), strict=False)

    # -- lazy dissection ----------------------------------------------------------------------
    # A dissected MSMQ keeps the codec's decoded headers and turns a header into its layer when
    # it is first read (``pkt.UserHeader``, ``getfieldval``); anything that reads the fields as a
    # whole (``fields``, ``show``, ``==``, ``copy``) turns every header into its layer first.

    _KEPT = ("decoded", "_wire", "_expected")

    def _make_pending(self, name: str, value: Any) -> Any:
        layer = _header_layer_of(name, value)
        return _ABSENT if layer is None else layer

    def _expected_layer(self, name: str) -> Any:
        """The layer ``name`` as dissected (made once, apart from the one the fields hold)."""
        expected: dict[str, Any] = self.__dict__.setdefault("_expected", {})
        if name not in expected:
            value = self.decoded.headers.get(name) if self.decoded is not None else None
            expected[name] = None if value is None else _header_layer_of(name, value)
        return expected[name]

    def _unchanged(self) -> bool:
        if self._wire is None:
            return False
        pending = self.__dict__.get("_pending") or ()
        fields = _FIELDS_SLOT.__get__(self)
        return all(
            name in pending or fields.get(name) == self._expected_layer(name) for name in HEADER_NAMES
        )

    def do_dissect(self, s: bytes) -> bytes:
        n = _complete_length(s)
        if n is None:
            object.__setattr__(self, "_wire", s)
            return b""
        data = s[:n]
        decoded = parse(data, strict=False)
        pending = {name: v for name, v in decoded.headers.items() if v is not None and name in HEADER_LAYERS}
        object.__setattr__(self, "_wire", data)
        object.__setattr__(self, "decoded", decoded)
        object.__setattr__(self, "_pending", pending)
        return s[n:]

    def guess_payload_class(self, payload: bytes) -> type[ScapyPacket]:
        return MSMQ if len(payload) >= BASE_HEADER_SIZE else Raw

    @classmethod
    def tcp_reassemble(cls, data: bytes, metadata: dict[str, Any], session: dict[str, Any]) -> Any:
        """scapy's ``TCPSession`` hook: a layer once the first packet of ``data`` is whole (those
        after it in the same data are chained; ``packets.scapy_stream`` never loses a partial one)."""
        if _complete_length(data) is None:
            return None
        return cls(data)


_PingLayer = header_layer(session.PingPacket)


class MSMQPing(_Wire):
    """A Ping Packet on UDP port 3527 ([MS-MQQB] 2.1.2, 2.2.7); its fields are the packet's."""

    name = "MSMQ Ping"
    fields_desc: ClassVar[list[Any]] = list(_PingLayer.fields_desc)

    def to_fields(self) -> Fields:
        return _PingLayer(**{f.name: self.getfieldval(f.name) for f in self.fields_desc}).to_fields()

    def _codec_bytes(self) -> bytes:
        return build_ping(self.to_fields())

    def _parse_built(self) -> Packet:
        return parse_ping(self._codec_bytes(), strict=False)

    def do_dissect(self, s: bytes) -> bytes:
        decoded = parse_ping(s, strict=False)
        ping = decoded.headers.get("Ping")
        if ping is not None:
            self.fields.update(_PingLayer.from_value(ping).fields)
        self._remember(s, decoded)
        return b""


for _layer in (*HEADER_LAYERS.values(), *_LAYERS.values(), *_FLAG_LAYERS.values()):
    globals().setdefault(_layer.__name__, _layer)

bind_layers(TCP, MSMQ, dport=MSMQ_PORT)
bind_layers(TCP, MSMQ, sport=MSMQ_PORT)
bind_layers(UDP, MSMQPing, dport=PING_PORT)
bind_layers(UDP, MSMQPing, sport=PING_PORT)
