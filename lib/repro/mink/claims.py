"""The Min-K% chapter's claim register: the paper's sentences (Shi et al., ICLR 2024, Section 6; Zhang et al. 2024
for Min-K%++), what each compares with, the paper's own numbers and the rule's statistic on them, and the regime:
the variable each effect depends on, the paper's value and ours, read from the resolved parameters."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..verdict import Claim, Criterion, Regime, Rule, with_measures
from . import corpora as C

INDIST_SHARE = 100 / 10_100  # Fig. 5b's largest corpus: 100 inserted news articles among 10k background ones
FACTOR = 3  # ours counts as the paper's regime when within this factor of the paper's sizes
ABOVE_ALL = "We find that MIN-K% PROB outperforms all baselines."  # Section 6, Main results (Table 3)
# Section 6, Main results, on Table 7 (its improvement is checked against Table 7's numbers by tpr_sentence_check)
TPR_SENTENCE = (
    "We report TPR@5%FPR in Table 7 in Appendix A, where MIN-K% PROB shows 12.2% improvement over the best baseline."
)
# The sampling unit of every paper claim here: the scored texts, resampled within set and class. Sets are fixed
# strata (the paper's four), not sampled. Caveat: the IMDB stand-in (SQuAD-shifts Amazon reviews, five per product)
# and the Fig. 5b news paragraphs (NYT, several per article) come in clusters whose labels the splits do not carry,
# so the rows that read them still resample their texts as independent.
UNITS = "items"


def _within(value: float) -> tuple[float, float]:
    """The paper's value within FACTOR either way: the range a criterion accepts."""
    return value / FACTOR, value * FACTOR


def _table3(method: str) -> dict[str, float]:
    """Table 3's AUC of one method on the four sets."""
    return {f"{method} {s}": v for s, v in zip(C.PAPER_SETS, C.PAPER_AUC[method])}


def _near(ours: float, paper: float) -> bool:
    """Ours within FACTOR of the paper's value."""
    return paper / FACTOR <= ours <= paper * FACTOR


def contamination_regime(p: Mapping[str, Any]) -> Regime:
    """Table 3's governing variable: how much background text surrounds the inserted items (contamination share)."""
    items = len(p["sets"]) * p["n_members"]
    paper_items = len(C.PAPER_SETS) * C.PAPER_MEMBERS
    near = _near(p["background_tokens"], C.PAPER_TOKENS) and _near(items, paper_items)
    return Regime(
        "contamination (inserted items, background tokens)",
        f"{paper_items} items in {C.PAPER_TOKENS / 1e6:g}M tokens, {100 * C.PAPER_CONTAMINATION:g} % contaminants",
        f"{items} items in {p['background_tokens']:,} background tokens",
        "paper" if near else "miniature",
        f"corpus and item count within a factor {FACTOR} of Section 6's" if near else "",
        criterion=Criterion(  # Section 6: 27M tokens, 0.1 % of them from the downstream sets
            variable_range=_within(C.PAPER_TOKENS),
            prop="contaminant share of the main corpus's tokens",
            prop_range=_within(C.PAPER_CONTAMINATION),
        ),
    )


def _size_regime(sizes: list[int], paper: list[int], what: str, share: float) -> Regime:
    """A corpus-size sweep: the smallest and largest background, against the paper's sizes; its criterion the
    largest background and its contaminant share (the paper's `share` at its largest size)."""
    near = _near(min(sizes), min(paper)) and _near(max(sizes), max(paper))
    return Regime(
        f"corpus sizes of {what} (background tokens)",
        f"{min(paper) / 1e6:g}M–{max(paper) / 1e6:g}M",
        f"{min(sizes):,}–{max(sizes):,}",
        "paper" if near else "miniature",
        f"smallest and largest size within a factor {FACTOR} of the paper's" if near else "",
        criterion=Criterion(
            variable_range=_within(max(paper)),
            prop=f"contaminant share of the largest {what} corpus's tokens",
            prop_range=_within(share),
        ),
    )


