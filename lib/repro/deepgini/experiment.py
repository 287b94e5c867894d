"""The DeepGini chapter's prioritizer registry: every method as a function of one test set's model outputs."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from ..metrics import apfd, apfd_normalized
from . import coverage as cv
from .prioritizers import SOFTMAX_SCORES, seeded_order, softmax_order
from .surprise import dsa, lsa

__all__ = ["SATraces", "Subject", "evaluate", "items_for", "method_table", "order_for", "subject", "tile"]

THRESHOLDS = {"NAC": (0.0, 0.75), "NBC": (0.0, 0.5, 1.0), "SNAC": (0.0, 0.5, 1.0), "TKNC": (1, 2, 3)}
SC_BUCKETS = 1000
# Upper bounds of the artifact's surprise coverage: u=100 for LSC (exp_apfd/exp_y_sa.py, exp_sa), the DSC class
# default u=2 (metrics.py); the lower bound is the smallest value on the prioritized set (LSC/DSC.rank_fast).
SC_UPPER = {"LSC": 100.0, "DSC": 2.0}


@dataclass(frozen=True)
class SATraces:
    """Training traces of the surprise-adequacy layer and the model's predictions on them."""

    train: np.ndarray
    train_pred: np.ndarray


@dataclass(frozen=True)
class Subject:
    """One test set seen through one model: softmax, neuron activations, surprise values."""

    probs: np.ndarray
    acts: np.ndarray
    stats: cv.NeuronStats
    lsa: np.ndarray
    dsa: np.ndarray
    sa_seconds: dict[str, float]

    def take(self, idx: np.ndarray) -> Subject:
        """The same subject restricted to tests `idx` (surprise values are per test)."""
        return replace(self, probs=self.probs[idx], acts=self.acts[idx], lsa=self.lsa[idx], dsa=self.dsa[idx])


def sa_layer(stats: cv.NeuronStats) -> np.ndarray:
    """Columns of the last hidden layer, where surprise adequacy is measured."""
    return np.flatnonzero(stats.layer == stats.layer.max())


def subject(probs: np.ndarray, acts: np.ndarray, stats: cv.NeuronStats, traces: SATraces) -> Subject:
    """Build a Subject, timing LSA and DSA (each includes its own fit on the training traces)."""
    cols = sa_layer(stats)
    pred = probs.argmax(axis=1)
    seconds, values = {}, {}
    for name, fn in (("LSA", lsa), ("DSA", dsa)):
        began = time.perf_counter()
        values[name] = fn(traces.train, traces.train_pred, acts[:, cols], pred)
        seconds[name] = time.perf_counter() - began
    return Subject(probs, acts, stats, values["LSA"], values["DSA"], seconds)


def method_table(kmnc_k: list[int]) -> dict[str, str]:
    """Every prioritizer name -> family (softmax, coverage, surprise), in the paper's table order."""
    methods = {name: "softmax" for name in SOFTMAX_SCORES}
    for crit in ("NAC", "NBC", "SNAC"):
        for t in THRESHOLDS[crit]:
            methods[f"{crit}({t:g})-CTM"] = "coverage"
            methods[f"{crit}({t:g})-CAM"] = "coverage"
    for k in kmnc_k:
        methods[f"KMNC({k})-CAM"] = "coverage"
    for k in THRESHOLDS["TKNC"]:
        methods[f"TKNC({k})-CAM"] = "coverage"
    methods.update({"LSA": "surprise", "DSA": "surprise", "LSC-CAM": "surprise", "DSC-CAM": "surprise"})
    return methods


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


def order_for(name: str, s: Subject, seed: int) -> np.ndarray:
    """Priority order of the subject's tests under prioritizer `name` (see method_table)."""
    if name in SOFTMAX_SCORES:
        return softmax_order(name, s.probs, seed)
    if name in ("LSA", "DSA"):
        return seeded_order(s.lsa if name == "LSA" else s.dsa, seed)
    head, strategy = name.rsplit("-", 1)
    criterion, _, arg = head.partition("(")
    items = items_for(criterion, float(arg.rstrip(")") or 0), s)
    return cv.ctm_order(items, seed) if strategy == "CTM" else cv.cam_order(items, seed)


def evaluate(name: str, s: Subject, misclassified: np.ndarray, seed: int) -> dict[str, object]:
    """APFD, normalized APFD, wall seconds and the order of one prioritizer on one test set."""
    began = time.perf_counter()
    order = order_for(name, s, seed)
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
