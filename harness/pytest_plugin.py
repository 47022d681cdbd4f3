"""A pytest plugin that collects conformance case files and runs them against a target.

Renders the YAML cases of docs/cases.md as pytest items, so that ``pytest cases/ -n auto``
runs the corpus with pytest's selection, parallelism (pytest-xdist) and reports.  Registered
as the ``pytest11`` entry point ``msmq_harness``; ``-p harness.pytest_plugin`` loads it where
the package is not installed.

- Every ``*.yaml``/``*.yml`` file below a folder named ``cases`` (``requirements.yaml``
  excepted) is collected with ``harness.cases.loader.load_file``; a bad file is one collection
  error whose text is the loader's ``file:line: key: message``.
- One item per case variant, named by its full id (``dmpr.seek.fwd[peek=True]``).
- Each item runs with ``harness.cases.execute.run_case`` against one target per session (per
  xdist worker), made by ``harness.cases.targets.make_target(--msmq-target)``.
- Markers: ``spec`` (args: the case's sections) and, for every section and every prefix of it,
  ``spec_<document>_<number>`` with the ``MS-`` prefix dropped and dots as underscores:
  MS-MQDMPR 3.1.7.3.2 gives ``spec_mqdmpr``, ``spec_mqdmpr_3``, ... ``spec_mqdmpr_3_1_7_3_2``, so
  ``-m spec_mqdmpr_3_1_7`` selects what ``--spec "MS-MQDMPR 3.1.7"`` selects; also
  ``msmq_must``/``msmq_should``/``msmq_may``/``msmq_interpretation`` (the strongest level the
  case cites).  They are registered as they are made, so ``--strict-markers`` accepts them.
- A target that cannot be made or does not answer hello stops the session at once (exit 2),
  before any case runs, as ``msmq-harness run`` does.
- Outcomes: passed; failed (a MUST broken: the report gives each difference's section,
  requirement and level, value, expected and observed); non_strict (a SHOULD, MAY or
  interpretation answered differently) passes with a :class:`NonStrictWarning`, and fails under
  ``--msmq-strict``; error (the target crashed, hung or erred: reported as an error at setup);
  ``unsupported`` and ``not_applicable`` are skips with their reason; a case listed in
  ``--msmq-known-failures`` that fails is an xfail, and one that passes fails as
  "XPASS(strict)".

- Under pytest-xdist each worker collects every item (xdist's design) and loads its share of a
  cold case cache first; a worker on this machine sends its case items' per-test events in
  one marshalled batch a test (harness.pytest_batches; the controller hands each event to pytest-xdist as
  if it had come alone), or, where batches are off (``--maxfail``, ``--stepwise``, ``--dist
  worksteal``), its test reports marshalled (one bytes object each, unmarshalled by the
  controller into the form pytest makes the report from); a report carries the case's result
  only for ``--msmq-json``/``--msmq-html``.

Ordinary tests are untouched: the plugin only collects YAML under a ``cases`` folder and only
acts on its own items.
"""

from __future__ import annotations

import contextlib
import fnmatch
import gc
import marshal
import os
import time
import warnings
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from _pytest._code.code import ReprEntryNative, ReprExceptionInfo, ReprFileLocation, ReprTraceback
from _pytest.junitxml import xml_key
from _pytest.mark import deselect_by_keyword

# All at the top, the runner included: pytest_addoption's --msmq-target help (target_help) loads
# every target kind, and with them the loader, the session and the model, at each pytest start-up
# anyway; what these add to it was measured at about 11 ms of CPU (336 -> 347 ms, import + addoption).
from harness.argtypes import seconds
from harness.cases.baseline import BaselineError, load_baseline
from harness.cases.cache import CaseCache
from harness.cases.execute import ConfigurationError, open_target, run_case
from harness.cases.lines import CaseError
from harness.cases.loader import BUNDLED_REQUIREMENTS, load_file, load_requirements
from harness.cases.runner import apply_known_failures, keyword_matcher
from harness.cases.targets.registry import target_help
from harness.errors import HarnessError
from harness.files import NotRegularFile, regular_file
from harness.pytest_batches import BATCHES, Batcher, batchable, install, receive_batches
from harness.report import json_report
from harness.report.compare import read_report
from harness.report.explain import explain, rows
from harness.report.formats import ReportFormat, formats
from harness.report.identity import run_info
from harness.report.junit import classname, xfail_message
from harness.report.terminal import case_headline, failure_line, format_value
from harness.results import CaseResult, Outcome, RunResult, StepFailure

