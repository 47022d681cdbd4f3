"""Where a case document's keys are, and the error that names them: :class:`Lines` (the line of
each key and list item of a case file, by path), :func:`format_path` and :class:`CaseError`
(``file:line: key: message``).  The rules of docs/cases.md ("Errors") that every check of a case
reports through; the schema (harness.cases.schema), the matrix expansion (harness.cases.matrix)
and the wire case checks (harness.cases.wirecheck) all read this module, and it reads none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from harness.errors import HarnessError

__all__ = ["CaseError", "Lines", "PathT", "format_path"]

PathT = tuple[str | int, ...]

class CaseError(HarnessError):
    """A case file that cannot be loaded: ``str(e) == f"{file}:{line}: {key}: {message}"``.

    ``key`` is the path of the offending key in the document (``when[1].event``; "" when none
    applies, e.g. a YAML syntax error); ``line`` is 1-based.
    """

    def __init__(self, file: str, line: int, key: str, message: str) -> None:
        self.file = file
        self.line = line
        self.key = key
        self.message = message
        super().__init__(f"{file}:{line}: {key}: {message}")

    def __reduce__(self) -> tuple[Any, ...]:  # picklable across xdist / process workers
        return (type(self), (self.file, self.line, self.key, self.message))


def format_path(path: Iterable[str | int]) -> str:
    """("when", 0, "args", "iQueue") -> "when[0].args.iQueue"."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


class Lines:
    """Line numbers (1-based) of a document's keys and list items, by path.

    A mapping entry's line is its key's line; a list item's line is where the item starts; the
    empty path is the document's first line.  Lookups fall back to the nearest enclosing path.
    """

    def __init__(self, file: str, lines: dict[PathT, int] | None = None) -> None:
        self.file = file
        self.lines: dict[PathT, int] = lines if lines is not None else {}
        self._templated: bool | None = None  # does a path hold "${"? (mapped)

    def line(self, path: Iterable[str | int]) -> int:
        p = tuple(path)
        while p and p not in self.lines:
            p = p[:-1]
        return self.lines.get(p, 1)

    def error(self, path: Iterable[str | int], message: str) -> CaseError:
        p = tuple(path)
        return CaseError(self.file, self.line(p), format_path(p), message)

    def mapped(self, fn: Callable[[str], str]) -> Lines:
        """The same lines with every string path element passed through ``fn`` (matrix keys:
        ``fn`` changes only elements that hold ``${``, so lines without one are copied as they are)."""
        if self._templated is None:  # asked once per document, not once per variant
            self._templated = any("${" in x for p in self.lines for x in p if isinstance(x, str))
        if not self._templated:
            return Lines(self.file, dict(self.lines))
        return Lines(
            self.file,
            {tuple(fn(x) if isinstance(x, str) else x for x in p): n for p, n in self.lines.items()},
        )


