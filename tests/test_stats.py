"""repro.stats: intervals checked against direct formulas, scikit-learn / scipy, and coverage by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import roc_auc_score

from repro import metrics, stats


def correlated_scores(rng: np.random.Generator, n: int, shift_a: float = 1.0, shift_b: float = 0.7, noise: float = 0.5):
    """Balanced labels and two scores sharing a common component (so their AUCs are strongly correlated)."""
    y = np.r_[np.ones(n // 2, dtype=int), np.zeros(n - n // 2, dtype=int)]
    common = rng.normal(size=n)
    a = shift_a * y + common + noise * rng.normal(size=n)
    b = shift_b * y + common + noise * rng.normal(size=n)
    return y, a, b


def binormal_auc(shift: float, noise: float = 0.5) -> float:
    """True AUC of shift*y + N(0, 1 + noise^2) scores."""
    return float(sps.norm.cdf(shift / math.sqrt(2 * (1 + noise**2))))


# --- Interval ---------------------------------------------------------------------------------------------------


def test_interval_helpers() -> None:
    iv = stats.Interval(0.5, 0.4, 0.6, "test")
    assert iv.as_tuple() == (0.4, 0.6)
    assert iv.contains(0.4) and iv.contains(0.55) and not iv.contains(0.61)
    with pytest.raises(AttributeError):
        iv.low = 0.0  # frozen


# --- AUC --------------------------------------------------------------------------------------------------------


def test_fast_auc_equals_sklearn_with_ties() -> None:
    rng = np.random.default_rng(0)
    for _ in range(30):
        n = int(rng.integers(5, 400))
        y = rng.random(n) < rng.uniform(0.1, 0.9)
        if y.all() or not y.any():
            continue
        scores = rng.integers(0, int(rng.integers(2, 20)), size=n).astype(float)  # many ties
        assert stats.fast_auc(y, scores) == pytest.approx(roc_auc_score(y, scores), abs=1e-12)
        assert stats.fast_auc(y.astype(int), scores + y) == pytest.approx(roc_auc_score(y, scores + y), abs=1e-12)


def test_fast_auc_rejects_bad_labels() -> None:
    with pytest.raises(ValueError, match="both classes"):
        stats.fast_auc([1, 1, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="0/1"):
        stats.fast_auc([0, 2, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="NaN"):
        stats.fast_auc([0, 1], [0.1, np.nan])


def test_auc_fast_path_equals_generic_resampling() -> None:
    rng = np.random.default_rng(1)
    y, a, b = correlated_scores(rng, 300)
    a = np.round(a, 1)  # ties
    fast = stats.paired_bootstrap_diff(stats.fast_auc, y, a, b, n_resamples=200)
    via_auroc = stats.paired_bootstrap_diff(metrics.auroc, y, a, b, n_resamples=200)
    generic = stats.paired_bootstrap_diff(lambda yy, s: roc_auc_score(yy, s), y, a, b, n_resamples=200)
    for other in (via_auroc, generic):
        assert other.estimate == pytest.approx(fast.estimate, abs=1e-12)
        np.testing.assert_allclose(other.as_tuple(), fast.as_tuple(), atol=1e-12)
    single = stats.bootstrap(stats.fast_auc, y, a, n_resamples=200, strata=y)
    single_generic = stats.bootstrap(lambda yy, s: roc_auc_score(yy, s), y, a, n_resamples=200, strata=y)
    np.testing.assert_allclose(single.as_tuple(), single_generic.as_tuple(), atol=1e-12)


def test_weighted_auc_of_many_resamples_equals_the_auc_of_each_resample_written_out() -> None:
    rng = np.random.default_rng(8)
    y, a, _ = correlated_scores(rng, 257)
    s = np.round(a, 1)  # ties
    auc = stats.WeightedAuc(y, s)
    weights = np.stack([np.bincount(rng.integers(0, 257, 257), minlength=257) for _ in range(600)]).astype(float)
    weights[:, :5] *= rng.integers(0, 2, (600, 5))  # inclusion masks zero some items
    direct = [stats.fast_auc(np.repeat(y, w.astype(int)), np.repeat(s, w.astype(int))) for w in weights]
    np.testing.assert_allclose(auc.many(weights), direct, rtol=0, atol=1e-12)
    assert auc.many(np.ones((1, 257)))[0] == pytest.approx(stats.fast_auc(y, s), abs=1e-15)


# --- bootstrap --------------------------------------------------------------------------------------------------


def test_bootstrap_method_words_and_estimate() -> None:
    rng = np.random.default_rng(2)
    y, a, b = correlated_scores(rng, 13_400)
    iv = stats.paired_bootstrap_diff(stats.fast_auc, y, a, b, n_resamples=1500)
    assert iv.method == "paired bootstrap over 13,400 items, 1,500 resamples, within class"
    assert iv.estimate == pytest.approx(roc_auc_score(y, a) - roc_auc_score(y, b), abs=1e-12)
    assert iv.low < iv.estimate < iv.high
    mean = stats.bootstrap(np.mean, a[:50], n_resamples=100)
    assert mean.method == "bootstrap over 50 items, 100 resamples"
    assert mean.estimate == pytest.approx(a[:50].mean())


def test_bootstrap_is_seeded_and_strata_keep_class_counts() -> None:
    rng = np.random.default_rng(3)
    y = np.zeros(200, dtype=int)
    y[:2] = 1  # two positives: about e^-2 of the unstratified resamples have none
    x = rng.normal(size=200) + y
    first = stats.bootstrap(stats.fast_auc, y, x, n_resamples=300, strata=y, seed=7)
    assert first == stats.bootstrap(stats.fast_auc, y, x, n_resamples=300, strata=y, seed=7)
    assert first != stats.bootstrap(stats.fast_auc, y, x, n_resamples=300, strata=y, seed=8)
    counts = stats.bootstrap(lambda yy: float(yy.sum()), y, n_resamples=100, strata=y)
    assert counts.low == counts.high == y.sum()
    assert counts.method == "bootstrap over 200 items, 100 resamples, within class"

    def guarded_auc(yy: np.ndarray, s: np.ndarray) -> float:
        return stats.fast_auc(yy, s) if 0 < yy.sum() < yy.size else math.nan

    with pytest.raises(ValueError, match="undefined"):
        stats.bootstrap(guarded_auc, y, x, n_resamples=200)


def _coverage(experiments: int, n_items: int, n_resamples: int, paired: bool, level: float = 0.95) -> float:
    """Share of simulated datasets whose bootstrap interval of AUC_a - AUC_b covers the true difference."""
    truth = binormal_auc(1.0) - binormal_auc(0.7)
    rng = np.random.default_rng(123)
    hits = 0
    for e in range(experiments):
        y, a, b = correlated_scores(rng, n_items)
        if paired:
            iv = stats.paired_bootstrap_diff(stats.fast_auc, y, a, b, n_resamples=n_resamples, level=level, seed=e)
        else:  # broken on purpose: each method gets its own resampled items
            ia = stats.bootstrap(stats.fast_auc, y, a, n_resamples=n_resamples, strata=y, seed=2 * e)
            ib = stats.bootstrap(stats.fast_auc, y, b, n_resamples=n_resamples, strata=y, seed=2 * e + 1)
            half = math.hypot(ia.high - ia.low, ib.high - ib.low) / 2  # independent spreads add in quadrature
            d = ia.estimate - ib.estimate
            iv = stats.Interval(d, d - half, d + half, "unpaired")
        hits += iv.contains(truth)
    return hits / experiments


def test_paired_bootstrap_covers_true_auc_difference() -> None:
    assert 0.90 <= _coverage(200, 200, 300, paired=True) <= 0.99


def test_coverage_check_catches_broken_intervals() -> None:
    assert _coverage(200, 200, 300, paired=True, level=0.5) < 0.7  # a 50 % interval
    assert _coverage(200, 200, 300, paired=False) > 0.99  # unpaired resampling of correlated scores


def test_bootstrap_covers_true_mean() -> None:
    rng = np.random.default_rng(4)
    hits = 0
    for e in range(200):
        x = rng.exponential(size=80)  # true mean 1, skewed
        hits += stats.bootstrap(np.mean, x, n_resamples=300, seed=e).contains(1.0)
    assert 0.88 <= hits / 200 <= 0.99


def test_unpaired_resampling_is_visibly_wider() -> None:
    rng = np.random.default_rng(5)
    y, a, b = correlated_scores(rng, 2000, noise=0.2)
    paired = stats.paired_bootstrap_diff(stats.fast_auc, y, a, b, n_resamples=500)
    dist_a = [stats.fast_auc(y[i], a[i]) for i in (rng.integers(0, y.size, y.size) for _ in range(500))]
    dist_b = [stats.fast_auc(y[i], b[i]) for i in (rng.integers(0, y.size, y.size) for _ in range(500))]
    unpaired = np.quantile(np.subtract(dist_a, dist_b), [0.025, 0.975])
    assert (paired.high - paired.low) < 0.5 * (unpaired[1] - unpaired[0])


def test_paired_bootstrap_accuracy() -> None:
    rng = np.random.default_rng(6)
    y = rng.integers(0, 3, size=500)
    pred_a = np.where(rng.random(500) < 0.8, y, (y + 1) % 3)
    pred_b = np.where(rng.random(500) < 0.7, y, (y + 2) % 3)

    def accuracy(labels: np.ndarray, pred: np.ndarray) -> float:
        return float(np.mean(labels == pred))

    iv = stats.paired_bootstrap_diff(accuracy, y, pred_a, pred_b, n_resamples=500)
    assert iv.estimate == pytest.approx(np.mean(pred_a == y) - np.mean(pred_b == y))
    assert iv.low < iv.estimate < iv.high and iv.contains(0.1)
    assert "within" not in iv.method  # three classes: not stratified


# --- APFD -------------------------------------------------------------------------------------------------------


def test_paired_bootstrap_apfd_estimate_equals_direct_apfd() -> None:
    # hand-checkable: 5 tests, failures t1 and t3; a orders t1, t3 first (APFD 0.9), b has them last (0.3)
    flags = np.array([False, True, False, True, False])
    a = np.array([0.1, 0.9, 0.2, 0.8, 0.3])
    b = -a
    iv = stats.paired_bootstrap_apfd(flags, a, b, n_resamples=200)
    assert iv.estimate == pytest.approx(0.9 - 0.3)
    assert iv.method == "paired bootstrap over 5 tests, 200 resamples, misclassified count fixed"
    rng = np.random.default_rng(7)
    flags = rng.random(3000) < 0.2
    a = flags + rng.normal(size=3000)
    b = np.round(0.5 * flags + rng.normal(size=3000), 1)  # ties, broken by index
    direct = [metrics.apfd(flags[np.argsort(-s, kind="stable")]) for s in (a, b)]
    iv = stats.paired_bootstrap_apfd(flags, a, b, n_resamples=300)
    assert iv.estimate == pytest.approx(direct[0] - direct[1], abs=1e-12)
    assert iv.low < iv.estimate < iv.high


def test_apfd_of_each_resample_equals_direct_resort() -> None:
    rng = np.random.default_rng(8)
    flags = rng.random(60) < 0.3
    scores = np.round(rng.normal(size=60), 1)
    weighted = stats.WeightedApfd(flags, scores)
    for _ in range(50):
        idx = np.sort(rng.integers(0, 60, size=60))  # ties broken by original index
        if not flags[idx].any():
            continue
        order = np.argsort(-scores[idx], kind="stable")
        expected = metrics.apfd(flags[idx][order])
        assert weighted(np.bincount(idx, minlength=60).astype(float)) == pytest.approx(expected, abs=1e-12)


def test_paired_bootstrap_apfd_unstratified_and_bad_input() -> None:
    flags = np.r_[np.ones(20, dtype=bool), np.zeros(80, dtype=bool)]
    a = np.linspace(1, 0, 100)
    iv = stats.paired_bootstrap_apfd(flags, a, a[::-1], n_resamples=200, stratify=False)
    assert iv.method == "paired bootstrap over 100 tests, 200 resamples"
    with pytest.raises(ValueError, match="no test is misclassified"):
        stats.paired_bootstrap_apfd(np.zeros(5, dtype=bool), np.ones(5), np.ones(5))


# --- DeLong -----------------------------------------------------------------------------------------------------


def _direct_components(y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """O(m n) structural components: psi = 1 if x > z, 1/2 if tied, 0 otherwise."""
    psi = (s[y][:, None] > s[~y][None, :]) + 0.5 * (s[y][:, None] == s[~y][None, :])
    return psi.mean(axis=1), psi.mean(axis=0)


def test_delong_matches_direct_structural_components() -> None:
    rng = np.random.default_rng(9)
    y = rng.random(70) < 0.4
    a = np.round(y + rng.normal(size=70), 1)
    b = np.round(0.5 * y + rng.normal(size=70), 1)
    (v10a, v01a), (v10b, v01b) = _direct_components(y, a), _direct_components(y, b)
    m, n = v10a.size, v01a.size
    cov = np.cov([v10a, v10b]) / m + np.cov([v01a, v01b]) / n
    se = math.sqrt(cov[0, 0] + cov[1, 1] - 2 * cov[0, 1])
    res = stats.delong(y, a, b)
    assert res.auc_a == pytest.approx(roc_auc_score(y, a), abs=1e-12)
    assert res.auc_b == pytest.approx(roc_auc_score(y, b), abs=1e-12)
    assert res.diff == pytest.approx(v10a.mean() - v10b.mean(), abs=1e-12)
    assert res.se == pytest.approx(se, abs=1e-12)
    assert res.z == pytest.approx(res.diff / se, abs=1e-12)
    assert res.p_value == pytest.approx(2 * sps.norm.sf(abs(res.diff / se)), abs=1e-12)
    assert (res.low + res.high) / 2 == pytest.approx(res.diff)
    assert res.high - res.diff == pytest.approx(1.959963984540054 * se)
    single = stats.delong_interval(y, a)
    half = 1.959963984540054 * math.sqrt(cov[0, 0])
    assert single.estimate == pytest.approx(res.auc_a)
    assert single.as_tuple() == pytest.approx((res.auc_a - half, res.auc_a + half), abs=1e-12)
    assert res.as_interval().as_tuple() == (res.low, res.high)


def test_delong_variance_matches_bootstrap() -> None:
    rng = np.random.default_rng(10)
    y, a, b = correlated_scores(rng, 1000)
    res = stats.delong(y, a, b)
    auc_a, auc_b = stats.WeightedAuc(y, a), stats.WeightedAuc(y, b)
    draws = stats._resamples(y.size, y, 2000, np.random.default_rng(0))
    diffs = np.concatenate([auc_a.many(w) - auc_b.many(w) for w in stats._count_blocks(draws, y.size, 2000)])
    assert np.var(diffs, ddof=1) == pytest.approx(res.se**2, rel=0.2)
    iv = stats.paired_bootstrap_diff(stats.fast_auc, y, a, b)
    assert iv.low == pytest.approx(res.low, abs=0.01) and iv.high == pytest.approx(res.high, abs=0.01)


def test_delong_p_value_is_uniform_under_the_null() -> None:
    rng = np.random.default_rng(11)
    p_values = np.array([stats.delong(*correlated_scores(rng, 200, 0.8, 0.8)).p_value for _ in range(300)])
    assert 0.01 <= np.mean(p_values < 0.05) <= 0.10
    assert 0.35 <= np.mean(p_values < 0.5) <= 0.65


def test_delong_identical_scores() -> None:
    y = np.r_[np.ones(5), np.zeros(5)]
    s = np.arange(10.0)
    res = stats.delong(y, s, s)
    assert res.diff == 0 and res.se == 0 and res.p_value == 1.0


# --- Hanley-McNeil ----------------------------------------------------------------------------------------------


def test_hanley_mcneil_matches_simulated_sd() -> None:
    # exponential scores are Hanley & McNeil's own model: negatives Exp(1), positives Exp(scale 4) give AUC 0.8
    rng = np.random.default_rng(12)
    y = np.r_[np.ones(100), np.zeros(100)]
    aucs = [stats.fast_auc(y, np.r_[rng.exponential(4.0, 100), rng.exponential(1.0, 100)]) for _ in range(500)]
    assert np.mean(aucs) == pytest.approx(0.8, abs=0.01)
    assert np.std(aucs) == pytest.approx(stats.hanley_mcneil_se(0.8, 100, 100), rel=0.15)
    assert metrics.auc_standard_error(0.7, 40, 90) == stats.hanley_mcneil_se(0.7, 40, 90)
    with pytest.raises(ValueError):
        stats.hanley_mcneil_se(1.2, 10, 10)


# --- permutation nulls ------------------------------------------------------------------------------------------


def test_attack_null_is_centred_on_half() -> None:
    rng = np.random.default_rng(13)
    member, nonmember = rng.normal(size=400), rng.normal(size=400)  # label-free: no signal
    null = stats.attack_null(member, nonmember, n_permutations=1000)
    low, high = stats.null_band(null)
    assert abs(null.mean() - 0.5) < 0.02
    assert abs((high - 0.5) - (0.5 - low)) < 0.02
    strong_member = rng.normal(loc=1.5, size=400)
    observed = stats.threshold_attack_accuracy(strong_member, nonmember)
    assert observed > high
    assert stats.null_p_value(observed, stats.attack_null(strong_member, nonmember, 200)) == pytest.approx(1 / 201)


def test_threshold_attack_on_separated_scores_and_unequal_groups() -> None:
    assert stats.threshold_attack_accuracy(np.arange(100, 110.0), np.arange(10.0)) == 1.0
    assert stats.threshold_attack_accuracy(np.arange(10.0), np.arange(100, 110.0)) <= 0.5  # higher = member
    rng = np.random.default_rng(14)
    null = stats.attack_null(rng.normal(size=100), rng.normal(size=900), n_permutations=400)
    assert abs(null.mean() - 0.5) < 0.03  # balanced accuracy: 0.5 whatever the group sizes


def test_permutation_null_of_auc_and_p_value() -> None:
    rng = np.random.default_rng(15)
    y = np.r_[np.ones(100, dtype=int), np.zeros(100, dtype=int)]
    scores = rng.normal(size=200) + 0.5 * y
    null = stats.permutation_null(lambda s, labels: stats.fast_auc(labels, s), scores, y, n_permutations=500)
    assert abs(null.mean() - 0.5) < 0.01
    assert np.std(null) == pytest.approx(stats.hanley_mcneil_se(0.5, 100, 100), rel=0.15)
    observed = stats.fast_auc(y, scores)
    assert stats.null_p_value(observed, null) == pytest.approx(1 / 501)
    assert stats.null_p_value(observed, null, "less") == pytest.approx(1.0)
    assert stats.null_p_value(observed, null, "two-sided") == pytest.approx(2 / 501)


def test_null_p_value_convention() -> None:
    null = np.array([0.1, 0.2, 0.3, 0.4])
    assert stats.null_p_value(0.3, null) == pytest.approx(3 / 5)  # 0.3 and 0.4 are >= 0.3
    assert stats.null_p_value(0.1 + 0.2, null) == pytest.approx(3 / 5)  # 0.30000000000000004 ties with 0.3
    assert stats.null_p_value(0.5, null) == pytest.approx(1 / 5)
    assert stats.null_p_value(0.0, null, "less") == pytest.approx(1 / 5)
    assert stats.null_band(np.arange(101.0), 0.9) == pytest.approx((5.0, 95.0))
    with pytest.raises(ValueError, match="alternative"):
        stats.null_p_value(0.3, null, "bigger")


# --- max over random candidates ---------------------------------------------------------------------------------


def test_max_null_matches_analytic_cdf() -> None:
    rng = np.random.default_rng(16)
    space = 2**20
    ranks = rng.integers(1, space + 1, size=200_000)
    pool = metrics.exposure(ranks, space)
    null = stats.max_null(pool, n_candidates=10, n_draws=2000, seed=1)
    for q in (0.1, 0.25, 0.5, 0.75, 0.9):
        x = -math.log2(1 - q ** (1 / 10))  # P(single <= x) = 1 - 2^-x, so P(max <= x) = (1 - 2^-x)^10 = q
        assert np.mean(null <= x) == pytest.approx(q, abs=0.04)


def test_max_null_draws_distinct_candidates() -> None:
    pool = np.arange(20.0)
    assert np.all(stats.max_null(pool, n_candidates=20, n_draws=200) == 19.0)
    # max of 10 distinct values out of 0..19: P(max <= m) = C(m+1, 10)/C(20, 10); with replacement ((m+1)/20)^10
    null = stats.max_null(pool, n_candidates=10, n_draws=4000, seed=2)
    for m in (13, 15, 17):
        assert np.mean(null <= m) == pytest.approx(math.comb(m + 1, 10) / math.comb(20, 10), abs=0.025)
    assert np.mean(null <= 15) < 0.5 * ((16 / 20) ** 10)
    with pytest.raises(ValueError, match="n_candidates"):
        stats.max_null(pool, n_candidates=21)


# --- seeds ------------------------------------------------------------------------------------------------------


def test_seed_summary_matches_scipy_t_interval() -> None:
    values = np.array([0.71, 0.74, 0.69, 0.73, 0.70])
    iv = stats.seed_summary(values)
    low, high = sps.t.interval(0.95, df=4, loc=values.mean(), scale=sps.sem(values))
    assert iv.estimate == pytest.approx(values.mean())
    assert iv.as_tuple() == pytest.approx((low, high), abs=1e-12)
    assert iv.method == "mean over 5 seeds, t interval"
    lo90, hi90 = sps.t.interval(0.90, df=4, loc=values.mean(), scale=sps.sem(values))
    assert stats.seed_summary(values, level=0.90).as_tuple() == pytest.approx((lo90, hi90), abs=1e-12)
    one = stats.seed_summary([0.7])
    assert one.estimate == one.low == one.high == 0.7 and one.method == "1 seed, no interval"


def test_an_interval_at_another_level_is_the_t_interval_at_that_level() -> None:
    values = np.array([0.71, 0.74, 0.69, 0.73, 0.70])
    wide = stats.at_level(stats.seed_summary(values), 0.99)
    assert wide.as_tuple() == pytest.approx(stats.seed_summary(values, level=0.99).as_tuple(), abs=1e-12)
    assert wide.method == "mean over 5 seeds, t interval; at 99.0%"
    # a clustered interval: the same standard error and df at the new level
    rng = np.random.default_rng(0)
    per_seed, draws = np.array([0.1, 0.12, 0.08]), rng.normal(0.1, 0.02, size=(400, 3))
    kw = dict(clusters=np.repeat(np.arange(40), 5), unit="source images")
    at99 = stats.at_level(stats.clustered_interval(per_seed, draws, **kw), 0.99)
    assert at99.as_tuple() == pytest.approx(stats.clustered_interval(per_seed, draws, level=0.99, **kw).as_tuple())
    # a percentile interval has no standard error: no other level can be read from it
    assert stats.at_level(stats.Interval(0.1, 0.0, 0.2, "percentile bootstrap"), 0.99) is None


def test_paired_seed_diff_is_seed_summary_of_differences() -> None:
    a = np.array([0.81, 0.79, 0.84, 0.80])
    b = np.array([0.78, 0.77, 0.80, 0.79])
    diff, direct = stats.paired_seed_diff(a, b), stats.seed_summary(a - b)
    assert diff.estimate == pytest.approx(direct.estimate) and diff.as_tuple() == pytest.approx(direct.as_tuple())
    assert diff.method == "paired difference over 4 seeds, t interval"
    with pytest.raises(ValueError, match="one value per seed"):
        stats.paired_seed_diff(a, b[:3])


def test_seeds_and_items_auc_estimate_and_degenerate_cases() -> None:
    rng = np.random.default_rng(11)
    y, a, b = correlated_scores(rng, 300)
    one = stats.seeds_and_items_auc(y, a[None], b[None], n_resamples=400, seed=3)
    direct = stats.paired_bootstrap_diff(stats.fast_auc, y, a, b, n_resamples=400, seed=3)
    assert one.estimate == pytest.approx(direct.estimate, abs=1e-12)
    assert one.high - one.low == pytest.approx(direct.high - direct.low, rel=0.25)  # one seed: items only
    assert one.method.endswith("1 trained model, training randomness not covered")
    by_seed = np.stack([a, a + 0.3 * rng.normal(size=a.size), a])
    three = stats.seeds_and_items_auc(y, by_seed, n_resamples=200)
    expected = np.mean([stats.fast_auc(y, s) for s in by_seed])
    assert three.estimate == pytest.approx(expected, abs=1e-12)
    assert "items bootstrapped within each of 3 seeds" in three.method and "t interval over seeds" in three.method


def _seed_item_coverage(n_seeds: int, ratio: float, shared: bool, method: str, reps: int = 600, seed: int = 0):
    """Coverage of the true mean by a 95 % interval of the mean over seeds of an item mean.

    Items: value N(0, 1) (shared by every seed, or drawn anew per seed) plus a seed x item interaction N(0, 0.5);
    each seed's model adds N(0, (ratio * item SE)^2), the item SE being that of one seed's item mean (60 items).
    method 'hierarchical' is stats.hierarchical_interval; 'seeds_with_replacement' is the interval this book used
    before (a percentile bootstrap resampling the seeds with replacement together with the items)."""
    rng = np.random.default_rng(seed)
    m, resamples = 60, 200
    item_se = math.sqrt(1.25 / m)
    hits = 0
    for _ in range(reps):
        items = rng.normal(0, 1, (1 if shared else n_seeds, m))
        values = items + rng.normal(0, 0.5, (n_seeds, m)) + rng.normal(0, ratio * item_se, (n_seeds, 1))
        if shared:  # one resample of the items serves every seed
            draws = values[:, rng.integers(0, m, (resamples, m))].mean(-1).T
        else:
            draws = values[np.arange(n_seeds)[None, :, None], rng.integers(0, m, (resamples, n_seeds, m))].mean(-1)
        if method == "hierarchical":
            iv = stats.hierarchical_interval(values.mean(1), draws, shared_items=shared)
            low, high = iv.low, iv.high
        else:
            picked = rng.integers(0, n_seeds, (resamples, n_seeds))
            low, high = np.quantile(np.take_along_axis(draws, picked, 1).mean(1), [0.025, 0.975])
        hits += low <= 0.0 <= high
    return hits / reps


@pytest.mark.parametrize("shared", [True, False], ids=["shared items", "items per seed"])
@pytest.mark.parametrize("n_seeds", [3, 5, 10])
def test_hierarchical_interval_covers_at_few_seeds_whatever_the_seed_spread(n_seeds: int, shared: bool) -> None:
    """At least 0.93 coverage (nominal 0.95) with seed spread half, equal to and twice the item spread."""
    for ratio in (0.5, 1.0, 2.0):
        coverage = _seed_item_coverage(n_seeds, ratio, shared, "hierarchical", seed=n_seeds)
        assert 0.93 <= coverage <= 1.0, (n_seeds, ratio, coverage)


def test_resampling_few_seeds_with_replacement_undercovers() -> None:
    """The old seed-and-item bootstrap fails the same test: 3 and 5 seeds, seed spread twice the item spread."""
    assert _seed_item_coverage(3, 2.0, True, "seeds_with_replacement", seed=3) < 0.91
    assert _seed_item_coverage(5, 2.0, True, "seeds_with_replacement", seed=5) < 0.93


def test_hierarchical_interval_worked_example() -> None:
    """Two seeds on shared items: variance = seed variance / 2 + item variance of the seed mean; Satterthwaite df."""
    theta = np.array([0.70, 0.74])
    draws = np.array([[0.69, 0.73], [0.71, 0.75], [0.70, 0.76], [0.70, 0.72]])
    iv = stats.hierarchical_interval(theta, draws)
    between, items = np.var(theta, ddof=1) / 2, np.var(draws.mean(1), ddof=1)
    df = (between + items) ** 2 / (between**2 / 1)
    half = sps.t.ppf(0.975, df) * math.sqrt(between + items)
    assert iv.as_tuple() == pytest.approx((0.72 - half, 0.72 + half), abs=1e-12)
    unshared = stats.hierarchical_interval(theta, draws, shared_items=False)
    floor = max(np.var(theta, ddof=1), np.var(draws, axis=0, ddof=1).mean()) / 2
    assert unshared.high - 0.72 == pytest.approx(sps.t.ppf(0.975, 1) * math.sqrt(floor), abs=1e-12)
    with pytest.raises(ValueError, match="item_draws needs shape"):
        stats.hierarchical_interval(theta, draws[:, :1])


def test_bootstrap_of_one_statistic_is_not_called_paired() -> None:
    y, a, _ = correlated_scores(np.random.default_rng(4), 80)
    iv = stats.bootstrap(stats.fast_auc, y, a, n_resamples=50, strata=y)
    assert not iv.method.startswith("paired") and iv.method.startswith("bootstrap over 80 items")


def test_seeds_and_items_perplexity_worked_example_and_ratio() -> None:
    nll = np.array([[1.0, 2.0], [3.0, 1.0]])  # (seeds, sentences) summed NLL
    counts = np.array([1.0, 2.0])
    iv = stats.seeds_and_items_perplexity(nll, counts, n_resamples=200)
    assert iv.estimate == pytest.approx(np.mean([np.exp(3 / 3), np.exp(4 / 3)]))
    ratio = stats.seeds_and_items_perplexity(nll, counts, nll * 0.5, n_resamples=200)
    assert ratio.estimate == pytest.approx(np.mean([np.exp(1.5 / 3), np.exp(2 / 3)]))
    same = stats.seeds_and_items_perplexity(nll, counts, nll, n_resamples=50)
    assert same.estimate == same.low == same.high == pytest.approx(1.0)  # a model against itself, every resample


def test_seeds_and_items_perplexity_covers_the_true_ratio_by_simulation() -> None:
    # sentences of 5-15 tokens with per-token NLL ~ N(mu, 1); model b is worse by 0.1 nats per token on average,
    # and every seed shifts a model's NLL by N(0, 0.02): the true seed-mean perplexity ratio is about exp(-0.1)
    rng = np.random.default_rng(0)
    covered, n_sim = 0, 120
    for _ in range(n_sim):
        counts = rng.integers(5, 16, 150).astype(float)
        base = rng.normal(2.0, 0.5, 150) * counts
        a = np.stack([base + rng.normal(0, 1, 150) * np.sqrt(counts) + rng.normal(0, 0.02) * counts for _ in range(3)])
        b = np.stack(
            [
                base + 0.1 * counts + rng.normal(0, 1, 150) * np.sqrt(counts) + rng.normal(0, 0.02) * counts
                for _ in range(3)
            ]
        )
        iv = stats.seeds_and_items_perplexity(a, counts, b, n_resamples=400, seed=int(rng.integers(1 << 30)))
        covered += iv.low <= np.exp(-0.1) <= iv.high
    assert 0.85 <= covered / n_sim <= 0.995


# --- grouped AUC contrasts (detector pairs over several sets) ----------------------------------------------------


def test_grouped_contrast_of_one_group_is_the_paired_bootstrap() -> None:
    y, a, b = correlated_scores(np.random.default_rng(3), 120)
    grouped = stats.grouped_auc_contrast([(y, [(1.0, a, None), (-1.0, b, None)])], n_resamples=500, seed=7)
    paired = stats.paired_bootstrap_diff(stats.fast_auc, y, a, b, n_resamples=500, seed=7)
    assert (grouped.estimate, grouped.low, grouped.high) == pytest.approx((paired.estimate, paired.low, paired.high))
    assert grouped.estimate == pytest.approx(roc_auc_score(y, a) - roc_auc_score(y, b), abs=1e-12)


def test_grouped_contrast_estimate_is_the_mean_over_groups_with_masks() -> None:
    rng = np.random.default_rng(4)
    (y1, a1, b1), (y2, a2, _) = correlated_scores(rng, 80), correlated_scores(rng, 60)
    keep = (y2 == 0) | (np.arange(60) % 3 == 0)  # a third of the positives, every negative
    iv = stats.grouped_auc_contrast(
        [(y1, [(1.0, a1, None), (-1.0, b1, None)]), (y2, [(1.0, a2, keep), (-1.0, a2, None)])], n_resamples=200
    )
    by_hand = (
        roc_auc_score(y1, a1) - roc_auc_score(y1, b1) + roc_auc_score(y2[keep], a2[keep]) - roc_auc_score(y2, a2)
    ) / 2
    assert iv.estimate == pytest.approx(by_hand, abs=1e-12)
    assert iv.low < iv.estimate < iv.high
    assert "within set and class" in iv.method


def test_grouped_contrast_covers_the_true_mean_difference() -> None:
    rng = np.random.default_rng(5)
    truth = np.mean([binormal_auc(1.0) - binormal_auc(0.6), binormal_auc(0.8) - binormal_auc(0.8)])
    hits = 0
    for i in range(120):
        groups = []
        for shift_a, shift_b in ((1.0, 0.6), (0.8, 0.8)):
            y, a, b = correlated_scores(rng, 100, shift_a, shift_b)
            groups.append((y, [(1.0, a, None), (-1.0, b, None)]))
        hits += stats.grouped_auc_contrast(groups, n_resamples=300, seed=i).contains(truth)
    assert 0.85 <= hits / 120 <= 0.995


def test_grouped_null_matches_the_mann_whitney_null() -> None:
    rng = np.random.default_rng(6)
    sizes = ((30, 90), (50, 50))
    groups = [(np.r_[np.ones(p), np.zeros(n)].astype(int), rng.normal(size=p + n)) for p, n in sizes]
    null = stats.grouped_auc_null(groups, n_permutations=4000, seed=1)
    sd = math.sqrt(sum((p + n + 1) / (12 * p * n) for p, n in sizes)) / len(sizes)
    assert null.mean() == pytest.approx(0.5, abs=4 * sd / math.sqrt(4000))
    assert null.std() == pytest.approx(sd, rel=0.06)


def test_grouped_seeds_auc_contrast_is_grouped_contrast_at_one_seed_and_averages_seeds() -> None:
    rng = np.random.default_rng(3)
    groups, one = [], []
    for n in (30, 50):
        y = np.r_[np.ones(n // 2, int), np.zeros(n - n // 2, int)]
        a = rng.normal(size=(3, n)) + 0.8 * y
        b = rng.normal(size=(3, n)) + 0.3 * y
        groups.append((y, [(1.0, a, None), (-1.0, b, None)]))
        one.append((y, [(1.0, a[0], None), (-1.0, b[0], None)]))
    single = stats.grouped_seeds_auc_contrast(
        [(y, [(w, s[:1], k) for w, s, k in t]) for y, t in groups], n_resamples=300, seed=5
    )
    plain = stats.grouped_auc_contrast(one, n_resamples=300, seed=5)
    assert (single.estimate, single.low, single.high) == pytest.approx((plain.estimate, plain.low, plain.high))
    assert "training randomness not covered" in single.method
    three = stats.grouped_seeds_auc_contrast(groups, n_resamples=300, seed=5)
    by_hand = np.mean(
        [
            np.mean([fast(y, t[0][1][k]) - fast(y, t[1][1][k]) for y, t in groups])
            for k in range(3)  # the mean over seeds of each seed's mean over groups
        ]
    )
    assert three.estimate == pytest.approx(by_hand, abs=1e-12)
    assert three.low < three.estimate < three.high and "3 seeds" in three.method
    with pytest.raises(ValueError, match="same number of seeds"):
        stats.grouped_seeds_auc_contrast([groups[0], (groups[1][0], [(1.0, groups[1][1][0][1][:2], None)])])


def fast(y: np.ndarray, s: np.ndarray) -> float:
    """AUC by the Mann-Whitney count (ties one half), for the seeded contrast's worked check."""
    pos, neg = s[y == 1], s[y == 0]
    return float(((pos[:, None] > neg) + 0.5 * (pos[:, None] == neg)).mean())


