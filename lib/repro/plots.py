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


def apfd_area(ax, new_faults: Sequence[int] | np.ndarray, label: str, shade: bool = True):
    """Draw a fault-detection step curve on `ax` and shade its area, which equals APFD."""
    x, y = fault_curve(new_faults)
    (line,) = ax.step(x, y, where="post", label=label)
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
