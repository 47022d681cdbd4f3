"""Declarative conformance cases: schema, loader, targets and runner (docs/cases.md).

Layer rules (the import-linter contracts of pyproject.toml): Rule 1: cases import the cores,
``harness.peers``, ``harness.capture`` and the results leaf ``harness.results``; never
``harness.report`` (a case's result is built in ``harness.cases.caseresult``), so that there is
no cycle between cases and reports (the contract lists the imports still to be moved). Rule 2:
nothing here imports the pipeline, the CLI or the pytest plugin.
"""
