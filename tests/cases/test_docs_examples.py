"""Every example in README.md and docs/ works: each command line of a ``sh`` block parses with the
command's own parser (a synopsis's optional ``[...]`` parts left out, ``<...>`` placeholders
filled), each YAML case runs against the reference and passes, each YAML requirement list
loads, and the README's codec walkthrough runs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

import packets
from benchmarks.messages import typical_user_message
from harness.cases.loader import load_requirements, load_text
from harness.cases.runner import run
from harness.cli import build_parser
from tests.cases.casekit import COMMANDS, DOCS, NUMBERS, ROOT, doc_blocks


def test_the_docs_hold_command_examples() -> None:
    assert len(COMMANDS) >= 20


@pytest.mark.parametrize("line", [c for _, c in COMMANDS], ids=[i for i, _ in COMMANDS])
def test_command_example_parses(line: str) -> None:
    while re.search(r"\[[^\[\]]*\]", line):  # a synopsis's optional parts
        line = re.sub(r"\[[^\[\]]*\]", "", line)
    line = re.sub(r"<[^>]*>", "x", line)
    argv = [NUMBERS.get(word, word) for word in shlex.split(line)[1:]]
    try:
        build_parser().parse_args(argv)
    except SystemExit as e:
        pytest.fail(f"{line!r} does not parse (exit {e.code})")


def _yaml_examples() -> list[tuple[str, str]]:
    return [(f"{p.name}#{i}", b) for p in DOCS for i, b in enumerate(doc_blocks(p, "yaml"))]


@pytest.mark.parametrize("text", [t for _, t in _yaml_examples()], ids=[i for i, _ in _yaml_examples()])
def test_yaml_example_loads_and_a_case_passes_against_the_reference(text: str, tmp_path: Path) -> None:
    data = yaml.safe_load(text)
    if isinstance(data, list):  # requirements
        (tmp_path / "requirements.yaml").write_text(text)
        assert load_requirements(tmp_path / "requirements.yaml")
        return
    cases = load_text(text, "docs example")
    result = run(cases, "reference")
    assert result.ok and result.ran == len(cases), [(r.case_id, r.outcome, r.detail) for r in result.results]


def test_the_readme_codec_walkthrough_runs() -> None:
    (block,) = [b for b in doc_blocks(ROOT / "README.md", "python") if "packets.parse" in b]
    data = typical_user_message(False)
    namespace = {"data": data, "chunk": data}
    exec(compile(block, "README.md", "exec"), namespace)
    assert packets.build(namespace["p"]) == data
