"""The in-function import check of ``make lint``: no ``import`` inside a function in ``packets/``
or ``harness/`` but those listed in ``tools/inline_imports_allowlist.txt``.

An import belongs at the top of its module, where the import graph (``lint-imports``,
tests/test_layers.py) sees it.  The exceptions are an optional heavy dependency (pyspark,
pyarrow, scapy: imported by the function that needs it, with a comment saying so), a module
outside the package (``examples/``), and the imports still to be moved, each listed as
``path::function::module`` (the function's qualified name, ``Class.method`` or
``outer.inner``; the module as written, ``..`` for a relative one).  The check passes while
every in-function import is listed; a listed one no longer found is reported, so that its line
can go.

    python -m tools.inline_imports            # exit 1 naming each unlisted in-function import
    python -m tools.inline_imports --all      # every one, listed or not
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

from tools.function_size import PACKAGES, ROOT, read_list

ALLOWLIST = ROOT / "tools" / "inline_imports_allowlist.txt"


@dataclass(frozen=True)
class InlineImport:
    key: str  # "harness/pipeline/tasks.py::_arrow_schema::pyarrow"
    line: int


def _module_of(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return ["." * node.level + (node.module or "")]


def _walk(node: ast.AST, function: str = "", prefix: str = "") -> list[tuple[str, str, int]]:
    """(function, module, line) of every import inside a function under ``node``."""
    out: list[tuple[str, str, int]] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{child.name}"
            out += _walk(child, name, name + ".")
        elif isinstance(child, ast.ClassDef):
            out += _walk(child, function, f"{prefix}{child.name}.")
        elif isinstance(child, ast.Import | ast.ImportFrom) and function:
            out += [(function, module, child.lineno) for module in _module_of(child)]
        else:
            out += _walk(child, function, prefix)
    return out


def inline_imports(paths: list[Path] | None = None) -> list[InlineImport]:
    """Every import statement inside a function under ``paths`` (default: packets/ and harness/)."""
    paths = paths or [ROOT / p for p in PACKAGES]
    files = sorted({f for p in paths for f in ([p] if p.is_file() else p.rglob("*.py"))})
    out: list[InlineImport] = []
    for file in files:
        where = file.resolve().relative_to(ROOT) if file.resolve().is_relative_to(ROOT) else file
        tree = ast.parse(file.read_text(encoding="utf-8"), str(file))
        out.extend(InlineImport(f"{where}::{function}::{module}", line) for function, module, line in _walk(tree))
    return out


def allowlist(path: Path = ALLOWLIST) -> set[str]:
    """The listed imports: one ``path::function::module`` a line (read as the function-size list is)."""
    return read_list(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.inline_imports", description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true", help="list every in-function import, listed or not")
    args = parser.parse_args(argv)
    found = inline_imports()
    listed = allowlist()
    for i in found:
        if args.all or i.key not in listed:
            mark = "listed" if i.key in listed else "NOT LISTED"
            print(f"{i.key} (line {i.line}) [{mark}]")
    gone = sorted(listed - {i.key for i in found})
    for key in gone:
        print(f"{key}: no longer inside a function: remove it from {ALLOWLIST.relative_to(ROOT)}")
    new = [i for i in found if i.key not in listed]
    print(f"{len(found)} in-function imports, {len(new)} of them not listed; {len(gone)} listed ones gone")
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
