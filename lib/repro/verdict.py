"""Claim rows: the paper's claim, the rule written before the numbers, an estimate with its interval, a decision.

Each chapter keeps its claim register in `repro/<chapter>/claims.py`: every `Claim` quotes the paper (`quote`,
`source`), names what the paper compares with (`comparator`), carries the paper's own numbers (`paper_values`) and
the value the rule's statistic takes on them (`paper_estimate`: a test checks that every rule passes on the
paper's own numbers), and its `Regime`: the variable the effect depends on, the paper's value and ours. Claims of
our own (sanity rows, invariants) are marked `ours=True` and counted apart.

A notebook publishes its claims with `plan(...)` before any number is computed. `judge(claim, ours, interval, ...)`
applies the rule to the estimate and its 95 % interval (or, for attack-style claims, the null band). The setup may
not decide a row: a clustered claim's test resamples its clusters (`units`); a `paper` label needs the regime's
criterion computed on the data (`check_regime`); a cause names a table that varies what it names (a sweep of the
governing variable for `regime`, an ablation for `setup` / `finding`) or is `unknown`; arms that overlap, or a
comparator below the method's fitness, make a row `untestable here`; a built-in positive control is set aside; and
a paper's 'no effect' is an equivalence test with its power shown. An inconclusive row says how much more data
would decide it. `conclude(rows)` publishes the regime checks and the verdict once.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from .results import publish, published
from .stats import Interval

DECISIONS = ("held", "not held", "inconclusive", "untestable here")
CAUSES = ("finding", "setup", "regime", "unknown")
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
    "varies",
    "statistic",
    "paper_estimate",
    "values",
    "regime_tag",
    "rule_kind",
    "rule_low",
    "rule_high",
    "follow_up",
    "paper_in_words",
)
REGIME_TABLE = "regimes"  # published by plan(): each claim's governing variable, the paper's value and ours
CHECKS_TABLE = "regime_checks"  # published by conclude(): each paper-regime criterion, computed on the data
SWEEP_POINTS = 3  # a regime cause needs a sweep of the governing variable over at least this many values
POWER_FLOOR = 0.8  # an equivalence row is held only if its test detects an effect at the margin this often
_CHECKS: dict[Any, dict[str, Any]] = {}  # this run's computed regime criteria, by regime


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
    what: str = "the estimate"  # the statistic the rule decides on, as the row names it

    def __post_init__(self) -> None:
        if self.kind not in ("above", "below", "within", "equivalent", "in_null", "above_null", "not_above_null"):
            raise ValueError(f"unknown rule kind {self.kind!r}")
        if self.low > self.high:
            raise ValueError(f"rule band is empty: [{self.low}, {self.high}]")

    @classmethod
    def above(cls, threshold: float, what: str = "the estimate") -> Rule:
        """Held if the whole interval of `what` lies above `threshold`, not held if it lies below."""
        text = f"held if the 95 % interval of {what} lies above {_fmt(threshold)}; not held if it lies below"
        return cls("above", low=threshold, text=text, what=what)

    @classmethod
    def below(cls, threshold: float, what: str = "the estimate") -> Rule:
        """Held if the whole interval of `what` lies below `threshold`, not held if it lies above."""
        text = f"held if the 95 % interval of {what} lies below {_fmt(threshold)}; not held if it lies above"
        return cls("below", high=threshold, text=text, what=what)

    @classmethod
    def within(cls, low: float, high: float, what: str = "the estimate") -> Rule:
        """Held if the interval of `what` lies inside [low, high], not held if it lies wholly outside."""
        text = (
            f"held if the 95 % interval of {what} lies inside [{_fmt(low)}, {_fmt(high)}]; "
            "not held if it lies wholly outside"
        )
        return cls("within", low=low, high=high, text=text, what=what)

    @classmethod
    def matches(cls, value: float, tolerance: float, what: str = "the estimate") -> Rule:
        """Held if `what` equals `value` within `tolerance` (a worked example, an exact recomputation)."""
        rule = cls.within(value - tolerance, value + tolerance, what)
        return cls("within", rule.low, rule.high, f"held if {what} is {_fmt(value)} ± {_fmt(tolerance)}", what)

    @classmethod
    def equivalent(cls, low: float, high: float, what: str = "the effect") -> Rule:
        """'No effect' as an equivalence test: held only if the whole interval of `what` lies inside the margin
        [low, high] stated before the numbers, not held if it lies wholly outside; judge() then needs the power of
        the test at the margin (stats.simulated_power, at an effect fixed in advance)."""
        text = (
            f"no effect: held if the 95 % interval of {what} lies inside the margin [{_fmt(low)}, {_fmt(high)}]; "
            "not held if it lies wholly outside"
        )
        return cls("equivalent", low=low, high=high, text=text, what=what)

    @classmethod
    def at_most(cls, high: float, what: str = "the effect") -> Rule:
        """A one-sided 'no effect' (an equivalence test against one side only): held only if the 95 % interval of
        `what` ends below the margin `high` stated before the numbers, not held if it lies wholly above it. For an
        effect with one harmful direction (a leak, a membership advantage): an estimate below chance is no effect, so
        it counts for the claim, not against it. judge() needs the power at the margin, as for `equivalent`."""
        text = (
            f"no effect (one-sided): held if the 95 % interval of {what} ends below the margin {_fmt(high)}; "
            "not held if it lies wholly above it"
        )
        return cls("equivalent", high=high, text=text, what=what)

    @classmethod
    def in_null(cls, what: str = "the attack") -> Rule:
        """Held if the estimate lies inside the 95 % band of its null distribution (no signal)."""
        text = f"held if {what} lies inside the 95 % null band; not held if above or below it"
        return cls("in_null", text=text, what=what)

    @classmethod
    def above_null(cls, what: str = "the attack", band: str = "the 95 % null band") -> Rule:
        """Held if the estimate lies above the band of its null distribution (a real signal)."""
        return cls("above_null", text=f"held if {what} lies above {band}; not held otherwise", what=what)

    @classmethod
    def not_above_null(cls, what: str = "the attack", band: str = "the upper 95 % point of its null") -> Rule:
        """One-sided 'no leak': held unless the estimate lies above the upper end of its null band (the interval's
        high end); an estimate below the null is no leak. `band` names the level (and its multiplicity correction)."""
        return cls("not_above_null", text=f"held unless {what} lies above {band}; not held if it does", what=what)

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

    @property
    def fails_to_reject(self) -> bool:
        """Whether the rule holds a 'no effect' by failing to reject a null (which any weak attack passes)."""
        return self.kind in ("in_null", "not_above_null")

    def threshold_gap(self, ours: float) -> float:
        """Distance from the estimate to the nearest threshold the rule decides on (NaN for null-band rules)."""
        if self.kind == "above":
            return abs(ours - self.low)
        if self.kind == "below":
            return abs(ours - self.high)
        if self.kind in ("within", "equivalent"):
            return min(abs(ours - self.low), abs(ours - self.high))
        return math.nan


@dataclass(frozen=True)
class Criterion:
    """What makes a setting the paper's, written in the register before any number: the governing variable within
    the paper's range and the setting's defining property (model accuracy, OOD nearness, contaminant share ...),
    measured on the data, within the paper's range. The run computes both (check_regime) and publishes them."""

    variable_range: tuple[float, float]
    prop: str
    prop_range: tuple[float, float]
    lacking: str = ""  # a word for a setting whose defining property fails ("far"), shown in the row's regime tag

    def __post_init__(self) -> None:
        for name, (low, high) in (("variable_range", self.variable_range), ("prop_range", self.prop_range)):
            if not low <= high:
                raise ValueError(f"criterion {name} is empty: [{low}, {high}]")
        if not self.prop.strip():
            raise ValueError("name the setting's defining property that the criterion measures")
        if not all(math.isfinite(v) for v in self.prop_range):
            raise ValueError("the defining property's range must be bounded: a criterion that always passes is none")

    def passes(self, variable: float, prop: float) -> bool:
        """Whether both computed values lie in their ranges (NaN never does)."""
        (a, b), (c, d) = self.variable_range, self.prop_range
        return bool(a <= variable <= b and c <= prop <= d)

    @property
    def text(self) -> str:
        """'variable in [50, 150] and median OOD-class CLP in [-1, 0]'."""
        (a, b), (c, d) = self.variable_range, self.prop_range
        return f"variable in [{_fmt(a)}, {_fmt(b)}] and {self.prop} in [{_fmt(c)}, {_fmt(d)}]"


