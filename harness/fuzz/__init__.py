"""harness.fuzz: stateful, structure-aware fuzzing of a live [MS-MQQB] acceptor (docs/fuzz.md).

Layer rules (the import-linter contracts of pyproject.toml): the fuzzer is the top layer with the
pipeline, the CLI and the pytest plugin: it may import every layer below (cases, peers, session,
packets); nothing below imports it.
"""
