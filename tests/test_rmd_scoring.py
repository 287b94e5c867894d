"""The RMD chapter's shared AUC draws against the direct calls they replaced: the same intervals, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from repro import cache, metrics, stats
from repro.rmd import experiment as ex
from repro.rmd import scores
from repro.rmd.features import Direction, Feats


def _direction(rng: np.random.Generator, clustered: bool, n_in: int = 120, n_ood: int = 80) -> Direction:
    """A direction of 3 classes with synthetic test rows; text-like clusters of 10 rows when `clustered`."""
    units = np.r_[np.arange(n_in) // 10, 100 + np.arange(n_ood) // 10] if clustered else None
    return Direction(
        "text-tasks" if clustered else "image-near",
        "text" if clustered else "image",
        "A",
        "B",
        None,
        np.arange(90) % 3,
        None,
        np.arange(30) % 2,
        None,
        np.arange(n_in) % 3,
        None,
        np.repeat(["x", "y"], n_ood // 2),
        ("a", "b", "c"),
        units,
        "tasks" if clustered else "items",
    )


def _scored(rng: np.random.Generator, d: Direction, seeds: int = 3) -> dict:
    """Scores of both feature types, with ties (MSP saturates) in one of them."""
    out = {}
    for kind in ex.KINDS:
        by = {name: rng.normal(size=(seeds, d.is_ood.size)) + 0.8 * d.is_ood for name in ex.SCORES}
        by["MSP"] = np.round(by["MSP"], 1)
        out[(d.setting, d.in_dist, kind)] = ex.Scored(d.is_ood, by)
    return out


def _old_auc_contrast(d: Direction, terms: list, n_boot: int, seed: int, keep: np.ndarray | None = None):
    """auc_contrast as first written: the library's direct calls, nothing shared."""
    keep = np.ones(len(d.is_ood), bool) if keep is None else keep
    y = d.is_ood[keep]
    terms = [(w, np.atleast_2d(a)[:, keep]) for w, a in terms]
    if d.test_units is None:
        return stats.seeds_and_items_contrast(y, terms, n_resamples=n_boot, seed=seed)
    clusters = d.test_units[keep]
    weights = stats.unit_weights(clusters, y, n_resamples=n_boot, seed=seed)
    per_seed, draws = [], []
    for s in range(terms[0][1].shape[0]):
        aucs = [(w, stats.WeightedAuc(y, a[s])) for w, a in terms]
        per_seed.append(sum(w * auc.many(np.ones((1, y.size)))[0] for w, auc in aucs))
        draws.append(sum(w * auc.many(weights) for w, auc in aucs))
    g = int(np.unique(clusters).size)
    words = f"{'paired ' if len(terms) > 1 else ''}AUC over {y.size:,} test rows in {g:,} {d.unit} (within class)"
    return stats.clustered_interval(
        np.asarray(per_seed), np.stack(draws, axis=1), clusters=clusters, strata=y, unit=d.unit, words=words
    )


@pytest.mark.parametrize("clustered", [False, True])
def test_auc_contrast_and_tables_equal_the_direct_calls(clustered: bool) -> None:
    rng = np.random.default_rng(0)
    d = _direction(rng, clustered)
    scored = _scored(rng, d)
    inputs = ex.Inputs([d], None)
    sc = scored[(d.setting, d.in_dist, "finetuned")]
    keep = np.r_[np.ones(120, bool), d.test_ood_class == "x"]
    for terms, cut in (
        ([(1.0, sc.by_score["RMD"]), (-1.0, sc.by_score["MD"])], None),
        ([(1.0, sc.by_score["MSP"])], None),
        ([(1.0, sc.by_score["RMD"]), (-1.0, sc.by_score["MSP"]), (0.5, sc.by_score["MD"])], keep),
    ):
        for _ in range(2):  # computed, then read back from the shared draws
            assert ex.auc_contrast(d, terms, 200, 4, cut) == _old_auc_contrast(d, terms, 200, 4, cut)
    table = ex.auroc_table(inputs, scored, 200, 4)
    for row in table.itertuples():
        rows = scored[(d.setting, d.in_dist, row.features)].by_score[row.score]
        iv = (
            _old_auc_contrast(d, [(1.0, rows)], 200, 4)
            if clustered
            else stats.seeds_and_items_auc(d.is_ood, rows, n_resamples=200, seed=4)
        )
        assert (row.auroc, row.ci_low, row.ci_high) == (iv.estimate, iv.low, iv.high)
        assert row.seed_min == min(metrics.auroc(d.is_ood, r) for r in rows)
    gains = ex.gain_table(inputs, scored, 200, 4)
    rmd_md = gains[(gains["features"] == "pretrained") & (gains["contrast"] == "RMD - MD")].iloc[0]
    pre = scored[(d.setting, d.in_dist, "pretrained")].by_score
    old = _old_auc_contrast(d, [(1.0, pre["RMD"]), (-1.0, pre["MD"])], 200, 4)
    assert (rmd_md["delta"], rmd_md["ci_low"], rmd_md["ci_high"]) == (old.estimate, old.low, old.high)
    assert rmd_md["test"].startswith(old.method)


