"""Transcripts of wire cases: what crossed the wire, one pcap and one HTML page per case.

``msmq-harness run --record DIR`` (harness.cases.targets.wire.run_wire_case) hands every
[MS-MQQB] wire case it ran to :func:`write_transcript` with the TCP connections of its session
(:class:`RecordedConnection`: both directions, whole packets, wall-clock times) as the harness's
own end saw them.  Two files result, named after the case's full id (:func:`file_stem`: the id
itself when it is a safe file name, else a safe form of it and a digest of the whole id, so
that two cases never share a file and a case keeps its name from run to run):

- ``DIR/<id>.pcap``: one TCP flow per connection with synthesised framing
  (harness.peers.recorder: handshake, PSH+ACK segments, FIN), which ``msmq-harness decode``
  and Wireshark read back.  The acceptor's port is written as 1801, the port [MS-MQQB] 2.1.1
  names (the harness's acceptors listen on ephemeral ports), so that the capture decodes without
  ``--ports``; the page says which port it really was.
- ``DIR/<id>.html``: one self-contained page listing every packet in the order it crossed the wire
  (all connections, both directions), with its time, connection, direction (which side sent it:
  the harness or the implementation under test), kind and size, decoded field by field with the
  spec's names ([MS-MQMQ] 2.2.18-2.2.20, [MS-MQQB] 2.2; packets.render), and its bytes.  The
  packet whose fields a failing step read (the failure's evidence) is marked ``failing`` and
  carries the failure's explanation and annotated hex dump.

The HTML report (harness.report.html) links each wire case to its page
(``CaseResult.transcript``).  Ping Requests and Responses ([MS-MQQB] 2.1.2) travel over UDP and
are not part of the TCP transcript.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import packets
from harness.cases.transcripts import set_transcript_writer
from harness.peers.recording import MSMQ_PORT, RecordedConnection, ordered_packets, write_pcap
from harness.report.html import BASE_CSS, escape
from harness.results import CaseResult, StepFailure
from packets.render import render_tree

__all__ = ["file_stem", "find_failing", "render_transcript", "write_transcript"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._=,+\[\]-]+")
_STEM_CHARS = 150  # characters of a transcript's file name before its suffix (the digest apart)
_WINDOWS_DEVICES = frozenset(
    {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}
)
_HEX_SHOWN = 4096  # bytes of a packet shown in its hex dump


def file_stem(case_id: str) -> str:
    """The file name (without suffix) of a case's transcript: unique and stable.

    An id that is a safe file name as it is -- only the characters of :data:`_UNSAFE`'s
    complement, no capital letter (two ids differing in case would share a file on a
    case-insensitive file system), not a device name of Windows, at most :data:`_STEM_CHARS`
    long -- is the name.  Any other is made safe (each run of other characters replaced by
    ``_``, cut to :data:`_STEM_CHARS`) and followed by ``~`` and 12 hex digits of the SHA-256
    of the whole id: ``a/b`` and ``a?b`` become ``a_b~<digest>`` with two digests.  A safe id
    never holds ``~``, so it never takes the name of another id."""
    safe = _UNSAFE.sub("_", case_id).strip(".")
    kept = (
        safe == case_id
        and len(safe) <= _STEM_CHARS
        and safe == safe.lower()
        and safe.split(".", 1)[0].upper() not in _WINDOWS_DEVICES
    )
    if kept:
        return safe
    digest = hashlib.sha256(case_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{(safe or 'case')[:_STEM_CHARS]}~{digest}"


def find_failing(connections: list[RecordedConnection], failing: bytes | None) -> tuple[int, int] | None:
    """(connection, packet) index of the packet a failing step read: the very object the run kept
    (``WireRun.last_packet``), else the first packet with the same bytes; None when none is."""
    if failing is None:
        return None
    for ci, conn in enumerate(connections):
        for pi, (_, data, _) in enumerate(conn.packets):
            if data is failing:
                return ci, pi
    for ci, conn in enumerate(connections):
        for pi, (_, data, _) in enumerate(conn.packets):
            if data == failing:
                return ci, pi
    return None


def _time(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%H:%M:%S.%f")[:-3]


def _hex(data: bytes) -> str:
    shown = data[:_HEX_SHOWN]
    lines = []
    for r in range(0, len(shown), 16):
        chunk = shown[r : r + 16]
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{r:06X}  {chunk.hex(' ').upper():<47}  {text}")
    if len(data) > len(shown):
        lines.append(f"... ({len(data)} bytes, the first {len(shown)} shown)")
    return "\n".join(lines)


def _decoded(data: bytes) -> tuple[str, str]:
    """(kind, field tree) of a packet; ("Unknown", why) when it does not decode."""
    try:
        packet = packets.parse(data, strict=False)
    except Exception as e:  # a packet the harness could not frame or parse: its bytes still show
        return "Unknown", f"does not decode: {type(e).__name__}: {e}"
    return packet.kind.name, render_tree(packet)


_CSS = """
table.packets { width: 100%; border-collapse: collapse; table-layout: fixed; }
table.packets th, table.packets td { border-top: 1px solid var(--line); padding: .2em .4em; text-align: left;
  vertical-align: top; }