@dataclass(frozen=True)
class Regime:
    """Where a claim was tested: the variable its effect depends on, the paper's value and ours.

    kind `paper` is a claim to be tested by `criterion`, written before the numbers: a row is labelled `paper` only
    when the run computed the criterion on the data (check_regime) and it passed; otherwise the row is `miniature`,
    and says why. A regime never explains a contradiction by itself: a `regime` cause needs a sweep of `variable`
    (judge's `sweep`)."""

    variable: str
    paper: Any
    ours: Any
    kind: str = "miniature"
    tolerance: str = ""
    criterion: Criterion | None = None
    tag: str = ""  # the variable's short name for the row's regime tag ("K" gives "miniature: K 60 vs 150")

    def __post_init__(self) -> None:
        if self.kind not in REGIMES:
            raise ValueError(f"regime kind must be one of {', '.join(REGIMES)}, got {self.kind!r}")
        if not self.variable.strip():
            raise ValueError("name the variable the claim's effect depends on")
        if self.kind == "paper" and not self.tolerance.strip():
            raise ValueError(f"regime {self.variable!r}: say why ours counts as the paper's regime (tolerance)")
        if self.kind == "paper" and self.criterion is None:
            raise ValueError(
                f"regime {self.variable!r}: a paper regime needs its criterion, written before the numbers"
            )

    @property
    def text(self) -> str:
        """'miniature: classes K = 5 (paper 100)'."""
        return f"{self.kind}: {self.variable} = {_as_cell(self.ours)} (paper {_as_cell(self.paper)})"

    def short(self, kind: str) -> str:
        """The row's regime tag: `kind`, with the variable's value against the paper's when both are short, and the
        criterion's word for the setting (`lacking`, "far") where this run computed its defining property outside
        the paper's range."""
        name = self.tag or (self.variable if len(self.variable.split()) <= 2 else "")
        ours, paper = str(_as_cell(self.ours)), str(_as_cell(self.paper))
        check = _CHECKS.get(repr(self)) if self.criterion is not None and self.criterion.lacking else None
        if check is not None:
            low, high = self.criterion.prop_range
            kind = kind if low <= check["prop"] <= high else f"{kind}, {self.criterion.lacking}"
        if name and len(ours) <= 14 and len(paper) <= 14:
            return f"{kind}: {name} {ours} vs {paper}"
        return kind

    def computed(self) -> tuple[str, str]:
        """(kind, text) as this run's computed criterion decides: `paper` only when its check passed."""
        if self.kind != "paper":
            return self.kind, self.text
        check = _CHECKS.get(repr(self))
        body = self.text.split(": ", 1)[1]
        if check is None:
            return "miniature", f"miniature: {body}; the paper-regime criterion was not computed"
        if not check["passes"]:
            return "miniature", (
                f"miniature: {body}; criterion failed ({self.variable} = {check['value']:.4g}, needs {check['range']}; "
                f"{self.criterion.prop} = {check['prop']:.3g}, needs {check['prop_range']})"
            )
        return "paper", self.text


