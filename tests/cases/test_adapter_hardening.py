"""A misbehaving ``cmd:`` adapter never loses a run, and everything it says is data (issue 21,
items 2 and 8).

- A run always ends with its reports: an adapter that leaves processes holding its pipes (one
  in its process group, one that left it) does not hang ``run``; the reports are written and
  the leftovers named and killed.  Every wait on an adapter is bounded: its reply once it
  exited, a request it does not read.
- Everything an adapter says is data: NaN and Infinity are a protocol error and never reach the
  JSON report; its error text reaches the terminal escaped (``\\x1b``); a reply nested 200,000
  deep errs naming the limit, not with a RecursionError.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.cases.target import TargetError
from harness.cases.targets.command import MAX_DEPTH, CommandTarget

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "examples" / "reference_adapter.py"
CASE = ["cases/mqdmpr/cursor", "-k", "peek.unread-succeeded"]  # one small model case
SLEEPER = "import time; time.sleep(300)  # {}"


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def _end(pids: list[int]) -> None:
    for pid in pids:
        if _alive(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _script(tmp_path: Path, body: str, name: str = "adapter.py") -> str:
    script = tmp_path / name
    script.write_text("import json, os, subprocess, sys, time\n" + body)
    return f"{sys.executable} {script}"


def _leave_sleepers(pids: Path) -> str:
    """Adapter code starting two processes that inherit its pipes and outlive it: one in its
    process group, one in a session of its own; their pids written to ``pids``."""
    return (
        f"stay = subprocess.Popen([sys.executable, '-c', {SLEEPER.format('in-group')!r}])\n"
        f"gone = subprocess.Popen([sys.executable, '-c', {SLEEPER.format('own-session')!r}], "
        "start_new_session=True)\n"
        f"open({str(pids)!r}, 'w').write(f'{{stay.pid}} {{gone.pid}}')\n"
    )


def _bounded(call: Callable[[], Any], limit: float) -> tuple[float, BaseException | None]:
    """Run ``call`` in a thread: (seconds taken, what it raised); fails the test when it is still
    running after ``limit`` seconds (the code before this work waited forever)."""
    outcome: list[BaseException | None] = []

    def body() -> None:
        try:
            call()
        except BaseException as e:  # handed to the test
            outcome.append(e)
        else:
            outcome.append(None)

    start = time.monotonic()
    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(limit)
    assert not thread.is_alive(), f"still waiting on the adapter after {limit} s"
    return time.monotonic() - start, outcome[0]


def _run(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200"},
    )


# ================================================================================ item 2
def test_an_adapter_leaving_processes_on_its_pipes_does_not_hang_run(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    body = _leave_sleepers(pids) + f"sys.argv = [{str(REFERENCE)!r}]\nimport runpy\n"
    body += f"runpy.run_path({str(REFERENCE)!r}, run_name='__main__')\n"
    out = tmp_path / "out.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "run",
            *CASE,
            "--target",
            "cmd:" + _script(tmp_path, body),
            "--json",
            str(out),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    start = time.monotonic()
    try:
        stdout, stderr = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("run still waits on what the adapter left, 30 s after its cases") from None
    finally:
        left = _pids(pids)
        time.sleep(0.2)
        still = [pid for pid in left if _alive(pid)]
        _end(left)
    assert time.monotonic() - start < 30
    assert proc.returncode == 0, stderr
    report = json.loads(out.read_text())
    assert report["counts"] == {"passed": 1}
    assert "reports: " + str(out) in stdout
    assert len(left) == 2
    for pid, marker in zip(left, ("in-group", "own-session"), strict=True):
        assert f"{pid} (" in stderr and marker in stderr, stderr  # named: pid and command line
    assert "left 2 processes" in stderr and "killed" in stderr
    assert not still, f"left running: {still}"


def test_a_reply_is_awaited_at_most_a_moment_after_the_adapter_exited(tmp_path: Path) -> None:
    """The adapter exits without answering; a process it left holds its stdout: the request
    fails at once (not after the 30 s request timeout, nor never), naming what it left."""
    pids = tmp_path / "pids"
    target = CommandTarget(_script(tmp_path, _leave_sleepers(pids) + "sys.stdin.readline()\n"), timeout=30.0)
    try:
        took, raised = _bounded(target.hello, 15)
        left = _pids(pids)
        _bounded(target.close, 15)
        time.sleep(0.2)
        still = [pid for pid in left if _alive(pid)]
    finally:
        _end(_pids(pids))
    assert took < 10
    assert isinstance(raised, TargetError) and "exited without a reply" in str(raised)
    assert all(f"{pid} (" in str(raised) for pid in left) and "killed" in str(raised)
    assert not still


def test_a_request_the_adapter_does_not_read_is_bounded(tmp_path: Path) -> None:
    """The adapter answers hello and then reads nothing: a request larger than the pipe holds
    fails after the request timeout instead of blocking the run."""
    body = (
        "request = json.loads(sys.stdin.readline())\n"
        "print(json.dumps({'id': request['id'], 'ok': True, 'name': 'deaf'}), flush=True)\n"
        "time.sleep(30)\n"
    )
    target = CommandTarget(_script(tmp_path, body), timeout=2.0)
    try:
        target.hello()
        took, raised = _bounded(lambda: target.setup({"blob": "x" * (8 << 20)}), 20)
    finally:
        _bounded(target.close, 15)
    assert took < 10
    assert isinstance(raised, TargetError) and "cannot write to the adapter" in str(raised)


# ================================================================================ item 8
ANSWER = (
    "template = open({template!r}).read()\n"
    "for line in sys.stdin:\n"
    "    request = json.loads(line)\n"
    "    if request['op'] == 'bye':\n"
    "        break\n"
    "    if request['op'] == 'event':\n"
    "        sys.stdout.write(template.replace('ID', str(request['id'])) + '\\n')\n"
    "    else:\n"
    "        sys.stdout.write(json.dumps({{'id': request['id'], 'ok': True, 'name': 'x'}}) + '\\n')\n"
    "    sys.stdout.flush()\n"
)


def _answering(tmp_path: Path, reply: str) -> str:
    """An adapter whose every event is answered by ``reply`` (``ID``: the request's id)."""
    template = tmp_path / "reply.txt"
    template.write_text(reply)
    return _script(tmp_path, ANSWER.format(template=str(template)))


def _strict_json(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"the report holds {name}, which JSON has not")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999", "-1E400"])
def test_a_non_finite_number_is_a_protocol_error(tmp_path: Path, number: str) -> None:
    target = CommandTarget(_answering(tmp_path, f'{{"id": ID, "ok": true, "result": {{"v": [{number}]}}}}'))
    try:
        target.hello()
        with pytest.raises(TargetError) as raised:
            target.event("x", {})
    finally:
        target.close()
    assert repr(number) in str(raised.value) and "a reply's numbers are finite" in str(raised.value)


def test_a_non_finite_number_never_reaches_the_json_report(tmp_path: Path) -> None:
    adapter = _answering(tmp_path, '{"id": ID, "ok": true, "result": {"rStatus": NaN, "n": Infinity}}')
    out = tmp_path / "out.json"
    done = _run([*CASE, "--target", "cmd:" + adapter, "--json", str(out)])
    text = out.read_text()
    report = _strict_json(text)
    (result,) = report["results"]
    assert result["outcome"] == "error" and "'NaN'" in result["detail"]
    assert done.returncode == 1


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 200_000])
def test_a_reply_nested_too_deep_errs_naming_the_limit(tmp_path: Path, depth: int) -> None:
    nested = "[" * (depth - 2) + "]" * (depth - 2)  # inside the reply's object and result object
    target = CommandTarget(_answering(tmp_path, f'{{"id": ID, "ok": true, "result": {{"v": {nested}}}}}'))
    try:
        target.hello()
        took, raised = _bounded(lambda: target.event("x", {}), 20)
    finally:
        target.close()
    assert took < 10 and isinstance(raised, TargetError), raised
    message = str(raised)
    assert f"the reply nests {depth} arrays and objects deep, more than the limit of {MAX_DEPTH}" in message
    assert "Recursion" not in message and "/json/" not in message


