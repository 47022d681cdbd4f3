"""Reports of a conformance run: terminal summary, JUnit XML, JSON and self-contained HTML."""
