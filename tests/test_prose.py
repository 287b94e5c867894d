"""A chapter's fixed prose may not state a result's direction: such a sentence is read from the result (page.say,
written by the library from the numbers and the same rule as the row), or it reports the paper's claim."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import ROOT

DIRECTION = re.compile(
    r"\b(protects?|improves?|outperforms?|beats?|better than|worse than|higher than|lower than|reduces?|"
    r"increases?|helps?|hurts?|closes?|widens?)\b",
    re.I,
)
# a sentence that reports the paper's (or the authors') claim, or asks or supposes, states no result of ours
ATTRIBUTED = re.compile(
    r"\b(paper|papers|paper's|claims?|claimed|authors?|they report|RQ\d|abstract|hypothes\w*|would|whether|"
    r"expects?|expected)\b|\?",
    re.I,
)


def fixed_prose(text: str) -> list[str]:
    """The paragraphs of a py:percent notebook's Markdown cells."""
    paragraphs = []
    for cell in re.split(r"^# %%", text, flags=re.M):
        if not cell.startswith(" [markdown]"):
            continue
        lines = [line[2:] if line.startswith("# ") else "" for line in cell.splitlines()[1:]]
        paragraphs += [" ".join(p.split()) for p in "\n".join(lines).split("\n\n") if p.strip()]
    return paragraphs


def unread_directions(text: str) -> list[str]:
    """Sentences of fixed prose that state a direction and attribute it to no one (headings aside)."""
    found = []
    for paragraph in fixed_prose(text):
        if paragraph.startswith("#"):
            continue
        sentences = re.split(r"(?<=[.!?])\s+", paragraph)
        found += [s for s in sentences if DIRECTION.search(s) and not ATTRIBUTED.search(s)]
    return found


def test_no_chapter_states_a_direction_in_fixed_text() -> None:
    offenders = {
        nb.name: found
        for nb in sorted((ROOT / "notebooks").glob("*.py"))
        if (found := unread_directions(nb.read_text()))
    }
    assert not offenders, offenders


def test_the_prose_check_catches_a_fixed_conclusion() -> None:
    planted = "# %% [markdown]\n# Deduplication protects the canaries: exposure falls to chance.\n"
    assert unread_directions(planted) == ["Deduplication protects the canaries: exposure falls to chance."]
    supposed = "# %% [markdown]\n# Deduplication protects the canaries if the attack is run. DP-SGD helps too.\n"
    assert len(unread_directions(supposed)) == 2  # an 'if' in the sentence does not attribute it
    reported = "# %% [markdown]\n# The paper claims that deduplication protects the canaries.\n"
    assert unread_directions(reported) == []
    read = "# %%\npage.say(ex.factorial_words(factorial))\n"  # read from the results: not fixed prose
    assert unread_directions(read) == []


def test_fixed_prose_reads_markdown_cells_only() -> None:
    text = Path(ROOT / "notebooks" / "metrics_by_hand.py").read_text()
    assert fixed_prose(text) and all("import " not in p for p in fixed_prose(text))
