"""``decode`` on a capture with no MSMQ traffic on the chosen ports, and ``--ports`` out of range
(issue 21, item 4).

No traffic is said on standard error, with the TCP ports the capture's connections are made to;
with ``--fail-on-violation`` the exit status is 5 (nothing was checked: no pass, and not 1, which
says a packet broke a rule).  ``--ports`` takes TCP ports 1-65535 only: anything else is a usage
error of argparse (exit 2) before any input is read, on every command that takes it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main as cli_main
from harness.pipeline.synth import synthesize

ROOT = Path(__file__).resolve().parents[2]


# The module fixture ``synth`` once per run: under pytest-xdist --dist loadgroup the module's tests
# share a worker (else each worker that gets one of them makes it again).
pytestmark = pytest.mark.xdist_group("decode-no-traffic")


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("decode") / "s.pcap"
    synthesize(path, 3, 0.0, seed=1, messages=2)
    return path


def _decode(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", "decode", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_no_traffic_on_the_port_is_said_and_is_no_clean_pass(synth: Path) -> None:
    done = _decode("--ports", "2101", "--fail-on-violation", str(synth))
    assert done.returncode == 5, (done.returncode, done.stderr)
    assert "no MSMQ traffic found on TCP port 2101" in done.stderr
    assert "1801 (3 connections)" in done.stderr and "--ports" in done.stderr  # where the traffic is
    # without --fail-on-violation: a viewer, exit 0, but it says so all the same
    done = _decode("--ports", "2101", str(synth))
    assert done.returncode == 0 and "no MSMQ traffic found" in done.stderr
    # on the right port: no note, and the clean capture passes
    done = _decode("--fail-on-violation", str(synth))
    assert done.returncode == 0 and "no MSMQ traffic" not in done.stderr, done.stderr
    # a rule broken somewhere outweighs an input without traffic: 1
    bad = synth.with_name("bad.pcap")
    synthesize(bad, 3, 1.0, seed=2, messages=2, kinds=("bad-signature",))
    done = _decode("--fail-on-violation", str(bad), str(synth), "--ports", "1801")
    assert done.returncode == 1


def test_an_empty_capture_is_said_too(tmp_path: Path, synth: Path) -> None:
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(synth.read_bytes()[:24])  # the file header alone
    done = _decode("--fail-on-violation", str(empty))
    assert done.returncode == 5 and "no MSMQ traffic found on TCP port 1801 (0 frames, none of them TCP)" in done.stderr


@pytest.mark.parametrize("ports", ["70000", "-1", "abc", "0", "1801,", "1801,65536", " "])
@pytest.mark.parametrize("command", ["decode", "pipeline", "capture-to-case"])
def test_ports_out_of_range_are_usage_errors(
    command: str, ports: str, synth: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = {"decode": [], "pipeline": ["--out", str(tmp_path / "out")], "capture-to-case": []}[command]
    with pytest.raises(SystemExit) as e:
        cli_main([command, str(synth), f"--ports={ports}", *extra])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument --ports" in err and ("TCP port" in err or "empty port" in err), err
    assert not (tmp_path / "out").exists()


def test_ports_abc_is_no_traceback_through_the_entry_point(synth: Path) -> None:
    done = _decode("--ports", "abc", str(synth))
    assert done.returncode == 2 and "Traceback" not in done.stderr and "argument --ports" in done.stderr
    assert done.stdout == ""


def test_ports_in_range_are_taken(synth: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["decode", str(synth), "--ports", " 1801 , 65535,1"]) == 0
    assert "no MSMQ traffic" not in capsys.readouterr().err
