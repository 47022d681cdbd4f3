"""The terminal summary and progress bar: plain text into a file, rich on a (pseudo) terminal."""

from __future__ import annotations

import io
import os
import re
import threading
from collections.abc import Callable
from typing import IO

from harness.report.results import RunResult
from harness.report.terminal import Progress, print_summary, render_summary, section_key


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
    assert "8 cases in 10.10 s: 3 passed, 1 failed, 1 error, 1 xfail, 1 xpass, 1 not_applicable" in text
    assert "FAILED dmpr.seek.fwd[peek=True]" in text
    assert (
        'MS-MQDMPR 3.1.7.3.2: step 0 (seek_available_message_position): rMessagePosition expected "m2", observed "m1"'
        in text
    )
    assert "ERROR dmpr.dequeue.timeout" in text and "timed out after 10 s" in text
    assert "XPASS dmpr.purge.empty" in text
    assert "dmpr.purge.locked" not in text.split("By spec section:")[0]  # an xfail is not listed as a failure
    table = text.split("By spec section:")[1].splitlines()
    sections = [line.split("  ")[0] for line in table[2:] if line.startswith("MS-")]
    assert sections == sorted(sections, key=section_key)
    assert sections[:2] == ["MS-MQDMPR 3.1.7.1.9", "MS-MQDMPR 3.1.7.1.10"]  # numerically, not as strings
    row = next(line for line in table if line.startswith("MS-MQDMPR 3.1.7.1.9 "))
    assert row.split()[2:] == ["0", "0", "1", "1", "1", "0"]
    assert text.rstrip().endswith("FAILED: 3 passed, 1 failed, 1 error, 1 xfail, 1 xpass, 1 not_applicable")


def test_rich_summary_on_a_terminal(run: RunResult) -> None:
    text = _on_pty(lambda tty: print_summary(run, file=tty))
    assert "Conformance by spec section" in text
    assert "dmpr.seek.fwd[peek=True]" in text
    assert 'expected "m2", observed "m1"' in text
    assert "MS-MQQB 3.1.5.8.1" in text
    assert "FAILED" in text


def test_progress_is_silent_off_a_terminal(run: RunResult) -> None:
    out = io.StringIO()
    with Progress(len(run.results), file=out) as progress:
        for result in run.results:
            progress.advance(result)
    assert out.getvalue() == ""
    assert progress.counts["passed"] == 3 and sum(progress.counts.values()) == 8


def test_progress_bar_on_a_terminal(run: RunResult) -> None:
    def feed(tty: IO[str]) -> None:
        with Progress(len(run.results), file=tty) as progress:
            assert progress.enabled
            for result in run.results:
                progress.advance(result)

    text = _on_pty(feed)
    assert "cases" in text
    assert "/8" in text  # the M/N column
