"""The book's landing page and its page of every verdict row, generated from runs/<profile>/*.json.

`book/claims.md` is the first page a reader sees: per chapter one line (held / not held / inconclusive / untestable
counts of the paper's claims and a takeaway read from its rows), the paper's value against ours for every row with a
number in both, and how to read a verdict. `book/verdicts.md` holds every chapter's rows, as each chapter shows them.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import atomic
from .paths import notebooks_dir, project_root, runs_dir
from .plots import finite_number
from .verdict import COLUMNS, DECISIONS, is_null_row, ours_text, paper_text, rows_html

PAGE = Path("book") / "claims.md"
ROWS_PAGE = Path("book") / "verdicts.md"
FIGURE = Path("book") / "figures" / "paper_vs_ours.png"


def chapter_title(stem: str) -> str:
    """The first `# ` heading of a notebook source, else its file name."""
    source = notebooks_dir() / f"{stem}.py"
    if source.exists():
        for line in source.read_text(encoding="utf-8").splitlines():
            if match := re.match(r"^# # (.+)$", line):
                return match.group(1).strip()
    return stem


def short_title(stem: str) -> str:
    """A chapter's title up to its colon, wrapped for a legend ('DeepGini', 'Min-K% Prob')."""
    import textwrap

    return "\n".join(textwrap.wrap(chapter_title(stem).split(":")[0], 26))


def normalize(row: Mapping[str, Any]) -> dict[str, Any]:
    """A verdict row with every column of the current layout (rows of older runs lack the newer ones)."""
    out = {column: row.get(column, "") for column in COLUMNS}
    out["paper_estimate"] = row.get("paper_estimate")
    for column in ("rule_low", "rule_high", "ci_low", "ci_high", "ours"):
        out[column] = row.get(column)
    return out


