"""Figures of the RMD chapter: AUROC per direction with intervals, and the three sweeps (K, discriminant directions,
principal components), one panel per direction, log axes labelled with plain numbers."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ..page import FIGURE_WIDTH
from ..plots import log_axis
from .experiment import KINDS


def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False)) or text


def auroc_panels(aurocs: pd.DataFrame, colors: dict) -> plt.Figure:
    """AUROC of each score per direction (in-distribution set named, one line each), one panel per feature type side
    by side, 95 % bars: the directions on the y axis, so that their names read in full."""
    labels = aurocs["setting"] + ": " + aurocs["in_dist"] + " in"
    cats = list(dict.fromkeys(labels))[::-1]  # the first direction on top
    frame = aurocs.assign(direction=labels)
    levels = list(dict.fromkeys(frame["score"]))
    offsets = np.linspace(0.25, -0.25, len(levels)) if len(levels) > 1 else np.zeros(1)
    fig, axes = plt.subplots(1, 2, figsize=(FIGURE_WIDTH, 0.9 + 0.42 * len(cats)), sharey=True)
    for ax, kind in zip(axes, KINDS):
        panel = frame[frame["features"] == kind]
        for off, level in zip(offsets, levels):
            sub = panel[panel["score"] == level]
            pos = np.array([cats.index(c) for c in sub["direction"]]) + off
            err = np.vstack([sub["auroc"] - sub["ci_low"], sub["ci_high"] - sub["auroc"]])
            ax.errorbar(sub["auroc"], pos, xerr=err, fmt="o", color=colors.get(level), label=level, capsize=2, ms=4)
        ax.axvline(0.5, color="grey", lw=0.8, ls=":")  # chance
        ax.set(xlabel="AUROC", title=f"{kind} features")
        ax.set_yticks(range(len(cats)), cats)
        ax.tick_params(labelsize=8)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="upper center", ncol=len(names), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.35 / fig.get_figheight()))
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
    """One panel per direction (setting: in-distribution set), `y` against `x` on a log axis, the band the range over
    the seeds' models (three points make no bootstrap interval), one legend above the panels, shared axis labels."""
    frame = frame.assign(direction=frame["setting"] + ": " + frame["in_dist"])
    names = list(dict.fromkeys(frame["direction"]))
    fig, axes = _direction_panels(len(names))
    for ax, name in zip(axes, names):
        sns.lineplot(frame[frame["direction"] == name], x=x, y=y, marker="o", errorbar=("pi", 100), ax=ax, **style)
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
