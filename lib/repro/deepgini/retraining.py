"""The DeepGini chapter's retraining experiment (the paper's RQ3): fine-tune on the top-ranked adversarial tests.

Two protocols, paired across methods within a seed (same extra training images, same batches):

* one-shot (this chapter's first version): the pool is ranked once by the original model, and each percentage
  fine-tunes the original model separately;
* iterative (the artifact's exp_retrain.py): at every 1 % step the whole pool is re-ranked by the model of the
  previous step, the top p % are taken, and that model is trained further (models chained).

Every method's picks come with their make-up (share per attack, distinct source images, the original model's mean
loss on them). The control "training images only" fine-tunes on the extra training images alone (no pool input).
Each tuned model is scored on the held-out half of the adversarial inputs (in total and per attack), on the pool,
on the clean test images, and against a fresh FGSM attack on the held-out source images.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from .. import stats
from . import nets
from .attacks import ARTIFACT
from .testsets import MixedSet

POOL_ATTACKS = tuple(ARTIFACT)  # the attacks of the artifact-style mixed set, whose adversarial inputs form the pool
CONTROL = "training images only"  # fine-tunes on the extra training images alone: what the pool inputs add


def method_seed(seed: int, method: str) -> int:
    """A tie-break seed of its own for every method (a method without ties of its own must not order as random)."""
    return seed * 1_000_003 + zlib.crc32(method.encode()) % 1_000_003


def split_by_source(mixed: MixedSet, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(pool, held-out) row indices of the adversarial inputs, split in half by source test image."""
    in_pool = np.random.default_rng(seed).random(int(mixed.source.max()) + 1) < 0.5
    adversarial = mixed.kind != "original"
    return np.flatnonzero(adversarial & in_pool[mixed.source]), np.flatnonzero(adversarial & ~in_pool[mixed.source])


def accuracy(model: nets.Net, mixed: MixedSet, rows: np.ndarray) -> float:
    """Share of `rows` the model classifies correctly."""
    return float((nets.predict_proba(model, mixed.x[rows]).argmax(1) == mixed.y[rows]).mean())


def fgsm(model: nets.Net, x: np.ndarray, y: np.ndarray, eps: float, batch: int = 1024) -> np.ndarray:
    """One signed-gradient step of size eps against `model` (untargeted, inputs clipped to [0, 1])."""
    import torch

    out = []
    for s in range(0, len(x), batch):
        xb = torch.as_tensor(x[s : s + batch], dtype=torch.float32, device=nets.device()).requires_grad_(True)
        yb = torch.as_tensor(y[s : s + batch], dtype=torch.long, device=nets.device())
        (grad,) = torch.autograd.grad(torch.nn.functional.cross_entropy(model(xb), yb), xb)
        out.append((xb + eps * grad.sign()).clamp(0.0, 1.0).detach().cpu().numpy())
    return np.concatenate(out) if out else x.astype(np.float32)


@dataclass(frozen=True)
class Scoring:
    """What a tuned model is scored on: held-out and pool rows of the mixed set, clean test images, fresh FGSM."""

    mixed: MixedSet
    pool: np.ndarray
    held: np.ndarray
    clean: tuple[np.ndarray, np.ndarray]
    fresh: tuple[np.ndarray, np.ndarray]  # held-out source images (originals) attacked afresh against each model
    eps: float

    def score(self, model: nets.Net) -> dict[str, float]:
        """Held-out accuracy (in all, per attack), pool accuracy, clean accuracy, accuracy under a fresh FGSM."""
        m = self.mixed
        held_pred = nets.predict_proba(model, m.x[self.held]).argmax(1)
        right = held_pred == m.y[self.held]
        kinds = m.kind[self.held]
        x_fresh = fgsm(model, *self.fresh, self.eps)
        return {
            "held_out_accuracy": float(right.mean()),
            **{
                f"held_out {k}": float(right[kinds == k].mean()) if (kinds == k).any() else np.nan for k in POOL_ATTACKS
            },
            "pool_accuracy": accuracy(model, m, self.pool),
            "clean_accuracy": float((nets.predict_proba(model, self.clean[0]).argmax(1) == self.clean[1]).mean()),
            "fresh_fgsm_accuracy": float((nets.predict_proba(model, x_fresh).argmax(1) == self.fresh[1]).mean()),
        }


def scoring(mixed: MixedSet, split_seed: int, clean: tuple[np.ndarray, np.ndarray], eps: float) -> Scoring:
    """The split of the pool and the held-out half, and the held-out source images for the fresh attack."""
    pool, held = split_by_source(mixed, split_seed)
    originals = np.flatnonzero(mixed.kind == "original")
    fresh = originals[np.isin(mixed.source[originals], mixed.source[held])]
    return Scoring(mixed, pool, held, clean, (mixed.x[fresh], mixed.y[fresh]), eps)


def _size(pool: np.ndarray, pct: int) -> int:
    """Tests in the top pct % of the pool (at least one)."""
    return max(1, round(len(pool) * pct / 100))


def _fit_set(mixed: MixedSet, top: np.ndarray, train: tuple[np.ndarray, np.ndarray], extra: np.ndarray, control: bool):
    """The top tests plus the extra training images, or (the control) the extra training images alone."""
    if control:
        return train[0][extra], train[1][extra]
    return np.concatenate([mixed.x[top], train[0][extra]]), np.concatenate([mixed.y[top], train[1][extra]])


