"""CRT attacks against a null: canary exposure of fake canaries, and the paired, fold-disjoint membership attack."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special
from scipy import stats as sps

from repro.crt import canary
from repro.crt import membership_attacks as ma
from repro.stats import null_band

# ---------------------------------------------------------------------------------------------------------------
# canary exposure: exact ranks and the fake-canary null, no model


def test_candidate_ranks_are_a_permutation_for_continuous_scores() -> None:
    scores = np.random.default_rng(0).random(100_000)
    ranks = canary.candidate_ranks(scores)
    assert np.array_equal(np.sort(ranks), np.arange(1, scores.size + 1))
    assert ranks[np.argmax(scores)] == 1 and ranks[np.argmin(scores)] == scores.size


def test_candidate_ranks_equal_a_direct_loop_with_ties() -> None:
    rng = np.random.default_rng(1)
    for scores in (
        rng.random(300),
        rng.integers(0, 20, 300).astype(float),
        np.r_[-np.inf, rng.normal(size=50), -np.inf, np.inf],
        np.full(40, -3.5),
        np.array([2.0]),
        np.round(rng.normal(size=5000), 1),
    ):
        loop = np.array([1 + np.count_nonzero(scores > s) for s in scores])
        assert np.array_equal(canary.candidate_ranks(scores), loop)
        assert all(canary.rank_of(scores, i) == loop[i] for i in range(0, scores.size, 7))


def test_candidate_ranks_refuse_nan() -> None:
    with pytest.raises(ValueError, match="NaN"):
        canary.candidate_ranks(np.array([0.1, np.nan]))


def test_ranks_of_random_candidates_are_uniform() -> None:
    rng = np.random.default_rng(2)
    scores = rng.random(100_000)
    ranks = canary.candidate_ranks(scores)[rng.choice(scores.size, 2000, replace=False)]
    # discrete uniform on 1..N: (rank - U)/N is continuous uniform on (0, 1); fixed seeds, so never flaky
    assert sps.kstest((ranks - rng.random(ranks.size)) / scores.size, "uniform").pvalue > 0.01
    counts = np.bincount((ranks - 1) * 10 // scores.size, minlength=10)
    assert sps.chisquare(counts).pvalue > 0.01


def expected_max_exposure(n: int, k: int) -> float:
    """Exact E[log2 n - log2 min rank] for k ranks drawn without replacement from 1..n."""
    r = np.arange(1, n - k + 2)
    # P(min >= r) = C(n - r + 1, k) / C(n, k); P(min = r) = P(min >= r) - P(min >= r + 1)
    log_c = (
        special.gammaln(n - r + 2)
        - special.gammaln(n - r + 2 - k)
        - (special.gammaln(n + 1) - special.gammaln(n + 1 - k))
    )
    at_least = np.exp(log_c)
    p = at_least - np.r_[at_least[1:], 0.0]
    return float(math.log2(n) - p @ np.log2(r))


def test_exposure_null_mean_matches_the_max_of_ten_uniform_exposures() -> None:
    n, k, draws = 100_000, 10, 2000
    null = canary.exposure_null(np.random.default_rng(3).random(n), n_canaries=k, n_draws=draws, seed=4)
    exact = expected_max_exposure(n, k)
    # continuous limit: -log2 of the minimum of k uniforms (Beta(1, k)) has mean H_k / ln 2 ≈ 4.226 bits
    harmonic = sum(1 / j for j in range(1, k + 1))
    assert exact == pytest.approx(harmonic / math.log(2), abs=1e-3)
    # its sd is sqrt(sum 1/j^2) / ln 2 ≈ 1.80 bits, so the mean of 2000 draws has SE ≈ 0.040: allow 5 SE
    sd = math.sqrt(sum(1 / j**2 for j in range(1, k + 1))) / math.log(2)
    assert null.std() == pytest.approx(sd, rel=0.1)
    assert abs(null.mean() - exact) < 5 * sd / math.sqrt(draws)


def test_the_mean_exposure_null_is_one_over_ln2_bits_per_canary_over_the_max_nulls_draws() -> None:
    n, k, draws = 100_000, 10, 4000
    scores = np.random.default_rng(3).random(n)
    nulls = canary.exposure_nulls(scores, n_canaries=k, n_draws=draws, seed=4)
    assert np.array_equal(nulls["max"], canary.exposure_null(scores, n_canaries=k, n_draws=draws, seed=4))
    assert (nulls["mean"] <= nulls["max"]).all() and (nulls["mean"] >= nulls["max"] / k).all()  # the same draws
    drawn = nulls["drawn"]  # each draw's fake canaries: their max and mean are the nulls, bit for bit
    assert drawn.shape == (draws, k) and np.array_equal(drawn.max(axis=1), nulls["max"])
    assert np.array_equal(drawn.mean(axis=1), nulls["mean"])
    three = drawn[:, :3].mean(axis=1)  # the first 3 of a draw: the null of 3 canaries' mean, sd 1.443 / sqrt(3)
    assert abs(three.mean() - 1 / math.log(2)) < 5 / math.log(2) / math.sqrt(3 * draws)
    assert three.std() == pytest.approx(1 / math.log(2) / math.sqrt(3), rel=0.1)
    # one unseen canary's exposure -log2(U) is exponential: mean and sd 1 / ln 2 ≈ 1.443 bits; the mean of k has sd
    # 1.443 / sqrt(k) ≈ 0.456, and the mean of 4000 draws SE ≈ 0.0072: allow 5 SE
    per = 1 / math.log(2)
    assert abs(nulls["mean"].mean() - per) < 5 * per / math.sqrt(k * draws)
    assert nulls["mean"].std() == pytest.approx(per / math.sqrt(k), rel=0.1)
    # the exposures of given canaries: their max is max_exposure
    idx = [5, 17, 99_999]
    each = canary.canary_exposures(scores, idx)
    assert each.shape == (3,) and each.max() == canary.max_exposure(scores, idx)
    assert each[0] == pytest.approx(math.log2(n) - math.log2(canary.rank_of(scores, 5)))


def test_chance_max_exposure_quantiles_match_the_simulated_null() -> None:
    null = canary.exposure_null(np.random.default_rng(5).random(200_000), n_canaries=10, n_draws=20_000, seed=6)
    for q in (0.05, 0.5, 0.95, 1 - 0.05 / 4):
        assert np.quantile(null, q) == pytest.approx(canary.chance_max_exposure(q), abs=0.15)
    assert canary.chance_max_exposure(0.95) == pytest.approx(-math.log2(1 - 0.95**0.1))  # 7.61 bits


def test_exposure_null_respects_exclude() -> None:
    scores = np.arange(50.0)  # candidate 49 is ranked 1, candidate 0 is ranked 50
    top = np.arange(40, 50)
    everything = canary.exposure_null(scores, n_canaries=50, n_draws=5)
    assert np.allclose(everything, math.log2(50))  # every candidate drawn: the top one is always in
    rest = canary.exposure_null(scores, n_canaries=40, n_draws=5, exclude=top)
    assert np.allclose(rest, math.log2(50) - math.log2(11))  # the best remaining candidate has rank 11
    assert canary.exposure_null(scores, 1, 200, exclude=top).max() <= math.log2(50 / 11)
    with pytest.raises(ValueError, match="exclude"):
        canary.exposure_null(scores, exclude=[50])


def test_max_exposure_uses_the_best_ranked_canary() -> None:
    scores = np.random.default_rng(5).random(1000)
    idx = [3, 10, 999]
    best = min(canary.rank_of(scores, i) for i in idx)
    assert canary.max_exposure(scores, idx) == pytest.approx(math.log2(1000) - math.log2(best))
    assert canary.max_exposure(scores, [int(np.argmax(scores))]) == pytest.approx(math.log2(1000))


# ---------------------------------------------------------------------------------------------------------------
# membership attack on matched pairs: disjoint folds, groups inside a fold


def test_pair_folds_are_disjoint_and_cover_all_pairs() -> None:
    for n in (2, 7, 300):
        fold_a = ma.pair_folds(n, seed=n)
        a, b = np.flatnonzero(fold_a), np.flatnonzero(~fold_a)
        assert a.size == n // 2 and np.intersect1d(a, b).size == 0
        assert np.array_equal(np.sort(np.r_[a, b]), np.arange(n))
    assert not np.array_equal(ma.pair_folds(300, 0), ma.pair_folds(300, 1))


def test_fold_groups_draw_distinct_pairs_from_their_fold_only() -> None:
    fold = np.array([3, 8, 11, 20, 21, 40])
    groups = ma.fold_groups(fold, n_groups=50, size=4, rng=np.random.default_rng(0))
    assert groups.shape == (50, 4)
    assert np.isin(groups, fold).all()
    assert all(np.unique(row).size == 4 for row in groups)
    assert np.unique(groups).size == fold.size  # 50 rows of 4 reach every pair of a 6-pair fold
    with pytest.raises(ValueError, match="fold of 6 pairs"):
        ma.fold_groups(fold, n_groups=1, size=7, rng=np.random.default_rng(0))


@pytest.mark.parametrize("attack", [ma.individual_attack(301, 0), ma.group_attack(300, 201, 20, 0)])
def test_every_group_lies_in_its_own_fold(attack: ma.Attack) -> None:
    fold_a = attack.fold_a
    for f, in_fold in ((0, fold_a), (1, ~fold_a)):
        for groups in (attack.member_groups[f], attack.nonmember_groups[f]):
            assert in_fold[groups].all()
            assert all(np.unique(row).size == attack.size for row in groups)
    if attack.size == 1:  # individual: every pair once per side, members and non-members paired
        assert np.array_equal(
            np.sort(np.r_[attack.member_groups[0][:, 0], attack.member_groups[1][:, 0]]), np.arange(301)
        )
        assert all(np.array_equal(m, n) for m, n in zip(attack.member_groups, attack.nonmember_groups))
    else:  # 201 groups per side in all, split evenly (fold A takes the odd one)
        assert [g.shape[0] for g in attack.member_groups] == [101, 100]
        assert not np.array_equal(attack.member_groups[0], attack.nonmember_groups[0])  # drawn independently
    with pytest.raises(ValueError):
        attack.fold_a[0] = not attack.fold_a[0]  # read-only


def test_group_attack_never_shares_a_sentence_between_fit_and_test() -> None:
    # the old notebook design: 200 groups of 20 from one pool of the same 300 sentences, half to fit, half to test
    rng = np.random.default_rng(0)
    old = np.array([rng.choice(300, 20, replace=False) for _ in range(200)])
    assert np.intersect1d(old[:100], old[100:]).size > 0  # fit and test groups share sentences
    attack = ma.group_attack(300, 200, 20, seed=0)
    fold_a_used = np.union1d(attack.member_groups[0], attack.nonmember_groups[0])
    fold_b_used = np.union1d(attack.member_groups[1], attack.nonmember_groups[1])
    assert np.intersect1d(fold_a_used, fold_b_used).size == 0
    assert attack.fold_a[fold_a_used].all() and not attack.fold_a[fold_b_used].any()


def test_attack_accuracy_worked_example_individual() -> None:
    fold_a = np.array([True, True, False, False])
    folds = (np.array([[0], [1]]), np.array([[2], [3]]))
    attack = ma.Attack(fold_a, folds, folds)
    members, non_members = np.array([1.0, 5.0, 2.0, 6.0]), np.array([3.0, 4.0, 7.0, 1.0])
    # fit on A: members {1, 5}, non-members {3, 4}; t = 2 gets 3 of 4 right. Test on B: members {2, 6} < 2: none;
    # non-members {7, 1} >= 2: one -> 1/4. Fit on B: members {2, 6}, non-members {7, 1}; t = 6.5 gets 3 of 4.
    # Test on A: members {1, 5} < 6.5: both; non-members {3, 4} >= 6.5: none -> 2/4. Mean (1/4 + 2/4) / 2.
    assert ma.best_threshold(members[:2], non_members[:2]) == 2.0
    assert ma.best_threshold(members[2:], non_members[2:]) == 6.5
    assert ma.attack_accuracy(attack, members, non_members) == pytest.approx(0.375)


def test_attack_accuracy_worked_example_groups() -> None:
    fold_a = np.r_[np.ones(4, bool), np.zeros(4, bool)]
    member_groups = (np.array([[0, 1], [2, 3]]), np.array([[4, 5], [6, 7]]))
    nonmember_groups = (np.array([[0, 2], [1, 3]]), np.array([[4, 6], [5, 7]]))
    attack = ma.Attack(fold_a, member_groups, nonmember_groups)
    members = np.arange(1.0, 9.0)
    non_members = np.array([2, 2, 2, 2, 9, 9, 9, 1.0])
    # sums: A members {3, 7}, non-members {4, 4}; B members {11, 15}, non-members {18, 10}.
    # fit A: t = 3.5 (3 of 4; the first of the tied best); test B: members < 3.5 none, non-members >= 3.5 both -> 2/4.
    # fit B: sorted 10, 11, 15, 18; t = 16.5 gets members {11, 15} and non-member 18 -> 3 of 4;
    # test A: members {3, 7} < 16.5 both, non-members {4, 4} >= 16.5 none -> 2/4.
    assert ma.attack_accuracy(attack, members, non_members) == pytest.approx(0.5)
    non_members[:] = 9.0  # non-member sums all 18: fit A (3, 7 | 18, 18) t = 12.5, test B: member 11 < 12.5 and
    # both 18 >= 12.5 -> 3/4; fit B (11, 15 | 18, 18) t = 16.5, test A: 3, 7 < 16.5 and 18, 18 >= 16.5 -> 4/4
    assert ma.attack_accuracy(attack, members, non_members) == pytest.approx(0.875)


def test_batched_thresholds_equal_best_threshold_with_ties() -> None:
    rng = np.random.default_rng(6)
    for _ in range(200):
        a, b = rng.integers(1, 9, size=2)
        m, n = rng.integers(0, 5, (6, a)).astype(float), rng.integers(0, 5, (6, b)).astype(float)
        expected = [ma.best_threshold(x, y) for x, y in zip(m, n)]
        assert np.array_equal(ma._best_thresholds(m, n), expected)


@pytest.mark.parametrize("attack", [ma.individual_attack(60, 1), ma.group_attack(60, 30, 5, 1)])
def test_attack_null_equals_a_loop_of_attack_accuracy(attack: ma.Attack) -> None:
    rng = np.random.default_rng(7)
    members, non_members = rng.integers(0, 30, 60).astype(float), rng.integers(0, 30, 60).astype(float)
    null = ma.attack_null(attack, members, non_members, n_permutations=300, seed=8, chunk=128)
    swaps = np.random.default_rng(8).random((300, 60)) < 0.5  # the same draws, chunk by chunk
    loop = [
        ma.attack_accuracy(attack, np.where(s, non_members, members), np.where(s, members, non_members)) for s in swaps
    ]
    assert np.array_equal(null, loop)


def simulate(attack_of: str, shift: float, n_experiments: int, seed: int) -> tuple[float, float, float]:
    """Share of experiments whose observed accuracy lies inside / above the null's 95 % band, and the mean null mean."""
    rng = np.random.default_rng(seed)
    inside = above = 0
    null_means = []
    for e in range(n_experiments):
        n = 100 if attack_of == "individual" else 200
        attack = ma.individual_attack(n, e) if attack_of == "individual" else ma.group_attack(n, 100, 10, e)
        base = rng.normal(50, 10, n)  # a pair's sentence sets its perplexity; member and look-alike add noise
        members, non_members = base - shift + rng.normal(0, 3, n), base + rng.normal(0, 3, n)
        null = ma.attack_null(attack, members, non_members, n_permutations=200, seed=e)
        low, high = null_band(null)
        observed = ma.attack_accuracy(attack, members, non_members)
        inside += low <= observed <= high
        above += observed > high
        null_means.append(null.mean())
    return inside / n_experiments, above / n_experiments, float(np.mean(null_means))


