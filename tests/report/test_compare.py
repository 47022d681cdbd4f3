"""``msmq-harness compare``: several implementations side by side, the cases where they disagree first.

Two real runs of the forward-seek cases: against the reference and against a mutant that breaks
one rule of [MS-MQDMPR] 3.1.7.3.2 (harness.cases.mutants: ``ForwardSeekIncludesInitial``).  The
command is registered on a small argparse here, as harness/cli.py registers it.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.report.compare import MISSING, add_parser, compare, render_compare_html, render_compare_text
from harness.report.json_report import write_json
from harness.results import CaseResult, Outcome, RunResult
from tests.report.reportkit import chromium

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "cases" / "mqdmpr" / "seek" / "seek_forward.yaml"
MUTANT = "plugin:examples.mutants.seek:ForwardSeekIncludesInitial"


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="msmq-harness")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


# The module fixture ``reports`` once per run: under pytest-xdist --dist loadgroup the module's tests
# share a worker (else each worker that gets one of them makes it again).
pytestmark = pytest.mark.xdist_group("compare")


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("compare")
    out = []
    for name, target in (("reference", "reference"), ("mutant", MUTANT)):
        path = tmp / f"{name}.json"
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", "run", str(CASES), "--target", target, "--json", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
            check=False,
        )
        assert done.returncode == (0 if name == "reference" else 1), done.stdout + done.stderr
        out.append(path)
    return out[0], out[1]


def _failed_by_mutant(path: Path) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [r["case_id"] for r in data["results"] if r["outcome"] != "passed"]


def test_disagreements_come_first(
    reports: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, mutant = reports
    caught = _failed_by_mutant(mutant)
    assert caught, "the mutant must fail some forward-seek cases"
    html = tmp_path / "compare.html"
    assert _main(["compare", str(reference), str(mutant), "--html", str(html), "--all"]) == 1
    text = capsys.readouterr().out
    assert f"[2] {MUTANT}: FAILED" in text and "[1] reference: PASSED" in text
    assert f"Regressions (failing now, not before): {len(caught)}\n" in text
    agreements_at = text.index("Agreements:")
    for case_id in caught:  # each disagreement, with why the mutant failed it, before any agreement
        at = text.index(f"  {case_id}\n")
        assert at < agreements_at
        assert re.search(r"\[2\] DMPR-3\.1\.7\.3\.2-\S+ step \d+ \(seek_available_message_position\): rMessage", text)
    agreeing = [line.split()[-1] for line in text[agreements_at:].splitlines() if line.startswith("    passed")]
    assert agreeing and not set(agreeing) & set(caught)
    total = len(caught) + len(agreeing)
    assert (
        f"\nREGRESSED: {len(caught)} regressions, 0 changed failures, 0 fixes, 0 other changes in {total} cases "
        f"across 2 runs\nreport: {html}\n"
    ) in text

    page = html.read_text(encoding="utf-8")
    rows = re.findall(r'<tr class="case-row (disagree|agree)" data-case="([^"]+)"', page)
    kinds = [kind for kind, _ in rows]
    assert kinds == sorted(kinds, key=lambda k: k != "disagree")  # every disagreement before any agreement
    assert [case for kind, case in rows if kind == "disagree"] == caught  # the section's cases, in order
    assert page.index('id="disagreements"') < page.index('id="agreements"')
    assert "http" not in page.split("<body>")[1]  # self-contained
    assert '<form id="filters" role="search" hidden>' in page  # without the script: everything else shows
    first = page.split(f'data-case="{caught[0]}"', 1)[1].split("</tr>", 1)[0]
    assert '<td data-outcome="passed"><span class="badge b-passed">passed</span></td>' in first
    assert '<td data-outcome="failed"><span class="badge b-failed">failed</span><span class="why">' in first


def test_agreeing_runs_exit_0(reports: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    reference, _ = reports
    assert _main(["compare", str(reference), str(reference), "--name", "one", "--name", "two"]) == 0
    text = capsys.readouterr().out
    assert "[1] one: PASSED" in text and "[2] two: PASSED" in text
    assert "Regressions (failing now, not before): 0\n" in text and text.rstrip().startswith("msmq-harness compare:")
    assert "\nNO REGRESSION: 0 regressions" in text


def test_unreadable_report_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    assert _main(["compare", str(bad)]) == 2
    assert "bad.json: cannot read the report" in capsys.readouterr().err
    assert _main(["compare", str(tmp_path / "absent.json")]) == 2


def _result(case_id: str, outcome: Outcome, section: str = "MS-MQDMPR 3.1.7.3.2") -> CaseResult:
    return CaseResult(case_id=case_id, title=case_id, sections=[section], level="MUST", outcome=outcome)


def test_a_case_missing_from_a_run_is_counted_or_listed(tmp_path: Path) -> None:
    a = RunResult("impl", [_result("c1", Outcome.passed), _result("c2", Outcome.passed, "MS-MQDMPR 3.1.1.2")])
    b = RunResult("impl", [_result("c1", Outcome.passed)])
    paths = [write_json(a, tmp_path / "a.json"), write_json(b, tmp_path / "b.json")]
    from harness.report.json_report import read_json

    runs = [(str(p), read_json(p)) for p in paths]
    assert compare(runs).rows and [r.case_id for r in compare(runs).rows] == ["c1"]  # by default: in both only
    assert compare(runs).only_in == [1, 0] and "[1] 1" in render_compare_text(compare(runs))
    comparison = compare(runs, include_missing=True)
    assert [impl.name for impl in comparison.implementations] == ["impl (a.json)", "impl (b.json)"]  # told apart
    assert [(r.case_id, r.outcomes) for r in comparison.ordered()] == [
        ("c2", ["passed", MISSING]),
        ("c1", ["passed", "passed"]),
    ]
    assert "c2" in render_compare_text(comparison).split("Agreements:")[0].split("In some runs only: 1")[1]
    assert '<td data-outcome="missing"><span class="badge b-missing">missing</span></td>' in render_compare_html(
        comparison
    )


def test_the_page_searches_and_filters_by_outcome_in_a_browser(tmp_path: Path) -> None:
    a = RunResult("one", [_result("dmpr.seek.fwd", Outcome.passed), _result("dmpr.purge.empty", Outcome.passed),
                          _result("mqqb.window", Outcome.passed, "MS-MQQB 3.1.7.1")])  # fmt: skip
    b = RunResult("two", [_result("dmpr.seek.fwd", Outcome.failed), _result("dmpr.purge.empty", Outcome.passed),
                          _result("mqqb.window", Outcome.passed, "MS-MQQB 3.1.7.1")])  # fmt: skip
    comparison = compare([("one", a), ("two", b)])
    actions = """
    <script>
    (function () {
      var form = document.getElementById("filters"), out = {formShown: !form.hidden};
      function shown() { var n = [], rows = document.querySelectorAll("tr.case-row");  // not hidden, nor inside hidden
        for (var i = 0; i < rows.length; i++) { if (!rows[i].closest("[hidden]")) { n.push(rows[i].dataset.case); } }
        return n.sort(); }
      var search = form.querySelector("input[type=search]");
      search.value = "purge"; search.dispatchEvent(new Event("input"));
      out.search = shown(); out.count = form.querySelector(".shown").textContent;
      out.opened = document.querySelector("details.agree[open]") !== null;
      search.value = ""; search.dispatchEvent(new Event("input"));
      var outcome = form.querySelector("select[name=outcome]");
      outcome.value = "failed"; outcome.dispatchEvent(new Event("change"));
      out.failed = shown();
      outcome.value = ""; outcome.dispatchEvent(new Event("change"));
      out.all = shown();
      var pre = document.createElement("pre"); pre.id = "measure"; pre.textContent = JSON.stringify(out);
      document.body.appendChild(pre);
    })();
    </script>
    """
    page = tmp_path / "compare.html"
    page.write_text(render_compare_html(comparison).replace("</body>", actions + "</body>"), encoding="utf-8")
    dom = chromium(page, tmp_path / "profile")
    found = re.search(r'<pre id="measure">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    measures = json.loads(html.unescape(found.group(1)))
    assert measures["formShown"]
    assert measures["search"] == ["dmpr.purge.empty"] and measures["count"] == "1 cases match"
    assert measures["opened"]  # its folded section opened
    assert measures["failed"] == ["dmpr.seek.fwd"]
    assert measures["all"] == ["dmpr.purge.empty", "dmpr.seek.fwd", "mqqb.window"]
