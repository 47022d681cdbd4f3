"""``cmd:<command>`` targets: an implementation in any language behind the JSON-lines protocol.

Renders the JSON-lines protocol of docs/cases.md: one JSON object per line on the adapter's
stdin and stdout, each request (``hello``, ``setup``, ``event``, ``observe``, then ``bye``)
answered by exactly one reply; ``{"ok": false, "error", "kind"}`` becomes a TargetError of that
kind.  Each request has a timeout: an adapter that hangs, exits, or answers something that is
not a reply is killed, the request fails with ``TargetError("Error", ...)`` carrying the tail
of the adapter's stderr, and the adapter is started again for the next case.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import shlex
import signal
import subprocess
import threading
from typing import IO, Any

from harness.cases.target import (
    ADM_OUTGOING,
    MODEL,
    WIRE_INITIATOR,
    WIRE_SENDER_PING,
    TargetError,
    TargetInfo,
    hello_events,
)
from harness.cases.targets.registry import target_kind
from harness.report.results import clean

__all__ = ["CommandTarget", "split_command"]

_KINDS = ("UndefinedBehaviour", "Unsupported", "Error")
_STDERR_KEEP = 64  # lines of stderr kept for failure details
_STDERR_LINE = 4096  # bytes kept of each
MAX_LINE = 16 << 20  # the longest reply line read (16 MiB); a longer one is a protocol error
TOO_LONG = "\0too long"  # what the reader thread hands over for such a line
# why a line on the adapter's stdout that is no reply breaks the protocol
STDOUT_HINT = (
    " (the adapter's standard output is reserved for its JSON replies, one per line: "
    "write debug output to standard error)"
)


def split_command(command: str) -> list[str]:
    """The argv of a command line (shlex); a command quoted as a whole is unquoted once."""
    argv = shlex.split(command)
    if len(argv) == 1 and any(c.isspace() for c in argv[0]):
        argv = shlex.split(argv[0])
    if not argv:
        raise ValueError("cmd target: empty command")
    return argv


class _Adapter:
    """One running adapter process, in a process group of its own (a wrapper script's children
    go with it), with reader threads for its stdout (lines of at most :data:`MAX_LINE` bytes) and
    its stderr (the last :data:`_STDERR_KEEP` lines)."""

    def __init__(self, argv: list[str], cwd: str | None) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            start_new_session=True,
        )
        self.owner_pid = os.getpid()
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: collections.deque[str] = collections.deque(maxlen=_STDERR_KEEP)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        threading.Thread(target=self._pump, args=(self.proc.stdout,), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.proc.stderr,), daemon=True).start()

    def _pump(self, stream: IO[bytes]) -> None:
        try:
            while True:
                line = stream.readline(MAX_LINE + 1)
                if not line:
                    break
                if len(line) > MAX_LINE:  # no newline within the limit: nothing more is read
                    self.lines.put(TOO_LONG)
                    break
                self.lines.put(line.decode("utf-8", "replace"))
        except (OSError, ValueError):
            pass
        self.lines.put(None)

    def _drain(self, stream: IO[bytes]) -> None:
        try:
            while True:
                line = stream.readline(MAX_LINE + 1)
                if not line:
                    break
                self.stderr.append(line[:_STDERR_LINE].decode("utf-8", "replace").rstrip("\n"))
        except (OSError, ValueError):
            pass

    def stderr_tail(self) -> str:
        return "\n".join(self.stderr)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def write(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("utf-8", "surrogatepass"))
        self.proc.stdin.flush()

    def kill(self) -> None:
        """Kill the adapter's whole process group, then close its pipes."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


# What the JSON-lines protocol carries: the model's events and the control operations of a
# sender.  An acceptor is reached over TCP, not through the adapter (mqqb://host:port).
PROTOCOL_CAPABILITIES = (MODEL, WIRE_INITIATOR, WIRE_SENDER_PING, ADM_OUTGOING)


def _capabilities(reply: dict[str, Any]) -> list[str]:
    """The capabilities of an adapter's hello that the protocol can serve (a hello without any
    is an adapter of the model alone)."""
    if "capabilities" not in reply:
        return [MODEL]
    said = reply.get("capabilities")
    return [str(c) for c in said if str(c) in PROTOCOL_CAPABILITIES] if isinstance(said, list) else []


