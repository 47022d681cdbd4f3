"""Every command line of README.md and docs/ runs, not only parses (issue 20, item 5).

The lines are those tests/cases/test_docs_examples.py parses (each ``msmq-harness`` line of a
``sh`` block; a synopsis's optional ``[...]`` parts left out and its placeholders filled).  Each
runs as a process, with a bounded time, in a folder holding what the docs assume is there: the
bundled ``cases/``, a synthetic capture ``synth.pcap`` (also as ``big.pcap``, ``captures/`` and
``capture.pcapng``), a hex dump ``frame.hex``, ``./my-adapter`` (the reference behind the adapter
protocol, examples/reference_adapter.py) and ``mypkg.qm:MyQueueManager`` (the reference model as
a plugin).  ``<flow id>`` is a session of the capture that broke a rule.  It must exit 0.

What runs otherwise than written, and why (:data:`AS_RUN`):

- a live acceptor (``mqqb://127.0.0.1:PORT``) is the local simulated peer, started first on a
  free port (with the behaviour and ping port the docs start it with, when they do);
- ``peer --listen`` lines listen on a free port (tests run in parallel); one that runs until
  stopped is stopped with SIGINT once it listens (exit 0 expected), ``--duration 60`` is 2;
- ``--master spark://host:7077`` (a Spark cluster) is local Spark, ``local[2]``.

The other command lines of the docs' ``sh`` blocks (:data:`OTHERS`) run too: ``make run`` as its
recipe's commands (its ``setup`` installs the virtual environment, which is there), the pytest
lines in the checkout (``-p no:cacheprovider`` added, to leave no cache behind), ``spark-submit``
with local Spark; ``make test`` is not run: it is the whole test suite, this test among it.
"""

from __future__ import annotations

import os
import re
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.pipeline.cluster import LOCAL_DRIVER_JAVA_OPTIONS
from harness.pipeline.synth import synthesize
from tests.cases.casekit import COMMANDS, NUMBERS

