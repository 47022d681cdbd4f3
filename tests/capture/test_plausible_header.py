"""One plausibility test of a classic-pcap record header (libpcap format: ts_sec, ts_usec or
ts_nsec, incl_len, orig_len), shared by the reader's resynchronisation
(harness.capture.pcapfile.find_record_boundary) and the pipeline's split boundaries
(harness.pipeline.splits): both accept exactly the headers ``plausible_record_header`` accepts;
and a pcapng block of each type read goes to its own handler."""

from __future__ import annotations

import struct

import pytest

from harness.capture.pcapcommon import MAX_WIRELEN, RESYNC_TS_WINDOW, PcapHeader, plausible_record_header
from harness.capture.pcapfile import find_record_boundary
from harness.capture.pcapng import BLOCK_HANDLERS
from harness.pipeline.splits import CONFIRM, _confirm

SNAPLEN = 1000
HEADER = PcapHeader("pcap", "<", 1, SNAPLEN, 1e-6, (2, 4), 24)
SEC = 1_700_000_000
GOOD = (SEC, 5, 60, 60)


def _records(first: tuple[int, int, int, int], n: int) -> bytes:
    """``first`` then n - 1 sound records, each with caplen bytes of data."""
    out = b""
    for sec, frac, caplen, wirelen in [first] + [GOOD] * (n - 1):
        out += struct.pack("<IIII", sec, frac, caplen, wirelen) + b"\0" * min(caplen, 4096)
    return out


@pytest.mark.parametrize(
    ("first", "plausible"),
    [
        (GOOD, True),
        ((SEC, 999_999, 60, 60), True),
        ((SEC, 1_000_000, 60, 60), False),  # a fraction of one second or more
        ((SEC, 5, 0, 0), False),  # no wire length
        ((SEC, 5, 60, MAX_WIRELEN + 1), False),
        ((SEC, 5, 61, 60), False),  # more captured than was on the wire
        ((SEC, 5, SNAPLEN + 1, SNAPLEN + 1), False),  # more than the snapshot length
        ((SEC, 5, SNAPLEN, SNAPLEN), True),
    ],
)
def test_reader_and_splits_accept_what_the_one_test_accepts(first: tuple[int, int, int, int], plausible: bool) -> None:
    assert plausible_record_header(*first, 1_000_000, SNAPLEN, None) is plausible
    buf = _records(first, CONFIRM + 1)
    assert (find_record_boundary(buf, HEADER) == 0) is plausible
    assert _confirm(buf, 0, HEADER, at_eof=False) is plausible


def test_a_record_far_in_time_from_the_one_before_is_not_plausible() -> None:
    assert plausible_record_header(SEC + RESYNC_TS_WINDOW, 5, 60, 60, 1_000_000, SNAPLEN, SEC)
    assert not plausible_record_header(SEC + RESYNC_TS_WINDOW + 1, 5, 60, 60, 1_000_000, SNAPLEN, SEC)
    buf = _records(GOOD, 1) + _records((SEC + RESYNC_TS_WINDOW + 1, 5, 60, 60), CONFIRM)
    assert not _confirm(buf, 0, HEADER, at_eof=False)


def test_each_pcapng_block_type_read_has_its_handler() -> None:
    """Section Header (0x0A0D0D0A), Interface Description (1), Packet (2), Simple Packet (3) and
    Enhanced Packet (6) Blocks; any other type is skipped by its length."""
    assert set(BLOCK_HANDLERS) == {0x0A0D0D0A, 1, 2, 3, 6}
