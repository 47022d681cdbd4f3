"""The pytest plugin: YAML cases as items, markers per spec section, outcomes, and the same
outcomes as ``harness.cases.runner.run`` (issue 4, acceptance 4: ``pytest cases/ -n 2``).

The in-process runs use pytester; the acceptance run is a real ``python -m pytest -n 2`` in a
subprocess, its ``--junitxml`` read back with junitparser.
"""

from __future__ import annotations

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
from tests.cases.casekit import (
    CORPUS,
    REQUIREMENTS,
    SHOULD_CASE,
    SHOULD_REQUIREMENT,
    case,
    plugin_args,
    write_cases,
)

pytest_plugins = ["pytester"]

# ================================================================================ in process
def test_items_markers_and_outcomes(pytester: pytest.Pytester) -> None:
    known = write_cases(pytester.path)
    pytester.makepyfile(test_ordinary="def test_ordinary():\n    assert True\n")
    (pytester.path / "data").mkdir()
    (pytester.path / "data" / "not_a_case.yaml").write_text("id: [this is not a case\n", encoding="utf-8")
    result = pytester.runpytest(*plugin_args(), "--strict-markers", "-rA", f"--msmq-known-failures={known}")
    # x.interp passes (non_strict, with a warning); nothing is deselected by level
    # the warnings counted are the plugin's (in process, pytest also warns of modules it cannot rewrite)
    warned = result.parseoutcomes()["warnings"]
    result.assert_outcomes(passed=4, failed=2, errors=1, skipped=1, xfailed=1, warnings=warned)
    assert result.stdout.str().count(": NonStrictWarning: ") == 1
    # one item per variant, named by the full id
    result.stdout.fnmatch_lines(
        [
            "PASSED cases/extra/seek.yaml::x.pass[[]peek=False[]]",
            "PASSED cases/extra/seek.yaml::x.pass[[]peek=True[]]",
            "PASSED cases/extra/seek.yaml::x.interp",
            "PASSED test_ordinary.py::test_ordinary",  # ordinary tests still run; data/*.yaml is not collected
        ]
    )
    out = result.stdout.str()
    # failures name the section, the requirement and its level, the value, expected and observed
    assert "x.fail: FAILED: MS-MQDMPR 3.1.7.3.2 [P-SEEK-HEAD, MUST]: step 0 (seek_available_message_position): " in out
    assert '      expected: "m2"\n      observed: "m1"' in out
    assert "section:  MS-MQDMPR 3.1.7.3.2" in out
    assert "requirement: P-SEEK-HEAD (MUST)" in out
    assert "[XPASS(strict)] known failure passed unexpectedly" in out
    assert "x.error: ERROR: MS-MQDMPR 3.1.7.1.6: step 0 (read_result" in out
    assert "unknown reader 'nobody'" in out
    assert re.search(r"SKIPPED \[1\] cases/extra/other.yaml:\d+: not applicable: the target lacks peer-behaviour", out)
    assert "XFAIL cases/extra/seek.yaml::x.known - known failure" in out
    # the non-strict case: a NonStrictWarning with its difference, graded by the interpretation
    assert "NonStrictWarning: x.interp: NON_STRICT: MS-MQDMPR 3.2.7.2 [P-PEEK-POSITION, interpretation]" in out
    assert "NON-STRICT MS-MQDMPR 3.2.7.2 [P-PEEK-POSITION, interpretation]: step 0 (get_message_for_peek)" in out


def test_non_strict_fails_under_msmq_strict(pytester: pytest.Pytester) -> None:
    write_cases(pytester.path)
    result = pytester.runpytest(*plugin_args(), "-k", "x.interp", "--msmq-strict")
    result.assert_outcomes(failed=1, deselected=7)
    out = result.stdout.str()
    assert "x.interp: NON_STRICT: MS-MQDMPR 3.2.7.2 [P-PEEK-POSITION, interpretation]: " in out
    assert "requirement: P-PEEK-POSITION (interpretation)" in out
    assert '      expected: "End"\n      observed: "<absent>"' in out
    assert "NonStrictWarning" not in out
    result = pytester.runpytest(*plugin_args(), "-k", "x.interp", "-W", "error::harness.pytest_plugin.NonStrictWarning")
    result.assert_outcomes(failed=1, deselected=7)  # the warning is a NonStrictWarning


