"""The fuzzer's report: each finding and the coverage table, in the terminal, as JSON and as HTML.

Each finding names the session state it was injected in, the injected packet decoded by spec field
names ([MS-MQMQ] 2.2.19-2.2.20, [MS-MQQB] 2.2; ``packets.render``), the oracle that fired and why,
the requirement at stake (cases/requirements.yaml, with its level and section), the minimal case
and pcap, and the seed that reproduces the run.  The coverage table counts the packets injected
per (session state x packet kind x mutated field).
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import packets
from harness.fuzz.generate import KINDS
from harness.fuzz.runs import Finding, FuzzReport
from packets.render import render_tree, to_jsonable

__all__ = ["coverage_table", "decoded", "text_report", "to_json", "write_html", "write_json"]


def decoded(data: bytes) -> str:
    """The packet as a field tree by spec names, or why it does not decode (with its hex)."""
    try:
        return render_tree(packets.parse(data, strict=False))
    except packets.PacketError as e:
        return f"undecodable ({e}): {data.hex()}"


def coverage_table(report: FuzzReport) -> list[str]:
    """Rows of state x packet kind: the packets injected and the distinct fields mutated."""
    states = list(dict.fromkeys(s for s, _, _ in report.coverage))
    count: dict[tuple[str, str], int] = defaultdict(int)
    fields: dict[tuple[str, str], set[str]] = defaultdict(set)
    for (s, k, f), n in report.coverage.items():
        count[(s, k)] += n
        fields[(s, k)].add(f)
    width = max([len(s) for s in states] + [16])
    lines = [f"{'state':<{width}}  " + "  ".join(f"{k:>20}" for k in KINDS)]
    for s in states:
        cells = [
            f"{count[(s, k)]:>5} pk {len(fields[(s, k)]):>4} fields" if count[(s, k)] else f"{'-':>20}" for k in KINDS
        ]
        lines.append(f"{s:<{width}}  " + "  ".join(f"{c:>20}" for c in cells))
    reached = len(report.pairs())
    lines.append(f"(state x kind) pairs reached: {reached} of {len(states) * len(KINDS) if states else 0}")
    return lines


def text_report(report: FuzzReport) -> list[str]:
    o = report.options
    lines = [
        f"fuzzed {o.target} with --seed {o.seed}: {report.rounds} rounds, {report.packets} packets in "
        f"{report.seconds:.1f} s; stopped: {report.stopped}",
        *coverage_table(report),
    ]
    if not report.findings:
        lines.append("no findings")
    for f in report.findings:
        lines += _finding_lines(f)
    return lines


def _finding_lines(f: Finding) -> list[str]:
    state = "confirmed" if f.confirmed else "not confirmed"
    lines = [
        f"{f.id}: {f.oracle.upper()} ({state}) in {f.state}, round {f.round}, seed {f.seed}"
        + (f", seen {f.duplicates} more times" if f.duplicates else ""),
        f"  oracle: {f.why}",
        f"  injected: {f.template} {f.field or '(no field)'} {f.op}",
    ]
    if f.requirement:
        lines.append(f"  requirement: {f.requirement} ({f.level}, {f.section})")
    if f.case:
        lines.append(f"  minimal case: {f.case} ({len(f.minimal)} of {len(f.packets)} packets), pcap {f.pcap}")
        lines.append(f"  the case against the target: {f.case_outcome}")
    lines += ["  " + line for line in decoded(f.injected).splitlines()]
    return lines


def _finding_json(f: Finding) -> dict[str, Any]:
    try:
        fields: Any = to_jsonable(packets.parse(f.injected, strict=False))
    except packets.PacketError as e:
        fields = {"undecodable": str(e)}
    return {
        "id": f.id,
        "oracle": f.oracle,
        "confirmed": f.confirmed,
        "why": f.why,
        "state": f.state,
        "kind": f.kind,
        "template": f.template,
        "field": f.field,
        "mutation": f.op,
        "round": f.round,
        "seed": f.seed,
        "requirement": f.requirement,
        "level": f.level,
        "section": f.section,
        "packet": f.injected.hex(),
        "decoded": fields,
        "session": [p.hex() for p in f.packets],
        "minimal": [p.hex() for p in f.minimal],
        "case": f.case,
        "pcap": f.pcap,
        "case_outcome": f.case_outcome,
        "duplicates": f.duplicates,
    }


def to_json(report: FuzzReport) -> dict[str, Any]:
    o = report.options
    return {
        "target": o.target,
        "seed": o.seed,
        "rounds": report.rounds,
        "packets": report.packets,
        "seconds": round(report.seconds, 3),
        "stopped": report.stopped,
        "findings": [_finding_json(f) for f in report.findings],
        "coverage": [
            {"state": s, "kind": k, "field": f, "packets": n} for (s, k, f), n in sorted(report.coverage.items())
        ],
        "pairs_reached": sorted([s, k] for s, k in report.pairs()),
    }


def write_json(report: FuzzReport, path: Path) -> None:
    path.write_text(json.dumps(to_json(report), indent=1, default=str) + "\n", encoding="utf-8")


def write_html(report: FuzzReport, path: Path) -> None:
    """One self-contained page: the run, the coverage table, each finding with its decoded packet."""
    e = html.escape
    rows = "".join(
        f"<tr><td>{e(s)}</td><td>{e(k)}</td><td>{e(f)}</td><td>{n}</td></tr>"
        for (s, k, f), n in sorted(report.coverage.items())
    )
    found = "".join(
        f"<section><h2>{e(f.id)}: {e(f.oracle)} in {e(f.state)}</h2><p>{e(f.why)}</p>"
        f"<p>{e(f.template)} {e(f.field or '(no field)')} {e(f.op)}; requirement {e(f.requirement)} "
        f"({e(f.level)}, {e(f.section)}); {'confirmed' if f.confirmed else 'not confirmed'}; "
        f"case <code>{e(f.case)}</code> ({e(f.case_outcome)}), pcap <code>{e(f.pcap)}</code></p>"
        f"<pre>{e(decoded(f.injected))}</pre></section>"
        for f in report.findings
    )
    summary = "<pre>" + e("\n".join(text_report(report)[:1] + coverage_table(report))) + "</pre>"
    path.write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>msmq-harness fuzz</title>"
        "<style>body{font-family:sans-serif}td,th{border:1px solid #ccc;padding:2px 6px}</style></head><body>"
        f"<h1>msmq-harness fuzz: {len(report.findings)} findings</h1>{summary}{found or '<p>no findings</p>'}"
        f"<h2>Coverage (state x packet kind x mutated field)</h2><table><tr><th>state</th><th>kind</th>"
        f"<th>field</th><th>packets</th></tr>{rows}</table></body></html>\n",
        encoding="utf-8",
    )
