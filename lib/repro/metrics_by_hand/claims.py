"""The metrics chapter's parameters (`SPEC`) and claim register (`claims`).

Three published worked examples (APFD, DeepGini, canary exposure) are the papers' claims, recomputed on the papers'
own inputs. The Min-K% sentences test the paper's hypothesis in a miniature regime. The 2-D Mahalanobis toy is a
check of our own: its data are drawn so that the failure Ren et al. describe happens, so it shows that our MD and RMD
behave as the mechanism predicts but cannot support or contradict the paper's claim.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from repro import metrics
from repro.params import Param
from repro.verdict import Claim, Criterion, Regime, Rule

SPEC = {
    "seed": Param(int, 0, low=0, high=2**32 - 1, help="random seed"),
    "toy_n": Param(int, 2000, smoke=200, low=20, high=200_000, help="points per class in the Mahalanobis toy"),
    "lm_source": Param(str, "local", paper="hub", choices=("local", "hub"), help="where the language model comes from"),
    "lm_name": Param(str, "HuggingFaceTB/SmolLM2-135M-Instruct", help="Hub id of the LM (lm_source='hub')"),
    "min_k": Param(float, 0.2, low=0.01, high=1.0, help="Min-K% fraction k"),
    "n_sentences": Param(int, 8, smoke=4, low=2, high=8, help="example sentences scored by the LM"),
}

# Rothermel et al.'s example: the faults each of five tests reveals, and the published APFD of three orders. The
# paper draws the example as a figure; this matrix is a reconstruction, not a quotation: it reproduces the three
# published APFD values and the published cumulative curve of A-B-C-D-E (1/5, 2/5, 7/10, 7/10, 1 of the faults).
FAULTS = {
    "A": [1, 5],
    "B": [1, 5, 6, 7],
    "C": [1, 2, 3, 4, 5, 6, 7],
    "D": [5],
    "E": [8, 9, 10],
}
APFD_ORDERS = {"A-B-C-D-E": 0.50, "E-D-C-B-A": 0.64, "C-E-B-A-D": 0.84}
APFD_CURVE = [0.2, 0.4, 0.7, 0.7, 1.0]  # published fraction of faults found after each test of A-B-C-D-E

# DeepGini's Sec. 3 example: softmax outputs of four tests over three classes, the published scores and order.
PROBS = {"A": [0.3, 0.5, 0.2], "B": [0.1, 0.1, 0.8], "C": [0.6, 0.3, 0.1], "D": [0.4, 0.4, 0.2]}
GINI = {"A": 0.62, "B": 0.34, "C": 0.54, "D": 0.64}
GINI_ORDER = "DACB"

# Canary exposure: a canary ranked first among |R| = 10^6 candidates, as printed.
CANDIDATES = 1_000_000
EXPOSURE = {1: 19.93}  # rank -> published exposure in bits

# The Min-K% sentences: famous passages (members of any web-scale corpus, presumably) alternate with sentences
# written for this book (non-members); a run scores the first `n_sentences`.
SENTENCES = [
    ("famous", "We hold these truths to be self-evident, that all men are created equal."),
    ("new", "The ferry to the lighthouse left late because a goat had wandered onto the ramp."),
    ("famous", "To be, or not to be, that is the question."),
    ("new", "Our reading group argued for an hour about whether the spreadsheet counted as a benchmark."),
    ("famous", "It was the best of times, it was the worst of times."),
    ("new", "The violin teacher keeps a jar of lemon drops for students who practise scales twice."),
    ("famous", "Four score and seven years ago our fathers brought forth on this continent a new nation."),
    ("new", "Rain on the greenhouse roof drowned out the tomato grower's radio interview."),
]

GAP = Rule.below(0.005, "the largest |ours − paper|")  # the examples print two decimals
EXAMPLE = "the paper's published worked example"


# A worked example is in the paper's regime when its inputs are the printed ones: the share of the printed inputs we
# use unchanged (the variable), and the same share read back from the table the run publishes (the defining
# property: what was computed is what was printed); both must be 1.
AS_PRINTED = Criterion((1.0, 1.0), "share of the printed inputs found unchanged in the run's table", (1.0, 1.0))


def _identical(what: str) -> Regime:
    """The regime of a worked example: the published inputs (`what`), recomputed unchanged."""
    return Regime(
        f"input ({what})", "the published example", "the same example", "paper", "identical inputs", AS_PRINTED
    )


def _lm(p: dict[str, Any]) -> str:
    """The language model that scores the sentences, as the regime names it."""
    return "SmolLM2-135M (local copy)" if p["lm_source"] == "local" else p["lm_name"]


def claims(p: dict[str, Any]) -> dict[str, Claim]:
    """The chapter's claims at resolved parameters `p`, in the order the notebook judges them."""
    kinds = [kind for kind, _ in SENTENCES[: p["n_sentences"]]]
    famous, new = kinds.count("famous"), kinds.count("new")
    return {
        "apfd": Claim(
            "APFD of the orders A-B-C-D-E, E-D-C-B-A and C-E-B-A-D is 0.50, 0.64 and 0.84",
            "Rothermel et al. ICSM'99, APFD worked example (five tests, ten faults)",
            "0.50 / 0.64 / 0.84",
            GAP,
            quote=(
                "On five tests A–E revealing ten faults, the order A-B-C-D-E has APFD 50 %, E-D-C-B-A 64 % "
                "and C-E-B-A-D 84 %"
            ),
            paraphrase=True,
            comparator=EXAMPLE,
            regime=Regime(
                "input (fault matrix, three orders)",
                "the published example (a figure)",
                "a fault matrix reconstructed to reproduce the published APFD values and curve (not quoted)",
                "paper",
                "the reconstruction reproduces every published number of the example; the APFD formula is what "
                "is tested (variable: the share of printed inputs used, 0 for a reconstruction)",
                Criterion((0.0, 1.0), "share of the published fault-detection curve the matrix reproduces", (1.0, 1.0)),
            ),
            paper_values=dict(APFD_ORDERS),
            paper_estimate=0.0,  # the largest gap when ours are the paper's own values
            units="none",
            statistic="APFD of A-B-C-D-E / E-D-C-B-A / C-E-B-A-D (decided on the largest |ours − paper|)",
        ),
        "apfd_auroc": Claim(
            "normalized APFD equals the AUROC of the score for detecting misclassified tests",
            "our identity (exact when the score has no ties; no paper states it)",
            "identity",
            Rule.below(1e-9, "the largest |normalized APFD − AUROC| over the draws without ties"),
            ours=True,  # explains why scores that rank misclassified tests alike (max-softmax, margin) match DeepGini
        ),
        "gini": Claim(
            "DeepGini scores 0.62, 0.34, 0.54, 0.64 and the priority order D, A, C, B",
            "Feng et al. ISSTA'20, Sec. 3 worked example (its Table 2)",
            "0.62 / 0.34 / 0.54 / 0.64; order D, A, C, B",
            GAP,
            quote=(
                "Tests A⟨.3,.5,.2⟩, B⟨.1,.1,.8⟩, C⟨.6,.3,.1⟩ and D⟨.4,.4,.2⟩ have ξ = 1 − Σ p² of 0.62, 0.34, "
                "0.54 and 0.64, so DeepGini runs them in the order D, A, C, B"
            ),
            paraphrase=True,
            comparator=EXAMPLE,
            regime=_identical("softmax outputs"),
            paper_values={**{f"ξ({t})": v for t, v in GINI.items()}, "order": ", ".join(GINI_ORDER)},
            paper_estimate=0.0,
            units="none",
            statistic="ξ of tests A / B / C / D and the order (decided on the largest |ours − paper|)",
        ),
        "exposure": Claim(
            "a canary ranked first among 10^6 candidates has exposure 19.93 bits",
            "Carlini et al. 2019 (definition: log2 |R| − log2 rank); value quoted from Zhao et al. NAACL'22, §5.1",
            19.93,
            Rule.matches(EXPOSURE[1], 0.005, "the exposure of a canary ranked 1st of 10^6 (bits)"),
            quote="For example, if a canary ranks 1st among 1M candidates, the canary exposure is 19.93.",
            comparator=EXAMPLE,
            regime=_identical("rank 1 of 10^6 candidates"),
            paper_values={f"rank {r} of 10^6": v for r, v in EXPOSURE.items()},
            paper_estimate=EXPOSURE[1],
            units="none",
        ),
        "rmd_toy": Claim(
            "in the 2-D toy, RMD separates near-OOD points that MD cannot",
            "our toy after Ren et al. 2021's analysis of why MD fails near-OOD (no number)",
            "RMD > MD",
            Rule.above(0.0, "AUROC(RMD) − AUROC(MD)"),
            quote=(
                "MD fails near-OOD when directions that do not separate the classes dominate the distance; "
                "subtracting the distance to one background Gaussian cancels them"
            ),
            paraphrase=True,
            comparator="MD on the same toy points",
            ours=True,  # the toy is drawn to have the failure: it checks our MD/RMD, not the paper's claim
        ),
        "min_k": Claim(
            "famous passages get a higher Min-K% score than sentences written for this book",
            "Shi et al. ICLR'24, abstract (the hypothesis behind Min-K% Prob; no number for these sentences)",
            "famous > new (direction; the paper reports AUC, e.g. WikiMIA 0.72 averaged over five models)",
            Rule.above(0.0, "mean Min-K%(famous) − mean Min-K%(new)"),
            quote=(
                "an unseen example is likely to contain a few outlier words with low probabilities under the LLM, "
                "while a seen example is less likely to have words with such low probabilities"
            ),
            comparator="unseen texts: WikiMIA events written after the model was trained",
            regime=Regime(
                "texts scored, model",
                "WikiMIA texts of 32 to 256 words, members and non-members, five LLMs",
                f"{famous} famous and {new} new sentences, membership presumed, {_lm(p)}",
                "miniature",
            ),
            units="items",  # each sentence scored on its own; no two share a source
        ),
    }


