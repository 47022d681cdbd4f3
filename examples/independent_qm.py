#!/usr/bin/env python3
"""A small independent [MS-MQDMPR] queue manager behind the ``cmd:`` adapter protocol.

Written from docs/adapters.md (and docs/cases.md for the shape of ``given``) alone: it imports
nothing from the harness, keeps its own tiny data structures (a list of message positions per
queue, cursors holding a reference to a position) and implements just the events of the cursor
receive cases (``peek_message``, ``peek_next_message``, ``dequeue_message`` with and without
``iCursor``) plus ``observe``. Its hello lists exactly those events, so every other case is
``unsupported``.

``--cursor-after-removed`` chooses where a cursor whose message left the list goes on
(cases/requirements.yaml DMPR-3.1.1.11-REMOVED-NEXT):

* ``keeps-place``: after the removed message's place (the reference's reading);
* ``restarts-at-start``: as from Start, the first Available message (the other reading);
* ``skips-one``: skips one more message, an answer no reading gives (deliberately broken).

Run it as a target::

    msmq-harness run cases/mqdmpr/dequeue/dequeue_message.yaml -k cursor-after \\
        --target "cmd:python examples/independent_qm.py --cursor-after-removed keeps-place"
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import dataclass, field
from typing import Any

EVENTS = ["dequeue_message", "peek_message", "peek_next_message"]
READINGS = ("keeps-place", "restarts-at-start", "skips-one")
DEFAULT_PRIORITY = 3
START = "Start"


class Refused(Exception):
    """A request this queue manager answers with ``{"ok": false, "kind": ...}``."""

    def __init__(self, kind: str, error: str) -> None:
        super().__init__(error)
        self.kind = kind


@dataclass
class Position:
    """A MessagePosition: one message in a queue's list, kept after removal for cursors."""

    message: str
    priority: int
    seq: int
    state: str = "Available"
    attributes: dict[str, Any] = field(default_factory=dict)
    in_list: bool = True

    def key(self) -> tuple[int, int]:
        # Higher priority nearer the head; equal priorities in arrival order.
        return (-self.priority, self.seq)


@dataclass
class Queue:
    name: str
    positions: list[Position] = field(default_factory=list)

    def insert(self, pos: Position) -> None:
        index = len(self.positions)
        for i, other in enumerate(self.positions):
            if pos.key() < other.key():
                index = i
                break
        self.positions.insert(index, pos)

    def remove(self, pos: Position) -> None:
        self.positions.remove(pos)
        pos.in_list = False
        pos.state = "Deleted"

    def after(self, ref: Position | str) -> list[Position]:
        """The positions a forward walk from ``ref`` visits (``ref.Next`` onwards)."""
        if ref == START:
            return list(self.positions)
        assert isinstance(ref, Position)
        if ref.in_list:
            return self.positions[self.positions.index(ref) + 1 :]
        # A removed position keeps its place: what followed it still follows it.
        return [p for p in self.positions if p.key() > ref.key()]


@dataclass
class Descriptor:
    name: str
    queue: Queue
    access: str
    share: str


@dataclass
class Cursor:
    name: str
    desc: Descriptor
    state: str = "Unread"
    ref: Position | str = START


