"""Claim rows: the paper's claim, the rule written before the numbers, an estimate with its interval, a decision.

Each chapter keeps its claim register in `repro/<chapter>/claims.py`: every `Claim` quotes the paper (`quote`,
`source`), names what the paper compares with (`comparator`), carries the paper's own numbers (`paper_values`) and
the value the rule's statistic takes on them (`paper_estimate`: a test checks that every rule passes on the
paper's own numbers), and its `Regime`: the variable the effect depends on, the paper's value and ours. Claims of
our own (sanity rows, invariants) are marked `ours=True` and counted apart.

A notebook publishes its claims with `plan(...)` before any number is computed. `judge(claim, ours, interval, ...)`
applies the rule to the estimate and its 95 % interval (or, for attack-style claims, the null band); a row not held
names its cause and, for a cause other than `unknown`, the published table that measures it (`measured_by`); a
miniature-regime row that contradicts the paper is caused by the `regime` unless a sweep shows the gap does not
close; an inconclusive row says how much more data would decide it. `conclude(rows)` publishes the verdict once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .results import publish, published
from .stats import Interval

DECISIONS = ("held", "not held", "inconclusive")
CAUSES = ("finding", "setup", "regime", "unknown")
MEASURED_CAUSES = ("finding", "setup", "regime")  # each names the published table that measures it
REGIMES = ("paper", "miniature")
ORIGINS = ("paper", "ours")  # the paper's claim, or a check of our own
COLUMNS = (
    "claim",
    "source",
    "origin",
    "regime",
    "paper",
    "ours",
    "ci_low",
    "ci_high",
    "test",
    "rule",
    "decision",
    "why",
    "measured_by",
)
REGIME_TABLE = "regimes"  # published by plan(): each claim's governing variable, the paper's value and ours


def _fmt(x: float) -> str:
    """A threshold as the rule's text shows it."""
    return f"{x:g}"


@dataclass(frozen=True)
class Rule:
    """A decision rule on an interval, fixed before the numbers are computed.

    kinds: `above` / `below` a threshold, `within` a band [low, high]; `in_null` / `above_null`
    compare the estimate with a null band carried in the interval columns."""

    kind: str
    low: float = -math.inf
    high: float = math.inf
    text: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("above", "below", "within", "in_null", "above_null", "not_above_null"):
            raise ValueError(f"unknown rule kind {self.kind!r}")
        if self.low > self.high:
            raise ValueError(f"rule band is empty: [{self.low}, {self.high}]")

    @classmethod
    def above(cls, threshold: float, what: str = "the estimate") -> Rule:
        """Held if the whole interval of `what` lies above `threshold`, not held if it lies below."""
        text = f"held if the 95 % interval of {what} lies above {_fmt(threshold)}; not held if it lies below"
        return cls("above", low=threshold, text=text)

    @classmethod
    def below(cls, threshold: float, what: str = "the estimate") -> Rule:
        """Held if the whole interval of `what` lies below `threshold`, not held if it lies above."""
        text = f"held if the 95 % interval of {what} lies below {_fmt(threshold)}; not held if it lies above"
        return cls("below", high=threshold, text=text)

    @classmethod
    def within(cls, low: float, high: float, what: str = "the estimate") -> Rule:
        """Held if the interval of `what` lies inside [low, high], not held if it lies wholly outside."""
        text = (
            f"held if the 95 % interval of {what} lies inside [{_fmt(low)}, {_fmt(high)}]; "
            "not held if it lies wholly outside"
        )
        return cls("within", low=low, high=high, text=text)

    @classmethod
    def matches(cls, value: float, tolerance: float, what: str = "the estimate") -> Rule:
        """Held if `what` equals `value` within `tolerance` (a worked example, an exact recomputation)."""
        rule = cls.within(value - tolerance, value + tolerance, what)
        return cls("within", rule.low, rule.high, f"held if {what} is {_fmt(value)} ± {_fmt(tolerance)}")

    @classmethod
    def in_null(cls, what: str = "the attack") -> Rule:
        """Held if the estimate lies inside the 95 % band of its null distribution (no signal)."""
        return cls("in_null", text=f"held if {what} lies inside the 95 % null band; not held if above or below it")

    @classmethod
    def above_null(cls, what: str = "the attack", band: str = "the 95 % null band") -> Rule:
        """Held if the estimate lies above the band of its null distribution (a real signal)."""
        return cls("above_null", text=f"held if {what} lies above {band}; not held otherwise")

    @classmethod
    def not_above_null(cls, what: str = "the attack", band: str = "the upper 95 % point of its null") -> Rule:
        """One-sided 'no leak': held unless the estimate lies above the upper end of its null band (the interval's
        high end); an estimate below the null is no leak. `band` names the level (and its multiplicity correction)."""
        return cls("not_above_null", text=f"held unless {what} lies above {band}; not held if it does")

    def decide(self, ours: float, ci_low: float, ci_high: float) -> str:
        """held / not held / inconclusive for an estimate and its interval (or null band)."""
        if not all(math.isfinite(v) for v in (ours, ci_low, ci_high)) or ci_low > ci_high:
            return "inconclusive"
        if self.kind == "in_null":
            return "held" if ci_low <= ours <= ci_high else "not held"
        if self.kind == "above_null":
            return "held" if ours > ci_high else "not held"
        if self.kind == "not_above_null":
            return "not held" if ours > ci_high else "held"
        if self.kind == "above":
            return "held" if ci_low > self.low else "not held" if ci_high < self.low else "inconclusive"
        if self.kind == "below":
            return "held" if ci_high < self.high else "not held" if ci_low > self.high else "inconclusive"
        if self.low <= ci_low and ci_high <= self.high:
            return "held"
        return "not held" if ci_high < self.low or ci_low > self.high else "inconclusive"

    def threshold_gap(self, ours: float) -> float:
        """Distance from the estimate to the nearest threshold the rule decides on (NaN for null-band rules)."""
        if self.kind == "above":
            return abs(ours - self.low)
        if self.kind == "below":
            return abs(ours - self.high)
        if self.kind == "within":
            return min(abs(ours - self.low), abs(ours - self.high))
        return math.nan