ROOT = Path(__file__).resolve().parents[2]
HARNESS = str(Path(sys.executable).parent / "msmq-harness")
TIMEOUT = 300.0  # seconds per command
#: the JVM options of a local driver (harness.pipeline.cluster.LOCAL_DRIVER_JAVA_OPTIONS) and one GC thread
JVM_OPTIONS = f"{LOCAL_DRIVER_JAVA_OPTIONS} -XX:+UseSerialGC"
#: a synopsis's placeholders, by what the folder holds (numbers as the parse test fills them)
WORDS = {"INPUT...": "synth.pcap", "DIR": "out", "CAPTURE": "synth.pcap", "X.pcap": "x.pcap", "N": "2", "RATE": "0.5"}
#: what runs otherwise than written: (pattern, replacement, why)
AS_RUN = (
    (r"spark://host:7077", "local[2]", "a Spark cluster: local Spark instead"),
    (r"--duration 60", "--duration 2", "bounded time"),
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The files the docs' command lines name, and a flow of ``synth.pcap`` that broke a rule."""
    from scapy.utils import PcapNgWriter, rdpcap

    import packets
    from benchmarks.messages import typical_user_message

    d = tmp_path_factory.mktemp("docs-inputs")
    manifest = synthesize(d / "synth.pcap", 12, 0.5, seed=5, messages=4)
    flow = next(a["flow"] for a in manifest["anomalies"] if a["kind"] == "bad-signature")
    shutil.copy(d / "synth.pcap", d / "big.pcap")
    (d / "captures").mkdir()
    synthesize(d / "captures" / "more.pcap", 4, 0.0, seed=6, messages=2)
    writer = PcapNgWriter(str(d / "capture.pcapng"))
    writer.write(rdpcap(str(d / "synth.pcap")))
    writer.close()
    data = typical_user_message(False)
    assert packets.parse(data).kind is packets.PacketKind.UserMessage
    (d / "frame.hex").write_text(" ".join(data[i : i + 16].hex() for i in range(0, len(data), 16)) + "\n")
    adapter = d / "my-adapter"
    adapter.write_text(f"#!/bin/sh\nexec {sys.executable} {ROOT / 'examples' / 'reference_adapter.py'}\n")
    adapter.chmod(0o755)
    (d / "mypkg").mkdir()
    (d / "mypkg" / "__init__.py").write_text("")
    (d / "mypkg" / "qm.py").write_text(
        '"""The reference model as a plugin, for the README\'s plugin: example."""\n\n'
        "from harness.model import QueueManager\n\n\nclass MyQueueManager(QueueManager):\n    pass\n"
    )
    return d, flow


def _workspace(inputs: tuple[Path, str], tmp_path: Path) -> Path:
    source, _flow = inputs
    for item in source.iterdir():
        if item.is_dir():
            shutil.copytree(item, tmp_path / item.name)
        else:
            shutil.copy2(item, tmp_path / item.name)
    (tmp_path / "cases").symlink_to(ROOT / "cases")
    return tmp_path


def _argv(line: str, flow: str) -> list[str]:
    while re.search(r"\[[^\[\]]*\]", line):  # a synopsis's optional parts
        line = re.sub(r"\[[^\[\]]*\]", "", line)
    line = line.replace("<flow id>", shlex.quote(flow))
    for pattern, replacement, _why in AS_RUN:
        line = re.sub(pattern, replacement, line)
    words = shlex.split(line)
    words = [flow if w == "ID" else WORDS.get(w, NUMBERS.get(w, w)) for w in words]
    return [HARNESS, *words[1:]]


class _Peer:
    """The local simulated peer in the background (what a live acceptor target talks to)."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert self.process.stdout is not None
        self.first = self.output = ""
        ready, _, _ = select.select([self.process.stdout], [], [], 30.0)
        if ready:
            self.first = self.process.stdout.readline()  # "listening on HOST:PORT ..."
        if "listening on" not in self.first:
            self.stop()
            pytest.fail(f"{shlex.join(argv)}: the peer did not start within 30 s: {self.first}{self.output}")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            out, _ = self.process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            out, _ = self.process.communicate()
        self.output = out or ""
        return int(self.process.returncode)


def _with_ports(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """``argv`` with each 127.0.0.1 port (and a ``ping=``/``--ping-port`` port) made free."""
    ports: dict[str, str] = {}

    def free(port: str, udp: bool = False) -> str:
        if port not in ports:
            ports[port] = str(_free_udp_port() if udp else _free_port())
        return ports[port]

    out = []
    for i, word in enumerate(argv):
        word = re.sub(r"127\.0\.0\.1:(\d+)", lambda m: f"127.0.0.1:{free(m.group(1))}", word)
        word = re.sub(r"ping=(\d+)", lambda m: f"ping={free(m.group(1), True)}", word)
        if i and argv[i - 1] == "--ping-port":
            word = free(word, True)
        out.append(word)
    return out, ports


def _peer_for(line: str) -> list[str] | None:
    """The peer a line's live-acceptor target needs, as the docs start it (peers.md: the one with
    the same ports), else the plain simulated peer on that port."""
    m = re.search(r"mqqb://127\.0\.0\.1:(\d+)", line)
    if m is None:
        return None
    for _id, other in COMMANDS:
        if re.search(rf"peer --listen 127\.0\.0\.1:{m.group(1)}\b", other) and "[" not in other and "--ping" in other:
            return shlex.split(other)
    return ["msmq-harness", "peer", "--listen", f"127.0.0.1:{m.group(1)}"]


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``argv`` run in ``cwd`` (on the Python path, for ``mypkg``) within :data:`TIMEOUT`."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(cwd), os.environ.get("PYTHONPATH"))))}
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, env=env)


def _explain(argv: list[str], result: Any) -> str:
    return (
        f"{shlex.join(argv)} exited {result.returncode}\n"
        f"--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}"
    )


@pytest.fixture
def workspace(inputs: tuple[Path, str], tmp_path: Path) -> Iterator[Path]:
    yield _workspace(inputs, tmp_path)


@pytest.mark.parametrize("line", [c for _, c in COMMANDS], ids=[i for i, _ in COMMANDS])
def test_command_example_runs(line: str, workspace: Path, inputs: tuple[Path, str]) -> None:
    _source, flow = inputs
    argv = _argv(line, flow)
    peer_argv = _peer_for(line)
    if argv[1] == "peer" and "--listen" in argv:
        argv, _ports = _with_ports(argv)
        if "--duration" not in argv:  # runs until stopped: stopped once it listens
            peer = _Peer(argv, workspace)
            assert peer.stop() == 0, f"{shlex.join(argv)}: {peer.first}{peer.output}"
            return
        result = _run(argv, workspace)
        assert result.returncode == 0, _explain(argv, result)
        for option in ("--record", "--report"):
            if option in argv:
                assert (workspace / argv[argv.index(option) + 1]).exists(), option
        return
    running = None
    if peer_argv is not None:
        both, _ports = _with_ports([*peer_argv, "\0", *argv])
        split = both.index("\0")
        peer_argv, argv = [HARNESS, *both[1:split]], both[split + 1 :]
        running = _Peer(peer_argv, workspace)
    try:
        result = _run(argv, workspace)
    finally:
        if running is not None:
            running.stop()
    assert result.returncode == 0, _explain(argv, result)
    if "--out" in argv and argv[1] in ("synth", "capture-to-case", "pipeline"):
        assert (workspace / argv[argv.index("--out") + 1]).exists()


# ---------------------------------------------------------------------------------------------
# The docs' other command lines


def _other_lines() -> list[tuple[str, str]]:
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in re.findall(r"^```sh\n(.*?)^```", path.read_text(), flags=re.M | re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split("  #", 1)[0].strip()
                if line and not line.startswith("[") and not re.match(r"(\.venv/bin/)?msmq-harness ", line):
                    found.append((path.name, line))
    return found


def _make_recipe(target: str) -> list[list[str]]:
    """The commands of a Makefile target's recipe, with $(BIN) the virtual environment's bin."""
    text = (ROOT / "Makefile").read_text()
    recipe = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", text, flags=re.M)
    assert recipe is not None, target
    bin_dir = str(Path(sys.executable).parent)
    return [shlex.split(line.strip().replace("$(BIN)", bin_dir)) for line in recipe.group(1).splitlines()]


BIN = Path(sys.executable).parent
#: doc line -> (how it runs: "workspace" or "checkout", the commands), or the reason it does not
OTHERS: dict[str, tuple[str, list[list[str]]] | str] = {
    "make run": ("workspace", _make_recipe("run")),
    "make test": "the whole test suite (python -m pytest -n 6), this test among it",
    ".venv/bin/pytest cases/ -n 2": (
        "checkout",
        [[str(BIN / "pytest"), "cases/", "-n", "2", "-p", "no:cacheprovider"]],
    ),
    'pytest cases/ -m "spec_mqqb_3_1_7_12 and msmq_must" -n 2': (
        "checkout",
        [
            [
                str(BIN / "pytest"),
                "cases/",
                "-m",
                "spec_mqqb_3_1_7_12 and msmq_must",
                "-n",
                "2",
                "-p",
                "no:cacheprovider",
            ]
        ],
    ),
    "spark-submit --master spark://host:7077 harness/pipeline/__main__.py INPUT... --out DIR": (
        "workspace",
        [
            [
                str(BIN / "spark-submit"),
                "--master",
                "local[2]",
                str(ROOT / "harness/pipeline/__main__.py"),
                "synth.pcap",
                "--out",
                "out",
            ]
        ],
    ),
}


def test_every_other_command_line_is_run_or_says_why_not() -> None:
    lines = {line for _doc, line in _other_lines()}
    assert lines, "no other command lines found"
    assert lines == set(OTHERS), (
        f"run or give a reason for: {sorted(lines - set(OTHERS))}; gone: {sorted(set(OTHERS) - lines)}"
    )
    for line, how in OTHERS.items():
        assert isinstance(how, tuple) or len(how) > 20, line


@pytest.mark.parametrize("line", [k for k, v in OTHERS.items() if isinstance(v, tuple)])
def test_other_command_line_runs(line: str, workspace: Path) -> None:
    how = OTHERS[line]
    assert isinstance(how, tuple)
    where, commands = how
    cwd = ROOT if where == "checkout" else workspace
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    # spark-submit starts the driver's JVM before the job's configuration (its local driver options)
    # is read: the first compiler tier given here, as the command does for a local master itself
    env["JAVA_TOOL_OPTIONS"] = JVM_OPTIONS
    for argv in commands:
        result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, env=env)
        assert result.returncode == 0, _explain(argv, result)
