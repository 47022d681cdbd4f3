"""``msmq-harness run --record DIR``: one pcap and one transcript page per wire case, linked from
the HTML report (harness.report.transcript)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.peers.recording import RecordedConnection
from harness.report.json_report import load_schema
from harness.report.transcript import file_stem, find_failing, write_transcript
from harness.results import CaseResult, Outcome, RunResult
from tests.case_texts import establish_case

ROOT = Path(__file__).resolve().parents[2]

# an acceptor case that passes, one whose last expectation fails on the ConnectionParameters
# response (the 4th packet of its session), and an initiator case
_CP_STEPS = """\
  - action: send
    args: {packet: ConnectionParameters}
  - action: receive
    args: {packet: ConnectionParameters, within: SessionInitialization}
"""
CASES = (
    establish_case(
        "rec.acceptor.pass",
        "EstablishConnection and ConnectionParameters answered",
        steps=_CP_STEPS + "    expect: {BaseHeader.PacketSize: 32, InternalHeader.Flags.PT: 3}\n",
    )
    + "---\n"
    + establish_case(
        "rec.acceptor.fail",
        "A ConnectionParameters response of the wrong size (an expectation made wrong)",
        steps=_CP_STEPS + "    expect: {BaseHeader.PacketSize: 33}\n",
    )
    + """\
---
id: rec.initiator.established
title: A ConnectionParameters response opens the session
spec:
  - {section: MS-MQQB 3.1.5.4.2, requirement: MQQB-3.1.5.4.2-ESTABLISHED}
given:
  peer: {under_test: initiator}
when:
  - action: create_outgoing_queue
    args: {name: out}
  - action: enqueue
    args: {queue: out, message: {id: m1}}
  - action: wait_for
    args: {acked: [m1], within: SessionInitialization + SessionAckSend}
then:
  peer: {violations: []}
"""
)


class _Packets(HTMLParser):
    """The packet rows of a transcript page: their data-* attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, str | None]] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr" and "packet" in (a.get("class") or "").split():
            self.rows.append(a)
        if tag == "a" and a.get("href"):
            self.links.append(str(a["href"]))


def _parse(page: str) -> _Packets:
    p = _Packets()
    p.feed(page)
    return p


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def _decoded_count(pcap: Path, cwd: Path) -> int:
    out = _cli("decode", "--json", str(pcap), cwd=cwd)
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert all("kind" in r for r in records), records  # packets only: no stream problem
    return len(records)


# The module fixture ``recorded`` once per run: under pytest-xdist --dist loadgroup the module's tests
# share a worker (else each worker that gets one of them makes it again).
pytestmark = pytest.mark.xdist_group("record")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("record")
    (work / "cases").mkdir()
    (work / "cases" / "rec.yaml").write_text(CASES, encoding="utf-8")
    out = _cli("run", "cases", "--record", "rec", "--html", "out/report.html", "--json", "out/report.json", cwd=work)
    assert out.returncode == 1, out.stdout + out.stderr  # rec.acceptor.fail fails
    return work


def test_one_pcap_and_one_page_per_wire_case(recorded: Path) -> None:
    from harness.outdir import MARKER

    ids = ["rec.acceptor.pass", "rec.acceptor.fail", "rec.initiator.established"]
    files = sorted(f"{i}.{ext}" for i in ids for ext in ("html", "pcap"))
    assert sorted(p.name for p in (recorded / "rec").iterdir()) == sorted([*files, MARKER])
    # the marker names what the run wrote: a later run may replace exactly that (harness.outdir)
    assert json.loads((recorded / "rec" / MARKER).read_text()) == {"command": "run --record", "files": files}


@pytest.mark.parametrize("case_id", ["rec.acceptor.pass", "rec.acceptor.fail", "rec.initiator.established"])
def test_decode_reads_the_pcap_back_with_the_transcripts_packets(recorded: Path, case_id: str) -> None:
    page = _parse((recorded / "rec" / f"{case_id}.html").read_text(encoding="utf-8"))
    assert len(page.rows) >= 2
    assert _decoded_count(recorded / "rec" / f"{case_id}.pcap", recorded) == len(page.rows)
    assert f"{case_id}.pcap" in page.links  # the page links its capture


