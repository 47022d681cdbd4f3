"""The re-export check of ``make lint``: no module in ``packets/`` or ``harness/`` but a package's
``__init__`` lists in its ``__all__`` a name it imports from another module.

A name lives in the module that defines it, and every importer names that module, so that a
reader sees where it is defined.  A package's ``__init__`` may gather the names of its modules
(its ``__all__`` is the package's public face); any other module lists only what it defines, and
a name it imports for its own use stays out of its ``__all__``.  There is no allowlist: the count
stays at zero.

    python -m tools.reexports            # exit 1 naming each re-export
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tools.function_size import PACKAGES, ROOT
from tools.private_imports import imported_module, module_name


@dataclass(frozen=True)
class Reexport:
    key: str  # "harness/pipeline/job.py::PipelineError"
    source: str  # "harness.pipeline.errors", the module it is imported from
    line: int  # of the import


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The module-level statements of ``body``, those under a module-level ``if`` or ``try``
    (``if TYPE_CHECKING:``, an optional import) included."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _top_level(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            yield from _top_level(node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body])


def _imported(tree: ast.Module, importer: str, package: bool) -> dict[str, tuple[str, int]]:
    """Name bound at module level by an import -> (the module it comes from, line)."""
    out: dict[str, tuple[str, int]] = {}
    for node in _top_level(tree.body):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            module = imported_module(node, importer, package)
            out |= {(a.asname or a.name): (module, node.lineno) for a in node.names if a.name != "*"}
        elif isinstance(node, ast.Import):
            out |= {(a.asname or a.name.partition(".")[0]): (a.name, node.lineno) for a in node.names}
    return out


def _listed(tree: ast.Module) -> set[str]:
    """The names of the module's ``__all__`` (assigned, annotated or extended with ``+=``)."""
    out: set[str] = set()
    for node in _top_level(tree.body):
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if isinstance(node, ast.AnnAssign | ast.AugAssign):
            target = node.target
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id == "__all__" and isinstance(value, ast.List | ast.Tuple):
            out |= {e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return out


def reexports(paths: list[Path] | None = None, root: Path = ROOT) -> list[Reexport]:
    """Every name a module under ``paths`` (default: packets/ and harness/) that is not a
    package's ``__init__`` imports from another module and lists in its ``__all__``; modules
    named from ``root``."""
    root = root.resolve()
    paths = paths or [root / p for p in PACKAGES]
    files = sorted({f.resolve() for p in paths for f in ([p] if p.is_file() else p.rglob("*.py"))})
    out: list[Reexport] = []
    for file in files:
        if file.name == "__init__.py":
            continue
        where = file.relative_to(root) if file.is_relative_to(root) else file
        importer, package = module_name(file, root) if file.is_relative_to(root) else (file.stem, False)
        tree = ast.parse(file.read_text(encoding="utf-8"), str(file))
        imported = _imported(tree, importer, package)
        out += [Reexport(f"{where}::{name}", *imported[name]) for name in sorted(_listed(tree)) if name in imported]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.reexports", description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    found = reexports()
    for r in found:
        print(f"{r.key} (imported from {r.source}, line {r.line}): import it from {r.source} where it is used")
    print(f"{len(found)} re-exported names in modules that are not a package's __init__")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
