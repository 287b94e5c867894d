"""Sphinx extension for the book's HTML: math rendered by a local MathJax 3 (a page read offline shows formulas, not
LaTeX), and the book's description (`book_description` in _config.yml) in every page's head.

The MathJax files come from the `django-static-mathjax` package (MathJax 3.2's own distribution as a Python package;
it needs no Django). Sphinx's `mathjax_path` (_config.yml) points at `_static/mathjax/tex-mml-chtml.js`; after the
build this extension copies that component there, with what it loads on demand: the TeX extensions, the CommonHTML
fonts, the menu's parts and the accessibility components with their speech rules.
"""

from __future__ import annotations

import html
import shutil
from importlib.resources import files
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

PARTS = ("tex-mml-chtml.js", "input", "output/chtml", "ui", "a11y", "sre", "adaptors")


def mathjax_es5() -> Path:
    """MathJax's `es5` folder in the installed package."""
    return Path(str(files("mathjax"))) / "static" / "mathjax" / "es5"


def copy_mathjax(app: Sphinx, exception: Exception | None) -> None:
    """After an HTML build, copy MathJax into `_static/mathjax` of the output."""
    if exception is not None or app.builder.format != "html":
        return
    source = mathjax_es5()
    target = Path(app.outdir) / "_static" / "mathjax"
    for part in PARTS:
        src, dst = source / part, target / part
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    shutil.copy2(source.parent / "LICENSE", target / "LICENSE")


def add_description(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """The book's description as the page's `<meta name="description">`."""
    if app.config.book_description:
        tag = f'<meta name="description" content="{html.escape(app.config.book_description)}" />\n'
        context["metatags"] = context.get("metatags", "") + tag


def setup(app: Sphinx) -> dict[str, Any]:
    try:
        installed = (mathjax_es5() / PARTS[0]).is_file()
    except ModuleNotFoundError:
        installed = False
    if not installed:
        raise RuntimeError("MathJax is missing: `make venv` installs it (django-static-mathjax, pyproject.toml)")
    app.add_config_value("book_description", "", "html")
    app.connect("html-page-context", add_description)
    app.connect("build-finished", copy_mathjax)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
