"""The ``synth``, ``pipeline`` and ``capture-to-case`` subcommands of ``msmq-harness``.

``synth`` writes a synthetic MSMQ capture ([MS-MQQB] 3.1 sessions on TCP 1801, [MS-MQQB] 2.1.1)
with a manifest of the injected anomalies; ``pipeline`` runs the Spark job over captures and
writes Parquet tables of packets, sessions and violations.  PySpark is imported only by
``pipeline``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness.argtypes import count, port_list, seconds
from harness.cases.execute import ConfigurationError
from harness.cases.schema import case_id
from harness.files import regular_file
from harness.outdir import refusal
from harness.pipeline.cluster import DEFAULT_EXECUTOR_TIMEOUT
from harness.pipeline.errors import ClusterError, PipelineError
from harness.pipeline.job import run_pipeline
from harness.pipeline.minimize import NotReproduced, Reproducer, minimize
from harness.pipeline.outputs import OutError, RemoteStagedOutput, out_target
from harness.pipeline.splits import SplitError, expand_inputs, is_local
from harness.pipeline.synth import ANOMALIES, SynthError, synthesize
from harness.pipeline.tocase import CaseBuildError, capture_to_case, flow_violations, sessions_with_problems, write_case
from harness.pipeline.tocase_targets import reproducing_target

__all__ = ["add_subcommands", "cmd_capture_to_case", "cmd_pipeline", "cmd_synth"]


def cmd_synth(args: argparse.Namespace) -> int:
    kinds = tuple(args.kinds.split(",")) if args.kinds else ANOMALIES
    try:
        manifest = synthesize(
            args.out,
            args.sessions,
            args.anomalies,
            seed=args.seed,
            messages=args.messages,
            manifest=args.manifest,
            kinds=kinds,
        )
    except SynthError as e:
        print(f"msmq-harness synth: {e}", file=sys.stderr)
        return 2
    by_kind: dict[str, int] = {}
    for item in manifest["anomalies"]:
        by_kind[item["kind"]] = by_kind.get(item["kind"], 0) + 1
    kinds_text = ", ".join(f"{k} {n}" for k, n in sorted(by_kind.items())) or "none"
    print(f"wrote {args.out}: {manifest['sessions']} sessions, {manifest['records']} records; anomalies: {kinds_text}")
    return 0


def _unreadable_input(inputs: list[str]) -> str:
    """ "" when every local input (a path or ``file:`` URI, also under ``--via-hadoop``) names
    capture files that can be opened, else why not; other schemes are listed by Spark itself."""
    for raw in inputs:
        if not is_local(raw):
            continue
        try:
            for path in expand_inputs([raw]):
                with open(path, "rb"):
                    pass
        except SplitError as e:
            return str(e)
        except OSError as e:
            return f"{e.filename or raw}: {e.strerror or e}"
    return ""


def _unusable_out(out: str, force: bool) -> str:
    """ "" when the pipeline's output may be put at the folder ``out`` (harness.outdir: absent,
    empty, a previous output of the pipeline and nothing else, or ``--force``) and its parent
    takes a new folder, else why not (the parent is made here if missing, as the job would).
    A URI: a scheme the executors can write (harness.pipeline.outputs), else why not."""
    try:
        target = out_target(out)
        if target.local is None:
            return RemoteStagedOutput(target, "pipeline", force=force).refusal()
    except (OutError, OSError) as e:
        return str(e)
    return refusal(target.local, "pipeline", force=force)


def spark_conf(text: str) -> tuple[str, str]:
    """``--conf KEY=VALUE`` (as spark-submit takes it)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        example = "a Spark setting, e.g. spark.executor.memory=2g"
        raise argparse.ArgumentTypeError(f"{text!r}: expected KEY=VALUE ({example})")
    return key.strip(), value


