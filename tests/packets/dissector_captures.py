"""Captures for the Wireshark dissector test: every bundled hex fixture on the wire.

``fixture_capture`` writes the [MS-MQQB] 4 example frames and the fuzz seeds
(fixtures/mqqb-examples, fixtures/fuzz-seeds: UserMessages with every optional header,
EstablishConnection, ConnectionParameters, SessionAck, OrderAck, FinalAck) and a few UserMessages
built here for what they leave out (``rich_messages``) as one TCP connection
on port 1801, the packets alternating between the two directions and each direction's byte
stream cut into segments of varying sizes (a BaseHeader split across segments, several packets
in one segment, a packet over many segments), and the Ping packets as UDP datagrams on port
3527 ([MS-MQQB] 2.1.2).  ``python -m tests.packets.dissector_captures DIR`` writes it as
DIR/msmq-fixtures.pcap (fixtures/captures holds the copy bundled with the repository).
"""

from __future__ import annotations

import sys
from pathlib import Path

from construct import Container, ListContainer

from harness.decoding import read_hex
from packets import GUID, PacketError, build, parse_ping
from packets.base import BaseHeaderFlags

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
CLIENT, SERVER = ("10.0.0.2", 49731), ("10.0.0.1", 1801)
PING_CLIENT, PING_SERVER = ("10.0.0.2", 3527), ("10.0.0.1", 3527)
# segment sizes, taken in turn: a BaseHeader split in two, single bytes, several packets at once
SEGMENT_SIZES = (1460, 7, 100, 16, 3, 600, 1, 40, 2900, 9)


def fixture_packets() -> tuple[list[bytes], list[bytes]]:
    """(session packets, Ping datagrams) of the bundled hex fixtures, in file-name order."""
    files = sorted((FIXTURES / "mqqb-examples").glob("*.hex")) + sorted((FIXTURES / "fuzz-seeds").glob("*.hex"))
    tcp: list[bytes] = []
    udp: list[bytes] = []
    for path in files:
        data = read_hex(path.read_text())
        try:  # as harness.capture.framing.decode_stream tells a Ping datagram from a session stream
            parse_ping(data, strict=True)
        except PacketError:
            tcp.append(data)
        else:
            udp.append(data)
    return tcp + rich_messages(), udp


def _guid(n: int) -> GUID:
    return GUID(bytes((n + i) & 0xFF for i in range(16)))


def _direct(name: str) -> Container:
    return Container(Count=None, DirectFormatName=name)


def _element(kind: int, n: int) -> Container:
    formats = {
        1: Container(PublicQueueIdentifier=_guid(n)),
        2: Container(SourceQueueManager=_guid(n), PrivateQueueIdentifier=n),
        3: Container(DirectFormatName=f"TCP:10.0.0.{n}\\q{n}"),
        6: Container(DistributionListIdentifier=_guid(n)),
    }
    return Container(FormatType=kind, FormatName=formats[kind])


def _mqf(destination: list[Container], admin: list[Container], response: list[Container], sig: bytes) -> Container:
    parts = {}
    for part, header_id, elements in (
        ("Destination", 0x64, destination),
        ("Administration", 0xC8, admin),
        ("Response", 0x12C, response),
    ):
        parts[part] = Container(
            HeaderSize=None, HeaderID=header_id, Reserved=0, ElementCount=None, FormatNameList=ListContainer(elements)
        )
    return Container(**parts, Signature=Container(ID=0x015E, Reserved=0, Size=None, Signature=sig))


