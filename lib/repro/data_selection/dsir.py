"""DSIR (Xie et al., 2023): hashed n-gram importance weights, Gumbel top-k resampling, KL reduction, and the
GPT-3-style heuristic-classification baseline, all in memory.

The authors' package (``data-selection`` 1.0.3, class ``HashedNgramDSIR``) works on jsonl files on disk with
joblib worker processes and caches weights in ``.npy`` chunks. We reuse its tokenizer (nltk ``WordPunctTokenizer``
on the lower-cased text) and its ``hash_buckets`` (sha256 of the n-gram, modulo the number of buckets) and
re-implement the rest of its formulas on in-memory arrays:

- features: counts of the document's unigrams and space-joined bigrams in 10,000 hash buckets;
- distributions: bucket counts summed over a corpus, divided by their total (no pseudo-counts);
- log importance weight of a document: ``sum_z c(z) · [log(p_target(z) + 1e-8) − log(p_raw(z) + 1e-8)]``;
- resampling: add Gumbel(0, 1) noise to the log weights and keep the k largest (``top_k=True`` drops the noise);
- the package drops documents shorter than 100 tokens before resampling (``min_example_length=100``).

Differences, none of which changes the formulas: the package fits the raw distribution on at most
100,000 · num_buckets tokens by default (we fit on the corpus given), draws its Gumbel noise from the global
``np.random`` (we take a ``Generator``), and the classifier baseline uses scikit-learn instead of fastText.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from data_selection.hashed_ngram_dsir import hash_buckets, wpt
from scipy import sparse
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.linear_model import LogisticRegressionCV
from sklearn.pipeline import Pipeline, make_pipeline

NUM_BUCKETS = 10_000  # the package's and the paper's number of hash buckets
NGRAMS = 2  # unigrams and bigrams
LOG_EPS = 1e-8  # the package adds this to every probability before taking logs
MIN_EXAMPLE_LENGTH = 100  # the package's default: documents with fewer tokens are never selected
PARETO_ALPHA = 9.0  # GPT-3's shape of the Pareto noise in the heuristic-classification filter
CLASSIFIER_FEATURES = 2**18  # hashed unigram+bigram features of the heuristic classifier
CLASSIFIER_CS = (0.1, 1.0, 10.0, 100.0)  # inverse regularisation strengths tried by cross-validation


@lru_cache(maxsize=2**20)
def ngram_bucket(ngram: str, num_buckets: int = NUM_BUCKETS) -> int:
    """The package's hash bucket of one n-gram (sha256 modulo num_buckets), cached per distinct n-gram."""
    return hash_buckets(ngram, num_buckets=num_buckets)


def tokenize(text: str) -> list[str]:
    """The package's tokens: nltk's WordPunctTokenizer on the lower-cased text."""
    return wpt.tokenize(text.lower())


def ngrams_of(text: str, ngrams: int = NGRAMS) -> list[str]:
    """All 1..ngrams-grams of a text as the package hashes them: tokens, then space-joined windows of 2, 3, …"""
    words = tokenize(text)
    grams = list(words)
    for n in range(2, ngrams + 1):
        grams += [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)]
    return grams


def ngram_features(texts: Sequence[str], num_buckets: int = NUM_BUCKETS, ngrams: int = NGRAMS) -> sparse.csr_matrix:
    """Hashed n-gram counts, one row per text (equal to the package's ``get_ngram_counts``, stored sparse)."""
    indptr = [0]
    buckets: list[int] = []
    for text in texts:
        buckets.extend(ngram_bucket(g, num_buckets) for g in ngrams_of(text, ngrams))
        indptr.append(len(buckets))
    data = np.ones(len(buckets), dtype=np.int64)
    counts = sparse.csr_matrix((data, np.asarray(buckets, dtype=np.int64), indptr), shape=(len(texts), num_buckets))
    counts.sum_duplicates()
    return counts


