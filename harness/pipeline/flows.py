"""The work done for each capture: records to TCP segments, segments to flows, flows to packets,
sessions and violations -- with the functions ``msmq-harness decode`` uses.

Frames are decoded where they were read (:func:`harness.capture.frames.decode_tcp_view`); the
segments of one TCP connection (bidirectional 5-tuple, [MS-MQQB] 2.1.1: the MSMQ port is 1801)
are fed in capture order to a :class:`FlowRows`, whose
:class:`harness.capture.connection.Connection` reassembles each direction by sequence number
(gaps recorded, never hidden), cuts it by [MS-MQMQ] 2.2.19.1 BaseHeader.PacketSize as its bytes
come, decodes each packet non-strictly, once, for its row and for the passive
:class:`harness.session.Observer`, which reports the [MS-MQQB] 3.1 session rules
(:mod:`harness.session.rules`) on both directions merged in the order the capture proves (capture
time, frame order breaking its ties).  After a gap, or from where the capture's times contradict
its frame order, nothing more is given to the observer: the session cannot be judged beyond what
was captured.  The session and violation rows are plain dicts; packet rows are one tuple a packet
in a :class:`PacketRows`, read as dicts or handed to the Parquet writer as columns (the Parquet
schemas are :data:`harness.pipeline.tasks.SCHEMAS`); the sessions table counts each kind of an
open session ([MS-MQQB] 3.1.5.5-3.1.5.8) in a column named after it (:data:`KIND_COLUMNS`,
derived from ``packets.layout.PacketKind``).  :func:`iter_local` runs the whole chain in one
process, :func:`process_local` collects it.
"""
from __future__ import annotations

import gc
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from typing import Any, TypeVar, overload

from harness.capture.connection import Connection, ConnectionResult, replay_flow
from harness.capture.frames import FrameProblem, TcpSegment, decode_tcp_view
from harness.capture.framing import DecodedPacket
from harness.capture.pcapcommon import Record, RecordView
from harness.capture.spill import SpillPool
from harness.capture.streams import segment_connection, view_connections
from harness.capture.tcp import Flow, FlowKey
from harness.pipeline.splits import Split, SplitResult, read_split_views
from packets import GUID
from packets.layout import SESSION_KINDS, PacketKind

__all__ = [
    "KEY_FIELDS",
    "KIND_COLUMNS",
    "OPEN_SESSION_KINDS",
    "PACKET_ROW_KEYS",
    "FlowRows",
    "FrameCounts",
    "PacketRows",
    "Tables",
    "analyse_flow",
    "count_column",
    "first_reading",
    "flow_rows",
    "iter_local",
    "key_fields",
    "open_session_kinds",
    "process_local",
    "segments_of",
    "stream_rows",
    "view_segments",
]

DEFAULT_PORTS = frozenset({1801})

#: the kinds whose fields the packets table reads (by name, as its ``kind`` column has them)
_USER_MESSAGE = PacketKind.UserMessage.name
_ESTABLISH_CONNECTION = PacketKind.EstablishConnection.name
#: the establishment's kinds ([MS-MQQB] 3.1.5.2-3.1.5.4): one request and one response each per
#: session, read for the session's queue managers and its refusal (``client_qm``, ``server_qm``,
#: the ``refused`` outcome, InternalHeader.Flags.CS), not counted
_ESTABLISHMENT = frozenset({PacketKind.EstablishConnection, PacketKind.ConnectionParameters})
_ESTABLISHMENT_NAMES = frozenset(k.name for k in _ESTABLISHMENT)
_Kind = TypeVar("_Kind", bound=StrEnum)  # PacketKind (a kind the spec adds, in the tests)


def count_column(kind: str) -> str:
    """The sessions table's column counting the packets of a kind (by its name): the name in
    snake case, plural (``UserMessage`` -> ``user_messages``, ``SessionAck`` -> ``session_acks``)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower() + "s"


def open_session_kinds(kinds: Iterable[_Kind]) -> tuple[_Kind, ...]:
    """The kinds of an open session ([MS-MQQB] 3.1.5.5-3.1.5.8) among the session's ``kinds``:
    all but the establishment's, the UserMessage first, then the others in their order."""
    return tuple(sorted((k for k in kinds if k not in _ESTABLISHMENT), key=lambda k: k is not PacketKind.UserMessage))


