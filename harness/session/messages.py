"""Building the UserMessage Packets a session sends: a plain user message and the delivery-class fix-up.

Renders the header choices of [MS-MQMQ] 2.2.20 that [MS-MQQB] 1.3.2.1 ties to the delivery
class: UserHeader.Flags.DM (0 express, 1 recoverable), the TransactionHeader and
UserHeader.Flags.TH of a transactional message (2.2.20.5; BaseHeader.Flags.PR 0, 2.2.19.1),
and the UserHeader.MessageID assignment of [MS-MQQB] 3.1.7.1.1.  :class:`MessageTemplate` is the
header set of many messages to one destination that differ only in their body
(MessagePropertiesHeader.MessageBody, [MS-MQMQ] 2.2.19.3) and the MessageID the sender gives each.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from construct import Container

import packets
from harness.session.actions import DeliveryClass, SessionError
from packets import GUID, Packet, base
from packets.codec import UserMessageTemplate
from packets.fields import BitFlags
from packets.optional import TransactionHeaderFlags
from packets.properties import default_message_properties_header
from packets.user import UserHeaderFlags, default_user_header

__all__ = ["MessageTemplate", "delivery_of", "prepare_message", "user_message"]


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


def _headers(message: Packet | Mapping[str, Any] | bytes) -> Mapping[str, Any]:
    if isinstance(message, dict):  # a Container (the usual case), before the slower Mapping test
        return message
    if isinstance(message, bytes | bytearray | memoryview):
        try:
            return packets.parse(bytes(message)).headers
        except packets.PacketError as e:
            raise SessionError(f"send_message: not a UserMessage Packet: {e}") from e
    if isinstance(message, Packet):
        return message.headers
    if isinstance(message, Mapping):
        return message
    raise SessionError(f"send_message takes packet headers, a Packet or bytes, not {type(message).__name__}")


def _mask(flags: type[BitFlags], *names: str) -> int:
    """The bits of the named sub-fields of a flag word."""
    out = 0
    for name in names:
        shift, width = flags._known_[name]
        out |= ((1 << width) - 1) << shift
    return out


# BaseHeader.Flags cleared by prepare_message: SH and IN always, PR for a transactional message;
# UserHeader.Flags it sets: DM (1 unless express) and TH (transactional).
_BASE_CLEAR = _mask(base.BaseHeaderFlags, "SH", "IN")
_BASE_CLEAR_TX = _BASE_CLEAR | _mask(base.BaseHeaderFlags, "PR")
_USER_CLEAR = _mask(UserHeaderFlags, "DM", "TH")
_USER_SET = {
    DeliveryClass.express: 0,
    DeliveryClass.recoverable: 1 << UserHeaderFlags._known_["DM"][0],
    DeliveryClass.transactional: 1 << UserHeaderFlags._known_["DM"][0] | 1 << UserHeaderFlags._known_["TH"][0],
}
_BASE_DEFAULTS: dict[str, Any] = dict(base.default_base_header())
_DEFAULT_BASE_FLAGS = int(base.BaseHeaderFlags.make(PR=3))


def prepare_message(message: Packet | Mapping[str, Any] | bytes, delivery: DeliveryClass) -> Container:
    """A private copy of ``message`` whose headers say ``delivery``: DM, TH and a TransactionHeader
    (sequence fields are filled when it is sent, 3.1.7.1.3), no piggy-backed SessionHeader (the
    sender fills one when it sends, 3.1.7.1.3), PacketSize recomputed.

    The copy is one level deep: the packet's mapping and each header are new, what a header's
    fields hold (queue formats, element lists, bytes) is shared; the sender replaces fields, it
    never changes what they hold, and encodes the packet when it takes the message
    (:meth:`~harness.session.Initiator.add_outgoing_message_position`)."""
    source = _headers(message)
    if source.get("UserHeader") is None:
        raise SessionError("send_message: the packet has no UserHeader (not a UserMessage Packet)")
    transactional = delivery is DeliveryClass.transactional
    headers = Container()
    for name, value in source.items():
        if name == "SessionHeader" or (name == "TransactionHeader" and not transactional):
            continue
        if name == "BaseHeader":
            headers[name] = None  # made below, in its place
        else:
            headers[name] = Container(value) if isinstance(value, dict) else value
    given = source.get("BaseHeader") or {}
    flags = given.get("Flags")
    flags = _DEFAULT_BASE_FLAGS if flags is None else int(flags)
    flags &= ~(_BASE_CLEAR_TX if transactional else _BASE_CLEAR)
    bh = Container(_BASE_DEFAULTS)
    dict.update(bh, given)
    bh["Flags"] = base.BaseHeaderFlags(flags)
    bh["PacketSize"] = None
    headers["BaseHeader"] = bh
    uh = headers["UserHeader"]
    uh["Flags"] = UserHeaderFlags(int(uh["Flags"]) & ~_USER_CLEAR | _USER_SET[delivery])
    if transactional and headers.get("TransactionHeader") is None:
        headers["TransactionHeader"] = Container(
            Flags=TransactionHeaderFlags.make(FM=1, LM=1),
            TxSequenceID=Container(Ordinal=0, TimeStamp=0),
            TxSequenceNumber=1,
            PreviousTxSequenceNumber=0,
            ConnectorQMGuid=None,
        )
    return headers


def delivery_of(packet: Packet) -> DeliveryClass:
    """The delivery class a received UserMessage Packet carries."""
    if packet.headers.get("TransactionHeader") is not None:
        return DeliveryClass.transactional
    return DeliveryClass.recoverable if packet.UserHeader.Flags.DM == 1 else DeliveryClass.express


class MessageTemplate:
    """The headers of UserMessages to one destination that differ only in their body, for
    :meth:`~harness.session.Initiator.send_bodies` (as a sender of many application payloads to
    one queue uses it): ``MessageTemplate(user_message(source, destination), delivery)``.

    ``message`` is taken as :func:`send_message <harness.session.Initiator.send_message>` takes it
    and :func:`prepare_message` makes the template's private copy for ``delivery``.  Each message
    of the template is those headers with MessagePropertiesHeader.MessageBody := its body,
    MessageSize and AllocationBodySize := the body's length, BaseHeader.PacketSize computed and
    UserHeader.MessageID := the one the sender assigns ([MS-MQQB] 3.1.7.1.1), so the template's
    MessageID must be 0.  An express or recoverable message is encoded from the template's bytes
    (:class:`packets.codec.UserMessageTemplate`: exactly what ``packets.build`` writes for those
    headers); a transactional one has headers of its own, whose TransactionHeader the sender
    fills when it sends it (3.1.7.1.3).
    """

    __slots__ = ("codec", "delivery", "headers")

    def __init__(
        self, message: Packet | Mapping[str, Any] | bytes, delivery: DeliveryClass | str = DeliveryClass.express
    ) -> None:
        self.delivery = DeliveryClass(delivery)
        headers = prepare_message(message, self.delivery)
        if int(headers["UserHeader"].get("MessageID") or 0):
            raise SessionError("MessageTemplate: UserHeader.MessageID must be 0 (the sender assigns each message one)")
        mph = headers.get("MessagePropertiesHeader")
        if mph is None:
            raise SessionError("MessageTemplate: the packet has no MessagePropertiesHeader to carry a body")
        headers["MessagePropertiesHeader"] = Container(mph, MessageSize=None, AllocationBodySize=None)
        self.headers = headers
        self.codec: UserMessageTemplate | None = None
        if self.delivery is not DeliveryClass.transactional:
            self.codec = UserMessageTemplate(headers)

    def message(self, body: bytes, message_id: int = 0) -> Container:
        """The headers of the message carrying ``body`` (a private one-level copy, as
        :func:`prepare_message` makes)."""
        headers = Container(self.headers)
        headers["BaseHeader"] = Container(headers["BaseHeader"])
        headers["UserHeader"] = Container(headers["UserHeader"], MessageID=message_id)
        n = len(body)
        headers["MessagePropertiesHeader"] = Container(
            headers["MessagePropertiesHeader"], MessageBody=bytes(body), MessageSize=n, AllocationBodySize=n
        )
        transaction = headers.get("TransactionHeader")
        if transaction is not None:  # filled per message when it is sent (3.1.7.1.3)
            headers["TransactionHeader"] = Container(transaction)
        return headers
