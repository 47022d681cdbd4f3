"""The embedded reference target: the [MS-MQDMPR] queue manager (``harness.model``) as a Target.

Renders the reference-target conventions of docs/cases.md: the names a case gives in ``given``
(queues, messages, open descriptors, cursors, transactions) become model objects; a step's event
is the QueueManager (3.1.4, 3.1.6.3, 3.1.7) or Cursor (3.2.7) method of that name, called with
the spec's argument names; what the event returns is reported by the spec's result names
(``rStatus``, ``rMessage``, ``rMessagePosition``, ``rPosition``, ...) with objects named back as
the case named them (a MessagePosition by its message's ``id``, the special positions of
3.1.1.2 as ``Start``/``End``, enumerations by their spec names).  ``observe`` reports each
queue's MessagePositionList (3.1.1.2, 3.1.1.11) and each cursor's state (3.2.1.2).

Besides the spec's events the target serves the harness operations of the adapter protocol
(:data:`harness.cases.events.HARNESS_OPERATIONS`, docs/adapters.md): the clock (``advance_clock``
with ``seconds``, which then fires the timers of 3.1.2.3 and 3.1.2.4 that are due;
``fire_due_timers``), the final result of a read that waited (``read_result`` with ``iReader``)
and a queue's ADM attributes (``queue_attributes`` with ``iQueue``, 3.1.1.2/3.1.1.3).
"""

from __future__ import annotations

import itertools
import typing
import uuid
from collections.abc import Callable
from enum import Enum
from typing import Any

from harness import __version__
from harness.cases.events import ARG_KINDS, PSEUDO_EVENTS, second_result, spec_events
from harness.cases.target import (
    MODEL,
    PEER_BEHAVIOURS,
    WIRE_ACCEPTOR,
    WIRE_PING_PORT,
    WIRE_TX_QUEUE,
    TargetError,
    TargetInfo,
    TargetUndefinedBehaviour,
    TargetUnsupported,
)
from harness.cases.targets.kind import parse_scale, spec_query, target_kind
from harness.cases.targets.sender import ReferenceSender
from harness.cases.targets.wire import WireOptions
from harness.model import (
    INFINITE,
    Cursor,
    Message,
    MessageClass,
    MessagePosition,
    MessagePositionState,
    OpenQueueDescriptor,
    OperationType,
    OutgoingQueue,
    Queue,
    QueueAccessType,
    QueueManager,
    QueueShareMode,
    ReadResult,
    Transaction,
    TransactionalOperation,
    UndefinedBehaviour,
    WaitingMessageReadOperation,
)
from harness.session import named_behaviour
from packets.formatname import FormatName

__all__ = [
    "ReferenceTarget",
]

COMPUTER = "LOCALHOST"
CLOCK_START = 1000.0

_SPECIAL = ("Start", "End")


def _enum_types(hint: Any) -> list[type[Enum]]:
    if isinstance(hint, type) and issubclass(hint, Enum):
        return [hint]
    return [a for a in typing.get_args(hint) if isinstance(a, type) and issubclass(a, Enum)]


def _to_enum(value: Any, hint: Any) -> Any:
    if not isinstance(value, str):
        return value
    for enum in _enum_types(hint):
        if value in enum.__members__:
            return enum[value]
    return value


class _Clock:
    """The injected clock: starts at CLOCK_START seconds, moves only by ``advance_clock``."""

    def __init__(self) -> None:
        self.now = CLOCK_START

    def __call__(self) -> float:
        return self.now


def _counter_ids() -> Callable[[], uuid.UUID]:
    counter = itertools.count(1)
    return lambda: uuid.UUID(int=next(counter))