def check_regime(regime: Regime, variable: float, prop: float) -> bool:
    """Compute a paper regime's criterion on this run's data: the governing variable's value and the defining
    property's; recorded for the rows that use the regime and published as table `regime_checks` by conclude()."""
    if regime.criterion is None:
        raise ValueError(f"regime {regime.variable!r} has no criterion to check (only paper regimes have one)")
    if isinstance(regime.ours, (int, float)) and not math.isclose(float(variable), float(regime.ours), rel_tol=1e-9):
        raise ValueError(f"regime {regime.variable!r}: the checked variable {variable} is not ours ({regime.ours})")
    passes = regime.criterion.passes(float(variable), float(prop))
    earlier = _CHECKS.get(repr(regime))
    if earlier is not None and not earlier["passes"]:  # a regime checked twice passes only if every check passed
        return False
    _CHECKS[repr(regime)] = {
        "planned": regime.text,
        "label": "paper" if passes else "miniature",
        "variable": regime.variable,
        "value": float(variable),
        "range": f"[{_fmt(regime.criterion.variable_range[0])}, {_fmt(regime.criterion.variable_range[1])}]",
        "property": regime.criterion.prop,
        "prop": float(prop),
        "prop_range": f"[{_fmt(regime.criterion.prop_range[0])}, {_fmt(regime.criterion.prop_range[1])}]",
        "passes": passes,
    }
    return passes


def forget_checks() -> None:
    """Start a run's computed regime criteria afresh (repro.start)."""
    _CHECKS.clear()


def checks_table() -> pd.DataFrame:
    """This run's computed regime criteria (table `regime_checks`): the regime the register planned, the label the
    rows carry (paper only where the criterion passes), the variable and property computed with their ranges."""
    columns = ["planned", "label", "variable", "value", "range", "property", "prop", "prop_range", "passes"]
    return pd.DataFrame(list(_CHECKS.values()), columns=columns)


@dataclass(frozen=True)
class Claim:
    """One claim as the chapter tests it: the paper's words and numbers, what it compares with, where we test it.

    claim: one sentence; source: section / table / figure; paper: the paper's number(s) as the page shows them;
    rule: the decision rule. quote: the paper's own sentence (`paraphrase=True` when it is our wording of it);
    comparator: what the paper compares with, as the paper does; paper_values: the paper's own numbers for this
    claim; paper_estimate: the rule's statistic computed from them (a number, or (estimate, band low, band high)
    for null-band rules; None where the paper reports nothing the rule applies to); regime: where we test it.
    ours=True marks a check of our own (no quote or comparator needed), counted apart from the paper's claims.
    follow_up: the later paper a claim comes from ("Weiss & Tonella 2022"), for a claim the chapter tests beside the
    paper's own: counted apart from the paper's claims on the page.

    What the interval resamples and what makes the comparison decidable, declared before the numbers:
    units: the sampling unit the items are clustered in ("tasks", "articles", "source images", "sets", "dialogues"),
    "items" where the items are independent, "none" for an exact recomputation; a clustered row's test must name
    it. overlap_max: for a comparison of two arms, the share of shared selections (shared picks, shared top k,
    top k decided by ties) above which no amount of data separates them (the row is `untestable here`).
    fitness: each arm's fitness measure (accuracy, validation loss), higher better, and fitness_margin: how far below
    the method's the comparator's may be before the row is refused (`untestable here`). control: a positive control
    built into the setup (a noise domain, a leak every arm catches); the row is decided at the point without it.
    measures: each table that may measure the cause of a row not held, and the column of it that varies what the
    cause names (an ablation's arm, a sweep's governing variable): judge reads the column from here, not the caller.
    statistic: the one quantity the row's paper and ours columns show, in words and units ("AUROC(RMD) − AUROC(MD)",
    "exposure (bits)"); the rule's `what` when omitted. paper_context: the paper's numbers come from another
    benchmark than the row's (another dataset, another model): the register checks the rule on them, but the row is
    not compared with them (no paper value on its row or in the forest plot; its `paper` cell says so).
    paper_in_words: the paper gives no number for the claim, only words or a plot ("close to 0"), which
    `paper_values` read as one: the register checks the rule on that reading, but the row does not draw it as the
    paper's value (no diamond in the forest plot, not on the front page's scatter); its `paper` cell gives the words."""

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
    units: str = ""
    overlap_max: float | None = None
    fitness: str = ""
    fitness_margin: float | None = None
    control: str = ""
    measures: Mapping[str, str] = field(default_factory=dict)
    statistic: str = ""
    paper_context: bool = False
    paper_in_words: bool = False
    follow_up: str = ""

    def __post_init__(self) -> None:
        if self.overlap_max is not None and not 0 < self.overlap_max <= 1:
            raise ValueError(f"claim {self.claim!r}: overlap_max is a share in (0, 1], got {self.overlap_max}")
        if bool(self.fitness.strip()) != (self.fitness_margin is not None):
            raise ValueError(f"claim {self.claim!r}: give the arms' fitness measure and its margin together")
        if self.ours:
            return
        missing = [name for name in ("quote", "comparator", "units") if not str(getattr(self, name)).strip()]
        if self.regime is None:
            missing.append("regime")
        if missing:
            raise ValueError(f"claim {self.claim!r}: the paper's claim needs {', '.join(missing)} (or ours=True)")

    @property
    def origin(self) -> str:
        """'paper' for the paper's claim, 'ours' for our own check."""
        return "ours" if self.ours else "paper"

    @property
    def stat(self) -> str:
        """The statistic both the paper and ours columns show, in words and units: `statistic`, else the rule's."""
        return self.statistic.strip() or self.rule.what

    @property
    def paper_number(self) -> float | None:
        """The statistic on the paper's own numbers (a null-band claim's estimate), or None: no number."""
        est = self.paper_estimate
        if est is None:
            return None
        return float(est[0] if isinstance(est, tuple) else est)

    def on_paper_numbers(self) -> str | None:
        """The rule's decision on the paper's own numbers (None when the paper reports nothing it applies to)."""
        if self.paper_estimate is None:
            return None
        est = self.paper_estimate
        ours, low, high = est if isinstance(est, tuple) else (est, est, est)
        return self.rule.decide(float(ours), float(low), float(high))


