"""msmq-harness: conformance testing for Microsoft Message Queuing.

The edges of the harness (CLI, captures, peers, cases, reports, Spark pipeline) around three
pure cores: the wire codec (``packets``, [MS-MQMQ] 2.2, [MS-MQQB] 2.2), the reference queue
manager (``harness.model``, [MS-MQDMPR]) and the session state machines (``harness.session``,
[MS-MQQB] 3.1).
"""