def cmd_pipeline(args: argparse.Namespace) -> int:
    # the paths first, before Spark starts (seconds, and pages of Java logging, for a typo)
    why = _unreadable_input(args.inputs) or _unusable_out(args.out, args.force)
    if why:
        print(f"msmq-harness pipeline: {why}", file=sys.stderr)
        return 2

    try:
        summary = run_pipeline(
            args.inputs,
            args.out,
            master=args.master,
            partitions=args.partitions,
            ports=args.ports,
            split_size=args.split_size,
            progress=not args.quiet,
            join_files=args.join_files,
            hadoop=args.via_hadoop,
            force=args.force,
            conf=dict(args.conf),
            ship_deps=not args.no_ship_deps,
            executor_timeout=args.executor_timeout,
        )
    except ClusterError as e:  # the job ran, and could not finish on the cluster
        print(f"msmq-harness pipeline: {e}", file=sys.stderr)
        return 3
    except PipelineError as e:
        print(f"msmq-harness pipeline: {e}", file=sys.stderr)
        return 2
    _print_summary(summary)
    return 1 if args.fail_on_violation and summary["violations"] else 0


def cmd_capture_to_case(args: argparse.Namespace) -> int:
    ports = args.ports
    try:  # a device or a FIFO is never read
        regular_file(args.capture)
    except OSError as e:
        print(f"msmq-harness capture-to-case: {args.capture}: {e.strerror or e}", file=sys.stderr)
        return 2
    if args.flow is None:  # the sessions a case can be made of
        try:
            found = sessions_with_problems(args.capture, ports)
        except OSError as e:
            print(f"msmq-harness capture-to-case: {e}", file=sys.stderr)
            return 2
        print(f"{len(found)} sessions of {args.capture} broke a rule; make a case of one with --flow ID --out FILE:")
        for flow, rules in found:
            print(f"  {flow}  {', '.join(rules)}")
        return 0
    if args.out is None:
        print("msmq-harness capture-to-case: --out FILE is required with --flow", file=sys.stderr)
        return 2
    why = _unusable_case_out(args.out, args.force)  # before any work: the capture may be large
    if why:
        print(f"msmq-harness capture-to-case: {why}", file=sys.stderr)
        return 2
    try:
        case = capture_to_case(args.capture, args.flow, ports=ports, behaviour=args.behaviour, case_id=args.id)
    except (CaseBuildError, OSError) as e:
        print(f"msmq-harness capture-to-case: {e}", file=sys.stderr)
        return 2
    if args.minimize:
        code = _minimize(args, case)
        if isinstance(code, int):
            return code
        case = code
    try:
        write_case(case, args.out)
    except OSError as e:
        print(f"msmq-harness capture-to-case: --out {args.out}: {e.strerror or e}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: {case['id']}, {len(case['when'])} steps")
    return 0


def _unusable_case_out(out: str, force: bool) -> str:
    """ "" when a case file may be written at ``out``, else why not: a folder (name the file),
    an existing file (replaced only with ``--force``: a case is often edited after it is made),
    or a folder that cannot be made or written (the parent is made here if missing)."""
    path = Path(out)
    if path.is_dir():
        return f"--out {out}: a folder; name the case file to write (e.g. {path / 'case.yaml'})"
    if (path.exists() or path.is_symlink()) and not force:
        return f"--out {out}: the file exists; name another file, or give --force to replace it"
    if path.exists() and not path.is_file():
        return f"--out {out}: not a regular file"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except OSError as e:
        return f"--out {out}: {e.strerror or e}"
    return ""


def _minimize(args: argparse.Namespace, case: dict[str, Any]) -> dict[str, Any] | int:
    """``--minimize``: the case shrunk against the target that reproduces what the session broke
    (harness.pipeline.tocase_targets) unless ``--target`` names one; the case as it is when the
    session broke no rule (there is no failure to keep); an exit status when nothing fails."""
    choice = reproducing_target(flow_violations(args.capture, args.flow, args.ports))
    if not choice.broke:
        print(f"msmq-harness capture-to-case: not minimized: {choice.reason}; nothing fails to shrink", file=sys.stderr)
        return case
    if args.target is not None:
        target = args.target
    elif args.behaviour:  # the case carries the behaviour: the plain reference runs it
        target = "reference"
    else:
        target = choice.target or "reference"
        if choice.target:
            print(f"minimizing against --target '{target}': {choice.reason}", file=sys.stderr)
    try:
        reproducer = Reproducer(target, args.step_timeout)
    except ConfigurationError as e:
        print(f"msmq-harness capture-to-case: {e}", file=sys.stderr)
        return 2
    try:
        shrunk = minimize(case, reproducer, max_runs=args.max_runs)
    except NotReproduced as e:
        if choice.target and choice.target != target:
            hint = f"use --target '{choice.target}': {choice.reason}"
        else:
            hint = f"{choice.reason}; use --target with the acceptor that was captured (e.g. mqqb://HOST:1801)"
        print(f"msmq-harness capture-to-case: {target}: {e}; nothing to minimize; {hint}", file=sys.stderr)
        return 2
    finally:
        reproducer.close()
    print(shrunk.summary())
    return shrunk.case


