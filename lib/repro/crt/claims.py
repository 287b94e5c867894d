"""The CRT chapter's claim register: the paper's sentences (Zhao, Li, Wang, NAACL 2022), what each compares with,
the paper's own numbers, the regime each is tested in, and the rules fixed before any model is trained.

The paper's GPT rows are CRT-GPT, DPSGD-GPT and Non-private-GPT (with mask) only; it runs S-DP on the LSTM alone,
so the GPT-2 S-DP rows are checks of our own, as is the positive control (the plain non-private model memorizes).
Figs. 2-5 are plots: the paper gives numbers only for Fig. 6's example (ε 1.0 → 0.12 at γ = 0.1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..verdict import Claim, Regime, Rule
from .runs import MODELS

NAMES = {"LSTM": "LSTM", "GPT-2": "GPT-2 (from scratch)"}  # the models as the page names them (default profile)
ARM_NAME = "SmolLM2-135M (pretrained)"
PAPER_DIALOGUES, PAPER_COPIES = 10_000, 20  # CustomerSim dialogues; insertions of each canary (§5.1)

# The paper's sentences, as they appear in its text (the seed's extraction, hyphenation undone).
FIG3_CRT = (
    "it can be seen from Figure 3 that the canary exposures for CRT-LSTM and CRT-GPT are both close to 0 which thus "
    "guarantee excellent confidentiality"
)
FIG3_MASK_ZERO = (
    "Non-private-LSTM and Non-private-GPT with mask can also attain great protection at perfect screening policy "
    "accuracy (γ=0), …"
)
FIG3_MASK_RISE = "… nonetheless a rise in γ results in a sharp increase in the exposure."
FIG3_SDP = (
    "It should be noticed that S-DP-LSTM also has high exposure, similar to Non-private models, given any γ above 0."
)
FIG45_CRT = (
    "In Figure 4 and 5, we see that CRT-LSTM and CRT-GPT align well with the 0.5 horizontal line, suggesting that "
    "they are rather safe to the attack."
)
FIG45_RISE = (
    "The inference accuracy for Non-private-LSTM / Non-private-GPT / S-DP-LSTM, in contrast, surges above 0.5 as the "
    "false negative rate γ deviates from 0.0, indicating that these models become vulnerable to the attack …"
)
ABSTRACT_PPL = (
    "Our experimental results show that the models trained by CRT obtain almost the same perplexity while preserving "
    "strong confidentiality."
)
FIG2_GPT_CLOSE = (
    "Our model CRT-GPT's performance is close to Non-private-GPT in terms of PPL while preserving strong "
    "confidentiality."
)
CONTRIBUTION_5 = (
    "Our experiments on both MultiWOZ 2.2 and CustomerSim datasets show that different models trained by CRT can "
    "achieve the same or better perplexity than existing solutions …"
)
FIG6 = "For example, with (ϵ = 1.0, γ = 0.1), we reduce the ϵ to 0.12."

EXPOSURE = "the seed-mean max exposure over the 10 canaries"
CHANCE_EXPOSURE = "exposure 0: a canary the model never saw (read here as the null band of 10 unseen canaries)"


def model_name(p: Mapping[str, Any], model: str) -> str:
    """How a claim names the model: GPT-2 is distilgpt2 fine-tuned at `paper`, a small GPT-2 from scratch otherwise."""
    if model == "GPT-2" and p["profile"] == "paper":
        return f"GPT-2 ({p['gpt_name']}, pretrained)"
    return NAMES[model]


def scale(p: Mapping[str, Any], model: str, copies: bool = False) -> Regime:
    """The regime of a trained-model claim: corpus size, model and epochs (and, for exposure, the canary insertions);
    the paper's values from §5.1 and Appendix A.3."""
    n = p["n_dialogues"]
    if model == "LSTM":
        ours = f"{n:,} · LSTM {p['emb']}/{p['hidden']} · {p['epochs']}"
        paper = f"{PAPER_DIALOGUES:,} · LSTM 200/200 · 50"
        full = min(p["emb"], p["hidden"]) >= 200 and p["epochs"] >= 50
    else:
        pretrained = p["profile"] == "paper"
        net = f"{p['gpt_name']} pretrained" if pretrained else f"GPT-2 {p['gpt_layers']}×{p['gpt_embd']} from scratch"
        ours, paper = f"{n:,} · {net} · {p['gpt_epochs']}", f"{PAPER_DIALOGUES:,} · distilgpt2 pretrained · 10"
        full = pretrained and p["gpt_epochs"] >= 10
    variable = "dialogues · model · epochs"
    full = full and n >= PAPER_DIALOGUES
    if copies:
        variable += " · canary copies"
        ours, paper = f"{ours} · {p['canary_copies']}", f"{paper} · {PAPER_COPIES}"
        full = full and p["canary_copies"] == PAPER_COPIES
    tolerance = "the paper's corpus size, model size and epochs" if full else ""
    return Regime(variable, paper, ours, kind="paper" if full else "miniature", tolerance=tolerance)


