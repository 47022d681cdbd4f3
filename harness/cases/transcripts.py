"""Where a wire case's transcript goes (``msmq-harness run --record DIR``).

A wire case records the TCP connections of its [MS-MQQB] 2.1.1 session as its own end saw them
(harness.peers.recording.RecordedConnection); writing them out (a pcap and an HTML page with the
failing step's packet marked) is a report's job, and the cases import nothing of the reports
(the import-linter contracts of pyproject.toml).  So the writer is handed in from above:
harness.report.transcript registers :func:`harness.report.transcript.write_transcript` here when
it is imported, which the run's edges (the CLI, the pytest plugin) do through ``harness.report``
before they run a case; a worker process forked from them inherits it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.peers.recording import RecordedConnection
from harness.results import CaseResult

__all__ = ["TranscriptWriter", "set_transcript_writer", "transcript_writer"]

#: (directory, the case's result, the side under test, its connections, the packet the failing
#: step read or None) -> the path of the page written.
TranscriptWriter = Callable[[Path, CaseResult, str, list[RecordedConnection], bytes | None], Path]

_WRITER: list[TranscriptWriter] = []


def set_transcript_writer(writer: TranscriptWriter) -> None:
    """Make ``writer`` the one ``--record`` uses (the last one set wins)."""
    _WRITER[:] = [writer]


def transcript_writer() -> TranscriptWriter | None:
    """The writer ``--record`` uses; None when no report registered one."""
    return _WRITER[0] if _WRITER else None
