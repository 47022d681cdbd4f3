"""The capture pipeline's errors (docs/pipeline.md): :class:`PipelineError` when the job cannot
run (bad arguments, no inputs, an output folder it may not replace), :class:`ClusterError` when
it could not run to its end on the Spark cluster.  A leaf: the Spark session
(harness.pipeline.cluster) and the job (harness.pipeline.job) both raise them.
"""

from __future__ import annotations

from harness.errors import HarnessError

__all__ = ["ClusterError", "PipelineError"]


class PipelineError(HarnessError):
    """The pipeline could not run: bad arguments, no inputs, Spark failed."""


class ClusterError(PipelineError):
    """The job could not run to its end on the Spark cluster (no executors, tasks that kept failing)."""
