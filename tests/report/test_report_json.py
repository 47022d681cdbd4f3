"""The JSON report: RunResult.to_dict() shape, one record per case, plus run metadata."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from harness.report.json_report import FORMAT, load_schema, read_json, write_json
from harness.results import Outcome, RunResult, StepFailure

#: the readings of the non-strict difference (DMPR-PEEK-POSITION): the target took the second
READINGS = [
    {"name": "end", "expected": "End", "reading": "Without Succeeded rPosition is End.", "matched": False},
    {"name": "absent", "expected": "absent", "reading": "Without Succeeded no rPosition.", "matched": True},
]


def test_shape(run: RunResult, tmp_path: Path, expected_rows: list[tuple[str, str, dict[str, int]]]) -> None:
    # a non-strict difference under an interpretation names the reading the observed value is
    soft_failure = run.results[8].failures[0]
    assert soft_failure.requirement == "DMPR-PEEK-POSITION"
    soft_failure.interpretation, soft_failure.reading = "DMPR-PEEK-POSITION", "absent"
    soft_failure.readings = [dict(r) for r in READINGS]
    path = write_json(run, tmp_path / "results.json", metadata={"corpus": "cases/"})
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == FORMAT
    assert {"generated", "harness_version", "python", "host"} <= set(data)
    assert data["corpus"] == "cases/"
    assert data["target"] == "plugin:vendor.msmq:Impl"
    assert data["duration"] == 10.1
    assert (data["ok"], data["strict"]) == (False, False)
    assert data["counts"] == {
        "passed": 3, "failed": 1, "error": 1, "xfail": 1, "xpass": 1, "not_applicable": 1, "non_strict": 1,
        "unsupported": 1,
    }  # fmt: skip
    # by_section sorted by document, then numerically; a case with differences only under the
    # sections of the requirements it broke
    assert [(section, counts) for section, counts in data["by_section"].items()] == [
        (section, counts) for _, section, counts in expected_rows
    ]
    # by_requirement: a difference under the requirement it broke, once per case
    assert data["by_requirement"] == {
        "DMPR-CURSOR-DEQUEUE": {"passed": 1},
        "DMPR-DEQUEUE-TIMEOUT": {"error": 1},
        "DMPR-ENQUEUE": {"error": 1, "xfail": 1, "xpass": 1},
        "DMPR-MOVE": {"unsupported": 1},
        "DMPR-PEEK-POSITION": {"non_strict": 1},
        "DMPR-SEEK-SKIP": {"passed": 1, "failed": 1},
        "DMPR-STATE-LOCKED": {"failed": 1},
        "MQMQ-PRIORITY": {"passed": 1},
        "MQQB-SESSION-ACK": {"not_applicable": 1},
    }

    records = data["results"]
    assert len(records) == len(run.results)
    # one record per case, to_dict() shape, plus why it did not pass (harness.report.explain)
    assert [{k: v for k, v in r.items() if k != "explanations"} for r in records] == [
        r.to_dict() for r in run.results
    ]
    assert [len(r["explanations"]) for r in records] == [0, 2, 1, 1, 1, 0, 0, 0, 1, 0]
    failed = records[1]
    assert failed["case_id"] == "dmpr.seek.fwd[peek=True]"
    assert failed["sections"] == ["MS-MQDMPR 3.1.7.3.2", "MS-MQDMPR 3.1.1.11"]
    assert failed["outcome"] == "failed"
    assert failed["duration"] == 0.003
    assert failed["requirements"] == ["DMPR-SEEK-SKIP", "DMPR-STATE-LOCKED"]
    assert failed["failures"][0] == {
        "step": 0,
        "event": "seek_available_message_position",
        "field": "rMessagePosition",
        "expected": "m2",
        "observed": "m1",
        "section": "MS-MQDMPR 3.1.7.3.2",
        "message": "step 0 (seek_available_message_position): rMessagePosition expected m2, observed m1",
        "evidence": "",
        "requirement": "DMPR-SEEK-SKIP",
        "level": "MUST",
        "quote": "",
        "inputs": {},
        "line": 0,
        # graded by a MUST, not by an interpretation's readings
        "interpretation": "",
        "reading": "",
        "readings": [],
    }
    explained = failed["explanations"][0]
    assert (explained["where"], explained["event"], explained["field"]) == (
        "step 0", "seek_available_message_position", "rMessagePosition")
    assert (explained["interpretation"], explained["reading"], explained["readings"]) == ("", "", [])
    assert "readings" not in [label for label, _ in explained["rows"]]
    assert (explained["expected_text"], explained["observed_text"]) == ('"m2"', '"m1"')
    assert ["at", "cases/mqdmpr/seek.yaml:1, step 0: seek_available_message_position"] in explained["rows"]
    assert failed["failures"][1]["expected"] == {"any_of": ["Locked", "Deleted"]}
    soft = records[8]
    assert (soft["outcome"], soft["failures"][0]["requirement"], soft["failures"][0]["level"]) == (
        "non_strict", "DMPR-PEEK-POSITION", "interpretation")
    assert (soft["failures"][0]["interpretation"], soft["failures"][0]["reading"]) == ("DMPR-PEEK-POSITION", "absent")
    assert soft["failures"][0]["readings"] == READINGS
    (why,) = soft["explanations"]
    assert (why["interpretation"], why["reading"], why["readings"]) == ("DMPR-PEEK-POSITION", "absent", READINGS)
    assert [
        "readings",
        "DMPR-PEEK-POSITION: the readings the spec allows, and what each gives\n"
        "- end (the reading the corpus checks): End\n"
        "- absent: absent <- observed",
    ] in why["rows"]
    jsonschema.Draft202012Validator(load_schema()).validate(data)  # the new keys are the schema's


def test_a_strict_run_with_a_non_strict_case_is_not_ok(run: RunResult, tmp_path: Path) -> None:
    run.results = [r for r in run.results if r.outcome in (Outcome.passed, Outcome.non_strict)]
    data = json.loads(write_json(run, tmp_path / "lenient.json").read_text(encoding="utf-8"))
    assert (data["ok"], data["strict"]) == (True, False)
    run.strict = True
    path = write_json(run, tmp_path / "strict.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert (data["ok"], data["strict"]) == (False, True)
    assert read_json(path).strict


def test_values_json_cannot_hold_and_round_trip(run: RunResult, tmp_path: Path) -> None:
    run.results[0].failures.append(StepFailure(0, "e", "Body", b"\x01\xff", {"b", "a"}, "MS-MQDMPR 3.1.1.12"))
    path = write_json(run, tmp_path / "results.json")
    record = json.loads(path.read_text(encoding="utf-8"))["results"][0]
    assert record["failures"][0]["expected"] == "01ff"
    assert record["failures"][0]["observed"] == ["a", "b"]
    back = read_json(path)
    assert back.target == run.target
    assert [(r.case_id, r.outcome, r.sections, r.requirements) for r in back.results] == [
        (r.case_id, r.outcome, r.sections, r.requirements) for r in run.results
    ]
    assert back.counts() == run.counts()
    assert back.by_section() == run.by_section() and back.by_requirement() == run.by_requirement()
    assert back.results[1].failures[0].observed == "m1"
    assert (back.results[8].failures[0].requirement, back.results[8].failures[0].level) == (
        "DMPR-PEEK-POSITION", "interpretation")


def test_the_fixture_run_matches_the_schema(run: RunResult, tmp_path: Path) -> None:
    schema = load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["format"] == {"const": FORMAT}  # the schema is of this version
    data = json.loads(write_json(run, tmp_path / "results.json", metadata={"corpus": "cases/"}).read_text())
    jsonschema.Draft202012Validator(schema).validate(data)
    data["results"][0]["outcome"] = "green"
    assert not jsonschema.Draft202012Validator(schema).is_valid(data)


def test_a_report_of_another_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"format": "msmq-harness-results/99", "target": "x", "results": []}))
    with pytest.raises(ValueError, match="msmq-harness-results/99"):
        read_json(path)
    path.write_text(json.dumps({"format": "msmq-harness-results/1", "target": "x", "results": []}))
    assert read_json(path).target == "x"  # the format before explanations still reads
