"""The reference sender behind the control operations of initiator wire cases.

An initiator wire case judges the sending queue manager of an [MS-MQQB] session: the harness runs
the acceptor (its simulated peer) and asks the implementation under test, through the control
operations of the target protocol (:data:`harness.cases.actions.CONTROL_OPS`, docs/adapters.md),
to create OutgoingQueues for destinations the harness names, to enqueue messages, to pause or
resume a queue and to report its ADM state.  The implementation's own sender then connects to
the harness over real TCP.

:class:`ReferenceSender` implements those operations on the embedded reference: the [MS-MQDMPR]
queue manager (:class:`harness.model.QueueManager`) with [MS-MQQB] 3.1.7.12 Message Position
Available, 3.1.7.11 and 3.1.7.16 (:class:`harness.session.OutgoingQueueProcessing`, or a subclass
of it), whose Initiators ([MS-MQQB] 3.1.5.2-3.1.5.4, 3.1.7.1) run over
:class:`harness.peers.InitiatorLink` sockets driven by a thread of their own, on a clock scaled
by the time scale the harness asked for.  The reference target (in process) and the example
adapter ``examples/reference_adapter.py`` (``cmd:``) both serve the control operations with it.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from harness.cases.target import ADM_OUTGOING, WIRE_INITIATOR, WIRE_SENDER_PING, TargetError, TargetUnsupported
from harness.model import DeliveryGuarantee, Message, OutgoingQueue, OutgoingQueueState, Queue, QueueManager
from harness.peers import InitiatorLink
from harness.session import Connect, OutgoingQueueProcessing, SendPing, SessionConfig
from packets import GUID

__all__ = ["ADM_RESULT_KEYS", "ReferenceSender", "message_from_spec"]

# Result keys of control operations that read the sender's ADM state ([MS-MQDMPR] 3.1.1.3
# OutgoingQueue.State and ConnectionHistory, [MS-MQQB] 3.1.1.3.1.2 OutgoingMessagePosition) or
# its pending processing (whether Message Position Available asked for a connection): reported
# only by a sender with the ``adm:outgoing`` capability.
ADM_RESULT_KEYS = ("connection_requested", "OutgoingMessagePosition", "State", "ConnectionHistory")
CONNECT_TIMEOUT = 2.0  # real seconds a TCP connect to the harness's peer may take
ROUND = 0.01  # real seconds the sender's thread waits on its sockets in one round
_POSITION_ATTRIBUTES = (
    "AwaitingAck",
    "ReceivedSessionAck",
    "ReceivedOrderAck",
    "Transmitted",
    "SequenceNumber",
    "RecoverableSequenceNumber",
    "TxSequenceNumber",
)


def message_from_spec(spec: Mapping[str, Any]) -> Any:
    """An [MS-MQDMPR] 3.1.1.12 Message from a control operation's ``message`` mapping: ``Body``
    (text or bytes), ``delivery`` (express | recoverable | transactional) and any other Message
    ADM attribute by its name, the value in the attribute's own kind (text, integer, boolean,
    GUID text, hex text for bytes, a list for a tuple).  ``Label`` defaults to the message's
    ``id``.  KeyError names an unknown attribute."""
    delivery = spec.get("delivery", "express")
    body = spec.get("Body", spec["id"])
    message = Message(
        body.encode() if isinstance(body, str) else bytes(body),
        DeliveryGuarantee=DeliveryGuarantee.Express if delivery == "express" else DeliveryGuarantee.Recoverable,
        Label=str(spec.get("Label", spec["id"])),
    )
    for name, value in spec.items():
        if name in ("id", "delivery", "Body", "Label"):
            continue
        if not hasattr(message, name) or name.startswith("_") or callable(getattr(message, name)):
            raise KeyError(f"{name!r} is not an attribute of an [MS-MQDMPR] 3.1.1.12 Message")
        setattr(message, name, _attribute_value(getattr(message, name), value))
    return message


def _attribute_value(current: Any, value: Any) -> Any:
    """``value`` (as JSON gives it) in the kind of the attribute's current value."""
    if isinstance(current, uuid.UUID) and isinstance(value, str):
        return uuid.UUID(value.strip("{}"))
    if isinstance(current, bytes | bytearray) and isinstance(value, str):
        return bytes.fromhex(value)
    if isinstance(current, tuple) and isinstance(value, list):
        if current and isinstance(current[0], uuid.UUID):  # CorrelationIdentifier: (GUID, sequence)
            return (uuid.UUID(str(value[0]).strip("{}")), int(value[1]))
        return tuple(value)
    if isinstance(current, bool):
        return bool(value)
    if isinstance(current, int) and not isinstance(value, bool):
        return int(value)
    enum = type(current)
    if hasattr(enum, "__members__") and isinstance(value, str):
        return enum[value]
    return value


