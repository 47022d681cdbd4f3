"""Hypothesis strategies for the [MS-MQQB] 2.2 session packets, and the decode/encode helpers the
session-packet tests share.

Strategies cover every internal packet kind (2.2.2 ConnectionParameters, 2.2.3
EstablishConnection, 2.2.6 SessionAck, and internal packets with an undefined PT), the 2.2.4.1 /
2.2.5.1 acknowledgment bodies and the 2.2.7 Ping Packet, each as a Container of headers whose
BaseHeader.PacketSize is the true size, so ``parse(build(p)) == p`` is exact.

Each strategy is made once per set of arguments (``functools.cache``): one made again inside every
draw (a ``flatmap``) is validated again every time, and draws the same values.
"""

from __future__ import annotations

import functools
import importlib.util
from io import BytesIO
from typing import Any

from construct import Container
from hypothesis import strategies as st

from packets import base, session
from packets.errors import Violation
from packets.fields import GUID
from packets.layout import PacketKind
from packets.optional import SessionHeader

U16 = st.integers(0, 0xFFFF)
U32 = st.integers(0, 0xFFFFFFFF)
GUIDS = st.binary(min_size=16, max_size=16).map(GUID)

PT_SIZES = {
    session.PT_SESSION_ACK: SessionHeader.sizeof(),
    session.PT_ESTABLISH_CONNECTION: session.ESTABLISH_CONNECTION_HEADER_SIZE,
    session.PT_CONNECTION_PARAMETERS: session.ConnectionParametersHeader.sizeof(),
}


# ---------------------------------------------------------------------------------------------
# Decoding and encoding: packets.codec once the UserMessage layout exists, else the same walk over
# BaseHeader + INTERNAL_LAYOUT done here with the header parsers.


def codec_ready() -> bool:
    return importlib.util.find_spec("packets.message") is not None


def _walk(data: bytes) -> tuple[PacketKind, Container, list[tuple[str, str, str]], int]:
    io = BytesIO(data)
    ctx = Container(_params=Container())
    headers = Container()
    headers.BaseHeader = ctx.BaseHeader = base.BASE_HEADER.parse_fast(io, ctx)
    counted = io.tell()
    if not headers.BaseHeader.Flags.IN:
        raise AssertionError("the header-parser walk only decodes internal packets")
    for slot in session.INTERNAL_LAYOUT:
        if slot.present(headers):
            start = io.tell()
            headers[slot.name] = ctx[slot.name] = slot.parser.parse_fast(io, ctx)
            if slot.counted:
                counted += io.tell() - start
    rules = list(base.check_base_header(headers))
    for slot in session.INTERNAL_LAYOUT:
        if slot.name in headers:
            for check in slot.checks:
                rules.extend(check(headers))
    if headers.BaseHeader.PacketSize != counted:
        rules.append(("BaseHeader.PacketSize", "size", base.SECTION))
    if io.tell() != len(data):
        rules.append(("BaseHeader.PacketSize", "trailing bytes", base.SECTION))
    rules.extend(session.check_internal_packet(headers))
    kind, _ = session.identify(headers)
    return kind, headers, rules, io.tell()


def decode(data: bytes, strict: bool = True) -> tuple[PacketKind, Container, list[tuple[str, str]]]:
    """(kind, headers, [(field path, section)]) of one internal packet.  strict raises on a rule."""
    if codec_ready():
        from packets import codec

        packet = codec.parse(data, strict=strict)
        return packet.kind, packet.headers, [(v.field_path, v.section) for v in packet.violations]
    kind, headers, rules, _ = _walk(data)
    if strict and rules:
        path, reason, section = rules[0]
        raise Violation(path, 0, reason, section).error()
    return kind, headers, [(p, s) for p, _, s in rules]


def encode(headers: Container) -> bytes:
    """Bytes of an internal packet from its headers (PacketSize computed when None)."""
    if codec_ready():
        from packets import codec

        return codec.build(headers)
    base_header = base.default_base_header(**dict(headers.BaseHeader))
    parts = [
        slot.parser.build(headers[slot.name], Container(headers))
        for slot in session.INTERNAL_LAYOUT
        if headers.get(slot.name) is not None
    ]
    if base_header.PacketSize is None:
        base_header.PacketSize = base.BASE_HEADER_SIZE + sum(map(len, parts))
    return base.BASE_HEADER.build(base_header) + b"".join(parts)


