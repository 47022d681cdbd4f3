"""Case ids and known-failures entries (issue 20, item 6): a long matrix value is shortened in
the case id, stably and uniquely, and the one short id is what every report, pytest item name,
``-k`` and known-failures entry sees; a ``--known-failures`` entry that names no case of the run
is reported (terminal, HTML and JSON) with the closest case id, not ignored."""

from __future__ import annotations

import hashlib
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from harness.cases.loader import load_paths
from harness.cases.model import ID_VALUE_LIMIT, Case, SpecRef, id_value
from harness.cases.runner import apply_known_failures, run, select, unmatched_known_failures
from harness.cli import main
from harness.report import html, json_report, junit, terminal
from harness.results import Outcome
from tests.cases.casekit import plugin_args

pytest_plugins = ["pytester"]

REQUIREMENTS = """\
- id: P-SEEK-HEAD
  section: MS-MQDMPR 3.1.7.3.2
  level: MUST
  quote: >-
    If iIterator is equivalent to the StartMessagePosition ADM element instance defined for
    iQueue.MessagePositionList: Set iIterator to iQueue.MessagePositionList.Head
"""

#: a seek on q = [m1, m2]: the reference returns m1; ``expect`` is what the case wants
SEEK = """\
id: {id}
title: {id} title
spec:
  - {{section: MS-MQDMPR 3.1.7.3.2, requirement: P-SEEK-HEAD}}
given:
  queues:
    - name: q
      messages: [{{id: m1, Body: "${{body}}"}}, {{id: m2}}]
when:
  - event: seek_available_message_position
    args: {{iInitialPosition: Start, iQueue: q, iPeekOperation: false}}
    expect: {{rMessagePosition: {expect}}}
matrix:
  body: [{values}]
"""

SHARED = "x" * 600  # two long values alike for their first 600 characters
LONG_A, LONG_B = SHARED + "a" * 400, SHARED + "b" * 400


def short(value: str) -> str:
    """The id form of a long value, computed here from the rule docs/cases.md states."""
    return value[: ID_VALUE_LIMIT - 10] + "~" + hashlib.sha256(value.encode()).hexdigest()[:8]


def write_corpus(root: Path) -> Path:
    """cases/long.yaml: ``t.long`` with variants body=short, LONG_A, LONG_B (all fail), and
    ``t.ok`` (passes); returns the folder."""
    folder = root / "cases"
    folder.mkdir()
    (folder / "requirements.yaml").write_text(REQUIREMENTS, encoding="utf-8")
    docs = [
        SEEK.format(id="t.long", expect="m2", values=f"plain, {LONG_A}, {LONG_B}"),
        SEEK.format(id="t.ok", expect="m1", values="plain"),
    ]
    (folder / "long.yaml").write_text("---\n".join(docs), encoding="utf-8")
    return folder


LONG_IDS = [f"t.long[body={short(LONG_A)}]", f"t.long[body={short(LONG_B)}]"]


# ================================================================================ long ids
def test_a_long_matrix_value_is_shortened_stably_and_uniquely() -> None:
    assert id_value("plain") == "plain" and id_value(7) == "7"
    assert id_value("y" * ID_VALUE_LIMIT) == "y" * ID_VALUE_LIMIT  # at the limit: whole
    a, b = id_value(LONG_A), id_value(LONG_B)
    assert (a, b) == (short(LONG_A), short(LONG_B))  # the same in every process and run
    assert a != b and len(a) == len(b) == ID_VALUE_LIMIT - 1
    case = Case(id="t.c", title="", spec=[SpecRef("MS-MQDMPR 3.1.7.3.2")], variant={"body": LONG_A, "n": 1})
    assert case.full_id == f"t.c[body={short(LONG_A)},n=1]"


def test_every_report_names_the_variant_by_its_short_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write_corpus(tmp_path)
    cases = load_paths([folder])
    assert [c.full_id for c in cases] == ["t.long[body=plain]", *LONG_IDS, "t.ok[body=plain]"]
    out = tmp_path / "out"
    monkeypatch.setenv("COLUMNS", "200")
    code = main(
        ["run", str(folder), "--json", str(out) + ".json", "--junit", str(out) + ".xml", "--html", str(out) + ".html"]
    )
    assert code == 1
    summary = capsys.readouterr().out
    for cid in LONG_IDS:
        assert f"FAILED {cid}" in summary
    listed = [line.partition("  (")[0] for line in summary.splitlines() if line.startswith("  FAILED")]
    assert len(listed) == 3 and max(map(len, listed)) < 80, listed  # the line before the case's file
    report = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert [r["case_id"] for r in report["results"]] == [c.full_id for c in cases]
    names = [tc.get("name") for tc in ET.parse(tmp_path / "out.xml").getroot().iter("testcase")]
    assert set(LONG_IDS) <= set(names)
    page = (tmp_path / "out.html").read_text(encoding="utf-8")
    for cid in LONG_IDS:
        assert f'<code class="id">{cid}</code>' in page
    assert f"body={LONG_A[:100]}" not in summary + page + json.dumps(report["results"][1]["case_id"])


