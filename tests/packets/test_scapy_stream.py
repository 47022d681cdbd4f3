"""packets.scapy_stream: whole MSMQ layers from TCP segments in any cut, order and repetition
([MS-MQQB] 2.1.1 stream framing by [MS-MQMQ] 2.2.19.1 BaseHeader.PacketSize; RFC 9293 ordering)."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.compat import raw
from scapy.layers.l2 import Ether

import packets
from packets import session as sp
from packets.scapy_stream import MSMQReassembler, MSMQSession, msmq_layers
from tests.packets.scapykit import DATA, STREAM, segment


def cuts(data: bytes, points: list[int]) -> list[tuple[int, bytes]]:
    edges = sorted({0, len(data), *(p % (len(data) + 1) for p in points)})
    return [(a, data[a:b]) for a, b in itertools.pairwise(edges)]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, len(DATA)), max_size=12),
    st.integers(0, 2**32 - 1),
    st.randoms(use_true_random=False),
    st.integers(0, 3),
)
def test_any_cut_order_and_repetition(points: list[int], isn: int, rnd: Any, repeats: int) -> None:
    pieces = cuts(DATA, points)
    frames = [segment(isn, b"", "S")]
    shuffled = pieces[:]
    rnd.shuffle(shuffled)
    for _ in range(repeats):  # retransmissions, possibly overlapping what was seen
        shuffled.insert(rnd.randrange(len(shuffled) + 1), rnd.choice(pieces))
    frames += [segment((isn + 1 + offset) % 2**32, payload) for offset, payload in shuffled]
    frames = [Ether(raw(f)) for f in frames]
    assert [raw(layer) for layer in msmq_layers(frames)] == STREAM


def test_flows_and_directions_are_apart() -> None:
    reply = packets.build(sp.session_ack(7))
    frames = [
        segment(0, DATA[:30]),
        segment(100, reply[:20], sport=1801, dport=40000),
        segment(0, DATA[:10], sport=40001),
        segment(30, DATA[30:]),
        segment(120, reply[20:], sport=1801, dport=40000),
        segment(10, DATA[10:600], sport=40001),
    ]
    layers = list(msmq_layers(frames))
    assert [raw(layer) for layer in layers] == [*STREAM, reply, STREAM[0]]
    assert layers[-1].flow == ("192.0.2.1", 40001, "192.0.2.2", 1801)
    assert layers[4].flow[1] == 1801


def test_other_ports_and_a_stream_that_cannot_be_framed() -> None:
    assert list(msmq_layers([segment(0, DATA, dport=2101)])) == []
    assert [raw(p) for p in msmq_layers([segment(0, DATA, dport=2101)], ports={2101})] == STREAM
    reassembler = MSMQReassembler()
    assert reassembler.feed(segment(0, b"\x10\x00\x03\x00XXXX" + bytes(8))) == []
    assert reassembler.feed(segment(16, DATA)) == []  # the direction stopped
    assert reassembler.errors[0][1].field_path == "BaseHeader.Signature"


def test_session_yields_every_completed_packet() -> None:
    class Socket:
        def __init__(self, frames: list[Any]) -> None:
            self.frames = frames

        def recv(self) -> Any:
            return self.frames.pop(0) if self.frames else None

    session = MSMQSession()
    sock = Socket([segment(0, DATA[:-3]), segment(len(DATA) - 3, DATA[-3:])])
    first = list(session.recv(sock))
    second = list(session.recv(sock))
    assert [raw(p) for p in first] == STREAM[:3]
    assert [raw(p) for p in second] == STREAM[3:]
    assert list(session.recv(sock)) == []
