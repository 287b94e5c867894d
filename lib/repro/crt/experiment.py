"""The CRT chapter's experiment: its parameters, every run trained and scored, the tidy tables and the verdict rows."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from .. import cache, stats
from ..params import Param
from ..verdict import Claim, judge, unexplained
from . import accounting, canary, gpt, language_model, redaction
from . import arm as arm_module
from .claims import NAMES
from .runs import (
    ATTACKS,
    CANARY_DIGITS,
    CONTROL,
    DELTA,
    GROUP,
    MODELS,
    N_CANARIES,
    PERPLEXITIES,
    STEPPERS,
    Data,
    Encoder,
    Run,
    Trainer,
    attack_designs,
    canary_copies_missed,
    canary_scores,
    mia_scores,
    nll_of,
    planned_runs,
    test_nll,
)

BENCH_DIGITS = 4  # digits of the candidate space the naive enumeration runs on in full
AMP_EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)  # ε′ of the Fig. 6 curves
GPT_HEADS = 2  # attention heads of the GPT-2 trained from scratch
MULTIWOZ_HUB = "pfb30/multi_woz_v22"


def _gammas(default: list[float], smoke: list[float], paper: list[float], what: str) -> Param:
    """A list-of-γ parameter."""
    return Param(list, default, smoke=smoke, paper=paper, items=float, low=0.0, high=0.5, help=what)


SPEC = {
    "seed": Param(int, 0, low=0, high=2**32 - 1, help="data seed; the i-th model of a run uses seed + i"),
    "n_seeds": Param(int, 3, smoke=1, low=1, high=10, help="models trained per (model, trainer, γ)"),
    "n_dialogues": Param(int, 150, smoke=40, paper=10_000, low=20, high=100_000, help="training dialogues"),
    "n_test": Param(int, 100, smoke=20, paper=1000, low=10, high=10_000, help="test dialogues"),
    "canary_copies": Param(int, 20, smoke=5, low=1, high=100, help="insertions of each canary"),
    "gammas": _gammas([0.0, 0.1, 0.3, 0.5], [0.0, 0.1], [0.0, 0.1, 0.2, 0.3, 0.4, 0.5], "γ values of the LSTM"),
    "gpt_gammas": _gammas([0.0, 0.1, 0.5], [0.0, 0.1], [0.0, 0.1, 0.2, 0.3, 0.4, 0.5], "γ values of GPT-2"),
    "emb": Param(int, 64, smoke=16, paper=200, low=4, high=1024, help="LSTM embedding size"),
    "hidden": Param(int, 64, smoke=16, paper=200, low=4, high=1024, help="LSTM hidden size"),
    "epochs": Param(int, 5, smoke=1, paper=50, low=1, high=200, help="LSTM epochs (paper: 50)"),
    "crt_epochs": Param(int, 10, smoke=2, paper=100, low=1, high=400, help="CRT-LSTM epochs (paper: 100)"),
    "crt_batch": Param(int, 16, smoke=8, paper=10, low=1, high=1024, help="CRT-LSTM public batch (paper: 10)"),
    "lr": Param(float, 20.0, low=1e-4, high=100.0, help="LSTM SGD learning rate (paper: 20)"),
    "dp_lr": Param(float, 2.0, low=1e-4, high=100.0, help="LSTM DP-SGD learning rate"),
    "gpt_embd": Param(int, 64, smoke=32, low=8, high=1024, help="width of the GPT-2 trained from scratch"),
    "gpt_layers": Param(int, 2, smoke=1, low=1, high=12, help="its layers"),
    "gpt_epochs": Param(int, 4, smoke=1, paper=10, low=1, high=200, help="GPT-2 epochs, every trainer (paper: 10)"),
    "gpt_lr": Param(float, 5e-3, paper=5e-4, low=1e-6, high=1.0, help="GPT-2 Adam learning rate (paper: 5e-4)"),
    "gpt_dp_lr": Param(float, 1e-3, paper=5e-4, low=1e-6, high=1.0, help="GPT-2 DP-SGD Adam learning rate"),
    "target_epsilon": Param(float, 3.0, low=0.1, high=100.0, help="ε at δ = 8e-5 of every DP-SGD run"),
    "n_mia": Param(int, 300, smoke=40, paper=1000, low=20, high=10_000, help="member/look-alike pairs of the MIA"),
    "n_groups": Param(int, 100, smoke=10, paper=1000, low=2, high=10_000, help="groups of 20 per fold, group MIA"),
    "n_null": Param(int, 1000, smoke=100, low=20, high=100_000, help="draws of every attack's null"),
    "arm_source": Param(str, "local", paper="hub", choices=("local", "hub"), help="pretrained arm: packaged or Hub"),
    "arm_dialogues": Param(int, 150, smoke=6, paper=10_000, low=2, high=100_000, help="training dialogues of the arm"),
    "arm_epochs": Param(int, 2, smoke=1, paper=10, low=1, high=50, help="epochs of each pretrained-arm fine-tune"),
    "arm_test": Param(int, 600, smoke=20, paper=5000, low=10, high=100_000, help="test sentences of the arm"),
    "gpt_name": Param(str, "distilgpt2", help="Hub id of the pretrained GPT-2 (paper profile)"),
}


def consistent(p: dict) -> str | None:
    """Cross-parameter checks: GPT-2's heads divide its width; its γ values are among the LSTM's."""
    if p["gpt_embd"] % GPT_HEADS:
        return f"parameter 'gpt_embd': {p['gpt_embd']} is not a multiple of GPT-2's {GPT_HEADS} attention heads"
    if 0.0 not in p["gammas"] or 0.0 not in p["gpt_gammas"]:
        return "parameters 'gammas' and 'gpt_gammas' must include 0.0 (a perfect policy)"
    if len([g for g in p["gpt_gammas"] if g > 0]) == 0:
        return "parameter 'gpt_gammas': give at least one γ > 0"
    if not set(p["gpt_gammas"]) <= set(p["gammas"]):
        return f"parameter 'gpt_gammas': {p['gpt_gammas']} is not a subset of gammas {p['gammas']}"
    return None


def fig2_gamma(p: Any) -> float:
    """The γ of Fig. 2 and of the CRT controls: 0.1 as in the paper when run, else the smallest positive γ."""
    positive = sorted(g for g in p.gpt_gammas if g > 0)
    return 0.1 if 0.1 in positive else positive[0]


@dataclass
class Chapter:
    """Everything the notebook reads: data, encoders, the trained runs and their scores."""

    p: Any
    data: Data
    encoders: dict[str, Encoder]
    models: dict[Run, tuple[torch.nn.Module, dict]]
    scores: dict[Run, dict]

    @property
    def gamma2(self) -> float:
        """Fig. 2's γ."""
        return fig2_gamma(self.p)


