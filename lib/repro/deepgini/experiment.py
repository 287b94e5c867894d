"""The DeepGini chapter's experiment: the prioritizer registry, the forward passes, APFD tables, verdict rows."""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import sparse

from .. import cache
from ..metrics import apfd, apfd_normalized
from . import coverage as cv
from .claims import (
    PAPER_ACCURACY,
    PAPER_DEEPGINI,
    PAPER_FASHION_LENET1,
    POWER_SIMS,
    SHIFTED,
    SOFTMAX_MARGIN,
    paper_baselines,
)
from .prioritizers import SOFTMAX_SCORES, seeded_order, softmax_order
from .surprise import dsa, lsa

__all__ = ["SATraces", "Subject", "evaluate", "items_for", "method_table", "order_for", "subject", "tile"]

THRESHOLDS = {"NAC": (0.0, 0.75), "NBC": (0.0, 0.5, 1.0), "SNAC": (0.0, 0.5, 1.0), "TKNC": (1, 2, 3)}
SC_BUCKETS = 1000
# Upper bounds of the artifact's surprise coverage: u=100 for LSC (exp_apfd/exp_y_sa.py, exp_sa), the DSC class
# default u=2 (metrics.py); the lower bound is the smallest value on the prioritized set (LSC/DSC.rank_fast).
SC_UPPER = {"LSC": 100.0, "DSC": 2.0}
ARTIFACT_TAIL = " (artifact tail)"
# A neuron-coverage method computed over the artifact's layer set (nets.artifact_trace: every ReLU map before and
# after pooling, and the softmax) instead of ours (every ReLU block after pooling): "NBC(1)-CAM [artifact layers]"
ARTIFACT_LAYERS = " [artifact layers]"


@dataclass(frozen=True)
class SATraces:
    """Training traces of the surprise-adequacy layer and the model's predictions on them."""

    train: np.ndarray
    train_pred: np.ndarray
    train_probs: np.ndarray | None = None  # softmax of the same training images (the artifact's LSC layer)


@dataclass(frozen=True)
class Subject:
    """One test set seen through one model: softmax, neuron activations, surprise values."""

    probs: np.ndarray
    acts: np.ndarray
    stats: cv.NeuronStats
    lsa: np.ndarray
    dsa: np.ndarray
    sa_seconds: dict[str, float]
    # the same tests over the artifact's layer set, with its training ranges (the "[artifact layers]" methods)
    artifact_acts: np.ndarray | None = None
    artifact_stats: cv.NeuronStats | None = None

    @cached_property
    def identity(self) -> str:
        """Digest of every array (not the seconds it took): what a kept step that takes this subject is keyed by (once
        per subject). A step that reads the seconds is timed, so keyed by the machine as the step that measured them."""
        parts = []
        for value in (getattr(self, f.name) for f in fields(self) if f.name != "sa_seconds"):
            parts += [getattr(value, f.name) for f in fields(value)] if isinstance(value, cv.NeuronStats) else [value]
        return cache.digest(*parts)

    def take(self, idx: np.ndarray) -> Subject:
        """The same subject restricted to tests `idx` (surprise values are per test)."""
        theirs = None if self.artifact_acts is None else self.artifact_acts[idx]
        return replace(self, probs=self.probs[idx], acts=self.acts[idx], lsa=self.lsa[idx], dsa=self.dsa[idx],
                       artifact_acts=theirs)  # fmt: skip

    def on_artifact_layers(self) -> Subject:
        """The subject whose neuron activations and ranges are the artifact's layer set's."""
        if self.artifact_acts is None or self.artifact_stats is None:
            raise ValueError("this subject has no activations over the artifact's layer set (see() adds them)")
        return replace(self, acts=self.artifact_acts, stats=self.artifact_stats)


def sa_layer(stats: cv.NeuronStats) -> np.ndarray:
    """Columns of the last hidden layer, where surprise adequacy is measured."""
    return np.flatnonzero(stats.layer == stats.layer.max())


def subject(probs: np.ndarray, acts: np.ndarray, stats: cv.NeuronStats, traces: SATraces,
            artifact: tuple[np.ndarray, cv.NeuronStats] | None = None) -> Subject:  # fmt: skip
    """Build a Subject, timing LSA and DSA (each includes its own fit on the training traces); `artifact`: the same
    tests' activations over the artifact's layer set and that set's training ranges."""
    cols = sa_layer(stats)
    pred = probs.argmax(axis=1)
    seconds, values = {}, {}
    for name, fn in (("LSA", lsa), ("DSA", dsa)):
        began = time.perf_counter()
        values[name] = fn(traces.train, traces.train_pred, acts[:, cols], pred)
        seconds[name] = time.perf_counter() - began
    return Subject(probs, acts, stats, values["LSA"], values["DSA"], seconds, *(artifact or (None, None)))


NEURON_COVERAGE = ("NAC", "NBC", "SNAC", "KMNC", "TKNC")


def method_table(kmnc_k: list[int], artifact_layers: bool = True) -> dict[str, str]:
    """Every prioritizer name -> family, in the paper's table order: softmax (DeepGini and the other softmax scores,
    random), coverage (the paper's coverage baselines: neuron coverage as CTM and CAM, and surprise coverage LSC and
    DSC as CAM), surprise (the surprise scores LSA and DSA themselves, our comparison). "Best coverage" anywhere in
    the chapter (verdict, prose, tables, figures, the retraining rival) is the best of the coverage family.

    `artifact_layers`: every neuron-coverage method also over the artifact's layer set (name + ARTIFACT_LAYERS,
    family coverage, after the others; KMNC up to the paper's k = 1,000), so that the best coverage baseline is the
    best over both layer sets."""
    from .claims import PAPER_KMNC_K

    methods = {name: "softmax" for name in SOFTMAX_SCORES}
    for crit in ("NAC", "NBC", "SNAC"):
        for t in THRESHOLDS[crit]:
            methods[f"{crit}({t:g})-CTM"] = "coverage"
            methods[f"{crit}({t:g})-CAM"] = "coverage"
    for k in kmnc_k:
        methods[f"KMNC({k})-CAM"] = "coverage"
    for k in THRESHOLDS["TKNC"]:
        methods[f"TKNC({k})-CAM"] = "coverage"
    methods.update({"LSC-CAM": "coverage", "DSC-CAM": "coverage", "LSA": "surprise", "DSA": "surprise"})
    if artifact_layers:
        neuron = [
            m
            for m in methods
            if m.startswith(NEURON_COVERAGE) and not (m.startswith("KMNC") and kmnc(m) > PAPER_KMNC_K)
        ]
        methods.update({m + ARTIFACT_LAYERS: "coverage" for m in neuron})
    return methods


def kmnc(name: str) -> int:
    """The section count k of a "KMNC(k)-CAM" method name."""
    return int(name[5:].split(")")[0])


def bar_methods(apfd_frame: pd.DataFrame, methods: dict[str, str], sets: tuple[str, ...]) -> list[str]:
    """The methods of the APFD bar chart: every one over our layer set, then those over the artifact's that are the
    best coverage baseline (the verdict's comparator) of some pair and set."""
    keys = apfd_frame[apfd_frame["test_set"].isin(sets)][["dataset", "model", "test_set"]].drop_duplicates()
    best = {best_of(apfd_frame, "coverage", tuple(k)) for k in keys.itertuples(index=False)}
    return ours_layers(list(methods)) + [m for m in methods if m.endswith(ARTIFACT_LAYERS) and m in best]


def apfd_bars(apfd_frame: pd.DataFrame, methods: dict[str, str], sets: tuple[str, ...]):
    """Every prioritizer's normalized APFD (bar_methods), mean over the pairs with bars spanning them, one bar per test
    set. The sets are shades of grey, so that no set reads as a method (the chapter's colours are its methods')."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ..page import FIGURE_WIDTH

    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, 4.2))
    shown = apfd_frame[apfd_frame["test_set"].isin(sets)]
    palette = dict(zip(sets, sns.color_palette("Greys", len(sets) + 2)[1:-1]))  # light to mid grey: black spans show
    sns.barplot(shown, x="method", y="apfd_normalized", hue="test_set", hue_order=list(sets), palette=palette, ax=ax,
                errorbar=("pi", 100), order=bar_methods(apfd_frame, methods, sets), edgecolor="0.2", linewidth=0.4,
                err_kws={"color": "black", "linewidth": 1})  # fmt: skip
    ax.tick_params(axis="x", rotation=90, labelsize=7)
    ax.set(ylabel="normalized APFD", xlabel="", title="Every prioritizer: mean over pairs, bars span the pairs")
    ax.legend(fontsize=8, title="test set", title_fontsize=8)
    return fig


def scaling_figure(timings: pd.DataFrame):
    """Seconds (the minimum of repeats) against the number of tests, per method, on log axes, in the chapter's
    colours."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ..page import FIGURE_WIDTH

    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, 4.2))
    best = timings.groupby(["method", "n_tests"], as_index=False)["seconds"].min()
    palette = role_colors(list(best["method"].unique()))
    sns.lineplot(best, x="n_tests", y="seconds", hue="method", marker="o", ax=ax, palette=palette)
    ax.set(xscale="log", yscale="log", xlabel="tests (tiled real activations)", ylabel="seconds (minimum of repeats)")
    ax.legend(fontsize=7, bbox_to_anchor=(1.02, 1), loc="upper left")
    return fig


def ours_layers(methods: list[str]) -> list[str]:
    """The methods computed over our layer set (all but the ARTIFACT_LAYERS ones)."""
    return [m for m in methods if not m.endswith(ARTIFACT_LAYERS)]


def items_for(criterion: str, arg: float, s: Subject):
    """Sparse incidence of one coverage criterion on the subject's tests."""
    if criterion == "NAC":
        return cv.nac_items(s.acts, s.stats, arg)
    if criterion == "KMNC":
        return cv.kmnc_items(s.acts, s.stats, int(arg))
    if criterion == "NBC":
        return cv.nbc_items(s.acts, s.stats, arg)
    if criterion == "SNAC":
        return cv.snac_items(s.acts, s.stats, arg)
    if criterion == "TKNC":
        return cv.tknc_items(s.acts, s.stats.layer, int(arg))
    values = s.lsa if criterion == "LSC" else s.dsa
    return cv.bucket_items(values, SC_BUCKETS, float(values.min()), SC_UPPER[criterion])


def order_for(name: str, s: Subject, seed: int, misclassified: np.ndarray | None = None) -> np.ndarray:
    """Priority order of the subject's tests under prioritizer `name` (see method_table).

    A name ending "-CAM (artifact tail)" orders CAM's leftovers as the artifact does (needs `misclassified`)."""
    if name in SOFTMAX_SCORES:
        return softmax_order(name, s.probs, seed)
    if name in ("LSA", "DSA"):
        return seeded_order(s.lsa if name == "LSA" else s.dsa, seed)
    if name.endswith(ARTIFACT_LAYERS):
        return order_for(name.removesuffix(ARTIFACT_LAYERS), s.on_artifact_layers(), seed, misclassified)
    tail = "artifact" if name.endswith(ARTIFACT_TAIL) else "ctm"
    head, strategy = name.removesuffix(ARTIFACT_TAIL).rsplit("-", 1)
    criterion, _, arg = head.partition("(")
    items = items_for(criterion, float(arg.rstrip(")") or 0), s)
    return cv.ctm_order(items, seed) if strategy == "CTM" else cv.cam_order(items, seed, tail, misclassified)


def evaluate(name: str, s: Subject, misclassified: np.ndarray, seed: int) -> dict[str, object]:
    """APFD, normalized APFD, wall seconds and the order of one prioritizer on one test set."""
    began = time.perf_counter()
    order = order_for(name, s, seed, misclassified)
    seconds = time.perf_counter() - began
    if name in ("LSA", "DSA", "LSC-CAM", "DSC-CAM"):
        seconds += s.sa_seconds["LSA" if name.startswith("L") else "DSA"]
    detected = misclassified[order]
    return {
        "method": name,
        "apfd": apfd(detected),
        "apfd_normalized": apfd_normalized(detected),
        "seconds": seconds,
        "order": order,
    }


