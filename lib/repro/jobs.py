"""Notebooks run side by side (`python -m repro book --jobs N`): each in a child `python -m repro run` process pinned
to its own cores, with REPRO_THREADS set to their number, so two notebooks never compute on one core.

The CPUs this process may use are split into N equal sets (N at most their count); a notebook takes a free set, and
its kernel inherits the child's affinity. The child's progress lines (a log's lines: its stderr is a pipe) are
passed on whole, each starting with the notebook's name. The longest notebooks start first (their last run's
seconds, when a result of an earlier build is there), which shortens the whole build. A failed notebook does not
stop the others; the failures are reported together at the end. An interruption stops every child (each discards
its run in progress, as one run does)."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import IO

__all__ = ["JobFailed", "cpu_sets", "run_side_by_side"]


class JobFailed(Exception):
    """One notebook's child process failed: `stem`, its exit status `code`, its last line `last`."""

    def __init__(self, stem: str, code: int, last: str) -> None:
        super().__init__(f"{stem} (exit {code}): {last}")
        self.stem, self.code, self.last = stem, code, last


def cpu_sets(jobs: int, cpus: Iterable[int] | None = None) -> list[frozenset[int]]:
    """`jobs` disjoint, equal sets of the CPUs this process may use (or `cpus`); the remainder stays unused.
    ValueError when `jobs` is below 1 or above the CPU count."""
    available = sorted(os.sched_getaffinity(0) if cpus is None else cpus)
    if not 1 <= jobs <= len(available):
        raise ValueError(
            f"--jobs {jobs}: give 1 to {len(available)} (the CPUs this process may use); "
            "each notebook needs a core of its own"
        )
    per = len(available) // jobs
    return [frozenset(available[i * per : (i + 1) * per]) for i in range(jobs)]


def _pass_lines(stem: str, stream: IO[str], out: IO[str], last: list[str]) -> None:
    """Copy the child's lines to `out`, each starting with the notebook's name; keep the last non-empty one."""
    for raw in stream:
        for line in raw.replace("\r", "\n").splitlines():
            line = line.strip()
            if not line:
                continue
            last[:] = [line]
            if line.startswith(f"{stem} ["):  # the child's own closing line; the caller prints its own
                continue
            out.write(line if line.startswith(stem) else f"{stem}: {line}")
            out.write("\n")
            out.flush()


class _Children:
    """The running child processes, so that an interruption can stop them all."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.procs: dict[str, subprocess.Popen] = {}
        self.stopping = False

    def start(self, stem: str, command: list[str], env: dict[str, str], cpus: frozenset[int]) -> subprocess.Popen:
        with self.lock:
            if self.stopping:
                raise KeyboardInterrupt
            proc = subprocess.Popen(
                command,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                start_new_session=True,  # a terminal's Ctrl-C reaches this process, which stops the children itself
            )
            try:
                os.sched_setaffinity(proc.pid, cpus)  # before the child imports anything heavy; its kernel inherits
            except OSError:
                pass  # the child exited already: its status says why
            self.procs[stem] = proc
            return proc

    def done(self, stem: str) -> None:
        with self.lock:
            self.procs.pop(stem, None)

    def stop_all(self, grace: float = 30.0) -> None:
        """SIGTERM to every child's process group (the child discards its run and exits), SIGKILL after `grace` s."""
        with self.lock:
            self.stopping = True
            procs = list(self.procs.values())
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except OSError:
                pass
        for proc in procs:
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                proc.wait()


def run_side_by_side(
    stems: list[str],
    command: Callable[[str], list[str]],
    jobs: int,
    env: dict[str, str] | None = None,
    out: IO[str] | None = None,
) -> Iterable[tuple[str, JobFailed | None]]:
    """Run `command(stem)` for every stem, `jobs` at a time on disjoint cores, in the order given; yield (stem, None)
    as each succeeds and (stem, JobFailed) as each fails, in the order they finish."""
    out = out or sys.stderr
    free: queue.Queue[frozenset[int]] = queue.Queue()
    for cpus in cpu_sets(jobs):
        free.put(cpus)
    children = _Children()

    def one(stem: str) -> JobFailed | None:
        cpus = free.get()
        try:
            child_env = {**os.environ, **(env or {}), "REPRO_THREADS": str(len(cpus))}
            proc = children.start(stem, command(stem), child_env, cpus)
            last: list[str] = []
            assert proc.stdout is not None
            _pass_lines(stem, proc.stdout, out, last)
            code = proc.wait()
            children.done(stem)
            return None if code == 0 else JobFailed(stem, code, last[0] if last else "no output")
        finally:
            free.put(cpus)

    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="repro-job")
    futures: dict[Future, str] = {}
    try:
        futures = {pool.submit(one, stem): stem for stem in stems}
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in sorted(finished, key=lambda f: stems.index(futures[f])):
                yield futures[future], future.result()
    except BaseException:
        children.stop_all()
        for future in futures:
            future.cancel()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
