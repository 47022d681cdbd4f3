"""Acceptance: a failure explains itself the same way in every output.

A deliberately broken implementation behind the JSON-lines adapter protocol (docs/adapters.md): a
tiny ``cmd:`` adapter, written here, over the reference model, whose forward seek returns the
position *after* the right one, and whose dequeue answers an Error.  ``msmq-harness run`` against
it must show, in the terminal summary, the JSON report (valid against its schema), the JUnit XML
and the HTML report alike, the requirement's id and the spec's sentence, the level, the case's
id, title and file:line, the step and its event with its inputs (``iInitialPosition: Start``,
``iSeekDirection: Forward``), expected against observed, and the adapter's own error text.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest

from harness.cases.loader import load_requirements
from harness.report.json_report import FORMAT, load_schema

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "harness.cli"]

ADAPTER = r'''
import json, sys
sys.path.insert(0, {root!r})
from harness.cases.target import TargetError
from harness.cases.targets.reference import ReferenceTarget

target = ReferenceTarget()
for line in sys.stdin:
    request = json.loads(line)
    op, reply = request.get("op"), {{"ok": True}}
    try:
        if op == "hello":
            info = target.hello()
            reply = {{"ok": True, "name": "broken-seek", "events": info.events, "capabilities": ["model"]}}
        elif op == "setup":
            target.setup(request.get("given") or {{}})
        elif op == "event" and request["event"] == "dequeue_message":
            reply = {{"ok": False, "kind": "Error", "error": "broken-adapter: the queue table is corrupt (row 7)"}}
        elif op == "event":
            result = target.event(request["event"], request.get("args") or {{}})
            if request["event"] == "seek_available_message_position" and result.get("rMessagePosition") == "m1":
                result["rMessagePosition"] = "m2"  # the bug: one position too far
            reply = {{"ok": True, "result": result}}
        elif op == "observe":
            reply = {{"ok": True, **target.observe(request.get("queues") or [], request.get("cursors") or [])}}
        elif op == "bye":
            break
    except TargetError as e:
        reply = {{"ok": False, "kind": e.kind, "error": e.message}}
    sys.stdout.write(json.dumps({{"id": request.get("id"), **reply}}) + "\n")
    sys.stdout.flush()
'''

CASES = """\
id: accept.seek.start-is-head
title: A forward seek from Start returns the Head when it is Available
spec:
  - section: MS-MQDMPR 3.1.7.3.2
    requirement: DMPR-3.1.7.3.2-FWD-START
tags: [seek]
given:
  queues:
    - name: q
      messages: [{id: m1}, {id: m2}]
when:
  - event: seek_available_message_position
    args: {iInitialPosition: Start, iQueue: q, iPeekOperation: false, iSeekDirection: Forward}
    expect: {rMessagePosition: m1}
---
id: accept.dequeue.head
title: A dequeue returns the Head
spec:
  - section: MS-MQDMPR 3.1.7.1.10
    requirement: DMPR-3.1.7.1.10-FIRST
given:
  queues:
    - name: q
      messages: [{id: m1}]
  open:
    - {name: h, queue: q, access: ReceiveAccess, share: DenyNone}
when:
  - event: dequeue_message
    args: {iQueueDesc: h, iTimeout: 0}
    expect: {rStatus: MQ_OK}
"""

SEEK_ID, DEQUEUE_ID = "accept.seek.start-is-head", "accept.dequeue.head"
SEEK_REQ, DEQUEUE_REQ = "DMPR-3.1.7.3.2-FWD-START", "DMPR-3.1.7.1.10-FIRST"
ADAPTER_SAID = "broken-adapter: the queue table is corrupt (row 7)"


def _sentence(requirement: str) -> str:
    """The spec's sentence of ``requirement``, as every report shows it (whitespace collapsed)."""
    return " ".join(_quote(requirement).split())


def _quote(requirement: str) -> str:
    return next(r.quote for r in load_requirements(ROOT / "cases" / "requirements.yaml") if r.id == requirement)


def _flat(text: str) -> str:
    return " ".join(text.split())