#: the kinds of an open session, of ``packets.layout.SESSION_KINDS``
OPEN_SESSION_KINDS = open_session_kinds(SESSION_KINDS)
#: packet kind (by name, as the packets table's ``kind`` column has it) -> the sessions table's
#: column counting it, for each of :data:`OPEN_SESSION_KINDS`: a new kind gets its column here and
#: in the Parquet schema (:data:`harness.pipeline.tasks.SCHEMAS`) with nothing else changed
KIND_COLUMNS: dict[str, str] = {kind.name: count_column(kind.name) for kind in OPEN_SESSION_KINDS}


@dataclass
class FrameCounts:
    """Per-input reconciliation: every frame read is decoded (a TCP segment on an MSMQ port) or
    rejected (not TCP, TCP on other ports, or undecodable)."""

    input: str
    frames_read: int = 0
    frames_decoded: int = 0
    not_tcp: int = 0
    other_ports: int = 0
    undecodable: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def frames_rejected(self) -> int:
        return self.not_tcp + self.other_ports + self.undecodable

    def merge(self, other: FrameCounts) -> None:
        self.frames_read += other.frames_read
        self.frames_decoded += other.frames_decoded
        self.not_tcp += other.not_tcp
        self.other_ports += other.other_ports
        self.undecodable += other.undecodable
        self.problems.extend(other.problems)

    def row(self) -> dict[str, Any]:
        return {
            "input": self.input,
            "frames_read": self.frames_read,
            "frames_decoded": self.frames_decoded,
            "frames_rejected": self.frames_rejected,
            "not_tcp": self.not_tcp,
            "other_ports": self.other_ports,
            "undecodable": self.undecodable,
            "balanced": self.frames_read == self.frames_decoded + self.frames_rejected,
            "problems": sorted(self.problems, key=_problem_order),
        }


def _problem_order(text: str) -> tuple[int, str]:
    head = text.split(": ", 1)[0]
    at = head.rsplit("@", 1)[-1]
    return (int(at) if at.isdigit() else -1, text)


def segments_of(
    records: Iterable[Record], counts: FrameCounts, ports: frozenset[int] = DEFAULT_PORTS
) -> Iterator[tuple[int, float, TcpSegment]]:
    """(record offset, timestamp, segment) of the records' TCP segments on ``ports``."""
    views = ((rec.offset, rec.ts, rec.linktype, rec.data, 0, len(rec.data)) for rec in records)
    return view_segments(views, counts, ports)


def view_segments(
    views: Iterable[RecordView], counts: FrameCounts, ports: frozenset[int] = DEFAULT_PORTS
) -> Iterator[tuple[int, float, TcpSegment]]:
    """:func:`segments_of` the records read in place (:func:`harness.pipeline.splits.read_split_views`):
    each segment's payload the one copy made of a frame (:func:`harness.capture.frames.decode_tcp_view`)."""
    read = decoded = 0  # the common counts kept in locals, given to ``counts`` when the reading ends
    try:
        for offset, ts, linktype, buf, start, stop in views:
            read += 1
            seg = decode_tcp_view(linktype, buf, start, stop)
            if type(seg) is TcpSegment and (seg.sport in ports or seg.dport in ports):
                decoded += 1
                yield offset, ts, seg
            else:
                _reject(seg, offset, counts)
    finally:
        counts.frames_read += read
        counts.frames_decoded += decoded


def _reject(seg: TcpSegment | FrameProblem | None, offset: int, counts: FrameCounts) -> None:
    """A frame read that gives no segment on the ports: counted as not TCP, undecodable (its
    problem kept) or on other ports."""
    if seg is None:
        counts.not_tcp += 1
    elif isinstance(seg, FrameProblem):
        counts.undecodable += 1
        counts.problems.append(f"{counts.input}@{offset}: {seg.reason} (frame byte {seg.offset})")
    else:
        counts.other_ports += 1


