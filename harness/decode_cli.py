"""``msmq-harness decode`` and ``msmq-harness demo``: the decoder on the command line.

``decode FILE...`` decodes hex dumps, raw MSMQ session streams or pcap/pcapng captures
([MS-MQMQ] 2.2.19-2.2.20, [MS-MQQB] 2.2) as a field tree or JSON lines, with the session
violations of each TCP connection; ``demo`` decodes the bundled [MS-MQQB] section 4 example
frames into reports and runs the fuzzing demo (harness.fuzz.demo).  Both register themselves
(:func:`add_parser`), as ``run``, ``compare`` and ``peer`` do; a top-layer CLI module
(pyproject.toml, the ``layers`` contract).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import packets
from harness.argtypes import port_list
from harness.capture.frames import ACK, SYN, TcpSegment, decode_tcp
from harness.capture.framing import DecodedPacket, StreamReport
from harness.capture.pcapcommon import CaptureProblem, Record
from harness.capture.pcapfile import iter_records, read_header
from harness.decoding import INPUT_PREFIX, ORDERS, PCAP_MAGICS, decode_file, hex_text, read_hex
from harness.files import open_regular
from harness.fuzz.demo import fuzz_demo
from harness.outdir import OutputError, StagedOutput, refusal
from packets import PacketError, wire_length
from packets.render import render_tree, to_jsonable

__all__ = ["DECODE_NOTHING_CHECKED", "add_parser", "cmd_decode", "cmd_demo"]

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def _stream_notes(report: StreamReport) -> list[tuple[str, dict[str, object]]]:
    """Everything besides packets that a stream report holds, as (text, JSON record) pairs."""
    notes: list[tuple[str, dict[str, object]]] = []
    for start, length in report.gaps:
        notes.append((f"gap: {length} bytes missing at stream offset {start}", {"gap": [start, length]}))
    for start, length in report.skipped:
        notes.append((f"resynchronised: skipped {length} bytes at stream offset {start}", {"skipped": [start, length]}))
    for e in report.errors:
        record = {"field": e.field_path, "offset": e.offset, "reason": e.reason, "section": e.section}
        notes.append((f"stream error: {e}", {"error": record}))
    if report.trailing:
        notes.append((f"{report.trailing} bytes of an incomplete packet at the end", {"trailing": report.trailing}))
    for problem in report.problems:
        notes.append((f"capture problem: {problem}", {"problem": problem}))
    return notes


def _where(item: DecodedPacket) -> str:
    """Where a packet was found, for the text output: index and stream offset, and in a capture the
    frame number and capture time (seconds since the epoch, as Wireshark's frame.time_epoch) of
    the frame that completed it."""
    text = f"#{item.index} @ {item.offset}"
    if item.frame:
        text += f", frame {item.frame}"
    if item.time is not None:
        text += f", time {item.time:.6f}"
    return text


def _print_report(report: StreamReport, as_json: bool, out: list[str]) -> int:
    """Append the report's lines to ``out``; return how many problems it holds (a session
    violation counts as one)."""
    problems = 0
    for item in report.packets:
        problems += len(item.packet.violations)
        if as_json:
            record: dict[str, object] = {"stream": report.name, "index": item.index, "offset": item.offset}
            if item.frame:
                record["frame"] = item.frame
            if item.time is not None:
                record["time"] = item.time
            record.update(to_jsonable(item.packet))
            out.append(json.dumps(record))
        else:
            out.append(render_tree(item.packet, f"[{report.name}] {_where(item)}: "))
    for text, record in _stream_notes(report):
        problems += 1
        out.append(json.dumps({"stream": report.name, **record}) if as_json else f"[{report.name}] {text}")
    for v in report.violations:
        problems += 1
        direction = {"c2s": "client", "s2c": "server"}.get(v.direction, v.direction)
        if as_json:
            found = {
                "rule_id": v.rule_id,
                "section": v.section,
                "direction": direction,
                "packet_index": v.packet_index,
                "evidence": v.evidence,
            }
            out.append(json.dumps({"stream": report.flow or report.name, "violation": found}))
        else:
            at = f" at session packet #{v.packet_index}" if v.packet_index >= 0 else ""
            by = f" by the {direction}" if direction else ""
            out.append(f"[{report.flow or report.name}] violation {v.rule_id} ({v.section}){by}{at}: {v.evidence}")
    return problems


def _starts_with_msmq(data: bytes) -> bool:
    """Does ``data`` begin with a packet: a BaseHeader ([MS-MQMQ] 2.2.19.1) or a Ping datagram
    ([MS-MQQB] 2.2.7)?"""
    if len(data) >= 16:
        try:
            wire_length(data[:16])
            return True
        except PacketError:
            pass
    try:
        packets.parse_ping(data, strict=True)
    except PacketError:
        return False
    return True


def _decode_input_problem(name: str) -> str:
    """ "" when ``name`` holds something decode reads (a capture whose file header can be read, a
    hex dump, or a raw stream that starts with an MSMQ packet), else why not, in a few words.
    A device or a FIFO is never read; of a file, the first bytes only (harness.files)."""
    try:
        with open_regular(name) as f:
            head = f.read(4)
            if not head:
                return "empty file"
            if head in PCAP_MAGICS:
                f.seek(0)
                header = read_header(f)
                return f"not a readable capture: {header.reason}" if isinstance(header, CaptureProblem) else ""
            raw = head + f.read(INPUT_PREFIX)
            whole = not f.read(1)
    except OSError as e:
        return e.strerror or str(e)
    try:
        if read_hex(hex_text(raw, whole)):
            return ""
    except (UnicodeDecodeError, ValueError):
        pass
    if _starts_with_msmq(raw):
        return ""
    return f"not a pcap or pcapng capture (magic 0x{raw[:4].hex()}), a hex dump or a stream of MSMQ packets"


#: ``decode --fail-on-violation``: an input held no MSMQ traffic on the ports, so nothing was checked
#: (as ``run``'s 5, nothing ran: no traffic is no pass)
DECODE_NOTHING_CHECKED = 5
_PORTS_SHOWN = 5  # ports named in the note on a capture without MSMQ traffic
_HINT_RECORDS = 1_000_000  # records read for that note, at most


def _holds_traffic(report: StreamReport) -> bool:
    """Does the report hold MSMQ traffic: a packet, or bytes on the ports that failed to be one
    (a framing error, a gap, undecoded bytes), or a session violation?"""
    return bool(
        report.packets or report.errors or report.trailing or report.gaps or report.skipped or report.violations
    )


def _no_traffic_note(name: str, ports: frozenset[int]) -> str:
    """Why an input held no MSMQ traffic, for the note ``decode`` prints: for a capture, how many
    frames it holds and which TCP ports its connections are made to (the port its SYN or SYN+ACK
    names as the acceptor's; the lower port of a connection whose start was not captured)."""
    wanted = ", ".join(str(p) for p in sorted(ports))
    said = f"no MSMQ traffic found on TCP port{'s' if len(ports) > 1 else ''} {wanted}"
    try:
        with open(name, "rb") as f:
            if f.read(4) not in PCAP_MAGICS:
                return said
            f.seek(0)
            frames, read_all = 0, True
            connections: dict[tuple[tuple[str, int], tuple[str, int]], int] = {}  # -> acceptor's port (0: unknown)
            for item in iter_records(f, path=name):
                if not isinstance(item, Record):
                    continue
                frames += 1
                if frames > _HINT_RECORDS:
                    read_all = False
                    break
                seg = decode_tcp(item.linktype, item.data)
                if isinstance(seg, TcpSegment):
                    a, b = (seg.src, seg.sport), (seg.dst, seg.dport)
                    key = (a, b) if a <= b else (b, a)
                    if seg.flags & SYN:
                        connections[key] = seg.sport if seg.flags & ACK else seg.dport
                    else:
                        connections.setdefault(key, 0)
    except OSError:
        return said
    by_port = Counter(port or min(a[1], b[1]) for (a, b), port in connections.items())
    first = "the first " if not read_all else ""
    if not by_port:
        return f"{said} ({first}{frames} frames, none of them TCP)"
    seen = ", ".join(f"{port} ({n} connection{'s' if n > 1 else ''})" for port, n in by_port.most_common(_PORTS_SHOWN))
    more = ", ..." if len(by_port) > _PORTS_SHOWN else ""
    return f"{said} ({first}{frames} frames; TCP ports of its connections: {seen}{more}; choose with --ports)"


def cmd_decode(args: argparse.Namespace) -> int:
    ports = args.ports
    for name in args.files:  # every input first: nothing is printed for a run that cannot finish
        why = _decode_input_problem(name)
        if why:
            print(f"msmq-harness decode: {name}: {why}", file=sys.stderr)
            return 2
    problems = 0
    unchecked = []  # the inputs with no MSMQ traffic on the ports
    write = sys.stdout.write
    for name in args.files:
        # each stream's lines as soon as it is decoded: memory does not grow with the input
        printed = traffic = False
        try:
            for report in decode_file(name, ports, args.order):
                traffic = traffic or _holds_traffic(report)
                out: list[str] = []
                problems += _print_report(report, args.json, out)
                if out:
                    write("\n".join(out) + "\n")
                    printed = True
        except OSError as e:
            print(f"msmq-harness decode: {name}: {e.strerror or e}", file=sys.stderr)
            return 2
        if not printed:
            write("\n")
        if not traffic:  # said on standard error, as a problem is: never taken for a clean pass
            sys.stdout.flush()
            unchecked.append(name)
            print(f"msmq-harness decode: {name}: {_no_traffic_note(name, ports)}", file=sys.stderr)
    if problems and args.fail_on_violation:
        return 1
    return DECODE_NOTHING_CHECKED if unchecked and args.fail_on_violation else 0


def cmd_demo(args: argparse.Namespace) -> int:
    """``--out DIR`` is written beside its place and put there when complete (harness.outdir)."""
    shown = Path(args.out)
    why = refusal(shown, "demo", force=args.force)
    if why:
        print(f"msmq-harness demo: {why}", file=sys.stderr)
        return 2
    with StagedOutput(shown, "demo", force=args.force) as stage:
        out_dir = stage.path
        frames = sorted((FIXTURES / "mqqb-examples").glob("*.hex"))
        text: list[str] = []
        lines: list[str] = []
        problems = 0
        for frame in frames:
            for report in decode_file(frame):
                problems += _print_report(report, False, text)
                _print_report(report, True, lines)
        (out_dir / "examples.txt").write_text("\n".join(text) + "\n")
        (out_dir / "examples.jsonl").write_text("\n".join(lines) + "\n")
        print(f"decoded {len(frames)} example frames of [MS-MQQB] section 4, {problems} problems")
        # the fuzzer finding a fault of the simulated peer (docs/fuzz.md)
        found = fuzz_demo(out_dir / "fuzz", shown / "fuzz")
        try:
            stage.commit()
        except OutputError as e:
            print(f"msmq-harness demo: {e}", file=sys.stderr)
            return 2
    print(f"reports: {shown / 'examples.txt'}, {shown / 'examples.jsonl'}")
    print(found)
    return 1 if problems or not frames else 0


def add_parser(sub: Any) -> None:
    """Register ``decode`` and ``demo`` on ``sub``, the subcommands of ``msmq-harness`` (harness.cli)."""
    decode = sub.add_parser(
        "decode",
        help="decode hex, raw streams or pcap/pcapng captures",
        description="Decode hex dumps, raw MSMQ session streams or pcap/pcapng captures. An input with no MSMQ "
        "traffic on the ports (a capture of other traffic, or of another port) is said on standard error, with "
        "the TCP ports the capture uses. Exit status: 0 decoded, 1 a packet broke a rule (with "
        "--fail-on-violation), 2 an input cannot be read or is none of these (every input is checked before "
        "anything is printed), or an option is out of range, 5 no rule broken but an input held no MSMQ traffic "
        "(with --fail-on-violation: nothing was checked, which is no pass).",
    )
    decode.add_argument("files", nargs="+", metavar="FILE", help="hex dumps, raw session streams, pcap or pcapng files")
    decode.add_argument("--json", action="store_true", help="one JSON object per packet")
    decode.add_argument(
        "--ports", type=port_list, default="1801", metavar="P1,P2", help="TCP ports carrying MSMQ (default 1801)"
    )
    decode.add_argument(
        "--order",
        choices=ORDERS,
        default="stream",
        help="stream: each connection's client then server stream (default); capture: every packet by the "
        "frame that completed it, across streams",
    )
    decode.add_argument(
        "--fail-on-violation",
        action="store_true",
        help="exit 1 when any packet or TCP connection breaks a rule (decoding problems and session violations), "
        "else 5 when an input held no MSMQ traffic on the ports",
    )
    decode.set_defaults(func=cmd_decode)

    demo = sub.add_parser("demo", help="decode the bundled example frames and write reports")
    demo.add_argument(
        "--out", default="reports/demo", metavar="DIR", help="where to write the reports (default reports/demo/)"
    )
    demo.add_argument(
        "--force", action="store_true", help="replace --out even when it holds files the demo did not write"
    )
    demo.set_defaults(func=cmd_demo)
