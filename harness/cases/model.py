"""Conformance cases as data: what a YAML case file holds once loaded and validated.

A case cites the spec sections it checks ([MS-MQDMPR], [MS-MQQB], [MS-MQMQ] section numbers),
sets up a state (``given``), raises spec events (``when``) and checks the final state
(``then``).  The loader (``harness.cases.loader``) builds these from YAML; the runner executes
them against a target; the reports group their results by spec section.  See docs/cases.md.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["ID_VALUE_LIMIT", "Alternative", "Case", "Level", "Requirement", "SpecRef", "Step", "id_value"]


class Level(StrEnum):
    """The level of a requirement (cases/requirements.yaml), strongest first.

    MUST, SHOULD and MAY are the RFC 2119 words as the specs use them; ``interpretation`` is a
    requirement where the spec is silent or contradicts itself: it names the readings a
    conformant implementation may take; an answer another reading gives is non-strict, an answer
    no reading gives fails the MUST that frames the choice (harness.cases.grading).
    """

    MUST = "MUST"
    SHOULD = "SHOULD"
    MAY = "MAY"
    interpretation = "interpretation"

    @property
    def strict(self) -> bool:
        """A difference at this level is a failure (MUST), not a non-strict finding."""
        return self is Level.MUST


@dataclass(frozen=True)
class Alternative:
    """One reading of an ``interpretation`` requirement a conformant implementation may take."""

    name: str
    reading: str


@dataclass(frozen=True)
class Requirement:
    """One spec requirement the corpus checks: the spec's own sentence, its section and level."""

    id: str
    section: str
    quote: str  # the spec's sentence(s), verbatim
    level: Level = Level.MUST
    note: str = ""  # what the cases check, in the harness's words
    alternatives: tuple[Alternative, ...] = ()
    line: int = 0  # line of the entry in its file
    file: str = ""  # the requirements file that holds it
    # an interpretation: the MUST requirement whose sentence frames the choice (an answer no
    # reading gives is a failure of it: harness.cases.grading)
    frame: str = ""


@dataclass(frozen=True)
class SpecRef:
    """One spec paragraph a case checks: ``section`` like "MS-MQDMPR 3.1.7.3.2"."""

    section: str
    requirement: str = ""  # id in cases/requirements.yaml

    @property
    def document(self) -> str:
        return self.section.split(" ", 1)[0]

    @property
    def number(self) -> str:
        return self.section.split(" ", 1)[-1]


@dataclass
class Step:
    """One spec event raised against the target, with what it must return."""

    event: str
    args: dict[str, Any] = field(default_factory=dict)
    expect: dict[str, Any] | None = None  # value name -> literal | {"any_of": [...]} | {"absent": True}
    expect_error: str = ""  # "UndefinedBehaviour": the spec gives no outcome here
    line: int = 0  # line of the step in its file
    action: str = ""  # a wire case's action (then ``event`` holds it too): harness.cases.wire
    requirement: str = ""  # the requirement id this step checks, when the case cites several


@dataclass
class Case:
    """A loaded case (one variant, when the case has a matrix)."""

    id: str
    title: str
    spec: list[SpecRef]
    tags: list[str] = field(default_factory=list)
    given: dict[str, Any] = field(default_factory=dict)
    when: list[Step] = field(default_factory=list)
    then: dict[str, Any] = field(default_factory=dict)
    variant: dict[str, Any] = field(default_factory=dict)  # matrix values of this variant
    requires: list[str] = field(default_factory=list)  # capabilities a target must have
    source: str = ""
    line: int = 0
    # every requirement the case cites (spec refs, steps, expectations, then), by id
    requirements: dict[str, Requirement] = field(default_factory=dict)

    @property
    def level(self) -> Level:
        """The strongest level among the requirements the case cites (MUST when none is known)."""
        levels = [r.level for r in self.requirements.values()]
        return min(levels, key=list(Level).index) if levels else Level.MUST

    @property
    def sections(self) -> list[str]:
        return [ref.section for ref in self.spec]

    @property
    def wire(self) -> bool:
        """A [MS-MQQB] wire case: it names a peer (docs/cases.md, "Wire cases")."""
        return "peer" in self.given

    @property
    def full_id(self) -> str:
        """The id, with the variant's values when the case came from a matrix: ``id[k=v,...]``.

        A value longer than :data:`ID_VALUE_LIMIT` characters is shortened (:func:`id_value`), so
        every report, item name, ``-k`` and known-failures entry names the variant by one short id.
        """
        if not self.variant:
            return self.id
        return self.id + "[" + ",".join(f"{k}={id_value(v)}" for k, v in self.variant.items()) + "]"


ID_VALUE_LIMIT = 40  # the longest matrix value a case id shows whole


def id_value(value: Any) -> str:
    """A matrix value as the case id shows it: ``str(value)``, or when that is longer than
    :data:`ID_VALUE_LIMIT`, its first characters, ``~`` and 8 hex digits of its SHA-256 (stable
    across runs and processes; two long values differ in the id when they differ at all)."""
    text = str(value)
    if len(text) <= ID_VALUE_LIMIT:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return text[: ID_VALUE_LIMIT - 10] + "~" + digest
