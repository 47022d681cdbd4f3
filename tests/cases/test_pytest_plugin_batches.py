"""harness.pytest_batches: a pytest-xdist worker's per-test events of case items travel in
batches, and the controller hands them on one by one, in the order they were sent (issue 23,
item 4).  The end-to-end check (reports of ``-n 2`` those of ``-n 0``) is
tests/cases/test_pytest_plugin_xdist.py.
"""

from __future__ import annotations

from typing import Any

from harness.pytest_batches import BATCH_EVENT, FLAG, Batcher, receive_batches


class _Node:
    """What receive_batches uses of pytest-xdist's WorkerController: the handler of one event."""

    def __init__(self) -> None:
        self.workerinput: dict[str, Any] = {}
        self.handled: list[Any] = []

    def process_from_remote(self, eventcall: Any) -> None:
        self.handled.append(eventcall)


def _test_events(index: int) -> list[tuple[str, dict[str, Any]]]:
    nodeid = f"cases/a.yaml::case{index}"
    reports = [
        ("testreport", {"data": {"nodeid": nodeid, "when": when, "item_index": index}})
        for when in ("setup", "call", "teardown")
    ]
    return [
        ("logstart", {"nodeid": nodeid, "location": ("cases/a.yaml", index, nodeid)}),
        *reports,
        ("logfinish", {"nodeid": nodeid, "location": ("cases/a.yaml", index, nodeid)}),
        ("runtest_protocol_complete", {"item_index": index, "duration": 0.001}),
    ]


def _sent_through(node: _Node) -> tuple[list[tuple[str, dict[str, Any]]], Any]:
    """A list the worker's sendevent appends to, and a send that also delivers to ``node``
    as execnet would (what is sent arrives at the controller's handler)."""
    sent: list[tuple[str, dict[str, Any]]] = []

    def send(name: str, **kwargs: Any) -> None:
        sent.append((name, kwargs))
        node.process_from_remote((name, kwargs))

    return sent, send


def test_a_case_items_events_go_as_one_batch_when_its_protocol_completes() -> None:
    node = _Node()
    receive_batches(node)  # the controller's handler now unpacks batches
    assert node.workerinput[FLAG] is True
    sent, send = _sent_through(node)
    batcher = Batcher(send)
    batcher.holding = True
    for index in (0, 1):
        events = _test_events(index)
        for name, kwargs in events[:-1]:
            batcher.sendevent(name, **kwargs)
        assert len(sent) == index  # held until the test's protocol completes
        batcher.sendevent(*events[-1][:1], **events[-1][1])
        assert len(sent) == index + 1 and sent[-1][0] == BATCH_EVENT
    assert batcher.batches == 2
    assert node.handled == _test_events(0) + _test_events(1)  # each event, in order, as if sent alone


def test_a_worker_dying_in_a_test_has_sent_every_test_before_it() -> None:
    """pytest-xdist names as crashed the first test of a worker whose completion it has not
    received: the one the worker died in, since nothing of a finished test is held."""
    node = _Node()
    receive_batches(node)
    _sent, send = _sent_through(node)
    batcher = Batcher(send)
    batcher.holding = True
    for name, kwargs in _test_events(0) + _test_events(1)[:3]:
        batcher.sendevent(name, **kwargs)
    assert node.handled == _test_events(0)


def test_other_events_go_at_once_after_what_is_held() -> None:
    node = _Node()
    sent, send = _sent_through(node)
    batcher = Batcher(send)
    batcher.holding = True
    first = _test_events(0)
    for name, kwargs in first[:3]:
        batcher.sendevent(name, **kwargs)
    batcher.sendevent("warning_recorded", nodeid="cases/a.yaml::case0", when="call")
    assert [name for name, _ in sent] == [BATCH_EVENT, "warning_recorded"]
    batcher.holding = False  # an ordinary test: its events go as pytest-xdist sends them
    for name, kwargs in _test_events(1):
        batcher.sendevent(name, **kwargs)
    assert sent[2:] == _test_events(1)


def test_what_marshal_cannot_write_goes_one_event_at_a_time() -> None:
    node = _Node()
    sent, send = _sent_through(node)
    batcher = Batcher(send)
    batcher.holding = True
    odd = ("testreport", {"data": {"user_properties": [("when", object())]}})
    batcher.sendevent(odd[0], **odd[1])
    batcher.flush()
    assert sent == [odd] and batcher.batches == 0