def perfect_policy(what: str) -> Regime:
    """The regime of a γ = 0 claim: a perfect policy, whatever the scale."""
    return Regime("policy miss rate γ", 0.0, 0.0, kind="paper", tolerance=what)


def _model_claims(p: Mapping[str, Any], model: str) -> dict[str, Claim]:
    """The claims of one model trained from scratch (or distilgpt2 at `paper`), keyed by claim id."""
    m, lstm = model_name(p, model), model == "LSTM"
    exposure_scale, attack_scale = scale(p, model, copies=True), scale(p, model)
    out = {
        "memorizes": Claim(
            f"{m}: the non-private model memorizes the canaries (positive control of the exposure test)",
            "Fig. 3's premise; Selective DP's No-DP LSTM",
            "19.93 (rank 1, Selective DP)",
            Rule.above_null(EXPOSURE),
            ours=True,
        ),
        "crt_exposure": Claim(
            f"{m}: CRT's exposure stays at chance at every γ",
            "§5.3, Fig. 3 (plot only)",
            "≈ 0",
            Rule.in_null(f"{EXPOSURE}, at every γ"),
            quote=FIG3_CRT,
            comparator=CHANCE_EXPOSURE,
            regime=exposure_scale,
        ),
    }
    perfect = perfect_policy(
        "a perfect policy redacts every canary copy from what plain SGD sees, whatever the corpus or model size"
    )
    rising = "the same trainer at γ = 0, exposure ≈ 0 (read here as the null band of 10 unseen canaries)"
    mia_rising = "the 0.5 random-guess line at γ = 0 (read here as the attack's permutation null band)"
    for t, short, zero_quote, rise_quote, theirs in (
        ("non-private + mask", "mask", FIG3_MASK_ZERO, FIG3_MASK_RISE, True),
        ("S-DP", "sdp", FIG3_SDP, FIG3_SDP, lstm),  # the paper runs S-DP on the LSTM only
    ):
        for kind, what, fig, paper, rule, regime, quote, comparator in (
            ("zero", "exposure is at chance with a perfect policy (γ = 0)", "Fig. 3", "≈ 0", Rule.in_null(EXPOSURE),
             perfect, zero_quote, CHANCE_EXPOSURE),
            ("rise", "exposure rises as soon as γ > 0", "Fig. 3", "sharp rise",
             Rule.above_null(f"{EXPOSURE}, at every γ > 0"), exposure_scale, rise_quote, rising),
            ("group", "group MIA rises above chance for γ > 0", "Fig. 5", "rises",
             Rule.above_null("the group MIA accuracy, at every γ > 0"), attack_scale, FIG45_RISE, mia_rising),
        ):  # fmt: skip
            words = {"quote": quote, "comparator": comparator} if theirs else {"ours": True}
            if theirs and short == "sdp" and kind == "zero":  # the sentence is about γ > 0; γ = 0 is read off Fig. 3
                words["paraphrase"] = True
            source = f"§5.3, {fig} (plot only)"
            out[f"{short}_{kind}"] = Claim(f"{m}: {t} {what}", source, paper, rule, regime=regime, **words)
    for attack, fig in (("individual", "Fig. 4"), ("group", "Fig. 5")):
        out[f"crt_{attack}"] = Claim(
            f"{m}: CRT's {attack} MIA stays at chance at every γ",
            f"§5.3, {fig} (plot only)",
            "≈ 0.5",
            Rule.in_null(f"the {attack} MIA accuracy, at every γ"),
            quote=FIG45_CRT,
            comparator="the 0.5 random-guess line (read here as the attack's permutation null band)",
            regime=attack_scale,
        )
    out |= perplexity_claims(
        m,
        "Abstract; Fig. 2 (plot only)" if lstm else "§5.2, Fig. 2 (plot only)",
        ABSTRACT_PPL if lstm else FIG2_GPT_CLOSE,
        f"Non-private-{'LSTM' if lstm else 'GPT'}",
        f"DPSGD-{'LSTM' if lstm else 'GPT'}",
        attack_scale,
    )
    return out


