"""`python -m repro show NOTEBOOK TABLE [--profile P]`: one published table of a run, compact, or a one-line error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.runner import main


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A runs/ folder holding one smoke result of a notebook `toy`."""
    monkeypatch.setenv("REPRO_RUNS", str(tmp_path))
    tables = {
        "exposure_example": [
            {"rank": 1, "exposure": 19.931568569324174, "paper": 19.93},
            {"rank": 1000000, "exposure": 0.0, "paper": None},
        ],
        "long": [{"i": i, "x": i / 7} for i in range(45)],
        "empty": [],
    }
    (tmp_path / "smoke").mkdir()
    (tmp_path / "smoke" / "toy.json").write_text(json.dumps({"notebook": "toy", "profile": "smoke", "tables": tables}))
    return tmp_path


def test_show_prints_one_table_rounded(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "toy", "exposure_example", "--profile", "smoke"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["rank", "exposure", "paper"]  # no index column
    assert lines[1].split() == ["1", "19.93", "19.93"]  # four significant digits, as the page rounds
    assert lines[2].split() == ["1000000", "0"]  # a missing value prints as nothing


def test_show_keeps_30_rows_and_says_where_the_rest_is(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "notebooks/toy.py", "long", "--profile", "smoke"]) == 0  # a source path names it too
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 + 30 + 1 and out[-1].startswith("(30 of 45 rows; every row: ")
    assert out[2].split() == ["1", "0.1429"]


def test_show_errors_in_one_line(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "toy", "exposures", "--profile", "smoke"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "published no table 'exposures'" in err
    assert err.endswith("its tables: exposure_example, long, empty")
    assert main(["show", "toy", "long"]) == 2  # the default profile has no run of it
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("error: no run of toy at default") and "no run at default yet" in err
    assert main(["show", "other", "long", "--profile", "smoke"]) == 2
    assert "runs at smoke: toy" in capsys.readouterr().err
    assert main(["show", "toy", "empty", "--profile", "smoke"]) == 0
    assert capsys.readouterr().out.strip() == "toy [smoke] / empty: no rows"
