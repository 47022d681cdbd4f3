"""Verdicts: each expectation graded by its requirement's level, outcomes, accounting, exit codes.

Renders the acceptance of docs/cases.md "Requirements and grading", "Outcomes" and "Exit
codes": each expectation is attributed to one requirement; a difference from a MUST requirement
is ``failed``, from a SHOULD or MAY ``non_strict`` (a failure only under ``--strict``); under an
interpretation, the value another reading gives is ``non_strict`` and a value no reading gives
fails the interpretation's frame; an event the target declared it does not implement is
``unsupported``; a failure counts once, under the requirement and the section it broke;
``msmq-harness run`` exits 0, 1, 2 (usage or configuration, before any case runs) or 5 (nothing
ran).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from harness.cases.execute import ConfigurationError
from harness.cases.lines import CaseError
from harness.cases.loader import load_paths
from harness.cases.runner import run
from harness.cli import main
from harness.results import Outcome

REQUIREMENTS = """\
- id: T-SEEK-HEAD
  section: MS-MQDMPR 3.1.7.3.2
  level: MUST
  quote: If iInitialPosition is Start, set iIterator to iQueue.MessagePositionList.Head.
- id: T-SEEK-NEXT
  section: MS-MQDMPR 3.1.7.3.2
  level: MUST
  quote: Otherwise, set iIterator to iInitialPosition.Next.
- id: T-SEEK-READING
  section: MS-MQDMPR 3.1.7.3.2
  level: interpretation
  frame: DMPR-3.1.7.3.2-PROCESSING
  quote: The End position indicates that no message was available.
  alternatives:
    - {name: end, reading: a seek that finds nothing returns End}
    - {name: start, reading: "a backward seek that finds nothing returns Start, where its walk stops"}
- id: T-ENQ-SHOULD
  section: MS-MQDMPR 3.1.7.1.9
  level: SHOULD
  quote: The message SHOULD be inserted in priority order.
- id: DMPR-3.1.7.3.2-PROCESSING
  section: MS-MQDMPR 3.1.7.3.2
  level: MUST
  quote: "The queue manager MUST perform the following actions to process this event:"
"""

# The reference returns m1 for a forward seek from Start on [m1, m2]; a seek that finds nothing
# returns End forward (the reading ``end`` of T-SEEK-READING) and Start backward (the reading
# ``start``: against these cases, the reference takes another reading than the first).  Each case
# below expects something, attributed to one requirement: the one the case cites in the step's
# section, the expectation's own, or the frame of the interpretation whose readings it gives.
READINGS = "{readings: {end: End, start: Start}, requirement: T-SEEK-READING}"
CASES = """\
id: t.must-ok
title: seek from Start returns the Head
spec: [{section: MS-MQDMPR 3.1.7.3.2, requirement: T-SEEK-HEAD}]
given: {queues: [{name: q, messages: [{id: m1}, {id: m2}]}]}
when:
  - event: seek_available_message_position
    args: {iInitialPosition: Start, iQueue: q, iPeekOperation: false, iSeekDirection: Forward}
    expect: {rMessagePosition: m1}
---
id: t.must-broken
title: a MUST difference fails
spec: [{section: MS-MQDMPR 3.1.7.3.2, requirement: T-SEEK-HEAD}]
given: {queues: [{name: q, messages: [{id: m1}, {id: m2}]}]}
when:
  - event: seek_available_message_position
    args: {iInitialPosition: Start, iQueue: q, iPeekOperation: false, iSeekDirection: Forward}
    expect: {rMessagePosition: m2}
---
id: t.interpretation-first-reading
title: the value the interpretation's first reading gives passes
spec: [{section: MS-MQDMPR 3.1.7.3.2, requirement: T-SEEK-READING}]
given: {queues: [{name: q}]}
when:
  - event: seek_available_message_position
    args: {iInitialPosition: Start, iQueue: q, iPeekOperation: false, iSeekDirection: Forward}
    expect: {rMessagePosition: READINGS}
