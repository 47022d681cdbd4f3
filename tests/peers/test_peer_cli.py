"""``msmq-harness peer`` ([MS-MQQB] 2.1.1 acceptor on a TCP socket): starts, serves a session,
writes its report and capture, stops after --duration; refuses a non-loopback address."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from peerkit import CLIENT, FAST

from harness.cli import main
from harness.peers import InitiatorLink
from harness.session import Initiator, user_message
from packets import GUID

COMMAND = [sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())"]


def test_peer_serves_a_session_and_stops_after_duration(tmp_path: Path) -> None:
    report, record = tmp_path / "report.jsonl", tmp_path / "peer.pcap"
    args = ["peer", "--listen", "127.0.0.1:0", "--duration", "4", "--report", str(report), "--record", str(record)]
    proc = subprocess.Popen([*COMMAND, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        started = time.monotonic()  # --duration runs from here: the start-up of Python is not the peer's
        m = re.match(r"listening on 127\.0\.0\.1:(\d+) as (\{[0-9A-F-]+\}), behaviour normal", first)
        assert m, first
        port, identifier = int(m.group(1)), GUID(m.group(2))
        link = InitiatorLink(Initiator(CLIENT, identifier, config=FAST), ("127.0.0.1", port), timeout=5.0)
        with link:
            for n in range(10):
                link.send_message(user_message(CLIENT, identifier, b"cli-%d" % n))
            assert link.run_until(lambda: len(link.packets) >= 14, 3.0)  # EC, CP both ways, 10 messages
        out, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
        proc.wait()
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, err
    assert elapsed > 3.5  # it served its duration out (and stopped by itself: communicate's timeout)
    assert "connection 0 from 127.0.0.1:" in out and "10 delivered, 0 violations" in out
    assert re.search(r"^1 connections, \d+ packets, 10 delivered, 0 violations$", out, re.M), out
    assert report.read_text() == ""
    assert record.stat().st_size > 24 + 10 * 100  # pcap header and the frames


def test_peer_refuses_a_non_loopback_address() -> None:
    assert main(["peer", "--listen", "0.0.0.0:0", "--duration", "0"]) == 2
    assert main(["peer", "--listen", "192.0.2.1:1801", "--duration", "0"]) == 2


def test_peer_rejects_an_unknown_behaviour() -> None:
    assert main(["peer", "--listen", "127.0.0.1:0", "--behaviour", "no-such", "--duration", "0"]) == 2


def test_peer_lists_its_behaviours(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["peer", "--listen", "127.0.0.1:0", "--list-behaviours"]) == 0
    names = capsys.readouterr().out.split()
    assert {"normal", "refuse", "garbage-reply", "close-after-<N>"} <= set(names)
