"""Figures of the Min-K% chapter: detectors per set with intervals, Figure 5's three panels, the k sweep, the length sweep."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..page import FIGURE_WIDTH, method_colors
from ..plots import interval_points
from . import corpora as C

ORACLE = ("Ref", "Ref-small")
Z95 = 1.959964


def detection_bars(main: pd.DataFrame) -> plt.Figure:
    """AUC of every detector on every set after the main run (DeLong 95 % bars); the oracle Ref set apart."""
    d = main.assign(set=main.dataset.map(C.paper_name))
    free = d[~d.method.isin(ORACLE)].groupby("method").auc.mean().sort_values().index.tolist()
    order = free + [m for m in ORACLE if m in set(d.method)]
    d = d.set_index("method").loc[order].reset_index()
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, 4.0))
    sets = list(dict.fromkeys(d.set))
    interval_points(ax, d, "method", "auc", "auc_low", "auc_high", "set", method_colors(sets))
    n_free = len(free)
    bottom = min(0.3, np.floor(d.auc_low.min() * 10) / 10)  # every interval whole, however low a set's AUC
    ax.axvspan(n_free - 0.5, len(order) - 0.5, color="0.9", zorder=0)
    ax.text(n_free - 0.4, 0.03, "oracle: the base\nmodel as reference", fontsize=8, transform=ax.get_xaxis_transform())
    ax.axhline(0.5, color="grey", lw=1, ls="--")
    ax.set(
        ylim=(bottom, 1.02),
        ylabel="AUC",
        xlabel="",
        title="Members vs non-members after the main run, first seed (k = 20 %)",
    )
    ax.tick_params(axis="x", labelsize=9)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.09), ncols=min(len(sets), 5))
    fig.tight_layout()
    return fig


METHOD_STYLE = {"Min-K%": ("-", "o"), "PPL": ("--", "s")}


def _tokens(n: float) -> str:
    """A token count as a tick label: 64, 256, 2k, 1.5M."""
    for size, unit in ((1e6, "M"), (1e3, "k")):
        if n >= size:
            return f"{n / size:g}{unit}"
    return f"{n:g}"


def _lines(ax: plt.Axes, d: pd.DataFrame, x: str, colors: dict) -> None:
    """Min-K% (solid, circles) and PPL (dashed, squares) per set, with 95 % bars."""
    if d.empty:
        ax.text(0.5, 0.5, "too few members\nper point", transform=ax.transAxes, ha="center", va="center")
        return
    for (name, method), g in d.groupby(["set", "method"], sort=False):
        g = g.sort_values(x)
        ls, marker = METHOD_STYLE[method]
        ax.errorbar(
            g[x],
            g.auc,
            yerr=[g.auc - g.auc_low, g.auc_high - g.auc],
            color=colors[name],
            ls=ls,
            marker=marker,
            capsize=3,
        )


def figure5(sizes: pd.DataFrame, occurrences: pd.DataFrame, freq_set: str) -> plt.Figure:
    """Fig. 5: AUC against corpus size for outlier (a) and in-distribution (b) contaminants, and against copies (c).

    One colour per set, one line style per detector; a shared legend underneath."""
    occ = occurrences.assign(set=freq_set)
    names = list(dict.fromkeys([*sizes.set, freq_set]))
    colors = method_colors(names)
    fig, axes = plt.subplots(1, 3, figsize=(FIGURE_WIDTH, 3.6), sharey=True)
    panels = (("size_outlier", "(a) outliers"), ("size_indist", "(b) in-distribution"))
    for ax, (exp, title) in zip(axes[:2], panels):
        d = sizes[sizes.experiment == exp]
        _lines(ax, d, "background_tokens", colors)
        ax.set(xscale="log", title=title, xlabel="background tokens")
        ax.set_xticks(sorted(d.background_tokens.unique()), [_tokens(t) for t in sorted(d.background_tokens.unique())])
        ax.minorticks_off()
    _lines(axes[2], occ, "copies", colors)
    if not occurrences.empty:
        axes[2].set_xticks(sorted(occurrences.copies.unique()))
    axes[2].set(title="(c) copies of a member", xlabel="copies in the corpus")
    axes[0].set_ylabel("AUC")
    for ax in axes:
        ax.axhline(0.5, color="grey", lw=1, ls=":")
    handles = [plt.Line2D([], [], color=c, lw=6, label=n) for n, c in colors.items()]
    handles += [plt.Line2D([], [], color="k", ls=ls, marker=m, label=meth) for meth, (ls, m) in METHOD_STYLE.items()]
    fig.legend(handles=handles, loc="lower center", ncols=len(handles), fontsize=8, bbox_to_anchor=(0.5, -0.02))
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def k_sweep(main: pd.DataFrame) -> plt.Figure:
    """Mean AUC over the sets against k for Min-K% and Min-K%++, PPL as a line, with approximate 95 % bars."""
    d = main.assign(se=(main.auc_high - main.auc_low) / (2 * Z95))
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH - 1.0, 3.4))
    colors = method_colors(["Min-K%", "Min-K%++", "PPL"])
    for method in ("Min-K%", "Min-K%++"):
        g = (
            d[d.method == method]
            .groupby("k")
            .agg(auc=("auc", "mean"), se=("se", lambda s: np.sqrt((s**2).sum()) / len(s)))
        )
        ax.errorbar(g.index, g.auc, yerr=Z95 * g.se, marker="o", capsize=3, color=colors[method], label=method)
    ax.axhline(d[d.method == "PPL"].auc.mean(), color=colors["PPL"], ls="--", label="PPL (k = 100 %)")
    ax.set(xlabel="k (fraction of tokens)", ylabel="mean AUC over the sets", title="The k sweep (main run, first seed)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    fig.tight_layout()
    return fig


def length_sweep(table: pd.DataFrame) -> plt.Figure:
    """Mean AUC over the sets (main runs) against the number of tokens scored, Min-K% and PPL, 95 % intervals."""
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH - 1.0, 3.2))
    d = table.assign(tokens=table.tokens.astype(str))
    interval_points(ax, d, "tokens", "auc", "ci_low", "ci_high", "detector", method_colors(["Min-K%", "PPL"]), 0.1)
    ax.axhline(0.5, color="grey", lw=0.8, ls=":")
    ax.set(xlabel="tokens scored (the same texts, cut)", ylabel="mean AUC over the sets", title="Detection and length")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    fig.tight_layout()
    return fig
