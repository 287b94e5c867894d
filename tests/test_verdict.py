"""repro.verdict: rules decide from intervals; rows have the shared columns; the front page shows every row."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from repro import frontpage, stats, verdict
from repro.verdict import COLUMNS, Claim, Criterion, Regime, Rule, Sweep, conclude, judge, unexplained, view


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
SAME_SET = Regime("items", 400, 400, "paper", "the same test set", Criterion((400, 400), "model accuracy", (0.9, 1)))
PAPER = dict(quote="A beats B.", comparator="B", regime=SAME_SET, units="items",
             measures={"contamination_ablation": "contaminant share", "m": "K"})  # fmt: skip


@pytest.fixture(autouse=True)
def _fresh_run():
    """Each test starts a run afresh: no published tables, no computed regime criteria (as repro.start does)."""
    from repro import results

    results.forget_published()
    verdict.forget_checks()
    verdict.check_regime(SAME_SET, 400, 0.95)
    yield
    verdict.forget_checks()


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
    with pytest.raises(ValueError, match="register does not say which column"):  # a table the register does not know
        judge(claim, -0.05, (-0.08, -0.02), test="t", why=("finding", "B is better here"), measured_by="apfd")
    assert lost["varies"] == "contaminant share"  # read from the register, not from the caller
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
    assert row["why"] == "to decide at this estimate (held): about 4× the seeds (the interval shrinks as 1/√n)"
    below = judge(claim, -0.01, (-0.03, 0.01), test="t", narrow_by="seeds")
    assert below["why"].startswith("to decide at this estimate (not held): about 4× the seeds")
    assert verdict._cause(below) == "to decide (not held): about 4× the seeds"
    on_it = judge(claim, 0.0, (-0.01, 0.01), test="t")
    assert "sits on the threshold" in on_it["why"]
    far = judge(claim, 0.001, (-0.02, 0.022), test="t")
    assert "over 100×" in far["why"] and far["why"].endswith("the statistic lies between -0.02 and 0.022")
    assert verdict._cause(far) == "between -0.02 and 0.022; over 100× the data to decide"


def test_a_regime_cause_needs_a_sweep_of_its_variable_that_moves_toward_the_paper() -> None:
    """A miniature row against the paper is no longer put down to the regime by default (the old rule turned a
    finding or unknown into `regime`, measured by the table that only restates the regime)."""
    from repro import results

    claim = Claim(
        "RMD beats MD", "Table 1", 0.1, Rule.above(0.0), quote="RMD improves.", comparator="MD", regime=REGIME,
        units="items", measures={"m": "k", "k_sweep": "K"},
    )  # fmt: skip
    finding = judge(claim, -0.05, (-0.08, -0.02), test="t", why=("finding", "MD wins"), measured_by="m")
    assert finding["why"] == "finding: MD wins" and finding["measured_by"] == "m"
    bare = judge(claim, -0.05, (-0.08, -0.02), test="t", why=("regime", "K is too small"))
    assert bare["why"] == "unknown: tested at classes K = 5 (paper 100); a sweep of classes K would tell"
    assert bare["measured_by"] == ""
    toward = stats.Interval(0.02, 0.01, 0.03, "slope over K")
    swept = judge(claim, -0.05, (-0.08, -0.02), test="t", why=("regime", "the gap closes with K"),
                  sweep=Sweep("k_sweep", "K", "classes K", toward))  # fmt: skip
    assert swept["why"] == "regime: the gap closes with K" and (swept["measured_by"], swept["varies"]) == (
        "k_sweep",
        "K",
    )
    flat = Sweep("k_sweep", "K", "classes K", stats.Interval(0.01, -0.01, 0.03, "slope over K"))
    away = judge(claim, -0.05, (-0.08, -0.02), test="t", why=("regime", "the gap closes with K"), sweep=flat)
    assert away["why"].startswith("unknown: tested at classes K = 5") and "does not move toward" in away["why"]
    with pytest.raises(ValueError, match="register does not say that column 'n'"):
        judge(
            claim,
            -0.05,
            (-0.08, -0.02),
            test="t",
            why=("regime", "x"),
            sweep=Sweep("k_sweep", "n", "classes K", toward),
        )
    other = Sweep("size_sweep", "n", "training rows", toward)  # a sweep of another variable measures nothing here
    assert judge(claim, -0.05, (-0.08, -0.02), test="t", why=("regime", "x"), sweep=other)["why"].startswith("unknown")
    results.publish("k_sweep", [{"K": 5, "gap": -0.05}, {"K": 10, "gap": -0.03}], show=False)
    with pytest.raises(ValueError, match="does not vary 'K' over at least 3 values"):
        conclude([swept])  # two points are not a sweep
    results.publish("k_sweep", [{"K": k, "gap": -0.05 + k / 1000} for k in (5, 10, 20)], show=False)
    results.publish("m", [{"k": 1, "auc": 0.5}, {"k": 1, "auc": 0.6}], show=False)
    with pytest.raises(ValueError, match="does not vary 'k'"):
        conclude([finding])  # the ablation table holds one value of what the cause names
    conclude([swept])


def test_a_paper_label_needs_its_criterion_computed_on_the_data() -> None:
    from repro import results

    criterion = Criterion((50, 150), "median OOD-class CLP", (-1.0, 0.0))
    near = Regime("classes K", 150, 60, "paper", "K ≥ 50", criterion)
    claim = Claim("RMD beats MD", "Table 1", 0.1, Rule.above(0.0), quote="q", comparator="MD", regime=near,
                  units="tasks")  # fmt: skip
    unchecked = judge(claim, 0.1, (0.05, 0.15), test="bootstrap over 12 tasks")
    assert unchecked["regime"] == "miniature: classes K = 60 (paper 150); the paper-regime criterion was not computed"
    assert not verdict.check_regime(near, 60, -3.4)  # far OOD: the defining property fails
    failed = judge(claim, 0.1, (0.05, 0.15), test="bootstrap over 12 tasks")
    assert (
        failed["regime"].startswith("miniature: classes K = 60") and "median OOD-class CLP = -3.4" in failed["regime"]
    )
    assert failed["regime_tag"] == "miniature: classes K 60 vs 150"  # no word for a setting that fails it
    far = Regime("classes K", 150, 60, "paper", "K ≥ 50", replace(criterion, lacking="far"), tag="K")
    assert not verdict.check_regime(far, 60, -3.4)
    assert judge(replace(claim, regime=far), 0.1, (0.05, 0.15), test="12 tasks")["regime_tag"] == (
        "miniature, far: K 60 vs 150"  # the defining property failed: the tag says what the setting is
    )
    assert not verdict.check_regime(near, 60, -0.5)  # checked twice: passes only if every check passed
    verdict.forget_checks()
    small = Regime("classes K", 150, 20, "paper", "K ≥ 50", replace(criterion, lacking="far"), tag="K")
    assert not verdict.check_regime(small, 20, -0.5)  # near, but K outside the paper's range: not called far
    assert judge(replace(claim, regime=small), 0.1, (0.05, 0.15), test="12 tasks")["regime_tag"] == (
        "miniature: K 20 vs 150"
    )
    verdict.forget_checks()
    with pytest.raises(ValueError, match="not ours"):
        verdict.check_regime(near, 150, -0.5)  # the variable checked is ours, not a value chosen to pass
    assert verdict.check_regime(near, 60, -0.5)
    passed = judge(claim, 0.1, (0.05, 0.15), test="bootstrap over 12 tasks")
    assert passed["regime"] == "paper: classes K = 60 (paper 150)"
    conclude([passed])
    checks = results.distinct_values("regime_checks")
    assert checks["passes"] == 1 and "regime_checks" in results.published()
    with pytest.raises(ValueError, match="criterion"):
        Regime("classes K", 150, 60, "paper", "K ≥ 50")  # a paper regime without its criterion
    with pytest.raises(ValueError, match="bounded"):
        Criterion((50, 150), "anything", (-math.inf, math.inf))  # a criterion that always passes
    blamed = judge(claim, -0.1, (-0.15, -0.05), test="12 tasks", why=("regime", "K"), sweep=Sweep("s", "K", "classes K",
                   stats.Interval(0.1, 0.05, 0.15, "slope")))  # fmt: skip
    assert blamed["why"].startswith(
        "unknown: tested at classes K = 60 (paper 150), the paper's regime by its criterion"
    )
    verdict.forget_checks()
    with pytest.raises(ValueError, match="labelled paper without a computed criterion"):
        conclude([passed])


def test_a_clustered_claim_is_tested_over_its_clusters() -> None:
    claim = Claim("A beats B", "Table 3", 0.05, Rule.above(0.0), quote="q", comparator="B", regime=REGIME,
                  units="tasks")  # fmt: skip
    with pytest.raises(ValueError, match="clustered in tasks"):
        judge(claim, 0.1, stats.Interval(0.1, 0.05, 0.15, "bootstrap over 2,000 items, 2,000 resamples"))
    sets = Claim("x", "y", 0.0, Rule.above(0.0), quote="q", comparator="B", regime=REGIME, units="sets")
    with pytest.raises(ValueError, match="clustered in sets"):  # 'datasets' does not name the sets
        judge(sets, 0.1, stats.Interval(0.1, 0.05, 0.15, "bootstrap over 2,000 items of 4 datasets"))
    row = judge(claim, 0.1, stats.Interval(0.1, 0.05, 0.15, "12 tasks resampled, then items within them"))
    assert row["decision"] == "held"
    with pytest.raises(ValueError, match="units"):
        Claim("A beats B", "Table 3", 0.05, Rule.above(0.0), quote="q", comparator="B", regime=REGIME)


def test_a_rule_the_setup_cannot_let_fail_is_untestable_here() -> None:
    """A statistic bounded below the rule's threshold by the setup (shown by arithmetic) decides nothing."""
    saturates = Claim("CAM saturates early", "Table 3", 0.096, Rule.below(0.5), quote="q", comparator="n",
                      regime=REGIME, units="items")  # fmt: skip
    row = judge(saturates, 0.09, (0.09, 0.09), test="t", forced="at most 10% of the tests can be needed")
    assert (
        row["decision"] == "untestable here"
        and row["why"] == "the setup decides: at most 10% of the tests can be needed"
    )
    assert judge(saturates, 0.09, (0.09, 0.09), test="t")["decision"] == "held"