def _frequency_regime(p: Mapping[str, Any]) -> Regime:
    """Fig. 5c: the paper does not state its corpus; the other ablations use 0.17M–26M tokens."""
    near = p["freq_background"] >= C.PAPER_SIZES[2] / FACTOR
    return Regime(
        "background tokens of the repeated-insertion corpus",
        "not stated (RedPajama; the other ablations use 0.17M–26M)",
        f"{p['freq_background']:,}",
        "paper" if near else "miniature",
        f"within a factor {FACTOR} of the 2.6M tokens of Fig. 5a's middle size" if near else "",
        # the paper states no corpus for Fig. 5c: its other Section 6 corpora of 2.6M tokens or more hold from
        # 0.1 % contaminants (Table 3, 27M tokens) to about 1 % (Fig. 5b's largest, 100 of 10k articles)
        criterion=Criterion(
            variable_range=(C.PAPER_SIZES[2] / FACTOR, C.PAPER_SIZES[-1] * FACTOR),
            prop="contaminant share of the repeated-insertion corpus's tokens",
            prop_range=(C.PAPER_CONTAMINATION / FACTOR, INDIST_SHARE * FACTOR),
        ),
    )


def table8_sets(p: Mapping[str, Any]) -> list[str]:
    """The sets of Table 8 this run answers: the paper's names of its multiple-choice sets (BoolQ, CSQA)."""
    return [s for s in map(C.paper_name, p["sets"]) if s in C.PAPER_ACCURACY]


def table8_words(sets: list[str]) -> str:
    """Table 8 as the paper column shows it: the members' lead at both rates on `sets`, and the average column."""
    lo, hi = C.PAPER_RATES
    sets = [
        f"{C.SHORT.get(s, s)} lead {a['contaminated'][0] - a['clean'][0]:+.2f} → {a['contaminated'][1] - a['clean'][1]:+.2f}"
        for s, a in ((s, C.PAPER_ACCURACY[s]) for s in sets)
    ]
    avg = C.PAPER_ACCURACY_AVERAGE
    lead = [c - k for c, k in zip(avg["contaminated"], avg["clean"])]
    return (
        f"{lo} → {hi}: {'; '.join([*sets, ''])}average column clean {avg['clean'][0]:.2f} → {avg['clean'][1]:.2f}, contaminated "
        f"{avg['contaminated'][0]:.2f} → {avg['contaminated'][1]:.2f} (lead {lead[0]:+.2f} → {lead[1]:+.2f})"
    )


BASELINES = {  # Table 3's baselines the chapter scores at every profile, as the paper names them
    "PPL": "PPL (the LOSS attack), one of all baselines of Table 3",
    "Zlib": "Zlib, one of all baselines of Table 3",
    "Lowercase": "Lowercase, one of all baselines of Table 3",
}


PAPER_NONMEMBERS = 200  # Section 6: 200 held-out non-members per set
TABLE7_FPR = 0.05  # Table 7's TPR@5%FPR
LOW_FPR = 0.01  # the low-FPR row's target (ours; Table 7 reports 5 % only)


def reachable_fpr(target: float, n: int) -> tuple[int, float]:
    """What the authors' TPR@FPR rule (the last ROC threshold whose FPR is strictly below `target`;
    metrics.tpr_at_fpr) can reach with n non-members and no tied scores: k = ceil(target n) - 1 false positives, an
    FPR of k / n. 5 % of 32 is 1 false positive (3.1 %), of 200 9 (4.5 %); 1 % of 32 is none."""
    k = math.ceil(round(target * n, 9)) - 1
    return k, k / n


