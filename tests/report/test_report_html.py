"""The HTML report: self-contained, escaped, and its conformance matrix as headless Chromium renders it.

The browser is Debian's chromium (``make test`` installs it where missing), run as
``chromium --headless --dump-dom file://<report>``: what it prints is the DOM after the page's
inline script ran, which this test parses (html.parser) for the matrix rows and counts.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

from harness.report.html import render_html, section_anchor, write_html
from harness.report.results import Outcome, RunResult
from harness.report.terminal import OUTCOMES

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


class _Matrix(HTMLParser):
    """The rows of table#conformance-matrix: (document, section, {outcome: count}, link)."""

    def __init__(self) -> None:
        super().__init__()
        self.in_table = False
        self.document = ""
        self.rows: list[tuple[str, str, dict[str, int], str]] = []
        self.footer: dict[str, int] = {}
        self.header: list[str] = []
        self._row: dict[str, str] | None = None
        self._cell: str | None = None
        self._text = ""
        self._cells: dict[str, int] = {}
        self._link = ""
        self._in_thead = False
        self._in_tfoot = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table" and a.get("id") == "conformance-matrix":
            self.in_table = True
        if not self.in_table:
            return
        if tag == "thead":
            self._in_thead = True
        elif tag == "tfoot":
            self._in_tfoot = True
        elif tag == "tbody":
            self.document = a.get("data-document") or ""
        elif tag == "tr":
            self._row = {k: v or "" for k, v in a.items()}
            self._cells, self._link = {}, ""
        elif tag in ("td", "th"):
            self._cell = a.get("data-outcome") or ("th" if tag == "th" else "")
            self._text = ""
        elif tag == "a":
            self._link = a.get("href") or ""

    def handle_data(self, data: str) -> None:
        if self.in_table and self._cell is not None:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if not self.in_table:
            return
        if tag in ("td", "th") and self._cell is not None:
            if self._in_thead:
                self.header.append(self._text.strip())
            elif self._cell not in ("th", ""):
                self._cells[self._cell] = int(self._text.strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if self._in_tfoot:
                self.footer = self._cells
            elif "data-section" in self._row:
                self.rows.append((self.document, self._row["data-section"], self._cells, self._link))
            self._row = None
        elif tag == "thead":
            self._in_thead = False
        elif tag == "tfoot":
            self._in_tfoot = False
        elif tag == "table":
            self.in_table = False


def _matrix(dom: str) -> _Matrix:
    parser = _Matrix()
    parser.feed(dom)
    return parser


def test_chromium_renders_the_matrix(
    run: RunResult, tmp_path: Path, expected_rows: list[tuple[str, str, dict[str, int]]]
) -> None:
    report = write_html(run, tmp_path / "report.html")
    dom = chromium(report, tmp_path / "profile")
    assert '<html lang="en" class="js">' in dom  # the inline script ran
    matrix = _matrix(dom)
    assert matrix.header == ["spec section", *OUTCOMES, "total"]
    got = [(doc, sec, {k: v for k, v in cells.items() if v and k != "total"}) for doc, sec, cells, _ in matrix.rows]
    assert got == expected_rows  # grouped by document, sorted numerically (3.1.7.1.9 before 3.1.7.1.10)
    for _, section, cells, link in matrix.rows:
        assert cells["total"] == sum(v for k, v in cells.items() if k != "total")
        assert link == "#" + section_anchor(section)
        assert f'id="{section_anchor(section)}"' in dom  # the row links to the section's cases
    assert matrix.footer == {**dict.fromkeys(OUTCOMES, 1), "passed": 3, "total": 10}  # every outcome, worst first


def test_chromium_screenshot_shows_a_page(run: RunResult, tmp_path: Path) -> None:
    report = write_html(run, tmp_path / "report.html")
    shot = tmp_path / "report.png"
    chromium(report, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1200,900")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1200, 900)
    assert len(data) > 20_000  # a rendered page, not a blank image


def test_self_contained_and_escaped(run: RunResult, nasty: str) -> None:
    page = render_html(run)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)  # nothing fetched
    assert "<link" not in page and "@import" not in page and "url(" not in page
    assert nasty not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;quotes&#x27;" in page
    assert page.count("<script>") == 1  # only the report's own inline script


def test_failures_show_section_expected_observed_and_evidence(run: RunResult) -> None:
    page = render_html(run)
    failure = page.split('<li class="case o-failed" data-outcome="failed">', 1)[1].split("</li>", 1)[0]
    assert "<th>section</th><td>MS-MQDMPR 3.1.7.3.2</td><" in failure
    assert "<th>requirement</th><td>DMPR-SEEK-SKIP (MUST)</td>" in failure
    assert '<tr class="expected"><th>expected</th><td><code>&quot;m2&quot;</code></td></tr>' in failure
    assert '<tr class="observed"><th>observed</th><td><code>&quot;m1&quot;</code></td></tr>' in failure
    assert "<th>section</th><td>MS-MQDMPR 3.1.1.11</td>" in failure  # the second failure
    assert "<th>requirement</th><td>DMPR-STATE-LOCKED (MUST)</td>" in failure
    assert '<pre class="evidence">0000  4c 49 4f 52  LIOR' in failure
    error = page.split('<li class="case o-error" data-outcome="error">', 1)[1].split("</li>", 1)[0]
    assert '<pre class="detail">step 1 (dequeue_message): timed out after 10 s' in error
    assert "second line \\x01 control" in error
    soft = page.split('<li class="case o-non_strict" data-outcome="non_strict">', 1)[1].split("</li>", 1)[0]
    assert '<div class="failure soft">' in soft
    assert "<th>requirement</th><td>DMPR-PEEK-POSITION (interpretation)</td>" in soft
    assert '<tr class="expected"><th>expected</th><td><code>&quot;End&quot;</code></td></tr>' in soft
    for outcome in OUTCOMES:
        assert f'<span class="badge b-{outcome}">' in page


def test_verdict(run: RunResult) -> None:
    assert '<span class="verdict fail">FAILED</span>' in render_html(run)
    run.results = [r for r in run.results if r.outcome in (Outcome.passed, Outcome.non_strict)]
    assert '<span class="verdict pass">PASSED</span>' in render_html(run)
    run.strict = True
    assert '<span class="verdict fail">FAILED</span>' in render_html(run)


def test_empty_run(tmp_path: Path) -> None:
    page = render_html(RunResult(target="reference"))
    assert 'id="conformance-matrix"' in page and "No cases were run." in page
