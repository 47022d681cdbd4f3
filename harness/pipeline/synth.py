"""Synthetic MSMQ captures with a manifest of what was injected.

Each session is produced by running the sans-IO :class:`~harness.session.Initiator` against the
:class:`~harness.session.Acceptor` in memory ([MS-MQQB] 3.1.5.2-3.1.5.4 establishment, 3.1.7.1
UserMessages, 3.1.5.5 SessionAck, 3.1.5.6 OrderAck), so every byte is what the session engines
send; session anomalies are injected by an acceptor fault behaviour (BaseHeader.Signature,
[MS-MQQB] 3.1.5.1.2) or by changing a packet in flight before the other engine sees it
(BaseHeader.PacketSize, [MS-MQMQ] 2.2.19.1; SessionHeader.UserMsgSequenceNumber and
AckSequenceNumber, [MS-MQQB] 3.1.5.5.5 and 3.1.5.5.1), and the rule the receiving engine
reported is kept as the expected rule.  A few
session scripts are made this way and replayed over many TCP connections (RFC 9293 three-way
handshake, sequence and acknowledgment numbers, FIN exchange; IPv4 and TCP checksums) written
straight into a classic pcap file with :mod:`struct`, interleaving concurrent sessions.  TCP
anomalies -- out-of-order, retransmitted and overlapping segments (which are not violations) and
missing segments (a gap the reassembly must record) -- are injected per segment.
"""

from __future__ import annotations

import json
import random
import struct
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import packets
from harness.capture.tcp import FlowKey
from harness.errors import HarnessError
from harness.session import (
    Acceptor,
    Close,
    Connect,
    Initiator,
    RuleViolation,
    Send,
    StartTimer,
    Timer,
    user_message,
)
from harness.session.actions import CancelTimer

__all__ = [
    "ANOMALIES",
    "SESSION_ANOMALIES",
    "TCP_ANOMALIES",
    "SessionScript",
    "SynthError",
    "run_session",
    "single_connection",
    "synthesize",
]

MSMQ_PORT = 1801
MSS = 1460
#: session anomalies: name -> the packet each changes (the rule comes from the engine that sees it)
SESSION_ANOMALIES = ("bad-signature", "packet-size", "sequence-gap", "ack-beyond-sent")
#: TCP anomalies: the first three are not violations; "missing-segment" leaves a gap
TCP_ANOMALIES = ("out-of-order", "retransmission", "overlap", "missing-segment")
ANOMALIES = SESSION_ANOMALIES + TCP_ANOMALIES

_INITIATOR = "{5F1A0C2E-7B3D-4E8F-9A6B-1C2D3E4F5A01}"
_ACCEPTOR = "{0E9D8C7B-6A59-4837-A2B1-C0D9E8F7A602}"


class SynthError(HarnessError):
    """A synthetic capture could not be produced as asked."""


@dataclass
class SessionScript:
    """What one session carried: (direction, bytes, packet kind) in send order."""

    name: str
    packets: list[tuple[str, bytes, str]]
    closer: str | None  #: "client" or "server" when an engine closed the connection, else None
    violations: list[RuleViolation]
    initiator: str = _INITIATOR
    acceptor: str = _ACCEPTOR

    def index_of(self, direction: str, position: int) -> int:
        """Index in its direction of the packet at ``position`` of :attr:`packets`."""
        return sum(1 for d, _, _ in self.packets[:position] if d == direction)


Mutator = Callable[[str, int, bytes], bytes]