def test_a_reply_at_the_limit_and_brackets_in_strings_are_fine(tmp_path: Path) -> None:
    nested = "[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2)
    text = json.dumps("[{" * 1000 + '\\"')  # brackets (and an escaped quote) inside a string
    reply = f'{{"id": ID, "ok": true, "result": {{"v": {nested}, "s": {text}}}}}'
    target = CommandTarget(_answering(tmp_path, reply))
    try:
        target.hello()
        result = target.event("x", {})
    finally:
        target.close()
    assert result["s"] == json.loads(text)
    depth, value = 3, result["v"]  # the reply, its result, then v
    while value:
        value, depth = value[0], depth + 1
    assert depth == MAX_DEPTH


def test_adapter_error_text_reaches_the_terminal_escaped(tmp_path: Path) -> None:
    said = "boom\x1b[2J\x00\x08 mid\rhidden\x9b31m end"
    adapter = _answering(tmp_path, '{"id": ID, "ok": false, "kind": "Error", "error": ' + json.dumps(said) + "}")
    done = _run([*CASE, "--target", "cmd:" + adapter])
    assert done.returncode == 1
    # (the explanation breaks the line at the carriage return: no line is overwritten)
    assert "boom\\x1b[2J\\x00\\x08 mid" in done.stdout and "hidden\\x9b31m end" in done.stdout, done.stdout
    for raw in "\x1b\x00\x08\r\x9b":
        assert raw not in done.stdout + done.stderr


