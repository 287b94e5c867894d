"""Shared fixtures: an isolated runs/ directory, offline Hub settings, smoke results of every notebook."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
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
# Every figure a notebook kernel shows or glues is checked (`repro.figure_checks`): texts printed over each other, a
# legend or note on the data, a point outside its axes, a line missing from the legend fail the cell that drew it, so a
# smoke run, and every test reading it, fails on a figure that does not read.
os.environ.setdefault("REPRO_FIGURE_CHECK", "1")

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


# ---------------------------------------------------------------------------------------------------- two workers
# `make test` runs the suite on two pytest-xdist workers (`-n 2 --dist loadgroup`), one per core, and never trains two
# models at once: every test that trains or attacks a model, or runs a chapter (which trains), is in the `training`
# group, which one worker runs alone, in collection order (the book's smoke runs first). The other worker takes the
# rest: statistics, metrics, parameters, the runner on the metrics chapter (inference only) and the like. A test
# outside the group that computes a gradient in its own process fails, naming itself (`_no_gradients`); a test whose
# training happens in a subprocess or kernel of its own must be listed here or marked `trains`.
TRAINING_GROUP = "training"
TRAINING_FILES = frozenset(
    {
        "test_book.py",  # every chapter at smoke, in kernels
        "test_sessions.py",  # the exercises: chapters at smoke
        "test_mockhub.py",  # every chapter at mock paper
        "test_notebooks.py",  # the chapters' smoke tables
        "test_determinism.py",  # trainings in fresh processes
        "test_mink_distributed.py",  # a gloo training in two processes
    }
)


def trains(item: pytest.Item) -> bool:
    """Whether a test trains (or attacks, or runs a chapter): its file, the smoke runs it reads, or its mark."""
    return (
        item.path.name in TRAINING_FILES
        or "smoke_results" in getattr(item, "fixturenames", ())
        or item.get_closest_marker("trains") is not None
    )


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if trains(item):
            item.add_marker(pytest.mark.xdist_group(TRAINING_GROUP))


@pytest.hookimpl(trylast=True)  # after xdist has added the group to the node ids
def pytest_collection_finish(session: pytest.Session) -> None:
    """On a worker of `--dist loadgroup`, every training test carries the group in its id; if this pytest-xdist could
    not add it (pytest 9.2 changed how node ids are kept), the tests would be spread over both workers: stop."""
    if not (os.environ.get("PYTEST_XDIST_WORKER") and session.config.getvalue("loadgroup")):
        return
    lost = [item.nodeid for item in session.items if trains(item) and not item.nodeid.endswith(f"@{TRAINING_GROUP}")]
    if lost:
        raise pytest.UsageError(
            f"pytest-xdist did not group {len(lost)} training tests (first: {lost[0]}); "
            "install the pytest and pytest-xdist of constraints.txt"
        )


class TrainsOutsideTheGroup(RuntimeError):
    """A test outside the training group computed a gradient."""


@contextmanager
def _backward_replaced(replacement) -> Iterator[None]:
    """torch's backward and grad go through `replacement(original)` for the duration. Both (and `Tensor.backward`)
    reach the autograd engine through one private function of `torch.autograd`, which is replaced here: replacing the
    public functions themselves puts one object under two names that torch._dynamo's rule table keeps apart, and its
    first lookup (transformers triggers one on import) then fails with "Duplicate torch object"."""
    import torch.autograd

    saved = torch.autograd._engine_run_backward
    torch.autograd._engine_run_backward = replacement(saved)
    try:
        yield
    finally:
        torch.autograd._engine_run_backward = saved


def _no_gradients(nodeid: str) -> AbstractContextManager:
    """torch's backward and grad raise for the duration of one test."""

    def refuse(*args, **kwargs):
        raise TrainsOutsideTheGroup(
            f"{nodeid} computes a gradient outside the training group, so it could train beside another test: "
            "mark it `trains` or list its file in conftest.TRAINING_FILES"
        )

    return _backward_replaced(lambda saved: refuse)