def chapter_rows(profile: str, stems: Sequence[str]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(stem, verdict rows) for every chapter with a results file at `profile`, in book order."""
    found = []
    for stem in stems:
        path = runs_dir() / profile / f"{stem}.json"
        if path.exists():
            rows = json.loads(path.read_text(encoding="utf-8")).get("tables", {}).get("verdict", [])
            found.append((stem, [normalize(r) for r in rows if "decision" in r]))
    return found


def _regime(row: Mapping[str, Any]) -> str:
    """paper / miniature / ours: where a row was tested."""
    if row.get("origin") == "ours":
        return "ours"
    return "paper" if str(row.get("regime") or "").startswith("paper") else "miniature"


def tally(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Count of rows per decision."""
    return {d: sum(r["decision"] == d for r in rows) for d in DECISIONS}


def _sentence(rows: Sequence[Mapping[str, Any]], whose: str) -> str:
    """'Of N claims of <whose>: counts (k in the paper's regime); not held, for example: …' — the example is the first
    row not held (else inconclusive), one in the paper's regime before a miniature one and, for a row not held, one
    whose cause is not our setup before one that is; a row not held gives its regime and the kind of its cause."""
    words = ", ".join(f"{n} {d}" for d, n in tally(rows).items() if n)
    sentence = f"Of {len(rows)} claims of {whose}: {words or 'none judged'}"
    sentence += f" ({sum(_regime(r) == 'paper' for r in rows)} in the paper's regime)"
    for decision in ("not held", "inconclusive"):
        found = [r for r in rows if r["decision"] == decision]
        if found:
            first = min(found, key=lambda r: (_regime(r) != "paper", _cause_kind(r) == "setup"))  # the first of these
            where = "in the paper's regime" if _regime(first) == "paper" else "in a miniature"
            cause = f"; {where}, cause: {_cause_kind(first)}" if decision == "not held" else ""
            return (
                f"{sentence}; {decision}, for example: {first['claim']} ({first['statistic']}: ours "
                f"{ours_text(first)}, paper {paper_text(first)}{cause})."
            )
    return sentence + "."


def _cause_kind(row: Mapping[str, Any]) -> str:
    """The kind of a row's cause (finding, setup, regime, unknown), read from its why; "" where it names none."""
    kind = str(row.get("why") or "").split(":", 1)[0]
    return kind if kind in ("finding", "setup", "regime", "unknown") else ""


def takeaway(rows: Sequence[Mapping[str, Any]]) -> str:
    """Sentences read from a chapter's rows: the paper's claims by decision, how many in the paper's regime, and an
    example that did not hold (else an inconclusive one) in the row's statistic, preferring the paper's regime; then
    the same for each follow-up paper whose claims the chapter tests (Claim.follow_up), counted apart."""
    claimed = [r for r in rows if r.get("origin") != "ours"]
    papers = [r for r in claimed if not r.get("follow_up")]
    out = [_sentence(papers, "the paper")]
    for later in dict.fromkeys(r["follow_up"] for r in claimed if r.get("follow_up")):
        out.append(_sentence([r for r in claimed if r.get("follow_up") == later], later))
    return " ".join(out)


def chance_sentence(rows: Sequence[Mapping[str, Any]]) -> str:
    """How many rows' intervals would miss by chance alone at 95 % (rows judged on an interval, not exact ones)."""
    n = sum(r.get("ci_low") != r.get("ci_high") for r in rows)
    return (
        f"{n} of these rows are judged on a 95 % interval or null band, each on its own: even if every interval had "
        f"exactly its nominal coverage, about {0.05 * n:.1f} of them would miss the true value by chance alone, so "
        "a single surprising row is weak evidence; a pattern across rows is stronger."
    )


def comparable(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Rows with the paper's value and ours in one statistic, ours with an interval (not a null band, not exact)."""
    return [
        r
        for r in rows
        if finite_number(r.get("paper_estimate"))
        and not r.get("values")
        and not is_null_row(r)
        and all(finite_number(r.get(k)) for k in ("ours", "ci_low", "ci_high"))
        and r["ci_low"] != r["ci_high"]
    ]


def paper_vs_ours(chapters: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]):
    """The paper's value against ours for every comparable row, one marker per chapter, coloured by decision, with
    the identity line; symmetric-log axes because the statistics run from AUROC gaps of 0.002 to speed-ups of 17.
    None when no row is comparable."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.lines import Line2D

    from .page import FIGURE_WIDTH, legible_figures
    from .plots import DECISION_COLORS, plain_number

    legible_figures()
    markers = "osD^vP*X"
    points = [(stem, r) for stem, rows in chapters for r in comparable(rows)]
    if not points:
        return None
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, 5.2))
    values = []
    stems = list(dict.fromkeys(stem for stem, _ in points))
    for stem, r in points:
        x, y = r["paper_estimate"], r["ours"]
        color = DECISION_COLORS[r["decision"]]
        ax.plot([x, x], [r["ci_low"], r["ci_high"]], color=color, lw=1.2, alpha=0.8)
        ax.plot([x], [y], markers[stems.index(stem) % len(markers)], color=color, ms=6, mec="black", mew=0.4)
        values += [x, r["ci_low"], r["ci_high"]]
    span = max(abs(v) for v in values) * 1.3
    ticks = [t for t in (-10, -1, -0.1, 0, 0.1, 1, 10, 100) if abs(t) <= span]
    ax.set_xscale("symlog", linthresh=0.05)
    ax.set_yscale("symlog", linthresh=0.05)
    ax.set_xticks(ticks, [plain_number(t) for t in ticks])
    ax.set_yticks(ticks, [plain_number(t) for t in ticks])
    ax.minorticks_off()
    line = np.linspace(-span, span, 400)
    ax.plot(line, line, color="0.4", ls="--", lw=1)
    ax.set(xlim=(-span, span), ylim=(-span, span), xlabel="the paper's value", ylabel="ours, with its 95 % interval")
    ax.axhline(0, color="0.75", lw=0.8)
    ax.axvline(0, color="0.75", lw=0.8)
    handles = [Line2D([], [], ls="", marker="o", color=c, label=d) for d, c in DECISION_COLORS.items()]
    handles += [
        Line2D([], [], ls="", marker=markers[i % len(markers)], color="0.5", mec="black", label=short_title(s))
        for i, s in enumerate(stems)
    ]
    handles.append(Line2D([], [], color="0.4", ls="--", label="ours = the paper's"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def _badges(counts: Mapping[str, int]) -> str:
    """Decision counts as coloured badges."""
    return " ".join(
        f'<span class="repro-badge repro-{d.replace(" ", "-")}">{n} {html.escape(d)}</span>'
        for d, n in counts.items()
        if n
    )


WIDE = ["---", "html_theme.sidebar_secondary.remove: true", "---", ""]  # no contents column: the rows get its width

READING = """## How to read a verdict

- **Claim and statistic.** Each row quotes one claim of the paper and names the one statistic it is judged on
  (with its units); the *paper* column is that statistic on the paper's own numbers (*no number* where the
  paper's text gives none it applies to, *not reported* on our own checks); *ours* is the same statistic here,
  with its 95 % interval.
- **Decision.** The chapter's rule, written before any number: *held*, *not held*, *inconclusive* (the interval
  straddles the threshold; the row says how much more data would decide it) or *untestable here* (the setup alone
  would decide it).
