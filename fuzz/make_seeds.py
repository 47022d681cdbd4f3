"""Regenerate fixtures/fuzz-seeds/: valid packets of every kind and optional-header combination.

Drawn once from the test suite's hypothesis strategies (tests/packets/strategies_*.py) with a
fixed seed and written as hex files, so the fuzzer's corpus is data in the repository and does
not depend on hypothesis at fuzz time.  Run: ``python fuzz/make_seeds.py``.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "packets")]

import strategies_session as ss  # noqa: E402
import strategies_user as su  # noqa: E402

import packets  # noqa: E402
from packets.layout import PacketKind  # noqa: E402

OUT = ROOT / "fixtures" / "fuzz-seeds"
OPTIONAL = (
    "TransactionHeader",
    "SecurityHeader",
    "DebugHeader",
    "SoapHeader",
    "MultiQueueFormatHeader",
    "SessionHeader",
)


def draw_all() -> list[tuple[str, bytes]]:
    found: list[tuple[str, bytes]] = []
    rng = random.Random(1801)
    combos = [frozenset(h for h in OPTIONAL if rng.random() < 0.5) for _ in range(24)]
    combos += [frozenset(), frozenset(OPTIONAL)]

    for i, present in enumerate(combos):

        @seed(i)
        @settings(max_examples=1, database=None, suppress_health_check=list(HealthCheck))
        @given(su.user_messages(present=present))
        def one(headers: object) -> None:
            found.append(("user", packets.build(headers)))  # type: ignore[arg-type]

        one()

    kinds = [PacketKind.EstablishConnection, PacketKind.ConnectionParameters, PacketKind.SessionAck]
    strategies = [(f"{k.value}", ss.internal_packet(k)) for k in kinds]
    strategies += [(f"{k.value}", ss.transactional_ack_packet(k)) for k in (PacketKind.OrderAck, PacketKind.FinalAck)]
    for name, strategy in strategies:
        for j in range(3):

            @seed(j)
            @settings(max_examples=1, database=None, suppress_health_check=list(HealthCheck))
            @given(strategy)
            def one(headers: object) -> None:
                found.append((name, packets.build(headers)))  # type: ignore[arg-type]  # noqa: B023

            one()

    @settings(max_examples=3, database=None, suppress_health_check=list(HealthCheck))
    @seed(3)
    @given(ss.ping_packet())
    def pings(fields: object) -> None:
        found.append(("ping", packets.build_ping(fields)))  # type: ignore[arg-type]

    pings()
    return found


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.hex"):
        old.unlink()
    for n, (name, data) in enumerate(draw_all()):
        name = f"{n:03d}-{name}"
        lines = [data[i : i + 32].hex(" ") for i in range(0, len(data), 32)]
        (OUT / f"{name}.hex").write_text(f"# fuzz seed {name}: {len(data)} bytes\n" + "\n".join(lines) + "\n")
    print(f"wrote {len(list(OUT.glob('*.hex')))} seeds to {OUT}")
    return 0


if __name__ == "__main__":
    _ = st  # strategies come from the test modules
    sys.exit(main())