def _print_summary(summary: dict[str, Any]) -> None:
    print(
        f"{summary['inputs']} inputs, {summary['frames_read']} frames, {summary['packets']} packets, "
        f"{summary['sessions']} sessions, {summary['violations']} violations -> {summary['out']}"
    )
    for rule_id, n in sorted(summary["violations_by_rule"].items()):
        print(f"  {rule_id}: {n}")
    bad = [i for i in summary["reconciliation"] if i["problems"] or not i["balanced"]]
    for item in bad:
        print(f"  {item['input']}: {len(item['problems'])} capture problems")
        for problem in item["problems"][:5]:
            print(f"    {problem}")


def add_subcommands(sub: Any) -> None:
    """Register the subcommands on the ``msmq-harness`` sub-parser collection."""
    _add_synth(sub)
    pipe = sub.add_parser("pipeline", help="decode and check captures with Spark, write Parquet tables")
    _add_pipeline_io(pipe)
    _add_pipeline_cluster(pipe)
    _add_pipeline_reading(pipe)
    pipe.set_defaults(func=cmd_pipeline)
    _add_capture_to_case(sub)


def _add_synth(sub: Any) -> None:
    synth = sub.add_parser("synth", help="write a synthetic MSMQ capture with injected anomalies")
    synth.add_argument("--sessions", type=int, required=True, metavar="N", help="MSMQ sessions to write")
    synth.add_argument("--anomalies", type=float, default=0.1, metavar="RATE", help="fraction of sessions (0..1)")
    synth.add_argument("--out", required=True, metavar="X.pcap", help="the capture to write")
    synth.add_argument("--seed", type=int, default=0, help="random seed: the same seed writes the same capture")
    synth.add_argument("--messages", type=int, default=8, help="UserMessages per session (about)")
    synth.add_argument("--manifest", metavar="FILE", help="default: <out>.json")
    synth.add_argument(
        "--kinds",
        metavar="K1,K2",
        help="anomaly kinds to inject, in turn (default all: bad-signature, packet-size, sequence-gap, "
        "ack-beyond-sent, out-of-order, retransmission, overlap, missing-segment)",
    )
    synth.set_defaults(func=cmd_synth)


def _add_pipeline_io(pipe: argparse.ArgumentParser) -> None:
    """The pipeline's inputs and its output folder."""
    pipe.add_argument(
        "inputs", nargs="+", metavar="INPUT", help="pcap/pcapng files, folders or globs (paths, file:, hdfs://, s3a://...)"
    )
    pipe.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="where the tables, summary.json and report.txt go (a folder, or a file:, hdfs://, s3://, ... URI): "
        "written beside it and renamed into place when "
        "complete; an existing DIR is replaced only when it holds a previous pipeline output and nothing else",
    )
    pipe.add_argument(
        "--force", action="store_true", help="replace --out DIR even when it holds files the pipeline did not write"
    )


