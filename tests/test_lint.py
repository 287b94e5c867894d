"""Hygiene: ruff's lint rules (configured in pyproject.toml) hold over the library, the notebooks and the tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def ruff() -> str:
    """The ruff executable of this environment."""
    beside = Path(sys.executable).parent / "ruff"
    return str(beside) if beside.exists() else shutil.which("ruff") or "ruff"


def test_ruff_check_is_clean() -> None:
    proc = subprocess.run(
        [ruff(), "check", "--no-cache", "lib", "notebooks", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_ruff_format_is_clean() -> None:
    proc = subprocess.run(
        [ruff(), "format", "--check", "--no-cache", "lib", "notebooks", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_ruff_reports_a_planted_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n")  # an unused import: the check above must be able to fail
    proc = subprocess.run(
        [ruff(), "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1 and "F401" in proc.stdout