class QueueManager:
    def __init__(self, reading: str) -> None:
        self.reading = reading
        self._reset()

    def _reset(self) -> None:
        self.queues: dict[str, Queue] = {}
        self.descs: dict[str, Descriptor] = {}
        self.cursors: dict[str, Cursor] = {}
        self.messages: dict[str, Position] = {}
        self._seq = itertools.count()

    # ---- setup -----------------------------------------------------------------------------
    def setup(self, given: dict[str, Any]) -> None:
        self._reset()
        for key in given:
            if key not in ("queues", "open", "cursors"):
                raise Refused("Unsupported", f"given.{key} is not implemented")
        for q in given.get("queues", []):
            queue = Queue(q["name"])
            self.queues[queue.name] = queue
            for m in q.get("messages", []):
                m = dict(m)
                mid = str(m.pop("id"))
                state = m.pop("State", "Available")
                prio = int(m.pop("Priority", DEFAULT_PRIORITY))
                pos = Position(mid, prio, next(self._seq), state, m)
                queue.insert(pos)
                self.messages[mid] = pos
        for o in given.get("open", []):
            self.descs[o["name"]] = Descriptor(
                o["name"],
                self.queues[o["queue"]],
                o.get("access", "ReceiveAccess"),
                o.get("share", "DenyNone"),
            )
        for c in given.get("cursors", []):
            self.cursors[c["name"]] = Cursor(c["name"], self.descs[c["open"]])

    # ---- seeking ---------------------------------------------------------------------------
    @staticmethod
    def _visible(pos: Position, peek: bool) -> bool:
        if pos.state == "Available":
            return True
        return peek and pos.state == "Locked" and bool(pos.attributes.get("AllowPeekWhenLocked"))

    def _seek(self, queue: Queue, ref: Position | str, peek: bool) -> Position | None:
        """The first position after ``ref`` a peek (or a receive) may return."""
        if isinstance(ref, Position) and not ref.in_list:
            if self.reading == "restarts-at-start":
                ref = START
            elif self.reading == "skips-one":
                found = [p for p in queue.after(ref) if self._visible(p, peek)]
                return found[1] if len(found) > 1 else None
        for pos in queue.after(ref):
            if self._visible(pos, peek):
                return pos
        return None

    def _desc(self, args: dict[str, Any]) -> Descriptor:
        name = args.get("iQueueDesc")
        if name not in self.descs:
            raise Refused("Error", f"unknown open queue descriptor {name!r}")
        return self.descs[name]

    def _cursor(self, args: dict[str, Any], desc: Descriptor) -> Cursor | None:
        name = args.get("iCursor")
        if name is None:
            return None
        cursor = self.cursors.get(name)
        if cursor is None or cursor.desc is not desc:
            raise Refused("Error", f"unknown cursor {name!r} for descriptor {desc.name!r}")
        return cursor

    @staticmethod
    def _nothing(timeout: Any) -> dict[str, Any]:
        if timeout not in (0, None):
            raise Refused("Unsupported", "waiting for a message is not implemented")
        return {"rStatus": "MQ_ERROR_IO_TIMEOUT"}

    # ---- events ----------------------------------------------------------------------------
    def peek_message(self, args: dict[str, Any]) -> dict[str, Any]:
        desc = self._desc(args)
        cursor = self._cursor(args, desc)
        if cursor is None:
            pos = self._seek(desc.queue, START, peek=True)
            if pos is None:
                return self._nothing(args.get("iTimeout"))
            return {"rStatus": "MQ_OK", "rMessage": pos.message}
        if cursor.state == "Read":
            ref = cursor.ref
            assert isinstance(ref, Position)
            if not ref.in_list:
                return {"rStatus": "MQ_ERROR_MESSAGE_ALREADY_RECEIVED"}
            return {"rStatus": "MQ_OK", "rMessage": ref.message}
        return self._cursor_peek(cursor, args)

    def peek_next_message(self, args: dict[str, Any]) -> dict[str, Any]:
        desc = self._desc(args)
        cursor = self._cursor(args, desc)
        if cursor is None or cursor.state != "Read":
            return {"rStatus": "MQ_ERROR_ILLEGAL_CURSOR_ACTION"}
        return self._cursor_peek(cursor, args)

    def _cursor_peek(self, cursor: Cursor, args: dict[str, Any]) -> dict[str, Any]:
        pos = self._seek(cursor.desc.queue, cursor.ref, peek=True)
        if pos is None:
            if args.get("iTimeout") not in (0, None):
                raise Refused("Unsupported", "waiting for a message is not implemented")
            return {"rStatus": "MQ_ERROR_IO_TIMEOUT"}
        cursor.ref = pos
        cursor.state = "Read"
        return {"rStatus": "MQ_OK", "rMessage": pos.message}

    def dequeue_message(self, args: dict[str, Any]) -> dict[str, Any]:
        if args.get("iTransaction") is not None or args.get("iTwoPhaseRead"):
            raise Refused("Unsupported", "transactional and two-phase receives are not implemented")
        desc = self._desc(args)
        cursor = self._cursor(args, desc)
        queue = desc.queue
        if cursor is None:
            pos = self._seek(queue, START, peek=False)
            if pos is None:
                return self._nothing(args.get("iTimeout"))
        elif cursor.state == "Read":
            # The message the cursor peeked, if it is still there to take.
            ref = cursor.ref
            assert isinstance(ref, Position)
            if not ref.in_list or ref.state != "Available":
                return {"rStatus": "MQ_ERROR_MESSAGE_ALREADY_RECEIVED"}
            pos = ref
        else:
            pos = self._seek(queue, cursor.ref, peek=False)
            if pos is None:
                if args.get("iTimeout") not in (0, None):
                    raise Refused("Unsupported", "waiting for a message is not implemented")
                return {"rStatus": "MQ_ERROR_MESSAGE_NOT_FOUND"}
        if cursor is not None:
            cursor.ref = pos
            cursor.state = "Unread"
        queue.remove(pos)
        return {"rStatus": "MQ_OK", "rMessage": pos.message}

    # ---- observe ---------------------------------------------------------------------------
    def observe(self, queues: list[str], cursors: list[str]) -> dict[str, Any]:
        qs = {}
        for name in queues:
            if name not in self.queues:
                raise Refused("Error", f"unknown queue {name!r}")
            qs[name] = [
                {"message": p.message, "State": p.state, "Priority": p.priority, **p.attributes}
                for p in self.queues[name].positions
            ]
        cs = {}
        for name in cursors:
            if name not in self.cursors:
                raise Refused("Error", f"unknown cursor {name!r}")
            c = self.cursors[name]
            ref = c.ref if isinstance(c.ref, str) else c.ref.message
            cs[name] = {"CursorState": c.state, "MessagePositionReference": ref}
        return {"queues": qs, "cursors": cs}


def handle(qm: QueueManager, request: dict[str, Any]) -> dict[str, Any]:
    op = request.get("op")
    if op == "hello":
        return {"name": f"independent-qm ({qm.reading})", "events": EVENTS, "capabilities": ["model"]}
    if op == "setup":
        qm.setup(request.get("given") or {})
        return {}
    if op == "event":
        event = request.get("event")
        if event not in EVENTS:
            raise Refused("Unsupported", f"event {event!r} is not implemented")
        return {"result": getattr(qm, str(event))(request.get("args") or {})}
    if op == "observe":
        return qm.observe(request.get("queues") or [], request.get("cursors") or [])
    if op == "control":
        raise Refused("Unsupported", "no control operations: this target is a model alone")
    raise Refused("Error", f"unknown op {op!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cursor-after-removed", choices=READINGS, default="keeps-place")
    options = parser.parse_args(argv)
    qm = QueueManager(options.cursor_after_removed)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if request.get("op") == "bye":
            return 0
        reply: dict[str, Any] = {"id": request.get("id")}
        try:
            reply.update(ok=True, **handle(qm, request))
        except Refused as exc:
            reply.update(ok=False, error=str(exc), kind=exc.kind)
        except Exception as exc:  # an adapter bug: answer it rather than die mid-case
            reply.update(ok=False, error=f"{type(exc).__name__}: {exc}", kind="Error")
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
