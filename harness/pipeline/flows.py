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
from harness.capture.tcp import Direction, Flow, FlowKey, reassemble
from harness.decoding import StreamReport, decode_pieces

__all__ = [
    "FrameCounts",
    "analyse_flow",
    "flow_rows",
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
    for rec in records:
        counts.frames_read += 1
        seg = decode_tcp(rec.linktype, rec.data)
        if seg is None:
            counts.not_tcp += 1
        elif isinstance(seg, FrameProblem):
            counts.undecodable += 1
            counts.problems.append(f"{counts.input}@{rec.offset}: {seg.reason} (frame byte {seg.offset})")
        elif seg.sport in ports or seg.dport in ports:
            counts.frames_decoded += 1
            yield rec.offset, rec.ts, seg
        else:
            counts.other_ports += 1


def flow_id(seg: TcpSegment) -> str:
    return FlowKey.of(seg.src, seg.sport, seg.dst, seg.dport)[0].id


# ---------------------------------------------------------------------------------------------
# one flow


def _guid(value: Any) -> str | None:
    if value is None:
        return None
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
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def key_fields(packet: Any) -> dict[str, Any]:
    """The fields a support engineer looks for first, by spec name (None when absent)."""
    h = packet.headers
    kind = packet.kind.name
    out: dict[str, Any] = {
        "message_id": None,
        "source_qm": None,
        "destination_qm": None,
        "delivery": None,
        "ack_sequence_number": _int(_get(h, "SessionHeader", "AckSequenceNumber")),
        "user_msg_sequence_number": _int(_get(h, "SessionHeader", "UserMsgSequenceNumber")),
        "tx_sequence_number": _int(_get(h, "TransactionHeader", "TxSequenceNumber")),
        "cs": None,
    }
    if kind == "UserMessage":
        out["message_id"] = _int(_get(h, "UserHeader", "MessageID"))
        out["source_qm"] = _guid(_get(h, "UserHeader", "SourceQueueManager"))
        out["destination_qm"] = _guid(_get(h, "UserHeader", "QueueManagerAddress"))
        if _get(h, "TransactionHeader") is not None:
            out["delivery"] = "transactional"
        else:
            dm = _get(h, "UserHeader", "Flags")
            out["delivery"] = "recoverable" if dm is not None and getattr(dm, "DM", 0) == 1 else "express"
    elif kind == "EstablishConnection":
        out["source_qm"] = _guid(_get(h, "EstablishConnectionHeader", "ClientGuid"))
        out["destination_qm"] = _guid(_get(h, "EstablishConnectionHeader", "ServerGuid"))
    if kind in ("EstablishConnection", "ConnectionParameters"):
        flags = _get(h, "InternalHeader", "Flags")
        out["cs"] = _int(getattr(flags, "CS", None)) if flags is not None else None
    return out


def _chunks(side: Direction) -> list[tuple[float, int, bytes, bool]]:
    """(timestamp, stream offset, bytes, follows a gap) of each delivered run, in stream order.

    A run is stamped with the capture time at which it became deliverable: a piece that arrived
    ahead of a missing one is stamped no earlier than the piece that filled the hole."""
    starts = sorted(side.timestamps)
    gap_ends = {g.stream_offset + g.length for g in side.gaps}
    out = []
    latest = 0.0
    for base, data in side.pieces:
        i = bisect.bisect_left(starts, base)
        cuts = [s for s in starts[i:] if s < base + len(data)]
        if not cuts or cuts[0] != base:
            cuts.insert(0, base)
        for a, b in zip(cuts, [*cuts[1:], base + len(data)], strict=True):
            latest = max(latest, side.timestamps.get(a, 0.0))
            out.append((latest, a, data[a - base : b - base], a in gap_ends))
    return out


def _ts_of(starts: list[int], timestamps: dict[int, float], offset: int) -> float:
    i = bisect.bisect_right(starts, offset) - 1
    return timestamps[starts[i]] if i >= 0 else 0.0


#: the observer's direction of the packet that broke a rule -> the pipeline's direction names
_SENDER = {"c2s": "client", "s2c": "server"}


def analyse_flow(input_name: str, flow: Flow) -> dict[str, list[dict[str, Any]]]:
    """Packets, the session and its violations for one reassembled flow."""
    from harness.session import Observer

    reports: dict[str, StreamReport] = {}
    chunks: dict[str, list[tuple[float, int, bytes, bool]]] = {}
    packet_rows: list[dict[str, Any]] = []
    for direction, side in (("client", flow.client), ("server", flow.server)):
        gaps = [(g.stream_offset, g.length) for g in side.gaps]
        report = decode_pieces(f"{flow.id} {direction}", side.pieces, gaps)
        report.problems.extend(f"{p.reason} at stream offset {p.stream_offset}" for p in side.problems)
        reports[direction] = report
        runs = chunks[direction] = _chunks(side)
        starts = [off for _ts, off, _data, _gap in runs]
        stamps = {off: ts for ts, off, _data, _gap in runs}
        for item in report.packets:
            row = {
                "input": input_name,
                "flow": flow.id,
                "direction": direction,
                "index": item.index,
                "stream_offset": item.offset,
                "timestamp": _ts_of(starts, stamps, item.offset + len(item.data) - 1),
                "kind": item.packet.kind.name,
                "size": len(item.data),
                "problems": [str(v) for v in item.packet.violations],
            }
            row.update(key_fields(item.packet))
            packet_rows.append(row)

    # replay both directions into the observer in capture order, up to the first gap
    observer = Observer()
    events = [(ts, 0, off, data, gap, "client") for ts, off, data, gap in chunks["client"]]
    events += [(ts, 1, off, data, gap, "server") for ts, off, data, gap in chunks["server"]]
    events.sort(key=lambda e: (e[0], e[1], e[2]))
    any_gap = bool(flow.client.gaps or flow.server.gaps)
    found: list[Any] = []
    for ts, _order, _off, data, after_gap, direction in events:
        if after_gap:
            break
        # the capture time is the clock message expiry is judged by ([MS-MQQB] 3.1.7.1.2)
        found += observer.client_data(data, ts) if direction == "client" else observer.server_data(data, ts)
    if not any_gap:
        found += observer.end()
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
    def count(direction: str | None, kind: str) -> int:
        return sum(1 for p in packet_rows if p["kind"] == kind and direction in (None, p["direction"]))

    ec = {p["direction"]: p for p in packet_rows if p["kind"] == "EstablishConnection"}
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
        "packets_client": sum(1 for p in packet_rows if p["direction"] == "client"),
        "packets_server": sum(1 for p in packet_rows if p["direction"] == "server"),
        "user_messages": count(None, "UserMessage"),
        "session_acks": count(None, "SessionAck"),
        "order_acks": count(None, "OrderAck"),
        "final_acks": count(None, "FinalAck"),
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


def process_local(
    paths: Iterable[str], ports: frozenset[int] = DEFAULT_PORTS
) -> tuple[dict[str, list[dict[str, Any]]], list[FrameCounts]]:
    """The whole chain in this process, one file after the other (what each Spark task runs)."""
    from harness.pipeline.splits import Split, SplitResult, read_split

    tables: dict[str, list[dict[str, Any]]] = {"packets": [], "sessions": [], "violations": []}
    all_counts = []
    for path in paths:
        counts = FrameCounts(path)
        result = SplitResult(Split(path, 0, max(1, os.path.getsize(path))))
        by_flow: dict[str, list[tuple[int, float, TcpSegment]]] = {}
        for item in segments_of(read_split(result.split, result), counts, ports):
            by_flow.setdefault(flow_id(item[2]), []).append(item)
        counts.problems.extend(str(p) for p in result.problems)
        for segs in by_flow.values():
            for table, rows in flow_rows(path, segs, ports).items():
                tables[table].extend(rows)
        all_counts.append(counts)
    return tables, all_counts
