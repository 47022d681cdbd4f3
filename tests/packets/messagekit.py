"""Packets written byte by byte for the tests of tests/packets (a helper module, not a test module).

UserMessage Packets laid out with ``struct`` from the field tables of [MS-MQMQ] 2.2.19-2.2.20
(BaseHeader, UserHeader with a direct DestinationQueue, MessagePropertiesHeader, a trailing
SessionHeader), the [MS-MQRR] 2.2.5.2 ExtensionHeader and the SRMP UserMessage the public
CVE-2023-21554 scanner sends; and the malformed corpus the generated parsers are compared on
(the fuzzer's seeds, their mutations, truncations and bit flips).
"""

from __future__ import annotations

import random
import struct

from fuzz.fuzz_codec import mutate
from fuzz.seeds import seed_corpus
from packets import mqrr
from packets.fields import GUID

QM = GUID("{c626ea11-e6b6-9749-9595-9150557358d1}")
SIG = 0x524F494C  # BaseHeader.Signature "LIOR"

# UserHeader.Flags ([MS-MQMQ] 2.2.19.2): MP (a MessagePropertiesHeader follows), AH (an SRMP
# envelope and a CompoundMessageHeader follow); BaseHeader.Flags SH ([MS-MQMQ] 2.2.19.1)
MP = 1 << 21
AH = 1 << 25
BSH = 1 << 4

# a SessionHeader ([MS-MQMQ] 2.2.20.4), as it trails a UserMessage
SESSION = struct.pack("<HHLHHHH", 1, 0, 0, 1, 0, 64, 0)


def dq(v: int) -> int:
    """UserHeader.Flags.DQ (the DestinationQueue's type)."""
    return v << 10


def aq(v: int) -> int:
    """UserHeader.Flags.AQ (the AdminQueue's type)."""
    return v << 13


def rq(v: int) -> int:
    """UserHeader.Flags.RQ (the ResponseQueue's type)."""
    return v << 16


def user_fixed(flags: int, qm: bytes = bytes(16)) -> bytes:
    """The fixed part of a UserHeader: SourceQueueManager, QueueManagerAddress, TimeToBeReceived,
    SentTime, MessageID and Flags."""
    return bytes(QM) + qm + struct.pack("<LLLL", 0xFFFFFFFF, 1_700_000_000, 7, flags)


def direct(name: str) -> bytes:
    """A DirectFormatName queue: its length, the UTF-16 name and its NUL, padded to 4 bytes."""
    raw = (name + "\0").encode("utf-16-le")
    out = struct.pack("<H", len(raw)) + raw
    return out + bytes(-len(out) % 4)


def props_bytes(label: str | None = None, ext: bytes = b"", body: bytes = b"", flags: int = 0) -> bytes:
    """A MessagePropertiesHeader ([MS-MQMQ] 2.2.19.3) with its lengths counted."""
    lab = b"" if label is None else (label + "\0").encode("utf-16-le")
    out = struct.pack("<BBH", flags, len(lab) // 2, 0) + bytes(20)
    out += struct.pack("<LLLLLLLL", 0x11, 0, len(body), len(body), 0, 0x800E, 0x6610, len(ext))
    out += lab + ext + body
    return out + bytes(-len(out) % 4)


def user_message_bytes(base_flags: int, user_flags: int, *after_user: bytes, session: bytes = b"") -> bytes:
    """A UserMessage to ``OS:host\\q``: BaseHeader (PacketSize counting all but ``session``),
    UserHeader, the headers ``after_user``, then ``session``."""
    body = user_fixed(user_flags) + direct("OS:host\\q") + b"".join(after_user)
    size = 16 + len(body)
    return struct.pack("<BBHLLL", 0x10, 0, base_flags, SIG, size, 0xFFFFFFFF) + body + session


def extension_header(remaining: int = 0, flags: int = 0) -> bytes:
    """[MS-MQRR] 2.2.5.2 as its diagram lays it out: HeaderSize 12, RemainingHeadersSize, Flags, Reserved."""
    return struct.pack("<LLB", 12, remaining, flags) + bytes(3)


def srmp_user_message(base_flags: int = 3, session: bytes = b"") -> bytes:
    """A UserMessage carrying an SRMP envelope and a CompoundMessageHeader (UserHeader.Flags.AH,
    [MS-MQRR] 2.2.5.1.2), as the scanner sends over the binary protocol."""
    env = mqrr.SRMP_ENVELOPE_HEADER.build(dict(HeaderId=1, Data="<se:Envelope/>"))
    cmh = mqrr.COMPOUND_MESSAGE_HEADER.build(
        dict(HeaderId=2, MsgBodySize=7, MsgBodyOffset=4, Data=b"POST" + b"Message" + b"--")
    )
    return user_message_bytes(base_flags, MP | dq(7) | AH, props_bytes(None), env, cmh, session=session)


def mutated_inputs(seed: int, count: int) -> list[bytes]:
    """The fuzzer's seeds, ``count`` mutations of them, and every truncation and one-bit change
    of the first 200 bytes of the benchmark messages among the seeds."""
    rng = random.Random(seed)
    seeds = seed_corpus()
    out = list(seeds) + [mutate(rng, seeds) for _ in range(count)]
    # truncations and every single-byte change of the benchmark messages' headers
    for data in seeds[:6]:
        out.extend(data[:n] for n in range(0, min(len(data), 200)))
        for i in range(min(len(data), 200)):
            out.append(data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :])
    return out