def word_vocabulary(data: Data) -> language_model.Vocab:
    """The word vocabulary of the models trained from scratch: the words of the training text after π at γ = 0 has
    redacted it, every other word spelled in characters. No secret value enters it, and a member and its look-alike
    are written alike (both spelled, unless a value is also an ordinary word of the redacted text)."""
    redacted, _ = redaction.masked_corpus(data.sentences, data.policy(0.0))
    return language_model.Vocab.build_spelling(redacted, extra=[redaction.MASK])


def vocabularies(p: Any, data: Data) -> dict[str, Any]:
    """The LSTM's word vocabulary (`word_vocabulary`); GPT-2 shares it, except at `paper` (distilgpt2's BPE)."""
    vocab = word_vocabulary(data)
    if p.profile == "paper":
        return {"LSTM": vocab, "GPT-2": gpt.pretrained_gpt2(p.gpt_name, [redaction.MASK])[1]}
    return {"LSTM": vocab, "GPT-2": vocab}


def model_factory(p: Any, data: Data, vocabs: dict[str, Any]):
    """A function (model name, private) -> a freshly initialized (or freshly loaded pretrained) network."""
    every = data.sentences + data.test + [s for pair in data.pairs + data.address_pairs for s in pair]
    n_positions = max(len(vocabs["GPT-2"].encode(s.tokens)) for s in every)

    def new_model(name: str, private: bool) -> torch.nn.Module:
        """LSTM (DPLSTM when private) or GPT-2 (small from scratch, or distilgpt2 at paper)."""
        if name == "LSTM":
            return language_model.LSTMLM(len(vocabs["LSTM"]), p.emb, p.hidden, private=private)
        if p.profile == "paper":
            return gpt.pretrained_gpt2(p.gpt_name, [redaction.MASK])[0]
        return gpt.small_gpt2(vocabs["GPT-2"], n_positions, p.gpt_embd, p.gpt_layers, GPT_HEADS)

    return new_model