def flow_id(seg: TcpSegment) -> str:
    return FlowKey.of(seg.src, seg.sport, seg.dst, seg.dport)[0].id


# ---------------------------------------------------------------------------------------------
# one flow


_GUID_TEXT: dict[bytes, str] = {}


def _guid(value: Any) -> str | None:
    """``str(packets.GUID(value))`` -- ``{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}`` of the 16 wire
    bytes (``bytes_le``: the first three groups little-endian) -- formatted from the bytes without
    a ``uuid.UUID``, and remembered (a capture names few queue managers)."""
    if value is None:
        return None
    if type(value) is not str and isinstance(value, bytes) and len(value) == 16:
        text = _GUID_TEXT.get(value)
        if text is None:
            h = (value[3::-1] + value[5:3:-1] + value[7:5:-1] + value[8:]).hex().upper()
            text = f"{{{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}}}"
            if len(_GUID_TEXT) >= 4096:
                _GUID_TEXT.clear()
            _GUID_TEXT[bytes(value)] = text
        return text
    try:
        return str(GUID(value))
    except (TypeError, ValueError):
        return None


def _get(container: Any, *path: str) -> Any:
    for name in path:
        if container is None:
            return None
        try:
            container = container[name]
        except (KeyError, TypeError, AttributeError):
            return None
    return container


def _int(value: Any) -> int | None:
    if type(value) is int:
        return value
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


_NO_HEADER: dict[str, Any] = {}


def _header(h: Any, name: str) -> Any:
    """``_get(h, name)`` where it is a dictionary of headers (the parser's ``Fields``, a
    ``Container``: a plain lookup; a header absent or None gives an empty dictionary); otherwise
    the header itself or None, through :func:`_get`."""
    if isinstance(h, dict):
        sub = h.get(name)
        return _NO_HEADER if sub is None else sub
    return _get(h, name)


def _field(header: Any, name: str) -> Any:
    """``_get(header, name)``, by one dictionary lookup when the header is a dictionary."""
    if isinstance(header, dict):
        return header.get(name)
    return _get(header, name)


def _plain(header: Any) -> dict[str, Any] | None:
    """``header`` when it is a dictionary (a ``Fields``, a ``Container``), an empty one when it is
    absent, None when it is something else (read through :func:`_get`)."""
    if header is None:
        return _NO_HEADER
    return header if isinstance(header, dict) else None


def _int_of(header: dict[str, Any], name: str) -> int | None:
    value = header.get(name)
    return value if type(value) is int else _int(value)


#: the packet row's key fields, in the order of its columns
KEY_FIELDS = (
    "message_id", "source_qm", "destination_qm", "delivery", "ack_sequence_number", "user_msg_sequence_number",
    "tx_sequence_number", "cs",
)  # fmt: skip
#: a packet's key field values (:data:`KEY_FIELDS` order)
KeyValues = tuple[Any, Any, Any, Any, Any, Any, Any, Any]


def key_fields(packet: Any) -> dict[str, Any]:
    """The fields a support engineer looks for first, by spec name (None when absent)."""
    return dict(zip(KEY_FIELDS, _key_values(packet, _kind_name(packet.kind)), strict=True))


#: PacketKind -> its name (an enum member's ``name`` is a descriptor call; this, a lookup)
_KIND_NAMES: dict[Any, str] = {}


def _kind_name(kind: Any) -> str:
    name = _KIND_NAMES.get(kind)
    if name is None:
        name = _KIND_NAMES[kind] = kind.name
    return name


def _key_values(packet: Any, kind: str) -> KeyValues:
    h = packet.headers
    if isinstance(h, dict):  # the parser's headers: plain lookups (:func:`_plain` of each, in place)
        session = h.get("SessionHeader")
        if session is None:
            session = _NO_HEADER
        tx = h.get("TransactionHeader")
        if tx is None:
            tx = _NO_HEADER
        if isinstance(session, dict) and isinstance(tx, dict):
            return _key_values_of(h, kind, session, tx)
    return _values_any(h, kind)


