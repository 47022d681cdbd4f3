"""Outgoing-queue processing: [MS-MQQB] 3.1.7.12 Message Position Available (seed 003), 3.1.7.11
Construction of a UserMessage Packet ([MS-MQDMPR] 3.1.7.1.30) and 3.1.7.16 Send User Message
Wrapper, on the reference QueueManager; each test names the seed step it covers."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from sessionloop import Wire

import packets
from harness.model import (
    DeliveryGuarantee,
    Message,
    OutgoingQueue,
    OutgoingQueueState,
    Queue,
    QueueManager,
)
from harness.model.adm import ConnectionHistoryEntry
from harness.model.enums import ConnectionStatus
from harness.session import Acceptor, Connect, OutgoingQueueProcessing, SessionError
from harness.session.initiator import OutgoingMessagePosition
from packets import GUID

DIRECT = "DIRECT=TCP:127.0.0.1\\private$\\orders"


def setup(format_name: str = DIRECT, cls: type[Queue] = OutgoingQueue, **attrs: Any) -> tuple[Any, Any, Any]:
    qm = QueueManager()
    q = qm.new_queue(cls, "remote\\private$\\orders")
    if isinstance(q, OutgoingQueue):
        q.DestinationFormatName = format_name
    for name, value in attrs.items():
        setattr(q, name, value)
    qm.QueueCollection.append(q)
    oqp = OutgoingQueueProcessing(qm)
    return qm, q, oqp


def enqueue(qm: Any, q: Any, body: bytes = b"hello", **attrs: Any) -> Message:
    m = Message(body, DestinationQueueFormatName=getattr(q, "DestinationFormatName", ""), **attrs)
    assert qm.enqueue_message(q, m).value == 0
    return m


def test_step_1_a_queue_that_is_not_an_outgoing_queue_is_skipped() -> None:
    qm, q, oqp = setup(cls=Queue)
    enqueue(qm, q)
    assert oqp.initiators == {} and oqp.take() == [] and qm.DispatchCollection == []


def test_step_2_a_multicast_queue_is_skipped() -> None:
    qm, q, oqp = setup(Multicast=True)
    enqueue(qm, q)
    assert oqp.initiators == {} and oqp.take() == [] and q.OutgoingMessageTable == {}


@pytest.mark.parametrize("state", [OutgoingQueueState.Locked, OutgoingQueueState.OnHold])
def test_step_3_a_locked_or_on_hold_queue_is_skipped(state: OutgoingQueueState) -> None:
    qm, q, oqp = setup(State=state)
    enqueue(qm, q)
    assert oqp.initiators == {} and oqp.take() == [] and q.OutgoingMessageTable == {}


@pytest.mark.parametrize("name", ["DIRECT=HTTP://host/msmq/private$/q", "direct=https://host/msmq/q"])
def test_step_4_a_direct_http_or_https_destination_is_skipped(name: str) -> None:
    qm, q, oqp = setup(name)
    enqueue(qm, q)
    assert oqp.initiators == {} and oqp.take() == [] and q.OutgoingMessageTable == {}


def test_step_5_an_empty_connection_history_establishes_a_connection() -> None:
    qm, q, oqp = setup()
    enqueue(qm, q)
    actions = [a for _, a in oqp.take()]
    assert actions == [Connect("127.0.0.1")]


def test_step_5_a_connection_history_entry_means_no_new_connection() -> None:
    qm, q, oqp = setup()
    q.ConnectionHistory.append(ConnectionHistoryEntry(ConnectionStatus.Established, 0, 0, []))
    enqueue(qm, q)
    assert not any(isinstance(a, Connect) for _, a in oqp.take())
    assert len(q.OutgoingMessageTable) == 1


def test_step_6_the_outgoing_message_position_starts_with_flags_false_and_numbers_zero() -> None:
    qm, q, _oqp = setup()
    m = enqueue(qm, q, b"body", Label="a label", DeliveryGuarantee=DeliveryGuarantee.Recoverable, Priority=5)
    (pos,) = q.OutgoingMessageTable.values()
    assert isinstance(pos, OutgoingMessagePosition)
    assert pos.MessagePosition is m.MessagePositionReference
    assert (pos.AwaitingAck, pos.ReceivedSessionAck, pos.ReceivedOrderAck, pos.Transmitted) == (False,) * 4
    assert (pos.SequenceNumber, pos.RecoverableSequenceNumber, pos.TxSequenceNumber) == (0, 0, 0)


def test_step_6_the_user_message_is_constructed_from_the_message() -> None:
    """3.1.7.11 / [MS-MQDMPR] 3.1.7.1.30: the UserMessage Packet from the Message's attributes."""
    qm, q, _oqp = setup()
    enqueue(qm, q, b"body", Label="a label", DeliveryGuarantee=DeliveryGuarantee.Recoverable, Priority=5)
    enqueue(qm, q, b"tx", TransactionIdentifier=7)
    first, second = (packets.parse(packets.build(p.UserMessage)) for p in q.OutgoingMessageTable.values())
    assert first.BaseHeader.Flags.PR == 5 and first.BaseHeader.Flags.IN == 0
    uh = first.UserHeader
    assert GUID(uh.SourceQueueManager) == GUID(qm.Identifier.bytes_le)
    assert uh.Flags.DQ == 0x7 and uh.DestinationQueue.DirectFormatName == "TCP:127.0.0.1\\private$\\orders"
    assert GUID(uh.QueueManagerAddress).is_null and uh.Flags.DM == 1 and uh.Flags.MP == 1 and uh.Flags.TH == 0
    assert (
        first.MessagePropertiesHeader.Label == "a label" and bytes(first.MessagePropertiesHeader.MessageBody) == b"body"
    )
    assert second.UserHeader.Flags.TH == 1 and second.headers.get("TransactionHeader") is not None
    assert [int(p.UserHeader.MessageID) for p in (first, second)] == [1, 2]  # MessageIdOrdinal (3.1.7.1.1)