def score(p: Any, data: Data, run: Run, model: torch.nn.Module, enc: Encoder, designs: dict) -> dict:
    """Exposure with its null, the three MIAs with their nulls and the per-sentence test NLL of one model."""
    stepper, batch = STEPPERS[run.model]
    cand = canary_scores(stepper(model), enc, CANARY_DIGITS, batch)
    real = [canary.canary_index(c) for c in data.canaries]
    return {
        "exposure": canary.max_exposure(cand, real),
        "exposure_null": canary.exposure_null(cand, N_CANARIES, p.n_null, run.seed, exclude=real),
        "mia": mia_scores(model, enc, designs, p.n_null, run.seed),
        "nll": test_nll(model, enc),
    }


def run_all(p: Any, data: Data) -> Chapter:
    """Train (or load) every planned run and score it (scores cached beside the model)."""
    vocabs = vocabularies(p, data)
    encoders = {name: Encoder(data, vocabs[name]) for name in MODELS}
    trainer = Trainer(p, data, encoders, model_factory(p, data, vocabs))
    designs = attack_designs(data, p.n_groups, p.seed)
    models, scores = {}, {}
    for run in tqdm(planned_runs(p, fig2_gamma(p)), desc="runs"):
        models[run] = trainer(run)
        spec = {"model": trainer.spec(run), "n_null": p.n_null, "n_groups": p.n_groups, "n_mia": p.n_mia}
        path = cache.entry_path("crt", f"scores-{run.model}-{run.label}-s{run.seed}", spec, suffix=".pt")
        scores[run], _ = cache.file_entry(
            path,
            lambda tmp, run=run: torch.save(score(p, data, run, models[run][0], encoders[run.model], designs), tmp),
            lambda found: torch.load(found, weights_only=False),
        )
    return Chapter(p, data, encoders, models, scores)


# --- tables -------------------------------------------------------------------------------------------------


def pipeline_table(d: Data, p: Any) -> pd.DataFrame:
    """Per γ and dedup reading: π's recall and precision, sizes of D_pub / D_pri, canary copies π leaves."""
    rows = []
    gold = [np.array([label is not None for label in s.labels]) for s in d.sentences]
    for g in p.gammas:
        flags = [d.policy(g).flags(s) for s in d.sentences]
        tp = sum(int((f & t).sum()) for f, t in zip(flags, gold))
        missed = canary_copies_missed(d, g)
        for dedup in redaction.DEDUP_READINGS:
            split = d.split(g, dedup)
            rows.append(
                {
                    "gamma": g,
                    "dedup": dedup,
                    "recall": tp / max(sum(int(t.sum()) for t in gold), 1),
                    "precision": tp / max(sum(int(f.sum()) for f in flags), 1),
                    "sentences": len(d.sentences),
                    "duplicates": int(split.duplicate.sum()),
                    "d_pub": len(split.part(False)),
                    "d_pri": len(split.part(True)),
                    "d_pri_bare_mask": sum(t == [redaction.MASK] for t in split.part(True)),
                    "canary_copies_unredacted": float(missed.mean()),
                }
            )
    return pd.DataFrame(rows)


def sweep_runs(ch: Chapter, model: str) -> list[Run]:
    """The runs of the γ sweep of one model (CRT under Algorithm 1's masking; γ-free trainers)."""
    return [r for r in ch.models if r.model == model and r.dedup == "mask" and r.trainer not in (CONTROL,)]


def _per_gamma(ch: Chapter, model: str) -> dict[tuple[str, float], list[Run]]:
    """(trainer, γ) -> its runs over seeds; γ-free trainers appear at every γ of the model's sweep."""
    gammas = ch.p.gammas if model == "LSTM" else ch.p.gpt_gammas
    out: dict[tuple[str, float], list[Run]] = {}
    for r in sweep_runs(ch, model):
        for g in [r.gamma] if r.gamma is not None else gammas:
            out.setdefault((r.trainer, g), []).append(r)
    return out


