"""The private-import check of ``make lint``: no module in ``packets/`` or ``harness/`` imports
another module's private names (``from m import _name``).

A leading underscore says "only this module uses it": a name another module needs is shared API,
named without the underscore (in its module's ``__all__``, with a docstring), or it moves to the
one module that uses it.  ``from __future__`` and a module importing from itself are not counted.

    python -m tools.private_imports            # exit 1 naming each private import
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

from tools.function_size import PACKAGES, ROOT


@dataclass(frozen=True)
class PrivateImport:
    key: str  # "harness/fuzz/engine.py::harness.fuzz.generate._leaves"
    line: int


def module_name(path: Path, root: Path) -> tuple[str, bool]:
    """The dotted name of the module at ``path`` under ``root``, and whether it is a package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if package else parts), package


def imported_module(node: ast.ImportFrom, importer: str, package: bool) -> str:
    """The absolute name of the module ``node`` imports from (a relative import resolved against
    ``importer``)."""
    if not node.level:
        return node.module or ""
    base = importer.split(".") if package else importer.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _scan(tree: ast.AST, importer: str, package: bool) -> list[tuple[str, int]]:
    """(module.name, line) of every private name ``tree`` imports from another module."""
    out: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.module == "__future__":
            continue
        module = imported_module(node, importer, package)
        if module == importer:
            continue
        out += [(f"{module}.{alias.name}", node.lineno) for alias in node.names if _private(alias.name)]
    return out


def _private(name: str) -> bool:
    """A leading underscore, except a dunder's (``__version__`` is public by convention)."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(paths: list[Path] | None = None, root: Path = ROOT) -> list[PrivateImport]:
    """Every import of another module's private name under ``paths`` (default: packets/ and
    harness/), modules named from ``root``."""
    root = root.resolve()
    paths = paths or [root / p for p in PACKAGES]
    files = sorted({f.resolve() for p in paths for f in ([p] if p.is_file() else p.rglob("*.py"))})
    out: list[PrivateImport] = []
    for file in files:
        where = file.relative_to(root) if file.is_relative_to(root) else file
        importer, package = module_name(file, root) if file.is_relative_to(root) else (file.stem, False)
        tree = ast.parse(file.read_text(encoding="utf-8"), str(file))
        out.extend(PrivateImport(f"{where}::{name}", line) for name, line in _scan(tree, importer, package))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.private_imports", description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    found = private_imports()
    for i in found:
        print(f"{i.key} (line {i.line}): name it without the underscore in its module, or move it")
    print(f"{len(found)} private imports")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