def apfd_auroc_draws(seed: int) -> pd.DataFrame:
    """Normalized APFD of the order by a score, beside that score's AUROC for the misclassified tests.

    Three random test sets with a continuous score (no ties) and one whose score is rounded to one decimal (ties).
    The order sorts by score, highest first, ties broken by position (a stable sort)."""
    rng = np.random.default_rng(seed)
    rows = []
    for n_tests, share, decimals in [(10, 0.3, None), (1_000, 0.1, None), (10_000, 0.02, None), (1_000, 0.1, 1)]:
        failed = np.zeros(n_tests, dtype=bool)
        failed[rng.choice(n_tests, max(1, round(share * n_tests)), replace=False)] = True
        score = rng.normal(size=n_tests) + 1.5 * failed
        if decimals is not None:
            score = np.round(score, decimals)
        order = np.argsort(-score, kind="stable")
        napfd, auc = metrics.apfd_normalized(failed[order]), metrics.auroc(failed.astype(int), score)
        rows.append(
            {
                "tests": n_tests,
                "misclassified": int(failed.sum()),
                "ties": decimals is not None,
                "normalized_apfd": round(napfd, 6),
                "auroc": round(auc, 6),
                "abs_gap": float(abs(napfd - auc)),
            }
        )
    return pd.DataFrame(rows)