def exposure_table(ch: Chapter) -> pd.DataFrame:
    """Seed-mean max exposure over the 10 canaries per (model, trainer, γ), with the 95 % band of its null (the
    seed-mean max exposure of 10 fake canaries drawn from the same scored candidates)."""
    rows = []
    for model in MODELS:
        for (trainer, g), runs in _per_gamma(ch, model).items():
            real = np.array([ch.scores[r]["exposure"] for r in runs])
            null = np.mean([ch.scores[r]["exposure_null"] for r in runs], axis=0)
            low, high = stats.null_band(null)
            rows.append(
                {
                    "model": model,
                    "trainer": trainer,
                    "gamma": g,
                    "seeds": len(runs),
                    "exposure": real.mean(),
                    "exposure_min": real.min(),
                    "exposure_max": real.max(),
                    "null_low": low,
                    "null_high": high,
                    "null_mean": null.mean(),
                }
            )
    return pd.DataFrame(rows)


def mia_table(ch: Chapter) -> pd.DataFrame:
    """Seed-mean accuracy of each MIA per (model, trainer, γ), with the 95 % band of its permutation null."""
    rows = []
    for model in MODELS:
        for (trainer, g), runs in _per_gamma(ch, model).items():
            for attack in ATTACKS:
                acc = np.array([ch.scores[r]["mia"][attack]["accuracy"] for r in runs])
                null = np.mean([ch.scores[r]["mia"][attack]["null"] for r in runs], axis=0)
                low, high = stats.null_band(null)
                rows.append(
                    {
                        "model": model,
                        "trainer": trainer,
                        "gamma": g,
                        "attack": attack,
                        "seeds": len(runs),
                        "pairs": len(ch.data.address_pairs if attack == "address" else ch.data.pairs),
                        "accuracy": acc.mean(),
                        "null_low": low,
                        "null_high": high,
                    }
                )
    return pd.DataFrame(rows)


def utility_runs(ch: Chapter) -> dict[tuple[str, str], list[Run]]:
    """(model, trainer label) -> runs over seeds at Fig. 2's γ (γ-free trainers and both CRT readings included)."""
    out: dict[tuple[str, str], list[Run]] = {}
    for r in ch.models:
        if r.gamma in (None, ch.gamma2):
            out.setdefault((r.model, r.label), []).append(r)
    return out


def perplexity(ch: Chapter, runs: list[Run], kind: str, versus: list[Run] | None = None) -> stats.Interval:
    """Seed-mean test perplexity of `runs` (or its ratio to `versus`, paired by seed) with a seeds-and-sentences
    bootstrap interval."""
    a = np.stack([nll_of(ch.scores[r]["nll"], kind)[0] for r in runs])
    counts = nll_of(ch.scores[runs[0]]["nll"], kind)[1]
    b = None if versus is None else np.stack([nll_of(ch.scores[r]["nll"], kind)[0] for r in versus])
    return stats.seeds_and_items_perplexity(a, counts, b, seed=ch.p.seed)


def utility_table(ch: Chapter) -> pd.DataFrame:
    """Per (model, trainer) at Fig. 2's γ: three test perplexities with intervals, ε, steps and training time."""
    rows = []
    for (model, label), runs in utility_runs(ch).items():
        info = [ch.models[r][1] for r in runs]
        row = {"model": model, "trainer": label, "gamma": runs[0].gamma, "seeds": len(runs)}
        for kind in PERPLEXITIES:
            iv = perplexity(ch, runs, kind)
            row |= {f"ppl_{kind}": iv.estimate, f"ppl_{kind}_low": iv.low, f"ppl_{kind}_high": iv.high}
        eps = [i["epsilon"] for i in info if i["epsilon"] is not None]
        row |= {
            "epsilon": float(np.mean(eps)) if eps else np.nan,
            "public_steps": info[0]["public_steps"],
            "private_steps": info[0]["private_steps"],
            "train_seconds": float(np.mean([i["train_seconds"] for i in info])),
        }
        rows.append(row)
    order = {t: i for i, t in enumerate(("non-private", CONTROL, "non-private + mask", "S-DP", "DPSGD", "CRT"))}
    frame = pd.DataFrame(rows)
    return frame.sort_values(["model", "trainer"], key=lambda c: c.map(order).fillna(9) if c.name == "trainer" else c)