def tile(
    probs: np.ndarray, acts: np.ndarray, stats: cv.NeuronStats, n: int, seed: int, jitter: float = 0.05
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`n` tests repeating the real ones (probs, acts, source index); active neurons get small Gaussian jitter."""
    idx = np.resize(np.arange(len(probs)), n)
    noise = np.random.default_rng(seed).normal(size=(n, acts.shape[1])) * (jitter * stats.std)
    tiled = acts[idx]
    return probs[idx], np.where(tiled > 0, np.maximum(tiled + noise, 0.0), tiled), idx


# ------------------------------------------------------------------------------------------------ the chapter's runs


@dataclass
class Pair:
    """One dataset-model pair: its data, trained model and the test sets seen through it."""

    dataset: str
    arch: str
    train: tuple[np.ndarray, np.ndarray]
    test: tuple[np.ndarray, np.ndarray]
    model: object
    stats: cv.NeuronStats | None = None
    traces: SATraces | None = None
    artifact_stats: cv.NeuronStats | None = None  # neuron ranges over the artifact's layer set

    @cached_property
    def identity(self) -> str:
        """The model's cache identity and a digest of its data: what a cached step that takes this pair is keyed by."""
        return cache.digest(cache.model_key(self.model), *self.train, *self.test)


@functools.cache
def _code() -> str:
    """Digest of the source of every module the chapter's results depend on (this one, the chapter's others, the
    core's metrics, statistics and training loop) and of the package versions the runner records: a kept step is
    reused only while all of them are unchanged."""
    import sys

    from .. import metrics, stats, training
    from . import attacks, claims, corruptions, cost, coverage, nets, prioritizers, retraining, surprise, testsets

    mods = (attacks, claims, corruptions, cost, coverage, nets, prioritizers, retraining, surprise, testsets)
    return cache.code_digest(sys.modules[__name__], *mods, metrics, stats, training)


def kept(name: str, build, params: Mapping, *parts, timed: bool = False):
    """`build()` computed once and kept (cache.kept, as deepgini-<name>), keyed by the chapter's code, `params` (the
    parameters the step reads: pass params.only(...), so reading any other fails) and `parts` (identities of the
    models, sets and subjects it takes). `timed`: the value holds measured seconds, which are kept with it for this
    machine (cache.machine) and measured again on another."""
    machine = cache.machine() if timed else None
    return cache.kept("features", f"deepgini-{name}", build, _code(), dict(params), machine, *parts)


def kept_path(name: str, params: Mapping, *parts) -> Path:
    """Where kept(name, …, params, *parts) keeps its value (not timed): whether a step is cached, before it runs."""
    return cache.entry_path("features", f"deepgini-{name}", _code(), dict(params), None, *parts, suffix=".pkl")


def identities(items: Mapping) -> list:
    """Key parts of a dict of pairs, mixed sets or subjects (each key, then its identity) or of arrays (each key, then
    the array): flat, so that cache.digest reads every array whole."""
    return [
        part for k, v in items.items() for part in (list(k) if isinstance(k, tuple) else k, getattr(v, "identity", v))
    ]


def forward(model: object, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Softmax, neuron activations, layer index per neuron (one pass: nets.outputs), and the seconds they took."""
    from . import nets

    began = time.perf_counter()
    probs, acts, layer, _, _ = nets.outputs(model, x)
    return probs, acts, layer, time.perf_counter() - began


def fit_references(pair: Pair, sa_train: int, seed: int) -> None:
    """Neuron ranges from the training set, over our layer set and the artifact's, and the surprise-adequacy traces
    (a seeded sample of it); one forward pass (nets.outputs)."""
    from . import nets

    probs, acts, layer, theirs, their_layer = nets.outputs(pair.model, pair.train[0])
    pair.stats = cv.fit_stats(acts, layer)
    pair.artifact_stats = cv.fit_stats(theirs, their_layer)
    idx = np.random.default_rng(seed).permutation(len(acts))[:sa_train]
    pair.traces = SATraces(acts[idx][:, sa_layer(pair.stats)], probs[idx].argmax(1), probs[idx])


def see(pair: Pair, x: np.ndarray, y: np.ndarray) -> tuple[Subject, np.ndarray, float]:
    """One test set through the pair's model: the Subject (with the artifact's layer set), which tests are
    misclassified, and the seconds of the one forward pass that gives both (nets.outputs)."""
    from . import nets

    began = time.perf_counter()
    probs, acts, _, theirs, _ = nets.outputs(pair.model, x)
    seconds = time.perf_counter() - began
    return subject(probs, acts, pair.stats, pair.traces, (theirs, pair.artifact_stats)), probs.argmax(1) != y, seconds


def apfd_records(subjects: dict, truth: dict, methods: dict[str, str], seed: int) -> tuple[pd.DataFrame, dict]:
    """APFD of every method on every (dataset, model, test set); the orders, keyed like the records. Kept (kept)
    with the seconds each method measured."""
    build = lambda: apfd_table(subjects, truth, methods, seed)
    return kept(
        "apfd", build, {"seed": seed, "methods": methods}, *identities(subjects), *identities(truth), timed=True
    )


def apfd_table(subjects: dict, truth: dict, methods: dict[str, str], seed: int) -> tuple[pd.DataFrame, dict]:
    """What apfd_records keeps, computed."""
    from tqdm.auto import tqdm

    records, orders = [], {}
    for key, s in tqdm(subjects.items(), desc="prioritizers", leave=False):
        for name, family in methods.items():
            result = evaluate(name, s, truth[key], seed)
            orders[(*key, name)] = result.pop("order")
            records.append({"dataset": key[0], "model": key[1], "test_set": key[2], "family": family, **result})
    return pd.DataFrame(records), orders


def paper_beside_ours(apfd_frame: pd.DataFrame, methods: list[str], sets: tuple[str, str]) -> pd.DataFrame:
    """Normalized APFD per method and pair, ours beside the artifact's where it reports one."""
    rows = []
    for (ds, arch), sub in apfd_frame.groupby(["dataset", "model"], sort=False):
        ours = sub.pivot_table(index="method", columns="test_set", values="apfd_normalized")
        for m in methods:
            paper = (PAPER_FASHION_LENET1.get(m) if (ds, arch) == ("fashion_mnist", "lenet1") else None) or (
                PAPER_DEEPGINI.get((ds, arch)) if m == "DeepGini" else None
            )
            rows.append(
                {
                    "pair": f"{ds} {arch}",
                    "method": m,
                    **{f"ours {t}": ours.loc[m, t] if m in ours.index else np.nan for t in sets},
                    **{f"paper {t}": paper[i] if paper else np.nan for i, t in enumerate(sets)},
                }
            )
    return pd.DataFrame(rows)


def order_scores(order: np.ndarray) -> np.ndarray:
    """Scores that reproduce `order` when sorted descending (first test highest)."""
    scores = np.empty(len(order))
    scores[order] = np.arange(len(order), 0, -1)
    return scores


SOURCE_UNIT, TEST_UNIT = "source images", "test images"  # what a set's APFD differences resample (apfd_differences)


def apfd_difference(
    truth: np.ndarray,
    order_a: np.ndarray,
    order_b: np.ndarray,
    n_boot: int,
    seed: int,
    replicas: list = (),
    sources: list | None = None,
):
    """Normalized APFD(a) - APFD(b), paired bootstrap over each model's tests (misclassified count fixed per
    resample). `replicas`: (truth, order_a, order_b) of further trained models of the pair, each on its own test
    set; the interval is then a t interval over models with each model's item noise (stats.hierarchical_interval,
    items per seed). With one model it is the bootstrap's percentile interval. A set whose tests all fail has every
    order's normalized APFD at 1.0 (metrics.apfd_normalized), so its difference is 0 in every resample.

    `sources`: the source image of every test, one array per model (the first model's, then the replicas'), for a
    mixed set whose adversarial inputs come several to a source image: the bootstrap then resamples source images
    (the draws shared by the models, whose sets are built from the same test images), then tests within each drawn
    image with its misclassified count fixed (stats.unit_weights), and the interval is stats.clustered_interval over
    source images (sharing 'clusters').

    Kept in data/features by every array it reads, the resampling's size and seed, and the source of the code that
    computes it (its two computing functions and order_scores, the statistics and metrics modules): a cached re-run
    reads the interval instead of drawing the resamples again."""
    return apfd_differences(truth, {"a": order_a, "b": order_b}, [("a", "b")], n_boot, seed,
                            [(flags, {"a": a, "b": b}) for flags, a, b in replicas], sources)[("a", "b")]  # fmt: skip


def _difference_entry(runs: list, sources: list | None, n_boot: int, seed: int, unit: str = SOURCE_UNIT):
    """Where apfd_difference keeps the difference of `runs` (the (truth, order_a, order_b) of every model)."""
    from .. import cache, metrics, stats

    arrays = [a for run in runs for a in run] + list(sources or [])
    plain = [a.tolist() if np.asarray(a).dtype == object else np.asarray(a) for a in arrays]  # no object pointers
    shape = [len(runs), sources is None, n_boot, seed, WEIGHT_BLOCK] + ([] if unit == SOURCE_UNIT else [unit])
    # the code that computes it (not the whole module, so that an edit elsewhere in it keeps the entries)
    code = cache.source_digest(*DIFFERENCE_CODE, stats, metrics)
    return cache.entry_path("features", "deepgini-apfd-difference", *plain, shape, code, suffix=".json")


def apfd_differences(
    truth: np.ndarray,
    orders: dict,
    comparisons: list[tuple[str, str]],
    n_boot: int,
    seed: int,
    replicas: list = (),
    sources: list | None = None,
    unit: str = SOURCE_UNIT,
) -> dict:
    """apfd_difference of several (a, b) comparisons on one set, each kept in its own entry (the same as
    apfd_difference's): `orders` maps a method to its order on the first model, `replicas` holds (truth, orders) of
    every further model. Over source images, the comparisons the cache lacks share each block of two-stage weights
    and each method's APFD on it (the weights are most of the work: about 0.9 s per block of 100 resamples of three
    models of 50,000 tests), with the same draws, so the same values, as one at a time.

    unit TEST_UNIT: `sources` are the test images themselves, the same for every model (the original set: every
    model is scored on the same images), so one draw of images serves every model (stats.clustered_interval with
    sharing 'items')."""
    import json

    from .. import cache, stats

    runs_of = {c: [(truth, orders[c[0]], orders[c[1]]), *((f, o[c[0]], o[c[1]]) for f, o in replicas)]
               for c in comparisons}  # fmt: skip
    where = {c: _difference_entry(runs_of[c], sources, n_boot, seed, unit) for c in comparisons}
    missing = [c for c in comparisons if not where[c].exists()]
    made = {}
    if missing and sources is not None:
        made = _clustered_apfd_differences([truth, *(f for f, _ in replicas)], [orders, *(o for _, o in replicas)],
                                           missing, sources, n_boot, seed, unit)  # fmt: skip
    out = {}
    for c in comparisons:

        def write(tmp, c=c) -> None:
            iv = made[c] if c in made else _apfd_difference(runs_of[c], n_boot, seed, sources)
            tmp.write_text(json.dumps([iv.estimate, iv.low, iv.high, iv.method, iv.se, iv.df]), encoding="utf-8")

        out[c] = stats.Interval(*cache.file_entry(where[c], write, cache.read_json)[0])
    return out


def _apfd_difference(runs: list, n_boot: int, seed: int, sources: list | None):
    """apfd_difference computed: `runs` the (truth, order_a, order_b) of every model, the chapter's first."""
    from .. import stats
    from ..metrics import apfd_bounds

    if sources is not None:
        orders = [{"a": a, "b": b} for _, a, b in runs]
        return _clustered_apfd_differences([f for f, _, _ in runs], orders, [("a", "b")], sources, n_boot, seed)[
            ("a", "b")
        ]
    estimates, draws, sizes = [], [], []
    for flags, a, b in runs:
        est, dist, method = stats.paired_apfd_draws(
            flags, order_scores(a), order_scores(b), n_resamples=n_boot, seed=seed
        )
        worst, best = apfd_bounds(len(flags), int(flags.sum()))
        if best == worst:  # every test fails: both normalized APFDs are 1.0
            est, dist = 0.0, np.zeros_like(dist)
        else:
            est, dist = est / (best - worst), dist / (best - worst)
        estimates.append(est)
        draws.append(dist)
        sizes.append(len(flags))
    if len(sizes) > 1 and min(sizes) != max(sizes):  # each model's own mixed set: say the range of their sizes
        method = method.replace(
            f" over {sizes[-1]:,} tests", f" over each model's tests ({min(sizes):,}–{max(sizes):,})"
        )
    return stats.hierarchical_interval(
        estimates, np.stack(draws, axis=1), shared_items=False, words=f"normalized APFD difference, {method}"
    )


WEIGHT_BLOCK = 100  # resamples per block of two-stage bootstrap weights (resamples x tests per model in memory)


def _clustered_apfd_differences(flag_sets: list, orders: list, comparisons: list, sources: list, n_boot: int,
                                seed: int, unit: str = SOURCE_UNIT) -> dict:  # fmt: skip
    """apfd_difference over source images of every comparison: two-stage bootstrap weights in blocks (drawn once for
    every comparison), each method's normalized APFD on every resample of every model, and each comparison's
    clustered interval over models. flag_sets and orders: one per model (orders: method -> order)."""
    from .. import stats
    from ..metrics import apfd_bounds

    flags = [np.asarray(f, bool) for f in flag_sets]
    labels = [np.asarray(src) for src in sources]
    if len(labels) != len(flags) or any(len(src) != len(f) for src, f in zip(labels, flags)):
        raise ValueError("sources needs one source image per test, one array per model")
    if unit == TEST_UNIT and any(len(lab) != len(labels[0]) or not np.array_equal(lab, np.arange(len(lab)))
                                 for lab in labels):  # fmt: skip
        raise ValueError("test images as units: every model's tests are the same images, labelled 0 .. n - 1")
    methods = list(dict.fromkeys(m for c in comparisons for m in c))
    scorers = [{m: stats.WeightedApfd(f, order_scores(o[m])) for m in methods} for f, o in zip(flags, orders)]
    scales = []
    estimates = {c: [] for c in comparisons}
    for f, sc in zip(flags, scorers):
        worst, best = apfd_bounds(len(f), int(f.sum()))
        scales.append(best - worst)
        ones = np.ones(len(f))
        for a, b in comparisons:
            estimates[a, b].append(0.0 if best == worst else (sc[a](ones) - sc[b](ones)) / (best - worst))
    draws = {c: [] for c in comparisons}
    for i, block in enumerate(np.array_split(np.arange(n_boot), max(1, n_boot // WEIGHT_BLOCK))):
        weights = stats.unit_weights(
            labels, flags, n_resamples=len(block), seed=seed + 7_919 * i, clusters_within_strata=False
        )
        values = [{m: np.array([sc[m](w) for w in ws]) for m in methods} for sc, ws in zip(scorers, weights)]
        for a, b in comparisons:
            draws[a, b].append(
                np.stack(
                    [np.zeros(len(block)) if scale == 0 else (v[a] - v[b]) / scale for v, scale in zip(values, scales)],
                    axis=1,
                )
            )
    sizes = [len(f) for f in flags]
    tests = f"{sizes[0]:,} tests" if min(sizes) == max(sizes) else f"each model's tests ({min(sizes):,}–{max(sizes):,})"
    if unit == TEST_UNIT:
        words = (
            f"normalized APFD difference, paired bootstrap over the {sizes[0]:,} test images every model is scored "
            "on (the same draws for every model), each method ordering the resample as it ordered the full set"
        )
    else:
        words = (
            f"normalized APFD difference, paired two-stage bootstrap over {tests}: source images, then the tests of "
            "each drawn image with its misclassified count fixed, each method ordering the resample as it ordered "
            "the full set"
        )
    sharing = "items" if unit == TEST_UNIT else "clusters"
    return {
        c: stats.clustered_interval(
            estimates[c], np.concatenate(draws[c]), clusters=labels, unit=unit, sharing=sharing, words=words
        )
        for c in comparisons
    }  # fmt: skip


# the functions whose source keys apfd_difference's entries (bound here, once: a test's stand-in does not re-key them)
DIFFERENCE_CODE = (_apfd_difference, _clustered_apfd_differences, order_scores)


def tests_to_max_coverage(items, seed: int) -> tuple[float, int]:
    """(maximum coverage as a share of items, tests CAM needs to reach it) on one test set; CAM's start and ties
    are broken by `seed` (the notebook's)."""
    items = sparse.csr_matrix(items)
    total = int((np.asarray(items.sum(axis=0)).ravel() > 0).sum())
    reached = np.zeros(items.shape[1], bool)
    count = 0
    for i, t in enumerate(cv.cam_order(items, seed)):
        if count == total:
            return total / items.shape[1], i
        mine = items.indices[items.indptr[t] : items.indptr[t + 1]]
        count += int((~reached[mine]).sum())
        reached[mine] = True
    return total / items.shape[1], items.shape[0]


def scaling_timings(
    base: Subject, flags: np.ndarray, traces: SATraces, sizes: list[int], methods: list[str], repeats: int, seed: int
) -> pd.DataFrame:
    """Seconds of each method on tiled copies of a real test set, `repeats` times per size (LSA/DSA once: their fit
    is part of building the tiled subject)."""
    from tqdm.auto import tqdm

    rows = []
    for n in tqdm(sizes, desc="scaling"):
        probs, acts, idx = tile(base.probs, base.acts, base.stats, n, seed)
        s = subject(probs, acts, base.stats, traces)
        for name in methods:
            for r in range(1 if name in ("LSA", "DSA") else repeats):
                rows.append(
                    {
                        "method": name,
                        "n_tests": n,
                        "repeat": r,
                        "seconds": evaluate(name, s, flags[idx], seed)["seconds"],
                    }
                )
    return pd.DataFrame(rows)


def max_coverage_table(subjects: dict, methods: dict[str, str], params: object) -> pd.DataFrame:
    """Maximum coverage and the tests CAM needs to reach it, per CAM criterion of the paper's table (LSC and DSC
    included) on every original and mixed set: the notebook's seed, and for the criteria the max-coverage row judges
    (claims.max_coverage_scope: all but KMNC) the mean and range over claims.CAM_SEEDS seeds of CAM's start and
    ties, with each seed's share kept for the row's interval. `judged` marks the criteria and pairs the row judges.
    Kept (kept)."""
    from .claims import CAM_SEEDS, SETS, max_coverage_scope

    pairs, criteria = max_coverage_scope(params)
    names = [m for m, f in methods.items() if m.endswith("-CAM") and f == "coverage"]
    p = params.only("seed")
    sets = {k: s for k, s in subjects.items() if k[2] in SETS}

    def build() -> pd.DataFrame:
        rows = []
        for (ds, arch, ts), s in sets.items():
            for name in names:
                criterion, _, arg = name.removesuffix("-CAM").partition("(")
                items = items_for(criterion, float(arg.rstrip(")") or 0), s)
                judged = f"{ds}:{arch}" in pairs and criterion in criteria
                seeds = [p.seed + i for i in range(CAM_SEEDS if judged else 1)]
                reached = [tests_to_max_coverage(items, seed) for seed in seeds]
                shares = np.array([needed for _, needed in reached]) / len(s.probs)
                covered = round(reached[0][0] * items.shape[1])  # the items the set covers (tests_to_max_coverage)
                rows.append(
                    {
                        "dataset": ds,
                        "model": arch,
                        "test_set": ts,
                        "method": name,
                        "max_coverage": reached[0][0],
                        "tests_to_max": reached[0][1],
                        "share_of_tests": shares[0],
                        "cam_seeds": len(seeds),
                        "share_mean": shares.mean(),
                        "share_max": shares.max(),
                        "seed_shares": " ".join(f"{v:.6g}" for v in shares),
                        # each CAM step covers at least one new item: CAM never needs more tests than the items covered
                        "ceiling": min(covered, len(s.probs)) / len(s.probs),
                        "judged": judged,
                    }
                )
        return pd.DataFrame(rows)

    return kept("max-coverage", build, p, names, pairs, criteria, *identities(sets))


def max_coverage_words(maxcov: pd.DataFrame) -> str:
    """What the max-coverage row leaves out and why: KMNC(1000)'s share of tests to maximum coverage in the paper's
    table and in ours, per set; the largest share among the judged criteria."""
    from .claims import PAPER_KMNC_K, PAPER_KMNC_TO_MAX

    kmnc = maxcov[maxcov["method"] == f"KMNC({PAPER_KMNC_K})-CAM"]
    judged = maxcov[maxcov["judged"]]
    paper = ", ".join(f"{v:.0%} ({k})" for k, v in PAPER_KMNC_TO_MAX.items())
    ours = "; ".join(
        f"{ts} set {sub['share_of_tests'].min():.0%}–{sub['share_of_tests'].max():.0%}"
        for ts, sub in kmnc.groupby("test_set", sort=False)
    )
    worst = judged.loc[judged["share_max"].idxmax()] if len(judged) else None
    judged_words = (
        f" Among the judged criteria the largest share over {int(worst['cam_seeds'])} CAM seeds is "
        f"{worst['share_max']:.1%} ({worst['method']}, {worst['dataset']} {worst['model']}, {worst['test_set']} set)."
        f" CAM never needs more tests than the items it covers (each step covers at least one new item), and the "
        f"judged criteria cover at most {judged['ceiling'].max():.1%} of their set's tests in items: that is the "
        "largest share any of them could need, here and in the paper's table (its 959 of 10,000 tests for TKNC(2) "
        "is the same arithmetic)."
        if worst is not None
        else ""
    )
    out = [
        f"The paper's own table has CAM need {paper} of the tests to reach KMNC({PAPER_KMNC_K})'s maximum coverage, "
        "so the max-coverage row judges every criterion of the table but KMNC."
    ]
    if len(kmnc):
        out.append(f"Ours needs {ours} (over the pairs, the notebook's seed).")
    return " ".join(out) + judged_words


def _margin(rule: object, ours: float) -> float:
    """How far the estimate lies on the passing side of the rule (negative on the failing side)."""
    if rule.kind == "above":
        return ours - rule.low
    if rule.kind == "below":
        return rule.high - ours
    return min(ours - rule.low, rule.high - ours)


FAMILY_ALPHA = 0.05  # a row's error rate for "not held" over its units (Bonferroni: each unit at 1 − 0.05 / units)


def unit_decisions(rule: object, ivs: dict) -> tuple[dict, dict, str]:
    """Each unit's decision and the interval it reads, with the row's units as one family: a row is not held if any
    unit is, so a unit not held at 95 % is not held only if its interval at 1 − FAMILY_ALPHA / units (Bonferroni)
    lies wholly on the failing side too, else it is inconclusive, read at that level (a wider interval that excludes
    the threshold side cannot make a unit held). A unit whose interval is not a t interval (no standard error: a
    bootstrap of minima) is read at 95 %, and the words say so. Held needs every unit held at 95 % (an
    intersection-union test: no correction). Returns (decisions, intervals read, words)."""
    from ..stats import at_level

    n = len(ivs)
    level = 1 - FAMILY_ALPHA / n
    decided, read, uncorrected, plain = {}, {}, 0, 0
    for u, iv in ivs.items():
        d = rule.decide(iv.estimate, iv.low, iv.high)
        if d == "not held" and n > 1:
            plain += 1
            wide = at_level(iv, level)
            if wide is None:
                uncorrected += 1
            else:
                iv, d = wide, rule.decide(wide.estimate, wide.low, wide.high)
        decided[u], read[u] = d, iv
    words = ""
    if plain:
        words = (
            f"; not held needs a unit's interval at {level:.1%} (Bonferroni over {n} units): {plain} not held at 95 %, "
            f"{sum(d == 'not held' for d in decided.values())} at {level:.1%}"
            + (f" ({uncorrected} uncorrected: not a t interval)" if uncorrected else "")
        )
    return decided, read, words


def every_pair(rule: object, ivs: dict) -> tuple[object, object, str]:
    """Apply `rule` to every unit's interval (a unit: a pair, or a pair and a method); an 'on every pair' claim is
    not held if any unit is not held (Bonferroni over the units: unit_decisions), held if every unit is held, else
    inconclusive. Returns the deciding unit (the worst of the decisive kind: the farthest on the failing side), the
    interval its decision reads, and every unit's decision."""
    decided, read, corrected = unit_decisions(rule, ivs)
    kind = next(d for d in ("not held", "inconclusive", "held") if d in decided.values())
    key = min((k for k in ivs if decided[k] == kind), key=lambda k: _margin(rule, ivs[k].estimate))
    counts = ", ".join(f"{sum(d == x for d in decided.values())} {x}" for x in ("held", "inconclusive", "not held"))
    return key, read[key], f"{len(ivs)} units: {counts}{corrected}"


def _label(k: object) -> str:
    """'fashion_mnist lenet1' from a (dataset, model, ...) key, or the unit as it is."""
    return " ".join(str(x) for x in k[:2]) if isinstance(k, tuple) else str(k)


def artifact_sa_seconds(pair: Pair, s: Subject) -> dict[str, float]:
    """Seconds of LSA and DSA as the artifact runs them (exp_apfd's LSC and DSC): each its own forward pass over the
    whole training set, its fit on every training trace and its scores on the subject's tests (ours at the last
    hidden layer; the artifact's LSC reads the softmax, its DSC every layer)."""
    from . import nets

    cols, pred = sa_layer(s.stats), s.probs.argmax(axis=1)
    seconds = {}
    for name, fn in (("LSA", lsa), ("DSA", dsa)):
        began = time.perf_counter()
        probs, acts, _, _, _ = nets.outputs(pair.model, pair.train[0])
        fn(acts[:, cols], probs.argmax(axis=1), s.acts[:, cols], pred)
        seconds[name] = time.perf_counter() - began
    return seconds


def end_to_end_timings(model: object, s: Subject, x: np.ndarray, truth: np.ndarray, methods: list[str], repeats: int,
                       seed: int, surprise: Mapping[str, float]) -> pd.DataFrame:  # fmt: skip
    """Seconds of each method on one real test set, end to end, as a tool that computes only that method runs it:
    its own forward pass (DeepGini the softmax alone, nets.predict_proba; a coverage or surprise method the neuron
    activations, nets.outputs, which the artifact's tools read from the model as well) plus its prioritization,
    `repeats` rounds. A round times one softmax pass and one activation pass back to back (their order alternating by
    round), then every method's prioritization, so that a method's round and DeepGini's share what the machine was
    doing then: the ratio is paired by round (_cost_row). LSC and DSC add LSA and DSA as the artifact runs them
    (`surprise`, from artifact_sa_seconds: a forward pass over the whole training set, the fit on every trace, the
    scores), timed once; their CAM is timed every round. Column pass names the forward pass a method's forward_s
    is."""
    from . import nets

    def clock(fn) -> float:
        began = time.perf_counter()
        fn()
        return time.perf_counter() - began

    nets.predict_proba(model, x)  # warm-up: a first pass on a fresh set ran about 20 % slower
    nets.outputs(model, x)
    rows = []
    for r in range(repeats):
        passes = {
            "softmax": lambda: nets.predict_proba(model, x),
            "activations": lambda: nets.outputs(model, x),
        }
        took = {k: clock(passes[k]) for k in (("softmax", "activations") if r % 2 == 0 else ("activations", "softmax"))}
        for name in methods:
            own = evaluate(name, s, truth, seed)["seconds"]
            if name in SA_CAM:  # evaluate adds our 5,000-trace fit: the artifact's way instead
                sa = "LSA" if name.startswith("L") else "DSA"
                own += surprise[sa] - s.sa_seconds[sa]
            kind = "softmax" if name in SOFTMAX_SCORES else "activations"
            rows.append({"method": name, "repeat": r, "pass": kind, "forward_s": took[kind], "method_s": own,
                         "seconds": took[kind] + own})  # fmt: skip
    return pd.DataFrame(rows)


SA_CAM = ("LSC-CAM", "DSC-CAM")  # the surprise methods, timed the artifact's way (artifact_sa_seconds)
VIEW_ROUNDS = 3  # end-to-end rounds on a timed pair that no row reads (table cost's other architectures)


class EndToEndJob(NamedTuple):
    """One fresh process's end-to-end rounds on the first timed pair (cost_for): what _end_to_end_rounds times."""

    model: object
    subject: Subject
    x: np.ndarray
    truth: np.ndarray
    methods: list[str]
    rounds: int
    seed: int
    surprise: dict
    process: int


def _end_to_end_rounds(job: EndToEndJob) -> pd.DataFrame:
    """In one process: end_to_end_timings of job.rounds rounds, column process its number."""
    frame = end_to_end_timings(
        job.model, job.subject, job.x, job.truth, job.methods, job.rounds, job.seed, job.surprise
    )
    return frame.assign(process=job.process)


def cost_for(models: dict, mixed: dict, subjects: dict, truth: dict, params: object) -> pd.DataFrame:
    """End-to-end timings on the mixed sets of the first pair (Fashion-MNIST LeNet-1 at default, the set the
    artifact timed) and of the other architectures of its dataset: DeepGini and every coverage baseline of the paper's
    tables (KMNC up to k = 1,000), the neuron-coverage ones over the artifact's layer set as the artifact times them,
    forward pass and prioritization apart (columns forward_s, method_s; neurons: the layer set's width). The first
    pair, whose timings the cost rows read, runs cost_rounds rounds in each of cost_processes fresh processes
    (workers.in_fresh_processes, one after the other: rounds within one process share its memory layout, and two
    processes differed by more than their rounds' spread); the others, shown beside it, VIEW_ROUNDS rounds here
    (column process 0). LSA's and DSA's artifact-way seconds are timed once per pair, here. Every timing runs on one
    thread, as the fresh processes compute."""
    from .. import workers

    p = params.only("kmnc_k", "cost_rounds", "cost_processes", "seed")
    methods = ["DeepGini"] + [
        m
        for m in paper_baselines(method_table(p.kmnc_k, artifact_layers=True))
        if m.endswith(ARTIFACT_LAYERS) or not m.startswith(NEURON_COVERAGE)
    ]
    first = next(iter(models))
    pairs = {pair: models[pair] for pair in models if pair[0] == first[0]}
    keys = [(ds, arch, "original+adversarial") for ds, arch in pairs]

    def build() -> pd.DataFrame:
        frames = []
        for i, (ds, arch, ts) in enumerate(keys):
            x, s = mixed[ds, arch, ts].x, subjects[ds, arch, ts]
            with workers.one_thread():  # as the fresh processes time the rounds
                surprise = artifact_sa_seconds(models[ds, arch], s) if any(m in SA_CAM for m in methods) else {}
                if i:
                    rounds = min(p.cost_rounds, VIEW_ROUNDS)
                    frame = end_to_end_timings(models[ds, arch].model, s, x, truth[ds, arch, ts], methods, rounds,
                                               p.seed, surprise).assign(process=0)  # fmt: skip
            if i == 0:  # only the first pair decides rows
                jobs = [EndToEndJob(models[ds, arch].model, s, x, truth[ds, arch, ts], methods, p.cost_rounds, p.seed,
                                    surprise, k) for k in range(p.cost_processes)]  # fmt: skip
                frame = pd.concat(workers.in_fresh_processes(_end_to_end_rounds, jobs, "cost"), ignore_index=True)
            neurons = subjects[ds, arch, ts].on_artifact_layers().acts.shape[1]
            frames.append(frame.assign(dataset=ds, model=arch, tests=len(x), neurons=neurons))
        return pd.concat(frames, ignore_index=True)

    on = lambda d: {k: d[k] for k in keys}
    parts = (*identities(pairs), *identities(on(mixed)), *identities(on(subjects)), *identities(on(truth)))
    return kept("cost", build, p, *parts, timed=True)


ALONE_CLOSEST = 3  # coverage methods per timed pair whose prioritization alone is timed against DeepGini's, paired


class AloneJob(NamedTuple):
    """One process's share of the prioritization-alone timings (alone_for): what _alone_rounds times."""

    subjects: dict  # (dataset, model) -> (Subject, misclassified flags) of the pair's mixed set
    chosen: dict  # (dataset, model) -> the coverage methods timed against DeepGini there
    rounds: int
    seed: int
    process: int


def _alone_rounds(job: AloneJob) -> pd.DataFrame:
    """In one process: DeepGini and each pair's chosen methods, each timed once per round in a seeded order that
    changes every round, job.rounds rounds after one warm-up call each."""
    rng = np.random.default_rng([job.seed, 3, job.process])
    rows = []
    for (ds, arch), (s, flags) in job.subjects.items():
        names = ["DeepGini", *job.chosen[ds, arch]]
        for name in names:  # warm-up
            evaluate(name, s, flags, job.seed)
        for r in range(job.rounds):
            for name in rng.permutation(names):
                rows.append({"dataset": ds, "model": arch, "method": str(name), "process": job.process, "repeat": r,
                             "method_s": evaluate(str(name), s, flags, job.seed)["seconds"]})  # fmt: skip
    return pd.DataFrame(rows)


def alone_for(subjects: dict, truth: dict, timings: pd.DataFrame, params: object) -> pd.DataFrame:
    """Prioritization alone (forward pass excluded), timed in interleaved rounds: on each pair of table cost, the
    ALONE_CLOSEST coverage methods whose minimum prioritization time there lies closest to DeepGini's (the others are
    at least that far from it), and DeepGini, `alone_repeats` rounds in each of `alone_processes` fresh processes
    (workers.in_fresh_processes, one after the other: one process's timings share its memory layout, and processes
    differed by more than their rounds' spread, 1.10 to 1.20 on 2026-12-01). Columns dataset, model, method, process,
    repeat, method_s; a method's round and DeepGini's ran in the same process and round."""
    from .. import workers

    p = params.only("alone_repeats", "alone_processes", "seed")
    best = timings.groupby(["dataset", "model", "method"], sort=False)["method_s"].min()
    chosen = {}
    for (ds, arch), sub in best.groupby(level=[0, 1], sort=False):
        own = sub.droplevel([0, 1])
        chosen[ds, arch] = list((own.drop("DeepGini") / own["DeepGini"]).nsmallest(ALONE_CLOSEST).index)
    keys = [(ds, arch, "original+adversarial") for ds, arch in chosen]

    def build() -> pd.DataFrame:
        on_pairs = {(ds, arch): (subjects[ds, arch, ts], truth[ds, arch, ts]) for ds, arch, ts in keys}
        jobs = [AloneJob(on_pairs, chosen, p.alone_repeats, p.seed, i) for i in range(p.alone_processes)]
        return pd.concat(workers.in_fresh_processes(_alone_rounds, jobs, "cost alone"), ignore_index=True)

    on = lambda d: {k: d[k] for k in keys}
    parts = (sorted(chosen.items()), *identities(on(subjects)), *identities(on(truth)))
    return kept("cost-alone", build, p, *parts, timed=True)


def alone_ratios(alone: pd.DataFrame) -> dict[tuple[str, str, str], tuple[float, float, float, float, int]]:
    """Per (dataset, model, method) of the interleaved timings (alone_for): the ratio to DeepGini's prioritization
    alone, each process's mean over its rounds averaged over the processes, with a t interval over the processes (the
    unit whose spread the rounds do not show; cost.ratio_over_processes): (estimate, low, high, se, df)."""
    out = {}
    for (ds, arch), sub in alone.groupby(["dataset", "model"], sort=False):
        for m in sub.loc[sub["method"] != "DeepGini", "method"].unique():
            out[ds, arch, m] = process_ratio(sub, m, "method_s")
    return out


def process_ratio(timings: pd.DataFrame, method: str, column: str) -> tuple[float, float, float, float, int]:
    """`method`'s ratio to DeepGini in `column` over the processes of `timings` (columns method, process, repeat;
    one pair), paired by round within each process (cost.ratio_over_processes)."""
    from .cost import ratio_over_processes

    wide = timings.pivot_table(index=["process", "repeat"], columns="method", values=column)
    by = [wide.loc[k] for k in wide.index.unique("process")]
    return ratio_over_processes([w[method].to_numpy() for w in by], [w["DeepGini"].to_numpy() for w in by])


def alone_view(alone: pd.DataFrame) -> pd.DataFrame:
    """Table cost_alone as the page shows it: per pair and method, the ratio to DeepGini's prioritization alone (the
    processes' mean of their rounds' mean) with its 95 % t interval over the processes, and the rounds and
    processes."""
    rounds = alone[alone["method"] == "DeepGini"].groupby(["dataset", "model"])["repeat"].nunique()
    processes = alone["process"].nunique()
    return pd.DataFrame(
        [{"pair": f"{ds} {arch}", "method": m, "x_deepgini": round(est, 3), "ci_low": round(low, 3),
          "ci_high": round(high, 3), "rounds": int(rounds[ds, arch]), "processes": processes}
         for (ds, arch, m), (est, low, high, _, _) in alone_ratios(alone).items()]
    )  # fmt: skip


def first_timed(timings: pd.DataFrame) -> pd.DataFrame:
    """The timings of the first pair timed (the artifact's Fashion-MNIST LeNet-1 at default): the paper's cost rows."""
    ds, arch = timings["dataset"].iloc[0], timings["model"].iloc[0]
    return timings[(timings["dataset"] == ds) & (timings["model"] == arch)]


def cost_view(timings: pd.DataFrame) -> pd.DataFrame:
    """Table cost as the page shows it: per method, each timed model's median end-to-end seconds and its
    prioritization alone (forward pass excluded) over the rounds, and on the first pair the mean over rounds of the
    end-to-end ratio to DeepGini (what the cost rows read)."""
    mid = timings.groupby(["model", "method"], as_index=False, sort=False)[["seconds", "method_s"]].median()
    wide = mid.pivot_table(index="method", columns="model", values=["seconds", "method_s"], sort=False)
    wide.columns = [f"{m}: {'end to end' if v == 'seconds' else 'prioritization'} (s)" for v, m in wide.columns]
    per_round = first_timed(timings).pivot_table(index=["process", "repeat"], columns="method", values="seconds")
    ratio = per_round.div(per_round["DeepGini"], axis=0).mean()
    return wide.assign(x_deepgini_end_to_end=ratio.reindex(wide.index)).reset_index()


def _cost_alone_row(claim: object, alone: pd.DataFrame) -> dict:
    """Our check of what the end-to-end rows cannot show: on each timed pair, each of the coverage methods closest to
    DeepGini in prioritization time alone (forward pass excluded; alone_for) against DeepGini, as the mean ratio of
    interleaved repeats with its t interval; the rule applied to every (pair, method), Bonferroni over them for
    not held (every_pair)."""
    from ..stats import Interval
    from ..verdict import judge

    ivs = {u: Interval(est, low, high, "t over processes", se, df)
           for u, (est, low, high, se, df) in alone_ratios(alone).items()}  # fmt: skip
    rounds = alone[alone["method"] == "DeepGini"].groupby(["dataset", "model"])["repeat"].nunique()
    (ds, arch, m), iv, summary = every_pair(claim.rule, ivs)
    unit = alone[(alone["dataset"] == ds) & (alone["model"] == arch)]
    mins = unit.groupby("method")["method_s"].min()
    per_round = unit.pivot_table(index=["process", "repeat"], columns="method", values="method_s")
    test = (
        f"deciding unit {ds} {arch}, {m} vs DeepGini, prioritization alone (forward pass excluded): in each of "
        f"{unit['process'].nunique()} fresh processes the mean ratio over {rounds[ds, arch]} interleaved rounds, t "
        f"interval over the processes (the rounds' median ratio {(per_round[m] / per_round['DeepGini']).median():.2f}, "
        f"the ratio of the minima {mins[m] / mins['DeepGini']:.2f}); units: the {ALONE_CLOSEST} coverage methods "
        f"closest to DeepGini on each timed pair (table cost_alone); {summary}"
    )
    how = " (a sort of integer coverage counts, DeepGini's a stable sort of float scores)" if m.endswith("-CTM") else ""
    # both prioritizations are a score and one sort of the same tests: which is quicker is the implementation's
    why = (
        "setup",
        f"{m}'s prioritization takes {iv.estimate:.2f}× DeepGini's on {ds} {arch}{how}: each is a score and one sort "
        "of the same tests (table cost_alone)",
    )
    return judge(claim, iv.estimate, iv, test=test, why=why, measured_by="cost_alone", narrow_by="timing processes")


def _cost_row(claim: object, timings: pd.DataFrame, methods: list[str], bench: pd.DataFrame | None = None) -> dict:
    """The smallest time ratio (method / DeepGini) among `methods`, end to end, each method with its own forward pass
    (end_to_end_timings): in each fresh process the mean ratio of its rounds, their mean with a t interval over the
    processes (process_ratio); a row not held is measured by the naive-vs-incremental CAM benchmark (`bench`) where
    one is given, else by table cost."""
    from ..stats import Interval
    from ..verdict import judge

    gini = timings[timings["method"] == "DeepGini"]
    ratios = {m: process_ratio(timings, m, "seconds") for m in timings["method"].unique() if m in methods}
    m, (est, low, high, se, df) = min(ratios.items(), key=lambda kv: kv[1][0])
    mine = timings[timings["method"] == m]
    per_round = timings.pivot_table(index=["process", "repeat"], columns="method", values="seconds")
    processes = timings["process"].nunique()
    test = (
        f"{m} vs DeepGini on {int(timings['tests'].iloc[0]):,} tests of {timings['dataset'].iloc[0]} "
        f"{timings['model'].iloc[0]}, end to end, each with its own forward pass (DeepGini the softmax alone, "
        f"{m} the activations; neuron coverage over the artifact's {int(timings['neurons'].iloc[0])} neurons; "
        f"{len(ratios)} methods timed): in each of {processes} fresh processes the mean ratio over "
        f"{len(gini) // processes} rounds, each timing both passes back to back; t interval over the processes (the "
        f"rounds' median ratio {(per_round[m] / per_round['DeepGini']).median():.2f})"
    )
    soft, act = gini["forward_s"].median(), mine["forward_s"].median()
    why = (
        "setup",
        f"{m} takes {mine['seconds'].median():.2f} s end to end, {act:.2f} s of it its forward pass, where DeepGini's "
        f"softmax pass takes {soft:.2f} s and its prioritization {gini['method_s'].median():.4f} s (medians over the "
        "rounds, table cost): the pass both need is most of either's time",
    )
    measured = "cost"
    if bench is not None and len(bench):
        fastest = bench.loc[bench["speedup"].idxmax()]
        why = (
            "setup",
            f"{why[1]}; our coverage and surprise code is vectorized (incremental greedy CAM, matrix KDE and nearest "
            f"neighbours): a naive greedy CAM that rescans every test at every step, as the artifact's does, is "
            f"{fastest['speedup']:,.0f}× slower on {int(fastest['tests']):,} tests ({fastest['criterion']})",
        )
        measured = "cam_implementations"
    iv = Interval(est, low, high, "t over processes", se, df)
    row = judge(claim, est, iv, test=test, why=why, measured_by=measured, narrow_by="timing processes")
    if row["decision"] == "inconclusive":  # what the timings do show, behind the row's disclosure
        row["why"] += f"; what the timings show: {why[1]}"
    return row


METRIC_WORDS = {"held_out_accuracy": "held-out accuracy", "pool_accuracy": "pool accuracy"}


def _iv_text(r: Mapping) -> str:
    """'+0.012 [-0.010, +0.031]' of a difference row."""
    return f"{r['difference']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"


def _picks_cause(
    picks: pd.DataFrame,
    pair: str,
    rival: str,
    percent: int,
    protocol: str = "one-shot",
    ablation: pd.DataFrame | None = None,
    metric: str = "held_out_accuracy",
):
    """(why, measured_by) of a retraining row not held, decided by the ablation of DeepGini's picks (table
    retraining_ablation: DeepGini's own order taken at most one pick per source image, and stratified to the pool's
    attack shares, each against DeepGini and the row's rival, paired by seed, in the row's metric).

    An ablation closes the gap when it retrains better than DeepGini (its interval above 0) and no longer loses to
    the rival (its interval reaches 0). Source diversity closing it is a finding: DeepGini's own ranking stacks several
    adversarial versions of one uncertain image in its top k, as it would on the artifact's pool. The attack mix
    alone closing it is setup: the pool's attack shares are our construction's (JSMA and C&W attack a sample of the
    images). Every ablation still losing to the rival rules the make-up out but decides nothing: random's picks and
    the held-out half are drawn alike from the pool, and no ablation here varies what the models are scored on, so
    the cause is unknown and names fresh attacks as what would tell. Anything else is unknown: the table does not
    decide it at its seeds, and more
    retraining seeds would. Without the table (or its rows for the pair) the cause is unknown and names the make-up
    of table retraining_picks as what that ablation would vary."""
    from ..verdict import unexplained
    from .retraining import ABLATIONS, ONE_PER_SOURCE

    mine = picks if "protocol" not in picks else picks[picks["protocol"] == protocol]
    by = mine[(mine["pair"] == pair) & (mine["percent"] == percent)].set_index("method")
    gini, other = by.loc["DeepGini"], by.loc[rival]
    sub = pd.DataFrame() if ablation is None or ablation.empty else ablation
    if len(sub):
        sub = sub[(sub["pair"] == pair) & (sub["protocol"] == protocol) & (sub["percent"] == percent)]
        sub = sub[sub["metric"] == metric].set_index(["selection", "against"])
    if not len(sub) or not all((a, rival) in sub.index for a in ABLATIONS):
        shares = [c for c in by.columns if c.startswith("share ")]
        attack = (gini[shares] - other[shares]).astype(float).idxmax()
        seen = (
            f"on {pair}, DeepGini's {percent} % picks are {gini[attack]:.0%} {attack.removeprefix('share ')} inputs "
            f"from {gini['source_images']:,.0f} source images, {rival}'s {other[attack]:.0%} from "
            f"{other['source_images']:,.0f} (table retraining_picks)"
        )
        return unexplained(f"an ablation that matches the picks' make-up across methods ({seen})"), ""
    what = METRIC_WORDS[metric]
    closes = {a: sub.loc[(a, "DeepGini"), "ci_low"] > 0 and sub.loc[(a, rival), "ci_high"] >= 0 for a in ABLATIONS}
    still = {a: sub.loc[(a, rival), "ci_high"] < 0 for a in ABLATIONS}
    versus = "; ".join(
        f"{a.removeprefix('DeepGini, ')} ({sub.loc[(a, rival), 'source_images']:,.0f} sources): "
        f"{_iv_text(sub.loc[(a, 'DeepGini')])} against DeepGini, {_iv_text(sub.loc[(a, rival)])} against {rival}"
        for a in ABLATIONS
    )
    sources = (
        f"on {pair} ({protocol}, {percent} %, {what}) DeepGini's picks come from {gini['source_images']:,.0f} source "
        f"images, {rival}'s from {other['source_images']:,.0f}"
    )
    measured = f"{sources}; {versus} (table retraining_ablation)"
    if closes[ONE_PER_SOURCE]:
        return ("finding", f"source diversity; {measured}"), "retraining_ablation"
    if any(closes.values()):
        return ("setup", f"the pool's attack mix, which our construction sets; {measured}"), "retraining_ablation"
    if all(still.values()):  # the make-up is ruled out, not the protocol: random's picks share the held-out half's
        # distribution (both are random halves of the same pool's source images), which no ablation here varies
        return unexplained(
            "scoring on inputs that neither method's picks were drawn like (table retraining_by_attack's fresh "
            f"attacks, as a row) would tell; with its picks' make-up matched DeepGini still loses ({measured})"
        ), ""
    seeds = int(sub["seeds"].max())
    return ("unknown", f"the ablation does not decide it at {seeds} seeds, more would; {measured}"), ""


def _cause_name(why: tuple[str, str]) -> str:
    """'finding: source diversity': a cause's kind and its name (the words before its measurements)."""
    return f"{why[0]}: {why[1].split(';')[0]}"


def _consistent_cause(why: tuple[str, str], measured: str, failing: dict, ablation: pd.DataFrame | None,
                      metric: str, comparator: str = "random") -> tuple[tuple[str, str], str]:  # fmt: skip
    """A retraining row's cause holds for the row only if the ablation names the same cause on every pair the row is
    not held on (`failing`: pair -> (why, measured_by) of _picks_cause), and, for source diversity, if no pair and
    protocol of table retraining_ablation shows DeepGini's order taken one pick per source image retraining worse
    than DeepGini's own picks, or still losing to the row's `comparator` ("random", or "coverage": the pair's rival)
    where DeepGini loses to it, in the row's metric (an interval wholly below 0). Otherwise `unknown`, saying what
    disagrees: more pairs and seeds of the ablation would tell."""
    from ..verdict import unexplained
    from .retraining import ONE_PER_SOURCE

    names = {p: _cause_name(w) for p, (w, _) in failing.items()}
    if len(set(names.values())) > 1:
        listed = "; ".join(f"{p}: {n}" for p, n in names.items())
        return unexplained(
            f"the ablation on every pair not held agreeing on one cause (today it does not: {listed})"
        ), ""
    if why[0] == "finding" and why[1].startswith("source diversity") and ablation is not None and len(ablation):
        a = ablation[ablation["metric"] == metric]
        worse = a[(a["selection"] == ONE_PER_SOURCE) & (a["against"] == "DeepGini") & (a["ci_high"] < 0)]
        # wherever DeepGini loses to the row's comparator, its one-per-source picks losing too contradicts the cause
        rival = (a["against"] == "random") if comparator == "random" else ~a["against"].isin(["DeepGini", "random"])
        loses = a[rival & (a["selection"] == "DeepGini") & (a["ci_high"] < 0)][["pair", "protocol", "against"]]
        still = a[rival & (a["selection"] == ONE_PER_SOURCE) & (a["ci_high"] < 0)].merge(loses)
        if len(worse) or len(still):
            against = "; ".join(
                [
                    f"{r['pair']} ({r['protocol']}): {_iv_text(r)} against DeepGini's own picks"
                    for _, r in worse.iterrows()
                ]
                + [
                    f"{r['pair']} ({r['protocol']}): still {_iv_text(r)} against {r['against']}"
                    for _, r in still.iterrows()
                ]
            )
            return unexplained(
                "the one-per-source ablation agreeing across pairs and protocols (it closes the gap where the row "
                f"fails, but not on {against}; table retraining_ablation)"
            ), ""
    if len(failing) > 1:
        why = (why[0], f"{why[1]} (the same cause on all {len(failing)} pairs not held)")
    return why, measured


def _retraining_row(
    claim: object,
    diffs: pd.DataFrame,
    picks: pd.DataFrame,
    protocol: str,
    rival: str,
    rivals: pd.DataFrame | None,
    ablation: pd.DataFrame | None = None,
    metric: str = "held_out_accuracy",
) -> dict:
    """DeepGini against the coverage rival (rival 'coverage') or random at the largest percentage under `protocol`,
    in `metric` (`diffs`: DeepGini − method in it, per pair), the rule applied to every pair. Against coverage, a pair
    whose rival does not order the pool (`rivals`, column orders_pool: its tie-break decides more of its top k than
    the register allows) is left out of the rule; where no pair is left, the row is untestable (the register's
    overlap_max on the tie share). A row not held takes its cause from the ablation of DeepGini's picks
    (_picks_cause)."""
    from .. import stats
    from ..verdict import judge
    from .retraining import CONTROL

    top = diffs[(diffs["percent"] == diffs["percent"].max()) & (diffs["protocol"] == protocol)]
    top = top[top["difference"].notna() & ~top["method"].isin(["DeepGini", "none"])]
    against_random = top[top["method"] == "random"].set_index("pair")
    randoms = against_random["difference"]  # DeepGini − random, per pair
    top = top[top["method"] == "random"] if rival == "random" else top[~top["method"].isin(["random", CONTROL])]
    shares, left_out = {}, []
    if rival == "coverage" and claim.overlap_max is not None:
        if rivals is None:
            raise ValueError(f"claim {claim.claim!r}: give the rivals' table (tie share of each chosen rival)")
        chosen = rivals[rivals["chosen"]].set_index("pair")
        shares = {p: float(chosen.loc[p, "tie_share"]) for p in top["pair"]}
        left_out = [p for p in top["pair"] if not bool(chosen.loc[p, "orders_pool"])]
        if len(left_out) < len(top):
            top = top[~top["pair"].isin(left_out)]
    ivs = {
        r["pair"]: stats.Interval(r["difference"], r["ci_low"], r["ci_high"], r["test"], r.get("se"), r.get("df"))
        for _, r in top.iterrows()
    }
    pair, iv, summary = every_pair(claim.rule, ivs)
    d = top[top["pair"] == pair].iloc[0]
    why, measured = _picks_cause(picks, pair, d["method"], int(d["percent"]), protocol, ablation, metric)
    if claim.rule.decide(iv.estimate, iv.low, iv.high) == "not held":
        decided = unit_decisions(claim.rule, ivs)[0]
        failing = {
            p: _picks_cause(picks, p, r["method"], int(r["percent"]), protocol, ablation, metric)
            for p, r in top.set_index("pair").iterrows()
            if decided[p] == "not held"
        }
        why, measured = _consistent_cause(why, measured, failing, ablation, metric, rival)
    # held-out rows resample the held-out source images as well as the seeds, and those often dominate
    narrow = "retraining seeds and held-out source images" if "source images resampled" in d["test"] else "seeds"
    test = (
        f"deciding pair {pair}, vs {d['method']} ({protocol}, {METRIC_WORDS[metric]}); {summary}; 1 trained model per "
        "pair, each retraining seed on its own pool / held-out split of the source images, "
        f"{int(d['seeds'])} retraining seeds (tie-breaks, extra training images, batch order vary): {d['test']}"
    )
    if rival == "coverage" and pair in randoms.index:  # the rival against random: is it a comparator at all?
        test += (
            f"; {d['method']} − random {randoms[pair] - d['difference']:+.3f}, DeepGini − random "
            f"{randoms[pair]:+.3f} ({METRIC_WORDS[metric]}, seed means)"
            + (": the rival retrains worse than a random pick" if randoms[pair] - d["difference"] < 0 else "")
        )
    if metric == "pool_accuracy" and rival == "coverage" and claim.paper_estimate is not None:
        claim = _against_chosen_rival(claim, pair, d["method"])
    if not shares:
        row = judge(claim, iv.estimate, iv, test=test, why=why, measured_by=measured, narrow_by=narrow)
        return _below_random_caveat(row, rival, pair, d, against_random)
    judged = [p for p in ivs if p not in left_out]  # empty when every pair's rival is degenerate
    tie = max(shares[p] for p in judged) if judged else min(shares.values())
    test += "; ties decide " + ", ".join(f"{shares[p]:.0%} of {p}'s rival's top k" for p in shares)
    if left_out and len(left_out) < len(shares):
        test += f"; left out (its rival does not order the pool): {', '.join(left_out)}"
    row = judge(claim, iv.estimate, iv, test=test, why=why, measured_by=measured, narrow_by=narrow,
                overlap=(tie, "retraining_rival"))  # fmt: skip
    if row["decision"] == "untestable here":  # the core's words are about shared selections; say what is shared
        row["why"] = (
            f"ties decide {tie:.0%} of the top k of every pair's best coverage rival (register's limit "
            f"{claim.overlap_max:.0%}): its picks are its tie-break's, not coverage's (table retraining_rival)"
        )
    return _below_random_caveat(row, rival, pair, d, against_random)


def _below_random_caveat(row: dict, rival: str, pair: str, d: Mapping, against_random: pd.DataFrame) -> dict:
    """A held row against the coverage rival carries a caveat where that rival retrains worse than a random pick on
    the deciding pair: DeepGini's lead is then coverage's shortfall unless DeepGini also beats random (its interval
    against random above 0), and the caveat says which (a held row's first clause shows at a glance)."""
    if row["decision"] != "held" or rival != "coverage" or pair not in against_random.index:
        return row
    vs = against_random.loc[pair]
    if vs["difference"] - d["difference"] >= 0:  # the rival is at least as good as random
        return row
    beats = vs["ci_low"] > 0
    row["why"] = (
        f"vs random: rival {vs['difference'] - d['difference']:+.3f}, DeepGini {vs['difference']:+.3f} "
        f"[{vs['ci_low']:+.3f}, {vs['ci_high']:+.3f}]; on {pair} the rival retrains worse than a random pick, and "
        + ("DeepGini beats random too" if beats else "DeepGini does not beat random: its lead is coverage's shortfall")
        + " (table retraining_differences)"
    )
    return row


def _against_chosen_rival(claim: object, pair: str, method: str) -> object:
    """The pool row's claim with the paper's number taken against the rival the row compares with: the artifact's
    10 % pool accuracy (retrain.xlsx) of DeepGini minus that of `method` on `pair`'s sheet (the register's number
    is against the sheet's best, which may be a method that does not order our pool). Unchanged where the sheet has
    no value for `method`."""
    from dataclasses import replace

    from .claims import artifact_retraining

    out, sheet = artifact_retraining(tuple(pair.split()))
    base = method.removesuffix(ARTIFACT_LAYERS)  # the artifact ran every criterion over its own layer set
    if base not in out:
        return claim
    values = {f"DeepGini ({' '.join(sheet)})": out["DeepGini"], f"the row's rival, {base}": out[base]}
    return replace(
        claim,
        paper=f"{out['DeepGini']:.3f} vs {out[base]:.3f} ({base}, {' '.join(sheet)}, 10 %; the sheet's best "
        f"coverage: {max(v for m, v in out.items() if m != 'DeepGini'):.3f})",
        paper_values=values,
        paper_estimate=round(out["DeepGini"] - out[base], 3),
    )


def _apfd_row(
    claim: object, ivs: dict, norm: pd.DataFrame, against: str, n_models: int, siblings: dict | None = None
) -> dict:
    """One 'on every pair' APFD row: the rule applied to each unit (pair, comparator), the deciding unit shown.
    `siblings`: the units of the same comparison on the same set in the other regime groups' rows. A row not held on
    some pair is a finding about the methods only where the comparison fails on every pair, its own and the
    siblings'; where it fails on some pairs and not on others, the cause is unknown (no table varies what separates
    the pairs)."""
    from ..verdict import judge

    (k, m), iv, summary = every_pair(claim.rule, ivs)
    decided = unit_decisions(claim.rule, ivs)[0]
    if against == "softmax":  # every score and pair outside the band, with its side: the scores may fail both ways
        outside = [
            f"{u[1]} on {_label(u[0])} {'better' if ivs[u].estimate > 0 else 'worse'} ({ivs[u].estimate:+.3f})"
            for u in ivs
            if decided[u] == "not held"
        ]
        why = ("finding", "outside the band, ranking tests " + "; ".join(outside or [f"{m} on {_label(k)}"]) +
               " than DeepGini")  # fmt: skip
    else:
        why = (
            "finding",
            f"{m} finds {_label(k)}'s misclassified tests earlier (normalized APFD {norm.loc[k, m]:.3f}, DeepGini "
            f"{norm.loc[k, 'DeepGini']:.3f})",
        )
    # a comparison that fails on some pairs and not on others is not explained by the comparison itself: no table
    # here varies what separates the pairs (dataset, training-set size, accuracy, the test set's make-up)
    # (each row's units read as their own row reads them: the row's family, and the siblings' as theirs)
    sibling_decided = unit_decisions(claim.rule, siblings)[0] if siblings else {}
    failing = {u[0] for u, d in {**sibling_decided, **decided}.items() if d == "not held"}
    others = sorted({_label(u[0]) for u in [*ivs, *(siblings or {})]} - {_label(u) for u in failing})
    if failing and others:
        why = (
            "unknown",
            f"{why[1]}; on {', '.join(others)} it does not fail, and no table here varies what separates the "
            "pairs (dataset, training images, accuracy; on a corrupted set, per-corruption APFD would tell)",
        )
    trained = f"{n_models} trained model{'s' if n_models > 1 else ''} per pair"
    test = f"deciding unit {_label(k)} vs {m}; {summary}; {trained}: {iv.method}"
    if against in ("coverage", "surprise") and n_models > 1:  # the comparator is chosen once, not per model
        test += f"; {m} is the best {against} method on the first model, compared on every model"
    if against == "coverage":  # how far the best baseline itself is from a random order
        # a random order's expected normalized APFD is exactly 0.5 (APFD is linear in the failing tests' positions,
        # whose mean under a random order is the midpoint of the best and worst), where one seeded order scatters
        seeded = f", the seeded random order {norm.loc[k, 'random']:.3f}" if "random" in norm.columns else ""
        test += f"; {m} − a random order {norm.loc[k, m] - 0.5:+.3f} (its expected normalized APFD, 0.5{seeded})"
    # the interval holds the test inputs' noise (source images on a mixed set) and the models' spread: both shrink
    # it, and which dominates varies by row, so the remedy names both
    inputs = "source images" if "source images resampled" in iv.method else "test inputs"
    narrow = f"trained models per pair and {inputs}" if n_models > 1 else inputs
    power = None
    if claim.rule.kind == "equivalent":
        power = equivalence_power(ivs, claim.rule.high)
        test += "; " + margin_sensitivity(ivs, claim.rule.high)
    return judge(claim, iv.estimate, iv, test=test, why=why, measured_by="apfd", narrow_by=narrow, power=power)


def _ablation_caveat(row: dict, norm: pd.DataFrame, rest: list[str], comparators: list[str]) -> None:
    """A held mixed-set row against coverage or the surprise scores gets the fixed-ε ablation's lead as a caveat
    where the ablation ran on one of its pairs: DeepGini − the best comparator in normalized APFD on the ablation's
    set beside the same on the artifact-style set (the first model's; table ablation). How the adversarial inputs
    are built sets how far ahead a softmax score can be."""
    if row["decision"] != "held":
        return
    judged = rest[1].split("+") if len(rest) > 1 else None
    for ds, arch, ts in norm.index:
        if ts != ABLATION or (judged is not None and f"{ds}:{arch}" not in judged):
            continue
        lead = {}
        for test_set in (ABLATION, "original+adversarial"):
            scores = norm.loc[(ds, arch, test_set)]
            rivals = scores.reindex(comparators).dropna()
            lead[test_set] = (scores["DeepGini"] - rivals.max(), rivals.idxmax())
        (fixed, name), (mixed, there) = lead[ABLATION], lead["original+adversarial"]
        row["why"] = (
            f"fixed-ε ablation: lead {fixed:+.3f} (artifact-style {mixed:+.3f}); on {ds} {arch}'s first model, with "
            f"fixed-step attacks that keep their failures, DeepGini's lead over the best there ({name}) is "
            f"{fixed:+.3f}, against {mixed:+.3f} over the best on the artifact-style set ({there}): how the inputs "
            "are built sets the size of the lead (table ablation)"
        )
        return


def margin_sensitivity(ivs: dict, margin: float) -> str:
    """What the same units decide at half and one and a half times an equivalence row's margin (before power):
    "at ±0.01 not held, at ±0.03 held"."""
    from ..verdict import Rule

    out = []
    for m in (margin / 2, margin * 1.5):
        rule = Rule.equivalent(-m, m)
        decided = {rule.decide(iv.estimate, iv.low, iv.high) for iv in ivs.values()}
        out.append(f"at ±{m:g} {next(d for d in ('not held', 'inconclusive', 'held') if d in decided)}")
    return ", ".join(out)


def equivalence_power(ivs: dict, margin: float) -> tuple[float, str]:
    """An equivalence row's power: per unit (pair, score), the chance that its interval's procedure lands inside
    ±margin when the score and DeepGini do equally well (stats.t_equivalence_power at no true difference,
    claims.POWER_SIMS worlds, a seed per unit); the row is as strong as its weakest unit, since it is held only if
    every unit is."""
    from ..stats import t_equivalence_power

    powers = {u: t_equivalence_power(iv, margin, POWER_SIMS, seed=i) for i, (u, iv) in enumerate(ivs.items())}
    weakest = min(powers, key=powers.get)
    return powers[weakest], (
        f"no true difference (showing equivalence within ±{margin:g}), the weakest of {len(powers)} units "
        f"({_label(weakest[0])} vs {weakest[1]})"
    )


def _max_coverage_row(claim: object, maxcov: pd.DataFrame) -> dict:
    """The share of tests CAM needs to reach maximum coverage, per judged criterion, pair and set: mean over CAM
    seeds with a t interval (stats.seed_summary), the rule applied to every unit."""
    from .. import stats
    from ..verdict import judge

    judged = maxcov[maxcov["judged"]]
    if "ceiling" in judged and len(judged) and (judged["ceiling"] < claim.rule.high).all():
        top = judged.loc[judged["ceiling"].idxmax()]
        forced = (
            "CAM needs at most one test per item it covers, and on every judged unit the items covered are fewer "
            f"than {claim.rule.high:.0%} of the set's tests (at most {top['ceiling']:.1%}: {top['method']}, "
            f"{top['dataset']} {top['model']}, {top['test_set']} set), so no share can reach the rule's threshold"
        )
    else:
        forced = None
    ivs = {
        (r["dataset"], r["model"], r["test_set"], r["method"]): stats.seed_summary(
            [float(v) for v in r["seed_shares"].split()]
        )
        for r in judged.to_dict("records")
    }
    key, iv, summary = every_pair(claim.rule, ivs)
    worst = judged.set_index(["dataset", "model", "test_set", "method"]).loc[key]
    test = (
        f"deciding unit {key[3]}, {key[0]} {key[1]}, {key[2]} set; {summary} (criterion × pair × set; KMNC shown, not "
        f"judged); share of the set's tests, {iv.method.replace('seeds', 'CAM seeds')} (CAM's start and ties)"
    )
    why = (
        "finding",
        f"{key[3]} keeps adding coverage until test {int(worst['tests_to_max']):,} of {key[0]} {key[1]}'s {key[2]} "
        "set (the notebook's seed)",
    )
    return judge(claim, iv.estimate, iv, test=test, why=why, measured_by="max_coverage", narrow_by="CAM seeds",
                 forced=forced)  # fmt: skip


def _shortfall(accuracy: pd.DataFrame, pairs: list[str]) -> float:
    """The largest test-accuracy shortfall from the artifact's model (artifact - ours) among `pairs` ("dataset:model")
    whose artifact accuracy is known; NaN when none is."""
    rows = accuracy[(accuracy["dataset"] + ":" + accuracy["model"]).isin(pairs)]
    gaps = (rows["artifact_accuracy"] - rows["test_accuracy"]).dropna()
    return float(gaps.max()) if len(gaps) else math.nan


def check_regimes(
    claim_set: dict, accuracy: pd.DataFrame, timings: pd.DataFrame, params: object, bench: pd.DataFrame | None = None
) -> None:
    """Compute every paper regime's criterion on this run (verdict.check_regime), from what the run measured: the
    fewest training images any pair's model was trained on and the pairs' test accuracy against the artifact's models
    (the APFD rows; the max-coverage row's test images and accuracy), and for the cost rows the
    tests timed and what the timed CAM costs against a naive rescan as the artifact runs CAM (`bench`:
    cam_benchmark). A property the run cannot compute (no artifact accuracy for any pair judged, no benchmark)
    leaves the criterion uncomputed: the row then reads miniature."""
    from ..verdict import check_regime
    from .claims import MIXED_VARIABLE, attacked_share, images, max_coverage_scope

    for key, claim in claim_set.items():
        regime = claim.regime
        if regime is None or regime.kind != "paper":
            continue
        kind, *rest = key.split("|")
        if kind in ("beats_coverage", "softmax_match", "beats_surprise"):
            # the fewest training images any of the row's pairs' models was trained on, as the run loaded them (a
            # row of one regime group names its pairs in its key: claims.regime_groups)
            judged = rest[1].split("+") if len(rest) > 1 else list(params.pairs)
            rows = accuracy[(accuracy["dataset"] + ":" + accuracy["model"]).isin(judged)]
            variable, prop = float(rows["train_images"].min()), _shortfall(accuracy, judged)
            if regime.variable == MIXED_VARIABLE:  # a mixed set's make-up: the share of images every attack reached
                variable = attacked_share(vars(params) if not isinstance(params, Mapping) else params, judged)
        elif kind == "max_coverage":
            judged, _ = max_coverage_scope(params)
            variable = min(images(params, pair.split(":")[0])[1] for pair in judged)
            prop = _shortfall(accuracy, judged)
        elif kind in ("cost", "cost_slow"):
            variable = float(timings["tests"].iloc[0])
            # the timed tools' cost against the artifact's: our CAM over a naive rescan on the same tests (cam_benchmark)
            prop = (
                float((bench["incremental_s"] / bench["naive_s"]).min())
                if bench is not None and len(bench)
                else math.nan
            )
        else:
            continue
        if math.isfinite(variable) and math.isfinite(prop):
            check_regime(regime, variable, prop)


def on_pairs(frame: pd.DataFrame, rest: list[str]) -> pd.DataFrame:
    """The rows of a per-pair table (column pair: "fashion_mnist lenet1") of the pairs a claim's key names after its
    kind (a regime group: "fashion_mnist:lenet1+fashion_mnist:lenet5"), or every row where it names none."""
    if not rest:
        return frame
    named = {pair.replace(":", " ") for pair in rest[-1].split("+")}
    return frame[frame["pair"].isin(named)]


def verdict_rows(
    claim_set: dict,
    apfd_frame: pd.DataFrame,
    orders: dict,
    truth: dict,
    maxcov: pd.DataFrame,
    retrain_diffs: pd.DataFrame,
    picks: pd.DataFrame,
    timings: pd.DataFrame,
    methods: dict[str, str],
    n_boot: int,
    seed: int,
    bench: pd.DataFrame | None = None,
    replicas: dict | None = None,
    mixed: dict | None = None,
    rivals: pd.DataFrame | None = None,
    ablation: pd.DataFrame | None = None,
    curve: pd.DataFrame | None = None,
    alone: pd.DataFrame | None = None,
) -> list[dict]:
    """Apply every claim's rule to each pair (or unit) and decide the claim; a row not held names its cause and the
    published table that measures it (apfd, max_coverage, cam_implementations) with the column that varies it, or the
    ablation that would tell. A claim whose units are source images (the mixed set) resamples them: its intervals
    need `mixed` (the chapter's model's sets, for their source images) and the replicas' source images."""

    norm = apfd_frame.pivot_table(index=["dataset", "model", "test_set"], columns="method", values="apfd_normalized")
    baselines = paper_baselines(methods)
    replicas = replicas or {}
    n_models = 1 + min((len(v) for v in replicas.values()), default=0)

    def row_sets(rest: list[str]) -> list[tuple]:
        """A row's sets: its test set, on the pairs its key names (a regime group: claims.regime_groups) or all."""
        return [k for k in norm.index
                if rest and k[2] == rest[0] and (len(rest) < 2 or f"{k[0]}:{k[1]}" in rest[1].split("+"))]  # fmt: skip

    def compared(kind: str, k: tuple) -> list[tuple[str, str]]:
        """The (a, b) differences an APFD row of `kind` reads on set k."""
        if kind == "beats_coverage":
            return [("DeepGini", norm.loc[k, baselines].idxmax())]
        if kind == "beats_surprise":
            return [("DeepGini", norm.loc[k, ["LSA", "DSA"]].idxmax())]
        return [(m, "DeepGini") for m in ("max-softmax", "entropy", "margin")]

    def by_source(claim, rest: list[str]) -> bool:
        return claim.units == "source images" or bool(claim.ours and rest and rest[0] != "original")

    # every difference the APFD rows read, computed set by set: the comparisons on one set share their resamples
    # (apfd_differences), so that the clustered weights are drawn once per set, not once per comparison
    wanted: dict[tuple, list] = {}
    for key, claim in claim_set.items():
        kind, *rest = key.split("|")
        if kind in ("beats_coverage", "beats_surprise", "softmax_match"):
            for k in row_sets(rest):
                wanted.setdefault((k, by_source(claim, rest)), []).extend(compared(kind, k))
    found = {}
    for (k, clustered), comparisons in wanted.items():
        comparisons = list(dict.fromkeys(comparisons))
        sources, unit = None, SOURCE_UNIT
        if clustered:
            if mixed is None:
                raise ValueError("a claim over source images needs the mixed sets (mixed=) for their source images")
            sources = [mixed[k].source, *(src for _, _, src in replicas.get(k, []))]
        elif k[2] == "original":  # every model scored on the same test images: one draw of them for all
            sources, unit = [np.arange(len(truth[k]))] * (1 + len(replicas.get(k, []))), TEST_UNIT
        names = {m for c in comparisons for m in c}
        more = [(flags, {m: o[m] for m in names}) for flags, o, _ in replicas.get(k, [])]
        ivs = apfd_differences(truth[k], {m: orders[(*k, m)] for m in names}, comparisons, n_boot, seed, more,
                               sources, unit)  # fmt: skip
        found.update({(k, clustered, *c): iv for c, iv in ivs.items()})

    units = {}  # every APFD row's units, so that a row can see how its comparison fares on the other regime groups
    for key, claim in claim_set.items():
        kind, *rest = key.split("|")
        if kind in ("beats_coverage", "beats_surprise", "softmax_match"):
            clustered = by_source(claim, rest)
            units[key] = {(k, a if kind == "softmax_match" else b): found[(k, clustered, a, b)]
                          for k in row_sets(rest) for a, b in compared(kind, k)}  # fmt: skip

    rows = []
    for key, claim in claim_set.items():
        kind, *rest = key.split("|")
        if kind in ("beats_coverage", "beats_surprise", "softmax_match"):
            family = {"beats_coverage": "coverage", "beats_surprise": "surprise", "softmax_match": "softmax"}[kind]
            siblings = {u: iv for other, ivs in units.items() if other != key
                        and other.split("|")[:2] == key.split("|")[:2] for u, iv in ivs.items()}  # fmt: skip
            rows.append(_apfd_row(claim, units[key], norm, family, n_models, siblings))
            if kind != "softmax_match" and rest[0] == "original+adversarial":
                _ablation_caveat(rows[-1], norm, rest, baselines if kind == "beats_coverage" else ["LSA", "DSA"])
        elif kind == "max_coverage":
            rows.append(_max_coverage_row(claim, maxcov))
        elif kind == "retraining":
            rows.append(_retraining_row(claim, on_pairs(retrain_diffs, rest), picks, "iterative", "coverage", rivals,
                                        ablation))  # fmt: skip
        elif kind == "retraining_pool":
            if curve is None:
                raise ValueError("the pool-accuracy row needs the iterative protocol's curve (curve=)")
            rows.append(_retraining_row(claim, on_pairs(curve, rest), picks, "iterative", "coverage", rivals, ablation,
                                        "pool_accuracy"))  # fmt: skip
        elif kind == "retraining_oneshot":
            rows.append(_retraining_row(claim, retrain_diffs, picks, "one-shot", "coverage", rivals, ablation))
        elif kind == "retraining_random_oneshot":
            rows.append(_retraining_row(claim, retrain_diffs, picks, "one-shot", "random", None, ablation))
        elif kind == "retraining_random":
            rows.append(_retraining_row(claim, on_pairs(retrain_diffs, rest), picks, "iterative", "random", None,
                                        ablation))  # fmt: skip
        elif kind == "cost":
            first = first_timed(timings)
            rows.append(_cost_row(claim, first, [m for m in first["method"].unique() if m != "DeepGini"], bench))
        elif kind == "cost_alone":
            if alone is None:
                raise ValueError("the prioritization-alone row needs the interleaved timings (alone=: alone_for)")
            rows.append(_cost_alone_row(claim, alone))
        else:
            first = first_timed(timings)
            slow = [m for m in first["method"].unique() if m.startswith(("KMNC", "LSC", "DSC"))]
            rows.append(_cost_row(claim, first, slow, bench))
    return rows


# ----------------------------------------------------------------------------------------------------- parameters

PAIR_CHOICES = tuple(
    f"{d}:{m}"
    for d in ("digits", "fashion_mnist", "mnist", "cifar10", "svhn")
    for m in ("lenet1", "lenet5", "resnet20")
) + ("cifar10:vgg16", "svhn:vgg16")
LOCAL_DATASETS = {"digits", "fashion_mnist", "mnist"}


def _spec() -> dict:
    """The chapter's parameters with their profile values."""
    from ..params import Param

    return {
        "seed": Param(int, 0, low=0, high=2**32 - 1, help="random seed"),
        "pairs": Param(
            list,
            ["fashion_mnist:lenet1", "fashion_mnist:lenet5", "mnist:lenet1", "mnist:lenet5"],
            items=str,
            item_choices=PAIR_CHOICES,
            smoke=["digits:lenet1", "digits:lenet5"],
            paper=[
                "mnist:lenet1",
                "mnist:lenet5",
                "cifar10:resnet20",
                "cifar10:vgg16",
                "fashion_mnist:lenet1",
                "fashion_mnist:resnet20",
                "svhn:lenet5",
                "svhn:vgg16",
            ],
            help="dataset:model pairs",
        ),
        "data_source": Param(str, "local", paper="hub", choices=("local", "hub"), help="where the images come from"),
        "n_train": Param(int, 60_000, smoke=2_000, paper=100_000, low=100, high=100_000, help="training images"),
        "n_test": Param(int, 10_000, smoke=540, paper=30_000, low=10, high=30_000, help="original test images"),
        "epochs": Param(int, 8, smoke=15, paper=15, low=1, high=200, help="training epochs"),
        "recipe": Param(
            str, "artifact", smoke="adam", choices=("artifact", "adam"), help="training recipe of the models"
        ),
        "jsma_images": Param(int, 1_000, smoke=30, paper=10_000, low=1, high=30_000, help="images attacked by JSMA"),
        "cw_images": Param(int, 300, smoke=30, paper=10_000, low=1, high=30_000, help="images attacked by C&W-L2"),
        "corrupted_images": Param(
            int, 2_500, smoke=100, low=1, high=30_000, help="test images per corruption of the corrupted set"
        ),
        "ablation_images": Param(
            int, 1_000, smoke=100, low=1, high=30_000, help="images per attack of the fixed-ε ablation (first pair)"
        ),
        "kmnc_k": Param(list, [1000, 10000], items=int, smoke=[100], low=2, high=100_000, help="KMNC section counts"),
        "sa_train": Param(
            int, 5_000, smoke=500, paper=20_000, low=50, high=100_000, help="training traces for LSA/DSA"
        ),
        "scaling_sizes": Param(
            list,
            [10_000, 20_000, 40_000],
            items=int,
            smoke=[1_000, 4_000],
            paper=[10_000, 100_000, 300_000],
            low=100,
            high=1_000_000,
            help="tests in the scaling plot",
        ),
        "cost_repeats": Param(int, 3, smoke=2, low=1, high=50, help="timings per method and size (minimum kept)"),
        "cost_rounds": Param(
            int,
            3,
            smoke=2,
            low=1,
            high=200,
            help="end-to-end timing rounds per process (each: both forward passes, every method)",
        ),
        "cost_processes": Param(
            int, 5, smoke=2, low=2, high=50, help="fresh processes the end-to-end rounds of the first pair run in"
        ),
        "alone_repeats": Param(
            int,
            40,
            smoke=5,
            paper=100,
            low=2,
            high=10_000,
            help="interleaved rounds of prioritization alone, per process",
        ),
        "alone_processes": Param(
            int, 5, smoke=2, low=2, high=50, help="fresh processes the prioritization-alone rounds run in"
        ),
        "naive_n": Param(int, 2_000, smoke=300, low=50, high=20_000, help="tests of the naive CAM benchmark"),
        "retrain_percents": Param(
            list,
            [1, 2, 5, 10],
            items=int,
            smoke=[5, 10],
            paper=list(range(1, 11)),
            low=1,
            high=50,
            help="% of tests retrained on",
        ),
        "retrain_epochs": Param(int, 3, smoke=3, paper=5, low=1, high=50, help="epochs per retraining run"),
        "retrain_seeds": Param(int, 3, smoke=2, low=1, high=20, help="repeats of the retraining experiment"),
        "iterative_pairs": Param(
            int, 1, low=0, high=10, help="pairs per dataset also retrained under the iterative protocol"
        ),
        "fresh_eps": Param(
            float, 0.05, low=0.001, high=1.0, help="L∞ step of the fresh FGSM against each retrained model"
        ),
        "models_per_pair": Param(
            int,
            3,
            smoke=2,
            low=1,
            high=20,
            help="trained models per pair (seeds seed, seed + 1, ...) in APFD intervals",
        ),
        "n_boot": Param(int, 1000, smoke=200, low=50, high=20_000, help="bootstrap resamples per interval"),
    }


SPEC = _spec()


def local_pairs(p: dict) -> str | None:
    """At data_source local, every pair's dataset must be on disk (digits, Fashion-MNIST, the MNIST sample)."""
    hub_only = sorted({pair.split(":")[0] for pair in p["pairs"]} - LOCAL_DATASETS)
    if p["data_source"] == "local" and hub_only:
        return (
            f"parameter 'pairs': {', '.join(hub_only)} needs data_source hub (paper profile); "
            f"local has {', '.join(sorted(LOCAL_DATASETS))}"
        )
    return None


# ------------------------------------------------------------------------------------------------ models and sets

CLASSES = 10
ABLATION = "fixed ε, failures kept"


def _pair_data(ds: str, source: str, seed: int, n_train: int, n_test: int) -> tuple[tuple, tuple]:
    """(training, test) images and labels of one dataset: the first n_train / n_test of its splits."""
    from ..data import image_dataset

    x, y = image_dataset(ds, "train", source, seed)
    xt, yt = image_dataset(ds, "test", source, seed)
    return (x[:n_train], y[:n_train]), (xt[:n_test], yt[:n_test])


class Piece(NamedTuple):
    """One trained model of a pair and its attack sets: what a worker builds into the cache (train_and_attack)."""

    dataset: str
    arch: str
    model_seed: int
    ablation: bool  # the fixed-ε ablation too (the first pair's chapter model)
    settings: dict


def train_and_attack(piece: Piece) -> None:
    """Train one model and build its artifact-style attack sets (and the ablation's), into the cache; the chapter's
    cells then load them (train_pairs, build_test_sets, replicate). Runs in a worker of repro.workers."""
    from . import nets, testsets

    s = piece.settings
    train, test = _pair_data(piece.dataset, s["data_source"], s["seed"], s["n_train"], s["n_test"])
    model, _ = nets.train_cached(piece.arch, *train, CLASSES, s["epochs"], piece.model_seed, s["recipe"])
    testsets.build(model, *test, "artifact", s["caps"], s["seed"], CLASSES)
    if piece.ablation:
        testsets.build(model, *test, "fixed", s["ablation_caps"], s["seed"], CLASSES)


def train_and_attack_all(pairs: list[tuple[str, str]], data: dict, params: object) -> list[float]:
    """Every model the chapter trains (models_per_pair per pair) that the cache lacks, with its attack sets, side by
    side on the cores (repro.workers), the pairs with most training images first; the seconds of each piece."""
    from .. import workers
    from . import nets

    settings = {
        "data_source": params.data_source,
        "seed": params.seed,
        "n_train": params.n_train,
        "n_test": params.n_test,
        "epochs": params.epochs,
        "recipe": params.recipe,
        "caps": attack_caps(params),
        "ablation_caps": ablation_caps(params),
    }
    pieces = [
        Piece(ds, arch, params.seed + i, i == 0 and j == 0, settings)
        for i in range(params.models_per_pair)
        for j, (ds, arch) in enumerate(pairs)
        if not nets.is_trained(arch, *data[ds][0], CLASSES, params.epochs, params.seed + i, params.recipe)
    ]
    pieces.sort(key=lambda p: (-len(data[p.dataset][0][1]), p.arch != "lenet5"))
    return workers.map_on_cores(train_and_attack, pieces, "models and attacks") if pieces else []


def train_pairs(pairs: list[tuple[str, str]], params: object) -> dict[tuple[str, str], Pair]:
    """Load every dataset once, train every model the chapter needs and its attacks side by side where they are not
    cached (train_and_attack_all), and load every pair's model."""
    from . import nets

    data = {
        ds: _pair_data(ds, params.data_source, params.seed, params.n_train, params.n_test)
        for ds in dict.fromkeys(d for d, _ in pairs)
    }
    train_and_attack_all(pairs, data, params)
    out = {}
    for ds, arch in pairs:
        train, test = data[ds]
        model, _ = nets.train_cached(arch, *train, CLASSES, params.epochs, params.seed, params.recipe)
        out[ds, arch] = Pair(ds, arch, train, test, model)
    return out


def accuracy_table(models: dict[tuple[str, str], Pair]) -> pd.DataFrame:
    """Test accuracy of every model, beside the artifact's where it reports one, and whether the pair passes the
    register's criterion for the paper's pairs (pair_criterion)."""
    from . import nets

    rows = []
    for (ds, arch), p in models.items():
        acc = float((nets.predict_proba(p.model, p.test[0]).argmax(1) == p.test[1]).mean())
        rows.append(
            {
                "dataset": ds,
                "model": arch,
                "train_images": len(p.train[1]),
                "test_images": len(p.test[1]),
                "test_accuracy": acc,
                "artifact_accuracy": PAPER_ACCURACY.get((ds, arch), np.nan),
            }
        )
    frame = pd.DataFrame(rows)
    return frame.assign(paper_criterion=[pair_criterion(r) for r in frame.to_dict("records")])


def pair_criterion(row: Mapping) -> bool | None:
    """Whether one pair passes the register's criterion for the paper's pairs (claims.PAIRS_CRITERION: training images
    in the paper's range, test accuracy within the shortfall of the artifact's model): None where the artifact reports
    no accuracy for the pair."""
    from .claims import PAIRS_CRITERION

    gap = row["artifact_accuracy"] - row["test_accuracy"]
    return None if not math.isfinite(gap) else PAIRS_CRITERION.passes(row["train_images"], gap)


def attack_caps(params: object) -> dict[str, int]:
    """Images attacked by the slow attacks of the artifact-style set (FGSM and BIM attack every test image)."""
    return {"JSMA": params.jsma_images, "CW-L2": params.cw_images}


def ablation_caps(params: object) -> dict[str, int]:
    """Images attacked per attack of the fixed-ε ablation: ablation_images, but an attack defined as the artifact-style
    set's (JSMA, C&W-L2: attacks.same_attack) at most as many as there, so it reads that set's examples instead of
    attacking again (C&W on 1,000 images took a minute of a one-thread worker's time)."""
    from . import attacks, testsets

    caps = attack_caps(params)
    return {
        a: min(params.ablation_images, caps.get(attacks.same_attack(f"fixed {a}"), params.ablation_images))
        for a in testsets.CONSTRUCTIONS["fixed"]
    }


def build_test_sets(models: dict[tuple[str, str], Pair], params: object) -> tuple[dict, pd.DataFrame]:
    """The artifact-style mixed set of every pair, the fixed-ε ablation of the first, and every pair's corrupted set
    (the same for every model of a pair); one row per attack."""
    from . import corruptions, testsets

    mixed, frames = {}, []
    for i, ((ds, arch), p) in enumerate(models.items()):
        builds = [("artifact", "original+adversarial", attack_caps(params))]
        if i == 0:
            builds.append(("fixed", ABLATION, ablation_caps(params)))
        for construction, name, limits in builds:
            mixed[ds, arch, name], rows = testsets.build(p.model, *p.test, construction, limits, params.seed, CLASSES)
            frames.append(rows.assign(dataset=ds, model=arch))
        mixed[ds, arch, SHIFTED] = corruptions.corrupted_set(*p.test, params.corrupted_images, params.seed)
    cols = [
        "dataset",
        "model",
        "construction",
        "attack",
        "images_attacked",
        "examples_kept",
        "success_rate",
        "already_misclassified",
        "unperturbed_kept",
        "success_rate_correct",
        "mean_linf",
    ]
    return mixed, pd.concat(frames, ignore_index=True)[cols]


def attack_words(attack_rows: pd.DataFrame) -> str:
    """Where an attack keeps already-misclassified originals unchanged as successes (artifact construction): per pair,
    the unperturbed examples kept and the success rate with and without those images."""
    art = attack_rows[attack_rows["construction"] == "artifact"]
    lines = []
    for (ds, arch), sub in art.groupby(["dataset", "model"], sort=False):
        kept = sub[sub["unperturbed_kept"] > 0]
        parts = [
            f"{r['attack']} keeps {r['unperturbed_kept']:,} of the {r['already_misclassified']:,} misclassified "
            f"images it attacked unchanged; its success rate is {r['success_rate']:.1%} over every image attacked and "
            f"{r['success_rate_correct']:.1%} over the correctly classified ones"
            for r in kept.to_dict("records")
        ]
        lines.append(
            f"* **{ds} {arch}**: " + ("; ".join(parts) if parts else "no attack keeps an unchanged image") + "."
        )
    return (
        "An image the model already misclassifies counts as a success. Foolbox 1.x returns such an image unchanged "
        'without running the attack (`Attack.__call__`: "Not running the attack because the original input is '
        "already misclassified\"), and the artifact's `generate_adv.py` keeps every array an attack returns, so its "
        "mixed set holds those originals once more per attack. Our attacks (ART) keep such an image only as far as "
        "each attack leaves it: BIM returns it unchanged, FGSM's minimal search takes one step first, JSMA and C&W "
        "perturb it. Which attacks kept how many unchanged, per pair (the table's second rate leaves those images "
        "out):\n\n" + "\n".join(lines)
    )


def makeup_table(mixed: dict) -> pd.DataFrame:
    """Inputs of each kind in every mixed set, beside the artifact's Fashion-MNIST LeNet-1 set."""
    from . import testsets

    rows = []
    for (ds, arch, name), m in mixed.items():
        if name == SHIFTED:
            continue
        counts = testsets.makeup(m)
        original = counts.pop("original")
        rows.append(
            {
                "set": f"{ds} {arch}, {name}",
                "original": original,
                "adversarial": sum(counts.values()),
                "by_attack": ", ".join(f"{k} {v:,}" for k, v in counts.items()),
            }
        )
    art = testsets.ARTIFACT_MAKEUP
    rows.append(
        {
            "set": "artifact: fashion_mnist lenet1",
            "original": art["original"],
            "adversarial": art["adversarial"],
            "by_attack": "not recorded",
        }
    )
    frame = pd.DataFrame(rows)
    return frame.assign(adversarial_share=frame["adversarial"] / (frame["adversarial"] + frame["original"]))


def _share(m) -> float:
    """Adversarial share of a mixed set."""
    return float((m.kind != "original").mean())


def ablation_words(table: pd.DataFrame, mixed: dict, pair: tuple[str, str], caps: dict[str, int]) -> str:
    """What the fixed-ε construction does to DeepGini and to the surprise scores, and what else differs."""
    by = table.set_index("method")
    art, fixed = "original+adversarial", ABLATION
    first = lambda col: max(["DeepGini", "LSA", "DSA"], key=lambda m: by.loc[m, col])
    flip = first(art) != first(fixed)
    return (
        f"With fixed steps and failures kept, DeepGini's normalized APFD is {by.loc['DeepGini', fixed]:.3f} "
        f"instead of {by.loc['DeepGini', art]:.3f}, LSA's {by.loc['LSA', fixed]:.3f} instead of "
        f"{by.loc['LSA', art]:.3f} and DSA's {by.loc['DSA', fixed]:.3f} instead of {by.loc['DSA', art]:.3f}. "
        f"The best of the three is {first(fixed)} on the ablation and {first(art)} on the artifact-style set"
        + (": the ranking flips. " if flip else ". ")
        + f"The construction is not the only difference: the ablation attacks {_caps_words(caps)}, so its "
        f"adversarial share is {_share(mixed[(*pair, fixed)]):.0%} against {_share(mixed[(*pair, art)]):.0%}."
    )


def _caps_words(caps: dict[str, int]) -> str:
    """'1,000 images per attack (C&W-L2 300)': the ablation's images per attack, the exceptions named."""
    most = max(caps.values())
    fewer = [f"{a} {n:,}" for a, n in caps.items() if n != most]
    return f"{most:,} images per attack" + (f" ({', '.join(fewer)})" if fewer else "")


def see_all(models: dict[tuple[str, str], Pair], mixed: dict, params: object) -> tuple[dict, dict, pd.DataFrame]:
    """Every test set through its pair's model: subjects, misclassified flags, and a summary row per set; each pair's
    references (fit_references) set on it. Kept (kept) with the seconds it measured."""
    p = params.only("sa_train", "seed")

    def build() -> tuple:
        subjects, truth, rows, refs = {}, {}, [], {}
        for (ds, arch), pair in models.items():
            fit_references(pair, p.sa_train, p.seed)
            refs[ds, arch] = pair.stats, pair.traces, pair.artifact_stats
            sets = {"original": pair.test, **{n: (m.x, m.y) for (d, a, n), m in mixed.items() if (d, a) == (ds, arch)}}
            for name, (x, y) in sets.items():
                subjects[ds, arch, name], truth[ds, arch, name], seconds = see(pair, x, y)
                rows.append({"dataset": ds, "model": arch, "test_set": name, "tests": len(y),
                             "misclassified": int(truth[ds, arch, name].sum()),
                             "neurons": subjects[ds, arch, name].acts.shape[1], "forward_seconds": seconds})  # fmt: skip
        return subjects, truth, pd.DataFrame(rows), refs

    subjects, truth, rows, refs = kept("see-all", build, p, *identities(models), *identities(mixed), timed=True)
    for key, (pair_stats, traces, artifact_stats) in refs.items():
        models[key].stats, models[key].traces, models[key].artifact_stats = pair_stats, traces, artifact_stats
    return subjects, truth, rows


def replicate(models: dict, params: object, methods: dict[str, str]) -> tuple[dict, pd.DataFrame]:
    """Models 2 .. models_per_pair of every pair (seeds seed + 1, ..., same data and recipe), each with its own
    artifact-style mixed set (its own attacks): every prioritizer's APFD on its original, mixed and corrupted sets. Returns
    {(dataset, model, set): [(misclassified, {method: order}, source image of each test), ...]} for the verdict's
    intervals, and the records (column trained_model: 1, 2, ...; the chapter's model is 0). Kept (kept): keyed by
    the pairs' data and the parameters that determine the further models' training, attacks and references."""
    from tqdm.auto import tqdm

    from . import corruptions, nets, testsets

    p = params.only("models_per_pair", "epochs", "seed", "recipe", "jsma_images", "cw_images", "corrupted_images",
                    "sa_train")  # fmt: skip

    def build() -> tuple[dict, pd.DataFrame]:
        replicas, frames = {}, []
        for i in tqdm(range(1, p.models_per_pair), desc="further trained models", leave=False):
            for (ds, arch), pair in models.items():
                model, _ = nets.train_cached(arch, *pair.train, CLASSES, p.epochs, p.seed + i, p.recipe)
                other = Pair(ds, arch, pair.train, pair.test, model)
                m, _ = testsets.build(model, *pair.test, "artifact", attack_caps(p), p.seed, CLASSES)
                c = corruptions.corrupted_set(*pair.test, p.corrupted_images, p.seed)
                fit_references(other, p.sa_train, p.seed)
                subjects, truth, source = {}, {}, {}
                for name, (x, y, src) in {
                    "original": (*pair.test, np.arange(len(pair.test[1]))),
                    "original+adversarial": (m.x, m.y, m.source),
                    SHIFTED: (c.x, c.y, c.source),
                }.items():
                    subjects[ds, arch, name], truth[ds, arch, name], _ = see(other, x, y)
                    source[ds, arch, name] = src
                frame, orders = apfd_table(subjects, truth, methods, p.seed)
                frames.append(frame.drop(columns="seconds").assign(trained_model=i))
                for key in subjects:
                    flags, own = truth[key], {n: orders[(*key, n)] for n in methods}
                    replicas.setdefault(key, []).append((flags, own, source[key]))
        return replicas, (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame())

    return kept("replicas", build, p, methods, *identities(models))


def models_table(apfd_frame: pd.DataFrame, more: pd.DataFrame, sets: tuple[str, str]) -> pd.DataFrame:
    """Normalized APFD of DeepGini, max-softmax and the coverage baseline of best APFD on the chapter's model (the
    coverage family: neuron and surprise coverage), on every trained model of each pair (model 0 is the chapter's),
    original and mixed sets."""
    frame = pd.concat([apfd_frame.assign(trained_model=0), more], ignore_index=True)
    frame = frame[frame["test_set"].isin(sets)]
    rows = []
    for (ds, arch, ts), sub in frame.groupby(["dataset", "model", "test_set"], sort=False):
        first = sub[sub["trained_model"] == 0]
        rival = best_of(first, "coverage", (ds, arch, ts))
        for method in ("DeepGini", "max-softmax", rival):
            values = sub[sub["method"] == method].set_index("trained_model")["apfd_normalized"]
            rows.append({"pair": f"{ds} {arch}", "test_set": ts, "method": method,
                         **{f"model {i}": float(v) for i, v in values.items()}})  # fmt: skip
    return pd.DataFrame(rows)


def on_set(apfd_frame: pd.DataFrame, key: tuple[str, str, str]) -> pd.DataFrame:
    """The APFD records of one (dataset, model, test set)."""
    ds, arch, ts = key
    return apfd_frame[(apfd_frame["dataset"] == ds) & (apfd_frame["model"] == arch) & (apfd_frame["test_set"] == ts)]


def best_of(apfd_frame: pd.DataFrame, family: str, key: tuple[str, str, str]) -> str:
    """Method of `family` with the highest normalized APFD on one (dataset, model, test set): family "coverage" is
    the chapter's one definition of the best coverage baseline (method_table), "surprise" the better of LSA and DSA."""
    sub = on_set(apfd_frame, key)
    sub = sub[sub["family"] == family]
    return sub.loc[sub["apfd_normalized"].idxmax(), "method"]


def apfd_words(apfd_frame: pd.DataFrame, sets: tuple[str, str]) -> str:
    """One line per pair and set: DeepGini, the best coverage and surprise methods, and random (normalized APFD)."""
    lines = []
    for (ds, arch, ts), sub in apfd_frame[apfd_frame["test_set"].isin(sets)].groupby(
        ["dataset", "model", "test_set"], sort=False
    ):
        by = sub.set_index("method")["apfd_normalized"]
        cov, sur = best_of(apfd_frame, "coverage", (ds, arch, ts)), best_of(apfd_frame, "surprise", (ds, arch, ts))
        lines.append(
            f"* **{ds} {arch}, {ts}**: DeepGini {by['DeepGini']:.3f}; best coverage {cov} {by[cov]:.3f}; "
            f"best surprise {sur} {by[sur]:.3f}; random {by['random']:.3f}."
        )
    return "Normalized APFD:\n\n" + "\n".join(lines)


def confidence_table(subjects: dict, truth: dict, mixed: dict, test_set: str = "original+adversarial") -> pd.DataFrame:
    """Per pair and input kind of a mixed set (the adversarial one, or the corrupted one): the inputs, how many are
    misclassified, and the share of those with top softmax above 0.9."""
    rows = []
    for (ds, arch, name), m in mixed.items():
        if name != test_set:
            continue
        probs, wrong = subjects[ds, arch, name].probs, truth[ds, arch, name]
        for kind in dict.fromkeys(m.kind):
            sel = (m.kind == kind) & wrong
            rows.append(
                {
                    "dataset": ds,
                    "model": arch,
                    "inputs": kind,
                    "tests": int((m.kind == kind).sum()),
                    "misclassified": int(sel.sum()),
                    "share_above_0.9": float((probs[sel].max(1) > 0.9).mean()) if sel.any() else np.nan,
                }
            )
    return pd.DataFrame(rows)


def corruption_view(shifted: pd.DataFrame) -> pd.DataFrame:
    """The corrupted set's reader view: per pair, each corruption's error rate (misclassified / tests) and the share
    of its misclassified inputs with top softmax above 0.9."""
    frame = shifted[shifted["inputs"] != "original"].assign(
        pair=shifted["dataset"] + " " + shifted["model"], error_rate=shifted["misclassified"] / shifted["tests"]
    )
    view = frame.pivot_table(index="pair", columns="inputs", values=["error_rate", "share_above_0.9"], sort=False)
    view.columns = [f"{kind}: {'errors' if v == 'error_rate' else 'confident'}" for v, kind in view.columns]
    return view.round(3).reset_index()


def shift_words(adversarial: pd.DataFrame, shifted: pd.DataFrame, apfd_frame: pd.DataFrame) -> str:
    """What the corrupted set changes, read from the tables: the share of confident errors among misclassified
    corrupted against adversarial inputs, and DeepGini's and the best coverage method's normalized APFD on each."""

    def confident(table: pd.DataFrame) -> float:
        wrong = table[table["inputs"] != "original"]
        return float((wrong["misclassified"] * wrong["share_above_0.9"].fillna(0)).sum() / wrong["misclassified"].sum())

    def spread(test_set: str, family: str) -> str:
        values = []
        for (ds, arch, ts), sub in apfd_frame[apfd_frame["test_set"] == test_set].groupby(
            ["dataset", "model", "test_set"], sort=False
        ):
            method = "DeepGini" if family == "DeepGini" else best_of(apfd_frame, family, (ds, arch, ts))
            values.append(float(sub.set_index("method").loc[method, "apfd_normalized"]))
        return f"{min(values):.3f}" if len(values) == 1 else f"{min(values):.3f}–{max(values):.3f}"

    adv, cor = confident(adversarial), confident(shifted)
    return (
        f"Of the misclassified corrupted inputs, {cor:.1%} have a top softmax above 0.9, against {adv:.1%} of the "
        f"misclassified adversarial ones: {'more' if cor > adv else 'fewer'} of the corrupted set's failures are "
        f"confident, and a softmax score ranks those late. On the chapter's models DeepGini's normalized APFD is "
        f"{spread(SHIFTED, 'DeepGini')} on the corrupted sets (best coverage {spread(SHIFTED, 'coverage')}) against "
        f"{spread('original+adversarial', 'DeepGini')} on the mixed sets (best coverage "
        f"{spread('original+adversarial', 'coverage')}); the verdict rows give the intervals over models and source "
        "images."
    )


def ablation_table(apfd_frame: pd.DataFrame, pair: tuple[str, str]) -> pd.DataFrame:
    """Normalized APFD of every method on the pair's artifact-style mixed set and on the fixed-ε ablation, over our
    layer set, and in two more columns (named with the ARTIFACT_LAYERS suffix) over the artifact's, for the coverage
    methods that have that variant: one row per method, whichever layer set a verdict row's comparator uses."""
    sub = apfd_frame[
        (apfd_frame["dataset"] == pair[0])
        & (apfd_frame["model"] == pair[1])
        & apfd_frame["test_set"].isin(["original+adversarial", ABLATION])
    ]
    artifact = sub["method"].str.endswith(ARTIFACT_LAYERS)
    sub = sub.assign(
        method=sub["method"].str.removesuffix(ARTIFACT_LAYERS),
        column=sub["test_set"] + np.where(artifact, ARTIFACT_LAYERS, ""),
    )
    wide = sub.pivot_table(index="method", columns="column", values="apfd_normalized", sort=False)
    order = [c for t in ("original+adversarial", ABLATION) for c in (t, t + ARTIFACT_LAYERS) if c in wide.columns]
    return wide[order].rename_axis(columns=None).reset_index()


def tail_table(subjects: dict, truth: dict, kmnc_k: list[int], seed: int) -> pd.DataFrame:
    """TKNC and KMNC as CAM on every mixed set, with our leftover order and with the artifact's worst-first tail."""
    names = [f"TKNC({k})-CAM" for k in THRESHOLDS["TKNC"]] + [f"KMNC({k})-CAM" for k in kmnc_k]
    mixed = {k: s for k, s in subjects.items() if k[2] == "original+adversarial"}

    def build() -> pd.DataFrame:
        rows = []
        for key, s in mixed.items():
            for name in names:
                ours = evaluate(name, s, truth[key], seed)["apfd_normalized"]
                theirs = evaluate(name + ARTIFACT_TAIL, s, truth[key], seed)["apfd_normalized"]
                rows.append({"pair": f"{key[0]} {key[1]}", "method": name, "ours": ours, "artifact_tail": theirs})
        return pd.DataFrame(rows)

    flags = {k: truth[k] for k in mixed}
    return kept("tails", build, {"seed": seed, "names": names}, *identities(mixed), *identities(flags))


# One colour per role in every figure of the chapter (curves, retraining, scaling): the best coverage method of the
# curves is the retraining figure's coverage rival; every KMNC shares one colour; other methods take spare colours.
CHAPTER_ROLES = ("DeepGini", "max-softmax", "entropy", "random", "best coverage", "best surprise", "KMNC",
                 "training images only", "margin")  # fmt: skip
ROLE_ALIASES = {"coverage rival": "best coverage"}
# KMNC is drawn beside the best coverage method (the palette's purple): the palette's next colour, a light pink, was
# hard to tell from it, so KMNC is dark grey (the palette's grey is "training images only", never in that figure)
DARK_ROLES = {"KMNC": (0.25, 0.25, 0.25)}


def role_colors(names: list[str]) -> dict[str, tuple[float, float, float]]:
    """The chapter's colour of each name (a role of CHAPTER_ROLES, an alias, a KMNC method, or a spare colour)."""
    import seaborn as sns

    from ..page import method_colors

    fixed = method_colors(list(CHAPTER_ROLES)) | DARK_ROLES
    spare = iter([*sns.color_palette("colorblind", 10)[len(CHAPTER_ROLES) :], *sns.color_palette("dark", 10)])
    out = {}
    for name in names:
        role = ROLE_ALIASES.get(name, "KMNC" if name.startswith("KMNC") else name)
        out[name] = fixed[role] if role in fixed else next(spare)
    return out


def curves_figure(apfd_frame: pd.DataFrame, orders: dict, truth: dict, pairs: list, sets: tuple, kmnc: int):
    """Fault-detection curves of the softmax scores, random, the best coverage and surprise methods (named in each
    panel's title), and KMNC; one colour per role across the panels and one legend above them."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from .. import plots
    from ..page import FIGURE_WIDTH

    kmnc_name = f"KMNC({kmnc})-CAM"
    roles = ["DeepGini", "max-softmax", "entropy", "random", "best coverage", "best surprise", kmnc_name]
    colors = role_colors(roles)
    fig, axes = plt.subplots(len(pairs), 2, figsize=(FIGURE_WIDTH, 0.6 + 3.2 * len(pairs)), squeeze=False)
    for r, (ds, arch) in enumerate(pairs):
        for c, ts in enumerate(sets):
            key, ax = (ds, arch, ts), axes[r, c]
            cov, sur = best_of(apfd_frame, "coverage", key), best_of(apfd_frame, "surprise", key)
            shown = {name: name for name in roles[1:4]} | {cov: "best coverage", sur: "best surprise"}
            shown.setdefault(kmnc_name, kmnc_name)  # KMNC once, as the best coverage method where it is that
            shown["DeepGini"] = "DeepGini"  # drawn last and wider: the softmax scores' curves lie almost on it
            for name, role in shown.items():
                wide = {"lw": 2.4, "zorder": 3} if role == "DeepGini" else {"lw": 1.2}
                plots.apfd_area(ax, truth[key][orders[(*key, name)]], role, shade=False, color=colors[role], **wide)
            ax.set_title(f"{ds} {arch}, {ts}\nbest coverage {cov}, surprise {sur}", fontsize=8)
    handles = [Line2D([], [], color=colors[r], lw=2.4 if r == "DeepGini" else 1.2, label=r) for r in roles]
    fig.legend(handles=handles, loc="upper center", ncols=4, fontsize=8, bbox_to_anchor=(0.5, 1))
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / fig.get_figheight()))
    return fig


def softmax_wins(apfd_frame: pd.DataFrame, more: pd.DataFrame, sets: tuple[str, str]) -> pd.DataFrame:
    """Per test set and softmax score (max-softmax, entropy, margin): over every trained model and pair (the
    chapter's model 0 and the replicas), the cases where the score's normalized APFD is above DeepGini's, and the
    smallest, median and largest difference (score − DeepGini)."""
    frame = pd.concat([apfd_frame.assign(trained_model=0), more], ignore_index=True)
    wide = frame[frame["test_set"].isin(sets)].pivot_table(
        index=["test_set", "dataset", "model", "trained_model"], columns="method", values="apfd_normalized"
    )
    rows = []
    for ts in sets:
        sub = wide.xs(ts, level="test_set")
        for score in ("max-softmax", "entropy", "margin"):
            gap = sub[score] - sub["DeepGini"]
            rows.append({"test_set": ts, "score": score, "cases": len(gap), "above_deepgini": int((gap > 0).sum()),
                         "below_deepgini": int((gap < 0).sum()), "smallest": gap.min(), "median": gap.median(),
                         "largest": gap.max()})  # fmt: skip
    return pd.DataFrame(rows)


def softmax_overlap(orders: dict, sets: tuple[str, ...], top: float = 0.1) -> pd.DataFrame:
    """How alike each softmax score's order is to DeepGini's on the chapter's models, per pair and set: Spearman's
    rank correlation of the two orders (they are permutations: no ties) and the share of DeepGini's first `top` of
    the tests that the score also ranks first. Near 1, the two arms of a softmax row are nearly one ranking."""
    rows = []
    for (ds, arch, ts, method), order in orders.items():
        if ts not in sets or method not in ("max-softmax", "entropy", "margin"):
            continue
        gini = orders[ds, arch, ts, "DeepGini"]
        n, k = len(order), max(1, int(round(top * len(order))))
        rank_a, rank_b = np.empty(n), np.empty(n)
        rank_a[gini], rank_b[order] = np.arange(n), np.arange(n)
        rows.append({"pair": f"{ds} {arch}", "test_set": ts, "score": method,
                     "spearman": float(np.corrcoef(rank_a, rank_b)[0, 1]),
                     f"top_{top:.0%}_shared": len(np.intersect1d(gini[:k], order[:k])) / k})  # fmt: skip
    return pd.DataFrame(rows)


def overlap_words(apfd_frame: pd.DataFrame, wins: pd.DataFrame, sets: tuple[str, str]) -> str:
    """How far the softmax scores' APFD lies from DeepGini's, and on which side, over every trained model and pair
    (table softmax_wins); and where a surprise score beats DeepGini on the chapter's model."""
    parts = []
    for ts, sub in wins.groupby("test_set", sort=False):
        each = []
        for r in sub.to_dict("records"):
            side = (
                "above DeepGini's in every case"
                if r["above_deepgini"] == r["cases"]
                else "below DeepGini's in every case"
                if r["below_deepgini"] == r["cases"]
                else f"above in {r['above_deepgini']} and below in {r['below_deepgini']}"
            )
            each.append(f"{r['score']} {side} ({r['smallest']:+.3f} to {r['largest']:+.3f})")
        parts.append(
            f"On the {ts} set, over {int(sub['cases'].iloc[0])} trained model × pair cases: " + "; ".join(each) + "."
        )
    wide = apfd_frame[apfd_frame["test_set"].isin(sets)].pivot_table(
        index=["dataset", "model", "test_set"], columns="method", values="apfd_normalized"
    )
    lead = wide[["LSA", "DSA"]].max(axis=1) - wide["DeepGini"]
    beaten = [
        f"{wide.loc[k, ['LSA', 'DSA']].idxmax()} on {k[0]} {k[1]}, {k[2]} ({lead[k]:+.3f})"
        for k in lead.index
        if lead[k] > 0
    ]
    surprise = (
        "A surprise score finds misclassified tests earlier than DeepGini on "
        + "; ".join(beaten)
        + " (the verdict's surprise rows give the intervals)."
        if beaten
        else "No surprise score beats DeepGini on any set."
    )
    largest = wins[["smallest", "largest"]].abs().max().max()
    reach = wins[wins[["smallest", "largest"]].abs().max(axis=1) > SOFTMAX_MARGIN]
    band = (
        f"beyond the ±{SOFTMAX_MARGIN} band of the softmax rows in at least one case: "
        + "; ".join(f"{r['score']} on the {r['test_set']} set" for r in reach.to_dict("records"))
        if len(reach)
        else f"every case lies inside the ±{SOFTMAX_MARGIN} band of the softmax rows"
    )
    return (
        f"The softmax scores' normalized APFD lies within {largest:.3f} of DeepGini's in every case; {band}. Which side "
        "of DeepGini each score lies on, case by case (score − DeepGini, smallest to largest): "
        + " ".join(parts)
        + " "
        + surprise
    )


# ----------------------------------------------------------------------------------------------------------- cost

SCALING = ["DeepGini", "max-softmax", "NAC(0.75)-CAM", "NBC(0.5)-CAM", "TKNC(1)-CAM", "LSA", "DSA"]


def widest(subjects: dict) -> tuple[str, str]:
    """The pair whose model has the most neurons (where coverage has the most to track)."""
    return max({k[:2] for k in subjects}, key=lambda pair: subjects[(*pair, "original")].acts.shape[1])


def scaling_for(subjects: dict, truth: dict, models: dict, params: object) -> pd.DataFrame:
    """Timings of the scaling methods (and the largest KMNC) on tiled copies of the widest pair's mixed set."""
    ds, arch = widest(subjects)
    key = (ds, arch, "original+adversarial")
    p = params.only("kmnc_k", "scaling_sizes", "cost_repeats", "seed")
    methods = [*SCALING[:5], f"KMNC({max(p.kmnc_k)})-CAM", *SCALING[5:]]
    traces = models[ds, arch].traces

    def build() -> pd.DataFrame:
        s, flags = subjects[key], truth[key]
        frame = scaling_timings(s, flags, traces, p.scaling_sizes, methods, p.cost_repeats, p.seed)
        return frame.assign(dataset=ds, model=arch)

    return kept("scaling", build, p, list(key), subjects[key].identity, truth[key], traces.train, traces.train_pred,
                timed=True)  # fmt: skip


def scaling_summary(timings: pd.DataFrame, n_boot: int, seed: int) -> pd.DataFrame:
    """Per method: scaling exponent with its interval, seconds at the largest size, and the ratio to DeepGini there."""
    from .cost import scaling_fit

    fits = scaling_fit(timings[["method", "n_tests", "seconds"]], n_boot=n_boot, seed=seed)
    largest = timings[timings["n_tests"] == timings["n_tests"].max()].groupby("method")["seconds"].min()
    return fits.assign(
        seconds_at_largest=fits["method"].map(largest), x_deepgini=fits["method"].map(largest / largest["DeepGini"])
    ).drop(columns="seconds_at_max")


def cost_words(fits: pd.DataFrame) -> str:
    """The slowest method, DeepGini, and the exponents, in one paragraph."""
    by = fits.set_index("method")
    slowest = by["seconds_at_largest"].idxmax()
    return (
        f"At the largest size DeepGini takes {by.loc['DeepGini', 'seconds_at_largest']:.3f} s. The slowest "
        f"prioritizer, {slowest}, takes {by.loc[slowest, 'seconds_at_largest']:.1f} s "
        f"({by.loc[slowest, 'x_deepgini']:.0f}× DeepGini). DeepGini's time grows with exponent "
        f"{by.loc['DeepGini', 'slope']:.2f} in the number of tests; {slowest}'s with "
        f"{by.loc[slowest, 'slope']:.2f}."
    )


def cam_words(bench: pd.DataFrame) -> str:
    """What the naive-vs-incremental benchmark shows, read from it: each criterion's speedup and whether the orders
    agree."""
    parts = [
        f"{r['criterion']} {r['speedup']:,.0f}×" + ("" if r["same_order"] else " (orders differ)")
        for r in bench.to_dict("records")
    ]
    same = "the same order on every criterion" if bench["same_order"].all() else "orders that differ"
    gap = bench["speedup"].max()
    reading = (
        f"the same criterion costs up to {gap:,.0f}× more or less by how it is implemented"
        if gap >= 10
        else "the two implementations cost about the same here"
    )
    return (
        f"On {int(bench['tests'].iloc[0]):,} tests the naive CAM, which rescans every remaining test at every step as "
        f"the artifact's does, is slower than ours by {', '.join(parts)}, with {same}: {reading}."
    )


def cam_benchmark(subjects: dict, truth: dict, n: int, seed: int) -> pd.DataFrame:
    """Incremental against naive greedy CAM on the same tests of the widest pair: seconds and whether the orders agree."""
    ds, arch = widest(subjects)
    whole = subjects[ds, arch, "original+adversarial"]

    def build() -> pd.DataFrame:
        s = whole.take(np.arange(min(n, len(whole.probs))))
        rows = []
        for name in ("NAC(0.75)", "TKNC(1)", "NBC(0.5)", "KMNC(100)"):
            criterion, arg = name.rstrip(")").split("(")
            items = items_for(criterion, float(arg), s)
            t0 = time.perf_counter()
            fast = cv.cam_order(items, seed)
            t1 = time.perf_counter()
            slow = cv.cam_order_naive(items, seed)
            t2 = time.perf_counter()
            rows.append({"criterion": name, "tests": len(fast), "incremental_s": t1 - t0, "naive_s": t2 - t1,
                         "speedup": (t2 - t1) / max(t1 - t0, 1e-9), "same_order": bool((fast == slow).all())})  # fmt: skip
        return pd.DataFrame(rows)

    return kept("cam-benchmark", build, {"n": n, "seed": seed}, whole.identity, timed=True)


def cam_implementations(bench: pd.DataFrame) -> pd.DataFrame:
    """The CAM benchmark in long form, one row per criterion and implementation (incremental, naive): the table
    that varies the implementation, which the efficiency rows' setup cause names."""
    long = bench.melt(
        ["criterion", "tests"], ["incremental_s", "naive_s"], var_name="implementation", value_name="seconds"
    )
    return long.assign(implementation=long["implementation"].str.removesuffix("_s"))


# ----------------------------------------------------------------------------------------------------- retraining


def ordered_by_coverage(items, seed: int, cam: bool) -> int:
    """How many tests a coverage order ranks by coverage rather than by its tie-break: the tests that cover more
    than the fewest items any test covers (CTM, and CAM's tail), or for CAM its greedy prefix if that is longer."""
    counts = np.diff(items.indptr)
    above = int((counts > counts.min()).sum())
    return max(above, tests_to_max_coverage(items, seed)[1] if items.nnz else 0) if cam else above


def retraining_rival(apfd_frame: pd.DataFrame, key: tuple[str, str, str], s: Subject, pool: np.ndarray, k: int,
                     seed: int, baselines: list[str]) -> tuple[str, pd.DataFrame]:  # fmt: skip
    """The coverage rival of the retraining rows: among the paper's baselines with a retraining outcome in the
    artifact's retrain.xlsx (claims.artifact_retraining: the pair's sheet, else Table 6's CIFAR-10 ResNet-20), in
    the order of that outcome (10 %, best first; a neuron-coverage method over the artifact's layer set, as the
    artifact ran it, before the same method over ours), the first that orders the pool: its tie-break deciding at most
    claims.RIVAL_TIE_SHARE_MAX of its top k (coverage.tie_decided, on the original model's pool ranking). A place
    beyond the tests coverage ranks (ordered_by_coverage, published) is the tie-break's, so the share counts those
    too: a rival that ranks 899 of the 1,008 tests it needs has at least 10.8 % of its top k tie-decided. Where none
    orders the pool, the best by the artifact's outcome, marked so (its rows are untestable). Returns it and every
    candidate's row."""
    from .claims import RIVAL_TIE_SHARE_MAX, artifact_retraining

    outcome, sheet = artifact_retraining(key[:2])
    apfd_by = on_set(apfd_frame, key).set_index("method")["apfd_normalized"]
    # each of the artifact's methods over its own layer set first (what retrain.xlsx ran), then over ours
    named = sorted((m for m in outcome if m in baselines), key=lambda m: -outcome[m])
    candidates = [v for m in named for v in (m + ARTIFACT_LAYERS, m) if v in baselines]
    on_pool = s.take(pool)
    rows = []
    for name in candidates:
        base = name.removesuffix(ARTIFACT_LAYERS)
        criterion, _, arg = base.rsplit("-", 1)[0].partition("(")
        items = items_for(criterion, float(arg.rstrip(")") or 0),
                          on_pool.on_artifact_layers() if name.endswith(ARTIFACT_LAYERS) else on_pool)  # fmt: skip
        cam = base.endswith("-CAM")
        ordered = ordered_by_coverage(items, seed, cam=cam)
        share = float(cv.tie_decided(items, seed, k, cam=cam).mean())
        rows.append({"method": name, "artifact_retraining": outcome[base], "artifact_sheet": " ".join(sheet),
                     "apfd_normalized": float(apfd_by.get(name, np.nan)), "pool_tests_ordered": ordered, "needed": k,
                     "tie_share": share, "orders_pool": share <= RIVAL_TIE_SHARE_MAX})  # fmt: skip
    table = pd.DataFrame(rows)
    able = table[table["orders_pool"]]
    return (able["method"].iloc[0] if len(able) else table["method"].iloc[0]), table


def pool_reranker(pair: Pair, mixed_x: np.ndarray, sa_train: int, seed: int):
    """rank(method, model, pool, seed): the pool's order under a method, seen through an updated model (neuron
    ranges and surprise traces refitted on a seeded sample of `sa_train` training images with that model)."""
    sample = np.random.default_rng(seed).permutation(len(pair.train[1]))[:sa_train]

    def rank(name: str, model, pool: np.ndarray, tie_seed: int) -> np.ndarray:
        from . import nets

        x = mixed_x[pool]
        if name == "random":  # a constant score: the tie-break alone orders the pool, no forward pass needed
            return softmax_order(name, np.zeros((len(pool), 1)), tie_seed)
        if name in SOFTMAX_SCORES:
            return softmax_order(name, nets.predict_proba(model, x), tie_seed)
        t_probs, t_acts, layer, t_theirs, their_layer = nets.outputs(model, pair.train[0][sample])
        st = cv.fit_stats(t_acts, layer)
        probs, acts, _, theirs, _ = nets.outputs(model, x)
        if name.startswith(("LSC", "DSC", "LSA", "DSA")):
            s = subject(probs, acts, st, SATraces(t_acts[:, sa_layer(st)], t_probs.argmax(1)))
        else:  # with the artifact's layer set and its ranges refitted too (the "[artifact layers]" methods)
            s = Subject(probs, acts, st, np.zeros(len(x)), np.zeros(len(x)), {}, theirs,
                        cv.fit_stats(t_theirs, their_layer))  # fmt: skip
        return order_for(name, s, tie_seed)

    return rank


class Retraining(NamedTuple):
    """What retraining_for returns: the runs, DeepGini − method per protocol and percentage (held-out accuracy), the
    make-up of each method's picks, the coverage rivals, the ablation of DeepGini's picks, and the curve."""

    runs: pd.DataFrame
    diffs: pd.DataFrame
    picks: pd.DataFrame
    rivals: pd.DataFrame
    ablation: pd.DataFrame  # retraining.ablation_differences per pair (column selection varies the make-up)
    curve: pd.DataFrame  # retraining.curve_table per iterative pair: pool accuracy at every 1 % step


def retraining_for(models: dict, mixed: dict, subjects: dict, apfd_frame: pd.DataFrame, params: object) -> Retraining:
    """Paired retraining on every pair, one-shot and iterative (the artifact's protocol): DeepGini, the best coverage
    method that orders the pool, random, and the control; the two ablations of DeepGini's picks (at most one per
    source image, stratified by attack) at the largest percentage of each protocol. The ablations' runs stay out of
    the runs, differences and picks (table retraining_ablation holds them). The runs are kept (retraining_runs); the
    differences, resampled n_boot times, are computed from them."""
    from . import retraining

    runs, diffs, picks, rivals_frames, ablations, curves = [], [], [], [], [], []
    kept_runs = retraining_runs(models, mixed, subjects, apfd_frame, params)
    for (ds, arch), (frame, made, able, rival, curve, held_rows) in kept_runs.items():
        pair, m = f"{ds} {arch}", mixed[ds, arch, "original+adversarial"]
        rivals_frames.append(able.assign(pair=pair, chosen=able["method"] == rival))
        if curve is not None:
            curves.append(retraining.curve_table(curve).assign(pair=pair))
        # held-out differences resample the source images (each seed reading its own held-out rows of them), the same
        # draws for every comparison
        held = retraining.held_out_design(m, held_rows, params.n_boot, params.seed)
        ablations.append(retraining.ablation_differences(frame, made, rival, held_out=held).assign(pair=pair))
        frame = frame[~frame["method"].isin(retraining.ABLATIONS)]
        made = made[~made["method"].isin(retraining.ABLATIONS)]
        diffs.append(retraining.paired_differences(frame, held_out=held).assign(dataset=ds, model=arch, pair=pair))
        runs.append(frame.drop(columns=retraining.HELD_RIGHT).assign(dataset=ds, model=arch))
        mean = made.drop(columns="seed").groupby(["protocol", "method", "percent"], as_index=False, sort=False).mean()
        picks.append(mean.assign(pair=pair))
    first = lambda f: f[["pair", *f.columns.drop("pair")]]
    curve_cols = ["pair", "protocol", "method", "percent", "pool_accuracy", "difference", "ci_low", "ci_high", "se",
                  "df", "seeds", "test"]  # fmt: skip
    return Retraining(
        pd.concat(runs, ignore_index=True),
        pd.concat(diffs, ignore_index=True),
        first(pd.concat(picks, ignore_index=True)),
        first(pd.concat(rivals_frames, ignore_index=True)),
        first(pd.concat(ablations, ignore_index=True)),
        pd.concat(curves, ignore_index=True)[curve_cols] if curves else pd.DataFrame(columns=curve_cols),
    )


class RetrainPiece(NamedTuple):
    """One pair's retraining under one protocol ('one-shot' or 'iterative'): what a worker builds into the cache
    (retraining_piece), with everything it starts from."""

    dataset: str
    arch: str
    protocol: str
    pair: Pair
    mixed: object  # the pair's original+adversarial MixedSet
    subject: Subject
    chosen_by: pd.DataFrame  # the pair's APFD rows, which choose the coverage rival
    params: object  # the parameters the runs read (retraining_runs)


def _retraining_parts(piece: RetrainPiece) -> list:
    """The key parts of a piece's kept entry: the pair, its APFD rows and the identities of its model, mixed set and
    subject."""
    key = (piece.dataset, piece.arch)
    on = lambda d: identities({key: d})
    return [*key, piece.chosen_by, *on(piece.pair), *on(piece.mixed), *on(piece.subject)]


def retraining_piece(piece: RetrainPiece) -> tuple:
    """The runs of one pair under one protocol, kept (kept: keyed by what _retraining_parts names and the parameters
    the runs read; not n_boot, so a change of it reuses them): one-shot gives (scores, picks' make-up, the coverage
    rival's candidates, the rival, each seed's held-out rows), iterative (scores, picks' make-up, the curve). Every
    retraining seed splits the source images afresh (retraining.scorings); the rival is chosen on the first seed's
    pool. Runs in a worker of repro.workers (retraining_runs), and here to read the entry back."""
    from . import retraining

    params, p, m, s = piece.params, piece.pair, piece.mixed, piece.subject
    key = (piece.dataset, piece.arch, "original+adversarial")

    def build() -> tuple:
        seeds = [params.seed + i for i in range(params.retrain_seeds)]
        top = max(params.retrain_percents)
        by_seed = retraining.scorings(m, seeds, p.test, params.fresh_eps)
        first = by_seed[seeds[0]].pool
        k = max(1, round(len(first) * top / 100))
        baselines = paper_baselines(method_table(params.kmnc_k))
        rival, able = retraining_rival(piece.chosen_by, key, s, first, k, params.seed, baselines)
        methods = ["DeepGini", rival, "random"]
        loss = -np.log(np.clip(s.probs[np.arange(len(m.y)), m.y], 1e-12, None))
        if piece.protocol == "iterative":
            rank = pool_reranker(p, m.x, params.sa_train, params.seed)
            return retraining.run_iterative(p.model, by_seed, p.train, rank, methods, top, params.retrain_percents,
                                            params.retrain_epochs, loss, retraining.ABLATIONS)  # fmt: skip
        order = lambda name, pool, seed: order_for(name, s.take(pool), seed)
        frame, made = retraining.run(p.model, by_seed, p.train, order, methods, params.retrain_percents,
                                     params.retrain_epochs, loss, retraining.ABLATIONS)  # fmt: skip
        return frame, made, able, rival, {seed: sc.held for seed, sc in by_seed.items()}

    return kept(f"retraining-{piece.protocol}", build, params, *_retraining_parts(piece))


def retraining_runs(models: dict, mixed: dict, subjects: dict, apfd_frame: pd.DataFrame, params: object) -> dict:
    """Per pair: the retraining runs (scores, with which held-out rows each tuned model gets right), their picks'
    make-up, the coverage rival's candidates, the rival chosen, the iterative curve (None for a pair run one-shot
    only) and the held-out rows of the mixed set. Each (pair, protocol) is a piece (retraining_piece), kept on its
    own; the pieces the cache lacks are built first, side by side on the cores (repro.workers), the iterative ones
    (the longest) first."""
    from .. import workers
    from .claims import iterative_pairs

    reads = ("kmnc_k", "seed", "retrain_seeds", "retrain_percents", "fresh_eps", "sa_train", "retrain_epochs")
    iterative = iterative_pairs(params.only("pairs", "iterative_pairs"))
    params = params.only(*reads)  # a piece's key: not the pairs run beside it, nor how many of them run iteratively
    chosen_by = apfd_frame[["dataset", "model", "test_set", "method", "apfd_normalized"]]
    pieces = {}
    for ds, arch in models:
        key = (ds, arch, "original+adversarial")
        protocols = ["one-shot"] + (["iterative"] if f"{ds}:{arch}" in iterative else [])
        for protocol in protocols:
            rows = on_set(chosen_by, key).reset_index(drop=True)
            pieces[ds, arch, protocol] = RetrainPiece(ds, arch, protocol, models[ds, arch], mixed[key], subjects[key],
                                                      rows, params)  # fmt: skip
    missing = [
        pc
        for pc in pieces.values()
        if not kept_path(f"retraining-{pc.protocol}", params, *_retraining_parts(pc)).exists()
    ]
    if missing:
        workers.map_on_cores(retraining_piece, sorted(missing, key=lambda pc: pc.protocol != "iterative"), "retraining")
    out = {}
    for ds, arch in models:
        frame, made, able, rival, held = retraining_piece(pieces[ds, arch, "one-shot"])
        curve = None
        if (ds, arch, "iterative") in pieces:
            it, made_it, curve = retraining_piece(pieces[ds, arch, "iterative"])
            frame, made = pd.concat([frame, it], ignore_index=True), pd.concat([made, made_it], ignore_index=True)
        out[ds, arch] = frame, made, able, rival, curve, held
    return out


def retraining_figure(runs: pd.DataFrame):
    """Held-out adversarial accuracy against the share of the pool retrained on, one panel per pair: each method
    under the iterative (solid) and one-shot (dashed) protocols, intervals over seeds; the coverage rival (its name in
    the panel's title) in one colour across panels; one legend above them. The model before retraining is not drawn:
    the pool and held-out half hold only inputs that fooled it, so its held-out accuracy is 0 by construction."""
    import matplotlib.pyplot as plt
    import seaborn as sns
    from matplotlib.lines import Line2D

    from ..page import FIGURE_WIDTH
    from .retraining import CONTROL

    roles = ["DeepGini", "coverage rival", "random", CONTROL]
    colors = role_colors(roles)
    dashes = {"iterative": "", "one-shot": (3, 1.5)}
    pairs = list(dict.fromkeys(zip(runs["dataset"], runs["model"])))
    cols = min(2, len(pairs))
    rows = (len(pairs) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(FIGURE_WIDTH, 0.7 + 3.2 * rows), squeeze=False)
    for ax, (ds, arch) in zip(axes.flat, pairs):
        mine = runs[(runs["dataset"] == ds) & (runs["model"] == arch)]
        rivals = [m for m in dict.fromkeys(mine["method"]) if m not in {"none", *roles}]
        drawn = mine[mine["method"] != "none"].assign(
            role=lambda f: f["method"].where(f["method"].isin(roles), "coverage rival")
        )
        sns.lineplot(
            drawn,
            x="percent",
            y="held_out_accuracy",
            hue="role",
            style="protocol",
            palette=colors,
            dashes=dashes,
            marker="o",
            errorbar=("ci", 95),
            legend=False,
            ax=ax,
        )
        title = f"{ds} {arch}" + (f"\ncoverage rival: {', '.join(rivals)}" if rivals else "")
        ax.set_title(title, fontsize=9)
        ax.set(xlabel="% of the pool retrained on", ylabel="held-out adversarial accuracy")
    for ax in axes.flat[len(pairs) :]:
        ax.remove()
    handles = [Line2D([], [], color=colors[r], marker="o", label=r) for r in roles]
    handles += [
        Line2D([], [], color="k", ls="-", label="iterative"),
        Line2D([], [], color="k", ls="--", label="one-shot"),
    ]
    fig.legend(handles=handles, loc="upper center", ncols=4, fontsize=8, bbox_to_anchor=(0.5, 1))
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / fig.get_figheight()))
    return fig


def by_attack_table(runs: pd.DataFrame) -> pd.DataFrame:
    """At the largest percentage: held-out accuracy per attack, clean test accuracy and accuracy under a fresh FGSM
    per pair, protocol and method (mean over seeds), beside the model before retraining."""
    top = runs["percent"].max()
    cols = [c for c in runs.columns if c.startswith("held_out")] + ["clean_accuracy", "fresh_fgsm_accuracy"]
    keep = runs[(runs["percent"] == top) | (runs["method"] == "none")]
    out = keep.groupby(["dataset", "model", "protocol", "method"], as_index=False, sort=False)[cols].mean()
    return out.assign(pair=out["dataset"] + " " + out["model"]).drop(columns=["dataset", "model"])


def retraining_words(runs: pd.DataFrame, diffs: pd.DataFrame) -> str:
    """DeepGini against the coverage rival, random and the control at the largest percentage, per pair and
    protocol: held-out accuracy with the paired difference, whether the rival retrains worse than random and
    DeepGini beats random (its interval above 0), and the fresh-FGSM accuracy."""
    from .retraining import CONTROL

    top = diffs["percent"].max()
    lines = []
    for (ds, arch, protocol), sub in runs[runs["percent"] == top].groupby(["dataset", "model", "protocol"], sort=False):
        means = sub.groupby("method")[["held_out_accuracy", "fresh_fgsm_accuracy"]].mean()
        mine = diffs[
            (diffs["dataset"] == ds) & (diffs["model"] == arch) & (diffs["percent"] == top)
            & (diffs["protocol"] == protocol)
        ]  # fmt: skip
        rivals = [
            f"{d['method']} {means.loc[d['method'], 'held_out_accuracy']:.3f} ({d['difference']:+.3f}, "
            f"{d['ci_low']:+.3f} to {d['ci_high']:+.3f})"
            for d in mine.to_dict("records")
        ]
        fresh = ", ".join(f"{m} {v:.3f}" for m, v in means["fresh_fgsm_accuracy"].items())
        gap = mine.set_index("method")["difference"]
        # a comparator is only as informative as its distance from a random pick: method − random = the differences'
        # difference (DeepGini − random) − (DeepGini − method)
        versus = "; ".join(
            f"{m} {gap['random'] - g:+.3f}" for m, g in gap.items() if m != "random" and "random" in gap.index
        )
        plain = ""
        if "random" in gap.index:  # say plainly when the coverage rival is worse than a random pick
            beats = mine.set_index("method").loc["random", "ci_low"] > 0
            below = [m for m, g in gap.items() if m not in ("random", CONTROL) and gap["random"] - g < 0]
            if below and not beats:
                plain = (
                    f" {', '.join(below)} retrains worse than a random pick and DeepGini does not beat random: "
                    "DeepGini's lead over coverage here is coverage's shortfall, not a gain from prioritizing."
                )
            elif below:
                plain = f" {', '.join(below)} retrains worse than a random pick; DeepGini beats random."
        lines.append(
            f"* **{ds} {arch}, {protocol}**: DeepGini {means.loc['DeepGini', 'held_out_accuracy']:.3f}; "
            f"{'; '.join(rivals)}."
            + (f" Against random: {versus}, DeepGini {gap['random']:+.3f}." if versus else "")
            + plain
            + f" Under a fresh FGSM: {fresh}."
        )
    return (
        f"Held-out adversarial accuracy at {top} % of the pool (in brackets DeepGini − method and its 95 % "
        "interval over seeds):\n\n" + "\n".join(lines)
    )


def picks_words(picks: pd.DataFrame) -> str:
    """What DeepGini, the coverage rival, random retrain on at the largest percentage, per pair (iterative)."""
    top = picks["percent"][picks["method"] != "whole pool"].max()
    shares = [c for c in picks.columns if c.startswith("share ")]
    lines = []
    chosen = picks[((picks["protocol"] == "iterative") & (picks["percent"] == top)) | (picks["method"] == "whole pool")]
    for pair, sub in chosen[chosen["inputs"] > 0].groupby("pair", sort=False):
        parts = []
        for r in sub.to_dict("records"):
            mix = ", ".join(f"{r[c]:.0%} {c.removeprefix('share ')}" for c in shares)
            parts.append(f"{r['method']} {mix}; {r['source_images']:,.0f} sources; loss {r['mean_loss']:.2f}")
        lines.append(f"* **{pair}**: " + " | ".join(parts) + ".")
    return (
        f"The make-up of the top {top} % under the iterative protocol (mean over seeds; loss: the original model's "
        "mean cross-entropy on the picks), beside the whole pool:\n\n" + "\n".join(lines)
    )


def short_method(name: str) -> str:
    """A method's name for a table cell: the artifact's layer set as ' [art.]'."""
    return name.replace(ARTIFACT_LAYERS, " [art.]")


def differences_view(diffs: pd.DataFrame) -> pd.DataFrame:
    """DeepGini − method per pair, method and protocol (rows; a protocol only where it ran) at each percentage
    (columns), rounded to 3 places: four narrow columns fit the text column, where protocol × percentage made eight
    (half of them empty on the pairs the iterative protocol does not run). Where that is more rows than a page shows
    (the paper's eight pairs), one row per pair and method with the protocols side by side."""
    from ..results import MAX_ROWS

    named = diffs.assign(method=diffs["method"].map(short_method))
    long = named.pivot_table(index=["pair", "method", "protocol"], columns="percent", values="difference", sort=False)
    if len(long) <= MAX_ROWS:
        long.columns = [f"{percent} %" for percent in long.columns]
        return long.round(3).reset_index()
    wide = named.pivot_table(index=["pair", "method"], columns=["protocol", "percent"], values="difference", sort=False)
    wide.columns = [f"{protocol} {percent} %" for protocol, percent in wide.columns]
    return wide.round(3).reset_index()


def ablation_view(ablation: pd.DataFrame) -> pd.DataFrame:
    """One row per pair, protocol and ablation of DeepGini's picks: the source images its picks come from (and
    DeepGini's), and the ablation minus DeepGini, the coverage rival and random with their intervals over seeds."""
    from .retraining import ABLATIONS

    rows = []
    for (pair, protocol), sub in ablation.groupby(["pair", "protocol"], sort=False):
        rival = next(a for a in sub["against"] if a not in ("DeepGini", "random", *ABLATIONS))
        gini = sub[sub["selection"] == "DeepGini"]["source_images"].iloc[0]
        for selection, mine in sub[sub["selection"] != "DeepGini"].groupby("selection", sort=False):
            at = mine.set_index(["metric", "against"])
            rows.append(
                {
                    "pair": pair,
                    "protocol": protocol,
                    "selection": selection.removeprefix("DeepGini, "),
                    "sources (DeepGini's)": f"{mine['source_images'].iloc[0]:,.0f} ({gini:,.0f})",
                    "rival": rival,
                    "held-out − DeepGini": _iv_text(at.loc["held_out_accuracy", "DeepGini"]),
                    "held-out − rival": _iv_text(at.loc["held_out_accuracy", rival]),
                    "held-out − random": _iv_text(at.loc["held_out_accuracy", "random"]),
                    "pool − rival": _iv_text(at.loc["pool_accuracy", rival]),
                }
            )
    return pd.DataFrame(rows)


def curve_view(curve: pd.DataFrame) -> pd.DataFrame:
    """Mean pool accuracy (the artifact's metric) per pair and method at every step of the iterative protocol, the
    model before retraining in the first column."""
    if curve.empty:  # no pair ran the iterative protocol (iterative_pairs 0)
        return pd.DataFrame(columns=["pair", "method", "before"])
    before = curve[curve["method"] == "none"].set_index("pair")["pool_accuracy"]
    steps = curve[curve["method"] != "none"]
    wide = steps.pivot_table(index=["pair", "method"], columns="percent", values="pool_accuracy", sort=False)
    wide.columns = [f"{c} %" for c in wide.columns]
    wide.insert(0, "before", before.reindex(wide.index.get_level_values("pair")).to_numpy())
    return wide.round(3).reset_index()


def curve_words(curve: pd.DataFrame) -> str:
    """Per iterative pair: the steps at which DeepGini's pool accuracy is above or below each other method's
    (DeepGini − method, 95 % interval over seeds, each step read alone), and which of them stay separated when the
    pair's steps and methods are read as one family (Bonferroni: each t interval at 1 − 0.05 / their number)."""
    from ..stats import Interval, at_level

    if curve.empty:
        return "No pair runs the iterative protocol here (iterative_pairs 0), so there is no curve."

    def steps(xs: list) -> str:
        return ", ".join(f"{x}" for x in xs) + " %" if xs else "no step"

    lines = []
    for pair, sub in curve[curve["difference"].notna()].groupby("pair", sort=False):
        level = 1 - FAMILY_ALPHA / len(sub)
        parts = []
        for method, mine in sub.groupby("method", sort=False):
            above = mine[mine["ci_low"] > 0]["percent"].tolist()
            below = mine[mine["ci_high"] < 0]["percent"].tolist()
            wide = {r["percent"]: at_level(Interval(r["difference"], r["ci_low"], r["ci_high"], "", r["se"], r["df"]),
                                           level) for r in mine.to_dict("records")}  # fmt: skip
            kept_above = [x for x in above if wide[x] is not None and wide[x].low > 0]
            kept_below = [x for x in below if wide[x] is not None and wide[x].high < 0]
            parts.append(
                f"against {method}, DeepGini is above at {steps(above)} and below at {steps(below)} "
                f"(of them, at {level:.1%}: above at {steps(kept_above)}, below at {steps(kept_below)})"
            )
        lines.append(f"* **{pair}**: " + "; ".join(parts) + ".")
    return (
        "Accuracy on the pool after each 1 % step of the iterative protocol (DeepGini − method, 95 % interval over "
        "seeds, each step read alone; elsewhere the interval holds 0). In brackets, the steps that stay separated "
        "when all of a pair's steps and methods are read as one family (Bonferroni):\n\n" + "\n".join(lines)
    )


def artifact_cam_words() -> str:
    """What the artifact's retraining does with a CAM order (claims.ARTIFACT_CAM_ORDER_CODE), and what it means for
    its table: the CAM and CTM ranges and DeepGini on Table 6's pair, and random from its CSVs (the register's)."""
    from .claims import ARTIFACT_CAM_ORDER_CODE, ARTIFACT_RETRAINING, RETRAIN_TABLE_PAIR, artifact_retraining

    outcome, _ = artifact_retraining(RETRAIN_TABLE_PAIR)
    cam = [v for m, v in outcome.items() if m.endswith("-CAM")]
    ctm = {m: v for m, v in outcome.items() if m.endswith("-CTM")}
    best = max(ctm, key=ctm.get)
    above = {m: v for m, v in ctm.items() if v > max(cam)}
    below = ", ".join(f"{m} {v:.3f}" for m, v in ctm.items() if m not in above) or "none"
    code = "; ".join(f"`{line}`" for line in ARTIFACT_CAM_ORDER_CODE)
    random = ARTIFACT_RETRAINING["cifar ResNet-20"][10][1]
    return (
        f"The artifact's retraining script (`exp_retrain/exp_retrain.py`) reads a CAM order so: {code}. A CAM's "
        "`rank_fast` returns only its greedy prefix, the tests that add coverage, so every other test keeps cam 0 and "
        "the ascending sort puts those never-picked tests first, in whatever order pandas' quicksort leaves equal keys, "
        "and the greedy picks last. DeepGini's ranking numbers every test (most uncertain first), and CTM's `rank_2` "
        "too, so they are retrained on in their own order. The artifact's CAM rows are therefore retraining on tests "
        "no coverage criterion chose: on CIFAR-10 ResNet-20 (retrain.xlsx, 10 %) all "
        f"{len(cam)} CAM variants lie between {min(cam):.3f} and {max(cam):.3f}, below the artifact's random "
        f"({random:.3f}, its CSVs), while {len(above)} of the {len(ctm)} CTM variants lie above every CAM variant, "
        f"at {min(above.values()):.3f}–{max(ctm.values()):.3f} ({best} the best; below them: {below}), and DeepGini "
        f"at {outcome['DeepGini']:.3f}. The paper's "
        f"{min(cam):.3f}–{max(ctm.values()):.3f} range for coverage mixes the two: its lower end measures the script, "
        "not CAM. This chapter orders each CAM as a CAM (greedy prefix first) and picks its rival by the artifact's "
        "outcome among the methods that order the pool (table retraining_rival)."
    )


def _passed_over(better: pd.DataFrame, shown: int = 2) -> str:
    """The candidates passed over, in words short enough for a table cell: the first `shown` with their tie share,
    then how many more (the full list is in table retraining_rival)."""
    named = [f"{short_method(m)} ({t:.0%})" for m, t in zip(better["method"], better["tie_share"])]
    more = len(named) - shown
    return ", ".join(named[:shown]) + (f" and {more} more" if more > 0 else "") if named else "none"


def rival_view(rivals: pd.DataFrame) -> pd.DataFrame:
    """One row per pair: the chosen coverage rival (' [art.]': over the artifact's layer set), its retraining outcome
    in the artifact (in brackets the sheet read), the share of its top k its tie-break decides, whether it orders the
    pool, and the candidates of better artifact outcome passed over (in brackets: their tie share)."""
    rows = []
    for pair, sub in rivals.groupby("pair", sort=False):
        chosen = sub[sub["chosen"]].iloc[0]
        better = sub[sub["artifact_retraining"] > chosen["artifact_retraining"]]
        rows.append(
            {
                "pair": pair,
                "rival": short_method(chosen["method"]),
                "artifact_10%": f"{chosen['artifact_retraining']:.3f} ({chosen['artifact_sheet']})",
                "top_k": chosen["needed"],
                "tie_share": round(chosen["tie_share"], 3),
                "orders_pool": chosen["orders_pool"],
                "passed_over": _passed_over(better),
            }
        )
    return pd.DataFrame(rows)


def artifact_variants(subjects: dict, truth: dict, models: dict, seed: int) -> pd.DataFrame:
    """The artifact's NAC (sigmoid of the activation against t, no training range) and its LSC on the softmax layer
    (LSA from the first 9 softmax columns: the 10th is 1 minus their sum and makes the KDE singular), beside ours,
    normalized APFD on every original and mixed set."""
    rows = []
    for (ds, arch, ts), s in subjects.items():
        if ts not in ("original", "original+adversarial"):
            continue
        flags = truth[ds, arch, ts]
        score = lambda order, flags=flags: apfd_normalized(flags[order])
        for t in THRESHOLDS["NAC"]:
            items = cv.nac_items(s.acts, s.stats, t, scale="sigmoid")
            for strategy, fn in (("CTM", cv.ctm_order), ("CAM", cv.cam_order)):
                name = f"NAC({t:g})-{strategy}"
                rows.append({"pair": f"{ds} {arch}", "test_set": ts, "method": name, "variant": "sigmoid",
                             "ours": score(order_for(name, s, seed)), "artifact_style": score(fn(items, seed))})  # fmt: skip
        traces = models[ds, arch].traces
        try:
            values = lsa(traces.train_probs[:, :-1], traces.train_pred, s.probs[:, :-1], s.probs.argmax(1))
            lsc = score(cv.cam_order(cv.bucket_items(values, SC_BUCKETS, float(values.min()), SC_UPPER["LSC"]), seed))
        except np.linalg.LinAlgError:  # a class whose softmax traces are degenerate: no density
            lsc = np.nan
        rows.append({"pair": f"{ds} {arch}", "test_set": ts, "method": "LSC-CAM", "variant": "softmax layer",
                     "ours": score(order_for("LSC-CAM", s, seed)), "artifact_style": lsc})  # fmt: skip
    return pd.DataFrame(rows)


def layer_set_table(subjects: dict, apfd_frame: pd.DataFrame, methods: dict[str, str],
                    sets: tuple[str, ...]) -> pd.DataFrame:  # fmt: skip
    """Per pair and set: the units each layer set tracks (ours: every ReLU block after pooling; the artifact's: each
    ReLU map before and after pooling, and the softmax), the best neuron-coverage method under each with its
    normalized APFD, the best coverage baseline over both (the verdict's comparator: method_table) and DeepGini."""
    neuron = [m for m, f in methods.items() if f == "coverage" and m.startswith(NEURON_COVERAGE)]
    rows = []
    for key, s in subjects.items():
        if key[2] not in sets:
            continue
        apfd_by = on_set(apfd_frame, key).set_index("method")["apfd_normalized"]
        best = {}
        for layers, names in (
            ("ours", ours_layers(neuron)),
            ("artifact", [m for m in neuron if m.endswith(ARTIFACT_LAYERS)]),
        ):
            name = apfd_by[names].idxmax()
            best[layers] = (name.removesuffix(ARTIFACT_LAYERS), float(apfd_by[name]))
        overall = best_of(apfd_frame, "coverage", key)
        rows.append({"pair": f"{key[0]} {key[1]}", "test_set": key[2], "units_ours": s.acts.shape[1],
                     "units_artifact": s.artifact_acts.shape[1], "best_ours": best["ours"][0],
                     "apfd_ours": best["ours"][1], "best_artifact": best["artifact"][0],
                     "apfd_artifact": best["artifact"][1], "best_coverage": overall,
                     "apfd_best_coverage": float(apfd_by[overall]), "apfd_deepgini": float(apfd_by["DeepGini"])})  # fmt: skip
    return pd.DataFrame(rows)


# the layer-set table's headers as shown: words that wrap, so its seven columns fit the text column
LAYER_SET_HEADERS = {"test_set": "test set", "best_ours": "ours", "apfd_ours": "ours APFD", "best_artifact": "artifact's",
                     "apfd_artifact": "artifact's APFD", "apfd_deepgini": "DeepGini APFD"}  # fmt: skip


def layer_set_words(table: pd.DataFrame) -> str:
    """What the artifact's layer set changes: the units it tracks, on how many sets its best neuron-coverage method
    beats ours (the largest gain), and whether the best coverage baseline over both ever beats DeepGini."""
    gain = table["apfd_artifact"] - table["apfd_ours"]
    big = table.loc[gain.idxmax()]
    units = table.groupby("pair", sort=False)[["units_ours", "units_artifact"]].first()
    tracked = "; ".join(f"{p} {int(r['units_artifact'])} against {int(r['units_ours'])}" for p, r in units.iterrows())
    wins = table[table["apfd_best_coverage"] > table["apfd_deepgini"]]
    out = [
        f"The artifact's layers track more units than ours ({tracked}). Its best neuron-coverage method beats ours by "
        f"more than 0.001 on {int((gain > 0.001).sum())} of {len(table)} sets (within 0.001 of it on "
        f"{int((gain.abs() <= 0.001).sum())}), by at most {gain.max():+.3f} ({big['pair']}, {big['test_set']} "
        f"set: {big['best_ours']} {big['apfd_ours']:.3f} with ours, {big['best_artifact']} {big['apfd_artifact']:.3f} "
        "with the artifact's)."
    ]
    if len(wins):
        out.append(
            "The best coverage baseline over both layer sets beats DeepGini on "
            + ", ".join(f"{r['pair']} {r['test_set']} ({r['best_coverage']})" for _, r in wins.iterrows())
            + "."
        )
    else:
        out.append(
            f"The best coverage baseline over both layer sets, which the verdict compares with, stays below DeepGini on "
            f"all {len(table)} sets."
        )
    return " ".join(out)
