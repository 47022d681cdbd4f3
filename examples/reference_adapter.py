#!/usr/bin/env python3
"""The reference implementation behind the JSON-lines adapter protocol of docs/adapters.md.

Run as ``--target "cmd:python examples/reference_adapter.py"``: it reads one JSON request per
line on stdin and writes one JSON reply per line on stdout.  It is written against
docs/adapters.md, as a vendor's adapter would be: the model part calls the [MS-MQDMPR] reference
model (``harness.model``: QueueManager, Cursor, Message, ...) and does the rest itself, from the
docs: it builds ``given`` with its defaults, carries arguments and results by the documented
kinds (objects by the names the case gave them, statuses by name), serves the harness operations
(``advance_clock``, ``fire_due_timers``, ``read_result``, ``queue_attributes``) and answers
``observe``.  The control operations of a sender under test go to the reference [MS-MQQB] sender
(``harness.cases.targets.sender.ReferenceSender``: the sender connects to the harness's acceptor
over TCP from this process).  ``--sender pkg.mod:Class`` runs an OutgoingQueueProcessing subclass
as the sender; ``--no-adm`` reports no ADM state, so that the sender is judged on the wire alone.
Copy it to put another implementation behind the harness: replace the calls into the model.
"""

from __future__ import annotations

import itertools
import json
import sys
import uuid
from enum import Enum
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the harness, when run from a checkout

from harness.model import (
    INFINITE,
    Cursor,
    Message,
    MessageClass,
    MessagePosition,
    MessagePositionState,
    MessageSeekAction,
    MQStatus,
    OpenQueueDescriptor,
    OperationType,
    OutgoingQueue,
    Queue,
    QueueAccessType,
    QueueManager,
    QueueShareMode,
    ReadResult,
    SeekDirection,
    Transaction,
    TransactionalOperation,
    UndefinedBehaviour,
    WaitingMessageReadOperation,
)
from packets.formatname import FormatName

NAME = "reference"
SERVED = ["model", "wire:initiator", "wire:sender-ping", "adm:outgoing"]
HARNESS_OPERATIONS = ["advance_clock", "fire_due_timers", "queue_attributes", "read_result"]

# docs/adapters.md, "Events": the arguments that name an object of the case, by kind.
OBJECT_ARGUMENTS = {
    "iQueue": "queue",
    "iTargetQueue": "queue",
    "iReleaseOnQueue": "queue",
    "iOutgoingQueue": "queue",
    "iQueueDesc": "open",
    "iOpenQueueDescriptor": "open",
    "cursor": "cursor",
    "iCursor": "cursor",
    "iTransaction": "transaction",
    "iInitialPosition": "position",
    "iPosition": "position",
    "iMessagePosition": "position",
    "iMessagePos": "position",
    "iMessage": "message",
    "iReader": "reader",
}
# ... and the arguments that carry an enumeration by member name.
ENUM_ARGUMENTS: dict[str, type[Enum]] = {
    "iSeekDirection": SeekDirection,
    "iLookupOperation": MessageSeekAction,
    "iLookupAction": MessageSeekAction,
    "iRequiredAccess": QueueAccessType,
    "iSharedMode": QueueShareMode,
    "iReason": MessageClass,
    "iStatus": MQStatus,
}
# The name of the second value of events that return (rStatus, value).
SECOND_RESULT = {
    "open_queue": "rOpenQueueDescriptor",
    "create_queue": "rQueue",
    "seek_available_message_position_with_id": "rMessagePosition",
    "expand_format_name": "rOutputFormatName",
    "get_message_for_peek": "rPosition",
    "get_next_message_for_peek": "rPosition",
    "get_next_message_for_dequeue": "rPosition",
}
COMPUTER = "LOCALHOST"


class Refused(Exception):
    """A request answered with ``{"ok": false, "kind": kind, "error": ...}``."""

    def __init__(self, kind: str, error: str) -> None:
        super().__init__(error)
        self.kind = kind