- **Regime.** *paper* only when a criterion written before the numbers, and computed on the data, says our setting
  is the paper's; *miniature* otherwise.
- **Why.** A row that did not hold names its cause and the table that measures it; *unknown* says which ablation
  or sweep would tell. {doc}`reading` explains each part at length."""


def render(profile: str, chapters: Sequence[tuple[str, Sequence[Mapping[str, Any]]]], figure: bool) -> str:
    """The landing page's MyST markdown: a line per chapter, the paper-vs-ours figure, how to read a verdict."""
    every = [r for _, rows in chapters for r in rows]
    papers = [r for r in every if r.get("origin") != "ours"]
    lines = []
    for stem, rows in chapters:
        link = f"executed/{stem}.html#verdict"
        counts = tally([r for r in rows if r.get("origin") != "ours"])
        lines.append(
            f'<li><a href="{link}"><b>{html.escape(chapter_title(stem))}</b></a> {_badges(counts)}<br>'
            f"{html.escape(takeaway(rows))}</li>"
        )
    shown = (
        [
            "```{figure} figures/paper_vs_ours.png",
            ":name: paper-vs-ours",
            "",
            f"The paper's value against ours in the same statistic, for the {len(comparable(every))} rows where the "
            "paper gives a number and ours has an interval: a point on the dashed line reproduces the paper's value; "
            "the vertical bar is our 95 % interval. Colour: the decision.",
            "```",
            "",
        ]
        if figure
        else []
    )
    return "\n".join(
        [
            *WIDE,
            "# Do the claims hold?",
            "",
            f"This book re-runs the experiments of machine-learning papers and judges each claim by a rule written "
            f"before the numbers. Built from the `{profile}` profile: {len(papers)} claims of the papers and "
            f"{len(every) - len(papers)} checks of our own in {len(chapters)} chapter{'s' * (len(chapters) != 1)}; "
            f"{sum(_regime(r) == 'paper' for r in papers)} of the {len(papers)} claims were tested in the paper's "
            "regime, the others in a miniature. Counts below are the papers' claims; {doc}`verdicts` lists every row.",
            "",
            '<ul class="repro-chapters">',
            *lines,
            "</ul>",
            "",
            *shown,
            READING,
            "",
        ]
    )


def render_rows(profile: str, chapters: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]) -> str:
    """The page of every verdict row: each chapter's rows as its page shows them, numbered as in its figure."""
    every = [r for _, rows in chapters for r in rows]
    sections = []
    for stem, rows in chapters:
        title, link = chapter_title(stem), f"executed/{stem}.html"
        sections += [f"## {title}", "", f'<p><a href="{link}#verdict">The chapter\'s verdict</a></p>', ""]
        sections += [rows_html(rows, link=link), ""]
    return "\n".join(
        [
            *WIDE,
            "# Every verdict row",
            "",
            f"Every row of every chapter at the `{profile}` profile (`runs/{profile}/*.json`), numbered as in its "
            "chapter's verdict figure. " + chance_sentence(every),
            "",
            *sections,
        ]
    )


def write(profile: str, stems: Sequence[str]) -> Path:
    """Write the landing page, its figure and the page of every row for `profile` atomically; returns the landing
    page's path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    root = project_root()
    chapters = chapter_rows(profile, stems)
    fig = paper_vs_ours(chapters)
    if fig is not None:
        (root / FIGURE).parent.mkdir(parents=True, exist_ok=True)
        with atomic.atomic_path(root / FIGURE) as tmp:
            fig.savefig(tmp, format="png", dpi=110)
        plt.close(fig)
    atomic.write_text(root / ROWS_PAGE, render_rows(profile, chapters))
    atomic.write_text(root / PAGE, render(profile, chapters, figure=fig is not None))
    return root / PAGE
