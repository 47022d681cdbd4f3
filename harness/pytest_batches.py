"""The per-test events of the pytest plugin's case items sent in batches under pytest-xdist.

Issue 23, item 4 (the pytest plugin under pytest-xdist: nothing serial in the controller beyond
reporting).  A pytest-xdist worker sends the controller six events a test through execnet --
``logstart``, three ``testreport``, ``logfinish`` and ``runtest_protocol_complete`` -- each one
serialised by execnet's pure-Python serialiser, then read, deserialised and queued by a thread of
the controller: for a model case that costs the worker about a third of running it and the
controller more than reporting it.  Here a worker started on this machine with the controller's
interpreter (a ``popen`` gateway without ``python=``: marshal's format is the interpreter's) holds
the events of its case items and sends them as one marshalled list (:data:`BATCH_EVENT`); the
controller unmarshals it and hands each event, in order, to pytest-xdist's own handling, so the
hooks, reports and scheduling it sees are those of the events sent one by one.

A worker holds the events of the case item running and sends them as one batch when its protocol
completes (``runtest_protocol_complete``), and sends what it holds before any other event (an
ordinary test's, a warning, the end of the session); when marshal cannot write an event, they go
one by one.  Nothing of a finished test waits for the next one: a worker that dies in a test has
sent every test before it, so pytest-xdist names the test it died in, and no other.  Batching is
off where a report held back would change what runs: ``--maxfail``/``-x`` and ``--stepwise`` stop
on a report, and ``--dist worksteal`` takes tests back from a worker's queue.  A pytest-xdist
without the two handlers used here (the controller's ``process_from_remote``, the worker's
``sendevent``) runs without batches.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable
from typing import Any

import pytest

__all__ = [
    "BATCHES",
    "BATCH_EVENT",
    "FLAG",
    "Batcher",
    "batchable",
    "install",
    "receive_batches",
]

BATCH_EVENT = "msmq_batch"  # the event a batch travels as; its one argument, ``events``, the marshalled list
FLAG = "msmq_batched"  # set in a worker's workerinput by the controller that unpacks its batches
BATCHES = "msmq_batches"  # in a worker's workeroutput: how many batches it had sent at the end of its session
PER_TEST = frozenset({"logstart", "testreport", "logfinish", "runtest_protocol_complete"})


def batchable(config: pytest.Config, spec: Any) -> bool:
    """(controller) May a worker of gateway ``spec`` send its case items' events in batches?
    A local worker on this interpreter, when no option stops or reschedules on a report."""
    local = getattr(spec, "popen", False) and not getattr(spec, "python", None)
    stops = bool(config.getoption("maxfail", 0)) or bool(config.getoption("stepwise", False))
    return bool(local) and not stops and config.getoption("dist", "load") != "worksteal"


def receive_batches(node: Any) -> None:
    """(controller) Let ``node`` (a pytest-xdist WorkerController, before its ``setup`` hands
    ``process_from_remote`` to the channel) unpack the batches its worker sends, and tell the
    worker to send them."""
    handle: Callable[[Any], None] | None = getattr(node, "process_from_remote", None)
    if handle is None:
        return

    def process_from_remote(eventcall: Any) -> None:
        if isinstance(eventcall, tuple) and eventcall and eventcall[0] == BATCH_EVENT:
            for event in marshal.loads(eventcall[1]["events"]):
                handle(event)
        else:
            handle(eventcall)

    node.process_from_remote = process_from_remote
    node.workerinput[FLAG] = True


class Batcher:
    """(worker) Holds the per-test events of the case item running and sends them, when its
    protocol completes, as one batch through ``send`` (the worker's own ``sendevent``)."""

    def __init__(self, send: Callable[..., None]) -> None:
        self.send = send
        self.holding = False  # the test running is a case item
        self.held: list[tuple[str, dict[str, Any]]] = []
        self.batches = 0

    def sendevent(self, name: str, **kwargs: Any) -> None:
        if not (self.holding and name in PER_TEST):
            self.flush()
            self.send(name, **kwargs)
            return
        self.held.append((name, kwargs))
        if name == "runtest_protocol_complete":
            self.flush()

    def flush(self) -> None:
        """Send the events held: one marshalled batch, or one by one when marshal cannot."""
        if not self.held:
            return
        events, self.held = self.held, []
        try:
            packed = marshal.dumps(events)
        except ValueError:  # a value marshal cannot write (a user property of an odd type)
            for name, kwargs in events:
                self.send(name, **kwargs)
            return
        self.batches += 1
        self.send(BATCH_EVENT, events=packed)


def install(config: pytest.Config) -> Batcher | None:
    """(worker) When the controller asked for batches, put a :class:`Batcher` in front of the
    worker's ``sendevent``; None when it did not, or the worker is not pytest-xdist's own."""
    if not getattr(config, "workerinput", {}).get(FLAG):
        return None
    for plugin in config.pluginmanager.get_plugins():
        if type(plugin).__name__ == "WorkerInteractor" and callable(getattr(plugin, "sendevent", None)):
            batcher = Batcher(plugin.sendevent)
            plugin.sendevent = batcher.sendevent
            return batcher
    return None
