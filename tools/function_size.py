"""The size and complexity check of ``make lint``: no function in ``packets/`` or ``harness/`` over
60 lines (from ``def`` to its last line, decorators apart) or of cyclomatic complexity over 15
(ruff's mccabe rule C901, the same measure ``ruff --select C901`` reports).  A function over
the limits is split by meaning, into named steps; there is no list of exceptions.

    python -m tools.function_size            # exit 1 naming each offender
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("packets", "harness")
MAX_LINES = 60
MAX_COMPLEXITY = 15


@dataclass(frozen=True)
class Offender:
    key: str  # "harness/cli.py::_cmd_run"
    line: int
    why: str  # "128 lines", "complexity 43", or both


def _functions(tree: ast.AST) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function of a module with its qualified name (Class.method, outer.inner)."""
    out: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                out.append((name, child))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def _complexities(paths: list[Path]) -> dict[tuple[str, int], int]:
    """(file, def line) -> complexity, for every function ruff's C901 finds over the limit."""
    ruff = Path(sys.executable).with_name("ruff")
    command = [str(ruff) if ruff.exists() else "ruff", "check", "--no-cache", "--select", "C901",
               "--config", f"lint.mccabe.max-complexity={MAX_COMPLEXITY}", "--output-format", "json",
               "--exit-zero", *map(str, paths)]
    found = json.loads(subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT).stdout)
    out = {}
    for item in found:
        message = item["message"]  # "`name` is too complex (16 > 15)"
        value = int(message.rsplit("(", 1)[1].split(" ", 1)[0])
        out[(str(Path(item["filename"]).resolve()), item["location"]["row"])] = value
    return out


def offenders(paths: list[Path] | None = None) -> list[Offender]:
    """Every function over the limits under ``paths`` (default: packets/ and harness/)."""
    paths = paths or [ROOT / p for p in PACKAGES]
    files = sorted({f for p in paths for f in ([p] if p.is_file() else p.rglob("*.py"))})
    complex_ = _complexities(paths)
    out = []
    for file in files:
        tree = ast.parse(file.read_text(encoding="utf-8"), str(file))
        for name, node in _functions(tree):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            value = complex_.get((str(file.resolve()), node.lineno), 0)
            why = [f"{length} lines"] if length > MAX_LINES else []
            why += [f"complexity {value}"] if value > MAX_COMPLEXITY else []
            if why:
                out.append(Offender(f"{file.resolve().relative_to(ROOT)}::{name}", node.lineno, ", ".join(why)))
    return out


def read_list(path: Path) -> set[str]:
    """The entries of a list file of the checks: one entry a line; ``#`` starts a comment."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return {line for line in lines if line}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.function_size", description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    found = offenders()
    for o in found:
        print(f"{o.key} (line {o.line}): {o.why}: split it")
    print(f"{len(found)} functions over {MAX_LINES} lines or complexity {MAX_COMPLEXITY}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
