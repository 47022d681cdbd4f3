"""The same seed makes the same run whatever the timing of the target's answers (docs/fuzz.md "Seeds").

The conformant simulated peer is fuzzed twice with one seed, once directly and once through a
TCP relay on loopback that passes its closes on late (as a loaded machine or a slow network
does): the rounds, the packets the budget counts and the packets injected per (state x packet
kind x field) are the same.  Before the budget counted the packets each round generates, an
acceptor's close that came after the fuzzer's short wait let the probe UserMessage out, the
budget ran out a round sooner, and a loaded run differed from an idle one.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from pathlib import Path

from harness.fuzz.engine import Fuzzer
from harness.fuzz.oracles import GRACE, Timers
from harness.fuzz.runs import FuzzOptions, FuzzReport
from harness.peers import SimulatedPeer

SCALE = 0.05
LATE = GRACE * 2  # seconds a close is held back: past the fuzzer's wait for one (GRACE)


class LateCloses:
    """A relay from a port of its own to ``upstream``: every byte passed on at once both ways, the
    upstream's close (or reset) passed on to the client ``delay`` seconds late."""

    def __init__(self, upstream: tuple[str, int], delay: float) -> None:
        self.upstream, self.delay = upstream, delay
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.address: tuple[str, int] = self.listener.getsockname()[:2]
        self.done = threading.Event()
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def __enter__(self) -> LateCloses:
        return self

    def __exit__(self, *_: object) -> None:
        self.done.set()
        for t in list(self.threads):
            t.join(5.0)
        self.listener.close()

    def _accept(self) -> None:
        while not self.done.is_set():
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                continue
            client.settimeout(None)
            try:
                server = socket.create_connection(self.upstream, timeout=5.0)
            except OSError:
                client.close()  # the upstream refuses: so does the relay
                continue
            server.settimeout(None)
            for args in ((client, server, False), (server, client, True)):
                t = threading.Thread(target=self._pump, args=args, daemon=True)
                self.threads.append(t)
                t.start()

    def _pump(self, src: socket.socket, dst: socket.socket, from_upstream: bool) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            try:
                dst.sendall(data)
            except OSError:
                return  # the upstream is gone: its own pump passes the close on
        if from_upstream:
            time.sleep(self.delay)
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()


def _run(address: tuple[str, int], seed: int, out: Path) -> FuzzReport:
    options = FuzzOptions(
        address=address,
        target="mqqb://simulated",
        seed=seed,
        max_packets=300,
        duration=600.0,  # the budget of packets ends the run, not the wall clock
        timers=Timers(SCALE),
        out=out,
    )
    return Fuzzer(options).run()


def test_a_close_passed_on_late_changes_nothing_the_seed_determines(tmp_path: Path) -> None:
    with SimulatedPeer(time_scale=SCALE, ping_port=None) as peer:
        direct = _run(peer.address, 11, tmp_path / "direct")
        with LateCloses(peer.address, LATE) as relay:
            late = _run(relay.address, 11, tmp_path / "late")
    assert direct.stopped == late.stopped == "--max-packets 300 sent"
    assert direct.findings == late.findings == []
    assert (direct.rounds, direct.packets) == (late.rounds, late.packets)
    assert direct.coverage == late.coverage and direct.classes == late.classes