def with_measures(claims: Mapping[str, Claim], measures: Mapping[str, str]) -> dict[str, Claim]:
    """The chapter's claims, each told which column of each measuring table varies what a cause names."""
    return {key: replace(c, measures={**measures, **c.measures}) for key, c in claims.items()}


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
                "criterion": c.regime.criterion.text if c.regime and c.regime.criterion else "",
                "units": c.units,
                "overlap_max": c.overlap_max,
                "fitness": f"{c.fitness} (margin {_fmt(c.fitness_margin)})" if c.fitness else "",
                "control": c.control,
                "measures": "; ".join(f"{t}: {col}" for t, col in c.measures.items()),
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
                # planned before any number: a `paper` claim is labelled so on its row only if its criterion passes
                "regime": "paper if its criterion passes (table regime_checks)"
                if c.regime.kind == "paper"
                else c.regime.kind,
                "tolerance": c.regime.tolerance,
            }
            for c in claims
            if c.regime is not None
        ],
        columns=["claim", "variable", "paper", "ours", "regime", "tolerance"],
    )


def plan(claims: Sequence[Claim], show: bool = True, view: pd.DataFrame | None = None) -> list[Claim]:
    """Publish the claims, their quotes and rules (table `claims`) and their regimes (table `regimes`) before any
    number is computed. The page shows claim, source, regime and rule (or `view`, e.g. one row per claim repeated
    over several settings); the JSON keeps the whole register."""
    table = register_table(claims)
    publish("claims", table, show=show, view=table[["claim", "source", "regime", "rule"]] if view is None else view)
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
    clear of the rule's threshold if the estimate stayed where it is (interval width ~ 1 / sqrt(n)). The side of the
    interval that crosses the threshold is the one that must shrink: its upper part for an estimate below the
    threshold, its lower part above (the two differ for a skewed interval, such as an inverted null band)."""
    if not all(math.isfinite(v) for v in (ours, low, high)):
        return "the estimate or its interval is undefined here; a larger sample would define it"
    gap = rule.threshold_gap(ours)
    nearest = min((t for t in (rule.low, rule.high) if math.isfinite(t)), key=lambda t: abs(ours - t), default=ours)
    half = high - ours if ours < nearest else ours - low
    if not math.isfinite(gap) or gap == 0:
        return f"the estimate sits on the threshold; no amount of {narrow_by} decides it at this estimate"
    factor = (half / gap) ** 2
    amount = "over 100×" if factor > 100 else f"about {math.ceil(factor * 10) / 10:g}×"
    side = rule.decide(ours, ours, ours)  # the decision more data would reach if the estimate stayed put
    out = f"to decide at this estimate ({side}): {amount} the {narrow_by} (the interval shrinks as 1/√n)"
    if factor > 100:  # no reachable sample decides it: say what the interval already bounds
        out += f"; what the data do say: the statistic lies between {low:.3g} and {high:.3g}"
    return out


@dataclass(frozen=True)
class Sweep:
    """A published sweep of a regime's governing variable: `table`, the `column` that varies it, the `variable` as
    the register names it, and `trend`: how the gap to the paper's value moves along the sweep, signed so that a
    positive trend moves toward the paper's value, with an interval that includes the test rows' noise (not only
    the fits' spread)."""

    table: str
    column: str
    variable: str
    trend: Interval


def _at(claim: Claim) -> tuple[str, str]:
    """(the regime's variable, 'tested at <variable> = ours (paper ...)')."""
    regime = claim.regime
    if regime is None:
        return "the governing variable", "tested in our setting"
    return regime.variable, f"tested at {regime.variable} = {_as_cell(regime.ours)} (paper {_as_cell(regime.paper)})"


def _why(claim: Claim, why: tuple[str, str] | None, measured_by: str, sweep: Sweep | None) -> tuple[str, str, str]:
    """(cause text, measuring table, the column it varies) of a row not held, checked: a known kind, one sentence; a
    `regime` cause needs a sweep of the regime's variable that moves toward the paper's value (else it is
    `unknown`, saying which sweep would tell); `finding` and `setup` need the ablation or control table and the
    column of it that varies what the cause names."""
    if why is None:
        raise ValueError(f"claim {claim.claim!r} is not held: give its cause (cause, sentence) and measured_by")
    cause, sentence = why
    if cause not in CAUSES:
        raise ValueError(f"why: cause must be one of {', '.join(CAUSES)}, got {cause!r}")
    if not sentence.strip():
        raise ValueError("why: give one sentence naming the cause")
    if cause == "regime":
        variable, at = _at(claim)
        if claim.regime is not None and claim.regime.computed()[0] == "paper":
            return f"unknown: {at}, the paper's regime by its criterion, so the regime does not explain it", "", ""
        if sweep is None or sweep.variable != variable:
            return f"unknown: {at}; a sweep of {variable} would tell", "", ""
        if not sweep.trend.low > 0:
            t = sweep.trend
            return (
                f"unknown: {at}; the sweep of {variable} does not move toward the paper's value "
                f"(trend {t.estimate:.3g} [{t.low:.3g}, {t.high:.3g}])",
                sweep.table,
                sweep.column,
            )
        if claim.measures.get(sweep.table) != sweep.column:
            raise ValueError(
                f"claim {claim.claim!r}: the register does not say that column {sweep.column!r} of table "
                f"{sweep.table!r} varies {variable} (Claim.measures)"
            )
        return f"regime: {sentence.strip()}", sweep.table, sweep.column
    if cause == "unknown":
        return f"unknown: {sentence.strip()}", "", ""
    if not measured_by:
        raise ValueError(
            f"claim {claim.claim!r}: a {cause!r} cause names the published table that measures it (measured_by); "
            "without one the cause is 'unknown' and says which ablation would tell (verdict.unexplained)"
        )
    if measured_by not in claim.measures:
        raise ValueError(
            f"claim {claim.claim!r}: the register does not say which column of table {measured_by!r} varies what "
            "the cause names (Claim.measures); without one the cause is 'unknown' (verdict.unexplained)"
        )
    return f"{cause}: {sentence.strip()}", measured_by, claim.measures[measured_by]


def _check_units(claim: Claim, test: str) -> None:
    """A clustered claim's test names its clusters (as a word: 'sets' is not found in 'datasets')."""
    units = claim.units.strip()
    if units and units not in ("items", "none") and not re.search(rf"\b{re.escape(units)}\b", test, re.I):
        raise ValueError(f"claim {claim.claim!r}: its items are clustered in {units}; the test must resample them")


def _untestable(
    claim: Claim, overlap: tuple[float, str] | None, fitness: tuple[float, float] | None
) -> tuple[str, str] | None:
    """(why, measuring table) when the setup alone decides a comparison: arms that overlap above the register's
    threshold, or a comparator below the method's fitness by more than the register's margin."""
    if claim.overlap_max is not None:
        if overlap is None:
            raise ValueError(f"claim {claim.claim!r}: give the arms' overlap (share, table) its register bounds")
        share, table = overlap
        if not math.isfinite(share):
            raise ValueError(f"claim {claim.claim!r}: the arms' overlap was not computed ({share})")
        if share > claim.overlap_max:
            return (
                f"the arms share {share:.1%} of their selections (register's limit {claim.overlap_max:.0%}): "
                "no amount of data separates them",
                table,
            )
    if claim.fitness:
        if fitness is None:
            raise ValueError(f"claim {claim.claim!r}: give (method's, comparator's) {claim.fitness}")
        method, comparator = (float(v) for v in fitness)
        if not comparator >= method - claim.fitness_margin:
            return (
                f"refused: the comparator is under-trained ({claim.fitness} {comparator:.3g} against the method's "
                f"{method:.3g}, margin {_fmt(claim.fitness_margin)}); train it to the same standard",
                "",
            )
    return None


MC_SES = 2.0  # Monte Carlo standard errors a bound may move before a decision counts as robust to the resampling


def monte_carlo_fragile(rule: Rule, ours: float, low: float, high: float, resamples: int) -> bool:
    """Whether moving both bounds by MC_SES Monte Carlo standard errors changes the rule's decision. A bootstrap
    interval's half-width h rests on a variance estimated from `resamples` draws, whose relative standard error is
    about 1/sqrt(2 (B - 1)), so each bound is uncertain by about h / sqrt(2 (B - 1))."""
    if not (math.isfinite(low) and math.isfinite(high)) or low == high or resamples < 2:
        return False
    shift = MC_SES * (high - low) / 2 / math.sqrt(2 * (resamples - 1))
    wider = rule.decide(ours, low - shift, high + shift)
    narrower = rule.decide(ours, low + shift, high - shift)
    return wider != narrower


def judge(
    claim: Claim,
    ours: float,
    interval: Interval | tuple[float, float],
    test: str | None = None,
    why: tuple[str, str] | None = None,
    measured_by: str = "",
    narrow_by: str = "items (and seeds, where models are trained)",
    *,
    sweep: Sweep | None = None,
    overlap: tuple[float, str] | None = None,
    fitness: tuple[float, float] | None = None,
    without_control: tuple[float, Interval | tuple[float, float]] | None = None,
    power: tuple[float, str] | None = None,
    values: str = "",
    resamples: int | None = None,
    forced: str | None = None,
    untuned: str | None = None,
) -> dict[str, Any]:
    """One verdict row: apply the claim's rule to `ours` and its interval (a stats.Interval or (low, high)).

    `test` names the comparison (an Interval's own method is used when omitted); for a clustered claim it names the
    register's units. For a row not held, `why` is (cause, sentence), cause one of finding / setup / regime /
    unknown: a finding or setup cause names `measured_by` (an ablation or control table; the register's `measures`
    says which column of it varies what the cause names); a regime cause needs `sweep` (a sweep of the regime's variable moving toward the
    paper's value), else it becomes `unknown` and says which sweep would tell. An inconclusive row says how much more
    `narrow_by` would decide it. Comparisons: `overlap` (share of shared selections, the table publishing it) and
    `fitness` ((method's, comparator's) fitness) as the register asks; a claim with a built-in positive control is
    decided at the point `without_control` ((estimate, interval) there). An equivalence rule needs `power` ((the
    test's power at the margin, the effect it was simulated at)); an above-null rule that fails at a test whose
    `power` at an effect fixed in advance is below POWER_FLOOR is inconclusive, not 'not held'. A paper's 'no effect' is never held by failing to
    reject a null. `values`: for an exact recomputation of several printed numbers decided on their largest gap, our
    numbers as the paper prints them ("0.50 / 0.64 / 0.84"); the page shows them beside the paper's, not the gap.
    `resamples`: the bootstrap resamples behind the interval; a decision that a Monte Carlo error of the bounds
    could flip (monte_carlo_fragile) is then inconclusive. `forced`: why the rule could not have come out otherwise
    on this setup (a bound the statistic cannot cross, shown by arithmetic): the row is then `untestable here`.
    `untuned`: how an arm of the comparison was left untuned where the other was tuned (the arms are not trained to
    the same standard): the row is then `untestable here` and says what tuning it needs."""
    if isinstance(interval, Interval):
        low, high, test = interval.low, interval.high, test or interval.method
    else:
        low, high = interval
    if not test:
        raise ValueError(f"claim {claim.claim!r}: name the test that gave the interval")
    note = ""
    if claim.control:
        if without_control is None or not isinstance(without_control[1], Interval):
            raise ValueError(
                f"claim {claim.claim!r}: built-in control ({claim.control}): give the point without it, "
                "(estimate, stats.Interval)"
            )
        with_decision = claim.rule.decide(float(ours), float(low), float(high))
        note = f"decided without {claim.control}; with it: {with_decision}, {float(ours):.3g} [{low:.3g}, {high:.3g}]"
        ours, iv = without_control
        low, high, test = iv.low, iv.high, iv.method  # the deciding interval's own test
    _check_units(claim, test)
    if claim.rule.kind == "equivalent" and power is None:
        raise ValueError(f"claim {claim.claim!r}: an equivalence row shows its power at the margin (power)")
    if power is not None:
        test = f"{test}; power {power[0]:.0%} at {power[1]}"
    ours, low, high = float(ours), float(low), float(high)
    decision = claim.rule.decide(ours, low, high)
    measured, column = "", ""
    blocked = _untestable(claim, overlap, fitness)
    if forced:
        decision, cause = "untestable here", f"the setup decides: {forced}"
    elif untuned:
        decision, cause = "untestable here", f"refused: an arm is untuned ({untuned}); tune it to the same standard"
    elif blocked is not None:
        decision, (cause, measured) = "untestable here", blocked
    elif decision == "held" and claim.rule.kind == "equivalent" and not power[0] >= POWER_FLOOR:
        decision = "inconclusive"
        cause = (
            f"the test's power is {power[0]:.0%}, below {POWER_FLOOR:.0%}: a narrow interval from a weak "
            "test does not show no effect"
        )
    elif decision == "not held" and claim.rule.kind == "above_null" and power and not power[0] >= POWER_FLOOR:
        decision = "inconclusive"
        cause = (
            f"the test's power is {power[0]:.0%} at {power[1]}, below {POWER_FLOOR:.0%}: the estimate is not above "
            "its null, but a weak test that fails to reject does not show the effect absent"
        )
    elif decision == "held" and claim.rule.fails_to_reject and not claim.ours:
        decision = "inconclusive"
        cause = (
            "failing to reject a null does not show no effect: an equivalence test with a margin stated before the "
            "numbers and its power shown would"
        )
    elif (
        resamples is not None
        and decision in ("held", "not held")
        and monte_carlo_fragile(claim.rule, ours, low, high, resamples)
    ):
        cause = (
            f"to decide: more resamples ({decision} at these {resamples:,}, but a bound lies within Monte Carlo error "
            "of the rule's threshold, so another draw of the resamples could flip it)"
        )
        decision = "inconclusive"
    elif decision == "not held":
        cause, measured, column = _why(claim, why, measured_by, sweep)
    else:
        cause = narrowing(claim.rule, ours, low, high, narrow_by) if decision == "inconclusive" else ""
    if note:
        cause = f"{cause}; {note}" if cause else note
    kind, regime_text = claim.regime.computed() if claim.regime else ("ours", "ours: a check of our own")
    if values and low != high:
        raise ValueError(f"claim {claim.claim!r}: values are shown only for an exact recomputation (no interval)")
    return {
        "claim": claim.claim,
        "source": claim.source,
        "origin": claim.origin,
        "regime": regime_text,
        "paper": _as_cell(claim.paper),
        "ours": ours,
        "ci_low": low,
        "ci_high": high,
        "test": test,
        "rule": claim.rule.text,
        "decision": decision,
        "why": cause,
        "measured_by": measured,
        "varies": column,
        "statistic": claim.stat,
        "paper_estimate": None if claim.paper_context or claim.paper_in_words else claim.paper_number,
        "values": values,
        "regime_tag": claim.regime.short(kind) if claim.regime else "our check",
        "rule_kind": claim.rule.kind,
        "rule_low": claim.rule.low if math.isfinite(claim.rule.low) else None,
        "rule_high": claim.rule.high if math.isfinite(claim.rule.high) else None,
        "follow_up": claim.follow_up,
        "paper_in_words": claim.paper_in_words,
    }


def is_null_row(row: Mapping[str, Any]) -> bool:
    """Whether a verdict row's interval columns hold a null band (an attack judged against its null), not an
    interval of the estimate."""
    return str(row.get("rule_kind") or "").endswith("null") or "null" in str(row.get("rule", ""))


def _number(value: Any, digits: int = 3) -> str:
    """A number as the verdict rows print it (three significant digits, whole numbers from 100, a power of ten below 10^-4),
    anything else as text."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return str(value)
    v = float(value)
    if not math.isfinite(v):
        return "undefined"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if v == 0 or abs(v) >= 1e-4:
        return f"{v:.{digits}g}"
    mantissa, exponent = f"{v:.1e}".split("e")
    return f"{mantissa} × 10^{int(exponent)}"


def ours_text(row: Mapping[str, Any]) -> str:
    """Ours in the row's statistic: '0.155 [0.112, 0.197]', a null row's band named as such, an exact value alone."""
    if row.get("values"):
        return str(row["values"])
    ours, low, high = (row.get(k) for k in ("ours", "ci_low", "ci_high"))
    if low is None or high is None or (isinstance(low, float) and math.isnan(low)):
        return f"{_number(ours)} (no interval)"
    if is_null_row(row):
        return f"{_number(ours)} (null band {_number(low)} to {_number(high)})"
    if low == high:
        return f"{_number(ours, 4)} (exact)"
    return f"{_number(ours)} [{_number(low)}, {_number(high)}]"


def paper_text(row: Mapping[str, Any]) -> str:
    """The paper's column in the row's statistic: the statistic on the paper's numbers, its printed values for an
    exact recomputation of several, the paper's words where it gives only words ("≈ 0 (in words)"); else 'not
    reported' on our own check (the paper states nothing it applies to) and 'no number' on a paper claim whose text
    gives no number the statistic applies to."""
    if row.get("values"):
        return str(row["paper"])
    estimate = row.get("paper_estimate")
    exact = row.get("ci_low") is not None and row.get("ci_low") == row.get("ci_high")
    if row.get("paper_in_words"):
        return f"{row['paper']} (in words)"
    if estimate is None:
        return "not reported" if row.get("origin") == "ours" else "no number"
    return _number(estimate, 4 if exact else 3)


def _cause(row: Mapping[str, Any]) -> str:
    """What the row shows of its `why` at a glance: a cause's first clause (not held, untestable), how much more of
    what would decide it (inconclusive), a caveat's first clause where a chapter gave a held row one, else nothing;
    cut at a word within SHORT_WHY characters (_cut), the whole text behind the row's disclosure."""
    why = str(row.get("why") or "")
    if row["decision"] == "held":
        return _cut(why.partition("; ")[0]) if why else ""
    more = (
        re.search(r"(about [\d.]+×|over 100×) the (.+?) \(the interval", why)
        if row["decision"] == "inconclusive"
        else None
    )
    if more:  # the thing to multiply, without its parenthesis (the whole text is behind the disclosure)
        if more.group(1) == "over 100×":  # out of reach: the bounds the interval gives come first
            return _cut(f"between {row['ci_low']:.3g} and {row['ci_high']:.3g}; over 100× the data to decide")
        side = re.search(r"at this estimate \(([a-z ]+)\)", why)
        toward = f" ({side.group(1)})" if side else ""
        return _cut(f"to decide{toward}: {more.group(1)} the {more.group(2).split(' (')[0]}")
    return _cut(why.partition("; ")[0])


SHORT_WHY = 80  # characters of a row's cause at a glance


def _cut(text: str, limit: int = SHORT_WHY) -> str:
    """`text` whole when it fits in `limit` characters, else its words that fit, an ellipsis and '(more)': the whole
    text is behind the row's disclosure."""
    if len(text) <= limit:
        return text
    return text[: limit - 8].rsplit(" ", 1)[0].rstrip(",;:") + "… (more)"


def by_statistic(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[tuple[int, Mapping[str, Any]]]]:
    """Rows numbered from 1 in their order, grouped by the statistic they are judged on (first-seen order): the
    verdict table's headers and the verdict figure's panels."""
    groups: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}
    for i, row in enumerate(rows, 1):
        groups.setdefault(str(row.get("statistic") or "the estimate"), []).append((i, row))
    return groups


