"""The DeepGini chapter's retraining experiment: fine-tune on the top-ranked adversarial tests, paired across methods."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from .. import stats
from . import nets
from .attacks import ARTIFACT
from .testsets import MixedSet

POOL_ATTACKS = tuple(ARTIFACT)  # the attacks of the artifact-style mixed set, whose adversarial inputs form the pool


def split_by_source(mixed: MixedSet, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(pool, held-out) row indices of the adversarial inputs, split in half by source test image."""
    in_pool = np.random.default_rng(seed).random(int(mixed.source.max()) + 1) < 0.5
    adversarial = mixed.kind != "original"
    return np.flatnonzero(adversarial & in_pool[mixed.source]), np.flatnonzero(adversarial & ~in_pool[mixed.source])


def accuracy(model: nets.Net, mixed: MixedSet, rows: np.ndarray) -> float:
    """Share of `rows` the model classifies correctly."""
    return float((nets.predict_proba(model, mixed.x[rows]).argmax(1) == mixed.y[rows]).mean())


def run(
    model: nets.Net,
    mixed: MixedSet,
    train: tuple[np.ndarray, np.ndarray],
    order: Callable[[str, np.ndarray, int], np.ndarray],
    methods: Sequence[str],
    percents: Sequence[int],
    seeds: Sequence[int],
    epochs: int,
    split_seed: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per seed and percentage, every method fine-tunes on its top tests of the pool plus the same random training
    images; accuracy on the held-out adversarial half and, as the paper reports it, on the pool itself. Returns the
    accuracies and the make-up of every method's picks (see `picks`), the whole pool's first."""
    pool, held = split_by_source(mixed, split_seed)
    made = [{"method": "whole pool", "percent": 100, "seed": -1, **picks(mixed, pool)}]
    rows = [
        {
            "method": "none",
            "percent": 0,
            "seed": -1,
            "held_out_accuracy": accuracy(model, mixed, held),
            "pool_accuracy": accuracy(model, mixed, pool),
        }
    ]
    for seed in tqdm(seeds, desc="retraining seeds", leave=False):
        rng = np.random.default_rng(seed)
        ranked = {m: pool[order(m, pool, seed)] for m in methods}
        for pct in percents:
            k = max(1, round(len(pool) * pct / 100))
            extra = rng.choice(len(train[1]), k, replace=False)  # shared by every method of this seed and percentage
            for m in methods:
                top = ranked[m][:k]
                made.append({"method": m, "percent": pct, "seed": seed, **picks(mixed, top)})
                x_fit = np.concatenate([mixed.x[top], train[0][extra]])
                y_fit = np.concatenate([mixed.y[top], train[1][extra]])
                tuned = nets.fine_tune(model, x_fit, y_fit, epochs, seed)
                rows.append(
                    {
                        "method": m,
                        "percent": pct,
                        "seed": seed,
                        "held_out_accuracy": accuracy(tuned, mixed, held),
                        "pool_accuracy": accuracy(tuned, mixed, pool),
                    }
                )
    return pd.DataFrame(rows), pd.DataFrame(made)


def picks(mixed: MixedSet, rows: np.ndarray) -> dict[str, float]:
    """What a method retrains on: how many inputs, from how many source images, and the share from each attack."""
    kinds = mixed.kind[rows]
    return {
        "inputs": len(rows),
        "source_images": int(np.unique(mixed.source[rows]).size),
        **{f"share {k}": float((kinds == k).mean()) if len(rows) else np.nan for k in POOL_ATTACKS},
    }


def paired_differences(
    frame: pd.DataFrame, reference: str = "DeepGini", column: str = "held_out_accuracy"
) -> pd.DataFrame:
    """Per other method and percentage: reference minus method, paired by seed, with a t interval over seeds."""
    rows = []
    runs = frame[frame["method"] != "none"]
    for (method, pct), sub in runs[runs["method"] != reference].groupby(["method", "percent"], sort=False):
        ref = runs[(runs["method"] == reference) & (runs["percent"] == pct)].set_index("seed")[column]
        other = sub.set_index("seed")[column].reindex(ref.index)
        iv = stats.paired_seed_diff(ref.to_numpy(), other.to_numpy())
        rows.append(
            {
                "method": method,
                "percent": pct,
                "difference": iv.estimate,
                "ci_low": iv.low,
                "ci_high": iv.high,
                "seeds": len(ref),
                "test": iv.method,
            }
        )
    return pd.DataFrame(rows)
