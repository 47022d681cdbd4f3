"""Building the UserMessage Packets a session sends: a plain user message and the delivery-class fix-up.

Renders the header choices of [MS-MQMQ] 2.2.20 that [MS-MQQB] 1.3.2.1 ties to the delivery
class: UserHeader.Flags.DM (0 express, 1 recoverable), the TransactionHeader and
UserHeader.Flags.TH of a transactional message (2.2.20.5; BaseHeader.Flags.PR 0, 2.2.19.1),
and the UserHeader.MessageID assignment of [MS-MQQB] 3.1.7.1.1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from construct import Container

import packets
from harness.session.events import DeliveryClass, SessionError
from packets import GUID, Packet, base
from packets.optional import TransactionHeaderFlags
from packets.properties import default_message_properties_header
from packets.user import UserHeaderFlags, default_user_header

__all__ = ["delivery_of", "prepare_message", "user_message"]


def user_message(
    source_qm: GUID | bytes | str,
    destination_qm: GUID | bytes | str,
    body: bytes = b"",
    *,
    queue_id: int = 1,
    label: str | None = None,
    message_id: int = 0,
    sent_time: int = 0,
    delivery: DeliveryClass = DeliveryClass.express,
) -> Container:
    """Headers of a minimal UserMessage Packet to private queue ``queue_id`` of ``destination_qm``
    (UserHeader.Flags.DQ 0x3, MessagePropertiesHeader class MQMSG_CLASS_NORMAL)."""
    headers = Container(
        BaseHeader=base.default_base_header(TimeToReachQueue=base.INFINITE),
        UserHeader=default_user_header(
            SourceQueueManager=GUID(source_qm),
            QueueManagerAddress=GUID(destination_qm),
            SentTime=sent_time,
            MessageID=message_id,
            Flags=UserHeaderFlags.make(MP=1, DQ=0x3),
            DestinationQueue=Container(PrivateQueueIdentifier=queue_id),
        ),
        MessagePropertiesHeader=default_message_properties_header(body, Label=label),
    )
    return prepare_message(headers, delivery)


def _headers(message: Packet | Mapping[str, Any] | bytes) -> Container:
    if isinstance(message, bytes | bytearray | memoryview):
        try:
            return packets.parse(bytes(message)).headers
        except packets.PacketError as e:
            raise SessionError(f"send_message: not a UserMessage Packet: {e}") from e
    if isinstance(message, Packet):
        return message.headers
    if isinstance(message, Mapping):
        return Container(message)
    raise SessionError(f"send_message takes packet headers, a Packet or bytes, not {type(message).__name__}")


def _copy(value: Any) -> Any:
    """A private copy of packet headers: containers and lists are copied, the leaves (int, str,
    bytes, GUID and BitFlags, all immutable) are shared; bytearrays are copied."""
    if isinstance(value, dict):
        out = type(value)()
        for k, v in value.items():
            out[k] = _copy(v)
        return out
    if isinstance(value, list):
        return [_copy(v) for v in value]
    if isinstance(value, bytearray):
        return bytearray(value)
    return value


def prepare_message(message: Packet | Mapping[str, Any] | bytes, delivery: DeliveryClass) -> Container:
    """A private copy of ``message`` whose headers say ``delivery``: DM, TH and a TransactionHeader
    (sequence fields are filled when it is sent, 3.1.7.1.3), no piggy-backed SessionHeader (the
    sender fills one when it sends, 3.1.7.1.3), PacketSize recomputed."""
    headers = _copy(_headers(message))
    if "UserHeader" not in headers or headers.get("UserHeader") is None:
        raise SessionError("send_message: the packet has no UserHeader (not a UserMessage Packet)")
    bh = dict(headers.get("BaseHeader") or {})
    flags = base.BaseHeaderFlags.make(int(bh.get("Flags", base.BaseHeaderFlags.make(PR=3))))
    transactional = delivery is DeliveryClass.transactional
    flags = base.BaseHeaderFlags.make(flags, SH=0, IN=0, **({"PR": 0} if transactional else {}))
    bh.update(Flags=flags, PacketSize=None)
    headers.BaseHeader = base.default_base_header(**bh)
    headers.pop("SessionHeader", None)
    uh = headers.UserHeader
    uh.Flags = UserHeaderFlags.make(
        int(uh.Flags), DM=0 if delivery is DeliveryClass.express else 1, TH=int(transactional)
    )
    if transactional:
        if headers.get("TransactionHeader") is None:
            headers.TransactionHeader = Container(
                Flags=TransactionHeaderFlags.make(FM=1, LM=1),
                TxSequenceID=Container(Ordinal=0, TimeStamp=0),
                TxSequenceNumber=1,
                PreviousTxSequenceNumber=0,
                ConnectorQMGuid=None,
            )
    else:
        headers.pop("TransactionHeader", None)
    return headers


def delivery_of(packet: Packet) -> DeliveryClass:
    """The delivery class a received UserMessage Packet carries."""
    if packet.headers.get("TransactionHeader") is not None:
        return DeliveryClass.transactional
    return DeliveryClass.recoverable if packet.UserHeader.Flags.DM == 1 else DeliveryClass.express