def _values_any(h: Any, kind: str) -> KeyValues:
    values = _key_fields_any(h, kind)
    return (
        values["message_id"], values["source_qm"], values["destination_qm"], values["delivery"],
        values["ack_sequence_number"], values["user_msg_sequence_number"], values["tx_sequence_number"],
        values["cs"],
    )  # fmt: skip


def _key_values_of(h: dict[str, Any], kind: str, session: dict[str, Any], tx: dict[str, Any]) -> KeyValues:
    """:func:`key_fields` of headers that are dictionaries (as :func:`_key_fields_any` reads them)."""
    message_id = source = destination = delivery = cs = None
    if kind == _USER_MESSAGE:
        user = _plain(h.get("UserHeader"))
        if user is None:
            return _values_any(h, kind)
        message_id = _int_of(user, "MessageID")
        source = _guid(user.get("SourceQueueManager"))
        destination = _guid(user.get("QueueManagerAddress"))
        if h.get("TransactionHeader") is not None:
            delivery = "transactional"
        else:
            dm = user.get("Flags")
            delivery = "recoverable" if dm is not None and getattr(dm, "DM", 0) == 1 else "express"
    elif kind == _ESTABLISH_CONNECTION:
        ec = _plain(h.get("EstablishConnectionHeader"))
        if ec is None:
            return _values_any(h, kind)
        source, destination = _guid(ec.get("ClientGuid")), _guid(ec.get("ServerGuid"))
    if kind in _ESTABLISHMENT_NAMES:
        flags = _get(h, "InternalHeader", "Flags")
        cs = _int(getattr(flags, "CS", None)) if flags is not None else None
    ack, user_seq = session.get("AckSequenceNumber"), session.get("UserMsgSequenceNumber")
    tx_seq = tx.get("TxSequenceNumber")  # each as _int_of reads it, in place
    return (
        message_id, source, destination, delivery, ack if type(ack) is int else _int(ack),
        user_seq if type(user_seq) is int else _int(user_seq), tx_seq if type(tx_seq) is int else _int(tx_seq), cs,
    )  # fmt: skip


def _key_fields_any(h: Any, kind: str) -> dict[str, Any]:
    """:func:`key_fields` of headers of any shape."""
    session = _header(h, "SessionHeader")
    tx = _header(h, "TransactionHeader")
    out: dict[str, Any] = {
        "message_id": None,
        "source_qm": None,
        "destination_qm": None,
        "delivery": None,
        "ack_sequence_number": _int(_field(session, "AckSequenceNumber")),
        "user_msg_sequence_number": _int(_field(session, "UserMsgSequenceNumber")),
        "tx_sequence_number": _int(_field(tx, "TxSequenceNumber")),
        "cs": None,
    }
    if kind == _USER_MESSAGE:
        user = _header(h, "UserHeader")
        out["message_id"] = _int(_field(user, "MessageID"))
        out["source_qm"] = _guid(_field(user, "SourceQueueManager"))
        out["destination_qm"] = _guid(_field(user, "QueueManagerAddress"))
        if _get(h, "TransactionHeader") is not None:
            out["delivery"] = "transactional"
        else:
            dm = _field(user, "Flags")
            out["delivery"] = "recoverable" if dm is not None and getattr(dm, "DM", 0) == 1 else "express"
    elif kind == _ESTABLISH_CONNECTION:
        ec = _header(h, "EstablishConnectionHeader")
        out["source_qm"] = _guid(_field(ec, "ClientGuid"))
        out["destination_qm"] = _guid(_field(ec, "ServerGuid"))
    if kind in _ESTABLISHMENT_NAMES:
        flags = _get(h, "InternalHeader", "Flags")
        out["cs"] = _int(getattr(flags, "CS", None)) if flags is not None else None
    return out


#: the observer's direction of the packet that broke a rule -> the pipeline's direction names
_SENDER = {"c2s": "client", "s2c": "server"}

#: packet rows a :class:`FlowRows` hands on at a time (given ``emit``)
ROW_BATCH = 2000

