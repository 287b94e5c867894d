"""Figures of the data-selection chapter: selections, contaminant weights, DoReMi's weights and curves."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..page import FIGURE_WIDTH, method_colors
from .experiment import METHODS, Domains, DoremiResult, domain_label

HOLLOW = ("top-k DSIR", "top-k heuristic")  # drawn as open, larger markers: a top-k arm often sits on its sampled twin


def selection(table: pd.DataFrame) -> plt.Figure:
    """Held-out target perplexity against KL reduction, one point per method and size, one panel per target; the
    top-k arms as open rings around their sampled twins' dots (the two often coincide)."""
    targets = list(dict.fromkeys(table.target))
    fig, axes = plt.subplots(1, len(targets), figsize=(FIGURE_WIDTH, 4.0), squeeze=False)
    colors = method_colors(list(METHODS))
    sizes = sorted(table.selected.unique())
    markers = dict(zip(sizes, "os^Dv"))

    def style(method: str) -> dict:
        if method in HOLLOW:
            return {"facecolors": "none", "edgecolors": colors[method], "s": 110, "linewidths": 1.6}
        return {"color": colors[method], "s": 40}

    for ax, target in zip(axes[0], targets):
        for _, r in table[table.target == target].iterrows():
            ax.scatter(r.kl_reduction, r.perplexity, marker=markers[r.selected], **style(r.method))
        ax.set(title=f"target: {target}", xlabel="KL reduction (nats)", ylabel="held-out perplexity")
    handles = [
        plt.Line2D(
            [], [], color=c, marker="o", ls="", label=m, markerfacecolor="none" if m in HOLLOW else c,
            markersize=9 if m in HOLLOW else 6,
        )
        for m, c in colors.items()
    ]  # fmt: skip
    if len(sizes) > 1:  # one size needs no marker key
        handles += [plt.Line2D([], [], color="grey", marker=markers[k], ls="", label=f"{k} chunks") for k in sizes]
    fig.legend(handles=handles, fontsize=8, loc="lower center", ncols=3, bbox_to_anchor=(0.5, 0))
    rows = -(-len(handles) // 3)
    fig.tight_layout(rect=(0, (0.1 + 0.2 * rows) / fig.get_figheight(), 1, 1))
    return fig


def contamination(weights: pd.DataFrame) -> plt.Figure:
    """Histograms of the per-n-gram DSIR log weight of the Min-K% chapter's items (prompt templates kept), by regime."""
    weights = weights[weights.templates == "with"]
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, 3.2))
    colors = method_colors(list(dict.fromkeys(weights.regime)))
    bins = np.linspace(weights.log_weight_per_ngram.min(), weights.log_weight_per_ngram.max(), 40)
    for regime, g in weights.groupby("regime", sort=False):
        ax.hist(g.log_weight_per_ngram, bins=bins, alpha=0.6, color=colors[regime], label=regime)
    ax.axvline(0, color="grey", lw=1, ls="--")
    ax.set(xlabel="log weight per n-gram (own group vs background)", ylabel="items")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def doremi(d: Domains, res: DoremiResult) -> plt.Figure:
    """(a) baseline and learned weights; (b) the proxy's weights over its steps; (c) held-out curves, both mixtures."""
    fig, ax = plt.subplot_mosaic([["a", "b"], ["c", "c"]], figsize=(FIGURE_WIDTH, 6.4))
    axes = [ax["a"], ax["b"], ax["c"]]
    names = [domain_label(n) for n in d.names]
    colors = method_colors(names)
    x = np.arange(len(names))
    if res.noise_share > 0:
        names = [*names, "noise"]
        colors = method_colors(names)
        x = np.arange(len(names))
    axes[0].bar(x - 0.2, res.baseline, 0.4, color="0.7", label="baseline (natural shares)")
    axes[0].bar(x + 0.2, res.learned, 0.4, color=[colors[n] for n in names], label="DoReMi (averaged)")
    axes[0].set_xticks(x, names, rotation=30, ha="right", rotation_mode="anchor")
    axes[0].set(title="(a) domain weights", ylabel="weight")
    axes[0].legend(fontsize=7)
    for j, n in enumerate(names):  # no legend: the colours name the domains as the bars of (a) do
        axes[1].plot(res.trajectory[:, j], color=colors[n])
    axes[1].set(title="(b) proxy weights per step,\ncoloured by domain as in (a)", xlabel="proxy step", ylabel="weight")
    for mixture, ls in (("baseline", "--"), ("DoReMi", "-"), ("uniform", ":")):
        if mixture not in res.runs:
            continue
        curves = np.array([np.asarray(r["eval"]).mean(1) for r in res.runs[mixture]])
        steps = res.runs[mixture][0]["eval_step"]
        mean = curves.mean(0)
        axes[2].plot(steps, np.exp(mean), ls=ls, color="k", label=mixture)
        if len(curves) > 1:
            axes[2].fill_between(steps, np.exp(curves.min(0)), np.exp(curves.max(0)), color="0.8", alpha=0.6)
    axes[2].set(title="(c) mean held-out perplexity", xlabel="step", ylabel="perplexity (seed range shaded)")
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    return fig