---
id: t.interpretation-another-reading
title: the value another reading gives is non-strict, under the interpretation
spec: [{section: MS-MQDMPR 3.1.7.3.2, requirement: T-SEEK-READING}]
given: {queues: [{name: q}]}
when:
  - event: seek_available_message_position
    args: {iInitialPosition: End, iQueue: q, iPeekOperation: false, iSeekDirection: Backward}
    expect: {rMessagePosition: READINGS}
---
id: t.interpretation-no-reading
title: a value no reading gives fails the interpretation's frame
spec: [{section: MS-MQDMPR 3.1.7.3.2, requirement: T-SEEK-READING}]
given: {queues: [{name: q, messages: [{id: m1}, {id: m2}]}]}
when:
  - event: seek_available_message_position
    args: {iInitialPosition: Start, iQueue: q, iPeekOperation: false, iSeekDirection: Forward}
    expect: {rMessagePosition: READINGS}
---
id: t.mixed
title: the worst grade of a step's differences is the case's outcome
spec:
  - {section: MS-MQDMPR 3.1.7.3.2, requirement: T-SEEK-NEXT}
given: {queues: [{name: q}]}
when:
  - event: seek_available_message_position
    args: {iInitialPosition: End, iQueue: q, iPeekOperation: false, iSeekDirection: Backward}
    expect:
      rMessagePosition: READINGS
      rStatus: {is: 7, requirement: T-SEEK-HEAD}
---
id: t.should
title: a SHOULD difference in the final state is non-strict
spec: [{section: MS-MQDMPR 3.1.7.1.9, requirement: T-ENQ-SHOULD}]
given: {queues: [{name: q, messages: [{id: m1}, {id: m2}]}]}
when:
  - event: seek_available_message_position
    args: {iInitialPosition: Start, iQueue: q, iPeekOperation: true, iSeekDirection: Forward}
then:
  queues:
    q: [{message: m2}, {message: m1}]
