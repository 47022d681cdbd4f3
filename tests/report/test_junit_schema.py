"""The JUnit XML of ``run`` and of the pytest plugin, as CI reporters read it.

Each report is read by junitparser and validated against tests/data/junit.xsd, a schema of the
common JUnit format that declares every element and attribute (anything else is invalid).  The
run's testcases: classname ``DOCUMENT.file`` with one dot (Jenkins splits on the last one),
``file`` relative to the working directory, each property once, a one-line message; the suite:
its timestamp when the run started and the properties that identify the run.  The plugin's
testcases carry the requirement and the level.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
import xmlschema
from junitparser import Failure, JUnitXml, Properties, Skipped

ROOT = Path(__file__).resolve().parents[2]
XSD = xmlschema.XMLSchema(str(Path(__file__).resolve().parents[1] / "data" / "junit.xsd"))
MUTANT = "plugin:examples.mutants.seek:SeekIgnoresAllowPeekWhenLocked"


def _valid(path: Path) -> JUnitXml:
    XSD.validate(str(path))
    return JUnitXml.fromfile(str(path))


def _props(node: object) -> list[tuple[str, str]]:
    props = node.child(Properties)  # type: ignore[attr-defined]
    return [(p.name, p.value) for p in props] if props is not None else []


def _harness(*argv: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "harness.cli", "run", *argv]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


# The module fixture ``model_run`` once per run: under pytest-xdist --dist loadgroup the module's tests
# share a worker (else each worker that gets one of them makes it again).
pytestmark = pytest.mark.xdist_group("junit-schema")


@pytest.fixture(scope="module")
def model_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, datetime]:
    """The model corpus against a mutant, one of its failures known (with a reason)."""
    tmp = tmp_path_factory.mktemp("junit")
    known = tmp / "known.yaml"
    known.write_text(
        'entries:\n  - case: dmpr.peek.no-cursor\n    reason: "peek without a cursor"\n    ticket: "MQ-7"\n',
        encoding="utf-8",
    )
    junit, report = tmp / "run.xml", tmp / "run.json"
    before = datetime.now().astimezone().replace(microsecond=0)
    done = _harness(
        "cases/mqdmpr", "--target", MUTANT, "--known-failures", str(known), "--strict", "--junit", str(junit),
        "--json", str(report),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    return junit, report, before


def test_the_run_junit_is_valid_and_ci_shaped(model_run: tuple[Path, Path, datetime]) -> None:
    junit, report, before = model_run
    xml = _valid(junit)
    (suite,) = list(xml)
    cases = list(suite)
    assert len(cases) > 100
    for case in cases:
        assert case.classname.count(".") == 1, case.classname
        document, name = case.classname.split(".")
        assert document in ("MS-MQDMPR", "MS-MQMQ", "MS-MQQB") and name
        path = Path(case._elem.get("file"))
        assert not path.is_absolute() and (ROOT / path).is_file()
        assert name == path.name.split(".")[0].replace("-", "-")
        props = _props(case)
        assert len(props) == len(set(props)), props
        assert {n for n, _ in props} >= {"spec", "requirement", "level", "outcome"}
        for result in case.result:
            assert "\n" not in (result.message or "")
    assert {c.classname for c in cases} >= {"MS-MQDMPR.seek_forward", "MS-MQDMPR.seek_backward"}
    failed = [c for c in cases if any(isinstance(r, Failure) for r in c.result)]
    assert failed
    (known,) = [c for c in cases if c.name == "dmpr.peek.no-cursor"]
    (skipped,) = known.result
    assert isinstance(skipped, Skipped) and skipped.message.startswith(
        "known failure: peek without a cursor (MQ-7): MS-MQDMPR 3.1.7.1.15 [DMPR-3.1.7.1.15-NOCURSOR, MUST]: step 0"
    )
    suite_props = dict(_props(suite))
    data = json.loads(report.read_text(encoding="utf-8"))
    assert suite_props["target"] == MUTANT and suite_props["strict"] == "true"
    assert suite_props["harness.version"] == data["harness_version"]
    assert suite_props["target.name"] == data["run"]["target_name"] != ""
    assert suite_props["known-failures"].endswith("known.yaml")
    assert suite_props["command"].startswith("msmq-harness run cases/mqdmpr --target ")
    assert suite_props["os"] == data["run"]["os"] and suite_props["selection"] == "cases/mqdmpr"
    started = datetime.fromisoformat(suite._elem.get("timestamp"))
    assert suite._elem.get("timestamp") == data["run"]["started"]
    assert before <= started <= datetime.fromisoformat(data["generated"])
    props = [(p.name, p.value) for p in suite.properties()]
    assert len(props) == len(set(props))


def test_a_wire_run_names_its_transcripts(tmp_path: Path) -> None:
    junit, record = tmp_path / "wire.xml", tmp_path / "record"
    done = _harness("cases/mqqb/outgoing.yaml", "-k", "dispatch", "--record", str(record), "--junit", str(junit))
    assert done.returncode == 0, done.stderr[-2000:]
    (suite,) = list(_valid(junit))
    assert dict(_props(suite))["transcripts"] == str(record)
    for case in suite:
        assert case.classname == "MS-MQQB.outgoing"
        transcript = dict(_props(case))["transcript"]
        assert transcript.startswith(str(record)) and Path(transcript).is_file()


def test_pytest_junit_carries_requirement_and_level(tmp_path: Path) -> None:
    """Case files named on the command line outside any ``cases`` folder; the plugin's JUnit (the
    default xunit2 family) is valid, each testcase with its requirements and level, once each."""
    shutil.copytree(ROOT / "cases" / "mqdmpr" / "seek", tmp_path / "conformance" / "seek")
    files = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "conformance" / "seek").glob("*.yaml"))
    junit, report, page = tmp_path / "pytest.xml", tmp_path / "pytest.json", tmp_path / "pytest.html"
    command = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *files, f"--junitxml={junit}",
        f"--msmq-target={MUTANT}", f"--msmq-json={report}", f"--msmq-html={page}", "-n", "2",
    ]  # fmt: skip (two workers: their results reach the reports too)
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 1, done.stdout[-3000:]
    (suite,) = list(_valid(junit))
    cases = list(suite)
    assert len(cases) == len(json.loads(report.read_text(encoding="utf-8"))["results"]) > 20
    assert {c.classname for c in cases} == {"MS-MQDMPR.seek_forward", "MS-MQDMPR.seek_backward"}  # as run's
    for case in cases:
        props = _props(case)
        assert len(props) == len(set(props))
        names = [n for n, _ in props]
        assert "requirement" in names and names.count("level") == 1
        assert all(re.fullmatch(r"DMPR-3\.[0-9.]+-[A-Z-]+", v) for n, v in props if n == "requirement")
    failures = [r for c in cases for r in c.result if isinstance(r, Failure)]
    assert len(failures) == 2 and all("\n" not in f.message and f.message.startswith("MS-MQDMPR") for f in failures)
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["counts"] == {"passed": len(cases) - 2, "failed": 2} and data["target"] == MUTANT
    assert "<!DOCTYPE html>" in page.read_text(encoding="utf-8")
