"""The helpers the tests of harness.report share: headless Chromium on a report
(:func:`chromium`; Debian's chromium, which ``make test`` installs where missing).  Test modules
import them from here, never from one another.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def chromium(report: Path, profile: Path, *mode: str) -> str:
    """Run headless Chromium on ``report`` (``--dump-dom`` unless another mode is given); its stdout."""
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        *(mode or ("--dump-dom",)),
        report.resolve().as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
