"""Recordings of MSMQ binary-protocol sessions ([MS-MQQB] 2.1.1): TCP connections as they crossed
the wire, written back as a pcap.

A :class:`RecordedConnection` is one TCP connection of a session seen from the harness's own
end: both directions, whole packets, wall-clock times.  :func:`write_pcap` writes connections as
one pcap, a TCP flow each with synthesised framing (:class:`harness.peers.recorder.PcapRecorder`:
handshake, PSH+ACK segments, FIN).  The acceptor's port is written as 1801 (:data:`MSMQ_PORT`,
the port [MS-MQQB] 2.1.1 names; the harness's acceptors listen on ephemeral ports), so that the
capture decodes without ``--ports``.  The wire runs record; the transcripts
(harness.report.transcript) read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.peers.recorder import PcapRecorder

__all__ = ["MSMQ_PORT", "RecordedConnection", "ordered_packets", "packet_times", "write_pcap"]

MSMQ_PORT = 1801  # [MS-MQQB] 2.1.1: the TCP port of the MSMQ binary protocol


@dataclass
class RecordedConnection:
    """One TCP connection of a wire case's session: ``client`` is the initiator's end, ``server``
    the acceptor's; ``packets`` are (direction ``"c2s"``/``"s2c"``, bytes, wall-clock time) in
    the order they crossed; ``closed_by`` the direction whose side closed first (``""``: it was
    still open when the case ended, and the harness closed it)."""

    client: tuple[str, int]
    server: tuple[str, int]
    packets: list[tuple[str, bytes, float]] = field(default_factory=list)
    closed_by: str = ""
    opened: float | None = None  # wall-clock time of the connect (None: that of its first packet)


def _opened(conn: RecordedConnection) -> float:
    if conn.opened is not None:
        return conn.opened
    return conn.packets[0][2] if conn.packets else 0.0


def packet_times(conn: RecordedConnection) -> list[float]:
    """The packets' times, never earlier than the connect nor than the packet before (two
    threads' clocks may disagree by a little): a connection's packets keep their order."""
    out, last = [], _opened(conn)
    for _, _, ts in conn.packets:
        last = max(last, ts)
        out.append(last)
    return out


def ordered_packets(connections: list[RecordedConnection]) -> list[tuple[float, int, int]]:
    """Every packet as (time, connection, index), in the order it crossed the wire."""
    events = [(ts, ci, pi) for ci, conn in enumerate(connections) for pi, ts in enumerate(packet_times(conn))]
    return sorted(events)


def write_pcap(path: Path, connections: list[RecordedConnection]) -> int:
    """Write the connections as one pcap (a TCP flow each, frames in time order); returns the
    number of frames written."""
    # (time, order within a connection, connection, what): handshake, data, FIN
    events: list[tuple[float, int, int, Any]] = []
    for ci, conn in enumerate(connections):
        start = _opened(conn)
        events.append((start, 0, ci, ("open",)))
        times = packet_times(conn)
        for pi, ((direction, data, _), ts) in enumerate(zip(conn.packets, times, strict=True)):
            events.append((ts, pi + 1, ci, ("data", direction, data)))
        end = times[-1] if times else start
        events.append((end, len(conn.packets) + 1, ci, ("fin", conn.closed_by or "s2c")))
    events.sort(key=lambda e: (e[0], e[2], e[1]))
    recorder = PcapRecorder(path)
    try:
        flows: dict[int, Any] = {}
        for ts, _, ci, what in events:
            conn = connections[ci]
            if what[0] == "open":
                flows[ci] = recorder.flow(conn.client, (conn.server[0], MSMQ_PORT), ts)
            elif what[0] == "data":
                flows[ci].data(what[1], what[2], ts)
            else:
                flows[ci].fin(what[1], ts)
        return recorder.frames
    finally:
        recorder.close()
