"""Loading conformance cases and requirements from YAML (docs/cases.md).

Renders the case file format of docs/cases.md: each YAML document of a file is one case, read
with ``yaml.safe_load`` semantics (plain data, no tags that build objects) but composed first so
that every node keeps its line.  A document is then checked against ``case.schema.json``, its
matrix placeholders are checked and expanded (``harness.cases.matrix``), each variant gets the
semantic checks of ``harness.cases.semantics`` (known [MS-MQDMPR] events, references to what
``given`` defines), and becomes a :class:`~harness.cases.model.Case`.  Every problem is one
:class:`CaseError`, ``"file:line: key: message"``.  ``load_requirements`` reads
cases/requirements.yaml, the list of spec requirements the cases cite.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import stat
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from harness.cases.actions import ACTIONS
from harness.cases.cache import CaseCache
from harness.cases.eventnames import known_events
from harness.cases.grading import (
    READINGS,
    annotation,
    derived_requirement,
    readings_of,
    requirement_annotations,
)
from harness.cases.lines import CaseError, Lines, PathT, format_path
from harness.cases.matrix import check_placeholders, expand
from harness.cases.model import Alternative, Case, Level, Requirement, SpecRef, Step
from harness.cases.schema import validate, validate_def
from harness.cases.semantics import check_case
from harness.cases.variants import VariantCheck
from harness.session.rules import RULES

__all__ = [
    "case_file_sizes",
    "case_files",
    "check_unique",
    "load_file",
    "load_paths",
    "load_requirements",
    "load_text",
    "requirements_for",
]

_MERGE_TAG = "tag:yaml.org,2002:merge"
MAX_DEPTH = 64  # nested collections in one case file
MAX_NODES = 200_000  # nodes of a document once its aliases are expanded
REQUIREMENTS_FILE = "requirements.yaml"  # the requirement list, skipped when a folder is loaded


# ------------------------------------------------------------------------------------ YAML
def _yaml_error(file: str, exc: yaml.YAMLError) -> CaseError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = mark.line + 1 if mark is not None else 1
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    context_mark = getattr(exc, "context_mark", None)
    if context and context_mark is not None and context_mark.line + 1 != line:
        context += f" started at line {context_mark.line + 1}"
    message = f"invalid YAML: {problem}" + (f" ({context})" if context else "") if problem else f"invalid YAML: {exc}"
    return CaseError(file, line, "", message)


def _record(node: yaml.Node, path: PathT, lines: Lines, depth: int = 0) -> None:
    """Record the line of every key and list item under ``node``; reject duplicate keys."""
    if depth > 100:  # recursive anchors
        return
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
                continue
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in seen:
                message = f"duplicate key {key!r} (first at line {seen[key]})"
                raise CaseError(lines.file, line, format_path((*path, key)), message)
            seen[key] = line
            lines.lines[(*path, key)] = line
            _record(value_node, (*path, key), lines, depth + 1)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines.lines[(*path, i)] = item.start_mark.line + 1
            _record(item, (*path, i), lines, depth + 1)


# libyaml's parser where PyYAML has it (same nodes and marks, several times faster)
_COMPOSER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


_OPEN = (
    yaml.BlockMappingStartToken,
    yaml.BlockSequenceStartToken,
    yaml.FlowMappingStartToken,
    yaml.FlowSequenceStartToken,
)
_CLOSE = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)


def _check_depth(text: str, file: str) -> None:
    """No collection nested deeper than :data:`MAX_DEPTH`: checked on the scanner's tokens (an
    iterative pass) before the recursive composer sees the text.

    libyaml's scanner where PyYAML has it; a text it refuses is scanned again by PyYAML's, whose
    message the error quotes (as it always has; a text PyYAML's scanner accepts goes on to the
    composer, which reports libyaml's error)."""
    if _COMPOSER is yaml.SafeLoader:
        _scan_depth(text, file, yaml.SafeLoader)
        return
    try:
        _scan_depth(text, file, _COMPOSER)
    except CaseError as e:
        if not e.message.startswith("invalid YAML"):
            raise
        _scan_depth(text, file, yaml.SafeLoader)


def _scan_depth(text: str, file: str, loader: Any) -> None:
    depth = 0
    try:
        for token in yaml.scan(text, Loader=loader):
            if isinstance(token, _OPEN):
                depth += 1
                if depth > MAX_DEPTH:
                    line = token.start_mark.line + 1
                    raise CaseError(file, line, "", f"collections nested deeper than {MAX_DEPTH} levels")
            elif isinstance(token, _CLOSE):
                depth -= 1
    except yaml.YAMLError as exc:
        raise _yaml_error(file, exc) from None


def _check_size(node: yaml.Node, file: str) -> None:
    """A document whose aliases expand to more than :data:`MAX_NODES` nodes is refused before it
    is built (an alias names a node already composed: the size is counted once per node)."""
    sizes: dict[int, int] = {}

    def size(n: yaml.Node) -> int:
        known = sizes.get(id(n))
        if known is not None:
            return known
        sizes[id(n)] = 1  # a recursive alias counts once
        total = 1
        if isinstance(n, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in n.value)
        elif isinstance(n, yaml.SequenceNode):
            total += sum(size(v) for v in n.value)
        total = min(total, MAX_NODES + 1)
        sizes[id(n)] = total
        return total

    if size(node) > MAX_NODES:
        line = node.start_mark.line + 1
        raise CaseError(file, line, "", f"the document expands to more than {MAX_NODES} nodes (aliases)")


def _documents(text: str, file: str) -> list[tuple[Any, Lines]]:
    """The documents of a YAML stream, each with its lines (empty documents are skipped).  Nesting
    and alias expansion are bounded (:data:`MAX_DEPTH`, :data:`MAX_NODES`)."""
    _check_depth(text, file)
    try:
        nodes = list(yaml.compose_all(text, Loader=_COMPOSER))
    except yaml.YAMLError as exc:
        raise _yaml_error(file, exc) from None
    for node in nodes:
        if node is not None:
            _check_size(node, file)
    out: list[tuple[Any, Lines]] = []
    for node in nodes:
        if node is None:
            continue
        lines = Lines(file, {(): node.start_mark.line + 1})
        _record(node, (), lines)
        try:
            data = yaml.SafeLoader("").construct_document(node)
        except yaml.YAMLError as exc:
            raise _yaml_error(file, exc) from None
        if data is None:
            continue
        out.append((data, lines))
    return out


# ------------------------------------------------------------------------------------ cases
def _build(doc: dict[str, Any], lines: Lines, variant: dict[str, Any], known: Mapping[str, Requirement]) -> Case:
    steps = []
    for i, s in enumerate(doc["when"]):
        steps.append(
            Step(
                event=s["event"] if "event" in s else s["action"],
                args=dict(s.get("args") or {}),
                expect=s.get("expect"),
                expect_error=s.get("expect_error", ""),
                line=lines.line(("when", i)),
                action=s.get("action", ""),
                requirement=s.get("requirement", ""),
            )
        )
    case = Case(
        id=doc["id"],
        title=doc["title"],
        spec=[SpecRef(r["section"], r["requirement"]) for r in doc["spec"]],
        tags=list(doc.get("tags") or []),
        given=doc.get("given") or {},
        when=steps,
        then=doc.get("then") or {},
        variant=variant,
        requires=list(doc.get("requires") or []),
        source=lines.file,
        line=lines.line(()),
        requirements=_cited(doc, lines, known),
    )
    _attribute_all(case, lines, known)
    return case


def _then_values(then: Mapping[str, Any]) -> Iterable[tuple[PathT, Any]]:
    for qname, positions in (then.get("queues") or {}).items():
        for j, entry in enumerate(positions or []):
            for key, value in (entry or {}).items():
                if key != "message":
                    yield ("then", "queues", qname, j, key), value
    for cname, attrs in (then.get("cursors") or {}).items():
        for key, value in (attrs or {}).items():
            yield ("then", "cursors", cname, key), value
    for qname, attrs in (then.get("outgoing") or {}).items():  # a wire case's ADM state
        for key, value in (attrs or {}).items():
            yield ("then", "outgoing", qname, key), value
    for key, value in (then.get("peer") or {}).items():
        if key == "violations":  # each rule is graded by its own requirement (harness.cases.violations)
            continue
        for kind, count in (value.items() if key == "sent" and isinstance(value, Mapping) else [(key, value)]):
            yield ("then", "peer", key, kind) if key == "sent" else ("then", "peer", key), count


def _attribute_all(case: Case, lines: Lines, known: Mapping[str, Requirement]) -> None:
    """Attribute every expectation of ``case`` to its one requirement (harness.cases.grading):
    the requirements it derives (an event's processing requirement) and the frames of the
    interpretations it cites join ``case.requirements``.  An expectation no rule attributes, a
    ``readings`` expectation that does not give every reading of its interpretation, or an
    interpretation's expectation without its readings is a CaseError at its line."""
    expectations: list[tuple[PathT, Any, str]] = []
    for i, step in enumerate(case.when):
        base = derived_requirement(case, step)
        items: list[tuple[PathT, Any]] = [(("when", i, "expect", name), v) for name, v in (step.expect or {}).items()]
        if step.expect_error:
            items.append((("when", i, "expect_error"), step.expect_error))
        if not items and step.action and not base and _checks_by_default(step.action):
            raise lines.error(("when", i), _unattributed(case, step.event))
        for path, value in items:
            rid = annotation(value) or base
            if not rid:
                raise lines.error(path, _unattributed(case, step.event))
            expectations.append((path, value, rid))
    then_base = derived_requirement(case, None)
    base_req = case.requirements.get(then_base) or known.get(then_base)
    if base_req is not None and base_req.level is Level.interpretation and case.then:
        raise lines.error(("then",), f"{then_base} is an interpretation: `then` is graded by a MUST requirement "
                          "(then.requirement), an interpretation's values by their readings")
    for path, value in _then_values(case.then or {}):
        rid = annotation(value) or then_base
        if not rid:
            raise lines.error(("then",), "the case cites several requirements: name the one `then` checks "
                              "(then.requirement, or requirement: on a value)")
        expectations.append((path, value, rid))
    for path, value, rid in expectations:
        req = case.requirements.get(rid) or known.get(rid)
        if req is None:
            raise lines.error(path, f"no requirement {rid!r} is listed for this expectation: cite a requirement "
                              "of the event's section, or name one with requirement:")
        case.requirements[rid] = req
        if req.frame and req.frame in known:
            case.requirements[req.frame] = known[req.frame]
        _check_readings(req, value, path, lines)


def _checks_by_default(action: str) -> bool:
    """A wire action that checks an expectation the case need not write (its wait succeeding)."""
    found = ACTIONS.get(action)
    return found is not None and found.waits


def _unattributed(case: Case, event: str) -> str:
    cited = ", ".join(dict.fromkeys(r.requirement for r in case.spec))
    return (f"the case cites several requirements ({cited}) and none is the one step {event!r} renders: "
            "name it with requirement: on the step or the value")


def _check_readings(req: Requirement, value: Any, path: PathT, lines: Lines) -> None:
    readings = readings_of(value)
    names = [a.name for a in req.alternatives]
    if readings is None:
        if req.level is Level.interpretation:
            wanted = ", ".join(f"{n}: ..." for n in names)
            raise lines.error(path, f"{req.id} is an interpretation: write the value each reading gives, "
                              f"{{readings: {{{wanted}}}, requirement: {req.id}}}")
        return
    if req.level is not Level.interpretation:
        raise lines.error(path, f"readings grade an interpretation; {req.id} is {req.level}")
    if list(readings)[:1] != names[:1] or set(readings) != set(names):
        raise lines.error((*path, READINGS), f"give every reading of {req.id}, the one the corpus checks first: "
                          f"{', '.join(names)} (got {', '.join(map(str, readings))})")
    for name, reading in readings.items():
        if isinstance(reading, Mapping) and (READINGS in reading or "requirement" in reading):
            raise lines.error((*path, READINGS, name), "a reading's value is a plain expectation")


def _cited(doc: dict[str, Any], lines: Lines, known: Mapping[str, Requirement]) -> dict[str, Requirement]:
    """The requirements a case cites, resolved; an unknown id or a section that is not the
    requirement's own is a CaseError at its line."""
    cited: list[tuple[PathT, str]] = []
    for j, ref in enumerate(doc["spec"]):
        cited.append((("spec", j, "requirement"), ref["requirement"]))
    for i, step in enumerate(doc["when"]):
        if "requirement" in step:
            cited.append((("when", i, "requirement"), step["requirement"]))
        cited.extend(requirement_annotations(step.get("expect"), ("when", i, "expect")))
    cited.extend(requirement_annotations(doc.get("then"), ("then",)))
    out: dict[str, Requirement] = {}
    for path, rid in cited:
        req = known.get(rid)
        if req is None:
            close = difflib.get_close_matches(rid, list(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            files = sorted({r.file for r in known.values() if r.file})
            where = ", ".join(files) if files else f"any {REQUIREMENTS_FILE} beside or above the case file"
            raise lines.error(path, f"unknown requirement {rid!r}: not in {where}{hint}")
        out[rid] = req
    for j, ref in enumerate(doc["spec"]):
        req = out[ref["requirement"]]
        if ref["section"] != req.section:
            raise lines.error(
                ("spec", j, "section"), f"{ref['section']!r} is not the section of {req.id} ({req.section})"
            )
    return out


def _cases(doc: Any, lines: Lines, events: Collection[str], known: Mapping[str, Requirement]) -> list[Case]:
    """The variants of one document.  The schema is checked once per document: in full on its
    first variant, and on the other variants only where a placeholder was substituted, once per
    distinct substitution (harness.cases.variants.VariantCheck); the semantic checks run on every
    variant."""
    if not isinstance(doc, dict):
        validate(doc, lines)  # reports "expected a mapping"
    if "matrix" in doc:
        validate_def("matrix", doc["matrix"], ("matrix",), lines)
    check_placeholders(doc, lines)
    variants = expand(doc, lines)
    checker = VariantCheck(doc) if len(variants) > 1 else None
    cases = []
    for n, (values, variant_doc, variant_lines) in enumerate(variants):
        if n == 0 or checker is None:
            validate(variant_doc, variant_lines)
        else:
            checker.check(variant_doc, variant_lines, values)
        check_case(variant_doc, variant_lines, events)
        cases.append(_build(variant_doc, variant_lines, values, known))
    return cases


def load_text(
    text: str,
    file: str = "<string>",
    *,
    events: Collection[str] = (),
    requirements: Mapping[str, Requirement] | None = None,
) -> list[Case]:
    """The cases of a YAML text (``file`` names it in errors); ``events``: extra known events.

    Cited requirement ids resolve against ``requirements``, by default the requirements.yaml
    found beside ``file`` or in a folder above it, else the bundled cases/requirements.yaml.
    """
    known = requirements if requirements is not None else requirements_for(file)
    cases: list[Case] = []
    first: dict[str, Case] = {}
    for doc, lines in _documents(text, file):
        for case in _cases(doc, lines, events, known):
            check_unique(case, first)
            cases.append(case)
    return cases


def check_unique(case: Case, first: dict[str, Case]) -> None:
    """Variants of one document share its id; two documents may not (``first``: the first case
    loaded of each id so far, updated); raises CaseError."""
    earlier = first.setdefault(case.id, case)
    if (earlier.source, earlier.line) != (case.source, case.line):
        raise _duplicate(case, earlier)


def _duplicate(case: Case, earlier: Case) -> CaseError:
    where = f"{earlier.source}:{earlier.line}"
    return CaseError(case.source, case.line, "id", f"duplicate case id {case.id!r} (first defined at {where})")


def load_file(
    path: str | Path,
    *,
    events: Collection[str] = (),
    requirements: Mapping[str, Requirement] | None = None,
    cache: CaseCache | None = None,
) -> list[Case]:
    """The cases of one file, matrix variants expanded, validated; raises CaseError.

    With a ``cache`` (harness.cases.cache), a file whose cases it holds for the same path, the
    same text, the same requirement list and the same events is not loaded again
    (``requirements`` given explicitly bypasses it)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseError(str(path), 1, "", f"cannot read: {exc}") from None

    def load() -> list[Case]:
        return load_text(text, str(path), events=events, requirements=requirements)

    if cache is None or requirements is not None:
        return load()
    try:
        resolved = os.path.realpath(p)
        found = _requirements_file(p, resolved)
        listed = (str(found), _digest(found), _rules_digest()) if found else None
    except OSError:
        return load()
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    parts = (str(path), resolved, digest, listed, sorted(known_events(events)))
    return cache.load(parts, load)


_DIGESTS: dict[tuple[str, int, int], str] = {}
_RULES_DIGESTS: dict[tuple[int, ...], str] = {}


def _rules_digest() -> str:
    """The SHA-256 of the session rules a list's ``- include: session-rules`` stands for (once per
    version of the table): part of a cached case's key, as the list's own text is."""
    key = tuple(map(id, RULES.values()))
    if key not in _RULES_DIGESTS:
        _RULES_DIGESTS.clear()
        _RULES_DIGESTS[key] = hashlib.sha256(repr(list(RULES.values())).encode()).hexdigest()
    return _RULES_DIGESTS[key]


def _digest(path: Path) -> str:
    """The SHA-256 of a file's bytes (once per version of the file in this process)."""
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _DIGESTS:
        _DIGESTS[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return _DIGESTS[key]


def _not_a_file(path: Path) -> str:
    """ "" when ``path`` is a regular file (or a link to one), else what it is: a case file is
    never read from a FIFO (which would block) or a device (``/dev/zero`` never ends), and a
    link that leads nowhere is said, not passed over."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "a link to nothing" if path.is_symlink() else ""  # a missing file: said where it is read
    except OSError as e:
        return f"cannot be examined: {e.strerror or e}"
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return ""
    kinds = (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    kind = next((word for test, word in kinds if test(mode)), "not a regular file")
    target = f" (a link to {path.resolve()})" if path.is_symlink() else ""
    return f"{kind}{target}, not a case file"


def case_files(paths: Iterable[str | Path]) -> list[Path]:
    """Files named, and case files found under folders (not the requirement list).

    In the order given; the files of a folder sorted by path; a file named twice is read once.
    A path named, or a ``*.yaml``/``*.yml`` entry of a folder, that is no regular file (a FIFO,
    a device, a socket, a link to one of them or to nothing) is a CaseError naming it: never
    read, never passed over in silence.
    """
    return list(case_file_sizes(paths))


def case_file_sizes(paths: Iterable[str | Path]) -> dict[Path, int]:
    """:func:`case_files` with the size of each in bytes (one ``stat`` a file, none read)."""
    files: dict[Path, int] = {}
    for path in paths:
        p = Path(path)
        if p.is_dir():
            found = sorted(
                (f for f in p.rglob("*") if f.suffix in (".yaml", ".yml") and f.name != REQUIREMENTS_FILE),
                key=lambda f: f.parts,
            )
            for f in found:
                try:
                    st = f.stat()
                except OSError:
                    st = None
                if st is not None and stat.S_ISREG(st.st_mode):
                    files.setdefault(f, st.st_size)
                    continue
                why = _not_a_file(f)
                if why:
                    raise CaseError(str(f), 1, "", why)
        else:
            why = _not_a_file(p)
            if why:
                raise CaseError(str(p), 1, "", why)
            try:
                files.setdefault(p, p.stat().st_size)
            except OSError:  # a missing file: said where it is read
                files.setdefault(p, 0)
    return files


def load_paths(
    paths: Iterable[str | Path], *, events: Collection[str] = (), cache: CaseCache | None = None
) -> list[Case]:
    """The cases of files and folders (``*.yaml``/``*.yml`` recursively), in the order given.

    Case ids are unique across everything loaded together.  Raises CaseError for the first bad
    file (``requirements.yaml``, the requirement list, is not a case file and is skipped in folders).
    ``cache``: as for :func:`load_file`.
    """
    cases: list[Case] = []
    first: dict[str, Case] = {}
    for f in case_files(paths):
        for case in load_file(f, events=events, cache=cache):
            check_unique(case, first)
            cases.append(case)
    return cases


# ----------------------------------------------------------------------------- requirements
BUNDLED_REQUIREMENTS = Path(__file__).resolve().parents[2] / "cases" / REQUIREMENTS_FILE
_LOADED: dict[tuple[str, int, str], dict[str, Requirement]] = {}


def _requirements_file(file: str | Path, resolved: str | None = None) -> Path | None:
    """The requirements.yaml beside ``file`` or in the nearest folder above it, else the bundled one.
    ``resolved``: the real path of ``file`` (symbolic links followed), when the caller has it.
    Walked with ``os.path`` (one ``stat`` a folder): it is looked up for every file loaded."""
    here = os.path.dirname(resolved if resolved is not None else os.path.realpath(file))
    while True:
        candidate = os.path.join(here, REQUIREMENTS_FILE)
        if os.path.isfile(candidate):
            return Path(candidate)
        above = os.path.dirname(here)
        if above == here:  # the root, looked at
            return BUNDLED_REQUIREMENTS if BUNDLED_REQUIREMENTS.is_file() else None
        here = above


def requirements_for(file: str | Path) -> dict[str, Requirement]:
    """The requirements that the cases of ``file`` cite, by id: the requirements.yaml beside
    it or in the nearest folder above it, else the bundled cases/requirements.yaml (none: {})."""
    found = _requirements_file(file)
    if found is None:
        return {}
    key = (str(found), found.stat().st_mtime_ns, _rules_digest())
    if key not in _LOADED:
        _LOADED[key] = {r.id: r for r in load_requirements(found)}
    return _LOADED[key]


_REQ_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SECTION = re.compile(r"^MS-[A-Z0-9]+ [0-9]+(\.[0-9]+)*$")
_REQ_KEYS = ("id", "section", "level", "quote", "note", "alternatives", "frame")
_LEVELS = ", ".join(str(lv) for lv in Level)


def load_requirements(path: str | Path) -> list[Requirement]:
    """cases/requirements.yaml: a list of {id, section, level, quote, note?, alternatives?}.

    ``quote`` is the spec's own sentence; ``level`` one of MUST, SHOULD, MAY, interpretation
    (default MUST); an ``interpretation`` lists at least two ``alternatives`` ({name, reading}),
    the readings a conformant implementation may take, and no other level has any.  An entry
    ``- include: session-rules`` stands for the requirements the session rules declare
    (harness.session.rules: each rule's id, section, level, sentence, note and readings).
    """
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseError(file, 1, "", f"cannot read: {exc}") from None
    docs = _documents(text, file)
    if not docs:
        return []
    data, lines = docs[0]
    if not isinstance(data, list):
        raise lines.error((), f"wrong type: expected a list of requirements, got {type(data).__name__}")
    out: list[tuple[int, Requirement]] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(data):
        if isinstance(item, dict) and "include" in item:
            out.extend((i, r) for r in _included(item, i, lines, seen))
        else:
            out.append((i, _requirement(item, i, lines, seen)))
    by_id = {r.id: r for _, r in out}
    for i, r in out:
        if r.frame and (by_id.get(r.frame) is None or by_id[r.frame].level is not Level.MUST):
            raise lines.error((i, "frame"), f"{r.frame!r} is not a MUST requirement of this file")
    return [r for _, r in out]


#: What an ``- include: <name>`` entry of a requirements file stands for.
INCLUDES = {"session-rules": "the session rules' requirements (harness.session.rules.RULES), in table order"}


def _included(item: dict[str, Any], i: int, lines: Lines, seen: dict[str, int]) -> list[Requirement]:
    """``- include: session-rules``: the requirement of every session rule, as its entry in
    harness.session.rules declares it (a rule id is a requirement id), at the include's line."""
    if set(item) != {"include"} or item["include"] not in INCLUDES:
        raise lines.error((i, "include"), f"expected one key include, one of: {', '.join(INCLUDES)}")
    out = []
    for rule in RULES.values():
        if rule.id in seen:
            raise lines.error((i, "include"), f"duplicate requirement id {rule.id!r} (first at line {seen[rule.id]})")
        seen[rule.id] = lines.line((i,))
        readings = tuple(Alternative(a.name, a.reading) for a in rule.alternatives)
        out.append(
            Requirement(
                str(rule.id),
                rule.section,
                rule.quote,
                Level(rule.level),
                rule.note,
                alternatives=readings,
                line=lines.line((i,)),
                file=lines.file,
                frame=rule.frame,
            )
        )
    return out


def _requirement(item: Any, i: int, lines: Lines, seen: dict[str, int]) -> Requirement:
    _check_requirement_keys(item, i, lines)
    level, alternatives, frame = _grading_of(item, i, lines)
    if item["id"] in seen:
        raise lines.error((i, "id"), f"duplicate requirement id {item['id']!r} (first at line {seen[item['id']]})")
    seen[item["id"]] = lines.line((i,))
    return Requirement(
        item["id"],
        item["section"],
        item["quote"].strip(),
        level,
        (item.get("note") or "").strip(),
        alternatives,
        lines.line((i,)),
        lines.file,
        frame,
    )


def _check_requirement_keys(item: Any, i: int, lines: Lines) -> None:
    """A requirement is a mapping of the known keys, the required ones non-empty strings, its id
    and section of their patterns."""
    if not isinstance(item, dict):
        raise lines.error((i,), "wrong type: expected a mapping {id, section, level, quote}")
    for key in item:
        if key not in _REQ_KEYS:
            raise lines.error((i, key), f"unknown key {key!r}; expected one of: {', '.join(_REQ_KEYS)}")
    for key in ("id", "section", "quote"):
        if key not in item:
            raise CaseError(lines.file, lines.line((i,)), f"[{i}].{key}", f"missing required key {key!r}")
    for key in ("id", "section", "quote", "note"):
        if key in item and not (isinstance(item[key], str) and item[key].strip()):
            raise lines.error((i, key), f"wrong type: expected a non-empty string, got {item[key]!r}")
    if not _REQ_ID.match(item["id"]):
        raise lines.error((i, "id"), f"{item['id']!r} does not match the pattern {_REQ_ID.pattern!r}")
    if not _SECTION.match(item["section"]):
        raise lines.error((i, "section"), f"{item['section']!r} does not match the pattern {_SECTION.pattern!r}")


def _grading_of(item: dict[str, Any], i: int, lines: Lines) -> tuple[Level, tuple[Alternative, ...], str]:
    """A requirement's level, and for an interpretation (only) its alternatives and its frame."""
    try:
        level = Level(item.get("level", "MUST"))
    except ValueError:
        raise lines.error((i, "level"), f"{item.get('level')!r} is not one of: {_LEVELS}") from None
    alternatives = _alternatives(item.get("alternatives"), i, lines)
    if level is Level.interpretation and len(alternatives) < 2:
        raise lines.error((i, "level"), "an interpretation names at least two alternatives (the readings it allows)")
    if level is not Level.interpretation and alternatives:
        raise lines.error((i, "alternatives"), f"only an interpretation has alternatives; this one is {level}")
    frame = item.get("frame", "")
    if level is Level.interpretation and not (isinstance(frame, str) and frame):
        raise lines.error(
            (i, "level"), "an interpretation names its frame: the MUST requirement whose sentence frames the choice"
        )
    if level is not Level.interpretation and frame:
        raise lines.error((i, "frame"), f"only an interpretation has a frame; this one is {level}")
    return level, alternatives, frame


def _alternatives(value: Any, i: int, lines: Lines) -> tuple[Alternative, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise lines.error((i, "alternatives"), "wrong type: expected a list of {name, reading}")
    out = []
    for j, alt in enumerate(value):
        if not (isinstance(alt, dict) and set(alt) == {"name", "reading"}):
            raise lines.error((i, "alternatives", j), "expected a mapping with exactly the keys name, reading")
        if not all(isinstance(v, str) and v.strip() for v in alt.values()):
            raise lines.error((i, "alternatives", j), "name and reading are non-empty strings")
        out.append(Alternative(alt["name"], alt["reading"].strip()))
    names = [a.name for a in out]
    if len(set(names)) != len(names):
        raise lines.error((i, "alternatives"), f"alternative names repeat: {names}")
    return tuple(out)