@pytest.mark.parametrize("attack_of", ["individual", "group"])
def test_observed_accuracy_lies_in_the_null_band_when_members_look_like_non_members(attack_of: str) -> None:
    inside, _, null_mean = simulate(attack_of, shift=0.0, n_experiments=200, seed=9)
    # the paired permutation null is exact under exchangeability: 95 % coverage (a little more with ties)
    assert 0.88 <= inside <= 0.99
    assert null_mean == pytest.approx(0.5, abs=0.01)


@pytest.mark.parametrize("attack_of", ["individual", "group"])
def test_observed_accuracy_beats_the_null_when_members_have_lower_perplexity(attack_of: str) -> None:
    _, above, _ = simulate(attack_of, shift=10.0, n_experiments=20, seed=10)
    assert above == 1.0


def test_attack_inputs_are_validated() -> None:
    attack = ma.individual_attack(10, 0)
    with pytest.raises(ValueError, match="one score per pair"):
        ma.attack_accuracy(attack, np.zeros(9), np.zeros(10))
    with pytest.raises(ValueError, match="finite"):
        ma.attack_null(attack, np.r_[np.nan, np.zeros(9)], np.zeros(10))
    with pytest.raises(ValueError, match="at least 2 pairs"):
        ma.pair_folds(1, 0)


