"""The data-selection chapter's claim register: DSIR's and DoReMi's claims in the papers' words, what they compare
with, their own numbers, and the regime each is tested in here; one check of our own (the contamination link).

DSIR (Xie, Santurkar, Ma, Liang, NeurIPS 2023) measures data quality by downstream accuracy after pretraining on
the selection; this chapter measures the held-out target perplexity of a tiny LM trained from scratch on it, an
analogue. The rules' statistics are ratios "DSIR / comparator" of a loss (lower is better): perplexity here, the
downstream error rate (100 − accuracy) on the paper's numbers. DoReMi (Xie et al., NeurIPS 2023) reports per-domain
log-perplexities of 8B models (Table 3a, Fig. 4), which the rules use directly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..verdict import Claim, Regime, Rule

# DSIR Table 4: GLUE dev average of BERT-base pretrained from scratch on 51.2M examples selected from The Pile by
# each method (the abstract: DSIR "improves over random selection and heuristic filtering baselines by 2–2.5%")
DSIR_GLUE = {"random": 80.20, "heuristic classification": 79.85, "DSIR": 82.30, "top-k DSIR": 81.38}
DSIR_KL_R = {"Pearson r over 8 methods (NeurIPS)": 0.82, "Pearson r (arXiv v1)": 0.89}

# DoReMi Table 3a: worst-case and unweighted-average log-perplexity over the 22 Pile domains, 8B main models
DOREMI_LOG_PPL = {"worst, baseline": 1.71, "worst, DoReMi": 1.46, "average, baseline": 1.64, "average, DoReMi": 1.40}
# DoReMi Fig. 4, read off the bars (±0.05): change in log-perplexity (DoReMi − baseline, 8B) on the 13 domains
# whose weight DoReMi lowered (Table 1)
DOREMI_DOWNWEIGHTED = {
    "OpenSubtitles": -0.20,
    "Gutenberg (PG-19)": -0.35,
    "DM Mathematics": -0.20,
    "Wikipedia (en)": -0.35,
    "OpenWebText2": -0.25,
    "Github": -0.20,
    "FreeLaw": -0.15,
    "USPTO Backgrounds": -0.30,
    "Books3": -0.20,
    "PubMed Abstracts": -0.15,
    "StackExchange": -0.20,
    "ArXiv": -0.22,
    "PubMed Central": -0.15,
}
DOREMI_STEPS = {"DoReMi steps to the baseline's accuracy": 75_000, "baseline steps": 200_000}
# "highly correlates": the rule asks for a strong correlation, not merely a positive one (r = 0.5 is the usual
# threshold of a strong correlation; the paper's 0.82 clears it)
KL_STRONG = 0.5


def _below_one(
    claim: str, source: str, paper: str, what: str, values: dict[str, float], estimate: float, **kw: Any
) -> Claim:
    """A claim whose rule holds when the interval of the loss ratio `what` lies below 1; `estimate` is that ratio
    on the paper's own numbers `values`."""
    return Claim(claim, source, paper, Rule.below(1.0, what), paper_values=values, paper_estimate=estimate, **kw)


def _glue_claim(claim: str, versus: str, comparator: str, quote: str, regime: Regime, **kw: Any) -> Claim:
    """A DSIR comparison on Table 4's GLUE averages: the rule's loss ratio DSIR / `versus` is held-out target
    perplexity here and (100 − GLUE of DSIR) / (100 − GLUE of `versus`) on the paper's numbers."""
    ratio = (100 - DSIR_GLUE["DSIR"]) / (100 - DSIR_GLUE[versus])
    what = "the loss ratio DSIR / " + versus + " (ours: held-out target perplexity; paper: GLUE error)"
    paper = f"GLUE {DSIR_GLUE['DSIR']:.2f} vs {DSIR_GLUE[versus]:.2f}"
    values = {f"GLUE, {k}": DSIR_GLUE[k] for k in ("DSIR", versus)}
    source = "DSIR Table 4 (GLUE)" + ("" if kw.get("paraphrase") else "; abstract")
    return _below_one(
        claim, source, paper, what, values, ratio, quote=quote, comparator=comparator, regime=regime, **kw
    )


def _table3a_claim(kind: str, claim: str, source: str, what: str, quote: str, regime: Regime, control: str) -> Claim:
    """A DoReMi perplexity claim on Table 3a's `kind` (worst / average) log-perplexity, 280M → 8B against the
    baseline; the rule's ratio on the paper's numbers is exp(DoReMi − baseline)."""
    values = {k: v for k, v in DOREMI_LOG_PPL.items() if k.startswith(kind)}
    base, dore = values[f"{kind}, baseline"], values[f"{kind}, DoReMi"]
    paper = f"{kind} log-ppl {dore:.2f} vs {base:.2f}"
    estimate = math.exp(dore - base)
    return _below_one(
        claim,
        source,
        paper,
        what,
        values,
        estimate,
        quote=quote,
        comparator=DOREMI_BASELINE,
        regime=regime,
        units=HELD_OUT_UNITS,
        control=control,
    )