__all__ = ["CaseFile", "CaseItem", "NonStrictWarning", "spec_markers"]

_STATE = pytest.StashKey["_Session"]()
_FROZEN = pytest.StashKey[bool]()  # gc.freeze() before and after collection (pytest_collection, _finish)
_LEVEL_MARKERS = {
    "MUST": "msmq_must",
    "SHOULD": "msmq_should",
    "MAY": "msmq_may",
    "interpretation": "msmq_interpretation",
}


class NonStrictWarning(pytest.PytestWarning):
    """A case whose SHOULD, MAY or interpretation expectation the target answered differently."""


_CASE_SUFFIXES = (".yaml", ".yml")
DEFAULT_CASE_FOLDER = "cases"  # ini msmq_case_folders, when it names none


def target_of(config: pytest.Config) -> str:
    """The target of the session: ``--msmq-target``, else the ini ``msmq_target``, else reference."""
    return str(config.getoption("msmq_target") or config.getini("msmq_target") or "reference")


_REQUIREMENTS = "requirements.yaml"


# ================================================================================ options
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("msmq-harness", "MSMQ conformance cases (YAML under a 'cases' folder)")
    group.addoption(
        "--msmq-target",
        default=None,
        metavar="TARGET",
        help=f"target the cases run against (default: ini msmq_target, else reference): {target_help()}",
    )
    parser.addini("msmq_target", "the target MSMQ conformance cases run against (as --msmq-target)", default="")
    parser.addini(
        "msmq_case_folders",
        "folder names under which YAML files are MSMQ conformance cases (default: cases); a YAML file named "
        "on the command line is collected wherever it is",
        type="linelist",
        default=[],
    )
    group.addoption(
        "--msmq-record",
        default=None,
        metavar="DIR",
        help="write each wire case's traffic to DIR: <case id>.pcap and a transcript page (as run --record)",
    )
    for report_format in _plugin_formats():  # --msmq-json, --msmq-html: the report formats' table
        group.addoption(f"--msmq-{report_format.name}", default=None, metavar="FILE", help=report_format.plugin_help)
    group.addoption(
        "--msmq-strict",
        action="store_true",
        default=False,
        help="non_strict outcomes (SHOULD, MAY, interpretations answered differently) fail",
    )
    group.addoption(
        "--msmq-known-failures",
        default=None,
        metavar="FILE",
        help="case ids the target is known to fail (one per line): xfail, and a failure when one passes",
    )
    group.addoption(
        "--msmq-step-timeout", type=seconds(), default=10.0, metavar="SECONDS", help="timeout of one step (default 10)"
    )
    group.addoption(
        "--msmq-no-case-cache",
        action="store_true",
        default=False,
        help="load every case file, ignoring the cache of loaded cases (harness.cases.cache; "
        "MSMQ_HARNESS_CASE_CACHE=off does the same)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spec(*sections): an MSMQ conformance case checking these spec sections")
    for marker, level in ((m, lv) for lv, m in _LEVEL_MARKERS.items()):
        config.addinivalue_line("markers", f"{marker}: an MSMQ conformance case of requirement level {level}")
    state = _Session(config)
    for marker, section in _section_markers().items():  # listed by ``pytest --markers``
        state.register(marker, f"MSMQ conformance cases checking {section} or a section below it")
    config.stash[_STATE] = state
    state.batcher = install(config)  # a pytest-xdist worker asked for batches of its cases' events
    _CONFIG[:] = [config]
    _refuse_shared_report_paths(config)


