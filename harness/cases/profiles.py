"""Conformance profiles: the cases of one focus section, and what an implementation needs for them.

A **profile** is the set of cases that cite one focus section of the seeds (the spec sections
the project started from, ../shared/seeds): ``msmq-harness run --profile NAME`` runs exactly
those cases.  What a profile needs is computed from the corpus, case by case:

- **capabilities** (harness.cases.target.CAPABILITIES): a target without one of a case's gets
  ``not_applicable`` for it (:func:`case_capabilities` mirrors the runner's
  ``applicability`` and harness.cases.targets.wire.wire_applicability);
- **events**: the [MS-MQDMPR] events a model case raises; one the hello does not list, or that the
  target answers ``Unsupported``, makes the case ``unsupported`` (:func:`case_events`);
- **control operations**: the operations of harness.cases.actions.CONTROL_OPS an initiator wire
  case sends to the sender under test: ``wire_setup`` and ``wire_close`` always, the operation
  of each step whose action is one (``enqueue``, ``pause_queue``, ...), and ``observe_outgoing``
  when a step or ``then`` reads the OutgoingQueue's ADM state and the target has
  ``adm:outgoing``; an ``Unsupported`` answer makes the case ``unsupported``
  (:func:`case_controls`);
- **timers**: the sender's own [MS-MQQB] 3.1.2 timers that bound the waits of an initiator case;
  a sender that declares one absent (``"timers": {"SessionRetryConnect": null}``) gets
  ``unsupported`` (:func:`case_timers`, harness.cases.wiretimers.bound_timers).

:func:`render_profiles` writes docs/profiles.md; :func:`plan` and :func:`render_plan` are what
``msmq-harness run --dry-run --target SPEC`` prints: per section, the cases that would run, be
``unsupported`` or ``not_applicable`` on the target, with the reasons.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.cases.actions import CONTROL_OPS
from harness.cases.execute import applicability, unsupported_by
from harness.cases.loader import load_paths
from harness.cases.model import Case
from harness.cases.target import (
    CAPABILITIES,
    MODEL,
    PEER_BEHAVIOURS,
    WIRE_ACCEPTOR,
    WIRE_INITIATOR,
    WIRE_PING_PORT,
    WIRE_SENDER_PING,
    WIRE_TX_QUEUE,
    TargetInfo,
)
from harness.cases.targets.wire import wire_applicability
from harness.cases.wire import needs_simulated_peer, sends_transactional
from harness.cases.wiretimers import TIMERS, bound_timers
from harness.results import section_key

__all__ = [
    "PROFILES",
    "Plan",
    "Profile",
    "case_capabilities",
    "case_controls",
    "case_events",
    "case_timers",
    "main",
    "plan",
    "profile_cases",
    "profile_needs",
    "render_plan",
    "render_profiles",
]


@dataclass(frozen=True)
class Profile:
    """One focus section of the seeds: ``name`` is what ``run --profile`` takes."""

    name: str
    section: str
    title: str
    seed: str  # the seed file (../shared/seeds) the section comes from, "" when it is referenced by one


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            "seek-available-message-position",
            "MS-MQDMPR 3.1.7.3.2",
            "Seek Available Message Position",
            "000_90f51c587f76af64.txt",
        ),
        Profile("get-message-for-peek", "MS-MQDMPR 3.2.7.2", "Get Message For Peek", "001_39723b1f6fff9bb4.txt"),
        Profile(
            "get-next-message-for-dequeue",
            "MS-MQDMPR 3.2.7.4",
            "Get Next Message For Dequeue",
            "002_7b08aaf9db5cade3.txt",
        ),
        Profile("message-position", "MS-MQDMPR 3.1.1.11", "MessagePosition", "004_04a39d70ae84b28e.txt"),
        Profile("message-position-available", "MS-MQDMPR 3.1.7.2.2", "Message Position Available", ""),
        Profile(
            "message-position-available-event",
            "MS-MQQB 3.1.7.12",
            "Message Position Available Event",
            "003_d06f5fed2fdb2c6c.txt",
        ),
    )
}


def profile_cases(cases: Iterable[Case], name: str) -> list[Case]:
    """The cases of profile ``name``: those citing its section (KeyError: no such profile)."""
    section = PROFILES[name].section
    return [c for c in cases if section in c.sections]


# ================================================================================= what a case needs
def _initiator(case: Case) -> bool:
    return case.wire and case.given["peer"].get("under_test") == "initiator"


def case_capabilities(case: Case) -> list[str]:
    """The capabilities a target needs so that ``case`` applies to it (not ``not_applicable``)."""
    if not case.wire:
        return list(dict.fromkeys([MODEL, *case.requires]))
    peer = case.given["peer"]
    needed = list(case.requires)
    if peer.get("under_test") == "initiator":
        needed.append(WIRE_INITIATOR)
        if peer.get("ping"):
            needed.append(WIRE_SENDER_PING)
        return list(dict.fromkeys(needed))
    needed.append(WIRE_ACCEPTOR)
    if needs_simulated_peer(case.given, case.then):
        needed.append(PEER_BEHAVIOURS)
        return list(dict.fromkeys(needed))
    if any(s.action == "ping" for s in case.when):
        needed.append(WIRE_PING_PORT)
    if sends_transactional(case.when):
        needed.append(WIRE_TX_QUEUE)
    return list(dict.fromkeys(needed))


def case_events(case: Case) -> list[str]:
    """The [MS-MQDMPR] events a model case raises, each once, in order ([] for a wire case)."""
    return [] if case.wire else list(dict.fromkeys(s.event for s in case.when))


def _reads_adm(case: Case) -> bool:
    for step in case.when:
        if step.action == "wait_for" and "connection_history" in step.args:
            return True
        if "State" in (step.expect or {}):  # read again until it settles (wireruns.initiator.check_step)
            return True
    return bool((case.then or {}).get("outgoing"))


def case_controls(case: Case) -> list[str]:
    """The control operations an initiator wire case sends ([] for any other case);
    ``observe_outgoing`` only reaches a target with ``adm:outgoing``."""
    if not _initiator(case):
        return []
    ops = ["wire_setup"]
    ops += [s.action for s in case.when if s.action in CONTROL_OPS]
    if _reads_adm(case):
        ops.append("observe_outgoing")
    ops.append("wire_close")
    return list(dict.fromkeys(ops))


def case_timers(case: Case) -> list[str]:
    """The sender's own [MS-MQQB] 3.1.2 timers (harness.cases.wiretimers.TIMERS, side initiator) that
    bound the waits of an initiator wire case: the sender must not declare them absent."""
    if not _initiator(case):
        return []
    own = [name for name, (_, side) in TIMERS.items() if side == "initiator"]
    return [name for name in bound_timers(case.when) if name in own]


@dataclass(frozen=True)
class Needs:
    """What the cases of a profile need, each item with the number of its cases that need it."""

    cases: int
    model: int
    wire: int
    capabilities: Counter[str]
    events: Counter[str]
    controls: Counter[str]
    timers: Counter[str]


def profile_needs(cases: Sequence[Case]) -> Needs:
    capabilities: Counter[str] = Counter()
    events: Counter[str] = Counter()
    controls: Counter[str] = Counter()
    timers: Counter[str] = Counter()
    for case in cases:
        capabilities.update(case_capabilities(case))
        events.update(case_events(case))
        controls.update(case_controls(case))
        timers.update(case_timers(case))
    wire = sum(c.wire for c in cases)
    return Needs(len(cases), len(cases) - wire, wire, capabilities, events, controls, timers)


def _counted(counter: Counter[str]) -> str:
    return ", ".join(f"`{name}` ({n})" for name, n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def render_profiles(cases: Sequence[Case]) -> str:
    """docs/profiles.md: per profile, its cases and what they need (generated; tests check it)."""
    lines = [
        "# Conformance profiles",
        "",
        "<!-- generated by harness/cases/profiles.py (render_profiles) from cases/: do not edit -->",
        "",
        "A profile is every case that cites one focus section of the seeds (the spec sections the",
        "project started from). `msmq-harness run --profile NAME --target SPEC` runs exactly those",
        "cases; `msmq-harness run --profile NAME --dry-run --target SPEC` shows, without running",
        "any, which of them would be `unsupported` or `not_applicable` on the target and why.",
        "",
        "For each profile: the **capabilities** of the hello its cases need (a target without one",
        "gets `not_applicable` for those cases), the **events** its model cases raise and the",
        "**control operations** its initiator wire cases send (a hello that does not list an event,",
        "or an `Unsupported` answer to an event or control operation, makes the case `unsupported`),",
        "and the sender's own **timers** its waits are bounded by (a sender whose wire_setup reply",
        'declares one absent, `"timers": {"SessionRetryConnect": null}`, gets `unsupported`). An',
        "implementation with all of them has no `unsupported` case in the profile. The number after",
        "each item is how many of the profile's cases need it. `observe_outgoing` is sent only to a",
        "target with `adm:outgoing`; docs/adapters.md describes every event and operation.",
        "",
        "| profile | section | cases | model | wire |",
        "|---|---|---|---|---|",
    ]
    needs = {name: profile_needs(profile_cases(cases, name)) for name in PROFILES}
    for name, p in PROFILES.items():
        n = needs[name]
        lines.append(f"| `{name}` | [{p.section.replace(' ', '] ', 1)} {p.title} | {n.cases} | {n.model} | {n.wire} |")
    for name, p in PROFILES.items():
        n = needs[name]
        seed = f" (seed {p.seed})" if p.seed else " (referenced by the seeds' sections)"
        lines += ["", f"## `{name}`: [{p.section.replace(' ', '] ', 1)} {p.title}", ""]
        lines.append(f"{n.cases} cases cite the section{seed}: {n.model} model, {n.wire} wire.")
        lines.append("")
        lines.append(f"- capabilities: {_counted(n.capabilities) or 'none'}")
        lines.append(f"- events: {_counted(n.events) or 'none'}")
        lines.append(f"- control operations: {_counted(n.controls) or 'none'}")
        lines.append(f"- timers the sender runs: {_counted(n.timers) or 'none'}")
    return "\n".join(lines) + "\n"


# ================================================================================= the dry run
@dataclass(frozen=True)
class Plan:
    """What a run would do with one case on a target: ``outcome`` is ``run``, ``unsupported``
    or ``not_applicable``; ``reason`` is the runner's reason, ``missing`` the events (unsupported)
    or capabilities (not_applicable) the target lacks for the case."""

    case: Case
    outcome: str
    reason: str = ""
    missing: tuple[str, ...] = ()


def plan(cases: Iterable[Case], info: TargetInfo) -> list[Plan]:
    """Each case as the runner would take it on a target whose hello is ``info``, without
    running any: the runner's own applicability checks (capabilities and events)."""
    out = []
    for case in cases:
        lacking = tuple(c for c in case_capabilities(case) if c not in info.capabilities)
        excluded = applicability(case, info)
        if excluded is not None:
            outcome, reason = str(excluded[0]), excluded[1]
            missing = lacking if outcome == "not_applicable" else tuple(unsupported_by(case, info))
            out.append(Plan(case, outcome, reason, missing))
            continue
        why = wire_applicability(case, info) if case.wire else ""
        out.append(Plan(case, "not_applicable", why, lacking) if why else Plan(case, "run"))
    return out


