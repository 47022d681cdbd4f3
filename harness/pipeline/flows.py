"""The work done for each capture: records to TCP segments, segments to flows, flows to packets,
sessions and violations -- with the functions ``msmq-harness decode`` uses.

Frames are decoded by :func:`harness.capture.frames.decode_tcp`; the segments of one TCP
connection (bidirectional 5-tuple, [MS-MQQB] 2.1.1: the MSMQ port is 1801) are reassembled per
direction by :func:`harness.capture.tcp.reassemble` (gaps recorded, never hidden); each direction
is cut by [MS-MQMQ] 2.2.19.1 BaseHeader.PacketSize and decoded non-strictly by
:func:`harness.decoding.decode_pieces`; and the byte streams are replayed in capture order into the
passive :class:`harness.session.Observer`, which reports the [MS-MQQB] 3.1 session rules
(:mod:`harness.session.rules`).  After a gap nothing more is given to the observer: the session
cannot be judged beyond what was captured.  Rows are plain dicts (the Parquet schemas are in
:mod:`harness.pipeline.job`); :func:`process_local` runs the whole chain in one process.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.capture.frames import FrameProblem, TcpSegment, decode_tcp
from harness.capture.pcapfile import Record
from harness.capture.tcp import Flow, FlowKey, reassemble
from harness.decoding import StreamReport, decode_pieces
from harness.decoding import flow_runs as _runs
from harness.decoding import observe_flow as _observe

__all__ = [
    "FrameCounts",
    "analyse_flow",
    "first_reading",
    "flow_rows",
    "iter_local",
    "key_fields",
    "process_local",
    "segments_of",
]

DEFAULT_PORTS = frozenset({1801})


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
    read = decoded = 0  # the common counts kept in locals, given to ``counts`` when the reading ends
    try:
        for rec in records:
            read += 1
            seg = decode_tcp(rec.linktype, rec.data)
            if seg is None:
                counts.not_tcp += 1
            elif isinstance(seg, FrameProblem):
                counts.undecodable += 1
                counts.problems.append(f"{counts.input}@{rec.offset}: {seg.reason} (frame byte {seg.offset})")
            elif seg.sport in ports or seg.dport in ports:
                decoded += 1
                yield rec.offset, rec.ts, seg
            else:
                counts.other_ports += 1
    finally:
        counts.frames_read += read
        counts.frames_decoded += decoded


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
    from packets import GUID

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


def key_fields(packet: Any) -> dict[str, Any]:
    """The fields a support engineer looks for first, by spec name (None when absent)."""
    h = packet.headers
    kind = packet.kind.name
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
    if kind == "UserMessage":
        user = _header(h, "UserHeader")
        out["message_id"] = _int(_field(user, "MessageID"))
        out["source_qm"] = _guid(_field(user, "SourceQueueManager"))
        out["destination_qm"] = _guid(_field(user, "QueueManagerAddress"))
        if _get(h, "TransactionHeader") is not None:
            out["delivery"] = "transactional"
        else:
            dm = _field(user, "Flags")
            out["delivery"] = "recoverable" if dm is not None and getattr(dm, "DM", 0) == 1 else "express"
    elif kind == "EstablishConnection":
        ec = _header(h, "EstablishConnectionHeader")
        out["source_qm"] = _guid(_field(ec, "ClientGuid"))
        out["destination_qm"] = _guid(_field(ec, "ServerGuid"))
    if kind in ("EstablishConnection", "ConnectionParameters"):
        flags = _get(h, "InternalHeader", "Flags")
        out["cs"] = _int(getattr(flags, "CS", None)) if flags is not None else None
    return out


#: the observer's direction of the packet that broke a rule -> the pipeline's direction names
_SENDER = {"c2s": "client", "s2c": "server"}


def analyse_flow(input_name: str, flow: Flow) -> dict[str, list[dict[str, Any]]]:
    """Packets, the session and its violations for one reassembled flow: each packet is parsed
    once (by ``decode_pieces``), for its row and for the observer."""
    reports: dict[str, StreamReport] = {}
    runs: dict[str, list[tuple[float, int, bool]]] = {}
    packet_rows: list[dict[str, Any]] = []
    for direction, side in (("client", flow.client), ("server", flow.server)):
        gaps = [(g.stream_offset, g.length) for g in side.gaps]
        report = decode_pieces(f"{flow.id} {direction}", side.pieces, gaps)
        report.problems.extend(f"{p.reason} at stream offset {p.stream_offset}" for p in side.problems)
        reports[direction] = report
        side_runs = runs[direction] = _runs(side)
        starts = [off for _ts, off, _gap in side_runs]
        for item in report.packets:
            packet = item.packet
            i = bisect.bisect_right(starts, item.offset + len(item.data) - 1) - 1
            row = {
                "input": input_name,
                "flow": flow.id,
                "direction": direction,
                "index": item.index,
                "stream_offset": item.offset,
                "timestamp": side_runs[i][0] if i >= 0 else 0.0,
                "kind": packet.kind.name,
                "size": len(item.data),
                "problems": [str(v) for v in packet.violations],
            }
            row.update(key_fields(packet))
            packet_rows.append(row)

    any_gap = bool(flow.client.gaps or flow.server.gaps)
    found = _observe(flow, reports, runs)
    violation_rows = [
        {
            "input": input_name,
            "flow": flow.id,
            "server": _endpoint(flow.client.dst, flow.client.dport),
            "rule_id": v.rule_id,
            "section": v.section,
            "direction": _SENDER.get(v.direction, v.direction),
            "packet_index": v.packet_index,
            "evidence": v.evidence,
        }
        for v in found
    ]
    return {
        "packets": packet_rows,
        "sessions": [_session_row(input_name, flow, reports, packet_rows, violation_rows, any_gap)],
        "violations": violation_rows,
    }


def _endpoint(addr: str, port: int) -> str:
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


def _session_row(
    input_name: str,
    flow: Flow,
    reports: dict[str, StreamReport],
    packet_rows: list[dict[str, Any]],
    violation_rows: list[dict[str, Any]],
    any_gap: bool,
) -> dict[str, Any]:
    kinds: dict[str, int] = {}
    sent = {"client": 0, "server": 0}
    ec: dict[str, dict[str, Any]] = {}
    for p in packet_rows:  # one pass: packets per kind and per direction, the EstablishConnections
        kind = p["kind"]
        kinds[kind] = kinds.get(kind, 0) + 1
        sent[p["direction"]] += 1
        if kind == "EstablishConnection":
            ec[p["direction"]] = p
    problems: list[str] = []
    for direction, report in reports.items():
        problems += [f"{direction}: gap of {n} bytes at stream offset {s}" for s, n in report.gaps]
        problems += [f"{direction}: skipped {n} bytes at stream offset {s}" for s, n in report.skipped]
        problems += [f"{direction}: {e}" for e in report.errors]
        problems += [f"{direction}: {p}" for p in report.problems]
        if report.trailing:
            problems.append(f"{direction}: {report.trailing} bytes of an incomplete packet at the end")
    refused = ec.get("server", {}).get("cs") == 1
    if not packet_rows and not problems:
        outcome = "no-msmq"
    elif any_gap:
        outcome = "gap"
    elif violation_rows:
        outcome = "violations"
    elif refused:
        outcome = "refused"
    else:
        outcome = "ok"
    c, s = flow.client, flow.server
    return {
        "input": input_name,
        "flow": flow.id,
        "client": _endpoint(c.src, c.sport),
        "server": _endpoint(c.dst, c.dport),
        "client_qm": ec.get("client", {}).get("source_qm"),
        "server_qm": ec.get("server", {}).get("destination_qm"),
        "first_ts": flow.first_ts,
        "last_ts": flow.last_ts,
        "segments": c.segments + s.segments,
        "packets_client": sent["client"],
        "packets_server": sent["server"],
        "user_messages": kinds.get("UserMessage", 0),
        "session_acks": kinds.get("SessionAck", 0),
        "order_acks": kinds.get("OrderAck", 0),
        "final_acks": kinds.get("FinalAck", 0),
        "gaps": len(c.gaps) + len(s.gaps),
        "gap_bytes": sum(g.length for g in c.gaps) + sum(g.length for g in s.gaps),
        "retransmitted_bytes": c.retransmitted + s.retransmitted,
        "closed": bool(c.fin or s.fin or c.reset or s.reset),
        "violations": len(violation_rows),
        "outcome": outcome,
        "problems": problems,
    }


def flow_rows(
    input_name: str, segments: Iterable[tuple[int, float, TcpSegment]], ports: frozenset[int] = DEFAULT_PORTS
) -> dict[str, list[dict[str, Any]]]:
    """Rows for the segments of one TCP connection (any order: sorted by record offset here)."""
    ordered = sorted(segments, key=lambda s: s[0])
    flows = reassemble(((ts, seg) for _off, ts, seg in ordered), ports)
    out: dict[str, list[dict[str, Any]]] = {"packets": [], "sessions": [], "violations": []}
    for flow in flows.values():
        try:
            tables = analyse_flow(input_name, flow)
        except Exception as e:  # one connection that breaks a decoder must not stop the others
            problem = f"analysis failed: {type(e).__name__}: {e}"
            tables = {"sessions": [_failed_session(input_name, flow, problem)]}
        for table, rows in tables.items():
            out[table].extend(rows)
    return out


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
    "client_qm", "server_qm", "packets_client", "packets_server", "user_messages", "session_acks", "order_acks",
    "final_acks", "gaps", "gap_bytes", "retransmitted_bytes", "closed", "violations",
)


def first_reading(split: Any, ports: frozenset[int]) -> Iterator[tuple[int, float, Any]]:
    """(record offset, timestamp, connection) of the records of a range that :func:`segments_of`
    keeps, without building the segments or copying frames
    (:func:`harness.capture.streams.view_connections`)."""
    from harness.capture.streams import view_connections
    from harness.pipeline.splits import read_split_views

    return view_connections(read_split_views(split), ports)


def iter_local(
    paths: Iterable[str], ports: frozenset[int] = DEFAULT_PORTS, counts: list[FrameCounts] | None = None
) -> Iterator[dict[str, list[dict[str, Any]]]]:
    """The whole chain in this process, one file after the other (what each Spark task runs): the
    rows of each connection as soon as its last segment has been read, so neither segments nor
    rows pile up (each file is read twice, :func:`harness.capture.streams.by_connection`).  The
    per-input reconciliation of each file is appended to ``counts`` once the file is read."""
    from harness.capture.streams import by_connection, segment_connection
    from harness.pipeline.splits import Split, SplitResult, read_split

    for path in paths:
        file_counts = FrameCounts(path)
        result = SplitResult(Split(path, 0, max(1, os.path.getsize(path))))
        keyed = (
            (item[0], segment_connection(item[2]), item)
            for item in segments_of(read_split(result.split, result), file_counts, ports)
        )
        for segs in by_connection(first_reading(result.split, ports), keyed, ordered=False):
            yield flow_rows(path, segs, ports)
        file_counts.problems.extend(str(p) for p in result.problems)
        if counts is not None:
            counts.append(file_counts)


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
