"""OOD scores against direct per-example formulas on small random inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from repro import cache, data, metrics, training
from repro.rmd import nets, scores


def direct_scores(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MD and RMD straight from the definitions (1/N covariances, pseudo-inverse), one point at a time."""
    classes = np.unique(y)
    mus = [x[y == c].mean(0) for c in classes]
    within = sum((x[y == c] - mu).T @ (x[y == c] - mu) for c, mu in zip(classes, mus)) / len(x)
    mu0 = x.mean(0)
    total = (x - mu0).T @ (x - mu0) / len(x)
    p, p0 = np.linalg.pinv(within), np.linalg.pinv(total)
    md, rmd = [], []
    for point in z:
        mdk = [float((point - mu) @ p @ (point - mu)) for mu in mus]
        md0 = float((point - mu0) @ p0 @ (point - mu0))
        md.append(min(mdk))
        rmd.append(min(m - md0 for m in mdk))
    return np.array(md), np.array(rmd)


@pytest.fixture
def gaussian_data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    y = np.arange(120) % 3
    x = rng.normal(size=(120, 5)) * [3, 1, 1, 0.5, 0.1] + rng.normal(size=(3, 5))[y] * 2
    return x, y, rng.normal(size=(40, 5)) * 2


def test_vectorized_matches_direct_formula(gaussian_data) -> None:
    x, y, z = gaussian_data
    md, rmd = direct_scores(x, y, z)
    s = metrics.mahalanobis_scores(x, y, z)
    np.testing.assert_allclose(s.md, md, rtol=1e-9)
    np.testing.assert_allclose(s.rmd, rmd, rtol=1e-9, atol=1e-9)
    naive = scores.mahalanobis_naive(x, y, z)
    np.testing.assert_allclose(naive.md, md, rtol=1e-9)
    np.testing.assert_allclose(naive.rmd, rmd, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(scores.mahalanobis_batch_matrix(x, y, z), md, rtol=1e-9)


def test_singular_covariance_uses_the_pseudo_inverse() -> None:
    rng = np.random.default_rng(0)
    y = np.arange(12) % 2
    base = rng.normal(size=(12, 3))
    x = np.hstack([base, base[:, :1] * 2.0, np.zeros((12, 1))])  # a duplicated direction and a dead column
    z = np.hstack([rng.normal(size=(6, 3)), np.zeros((6, 2))])
    z[:, 3] = 2.0 * z[:, 0]
    s = metrics.mahalanobis_scores(x, y, z)
    md, rmd = direct_scores(x, y, z)
    assert np.isfinite(s.md).all() and np.isfinite(s.rmd).all()
    np.testing.assert_allclose(s.md, md, rtol=1e-8)
    np.testing.assert_allclose(s.rmd, rmd, rtol=1e-8, atol=1e-8)
    # more dimensions than rows: still finite, and the training points sit close to their class
    wide = rng.normal(size=(10, 30))
    labels = np.arange(10) % 2
    train_scores = metrics.mahalanobis_scores(wide, labels, wide)
    assert np.isfinite(train_scores.md).all()
    assert train_scores.md.max() < metrics.mahalanobis_scores(wide, labels, rng.normal(size=(5, 30)) * 5).md.min()


def test_rmd_sign_and_single_gaussian(gaussian_data) -> None:
    x, y, z = gaussian_data
    s = metrics.mahalanobis_scores(x, y, z)
    md0 = metrics.gaussian_distance(x, z)
    np.testing.assert_allclose(s.rmd, s.md - md0, rtol=1e-9, atol=1e-9)  # the same k minimizes both
    # one class: MD equals MD_0 and RMD is identically zero
    one = metrics.mahalanobis_scores(x, np.zeros(len(x)), z)
    np.testing.assert_allclose(one.rmd, 0.0, atol=1e-8)


def test_msp_matches_definition() -> None:
    logits = np.array([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(scores.msp(logits), [1 - np.exp(2) / (np.exp(2) + 2), 2 / 3])


def test_eigen_contributions_sum_to_md(gaussian_data) -> None:
    x, y, z = gaussian_data
    vals, contrib = scores.eigen_contributions(x, y, z)
    assert np.all(np.diff(vals) <= 0)
    np.testing.assert_allclose(contrib.sum(1), metrics.mahalanobis_scores(x, y, z).md, rtol=1e-9)


def test_pc_sweep_at_full_width_equals_plain_scores(gaussian_data) -> None:
    x, y, z = gaussian_data
    is_ood = (np.arange(len(z)) % 2).astype(int)
    rows = scores.pc_sweep(x, y, z, is_ood, [2, 5, 99])
    assert sorted({r["k"] for r in rows}) == [2, 5]
    s = metrics.mahalanobis_scores(x, y, z)
    full = {r["score"]: r["auroc"] for r in rows if r["k"] == 5}
    assert full == pytest.approx({"MD": metrics.auroc(is_ood, s.md), "RMD": metrics.auroc(is_ood, s.rmd)})


def test_clp_is_higher_for_nearer_outliers() -> None:
    rng = np.random.default_rng(1)
    centers = np.array([[0.0, 0.0], [6.0, 0.0], [0.5, 0.5], [30.0, 30.0]])  # 2 = near class 0, 3 = far
    y = np.repeat(np.arange(4), 200)
    x = centers[y] + rng.normal(size=(800, 2))
    near = scores.confusion_log_probability(x[y != 3], y[y != 3], [0, 1], centers[2] + rng.normal(size=(100, 2)), 2)
    far_train = np.isin(y, [0, 1, 3])
    far = scores.confusion_log_probability(
        x[far_train], np.searchsorted([0, 1, 3], y[far_train]), [0, 1], centers[3] + rng.normal(size=(100, 2)), 2
    )
    assert -1.5 < near <= 0 and far < near - 3


def test_throughput_reports_a_speedup() -> None:
    table = scores.throughput([8], [3], n_train=300, n_test=300, n_naive=30)
    assert table.loc[0, "speedup_vs_naive"] > 1
    assert {"ours_per_s", "naive_per_s", "test_x_test_per_s"} <= set(table.columns)


def test_select_and_subset_classes() -> None:
    labels = np.array([3, 1, 3, 5, 1, 5, 5])
    idx, renumbered = data.select_classes(labels, [5, 1])
    assert idx.tolist() == [1, 3, 4, 5, 6] and renumbered.tolist() == [0, 1, 0, 1, 1]
    sub = data.per_class_subset(labels, 2, seed=0)
    assert np.bincount(labels[sub]).tolist() == [0, 2, 0, 2, 0, 2]


@pytest.mark.trains
def test_cached_weights_train_once_and_reload(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    x = nets.images_tensor(np.random.default_rng(0).integers(0, 255, size=(16, 28, 28)), 255.0)
    y = torch.arange(16) % 2
    calls = []

    def train(m):
        calls.append(1)
        return training.fit(m, x, y, training.classification_loss, 1, batch_size=8)

    a, was_cached_a = cache.weights("cnn", nets.SmallCNN(2, 8), train, "k")
    b, was_cached_b = cache.weights("cnn", nets.SmallCNN(2, 8), train, "k")
    assert len(calls) == 1 and (was_cached_a, was_cached_b) == (False, True)
    np.testing.assert_allclose(training.predict(a, x)[1], training.predict(b, x)[1])
    assert len(list((tmp_path / "models").glob("cnn-*.pt"))) == 1
    # both carry their entry's identity, so features are keyed without reading the weights; a rebuilt entry (removed,
    # trained again) is another model
    assert cache.identity(a) == cache.identity(b) == cache.model_key(b) and cache.identity(a) is not None
    fresh = nets.SmallCNN(2, 8)
    assert cache.model_key(fresh) == cache.model_digest(fresh)  # unmarked: the digest of its weights
    next(iter((tmp_path / "models").glob("cnn-*.pt"))).unlink()
    c, _ = cache.weights("cnn", nets.SmallCNN(2, 8), train, "k")
    assert len(calls) == 2 and cache.identity(c) != cache.identity(a)


def test_features_are_cached_by_weights_and_inputs(tmp_path, monkeypatch) -> None:
    from repro.rmd import features

    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    calls = []

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 3)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            calls.append(len(x))
            return self.lin(x), self.lin(x) * 2

    rng = np.random.default_rng(0)
    x = lambda n: torch.as_tensor(rng.normal(size=(n, 4)), dtype=torch.float32)
    d = features.Direction("toy", "image", "A", "B", x(8), np.r_[0, 1].repeat(4), x(6), np.zeros(6), x(4),
                           np.r_[0, 1, 0, 1], x(3), np.array(["b"] * 3))  # fmt: skip
    torch.manual_seed(0)
    model = Encoder()
    first = features.extract(d, features.Embedder(model, None))
    assert calls == [8, 7]  # training rows, then the 4 + 3 test rows (no probe: the OOD training rows are unused)
    again = features.extract(d, features.Embedder(model, None))
    assert calls == [8, 7] and np.array_equal(again.test, first.test) and np.array_equal(again.logits, first.logits)
    with torch.no_grad():
        model.lin.bias += 1.0  # other weights: the entry does not apply
    moved = features.extract(d, features.Embedder(model, None))
    assert calls == [8, 7, 8, 7] and np.allclose(moved.test, first.test + 1.0)
    assert len(list((tmp_path / "features").glob("rmd-image-*.npz"))) == 2


def test_rmd_is_the_sum_of_its_discriminant_terms(gaussian_data) -> None:
    x, y, z = gaussian_data
    betas, terms = scores.discriminant_contributions(x, y, z)
    assert betas.shape == (2,) and terms.shape == (40, 2)  # K = 3 classes: K - 1 = 2 directions
    np.testing.assert_allclose(terms.sum(axis=1), metrics.mahalanobis_scores(x, y, z).rmd, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("hyperplane", [False, True])
def test_rmd_from_all_discriminant_directions_is_rmd(hyperplane: bool) -> None:
    """RMD_m at m = K - 1 equals RMD (also when the features lie in a hyperplane, as mean-pooled MiniLM features do);
    fewer directions give a different score."""
    rng = np.random.default_rng(3)
    y = np.repeat(np.arange(6), 50)
    x = rng.normal(size=(300, 12)) + 2 * rng.normal(size=(6, 12))[y]
    z = 2 * rng.normal(size=(80, 12))
    if hyperplane:
        normal = np.ones(12) / np.sqrt(12)
        x, z = x - np.outer(x @ normal, normal) + 1.0, z - np.outer(z @ normal, normal) + 1.0
    by_m = scores.rmd_by_directions(x, y, z, [1, 2, 5, 40])
    assert sorted(by_m) == [1, 2, 5]  # capped at K - 1
    np.testing.assert_allclose(by_m[5], metrics.mahalanobis_scores(x, y, z).rmd, rtol=1e-7, atol=1e-7)
    assert np.abs(by_m[1] - by_m[5]).max() > 1e-3


def test_squad_split_by_article_shares_no_source_text() -> None:
    from repro import data
    from repro.rmd import experiment as ex

    split = ex.squad_split(300, 150, 0)
    for domain, (train, test) in split.items():
        assert len(train) == 300 and len(test) == 150 and not set(train) & set(test)
        groups = data.squad_question_groups(domain)
        group_of = {q: i for i, g in enumerate(groups) for q in g}
        assert not {group_of[q] for q in train} & {group_of[q] for q in test}, domain


def test_clp_probes_are_class_balanced() -> None:
    rng = np.random.default_rng(1)
    labels = np.r_[np.zeros(900, int), np.ones(30, int)]
    idx = scores.balanced_bootstrap(labels, 50, rng)
    assert np.bincount(labels[idx]).tolist() == [50, 50]


def test_a_weighted_probe_is_the_probe_on_repeated_rows() -> None:
    """inlier_mass fits each CLP probe on the drawn rows once, weighted by their multiplicity: the same loss as the
    bootstrap's repeated rows (and the same standardization), so the same probabilities up to the solver's tolerance."""
    rng = np.random.default_rng(2)
    labels = np.repeat(np.arange(4), 25)
    x = rng.normal(size=(100, 5)) + labels[:, None]
    counts = np.bincount(scores.balanced_bootstrap(labels, 60, rng), minlength=100)
    drawn = counts > 0
    weighted = scores.linear_probe(x[drawn], labels[drawn], weights=counts[drawn])
    repeated = scores.linear_probe(np.repeat(x, counts, axis=0), np.repeat(labels, counts))
    z = rng.normal(size=(30, 5)) * 2
    np.testing.assert_allclose(weighted.predict_proba(z), repeated.predict_proba(z), atol=2e-3)


def test_rmd_at_one_gaussian_is_exactly_zero_and_has_auroc_one_half() -> None:
    """At K = 1 the class Gaussian is the background Gaussian: both computed by the same arithmetic, RMD is exactly 0
    (no rounding noise for an AUROC to rank)."""
    rng = np.random.default_rng(0)
    x, z = rng.normal(size=(600, 32)) * 3 + 1, rng.normal(size=(200, 32)) * 3
    one = metrics.mahalanobis_scores(x, np.zeros(600), z)
    assert np.all(one.rmd == 0.0) and metrics.auroc(np.arange(200) % 2, one.rmd) == 0.5
    three = metrics.mahalanobis_scores(x, np.arange(600) % 3, z)
    assert np.abs(three.rmd).max() > 1.0  # real differences are kept


def test_register_plans_each_near_direction_at_its_k() -> None:
    from repro.params import resolve
    from repro.rmd import claims as C

    p = resolve({"profile": "default"}, C.SPEC)
    default = C.near_directions(p)
    k_tasks, domains = p["task_classes"], len(p["text_ood_domains"])
    assert [(n.setting, n.k) for n in default] == [("text-articles", p["article_classes"]), ("text-tasks", k_tasks)] + [
        ("text-domain", 3)
    ] * domains + [("image-near", 5)] * 2 + [("image-flip", 10)]
    # K >= 50 (or CIFAR-10's K = 10 on images) claims the paper's regime, labelled so only if the computed criterion
    # passes; 32 articles and 5 image classes do not
    assert [n.regime().kind for n in default] == ["miniature", "paper"] + ["miniature"] * (domains + 2) + ["paper"]
    assert "59 discriminant directions" in default[1].regime().tolerance
    paper = C.near_directions(resolve({"profile": "paper"}, C.SPEC))
    assert [(n.tag, n.k) for n in paper] == [
        ("CLINC150 in-scope → out-of-scope", 150),
        ("CIFAR-10 → CIFAR-100", 10),
        ("CIFAR-100 → CIFAR-10", 100),
    ]
    assert all(n.regime().kind == "paper" for n in paper)
    planned = C.claims(resolve({"profile": "paper"}, C.SPEC))
    colab = [c for c in planned.values() if c.paper_values]  # the authors' colab is CIFAR-100 -> CIFAR-10 only
    assert {c.claim.split(": ")[-1] for c in colab} == {"CIFAR-100 → CIFAR-10"}


def test_near_row_causes_follow_the_sweep_of_real_classes() -> None:
    import pandas as pd

    from repro import stats
    from repro.params import resolve
    from repro.rmd import claims as C
    from repro.rmd import experiment as ex
    from repro.verdict import judge

    p = resolve({"profile": "default"}, C.SPEC)
    planned = C.claims(p)
    wiki = C.near_directions(p)[0].tag
    key = f"rmd_beats_md|{wiki}|pretrained"
    row = pd.Series({"setting": "text-articles", "K": p["article_classes"]})

    def cause(low: float, high: float, key: str = key, row: pd.Series = row, features: str = "pretrained") -> dict:
        slope = stats.Interval((low + high) / 2, low, high, "bootstrap")
        res = ex.Results(*[None] * 2, {"text-articles": slope}, *[None] * 6, 100, 0)
        return ex._contrast_cause(planned[key], "rmd_beats_md", features, row, res)

    grows = cause(0.01, 0.03)
    assert grows["why"][0] == "regime" and grows["sweep"].table == "class_sweep" and grows["sweep"].column == "K"
    judged = judge(planned[key], -0.05, (-0.08, -0.02), "t in articles", **grows)
    assert judged["why"].startswith("regime: ") and (judged["measured_by"], judged["varies"]) == ("class_sweep", "K")
    # a sweep that widens the gap, or does not tell, leaves the cause unknown and says so
    for low, high in ((-0.03, -0.01), (-0.01, 0.01)):
        judged = judge(planned[key], -0.05, (-0.08, -0.02), "t in articles", **cause(low, high))
        assert judged["why"].startswith("unknown: tested at classes K = 32 (paper 150); the sweep of classes K")
    # no sweep of real classes with fine-tuned features, nor on the images (sub-clusters are not classes): unknown
    fine = f"rmd_beats_md|{wiki}|finetuned"
    assert cause(0.01, 0.03, fine, row, "finetuned")["why"][0] == "unknown"
    image = "rmd_beats_md|group A → group B|pretrained"
    assert cause(0.01, 0.03, image, pd.Series({"setting": "image-near", "K": 5}))["why"][0] == "unknown"


def test_class_sweep_refits_on_subsets_of_real_classes_and_its_full_k_is_the_plain_fit() -> None:
    """Every fit uses Ledoit-Wolf (defined at every K): the full K is the plain fit under that estimator."""
    from repro.rmd import experiment as ex
    from repro.rmd.features import Direction

    rng = np.random.default_rng(0)
    k, per, dim = 8, 30, 12
    means = rng.normal(size=(k + 4, dim)) * 3
    y_train, y_test = np.repeat(np.arange(k), per), np.repeat(np.arange(k + 4), 10)
    x_train = means[y_train] + rng.normal(size=(y_train.size, dim))
    x_test = means[y_test] + rng.normal(size=(y_test.size, dim))
    in_rows = y_test < k
    d = Direction(
        "text-articles", "text", "8 classes", "4 others", None, y_train, None, np.zeros(0, int), None,
        y_test[in_rows], None, np.asarray([f"c{c}" for c in y_test[~in_rows]]), (),
        np.r_[y_test[in_rows], y_test[~in_rows]], "articles",
    )  # fmt: skip
    test = np.r_[x_test[in_rows], x_test[~in_rows]]
    feats = {
        ("text-articles", "8 classes", "pretrained", 0): ex.Feats(
            x_train, np.zeros((0, dim)), test, None, 1.0, y_train, np.zeros(0, int)
        )
    }
    inputs = ex.Inputs([d], None)
    rows, kept = ex.class_sweep(inputs, feats, [0], seed=0)
    assert sorted(rows["K"].unique()) == [2, 4, 8] and (rows.groupby("K").size().to_dict() == {2: 5, 4: 5, 8: 1})
    full = metrics.mahalanobis_scores(x_train, y_train, test, ridge="ledoit-wolf")
    (plain,) = rows[rows["K"] == 8].itertuples()
    assert (
        abs(plain.RMD - metrics.auroc(d.is_ood, full.rmd)) < 1e-12
        and abs(plain.MD - metrics.auroc(d.is_ood, full.md)) < 1e-12
    )
    for k_, keep, md, rmd in kept["8 classes"]:  # every OOD row stays; in-distribution rows of the chosen classes
        assert keep[len(d.test_in_y) :].all() and keep[: len(d.test_in_y)].sum() == 10 * k_
    iv = ex.class_slope(inputs, kept, "text-articles", 200, 0)
    means_k = rows.groupby("K")["gain"].mean()
    x = np.log2(means_k.index.to_numpy(float))
    assert abs(iv.estimate - np.polyfit(x, means_k.to_numpy(), 1)[0]) < 1e-9 and iv.low <= iv.estimate <= iv.high
    assert "articles" in iv.method


def test_half_distances_pick_each_halfs_own_nearest_class() -> None:
    from repro.rmd import scores

    rng = np.random.default_rng(1)
    x, y, z = rng.normal(size=(300, 6)), np.arange(300) % 3, rng.normal(size=(40, 6)) * 2
    lead, trail = scores.half_distances(x, y, z)
    means, cov = scores.shared_covariance(x, y)
    vals, vecs = np.linalg.eigh(cov)
    vecs = vecs[:, np.argsort(vals)[::-1]] / np.sqrt(np.sort(vals)[::-1])
    for i in range(len(z)):  # direct: per class, the sum over each half of squared whitened offsets; then the min
        per_class = [((z[i] - m) @ vecs) ** 2 for m in means]
        assert abs(lead[i] - min(t[:3].sum() for t in per_class)) < 1e-9
        assert abs(trail[i] - min(t[3:].sum() for t in per_class)) < 1e-9
    _, terms = scores.eigen_contributions(x, y, z)  # the old reading: both halves of the full MD's nearest class
    assert np.all(lead <= terms[:, :3].sum(1) + 1e-9) and np.any(lead < terms[:, :3].sum(1) - 1e-6)


def test_the_smoke_minilm_is_the_first_layers_of_the_whole_one(tmp_path, monkeypatch) -> None:
    from transformers import AutoModel, AutoTokenizer

    from repro import pretrained

    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    whole_path, cut_path = pretrained.minilm_path(), pretrained.minilm_path(n_layers=2)
    assert cut_path == tmp_path / "models" / "all-minilm-l6-v2-2layers"
    whole, cut = (AutoModel.from_pretrained(p).eval() for p in (whole_path, cut_path))
    assert whole.config.num_hidden_layers == 6 and cut.config.num_hidden_layers == 2 and len(cut.encoder.layer) == 2
    tokens = AutoTokenizer.from_pretrained(cut_path)(
        ["a question about rivers", "why?"], padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        after_two = whole(**tokens, output_hidden_states=True).hidden_states[2]
        torch.testing.assert_close(cut(**tokens).last_hidden_state, after_two, rtol=0, atol=1e-6)
    assert pretrained.minilm_path(n_layers=2) == cut_path  # made once, then found


def test_inputs_the_encoder_cannot_tell_apart_are_kept_once() -> None:
    from repro import pretrained
    from repro.rmd import experiment as ex

    prefix = "Read the dialogue and answer the question about it. " * 12  # over 64 tokens on its own
    texts = [prefix + "Who left first?", prefix + "Who came back?", "Who left first?", "who left first?", "🎬🍿"]
    kept = ex.distinct_to_encoder(texts, pretrained.minilm_path())
    # the two long inputs differ only after the 64th token; MiniLM lower-cases; emoji alone reads as [UNK] once
    assert kept == [texts[0], texts[2], texts[4]]


def test_each_seed_draws_its_own_training_rows_on_the_same_test_rows() -> None:
    from repro.rmd import experiment as ex

    classes = {f"c{i}": [f"c{i} input {j}" for j in range(40)] for i in range(6)}
    one, two = (
        ex.class_direction("text-articles", classes, ("in", "out"), 3, 10, 5, seed=7, unit="articles", train_seed=s)
        for s in (7, 8)
    )
    assert one.test_in_x == two.test_in_x and one.test_ood_x == two.test_ood_x  # classes and test rows: drawn once
    assert one.in_classes == two.in_classes and np.array_equal(one.train_y, two.train_y)
    assert one.train_x != two.train_x and set(one.train_x) & set(two.train_x)  # a redraw, from one pool
    assert not set(one.train_x + two.train_x) & set(one.test_in_x + one.test_ood_x)  # never a test row
    split = {s: ex.squad_split_articles(30, 20, seed=0, train_seed=s) for s in (0, 1)}
    for domain in split[0]:
        (tr0, te0, art0), (tr1, te1, art1) = split[0][domain], split[1][domain]
        assert te0 == te1 and art0 == art1 and tr0 != tr1 and not set(tr0 + tr1) & set(te0)


@pytest.mark.trains
def test_a_frozen_trunk_gives_the_whole_encoders_outputs_and_trains_only_the_top_layers() -> None:
    import torch

    from repro import pretrained

    path = pretrained.minilm_path(n_layers=2)
    torch.manual_seed(0)
    whole = pretrained.EncoderClassifier(path, 3).eval()
    top = pretrained.EncoderClassifier(path, 3, train_top=1)
    top.load_state_dict(whole.state_dict())
    top.eval()
    texts = ["a short one", "a much longer question about the rivers of a country far away", "word " * 90, "hi"]
    with torch.no_grad():
        for a, b in zip(whole(texts), top(texts)):  # features, then logits; padding differs, the masks hide it
            assert torch.allclose(a, b, atol=1e-5)
    key = (str(path), 1, 64)
    assert set(pretrained._TRUNK_STATES[key]) >= set(texts)  # each text's trunk states computed once
    assert len(pretrained._TRUNK_STATES[key]["hi"]) == 3  # [CLS] hi [SEP]: unpadded
    top.train()
    assert not top.encoder.encoder.layer[0].training and top.encoder.encoder.layer[1].training
    top(texts)[1].sum().backward()
    assert top.encoder.embeddings.word_embeddings.weight.grad is None
    assert all(p.grad is None for p in top.encoder.encoder.layer[0].parameters())
    assert all(p.grad is not None for p in top.encoder.encoder.layer[1].parameters())
    assert top.head.weight.grad is not None
    with pytest.raises(ValueError, match="has 2 layers"):
        pretrained.EncoderClassifier(path, 3, train_top=3)


def test_per_class_gaussian_score_is_the_nearest_class_log_likelihood() -> None:
    from scipy.stats import multivariate_normal
    from sklearn.covariance import LedoitWolf

    from repro.rmd.experiment import per_class_gaussian_score

    rng = np.random.default_rng(0)
    train = np.r_[rng.normal(0, 1, (40, 3)), rng.normal(4, 0.2, (40, 3))]
    y = np.repeat([0, 1], 40)
    test = rng.normal(2, 2, (25, 3))
    from repro.rmd.experiment import PER_CLASS_FLOOR

    fits = [LedoitWolf().fit(train[y == c]) for c in (0, 1)]
    floor = PER_CLASS_FLOOR * np.var(train, axis=0).mean() * np.eye(3)
    # -2 log N(x; mu_c, S_c) = maha + logdet + d log(2 pi): the constant drops out of the minimum
    direct = np.min(
        [
            -2 * multivariate_normal(f.location_, f.covariance_ + floor).logpdf(test) - 3 * np.log(2 * np.pi)
            for f in fits
        ],
        axis=0,
    )
    assert np.allclose(per_class_gaussian_score(train, y, test), direct, rtol=1e-9)
    # a class of one row, or a feature constant within a class, stays finite
    one = np.r_[train, [[9.0, 9.0, 9.0]]]
    assert np.isfinite(per_class_gaussian_score(one, np.r_[y, 2], test)).all()


def test_fixed_rows_effect_pairs_k_with_half_rows_against_half_k_with_all_rows() -> None:
    import pandas as pd

    from repro.rmd.experiment import fixed_rows_effect

    table = pd.DataFrame(
        {
            "setting": ["s"] * 3,
            "K": [8, 4, 2],
            "rows_all": [192, 96, 48],
            "gain_all": [0.30, 0.20, 0.05],
            "rows_half": [96, 48, 24],
            "gain_half": [0.25, 0.10, 0.00],
        }
    )
    (row,) = fixed_rows_effect(table).itertuples()
    assert row.doublings == 2
    # (K 4 half - K 2 all) = 0.05, (K 8 half - K 4 all) = 0.05; per class fixed: 0.15 and 0.10
    assert row.per_doubling_fixed_total == pytest.approx(0.05)
    assert row.per_doubling_fixed_per_class == pytest.approx(0.125)


def test_validation_split_holds_out_a_share_of_every_class_and_never_a_whole_class() -> None:
    from repro.rmd.features import validation_split

    y = np.repeat(np.arange(4), [10, 5, 2, 1])
    kept, held = validation_split(y, 0.2, seed=3)
    assert np.array_equal(np.sort(np.r_[kept, held]), np.arange(len(y)))
    assert [int((y[held] == c).sum()) for c in range(4)] == [2, 1, 1, 0]  # round(0.2 n), at least 1, never all
    assert set(y[kept]) == {0, 1, 2, 3}
    again, other = validation_split(y, 0.2, seed=3), validation_split(y, 0.2, seed=4)
    assert np.array_equal(again[1], held) and not np.array_equal(other[1], held)


def test_the_rate_walk_steps_past_an_end_until_the_best_is_interior(monkeypatch) -> None:
    """A validation accuracy peaked at 1e-3: the grid [1e-5, 1e-4] walks up twice (1e-3, 1e-2), stops interior."""
    from repro.rmd import features

    calls = []

    def accuracy(d, budget, seed) -> float:
        calls.append(budget.cnn_lr)
        return 1.0 - abs(np.log10(budget.cnn_lr) + 3.0) / 10

    monkeypatch.setattr(features, "validation_accuracy", accuracy)
    monkeypatch.setattr(features, "rate_field", lambda d, b: "cnn_lr")
    plan = features.Budget(8, 1, 1, 1, "local", "x")
    tried = features.tuned_rates(None, plan, 0, [1e-4, 1e-5])
    assert np.allclose(list(tried), [1e-5, 1e-4, 1e-3, 1e-2]) and np.isclose(features.best_rate(tried), 1e-3)
    assert len(calls) == 4
    calls.clear()  # peaked far above the grid: the walk stops after two steps, the best still at the end
    monkeypatch.setattr(features, "validation_accuracy", lambda d, b, s: calls.append(b.cnn_lr) or b.cnn_lr)
    tried = features.tuned_rates(None, plan, 0, [1e-5, 1e-4], walk=2)
    assert np.isclose(max(tried), 1e-2) and np.isclose(features.best_rate(tried), max(tried)) and len(calls) == 4
    assert features.tuned_rates(None, plan, 0, [3e-4]) == {3e-4: pytest.approx(np.nan, nan_ok=True)}
    assert features.best_rate({1e-3: 0.5, 1e-4: 0.5, 1e-2: 0.4}) == 1e-4  # a tie goes to the smaller rate


def test_format_leakage_counts_shared_openings_and_scores_a_character_detector() -> None:
    import pandas as pd

    from repro.rmd.experiment import Inputs, format_leakage
    from repro.rmd.features import Direction

    train = ["What is the capital of France?", "What is a prime number?", "Name the largest ocean."]
    test_in = ["What is the tallest tree?", "Name the longest river.", "Which planet is red?"]
    test_ood = ["((([]))) balanced?", "7 3 9 1 sort these digits", "What is 12 times 4?"]
    d = Direction(
        "text-tasks", "text", "A", "B", train, np.array([0, 0, 1]), [], np.array([]), test_in, np.array([0, 1, 0]),
        test_ood, np.array(["x", "y", "z"]),
    )  # fmt: skip
    aurocs = pd.DataFrame(
        [{"setting": "text-tasks", "in_dist": "A", "features": "pretrained", "score": "RMD", "auroc": 0.7}]
    )
    row = format_leakage(Inputs([d], torch.zeros(0)), aurocs).iloc[0]
    assert row["id_opening_seen"] == pytest.approx(2 / 3) and row["ood_opening_seen"] == pytest.approx(1 / 3)
    assert row["rmd_auroc"] == 0.7
    # the detector by hand: 1 - the highest cosine similarity to a training row, ranked by metrics.auroc
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 3), sublinear_tf=True).fit(train)
    a, b = vec.transform(test_in + test_ood).toarray(), vec.transform(train).toarray()
    direct = [1 - max(float(u @ v) for v in b) for u in a]
    assert row["surface_auroc"] == pytest.approx(metrics.auroc(np.r_[0, 0, 0, 1, 1, 1], np.array(direct)))
    assert row["surface_auroc"] > 0.5  # the digit and bracket rows share few character n-grams with the training rows


def test_the_label_free_text_encoder_is_the_same_model_whatever_ran_before() -> None:
    """Its features are cached by the model's digest: a head drawn from the global generator's state (trained models
    in a cold run, cached ones in a re-run) would miss every cached feature."""
    from repro import pretrained
    from repro.rmd import features

    budget = features.Budget(8, 1, 1, 1, "local", pretrained.minilm_path(n_layers=2))
    torch.manual_seed(1)
    first = features.label_free_text_encoder(budget).key
    torch.rand(1000)  # what a training run would have drawn
    assert features.label_free_text_encoder(budget).key == first
    torch.manual_seed(1)
    torch.rand(1000)
    drawn = torch.rand(1)
    torch.manual_seed(1)
    torch.rand(1000)
    features.label_free_text_encoder(budget)
    assert torch.equal(torch.rand(1), drawn)  # the global generator is left as it was


def test_class_trend_check_fits_use_each_subsets_leading_components() -> None:
    """The check fits project on the top principal components of the fit's own training rows (fewer than the rows)
    and apply maximum-likelihood or Ledoit-Wolf MD/RMD there: compared with the projection written out."""
    from repro.rmd import experiment as ex

    rng = np.random.default_rng(3)
    x, y, z = rng.normal(size=(40, 50)), np.arange(40) % 2, rng.normal(size=(7, 50))
    dims = min(ex.CLASS_CHECK_DIMS, 40 - 2 - 1)  # 32: fewer than the 40 rows
    centred = x - x.mean(axis=0)
    axes = np.linalg.svd(centred, full_matrices=False)[2][:dims]
    for fit, ridge in (("ml_leading", 0.0), ("lw_leading", "ledoit-wolf")):
        got = ex._sweep_scores(x, y, z, fit)
        want = metrics.mahalanobis_scores(centred @ axes.T, y, (z - x.mean(axis=0)) @ axes.T, ridge=ridge)
        assert np.allclose(got.md, want.md) and np.allclose(got.rmd, want.rmd)
    assert not np.allclose(ex._sweep_scores(x, y, z, "ml_leading").md, ex._sweep_scores(x, y, z, "lw_leading").md)
    lw = ex._sweep_scores(x, y, z, "ledoit-wolf")
    assert np.allclose(lw.md, metrics.mahalanobis_scores(x, y, z, ridge="ledoit-wolf").md)


def test_class_trend_row_is_decided_only_where_both_fits_agree() -> None:
    from repro import stats
    from repro.params import resolve
    from repro.rmd import claims as C
    from repro.rmd import experiment as ex
    from repro.verdict import judge

    p = resolve({"profile": "default"}, C.SPEC)
    claim = C.claims(p)["class_trend|text-articles"]
    main = stats.Interval(0.021, 0.006, 0.035, "slope in articles")

    def row(low: float, high: float) -> dict:
        rises = {"text-articles": stats.Interval(0.03, 0.01, 0.05, "slope, ML")}
        checks = {"ml_leading": rises, "lw_leading": {"text-articles": stats.Interval((low + high) / 2, low, high, "")}}
        res = ex.Results(*[None] * 12, checks)
        return ex._fits_agree(judge(claim, main.estimate, main), claim, res, "text-articles")

    agree = row(0.01, 0.05)
    assert agree["decision"] == "held" and "the check fits agree" in agree["test"]
    assert "Ledoit-Wolf on 32 leading components held at +0.030" in agree["test"]
    for low, high in ((-0.04, -0.005), (-0.02, 0.01)):  # one check fit falls, or does not tell: inconclusive
        split = row(low, high)
        assert split["decision"] == "inconclusive" and split["why"].startswith("unknown: held under Ledoit-Wolf")
        assert "maximum likelihood on 32 leading components held" in split["why"]


def test_far_rows_are_tests_only_where_md_detects_the_far_classes() -> None:
    import pandas as pd

    from repro.params import resolve
    from repro.rmd import claims as C
    from repro.rmd import experiment as ex
    from repro.verdict import judge

    p = resolve({"profile": "default"}, C.SPEC)
    planned = C.claims(p)
    far = [k for k in planned if k.startswith("far|")]
    # the task setting, the first image-near direction, the far pair both ways
    assert [k.split("|")[1] for k in far] == [
        f"{p['task_classes']} BIG-bench tasks → held-out BIG-bench tasks",
        "group A → group B",
        "Fashion-MNIST → digits",
        "digits → Fashion-MNIST",
    ]
    by_class = pd.DataFrame(
        {
            "in_dist": ["a"] * 4,
            "features": ["pretrained"] * 4,
            "near": [False, False, False, True],
            "MD": [0.95, 0.80, 0.40, 0.10],  # far mean 0.717, one far class below chance; the near one is not counted
            "gain": [0.0, 0.1, 0.4, 0.5],
        }
    )
    claim = planned[far[0]]
    blind = ex._md_ineffective(claim, by_class, "a", "pretrained")
    assert blind["decision"] == "untestable here" and "mean AUROC 0.717 < 0.9" in blind["why"]
    assert "below chance on 1 of the 3" in blind["why"]
    by_class.loc[:2, "MD"] = [0.95, 0.92, 0.90]
    assert ex._md_ineffective(claim, by_class, "a", "pretrained") is None
    # a held RMD > MD row says how much of its gain sits on classes MD ranks below chance (the near one here)
    near_claim = planned[next(k for k in planned if k.startswith("near|"))]
    held = judge(near_claim, 0.1, (0.05, 0.15), "paired AUC over tasks")
    noted = ex._held_on_md_failure(held, by_class, "a", "pretrained", "near")
    assert noted["why"].startswith("held, but MD ranks 1 of these 1 OOD classes below chance: RMD − MD is +0.500")
    assert ex._held_on_md_failure(held, by_class, "a", "pretrained", "far") is held  # no far class below chance now


def test_task_pool_is_kept_by_its_inputs_and_read_back(tmp_path, monkeypatch) -> None:
    """A cached run reads the filtered task pool from the data folder instead of filtering and tokenizing again;
    another minimum of inputs is another entry."""
    from repro.rmd import experiment as ex

    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    calls = []

    def tasks(min_inputs: int) -> dict:
        calls.append(min_inputs)
        return {"a": {"inputs": ["x y", "z"]}, "b": {"inputs": ["w"] * min_inputs}}

    monkeypatch.setattr(ex.data, "bigbench_tasks", tasks)
    pool = ex._task_pool.__wrapped__
    first, again = pool(3, None), pool(3, None)
    assert first == again == {"a": ["x y", "z"], "b": ["w"] * 3} and calls == [3]
    assert pool(4, None)["b"] == ["w"] * 4 and calls == [3, 4]
    assert len(list((tmp_path / "features").glob("rmd-task-pool-*.json"))) == 2


def test_an_rmd_row_that_ledoit_wolf_decides_otherwise_says_so() -> None:
    import pandas as pd

    from repro.rmd import experiment as ex

    est = pd.DataFrame(
        {
            "in_dist": ["a", "a"],
            "features": ["pretrained"] * 2,
            "estimator": ["maximum likelihood", "ledoit-wolf"],
            "delta": [0.021, 0.061],
            "ci_low": [-0.009, 0.014],
            "ci_high": [0.051, 0.107],
            "decision": ["inconclusive", "held"],
        }
    )
    res = ex.Results(*[None] * 13, est)
    row = {"decision": "inconclusive", "why": "to decide at this estimate (held): about 2.1× the articles"}
    noted = ex._estimator_note(row, res, "a", "pretrained")
    assert noted["why"] == (
        "to decide at this estimate (held): about 2.1× the articles; under Ledoit-Wolf it is held, +0.061 "
        "[+0.014, +0.107] (table gains_by_estimator): the covariance estimator decides this row"
    )
    assert ex._estimator_note({**row, "decision": "held"}, res, "a", "pretrained")["why"] == row["why"]
