"""``cmd:<command>`` targets: an implementation in any language behind the JSON-lines protocol.

Renders the JSON-lines protocol of docs/cases.md: one JSON object per line on the adapter's
stdin and stdout, each request (``hello``, ``setup``, ``event``, ``observe``, then ``bye``)
answered by exactly one reply; ``{"ok": false, "error", "kind"}`` becomes a TargetError of that
kind.  Each request has a timeout: an adapter that hangs, exits, or answers something that is
not a reply is killed, the request fails with ``TargetError`` carrying the tail
of the adapter's stderr, and the adapter is started again for the next case.

Every wait on an adapter is bounded: writing a request (an adapter that reads nothing), its
reply (the request timeout, and a second after the adapter exits even when a process it left
holds its standard output), its exit after ``bye``.  What the adapter leaves behind when it exits
(processes of its process group, or processes that left the group but hold its pipes) is
killed and named: in the failure's detail, or in a warning on standard error when the adapter
is closed.  Everything an adapter says is data: a reply is JSON of finite numbers (``NaN`` and
``Infinity`` are a protocol error) nested at most :data:`MAX_DEPTH` deep.
"""

from __future__ import annotations

import collections
import contextlib
import json
import math
import os
import queue
import re
import selectors
import shlex
import signal
import subprocess
import sys
import threading
import time
from array import array
from collections.abc import Iterator
from itertools import accumulate
from typing import IO, Any

from harness.cases.target import (
    ADM_OUTGOING,
    MODEL,
    WIRE_INITIATOR,
    WIRE_SENDER_PING,
    TargetError,
    TargetInfo,
    hello_events,
    target_error,
)
from harness.cases.targets.kind import target_kind
from harness.results import clean, printable

__all__ = ["CommandTarget", "split_command"]

