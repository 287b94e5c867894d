"""Canary exposure with the exact rank over every candidate: a prefix tree scored level by level in batches."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import torch
from tqdm.auto import tqdm

from ..metrics import exposure
from ..stats import subset_nulls


class Stepper(Protocol):
    """A language model fed one token at a time from batched states (batch dimension first)."""

    def start(self, context: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]: ...

    def step(self, state: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]: ...


def tree_scores(
    stepper: Stepper, context: Sequence[int], digit_ids: Sequence[int], length: int, batch: int = 16384
) -> np.ndarray:
    """Log-probability of every candidate digit string of `length` after `context`, index = its base-|digits| value
    (the last of tree_levels)."""
    return tree_levels(stepper, context, digit_ids, length, batch)[-1]


def tree_levels(
    stepper: Stepper, context: Sequence[int], digit_ids: Sequence[int], length: int, batch: int = 16384
) -> list[np.ndarray]:
    """Per prefix length 1..`length`, the log-probability of every digit prefix of that length after `context`,
    index = its base-|digits| value: the last level scores every candidate, the earlier ones are what a beam search
    reads (beam_search).

    One batched forward pass per prefix level: 1, 10, 100, ... prefixes; scores summed in float64; the states of
    the last level are dropped as they are made."""
    digits = torch.as_tensor(list(digit_ids))
    k = len(digits)
    logp, state = stepper.start(context)
    scores = logp[:, digits].double().reshape(-1)  # level-1 candidates
    levels = [scores.numpy()]
    for level in tqdm(range(1, length), desc="prefix levels", leave=False):
        parents = torch.arange(len(scores))
        logps, states = [], []
        for lo in range(0, len(scores), batch):
            rows = parents[lo : lo + batch]
            parent_state = state[rows // k]
            lp, st = stepper.step(parent_state, digits[rows % k])
            logps.append(lp[:, digits].double())
            if level < length - 1:  # the last level's states would never be used
                states.append(st)
        child = torch.cat(logps)  # (n_prefixes, k)
        scores = (scores[:, None] + child).reshape(-1)
        levels.append(scores.numpy())
        state = torch.cat(states) if states else state
    return levels


def beam_search(levels: Sequence[np.ndarray], width: int) -> np.ndarray:
    """The candidates a beam search of `width` ends with, best first: at every prefix length it keeps the `width`
    likeliest prefixes (ties to the lower index) and extends only those, reading the prefix log-probabilities of
    tree_levels (no model call). The canary extraction of Carlini et al.'s Secret Sharer: a secret among the
    survivors is one an attacker who searches this hard would read off the model."""
    if width < 1:
        raise ValueError(f"width must be >= 1, got {width}")
    k = levels[0].size
    kept = np.arange(k)
    for level in levels:
        if kept.size > width:
            kept = kept[np.argsort(-level[kept], kind="stable")[:width]]
        if level is not levels[-1]:
            kept = (kept[:, None] * k + np.arange(k)).reshape(-1)
    return kept[np.argsort(-levels[-1][kept], kind="stable")]


def brute_force_scores(
    sequence_logprob: Callable[[list[list[int]]], np.ndarray],
    context: Sequence[int],
    digit_ids: Sequence[int],
    length: int,
    batch: int = 4096,
) -> np.ndarray:
    """Naive enumeration: score every full candidate sequence separately (same index order as tree_scores)."""
    k = len(digit_ids)
    total = k**length
    out = []
    for lo in tqdm(range(0, total, batch), desc="naive", leave=False):
        cands = [
            [digit_ids[(i // k ** (length - 1 - p)) % k] for p in range(length)]
            for i in range(lo, min(lo + batch, total))
        ]
        out.append(sequence_logprob([list(context) + c for c in cands]))
    return np.concatenate(out)


def rank_of(scores: np.ndarray, index: int) -> int:
    """Exact rank (1 = most likely) of candidate `index`: 1 + candidates scored strictly higher."""
    return int(1 + np.count_nonzero(scores > scores[index]))


def canary_index(digits: str) -> int:
    """Position of a decimal canary among the candidates (its integer value)."""
    return int(digits)


def candidate_ranks(scores: np.ndarray) -> np.ndarray:
    """Exact rank of every candidate, as rank_of (1 + candidates scored strictly higher), from one argsort.

    In sorted order, the candidates scored <= a candidate (itself included) end where its run of equal scores ends;
    that count is spread back to the candidates' own positions. (A binary search of every score in the sorted array
    gives the same counts, about 5 times slower on 10^6 candidates: 0.46 s against 0.09 s here.)"""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or s.size == 0 or np.isnan(s).any():
        raise ValueError(f"scores must be a non-empty 1-D array without NaN, got shape {s.shape}")
    order = np.argsort(s)
    ordered = s[order]
    run_ends = np.r_[np.flatnonzero(ordered[1:] != ordered[:-1]) + 1, s.size]  # one past each run of equal scores
    at_most = np.empty(s.size, dtype=np.int64)
    at_most[order] = np.repeat(run_ends, np.diff(run_ends, prepend=0))
    return 1 + s.size - at_most


def _indices(indices: Sequence[int] | np.ndarray, n: int, name: str) -> np.ndarray:
    """`indices` as a 1-D int array of positions in [0, n); negative or too large positions are refused."""
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    if ((idx < 0) | (idx >= n)).any():
        raise ValueError(f"{name} must be candidate positions in [0, {n:,}), got {idx[(idx < 0) | (idx >= n)][:5]}")
    return idx


def exposure_null(
    scores: np.ndarray,
    n_canaries: int = 10,
    n_draws: int = 1000,
    seed: int = 0,
    exclude: Sequence[int] | np.ndarray = (),
) -> np.ndarray:
    """Null of the max exposure over n_canaries fake canaries: candidates drawn without replacement, no model call."""
    return exposure_nulls(scores, n_canaries, n_draws, seed, exclude)["max"]


def exposure_nulls(
    scores: np.ndarray,
    n_canaries: int = 10,
    n_draws: int = 1000,
    seed: int = 0,
    exclude: Sequence[int] | np.ndarray = (),
) -> dict[str, np.ndarray]:
    """Nulls of the max and of the mean exposure over the same n_canaries fake canaries per draw (exposure_null's
    draws: its "max" is exposure_null itself), and each draw's fake canaries' exposures ("drawn"; stats.subset_nulls)."""
    return subset_nulls(fake_exposures(scores, exclude), n_canaries, n_draws, seed)


def fake_exposures(scores: np.ndarray, exclude: Sequence[int] | np.ndarray = ()) -> np.ndarray:
    """The exposure of every scored candidate but `exclude` (the real canaries), each ranked among all N: the pool
    fake canaries are drawn from."""
    ranks = candidate_ranks(scores)
    keep = np.ones(ranks.size, dtype=bool)
    keep[_indices(exclude, ranks.size, "exclude")] = False
    return exposure(ranks[keep], ranks.size)


def canary_exposures(scores: np.ndarray, canary_indices: Sequence[int] | np.ndarray) -> np.ndarray:
    """Exposure log2(N) - log2(rank) of each real canary, ranked among all N scored candidates (max_exposure's max)."""
    s = np.asarray(scores, dtype=np.float64)
    idx = _indices(canary_indices, s.size, "canary_indices")
    if idx.size == 0:
        raise ValueError("canary_indices is empty: pass the position of at least one canary")
    return exposure(np.array([rank_of(s, int(i)) for i in idx]), s.size)


def max_exposure(scores: np.ndarray, canary_indices: Sequence[int] | np.ndarray) -> float:
    """Largest exposure log2(N) - log2(rank) over the real canaries, each ranked among all N scored candidates."""
    return float(np.max(canary_exposures(scores, canary_indices)))


def chance_max_exposure(q: float, n_canaries: int = 10) -> float:
    """The q-quantile of the max exposure over `n_canaries` canaries a model never saw, ranks uniform among many
    candidates: P(max ≤ x) = (1 − 2^−x)^n, so x = −log2(1 − q^(1/n))."""
    if not 0 < q < 1 or n_canaries < 1:
        raise ValueError(f"need 0 < q < 1 and n_canaries >= 1, got q={q}, n_canaries={n_canaries}")
    return float(-np.log2(1 - q ** (1 / n_canaries)))
