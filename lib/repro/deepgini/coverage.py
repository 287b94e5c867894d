"""Neuron coverage on activation matrices (NAC, KMNC, NBC, SNAC, TKNC, surprise buckets) and CTM/CAM orders.

Every criterion turns an activation matrix (tests x neurons) into a sparse incidence matrix
(tests x coverage items): item j is covered by test i when entry (i, j) is 1. CTM sorts tests by
their own item count; CAM is the greedy "additional coverage" order, kept exact by decrementing
the gain of only those tests that share a newly covered item (an inverted index), never by
rescanning every test at every step.

The artifact's greedy CAM (metrics.py, rank_fast of nac, nbc, kmnc; tknc.rank) differs in its ties: it starts
from a test drawn uniformly at random (np.random.choice, unseeded) whatever its coverage, then scans the remaining
tests in index order and keeps the first with the largest union (strict >), so ties go to the lowest index; it
stops when no test adds coverage or one test is left (that last test is not appended). Its LSC/DSC "CAM"
(LSC/DSC.rank_fast) is not greedy: one test per occupied bucket, drawn after np.random.seed(41), buckets in
ascending order. We start from the largest gain and break every tie by a seeded permutation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import sparse
from scipy.special import expit

from .prioritizers import seeded_order

__all__ = [
    "Leftovers",
    "NeuronStats",
    "bucket_items",
    "cam_order",
    "cam_order_naive",
    "ctm_order",
    "fit_stats",
    "kmnc_items",
    "nac_items",
    "nbc_items",
    "snac_items",
    "tknc_items",
]


@dataclass(frozen=True)
class NeuronStats:
    """Per-neuron range of the training activations and the layer each neuron belongs to."""

    low: np.ndarray
    high: np.ndarray
    std: np.ndarray
    layer: np.ndarray


def fit_stats(train_acts: np.ndarray, layer: np.ndarray) -> NeuronStats:
    """Minimum, maximum and standard deviation of each neuron over the training set."""
    a = np.asarray(train_acts, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != len(layer):
        raise ValueError(f"train_acts must be (n, {len(layer)}), got {a.shape}")
    return NeuronStats(a.min(axis=0), a.max(axis=0), a.std(axis=0), np.asarray(layer))


def _incidence(rows: np.ndarray, cols: np.ndarray, n_tests: int, n_items: int) -> sparse.csr_matrix:
    """0/1 CSR matrix tests x items from the (row, col) pairs that are covered."""
    data = np.ones(len(rows), dtype=np.int8)
    return sparse.csr_matrix((data, (rows, cols)), shape=(n_tests, n_items))


def _dense_incidence(covered: np.ndarray) -> sparse.csr_matrix:
    """CSR incidence from a dense boolean tests x items matrix."""
    rows, cols = np.nonzero(covered)
    return _incidence(rows, cols, *covered.shape)


def scaled(acts: np.ndarray, stats: NeuronStats) -> np.ndarray:
    """Activations rescaled per neuron so the training range maps to [0, 1] (constant neurons -> 0)."""
    span = np.where(stats.high > stats.low, stats.high - stats.low, np.inf)
    return (np.asarray(acts, dtype=np.float64) - stats.low) / span


def _digitize(values: np.ndarray, lower: float, upper: float, n_edges: int) -> np.ndarray:
    """Index of `values` among n_edges equal-spaced edges of [lower, upper]: 0 below, n_edges at or above upper."""
    return np.digitize(values, np.linspace(lower, upper, n_edges)).astype(np.int64)


# The artifact's NAC (metrics.py, class nac: __init__, rank_fast, rank_2) takes the layers chosen with
# deepxplore=True in exp_apfd/exp_*.py gen_data (for LeNet: the raw Conv2D outputs before their ReLU,
# the pooling outputs and the softmax layer), averages conv maps spatially and applies a sigmoid
# 1 / (1 + exp(-x)) before comparing with t: NAC(0) covers every neuron on every test and NAC(0.75)
# means x > ln 3. It has no training range. Our default ("range") thresholds the activation rescaled to
# the training range; "sigmoid" applies the artifact's sigmoid to our activations, which are spatial
# means of post-ReLU maps, so it matches the artifact on dense ReLU neurons but not on conv ones.
def nac_items(
    acts: np.ndarray, stats: NeuronStats, threshold: float, scale: Literal["range", "sigmoid"] = "range"
) -> sparse.csr_matrix:
    """NAC(t): neuron covered when its activation, rescaled to the training range or sigmoid-squashed, exceeds t."""
    if scale not in ("range", "sigmoid"):
        raise ValueError(f"scale must be 'range' or 'sigmoid', got {scale!r}")
    a = scaled(acts, stats) if scale == "range" else expit(np.asarray(acts, dtype=np.float64))
    return _dense_incidence(a > threshold)


# The artifact's KMNC (metrics.py, kmnc.rank_fast and kmnc.fit) digitizes each neuron's activation
# with np.digitize(a, np.linspace(train min, train max, k_bins)): k_bins - 1 equal in-range sections
# (1 .. k_bins - 1), bin 0 below the training minimum and bin k_bins at or above the training
# maximum (the maximum itself included), i.e. k_bins + 1 bins per neuron; every test covers one bin
# of every neuron. A constant neuron has bin 0 below its value and bin k_bins at or above it.
def kmnc_items(acts: np.ndarray, stats: NeuronStats, k: int) -> sparse.csr_matrix:
    """KMNC(k) as the artifact: item (j, b), b = np.digitize(a_j, linspace(low_j, high_j, k)), k + 1 per neuron."""
    a = np.asarray(acts, dtype=np.float64)
    n, m = a.shape
    item = np.empty((n, m), dtype=np.int64)
    for j in range(m):  # one linspace per neuron, as the artifact (bit-identical edges)
        item[:, j] = j * (k + 1) + _digitize(a[:, j], stats.low[j], stats.high[j], k)
    indptr = np.arange(0, n * m + 1, m, dtype=np.int64)
    return sparse.csr_matrix((np.ones(n * m, dtype=np.int8), item.ravel(), indptr), shape=(n, m * (k + 1)))


def _corners(acts: np.ndarray, stats: NeuronStats, k: float, lower: bool) -> sparse.csr_matrix:
    """Upper corner items (a > high + k std), then lower ones (a < low - k std) if `lower`."""
    a = np.asarray(acts, dtype=np.float64)
    upper = a > stats.high + k * stats.std
    return _dense_incidence(np.hstack([upper, a < stats.low - k * stats.std]) if lower else upper)


def nbc_items(acts: np.ndarray, stats: NeuronStats, k: float) -> sparse.csr_matrix:
    """NBC(k): upper and lower corner of each neuron, boundaries at training max + k std and min - k std."""
    return _corners(acts, stats, k, lower=True)


def snac_items(acts: np.ndarray, stats: NeuronStats, k: float) -> sparse.csr_matrix:
    """SNAC(k): upper corner only, activation above training max + k std."""
    return _corners(acts, stats, k, lower=False)


def tknc_items(acts: np.ndarray, layer: np.ndarray, k: int) -> sparse.csr_matrix:
    """TKNC(k): in every layer, the k most active neurons of the test are covered."""
    a = np.asarray(acts, dtype=np.float64)
    layer = np.asarray(layer)
    covered = np.zeros(a.shape, dtype=bool)
    for lay in np.unique(layer):
        idx = np.flatnonzero(layer == lay)
        top = np.argsort(-a[:, idx], axis=1, kind="stable")[:, : min(k, idx.size)]
        block = np.zeros((a.shape[0], idx.size), dtype=bool)
        np.put_along_axis(block, top, True, axis=1)
        covered[:, idx] = block
    return _dense_incidence(covered)


# The artifact (metrics.py, LSC.rank_fast / DSC.rank_fast / get_rate) buckets a score with
# np.digitize(score, np.linspace(min of the prioritized set's scores, u, k_bins)): k_bins - 1
# in-range buckets, bucket 0 below the lower bound and bucket k_bins at or above u, so every test
# covers exactly one bucket, out-of-range ones the edge buckets. u is 100 for LSC
# (exp_apfd/exp_y_sa.py, exp_sa) and 2 for DSC (the DSC class default), with k_bins = 1000.
def bucket_items(values: np.ndarray, n_buckets: int, lower: float, upper: float) -> sparse.csr_matrix:
    """Surprise coverage (LSC/DSC) as the artifact: item = np.digitize(v, linspace(lower, upper, n_buckets))."""
    v = np.asarray(values, dtype=np.float64)
    return _incidence(np.arange(v.size), _digitize(v, lower, upper, n_buckets), v.size, n_buckets + 1)


def ctm_order(items: sparse.csr_matrix, seed: int) -> np.ndarray:
    """Coverage-total: tests by the number of items they cover, seeded ties."""
    return seeded_order(np.diff(items.indptr), seed)


Leftovers = Literal["ctm", "artifact"]


# How the artifact orders the tests its greedy CAM never picked (exp_apfd/statistic_apfd_figure.py):
# they get cam = 0 in the result CSV, and Item.get_order maps that to 500000 + the test's CTM rank
# (NAC, NBC, SNAC), 500000 + a random.randint (LSC, DSC), or a constant 500000 for TKNC and KMNC,
# whose ctm column is all zero. get_apfd sorts the same list first by best(), then by worst() and
# only then by get_order, and Python's sort is stable: tied leftovers keep the worst() order, i.e.
# correctly classified tests first, then misclassified ones, each in test-index order. This
# worst-first tail is why the artifact's TKNC(1)-CAM APFD is 0.0000. "ctm" is our default (own
# coverage, seeded ties); "artifact" reproduces the TKNC/KMNC tail.
def _tail(
    rest: np.ndarray, items: sparse.csr_matrix, seed: int, leftovers: Leftovers, misclassified: np.ndarray | None
) -> np.ndarray:
    """The never-picked tests `rest` (ascending) in the order of the `leftovers` mode."""
    if leftovers == "ctm":
        return rest[ctm_order(items[rest], seed)]
    if leftovers != "artifact" or misclassified is None:
        raise ValueError(f"leftovers must be 'ctm' or 'artifact' (with misclassified), got {leftovers!r}")
    return rest[np.argsort(np.asarray(misclassified, dtype=bool)[rest], kind="stable")]


def _leftovers(
    order: list[int], items: sparse.csr_matrix, seed: int, leftovers: Leftovers, misclassified: np.ndarray | None
) -> np.ndarray:
    """Append the tests CAM never picked, ordered by `_tail`."""
    chosen = np.asarray(order, dtype=np.int64)
    rest = np.setdiff1d(np.arange(items.shape[0]), chosen)
    return np.concatenate([chosen, _tail(rest, items, seed, leftovers, misclassified)])


def _ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, e) for every pair, without a Python loop."""
    lens = ends - starts
    offsets = np.repeat(np.cumsum(lens) - lens, lens)
    return np.arange(lens.sum()) - offsets + np.repeat(starts, lens)