def test_a_comparison_with_an_untuned_arm_is_untestable_here() -> None:
    versus = Claim("A below B", "Fig. 2", 0.5, Rule.below(1.0), quote="q", comparator="B", regime=REGIME,
                   units="items")  # fmt: skip
    row = judge(versus, 0.4, (0.3, 0.5), test="t", untuned="B at one learning rate, A's chosen from five")
    assert row["decision"] == "untestable here"
    assert row["why"] == (
        "refused: an arm is untuned (B at one learning rate, A's chosen from five); tune it to the same standard"
    )
    assert judge(versus, 0.4, (0.3, 0.5), test="t")["decision"] == "held"


def test_a_comparison_the_setup_decides_is_untestable_here() -> None:
    alike = Claim("DSIR resampling beats top-k", "Table 1", 0.01, Rule.above(0.0), quote="q", comparator="top-k",
                  regime=REGIME, units="items", overlap_max=0.9)  # fmt: skip
    same = judge(alike, 0.02, (0.01, 0.03), test="t", overlap=(0.977, "selection_overlap"))
    assert same["decision"] == "untestable here" and same["measured_by"] == "selection_overlap"
    assert "share 97.7% of their selections" in same["why"] and "no amount of data" in same["why"]
    apart = judge(alike, 0.02, (0.01, 0.03), test="t", overlap=(0.4, "selection_overlap"))
    assert apart["decision"] == "held"
    with pytest.raises(ValueError, match="overlap"):
        judge(alike, 0.02, (0.01, 0.03), test="t")
    with pytest.raises(ValueError, match="not computed"):
        judge(alike, 0.02, (0.01, 0.03), test="t", overlap=(math.nan, "selection_overlap"))
    weak = Claim("RMD at least as good as MSP", "Table 2", 0.0, Rule.above(-0.01), quote="q", comparator="MSP",
                 regime=REGIME, units="items", fitness="test accuracy", fitness_margin=0.02)  # fmt: skip
    refused = judge(weak, 0.05, (0.02, 0.08), test="t", fitness=(0.853, 0.769))
    assert refused["decision"] == "untestable here" and refused["why"].startswith("refused: the comparator")
    assert judge(weak, 0.05, (0.02, 0.08), test="t", fitness=(0.853, 0.84))["decision"] == "held"
    with pytest.raises(ValueError, match="fitness"):
        Claim("x", "y", 0, Rule.above(0), ours=True, fitness="accuracy")  # a measure without its margin