class _Driver:
    """The reference Initiators over real TCP: one ``InitiatorLink`` per Initiator, moved by a
    thread of its own on one clock, the monotonic clock divided by ``scale`` (the [MS-MQQB]
    3.1.2 timers run ``scale`` times their durations)."""

    def __init__(
        self, address: tuple[str, int], scale: float, ping_address: tuple[str, int] | None, lock: threading.RLock
    ) -> None:
        self.address = address  # the acceptor's, where an address names no port of its own
        self.scale = scale
        self.ping_address = ping_address  # None: UDP port 3527 of the acceptor's host ([MS-MQQB] 2.1.2)
        self.t0 = time.monotonic()
        self.links: dict[int, Any] = {}
        self.lock = lock
        self.oqp: Any = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ReferenceSender", daemon=True)

    def clock(self) -> float:
        return (time.monotonic() - self.t0) / self.scale

    def start(self, oqp: Any) -> None:
        self.oqp = oqp
        self._thread.start()

    def _link(self, init: Any) -> Any:
        link = self.links.get(id(init))
        if link is None:
            link = InitiatorLink(
                init,
                self.address,
                timeout=CONNECT_TIMEOUT / self.scale,
                clock=self.clock,
                ping_address=self.ping_address,
            )
            self.links[id(init)] = link
        return link

    def flush(self) -> None:
        """Perform what the sending side asked for, in order (a connection at once)."""
        for init, action in self.oqp.take():
            link = self._link(init)
            link.perform([action])
            link.step(0.0)

    def _run(self) -> None:
        """Move bytes and fire timers until stopped: each round waits on the links' sockets (up to
        :data:`ROUND` seconds, less when a timer is due), holding the lock only while it does so
        for a few milliseconds, so that control operations are never held up for long.  The lock
        is waited for a round at a time, so that a stop asked by a control operation that holds
        it (``wire_close``, ``wire_setup``) ends the thread at once."""
        while not self._stop.is_set():
            if not self.lock.acquire(timeout=ROUND):
                continue
            try:
                self.flush()
                links = [self._link(init) for init in self.oqp.initiators.values()]
                for link in links:
                    link.step(ROUND / len(links))
            except Exception:  # a closed link after stop: the loop ends below
                if self._stop.is_set():
                    return
                raise
            finally:
                self.lock.release()
            if not links:
                time.sleep(ROUND)
            else:
                time.sleep(0)  # let a waiting control operation take the lock

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)
        with self.lock:
            for link in self.links.values():
                with contextlib.suppress(Exception):
                    link.close()


