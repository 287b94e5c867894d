"""The DeepGini chapter's retraining experiment (the paper's RQ3): fine-tune on the top-ranked adversarial tests.

Two protocols, paired across methods within a seed (same extra training images, same batches):

* one-shot (this chapter's first version): the pool is ranked once by the original model, and each percentage
  fine-tunes the original model separately;
* iterative (the artifact's exp_retrain.py): at every 1 % step the whole pool is re-ranked by the model of the
  previous step, the top p % are taken, and that model is trained further (models chained).

Every method's picks come with their make-up (share per attack, distinct source images, the original model's mean
loss on them). The control "training images only" fine-tunes on the extra training images alone (no pool input).
Two ablations of DeepGini vary that make-up with its ranking held fixed, at the largest percentage only: its order
taken one pick per source image at a time (`source_rounds`), and stratified to the pool's attack shares
(`proportional`). Each tuned model is scored on the held-out half of the adversarial inputs (in total and per attack),
on the pool, on the clean test images, and against a fresh FGSM attack on the held-out source images; under the
iterative protocol the pool accuracy (the artifact's metric) is also kept at every 1 % step (the curve). Every
retraining seed draws its own pool / held-out split of the source images (`scorings`), so the results do not rest on
one split; the held-out intervals resample the source images alike for every seed (`held_out_design`).
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from .. import cache, stats
from . import nets
from .attacks import ARTIFACT
from .testsets import MixedSet

POOL_ATTACKS = tuple(ARTIFACT)  # the attacks of the artifact-style mixed set, whose adversarial inputs form the pool
CONTROL = "training images only"  # fine-tunes on the extra training images alone: what the pool inputs add
ONE_PER_SOURCE = "DeepGini, one per source image"  # DeepGini's order, at most one pick per source image per round
BY_ATTACK = "DeepGini, stratified by attack"  # DeepGini's order within each attack, the pool's attack shares
ABLATIONS = (ONE_PER_SOURCE, BY_ATTACK)
# a run's column holding which held-out rows its model classifies correctly (bool per row); held-out differences
# resample those rows by source image (paired_differences), and the published runs drop it
HELD_RIGHT = "held_right"


def _occurrence(labels: np.ndarray) -> np.ndarray:
    """Each item's place among the items of its label, in the given order (0 for a label's first item)."""
    _, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    by_label = np.argsort(inverse, kind="stable")
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    out = np.empty(len(labels), dtype=int)
    out[by_label] = np.arange(len(labels)) - starts
    return out


def source_rounds(labels: np.ndarray) -> np.ndarray:
    """Positions of a ranked list reordered in rounds: every label's first item (in rank order), then every label's
    second, and so on. A top k then holds at most one item per label while k is at most the number of labels."""
    return np.lexsort((np.arange(len(labels)), _occurrence(labels)))


def proportional(labels: np.ndarray) -> np.ndarray:
    """Positions of a ranked list reordered so that every prefix holds each label in about its share of the whole
    list, each label's items in rank order: the j-th item (from 0) of a label with n items sits at (j + 1/2) / n,
    ties in rank order."""
    _, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    return np.lexsort((np.arange(len(labels)), (_occurrence(labels) + 0.5) / counts[inverse]))


def ablation_order(name: str, ranked: np.ndarray, mixed: MixedSet) -> np.ndarray:
    """`ranked` (rows of the mixed set in DeepGini's order) reordered as the ablation `name` takes them."""
    if name == ONE_PER_SOURCE:
        return ranked[source_rounds(mixed.source[ranked])]
    if name == BY_ATTACK:
        return ranked[proportional(mixed.kind[ranked])]
    raise ValueError(f"unknown ablation {name!r}; one of {', '.join(ABLATIONS)}")


def method_seed(seed: int, method: str) -> int:
    """A tie-break seed of its own for every method (a method without ties of its own must not order as random)."""
    return seed * 1_000_003 + zlib.crc32(method.encode()) % 1_000_003


def split_by_source(mixed: MixedSet, seed: Any) -> tuple[np.ndarray, np.ndarray]:
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

    @functools.cached_property
    def key(self) -> str:
        """Digest of everything a model is scored on (rows, images, labels, attacks, the fresh attack's size)."""
        m = self.mixed
        return cache.digest(m.x, m.y, m.kind.tolist(), self.pool, self.held, *self.clean, *self.fresh, self.eps)

    def score(self, model: nets.Net) -> dict[str, float | np.ndarray]:
        """Held-out accuracy (in all, per attack), pool accuracy, clean accuracy, accuracy under a fresh FGSM, and
        HELD_RIGHT (which held-out rows the model classifies correctly, for intervals that resample them); kept in
        data/features by the model's weights and what it is scored on (the fresh attack needs a gradient, which a
        cached re-run does not compute)."""
        where = cache.entry_path("features", "deepgini-retrain-scores", cache.model_digest(model), self.key,
                                 suffix=".npz")  # fmt: skip
        found = cache.arrays_entry(where, lambda: {k: np.asarray(v) for k, v in self._score(model).items()})[0]
        return {k: (v if v.ndim else float(v)) for k, v in found.items()}

    def _score(self, model: nets.Net) -> dict[str, float | np.ndarray]:
        """score() computed."""
        m = self.mixed
        held_pred = nets.predict_proba(model, m.x[self.held]).argmax(1)
        right = held_pred == m.y[self.held]
        kinds = m.kind[self.held]
        x_fresh = fgsm(model, *self.fresh, self.eps)
        return {
            HELD_RIGHT: right,
            "held_out_accuracy": float(right.mean()),
            **{
                f"held_out {k}": float(right[kinds == k].mean()) if (kinds == k).any() else np.nan for k in POOL_ATTACKS
            },
            "pool_accuracy": accuracy(model, m, self.pool),
            "clean_accuracy": float((nets.predict_proba(model, self.clean[0]).argmax(1) == self.clean[1]).mean()),
            "fresh_fgsm_accuracy": float((nets.predict_proba(model, x_fresh).argmax(1) == self.fresh[1]).mean()),
        }


def scoring(mixed: MixedSet, split_seed: Any, clean: tuple[np.ndarray, np.ndarray], eps: float) -> Scoring:
    """The split of the pool and the held-out half, and the held-out source images for the fresh attack."""
    pool, held = split_by_source(mixed, split_seed)
    originals = np.flatnonzero(mixed.kind == "original")
    fresh = originals[np.isin(mixed.source[originals], mixed.source[held])]
    return Scoring(mixed, pool, held, clean, (mixed.x[fresh], mixed.y[fresh]), eps)


def scorings(mixed: MixedSet, seeds: Sequence[int], clean: tuple[np.ndarray, np.ndarray], eps: float) -> dict:
    """Per retraining seed, its own Scoring: the split of the source images into pool and held-out drawn with the
    seed ([seed, 2]: a stream of its own, apart from the iterative protocol's [seed, 1]), so that every seed retrains
    on its own pool and is scored on its own held-out half."""
    return {seed: scoring(mixed, [seed, 2], clean, eps) for seed in seeds}


def held_out_design(mixed: MixedSet, held: Mapping[int, np.ndarray], n_boot: int, seed: int) -> tuple:
    """What held-out intervals resample when every seed has its own held-out half: two-stage bootstrap multiplicities
    of every adversarial row (stats.unit_weights by source image: the source images, then the rows of each), the rows'
    source images, and per seed the columns of its held-out rows. One draw of the source images serves every seed,
    method and percentage; a seed's resample reads its own held-out rows of the drawn images."""
    adversarial = np.flatnonzero(mixed.kind != "original")
    column = np.full(len(mixed.y), -1)
    column[adversarial] = np.arange(adversarial.size)
    sources = mixed.source[adversarial]
    weights = stats.unit_weights(sources, n_resamples=n_boot, seed=seed).astype(np.float32)
    return weights, sources, {s: column[rows] for s, rows in held.items()}


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
    by_seed: Mapping[int, Scoring],
    train: tuple[np.ndarray, np.ndarray],
    order: Callable[[str, np.ndarray, int], np.ndarray],
    methods: Sequence[str],
    percents: Sequence[int],
    epochs: int,
    loss: np.ndarray,
    ablations: Sequence[str] = (),
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One-shot: per seed (the keys of `by_seed`, each with its own split: scorings) and percentage, every method (and
    the control) fine-tunes the original model on its top tests of the seed's pool, ranked once by the original model,
    plus the same random training images; the `ablations` of DeepGini's order (ABLATIONS; DeepGini among `methods`) at
    the largest percentage only, after the others (whose runs they leave as they were). Returns the scores (the
    original model's, method 'none', on every seed's split) and the make-up of every method's picks (see `picks`),
    each seed's whole pool first."""
    made, rows = [], []
    for seed in tqdm(list(by_seed), desc="retraining seeds (one-shot)", leave=False):
        sc = by_seed[seed]
        mixed, pool = sc.mixed, sc.pool
        made.append({"protocol": "one-shot", "method": "whole pool", "percent": 100, "seed": seed,
                     **picks(mixed, pool, loss)})  # fmt: skip
        rows.append({"protocol": "one-shot", "method": "none", "percent": 0, "seed": seed, **sc.score(model)})
        rng = np.random.default_rng(seed)
        ranked = {m: pool[order(m, pool, method_seed(seed, m))] for m in methods}
        ranked.update({a: ablation_order(a, ranked["DeepGini"], mixed) for a in ablations})
        for pct in percents:
            k = _size(pool, pct)
            extra = rng.choice(len(train[1]), k, replace=False)  # shared by every method of this seed and percentage
            for m in [*methods, CONTROL, *(ablations if pct == max(percents) else ())]:
                top = ranked[m][:k] if m != CONTROL else pool[:0]
                made.append(
                    {"protocol": "one-shot", "method": m, "percent": pct, "seed": seed, **picks(mixed, top, loss)}
                )
                tuned = nets.fine_tune(model, *_fit_set(mixed, top, train, extra, m == CONTROL), epochs, seed)
                rows.append({"protocol": "one-shot", "method": m, "percent": pct, "seed": seed, **sc.score(tuned)})
    return pd.DataFrame(rows), pd.DataFrame(made)


def run_iterative(
    model: nets.Net,
    by_seed: Mapping[int, Scoring],
    train: tuple[np.ndarray, np.ndarray],
    rank: Callable[[str, nets.Net, np.ndarray, int], np.ndarray],
    methods: Sequence[str],
    top_percent: int,
    scored: Sequence[int],
    epochs: int,
    loss: np.ndarray,
    ablations: Sequence[str] = (),
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The artifact's protocol: at each step p = 1 .. top_percent %, every method re-ranks the whole pool with its
    model of step p - 1 (`rank(method, model, pool, seed)` gives the order of the pool), takes the top p %, and
    trains that model further on them plus p % as many fresh random training images (shared by the methods of a
    seed and step); the models are chained. An ablation of DeepGini (ABLATIONS) re-ranks with DeepGini's score and
    tie-break through its own chain and re-takes that order. Scores and picks' make-up at the steps in `scored` (the
    ablations at the last step only); and the curve: every method's pool accuracy (the artifact's metric) at every
    step, the model before retraining at step 0. Every seed (the keys of `by_seed`) works on its own split."""
    rows, made, curve = [], [], []
    for seed in tqdm(list(by_seed), desc="retraining seeds (iterative)", leave=False):
        sc = by_seed[seed]
        mixed, pool = sc.mixed, sc.pool
        curve.append({"protocol": "iterative", "method": "none", "percent": 0, "seed": seed,
                      "pool_accuracy": accuracy(model, mixed, pool)})  # fmt: skip
        rng = np.random.default_rng([seed, 1])
        current = dict.fromkeys([*methods, CONTROL, *ablations], model)
        for pct in range(1, top_percent + 1):
            k = _size(pool, pct)
            extra = rng.choice(len(train[1]), k, replace=False)
            for m in current:
                if m == CONTROL:
                    top = pool[:0]
                elif m in ablations:
                    gini = pool[rank("DeepGini", current[m], pool, method_seed(seed, "DeepGini"))]
                    top = ablation_order(m, gini, mixed)[:k]
                else:
                    top = pool[rank(m, current[m], pool, method_seed(seed, m))][:k]
                current[m] = nets.fine_tune(current[m], *_fit_set(mixed, top, train, extra, m == CONTROL), epochs, seed)
                score = None
                reported = pct == top_percent if m in ablations else pct in scored
                if reported:
                    score = sc.score(current[m])
                    made.append({"protocol": "iterative", "method": m, "percent": pct, "seed": seed,
                                 **picks(mixed, top, loss)})  # fmt: skip
                    rows.append({"protocol": "iterative", "method": m, "percent": pct, "seed": seed, **score})
                if m not in ablations:
                    pool_acc = score["pool_accuracy"] if score else accuracy(current[m], mixed, pool)
                    curve.append({"protocol": "iterative", "method": m, "percent": pct, "seed": seed,
                                  "pool_accuracy": pool_acc})  # fmt: skip
    return pd.DataFrame(rows), pd.DataFrame(made), pd.DataFrame(curve)


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


def _held_out_interval(ref: list[np.ndarray], other: list[np.ndarray], weights: np.ndarray, sources: np.ndarray,
                       columns: list[np.ndarray]) -> stats.Interval:  # fmt: skip
    """Held-out accuracy, reference minus method, per seed on that seed's held-out rows (`columns` of the rows
    held_out_design weighs); the interval over the source images (one draw shared by the seeds, each seed reading its
    own held-out rows of the drawn images) and the seeds (stats.clustered_interval, sharing 'clusters')."""
    per_seed = [float(r.mean() - o.mean()) for r, o in zip(ref, other)]
    draws = []
    for r, o, cols in zip(ref, other, columns):
        w = weights[:, cols]
        draws.append(w @ (r.astype(np.float32) - o.astype(np.float32)) / np.maximum(w.sum(axis=1), 1e-12))
    return stats.clustered_interval(
        per_seed,
        np.stack(draws, axis=1).astype(np.float64),
        clusters=sources,
        unit="source images",
        sharing="clusters",
        words="held-out accuracy difference, paired by seed, each seed on its own held-out half",
        seeds_words=f"{len(per_seed)} retraining seeds",
    )


def paired_differences(
    frame: pd.DataFrame,
    reference: str = "DeepGini",
    column: str = "held_out_accuracy",
    held_out: tuple[np.ndarray, np.ndarray, Mapping[int, np.ndarray]] | None = None,
) -> pd.DataFrame:
    """Per protocol, other method and percentage: reference minus method, paired by seed, with a t interval over
    seeds. For held-out accuracy with `held_out` (held_out_design: the weights, the source images and each seed's
    held-out columns) and the runs' HELD_RIGHT column, the interval also resamples the held-out rows by source
    image."""
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
        if column == "held_out_accuracy" and held_out is not None and HELD_RIGHT in runs:
            right = lambda t: list(t.set_index("seed")[HELD_RIGHT].reindex(ref.index))
            weights, sources, columns = held_out
            iv = _held_out_interval(right(mine), right(sub), weights, sources, [columns[s] for s in ref.index])
        else:
            iv = stats.paired_seed_diff(ref.to_numpy(), other.to_numpy())
        rows.append(
            {
                "protocol": protocol,
                "method": method,
                "percent": pct,
                "difference": iv.estimate,
                "ci_low": iv.low,
                "ci_high": iv.high,
                "se": iv.se,  # a t interval's standard error and df: its Bonferroni-widened form (stats.at_level)
                "df": iv.df,
                "seeds": len(ref),
                "test": iv.method,
            }
        )
    return pd.DataFrame(rows)


def ablation_differences(
    frame: pd.DataFrame,
    made: pd.DataFrame,
    rival: str,
    metrics: Sequence[str] = ("held_out_accuracy", "pool_accuracy"),
    held_out: tuple[np.ndarray, np.ndarray, Mapping[int, np.ndarray]] | None = None,
) -> pd.DataFrame:
    """At each protocol's largest percentage: DeepGini and each of its ablations (column `selection`, what varies the
    picks' make-up with DeepGini's ranking held fixed) minus DeepGini, the coverage `rival` and random, in each
    metric, paired by seed (paired_differences, `held_out` as there); beside the make-up of the selection's picks
    (mean over seeds)."""
    rows = []
    runs = frame[frame["method"] != "none"]
    for protocol, sub in runs.groupby("protocol", sort=False):
        pct = int(sub["percent"].max())
        top = sub[sub["percent"] == pct]
        compared = top[top["method"].isin(["DeepGini", *ABLATIONS, rival, "random"])]
        for selection in [s for s in ("DeepGini", *ABLATIONS) if s in set(top["method"])]:
            arms = compared[compared["method"].isin([selection, "DeepGini", rival, "random"])]
            for metric in metrics:
                for d in paired_differences(arms, selection, metric, held_out).to_dict("records"):
                    rows.append({"protocol": protocol, "percent": pct, "selection": selection, "metric": metric,
                                 "against": d["method"], **{c: d[c] for c in
                                 ("difference", "ci_low", "ci_high", "seeds", "test")}})  # fmt: skip
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    shares = [c for c in made.columns if c.startswith("share ")]
    mine = made[made["method"].isin(["DeepGini", *ABLATIONS])]
    makeup = (
        mine.groupby(["protocol", "method", "percent"], as_index=False, sort=False)[
            ["inputs", "source_images", *shares]
        ]
        .mean()
        .rename(columns={"method": "selection"})
    )
    return table.merge(makeup, on=["protocol", "selection", "percent"], how="left")


def curve_table(curve: pd.DataFrame) -> pd.DataFrame:
    """The iterative protocol's curve (run_iterative's third frame): each method's mean pool accuracy at every step
    (the model before retraining at 0 %), and DeepGini − method paired by seed with a t interval (none for DeepGini
    and the model before)."""
    means = curve.groupby(["protocol", "method", "percent"], as_index=False, sort=False)["pool_accuracy"].mean()
    diffs = paired_differences(curve, column="pool_accuracy")
    return means.merge(diffs, on=["protocol", "method", "percent"], how="left")