def test_marker_per_spec_section_selects(pytester: pytest.Pytester) -> None:
    write_cases(pytester.path)
    args = [*plugin_args(), "--strict-markers", "--collect-only", "-q"]
    result = pytester.runpytest(*args, "-m", "spec_mqdmpr_3_1_7_1_6")
    result.stdout.fnmatch_lines(["cases/extra/other.yaml::x.error", "1/* tests collected (* deselected)*"])
    result = pytester.runpytest(*args, "-m", "spec_mqqb")
    result.stdout.fnmatch_lines(["cases/extra/other.yaml::x.wire", "1/* tests collected*"])
    # the level marker is the strongest level the case cites: a case graded by an interpretation
    # cites its frame too (a value no reading gives fails that MUST), so x.interp is msmq_must
    result = pytester.runpytest(*args, "-m", "spec_mqdmpr_3_2_7_2 and msmq_must")
    result.stdout.fnmatch_lines(["cases/extra/seek.yaml::x.interp", "1/* tests collected*"])
    result = pytester.runpytest(*args, "-m", "msmq_interpretation")
    result.stdout.fnmatch_lines(["no tests collected (8 deselected)*"])
    # a case that cites a SHOULD and nothing stronger is msmq_should
    with (pytester.path / "cases" / "requirements.yaml").open("a", encoding="utf-8") as out:
        out.write(SHOULD_REQUIREMENT)
    (pytester.path / "cases" / "extra" / "should.yaml").write_text(SHOULD_CASE, encoding="utf-8")
    result = pytester.runpytest(*args, "-m", "not msmq_must")
    result.stdout.fnmatch_lines(["cases/extra/should.yaml::x.should", "1/* tests collected (8 deselected)*"])
    result = pytester.runpytest(*args, "-m", "msmq_should and spec_mqqb_3_1_6_3")
    result.stdout.fnmatch_lines(["cases/extra/should.yaml::x.should", "1/* tests collected*"])
    assert spec_markers("MS-MQDMPR 3.1.7.3.2") == [
        "spec_mqdmpr",
        "spec_mqdmpr_3",
        "spec_mqdmpr_3_1",
        "spec_mqdmpr_3_1_7",
        "spec_mqdmpr_3_1_7_3",
        "spec_mqdmpr_3_1_7_3_2",
    ]


def test_pytest_markers_lists_the_section_markers_of_the_bundled_requirements(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*plugin_args(), "--markers")
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.spec(*sections):*",
            "@pytest.mark.msmq_must:*",
            "@pytest.mark.spec_mqdmpr_3_1_7_3_2: MSMQ conformance cases checking MS-MQDMPR 3.1.7.3.2 or a section*",
            "@pytest.mark.spec_mqqb_3_1_7_12: MSMQ conformance cases checking MS-MQQB 3.1.7.12 or a section*",
        ],
        consecutive=False,
    )


PARTIAL_TARGET = """\
from harness.cases.targets import ReferenceTarget


class PartialTarget(ReferenceTarget):
    def hello(self):
        info = super().hello()
        info.events = [e for e in info.events if e != "get_message_for_peek"]
        return info
"""


def test_an_event_the_target_does_not_implement_is_a_skip(pytester: pytest.Pytester) -> None:
    write_cases(pytester.path)
    pytester.makepyfile(partial_target=PARTIAL_TARGET)
    pytester.syspathinsert()
    result = pytester.runpytest(*plugin_args(), "-rs", "--msmq-target=plugin:partial_target:PartialTarget",
                                "-k", "x.interp or x.fixed")
    result.assert_outcomes(passed=1, skipped=1, deselected=6)
    assert re.search(
        r"SKIPPED \[1\] cases/extra/seek.yaml:\d+: unsupported: the target does not implement: get_message_for_peek",
        result.stdout.str(),
    )