def fpr_label(target: float, n: int) -> str:
    """The FPR a TPR@`target` row reads with n non-members, as its label gives it: '3.1 % FPR (1 false positive in
    32 non-members)'."""
    k, fpr = reachable_fpr(target, n)
    fp = "no false positive" if k == 0 else f"{k} false positive{'s' if k > 1 else ''}"
    return f"{100 * fpr:.2g} % FPR ({fp} in {n} non-members)"


def _tables(n: int) -> dict[str, tuple]:
    """Section 6's two statistics, (paper values, source, claim suffix, rule statistic, the paper's sentence); the
    TPR rows labelled by the FPR that n non-members per set reach under Table 7's 5 %."""
    fpr = reachable_fpr(TABLE7_FPR, n)[1]
    return {
        "auc": (
            C.PAPER_AUC,
            "Section 6, Table 3 (quoted)",
            " (mean AUC over the sets)",
            "mean AUC over the sets",
            ABOVE_ALL,
        ),
        "tpr": (
            C.PAPER_TPR,
            f"Section 6 (quoted), Appendix A, Table 7 (TPR@5% FPR: {fpr_label(TABLE7_FPR, PAPER_NONMEMBERS)})",
            f" at TPR@{100 * fpr:.2g}% FPR (Table 7's {100 * TABLE7_FPR:g} % as {n} non-members reach it; mean over "
            "the sets)",
            f"mean TPR at {fpr_label(TABLE7_FPR, n)} over the sets",
            TPR_SENTENCE,
        ),
    }


def _outperforms(baseline: str, regime: Regime, comparator: str, table: str = "auc", n: int = 0) -> Claim:
    """Table 3 (AUC) or Table 7 (TPR at 5 % FPR, read at the FPR that n non-members per set reach): Min-K%
    outperforms one baseline, judged on the mean difference over the sets."""
    paper, source, suffix, statistic, quote = _tables(n or PAPER_NONMEMBERS)[table]
    return Claim(
        f"Min-K% outperforms {baseline}{suffix}",
        source,
        f"{round(float(np.mean(paper['Min-K%'])), 4):g} vs {round(float(np.mean(paper[baseline])), 4):g}",  # unrounded
        Rule.above(0.0, f"{statistic} of Min-K% (k = 20 %) − {baseline}"),
        quote=quote,
        comparator=comparator,
        regime=regime,
        units=UNITS,
        paper_values={f"{m} {s}": v for m in ("Min-K%", baseline) for s, v in zip(C.PAPER_SETS, paper[m])},
        paper_estimate=round(float(np.mean(np.subtract(paper["Min-K%"], paper[baseline]))), 4),
    )


def tpr_sentence_check() -> dict[str, Any]:
    """TPR_SENTENCE's improvement against Table 7's numbers: Min-K%'s mean TPR at 5 % FPR over the best baseline's
    (by mean), as points and as relative gains, on the per-set means and on the average column as printed (whole
    percents), and the sets whose own relative gain rounds to the sentence's percentage or where Min-K% is below."""
    claimed = float(re.search(r"([\d.]+)% improvement", TPR_SENTENCE).group(1)) / 100
    tpr = {m: 100 * np.asarray(v) for m, v in C.PAPER_TPR.items()}
    best = max((m for m in tpr if m != "Min-K%"), key=lambda m: tpr[m].mean())
    mk, base = tpr["Min-K%"], tpr[best]
    printed = float(f"{mk.mean():.0f}"), float(f"{base.mean():.0f}")
    per_set = {s: float(a / b - 1) for s, a, b in zip(C.PAPER_SETS, mk, base)}
    gains = {
        "points": float(mk.mean() - base.mean()) / 100,
        "relative, average column": printed[0] / printed[1] - 1,
        "relative, per-set means": float(mk.mean() / base.mean() - 1),
        "mean of the per-set relative gains": float(np.mean(list(per_set.values()))),
    }
    return {
        "claimed": claimed,
        "best": best,
        "means": (float(mk.mean()), float(base.mean())),
        "printed": printed,
        "gains": gains,
        "matches": [k for k, g in gains.items() if round(100 * g, 1) == round(100 * claimed, 1)],
        "sets_matching": [s for s, g in per_set.items() if round(100 * g, 1) == round(100 * claimed, 1)],
        "sets_below": [s for s, a, b in zip(C.PAPER_SETS, mk, base) if a < b],
        "values": {s: (float(a), float(b)) for s, a, b in zip(C.PAPER_SETS, mk, base)},
    }