def perplexity_claims(
    name: str, source: str, close_quote: str, non_private: str, dpsgd: str, regime: Regime
) -> dict[str, Claim]:
    """Fig. 2's two perplexity claims of one model: CRT close to non-private, CRT below DPSGD."""
    return {
        "crt_close": Claim(
            f"{name}: CRT's perplexity is close to non-private (within 20 %)",
            source,
            "close",
            Rule.below(1.2, "CRT / non-private perplexity on non-secret test tokens"),
            quote=close_quote,
            comparator=f"{non_private}, by test perplexity",
            regime=regime,
        ),
        "crt_vs_dpsgd": Claim(
            f"{name}: CRT's perplexity is below DPSGD's at the same DP-SGD ε",
            f"Contribution 5; {source}",
            "below",
            Rule.below(1.0, "CRT / DPSGD perplexity on non-secret test tokens"),
            quote=CONTRIBUTION_5,
            comparator=f"{dpsgd} (an existing solution), by test perplexity; CRT's confidentiality ε is the lower",
            regime=regime,
        ),
    }


def arm_regime(p: Mapping[str, Any]) -> Regime:
    """The pretrained arm's regime: a different pretrained model, one trainable block, the arm's corpus."""
    return Regime(
        "pretrained model · weights trained · dialogues · epochs",
        f"distilgpt2 · all · {PAPER_DIALOGUES:,} · 10",
        f"SmolLM2-135M · last block · {p['arm_dialogues']:,} · {p['arm_epochs']}",
    )


def claims(p: Mapping[str, Any]) -> dict[str, Claim]:
    """The chapter's claims with their rules, keyed 'model:claim id' ('arm:…', 'accounting:…'); planned before any
    number exists."""
    out = {f"{model}:{key}": claim for model in MODELS for key, claim in _model_claims(p, model).items()}
    arm = perplexity_claims(
        ARM_NAME, "§5.2, Fig. 2, CRT-GPT (plot only)", FIG2_GPT_CLOSE, "Non-private-GPT", "DPSGD-GPT", arm_regime(p)
    )
    out |= {f"arm:{key}": claim for key, claim in arm.items()}
    accounting = Regime(
        "accounting inputs",
        "q = 0.1, 100 steps, δ = 8e-5, ε′ = 1, γ = 0.1",
        "q = 0.1, 100 steps, δ = 8e-5, ε′ = 1, γ = 0.1",
        kind="paper",
        tolerance="the inputs of the authors' accounting notebook (autodp)",
    )
    out["accounting:fig6"] = Claim(
        "Fig. 6: DP-SGD at ε′ = 1 with γ = 0.1 gives ε_conf = 0.12",
        "§5.4, Fig. 6",
        0.12,
        Rule.matches(0.12, 0.005, "ε_conf (the paper rounds to two decimals)"),
        quote=FIG6,
        comparator="the DP-SGD ε′ = 1.0 it amplifies",
        regime=accounting,
        paper_values={"ε_conf at ε′ = 1.0, γ = 0.1": 0.12},
        paper_estimate=0.12,
    )
    out["accounting:notebook"] = Claim(
        "Authors' accounting notebook: ε_conf = 0.1158 at ε′ = 1, γ = 0.1 (σ 3.783, ε_dp 0.801)",
        "authors' accounting notebook",
        0.1158,
        Rule.matches(0.1158, 5e-4, "ε_conf"),
        ours=True,
    )
    return out
