"""DSIR chapter: hashed n-gram features and importance weights against the authors' package and a hand-written
formula, Gumbel top-k against exact sampling-without-replacement probabilities, KL reduction on a worked example,
and the heuristic-classification baseline on two toy domains."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from data_selection import HashedNgramDSIR
from data_selection.hashed_ngram_dsir import get_ngram_counts
from sklearn.metrics import roc_auc_score

from repro.data_selection import dsir

TOY_TEXTS = [
    "The cat sat on the mat.",
    "THE CAT, the dog; and the cat again!!",
    "Proteins fold: α-helices and β-sheets (mostly).",
    "e-mail me at foo@bar.com -- it's 3.14 o'clock",
    "word",
    "",
    "   spaces   and\ttabs\nand newlines   ",
]
TARGET_TEXTS = [
    "the enzyme binds the substrate and the protein folds",
    "protein folding of the enzyme depends on the substrate",
    "the kinase phosphorylates the protein substrate quickly",
]
RAW_TEXTS = [
    "the team scored a goal in the final minute of the match",
    "the enzyme and the protein were studied by the team",
    "a stock market report: shares fell and the index closed lower",
    "the protein substrate binds the enzyme, the kinase acts",
    "the match was a draw and the fans went home",
    "weather today: rain in the morning, sun in the afternoon",
]


def hand_ngrams(text: str) -> list[str]:
    """Unigrams and space-joined bigrams of a text, tokenized by hand as WordPunctTokenizer does."""
    words = re.findall(r"\w+|[^\w\s]+", text.lower())
    return words + [f"{a} {b}" for a, b in zip(words, words[1:])]


def hand_bucket(ngram: str, num_buckets: int = 10_000) -> int:
    """sha256 of the n-gram modulo the number of buckets, written out."""
    return int(hashlib.sha256(ngram.encode("utf-8")).hexdigest(), 16) % num_buckets


@pytest.mark.parametrize("num_buckets", [10_000, 37])
def test_features_equal_the_packages_featurizer(num_buckets: int) -> None:
    ours = dsir.ngram_features(TOY_TEXTS, num_buckets=num_buckets).toarray()
    theirs = np.stack([get_ngram_counts(t, n=2, num_buckets=num_buckets) for t in TOY_TEXTS])
    assert ours.shape == (len(TOY_TEXTS), num_buckets)
    np.testing.assert_array_equal(ours, theirs)
    # unigrams + bigrams: a text of L tokens has 2L − 1 n-grams (0 when empty)
    lengths = [len(dsir.tokenize(t)) for t in TOY_TEXTS]
    assert ours.sum(axis=1).tolist() == [max(2 * n - 1, 0) for n in lengths]
    assert dsir.token_lengths(ours).tolist() == lengths


def test_distribution_and_smoothing() -> None:
    counts = dsir.ngram_features(TARGET_TEXTS)
    p = dsir.ngram_distribution(counts)
    assert p.sum() == pytest.approx(1.0) and (p >= 0).all()
    np.testing.assert_allclose(p, np.asarray(counts.sum(axis=0)).ravel() / counts.sum(), rtol=0, atol=0)
    np.testing.assert_array_equal(dsir.ngram_distribution(counts.toarray()), p)
    # add-one smoothing: (c + 1) / (N + B)
    smoothed = dsir.ngram_distribution(np.array([3, 0, 1]), pseudo_count=1.0)
    np.testing.assert_allclose(smoothed, [4 / 7, 1 / 7, 2 / 7])


def test_importance_weights_match_a_hand_written_formula() -> None:
    target = Counter(hand_bucket(g) for t in TARGET_TEXTS for g in hand_ngrams(t))
    raw = Counter(hand_bucket(g) for t in RAW_TEXTS for g in hand_ngrams(t))
    n_target, n_raw = sum(target.values()), sum(raw.values())
    expected = []
    for text in RAW_TEXTS:
        w = 0.0
        for g in hand_ngrams(text):
            b = hand_bucket(g)
            w += math.log(target[b] / n_target + 1e-8) - math.log(raw[b] / n_raw + 1e-8)
        expected.append(w)

    target_dist = dsir.ngram_distribution(dsir.ngram_features(TARGET_TEXTS))
    raw_dist = dsir.ngram_distribution(dsir.ngram_features(RAW_TEXTS))
    ours = dsir.log_importance_weights(dsir.ngram_features(RAW_TEXTS), target_dist, raw_dist)
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-10)
    # the biology documents (1 and 3) outrank sport, markets and weather
    assert set(dsir.top_k(ours, 2).tolist()) == {1, 3}


def test_kl_from_target_to_raw_is_the_targets_mean_log_weight_per_ngram() -> None:
    target_counts = dsir.ngram_features(TARGET_TEXTS)
    target_dist = dsir.ngram_distribution(target_counts)
    raw_dist = dsir.ngram_distribution(dsir.ngram_features(RAW_TEXTS))
    weights = dsir.log_importance_weights(target_counts, target_dist, raw_dist)
    assert dsir.kl_divergence(target_dist, raw_dist) == pytest.approx(weights.sum() / target_counts.sum(), rel=1e-12)


def write_jsonl(path: Path, texts: list[str]) -> str:
    """One {"text": …} object per line, the package's default input."""
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    return str(path)


