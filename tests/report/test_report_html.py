"""The HTML report: self-contained, escaped, and its conformance matrix as headless Chromium renders it.

The browser is Debian's chromium (``make test`` installs it where missing), run as
``chromium --headless --dump-dom file://<report>``: what it prints is the DOM after the page's
inline script ran, which this test parses (html.parser) for the matrix rows and counts.
"""

from __future__ import annotations

import html as _html
import json
import re
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from harness.report.html import render_html, section_anchor, write_html
from harness.report.terminal import OUTCOMES
from harness.results import CaseResult, Outcome, RunResult, StepFailure
from tests.report.reportkit import chromium


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


def test_failures_show_the_explanation_rows_and_evidence(run: RunResult) -> None:
    page = render_html(run)
    failures = page.split('<section id="failures">', 1)[1].split('<section id="matrix">', 1)[0]
    # grouped by requirement, the requirement's id and level heading its group
    group = failures.split('data-requirement="DMPR-SEEK-SKIP">', 1)[1].split("</section>", 1)[0]
    assert '<code>DMPR-SEEK-SKIP</code> <span class="level">MUST</span>' in group
    assert '<code class="id">dmpr.seek.fwd[peek=True]</code>' in group
    at = "cases/mqdmpr/seek.yaml:1, step 0: seek_available_message_position"
    assert f'<tr class="at"><th>at</th><td>{at}</td>' in group
    assert '<tr class="expected"><th>expected</th><td>&quot;m2&quot;</td></tr>' in group
    assert '<tr class="observed"><th>observed</th><td>&quot;m1&quot;</td></tr>' in group
    locked = failures.split('data-requirement="DMPR-STATE-LOCKED">', 1)[1].split("</section>", 1)[0]
    assert '<pre class="evidence">0000  4c 49 4f 52  LIOR' in locked
    error = failures.split('<article class="explanation o-error"', 1)[1].split("</article>", 1)[0]
    assert "step 1 (dequeue_message): timed out after 10 s" in error
    assert "second line \\x01 control" in error
    soft = failures.split('<h2 id="non-strict">', 1)[1]
    assert '<article class="explanation o-non_strict soft"' in soft
    assert '<code>DMPR-PEEK-POSITION</code> <span class="level">interpretation</span>' in soft
    assert '<tr class="expected"><th>expected</th><td>&quot;End&quot;</td></tr>' in soft
    assert failures.index("o-error") < failures.index("o-failed") < failures.index("o-non_strict")  # worst first
    for outcome in OUTCOMES:
        assert f'<span class="badge b-{outcome}">' in page


def test_verdict(run: RunResult) -> None:
    every = run.results
    assert '<span class="verdict fail" id="verdict">FAILED</span>' in render_html(run)
    run.results = [r for r in run.results if r.outcome in (Outcome.passed, Outcome.non_strict)]
    assert '<span class="verdict pass" id="verdict">PASSED</span>' in render_html(run)
    run.strict = True
    assert '<span class="verdict fail" id="verdict">FAILED</span>' in render_html(run)
    run.results = [r for r in every if not r.outcome.ran]
    assert '<span class="verdict none" id="verdict">NOTHING RAN</span>' in render_html(run)


def test_empty_run(tmp_path: Path) -> None:
    page = render_html(RunResult(target="reference"))
    assert 'id="conformance-matrix"' in page and "No cases were run." in page and "No failures." in page


# ============================================================ the page as a reader sees it
WIDTH, HEIGHT = 1280, 900