def test_step_6_a_private_format_name_addresses_the_destination_queue_manager() -> None:
    qm, q, _oqp = setup("PRIVATE=AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE\\0000001a")  # [MS-MQMQ] 2.1.4: no braces
    enqueue(qm, q)
    (pos,) = q.OutgoingMessageTable.values()
    uh = packets.parse(packets.build(pos.UserMessage)).UserHeader
    assert uh.Flags.DQ == 0x3 and uh.DestinationQueue.PrivateQueueIdentifier == 0x1A
    assert GUID(uh.QueueManagerAddress) == GUID("{AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE}")


def test_step_6_a_message_needing_a_security_header_is_refused() -> None:
    qm, q, _oqp = setup()
    with pytest.raises(SessionError, match="SecurityHeader"):
        enqueue(qm, q, AuthenticationLevel="Sig10")


def test_step_7_add_message_to_dispatch_collection_is_raised_with_the_position() -> None:
    qm, q, _oqp = setup()
    seen: list[tuple[Any, Any]] = []
    qm.send_user_message_subscribers.insert(0, lambda data, position: seen.append((data, position)))
    m = enqueue(qm, q)
    (pos,) = q.OutgoingMessageTable.values()
    assert seen == [(pos, m.MessagePositionReference)]  # iData := the position, iPosition := its MessagePosition
    assert qm.DispatchCollection == []  # 3.1.7.16 removed the entry after the Send User Message Event


def test_messages_reach_the_acceptor_through_the_model() -> None:
    """Seed 003 end to end: 3.1.7.12 -> 3.1.5.2 -> 3.1.7.16/3.1.7.1 over the in-memory wire."""
    qm, q, oqp = setup()
    for n in range(30):
        enqueue(qm, q, b"e%d" % n, DeliveryGuarantee=(DeliveryGuarantee.Express, DeliveryGuarantee.Recoverable)[n % 2])
    for n in range(10):
        enqueue(qm, q, b"t%d" % n, TransactionIdentifier=n + 1)
    init = oqp.initiators[id(q)]
    acceptor = Acceptor("{AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE}")
    w = Wire(init, acceptor)
    w.handle("i", [a for _, a in oqp.take()])
    w.finish()
    bodies = [bytes(p.MessagePropertiesHeader.MessageBody) for p in w.delivered]
    assert Counter(bodies) == Counter([b"e%d" % n for n in range(30)] + [b"t%d" % n for n in range(10)])
    assert [b for b in bodies if b.startswith(b"t")] == [b"t%d" % n for n in range(10)]
    assert q.OutgoingMessageTable == {} and acceptor.violations == [] and not w.violations
    assert q.State is OutgoingQueueState.Connected