def test_an_attack_refuses_a_group_outside_its_fold() -> None:
    fold_a = np.array([True, True, False, False])
    with pytest.raises(ValueError, match="fold A holds a pair outside"):
        ma.Attack(fold_a, (np.array([[0, 2]]), np.array([[2, 3]])), (np.array([[0, 1]]), np.array([[2, 3]])))
    with pytest.raises(ValueError, match="fold B holds a pair outside"):
        ma.Attack(fold_a, (np.array([[0]]), np.array([[2]])), (np.array([[1]]), np.array([[1]])))


def test_resampled_accuracies_with_identity_draws_equal_the_attack() -> None:
    rng = np.random.default_rng(8)
    m, n = rng.normal(10, 1, 60), rng.normal(10.5, 1, 60)
    for attack in (ma.individual_attack(60, 1), ma.group_attack(60, 6, 5, 1)):
        identity = np.tile(np.arange(60), (2, 1))
        assert np.allclose(ma.resampled_accuracies(attack, m, n, identity), ma.attack_accuracy(attack, m, n))
        draws = rng.integers(0, 60, (3, 60))
        direct = [ma.attack_accuracy(attack, m[d], n[d]) for d in draws]
        assert np.allclose(ma.resampled_accuracies(attack, m, n, draws), direct)


