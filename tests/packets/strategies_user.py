"""Hypothesis strategies for the UserMessage Packet headers ([MS-MQMQ] 2.2.19-2.2.20) and the
[MS-MQRR] 2.2.5 headers.

Every strategy yields a *complete* Container: each field the parser returns is present, and the
computed fields (lengths, counts, sizes) are worked out here from the spec's definitions, not by
the codec, so ``parse(build(h)) == h`` checks the codec against the spec's arithmetic.  Values
stay inside the spec's ranges, so the generated headers are valid (no check fires).

Each strategy is made once (``functools.cache``) and drawn from as often as needed: a strategy
made again inside every draw is validated again every time (most of the CPU of these tests), and
draws the same values.
"""

from __future__ import annotations

import functools
from typing import Any

from construct import Container, ListContainer
from hypothesis import strategies as st

from packets import base, mqrr, optional, properties, user
from packets.fields import GUID

U8 = st.integers(0, 0xFF)
U16 = st.integers(0, 0xFFFF)
U32 = st.integers(0, 0xFFFFFFFF)
GUIDS = st.binary(min_size=16, max_size=16).map(GUID)
NON_NULL_GUIDS = GUIDS.filter(lambda g: any(g))
# UTF-16 text without NUL and without lone surrogates (a surrogate pair written as two code
# points would come back as one astral character).
TEXT_ALPHABET = st.characters(blacklist_categories=("Cs",), blacklist_characters="\0")


def units(text: str) -> int:
    """UTF-16 code units of ``text`` (without NUL)."""
    return len(text.encode("utf-16-le")) // 2


@functools.cache
def texts(max_units: int, min_size: int = 0) -> st.SearchStrategy[str]:
    return st.text(TEXT_ALPHABET, min_size=min_size, max_size=max_units).filter(lambda t: units(t) <= max_units)