def _guarded(item: pytest.Item) -> AbstractContextManager:
    """No gradient for a test outside the training group; nothing for one inside it."""
    return nullcontext() if trains(item) else _no_gradients(item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:  # its fixtures: a fixture may train too
    with _guarded(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with _guarded(item):
        yield


def _say(config: pytest.Config, line: str) -> None:
    """A line in the terminal or CI log even while pytest captures output (where a long suite spends its time). An
    xdist worker has no terminal: its line goes to its standard error, which is the log's."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if capture is None:
        return
    with capture.global_and_fixture_disabled():
        if os.environ.get("PYTEST_XDIST_WORKER"):
            print(line, file=sys.stderr, flush=True)
        elif reporter is not None:
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


_EXERCISES: dict[tuple[str, str], tuple[dict, int]] = {}  # (stem, override) -> (its run, gradients it computed)


def _counting_gradients(count: list[int]) -> AbstractContextManager:
    """Every backward pass or `torch.autograd.grad` in this process adds one to `count[0]`."""

    def counting(saved):
        def counted(*args, **kwargs):
            count[0] += 1
            return saved(*args, **kwargs)

        return counted

    return _backward_replaced(counting)


def _exercise(stem: str, override: dict) -> tuple[dict, int]:
    from repro.runner import execute_here

    key = (stem, json.dumps(override, sort_keys=True))
    if key not in _EXERCISES:
        count = [0]
        with _counting_gradients(count):
            result = execute_here(stem, "smoke", override)
        _EXERCISES[key] = result, count[0]
    return _EXERCISES[key]


def exercise_run(stem: str, override: dict) -> dict:
    """A reading-group exercise's smoke run for the book's guides and the exercise tests, executed once in this
    process (`execute_here`: no kernel, no result cache), shared by both; with no override, the chapter's own smoke
    run through the runner (cached: it also puts the plain run back in runs/smoke/, which the book stages). One
    exercise also runs in a kernel through the runner, as a participant runs it, and must give the same answer
    (tests/test_sessions.py)."""
    from repro.runner import run

    return run(stem, "smoke") if not override else _exercise(stem, override)[0]


def exercise_gradients(stem: str, override: dict) -> int:
    """How many gradients the exercise's shared run computed (`exercise_run`; run now if it has not run): an exercise
    that changes only how cached models are scored computes none (tests/test_cache_reuse.py)."""
    return _exercise(stem, override)[1]


# what a kernel sets once it has imported repro (notebook.seed_everything), and every worker too (repro.workers)
KERNEL_FLAGS = "import repro\nimport torch\ntorch._C._set_deterministic_algorithms(True, warn_only=True)"


def run_per_thread_count(tmp_path: Path, script: str, timeout: int) -> dict[str, tuple[Path, str]]:
    """Run `script` in a fresh Python process (as a notebook kernel runs the library: it imports repro first) once
    with REPRO_THREADS 2 (two workers of repro.workers) and once with 1 (one process, one thread), each into an
    empty data folder of its own; per thread count, (that folder, the script's stdout). Skips on one CPU."""
    import subprocess

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs")
    out = {}
    for threads in ("2", "1"):
        root = tmp_path / threads
        env = {**os.environ, "REPRO_DATA": str(root), "REPRO_THREADS": threads, "TQDM_DISABLE": "1"}
        kernel = f"{KERNEL_FLAGS}\n{script}"  # a notebook kernel's deterministic kernels, which every worker sets too
        done = subprocess.run([sys.executable, "-c", kernel], env=env, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, done.stderr[-2000:]
        out[threads] = root, done.stdout
    return out


# ---------------------------------------------------------------------------------------------------- where time goes
# At the end of every run, the seconds its tests took (set-up, call and tear-down) by worker and by file, the training
# group apart: the suite's wall time is about that of its busiest worker, and a CI log then says which one and why.
_SECONDS: dict[tuple[str, ...], float] = {}  # (worker, group) and ("file", group, file) -> seconds


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    node = getattr(report, "node", None)
    worker = getattr(getattr(node, "gateway", None), "id", None) or os.environ.get("PYTEST_XDIST_WORKER", "main")
    group = TRAINING_GROUP if report.nodeid.endswith(f"@{TRAINING_GROUP}") else "other"
    file = report.nodeid.split("::")[0]
    for key in ((worker, group), ("file", group, file)):
        _SECONDS[key] = _SECONDS.get(key, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    seconds = _SECONDS
    workers = sorted({k[0] for k in seconds if k[0] != "file"})
    if not workers:
        return
    terminalreporter.section("seconds of tests by worker and group")
    for worker in workers:
        parts = [
            f"{group} {seconds[(worker, group)]:.0f} s"
            for group in (TRAINING_GROUP, "other")
            if (worker, group) in seconds
        ]
        terminalreporter.write_line(f"{worker}: " + ", ".join(parts))
    for group in (TRAINING_GROUP, "other"):
        files = sorted(((s, k[2]) for k, s in seconds.items() if k[0] == "file" and k[1] == group), reverse=True)[:8]
        if files:
            terminalreporter.write_line(
                f"{group}, slowest files: " + ", ".join(f"{f.removeprefix('tests/')} {s:.0f} s" for s, f in files)
            )
