"""Membership inference by perplexity threshold (CRT Appendix A.5): individual sentences and groups of sentences."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


# ---------------------------------------------------------------------------------------------------------------
# matched pairs: member i is a training sentence, non-member i its look-alike (same sentence, fresh secrets)


@dataclass(frozen=True, eq=False)
class Attack:
    """Disjoint folds of pairs and, per fold, the pair indices summed into each member and non-member group.

    The individual attack is the group attack with groups of one: every pair of a fold, once, on both sides."""

    fold_a: np.ndarray  # bool mask over pairs, True = fold A
    member_groups: tuple[np.ndarray, np.ndarray]  # (fold A, fold B) index matrices of shape (groups, size)
    nonmember_groups: tuple[np.ndarray, np.ndarray]

    def __post_init__(self) -> None:
        """Store read-only copies and refuse a group that leaves its fold (fit and test must not share a sentence)."""
        fold_a = _frozen(np.asarray(self.fold_a, dtype=bool))
        members = tuple(_frozen(np.asarray(g, dtype=np.int64)) for g in self.member_groups)
        non_members = tuple(_frozen(np.asarray(g, dtype=np.int64)) for g in self.nonmember_groups)
        object.__setattr__(self, "fold_a", fold_a)
        object.__setattr__(self, "member_groups", members)
        object.__setattr__(self, "nonmember_groups", non_members)
        if fold_a.ndim != 1 or len(members) != 2 or len(non_members) != 2:
            raise ValueError("an Attack needs a 1-D fold mask and (fold A, fold B) groups on each side")
        shapes = {g.shape[1] if g.ndim == 2 else -1 for g in members + non_members}
        if len(shapes) != 1 or shapes == {-1} or min(g.shape[0] for g in members + non_members) < 1:
            raise ValueError(f"groups must be non-empty (groups, size) matrices of one size, got {shapes}")
        for f, in_fold in enumerate((fold_a, ~fold_a)):
            for g in (members[f], non_members[f]):
                if ((g < 0) | (g >= fold_a.size)).any() or not in_fold[g].all():
                    raise ValueError(f"a group of fold {'AB'[f]} holds a pair outside that fold")

    @property
    def n_pairs(self) -> int:
        """Number of matched pairs the attack was built for."""
        return int(self.fold_a.size)

    @property
    def size(self) -> int:
        """Sentences per group (1 for the individual attack)."""
        return int(self.member_groups[0].shape[1])


def _frozen(a: np.ndarray) -> np.ndarray:
    """A read-only copy of `a`, so that an Attack cannot be changed after it is built."""
    out = np.array(a)
    out.flags.writeable = False
    return out


def pair_folds(n_pairs: int, seed: int) -> np.ndarray:
    """Bool mask over pairs, True = fold A: a random n_pairs // 2 of them; the rest are fold B."""
    if n_pairs < 2:
        raise ValueError(f"need at least 2 pairs to make two folds, got {n_pairs}")
    mask = np.zeros(n_pairs, dtype=bool)
    mask[np.random.default_rng(seed).permutation(n_pairs)[: n_pairs // 2]] = True
    return mask


def fold_groups(fold_indices: np.ndarray, n_groups: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """(n_groups, size) matrix, each row `size` distinct pair indices drawn from fold_indices only."""
    fold = np.asarray(fold_indices, dtype=np.int64)
    if fold.size < size or size < 1 or n_groups < 1:
        raise ValueError(f"cannot draw {n_groups} groups of {size} distinct pairs from a fold of {fold.size} pairs")
    picks = np.argsort(rng.random((n_groups, fold.size)), axis=1)[:, :size]  # a random permutation per row
    return fold[picks]


def individual_attack(n_pairs: int, seed: int) -> Attack:
    """Per-sentence attack: fit on every pair of one fold, test on every pair of the other, then swap."""
    fold_a = pair_folds(n_pairs, seed)
    folds = (np.flatnonzero(fold_a)[:, None], np.flatnonzero(~fold_a)[:, None])
    return Attack(fold_a, folds, folds)


def group_attack(n_pairs: int, n_groups: int, size: int, seed: int) -> Attack:
    """Group attack: n_groups member and n_groups non-member groups in all, split evenly between the folds.

    Fold A gets n_groups - n_groups // 2 groups per side, fold B n_groups // 2; members' and non-members'
    groups are drawn independently, each from its own fold only, so fit and test never share a sentence."""
    if n_groups < 2:
        raise ValueError(f"need at least 2 groups per side (one per fold), got {n_groups}")
    fold_a = pair_folds(n_pairs, seed)
    rng = np.random.default_rng([seed, 1])
    counts = (n_groups - n_groups // 2, n_groups // 2)
    folds = (np.flatnonzero(fold_a), np.flatnonzero(~fold_a))
    members = (fold_groups(folds[0], counts[0], size, rng), fold_groups(folds[1], counts[1], size, rng))
    non_members = (fold_groups(folds[0], counts[0], size, rng), fold_groups(folds[1], counts[1], size, rng))
    return Attack(fold_a, members, non_members)


def _pair_scores(attack: Attack, member_scores: np.ndarray, nonmember_scores: np.ndarray) -> tuple:
    """Validate one finite score per pair on each side; return them as float64 arrays."""
    m = np.asarray(member_scores, dtype=np.float64)
    n = np.asarray(nonmember_scores, dtype=np.float64)
    if m.shape != (attack.n_pairs,) or n.shape != (attack.n_pairs,):
        raise ValueError(f"need one score per pair ({attack.n_pairs}) on each side, got {m.shape} and {n.shape}")
    if not (np.isfinite(m).all() and np.isfinite(n).all()):
        raise ValueError("member_scores and nonmember_scores must be finite (perplexities)")
    return m, n


def attack_accuracy(attack: Attack, member_scores: np.ndarray, nonmember_scores: np.ndarray) -> float:
    """Mean test accuracy of 'member if summed score < t', t fitted by best_threshold on one fold, tested on the other."""
    m, n = _pair_scores(attack, member_scores, nonmember_scores)
    sums = [(m[g].sum(axis=1), n[h].sum(axis=1)) for g, h in zip(attack.member_groups, attack.nonmember_groups)]
    accs = []
    for (fm, fn), (tm, tn) in ((sums[0], sums[1]), (sums[1], sums[0])):
        t = best_threshold(fm, fn)
        accs.append((np.count_nonzero(tm < t) + np.count_nonzero(tn >= t)) / (tm.size + tn.size))
    return float(np.mean(accs))


def _best_thresholds(members: np.ndarray, non_members: np.ndarray) -> np.ndarray:
    """best_threshold of every row of (rows, a) members and (rows, b) non-members, same candidates and tie-breaking."""
    a, b = members.shape[1], non_members.shape[1]
    values = np.concatenate([members, non_members], axis=1)
    order = np.argsort(values, axis=1, kind="stable")
    v = np.take_along_axis(values, order, axis=1)
    rows, k = v.shape
    cands = np.concatenate([v[:, :1] - 1, (v[:, 1:] + v[:, :-1]) / 2, v[:, -1:] + 1], axis=1)  # (rows, k + 1)
    # values below candidate j: j, unless the midpoint equals v[j-1] (ties), then the first index of that value
    first = np.maximum.accumulate(np.where(np.diff(v, axis=1, prepend=-np.inf) > 0, np.arange(k), 0), axis=1)
    below = np.broadcast_to(np.arange(k + 1), (rows, k + 1)).copy()
    tied = cands[:, 1:] <= v  # midpoint not above v[j-1]: only possible when it equals v[j-1]
    below[:, 1:] = np.where(tied, first, below[:, 1:])
    cum_members = np.concatenate([np.zeros((rows, 1), np.int64), np.cumsum(order < a, axis=1)], axis=1)
    members_below = np.take_along_axis(cum_members, below, axis=1)
    correct = members_below + b - (below - members_below)
    return np.take_along_axis(cands, np.argmax(correct, axis=1)[:, None], axis=1)[:, 0]


def _accuracies(attack: Attack, member_scores: np.ndarray, nonmember_scores: np.ndarray) -> np.ndarray:
    """attack_accuracy of every row of (rows, n_pairs) member and non-member scores."""
    sums = [
        (member_scores[:, g].sum(axis=2), nonmember_scores[:, h].sum(axis=2))
        for g, h in zip(attack.member_groups, attack.nonmember_groups)
    ]
    accs = []
    for (fm, fn), (tm, tn) in ((sums[0], sums[1]), (sums[1], sums[0])):
        t = _best_thresholds(fm, fn)[:, None]
        accs.append(
            (np.count_nonzero(tm < t, axis=1) + np.count_nonzero(tn >= t, axis=1)) / (tm.shape[1] + tn.shape[1])
        )
    return (accs[0] + accs[1]) / 2


def attack_null(
    attack: Attack,
    member_scores: np.ndarray,
    nonmember_scores: np.ndarray,
    n_permutations: int = 1000,
    seed: int = 0,
    chunk: int = 250,
) -> np.ndarray:
    """Paired permutation null of attack_accuracy: each pair's member and non-member swapped with probability 1/2.

    Folds and groups stay fixed; permutations run `chunk` at a time, vectorized."""
    m, n = _pair_scores(attack, member_scores, nonmember_scores)
    if n_permutations < 1:
        raise ValueError(f"n_permutations must be >= 1, got {n_permutations}")
    rng = np.random.default_rng(seed)
    out = []
    for lo in range(0, n_permutations, chunk):
        swap = rng.random((min(chunk, n_permutations - lo), m.size)) < 0.5
        out.append(_accuracies(attack, np.where(swap, n, m), np.where(swap, m, n)))
    return np.concatenate(out)


def resampled_accuracies(
    attack: Attack, member_scores: np.ndarray, nonmember_scores: np.ndarray, pair_draws: np.ndarray
) -> np.ndarray:
    """attack_accuracy with the pairs resampled: row r puts pair pair_draws[r, i] in position i (folds and groups stay
    fixed), the bootstrap of a world whose pairs are the observed ones, for the attack's power and intervals."""
    m, n = _pair_scores(attack, member_scores, nonmember_scores)
    draws = np.asarray(pair_draws, dtype=np.int64)
    if draws.ndim != 2 or draws.shape[1] != attack.n_pairs:
        raise ValueError(f"pair_draws must be (rows, {attack.n_pairs}), got {draws.shape}")
    return _accuracies(attack, m[draws], n[draws])


# ---------------------------------------------------------------------------------------------------------------
# the paired statistic (ours) and power by simulation at an effect fixed in advance


def paired_shares(member_scores: np.ndarray, nonmember_scores: np.ndarray) -> np.ndarray:
    """Per row of (rows, pairs) scores, the share of pairs whose member scores below its look-alike (perplexity: the
    member 'beats' it), ties counting 1/2: the pairs' own AUC, 0.5 at chance."""
    m, n = np.asarray(member_scores, np.float64), np.asarray(nonmember_scores, np.float64)
    if m.ndim != 2 or m.shape != n.shape or m.shape[1] < 1:
        raise ValueError(f"need (rows, pairs) member and non-member scores of one shape, got {m.shape} and {n.shape}")
    return ((m < n) + 0.5 * (m == n)).mean(axis=1)


def paired_share(member_scores: np.ndarray, nonmember_scores: np.ndarray) -> float:
    """paired_shares of one set of pairs (1-D scores)."""
    return float(paired_shares(np.asarray(member_scores)[None], np.asarray(nonmember_scores)[None])[0])


def win_rate_worlds(
    member_scores: np.ndarray, nonmember_scores: np.ndarray, win_rate: float, rows: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """`rows` simulated worlds of the observed pairs at a member win rate fixed in advance: in each world and pair, the
    lower of the pair's two observed scores is the member's with probability `win_rate`, independently. The scores
    themselves (their spread across pairs and within them) stay the observed ones, only the labels carry the effect.
    At win_rate 0.5 this is the paired permutation null (attack_null's swaps), at 1 every member beats its
    look-alike. Returns (rows, pairs) member and non-member scores."""
    if not 0.0 <= win_rate <= 1.0:
        raise ValueError(f"win_rate must lie in [0, 1], got {win_rate}")
    m = np.asarray(member_scores, np.float64)
    return _labelled(m, nonmember_scores, rng.random((rows, m.size)) < win_rate)


def _labelled(member_scores: np.ndarray, nonmember_scores: np.ndarray, wins: np.ndarray) -> tuple[np.ndarray, ...]:
    """(rows, pairs) member and non-member scores: in row r the lower of pair i's two observed scores is the member's
    where wins[r, i]."""
    m, n = np.asarray(member_scores, np.float64), np.asarray(nonmember_scores, np.float64)
    low, high = np.minimum(m, n), np.maximum(m, n)
    return np.where(wins, low, high), np.where(wins, high, low)


def simulated_statistic(
    statistic, members: list[np.ndarray], nonmembers: list[np.ndarray], win_rate: float, n_sims: int, seed: int
) -> np.ndarray:
    """The seed-mean of `statistic` ((rows, pairs) members, non-members -> (rows,)) over `n_sims` simulated worlds
    at `win_rate` (win_rate_worlds), each pair labelled the same way in every trained model: the pairs are the data
    seed's, shared by every model, so a pair's label (and, at 0.5, its permutation swap) is too. Drawing them apart
    per model would make the seed mean's null about sqrt(models) too narrow where the models' scores agree."""
    if n_sims < 1 or not members or len(members) != len(nonmembers):
        raise ValueError(f"need n_sims >= 1 and one member and non-member score array per model, got {n_sims}")
    sizes = {np.size(m) for m in members} | {np.size(n) for n in nonmembers}
    if len(sizes) != 1:
        raise ValueError(f"every model scores the same pairs; got pair counts {sorted(sizes)}")
    draws = np.random.default_rng(seed).random((n_sims, sizes.pop()))
    return np.mean([statistic(*_labelled(m, n, draws < win_rate)) for m, n in zip(members, nonmembers)], axis=0)


def fold_draws(attack: Attack, n_resamples: int, seed: Any) -> np.ndarray:
    """(n_resamples, n_pairs) pair draws for resampled_accuracies that stay inside the attack's folds: a position of
    fold A draws one of fold A's pairs, a position of fold B one of fold B's, so a resample never puts a pair on the
    side that fits the threshold and on the side it is tested on."""
    rng = np.random.default_rng(seed)
    out = np.empty((n_resamples, attack.n_pairs), dtype=np.int64)
    for in_fold in (attack.fold_a, ~attack.fold_a):
        pairs = np.flatnonzero(in_fold)
        out[:, pairs] = pairs[rng.integers(0, pairs.size, (n_resamples, pairs.size))]
    return out


def threshold_statistic(attack: Attack):
    """attack_accuracy as a statistic of (rows, pairs) scores, for simulated_statistic."""
    return lambda m, n: _accuracies(attack, m, n)
