"""Cost of prioritization: repeated wall-clock timings, ratios to DeepGini, scaling slopes and intervals.

The chapter's two cost claims rest on ratios of times, end to end (forward pass included): DeepGini is cheaper than
every coverage method (the smallest ratio coverage / DeepGini above 1.1), and at least 10x cheaper than KMNC and the
surprise-adequacy methods LSC and DSC (the smallest of their ratios above 10); see claims._cost_claims. A single
timing is noisy, and two timings taken apart differ by what the machine was doing in between, so a method and
DeepGini are timed in rounds, back to back within a round, and the ratio is the mean of the rounds' ratios with a t
interval (paired_ratio). Rounds within one process share its memory layout and caches, and two processes differed
by more than their rounds' spread, so the rows' timings run in several fresh processes and their ratio is the mean of
the processes' mean ratios with a t interval over the processes (ratio_over_processes). The scaling study times every method several times after one warm-up call and keeps the
minimum (time_prioritizer); timings over several test-set sizes give each method a log-log slope (1 for linear cost,
2 for quadratic) with a bootstrap interval.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from time import perf_counter

import numpy as np
import pandas as pd

__all__ = [
    "cost_table",
    "paired_ratio",
    "ratio_over_processes",
    "ratio_to",
    "scaling_fit",
    "time_prioritizer",
]

LEVEL = 0.95
_TAILS = ((1 - LEVEL) / 2, 1 - (1 - LEVEL) / 2)


def time_prioritizer(fn: Callable[[], object], repeats: int = 5) -> float:
    """Minimum wall time in seconds (perf_counter) over `repeats` calls of fn, after one uncounted warm-up call."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1; got {repeats}")
    fn()
    best = np.inf
    for _ in range(repeats):
        began = perf_counter()
        fn()
        best = min(best, perf_counter() - began)
    return float(best)


def cost_table(timings: Mapping[str, Callable[[], object]], repeats: int) -> pd.DataFrame:
    """One row per method: method, seconds (minimum over `repeats` timed calls) and repeats."""
    rows = [
        {"method": name, "seconds": time_prioritizer(fn, repeats), "repeats": repeats} for name, fn in timings.items()
    ]
    return pd.DataFrame(rows, columns=["method", "seconds", "repeats"])


def ratio_to(frame: pd.DataFrame, reference: str = "DeepGini") -> pd.DataFrame:
    """Copy of frame with column x_reference = seconds / the reference method's seconds (same run)."""
    ref = frame.loc[frame["method"] == reference, "seconds"]
    if len(ref) != 1:
        raise ValueError(f"need exactly one row of method {reference!r}; found {len(ref)}")
    return frame.assign(x_reference=frame["seconds"] / float(ref.iloc[0]))


def _positive(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    """Values as a non-empty 1-d float array, refusing anything not finite and positive."""
    arr = np.asarray(values, dtype=float).ravel()
    if arr.size == 0 or not np.all(np.isfinite(arr) & (arr > 0)):
        raise ValueError(f"{name} must be a non-empty list of finite positive numbers")
    return arr


def _check_boot(n_boot: int) -> None:
    """Refuse a resample count below 1."""
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1; got {n_boot}")


def _slopes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares slope of y on x along the last axis; NaN where x takes a single value."""
    dx = x - x.mean(axis=-1, keepdims=True)
    dy = y - y.mean(axis=-1, keepdims=True)
    sxx = (dx * dx).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sxx > 0, (dx * dy).sum(axis=-1) / sxx, np.nan)


def _fit_one(n_tests: np.ndarray, seconds: np.ndarray, n_boot: int, seed: int) -> dict[str, float]:
    """Slope, 95 % bootstrap band and fitted seconds at the largest n of log(seconds) = a + b log(n_tests)."""
    x, y = np.log(n_tests), np.log(seconds)
    slope, intercept = np.polyfit(x, y, 1)
    idx = np.random.default_rng(seed).integers(0, x.size, size=(n_boot, x.size))
    boot = _slopes(x[idx], y[idx])
    boot = boot[np.isfinite(boot)]
    low, high = np.quantile(boot, _TAILS) if boot.size else (np.nan, np.nan)
    return {
        "slope": float(slope),
        "slope_low": float(low),
        "slope_high": float(high),
        "seconds_at_max": float(np.exp(intercept + slope * x.max())),
    }


def scaling_fit(frame: pd.DataFrame, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Per method, the log-log slope of seconds on n_tests with a 95 % percentile bootstrap over its rows."""
    _check_boot(n_boot)
    rows = []
    for method, group in frame.groupby("method", sort=False):
        n_tests = _positive(group["n_tests"].to_numpy(), f"n_tests of {method!r}")
        seconds = _positive(group["seconds"].to_numpy(), f"seconds of {method!r}")
        if np.unique(n_tests).size < 2:
            raise ValueError(f"method {method!r} needs timings at two or more test-set sizes")
        rows.append({"method": method, **_fit_one(n_tests, seconds, n_boot, seed)})
    return pd.DataFrame(rows, columns=["method", "slope", "slope_low", "slope_high", "seconds_at_max"])


def ratio_over_processes(
    method_seconds: Sequence[Sequence[float]], reference_seconds: Sequence[Sequence[float]]
) -> tuple[float, float, float, float, int]:
    """The ratio method / reference over rounds timed in several fresh processes (item i of each argument: one
    process's rounds, paired by round): each process's mean of its rounds' ratios, then their mean with a 95 % t
    interval over the processes, the unit whose spread the rounds of one process do not show: (mean, low, high,
    standard error, degrees of freedom)."""
    from scipy import stats as sps

    if len(method_seconds) != len(reference_seconds) or len(method_seconds) < 2:
        raise ValueError(f"need two or more processes of each; got {len(method_seconds)} and {len(reference_seconds)}")
    means = []
    for i, (a, r) in enumerate(zip(method_seconds, reference_seconds)):
        a, r = _positive(a, f"method_seconds of process {i}"), _positive(r, f"reference_seconds of process {i}")
        if a.size != r.size or a.size < 1:
            raise ValueError(f"process {i}: need as many rounds of each, one or more; got {a.size} and {r.size}")
        means.append(float(np.mean(a / r)))
    x = np.asarray(means)
    mean, se, df = float(x.mean()), float(x.std(ddof=1) / np.sqrt(x.size)), x.size - 1
    half = float(sps.t.ppf(1 - (1 - LEVEL) / 2, df)) * se
    return mean, mean - half, mean + half, se, df


def paired_ratio(
    method_seconds: Sequence[float], reference_seconds: Sequence[float]
) -> tuple[float, float, float, float, int]:
    """Mean of the per-repeat ratios method / reference over interleaved repeats (repeat i of each timed back to
    back, so that what the machine was doing then slows both), with its 95 % t interval: (mean, low, high, standard
    error, degrees of freedom). A t interval has a standard error, so a family of such ratios can be read at a
    Bonferroni level; a bootstrap of minima cannot."""
    from scipy import stats as sps

    a = _positive(method_seconds, "method_seconds")
    r = _positive(reference_seconds, "reference_seconds")
    if a.size != r.size or a.size < 2:
        raise ValueError(f"need two or more paired repeats of each; got {a.size} and {r.size}")
    ratios = a / r
    mean, se, df = float(ratios.mean()), float(ratios.std(ddof=1) / np.sqrt(ratios.size)), ratios.size - 1
    half = float(sps.t.ppf(1 - (1 - LEVEL) / 2, df)) * se
    return mean, mean - half, mean + half, se, df
