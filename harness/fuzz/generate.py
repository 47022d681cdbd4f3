"""Structure-aware packet generation: conformant packets of every kind, then one field mutated by type.

The packets are built by the codec from the construct definitions ([MS-MQMQ] 2.2.19-2.2.20,
[MS-MQRR] 2.2.5, [MS-MQQB] 2.2.2-2.2.6): an EstablishConnection, a ConnectionParameters, a
SessionAck, an OrderAck, a FinalAck and UserMessage Packets carrying each optional header
(TransactionHeader 2.2.20.5, SecurityHeader 2.2.20.6, DebugHeader 2.2.20.8, SoapHeader 2.2.20.7,
MultiQueueFormatHeader 2.2.20.1 with its nested MQFAddressHeader lists, a piggy-backed
SessionHeader 2.2.20.4; the [MS-MQRR] 2.2.5.1.2 SRMP headers, 2.2.5.2 ExtensionHeader and the
headers it announces), all valid (but the SRMP one, see ``_with_srmp``) and addressed to the target
of the session they are sent on.  A session kind with no template here is sent as its neutral
sample (``packets.session.SAMPLES``), mutated like every other packet.
A :class:`Mutation` then changes one field, found by spec path in the decoded packet and by
offset in its bytes (``packets.field_offset``), according to its type as the definitions give it:
lengths, sizes and counts at zero, one beyond, at the packet's length and at their widths' limits;
flag words with the bits the spec leaves unknown and with every bit set; GUIDs null and all-ones;
strings at their maximum length, beyond it, and with an unpaired surrogate (the packet rebuilt
with its lengths computed); and ``as-built``: the packet unchanged, valid field by field, sent in
a state where it is wrong.  Everything is drawn from a ``random.Random`` the run's seed starts.
"""

from __future__ import annotations

import copy
import functools
import random
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from construct import Container, ListContainer

import packets
from harness.session import DeliveryClass, user_message
from packets import GUID, NULL_GUID, BitFlags, mqrr
from packets import session as sp
from packets.base import INFINITE
from packets.fields import encode_utf16z
from packets.layout import SESSION_KINDS, PacketKind
from packets.optional import (
    MQF_ADMIN_ID,
    MQF_DESTINATION_ID,
    MQF_RESPONSE_ID,
    MQF_SIGNATURE_ID,
    DebugHeaderFlags,
    SecurityHeaderFlags,
)
from packets.properties import MAX_LABEL_LENGTH
from packets.user import UserHeaderFlags

__all__ = [
    "KINDS",
    "Context",
    "Mutation",
    "Template",
    "leaves",
    "mutations_for",
    "template",
    "templates_of",
]

#: The packet kinds of an [MS-MQQB] session (3.1.5.1.1), in the order of 2.2 (``packets.layout.SESSION_KINDS``):
#: the pairs a run visits and the coverage table's columns.  Each has its templates below, or
#: the one made of its sample (:func:`templates_of`).
KINDS: tuple[str, ...] = tuple(k.value for k in SESSION_KINDS)
AS_BUILT = "as-built"
LENGTH_WORDS = ("Length", "Size", "Count")


@dataclass
class Context:
    """What a session knows when it builds its next packet: who talks to whom, the values it
    announced and its counters ([MS-MQQB] 3.1.1.3.1)."""

    client_guid: GUID
    server_guid: GUID = NULL_GUID
    queue_id: int = 1
    tx_queue_id: int = 1
    recoverable_ack_timeout: int = sp.RECOVERABLE_ACK_TIMEOUT_RANGE[0] * 20  # 10 s
    ack_timeout: int = sp.ACK_TIMEOUT_RANGE[0]  # 20 s, the smallest valid
    window: int = 1  # the acceptor acknowledges each UserMessage at once (half the window, at least one)
    sent_user: int = 0
    received_user: int = 0
    tx_number: int = 0
    recoverable_sent: bool = False  # a recoverable or transactional UserMessage went out on the session
    time_stamp: int = 0  # the EstablishConnection request's TimeStamp, echoed in the response (3.1.5.3.1)
    message_ids: Iterator[int] = field(default_factory=lambda: iter(range(1, 1 << 31)))


