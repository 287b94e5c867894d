"""Out-of-distribution scores and analyses: MSP, MD/RMD helpers, eigen-contributions, PC sweep, CLP, benchmark."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pandas as pd
from scipy.special import softmax

from ..metrics import MahalanobisScores, auroc, class_gaussians, mahalanobis_scores, tpr_at_fpr


def msp(logits: np.ndarray) -> np.ndarray:
    """Maximum-softmax-probability score 1 - max_k p_k (higher = more OOD)."""
    return 1.0 - softmax(np.asarray(logits, dtype=np.float64), axis=1).max(axis=1)


def linear_probe(
    train_feats: np.ndarray,
    train_labels: np.ndarray,
    seed: int = 0,
    bootstrap: bool = False,
    max_rows: int = 3000,
    weights: np.ndarray | None = None,
):
    """Standardized multinomial logistic regression on frozen features (optionally on a bootstrap of <= max_rows);
    `weights` counts each row that many times (a bootstrap's multiplicities, without copying rows)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    idx = np.arange(len(train_labels))
    if bootstrap:
        idx = np.random.default_rng(seed).choice(idx, size=min(idx.size, max_rows), replace=True)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=300, tol=1e-3, C=1.0, random_state=seed))
    if weights is None:
        return model.fit(train_feats[idx], train_labels[idx])
    w = np.asarray(weights, dtype=np.float64)[idx]
    return model.fit(
        train_feats[idx], train_labels[idx], standardscaler__sample_weight=w, logisticregression__sample_weight=w
    )


def score_rows(is_ood: np.ndarray, scores: dict[str, np.ndarray], **keys: object) -> list[dict]:
    """One record per score: the `keys`, score name, AUROC and TPR at 5 % FPR (OOD = positive)."""
    return [
        {**keys, "score": name, "auroc": auroc(is_ood, s), "tpr_at_5fpr": tpr_at_fpr(is_ood, s, 0.05)}
        for name, s in scores.items()
    ]