#: the keys of a packet row, in order (the packets table's columns, :data:`harness.pipeline.tasks.SCHEMAS`)
PACKET_ROW_KEYS = (
    "input", "flow", "direction", "index", "stream_offset", "timestamp", "kind", "size", "problems", *KEY_FIELDS,
)  # fmt: skip
#: a packet's row as :class:`PacketRows` holds it: direction, index, stream offset, timestamp,
#: kind, size, problems and the key field values (input and flow are the batch's)
PacketRow = tuple[str, int, int, float, str, int, Sequence[str], KeyValues]
_NO_PROBLEMS: tuple[str, ...] = ()


class PacketRows(Sequence[dict[str, Any]]):
    """Packet rows of one connection, one tuple a packet (:data:`PacketRow`), no dictionary made:
    read as a sequence of row dictionaries (keys :data:`PACKET_ROW_KEYS`), or by :meth:`columns`
    as the packets table's columns -- what the Parquet writer
    (:class:`harness.pipeline.tasks.PartWriter`) turns into Arrow arrays."""

    __slots__ = ("flow", "input", "rows")

    def __init__(self, input_name: str, flow: str, rows: list[PacketRow] | None = None) -> None:
        self.input = input_name
        self.flow = flow
        self.rows: list[PacketRow] = [] if rows is None else rows

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, at: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, at: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, at: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(at, slice):
            return [self._row(r) for r in self.rows[at]]
        return self._row(self.rows[at])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for r in self.rows:
            yield self._row(r)

    def __repr__(self) -> str:
        return f"PacketRows({list(self)!r})"

    def _row(self, r: PacketRow) -> dict[str, Any]:
        *fields, problems, keys = r
        return dict(zip(PACKET_ROW_KEYS, (self.input, self.flow, *fields, list(problems), *keys), strict=True))

    def columns(self) -> dict[str, Sequence[Any]]:
        """Column name (:data:`PACKET_ROW_KEYS`) -> its values, row by row."""
        n = len(self.rows)
        if not n:
            return {name: () for name in PACKET_ROW_KEYS}
        *fields, keys = zip(*self.rows, strict=True)
        values = ([self.input] * n, [self.flow] * n, *fields, *zip(*keys, strict=True))
        return dict(zip(PACKET_ROW_KEYS, values, strict=True))


#: what a :class:`FlowRows` gives for a connection: the rows of each table
Tables = dict[str, Sequence[dict[str, Any]]]