_OUTCOMES = ("run", "unsupported", "not_applicable")


def _cases(n: int) -> str:
    return f"{n} case" if n == 1 else f"{n} cases"


def render_plan(plans: Sequence[Plan], info: TargetInfo) -> str:
    """Per spec section (a case counts under each section it cites): how many cases would run,
    be unsupported or not applicable, and what the target lacks for them: each missing event
    (unsupported) or capability (not_applicable) with the number of the section's cases that
    need it; then what each missing capability means, and the totals."""
    events = "every event (its hello lists none)" if info.events is None else f"{len(info.events)} events"
    lines = [f"target {info.name}: capabilities {', '.join(info.capabilities) or 'none'}; {events}"]
    sections: dict[str, list[Plan]] = {}
    for p in plans:
        for section in dict.fromkeys(p.case.sections):
            sections.setdefault(section, []).append(p)
    described: set[str] = set()
    for section in sorted(sections, key=section_key):
        group = sections[section]
        counts = Counter(p.outcome for p in group)
        lines.append(f"{section}: {_cases(len(group))}: " + ", ".join(f"{counts[o]} {o}" for o in _OUTCOMES))
        for outcome, what in (("unsupported", ("event", "events")), ("not_applicable", ("capability", "capabilities"))):
            missing: Counter[str] = Counter(m for p in group if p.outcome == outcome for m in p.missing)
            items = []
            for name, n in sorted(missing.items(), key=lambda kv: (-kv[1], kv[0])):
                if outcome == "not_applicable":
                    described.add(name)
                items.append(f"{name} ({_cases(n)})")
            if items:
                lines.append(f"    {outcome}: missing {what[len(items) > 1]} " + "; ".join(items))
            unexplained = Counter(p.reason for p in group if p.outcome == outcome and not p.missing)
            for reason, n in sorted(unexplained.items()):
                lines.append(f"    {outcome} ({n}): {reason}")
    for name in sorted(described):
        lines.append(f"capability {name}: {CAPABILITIES.get(name, 'not a capability of the protocol')}")
    total = Counter(p.outcome for p in plans)
    lines.append(f"{_cases(len(plans))} selected: " + ", ".join(f"{total[o]} {o}" for o in _OUTCOMES))
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m harness.cases.profiles [--write]``: print docs/profiles.md (or write it)."""
    root = Path(__file__).resolve().parents[2]
    text = render_profiles(load_paths([root / "cases"]))
    if "--write" in (sys.argv[1:] if argv is None else argv):
        (root / "docs" / "profiles.md").write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
