"""Shared fixtures: an isolated runs/ directory, offline Hub settings, smoke results of every notebook."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

# OpenMP threads sleep at their barriers in every test process and notebook kernel (they inherit it), whatever the
# load when repro is first imported. A CI machine's load is unknown and may arrive after that moment; with OpenMP's
# spinning default, a smoke run of rmd_near_ood beside two busy processes took 319 s against 107 s with PASSIVE
# (idle: 83 s against 66 s), on this project's 2-core machine. The fresh-clone CI of 073ef2e, which left the choice
# to the load at import, ran past its 90 minutes inside the book's smoke build.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Every notebook kernel the suite starts computes on one thread (`repro.start` reads REPRO_THREADS; the book's runs
# use 2). One thread has no OpenMP barrier to wait at, so a load arriving mid-run cannot make it crawl as spinning
# threads do, and it is faster than two sleeping ones: smoke runs from empty caches on this project's 2-core machine
# (an AVX2-only EPYC, idle, 2026-11-27), one thread against two with PASSIVE: crt_canary_exposure 95 s against 129 s,
# rmd_near_ood 76 s against 87 s, deepgini_apfd 49 s against 54 s, mink_contamination 93 s against 95 s.
os.environ.setdefault("REPRO_THREADS", "1")

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


def error_lines(stderr: str) -> list[str]:
    """The runner's own error lines (the kernel may add its warnings, the runner its progress lines in a log)."""
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The machine facts that decide the suite's speed, at the top of every log (a slow CI says why)."""
    try:
        quota = Path("/sys/fs/cgroup/cpu.max").read_text().strip()
    except OSError:
        quota = "none"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return [
        f"cpus: {os.cpu_count()} (affinity {len(os.sched_getaffinity(0))}, cgroup cpu.max {quota}); load {load}",
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}; REPRO_THREADS={os.environ.get('REPRO_THREADS')}",
    ]


def _say(config: pytest.Config, line: str) -> None:
    """A line in the terminal or CI log even while pytest captures output (where a long suite spends its time)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(line)


class _LazyRuns(dict):
    """Smoke results by notebook, each notebook executed on first access (so `-k rmd` runs only that notebook)."""

    def __init__(self, config: pytest.Config) -> None:
        super().__init__()
        self.config = config

    def __missing__(self, stem: str) -> dict:
        from repro.runner import run

        if stem not in NOTEBOOKS:
            raise KeyError(stem)
        start = time.monotonic()
        self[stem] = run(stem, "smoke")
        _say(self.config, f"[smoke run of {stem}: {time.monotonic() - start:.0f} s]")
        return self[stem]

    def items(self):  # every notebook, in book order
        return [(stem, self[stem]) for stem in NOTEBOOKS]


@pytest.fixture(scope="session")
def smoke_results(isolated_runs: Path, pytestconfig: pytest.Config) -> dict[str, dict]:
    """Every notebook executed once at the smoke profile through the runner (lazily, on first access)."""
    return _LazyRuns(pytestconfig)
