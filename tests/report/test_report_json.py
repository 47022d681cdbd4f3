"""The JSON report: RunResult.to_dict() shape, one record per case, plus run metadata."""

from __future__ import annotations

import json
from pathlib import Path

from harness.report.json_report import FORMAT, read_json, write_json
from harness.report.results import RunResult, StepFailure


def test_shape(run: RunResult, tmp_path: Path) -> None:
    path = write_json(run, tmp_path / "results.json", metadata={"corpus": "cases/"})
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == FORMAT
    assert {"generated", "harness_version", "python", "host"} <= set(data)
    assert data["corpus"] == "cases/"
    assert data["target"] == "plugin:vendor.msmq:Impl"
    assert data["duration"] == 10.1
    assert data["ok"] is False
    assert data["counts"] == {"passed": 3, "failed": 1, "error": 1, "xfail": 1, "xpass": 1, "not_applicable": 1}
    # by_section sorted by document, then numerically
    assert list(data["by_section"]) == [
        "MS-MQDMPR 3.1.7.1.9",
        "MS-MQDMPR 3.1.7.1.10",
        "MS-MQDMPR 3.1.7.3.2",
        "MS-MQDMPR 3.2.7.4",
        "MS-MQQB 3.1.5.8.1",
        "MS-MQMQ 2.2.19.1",
    ]
    assert data["by_section"]["MS-MQDMPR 3.1.7.1.9"] == {"error": 1, "xfail": 1, "xpass": 1}

    records = data["results"]
    assert len(records) == len(run.results)
    assert records == [r.to_dict() for r in run.results]  # one record per case, to_dict() shape
    failed = records[1]
    assert failed["case_id"] == "dmpr.seek.fwd[peek=True]"
    assert failed["sections"] == ["MS-MQDMPR 3.1.7.3.2"]
    assert failed["outcome"] == "failed"
    assert failed["duration"] == 0.003
    assert failed["failures"][0] == {
        "step": 0,
        "event": "seek_available_message_position",
        "field": "rMessagePosition",
        "expected": "m2",
        "observed": "m1",
        "section": "MS-MQDMPR 3.1.7.3.2",
        "message": "step 0 (seek_available_message_position): rMessagePosition expected m2, observed m1",
        "evidence": "",
    }
    assert failed["failures"][1]["expected"] == {"any_of": ["Locked", "Deleted"]}


def test_values_json_cannot_hold_and_round_trip(run: RunResult, tmp_path: Path) -> None:
    run.results[0].failures.append(StepFailure(0, "e", "Body", b"\x01\xff", {"b", "a"}, "MS-MQDMPR 3.1.1.12"))
    path = write_json(run, tmp_path / "results.json")
    record = json.loads(path.read_text(encoding="utf-8"))["results"][0]
    assert record["failures"][0]["expected"] == "01ff"
    assert record["failures"][0]["observed"] == ["a", "b"]
    back = read_json(path)
    assert back.target == run.target
    assert [(r.case_id, r.outcome, r.sections) for r in back.results] == [
        (r.case_id, r.outcome, r.sections) for r in run.results
    ]
    assert back.counts() == run.counts()
    assert back.results[1].failures[0].observed == "m1"
