"""`python -m repro book --jobs N`: notebooks side by side, each on cores of its own, with the tables of one after the
other."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from repro import jobs
from repro.runner import compare_runs

ROOT = Path(__file__).resolve().parents[1]

# A notebook that reports the CPUs and threads it computes on, and trains a small torch model on them.
PROBE = """# %% tags=["parameters"]
profile = "default"  # smoke | default | paper
seed = None  # random seed

# %%
import repro
from repro import Param

P = repro.start(globals(), seed=Param(int, 0, low=0, high=2**32 - 1))

# %%
import os

import torch

from repro.results import publish

torch.manual_seed(P.seed)
x = torch.randn(512, 64)
y = (x[:, :8].sum(1) > 0).long()
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(50):
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
publish("fit", [{"loss": float(loss), "weight_sum": float(sum(p.sum() for p in model.parameters()))}])
publish("where", [{"cpus": sorted(os.sched_getaffinity(0)), "threads": torch.get_num_threads()}])
"""


def test_cpu_sets_split_the_cpus_into_equal_disjoint_sets() -> None:
    assert jobs.cpu_sets(1, range(4)) == [frozenset({0, 1, 2, 3})]
    assert jobs.cpu_sets(2, range(4)) == [frozenset({0, 1}), frozenset({2, 3})]
    assert jobs.cpu_sets(3, [0, 2, 5, 7, 9]) == [frozenset({0}), frozenset({2}), frozenset({5})]
    assert jobs.cpu_sets(2, [3, 1]) == [frozenset({1}), frozenset({3})]


@pytest.mark.parametrize("bad", [0, -1, 3])
def test_cpu_sets_refuse_more_jobs_than_cpus_or_none(bad: int) -> None:
    with pytest.raises(ValueError, match=rf"--jobs {bad}: give 1 to 2 "):
        jobs.cpu_sets(bad, [0, 1])


def test_the_book_refuses_more_jobs_than_cpus_in_one_line() -> None:
    too_many = len(os.sched_getaffinity(0)) + 1
    done = subprocess.run(
        [sys.executable, "-m", "repro", "book", "--profile", "smoke", "--jobs", str(too_many)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: --jobs {too_many}: give 1 to {too_many - 1} (the CPUs this process may use); "
        "each notebook needs a core of its own"
    ]


def test_child_lines_are_passed_on_whole_and_named() -> None:
    out, last = io.StringIO(), []
    jobs._pass_lines("nb", io.StringIO("nb · cell 1/3\rnb · cell 2/3\n\nerror: bad\nnb [smoke]: 3 tables\n"), out, last)
    assert out.getvalue().splitlines() == ["nb · cell 1/3", "nb · cell 2/3", "nb: error: bad"]
    assert last == ["nb [smoke]: 3 tables"]


def test_a_failed_notebook_is_reported_and_the_others_finish() -> None:
    commands = {"ok": [sys.executable, "-c", "print('ok')"], "bad": [sys.executable, "-c", "raise SystemExit(3)"]}
    out = io.StringIO()
    finished = dict(jobs.run_side_by_side(["bad", "ok"], commands.__getitem__, jobs=1, out=out))
    assert finished["ok"] is None
    assert isinstance(finished["bad"], jobs.JobFailed) and finished["bad"].code == 3


@pytest.mark.trains
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_two_notebooks_side_by_side_give_the_tables_of_one_after_the_other(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    sources = {"metrics_by_hand": "metrics_by_hand", "probe": str(probe)}
    base = os.environ.copy()

    def command(stem: str) -> list[str]:
        return [sys.executable, "-m", "repro", "run", "--profile", "smoke", "--force", sources[stem]]

    env = {"REPRO_RUNS": str(tmp_path / "side")}
    finished = dict(jobs.run_side_by_side(list(sources), command, jobs=2, env=env, out=io.StringIO()))
    assert finished == {"metrics_by_hand": None, "probe": None}
    for stem in sources:  # one after the other, on one thread each as side by side
        subprocess.run(command(stem), check=True, env={**base, "REPRO_RUNS": str(tmp_path / "serial")}, timeout=600)

    side, serial = tmp_path / "side" / "smoke", tmp_path / "serial" / "smoke"
    where = json.loads((side / "probe.json").read_text())["tables"]["where"][0]
    assert where["threads"] == 1 and len(where["cpus"]) == 1
    assert compare_runs(side / "metrics_by_hand.json", serial / "metrics_by_hand.json") == []
    fit = [json.loads((d / "probe.json").read_text())["tables"]["fit"] for d in (side, serial)]
    assert fit[0] == fit[1]