def headers_only(headers: Container) -> dict[str, Any]:
    """The headers of a decoded packet as a plain dict (for equality with a generated one)."""
    return {k: v for k, v in headers.items() if not k.startswith("_")}


# ---------------------------------------------------------------------------------------------
# Strategies


@functools.cache
def base_flags(sh: int | None = None, valid: bool = True) -> st.SearchStrategy[base.BaseHeaderFlags]:
    """BaseHeader.Flags with IN set; ``valid`` keeps DH/TR clear (MS-MQMQ 2.2.19.1)."""

    def make(pr: int, sh_bit: int, rest: int) -> base.BaseHeaderFlags:
        flags = base.BaseHeaderFlags.make(PR=pr, IN=1, SH=sh_bit)
        if not valid:
            flags = base.BaseHeaderFlags(int(flags) | (rest & ~0x1F))
        return flags  # type: ignore[return-value]

    return st.builds(make, st.integers(0, 7), st.just(sh) if sh is not None else st.integers(0, 1), U16)


@functools.cache
def base_header(size: int, flags: st.SearchStrategy[Any], valid: bool = True) -> st.SearchStrategy[Container]:
    return st.builds(
        lambda reserved, f, ttrq: Container(
            VersionNumber=base.VERSION_NUMBER,
            Reserved=reserved,
            Flags=f,
            Signature=base.SIGNATURE,
            PacketSize=size,
            TimeToReachQueue=ttrq,
        ),
        st.integers(0, 0xFF),
        flags,
        st.just(base.INFINITE) if valid else U32,
    )


@functools.cache
def internal_header(pt: int, valid: bool = True) -> st.SearchStrategy[Container]:
    def make(reserved: int, cs: int, rest: int) -> Container:
        flags = session.InternalHeaderFlags.make(PT=pt, CS=cs)
        if not valid:
            flags = session.InternalHeaderFlags(int(flags) | (rest & ~0x1F))
        return Container(Reserved=reserved if not valid else 0, Flags=flags)

    cs = st.just(0) if pt == session.PT_SESSION_ACK and valid else st.integers(0, 1)
    return st.builds(make, U16, cs, U16)


@functools.cache
def session_header(valid: bool = True) -> st.SearchStrategy[Container]:
    return st.builds(
        lambda a, b, flags, c, d, w, r: Container(
            AckSequenceNumber=a,
            RecoverableMsgAckSeqNumber=b,
            RecoverableMsgAckFlags=flags,
            UserMsgSequenceNumber=c,
            RecoverableMsgSeqNumber=d,
            WindowSize=w,
            Reserved=r,
        ),
        U16,
        U16,
        U32,
        U16,
        U16,
        st.integers(1, 0xFFFF) if valid else U16,
        U16,
    )


@functools.cache
def establish_connection_header(valid: bool = True) -> st.SearchStrategy[Container]:
    def os_flags(re: int, bits: int) -> session.OperatingSystemFlags:
        return session.OperatingSystemFlags((bits & 0xFF00) | (session.OPERATING_SYSTEM_RE if valid else re))

    padding = st.one_of(
        st.just(b"\x5a" * session.PADDING_SIZE),
        st.binary(min_size=session.PADDING_SIZE, max_size=session.PADDING_SIZE),
    )
    return st.builds(
        lambda cg, sg, ts, os, reserved, pad: Container(
            ClientGuid=cg, ServerGuid=sg, TimeStamp=ts, OperatingSystem=os, Reserved=reserved, Padding=pad
        ),
        GUIDS,
        GUIDS,
        U32,
        st.builds(os_flags, st.integers(0, 0xFF), U16),
        st.just(0) if valid else U16,
        padding,
    )


@functools.cache
def connection_parameters_header(valid: bool = True) -> st.SearchStrategy[Container]:
    return st.builds(
        lambda rat, at, reserved, w: Container(
            RecoverableAckTimeout=rat, AckTimeout=at, Reserved=reserved, WindowSize=w
        ),
        st.integers(*session.RECOVERABLE_ACK_TIMEOUT_RANGE) if valid else U32,
        st.integers(*session.ACK_TIMEOUT_RANGE) if valid else U32,
        st.just(0) if valid else U16,
        U16,
    )


