"""The terminal summary and progress bar: plain text into a file, rich on a (pseudo) terminal;
outcomes worst first, each difference with its requirement and level, non-strict cases apart,
and the verdict (PASSED, FAILED, NOTHING RAN)."""

from __future__ import annotations

import io
import os
import re
import threading
from collections.abc import Callable
from typing import IO

import pytest

from harness.report.terminal import OUTCOMES, Progress, print_summary, render_summary, verdict
from harness.results import Outcome, RunResult, section_key

COUNTS = "1 error, 1 failed, 1 xpass, 1 non_strict, 1 xfail, 1 unsupported, 1 not_applicable, 3 passed"


def _on_pty(write: Callable[[IO[str]], None]) -> str:
    """What ``write(file)`` writes when ``file`` is a real terminal (a pseudo-terminal's slave end)."""
    master, slave = os.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO once the slave end is closed
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    with open(slave, "w", encoding="utf-8", closefd=True) as tty:
        assert tty.isatty()
        write(tty)
        tty.flush()
    reader.join(10)
    os.close(master)
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode("utf-8", "replace"))


def test_plain_summary_into_a_file(run: RunResult) -> None:
    out = io.StringIO()
    print_summary(run, file=out)
    text = out.getvalue()
    assert text == render_summary(run)
    assert "\x1b[" not in text  # no terminal codes into a file
    assert "target plugin:vendor.msmq:Impl" in text
    assert f"10 cases in 10.10 s: {COUNTS}\n" in text  # worst first
    listed, table_text = text.split("By spec section:")
    failures, soft = listed.split("Non-strict (")
    assert "FAILED dmpr.seek.fwd[peek=True]  (cases/mqdmpr/seek.yaml:1)" in failures
    assert (
        'MS-MQDMPR 3.1.7.3.2 [DMPR-SEEK-SKIP, MUST]: step 0 (seek_available_message_position): rMessagePosition '
        'expected "m2", observed "m1"' in failures
    )
    assert "MS-MQDMPR 3.1.1.11 [DMPR-STATE-LOCKED, MUST]: then: queues.q[0].State" in failures
    assert "ERROR dmpr.dequeue.timeout" in failures and "timed out after 10 s" in failures
    assert "XPASS dmpr.purge.empty" in failures
    assert "NON_STRICT" not in failures
    # the non-strict cases apart, with the requirement and level of their difference
    assert soft.startswith("a SHOULD, MAY or interpretation answered differently: a failure only under --strict):")
    assert "NON_STRICT dmpr.cursor.waiting  (cases/mqdmpr/cursor.yaml:40)" in soft
    assert (
        'MS-MQDMPR 3.2.7.2 [DMPR-PEEK-POSITION, interpretation]: step 1 (get_message_for_peek): rPosition '
        'expected "End", observed "<absent>"' in soft
    )
    for quiet in ("dmpr.purge.locked", "dmpr.move.subqueue", "mqqb.session.ack"):  # xfail, unsupported, n/a
        assert quiet not in listed
    table = table_text.splitlines()
    assert table[1].split() == ["section", *OUTCOMES]  # columns worst first
    sections = [line.split("  ")[0] for line in table[2:] if line.startswith("MS-")]
    assert sections == sorted(sections, key=section_key)
    assert sections[1:4] == ["MS-MQDMPR 3.1.7.1.9", "MS-MQDMPR 3.1.7.1.10", "MS-MQDMPR 3.1.7.1.16"]  # numerically
    rows = {line.split("  ")[0]: line.split()[2:] for line in table if line.startswith("MS-MQDMPR ")}
    assert rows["MS-MQDMPR 3.1.7.1.9"] == ["1", "0", "1", "0", "1", "0", "0", "0"]
    assert rows["MS-MQDMPR 3.1.7.3.2"] == ["0", "1", "0", "0", "0", "0", "0", "1"]  # not the non_strict case
    assert rows["MS-MQDMPR 3.2.7.2"] == ["0", "0", "0", "1", "0", "0", "0", "0"]
    assert text.rstrip().endswith(f"FAILED: {COUNTS}")


def test_verdicts(run: RunResult) -> None:
    results = run.results
    run.results = [r for r in results if r.outcome in (Outcome.passed, Outcome.non_strict, Outcome.xfail)]
    assert verdict(run) == "PASSED"
    text = render_summary(run)
    assert "Failures:" not in text and "NON_STRICT dmpr.cursor.waiting" in text
    assert text.rstrip().endswith("PASSED: 1 non_strict, 1 xfail, 3 passed")
    run.strict = True  # a non-strict difference fails a strict run, listed as a failure
    assert verdict(run) == "FAILED"
    text = render_summary(run)
    assert "Failures:\n  NON_STRICT dmpr.cursor.waiting" in text and "Non-strict (" not in text
    assert text.rstrip().endswith("FAILED: 1 non_strict, 1 xfail, 3 passed (strict)")
    run.results = [r for r in results if not r.outcome.ran]  # unsupported, not applicable
    assert verdict(run) == "NOTHING RAN"
    assert render_summary(run).rstrip().endswith("NOTHING RAN: 1 unsupported, 1 not_applicable (strict)")
    empty = RunResult(target="reference")
    assert render_summary(empty).rstrip().endswith("NOTHING RAN: no cases")


