"""[MS-MQQB] 3.1.7.11 Construction of a UserMessage Packet: each row of [MS-MQDMPR] 3.1.7.1.32
Serialize Message to Buffer the reference sender renders, read back from the built packet, and the
headers of 3.1.7.1.30 it does not construct."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

import packets
from harness.model import Message, OutgoingQueue, QueueManager
from harness.model.enums import MessageClass
from harness.session import OutgoingQueueProcessing, SessionError
from packets import GUID

DIRECT = "DIRECT=TCP:127.0.0.1\\private$\\orders"
G1 = uuid.UUID("3f2504e0-4f89-11d3-9a0c-0305e82c3301")
G2 = uuid.UUID("5b6c7d8e-9fa0-4b1c-8d2e-3f4a5b6c7d8e")


def construct(**attrs: Any) -> packets.Packet:
    """The UserMessage Packet 3.1.7.11 builds for a Message with ``attrs`` (via 3.1.7.12)."""
    qm = QueueManager()
    q = qm.new_queue(OutgoingQueue, "remote\\private$\\orders")
    q.DestinationFormatName = DIRECT
    qm.QueueCollection.append(q)
    OutgoingQueueProcessing(qm)
    m = Message(b"body", DestinationQueueFormatName=DIRECT, **attrs)
    assert qm.enqueue_message(q, m).value == 0
    (pos,) = q.OutgoingMessageTable.values()
    return packets.parse(packets.build(pos.UserMessage))


def test_message_properties_rows() -> None:
    p = construct(
        Label="lbl",
        BodyType=8,
        Extension=b"\x01\x02",
        EncryptionAlgorithm="AES256",
        HashAlgorithm="MD5",
        ApplicationTag=0x1234,
        CorrelationIdentifier=(G1, 9),
        AcknowledgementsRequested=("AckFullReceive",),
        AdministrationQueueFormatName="DIRECT=OS:host\\private$\\admin",
        Class=MessageClass.Report,
    )
    mp = p.MessagePropertiesHeader
    assert (mp.Label, mp.BodyType, bytes(mp.ExtensionData), mp.ExtensionSize) == ("lbl", 8, b"\x01\x02", 2)
    assert (mp.EncryptionAlgorithm, mp.HashAlgorithm, mp.ApplicationTag) == (0x6610, 0x8003, 0x1234)
    assert bytes(mp.CorrelationID) == G1.bytes_le + (9).to_bytes(4, "little")
    assert (mp.Flags.PA, mp.Flags.PR, mp.Flags.NA, mp.Flags.NR) == (0, 1, 1, 1)
    assert mp.MessageClass == 0x0001 and mp.PrivacyLevel == 0 and bytes(mp.MessageBody) == b"body"


def test_tracing_sets_tr_and_dh_and_a_debug_header() -> None:
    p = construct(TracingRequested=True, TracingQueueIdentifier=G1)
    assert p.BaseHeader.Flags.TR == 1 and p.BaseHeader.Flags.DH == 1
    assert p.DebugHeader.Flags.QT == 1 and GUID(p.DebugHeader.QueueIdentifier) == GUID(G1.bytes_le)
    plain = construct(TracingRequested=True)  # no tracing queue: QT 0x0, no QueueIdentifier
    assert plain.BaseHeader.Flags.DH == 1 and plain.DebugHeader.Flags.QT == 0
    assert plain.DebugHeader.get("QueueIdentifier") is None
    untraced = construct()
    assert untraced.BaseHeader.Flags.TR == 0 and untraced.BaseHeader.Flags.DH == 0
    assert untraced.headers.get("DebugHeader") is None


def test_transaction_header_rows() -> None:
    p = construct(
        TransactionIdentifier="tx",
        FinalAckRequired=True,
        FirstInTransaction=True,
        LastInTransaction=False,
        ConnectorQueueManagerIdentifier=G2,
        Priority=6,
    )
    th = p.TransactionHeader
    assert (th.Flags.FA, th.Flags.FM, th.Flags.LM, th.Flags.CG) == (1, 1, 0, 1)
    assert GUID(th.ConnectorQMGuid) == GUID(G2.bytes_le)
    assert p.UserHeader.Flags.TH == 1 and p.BaseHeader.Flags.PR == 0  # PR 0x0 with a TransactionHeader


def test_user_header_identities() -> None:
    p = construct(SourceMachineIdentifier=G1, ConnectorTypeIdentifier=G2, DestinationQueueManagerIdentifier=G2)
    uh = p.UserHeader
    assert GUID(uh.SourceQueueManager) == GUID(G1.bytes_le)
    assert uh.Flags.CQ == 1 and GUID(uh.ConnectorType) == GUID(G2.bytes_le)
    assert GUID(uh.QueueManagerAddress).is_null  # a direct destination: NULL, [MS-MQMQ] 2.2.19.2
    plain = construct().UserHeader  # no source machine: the sending queue manager; no connector type
    assert plain.Flags.CQ == 0 and plain.get("ConnectorType") is None


def test_queue_references() -> None:
    uh = construct(
        AdministrationQueueFormatName="PRIVATE=6F1E2D3C-4B5A-4978-8695-A4B3C2D1E0F9\\0000002a",
        AcknowledgementsRequested=("AckNegArrival",),
        ResponseQueueFormatName="DIRECT=OS:host\\private$\\reply",
        PositiveJournalingRequested=True,
        TimeToBeReceived=60,
    ).UserHeader
    assert uh.Flags.AQ == 0x6 and uh.AdminQueue.PrivateQueueIdentifier == 0x2A
    assert uh.Flags.RQ == 0x7 and uh.ResponseQueue.DirectFormatName == "OS:host\\private$\\reply"
    assert (uh.Flags.JP, uh.Flags.JN, uh.TimeToBeReceived) == (1, 0, 60)


@pytest.mark.parametrize(
    ("attrs", "match"),
    [
        ({"AuthenticationLevel": "Sig20"}, "SecurityHeader"),
        ({"PrivacyLevel": "Base"}, "PrivacyLevel"),
        ({"DestinationMultiQueueFormatName": ("DIRECT=OS:a\\q", "DIRECT=OS:b\\q")}, "MultiQueueFormatHeader"),
        ({"HashAlgorithm": "SHA3"}, "HashAlgorithm"),
        ({"AcknowledgementsRequested": ("AckPosArrival",)}, "AdminQueue"),
        ({"AdministrationQueueFormatName": DIRECT}, "AdminQueue"),
        ({"AdministrationQueueType": "PrivateQueueOnAdmin", "AdministrationQueueFormatName": DIRECT}, "Administ"),
    ],
)
def test_what_is_not_constructed_is_refused(attrs: dict[str, Any], match: str) -> None:
    with pytest.raises(SessionError, match=match):
        construct(**attrs)