def _greedy(items: sparse.csr_matrix, seed: int, rivals: np.ndarray | None = None) -> tuple[list[int], list[bool]]:
    """CAM's greedy prefix (seeded ties, incremental gains): the tests in the order they add coverage, and, where
    `rivals` (a mask of tests) is given, for each step whether one of them had the same gain as the test picked."""
    items = sparse.csr_matrix(items, dtype=np.int8)
    items.sum_duplicates()
    n = items.shape[0]
    by_item = items.tocsc()
    gain = np.diff(items.indptr).astype(np.float64)
    tiebreak = (np.random.default_rng(seed).permutation(n) + 1) / (2.0 * (n + 1))
    key = gain + tiebreak
    covered = np.zeros(items.shape[1], dtype=bool)
    order: list[int] = []
    tied: list[bool] = []
    while True:
        best = int(np.argmax(key))
        if gain[best] <= 0:
            break
        order.append(best)
        if rivals is not None:
            tied.append(bool((rivals & (gain == gain[best])).any()))
        key[best] = -np.inf
        mine = items.indices[items.indptr[best] : items.indptr[best + 1]]
        new = mine[~covered[mine]]
        covered[new] = True
        drop = np.bincount(by_item.indices[_ranges(by_item.indptr[new], by_item.indptr[new + 1])], minlength=n)
        gain -= drop
        key -= drop
    return order, tied


