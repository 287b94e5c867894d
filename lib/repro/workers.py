"""Independent pieces of one notebook's work run side by side, one per core, each on a single thread.

On this book's small models one process on two threads is only 1.3 to 1.6 times as fast as on one (LeNet-1: an
epoch of Fashion-MNIST 6.2 s on two threads, 8.8 s on one; its BIM 6.2 s against 9.9 s), so two single-thread
processes get through independent trainings and attacks about 1.3 times as fast as one process on both cores. A
piece's result travels through the cache (its models and attack sets are written there, atomically), so a worker
returns nothing but its piece's seconds, and the notebook then loads what it needs as if it had computed it.

The workers are as many as the threads this notebook may use (REPRO_THREADS, as `repro book --jobs` sets it) and
never more than the pieces; with one the pieces run here, one after the other, on one thread, so a piece gives the
same bits whichever way it ran. Workers are spawned (a fresh interpreter: no forked torch state), their own
progress bars are off, and the notebook's bar counts finished pieces. A failure in a piece is raised here; an
interruption stops every worker. A script (not a notebook) that reaches `map_on_cores` needs the
`if __name__ == "__main__":` guard: a spawned worker imports the script's main module again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = ["in_fresh_processes", "map_on_cores", "one_thread", "workers_for"]


def workers_for(pieces: int) -> int:
    """Workers for `pieces` independent pieces: the threads this notebook may use, at most one per piece."""
    return max(1, min(pieces, int(os.environ.get("REPRO_THREADS", "2")), len(os.sched_getaffinity(0))))


def _start_worker() -> None:
    """A worker's set-up: one thread, deterministic kernels as the notebook has them (notebook.seed_everything), the
    mock Hub where the notebook has it."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1)
    import torch

    torch.set_num_threads(1)
    torch._C._set_deterministic_algorithms(True, warn_only=True)
    from .mockhub import install_from_env

    install_from_env()


def _spawned_pool(n: int, **options: Any) -> Any:
    """A pool of n spawned workers set up by _start_worker, their progress bars off: a spawned worker imports tqdm
    (through repro) before its initializer runs, and tqdm reads TQDM_DISABLE from the environment it starts with, so
    the workers are started with it set (and this process's environment is left as it was)."""
    import multiprocessing as mp

    before = os.environ.get("TQDM_DISABLE")
    os.environ["TQDM_DISABLE"] = "1"
    try:
        return mp.get_context("spawn").Pool(n, initializer=_start_worker, **options)
    finally:
        if before is None:
            del os.environ["TQDM_DISABLE"]
        else:
            os.environ["TQDM_DISABLE"] = before


@contextmanager
def one_thread() -> Iterator[None]:
    """This process computes on one thread (torch's and the BLAS and OpenMP pools') for the duration, as a worker
    does."""
    import torch
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    try:
        with threadpool_limits(limits=1):
            torch.set_num_threads(1)
            yield
    finally:
        torch.set_num_threads(before)


def _timed(fn: Callable[[Any], None], piece: Any) -> float:
    began = time.perf_counter()
    fn(piece)
    return time.perf_counter() - began


def map_on_cores(fn: Callable[[Any], None], pieces: Sequence[Any], desc: str) -> list[float]:
    """Run fn(piece) for every piece, side by side on one thread each (see the module's docstring); the seconds of
    each piece, in the order given. `fn` must be a module-level function and the pieces picklable."""
    from tqdm.auto import tqdm

    n = workers_for(len(pieces))
    bar = tqdm(total=len(pieces), desc=desc, leave=False)
    try:
        if n == 1:
            with one_thread():
                seconds = []
                for piece in pieces:
                    seconds.append(_timed(fn, piece))
                    bar.update()
                return seconds
        with _spawned_pool(n) as pool:
            seconds = [0.0] * len(pieces)
            jobs = pool.imap_unordered(_indexed, [(i, fn, p) for i, p in enumerate(pieces)])
            for i, took in jobs:
                seconds[i] = took
                bar.update()
            return seconds
    finally:
        bar.close()


def _indexed(job: tuple[int, Callable[[Any], None], Any]) -> tuple[int, float]:
    i, fn, piece = job
    return i, _timed(fn, piece)


def in_fresh_processes(fn: Callable[[Any], Any], pieces: Sequence[Any], desc: str) -> list[Any]:
    """fn(piece) for every piece, one after the other, each in an interpreter spawned for it alone (one thread, set up
    as map_on_cores's workers are), nothing else of this notebook running beside it; fn's results, in the order
    given. For measurements whose process is a unit of their own: a timing repeated within one process shares its
    memory layout and caches, and another process can differ by more than the repeats' spread. `fn` must be a
    module-level function and the pieces picklable."""
    from tqdm.auto import tqdm

    out = []
    with _spawned_pool(1, maxtasksperchild=1) as pool, tqdm(total=len(pieces), desc=desc, leave=False) as bar:
        for result in pool.imap(fn, pieces):
            out.append(result)
            bar.update()
    return out