def test_weights_lengths_and_top_k_equal_the_packages(tmp_path: Path) -> None:
    raw_path = write_jsonl(tmp_path / "raw.jsonl", RAW_TEXTS)
    target_path = write_jsonl(tmp_path / "target.jsonl", TARGET_TEXTS)
    theirs = HashedNgramDSIR(
        raw_datasets=[raw_path],
        target_datasets=[target_path],
        cache_dir=str(tmp_path / "cache"),
        num_proc=1,
        min_example_length=11,
    )
    theirs.fit_importance_estimator(num_tokens_to_fit="all")
    theirs.compute_importance_weights()
    their_weights = np.load(tmp_path / "cache" / "log_importance_weights" / "0.npy")
    their_lengths = np.load(tmp_path / "cache" / "perexample_metadata" / "0.npy")

    raw_counts = dsir.ngram_features(RAW_TEXTS)
    target_dist = dsir.ngram_distribution(dsir.ngram_features(TARGET_TEXTS))
    raw_dist = dsir.ngram_distribution(raw_counts)
    np.testing.assert_allclose(raw_dist, theirs.raw_probs, rtol=1e-15, atol=0)
    np.testing.assert_allclose(target_dist, theirs.target_probs, rtol=1e-15, atol=0)
    np.testing.assert_allclose(dsir.log_ratio(target_dist, raw_dist), theirs.log_diff, rtol=1e-13, atol=1e-13)
    ours = dsir.log_importance_weights(raw_counts, target_dist, raw_dist)
    np.testing.assert_allclose(ours, their_weights, rtol=1e-12, atol=1e-10)
    lengths = dsir.token_lengths(raw_counts)
    assert lengths.tolist() == their_lengths.astype(int).tolist()

    # noiseless resampling of 2 among the documents of at least 11 tokens
    eligible = lengths >= 11
    assert 2 < eligible.sum() < len(RAW_TEXTS)
    theirs.resample(out_dir=str(tmp_path / "out"), num_to_sample=2, top_k=True)
    chosen = [json.loads(line)["text"] for line in (tmp_path / "out" / "0.jsonl").read_text().splitlines()]
    assert sorted(chosen) == sorted(RAW_TEXTS[i] for i in dsir.top_k(ours, 2, eligible=eligible))


def inclusion_probabilities(weights: np.ndarray, k: int) -> np.ndarray:
    """Exact P(item in sample) for successive sampling without replacement ∝ weights, by enumerating orders."""
    out = np.zeros(len(weights))
    for order in itertools.permutations(range(len(weights)), k):
        prob, left = 1.0, weights.sum()
        for i in order:
            prob *= weights[i] / left
            left -= weights[i]
        out[list(order)] += prob
    return out


WEIGHTS = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
DRAWS = 20_000


def within_standard_errors(freq: np.ndarray, prob: np.ndarray, n: int, z: float = 4.0) -> bool:
    """Every frequency within z binomial standard errors of its probability."""
    return bool(np.all(np.abs(freq - prob) <= z * np.sqrt(prob * (1 - prob) / n)))


def test_gumbel_top_1_samples_proportionally_to_the_weights() -> None:
    rng = np.random.default_rng(0)
    log_w = np.log(WEIGHTS)
    picks = np.array([dsir.gumbel_top_k(log_w, 1, rng)[0] for _ in range(DRAWS)])
    freq = np.bincount(picks, minlength=len(WEIGHTS)) / DRAWS
    assert within_standard_errors(freq, WEIGHTS / WEIGHTS.sum(), DRAWS)


