"""Capture edge: reads libpcap/pcapng files (``pcapfile``), decodes link layer to TCP segments
(``frames``), reassembles per-direction TCP byte streams following RFC 9293 sequence-space rules
(``tcp``) and cuts them into MSMQ packets (``framing``). Pure Python and the standard library only;
every bad input is reported with its offset, never raised out of the iterators and never dropped
silently.

Layer rules (the import-linter contracts of pyproject.toml): Rule 1: imports the cores (``packets``,
``harness.session``) and the leaf ``harness.files``, never ``harness.decoding`` (the edge above it
that reads a user's files), ``harness.peers`` (its sibling), ``harness.cases``, ``harness.report``
or ``harness.pipeline``. Rule 2: the pipeline runs these same functions inside Spark executors;
nothing here imports Spark.
"""