# ---------------------------------------------------------------------------------------------------------------
# the paired statistic and power by simulation at a member win rate fixed in advance


def test_paired_share_counts_members_below_their_look_alikes_ties_half() -> None:
    members = np.array([1.0, 5.0, 2.0, 3.0])
    look_alikes = np.array([2.0, 4.0, 2.0, 9.0])
    assert ma.paired_share(members, look_alikes) == (1 + 0 + 0.5 + 1) / 4
    rows = ma.paired_shares(np.stack([members, look_alikes]), np.stack([look_alikes, members]))
    assert np.allclose(rows, [0.625, 0.375])  # swapping every pair mirrors the share about 0.5
    with pytest.raises(ValueError, match="one shape"):
        ma.paired_shares(members[None], look_alikes[None, :3])


def test_win_rate_worlds_keep_the_pairs_and_put_the_member_low_at_the_rate() -> None:
    rng = np.random.default_rng(0)
    m, n = rng.lognormal(size=500), rng.lognormal(size=500)
    wm, wn = ma.win_rate_worlds(m, n, 0.6, 400, np.random.default_rng(1))
    assert np.array_equal(np.minimum(wm, wn), np.broadcast_to(np.minimum(m, n), wm.shape))
    assert np.array_equal(np.maximum(wm, wn), np.broadcast_to(np.maximum(m, n), wm.shape))
    assert abs((wm < wn).mean() - 0.6) < 0.005  # 200,000 draws: sd 0.0011
    top, _ = ma.win_rate_worlds(m, n, 1.0, 3, rng)
    assert np.array_equal(top[0], np.minimum(m, n))
    with pytest.raises(ValueError, match="win_rate"):
        ma.win_rate_worlds(m, n, 1.5, 3, rng)


