"""Hand-encoded MSMQ packets, written with struct straight from the spec's tables.

Independent of the codec on purpose: benchmarks and the fuzzer use them as inputs and seeds, so a
mistake in ``packets`` cannot make its own inputs agree with it.  [MS-MQMQ] 2.2.19-2.2.20 for
the UserMessage, [MS-MQQB] 2.2.2, 2.2.3 and 2.2.6 for the session packets.
"""

from __future__ import annotations

import struct

SOURCE_QM = bytes.fromhex("11ea26c6b6e6499795959150557358d1")
DIRECT_NAME = "TCP:192.168.1.20\\private$\\orders"
LABEL = "order 4711"
BODY = bytes(range(256)) * 4


def _direct_name(name: str) -> bytes:
    data = (name + "\0").encode("utf-16-le")
    raw = struct.pack("<H", len(data)) + data
    return raw + b"\0" * (-(48 + len(raw)) % 4)


def typical_user_message(optional_headers: bool) -> bytes:
    """The benchmark message, encoded by hand from [MS-MQMQ] 2.2.19-2.2.20."""
    user_flags = (7 << 10) | (1 << 21)  # DQ direct, MP
    base_flags = 3  # PR 3
    if optional_headers:
        user_flags |= (1 << 20) | (1 << 5)  # TH, DM recoverable
        base_flags = 1 << 4  # SH; PR 0 for a transactional message
    user = SOURCE_QM + b"\0" * 16 + struct.pack("<LLLL", 0xFFFFFFFF, 1_700_000_000, 4711, user_flags)
    user += _direct_name(DIRECT_NAME)
    tx = struct.pack("<LQLL", 0x4 | 0x8, 0x0000000100000001, 1, 0) if optional_headers else b""
    label = (LABEL + "\0").encode("utf-16-le")
    props = struct.pack(
        "<BBH20sLLLLLLLL", 0, len(label) // 2, 0, b"\0" * 20, 0x11, 0, len(BODY), len(BODY), 0, 0x800E, 0x6610, 0
    )
    props += label + BODY
    props += b"\0" * (-len(props) % 4)
    session = struct.pack("<HHLHHHH", 5, 0, 0, 6, 0, 64, 0) if optional_headers else b""
    size = 16 + len(user) + len(tx) + len(props)
    base = struct.pack("<BBHLLL", 0x10, 0, base_flags, 0x524F494C, size, 345600)
    return base + user + tx + props + session


def base_header(flags: int, size: int, ttrq: int = 0xFFFFFFFF) -> bytes:
    return struct.pack("<BBHLLL", 0x10, 0, flags, 0x524F494C, size, ttrq)


def establish_connection(response: bool = False) -> bytes:
    """[MS-MQQB] 2.2.3: BaseHeader (PR 3, IN) + InternalHeader (PT 2) + 552-byte header."""
    client = SOURCE_QM
    server = bytes.fromhex("909ea0fc90784445 8f11394c43cd8907".replace(" ", ""))
    body = client + server + struct.pack("<LHH", 501140046, 0x0310, 0) + bytes([0x5A if response else 0]) * 512
    return base_header(0x000B, 572) + struct.pack("<HH", 0, 2) + body


def connection_parameters() -> bytes:
    """[MS-MQQB] 2.2.2: BaseHeader + InternalHeader (PT 3) + RecoverableAckTimeout, AckTimeout,
    Reserved, WindowSize."""
    return base_header(0x000B, 32) + struct.pack("<HH", 0, 3) + struct.pack("<LLHH", 0x1F4, 0x4E20, 0, 64)


def session_ack(ack: int = 1) -> bytes:
    """[MS-MQQB] 2.2.6: BaseHeader (IN, SH) + InternalHeader (PT 1) + SessionHeader."""
    return base_header(0x001B, 36) + struct.pack("<HH", 0, 1) + struct.pack("<HHLHHHH", ack, 0, 0, ack, 0, 64, 0)


def _mqf_address(header_id: int, elements: bytes, count: int) -> bytes:
    """[MS-MQMQ] 2.2.20.2 MQFAddressHeader: HeaderSize counts the end padding to 4 bytes."""
    pad = b"\0" * (-len(elements) % 4)
    return struct.pack("<LHHL", 12 + len(elements) + len(pad), header_id, 0, count) + elements + pad


def sized_user_message(size: int, shape: str) -> bytes:
    """A UserMessage of about ``size`` bytes (at most 4 MiB, [MS-MQMQ] 2.2.19.1), made large by
    ``shape``: "body" (MessageBody), "mqf-direct" (a MultiQueueFormatHeader, 2.2.20.1, whose
    Destination lists Direct elements with empty names: 4 bytes each, the most elements per byte)
    or "mqf-named" (Direct elements naming DIRECT_NAME)."""
    if shape == "body":
        length = max(0, size - typical_user_message(False).index(BODY))
        return _with_body((bytes(range(256)) * (length // 256 + 1))[:length])
    small = _with_body(b"")
    name = "" if shape == "mqf-direct" else DIRECT_NAME
    element = struct.pack("<H", 3) + (name + "\0").encode("utf-16-le")  # FormatType 3: Direct
    fixed = len(small) + 3 * 12 + 8
    count = max(1, (size - fixed) // len(element))
    mqf = _mqf_address(0x64, element * count, count) + _mqf_address(0xC8, b"", 0) + _mqf_address(0x12C, b"", 0)
    mqf += struct.pack("<HHL", 0x15E, 0, 0)  # 2.2.20.3 MQFSignatureHeader, no signature
    data = bytearray(small + mqf)
    struct.pack_into("<L", data, 8, len(data))  # BaseHeader.PacketSize
    (flags,) = struct.unpack_from("<L", data, 16 + 44)
    struct.pack_into("<L", data, 16 + 44, flags | 1 << 23)  # UserHeader.Flags.MQ
    return bytes(data)


def _with_body(body: bytes) -> bytes:
    """typical_user_message(False) with another MessageBody (MessageSize, MessageSizeAllocated)."""
    small = typical_user_message(False)
    head = small.index(BODY)  # the body ends the MessagePropertiesHeader, then its padding
    props_at = head - 56 - len((LABEL + "\0").encode("utf-16-le"))  # 2.2.19.3: 56 bytes, then Label
    data = bytearray(small[:head] + body + b"\0" * (-(head + len(body)) % 4))
    struct.pack_into("<LL", data, props_at + 32, len(body), len(body))  # MessageSize, AllocationBodySize
    struct.pack_into("<L", data, 8, len(data))
    return bytes(data)
