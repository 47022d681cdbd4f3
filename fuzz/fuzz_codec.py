"""Fuzzing the codec: random and mutated inputs through every parser.

Checks the robustness promise of ``packets`` ([MS-MQMQ] 2.2.18-2.2.20, [MS-MQQB] 2.2): no input
makes ``parse``, ``parse_ping`` or the ``StreamSplitter`` raise anything but PacketError, hang,
or allocate much more than the input's own size; and every input that parses strictly builds
back to the same bytes.  Mutations are aimed at what breaks decoders: length fields with the top
bit set (the CVE-2023-21554 "QueueJumper" pattern), PacketSize 0xFFFFFFFF, truncations,
splices of two packets, and flag bits that announce absent headers.

Run: ``python fuzz/fuzz_codec.py --iterations 1000000 [--workers 2] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import random
import resource
import signal
import struct
import sys
import time
import traceback
import tracemalloc
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import packets  # noqa: E402
from fuzz.seeds import seed_corpus  # noqa: E402
from packets import PacketError, StreamSplitter  # noqa: E402

INTERESTING_32 = (0, 1, 0x7F, 0x80, 0xFF, 0x100, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF)
INTERESTING_16 = (0, 1, 2, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFE, 0xFFFF)
INTERESTING_8 = (0, 1, 0x7F, 0x80, 0xFA, 0xFB, 0xFF)
HANG_SECONDS = 2.0
# Peak bytes are compared with max(input size, ALLOC_FLOOR): the diagnostics have a fixed cost
# (offset tables, error objects) that is not allocation driven by a length field.
ALLOC_FLOOR = 4096


class Hang(Exception):
    pass


def _alarm(_signum: int, _frame: Any) -> None:
    raise Hang()


def mutate(rng: random.Random, seeds: list[bytes]) -> bytes:
    """One fuzz input: a mutated seed, a splice, or raw random bytes."""
    choice = rng.random()
    if choice < 0.05:
        return rng.randbytes(rng.randrange(0, 256))
    data = bytearray(rng.choice(seeds))
    if choice < 0.10:  # random tail behind a real BaseHeader
        return bytes(data[:16]) + rng.randbytes(rng.randrange(0, 512))
    for _ in range(rng.choice((1, 1, 1, 2, 3, 5))):
        if not data:
            break
        op = rng.randrange(9)
        at = rng.randrange(len(data))
        if op == 0:
            data[at] ^= 1 << rng.randrange(8)
        elif op == 1:
            data[at] = rng.choice(INTERESTING_8)
        elif op == 2 and len(data) >= 2:
            at = rng.randrange(0, len(data) - 1) & ~1
            struct.pack_into("<H", data, at, rng.choice((*INTERESTING_16, len(data))))
        elif op == 3 and len(data) >= 4:
            at = rng.randrange(0, len(data) - 3) & ~3
            struct.pack_into("<L", data, at, rng.choice((*INTERESTING_32, len(data), len(data) + 1)))
        elif op == 4:
            del data[rng.randrange(len(data)) :]
        elif op == 5:
            data += rng.randbytes(rng.randrange(1, 64))
        elif op == 6:
            other = rng.choice(seeds)
            cut = rng.randrange(len(other) + 1)
            data = data[:at] + other[cut:]
        elif op == 7:
            end = min(len(data), at + rng.randrange(1, 64))
            data[at:at] = data[at:end]
        else:
            data[at] = rng.randrange(256)
    if len(data) >= 12 and rng.random() < 0.5:  # keep PacketSize consistent: reach deeper
        struct.pack_into("<L", data, 8, len(data))
    return bytes(data)


@dataclass
class Tally:
    inputs: int = 0
    parsed: int = 0
    packet_errors: int = 0
    unexpected: int = 0
    hangs: int = 0
    roundtrip_mismatches: int = 0
    max_ms: float = 0.0
    max_alloc_ratio: float = 0.0
    alloc_samples: int = 0
    failures: list[dict[str, str]] = field(default_factory=list)

    def merge(self, other: Tally) -> None:
        counters = ("inputs", "parsed", "packet_errors", "unexpected", "hangs", "roundtrip_mismatches", "alloc_samples")
        for name in counters:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.max_ms = max(self.max_ms, other.max_ms)
        self.max_alloc_ratio = max(self.max_alloc_ratio, other.max_alloc_ratio)
        self.failures.extend(other.failures[: max(0, 20 - len(self.failures))])


def exercise(data: bytes, tally: Tally) -> None:
    """Every parser on one input; anything but PacketError is a failure."""
    try:
        p = packets.parse(data, strict=True)
        tally.parsed += 1
        if packets.build(p) != data:
            tally.roundtrip_mismatches += 1
            tally.failures.append({"kind": "roundtrip", "input": data.hex()})
    except PacketError:
        tally.packet_errors += 1
    packets.parse(data, strict=False)
    with contextlib.suppress(PacketError):
        packets.parse_ping(data, strict=True)
    packets.parse_ping(data, strict=False)
    splitter = StreamSplitter()
    try:
        for piece in splitter.feed(data):
            packets.parse(piece.data, strict=False)
    except PacketError:
        pass


def run_chunk(args: tuple[int, int, int]) -> Tally:
    seed, count, alloc_every = args
    rng = random.Random(seed)
    seeds = seed_corpus()
    tally = Tally()
    for data in seeds * packets.fused.FUSE_AFTER:  # warm up: parsers compile on first use (a shape's
        exercise(data, Tally())  # whole-packet one after FUSE_AFTER valid packets), not the input's cost
    signal.signal(signal.SIGALRM, _alarm)
    for i in range(count):
        data = mutate(rng, seeds)
        tally.inputs += 1
        sample = alloc_every and i % alloc_every == 0
        if sample:
            tracemalloc.start()
        start = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
        try:
            exercise(data, tally)
        except Hang:
            tally.hangs += 1
            tally.failures.append({"kind": "hang", "input": data.hex()})
        except Exception:
            tally.unexpected += 1
            tally.failures.append({"kind": "exception", "input": data.hex(), "trace": traceback.format_exc()})
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            if sample:
                _, peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
                tally.alloc_samples += 1
                tally.max_alloc_ratio = max(tally.max_alloc_ratio, peak / max(len(data), ALLOC_FLOOR))
        tally.max_ms = max(tally.max_ms, (time.perf_counter() - start) * 1000)
    return tally


def chunks(iterations: int, seed: int, size: int, alloc_every: int) -> Iterator[tuple[int, int, int]]:
    done = 0
    index = 0
    while done < iterations:
        n = min(size, iterations - done)
        yield (seed * 1_000_003 + index, n, alloc_every)
        done += n
        index += 1


def fuzz(iterations: int, workers: int = 1, seed: int = 1, alloc_every: int = 500) -> dict[str, Any]:
    """Run ``iterations`` inputs; returns the tally as a dict with rates and peak RSS."""
    started = time.perf_counter()
    total = Tally()
    jobs = list(chunks(iterations, seed, 5_000, alloc_every))
    if workers > 1:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            for t in pool.imap_unordered(run_chunk, jobs):
                total.merge(t)
    else:
        for job in jobs:
            total.merge(run_chunk(job))
    elapsed = time.perf_counter() - started
    who = resource.RUSAGE_CHILDREN if workers > 1 else resource.RUSAGE_SELF
    result = asdict(total)
    result.update(
        seconds=round(elapsed, 1),
        inputs_per_second=round(total.inputs / elapsed) if elapsed else 0,
        peak_rss_mib=round(resource.getrusage(who).ru_maxrss / 1024, 1),
        seeds=len(seed_corpus()),
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=max(1, multiprocessing.cpu_count()))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", default=str(ROOT / "reports" / "fuzz.json"))
    args = parser.parse_args(argv)
    result = fuzz(args.iterations, args.workers, args.seed)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2))
    summary = {k: v for k, v in result.items() if k != "failures"}
    print(json.dumps(summary, indent=2))
    for failure in result["failures"][:3]:
        print(failure.get("trace") or failure, file=sys.stderr)
    bad = result["unexpected"] + result["hangs"] + result["roundtrip_mismatches"]
    print(f"fuzz: {result['inputs']} inputs, {bad} failures, report {args.json}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