def test_bad_case_file_is_a_collection_error_naming_file_and_line(pytester: pytest.Pytester) -> None:
    folder = pytester.path / "cases"
    folder.mkdir()
    (folder / "requirements.yaml").write_text(REQUIREMENTS, encoding="utf-8")
    bad = case("x.bad", "m1").replace("seek_available_message_position", "seek_availble")
    (folder / "bad.yaml").write_text(bad, encoding="utf-8")
    (folder / "good.yaml").write_text(case("x.good", "m1"), encoding="utf-8")
    unknown = case("x.unknown", "m1").replace("requirement: P-SEEK-HEAD", "requirement: P-SEEK")
    (folder / "unknown.yaml").write_text(unknown, encoding="utf-8")
    result = pytester.runpytest(*plugin_args())
    result.assert_outcomes(errors=2)  # a collection error interrupts the run, as pytest does
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting cases/bad.yaml*",
            f"{folder}/bad.yaml:10: when[[]0[]].event: unknown event 'seek_availble'*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting cases/unknown.yaml*",
            f"{folder}/unknown.yaml:4: spec[[]0[]].requirement: unknown requirement 'P-SEEK'*",
        ]
    )


def test_a_target_that_cannot_be_opened_stops_the_session(pytester: pytest.Pytester) -> None:
    write_cases(pytester.path)
    pytester.makepyfile(test_ordinary="def test_ordinary():\n    assert True\n")
    result = pytester.runpytest(*plugin_args(), "--msmq-target=nonsense")
    assert result.ret == 2
    out = result.stdout.str() + result.stderr.str()
    assert "msmq-harness: cannot make target 'nonsense'" in out
    assert "PASSED" not in out and "FAILED" not in out  # no case (nor any other test) ran
    assert "seek.yaml::" not in out


def test_a_target_that_cannot_be_opened_stops_even_a_session_that_continues_on_collection_errors(
    pytester: pytest.Pytester,
) -> None:
    write_cases(pytester.path)
    result = pytester.runpytest(*plugin_args(), "--msmq-target=nonsense", "--continue-on-collection-errors")
    assert result.ret == 2
    assert "seek.yaml::" not in result.stdout.str()


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
    # the two runs mostly wait on the [MS-MQQB] timers: the runner's runs while pytest's does
    out, err = tmp_path / "pytest.out", tmp_path / "pytest.err"
    with out.open("w") as out_file, err.open("w") as err_file:
        proc = subprocess.Popen(command, cwd=tmp_path, stdout=out_file, stderr=err_file)
    try:
        cases = select(load_paths([folder]))
        result = run(cases, "reference", workers=2, known_failures={"x.known", "x.fixed"}, strict=True)
        proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stdout, stderr = out.read_text(), err.read_text()
    # x.fail, x.fixed (xpass), x.error, and x.interp (non_strict under --msmq-strict)
    assert proc.returncode == 1, stdout[-3000:] + stderr[-3000:]
    assert stdout.count("bringing up nodes") >= 1  # xdist ran it
    runner_junit = write_junit(result, tmp_path / "runner.xml")

    from_pytest, from_runner = _kinds(pytest_junit), _kinds(runner_junit)
    assert len(from_runner) == len(cases) > 100  # the corpus and the extra cases
    assert from_pytest == from_runner
    outcomes = {r.case_id: str(r.outcome) for r in result.results}
    assert {k: outcomes[k] for k in ("x.fail", "x.known", "x.fixed", "x.error", "x.wire", "x.interp")} == {
        "x.fail": "failed",
        "x.known": "xfail",
        "x.fixed": "xpass",
        "x.error": "error",
        "x.wire": "not_applicable",
        "x.interp": "non_strict",  # a failure of this --msmq-strict run, in both
    }
    assert from_runner["x.interp"][0] == "failure"
    corpus = [r for r in result.results if r.source.startswith(str(folder / "corpus"))]
    assert corpus and all(r.outcome == "passed" for r in corpus)  # the corpus passes against the reference