def tpr_sentence_words() -> str:
    """The paper's TPR sentence checked against Table 7, in words, every number computed by tpr_sentence_check."""
    c = tpr_sentence_check()
    g, (mk, base), (pmk, pbase) = c["gains"], c["means"], c["printed"]
    v = {C.SHORT.get(s, s): pair for s, pair in c["values"].items()}
    claimed = f"{100 * c['claimed']:.1f} %"
    verdict = (
        f"The sentence's {claimed} matches the gain read as {' and as '.join(c['matches'])}."
        if c["matches"]
        else f"None of these is the sentence's {claimed}, so Table 7's averages do not support it."
    )
    alone = [
        f"{s} alone ({v[s][0]:.0f} against {v[s][1]:.0f}) gives {claimed}"
        for s in map(C.SHORT.get, c["sets_matching"], c["sets_matching"])
    ]
    below = [f"{s} ({v[s][0]:.0f} against {v[s][1]:.0f})" for s in map(C.SHORT.get, c["sets_below"], c["sets_below"])]
    return " ".join(
        [
            f"The paper's sentence on Table 7: “{TPR_SENTENCE}” Table 7's average column gives Min-K% {pmk:.0f} % "
            f"against {pbase:.0f} % for {c['best']}, its best baseline: {pmk - pbase:.0f} points, or "
            f"{100 * g['relative, average column']:.1f} % relative. From the per-set values ({mk:.2f} against "
            f"{base:.2f}) it is {100 * g['points']:.2f} points, or {100 * g['relative, per-set means']:.1f} %; the mean "
            f"of the per-set relative gains is {100 * g['mean of the per-set relative gains']:.1f} %.",
            verdict,
            *([f"{'; '.join(alone)}."] if alone else []),
            *([f"Min-K% is below {c['best']} on {', '.join(below)}."] if below else []),
        ]
    )


# The tables that may measure a row's cause, and the column of each that varies what the cause names: the background
# size of the Fig. 5a size runs (which moves the contaminant share), and the share trend table read from them.
MEASURES = {"sizes": "background_tokens", "share_trend": "corpus_tokens"}


def claims(p: Mapping[str, Any]) -> dict[str, Claim]:
    """The chapter's claims with their rules, fixed before any number is computed."""
    main = contamination_regime(p)
    return with_measures(_register(p, main), MEASURES)