@dataclass(frozen=True)
class Template:
    """A conformant packet of ``kind`` (a UserMessage ``variant`` names the optional headers it carries)."""

    kind: str
    variant: str
    build: Callable[[Context], Container]
    to: str = "both"  # who it is sent to: "acceptor" (a request), "initiator" (a response), "both"

    @property
    def name(self) -> str:
        return self.kind if self.variant == "" else f"{self.kind}[{self.variant}]"


def _user(ctx: Context, delivery: DeliveryClass = DeliveryClass.express, body: bytes = b"fuzz") -> Container:
    h = user_message(
        ctx.client_guid,
        ctx.server_guid,
        body,
        label="fuzz",
        queue_id=ctx.tx_queue_id if delivery is DeliveryClass.transactional else ctx.queue_id,
        message_id=next(ctx.message_ids),
        delivery=delivery,
    )
    h.BaseHeader.TimeToReachQueue = INFINITE  # never expires: a case made of it replays any day
    if delivery is DeliveryClass.transactional:
        th = h.TransactionHeader
        th.TxSequenceID = Container(Ordinal=1, TimeStamp=0x10)
        th.TxSequenceNumber = ctx.tx_number + 1
        th.PreviousTxSequenceNumber = ctx.tx_number
    return h


def _set_user_flags(h: Container, **bits: int) -> None:
    h.UserHeader.Flags = UserHeaderFlags.make(int(h.UserHeader.Flags), **bits)


def _with_security(ctx: Context) -> Container:
    h = _user(ctx)
    _set_user_flags(h, SH=1)
    h.SecurityHeader = Container(
        Flags=SecurityHeaderFlags.make(AI=1),
        SenderIdSize=0,
        EncryptionKeySize=0,
        SignatureSize=4,
        SenderCertSize=0,
        ProviderInfoSize=0,
        SecurityData=Container(
            SecurityID=b"", EncryptionKey=b"", Signature=b"\x01\x02\x03\x04", SenderCert=b"", ProviderInfo=b""
        ),
    )
    return _ordered(h)


def _with_debug(ctx: Context) -> Container:
    h = _user(ctx)
    h.BaseHeader.Flags = type(h.BaseHeader.Flags).make(int(h.BaseHeader.Flags), DH=1)
    h.DebugHeader = Container(Flags=DebugHeaderFlags.make(QT=1), Reserved=0, QueueIdentifier=GUID(bytes(range(16))))
    return _ordered(h)


def _with_soap(ctx: Context) -> Container:
    h = _user(ctx)
    _set_user_flags(h, HH=1)
    h.SoapHeader = Container(
        HeaderSectionID=0x0320,
        Reserved=0,
        HeaderDataLength=None,
        Header="<h/>",
        BodySectionID=0x0384,
        Reserved1=0,
        BodyDataLength=None,
        Body="<b/>",
    )
    return _ordered(h)


def _mqf_address(header_id: int, elements: list[Container]) -> Container:
    return Container(
        HeaderSize=None, HeaderID=header_id, Reserved=0, ElementCount=None, FormatNameList=ListContainer(elements)
    )


def _with_mqf(ctx: Context) -> Container:
    h = _user(ctx)
    _set_user_flags(h, MQ=1)
    direct = Container(FormatType=3, FormatName=Container(DirectFormatName="TCP:127.0.0.1\\private$\\fuzz"))
    private = Container(
        FormatType=2, FormatName=Container(SourceQueueManager=ctx.server_guid, PrivateQueueIdentifier=ctx.queue_id)
    )
    h.MultiQueueFormatHeader = Container(
        Destination=_mqf_address(MQF_DESTINATION_ID, [private, direct]),
        Administration=_mqf_address(MQF_ADMIN_ID, []),
        Response=_mqf_address(MQF_RESPONSE_ID, []),
        Signature=Container(ID=MQF_SIGNATURE_ID, Reserved=0, Size=None, Signature=b""),
    )
    return _ordered(h)


