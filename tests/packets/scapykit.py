"""Shared pieces of the packets.scapy_stream tests: a short MSMQ session stream
([MS-MQQB] 2.2: EstablishConnection, ConnectionParameters, OrderAck, SessionAck) and the TCP
segments that carry it ([MS-MQQB] 2.1.1, port 1801)."""

from __future__ import annotations

from typing import Any

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether

import packets
from packets import GUID
from packets import session as sp

CLIENT = GUID("{C626EA11-E6B6-9749-9595-9150557358D1}")
STREAM = [
    packets.build(sp.establish_connection(CLIENT)),
    packets.build(sp.connection_parameters()),
    packets.build(sp.order_ack(1, 2, source_qm=CLIENT, destination_qm=CLIENT)),
    packets.build(sp.session_ack(1)),
]
DATA = b"".join(STREAM)


def segment(seq: int, payload: bytes, flags: str = "PA", sport: int = 40000, dport: int = 1801) -> Any:
    """One Ethernet frame of a TCP segment from 192.0.2.1 to 192.0.2.2 carrying ``payload``."""
    return (
        Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
        / IP(src="192.0.2.1", dst="192.0.2.2")
        / TCP(sport=sport, dport=dport, seq=seq, flags=flags)
        / payload
    )
