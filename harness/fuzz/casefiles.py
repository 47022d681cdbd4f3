"""A finding's files: its wire case (docs/cases.md "Wire cases") and the pcap of its session.

Every finding of ``msmq-harness fuzz`` (an acceptor's, harness.fuzz.minimise, or a sender's,
harness.fuzz.sendercase) is written the same way: ``<id>-seed<N>.yaml``, the case headed by
comments saying how it was found, and ``<id>-seed<N>.pcap``, the minimal session with TCP framing
(both directions of the [MS-MQQB] 2.1.1 connection as sent and read).  They are written into the
run's output folder as it is being written (``FuzzOptions.out``: the temporary sibling of
harness.outdir.StagedOutput, put in place only when the run ends), and the finding names them
where the folder is put (``FuzzOptions.shown``); so does the outcome of the case run once
against the target (:func:`run_case`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml

from harness.cases import execute
from harness.cases.loader import load_paths
from harness.fuzz.runs import Finding, FuzzOptions
from harness.fuzz.states import Connection
from harness.outdir import write_file_atomically
from harness.peers.recorder import PcapRecorder

__all__ = ["run_case", "wire_hex", "write_case", "write_finding_pcap", "write_pcap"]


def _name(f: Finding) -> str:
    return f"{f.id}-seed{f.seed}"


def _shown(o: FuzzOptions, written: Path) -> str:
    """The path a report names for a file written at ``written`` (in ``o.out``)."""
    return str((o.shown or o.out) / written.relative_to(o.out))


def wire_hex(data: bytes) -> str:
    """A packet's bytes as a case's ``hex`` writes them: 32 bytes a group, the groups spaced."""
    return " ".join(data[i : i + 32].hex() for i in range(0, len(data), 32))


def write_case(o: FuzzOptions, f: Finding, header: str, case: dict[str, Any]) -> Path:
    """Write ``f``'s case, ``header`` (comment lines) then the case as YAML; ``f.case`` names it.
    Returns the path written (to run the case)."""
    o.out.mkdir(parents=True, exist_ok=True)
    path = o.out / f"{_name(f)}.yaml"
    write_file_atomically(path, header + yaml.safe_dump(case, sort_keys=False, width=110))
    f.case = _shown(o, path)
    return path


def write_finding_pcap(o: FuzzOptions, f: Finding, conn: Connection, server: tuple[str, int]) -> None:
    """Write the session of ``conn`` (:func:`write_pcap`) as ``f``'s pcap; ``f.pcap`` names it."""
    o.out.mkdir(parents=True, exist_ok=True)
    f.pcap = _shown(o, write_pcap(conn, server, o.out / f"{_name(f)}.pcap"))


def write_pcap(conn: Connection, server: tuple[str, int], path: Path) -> Path:
    """The session of ``conn`` (both directions, as sent and read) as a pcap with TCP framing."""
    recorder = PcapRecorder(path)
    try:
        first = conn.log[0][2] if conn.log else time.time()
        flow = recorder.flow(conn.local, server, first)
        for direction, data, ts in conn.log:
            flow.data(direction, data, ts)
        flow.fin("s2c" if conn.closed else "c2s", conn.log[-1][2] if conn.log else first)
    finally:
        recorder.close()
    return path


def run_case(o: FuzzOptions, path: Path, target: str) -> str:
    """The outcome of the case written at ``path`` run against ``target`` (as ``msmq-harness run``
    runs it), an error with its detail; a path it names, where the output folder is put."""
    try:
        (case,) = load_paths([str(path)])
        opened, info = execute.open_target(target, 10.0)
        try:
            result = execute.run_case(case, opened, step_timeout=10.0, info=info)
            outcome = str(result.outcome.value)
            text = f"{outcome}: {result.detail}" if outcome == "error" and result.detail else outcome
        finally:
            opened.close()
    except Exception as e:  # the report says it; the finding stands
        text = f"error: {type(e).__name__}: {e}"
    return text.replace(str(o.out), str(o.shown)) if o.shown is not None else text