table.packets col.n { width: 3em; } table.packets col.t { width: 12em; } table.packets col.c { width: 4em; }
table.packets col.d { width: 16em; } table.packets col.s { width: 6em; }
tr.packet.from-target td.dir { color: #0969da; } tr.packet.from-harness td.dir { color: var(--muted); }
tr.packet.failing td { background: #ffebe9; } tr.packet.failing td:first-child { border-left: 4px solid var(--failed); }
tr.detail td { border-top: none; padding-top: 0; }
tr.detail.failing td { background: #fff8f8; }
.mark { color: var(--failed); font-weight: 700; }
details > summary { cursor: pointer; }
pre.tree, pre.hex, pre.evidence { white-space: pre; }
"""


def render_transcript(
    result: CaseResult,
    side: str,
    connections: list[RecordedConnection],
    failing: tuple[int, int] | None,
    pcap_name: str,
) -> str:
    """The transcript page (see the module docstring).  ``side`` is the side under test
    (``initiator``: the implementation is the client of every connection; ``acceptor``: the
    harness is)."""
    outcome = str(result.outcome)
    order = ordered_packets(connections)
    failure = next((f for f in result.failures if f.step >= 0), None) if failing is not None else None
    rows = _packet_rows(connections, order, side, failing, failure)
    conns = "".join(
        f"<li>connection {ci + 1}: {escape(c.client[0])}:{c.client[1]} \u2192 {escape(c.server[0])}:{c.server[1]} "
        f"(written as port {MSMQ_PORT} in the pcap), {len(c.packets)} packets, "
        f"{_closed_text(c.closed_by, side)}</li>"
        for ci, c in enumerate(connections)
    )
    under_test = "sender (initiator)" if side == "initiator" else "receiver (acceptor)"
    table = (
        '<table class="packets"><colgroup><col class="n"><col class="t"><col class="c"><col class="d">'
        '<col class="s"><col></colgroup><thead><tr><th>#</th><th>time (UTC)</th><th>conn</th><th>direction</th>'
        f"<th>size</th><th>kind</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        if rows
        else "<p>No packet crossed the wire.</p>"
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>transcript: {escape(result.case_id)}</title>
<style>{BASE_CSS}{_CSS}</style>
</head>
<body>
<header>
<h1>Transcript of <code>{escape(result.case_id)}</code></h1>
<p><span class="badge b-{escape(outcome)}">{escape(outcome.replace("_", " "))}</span>
<span class="title">{escape(result.title)}</span></p>
<p class="muted">{escape(result.source)}:{result.line}; the implementation under test is the {under_test};
{len(order)} packets over {len(connections)} TCP connection{"s" if len(connections) != 1 else ""}, as the harness's
end saw them. Capture: <a href="{quote(pcap_name)}" id="pcap">{escape(pcap_name)}</a>
(<code>msmq-harness decode {escape(pcap_name)}</code>).</p>
<ul id="connections">{conns}</ul>
{_marked_note(result, failing)}
</header>
<main>
{table}
</main>
</body>
</html>
"""


def _packet_rows(
    connections: list[RecordedConnection],
    order: list[tuple[float, int, int]],
    side: str,
    failing: tuple[int, int] | None,
    failure: StepFailure | None,
) -> list[str]:
    """Two table rows per packet in the order they crossed the wire: its time, connection,
    direction, size and kind, then its decoded fields and bytes; the failing one marked and
    carrying ``failure``'s explanation and evidence."""
    target_sends = "c2s" if side == "initiator" else "s2c"
    first = min((ts for ts, _, _ in order), default=0.0)
    rows: list[str] = []
    for n, (ts, ci, pi) in enumerate(order, start=1):
        direction, data, _ = connections[ci].packets[pi]
        kind, tree = _decoded(data)
        by_target = direction == target_sends
        who = "implementation \u2192 harness" if by_target else "harness \u2192 implementation"
        is_failing = failing == (ci, pi)
        cls = f"packet {'from-target' if by_target else 'from-harness'}{' failing' if is_failing else ''}"
        mark = ""
        ident = f"p{n}"
        if is_failing:
            ident = "failing"
            step = f"step {failure.step} ({failure.event})" if failure is not None else "the failing step"
            mark = f' <span class="mark">\u25c0 failing packet: the evidence of {escape(step)}</span>'
        rows.append(
            f'<tr class="{cls}" id="{ident}" data-index="{n}" data-connection="{ci + 1}" '
            f'data-direction="{direction}" data-kind="{escape(kind)}">'
            f"<td>{n}</td><td>{_time(ts)}<br><small class='muted'>+{ts - first:.3f} s</small></td>"
            f"<td>{ci + 1}</td><td class='dir'>{direction} <small>({who})</small></td>"
            f"<td>{len(data)} B</td><td><b>{escape(kind)}</b>{mark}</td></tr>"
        )
        rows.append(_detail_row(data, tree, failure if is_failing else None, is_failing))
    return rows


def _detail_row(data: bytes, tree: str, failure: StepFailure | None, is_failing: bool) -> str:
    """The row under a packet: the failure it is the evidence of (if any), its fields (open on the
    failing packet) and its bytes."""
    extra = ""
    if failure is not None:
        extra = f'<p class="mark">{escape(failure.message)}</p>' + (
            f'<pre class="evidence">{escape(failure.evidence)}</pre>' if failure.evidence else ""
        )
    return (
        f'<tr class="detail{" failing" if is_failing else ""}"><td></td><td colspan="5">{extra}'
        f'<details{" open" if is_failing else ""}><summary>fields</summary><pre class="tree">{escape(tree)}</pre>'
        f'</details><details><summary>bytes</summary><pre class="hex">{escape(_hex(data))}</pre></details>'
        "</td></tr>"
    )


def _marked_note(result: CaseResult, failing: tuple[int, int] | None) -> str:
    """What the page says of the failing packet: a link to it, or that no packet is marked."""
    if failing is not None:
        return '<p>The packet the failing step read is marked: <a href="#failing">go to it</a>.</p>'
    if result.failures or result.outcome.bad():
        return "<p class='muted'>The case's differences read no packet of the TCP session (no packet is marked).</p>"
    return ""


def _closed_text(closed_by: str, side: str) -> str:
    if not closed_by:
        return "open until the case ended"
    closer_is_target = (closed_by == "c2s") == (side == "initiator")
    return f"closed first by the {'implementation' if closer_is_target else 'harness'}"


def write_transcript(
    directory: str | Path,
    result: CaseResult,
    side: str,
    connections: list[RecordedConnection],
    failing: bytes | None = None,
) -> Path:
    """Write ``DIR/<id>.pcap`` and ``DIR/<id>.html`` for a wire case's ``result``; ``failing``:
    the packet the failing step read (``WireRun.last_packet``).  Returns the page's path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    stem = file_stem(result.case_id)
    pcap = directory / f"{stem}.pcap"
    page = directory / f"{stem}.html"
    write_pcap(pcap, connections)
    found = find_failing(connections, failing)
    page.write_text(render_transcript(result, side, connections, found, pcap.name), encoding="utf-8")
    return page


set_transcript_writer(write_transcript)  # what ``--record`` writes (harness.cases.transcripts)