def test_gumbel_top_k_matches_successive_sampling_without_replacement() -> None:
    assert inclusion_probabilities(WEIGHTS, 1) == pytest.approx(WEIGHTS / WEIGHTS.sum())
    assert inclusion_probabilities(WEIGHTS, 2).sum() == pytest.approx(2.0)
    rng = np.random.default_rng(1)
    log_w = np.log(WEIGHTS)
    samples = np.array([dsir.gumbel_top_k(log_w, 3, rng) for _ in range(DRAWS)])
    assert all(len(set(row)) == 3 for row in samples.tolist())
    for k in (1, 2, 3):  # the first k of the order returned are a draw of size k
        freq = np.bincount(samples[:, :k].ravel(), minlength=len(WEIGHTS)) / DRAWS
        assert within_standard_errors(freq, inclusion_probabilities(WEIGHTS, k), DRAWS)
    # k = 3 is far from proportional: the heaviest item (10/20 of the weight) is almost always in
    assert inclusion_probabilities(WEIGHTS, 3)[4] > 0.9


def test_top_k_random_k_and_eligibility() -> None:
    rng = np.random.default_rng(2)
    log_w = np.log(WEIGHTS)
    assert dsir.top_k(log_w, 3).tolist() == [4, 3, 2]
    assert dsir.top_k(log_w, 2, eligible=np.array([1, 1, 1, 0, 1], dtype=bool)).tolist() == [4, 2]
    for _ in range(200):
        assert 4 not in dsir.gumbel_top_k(log_w, 4, rng, eligible=np.arange(5) != 4).tolist()
    picks = dsir.random_k(10, 10, rng)
    assert sorted(picks.tolist()) == list(range(10))
    with pytest.raises(ValueError):
        dsir.gumbel_top_k(log_w, 5, rng, eligible=np.arange(5) != 0)
    with pytest.raises(ValueError):
        dsir.top_k(log_w, 6)


def test_kl_and_kl_reduction_on_a_worked_example() -> None:
    raw = np.array([0.25, 0.25, 0.5])
    selected = np.array([0.4, 0.4, 0.2])
    t1 = np.array([0.5, 0.5, 0.0])
    t2 = np.array([0.0, 0.5, 0.5])
    # KL(t1‖raw) = ½ ln 2 + ½ ln 2 = ln 2; KL(t1‖sel) = ln(0.5/0.4) = ln 1.25
    assert dsir.kl_divergence(t1, raw, eps=0) == pytest.approx(math.log(2), rel=1e-15)
    assert dsir.kl_divergence(t1, selected, eps=0) == pytest.approx(math.log(1.25), rel=1e-15)
    assert dsir.kl_divergence(t1, raw) == pytest.approx(math.log(2), abs=1e-7)  # eps = 1e-8 barely matters here
    assert dsir.kl_divergence(raw, raw) == 0.0
    # one target: ln 2 − ln 1.25 = ln 1.6 = 0.4700
    assert dsir.kl_reduction(selected, raw, t1, eps=0) == pytest.approx(math.log(1.6), rel=1e-14)
    # KL(t2‖raw) = ½ ln 2, KL(t2‖sel) = ½ ln 1.25 + ½ ln 2.5: gap ½ ln 0.64 = −0.2231; mean (ln 1.6 + ½ ln 0.64) / 2
    both = dsir.kl_reduction(selected, raw, np.stack([t1, t2]), eps=0)
    assert both == pytest.approx((math.log(1.6) + 0.5 * math.log(0.64)) / 2, rel=1e-14)
    assert both == pytest.approx(0.12343, abs=1e-5)
    # with eps, a bucket the selection never saw costs a finite log(1/eps) instead of infinity
    assert dsir.kl_divergence(t2, np.array([1.0, 0.0, 0.0]), eps=0) == math.inf
    assert dsir.kl_divergence(t2, np.array([1.0, 0.0, 0.0])) == pytest.approx(
        0.5 * math.log(0.5 / 1e-8) + 0.5 * math.log(0.5 / 1e-8), rel=1e-6
    )


def test_pareto_keep_probability_is_numpys_lomax_tail() -> None:
    rng = np.random.default_rng(3)
    draws = rng.pareto(9.0, size=100_000)
    for p in (0.2, 0.5, 0.9):
        freq = float(np.mean(draws > 1 - p))
        prob = float(dsir.pareto_keep_probability(np.array(p)))
        assert within_standard_errors(np.array(freq), np.array(prob), len(draws))
    assert dsir.pareto_keep_probability(np.array([0.0, 1.0])) == pytest.approx([2.0**-9, 1.0])


