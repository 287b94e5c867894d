"""Build the book at the smoke profile and read every page in headless Chromium."""

from __future__ import annotations

import functools
import html.parser
import http.server
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import NOTEBOOKS, ROOT, exercise_run
from repro.runner import stage_book

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
needs_chromium = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="chromium is installed by `make test` (scripts/system-packages.sh)"
)
SCREENSHOTS = ROOT / "_build" / "screenshots"
# Jupyter Book 1 with Sphinx 7.4 emits sphinx-thebe's config script twice; the second copy
# re-declares a constant. Thebe (live code cells) is unused here, so that one error is expected.
KNOWN_JS_ERRORS = ("Identifier 'THEBE_JS_URL' has already been declared",)
ERROR_SELECTOR = "div.output.traceback, div.output.error, .system-message, .problematic"
# What a reader must never see on a page (section 3 of the conventions), checked in the browser.
PAGE_CHECKS = r"""() => {
  const problems = [];
  const outputs = Array.from(document.querySelectorAll('main .cell_output, main .output'));
  for (const out of outputs) {
    const text = out.innerText || '';
    for (const line of text.split('\n')) {
      if (/^\s*(Text\(|<Figure size|<Axes|<matplotlib|<seaborn|\[<matplotlib)/.test(line)) problems.push('raw repr: ' + line.slice(0, 60));
    }
    if (out.querySelector('.widget-area, .jupyter-widgets, script[type="application/vnd.jupyter.widget-view+json"]')
        || /Loading widget|HBox\(children|IntProgress\(|FloatProgress\(/.test(text)) problems.push('widget output');
  }
  const seen = new Map();
  for (const table of document.querySelectorAll('main table')) {
    const rows = table.querySelectorAll('tbody tr:not(.repro-group)').length;  // a statistic's header is no row
    if (rows > 30) problems.push(`table with ${rows} rows`);
    const key = table.innerText.trim();
    if (key && seen.has(key)) problems.push('the same table twice: ' + key.slice(0, 60));
    seen.set(key, true);
    for (const cell of table.querySelectorAll('td, th')) {
      const text = cell.innerText.trim();
      if (text.endsWith('...') || text.endsWith('…') || text === '...') problems.push('truncated cell: ' + text.slice(0, 60));
    }
  }
  // A table stays inside the text column (a wide result table scrolls inside its output instead).
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  const right = article.getBoundingClientRect().right;
  for (const table of document.querySelectorAll('main table')) {
    const box = (table.closest('div.cell_output') || table).getBoundingClientRect();
    if (box.right > right + 1) problems.push(`table overflows its column by ${Math.round(box.right - right)} px`);
  }
  // A verdict row reads in one glance: at most about six lines of its text (seven line heights with padding).
  for (const row of document.querySelectorAll('main table.repro-verdict tbody tr')) {
    const lines = row.getBoundingClientRect().height / parseFloat(getComputedStyle(row.querySelector('td')).lineHeight);
    if (lines > 7) problems.push(`verdict row ${row.innerText.slice(0, 50)} is ${lines.toFixed(1)} lines tall`);
  }
  for (const block of document.querySelectorAll('main .cell_input, main div.cell > .cell_input')) {
    const cell = block.closest('.cell');
    if (cell && !cell.classList.contains('tag_hide-input') && !cell.classList.contains('tag_show-input')) {
      problems.push('code shown uncollapsed: ' + (block.innerText || '').slice(0, 40));
    }
  }
  return problems;
}"""


@pytest.fixture(scope="module")
def built_book(smoke_results, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """HTML of the whole book, notebooks executed at smoke, built with warnings as errors."""
    smoke_results.items()  # every notebook executed (the fixture runs each on first access)
    staged = list(stage_book("smoke", exercise_runner=exercise_run))  # exercises in this process, as test_sessions
    assert len(staged) >= 4  # the metrics chapter and the paper chapters
    out = tmp_path_factory.mktemp("book")
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "jupyter-book"),
            "build",
            str(ROOT),
            "--path-output",
            str(out),
            "--warningiserror",
            "--keep-going",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out / "_build" / "html"


