"""What a fuzzing run is given and what it gives: its options, its findings, its report, the
errors that end it (docs/fuzz.md).

The modules that run the rounds (harness.fuzz.engine, harness.fuzz.sender), that confirm and
write a finding (harness.fuzz.minimise, harness.fuzz.sendercase, harness.fuzz.casefiles) and that
report it (harness.fuzz.findings) all read these, and none of them is imported here: a finding
names the session state it was injected in (:data:`harness.fuzz.states.STATES`, the SessionState
ADM element of [MS-MQQB] 3.1.1.3.1) and the kind of the packet injected ([MS-MQQB] 3.1.5.1.1).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.fuzz.generate import packet_kind
from harness.fuzz.oracles import Timers
from harness.fuzz.states import STATES

__all__ = ["Finding", "FuzzOptions", "FuzzReport", "SenderDown", "TargetDown"]


@dataclass
class FuzzOptions:
    address: tuple[str, int]
    target: str
    seed: int
    max_packets: int = 10_000
    duration: float = 60.0
    rate: float = 500.0  # packets per second, at most
    keep_going: bool = False  # do not stop at the first confirmed crash
    restart_wait: float = 60.0  # seconds a crashed target may take to come back
    timers: Timers = dataclasses.field(default_factory=Timers)
    ping: tuple[str, int] | None = None
    queue_id: int = 1
    tx_queue_id: int = 1
    out: Path = Path("fuzz-findings")  # where the cases and pcaps are written
    shown: Path | None = None  # the folder the findings name: where ``out`` is put when complete (None: out)
    states: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    minimise_runs: int = 24


@dataclass
class Finding:
    """A crash, hang or violation, with where it happened and what reproduces it."""

    id: str
    oracle: str  # crash | hang | violation
    why: str
    state: str
    kind: str
    template: str
    field: str
    op: str
    round: int
    seed: int
    packets: list[bytes]  # what the fuzzer sent on the session, the injected packet last
    requirement: str = ""
    level: str = ""
    section: str = ""
    confirmed: bool = False
    minimal: list[bytes] = dataclasses.field(default_factory=list)
    case: str = ""
    pcap: str = ""
    case_outcome: str = ""  # the case run against the target (it fails while the fault is there)
    duplicates: int = 0

    @property
    def injected(self) -> bytes:
        return self.packets[-1]

    @property
    def signature(self) -> tuple[str, str, str, str]:
        """Findings alike are one: the same oracle on the same kind of packet (as it decodes, of the
        same template for a UserMessage), a hang in the same SessionState, a violation of the same rule."""
        if self.oracle == "violation":
            return (self.oracle, "", "", self.requirement)
        kind = packet_kind(self.injected)
        variant = self.template if kind == self.kind == "UserMessage" else kind
        where = self.session_state if self.oracle == "hang" else ""
        return (self.oracle, variant, where, self.requirement if self.oracle == "violation" else "")

    @property
    def session_state(self) -> str:
        return next((s.session_state for s in STATES if s.name == self.state), self.state)


@dataclass
class FuzzReport:
    options: FuzzOptions
    rounds: int = 0
    packets: int = 0
    seconds: float = 0.0
    stopped: str = ""
    findings: list[Finding] = dataclasses.field(default_factory=list)
    coverage: Counter[tuple[str, str, str]] = dataclasses.field(default_factory=Counter)
    skipped: int = 0  # mutations that did not apply to the packet built
    classes: Counter[tuple[str, str, str]] = dataclasses.field(default_factory=Counter)  # (state, kind, class)

    def pairs(self) -> set[tuple[str, str]]:
        return {(s, k) for s, k, _ in self.coverage}


class TargetDown(HarnessError):
    """The target does not serve at all (before any round could blame a packet)."""


class SenderDown(HarnessError):
    """The sender's adapter failed a control operation."""