def test_pareto_threshold_select_returns_k_distinct_and_favours_likely_targets() -> None:
    rng = np.random.default_rng(4)
    probs = np.r_[np.full(1000, 0.1), np.full(1000, 0.9)]
    low = 0
    reps, k = 200, 50
    for _ in range(reps):
        chosen = dsir.pareto_threshold_select(probs, k, rng)
        assert len(chosen) == k and len(set(chosen.tolist())) == k and chosen.min() >= 0 and chosen.max() < 2000
        low += int((chosen < 1000).sum())
    # one round keeps ~424 of the p = 0.9 documents and ~3 of the p = 0.1 ones: a random k of them
    keep_low, keep_high = dsir.pareto_keep_probability(np.array([0.1, 0.9]))
    expected_share = keep_low / (keep_low + keep_high)  # 0.0073
    assert low / (reps * k) == pytest.approx(expected_share, rel=0.35)
    # k = n needs every document kept at least once: all of them come back
    everything = dsir.pareto_threshold_select(np.linspace(0, 1, 30), 30, rng)
    assert sorted(everything.tolist()) == list(range(30))
    assert dsir.pareto_threshold_select(probs, 0, rng).tolist() == []


SPORT = "team goal match coach striker league season referee penalty stadium fans trophy keeper midfield".split()
CHEMISTRY = "molecule reaction enzyme catalyst solvent oxidation acid bond electron polymer compound reagent".split()
COMMON = "the a of and in to was with for on by it is that".split()


def toy_domain(vocabulary: list[str], n: int, rng: np.random.Generator) -> list[str]:
    """n texts of 12–20 words, about a third from the domain's vocabulary and the rest function words."""
    texts = []
    for _ in range(n):
        length = int(rng.integers(12, 21))
        words = [rng.choice(vocabulary) if rng.random() < 0.35 else rng.choice(COMMON) for _ in range(length)]
        texts.append(" ".join(words))
    return texts


def test_heuristic_classifier_separates_two_toy_domains() -> None:
    rng = np.random.default_rng(5)
    target_train, target_test = toy_domain(CHEMISTRY, 150, rng), toy_domain(CHEMISTRY, 100, rng)
    raw_train, raw_test = toy_domain(SPORT, 250, rng), toy_domain(SPORT, 100, rng)
    clf = dsir.heuristic_classifier(target_train, raw_train, seed=0)
    probs = dsir.target_probabilities(clf, target_test + raw_test)
    labels = np.r_[np.ones(100), np.zeros(100)]
    assert roc_auc_score(labels, probs) > 0.9
    assert probs[:100].mean() > 0.5 > probs[100:].mean()
    # the noisy threshold picks mostly chemistry out of the mixed held-out pool
    chosen = dsir.pareto_threshold_select(probs, 20, np.random.default_rng(6))
    assert (chosen < 100).sum() >= 18


def test_pareto_order_keeps_likely_targets_first_and_never_an_ineligible_document() -> None:
    probs = np.r_[np.full(50, 0.95), np.full(50, 0.05)]
    eligible = np.ones(100, bool)
    eligible[[0, 99]] = False
    order = dsir.pareto_order(probs, np.random.default_rng(0), eligible)
    assert sorted(order.tolist()) == [i for i in range(100) if eligible[i]]  # every eligible document, once
    # one round keeps a document with probability (2 - p)^-9: 0.63 at p = 0.95, 0.0026 at p = 0.05
    assert dsir.pareto_keep_probability(np.array([0.95, 0.05])) == pytest.approx([1.05**-9, 1.95**-9])
    assert (order[:30] < 50).mean() > 0.9
    firsts = [dsir.pareto_order(probs, np.random.default_rng(s))[0] < 50 for s in range(200)]
    assert np.mean(firsts) > 0.95


def test_token_budget_prefix_is_the_shortest_prefix_reaching_the_budget() -> None:
    lengths = np.array([10, 50, 20, 30, 40])
    order = np.array([2, 0, 4, 1, 3])  # cumulative tokens 20, 30, 70, 120, 150
    assert dsir.token_budget_prefix(order, lengths, 30).tolist() == [2, 0]
    assert dsir.token_budget_prefix(order, lengths, 31).tolist() == [2, 0, 4]
    assert dsir.token_budget_prefix(order, lengths, 1).tolist() == [2]
    assert dsir.token_budget_prefix(order, lengths, 1000).tolist() == order.tolist()  # never reached: everything


def test_heuristic_classifier_chooses_its_regularisation_by_cross_validation() -> None:
    rng = np.random.default_rng(5)
    clf = dsir.heuristic_classifier(toy_domain(CHEMISTRY, 60, rng), toy_domain(SPORT, 60, rng), seed=0)
    model = clf[-1]
    assert model.C_ in dsir.CLASSIFIER_CS
    # separable toy domains: log loss prefers a weak penalty, whose probabilities are not squashed towards 1/2
    assert model.C_ >= 10