def _refuse_shared_report_paths(config: pytest.Config) -> None:
    """A usage error when two reports (``--msmq-NAME``, ``--junitxml``), or a report and
    ``--msmq-known-failures``, name one file: one would overwrite the other."""
    named = [config.getoption(f"msmq_{f.name}") for f in _plugin_formats()] + [getattr(config.option, "xmlpath", None)]
    known = config.getoption("msmq_known_failures")
    seen = {Path(known).resolve()} if known else set()
    for path in filter(None, named):
        where = Path(path).resolve()
        if where in seen:
            raise pytest.UsageError(f"{path}: another report or --msmq-known-failures is that file")
        seen.add(where)


def _section_markers() -> dict[str, str]:
    """marker -> section, for every section of the bundled requirements and every prefix of it."""
    try:
        requirements = load_requirements(BUNDLED_REQUIREMENTS)
    except (CaseError, OSError):
        return {}
    found: dict[str, str] = {}
    for section in sorted({r.section for r in requirements}):
        document, _, number = section.partition(" ")
        parts = number.split(".")
        for i, marker in enumerate(spec_markers(section)):
            found.setdefault(marker, " ".join([document, ".".join(parts[:i])]).strip())
    return found


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is not None:
        state.close()


# ================================================================================ markers
def spec_markers(section: str) -> list[str]:
    """``MS-MQDMPR 3.1.7`` -> ``["spec_mqdmpr", "spec_mqdmpr_3", "spec_mqdmpr_3_1", "spec_mqdmpr_3_1_7"]``."""
    document, _, number = section.partition(" ")
    doc = document.lower().removeprefix("ms-")
    doc = "".join(c if c.isalnum() else "_" for c in doc)
    names = [f"spec_{doc}"]
    parts = [p for p in number.replace(" ", ".").split(".") if p]
    for i in range(1, len(parts) + 1):
        names.append(f"spec_{doc}_" + "_".join("".join(c if c.isalnum() else "_" for c in p) for p in parts[:i]))
    return names


