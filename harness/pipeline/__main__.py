"""``python -m harness.pipeline`` (or ``spark-submit harness/pipeline/__main__.py``): the capture
pipeline of :mod:`harness.pipeline.job` ([MS-MQQB] 2.1.1 sessions, 3.1 rules) as a Spark application."""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file by spark-submit: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from harness.pipeline.cli import main

if __name__ == "__main__":
    sys.exit(main())