class Clock:
    """The queue manager's clock: it moves only by advance_clock (docs: "Time")."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Model:
    """The [MS-MQDMPR] part of the protocol: setup, event, observe."""

    def __init__(self) -> None:
        self.setup({})

    # -- names -----------------------------------------------------------------------------------
    def _name(self, kind: str, name: str, obj: Any) -> None:
        self.objects[kind][name] = obj
        self.names[id(obj)] = name
        self.keep.append(obj)

    def _auto(self, kind: str, prefix: str, obj: Any) -> str:
        name = self.names.get(id(obj))
        if name is None:
            name = f"{prefix}{next(self.counters.setdefault(kind, itertools.count(1)))}"
            self._name(kind, name, obj)
        return name

    def _get(self, kind: str, name: Any) -> Any:
        try:
            return self.objects[kind][name]
        except (KeyError, TypeError):
            raise Refused("Error", f"unknown {kind} {name!r}") from None

    def out(self, value: Any) -> Any:
        """A model value as the protocol carries it (docs: "Values")."""
        if isinstance(value, Enum):
            return value.name
        if value is None or isinstance(value, bool | str | int):
            return value
        if isinstance(value, float):
            return "Infinite" if value == INFINITE else value
        if isinstance(value, MessagePosition):
            return value._special if value.is_special else self.out(value.MessageReference)
        if isinstance(value, Message):
            name = self.names.get(id(value))
            if name is None and isinstance(value.Identifier, str):
                name = value.Identifier
            return name if name is not None else f"#{value.LookupIdentifier:x}"
        if isinstance(value, WaitingMessageReadOperation):
            return self._auto("reader", "read", value)
        if isinstance(value, OpenQueueDescriptor):
            return self._auto("open", "open", value)
        if isinstance(value, Cursor):
            return self._auto("cursor", "cursor", value)
        if isinstance(value, Transaction):
            return self.names.get(id(value), value.Identifier)
        if isinstance(value, Queue):
            name = self.names.get(id(value))
            if name is None:
                name = getattr(value, "DestinationFormatName", "") or value.Pathname
                self._name("queue", name, value)
            return name
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        return str(value)

    # -- setup -----------------------------------------------------------------------------------
    def setup(self, given: dict[str, Any]) -> None:
        """A fresh queue manager built from ``given`` (docs: "Setup: `given`")."""
        self.clock = Clock()
        ids = itertools.count(1)
        self.qm = QueueManager(self.clock, lambda: uuid.UUID(int=next(ids)), QueueManagerQuota=1 << 40)
        self.objects: dict[str, dict[str, Any]] = {
            k: {} for k in ("queue", "message", "open", "cursor", "transaction", "reader")
        }
        self.names: dict[int, str] = {}
        self.keep: list[Any] = []
        self.counters: dict[str, itertools.count[int]] = {}
        states = []
        for qspec in given.get("queues") or []:
            queue = self._queue(dict(qspec), create=True)
            for mspec in qspec.get("messages") or []:
                mspec = dict(mspec)
                state = mspec.pop("State", None)  # None: as Enqueue Message left it (Available)
                message = self._message(mspec)
                status = self.qm.enqueue_message(queue, message)
                if status != 0:
                    raise Refused("Error", f"setup: Enqueue Message of {mspec['id']!r} returned {status.name}")
                if state is not None:
                    states.append((message, state))
        for message, state in states:  # a position's State as given, once every message is in
            position = message.MessagePositionReference
            assert position is not None
            position.State = MessagePositionState[state]
        for name in given.get("transactions") or []:
            self._name("transaction", str(name), self.qm.create_transaction(str(name)))
        for dspec in given.get("open") or []:
            open_status, desc = self.qm.open_queue(
                self._format_name(self._get("queue", dspec["queue"])),
                QueueAccessType[dspec.get("access", "ReceiveAccess")],
                QueueShareMode[dspec.get("share", "DenyNone")],
            )
            if desc is None:
                raise Refused("Error", f"setup: Open Queue of {dspec['name']!r} returned {open_status.name}")
            self._name("open", dspec["name"], desc)
        for cspec in given.get("cursors") or []:
            cursor = self.qm.open_cursor(self._get("open", cspec["open"]))
            if cursor is None:
                raise Refused("Error", f"setup: Open Cursor of {cspec['name']!r} returned no cursor")
            self._name("cursor", cspec["name"], cursor)
        for lock in given.get("locked") or []:  # received under the transaction (3.1.7.1.10)
            position = self._get("message", lock["message"]).MessagePositionReference
            position.State = MessagePositionState.Locked
            self._get("transaction", lock["transaction"]).TransactionalOperationCollection.append(
                TransactionalOperation(OperationType.Dequeue, position, DequeueReason=MessageClass.AckReceive)
            )

    @staticmethod
    def _format_name(queue: Queue) -> str:
        if isinstance(queue, OutgoingQueue):
            return str(queue.DestinationFormatName)
        return str(FormatName.direct(queue.Pathname))  # [MS-MQMQ] 2.1.1, 2.1.2

    @staticmethod
    def _attributes(obj: Any, attributes: dict[str, Any], what: str) -> None:
        """ADM attributes as docs/adapters.md gives their forms in `given`."""
        for key, value in attributes.items():
            if not hasattr(obj, key):
                raise Refused("Error", f"{what} has no ADM attribute {key!r}")
            current = getattr(obj, key)
            if isinstance(current, Enum) and isinstance(value, str):
                value = type(current)[value]
            elif isinstance(current, bytes) and isinstance(value, str):
                value = value.encode("utf-8")
            setattr(obj, key, value)

    def _queue(self, spec: dict[str, Any], *, create: bool) -> Queue:
        name = str(spec.pop("name"))
        spec.pop("messages", None)
        if "DestinationFormatName" in spec:
            out = self.qm.new_queue(OutgoingQueue, spec.get("Pathname", ""))
            self._attributes(out, spec, "OutgoingQueue")
            out.Identifier = self.qm.id_generator()
            self.qm.QueueCollection.append(out)
            self._name("queue", name, out)
            return out
        path = spec.pop("Pathname", f"{COMPUTER}\\private$\\{name}")
        template = self.qm.new_queue(Queue, path)
        self.qm.set_queue_defaults(template)
        template.Pathname = path
        self._attributes(template, spec, "Queue")
        if not create:
            self._name("queue", name, template)
            return template
        status, queue = self.qm.create_queue(template)
        if queue is None:
            raise Refused("Error", f"setup: Create Queue of {name!r} returned {self.out(status)}")
        self._attributes(queue, spec, "Queue")
        self._name("queue", name, queue)
        return queue

    def _message(self, spec: dict[str, Any]) -> Message:
        spec = dict(spec)
        name = str(spec.pop("id"))
        message = Message()
        message.Identifier = name
        self._attributes(message, spec, "Message")
        self._name("message", name, message)
        return message

    # -- events ----------------------------------------------------------------------------------
    def event(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        if name == "advance_clock":
            seconds = args.get("seconds", 0)
            if isinstance(seconds, bool) or not isinstance(seconds, int | float):
                raise Refused("Error", f"advance_clock: seconds must be a number, got {seconds!r}")
            self.clock.now += seconds
            return {"rFired": self.qm.fire_due_timers()}
        if name == "fire_due_timers":
            return {"rFired": self.qm.fire_due_timers()}
        if name == "read_result":
            reader = self._get("reader", args.get("iReader"))
            return {"rPending": self.out(reader)} if reader.result is None else self._results(name, reader.result)
        if name == "queue_attributes":
            queue = self._get("queue", args.get("iQueue"))
            attributes = {
                k: self.out(v)
                for k, v in vars(queue).items()
                if k[:1].isupper() and isinstance(v, Enum | bool | int | float | str | type(None))
            }
            return {**attributes, "Active": queue.Active, "MessageCount": len(queue.MessagePositionList)}
        on_cursor = "cursor" in args and callable(getattr(Cursor, name, None))
        method = getattr(Cursor if on_cursor else QueueManager, name, None)
        if name.startswith("_") or not callable(method):
            raise Refused("Unsupported", f"no event {name!r}")
        args = dict(args)
        if on_cursor:
            result = getattr(self._get("cursor", args.pop("cursor")), name)(**self._arguments(args))
        else:
            result = getattr(self.qm, name)(**self._arguments(args))
        out = self._results(name, result)
        if name == "create_transaction" and isinstance(args.get("iTransactionIdentifier"), str):
            self._name("transaction", args["iTransactionIdentifier"], result)
            out = {"rTransaction": args["iTransactionIdentifier"]}
        elif name == "create_queue" and isinstance(args.get("iQueue"), dict) and out.get("rQueue") is not None:
            self._name("queue", str(args["iQueue"]["name"]), result[1])
            out["rQueue"] = str(args["iQueue"]["name"])
        return out

    def _context_queue(self, args: dict[str, Any]) -> Queue | None:
        """The queue whose Start or End a position argument names."""
        for key in ("iQueue", "iTargetQueue"):
            if isinstance(args.get(key), Queue):
                return args[key]
        for key in ("iQueueDesc", "iOpenQueueDescriptor"):
            if isinstance(args.get(key), OpenQueueDescriptor):
                return args[key].QueueReference
        for key in ("cursor", "iCursor"):
            if isinstance(args.get(key), Cursor) and args[key].OpenQueueDescriptorReference is not None:
                return args[key].OpenQueueDescriptorReference.QueueReference
        return next(iter(self.objects["queue"].values()), None)

    def _arguments(self, args: dict[str, Any]) -> dict[str, Any]:
        """The case's arguments as the model takes them (docs: "Events", the argument kinds)."""
        out: dict[str, Any] = {}
        positions = {}
        for key, value in args.items():
            kind = OBJECT_ARGUMENTS.get(key)
            if value is None:
                out[key] = None
            elif kind == "position":
                positions[key] = value
            elif kind == "message" and isinstance(value, dict):
                out[key] = self._message(value)
            elif kind == "queue" and isinstance(value, dict):
                out[key] = self._queue(dict(value), create=False)
            elif kind is not None:
                out[key] = self._get(kind, value)
            elif key == "iLookupId" and isinstance(value, str):
                out[key] = self._get("message", value).LookupIdentifier
            elif key in ("iFormatName", "iInputFormatName") and value in self.objects["queue"]:
                out[key] = self._format_name(self.objects["queue"][value])
            elif key == "iTimeout" and value in ("Infinite", "INFINITE"):
                out[key] = INFINITE
            elif key in ENUM_ARGUMENTS and isinstance(value, str) and value in ENUM_ARGUMENTS[key].__members__:
                out[key] = ENUM_ARGUMENTS[key][value]
            else:
                out[key] = value
        for key, value in positions.items():
            if value in ("Start", "End"):
                queue = self._context_queue(out)
                if queue is None:
                    raise Refused("Error", f"{key}: {value} names no queue's position")
                out[key] = getattr(queue.MessagePositionList, value)
            else:
                out[key] = self._get("message", value).MessagePositionReference
        return out

    def _results(self, event: str, result: Any) -> dict[str, Any]:
        """An event's return by the result names of docs/adapters.md; absent values left out."""
        if result is None:
            return {"rStatus": "Failed"} if event == "wait_for_new_message" else {}
        if isinstance(result, ReadResult):
            out = {"rStatus": result.rStatus, "rMessage": result.rMessage, "rPending": result.pending}
            return {k: self.out(v) for k, v in out.items() if v is not None}
        if isinstance(result, tuple):
            out = {"rStatus": self.out(result[0])}
            if len(result) > 1 and result[1] is not None:
                out[SECOND_RESULT.get(event, "rValue")] = self.out(result[1])
            return out
        for kind, key in (
            (MessagePosition, "rMessagePosition"),
            (Cursor, "rCursor"),
            (Transaction, "rTransaction"),
            (WaitingMessageReadOperation, "rPending"),
        ):
            if isinstance(result, kind):
                return {key: self.out(result)}
        if isinstance(result, Enum | bool):
            return {"rStatus": self.out(result)}
        return {"rValue": self.out(result)}

    # -- observe ---------------------------------------------------------------------------------
    def observe(self, queues: list[str], cursors: list[str]) -> dict[str, Any]:
        out_queues = {}
        for name in queues:
            entries = []
            for position in self._get("queue", name).MessagePositionList:
                message = position.MessageReference
                entry = {"message": self.out(message), "State": self.out(position.State)}
                if message is not None:
                    entry.update(Priority=message.Priority, Label=message.Label)
                    entry["AllowPeekWhenLocked"] = message.AllowPeekWhenLocked
                entries.append(entry)
            out_queues[name] = entries
        out_cursors = {}
        for name in cursors:
            cursor = self._get("cursor", name)
            out_cursors[name] = {
                "CursorState": self.out(cursor.CursorState),
                "MessagePositionReference": self.out(cursor.MessagePositionReference),
            }
        return {"queues": out_queues, "cursors": out_cursors}


