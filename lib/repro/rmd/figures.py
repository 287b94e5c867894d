"""Figures of the RMD chapter: AUROC per direction with intervals, and the three sweeps (K, discriminant directions,
principal components), one panel per direction, log axes labelled with plain numbers."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ..page import FIGURE_WIDTH
from ..plots import interval_points, log_axis
from .experiment import KINDS


def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width, break_on_hyphens=False)) or text


def auroc_panels(aurocs: pd.DataFrame, colors: dict) -> plt.Figure:
    """AUROC of each score per direction (in-distribution set named), one panel per feature type, 95 % bars."""
    labels = aurocs["in_dist"] + " in"
    cats = list(dict.fromkeys(labels))
    width = max(9, int((FIGURE_WIDTH - 1.2) * 72 / len(cats) / 5.6))  # characters of an 8-pt label a category holds
    panels = aurocs.assign(direction=labels.map(lambda s: _wrap(s, width)))
    fig, axes = plt.subplots(2, 1, figsize=(FIGURE_WIDTH, 6.6), sharey=True)
    for ax, kind in zip(axes, KINDS):
        interval_points(
            ax, panels[panels["features"] == kind], "direction", "auroc", "ci_low", "ci_high", "score", colors
        )
        ax.set(ylabel="AUROC", title=f"{kind} features", xlabel="")
        ax.tick_params(axis="x", labelsize=8)
    axes[0].legend(loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    fig.tight_layout()
    return fig


def _direction_panels(n: int) -> tuple[plt.Figure, np.ndarray]:
    """Panels for `n` directions, three a row, at page width; the unused ones removed."""
    cols = min(3, n)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(FIGURE_WIDTH, 0.4 + 2.3 * rows), sharey=True, squeeze=False)
    for ax in axes.flat[n:]:
        ax.remove()
    return fig, axes.flat[:n]


def _sweep_panels(frame: pd.DataFrame, x: str, y: str, xlabel: str, ylabel: str, zero: bool, **style) -> plt.Figure:
    """One panel per direction (setting: in-distribution set), `y` against `x` on a log axis with 95 % bands, one
    legend above the panels, shared axis labels."""
    frame = frame.assign(direction=frame["setting"] + ": " + frame["in_dist"])
    names = list(dict.fromkeys(frame["direction"]))
    fig, axes = _direction_panels(len(names))
    for ax, name in zip(axes, names):
        sns.lineplot(frame[frame["direction"] == name], x=x, y=y, marker="o", errorbar=("ci", 95), ax=ax, **style)
        if zero:
            ax.axhline(0, color="grey", lw=0.8)
        log_axis(ax, "x")
        ax.set(xlabel="", ylabel="")
        ax.set_title(_wrap(name, 34), fontsize=8)
        ax.tick_params(labelsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    for ax in axes:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    fig.supxlabel(xlabel, fontsize=10)
    fig.supylabel(ylabel, fontsize=10)
    ncols = min(len(labels), 7)
    fig.legend(handles, labels, loc="upper center", ncols=ncols, fontsize=8, bbox_to_anchor=(0.5, 1), handlelength=3)
    rows = -(-len(labels) // ncols)
    fig.tight_layout(rect=(0, 0, 1, 1 - (0.08 + 0.2 * rows) / fig.get_figheight()))
    return fig


def class_sweep(rows: pd.DataFrame) -> plt.Figure:
    """The MD→RMD gain (label-free features) against the number of real in-distribution classes K, one line per
    setting, the band over the random class subsets drawn at each K."""
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, 3.4))
    sns.lineplot(rows, x="K", y="gain", hue="setting", marker="o", errorbar=("pi", 100), ax=ax)
    ax.axhline(0, color="grey", lw=0.8)
    log_axis(ax, "x")
    ax.set(xlabel="real in-distribution classes K (subsets of the setting's classes)", ylabel="AUROC(RMD) − AUROC(MD)")
    ax.legend(fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left")
    return fig


def direction_sweep(dsweep: pd.DataFrame) -> plt.Figure:
    """The gain of RMD keeping its m leading discriminant directions over MD, against m, per direction."""
    return _sweep_panels(
        dsweep,
        "directions",
        "gain",
        "discriminant directions kept (m)",
        "AUROC(RMD_m) − AUROC(MD)",
        zero=True,
        hue="features",
    )


def pc_sweep(pc: pd.DataFrame, colors: dict) -> plt.Figure:
    """AUROC of MD and RMD against the number of leading principal components kept, per direction."""
    return _sweep_panels(
        pc,
        "k",
        "auroc",
        "k (leading principal components)",
        "AUROC",
        zero=False,
        hue="score",
        style="features",
        palette={s: c for s, c in colors.items() if s in set(pc["score"])},
    )
