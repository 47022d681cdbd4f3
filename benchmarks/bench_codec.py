"""Codec speed: a typical UserMessage parsed and built, ours against scapy and a struct ceiling.

The message is what an application sends most: [MS-MQMQ] 2.2.20 with a direct format name
(DQ 7), a label and a 1 KiB body; the second variant adds a TransactionHeader (2.2.20.5) and a
trailing SessionHeader (2.2.20.4).  Compared side by side in one run:

- ours: ``packets.parse`` (strict: full decode, identification and every rule check; every
  header decoded into the Packet, nothing deferred) and ``packets.build`` of the parsed Packet
  (every header encoded from its fields);
- scapy: a hand-written scapy field list for the same headers (how a scapy-based tool would
  dissect MSMQ), dissecting the same bytes.  Two scapy builds: ``bytes()`` of the dissected
  packet (scapy hands back the raw bytes it cached while dissecting) and ``bytes()`` of the
  same layers made from their field values (scapy encodes every field);
- ceiling: a minimal ``struct.unpack_from`` parser that extracts the same fields with no checks
  (and ``struct.pack`` to write them back, for builds);
- between them, for parses: the same struct parser handing out each header as a dictionary by
  spec field name (``struct_named_fields``: what any parser with named fields pays, with no
  checks), and our generated decoders alone (``ours_decode_only``: the headers decoded into their
  fields, GUIDs and flag words, before identification and the rule checks).  ``target`` is the
  rate the codec aims at.

Rates are per core: operations per second of CPU time of this process
(``time.process_time``), so other work on the machine slows the wall clock but not the
figures; ours and the ceiling are measured in the same run, so their ratio is what to compare.
``ours_wall_clock`` is our parse rate per wall-clock second, for reference.
"""

from __future__ import annotations

import struct
import time
import timeit
import tracemalloc
from typing import Any

from scapy.fields import (
    ByteField,
    FieldLenField,
    LEIntField,
    LEShortField,
    StrFixedLenField,
    StrLenField,
    XLEIntField,
    XLEShortField,
)
from scapy.packet import Packet as ScapyPacket

import packets
from benchmarks.messages import sized_user_message, typical_user_message

# --- the ceiling: struct only, no checks --------------------------------------------------------

_BASE = struct.Struct("<BBHLLL")
_USER = struct.Struct("<16s16sLLLL")
_TX = struct.Struct("<LQLL")
_PROPS = struct.Struct("<BBH20sLLLLLLLL")
_SESSION = struct.Struct("<HHLHHHH")