def rich_messages() -> list[bytes]:
    """UserMessages the fixtures leave out: every queue format type, ConnectorType, a
    TransactionHeader with ConnectorQMGuid, SecurityData items of odd sizes, a DebugHeader with
    QueueIdentifier, SOAP and SRMP text, MultiQueueFormatHeader elements of every FormatType,
    non-ASCII labels, extension data and odd-sized bodies."""
    from packets.optional import DebugHeaderFlags, SecurityHeaderFlags, TransactionHeaderFlags
    from packets.properties import default_message_properties_header
    from packets.user import UserHeaderFlags, default_user_header

    out = []
    variants = (
        # DQ, AQ, RQ, CQ, AH, optional headers
        (
            0x5,
            0x6,
            0x7,
            1,
            0,
            (
                "TransactionHeader",
                "SecurityHeader",
                "DebugHeader",
                "SoapHeader",
                "MultiQueueFormatHeader",
                "SessionHeader",
            ),
        ),
        (0x3, 0x2, 0x4, 0, 1, ("SecurityHeader", "SoapHeader")),
        (0x7, 0x3, 0x5, 0, 0, ("MultiQueueFormatHeader", "DebugHeader")),
        (0x7, 0x7, 0x6, 1, 0, ("TransactionHeader", "SessionHeader")),
        (0x0, 0x5, 0x1, 0, 0, ()),
    )
    for n, (dq, aq, rq, cq, ah, present) in enumerate(variants):
        queues = {
            0x2: Container(PrivateQueueIdentifier=0x1000 + n),
            0x3: Container(PrivateQueueIdentifier=4 + n),
            0x4: Container(PrivateQueueIdentifier=0x77),
            0x5: Container(PublicQueueIdentifier=_guid(40 + n)),
            0x6: Container(SourceQueueManager=_guid(60 + n), PrivateQueueIdentifier=0xABCDEF),
            0x7: _direct(f"TCP:192.168.{n}.1\\PRIVATE$\\queue-{'x' * n}"),
        }
        th = int("TransactionHeader" in present)
        headers = Container()
        headers.BaseHeader = Container(
            VersionNumber=0x10,
            Reserved=0,
            Signature=0x524F494C,
            PacketSize=None,
            TimeToReachQueue=0x1234 * n,
            Flags=BaseHeaderFlags.make(
                PR=0 if th else n % 8,
                SH=int("SessionHeader" in present),
                DH=int("DebugHeader" in present),
                TR=int("DebugHeader" in present),
            ),
        )
        headers.UserHeader = default_user_header(
            SourceQueueManager=_guid(n),
            QueueManagerAddress=_guid(20 + n) if dq in (3, 5) else GUID(),
            TimeToBeReceived=3600 + n,
            SentTime=1_700_000_000 + n,
            MessageID=1000 + n,
            Flags=UserHeaderFlags.make(
                RC=n,
                DM=1 if th else n % 2,
                JN=n % 2,
                DQ=dq,
                AQ=aq,
                RQ=rq,
                TH=th,
                MP=1,
                CQ=cq,
                AH=ah,
                SH=int("SecurityHeader" in present),
                MQ=int("MultiQueueFormatHeader" in present),
                HH=int("SoapHeader" in present),
            ),
            DestinationQueue=queues.get(dq),
            AdminQueue=queues.get(aq),
            ResponseQueue=queues.get(rq),
            ConnectorType=_guid(80 + n) if cq else None,
        )
        if th:
            headers.TransactionHeader = Container(
                Flags=TransactionHeaderFlags.make(CG=n % 2 ^ 1, FM=1, LM=1, ID=0xABCDE),
                TxSequenceID=Container(Ordinal=7 + n, TimeStamp=0x5F000000 + n),
                TxSequenceNumber=3 + n,
                PreviousTxSequenceNumber=2 + n,
                ConnectorQMGuid=_guid(90) if n % 2 == 0 else None,
            )
        if "SecurityHeader" in present:
            items = {
                "SecurityID": b"\x01" * (5 + n),
                "EncryptionKey": b"\x02" * 3,
                "Signature": b"\x03" * 7,
                "SenderCert": b"",
                "ProviderInfo": b"\x05" * (2 + n),
            }
            headers.SecurityHeader = Container(
                Flags=SecurityHeaderFlags.make(ST=1, EB=1, AI=1),
                SenderIdSize=None,
                EncryptionKeySize=None,
                SignatureSize=None,
                SenderCertSize=None,
                ProviderInfoSize=None,
                SecurityData=Container(**items),
            )
        headers.MessagePropertiesHeader = default_message_properties_header(
            bytes(range(n * 37 % 256)) * 3 + b"\xff" * n,
            Flags=0x5 if aq else 0,
            MessageClass=0x0001 if n == 4 else 0,
            Label=("Prüfung ✓ ", "€", None, "label", "")[n],
            ExtensionSize=None,
            ExtensionData=b"\xee" * (n + 1) if n % 2 else b"",
            MessageSize=None,
            AllocationBodySize=None,
            CorrelationID=bytes(range(20)),
            ApplicationTag=0xA5A5 + n,
            BodyType=0x11,
        )
        if "DebugHeader" in present:
            headers.DebugHeader = Container(Flags=DebugHeaderFlags(1 | 0x4 * n), Reserved=0, QueueIdentifier=_guid(70))
        if ah:
            headers.SRMPEnvelopeHeader = Container(HeaderId=0, Reserved=0, DataLength=None, Data="<se:Envelope/>")
            headers.CompoundMessageHeader = Container(
                HeaderId=0x1F4, Reserved=0, HTTPBodySize=None, MsgBodySize=3, MsgBodyOffset=2, Data=b"HTTP/1.1 body"
            )
        if "SoapHeader" in present:
            headers.SoapHeader = Container(
                HeaderSectionID=0x0320,
                Reserved=0,
                HeaderDataLength=None,
                Header="<h>ü</h>" if n == 0 else None,
                BodySectionID=0x0384,
                Reserved1=0,
                BodyDataLength=None,
                Body="<b>x</b>",
            )
        if "MultiQueueFormatHeader" in present:
            headers.MultiQueueFormatHeader = _mqf(
                [_element(k, n + i) for i, k in enumerate((1, 2, 3, 6, 3, 2))],
                [_element(3, 9)] if n == 0 else [],
                [_element(6, 3), _element(1, 4)],
                b"\x5e" * (5 + n),
            )
        if "SessionHeader" in present:
            headers.SessionHeader = Container(
                AckSequenceNumber=1 + n,
                RecoverableMsgAckSeqNumber=2,
                RecoverableMsgAckFlags=0x80000001,
                UserMsgSequenceNumber=5 + n,
                RecoverableMsgSeqNumber=1,
                WindowSize=64,
                Reserved=0,
            )
        out.append(build(headers))
    return out