class FlowRows:
    """The rows of one TCP connection, built as its segments are fed in capture order
    (:class:`harness.capture.connection.Connection`: reassembly, each packet parsed once for its
    row and for the observer, the session checked in the order the capture proves).  Packet rows
    (:class:`PacketRows`) are handed to ``emit`` in batches of :data:`ROW_BATCH` as they are made
    (kept until :meth:`finish` without ``emit``); :meth:`finish` gives the rest, the session row
    and the violations.  An analysis that breaks (a bug) ends the connection with an ``error``
    session row; the connection's other rows are dropped unless already handed on."""

    def __init__(
        self,
        input_name: str,
        key: FlowKey,
        ports: frozenset[int] = DEFAULT_PORTS,
        emit: Callable[[PacketRows], None] | None = None,
        pool: Any = None,
    ) -> None:
        self.input = input_name
        self.emit = emit
        self.kinds: dict[str, int] = {}
        self.sent = {"client": 0, "server": 0}
        self.ec: dict[str, KeyValues] = {}  #: the key fields of each side's EstablishConnection
        self.failed = ""
        self.conn = Connection(key, ports, pool=pool, rows=self._row)
        self.rows = PacketRows(input_name, self.conn.id)
        self._append = self.rows.rows.append

    def _packet(self, direction: str, item: DecodedPacket, key: tuple[float, int]) -> None:
        self._row(direction, item.index, item.offset, item.packet, item.data, key)

    def _row(self, direction: str, index: int, offset: int, packet: Any, data: bytes, key: tuple[float, int]) -> None:
        """The row of a packet of ``direction`` (its index, stream offset, parse, bytes and key)."""
        kind = packet.kind._name_  # the member's name (``kind.name``, without the descriptor call)
        violations = packet.violations
        values = _key_values(packet, kind)
        problems = [str(v) for v in violations] if violations else _NO_PROBLEMS
        self._append((direction, index, offset, key[0], kind, len(data), problems, values))
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        self.sent[direction] += 1
        if kind == _ESTABLISH_CONNECTION:
            self.ec[direction] = values
        if self.emit is not None and len(self.rows.rows) >= ROW_BATCH:
            self.emit(self._take())

    def _take(self) -> PacketRows:
        """The packet rows so far (a new batch begins)."""
        rows = self.rows
        self.rows = PacketRows(self.input, self.conn.id)
        self._append = self.rows.rows.append
        return rows

    def feed(self, ts: float, seg: TcpSegment, frame: int) -> None:
        if self.failed:
            return
        try:
            self.conn.feed(ts, seg, frame)
        except Exception as e:  # one connection that breaks a decoder must not stop the others
            self.failed = f"analysis failed: {type(e).__name__}: {e}"

    def finish(self, flow: Flow | None = None) -> Tables:
        result = None
        if not self.failed:
            try:
                result = self.conn.finish(flow)
            except Exception as e:
                self.failed = f"analysis failed: {type(e).__name__}: {e}"
        if result is None:
            return {"packets": [], "sessions": [_failed_session(self.input, flow or self.conn._flow(), self.failed)],
                    "violations": []}  # fmt: skip
        return self.tables(result)

    def tables(self, result: ConnectionResult) -> Tables:
        flow = result.flow
        violation_rows = [
            {
                "input": self.input,
                "flow": flow.id,
                "server": _endpoint(flow.client.dst, flow.client.dport),
                "rule_id": v.rule_id,
                "section": v.section,
                "direction": _SENDER.get(v.direction, v.direction),
                "packet_index": v.packet_index,
                "evidence": v.evidence,
            }
            for v in result.violations
        ]
        session = _session_row(self, result, violation_rows)
        return {"packets": self._take(), "sessions": [session], "violations": violation_rows}


def analyse_flow(input_name: str, flow: Flow) -> Tables:
    """Packets, the session and its violations for one reassembled flow
    (:func:`harness.capture.connection.replay_flow`): each packet is parsed once, for its row and
    for the observer."""
    builder = FlowRows(input_name, flow.key)
    return builder.tables(replay_flow(flow, builder._packet))


def _endpoint(addr: str, port: int) -> str:
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


def _session_row(rows: FlowRows, result: ConnectionResult, violation_rows: list[dict[str, Any]]) -> dict[str, Any]:
    flow, reports = result.flow, result.reports
    kinds, sent, ec = rows.kinds, rows.sent, rows.ec
    problems: list[str] = []
    for direction, report in reports.items():
        problems += [f"{direction}: gap of {n} bytes at stream offset {s}" for s, n in report.gaps]
        problems += [f"{direction}: skipped {n} bytes at stream offset {s}" for s, n in report.skipped]
        problems += [f"{direction}: {e}" for e in report.errors]
        problems += [f"{direction}: {p}" for p in report.problems]
        if report.trailing:
            problems.append(f"{direction}: {report.trailing} bytes of an incomplete packet at the end")
    server_ec, client_ec = ec.get("server"), ec.get("client")
    refused = server_ec is not None and server_ec[7] == 1  # cs
    any_gap = bool(flow.client.gaps or flow.server.gaps)
    if not sum(sent.values()) and not problems:
        outcome = "no-msmq"
    elif any_gap:
        outcome = "gap"
    elif result.unordered:
        outcome = "unordered"
    elif violation_rows:
        outcome = "violations"
    elif refused:
        outcome = "refused"
    else:
        outcome = "ok"
    c, s = flow.client, flow.server
    return {
        "input": rows.input,
        "flow": flow.id,
        "client": _endpoint(c.src, c.sport),
        "server": _endpoint(c.dst, c.dport),
        "client_qm": client_ec[1] if client_ec is not None else None,  # source_qm
        "server_qm": server_ec[2] if server_ec is not None else None,  # destination_qm
        "first_ts": flow.first_ts,
        "last_ts": flow.last_ts,
        "segments": c.segments + s.segments,
        "packets_client": sent["client"],
        "packets_server": sent["server"],
        **{column: kinds.get(kind, 0) for kind, column in KIND_COLUMNS.items()},
        "gaps": len(c.gaps) + len(s.gaps),
        "gap_bytes": sum(g.length for g in c.gaps) + sum(g.length for g in s.gaps),
        "retransmitted_bytes": c.retransmitted + s.retransmitted,
        "closed": bool(c.fin or s.fin or c.reset or s.reset),
        "violations": len(violation_rows),
        "outcome": outcome,
        "problems": problems,
    }


