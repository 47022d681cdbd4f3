"""``make bench``: every benchmark of the harness, side by side, as a table and as JSON.

Each benchmark module exposes ``run(quick: bool) -> list[dict]``; a row has ``name``, ``unit``
and one numeric column per implementation compared (ours first), plus ratios.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SUITES = ("bench_codec", "bench_model", "bench_cases", "bench_peers", "bench_pipeline", "bench_memory")


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def print_table(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        cells = "  ".join(f"{k}={_fmt(v)}" for k, v in row.items() if k not in ("name", "unit"))
        print(f"  {row['name']:<58} [{row.get('unit', '')}]  {cells}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only", nargs="*", default=list(SUITES), help="benchmark modules to run")
    parser.add_argument("--json", default=str(ROOT / "reports" / "bench.json"))
    args = parser.parse_args(argv)
    results: dict[str, Any] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "suites": {},
    }
    for name in args.only:
        module = importlib.import_module(f"benchmarks.{name}")
        print(f"{name}:")
        rows = module.run(quick=args.quick)
        print_table(rows)
        results["suites"][name] = rows
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=2))
    print(f"JSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
