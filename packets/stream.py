"""Cutting a TCP byte stream of an MSMQ binary session into packets.

Every packet on a [MS-MQQB] 2.1.1 session starts with a [MS-MQMQ] 2.2.19.1 BaseHeader whose
PacketSize gives the packet's length; a UserMessage's trailing SessionHeader (BaseHeader.Flags.SH
with IN clear) is not counted in PacketSize and follows it.  The splitter never allocates from
a length field: it only ever holds bytes it was given, and rejects a PacketSize above the
spec's maximum (0x00400000) before waiting for it.

A UserMessage may be followed by the [MS-MQRR] 2.2.5 headers of a Message Packet Structure
(ExtensionHeader, 2.2.5.2, and the headers it announces), which no flag announces and PacketSize
does not count: bytes after a UserMessage that begin with an ExtensionHeader's HeaderSize 12 (a
packet begins with BaseHeader.VersionNumber 0x10) stay with it, 12 + RemainingHeadersSize bytes
(``packets.parse`` decodes them).  Only bytes already received are looked at: a UserMessage is
never held back waiting for a trailer that may not come.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from packets.base import BASE_HEADER_SIZE, MAX_PACKET_SIZE, SECTION, SIGNATURE
from packets.errors import PacketError

__all__ = ["StreamPacket", "StreamSplitter", "wire_length"]

_BASE = struct.Struct("<BBHLLL")
_SESSION_HEADER_SIZE = 16
_EXTENSION_HEADER_SIZE = 12  # [MS-MQRR] 2.2.5.2
_U32 = struct.Struct("<L")


class StreamPacket(NamedTuple):
    """One packet's bytes and the stream offset of its first byte."""

    offset: int
    data: bytes


def wire_length(
    base_header: bytes, stream_offset: int = 0, max_size: int = MAX_PACKET_SIZE, *, signature_checked: bool = True
) -> int:
    """Bytes a packet occupies on the wire, from its 16-byte BaseHeader.

    Raises PacketError when the BaseHeader cannot start a packet (wrong Signature, unless
    ``signature_checked`` is false; PacketSize smaller than a BaseHeader or above ``max_size``).
    """
    _version, _reserved, flags, signature, size, _ttrq = _BASE.unpack_from(base_header)
    if signature_checked and signature != SIGNATURE:
        raise PacketError(
            "BaseHeader.Signature",
            stream_offset + 4,
            f"0x{signature:08X} is not 0x524F494C: the stream is not at a packet boundary",
            SECTION,
        )
    if size < BASE_HEADER_SIZE or size > max_size:
        raise PacketError(
            "BaseHeader.PacketSize",
            stream_offset + 8,
            f"{size} is outside {BASE_HEADER_SIZE}..{max_size}",
            SECTION,
        )
    internal, session_header = flags & 0x8, flags & 0x10
    return size + (_SESSION_HEADER_SIZE if session_header and not internal else 0)


class StreamSplitter:
    """Feed bytes as they arrive; take whole packets out.

    ``needed`` says how many more bytes complete the next packet.  After a PacketError the
    stream cannot be resynchronised (the spec closes the session), and every later call
    raises the same error.

    ``signature_checked=False`` frames by PacketSize alone, whatever the BaseHeader.Signature:
    for a reader that judges a wrong Signature itself ([MS-MQQB] 3.1.5.1.2) and must still cut
    the packets that follow it where they begin, not where TCP happened to bundle them.
    """

    def __init__(self, max_packet_size: int = MAX_PACKET_SIZE, *, signature_checked: bool = True) -> None:
        self._buf = bytearray()
        self._offset = 0  # stream offset of _buf[0]
        self._max = max_packet_size
        self._signature_checked = signature_checked
        self._error: PacketError | None = None

    @property
    def offset(self) -> int:
        """Stream offset of the first byte not yet returned in a packet."""
        return self._offset

    @property
    def buffered(self) -> int:
        return len(self._buf)

    @property
    def needed(self) -> int:
        """Bytes still needed to complete the next packet (at least 1 until one is complete)."""
        if self._error is not None:
            raise self._error
        if len(self._buf) < BASE_HEADER_SIZE:
            return BASE_HEADER_SIZE - len(self._buf)
        return max(0, self._length() - len(self._buf))

    def _length(self) -> int:
        try:
            return wire_length(
                bytes(self._buf[:BASE_HEADER_SIZE]), self._offset, self._max, signature_checked=self._signature_checked
            )
        except PacketError as e:
            self._error = e
            raise

    def feed(self, data: bytes | bytearray | memoryview) -> list[StreamPacket]:
        """Add bytes; return every packet now complete, in stream order."""
        if self._error is not None:
            raise self._error
        self._buf += data
        out: list[StreamPacket] = []
        while len(self._buf) >= BASE_HEADER_SIZE:
            length = self._length()
            if len(self._buf) < length:
                break
            trailer = self._trailer(length)
            if trailer is None:
                break
            length += trailer
            out.append(StreamPacket(self._offset, bytes(self._buf[:length])))
            del self._buf[:length]
            self._offset += length
        return out

    def _trailer(self, at: int) -> int | None:
        """Bytes of the [MS-MQRR] 2.2.5 headers that follow the UserMessage ending at ``at``: 0
        when the bytes there (if any) do not begin with an ExtensionHeader, None while one is
        incomplete."""
        buf = self._buf
        if len(buf) - at < 4 or buf[2] & 0x8 or _U32.unpack_from(buf, at)[0] != _EXTENSION_HEADER_SIZE:
            return 0
        if len(buf) - at < _EXTENSION_HEADER_SIZE:
            return None
        total = _EXTENSION_HEADER_SIZE + _U32.unpack_from(buf, at + 4)[0]
        if at + total > self._max:
            return 0  # no such trailer: left to fail as the next packet
        return total if len(buf) - at >= total else None

    def remainder(self) -> bytes:
        """Bytes of an incomplete packet left at the end of the stream."""
        return bytes(self._buf)
