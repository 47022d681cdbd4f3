"""Values the spec writes in hex are shown in hex in every report (packets.paths.display_value).

A wire case run against the simulated peer whose replies carry the Signature bytes 52 4F 49 4C
(``bad-signature``): the difference on ``BaseHeader.Signature`` reads ``0x524F494C (1380927820)``
against ``0x4C494F52 (1279872850)`` in the terminal summary, the JSON report's failure message
and explanation, the JUnit XML and the HTML report, while the JSON report keeps the values
themselves as numbers; a 1-bit flag (``BaseHeader.Flags.IN``) stays decimal.  The pytest
plugin's failure text is checked on a result built here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.pytest_plugin import render_failure
from harness.report.explain import explain, explanation_lines
from harness.report.terminal import case_headline, failure_line
from harness.results import CaseResult, Outcome, StepFailure

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "harness.cli"]

EXPECTED = "0x524F494C (1380927820)"  # the spec's Signature
OBSERVED = "0x4C494F52 (1279872850)"  # the bytes 52 4F 49 4C read as a little-endian u32

CASE = """\
id: hex.signature
title: The EstablishConnection response carries the spec's Signature (and a deliberately wrong IN bit)
spec:
  - section: MS-MQMQ 2.2.19.1
    requirement: MQMQ-2.2.19.1-BASEHEADER-REPLY
given:
  peer: {under_test: acceptor, behaviour: bad-signature}
when:
  - action: send
    args: {packet: EstablishConnection}
  - action: receive
    args: {packet: EstablishConnection, within: SessionInitialization}
    expect:
      BaseHeader.Signature: 0x524F494C
      BaseHeader.Flags.IN: 0
"""


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _flat(text: str) -> str:
    return " ".join(text.split())


# The module fixture ``outputs`` once per run: under pytest-xdist --dist loadgroup the module's tests
# share a worker (else each worker that gets one of them makes it again).
pytestmark = pytest.mark.xdist_group("hex-values")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What ``msmq-harness run`` of the case wrote: terminal, JSON, JUnit, HTML."""
    tmp = tmp_path_factory.mktemp("hex")
    (tmp / "case.yaml").write_text(CASE, encoding="utf-8")
    paths = {kind: tmp / f"report.{kind}" for kind in ("json", "xml", "html")}
    reports = ["--json", str(paths["json"]), "--junit", str(paths["xml"]), "--html", str(paths["html"])]
    done = subprocess.run(
        [*CLI, "run", str(tmp / "case.yaml"), *reports],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "160"},
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    page = _Text()
    page.feed(paths["html"].read_text(encoding="utf-8"))
    return {
        "terminal": done.stdout,
        "json": paths["json"].read_text(encoding="utf-8"),
        "junit": paths["xml"].read_text(encoding="utf-8"),
        "html": " ".join(page.parts),
    }


def _failures(outputs: dict[str, str]) -> dict[str, dict]:
    (result,) = json.loads(outputs["json"])["results"]
    assert result["outcome"] == "failed", result
    return {f["field"]: f for f in result["failures"]}


def test_the_terminal_shows_the_signature_in_hex(outputs: dict[str, str]) -> None:
    text = _flat(outputs["terminal"])
    assert f"BaseHeader.Signature expected {EXPECTED}, observed {OBSERVED}" in text
    assert f"expected: {EXPECTED}" in text and f"observed: {OBSERVED}" in text


def test_the_json_message_shows_hex_and_the_values_stay_numbers(outputs: dict[str, str]) -> None:
    signature = _failures(outputs)["BaseHeader.Signature"]
    assert (signature["expected"], signature["observed"]) == (0x524F494C, 0x4C494F52)
    assert f"BaseHeader.Signature expected {EXPECTED}, observed {OBSERVED}" in signature["message"]
    (result,) = json.loads(outputs["json"])["results"]
    explained = next(e for e in result["explanations"] if e["field"] == "BaseHeader.Signature")
    assert (explained["expected"], explained["observed"]) == (0x524F494C, 0x4C494F52)
    assert (explained["expected_text"], explained["observed_text"]) == (EXPECTED, OBSERVED)
    assert ["expected", EXPECTED] in explained["rows"]


