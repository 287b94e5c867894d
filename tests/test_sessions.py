"""Reading-group session guides: every placeholder resolves against the chapter's run, every exercise runs at
`smoke` and publishes the table that answers it, and the guide ends the staged chapter page."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from conftest import NOTEBOOKS
from repro import sessions
from repro.runner import execute_here, overrides_from_cli, stage_notebook

GUIDED = [stem for stem in NOTEBOOKS if sessions.spec_path(stem).exists()]
EXERCISES = [(stem, i) for stem in GUIDED for i in range(len(sessions.load(stem)["exercises"]))]


def test_the_guided_chapters() -> None:
    assert set(NOTEBOOKS) == set(GUIDED)  # every chapter has its session guide


@pytest.mark.parametrize("stem", GUIDED)
def test_a_guide_resolves_against_its_run(smoke_results, stem: str) -> None:
    spec = sessions.load(stem)
    assert len(spec["questions"]) in range(4, 7) and len(spec["exercises"]) in range(2, 4)
    assert 60 <= sum(step["minutes"] for step in spec["plan"]) <= 90
    text = sessions.render(stem, smoke_results[stem])
    assert "{row:" not in text and "{paper:" not in text and "{table:" not in text
    assert text.count("*held*") + text.count("*not held*") + text.count("*inconclusive*") >= 3


def test_placeholders_fill_from_the_verdict_rows() -> None:
    result = {
        "notebook": "toy",
        "tables": {
            "verdict": [
                {"claim": "A beats B", "paper": 0.1, "ours": 0.25, "ci_low": 0.2, "ci_high": 0.3, "decision": "held"}
            ],
            "gains": [],
        },
    }
    assert sessions._fill("{row: beats} vs {paper: A beats}; see {table: gains}", result) == (
        "0.250 [0.200, 0.300], *held* vs 0.100; see `gains`"
    )
    with pytest.raises(sessions.SessionError, match="no verdict row"):
        sessions._fill("{row: C beats D}", result)
    with pytest.raises(sessions.SessionError, match="no table 'k_sweep'"):
        sessions._fill("{table: k_sweep}", result)


def test_exercise_commands_parse_back_to_their_overrides() -> None:
    for stem in GUIDED:
        for ex in sessions.load(stem)["exercises"]:
            line = sessions.command(stem, ex["override"])
            assert line.startswith(f".venv/bin/python -m repro run {stem} --profile smoke -p ")
            words = line.split(" -p ")[1:]
            pairs = [[w.split(" ", 1)[0], w.split(" ", 1)[1].strip("'")] for w in words]
            assert overrides_from_cli(pairs) == ex["override"], line


@pytest.mark.parametrize("stem, index", EXERCISES)
def test_every_exercise_runs_at_smoke(smoke_results, stem: str, index: int) -> None:
    smoke_results[stem]  # the chapter's own smoke run first, as a group would: its caches are the exercise's
    ex = sessions.load(stem)["exercises"][index]
    result = execute_here(stem, "smoke", ex["override"])  # the notebook's cells, in this process (no kernel)
    assert all(result["params"][name] == value for name, value in ex["override"].items())
    assert result["tables"][ex["answer_in"]], f"{stem}: exercise {index + 1} answers in an empty table"


def test_the_guide_is_the_staged_pages_last_cell(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("1 + 1")]
    executed, target = tmp_path / "run.ipynb", tmp_path / "book.ipynb"
    nbformat.write(nb, executed)
    stage_notebook(executed, target, "## Reading-group session\n\nText.\n")
    staged = nbformat.read(target, as_version=4)
    assert staged.cells[-1].cell_type == "markdown" and staged.cells[-1].source.startswith("## Reading-group")
    assert "hide-input" in staged.cells[0].metadata["tags"]
