"""The README and the book's configuration say what is true now: a short README with the build time, a title that
counts the papers, a description, and no buttons to a repository or launch service the book does not have."""

from __future__ import annotations

import re

import yaml

from conftest import ROOT

README = (ROOT / "README.md").read_text()
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())


def test_readme_is_short() -> None:
    assert len(README) <= 7000, f"README.md has {len(README)} characters: move details to a book page"


def test_readme_states_the_whole_build_time() -> None:
    assert re.search(r"`make book` on a fresh machine takes about \*\*\d+ h \d+ min\*\*", README)


def test_readme_points_to_the_contributor_page() -> None:
    assert "book/contributing.md" in README and "| `lib/repro/` |" not in README
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    using = next(part for part in toc["parts"] if part["caption"] == "Using this book")
    assert {"file": "book/contributing"} in using["chapters"]


def test_title_counts_the_papers_the_readme_counts() -> None:
    counted = re.search(r"re-runs the experiments of (\w+) papers", README)
    assert counted, "the README's first paragraph counts the papers"
    assert f"Re-running {counted.group(1)} ML papers" in CONFIG["title"], CONFIG["title"]
    assert len(CONFIG["sphinx"]["config"]["book_description"]) > 100


def test_no_repository_or_launch_buttons() -> None:
    """There is no public repository: no button may point at one, nor launch a chapter from one."""
    assert "launch_buttons" not in CONFIG and "repository" not in CONFIG
    html = CONFIG.get("html", {})
    assert not any(html.get(b) for b in ("use_repository_button", "use_issues_button", "use_edit_page_button"))