def test_junit_shows_the_signature_in_hex(outputs: dict[str, str]) -> None:
    (failure,) = [el for el in ET.fromstring(outputs["junit"]).iter("failure")]
    assert EXPECTED in (failure.get("message") or "") and OBSERVED in (failure.get("message") or "")
    assert f"expected: {EXPECTED}" in _flat(failure.text or "") and f"observed: {OBSERVED}" in _flat(failure.text or "")


def test_html_shows_the_signature_in_hex(outputs: dict[str, str]) -> None:
    text = _flat(outputs["html"])
    assert EXPECTED in text and OBSERVED in text


@pytest.mark.parametrize("output", ["terminal", "json", "junit", "html"])
def test_a_one_bit_flag_stays_decimal(outputs: dict[str, str], output: str) -> None:
    flag = _failures(outputs)["BaseHeader.Flags.IN"]
    assert (flag["expected"], flag["observed"]) == (0, 1)
    text = _flat(flag["message"] if output == "json" else outputs[output])
    if output == "html":  # the page shows the rows of the explanation
        assert "value BaseHeader.Flags.IN expected 0 observed 1" in text
    else:
        assert "BaseHeader.Flags.IN expected 0, observed 1" in text
        assert "expected: 0x" not in text.partition("BaseHeader.Flags.IN")[2]


# --- the same function behind the one-line reports, on results built here -----------------------------


def _wire_result() -> CaseResult:
    failures = [
        StepFailure(1, "receive", "BaseHeader.Signature", 0x524F494C, 0x4C494F52, "MS-MQMQ 2.2.19.1"),
        StepFailure(1, "receive", "BaseHeader.Flags.PR", 3, 5, "MS-MQMQ 2.2.19.1"),
        StepFailure(1, "receive", "BaseHeader.Flags", {"any_of": [0x0103, 0x0003]}, 0x0010, "MS-MQMQ 2.2.19.1"),
        StepFailure(1, "receive", "BaseHeader.PacketSize", 572, 16, "MS-MQMQ 2.2.19.1"),
        StepFailure(0, "seek_available_message_position", "rMessagePosition", "m2", "m1", "MS-MQDMPR 3.1.7.3.2"),
    ]
    return CaseResult(
        case_id="hex.values",
        title="hex",
        sections=["MS-MQMQ 2.2.19.1"],
        level="MUST",
        outcome=Outcome.failed,
        failures=failures,
    )


def test_every_one_line_report_writes_hex_fields_in_hex() -> None:
    result = _wire_result()
    lines = [failure_line(f) for f in result.failures]
    assert lines[0].endswith(f"BaseHeader.Signature expected {EXPECTED}, observed {OBSERVED}")
    assert lines[1].endswith("BaseHeader.Flags.PR expected 3, observed 5")  # a 3-bit sub-field: decimal
    word = 'BaseHeader.Flags expected {"any_of": [0x0103 (PR=3, TR=1), 0x0003 (PR=3)]}, observed 0x0010 (SH=1)'
    assert lines[2].endswith(word)  # a flag word: hex, with the sub-fields it sets
    assert lines[3].endswith("BaseHeader.PacketSize expected 572, observed 16")  # a size: decimal
    assert lines[4].endswith('rMessagePosition expected "m2", observed "m1"')  # not a packet field
    assert case_headline(result) == lines[0]
    text = "\n".join(explanation_lines(explain(result)[0]))
    assert f"expected:    {EXPECTED}" in text and f"observed:    {OBSERVED}" in text
    pytest_text = render_failure(result, "failed")
    assert f"expected: {EXPECTED}" in pytest_text and f"observed: {OBSERVED}" in pytest_text
    assert "expected: 3" in pytest_text and "expected: 572" in pytest_text