def test_rich_summary_on_a_terminal(run: RunResult, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "140")
    text = _on_pty(lambda tty: print_summary(run, file=tty))
    assert "Conformance by spec section" in text
    assert "dmpr.seek.fwd[peek=True]" in text
    assert "MS-MQDMPR 3.1.7.3.2 [DMPR-SEEK-SKIP, MUST]" in text
    assert 'expected "m2", observed "m1"' in text
    assert "NON_STRICT dmpr.cursor.waiting" in text and "[DMPR-PEEK-POSITION, interpretation]" in text
    assert "MS-MQQB 3.1.5.8.1" in text
    header = next(line for line in text.splitlines() if "section" in line and "passed" in line)
    assert [cell.strip() for cell in header.strip("┃ ").split("┃")] == ["section", *OUTCOMES]
    assert f"FAILED: {COUNTS}" in text


def test_rich_summary_on_a_narrow_terminal_keeps_the_section_names(
    run: RunResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    text = _on_pty(lambda tty: print_summary(run, file=tty))
    assert "MS-MQQB 3.1.5.8.1" in text.split("Conformance by spec section")[1]


def test_progress_is_silent_off_a_terminal(run: RunResult) -> None:
    out = io.StringIO()
    with Progress(len(run.results), file=out) as progress:
        for result in run.results:
            progress.advance(result)
    assert out.getvalue() == ""
    assert progress.counts["passed"] == 3 and sum(progress.counts.values()) == 10


def test_progress_bar_on_a_terminal(run: RunResult) -> None:
    def feed(tty: IO[str]) -> None:
        with Progress(len(run.results), file=tty) as progress:
            assert progress.enabled
            for result in run.results:
                progress.advance(result)

    text = _on_pty(feed)
    assert "cases" in text
    assert "/10" in text  # the M/N column
    assert "3 failing" in text  # failed, error, xpass (not non_strict)


def test_a_wire_failure_shows_its_hex_dump_not_a_kilobyte_of_zeros(run: RunResult) -> None:
    """The wire runs cut a long observed value to 200 characters ("... (1024 chars)"); the summary
    shows a short form of it and the annotated hex dump below, as docs/cases.md does."""
    from harness.results import StepFailure

    dump = (
        "000030   4E  9F  A7  D8  59  85  36  00  10  01  00  00 [00][00][00][00]  N...Y.6.........\n"
        "                                                         ^^  ^^  ^^  ^^\n"
        "field at bytes 60..571 (0x3C..0x23B) of 572"
    )
    failed = next(r for r in run.results if r.outcome is Outcome.failed)
    failed.failures = [
        StepFailure(
            step=1,
            event="receive",
            field="EstablishConnectionHeader.Padding",
            expected={"every_byte": 90},
            observed="0" * 197 + "... (1024 chars)",
            section="MS-MQQB 2.2.3.1",
            evidence=dump,
            requirement="MQQB-2.2.3.1-RESPONSE-PADDING",
            quote="each byte of this array MUST be filled with the value 0x5A.",
            inputs={"packet": "EstablishConnection", "within": "SessionInitialization"},
            line=61,
        )
    ]
    text = render_summary(run)
    assert "0" * 100 not in text
    assert 'observed "' + "0" * 36 + "... (1024 chars)" in text  # the headline, short
    assert "          inputs:      packet: EstablishConnection, within: SessionInitialization" in text
    assert "          spec says:   each byte of this array MUST be filled with the value 0x5A." in text
    assert "          at:          cases/mqdmpr/seek.yaml:61, step 1: receive" in text
    assert "          evidence:\n            000030   4E  9F" in text
    assert "            field at bytes 60..571 (0x3C..0x23B) of 572" in text


def test_the_adapter_error_text_reaches_the_terminal(run: RunResult) -> None:
    from harness.results import StepFailure

    error = next(r for r in run.results if r.outcome is Outcome.error)
    error.detail = "step 1 (dequeue_message, line 17): Error: vendor: queue table corrupt"
    error.stopped = StepFailure(
        step=1,
        event="dequeue_message",
        field="",
        expected=None,
        observed="Error: vendor: queue table corrupt",
        section="MS-MQDMPR 3.1.7.1.10",
        requirement="DMPR-DEQUEUE-TIMEOUT",
        inputs={"iQueueDesc": "h", "iTimeout": 0},
        line=17,
    )
    for text in (render_summary(run), _on_pty(lambda tty: print_summary(run, file=tty))):
        assert "target said: Error: vendor: queue table corrupt" in text
        assert "inputs:      iQueueDesc: h, iTimeout: 0" in text
        assert "step 1: dequeue_message" in text
