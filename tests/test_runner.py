"""The runner: results file, cache, exit code 2 on bad parameters, atomic writes, prepare-only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import NOTEBOOKS, ROOT
from repro import atomic
from repro.runner import run, toc_notebooks

REQUIRED_KEYS = {"notebook", "profile", "params", "tables", "seconds", "versions"}


def cli(*args: str) -> subprocess.CompletedProcess:
    """Run `python -m repro ...` as a user would."""
    return subprocess.run([sys.executable, "-m", "repro", *args], capture_output=True, text=True,
                          cwd=ROOT, env=os.environ.copy(), timeout=600)


def error_lines(stderr: str) -> list[str]:
    """The runner's own error lines (the kernel may add its warnings)."""
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def test_results_file_has_the_documented_shape(smoke_results, isolated_runs: Path) -> None:
    for stem in NOTEBOOKS:
        data = json.loads((isolated_runs / "smoke" / f"{stem}.json").read_text())
        assert REQUIRED_KEYS <= set(data)
        assert data["notebook"] == stem and data["profile"] == "smoke"
        assert data["params"]["profile"] == "smoke"
        assert data["seconds"] > 0 and data["versions"]["python"].startswith("3.")
        assert "params" in data["tables"] and "verdict" in data["tables"]
        for records in data["tables"].values():
            assert isinstance(records, list) and all(isinstance(r, dict) for r in records)
        assert (isolated_runs / "smoke" / f"{stem}.ipynb").exists()


def test_every_notebook_is_in_the_book() -> None:
    assert sorted(toc_notebooks()) == NOTEBOOKS


def test_cache_returns_the_same_result_at_once(smoke_results) -> None:
    stem = NOTEBOOKS[0]
    began = time.perf_counter()
    again = run(stem, "smoke")
    assert again["cached"] is True
    assert time.perf_counter() - began < 5
    assert again["tables"] == smoke_results[stem]["tables"]


def test_fixed_seeds_give_identical_tables(smoke_results) -> None:
    fresh = run("metrics_by_hand", "smoke", force=True)
    assert fresh["cached"] is False
    assert fresh["tables"] == smoke_results["metrics_by_hand"]["tables"]


def test_override_changes_params_and_misses_the_cache(smoke_results, isolated_runs: Path) -> None:
    result = run("metrics_by_hand", "smoke", {"toy_n": 60, "n_sentences": 2})
    assert result["cached"] is False
    assert result["params"]["toy_n"] == 60
    assert len(result["tables"]["min_k_sentences"]) == 2


@pytest.mark.parametrize("args, needle", [
    (["-p", "toy_n", "5"], "parameter 'toy_n': 5 is out of range"),
    (["-p", "toy_n", "many"], "parameter 'toy_n': got 'many' (str), expected int"),
    (["-p", "lm_source", "ftp"], "parameter 'lm_source': got 'ftp', expected one of 'local', 'hub'"),
    (["-p", "bogus", "1"], "unknown parameter 'bogus'"),
])
def test_bad_parameter_exits_2_and_keeps_earlier_results(smoke_results, isolated_runs: Path, args, needle) -> None:
    run("metrics_by_hand", "smoke")  # make sure the stored result is the plain smoke one
    stored = isolated_runs / "smoke" / "metrics_by_hand.json"
    before = stored.read_bytes()
    proc = cli("run", "metrics_by_hand", "--profile", "smoke", *args)
    assert proc.returncode == 2
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert stored.read_bytes() == before


@pytest.mark.parametrize("args", [["run", "no_such_notebook"], ["run", "metrics_by_hand", "--profile", "huge"],
                                  ["run", "metrics_by_hand", "-p", "profile", "smoke"]])
def test_bad_command_line_exits_2(args) -> None:
    proc = cli(*args)
    assert proc.returncode == 2
    assert proc.stderr.strip()


@pytest.mark.parametrize("stem", NOTEBOOKS)
def test_paper_profile_parameters_check_without_running(stem: str, isolated_runs: Path) -> None:
    proc = cli("run", stem, "--profile", "paper", "--prepare-only")
    assert proc.returncode == 0, proc.stderr
    params = json.loads(proc.stdout)
    assert params["profile"] == "paper"
    assert not (isolated_runs / "paper").exists()


def test_interrupted_write_leaves_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "result.json"
    atomic.write_json(target, {"v": 1})
    with pytest.raises(RuntimeError):
        with atomic.atomic_path(target) as tmp:
            tmp.write_text('{"v": 2, "half')
            raise RuntimeError("killed mid-write")
    assert json.loads(target.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_plain_papermill_and_collect_work(tmp_path: Path) -> None:
    src = tmp_path / "nb.ipynb"
    out = tmp_path / "out.ipynb"
    subprocess.run([sys.executable, "-m", "jupytext", "--to", "ipynb", str(ROOT / "notebooks" / "metrics_by_hand.py"),
                    "-o", str(src)], check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "papermill", str(src), str(out), "-p", "profile", "smoke",
                    "-p", "toy_n", "100", "--cwd", str(ROOT)], check=True, capture_output=True, timeout=600)
    proc = cli("collect", str(out))
    assert proc.returncode == 0, proc.stderr
    tables = json.loads(proc.stdout)
    params = {r["parameter"]: r["value"] for r in tables["params"]}
    assert params["profile"] == "smoke" and params["toy_n"] == 100 and params["n_sentences"] == 4
    assert [r["apfd"] for r in tables["apfd_icsm99"]] == [0.5, 0.64, 0.84]


def test_atomic_files_get_ordinary_permissions(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    atomic.write_json(target, {"v": 1})
    assert target.stat().st_mode & 0o644 == 0o644
