"""``msmq-harness run``: conformance cases against a target, reported by spec section (docs/cases.md).

The subcommand registers itself (:func:`add_parser`), as ``compare``, ``peer`` and ``fuzz`` do;
its steps: refuse what cannot run (usage errors, exit 2, before any case ran), load and select
the cases, run them, write the reports of every format asked for (harness.report.formats), then
the exit status (docs/cases.md, "Exit codes").
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from harness.argtypes import count, seconds
from harness.cases.baseline import BaselineError, load_baseline
from harness.cases.cache import CaseCache
from harness.cases.execute import ConfigurationError, open_target
from harness.cases.lines import CaseError
from harness.cases.loader import load_paths
from harness.cases.profiles import PROFILES, plan, profile_cases, render_plan
from harness.cases.runner import run, select
from harness.cases.targets.registry import target_help
from harness.cases.workers import WorkerCorpus
from harness.errors import HarnessError
from harness.files import NotRegularFile, regular_file
from harness.outdir import OutputError, StagedOutput, refusal
from harness.report import terminal
from harness.report.compare import read_report
from harness.report.formats import ReportFormat, formats
from harness.report.identity import now, run_info
from harness.results import RunResult, printable, ran_count, run_ok

__all__ = [
    "CASES",
    "EXIT_FAILED",
    "EXIT_NOTHING_RAN",
    "EXIT_OK",
    "EXIT_USAGE",
    "RECORD_COMMAND",
    "add_parser",
    "cmd_run",
]

CASES = Path(__file__).resolve().parent.parent / "cases"

# Exit codes of `msmq-harness run` (docs/cases.md, "Exit codes"), as pytest's
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NOTHING_RAN = 0, 1, 2, 5

Writers = list[tuple[str | None, ReportFormat]]  # the path each format is asked for (None: not asked)


class _Refused(HarnessError):
    """A usage error of ``run``, found before any case ran: exit 2 with its message."""


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
    # a target's error text is data: shown, never acted on
    print(f"msmq-harness run: {printable(message)}", file=sys.stderr)
    return EXIT_USAGE


RECORD_COMMAND = "run --record"  # the command a --record folder's marker names (harness.outdir)
_NOT_RUN_SHOWN = 20  # case ids named on standard error when a run stops early (every one is in the reports)


def _place_record(staged: list[Any], shown: str, result: Any) -> str:
    """``--record DIR`` at the end of a run (interrupted too): the transcripts written beside
    DIR put in place (harness.outdir), each result's ``transcript`` then naming its page under
    DIR as the user spelt it; "" or why the folder could not be put in place (the transcripts
    are then left where they were written, and the results name them there)."""
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


def cmd_run(args: argparse.Namespace) -> int:
    corpus: list[WorkerCorpus] = []  # the workers that load and run the cases (-n N)
    staged: list[Any] = []  # --record DIR as it is written (harness.outdir.StagedOutput)
    try:
        return _cmd_run(args, corpus, staged)
    except _Refused as e:
        return _usage_error(str(e))
    finally:
        for workers in corpus:
            workers.close()
        for stage in staged:  # not put in place (an error before the run ended): removed
            stage.close()


def _cmd_run(args: argparse.Namespace, corpus: list[Any], staged: list[Any]) -> int:
    _check_paths(args)

    started = now()
    cases, known, baseline = _load(args, corpus)
    if args.dry_run and args.target is not None:  # what would run on the target: it says hello, no case runs
        return _dry_run_on(args, cases)
    if args.dry_run:
        return _list_cases(cases)
    writers = _writers(args)
    _stage_record(args, staged)
    # a report on standard output keeps it to itself: the summary goes to standard error
    summary_out = sys.stderr if any(path == "-" for path, _ in writers) else sys.stdout
    result, interrupted = _execute(args, cases, known, baseline, corpus, staged, started)
    if interrupted:
        writers = [(path, f.writing({"interrupted": interrupted})) for path, f in writers]
    placed = _place_record(staged, args.record, result)
    failed = _write_reports(writers, result, staged, summary_out, [placed] if placed else [])
    return _exit_status(result, cases, failed, interrupted)


def _check_paths(args: argparse.Namespace) -> None:
    """The case paths exist and are files or folders, --known-failures and --baseline are files
    and not both; else :class:`_Refused`."""
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        raise _Refused("no such file or folder: " + ", ".join(p + _path_hint(p) for p in missing))
    if args.known_failures and args.baseline:
        raise _Refused("--known-failures and --baseline exclude each other (a baseline lists known failures too)")
    unread = _special_files(args.paths, args.known_failures) or _special_files((), args.baseline)
    if unread:
        raise _Refused(unread.replace("--known-failures", "--baseline") if not args.known_failures else unread)


def _load(args: argparse.Namespace, corpus: list[Any]) -> tuple[list[Any], Any, Any]:
    """The selected cases, the known failures and the baseline; :class:`_Refused` for a case file,
    a -k expression or a known-failures file that cannot be read."""
    option, judged_by = ("--baseline", args.baseline) if args.baseline else ("--known-failures", args.known_failures)
    try:
        if args.n > 1 and not args.dry_run:  # the workers load the files (through the cache), then run them
            corpus.append(WorkerCorpus(args.paths or [CASES], args.n, cache=CaseCache.default()))
            cases = corpus[0].cases
        else:
            cases = load_paths(args.paths or [CASES], cache=CaseCache.default())  # files seen before: read back
        cases = select(cases, keyword=args.k, sections=args.spec or ())
        if args.profile:  # harness.cases.profiles: the cases citing one focus section of the seeds

            cases = profile_cases(cases, args.profile)
        if args.known_failures:
            known: Any = load_baseline(args.known_failures, strict_xpass=True, read_report=read_report)
        else:
            known = set()
        baseline = load_baseline(args.baseline, read_report=read_report) if args.baseline else None
    except CaseError as e:
        raise _Refused(str(e)) from None
    except BaselineError as e:
        raise _Refused(f"{option} {e}") from None
    except ValueError as e:  # a bad -k expression
        raise _Refused(str(e)) from None
    except OSError as e:
        raise _Refused(f"{option} {judged_by}: {e.strerror or e}") from None
    return cases, known, baseline


def _list_cases(cases: list[Any]) -> int:
    """``run --dry-run``: the selected cases, their level, sections and requirements."""
    for case in cases:
        print(f"{case.full_id}  [{case.level}]  {', '.join(case.sections)}")
        for rid in case.requirements:
            print(f"    {rid}")
    print(f"{len(cases)} cases selected")
    return EXIT_OK if cases else EXIT_NOTHING_RAN


def _writers(args: argparse.Namespace) -> Writers:
    """Each report format with the path asked for it (``--NAME FILE``); :class:`_Refused` when two
    go to standard output or a path cannot be written (checked before any case runs)."""
    writers = [(getattr(args, f.name, None), f) for f in formats().values()]
    if sum(path == "-" for path, _ in writers) > 1:
        raise _Refused("only one report can go to standard output (-)")
    named = [path for path, _ in writers if path and path != "-"]
    inputs = {Path(p).resolve() for p in [*args.paths, args.baseline, args.known_failures] if p}
    seen: set[Path] = set()
    for path in named:
        where = Path(path).resolve()
        if where in seen or where in inputs:
            raise _Refused(f"cannot write the report {path}: another report or an input of the run is that file")
        seen.add(where)
    unwritable = [why for path in named for why in [_writable(path)] if why]
    if unwritable:
        raise _Refused("cannot write the report " + "; ".join(unwritable))
    return writers


def _stage_record(args: argparse.Namespace, staged: list[Any]) -> None:
    """``--record DIR``: written beside DIR, put in place when the run ends (harness.outdir)."""
    if not args.record:
        return

    why = refusal(args.record, RECORD_COMMAND, force=args.force, option="--record")
    if why:
        raise _Refused(why)
    try:
        staged.append(StagedOutput(args.record, RECORD_COMMAND, force=args.force).open())
    except OSError as e:
        raise _Refused(f"--record {args.record}: {e.strerror or e}") from None


def _execute(
    args: argparse.Namespace,
    cases: list[Any],
    known: Any,
    baseline: Any,
    corpus: list[Any],
    staged: list[Any],
    started: Any,
) -> tuple[Any, str]:
    """The run's result, and "" or how it was interrupted (Ctrl-C or SIGTERM: the cases that ran
    are reported all the same); :class:`_Refused` for a target that cannot be configured."""
    done: list[Any] = []  # the results so far: what an interrupted run reports
    began = time.perf_counter()
    try:
        info = _run_info(args, started)
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
        raise _Refused(str(e)) from None
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM: the cases that ran are reported all the same
        interrupted = f"interrupted by {str(e) or 'SIGINT'} after {len(done)} of {len(cases)} cases"
        result = RunResult(args.target or "reference", list(done), time.perf_counter() - began, args.strict, info=info)
        result.not_run = [c.full_id for c in cases[len(done) :]]
        return result, interrupted
    return result, ""


def _run_info(args: argparse.Namespace, started: Any) -> dict[str, Any]:
    """What the reports say of the run: its command line, selection and options (harness.report.identity)."""
    return run_info(
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


def _write_reports(
    writers: Writers, result: Any, staged: list[Any], summary_out: TextIO, failed: list[str]
) -> list[str]:
    """Write the reports, then the summary to ``summary_out``; ``failed`` with the reports that
    could not be written."""
    written = []
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
    return failed


def _exit_status(result: Any, cases: list[Any], failed: list[str], interrupted: str) -> int:
    """The exit status of the run (docs/cases.md, "Exit codes"), with why on standard error."""
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
    counts = result.counts()
    if not ran_count(counts):
        why = "no case selected" if not cases else f"none of the {len(cases)} selected cases ran on this target"
        print(f"msmq-harness run: nothing ran: {why}", file=sys.stderr)
        return EXIT_NOTHING_RAN
    return EXIT_OK if run_ok(counts, result.strict) else EXIT_FAILED


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
    try:
        target, info = open_target(args.target, args.step_timeout)
    except ConfigurationError as e:
        return _usage_error(str(e))
    with contextlib.suppress(Exception):
        target.close()
    plans = plan(cases, info)
    sys.stdout.write(render_plan(plans, info))
    return EXIT_OK if any(p.outcome == "run" for p in plans) else EXIT_NOTHING_RAN


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``run`` on the subcommands ``sub`` of ``msmq-harness``."""
    run_p: argparse.ArgumentParser = sub.add_parser(
        "run",
        help="run conformance cases against a target",
        description="Run conformance cases against a target. Exit status: 0 all passed (non_strict allowed "
        "unless --strict), 1 failures, 2 usage or configuration error before any case ran, 5 nothing ran.",
    )
    run_p.add_argument("paths", nargs="*", metavar="PATH", help="case files or folders (default: cases/)")
    run_p.add_argument("--target", help=f"the implementation under test (default reference): {target_help()}")
    _selection_options(run_p)
    _judging_options(run_p)
    _output_options(run_p)
    run_p.set_defaults(func=cmd_run, argv=None)
    return run_p


def _selection_options(run_p: argparse.ArgumentParser) -> None:
    """Which cases run, in how many processes."""
    run_p.add_argument("-k", metavar="EXPR", help="select cases by id, title and tags (pytest -k syntax)")
    run_p.add_argument("--spec", action="append", metavar="SECTION", help="select by spec section prefix")
    run_p.add_argument("-n", type=count(1), default=1, metavar="N", help="worker processes")
    run_p.add_argument(
        "--strict", action="store_true", help="non_strict outcomes (SHOULD, MAY, interpretations) fail the run"
    )
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


def _judging_options(run_p: argparse.ArgumentParser) -> None:
    """What fails the run, and when it stops."""
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


def _output_options(run_p: argparse.ArgumentParser) -> None:
    """The reports (one option a format of harness.report.formats) and ``--record``."""
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
