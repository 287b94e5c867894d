"""repro.metrics: the published worked examples, vectorized code against direct formulas, bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from repro import metrics

FAULTS = {"A": [1, 5], "B": [1, 5, 6, 7], "C": [1, 2, 3, 4, 5, 6, 7], "D": [5], "E": [8, 9, 10]}


@pytest.mark.parametrize("order, expected", [("ABCDE", 0.50), ("EDCBA", 0.64), ("CEBAD", 0.84)])
def test_apfd_icsm99_worked_example(order: str, expected: float) -> None:
    assert metrics.apfd_fault_matrix(FAULTS, list(order)) == pytest.approx(expected, abs=1e-9)


def test_apfd_dnn_matches_definition() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        flags = rng.random(int(rng.integers(1, 40))) < 0.3
        if not flags.any():
            continue
        n, k = flags.size, flags.sum()
        positions = [i + 1 for i, f in enumerate(flags) if f]
        assert metrics.apfd(flags) == pytest.approx(1 - sum(positions) / (k * n) + 1 / (2 * n))


def test_apfd_dnn_equals_fault_matrix_with_one_fault_per_failure() -> None:
    flags = [False, True, False, True, True]
    faults = {f"t{i}": ([f"f{i}"] if flag else []) for i, flag in enumerate(flags)}
    assert metrics.apfd(flags) == pytest.approx(metrics.apfd_fault_matrix(faults, list(faults)))


def test_apfd_normalized_spans_zero_to_one() -> None:
    assert metrics.apfd_normalized([True, True, False, False]) == pytest.approx(1.0)
    assert metrics.apfd_normalized([False, False, True, True]) == pytest.approx(0.0)
    # positions 1,3 (sum 4) between best 1,2 (sum 3) and worst 3,4 (sum 7): (7 - 4)/(7 - 3)
    assert metrics.apfd_normalized([True, False, True, False]) == pytest.approx(0.75)
    assert metrics.apfd_normalized([True, True]) == 1.0


def test_normalized_apfd_equals_auroc_of_the_score_without_ties() -> None:
    # worked example: failures at positions 1 and 3 of 4; failure 1 precedes both correct tests, failure 3 one of
    # them, so 3 of the 2 x 2 (failure, correct) pairs are in order: AUROC = nAPFD = 0.75
    assert metrics.auroc([1, 0, 1, 0], [4.0, 3.0, 2.0, 1.0]) == pytest.approx(0.75)
    rng = np.random.default_rng(1)
    for _ in range(40):
        n = int(rng.integers(2, 300))
        failed = rng.random(n) < rng.uniform(0.05, 0.9)
        if failed.all() or not failed.any():
            continue
        score = rng.normal(size=n) + failed * rng.uniform(-1, 3)
        napfd = metrics.apfd_normalized(failed[np.argsort(-score)])
        pairs = (score[failed][:, None] > score[~failed][None, :]).mean()  # the AUROC's definition, pair by pair
        assert napfd == pytest.approx(pairs, abs=1e-12)
        assert napfd == pytest.approx(metrics.auroc(failed.astype(int), score), abs=1e-12)


def test_normalized_apfd_differs_from_auroc_when_the_score_ties() -> None:
    from repro.metrics_by_hand.claims import apfd_auroc_draws

    table = apfd_auroc_draws(0)
    assert (table.loc[~table["ties"], "abs_gap"] < 1e-12).all()
    assert (table.loc[table["ties"], "abs_gap"] > 1e-4).all()  # an order breaks each tie; AUROC counts it half


def test_raw_apfd_is_capped_when_most_tests_fail() -> None:
    flags = np.ones(100, dtype=bool)
    flags[80:] = False
    # perfect order, 80 % failures: raw APFD cannot exceed 1 - k/(2n) = 0.6
    assert metrics.apfd(flags) == pytest.approx(0.6)
    assert metrics.apfd_normalized(flags) == pytest.approx(1.0)


@pytest.mark.parametrize("bad", [[], [False, False], [[True]], [0.5, 1]])
def test_apfd_rejects_bad_input(bad) -> None:
    with pytest.raises(ValueError):
        metrics.apfd(bad)


def test_apfd_fault_matrix_rejects_bad_orders() -> None:
    with pytest.raises(ValueError, match="empty"):
        metrics.apfd_fault_matrix(FAULTS, [])
    with pytest.raises(ValueError, match="not in"):
        metrics.apfd_fault_matrix(FAULTS, ["A", "Z"])
    with pytest.raises(ValueError, match="revealed by no test"):
        metrics.apfd_fault_matrix(FAULTS, ["A", "B"])
    with pytest.raises(ValueError, match="no test reveals"):
        metrics.apfd_fault_matrix({"A": [], "B": []}, ["A", "B"])


def test_gini_worked_example_and_order() -> None:
    probs = np.array([[0.3, 0.5, 0.2], [0.1, 0.1, 0.8], [0.6, 0.3, 0.1], [0.4, 0.4, 0.2]])
    gini = metrics.gini_impurity(probs)
    np.testing.assert_allclose(gini, [0.62, 0.34, 0.54, 0.64], atol=1e-12)
    assert "".join("ABCD"[i] for i in np.argsort(-gini)) == "DACB"


def test_gini_matches_loop() -> None:
    rng = np.random.default_rng(1)
    probs = rng.dirichlet(np.ones(10), size=200)
    direct = [1 - sum(p * p for p in row) for row in probs]
    np.testing.assert_allclose(metrics.gini_impurity(probs), direct)


@pytest.mark.parametrize("bad", [[], [[0.5, np.nan]], [[0.7, 0.7]], [[-0.1, 1.1]]])
def test_gini_rejects_bad_input(bad) -> None:
    with pytest.raises(ValueError):
        metrics.gini_impurity(bad)


def test_exposure_worked_example() -> None:
    assert metrics.exposure(1, 1e6) == pytest.approx(19.93, abs=5e-3)
    assert metrics.exposure(2, 1e6) == pytest.approx(18.93, abs=5e-3)
    assert metrics.exposure(1e6, 1e6) == 0.0
    np.testing.assert_allclose(metrics.exposure(np.array([1, 4]), 16), [4.0, 2.0])


@pytest.mark.parametrize("rank", [-3, 0, math.nan, 2e6])
def test_exposure_rejects_bad_rank(rank: float) -> None:
    with pytest.raises(ValueError):
        metrics.exposure(rank, 1e6)


def test_min_k_prob_matches_definition_and_short_texts() -> None:
    lp = np.array([-0.1, -5.0, -2.0, -0.5, -3.0, -1.0, -0.2, -4.0, -0.3, -0.4])
    assert metrics.min_k_prob(lp, 0.2) == pytest.approx((-5.0 - 4.0) / 2)
    assert metrics.min_k_prob(lp, 1.0) == pytest.approx(lp.mean())
    # int(3 * 0.2) = 0 tokens: the guard keeps the single least likely one
    assert metrics.min_k_prob([-1.0, -2.0, -0.5], 0.2) == pytest.approx(-2.0)


@pytest.mark.parametrize("bad, k", [([], 0.2), ([-1.0, np.nan], 0.2), ([-1.0], 0.0), ([-1.0], 1.5)])
def test_min_k_prob_rejects_bad_input(bad, k) -> None:
    with pytest.raises(ValueError):
        metrics.min_k_prob(bad, k)


def test_min_k_plus_plus_normalizes_per_token() -> None:
    lp = np.array([-1.0, -3.0, -2.0, -6.0, -0.5])
    mu = np.array([-1.0, -2.0, -2.0, -2.0, -1.0])
    sigma = np.array([1.0, 1.0, 2.0, 2.0, 0.5])
    z = (lp - mu) / sigma  # [0, -1, 0, -2, 1]
    assert metrics.min_k_plus_plus(lp, mu, sigma, 0.4) == pytest.approx(np.sort(z)[:2].mean())
    with pytest.raises(ValueError, match="sigma"):
        metrics.min_k_plus_plus(lp, mu, np.zeros(5), 0.4)


def test_roc_points_are_scikit_learns_roc_curve() -> None:
    from sklearn.metrics import roc_curve

    rng = np.random.default_rng(4)
    for trial in range(400):  # small sets with many ties: where collinear points are dropped
        n = int(rng.integers(4, 50))
        y = np.r_[0, 1, rng.integers(0, 2, n - 2)]
        s = np.round(rng.normal(size=n) + y * rng.uniform(0, 2), int(rng.integers(0, 3)))
        fpr, tpr, _ = roc_curve(y, s)
        ours = metrics.roc_points(y, s)
        assert np.array_equal(ours[0], fpr) and np.array_equal(ours[1], tpr), trial
        at = np.flatnonzero(fpr < 0.2)[-1]
        assert metrics.tpr_at_fpr(y, s, 0.2) == tpr[at]
    # three thresholds on the diagonal: the middle one, (2/3, 2/3), is dropped
    f, t = metrics.roc_points(np.array([1, 0, 1, 0, 1, 0]), np.array([3.0, 3.0, 2.0, 2.0, 1.0, 1.0]))
    assert f.tolist() == t.tolist() == [0.0, 1 / 3, 1.0]


def test_auroc_is_scikit_learns_roc_auc_score_bit_for_bit() -> None:
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(5)
    for trial in range(600):  # continuous scores, few distinct values, rounded scores, 0/1 scores
        n = int(rng.integers(2, 200))
        y = np.r_[0, 1, rng.integers(0, 2, n - 2)]
        kind = trial % 4
        s = [rng.normal(size=n), rng.integers(0, 4, n) * 1.0, np.round(rng.normal(size=n), 1), y * 1.0][kind]
        assert metrics.auroc(y, s) == roc_auc_score(y, s), trial


def test_tpr_at_fpr_rows_reads_each_rows_roc_points() -> None:
    rng = np.random.default_rng(6)
    for trial in range(300):
        rows, n = int(rng.integers(1, 6)), int(rng.integers(2, 60))
        y = np.stack([rng.permutation(np.r_[0, 1, rng.integers(0, 2, n - 2)]) for _ in range(rows)])
        s = [rng.normal(size=(rows, n)), rng.integers(0, 4, (rows, n)) * 1.0, np.round(rng.normal(size=(rows, n)), 1)]
        points = [metrics.roc_points(y[r], s[trial % 3][r]) for r in range(rows)]
        for fpr in (0.01, 0.05, 0.3, 0.99):  # the direct formula: the TPR of the last point whose FPR is below
            want = [float(tprs[np.flatnonzero(fprs < fpr)[-1]]) for fprs, tprs in points]
            assert metrics.tpr_at_fpr_rows(y, s[trial % 3], fpr).tolist() == want, trial
    # the diagonal case of roc_points: (1/3, 1/3) is kept and (2/3, 2/3) dropped, so at FPR < 0.7 the TPR is 1/3
    diagonal = np.array([[1, 0, 1, 0, 1, 0]]), np.array([[3.0, 3.0, 2.0, 2.0, 1.0, 1.0]])
    assert metrics.tpr_at_fpr_rows(*diagonal, 0.7).tolist() == [1 / 3]
    assert metrics.tpr_at_fpr_rows(*diagonal, 0.2).tolist() == [0.0]


def test_tpr_at_fpr_matches_threshold_scan() -> None:
    rng = np.random.default_rng(2)
    labels = np.r_[np.zeros(300), np.ones(300)].astype(int)
    scores = np.r_[rng.normal(0, 1, 300), rng.normal(1.5, 1, 300)]
    best = 0.0
    for t in np.unique(scores):
        pred = scores >= t
        fpr = pred[labels == 0].mean()
        if fpr < 0.05:
            best = max(best, pred[labels == 1].mean())
    assert metrics.tpr_at_fpr(labels, scores, 0.05) == pytest.approx(best)
    assert metrics.auroc([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4]) == 1.0
    with pytest.raises(ValueError, match="both classes"):
        metrics.auroc([1, 1], [0.1, 0.2])


def _direct_mahalanobis(train, labels, test):
    """Loop-per-point reference: class means, 1/N shared covariance, background Gaussian."""
    classes = np.unique(labels)
    mus = [train[labels == c].mean(0) for c in classes]
    centered = np.vstack([train[labels == c] - mu for c, mu in zip(classes, mus)])
    inv = np.linalg.inv(centered.T @ centered / len(train))
    mu0 = train.mean(0)
    inv0 = np.linalg.inv((train - mu0).T @ (train - mu0) / len(train))
    md, rmd = [], []
    for z in test:
        mdk = [(z - mu) @ inv @ (z - mu) for mu in mus]
        md0 = (z - mu0) @ inv0 @ (z - mu0)
        md.append(min(mdk))
        rmd.append(min(m - md0 for m in mdk))
    return np.array(md), np.array(rmd)


def test_mahalanobis_matches_direct_formula() -> None:
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 4, 400)
    train = rng.normal(size=(400, 6)) + labels[:, None] * 0.7
    test = rng.normal(size=(50, 6)) * 1.5
    got = metrics.mahalanobis_scores(train, labels, test)
    md, rmd = _direct_mahalanobis(train, labels, test)
    np.testing.assert_allclose(got.md, md, rtol=1e-8)
    np.testing.assert_allclose(got.rmd, rmd, rtol=1e-7, atol=1e-8)


def test_mahalanobis_is_stable_on_singular_covariance() -> None:
    rng = np.random.default_rng(4)
    base = rng.normal(size=(100, 3))
    train = np.hstack([base, base[:, :1]])  # a duplicated feature: singular covariance
    labels = (base[:, 0] > 0).astype(int)
    scores = metrics.mahalanobis_scores(train, labels, train[:10])
    assert np.isfinite(scores.md).all() and np.isfinite(scores.rmd).all()
    ridged = metrics.mahalanobis_scores(train, labels, train[:10], ridge=1e-3)
    assert np.isfinite(ridged.md).all()


def test_mahalanobis_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="features"):
        metrics.mahalanobis_scores(np.ones((5, 2)), np.zeros(5), np.ones((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        metrics.mahalanobis_scores(np.full((5, 2), np.nan), np.zeros(5), np.ones((2, 2)))
    with pytest.raises(ValueError, match="one label"):
        metrics.mahalanobis_scores(np.ones((5, 2)), np.zeros(4), np.ones((2, 2)))


def test_fault_curve_area_equals_apfd() -> None:
    from repro.plots import curve_area, fault_curve

    rng = np.random.default_rng(5)
    for _ in range(20):
        flags = rng.random(int(rng.integers(1, 30))) < 0.4
        if flags.any():
            assert curve_area(*fault_curve(flags.astype(int))) == pytest.approx(metrics.apfd(flags))
    for order, expected in [("ABCDE", 0.50), ("EDCBA", 0.64), ("CEBAD", 0.84)]:
        first = metrics.first_detection(FAULTS, list(order))
        counts = np.bincount(list(first.values()), minlength=6)[1:]
        assert curve_area(*fault_curve(counts)) == pytest.approx(expected)


def test_auc_standard_error_hanley_mcneil() -> None:
    from repro.metrics import auc_standard_error, auroc, trend_call

    # A = 0.5, 60 + 60: Q1 = Q2 = 1/3, var = (0.25 + 118 * (1/3 - 0.25)) / 3600
    assert auc_standard_error(0.5, 60, 60) == pytest.approx(math.sqrt((0.25 + 118 / 12) / 3600))
    assert auc_standard_error(0.5, 60, 60) == pytest.approx(0.0529, abs=1e-4)
    assert auc_standard_error(0.9, 60, 60) < auc_standard_error(0.7, 60, 60) < auc_standard_error(0.5, 60, 60)
    assert auc_standard_error(0.7, 200, 200) < auc_standard_error(0.7, 50, 50)
    # the simulated spread of the AUC of two identical score distributions matches it
    rng = np.random.default_rng(0)
    aucs = [auroc(np.r_[np.ones(60), np.zeros(60)], rng.normal(size=120)) for _ in range(400)]
    assert np.std(aucs) == pytest.approx(auc_standard_error(0.5, 60, 60), rel=0.15)
    assert trend_call(0.60, 0.80, 0.05) == "yes" and trend_call(0.80, 0.60, 0.05) == "no"
    assert trend_call(0.70, 0.72, 0.05) == "within noise" and trend_call(0.80, 0.60, 0.05, expect="down") == "yes"


def _discriminant_basis(train, labels, ridge):
    """Orthonormal basis of span{W'^-1 (mu_k - mu)}: the K-1 directions RMD can see."""
    means, inverse = metrics.class_gaussians(train, labels)
    within = train - means[inverse]
    cov = metrics.shrinkage(within, ridge).apply(within.T @ within / len(train))
    directions = np.linalg.solve(cov, (means - train.mean(0)).T)
    q, _ = np.linalg.qr(directions)
    return q[:, : len(means) - 1]


@pytest.mark.parametrize("ridge", [0.0, 0.1, "ledoit-wolf"])
def test_rmd_ignores_perturbations_orthogonal_to_the_discriminant_directions(ridge) -> None:
    rng = np.random.default_rng(7)
    labels = np.arange(600) % 4
    train = rng.normal(size=(600, 12)) * np.linspace(3, 0.2, 12) + rng.normal(size=(4, 12))[labels] * 1.5
    test = rng.normal(size=(30, 12)) * 2
    basis = _discriminant_basis(train, labels, ridge)
    step = rng.normal(size=(30, 12)) * 5
    step -= step @ basis @ basis.T  # orthogonal to the K-1 = 3 directions
    before = metrics.mahalanobis_scores(train, labels, test, ridge=ridge)
    after = metrics.mahalanobis_scores(train, labels, test + step, ridge=ridge)
    np.testing.assert_allclose(after.rmd, before.rmd, atol=1e-8, rtol=0)
    assert np.abs(after.md - before.md).min() > 1.0  # MD does move: the test has power


def test_different_ridges_on_the_two_covariances_break_the_invariance() -> None:
    """The bug this estimator fixes: a relative ridge computed per covariance adds different amounts."""
    rng = np.random.default_rng(7)
    labels = np.arange(600) % 4
    train = rng.normal(size=(600, 12)) * np.linspace(3, 0.2, 12) + rng.normal(size=(4, 12))[labels] * 1.5
    test = rng.normal(size=(30, 12)) * 2
    basis = _discriminant_basis(train, labels, 0.1)
    step = rng.normal(size=(30, 12)) * 5
    step -= step @ basis @ basis.T
    means, inverse = metrics.class_gaussians(train, labels)
    within = train - means[inverse]
    p_w = np.linalg.inv(metrics.shrinkage(within, 0.1).apply(within.T @ within / 600))
    p_t = np.linalg.inv(metrics.shrinkage(train - train.mean(0), 0.1).apply(np.cov(train.T, bias=True)))

    def rmd(z):  # each covariance ridged by 0.1 x its own trace / d, as before the fix
        md_k = np.stack([np.einsum("ij,jk,ik->i", z - m, p_w, z - m) for m in means], axis=1)
        return (md_k - np.einsum("ij,jk,ik->i", z - train.mean(0), p_t, z - train.mean(0))[:, None]).min(1)

    assert np.abs(rmd(test + step) - rmd(test)).max() > 0.1


def test_a_random_orders_expected_normalized_apfd_is_one_half() -> None:
    """Over every order of 6 tests with 2 failing, the mean normalized APFD is exactly 0.5 (the DeepGini rows compare
    the best coverage baseline with this expectation rather than with one seeded random order)."""
    from itertools import permutations

    from repro.metrics import apfd_normalized

    flags = [True, True, False, False, False, False]
    values = [apfd_normalized(list(order)) for order in set(permutations(flags))]
    assert np.mean(values) == pytest.approx(0.5, abs=1e-12)