def _with_long_values(run: RunResult) -> RunResult:
    """``run`` with a failure whose id, value path, observed value and section are long words."""
    long_id = "mqqb.acceptor." + "very-long-case-identifier-" * 12
    run.results.insert(
        0,
        CaseResult(
            case_id=long_id,
            title="A case whose every value is long " + "x" * 200,
            sections=["MS-MQQB 2.2.3.1.999.999.999.999.999.999.999.999.999.999.999.999.999.999"],
            level="MUST",
            outcome=Outcome.failed,
            failures=[
                StepFailure(
                    step=1,
                    event="receive",
                    field="EstablishConnectionHeader." + "Padding" * 30,
                    expected={"every_byte": 90},
                    observed="00" * 600,
                    section="MS-MQQB 2.2.3.1.999.999.999.999.999.999.999.999.999.999.999.999.999.999",
                    evidence="000040  " + "[00]" * 16 + "  " + "." * 16 + "\n" + "f" * 400,
                    requirement="MQQB-2.2.3.1-RESPONSE-PADDING-" + "LONG" * 30,
                    quote="The Padding field MUST be set to 0x5A " + "and-so-on-" * 40,
                    inputs={"packet": "EstablishConnection", "hex": "ab" * 400},
                    line=61,
                )
            ],
            source="cases/mqqb/" + "deep/" * 30 + "acceptor.yaml",
            line=44,
            tags=["mqqb", "wire"],
        ),
    )
    return run


