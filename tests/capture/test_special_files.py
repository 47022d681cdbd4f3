"""Devices, FIFOs and sockets are never read (issue 21, item 5): ``decode /dev/zero`` read until
memory ran out (MemoryError after 2.6 GB), ``run /dev/zero`` and ``--known-failures /dev/zero``
ended in a MemoryError traceback, a FIFO waited for a writer forever.  Each is refused at once with
exit status 2 and what the path names; an input check reads a bounded prefix of a file.

The commands run as processes with their address space limited (a read that does not stop fails
fast instead of filling the machine) and a time limit (a FIFO opened for reading waits)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from harness.decoding import INPUT_PREFIX, decode_file, hex_text, read_hex
from harness.files import NotRegularFile, open_regular, read_prefix, regular_file

LIMIT = 1 << 30  # bytes of address space for the command


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _run(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        preexec_fn=_limited,
    )


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.pcap"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "argv, said",
    [
        (["decode", "/dev/zero"], "/dev/zero: a character device, not a regular file: never read"),
        (["decode", "--json", "/dev/urandom"], "/dev/urandom: a character device"),
        (["run", "/dev/zero"], "/dev/zero: a character device, not a regular file or a folder: never read"),
        (["run", "--dry-run", "--known-failures", "/dev/zero"], "--known-failures /dev/zero: a character device"),
        (["pipeline", "/dev/zero", "--out", "out"], "/dev/zero: a character device, not a capture file"),
        (["capture-to-case", "/dev/zero"], "/dev/zero: a character device"),
    ],
)
def test_a_device_is_refused_unread(tmp_path: Path, argv: list[str], said: str) -> None:
    done = _run(tmp_path, *argv)
    assert done.returncode == 2, done.stderr[-2000:]
    assert said in done.stderr
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr


@pytest.mark.parametrize(
    "argv",
    [["decode", "{fifo}"], ["run", "{fifo}"], ["run", "--dry-run", "--known-failures", "{fifo}"],
     ["pipeline", "{fifo}", "--out", "out"], ["capture-to-case", "{fifo}"]],
)  # fmt: skip
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path, fifo: Path, argv: list[str]) -> None:
    done = _run(tmp_path, *(a.format(fifo=fifo) for a in argv))
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"{fifo}: a FIFO (named pipe)" in done.stderr


def test_a_link_to_a_device_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "capture.pcap"
    link.symlink_to("/dev/zero")
    done = _run(tmp_path, "decode", str(link))
    assert done.returncode == 2 and f"{link}: a character device" in done.stderr
    with pytest.raises(NotRegularFile):
        regular_file(link)
    with pytest.raises(NotRegularFile):
        list(decode_file(link))


def test_the_helpers(tmp_path: Path, fifo: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_bytes(b"x" * 100)
    assert regular_file(plain) == plain
    assert regular_file(tmp_path, folders=True) == tmp_path
    for path, what in ((tmp_path, "a folder"), (fifo, "a FIFO"), (Path("/dev/null"), "a character device")):
        with pytest.raises(NotRegularFile) as e:
            regular_file(path)
        assert str(e.value.strerror).startswith(what) and e.value.filename == str(path)
    with pytest.raises(NotRegularFile):
        open_regular(fifo)  # at once: the FIFO is opened without waiting, then refused
    with pytest.raises(FileNotFoundError):
        regular_file(tmp_path / "missing")
    assert read_prefix(plain, 10) == b"x" * 10


def test_a_large_hex_dump_is_judged_by_its_first_lines(tmp_path: Path) -> None:
    # the input check reads INPUT_PREFIX bytes: a hex dump longer than that is still one
    line = "10 00 0b 00 4c 49 4f 52 30 00 00 00 ff ff ff ff  # a BaseHeader\n"
    text = line * (3 * INPUT_PREFIX // len(line))
    path = tmp_path / "long.hex"
    path.write_text(text)
    assert read_hex(hex_text(text.encode()[:INPUT_PREFIX], False))
    one_line = (("ab" * 40_000) + "\n").encode()
    assert len(read_hex(hex_text(one_line[:INPUT_PREFIX - 1], False))) == (INPUT_PREFIX - 2) // 2
    done = _run(tmp_path, "decode", str(path))
    assert done.returncode == 0, done.stderr
