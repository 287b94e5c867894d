"""The CRT chapter's figures: attacks against γ with their null bands, Fig. 2 per epoch, Fig. 6 amplification."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, MaxNLocator

from ..page import FIGURE_WIDTH, method_colors
from ..plots import log_axis, plain_number
from .runs import ALTERNATE_LABEL, MATCHED_LABEL

TRAINER_ORDER = ("non-private", "non-private + mask", "S-DP", "DPSGD", "CRT")
COLORS = method_colors(list(TRAINER_ORDER) + ["S-DP (perfect policy)", "D_pub only", ALTERNATE_LABEL, MATCHED_LABEL])
MARKERS = dict(zip(TRAINER_ORDER, "osD^v"))


NULL_LABEL = "null, central 95 %\n(every trainer's, joined)"


def against_gamma(table: pd.DataFrame, value: str, panels: list[tuple[str, str]], ylabel: str, chance: float | None):
    """One panel per (model, attack) filter: each trainer's seed mean against γ over one grey band, at each γ from the
    lowest to the highest of the trainers' central 95 % null intervals (one band per trainer, drawn alike, smeared
    into each other)."""
    cols = min(len(panels), 2)
    nrows = -(-len(panels) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(FIGURE_WIDTH, 3.3 * nrows), squeeze=False, sharey=True)
    for ax, (title, query) in zip(axes.flat, panels):
        sub = table.query(query)
        drawn = sub[sub.trainer.isin(TRAINER_ORDER)]
        band = drawn.groupby("gamma").agg(low=("null_low", "min"), high=("null_high", "max")).reset_index()
        ax.fill_between(band.gamma, band.low, band.high, color="grey", alpha=0.18, lw=0, label=NULL_LABEL)
        for trainer in TRAINER_ORDER:
            rows = sub[sub.trainer == trainer].sort_values("gamma")
            if not rows.empty:
                ax.plot(rows.gamma, rows[value], marker=MARKERS[trainer], color=COLORS[trainer], label=trainer)
        if chance is not None:
            ax.axhline(chance, color="grey", ls=":", lw=1)
        ax.set(title=title, xlabel="false-negative rate γ of π")
    for row in axes:
        row[0].set_ylabel(ylabel)
    _one_legend(axes)
    fig.tight_layout()
    return fig


def _one_legend(axes: np.ndarray) -> None:
    """One legend beside the top-right panel naming every panel's trainers once, in the chapter's order (S-DP is
    drawn on the LSTM's panels only, so a legend taken from the GPT-2 panel would leave it out)."""
    entries: dict = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    order = [t for t in TRAINER_ORDER if t in entries] + [t for t in entries if t not in TRAINER_ORDER]
    axes[0][-1].legend(
        [entries[t] for t in order], order, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0
    )


def per_epoch(history: pd.DataFrame, baseline: pd.DataFrame, names: dict[str, str] | None = None):
    """Fig. 2 as the paper draws it: one point per epoch, non-secret validation perplexity against the ε spent so far;
    each panel titled by `names` (the model's name on the page, e.g. "GPT-2 (from scratch)")."""
    models = list(dict.fromkeys(history.model))
    fig, axes = plt.subplots(1, len(models), figsize=(FIGURE_WIDTH, 3.6), squeeze=False)
    for ax, model in zip(axes[0], models):
        sub = history[(history.model == model) & history.epsilon.notna()]
        for trainer, rows in sub.groupby("trainer", sort=False):
            alone = len(rows) == 1  # a run kept after its last epoch only: one star
            marker, ms = ("*", 11) if alone else ("o", 4)
            label = f"{trainer} (final)" if alone else trainer
            color = COLORS.get(trainer)
            ax.plot(rows.epsilon, rows.validation, marker=marker, ms=ms, color=color, mec="black", mew=0.6, label=label)
        final = baseline[(baseline.model == model)]
        for _, r in final.iterrows():
            ax.axhline(r.validation, color=COLORS.get(r.trainer), ls="--", lw=1, label=f"{r.trainer} (final)")
        ax.set(title=(names or {}).get(model, model), xlabel="ε spent so far")
        ax.set_xlim(0, 1.05 * history.epsilon.max())
        ax.xaxis.set_major_locator(MaxNLocator(5))
        ax.xaxis.set_major_formatter(FuncFormatter(plain_number))
        log_axis(ax, "y")
    axes[0][0].set_ylabel("validation perplexity (non-secret)")
    fig.supxlabel("CRT is drawn at its confidentiality ε", fontsize=9)
    _one_legend(axes)
    fig.tight_layout()
    return fig


def amplification(table: pd.DataFrame, paper: dict[float, float], ours: tuple[float, ...] = (0.1, 0.2, 0.5)):
    """Fig. 6: ε_conf against γ for each ε′; the paper's quoted points at ε′ = 1 (`paper`, γ -> ε_conf) as red crosses
    and our recomputation at ε′ = 1 and the γ values `ours` (read from `table`) as open circles; and ε_conf / ε_dp."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(FIGURE_WIDTH, 3.6))
    colors = plt.cm.viridis(np.linspace(0, 0.9, table.epsilon_prime.nunique()))
    for color, (eps, rows) in zip(colors, table.groupby("epsilon_prime")):
        left.plot(rows.gamma, rows.epsilon_conf, marker="o", ms=3, color=color, label=f"ε′ = {eps:g}")
        right.plot(rows.gamma, rows.epsilon_conf / rows.epsilon_dp, marker="o", ms=3, color=color)
    mine = table[(table.epsilon_prime == 1.0) & table.gamma.isin(ours)]
    left.scatter(mine.gamma, mine.epsilon_conf, marker="o", s=60, facecolors="none", edgecolors="black", zorder=4,
                 label="ours: recomputed (ε′ = 1)")  # fmt: skip
    left.scatter(list(paper), list(paper.values()), marker="x", s=60, color="red", zorder=5, label="paper (ε′ = 1)")
    left.set(xlabel="γ", ylabel="confidentiality ε_conf")
    left.set_title("Fig. 6, recomputed", pad=12)  # clear of the top tick label of the log axis
    log_axis(left, "y", base=10)
    right.set(xlabel="γ", ylabel="ε_conf / ε_dp(δ/γ)")
    right.set_title("shrinks as ε′ grows", pad=12)
    handles, labels = left.get_legend_handles_labels()  # one legend for both panels (the ε′ colours are shared)
    right.legend(handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    fig.tight_layout()
    return fig
