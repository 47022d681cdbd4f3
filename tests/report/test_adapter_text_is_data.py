"""Everything a target says is data in every report (issue 21, item 8): its control characters
are shown escaped on the terminal (plain and rich) and in JUnit as the HTML report shows them
(``\\x1b``), and a number JSON cannot hold (NaN, Infinity) never reaches the JSON report."""

from __future__ import annotations

import io
import json
import math
import os
import re
import threading
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from harness.cases.caseresult import case_result
from harness.report import html, junit
from harness.report.json_report import render_json
from harness.report.terminal import print_summary, render_summary
from harness.results import CaseResult, Outcome, RunResult, StepFailure, clean, printable

SAID = "boom\x1b[2J\x00\x08\x07\x7f\x9b31m end"  # clear screen, NUL, backspace, bell, DEL, CSI
SHOWN = "boom\\x1b[2J\\x00\\x08\\x07\\x7f\\x9b31m end"
RAW = "\x00\x08\x07\x7f\x9b"  # none of them may reach a terminal (nor ESC but the report's own colors)


def _run() -> RunResult:
    failed = CaseResult(
        case_id="dmpr.x",
        title="a case",
        sections=["MS-MQDMPR 3.2.7.2"],
        level="MUST",
        outcome=Outcome.failed,
        failures=[
            StepFailure(
                step=0,
                event="get_message_for_peek",
                field="rStatus",
                expected="Succeeded",
                observed=SAID,
                section="MS-MQDMPR 3.2.7.2",
                message=f"rStatus expected Succeeded, observed {SAID}",
                requirement="DMPR-X",
            )
        ],
        detail=SAID,
    )
    errored = CaseResult(
        case_id="dmpr.y",
        title="another",
        sections=["MS-MQDMPR 3.2.7.3"],
        level="MUST",
        outcome=Outcome.error,
        detail=f"step 0 (get_message_for_peek, line 3): Error: {SAID}\nadapter stderr:\n{SAID}",
    )
    return RunResult(target="cmd:adapter\x1b]0;title\x07", results=[failed, errored])


def _on_pty(run: RunResult) -> str:
    """What print_summary writes to a real terminal (a pseudo-terminal), raw."""
    master, slave = os.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    with open(slave, "w", encoding="utf-8", closefd=True) as tty:
        print_summary(run, file=tty)
        tty.flush()
    reader.join(10)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


def test_printable_escapes_what_a_terminal_acts_on() -> None:
    assert printable(SAID) == SHOWN
    assert printable("tab\tand\nnewline stay") == "tab\tand\nnewline stay"
    assert printable("a\rb\x85c\ud800") == "a\\x0db\\x85c\\ud800"
    assert printable("ünïcödé ✓") == "ünïcödé ✓"
    assert printable(printable(SAID)) == SHOWN  # nothing left to escape
    # the HTML report writes the control characters it escapes the same way
    assert html.escape("\x1b[2J\x00\x08") == printable("\x1b[2J\x00\x08")


def test_the_plain_summary_shows_target_text_escaped() -> None:
    text = render_summary(_run())
    assert SHOWN in text and "cmd:adapter\\x1b]0;title\\x07" in text
    assert not set(RAW + "\x1b") & set(text)
    out = io.StringIO()
    print_summary(_run(), file=out)
    assert out.getvalue() == text


def test_the_rich_summary_shows_target_text_escaped() -> None:
    text = _on_pty(_run())
    colors = re.sub(r"\x1b\[[0-9;]*m", "", text)  # rich's own styles are the only escapes
    assert "\x1b" not in colors and not set(RAW) & set(colors)
    flat = re.sub(r"\s+", "", colors)
    assert re.sub(r"\s+", "", SHOWN) in flat
    assert "cmd:adapter\\x1b]0;title\\x07" in colors


def test_junit_shows_target_text_escaped() -> None:
    root = ET.fromstring(junit.render_junit(_run()))
    failure = root.find(".//testcase[@name='dmpr.x']/failure")
    error = root.find(".//testcase[@name='dmpr.y']/error")
    assert failure is not None and error is not None
    for element in (failure, error):
        assert SHOWN in element.get("message", "") + (element.text or "")
        assert not set(RAW + "\x1b") & set(element.get("message", "") + (element.text or ""))


def test_clean_names_the_numbers_json_cannot_hold() -> None:
    assert clean([math.nan, math.inf, -math.inf, 1.5, {"k": (math.nan,)}]) == [
        "NaN",
        "Infinity",
        "-Infinity",
        1.5,
        {"k": ("NaN",)},
    ]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_value_never_reaches_the_json_report(value: float) -> None:
    """Whatever a target or a case file holds, the JSON report is JSON (no bare NaN)."""
    from harness.cases.loader import load_paths

    (case, *_) = load_paths([Path(__file__).resolve().parents[2] / "cases/mqdmpr/cursor/get_message_for_peek.yaml"])
    failure = StepFailure(0, "get_message_for_peek", "rStatus", value, {"x": [value]}, "MS-MQDMPR 3.2.7.2")
    failure.inputs = {"n": value}
    result = case_result(case, Outcome.failed, 0.0, [failure], "")

    def refuse(name: str) -> Any:
        raise AssertionError(f"the report holds {name}")

    report = json.loads(render_json(RunResult(target="t", results=[result])), parse_constant=refuse)
    (recorded,) = report["results"][0]["failures"]
    name = clean(value)
    assert recorded["expected"] == name and recorded["observed"] == {"x": [name]} and recorded["inputs"] == {"n": name}
