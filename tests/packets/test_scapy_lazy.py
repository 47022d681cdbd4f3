"""Lazy dissection of the MSMQ scapy layer (packets.scapy_layers, [MS-MQMQ] 2.2.19-2.2.20,
[MS-MQQB] 2.2): ``MSMQ(b)`` keeps the codec's decoded headers and turns a header into its layer
when it is first read; whatever order headers are read, copied, changed or shown in, the layer
behaves as one whose headers were all made at once.
"""

from __future__ import annotations

from typing import Any

from construct import Container
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.compat import raw
from scapy.layers.inet import IP, TCP
from scapy.packet import Packet as ScapyPacket

import packets
from packets.fields import GUID
from packets.layout import PacketKind
from packets.properties import default_message_properties_header
from packets.scapy_layers import HEADER_NAMES, MSMQ
from packets.user import UserHeaderFlags, default_user_header
from tests.packets import strategies_session as ss
from tests.packets import strategies_user as su

_MESSAGE = Container(
    UserHeader=default_user_header(
        MessageID=1,
        QueueManagerAddress=GUID("{C626EA11-E6B6-9749-9595-9150557358D1}"),
        Flags=UserHeaderFlags.make(MP=1, DQ=3),
        DestinationQueue=Container(PrivateQueueIdentifier=1),
    ),
    MessagePropertiesHeader=default_message_properties_header(b"hello", Label="hi"),
)
_FIELDS_SLOT: Any = ScapyPacket.__dict__["fields"]  # scapy's own storage of a layer's field values
_SESSION_KINDS = [PacketKind.EstablishConnection, PacketKind.ConnectionParameters, PacketKind.SessionAck]
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _made(pkt: MSMQ) -> set[str]:
    """The headers already turned into layers (scapy's own field storage)."""
    return set(_FIELDS_SLOT.__get__(pkt))


def test_dissection_makes_no_header_layer_until_one_is_read() -> None:
    data = packets.build(_MESSAGE)
    pkt = MSMQ(data)
    assert _made(pkt) == set()
    assert pkt.kind == "UserMessage" and pkt.violations == []
    assert raw(pkt) == data
    assert _made(pkt) == set()  # kind, violations and bytes come from the codec's Packet
    assert pkt.UserHeader.Flags.MP == 1
    assert _made(pkt) == {"UserHeader"}
    assert pkt.TransactionHeader is None  # absent: read without making the others
    assert _made(pkt) == {"UserHeader"}


@PROPERTY
@given(
    st.one_of(
        su.user_messages(),
        su.user_messages(present=frozenset(su.OPTIONAL_NAMES)),
        st.sampled_from(_SESSION_KINDS).flatmap(
            lambda kind: st.booleans().flatmap(lambda valid: ss.internal_packet(kind, valid))
        ),
    ),
    st.lists(st.sampled_from(HEADER_NAMES), max_size=4),
)
def test_any_reading_order_equals_the_whole_dissection(headers: Container, first: list[str]) -> None:
    data = packets.build(headers)
    lazy = MSMQ(data)
    for i, name in enumerate(first):  # some headers read before anything reads them all
        layer = lazy.getfieldval(name)
        if layer is not None:  # and some of their fields, which may be layers made when read
            for fld in layer.fields_desc[i % 3 :: 2]:
                layer.getfieldval(fld.name)
    whole = MSMQ(data)
    whole.fields  # noqa: B018  (every header made at once)
    assert lazy == whole
    assert lazy.to_headers() == whole.to_headers() == packets.parse(data, strict=False).headers
    assert raw(lazy) == raw(whole) == data
    assert lazy.show2(dump=True) == whole.show2(dump=True)
    assert raw(lazy.copy()) == data


def test_a_header_makes_its_flag_words_and_queues_when_they_are_read() -> None:
    pkt = MSMQ(packets.build(_MESSAGE))
    user = pkt.UserHeader
    assert user.MessageID == 1
    assert {"Flags", "DestinationQueue"}.isdisjoint(_made(user))  # not made yet
    assert user.Flags.DQ == 3 and "Flags" in _made(user)
    assert user.DestinationQueue.PrivateQueueIdentifier == 1 and "DestinationQueue" in _made(user)
    assert user.AdminQueue is None
    assert user.to_fields() == packets.parse(packets.build(_MESSAGE)).UserHeader


def test_a_change_to_a_flag_word_read_lazily_is_built() -> None:
    data = packets.build(_MESSAGE)
    pkt = MSMQ(data)
    pkt.MessagePropertiesHeader.Flags.PA = 1
    assert int(packets.parse(raw(pkt), strict=False).MessagePropertiesHeader.Flags) & 1
    assert pkt.violations != []  # an acknowledgment requested without an AdminQueue
    copy = MSMQ(data).copy()
    copy.UserHeader.DestinationQueue.PrivateQueueIdentifier = 9
    assert packets.parse(raw(copy)).UserHeader.DestinationQueue.PrivateQueueIdentifier == 9


def test_a_change_to_a_header_read_lazily_is_built() -> None:
    data = packets.build(_MESSAGE)
    pkt = MSMQ(data)
    pkt.UserHeader.MessageID = 4242
    changed = packets.parse(raw(pkt))
    assert changed.UserHeader.MessageID == 4242
    assert raw(pkt) != data
    other = MSMQ(data)
    other.MessagePropertiesHeader = None  # replaced without being read: the default one is built
    assert packets.parse(raw(other), strict=False).MessagePropertiesHeader.MessageBody == b""


def test_a_copy_is_independent_of_the_original() -> None:
    data = packets.build(_MESSAGE)
    pkt = MSMQ(data)
    clone = pkt.copy()
    clone.UserHeader.MessageID = 7
    assert raw(pkt) == data
    assert packets.parse(raw(clone)).UserHeader.MessageID == 7


def test_a_frame_builds_and_shows_with_lazy_headers() -> None:
    data = packets.build(_MESSAGE)
    frame: Any = IP(raw(IP(dst="127.0.0.1") / TCP(sport=40000, dport=1801) / data))
    msmq = frame[MSMQ]
    assert _made(msmq) == set()
    assert raw(frame).endswith(data)
    assert "UserHeader" in frame.show(dump=True)
    assert msmq.decoded is not None and msmq.decoded.kind == packets.PacketKind.UserMessage


_UNSET = object()


def _attributes(layer: ScapyPacket) -> dict[str, Any]:
    """Every attribute scapy keeps in a layer's slots (unset ones as _UNSET), the time apart."""
    out = {name: getattr(layer, name, _UNSET) for name in ScapyPacket.__slots__ if name != "time"}
    out["fields"] = dict(layer.fields)
    return out


def test_a_dissected_layer_has_what_scapys_constructor_gives_it() -> None:
    data = packets.build(_MESSAGE) * 2  # a chain: the second layer made as scapy's payload
    pkt = MSMQ(data)
    by_scapy = MSMQ.__new__(MSMQ)
    ScapyPacket.__init__(by_scapy, data)
    assert _attributes(pkt) == _attributes(by_scapy)
    assert _attributes(pkt.payload) == _attributes(by_scapy.payload)
    assert pkt.payload.underlayer is pkt and isinstance(pkt.time, float) and pkt.payload.time == 0.0
    for name in ("UserHeader", "MessagePropertiesHeader"):  # made from the codec's decoded header
        layer = pkt.getfieldval(name)
        made = type(layer)(_internal=1, **layer.fields)
        assert _attributes(layer) == _attributes(made)
        flags = layer.Flags
        assert _attributes(flags) == _attributes(type(flags)(_internal=1, **flags.fields))