@pytest.fixture(scope="module")
def server(built_book: Path):
    """Serve the built HTML on a loopback port."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(built_book))
    handler.log_message = lambda *a, **k: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def toc_pages(built_book: Path) -> list[str]:
    """HTML paths of every page listed in _toc.yml."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [c["file"] for part in toc["parts"] for c in part["chapters"]]
    pages = [f"{f}.html" for f in files]
    assert all((built_book / p).exists() for p in pages), pages
    return pages


@needs_chromium
def test_every_page_renders_without_errors(built_book: Path, server: str) -> None:
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    pages = toc_pages(built_book)
    figures = 0
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        js_errors: list[str] = []
        page.on("pageerror", lambda exc: js_errors.append(str(exc)) if str(exc) not in KNOWN_JS_ERRORS else None)
        for rel in pages:
            response = page.goto(f"{server}/{rel}", wait_until="load")
            assert response is not None and response.ok, rel
            assert page.locator("main h1").count() >= 1, f"{rel} has no title"
            body = page.inner_text("main")
            assert "Traceback (most recent call last)" not in body, rel
            assert page.locator(ERROR_SELECTOR).count() == 0, f"{rel} shows error output"
            sizes = page.evaluate(
                "Array.from(document.querySelectorAll('main img'))"
                ".map(i => [i.getAttribute('src'), i.complete, i.naturalWidth, i.naturalHeight])"
            )
            for src, complete, width, height in sizes:
                assert complete and width > 0 and height > 0, f"{rel}: empty image {src}"
            figures += len(sizes)
            problems = page.evaluate(PAGE_CHECKS)
            assert not problems, f"{rel}: {problems}"
            if rel.startswith("book/executed/"):  # a chapter opens on its verdict: the figure, then the rows
                first = page.evaluate(
                    "(() => { const s = document.querySelector('main section section');"
                    " return [s.querySelector('h2').innerText, s.querySelectorAll('img').length,"
                    " s.querySelectorAll('table.repro-verdict tbody tr').length]; })()"
                )
                assert first[0].startswith("Verdict") and first[1] == 1 and first[2] >= 3, (rel, first)
                collapsed = "(() => { const t = document.querySelector('#table-params details:not([open]) table');"
                collapsed += " return t !== null && !t.checkVisibility(); })()"
                assert page.evaluate(collapsed), f"{rel}: the parameter table is not collapsed"
            if rel == toc_pages(built_book)[0]:  # the landing page: a line of verdicts per chapter, and the figure
                assert page.locator("ul.repro-chapters > li").count() == len(NOTEBOOKS), rel
                assert page.locator("ul.repro-chapters span.repro-badge").count() >= len(NOTEBOOKS), rel
                assert page.locator("img[src*='paper_vs_ours']").count() == 1, rel
            page.screenshot(
                path=str(SCREENSHOTS / (rel.replace("/", "_").removesuffix(".html") + ".png")), full_page=True
            )
        browser.close()
    assert not js_errors, js_errors
    assert figures >= 5  # the metrics chapter alone draws five figures
    assert len(list(SCREENSHOTS.glob("*.png"))) >= len(pages)


# Math as Sphinx writes it (inline \(…\), display \[…\] in elements of class `math`): once MathJax has typeset a page,
# each holds an mjx-container and no delimiter is left in the text outside code.
MATH_CHECK = r"""async () => {
  if (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) return {loaded: false};
  await MathJax.startup.promise;
  const maths = Array.from(document.querySelectorAll('main .math'));
  const unrendered = maths.filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.slice(0, 60));
  const main = document.querySelector('main').cloneNode(true);
  main.querySelectorAll('pre, code, script, style, mjx-container').forEach(e => e.remove());
  const raw = (main.textContent.match(/\\\(|\\\[|\$\$/g) || []).length;
  return {loaded: true, maths: maths.length, unrendered, raw};
}"""


