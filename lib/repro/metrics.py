"""Metrics shared by the chapters: APFD, DeepGini, exposure, Min-K%, ROC helpers, Mahalanobis."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.integrate import trapezoid

from .stats import hanley_mcneil_se

__all__ = [
    "MahalanobisScores",
    "Shrinkage",
    "apfd",
    "apfd_fault_matrix",
    "apfd_normalized",
    "auroc",
    "class_gaussians",
    "exposure",
    "first_detection",
    "gaussian_distance",
    "gini_impurity",
    "mahalanobis_scores",
    "min_k_plus_plus",
    "min_k_prob",
    "shrinkage",
    "tpr_at_fpr",
]


def _finite_array(values: object, name: str, ndim: int | None = None) -> np.ndarray:
    """Return `values` as a float64 array, refusing empty, NaN or wrongly shaped input."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        raise ValueError(f"{name} is empty: pass at least one value")
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values: clean or drop them first")
    return arr


def apfd(detected: Sequence[bool] | np.ndarray) -> float:
    """APFD for DNN test prioritization: 1 - sum(o_i)/(k*n) + 1/(2n) over misclassified positions o_i."""
    flags = np.asarray(detected)
    if flags.ndim != 1 or flags.size == 0:
        raise ValueError("detected must be a non-empty 1-D sequence of misclassified flags")
    if flags.dtype != bool and not np.isin(flags, (0, 1)).all():
        raise ValueError("detected must hold booleans (True = misclassified test)")
    flags = flags.astype(bool)
    n, k = flags.size, int(flags.sum())
    if k == 0:
        raise ValueError("APFD is undefined when no test is misclassified: the order reveals no fault")
    positions = np.flatnonzero(flags) + 1
    return float(1.0 - positions.sum() / (k * n) + 1.0 / (2 * n))


def apfd_bounds(n_tests: int, n_faults: int) -> tuple[float, float]:
    """Worst and best APFD reachable with `n_faults` misclassified tests among `n_tests`."""
    if not 0 < n_faults <= n_tests:
        raise ValueError(f"need 0 < n_faults <= n_tests, got n_faults={n_faults}, n_tests={n_tests}")
    best = apfd(np.arange(n_tests) < n_faults)
    worst = apfd(np.arange(n_tests) >= n_tests - n_faults)
    return worst, best


def apfd_normalized(detected: Sequence[bool] | np.ndarray) -> float:
    """APFD rescaled as (APFD - worst)/(best - worst), the ISSTA artifact's form; 1.0 when all tests fail."""
    value = apfd(detected)
    flags = np.asarray(detected, dtype=bool)
    worst, best = apfd_bounds(flags.size, int(flags.sum()))
    return 1.0 if best == worst else float((value - worst) / (best - worst))


def first_detection(faults_by_test: Mapping[str, Sequence[object]], order: Sequence[str]) -> dict[object, int]:
    """Position (1-based) in `order` of the first test revealing each fault; every fault must be revealed."""
    if not order:
        raise ValueError("order is empty: pass the tests in prioritized order")
    missing = [t for t in order if t not in faults_by_test]
    if missing:
        raise ValueError(f"order names tests not in faults_by_test: {missing}")
    if len(set(order)) != len(order):
        raise ValueError("order lists a test twice: each test runs once")
    first_seen: dict[object, int] = {}
    for position, test in enumerate(order, start=1):
        for fault in faults_by_test[test]:
            first_seen.setdefault(fault, position)
    all_faults = {f for faults in faults_by_test.values() for f in faults}
    if not all_faults:
        raise ValueError("no test reveals any fault: APFD is undefined")
    unrevealed = all_faults - set(first_seen)
    if unrevealed:
        raise ValueError(f"faults {sorted(map(str, unrevealed))} are revealed by no test in order")
    return first_seen


def apfd_fault_matrix(faults_by_test: Mapping[str, Sequence[object]], order: Sequence[str]) -> float:
    """Classic APFD (Rothermel et al., ICSM'99): 1 - sum(TF_i)/(n*m) + 1/(2n)."""
    first_seen = first_detection(faults_by_test, order)
    n, m = len(order), len(first_seen)
    return 1.0 - sum(first_seen.values()) / (n * m) + 1.0 / (2 * n)


