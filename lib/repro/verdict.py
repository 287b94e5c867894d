"""Claim rows: the rule written before the numbers, an estimate with its interval, a decision, and its cause.

A chapter declares its claims with `plan(...)` near the top, before any number is computed: each
`Claim` carries its decision `Rule`. At the end, `judge(claim, ours, interval, ...)` applies the
rule to the estimate and its 95 % interval (or, for attack-style claims, the null band), and
`conclude(rows)` publishes the verdict table once. Every chapter's rows have the same columns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .results import publish
from .stats import Interval

DECISIONS = ("held", "not held", "inconclusive")
CAUSES = ("finding", "setup", "unknown")
COLUMNS = ("claim", "source", "paper", "ours", "ci_low", "ci_high", "test", "rule", "decision", "why")
NO_CAUSE = ("unknown", "no cause measured yet")


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
        if self.kind not in ("above", "below", "within", "in_null", "above_null"):
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
    def above_null(cls, what: str = "the attack") -> Rule:
        """Held if the estimate lies above the 95 % band of its null distribution (a real signal)."""
        return cls("above_null", text=f"held if {what} lies above the 95 % null band; not held otherwise")

    def decide(self, ours: float, ci_low: float, ci_high: float) -> str:
        """held / not held / inconclusive for an estimate and its interval (or null band)."""
        if not all(math.isfinite(v) for v in (ours, ci_low, ci_high)) or ci_low > ci_high:
            return "inconclusive"
        if self.kind == "in_null":
            return "held" if ci_low <= ours <= ci_high else "not held"
        if self.kind == "above_null":
            return "held" if ours > ci_high else "not held"
        if self.kind == "above":
            return "held" if ci_low > self.low else "not held" if ci_high < self.low else "inconclusive"
        if self.kind == "below":
            return "held" if ci_high < self.high else "not held" if ci_low > self.high else "inconclusive"
        if self.low <= ci_low and ci_high <= self.high:
            return "held"
        return "not held" if ci_high < self.low or ci_low > self.high else "inconclusive"


@dataclass(frozen=True)
class Claim:
    """One claim of the paper, as the chapter tests it: what, where, the paper's value, and the rule."""

    claim: str
    source: str
    paper: Any
    rule: Rule


def plan(claims: Sequence[Claim], show: bool = True) -> list[Claim]:
    """Publish the claims and their rules (table `claims`) before any number is computed."""
    publish(
        "claims",
        pd.DataFrame(
            [{"claim": c.claim, "source": c.source, "paper": _as_cell(c.paper), "rule": c.rule.text} for c in claims]
        ),
        show=show,
    )
    return list(claims)


def _as_cell(value: Any) -> Any:
    """A JSON-friendly table cell: numbers and strings as they are, sequences joined by ' / '."""
    if isinstance(value, (list, tuple)):
        return " / ".join(str(v) for v in value)
    return value


def _why(decision: str, why: tuple[str, str] | None) -> str:
    """The cause column: empty when held, else '<cause>: <sentence>' (unknown when none is given)."""
    if decision == "held":
        return ""
    cause, sentence = why or NO_CAUSE
    if cause not in CAUSES:
        raise ValueError(f"why: cause must be one of {', '.join(CAUSES)}, got {cause!r}")
    if not sentence.strip():
        raise ValueError("why: give one sentence naming the cause")
    return f"{cause}: {sentence.strip()}"


def unexplained(decision: str, narrowed_by: str) -> tuple[str, str]:
    """The cause of a row no ablation explains: its interval straddles the threshold (and what would narrow it), or
    nothing here isolates the cause."""
    if decision == "inconclusive":
        return ("unknown", f"the interval straddles the threshold; {narrowed_by} would narrow it")
    return ("unknown", "no ablation here isolates the cause")


def judge(
    claim: Claim,
    ours: float,
    interval: Interval | tuple[float, float],
    test: str | None = None,
    why: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """One verdict row: apply the claim's rule to `ours` and its interval (a stats.Interval or (low, high)).

    `test` names the comparison (an Interval's own method is used when omitted); `why` is
    (cause, sentence), cause one of finding / setup / unknown, used only if the claim is not held."""
    if isinstance(interval, Interval):
        low, high, test = interval.low, interval.high, test or interval.method
    else:
        low, high = interval
    if not test:
        raise ValueError(f"claim {claim.claim!r}: name the test that gave the interval")
    ours, low, high = float(ours), float(low), float(high)
    decision = claim.rule.decide(ours, low, high)
    return {
        "claim": claim.claim,
        "source": claim.source,
        "paper": _as_cell(claim.paper),
        "ours": ours,
        "ci_low": low,
        "ci_high": high,
        "test": test,
        "rule": claim.rule.text,
        "decision": decision,
        "why": _why(decision, why),
    }


def _interval_text(row: dict[str, Any]) -> str:
    """'0.912 [0.897, 0.925]' with three significant decimals."""
    return f"{row['ours']:.3g} [{row['ci_low']:.3g}, {row['ci_high']:.3g}]"


def view(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The reader's view of verdict rows: claim, paper, ours with its interval, decision, cause."""
    return pd.DataFrame(
        [
            {
                "claim": r["claim"],
                "source": r["source"],
                "paper": r["paper"],
                "ours [95 % interval]": _interval_text(r),
                "decision": r["decision"],
                "why": r["why"],
            }
            for r in rows
        ]
    )


def conclude(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Check every row has the shared columns and a legal decision, then publish table `verdict` once."""
    for row in rows:
        if missing := set(COLUMNS) - set(row):
            raise ValueError(f"verdict row {row.get('claim', row)!r} lacks {sorted(missing)}")
        if row["decision"] not in DECISIONS:
            raise ValueError(f"verdict row {row['claim']!r}: decision {row['decision']!r} is not one of {DECISIONS}")
    frame = pd.DataFrame(list(rows), columns=list(COLUMNS))
    publish("verdict", frame, view=view(rows))
    return frame