def token_lengths(features: sparse.spmatrix | np.ndarray, ngrams: int = NGRAMS) -> np.ndarray:
    """Tokens per document recovered from its n-gram counts, as the package does: (Σ counts + n(n−1)/2) // n."""
    total = np.asarray(features.sum(axis=1)).ravel()
    return ((total + ngrams * (ngrams - 1) // 2) // ngrams).astype(np.int64)


def ngram_distribution(counts: sparse.spmatrix | np.ndarray, pseudo_count: float = 0.0) -> np.ndarray:
    """Bag-of-n-grams distribution of a corpus: (bucket counts + pseudo_count) / total.

    The package uses pseudo_count = 0 (counts / counts.sum()) and smooths only inside the log (``LOG_EPS``);
    a positive pseudo_count gives add-λ smoothing for ablations. ``counts`` is one row per document or one
    already-summed vector."""
    summed = np.asarray(counts.sum(axis=0) if counts.ndim == 2 else counts, dtype=np.float64).ravel()
    summed = summed + pseudo_count
    total = summed.sum()
    if total <= 0:
        raise ValueError("the corpus has no n-grams")
    return summed / total


def log_ratio(target_dist: np.ndarray, raw_dist: np.ndarray, eps: float = LOG_EPS) -> np.ndarray:
    """Per-bucket log importance ratio, the package's ``log_diff``: log(p_target + eps) − log(p_raw + eps)."""
    target = np.asarray(target_dist, dtype=np.float64)
    raw = np.asarray(raw_dist, dtype=np.float64)
    return np.log(target + eps) - np.log(raw + eps)


def log_importance_weights(
    features: sparse.spmatrix | np.ndarray, target_dist: np.ndarray, raw_dist: np.ndarray, eps: float = LOG_EPS
) -> np.ndarray:
    """Log importance weight of each document: Σ over its n-grams z of log p_target(z) − log p_raw(z) (smoothed)."""
    return np.asarray(features @ log_ratio(target_dist, raw_dist, eps), dtype=np.float64).ravel()


def _largest(keys: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest keys, largest first; fails if fewer than k keys are above −∞."""
    if not 0 <= k <= len(keys):
        raise ValueError(f"k must lie in [0, {len(keys)}], got {k}")
    if int((keys > -np.inf).sum()) < k:
        raise ValueError(f"fewer than k={k} documents are eligible")
    if k == 0:
        return np.empty(0, dtype=np.int64)
    # a stable sort, not np.argpartition: among equal keys at the k-th place (duplicate documents under top_k) the
    # lowest indices win, while argpartition's pick depends on the CPU (NumPy's AVX-512 and AVX2 selections differ)
    return np.argsort(-keys, kind="stable")[:k]


def _masked(keys: np.ndarray, eligible: np.ndarray | None) -> np.ndarray:
    """Keys with the ineligible documents set to −∞ (the package filters them out before resampling)."""
    return keys if eligible is None else np.where(np.asarray(eligible, dtype=bool), keys, -np.inf)


def gumbel_top_k(
    log_weights: np.ndarray, k: int, rng: np.random.Generator, eligible: np.ndarray | None = None
) -> np.ndarray:
    """k indices sampled without replacement with probabilities ∝ exp(log_weights): Gumbel noise, then top k.

    Returned in the order of successive sampling (largest perturbed key first)."""
    log_weights = np.asarray(log_weights, dtype=np.float64)
    return _largest(_masked(log_weights + rng.gumbel(size=log_weights.shape), eligible), k)


def top_k(log_weights: np.ndarray, k: int, eligible: np.ndarray | None = None) -> np.ndarray:
    """The k documents of largest importance weight, no noise (the paper's top-k ablation), largest first."""
    return _largest(_masked(np.asarray(log_weights, dtype=np.float64), eligible), k)


def random_k(n: int, k: int, rng: np.random.Generator, eligible: np.ndarray | None = None) -> np.ndarray:
    """k documents uniformly at random without replacement (the random-selection baseline)."""
    pool = np.arange(n) if eligible is None else np.flatnonzero(np.asarray(eligible, dtype=bool))
    if not 0 <= k <= len(pool):
        raise ValueError(f"k must lie in [0, {len(pool)}], got {k}")
    return rng.choice(pool, size=k, replace=False)


def kl_divergence(p: np.ndarray, q: np.ndarray, eps: float = LOG_EPS) -> float:
    """KL(p‖q) = Σ_z p(z) [log(p(z) + eps) − log(q(z) + eps)], in nats; buckets with p(z) = 0 add nothing.

    The eps is the package's log smoothing, so KL(target‖raw) is the target's mean per-n-gram log weight."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    support = p > 0
    with np.errstate(divide="ignore"):  # eps = 0 and q(z) = 0 < p(z): KL is +inf
        return float(np.sum(p[support] * (np.log(p[support] + eps) - np.log(q[support] + eps))))


def kl_reduction(
    selected_dist: np.ndarray, raw_dist: np.ndarray, target_dists: np.ndarray, eps: float = LOG_EPS
) -> float:
    """The paper's KL reduction (Sec. 6): mean over targets p̂ ∈ T of KL(p̂‖q_raw) − KL(p̂‖p_selected).

    ``target_dists`` is one target distribution or one per row; positive means the selection moved the
    n-gram distribution towards the targets."""
    targets = np.atleast_2d(np.asarray(target_dists, dtype=np.float64))
    gaps = [kl_divergence(t, raw_dist, eps) - kl_divergence(t, selected_dist, eps) for t in targets]
    return float(np.mean(gaps))


def heuristic_classifier(
    target_texts: Sequence[str], raw_texts: Sequence[str], seed: int, n_features: int = CLASSIFIER_FEATURES
) -> Pipeline:
    """GPT-3's quality classifier: hashed unigram+bigram logistic regression, target = 1 vs raw = 0.

    As in the authors' baseline the classes are balanced: the larger side is subsampled (with ``seed``) to the size
    of the smaller. The authors trained fastText on bigrams with its autotuning; here scikit-learn's hashing +
    logistic regression is the same linear model on the same n-grams, its regularisation chosen by 3-fold
    cross-validated log loss among ``CLASSIFIER_CS`` (the Pareto rule reads the probabilities themselves, so they
    must not be squashed by a strong penalty)."""
    rng = np.random.default_rng(seed)
    n = min(len(target_texts), len(raw_texts))
    if n == 0:
        raise ValueError("both corpora need at least one text")
    pos = [target_texts[i] for i in np.sort(rng.choice(len(target_texts), n, replace=False))]
    neg = [raw_texts[i] for i in np.sort(rng.choice(len(raw_texts), n, replace=False))]
    model = make_pipeline(
        HashingVectorizer(ngram_range=(1, 2), n_features=n_features, alternate_sign=False, lowercase=True),
        LogisticRegressionCV(
            Cs=list(CLASSIFIER_CS),
            cv=min(3, n),
            scoring="neg_log_loss",
            solver="liblinear",
            max_iter=1000,
            random_state=seed,
            l1_ratios=(0.0,),
            use_legacy_attributes=False,
        ),
    )
    return model.fit(pos + neg, np.r_[np.ones(n, dtype=int), np.zeros(n, dtype=int)])


def target_probabilities(classifier: Pipeline, texts: Sequence[str]) -> np.ndarray:
    """The classifier's probability that each text comes from the target domain."""
    return classifier.predict_proba(list(texts))[:, 1]


def pareto_keep_probability(probs: np.ndarray, alpha: float = PARETO_ALPHA) -> np.ndarray:
    """Chance that one draw keeps a document: P(Pareto(alpha) > 1 − p) = (2 − p)^(−alpha) (numpy's Lomax form)."""
    return (2.0 - np.asarray(probs, dtype=np.float64)) ** (-alpha)


def pareto_threshold_select(
    probs: np.ndarray, k: int, rng: np.random.Generator, alpha: float = PARETO_ALPHA, max_rounds: int = 100_000
) -> np.ndarray:
    """k documents by GPT-3's noisy threshold: keep a document when np.random.pareto(alpha) > 1 − p.

    To reach exactly k we follow the authors' baseline (``retrieval_mode='pareto'``): repeat fresh draws over all
    documents, accumulating the kept set until it holds at least k, then take a uniformly random k of it."""
    probs = np.asarray(probs, dtype=np.float64)
    if not 0 <= k <= len(probs):
        raise ValueError(f"k must lie in [0, {len(probs)}], got {k}")
    kept = np.zeros(len(probs), dtype=bool)
    for _ in range(max_rounds):
        if kept.sum() >= k:
            return rng.permutation(np.flatnonzero(kept))[:k]
        kept |= rng.pareto(alpha, size=len(probs)) > 1.0 - probs
    raise RuntimeError(f"fewer than k={k} documents kept after {max_rounds} rounds")


def pareto_order(
    probs: np.ndarray, rng: np.random.Generator, eligible: np.ndarray | None = None, max_rounds: int = 1_000_000
) -> np.ndarray:
    """Every eligible document in the order GPT-3's noisy threshold keeps it: fresh Pareto draws over the documents
    not yet kept, round after round (the authors' repeated draws), the documents kept in one round in random order.
    A prefix of this order is the heuristic selection of any size or token budget; ineligible documents never come."""
    probs = np.asarray(probs, dtype=np.float64)
    left = np.flatnonzero(np.ones(len(probs), bool) if eligible is None else np.asarray(eligible, bool))
    out = []
    for _ in range(max_rounds):
        if left.size == 0:
            return np.concatenate(out) if out else np.empty(0, np.int64)
        kept = rng.pareto(PARETO_ALPHA, size=left.size) > 1.0 - probs[left]
        out.append(rng.permutation(left[kept]))
        left = left[~kept]
    raise RuntimeError(f"{left.size} documents never kept after {max_rounds} rounds")


def token_budget_prefix(order: np.ndarray, lengths: np.ndarray, budget: float) -> np.ndarray:
    """The shortest prefix of `order` whose documents hold at least `budget` tokens (all of it if they never do)."""
    order = np.asarray(order, dtype=np.int64)
    total = np.cumsum(np.asarray(lengths, dtype=np.float64)[order])
    return order[: int(np.searchsorted(total, budget, side="left")) + 1]