def _segments(stream: bytes, start: int) -> list[bytes]:
    out, at, i = [], 0, start
    while at < len(stream):
        n = SEGMENT_SIZES[i % len(SEGMENT_SIZES)]
        out.append(stream[at : at + n])
        at += n
        i += 1
    return out


def fixture_capture(path: Path) -> Path:
    """Write the fixtures' capture to ``path`` (deterministic bytes)."""
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap

    tcp, udp = fixture_packets()
    streams = {"client": b"".join(tcp[0::2]), "server": b"".join(tcp[1::2])}
    ends = {"client": (CLIENT, SERVER), "server": (SERVER, CLIENT)}
    isn = {"client": 1000, "server": 500000}
    sent = {"client": 0, "server": 0}
    frames = []

    def frame(direction: str, flags: str, payload: bytes = b"", syn: int = 0) -> None:
        (src, sport), (dst, dport) = ends[direction]
        other = "server" if direction == "client" else "client"
        seq = isn[direction] + syn + sent[direction]
        ack = isn[other] + 1 + sent[other] if "A" in flags else 0
        frames.append(
            Ether(src="02:00:00:00:00:02", dst="02:00:00:00:00:01")
            / IP(src=src, dst=dst, id=len(frames) + 1)
            / TCP(sport=sport, dport=dport, seq=seq, ack=ack, flags=flags, window=65535)
            / payload
        )

    frame("client", "S")
    frame("server", "SA")
    frame("client", "A", syn=1)
    segments = {d: _segments(s, 3 if d == "server" else 0) for d, s in streams.items()}
    turn = 0
    while segments["client"] or segments["server"]:
        direction = ("client", "server")[turn % 2]
        turn += 1
        if not segments[direction]:
            continue
        piece = segments[direction].pop(0)
        frame(direction, "PA", piece, syn=1)
        sent[direction] += len(piece)
    frame("client", "FA", syn=1)
    frame("server", "FA", syn=1)
    for i, datagram in enumerate(udp):
        (src, sport), (dst, dport) = (PING_CLIENT, PING_SERVER) if i % 2 == 0 else (PING_SERVER, PING_CLIENT)
        frames.append(
            Ether(src="02:00:00:00:00:02", dst="02:00:00:00:00:01")
            / IP(src=src, dst=dst, id=len(frames) + 1)
            / UDP(sport=sport, dport=dport)
            / datagram
        )
    for i, f in enumerate(frames):
        f.time = 1_700_000_000 + i / 1000
    wrpcap(str(path), frames)
    return path


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    print(fixture_capture(out / "msmq-fixtures.pcap"))