def _with_session_header(ctx: Context) -> Container:
    h = _user(ctx)
    h.BaseHeader.Flags = type(h.BaseHeader.Flags).make(int(h.BaseHeader.Flags), SH=1)
    h.SessionHeader = Container(
        AckSequenceNumber=ctx.received_user & 0xFFFF,
        RecoverableMsgAckSeqNumber=0,
        RecoverableMsgAckFlags=0,
        UserMsgSequenceNumber=(ctx.sent_user + 1) & 0xFFFF,
        RecoverableMsgSeqNumber=0,
        WindowSize=ctx.window,
        Reserved=0,
    )
    return _ordered(h)


def _with_srmp(ctx: Context) -> Container:
    """An SRMP Message ([MS-MQRR] 2.2.5.1.2): UserHeader.Flags.AH with an SRMPEnvelopeHeader and a
    CompoundMessageHeader, as the CVE-2023-21554 scanners send it; [MS-MQMQ] 2.2.19.2 says AH MUST
    NOT be set when sent, so a conformant acceptor may discard it (3.1.5.1.3): it is the one
    template that is not conformant as built."""
    h = _user(ctx)
    _set_user_flags(h, AH=1)
    body = b"<b>fuzz</b>"
    h.SRMPEnvelopeHeader = Container(HeaderId=0x0190, Reserved=0, DataLength=None, Data="<se:Envelope/>")
    h.CompoundMessageHeader = Container(
        HeaderId=0x01F4, Reserved=0, HTTPBodySize=None, MsgBodySize=len(body), MsgBodyOffset=0, Data=body
    )
    return _ordered(h)


def _with_extension(ctx: Context) -> Container:
    """A UserMessage followed by the [MS-MQRR] 2.2.5.2 ExtensionHeader and the SubqueueHeader and
    ExtendedAddressHeader its Flags announce (2.2.5.3, 2.2.5.5)."""
    h = _user(ctx)
    h.ExtensionHeader = Container(
        HeaderSize=12, RemainingHeadersSize=None, Flags=mqrr.ExtensionHeaderFlags.make(SQ=1, EA=1), Reserved=bytes(3)
    )
    h.SubqueueHeader = Container(
        HeaderSize=148, TM=0, AcknowledgementClass=0, Reserved=0, AbortCounter=0, MoveCounter=0, LastMoveTime=0,
        SubqueueName=mqrr.fixed_utf16("fuzz"), TargetSubqueueName=bytes(64),
    )  # fmt: skip
    h.ExtendedAddressHeader = Container(
        HeaderSize=28, AddressLength=4, AddressType=1, AddressScope=0, Address=bytes([127, 0, 0, 1]) + bytes(12)
    )
    return _ordered(h)


_ORDER = (  # [MS-MQMQ] 2.2.20, [MS-MQRR] 2.2.5
    "BaseHeader", "UserHeader", "TransactionHeader", "SecurityHeader", "MessagePropertiesHeader", "DebugHeader",
    "SRMPEnvelopeHeader", "CompoundMessageHeader", "SoapHeader", "MultiQueueFormatHeader", "SessionHeader",
    "ExtensionHeader", "SubqueueHeader", "DeadLetterHeader", "ExtendedAddressHeader",
)  # fmt: skip


def _ordered(h: Container) -> Container:
    return Container({k: h[k] for k in _ORDER if k in h})


def _transactional(ctx: Context) -> Container:
    return _user(ctx, DeliveryClass.transactional)


def _ack(kind: str) -> Callable[[Context], Container]:
    def build(ctx: Context) -> Container:
        if kind == "OrderAck":
            return sp.order_ack(
                1,
                max(1, ctx.tx_number),
                source_qm=ctx.client_guid,
                destination_qm=ctx.server_guid,
                message_id=next(ctx.message_ids),
            )
        return sp.final_ack(
            1,
            1,
            0,
            ctx.server_guid,
            1,
            source_qm=ctx.client_guid,
            destination_qm=ctx.server_guid,
            message_id=next(ctx.message_ids),
        )

    return build


