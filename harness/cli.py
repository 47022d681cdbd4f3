"""``msmq-harness``: the command-line edge of the harness.

Subcommands:
  run [PATHS]      run conformance cases (cases/ by default) against a target and report by
                   spec section (docs/cases.md)
  baseline REPORT  the known failures of a run --json report, as a baseline for run --baseline
  compare A B ...  what changed between runs: regressions, fixes, changed failures (harness.report.compare)
  coverage         which requirements of cases/requirements.yaml have cases
  decode FILE...   decode hex dumps, raw MSMQ session streams or pcap/pcapng captures
                   ([MS-MQMQ] 2.2.19-2.2.20, [MS-MQQB] 2.2) as a field tree or JSON lines
  demo             decode the bundled [MS-MQQB] section 4 example frames and write reports
  peer             run a simulated remote queue manager that checks whoever connects (harness.peers.cli)
  synth            write a synthetic capture with injected anomalies and their manifest
  pipeline INPUT   decode and check captures with Spark: Parquet packets, sessions, violations
  capture-to-case  a wire case replaying the initiator's side of a captured session

Each subcommand registers itself on the parser (an ``add_parser(sub)`` of its own module, listed
in ``REGISTRARS``); this module only builds the parser from them and runs the one chosen.  A
command line naming a subcommand imports only the module that registers it: ``run`` does not
pay for the Spark pipeline's, the fuzzer's or the decoder's modules at each start (about a fifth
of its imports' CPU, which its parent process spends before any worker starts).  Help, a
version request and a command line naming no known subcommand build the whole parser.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import import_module

from harness import __version__

# The module registering each subcommand, its registering function and the subcommands it adds,
# in the order the help lists them.
REGISTRARS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("harness.cli_run", "add_parser", ("run",)),
    ("harness.cases_cli", "add_parser", ("baseline", "coverage")),
    ("harness.decode_cli", "add_parser", ("decode", "demo")),
    ("harness.pipeline.cli", "add_subcommands", ("synth", "pipeline", "capture-to-case")),
    ("harness.peers.cli", "add_parser", ("peer",)),
    ("harness.report.compare", "add_parser", ("compare",)),
    ("harness.dissector_cli", "add_parser", ("dissector",)),
    ("harness.fuzz.cli", "add_parser", ("fuzz",)),
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser: with only the subcommands of the module registering ``command`` when that is
    a subcommand, else with every subcommand."""
    parser = argparse.ArgumentParser(prog="msmq-harness", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    chosen = [entry for entry in REGISTRARS if command in entry[2]] or REGISTRARS
    for module, function, _commands in chosen:
        getattr(import_module(module), function)(sub)
    return parser


def _command(argv: Sequence[str]) -> str | None:
    """The subcommand a command line names: its first word, unless that is an option."""
    return argv[0] if argv and not argv[0].startswith("-") else None


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    args = build_parser(_command(words)).parse_args(words)
    if argv is not None and hasattr(args, "argv"):
        args.argv = list(argv)  # the command line the reports name
    try:
        return int(args.func(args))
    except BrokenPipeError:  # output piped into head or less, closed early
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
