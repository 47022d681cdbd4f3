"""A wire case's ``send`` builds the packet kind it names ([MS-MQQB] 2.2.2-2.2.6): an OrderAck
(2.2.4) and a FinalAck (2.2.5) are identified as such by [MS-MQQB] 3.1.5.1.1, not as UserMessages;
the kinds a case may name are the session's kinds of packets.layout.PacketKind, or raw bytes."""

from __future__ import annotations

import pytest

import packets
from harness.cases.loader import load_text
from harness.cases.targets.wire import WireOptions
from harness.cases.wire import PACKET_KINDS
from harness.cases.wireruns import AcceptorRun
from packets.layout import SESSION_KINDS, PacketKind

CASE = """\
id: w.send-kinds
title: t
spec: [{section: MS-MQQB 2.2.4, requirement: MQQB-2.2.4-ORDERACK-HEADERS}]
given:
  peer: {under_test: acceptor}
when:
  - action: send
    args: {packet: EstablishConnection}
"""


def test_the_kinds_a_case_names_are_the_session_kinds_and_raw() -> None:
    expected = (*SESSION_KINDS, "raw")
    assert expected == PACKET_KINDS
    assert PacketKind.Ping not in PACKET_KINDS and PacketKind.Unknown not in PACKET_KINDS


@pytest.mark.parametrize("kind", [PacketKind.OrderAck, PacketKind.FinalAck])
def test_send_builds_the_transactional_acknowledgment_it_names(kind: PacketKind) -> None:
    (case,) = load_text(CASE, "send.yaml")
    run = AcceptorRun(case, WireOptions())
    run.start()
    try:
        for step in ("EstablishConnection", "ConnectionParameters"):
            assert run.send({"packet": step}) == {"sent": True}
        assert run.send({"packet": str(kind)}) == {"sent": True}
    finally:
        run.close()
    _, data = run.sent_packets()[-1]
    assert packets.parse(data, strict=False).kind is kind
    assert run.sent[str(kind)].MessagePropertiesHeader.Label == "QM Ordering Ack"
