"""``msmq-harness fuzz``: fuzz a live [MS-MQQB] acceptor, or confirm a fix with ``--replay``.

``msmq-harness fuzz --target mqqb://HOST:PORT[?ping=PORT][&scale=S][&queue=ID][&tx-queue=ID]``
plays the initiator of [MS-MQQB] 2.1.1 sessions against the acceptor (harness.fuzz.engine) and
writes its findings, each a minimal wire case and a pcap, with ``report.json`` and
``report.html`` into ``--out``: a folder written beside its place and put there when the run ends
(harness.outdir; an existing one is replaced only when it holds a previous run's output and
nothing else, or with ``--force``; an interrupted run, Ctrl-C, still puts its reports there).
Safe by default: only a loopback address, or one named with ``--allow``; bounded by
``--max-packets`` and ``--duration``; paced by ``--rate``; stopped by the first confirmed crash
unless ``--continue``.  ``--replay CASE.yaml`` runs finding cases
against the target instead: exit 0 when they pass (the fault is gone); with ``--target cmd:...``,
the sender's finding cases (initiator wire cases whose simulated acceptor replies with the fuzzed
packet).

Exit status: 0 nothing found (or the replayed cases pass), 1 findings (or a replayed case still
fails), 2 a usage or set-up error (a target that is not allowed, neither ``mqqb://`` nor ``cmd:``,
or that does not serve at all; an ``--out`` that holds files no previous run wrote), 130 interrupted
(its reports written).

``--target "cmd:ADAPTER"`` fuzzes the sender behind an adapter (docs/adapters.md, capability
``wire:initiator``) instead, the fuzzer acting as the acceptor it connects to (harness.fuzz.sender).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

from harness.argtypes import count, seconds
from harness.cases.execute import open_target, run_case
from harness.cases.lines import CaseError
from harness.cases.loader import load_paths
from harness.cases.target import WIRE_INITIATOR
from harness.cases.targets.live import parse_live_queue, parse_live_scale, parse_mqqb_address, parse_ping_port
from harness.cases.targets.registry import make_target
from harness.fuzz.engine import Fuzzer
from harness.fuzz.findings import text_report, write_html, write_json
from harness.fuzz.generate import KINDS
from harness.fuzz.oracles import Timers
from harness.fuzz.runs import FuzzOptions, TargetDown
from harness.fuzz.sender import SenderFuzzer
from harness.fuzz.states import SENDER_STATES, STATES
from harness.outdir import OutputError, StagedOutput, refusal
from harness.peers.cli import is_loopback
from harness.results import Outcome

__all__ = ["COMMAND", "add_parser", "cmd_fuzz"]

COMMAND = "fuzz"  # the command an --out folder's marker names (harness.outdir)
INTERRUPTED = 130


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``fuzz`` on the ``msmq-harness`` subcommand parser."""
    p: argparse.ArgumentParser = sub.add_parser(
        "fuzz",
        help="fuzz a live MS-MQQB acceptor (stateful, structure-aware) and write minimal cases of what it finds",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    p.add_argument(
        "--target",
        required=True,
        metavar="mqqb://HOST:PORT",
        help="the acceptor: mqqb://host:port[?ping=PORT][&scale=S][&queue=ID][&tx-queue=ID]; or cmd:ADAPTER, a "
        "sender driven through its control operations, the fuzzer as its acceptor (docs/fuzz.md)",
    )
    p.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="HOST",
        help="a host that is not loopback the fuzzer may send to (repeat for several); nothing else is ever sent to",
    )
    p.add_argument("--seed", type=int, metavar="N", help="the seed of the run (default: a random one, printed)")
    p.add_argument(
        "--max-packets", type=count(1), default=5000, metavar="N", help="stop after N packets (default 5000)"
    )
    p.add_argument("--duration", type=seconds(), default=60.0, metavar="S", help="stop after S seconds (default 60)")
    p.add_argument(
        "--rate", type=count(1), default=500, metavar="N", help="send at most N packets a second (default 500)"
    )
    p.add_argument(
        "--continue", dest="keep_going", action="store_true", help="go on after a confirmed crash (default: stop)"
    )
    p.add_argument(
        "--restart-wait",
        type=seconds(),
        default=60.0,
        metavar="S",
        help="how long a crashed target may take to serve again, to confirm and minimise the crash (default 60)",
    )
    p.add_argument(
        "--out", default="fuzz-findings", metavar="DIR", help="cases, pcaps and reports (default fuzz-findings/)"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an --out folder even when it holds files no previous fuzz run wrote (they are deleted)",
    )
    p.add_argument("--state", action="append", default=[], metavar="NAME", help="fuzz only in this session state")
    p.add_argument("--kind", action="append", default=[], metavar="KIND", help="inject only this packet kind")
    p.add_argument(
        "--replay",
        action="append",
        default=[],
        metavar="CASE.yaml",
        help="run finding cases against the target instead of fuzzing: exit 0 when they pass (the fault is fixed)",
    )
    p.set_defaults(func=cmd_fuzz)
    return p


def _fail(text: str) -> int:
    print(f"msmq-harness fuzz: {text}", file=sys.stderr)
    return 2


def _allowed(host: str, allow: list[str]) -> bool:
    return is_loopback(host) or host in {a.strip("[]") for a in allow}