class ReferenceSender:
    """The control operations of initiator wire cases on the embedded reference sender.

    ``sender_class`` replaces :class:`harness.session.OutgoingQueueProcessing` (a sender plugin);
    ``report_adm`` False hides the ADM state (no ``adm:outgoing`` capability: a sender judged on
    the wire alone)."""

    def __init__(self, sender_class: type | None = None, *, report_adm: bool = True) -> None:
        self.sender_class = sender_class
        self.report_adm = report_adm
        self.lock = threading.RLock()
        self.driver: _Driver | None = None
        self.qm: Any = None
        self.oqp: Any = None
        self.queues: dict[str, Any] = {}
        self.messages: dict[str, Any] = {}
        self.queue_address: dict[int, str] = {}

    @property
    def capabilities(self) -> list[str]:
        return [WIRE_INITIATOR, WIRE_SENDER_PING, *([ADM_OUTGOING] if self.report_adm else [])]

    def control(self, op: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """Carry out one control operation; TargetError for what it cannot do."""
        handler: Callable[[Mapping[str, Any]], dict[str, Any]] | None = getattr(self, f"_op_{op}", None)
        if handler is None:
            raise TargetUnsupported(f"unknown control operation {op!r}")
        if op not in ("wire_setup", "wire_close") and self.oqp is None:
            raise TargetError(f"{op}: no wire_setup before it")
        try:
            with self.lock:
                return handler(args)
        except TargetError:
            raise
        except KeyError as e:
            raise TargetError(f"{op}: {e.args[0] if e.args else e}") from None
        except Exception as e:
            raise TargetError(f"{op}: {type(e).__name__}: {e}") from e

    # -- the operations ------------------------------------------------------------------------
    def _op_wire_setup(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """A fresh queue manager and sender whose timers run ``scale`` times their durations."""
        self._op_wire_close({})
        scale = float(args.get("scale", 1.0))
        if not 0 < scale <= 1:
            raise TargetError(f"wire_setup: scale {scale!r} is not in (0, 1]")
        ping_port = args.get("ping_port")
        host = str(args.get("host", "127.0.0.1"))
        config = SessionConfig(window_size=int(args.get("window", SessionConfig.window_size)))
        port = int(args["port"])
        driver = _Driver((host, port), scale, (host, int(ping_port)) if ping_port else None, self.lock)
        self.qm = QueueManager(clock=driver.clock, id_generator=uuid.uuid4)
        self.queues, self.messages, self.queue_address = {}, {}, {}
        sender = self.sender_class or OutgoingQueueProcessing
        self.oqp = sender(
            self.qm,
            address_of=lambda queue: self.queue_address.get(id(queue), ""),
            config=config,
            clock=driver.clock,
            ping=bool(args.get("ping", False)),
            wall_clock=time.time,  # UserHeader.SentTime: seconds since 1970 ([MS-MQMQ] 2.2.19.2)
        )
        self.driver = driver
        driver.start(self.oqp)
        return {
            "scale": scale,
            "window": config.window_size,
            "QueueManager.Identifier": str(GUID(self.qm.Identifier.bytes_le)).upper(),
            "timers": {
                "SessionInitialization": config.session_initialization,
                "SessionRetryConnect": config.session_retry_connect,
                "AckWaitTimeout": config.ack_wait_timeout_ms,
                "SessionAckWaitMultiple": config.ack_wait_multiple,
                "ResendInterval": config.resend_intervals[0],
            },
        }

    def _op_wire_close(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Stop sending: every connection closed, the sender's thread stopped."""
        driver, self.driver = self.driver, None
        if driver is not None:
            driver.close()
        self.oqp = None
        return {}

    def _op_create_outgoing_queue(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """An [MS-MQDMPR] 3.1.1.3 OutgoingQueue for ``DestinationFormatName``; its messages go to
        ``address`` ({host, port}: the host name is resolved as [MS-MQQB] 3.1.5.2.1 says)."""
        q = self.qm.new_queue(OutgoingQueue)
        q.Identifier = uuid.uuid4()
        q.DestinationFormatName = str(args["DestinationFormatName"])
        q.Label = q.DestinationFormatName
        q.Multicast = bool(args.get("Multicast", False))
        q.Transactional = bool(args.get("Transactional", False))
        q.State = OutgoingQueueState[args.get("State", "Inactive")]
        address = args["address"]
        self.queue_address[id(q)] = f"{address['host']}:{int(address['port'])}"
        self.qm.QueueCollection.append(q)
        self.queues[str(args["name"])] = q
        return self._adm({"State": q.State.name})

    def _op_create_local_queue(self, args: Mapping[str, Any]) -> dict[str, Any]:
        q = self.qm.new_queue(Queue)
        q.Transactional = bool(args.get("Transactional", False))
        self.qm.QueueCollection.append(q)
        self.queues[str(args["name"])] = q
        return {}

    def _op_enqueue(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """[MS-MQDMPR] 3.1.7.1.9 Enqueue Message (under a committed transaction for a
        transactional one), which raises Message Position Available."""
        spec = args["message"]
        try:
            message = message_from_spec(spec)
        except KeyError as e:
            raise TargetError(f"enqueue: {e.args[0]}") from None
        queue = self.queues[str(args["queue"])]
        message.DestinationQueueFormatName = getattr(queue, "DestinationFormatName", "")
        self.messages[str(spec["id"])] = message
        before = len(self.oqp.pending)
        if spec.get("delivery") == "transactional":
            tx = f"tx-{spec['id']}"
            self.qm.create_transaction(tx)
            message.TransactionIdentifier = tx
            status = self.qm.enqueue_message(queue, message, self.qm.TransactionCollection[tx])
            self.qm.transaction_commit(tx)
        else:
            status = self.qm.enqueue_message(queue, message)
        new = [action for _, action in self.oqp.pending[before:]]
        result: dict[str, Any] = {
            "rStatus": getattr(status, "name", status),
            "connection_requested": any(isinstance(a, Connect | SendPing) for a in new),
        }
        position = self._position(message)
        if position is not None:
            result["OutgoingMessagePosition"] = {k: getattr(position, k) for k in _POSITION_ATTRIBUTES}
        assert self.driver is not None
        self.driver.flush()
        if hasattr(queue, "ConnectionHistory"):  # after the actions ran (3.1.5.2.3)
            result["State"] = queue.State.name
            result["ConnectionHistory"] = [e.Status.name for e in queue.ConnectionHistory]
        return self._adm(result)

    def _op_pause_queue(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """[MS-MQDMPR] 3.1.4.14 Pause Queue on an OutgoingQueue."""
        queue = self.queues[str(args["queue"])]
        self.qm.pause_queue(queue)
        return self._adm({"State": queue.State.name})

    def _op_resume_queue(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """[MS-MQDMPR] 3.1.4.15 Resume Queue on an OutgoingQueue."""
        queue = self.queues[str(args["queue"])]
        self.qm.resume_queue(queue)
        assert self.driver is not None
        self.driver.flush()
        return self._adm({"State": queue.State.name})

    def _op_observe_outgoing(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The ADM state of the named OutgoingQueues: State, ConnectionHistory Status values and
        the OutgoingMessagePositions of its OutgoingMessageTable (by message id, in order)."""
        if not self.report_adm:
            raise TargetUnsupported("observe_outgoing: this sender reports no ADM state")
        names = {id(m): n for n, m in self.messages.items()}
        out: dict[str, Any] = {}
        for name in args.get("queues") or []:
            q = self.queues[str(name)]
            positions = []
            for p in q.OutgoingMessageTable.values():
                mp = p.MessagePosition
                ref = names.get(id(mp.MessageReference)) if mp is not None else None
                positions.append(
                    {"message": ref or str(p.message_id), **{k: getattr(p, k) for k in _POSITION_ATTRIBUTES}}
                )
            out[str(name)] = {
                "State": q.State.name,
                "ConnectionHistory": [e.Status.name for e in q.ConnectionHistory],
                "OutgoingMessagePositions": positions,
            }
        return {"queues": out}

    # -- helpers -----------------------------------------------------------------------------
    def _position(self, message: Any) -> Any:
        """The OutgoingMessagePosition built for ``message``, if one was."""
        for init in self.oqp.initiators.values():
            for pos in init.OutgoingMessageTable.values():
                mp = pos.MessagePosition
                if mp is not None and mp.MessageReference is message:
                    return pos
        return None

    def _adm(self, result: dict[str, Any]) -> dict[str, Any]:
        if self.report_adm:
            return result
        return {k: v for k, v in result.items() if k not in ADM_RESULT_KEYS}

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._op_wire_close({})
