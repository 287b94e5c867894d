"""The CRT chapter's learning-rate tuning: each private trainer's DP-SGD learning rate, chosen from a grid by the
non-secret perplexity of the validation dialogues after its last epoch (the paper's Appendix A.3 tunes per trainer on
validation). The grid is walked both ways from its middle rate: the neighbours of the best rate so far are tried until
both are worse (the best is then interior) or the best sits at an end of the grid (said in table dp_tuning). The
chosen rate is then trained to the register's convergence criterion (`lengthen`: its epochs doubled while that gains
CONVERGED or more). The candidate chosen is the chapter's first-seed run itself (same settings, same cache entry)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from .runs import DP_LR_GRID, MODELS, SDP_MODELS, Run, config

# S-DP too: its DP steps carry loss on secret tokens only, but their noise reaches every weight, so the non-secret
# validation perplexity measures what a rate costs
TUNED = ("DPSGD", "CRT", "S-DP")
# the γ each trainer is tuned at where it is not Fig. 2's (CRT's): DPSGD has none, S-DP its perfect policy (γ = 0), the
# run Fig. 2 draws per epoch
WALK_GAMMA = {"DPSGD": None, "S-DP": 0.0}
CONVERGED = 0.02  # a run whose validation perplexity moved less than this (relative) over its last epoch has converged


def search(p: Any, gamma: float, train: Callable[[Run], dict]) -> dict[Run, dict]:
    """Every walk's first-seed runs (CRT at Fig. 2's γ, S-DP at 0): run -> the info `train` returns (with its
    history)."""
    tried: dict[Run, dict] = {}
    for model, t in walks():
        tried |= walk(p, model, t, gamma, train)
    return tried


def walks() -> list[tuple[str, str]]:
    """The (model, tuned trainer) pairs whose rates `search` walks, each walk independent of the others (S-DP on the
    models that train it)."""
    return [(model, t) for model in MODELS for t in TUNED if t != "S-DP" or model in SDP_MODELS]


def start(grid: list[float]) -> int:
    """Where a walk starts: the grid's middle rate (the lower of the two middle ones)."""
    return (len(grid) - 1) // 2


def walk(
    p: Any,
    model: str,
    t: str,
    gamma: float,
    train: Callable[[Run], dict],
    epsilon: float | None = None,
    begin: float | None = None,
) -> dict[Run, dict]:
    """One walk of `search`: trainer `t` of `model` (at DP-SGD target ε `epsilon`, the profile's when None) from the
    middle of the model's grid of rates (or from rate `begin`), then at both neighbours of the best rate so far,
    until both are tried and worse or the best is at an end of the grid. A run whose final validation perplexity is
    undefined (diverged) counts as worst."""
    grid = sorted(p[DP_LR_GRID[model]])
    scores: dict[int, float] = {}
    tried: dict[Run, dict] = {}

    def attempt(i: int) -> None:
        run = Run(model, t, WALK_GAMMA.get(t, gamma), p.seed, dp_lr=grid[i], epsilon=epsilon)
        tried[run] = train(run)
        final = tried[run]["history"][-1]["validation"]
        scores[i] = final if np.isfinite(final) else np.inf

    best = start(grid) if begin is None else grid.index(begin)
    attempt(best)
    while True:
        for i in (best - 1, best + 1):
            if 0 <= i < len(grid) and i not in scores:
                attempt(i)
        better = min(scores, key=lambda i: (scores[i], i))
        if better == best:
            chosen = next(r for r in tried if r.dp_lr == grid[best])
            return tried | lengthen(p, chosen, tried[chosen], train)
        best = better


def final(info: dict) -> float:
    """A run's validation perplexity after its last epoch (a diverged run's counts as infinite)."""
    v = info["history"][-1]["validation"]
    return v if np.isfinite(v) else np.inf


def lengthen(p: Any, run: Run, info: dict, train: Callable[[Run], dict]) -> dict[Run, dict]:
    """The register's convergence criterion on a walk's chosen run: unless its validation perplexity already moved
    less than CONVERGED over its last epoch, it is trained again at twice the epochs (its DP-SGD noise calibrated to
    the same ε over the longer run), and doubled again while a doubling lowers the final validation perplexity by
    CONVERGED or more, at most `max_doublings` times (the time budget)."""
    curve = [h["validation"] for h in info["history"]]
    if len(curve) > 1 and abs(curve[-1] / curve[-2] - 1) < CONVERGED:
        return {}
    tried, score = {}, final(info)
    for _ in range(p.max_doublings):
        longer = replace(run, epochs=2 * config(p, run).epochs)
        tried[longer] = train(longer)
        if not final(tried[longer]) <= (1 - CONVERGED) * score:
            break
        run, score = longer, final(tried[longer])
    return tried