def gap_table(ch: Chapter) -> pd.DataFrame:
    """CRT's test-NLL gap to non-private, in nats per test token, split into first token, secrets and ordinary
    tokens (seed means; shares of the total gap), under both dedup readings and for the D_pub-only control."""
    groups, rows = utility_runs(ch), []
    for model in MODELS:
        base = groups[model, "non-private"]
        n = ch.scores[base[0]]["nll"]["n_total"].sum()

        def mean_sum(runs: list[Run], part: str) -> float:
            """Seed mean of the NLL summed over the test set for one token category."""
            return float(np.mean([ch.scores[r]["nll"][part].sum() for r in runs]))

        for label in ("CRT", "CRT (SHA-1 removal)", CONTROL):
            if (model, label) not in groups:
                continue
            parts = {
                k: (mean_sum(groups[model, label], k) - mean_sum(base, k)) / n for k in ("first", "secret", "ordinary")
            }
            total = sum(parts.values())
            rows.append(
                {
                    "model": model,
                    "versus non-private": label,
                    "gap_nats_per_token": total,
                    **{f"gap_{k}": v for k, v in parts.items()},
                    **{f"share_{k}": v / total if total else np.nan for k, v in parts.items()},
                }
            )
    return pd.DataFrame(rows)


def history_table(ch: Chapter) -> pd.DataFrame:
    """Fig. 2 as the paper draws it: per epoch of one run (first seed), test perplexity against the ε spent so far:
    DPSGD, S-DP with a perfect policy (γ = 0) and CRT at Fig. 2's γ (confidentiality ε)."""
    rows = []
    first = ch.p.seed
    wanted = {("DPSGD", None): "DPSGD", ("S-DP", 0.0): "S-DP (perfect policy)", ("CRT", ch.gamma2): "CRT"}
    wanted |= {("non-private", None): "non-private"}
    for r, (_, info) in ch.models.items():
        if r.seed == first and r.dedup == "mask" and (r.trainer, r.gamma) in wanted:
            for h in info["history"]:
                rows.append({"model": r.model, "trainer": wanted[r.trainer, r.gamma], **h})
    return pd.DataFrame(rows)


def amplification_table(p: Any) -> pd.DataFrame:
    """Fig. 6: ε_conf against γ for each ε′ (autodp, q = 0.1, 100 steps, δ = 8e-5)."""
    gammas = [0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5]
    return pd.DataFrame(
        [r for e in sorted({1.0, *AMP_EPSILONS}) for r in accounting.amplification(e, gammas, 0.1, 100, DELTA)]
    )


def benchmark(ch: Chapter, model: str) -> list[dict]:
    """Naive enumeration against the prefix tree on one model's first non-private run: a measured and an
    extrapolated row."""
    run = next(r for r in ch.models if r.model == model and r.trainer == "non-private")
    net, enc, digits = ch.models[run][0], ch.encoders[model], BENCH_DIGITS
    context = enc.vocab.encode(["My", "ID", "is", ":"])[:-1]
    digit_ids = [enc.vocab.token_id(str(d)) for d in range(10)]
    stepper, batch = STEPPERS[model]
    t0 = time.perf_counter()
    naive = canary.brute_force_scores(
        lambda s: language_model.suffix_logprob(net, s, digits), context, digit_ids, digits
    )
    naive_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    small = canary_scores(stepper(net), enc, digits, batch)
    tree_small_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    canary_scores(stepper(net), enc, CANARY_DIGITS, batch)
    tree_full_s = time.perf_counter() - t0
    scale = 10 ** (CANARY_DIGITS - digits) * (len(context) + CANARY_DIGITS) / (len(context) + digits)
    return [
        {
            "model": model,
            "space": 10**digits,
            "naive_seconds": naive_s,
            "tree_seconds": tree_small_s,
            "ratio": naive_s / tree_small_s,
            "max_abs_score_diff": float(np.abs(naive - small).max()),
            "naive_measured": True,
        },
        {
            "model": model,
            "space": 10**CANARY_DIGITS,
            "naive_seconds": naive_s * scale,
            "tree_seconds": tree_full_s,
            "ratio": naive_s * scale / tree_full_s,
            "max_abs_score_diff": np.nan,
            "naive_measured": False,
        },
    ]


def benchmark_table(ch: Chapter) -> pd.DataFrame:
    """The enumeration benchmark of both models."""
    return pd.DataFrame([row for model in MODELS for row in benchmark(ch, model)])