@dataclass(frozen=True)
class Regime:
    """Where a claim was tested: the variable its effect depends on, the paper's value and ours.

    kind `paper`: ours is within what the claim tolerates (`tolerance` says why); `miniature` otherwise. A miniature
    row that contradicts the paper is caused by the regime unless a sweep of `variable` shows the gap does not
    close toward the paper's value (`judge(..., trend_checked=True)`)."""

    variable: str
    paper: Any
    ours: Any
    kind: str = "miniature"
    tolerance: str = ""

    def __post_init__(self) -> None:
        if self.kind not in REGIMES:
            raise ValueError(f"regime kind must be one of {', '.join(REGIMES)}, got {self.kind!r}")
        if not self.variable.strip():
            raise ValueError("name the variable the claim's effect depends on")
        if self.kind == "paper" and not self.tolerance.strip():
            raise ValueError(f"regime {self.variable!r}: say why ours counts as the paper's regime (tolerance)")

    @property
    def text(self) -> str:
        """'miniature: classes K = 5 (paper 100)'."""
        return f"{self.kind}: {self.variable} = {_as_cell(self.ours)} (paper {_as_cell(self.paper)})"


@dataclass(frozen=True)
class Claim:
    """One claim as the chapter tests it: the paper's words and numbers, what it compares with, where we test it.

    claim: one sentence; source: section / table / figure; paper: the paper's number(s) as the page shows them;
    rule: the decision rule. quote: the paper's own sentence (`paraphrase=True` when it is our wording of it);
    comparator: what the paper compares with, as the paper does; paper_values: the paper's own numbers for this
    claim; paper_estimate: the rule's statistic computed from them (a number, or (estimate, band low, band high)
    for null-band rules; None where the paper reports nothing the rule applies to); regime: where we test it.
    ours=True marks a check of our own (no quote or comparator needed), counted apart from the paper's claims."""

    claim: str
    source: str
    paper: Any
    rule: Rule
    quote: str = ""
    comparator: str = ""
    regime: Regime | None = None
    paper_values: Mapping[str, Any] = field(default_factory=dict)
    paper_estimate: float | tuple[float, float, float] | None = None
    paraphrase: bool = False
    ours: bool = False

    def __post_init__(self) -> None:
        if self.ours:
            return
        missing = [name for name in ("quote", "comparator") if not str(getattr(self, name)).strip()]
        if self.regime is None:
            missing.append("regime")
        if missing:
            raise ValueError(f"claim {self.claim!r}: the paper's claim needs {', '.join(missing)} (or ours=True)")

    @property
    def origin(self) -> str:
        """'paper' for the paper's claim, 'ours' for our own check."""
        return "ours" if self.ours else "paper"

    def on_paper_numbers(self) -> str | None:
        """The rule's decision on the paper's own numbers (None when the paper reports nothing it applies to)."""
        if self.paper_estimate is None:
            return None
        est = self.paper_estimate
        ours, low, high = est if isinstance(est, tuple) else (est, est, est)
        return self.rule.decide(float(ours), float(low), float(high))


