"""Seed corpus for the codec fuzzer: valid packets of every kind.

Hand-encoded packets from ``benchmarks.messages`` ([MS-MQMQ] 2.2.20, [MS-MQQB] 2.2) and every
hex fixture under ``fixtures/`` (the [MS-MQQB] section 4 example frames among them).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from benchmarks import messages
from harness.decoding import read_hex

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _hex_fixtures() -> list[bytes]:
    out = []
    for path in sorted(FIXTURES.rglob("*.hex")):
        try:
            out.append(read_hex(path.read_text()))
        except ValueError:
            continue
    return out


@cache
def seed_corpus() -> list[bytes]:
    seeds = [
        messages.typical_user_message(False),
        messages.typical_user_message(True),
        messages.establish_connection(False),
        messages.establish_connection(True),
        messages.connection_parameters(),
        messages.session_ack(),
    ]
    seeds.extend(_hex_fixtures())
    return seeds
