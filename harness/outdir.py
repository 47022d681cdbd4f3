"""Output folders that no command fills by destroying what it did not write.

A command that writes a folder of outputs (``pipeline --out DIR``, ``run --record DIR``) writes
them into a temporary sibling, ``.DIR.partial-<host>-<pid>-<random>``, and renames it into
place when the output is complete (:class:`StagedOutput`).  The folder then holds a marker,
:data:`MARKER`, naming the command and every file it wrote.  An existing ``DIR`` is replaced
only when it is empty, or when its marker names the same command and every file in it is one
that marker lists (a previous output, untouched) -- or when the user gives ``--force``
(:func:`refusal` says why not, before any work).  An interrupted or failed command removes its
temporary sibling and leaves ``DIR`` as it was: never a previous run's summary beside a new
run's partial tables.  A sibling left by a process that was killed (``SIGKILL``) is removed by
the next run into the same folder on the same host, once its process is gone.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import shutil
import socket
import stat
from pathlib import Path
from types import TracebackType

from harness.errors import HarnessError

__all__ = [
    "MARKER",
    "OutputError",
    "StagedOutput",
    "listed_files",
    "not_written",
    "parse_marker",
    "refusal",
    "write_file_atomically",
]

MARKER = ".msmq-harness-output.json"
_LISTED = 3  # foreign files named in a refusal


class OutputError(HarnessError):
    """The output cannot be put in place (it was not, and the folder is as it was)."""


def _marker(folder: Path) -> dict[str, object] | None:
    try:
        return parse_marker((folder / MARKER).read_text(encoding="utf-8"))
    except OSError:
        return None


def parse_marker(text: str) -> dict[str, object] | None:
    """The marker :data:`MARKER` holding ``text``, or None when it is none (not JSON, not an object)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def listed_files(mark: dict[str, object] | None, command: str) -> set[str] | None:
    """The files (paths relative to the folder) a marker of ``command`` lists; None when ``mark``
    is no marker of ``command``: then nothing in the folder is a previous output of it."""
    files = mark.get("files") if mark is not None else None
    if mark is None or mark.get("command") != command or not isinstance(files, list):
        return None
    return {str(f) for f in files}


def not_written(option: str, out: str, command: str, foreign: list[str]) -> str:
    """The refusal naming the first few of ``foreign``, the entries of ``out`` no previous
    ``command`` wrote."""
    shown = ", ".join(foreign[:_LISTED]) + (", ..." if len(foreign) > _LISTED else "")
    return (
        f"{option} {out}: the folder holds files that no previous `msmq-harness {command}` wrote "
        f"({shown}); name another folder, move them, or give --force to replace the folder"
    )


def _foreign(folder: Path, command: str) -> list[str]:
    """The entries of ``folder`` (paths relative to it) that a previous output of ``command``
    did not write: all of them when it holds no marker of that command (the first few)."""
    files = listed_files(_marker(folder), command)
    if files is None:
        try:
            with os.scandir(folder) as entries:
                first = [e for _, e in zip(range(_LISTED + 1), entries, strict=False)]
                names = sorted(e.name + ("/" if e.is_dir(follow_symlinks=False) else "") for e in first)
        except OSError as e:
            return [f"(cannot list: {e.strerror or e})"]
        return names
    folders = {str(Path(f).parent) for f in files} | {"."}
    folders |= {str(p) for f in files for p in Path(f).parents}
    found: list[str] = []
    for root, dirs, names in os.walk(folder, onerror=lambda e: found.append(f"(cannot list: {e})")):
        rel = Path(root).relative_to(folder)
        for name in sorted(names):
            path = str(rel / name)
            if path not in files and path != MARKER:
                found.append(path)
        for name in sorted(dirs):
            path = str(rel / name)
            if path not in folders or os.path.islink(os.path.join(root, name)):
                found.append(path + "/")
        dirs[:] = [d for d in dirs if str(rel / d) in folders and not os.path.islink(os.path.join(root, d))]
        if len(found) > _LISTED:
            break
    return found


def _is_within(inner: Path, outer: Path) -> bool:
    return inner == outer or outer in inner.parents


def _home() -> Path | None:
    try:
        return Path.home().resolve()
    except (RuntimeError, OSError, KeyError):  # no home folder known
        return None


def refusal(out: str | os.PathLike[str], command: str, *, force: bool = False, option: str = "--out") -> str:
    """ "" when ``command``'s output may be put at ``out``, else why not, in a sentence naming
    ``option``: ``out`` is absent, an empty folder, or a previous output of ``command`` that
    holds nothing else; with ``force`` any folder but the file system's root, the home folder
    and a folder holding the current one.  Makes the parent folder when missing (as the
    command would) and checks that a sibling can be made in it."""
    try:
        path = Path(out).resolve()  # a link to a folder: that folder
        if path.exists() and not path.is_dir():
            return f"{option} {out}: not a folder; name a folder (made, or replaced when it holds a previous output)"
        if path.is_dir():
            if path == Path(path.anchor) or path == _home():
                return f"{option} {out}: the root or home folder is never an output folder"
            if _is_within(Path.cwd().resolve(), path):
                return f"{option} {out}: holds the current folder; name a folder of its own"
            foreign = _foreign(path, command)
            if foreign and not force:
                return not_written(option, str(out), command, [os.path.join(out, f) for f in foreign])
        path.parent.mkdir(parents=True, exist_ok=True)
        probe = path.parent / f".{path.name}.probe-{secrets.token_hex(4)}"
        probe.mkdir()
        probe.rmdir()
    except OSError as e:
        return f"{option} {out}: {e.strerror or e}"
    return ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def _sibling(final: Path, kind: str) -> Path:
    """A hidden sibling of ``final`` of this process: ``.NAME.<kind>-<host>-<pid>-<random>``."""
    return final.parent / f".{final.name}.{kind}-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"