def struct_parse(data: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    out["BaseHeader"] = _BASE.unpack_from(data, 0)
    user = _USER.unpack_from(data, 16)
    flags = user[5]
    at = 16 + 48
    (count,) = struct.unpack_from("<H", data, at)
    name = data[at + 2 : at + 2 + count].decode("utf-16-le")
    at += 2 + count
    at += -(at - 16) % 4
    out["UserHeader"] = (*user, name)
    if flags & (1 << 20):
        out["TransactionHeader"] = _TX.unpack_from(data, at)
        at += 20
    props = _PROPS.unpack_from(data, at)
    start = at
    at += 56
    label = data[at : at + props[1] * 2].decode("utf-16-le")
    at += props[1] * 2 + props[11]
    body = data[at : at + props[6]]
    at += props[6]
    at += -(at - start) % 4
    out["MessagePropertiesHeader"] = (*props, label, body)
    if out["BaseHeader"][2] & 0x10:
        out["SessionHeader"] = _SESSION.unpack_from(data, at)
    return out


_NAMES = {
    "BaseHeader": ("VersionNumber", "Reserved", "Flags", "Signature", "PacketSize", "TimeToReachQueue"),
    "UserHeader": ("SourceQueueManager", "QueueManagerAddress", "TimeToBeReceived", "SentTime", "MessageID",
                   "Flags", "DirectFormatName"),
    "TransactionHeader": ("Flags", "TxSequenceID", "TxSequenceNumber", "PreviousTxSequenceNumber"),
    "MessagePropertiesHeader": ("Flags", "LabelLength", "MessageClass", "CorrelationID", "BodyType",
                                "ApplicationTag", "MessageSize", "AllocationBodySize", "PrivacyLevel",
                                "HashAlgorithm", "EncryptionAlgorithm", "ExtensionSize", "Label", "MessageBody"),
    "SessionHeader": ("AckSequenceNumber", "RecoverableMsgAckSeqNumber", "RecoverableMsgAckFlags",
                      "UserMsgSequenceNumber", "RecoverableMsgSequenceNumber", "WindowSize", "Reserved"),
}


def struct_named(data: bytes) -> dict[str, dict[str, Any]]:
    """:func:`struct_parse` with each header a dictionary by spec field name: the least a parser
    that hands out named fields does, with no checks."""
    return {header: dict(zip(_NAMES[header], values, strict=True)) for header, values in struct_parse(data).items()}


def decode_only(data: bytes) -> None:
    """Our generated decoders alone: the headers decoded into their fields, without identifying
    the packet or checking any rule (what ``packets.parse`` does before its checks)."""
    packets.codec._Walk(data).fast()


def struct_build(out: dict[str, Any]) -> bytes:
    """The same fields packed back, with no checks (the build ceiling)."""
    user = out["UserHeader"]
    name = user[6].encode("utf-16-le")
    parts = [_BASE.pack(*out["BaseHeader"]), _USER.pack(*user[:6]), struct.pack("<H", len(name)), name]
    parts.append(bytes(-(50 + len(name)) % 4))
    if "TransactionHeader" in out:
        parts.append(_TX.pack(*out["TransactionHeader"]))
    props = out["MessagePropertiesHeader"]
    label = props[12].encode("utf-16-le")
    parts += [_PROPS.pack(*props[:12]), label, props[13], bytes(-(56 + len(label) + len(props[13])) % 4)]
    if "SessionHeader" in out:
        parts.append(_SESSION.pack(*out["SessionHeader"]))
    return b"".join(parts)


# --- scapy: a field list per header ------------------------------------------------------------


class SBase(ScapyPacket):  # type: ignore[misc]
    name = "BaseHeader"
    fields_desc = [
        ByteField("VersionNumber", 0x10),
        ByteField("Reserved", 0),
        XLEShortField("Flags", 3),
        XLEIntField("Signature", 0x524F494C),
        LEIntField("PacketSize", 0),
        LEIntField("TimeToReachQueue", 0),
    ]

    def guess_payload_class(self, payload: bytes) -> type[ScapyPacket]:
        return SUser


class SUser(ScapyPacket):  # type: ignore[misc]
    name = "UserHeader"
    fields_desc = [
        StrFixedLenField("SourceQueueManager", b"", 16),
        StrFixedLenField("QueueManagerAddress", b"", 16),
        LEIntField("TimeToBeReceived", 0),
        LEIntField("SentTime", 0),
        LEIntField("MessageID", 0),
        XLEIntField("Flags", 0),
        FieldLenField("Count", None, length_of="Data", fmt="<H"),
        StrLenField("Data", b"", length_from=lambda p: p.Count),
        StrLenField("Padding", b"", length_from=lambda p: -(50 + p.Count) % 4),
    ]

    def guess_payload_class(self, payload: bytes) -> type[ScapyPacket]:
        return STx if self.Flags & (1 << 20) else SProps


class STx(ScapyPacket):  # type: ignore[misc]
    name = "TransactionHeader"
    fields_desc = [
        XLEIntField("Flags", 0),
        StrFixedLenField("TxSequenceID", b"", 8),
        LEIntField("TxSequenceNumber", 0),
        LEIntField("PreviousTxSequenceNumber", 0),
    ]

    def guess_payload_class(self, payload: bytes) -> type[ScapyPacket]:
        return SProps


class SProps(ScapyPacket):  # type: ignore[misc]
    name = "MessagePropertiesHeader"
    fields_desc = [
        ByteField("Flags", 0),
        ByteField("LabelLength", 0),
        LEShortField("MessageClass", 0),
        StrFixedLenField("CorrelationID", b"", 20),
        LEIntField("BodyType", 0),
        LEIntField("ApplicationTag", 0),
        LEIntField("MessageSize", 0),
        LEIntField("AllocationBodySize", 0),
        LEIntField("PrivacyLevel", 0),
        LEIntField("HashAlgorithm", 0),
        LEIntField("EncryptionAlgorithm", 0),
        LEIntField("ExtensionSize", 0),
        StrLenField("Label", b"", length_from=lambda p: p.LabelLength * 2),
        StrLenField("ExtensionData", b"", length_from=lambda p: p.ExtensionSize),
        StrLenField("MessageBody", b"", length_from=lambda p: p.MessageSize),
        StrLenField(
            "Padding", b"", length_from=lambda p: -(56 + p.LabelLength * 2 + p.ExtensionSize + p.MessageSize) % 4
        ),
    ]

    def guess_payload_class(self, payload: bytes) -> type[ScapyPacket]:
        return SSession if len(payload) >= 16 else ScapyPacket.guess_payload_class(self, payload)


class SSession(ScapyPacket):  # type: ignore[misc]
    name = "SessionHeader"
    fields_desc = [
        LEShortField("AckSequenceNumber", 0),
        LEShortField("RecoverableMsgAckSeqNumber", 0),
        LEIntField("RecoverableMsgAckFlags", 0),
        LEShortField("UserMsgSequenceNumber", 0),
        LEShortField("RecoverableMsgSeqNumber", 0),
        LEShortField("WindowSize", 0),
        LEShortField("Reserved", 0),
    ]


def _rate(fn: Any, seconds: float, repeat: int = 3, timer: Any = time.process_time) -> float:
    """Calls per CPU second (per wall-clock second with ``timer=time.perf_counter``): the best
    of ``repeat`` runs of about ``seconds / repeat`` each."""
    number = 1
    while True:
        elapsed = timeit.timeit(fn, number=number, timer=timer)
        if elapsed >= seconds / repeat:
            break
        number = max(number * 2, int(number * seconds / repeat / max(elapsed, 1e-6)))
    best = min([elapsed, *timeit.repeat(fn, number=number, repeat=repeat - 1, timer=timer)])
    return number / best


def scapy_from_fields(dissected: ScapyPacket) -> ScapyPacket:
    """The dissected layers made again from their field values (no cached raw bytes)."""
    layers = []
    layer = dissected
    while isinstance(layer, ScapyPacket) and layer.fields_desc:
        layers.append(type(layer)(**layer.fields))
        layer = layer.payload
    built = layers[0]
    for layer in layers[1:]:
        built = built / layer
    return built


def _full(packet: packets.Packet) -> None:
    """What the parse yields: every header decoded, every field readable by its spec name."""
    for name, header in packet.headers.items():
        assert getattr(packet, name) is header
        for field in header:
            getattr(header, field)


SIZES = (200, 4 << 10, 64 << 10, 1 << 20, 4 << 20)  # up to the 4 MiB PacketSize limit ([MS-MQMQ] 2.2.19.1)
SHAPES = ("body", "mqf-direct", "mqf-named")


def _best(fn: Any, budget: float) -> float:
    """The shortest wall-clock time of ``fn()`` over repeats filling about ``budget`` seconds."""
    best, spent = float("inf"), 0.0
    while spent < budget or best == float("inf"):
        t = time.perf_counter()
        fn()
        took = time.perf_counter() - t
        best, spent = min(best, took), spent + took
        if spent > 4 * budget:
            break
    return best


def _materialised(packet: packets.Packet) -> packets.Packet:
    """The packet with every MultiQueueFormatHeader element list read into plain objects, so that
    building it writes each element (a parsed list left alone is copied as bytes)."""
    mqf = packet.headers.get("MultiQueueFormatHeader")
    if mqf is not None:
        for part in ("Destination", "Administration", "Response"):
            mqf[part].FormatNameList = list(mqf[part].FormatNameList)
    return packet


def scaling_rows(quick: bool) -> list[dict[str, Any]]:
    """Cost per MiB of parse and build, and the parse's peak memory over the packet's size, from
    200 B to 4 MiB: linear means flat columns."""
    rows = []
    for shape in SHAPES:
        for size in SIZES[:3] if quick else SIZES:
            data = sized_user_message(size, shape)
            mib = len(data) / (1 << 20)
            parsed = _materialised(packets.parse(data))
            assert packets.build(parsed) == data
            budget = 0.05 if quick else 0.3
            parse_s = _best(lambda d=data: packets.parse(d), budget)
            build_s = _best(lambda p=parsed: packets.build(p), budget)
            tracemalloc.start()
            kept = packets.parse(data)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            del kept
            rows.append(
                {
                    "name": f"UserMessage of {len(data):,} B, large by {shape}",
                    "unit": "ms per MiB",
                    "parse": 1000 * parse_s / mib,
                    "build_from_fields": 1000 * build_s / mib,
                    "parse_ms": 1000 * parse_s,
                    "parse_peak_memory_x_size": peak / len(data),
                }
            )
    return rows


#: parses/s per core the codec aims at (issue: "codec toward the moonshot")
PARSE_TARGET = 150_000


def run(quick: bool = False) -> list[dict[str, Any]]:
    seconds = 0.2 if quick else 1.5
    rows = scaling_rows(quick)
    for optional in (False, True):
        data = typical_user_message(optional)
        parsed = packets.parse(data)
        assert parsed.kind == packets.PacketKind.UserMessage, parsed.kind
        assert packets.build(parsed) == data
        assert bytes(SBase(data)) == data
        label = "with TransactionHeader+SessionHeader" if optional else "plain"
        _full(parsed)
        ours = _rate(lambda d=data: packets.parse(d), seconds)
        scapy = _rate(lambda d=data: SBase(d), seconds)
        ceiling = _rate(lambda d=data: struct_parse(d), seconds)
        named = _rate(lambda d=data: struct_named(d), seconds)
        decoded = _rate(lambda d=data: decode_only(d), seconds)
        rows.append(
            {
                "name": f"parse UserMessage, direct name, label, 1 KiB body, {label}",
                "unit": "parses/s per core",
                "ours": ours,
                "target": PARSE_TARGET,
                "ours_decode_only": decoded,
                "scapy": scapy,
                "struct_ceiling": ceiling,
                "struct_named_fields": named,
                "ours_vs_scapy": ours / scapy,
                "ours_vs_ceiling": ours / ceiling,
                "ours_wall_clock": _rate(lambda d=data: packets.parse(d), seconds, timer=time.perf_counter),
            }
        )
        built_ours = _rate(lambda p=parsed: packets.build(p), seconds)
        fields = struct_parse(data)
        assert struct_build(fields) == data
        built_ceiling = _rate(lambda f=fields: struct_build(f), seconds)
        dissected = SBase(data)
        rebuilt = scapy_from_fields(dissected)
        assert rebuilt.raw_packet_cache is None and bytes(rebuilt) == data
        built_scapy = _rate(lambda p=dissected: bytes(p), seconds)
        built_scapy_fields = _rate(lambda p=rebuilt: bytes(p), seconds)
        rows.append(
            {
                "name": f"build UserMessage, {label}",
                "unit": "builds/s per core",
                "ours": built_ours,
                "scapy_cached": built_scapy,
                "scapy_from_fields": built_scapy_fields,
                "struct_ceiling": built_ceiling,
                "ours_vs_scapy_cached": built_ours / built_scapy,
                "ours_vs_scapy_from_fields": built_ours / built_scapy_fields,
                "ours_vs_ceiling": built_ours / built_ceiling,
            }
        )
    return rows
