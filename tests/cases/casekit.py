"""The helpers the tests of harness.cases share: the pytest plugin's arguments and a ``cases``
folder with every outcome (:func:`write_cases`), and the command lines of README.md and docs/
(:data:`COMMANDS`).  Test modules import them from here, never from one another.
"""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def doc_blocks(path: Path, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", path.read_text(), flags=re.M | re.S)


def _command_lines() -> list[tuple[str, str]]:
    found = []
    for path in DOCS:
        for block in doc_blocks(path, "sh"):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split("  #", 1)[0].strip().rstrip("&").strip()
                if re.match(r"(\.venv/bin/)?msmq-harness ", line):
                    found.append((f"{path.name}: {line}", line))
    return found


COMMANDS = _command_lines()
NUMBERS = {"N": "1", "RATE": "0.1", "S": "1", "BYTES": "1", "MB": "1", "PORT": "1801"}  # a synopsis's placeholders


REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "cases"


def plugin_args() -> list[str]:
    """Load the plugin: by its entry point once the package is installed with it, else by module.

    (Both at once would register the module twice, which pytest refuses.)
    """
    if importlib.metadata.entry_points(group="pytest11", name="msmq_harness"):
        return ["-p", "msmq_harness"]
    return ["-p", "harness.pytest_plugin"]


REQUIREMENTS = """\
# The requirements the cases of this folder cite: the spec's sentences, verbatim.
- id: P-SEEK-HEAD
  section: MS-MQDMPR 3.1.7.3.2
  level: MUST
  quote: >-
    If iIterator is equivalent to the StartMessagePosition ADM element instance defined for
    iQueue.MessagePositionList: Set iIterator to iQueue.MessagePositionList.Head
- id: P-PEEK-WAITING
  section: MS-MQDMPR 3.2.7.2
  level: MUST
  quote: >-
    If rMessagePosition returned from the Seek Available Message Position event is equivalent to
    iQueue.MessagePositionList.End: Set the CursorState ADM attribute of the Cursor ADM element
    instance to WaitPeek. Set rStatus to Waiting. Take no further action.
# The cases check the reading `end` (the first alternative); the reference takes `absent`, so it
# is non_strict under this interpretation (what a target taking another named reading is).
- id: P-PEEK-POSITION
  section: MS-MQDMPR 3.2.7.2
  level: interpretation
  frame: P-PEEK-WAITING
  quote: >-
    rPosition: A reference to the MessagePosition (section 3.1.1.11) ADM element instance that
    contains the returned message. This value is undefined if rStatus is not set to Succeeded.
  alternatives:
    - {name: end, reading: Without Succeeded rPosition may be the End position.}
    - {name: absent, reading: Without Succeeded the event returns no rPosition.}
- id: P-CLOSE
  section: MS-MQDMPR 3.1.7.1.6
  level: MUST
  quote: >-
    Remove the OpenQueueDescriptor ADM element instance referenced by iQueueDesc from
    iQueueDesc.QueueReference.OpenQueueDescriptorCollection.
- id: P-PORT
  section: MS-MQQB 2.1.1
  level: MUST
  quote: >-
    The protocol initiator MUST establish a connection to TCP port 1801 or SPX port 876 on the
    acceptor.
"""

HEAD = """\
spec:
  - {{section: MS-MQDMPR 3.1.7.3.2, requirement: P-SEEK-HEAD}}
given:
  queues:
    - name: q
      messages: [{{id: m1}}, {{id: m2}}]
"""


def case(id: str, expect: str, *, extra: str = "", matrix: str = "") -> str:
    """A seek case on q = [m1, m2] expecting ``rMessagePosition: expect`` (m1 is what the reference returns)."""
    text = f"id: {id}\ntitle: {id} title\n{extra}" + HEAD.format()
    text += (
        "when:\n  - event: seek_available_message_position\n"
        "    args: {iInitialPosition: Start, iQueue: q, iPeekOperation: \"${peek}\"}\n"
        f"    expect: {{rMessagePosition: {expect}}}\n"
    )
    if "${peek}" in text and not matrix:
        text = text.replace('"${peek}"', "false")
    return text + matrix


# The reference reads the undefined rPosition of a Waiting peek as absent: the value another
# named reading gives than the one this case checks (end), graded non_strict by the interpretation.
INTERPRETATION_CASE = """\
id: x.interp
title: a peek on an empty queue, rPosition read as End
spec:
  - {section: MS-MQDMPR 3.2.7.2, requirement: P-PEEK-POSITION}
given:
  queues: [{name: q}]
  open: [{name: h, queue: q}]
  cursors: [{name: c, open: h}]
when:
  - event: get_message_for_peek
    args: {cursor: c}
    expect: {rPosition: {readings: {end: End, absent: {absent: true}}, requirement: P-PEEK-POSITION}}
"""

ERROR_CASE = """\
id: x.error
title: the target errs on this step
spec:
  - {section: MS-MQDMPR 3.1.7.1.6, requirement: P-CLOSE}
when:
  - event: read_result  # a reader no step started: the loader cannot know, the target errs
    args: {iReader: nobody}
"""

NOT_APPLICABLE_CASE = """\
id: x.wire
title: needs the simulated peer
spec:
  - {section: MS-MQQB 2.1.1, requirement: P-PORT}
requires: [peer-behaviour]
when:
  - event: advance_clock
    args: {seconds: 1}
"""


# A SHOULD requirement and a case citing only it (the level markers of test_marker_per_spec_section_selects).
SHOULD_REQUIREMENT = """\
- id: P-ACK-TIMEOUT
  section: MS-MQQB 3.1.6.3
  level: SHOULD
  quote: >-
    When the Session Ack Wait Timer (section 3.1.2.4) expires, the protocol SHOULD apply the following
    logic to close an idle session: [...] Else if the ReceivedAck ADM element is FALSE, the protocol
    MUST close the session as specified in section 3.1.5.9.
"""

SHOULD_CASE = """\
id: x.should
title: graded by a SHOULD alone
spec:
  - {section: MS-MQQB 3.1.6.3, requirement: P-ACK-TIMEOUT}
requires: [peer-behaviour]
when:
  - event: advance_clock
    args: {seconds: 1}
"""


def write_cases(root: Path) -> Path:
    """A ``cases`` folder with every outcome; returns the known-failures file."""
    folder = root / "cases" / "extra"
    folder.mkdir(parents=True)
    (root / "cases" / "requirements.yaml").write_text(REQUIREMENTS, encoding="utf-8")  # not collected
    docs = [
        case("x.pass", "m1", matrix="matrix:\n  peek: [false, true]\n"),
        case("x.fail", "m2"),
        case("x.known", "m2", extra="tags: [known]\n"),
        case("x.fixed", "m1"),
        INTERPRETATION_CASE,
    ]
    (folder / "seek.yaml").write_text("---\n".join(docs), encoding="utf-8")
    (folder / "other.yaml").write_text(ERROR_CASE + "---\n" + NOT_APPLICABLE_CASE, encoding="utf-8")
    known = root / "known_failures.txt"
    known.write_text("# deviations of this target\nx.known\nx.fixed  # fixed since\n", encoding="utf-8")
    return known
