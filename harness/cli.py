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
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import packets
from harness.capture.pcapfile import CaptureProblem, read_header
from harness.decoding import ORDERS, PCAP_MAGICS, DecodedPacket, StreamReport, decode_file, read_hex
from packets import PacketError, wire_length
from packets.render import render_tree, to_jsonable

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CASES = ROOT / "cases"


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
    from harness.decoding import INPUT_PREFIX, hex_text
    from harness.files import open_regular

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
    from collections import Counter

    from harness.capture.frames import ACK, SYN, TcpSegment, decode_tcp
    from harness.capture.pcapfile import Record, iter_records

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
    from harness.fuzz.demo import fuzz_demo  # the fuzzer finding a fault of the simulated peer (docs/fuzz.md)

    print(fuzz_demo(out_dir / "fuzz"))
    return 1 if problems or not frames else 0


# Exit codes of `msmq-harness run` (docs/cases.md, "Exit codes"), as pytest's
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NOTHING_RAN = 0, 1, 2, 5


def _writable(path: str) -> str:
    """ "" when a report can be written to ``path``, else why not (checked before any case runs)."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        existed = target.exists()
        with target.open("a", encoding="utf-8"):
            pass
        if not existed:
            target.unlink()
    except OSError as e:
        return f"{path}: {e.strerror or e}"
    return ""


def _path_hint(path: str) -> str:
    """What a missing case path probably meant: `` (use / between folders: X)`` for Windows
    separators, else `` (did you mean X?)`` where X corrects each missing part of the path to the
    closest name beside it and exists; "" when nothing is close."""
    import difflib

    if "\\" in path:
        fixed = path.replace("\\", "/")
        if Path(fixed).exists():
            return f" (use / between folders: {fixed})"
        closest = _path_hint(fixed)
        return f" (use / between folders{': ' + closest[2:-1] if closest else ''})"
    where = Path(path)
    fixed_path = Path(where.anchor) if where.is_absolute() else Path()
    for part in where.parts[1:] if where.is_absolute() else where.parts:
        if not (fixed_path / part).exists():
            try:
                names = [p.name for p in fixed_path.iterdir() if not p.name.startswith(".")]
            except OSError:
                return ""
            close = difflib.get_close_matches(part, names, n=1, cutoff=0.6)
            if not close:
                return ""
            part = close[0]
        fixed_path = fixed_path / part
    return f" (did you mean {fixed_path}?)" if fixed_path.exists() and str(fixed_path) != path else ""


def _special_files(paths: Sequence[str], known_failures: str | None) -> str:
    """ "" unless a case path or the --known-failures file names a device, a FIFO or a socket
    (read, it would never end): then what it names (harness.files)."""
    from harness.files import NotRegularFile, regular_file

    named = [(p, True) for p in paths] + ([(known_failures, False)] if known_failures else [])
    for path, folders in named:
        try:
            regular_file(path, folders=folders)
        except NotRegularFile as e:
            return f"{'--known-failures ' if not folders else ''}{path}: {e.strerror}"
        except OSError:
            pass  # reported where the file is read
    return ""


def _usage_error(message: str) -> int:
    from harness.results import printable  # a target's error text is data: shown, never acted on

    print(f"msmq-harness run: {printable(message)}", file=sys.stderr)
    return EXIT_USAGE


def cmd_run(args: argparse.Namespace) -> int:
    from harness.cases.workers import WorkerCorpus

    corpus: list[WorkerCorpus] = []  # the workers that load and run the cases (-n N)
    staged: list[Any] = []  # --record DIR as it is written (harness.outdir.StagedOutput)
    try:
        return _cmd_run(args, corpus, staged)
    finally:
        for workers in corpus:
            workers.close()
        for stage in staged:  # not put in place (an error before the run ended): removed
            stage.close()


RECORD_COMMAND = "run --record"  # the command a --record folder's marker names (harness.outdir)
_NOT_RUN_SHOWN = 20  # case ids named on standard error when a run stops early (every one is in the reports)


def _place_record(staged: list[Any], shown: str, result: Any) -> str:
    """``--record DIR`` at the end of a run (interrupted too): the transcripts written beside
    DIR put in place (harness.outdir), each result's ``transcript`` then naming its page under
    DIR as the user spelt it; "" or why the folder could not be put in place (the transcripts
    are then left where they were written, and the results name them there)."""
    from harness.outdir import OutputError

    if not staged:
        return ""
    stage = staged[0]
    try:
        stage.commit()
    except (OutputError, OSError) as e:
        return f"--record {shown}: {e.strerror if isinstance(e, OSError) and e.strerror else e}"
    for case in result.results:
        if case.transcript:
            rel = os.path.relpath(os.path.abspath(case.transcript), stage.path)
            if not rel.startswith(os.pardir):
                case.transcript = os.path.join(shown, rel)
    return ""


def _cmd_run(args: argparse.Namespace, corpus: list[Any], staged: list[Any] | None = None) -> int:
    from harness.cases.baseline import BaselineError, load_baseline
    from harness.cases.cache import CaseCache
    from harness.cases.loader import CaseError, load_paths
    from harness.cases.runner import ConfigurationError, run, select
    from harness.cases.workers import WorkerCorpus
    from harness.report import terminal
    from harness.report.formats import formats
    from harness.results import RunResult

    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        return _usage_error("no such file or folder: " + ", ".join(p + _path_hint(p) for p in missing))
    if args.known_failures and args.baseline:
        return _usage_error("--known-failures and --baseline exclude each other (a baseline lists known failures too)")
    unread = _special_files(args.paths, args.known_failures) or _special_files((), args.baseline)
    if unread:
        return _usage_error(unread.replace("--known-failures", "--baseline") if not args.known_failures else unread)
    from harness.report.identity import now, run_info

    started = now()
    option, judged_by = ("--baseline", args.baseline) if args.baseline else ("--known-failures", args.known_failures)
    try:
        if args.n > 1 and not args.dry_run:  # the workers load the files (through the cache), then run them
            corpus.append(WorkerCorpus(args.paths or [CASES], args.n, cache=CaseCache.default()))
            cases = corpus[0].cases
        else:
            cases = load_paths(args.paths or [CASES], cache=CaseCache.default())  # files seen before: read back
        cases = select(cases, keyword=args.k, sections=args.spec or ())
        if args.profile:  # harness.cases.profiles: the cases citing one focus section of the seeds
            from harness.cases.profiles import profile_cases

            cases = profile_cases(cases, args.profile)
        from harness.report.compare import read_report

        if args.known_failures:
            known: Any = load_baseline(args.known_failures, strict_xpass=True, read_report=read_report)
        else:
            known = set()
        baseline = load_baseline(args.baseline, read_report=read_report) if args.baseline else None
    except CaseError as e:
        return _usage_error(str(e))
    except BaselineError as e:
        return _usage_error(f"{option} {e}")
    except ValueError as e:  # a bad -k expression
        return _usage_error(str(e))
    except OSError as e:
        return _usage_error(f"{option} {judged_by}: {e.strerror or e}")
    if args.dry_run and args.target is not None:  # what would run on the target: it says hello, no case runs
        return _dry_run_on(args, cases)
    if args.dry_run:
        for case in cases:
            print(f"{case.full_id}  [{case.level}]  {', '.join(case.sections)}")
            for rid in case.requirements:
                print(f"    {rid}")
        print(f"{len(cases)} cases selected")
        return EXIT_OK if cases else EXIT_NOTHING_RAN
    writers = [(getattr(args, f.name, None), f) for f in formats().values()]
    if sum(path == "-" for path, _ in writers) > 1:
        return _usage_error("only one report can go to standard output (-)")
    unwritable = [why for path, _ in writers if path and path != "-" for why in [_writable(path)] if why]
    if unwritable:
        return _usage_error("cannot write the report " + "; ".join(unwritable))
    staged = [] if staged is None else staged
    if args.record:  # written beside DIR, put in place when the run ends (harness.outdir)
        from harness.outdir import StagedOutput, refusal

        why = refusal(args.record, RECORD_COMMAND, force=args.force, option="--record")
        if why:
            return _usage_error(why)
        try:
            staged.append(StagedOutput(args.record, RECORD_COMMAND, force=args.force).open())
        except OSError as e:
            return _usage_error(f"--record {args.record}: {e.strerror or e}")
    # a report on standard output keeps it to itself: the summary goes to standard error
    summary_out = sys.stderr if any(path == "-" for path, _ in writers) else sys.stdout
    done: list[Any] = []  # the results so far: what an interrupted run reports
    interrupted, began = "", time.perf_counter()
    try:
        info = run_info(
            argv=["msmq-harness", *(sys.argv[1:] if args.argv is None else args.argv)],
            paths=args.paths,
            keyword=args.k,
            sections=args.spec or (),
            profile=args.profile,
            strict=args.strict,
            known_failures=args.known_failures,
            baseline=args.baseline,
            record=args.record,
            started=started,
        )
        with terminal.Progress(len(cases), heartbeat=args.heartbeat) as progress, _sigterm_interrupts():

            def advance(case_result: Any) -> None:
                done.append(case_result)
                progress.advance(case_result)

            result = run(
                cases,
                args.target or "reference",
                workers=args.n,
                step_timeout=args.step_timeout,
                known_failures=known,
                strict=args.strict,
                progress=advance,
                record_dir=str(staged[0].path) if staged else None,
                corpus=corpus[0] if corpus else None,
                baseline=baseline,
                maxfail=args.maxfail,
                budget=args.budget,
                run_info=info,
            )
    except ConfigurationError as e:
        return _usage_error(str(e))
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM: the cases that ran are reported all the same
        interrupted = f"interrupted by {str(e) or 'SIGINT'} after {len(done)} of {len(cases)} cases"
        result = RunResult(args.target or "reference", list(done), time.perf_counter() - began, args.strict, info=info)
        result.not_run = [c.full_id for c in cases[len(done) :]]
        writers = [(path, f.writing({"interrupted": interrupted})) for path, f in writers]
    placed = _place_record(staged, args.record, result)
    written, failed = [], [placed] if placed else []
    for path, report_format in writers:  # the reports first: a terminal that cannot print loses none of them
        if path == "-":
            sys.stdout.write(report_format.render(result))
            sys.stdout.flush()
        elif path:
            try:
                report_format.write(result, path)
                written.append(str(path))
            except (OSError, ValueError) as e:
                failed.append(f"{path}: {e}")
    if staged and staged[0].committed:  # reports written into the --record folder are the run's output too
        staged[0].adopt(written)
    try:
        terminal.print_summary(result, file=summary_out)
        if written:
            print("reports: " + ", ".join(written), file=summary_out)
    except (OSError, ValueError) as e:  # e.g. a terminal whose encoding cannot show the text
        print(
            f"msmq-harness run: the summary could not be printed ({e}); reports: {', '.join(written)}", file=sys.stderr
        )
    if failed:
        print("msmq-harness run: cannot write the report " + "; ".join(failed), file=sys.stderr)
        return EXIT_USAGE
    if interrupted:
        print(f"msmq-harness run: {interrupted}", file=sys.stderr)
        return 128 + (signal.SIGTERM if "SIGTERM" in interrupted else signal.SIGINT)
    if result.stopped:
        shown = ", ".join(result.not_run[:_NOT_RUN_SHOWN]) + (", ..." if len(result.not_run) > _NOT_RUN_SHOWN else "")
        print(
            f"msmq-harness run: stopped early ({result.stopped}): {len(result.not_run)} of {len(cases)} cases "
            f"did not run: {shown}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    if not result.ran:
        why = "no case selected" if not cases else f"none of the {len(cases)} selected cases ran on this target"
        print(f"msmq-harness run: nothing ran: {why}", file=sys.stderr)
        return EXIT_NOTHING_RAN
    return EXIT_OK if result.ok else EXIT_FAILED


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised as Ctrl-C is (:func:`_sigterm_interrupts`)."""


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """Within: SIGTERM (``timeout``, ``kill``) interrupts as Ctrl-C does, so that a run so
    ended writes its reports; a process forked meanwhile (a worker) is terminated as before."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pid = os.getpid()

    def handler(signum: int, frame: Any) -> None:
        if os.getpid() != pid:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise _Terminated("SIGTERM")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _dry_run_on(args: argparse.Namespace, cases: list[Any]) -> int:
    """``run --dry-run --target SPEC``: greet the target, then print per spec section how many of
    the selected cases would run, be unsupported or not applicable, and what the target lacks
    (harness.cases.profiles.render_plan).  Exit 0 when some case would run, 5 when none would."""
    import contextlib

    from harness.cases.profiles import plan, render_plan
    from harness.cases.runner import ConfigurationError, open_target

    try:
        target, info = open_target(args.target, args.step_timeout)
    except ConfigurationError as e:
        return _usage_error(str(e))
    with contextlib.suppress(Exception):
        target.close()
    plans = plan(cases, info)
    sys.stdout.write(render_plan(plans, info))
    return EXIT_OK if any(p.outcome == "run" for p in plans) else EXIT_NOTHING_RAN


def cmd_baseline(args: argparse.Namespace) -> int:
    """``msmq-harness baseline REPORT.json > known.yaml`` (harness.cases.baseline)."""
    from harness.cases.baseline import render_baseline
    from harness.report.compare import read_report

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
    from harness.cases.coverage import coverage, render_coverage
    from harness.cases.loader import CaseError, load_paths, load_requirements

    try:
        report = coverage(load_requirements(args.requirements), load_paths(args.paths or [CASES]))
    except CaseError as e:
        print(f"msmq-harness coverage: {e}", file=sys.stderr)
        return 2
    print(render_coverage(report, as_json=args.json))
    return 0 if report.ok else 1


def build_parser() -> argparse.ArgumentParser:
    from harness.argtypes import count, port_list, seconds

    parser = argparse.ArgumentParser(prog="msmq-harness", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    run_p = sub.add_parser(
        "run",
        help="run conformance cases against a target",
        description="Run conformance cases against a target. Exit status: 0 all passed (non_strict allowed "
        "unless --strict), 1 failures, 2 usage or configuration error before any case ran, 5 nothing ran.",
    )
    run_p.add_argument("paths", nargs="*", metavar="PATH", help="case files or folders (default: cases/)")
    from harness.cases.targets.registry import target_help

    run_p.add_argument("--target", help=f"the implementation under test (default reference): {target_help()}")
    run_p.add_argument("-k", metavar="EXPR", help="select cases by id, title and tags (pytest -k syntax)")
    run_p.add_argument("--spec", action="append", metavar="SECTION", help="select by spec section prefix")
    run_p.add_argument("-n", type=count(1), default=1, metavar="N", help="worker processes")
    run_p.add_argument(
        "--strict", action="store_true", help="non_strict outcomes (SHOULD, MAY, interpretations) fail the run"
    )
    from harness.cases.profiles import PROFILES

    run_p.add_argument(
        "--profile",
        choices=list(PROFILES),
        metavar="NAME",
        help="run the cases of one focus section of the seeds (docs/profiles.md): " + ", ".join(PROFILES),
    )
    run_p.add_argument(
        "--dry-run",
        action="store_true",
        help="list the selected cases and stop; with --target, say hello to it and show per spec section "
        "how many cases would run, be unsupported or not applicable, and the events or capabilities it lacks",
    )
    run_p.add_argument(
        "--known-failures",
        metavar="FILE",
        help="the cases the target is known to fail: case ids one per line, or the YAML of msmq-harness baseline "
        "(an entry with a failure recorded takes only that failure); a listed case that passes fails the run",
    )
    run_p.add_argument(
        "--baseline",
        metavar="FILE",
        help="fail only on regressions against FILE (the YAML of msmq-harness baseline, or a run --json report): "
        "a case failing without an entry or otherwise than its entry records; improvements and stale entries "
        "are listed apart",
    )
    run_p.add_argument(
        "--maxfail", type=count(1), default=0, metavar="N", help="stop after N cases failed (the rest are named)"
    )
    run_p.add_argument(
        "--budget",
        type=seconds(),
        default=0.0,
        metavar="S",
        help="stop once the run has taken S seconds (checked between cases; the rest are named); exit 1",
    )
    run_p.add_argument(
        "--heartbeat",
        type=seconds(allow_zero=True),
        default=30.0,
        metavar="S",
        help="when standard error is not a terminal, a line of cases done / total / failed every S seconds "
        "(default 30; 0: none)",
    )
    run_p.add_argument(
        "--step-timeout",
        type=seconds(),
        default=10.0,
        metavar="S",
        help="most seconds one step may take (default 10; above 0, at most a day)",
    )
    from harness.report.formats import formats

    for report_format in formats().values():  # --junit, --json, --html: the report formats' table
        run_p.add_argument(f"--{report_format.name}", metavar="FILE", help=report_format.help)
    run_p.add_argument(
        "--record",
        metavar="DIR",
        help="write each wire case's traffic to DIR: <case id>.pcap and a transcript page <case id>.html, "
        "which the HTML report links; written beside DIR and put in place when the run ends, replacing a "
        "previous --record folder (one that holds nothing else)",
    )
    run_p.add_argument(
        "--force", action="store_true", help="replace --record DIR even when it holds files run did not write"
    )
    run_p.set_defaults(func=cmd_run, argv=None)

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
    demo.add_argument("--out", default="reports", metavar="DIR", help="where to write the reports (default reports/)")
    demo.set_defaults(func=cmd_demo)

    from harness.pipeline.cli import add_subcommands

    add_subcommands(sub)

    from harness.peers.cli import add_parser as add_peer_parser

    add_peer_parser(sub)

    from harness.report.compare import add_parser as add_compare_parser

    add_compare_parser(sub)

    from harness.dissector_cli import add_parser as add_dissector_parser

    add_dissector_parser(sub)

    from harness.fuzz.cli import add_parser as add_fuzz_parser

    add_fuzz_parser(sub)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

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