@pytest.mark.parametrize("win_rate", [0.5, 0.55, 0.6])
def test_paired_power_by_simulation_equals_the_binomial_formula(win_rate: float) -> None:
    """No ties, one model: the paired share of a world at win rate w is Binomial(n, w) / n, so its power against a
    point t is the binomial tail P(X > n t) (at w = 0.5, the test's size)."""
    n_pairs = 300
    rng = np.random.default_rng(2)
    m, n = rng.lognormal(size=n_pairs), rng.lognormal(size=n_pairs)
    point = sps.binom.ppf(0.95, n_pairs, 0.5) / n_pairs  # the exact null's 95 % point
    sims = ma.simulated_statistic(ma.paired_shares, [m], [n], win_rate, 4000, seed=3)
    direct = sps.binom.sf(np.floor(n_pairs * point), n_pairs, win_rate)
    assert abs(np.mean(sims > point) - direct) < 0.025, (np.mean(sims > point), direct)  # 4,000 worlds: sd <= 0.008
    assert (direct < 0.05) if win_rate == 0.5 else direct > 0.2


def test_paired_worlds_label_a_pair_alike_in_every_model() -> None:
    """The pairs are the data seed's, so a simulated world labels pair i the same way in every trained model: with
    three models' independent scores the seed mean is Binomial(n, w) / n, as wide as one model's (independent labels
    per model would give Binomial(3n, w) / 3n, √3 narrower)."""
    rng = np.random.default_rng(4)
    ms, ns = [rng.lognormal(size=100) for _ in range(3)], [rng.lognormal(size=100) for _ in range(3)]
    null = ma.simulated_statistic(ma.paired_shares, ms, ns, 0.5, 4000, seed=5)
    assert abs(null.mean() - 0.5) < 0.003 and abs(null.std() - np.sqrt(0.25 / 100)) < 0.003
    point = np.quantile(null, 0.95)
    sims = ma.simulated_statistic(ma.paired_shares, ms, ns, 0.55, 4000, seed=6)
    direct = sps.binom.sf(np.floor(100 * point + 1e-9), 100, 0.55)
    assert abs(np.mean(sims > point) - direct) < 0.03
    with pytest.raises(ValueError, match="same pairs"):
        ma.simulated_statistic(ma.paired_shares, [ms[0], ms[1][:50]], [ns[0], ns[1][:50]], 0.5, 10, seed=0)


