"""msmq-harness: conformance testing for Microsoft Message Queuing.

The edges of the harness (CLI, captures, peers, cases, reports, Spark pipeline) around three
pure cores: the wire codec (``packets``, [MS-MQMQ] 2.2, [MS-MQQB] 2.2), the reference queue
manager (``harness.model``, [MS-MQDMPR]) and the session state machines (``harness.session``,
[MS-MQQB] 3.1).

Layers, lowest first (DESIGN.md "Layout"; the import-linter contracts of pyproject.toml, run by
``make lint`` and tests/test_layers.py): ``packets`` < ``harness.model`` < ``harness.session`` <
(``harness.peers``, ``harness.capture``) < ``harness.cases`` < ``harness.report`` <
(``harness.pipeline``, ``harness.cli``, ``harness.pytest_plugin``).

- Rule 1: a layer imports only the layers below it; ``harness.peers`` and ``harness.capture``
  never import each other.
- Rule 2: the cores (``packets``, ``harness.model``, ``harness.session``) import no edge.
- Rule 3: results (``harness.results``: outcomes, case and run results) are a leaf that imports
  nothing of the harness: cases write them, reports read them, neither imports the other's way.

``__version__`` is the one place the version is written (pyproject.toml reads it from here), so
the CLI, the reports and the reference target's hello say it without looking up the installed
metadata (importing importlib.metadata alone costs a run about 25 ms of CPU).
"""

__version__ = "0.1.0"