def gini_impurity(probs: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    """DeepGini score 1 - sum_i p_i^2, one value per row of class probabilities."""
    p = _finite_array(probs, "probs")
    if p.ndim == 1:
        p = p[None, :]
    if p.ndim != 2:
        raise ValueError(f"probs must be (n_tests, n_classes), got shape {p.shape}")
    if (p < 0).any() or not np.allclose(p.sum(axis=1), 1.0, atol=1e-4):
        raise ValueError("each row of probs must be a probability vector (non-negative, sums to 1)")
    return 1.0 - np.einsum("ij,ij->i", p, p)


def exposure(rank: float | np.ndarray, space_size: float) -> float | np.ndarray:
    """Canary exposure log2(space_size) - log2(rank); rank 1 is the most likely candidate."""
    r = np.asarray(rank, dtype=np.float64)
    if not np.all(np.isfinite(r)) or (r < 1).any():
        raise ValueError("rank must be >= 1 (1 = most likely candidate); got a negative, zero or NaN rank")
    if not math.isfinite(space_size) or space_size < 1 or (r > space_size).any():
        raise ValueError(f"space_size must be >= every rank and >= 1, got {space_size}")
    out = math.log2(space_size) - np.log2(r)
    return float(out) if out.ndim == 0 else out


def min_k_prob(token_logprobs: Sequence[float] | np.ndarray, k: float = 0.2) -> float:
    """Mean of the lowest k-fraction of token log-probs (higher = more likely a member); at least one token."""
    lp = _finite_array(token_logprobs, "token_logprobs", ndim=1)
    if not 0 < k <= 1:
        raise ValueError(f"k is a fraction in (0, 1], got {k}")
    n = max(1, int(len(lp) * k))
    return float(np.sort(lp)[:n].mean())


def min_k_plus_plus(
    token_logprobs: Sequence[float] | np.ndarray,
    mu: Sequence[float] | np.ndarray,
    sigma: Sequence[float] | np.ndarray,
    k: float = 0.2,
) -> float:
    """Min-K%++: mean of the lowest k-fraction of (log p(x_t) - mu_t)/sigma_t (higher = member)."""
    lp = _finite_array(token_logprobs, "token_logprobs", ndim=1)
    m = _finite_array(mu, "mu", ndim=1)
    s = _finite_array(sigma, "sigma", ndim=1)
    if not lp.shape == m.shape == s.shape:
        raise ValueError(f"token_logprobs, mu and sigma need one value per token, got {lp.shape}, {m.shape}, {s.shape}")
    if (s <= 0).any():
        raise ValueError("sigma must be positive at every token")
    return min_k_prob((lp - m) / s, k)


def _labels_scores(
    labels: Sequence[int] | np.ndarray, scores: Sequence[float] | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Validate a binary labels/scores pair for ROC metrics."""
    y = np.asarray(labels)
    s = _finite_array(scores, "scores", ndim=1)
    if y.shape != s.shape:
        raise ValueError(f"labels and scores differ in length: {y.shape} vs {s.shape}")
    if set(np.unique(y).tolist()) != {0, 1}:
        raise ValueError("labels must contain both classes 0 and 1 (1 = positive: member / OOD)")
    return y.astype(int), s


def auroc(labels: Sequence[int] | np.ndarray, scores: Sequence[float] | np.ndarray) -> float:
    """Area under the ROC curve, positives = label 1, higher score = more positive: scikit-learn's `roc_auc_score`,
    computed as it computes it (the trapezoid rule over `roc_points`) without its input checks, so the same
    number, several times faster on the small sets bootstraps call it for."""
    y, s = _labels_scores(labels, scores)
    fpr, tpr = roc_points(y, s)
    return float(trapezoid(tpr, fpr))


def auc_standard_error(auc: float, n_pos: int, n_neg: int) -> float:
    """Hanley & McNeil (1982) standard error of an AUC (see repro.stats.hanley_mcneil_se)."""
    return hanley_mcneil_se(auc, n_pos, n_neg)


def trend_call(before: float, after: float, se: float, expect: str = "up") -> str:
    """'yes' / 'no' for a change beyond two standard errors in / against the expected direction, else 'within noise'."""
    if expect not in ("up", "down"):
        raise ValueError(f"expect must be 'up' or 'down', got {expect!r}")
    change = (after - before) * (1 if expect == "up" else -1)
    if abs(after - before) <= 2 * se:
        return "within noise"
    return "yes" if change > 0 else "no"


def tpr_at_fpr(labels: Sequence[int] | np.ndarray, scores: Sequence[float] | np.ndarray, fpr: float = 0.05) -> float:
    """TPR at the last ROC threshold whose FPR stays below `fpr` (the Min-K% authors' convention)."""
    y, s = _labels_scores(labels, scores)
    return float(tpr_at_fpr_rows(y[None], s[None], fpr)[0])


def tpr_at_fpr_rows(labels: np.ndarray, scores: np.ndarray, fpr: float = 0.05) -> np.ndarray:
    """TPR at `fpr` (see `tpr_at_fpr`) of every row of (rows, items) labels and scores at once (a bootstrap's
    resamples): `roc_points`' ROC points, collinear points dropped as it drops them, the same float divisions.
    labels: 0/1 with both classes in every row; scores finite (validate first)."""
    if not 0 < fpr < 1:
        raise ValueError(f"fpr must lie in (0, 1), got {fpr}")
    y, s = np.atleast_2d(labels), np.atleast_2d(np.asarray(scores, dtype=np.float64))
    rows, n = s.shape
    order = np.argsort(s, axis=1, kind="mergesort")[:, ::-1]  # per row, as roc_points orders one set
    s, y = np.take_along_axis(s, order, 1), np.take_along_axis(y, order, 1).astype(np.float64)
    point = np.ones((rows, n), bool)
    point[:, :-1] = np.diff(s, axis=1) != 0  # the last item of each distinct score is a ROC point
    tps = np.cumsum(y, axis=1)
    fps = 1 + np.arange(n) - tps
    at = np.arange(n)
    prev = np.maximum.accumulate(np.where(point, at, -1), axis=1)  # the point at or before each item
    prev = np.c_[np.full((rows, 1), -1), prev[:, :-1]]  # strictly before
    nxt = np.minimum.accumulate(np.where(point, at, n)[:, ::-1], axis=1)[:, ::-1]
    nxt = np.c_[nxt[:, 1:], np.full((rows, 1), n)]  # strictly after
    inner = (prev >= 0) & (nxt < n)
    p, q = np.clip(prev, 0, n - 1), np.clip(nxt, 0, n - 1)

    def bend(c: np.ndarray) -> np.ndarray:  # second difference along the points (np.diff(c, 2) of roc_points)
        return np.take_along_axis(c, q, 1) - c - (c - np.take_along_axis(c, p, 1))

    kept = point & (~inner | (bend(fps) != 0) | (bend(tps) != 0))
    below = kept & (fps / fps[:, -1:] < fpr)
    last = np.where(below, at, -1).max(axis=1)  # -1: only the (0, 0) point lies below
    tpr = np.take_along_axis(tps, np.clip(last, 0, n - 1)[:, None], 1)[:, 0] / tps[:, -1]
    return np.where(last >= 0, tpr, 0.0)


def roc_points(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(FPR, TPR) of scikit-learn's `roc_curve(labels, scores)` (collinear points dropped), computed in NumPy
    without its input checks: the same points, about 10x faster on the small sets a bootstrap calls it for
    thousands of times. labels: 0/1 of both classes; scores finite (validate first)."""
    order = np.argsort(scores, kind="mergesort")[::-1]  # descending, ties in reverse index order, as scikit-learn
    s, y = scores[order], labels[order].astype(np.float64)
    last = np.r_[np.flatnonzero(np.diff(s)), y.size - 1]  # the last item of each distinct score
    tps = np.cumsum(y)[last]
    fps = 1 + last - tps
    if fps.size > 2:  # drop the points on a straight segment (scikit-learn's drop_intermediate)
        keep = np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True]
        fps, tps = fps[keep], tps[keep]
    return np.r_[0.0, fps] / fps[-1], np.r_[0.0, tps] / tps[-1]


class MahalanobisScores(NamedTuple):
    """OOD scores per test point (higher = more OOD)."""

    md: np.ndarray
    rmd: np.ndarray


@dataclass(frozen=True)
class Shrinkage:
    """One covariance estimator applied alike to every covariance of a fit: cov -> scale * cov + ridge * I.

    RMD needs the same absolute ridge on the within-class and the total covariance: then
    total' - within' is still the rank-(K-1) between-class scatter, and RMD depends on a point
    only through the K-1 discriminant directions."""

    scale: float = 1.0
    ridge: float = 0.0
    name: str = "maximum likelihood (1/N)"

    def apply(self, cov: np.ndarray) -> np.ndarray:
        """The regularized covariance."""
        return self.scale * cov + self.ridge * np.eye(cov.shape[0]) if self.ridge else self.scale * cov


MLE = Shrinkage()


def shrinkage(centered: np.ndarray, ridge: float | str = 0.0) -> Shrinkage:
    """The estimator fixed from within-class residuals: a relative ridge lambda (lambda * tr(cov)/d) or "ledoit-wolf"."""
    cov = centered.T @ centered / centered.shape[0]
    target = float(np.trace(cov)) / cov.shape[0]
    if ridge == "ledoit-wolf":
        from sklearn.covariance import ledoit_wolf_shrinkage

        weight = float(ledoit_wolf_shrinkage(centered, assume_centered=True))
        return Shrinkage(1.0 - weight, weight * target, f"Ledoit-Wolf (shrinkage {weight:.3g})")
    if isinstance(ridge, str) or not ridge >= 0:
        raise ValueError(f"ridge must be a number >= 0 or 'ledoit-wolf', got {ridge!r}")
    return Shrinkage(1.0, float(ridge) * target, f"ridge {float(ridge):g} x tr/d") if ridge else MLE


def _precision(cov: np.ndarray, estimator: Shrinkage) -> np.ndarray:
    """Inverse of the regularized covariance (pseudo-inverse, which equals the inverse at full rank)."""
    return np.linalg.pinv(estimator.apply(cov), hermitian=True)


def _gaussian_precision(centered: np.ndarray, ridge: float | str) -> np.ndarray:
    """Precision matrix of the 1/N covariance of centered features under shrinkage(centered, ridge)."""
    return _precision(centered.T @ centered / centered.shape[0], shrinkage(centered, ridge))


def _squared_distances(x: np.ndarray, means: np.ndarray, precision: np.ndarray) -> np.ndarray:
    """(x - mu_k)^T P (x - mu_k) for every row of x and every mean, without an n x n matrix."""
    xp = x @ precision
    quad_x = np.einsum("ij,ij->i", xp, x)
    quad_m = np.einsum("kj,jl,kl->k", means, precision, means)
    return quad_x[:, None] - 2.0 * xp @ means.T + quad_m[None, :]


def mahalanobis_scores(
    train_feats: np.ndarray,
    train_labels: np.ndarray,
    test_feats: np.ndarray,
    ridge: float | str = 0.0,
) -> MahalanobisScores:
    """MD = min_k MD_k (shared covariance) and RMD = min_k (MD_k - MD_0), in float64, one estimator for both.

    `ridge` (relative, or "ledoit-wolf") is fixed once from the within-class residuals and applied
    as the same absolute amount to the within-class and the background covariance."""
    x = _finite_array(train_feats, "train_feats", ndim=2)
    z = _finite_array(test_feats, "test_feats", ndim=2)
    y = np.asarray(train_labels)
    if y.shape != (x.shape[0],):
        raise ValueError(f"train_labels needs one label per training row, got {y.shape} for {x.shape[0]} rows")
    if z.shape[1] != x.shape[1]:
        raise ValueError(f"test_feats has {z.shape[1]} features, train_feats has {x.shape[1]}")
    means, inverse = class_gaussians(x, y)
    within = x - means[inverse]
    estimator = shrinkage(within, ridge)
    mean0 = class_gaussians(x, np.zeros(len(x), dtype=int))[0]  # the same arithmetic: at K = 1, MD_1 = MD_0 exactly
    md_k = _squared_distances(z, means, _precision(within.T @ within / len(x), estimator))
    background = x - mean0  # one array, so NumPy takes the same symmetric product (syrk) as for `within`
    md_0 = _squared_distances(z, mean0, _precision(background.T @ background / len(x), estimator))[:, 0]
    return MahalanobisScores(md=md_k.min(axis=1), rmd=(md_k - md_0[:, None]).min(axis=1))


def class_gaussians(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Class means (one row per sorted label) and each row's class index."""
    classes, inverse = np.unique(y, return_inverse=True)
    counts = np.bincount(inverse)
    means = np.zeros((len(classes), x.shape[1]))
    np.add.at(means, inverse, x)
    return means / counts[:, None], inverse


def gaussian_distance(train_feats: np.ndarray, test_feats: np.ndarray, ridge: float | str = 0.0) -> np.ndarray:
    """Squared Mahalanobis distance of each test row to one Gaussian (1/N covariance) fitted on train_feats."""
    x = _finite_array(train_feats, "train_feats", ndim=2)
    z = _finite_array(test_feats, "test_feats", ndim=2)
    mean = x.mean(axis=0, keepdims=True)
    return _squared_distances(z, mean, _gaussian_precision(x - mean, ridge))[:, 0]
