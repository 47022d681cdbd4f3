"""The command line's conventions: ``--version``, help text on every option of every subcommand,
and ``-`` for standard output where a report path is taken."""

from __future__ import annotations

import argparse
import json

import pytest

from harness.cli import build_parser, main


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.startswith("msmq-harness ")


def test_every_option_of_every_subcommand_has_help() -> None:
    subs = _subcommands(build_parser())
    assert {"run", "coverage", "decode", "peer", "pipeline", "capture-to-case", "compare", "dissector"} <= set(subs)
    missing = [
        f"{name} {'/'.join(a.option_strings) or a.dest}"
        for name, sub in subs.items()
        for a in sub._actions
        if not isinstance(a, argparse._HelpAction) and not a.help
    ]
    assert not missing, missing


def test_a_report_on_standard_output_sends_the_summary_to_standard_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "cases/mqdmpr", "-k", "purge", "--json", "-"]) == 0
    out, err = capsys.readouterr()
    results = json.loads(out)
    assert results["counts"]["passed"] > 0
    assert "passed" in err
    assert main(["run", "cases/mqdmpr", "-k", "purge", "--json", "-", "--junit", "-"]) == 2