def test_a_built_in_positive_control_is_set_aside() -> None:
    doremi = Claim("DoReMi lowers perplexity", "Fig. 3", 0.9, Rule.below(1.0), quote="q", comparator="baseline",
                   regime=REGIME, units="items", control="the 40 % noise domain")  # fmt: skip
    share0 = stats.Interval(0.97, 0.85, 1.12, "paired bootstrap over 40 held-out blocks at noise share 0")
    row = judge(doremi, 0.8, (0.7, 0.9), test="t", without_control=(0.97, share0))
    assert row["decision"] == "inconclusive" and (row["ours"], row["ci_low"], row["ci_high"]) == (0.97, 0.85, 1.12)
    assert row["test"] == share0.method  # the deciding interval's own test
    with pytest.raises(ValueError, match="built-in control"):
        judge(doremi, 0.8, (0.7, 0.9), test="t", without_control=(0.97, (0.85, 1.12)))  # a bare tuple names no test
    assert "decided without the 40 % noise domain; with it: held, 0.8 [0.7, 0.9]" in row["why"]
    with pytest.raises(ValueError, match="built-in control"):
        judge(doremi, 0.8, (0.7, 0.9), test="t")


def test_no_effect_is_an_equivalence_test_with_its_power_not_a_failure_to_reject() -> None:
    null_claim = Claim("no leak", "§5", "chance", Rule.not_above_null("the attack"), **PAPER)
    row = judge(null_claim, 0.5, (0.46, 0.55), "permutation null")
    assert row["decision"] == "inconclusive" and row["why"].startswith("failing to reject a null")
    assert judge(null_claim, 0.6, (0.46, 0.55), "permutation null", why=unexplained("x"))["decision"] == "not held"
    own = Claim("no leak", "ours", "—", Rule.not_above_null("the attack"), ours=True)
    assert judge(own, 0.5, (0.46, 0.55), "permutation null")["decision"] == "held"  # our own null checks stay
    margin = Rule.equivalent(-0.05, 0.05, "MIA accuracy − 0.5")
    assert margin.text.startswith("no effect: held if the 95 % interval of MIA accuracy − 0.5 lies inside")
    equiv = Claim("MIA at chance", "§5", "0.5", margin, **PAPER)
    with pytest.raises(ValueError, match="power"):
        judge(equiv, 0.0, (-0.02, 0.03), test="bootstrap")
    held = judge(equiv, 0.0, (-0.02, 0.03), test="bootstrap", power=(0.91, "accuracy 0.55"))
    assert held["decision"] == "held" and held["test"] == "bootstrap; power 91% at accuracy 0.55"
    weak = judge(equiv, 0.0, (-0.02, 0.03), test="bootstrap", power=(0.3, "accuracy 0.55"))
    assert weak["decision"] == "inconclusive" and weak["why"].startswith("the test's power is 30%")
    wide = judge(equiv, 0.0, (-0.08, 0.08), test="bootstrap", power=(0.4, "accuracy 0.55"))
    assert wide["decision"] == "inconclusive"  # an interval too wide to show no effect is not "held"
    one_sided = Claim("no leak", "§5", "0.5", Rule.at_most(0.55, "MIA accuracy"), **PAPER)
    assert one_sided.rule.text.startswith("no effect (one-sided): held if the 95 % interval of MIA accuracy ends below")
    below = judge(one_sided, 0.40, (0.33, 0.47), test="bootstrap", power=(0.9, "accuracy 0.55"))
    assert below["decision"] == "held" and below["rule_low"] is None  # below chance is no membership advantage
    assert (
        judge(one_sided, 0.6, (0.56, 0.64), test="b", power=(0.9, "a"), why=unexplained("x"))["decision"] == "not held"
    )
    assert judge(one_sided, 0.52, (0.48, 0.57), test="bootstrap", power=(0.9, "a"))["decision"] == "inconclusive"
    power = stats.simulated_power(lambda rng: rng.normal(0.0392, 0.02) - 1.96 * 0.02 > 0, n_sims=2000, seed=1)
    assert power == pytest.approx(0.5, abs=0.04)  # an effect at the margin, detected about half the time


