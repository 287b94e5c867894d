"""Reading-group session guides: every placeholder resolves against the chapter's run and reads the quantity it
names, every question has teacher notes glued from results, every plan leaves time for its questions, every exercise
runs at `smoke` and its expected answer is what a fresh run of it gives, and the guide ends the staged chapter page."""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path

import nbformat
import pytest

from conftest import NOTEBOOKS, exercise_run
from repro import sessions
from repro.results import table_differences
from repro.runner import overrides_from_cli, run, stage_notebook

GUIDED = [stem for stem in NOTEBOOKS if sessions.spec_path(stem).exists()]
EXERCISES = [(stem, i) for stem in GUIDED for i in range(len(sessions.load(stem)["exercises"]))]
TABLE_KINDS = {"value", "interval", "min", "max", "mean", "median", "argmax", "argmin"}


def fresh_run(stem: str, index: int) -> dict:
    """Exercise `index` of `stem` executed afresh at smoke, once in this process (without a kernel or the runner's
    cache; the book's guides read the same run: conftest.exercise_run)."""
    return exercise_run(stem, sessions.load(stem)["exercises"][index]["override"])


TOY = {
    "notebook": "toy",
    "params": {"ks": [0.2, 1.0], "n": 40},
    "tables": {
        "verdict": [
            {"claim": "A beats B", "paper": 0.1, "ours": 0.25, "ci_low": 0.2, "ci_high": 0.3, "decision": "held"},
            {
                "claim": "a canary ranked first has exposure 19.93 bits",
                "paper": 19.93,
                "ours": 0.0016,  # a gap, as the verdict once showed it: the guide must not read it as the exposure
                "ci_low": 0.0016,
                "ci_high": 0.0016,
                "decision": "held",
                "statistic": "|ours − paper| (bits)",
            },
        ],
        "gains": [],
        "exposure_example": [{"rank": r, "exposure": math.log2(1e6) - math.log2(r)} for r in (1, 1000, 1_000_000)],
        "sweep": [
            {
                "k": 0.05,
                "Min-K%": 0.55,
                "PPL": 0.45,
                "min_20pct": -7.0,
                "mean ratio": 0.9,
                "mean low": 0.8,
                "mean high": 1.0,
            },
            {
                "k": 0.2,
                "Min-K%": 0.6,
                "PPL": 0.45,
                "min_20pct": -5.0,
                "mean ratio": 1.1,
                "mean low": 1.0,
                "mean high": 1.2,
            },
            {
                "k": 1e-05,
                "Min-K%": 0.4,
                "PPL": 0.45,
                "min_20pct": -3.0,
                "mean ratio": 1.0,
                "mean low": 0.9,
                "mean high": 1.1,
            },
        ],
        "auroc": [
            {"set": "cnn_dm", "score": "RMD", "auroc": 0.8125, "ci_low": 0.5772, "ci_high": 1.0},
            {"set": "cnn_dm", "score": "MD", "auroc": 0.4167, "ci_low": 0.0891, "ci_high": 0.7442},
            {"set": "far set", "score": "MD", "auroc": 0.6, "ci_low": 0.5, "ci_high": 0.7},
        ],
    },
}


def test_the_guided_chapters() -> None:
    assert set(NOTEBOOKS) == set(GUIDED)  # every chapter has its session guide


def test_placeholders_fill_from_the_verdict_rows() -> None:
    assert sessions._fill("{row: beats} vs {paper: A beats}; see {table: gains}", TOY) == (
        "0.25 [0.2, 0.3], *held* vs 0.1; see `gains`"
    )
    # a row that names its statistic says which quantity its estimate is
    assert sessions._fill("{row: canary}", TOY) == "0.002 [0.002, 0.002] (|ours − paper| (bits)), *held*"
    with pytest.raises(sessions.SessionError, match="no verdict row"):
        sessions._fill("{row: C beats D}", TOY)
    # every row of a claim judged per group, each after the rest of its claim
    groups = {
        **TOY,
        "tables": {"verdict": [{**TOY["tables"]["verdict"][0], "claim": f"A beats B, on {g}"} for g in "xy"]},
    }
    assert sessions._fill("{rows: A beats B}", groups) == (
        "on x: 0.25 [0.2, 0.3], *held*; on y: 0.25 [0.2, 0.3], *held*"
    )
    assert sessions._fill("{rows: A beats B}", TOY) == "as a whole: 0.25 [0.2, 0.3], *held*"
    with pytest.raises(sessions.SessionError, match="no table 'k_sweep'"):
        sessions._fill("{table: k_sweep}", TOY)


