"""The pytest plugin: YAML cases as items, markers per spec section, outcomes, and the same
outcomes as ``harness.cases.runner.run`` (issue 4, acceptance 4: ``pytest cases/ -n 2``).

The in-process runs use pytester; the acceptance run is a real ``python -m pytest -n 2`` in a
subprocess, its ``--junitxml`` read back with junitparser.
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

from harness.cases.loader import load_paths
from harness.cases.runner import run, select
from harness.pytest_plugin import spec_markers
from harness.report.junit import write_junit

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "cases"


def plugin_args() -> list[str]:
    """Load the plugin: by its entry point once the package is installed with it, else by module.

    (Both at once would register the module twice, which pytest refuses.)
    """
    if importlib.metadata.entry_points(group="pytest11", name="msmq_harness"):
        return ["-p", "msmq_harness"]
    return ["-p", "harness.pytest_plugin"]


HEAD = """\
spec:
  - section: {section}
given:
  queues:
    - name: q
      messages: [{{id: m1}}, {{id: m2}}]
"""


def case(id: str, section: str, expect: str, *, extra: str = "", matrix: str = "") -> str:
    """A seek case on q = [m1, m2] expecting ``rMessagePosition: expect`` (m1 is what the reference returns)."""
    text = f"id: {id}\ntitle: {id} title\n{extra}" + HEAD.format(section=section)
    text += (
        "when:\n  - event: seek_available_message_position\n"
        "    args: {iInitialPosition: Start, iQueue: q, iPeekOperation: \"${peek}\"}\n"
        f"    expect: {{rMessagePosition: {expect}}}\n"
    )
    if "${peek}" in text and not matrix:
        text = text.replace('"${peek}"', "false")
    return text + matrix


ERROR_CASE = """\
id: x.error
title: the target errs on this step
spec:
  - section: MS-MQDMPR 3.1.7.1.5
when:
  - event: advance_clock
    args: {seconds: not-a-number}
"""

NOT_APPLICABLE_CASE = """\
id: x.wire
title: needs the simulated peer
spec:
  - section: MS-MQQB 3.1.5.8.1
requires: [peer-behaviour]
when:
  - event: advance_clock
    args: {seconds: 1}
