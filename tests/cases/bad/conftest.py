"""The YAML here are loader fixtures (tests/cases/test_loader.py), not cases to run."""

collect_ignore_glob = ["*.yaml", "*.yml"]
