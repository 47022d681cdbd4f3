"""The command line builds only the chosen subcommand's part of its parser (harness.cli
``REGISTRARS``): the same subcommand, options and help as in the whole parser, and a ``run``
that does not import the pipeline's, the fuzzer's, the decoder's or the peer's command modules."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from harness.cli import REGISTRARS, build_parser


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(found[0].choices)


def test_the_table_names_every_subcommand_in_the_order_of_the_help() -> None:
    listed = [name for _module, _function, names in REGISTRARS for name in names]
    assert list(_subcommands(build_parser())) == listed


@pytest.mark.parametrize("command", [name for _m, _f, names in REGISTRARS for name in names])
def test_a_subcommand_built_alone_is_the_one_of_the_whole_parser(command: str) -> None:
    alone = _subcommands(build_parser(command))
    whole = _subcommands(build_parser())
    assert command in alone
    assert alone[command].format_help() == whole[command].format_help()


def test_an_unknown_word_or_an_option_builds_every_subcommand() -> None:
    every = list(_subcommands(build_parser()))
    assert list(_subcommands(build_parser("rnu"))) == every
    assert list(_subcommands(build_parser(None))) == every


def test_run_imports_no_other_command_module() -> None:
    others = [
        "harness.decode_cli",
        "harness.dissector_cli",
        "harness.fuzz.cli",
        "harness.peers.cli",
        "harness.pipeline.cli",
    ]
    probe = (
        "import sys\n"
        "from harness.cli import main\n"
        "try:\n"
        "    main(['run', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in {others!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout[-2000:]
    assert "usage: msmq-harness run" in done.stdout
