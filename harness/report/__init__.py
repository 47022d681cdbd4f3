"""Reports of a conformance run: terminal summary, JUnit XML, JSON and self-contained HTML.

Layer rules (the import-linter contracts of pyproject.toml): Rule 1: reports read
``harness.results`` and may import cases and everything below; nothing below imports a report.
Rule 2: never the pipeline, the CLI or the pytest plugin, which sit above.
"""

# the writer of ``--record`` transcripts, handed to the wire cases (harness.cases.transcripts)
from harness.report import transcript as transcript
