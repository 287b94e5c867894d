"""Statistics behind every verdict row's 95 % interval: bootstrap, DeLong, permutation nulls, seed summaries.

This module imports nothing from `repro` (`repro.metrics` imports it for the Hanley-McNeil standard error),
so the APFD and AUC computations it needs are re-implemented here in vectorized form and tested against
`repro.metrics`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import stats as sps

__all__ = [
    "DeLongResult",
    "Interval",
    "at_level",
    "attack_null",
    "bootstrap",
    "bootstrap_interval",
    "cluster_counts",
    "clustered_interval",
    "delong",
    "delong_interval",
    "fast_auc",
    "grouped_auc_contrast",
    "grouped_auc_null",
    "grouped_seeds_auc_contrast",
    "hanley_mcneil_se",
    "hierarchical_interval",
    "items_first",
    "max_null",
    "null_band",
    "null_p_value",
    "paired_bootstrap_apfd",
    "paired_bootstrap_diff",
    "paired_seed_diff",
    "permutation_null",
    "resample_weights",
    "seed_summary",
    "seeds_and_items_auc",
    "seeds_and_items_contrast",
    "seeds_and_items_perplexity",
    "simulated_power",
    "subset_nulls",
    "threshold_attack_accuracy",
    "unit_weights",
]

ArrayLike = Sequence[float] | np.ndarray


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided interval and the words that say how it was obtained."""

    estimate: float
    low: float
    high: float
    method: str
    se: float | None = None  # a t or normal interval's standard error (None: a percentile or exact interval)
    df: float | None = None  # its degrees of freedom (inf: normal)

    def as_tuple(self) -> tuple[float, float]:
        """The interval as (low, high)."""
        return (self.low, self.high)

    def contains(self, x: float) -> bool:
        """True when low <= x <= high."""
        return bool(self.low <= x <= self.high)

    def side(self, above: str, below: str, neither: str) -> str:
        """`above` when the whole interval lies above zero, `below` when it lies below, else `neither`."""
        return above if self.low > 0 else below if self.high < 0 else neither


def at_level(iv: Interval, level: float) -> Interval | None:
    """The same t (or normal) interval at another level: estimate ± quantile(level, df) × se, the method saying the
    level; None where the interval is not one (a percentile bootstrap, an exact value: no se)."""
    _check_level(level)
    if iv.se is None or iv.df is None or not math.isfinite(iv.se):
        return None
    q = sps.t.ppf(0.5 + level / 2, iv.df) if math.isfinite(iv.df) else sps.norm.ppf(0.5 + level / 2)
    half = float(q) * iv.se
    return replace(iv, low=iv.estimate - half, high=iv.estimate + half, method=f"{iv.method}; at {level:.1%}")


@dataclass(frozen=True)
class DeLongResult:
    """DeLong comparison of two correlated AUCs on the same items: difference auc_a - auc_b, its SE, z, p, CI."""

    auc_a: float
    auc_b: float
    diff: float
    se: float
    z: float
    p_value: float
    low: float
    high: float
    method: str = "DeLong test"

    def as_interval(self) -> Interval:
        """The difference auc_a - auc_b with its normal interval, as an Interval."""
        return Interval(self.diff, self.low, self.high, self.method)


# ---------------------------------------------------------------------------------------------------------------
# validation helpers


def _finite_1d(values: object, name: str) -> np.ndarray:
    """Return `values` as a non-empty, finite, 1-D float64 array."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values: clean or drop them first")
    return arr


def _binary_labels(labels: object, n: int | None = None) -> np.ndarray:
    """Return 0/1 labels as a bool array (True = positive); both classes must be present."""
    y = np.asarray(labels)
    if y.ndim != 1 or (n is not None and y.size != n):
        raise ValueError(f"labels must be 1-D with one label per score, got shape {y.shape} for {n} scores")
    if y.dtype != bool:
        if not np.isin(y, (0, 1)).all():
            raise ValueError("labels must be 0/1 (1 = positive: member / OOD / misclassified)")
        y = y.astype(bool)
    if y.all() or not y.any():
        raise ValueError("labels must contain both classes 0 and 1")
    return y


def _check_level(level: float) -> None:
    """Refuse a confidence level outside (0, 1)."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), e.g. 0.95; got {level}")


