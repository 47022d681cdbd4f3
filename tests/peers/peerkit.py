"""Helpers for the peer tests: packet bytes built with ``packets`` only, a plain-socket client, and
an InitiatorLink session used to show the peer still serves.

The plain-socket client never touches harness.session: what it sends is what ``packets.build``
makes of headers written here from [MS-MQMQ] 2.2.19-2.2.20 and [MS-MQQB] 2.2.
"""

from __future__ import annotations

import socket
import struct
import time
import uuid
from typing import Any

from construct import Container

import packets
from harness.peers import InitiatorLink, SimulatedPeer
from harness.session import Initiator, SessionConfig, user_message
from packets import GUID, NULL_GUID, Packet, StreamSplitter, base
from packets import session as sp
from packets.mqrr import COMPOUND_MESSAGE_HEADER, SRMP_ENVELOPE_HEADER
from packets.optional import TransactionHeaderFlags, default_transaction_header
from packets.properties import default_message_properties_header
from packets.user import UserHeaderFlags, default_user_header

CLIENT = GUID("{11111111-2222-3333-4444-555555555555}")
OTHER = GUID("{99999999-8888-7777-6666-555555555555}")
FAST = SessionConfig(session_retry_connect=0.01)


# ---------------------------------------------------------------------------------------------
# Packet bytes


def ec_request(server: GUID = NULL_GUID, *, client: GUID = CLIENT, cs: bool = False) -> bytes:
    """EstablishConnection request ([MS-MQQB] 2.2.3, 3.1.5.2.3)."""
    return packets.build(sp.establish_connection(client, server, int(time.monotonic() * 1000) & 0xFFFFFFFF, refused=cs))


def cp_request(*, cs: bool = False, window: int = 64) -> bytes:
    """ConnectionParameters request ([MS-MQQB] 2.2.2)."""
    timeouts = sp.RECOVERABLE_ACK_TIMEOUT_RANGE[0], sp.ACK_TIMEOUT_RANGE[0]
    return packets.build(sp.connection_parameters(*timeouts, window, refused=cs))


def message_headers(
    destination: GUID,
    message_id: int,
    body: bytes = b"",
    *,
    delivery: str = "express",
    tx: tuple[int, int] = (0, 0),
    tx_sequence_id: int = 1,
    source: GUID = CLIENT,
    session_header: Container | None = None,
) -> Container:
    """Headers of a UserMessage Packet to private queue 1 of ``destination`` ([MS-MQMQ] 2.2.20):
    DM 1 for recoverable and transactional, a TransactionHeader (TxSequenceNumber,
    PreviousTxSequenceNumber = ``tx``) for transactional."""
    transactional = delivery == "transactional"
    uflags = UserHeaderFlags.make(MP=1, DQ=0x3, DM=0 if delivery == "express" else 1, TH=int(transactional))
    bflags = base.BaseHeaderFlags.make(PR=0 if transactional else 3, SH=int(session_header is not None))
    headers = Container(
        BaseHeader=base.default_base_header(Flags=bflags, TimeToReachQueue=base.INFINITE),
        UserHeader=default_user_header(
            SourceQueueManager=source,
            QueueManagerAddress=destination,
            MessageID=message_id,
            Flags=uflags,
            DestinationQueue=Container(PrivateQueueIdentifier=1),
        ),
    )
    if transactional:
        headers.TransactionHeader = default_transaction_header(
            tx_sequence_id,
            Flags=TransactionHeaderFlags.make(FM=int(tx[0] == 1), LM=0),
            TxSequenceNumber=tx[0],
            PreviousTxSequenceNumber=tx[1],
        )
    headers.MessagePropertiesHeader = default_message_properties_header(body)
    if session_header is not None:
        headers.SessionHeader = session_header
    return headers


def user_message_bytes(destination: GUID, message_id: int, body: bytes = b"", **kw: Any) -> bytes:
    return packets.build(message_headers(destination, message_id, body, **kw))


def session_ack_bytes(
    ack: int = 0,
    *,
    recoverable_base: int = 0,
    flags: int = 0,
    sent: int = 0,
    recoverable_sent: int = 0,
    window: int = 64,
) -> bytes:
    """SessionAck ([MS-MQQB] 2.2.6): AckSequenceNumber, RecoverableMsgAckSeqNumber/Flags, and the
    sender's own UserMsgSequenceNumber/RecoverableMsgSeqNumber."""
    return packets.build(sp.session_ack(ack, recoverable_base, flags, sent, recoverable_sent, window))


def order_ack_bytes(destination: GUID, number: int = 1) -> bytes:
    return packets.build(sp.order_ack(1, number, source_qm=CLIENT, destination_qm=destination, message_id=1))


def final_ack_bytes(destination: GUID, message_id: int = 77) -> bytes:
    return packets.build(sp.final_ack(1, 1, 0, destination, message_id, source_qm=CLIENT, destination_qm=destination))


