"""Optional headers of the UserMessage Packet.

Renders [MS-MQMQ] 2.2.20.4 SessionHeader (also the body of the [MS-MQQB] 2.2.6 SessionAck
Packet).
"""

from __future__ import annotations

from construct import Container

from packets.fields import Header, Int16ul, Int32ul, header_parser

SESSION_HEADER_SECTION = "MS-MQMQ 2.2.20.4"

SessionHeader = Header(
    "AckSequenceNumber" / Int16ul,
    "RecoverableMsgAckSeqNumber" / Int16ul,
    "RecoverableMsgAckFlags" / Int32ul,
    "UserMsgSequenceNumber" / Int16ul,
    "RecoverableMsgSeqNumber" / Int16ul,
    "WindowSize" / Int16ul,
    "Reserved" / Int16ul,
)
SESSION_HEADER = header_parser("SessionHeader", SessionHeader)


def check_session_header(headers: Container):  # type: ignore[no-untyped-def]
    """[MS-MQMQ] 2.2.20.4: WindowSize has a valid range from 0x0001 to 0xFFFF."""
    if headers.SessionHeader.WindowSize == 0:
        yield ("SessionHeader.WindowSize", "MUST be in 0x0001-0xFFFF, found 0", SESSION_HEADER_SECTION)