def register_table(claims: Sequence[Claim]) -> pd.DataFrame:
    """The claim register as a table: quote, source, comparator, the paper's values, regime, rule."""
    return pd.DataFrame(
        [
            {
                "claim": c.claim,
                "origin": c.origin,
                "source": c.source,
                "quote": (f"{c.quote} (paraphrase)" if c.paraphrase else c.quote) if c.quote else "",
                "comparator": c.comparator,
                "paper": _as_cell(c.paper),
                "paper_values": "; ".join(f"{k} {_as_cell(v)}" for k, v in c.paper_values.items()),
                "regime": c.regime.text if c.regime else "",
                "rule": c.rule.text,
            }
            for c in claims
        ]
    )


def regime_table(claims: Sequence[Claim]) -> pd.DataFrame:
    """Each claim's governing variable with the paper's value and ours (table `regimes`)."""
    return pd.DataFrame(
        [
            {
                "claim": c.claim,
                "variable": c.regime.variable,
                "paper": _as_cell(c.regime.paper),
                "ours": _as_cell(c.regime.ours),
                "regime": c.regime.kind,
                "tolerance": c.regime.tolerance,
            }
            for c in claims
            if c.regime is not None
        ],
        columns=["claim", "variable", "paper", "ours", "regime", "tolerance"],
    )


def plan(claims: Sequence[Claim], show: bool = True) -> list[Claim]:
    """Publish the claims, their quotes and rules (table `claims`) and their regimes (table `regimes`) before any
    number is computed. The page shows claim, source, regime and rule; the JSON keeps the whole register."""
    table = register_table(claims)
    publish("claims", table, show=show, view=table[["claim", "source", "regime", "rule"]])
    publish(REGIME_TABLE, regime_table(claims), show=False)
    return list(claims)


def _as_cell(value: Any) -> Any:
    """A JSON-friendly table cell: numbers and strings as they are, sequences joined by ' / '."""
    if isinstance(value, (list, tuple)):
        return " / ".join(str(v) for v in value)
    return value


def unexplained(ablation: str) -> tuple[str, str]:
    """The cause of a row not held that no published table measures: unknown, and the ablation that would tell."""
    if not ablation.strip():
        raise ValueError("say which ablation, sweep or control would tell the cause")
    return ("unknown", f"no table here measures the cause; {ablation.strip()} would tell")


def narrowing(rule: Rule, ours: float, low: float, high: float, narrow_by: str) -> str:
    """What would decide an inconclusive row: how many times the sample (`narrow_by`) would shrink the interval
    clear of the rule's threshold if the estimate stayed where it is (interval width ~ 1 / sqrt(n))."""
    if not all(math.isfinite(v) for v in (ours, low, high)):
        return "the estimate or its interval is undefined here; a larger sample would define it"
    gap = rule.threshold_gap(ours)
    half = max(ours - low, high - ours)
    if not math.isfinite(gap) or gap == 0:
        return f"the estimate sits on the threshold; no amount of {narrow_by} decides it at this estimate"
    factor = (half / gap) ** 2
    amount = "over 100×" if factor > 100 else f"about {math.ceil(factor * 10) / 10:g}×"
    return f"to decide at this estimate: {amount} the {narrow_by} (the interval shrinks as 1/√n)"


def _why(claim: Claim, decision: str, why: tuple[str, str] | None, measured_by: str, trend_checked: bool) -> str:
    """The cause of a row not held, checked: a known kind, one sentence, a measuring table for measured kinds; a
    miniature row's contradiction is the regime's unless a sweep showed the gap does not close."""
    if why is None:
        raise ValueError(f"claim {claim.claim!r} is not held: give its cause (cause, sentence) and measured_by")
    cause, sentence = why
    if cause not in CAUSES:
        raise ValueError(f"why: cause must be one of {', '.join(CAUSES)}, got {cause!r}")
    if not sentence.strip():
        raise ValueError("why: give one sentence naming the cause")
    regime = claim.regime
    if regime is not None and regime.kind == "miniature" and cause in ("finding", "unknown") and not trend_checked:
        sentence = f"tested at {regime.variable} = {_as_cell(regime.ours)} (paper {_as_cell(regime.paper)}); {sentence}"
        cause, measured_by = "regime", measured_by or REGIME_TABLE
    if cause in MEASURED_CAUSES and not measured_by:
        raise ValueError(
            f"claim {claim.claim!r}: a {cause!r} cause names the published table that measures it (measured_by); "
            "without one the cause is 'unknown' and says which ablation would tell (verdict.unexplained)"
        )
    return f"{cause}: {sentence.strip()}"


