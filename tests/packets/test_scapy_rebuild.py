"""A dissected frame carrying MSMQ builds back byte for byte through scapy's implicit build
(which clones every layer), also after a lower layer's field is deleted for recomputation."""

from __future__ import annotations

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether

import packets.scapy_layers  # noqa: F401  (binds MSMQ to TCP 1801)
from benchmarks.messages import typical_user_message


def test_an_unchanged_frame_rebuilds_after_its_checksums_are_deleted() -> None:
    payload = typical_user_message(False) + b"\x10\x00\x03\x00LIOR"  # a packet and the start of the next
    frame = Ether() / IP(src="10.0.0.2", dst="10.0.0.1") / TCP(sport=40000, dport=1801, flags="PA") / payload
    wire = bytes(frame)
    rebuilt = Ether(wire)
    assert type(rebuilt[TCP].payload).__name__ == "MSMQ"
    del rebuilt[IP].chksum
    del rebuilt[TCP].chksum
    assert bytes(rebuilt) == wire
