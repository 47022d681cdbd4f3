"""A wire case's ``send`` builds the packet kind it names ([MS-MQQB] 2.2.2-2.2.6): an OrderAck
(2.2.4) and a FinalAck (2.2.5) are identified as such by [MS-MQQB] 3.1.5.1.1, not as UserMessages;
the kinds a case may name are the session's kinds of packets.layout.PacketKind, or raw bytes, and
each has its one builder in the client's table (harness.cases.wireruns.acceptor.CLIENT_PACKETS)."""

from __future__ import annotations

import pytest

import packets
from harness.cases.loader import load_text
from harness.cases.targets.wire import WireOptions
from harness.cases.wire import PACKET_KINDS
from harness.cases.wireruns import AcceptorRun
from harness.cases.wireruns.acceptor import CLIENT_PACKETS, client_packet
from harness.cases.wireruns.base import WireCaseError
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


def test_every_kind_a_case_sends_has_one_builder_of_that_kind() -> None:
    """The client's table holds every session kind, in PacketKind's order, and each entry builds
    a packet that [MS-MQQB] 3.1.5.1.1 identifies as its kind: a kind added to PacketKind without
    its builder fails here, not in a case's run."""
    assert tuple(CLIENT_PACKETS) == SESSION_KINDS
    (case,) = load_text(CASE, "send.yaml")
    run = AcceptorRun(case, WireOptions())
    for kind in CLIENT_PACKETS:
        data = packets.build(client_packet(run, kind, {}))
        assert packets.parse(data, strict=False).kind is kind


def test_a_kind_without_a_builder_is_refused() -> None:
    (case,) = load_text(CASE, "send.yaml")
    with pytest.raises(WireCaseError, match="cannot send a Ping packet"):
        client_packet(AcceptorRun(case, WireOptions()), PacketKind.Ping, {})