class CommandTarget:
    """A Target that runs ``command`` and speaks the JSON-lines protocol with it."""

    handles_timeout = True  # the runner's step timeout is this target's request timeout

    def __init__(self, command: str, *, timeout: float = 10.0, cwd: str | None = None) -> None:
        self.command = command
        self.argv = split_command(command)
        self.timeout = timeout
        self.cwd = cwd
        self._adapter: _Adapter | None = None
        self._info: TargetInfo | None = None
        self._next_id = 0

    # ------------------------------------------------------------------------ plumbing
    def _start(self) -> _Adapter:
        try:
            adapter = _Adapter(self.argv, self.cwd)
        except OSError as e:
            raise TargetError("Error", f"cannot start {self.command!r}: {e}") from e
        self._adapter = adapter
        return adapter

    def _fail(self, adapter: _Adapter, what: str) -> TargetError:
        adapter.kill()
        if self._adapter is adapter:
            self._adapter = None
        code = adapter.proc.returncode
        detail = f"{what} (adapter {self.command!r} exit status {code})"
        tail = adapter.stderr_tail()
        if tail:
            detail += "\nadapter stderr:\n" + tail
        return TargetError("Error", detail)

    def _request(self, message: dict[str, Any], *, start: bool = False) -> dict[str, Any]:
        adapter = self._adapter
        if adapter is not None and not adapter.alive():
            if not start:
                raise self._fail(adapter, "the adapter exited")
            adapter.kill()
            adapter = self._adapter = None
        if adapter is None:
            if not start:
                raise TargetError("Error", "the adapter is not running (it failed earlier in this case)")
            adapter = self._start()
            if message.get("op") != "hello":
                self._hello(adapter)
        op = message.get("op")
        self._next_id += 1
        message = {**message, "id": self._next_id}
        try:
            line = json.dumps(message, allow_nan=False) + "\n"
        except (TypeError, ValueError) as e:
            raise TargetError("Error", f"{op}: cannot encode the request as JSON: {e}") from e
        try:
            adapter.write(line)
        except (OSError, ValueError) as e:
            raise self._fail(adapter, f"{op}: cannot write to the adapter: {e}") from e
        try:
            reply_line = adapter.lines.get(timeout=self.timeout)
        except queue.Empty:
            raise self._fail(adapter, f"{op}: no reply within {self.timeout:g} s") from None
        if reply_line is None:
            raise self._fail(adapter, f"{op}: the adapter exited without a reply")
        if reply_line == TOO_LONG:
            raise self._fail(adapter, f"{op}: a reply line longer than {MAX_LINE} bytes")
        try:
            reply = clean(json.loads(reply_line))  # lone surrogates of "\ud800" escapes made printable
        except ValueError:
            what = f"{op}: the reply is not JSON: {reply_line.strip()[:200]!r}{STDOUT_HINT}"
            raise self._fail(adapter, what) from None
        if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
            hint = "" if isinstance(reply, dict) else STDOUT_HINT  # print(42) is JSON, but no reply
            raise self._fail(adapter, f"{op}: the reply has no boolean 'ok': {reply_line.strip()[:200]!r}{hint}")
        if reply.get("id") != message["id"]:  # one protocol error, then a fresh adapter: no cascade
            raise self._fail(
                adapter,
                f"{op}: the reply answers request id {reply.get('id')!r}, not {message['id']} "
                "(an unsolicited or late reply: the adapter is out of step)",
            )
        if not reply["ok"]:
            kind = reply.get("kind", "Error")
            raise TargetError(kind if kind in _KINDS else "Error", str(reply.get("error", "")))
        return reply

    def _hello(self, adapter: _Adapter) -> TargetInfo:
        reply = self._request({"op": "hello"})
        try:
            events = hello_events(reply)  # absent: every event; []: none
        except ValueError as e:
            raise self._fail(adapter, str(e)) from None
        info = TargetInfo(
            name=str(reply.get("name") or self.command),
            events=events,
            capabilities=_capabilities(reply),
        )
        self._info = info
        return info

    # ------------------------------------------------------------------------ Target
    def hello(self) -> TargetInfo:
        adapter = self._adapter if self._adapter is not None and self._adapter.alive() else self._start()
        return self._hello(adapter)

    def setup(self, given: dict[str, Any]) -> None:
        self._request({"op": "setup", "given": given}, start=True)

    def event(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        reply = self._request({"op": "event", "event": name, "args": args})
        result = reply.get("result", {})
        if not isinstance(result, dict):
            raise TargetError("Error", f"{name}: 'result' is not an object: {result!r}")
        return result

    def observe(self, queues: list[str], cursors: list[str]) -> dict[str, Any]:
        reply = self._request({"op": "observe", "queues": queues, "cursors": cursors})
        return {"queues": reply.get("queues") or {}, "cursors": reply.get("cursors") or {}}

    def control(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        """A control operation of an initiator wire case: ``{"op": "control", "control": op,
        "args": ...}`` answered by ``{"ok": true, "result": {...}}``."""
        reply = self._request({"op": "control", "control": op, "args": args}, start=op == "wire_setup")
        result = reply.get("result", {})
        if not isinstance(result, dict):
            raise TargetError("Error", f"{op}: 'result' is not an object: {result!r}")
        return result

    def close(self) -> None:
        adapter, self._adapter = self._adapter, None
        if adapter is None:
            return
        try:
            if adapter.alive() and adapter.proc.stdin is not None:
                adapter.write(json.dumps({"op": "bye"}) + "\n")
                adapter.proc.stdin.close()
                adapter.proc.wait(timeout=min(self.timeout, 2.0))
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        adapter.kill()

    def __del__(self) -> None:  # an adapter never outlives its target
        adapter = getattr(self, "_adapter", None)
        if adapter is not None and os.getpid() == adapter.owner_pid:
            with contextlib.suppress(Exception):
                adapter.kill()


@target_kind("cmd:", "cmd:'<command>'", "any implementation behind the JSON-lines adapter protocol (docs/adapters.md)")
def _make(spec: str, timeout: float) -> CommandTarget:
    return CommandTarget(spec[len("cmd:") :], timeout=timeout)