def tuning_table(infos: dict[Run, dict]) -> pd.DataFrame:
    """Per candidate and epoch: ε spent and non-secret validation perplexity; `chosen` marks the
    rate of lowest validation perplexity after the last epoch (a diverged run counts as infinite). A trainer is named
    by its label (DPSGD at CRT's confidentiality ε is walked apart)."""
    rows = [
        {
            "model": run.model,
            "trainer": run.label,
            "dp_lr": run.dp_lr,
            "length": info["history"][-1]["epoch"],
            "lengthened": run.epochs is not None,
            "epoch": h["epoch"],
            "epsilon": h["epsilon"],
            "validation": h["validation"],
        }
        for run, info in infos.items()
        for h in info["history"]
    ]
    table = pd.DataFrame(rows)
    last = table[table.epoch == table.length]
    score = last.validation.where(np.isfinite(last.validation), np.inf)
    best = score.groupby([last.model, last.trainer]).idxmin()
    key = ["model", "trainer", "dp_lr", "length"]
    chosen = set(zip(*(last.loc[best, k] for k in key)))
    table["chosen"] = [k in chosen for k in zip(*(table[k] for k in key))]
    return table


def chosen_rates(table: pd.DataFrame) -> dict[tuple[str, str], float]:
    """(model, trainer label) -> the DP learning rate chosen on validation."""
    picked = table[table.chosen].drop_duplicates(["model", "trainer"])
    return {(m, t): float(lr) for m, t, lr in zip(picked.model, picked.trainer, picked.dp_lr)}


def chosen_epochs(table: pd.DataFrame) -> dict[tuple[str, str], int | None]:
    """(model, trainer label) -> the epochs of the chosen run where the convergence criterion lengthened it, else
    None (the profile's)."""
    picked = table[table.chosen].drop_duplicates(["model", "trainer"])
    return {(m, t): int(n) if longer else None for m, t, n, longer in zip(*(picked[k] for k in ("model", "trainer",
            "length", "lengthened")))}  # fmt: skip


def choice_table(table: pd.DataFrame, zero: dict[tuple[str, str], float] | None = None) -> pd.DataFrame:
    """Per (model, trainer): every rate tried with its validation perplexity after the last epoch, the chosen rate and
    its perplexity, the chosen run's relative change over its last epoch (negative: still falling), whether its size
    is below `CONVERGED`, and where the chosen rate lies (`interior`; `zero`: (model, trainer) -> the validation
    perplexity of the trainer at DP rate 0, where a run of the chapter is exactly that, CRT's D_pub-only control)."""
    rows = []
    for (model, trainer), runs in table.groupby(["model", "trainer"], sort=False):
        ends = runs[runs.epoch == runs.length]
        at_rate = ends[~ends.lengthened].set_index("dp_lr").validation
        pick = runs[runs.chosen].sort_values("epoch")
        curve = pick.validation.to_numpy()
        change = curve[-1] / curve[-2] - 1 if len(curve) > 1 else np.nan
        chosen, length = float(pick.dp_lr.iloc[0]), int(pick.length.iloc[0])
        lengths = ends[ends.dp_lr == chosen].set_index("length").validation.sort_index()
        # converged: its last epoch moved less than CONVERGED, or a doubling of its epochs gained less than that
        doubled = 2 * length in lengths.index or (
            length // 2 in lengths.index and curve[-1] > (1 - CONVERGED) * lengths[length // 2]
        )
        rows.append(
            {
                "model": model,
                "trainer": trainer,
                "tried": " · ".join(f"{lr:g}: {v:.1f}" for lr, v in at_rate.sort_index().items()),
                "chosen": chosen,
                "epochs_tried": " · ".join(f"{n}: {v:.1f}" for n, v in lengths.items()),
                "validation": float(curve[-1]),
                "epochs": length,
                "last_epoch_change": change,
                "converged": bool(abs(change) < CONVERGED or doubled),
                "interior": interior(at_rate, chosen, (zero or {}).get((model, trainer))),
            }
        )
    return pd.DataFrame(rows)


def interior(final: pd.Series, chosen: float, zero: float | None = None) -> bool:
    """Whether the chosen rate has a worse rate tried on both sides (validation perplexity per tried rate, `final`;
    the walk chose the best of them); `zero`, the perplexity at rate 0 where it is known, counts as a rate below every
    other. A best rate at an end of what was tried may lie beyond it."""
    rates = sorted(final.index)
    below = rates[0] < chosen or (zero is not None and zero > final[chosen])
    return bool(below and chosen < rates[-1])
