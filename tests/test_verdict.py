"""repro.verdict: rules decide from intervals; rows have the shared columns; the front page shows every row."""

from __future__ import annotations

import math

import pytest

from repro import frontpage, stats, verdict
from repro.verdict import COLUMNS, Claim, Regime, Rule, conclude, judge, unexplained, view


@pytest.mark.parametrize(
    "rule, interval, decision",
    [
        (Rule.above(0.0), (0.01, 0.2), "held"),
        (Rule.above(0.0), (-0.2, -0.01), "not held"),
        (Rule.above(0.0), (-0.01, 0.2), "inconclusive"),  # straddles the threshold: never forced either way
        (Rule.below(0.05), (0.0, 0.04), "held"),
        (Rule.below(0.05), (0.06, 0.1), "not held"),
        (Rule.below(0.05), (0.04, 0.06), "inconclusive"),
        (Rule.within(0.4, 0.6), (0.45, 0.55), "held"),
        (Rule.within(0.4, 0.6), (0.61, 0.7), "not held"),
        (Rule.within(0.4, 0.6), (0.3, 0.39), "not held"),
        (Rule.within(0.4, 0.6), (0.55, 0.65), "inconclusive"),
        (Rule.matches(0.84, 0.005), (0.84, 0.84), "held"),
        (Rule.above(0.0), (math.nan, 0.1), "inconclusive"),
    ],
)
def test_rules_decide_from_the_interval(rule: Rule, interval: tuple[float, float], decision: str) -> None:
    ours = sum(interval) / 2 if all(map(math.isfinite, interval)) else 0.0
    assert rule.decide(ours, *interval) == decision


def test_null_band_rules_compare_the_estimate_with_the_band() -> None:
    band = (0.46, 0.55)
    assert Rule.in_null().decide(0.5, *band) == "held"
    assert Rule.in_null().decide(0.62, *band) == "not held"
    assert Rule.above_null().decide(0.62, *band) == "held"
    assert Rule.above_null().decide(0.5, *band) == "not held"
    assert Rule.not_above_null().decide(0.5, *band) == "held"
    assert Rule.not_above_null().decide(0.2, *band) == "held"  # below its null is no leak: one-sided
    assert Rule.not_above_null().decide(0.62, *band) == "not held"


def test_rules_say_what_they_test_before_the_numbers() -> None:
    rule = Rule.above(0.0, "AUROC(RMD) − AUROC(MD)")
    assert rule.text.startswith("held if the 95 % interval of AUROC(RMD) − AUROC(MD) lies above 0")
    with pytest.raises(ValueError):
        Rule("sideways")
    with pytest.raises(ValueError):
        Rule.within(1.0, 0.0)


REGIME = Regime("classes K", 100, 5, "miniature")
PAPER = dict(quote="A beats B.", comparator="B", regime=Regime("items", 400, 400, "paper", "the same test set"))


def test_judge_builds_a_row_with_every_column_and_a_cause_when_not_held() -> None:
    from repro import results

    claim = Claim("A beats B", "Table 3 (quoted)", 0.05, Rule.above(0.0, "AUC(A) − AUC(B)"), **PAPER)
    held = judge(claim, 0.03, stats.Interval(0.03, 0.01, 0.05, "paired bootstrap over 400 items, 2,000 resamples"))
    assert tuple(held) == COLUMNS
    assert held["decision"] == "held" and held["why"] == "" and held["test"].startswith("paired bootstrap")
    assert held["origin"] == "paper" and held["regime"] == "paper: items = 400 (paper 400)"
    lost = judge(
        claim,
        -0.05,
        (-0.08, -0.02),
        test="DeLong test",
        why=("setup", "our corpus is 50 % contaminants"),
        measured_by="contamination_ablation",
    )
    assert lost["decision"] == "not held" and lost["why"] == "setup: our corpus is 50 % contaminants"
    assert lost["measured_by"] == "contamination_ablation"
    with pytest.raises(ValueError, match="cause must be one of"):
        judge(claim, -0.05, (-0.08, -0.02), test="DeLong test", why=("bug", "oops"))
    with pytest.raises(ValueError, match="name the test"):
        judge(claim, 0.03, (0.01, 0.05))
    with pytest.raises(ValueError, match="measured_by"):  # a measured kind of cause without its table
        judge(claim, -0.05, (-0.08, -0.02), test="t", why=("finding", "B is better here"))
    with pytest.raises(ValueError, match="give its cause"):
        judge(claim, -0.05, (-0.08, -0.02), test="t")
    results.forget_published()
    with pytest.raises(ValueError, match="has not published"):
        conclude([lost])


def test_an_inconclusive_row_says_how_much_more_data_would_decide_it() -> None:
    claim = Claim("A beats B", "Table 3", 0.05, Rule.above(0.0), **PAPER)
    row = judge(claim, 0.01, (-0.01, 0.03), test="DeLong test", why=("finding", "ignored"), narrow_by="seeds")
    # half-width 0.02 at a gap of 0.01 from the threshold: (0.02 / 0.01)^2 = 4x the seeds
    assert row["decision"] == "inconclusive" and row["measured_by"] == ""
    assert row["why"] == "to decide at this estimate: about 4× the seeds (the interval shrinks as 1/√n)"
    on_it = judge(claim, 0.0, (-0.01, 0.01), test="t")
    assert "sits on the threshold" in on_it["why"]
    assert "over 100×" in judge(claim, 0.001, (-0.02, 0.022), test="t")["why"]