def rows_html(rows: Sequence[Mapping[str, Any]], link: str = "") -> str:
    """Verdict rows as a compact table a reader scans, grouped under the statistic they are judged on (as the panels
    of the verdict figure): the row's number (as in the figure), the claim with its cause at a glance, the paper's
    value and ours in that statistic, the decision as a coloured badge with the regime as a short tag; source, rule,
    test and the full regime and cause sit behind a disclosure. `link`: the page the measuring tables are on (their
    anchors are `table-<name>`)."""
    import html

    esc = html.escape
    body = []
    for stat, items in by_statistic(rows).items():
        body.append(f'<tr class="repro-group"><td colspan="5">{esc(stat)}</td></tr>')
        for i, row in items:
            decision = str(row["decision"])
            mine = ' <span class="repro-tag">our check</span>' if row.get("origin") == "ours" else ""
            measured = row.get("measured_by") or ""
            table = (
                f' (table <a href="{link}#table-{esc(measured)}"><code>{esc(measured)}</code></a>)' if measured else ""
            )
            cause = _cause(row)
            cause = f'<div class="repro-why">{esc(cause)}{table}</div>' if cause else ""
            more = [
                ("source", row.get("source", "")),
                ("regime", row.get("regime", "")),
                ("rule", row.get("rule", "")),
                ("test", row.get("test", "")),
                ("why", row.get("why", "")),
            ]
            details = "".join(f"<div><b>{k}</b>: {esc(str(v))}</div>" for k, v in more if str(v).strip())
            tag = str(row.get("regime_tag") or row.get("regime", "")).split(";")[0]
            body.append(
                "<tr>"
                f'<td class="repro-n">{i}</td>'
                f'<td class="repro-claim">{esc(str(row["claim"]))}{mine} '
                f"<details><summary>more</summary>{details}</details>{cause}</td>"
                f"<td>{esc(paper_text(row))}</td>"
                f"<td>{esc(ours_text(row))}</td>"
                f'<td><span class="repro-badge repro-{decision.replace(" ", "-")}">{esc(decision)}</span>'
                f'<div class="repro-regime">{esc(tag)}</div></td>'
                "</tr>"
            )
    return (
        '<table class="repro-table repro-verdict"><thead><tr><th>#</th><th>claim (under the statistic it is judged on)'
        "</th><th>paper</th><th>ours [95 % interval]</th><th>decision, regime</th></tr></thead>\n<tbody>\n"
        + "\n".join(body)
        + "\n</tbody></table>"
    )


