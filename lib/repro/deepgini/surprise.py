"""Surprise adequacy (Kim et al., ICSE'19): likelihood-based LSA and distance-based DSA on activation traces.

What the DeepGini artifact does (metrics.py, classes LSC and DSC; exp_apfd/exp_y_sa.py, exp_sa), for comparison:

* Classes of the training traces come from the training labels (Y_train), those of the tests from the model's
  predictions; we group training traces by the model's predictions on them (SATraces.train_pred).
* LSC takes the last layer of gen_data's list (index -1), which for the LeNets and ResNet-20 is the model's softmax
  output (LSC.fit's comment: 10 columns); DSC takes the whole list (conv maps spatially averaged). We use the
  last hidden layer for both.
* LSC's variance filter is commented out in LSC._get_kdes (no column is removed); we drop columns whose
  per-class training variance is at most `min_var`, and, where the rest are linearly dependent (a singular
  covariance), the least independent ones (pivoted QR; see _kde).
* DSA as here: distance to the nearest same-class training trace x_a over the distance from x_a to the nearest
  other-class training trace (DSC.fit).
* Coverage (LSC/DSC.rank_fast) buckets the scores with np.digitize over linspace(min of the prioritized set's
  scores, u, 1000), u = 100 (LSC) or 2 (DSC): see coverage.bucket_items.
* NAC, not a surprise criterion, is where the artifact applies a sigmoid to raw layer outputs: see
  coverage.nac_items.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import gaussian_kde

__all__ = ["dsa", "lsa"]


def _informative(train: np.ndarray, min_var: float) -> np.ndarray:
    """Columns whose training variance exceeds `min_var` (KDE needs a non-singular covariance)."""
    return np.flatnonzero(train.var(axis=0) > min_var)


def _most_surprising(out: np.ndarray, undefined: np.ndarray) -> np.ndarray:
    """`out` with the `undefined` entries set above every defined one (max + 1; 0 when none is defined)."""
    defined = out[~undefined]
    out[undefined] = defined.max() + 1.0 if defined.size else 0.0
    return out


def lsa(
    train: np.ndarray, train_pred: np.ndarray, test: np.ndarray, test_pred: np.ndarray, min_var: float = 1e-5
) -> np.ndarray:
    """LSA = -log KDE density of the test trace among training traces of its predicted class.

    A predicted class with fewer than two training traces, or none that varies, has no density: its tests count as
    the most surprising ones."""
    out, undefined = np.zeros(len(test)), np.zeros(len(test), dtype=bool)
    for c in np.unique(test_pred):
        ref = train[train_pred == c]
        cols = _informative(ref, min_var)
        mask = test_pred == c
        if len(ref) < 2 or cols.size == 0:
            undefined |= mask
            continue
        if len(ref) <= len(cols):
            cols = cols[: max(1, len(ref) - 2)]
        kde, cols = _kde(ref, cols)
        out[mask] = -kde.logpdf(test[mask][:, cols].T)
    return _most_surprising(out, undefined)


def _kde(ref: np.ndarray, cols: np.ndarray) -> tuple[gaussian_kde, np.ndarray]:
    """KDE of the training traces over `cols`, and the columns it used: the columns pivoted QR of the centred traces
    ranks independent (|R_ii| above 1e-6 of the largest, a covariance condition number below 1e12), dropping the
    least independent one further while the covariance does not factor. Columns that vary but depend linearly on
    others within the class (ReLU units that fire together) otherwise make the covariance singular, and the class
    has no density at all, or a meaningless one."""
    from scipy.linalg import qr

    _, r, pivots = qr(ref[:, cols] - ref[:, cols].mean(axis=0), mode="economic", pivoting=True)
    diag = np.abs(np.diag(r))
    rank = max(1, int((diag > 1e-6 * diag[0]).sum())) if diag.size and diag[0] > 0 else 1
    for n in range(rank, 0, -1):
        chosen = np.sort(cols[pivots[:n]])
        try:
            return gaussian_kde(ref[:, chosen].T), chosen
        except np.linalg.LinAlgError:
            continue
    raise np.linalg.LinAlgError("no column of the class's training traces gives a density")


def _nearest(a: np.ndarray, b: np.ndarray, chunk: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """Distance to, and index of, the nearest row of `b` for every row of `a`, in chunks."""
    b_sq = np.einsum("ij,ij->i", b, b)
    dist = np.empty(len(a))
    idx = np.empty(len(a), dtype=np.int64)
    for s in range(0, len(a), chunk):
        block = a[s : s + chunk]
        d2 = np.einsum("ij,ij->i", block, block)[:, None] - 2 * block @ b.T + b_sq[None, :]
        idx[s : s + chunk] = d2.argmin(axis=1)
        dist[s : s + chunk] = np.sqrt(np.maximum(d2[np.arange(len(block)), idx[s : s + chunk]], 0.0))
    return dist, idx


def dsa(train: np.ndarray, train_pred: np.ndarray, test: np.ndarray, test_pred: np.ndarray) -> np.ndarray:
    """DSA = dist(x, nearest same-class train x_a) / dist(x_a, nearest other-class train trace).

    A predicted class without training traces makes its tests the most surprising ones; without traces of any
    other class, the denominator is infinite (DSA 0)."""
    out, undefined = np.zeros(len(test)), np.zeros(len(test), dtype=bool)
    for c in np.unique(test_pred):
        mask = test_pred == c
        same, other = train[train_pred == c], train[train_pred != c]
        if not len(same):
            undefined |= mask
            continue
        dist_a, idx_a = _nearest(test[mask], same)
        dist_b = _nearest(same[idx_a], other)[0] if len(other) else np.full(len(idx_a), np.inf)
        out[mask] = dist_a / np.maximum(dist_b, 1e-12)
    return _most_surprising(out, undefined)