def judge(
    claim: Claim,
    ours: float,
    interval: Interval | tuple[float, float],
    test: str | None = None,
    why: tuple[str, str] | None = None,
    measured_by: str = "",
    narrow_by: str = "items (and seeds, where models are trained)",
    trend_checked: bool = False,
) -> dict[str, Any]:
    """One verdict row: apply the claim's rule to `ours` and its interval (a stats.Interval or (low, high)).

    `test` names the comparison (an Interval's own method is used when omitted). For a row not held, `why` is
    (cause, sentence), cause one of finding / setup / regime / unknown, and `measured_by` the published table that
    measures a finding, setup or regime cause. A miniature row's finding or unknown becomes a regime cause unless
    `trend_checked` (a sweep of the regime variable shows the gap does not close). An inconclusive row's `why` says
    how much more `narrow_by` would decide it; a held row has none. `why` may be given for every decision: it is
    used only when the row is not held."""
    if isinstance(interval, Interval):
        low, high, test = interval.low, interval.high, test or interval.method
    else:
        low, high = interval
    if not test:
        raise ValueError(f"claim {claim.claim!r}: name the test that gave the interval")
    ours, low, high = float(ours), float(low), float(high)
    decision = claim.rule.decide(ours, low, high)
    if decision == "not held":
        cause = _why(claim, decision, why, measured_by, trend_checked)
        measured = measured_by or (REGIME_TABLE if cause.startswith("regime: ") else "")
    else:
        cause = narrowing(claim.rule, ours, low, high, narrow_by) if decision == "inconclusive" else ""
        measured = ""
    return {
        "claim": claim.claim,
        "source": claim.source,
        "origin": claim.origin,
        "regime": claim.regime.text if claim.regime else "ours: a check of our own",
        "paper": _as_cell(claim.paper),
        "ours": ours,
        "ci_low": low,
        "ci_high": high,
        "test": test,
        "rule": claim.rule.text,
        "decision": decision,
        "why": cause,
        "measured_by": measured,
    }


def is_null_row(row: dict[str, Any]) -> bool:
    """Whether a verdict row's interval columns hold a null band (an attack judged against its null), not an
    interval of the estimate."""
    return "null" in str(row.get("rule", ""))


def _interval_text(row: dict[str, Any]) -> str:
    """'0.912 [0.897, 0.925]' with three significant decimals; a null band is named as such."""
    if is_null_row(row):
        return f"{row['ours']:.3g} (null band [{row['ci_low']:.3g}, {row['ci_high']:.3g}])"
    return f"{row['ours']:.3g} [{row['ci_low']:.3g}, {row['ci_high']:.3g}]"


def view(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The reader's view of verdict rows: claim, regime, paper, ours with its interval, decision, cause."""
    return pd.DataFrame(
        [
            {
                "claim": r["claim"] + (" (our check)" if r["origin"] == "ours" else ""),
                "source": r["source"],
                "regime": r["regime"],
                "paper": r["paper"],
                "ours [95 % interval or null band]": _interval_text(r),
                "decision": r["decision"],
                "why": r["why"] + (f" (measured by: {r['measured_by']})" if r["measured_by"] else ""),
            }
            for r in rows
        ]
    )


def conclude(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Check every row has the shared columns, a legal decision and a published measuring table, then publish
    table `verdict` once."""
    for row in rows:
        if missing := set(COLUMNS) - set(row):
            raise ValueError(f"verdict row {row.get('claim', row)!r} lacks {sorted(missing)}")
        if row["decision"] not in DECISIONS:
            raise ValueError(f"verdict row {row['claim']!r}: decision {row['decision']!r} is not one of {DECISIONS}")
        if row["measured_by"] and row["measured_by"] not in published():
            raise ValueError(
                f"verdict row {row['claim']!r}: its cause is measured by table {row['measured_by']!r}, "
                "which this run has not published"
            )
    frame = pd.DataFrame(list(rows), columns=list(COLUMNS))
    publish("verdict", frame, view=view(rows))
    return frame