"""


def write_cases(root: Path) -> Path:
    """A ``cases`` folder with every outcome; returns the known-failures file."""
    folder = root / "cases" / "extra"
    folder.mkdir(parents=True)
    docs = [
        case("x.pass", "MS-MQDMPR 3.1.7.3.2", "m1", matrix="matrix:\n  peek: [false, true]\n"),
        case("x.fail", "MS-MQDMPR 3.1.7.3.2", "m2"),
        case("x.known", "MS-MQDMPR 3.1.7.3.2", "m2", extra="tags: [known]\n"),
        case("x.fixed", "MS-MQDMPR 3.1.7.3.2", "m1"),
        case("x.should", "MS-MQDMPR 3.1.7.3.1", "m2", extra="level: SHOULD\n"),
        case("x.may", "MS-MQDMPR 3.1.7.3.1", "m1", extra="level: MAY\n"),
    ]
    (folder / "seek.yaml").write_text("---\n".join(docs), encoding="utf-8")
    (folder / "other.yaml").write_text(ERROR_CASE + "---\n" + NOT_APPLICABLE_CASE, encoding="utf-8")
    known = root / "known_failures.txt"
    known.write_text("# deviations of this target\nx.known\nx.fixed  # fixed since\n", encoding="utf-8")
    return known


# ================================================================================ in process
def test_items_markers_and_outcomes(pytester: pytest.Pytester) -> None:
    known = write_cases(pytester.path)
    pytester.makepyfile(test_ordinary="def test_ordinary():\n    assert True\n")
    (pytester.path / "data").mkdir()
    (pytester.path / "data" / "not_a_case.yaml").write_text("id: [this is not a case\n", encoding="utf-8")
    result = pytester.runpytest(*plugin_args(), "--strict-markers", "-rA", f"--msmq-known-failures={known}")
    result.assert_outcomes(passed=3, failed=2, errors=1, skipped=1, xfailed=1, deselected=2)
    # one item per variant, named by the full id
    result.stdout.fnmatch_lines(
        [
            "PASSED cases/extra/seek.yaml::x.pass[[]peek=False[]]",
            "PASSED cases/extra/seek.yaml::x.pass[[]peek=True[]]",
            "PASSED test_ordinary.py::test_ordinary",  # ordinary tests still run; data/*.yaml is not collected
        ]
    )
    out = result.stdout.str()
    # failures name the section, the value, expected and observed
    assert "x.fail: FAILED: MS-MQDMPR 3.1.7.3.2: step 0 (seek_available_message_position): " in out
    assert '      expected: "m2"\n      observed: "m1"' in out
    assert "section:  MS-MQDMPR 3.1.7.3.2" in out
    assert "[XPASS(strict)] known failure passed unexpectedly" in out
    assert "x.error: ERROR: MS-MQDMPR 3.1.7.1.5: step 0 (advance_clock" in out
    assert "seconds must be a number" in out
    assert re.search(r"SKIPPED \[1\] cases/extra/other.yaml:\d+: not applicable: target lacks: peer-behaviour", out)
    assert "XFAIL cases/extra/seek.yaml::x.known - known failure" in out


def test_marker_per_spec_section_selects(pytester: pytest.Pytester) -> None:
    write_cases(pytester.path)
    args = [*plugin_args(), "--strict-markers", "--collect-only", "-q"]
    result = pytester.runpytest(*args, "-m", "spec_mqdmpr_3_1_7_1_5")
    result.stdout.fnmatch_lines(["cases/extra/other.yaml::x.error", "1/* tests collected (* deselected)*"])
    result = pytester.runpytest(*args, "-m", "spec_mqqb")
    result.stdout.fnmatch_lines(["cases/extra/other.yaml::x.wire", "1/* tests collected*"])
    result = pytester.runpytest(*args, "--msmq-strict", "-m", "spec_mqdmpr_3_1_7_3 and not msmq_must")
    result.stdout.fnmatch_lines(["cases/extra/seek.yaml::x.should", "1/* tests collected*"])
    assert spec_markers("MS-MQDMPR 3.1.7.3.2") == [
        "spec_mqdmpr",
        "spec_mqdmpr_3",
        "spec_mqdmpr_3_1",
        "spec_mqdmpr_3_1_7",
        "spec_mqdmpr_3_1_7_3",
        "spec_mqdmpr_3_1_7_3_2",
    ]


def test_levels_follow_strict_and_keyword(pytester: pytest.Pytester) -> None:
    write_cases(pytester.path)
    result = pytester.runpytest(*plugin_args(), "--collect-only", "-q", "--msmq-strict")
    assert "x.should" in result.stdout.str() and "x.may" not in result.stdout.str()
    result = pytester.runpytest(*plugin_args(), "--collect-only", "-q", "-k", "x.may")
    result.stdout.fnmatch_lines(["cases/extra/seek.yaml::x.may", "1/* tests collected*"])


def test_bad_case_file_is_a_collection_error_naming_file_and_line(pytester: pytest.Pytester) -> None:
    folder = pytester.path / "cases"
    folder.mkdir()
    bad = case("x.bad", "MS-MQDMPR 3.1.7.3.2", "m1").replace("seek_available_message_position", "seek_availble")
    (folder / "bad.yaml").write_text(bad, encoding="utf-8")
    (folder / "good.yaml").write_text(case("x.good", "MS-MQDMPR 3.1.7.3.2", "m1"), encoding="utf-8")
    result = pytester.runpytest(*plugin_args())
    result.assert_outcomes(errors=1)  # a collection error interrupts the run, as pytest does
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting cases/bad.yaml*",
            f"{folder}/bad.yaml:10: when[[]0[]].event: unknown event 'seek_availble'*",
        ]
    )


def test_unknown_target_errors_every_case(pytester: pytest.Pytester) -> None:
    write_cases(pytester.path)
    result = pytester.runpytest(*plugin_args(), "--msmq-target=nonsense", "-k", "x.pass")
    result.assert_outcomes(errors=2, deselected=7)
    assert "cannot make target 'nonsense'" in result.stdout.str()


# ================================================================================ acceptance 4
def _kinds(path: Path) -> dict[str, tuple[str, str]]:
    """testcase name -> (passed | failure | error | skipped, skip message), from a JUnit file."""
    out = {}
    for suite in JUnitXml.fromfile(str(path)):
        for testcase in suite:
            kind, message = "passed", ""
            for res in testcase.result:
                if isinstance(res, Error):
                    kind = "error"
                elif isinstance(res, Failure):
                    kind = "failure"
                elif isinstance(res, Skipped):
                    kind, message = "skipped", res.message or ""
            assert testcase.name not in out, f"duplicate {testcase.name}"
            out[testcase.name] = (kind, message)
    return out


def test_pytest_n2_and_runner_give_the_same_outcomes(tmp_path: Path) -> None:
    known = write_cases(tmp_path)
    shutil.copytree(CORPUS, tmp_path / "cases" / "corpus")
    folder = tmp_path / "cases"
    pytest_junit = tmp_path / "pytest.xml"
    command = [
        sys.executable, "-m", "pytest", *plugin_args(), "cases", "-n", "2", "-p", "no:cacheprovider",
        "--strict-markers", "--msmq-strict", f"--msmq-known-failures={known}", f"--junitxml={pytest_junit}", "-q",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]  # x.fail, x.fixed (xpass), x.error
    assert done.stdout.count("bringing up nodes") >= 1  # xdist ran it

    cases = select(load_paths([folder]), strict=True)
    result = run(cases, "reference", workers=2, known_failures={"x.known", "x.fixed"})
    runner_junit = write_junit(result, tmp_path / "runner.xml")

    from_pytest, from_runner = _kinds(pytest_junit), _kinds(runner_junit)
    assert len(from_runner) == len(cases) > 100  # the corpus and the extra cases, SHOULD included
    assert from_pytest == from_runner
    outcomes = {r.case_id: str(r.outcome) for r in result.results}
    assert {k: outcomes[k] for k in ("x.fail", "x.known", "x.fixed", "x.error", "x.wire", "x.should")} == {
        "x.fail": "failed",
        "x.known": "xfail",
        "x.fixed": "xpass",
        "x.error": "error",
        "x.wire": "not_applicable",
        "x.should": "failed",
    }
    corpus = [r for r in result.results if r.source.startswith(str(folder / "corpus"))]
    assert corpus and all(r.outcome == "passed" for r in corpus)  # the corpus passes against the reference
