"""`python -m repro show NOTEBOOK TABLE [--profile P]`: one published table of a run, printed compactly.

It reads `runs/<profile>/<notebook>.json` (what `python -m repro run` writes) and prints the table as pandas'
`to_string` does, without the index, numbers rounded as the book's tables round them, at most `MAX_ROWS` rows. A
reading group uses it to read an exercise's answer in a terminal, without opening the executed notebook.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .paths import runs_dir
from .results import MAX_ROWS, rounded
from .runner import EXIT_BAD_INPUT, RunError

DIGITS = 4  # as the rendered page rounds its tables
MAX_WIDTH = 60  # characters of a text cell (a verdict's claim, a regime's sentence)


def result_path(notebook: str, profile: str) -> Path:
    """Where the run of `notebook` (a name, or a path to its source) at `profile` keeps its tables."""
    return runs_dir() / profile / f"{Path(notebook).stem}.json"


def table_text(notebook: str, table: str, profile: str = "default") -> str:
    """Table `table` of the run of `notebook` at `profile`, as text; a one-line RunError when either is missing."""
    path = result_path(notebook, profile)
    if not path.is_file():
        runs = sorted(p.stem for p in path.parent.glob("*.json")) if path.parent.is_dir() else []
        have = f"runs at {profile}: {', '.join(runs)}" if runs else f"no run at {profile} yet"
        raise RunError(
            f"no run of {Path(notebook).stem} at {profile} ({path}); "
            f"`python -m repro run {Path(notebook).stem} --profile {profile}` makes one ({have})",
            EXIT_BAD_INPUT,
        )
    tables = json.loads(path.read_text(encoding="utf-8")).get("tables", {})
    if table not in tables:
        raise RunError(
            f"{path.stem} [{profile}] published no table {table!r}; its tables: {', '.join(tables)}", EXIT_BAD_INPUT
        )
    frame = pd.DataFrame(tables[table])
    if frame.empty:
        return f"{path.stem} [{profile}] / {table}: no rows"
    shown = rounded(frame.head(MAX_ROWS), DIGITS)
    text = shown.to_string(index=False, max_colwidth=MAX_WIDTH)
    if len(frame) > MAX_ROWS:
        text += f"\n({MAX_ROWS} of {len(frame)} rows; every row: {path})"
    return text