def test_k_and_known_failures_match_the_short_id(tmp_path: Path) -> None:
    cases = load_paths([write_corpus(tmp_path)])
    digest = short(LONG_B).rpartition("~")[2]
    assert [c.full_id for c in select(cases, keyword=digest)] == [LONG_IDS[1]]
    result = run(cases, "reference", known_failures={LONG_IDS[0]})
    assert [r.outcome for r in result.results] == [Outcome.failed, Outcome.xfail, Outcome.failed, Outcome.passed]
    assert result.unmatched_known_failures == []


def test_the_plugin_names_items_by_the_short_id(pytester: pytest.Pytester) -> None:
    write_corpus(pytester.path)
    known = pytester.path / "known.txt"
    known.write_text(LONG_IDS[1] + "\n", encoding="utf-8")
    result = pytester.runpytest(*plugin_args(), "-rA", f"--msmq-known-failures={known}")
    result.assert_outcomes(passed=1, failed=2, xfailed=1)
    lines = [line for line in result.outlines if line.startswith(("PASSED", "FAILED", "XFAIL"))]
    assert any(line.startswith(f"FAILED cases/long.yaml::{LONG_IDS[0]}") for line in lines), lines
    assert any(line.startswith(f"XFAIL cases/long.yaml::{LONG_IDS[1]}") for line in lines), lines
    digest = short(LONG_A).rpartition("~")[2]
    selected = pytester.runpytest(*plugin_args(), "-k", digest)
    selected.assert_outcomes(failed=1)


# ========================================================================= known failures
def test_unmatched_entries_are_found_with_the_closest_id(tmp_path: Path) -> None:
    cases = load_paths([write_corpus(tmp_path)])
    known = {"t.ok", "t.long[body=plain]", "t.lnog", "t.ok[body=plian]", "nothing.like.it"}
    assert unmatched_known_failures(known, cases) == [
        ("nothing.like.it", ""),
        ("t.lnog", "t.long"),
        ("t.ok[body=plian]", "t.ok[body=plain]"),
    ]
    result = run(cases, "reference", known_failures=known)
    assert result.unmatched_known_failures == unmatched_known_failures(known, cases)
    assert [r.outcome for r in result.results][::3] == [Outcome.xfail, Outcome.xpass]
    # apply_known_failures is unchanged: a listed case still becomes xfail / xpass
    assert apply_known_failures(run(cases[:1], "reference").results[0], cases[0], known).outcome is Outcome.xfail


def test_reports_warn_of_each_unmatched_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write_corpus(tmp_path)
    listing = tmp_path / "known.txt"
    listing.write_text("t.long  # known\nt.lnog\nnothing.like.it\n", encoding="utf-8")
    monkeypatch.setenv("COLUMNS", "200")
    out = tmp_path / "r"
    assert (
        main(["run", str(folder), "--known-failures", str(listing), "--json", f"{out}.json", "--html", f"{out}.html"])
        == 0
    )
    summary = capsys.readouterr().out
    warnings = [line for line in summary.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: --known-failures entry 'nothing.like.it' matches no case of this run",
        "warning: --known-failures entry 't.lnog' matches no case of this run (did you mean 't.long'?)",
    ]
    report = json.loads(Path(f"{out}.json").read_text(encoding="utf-8"))
    jsonschema.validate(report, json_report.load_schema())
    assert report["unmatched_known_failures"] == [
        {"entry": "nothing.like.it", "closest": None},
        {"entry": "t.lnog", "closest": "t.long"},
    ]
    back = json_report.read_json(f"{out}.json")
    assert back.unmatched_known_failures == [("nothing.like.it", ""), ("t.lnog", "t.long")]
    page = Path(f"{out}.html").read_text(encoding="utf-8")
    assert "warning: --known-failures entry &#x27;t.lnog&#x27; matches no case of this run" in page
    # the rich summary on a terminal warns too
    buffer = io.StringIO()
    terminal._print_rich(back, buffer)
    assert "warning: --known-failures entry 't.lnog' matches no case of this run (did you mean 't.long'?)" in (
        buffer.getvalue()
    )
    # a run whose entries all match: no warning, and the JSON report has no such key
    clean = run(load_paths([folder]), "reference", known_failures={"t.long"})
    assert clean.warnings() == [] and "unmatched_known_failures" not in json_report.to_json_dict(clean)
    assert "warning" not in terminal.render_summary(clean)
    assert 'class="warning"' not in html.render_html(clean) and junit.render_junit(clean)