def test_a_miniature_contradiction_is_caused_by_the_regime_unless_a_sweep_says_otherwise() -> None:
    claim = Claim(
        "RMD beats MD", "Table 1", 0.1, Rule.above(0.0), quote="RMD improves.", comparator="MD", regime=REGIME
    )
    row = judge(claim, -0.05, (-0.08, -0.02), test="t", why=("finding", "MD separates the classes better"))
    assert row["why"] == "regime: tested at classes K = 5 (paper 100); MD separates the classes better"
    assert row["measured_by"] == "regimes" and row["regime"] == "miniature: classes K = 5 (paper 100)"
    unknown = judge(claim, -0.05, (-0.08, -0.02), test="t", why=unexplained("a sweep of K"))
    assert unknown["why"].startswith("regime: tested at classes K = 5") and "a sweep of K would tell" in unknown["why"]
    swept = judge(
        claim, -0.05, (-0.08, -0.02), test="t", why=("finding", "the gap grows with K"), measured_by="k_sweep",
        trend_checked=True,
    )  # fmt: skip
    assert swept["why"] == "finding: the gap grows with K" and swept["measured_by"] == "k_sweep"
    setup = judge(claim, -0.05, (-0.08, -0.02), test="t", why=("setup", "features untuned"), measured_by="ablation")
    assert setup["why"] == "setup: features untuned"


def test_the_register_needs_the_papers_words_and_checks_its_rule_on_the_papers_numbers() -> None:
    with pytest.raises(ValueError, match="quote, comparator, regime"):
        Claim("A beats B", "Table 3", 0.05, Rule.above(0.0))
    with pytest.raises(ValueError, match="tolerance"):
        Regime("classes K", 100, 100, "paper")
    ours = Claim("the base model sees no signal", "ours", "—", Rule.in_null(), ours=True)
    assert ours.origin == "ours" and ours.on_paper_numbers() is None
    good = Claim("A beats B", "Table 3", "0.91 vs 0.88", Rule.above(0.0), paper_estimate=0.03, **PAPER)
    strawman = Claim("A is 100x faster", "§5", "6x", Rule.above(100), paper_estimate=6.0, **PAPER)
    assert good.on_paper_numbers() == "held" and strawman.on_paper_numbers() == "not held"
    band = Claim("no signal", "Fig. 3", 0.5, Rule.in_null(), paper_estimate=(0.5, 0.45, 0.55), **PAPER)
    assert band.on_paper_numbers() == "held"
    table = verdict.register_table([good, ours])
    assert list(table["origin"]) == ["paper", "ours"] and table.loc[0, "comparator"] == "B"


def test_front_page_counts_groups_by_regime_and_marks_rows_without_intervals() -> None:
    claim = Claim("A beats B", "Table 3", 0.05, Rule.above(0.0), **PAPER)
    mini = Claim("RMD beats MD", "Table 1", 0.1, Rule.above(0.0), quote="q", comparator="MD", regime=REGIME)
    own = Claim("control in null band", "ours", "—", Rule.in_null(), ours=True)
    new_rows = [
        judge(claim, 0.03, (0.01, 0.05), test="t"),
        judge(claim, 0.0, (-0.01, 0.01), test="t"),
        judge(mini, -0.05, (-0.08, -0.02), test="t", why=("finding", "MD wins")),
        judge(own, 0.5, (0.45, 0.55), test="permutation null"),
    ]
    legacy = [{"claim": "old claim", "paper": "0.9", "ours": "0.8", "held": "partly"}]
    chapters = [
        ("metrics_by_hand", [frontpage.normalize(r) for r in new_rows]),
        ("deepgini_apfd", [frontpage.normalize(r) for r in legacy]),
    ]
    page = frontpage.render("smoke", chapters)
    assert "Built from the `smoke` profile" in page and "4 of the papers' claims and 1 checks of our own" in page
    # metrics: paper claims 1 held, 1 not held, 1 inconclusive; 2 of 3 in the paper's regime; 1 check of our own
    assert "<td>1</td><td>1</td><td>1</td><td>2 of 3</td><td>1</td>" in page
    assert "### Tested in the paper's regime (1 held, 0 not held, 1 inconclusive)" in page
    assert "### Tested in a miniature regime (0 held, 1 not held, 0 inconclusive)" in page
    assert "### Checks of our own (1 held" in page and "(measured by: regimes)" in page
    assert "about 0.2 of them would miss the true value by chance alone" in page  # 5 rows with intervals x 0.05
    assert "0.03 [0.01, 0.05]" in page and 'class="repro-inconclusive"' in page
    assert "no interval yet" in page and 'href="executed/deepgini_apfd.html#verdict"' in page


def test_the_view_names_a_null_band_as_such() -> None:
    claim = Claim("no leak", "ours", "—", Rule.not_above_null("the attack"), ours=True)
    null_row = judge(claim, 0.5, (0.46, 0.55), "permutation null")
    shown = view([null_row]).iloc[0]["ours [95 % interval or null band]"]
    assert shown == "0.5 (null band [0.46, 0.55])"
    estimate = judge(Claim("above", "ours", "—", Rule.above(0.0), ours=True), 0.5, (0.4, 0.6), "bootstrap")
    assert view([estimate]).iloc[0]["ours [95 % interval or null band]"] == "0.5 [0.4, 0.6]"
