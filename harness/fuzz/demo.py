"""``msmq-harness demo``'s fuzzing part: the fuzzer finds the simulated peer's crash on an
oversize SoapHeader length ([MS-MQMQ] 2.2.20.7; harness.peers.faults ``crash-soap-length``),
confirms it and writes its minimal case, pcap and reports, in seconds (timers x0.05), into a
folder of the demo's own output (the temporary sibling of ``demo --out``, harness.outdir)."""

from __future__ import annotations

from pathlib import Path

from harness.fuzz.engine import Fuzzer
from harness.fuzz.findings import write_html, write_json
from harness.fuzz.oracles import Timers
from harness.fuzz.runs import FuzzOptions
from harness.peers.server import SimulatedPeer

__all__ = ["fuzz_demo"]

SEED = 7


def fuzz_demo(out: Path, shown: Path | None = None) -> str:
    """Run the demo into ``out``, a folder it may fill (it replaces what is there); one line
    saying what was found and where it is: ``shown``, where ``out`` is put when complete."""
    with SimulatedPeer(behaviour="crash-soap-length", time_scale=0.05, ping_port=None) as peer:
        host, port = peer.address
        target = f"mqqb://{host}:{port}?scale=0.05"
        options = FuzzOptions(
            (host, port),
            target,
            SEED,
            max_packets=20_000,
            duration=60.0,
            restart_wait=10.0,
            timers=Timers(0.05),
            out=out,
            shown=shown,
        )
        report = Fuzzer(options).run()
    out.mkdir(parents=True, exist_ok=True)
    write_json(report, out / "report.json")
    write_html(report, out / "report.html")
    crash = next((f for f in report.findings if f.oracle == "crash" and f.confirmed), None)
    if crash is None:
        return f"fuzz: nothing found against the crash-soap-length peer in {report.seconds:.1f} s ({report.stopped})"
    return (
        f"fuzz: a crash of the crash-soap-length peer found in {report.seconds:.1f} s ({report.rounds} rounds, "
        f"--seed {SEED}): {crash.template} {crash.field} {crash.op} in {crash.state}; confirmed, minimal case "
        f"{crash.case}, pcap {crash.pcap}, reports {(shown or out) / 'report.html'}"
    )
