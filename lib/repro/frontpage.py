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
from .verdict import DECISIONS, is_null_row

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


GROUPS = (
    ("paper", "Tested in the paper's regime"),
    ("miniature", "Tested in a miniature regime"),
    ("ours", "Checks of our own"),
    ("unstated", "Regime not stated yet"),
)


def _group(row: dict[str, Any]) -> str:
    """paper / miniature / ours / unstated: where a row was tested, from its origin and regime columns."""
    if row.get("origin") == "ours":
        return "ours"
    kind = str(row.get("regime") or "").split(":", 1)[0]
    return kind if kind in ("paper", "miniature") else "unstated"


def normalize(row: dict[str, Any]) -> dict[str, str]:
    """One verdict row as the front page shows it; rows from before the verdict layer are marked as such."""
    if "decision" in row:
        band = f"[{_number(row['ci_low'])}, {_number(row['ci_high'])}]"
        ours = f"{_number(row['ours'])} " + (f"(null band {band})" if is_null_row(row) else band)
        regime = str(row.get("regime") or "")
        measured = row.get("measured_by") or ""
        return {
            "claim": str(row["claim"]),
            "paper": _number(row["paper"]),
            "ours": ours,
            "decision": row["decision"],
            "why": (row.get("why") or "") + (f" (measured by: {measured})" if measured else ""),
            "regime": regime.split(": ", 1)[1] if ": " in regime else regime,
            "group": _group(row),
            "exact": row["ci_low"] == row["ci_high"],
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
        "regime": "",
        "group": "unstated",
        "exact": False,
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


def _claims_table(rows: list[dict[str, str]]) -> str:
    """One group's rows: claim, regime, paper, ours, decision, cause."""
    body = [
        "<tr>"
        + _cell(r["claim"])
        + _cell(r["regime"])
        + _cell(r["paper"])
        + _cell(r["ours"])
        + _cell(r["decision"], "repro-" + r["decision"].replace(" ", "-"))
        + _cell(r["why"])
        + "</tr>"
        for r in rows
    ]
    return _table(
        ["claim", "regime (ours vs paper)", "paper", "ours [95 % interval or null band]", "decision", "why"], body
    )


def _tally(rows: list[dict[str, str]]) -> list[int]:
    """held / not held / inconclusive counts."""
    return [sum(r["decision"] == d for r in rows) for d in DECISIONS]


def chance_sentence(rows: Sequence[dict[str, Any]]) -> str:
    """How many rows' intervals would miss by chance alone at 95 % (rows judged on an interval, not exact ones)."""
    n = sum(not r["exact"] for r in rows)
    expected = 0.05 * n
    return (
        f"{n} of these rows are judged on a 95 % interval or null band, each on its own: even if every interval had "
        f"exactly its nominal coverage, about {expected:.1f} of them would miss the true value by chance alone, so "
        "a single surprising row is weak evidence; a pattern across rows is stronger."
    )


def render(profile: str, chapters: list[tuple[str, list[dict[str, str]]]]) -> str:
    """The page's MyST markdown: counts per chapter (paper's claims by regime, our checks apart), then each chapter's
    rows grouped by regime, with links to its verdict section."""
    counts, sections = [], []
    for stem, rows in chapters:
        title, link = chapter_title(stem), f"executed/{stem}.html#verdict"
        paper_rows = [r for r in rows if r["group"] != "ours"]
        in_regime = sum(r["group"] == "paper" for r in rows)
        cells = [*_tally(paper_rows), f"{in_regime} of {len(paper_rows)}", sum(r["group"] == "ours" for r in rows)]
        counts.append(
            f'<tr><td><a href="{link}">{html.escape(title)}</a></td>'
            + "".join(f"<td>{n}</td>" for n in cells)
            + "</tr>"
        )
        sections += [f"## {title}", "", f'<p><a href="{link}">The chapter\'s verdict section</a></p>', ""]
        for key, heading in GROUPS:
            group = [r for r in rows if r["group"] == key]
            if group:
                held, not_held, unsure, untestable = _tally(group)
                words = f"{held} held, {not_held} not held, {unsure} inconclusive"
                words += f", {untestable} untestable here" if untestable else ""
                sections += [f"### {heading} ({words})", "", _claims_table(group), ""]
    every = [r for _, rows in chapters for r in rows]
    paper_total = sum(r["group"] != "ours" for r in every)
    in_regime = sum(r["group"] == "paper" for r in every)
    return "\n".join(
        [
            "# Do the claims hold?",
            "",
            f"Every claim this book tests, with the paper's number, ours with its 95 % interval (or the null band of an "
            f"attack), and the decision its chapter's rule gave. Built from the `{profile}` profile "
            f"(`runs/{profile}/*.json`): {paper_total} of the papers' claims and {len(every) - paper_total} checks of "
            f"our own in {len(chapters)} chapters. {in_regime} of the {paper_total} paper claims were tested in the "
            "paper's regime by a criterion written before the numbers and computed on the data (the variable the "
            "effect depends on, such as the number of classes or the corpus size, and the setting's defining property, "
            "such as model accuracy or how near the OOD classes are); the others in a miniature. A row that did not "
            "hold names its cause and the table that measures it by varying what it names: a genuine difference "
            "(*finding*), our data or protocol (*setup*, an ablation), our scale (*regime*, a sweep that moves toward "
            "the paper's value), or *unknown* (with the ablation or sweep that would tell). An inconclusive row says "
            "how much more data would decide it; a comparison whose arms are nearly the same, or whose comparator is "
            "under-trained, is *untestable here*.",
            "",
            chance_sentence(every),
            "",
            _table(
                ["chapter", *(f"paper's claims: {d}" for d in DECISIONS), "in the paper's regime", "our checks"], counts
            ),
            "",
            *sections,
        ]
    )


def write(profile: str, stems: Sequence[str]) -> Path:
    """Write book/claims.md for `profile` atomically; returns its path."""
    target = project_root() / PAGE
    atomic.write_text(target, render(profile, chapter_rows(profile, stems)))
    return target