class Adapter:
    """One request -> its reply (None for ``bye``)."""

    def __init__(self, sender_class: type | None = None, *, report_adm: bool = True) -> None:
        from harness.cases.targets.sender import ReferenceSender

        self.model = Model()
        self.sender = ReferenceSender(sender_class, report_adm=report_adm)

    def events(self) -> list[str]:
        spec = {
            name
            for cls in (QueueManager, Cursor)
            for klass in cls.__mro__  # the QueueManager's events live in its family classes (qm_*)
            for name, fn in vars(klass).items()
            if callable(fn) and not name.startswith("_") and (fn.__doc__ or "")[:1].isdigit()
        }
        return sorted(spec | set(HARNESS_OPERATIONS))

    def handle(self, request: dict[str, Any]) -> dict[str, Any] | None:
        reply = self._answer(request)
        if reply is not None and "id" in request:
            reply = {"id": request["id"], **reply}
        return reply

    def _answer(self, request: dict[str, Any]) -> dict[str, Any] | None:
        from harness.cases.target import TargetError

        op = request.get("op")
        try:
            if op == "hello":
                served = [c for c in SERVED if c != "adm:outgoing" or self.sender.report_adm]
                return {"ok": True, "name": NAME, "events": self.events(), "capabilities": served}
            if op == "setup":
                self.model.setup(request.get("given") or {})
                return {"ok": True}
            if op == "event":
                return {"ok": True, "result": self.model.event(str(request.get("event")), request.get("args") or {})}
            if op == "observe":
                return {"ok": True, **self.model.observe(request.get("queues") or [], request.get("cursors") or [])}
            if op == "control":
                return {
                    "ok": True,
                    "result": self.sender.control(str(request.get("control")), request.get("args") or {}),
                }
            if op == "bye":
                return None
            return {"ok": False, "kind": "Unsupported", "error": f"unknown op {op!r}"}
        except Refused as e:
            return {"ok": False, "kind": e.kind, "error": str(e)}
        except TargetError as e:  # from the reference sender
            return {"ok": False, "kind": e.kind, "error": e.message}
        except UndefinedBehaviour as e:
            return {"ok": False, "kind": "UndefinedBehaviour", "error": str(e)}
        except Exception as e:  # a bug here must not kill the adapter
            where = f"{request.get('event')}: " if op == "event" else ""
            return {"ok": False, "kind": "Error", "error": f"{where}{type(e).__name__}: {e}"}

    def close(self) -> None:
        self.sender.close()


