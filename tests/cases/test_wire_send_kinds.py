"""A wire case's ``send`` builds the packet kind it names ([MS-MQQB] 2.2.2-2.2.6): an OrderAck
(2.2.4) and a FinalAck (2.2.5) are identified as such by [MS-MQQB] 3.1.5.1.1, not as UserMessages;
the kinds a case may name are the session's kinds of packets.layout.PacketKind, or raw bytes, and
each is built by its entry of the client's table (harness.cases.wireruns.acceptor.CLIENT_PACKETS)
or, for a kind without one, as its neutral sample (packets.session.SAMPLES)."""

from __future__ import annotations

import pytest

import packets
from harness.cases.loader import load_text
from harness.cases.targets.wire import WireOptions
from harness.cases.wire import PACKET_KINDS
from harness.cases.wireruns import AcceptorRun
from harness.cases.wireruns.acceptor import CLIENT_PACKETS, client_packet
from harness.cases.wireruns.base import WireCaseError
from packets import NULL_GUID
from packets import session as sp
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


def test_every_session_kind_can_be_sent_by_its_entry_or_its_sample() -> None:
    """Each session kind builds, by its entry of the client's table or else its sample, a packet
    that [MS-MQQB] 3.1.5.1.1 identifies as its kind: a kind added to PacketKind with neither
    fails here, not in a case's run."""
    (case,) = load_text(CASE, "send.yaml")
    run = AcceptorRun(case, WireOptions())
    for kind in SESSION_KINDS:
        try:
            headers = client_packet(run, kind, {})
        except WireCaseError as e:
            pytest.fail(f"{kind}: {e}")
        assert packets.parse(packets.build(headers), strict=False).kind is kind


def test_the_client_table_builds_from_the_session_and_is_in_the_order_of_the_kinds() -> None:
    """An entry of CLIENT_PACKETS uses what the run knows of its session (here the client's
    QueueManager GUID), not the sample's neutral values; the entries follow SESSION_KINDS."""
    assert tuple(CLIENT_PACKETS) == tuple(k for k in SESSION_KINDS if k in CLIENT_PACKETS)
    (case,) = load_text(CASE, "send.yaml")
    run = AcceptorRun(case, WireOptions())
    headers = client_packet(run, PacketKind.EstablishConnection, {})
    assert headers.EstablishConnectionHeader.ClientGuid == run.client_guid != NULL_GUID


def test_a_kind_without_an_entry_is_sent_as_its_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    (case,) = load_text(CASE, "send.yaml")
    run = AcceptorRun(case, WireOptions())
    monkeypatch.delitem(CLIENT_PACKETS, PacketKind.SessionAck)
    assert packets.build(client_packet(run, PacketKind.SessionAck, {})) == packets.build(
        sp.SAMPLES[PacketKind.SessionAck]()
    )


def test_a_kind_without_a_builder_is_refused() -> None:
    (case,) = load_text(CASE, "send.yaml")
    with pytest.raises(WireCaseError, match="cannot send a Ping packet"):
        client_packet(AcceptorRun(case, WireOptions()), PacketKind.Ping, {})