class _Link:
    """The Initiator and the Acceptor joined in memory: the actions each engine returns carried
    out -- ``Send`` bytes travel to the other side (through ``mutate`` on the way), ``StartTimer``
    and ``CancelTimer`` keep each side's timers on one clock, ``Close`` ends the connection,
    ``Connect`` opens it, a ``RuleViolation`` is recorded -- and the session stepped until it
    settles."""

    def __init__(self, script: SessionScript, behaviour: str, mutate: Mutator | None) -> None:
        self.now = 0.0
        self.ini = Initiator(script.initiator, script.acceptor, clock=self.clock)
        self.acc = Acceptor(script.acceptor, behaviour, clock=self.clock)
        self.engines: dict[str, Initiator | Acceptor] = {"client": self.ini, "server": self.acc}
        self.queues: dict[str, deque[bytes]] = {"client": deque(), "server": deque()}  # bytes travelling *to* a side
        self.timers: dict[str, dict[str, float]] = {"client": {}, "server": {}}
        self.script = script
        self.mutate = mutate
        self.counts = {"client": 0, "server": 0}
        self.connected = self.connect = False

    def clock(self) -> float:
        return self.now

    def handle(self, side: str, actions: list[Any]) -> None:
        for act in actions:
            if isinstance(act, Send):
                self._send(side, act)
            elif isinstance(act, StartTimer):
                self.timers[side][act.name] = self.now + act.seconds
            elif isinstance(act, CancelTimer):
                self.timers[side].pop(act.name, None)
            elif isinstance(act, Close):
                if self.connected and self.script.closer is None:
                    self.script.closer = side
                self.connected = False
            elif isinstance(act, Connect):
                self.connect = True
            elif isinstance(act, RuleViolation):
                self.script.violations.append(act)

    def _send(self, side: str, act: Send) -> None:
        if not self.connected:
            return
        data = act.data
        if self.mutate is not None:
            data = self.mutate(side, self.counts[side], data)
        self.counts[side] += 1
        self.script.packets.append((side, data, str(act.packet_kind)))
        self.queues["server" if side == "client" else "client"].append(data)

    def step(self) -> bool:
        """One step: the connection made once the initiator asked for it, else every byte in
        flight received, else the next acknowledgment timer fired; False once the session has
        settled (closed, or no timer due within 30 s)."""
        if self.connect and not self.connected and self.script.closer is None:
            self.connect, self.connected = False, True
            self.handle("server", self.acc.connection_made())
            self.handle("client", self.ini.connection_made())
            return True
        moved = False
        for side in ("server", "client"):
            while self.connected and self.queues[side]:
                self.handle(side, self.engines[side].receive_data(self.queues[side].popleft()))
                self.now += 0.001
                moved = True
        if not self.connected:
            return False
        return moved or self._fire_next_timer()

    def _fire_next_timer(self) -> bool:
        timers = self.timers
        due = [(t, s, n) for s in timers for n, t in timers[s].items() if n != Timer.SessionCleanup]
        if not due:
            return False
        t, side, timer = min(due)
        if t > 30.0:  # only acknowledgment timers run; nothing else is due in a finished session
            return False
        self.now = max(self.now, t)
        timers[side].pop(timer, None)
        self.handle(side, self.engines[side].timer_fired(timer))
        return True


def run_session(
    messages: list[tuple[bytes, str]],
    *,
    behaviour: str = "normal",
    mutate: Mutator | None = None,
    initiator: str = _INITIATOR,
    acceptor: str = _ACCEPTOR,
    name: str = "session",
    max_steps: int = 100_000,
) -> SessionScript:
    """Run one session in memory; ``mutate(direction, index, data)`` may change a packet in flight."""
    script = SessionScript(name, [], None, [], initiator, acceptor)
    link = _Link(script, behaviour, mutate)
    link.handle("client", link.ini.start())
    for body, delivery in messages:
        link.handle("client", link.ini.send_message(user_message(initiator, acceptor, body), delivery))
    for _ in range(max_steps):
        if not link.step():
            break
    else:
        raise SynthError(f"session {name} did not settle within {max_steps} steps")
    return script


# ---------------------------------------------------------------------------------------------
# session scripts


def _message_mix(rng: random.Random, n: int) -> list[tuple[bytes, str]]:
    out = []
    for k in range(n):
        delivery = rng.choice(("express", "express", "recoverable", "transactional"))
        size = rng.choice((16, 64, 200, 900, 2400))
        out.append((b"m%05d:" % k + bytes(rng.randrange(256) for _ in range(size)), delivery))
    return out