def flow_rows(
    input_name: str, segments: Iterable[tuple[Any, float, TcpSegment]], ports: frozenset[int] = DEFAULT_PORTS
) -> Tables:
    """Rows for the segments of one TCP connection (any order: sorted by record offset here; the
    position in that order is the frame number that breaks ties of capture time)."""
    ordered = sorted(segments, key=lambda s: s[0])
    out: Tables = {"packets": [], "sessions": [], "violations": []}
    if not ordered:
        return out
    builder: FlowRows | None = None
    for position, (_off, ts, seg) in enumerate(ordered, 1):
        if builder is None:
            builder = FlowRows(input_name, FlowKey.of(seg.src, seg.sport, seg.dst, seg.dport)[0], ports)
        builder.feed(ts, seg, position)
    assert builder is not None
    return builder.finish()


def stream_rows(
    input_name: str,
    segments: Iterable[tuple[Any, float, TcpSegment]],
    ports: frozenset[int] = DEFAULT_PORTS,
    pool: Any = None,
) -> Iterator[Tables]:
    """The rows of one TCP connection whose segments come in capture order: packet rows in batches
    as they are made, then the rest with the session and its violations (memory: the packets in
    flight, not the connection)."""
    ready: list[PacketRows] = []
    builder: FlowRows | None = None
    for position, (_off, ts, seg) in enumerate(segments, 1):
        if builder is None:
            key = FlowKey.of(seg.src, seg.sport, seg.dst, seg.dport)[0]
            builder = FlowRows(input_name, key, ports, ready.append, pool)
        builder.feed(ts, seg, position)
        while ready:
            yield {"packets": ready.pop(0)}
    if builder is not None:
        yield builder.finish()


def _failed_session(input_name: str, flow: Flow, problem: str) -> dict[str, Any]:
    c, s = flow.client, flow.server
    row: dict[str, Any] = {name: None for name in _SESSION_COLUMNS}
    row.update(
        input=input_name,
        flow=flow.id,
        client=_endpoint(c.src, c.sport),
        server=_endpoint(c.dst, c.dport),
        first_ts=flow.first_ts,
        last_ts=flow.last_ts,
        segments=c.segments + s.segments,
        outcome="error",
        problems=[problem],
    )
    return row


_SESSION_COLUMNS = (
    "client_qm", "server_qm", "packets_client", "packets_server", *KIND_COLUMNS.values(), "gaps", "gap_bytes",
    "retransmitted_bytes", "closed", "violations",
)


def first_reading(split: Any, ports: frozenset[int]) -> Iterator[tuple[int, float, Any]]:
    """(record offset, timestamp, connection) of the records of a range that :func:`segments_of`
    keeps, without building the segments or copying frames
    (:func:`harness.capture.streams.view_connections`)."""
    return view_connections(read_split_views(split), ports)