def _percentiles(dist: np.ndarray, level: float) -> tuple[float, float]:
    """Two-sided percentile band of `dist` at `level`."""
    alpha = 1.0 - level
    low, high = np.quantile(dist, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


# ---------------------------------------------------------------------------------------------------------------
# AUC


def fast_auc(labels: ArrayLike, scores: ArrayLike) -> float:
    """ROC AUC as a Mann-Whitney statistic with average ranks for ties (equals sklearn's roc_auc_score)."""
    s = _finite_1d(scores, "scores")
    y = _binary_labels(labels, s.size)
    n_pos = int(y.sum())
    n_neg = y.size - n_pos
    ranks = sps.rankdata(s)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _is_rank_auc(metric: Callable[..., float]) -> bool:
    """True for fast_auc and repro.metrics.auroc, which the bootstrap computes from counts without re-sorting."""
    if metric is fast_auc:
        return True
    return (getattr(metric, "__module__", None), getattr(metric, "__qualname__", None)) == ("repro.metrics", "auroc")


class WeightedAuc:
    """AUC of bootstrap resamples given as per-item multiplicities: no sort per resample (ties count one half).

    The Mann-Whitney count of resample r is sum over positives i of w_ri (N_r(below s_i) + N_r(at s_i) / 2), N_r the
    resample's negative weight: one cumulative sum of the negatives' weights in score order, read at each positive's
    place. With whole-number multiplicities every sum is exact, so the AUC is the same number however it is summed."""

    def __init__(self, labels: ArrayLike, scores: ArrayLike) -> None:
        """Order the negatives by score once and find each positive's place among them (below, and through ties)."""
        s = _finite_1d(scores, "scores")
        y = _binary_labels(labels, s.size)
        self.size = s.size
        self.positives = np.flatnonzero(y)
        negatives = np.flatnonzero(~y)
        order = np.argsort(s[negatives], kind="stable")
        self.negatives = negatives[order]  # negatives by ascending score
        ranked = s[self.negatives]
        self.below = np.searchsorted(ranked, s[self.positives], side="left")  # negatives strictly below positive i
        through = np.searchsorted(ranked, s[self.positives], side="right")  # ... and those tied with it
        self.tied = np.flatnonzero(through > self.below)  # positives tied with some negative
        self.through = through[self.tied]

    def many(self, weights: np.ndarray) -> np.ndarray:
        """The AUC of every row of `weights` (resamples x items; item i appears weights[r, i] times in resample r).
        With whole-number multiplicities every sum is exact, whatever the order of summation."""
        return self.many_by_item(items_first(weights))

    def many_by_item(self, by_item: np.ndarray) -> np.ndarray:
        """many() of multiplicities laid out items x resamples (items_first(weights)): several AUCs of the same
        resamples share one transposition, and every row read below is contiguous."""
        w = np.asarray(by_item, dtype=np.float64)
        if w.ndim != 2 or w.shape[0] != self.size:
            raise ValueError(f"multiplicities need shape ({self.size} items, resamples), got {w.shape}")
        cum = np.empty((self.negatives.size + 1, w.shape[1]))
        cum[0] = 0.0
        np.cumsum(w[self.negatives], axis=0, out=cum[1:])  # cum[k]: weight of the k lowest-scored negatives
        pos = w[self.positives]
        count = np.einsum("ir,ir->r", pos, cum[self.below])
        if self.tied.size:  # a tie with a negative counts one half
            count = count + 0.5 * np.einsum("ir,ir->r", pos[self.tied], cum[self.through] - cum[self.below[self.tied]])
        return count / (pos.sum(axis=0) * cum[-1])


def items_first(weights: np.ndarray) -> np.ndarray:
    """Resample multiplicities (resamples x items) as a contiguous items x resamples array, the layout
    WeightedAuc.many_by_item reads fastest."""
    return np.ascontiguousarray(np.asarray(weights, dtype=np.float64).T)


def hanley_mcneil_se(auc: float, n_pos: int, n_neg: int) -> float:
    """Hanley & McNeil (1982) standard error of an AUC estimated from n_pos positives and n_neg negatives."""
    if not 0 <= auc <= 1 or n_pos < 1 or n_neg < 1:
        raise ValueError(f"need 0 <= auc <= 1 and at least one positive and one negative, got {auc}, {n_pos}, {n_neg}")
    q1, q2 = auc / (2 - auc), 2 * auc**2 / (1 + auc)
    var = (auc * (1 - auc) + (n_pos - 1) * (q1 - auc**2) + (n_neg - 1) * (q2 - auc**2)) / (n_pos * n_neg)
    return math.sqrt(max(var, 0.0))


def _structural_components(y: np.ndarray, scores: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """AUC and DeLong's placements V10 (one per positive) and V01 (one per negative), Sun & Xu (2014) midranks."""
    x, z = scores[y], scores[~y]
    m, n = x.size, z.size
    rank_all = sps.rankdata(np.concatenate([x, z]))
    v10 = (rank_all[:m] - sps.rankdata(x)) / n
    v01 = 1.0 - (rank_all[m:] - sps.rankdata(z)) / m
    return float(v10.mean()), v10, v01


def delong(labels: ArrayLike, scores_a: ArrayLike, scores_b: ArrayLike, level: float = 0.95) -> DeLongResult:
    """DeLong, DeLong & Clarke-Pearson (1988) test of auc_a - auc_b for two scores of the same items."""
    _check_level(level)
    a = _finite_1d(scores_a, "scores_a")
    b = _finite_1d(scores_b, "scores_b")
    if a.size != b.size:
        raise ValueError(f"scores_a and scores_b must score the same items, got {a.size} and {b.size}")
    y = _binary_labels(labels, a.size)
    auc_a, v10_a, v01_a = _structural_components(y, a)
    auc_b, v10_b, v01_b = _structural_components(y, b)
    m, n = v10_a.size, v01_a.size
    s10 = np.cov(np.vstack([v10_a, v10_b])) if m > 1 else np.zeros((2, 2))
    s01 = np.cov(np.vstack([v01_a, v01_b])) if n > 1 else np.zeros((2, 2))
    cov = s10 / m + s01 / n
    diff = auc_a - auc_b
    se = math.sqrt(max(cov[0, 0] + cov[1, 1] - 2 * cov[0, 1], 0.0))
    if se > 0:
        z = diff / se
    else:
        z = 0.0 if diff == 0 else math.copysign(math.inf, diff)
    p_value = float(2 * sps.norm.sf(abs(z)))
    half = float(sps.norm.ppf(0.5 + level / 2)) * se
    method = f"DeLong test, {m:,} positives / {n:,} negatives"
    return DeLongResult(auc_a, auc_b, diff, se, float(z), p_value, diff - half, diff + half, method)


def delong_interval(labels: ArrayLike, scores: ArrayLike, level: float = 0.95) -> Interval:
    """A single AUC with DeLong's normal interval (clipped to [0, 1])."""
    _check_level(level)
    s = _finite_1d(scores, "scores")
    y = _binary_labels(labels, s.size)
    auc, v10, v01 = _structural_components(y, s)
    m, n = v10.size, v01.size
    var = (v10.var(ddof=1) / m if m > 1 else 0.0) + (v01.var(ddof=1) / n if n > 1 else 0.0)
    half = float(sps.norm.ppf(0.5 + level / 2)) * math.sqrt(var)
    method = f"DeLong interval, {m:,} positives / {n:,} negatives"
    return Interval(auc, max(0.0, auc - half), min(1.0, auc + half), method)


# ---------------------------------------------------------------------------------------------------------------
# bootstrap


_BLOCK = 500  # bootstrap resamples evaluated together (a block's multiplicities: _BLOCK x items floats per group)


def _resamples(n: int, strata: np.ndarray | None, n_resamples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Index arrays of `n_resamples` bootstrap resamples, drawn within each stratum when strata is given."""
    if strata is None:
        for _ in range(n_resamples):
            yield rng.integers(0, n, size=n)
        return
    _, inverse = np.unique(strata, return_inverse=True)
    members = [np.flatnonzero(inverse == g) for g in range(int(inverse.max()) + 1)]
    for _ in range(n_resamples):
        yield np.concatenate([idx[rng.integers(0, idx.size, size=idx.size)] for idx in members])


def _count_blocks(draws: Iterator[np.ndarray], n: int, n_resamples: int) -> Iterator[np.ndarray]:
    """The multiplicities of the index arrays `draws` yields, in order, as matrices of up to _BLOCK resamples x n."""
    for start in range(0, n_resamples, _BLOCK):
        block = np.empty((min(_BLOCK, n_resamples - start), n))
        for r in range(block.shape[0]):
            block[r] = np.bincount(next(draws), minlength=n)
        yield block


def resample_weights(n: int, strata: object | None = None, *, n_resamples: int, seed: int = 0) -> np.ndarray:
    """The multiplicities (resamples x items) of the resamples bootstrap(), paired_bootstrap_diff() and
    seeds_and_items_contrast() draw from `seed` (items drawn with replacement within each stratum of `strata`, e.g.
    the 0/1 labels): computed once, they serve every statistic of the same items (WeightedAuc.many)."""
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    strata_arr = None if strata is None else np.asarray(strata)
    if strata_arr is not None and strata_arr.shape != (n,):
        raise ValueError(f"strata needs one label per item, got shape {strata_arr.shape} for {n} items")
    draws = _resamples(n, strata_arr, n_resamples, np.random.default_rng(seed))
    return np.concatenate(list(_count_blocks(draws, n, n_resamples)))


def _bootstrap_setup(
    arrays: Sequence[object], n_resamples: int, level: float, strata: object | None
) -> tuple[list[np.ndarray], int, np.ndarray | None]:
    """Validate bootstrap inputs; return the arrays, the item count and the strata array."""
    _check_level(level)
    if not arrays:
        raise ValueError("pass at least one array to resample")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    arrs = [np.asarray(a) for a in arrays]
    n = arrs[0].shape[0] if arrs[0].ndim else 0
    if n == 0 or any(a.ndim == 0 or a.shape[0] != n for a in arrs):
        raise ValueError(f"every array needs the same non-zero length along axis 0, got {[a.shape for a in arrs]}")
    strata_arr = None
    if strata is not None:
        strata_arr = np.asarray(strata)
        if strata_arr.shape != (n,):
            raise ValueError(f"strata needs one label per item, got shape {strata_arr.shape} for {n} items")
    return arrs, n, strata_arr


def _describe(n: int, n_resamples: int, paired: bool, strata: np.ndarray | None, unit: str) -> str:
    """The `method` words of a bootstrap interval, e.g. 'paired bootstrap over 13,400 items, 2,000 resamples'."""
    words = f"{'paired ' if paired else ''}bootstrap over {n:,} {unit}, {n_resamples:,} resamples"
    if strata is not None:
        k = np.unique(strata).size
        words += ", within class" if k == 2 else f", within {k:,} strata"
    return words


def _finish(estimate: float, dist: np.ndarray, level: float, method: str) -> Interval:
    """Percentile interval from a bootstrap distribution; refuses resamples where the statistic was undefined."""
    bad = int(np.count_nonzero(~np.isfinite(dist)))
    if bad:
        raise ValueError(
            f"the statistic was undefined (NaN/inf) on {bad:,} of {dist.size:,} resamples: "
            "pass strata (e.g. the labels) so every resample keeps both classes"
        )
    low, high = _percentiles(dist, level)
    return Interval(float(estimate), low, high, method)


def bootstrap_interval(
    estimate: float,
    draws: ArrayLike,
    *,
    n_items: int,
    n_resamples: int,
    strata: object | None = None,
    paired: bool = False,
    unit: str = "items",
    level: float = 0.95,
) -> Interval:
    """The percentile interval and words bootstrap() (paired=False) and paired_bootstrap_diff() (paired=True) return,
    from the statistic's draws computed elsewhere (e.g. on resample_weights shared by several statistics)."""
    _check_level(level)
    strata_arr = None if strata is None else np.asarray(strata)
    method = _describe(n_items, n_resamples, paired, strata_arr, unit)
    return _finish(estimate, np.asarray(draws, dtype=np.float64), level, method)


def bootstrap(
    statistic: Callable[..., float],
    *arrays: object,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    strata: object | None = None,
    unit: str = "items",
) -> Interval:
    """Percentile bootstrap of statistic(*arrays) resampling items (axis 0, same indices in every array)."""
    arrs, n, strata_arr = _bootstrap_setup(arrays, n_resamples, level, strata)
    rng = np.random.default_rng(seed)
    draws = _resamples(n, strata_arr, n_resamples, rng)
    if _is_rank_auc(statistic) and len(arrs) == 2:
        auc = WeightedAuc(arrs[0], arrs[1])
        dist = np.concatenate([auc.many(block) for block in _count_blocks(draws, n, n_resamples)])
    else:
        dist = np.array([statistic(*(a[idx] for a in arrs)) for idx in draws], dtype=np.float64)
    method = _describe(n, n_resamples, False, strata_arr, unit)  # one statistic, not a comparison: never "paired"
    return _finish(statistic(*arrs), dist, level, method)


def paired_bootstrap_diff(
    metric: Callable[[np.ndarray, np.ndarray], float],
    labels: ArrayLike,
    scores_a: ArrayLike,
    scores_b: ArrayLike,
    *,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    stratify: bool = True,
    unit: str = "items",
) -> Interval:
    """Interval of metric(labels, a) - metric(labels, b), both methods scored on the same resampled items."""
    arrs, n, _ = _bootstrap_setup((labels, scores_a, scores_b), n_resamples, level, None)
    y, a, b = arrs
    strata = y if stratify and np.unique(y).size == 2 else None
    rng = np.random.default_rng(seed)
    draws = _resamples(n, strata, n_resamples, rng)
    if _is_rank_auc(metric):
        auc_a, auc_b = WeightedAuc(y, a), WeightedAuc(y, b)
        blocks = map(items_first, _count_blocks(draws, n, n_resamples))
        dist = np.concatenate([auc_a.many_by_item(w) - auc_b.many_by_item(w) for w in blocks])
    else:
        dist = np.array([metric(y[idx], a[idx]) - metric(y[idx], b[idx]) for idx in draws], dtype=np.float64)
    estimate = metric(y, a) - metric(y, b)
    return _finish(estimate, dist, level, _describe(n, n_resamples, True, strata, unit))


def hierarchical_interval(
    per_seed: ArrayLike,
    item_draws: np.ndarray,
    *,
    level: float = 0.95,
    shared_items: bool = True,
    words: str = "",
) -> Interval:
    """Interval of the mean over trained models (seeds) of a statistic, covering item and training randomness.

    per_seed: the statistic of each seed's model on the full item set, shape (seeds,). item_draws: the statistic on
    bootstrap resamples of the items, shape (resamples, seeds). With shared_items (every seed scored on the same
    items, the same resampled multiplicities in every column) the variance of the seed mean is the between-seed
    variance over n seeds plus the item variance of the seed mean (which the seeds share and cannot average away),
    and the t quantile takes Satterthwaite's degrees of freedom (n - 1 when seeds dominate, large when items do).
    Without shared items (each seed its own items) the seeds' spread already holds the item noise: it is floored
    at the mean within-seed item variance and the t quantile has n - 1 degrees of freedom. One seed: the item
    bootstrap's percentile interval, and the method says that training randomness is not covered. Coverage at 3, 5
    and 10 seeds with seed spread half, equal to and twice the item spread is checked by simulation in the tests."""
    _check_level(level)
    theta = _finite_1d(per_seed, "per_seed")
    draws = np.asarray(item_draws, dtype=np.float64)
    if draws.ndim != 2 or draws.shape[1] != theta.size or draws.shape[0] < 2:
        raise ValueError(f"item_draws needs shape (resamples >= 2, {theta.size} seeds), got {draws.shape}")
    if not np.all(np.isfinite(draws)):
        raise ValueError("the statistic was undefined (NaN/inf) on some item resamples: pass strata (e.g. the labels)")
    n, resamples = theta.size, draws.shape[0]
    estimate = float(theta.mean())
    lead = f"{words}: " if words else ""
    if n == 1:
        low, high = _percentiles(draws[:, 0], level)
        method = (
            f"{lead}bootstrap over items, {resamples:,} resamples; 1 trained model, training randomness not covered"
        )
        return Interval(estimate, low, high, method)
    spread = float(theta.var(ddof=1))
    if shared_items:  # the seeds' spread excludes the shared items' noise: add the item variance of the seed mean
        between, items = spread / n, float(draws.mean(1).var(ddof=1))
        total = between + items
        df = math.inf if between == 0 else (n - 1) * (total / between) ** 2  # Satterthwaite, items with many df
        how = "shared items, Satterthwaite df"
    else:  # the seeds' spread already holds each seed's item noise; floored at the within-seed item variance
        total = max(spread, float(draws.var(0, ddof=1).mean())) / n
        df = n - 1
        how = f"items per seed, {n - 1} df"
    quantile = sps.t.ppf(0.5 + level / 2, df) if math.isfinite(df) else sps.norm.ppf(0.5 + level / 2)
    half = float(quantile) * math.sqrt(total)
    method = (
        f"{lead}items bootstrapped within each of {n:,} seeds ({resamples:,} resamples), "
        f"combined with a t interval over seeds ({how})"
    )
    return Interval(estimate, estimate - half, estimate + half, method, math.sqrt(total), df)


# ---------------------------------------------------------------------------------------------------------------
# clustered units: items come in clusters (tasks, articles, source images, sets), models (seeds) on top

FEW_CLUSTERS = 5  # below this many clusters an interval is a t interval over clusters, and the method says so


def _cluster_layout(clusters: object, strata: object | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Cluster and stratum codes (0..k-1) of n items; a missing clustering makes every item its own cluster."""
    c = np.arange(n) if clusters is None else np.asarray(clusters)
    s = np.zeros(n, dtype=int) if strata is None else np.asarray(strata)
    if c.shape != (n,) or s.shape != (n,):
        raise ValueError(f"clusters and strata need one label per item, got {c.shape} and {s.shape} for {n} items")
    return c, s


def _plain(value: Any) -> Any:
    """A label as a plain Python value (numpy scalars unwrapped; strings of an object array as they are)."""
    return value.item() if isinstance(value, np.generic) else value


def _cluster_strata(labels: np.ndarray, strata: np.ndarray) -> dict[Any, Any]:
    """Each cluster's stratum: its items' stratum when they share one, else a 'mixed' stratum named by its lowest and
    highest item strata (exact for two classes)."""
    clusters, code = np.unique(labels, return_inverse=True)
    kinds, kind = np.unique(strata, return_inverse=True)
    low = np.full(clusters.size, kind.max() + 1)
    high = np.full(clusters.size, -1)
    np.minimum.at(low, code, kind)
    np.maximum.at(high, code, kind)
    return {
        _plain(c): _plain(kinds[lo]) if lo == hi else ("mixed", _plain(kinds[lo]), _plain(kinds[hi]))
        for c, lo, hi in zip(clusters, low, high)
    }


def _cluster_counts(kinds: dict[Any, Any], n_resamples: int, rng: np.random.Generator) -> dict[Any, np.ndarray]:
    """How often each cluster is drawn in each resample: clusters drawn with replacement within their stratum."""
    by_kind: dict[Any, list] = {}
    for cluster, kind in kinds.items():
        by_kind.setdefault(kind, []).append(cluster)
    counts: dict[Any, np.ndarray] = {}
    for members in by_kind.values():
        drawn = rng.multinomial(len(members), np.full(len(members), 1 / len(members)), size=n_resamples)
        counts.update({cluster: drawn[:, j] for j, cluster in enumerate(members)})
    return counts


def _item_weights(
    labels: np.ndarray, strata: np.ndarray, counts: dict[Any, np.ndarray], rng: np.random.Generator
) -> np.ndarray:
    """Item multiplicities (resamples x items): each of a cluster's c draws resamples its items (within stratum) with
    replacement; c independent resamples of n items sum to one multinomial draw of c n items."""
    clusters, cluster_code = np.unique(labels, return_inverse=True)
    _, stratum_code = np.unique(strata, return_inverse=True)
    _, cell, size = np.unique(cluster_code * (stratum_code.max() + 1) + stratum_code, return_inverse=True,
                              return_counts=True)  # fmt: skip
    order = np.argsort(cell, kind="stable")
    members = np.split(order, np.cumsum(size)[:-1])  # each cell's items
    owner = [_plain(clusters[cluster_code[m[0]]]) for m in members]  # each cell's cluster
    weights = np.zeros((next(iter(counts.values())).size, labels.size))
    for n in np.unique(size):  # cells of one size in one vectorized draw
        group = np.flatnonzero(size == n)
        totals = np.stack([counts[owner[j]] for j in group], axis=1) * n
        drawn = rng.multinomial(totals, np.full(n, 1 / n))  # (resamples, cells, n)
        weights[:, np.concatenate([members[j] for j in group])] = drawn.reshape(drawn.shape[0], -1)
    return weights


def by_side(interval: Interval, above: str, below: str, neither: str) -> str:
    """The words for where an interval lies against 0: wholly above, wholly below, or across it."""
    return above if interval.low > 0 else below if interval.high < 0 else neither


def unit_weights(
    clusters: object | Sequence[object],
    strata: object | Sequence[object] | None = None,
    *,
    n_resamples: int = 2000,
    seed: int = 0,
    n_items: int | None = None,
    clusters_within_strata: bool = True,
) -> np.ndarray | list[np.ndarray]:
    """Two-stage bootstrap multiplicities: clusters resampled with replacement (within the stratum of their items,
    e.g. the class, when a cluster holds one), then each drawn cluster's items resampled within it.

    clusters: one label per item (None with n_items: every item its own cluster, the plain bootstrap within strata),
    giving a (resamples, items) matrix; or a list of such arrays, one per trained model scored on items of its own
    whose clusters are shared by label (source images, tasks): the cluster draws are the same for every model, the
    items within them drawn per model, and a list of matrices comes back. clusters_within_strata=False draws the
    clusters from one pool whatever their items' strata (the strata then only fix each drawn cluster's item counts
    per stratum, e.g. a source image's misclassified tests)."""
    if n_resamples < 2:
        raise ValueError(f"n_resamples must be >= 2, got {n_resamples}")
    rng = np.random.default_rng(seed)
    per_model = isinstance(clusters, (list, tuple))
    groups = list(clusters) if per_model else [clusters]
    layers = list(strata) if per_model and isinstance(strata, (list, tuple)) else [strata] * len(groups)
    sizes = [n_items if g is None else len(np.asarray(g)) for g in groups]
    if any(s is None or s < 1 for s in sizes):
        raise ValueError("give the clusters (one label per item) or n_items")
    layouts = [_cluster_layout(g, s, n) for g, s, n in zip(groups, layers, sizes)]
    kinds: dict[Any, Any] = {}
    for labels, st in layouts:
        kinds.update(_cluster_strata(labels, st if clusters_within_strata else np.zeros(labels.size, dtype=int)))
    counts = _cluster_counts(kinds, n_resamples, rng)
    out = [_item_weights(labels, st, counts, rng) for labels, st in layouts]
    return out if per_model else out[0]


def cluster_counts(clusters: object | Sequence[object], strata: object | Sequence[object] | None = None) -> dict:
    """How many clusters the interval rests on, per stratum of clusters (the class a cluster's items share): the
    smallest stratum's count (`fewest`), its effective count for a size-weighted statistic (`effective`: Kish's
    (sum n)^2 / sum n^2 of the cluster sizes, smallest over strata; equal sizes give the count itself) and the
    total. clusters and strata as unit_weights takes them (a list: one array per model, sizes summed by label)."""
    per_model = isinstance(clusters, (list, tuple))
    groups = list(clusters) if per_model else [clusters]
    layers = list(strata) if per_model and isinstance(strata, (list, tuple)) else [strata] * len(groups)
    sizes: dict[Any, float] = {}
    kinds: dict[Any, Any] = {}
    for g, st in zip(groups, layers):
        labels, lay = _cluster_layout(g, st, len(np.asarray(g)))
        kinds.update(_cluster_strata(labels, lay))
        found, counts = np.unique(labels, return_counts=True)
        for c, k in zip(found, counts):
            sizes[_plain(c)] = sizes.get(_plain(c), 0.0) + float(k)
    by_kind: dict[Any, list[float]] = {}
    for cluster, kind in kinds.items():
        by_kind.setdefault(kind, []).append(sizes[cluster])
    fewest = min(len(v) for v in by_kind.values())
    effective = min(sum(v) ** 2 / sum(x * x for x in v) for v in by_kind.values())
    return {"fewest": fewest, "effective": effective, "total": len(kinds), "strata": len(by_kind)}


def clustered_interval(
    per_seed: ArrayLike,
    draws: np.ndarray,
    *,
    clusters: object | Sequence[object] | None = None,
    strata: object | Sequence[object] | None = None,
    n_clusters: int | None = None,
    unit: str = "clusters",
    sharing: str = "items",
    level: float = 0.95,
    words: str = "",
    seeds_words: str = "",
) -> Interval:
    """Interval of the mean over trained models (seeds) of a statistic whose items come in clusters.

    per_seed: the statistic of each seed's model, shape (seeds,); draws: the statistic on two-stage resamples
    (unit_weights: clusters, then items within them), shape (resamples, seeds); clusters, strata: the labels given to
    unit_weights (or n_clusters alone: one stratum of equal clusters). sharing: 'items' (every seed scored on the same
    items; one resample serves all), 'clusters' (each seed its own items within the same clusters, e.g. adversarial
    versions of the same source images; the cluster draws are shared) or 'none' (each seed its own clusters).

    The clusters' variance of the seed mean is the bootstrap's times G / (G - 1), G the smallest stratum's cluster
    count; its degrees of freedom are G_eff - 1, G_eff the smallest stratum's effective count (unequal sizes lower
    it); the seeds' spread over n seeds adds n - 1 (Welch-Satterthwaite). With one seed: estimate +- t * SE, training
    randomness not covered. Under FEW_CLUSTERS effective clusters the df are at most G_eff - 1 and the method says
    so; a stratum of one cluster gives no interval. Neither clusters nor n_clusters: items are independent
    (hierarchical_interval). seeds_words: what the seeds are, where the one "seed" is a statistic of several
    models (seed means) rather than one trained model."""
    if clusters is None and n_clusters is None:
        return hierarchical_interval(per_seed, draws, level=level, shared_items=sharing != "none", words=words)
    _check_level(level)
    if sharing not in ("items", "clusters", "none"):
        raise ValueError(f"sharing must be 'items', 'clusters' or 'none', got {sharing!r}")
    theta = _finite_1d(per_seed, "per_seed")
    d = np.asarray(draws, dtype=np.float64)
    if d.ndim != 2 or d.shape[1] != theta.size or d.shape[0] < 2:
        raise ValueError(f"draws needs shape (resamples >= 2, {theta.size} seeds), got {d.shape}")
    if not np.all(np.isfinite(d)):
        raise ValueError("the statistic was undefined (NaN/inf) on some resamples: pass strata (e.g. the labels)")
    if clusters is not None:
        counts = cluster_counts(clusters, strata)
    else:
        counts = {"fewest": int(n_clusters), "effective": float(n_clusters), "total": int(n_clusters), "strata": 1}
    n, g, g_eff = theta.size, counts["fewest"], counts["effective"]
    estimate = float(theta.mean())
    lead = f"{words}: " if words else ""
    where = " in the smallest stratum" if counts["strata"] > 1 else ""
    seeds = seeds_words or ("1 trained model, training randomness not covered" if n == 1 else f"{n:,} seeds")
    head = f"{lead}{counts['total']:,} {unit} resampled, then items within them ({d.shape[0]:,} resamples)"
    if g < 2:
        return Interval(estimate, math.nan, math.nan, f"{head}; 1 of the {unit}{where}: no interval")
    inflate = g / (g - 1)
    df_units = max(g_eff - 1.0, 1.0)
    if sharing == "none" and n > 1:
        total = max(float(theta.var(ddof=1)), float(d.var(0, ddof=1).mean()) * inflate) / n
        df = float(n - 1)
        how = f"{seeds}, each its own {unit}"
    else:
        units = float(d.mean(1).var(ddof=1)) * inflate
        between = float(theta.var(ddof=1)) / n if n > 1 else 0.0
        total = between + units
        parts = (between**2 / (n - 1) if n > 1 else 0.0) + units**2 / df_units
        df = total**2 / parts if parts > 0 else math.inf
        how = seeds if n == 1 else f"{seeds} on {'the same items' if sharing == 'items' else 'shared ' + unit}"
    few = g_eff < FEW_CLUSTERS
    if few:
        df = min(df, df_units)
    unequal = f", {g_eff:.1f} effective by size" if g_eff < 0.9 * g else ""
    note = (
        f"; only {g} {unit}{where}{unequal}" if few else (f"; {g_eff:.1f} effective {unit}{where}" if unequal else "")
    )
    quantile = sps.t.ppf(0.5 + level / 2, df) if math.isfinite(df) else sps.norm.ppf(0.5 + level / 2)
    half = float(quantile) * math.sqrt(total)
    df_text = "normal" if not math.isfinite(df) else f"{df:.1f} df"
    method = f"{head}, combined with a t interval ({how}; {df_text}){note}"
    return Interval(estimate, estimate - half, estimate + half, method, math.sqrt(total), df)


def seeds_and_items_contrast(
    labels: ArrayLike,
    terms: Sequence[tuple[float, np.ndarray]],
    *,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    unit: str = "test items",
) -> Interval:
    """Mean over seeds of sum_j w_j AUC(scores_j[s]), with the hierarchical interval over items and seeds.

    terms: (weight, scores of shape (seeds, items)); every seed and term is scored on the same items, which are
    resampled within class (one multiplicity vector for every seed and term: the contrast is paired)."""
    _check_level(level)
    arrays = [np.atleast_2d(np.asarray(t, dtype=np.float64)) for _, t in terms]
    if not arrays or any(a.shape != arrays[0].shape for a in arrays):
        raise ValueError(f"every term needs the same (seeds, items) shape, got {[a.shape for a in arrays]}")
    if n_resamples < 2:
        raise ValueError(f"n_resamples must be >= 2, got {n_resamples}")
    n_seeds, n = arrays[0].shape
    y = _binary_labels(labels, n)
    aucs = [[(w, WeightedAuc(y, a[s])) for (w, _), a in zip(terms, arrays)] for s in range(n_seeds)]
    rng = np.random.default_rng(seed)

    def per_seed(weights: np.ndarray) -> np.ndarray:
        """The statistic of every seed (columns) on each resample of items (rows of weights)."""
        by_item = items_first(weights)  # one transposition for every seed and term
        return np.stack([sum(w * auc.many_by_item(by_item) for w, auc in seed_terms) for seed_terms in aucs], axis=1)

    blocks = _count_blocks(_resamples(n, y, n_resamples, rng), n, n_resamples)
    draws = np.concatenate([per_seed(block) for block in blocks])
    paired = "paired " if len(terms) > 1 else ""
    words = f"{paired}AUC over {n:,} {unit} (resampled within class)"
    return hierarchical_interval(per_seed(np.ones((1, n)))[0], draws, level=level, words=words)


AucTerm = tuple[float, np.ndarray, np.ndarray | None]  # (weight, scores, items included or None for all)


def _group_terms(
    labels: ArrayLike, terms: Sequence[AucTerm]
) -> tuple[np.ndarray, list[tuple[float, WeightedAuc, np.ndarray]]]:
    """One group's labels and its terms as (weight, weighted AUC, 0/1 inclusion weights)."""
    y = np.asarray(labels).astype(bool)
    out = []
    for weight, scores, keep in terms:
        mask = np.ones(y.size) if keep is None else np.asarray(keep, dtype=np.float64)
        if mask.shape != y.shape:
            raise ValueError(f"a term's inclusion mask needs one entry per item, got {mask.shape} for {y.size} items")
        out.append((float(weight), WeightedAuc(y, scores), mask))
    return y, out


def _grouped_seed_draws(groups: Sequence[tuple], n_resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    """(statistic per seed, its bootstrap draws of shape (resamples, seeds), words on what was resampled) of the mean
    over groups of sum_j w_j AUC_j; a term's scores are (items,) for one model or (seeds, items)."""
    if not groups:
        raise ValueError("pass at least one group")
    prepared = []
    for g in groups:
        y = np.asarray(g[0]).astype(bool)
        terms = [(float(w), np.atleast_2d(np.asarray(sc, dtype=np.float64)), keep) for w, sc, keep in g[1]]
        shapes = {t[1].shape for t in terms}
        if len(shapes) != 1 or next(iter(shapes))[1] != y.size:
            raise ValueError(f"every term needs the same (seeds, {y.size} items) shape, got {sorted(shapes)}")
        prepared.append((y, terms, np.asarray(g[2]) if len(g) > 2 else y))
    n_seeds = {t[1].shape[0] for _, terms, _ in prepared for t in terms}
    if len(n_seeds) != 1:
        raise ValueError(f"every group needs the same number of seeds, got {sorted(n_seeds)}")
    seeds = n_seeds.pop()
    per_group = [
        [_group_terms(y, [(w, sc[k], keep) for w, sc, keep in terms])[1] for k in range(seeds)]
        for y, terms, _ in prepared
    ]

    def per_seed(weights: Sequence[np.ndarray]) -> np.ndarray:
        """The statistic of every seed (columns) on each resample (rows) when group g's item i appears
        weights[g][r, i] times in resample r: the mean over groups of each group's weighted sum of AUCs."""
        by_item = [items_first(wg) for wg in weights]  # one transposition per group for every seed and term
        return np.stack(
            [
                np.mean(
                    np.stack(
                        [
                            sum(w * auc.many_by_item(m[:, None] * wg) for w, auc, m in g[k])
                            for g, wg in zip(per_group, by_item)
                        ],
                        1,
                    ),
                    axis=1,
                )
                for k in range(seeds)
            ],
            axis=1,
        )

    rng = np.random.default_rng(seed)
    draws = [_resamples(y.size, st, n_resamples, rng) for y, _, st in prepared]
    blocks = []
    for start in range(0, n_resamples, _BLOCK):  # groups drawn in turn within each resample, as one at a time would
        counts = [np.empty((min(_BLOCK, n_resamples - start), y.size)) for y, _, _ in prepared]
        for r in range(counts[0].shape[0]):
            for c, d in zip(counts, draws):
                c[r] = np.bincount(next(d), minlength=c.shape[1])
        blocks.append(per_seed(counts))
    n = sum(y.size for y, _, _ in prepared)
    paired = "paired " if any(len(t) > 1 for _, t, _ in prepared) else ""
    within = "within set and class" if len(prepared) > 1 else "within class"
    return (
        per_seed([np.ones((1, y.size)) for y, _, _ in prepared])[0],
        np.concatenate(blocks),
        f"{paired}|{n:,}|{within}",
    )


def grouped_auc_contrast(
    groups: Sequence[tuple[ArrayLike, Sequence[AucTerm]] | tuple[ArrayLike, Sequence[AucTerm], ArrayLike]],
    *,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    unit: str = "texts",
) -> Interval:
    """Mean over groups of sum_j w_j AUC_j, with a paired bootstrap over each group's items (within class).

    groups: (labels, terms) or (labels, terms, strata) per group (e.g. per downstream set); a term is (weight, scores,
    keep), its AUC taken over the items where keep is 1 (all when None). Items are resampled within their stratum
    (default: their class). Every term of a group is scored on the same items, so one resample of the group's items
    serves all its terms: the contrast is paired."""
    _check_level(level)
    theta, dist, how = _grouped_seed_draws(groups, n_resamples, seed)
    paired, n, within = how.split("|")
    words = f"{paired}bootstrap over {n} {unit} ({within}), {n_resamples:,} resamples"
    return _finish(float(theta[0]), dist[:, 0], level, words)


SeedsAucTerm = tuple[float, np.ndarray, np.ndarray | None]  # (weight, scores of shape (seeds, items), keep or None)


def grouped_seeds_auc_contrast(groups: Sequence[tuple], **options: Any) -> Interval:
    """grouped_auc_contrast over several trained models: the mean over seeds of (mean over groups of sum_j w_j AUC_j),
    every seed scored on the same items, with the hierarchical interval over items and seeds.

    groups as for grouped_auc_contrast, with each term's scores of shape (seeds, items); options n_resamples (2000),
    level (0.95), seed (0), unit ("texts"). Each resample draws one multiplicity vector per group (within its
    strata, default the class) that every seed and term share, so the contrast is paired and the item noise the
    seeds share is not averaged away (hierarchical_interval, shared items). With one seed it is grouped_auc_contrast:
    the same estimate and, from the same seed, the same percentile interval."""
    n_resamples, level = int(options.get("n_resamples", 2000)), float(options.get("level", 0.95))
    _check_level(level)
    if n_resamples < 2:
        raise ValueError(f"n_resamples must be >= 2, got {n_resamples}")
    theta, dist, how = _grouped_seed_draws(groups, n_resamples, int(options.get("seed", 0)))
    paired, n, within = how.split("|")
    words = f"{paired}AUC over {n} {options.get('unit', 'texts')} (resampled {within})"
    return hierarchical_interval(theta, dist, level=level, words=words)


def grouped_auc_null(
    groups: Sequence[tuple[ArrayLike, ArrayLike]], n_permutations: int = 1000, seed: int = 0
) -> np.ndarray:
    """Null of the mean over groups of AUC(labels, scores) when each group's labels are permuted (no signal)."""
    if n_permutations < 1:
        raise ValueError(f"n_permutations must be >= 1, got {n_permutations}")
    rng = np.random.default_rng(seed)
    null = np.zeros(n_permutations)
    for labels, scores in groups:
        s = _finite_1d(scores, "scores")
        y = _binary_labels(labels, s.size)
        n_pos = int(y.sum())
        ranks = sps.rankdata(s)
        picked = np.argsort(rng.random((n_permutations, s.size)), axis=1)[:, :n_pos]  # a random positive set per row
        null += (ranks[picked].sum(1) - n_pos * (n_pos + 1) / 2) / (n_pos * (s.size - n_pos))
    return null / len(groups)


def seeds_and_items_auc(
    labels: ArrayLike, scores_a: np.ndarray, scores_b: np.ndarray | None = None, **options: object
) -> Interval:
    """Mean over seeds of AUC(a_s), or of AUC(a_s) - AUC(b_s): seeds_and_items_contrast of one or two terms."""
    terms = [(1.0, scores_a)] + ([(-1.0, scores_b)] if scores_b is not None else [])
    return seeds_and_items_contrast(labels, terms, **options)


def seeds_and_items_perplexity(
    nll_a: ArrayLike,
    counts: ArrayLike,
    nll_b: ArrayLike | None = None,
    *,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    unit: str = "test sentences",
) -> Interval:
    """Mean over seeds of the corpus perplexity exp(sum nll / sum counts), or of the ratio ppl_a / ppl_b, with the
    hierarchical interval over items and seeds.

    nll_a, nll_b: summed token NLL per (seed, item); counts: tokens per item (shared by every seed). The items are
    resampled with one multiplicity vector for every seed and both models (paired)."""
    _check_level(level)
    a = np.atleast_2d(np.asarray(nll_a, dtype=np.float64))
    b = None if nll_b is None else np.atleast_2d(np.asarray(nll_b, dtype=np.float64))
    c = np.asarray(counts, dtype=np.float64)
    if a.shape[1] != c.size or (b is not None and b.shape != a.shape):
        raise ValueError(f"need (seeds, items) NLL sums and one count per item, got {a.shape}, {c.shape}")
    if n_resamples < 2:
        raise ValueError(f"n_resamples must be >= 2, got {n_resamples}")
    n = a.shape[1]
    rng = np.random.default_rng(seed)
    weights = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(n_resamples)]).astype(float)

    def per_seed(w: np.ndarray) -> np.ndarray:
        """(resamples, seeds) perplexity (ratio) under item multiplicities w (resamples, items)."""
        tokens = (w @ c)[:, None]
        log_ppl = (w @ a.T) / tokens
        return np.exp(log_ppl - (w @ b.T) / tokens if b is not None else log_ppl)

    what = "perplexity ratio" if b is not None else "perplexity"
    words = f"{'paired ' if b is not None else ''}{what} over {n:,} {unit}"
    return hierarchical_interval(per_seed(np.ones((1, n)))[0], per_seed(weights), level=level, words=words)


class WeightedApfd:
    """APFD of a resample of tests (per-test multiplicities), each method keeping its own order by score."""

    def __init__(self, misclassified: np.ndarray, scores: np.ndarray) -> None:
        """Order the tests once: score descending, ties by index (stable)."""
        self.order = np.argsort(-scores, kind="stable")
        self.flags = misclassified[self.order]

    def __call__(self, weights: np.ndarray) -> float:
        """APFD = 1 - sum(o_i)/(k n) + 1/(2n) when test i appears weights[i] times, copies kept adjacent."""
        c = weights[self.order]
        last = np.cumsum(c)
        n = last[-1]
        c_f, last_f = c[self.flags], last[self.flags]
        k = c_f.sum()
        # the c copies of a test occupy positions last-c+1 .. last: their sum is c*last - c(c-1)/2
        position_sum = np.sum(c_f * last_f - c_f * (c_f - 1) / 2)
        return float(1.0 - position_sum / (k * n) + 1.0 / (2 * n)) if k > 0 else math.nan


def paired_apfd_draws(
    misclassified: Sequence[bool] | np.ndarray,
    scores_a: ArrayLike,
    scores_b: ArrayLike,
    *,
    n_resamples: int = 2000,
    seed: int = 0,
    stratify: bool = True,
) -> tuple[float, np.ndarray, str]:
    """APFD(a) - APFD(b) on the full set, its paired bootstrap draws over tests (each method orders a resample by its
    score, descending; the misclassified count fixed with stratify), and the method words."""
    flags = np.asarray(misclassified)
    if flags.dtype != bool and (flags.ndim != 1 or not np.isin(flags, (0, 1)).all()):
        raise ValueError("misclassified must hold booleans (True = misclassified test)")
    flags = flags.astype(bool)
    a = _finite_1d(scores_a, "scores_a")
    b = _finite_1d(scores_b, "scores_b")
    _, n, _ = _bootstrap_setup((flags, a, b), n_resamples, 0.95, None)
    if not flags.any():
        raise ValueError("APFD is undefined when no test is misclassified: the order reveals no fault")
    strata = flags if stratify and not flags.all() else None
    apfd_a, apfd_b = WeightedApfd(flags, a), WeightedApfd(flags, b)
    rng = np.random.default_rng(seed)
    weights = (np.bincount(idx, minlength=n).astype(np.float64) for idx in _resamples(n, strata, n_resamples, rng))
    dist = np.array([apfd_a(w) - apfd_b(w) for w in weights])
    ones = np.ones(n)
    method = _describe(n, n_resamples, True, None, "tests")
    if strata is not None:
        method += ", misclassified count fixed"
    return apfd_a(ones) - apfd_b(ones), dist, method


def paired_bootstrap_apfd(
    misclassified: Sequence[bool] | np.ndarray,
    scores_a: ArrayLike,
    scores_b: ArrayLike,
    *,
    level: float = 0.95,
    **draws,
) -> Interval:
    """Interval of APFD(a) - APFD(b): resample tests, each method orders the resample by its score (descending).
    `draws`: n_resamples, seed, stratify of paired_apfd_draws."""
    _check_level(level)
    estimate, dist, method = paired_apfd_draws(misclassified, scores_a, scores_b, **draws)
    return _finish(estimate, dist, level, method)


# ---------------------------------------------------------------------------------------------------------------
# permutation nulls


def permutation_null(
    statistic: Callable[[np.ndarray, np.ndarray], float],
    scores: ArrayLike,
    labels: ArrayLike,
    n_permutations: int = 1000,
    seed: int = 0,
) -> np.ndarray:
    """Null distribution of statistic(scores, permuted labels); note the argument order (scores first)."""
    s = np.asarray(scores)
    y = np.asarray(labels)
    if s.shape[:1] != y.shape[:1]:
        raise ValueError(f"scores and labels need the same length, got {s.shape} and {y.shape}")
    if n_permutations < 1:
        raise ValueError(f"n_permutations must be >= 1, got {n_permutations}")
    rng = np.random.default_rng(seed)
    return np.array([statistic(s, rng.permutation(y)) for _ in range(n_permutations)], dtype=np.float64)


def null_band(null: ArrayLike, level: float = 0.95) -> tuple[float, float]:
    """Two-sided percentile band of a null distribution."""
    _check_level(level)
    return _percentiles(_finite_1d(null, "null"), level)


def null_p_value(observed: float, null: ArrayLike, alternative: str = "greater") -> float:
    """Permutation p-value (1 + #{null at least as extreme})/(1 + n); 'greater', 'less' or 'two-sided'."""
    nul = _finite_1d(null, "null")
    tol = 1e-12 * max(1.0, abs(observed))  # a null value equal to the observed one up to rounding counts
    greater = (1 + np.count_nonzero(nul >= observed - tol)) / (1 + nul.size)
    less = (1 + np.count_nonzero(nul <= observed + tol)) / (1 + nul.size)
    if alternative == "greater":
        return float(greater)
    if alternative == "less":
        return float(less)
    if alternative == "two-sided":
        return float(min(1.0, 2 * min(greater, less)))
    raise ValueError(f"alternative must be 'greater', 'less' or 'two-sided', got {alternative!r}")


def _best_threshold(scores: np.ndarray, members: np.ndarray) -> float:
    """Threshold t maximizing balanced accuracy of 'member iff score >= t' (midpoint between distinct scores)."""
    order = np.argsort(-scores, kind="stable")
    s, m = scores[order], members[order]
    n_mem = m.sum()
    n_non = m.size - n_mem
    # cut after j items (j = 0..N): those above are called members; only cuts between distinct scores count
    tp = np.concatenate([[0], np.cumsum(m)])
    fp = np.arange(m.size + 1) - tp
    valid = np.ones(m.size + 1, dtype=bool)
    valid[1:-1] = s[:-1] > s[1:]
    balanced = 0.5 * (tp / n_mem + (n_non - fp) / n_non)
    j = int(np.argmax(np.where(valid, balanced, -1.0)))
    if j == 0:
        return math.inf
    if j == m.size:
        return -math.inf
    return float(0.5 * (s[j - 1] + s[j]))


def _attack_accuracy(member: np.ndarray, nonmember: np.ndarray, rng: np.random.Generator) -> float:
    """Balanced accuracy on one random half of a threshold fitted on the other half (each group split in half)."""
    pm, pn = rng.permutation(member.size), rng.permutation(nonmember.size)
    hm, hn = member.size // 2, nonmember.size // 2
    fit = np.concatenate([member[pm[:hm]], nonmember[pn[:hn]]])
    fit_members = np.r_[np.ones(hm, dtype=bool), np.zeros(hn, dtype=bool)]
    t = _best_threshold(fit, fit_members)
    test_mem, test_non = member[pm[hm:]], nonmember[pn[hn:]]
    return float(0.5 * (np.mean(test_mem >= t) + np.mean(test_non < t)))


def _attack_inputs(member_scores: ArrayLike, nonmember_scores: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Validate the two score groups of a threshold attack (at least 2 each, so both halves are non-empty)."""
    mem = _finite_1d(member_scores, "member_scores")
    non = _finite_1d(nonmember_scores, "nonmember_scores")
    if mem.size < 2 or non.size < 2:
        raise ValueError(f"need at least 2 members and 2 non-members to split in half, got {mem.size}, {non.size}")
    return mem, non


def threshold_attack_accuracy(member_scores: ArrayLike, nonmember_scores: ArrayLike, seed: int = 0) -> float:
    """Membership attack 'member iff score >= t', t fitted on a random half, balanced accuracy on the other half."""
    mem, non = _attack_inputs(member_scores, nonmember_scores)
    return _attack_accuracy(mem, non, np.random.default_rng(seed))


def attack_null(
    member_scores: ArrayLike, nonmember_scores: ArrayLike, n_permutations: int = 1000, seed: int = 0
) -> np.ndarray:
    """Permutation null of threshold_attack_accuracy: member/non-member labels shuffled, group sizes kept."""
    mem, non = _attack_inputs(member_scores, nonmember_scores)
    if n_permutations < 1:
        raise ValueError(f"n_permutations must be >= 1, got {n_permutations}")
    pooled = np.concatenate([mem, non])
    rng = np.random.default_rng(seed)
    null = np.empty(n_permutations)
    for i in range(n_permutations):
        shuffled = rng.permutation(pooled)
        null[i] = _attack_accuracy(shuffled[: mem.size], shuffled[mem.size :], rng)
    return null


def max_null(pool: ArrayLike, n_candidates: int = 10, n_draws: int = 1000, seed: int = 0) -> np.ndarray:
    """Null of the maximum over n_candidates distinct values drawn at random (without replacement) from pool."""
    return subset_nulls(pool, n_candidates, n_draws, seed)["max"]


def subset_nulls(pool: ArrayLike, n_candidates: int = 10, n_draws: int = 1000, seed: int = 0) -> dict[str, np.ndarray]:
    """Nulls of the maximum and the mean over n_candidates distinct values drawn at random (without replacement)
    from pool, both over the same draws ({"max": ..., "mean": ...}, n_draws each), and the draws themselves ("drawn",
    n_draws × n_candidates, in the order drawn: the mean of its first k columns is the null of the mean of k)."""
    values = _finite_1d(pool, "pool")
    if not 1 <= n_candidates <= values.size:
        raise ValueError(f"n_candidates must lie in [1, len(pool)={values.size:,}], got {n_candidates}")
    if n_draws < 1:
        raise ValueError(f"n_draws must be >= 1, got {n_draws}")
    rng = np.random.default_rng(seed)
    # Generator.choice without replacement costs O(n_candidates) per draw for a large pool (Floyd's algorithm)
    drawn = np.stack([values[rng.choice(values.size, n_candidates, replace=False)] for _ in range(n_draws)])
    return {"max": drawn.max(axis=1), "mean": drawn.mean(axis=1), "drawn": drawn}


# ---------------------------------------------------------------------------------------------------------------
# seeds


def log_slope_weights(x: ArrayLike) -> np.ndarray:
    """Weights w with sum(w * y) the least-squares slope of y against log10(x): the change of y per tenfold x, as a
    linear contrast (so a paired bootstrap of the y's gives its interval)."""
    lx = np.log10(_finite_1d(x, "x"))
    if len(lx) < 2 or np.ptp(lx) == 0:
        raise ValueError("a slope needs at least two distinct x")
    d = lx - lx.mean()
    return d / float(d @ d)


def seed_summary(values: ArrayLike, level: float = 0.95) -> Interval:
    """Mean over seeds with a Student-t interval; one seed gives low = high = mean."""
    _check_level(level)
    v = _finite_1d(values, "values")
    mean = float(v.mean())
    if v.size == 1:
        return Interval(mean, mean, mean, "1 seed, no interval")
    se = float(v.std(ddof=1)) / math.sqrt(v.size)
    half = float(sps.t.ppf(0.5 + level / 2, v.size - 1)) * se
    return Interval(mean, mean - half, mean + half, f"mean over {v.size:,} seeds, t interval", se, float(v.size - 1))


def paired_seed_diff(a: ArrayLike, b: ArrayLike, level: float = 0.95) -> Interval:
    """seed_summary of the per-seed differences a - b (a[i] and b[i] share seed i)."""
    x, y = _finite_1d(a, "a"), _finite_1d(b, "b")
    if x.size != y.size:
        raise ValueError(f"a and b need one value per seed each, got {x.size} and {y.size}")
    summary = seed_summary(x - y, level)
    if x.size == 1:
        return summary
    return replace(summary, method=f"paired difference over {x.size:,} seeds, t interval")


def simulated_power(detects: Callable[[np.random.Generator], bool], n_sims: int = 200, seed: int = 0) -> float:
    """The power of a test at an effect fixed in advance (an equivalence row's margin): the share of `n_sims` data
    sets simulated at that effect (detects(rng) builds one and says whether the test detects the effect)."""
    if n_sims < 1:
        raise ValueError(f"n_sims must be >= 1, got {n_sims}")
    rng = np.random.default_rng(seed)
    return float(np.mean([bool(detects(rng)) for _ in range(n_sims)]))


def interval_df(iv: Interval) -> float:
    """The degrees of freedom of a t interval, as its method states them ("2 df", "12.3 df"); inf for a normal or
    percentile interval (no df stated)."""
    import re

    found = re.findall(r"(\d+(?:\.\d+)?) df\b", iv.method)
    return float(found[-1]) if found else math.inf


def _interval_procedure(iv: Interval, level: float) -> tuple[float, float, float]:
    """(df, quantile, standard error) of the procedure that made `iv`: df from its method (interval_df), the t (or
    normal) quantile at `level`, and the standard error its half-width implies."""
    df = interval_df(iv)
    quantile = float(sps.t.ppf(0.5 + level / 2, df) if math.isfinite(df) else sps.norm.ppf(0.5 + level / 2))
    return df, quantile, (iv.high - iv.low) / (2 * quantile)


def _simulated_world(rng: np.random.Generator, true: float, se: float, df: float) -> tuple[float, float]:
    """One simulated run of an interval procedure: its estimate around `true`, and its standard error re-estimated
    with `df` degrees of freedom (exact where df is infinite)."""
    estimate = rng.normal(true, se)
    return estimate, se * math.sqrt(rng.chisquare(df) / df) if math.isfinite(df) else se


def t_interval_power(iv: Interval, effect: float, n_sims: int = 2_000, seed: int = 0, level: float = 0.95) -> float:
    """The power of `iv`'s test to detect a true difference of `effect` (an equivalence row's margin), by simulation:
    worlds whose estimate is drawn around `effect` with the standard error the interval implies (its half-width over
    its t quantile, df from its method: interval_df) and whose standard error is itself re-estimated with that many
    df; the share of worlds whose interval excludes 0 on the effect's side. It reads the interval's width, never its
    estimate, so it does not depend on the effect the run happens to show."""
    df, quantile, se = _interval_procedure(iv, level)
    if not (math.isfinite(se) and se > 0):
        return 1.0 if math.isfinite(se) else 0.0  # an interval of zero width detects any effect; no interval, none

    def detects(rng: np.random.Generator) -> bool:
        estimate, spread = _simulated_world(rng, abs(effect), se, df)
        return estimate - quantile * spread > 0

    return simulated_power(detects, n_sims, seed)


def t_equivalence_power(
    iv: Interval, margin: float, n_sims: int = 2_000, seed: int = 0, level: float = 0.95, true: float = 0.0
) -> float:
    """The power of an equivalence decision with `iv`'s procedure (held when the whole interval lies inside
    ±margin): by simulation, worlds whose estimate is drawn around `true` (no difference, by default) with the
    standard error the interval implies and whose standard error is re-estimated with its df (as t_interval_power);
    the share of worlds whose interval lies inside the margin. Like t_interval_power it reads the interval's width,
    never its estimate."""
    df, quantile, se = _interval_procedure(iv, level)
    if not (math.isfinite(se) and se > 0):
        return float(abs(true) < abs(margin)) if math.isfinite(se) else 0.0

    def inside(rng: np.random.Generator) -> bool:
        estimate, spread = _simulated_world(rng, true, se, df)
        return -abs(margin) < estimate - quantile * spread and estimate + quantile * spread < abs(margin)

    return simulated_power(inside, n_sims, seed)


def exact(value: float, method: str = "exact recomputation of a published example (no sampling)") -> Interval:
    """A degenerate interval for a number computed exactly, with nothing to resample."""
    return Interval(float(value), float(value), float(value), method)
