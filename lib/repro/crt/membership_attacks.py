"""Membership inference by perplexity threshold (CRT Appendix A.5): individual sentences and groups of sentences."""

from __future__ import annotations

import numpy as np


def threshold_accuracy(members: np.ndarray, non_members: np.ndarray, seed: int = 0) -> float:
    """Accuracy of 'member if score < t' (score = perplexity), t fitted on one half and tested on the other, both ways."""
    rng = np.random.default_rng(seed)
    m, n = rng.permutation(np.asarray(members)), rng.permutation(np.asarray(non_members))
    halves = [(m[: len(m) // 2], n[: len(n) // 2]), (m[len(m) // 2 :], n[len(n) // 2 :])]
    accs = []
    for (fm, fn), (tm, tn) in (halves, halves[::-1]):
        t = best_threshold(fm, fn)
        accs.append((np.sum(tm < t) + np.sum(tn >= t)) / (len(tm) + len(tn)))
    return float(np.mean(accs))


def best_threshold(members: np.ndarray, non_members: np.ndarray) -> float:
    """The threshold t maximizing the accuracy of 'member if score < t'."""
    values = np.sort(np.r_[members, non_members])
    cands = np.r_[values[0] - 1, (values[1:] + values[:-1]) / 2, values[-1] + 1]
    correct = (
        np.searchsorted(np.sort(members), cands, side="left")
        + len(non_members)
        - np.searchsorted(np.sort(non_members), cands, side="left")
    )
    return float(cands[np.argmax(correct)])


def group_scores(scores: np.ndarray, group_size: int, n_groups: int, seed: int = 0) -> np.ndarray:
    """Summed score of `n_groups` random groups of `group_size` distinct items."""
    rng = np.random.default_rng(seed)
    scores = np.asarray(scores)
    return np.array([scores[rng.choice(len(scores), group_size, replace=False)].sum() for _ in range(n_groups)])