_TEMPLATES = (
    Template(
        "EstablishConnection",
        "",
        lambda ctx: sp.establish_connection(ctx.client_guid, NULL_GUID, 0x12345678),
        "acceptor",
    ),
    Template(
        "ConnectionParameters",
        "",
        lambda ctx: sp.connection_parameters(ctx.recoverable_ack_timeout, ctx.ack_timeout, ctx.window),
        "acceptor",
    ),
    # the responses of [MS-MQQB] 3.1.5.3.1 and 3.1.5.4.1 to a sender (client_guid: the fuzzer's
    # queue manager; server_guid: the sender's, its EstablishConnection request's ClientGuid)
    Template(
        "EstablishConnection",
        "response",
        lambda ctx: sp.establish_connection(ctx.server_guid, ctx.client_guid, ctx.time_stamp, response=True),
        "initiator",
    ),
    Template(
        "ConnectionParameters",
        "response",
        lambda ctx: sp.connection_parameters(ctx.recoverable_ack_timeout, ctx.ack_timeout, ctx.window),
        "initiator",
    ),
    Template(
        "SessionAck",
        "",
        lambda ctx: sp.session_ack(
            ack_sequence_number=ctx.received_user & 0xFFFF,
            user_msg_sequence_number=ctx.sent_user & 0xFFFF,
            window_size=ctx.window,
        ),
    ),
    Template("UserMessage", "express", _user),
    Template("UserMessage", "recoverable", lambda ctx: _user(ctx, DeliveryClass.recoverable)),
    Template("UserMessage", "transactional", _transactional),
    Template("UserMessage", "security", _with_security),
    Template("UserMessage", "debug", _with_debug),
    Template("UserMessage", "soap", _with_soap),
    Template("UserMessage", "mqf", _with_mqf),
    Template("UserMessage", "session-header", _with_session_header),
    Template("UserMessage", "srmp", _with_srmp),
    Template("UserMessage", "extension", _with_extension),
    Template("OrderAck", "", _ack("OrderAck")),
    Template("FinalAck", "", _ack("FinalAck")),
)


@functools.cache
def _sample_template(kind: PacketKind) -> Template:
    """The template of a session kind with none above: its sample (``packets.session.SAMPLES``,
    built with neutral values, not the session's), sent to either end; its mutations come from
    its decoded fields like every template's (:func:`mutations_for`)."""
    sample = sp.SAMPLES[kind]
    return Template(kind.value, "", lambda _ctx: sample())


def _templates_or_sample(kind: str) -> list[Template]:
    """The templates above of ``kind``, or the one made of its sample when there is none."""
    own = [t for t in _TEMPLATES if t.kind == kind]
    if own or kind not in sp.SAMPLES:
        return own
    return [_sample_template(PacketKind(kind))]


def templates_of(kind: str, to: str = "acceptor") -> list[Template]:
    """The templates of ``kind`` sent to an ``acceptor`` or to an ``initiator`` (its sample's for a
    kind with none of its own)."""
    return [t for t in _templates_or_sample(kind) if t.to in (to, "both")]


def template(name: str) -> Template:
    for t in _TEMPLATES:
        if t.name == name:
            return t
    for t in _templates_or_sample(name):  # a sample's template is named after its kind
        if t.name == name:
            return t
    raise KeyError(f"no packet template {name!r}")


# -- fields and mutations ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutation:
    """One change to a conformant packet: ``field`` (a spec path; "" for none) and ``op``."""

    template: str
    field: str
    op: str

    @property
    def label(self) -> str:
        return self.op if not self.field else f"{self.field} {self.op}"

    def apply(self, headers: Container, rng: random.Random) -> bytes:
        """The bytes of ``headers`` (a conformant packet) with this mutation; ValueError when it
        does not apply to them."""
        data = packets.build(headers)
        if self.op == AS_BUILT:
            return data
        kind = template(self.template).kind
        decoded = packets.parse(data, strict=False)
        try:
            value = _get(decoded.headers, self.field)
        except (KeyError, IndexError, TypeError, AttributeError):
            raise ValueError(f"{self.field}: not in the packet") from None
        if isinstance(value, str) or self.op in _STRING_OPS:
            return _rebuilt(decoded.headers, self.field, _string_value(self.field, self.op))
        where = packets.field_offset(data, self.field, kind)
        if where is None:
            raise ValueError(f"{self.field}: not in the packet")
        start, end = where
        out = bytearray(data)
        if isinstance(value, GUID | bytes | bytearray):
            width = 16 if isinstance(value, GUID) else min(end - start, len(value))
            if width == 0:
                raise ValueError(f"{self.field}: empty")
            out[start : start + width] = _bytes_value(self.op, width, rng)
            return bytes(out)
        width = _width(end - start, int(value))
        out[start : start + width] = _int_value(self.op, width, int(value), value, len(data), rng)
        return bytes(out)