def test_an_effect_not_shown_by_a_weak_test_is_inconclusive_not_absent() -> None:
    """An above-null ('it rises') rule that fails where its test's power at an effect fixed in advance is below the
    floor is inconclusive; with a strong test it is not held; without a power it is decided as before."""
    rises = Claim("MIA rises", "§5", "above 0.5", Rule.above_null("MIA accuracy"), **PAPER)
    weak = judge(rises, 0.52, (0.42, 0.58), "permutation null", why=unexplained("x"), power=(0.19, "win rate 0.55"))
    assert weak["decision"] == "inconclusive" and "power is 19% at win rate 0.55" in weak["why"]
    assert weak["test"] == "permutation null; power 19% at win rate 0.55"
    strong = judge(rises, 0.52, (0.42, 0.58), "permutation null", why=unexplained("x"), power=(0.95, "win rate 0.55"))
    assert strong["decision"] == "not held" and strong["why"].startswith("unknown: no table here")
    assert judge(rises, 0.52, (0.42, 0.58), "permutation null", why=unexplained("x"))["decision"] == "not held"
    assert judge(rises, 0.7, (0.42, 0.58), "permutation null", power=(0.19, "w"))["decision"] == "held"


def test_the_register_needs_the_papers_words_and_checks_its_rule_on_the_papers_numbers() -> None:
    with pytest.raises(ValueError, match="quote, comparator, units, regime"):
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