@pytest.mark.parametrize("clustered", [False, True])
def test_seeds_with_their_own_draws_are_combined_by_what_they_share(clustered: bool) -> None:
    rng = np.random.default_rng(5)
    draws = [_direction(rng, clustered) for _ in range(3)]
    for j, x in enumerate(draws[1:], start=1):  # another draw of classes and rows: the same layout, other rows
        x.test_ood_class = np.roll(x.test_ood_class, 7 * j)
        x.test_in_y = np.roll(x.test_in_y, j)
        x.test_in_x = [f"row {j}"]
    if clustered:  # the second draw gives tasks 0-7 and 100-107 the other side: one pool, not drawn within sides
        draws[1].test_units = np.r_[100 + np.arange(120) // 10, np.arange(80) // 10]
    scores_ = {name: rng.normal(size=(3, draws[0].is_ood.size)) + 0.6 * draws[0].is_ood for name in ("RMD", "MD")}
    terms = [(1.0, scores_["RMD"]), (-1.0, scores_["MD"])]
    keep = lambda x: np.r_[np.ones(120, bool), x.test_ood_class == "x"]
    iv = ex.auc_contrast(draws, terms, 300, 2, keep)
    ys = [x.is_ood[keep(x)] for x in draws]
    units = [None if x.test_units is None else x.test_units[keep(x)] for x in draws]
    weights = (  # the direct formula: each seed resampled from seed 2 + j, or one cluster draw for all of them
        [stats.resample_weights(y.size, y, n_resamples=300, seed=2 + j) for j, y in enumerate(ys)]
        if not clustered
        else stats.unit_weights(units, ys, n_resamples=300, seed=2, clusters_within_strata=False)
    )
    per_seed, boots = [], []
    for j, x in enumerate(draws):
        aucs = [(w, stats.WeightedAuc(ys[j], a[j][keep(x)])) for w, a in terms]
        per_seed.append(sum(w * auc.many(np.ones((1, ys[j].size)))[0] for w, auc in aucs))
        with np.errstate(invalid="ignore", divide="ignore"):
            boots.append(sum(w * auc.many(weights[j]) for w, auc in aucs))
    per_seed, boots = np.asarray(per_seed), np.stack(boots, axis=1)
    boots = boots[np.isfinite(boots).all(axis=1)]  # a cluster draw that leaves a seed without OOD rows is left out
    direct = (
        stats.hierarchical_interval(per_seed, boots, shared_items=False)
        if not clustered
        else stats.clustered_interval(per_seed, boots, clusters=units, strata=ys, unit="tasks", sharing="clusters")
    )
    assert (iv.estimate, iv.low, iv.high) == pytest.approx((direct.estimate, direct.low, direct.high), abs=1e-12)
    assert "each of the 3 seeds its own draw of test rows" in iv.method
    assert ("drawn once for all of them" in iv.method) == clustered
    shared = ex.auc_contrast([draws[0]] * 3, terms, 300, 2, keep)  # one draw for every seed: one shared resample
    assert shared == ex.auc_contrast(draws[0], terms, 300, 2, keep) and "own draw" not in shared.method
    draws[2].test_ood_class = np.full(80, "y")  # a seed whose draw holds none of the kept OOD class is left out
    fewer = ex.auc_contrast(draws, terms, 300, 2, keep)
    assert fewer.estimate == pytest.approx(per_seed[:2].mean()) and "each of the 2 seeds" in fewer.method


def test_auc_draws_are_keyed_by_everything_they_depend_on() -> None:
    rng = np.random.default_rng(1)
    y = np.r_[np.zeros(50, int), np.ones(40, int)]
    rows = rng.normal(size=(2, 90)) + y
    first = ex.auc_draws(y, rows, 100, 0)
    assert np.array_equal(first[1], ex.auc_draws(y.astype(bool), rows, 100, 0)[1])  # the same resamples
    assert not np.array_equal(first[1], ex.auc_draws(y, rows, 100, 1)[1])  # another seed
    assert not np.array_equal(first[1], ex.auc_draws(y, rows + rng.normal(size=90) * 0.1, 100, 0)[1])
    clusters = np.arange(90) // 5
    assert not np.array_equal(first[1], ex.auc_draws(y, rows, 100, 0, clusters)[1])
    assert ex.auc_draws(y, rows, 150, 0)[1].shape == (150, 2)


def _feats(rng: np.random.Generator, d: Direction, dims: int = 6) -> Feats:
    means = rng.normal(size=(3, dims)) * 2
    train = means[d.train_y] + rng.normal(size=(d.train_y.size, dims))
    test = np.r_[means[d.test_in_y] + rng.normal(size=(d.test_in_y.size, dims)),
                 rng.normal(size=(d.test_ood_class.size, dims)) * 2]  # fmt: skip
    ood_train = rng.normal(size=(d.ood_train_y.size, dims)) * 2
    logits = rng.normal(size=(d.is_ood.size, 3))
    return Feats(train, ood_train, test, logits, 0.9, d.train_y, d.ood_train_y)


def test_covariance_table_equals_the_paired_bootstrap_of_each_change() -> None:
    rng = np.random.default_rng(2)
    d = _direction(rng, False)
    feats = {(d.setting, d.in_dist, kind, 7): _feats(rng, d) for kind in ex.KINDS}
    table = ex.covariance_table(ex.Inputs([d], None), feats, 7, [1e-2], 150)
    assert len(table) == 2 * 2 * 2  # kinds x (ridge, Ledoit-Wolf) x (MD, RMD)
    for row in table.itertuples():
        f = feats[(d.setting, d.in_dist, row.features, 7)]
        est = float(row.estimator) if row.estimator != "ledoit-wolf" else row.estimator
        other = metrics.mahalanobis_scores(f.train, f.train_y, f.test, ridge=est)
        base = metrics.mahalanobis_scores(f.train, f.train_y, f.test)
        name = row.score.lower()
        iv = stats.paired_bootstrap_diff(
            metrics.auroc, d.is_ood, getattr(other, name), getattr(base, name), n_resamples=150, seed=7
        )
        assert (row.change, row.ci_low, row.ci_high, row.test) == (iv.estimate, iv.low, iv.high, iv.method)


def test_clp_is_cached_by_its_inputs(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(60, 4)) + np.repeat(np.arange(3), 20)[:, None], np.repeat(np.arange(3), 20)
    ood = rng.normal(size=(10, 4))
    direct = scores.inlier_mass(x, y, range(2), ood, 2, 15, 5)
    assert np.array_equal(ex._inlier_mass(x, y, 2, ood, 2, 15, 5), direct)
    assert len(list((tmp_path / "features").glob("rmd-clp-*.npz"))) == 1
    assert np.array_equal(ex._inlier_mass(x, y, 2, ood, 2, 15, 5), direct)  # read back
    ex._inlier_mass(x, y, 2, ood, 2, 15, 6)  # another seed: another entry
    assert len(list((tmp_path / "features").glob("rmd-clp-*.npz"))) == 2
    assert cache.store("features") == tmp_path / "features"
    own = ex.stored("rmd-per-class", ex.per_class_gaussian_score, [ex.per_class_gaussian_score], x, y, ood)
    assert np.array_equal(own, ex.per_class_gaussian_score(x, y, ood))
    assert len(list((tmp_path / "features").glob("rmd-per-class-*.npz"))) == 1


def test_the_task_pool_is_read_once_per_encoder(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("REPRO_DATA", str(tmp_path))  # an empty cache: the pool is built here, not read from disk
    calls = []
    pool = {"t1": {"inputs": ["a", "b"]}, "t2": {"inputs": ["c", "d"]}}
    monkeypatch.setattr(ex.data, "bigbench_tasks", lambda n: calls.append(n) or pool)
    ex._task_pool.cache_clear()
    first = ex._task_pool(2, None)
    assert ex._task_pool(2, None) is first and calls == [2]
    assert first == {"t1": ["a", "b"], "t2": ["c", "d"]}
    ex._task_pool.cache_clear()


def _old_eigen_terms(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The whitened offsets as first computed: every (test row, class) difference projected on its own."""
    means, cov = scores.shared_covariance(x, y)
    vals, vecs = np.linalg.eigh(cov)
    order = np.argsort(vals)[::-1]
    vals, vecs = vals[order], vecs[:, order]
    keep = vals > vals[0] * 1e-10
    vals, vecs = vals[keep], vecs[:, keep]
    return vals, ((z[:, None, :] - means[None]) @ vecs / np.sqrt(vals)) ** 2


def _old_discriminant_terms(x: np.ndarray, y: np.ndarray, z: np.ndarray, m: int) -> np.ndarray:
    from scipy.linalg import eigh

    means, cov = scores.shared_covariance(x, y)
    ratios, vecs = eigh(np.cov(x, rowvar=False, bias=True), cov)
    keep = np.argsort(ratios)[::-1][:m]
    betas, vecs = ratios[keep] - 1.0, vecs[:, keep]
    to_class = ((z[:, None, :] - means[None]) @ vecs) ** 2
    to_all = ((z - x.mean(axis=0)) @ vecs) ** 2 / (1.0 + betas)
    return to_class - to_all[:, None, :]


@pytest.fixture
def wide_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """12 classes in 40 dimensions with a large common offset (as mean-pooled text features have), 600 test rows
    (more than one chunk of eigen terms), the last 200 OOD."""
    rng = np.random.default_rng(4)
    means = rng.normal(size=(12, 40)) + 5.0
    y = np.arange(480) % 12
    x = means[y] + rng.normal(size=(480, 40))
    z = np.r_[means[np.arange(400) % 12] + rng.normal(size=(400, 40)), rng.normal(size=(200, 40)) * 1.5 + 5.0]
    return x, y, z, np.r_[np.zeros(400, int), np.ones(200, int)]


def test_eigen_analysis_equals_the_per_class_projection(wide_data) -> None:
    x, y, z, is_ood = wide_data
    vals, terms = _old_eigen_terms(x, y, z)
    new_vals, nearest_terms, (lead, trail) = scores.eigen_analysis(x, y, z)
    assert np.array_equal(new_vals, vals)
    half = len(vals) // 2
    old_lead, old_trail = terms[:, :, :half].sum(2).min(1), terms[:, :, half:].sum(2).min(1)
    np.testing.assert_allclose(lead, old_lead, rtol=1e-11)
    np.testing.assert_allclose(trail, old_trail, rtol=1e-11)
    np.testing.assert_allclose(nearest_terms, terms[np.arange(600), terms.sum(2).argmin(1)], rtol=1e-9, atol=1e-12)
    for new, old in ((lead, old_lead), (trail, old_trail)):  # the same ranking, so the same AUROC to the bit
        assert metrics.auroc(is_ood, new) == metrics.auroc(is_ood, old)
    assert np.array_equal(scores.half_distances(x, y, z)[0], lead)
    assert np.array_equal(scores.eigen_contributions(x, y, z)[1], nearest_terms)


def test_rmd_by_directions_equals_the_per_class_projection(wide_data) -> None:
    x, y, z, is_ood = wide_data
    counts = [1, 3, 11]
    new = scores.rmd_by_directions(x, y, z, counts)
    old_terms = np.cumsum(_old_discriminant_terms(*scores.within_range(x, y, z), 11), axis=2)
    for m in counts:
        old = old_terms[:, :, m - 1].min(axis=1)
        np.testing.assert_allclose(new[m], old, rtol=1e-9, atol=1e-9 * np.abs(old).max())
        assert metrics.auroc(is_ood, new[m]) == metrics.auroc(is_ood, old)


def test_auc_draws_are_stored_by_their_inputs_and_read_back(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    rng = np.random.default_rng(5)
    y = np.r_[np.zeros(40, bool), np.ones(30, bool)]
    clusters = np.r_[np.arange(40) // 5, 100 + np.arange(30) // 5]
    rows = rng.normal(size=(3, y.size)) + y
    ex._AUC_DRAWS.clear()
    ex._WEIGHTS.clear()
    per_seed, draws = ex.auc_draws(y, rows, 60, 2, clusters)
    assert per_seed.shape == (3,) and draws.shape == (60, 3)
    assert np.allclose(per_seed, [metrics.auroc(y, r) for r in rows], rtol=0, atol=1e-12)
    assert len(list((tmp_path / "features").glob("rmd-auc-draws-*.npz"))) == 1
    ex._AUC_DRAWS.clear()  # a new process: the memo is empty, the stored entry is read, nothing is computed
    monkeypatch.setattr(ex.stats, "WeightedAuc", lambda *a: pytest.fail("computed again"))
    again = ex.auc_draws(y, rows, 60, 2, clusters)
    assert np.array_equal(again[0], per_seed) and np.array_equal(again[1], draws)
    monkeypatch.undo()
    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    ex._AUC_DRAWS.clear()
    other = ex.auc_draws(y, rows, 60, 3, clusters)  # another resampling seed: another entry, other draws
    assert len(list((tmp_path / "features").glob("rmd-auc-draws-*.npz"))) == 2
    assert not np.array_equal(other[1], draws) and np.array_equal(other[0], per_seed)
    ex._AUC_DRAWS.clear()
    ex._WEIGHTS.clear()


def _pool_draws(rng: np.random.Generator, effects: np.ndarray, seeds: int = 3, n_in: int = 20, per: int = 10):
    """Each seed's draw from one pool of tasks (effect per task): its own 20 in-distribution and 10 OOD tasks, its
    own rows, and its own shift of the OOD scores (training noise)."""
    out, rows = [], []
    for s in range(seeds):
        order = rng.permutation(effects.size)
        units = np.r_[np.repeat(order[:n_in], per), np.repeat(order[n_in:], per)]
        is_ood = np.arange(units.size) >= n_in * per
        score = effects[units] + rng.normal(0, 1, units.size) + (0.5 + rng.normal(0, 0.1)) * is_ood
        ood_names = np.asarray([f"t{t}" for t in units[n_in * per :]])
        out.append(Direction("text-tasks", "text", "A", "B", None, np.arange(n_in), None, None, [s],
                             np.repeat(np.arange(n_in), per), None, ood_names, (), units, "tasks"))  # fmt: skip
        rows.append(score)
    return out, np.stack(rows)


def test_the_pooled_interval_covers_a_redrawn_split_and_is_narrower_than_independent_seeds(
    tmp_path, monkeypatch
) -> None:
    """30 tasks, each seed its own split of them: the interval that draws the pool once for every seed covers the
    expected seed-mean AUC (estimated from 3,000 simulated runs) and is narrower than treating the seeds as
    independent replicates (sharing 'none')."""
    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    rng = np.random.default_rng(123)
    truth = np.mean(
        [np.mean([metrics.auroc(d.is_ood, r) for d, r in zip(*_pool_draws(rng, rng.normal(0, 0.5, 30)))])
         for _ in range(3000)]
    )  # fmt: skip
    hits, pooled, independent, reps = 0, [], [], 150
    for rep in range(reps):
        r = np.random.default_rng(10_000 + rep)
        draws, rows = _pool_draws(r, r.normal(0, 0.5, 30))
        iv = ex.auc_contrast(draws, [(1.0, rows)], 200, rep)
        hits += iv.low <= truth <= iv.high
        pooled.append(iv.high - iv.low)
        per = [
            ex.auc_draws(d.is_ood, row[None], 200, rep + j, d.test_units) for j, (d, row) in enumerate(zip(draws, rows))
        ]
        alone = stats.clustered_interval(
            np.concatenate([p[0] for p in per]), np.concatenate([p[1] for p in per], axis=1),
            clusters=draws[0].test_units, strata=draws[0].is_ood, unit="tasks", sharing="none",
        )  # fmt: skip
        independent.append(alone.high - alone.low)
    assert "the tasks drawn once for all of them" in iv.method
    assert hits / reps >= 0.93, hits / reps
    assert np.mean(pooled) < 0.85 * np.mean(independent), (np.mean(pooled), np.mean(independent))