# ================================================================================ session state
class _Session:
    """The target of this session (or xdist worker), made when the first case needs it."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.target: Any = None
        self.info: Any = None
        self.opened = False
        self.problem = ""  # why the target could not be opened
        self.registered: set[str] = set()
        self._known: Any = None
        self._cache: Any = False  # not looked up yet
        self.prefetched = False
        self.case_files: list[Path] | None = None  # found by pytest_collection, read by prefetch
        self.report_needs = _needs(config)
        self.packing: set[str] = set()  # pytest-xdist workers that send their reports marshalled
        self.batcher: Batcher | None = None  # (pytest-xdist worker) holds its case items' events
        self._marks: dict[tuple[tuple[str, ...], str], tuple[pytest.MarkDecorator, ...]] = {}

    def open(self) -> None:
        if self.opened:
            return
        self.opened = True

        spec = target_of(self.config)
        timeout = self.config.getoption("msmq_step_timeout")
        try:
            self.target, self.info = open_target(spec, timeout)
        except ConfigurationError as e:  # stops the session once collection is over
            self.problem = str(e)

    @property
    def events(self) -> list[str]:
        return list(getattr(self.info, "events", None) or [])

    @property
    def known_failures(self) -> Any:
        """The ``--msmq-known-failures`` file (harness.cases.baseline: ids, or the YAML with reasons)."""
        if self._known is None:
            path = self.config.getoption("msmq_known_failures")
            if path:
                try:
                    self._known = load_baseline(path, strict_xpass=True, read_report=read_report)
                except (BaselineError, OSError) as e:
                    raise pytest.UsageError(f"--msmq-known-failures {path}: {e}") from None
            else:
                self._known = set()
        return self._known

    @property
    def cache(self) -> Any:
        """The cache of loaded case files (harness.cases.cache), shared by the xdist workers;
        None when disabled."""
        if self._cache is False:
            off = self.config.getoption("msmq_no_case_cache")
            self._cache = None if off else CaseCache.default()
        return self._cache

    def prefetch(self) -> None:
        """Under pytest-xdist, load this worker's share of the case files into the cache before
        collecting: worker k of n takes every n-th file from the k-th, so that the workers split
        the loading instead of each doing all of it (a file another worker is loading is waited
        for, then read back).  Errors are left for collection to report."""
        if self.prefetched:
            return
        self.prefetched = True
        count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "")
        if count < 2 or not worker.startswith("gw") or not worker[2:].isdigit() or self.cache is None:
            return
        filling = self.cache.filling()  # a file already stored is not read back here, only at collection
        files = _case_files(self.config) if self.case_files is None else self.case_files
        for path in files[int(worker[2:]) % count :: count]:
            with contextlib.suppress(CaseError):
                load_file(path, events=self.events, cache=filling)

    def marks(self, sections: tuple[str, ...], level: str) -> tuple[pytest.MarkDecorator, ...]:
        """The markers of a case citing ``sections`` at ``level`` (spec, spec_<section>... and the
        level's), registered as they are first made; made once per combination, not per item."""
        key = (sections, level)
        found = self._marks.get(key)
        if found is None:
            names: list[str] = []
            for section in sections:
                for marker in spec_markers(section):
                    self.register(marker, f"MSMQ conformance cases of {section.partition(' ')[0]} section(s) {marker}")
                    names.append(marker)
            names.append(_LEVEL_MARKERS.get(level, "msmq_must"))
            found = (pytest.mark.spec(*sections), *(getattr(pytest.mark, name) for name in names))
            self._marks[key] = found
        return found

    def register(self, marker: str, help_text: str) -> None:
        if marker not in self.registered:
            self.registered.add(marker)
            self.config.addinivalue_line("markers", f"{marker}: {help_text}")

    def close(self) -> None:
        if self.target is not None:
            with contextlib.suppress(Exception):
                self.target.close()
            self.target = None


class _ReportNeeds(NamedTuple):
    """What the controller's reports read from a case's test reports: its ``--junitxml``
    classname, and its result for ``--msmq-json`` / ``--msmq-html``.  A report carries only
    these (pytest-xdist serialises every report a worker sends, and the controller reads it)."""

    classname: bool
    result: bool


def _needs(config: pytest.Config) -> _ReportNeeds:
    """The options are the controller's on a pytest-xdist worker too."""
    return _ReportNeeds(
        classname=bool(getattr(config.option, "xmlpath", None)),
        result=any(config.getoption(f"msmq_{f.name}") for f in _plugin_formats()),
    )


def _state(config: pytest.Config) -> _Session:
    return config.stash[_STATE]


# ================================================================================ collection
def _case_folders(config: pytest.Config) -> list[str]:
    """The folder names under which YAML files are case files (ini ``msmq_case_folders``)."""
    return [str(name) for name in config.getini("msmq_case_folders")] or [DEFAULT_CASE_FOLDER]


def _under_cases_folder(path: Path, rootpath: Path, folders: Sequence[str] = ("cases",)) -> bool:
    try:
        parts = path.parent.relative_to(rootpath).parts
    except ValueError:
        parts = path.parent.parts
    return any(folder in parts for folder in folders)


def _named(config: pytest.Config) -> set[Path]:
    """The files the command line names (``pytest conformance/seek/fwd.yaml``)."""
    out = set()
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::", 1)[0])
        if path.suffix in _CASE_SUFFIXES:
            out.add(path.resolve())
    return out


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> CaseFile | None:
    if not _is_case_file(file_path, parent.config):
        return None
    file: CaseFile = CaseFile.from_parent(parent, path=file_path)
    return file


def _is_case_file(path: Path, config: pytest.Config) -> bool:
    """A YAML file (not requirements.yaml) below a case folder (ini ``msmq_case_folders``,
    default ``cases``) or named on the command line."""
    if path.suffix not in _CASE_SUFFIXES or path.name == _REQUIREMENTS:
        return False
    return _under_cases_folder(path, config.rootpath, _case_folders(config)) or path.resolve() in _named(config)


def _case_files(config: pytest.Config) -> list[Path]:
    """The case files below the session's arguments (pytest's ``norecursedirs`` skipped), sorted:
    what collection will most likely ask for."""
    skip = config.getini("norecursedirs")
    found: set[Path] = set()
    for arg in config.args:
        top = Path(config.invocation_params.dir, arg.split("::", 1)[0])
        if not top.is_dir():
            if _is_case_file(top, config) and (top.exists() or top.is_symlink()):
                found.add(_regular_case_file(top))
            continue
        for folder, subfolders, names in os.walk(top):
            subfolders[:] = [d for d in subfolders if not any(fnmatch.fnmatch(d, pattern) for pattern in skip)]
            for name in names:
                path = Path(folder, name)
                if _is_case_file(path, config):
                    found.add(_regular_case_file(path))
    return sorted(found)


def _regular_case_file(path: Path) -> Path:
    """``path``, a regular file; a case file that is a FIFO, a device, a socket or a link to
    nothing (which pytest's collection passes over) is a usage error naming it (harness.files)."""
    try:
        return regular_file(path)
    except NotRegularFile as e:
        raise pytest.UsageError(f"{path}: {e.strerror}") from None
    except FileNotFoundError:
        raise pytest.UsageError(f"{path}: a link to nothing, not a case file") from None


def pytest_collection(session: pytest.Session) -> None:
    """Check the case files below the arguments before collecting them; where there are some, the
    objects of the start-up are frozen out of the garbage collector's scans first (as the items
    are at the end of collection, :func:`pytest_collection_finish`), so that the full collections
    that making thousands of items sets off do not pass over them again and again."""
    state = session.config.stash.get(_STATE, None)
    found = _case_files(session.config)  # no case file passed over in silence
    if state is not None:
        state.case_files = found  # what prefetch shares out (a pytest-xdist worker): not walked again
    if found:  # what the start-up made (modules, plugins, options): out of the scans while collecting
        gc.freeze()
        session.config.stash[_FROZEN] = True


class CaseFile(pytest.File):
    """A YAML case file: one item per case variant."""

    def collect(self) -> Iterator[CaseItem]:
        state = _state(self.config)
        state.open()  # the target's extra events are events the loader accepts
        state.prefetch()
        try:
            cases = load_file(self.path, events=state.events, cache=state.cache)
        except CaseError as e:
            raise self.CollectError(str(e)) from None
        for case in cases:
            yield CaseItem.from_parent(self, name=case.full_id, case=case)


class CaseFailed(HarnessError):
    """A case did not pass: carries its result for repr_failure."""

    def __init__(self, result: CaseResult, headline: str) -> None:
        super().__init__(headline)
        self.result = result


class CaseItem(pytest.Item):
    """One case variant run against the session's target."""

    def __init__(self, *, case: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        sections = tuple(case.sections)
        level = str(case.level)
        marks = _state(self.config).marks(sections, level)
        # what add_marker does for each, at once: the marks are made once per combination
        self.keywords.update({mark.name: mark.mark for mark in marks})
        self.own_markers.extend(mark.mark for mark in marks)
        self.user_properties.extend(("spec", s) for s in dict.fromkeys(sections))
        cited = list(case.requirements) or [r.requirement for r in case.spec if r.requirement]
        self.user_properties.extend(("requirement", r) for r in dict.fromkeys(cited))
        self.user_properties.append(("level", level))
        self.result: CaseResult | None = None

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, max(int(self.case.line) - 1, 0), f"{self.case.full_id} [{', '.join(self.case.sections)}]"

    def setup(self) -> None:
        state = _state(self.config)
        state.open()
        timeout = self.config.getoption("msmq_step_timeout")
        start = time.perf_counter()
        record = self.config.getoption("msmq_record")
        result = run_case(self.case, state.target, step_timeout=timeout, info=state.info, record_dir=record)
        result.duration = result.duration or time.perf_counter() - start
        result = apply_known_failures(result, self.case, state.known_failures, self.config.getoption("msmq_strict"))
        self.result = result
        self.user_properties.append(("outcome", str(result.outcome)))
        if result.outcome is Outcome.error:
            raise CaseFailed(result, case_headline(result))

    def runtest(self) -> None:
        result = self.result
        assert result is not None
        if result.outcome is Outcome.passed:
            return
        if result.outcome in (Outcome.not_applicable, Outcome.unsupported):
            what = str(result.outcome).replace("_", " ")
            pytest.skip(f"{what}: {result.detail}" if result.detail else what)
        if result.outcome is Outcome.non_strict and not self.config.getoption("msmq_strict"):
            warnings.warn(NonStrictWarning(render_failure(result, case_headline(result))), stacklevel=1)
            return
        if result.outcome is Outcome.xfail:  # why it is known (the entry's reason), and how it fails
            pytest.xfail(xfail_message(result))
        if result.outcome is Outcome.xpass:
            raise CaseFailed(result, "[XPASS(strict)] known failure passed unexpectedly")
        raise CaseFailed(result, case_headline(result))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | Any:
        if not isinstance(excinfo.value, CaseFailed):
            return super().repr_failure(excinfo, style=style)
        return failure_repr(self, excinfo.value)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A target error is raised at setup, where pytest does not ask repr_failure: render it here;
    a skip (not applicable) is reported at the case's line, not the plugin's."""
    report = yield
    if isinstance(item, CaseItem) and item.result is not None:
        wanted = _state(item.config).report_needs
        if call.when == "setup" and wanted.classname:  # read once by pytest_runtest_logreport
            report.msmq_classname = classname(item.result)  # type: ignore[attr-defined]
        if (call.when == "call" or call.excinfo is not None) and wanted.result:
            # the case's result travels with its report (pytest-xdist too): --msmq-json, --msmq-html
            report.msmq_result = item.result.to_dict()  # type: ignore[attr-defined]
    if isinstance(item, CaseItem) and call.excinfo is not None:
        if isinstance(call.excinfo.value, CaseFailed):
            report.longrepr = failure_repr(item, call.excinfo.value)
        elif report.skipped and isinstance(report.longrepr, tuple) and not hasattr(report, "wasxfail"):
            report.longrepr = (str(item.path), max(int(item.case.line), 1), report.longrepr[2])
    return report


def failure_repr(item: CaseItem, failed: CaseFailed) -> Any:
    """What pytest reports for a case that did not pass: its one-line headline as the crash
    message (JUnit's ``message``, the short summary) and :func:`render_failure` as the text."""
    text = render_failure(failed.result, str(failed))
    headline = " ".join(str(failed).split())
    entry = ReprEntryNative([line + "\n" for line in text.splitlines()])
    where = ReprFileLocation(str(item.path), max(int(item.case.line), 1), headline)
    return ReprExceptionInfo(reprtraceback=ReprTraceback([entry], None, "native"), reprcrash=where)


def render_failure(result: CaseResult, headline: str) -> str:
    """The text pytest shows for a case that did not pass: section, value, expected, observed."""
    lines = [f"{result.case_id}: {str(result.outcome).upper()}: {headline}"]
    if result.title:
        lines.append(f"  {result.title}")
    if result.source:
        lines.append(f"  case file: {result.source}:{result.line}")
    lines.append(f"  spec: {', '.join(result.sections) or '-'}   level: {result.level}")
    for f in result.failures:
        lines.append(f"  {'FAILED' if f.level == 'MUST' else 'NON-STRICT'} {failure_line(f)}")
        lines.append(f"      section:  {f.section or '-'}")
        lines.append(f"      requirement: {f.requirement or '-'} ({f.level})")
        lines.append(f"      value:    {f.field}")
        lines.append(f"      expected: {format_value(f.expected, f.field)}")
        lines.append(f"      observed: {format_value(f.observed, f.field)}")
        lines.extend(_explained(result, f))
        if f.evidence:
            lines.append("      evidence:")
            lines.extend(f"        {line}" for line in f.evidence.splitlines())
    detail = result.detail.strip()
    if detail and not result.failures:
        lines.append(f"  {str(result.outcome).upper()}: " + detail.replace("\n", "\n    "))
        if result.stopped is not None:
            lines.extend(_explained(result, result.stopped))
    return "\n".join(line for line in lines if line)


def _explained(result: CaseResult, failure: StepFailure) -> list[str]:
    """The rows of harness.report.explain the lines above lack, as every report shows them:
    the spec's sentence, the step's file:line and event, its inputs, an interpretation's readings,
    what the target said."""
    shown = ("spec says", "at", "inputs", "readings") + (("target said",) if failure is not result.stopped else ())
    explained = explain(result)
    index = result.failures.index(failure) if failure in result.failures else 0
    if index >= len(explained):
        return []
    indent = "\n" + " " * 19
    return [
        f"      {label + ':':<12} {indent.join(text.splitlines())}"
        for label, text in rows(explained[index])
        if label in shown
    ]


# ================================================================================ the session
@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> Generator[None, None, None]:
    """``-k`` selects cases as ``msmq-harness run -k`` does (harness.cases.runner.keyword_matcher:
    words matched in the case's full id, title and tags; docs/cases.md), ordinary tests as pytest
    does; a target that cannot be made or greeted stops the session (status 2) before any test
    runs, even with ``--continue-on-collection-errors``."""
    keyword = config.option.keyword
    if keyword and any(isinstance(i, CaseItem) for i in items):
        try:
            wanted = keyword_matcher(keyword)
        except ValueError as e:
            raise pytest.UsageError(str(e)) from None
        config.option.keyword = ""  # pytest's own -k: applied below, to the ordinary tests only
        try:
            yield
        finally:
            config.option.keyword = keyword
        others = [i for i in items if not isinstance(i, CaseItem)]
        deselect_by_keyword(others, config)
        kept = {id(i) for i in others}
        dropped = []
        for i in items:
            if isinstance(i, CaseItem):
                if wanted([i.case.full_id, i.case.title, *i.case.tags]):
                    kept.add(id(i))
                else:
                    dropped.append(i)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = [i for i in items if id(i) in kept]
    else:
        yield
    state = config.stash.get(_STATE, None)
    if state is not None and state.problem:
        pytest.exit(f"msmq-harness: {state.problem}", returncode=2)


# ================================================================================ reports
@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Keep each case's result (from its worker too) for ``--msmq-json`` / ``--msmq-html``; in
    ``--junitxml`` a case's classname is ``DOCUMENT.file`` as ``run --junit`` writes it
    (harness.report.junit.classname), before pytest's junitxml records the case."""
    found = getattr(report, "msmq_result", None)
    if found is not None:
        _COLLECTED.setdefault(report.nodeid, found)
    name = getattr(report, "msmq_classname", None)
    if name and report.when == "setup" and _CONFIG:
        xml = _CONFIG[0].stash.get(xml_key, None)
        if xml is not None:
            xml.node_reporter(report).add_attribute("classname", name)


_COLLECTED: dict[str, dict[str, Any]] = {}
_CONFIG: list[pytest.Config] = []  # the session's config (pytest_configure), for pytest_runtest_logreport


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """The items collected (every case of every file, in each pytest-xdist worker too) live
    until the session ends: frozen out of the garbage collector's scans while the cases run
    (``gc.freeze``), as ``msmq-harness run``'s workers do, and back in them at the end -- but on
    a pytest-xdist worker, whose process ends with its session and has sent its last report by
    then: its last collections (pytest's and the interpreter's) then pass over them, about
    0.5 CPU-second a worker on 5,070 cases."""
    if any(isinstance(item, CaseItem) for item in session.items):
        gc.freeze()
        session.config.stash[_FROZEN] = True


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """``--msmq-json FILE`` and ``--msmq-html FILE``: the cases' results as ``run`` writes them
    (not on a pytest-xdist worker: the controller has every result).  A pytest-xdist controller,
    which runs no test, freezes what the run left (its reports) out of the garbage collector's
    scans first: pytest's last collection (at unconfigure) then passes over what came after."""
    config = session.config
    if not hasattr(config, "workerinput") and config.pluginmanager.has_plugin("dsession"):
        gc.freeze()  # (pytest-xdist controller) what the run left, reports kept: out of the last collections' scans
    state = config.stash.get(_STATE, None)
    if state is not None and state.batcher is not None:  # how many batches went (read by the tests)
        config.workeroutput[BATCHES] = state.batcher.batches  # type: ignore[attr-defined]
    if config.stash.get(_FROZEN, False) and not hasattr(config, "workerinput"):
        gc.unfreeze()  # the objects frozen at the end of collection: collected again (pytest's last collection)
        config.stash[_FROZEN] = False
    paths = [(config.getoption(f"msmq_{f.name}"), f) for f in _plugin_formats()]
    if not any(path for path, _ in paths) or hasattr(config, "workerinput"):
        return
    results = [json_report.case_result(record) for record in _COLLECTED.values()]
    _COLLECTED.clear()
    strict = bool(config.getoption("msmq_strict"))
    info = run_info(
        argv=["pytest", *config.invocation_params.args],
        paths=[str(a) for a in config.args],
        keyword=config.option.keyword or None,
        strict=strict,
        known_failures=config.getoption("msmq_known_failures"),
        record=config.getoption("msmq_record"),
    )
    run = RunResult(target_of(config), results, sum(r.duration for r in results), strict, info=info)
    if state is not None and state.info is not None:
        run.info.update(target_name=state.info.name, target_version=state.info.version)
    for path, report_format in paths:
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            report_format.write(run, path)


# ================================================================================ pytest-xdist
# A worker sends each report to the controller through execnet, whose serialiser is pure Python
# and pays per object: a case's three reports (their keywords, user properties, location...)
# cost a worker more than running the case.  A worker started on this machine with this
# interpreter (a ``popen`` gateway, told so by the controller in its workerinput) sends pytest's
# own serialisable form of a case's test report marshalled into one bytes object instead (the
# reports of ordinary tests go as pytest-xdist sends them); the controller unmarshals it and
# hands it to pytest's pytest_report_from_serializable, so the report it builds is the same.
_PACKED = "msmq_packed"  # the key of a report sent marshalled, and the workerinput flag


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """(pytest-xdist, controller) Let a local worker on this interpreter (``popen`` without
    ``python=``: marshal's format is the interpreter's) send its case items' events in marshalled
    batches (harness.pytest_batches), or, where batches are off, its test reports marshalled."""
    spec = node.gateway.spec
    if batchable(node.config, spec):
        receive_batches(node)
    elif getattr(spec, "popen", False) and not getattr(spec, "python", None):
        node.workerinput[_PACKED] = True
        _state(node.config).packing.add(str(node.gateway.id))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """(pytest-xdist worker sending batches) The events of a case item are held for the next
    batch, those of an ordinary test go as pytest-xdist sends them."""
    batcher = _state(item.config).batcher
    if batcher is not None:
        batcher.holding = isinstance(item, CaseItem)


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable(config: pytest.Config, report: Any) -> Generator[None, Any, Any]:
    """(worker) A test report's serialisable form as one marshalled bytes object."""
    data = yield
    if not getattr(config, "workerinput", {}).get(_PACKED) or not isinstance(data, dict):
        return data
    if data.get("$report_type") != "TestReport" or not _of_a_case(data):
        return data  # another plugin's or an ordinary test's report: as pytest-xdist sends it
    try:
        packed = marshal.dumps(data)
    except ValueError:  # a value marshal cannot write (a user property of an odd type): as it is
        return data
    return {"$report_type": "TestReport", _PACKED: packed}


def _of_a_case(data: dict[str, Any]) -> bool:
    """A report of one of the plugin's own items (its location is a case file)."""
    location: Any = data.get("location") or ("",)
    return str(location[0]).endswith(_CASE_SUFFIXES)


@pytest.hookimpl(tryfirst=True)
def pytest_report_from_serializable(config: pytest.Config, data: dict[str, Any]) -> Any:
    """(controller) The report of a marshalled form from a local worker, made by pytest from the
    form the worker's pytest gave (with what pytest-xdist added to it: worker id, item index)."""
    packed = data.get(_PACKED)
    state = config.stash.get(_STATE, None)
    if packed is None or state is None or str(data.get("worker_id")) not in state.packing:
        return None
    full = marshal.loads(packed)
    full.update((key, value) for key, value in data.items() if key not in (_PACKED, "$report_type"))
    return config.hook.pytest_report_from_serializable(config=config, data=full)


def _plugin_formats() -> list[ReportFormat]:
    """The report formats the plugin offers as ``--msmq-NAME FILE`` (harness.report.formats)."""
    return [f for f in formats().values() if f.plugin_help]
