"""Where the project keeps data, caches and run outputs."""

from __future__ import annotations

import os
from pathlib import Path


def project_root() -> Path:
    """The checkout holding pyproject.toml (editable install), else the current directory."""
    here = Path(__file__).resolve().parents[2]
    return here if (here / "pyproject.toml").exists() else Path.cwd()


def data_dir() -> Path:
    """Directory for downloaded data and converted models (REPRO_DATA overrides)."""
    return Path(os.environ.get("REPRO_DATA", project_root() / "data"))


def runs_dir() -> Path:
    """Directory for executed notebooks and results JSON (REPRO_RUNS overrides)."""
    return Path(os.environ.get("REPRO_RUNS", project_root() / "runs"))


def notebooks_dir() -> Path:
    """Directory of the jupytext py:percent notebook sources."""
    return project_root() / "notebooks"
