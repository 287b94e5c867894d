"""The CRT chapter's learning-rate tuning: each private trainer's DP-SGD learning rate, chosen from a grid by the
non-secret perplexity of the validation dialogues after its last epoch (the paper's Appendix A.3 tunes per trainer on
validation). The grid is walked from its smallest rate up and the walk stops at the first rate that does worse than
the one before it. The candidate of the chosen rate is the chapter's first-seed run itself (same settings, same cache
entry)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from .runs import DP_LR_GRID, MODELS, Run

TUNED = ("DPSGD", "CRT")  # S-DP's DP steps carry loss on secret tokens only: non-secret perplexity cannot choose them
CONVERGED = 0.02  # a run whose validation perplexity moved less than this (relative) over its last epoch has converged


def search(p: Any, gamma: float, train: Callable[[Run], dict]) -> dict[Run, dict]:
    """Per (model, tuned trainer), first-seed runs (CRT at Fig. 2's γ) at the model's grid of rates from the smallest
    up, until a rate's final validation perplexity is no better than the previous rate's (or undefined): run -> the
    info `train` returns (with its history)."""
    tried: dict[Run, dict] = {}
    for model, t in walks():
        tried |= walk(p, model, t, gamma, train)
    return tried


def walks() -> list[tuple[str, str]]:
    """The (model, tuned trainer) pairs whose rates `search` walks, each walk independent of the others."""
    return [(model, t) for model in MODELS for t in TUNED]


def walk(p: Any, model: str, t: str, gamma: float, train: Callable[[Run], dict]) -> dict[Run, dict]:
    """One walk of `search`: trainer `t` of `model` at the model's grid of rates from the smallest up, until a rate's
    final validation perplexity is no better than the previous rate's (or undefined)."""
    tried: dict[Run, dict] = {}
    previous = np.inf
    for lr in sorted(p[DP_LR_GRID[model]]):
        run = Run(model, t, None if t == "DPSGD" else gamma, p.seed, dp_lr=lr)
        tried[run] = train(run)
        final = tried[run]["history"][-1]["validation"]
        if not final < previous:
            break
        previous = final
    return tried


def tuning_table(infos: dict[Run, dict]) -> pd.DataFrame:
    """Per candidate and epoch: ε spent and non-secret validation perplexity; `chosen` marks the
    rate of lowest validation perplexity after the last epoch (a diverged run counts as infinite)."""
    rows = [
        {
            "model": run.model,
            "trainer": run.trainer,
            "dp_lr": run.dp_lr,
            "epoch": h["epoch"],
            "epsilon": h["epsilon"],
            "validation": h["validation"],
        }
        for run, info in infos.items()
        for h in info["history"]
    ]
    table = pd.DataFrame(rows)
    last = table[table.epoch == table.groupby(["model", "trainer", "dp_lr"]).epoch.transform("max")]
    score = last.validation.where(np.isfinite(last.validation), np.inf)
    best = score.groupby([last.model, last.trainer]).idxmin()
    chosen = set(zip(last.loc[best, "model"], last.loc[best, "trainer"], last.loc[best, "dp_lr"]))
    table["chosen"] = [key in chosen for key in zip(table.model, table.trainer, table.dp_lr)]
    return table


def chosen_rates(table: pd.DataFrame) -> dict[tuple[str, str], float]:
    """(model, trainer) -> the DP learning rate chosen on validation."""
    picked = table[table.chosen].drop_duplicates(["model", "trainer"])
    return {(m, t): float(lr) for m, t, lr in zip(picked.model, picked.trainer, picked.dp_lr)}


def choice_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per (model, trainer): every rate tried with its validation perplexity after the last epoch, the chosen rate and
    its perplexity, the chosen run's relative change over its last epoch (negative: still falling) and whether its size
    is below `CONVERGED`."""
    rows = []
    for (model, trainer), runs in table.groupby(["model", "trainer"], sort=False):
        final = runs[runs.epoch == runs.epoch.max()].set_index("dp_lr").validation
        pick = runs[runs.chosen].sort_values("epoch")
        curve = pick.validation.to_numpy()
        change = curve[-1] / curve[-2] - 1 if len(curve) > 1 else np.nan
        rows.append(
            {
                "model": model,
                "trainer": trainer,
                "tried": " · ".join(f"{lr:g}: {v:.1f}" for lr, v in final.items()),
                "chosen": float(pick.dp_lr.iloc[0]),
                "validation": float(curve[-1]),
                "epochs": len(curve),
                "last_epoch_change": change,
                "converged": bool(abs(change) < CONVERGED),
            }
        )
    return pd.DataFrame(rows)
