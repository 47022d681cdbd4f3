"""``msmq-harness peer`` refuses out-of-range options when the command line is parsed (exit 2,
the option and the reason named), before it listens: never a traceback, never a value accepted
and misread later (harness.argtypes)."""

from __future__ import annotations

import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "harness.cli", "peer", "--listen", "127.0.0.1:0"]


@pytest.mark.parametrize(
    ("option", "value"),
    [("--duration", "nan"), ("--duration", "-5"), ("--duration", "inf"), ("--max-connections", "0"),
     ("--max-connections", "x"), ("--read-timeout", "-1"), ("--read-timeout", "nan")],
)  # fmt: skip
def test_an_out_of_range_option_is_a_usage_error(option: str, value: str) -> None:
    done = subprocess.run([*CLI, option, value], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert f"argument {option}:" in done.stderr and "Traceback" not in done.stderr