def test_seed_mean_paired_test_keeps_its_size_when_the_models_share_their_pairs() -> None:
    """Size by simulation: three models score the same 100 pairs (each pair's two sentences differ by far more than
    the models do), and which of the two is the member is a fair coin, fixed across the models as the data seed fixes
    it. The seed-mean share clears its simulated null's 95 % point about 5 % of the time (a null drawn apart per model
    would be √3 too narrow, a size near 25 %)."""
    rng = np.random.default_rng(12)
    hits = []
    for _ in range(300):
        a, b = rng.lognormal(size=100), rng.lognormal(size=100)
        swap = rng.random(100) < 0.5
        m, n = np.where(swap, b, a), np.where(swap, a, b)
        ms = [m * rng.lognormal(0, 0.05, 100) for _ in range(3)]
        ns = [n * rng.lognormal(0, 0.05, 100) for _ in range(3)]
        observed = np.mean([ma.paired_share(x, y) for x, y in zip(ms, ns)])
        null = ma.simulated_statistic(ma.paired_shares, ms, ns, 0.5, 400, seed=int(rng.integers(1 << 30)))
        hits.append(observed > np.quantile(null, 0.95))
    assert 0.02 < np.mean(hits) < 0.09, np.mean(hits)


def test_fold_draws_stay_inside_their_folds() -> None:
    """A resample puts in a fold's positions only that fold's pairs (the threshold is never fitted on a copy of a pair
    it is tested on), every pair of a fold about equally often."""
    attack = ma.individual_attack(40, seed=2)
    draws = ma.fold_draws(attack, 2000, seed=3)
    assert draws.shape == (2000, 40)
    assert attack.fold_a[draws[:, attack.fold_a]].all() and not attack.fold_a[draws[:, ~attack.fold_a]].any()
    counts = np.bincount(draws.ravel(), minlength=40) / draws.size
    assert np.allclose(counts, 1 / 40, atol=0.003)
    assert np.array_equal(draws, ma.fold_draws(attack, 2000, seed=3))


def test_threshold_power_is_the_size_at_no_effect_and_rises_with_the_win_rate() -> None:
    """The paper's threshold attack on worlds from the same pairs: at w = 0.5 the simulation is the permutation null
    (attack_null's swaps), so it clears that null's 95 % point about 5 % of the time; its power rises with w and is 1
    when members always win and the pairs differ by far more than the spread across pairs."""
    rng = np.random.default_rng(7)
    base = rng.normal(3.0, 0.3, 200)
    m, n = np.exp(base - rng.uniform(0.0, 0.2, 200)), np.exp(base + rng.uniform(0.0, 0.2, 200))
    attack = ma.individual_attack(200, seed=0)
    point = np.quantile(ma.attack_null(attack, m, n, 2000, seed=8), 0.95)
    statistic = ma.threshold_statistic(attack)
    power = {w: np.mean(ma.simulated_statistic(statistic, [m], [n], w, 1000, seed=9) > point) for w in (0.5, 0.6, 0.8)}
    assert power[0.5] < 0.08 and power[0.5] < power[0.6] < power[0.8]
    far_m, far_n = np.exp(rng.normal(0, 0.1, 200)), np.exp(rng.normal(3, 0.1, 200))
    assert np.mean(ma.simulated_statistic(statistic, [far_m], [far_n], 1.0, 50, seed=10) > point) == 1.0
    sims = ma.simulated_statistic(statistic, [m], [n], 1.0, 5, seed=11)
    assert np.allclose(sims, ma.attack_accuracy(attack, np.minimum(m, n), np.maximum(m, n)))