def shared_covariance(train_feats: np.ndarray, train_labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Class means and the shared 1/N within-class covariance."""
    means, inverse = class_gaussians(train_feats, train_labels)
    centered = train_feats - means[inverse]
    return means, centered.T @ centered / len(centered)


def mahalanobis_naive(train_feats: np.ndarray, train_labels: np.ndarray, test_feats: np.ndarray) -> MahalanobisScores:
    """MD and RMD from the per-example formula, one test point and one class at a time (reference/benchmark)."""
    means, cov = shared_covariance(train_feats, train_labels)
    precision = np.linalg.pinv(cov, hermitian=True)
    mean0 = train_feats.mean(axis=0)
    precision0 = np.linalg.pinv(np.cov(train_feats, rowvar=False, bias=True), hermitian=True)
    md, rmd = np.empty(len(test_feats)), np.empty(len(test_feats))
    for i, z in enumerate(test_feats):
        md0 = (z - mean0) @ precision0 @ (z - mean0)
        md_k = np.array([(z - mu) @ precision @ (z - mu) for mu in means])
        md[i], rmd[i] = md_k.min(), (md_k - md0).min()
    return MahalanobisScores(md, rmd)


def mahalanobis_batch_matrix(train_feats: np.ndarray, train_labels: np.ndarray, test_feats: np.ndarray) -> np.ndarray:
    """MD as a popular implementation computes it: diag of a test x test matrix per class (the waste to avoid)."""
    means, cov = shared_covariance(train_feats, train_labels)
    precision = np.linalg.pinv(cov, hermitian=True)
    per_class = [np.diag((test_feats - mu) @ precision @ (test_feats - mu).T) for mu in means]
    return np.min(per_class, axis=0)


_CHUNK = 256  # test rows whose (rows, K, d') terms are held at once


def _eigen_projection(
    train_feats: np.ndarray, train_labels: np.ndarray, test_feats: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Eigenvalues of the shared covariance (descending, numerically zero ones dropped), and the test points and class
    means in its whitened eigenbasis, (n, d') and (K, d'): their differences are the whitened offsets."""
    means, cov = shared_covariance(train_feats, train_labels)
    vals, vecs = np.linalg.eigh(cov)
    order = np.argsort(vals)[::-1]
    vals, vecs = vals[order], vecs[:, order]
    keep = vals > vals[0] * 1e-10
    vals, vecs = vals[keep], vecs[:, keep]
    return vals, test_feats @ vecs / np.sqrt(vals), means @ vecs / np.sqrt(vals)


def _eigen_chunks(points: np.ndarray, means: np.ndarray) -> Iterator[tuple[slice, np.ndarray]]:
    """(rows, terms) over chunks of test rows: every row's squared whitened offset from every class mean along each
    eigendirection, (rows, K, d') terms that sum to MD_k, a chunk at a time (K n d' floats at once would not fit)."""
    for start in range(0, len(points), _CHUNK):
        rows = slice(start, start + _CHUNK)
        yield rows, (points[rows, None, :] - means[None]) ** 2


def eigen_analysis(
    train_feats: np.ndarray, train_labels: np.ndarray, test_feats: np.ndarray
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """eigen_contributions and half_distances from one pass over the terms: the eigenvalues, each test point's terms
    for its nearest class, and the MD of the leading and of the trailing half of the eigendirections."""
    vals, points, means = _eigen_projection(train_feats, train_labels, test_feats)
    half = len(vals) // 2
    nearest_terms = np.empty_like(points)
    lead, trail = np.empty(len(points)), np.empty(len(points))
    for rows, terms in _eigen_chunks(points, means):
        nearest = terms.sum(axis=2).argmin(axis=1)
        nearest_terms[rows] = terms[np.arange(len(terms)), nearest]
        lead[rows] = terms[:, :, :half].sum(axis=2).min(axis=1)
        trail[rows] = terms[:, :, half:].sum(axis=2).min(axis=1)
    return vals, nearest_terms, (lead, trail)


def eigen_contributions(
    train_feats: np.ndarray, train_labels: np.ndarray, test_feats: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues of the shared covariance (descending) and each test point's MD to its nearest class per eigendirection."""
    vals, nearest_terms, _ = eigen_analysis(train_feats, train_labels, test_feats)
    return vals, nearest_terms


def half_distances(
    train_feats: np.ndarray, train_labels: np.ndarray, test_feats: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """MD computed from the leading half of the shared covariance's eigendirections alone, and from the trailing half
    alone: each the minimum over classes of that half's terms, so each half picks its own nearest class."""
    return eigen_analysis(train_feats, train_labels, test_feats)[2]


def leading_eigenvectors(train_feats: np.ndarray, train_labels: np.ndarray) -> np.ndarray:
    """Eigenvectors (columns) of the shared within-class covariance, largest eigenvalue first."""
    _, cov = shared_covariance(train_feats, train_labels)
    vals, vecs = np.linalg.eigh(cov)
    return vecs[:, np.argsort(vals)[::-1]]


def pc_sweep(
    train_feats: np.ndarray,
    train_labels: np.ndarray,
    test_feats: np.ndarray,
    is_ood: np.ndarray,
    ks: Iterable[int],
    **keys: object,
) -> list[dict]:
    """AUROC of MD and RMD computed in the span of the k leading principal components, for each k."""
    vecs = leading_eigenvectors(train_feats, train_labels)
    rows = []
    for k in sorted({min(int(k), train_feats.shape[1]) for k in ks}):
        s = mahalanobis_scores(train_feats @ vecs[:, :k], train_labels, test_feats @ vecs[:, :k])
        rows += [
            {**keys, "k": k, "score": name, "auroc": auroc(is_ood, v)} for name, v in (("MD", s.md), ("RMD", s.rmd))
        ]
    return rows


def balanced_bootstrap(labels: np.ndarray, per_class: int, rng: np.random.Generator) -> np.ndarray:
    """Row indices drawn with replacement, `per_class` of every class (so a large class cannot swamp a small one)."""
    return np.concatenate(
        [rng.choice(np.flatnonzero(labels == c), size=per_class, replace=True) for c in np.unique(labels)]
    )


def inlier_mass(
    train_feats: np.ndarray,
    train_labels: np.ndarray,
    in_classes: Sequence[int],
    ood_feats: np.ndarray,
    members: int = 5,
    per_class: int = 500,
    seed: int = 0,
) -> np.ndarray:
    """Per OOD row, the ensemble's mean probability on the inlier classes (probes on class-balanced bootstraps)."""
    classes = np.unique(train_labels)
    probs = np.zeros((len(ood_feats), len(classes)))
    rng = np.random.default_rng(seed)
    for m in range(members):
        counts = np.bincount(balanced_bootstrap(train_labels, per_class, rng), minlength=len(train_labels))
        drawn = counts > 0  # each drawn row once, weighted by how often it was drawn: the same loss, fewer rows
        probe = linear_probe(train_feats[drawn], train_labels[drawn], seed + m, weights=counts[drawn])
        probs[:, np.searchsorted(classes, probe.classes_)] += probe.predict_proba(ood_feats) / members
    return probs[:, np.isin(classes, np.asarray(in_classes))].sum(axis=1)


def confusion_log_probability(
    train_feats: np.ndarray,
    train_labels: np.ndarray,
    in_classes: Sequence[int],
    ood_feats: np.ndarray,
    members: int = 5,
    seed: int = 0,
    per_class: int = 500,
) -> float:
    """CLP (Winkens et al. 2020): log of the mean ensemble probability that OOD samples get on inlier classes."""
    return float(np.log(inlier_mass(train_feats, train_labels, in_classes, ood_feats, members, per_class, seed).mean()))


def _discriminant_terms(
    train_feats: np.ndarray, train_labels: np.ndarray, test_feats: np.ndarray, m: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The m leading discriminant directions' between/within ratios beta (largest first; m = K - 1 when None) and
    each test point's RMD term per class and direction, shape (n, K, m).

    With V^T W V = I and V^T T V = diag(1 + beta) (W within-class, T total covariance), RMD_k(z) =
    sum_i (v_i^T (z - mu_k))^2 - (v_i^T (z - mu))^2 / (1 + beta_i); a direction with beta_i = 0 adds nothing."""
    from scipy.linalg import eigh

    means, cov = shared_covariance(train_feats, train_labels)
    ratios, vecs = eigh(np.cov(train_feats, rowvar=False, bias=True), cov)
    keep = np.argsort(ratios)[::-1][: len(means) - 1 if m is None else m]
    betas, vecs = ratios[keep] - 1.0, vecs[:, keep]
    to_class = ((test_feats @ vecs)[:, None, :] - (means @ vecs)[None]) ** 2  # (n, K, m), projected before differencing
    to_all = ((test_feats - train_feats.mean(axis=0)) @ vecs) ** 2 / (1.0 + betas)  # (n, m)
    return betas, to_class - to_all[:, None, :]


def discriminant_contributions(
    train_feats: np.ndarray, train_labels: np.ndarray, test_feats: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """RMD split over the K-1 discriminant directions: their between/within ratios and each test point's terms
    (for its nearest class; see `_discriminant_terms`)."""
    betas, terms = _discriminant_terms(train_feats, train_labels, test_feats)
    nearest = terms.sum(axis=2).argmin(axis=1)
    return betas, terms[np.arange(len(test_feats)), nearest]


def _rate(fn, n: int, repeats: int = 3) -> float:
    """Best-of-`repeats` examples per second of fn() processing n examples."""
    best = np.inf
    for _ in range(repeats):
        began = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - began)
    return n / best


def throughput(
    dims: Sequence[int],
    n_classes: Sequence[int],
    n_train: int = 2000,
    n_test: int = 2000,
    n_naive: int = 100,
    seed: int = 0,
) -> pd.DataFrame:
    """Examples/s of vectorized MD+RMD vs the per-example formula and the test x test diagonal, on the same data."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in dims:
        for k in n_classes:
            train = rng.normal(size=(n_train, d)) + rng.normal(size=(k, d))[np.arange(n_train) % k]
            labels = np.arange(n_train) % k
            test = rng.normal(size=(n_test, d))
            ours = _rate(lambda: mahalanobis_scores(train, labels, test), n_test)
            naive = _rate(lambda: mahalanobis_naive(train, labels, test[:n_naive]), n_naive, repeats=1)
            matrix = _rate(lambda: mahalanobis_batch_matrix(train, labels, test[: n_naive * 5]), n_naive * 5, repeats=1)
            rows.append(
                {
                    "dim": d,
                    "classes": k,
                    "ours_per_s": ours,
                    "naive_per_s": naive,
                    "test_x_test_per_s": matrix,
                    "speedup_vs_naive": ours / naive,
                    "speedup_vs_test_x_test": ours / matrix,
                }
            )
    return pd.DataFrame(rows)


def _range_of_within(train_feats: np.ndarray, train_labels: np.ndarray) -> np.ndarray:
    """An orthonormal basis (columns) of the span of the within-class covariance: directions of zero within-class
    variance (mean-pooled MiniLM features lie in a hyperplane) drop out, so both covariances are invertible there."""
    _, cov = shared_covariance(train_feats, train_labels)
    vals, vecs = np.linalg.eigh(cov)
    return vecs[:, vals > vals.max() * 1e-10]


def within_range(
    train_feats: np.ndarray, train_labels: np.ndarray, test_feats: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Training features, labels and test features expressed in the span of the within-class covariance."""
    basis = _range_of_within(train_feats, train_labels)
    return train_feats @ basis, train_labels, test_feats @ basis


def rmd_by_directions(
    train_feats: np.ndarray, train_labels: np.ndarray, test_feats: np.ndarray, counts: Iterable[int]
) -> dict[int, np.ndarray]:
    """RMD computed from only the m leading discriminant directions (largest between/within ratio first), for each m:
    the first m terms of `_discriminant_terms`, minimized over classes (m = K - 1: RMD), on the span of W."""
    x, _, z = within_range(train_feats, train_labels, test_feats)
    wanted = sorted({min(int(m), len(np.unique(train_labels)) - 1) for m in counts})
    _, terms = _discriminant_terms(x, train_labels, z, wanted[-1])
    terms = np.cumsum(terms, axis=2)
    return {m: terms[:, :, m - 1].min(axis=1) for m in wanted if m >= 1}
