"""Conformance profiles (docs/profiles.md, ``run --profile``) and ``run --dry-run --target``.

docs/profiles.md is generated from the corpus by harness.cases.profiles; what it says a case
needs (capabilities, control operations) agrees with what the runner and the wire runs do.
``run --profile NAME`` runs exactly the cases citing the profile's section; ``run --dry-run
--target SPEC`` greets the target, runs no case and counts per section what would run, be
unsupported or not applicable, naming the missing events and capabilities.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.cases.execute import applicability
from harness.cases.loader import load_paths
from harness.cases.model import Case
from harness.cases.profiles import (
    PROFILES,
    case_capabilities,
    case_controls,
    plan,
    profile_cases,
    render_plan,
    render_profiles,
)
from harness.cases.target import CAPABILITIES, TargetInfo
from harness.cases.targets.wire import wire_applicability

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "harness.cli"]


# The module fixture ``corpus`` once per run: under pytest-xdist --dist loadgroup the module's tests
# share a worker (else each worker that gets one of them makes it again).
pytestmark = pytest.mark.xdist_group("profiles")


@pytest.fixture(scope="module")
def corpus() -> list[Case]:
    return load_paths([ROOT / "cases"])


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT, check=False)


def test_docs_profiles_is_generated_from_the_corpus(corpus: list[Case]) -> None:
    written = (ROOT / "docs" / "profiles.md").read_text(encoding="utf-8")
    assert written == render_profiles(corpus), "regenerate it: python -m harness.cases.profiles --write"


def test_every_profile_has_cases_and_names_its_seed_section(corpus: list[Case]) -> None:
    sections = {p.section for p in PROFILES.values()}
    assert {
        "MS-MQDMPR 3.1.7.3.2",
        "MS-MQDMPR 3.2.7.2",
        "MS-MQDMPR 3.2.7.4",
        "MS-MQDMPR 3.1.1.11",
        "MS-MQDMPR 3.1.7.2.2",
        "MS-MQQB 3.1.7.12",
    } == sections
    doc = render_profiles(corpus)
    for name, p in PROFILES.items():
        assert profile_cases(corpus, name), name
        assert f"## `{name}`" in doc
        if p.seed:
            assert (ROOT.parent / "shared" / "seeds" / p.seed).exists() or not (ROOT.parent / "shared").exists()


def test_case_capabilities_are_exactly_what_the_runner_checks(corpus: list[Case]) -> None:
    for case in corpus:
        needed = case_capabilities(case)
        info = TargetInfo("t", None, list(needed))
        assert applicability(case, info) is None, case.full_id
        assert not case.wire or wire_applicability(case, info) == "", case.full_id
        for capability in needed:
            less = TargetInfo("t", None, [c for c in needed if c != capability])
            excluded = applicability(case, less)
            why = excluded[1] if excluded else wire_applicability(case, less) if case.wire else ""
            assert why and capability in why, (case.full_id, capability)


class _Recording:
    """The reference target, recording the control operations it is sent."""

    def __init__(self) -> None:
        from harness.cases.targets.reference import ReferenceTarget

        self.inner = ReferenceTarget()
        self.ops: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def control(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        self.ops.append(op)
        return self.inner.control(op, args)


def test_case_controls_are_the_operations_an_initiator_case_sends(corpus: list[Case]) -> None:
    from harness.cases.execute import run_case

    cases = [c for c in profile_cases(corpus, "message-position-available-event") if case_controls(c)]
    assert cases
    for case in cases[:8]:
        target = _Recording()
        try:
            result = run_case(case, target, info=target.hello())
        finally:
            target.close()
        declared = set(case_controls(case))
        sent = set(target.ops)
        assert str(result.outcome) in ("passed", "non_strict"), (case.full_id, result.detail)
        assert sent <= declared, (case.full_id, sent - declared)
        # observe_outgoing re-reads a State only while it differs
        assert declared - {"observe_outgoing"} <= sent, (case.full_id, declared - sent)


def test_run_profile_runs_exactly_its_cases(corpus: list[Case], tmp_path: Path) -> None:
    name = "get-message-for-peek"
    expected = sorted(c.full_id for c in profile_cases(corpus, name))
    out = tmp_path / "out.json"
    done = _cli("run", "--profile", name, "--json", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(out.read_text(encoding="utf-8"))["results"]
    assert sorted(r["case_id"] for r in results) == expected
    listed = _cli("run", "--profile", "message-position-available-event", "--dry-run")
    assert listed.returncode == 0, listed.stderr
    wire = sorted(c.full_id for c in profile_cases(corpus, "message-position-available-event"))
    lines = [line for line in listed.stdout.splitlines() if line and not line[0].isspace()]
    assert lines[-1] == f"{len(wire)} cases selected"
    assert sorted(line.split()[0] for line in lines[:-1]) == wire
    assert _cli("run", "--profile", "no-such-profile").returncode == 2


ADAPTER = r"""
import json, sys
log = open(sys.argv[1], "a")
for line in sys.stdin:
    request = json.loads(line)
    op = request.get("op")
    log.write(op + "\n")
    log.flush()
    if op == "bye":
        break
    if op == "hello":
        reply = {"ok": True, "name": "partial", "events": ["dequeue_message"], "capabilities": ["model"]}
    else:
        reply = {"ok": False, "kind": "Error", "error": "a dry run sends nothing but hello"}
    reply["id"] = request.get("id")
    print(json.dumps(reply), flush=True)
