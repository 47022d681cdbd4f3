"""One vocabulary: every session rule is a requirement of cases/requirements.yaml.

A rule id (harness.session.rules.RuleId) is the id of the requirement that quotes the spec's
sentence for it, under the same section (docs/cases.md, "Rules the peer reports").  These tests
fail when a rule has no requirement, when the two sections disagree, and when an engine (the
Initiator, the Acceptor, the Observer) emits a rule id that has none.  The session core does not
read the requirements file itself: it stays free of YAML and of harness.cases.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from brokenstreams import ACC, SCENARIOS, run
from sessionkit import ACCEPTOR_SIDE

from harness.cases.cache import CaseCache
from harness.cases.loader import BUNDLED_REQUIREMENTS, load_file, load_requirements
from harness.cases.model import Level, Requirement
from harness.session import Observer
from harness.session.rules import RULES, RuleId

SESSION = Path(__file__).resolve().parents[2] / "harness" / "session"
# The requirement of every rule as cases/requirements.yaml wrote it when the rule table came to hold
# them: what graded a rule then grades it still.  A rule added later is not listed here.
BEFORE = Path(__file__).with_name("rule_requirements.json")
RULE_ID = re.compile(r"^MQ(?:QB|MQ)-[0-9.]+-[a-z0-9-]+$")  # a rule id: lower-case words after the section


@pytest.fixture(scope="module")
def requirements() -> dict[str, Requirement]:
    return {r.id: r for r in load_requirements(BUNDLED_REQUIREMENTS)}


@pytest.mark.parametrize("rule_id", list(RuleId))
def test_every_rule_is_a_requirement_of_its_own_section(rule_id: RuleId, requirements: dict[str, Requirement]) -> None:
    req = requirements.get(rule_id.value)
    assert req is not None, f"{rule_id.value} has no entry in {BUNDLED_REQUIREMENTS}"
    assert req.section == RULES[rule_id].section, (req.section, RULES[rule_id].section)
    assert req.quote
    if req.level is Level.MUST:
        assert "MUST" in req.quote, rule_id
    elif req.level in (Level.SHOULD, Level.MAY):
        assert str(req.level) in req.quote, rule_id
    else:
        assert len(req.alternatives) >= 2, rule_id


def test_every_rule_keeps_the_requirement_it_had() -> None:
    """Same id, section, level, sentence, note, readings and frame as before, and the same place:
    the rule requirements close the bundled list, in the order of the table."""
    before = json.loads(BEFORE.read_text(encoding="utf-8"))
    loaded = load_requirements(BUNDLED_REQUIREMENTS)
    by_id = {r.id: r for r in loaded}
    for entry in before:
        req = by_id[entry["id"]]
        now = {
            "id": req.id,
            "section": req.section,
            "level": str(req.level),
            "quote": req.quote,
            "note": req.note,
            "alternatives": [[a.name, a.reading] for a in req.alternatives],
            "frame": req.frame,
        }
        assert now == entry
    assert [r.id for r in loaded][-len(RuleId):] == [str(r) for r in RULES]
    assert [e["id"] for e in before] == [str(r) for r in RULES][: len(before)]


def test_the_rules_are_included_under_their_header() -> None:
    """cases/requirements.yaml writes no rule's requirement: one include entry at its end, under
    the rule block's comment header, stands for them all."""
    text = BUNDLED_REQUIREMENTS.read_text()
    header = "# ---- [MS-MQQB] session rules (harness/session/rules.py)"
    assert text.count(header) == 1
    block = text.split(header, 1)[1]
    assert re.findall(r"^- .*$", block, flags=re.M) == ["- include: session-rules"]
    assert not re.search(r"^- id: MQ(?:QB|MQ)-[0-9.]+-[a-z]", text, flags=re.M)


def test_an_interpretation_rule_is_framed_by_a_must_requirement(requirements: dict[str, Requirement]) -> None:
    for r in RULES.values():
        assert bool(r.alternatives) == (r.level == "interpretation") == bool(r.frame), r.id
        if r.frame:
            assert requirements[r.frame].level is Level.MUST, r.id


def _literal_rule_ids() -> dict[str, list[str]]:
    """Rule ids the engines name in their source: RuleId.MEMBER attributes and id-shaped strings."""
    found: dict[str, list[str]] = {}
    for path in sorted(SESSION.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            rid = ""
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "RuleId":
                member = getattr(RuleId, node.attr, None)
                rid = member.value if member is not None else f"RuleId.{node.attr}"
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and RULE_ID.match(node.value):
                rid = node.value
            if rid:
                found.setdefault(rid, []).append(f"{path.name}:{node.lineno}")
    return found


def test_every_rule_the_engines_name_has_a_requirement(requirements: dict[str, Requirement]) -> None:
    named = _literal_rule_ids()
    assert len(named) >= len(RuleId) - 1  # the engines name (nearly) every rule
    missing = {rid: where for rid, where in named.items() if rid not in requirements}
    assert not missing, f"rule ids in harness/session without a requirement: {missing}"


def test_every_rule_the_engines_emit_has_a_requirement(requirements: dict[str, Requirement]) -> None:
    """Every stream that breaks a rule (brokenstreams.SCENARIOS, fed to the Acceptor and the
    Observer) and every reply that breaks one (fed to the Initiator): each rule reported on the
    way, not only the one the scenario is about, is a requirement."""
    emitted: set[str] = set()
    for scenario in SCENARIOS.values():
        broken = run(scenario.steps, scenario.behaviour, wall_clock=scenario.wall_clock)
        emitted |= {str(v.rule_id) for v in broken.violations}
        observer = Observer(ACC)
        for direction, data in broken.recording:
            (observer.client_data if direction == "client" else observer.server_data)(data)
        observer.end()
        emitted |= {str(v.rule_id) for v in observer.violations}
    for emit in ACCEPTOR_SIDE.values():
        emitted |= set(emit())
    assert emitted == {r.value for r in RuleId}
    assert not emitted - set(requirements), sorted(emitted - set(requirements))


def test_the_session_core_reads_no_requirements() -> None:
    """harness.session.rules is a pure core: importing it reads no YAML and imports no harness.cases."""
    code = (
        "import sys, harness.session.rules\n"
        "bad = [m for m in sys.modules if m == 'yaml' or m.startswith('harness.cases')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=SESSION.parents[1])


def test_a_cached_case_file_sees_a_rule_whose_requirement_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A case file that cites a rule, loaded through the case cache: the rule's requirement is the
    table's as it is now, not as it was when the file was cached (the table is part of the key)."""
    rid = RuleId.MQQB_3_1_5_8_1_DUPLICATE
    case_file = tmp_path / "cases" / "faults.yaml"
    case_file.parent.mkdir()
    shutil.copy(BUNDLED_REQUIREMENTS.parent / "mqqb" / "faults.yaml", case_file)
    (tmp_path / "cache").mkdir()
    cache = CaseCache(tmp_path / "cache")

    def quotes() -> set[str]:
        return {c.requirements[rid].quote for c in load_file(case_file, cache=cache) if rid in c.requirements}

    assert quotes() == {RULES[rid].quote}
    monkeypatch.setitem(RULES, rid, dataclasses.replace(RULES[rid], quote="The protocol MUST change."))
    assert quotes() == {"The protocol MUST change."}


def test_a_rule_id_member_is_named_after_its_id_in_table_order() -> None:
    """RuleId spells each id once more, as the name the engines use: its id in upper case,
    punctuation as underscores, in the order of RULES."""
    assert [m.name for m in RuleId] == [re.sub(r"[^A-Z0-9]", "_", str(r).upper()) for r in RULES]
