"""Whole MSMQ layers out of captured TCP segments, for scapy's ``sniff`` and ``rdpcap``.

An [MS-MQQB] 2.1.1 protocol session is one TCP connection whose byte stream is a sequence of
packets, each announcing its length in its [MS-MQMQ] 2.2.19.1 BaseHeader (PacketSize, plus a
UserMessage's trailing SessionHeader).  A packet may span segments and a segment may hold several
packets, so each direction of each connection is put back in sequence-number order (RFC 9293:
retransmitted bytes dropped, segments that arrive early held until the gap is filled, the SYN
taking one number) and cut with ``packets.StreamSplitter``, the framing every endpoint of the
harness uses.

- ``msmq_layers(frames)``: every whole packet of the frames (a list from ``rdpcap``, a
  ``PacketList`` from ``sniff``), as :class:`~packets.scapy_layers.MSMQ` layers in the order they
  were completed; each carries ``time`` (of the segment that completed it) and ``flow``
  ((source, source port, destination, destination port)).
- ``sniff(offline="f.pcap", session=MSMQSession, prn=...)`` (or live, on the loopback): ``prn``
  gets the same layers.  ``MSMQSession(ports={1801, 2101})`` takes other ports.

A direction whose stream cannot be framed (a BaseHeader without the Signature or with an
impossible PacketSize: the spec closes such a session) yields nothing more; its error is kept in
``MSMQReassembler.errors`` (the latest :data:`MAX_ERRORS`).  What the reassembler holds is bounded
whatever the capture holds: early segments (``max_gap`` bytes per direction, ``max_held`` over
all), and the directions followed at once (``max_flows``, each holding at most one packet being
framed, [MS-MQMQ] 2.2.19.1 at most 0x00400000 bytes): beyond it the least recently active one is
dropped, and its later segments are skipped until a SYN opens it again -- never framed from the
middle of a packet into an error it does not have (of the last ``4 * max_flows`` dropped; one
dropped before those is met again as a direction the capture started in the middle of).

Imported on demand only: ``import packets`` does not import scapy.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from scapy.layers.inet import TCP
from scapy.packet import Packet as ScapyPacket
from scapy.sessions import DefaultSession

from packets.errors import PacketError
from packets.scapy_layers import MSMQ, MSMQ_PORT
from packets.stream import StreamSplitter

__all__ = ["MAX_ERRORS", "MAX_FLOWS", "MSMQReassembler", "MSMQSession", "msmq_layers"]

#: TCP directions (of MSMQ connections) followed at once
MAX_FLOWS = 1024
#: errors kept (the latest), one per direction that could not be framed
MAX_ERRORS = 1024

_MOD = 1 << 32
_SYN, _FIN, _RST = 0x02, 0x01, 0x04

Flow = tuple[str, int, str, int]


@dataclass
class _Direction:
    """One direction of one connection: the next sequence number expected, early segments, framing."""

    next_seq: int | None = None
    early: dict[int, bytes] = field(default_factory=dict)
    early_bytes: int = 0
    splitter: StreamSplitter = field(default_factory=StreamSplitter)
    broken: bool = False


class MSMQReassembler:
    """Feed captured frames in capture order; take whole MSMQ layers out (see the module docstring)."""

    def __init__(
        self,
        ports: Iterable[int] = (MSMQ_PORT,),
        max_gap: int = 1 << 24,
        max_held: int = 1 << 26,
        max_flows: int = MAX_FLOWS,
    ) -> None:
        self.ports = frozenset(ports)
        self.max_gap = max_gap
        self.max_held = max_held
        self.max_flows = max_flows
        self.errors: list[tuple[Flow, PacketError]] = []
        self.held = 0  # early bytes held, over every direction
        self._flows: OrderedDict[Flow, _Direction] = OrderedDict()  # least recently active first
        self._dropped: OrderedDict[Flow, None] = OrderedDict()  # skipped until a SYN (bounded too)

    def feed(self, frame: ScapyPacket) -> list[MSMQ]:
        """The packets this frame completes (none for a frame of no MSMQ connection)."""
        tcp = frame.getlayer(TCP)
        if tcp is None or not ({tcp.sport, tcp.dport} & self.ports):
            return []
        ip = tcp.underlayer
        flow: Flow = (str(getattr(ip, "src", "")), int(tcp.sport), str(getattr(ip, "dst", "")), int(tcp.dport))
        flags = int(tcp.flags)
        state = self._flows.get(flow)
        if flags & _SYN:
            self._forget(flow)
            self._dropped.pop(flow, None)
            state = self._follow(flow, _Direction(next_seq=(int(tcp.seq) + 1) % _MOD))
        elif state is None:
            if flow in self._dropped:  # dropped mid-stream: its bytes cannot be framed any more
                if flags & (_FIN | _RST):
                    del self._dropped[flow]
                return []
            state = self._follow(flow, _Direction())
        else:
            self._flows.move_to_end(flow)
        payload = bytes(tcp.payload)
        out: list[MSMQ] = []
        if payload and not state.broken:
            for data in self._in_order(state, int(tcp.seq), payload):
                out.extend(self._frame(flow, state, data, float(frame.time)))
        if flags & (_FIN | _RST):
            self._forget(flow)
        return out

    def _follow(self, flow: Flow, state: _Direction) -> _Direction:
        """Follow a new direction; beyond ``max_flows`` drop the least recently active one."""
        self._flows[flow] = state
        if len(self._flows) > self.max_flows:
            old = next(iter(self._flows))
            self._forget(old)
            self._dropped[old] = None
            if len(self._dropped) > 4 * self.max_flows:  # a key each: met again, as mid-connection
                self._dropped.popitem(last=False)
        return state

    def _forget(self, flow: Flow) -> None:
        state = self._flows.pop(flow, None)
        if state is not None:
            self.held -= state.early_bytes

    def _in_order(self, state: _Direction, seq: int, payload: bytes) -> list[bytes]:
        """The stream bytes this segment makes contiguous (retransmitted bytes dropped)."""
        if state.next_seq is None:  # the capture started mid-connection
            state.next_seq = seq
        ahead = (seq - state.next_seq) % _MOD
        if ahead >= _MOD // 2:  # starts before next_seq: keep only what is new
            seen = _MOD - ahead
            if seen >= len(payload):
                return []
            payload, seq = payload[seen:], state.next_seq
        elif ahead:
            fits = state.early_bytes + len(payload) <= self.max_gap and self.held + len(payload) <= self.max_held
            if seq not in state.early and fits:
                state.early[seq] = payload
                state.early_bytes += len(payload)
                self.held += len(payload)
            return []
        ready = [payload]
        state.next_seq = (seq + len(payload)) % _MOD
        while state.early:
            held = None
            for start in list(state.early):
                behind = (state.next_seq - start) % _MOD
                if behind < _MOD // 2:  # starts at or before next_seq
                    held = start
                    break
            if held is None:
                break
            data = state.early.pop(held)
            state.early_bytes -= len(data)
            self.held -= len(data)
            skip = (state.next_seq - held) % _MOD
            if skip < len(data):
                ready.append(data[skip:])
                state.next_seq = (state.next_seq + len(data) - skip) % _MOD
        return ready

    def _frame(self, flow: Flow, state: _Direction, data: bytes, ts: float) -> list[MSMQ]:
        try:
            pieces = state.splitter.feed(data)
        except PacketError as e:
            state.broken = True
            self.errors.append((flow, e))
            if len(self.errors) > MAX_ERRORS:
                del self.errors[0]
            return []
        out = []
        for piece in pieces:
            layer = MSMQ(piece.data)
            layer.time = ts
            object.__setattr__(layer, "flow", flow)
            out.append(layer)
        return out


def msmq_layers(frames: Iterable[ScapyPacket], ports: Iterable[int] = (MSMQ_PORT,)) -> Iterator[MSMQ]:
    """Every whole MSMQ packet of ``frames`` (capture order), reassembled per TCP direction."""
    reassembler = MSMQReassembler(ports)
    for frame in frames:
        yield from reassembler.feed(frame)


class MSMQSession(DefaultSession):
    """``sniff(session=MSMQSession, prn=...)``: ``prn`` (and the returned list) gets whole MSMQ
    layers instead of frames; ``MSMQSession(ports={...})`` for other ports than 1801."""

    def __init__(self, *args: Any, ports: Iterable[int] = (MSMQ_PORT,), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reassembler = MSMQReassembler(ports)

    def process(self, pkt: ScapyPacket) -> ScapyPacket | None:
        """The first packet the frame completes (``recv`` yields them all)."""
        layers = self.reassembler.feed(pkt)
        return layers[0] if layers else None

    def recv(self, sock: Any) -> Iterator[ScapyPacket]:
        pkt = sock.recv()
        if pkt is None:
            return
        yield from self.reassembler.feed(pkt)