def test_interval_side_names_where_the_interval_lies() -> None:
    words = ("above", "below", "neither")
    assert stats.Interval(0.2, 0.1, 0.3, "").side(*words) == "above"
    assert stats.Interval(-0.2, -0.3, -0.1, "").side(*words) == "below"
    assert stats.Interval(0.1, -0.1, 0.3, "").side(*words) == "neither"
    assert stats.Interval(0.1, 0.0, 0.3, "").side(*words) == "neither"  # touching zero is not above it


# ---------------------------------------------------------------------------------------------------------------
# clustered units


def test_unit_weights_draw_clusters_then_items_within_them() -> None:
    clusters = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 3])
    classes = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 1])  # clusters 0, 1 in class 0; 2, 3 in class 1
    w = stats.unit_weights(clusters, classes, n_resamples=500, seed=1)
    assert w.shape == (500, 10)
    sizes = np.bincount(clusters)
    per_cluster = np.stack([w[:, clusters == g].sum(1) for g in range(4)], 1)
    assert np.all(per_cluster % sizes == 0)  # a cluster drawn c times contributes c times its size
    drawn = per_cluster // sizes
    assert np.all(drawn[:, :2].sum(1) == 2) and np.all(drawn[:, 2:].sum(1) == 2)  # clusters kept within class
    assert 0 < (drawn == 0).mean() < 1  # some resamples leave a cluster out: the cluster level is resampled
    once = w[:, clusters == 2][drawn[:, 2] == 1]  # cluster 2 drawn once: its 4 items resampled, not copied whole
    assert (once != 1).any(axis=1).mean() > 0.5 and np.all(once.sum(1) == 4)
    plain = stats.unit_weights(None, classes, n_resamples=300, seed=1, n_items=10)  # every item its own cluster
    assert np.all(plain[:, classes == 0].sum(1) == 5) and np.all(plain[:, classes == 1].sum(1) == 5)
    shared = stats.unit_weights([clusters, np.array([0, 1, 1, 2, 3, 3])], n_resamples=200, seed=2)
    first, second = (np.stack([m[:, lab == g].sum(1) for g in range(4)], 1) for m, lab in
                     zip(shared, [clusters, np.array([0, 1, 1, 2, 3, 3])]))  # fmt: skip
    assert np.array_equal(first // sizes, second // np.array([1, 2, 1, 2]))  # the models share the cluster draws
    with pytest.raises(ValueError, match="one label per item"):
        stats.unit_weights(clusters, classes[:5], n_resamples=10)


def test_clustered_interval_worked_example() -> None:
    """Two seeds on the same items in 4 clusters: variance = seed variance / 2 + cluster variance x G / (G - 1),
    Welch-Satterthwaite df from n - 1 and G - 1, at most G - 1 under 5 clusters; the method says so and names the df."""
    theta = np.array([0.70, 0.74])
    draws = np.array([[0.69, 0.73], [0.71, 0.75], [0.70, 0.76], [0.70, 0.72]])
    iv = stats.clustered_interval(theta, draws, n_clusters=4, unit="sets")
    between, units = np.var(theta, ddof=1) / 2, np.var(draws.mean(1), ddof=1) * 4 / 3
    df = min((between + units) ** 2 / (between**2 / 1 + units**2 / 3), 3)
    half = sps.t.ppf(0.975, df) * math.sqrt(between + units)
    assert iv.as_tuple() == pytest.approx((0.72 - half, 0.72 + half), abs=1e-12)
    assert "4 sets resampled" in iv.method and "only 4 sets" in iv.method and f"{df:.1f} df" in iv.method
    one = stats.clustered_interval(theta[:1], draws[:, :1], n_clusters=4, unit="sets")
    half = sps.t.ppf(0.975, 3) * math.sqrt(np.var(draws[:, 0], ddof=1) * 4 / 3)
    assert one.as_tuple() == pytest.approx((0.70 - half, 0.70 + half), abs=1e-12)
    assert "training randomness not covered" in one.method and "3.0 df" in one.method
    lone = stats.clustered_interval(theta, draws, n_clusters=1, unit="sets")
    assert math.isnan(lone.low) and "no interval" in lone.method


def test_cluster_counts_per_stratum_and_by_size() -> None:
    """The interval rests on the smallest stratum's clusters, and unequal sizes count as fewer clusters."""
    clusters = np.array([0] * 4 + [1] * 4 + [2] * 4 + [3] * 4 + [4] * 2)
    classes = np.array([0] * 12 + [1] * 6)  # three clusters in class 0; two (of sizes 4 and 2) in class 1
    counts = stats.cluster_counts(clusters, classes)
    assert counts == {"fewest": 2, "effective": pytest.approx(36 / 20), "total": 5, "strata": 2}
    skewed = stats.cluster_counts(np.repeat(np.arange(5), [96, 1, 1, 1, 1]))
    assert skewed["fewest"] == 5 and skewed["effective"] == pytest.approx(100**2 / (96**2 + 4))
    draws = np.random.default_rng(0).normal(0, 0.1, (200, 1))
    lone = stats.clustered_interval([0.0], draws, clusters=clusters, strata=np.where(clusters == 4, 1, 0))
    assert math.isnan(lone.low) and "1 of the clusters in the smallest stratum: no interval" in lone.method
    few = stats.clustered_interval([0.0], draws, clusters=clusters, strata=classes, unit="tasks")
    assert "only 2 tasks in the smallest stratum" in few.method and "1.0 df" in few.method  # t with 1 df


def _clustered_coverage(n_clusters: int, ratio: float, n_seeds: int, sharing: str, reps: int, row_level: bool = False):
    """Coverage of the true mean (0) by the 95 % interval of the mean over seeds of an item mean, items in clusters.

    Clusters of 5-15 items; a cluster's effect N(0, ratio^2), an item's N(0, 1); a seed x item interaction N(0, 0.5^2)
    and (from 3 seeds) a seed effect of one seed-mean's standard error. sharing 'items': every seed scored on the
    same items; 'clusters': each seed its own items within the same clusters (adversarial versions of the same source
    images). row_level: the items resampled as if independent (hierarchical_interval, the book's interval before)."""
    rng = np.random.default_rng(1000 * n_clusters + 10 * n_seeds + int(4 * ratio))
    hits = 0
    for rep in range(reps):
        effect = rng.normal(0, ratio, n_clusters)
        labels = [np.repeat(np.arange(n_clusters), rng.integers(5, 16, n_clusters))]
        if sharing == "clusters":
            labels += [np.repeat(np.arange(n_clusters), rng.integers(5, 16, n_clusters)) for _ in range(n_seeds - 1)]
        else:
            labels *= n_seeds
        item = [effect[lab] + rng.normal(0, 1, lab.size) for lab in labels[: 1 if sharing == "items" else None]]
        item = item * n_seeds if sharing == "items" else item  # the same items (values) for every seed
        se = math.sqrt(ratio**2 / n_clusters + 1 / labels[0].size)
        shift = rng.normal(0, se, n_seeds) if n_seeds > 1 else np.zeros(1)
        values = [x + rng.normal(0, 0.5, x.size) + s for x, s in zip(item, shift)]
        theta = np.array([v.mean() for v in values])
        if row_level:
            w = stats.unit_weights(None, n_resamples=200, seed=rep, n_items=labels[0].size)
            draws = np.stack([(w @ v) / w.sum(1) for v in values], 1)
            iv = stats.hierarchical_interval(theta, draws)
        else:
            weights = stats.unit_weights(labels if sharing == "clusters" else labels[0], n_resamples=200, seed=rep)
            weights = weights if sharing == "clusters" else [weights] * n_seeds
            draws = np.stack([(w @ v) / w.sum(1) for w, v in zip(weights, values)], 1)
            iv = stats.clustered_interval(
                theta, draws, clusters=labels if sharing == "clusters" else labels[0], unit="tasks", sharing=sharing
            )
        hits += iv.low <= 0.0 <= iv.high
    return hits / reps


@pytest.mark.parametrize("sharing", ["items", "clusters"], ids=["shared items", "items per seed"])
@pytest.mark.parametrize("n_seeds", [1, 3, 10])
@pytest.mark.parametrize("n_clusters", [5, 20, 60])
def test_clustered_interval_covers_with_cluster_effects(n_clusters: int, n_seeds: int, sharing: str) -> None:
    """At least 0.93 coverage (nominal 0.95) with cluster spread half, equal to and twice the item spread."""
    if sharing == "clusters" and n_seeds == 1:
        pytest.skip("one seed: its items are the shared items")
    reps = 1000 if sharing == "items" else 400  # models with items of their own cost a draw each per resample
    for ratio in (0.5, 1.0, 2.0):
        coverage = _clustered_coverage(n_clusters, ratio, n_seeds, sharing, reps=reps)
        assert 0.93 <= coverage <= 1.0, (n_clusters, n_seeds, sharing, ratio, coverage)


def test_resampling_clustered_rows_as_independent_undercovers() -> None:
    """The interval of the book before (rows resampled as independent) fails where clusters vary: 20 tasks,
    cluster spread equal to the item spread, one and three seeds."""
    assert _clustered_coverage(20, 1.0, 1, "items", reps=200, row_level=True) < 0.8
    assert _clustered_coverage(20, 1.0, 3, "items", reps=200, row_level=True) < 0.85


def _one_model_coverage(sizes_of, strata_of, ratio: float, reps: int = 400, seed: int = 0) -> float:
    """Coverage of a size-weighted mean (or, with strata, the difference of the two strata's means) by the clustered
    interval of one model: cluster effects N(0, ratio^2), item noise N(0, 1), true value 0."""
    rng = np.random.default_rng(seed)
    hits = 0
    for rep in range(reps):
        sizes = sizes_of(rng)
        labels = np.repeat(np.arange(sizes.size), sizes)
        side = strata_of(labels)
        values = rng.normal(0, ratio, sizes.size)[labels] + rng.normal(0, 1, labels.size)
        w = stats.unit_weights(labels, side, n_resamples=200, seed=rep)

        def stat(m: np.ndarray) -> np.ndarray:
            means = [(m[:, side == k] @ values[side == k]) / m[:, side == k].sum(1) for k in np.unique(side)]
            return means[-1] - means[0] if len(means) == 2 else means[0]

        iv = stats.clustered_interval(stat(np.ones((1, labels.size))), stat(w)[:, None], clusters=labels, strata=side)
        hits += iv.low <= 0.0 <= iv.high
    return hits / reps


def test_clustered_interval_covers_with_very_unequal_cluster_sizes() -> None:
    """Log-normal cluster sizes (20 clusters, the largest often a quarter of the items): the effective cluster count
    sets the df; with the cluster count's G - 1 df this undercovered (0.89-0.90 in a review's simulation)."""
    sizes = lambda rng: np.maximum(1, np.round(np.exp(rng.normal(2.5, 1.0, 20)))).astype(int)
    for ratio in (0.5, 1.0, 2.0):
        coverage = _one_model_coverage(sizes, lambda lab: np.zeros(lab.size, dtype=int), ratio)
        assert 0.93 <= coverage, (ratio, coverage)


def test_clustered_interval_rests_on_the_smallest_strata() -> None:
    """A contrast of 10 in-distribution against 2 OOD clusters (the class is the stratum): with the total cluster
    count the interval covered 0.84 in a review's simulation; the smallest stratum's count covers."""
    sizes = lambda rng: np.full(12, 10)
    coverage = _one_model_coverage(sizes, lambda lab: (lab >= 10).astype(int), 1.0)
    assert 0.93 <= coverage, coverage


def test_t_interval_power_matches_the_interval_procedure_it_stands_for() -> None:
    """Power at an effect from an interval's width: a normal interval gives the textbook Phi(effect/se - 1.96); a t
    interval over 3 seeds (2 df) gives the rate at which that very procedure, run on 3 simulated seeds with the same
    true effect and spread, excludes 0. Its estimate plays no part."""
    se = 0.01
    normal = stats.Interval(0.5, -1.96 * se, 1.96 * se, "bootstrap percentile interval")
    assert stats.interval_df(normal) == float("inf")
    for effect in (0.0196, 0.028):
        expected = sps.norm.cdf(effect / se - 1.96)
        assert stats.t_interval_power(normal, effect, n_sims=4_000, seed=2) == pytest.approx(expected, abs=0.03)
    assert stats.t_interval_power(normal, 0.0392, seed=2) == stats.t_interval_power(
        stats.Interval(-3.0, -1.96 * se, 1.96 * se, "bootstrap"), 0.0392, seed=2
    )
    # 3 seeds, spread sigma: the t interval's expected half-width is q * sigma / sqrt(3); the real procedure's rate
    sigma, effect, q = 0.02, 0.03, sps.t.ppf(0.975, 2)
    rng = np.random.default_rng(5)
    draws = rng.normal(effect, sigma, size=(20_000, 3))
    rate = float(np.mean(draws.mean(1) - q * draws.std(1, ddof=1) / np.sqrt(3) > 0))
    iv = stats.Interval(0.0, -q * sigma / np.sqrt(3), q * sigma / np.sqrt(3), "t interval (items per seed, 2 df)")
    assert stats.interval_df(iv) == 2.0
    assert stats.t_interval_power(iv, effect, n_sims=20_000, seed=3) == pytest.approx(rate, abs=0.015)
    assert stats.t_interval_power(iv, -effect, n_sims=20_000, seed=3) == pytest.approx(rate, abs=0.015)


def test_t_equivalence_power_matches_the_equivalence_procedure_it_stands_for() -> None:
    """The power to show equivalence within ±m when there is no difference: a normal interval gives the textbook
    Phi(m/se - 1.96) - Phi(-m/se + 1.96); a 3-seed t interval gives the rate at which that very procedure, on 3
    simulated seeds with no true difference, lands its interval inside the margin. Its estimate plays no part."""
    se = 0.01
    normal = stats.Interval(0.3, -1.96 * se, 1.96 * se, "bootstrap percentile interval")
    for margin in (0.025, 0.04):
        expected = sps.norm.cdf(margin / se - 1.96) - sps.norm.cdf(-margin / se + 1.96)
        assert stats.t_equivalence_power(normal, margin, n_sims=4_000, seed=2) == pytest.approx(expected, abs=0.03)
    assert stats.t_equivalence_power(normal, 0.0196, seed=2) == 0.0  # an interval as wide as the band never fits
    sigma, margin, q = 0.02, 0.05, sps.t.ppf(0.975, 2)
    draws = np.random.default_rng(5).normal(0.0, sigma, size=(20_000, 3))
    half = q * draws.std(1, ddof=1) / np.sqrt(3)
    rate = float(np.mean((draws.mean(1) - half > -margin) & (draws.mean(1) + half < margin)))
    iv = stats.Interval(0.0, -q * sigma / np.sqrt(3), q * sigma / np.sqrt(3), "t interval (items per seed, 2 df)")
    assert 0.2 < rate < 0.9  # the case tells powers apart
    assert stats.t_equivalence_power(iv, margin, n_sims=20_000, seed=3) == pytest.approx(rate, abs=0.015)


def test_by_side_names_where_an_interval_lies_against_zero() -> None:
    words = ("above", "below", "across")
    sides = [stats.by_side(stats.Interval(0.0, lo, hi, "t"), *words) for lo, hi in ((0.1, 2), (-2, -0.1), (-1, 1))]
    assert sides == ["above", "below", "across"]
    assert stats.by_side(stats.Interval(0.0, 0.0, 1.0, "t"), *words) == "across"  # touching 0 is not above it
