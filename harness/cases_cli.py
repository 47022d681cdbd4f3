"""``msmq-harness baseline`` and ``msmq-harness coverage``: what the cases say about a run and
about the requirements.

``baseline REPORT`` writes the known failures of a ``run --json`` report as a baseline for
``run --baseline`` (harness.cases.baseline); ``coverage`` says which requirements of
cases/requirements.yaml have cases (harness.cases.coverage).  Both register themselves
(:func:`add_parser`), as ``run``, ``compare`` and ``peer`` do; a top-layer CLI module
(pyproject.toml, the ``layers`` contract).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.cases.baseline import render_baseline
from harness.cases.coverage import coverage, render_coverage
from harness.cases.lines import CaseError
from harness.cases.loader import load_paths, load_requirements
from harness.cli_run import CASES, EXIT_OK, EXIT_USAGE
from harness.report.compare import read_report

__all__ = ["add_parser", "cmd_baseline", "cmd_coverage"]


def cmd_baseline(args: argparse.Namespace) -> int:
    """``msmq-harness baseline REPORT.json > known.yaml`` (harness.cases.baseline)."""
    try:
        run = read_report(args.report)
    except OSError as e:
        print(f"msmq-harness baseline: {args.report}: {e.strerror or e}", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, KeyError, TypeError) as e:
        print(f"msmq-harness baseline: {args.report}: cannot read the report: {e}", file=sys.stderr)
        return EXIT_USAGE
    sys.stdout.write(render_baseline(run, args.report))
    return EXIT_OK


def cmd_coverage(args: argparse.Namespace) -> int:
    try:
        report = coverage(load_requirements(args.requirements), load_paths(args.paths or [CASES]))
    except CaseError as e:
        print(f"msmq-harness coverage: {e}", file=sys.stderr)
        return 2
    print(render_coverage(report, as_json=args.json))
    return 0 if report.ok else 1


def add_parser(sub: Any) -> None:
    """Register ``baseline`` and ``coverage`` on ``sub``, the subcommands of ``msmq-harness`` (harness.cli)."""
    base = sub.add_parser(
        "baseline",
        help="a baseline (known failures with their signatures) from a run --json report, on standard output",
        description="Write the YAML baseline of a run --json report on standard output: every case that did not "
        "pass, with the signature of its failure (outcome; per difference the requirement, the expectation and "
        "the observed value) and a reason and a ticket to fill in. run --baseline FILE then fails only on "
        "regressions; run --known-failures FILE reads it too. Exit status: 0 written, 2 the report cannot be read.",
    )
    base.add_argument("report", metavar="REPORT.json", help="a report of msmq-harness run --json")
    base.set_defaults(func=cmd_baseline)

    cov = sub.add_parser("coverage", help="requirements with and without cases")
    cov.add_argument("paths", nargs="*", metavar="PATH", help="case files or folders (default: cases/)")
    cov.add_argument(
        "--requirements", default=str(CASES / "requirements.yaml"), help="the requirements file (default: bundled)"
    )
    cov.add_argument("--json", action="store_true", help="print JSON instead of text")
    cov.set_defaults(func=cmd_coverage)