def cmd_fuzz(args: argparse.Namespace) -> int:
    target = args.target
    for kind in args.kind:
        if kind not in KINDS:
            return _fail(f"--kind {kind}: expected one of {', '.join(KINDS)}")
    why = "" if args.replay else _refusal(args)
    if why:
        return _fail(why)
    if target.startswith("cmd:"):
        return _fuzz_sender(args)
    try:
        host, port = parse_mqqb_address(target)
        ping_port = parse_ping_port(target)
        scale = parse_live_scale(target)
        queue = parse_live_queue(target, "queue") or 1
        tx_queue = parse_live_queue(target, "tx-queue") or queue
    except ValueError as e:
        return _fail(str(e))
    if not _allowed(host, args.allow):
        return _fail(f"{host} is not a loopback address; name it with --allow {host} to fuzz it")
    states = {s.name for s in STATES}
    for name in args.state:
        if name not in states:
            return _fail(f"--state {name}: expected one of {', '.join(states)}")
    if args.replay:
        return _replay(args.replay, target)
    options = _options(args, (host, port), scale)
    options.ping = (host, ping_port) if ping_port is not None else None
    options.queue_id, options.tx_queue_id = queue, tx_queue
    print(
        f"fuzzing {target} with --seed {options.seed} (at most {args.max_packets} packets, {args.duration:g} s)",
        flush=True,
    )
    try:
        return _fuzz_into(args, Fuzzer(options, lambda line: print(line, flush=True)))
    except TargetDown as e:
        return _fail(f"{target} does not serve: {e}")


def _options(args: argparse.Namespace, address: tuple[str, int], scale: float) -> FuzzOptions:
    return FuzzOptions(
        address=address,
        target=args.target,
        seed=args.seed if args.seed is not None else random.randrange(1 << 32),
        max_packets=args.max_packets,
        duration=args.duration,
        rate=float(args.rate),
        keep_going=args.keep_going,
        restart_wait=args.restart_wait,
        timers=Timers(scale),
        out=Path(args.out),
        states=tuple(args.state),
        kinds=tuple(args.kind),
    )


def _fuzz_sender(args: argparse.Namespace) -> int:
    """``--target cmd:...``: the sender behind the adapter connects to the fuzzer (harness.fuzz.sender)."""
    if args.replay:  # the sender's finding cases: initiator wire cases (harness.fuzz.sendercase)
        return _replay(args.replay, args.target)
    for name in args.state:
        if name not in {s.name for s in SENDER_STATES}:
            return _fail(f"--state {name}: a sender is fuzzed in {', '.join(s.name for s in SENDER_STATES)}")
    try:
        target = make_target(args.target, timeout=10.0)
        info = target.hello()
    except Exception as e:
        return _fail(f"{args.target}: {e}")
    try:
        if WIRE_INITIATOR not in info.capabilities:
            return _fail(f"{args.target} has no sender to fuzz (capability {WIRE_INITIATOR})")
        options = _options(args, ("127.0.0.1", 0), 0.05)
        fuzzer = SenderFuzzer(options, target, lambda line: print(line, flush=True))
        print(
            f"fuzzing the sender of {args.target} with --seed {options.seed}, as its acceptor on "
            f"{fuzzer.address[0]}:{fuzzer.address[1]}",
            flush=True,
        )
        try:
            return _fuzz_into(args, fuzzer)
        except TargetDown as e:
            return _fail(f"{args.target} does not serve: {e}")
        finally:
            fuzzer.close()
    finally:
        target.close()


def _refusal(args: argparse.Namespace) -> str:
    """ "" when the run's output may be put at ``--out`` (harness.outdir.refusal), else why not."""
    return refusal(args.out, COMMAND, force=args.force)


def _fuzz_into(args: argparse.Namespace, fuzzer: Fuzzer) -> int:
    """Run ``fuzzer``, its cases, pcaps and reports written into a temporary sibling of ``--out``
    put in place when the run ends (harness.outdir.StagedOutput); interrupted (Ctrl-C), the
    rounds done so far are reported."""
    shown = Path(args.out)
    with StagedOutput(shown, COMMAND, force=args.force) as stage:
        fuzzer.o.out, fuzzer.o.shown = stage.path, shown
        interrupted = False
        try:
            report = fuzzer.run()
        except KeyboardInterrupt:
            report, interrupted = fuzzer.report, True
            report.stopped = "interrupted (Ctrl-C)"
        write_json(report, stage.path / "report.json")
        write_html(report, stage.path / "report.html")
        try:
            stage.commit()
        except OutputError as e:
            return _fail(str(e))
    print("\n".join(text_report(report)))
    print(f"reports: {shown / 'report.json'}, {shown / 'report.html'}")
    return INTERRUPTED if interrupted else 1 if report.findings else 0


def _replay(paths: list[str], target: str) -> int:
    """Run the finding cases against the target: 0 when every one passes."""
    try:
        cases = load_paths(paths)
    except (CaseError, OSError) as e:
        return _fail(str(e))
    try:
        opened, info = open_target(target, 10.0)
    except Exception as e:
        return _fail(f"{target}: {e}")
    failed = 0
    try:
        for case in cases:
            result = run_case(case, opened, step_timeout=10.0, info=info)
            passed = result.outcome in (Outcome.passed, Outcome.non_strict)
            failed += not passed
            detail = "" if passed else f": {result.detail}"
            print(f"{'fixed' if passed else 'STILL FAILS'} {case.id} ({result.outcome.value}){detail}", flush=True)
    finally:
        opened.close()
    return 1 if failed else 0
