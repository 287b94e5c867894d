"""repro.workers: independent pieces of a notebook's work side by side, one thread each."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from repro import workers


def _record(piece: tuple[str, int]) -> None:
    """Write which process ran the piece, on how many torch threads."""
    import torch

    folder, i = piece
    if i < 0:
        raise RuntimeError(f"piece {i} failed")
    seen = {"pid": os.getpid(), "threads": torch.get_num_threads(), "tqdm_disable": os.environ.get("TQDM_DISABLE")}
    Path(folder, f"{i}.json").write_text(json.dumps(seen))


def _done(folder: Path) -> dict[int, dict]:
    return {int(p.stem): json.loads(p.read_text()) for p in folder.glob("*.json")}


def test_pieces_run_in_as_many_single_thread_workers_as_threads(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("REPRO_THREADS", "2")
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs")
    assert workers.workers_for(5) == 2 and workers.workers_for(1) == 1
    seconds = workers.map_on_cores(_record, [(str(tmp_path), i) for i in range(4)], "test")
    done = _done(tmp_path)
    assert sorted(done) == [0, 1, 2, 3] and len(seconds) == 4 and all(s >= 0 for s in seconds)
    assert all(r["threads"] == 1 for r in done.values())
    assert os.getpid() not in {r["pid"] for r in done.values()}  # spawned workers, not this process
    # the workers' own progress bars are off (they started with TQDM_DISABLE), and this process's environment is kept
    assert all(r["tqdm_disable"] == "1" for r in done.values()) and "TQDM_DISABLE" not in os.environ


def test_one_thread_runs_the_pieces_here_on_one_thread(tmp_path: Path, monkeypatch) -> None:
    import torch

    monkeypatch.setenv("REPRO_THREADS", "1")
    before = torch.get_num_threads()
    workers.map_on_cores(_record, [(str(tmp_path), i) for i in range(2)], "test")
    done = _done(tmp_path)
    assert {r["pid"] for r in done.values()} == {os.getpid()} and all(r["threads"] == 1 for r in done.values())
    assert torch.get_num_threads() == before  # restored


@pytest.mark.parametrize("threads", ["1", "2"])
def test_a_failing_piece_is_raised_here(tmp_path: Path, monkeypatch, threads: str) -> None:
    monkeypatch.setenv("REPRO_THREADS", threads)
    with pytest.raises(RuntimeError, match="piece -1 failed"):
        workers.map_on_cores(_record, [(str(tmp_path), 0), (str(tmp_path), -1)], "test")


def _whoami(i: int) -> tuple[int, int, int]:
    """The piece, the process that ran it and its torch threads."""
    import torch

    return i, os.getpid(), torch.get_num_threads()


def test_fresh_processes_run_each_piece_alone_in_a_process_of_its_own_and_return_its_result() -> None:
    out = workers.in_fresh_processes(_whoami, [0, 1, 2], "test")
    assert [i for i, _, _ in out] == [0, 1, 2]  # fn's results, in the order given
    pids = [pid for _, pid, _ in out]
    assert len(set(pids)) == 3 and os.getpid() not in pids and all(t == 1 for _, _, t in out)