class _Text(HTMLParser):
    """The text of an HTML page as a reader sees it (tags dropped, entities resolved)."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


# The module fixture ``outputs`` once per run: under pytest-xdist --dist loadgroup the module's tests
# share a worker (else each worker that gets one of them makes it again).
pytestmark = pytest.mark.xdist_group("failure-explained")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What ``msmq-harness run`` against the broken adapter wrote: terminal, JSON, JUnit, HTML."""
    tmp = tmp_path_factory.mktemp("explained")
    adapter = tmp / "broken_adapter.py"
    adapter.write_text(ADAPTER.format(root=str(ROOT)), encoding="utf-8")
    (tmp / "cases.yaml").write_text(CASES, encoding="utf-8")
    target = f"cmd:{sys.executable} {adapter}"
    paths = {kind: tmp / f"report.{kind}" for kind in ("json", "xml", "html")}
    env = {**os.environ, "COLUMNS": "120"}
    reports = ["--json", str(paths["json"]), "--junit", str(paths["xml"]), "--html", str(paths["html"])]
    done = subprocess.run(
        [*CLI, "run", str(tmp / "cases.yaml"), "--target", target, *reports],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
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
        "html_source": paths["html"].read_text(encoding="utf-8"),
    }


def _junit_text(xml: str) -> str:
    root = ET.fromstring(xml)
    return "\n".join(
        " ".join([el.get("message") or "", el.text or ""]) for el in root.iter() if el.tag in ("failure", "error")
    )


@pytest.mark.parametrize("output", ["terminal", "json", "junit", "html"])
def test_every_output_explains_the_failure(outputs: dict[str, str], output: str) -> None:
    if output == "json":
        data = json.loads(outputs["json"])
        text = "\n".join(
            f"{label}: {value}" for r in data["results"] for e in r["explanations"] for label, value in e["rows"]
        ) + "\n" + "\n".join(f"{r['case_id']} {r['title']}" for r in data["results"])  # fmt: skip
    elif output == "junit":
        text = _junit_text(outputs["junit"]) + "\n" + outputs["junit"]
    else:
        text = outputs[output]
    flat = _flat(text)
    # the difference: requirement and the spec's sentence, level, case, file:line, step, inputs, values
    assert SEEK_REQ in flat and _sentence(SEEK_REQ) in flat, output
    assert "MUST" in flat
    assert SEEK_ID in flat and "A forward seek from Start returns the Head when it is Available" in flat
    assert "cases.yaml:12, step 0: seek_available_message_position" in flat, output
    assert "iInitialPosition: Start" in flat and "iSeekDirection: Forward" in flat and "iPeekOperation: false" in flat
    assert "rMessagePosition" in flat and '"m1"' in flat and '"m2"' in flat
    # the error: the adapter's own words, the step it stopped at, with its inputs and requirement
    assert ADAPTER_SAID in flat, output
    assert "cases.yaml:28, step 0: dequeue_message" in flat, output
    assert "iQueueDesc: h, iTimeout: 0" in flat
    assert DEQUEUE_REQ in flat and _sentence(DEQUEUE_REQ) in flat, output


def test_the_explanations_are_the_same_rows_everywhere(outputs: dict[str, str]) -> None:
    data = json.loads(outputs["json"])
    rows = [(label, value) for r in data["results"] for e in r["explanations"] for label, value in e["rows"]]
    assert {label for label, _ in rows} >= {"requirement", "spec says", "at", "inputs", "value", "expected"}
    terminal, junit, html = _flat(outputs["terminal"]), _flat(_junit_text(outputs["junit"])), _flat(outputs["html"])
    for label, value in rows:
        assert _flat(value) in terminal, (label, value)
        assert _flat(value) in junit, (label, value)
        if label not in ("requirement",):  # the HTML heads each requirement's group with id, level, section
            assert _flat(value) in html, (label, value)


def test_the_json_report_matches_its_schema(outputs: dict[str, str]) -> None:
    data = json.loads(outputs["json"])
    assert data["format"] == FORMAT
    jsonschema.Draft202012Validator(load_schema()).validate(data)
    seek = next(r for r in data["results"] if r["case_id"] == SEEK_ID)
    failure = seek["failures"][0]
    assert failure["inputs"] == {
        "iInitialPosition": "Start", "iQueue": "q", "iPeekOperation": False, "iSeekDirection": "Forward"
    }  # fmt: skip
    assert (failure["line"], failure["quote"]) == (12, _quote(SEEK_REQ))
    dequeue = next(r for r in data["results"] if r["case_id"] == DEQUEUE_ID)
    assert dequeue["outcome"] == "error" and dequeue["stopped"]["inputs"] == {"iQueueDesc": "h", "iTimeout": 0}
    assert ADAPTER_SAID in dequeue["explanations"][0]["said"]


def test_the_html_report_puts_the_failures_first(outputs: dict[str, str]) -> None:
    page = outputs["html_source"]
    assert page.index('id="verdict"') < page.index(f'data-requirement="{SEEK_REQ}"') < page.index('id="matrix"')
    assert page.index(f'data-requirement="{DEQUEUE_REQ}"') < page.index(f'data-requirement="{SEEK_REQ}"')  # error first
