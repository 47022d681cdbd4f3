"""harness.pipeline: MSMQ captures at scale.

Synthetic captures with a manifest of injected anomalies (:mod:`harness.pipeline.synth`), splittable
reading of pcap/pcapng files by byte ranges (:mod:`harness.pipeline.splits`), inputs on other file
systems listed and read through Spark's Hadoop layer (:mod:`harness.pipeline.hadoop`), the per-flow work
the executors run -- TCP reassembly ([MS-MQQB] 2.1.1: MSMQ sessions on TCP 1801), decoding by
[MS-MQMQ] 2.2.19.1 BaseHeader.PacketSize with ``packets.parse(strict=False)`` and the passive
session observer of [MS-MQQB] 3.1 (:mod:`harness.pipeline.flows`) -- the PySpark job
(:mod:`harness.pipeline.job`) that writes Parquet tables of packets, sessions and violations --
its Spark session, the code it ships to a cluster's workers and the watch kept on its jobs
(:mod:`harness.pipeline.cluster`, :mod:`harness.pipeline.ship`), where its tables may go
(:mod:`harness.pipeline.outputs`) -- and the wire case replaying a captured session
(:mod:`harness.pipeline.tocase`).  The subcommands
``synth``, ``pipeline`` and ``capture-to-case`` are in :mod:`harness.pipeline.cli`.

Layer rules (the import-linter contracts of pyproject.toml): the pipeline is the top layer with
the CLI and the pytest plugin: it may import every layer below; nothing below imports it.
"""
