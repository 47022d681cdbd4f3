"""``msmq-harness dissector``: ports are checked when parsed ([MS-MQQB] 2.1.1 TCP, 2.1.2 UDP:
1-65535, else a usage error, exit 2, naming the option) and ``--output`` that cannot be written
is exit 2 naming it, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main as cli_main
from harness.dissector_cli import main


@pytest.mark.parametrize("option", ["--tcp-port", "--udp-port"])
@pytest.mark.parametrize("value", ["0", "70000", "-1", "abc", ""])
def test_a_port_out_of_range_is_a_usage_error(
    option: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m.lua"
    with pytest.raises(SystemExit) as exited:
        main(["-o", str(out), f"{option}={value}"])
    assert exited.value.code == 2
    assert f"argument {option}" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        cli_main(["dissector", "-o", str(out), f"{option}={value}"])
    assert exited.value.code == 2
    assert not out.exists()


def test_an_output_that_cannot_be_written_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-o", str(tmp_path), "--tcp-port", "2801"]) == 2  # a folder
    assert f"--output {tmp_path}" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # no partial file left
    assert main(["-o", str(tmp_path / "m.lua"), "--tcp-port", "65535", "--udp-port", "1"]) == 0
    assert "65535" in (tmp_path / "m.lua").read_text(encoding="utf-8")
