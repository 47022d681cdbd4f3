"""A stream whose framing breaks loses only what follows the break: the whole packets before a
BaseHeader that cannot start a packet ([MS-MQMQ] 2.2.19.1) are decoded and listed."""

from __future__ import annotations

from benchmarks.messages import connection_parameters, establish_connection, typical_user_message
from harness.capture.framing import decode_stream


def test_packets_before_a_framing_error_are_listed() -> None:
    good = establish_connection() + connection_parameters() + typical_user_message(False)
    bad = b"\x20" + bytes(15)  # VersionNumber 0x20: no packet starts here
    report = decode_stream("s", good + bad + typical_user_message(False))
    kinds = [p.packet.kind.name for p in report.packets]
    assert kinds == ["EstablishConnection", "ConnectionParameters", "UserMessage"]
    assert [p.offset for p in report.packets] == [0, 572, 604]
    assert report.errors and len(good) <= report.errors[0].offset < len(good) + 16  # a field of the bad header
