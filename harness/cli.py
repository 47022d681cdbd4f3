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

Each subcommand registers itself on the parser (an ``add_parser(sub)`` of its own module:
harness.cli_run, harness.cases_cli, harness.decode_cli, harness.pipeline.cli, harness.peers.cli,
harness.report.compare, harness.dissector_cli, harness.fuzz.cli); this module only builds the
parser from them and runs the one chosen.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from harness.cases_cli import add_parser as add_cases_parser
from harness.cli_run import add_parser as add_run_parser
from harness.decode_cli import add_parser as add_decode_parser
from harness.dissector_cli import add_parser as add_dissector_parser
from harness.fuzz.cli import add_parser as add_fuzz_parser
from harness.peers.cli import add_parser as add_peer_parser
from harness.pipeline.cli import add_subcommands
from harness.report.compare import add_parser as add_compare_parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="msmq-harness", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action=_Version, nargs=0, help="show program's version number and exit")
    sub = parser.add_subparsers(dest="command", required=True)

    add_run_parser(sub)  # harness.cli_run
    add_cases_parser(sub)  # harness.cases_cli: baseline, coverage
    add_decode_parser(sub)  # harness.decode_cli: decode, demo

    add_subcommands(sub)

    add_peer_parser(sub)

    add_compare_parser(sub)

    add_dissector_parser(sub)

    add_fuzz_parser(sub)
    return parser


class _Version(argparse.Action):
    """``--version``: the installed version, looked up (importlib.metadata: some milliseconds)
    only when asked for, not each time the parser is built."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        sys.stdout.write(f"{parser.prog} {_version()}\n")
        parser.exit()


def _version() -> str:
    try:
        return version("msmq-harness")
    except PackageNotFoundError:
        return "unknown (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if argv is not None and hasattr(args, "argv"):
        args.argv = list(argv)  # the command line the reports name
    try:
        return int(args.func(args))
    except BrokenPipeError:  # output piped into head or less, closed early
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
