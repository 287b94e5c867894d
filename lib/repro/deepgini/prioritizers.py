"""Test prioritization from softmax outputs: DeepGini, max-softmax, margin, entropy, random; seeded orders."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..metrics import gini_impurity

__all__ = ["SOFTMAX_SCORES", "entropy", "margin", "max_softmax", "random_scores", "seeded_order", "softmax_order"]


def seeded_order(scores: np.ndarray, seed: int) -> np.ndarray:
    """Indices by descending score; ties broken by a seeded random permutation, never by file order."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError(f"scores must be 1-D, got shape {s.shape}")
    tiebreak = np.random.default_rng(seed).permutation(s.size)
    # the order of np.lexsort((tiebreak, -s)) from one stable float sort: the tests in tie-break order (the inverse
    # permutation, built in linear time), then sorted by descending score, ties keeping that order. Every method's
    # timed prioritization sorts once (the cost rows compare them), and lexsort's two-key sort took twice as long.
    by_tiebreak = np.empty_like(tiebreak)
    by_tiebreak[tiebreak] = np.arange(s.size)
    return by_tiebreak[np.argsort(-s[by_tiebreak], kind="stable")]


def max_softmax(probs: np.ndarray) -> np.ndarray:
    """1 - max_i p_i: low confidence first."""
    return 1.0 - np.asarray(probs).max(axis=1)


def margin(probs: np.ndarray) -> np.ndarray:
    """1 - (p_top1 - p_top2): a small gap between the two best classes first."""
    top2 = np.sort(np.asarray(probs), axis=1)[:, -2:]
    return 1.0 - (top2[:, 1] - top2[:, 0])


def entropy(probs: np.ndarray) -> np.ndarray:
    """Shannon entropy -sum p log p of each row (0 log 0 = 0)."""
    p = np.asarray(probs, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(p > 0, p * np.log(p), 0.0).sum(axis=1)


def random_scores(probs: np.ndarray) -> np.ndarray:
    """Constant score: the seeded tie-break alone makes the order, i.e. a random order."""
    return np.zeros(len(probs))


SOFTMAX_SCORES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "DeepGini": gini_impurity,
    "max-softmax": max_softmax,
    "margin": margin,
    "entropy": entropy,
    "random": random_scores,
}


def softmax_order(method: str, probs: np.ndarray, seed: int) -> np.ndarray:
    """Priority order of the tests under one of SOFTMAX_SCORES."""
    if method not in SOFTMAX_SCORES:
        raise ValueError(f"unknown softmax method {method!r}: pass one of {', '.join(SOFTMAX_SCORES)}")
    return seeded_order(SOFTMAX_SCORES[method](probs), seed)
