"""Shared fixtures: an isolated runs/ directory, offline Hub settings, smoke results of every notebook."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p.stem for p in (ROOT / "notebooks").glob("*.py"))

# The default and smoke profiles must never reach the Hub: any attempt fails loudly.
for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ[var] = "1"


@pytest.fixture(scope="session", autouse=True)
def isolated_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Point REPRO_RUNS at a temporary directory so tests never touch the user's runs/."""
    runs = tmp_path_factory.mktemp("runs")
    os.environ["REPRO_RUNS"] = str(runs)
    return runs


class _LazyRuns(dict):
    """Smoke results by notebook, each notebook executed on first access (so `-k rmd` runs only that notebook)."""

    def __missing__(self, stem: str) -> dict:
        from repro.runner import run

        if stem not in NOTEBOOKS:
            raise KeyError(stem)
        self[stem] = run(stem, "smoke")
        return self[stem]

    def items(self):  # every notebook, in book order
        return [(stem, self[stem]) for stem in NOTEBOOKS]


@pytest.fixture(scope="session")
def smoke_results(isolated_runs: Path) -> dict[str, dict]:
    """Every notebook executed once at the smoke profile through the runner (lazily, on first access)."""
    return _LazyRuns()
