"""Surprise adequacy (Kim et al., ICSE'19): likelihood-based LSA and distance-based DSA on activation traces."""

from __future__ import annotations

import numpy as np
from scipy.stats import gaussian_kde

__all__ = ["dsa", "lsa"]


def _informative(train: np.ndarray, min_var: float) -> np.ndarray:
    """Columns whose training variance exceeds `min_var` (KDE needs a non-singular covariance)."""
    return np.flatnonzero(train.var(axis=0) > min_var)


def lsa(train: np.ndarray, train_pred: np.ndarray, test: np.ndarray, test_pred: np.ndarray,
        min_var: float = 1e-5) -> np.ndarray:
    """LSA = -log KDE density of the test trace among training traces of its predicted class."""
    out = np.zeros(len(test))
    for c in np.unique(test_pred):
        ref = train[train_pred == c]
        cols = _informative(ref, min_var)
        mask = test_pred == c
        if len(ref) <= len(cols) or cols.size == 0:
            cols = cols[: max(1, len(ref) - 2)]
        kde = gaussian_kde(ref[:, cols].T)
        out[mask] = -kde.logpdf(test[mask][:, cols].T)
    return out


def _nearest(a: np.ndarray, b: np.ndarray, chunk: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """Distance to, and index of, the nearest row of `b` for every row of `a`, in chunks."""
    b_sq = np.einsum("ij,ij->i", b, b)
    dist = np.empty(len(a))
    idx = np.empty(len(a), dtype=np.int64)
    for s in range(0, len(a), chunk):
        block = a[s: s + chunk]
        d2 = np.einsum("ij,ij->i", block, block)[:, None] - 2 * block @ b.T + b_sq[None, :]
        idx[s: s + chunk] = d2.argmin(axis=1)
        dist[s: s + chunk] = np.sqrt(np.maximum(d2[np.arange(len(block)), idx[s: s + chunk]], 0.0))
    return dist, idx


def dsa(train: np.ndarray, train_pred: np.ndarray, test: np.ndarray, test_pred: np.ndarray) -> np.ndarray:
    """DSA = dist(x, nearest same-class train x_a) / dist(x_a, nearest other-class train trace)."""
    out = np.zeros(len(test))
    for c in np.unique(test_pred):
        mask = test_pred == c
        same, other = train[train_pred == c], train[train_pred != c]
        dist_a, idx_a = _nearest(test[mask], same)
        dist_b, _ = _nearest(same[idx_a], other)
        out[mask] = dist_a / np.maximum(dist_b, 1e-12)
    return out