class _TargetAdapter(Adapter):
    """The protocol over any harness Target (hello, setup, event, observe, control): what
    :func:`handle` serves when it is given one instead of an :class:`Adapter`."""

    def __init__(self, target: Any) -> None:  # no super().__init__: the target is the model and the sender
        self.target = target

    def _answer(self, request: dict[str, Any]) -> dict[str, Any] | None:
        from harness.cases.target import TargetError

        op = request.get("op")
        try:
            if op == "hello":
                info = self.target.hello()
                served = [c for c in info.capabilities if c in SERVED]
                return {"ok": True, "name": info.name, "events": info.events, "capabilities": served}
            if op == "setup":
                self.target.setup(request.get("given") or {})
                return {"ok": True}
            if op == "event":
                return {"ok": True, "result": self.target.event(str(request.get("event")), request.get("args") or {})}
            if op == "observe":
                return {"ok": True, **self.target.observe(request.get("queues") or [], request.get("cursors") or [])}
            if op == "control":
                control = str(request.get("control"))
                return {"ok": True, "result": self.target.control(control, request.get("args") or {})}
            if op == "bye":
                return None
            return {"ok": False, "kind": "Unsupported", "error": f"unknown op {op!r}"}
        except TargetError as e:
            return {"ok": False, "kind": e.kind, "error": e.message}
        except Exception as e:  # a bug here must not kill the adapter
            return {"ok": False, "kind": "Error", "error": f"{type(e).__name__}: {e}"}