def _dsir_regime(p: Mapping[str, Any]) -> Regime:
    """Where the DSIR comparisons run: raw pool, target sample, model and quality measure (the paper's and ours)."""
    pool = p["docs_per_domain"] * (len(p["domains"]) - 1)
    sizes = " / ".join(f"{k:,}" for k in p["select_sizes"])
    return Regime(
        "raw pool, target sample, model, quality measure",
        "The Pile (1.6B examples of 128 words); target: Wikipedia + books; BERT-base from scratch on 51.2M "
        "selected; GLUE accuracy after fine-tuning",
        f"{p['chunk_words']}-word chunks of ≤ {pool:,} documents of the other domains (the target's own left out); "
        f"the chunks of {p['target_docs']:,} target documents; {p['lm_dim']}-wide {p['lm_layers']}-layer LLaMA from "
        f"scratch on {sizes} chunks' worth of tokens, {p['dsir_seeds']} selection draws and seeds; held-out target "
        "perplexity",
    )


def doremi_control(p: Mapping[str, Any]) -> str:
    """The positive control built into the last DoReMi run of the sweep (its noise domain), when the sweep also trains and scores
    the run without it (noise share 0), where the rows are then decided; else '' (decided where the sweep ends)."""
    share = p["noise_shares"][-1]
    return f"a noise domain of {share:.0%} uniform-noise tokens" if share > 0 and 0.0 in p["noise_shares"] else ""


def _doremi_regime(p: Mapping[str, Any]) -> Regime:
    """Where the DoReMi comparisons run: proxy and main model size, domains and their heterogeneity, steps."""
    share = 0.0 if doremi_control(p) else p["noise_shares"][-1]  # the share the rows are decided at
    noise = f" + a noise domain of natural share {share:g}" if share > 0 else ""
    fractions = "/".join(f"{x:g}" for x in p["doremi_fractions"])
    return Regime(
        "proxy → main model, domains, steps",
        "280M → 8B, 22 Pile domains of unequal quality, 200k steps",
        f"{p['lm_dim']}-wide → {p['main_dim']}-wide, {p['lm_layers']} layers, {len(p['domains'])} text domains of unequal size "
        f"(training documents kept: {fractions}){noise}, "
        f"{p['proxy_steps']:,} proxy and {p['doremi_steps']:,} main-model steps (noise shares swept: "
        f"{', '.join(f'{x:g}' for x in p['noise_shares'])})",
    )


# the held-out text of DSIR's targets and DoReMi's domains is cut into blocks; blocks come in articles (paragraphs of
# one squad_shifts article share its topic; a Pile document is its own), which the intervals resample
HELD_OUT_UNITS = "articles"

DOREMI_BASELINE = (
    "a main model of the same size and steps on the default domain weights (The Pile's own; uniform on the GLaM "
    "dataset); ours: the domains' natural token shares"
)