def test_front_page_has_a_line_per_chapter_a_paper_vs_ours_figure_and_every_row_on_its_own_page() -> None:
    claim = Claim("A beats B", "Table 3", 0.05, Rule.above(0.0, "AUROC(A) − AUROC(B)"), paper_estimate=0.05, **PAPER)
    mini = Claim("RMD beats MD", "Table 1", 0.1, Rule.above(0.0), quote="q", comparator="MD", regime=REGIME,
                 units="items", measures={"m": "K"})  # fmt: skip
    own = Claim("control in null band", "ours", "—", Rule.in_null(), ours=True)
    rows = [
        judge(claim, 0.03, (0.01, 0.05), test="t"),
        judge(claim, 0.0, (-0.01, 0.01), test="t"),
        judge(mini, -0.05, (-0.08, -0.02), test="t", why=("finding", "MD wins"), measured_by="m"),
        judge(own, 0.5, (0.45, 0.55), test="permutation null"),
    ]
    chapters = [("metrics_by_hand", [frontpage.normalize(r) for r in rows])]
    page = frontpage.render("smoke", chapters, figure=True)
    assert "Built from the `smoke` profile: 3 claims of the papers and 1 checks of our own in 1 chapter;" in page
    assert "1 held</span>" in page and "1 not held</span>" in page and "1 inconclusive</span>" in page
    # the takeaway is read from the rows: counts, then the first claim that did not hold, in its statistic
    assert "Of 3 claims of the paper: 1 held, 1 not held, 1 inconclusive (2 in the paper&#x27;s regime)" in page
    assert (
        "not held, for example: RMD beats MD (the estimate: ours -0.05 [-0.08, -0.02], paper no number; in a "
        "miniature, cause: finding)" in page
    )
    assert "figures/paper_vs_ours.png" in page and "for the 2 rows where the paper gives a number" in page
    assert 'href="executed/metrics_by_hand.html#verdict"' in page and "## How to read a verdict" in page
    listing = frontpage.render_rows("smoke", chapters)
    assert "about 0.2 of them would miss the true value by chance alone" in listing  # 4 rows with intervals x 0.05
    assert listing.count("<tr>") == 4 + 1 and "(table <a href=" in listing  # the cause links its measuring table
    fig = frontpage.paper_vs_ours(chapters)
    ax = fig.axes[0]
    assert ax.get_xscale() == "symlog" and ax.get_xlabel() == "the paper's value"
    from repro.figure_checks import problems

    assert problems(fig) == []