def handle(adapter: Any, request: dict[str, Any]) -> dict[str, Any] | None:
    """One request -> its reply, which echoes the request's ``id`` (None for ``bye``).
    ``adapter``: an :class:`Adapter`, or any harness Target, served the same way (a test's
    adapter that wraps a target of its own)."""
    served = adapter if isinstance(adapter, Adapter) else _TargetAdapter(adapter)
    return served.handle(request)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sender", metavar="pkg.mod:Class", help="an OutgoingQueueProcessing subclass as the sender")
    parser.add_argument("--no-adm", action="store_true", help="report no ADM state (judged on the wire alone)")
    options = parser.parse_args(argv)
    sender = None
    if options.sender:
        from harness.cases.targets.plugin import load_plugin_class

        sender = load_plugin_class(options.sender)
    adapter = Adapter(sender, report_adm=not options.no_adm)
    for line in sys.stdin:
        if not line.strip():
            continue
        request: Any = None
        try:
            request = json.loads(line)
        except ValueError as e:
            reply: dict[str, Any] | None = {"ok": False, "kind": "Error", "error": f"not JSON: {e}"}
        else:
            reply = (
                adapter.handle(request)
                if isinstance(request, dict)
                else {"ok": False, "kind": "Error", "error": "a request is a JSON object"}
            )
        if reply is None:
            break
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    adapter.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