def test_transcript_lists_both_directions_in_order_with_fields(recorded: Path) -> None:
    text = (recorded / "rec" / "rec.acceptor.pass.html").read_text(encoding="utf-8")
    rows = _parse(text).rows
    assert [r["data-index"] for r in rows] == [str(i) for i in range(1, len(rows) + 1)]
    assert [(r["data-direction"], r["data-kind"]) for r in rows] == [
        ("c2s", "EstablishConnection"),
        ("s2c", "EstablishConnection"),
        ("c2s", "ConnectionParameters"),
        ("s2c", "ConnectionParameters"),
    ]
    for name in ("BaseHeader", "InternalHeader", "EstablishConnectionHeader", "ClientGuid", "WindowSize"):
        assert name in text
    assert re.search(r"\d\d:\d\d:\d\d\.\d{3}", text)  # the times
    assert 'class="packet from-harness failing"' not in text and 'id="failing"' not in text


def test_transcript_marks_the_failing_packet(recorded: Path) -> None:
    text = (recorded / "rec" / "rec.acceptor.fail.html").read_text(encoding="utf-8")
    rows = _parse(text).rows
    failing = [r for r in rows if "failing" in (r.get("class") or "").split()]
    assert len(failing) == 1
    assert failing[0]["data-index"] == "4" and failing[0]["id"] == "failing"
    assert failing[0]["data-kind"] == "ConnectionParameters" and failing[0]["data-direction"] == "s2c"
    assert "failing packet" in text and "BaseHeader.PacketSize expected 33" in text
    assert '<a href="#failing">' in text


def test_initiator_transcript_shows_both_sides(recorded: Path) -> None:
    rows = _parse((recorded / "rec" / "rec.initiator.established.html").read_text(encoding="utf-8")).rows
    kinds = [(r["data-direction"], r["data-kind"]) for r in rows]
    assert kinds[:2] == [("c2s", "EstablishConnection"), ("s2c", "EstablishConnection")]
    assert ("c2s", "UserMessage") in kinds


def test_html_report_links_each_wire_case_to_its_transcript(recorded: Path) -> None:
    report = recorded / "out" / "report.html"
    links = [h for h in _parse(report.read_text(encoding="utf-8")).links if h.endswith(".html")]
    for case_id in ("rec.acceptor.pass", "rec.acceptor.fail", "rec.initiator.established"):
        href = f"../rec/{case_id}.html"
        assert href in links
        assert (report.parent / href).resolve() == (recorded / "rec" / f"{case_id}.html").resolve()
    assert 'class="transcript"' in report.read_text(encoding="utf-8")


def test_json_report_names_the_transcript(recorded: Path) -> None:
    import jsonschema

    data = json.loads((recorded / "out" / "report.json").read_text(encoding="utf-8"))
    jsonschema.validate(data, load_schema())
    by_id = {r["case_id"]: r for r in data["results"]}
    assert Path(by_id["rec.acceptor.fail"]["transcript"]) == Path("rec") / "rec.acceptor.fail.html"


def test_a_result_without_transcript_keeps_the_json_shape() -> None:
    result = CaseResult("c", "t", ["MS-MQQB 2.1"], "MUST", Outcome.passed)
    assert "transcript" not in result.to_dict()
    assert "transcript" not in _parse_html_links(RunResult(target="reference", results=[result]))


def _parse_html_links(run: RunResult) -> str:
    from harness.report.html import render_html

    return " ".join(_parse(render_html(run)).links)


def test_file_stem_and_failing_by_identity(tmp_path: Path) -> None:
    digest = hashlib.sha256(b"a.b[x=1, y=q/r]").hexdigest()[:12]
    assert file_stem("a.b[x=1, y=q/r]") == f"a.b[x=1,_y=q_r]~{digest}"  # made safe: the digest tells it apart
    assert file_stem("a.b[x=1]") == "a.b[x=1]"  # safe as it is: the id itself
    same = bytes.fromhex("10 20 30 40")
    other = bytes.fromhex("10 20 30 40")  # equal bytes, another object
    assert other is not same
    conns = [RecordedConnection(("127.0.0.1", 5000), ("127.0.0.1", 6000), [("c2s", other, 1.0), ("s2c", same, 2.0)])]
    assert find_failing(conns, same) == (0, 1)
    assert find_failing(conns, bytes.fromhex("10 20 30 40")) == (0, 0)  # not the same object: the first equal
    assert find_failing(conns, b"\x00") is None
    result = CaseResult("c[1]", "t", [], "MUST", Outcome.passed)
    page = write_transcript(tmp_path / "d", result, "acceptor", conns)
    assert page == tmp_path / "d" / "c[1].html" and (tmp_path / "d" / "c[1].pcap").exists()
    assert "Unknown" in page.read_text(encoding="utf-8")  # a packet that does not decode still shows