# --- verdict rows ---------------------------------------------------------------------------------------------


def _trained(n: int) -> str:
    """What varies across the models behind a seed mean, for the test column."""
    if n == 1:
        return "1 trained model (training randomness not covered)"
    return f"mean over {n} trained models (seeds: initialization and batch order)"


def _band_row(claim: Claim, frame: pd.DataFrame, value: str, above: Any, below: Any = None) -> dict:
    """Judge a null-band claim over several γ: each γ is decided; the row shows the γ that decides the claim (the
    first that fails, else the one nearest its band's edge). `above(γ)` / `below(γ)` give the cause of a failure
    above / below the band."""
    decided = [(claim.rule.decide(r[value], r.null_low, r.null_high), r) for _, r in frame.iterrows()]
    failing = [r for d, r in decided if d != "held"]
    margin = (
        (lambda r: r[value] - r.null_high) if claim.rule.kind == "above_null" else (lambda r: r.null_high - r[value])
    )
    row = failing[0] if failing else min((r for _, r in decided), key=margin)
    gammas = ", ".join(f"{g:g}" for g in frame.gamma)
    test = f"95 % null band at γ = {row.gamma:g} (every γ in {{{gammas}}} decided), {_trained(int(row.seeds))}"
    cause = (below if row[value] < row.null_low and below else above)(float(row.gamma))
    return judge(claim, row[value], (row.null_low, row.null_high), test, why=cause)


def _exposure_frame(table: pd.DataFrame, model: str, trainer: str, gammas: str) -> pd.DataFrame:
    """Rows of the exposure (or MIA) table for one model and trainer at γ = 0, γ > 0 or every γ."""
    rows = table[(table.model == model) & (table.trainer == trainer)]
    if gammas == "zero":
        return rows[rows.gamma == 0.0]
    return rows[rows.gamma > 0] if gammas == "positive" else rows


def _missed_words(ch: Chapter, gamma: float) -> str:
    """How many of each canary's copies π leaves unredacted at γ, in words."""
    missed = canary_copies_missed(ch.data, gamma)
    return f"π leaves {missed.mean():.1f} of each canary's {ch.p.canary_copies} copies unredacted at γ = {gamma:g}"


def _mia_cause(ch: Chapter, model: str) -> Any:
    """The cause of a CRT MIA above its null band: unmeasured; more seeds at that γ would tell."""
    return lambda g: unexplained(f"more seeds of {NAMES[model]} CRT at γ = {g:g}")


def verdict_rows(
    ch: Chapter,
    planned: dict[str, Claim],
    exposure: pd.DataFrame,
    mia: pd.DataFrame,
    arm: dict | None,
    fig6: pd.DataFrame,
) -> list[dict]:
    """Every claim judged by its planned rule; a row not held names the table that measures its cause, or the
    ablation that would."""
    rows, groups = [], utility_runs(ch)
    chance = lambda g: unexplained(f"more seeds at γ = {g:g} (the band is two-sided, decided at every γ of the grid)")
    for model in MODELS:
        c = {k.split(":", 1)[1]: v for k, v in planned.items() if k.split(":", 1)[0] == model}
        ex = exposure[exposure.model == model]
        memorize = lambda g: unexplained("a sweep of the non-private model's epochs and canary copies")
        rows.append(_band_row(c["memorizes"], _exposure_frame(ex, model, "non-private", "zero"), "exposure", memorize))
        factorial = lambda g: unexplained(
            f"training CRT with D_pri dropped, or with plain SGD on D_pri, with and without dedup (γ = {g:g})"
        )
        rows.append(
            _band_row(c["crt_exposure"], _exposure_frame(ex, model, "CRT", "all"), "exposure", factorial, chance)
        )
        for t, short in (("non-private + mask", "mask"), ("S-DP", "sdp")):
            rows.append(_band_row(c[f"{short}_zero"], _exposure_frame(ex, model, t, "zero"), "exposure", chance))
            sweep = lambda g: unexplained(
                f"a sweep of the canary copies a non-private model sees, from 1 up to {ch.p.canary_copies} "
                f"({_missed_words(ch, g)})"
            )
            rows.append(_band_row(c[f"{short}_rise"], _exposure_frame(ex, model, t, "positive"), "exposure", sweep))
        m_rows = mia[mia.model == model]
        for attack in ("individual", "group"):
            frame = _exposure_frame(m_rows[m_rows.attack == attack], model, "CRT", "all")
            rows.append(_band_row(c[f"crt_{attack}"], frame, "accuracy", _mia_cause(ch, model), _mia_cause(ch, model)))
        for t, short in (("non-private + mask", "mask"), ("S-DP", "sdp")):
            frame = _exposure_frame(m_rows[m_rows.attack == "group"], model, t, "positive")
            power = lambda g: unexplained(
                f"the group design's power at the effect the individual attack shows on the same models "
                f"({ch.p.n_groups} groups of {GROUP} per fold from {len(ch.data.pairs)} pairs; the paper's 2,000 groups)"
            )
            rows.append(_band_row(c[f"{short}_group"], frame, "accuracy", power))
        rows += _utility_rows(ch, c, groups, model)
    if arm is not None:
        rows += _arm_rows(planned, arm, ch.p.seed)
    example = fig6[(fig6.epsilon_prime == 1.0) & (fig6.gamma == 0.1)].iloc[0]
    for key in ("fig6", "notebook"):
        rows.append(judge(planned[f"accounting:{key}"], example.epsilon_conf, stats.exact(example.epsilon_conf)))
    return rows


