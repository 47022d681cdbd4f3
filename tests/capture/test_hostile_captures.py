"""Hostile capture files and unusable paths: a pcapng block whose length is bogus costs only that
block, whatever its type; an Interface Description Block with one overrunning option keeps its
interface; ``decode`` and ``pipeline`` refuse inputs (and an output folder) they cannot use with
exit status 2 and one line on stderr, before any output and before Spark starts."""

from __future__ import annotations

import io
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from capture_helpers import block, epb, idb, option, read_all, shb, tcp_pkt

from harness.capture.pcapcommon import PcapHeader, Record
from harness.capture.pcapfile import iter_records, read_header
from harness.capture.streams import CaptureReading, capture_segments
from harness.cli import main as cli_main
from harness.decoding import read_hex
from harness.pipeline.splits import SplitResult, check_chaining, describe, plan_tasks, read_split

REPO = Path(__file__).resolve().parents[2]
TOTAL = 4950
UNKNOWN = 0x80000ABC  # a local-use block type, not one of the pcapng draft's


def _packets(n: int = TOTAL) -> list[bytes]:
    return [epb("<", 0, 1_000_000 + i, struct.pack("<I", i) * 16) for i in range(n)]


def _with_bogus_block(at: int, claimed: int, n: int = TOTAL) -> tuple[bytes, int, int]:
    """A capture of ``n`` packets with a damaged unknown block before packet ``at``: its leading
    Block Total Length says ``claimed``, its body and trailing length are a 28-byte block's."""
    head = shb("<") + idb("<", 1)
    blocks = _packets(n)
    damaged = bytearray(block("<", UNKNOWN, b"vendor data 0123"))
    struct.pack_into("<I", damaged, 4, claimed)
    before = head + b"".join(blocks[:at])
    return before + bytes(damaged) + b"".join(blocks[at:]), len(before), len(before) + len(damaged)


def _sequential(path: Path) -> list[tuple[int, bytes]]:
    with path.open("rb") as f:
        return [(r.offset, r.data) for r in iter_records(f, path=str(path)) if isinstance(r, Record)]


def _ranges(path: Path, split_size: int) -> list[tuple[int, bytes]]:
    """The records the pipeline's planned byte ranges give, in file order (as its tasks read them)."""
    plan = plan_tasks([describe(str(path))], split_size, tasks=8)
    results: list[SplitResult] = []
    got: list[tuple[int, bytes]] = []
    for split in sorted((s for task in plan for s in task), key=lambda s: s.start):
        result = SplitResult(split)
        got += [(r.offset, r.data) for r in read_split(split, result)]
        results.append(result)
    assert not check_chaining(results)
    return got


# ---------------------------------------------------------------- pcapng: bogus block lengths


@pytest.mark.parametrize(
    ("at", "claimed"),
    [
        (2398, 0x00F0_0000),  # above MAX_BLOCK, below MAX_SKIP_BLOCK, past the end of the file
        (100, 0x0006_0000),  # above MAX_BLOCK, inside the file: the trailing length disagrees
        (4900, 0x0004_0000),  # below MAX_BLOCK, past the end of the file
    ],
    ids=["past-the-end", "inside-the-file", "small-past-the-end"],
)
def test_unknown_block_with_a_bogus_length_costs_only_itself(tmp_path: Path, at: int, claimed: int) -> None:
    data, bad, resumed = _with_bogus_block(at, claimed)
    path = tmp_path / "bogus.pcapng"
    path.write_bytes(data)
    with path.open("rb") as f:
        items = list(iter_records(f, path=str(path)))
    recs = [r for r in items if isinstance(r, Record)]
    probs = [p for p in items if not isinstance(p, Record)]
    assert len(recs) == TOTAL, f"{len(recs)} of {TOTAL} packets found"
    assert [r.data[:4] for r in recs] == [struct.pack("<I", i) for i in range(TOTAL)]
    assert recs[at].offset == resumed
    assert [p.offset for p in probs] == [bad, bad]
    assert probs[1].reason == f"resynchronised at offset {resumed}, skipped {resumed - bad} bytes"
    # the same through the capture edge decode uses: every frame is read
    reading = CaptureReading()
    list(capture_segments(path, {1801}, reading))
    assert reading.records == TOTAL


