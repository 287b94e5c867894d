"""The book's front page, "Do the claims hold?": every chapter's verdict rows, generated from runs/<profile>/*.json."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import atomic
from .paths import notebooks_dir, project_root, runs_dir
from .verdict import DECISIONS

PAGE = Path("book") / "claims.md"
LEGACY = {"yes": "held", "no": "not held"}  # rows written before the verdict layer: yes / no / partly ...


def chapter_title(stem: str) -> str:
    """The first `# ` heading of a notebook source, else its file name."""
    source = notebooks_dir() / f"{stem}.py"
    if source.exists():
        for line in source.read_text(encoding="utf-8").splitlines():
            if match := re.match(r"^# # (.+)$", line):
                return match.group(1).strip()
    return stem


def _number(value: Any) -> str:
    """A number with three significant digits, anything else as text."""
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def normalize(row: dict[str, Any]) -> dict[str, str]:
    """One verdict row as the front page shows it; rows from before the verdict layer are marked as such."""
    if "decision" in row:
        ours = f"{_number(row['ours'])} [{_number(row['ci_low'])}, {_number(row['ci_high'])}]"
        return {
            "claim": str(row["claim"]),
            "paper": _number(row["paper"]),
            "ours": ours,
            "decision": row["decision"],
            "why": row.get("why") or "",
        }
    held = str(row.get("held", ""))
    decision = LEGACY.get(held, "inconclusive")
    note = f"no interval yet (the chapter still reports '{held}' without one)"
    return {
        "claim": str(row["claim"]),
        "paper": _number(row.get("paper", "")),
        "ours": _number(row.get("ours", "")),
        "decision": decision,
        "why": note if decision != "held" else "no interval yet",
    }


def chapter_rows(profile: str, stems: Sequence[str]) -> list[tuple[str, list[dict[str, str]]]]:
    """(stem, normalized verdict rows) for every chapter with a results file at `profile`, in book order."""
    found = []
    for stem in stems:
        path = runs_dir() / profile / f"{stem}.json"
        if path.exists():
            rows = json.loads(path.read_text(encoding="utf-8")).get("tables", {}).get("verdict", [])
            found.append((stem, [normalize(r) for r in rows]))
    return found


def _cell(text: str, css: str = "") -> str:
    """An escaped table cell."""
    cls = f' class="{css}"' if css else ""
    return f"<td{cls}>{html.escape(text)}</td>"


def _table(header: Sequence[str], body: list[str]) -> str:
    """A compact HTML table."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    return (
        f'<table class="repro-table repro-claims">\n<thead><tr>{head}</tr></thead>\n<tbody>\n'
        + "\n".join(body)
        + ("\n</tbody>\n</table>")
    )


def render(profile: str, chapters: list[tuple[str, list[dict[str, str]]]]) -> str:
    """The page's MyST markdown: counts per chapter, then each chapter's claims with links to its verdict."""
    counts, sections = [], []
    for stem, rows in chapters:
        title, link = chapter_title(stem), f"executed/{stem}.html#verdict"
        tally = [sum(r["decision"] == d for r in rows) for d in DECISIONS]
        counts.append(
            f'<tr><td><a href="{link}">{html.escape(title)}</a></td>'
            + "".join(f"<td>{n}</td>" for n in tally)
            + "</tr>"
        )
        body = [
            _cell(r["claim"])
            + _cell(r["paper"])
            + _cell(r["ours"])
            + _cell(r["decision"], "repro-" + r["decision"].replace(" ", "-"))
            + _cell(r["why"])
            for r in rows
        ]
        sections += [
            f"## {title}",
            "",
            f'<p><a href="{link}">The chapter\'s verdict section</a></p>',
            "",
            _table(
                ["claim", "paper", "ours [95 % interval]", "decision", "why"], [f"<tr>{cells}</tr>" for cells in body]
            ),
            "",
        ]
    total = sum(len(rows) for _, rows in chapters)
    return "\n".join(
        [
            "# Do the claims hold?",
            "",
            f"Every claim this book tests, with the paper's number, ours with its 95 % interval (or the null band of an "
            f"attack), and the decision its chapter's rule gave. Built from the `{profile}` profile "
            f"(`runs/{profile}/*.json`): {total} claims in {len(chapters)} chapters. A row that did not hold names its "
            "cause: a genuine difference (*finding*), our data, model or scale (*setup*), or *unknown*.",
            "",
            _table(["chapter", *DECISIONS], counts),
            "",
            *sections,
        ]
    )


def write(profile: str, stems: Sequence[str]) -> Path:
    """Write book/claims.md for `profile` atomically; returns its path."""
    target = project_root() / PAGE
    atomic.write_text(target, render(profile, chapter_rows(profile, stems)))
    return target