""".replace("READINGS", READINGS)


def _cases_folder(tmp_path: Path, name: str, text: str) -> Path:
    """A cases folder with the requirements above and one case file."""
    folder = tmp_path / "cases"
    folder.mkdir()
    (folder / "requirements.yaml").write_text(REQUIREMENTS)
    (folder / name).write_text(text)
    return folder


FIRST_CASE = CASES.split("---\n")[0]


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    return _cases_folder(tmp_path, "seek.yaml", CASES)


def _outcomes(folder: Path, strict: bool = False) -> dict[str, Outcome]:
    result = run(load_paths([folder]), "reference", strict=strict)
    return {r.case_id: r.outcome for r in result.results}


def test_each_difference_is_graded_by_the_level_of_its_requirement(corpus: Path) -> None:
    assert _outcomes(corpus) == {
        "t.must-ok": Outcome.passed,
        "t.must-broken": Outcome.failed,
        "t.interpretation-first-reading": Outcome.passed,
        "t.interpretation-another-reading": Outcome.non_strict,
        "t.interpretation-no-reading": Outcome.failed,
        "t.mixed": Outcome.failed,
        "t.should": Outcome.non_strict,
    }


def test_failures_name_their_requirement_and_count_once_under_it(corpus: Path) -> None:
    result = run(load_paths([corpus]), "reference")
    by_id = {r.case_id: r for r in result.results}
    mixed = by_id["t.mixed"]
    assert {(f.field, f.requirement, f.level, f.reading) for f in mixed.failures} == {
        ("rMessagePosition", "T-SEEK-READING", "interpretation", "start"),
        ("rStatus", "T-SEEK-HEAD", "MUST", ""),
    }
    broken = by_id["t.must-broken"].failures
    assert [(f.requirement, f.level, f.section) for f in broken] == [("T-SEEK-HEAD", "MUST", "MS-MQDMPR 3.1.7.3.2")]
    # another reading: non-strict under the interpretation, with the reading's name
    [other] = by_id["t.interpretation-another-reading"].failures
    assert (other.requirement, other.level, other.interpretation, other.reading) == (
        "T-SEEK-READING", "interpretation", "T-SEEK-READING", "start")
    assert [(r["name"], r["matched"]) for r in other.readings] == [("end", False), ("start", True)]
    # no reading: failed under the frame, a MUST, naming the interpretation
    [none] = by_id["t.interpretation-no-reading"].failures
    assert (none.requirement, none.level, none.section, none.interpretation, none.reading) == (
        "DMPR-3.1.7.3.2-PROCESSING", "MUST", "MS-MQDMPR 3.1.7.3.2", "T-SEEK-READING", "")
    assert none.observed == "m1" and not any(r["matched"] for r in none.readings)
    sections = result.by_section()
    assert sum(sections["MS-MQDMPR 3.1.7.3.2"].values()) == 6
    assert sections["MS-MQDMPR 3.1.7.1.9"] == {"non_strict": 1}
    reqs = result.by_requirement()
    assert reqs["T-SEEK-READING"]["non_strict"] == 1  # another-reading
    assert reqs["T-SEEK-READING"]["failed"] == 1  # mixed: its other difference is a MUST
    assert reqs["T-SEEK-HEAD"]["failed"] == 2  # must-broken and mixed, once each
    assert reqs["DMPR-3.1.7.3.2-PROCESSING"]["failed"] == 1  # no-reading, under the frame
    assert "T-SEEK-NEXT" not in reqs  # t.mixed broke other requirements than the one it cites


FAILING = ("t.must-broken", "t.mixed", "t.interpretation-no-reading")


def test_strict_makes_non_strict_fail_the_run(corpus: Path) -> None:
    cases = [c for c in load_paths([corpus]) if c.id not in FAILING]
    assert run(cases, "reference").ok
    strict = run(cases, "reference", strict=True)
    assert not strict.ok
    assert {r.outcome for r in strict.results} == {Outcome.passed, Outcome.non_strict}


def test_an_unknown_requirement_id_is_a_load_error_at_its_line(tmp_path: Path) -> None:
    text = FIRST_CASE.replace(
        "expect: {rMessagePosition: m1}", "expect: {rMessagePosition: {is: m1, requirement: T-SEEK-HAED}}"
    )
    folder = _cases_folder(tmp_path, "bad.yaml", text)
    with pytest.raises(CaseError) as err:
        load_paths([folder])
    assert err.value.line == 8
    assert "T-SEEK-HAED" in err.value.message and "T-SEEK-HEAD" in err.value.message  # did you mean


def test_a_spec_reference_under_another_section_is_a_load_error(tmp_path: Path) -> None:
    folder = _cases_folder(tmp_path, "bad.yaml", FIRST_CASE.replace("3.1.7.3.2, requirement", "3.1.7.3.1, requirement"))
    with pytest.raises(CaseError) as err:
        load_paths([folder])
    assert (err.value.line, err.value.key) == (3, "spec[0].section")


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ("  level: interpretation\n  quote: q\n", "at least two alternatives"),
        ("  level: MUST\n  quote: q\n  alternatives: [{name: a, reading: x}, {name: b, reading: y}]\n", "only an"),
        ("  level: OUGHT\n  quote: q\n", "is not one of"),
        ("  level: MUST\n", "missing required key 'quote'"),
    ],
)
def test_bad_requirements_are_load_errors(tmp_path: Path, entry: str, words: str) -> None:
    from harness.cases.loader import load_requirements

    path = tmp_path / "requirements.yaml"
    path.write_text("- id: X-1\n  section: MS-MQDMPR 3.1.1\n" + entry)
    with pytest.raises(CaseError) as err:
        load_requirements(path)
    assert words in err.value.message


# ------------------------------------------------------------------------------ unsupported
ADAPTER_WITHOUT_SEEK = """\
import json, sys
sys.path.insert(0, {root!r})
from examples.reference_adapter import handle
from harness.cases.targets.reference import ReferenceTarget
target = ReferenceTarget()
for line in sys.stdin:
    request = json.loads(line)
    reply = handle(target, request)
    if reply is None:
        break
    if request.get("op") == "hello":
        reply["events"] = [e for e in reply["events"] if e != "seek_available_message_position"]
    print(json.dumps(reply), flush=True)
