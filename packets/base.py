"""BaseHeader: the first 16 bytes of every packet on an MSMQ binary session.

Renders [MS-MQMQ] 2.2.19.1 BaseHeader (VersionNumber, Reserved, Flags PR/IN/SH/DH/TR,
Signature, PacketSize, TimeToReachQueue) and the rules a receiver can check on it alone.
"""

from __future__ import annotations

from collections.abc import Iterator

from construct import Container

from packets.fields import MAX_PACKET_SIZE, BitFlags, FlagsField, Header, Hex8ul, Hex32ul, Int32ul, header_parser
from packets.layout import fast_form_of

SECTION = "MS-MQMQ 2.2.19.1"

VERSION_NUMBER = 0x10
SIGNATURE = 0x524F494C  # wire bytes 4C 49 4F 52 ("LIOR"): the value read as a little-endian u32
BASE_HEADER_SIZE = 16
INFINITE = 0xFFFFFFFF


class BaseHeaderFlags(BitFlags):
    """BaseHeader.Flags ([MS-MQMQ] 2.2.19.1): PR priority (3 bits), IN internal, SH
    SessionHeader present, DH DebugHeader present, TR tracing; X0-X9 reserved."""

    _width_ = 16
    _fields_ = (
        ("PR", 0, 3),
        ("IN", 3, 1),
        ("SH", 4, 1),
        ("DH", 5, 1),
        ("X9", 6, 1),
        ("X8", 7, 1),
        ("TR", 8, 1),
        ("X6", 9, 1),
        ("X5", 10, 1),
        ("X4", 11, 1),
        ("X3", 12, 1),
        ("X2", 13, 1),
        ("X1", 14, 1),
        ("X0", 15, 1),
    )


BaseHeader = Header(
    "VersionNumber" / Hex8ul,
    "Reserved" / Hex8ul,
    "Flags" / FlagsField(BaseHeaderFlags),
    "Signature" / Hex32ul,
    "PacketSize" / Int32ul,
    "TimeToReachQueue" / Int32ul,
)
BASE_HEADER = header_parser("BaseHeader", BaseHeader)


_DEFAULT_FLAGS = BaseHeaderFlags.make(PR=3)


def default_base_header(**fields: object) -> Container:
    """A BaseHeader with the spec's fixed values; PacketSize is computed by ``build``."""
    header = Container(
        VersionNumber=VERSION_NUMBER,
        Reserved=0,
        Flags=_DEFAULT_FLAGS,
        Signature=SIGNATURE,
        PacketSize=None,
        TimeToReachQueue=INFINITE,
    )
    header.update(fields)
    return header


def check_base_header(headers: Container) -> Iterator[tuple[str, str, str]]:
    """MUSTs of [MS-MQMQ] 2.2.19.1 that need no other header."""
    base = headers.BaseHeader
    if base.VersionNumber != VERSION_NUMBER:
        yield (
            "BaseHeader.VersionNumber",
            f"MUST be 0x10, found 0x{base.VersionNumber:02X}",
            SECTION,
        )
    if base.Signature != SIGNATURE:
        yield ("BaseHeader.Signature", f"MUST be 0x524F494C, found 0x{base.Signature:08X}", SECTION)
    if base.PacketSize > MAX_PACKET_SIZE:
        yield ("BaseHeader.PacketSize", f"0x{base.PacketSize:X} exceeds 0x00400000", SECTION)
    if base.PacketSize < BASE_HEADER_SIZE:
        yield ("BaseHeader.PacketSize", f"{base.PacketSize} is smaller than the BaseHeader", SECTION)
    if base.Flags.TR and not base.Flags.DH:
        yield ("BaseHeader.Flags.TR", "TR is set, so DH MUST also be set", SECTION)


@fast_form_of(check_base_header)
def base_header_holds(headers: Container) -> bool:
    """Fast form of :func:`check_base_header`: True exactly when it finds nothing."""
    base = headers["BaseHeader"]
    flags = base["Flags"]
    return (
        base["VersionNumber"] == VERSION_NUMBER
        and base["Signature"] == SIGNATURE
        and BASE_HEADER_SIZE <= base["PacketSize"] <= MAX_PACKET_SIZE
        and not (flags & 0x100 and not flags & 0x20)  # TR without DH
    )