def _replace_u32(data: bytes, offset: int, value: int) -> bytes:
    return data[:offset] + struct.pack("<I", value) + data[offset + 4 :]


def _mutator(kind: str) -> tuple[Mutator, dict[str, Any]]:
    """A mutation for a session anomaly and the record of where it struck."""
    hit: dict[str, Any] = {}

    def packet_size(side: str, index: int, data: bytes) -> bytes:
        if side == "client" and not hit and packets.parse(data, strict=False).kind is packets.PacketKind.UserMessage:
            hit.update(direction=side, packet_index=index)
            size = struct.unpack_from("<I", data, 8)[0]
            return _replace_u32(data, 8, size + 8) + b"\0" * 8  # 8 bytes beyond the headers
        return data

    def session_ack(field_name: str) -> Mutator:
        def mutate(side: str, index: int, data: bytes) -> bytes:
            if side != "server" or hit:
                return data
            p = packets.parse(data, strict=False)
            if p.kind is not packets.PacketKind.SessionAck:
                return data
            headers = p.headers
            headers.SessionHeader[field_name] = int(headers.SessionHeader[field_name]) + 1
            hit.update(direction=side, packet_index=index)
            return packets.build(headers)

        return mutate

    def unchanged(side: str, index: int, data: bytes) -> bytes:
        return data

    table = {
        "packet-size": packet_size,
        "sequence-gap": session_ack("UserMsgSequenceNumber"),
        "ack-beyond-sent": session_ack("AckSequenceNumber"),
    }
    return table.get(kind, unchanged), hit


@dataclass
class _Template:
    script: SessionScript
    anomaly: str | None = None
    expected: dict[str, Any] = field(default_factory=dict)
    csums: list[list[int]] = field(default_factory=list)  # per packet: payload checksum of each MSS piece


def make_template(kind: str | None, seed: int, n_messages: int) -> _Template:
    """One session script, clean (``kind`` None) or with a session anomaly."""
    rng = random.Random(seed)
    messages = _message_mix(rng, n_messages)
    behaviour = "bad-signature" if kind == "bad-signature" else "normal"
    mutate, hit = _mutator(kind or "")
    script = run_session(messages, behaviour=behaviour, mutate=mutate, name=f"{kind or 'clean'}-{seed}")
    expected: dict[str, Any] = {}
    if kind is None:
        if script.violations:
            raise SynthError(f"clean session broke rules: {script.violations}")
    else:
        if not script.violations:
            raise SynthError(f"anomaly {kind} reported no rule")
        first = script.violations[0]
        if kind == "bad-signature":
            hit.update(direction="server", packet_index=first.packet_index)
        expected = {"rule": first.rule_id, "section": first.section, **hit}
        # the packet's place among all packets of the session (both directions, in capture order)
        seen = -1
        for position, (direction, _data, _kind) in enumerate(script.packets):
            seen += direction == hit["direction"]
            if direction == hit["direction"] and seen == hit["packet_index"]:
                expected["session_index"] = position
                break
    t = _Template(script, kind, expected)
    t.csums = [[_sum16(data[i : i + MSS]) for i in range(0, len(data), MSS)] for _, data, _ in script.packets]
    return t


# ---------------------------------------------------------------------------------------------
# TCP/IP framing