def utility_cause(close: stats.Interval, control: stats.Interval, removal: stats.Interval | None, table: str) -> Any:
    """The cause of CRT's perplexity not being close to non-private, measured by the dedup-reading ablation (SHA-1
    removal) and the D_pub-only control of `table`; unknown when neither explains it."""
    measured = f"a model trained on D_pub alone is at {control.estimate:.2f} [{control.low:.2f}, {control.high:.2f}]"
    if removal is not None:
        measured += f", CRT under SHA-1 removal at {removal.estimate:.2f} [{removal.low:.2f}, {removal.high:.2f}]"
    if removal is not None and removal.high < 1.2:
        return ("setup", f"Algorithm 1's masking of duplicates explains it: {measured}"), table
    if control.high < close.low:
        return (
            "setup",
            f"CRT does worse than D_pub alone, so its DP-SGD epochs on D_pri cost utility: {measured}",
        ), table
    if control.low <= 1.5 * close.estimate:
        return ("finding", f"CRT's perplexity is mostly its public part's: {measured}"), table
    ablation = f"CRT with its DP-SGD steps tuned on a validation split and trained to convergence ({measured})"
    return unexplained(ablation), ""


def _utility_rows(ch: Chapter, c: dict, groups: dict, model: str) -> list[dict]:
    """The two perplexity claims of one model; the dedup-reading and D_pub-only ablations (table `utility`) measure
    the cause of CRT's gap to non-private."""
    crt, base, dp = groups[model, "CRT"], groups[model, "non-private"], groups[model, "DPSGD"]
    close = perplexity(ch, crt, "non-secret", base)
    removal = perplexity(ch, groups[model, "CRT (SHA-1 removal)"], "non-secret", base)
    control = perplexity(ch, groups[model, CONTROL], "non-secret", base)
    cause, table = utility_cause(close, control, removal, "utility")
    versus = perplexity(ch, crt, "non-secret", dp)
    tuning = unexplained("each trainer's learning rate and clip tuned on a validation split, trained to convergence")
    return [
        judge(
            c["crt_close"], close.estimate, close, why=cause, measured_by=table, narrow_by="test sentences and seeds"
        ),
        judge(c["crt_vs_dpsgd"], versus.estimate, versus, why=tuning, narrow_by="test sentences and seeds"),
    ]


def _arm_rows(planned: dict[str, Claim], result: dict, seed: int) -> list[dict]:
    """The pretrained arm's two perplexity claims (one fine-tune per trainer); its D_pub-only control (table
    `pretrained_arm`) measures the cause of CRT's gap to non-private."""
    close = arm_module.perplexity(result, "CRT", "non-secret", "non-private", seed)
    control = arm_module.perplexity(result, CONTROL, "non-secret", "non-private", seed)
    cause, table = utility_cause(close, control, None, "pretrained_arm")
    versus = arm_module.perplexity(result, "CRT", "non-secret", "DPSGD", seed)
    tuning = unexplained("the fine-tunes' learning rates tuned on a validation split, trained to convergence")
    return [
        judge(
            planned["arm:crt_close"], close.estimate, close, why=cause, measured_by=table, narrow_by="test sentences"
        ),
        judge(planned["arm:crt_vs_dpsgd"], versus.estimate, versus, why=tuning, narrow_by="test sentences"),
    ]