"""


def test_an_event_the_target_does_not_declare_is_unsupported_not_failed(corpus: Path, tmp_path: Path) -> None:
    adapter = tmp_path / "adapter.py"
    adapter.write_text(ADAPTER_WITHOUT_SEEK.format(root=str(Path(__file__).resolve().parents[2])))
    result = run(load_paths([corpus]), f"cmd:{sys.executable} {adapter}")
    assert {r.outcome for r in result.results} == {Outcome.unsupported}
    assert all("seek_available_message_position" in r.detail for r in result.results)
    assert result.ok and result.ran == 0


# ------------------------------------------------------------------------------ exit codes
def test_exit_0_when_all_passed_and_non_strict_allowed(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(corpus), "-k", "not must-broken and not mixed and not no-reading"]) == 0
    out = capsys.readouterr().out
    assert "Non-strict" in out and "[T-SEEK-READING, interpretation]" in out
    assert out.rstrip().splitlines()[-1].startswith("PASSED")


def test_exit_1_on_a_must_failure_and_on_non_strict_under_strict(corpus: Path) -> None:
    assert main(["run", str(corpus)]) == 1
    assert main(["run", str(corpus), "-k", "interpretation", "--strict"]) == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["--target", "plugin:no_such_module:Impl"],
        ["--target", "martian:whatever"],
        ["-k", "seek and ("],
        ["--json", "/proc/no/such/dir/r.json"],
        ["--known-failures", "/no/such/known-failures.txt"],
    ],
    ids=["bad-plugin", "unknown-kind", "bad-k", "unwritable-report", "missing-known-failures"],
)
def test_exit_2_on_a_usage_or_configuration_error_before_any_case(
    corpus: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(corpus), *argv]) == 2
    captured = capsys.readouterr()
    assert "msmq-harness run:" in captured.err
    assert "cases in" not in captured.out  # no case ran


def test_exit_2_for_a_missing_case_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "nope.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_exit_2_when_the_adapter_does_not_answer_hello(corpus: Path, tmp_path: Path) -> None:
    silent = tmp_path / "silent.py"
    silent.write_text("import sys, time\nsys.stdin.readline()\ntime.sleep(30)\n")
    argv = ["run", str(corpus), "--target", f"cmd:{sys.executable} {silent}", "--step-timeout", "1"]
    assert main(argv) == 2
    with pytest.raises(ConfigurationError, match="hello"):
        run(load_paths([corpus]), f"cmd:{sys.executable} {silent}", step_timeout=1)


def test_exit_5_when_nothing_ran(corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["run", str(empty)]) == 5
    assert main(["run", str(corpus), "--spec", "MS-MQDPMR 3.1"]) == 5  # a typo selects nothing
    assert main(["run", str(corpus), "-k", "no-such-case"]) == 5
    assert "nothing ran" in capsys.readouterr().err


def test_exit_5_when_every_case_is_excluded_by_the_target(corpus: Path, tmp_path: Path) -> None:
    adapter = tmp_path / "adapter.py"
    adapter.write_text(ADAPTER_WITHOUT_SEEK.format(root=str(Path(__file__).resolve().parents[2])))
    report = tmp_path / "r.json"
    assert main(["run", str(corpus), "--target", f"cmd:{sys.executable} {adapter}", "--json", str(report)]) == 5
    data = json.loads(report.read_text())
    assert data["counts"] == {"unsupported": 7}


def test_exit_5_when_every_wire_case_is_not_applicable(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.peers import SimulatedPeer

    faults = Path(__file__).resolve().parents[2] / "cases" / "mqqb" / "faults.yaml"
    with SimulatedPeer("127.0.0.1", 0, ping_port=None) as peer:
        # fault behaviours need the simulated peer: against a live acceptor none of them applies
        argv = [
            "run",
            str(faults),
            "-k",
            "fault.refuse or fault.bad-reply-header",
            "--target",
            f"mqqb://127.0.0.1:{peer.address[1]}",
        ]
        assert main(argv) == 5
    out = capsys.readouterr().out
    assert re.search(r"^NOTHING RAN: \d+ not_applicable$", out, re.M), out


def test_exit_2_when_nothing_listens_at_a_live_target(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    faults = Path(__file__).resolve().parents[2] / "cases" / "mqqb" / "faults.yaml"
    with socket.socket() as s:  # bound, not listening: connections are refused, no one else takes the port
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        assert main(["run", str(faults), "--target", f"mqqb://127.0.0.1:{port}"]) == 2
    assert "nothing accepts TCP connections" in capsys.readouterr().err


def test_the_corpus_requirements_quote_the_spec_and_interpretations_name_readings() -> None:
    from harness.cases.loader import BUNDLED_REQUIREMENTS, load_requirements
    from harness.cases.model import Level

    raw = BUNDLED_REQUIREMENTS.read_text()
    assert "\n  text:" not in raw, "every requirement quotes the spec (quote:), none paraphrases it (text:)"
    for req in load_requirements(BUNDLED_REQUIREMENTS):
        assert req.quote
        if req.level is Level.interpretation:
            assert len(req.alternatives) >= 2, req.id


# ------------------------------------------------------------------------------ the corpus
# The points where [MS-MQDMPR] is silent or contradicts itself that the corpus once asserted at
# MUST level: each must be an interpretation now, with its readings.
SPEC_SILENT = (
    "DMPR-3.1.1.2-END-NEXT",  # End.Next: a cursor parked on End after a timed-out receive
    "DMPR-3.1.7.1.10-HEAD",  # a receive without cursor starts at the Head, or at Head.Next
    "DMPR-3.1.7.1.15-HEAD",  # the same for a peek
    "DMPR-3.1.7.3.2-BWD-START",  # a backward miss returns Start (the walk) or End (Return Value)
    "DMPR-3.1.7.3.1-FAILED-STATUS",  # the MQ status of a wait that fails
    "DMPR-3.1.7.3.3-CURRENT-RECEIVE",  # SeekCurrent without peek on a position not Available
    "DMPR-3.1.7.1.13-END",  # read by lookup id reaching End
    "DMPR-3.1.7.2.2-TOTALBYTES",  # TotalBytes re-added when a Locked position is Available again
)


def _corpus() -> tuple[list, dict]:
    from harness.cases.loader import BUNDLED_REQUIREMENTS, load_requirements
    cases = load_paths([BUNDLED_REQUIREMENTS.parent])
    return cases, {r.id: r for r in load_requirements(BUNDLED_REQUIREMENTS)}


def test_a_must_requirement_quotes_the_words_that_make_it_one() -> None:
    _, requirements = _corpus()
    normative = re.compile(r"\b(MUST|SHALL|REQUIRED)\b")
    weak = [r.id for r in requirements.values() if str(r.level) == "MUST" and not normative.search(r.quote)]
    assert not weak, f"MUST requirements whose quote has no MUST: {weak}"
    for r in requirements.values():
        if str(r.level) in ("SHOULD", "MAY"):
            assert str(r.level) in r.quote, r.id


def test_no_expectation_rests_on_an_interpretation_at_must_level() -> None:
    from harness.cases.grading import attribute
    from harness.cases.model import Level
    from harness.cases.violations import watched_rules

    cases, requirements = _corpus()
    for rid in SPEC_SILENT:
        assert requirements[rid].level is Level.interpretation, rid
    used: dict[str, int] = {}
    for case in cases:
        for step in case.when:
            for name, expected in (step.expect or {}).items():
                rid, level = attribute(case, step, expected)
                assert requirements[rid].level is level, (case.full_id, name)
                used[rid] = used.get(rid, 0) + 1
        for rid in case.requirements:
            used.setdefault(rid, 0)
        for rid in watched_rules(case):  # a session rule its then.peer.violations grades when it is broken
            used.setdefault(rid, 0)
    interpretations = [r for r in requirements.values() if r.level is Level.interpretation]
    assert interpretations
    for r in interpretations:
        # every interpretation is checked by some case, and only where graded by it (non-strict)
        assert r.id in used, f"{r.id}: no case cites or watches it"
        assert len(r.alternatives) >= 2, r.id


def test_a_case_cites_requirement_ids_and_never_copies_their_text(tmp_path: Path) -> None:
    text = FIRST_CASE.replace(
        "requirement: T-SEEK-HEAD}]", "requirement: T-SEEK-HEAD, text: Set iIterator to the Head.}]"
    )
    folder = _cases_folder(tmp_path, "bad.yaml", text)
    with pytest.raises(CaseError) as err:
        load_paths([folder])
    assert (err.value.line, err.value.key) == (3, "spec[0].text")
    assert "unknown key 'text'" in err.value.message