def test_table_placeholders_read_the_cell_they_name() -> None:
    fill = sessions._fill
    assert fill("{value: exposure_example.exposure | rank=1}", TOY) == "19.9"  # log2(10^6) bits, not the row's gap
    assert fill("{value: exposure_example.exposure | rank=1000000}", TOY) == "0"
    assert fill("{value: sweep.Min-K% | k=0.2}, {value: sweep.PPL | k=1e-05}", TOY) == "0.6, 0.45"  # 1e-05: a number
    assert fill("{interval: auroc.auroc | set=cnn_dm; score=RMD}", TOY) == "0.812 [0.577, 1]"
    assert fill("{interval: sweep.`mean ratio` | k=0.2}", TOY) == "1.1 [1, 1.2]"  # `mean low` beside `mean ratio`
    assert fill("{mean: auroc.auroc | score=MD}", TOY) == "0.508"
    assert fill("{max: auroc.ci_high - ci_low}", TOY) == "0.655"  # an expression over columns
    assert fill("{mean: auroc.auroc > 0.5}", TOY) == "0.667"  # a share
    assert fill("{median: sweep.min_*pct}", TOY) == "-5"  # a column pattern (min_20pct, min_50pct, ...)
    assert fill("{argmax: sweep.Min-K% -> k}, {argmin: sweep.Min-K% -> k}", TOY) == "0.2, 1e-05"
    assert fill("{value: auroc.set | score=MD; set=far set}", TOY) == "far set"
    assert fill("{param: ks}; {param: n}", TOY) == "0.2, 1; 40"
    for bad, message in [
        ("{value: auroc.auroc | score=MD}", "2 rows match, not one"),
        ("{value: auroc.auroc | score=MSP}", "no row of table 'auroc' matches"),
        ("{value: auroc.auroc | method=MD}", "no column 'method'"),
        ("{mean: auroc.nothing}", "cannot evaluate 'nothing'"),
        ("{value: auroc}", "names no column"),
        ("{interval: sweep.PPL | k=0.2}", "no interval columns"),
        ("{argmax: sweep.Min-K%}", "name the column to report"),
        ("{param: m}", "no parameter 'm'"),
    ]:
        with pytest.raises(sessions.SessionError, match=re.escape(message)):
            fill(bad, TOY)


def test_the_plan_leaves_time_for_its_questions() -> None:
    for stem in GUIDED:
        spec = sessions.load(stem)  # load checks the plan: its steps add up to the session, which lasts 60-90 min
        assert sum(step["minutes"] for step in spec["plan"]) == spec["session_minutes"]
        assert 60 <= spec["session_minutes"] <= 90
        assert sessions.discussion_minutes(spec) >= 3 * len(spec["questions"]), stem
    spec = sessions.load("metrics_by_hand")
    short = copy.deepcopy(spec)
    short["plan"][-1]["minutes"] -= 5
    with pytest.raises(sessions.SessionError, match="add up to"):
        sessions.check_plan(short, "toy")
    crowded = copy.deepcopy(spec)
    crowded["questions"] = crowded["questions"] * 2
    with pytest.raises(sessions.SessionError, match="need at least"):
        sessions.check_plan(crowded, "toy")
    long = copy.deepcopy(spec)
    long["plan"][0]["minutes"] += 60
    long["session_minutes"] += 60
    with pytest.raises(sessions.SessionError, match="60-90 minutes"):
        sessions.check_plan(long, "toy")


def test_every_question_has_notes_glued_from_the_tables() -> None:
    for stem in GUIDED:
        for q in sessions.load(stem)["questions"]:
            kinds = {kind for kind, _ in sessions.placeholders(q["notes"])}
            assert kinds & TABLE_KINDS, f"{stem}: notes without a number from a table: {q['notes'][:60]}"
            # no result typed into the notes: a decimal number outside the placeholders names a row a placeholder
            # reads (γ = 0.1), or is a constant (1/ln 2 = 1.44 bits, the exposure of chance)
            named = set(re.findall(r"=\s*(\d+\.\d+)", " ".join(arg for _, arg in sessions.placeholders(q["notes"]))))
            typed = re.findall(r"(?<![\w.])\d+\.\d+", sessions.PLACEHOLDER.sub("", q["notes"]))
            assert set(typed) <= named | {"1.44"}, (stem, typed)