@functools.cache
def internal_packet(kind: PacketKind, valid: bool = True) -> st.SearchStrategy[Container]:
    """Headers of one internal packet of ``kind`` (valid: no rule of 2.2 / MQMQ 2.2.19.1 broken)."""
    body: st.SearchStrategy[Container]
    if kind == PacketKind.SessionAck:
        pt, name, body, sh = session.PT_SESSION_ACK, "SessionHeader", session_header(valid), 1
    elif kind == PacketKind.EstablishConnection:
        pt, name, sh = session.PT_ESTABLISH_CONNECTION, "EstablishConnectionHeader", 0
        body = establish_connection_header(valid)
    elif kind == PacketKind.ConnectionParameters:
        pt, name, sh = session.PT_CONNECTION_PARAMETERS, "ConnectionParametersHeader", 0
        body = connection_parameters_header(valid)
    else:
        raise ValueError(kind)
    size = base.BASE_HEADER_SIZE + 4 + PT_SIZES[pt]
    return st.builds(
        lambda b, i, h: Container(BaseHeader=b, InternalHeader=i, **{name: h}),
        base_header(size, base_flags(sh if valid else None, valid), valid),
        internal_header(pt, valid),
        body,
    )


@functools.cache
def undefined_pt_packet() -> st.SearchStrategy[Container]:
    """An internal packet whose PT no entry of session.INTERNAL_KINDS names: only the InternalHeader follows."""
    return st.builds(
        lambda b, i: Container(BaseHeader=b, InternalHeader=i),
        base_header(base.BASE_HEADER_SIZE + 4, base_flags(None, False), False),
        st.sampled_from(sorted(set(range(16)) - {e.pt for e in session.INTERNAL_KINDS})).flatmap(
            lambda pt: internal_header(pt, valid=False)
        ),
    )


@functools.cache
def order_ack_body(valid: bool = True) -> st.SearchStrategy[Container]:
    seq = st.integers(1, 0xFFFFFFFF) if valid else U32
    return st.builds(
        lambda tid, s, prev, reserved: Container(
            TxSequenceID=tid,
            TxSequenceNumber=s,
            TxPreviousSequenceNumber=(s - 1) if valid else prev,
            Reserved=reserved,
        ),
        st.integers(0, 2**64 - 1),
        seq,
        U32,
        st.binary(min_size=20, max_size=20),
    )


@functools.cache
def final_ack_body() -> st.SearchStrategy[Container]:
    return st.builds(
        lambda tid, s, prev, g, mid: Container(
            TxSequenceID=tid, TxSequenceNumber=s, TxPreviousSequenceNumber=prev, SourceGUID=g, MessageID=mid
        ),
        st.integers(0, 2**64 - 1),
        U32,
        U32,
        GUIDS,
        U32,
    )


@functools.cache
def ping_packet(valid: bool = True) -> st.SearchStrategy[Container]:
    return st.builds(
        lambda flags, sig, cookie, g: Container(Flags=session.PingFlags(flags), Signature=sig, Cookie=cookie, QMGuid=g),
        U16,
        st.just(session.PING_SIGNATURE) if valid else U16,
        U32,
        GUIDS,
    )


ORDER_QUEUES = st.one_of(
    st.builds(lambda a, b, c, d: f"TCP:{a}.{b}.{c}.{d}\\PRIVATE$\\order_queue$", *[st.integers(0, 255)] * 4),
    st.just(session.ORDER_QUEUE_PRIVATE_ID),
)


@functools.cache
def transactional_ack_packet(kind: PacketKind) -> st.SearchStrategy[Container]:
    """Headers of a valid OrderAck or FinalAck Packet ([MS-MQQB] 2.2.4, 2.2.5) from the constructors."""
    common = {
        "source_qm": GUIDS,
        "destination": ORDER_QUEUES,
        "destination_qm": GUIDS.filter(lambda g: not g.is_null),
        "sent_time": U32,
        "message_id": U32,
    }
    if kind == PacketKind.OrderAck:
        return st.builds(session.order_ack, st.integers(0, 2**64 - 1), st.integers(1, 0xFFFFFFFF), **common)
    return st.builds(
        session.final_ack,
        st.integers(0, 2**64 - 1),
        st.integers(1, 0xFFFFFFFF),
        st.integers(0, 0xFFFFFFFE),
        GUIDS,
        U32,
        message_class=st.sampled_from(sorted(session.FINAL_ACK_CLASSES)),
        **common,
    )
