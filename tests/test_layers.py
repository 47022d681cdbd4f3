"""The layers of DESIGN.md hold, and no function grows past the limits: what ``make lint`` checks,
run by the suite so that CI (``make test``) enforces it too.

- ``lint-imports`` with the contracts of pyproject.toml: packets < model < session < (peers,
  capture) < cases < report < (pipeline, cli, pytest_plugin); the cores import no edge; the
  results leaf imports nothing of the harness; cases import nothing of report (no cycle).
- ``tools/function_size.py``: no function in packets/ or harness/ over 60 lines or of
  cyclomatic complexity over 15.
- ``tools/inline_imports.py``: no import inside a function in packets/ or harness/ but those
  listed in tools/inline_imports_allowlist.txt (optional heavy dependencies and platform modules,
  kept on purpose).
- ``tools/private_imports.py``: no module in packets/ or harness/ imports another module's private
  (leading underscore) names.
- ``tools/reexports.py``: no module in packets/ or harness/ but a package's ``__init__`` lists in
  its ``__all__`` a name it imports from another module (no exception).
- no test module imports another test module (shared helpers live in one helpers module per
  test package, e.g. tests/cases/casekit.py, or in conftest fixtures).
- no import cycle in packets/ and harness/ (and the ``cases-layers`` contract, one way with no
  exception, inside harness.cases).
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

from tools.inline_imports import inline_imports
from tools.private_imports import private_imports
from tools.reexports import reexports

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_cases_and_report_form_no_cycle() -> None:
    """No module of harness.report is reached from harness.cases but through the imports the
    contract lists as still to be moved (pyproject.toml, ``ignore_imports``)."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["id"] == "cases-report"]
    graph = grimp.build_graph("harness", cache_dir=None)
    for line in contract.get("ignore_imports", []):
        importer, imported = (part.strip() for part in line.split("->"))
        graph.remove_import(importer=importer, imported=imported)
    chains = graph.find_shortest_chains(importer="harness.cases", imported="harness.report")
    assert chains == set()


# The checks of tools/ that make lint runs: none may report anything (function size, imports inside
# functions but those listed, imports of private names, re-exports).
TOOLS_CHECKS = ("tools.function_size", "tools.inline_imports", "tools.private_imports", "tools.reexports")


@pytest.mark.parametrize("check", TOOLS_CHECKS)
def test_the_tools_checks_pass(check: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", check], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout[-4000:]


def test_inline_imports_finds_an_import_inside_a_method(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import os\n\nclass C:\n    def f(self):\n        def g():\n            from a.b import c\n"
        "        import x, y\n",
        encoding="utf-8",
    )
    found = {i.key.split("::", 1)[1] for i in inline_imports([module])}
    assert found == {"C.f.g::a.b", "C.f::x", "C.f::y"}


def test_private_imports_finds_another_modules_private_name(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from pkg.b import _hidden_by_init\n", encoding="utf-8")
    (package / "a.py").write_text(
        "from __future__ import annotations\n\nfrom pkg.b import _shared, public, __version__\nfrom .a import _own\n"
        "from . import _of_package\n\ndef f():\n    from ..pkg.c import _late\n",
        encoding="utf-8",
    )
    found = {i.key for i in private_imports([package], root=tmp_path)}
    assert found == {
        "pkg/__init__.py::pkg.b._hidden_by_init",
        "pkg/a.py::pkg.b._shared",
        "pkg/a.py::pkg._of_package",
        "pkg/a.py::pkg.c._late",
    }


def test_reexports_finds_a_name_imported_from_another_module(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text('from pkg.b import gathered\n\n__all__ = ["gathered"]\n', encoding="utf-8")
    (package / "a.py").write_text(
        "from __future__ import annotations\n\nimport os.path as osp\nfrom pkg.b import shared, used_here\n"
        "from .c import other as alias\n\ntry:\n    from pkg.d import optional\nexcept ImportError:\n"
        "    optional = None\n\n__all__ = [\"alias\", \"own\", \"shared\"]\n__all__ += [\"optional\", \"osp\"]\n\n"
        "own = used_here\n\ndef f():\n    from pkg.e import late\n    return late\n",
        encoding="utf-8",
    )
    found = {(r.key, r.source) for r in reexports([package], root=tmp_path)}
    assert found == {
        ("pkg/a.py::alias", "pkg.c"),
        ("pkg/a.py::optional", "pkg.d"),
        ("pkg/a.py::osp", "os.path"),
        ("pkg/a.py::shared", "pkg.b"),
    }


def import_cycles(graph: grimp.ImportGraph) -> set[tuple[str, ...]]:
    """The strongly connected sets of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: set[tuple[str, ...]] = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.add(tuple(sorted(component)))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return out


def test_no_import_cycle() -> None:
    """No cycle in packets/ and harness/, imports inside functions included (grimp counts them);
    harness.cases's layers contract has no exception."""
    graph = grimp.build_graph("packets", "harness", cache_dir=None)
    assert import_cycles(graph) == set()
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [c for c in contracts if c["id"] == "cases-layers"]
    assert layers["containers"] == ["harness.cases"] and not layers.get("ignore_imports")
    assert all(":" not in layer for layer in layers["layers"])  # siblings independent: no cycle among them


def test_import_cycles_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for module in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(module)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.x")
    graph.add_import(importer="a.z", imported="a.x")
    assert import_cycles(graph) == {("a.x", "a.y")}



def imports_of_test_modules(root: Path) -> set[tuple[str, str]]:
    """(test file, imported test module) for every import of a ``test_*`` module under ``root``."""
    test_modules = {f.stem for f in root.rglob("test_*.py")}
    out = set()
    for file in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"), str(file))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            else:
                continue
            out |= {
                (file.relative_to(root.parent).as_posix(), last)
                for last in (name.rsplit(".", 1)[-1] for name in names)
                if last in test_modules
            }
    return out


def test_no_test_module_imports_another() -> None:
    found = imports_of_test_modules(ROOT / "tests")
    assert found == set()


def test_a_test_module_importing_another_is_found(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    (tests / "a").mkdir(parents=True)
    (tests / "a" / "test_one.py").write_text("def helper():\n    return 1\n", encoding="utf-8")
    (tests / "a" / "kit.py").write_text("X = 1\n", encoding="utf-8")
    (tests / "a" / "test_two.py").write_text(
        "from tests.a.test_one import helper\nfrom kit import X\n\ndef test_x():\n    from test_one import helper\n",
        encoding="utf-8",
    )
    assert imports_of_test_modules(tests) == {("tests/a/test_two.py", "test_one")}