def iter_local(
    paths: Iterable[str], ports: frozenset[int] = DEFAULT_PORTS, counts: list[FrameCounts] | None = None
) -> Iterator[Tables]:
    """The whole chain in this process, one file after the other (what each Spark task runs):
    each connection's segments fed to its :class:`FlowRows` as they are read, its packet rows
    handed on in batches as they are made and its session and violations as soon as its last
    segment has been read (found by a first, light pass), so neither segments nor rows pile up.
    The per-input reconciliation of each file is appended to ``counts`` once the file is read."""
    for path in paths:
        file_counts = FrameCounts(path)
        result = SplitResult(Split(path, 0, max(1, os.path.getsize(path))))
        last: dict[Any, int] = {}
        for offset, _ts, key in first_reading(result.split, ports):
            last[key] = offset
        ends = frozenset(last.values())
        del last
        pool = SpillPool()
        # what exists already (modules, the caller's data) is left out of the collections of garbage
        # while the file is read: a full collection then walks the chain's objects only (unless a
        # caller froze objects already: then the collector is left as it is)
        freeze = not gc.get_freeze_count()
        if freeze:
            gc.freeze()
        try:
            yield from _local_rows(path, result, ends, ports, file_counts, pool)
        finally:
            if freeze:
                gc.unfreeze()
            pool.close()
        file_counts.problems.extend(str(p) for p in result.problems)
        if counts is not None:
            counts.append(file_counts)


class _Open:
    """A connection of :func:`iter_local` whose last segment is still to come: its rows, the
    frames fed so far, its key and each direction's (source, port, destination, port) seen."""

    __slots__ = ("frames", "key", "rows", "whos")

    def __init__(self, rows: FlowRows, key: Any) -> None:
        self.rows = rows
        self.key = key
        self.frames = 0
        self.whos: list[tuple[str, int, str, int]] = []


def _local_rows(
    path: str, result: SplitResult, ends: frozenset[int], ports: frozenset[int], counts: FrameCounts, pool: SpillPool
) -> Iterator[Tables]:
    """:func:`iter_local` of one file, its last records (``ends``) known: the records read in place
    and decoded as :func:`view_segments` does (its loop and counts, here: no tuple made per frame);
    a segment finds its connection by its direction's endpoints (a tuple of its own fields)."""
    by_who: dict[tuple[str, int, str, int], _Open] = {}
    open_: dict[Any, _Open] = {}
    ready: list[PacketRows] = []
    read = decoded = 0
    try:
        for offset, ts, linktype, buf, start, stop in read_split_views(result.split, result):
            read += 1
            seg = decode_tcp_view(linktype, buf, start, stop)
            if type(seg) is not TcpSegment or (seg.sport not in ports and seg.dport not in ports):
                _reject(seg, offset, counts)
                continue
            decoded += 1
            entry = by_who.get(seg[:4])
            if entry is None:
                make = partial(FlowRows, path, ports=ports, emit=ready.append, pool=pool)
                entry = _open_entry(seg, by_who, open_, make)
            entry.frames += 1
            entry.rows.feed(ts, seg, entry.frames)
            while ready:
                yield {"packets": ready.pop(0)}
            if offset in ends:
                del open_[entry.key]
                for who in entry.whos:
                    del by_who[who]
                yield entry.rows.finish()
    finally:
        counts.frames_read += read
        counts.frames_decoded += decoded
    for entry in open_.values():  # not ended where the first pass saw them end
        yield entry.rows.finish()


def _open_entry(
    seg: TcpSegment,
    by_who: dict[tuple[str, int, str, int], _Open],
    open_: dict[Any, _Open],
    make: Callable[[FlowKey], FlowRows],
) -> _Open:
    """The connection of a segment whose direction was not seen yet: the connection already open
    (its other direction seen), else a new one; the direction's endpoints now lead to it."""
    key = segment_connection(seg)
    entry = open_.get(key)
    if entry is None:
        entry = open_[key] = _Open(make(FlowKey.of(seg.src, seg.sport, seg.dst, seg.dport)[0]), key)
    who = (seg.src, seg.sport, seg.dst, seg.dport)
    entry.whos.append(who)
    by_who[who] = entry
    return entry


def process_local(
    paths: Iterable[str], ports: frozenset[int] = DEFAULT_PORTS
) -> tuple[dict[str, list[dict[str, Any]]], list[FrameCounts]]:
    """Every row of :func:`iter_local` collected (for tests and small inputs: the rows stay in memory)."""
    tables: dict[str, list[dict[str, Any]]] = {"packets": [], "sessions": [], "violations": []}
    all_counts: list[FrameCounts] = []
    for flow_tables in iter_local(paths, ports, all_counts):
        for table, rows in flow_tables.items():
            tables[table].extend(rows)
    return tables, all_counts