def claims(p: Mapping[str, Any]) -> dict[str, Claim]:
    """The chapter's claims with their rules, fixed before any number is computed."""
    from .experiment import METHODS  # every arm's selections enter the KL-reduction correlation

    methods = len(METHODS)
    dsir = _dsir_regime(p)
    doremi = _doremi_regime(p)
    control = doremi_control(p)
    abstract = (
        "When pretraining general-domain models (target is Wikipedia and books), DSIR improves over random "
        "selection and heuristic filtering baselines by 2–2.5% on the GLUE benchmark."
    )
    down_change = sum(DOREMI_DOWNWEIGHTED.values()) / len(DOREMI_DOWNWEIGHTED)
    return {
        "dsir_vs_random": _glue_claim(
            "DSIR selects better pretraining data than random selection (here: lower held-out target perplexity, "
            "the analogue of downstream accuracy)",
            "random",
            "random selection of the same number of examples from the raw pool",
            abstract,
            dsir,
            units=HELD_OUT_UNITS,
        ),
        "dsir_vs_heuristic": _glue_claim(
            "DSIR selects better pretraining data than heuristic classification (here: lower held-out target "
            "perplexity)",
            "heuristic classification",
            "heuristic classification as in GPT-3 / The Pile / PaLM: an n-gram classifier (fastText in the paper, "
            "cross-validated logistic regression here), keep a document if a Pareto(9) draw exceeds 1 − its score",
            abstract,
            dsir,
            units=HELD_OUT_UNITS,
        ),
        "kl_tracks": Claim(
            "KL reduction on hashed n-gram features highly correlates with the quality of the selected data (here: "
            "across methods' means within each target; KL on held-out target text)",
            "DSIR abstract (NeurIPS: r = 0.82; arXiv v1: 0.89)",
            "r = 0.82 over 8 methods",
            Rule.above(
                KL_STRONG, "the correlation of KL reduction with quality across methods (ours: with −log perplexity)"
            ),
            quote=(
                "Across 8 data selection methods (including expert selection), KL reduction on hashed n-gram "
                "features highly correlates with average downstream accuracy (r=0.82)."
            ),
            comparator="the average downstream accuracy of 8 selection methods (Pearson r across methods)",
            regime=Regime(
                "settings correlated, quality measure",
                "8 selection methods; average downstream accuracy",
                f"{methods} methods' means (decided without the oracle, shown with it: the paper's 8 include expert "
                "selection) over "
                f"{len(p['select_sizes'])} size(s) × {p['dsir_seeds']} draws, within each of {len(p['targets'])} "
                "target(s); held-out target perplexity",
            ),
            paper_values=DSIR_KL_R,
            paper_estimate=DSIR_KL_R["Pearson r over 8 methods (NeurIPS)"],
            units="methods",
            control="the oracle arm (the target domain's own chunks, which no selection from the pool can hold)",
        ),
        "resampling_vs_topk": _glue_claim(
            "Importance resampling (DSIR) selects better data than top-k DSIR, the same weights without the Gumbel "
            "noise (here: lower held-out target perplexity)",
            "top-k DSIR",
            "top-k DSIR: the same importance weights, the k largest taken deterministically (Table 4's row)",
            "DSIR resamples by its importance weights; selecting the top-k weights instead (top-k DSIR) scores "
            "lower on GLUE (82.30 vs 81.38 average)",
            dsir,
            paraphrase=True,
            units=HELD_OUT_UNITS,
            # top-k DSIR takes the largest weights, DSIR samples by them: in a pool barely larger than the selection
            # the two pick nearly the same documents, and no amount of data separates arms that share over 90 %
            overlap_max=0.9,
        ),
        "outliers": Claim(
            "The Min-K% chapter's outlier contaminants carry higher DSIR weights than its in-distribution ones "
            "(every set against one shared background, bootstrap by set)",
            "Min-K% Sec. 6 (Fig. 5a vs 5b), measured here",
            "“outliers” (not measured in either paper)",
            Rule.above(0.0, "outlier − in-distribution mean (over sets) log-weight per n-gram"),
            ours=True,
            units="sets",
        ),
        "outliers_plain": Claim(
            "The same with the prompt templates (“Question:”, “Answer:”, …) stripped from every item",
            "Min-K% Sec. 6 (Fig. 5a vs 5b), measured here",
            "“outliers” (not measured in either paper)",
            Rule.above(0.0, "outlier − in-distribution mean (over sets) log-weight per n-gram, templates stripped"),
            ours=True,
            units="sets",
        ),
        "worst": _table3a_claim(
            "worst",
            "DoReMi improves worst-domain perplexity",
            "DoReMi Sec. 4, Table 3a",
            "the worst-domain perplexity ratio DoReMi / baseline",
            "DoReMi improves the worst-case perplexity on all scales and improves 18 of 22 individual domain "
            "perplexities on average across scales",
            doremi,
            control,
        ),
        "average": _table3a_claim(
            "average",
            "DoReMi improves average perplexity",
            "DoReMi Sec. 3.2, Table 3a",
            "the geometric-mean perplexity ratio DoReMi / baseline",
            "We show that DoReMi significantly improves both the perplexity and downstream accuracy of 8B models "
            "trained on The Pile and the GLaM dataset over their respective baseline domain weights.",
            doremi,
            control,
        ),
        "downweighted": Claim(
            "DoReMi improves perplexity even on the domains it down-weights",
            "DoReMi abstract, Fig. 4 (values read off the bars), Table 1",
            "22/22 domains improve, 13 of them down-weighted",
            Rule.below(1.0, "the perplexity ratio DoReMi / baseline over the down-weighted domains"),
            quote="On The Pile, DoReMi improves perplexity across all domains, even when it downweights a domain.",
            comparator=DOREMI_BASELINE,
            regime=doremi,
            paper_values={f"log-ppl change, {k}": v for k, v in DOREMI_DOWNWEIGHTED.items()},
            paper_estimate=math.exp(down_change),
            units=HELD_OUT_UNITS,
            control=control,
        ),
        "speed": Claim(
            "DoReMi reaches the baseline in fewer steps (here: the baseline's final perplexity, not its downstream "
            "accuracy; counted in text tokens)",
            "DoReMi Sec. 3.2, Fig. 3",
            "75k of 200k steps (2.6× faster, downstream accuracy)",
            Rule.below(
                1.0,
                "text tokens to reach the baseline's final perplexity / text tokens of the baseline (a seed that "
                "never reaches it is censored, which leaves the interval's upper end unbounded)",
            ),
            quote=(
                "DoReMi improves the downstream accuracy by 6.5% points and achieves the baseline accuracy within "
                "75k steps — 2.6x faster than the baseline (200k steps)."
            ),
            comparator=DOREMI_BASELINE,
            regime=doremi,
            paper_values=DOREMI_STEPS,
            paper_estimate=DOREMI_STEPS["DoReMi steps to the baseline's accuracy"] / DOREMI_STEPS["baseline steps"],
            units="items",  # the seeds, independent; the held-out text is not resampled (a t interval over seeds)
            control=control,
        ),
    }
