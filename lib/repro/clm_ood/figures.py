"""The chapter's figures: AUROC along the n-gram ladder, Kendall's τ with quality, quality-vs-abstention curves.
One colour per score across the chapter; every estimate with its 95 % interval."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from ..page import method_colors
from ..plots import interval_points
from .experiment import LABELS, SCORES

COLORS = method_colors([*(LABELS[s] for s in SCORES), "oracle"])


def ladder_figure(aurocs: pd.DataFrame, overlap: pd.DataFrame, scores: tuple[str, ...]) -> plt.Figure:
    """AUROC of each score against each OOD set's unigram overlap with the training articles (DeLong bars)."""
    jac = dict(zip(overlap["set"], overlap["jaccard_1"]))
    labels = dict(zip(overlap["set"], overlap["label"]))
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for score in scores:
        sub = aurocs[aurocs["score"] == score].assign(x=lambda f: f["set"].map(jac)).sort_values("x")
        err = [sub["auroc"] - sub["ci_low"], sub["ci_high"] - sub["auroc"]]
        color = COLORS[LABELS[score]]
        ax.errorbar(sub["x"], sub["auroc"], yerr=err, fmt="o-", color=color, label=LABELS[score], capsize=3, ms=5)
    for name, x in jac.items():
        if name in set(aurocs["set"]):
            ax.annotate(labels[name], (x, 0.02), rotation=90, fontsize=8, ha="center", va="bottom", color="0.35")
    ax.axhline(0.5, color="0.6", lw=0.8, ls="--")
    ax.set(xlabel="unigram Jaccard overlap with the in-domain training articles", ylabel="AUROC", ylim=(0, 1.02))
    ax.legend(loc="lower left", bbox_to_anchor=(1.0, 0.0))
    return fig


def tau_figure(taus: pd.DataFrame) -> plt.Figure:
    """Kendall's τ of each score with each quality measure, bootstrap bars."""
    frame = taus.assign(score=taus["score"].map(LABELS))
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    colors = method_colors(list(dict.fromkeys(frame["quality"])))
    interval_points(ax, frame, "score", "tau", "ci_low", "ci_high", "quality", colors, dodge=0.15)
    ax.axhline(0, color="0.6", lw=0.8)
    ax.set(xlabel="", ylabel="Kendall's τ with quality")
    ax.tick_params(axis="x", rotation=25)
    ax.legend()
    return fig


def abstention_figure(curves: pd.DataFrame, scores: tuple[str, ...]) -> plt.Figure:
    """Mean ROUGE-L of the kept summaries against the abstention rate, bootstrap bands."""
    fig, ax = plt.subplots(figsize=(7.5, 4.0))
    for score in (*scores, "oracle"):
        sub = curves[curves["score"] == score]
        name = LABELS.get(score, score)
        color = COLORS[name]
        style = ":" if score == "oracle" else "-"
        ax.plot(sub["abstention"], sub["quality"], style, color=color, label=name, marker="o", ms=3)
        ax.fill_between(sub["abstention"], sub["ci_low"], sub["ci_high"], color=color, alpha=0.15)
    ax.set(xlabel="abstention rate (highest scores dropped)", ylabel="mean ROUGE-L of kept summaries")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig
