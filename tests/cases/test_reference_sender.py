"""The embedded reference sender's control operations (harness.cases.targets.sender): its thread
of sockets and timers ([MS-MQQB] 3.1.7.1, 3.1.2) stops when a control operation that holds the
sender's lock stops it (``wire_close``; ``wire_setup`` closes the sender before it)."""

from __future__ import annotations

import socket
import threading

from harness.cases.targets.sender import ReferenceSender


def _waiting_on_the_lock(sender: ReferenceSender) -> threading.Thread:
    """The sender's thread, after the caller took the lock: the thread waits for it."""
    assert sender.driver is not None
    thread = sender.driver._thread
    sender.lock.acquire()
    return thread


def test_wire_close_stops_the_thread_while_the_lock_is_held() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        sender = ReferenceSender()
        sender.control("wire_setup", {"port": listener.getsockname()[1]})
        thread = _waiting_on_the_lock(sender)
        try:
            sender._op_wire_close({})  # as control() runs it: under the lock
            assert not thread.is_alive()
        finally:
            sender.lock.release()
        sender.close()


def test_wire_setup_stops_the_previous_thread() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        sender = ReferenceSender()
        port = listener.getsockname()[1]
        sender.control("wire_setup", {"port": port})
        thread = _waiting_on_the_lock(sender)
        try:
            sender._op_wire_setup({"port": port})
            assert not thread.is_alive()
        finally:
            sender.lock.release()
        sender.close()
