"""Build the book at the smoke profile and read every page in headless Chromium."""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import ROOT
from repro.runner import stage_book

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
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
    const rows = table.querySelectorAll('tbody tr').length;
    if (rows > 30) problems.push(`table with ${rows} rows`);
    const key = table.innerText.trim();
    if (key && seen.has(key)) problems.push('the same table twice: ' + key.slice(0, 60));
    seen.set(key, true);
    for (const cell of table.querySelectorAll('td, th')) {
      const text = cell.innerText.trim();
      if (text.endsWith('...') || text.endsWith('…') || text === '...') problems.push('truncated cell: ' + text.slice(0, 60));
    }
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
    staged = list(stage_book("smoke"))
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


@pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="chromium is installed by `make test` (scripts/system-packages.sh)"
)
def test_every_page_renders_without_errors(built_book: Path, server: str) -> None:
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    pages = toc_pages(built_book)
    figures = 0
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--disable-quic",
            ],
        )
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
            page.screenshot(
                path=str(SCREENSHOTS / (rel.replace("/", "_").removesuffix(".html") + ".png")), full_page=True
            )
        browser.close()
    assert not js_errors, js_errors
    assert figures >= 5  # the metrics chapter alone draws five figures
    assert len(list(SCREENSHOTS.glob("*.png"))) >= len(pages)
