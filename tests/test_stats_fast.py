"""The vectorized bootstrap AUCs against the direct formulas they replaced: the same numbers on random data."""

from __future__ import annotations

import numpy as np
import pytest

from repro import stats


class OldWeightedAuc:
    """The resample AUC as first written (tied groups summed per resample, a cumulative sum over every item): the
    reference the faster WeightedAuc must equal."""

    def __init__(self, labels: np.ndarray, scores: np.ndarray) -> None:
        s = np.asarray(scores, dtype=np.float64)
        self.positive = np.asarray(labels).astype(bool).astype(np.float64)
        _, groups = np.unique(s, return_inverse=True)
        self.order = np.argsort(groups, kind="stable")
        self.starts = np.r_[0, np.flatnonzero(np.diff(groups[self.order])) + 1]
        self.untied = len(self.starts) == s.size
        self.positive_sorted = self.positive[self.order]

    def many(self, weights: np.ndarray) -> np.ndarray:
        w = weights[:, self.order]
        pos = w * self.positive_sorted
        if self.untied:
            neg = w - pos
        else:
            pos = np.add.reduceat(pos, self.starts, axis=1)
            neg = np.add.reduceat(w, self.starts, axis=1) - pos
        below = np.cumsum(neg, axis=1) - neg
        return np.einsum("rg,rg->r", pos, below + 0.5 * neg) / (pos.sum(axis=1) * neg.sum(axis=1))


def _data(rng: np.random.Generator, n: int, ties: int | None) -> tuple[np.ndarray, np.ndarray]:
    y = (rng.random(n) < 0.4).astype(int)
    y[:2] = (0, 1)
    s = rng.normal(size=n) + y
    return y, (np.round(s, ties) if ties is not None else s)


@pytest.mark.parametrize("ties", [None, 1, 0])
def test_weighted_auc_equals_the_first_formula_exactly(ties: int | None) -> None:
    rng = np.random.default_rng(3)
    y, s = _data(rng, 701, ties)
    weights = np.stack([np.bincount(rng.integers(0, 701, 701), minlength=701) for _ in range(300)]).astype(float)
    weights[:, :40] *= rng.integers(0, 2, (300, 40))  # inclusion masks zero some items
    weights[:3] *= 2  # a cluster bootstrap draws an item more often
    new, old = stats.WeightedAuc(y, s), OldWeightedAuc(y, s)
    assert np.array_equal(new.many(weights), old.many(weights))  # whole-number sums: exact, bit for bit
    assert np.array_equal(new.many_by_item(stats.items_first(weights)), old.many(weights))
    ones = np.ones((1, 701))
    assert new.many(ones)[0] == old.many(ones)[0] == pytest.approx(stats.fast_auc(y, s), abs=1e-15)


def test_weighted_auc_refuses_a_wrong_layout() -> None:
    auc = stats.WeightedAuc([0, 1, 0], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="items, resamples"):
        auc.many_by_item(np.ones((2, 3)))


def _old_weights(n: int, strata: np.ndarray | None, n_resamples: int, seed: int) -> np.ndarray:
    """Multiplicities as first computed: one bincount per resample of stats._resamples' index arrays."""
    draws = stats._resamples(n, strata, n_resamples, np.random.default_rng(seed))
    return np.stack([np.bincount(next(draws), minlength=n) for _ in range(n_resamples)]).astype(np.float64)


@pytest.mark.parametrize("stratified", [False, True])
def test_resample_weights_are_the_resamples_drawn_one_at_a_time(stratified: bool) -> None:
    y, _ = _data(np.random.default_rng(4), 333, None)
    strata = y if stratified else None
    new = stats.resample_weights(333, strata, n_resamples=1203, seed=7)  # three blocks, the last one partial
    assert new.shape == (1203, 333) and np.array_equal(new, _old_weights(333, strata, 1203, 7))
    blocks = np.concatenate(list(stats._count_blocks(stats._resamples(333, strata, 1203, np.random.default_rng(7)),
                                                     333, 1203)))  # fmt: skip
    assert np.array_equal(blocks, new)


def test_paired_auc_interval_equals_the_direct_resampling() -> None:
    from repro import metrics

    rng = np.random.default_rng(5)
    y, a = _data(rng, 400, 1)
    b = a + rng.normal(size=400)
    iv = stats.paired_bootstrap_diff(metrics.auroc, y, a, b, n_resamples=300, seed=2)
    w = _old_weights(400, y, 300, 2)
    dist = OldWeightedAuc(y, a).many(w) - OldWeightedAuc(y, b).many(w)
    low, high = np.quantile(dist, [(1 - 0.95) / 2, 1 - (1 - 0.95) / 2])  # as stats computes the band
    assert (iv.low, iv.high) == (low, high)
    assert iv.estimate == metrics.auroc(y, a) - metrics.auroc(y, b)
    assert iv.method == "paired bootstrap over 400 items, 300 resamples, within class"
    again = stats.bootstrap_interval(
        iv.estimate, dist, n_items=400, n_resamples=300, strata=y, paired=True
    )  # the same interval from draws computed elsewhere
    assert again == iv


def test_seeds_and_items_contrast_equals_the_direct_resampling() -> None:
    rng = np.random.default_rng(6)
    y, _ = _data(rng, 300, None)
    a = np.round(rng.normal(size=(3, 300)) + y, 1)
    b = rng.normal(size=(3, 300)) + 0.5 * y
    iv = stats.seeds_and_items_contrast(y, [(1.0, a), (-1.0, b)], n_resamples=700, seed=9)
    w = _old_weights(300, y.astype(bool), 700, 9)
    ones = np.ones((1, 300))
    per_seed = [OldWeightedAuc(y, a[s]).many(ones)[0] - OldWeightedAuc(y, b[s]).many(ones)[0] for s in range(3)]
    draws = np.stack([OldWeightedAuc(y, a[s]).many(w) - OldWeightedAuc(y, b[s]).many(w) for s in range(3)], axis=1)
    words = "paired AUC over 300 test items (resampled within class)"
    assert iv == stats.hierarchical_interval(per_seed, draws, words=words)


def test_grouped_contrast_equals_the_direct_resampling() -> None:
    rng = np.random.default_rng(12)
    groups = []
    for n in (150, 90):
        y, s = _data(rng, n, 1)
        keep = (rng.random(n) < 0.8).astype(float)
        keep[:2] = 1
        groups.append((y, [(1.0, s, keep), (-1.0, s + rng.normal(size=n), None)]))
    iv = stats.grouped_auc_contrast(groups, n_resamples=250, seed=3)
    rng_w = np.random.default_rng(3)
    draws = [stats._resamples(y.size, y.astype(bool), 250, rng_w) for y, _ in groups]
    counts = [np.zeros((250, y.size)) for y, _ in groups]
    for r in range(250):
        for c, d in zip(counts, draws):
            c[r] = np.bincount(next(d), minlength=c.shape[1])
    dist = np.mean(
        [
            sum(w * OldWeightedAuc(y, s).many((np.ones(y.size) if k is None else k) * c) for w, s, k in terms)
            for (y, terms), c in zip(groups, counts)
        ],
        axis=0,
    )
    low, high = np.quantile(dist, [(1 - 0.95) / 2, 1 - (1 - 0.95) / 2])  # as stats computes the band
    assert (iv.low, iv.high) == (low, high)