def test_a_row_shows_one_statistic_in_the_paper_and_ours_columns() -> None:
    claim = Claim("A beats B", "Table 3", "0.91 vs 0.88", Rule.above(0.0, "AUROC(A) − AUROC(B)"), paper_estimate=0.03,
                  **PAPER)  # fmt: skip
    row = judge(claim, 0.05, (0.01, 0.09), test="t")
    assert row["statistic"] == "AUROC(A) − AUROC(B)" and row["paper_estimate"] == 0.03
    assert (verdict.paper_text(row), verdict.ours_text(row)) == ("0.03", "0.05 [0.01, 0.09]")
    direction = judge(replace(claim, paper_estimate=None), 0.05, (0.01, 0.09), test="t")
    assert verdict.paper_text(direction) == "no number"
    assert verdict.paper_text({**direction, "origin": "ours"}) == "not reported"
    # the paper's words read as a number ("close to 0"): the register checks the rule on it, the row does not draw it
    words = replace(claim, paper="≈ 0.05", paper_estimate=0.05, paper_in_words=True)
    assert words.on_paper_numbers() == "held"
    worded = judge(words, 0.05, (0.01, 0.09), test="t")
    assert worded["paper_estimate"] is None and verdict.paper_text(worded) == "≈ 0.05 (in words)"
    named = replace(claim, statistic="exposure (bits)", rule=Rule.matches(19.93, 0.005, "exposure"))
    exact = judge(replace(named, paper_estimate=19.93), 19.9316, (19.9316, 19.9316), test="exact")
    assert exact["statistic"] == "exposure (bits)" and verdict.ours_text(exact) == "19.93 (exact)"
    assert verdict.paper_text(exact) == "19.93"
    printed = judge(replace(claim, paper="0.50 / 0.64"), 0.0, (0.0, 0.0), test="exact", values="0.50 / 0.64")
    assert (verdict.paper_text(printed), verdict.ours_text(printed)) == ("0.50 / 0.64", "0.50 / 0.64")
    with pytest.raises(ValueError, match="only for an exact recomputation"):
        judge(claim, 0.05, (0.01, 0.09), test="t", values="0.05")
    tiny = judge(claim, 1.1e-16, (1.1e-16, 1.1e-16), test="exact")
    assert verdict.ours_text(tiny) == "1.1 × 10^-16 (exact)"


def test_the_views_name_a_null_band_as_such_and_the_row_is_compact() -> None:
    claim = Claim("no leak", "ours", "—", Rule.not_above_null("the attack"), ours=True)
    null_row = judge(claim, 0.5, (0.46, 0.55), "permutation null")
    assert view([null_row]).iloc[0]["ours"] == "0.5 (null band 0.46 to 0.55)"
    estimate = judge(Claim("above", "ours", "—", Rule.above(0.0), ours=True), 0.5, (0.4, 0.6), "bootstrap")
    assert view([estimate]).iloc[0]["ours"] == "0.5 [0.4, 0.6]"
    mini = Claim("RMD beats MD", "Table 1", 0.1, Rule.above(0.0), quote="q", comparator="MD",
                 regime=Regime("classes K", 150, 60, tag="K"), units="items")  # fmt: skip
    row = judge(mini, 0.1, (-0.01, 0.2), "bootstrap over items")
    assert row["regime_tag"] == "miniature: K 60 vs 150"
    html = verdict.rows_html([row, null_row])
    assert html.count("<tr>") == 3 and 'class="repro-badge repro-inconclusive"' in html
    assert "miniature: K 60 vs 150" in html and "<details><summary>more</summary>" in html
    # rows sit under their statistic; an inconclusive row shows how much more data would decide it, the whole text
    # sits behind the disclosure with source, regime, rule and test
    assert '<tr class="repro-group"><td colspan="5">the estimate</td></tr>' in html
    assert '<div class="repro-why">to decide (held): about 1.3× the items</div>' in html
    assert (
        "<b>why</b>: to decide at this estimate (held): about 1.3×" in html
        and "<b>regime</b>: miniature: classes K = 60" in html
    )