def _sum16(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def _fold(total: int) -> int:
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


_CLIENT_MAC = bytes.fromhex("020000000002")
_IP = struct.Struct("!BBHHHBBH4s4s")
_TCP = struct.Struct("!HHIIBBHHH")
_REC = struct.Struct("<IIII")
SYN, ACK, PSH, FIN = 0x02, 0x10, 0x08, 0x01


@dataclass
class _Endpoint:
    addr: bytes
    port: int
    isn: int
    mac: bytes


class PcapWriter:
    """A classic pcap file (microsecond timestamps, LINKTYPE_ETHERNET), written record by record."""

    def __init__(self, stream: BinaryIO, snaplen: int = 65535) -> None:
        self.stream = stream
        self.records = 0
        self.snaplen = snaplen
        stream.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, 1))
        self._ip_id = 0

    def record(self, ts_us: int, frame: bytes) -> None:
        self.stream.write(_REC.pack(ts_us // 1_000_000, ts_us % 1_000_000, len(frame), len(frame)) + frame)
        self.records += 1

    def tcp_frame(
        self, src: _Endpoint, dst: _Endpoint, seq: int, ack: int, flags: int, payload: bytes, psum: int | None = None
    ) -> bytes:
        self._ip_id = (self._ip_id + 1) & 0xFFFF
        total = 40 + len(payload)
        ip = _IP.pack(0x45, 0, total, self._ip_id, 0x4000, 64, 6, 0, src.addr, dst.addr)
        ip = ip[:10] + struct.pack("!H", 0xFFFF - _fold(sum(struct.unpack("!10H", ip)))) + ip[12:]
        tcp = _TCP.pack(src.port, dst.port, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
        if psum is None:
            psum = _sum16(payload)
        pseudo = sum(struct.unpack("!4H", src.addr + dst.addr)) + 6 + 20 + len(payload)
        csum = 0xFFFF - _fold(pseudo + sum(struct.unpack("!10H", tcp)) + psum)
        tcp = tcp[:16] + struct.pack("!H", csum) + tcp[18:]
        return dst.mac + src.mac + b"\x08\x00" + ip + tcp + payload


def _segments(template: _Template) -> list[tuple[str, int, bytes, int]]:
    """The data segments of a session: (direction, stream offset, payload, payload checksum)."""
    out: list[tuple[str, int, bytes, int]] = []
    offsets = {"client": 0, "server": 0}
    for (direction, data, _kind), sums in zip(template.script.packets, template.csums, strict=True):
        for i, s in zip(range(0, len(data), MSS), sums, strict=True):
            piece = data[i : i + MSS]
            out.append((direction, offsets[direction] + i, piece, s))
        offsets[direction] += len(data)
    return out


def _session_frames(
    writer: PcapWriter, template: _Template, client: _Endpoint, server: _Endpoint, tcp_anomaly: str | None
) -> Iterator[bytes]:
    """Every frame of one TCP connection carrying the script, with at most one TCP anomaly."""
    ends = {"client": client, "server": server}
    isn = {"client": client.isn, "server": server.isn}
    nxt = {"client": 0, "server": 0}  # stream bytes sent so far
    frame = writer.tcp_frame
    yield frame(client, server, client.isn, 0, SYN, b"")
    yield frame(server, client, server.isn, client.isn + 1, SYN | ACK, b"")
    yield frame(client, server, client.isn + 1, server.isn + 1, ACK, b"")
    segs = _segments(template)
    frames: list[tuple[str, int, bytes, int | None]] = [(d, off, p, s) for d, off, p, s in segs]
    if tcp_anomaly is not None:
        data_idx = [i for i, (d, _o, p, _s) in enumerate(frames) if d == "client" and len(p) >= 32]
        i = data_idx[len(data_idx) // 2]
        d, off, p, _sum = frames[i]
        half = len(p) // 2
        first, second = (d, off, p[:half], None), (d, off + half, p[half:], None)
        if tcp_anomaly == "out-of-order":
            frames[i : i + 1] = [second, first]
        elif tcp_anomaly == "retransmission":
            frames[i : i + 1] = [frames[i], frames[i]]
        elif tcp_anomaly == "overlap":
            third = len(p) // 3
            frames[i : i + 1] = [(d, off, p[: 2 * third], None), (d, off + third, p[third:], None)]
        elif tcp_anomaly == "missing-segment":
            frames[i : i + 1] = [first]  # the second half never appears
    for d, off, payload, psum in frames:
        other = "server" if d == "client" else "client"
        seq = isn[d] + 1 + off
        nxt[d] = max(nxt[d], off + len(payload))
        yield frame(ends[d], ends[other], seq, isn[other] + 1 + nxt[other], ACK | PSH, payload, psum)
    closer = template.script.closer or "client"
    other = "server" if closer == "client" else "client"
    c, o = ends[closer], ends[other]
    yield frame(c, o, isn[closer] + 1 + nxt[closer], isn[other] + 1 + nxt[other], FIN | ACK, b"")
    yield frame(o, c, isn[other] + 1 + nxt[other], isn[closer] + 2 + nxt[closer], FIN | ACK, b"")
    yield frame(c, o, isn[closer] + 2 + nxt[closer], isn[other] + 2 + nxt[other], ACK, b"")


def _addr(n: int) -> bytes:
    return bytes((10, 1 + (n >> 16) % 250, (n >> 8) & 0xFF, n & 0xFF))


def synthesize(
    out: str | Path,
    sessions: int,
    anomalies: float = 0.1,
    *,
    seed: int = 0,
    messages: int = 8,
    concurrency: int = 16,
    manifest: str | Path | None = None,
    kinds: tuple[str, ...] = ANOMALIES,
) -> dict[str, Any]:
    """Write a capture of ``sessions`` sessions, a fraction ``anomalies`` of them with one anomaly
    (kinds taken in turn), and its manifest (``<out>.json`` unless given); returns the manifest."""
    if sessions < 0 or not 0.0 <= anomalies <= 1.0:
        raise SynthError("sessions must be >= 0 and anomalies within [0, 1]")
    unknown = set(kinds) - set(ANOMALIES)
    if unknown:
        raise SynthError(f"unknown anomaly kinds {sorted(unknown)}; known: {', '.join(ANOMALIES)}")
    rng = random.Random(seed)
    out = Path(out)
    manifest_path = Path(manifest) if manifest else out.with_suffix(out.suffix + ".json")
    plan = _session_plan(rng, sessions, anomalies, kinds, seed, messages)
    with out.open("wb") as f:
        written, records, injected = _write_sessions(f, plan, rng, seed, concurrency)
    manifest_data = {
        "capture": str(out),
        "seed": seed,
        "sessions": sessions,
        "records": written,
        "anomaly_rate": anomalies,
        "anomalies": injected,
        "flows": records,
        "server": f"10.0.0.1:{MSMQ_PORT}",
    }
    manifest_path.write_text(json.dumps(manifest_data, indent=1))
    return manifest_data


def _session_plan(
    rng: random.Random, sessions: int, anomalies: float, kinds: tuple[str, ...], seed: int, messages: int
) -> list[tuple[_Template, str | None]]:
    """Per session, its script and its TCP anomaly (None for none): ``round(sessions *
    anomalies)`` sessions drawn at random carry one anomaly each, the ``kinds`` taken in turn; a
    session anomaly has a script of its own (made once per kind), every other session replays
    one of four clean scripts."""
    clean_templates = [make_template(None, seed * 1000 + v, messages + v) for v in range(4)]
    session_templates: dict[str, _Template] = {}
    plan: list[tuple[_Template, str | None]] = []
    n_anomalous = round(sessions * anomalies)
    anomalous = set(rng.sample(range(sessions), n_anomalous)) if sessions else set()
    k = 0
    for s in range(sessions):
        kind = None
        if s in anomalous:
            kind = kinds[k % len(kinds)]
            k += 1
        if kind in SESSION_ANOMALIES:
            if kind not in session_templates:
                session_templates[kind] = make_template(kind, seed * 1000 + 500 + len(session_templates), messages)
            plan.append((session_templates[kind], None))
        else:
            plan.append((clean_templates[s % len(clean_templates)], kind))
    return plan


def _write_sessions(
    f: BinaryIO, plan: list[tuple[_Template, str | None]], rng: random.Random, seed: int, concurrency: int
) -> tuple[int, list[dict[str, Any]], list[dict[str, Any]]]:
    """The capture of the planned sessions, up to ``concurrency`` of them open at a time, their
    frames interleaved at random 20-400 microseconds apart; returns the records written, the
    manifest's record of each flow and the anomalies injected."""
    server = _Endpoint(bytes((10, 0, 0, 1)), MSMQ_PORT, 0, bytes.fromhex("020000000001"))
    records: list[dict[str, Any]] = []
    injected: list[dict[str, Any]] = []
    ts = 1_700_000_000 * 1_000_000 + seed
    writer = PcapWriter(f)
    active: list[Iterator[bytes]] = []
    s = 0
    while s < len(plan) or active:
        while s < len(plan) and len(active) < concurrency:
            template, tcp_anomaly = plan[s]
            client = _Endpoint(_addr(s + 1), 1024 + (s * 7919) % 60000, rng.getrandbits(32), _CLIENT_MAC)
            srv = _Endpoint(server.addr, server.port, rng.getrandbits(32), server.mac)
            entry, item = _flow_record(s, template, tcp_anomaly, client)
            if item is not None:
                injected.append(item)
            records.append(entry)
            active.append(_session_frames(writer, template, client, srv, tcp_anomaly))
            s += 1
        i = rng.randrange(len(active))
        try:
            fr = next(active[i])
        except StopIteration:
            active.pop(i)
            continue
        ts += rng.randrange(20, 400)  # microseconds
        writer.record(ts, fr)
    return writer.records, records, injected


def _flow_record(
    s: int, template: _Template, tcp_anomaly: str | None, client: _Endpoint
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The manifest's record of session ``s`` (its flow, script and packets per direction) and
    the anomaly injected in it (None in a clean session): the rule it breaks and where, or for a
    TCP anomaly no rule (and a gap for a missing segment)."""
    flow = FlowKey.of(".".join(map(str, client.addr)), client.port, "10.0.0.1", MSMQ_PORT)[0].id
    counts = {d: sum(1 for p in template.script.packets if p[0] == d) for d in ("client", "server")}
    entry: dict[str, Any] = {"flow": flow, "session": s, "template": template.script.name, "packets": counts}
    kind = template.anomaly or tcp_anomaly
    if kind is None:
        return entry, None
    item: dict[str, Any] = {"kind": kind, "flow": flow, "session": s}
    if template.anomaly is not None:
        item.update(template.expected)
    else:
        item.update(rule=None, direction="client")
        if tcp_anomaly == "missing-segment":
            item["gap"] = True
    entry["anomaly"] = kind
    return entry, item


def single_connection(
    out: str | Path, size: int, *, seed: int = 0, bodies: tuple[int, ...] = (3800,)
) -> dict[str, Any]:
    """Write a capture of one clean session of about ``size`` bytes -- UserMessages with bodies of
    the sizes ``bodies`` (taken at random; express, recoverable or transactional at random) and
    their acknowledgments, run by the session engines as :func:`run_session` runs them -- on one
    TCP connection; returns what was written (``records``, ``messages``, ``bytes``)."""
    rng = random.Random(seed)
    deliveries = ("express", "recoverable", "transactional")
    messages: list[tuple[bytes, str]] = []
    total = 0
    while total < size or not messages:
        body = rng.choice(bodies)
        messages.append((b"m%07d:" % len(messages) + rng.randbytes(body), rng.choice(deliveries)))
        total += body + 240  # about: the headers, the acknowledgments, the frames
    count = len(messages)
    script = run_session(messages, name="single", max_steps=max(100_000, 20 * count))
    if script.violations:
        raise SynthError(f"the session broke rules: {script.violations[:3]}")
    template = _Template(script)
    template.csums = [[_sum16(d[i : i + MSS]) for i in range(0, len(d), MSS)] for _, d, _ in script.packets]
    client = _Endpoint(_addr(1), 40001, rng.getrandbits(32), _CLIENT_MAC)
    server = _Endpoint(bytes((10, 0, 0, 1)), MSMQ_PORT, rng.getrandbits(32), bytes.fromhex("020000000001"))
    ts = 1_700_000_000 * 1_000_000 + seed
    with Path(out).open("wb") as f:
        writer = PcapWriter(f)
        for frame in _session_frames(writer, template, client, server, None):
            ts += rng.randrange(20, 60)
            writer.record(ts, frame)
    return {"records": writer.records, "messages": count, "bytes": Path(out).stat().st_size}