def _register(p: Mapping[str, Any], main: Regime) -> dict[str, Claim]:
    """The claims before the register says which columns measure their causes."""
    return {
        "control": Claim(
            "Before continued pretraining, Min-K% cannot tell members from non-members (control)",
            "implied by the random split",
            "0.5",
            Rule.in_null("the base model's mean Min-K% AUC over the sets"),
            ours=True,
        ),
        "auc": Claim(
            "After continued pretraining, Min-K% detects the inserted items: mean AUC above chance",
            "abstract; Section 6, Table 3 (quoted)",
            "0.86 mean AUC (Table 3); 0.70 at Fig. 5a's 0.17M-token corpus",
            Rule.above(0.5, "the mean Min-K% AUC over the sets after continued pretraining"),
            quote="We apply Min-K% Prob to three real-world scenarios, copyrighted book detection, contaminated "
            "downstream example detection and privacy auditing of machine unlearning, and find it a consistently "
            "effective solution.",
            comparator="chance (AUC 0.5): the paper reports the AUC alone, with no base-model control",
            regime=main,
            units=UNITS,
            paper_values={
                **_table3("Min-K%"),
                **{f"Fig. 5a 0.17M {s}": v for s, v in C.PAPER_SMALLEST.items()},
            },
            paper_estimate=round(float(np.mean(C.PAPER_AUC["Min-K%"])), 4),
        ),
        "detects": Claim(
            "Continued pretraining on the items makes them detectable: Min-K% AUC rises over the base model",
            "Table 3 (no base-model control reported)",
            "0.86 mean AUC",
            Rule.above(0.0, "the mean gain in Min-K% AUC over the base model"),
            ours=True,
        ),
        **{f"vs_{b.lower()}": _outperforms(b, main, comparator) for b, comparator in BASELINES.items()},
        **{f"tpr_vs_{b.lower()}": _outperforms(b, main, c, "tpr", p["n_nonmembers"]) for b, c in BASELINES.items()},
        "tpr1_vs_ppl": Claim(
            f"Min-K% outperforms PPL at TPR@{100 * reachable_fpr(LOW_FPR, p['n_nonmembers'])[1]:.2g}% FPR "
            f"({100 * LOW_FPR:g} % as {p['n_nonmembers']} non-members reach it; mean over the sets)",
            f"ours: the paper reports TPR at {100 * TABLE7_FPR:g} % FPR only; a false positive below "
            f"{100 * LOW_FPR:g} % needs over {round(1 / LOW_FPR)} non-members",
            "not reported",
            Rule.above(
                0.0, f"mean TPR at {fpr_label(LOW_FPR, p['n_nonmembers'])} over the sets of Min-K% (k = 20 %) − PPL"
            ),
            ours=True,
        ),
        "lr": Claim(
            "A higher learning rate gives a higher AUC",
            "Section 6.2, Table 4 (quoted)",
            "1e-5 → 1e-4: 0.64 → 0.86 (mean of the four sets)",
            Rule.above(0.0, f"AUC at {p['learning_rate']:g} − AUC at {p['low_learning_rate']:g}"),
            quote="We find that raising the learning rate from 10−5 to 10−4 increases AUC scores significantly in "
            "all the downstream tasks",
            comparator="the same contaminated corpus trained at learning rate 1e-5",
            regime=main,
            units=UNITS,
            paper_values={f"{s} {lr}": v for s, pair in C.PAPER_LR.items() for lr, v in zip(("1e-5", "1e-4"), pair)},
            paper_estimate=round(float(np.mean([hi - lo for lo, hi in C.PAPER_LR.values()])), 4),
        ),
        "memorization": Claim(
            "A higher learning rate teaches the contaminated items, not the task (memorization)",
            "Section 6.2 (quoted); Appendix A, Table 8 (values as a reviewer read the appendix)",
            table8_words(table8_sets(p)),
            Rule.above(
                0.0,
                f"members' accuracy lead over non-members at {p['learning_rate']:g} − at "
                f"{p['low_learning_rate']:g}, mean over the multiple-choice sets",
            ),
            quote="A more in-depth analysis in Table 8 in Appendix A demonstrates that a higher learning rate leads "
            "to more memorization rather than generalization for these downstream tasks.",
            comparator="accuracy on the same sets' non-members, and the same corpus trained at learning rate 1e-5",
            regime=main,
            units=UNITS,
            paper_values={
                f"{s} {cls} {lr}": v
                for s in table8_sets(p)
                for cls, pair in C.PAPER_ACCURACY[s].items()
                for lr, v in zip(C.PAPER_RATES, pair)
            },
            # the rule's statistic on the sets this run answers (BoolQ and CSQA, or their stand-ins)
            paper_estimate=round(float(np.mean([C.paper_lead_change(C.PAPER_ACCURACY[s]) for s in sets])), 4)
            if (sets := table8_sets(p))
            else None,
        ),
        "occurrences": Claim(
            "More occurrences give a higher AUC",
            "Section 6.2, Fig. 5c (quoted; values read off the figure)",
            "rises to ≈ 1.0 by about 4 copies",
            Rule.above(0.0, "AUC of members seen ≥ 2 times − AUC of members seen once"),
            quote="Figure 5c shows that AUC scores positively correlates with the occurrence of examples.",
            comparator="examples that occur fewer times in the same corpus",
            regime=_frequency_regime(p),
            units=UNITS,
        ),
        "size_outlier": Claim(
            "Outlier contaminants: AUC rises with corpus size",
            "Section 6.2, Fig. 5a (quoted; values read off the figure: the reference notes confirm BoolQ and IMDB at "
            "0.17M and 26M only, the rest is a reviewer's reading)",
            "0.17M / 0.27M / 2.6M / 26M tokens: "
            + " / ".join(f"{np.mean(list(v.values())):.2f}" for v in C.PAPER_CURVE.values())
            + f" (mean of the four sets): {C.paper_size_slope():+.3f} per tenfold size",
            Rule.above(0.0, "Min-K% AUC change per tenfold corpus (least squares over the sizes), mean over the sets"),
            quote="Despite the theory suggesting greater difficulty with more pretraining data, Figure 5a shows "
            "AUC scores counterintuitively increase with pre-training dataset size.",
            comparator="the same 200 examples per set in smaller corpora (0.17M, 0.27M, 2.6M, 26M tokens)",
            regime=_size_regime(p["size_background"], C.PAPER_SIZES, "Fig. 5a", C.PAPER_CONTAMINATION),
            units=UNITS,
            paper_values={
                f"{C.SHORT.get(s, s)} {n / 1e6:g}M": v for n, values in C.PAPER_CURVE.items() for s, v in values.items()
            },
            # the rule's statistic on the paper's four sizes: the same slope, per tenfold size as the paper labels it
            paper_estimate=round(C.paper_size_slope(), 4),
        ),
        "size_indist": Claim(
            "In-distribution contaminants: AUC falls with corpus size",
            "Section 6.2, Fig. 5b (quoted; values read off the figure)",
            "≈ 0.64 → 0.52",
            Rule.below(0.0, "AUC at the largest − AUC at the smallest corpus"),
            quote="Figure 5b shows AUC scores decrease as the dataset size increases.",
            comparator="the same 100 news contaminants in smaller news corpora (0.77M, 3.9M, 7.6M tokens)",
            regime=_size_regime(p["indist_background"], C.PAPER_INDIST_SIZES, "Fig. 5b", INDIST_SHARE),
            units=UNITS,
            paper_values={f"{n / 1e6:g}M": v for n, v in zip(C.PAPER_INDIST_SIZES, C.PAPER_INDIST_AUC)},
            paper_estimate=round(C.PAPER_INDIST_AUC[-1] - C.PAPER_INDIST_AUC[0], 4),
        ),
        "minkpp": Claim(
            "Min-K%++ improves on Min-K% (Zhang et al.)",
            "Min-K%++ paper (Zhang et al. 2024), arXiv v1 abstract; WikiMIA-32 average",
            "0.783 vs 0.678",
            Rule.above(0.0, "mean AUC over the sets of Min-K%++ − Min-K% (k = 20 %)"),
            quote="Empirically, on the WikiMIA benchmark, Min-K%++ outperforms the SOTA Min-K% by 6.2% to 10.5% in "
            "detection AUROC averaged over five models.",
            comparator="Min-K% on the same texts and models",
            regime=Regime(
                "benchmark (how members and non-members differ)",
                "WikiMIA: pretraining members vs later events, five LLMs",
                f"items inserted by continued pretraining of {str(p['base_name']).rsplit('/', 1)[-1]}",
                "miniature",
            ),
            units=UNITS,
            paper_values={"Min-K%++ WikiMIA-32": 0.783, "Min-K% WikiMIA-32": 0.678},
            paper_estimate=round(0.783 - 0.678, 4),
        ),
    }