def test_the_verdict_figure_has_a_panel_per_statistic_with_threshold_and_paper_marker() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from repro.plots import forest

    a = Claim("A beats B", "T3", "x", Rule.above(0.0, "AUROC(A) − AUROC(B)"), paper_estimate=0.03, **PAPER)
    b = Claim("C below D", "T4", "y", Rule.below(1.0, "loss ratio C / D"), paper_estimate=0.9, **PAPER)
    rows = [judge(a, 0.05, (0.01, 0.09), "t"), judge(b, 0.8, (0.7, 0.95), "t"), judge(a, -0.02, (-0.05, 0.01), "t")]
    fig = forest(rows)
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert titles == ["AUROC(A) − AUROC(B)", "loss ratio C / D"]
    first = fig.axes[0]
    assert [t.get_text() for t in first.get_yticklabels()] == ["#1", "#3"]
    assert any(list(line.get_xdata()) == [0.0, 0.0] for line in first.get_lines())  # the threshold
    assert any(line.get_marker() == "D" and list(line.get_xdata()) == [0.03] for line in first.get_lines())
    assert any(line.get_marker() == "D" and list(line.get_xdata()) == [0.9] for line in fig.axes[1].get_lines())
    from repro.figure_checks import problems

    assert problems(fig) == []
    # the legend names what the figure draws: held and inconclusive rows here, no null band
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["held", "inconclusive", "paper's value", "rule's threshold"]
    # no paper value on any row: no diamond in the legend; a row with no estimate is labelled where it would be
    ours = Claim("E beats F", "ours", "—", Rule.above(0.0, "AUROC(E) − AUROC(F)"), ours=True)
    blank = {**judge(ours, float("nan"), (float("nan"), float("nan")), "t"), "decision": "untestable here"}
    fig = forest([judge(ours, 0.05, (0.01, 0.09), "t"), blank])
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["held", "untestable here", "rule's threshold"]
    assert [t.get_text() for t in fig.axes[0].texts] == ["untestable here"]
    assert problems(fig) == []


def test_paper_numbers_from_another_benchmark_are_checked_by_the_rule_but_not_shown_on_the_row() -> None:
    rule = Rule.above(0, "AUROC(RMD) − AUROC(MD)")
    common = dict(quote="q", comparator="MD", units="items", regime=Regime("K", 100, 5), paper_estimate=0.0024)
    own = Claim("RMD beats MD on CIFAR", "colab", "96.45 vs 96.22", rule, **common)
    context = Claim("RMD beats MD on Fashion", "colab", "context", rule, paper_context=True, **common)
    assert own.on_paper_numbers() == context.on_paper_numbers() == "held"  # the register checks both
    assert judge(own, 0.01, (0.0, 0.02), "t")["paper_estimate"] == 0.0024
    assert judge(context, 0.01, (0.0, 0.02), "t")["paper_estimate"] is None  # no diamond, no paper column value


def test_a_decision_within_monte_carlo_error_of_the_threshold_is_inconclusive() -> None:
    """Half-width 0.0313 from 1,000 resamples: each bound is uncertain by about 0.0313 / sqrt(1998) = 0.0007, so a
    lower bound of 0.0007 above 0 is within 2 Monte Carlo standard errors (0.0014) and one of 0.002 is not."""
    claim = Claim("A beats B", "Table 3", 0.05, Rule.above(0.0), **PAPER)
    assert verdict.monte_carlo_fragile(claim.rule, 0.032, 0.0007, 0.0633, 1000)
    assert not verdict.monte_carlo_fragile(claim.rule, 0.032, 0.002, 0.062, 1000)
    assert not verdict.monte_carlo_fragile(claim.rule, 0.032, 0.0007, 0.0633, 10**7)  # many resamples: robust
    fragile = judge(claim, 0.032, (0.0007, 0.0633), test="t", resamples=1000)
    assert fragile["decision"] == "inconclusive" and "Monte Carlo error" in fragile["why"]
    assert judge(claim, 0.032, (0.002, 0.062), test="t", resamples=1000)["decision"] == "held"
    assert judge(claim, 0.032, (0.0007, 0.0633), test="t")["decision"] == "held"  # no resamples given: as before
    lost = judge(claim, -0.03, (-0.06, -0.0005), test="t", resamples=1000, why=unexplained("an ablation"))
    assert lost["decision"] == "inconclusive"  # an upper bound just under the threshold, the same way


