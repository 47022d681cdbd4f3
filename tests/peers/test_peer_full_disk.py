"""Output failures never change the simulated peer's protocol behaviour (issue 21, item 7).

With ``--report`` or ``--record`` on a full disk (``/dev/full``, or a tiny tmpfs filled up when the
test may mount one), every client sees exactly what it sees with a healthy file: a violating
sender gets its replies, or its close where the spec closes; the peer keeps serving; the failing
output is named once on stderr and in the summary, cut back to its last whole record; the exit
status (4) says the output is incomplete.  Everything runs on loopback, bounded in time.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from peerkit import RawClient, cp_request, ec_request, user_message_bytes

from harness.peers import PcapRecorder, SimulatedPeer
from packets import GUID, NULL_GUID

if TYPE_CHECKING:
    from harness.peers import SinkFailure

COMMAND = [sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())"]
FULL = "/dev/full"


@contextmanager
def peer_process(*extra: str) -> Iterator[tuple[subprocess.Popen[str], tuple[str, int], GUID]]:
    args = ["peer", "--listen", "127.0.0.1:0", "--ping-port", "-1", "--duration", "60"]
    proc = subprocess.Popen([*COMMAND, *args, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        m = re.match(r"listening on 127\.0\.0\.1:(\d+) as (\{[0-9A-F-]+\})", first)
        assert m, first + (proc.stderr.read() if proc.stderr and proc.poll() is not None else "")
        yield proc, ("127.0.0.1", int(m.group(1))), GUID(m.group(2))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def stop(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err


def clients(address: tuple[str, int], identifier: GUID, violators: int = 1) -> list[tuple[str, ...]]:
    """What each client sees: violators whose violation the session survives (a GUID_NULL
    ClientGuid, 2.2.3.1: replies and open), one whose violation closes it (a UserMessage before
    any EstablishConnection, 3.1.5.8), then a normal sender whose message must be delivered."""
    seen: list[tuple[str, ...]] = []
    for _ in range(violators):
        with RawClient(address) as c:
            c.send(ec_request(client=NULL_GUID))
            got = [p.kind.value for p in c.read(1, 5.0)]
            c.send(cp_request())
            got += [p.kind.value for p in c.read(1, 5.0)]
            seen.append(("survives", *got, "eof" if c.eof else "open"))
    with RawClient(address) as c:
        c.send(user_message_bytes(identifier, 1, b"early"))
        closed = c.wait_eof(5.0)
        seen.append(("closed", *[p.kind.value for p in c.received], "eof" if closed else "open"))
    with RawClient(address) as c:
        c.send(ec_request(identifier), cp_request())
        got = [p.kind.value for p in c.read(2, 5.0)]
        c.send(user_message_bytes(identifier, 2, b"served"))
        time.sleep(0.2)
        seen.append(("normal", *got, "eof" if c.eof else "open"))
    return seen


EXPECTED = [
    ("survives", "EstablishConnection", "ConnectionParameters", "open"),
    ("closed", "eof"),
    ("normal", "EstablishConnection", "ConnectionParameters", "open"),
]


@pytest.mark.parametrize("option", ["--report", "--record"])
def test_an_output_on_a_full_disk_changes_no_reply(option: str, tmp_path: Path) -> None:
    healthy = tmp_path / ("r.jsonl" if option == "--report" else "r.pcap")
    with peer_process(option, str(healthy)) as (proc, address, identifier):
        reference = clients(address, identifier)
        code, out, err = stop(proc)
    assert reference == EXPECTED and code == 1 and not err, (reference, code, err)
    totals = re.search(r"^3 connections, \d+ packets, 1 delivered, 2 violations$", out, re.M)
    assert totals, out
    with peer_process(option, FULL) as (proc, address, identifier):
        seen = clients(address, identifier)
        code, out, err = stop(proc)
    assert seen == reference  # every client saw exactly what it sees with a healthy file
    assert code == 4, (code, out, err)
    assert "Traceback" not in err and "None" not in err, err
    sink = option[2:]
    assert err.count(FULL) == 1 and f"cannot write the {sink} {FULL}: No space left on device" in err, err
    assert re.search(rf"^{sink}: {FULL} \(incomplete: No space left on device; 0 \w+ written, \d+ lost\)$", out, re.M)
    assert totals.group(0) in out.splitlines(), out  # everything counted as with a healthy file
    assert "closed by error" not in out and "error:" not in out, out


def test_the_peer_object_keeps_the_failure_and_the_connection_is_untouched() -> None:
    failures: list[SinkFailure] = []
    with SimulatedPeer(report=FULL, record=FULL, ping_port=None, on_sink_failure=failures.append) as peer:
        assert [f.sink for f in failures] == ["record"]  # its file header already failed
        with RawClient(peer.address) as c:
            c.send(ec_request(client=NULL_GUID))
            assert [p.kind for p in c.read(1)] == ["EstablishConnection"]
            assert peer.wait_for(lambda: peer.totals.violations == 1, 5.0)
            c.send(ec_request(client=NULL_GUID))  # a second violation: the report stays failed, said once
            assert peer.wait_for(lambda: peer.totals.violations >= 2, 5.0)
        assert peer.wait_for(lambda: all(c.closed for c in peer.connections), 5.0)
        (conn,) = peer.connections
        assert conn.error is None and conn.closed_by != "error"
        assert sorted(f.sink for f in failures) == ["record", "report"]
        report = next(f for f in peer.sink_failures if f.sink == "report")
        assert report.path == FULL and report.written == 0 and report.lost >= 2
        record = next(f for f in peer.sink_failures if f.sink == "record")
        assert record.path == FULL and record.written == 0 and record.lost > 0


def test_an_output_that_cannot_be_opened_is_named(tmp_path: Path) -> None:
    """Opening is set-up: exit 2 naming the file, never "cannot write None"."""
    folder = tmp_path / "a-folder"
    folder.mkdir()
    for option in ("--record", "--report"):
        proc = subprocess.run(
            [*COMMAND, "peer", "--listen", "127.0.0.1:0", "--ping-port", "-1", "--duration", "0", option, str(folder)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 2, proc
        assert f"cannot write the {option[2:]} {folder}: Is a directory" in proc.stderr, proc.stderr
        assert "None" not in proc.stderr


def test_a_recorder_without_on_failure_raises_naming_its_path() -> None:
    with pytest.raises(OSError) as raised:
        PcapRecorder(FULL)
    assert raised.value.filename == FULL


@contextmanager
def tiny_disk(where: Path, free_pages: int) -> Iterator[Path]:
    """A 64 KiB tmpfs mounted at ``where``, filled but for ``free_pages`` pages of 4 KiB."""
    # the machines of this project (developers' and CI's) run as root with mount available
    assert os.geteuid() == 0 and shutil.which("mount") is not None, "mounting a tmpfs needs root and mount(8)"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)], capture_output=True)
    assert mounted.returncode == 0, f"cannot mount a tmpfs: {mounted.stderr.decode(errors='replace').strip()}"
    try:
        (where / "fill").write_bytes(b"\0" * ((16 - free_pages) * 4096))
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_report_and_record_fill_a_real_disk_and_keep_whole_records(tmp_path: Path) -> None:
    with tiny_disk(tmp_path / "disk", free_pages=2) as disk:
        report, record = disk / "report.jsonl", disk / "peer.pcap"
        with peer_process("--report", str(report), "--record", str(record)) as (proc, address, identifier):
            seen = clients(address, identifier, violators=60)
            code, out, err = stop(proc)
        assert seen == [EXPECTED[0]] * 60 + EXPECTED[1:]
        assert code == 4 and "Traceback" not in err, (code, err)
        assert err.count(str(report)) == 1 and err.count(str(record)) == 1, err
        lines = report.read_text().splitlines()
        assert 0 < len(lines) < 121 and all(json.loads(line)["rule"] for line in lines)  # whole lines only
        m = re.search(rf"^report: {re.escape(str(report))} \(incomplete: .*; (\d+) violations written", out, re.M)
        assert m and int(m.group(1)) == len(lines), out
        from scapy.utils import rdpcap

        frames = rdpcap(str(record))  # whole frames only: a valid pcap of everything before the failure
        m = re.search(rf"^record: {re.escape(str(record))} \(incomplete: .*; (\d+) frames written", out, re.M)
        assert m and int(m.group(1)) == len(frames) > 0, out


def test_a_full_standard_output_stops_neither_the_peer_nor_its_summary_status(tmp_path: Path) -> None:
    """stdout on a full disk: said once on stderr, the peer serves as ever, the exit status is 4."""
    import socket

    with socket.socket() as probe:  # a free port to listen on: the "listening on" line is lost
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = ["peer", "--listen", f"127.0.0.1:{port}", "--ping-port", "-1", "--duration", "60"]
    with open(FULL, "w") as full:
        proc = subprocess.Popen([*COMMAND, *args], stdout=full, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                probe = socket.create_connection(("127.0.0.1", port), timeout=1.0)
                probe.close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "the peer did not start"
                time.sleep(0.05)
        with RawClient(("127.0.0.1", port)) as c:
            c.send(ec_request(), cp_request())
            assert [p.kind for p in c.read(2)] == ["EstablishConnection", "ConnectionParameters"]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 4, err
    assert err.count("cannot write to standard output: No space left on device") == 1 and "Traceback" not in err, err