_STRING_OPS = ("max-length", "beyond-max", "unpaired-surrogate", "empty")


def _get(headers: Mapping[str, Any], path: str) -> Any:
    obj: Any = headers
    for part in path.split("."):
        obj = obj[int(part)] if part.isdigit() else obj[part]
    return obj


def _width(span: int, value: int) -> int:
    for w in (4, 2, 1):
        if w <= span and value < 1 << (8 * w):
            return w
    raise ValueError("no integer field here")


def _int_value(op: str, width: int, value: int, current: Any, packet_length: int, rng: random.Random) -> bytes:
    top = (1 << (8 * width)) - 1
    if op == "zero":
        v = 0
    elif op == "max":
        v = top
    elif op == "top-bit":
        v = 1 << (8 * width - 1)
    elif op == "one-beyond":
        v = value + 1
    elif op == "one-below":
        v = value - 1
    elif op == "packet-length":
        v = packet_length
    elif op == "beyond-packet":
        v = packet_length * 4 + 1
    elif op == "unknown-bits" and isinstance(current, BitFlags):
        v = value | (top & _unknown_bits(current))
    elif op == "flip-bit":
        v = value ^ (1 << rng.randrange(8 * width))
    else:
        raise ValueError(op)
    return (v & top).to_bytes(width, "little")


def _unknown_bits(flags: BitFlags) -> int:
    """The bits of a flag word its definition names no field for (the spec leaves them unused)."""
    known = 0
    for _name, shift, bits in type(flags)._fields_:
        known |= ((1 << bits) - 1) << shift
    return ((1 << type(flags)._width_) - 1) & ~known


def _bytes_value(op: str, width: int, rng: random.Random) -> bytes:
    if op == "null":
        return bytes(width)
    if op == "all-ones":
        return b"\xff" * width
    if op == "random":
        return rng.randbytes(width)
    raise ValueError(op)


def _string_value(path: str, op: str) -> str:
    limit = MAX_LABEL_LENGTH - 1 if path.endswith("Label") else 255  # WCHARs before the NUL
    if op == "max-length":
        return "M" * limit
    if op == "beyond-max":
        return "B" * (limit + 1 if path.endswith("Label") else 4096)
    if op == "unpaired-surrogate":
        return "a\ud800b"
    if op == "empty":
        return ""
    raise ValueError(op)


def _rebuilt(headers: Container, path: str, text: str) -> bytes:
    """The packet with the string at ``path`` replaced, every length of its header and the
    BaseHeader.PacketSize computed again by the codec."""
    h = copy.deepcopy(headers)
    parts = path.split(".")
    parent: Any = _get(h, ".".join(parts[:-1])) if len(parts) > 1 else h
    parent[parts[-1]] = text
    _computed(h[parts[0]])
    if isinstance(parent, dict) and "Count" in parent:
        parent["Count"] = None
    h.BaseHeader.PacketSize = None
    try:
        encode_utf16z(text)
        return packets.build(h)
    except Exception as e:  # the codec refuses it: an unpaired surrogate, written as such by hand
        if "surrogate" not in str(e) and "encode" not in str(e):
            raise ValueError(str(e)) from None
        marker = "a\ud800b"
        parent[parts[-1]] = "aXb"
        data = packets.build(h)
        at = data.find("aXb".encode("utf-16-le"))
        if at < 0 or text != marker:
            raise ValueError(str(e)) from None
        return data[: at + 2] + b"\x00\xd8" + data[at + 4 :]


def _computed(header: Any) -> None:
    """Leave every length, size and count of ``header`` (nested ones too) for the codec to compute."""
    if not isinstance(header, dict):
        return
    for key in list(header.keys()):
        if isinstance(header[key], dict):
            _computed(header[key])
        elif any(w in key for w in LENGTH_WORDS) and isinstance(header[key], int):
            header[key] = None