def test_a_rows_cause_at_a_glance_is_cut_at_a_word_and_names_what_would_decide_it() -> None:
    """The short why: a long cause's first clause cut at a word with an ellipsis (not a bare 'finding'), and an
    inconclusive row's 'how much more' with the thing its narrowing names (timing repeats, not always data)."""
    long = "finding: DeepGini's picks come from fewer source images than the rival's, and the ablation that caps them"
    row = {"decision": "not held", "why": long + "; more text"}
    short = verdict._cause(row)
    assert short.endswith("… (more)") and len(short) <= verdict.SHORT_WHY
    assert long.startswith(short.removesuffix("… (more)")) and short.startswith("finding: DeepGini's picks")
    assert not short.removesuffix("… (more)").endswith(" ")
    assert verdict._cause({"decision": "not held", "why": "setup: narrow; rest"}) == "setup: narrow"
    # a skewed interval: the side that crosses the threshold must shrink (below a margin: the upper side)
    skewed = verdict.narrowing(Rule.at_most(1.5, "leak"), 0.924, -0.867, 2.069, "canaries")
    assert skewed.startswith(f"to decide at this estimate (held): about {math.ceil((1.145 / 0.576) ** 2 * 10) / 10:g}×")
    assert round((1.145 / 0.576) ** 2, 1) == 4.0  # not (1.791 / 0.576)² ≈ 9.7, the lower side
    why = verdict.narrowing(Rule.above(0.0), 0.1, -0.05, 0.25, "timing repeats per method (and sizes)")
    assert (
        verdict._cause({"decision": "inconclusive", "why": why})
        == "to decide (held): about 2.3× the timing repeats per method"
    )
    assert verdict._cause({"decision": "held", "why": ""}) == ""  # judge gives a held row no cause
    # a caveat a chapter (or a built-in control's note) attached to a held row shows, as a cause would
    assert verdict._cause({"decision": "held", "why": "held, but MD fails on 11; rest"}) == "held, but MD fails on 11"


def test_the_count_line_above_the_verdict_counts_the_papers_claims_and_our_checks_apart() -> None:
    paper = Claim("A beats B", "Table 3", "0.91 vs 0.88", Rule.above(0.0, "AUROC(A) − AUROC(B)"), paper_estimate=0.03,
                  **PAPER)  # fmt: skip
    mine = Claim("C beats D", "ours", "—", Rule.above(0.0), ours=True)
    rows = [
        judge(paper, 0.05, (0.01, 0.09), test="t"),
        judge(paper, -0.05, (-0.09, -0.01), test="t", why=("setup", "small"), measured_by="contamination_ablation"),
        judge(mine, 0.05, (0.01, 0.09), test="t"),
        judge(mine, 0.05, (-0.01, 0.09), test="t"),
        judge(mine, 0.05, (-0.01, 0.09), test="t"),
    ]
    line = verdict.count_line(rows)
    assert line.startswith("Of 2 claims of the paper: 1 held, 1 not held")
    assert (
        "not held, for example: A beats B (AUROC(A) − AUROC(B): ours -0.05 [-0.09, -0.01], paper 0.03; in the paper's "
        "regime, cause: setup)" in line
    )
    assert line.endswith("Our 3 own checks: 1 held, 2 inconclusive.")
    assert verdict.count_line(rows[:2]).endswith("cause: setup).")  # no checks of ours: no second sentence


def test_the_count_line_counts_a_follow_up_papers_claims_apart_and_prefers_a_paper_regime_example() -> None:
    paper = Claim("A beats B", "Table 3", "0.91 vs 0.88", Rule.above(0.0, "AUROC(A) − AUROC(B)"), paper_estimate=0.03,
                  **PAPER)  # fmt: skip
    later = replace(paper, claim="E matches A", follow_up="Weiss & Tonella 2022")
    rows = [
        judge(paper, 0.05, (0.01, 0.09), test="t"),
        judge(later, -0.05, (-0.09, -0.01), test="t", why=("setup", "small"), measured_by="contamination_ablation"),
    ]
    line = verdict.count_line(rows)
    # the follow-up's not-held row is not the paper's: the paper's sentence has no example
    assert line.startswith("Of 1 claims of the paper: 1 held (1 in the paper's regime). Of 1 claims of Weiss")
    assert "Of 1 claims of Weiss & Tonella 2022: 1 not held (1 in the paper's regime); not held, for example: E" in line
    # two rows not held: the one in the paper's regime is the example, though it comes second
    first = {**rows[1], "follow_up": "", "claim": "F beats B", "regime": "miniature: a smaller set"}
    second = {**rows[1], "follow_up": "", "claim": "G beats B", "regime": "paper: the same set"}
    line = verdict.count_line([first, second])
    assert "(1 in the paper's regime); not held, for example: G beats B" in line
    # two rows not held in one regime: one whose cause is not our setup is the example, though it comes second
    found = {**second, "claim": "H beats B", "why": "finding: B is stronger here"}
    assert "not held, for example: H beats B" in verdict.count_line([second, found])
    assert "not held, for example: G beats B" in verdict.count_line([second, {**found, "why": "setup: small"}])