def read_offline(browser, server: str, rel: str) -> tuple[dict, list[str]]:
    """Load a page with every request that leaves the loopback server aborted (the book read without a network):
    what became of its math, and every request that was blocked or failed."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    blocked: list[str] = []

    def only_loopback(route) -> None:
        if route.request.url.startswith(server + "/"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort("internetdisconnected")

    context.route("**/*", only_loopback)
    page = context.new_page()
    page.on("requestfailed", lambda request: blocked.append(f"{request.url} ({request.failure})"))
    try:
        response = page.goto(f"{server}/{rel}", wait_until="load")
        assert response is not None and response.ok, rel
        math = page.evaluate(MATH_CHECK)
        page.wait_for_load_state("networkidle")  # the fonts MathJax asks for once it has typeset
    finally:
        context.close()
    return math, sorted(set(blocked))


def math_pages(built_book: Path) -> list[str]:
    """The pages of the table of contents with math on them."""
    return [rel for rel in toc_pages(built_book) if 'class="math' in (built_book / rel).read_text()]


@needs_chromium
def test_math_renders_without_a_network(built_book: Path, server: str) -> None:
    """MathJax is served from the built book, so offline a page shows typeset formulas, never raw LaTeX, and asks
    nothing of the network (every page of the table of contents is read with all other requests aborted)."""
    from playwright.sync_api import sync_playwright

    with_math = math_pages(built_book)
    assert len(with_math) >= 3, with_math  # the metrics chapter, DeepGini, RMD, ...
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for rel in toc_pages(built_book):
            math, off_loopback = read_offline(browser, server, rel)
            assert not off_loopback, f"{rel} requests beyond the book: {off_loopback}"
            if rel in with_math:
                assert math["loaded"], f"{rel}: MathJax did not load"
                assert math["maths"] > 0 and not math["unrendered"], f"{rel}: math left untypeset: {math}"
                assert math["raw"] == 0, f"{rel}: LaTeX delimiters left in the text: {math}"
        browser.close()


ISSUE_NUMBER = re.compile(r"\bissues? #?\d+\b", re.I)
# a 7-40-digit hexadecimal token with a letter and a digit in it (a commit hash; a word like "defaced" is not one)
COMMIT_HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")


class _ProseText(html.parser.HTMLParser):
    """The text of a page's <main>, without code, scripts and styles."""

    SKIP = frozenset({"pre", "code", "script", "style"})

    def __init__(self) -> None:
        super().__init__()
        self.in_main = 0
        self.in_skipped = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs) -> None:
        self.in_main += tag == "main"
        self.in_skipped += tag in self.SKIP

    def handle_endtag(self, tag: str) -> None:
        self.in_main -= tag == "main"
        self.in_skipped -= tag in self.SKIP

    def handle_data(self, data: str) -> None:
        if self.in_main > 0 and self.in_skipped <= 0:
            self.parts.append(data)


def insider_words(page_html: str) -> list[str]:
    """Issue numbers and commit hashes in a page's prose (its code aside): words a reader of the book cannot use."""
    parser = _ProseText()
    parser.feed(page_html)
    text = " ".join(parser.parts)
    return [m.group(0) for m in ISSUE_NUMBER.finditer(text)] + [m.group(0) for m in COMMIT_HASH.finditer(text)]


def test_insider_words_are_found() -> None:
    page = (
        "<main><p>our check (issue 24's factorial), measured at 4968f8b; a defaced 1234567 table</p>"
        "<pre>git checkout 4968f8b</pre></main><footer>issue 3</footer>"
    )
    assert insider_words(page) == ["issue 24", "4968f8b"]


def test_no_issue_numbers_or_commit_hashes_on_pages(built_book: Path) -> None:
    found = {rel: words for rel in toc_pages(built_book) if (words := insider_words((built_book / rel).read_text()))}
    assert not found, found


def test_pages_carry_the_description_and_no_launch_or_repository_links(built_book: Path) -> None:
    """Every page has the book's description in its head, and no button to a repository, an issue tracker or a
    launch service (there is no public repository; book/rerunning.md says how to run a chapter live)."""
    for rel in toc_pages(built_book):
        page = (built_book / rel).read_text()
        assert '<meta name="description" content="' in page, rel
        links = re.findall(r'href="(https?://[^"]+)"', page)
        buttons = [u for u in links if re.search(r"mybinder|colab\.research|jupyterhub|/issues/new|repro-book/", u)]
        assert not buttons, f"{rel}: {buttons}"