def test_adapter_stderr_in_a_hello_failure_reaches_the_terminal_escaped(tmp_path: Path) -> None:
    adapter = _script(tmp_path, "sys.stderr.write('bad\\x1b[2J\\x07news\\n'); sys.exit(3)\n")
    done = _run([*CASE, "--target", "cmd:" + adapter, "--step-timeout", "5"])
    assert done.returncode == 2
    assert "bad\\x1b[2J\\x07news" in done.stderr, done.stderr
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr


# ================================================================================ interrupted
STALLING = (
    "import importlib.util, pathlib\n"
    f"spec = importlib.util.spec_from_file_location('reference_adapter', {str(REFERENCE)!r})\n"
    "reference = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(reference)\n"
    "def lines(stream, marker=pathlib.Path(sys.argv[1])):\n"
    "    for count, line in enumerate(stream):\n"
    "        if count == 40:  # some cases in: the adapter stalls\n"
    "            marker.write_text('stalled')\n"
    "            time.sleep(60)\n"
    "        yield line\n"
    "sys.stdin = lines(sys.stdin)\n"
    "sys.exit(reference.main([]))\n"
)


@pytest.mark.parametrize(("name", "status"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_an_interrupted_run_writes_its_reports(tmp_path: Path, name: str, status: int) -> None:
    """Ctrl-C (or SIGTERM, as ``timeout`` sends) while the adapter stalls: the cases that ran
    are reported, in every report asked for, and the run says it was interrupted."""
    marker, out, junit = tmp_path / "stalled", tmp_path / "out.json", tmp_path / "junit.xml"
    adapter = _script(tmp_path, STALLING) + f" {marker}"
    reports = ["--step-timeout", "120", "--json", str(out), "--junit", str(junit)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", "cases/mqdmpr/cursor", "--target", "cmd:" + adapter, *reports],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "the adapter never stalled"
        time.sleep(0.3)
        proc.send_signal(getattr(signal, name))
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == status, stderr
    report = json.loads(out.read_text())
    ran = len(report["results"])
    assert 0 < ran < 26 and report["interrupted"] == f"interrupted by {name} after {ran} of 26 cases"
    assert f"{ran} cases in" in stdout and "reports: " in stdout
    assert f"msmq-harness run: interrupted by {name} after {ran} of 26 cases" in stderr
    assert junit.read_text().count("<testcase ") == ran
