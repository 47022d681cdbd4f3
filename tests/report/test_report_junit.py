"""The JUnit XML report, read back with junitparser (a standard JUnit parser)."""

from __future__ import annotations

from pathlib import Path

from junitparser import Error, Failure, JUnitXml, Properties, Skipped, SystemOut, TestCase, TestSuite

from harness.report.junit import render_junit, write_junit
from harness.results import Outcome, RunResult


def _read(path: Path) -> list[TestSuite]:
    return list(JUnitXml.fromfile(str(path)))


def _cases(suites: list[TestSuite]) -> dict[str, TestCase]:
    return {case.name: case for suite in suites for case in suite}


def _case_properties(case: TestCase) -> list[tuple[str, str]]:
    props = case.child(Properties)
    return [(p.name, p.value) for p in props] if props is not None else []


def test_one_suite_one_testcase_per_variant(run: RunResult, tmp_path: Path) -> None:
    path = write_junit(run, tmp_path / "junit.xml")
    suites = _read(path)
    assert len(suites) == 1
    suite = suites[0]
    # failures: failed, xpass; skipped: xfail, not_applicable, unsupported; non_strict passes
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (10, 2, 1, 3)
    assert next((p.name, p.value) for p in suite.properties()) == ("target", "plugin:vendor.msmq:Impl")
    cases = _cases(suites)
    assert list(cases) == [r.case_id for r in run.results]
    # classname is the spec document and the case file, one dot (CI reporters split on the last
    # dot into package and class); name the full id (matrix values included)
    assert cases["dmpr.seek.fwd[peek=True]"].classname == "MS-MQDMPR.seek"
    assert cases["dmpr.dequeue.timeout"].classname == "MS-MQDMPR.cases"  # no case file known
    assert all(case.classname.count(".") == 1 for case in cases.values())
    assert cases["dmpr.dequeue.timeout"].time == 10.0
    assert ("spec", "MS-MQDMPR 3.1.7.1.9") in _case_properties(cases["dmpr.dequeue.timeout"])
    assert ("level", "SHOULD") in _case_properties(cases["mqmq.header.priority"])
    props = _case_properties(cases["dmpr.seek.fwd[peek=True]"])
    assert [v for k, v in props if k == "requirement"] == ["DMPR-SEEK-SKIP", "DMPR-STATE-LOCKED"]
    assert ("outcome", "failed") in props
    assert ("outcome", "non_strict") in _case_properties(cases["dmpr.cursor.waiting"])


def test_outcomes_map_to_junit_results(run: RunResult, tmp_path: Path) -> None:
    cases = _cases(_read(write_junit(run, tmp_path / "junit.xml")))
    assert cases["dmpr.seek.fwd[peek=False]"].is_passed
    assert cases["dmpr.cursor.peek"].is_passed

    (failure,) = cases["dmpr.seek.fwd[peek=True]"].result
    assert isinstance(failure, Failure)
    # message: the first failure's section, expected and observed; text: every failure
    assert failure.message == (
        "MS-MQDMPR 3.1.7.3.2 [DMPR-SEEK-SKIP, MUST]: step 0 (seek_available_message_position): "
        'rMessagePosition expected "m2", observed "m1"'
    )
    assert failure.text is not None
    assert (
        'MS-MQDMPR 3.1.1.11 [DMPR-STATE-LOCKED, MUST]: then: queues.q[0].State expected {"any_of": ["Locked", '
        '"Deleted"]}' in failure.text
    )
    assert "observed \"Available\"" in failure.text
    assert "0000  4c 49 4f 52  LIOR" in failure.text  # evidence

    (error,) = cases["dmpr.dequeue.timeout"].result
    assert isinstance(error, Error)
    assert error.message == "MS-MQDMPR 3.1.7.1.10: step 1 (dequeue_message): timed out after 10 s"
    assert error.text is not None and "\\x01 control" in error.text  # not XML-legal: written as \x01

    (xfail,) = cases["dmpr.purge.locked"].result
    assert isinstance(xfail, Skipped)  # why it is known, and how it fails, in one line
    assert xfail.message == (
        'known failure: MS-MQDMPR 3.1.7.1.9 [DMPR-ENQUEUE, MUST]: then: queues.q[1].State expected "PurgePending", '
        'observed "Deleted"'
    )
    (xpass,) = cases["dmpr.purge.empty"].result
    assert isinstance(xpass, Failure) and xpass.message == "known failure passed unexpectedly"
    (na,) = cases["mqqb.session.ack"].result
    assert isinstance(na, Skipped) and na.message == "not applicable: target lacks: peer-behaviour"
    (unsupported,) = cases["dmpr.move.subqueue"].result
    assert isinstance(unsupported, Skipped)
    assert unsupported.message == "unsupported: the target does not implement: move_message"

    # non_strict: passes, its difference in system-out
    soft = cases["dmpr.cursor.waiting"]
    assert soft.is_passed
    out = soft.child(SystemOut)
    assert out is not None and out.text is not None
    assert out.text.startswith("non_strict (a failure only under --strict)")
    assert 'MS-MQDMPR 3.2.7.2 [DMPR-PEEK-POSITION, interpretation]: step 1 (get_message_for_peek)' in out.text


def test_non_strict_is_a_failure_of_a_strict_run(run: RunResult, tmp_path: Path) -> None:
    run.strict = True
    suites = _read(write_junit(run, tmp_path / "junit.xml"))
    assert (suites[0].tests, suites[0].failures, suites[0].errors, suites[0].skipped) == (10, 3, 1, 3)
    (failure,) = _cases(suites)["dmpr.cursor.waiting"].result
    assert isinstance(failure, Failure) and failure.type == "non_strict"
    assert failure.message is not None and "[DMPR-PEEK-POSITION, interpretation]" in failure.message
    run.results = [r for r in run.results if r.outcome is not Outcome.non_strict]
    (suite,) = _read(write_junit(run, tmp_path / "junit2.xml"))
    assert suite.failures == 2


def test_one_suite_per_document(run: RunResult, tmp_path: Path) -> None:
    suites = _read(write_junit(run, tmp_path / "junit.xml", per_document=True))
    assert [s.name for s in suites] == ["msmq-harness MS-MQDMPR", "msmq-harness MS-MQQB", "msmq-harness MS-MQMQ"]
    assert [s.tests for s in suites] == [8, 1, 1]
    assert sum(s.failures for s in suites) == 2
    assert {c.name for c in suites[1]} == {"mqqb.session.ack"}


def test_escaping_and_empty_run(run: RunResult, tmp_path: Path, nasty: str) -> None:
    cases = _cases(_read(write_junit(run, tmp_path / "junit.xml")))
    assert ("title", f"Title with {nasty}") in _case_properties(cases["dmpr.dequeue.timeout"])
    empty = render_junit(RunResult(target="reference"))
    path = tmp_path / "empty.xml"
    path.write_text(empty, encoding="utf-8")
    (suite,) = _read(path)
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (0, 0, 0, 0)