def view(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The verdict rows as a plain table (a terminal's view): claim, statistic, paper, ours, decision, regime tag."""
    return pd.DataFrame(
        [
            {
                "claim": r["claim"] + (" (our check)" if r["origin"] == "ours" else ""),
                "statistic": r.get("statistic", ""),
                "paper": paper_text(r),
                "ours": ours_text(r),
                "decision": r["decision"],
                "regime": r.get("regime_tag", r["regime"]),
            }
            for r in rows
        ]
    )


def conclude(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Check every row has the shared columns, a legal decision, a published measuring table that varies what the
    cause names (a regime cause's sweep over at least SWEEP_POINTS values) and a `paper` label its computed criterion
    passed; publish table `regime_checks` and then table `verdict` once."""
    from .results import distinct_values

    passed = {c["planned"] for c in _CHECKS.values() if c["passes"]}
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
        if row["varies"]:
            need = SWEEP_POINTS if str(row["why"]).startswith("regime: ") else 2
            if distinct_values(row["measured_by"]).get(row["varies"], 0) < need:
                raise ValueError(
                    f"verdict row {row['claim']!r}: table {row['measured_by']!r} does not vary {row['varies']!r} "
                    f"over at least {need} values, so it does not measure the cause"
                )
        if str(row["regime"]).startswith("paper: ") and row["regime"] not in passed:
            raise ValueError(f"verdict row {row['claim']!r} is labelled paper without a computed criterion")
    if _CHECKS:
        publish(CHECKS_TABLE, checks_table(), show=False)
    frame = pd.DataFrame(list(rows), columns=list(COLUMNS))
    publish("verdict", frame, show=False)
    _glue_verdict(rows)
    return frame


def count_line(rows: Sequence[Mapping[str, Any]]) -> str:
    """The line above a chapter's verdict figure: the paper's claims by decision and regime, with the first that did
    not hold (frontpage.takeaway, as on the landing page), then our own checks by decision."""
    from .frontpage import takeaway, tally

    ours = [r for r in rows if r.get("origin") == "ours"]
    if not ours:
        return takeaway(rows)
    words = ", ".join(f"{n} {d}" for d, n in tally(ours).items() if n)
    return f"{takeaway(rows)} Our {len(ours)} own checks: {words}."


def _glue_verdict(rows: Sequence[Mapping[str, Any]]) -> None:
    """The count line, verdict figure and rows, glued for the top of the chapter's page (`{glue} verdict_count`,
    `{glue} verdict_figure`, `{glue} verdict_rows`); nothing shows where conclude() is called. Outside a kernel (plain
    Python) nothing is glued."""
    import html

    from IPython import get_ipython

    if get_ipython() is None:
        return
    import matplotlib.pyplot as plt
    from IPython.display import HTML
    from myst_nb import glue

    from .plots import forest

    glue("verdict_count", HTML(f'<p class="repro-count">{html.escape(count_line(rows))}</p>'), display=False)
    fig = forest(rows)
    glue("verdict_figure", fig, display=False)
    plt.close(fig)
    glue("verdict_rows", HTML(rows_html(rows)), display=False)