_MEASURE = """
<script>
(function () {
  function box(el) { if (!el) { return null; } var r = el.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, shown: r.width > 0 && r.height > 0}; }
  var out = {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
    innerHeight: window.innerHeight, verdict: box(document.getElementById("verdict")),
    failure: box(document.querySelector("#failures article.explanation")),
    failureRow: box(document.querySelector("#failures article.explanation tr.observed")),
    matrix: box(document.getElementById("conformance-matrix"))};
  %s
  var pre = document.createElement("pre"); pre.id = "measure"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def _measure(run: RunResult, tmp_path: Path, actions: str = "") -> tuple[dict[str, Any], str]:
    """The layout measures of ``run``'s report in a 1280x900 window (after ``actions``, script
    statements that may add to ``out``), and the DOM after the scripts ran."""
    page = render_html(run).replace("</body>", _MEASURE % actions + "</body>")
    report = tmp_path / "measured.html"
    report.write_text(page, encoding="utf-8")
    dom = chromium(report, tmp_path / "profile", f"--window-size={WIDTH},{HEIGHT}", "--dump-dom")
    found = re.search(r'<pre id="measure">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    return json.loads(_html.unescape(found.group(1))), dom


def test_first_screen_shows_the_verdict_and_the_first_failure(run: RunResult, tmp_path: Path) -> None:
    measures, dom = _measure(run, tmp_path)
    assert '<html lang="en" class="js">' in dom
    verdict, failure, row = measures["verdict"], measures["failure"], measures["failureRow"]
    assert verdict["shown"] and verdict["top"] >= 0 and verdict["bottom"] <= measures["innerHeight"]
    assert failure["shown"] and verdict["bottom"] <= failure["top"] < measures["innerHeight"]
    assert row["shown"] and row["bottom"] <= measures["innerHeight"]  # its expected/observed too
    assert measures["matrix"]["top"] > failure["top"]  # failures before the matrix
    markers = ('id="verdict"', 'id="filters"', 'id="failures"', 'id="matrix"', 'id="cases"')
    order = [dom.index(marker) for marker in markers]
    assert order == sorted(order)


def test_the_page_never_scrolls_sideways(run: RunResult, tmp_path: Path) -> None:
    measures, dom = _measure(_with_long_values(run), tmp_path, 'document.getElementById("expand-matrix").click();')
    assert "very-long-case-identifier-" in dom
    assert 'id="conformance-matrix" class="expanded"' in dom  # every section shown, long ones too
    assert measures["innerWidth"] == WIDTH
    assert measures["scrollWidth"] <= measures["innerWidth"], measures


def test_matrix_shows_the_sections_with_problems_until_expanded(run: RunResult, tmp_path: Path) -> None:
    actions = """
    var rows = document.querySelectorAll("#conformance-matrix tr.section");
    function visible() { var n = []; for (var i = 0; i < rows.length; i++) {
      if (rows[i].getBoundingClientRect().height > 0) { n.push(rows[i].getAttribute("data-section")); } } return n; }
    out.folded = visible();
    document.getElementById("expand-matrix").click();
    out.expanded = visible();
    """
    measures, _ = _measure(run, tmp_path, actions)
    assert measures["folded"] == [
        "MS-MQDMPR 3.1.1.11", "MS-MQDMPR 3.1.7.1.9", "MS-MQDMPR 3.1.7.1.10", "MS-MQDMPR 3.1.7.3.2", "MS-MQDMPR 3.2.7.2"
    ]  # fmt: skip
    assert len(measures["expanded"]) == 9


def test_search_and_filters(run: RunResult, tmp_path: Path) -> None:
    actions = """
    var form = document.getElementById("filters");
    function shown(sel) { var n = []; var items = document.querySelectorAll(sel);
      for (var i = 0; i < items.length; i++) { if (items[i].getBoundingClientRect().height > 0) {
        n.push(items[i].querySelector("code.id").textContent); } } return n; }
    function pick(name, value) { var s = form.querySelector("select[name=" + name + "]"); s.value = value;
      s.dispatchEvent(new Event("change")); }
    out.formShown = form.getBoundingClientRect().height > 0;
    pick("outcome", "failed");
    out.failedCases = shown("#cases li.case"); out.failedExplained = shown("#failures article.explanation");
    pick("outcome", ""); pick("level", "SHOULD");
    out.should = shown("#cases li.case");
    pick("level", ""); pick("tag", "seek");
    out.seek = shown("#cases li.case");
    pick("tag", ""); pick("section", "MS-MQDMPR 3.1.7.1.9");
    out.section = shown("#cases li.case");
    pick("section", "");
    var search = form.querySelector("input[type=search]"); search.value = "peek waits";
    search.dispatchEvent(new Event("input"));
    out.search = shown("#cases li.case"); out.searchExplained = shown("#failures article.explanation");
    search.value = ""; search.dispatchEvent(new Event("input"));
    out.all = shown("#cases li.case").length;
    """
    measures, _ = _measure(run, tmp_path, actions)
    assert measures["formShown"]
    assert set(measures["failedCases"]) == {"dmpr.seek.fwd[peek=True]"}
    assert measures["failedExplained"] == ["dmpr.seek.fwd[peek=True]"] * 2
    assert measures["should"] == ["mqmq.header.priority"]
    assert set(measures["seek"]) == {"dmpr.seek.fwd[peek=False]"}
    assert set(measures["section"]) == {"dmpr.dequeue.timeout", "dmpr.purge.locked", "dmpr.purge.empty"}
    assert set(measures["search"]) == {"dmpr.cursor.waiting"}
    assert measures["searchExplained"] == ["dmpr.cursor.waiting"]
    assert measures["all"] >= 10  # every case again (a case counts under each of its sections)


def _pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG, as Chromium writes them."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(png):
        length = int.from_bytes(png[pos : pos + 4], "big")
        kind, body = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height = int.from_bytes(header[0:4], "big"), int.from_bytes(header[4:8], "big")
    depth, color, interlace = header[8], header[9], header[12]
    assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
    bpp = 4 if color == 6 else 3
    raw, stride, rows_, previous = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = previous[i], previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows_.append(bytes(line))
        previous = line
    return width, height, [bytes(r[i] for i in range(len(r)) if i % bpp < 3) for r in rows_]


def test_screenshot_of_the_first_screen(run: RunResult, tmp_path: Path) -> None:
    report = write_html(run, tmp_path / "report.html")
    shot = tmp_path / "first-screen.png"
    chromium(report, tmp_path / "profile", f"--screenshot={shot}", f"--window-size={WIDTH},{HEIGHT}")
    width, height, rows_ = _pixels(shot.read_bytes())
    assert (width, height) == (WIDTH, HEIGHT)

    def is_red(r: int, g: int, b: int) -> bool:  # the FAILED verdict and the failed badges (#cf222e)
        return r > 170 and g < 90 and b < 90

    inked = red_top = red_lower = 0
    for y, line in enumerate(rows_[::3]):
        for x in range(0, width * 3, 9):
            r, g, b = line[x], line[x + 1], line[x + 2]
            inked += r + g + b < 600
            if is_red(r, g, b):
                if y * 3 < 120:
                    red_top += 1
                elif y * 3 > 180:
                    red_lower += 1
    assert inked > 0.02 * (height // 3) * (width // 3)  # a rendered page, not a blank one
    assert red_top > 20  # the verdict, red, at the top
    assert red_lower > 20  # a failure's badge and border below it, on the same first screen