class ReferenceTarget:
    """The Target protocol over the embedded model (or a QueueManager subclass)."""

    def __init__(
        self,
        queue_manager_class: type[QueueManager] = QueueManager,
        *,
        name: str = "",
        sender_class: type | None = None,
        report_adm: bool = True,
        wire_options: Any = None,
    ) -> None:
        self.queue_manager_class = queue_manager_class
        # the sender of initiator wire cases (a sender plugin replaces OutgoingQueueProcessing)
        self.sender = ReferenceSender(sender_class, report_adm=report_adm)
        self.wire_options = wire_options or WireOptions()
        self.name = name or (
            "reference"
            if queue_manager_class is QueueManager
            else f"{queue_manager_class.__module__}:{queue_manager_class.__qualname__}"
        )
        factory = queue_manager_class.cursor_factory
        cursor_class = factory if isinstance(factory, type) and issubclass(factory, Cursor) else Cursor
        self._events = spec_events(queue_manager_class, cursor_class)  # harness.cases.events
        self.qm: QueueManager = queue_manager_class()
        self.clock = _Clock()
        self._reset()

    # ------------------------------------------------------------------------- naming
    def _reset(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {
            k: {} for k in ("queue", "message", "open", "cursor", "transaction", "reader")
        }
        self._names: dict[int, str] = {}
        self._keep: list[Any] = []  # keeps named objects alive so their id() stays theirs
        self._counters: dict[str, itertools.count[int]] = {}

    def _register(self, kind: str, name: str, obj: Any) -> None:
        self.objects[kind][name] = obj
        self._names[id(obj)] = name
        self._keep.append(obj)

    def _auto_name(self, kind: str, prefix: str, obj: Any) -> str:
        name = self._names.get(id(obj))
        if name is None:
            n = next(self._counters.setdefault(kind, itertools.count(1)))
            name = f"{prefix}{n}"
            self._register(kind, name, obj)
        return name

    def _lookup(self, kind: str, name: Any) -> Any:
        if not isinstance(name, str):
            return name
        try:
            return self.objects[kind][name]
        except KeyError:
            raise TargetError(f"unknown {kind} {name!r}") from None

    def name_of(self, value: Any) -> Any:
        """A model value as JSON data, objects by the names the case gave them."""
        if value is None or isinstance(value, bool | str | int):
            if isinstance(value, Enum):
                return value.name
            return value
        if isinstance(value, Enum):
            return value.name
        if isinstance(value, float):
            return "Infinite" if value == INFINITE else value
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        if isinstance(value, list | tuple):
            return [self.name_of(v) for v in value]
        if isinstance(value, dict):
            return {str(k): self.name_of(v) for k, v in value.items()}
        return self._object_name(value)

    def _object_name(self, value: Any) -> Any:
        """An ADM object (3.1.1, 3.2.1) by the name the case gave it, or one made for it; the text
        of anything else."""
        if isinstance(value, MessagePosition):
            if value.is_special:
                return value._special  # "Start" or "End" (3.1.1.2)
            return self.name_of(value.MessageReference)
        if isinstance(value, Message):
            name = self._names.get(id(value))
            if name is None and isinstance(value.Identifier, str):
                name = value.Identifier  # a copy of a named message (3.1.7.1.27)
            return name if name is not None else f"#{value.LookupIdentifier:x}"
        if isinstance(value, WaitingMessageReadOperation):
            return self._auto_name("reader", "read", value)
        if isinstance(value, OpenQueueDescriptor):
            return self._auto_name("open", "open", value)
        if isinstance(value, Cursor):
            return self._auto_name("cursor", "cursor", value)
        if isinstance(value, Transaction):
            name = self._names.get(id(value))
            return name if name is not None else self.name_of(value.Identifier)
        if isinstance(value, Queue):
            name = self._names.get(id(value))
            if name is None:
                name = getattr(value, "DestinationFormatName", "") or value.Pathname
                self._register("queue", name, value)
            return name
        return str(value)

    # ------------------------------------------------------------------------- Target
    def hello(self) -> TargetInfo:
        """The model's events; the wire capabilities only when the model is the reference one
        (a QueueManager plugin replaces the model, not the sender or the acceptor)."""
        capabilities = [MODEL]
        if self.queue_manager_class is QueueManager:
            capabilities += [*self.sender.capabilities, WIRE_ACCEPTOR, PEER_BEHAVIOURS, WIRE_PING_PORT, WIRE_TX_QUEUE]
        return TargetInfo(name=self.name, events=sorted(self._events), capabilities=capabilities, version=__version__)

    def control(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        """A control operation of an initiator wire case, on the reference sender."""
        return self.sender.control(op, args)

    def setup(self, given: dict[str, Any]) -> None:
        """A fresh QueueManager, then the case's queues, messages, transactions, descriptors,
        cursors and locks, in that order."""
        self.clock = _Clock()
        self.qm = self.queue_manager_class(self.clock, _counter_ids(), QueueManagerQuota=1 << 40)
        self._reset()
        try:
            self._build(given)
        except TargetError:
            raise
        except UndefinedBehaviour as e:
            raise TargetUndefinedBehaviour(f"setup: {e}") from e
        except Exception as e:
            raise TargetError(f"setup: {type(e).__name__}: {e}") from e

    def _build(self, given: dict[str, Any]) -> None:
        qm = self.qm
        states: list[tuple[Message, str]] = []
        for qspec in given.get("queues") or []:
            queue = self._make_queue(dict(qspec), create=True)
            for mspec in qspec.get("messages") or []:
                mspec = dict(mspec)
                state = mspec.pop("State", None)
                message = self._make_message(mspec)
                status = qm.enqueue_message(queue, message)
                if status != 0:
                    raise TargetError(f"setup: enqueue of {mspec.get('id')!r} returned {status.name}")
                if state is not None:
                    states.append((message, state))
        for message, state in states:  # a position's state as given (3.1.1.11)
            pos = message.MessagePositionReference
            assert pos is not None
            pos.State = MessagePositionState[state]
        for tname in given.get("transactions") or []:
            self._register("transaction", str(tname), qm.create_transaction(str(tname)))
        for dspec in given.get("open") or []:
            queue = self._lookup("queue", dspec["queue"])
            open_status, desc = qm.open_queue(
                self._format_name(queue),
                QueueAccessType[dspec.get("access", "ReceiveAccess")],
                QueueShareMode[dspec.get("share", "DenyNone")],
            )
            if desc is None:
                raise TargetError(f"setup: Open Queue of {dspec['name']!r} returned {open_status.name}")
            self._register("open", dspec["name"], desc)
        for cspec in given.get("cursors") or []:
            cursor = qm.open_cursor(self._lookup("open", cspec["open"]))
            if cursor is None:
                raise TargetError(f"setup: Open Cursor of {cspec['name']!r} returned no cursor")
            self._register("cursor", cspec["name"], cursor)
        for lock in given.get("locked") or []:
            # What a receive in the transaction does (3.1.7.1.10): Locked + a Dequeue operation.
            message = self._lookup("message", lock["message"])
            transaction: Transaction = self._lookup("transaction", lock["transaction"])
            pos = message.MessagePositionReference
            pos.State = MessagePositionState.Locked
            transaction.TransactionalOperationCollection.append(
                TransactionalOperation(OperationType.Dequeue, pos, DequeueReason=MessageClass.AckReceive)
            )

    def _format_name(self, queue: Queue) -> str:
        if isinstance(queue, OutgoingQueue):
            return queue.DestinationFormatName
        return str(FormatName.direct(queue.Pathname))  # [MS-MQMQ] 2.1.1, 2.1.2

    @staticmethod
    def _set_attrs(obj: Any, attrs: dict[str, Any], what: str) -> None:
        for key, value in attrs.items():
            if not hasattr(obj, key):
                raise TargetError(f"{what} has no ADM attribute {key!r}")
            current = getattr(obj, key)
            if isinstance(current, Enum) and isinstance(value, str):
                value = type(current)[value]
            elif isinstance(current, bytes) and isinstance(value, str):
                value = value.encode("utf-8")
            setattr(obj, key, value)

    def _make_queue(self, spec: dict[str, Any], *, create: bool) -> Queue:
        """A queue from ``{name, ADM attributes...}``: created by Create Queue (3.1.7.1.3), or an
        OutgoingQueue (3.1.1.3) when it has a DestinationFormatName."""
        qm = self.qm
        name = str(spec.pop("name"))
        spec.pop("messages", None)
        if "DestinationFormatName" in spec:
            out = qm.new_queue(OutgoingQueue, spec.get("Pathname", ""))
            self._set_attrs(out, spec, "OutgoingQueue")
            out.Identifier = qm.id_generator()
            qm.QueueCollection.append(out)
            self._register("queue", name, out)
            return out
        path = spec.pop("Pathname", f"{COMPUTER}\\private$\\{name}")
        template = qm.new_queue(Queue, path)
        qm.set_queue_defaults(template)
        template.Pathname = path
        self._set_attrs(template, spec, "Queue")
        if not create:
            self._register("queue", name, template)
            return template
        status, queue = qm.create_queue(template)
        if queue is None:
            raise TargetError(f"setup: Create Queue of {name!r} returned {self.name_of(status)}")
        self._set_attrs(queue, spec, "Queue")
        self._register("queue", name, queue)
        return queue

    def _make_message(self, spec: dict[str, Any]) -> Message:
        spec = dict(spec)
        name = str(spec.pop("id"))
        message = Message()
        message.Identifier = name
        self._set_attrs(message, spec, "Message")
        self._register("message", name, message)
        return message

    # ------------------------------------------------------------------------- events
    def _context_queue(self, args: dict[str, Any]) -> Queue | None:
        """The queue whose Start/End a position argument names."""
        for key in ("iQueue", "iTargetQueue"):
            q = args.get(key)
            if isinstance(q, Queue):
                return q
        for key in ("iQueueDesc", "iOpenQueueDescriptor"):
            d = args.get(key)
            if isinstance(d, OpenQueueDescriptor) and d.QueueReference is not None:
                return d.QueueReference
        for key in ("cursor", "iCursor"):
            c = args.get(key)
            if isinstance(c, Cursor) and c.OpenQueueDescriptorReference is not None:
                return c.OpenQueueDescriptorReference.QueueReference
        queues = self.objects["queue"]
        return next(iter(queues.values()), None)

    def _resolve(self, event: str, args: dict[str, Any]) -> dict[str, Any]:
        """``args`` as the event's method takes them: objects of the case by name, positions,
        enumerations by the event's declared parameter types (harness.cases.events: the
        defining method's annotations, never an override's)."""
        hints = self._events[event].types
        out: dict[str, Any] = {}
        positions: dict[str, str] = {}
        for key, value in args.items():
            kind = ARG_KINDS.get(key)
            if value is None:
                out[key] = None
            elif kind == "position":
                positions[key] = value
                continue
            elif kind == "message" and isinstance(value, dict):
                out[key] = self._make_message(value)
            elif kind == "queue" and isinstance(value, dict):
                out[key] = self._make_queue(dict(value), create=False)
            elif kind == "transaction-id":  # a transaction by its identifier, passed as it is
                out[key] = value
            elif kind is not None:
                out[key] = self._lookup(kind, value)
            elif key == "iLookupId" and isinstance(value, str):
                out[key] = self._lookup("message", value).LookupIdentifier
            elif key in ("iFormatName", "iInputFormatName") and value in self.objects["queue"]:
                out[key] = self._format_name(self.objects["queue"][value])
            elif key in ("iTimeout", "seconds") and value in ("Infinite", "INFINITE"):
                out[key] = INFINITE
            else:
                out[key] = _to_enum(value, hints.get(key))
        for key, value in positions.items():
            if value in _SPECIAL:
                queue = self._context_queue(out)
                if queue is None:
                    raise TargetError(f"{key}: {value} names no queue's position")
                out[key] = getattr(queue.MessagePositionList, value)
            else:
                message = self._lookup("message", value)
                out[key] = message.MessagePositionReference
        return out

    def event(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        try:
            return self._event(name, dict(args or {}))
        except TargetError:
            raise
        except UndefinedBehaviour as e:
            raise TargetUndefinedBehaviour(str(e)) from e
        except Exception as e:
            raise TargetError(f"{name}: {type(e).__name__}: {e}") from e

    def _event(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        if name in PSEUDO_EVENTS:
            return self._pseudo(name, args)
        if name not in self._events:
            raise TargetUnsupported(f"no event {name!r}")
        if "cursor" in args and hasattr(Cursor, name):
            cursor = self._lookup("cursor", args.pop("cursor"))
            kwargs = self._resolve(name, args)
            result = getattr(cursor, name)(**kwargs)
        else:
            kwargs = self._resolve(name, args)
            result = getattr(self.qm, name)(**kwargs)
        out = self._translate(name, result)
        if name == "create_transaction" and isinstance(args.get("iTransactionIdentifier"), str):
            self._register("transaction", args["iTransactionIdentifier"], result)
            out = {"rTransaction": args["iTransactionIdentifier"]}
        elif name == "create_queue" and isinstance(args.get("iQueue"), dict) and out.get("rQueue") is not None:
            self._register("queue", str(args["iQueue"]["name"]), result[1])
            out["rQueue"] = str(args["iQueue"]["name"])
        return out

    def _translate(self, event: str, result: Any) -> dict[str, Any]:
        """An event's return by the spec's result names; None values are left out."""
        if result is None:
            return {"rStatus": "Failed"} if event == "wait_for_new_message" else {}
        if isinstance(result, ReadResult):
            out: dict[str, Any] = {}
            if result.rStatus is not None:
                out["rStatus"] = self.name_of(result.rStatus)
            if result.rMessage is not None:
                out["rMessage"] = self.name_of(result.rMessage)
            if result.pending is not None:
                out["rPending"] = self.name_of(result.pending)
            return out
        if isinstance(result, tuple):
            out = {"rStatus": self.name_of(result[0])}
            if len(result) > 1 and result[1] is not None:
                out[second_result(event)] = self.name_of(result[1])
            return out
        if isinstance(result, MessagePosition):
            return {"rMessagePosition": self.name_of(result)}
        if isinstance(result, Cursor):
            return {"rCursor": self.name_of(result)}
        if isinstance(result, Transaction):
            return {"rTransaction": self.name_of(result)}
        if isinstance(result, WaitingMessageReadOperation):
            return {"rPending": self.name_of(result)}
        if isinstance(result, Enum | bool):
            return {"rStatus": self.name_of(result)}
        return {"rValue": self.name_of(result)}

    def _pseudo(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        if name == "advance_clock":
            seconds = args.get("seconds", 0)
            if not isinstance(seconds, int | float) or isinstance(seconds, bool):
                raise TargetError(f"advance_clock: seconds must be a number, got {seconds!r}")
            self.clock.now += seconds
            return {"rFired": self.qm.fire_due_timers()}
        if name == "fire_due_timers":
            return {"rFired": self.qm.fire_due_timers()}
        if name == "read_result":
            reader: WaitingMessageReadOperation = self._lookup("reader", args.get("iReader"))
            if reader.result is None:
                return {"rPending": self.name_of(reader)}
            return self._translate("read_result", reader.result)
        # queue_attributes
        queue: Queue = self._lookup("queue", args.get("iQueue"))
        attrs: dict[str, Any] = {}
        for key, value in vars(queue).items():
            if key[:1].isupper() and isinstance(value, Enum | bool | int | float | str | type(None)):
                attrs[key] = self.name_of(value)
        attrs["Active"] = queue.Active
        attrs["MessageCount"] = len(queue.MessagePositionList)
        return attrs

    # ------------------------------------------------------------------------- observe
    def observe(self, queues: list[str], cursors: list[str]) -> dict[str, Any]:
        out_q: dict[str, list[dict[str, Any]]] = {}
        for qname in queues:
            queue: Queue = self._lookup("queue", qname)
            positions = []
            for pos in queue.MessagePositionList:
                m = pos.MessageReference
                entry: dict[str, Any] = {"message": self.name_of(m), "State": self.name_of(pos.State)}
                if m is not None:
                    entry["Priority"] = m.Priority
                    entry["Label"] = m.Label
                    entry["AllowPeekWhenLocked"] = m.AllowPeekWhenLocked
                positions.append(entry)
            out_q[qname] = positions
        out_c: dict[str, dict[str, Any]] = {}
        for cname in cursors:
            cursor: Cursor = self._lookup("cursor", cname)
            out_c[cname] = {
                "CursorState": self.name_of(cursor.CursorState),
                "MessagePositionReference": self.name_of(cursor.MessagePositionReference),
            }
        return {"queues": out_q, "cursors": out_c}

    def close(self) -> None:
        self.sender.close()
        self._reset()


@target_kind(
    "reference",
    "reference[?peer=BEHAVIOUR][&scale=S]",
    "the embedded reference: the [MS-MQDMPR] model, the [MS-MQQB] sender and the simulated peer "
    "(peer=: the behaviour that replaces normal; scale=: the time scale of the wire sessions)",
)
def _make(spec: str, timeout: float) -> ReferenceTarget:
    query = spec_query(spec, ("peer", "scale"))
    peer = query.get("peer")
    if peer is not None:
        try:
            named_behaviour(peer)
        except KeyError as e:
            raise ValueError(f"{spec!r}: {e.args[0]}") from None
    scale = parse_scale(spec, query["scale"]) if "scale" in query else None
    return ReferenceTarget(name=spec, wire_options=WireOptions(peer, scale))