def queue_jumper(destination: GUID, message_id: int = 1) -> bytes:
    """A UserMessage Packet of an SRMP Message (UserHeader.Flags.AH, [MS-MQRR] 2.2.5.1.2) whose
    SRMPEnvelopeHeader.DataLength has its top bit set (the CVE-2023-21554 "QueueJumper" shape);
    BaseHeader.PacketSize still counts the bytes actually sent."""
    plain = message_headers(destination, message_id, b"body")
    head = len(packets.build(plain))
    envelope = SRMP_ENVELOPE_HEADER.build(dict(HeaderId=1, Data="<se:Envelope/>"))
    compound = COMPOUND_MESSAGE_HEADER.build(dict(HeaderId=2, MsgBodySize=4, MsgBodyOffset=0, Data=b"body"))
    data = bytearray(packets.build(plain) + envelope + compound)
    struct.pack_into("<L", data, 8, len(data))  # BaseHeader.PacketSize
    uflags_at = 16 + 44  # UserHeader.Flags: after two GUIDs and three u32
    (uflags,) = struct.unpack_from("<L", data, uflags_at)
    struct.pack_into("<L", data, uflags_at, uflags | 1 << 25)  # AH
    (length,) = struct.unpack_from("<L", data, head + 4)
    struct.pack_into("<L", data, head + 4, length | 0x80000000)  # SRMPEnvelopeHeader.DataLength
    return bytes(data)


# ---------------------------------------------------------------------------------------------
# A plain-socket client


class RawClient:
    """A TCP client that sends bytes and splits what comes back into packets."""

    def __init__(self, address: tuple[str, int], timeout: float = 5.0) -> None:
        self.sock = socket.create_connection(address, timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.splitter = StreamSplitter()
        self.received: list[Packet] = []
        self.eof = False

    def send(self, *chunks: bytes) -> None:
        for chunk in chunks:
            self.sock.sendall(chunk)

    def read(self, count: int = 1, timeout: float = 5.0) -> list[Packet]:
        """Read until ``count`` more packets arrived (or EOF / timeout); returns the new ones."""
        start = len(self.received)
        deadline = time.monotonic() + timeout
        while len(self.received) - start < count and not self.eof:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(1 << 16)
            except TimeoutError:
                break
            except ConnectionError:
                self.eof = True
                break
            if not data:
                self.eof = True
                break
            self.received.extend(packets.parse(p.data, strict=False) for p in self.splitter.feed(data))
        return self.received[start:]

    def wait_eof(self, timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        while not self.eof and time.monotonic() < deadline:
            self.read(1, deadline - time.monotonic())
        return self.eof

    def handshake(self, server: GUID = NULL_GUID) -> tuple[Packet, Packet]:
        self.send(ec_request(server))
        (ec,) = self.read(1)
        self.send(cp_request())
        (cp,) = self.read(1)
        return ec, cp

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------------------------------
# The peer still serves


def bodies(delivered: list[Packet]) -> list[bytes]:
    return [bytes(p.MessagePropertiesHeader.MessageBody) for p in delivered]


class NormalSession:
    """An InitiatorLink session with the peer, kept open around whatever a test does to the peer."""

    def __init__(self, peer: SimulatedPeer, tag: str) -> None:
        self.peer, self.tag = peer, tag
        # a queue manager of its own: MessageIDs restart at 1 and the peer's history is shared
        self.client = GUID(uuid.uuid4())
        self.initiator = Initiator(self.client, peer.identifier, config=FAST)
        self.link = InitiatorLink(self.initiator, peer.address, timeout=5.0)
        self.sent = 0

    def deliver(self, count: int, timeout: float = 10.0) -> None:
        """Send ``count`` more express messages and wait until the peer delivered them."""
        first = self.sent
        for n in range(first, first + count):
            self.link.send_message(user_message(self.client, self.peer.identifier, f"{self.tag}-{n}".encode()))
        self.sent += count
        want = {f"{self.tag}-{n}".encode() for n in range(self.sent)}
        ok = self.link.run_until(lambda: want <= set(bodies(self.peer.delivered)), timeout)
        assert ok, f"the peer did not deliver {self.tag} messages {first}..{self.sent - 1}"

    def close(self) -> None:
        self.link.close()


TRANSPORT_ERRORS = ("read timeout", "receive failed", "send failed")


def no_crash(peer: SimulatedPeer) -> None:
    """Every connection ended by the protocol or the transport, never by an exception in the peer."""
    errors = [c.error for c in peer.connections if c.error and not c.error.startswith(TRANSPORT_ERRORS)]
    assert not errors, errors[:3]


def still_serves(peer: SimulatedPeer, tag: str = "after") -> None:
    """A new connection gets a whole session: establishment, 3 messages delivered, no violation."""
    s = NormalSession(peer, tag)
    try:
        s.deliver(3)
        assert not s.link.violations
    finally:
        s.close()