def test_bogus_length_past_the_end_is_reported_and_a_truncated_last_block_still_is(tmp_path: Path) -> None:
    data, bad, _ = _with_bogus_block(2398, 0x00F0_0000)
    _, probs = read_all(data, path="b")
    assert probs[0].offset == bad and probs[0].reason.startswith("truncated block")
    whole = shb("<") + idb("<", 1) + b"".join(_packets(3))
    recs, probs = read_all(whole[:-10], path="t")  # a capture cut while its last block was written
    assert len(recs) == 2 and probs[0].reason.startswith("truncated block") and len(probs) == 2


def test_a_bogus_block_keeps_the_pipeline_ranges_equal_to_the_sequential_reader(tmp_path: Path) -> None:
    data, _, _ = _with_bogus_block(700, 0x0006_0000, n=1500)
    path = tmp_path / "bogus.pcapng"
    path.write_bytes(data)
    expected = _sequential(path)
    assert len(expected) == 1500
    for split_size in (4_096, 50_000):
        assert _ranges(path, split_size) == expected
    clean = tmp_path / "clean.pcapng"
    clean.write_bytes(shb("<") + idb("<", 1) + b"".join(_packets(1500)))
    plan = plan_tasks([describe(str(clean))], 4_096, tasks=8)
    assert sum(len(t) for t in plan) > 1  # a whole chain is still cut into ranges
    assert _ranges(clean, 4_096) == _sequential(clean)


# ---------------------------------------------------------------- pcapng: an overrunning IDB option


def _idb_with_overrunning_option(tsresol: int = 9) -> bytes:
    opts = option("<", 9, bytes([tsresol]))  # if_tsresol: nanoseconds, before the bad option
    opts += struct.pack("<HH", 2, 0xFFF0) + b"eth0"  # if_name claiming 65520 bytes
    opts += struct.pack("<HH", 0, 0)
    return block("<", 1, struct.pack("<HHI", 1, 0, 65535) + opts)


def test_idb_with_an_overrunning_option_keeps_its_interface(tmp_path: Path) -> None:
    frames = [bytes(tcp_pkt(b"MSMQ" * (i + 1), seq=1000 + 100 * i)) for i in range(6)]
    head = shb("<") + _idb_with_overrunning_option()
    data = head + b"".join(epb("<", 0, 1_000_000_000 + i, f) for i, f in enumerate(frames))
    path = tmp_path / "idb.pcapng"
    path.write_bytes(data)
    recs, probs = read_all(data, path="idb.pcapng")
    assert [r.data for r in recs] == frames
    assert all(r.linktype == 1 for r in recs)
    assert recs[1].ts - recs[0].ts == pytest.approx(1e-9, abs=1e-10)  # the option before it is kept
    assert len(probs) == 1 and probs[0].offset == len(shb("<")) and "option 2" in probs[0].reason
    hdr = read_header(io.BytesIO(data))
    assert isinstance(hdr, PcapHeader) and [(i.linktype, i.snaplen) for i in hdr.interfaces] == [(1, 65535)]
    reading = CaptureReading()
    segments = list(capture_segments(path, {1801}, reading))
    assert len(segments) == 6 and reading.frames_not_tcp == 0
    assert _ranges(path, 200) == _sequential(path)


# ---------------------------------------------------------------- decode: inputs it cannot use


