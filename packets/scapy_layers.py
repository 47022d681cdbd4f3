"""scapy layers for MSMQ, delegating every field to the construct definitions.

``MSMQ`` is bound to TCP port 1801 ([MS-MQQB] 2.1.1) and ``MSMQPing`` to UDP port 3527
([MS-MQQB] 2.1.2, 2.2.7).  A layer holds the packet's bytes; dissection, field access
(``pkt[MSMQ].UserHeader.Flags.DQ``), ``show()`` and ``summary()`` all go through
``packets.parse`` — there is no second field list to drift from the spec's.  A TCP segment
carrying several packets dissects into a chain of MSMQ layers; ``tcp_reassemble`` lets
scapy's TCPSession join packets split across segments.

Imported on demand only: ``import packets`` does not import scapy.
"""

from __future__ import annotations

from typing import Any

from scapy.fields import StrField
from scapy.layers.inet import TCP, UDP
from scapy.packet import Packet as ScapyPacket
from scapy.packet import Raw, bind_layers

from packets.base import BASE_HEADER_SIZE
from packets.codec import Packet, parse, parse_ping
from packets.errors import PacketError
from packets.render import render_tree
from packets.stream import wire_length

__all__ = ["MSMQ", "MSMQ_PORT", "PING_PORT", "MSMQPing"]

MSMQ_PORT = 1801
PING_PORT = 3527


def _complete_length(data: bytes) -> int | None:
    """Wire length of the packet at the start of ``data`` if it is all there."""
    if len(data) < BASE_HEADER_SIZE:
        return None
    try:
        n = wire_length(data[:BASE_HEADER_SIZE])
    except PacketError:
        return None
    return n if n <= len(data) else None


class _Delegating(ScapyPacket):
    """A layer whose only field is the packet's bytes; the codec does the rest."""

    fields_desc = [StrField("data", b"")]
    decoded: Packet | None = None

    def getfieldval(self, attr: str) -> Any:
        decoded = self.__dict__.get("decoded")
        if decoded is not None and attr in decoded.headers:
            return decoded.headers[attr]
        return super().getfieldval(attr)

    def mysummary(self) -> str:
        if self.decoded is None:
            return f"{self.name} (incomplete, {len(self.data)} bytes)"
        bad = f", {len(self.decoded.violations)} violations" if self.decoded.violations else ""
        return f"{self.name} {self.decoded.kind} ({self.decoded.size} bytes{bad})"

    def _show_or_dump(
        self,
        dump: bool = False,
        indent: int = 3,
        lvl: str = "",
        label_lvl: str = "",
        first_call: bool = True,
    ) -> str | None:
        pad = label_lvl + lvl
        text = f"{pad}###[ {self.name} ]###\n"
        if self.decoded is None:
            text += f"{pad}  incomplete: {len(self.data)} bytes\n"
        else:
            for line in render_tree(self.decoded).splitlines():
                text += f"{pad}  {line}\n"
        if self.payload:
            text += (
                self.payload._show_or_dump(dump=dump, indent=indent, lvl=lvl, label_lvl=label_lvl, first_call=False)
                or ""
            )
        if first_call and not dump:
            print(text)
            return None
        return text


class MSMQ(_Delegating):
    """One packet of an MSMQ binary session ([MS-MQMQ] 2.2.19-2.2.20, [MS-MQQB] 2.2)."""

    name = "MSMQ"

    def do_dissect(self, s: bytes) -> bytes:
        n = _complete_length(s)
        if n is None:
            self.data, self.decoded = s, None
            return b""
        self.data = s[:n]
        self.decoded = parse(self.data, strict=False)
        return s[n:]

    def guess_payload_class(self, payload: bytes) -> type[ScapyPacket]:
        return MSMQ if len(payload) >= BASE_HEADER_SIZE else Raw

    @classmethod
    def tcp_reassemble(cls, data: bytes, metadata: dict[str, Any], session: dict[str, Any]) -> Any:
        if _complete_length(data) is None:
            return None
        return cls(data)


class MSMQPing(_Delegating):
    """A Ping Packet on UDP port 3527 ([MS-MQQB] 2.1.2, 2.2.7)."""

    name = "MSMQ Ping"

    def do_dissect(self, s: bytes) -> bytes:
        self.data = s
        self.decoded = parse_ping(s, strict=False)
        return b""


bind_layers(TCP, MSMQ, dport=MSMQ_PORT)
bind_layers(TCP, MSMQ, sport=MSMQ_PORT)
bind_layers(UDP, MSMQPing, dport=PING_PORT)
bind_layers(UDP, MSMQPing, sport=PING_PORT)
