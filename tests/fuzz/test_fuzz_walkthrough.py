"""docs/fuzz.md's walkthrough runs: each ``$ msmq-harness`` line of its ``console`` block, as a
process, in order, with the exit status its ``# exit N`` comment gives; a line ending in ``&``
(a peer) runs in the background until the walkthrough ends, on a free port in place of the one
written (tests run in parallel)."""

from __future__ import annotations

import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HARNESS = str(Path(sys.executable).parent / "msmq-harness")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _walkthrough() -> list[str]:
    text = (ROOT / "docs" / "fuzz.md").read_text()
    (block,) = re.findall(r"^```console\n(.*?)^```", text, flags=re.M | re.S)
    return [line[2:] for line in block.splitlines() if line.startswith("$ msmq-harness ")]


def _listening(port: int, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def test_the_walkthrough_runs(tmp_path: Path) -> None:
    lines = _walkthrough()
    assert len(lines) >= 4
    ports = {p: str(_free_port()) for line in lines for p in re.findall(r"127\.0\.0\.1:(\d+)", line)}
    background: list[subprocess.Popen[bytes]] = []
    try:
        for line in lines:
            command, _, comment = line.partition("  # ")
            for written, free in ports.items():
                command = command.replace(f"127.0.0.1:{written}", f"127.0.0.1:{free}")
            argv = [HARNESS, *shlex.split(command.rstrip(" &"))[1:]]
            if command.rstrip().endswith("&"):
                background.append(subprocess.Popen(argv, cwd=tmp_path))
                port = int(re.search(r"--listen 127\.0\.0\.1:(\d+)", command).group(1))  # type: ignore[union-attr]
                assert _listening(port, 20.0), command
                continue
            expected = int(re.fullmatch(r"exit (\d+)", comment.strip()).group(1))  # type: ignore[union-attr]
            done = subprocess.run(argv, cwd=tmp_path, capture_output=True, timeout=120)
            assert done.returncode == expected, (command, done.stdout.decode()[-2000:], done.stderr.decode()[-2000:])
    finally:
        for p in background:
            p.send_signal(signal.SIGINT)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    assert (tmp_path / "findings" / "report.html").is_file()
    assert (tmp_path / "findings" / "fuzz-crash-1-seed7.pcap").is_file()