def _one_line_error(err: str, name: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("msmq-harness decode: ") and name in lines[0] and "Traceback" not in err


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("empty.pcap", b""),
        ("empty.bin", b""),
        ("image.pcap", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4),
        ("random.bin", bytes((i * 193 + 71) % 256 for i in range(5000))),
        ("notes.txt", b"meeting notes: capture the MSMQ traffic on Tuesday\n"),
        ("short.pcap", b"\xd4\xc3\xb2\xa1\x02\x00\x04\x00"),  # pcap magic, header cut short
        ("short.pcapng", b"\x0a\x0d\x0d\x0a\x1c\x00\x00\x00"),  # section header cut short
    ],
)
def test_decode_refuses_what_is_not_a_capture_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: bytes
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    assert cli_main(["decode", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    _one_line_error(err, name)
    # what decode does read is unchanged: a hex dump and the raw stream it holds
    frame = REPO / "fixtures" / "mqqb-examples" / "frame1.hex"
    raw = tmp_path / "frame1.bin"
    raw.write_bytes(read_hex(frame.read_text()))
    assert cli_main(["decode", str(frame), str(raw)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.count("[frame1.hex]") and out.count("[frame1.bin]")


def test_a_section_header_longer_than_the_first_read_is_a_capture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    comments = option("<", 1, b"c" * 60_000) + option("<", 1, b"d" * 60_000) + struct.pack("<HH", 0, 0)
    long_shb = block("<", 0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1) + comments)
    path = tmp_path / "long-shb.pcapng"
    path.write_bytes(long_shb + idb("<", 1) + epb("<", 0, 1, bytes(tcp_pkt(b"x"))))
    hdr = read_header(io.BytesIO(path.read_bytes()))
    assert isinstance(hdr, PcapHeader) and hdr.length == len(long_shb) and hdr.interfaces
    assert cli_main(["decode", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "incomplete packet" in out


def test_decode_checks_every_input_before_printing_anything(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.pcapng"
    good.write_bytes(shb("<") + idb("<", 1) + epb("<", 0, 1, bytes(tcp_pkt(b"x"))))
    for bad in (tmp_path / "missing.pcap", tmp_path):  # missing, and a folder
        assert cli_main(["decode", str(good), str(bad)]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        _one_line_error(err, str(bad))


def test_decode_of_an_empty_file_through_the_entry_point(tmp_path: Path) -> None:
    empty = tmp_path / "empty.pcapng"
    empty.write_bytes(b"")
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "decode", str(empty)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    _one_line_error(done.stderr, "empty.pcapng")


# ---------------------------------------------------------------- pipeline: paths checked before Spark


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.pipeline.job as job

    def refuse(*_args: object, **_kw: object) -> None:
        raise AssertionError("Spark was started before the paths were checked")

    monkeypatch.setattr(job, "spark_session", refuse)


@pytest.fixture
def capture_file(tmp_path: Path) -> Path:
    path = tmp_path / "c.pcapng"
    path.write_bytes(shb("<") + idb("<", 1) + b"".join(_packets(10)))
    return path


def _pipeline_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert cli_main(["pipeline", "--quiet", *argv]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1 and lines[0].startswith("msmq-harness pipeline: "), err
    return lines[0]


def test_pipeline_refuses_an_out_under_a_regular_file_before_spark(
    tmp_path: Path, capture_file: Path, capsys: pytest.CaptureFixture[str], no_spark: None
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for out in (blocker / "out", blocker):
        line = _pipeline_error(capsys, [str(capture_file), "--out", str(out)])
        assert str(out) in line
    assert blocker.read_text() == "not a folder"


def test_pipeline_refuses_an_out_folder_it_cannot_write_before_spark(
    capture_file: Path, capsys: pytest.CaptureFixture[str], no_spark: None
) -> None:
    # /proc takes no new folder or file from anyone, root included
    for out in (Path("/proc/msmq-harness-out"), Path("/proc/msmq-harness-out/sub"), Path("/proc/self")):
        assert str(out) in _pipeline_error(capsys, [str(capture_file), "--out", str(out)])


def test_pipeline_refuses_unreadable_inputs_before_spark(
    tmp_path: Path, capture_file: Path, capsys: pytest.CaptureFixture[str], no_spark: None
) -> None:
    missing = tmp_path / "missing.pcap"
    out = tmp_path / "out"
    for argv in (
        ["--via-hadoop", str(missing)],
        ["--via-hadoop", str(capture_file), f"file://{missing}"],
        ["--via-hadoop", str(tmp_path / "nothing-*.pcap")],
    ):
        line = _pipeline_error(capsys, [*argv, "--out", str(out)])
        assert "missing.pcap" in line or "nothing-" in line
    assert not out.exists()


def test_pipeline_with_an_unusable_out_exits_at_once_through_the_entry_point(
    tmp_path: Path, capture_file: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "pipeline", str(capture_file), "--out", str(blocker / "out")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("msmq-harness pipeline: ") and "Traceback" not in done.stderr
    assert "WARN" not in done.stderr and "Spark" not in done.stderr
    assert elapsed < 10, f"took {elapsed:.1f} s: Spark was started"