@functools.cache
def or_none(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``st.none() | strategy``, made once per strategy."""
    return st.none() | strategy


def optional_texts(max_units: int) -> st.SearchStrategy[str | None]:
    return or_none(texts(max_units))


@functools.cache
def choice(*values: Any) -> st.SearchStrategy[Any]:
    """``st.sampled_from(values)``, made once per set of values."""
    return st.sampled_from(values)


def pad4(n: int) -> int:
    return (4 - n % 4) % 4


# --------------------------------------------------------------------------------------------
# Queue formats (2.2.18.1.5, 2.2.18.1.7)


def direct_queue(name: str) -> Container:
    return Container(Count=2 * (units(name) + 1), DirectFormatName=name)


@functools.cache
def queue_format(kind: int) -> st.SearchStrategy[Container | None]:
    """A value for a UserHeader queue field of queue type ``kind`` (DQ/AQ/RQ tables)."""
    if kind in (0x0, 0x1):
        return st.none()
    if kind in (0x2, 0x3, 0x4):
        return st.builds(lambda i: Container(PrivateQueueIdentifier=i), U32)
    if kind == 0x5:
        return st.builds(lambda g: Container(PublicQueueIdentifier=g), GUIDS)
    if kind == 0x6:
        return st.builds(lambda g, i: Container(SourceQueueManager=g, PrivateQueueIdentifier=i), GUIDS, U32)
    return texts(40).map(direct_queue)


@functools.cache
@st.composite
def user_headers(draw: Any, *, th: int = 0, sh: int = 0, mq: int = 0, hh: int = 0, aq: int | None = None) -> Container:
    dq = draw(choice(*sorted(user.DQ_FORMATS)))
    if aq is None:
        aq = draw(choice(*sorted(user.AQ_FORMATS)))
    rq = draw(choice(*sorted(user.RQ_FORMATS)))
    cq = draw(st.integers(0, 1))
    dm = 1 if th else draw(st.integers(0, 1))
    flags = user.UserHeaderFlags.make(
        RC=draw(st.integers(0, 0x1D)),
        DM=dm,
        X1=draw(st.integers(0, 1)),
        JN=draw(st.integers(0, 1)),
        JP=draw(st.integers(0, 1)),
        DQ=dq,
        AQ=aq,
        RQ=rq,
        SH=sh,
        TH=th,
        MP=1,
        CQ=cq,
        MQ=mq,
        X2=draw(st.integers(0, 1)),
        AH=0,
        X3=draw(st.integers(0, 3)),
        HH=hh,
        X4=draw(st.integers(0, 7)),
    )
    if dq == 0x7:
        qm = GUID()
    elif dq in (0x3, 0x5):
        qm = draw(NON_NULL_GUIDS)
    else:
        qm = draw(GUIDS)
    return Container(
        SourceQueueManager=draw(GUIDS),
        QueueManagerAddress=qm,
        TimeToBeReceived=draw(U32),
        SentTime=draw(U32),
        MessageID=draw(U32),
        Flags=flags,
        DestinationQueue=draw(queue_format(dq)),
        AdminQueue=draw(queue_format(aq)),
        ResponseQueue=draw(queue_format(rq)),
        ConnectorType=draw(GUIDS) if cq else None,
    )


def user_header_size(h: Container) -> int:
    """Size from the field tables: 48 fixed bytes + queue names + 16 for ConnectorType."""
    size = 48
    for name in ("DestinationQueue", "AdminQueue", "ResponseQueue"):
        q = h[name]
        if q is None:
            continue
        if "DirectFormatName" in q:
            size += 2 + q.Count + pad4(2 + q.Count)
        elif "SourceQueueManager" in q:
            size += 20  # always starts 4-aligned inside a UserHeader
        elif "PublicQueueIdentifier" in q:
            size += 16
        else:
            size += 4
    return size + (16 if h.ConnectorType is not None else 0)


# --------------------------------------------------------------------------------------------
# 2.2.19.3 MessagePropertiesHeader

ENCRYPTION_BY_LEVEL = {
    0: sorted(properties.ENCRYPTION_ALGORITHMS),
    1: [0x6602, 0x6801],
    3: [0x6602, 0x6801],
    5: [0x660E, 0x660F, 0x6610],
}
MESSAGE_CLASSES = st.one_of(
    st.sampled_from([int(m) for m in user.MessageClass]),
    st.integers(0, 0xFFFF).map(lambda v: v & user.CUSTOM_CLASS_MASK),
)


@functools.cache
@st.composite
def message_properties_headers(draw: Any, *, acks: bool | None = None) -> Container:
    label = draw(optional_texts(249))
    ext = draw(st.binary(max_size=13))
    body = draw(st.binary(max_size=64))
    level = draw(choice(*sorted(ENCRYPTION_BY_LEVEL)))
    ack_bits = draw(st.integers(0, 0xF)) if acks is None else (draw(st.integers(1, 0xF)) if acks else 0)
    return Container(
        Flags=properties.MessagePropertiesFlags(ack_bits | draw(st.integers(0, 0xF)) << 4),
        LabelLength=0 if label is None else units(label) + 1,
        MessageClass=draw(MESSAGE_CLASSES),
        CorrelationID=draw(st.binary(min_size=20, max_size=20)),
        BodyType=draw(U32),
        ApplicationTag=draw(U32),
        MessageSize=len(body),
        AllocationBodySize=len(body) + draw(st.integers(0, 64)),
        PrivacyLevel=level,
        HashAlgorithm=draw(choice(*sorted(properties.HASH_ALGORITHMS))),
        EncryptionAlgorithm=draw(choice(*ENCRYPTION_BY_LEVEL[level])),
        ExtensionSize=len(ext),
        Label=label,
        ExtensionData=ext,
        MessageBody=body,
    )


def message_properties_size(h: Container) -> int:
    n = 56 + 2 * h.LabelLength + h.ExtensionSize + h.MessageSize
    return n + pad4(n)


# --------------------------------------------------------------------------------------------
# Optional headers (2.2.20.x)


@functools.cache
@st.composite
def transaction_headers(draw: Any) -> Container:
    cg = draw(st.integers(0, 1))
    flags = optional.TransactionHeaderFlags.make(
        CG=cg,
        FA=draw(st.integers(0, 1)),
        FM=draw(st.integers(0, 1)),
        LM=draw(st.integers(0, 1)),
        ID=draw(st.integers(0, (1 << 20) - 1)),
    )
    return Container(
        Flags=flags,
        TxSequenceID=Container(Ordinal=draw(U32), TimeStamp=draw(U32)),
        TxSequenceNumber=draw(st.integers(1, 0xFFFFFFFF)),
        PreviousTxSequenceNumber=draw(st.integers(0, 0xFFFFFFFE)),
        ConnectorQMGuid=draw(GUIDS) if cg else None,
    )


@functools.cache
@st.composite
def security_headers(draw: Any) -> Container:
    st_type = draw(choice(0, 1, 2))
    items = {
        "SecurityID": b"" if st_type == 0 else draw(st.binary(min_size=1, max_size=28)),
        "EncryptionKey": draw(st.binary(max_size=17)),
        "Signature": draw(st.binary(max_size=23)),
        "SenderCert": draw(st.binary(max_size=9)),
        "ProviderInfo": draw(st.binary(max_size=11)),
    }
    if not any(items.values()):
        items["Signature"] = draw(st.binary(min_size=1, max_size=7))
    flags = optional.SecurityHeaderFlags.make(
        ST=st_type,
        EB=draw(st.integers(0, 1)),
        DE=draw(st.integers(0, 1)),
        AI=1,
        X12=draw(st.integers(0, 1)),
    )
    return Container(
        Flags=flags,
        SenderIdSize=len(items["SecurityID"]),
        EncryptionKeySize=len(items["EncryptionKey"]),
        SignatureSize=len(items["Signature"]),
        SenderCertSize=len(items["SenderCert"]),
        ProviderInfoSize=len(items["ProviderInfo"]),
        SecurityData=Container(**items),
    )


def security_header_size(h: Container) -> int:
    return 16 + sum(len(v) + pad4(len(v)) for v in h.SecurityData.values())


@functools.cache
@st.composite
def debug_headers(draw: Any) -> Container:
    qt = draw(st.integers(0, 1))
    flags = optional.DebugHeaderFlags(qt | draw(st.integers(0, 0x3FFF)) << 2)
    return Container(Flags=flags, Reserved=draw(U16), QueueIdentifier=draw(GUIDS) if qt else None)


@functools.cache
@st.composite
def soap_headers(draw: Any) -> Container:
    header = draw(optional_texts(30))
    body = draw(optional_texts(30))
    return Container(
        HeaderSectionID=0x0320,
        Reserved=draw(U16),
        HeaderDataLength=0 if header is None else units(header) + 1,
        Header=header,
        BodySectionID=0x0384,
        Reserved1=draw(U16),
        BodyDataLength=0 if body is None else units(body) + 1,
        Body=body,
    )


def soap_header_size(h: Container) -> int:
    n = 16 + 2 * (h.HeaderDataLength + h.BodyDataLength)
    return n + pad4(n)


FORMAT_ELEMENTS = st.one_of(
    st.builds(lambda g: Container(FormatType=1, FormatName=Container(PublicQueueIdentifier=g)), GUIDS),
    st.builds(
        lambda g, i: Container(FormatType=2, FormatName=Container(SourceQueueManager=g, PrivateQueueIdentifier=i)),
        GUIDS,
        U32,
    ),
    st.builds(lambda t: Container(FormatType=3, FormatName=Container(DirectFormatName=t)), texts(20)),
    st.builds(lambda g: Container(FormatType=6, FormatName=Container(DistributionListIdentifier=g)), GUIDS),
)


def format_name_list_size(elements: list[Container]) -> int:
    """From 2.2.18.1.4.x: bytes of a list that starts on a 4-byte boundary."""
    at = 0
    for e in elements:
        at += 2
        kind = e.FormatType
        if kind == 1:
            at += 16
        elif kind == 2:
            at += pad4(at) + 20
        elif kind == 3:
            at += at % 2 + 2 * (units(e.FormatName.DirectFormatName) + 1)
        else:
            at += pad4(at) + 16
    return at


def mqf_address(header_id: int, elements: list[Container], reserved: int) -> Container:
    n = format_name_list_size(elements)
    return Container(
        HeaderSize=12 + n + pad4(n),
        HeaderID=header_id,
        Reserved=reserved,
        ElementCount=len(elements),
        FormatNameList=ListContainer(elements),
    )


@functools.cache
@st.composite
def multi_queue_format_headers(draw: Any) -> Container:
    parts = {}
    for part, header_id in (("Destination", 0x64), ("Administration", 0xC8), ("Response", 0x12C)):
        parts[part] = mqf_address(header_id, draw(st.lists(FORMAT_ELEMENTS, max_size=4)), draw(choice(0, 7)))
    signature = draw(st.binary(max_size=21))
    return Container(
        **parts,
        Signature=Container(ID=0x015E, Reserved=draw(choice(0, 1)), Size=len(signature), Signature=signature),
    )


def multi_queue_format_size(h: Container) -> int:
    n = sum(h[p].HeaderSize for p in ("Destination", "Administration", "Response")) + 8 + h.Signature.Size
    return n + pad4(n)


@functools.cache
@st.composite
def session_headers(draw: Any) -> Container:
    return Container(
        AckSequenceNumber=draw(U16),
        RecoverableMsgAckSeqNumber=draw(U16),
        RecoverableMsgAckFlags=draw(U32),
        UserMsgSequenceNumber=draw(U16),
        RecoverableMsgSeqNumber=draw(U16),
        WindowSize=draw(st.integers(1, 0xFFFF)),
        Reserved=draw(U16),
    )


# --------------------------------------------------------------------------------------------
# [MS-MQRR] 2.2.5


@functools.cache
@st.composite
def srmp_envelope_headers(draw: Any) -> Container:
    data = draw(optional_texts(30))
    return Container(
        HeaderId=draw(U16),
        Reserved=draw(U16),
        DataLength=0 if data is None else units(data) + 1,
        Data=data,
    )


@functools.cache
@st.composite
def compound_message_headers(draw: Any) -> Container:
    data = draw(st.binary(max_size=40))
    offset = draw(st.integers(0, len(data)))
    return Container(
        HeaderId=draw(U16),
        Reserved=draw(U16),
        HTTPBodySize=len(data),
        MsgBodySize=draw(st.integers(0, len(data) - offset)),
        MsgBodyOffset=offset,
        Data=data,
    )


def fixed_name(text: str | None) -> bytes:
    return bytes(64) if text is None else mqrr.fixed_utf16(text)


@functools.cache
@st.composite
def subqueue_headers(draw: Any) -> Container:
    return Container(
        HeaderSize=148,
        TM=0,
        AcknowledgementClass=draw(MESSAGE_CLASSES),
        Reserved=draw(st.integers(0, (1 << 15) - 1)),
        AbortCounter=draw(U32),
        MoveCounter=draw(U32),
        LastMoveTime=draw(U32),
        SubqueueName=fixed_name(draw(optional_texts(31))),
        TargetSubqueueName=fixed_name(draw(optional_texts(31))),
    )


@functools.cache
@st.composite
def dead_letter_headers(draw: Any) -> Container:
    path = draw(texts(40))
    n = 2 * (units(path) + 1)
    return Container(HeaderSize=4 + n + pad4(n), DeadLetterPathName=path)


@functools.cache
@st.composite
def extended_address_headers(draw: Any) -> Container:
    kind = draw(choice(0, 1, 6))
    length = {0: draw(st.integers(0, 16)), 1: 4, 6: 16}[kind]
    return Container(
        HeaderSize=28,
        AddressLength=length,
        AddressType=kind,
        AddressScope=draw(U32) if kind == 6 else 0,
        Address=draw(st.binary(min_size=length, max_size=length)) + bytes(16 - length),
    )


# --------------------------------------------------------------------------------------------
# Whole header sets

OPTIONAL_NAMES = (
    "TransactionHeader",
    "SecurityHeader",
    "DebugHeader",
    "SoapHeader",
    "MultiQueueFormatHeader",
    "SessionHeader",
)


@functools.cache
@st.composite
def user_messages(draw: Any, present: frozenset[str] | None = None, trailer: bool | None = False) -> Container:
    """A complete header set of a valid UserMessage Packet (BaseHeader.PacketSize exact).

    ``present`` fixes the optional headers (default: drawn); ``trailer`` adds the [MS-MQRR]
    2.2.5 headers after the UserMessage (None: drawn).
    """
    if present is None:
        present = frozenset(n for n in OPTIONAL_NAMES if draw(st.booleans()))
    acks = draw(st.booleans())
    th = int("TransactionHeader" in present)
    headers = Container()
    headers.BaseHeader = None  # keeps BaseHeader first
    headers.UserHeader = draw(
        user_headers(
            th=th,
            sh=int("SecurityHeader" in present),
            mq=int("MultiQueueFormatHeader" in present),
            hh=int("SoapHeader" in present),
            aq=draw(choice(2, 3, 5, 6, 7)) if acks else 0,
        )
    )
    size = 16 + user_header_size(headers.UserHeader)
    if th:
        headers.TransactionHeader = draw(transaction_headers())
        size += 36 if headers.TransactionHeader.ConnectorQMGuid is not None else 20
    if "SecurityHeader" in present:
        headers.SecurityHeader = draw(security_headers())
        size += security_header_size(headers.SecurityHeader)
    headers.MessagePropertiesHeader = draw(message_properties_headers(acks=acks))
    size += message_properties_size(headers.MessagePropertiesHeader)
    if "DebugHeader" in present:
        headers.DebugHeader = draw(debug_headers())
        size += 20 if headers.DebugHeader.QueueIdentifier is not None else 4
    if "SoapHeader" in present:
        headers.SoapHeader = draw(soap_headers())
        size += soap_header_size(headers.SoapHeader)
    if "MultiQueueFormatHeader" in present:
        headers.MultiQueueFormatHeader = draw(multi_queue_format_headers())
        size += multi_queue_format_size(headers.MultiQueueFormatHeader)
    if "SessionHeader" in present:
        headers.SessionHeader = draw(session_headers())  # not counted in PacketSize
    base_flags = base.BaseHeaderFlags.make(
        PR=0 if th else draw(st.integers(0, 7)),
        SH=int("SessionHeader" in present),
        DH=int("DebugHeader" in present),
        TR=draw(st.integers(0, 1)) if "DebugHeader" in present else 0,
        X9=draw(st.integers(0, 1)),
    )
    headers.BaseHeader = Container(
        VersionNumber=0x10,
        Reserved=draw(U8),
        Flags=base_flags,
        Signature=0x524F494C,
        PacketSize=size,
        TimeToReachQueue=draw(U32),
    )
    if trailer is None:
        trailer = draw(st.booleans())
    if trailer:
        dl = draw(or_none(dead_letter_headers()))
        headers.ExtensionHeader = None
        headers.SubqueueHeader = draw(subqueue_headers())
        if dl is not None:
            headers.DeadLetterHeader = dl
        headers.ExtendedAddressHeader = draw(extended_address_headers())
        remaining = 148 + 28 + (dl.HeaderSize if dl is not None else 0)
        headers.ExtensionHeader = Container(
            HeaderSize=12,
            RemainingHeadersSize=remaining,
            Flags=mqrr.ExtensionHeaderFlags.make(DL=int(dl is not None), SQ=1, EA=1, X5=draw(st.integers(0, 1))),
            Reserved=draw(st.binary(min_size=3, max_size=3)),
        )
    return headers


HEADER_STRATEGIES: dict[str, Any] = {
    "UserHeader": user_headers(),
    "TransactionHeader": transaction_headers(),
    "SecurityHeader": security_headers(),
    "MessagePropertiesHeader": message_properties_headers(),
    "DebugHeader": debug_headers(),
    "SoapHeader": soap_headers(),
    "MultiQueueFormatHeader": multi_queue_format_headers(),
    "SessionHeader": session_headers(),
    "SRMPEnvelopeHeader": srmp_envelope_headers(),
    "CompoundMessageHeader": compound_message_headers(),
    "SubqueueHeader": subqueue_headers(),
    "DeadLetterHeader": dead_letter_headers(),
    "ExtendedAddressHeader": extended_address_headers(),
}
"""One strategy per header that parses standalone (ExtensionHeader needs the packet)."""