"""


def test_dry_run_on_a_target_counts_per_section_without_running_a_case(corpus: list[Case], tmp_path: Path) -> None:
    script, log = tmp_path / "partial.py", tmp_path / "ops.log"
    script.write_text(ADAPTER, encoding="utf-8")
    done = _cli("run", "--dry-run", "--target", f"cmd:{sys.executable} {script} {log}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(log.read_text(encoding="utf-8").split()) <= {"hello", "bye"}  # said hello, ran nothing
    assert "hello" in log.read_text(encoding="utf-8")
    out = done.stdout
    # per section: a model case runs when it raises dequeue_message alone; no wire case applies
    peek = [c for c in corpus if "MS-MQDMPR 3.2.7.2" in c.sections]
    runs = sum({s.event for s in c.when} <= {"dequeue_message"} for c in peek)
    line = f"MS-MQDMPR 3.2.7.2: {len(peek)} cases: {runs} run, {len(peek) - runs} unsupported, 0 not_applicable"
    assert line in out, out
    assert "unsupported: missing events get_message_for_peek (" in out
    wire = [c for c in corpus if "MS-MQQB 3.1.7.12" in c.sections]
    assert f"MS-MQQB 3.1.7.12: {len(wire)} cases: 0 run, 0 unsupported, {len(wire)} not_applicable" in out
    assert f"not_applicable: missing capability wire:initiator ({len(wire)} cases)" in out
    assert f"capability wire:initiator: {CAPABILITIES['wire:initiator']}" in out
    assert out.splitlines()[-1].startswith(f"{len(corpus)} cases selected: ")


def test_dry_run_on_a_target_that_does_not_answer_hello_is_a_usage_error(tmp_path: Path) -> None:
    done = _cli("run", "--dry-run", "--target", f"cmd:{sys.executable} -c pass")
    assert done.returncode == 2
    assert "hello" in done.stderr


def test_render_plan_counts_a_case_under_each_section_it_cites(corpus: list[Case]) -> None:
    info = TargetInfo("model-only", None, ["model"])
    plans = plan(corpus, info)
    assert {p.outcome for p in plans if not p.case.wire} == {"run"}
    assert all(p.outcome == "not_applicable" and p.missing for p in plans if p.case.wire)
    text = render_plan(plans, info)
    assert "every event (its hello lists none)" in text.splitlines()[0]
    for section in {s for c in corpus for s in c.sections}:
        assert any(line.startswith(f"{section}: ") for line in text.splitlines()), section
