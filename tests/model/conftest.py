"""Fixtures for the [MS-MQDMPR] model tests: every test runs on the indexed reference model
and on the literal oracle (harness.model.literal)."""

from __future__ import annotations

import pytest
from dmpr_helpers import Clock

from harness.model import QueueManager
from harness.model.literal import LiteralQueueManager


@pytest.fixture(params=[QueueManager, LiteralQueueManager], ids=["indexed", "literal"])
def qm(request: pytest.FixtureRequest) -> QueueManager:
    cls: type[QueueManager] = request.param
    return cls(clock=Clock(), QueueManagerQuota=1 << 40)