def test_every_exercise_answers_from_its_table() -> None:
    for stem in GUIDED:
        for ex in sessions.load(stem)["exercises"]:
            for text in sessions.expect_texts(ex):
                tables = {arg.split(".")[0].strip() for kind, arg in sessions.placeholders(text) if kind in TABLE_KINDS}
                assert ex["answer_in"] in tables, f"{stem}: {ex['override']} does not read {ex['answer_in']}"


@pytest.mark.parametrize("stem", GUIDED)
def test_a_guide_resolves_against_its_run(smoke_results, stem: str) -> None:
    spec = sessions.load(stem)
    assert len(spec["questions"]) in range(4, 7) and len(spec["exercises"]) in range(2, 4)
    text = sessions.render(stem, smoke_results[stem], exercise_run)  # the exercises as the book's suite build runs them
    assert not re.search(r"\{(" + "|".join(sessions.KINDS) + "):", text)
    assert text.count("*held*") + text.count("*not held*") + text.count("*inconclusive*") >= 3
    assert text.count(":::{admonition} Teacher notes") == 1
    assert text.count(":::{admonition} Expected answer (smoke)") == len(spec["exercises"])
    for i, q in enumerate(spec["questions"], 1):
        assert f"\n{i}. {sessions._fill(q['notes'], smoke_results[stem])}\n" in text


def test_the_canary_question_quotes_the_exposure(smoke_results) -> None:
    """The bug this guards: the guide glued the verdict row's estimate (a gap of 0.0016) as 'exposure 0.002'."""
    text = sessions.render("metrics_by_hand", smoke_results["metrics_by_hand"], exercise_run)
    question = next(line for line in text.splitlines() if "ranked first among a million" in line)
    assert f"has exposure {math.log2(10**6):.3g} bits" in question  # 19.9


@pytest.mark.parametrize("stem, index", EXERCISES)
def test_every_exercise_runs_at_smoke(smoke_results, stem: str, index: int) -> None:
    ex = sessions.load(stem)["exercises"][index]
    guide = sessions.render(stem, smoke_results[stem], exercise_run)  # the book's guide (as test_book builds it)
    result = fresh_run(stem, index)
    assert all(result["params"][name] == value for name, value in ex["override"].items())
    assert result["tables"][ex["answer_in"]], f"{stem}: exercise {index + 1} answers in an empty table"
    before, after = sessions.expected_answer(ex, smoke_results[stem], result)
    assert f"Before the change: {before}" in guide
    assert f"After it: {after}" in guide, f"{stem}: exercise {index + 1}: the guide's answer is not the run's"
    assert before != after or ex.get("noise"), f"{stem}: exercise {index + 1} changes nothing it reads"


def test_exercise_commands_parse_back_to_their_overrides() -> None:
    for stem in GUIDED:
        for ex in sessions.load(stem)["exercises"]:
            line = sessions.command(stem, ex["override"])
            assert line.startswith(f".venv/bin/python -m repro run {stem} --profile smoke -p ")
            words = line.split(" -p ")[1:]
            pairs = [[w.split(" ", 1)[0], w.split(" ", 1)[1].strip("'")] for w in words]
            assert overrides_from_cli(pairs) == ex["override"], line


def test_the_guide_is_the_staged_pages_last_cell(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("1 + 1")]
    executed, target = tmp_path / "run.ipynb", tmp_path / "book.ipynb"
    nbformat.write(nb, executed)
    stage_notebook(executed, target, "## Reading-group session\n\nText.\n")
    staged = nbformat.read(target, as_version=4)
    assert staged.cells[-1].cell_type == "markdown" and staged.cells[-1].source.startswith("## Reading-group")
    assert "hide-input" in staged.cells[0].metadata["tags"]


def test_a_participants_run_of_an_exercise_gives_the_guides_answer(smoke_results) -> None:
    """The command a participant runs (the runner, in a kernel, cached by its parameters) gives the answer the guide
    shows, which the suite computes in this process: the cheapest chapter's exercises, every table they publish (timing columns aside).
    (Each chapter's runs are deterministic across processes: tests/test_determinism.py.)"""
    stem = "metrics_by_hand"
    for index, ex in enumerate(sessions.load(stem)["exercises"]):
        here, participant = fresh_run(stem, index), run(stem, "smoke", ex["override"])
        assert participant["params"] == here["params"]
        assert participant["tables"][ex["answer_in"]], f"exercise {index + 1} answers in an empty table"
        assert table_differences(participant["tables"], here["tables"]) == [], f"exercise {index + 1}"
        before, after = sessions.expected_answer(ex, smoke_results[stem], participant)
        assert (before, after) == sessions.expected_answer(ex, smoke_results[stem], here)