def cam_order(
    items: sparse.csr_matrix, seed: int, leftovers: Leftovers = "ctm", misclassified: np.ndarray | None = None
) -> np.ndarray:
    """Coverage-additional greedy order (seeded ties, incremental gains), then the leftovers (see `_tail`)."""
    items = sparse.csr_matrix(items, dtype=np.int8)
    return _leftovers(_greedy(items, seed)[0], items, seed, leftovers, misclassified)


def _boundary_ties(counts: np.ndarray, ranked: np.ndarray, k: int) -> np.ndarray:
    """For the first k of `ranked` (sorted by `counts`, descending): whether the tie-break decided the place, i.e.
    the test has the k-th count and a test after the k-th has it too (else the k-th count is strictly separated)."""
    kth = counts[ranked[k - 1]]
    return (counts[ranked[:k]] == kth) & bool((counts[ranked[k:]] == kth).any())


def tie_decided(items: sparse.csr_matrix, seed: int, k: int, cam: bool) -> np.ndarray:
    """For each of the top k tests of the CTM (cam False) or CAM order (seeded as ctm_order / cam_order): whether
    its place was decided by the tie-break, i.e. a test left out of the top k had an equal claim to it: the same
    coverage count at the k-th score (CTM, and CAM's leftovers, which follow in CTM order), or the same greedy gain
    at its step (CAM's prefix)."""
    items = sparse.csr_matrix(items, dtype=np.int8)
    n = items.shape[0]
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and the {n} tests, got {k}")
    counts = np.diff(items.indptr)
    if not cam:
        return _boundary_ties(counts, ctm_order(items, seed), k)
    order = cam_order(items, seed)
    outside = np.ones(n, dtype=bool)
    outside[order[:k]] = False
    prefix, tied = _greedy(items, seed, rivals=outside)
    head = np.array(tied[:k], dtype=bool)
    if len(head) == k:
        return head
    rest = order[len(prefix) :]  # the leftovers in CTM order: their top places by the boundary rule
    return np.concatenate([head, _boundary_ties(counts, rest, k - len(prefix))])


def cam_order_naive(
    items: sparse.csr_matrix, seed: int, leftovers: Leftovers = "ctm", misclassified: np.ndarray | None = None
) -> np.ndarray:
    """Reference CAM that recomputes every remaining test's gain at every step (for tests and benchmarks)."""
    dense = sparse.csr_matrix(items).toarray() > 0
    n = dense.shape[0]
    tiebreak = (np.random.default_rng(seed).permutation(n) + 1) / (2.0 * (n + 1))
    covered = np.zeros(dense.shape[1], dtype=bool)
    remaining = np.ones(n, dtype=bool)
    order: list[int] = []
    while remaining.any():
        gain = (dense & ~covered).sum(axis=1).astype(np.float64)
        key = np.where(remaining, gain + tiebreak, -np.inf)
        best = int(np.argmax(key))
        if gain[best] <= 0:
            break
        order.append(best)
        remaining[best] = False
        covered |= dense[best]
    return _leftovers(order, sparse.csr_matrix(dense.astype(np.int8)), seed, leftovers, misclassified)
