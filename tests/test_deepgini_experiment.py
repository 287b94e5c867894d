"""The DeepGini chapter's experiment helpers: test-set make-up, paired retraining, APFD intervals, coverage saturation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import sparse

from repro import metrics
from repro.deepgini import experiment as dg
from repro.deepgini import retraining, testsets


def _mixed(sources: list[int], kinds: list[str]) -> testsets.MixedSet:
    n = len(sources)
    return testsets.MixedSet(np.zeros((n, 1, 2, 2), np.float32), np.zeros(n, int), np.array(sources), np.array(kinds))


def test_makeup_counts_each_kind() -> None:
    m = _mixed([0, 1, 2, 0, 1, 0], ["original", "original", "original", "FGSM", "FGSM", "BIM"])
    assert testsets.makeup(m) == {"BIM": 1, "FGSM": 2, "original": 3}


def test_split_by_source_keeps_an_images_examples_together_and_drops_originals() -> None:
    sources = list(range(50)) + [i % 50 for i in range(200)]
    kinds = ["original"] * 50 + ["FGSM"] * 100 + ["BIM"] * 100
    m = _mixed(sources, kinds)
    pool, held = retraining.split_by_source(m, seed=3)
    assert set(pool).isdisjoint(held) and len(pool) + len(held) == 200  # every adversarial row, no original
    assert not set(m.source[pool]) & set(m.source[held])  # no source image on both sides
    assert (m.kind[np.r_[pool, held]] != "original").all()


def test_paired_differences_are_per_seed_differences_with_a_t_interval() -> None:
    frame = pd.DataFrame(
        [
            {"method": "none", "percent": 0, "seed": -1, "held_out_accuracy": 0.1},
            *[
                {"method": m, "percent": 10, "seed": s, "held_out_accuracy": acc}
                for m, accs in (("DeepGini", (0.80, 0.82, 0.84)), ("random", (0.70, 0.75, 0.71)))
                for s, acc in zip((0, 1, 2), accs)
            ],
        ]
    )
    (row,) = retraining.paired_differences(frame).to_dict("records")
    diffs = np.array([0.10, 0.07, 0.13])
    half = 4.302652729911275 * diffs.std(ddof=1) / np.sqrt(3)  # t(0.975, 2)
    assert row["method"] == "random" and row["seeds"] == 3
    assert row["difference"] == pytest.approx(diffs.mean())
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((diffs.mean() - half, diffs.mean() + half))


def test_order_scores_reproduce_the_order() -> None:
    order = np.array([3, 0, 4, 1, 2])
    scores = dg.order_scores(order)
    assert (np.argsort(-scores, kind="stable") == order).all()


def test_apfd_difference_is_the_normalized_difference_on_the_full_set() -> None:
    rng = np.random.default_rng(0)
    truth = rng.random(300) < 0.3
    a, b = rng.permutation(300), rng.permutation(300)
    iv = dg.apfd_difference(truth, a, b, n_boot=200, seed=1)
    expected = metrics.apfd_normalized(truth[a]) - metrics.apfd_normalized(truth[b])
    assert iv.estimate == pytest.approx(expected, abs=1e-12)
    assert iv.low <= iv.estimate <= iv.high and iv.method.endswith("normalized")


def test_tests_to_max_coverage_on_a_hand_case() -> None:
    # 4 tests, 5 items; item 4 is never covered. Greedy CAM: test 2 (3 items), then test 0 (item 0): all 4 reached
    items = sparse.csr_matrix(np.array([[1, 1, 0, 0, 0], [0, 1, 0, 0, 0], [0, 1, 1, 1, 0], [0, 0, 1, 0, 0]]))
    coverage, needed = dg.tests_to_max_coverage(items)
    assert coverage == pytest.approx(4 / 5) and needed == 2
