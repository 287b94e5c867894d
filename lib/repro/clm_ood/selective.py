"""Selective generation: OOD scores from the embeddings, Kendall's τ with quality, quality-vs-abstention curves, and
the combination of an OOD score with perplexity.

Every score is oriented "higher = more OOD / less trustworthy", so abstaining means dropping the highest scores."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import rankdata

from ..metrics import gaussian_distance


def md_rmd(
    fit: np.ndarray, background: np.ndarray, test: np.ndarray, ridge: float | str = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """(MD, RMD) of test rows: MD to one Gaussian fitted on `fit`, RMD = MD − MD to a background Gaussian fitted on
    `background` (each Gaussian its own 1/N covariance under the same estimator)."""
    md = gaussian_distance(fit, test, ridge)
    return md, md - gaussian_distance(background, test, ridge)


def kendall_tau(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Kendall's τ-b of two paired samples (ties in either counted as in scipy.stats.kendalltau), O(n²)."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size < 2:
        raise ValueError(f"kendall_tau needs two 1-D samples of the same length >= 2, got {a.shape} and {b.shape}")
    i, j = np.triu_indices(a.size, k=1)
    da, db = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
    concordance = float((da * db).sum())
    untied_a, untied_b = float(np.count_nonzero(da)), float(np.count_nonzero(db))
    if untied_a == 0 or untied_b == 0:
        return float("nan")
    return concordance / np.sqrt(untied_a * untied_b)


def quality_tau(score: np.ndarray, quality: np.ndarray) -> float:
    """τ between a score and quality, signed so that a score that falls as quality rises gives τ > 0 (a useful
    abstention score has τ > 0); 0 where either side is constant or there is one output (no ordering to agree
    with)."""
    if np.asarray(score).size < 2:
        return 0.0
    tau = kendall_tau(-np.asarray(score, dtype=float), quality)
    return 0.0 if np.isnan(tau) else tau


ABSTENTION_RATES = tuple(np.round(np.arange(0.0, 0.91, 0.1), 2))


def abstention_curve(score: np.ndarray, quality: np.ndarray, rates: Sequence[float] = ABSTENTION_RATES) -> np.ndarray:
    """Mean quality of the outputs kept when abstaining on the fraction `rate` with the highest scores (ties broken
    by position), one value per rate."""
    s, q = np.asarray(score, dtype=float), np.asarray(quality, dtype=float)
    order = np.argsort(s, kind="stable")  # most trusted first
    kept = np.cumsum(q[order]) / np.arange(1, s.size + 1)
    return np.array([kept[max(1, s.size - int(np.floor(r * s.size + 1e-9))) - 1] for r in rates])


def curve_area(score: np.ndarray, quality: np.ndarray, rates: Sequence[float] = ABSTENTION_RATES) -> float:
    """Mean of the quality-vs-abstention curve over the rates (higher = better abstention)."""
    return float(abstention_curve(score, quality, rates).mean())


def percentile(score: np.ndarray) -> np.ndarray:
    """Each score's percentile rank in (0, 1] among the scores (ties share their mean rank)."""
    s = np.asarray(score, dtype=float)
    return rankdata(s) / s.size


def combine(ood: np.ndarray, perplexity: np.ndarray) -> np.ndarray:
    """An OOD score combined with perplexity: the mean of their percentile ranks (label-free, scale-free)."""
    return (percentile(ood) + percentile(perplexity)) / 2
