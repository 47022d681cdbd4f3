"""Suite-wide pytest configuration: ``xdist_group`` marks hold under ``--dist loadgroup``.

pytest-xdist (3.8) groups the tests of one ``xdist_group`` by a suffix it writes to
``item._nodeid``; pytest 9 reads the node id from ``item._id``, so the suffix never reaches the
scheduler and a group's tests (and its module fixtures: a Spark cluster, a set of wire runs) are
spread over every worker.  The hook below writes the suffix where pytest 9 reads it.
"""

from __future__ import annotations

import pytest
from _pytest.nodeid import NodeId


def _groups(item: pytest.Item) -> list[str]:
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    return sorted(names)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not getattr(config.option, "loadgroup", False):  # set on the workers of --dist loadgroup
        return
    for item in items:
        groups = _groups(item)
        if groups and not item.nodeid.endswith("@" + "_".join(groups)):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(groups)}")  # type: ignore[attr-defined]
