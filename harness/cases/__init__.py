"""Declarative conformance cases: schema, loader, targets and runner (docs/cases.md).

Layer rules (the import-linter contracts of pyproject.toml): Rule 1: cases import the cores,
``harness.peers``, ``harness.capture`` and the results leaf ``harness.results``; never
``harness.report`` (a case's result is built in ``harness.cases.caseresult``), so that there is no
cycle between cases and reports. Rule 2: nothing here imports the pipeline, the CLI or the pytest
plugin. Rule 3: inside the package imports go one way (the ``cases-layers`` contract, no exception),
highest first: the tools (mutants, profiles, adapterdoc, coverage); the run of many cases (runner,
workers, pool); one case (execute); the targets; violations; the loader and its cache; the semantic
checks (semantics) and the matrix variants' schema check (variants); the schema and the events a
case may raise (eventnames); the matrix and the wire checks (wirecheck); the wire runs (wireruns,
whose methods declare the case actions); the wire field lookup and matching; the comparisons;
grading; and the vocabularies, which import nothing of the package (actions, events, lines, model,
target, wire, wiretimers, ...).  A registry that its declarers fill (the case actions, the target
kinds) is below them; what needs it complete imports them (wirecheck, targets.registry).
"""
