"""The chapter's figures: AUROC down the n-gram ladder, Kendall's τ with quality, quality-vs-abstention curves.
One colour per score across the chapter; every estimate with its 95 % interval."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..page import FIGURE_WIDTH, method_colors
from ..plots import interval_points
from .experiment import LABELS, SCORES

COLORS = method_colors([LABELS[s] for s in SCORES]) | {"oracle": (0.25, 0.25, 0.25)}  # the oracle apart, in black


def ladder_figure(aurocs: pd.DataFrame, overlap: pd.DataFrame, scores: tuple[str, ...]) -> plt.Figure:
    """AUROC of each score on each OOD set (DeLong bars), the sets down the ladder: from the most unigram overlap
    with the training articles (top) to the least, each named with its Jaccard overlap."""
    jac = dict(zip(overlap["set"], overlap["jaccard_1"]))
    labels = dict(zip(overlap["set"], overlap["label"]))
    sets = sorted(dict.fromkeys(aurocs["set"]), key=lambda s: -jac[s])
    rows = {name: -i for i, name in enumerate(sets)}
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH - 1.0, 0.9 + 0.36 * len(sets)))
    offsets = np.linspace(-0.25, 0.25, len(scores)) if len(scores) > 1 else np.zeros(1)
    for off, score in zip(offsets, scores):
        sub = aurocs[aurocs["score"] == score]
        y = sub["set"].map(rows) - off
        err = [sub["auroc"] - sub["ci_low"], sub["ci_high"] - sub["auroc"]]
        color = COLORS[LABELS[score]]
        ax.errorbar(sub["auroc"], y, xerr=err, fmt="o", color=color, label=LABELS[score], capsize=2, ms=4)
    ax.axvline(0.5, color="0.6", lw=0.8, ls="--")
    ax.set_yticks(list(rows.values()), [f"{labels[s]} ({jac[s]:.3f})" for s in sets])
    ax.set_ylim(-len(sets) + 0.5, 0.5)
    ax.set(xlabel="AUROC (XSUM test articles against the set)", ylabel="OOD set (unigram Jaccard overlap)")
    ax.tick_params(axis="y", labelsize=9)
    ax.grid(axis="y", visible=False)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0, fontsize=8)
    fig.tight_layout()
    return fig


def tau_figure(taus: pd.DataFrame) -> plt.Figure:
    """Kendall's τ of each score with each quality measure, bootstrap bars."""
    frame = taus.assign(score=taus["score"].map(LABELS))
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH - 1.2, 3.6))
    colors = method_colors(list(dict.fromkeys(frame["quality"])))
    interval_points(ax, frame, "score", "tau", "ci_low", "ci_high", "quality", colors, dodge=0.15)
    ax.axhline(0, color="0.6", lw=0.8)
    ax.set(xlabel="", ylabel="Kendall's τ with quality")
    plt.setp(ax.get_xticklabels(), rotation=25, ha="right", rotation_mode="anchor")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    return fig


def abstention_figure(curves: pd.DataFrame, scores: tuple[str, ...]) -> plt.Figure:
    """Mean ROUGE-L of the kept summaries against the abstention rate, bootstrap bands."""
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH - 1.8, 4.0))
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


def perplexity_densities(frame: pd.DataFrame, labels: dict[str, str]) -> plt.Figure:
    """Perplexity of the generated summaries, one panel per OOD set: the set's density against the in-domain test
    outputs' (Gaussian KDE of log perplexity), as the paper's Figure 1 draws them."""
    from scipy.stats import gaussian_kde

    inside = np.log(frame.loc[frame["ood"] == 0, "perplexity"].to_numpy())
    names = list(dict.fromkeys(frame.loc[frame["ood"] == 1, "set"]))
    cols = min(5, len(names))
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(FIGURE_WIDTH, 1.9 * rows + 0.6), sharex=True, squeeze=False)
    every = np.log(frame["perplexity"].to_numpy())
    grid = np.linspace(every.min() - 0.2, every.max() + 0.2, 200)
    for ax, name in zip(axes.flat, names):
        values = np.log(frame.loc[frame["set"] == name, "perplexity"].to_numpy())
        for data, color, label in ((inside, (0.3, 0.3, 0.3), "XSUM (in-domain)"), (values, (0.8, 0.3, 0.1), None)):
            if np.ptp(data) > 0:
                ax.fill_between(grid, gaussian_kde(data)(grid), color=color, alpha=0.35, label=label or "OOD set")
        ax.set_title(labels[name], fontsize=9)
        ax.set_yticks([])
    for ax in axes.flat[len(names) :]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("log perplexity")
    handles, names_ = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, names_, loc="upper center", ncol=2, bbox_to_anchor=(0.5, 1.02), fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return fig
