"""Figures used by more than one chapter."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def fault_curve(new_faults: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Post-step curve (fraction of tests run, fraction of faults found), rising mid-way through each test.

    Crediting each fault halfway through the test that finds it makes the area under the curve
    exactly APFD: the +1/(2n) term of the formula is that half test.
    """
    counts = np.asarray(new_faults, dtype=np.float64)
    if counts.ndim != 1 or counts.size == 0 or counts.sum() <= 0 or (counts < 0).any():
        raise ValueError("new_faults must be a non-empty 1-D count per test revealing at least one fault")
    n = counts.size
    x = np.concatenate([[0.0], (np.arange(n) + 0.5) / n, [1.0]])
    found = np.cumsum(counts) / counts.sum()
    y = np.concatenate([[0.0], found, found[-1:]])
    return x, y


def curve_area(x: np.ndarray, y: np.ndarray) -> float:
    """Area under a post-step curve."""
    return float(np.sum(np.diff(x) * y[:-1]))


def apfd_area(ax, new_faults: Sequence[int] | np.ndarray, label: str, shade: bool = True, color=None, **line_kw):
    """Draw a fault-detection step curve on `ax` (in `color`, else the next of the cycle; `line_kw` to the line) and
    shade its area, which equals APFD."""
    x, y = fault_curve(new_faults)
    (line,) = ax.step(x, y, where="post", label=label, color=color, **line_kw)
    if shade:
        ax.fill_between(x, y, step="post", alpha=0.2, color=line.get_color())
    ax.set(xlabel="fraction of tests run", ylabel="fraction of faults found", xlim=(0, 1), ylim=(0, 1.02))
    return ax


def interval_points(ax, frame, x: str, y: str, low: str, high: str, hue: str, colors: dict, dodge: float = 0.25):
    """Points with 95 % interval bars, one colour per `hue` value, dodged side by side at each category of `x`."""
    cats = list(dict.fromkeys(frame[x]))
    levels = list(dict.fromkeys(frame[hue]))
    offsets = np.linspace(-dodge, dodge, len(levels)) if len(levels) > 1 else np.zeros(1)
    for off, level in zip(offsets, levels):
        sub = frame[frame[hue] == level]
        pos = np.array([cats.index(c) for c in sub[x]]) + off
        err = np.vstack([sub[y] - sub[low], sub[high] - sub[y]])
        ax.errorbar(pos, sub[y], yerr=err, fmt="o", color=colors.get(level), label=level, capsize=3, ms=5)
    ax.set_xticks(range(len(cats)), cats)
    return ax


def plain_number(value: float, _pos=None) -> str:
    """A tick label as a reader writes the number: 4, 0.5, 1,024 (not 4×10⁰)."""
    return f"{value:,.0f}" if value >= 1 and value == round(value) else f"{value:g}"


def log_axis(ax, axis: str = "x", base: int = 2) -> None:
    """A log scale on `axis` of `ax`, ticked at powers of `base` (as many as its length holds, the locator thins
    them) and labelled with plain numbers; no minor tick labels, which print over each other on a short axis."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    ax.set(**{f"{axis}scale": "log"})
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(LogLocator(base=base))
    target.set_major_formatter(FuncFormatter(plain_number))
    target.set_minor_locator(NullLocator())


DECISION_COLORS = {"held": "#1a9850", "not held": "#d73027", "inconclusive": "#e0a000", "untestable here": "#8c8c8c"}


def finite_number(value) -> bool:
    """Whether a cell holds a finite number."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value)


def forest(rows, width: float | None = None):
    """The verdict figure: every row's estimate and 95 % interval (or null band, grey) on its statistic's scale, one
    panel per statistic, the rule's threshold dashed, the paper's value as an open diamond, coloured by decision;
    rows numbered as in the verdict table. Returns the figure."""
    import textwrap

    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.transforms import blended_transform_factory

    from .page import FIGURE_WIDTH
    from .verdict import by_statistic

    groups = by_statistic(rows)
    sizes = [len(g) for g in groups.values()]
    fig, axes = plt.subplots(
        len(groups),
        1,
        figsize=(width or FIGURE_WIDTH, 0.6 + sum(0.26 * n + 0.62 for n in sizes)),
        gridspec_kw={"height_ratios": [n + 1.6 for n in sizes]},
        squeeze=False,
    )
    diamonds = False
    for ax, (stat, items) in zip(axes[:, 0], groups.items()):
        xs = []
        for j, (i, row) in enumerate(items):
            y, color = -j, DECISION_COLORS.get(str(row.get("decision")), "black")
            ours, low, high = row.get("ours"), row.get("ci_low"), row.get("ci_high")
            null = str(row.get("rule_kind") or "").endswith("null")
            if finite_number(low) and finite_number(high) and low != high:
                if null:
                    ax.plot([low, high], [y, y], lw=7, color="0.82", solid_capstyle="butt", zorder=1)
                else:
                    ax.plot([low, high], [y, y], lw=2, color=color, zorder=2)
                xs += [low, high]
            if finite_number(ours):
                ax.plot([ours], [y], "o", color=color, ms=6, zorder=3)
                xs.append(ours)
            elif not (finite_number(low) and finite_number(high)):  # no estimate (untestable here): say so, not a gap
                at = blended_transform_factory(ax.transAxes, ax.transData)
                ax.text(0.01, y, str(row.get("decision")), transform=at, va="center", fontsize=7.5, color=color)
            paper = row.get("paper_estimate")
            if finite_number(paper) and not row.get("values"):
                ax.plot([paper], [y], "D", mfc="none", mec="black", ms=6, mew=1.2, zorder=4)
                xs.append(paper)
                diamonds = True
        for bound in {r.get(k) for _, r in items for k in ("rule_low", "rule_high")}:
            if finite_number(bound):
                ax.axvline(bound, color="0.3", ls="--", lw=1, zorder=0)
                xs.append(bound)
        if xs:
            lo, hi = min(xs), max(xs)
            pad = (hi - lo) * 0.08 or max(abs(hi) * 0.05, 1e-3)
            ax.set_xlim(lo - pad, hi + pad)
        ax.set_ylim(-len(items) + 0.4, 0.6)
        ax.set_yticks([-j for j in range(len(items))], [f"#{i}" for i, _ in items])
        ax.grid(axis="y", visible=False)
        ax.tick_params(axis="both", labelsize=8, pad=1)
        ax.set_title("\n".join(textwrap.wrap(stat, 95)), fontsize=8.5, loc="left", pad=3)
    # the legend names what the figure draws: the decisions its rows reach, the paper's value and a null band only
    # where a row has one
    shown = {str(r.get("decision")) for items in groups.values() for _, r in items}
    handles = [Line2D([], [], marker="o", ls="-", color=c, label=d) for d, c in DECISION_COLORS.items() if d in shown]
    if diamonds:
        handles.append(Line2D([], [], marker="D", ls="", mfc="none", mec="black", label="paper's value"))
    if any(str(r.get("rule_kind") or "").endswith("null") for items in groups.values() for _, r in items):
        handles.append(Line2D([], [], color="0.82", lw=7, label="null band"))
    handles.append(Line2D([], [], color="0.3", ls="--", label="rule's threshold"))
    fig.legend(handles=handles, loc="upper center", ncol=4, fontsize=8, frameon=False, bbox_to_anchor=(0.5, 1.0))
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.55 / fig.get_figheight()), h_pad=0.6)
    return fig