def _add_pipeline_cluster(pipe: argparse.ArgumentParser) -> None:
    """Where and how the Spark job runs."""
    pipe.add_argument(
        "--master",
        metavar="URL",
        help="default local[*] (or what spark-submit, --conf spark.master or spark-defaults.conf set)",
    )
    pipe.add_argument(
        "--conf",
        type=spark_conf,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting, as spark-submit's --conf (e.g. spark.driver.host=10.0.0.5); repeatable",
    )
    pipe.add_argument(
        "--executor-timeout",
        type=seconds(maximum=86400),
        default=DEFAULT_EXECUTOR_TIMEOUT,
        metavar="S",
        help=f"on a cluster: give up (exit 3) when a job has had no executor for S seconds "
        f"(default {DEFAULT_EXECUTOR_TIMEOUT:g})",
    )
    pipe.add_argument(
        "--no-ship-deps",
        action="store_true",
        help="on a cluster: do not send the driver's construct and pyarrow to the workers (they have them, or "
        "get an archive built for their platform: docs/pipeline.md)",
    )


def _add_pipeline_reading(pipe: argparse.ArgumentParser) -> None:
    """How the captures are cut and read, and what the command shows and returns."""
    pipe.add_argument(
        "--partitions",
        type=count(0, meaning="0: two per core"),
        default=0,
        metavar="N",
        help="tasks (default 0: 2 per core)",
    )
    pipe.add_argument(
        "--ports", type=port_list, default="1801", metavar="P1,P2", help="TCP ports carrying MSMQ (default 1801)"
    )
    pipe.add_argument(
        "--split-size",
        type=count(0, meaning="0: the inputs' size over the tasks, at least 1 MiB"),
        default=0,
        metavar="BYTES",
        help="byte range per task (default 0: the inputs' size over the tasks, at least 1 MiB)",
    )
    pipe.add_argument("--quiet", action="store_true", help="no progress display")
    pipe.add_argument(
        "--join-files", action="store_true", help="the inputs, in order, are one capture cut into files (rotated)"
    )
    pipe.add_argument(
        "--via-hadoop",
        action="store_true",
        help="read every input through Spark's Hadoop layer, local paths as file: URIs (as hdfs://, s3a://, ... "
        "inputs always are)",
    )
    pipe.add_argument("--fail-on-violation", action="store_true", help="exit 1 when any rule is broken")


def _add_capture_to_case(sub: Any) -> None:
    to_case = sub.add_parser("capture-to-case", help="write a wire case replaying the initiator's side of a flow")
    to_case.add_argument("capture", metavar="CAPTURE", help="a pcap or pcapng file")
    to_case.add_argument(
        "--flow", metavar="ID", help="as in the pipeline's flow column (without it: list the sessions with problems)"
    )
    to_case.add_argument(
        "--out", metavar="case.yaml", help="the case file to write (required with --flow; an existing one: --force)"
    )
    to_case.add_argument("--force", action="store_true", help="replace the file --out names when it exists")
    to_case.add_argument(
        "--ports", type=port_list, default="1801", metavar="P1,P2", help="TCP ports carrying MSMQ (default 1801)"
    )
    to_case.add_argument("--behaviour", metavar="NAME", help="the simulated peer's behaviour (given.peer.behaviour)")
    to_case.add_argument(
        "--id", type=case_id, metavar="CASE_ID", help="the case's id (default: capture.<flow>; letters, digits, . _ -)"
    )
    to_case.add_argument(
        "--minimize",
        action="store_true",
        help="shrink the case by delta debugging to the smallest that still fails the same way against --target",
    )
    to_case.add_argument(
        "--target",
        help="the target --minimize runs against (default: the simulated peer that breaks the rule the session "
        "broke, e.g. reference?peer=bad-signature; reference with --behaviour)",
    )
    to_case.add_argument("--max-runs", type=count(1), default=300, metavar="N", help="most runs of --minimize")
    to_case.add_argument(
        "--step-timeout", type=seconds(), default=10.0, metavar="S", help="per step, in seconds (default 10)"
    )
    to_case.set_defaults(func=cmd_capture_to_case)


def main(argv: list[str] | None = None) -> int:
    """Entry point for ``python -m harness.pipeline`` and ``spark-submit``: the pipeline command."""
    parser = argparse.ArgumentParser(prog="harness.pipeline")
    sub = parser.add_subparsers(dest="command")
    add_subcommands(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("synth", "pipeline", "capture-to-case"):
        argv = ["pipeline", *argv]
    args = parser.parse_args(argv)
    return int(args.func(args))