def run(
    model: nets.Net,
    sc: Scoring,
    train: tuple[np.ndarray, np.ndarray],
    order: Callable[[str, np.ndarray, int], np.ndarray],
    methods: Sequence[str],
    percents: Sequence[int],
    seeds: Sequence[int],
    epochs: int,
    loss: np.ndarray,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One-shot: per seed and percentage, every method (and the control) fine-tunes the original model on its top
    tests of the pool, ranked once by the original model, plus the same random training images. Returns the scores
    and the make-up of every method's picks (see `picks`), the whole pool's first."""
    mixed, pool = sc.mixed, sc.pool
    made = [{"protocol": "one-shot", "method": "whole pool", "percent": 100, "seed": -1, **picks(mixed, pool, loss)}]
    rows = [{"protocol": "one-shot", "method": "none", "percent": 0, "seed": -1, **sc.score(model)}]
    for seed in tqdm(seeds, desc="retraining seeds (one-shot)", leave=False):
        rng = np.random.default_rng(seed)
        ranked = {m: pool[order(m, pool, method_seed(seed, m))] for m in methods}
        for pct in percents:
            k = _size(pool, pct)
            extra = rng.choice(len(train[1]), k, replace=False)  # shared by every method of this seed and percentage
            for m in [*methods, CONTROL]:
                top = ranked[m][:k] if m != CONTROL else pool[:0]
                made.append(
                    {"protocol": "one-shot", "method": m, "percent": pct, "seed": seed, **picks(mixed, top, loss)}
                )
                tuned = nets.fine_tune(model, *_fit_set(mixed, top, train, extra, m == CONTROL), epochs, seed)
                rows.append({"protocol": "one-shot", "method": m, "percent": pct, "seed": seed, **sc.score(tuned)})
    return pd.DataFrame(rows), pd.DataFrame(made)


def run_iterative(
    model: nets.Net,
    sc: Scoring,
    train: tuple[np.ndarray, np.ndarray],
    rank: Callable[[str, nets.Net, np.ndarray, int], np.ndarray],
    methods: Sequence[str],
    top_percent: int,
    scored: Sequence[int],
    seeds: Sequence[int],
    epochs: int,
    loss: np.ndarray,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The artifact's protocol: at each step p = 1 .. top_percent %, every method re-ranks the whole pool with its
    model of step p - 1 (`rank(method, model, pool, seed)` gives the order of the pool), takes the top p %, and
    trains that model further on them plus p % as many fresh random training images (shared by the methods of a
    seed and step); the models are chained. Scores at the steps in `scored`; picks' make-up at every scored step."""
    mixed, pool = sc.mixed, sc.pool
    rows, made = [], []
    for seed in tqdm(seeds, desc="retraining seeds (iterative)", leave=False):
        rng = np.random.default_rng([seed, 1])
        current = dict.fromkeys([*methods, CONTROL], model)
        for pct in range(1, top_percent + 1):
            k = _size(pool, pct)
            extra = rng.choice(len(train[1]), k, replace=False)
            for m in current:
                top = pool[:0] if m == CONTROL else pool[rank(m, current[m], pool, method_seed(seed, m))][:k]
                current[m] = nets.fine_tune(current[m], *_fit_set(mixed, top, train, extra, m == CONTROL), epochs, seed)
                if pct in scored:
                    made.append({"protocol": "iterative", "method": m, "percent": pct, "seed": seed,
                                 **picks(mixed, top, loss)})  # fmt: skip
                    rows.append({"protocol": "iterative", "method": m, "percent": pct, "seed": seed,
                                 **sc.score(current[m])})  # fmt: skip
    return pd.DataFrame(rows), pd.DataFrame(made)


def picks(mixed: MixedSet, rows: np.ndarray, loss: np.ndarray | None = None) -> dict[str, float]:
    """What a method retrains on: how many inputs, from how many source images, the share from each attack, and the
    original model's mean cross-entropy loss on them (`loss`, one value per row of the mixed set)."""
    kinds = mixed.kind[rows]
    return {
        "inputs": len(rows),
        "source_images": int(np.unique(mixed.source[rows]).size),
        **{f"share {k}": float((kinds == k).mean()) if len(rows) else np.nan for k in POOL_ATTACKS},
        "mean_loss": float(loss[rows].mean()) if loss is not None and len(rows) else np.nan,
    }


def paired_differences(
    frame: pd.DataFrame, reference: str = "DeepGini", column: str = "held_out_accuracy"
) -> pd.DataFrame:
    """Per protocol, other method and percentage: reference minus method, paired by seed, with a t interval."""
    rows = []
    runs = frame[frame["method"] != "none"]
    if "protocol" not in runs:
        runs = runs.assign(protocol="one-shot")
    for (protocol, method, pct), sub in runs[runs["method"] != reference].groupby(
        ["protocol", "method", "percent"], sort=False
    ):
        mine = runs[(runs["protocol"] == protocol) & (runs["method"] == reference) & (runs["percent"] == pct)]
        ref = mine.set_index("seed")[column]
        other = sub.set_index("seed")[column].reindex(ref.index)
        iv = stats.paired_seed_diff(ref.to_numpy(), other.to_numpy())
        rows.append(
            {
                "protocol": protocol,
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
