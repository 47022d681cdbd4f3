"""Every report format is written whole or not at all: a write that fails mid-way (here the file
size limit, ``RLIMIT_FSIZE``, as a full disk would) leaves the previous report as it was and no
partial file beside it (harness.outdir.write_file_atomically)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness.report.formats import formats
from harness.results import RunResult

ROOT = Path(__file__).resolve().parents[2]

# writes a report, then a bigger one under a file size limit of half the first: the write fails
WRITER = """
import dataclasses, errno, resource, signal, sys
sys.path[:0] = [sys.argv[3], sys.argv[3] + "/tests/report"]
from conftest import make_run
from harness.report.formats import formats

fmt, path = formats()[sys.argv[1]], sys.argv[2]
run = make_run()
fmt.write(run, path)
previous = open(path, "rb").read()
open(path + ".expected", "wb").write(previous)
bigger = dataclasses.replace(run, results=run.results * 200)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write beyond the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (len(previous) // 2, resource.RLIM_INFINITY))
try:
    fmt.write(bigger, path)
except OSError as e:
    sys.exit(0 if e.errno == errno.EFBIG else 3)
sys.exit(4)
"""


@pytest.mark.parametrize("name", ["json", "junit", "html"])
def test_a_report_that_cannot_be_written_whole_leaves_the_previous_one(tmp_path: Path, name: str) -> None:
    assert name in formats()
    path = tmp_path / f"report.{name}"
    done = subprocess.run(
        [sys.executable, "-c", WRITER, name, str(path), str(ROOT)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr  # the second write failed, with EFBIG
    assert path.read_bytes() == Path(f"{path}.expected").read_bytes()  # the previous report, whole
    assert sorted(os.listdir(tmp_path)) == [path.name, f"{path.name}.expected"]  # no partial file left


def test_a_report_replaces_through_a_link_and_keeps_the_file_mode(tmp_path: Path, run: RunResult) -> None:
    """The file a link names is replaced (the link stays a link), with the permission bits it had;
    what is no regular file (a pipe) is written to as it is."""
    for fmt in (formats()[n] for n in ("json", "junit", "html")):
        real, link = tmp_path / f"real.{fmt.name}", tmp_path / f"link.{fmt.name}"
        real.write_text("old")
        real.chmod(0o640)
        link.symlink_to(real.name)
        fmt.write(run, link)
        assert link.is_symlink() and real.read_text() != "old"
        assert stat.S_IMODE(real.stat().st_mode) == 0o640
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with ThreadPoolExecutor(1) as pool:
        read = pool.submit(fifo.read_text)
        formats()["json"].write(run, fifo)
        assert json.loads(read.result(timeout=30))["results"]
