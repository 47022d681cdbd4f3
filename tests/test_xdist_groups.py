"""Under ``pytest -n 2 --dist loadgroup`` (``make test``) the tests of one ``xdist_group`` run on
one worker, so a module fixture they share (a Spark cluster, a set of wire runs) starts once."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).with_name("conftest.py")

GROUPED = """
import os
import pytest

pytestmark = pytest.mark.xdist_group("shared")

@pytest.mark.parametrize("n", range(8))
def test_grouped(n):
    with open("workers-grouped.txt", "a") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""

LOOSE = """
import os
import time
import pytest

@pytest.mark.parametrize("n", range(8))
def test_loose(n):
    time.sleep(0.05)
    with open("workers-loose.txt", "a") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""


def test_a_group_runs_on_one_worker_and_the_other_tests_on_both(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makepyfile(test_grouped=GROUPED, test_loose=LOOSE)
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=16)
    grouped = (pytester.path / "workers-grouped.txt").read_text().split()
    loose = (pytester.path / "workers-loose.txt").read_text().split()
    assert len(grouped) == 8 and len(set(grouped)) == 1, grouped
    assert len(loose) == 8 and set(loose) == {"gw0", "gw1"}, loose


FIRST_AND_LAST = """
import pytest

@pytest.mark.parametrize("n", range(6))
def test_early(n):
    with open("order.txt", "a") as f:
        f.write(f"early{n}\\n")
"""

LONG = """
def test_long():
    with open("order.txt", "a") as f:
        f.write("long\\n")
"""


def test_the_longest_tests_are_handed_out_first(pytester: pytest.Pytester) -> None:
    """A test LONGEST names is collected last, yet runs before the others (one worker: in order)."""
    conftest = CONFTEST.read_text(encoding="utf-8") + '\nLONGEST = ("test_zlast.py::test_long",)\n'
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_afirst=FIRST_AND_LAST, test_zlast=LONG)
    result = pytester.runpytest_subprocess("-n", "1", "--dist", "loadgroup", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=7)
    order = (pytester.path / "order.txt").read_text().split()
    assert order[0] == "long", order
