"""repro.verdict: rules decide from intervals; rows have the shared columns; the front page shows every row."""

from __future__ import annotations

import math

import pytest

from repro import frontpage, stats
from repro.verdict import COLUMNS, Claim, Rule, judge


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


def test_rules_say_what_they_test_before_the_numbers() -> None:
    rule = Rule.above(0.0, "AUROC(RMD) − AUROC(MD)")
    assert rule.text.startswith("held if the 95 % interval of AUROC(RMD) − AUROC(MD) lies above 0")
    with pytest.raises(ValueError):
        Rule("sideways")
    with pytest.raises(ValueError):
        Rule.within(1.0, 0.0)


def test_judge_builds_a_row_with_every_column_and_a_cause_when_not_held() -> None:
    claim = Claim("A beats B", "Table 3 (quoted)", 0.05, Rule.above(0.0, "AUC(A) − AUC(B)"))
    held = judge(claim, 0.03, stats.Interval(0.03, 0.01, 0.05, "paired bootstrap over 400 items, 2,000 resamples"))
    assert tuple(held) == COLUMNS
    assert held["decision"] == "held" and held["why"] == "" and held["test"].startswith("paired bootstrap")
    unsure = judge(claim, 0.01, (-0.01, 0.03), test="DeLong test")
    assert unsure["decision"] == "inconclusive" and unsure["why"] == "unknown: no cause measured yet"
    lost = judge(claim, -0.05, (-0.08, -0.02), test="DeLong test", why=("setup", "our corpus is 50 % contaminants"))
    assert lost["decision"] == "not held" and lost["why"] == "setup: our corpus is 50 % contaminants"
    with pytest.raises(ValueError, match="cause must be one of"):
        judge(claim, -0.05, (-0.08, -0.02), test="DeLong test", why=("bug", "oops"))
    with pytest.raises(ValueError, match="name the test"):
        judge(claim, 0.03, (0.01, 0.05))


def test_front_page_counts_and_marks_rows_without_intervals() -> None:
    claim = Claim("A beats B", "Table 3", 0.05, Rule.above(0.0))
    new_rows = [judge(claim, 0.03, (0.01, 0.05), test="t"), judge(claim, 0.0, (-0.01, 0.01), test="t")]
    legacy = [{"claim": "old claim", "paper": "0.9", "ours": "0.8", "held": "partly"}]
    chapters = [
        ("metrics_by_hand", [frontpage.normalize(r) for r in new_rows]),
        ("deepgini_apfd", [frontpage.normalize(r) for r in legacy]),
    ]
    page = frontpage.render("smoke", chapters)
    assert "Built from the `smoke` profile" in page and "3 claims in 2 chapters" in page
    assert "<td>1</td><td>0</td><td>1</td>" in page  # metrics: 1 held, 0 not held, 1 inconclusive
    assert "0.03 [0.01, 0.05]" in page and 'class="repro-inconclusive"' in page
    assert "no interval yet" in page and 'href="executed/deepgini_apfd.html#verdict"' in page


def test_unexplained_names_the_straddle_or_the_missing_ablation() -> None:
    from repro.verdict import unexplained

    assert unexplained("inconclusive", "more seeds") == (
        "unknown",
        "the interval straddles the threshold; more seeds would narrow it",
    )
    assert unexplained("not held", "more seeds") == ("unknown", "no ablation here isolates the cause")
