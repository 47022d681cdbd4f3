"""``msmq-harness``: the command-line edge of the harness.

Subcommands:
  decode FILE...   decode hex dumps, raw MSMQ session streams or pcap/pcapng captures
                   ([MS-MQMQ] 2.2.19-2.2.20, [MS-MQQB] 2.2) as a field tree or JSON lines
  demo             decode the bundled [MS-MQQB] section 4 example frames and write reports
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.decoding import StreamReport, decode_file
from packets.render import render_tree, to_jsonable

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


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


def _print_report(report: StreamReport, as_json: bool, out: list[str]) -> int:
    """Append the report's lines to ``out``; return how many problems it holds."""
    problems = 0
    for item in report.packets:
        problems += len(item.packet.violations)
        if as_json:
            record: dict[str, object] = {"stream": report.name, "index": item.index, "offset": item.offset}
            record.update(to_jsonable(item.packet))
            out.append(json.dumps(record))
        else:
            out.append(render_tree(item.packet, f"[{report.name}] #{item.index} @ {item.offset}: "))
    for text, record in _stream_notes(report):
        problems += 1
        out.append(json.dumps({"stream": report.name, **record}) if as_json else f"[{report.name}] {text}")
    return problems


def cmd_decode(args: argparse.Namespace) -> int:
    ports = frozenset(int(p) for p in args.ports.split(","))
    problems = 0
    for name in args.files:
        out: list[str] = []
        try:
            for report in decode_file(name, ports):
                problems += _print_report(report, args.json, out)
        except OSError as e:
            print(f"msmq-harness decode: {name}: {e.strerror or e}", file=sys.stderr)
            return 2
        print("\n".join(out))
    return 1 if problems and args.fail_on_violation else 0


def cmd_demo(args: argparse.Namespace) -> int:
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
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
    print(f"reports: {out_dir / 'examples.txt'}, {out_dir / 'examples.jsonl'}")
    return 1 if problems or not frames else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="msmq-harness", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    decode = sub.add_parser("decode", help="decode hex, raw streams or pcap/pcapng captures")
    decode.add_argument("files", nargs="+", metavar="FILE")
    decode.add_argument("--json", action="store_true", help="one JSON object per packet")
    decode.add_argument("--ports", default="1801", help="TCP ports carrying MSMQ (default 1801)")
    decode.add_argument(
        "--fail-on-violation", action="store_true", help="exit 1 when any packet breaks a rule"
    )
    decode.set_defaults(func=cmd_decode)

    demo = sub.add_parser("demo", help="decode the bundled example frames and write reports")
    demo.add_argument("--out", default="reports")
    demo.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