def _remove_abandoned(final: Path) -> None:
    """Remove the siblings of ``final`` (:func:`_sibling`) left by processes of this host that
    are gone (killed before they could remove them)."""
    host = socket.gethostname()
    prefixes = tuple(f".{final.name}.{kind}-{host}-" for kind in ("partial", "old"))
    with contextlib.suppress(OSError), os.scandir(final.parent) as entries:
        for entry in list(entries):
            prefix = next((p for p in prefixes if entry.name.startswith(p)), None)
            if prefix is None or not entry.is_dir(follow_symlinks=False):
                continue
            pid = entry.name[len(prefix) :].split("-", 1)[0]
            if pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(entry.path, ignore_errors=True)


class StagedOutput:
    """An output folder written beside its place and renamed into it when complete.

    ``with StagedOutput(out, "pipeline", force=...) as stage:`` -- write into ``stage.path``,
    then call ``stage.commit()``; leaving the block without a commit (an exception, an
    interrupt) removes ``stage.path`` and leaves ``out`` as it was."""

    def __init__(self, out: str | os.PathLike[str], command: str, *, force: bool = False) -> None:
        self.final = Path(out).resolve()  # a link to a folder: that folder is replaced
        self.command = command
        self.force = force
        self.path = _sibling(self.final, "partial")
        self.committed = False
        self.kept = False  # the output could not be put in place: left where it was written

    def open(self) -> StagedOutput:
        """Make the temporary sibling (and remove those of processes gone)."""
        self.final.parent.mkdir(parents=True, exist_ok=True)
        _remove_abandoned(self.final)
        self.path.mkdir()
        return self

    def close(self) -> None:
        """Remove the temporary sibling unless it was put in place (or kept, :meth:`commit`)."""
        if not self.committed and not self.kept:
            self.discard()

    def __enter__(self) -> StagedOutput:
        return self.open()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def adopt(self, paths: list[str]) -> None:
        """After :meth:`commit`: the files among ``paths`` that lie in the folder (a report the same
        command wrote there) are listed in its marker too, so that the next run may replace them."""
        inside = []
        for path in paths:
            rel = os.path.relpath(os.path.realpath(path), self.final)
            if not rel.startswith(os.pardir) and os.path.isfile(os.path.join(self.final, rel)):
                inside.append(rel)
        if not inside:
            return
        marker = _marker(self.final) or {"command": self.command, "files": []}
        listed = marker.get("files")
        files = sorted({*(str(f) for f in listed), *inside}) if isinstance(listed, list) else sorted(inside)
        write_file_atomically(self.final / MARKER, json.dumps({**marker, "files": files}, indent=1) + "\n")

    def files(self) -> list[str]:
        """Every file written so far, relative to the folder, sorted."""
        out = []
        for root, _dirs, names in os.walk(self.path):
            rel = Path(root).relative_to(self.path)
            out += [str(rel / n) for n in names if str(rel / n) != MARKER]
        return sorted(out)

    def commit(self) -> Path:
        """Write the marker, then put the folder in place: the previous output (checked again:
        a file added meanwhile is not destroyed unless forced) is renamed aside and removed once
        the new one is in place.  Raises :class:`OutputError` (the output stays where it was
        written, and says so) when the folder may no longer be replaced."""
        marker = {"command": self.command, "files": self.files()}
        (self.path / MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
        why = refusal(self.final, self.command, force=self.force)
        if why:
            self.kept = True
            raise OutputError(f"{why} (this run's output is left in {self.path})")
        old: Path | None = None
        if self.final.exists():
            try:
                os.rmdir(self.final)  # empty: nothing to keep aside
            except OSError as e:
                if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                old = _sibling(self.final, "old")
                os.rename(self.final, old)
        try:
            os.rename(self.path, self.final)
        except OSError:
            if old is not None:
                os.rename(old, self.final)
            raise
        self.committed = True
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return self.final


def write_file_atomically(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to a temporary sibling of ``path``, then rename it into place: ``path``
    is either as it was or whole, never a partial file.  A link is followed (the file it names
    is replaced, the link stays), an existing file keeps its permission bits, and what is no
    regular file (a pipe, ``/dev/stdout``) is written to as it is: there is nothing to replace."""
    final = Path(os.path.realpath(path))
    try:
        mode: int | None = os.stat(final).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        final.write_text(text, encoding="utf-8")
        return
    tmp = final.parent / f".{final.name}.partial-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        tmp.write_text(text, encoding="utf-8")
        if mode is not None and stat.S_ISREG(mode):
            os.chmod(tmp, stat.S_IMODE(mode))
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
