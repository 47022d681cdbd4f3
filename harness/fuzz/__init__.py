"""harness.fuzz: stateful, structure-aware fuzzing of a live [MS-MQQB] acceptor or sender (docs/fuzz.md).

Layer rules (the import-linter contracts of pyproject.toml): Rule 1: the fuzzer is the top layer
with the pipeline, the CLI and the pytest plugin: it may import every layer below (report, cases,
peers, session, packets); nothing below imports it.  Rule 2: inside the package imports go one
way (the ``fuzz-layers`` contract, no exception), highest first: the front ends (cli, then
demo); the report of a run (findings) beside the sender's run (sender, a run with the roles
swapped); the acceptor's run (engine); confirming and minimising a finding (minimise for an
acceptor's, sendercase for a sender's, each reaching the fuzzer that found it through a small
Protocol, never importing it); a finding's files (casefiles); what a run is given and gives
(runs: options, findings, report, the errors that end it); the oracles; reaching each session
state (states); and, importing nothing of the package, the packets generated and mutated
(generate), the shrinking of a packet (shrink) and the look at the target's descriptors
(resources).  Rule 3: the packet kinds and the session states are the cores' (``PacketKind``,
``harness.session.transitions``); the tables here are derived from them, so that a new packet
kind needs no change here beyond its templates (its mutation strategy).
"""