# --- prose glued from the tables ----------------------------------------------------------------------------


def _span(values: pd.Series, digits: int = 1) -> str:
    """'a–b' of a series, or one value."""
    lo, hi = values.min(), values.max()
    return f"{lo:.{digits}f}" if round(lo, digits) == round(hi, digits) else f"{lo:.{digits}f}–{hi:.{digits}f}"


def exposure_words(exposure: pd.DataFrame, ch: Chapter) -> str:
    """What the exposure table says, per model."""
    out = []
    for model in MODELS:
        t = exposure[exposure.model == model]
        npv = t[(t.trainer == "non-private") & (t.gamma == 0)].iloc[0]
        crt = t[t.trainer == "CRT"]
        inside = int(((crt.exposure >= crt.null_low) & (crt.exposure <= crt.null_high)).sum())
        mask = t[(t.trainer == "non-private + mask") & (t.gamma > 0)]
        out.append(
            f"**{NAMES[model]}.** The non-private model reaches {npv.exposure:.1f} bits (null band up to "
            f"{npv.null_high:.1f}). CRT scores {_span(crt.exposure)} bits and lies inside its null band at "
            f"{inside} of {len(crt)} values of γ. Redaction alone scores {_span(mask.exposure)} bits for γ > 0, "
            f"against null bands that end at {_span(mask.null_high)}."
        )
    missed = canary_copies_missed(ch.data, ch.gamma2).mean()
    out.append(
        f"At γ = {ch.gamma2:g}, π leaves on average {missed:.1f} of each canary's {ch.p.canary_copies} copies "
        "unredacted, which bounds how much a redacting trainer can memorize."
    )
    return "\n\n".join(out)


def mia_words(mia: pd.DataFrame) -> str:
    """What the MIA table says: how many cells lie above their null band, per trainer."""
    above = mia.assign(above=mia.accuracy > mia.null_high).groupby(["model", "trainer"], sort=False).above
    parts = [f"{NAMES[m]} {t}: {int(v.sum())} of {len(v)}" for (m, t), v in above]
    widths = (mia.null_high - mia.null_low).groupby(mia.attack).mean()
    return (
        "Cells (attack × γ) above their null band: "
        + "; ".join(parts)
        + ". The null bands are wide at this scale: on average "
        + ", ".join(f"{w:.2f} for the {a} attack" for a, w in widths.items())
        + "."
    )


def gap_words(gap: pd.DataFrame, utility: pd.DataFrame) -> str:
    """The gap decomposition and the like-for-like perplexities, in words."""
    out = []
    for model in MODELS:
        g = gap[(gap.model == model) & (gap["versus non-private"] == "CRT")]
        u = utility[utility.model == model].set_index("trainer")
        if g.empty:
            continue
        g = g.iloc[0]
        out.append(
            f"**{NAMES[model]}.** CRT's raw gap to non-private is {g.gap_nats_per_token:.3f} nats per test token: "
            f"{g.share_first:.0%} from the first token, {g.share_secret:.0%} from secrets and "
            f"{g.share_ordinary:.0%} from ordinary tokens. On non-secret tokens CRT scores "
            f"{u.loc['CRT', 'ppl_non-secret']:.2f} against {u.loc['non-private', 'ppl_non-secret']:.2f} for the "
            f"non-private model, {u.loc['CRT (SHA-1 removal)', 'ppl_non-secret']:.2f} under SHA-1 removal and "
            f"{u.loc[CONTROL, 'ppl_non-secret']:.2f} for D_pub alone."
        )
    return "\n\n".join(out)


def multiwoz_table(p: Any) -> pd.DataFrame:
    """MultiWOZ 2.2's size from the Hub (paper profile)."""
    from datasets import load_dataset

    multiwoz = load_dataset(MULTIWOZ_HUB, split="train")
    return pd.DataFrame([{"dataset": MULTIWOZ_HUB, "dialogues": len(multiwoz)}])