def leaves(obj: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every leaf field of decoded headers with its dotted path (``UserHeader.Flags``,
    ``MultiQueueFormatHeader.Destination.FormatNameList.0...``): what a mutation may change."""
    if isinstance(obj, BitFlags | GUID | bytes | bytearray | str | int):
        yield prefix, obj
        return
    if isinstance(obj, list) or (hasattr(obj, "__len__") and hasattr(obj, "__getitem__") and not isinstance(obj, dict)):
        # a nested list (an MQF FormatNameList): the offsets of the codec name the list, so a number is
        # mutated in place only at its start (the first element's first field); strings anywhere
        for i in range(len(obj)):
            for j, (path, value) in enumerate(leaves(obj[i], f"{prefix}.{i}")):
                if isinstance(value, str) or (i == 0 and j == 0):
                    yield path, value
        return
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key.startswith("_") or value is None:
                continue
            yield from leaves(value, f"{prefix}.{key}" if prefix else key)


def _ops(path: str, value: Any) -> list[str]:
    leaf = path.rpartition(".")[2]
    if isinstance(value, str):
        return ["max-length", "beyond-max", "unpaired-surrogate", "empty"]
    if isinstance(value, GUID):
        return ["null", "all-ones"]
    if isinstance(value, bytes | bytearray):
        return ["all-ones", "random"] if value else []
    if isinstance(value, BitFlags):
        return (["unknown-bits"] if _unknown_bits(value) else []) + ["max", "zero", "flip-bit"]
    if any(w in leaf for w in LENGTH_WORDS):
        return ["zero", "one-beyond", "one-below", "packet-length", "beyond-packet", "max", "top-bit"]
    return ["zero", "max", "top-bit", "one-beyond"]


def _priority(path: str, value: Any) -> int:
    """Lengths, sizes and counts first (where decoders fail: CVE-2023-21554), then flags, then the rest."""
    leaf = path.rpartition(".")[2]
    if isinstance(value, int) and not isinstance(value, BitFlags) and any(w in leaf for w in LENGTH_WORDS):
        return 0
    if isinstance(value, BitFlags | str):
        return 1
    return 2


def mutations_for(kind: str, ctx: Context, rng: random.Random, to: str = "acceptor") -> list[Mutation]:
    """Every mutation of every template of ``kind``: the first template ``as-built`` first; then the
    templates in turn, each giving its next mutation by priority (lengths, sizes and counts;
    flags and strings; the rest), each priority group shuffled by ``rng``."""
    per_template: list[list[Mutation]] = []
    for t in templates_of(kind, to):
        headers = t.build(ctx)
        decoded = packets.parse(packets.build(headers), strict=False)
        groups: list[list[Mutation]] = [[], [], []]
        for path, value in leaves(decoded.headers):
            for op in _ops(path, value):
                groups[_priority(path, value)].append(Mutation(t.name, path, op))
        for g in groups:
            rng.shuffle(g)
        per_template.append([Mutation(t.name, "", AS_BUILT)] + [m for g in groups for m in g])
    out = [per_template[0][0]]
    rest = [ms[1:] for ms in per_template[:1]] + per_template[1:]
    for i in range(max(len(ms) for ms in rest)):
        out += [ms[i] for ms in rest if i < len(ms)]
    return out


def decode_summary(data: bytes) -> str:
    """One line naming the packet's kind and size, or why it does not decode."""
    try:
        p = packets.parse(data, strict=False)
    except packets.PacketError as e:
        return f"{len(data)} bytes, undecodable: {e}"
    return f"{p.kind.value}, {len(data)} bytes" + (f", {len(p.violations)} violations" if p.violations else "")


def packet_kind(data: bytes) -> str:
    """The kind of an encoded packet ([MS-MQQB] 3.1.5.1.1), "?" when it does not decode."""
    try:
        return str(packets.parse(data, strict=False).kind.value)
    except packets.PacketError:
        return "?"


def announced_size(data: bytes) -> int:
    """BaseHeader.PacketSize of an encoded packet (0 when it has no BaseHeader)."""
    return struct.unpack_from("<L", data, 8)[0] if len(data) >= 16 else 0