_STDERR_KEEP = 64  # lines of stderr kept for failure details
_STDERR_LINE = 4096  # bytes kept of each
MAX_LINE = 16 << 20  # the longest reply line read (16 MiB); a longer one is a protocol error
TOO_LONG = "\0too long"  # what the reader thread hands over for such a line
MAX_DEPTH = 100  # the deepest nesting of arrays and objects in a reply; a deeper one is a protocol error
EXIT_GRACE = 1.0  # seconds a reply may still arrive after the adapter exited (a process it left holds the pipe)
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
        assert self.proc.stdin is not None and self.proc.stdout is not None and self.proc.stderr is not None
        # the pipes, to find who holds them once the adapter is gone (see leftovers)
        self.pipes = {os.fstat(s.fileno()).st_ino for s in (self.proc.stdin, self.proc.stdout, self.proc.stderr)}
        os.set_blocking(self.proc.stdin.fileno(), False)  # writes wait with a deadline (write)
        # Each reader thread closes its own stream at its end: closing it from another thread
        # while the reader is blocked in it would wait for the reader, i.e. for whoever holds
        # the pipe's other end (a process the adapter left behind).
        self.readers = [
            threading.Thread(target=self._pump, args=(self.proc.stdout,), daemon=True),
            threading.Thread(target=self._drain, args=(self.proc.stderr,), daemon=True),
        ]
        for reader in self.readers:
            reader.start()

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
        finally:
            with contextlib.suppress(OSError, ValueError):
                stream.close()
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
        finally:
            with contextlib.suppress(OSError, ValueError):
                stream.close()

    def stderr_tail(self) -> str:
        return "\n".join(self.stderr)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def write(self, line: str, timeout: float | None) -> None:
        """Write ``line`` to the adapter's stdin; TimeoutError when the adapter has not read it
        all within ``timeout`` seconds (None: no limit while the adapter runs)."""
        assert self.proc.stdin is not None
        fd = self.proc.stdin.fileno()
        view = memoryview(line.encode("utf-8", "surrogatepass"))
        deadline = None if timeout is None else time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_WRITE)
            while view:
                try:
                    view = view[os.write(fd, view) :]
                    continue
                except BlockingIOError:
                    pass
                remaining = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
                if remaining <= 0:
                    raise TimeoutError(f"the adapter read no more of the request within {timeout:g} s")
                if not self.alive():
                    raise BrokenPipeError("the adapter exited")
                selector.select(remaining)

    def exited(self, grace: float) -> bool:
        """Wait up to ``grace`` seconds for the adapter to exit; whether it has."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=grace)
        return self.proc.poll() is not None

    def kill(self) -> list[str]:
        """Kill the adapter's whole process group and every process that holds its pipes, and
        close its stdin (its reader threads close stdout and stderr when they end).  Returns the
        processes the adapter left behind (pid and command line) when it had exited already;
        [] while it ran (its children went with it)."""
        exited = self.proc.poll() is not None
        left = self.leftovers() if exited else []
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        if self._pipes_held():  # a process that left the group holds a pipe
            for pid in _holders(self.pipes, self.proc.pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError, ValueError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        return left

    def _pipes_held(self, grace: float = 0.2) -> bool:
        """Whether a reader thread has not seen the end of its pipe within ``grace`` seconds
        (someone other than the adapter holds the pipe's other end)."""
        deadline = time.monotonic() + grace
        for reader in self.readers:
            reader.join(timeout=max(0.0, deadline - time.monotonic()))
        return any(reader.is_alive() for reader in self.readers)

    def leftovers(self) -> list[str]:
        """The processes of the adapter's process group, and those holding its pipes, other than
        the adapter itself: ``"pid (command line)"`` each.  Cheap when there are none: only when
        the group still has a member or a reader thread has not seen the end of its pipe is
        /proc searched."""
        group_alive = True
        try:
            os.killpg(self.proc.pid, 0)
        except (ProcessLookupError, PermissionError):
            group_alive = False
        if not group_alive and not self._pipes_held():
            return []
        if not os.path.isdir("/proc"):  # the group's members cannot be named
            return ["(processes of its group)"] if group_alive else ["(a process holding its output)"]
        found = dict.fromkeys(pid for pid, _, pgrp in _proc_stats() if pgrp == self.proc.pid and pid != self.proc.pid)
        found.update(dict.fromkeys(_holders(self.pipes, self.proc.pid)))
        return [f"{pid} ({_command_line(pid)})" for pid in found]


# ---------------------------------------------------------------------------- /proc (Linux)
_STAT_TAIL = re.compile(r"\)\s+(\S+)\s+(-?\d+)\s+(-?\d+)\s+(-?\d+)")


def _proc_stats() -> Iterator[tuple[int, int, int]]:
    """(pid, session, process group) of every running process /proc shows (zombies, whose
    reaper has not come yet, do not run; none without /proc)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
        except OSError:
            continue
        found = _STAT_TAIL.search(stat, stat.rfind(")"))  # the command may hold ")"
        if found is not None and found.group(1) not in ("Z", "X"):
            _ppid, pgrp, session = (int(x) for x in found.groups()[1:])
            yield int(name), session, pgrp


def _holders(pipes: set[int], adapter_pid: int) -> list[int]:
    """The processes outside this one's session that hold one of ``pipes`` (inode numbers): what
    the adapter (a session of its own) or its descendants left.  None of this process's own
    children are among them: they share its session, and a descendant of the adapter cannot join
    it."""
    own = os.getsid(0)
    targets = {f"pipe:[{inode}]" for inode in pipes}
    found = []
    for pid, session, _ in _proc_stats():
        if session == own or pid == adapter_pid:
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") in targets:
                    found.append(pid)
                    break
            except OSError:
                continue
    return found


def _command_line(pid: int) -> str:
    """The command line of ``pid``, printable and cut at 120 characters ("?" when unknown)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read(4096)
    except OSError:
        return "?"
    text = printable(raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")) or "?"
    return text if len(text) <= 120 else text[:119] + "…"


# ---------------------------------------------------------------------------- replies
class _NonFinite(ValueError):
    """A number JSON cannot hold (NaN, Infinity, or a literal beyond a float's range)."""


class _TooDeep(ValueError):
    """A reply nested deeper than :data:`MAX_DEPTH`."""


def _constant(name: str) -> Any:
    raise _NonFinite(name)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NonFinite(text)
    return value


# a JSON string, or the rest of an unterminated one (possessive: linear on any text)
_JSON_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"?')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEPS = str.maketrans({"[": "\x01", "{": "\x01", "]": "\xff", "}": "\xff"})


def too_deep(text: str) -> int | None:
    """How deep the arrays and objects of the JSON ``text`` nest (brackets inside strings not
    counted) when that is deeper than :data:`MAX_DEPTH`, else None; found without parsing (the
    parser recurses) in time linear in the text."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return None
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    depth = max(accumulate(array("b", brackets.translate(_STEPS).encode("latin-1"))), default=0)
    return depth if depth > MAX_DEPTH else None


def parse_reply(line: str) -> Any:
    """The JSON value of a reply line, cleaned (harness.report.results.clean).  ValueError when
    it is not JSON; its subclasses when it holds NaN or Infinity (or a literal beyond a float's
    range), or nests deeper than :data:`MAX_DEPTH`."""
    depth = too_deep(line)
    if depth is not None:
        raise _TooDeep(f"the reply nests {depth} arrays and objects deep, more than the limit of {MAX_DEPTH}")
    try:
        value = json.loads(line, parse_constant=_constant, parse_float=_finite)
    except RecursionError:  # unreachable below MAX_DEPTH; never a traceback of the json module
        raise _TooDeep(f"the reply nests deeper than the limit of {MAX_DEPTH}") from None
    return clean(value)  # lone surrogates of "\ud800" escapes made printable


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
            raise TargetError(f"cannot start {self.command!r}: {e}") from e
        self._adapter = adapter
        return adapter

    def _fail(self, adapter: _Adapter, what: str) -> TargetError:
        left = adapter.kill()
        if self._adapter is adapter:
            self._adapter = None
        code = adapter.proc.returncode
        detail = f"{what} (adapter {self.command!r} exit status {code})"
        if left:
            detail += f"; it left {_processes(left)} running, killed"
        tail = adapter.stderr_tail()
        if tail:
            detail += "\nadapter stderr:\n" + tail
        return TargetError(detail)

    @property
    def _deadline(self) -> float | None:
        """The request timeout in seconds; None when there is none (0, negative or not a number)."""
        return self.timeout if math.isfinite(self.timeout) and self.timeout > 0 else None

    def _reply_line(self, adapter: _Adapter, op: Any) -> str | None:
        """The next line of the adapter's stdout (None: it ended), waiting at most the request
        timeout, and at most :data:`EXIT_GRACE` seconds once the adapter has exited (a process
        it left may hold the pipe open)."""
        limit = self._deadline
        start = time.monotonic()
        exited_at: float | None = None
        while True:
            now = time.monotonic()
            if limit is not None and now - start >= limit:
                raise self._fail(adapter, f"{op}: no reply within {self.timeout:g} s")
            if exited_at is None and not adapter.alive():
                exited_at = now
            if exited_at is not None and now - exited_at >= EXIT_GRACE:
                return None
            wait = 0.1 if limit is None else min(0.1, limit - (now - start))
            with contextlib.suppress(queue.Empty):
                return adapter.lines.get(timeout=max(wait, 0.001))

    def _request(self, message: dict[str, Any], *, start: bool = False) -> dict[str, Any]:
        adapter = self._running(message, start)
        op = message.get("op")
        self._next_id += 1
        message = {**message, "id": self._next_id}
        try:
            line = json.dumps(message, allow_nan=False) + "\n"
        except (TypeError, ValueError) as e:
            raise TargetError(f"{op}: cannot encode the request as JSON: {e}") from e
        try:
            adapter.write(line, self._deadline)
        except (OSError, ValueError) as e:  # TimeoutError is an OSError
            raise self._fail(adapter, f"{op}: cannot write to the adapter: {e}") from e
        reply = self._reply(adapter, op, message["id"])
        if not reply["ok"]:
            raise target_error(str(reply.get("kind", "Error")), str(reply.get("error", "")))
        return reply

    def _running(self, message: dict[str, Any], start: bool) -> _Adapter:
        """The adapter, alive; with ``start``, a new one (greeted unless ``message`` is the hello)
        in place of one that exited or failed."""
        adapter = self._adapter
        if adapter is not None and not adapter.alive():
            if not start:
                raise self._fail(adapter, "the adapter exited")
            adapter.kill()
            adapter = self._adapter = None
        if adapter is None:
            if not start:
                raise TargetError("the adapter is not running (it failed earlier in this case)")
            adapter = self._start()
            if message.get("op") != "hello":
                self._hello(adapter)
        return adapter

    def _reply(self, adapter: _Adapter, op: Any, request_id: int) -> dict[str, Any]:
        """The adapter's reply to request ``request_id``: one JSON object with a boolean ``ok``;
        anything else is a protocol error that ends this adapter (:meth:`_fail`)."""
        reply_line = self._reply_line(adapter, op)
        if reply_line is None:
            raise self._fail(adapter, f"{op}: the adapter exited without a reply")
        if reply_line == TOO_LONG:
            raise self._fail(adapter, f"{op}: a reply line longer than {MAX_LINE} bytes")
        try:
            reply = parse_reply(reply_line)
        except _NonFinite as e:
            what = f"{op}: the reply has the number {str(e)[:40]!r}, not JSON (a reply's numbers are finite)"
            raise self._fail(adapter, what) from None
        except _TooDeep as e:
            raise self._fail(adapter, f"{op}: {e}: {reply_line.strip()[:200]!r}") from None
        except ValueError:
            what = f"{op}: the reply is not JSON: {reply_line.strip()[:200]!r}{STDOUT_HINT}"
            raise self._fail(adapter, what) from None
        if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
            hint = "" if isinstance(reply, dict) else STDOUT_HINT  # print(42) is JSON, but no reply
            raise self._fail(adapter, f"{op}: the reply has no boolean 'ok': {reply_line.strip()[:200]!r}{hint}")
        if reply.get("id") != request_id:  # one protocol error, then a fresh adapter: no cascade
            raise self._fail(
                adapter,
                f"{op}: the reply answers request id {reply.get('id')!r}, not {request_id} "
                "(an unsolicited or late reply: the adapter is out of step)",
            )
        return reply

    def _hello(self, adapter: _Adapter) -> TargetInfo:
        reply = self._request({"op": "hello"})
        try:
            events = hello_events(reply)  # absent: every event; []: none
        except ValueError as e:
            raise self._fail(adapter, str(e)) from None
        info = TargetInfo(
            name=str(reply.get("name") or self.command),
            version=str(reply.get("version") or ""),
            events=events,
            capabilities=_capabilities(reply),
        )
        self._info = info
        return info

    # ------------------------------------------------------------------------ Target
    def hello(self) -> TargetInfo:
        adapter = self._adapter
        if adapter is None or not adapter.alive():
            if adapter is not None:
                adapter.kill()
            adapter = self._start()
        return self._hello(adapter)

    def setup(self, given: dict[str, Any]) -> None:
        self._request({"op": "setup", "given": given}, start=True)

    def event(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        reply = self._request({"op": "event", "event": name, "args": args})
        result = reply.get("result", {})
        if not isinstance(result, dict):
            raise TargetError(f"{name}: 'result' is not an object: {result!r}")
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
            raise TargetError(f"{op}: 'result' is not an object: {result!r}")
        return result

    def close(self) -> None:
        """Say ``bye``, wait (at most 2 s) for the adapter to exit, then kill what is left of
        it: a process it left running is named in a warning on standard error."""
        adapter, self._adapter = self._adapter, None
        if adapter is None:
            return
        grace = min(self._deadline or 2.0, 2.0)
        try:
            if adapter.alive() and adapter.proc.stdin is not None:
                adapter.write(json.dumps({"op": "bye"}) + "\n", grace)
                adapter.proc.stdin.close()
        except (OSError, ValueError):
            pass
        adapter.exited(grace)
        left = adapter.kill()
        if left:
            with contextlib.suppress(OSError, ValueError):
                print(
                    f"msmq-harness: warning: adapter {self.command!r} left {_processes(left)} "
                    "running after it exited; killed",
                    file=sys.stderr,
                    flush=True,
                )

    def __del__(self) -> None:  # an adapter never outlives its target
        adapter = getattr(self, "_adapter", None)
        if adapter is not None and os.getpid() == adapter.owner_pid:
            with contextlib.suppress(Exception):
                adapter.kill()


def _processes(named: list[str]) -> str:
    return ("a process: " if len(named) == 1 else f"{len(named)} processes: ") + ", ".join(named)


@target_kind("cmd:", "cmd:'<command>'", "any implementation behind the JSON-lines adapter protocol (docs/adapters.md)")
def _make(spec: str, timeout: float) -> CommandTarget:
    return CommandTarget(spec[len("cmd:") :], timeout=timeout)
