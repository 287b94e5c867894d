"""The conditional-LM OOD chapter's experiment: parameters, the splits, generation and embeddings through the cache,
the scores, and tidy tables (AUROC per OOD set, Kendall's τ with quality, quality-vs-abstention, the n-gram ladder)."""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from .. import cache, stats
from ..metrics import gaussian_distance
from ..params import Param
from . import clm, corpora
from . import selective as sel
from .corpora import Doc

SPEC = {
    "seed": Param(int, 0, low=0, high=2**32 - 1, help="random seed of the splits and the bootstrap"),
    "source": Param(str, "local", paper="hub", choices=("local", "hub"), help="BIG-bench files + SmolLM2, or the Hub"),
    "model_name": Param(str, "google/pegasus-xsum", help="the Hub's summarizer (source hub)"),
    "model_layers": Param(int, 0, smoke=2, low=0, high=64, help="first n decoder layers of SmolLM2 only (0 = all)"),
    "ood_sets": Param(
        list,
        list(corpora.LOCAL_SETS),
        smoke=["cnn_dm", "wikihow", "mlsum_de"],
        paper=list(corpora.HUB_SETS),
        items=str,
        item_choices=(*corpora.LOCAL_SETS, *corpora.HUB_SETS),
        help="OOD sets, nearest first (local: BIG-bench files; hub: the paper's)",
    ),
    "n_fit": Param(
        int, 200, smoke=24, paper=4096, low=8, high=200_000, help="in-domain pairs the Gaussians are fitted on"
    ),
    "n_background": Param(
        int,
        200,
        smoke=24,
        paper=4096,
        low=8,
        high=200_000,
        help="general-domain inputs (C4 stand-in); as many as n_fit, so both Gaussians rest on as many embeddings",
    ),
    "n_test": Param(int, 120, smoke=8, paper=1000, low=4, high=20_000, help="in-domain test articles"),
    "n_ood": Param(int, 30, smoke=6, paper=500, low=4, high=20_000, help="test inputs per OOD set"),
    "n_near": Param(
        int, 150, smoke=0, paper=0, low=0, high=20_000, help="test inputs of the near set, CNN/DailyMail (0: n_ood)"
    ),
    "tune_pairs": Param(
        int,
        480,
        smoke=8,
        paper=0,
        low=0,
        high=200_000,
        help="XSUM pairs (outside fit and test) SmolLM2's last blocks are fine-tuned on (0: zero-shot; hub: 0)",
    ),
    "tune_layers": Param(int, 4, smoke=1, low=1, high=64, help="last decoder blocks the fine-tune trains"),
    "tune_epochs": Param(int, 1, low=1, high=100, help="epochs of the fine-tune"),
    "tune_lr": Param(
        float,
        1e-3,
        low=1e-7,
        high=1.0,
        help="AdamW peak learning rate of the fine-tune, linear decay (chosen by held-out XSUM loss among 2e-4, 1e-3, 3e-3)",
    ),
    "n_zero_shot": Param(
        int,
        48,
        smoke=4,
        paper=0,
        low=0,
        high=20_000,
        help="XSUM and near-set test articles also summarized before the fine-tune (quality before / after)",
    ),
    "article_tokens": Param(int, 128, smoke=48, paper=512, low=8, high=4096, help="tokens kept per input article"),
    "summary_tokens": Param(int, 48, smoke=8, paper=64, low=2, high=512, help="new tokens per summary (greedy)"),
    "batch_size": Param(int, 32, smoke=8, low=1, high=512, help="articles per generation batch"),
    "covariance": Param(
        str, "ledoit-wolf", choices=("ledoit-wolf", "ml"), help="covariance estimator of each Gaussian"
    ),
    "ngram_orders": Param(list, [1, 2, 3, 4], smoke=[1, 2], items=int, low=1, high=8, help="n of the Jaccard overlaps"),
    "n_boot": Param(int, 500, smoke=100, low=50, high=20_000, help="bootstrap resamples per interval"),
}

SCORES = ("input_md", "input_rmd", "output_md", "output_rmd", "perplexity", "output_rmd+ppl")
LABELS = {
    "input_md": "input-MD",
    "input_rmd": "input-RMD",
    "output_md": "output-MD",
    "output_rmd": "output-RMD",
    "perplexity": "perplexity",
    "output_rmd+ppl": "output-RMD + perplexity",
}
QUALITY = {"rouge_l": "ROUGE-L (the paper's ROUGE)", "similarity": "MiniLM cosine (stand-in for BLEURT)"}
OOD_SCORE = "output_rmd"  # the paper's OOD score for summarization, the one combined with perplexity
# The output scores under each reading of which outputs the in-domain output Gaussian is fitted on. The rows use
# `generated` (output_md, output_rmd): the model's own summaries of the in-domain fit articles, the same kind of text
# as the test outputs and the background's. `reference` fits it on the fit articles' reference summaries
# (teacher-forced), which our first pass used; `seed` is the reading of our notes' table (MD_output on the references,
# MD_δ on the model's decoded in-domain outputs, output-RMD = MD_output − MD_δ, no general-domain background).
READINGS = {  # which summaries the in-domain output Gaussian is fitted on
    "output_md": "output-MD, generated (rows)",
    "output_rmd": "output-RMD, generated (rows)",
    "output_md_ref": "output-MD, references",
    "output_rmd_ref": "output-RMD, references",
    "output_rmd_seed": "notes: MD(ref) − MD(gen)",
}


def check(p: dict[str, Any]) -> str | None:
    """The OOD sets belong to the source; the background does not outgrow its pools."""
    allowed = corpora.sets(p["source"])
    wrong = [s for s in p["ood_sets"] if s not in allowed]
    if wrong:
        return f"ood_sets: {', '.join(wrong)} are not {p['source']} sets; choose from {', '.join(allowed)}"
    if not p["ood_sets"]:
        return "ood_sets: name at least one OOD set"
    if p.get("tune_pairs") and p["source"] == "hub":
        return f"tune_pairs: {p['tune_pairs']}, but the Hub's summarizer is already fine-tuned on XSUM; use 0"
    if p.get("n_background", p.get("n_fit")) != p.get("n_fit"):
        return (
            f"n_background: {p['n_background']} differs from n_fit {p['n_fit']}; both Gaussians are fitted on as many "
            "embeddings (the authors' pseudo-code)"
        )
    return None


def set_size(p: Any, name: str) -> int:
    """Test inputs drawn from an OOD set: n_near for the near set where given, else n_ood."""
    return p["n_near"] if name == corpora.NEAR[p["source"]] and p["n_near"] else p["n_ood"]


def check_sizes(p: dict[str, Any]) -> str | None:
    """Local runs: the sizes fit the BIG-bench files (XSUM for n_fit + n_test, each OOD set for n_ood or n_near, the
    background's tasks for n_background)."""
    if p["source"] != "local" or check(p):
        return None
    xsum = len(corpora.load(corpora.IN_DOMAIN))
    if p["n_fit"] + p["n_test"] + p["tune_pairs"] > xsum:
        return (
            f"n_fit + n_test + tune_pairs: {p['n_fit']} + {p['n_test']} + {p['tune_pairs']} exceeds the {xsum} XSUM "
            "articles"
        )
    near = set_size(p, corpora.NEAR["local"]) if corpora.NEAR["local"] in p["ood_sets"] else p["n_test"]
    if p["n_zero_shot"] > min(p["n_test"], near):
        return f"n_zero_shot: {p['n_zero_shot']} exceeds n_test ({p['n_test']}) or the near set's size ({near})"
    for s in p["ood_sets"]:
        n, have = set_size(p, s), len(corpora.load(s))
        if n > have:
            name = "n_near" if n == p["n_near"] and s == corpora.NEAR["local"] else "n_ood"
            return f"{name}: {n} exceeds the {have} documents of {s}"
    left = sum(len(docs) for docs in corpora.background_pool().values())
    if p["n_background"] > left:
        return f"n_background: {p['n_background']} exceeds the {left} documents of the background's BIG-bench tasks"
    return None


CHECKS = (check, check_sizes)


@dataclass
class Split:
    """Every text of the run: in-domain fit and test, the background, and each OOD set's test inputs."""

    fit: list[Doc]
    test_in: list[Doc]
    background: list[Doc]
    ood: dict[str, list[Doc]]
    tune: list[Doc] = field(default_factory=list)  # the fine-tune's XSUM pairs (local only)

    @property
    def test_sets(self) -> dict[str, list[Doc]]:
        """In-domain test first, then the OOD sets."""
        return {corpora.IN_DOMAIN: self.test_in, **self.ood}


def split(p: Any) -> Split:
    """Draw the run's texts with `seed`. Local: XSUM fit and test are disjoint draws of one pool, each OOD set's
    test inputs a draw of its file, the background a round-robin draw over the background's BIG-bench tasks (no
    OOD set's domain). Hub: XSUM train / test splits, each OOD set's test split, C4 validation as the
    background."""
    if p.source == "hub":
        fit = corpora.load(corpora.IN_DOMAIN, "hub", "train", p.n_fit * 2)[: p.n_fit]
        test_in = corpora.load(corpora.IN_DOMAIN, "hub", "test", p.n_test * 2)[: p.n_test]
        sizes = {s: set_size(p, s) for s in p.ood_sets}
        ood = {
            s: corpora.load(s, "hub", corpora.HUB_TEST_SPLIT.get(s, "test"), sizes[s] * 2)[: sizes[s]]
            for s in p.ood_sets
        }
        background = corpora.load("c4", "hub", limit=p.n_background * 2)[: p.n_background]
        _need(fit, p.n_fit, "n_fit")
        _need(test_in, p.n_test, "n_test")
        _need(background, p.n_background, "n_background")
        for s, docs in ood.items():
            _need(docs, sizes[s], f"n_ood ({s})")
        return Split(fit, test_in, background, ood)
    pool = corpora.load(corpora.IN_DOMAIN)
    fit, rest = corpora.take(pool, p.n_fit, p.seed, "n_fit (XSUM)")
    test_in, rest = corpora.take(rest, p.n_test, p.seed, "n_test (XSUM after n_fit)")
    tune = (
        corpora.take(rest, p.tune_pairs, p.seed, "tune_pairs (XSUM after n_fit and n_test)")[0] if p.tune_pairs else []
    )
    ood = {s: corpora.take(corpora.load(s), set_size(p, s), p.seed, f"n_ood ({s})")[0] for s in p.ood_sets}
    return Split(fit, test_in, corpora.background(p.n_background, p.seed), ood, tune)


def _need(docs: Sequence[Doc], n: int, name: str) -> None:
    """One-line error when a Hub set is smaller than asked."""
    if len(docs) < n:
        raise ValueError(f"{name}: asked for {n} documents, the set has {len(docs)}")


# ------------------------------------------------------------------------------------------------- model + cache


def load_model(p: Any) -> tuple[str, Any, Any]:
    """(path or Hub id, tokenizer, model): SmolLM2-135M-Instruct (its first `model_layers` layers at smoke), or the
    Hub's encoder-decoder summarizer."""
    import sys

    import torch
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer
    from transformers.utils import logging

    from ..pretrained import smollm2_path, truncated_copy

    if not sys.stderr.isatty():
        logging.disable_progress_bar()  # no weight-loading bars in a saved notebook

    if p.source == "hub":
        where, kind = p.model_name, AutoModelForSeq2SeqLM
    else:
        where, kind = str(smollm2_path()), AutoModelForCausalLM
        if p.model_layers:
            where = str(truncated_copy(Path(where), p.model_layers))
    tokenizer = AutoTokenizer.from_pretrained(where)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = kind.from_pretrained(where, dtype=torch.float32).eval()
    return where, tokenizer, model


def _model_key(where: str, model: Any) -> list[Any]:
    """What determines a model's outputs here: where it came from, its config, the library versions."""
    import torch
    import transformers

    return [where, model.config.to_json_string(), torch.__version__, transformers.__version__]


def cached_outputs(
    kind: str, key: list[Any], docs: Sequence[Doc], build: Callable[[], clm.Outputs]
) -> tuple[clm.Outputs, bool]:
    """Generations / embeddings of `docs` through repro.cache, keyed by the model, the texts and the budgets."""
    path = cache.entry_path("clm_ood", kind, *key, [d.text for d in docs], [d.reference for d in docs], suffix=".npz")
    return cache.file_entry(path, lambda tmp: build().save(tmp), clm.Outputs.load)


@dataclass
class Run:
    """What the model produced: the fit set's reference embeddings (teacher-forced) and generations, the
    background's and every test set's generations."""

    fit: clm.Outputs
    fit_generated: clm.Outputs
    background: clm.Outputs
    tests: dict[str, clm.Outputs]
    cut: dict[str, list[str]]  # articles as the model read them (fit and every test set)
    cached: dict[str, bool] = field(default_factory=dict)
    zero_shot: dict[str, clm.Outputs] = field(default_factory=dict)  # the first n_zero_shot of XSUM and the near set
    tune_losses: list[float] = field(default_factory=list)
    tune_heldout: list[float] = field(default_factory=list)  # held-out XSUM reference loss before, after the fine-tune


def tuned(p: Any, s: Split, key: list[Any], tok: Any, model: Any) -> tuple[list[float], list[float], bool]:
    """Fine-tune `model` in place on the split's tune pairs, or load the cached blocks (keyed by the base model, the
    pairs and the fine-tune's settings); the training losses, and the reference loss (nats per token) of the first
    `n_zero_shot` XSUM test pairs before and after the fine-tune (held out: the fine-tune never sees them)."""
    import torch

    from . import finetune

    arts, refs = [d.text for d in s.tune], [d.reference for d in s.tune]
    held = s.test_in[: p.n_zero_shot]
    settings = [p.article_tokens, p.summary_tokens, p.tune_layers, p.tune_epochs, p.tune_lr, finetune.BATCH, p.seed]
    path = cache.entry_path(
        "clm_ood",
        "tuned",
        *key,
        arts,
        refs,
        settings,
        [d.text for d in held],
        [d.reference for d in held],
        suffix=".pt",
    )

    def heldout() -> float:
        return finetune.mean_loss(
            model, tok, [d.text for d in held], [d.reference for d in held], p.article_tokens, p.summary_tokens
        )

    def build(tmp: Path) -> None:
        before = heldout() if held else math.nan
        losses = finetune.finetune(
            model,
            tok,
            arts,
            refs,
            p.article_tokens,
            p.summary_tokens,
            p.tune_layers,
            p.tune_epochs,
            p.tune_lr,
            finetune.BATCH,
            p.seed,
        )
        after = heldout() if held else math.nan
        state = finetune.block_state(model, p.tune_layers)
        torch.save({"state": state, "losses": losses, "heldout": [before, after]}, tmp)

    saved, hit = cache.file_entry(path, build, lambda f: torch.load(f, weights_only=True))
    model.load_state_dict(saved["state"], strict=False)
    return saved["losses"], saved["heldout"], hit


def produce(p: Any, s: Split) -> Run:
    """Teacher-forced embeddings of the fit set's (article, reference) pairs, generations on the fit articles, the
    background and every test set, each cached by its inputs."""
    where, tok, model = load_model(p)
    key = [*_model_key(where, model), p.article_tokens, p.summary_tokens]

    def gen(docs: Sequence[Doc]) -> Callable[[], clm.Outputs]:
        return lambda: clm.generate(
            model, tok, [d.text for d in docs], p.article_tokens, p.summary_tokens, p.batch_size
        )

    zero_shot, losses, heldout, cached = {}, [], [], {}
    if s.tune:
        near = corpora.NEAR[p.source]
        for name in (corpora.IN_DOMAIN, near) if near in s.test_sets else (corpora.IN_DOMAIN,):
            docs = s.test_sets[name][: p.n_zero_shot]
            if docs:
                zero_shot[name], cached[f"zero_shot {name}"] = cached_outputs("test", key, docs, gen(docs))
        losses, heldout, cached["tuned"] = tuned(p, s, key, tok, model)
        key = [
            *key,
            "tuned",
            cache.digest([d.text for d in s.tune], [d.reference for d in s.tune]),
            p.tune_layers,
            p.tune_epochs,
            p.tune_lr,
            p.seed,
        ]

    refs = clm.reference_ids(tok, [d.reference for d in s.fit], p.summary_tokens)
    fit, hit = cached_outputs(
        "fit",
        key,
        s.fit,
        lambda: clm.teacher_forced(model, tok, [d.text for d in s.fit], refs, p.article_tokens, p.batch_size),
    )
    cached["fit"] = hit
    fit_generated, cached["fit_generated"] = cached_outputs("fit_generated", key, s.fit, gen(s.fit))
    background, cached["background"] = cached_outputs("background", key, s.background, gen(s.background))
    tests = {}
    for name, docs in s.test_sets.items():
        tests[name], cached[name] = cached_outputs("test", key, docs, gen(docs))
    cut = {"fit": clm.cut(tok, [d.text for d in s.fit], p.article_tokens)}
    cut.update({name: clm.cut(tok, [d.text for d in docs], p.article_tokens) for name, docs in s.test_sets.items()})
    return Run(fit, fit_generated, background, tests, cut, cached, zero_shot, losses, heldout)


# ------------------------------------------------------------------------------------------------- scores, quality


def rouge_l(predictions: Sequence[str], references: Sequence[str]) -> np.ndarray:
    """ROUGE-L F1 of each prediction against its reference (rouge-score, Porter stemming, as the paper's ROUGE)."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    return np.array([scorer.score(r, g)["rougeL"].fmeasure for g, r in zip(predictions, references)])


def _minilm(texts: Sequence[str], source: str) -> np.ndarray:
    """Unit-norm MiniLM sentence embeddings (mean-pooled), one encoder for all the texts."""
    from .. import pretrained, training

    encoder = pretrained.EncoderClassifier(pretrained.minilm_path(source), 1, "text", max_length=128)
    a, _ = training.predict(encoder, list(texts), 64)
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def similarity(predictions: Sequence[str], references: Sequence[str], source: str) -> np.ndarray:
    """Cosine similarity of MiniLM sentence embeddings (mean-pooled) of each prediction and its reference."""
    both = _minilm([*predictions, *references], source)
    return (both[: len(predictions)] * both[len(predictions) :]).sum(1)


def shuffled(groups: Sequence[str], seed: int) -> np.ndarray:
    """For each row, another row of the same group (a random derangement within each group of two or more rows; a
    row alone in its group keeps itself): the reference a summary is scored against for the quality floor."""
    g = np.asarray(groups)
    out = np.arange(g.size)
    rng = np.random.default_rng(seed)
    for name in dict.fromkeys(g.tolist()):
        rows = np.flatnonzero(g == name)
        if rows.size > 1:
            order = rows[rng.permutation(rows.size)]
            out[order] = np.roll(order, 1)  # each row gets the next one's reference in a random cycle
    return out


def scores(r: Run, inputs: np.ndarray, outputs: np.ndarray, ridge: float | str) -> dict[str, np.ndarray]:
    """MD and RMD of test embeddings (rows of `inputs` and `outputs`), every reading of the output scores (READINGS)
    among them; each Gaussian fitted once, on as many embeddings as its partner."""
    fit_ref, fit_gen, bg = r.fit.output_emb, r.fit_generated.output_emb, r.background.output_emb
    in_md, in_rmd = sel.md_rmd(r.fit.input_emb, r.background.input_emb, inputs, ridge)
    gen_md = gaussian_distance(fit_gen, outputs, ridge)
    ref_md = gaussian_distance(fit_ref, outputs, ridge)
    bg_md = gaussian_distance(bg, outputs, ridge)
    return {
        "input_md": in_md,
        "input_rmd": in_rmd,
        "output_md": gen_md,
        "output_rmd": gen_md - bg_md,
        "output_md_ref": ref_md,
        "output_rmd_ref": ref_md - bg_md,
        "output_rmd_seed": ref_md - gen_md,
    }


def items(p: Any, s: Split, r: Run) -> pd.DataFrame:
    """One row per test input: its set, OOD label, sampling unit (its source document where several inputs share one,
    else itself), every score (and every reading of the output scores), and the quality of its summary against its
    reference and against another reference of its set (the floor; NaN where the set has no reference)."""
    ridge = "ledoit-wolf" if p.covariance == "ledoit-wolf" else 0.0
    frames = []
    for name, docs in s.test_sets.items():
        out = r.tests[name]
        frames.append(
            pd.DataFrame(
                {
                    "set": name,
                    "ood": int(name != corpora.IN_DOMAIN),
                    "id": [d.id for d in docs],
                    "unit": [f"{name}:{d.source}" if d.source else f"{name}:#{i}" for i, d in enumerate(docs)],
                    "perplexity": out.perplexity,
                    "mean_logprob": out.mean_logprob,
                    "summary": out.texts,
                    "reference": [d.reference for d in docs],
                }
            )
        )
    tests = [r.tests[name] for name in s.test_sets]
    every = scores(
        r, np.concatenate([t.input_emb for t in tests]), np.concatenate([t.output_emb for t in tests]), ridge
    )
    frame = pd.concat(frames, ignore_index=True)
    frame = frame.assign(**every)[[*frame.columns[:4], *every, *frame.columns[4:]]]
    frame["output_rmd+ppl"] = sel.combine(frame[OOD_SCORE].to_numpy(), frame["perplexity"].to_numpy())
    has = (frame["reference"] != "").to_numpy()
    for column in ("rouge_l", "rouge_floor", "similarity", "similarity_floor"):
        frame[column] = np.nan
    if has.any():
        q = frame[has]
        other = shuffled(q["set"].to_numpy(), p.seed)
        summaries, refs = q["summary"].to_list(), q["reference"].to_list()
        frame.loc[has, "rouge_l"] = rouge_l(summaries, refs)
        frame.loc[has, "rouge_floor"] = rouge_l(summaries, [refs[j] for j in other])
        both = _minilm([*summaries, *refs], p.source)
        a, b = both[: len(refs)], both[len(refs) :]
        frame.loc[has, "similarity"] = (a * b).sum(1)
        frame.loc[has, "similarity_floor"] = (a * b[other]).sum(1)
    return frame


def set_label(name: str) -> str:
    """A set's name on the page."""
    if name == corpora.IN_DOMAIN:
        return "XSUM (in-domain)"
    return {**corpora.LOCAL_SETS, **corpora.HUB_SETS}[name][0]


# ------------------------------------------------------------------------------------------------- tables


def overlap_table(p: Any, s: Split, r: Run) -> pd.DataFrame:
    """Jaccard overlap of distinct word n-grams between each test set and as many in-domain fit articles (as the
    model read them), with each set's mean summary quality."""
    rows = []
    for name, docs in s.test_sets.items():
        m = min(len(docs), len(r.cut["fit"]))
        row = {"set": name, "label": set_label(name), "n": len(docs)}
        for n in p.ngram_orders:
            row[f"jaccard_{n}"] = corpora.jaccard(r.cut[name][:m], r.cut["fit"][:m], n)
        rows.append(row)
    return pd.DataFrame(rows)


def auroc_table(frame: pd.DataFrame) -> pd.DataFrame:
    """AUROC (in-domain test vs each OOD set) of every score, with DeLong's interval."""
    rows = []
    base = frame[frame["ood"] == 0]
    for name in frame.loc[frame["ood"] == 1, "set"].unique():
        pair = pd.concat([base, frame[frame["set"] == name]])
        for score in SCORES:
            ci = stats.delong_interval(pair["ood"], pair[score])
            rows.append({"set": name, "score": score, "auroc": ci.estimate, "ci_low": ci.low, "ci_high": ci.high})
    return pd.DataFrame(rows)


def pair(frame: pd.DataFrame, sets: Sequence[str]) -> pd.DataFrame:
    """The in-domain test rows with the rows of the given OOD sets pooled."""
    return frame[(frame["ood"] == 0) | frame["set"].isin(list(sets))]


def weighted_auroc(labels: np.ndarray, scores: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """AUROC (label 1 scored higher) of every row of `weights` (resamples x items: item i counts weights[r, i]
    times), ties one half; NaN for a row without positive or negative weight."""
    y = np.asarray(labels).astype(bool)
    _, tied = np.unique(np.asarray(scores, dtype=np.float64), return_inverse=True)
    groups = np.zeros((y.size, tied.max() + 1))
    groups[np.arange(y.size), tied] = 1.0  # items by tied score, lowest first
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    pos, neg = (w * y) @ groups, (w * ~y) @ groups
    below = np.cumsum(neg, axis=1) - neg
    with np.errstate(invalid="ignore", divide="ignore"):
        return (pos * (below + 0.5 * neg)).sum(1) / (pos.sum(1) * neg.sum(1))


def auroc_diff(
    frame: pd.DataFrame,
    sets: Sequence[str],
    a: str,
    b: str | None,
    units: str = "items",
    n_boot: int = 500,
    seed: int = 0,
) -> stats.Interval:
    """AUROC(a) − AUROC(b) (AUROC(a) alone when b is None) on the in-domain test vs the pooled `sets`: DeLong's
    (paired) interval where every input is a document of its own (`units` 'items'); else a two-stage bootstrap, the
    source documents resampled within each set, then the inputs within them, named by `units`."""
    sub = pair(frame, sets)
    if units == "items":
        if b is None:
            return stats.delong_interval(sub["ood"], sub[a])
        return stats.delong(sub["ood"], sub[a], sub[b]).as_interval()
    y = sub["ood"].to_numpy()
    draws = stats.unit_weights(
        sub["unit"].to_numpy(dtype=str), sub["set"].to_numpy(dtype=str), n_resamples=n_boot, seed=seed
    )

    def diff(w: np.ndarray) -> np.ndarray:
        first = weighted_auroc(y, sub[a].to_numpy(), w)
        return first if b is None else first - weighted_auroc(y, sub[b].to_numpy(), w)

    return stats.clustered_interval(
        diff(np.ones((1, len(sub)))),
        diff(draws)[:, None],
        clusters=sub["unit"].to_numpy(dtype=str),
        strata=sub["set"].to_numpy(dtype=str),
        unit=units,
        words=f"AUROC{'' if b is None else ' difference'} (Wikipedia and NYT paragraphs by article, SGD turns by "
        "dialogue)",
    )


def readings_table(frame: pd.DataFrame) -> pd.DataFrame:
    """AUROC (in-domain test vs each OOD set) of every reading of the output scores (READINGS)."""
    base = frame[frame["ood"] == 0]
    rows = []
    for name in frame.loc[frame["ood"] == 1, "set"].unique():
        both = pd.concat([base, frame[frame["set"] == name]])
        for score in READINGS:
            rows.append({"set": name, "score": score, "auroc": stats.fast_auc(both["ood"], both[score])})
    return pd.DataFrame(rows)


def background_table(p: Any, s: Split, r: Run) -> pd.DataFrame:
    """How much the background's choice moves the AUROCs. For each English OOD set, the AUROC (in-domain test vs the
    set) of MD and RMD, input and output, with two backgrounds: the run's (prose of no OOD set's domain) and a mix
    of the *other* English OOD sets' test inputs, leaving the tested domain out (a background made of the test
    domains, as our first pass's was, minus the one tested). Every Gaussian, the in-domain ones included, is fitted
    on the same m embeddings (m: the smaller of n_fit and the mix), the mix drawn with `seed`."""
    ridge = "ledoit-wolf" if p.covariance == "ledoit-wolf" else 0.0
    english = [n for n in s.ood if n not in corpora.NON_ENGLISH]
    base = r.tests[corpora.IN_DOMAIN]
    rows = []
    for name in english:
        others = [n for n in english if n != name]
        if not others:
            continue
        mix = {
            side: np.concatenate([getattr(r.tests[n], f"{side}_emb") for n in others]) for side in ("input", "output")
        }
        m = min(len(r.fit.input_emb), len(mix["input"]))
        pick = np.random.default_rng(p.seed).permutation(len(mix["input"]))[:m]
        fits = {"input": r.fit.input_emb[:m], "output": r.fit_generated.output_emb[:m]}
        backgrounds = {
            "run": {"input": r.background.input_emb[:m], "output": r.background.output_emb[:m]},
            "mix": {side: mix[side][pick] for side in ("input", "output")},
        }
        y = np.r_[np.zeros(len(base.texts)), np.ones(len(r.tests[name].texts))]
        row = {"set": name, "label": set_label(name), "m": m}
        for side in ("input", "output"):
            test = np.concatenate([getattr(base, f"{side}_emb"), getattr(r.tests[name], f"{side}_emb")])
            for kind, bg in backgrounds.items():
                md, rmd = sel.md_rmd(fits[side], bg[side], test, ridge)
                row[f"{side}_md"] = stats.fast_auc(y, md)
                row[f"{side}_rmd_{kind}"] = stats.fast_auc(y, rmd)
        rows.append(row)
    return pd.DataFrame(rows)


def with_quality(frame: pd.DataFrame, english: bool = True) -> pd.DataFrame:
    """Rows whose set has reference summaries; only the English sets' where `english` (rouge-score keeps ASCII
    letters and digits only, so German and Spanish words are cut apart at every accented letter)."""
    q = frame[frame["rouge_l"].notna()]
    return q[~q["set"].isin(corpora.NON_ENGLISH)] if english else q


def tune_table(s: Split, r: Run) -> pd.DataFrame:
    """Quality before and after the fine-tune on the same test articles (the first `n_zero_shot` of XSUM and of the
    near set): mean ROUGE-L against the reference and mean words per summary, zero-shot and fine-tuned."""
    rows = []
    for name, before in r.zero_shot.items():
        n = len(before.texts)
        refs = [d.reference for d in s.test_sets[name][:n]]
        for summarizer, texts in (("zero-shot", before.texts), ("fine-tuned", r.tests[name].texts[:n])):
            rows.append(
                {
                    "set": name,
                    "label": set_label(name),
                    "summarizer": summarizer,
                    "n": n,
                    "rouge_l": float(rouge_l(texts, refs).mean()),
                    "words": float(np.mean([len(t.split()) for t in texts])),
                    "reference loss": (
                        r.tune_heldout[summarizer == "fine-tuned"]
                        if name == corpora.IN_DOMAIN and r.tune_heldout
                        else math.nan
                    ),
                }
            )
    return pd.DataFrame(rows)


def tune_words(p: Any, table: pd.DataFrame, losses: Sequence[float]) -> str:
    """What the fine-tune did: its loss, and in-domain against near quality before and after it."""
    if table.empty:
        return "The summarizer runs as published (no fine-tune)."
    q = table.pivot(index="set", columns="summarizer", values="rouge_l")
    held = table[table["set"] == corpora.IN_DOMAIN].set_index("summarizer")["reference loss"]
    fell = held["fine-tuned"] < held["zero-shot"]
    out = (
        f"Fine-tuning the last {p.tune_layers} decoder blocks on {p.tune_pairs} XSUM pairs ({len(losses)} steps) took "
        f"the reference loss of {int(table['n'].iloc[0])} held-out XSUM test pairs from {held['zero-shot']:.3f} to "
        f"{held['fine-tuned']:.3f} nats per token"
        + ("" if fell else ": the fine-tune did not lower it, so the summarizer has learnt nothing of XSUM")
        + ". On the same "
        f"{int(table['n'].iloc[0])} XSUM test articles ROUGE-L went from {q.loc[corpora.IN_DOMAIN, 'zero-shot']:.3f} "
        f"zero-shot to {q.loc[corpora.IN_DOMAIN, 'fine-tuned']:.3f}"
    )
    near = corpora.NEAR[p.source]
    if near in q.index:
        gap = q.loc[corpora.IN_DOMAIN] - q.loc[near]
        out += (
            f"; on as many {set_label(near)} articles from {q.loc[near, 'zero-shot']:.3f} to "
            f"{q.loc[near, 'fine-tuned']:.3f}. XSUM's lead over {set_label(near)} went from {gap['zero-shot']:+.3f} "
            f"to {gap['fine-tuned']:+.3f}: "
            + (
                "the summarizer now does better on its in-domain, as the paper's does"
                if gap["fine-tuned"] > 0
                else "even fine-tuned, it does not do better on XSUM than on the near set"
            )
        )
    return out + "."


def quality_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean quality per set with references: ROUGE-L and the MiniLM cosine against the item's own reference and
    against another reference of the same set (the floor a summary reaches without reading its article's
    reference), and whether rouge-score reads the set's language."""
    q = with_quality(frame, english=False)
    out = q.groupby("set", sort=False)[["rouge_l", "rouge_floor", "similarity", "similarity_floor"]].mean()
    out.insert(0, "n", q.groupby("set", sort=False).size())
    out.insert(0, "english", [s not in corpora.NON_ENGLISH for s in out.index])
    out.insert(0, "label", [set_label(s) for s in out.index])
    return out.reset_index()


def tau_table(frame: pd.DataFrame, n_boot: int, seed: int) -> pd.DataFrame:
    """Kendall's τ between each score and each quality measure over every English test output with a reference
    (signed: τ > 0 when the score falls as quality rises), with a bootstrap interval over outputs."""
    q = with_quality(frame)
    rows = []
    for measure in QUALITY:
        for score in SCORES:
            ci = stats.bootstrap(
                sel.quality_tau,
                q[score].to_numpy(),
                q[measure].to_numpy(),
                n_resamples=n_boot,
                seed=seed,
                unit="outputs",
            )
            rows.append({"quality": measure, "score": score, "tau": ci.estimate, "ci_low": ci.low, "ci_high": ci.high})
    return pd.DataFrame(rows)


SELECTIVE_SCORES = ("input_rmd", OOD_SCORE, "perplexity", f"{OOD_SCORE}+ppl")


def selective_table(frame: pd.DataFrame, measure: str = "rouge_l") -> pd.DataFrame:
    """Selective generation set by set: for each OOD set with references, the in-domain test outputs with that set's,
    and per score Kendall's τ with quality and the mean quality kept over abstention 0–90 % (MLSUM included, with
    its mangled ROUGE, so that the page shows what it did to the pooled numbers)."""
    q = with_quality(frame, english=False)
    rows = []
    for name in q.loc[q["ood"] == 1, "set"].unique():
        sub = q[(q["ood"] == 0) | (q["set"] == name)]
        quality = sub[measure].to_numpy()
        for score in SELECTIVE_SCORES:
            values = sub[score].to_numpy()
            rows.append(
                {
                    "set": name,
                    "score": score,
                    "tau": sel.quality_tau(values, quality),
                    "area": sel.curve_area(values, quality),
                }
            )
    return pd.DataFrame(rows)


def tau_by_ood(frame: pd.DataFrame, bins: int = 4, score: str = OOD_SCORE, measure: str = "rouge_l") -> pd.DataFrame:
    """Figure 4's view: the English outputs with references cut into `bins` equal bins by the OOD score, and per bin
    the mean OOD score and perplexity's Kendall's τ with quality (signed: τ > 0 when perplexity falls as quality
    rises)."""
    q = with_quality(frame)
    cut = pd.qcut(q[score].rank(method="first"), bins, labels=False)
    rows = []
    for b, sub in q.groupby(cut):
        rows.append(
            {
                "bin": int(b) + 1,
                "n": len(sub),
                "ood_score": sub[score].mean(),
                "ood_share": sub["ood"].mean(),
                "tau_perplexity": sel.quality_tau(sub["perplexity"].to_numpy(), sub[measure].to_numpy()),
            }
        )
    return pd.DataFrame(rows)


def tau_fall(frame: pd.DataFrame, n_boot: int, seed: int, score: str = OOD_SCORE, measure: str = "rouge_l"):
    """Perplexity's τ with quality among the English outputs whose OOD score is below the median minus among those
    above it (> 0: τ falls as the OOD score rises), bootstrap over outputs (the halves re-cut in every resample)."""

    def fall(ood: np.ndarray, ppl: np.ndarray, quality: np.ndarray) -> float:
        low = ood <= np.median(ood)
        return sel.quality_tau(ppl[low], quality[low]) - sel.quality_tau(ppl[~low], quality[~low])

    q = with_quality(frame)
    return stats.bootstrap(
        fall,
        q[score].to_numpy(),
        q["perplexity"].to_numpy(),
        q[measure].to_numpy(),
        n_resamples=n_boot,
        seed=seed,
        unit="outputs",
    )


def abstention_table(frame: pd.DataFrame, n_boot: int, seed: int, measure: str = "rouge_l") -> pd.DataFrame:
    """Mean quality of the English outputs kept at each abstention rate, per score, with a bootstrap band over
    outputs; the oracle (abstaining on the worst outputs) and random abstention as bounds."""
    q = with_quality(frame)
    quality = q[measure].to_numpy()
    rows = []
    scored = {s: q[s].to_numpy() for s in SCORES} | {"oracle": -quality}
    for score, values in scored.items():
        for k, rate in enumerate(sel.ABSTENTION_RATES):
            ci = stats.bootstrap(
                lambda s, y, k=k: sel.abstention_curve(s, y)[k], values, quality, n_resamples=n_boot, seed=seed
            )
            rows.append(
                {"score": score, "abstention": rate, "quality": ci.estimate, "ci_low": ci.low, "ci_high": ci.high}
            )
    return pd.DataFrame(rows)


SELECTION_STATS = {"tau": sel.quality_tau, "curve": lambda score, quality: sel.curve_area(score, quality)}


def selection_diff(
    frame: pd.DataFrame, kind: str, a: str, b: str, n_boot: int, seed: int, measure: str = "rouge_l"
) -> stats.Interval:
    """stat(a) − stat(b) over the English outputs with a reference, paired bootstrap over outputs within each set (every
    resample keeps each set's size); stat is Kendall's τ with quality (`tau`) or the area under the
    quality-vs-abstention curve (`curve`)."""
    stat = SELECTION_STATS[kind]
    q = with_quality(frame)
    return stats.bootstrap(
        lambda y, x, z: stat(x, y) - stat(z, y),
        q[measure].to_numpy(),
        q[a].to_numpy(),
        q[b].to_numpy(),
        n_resamples=n_boot,
        seed=seed,
        strata=pd.factorize(q["set"])[0],
        unit="outputs (paired, within sets)",
    )


def selective_pools(frame: pd.DataFrame, measure: str = "rouge_l") -> pd.DataFrame:
    """Kendall's τ with quality of every abstention score, and of summary length alone (a baseline that reads no
    score), on the pooled English outputs and on in-domain + each English OOD set with references: which pool carries
    the pooled rows."""
    q = with_quality(frame).assign(length=lambda t: -t["summary"].str.split().str.len())
    pools = {"all English sets": q}
    for name in q.loc[q["ood"] == 1, "set"].unique():
        pools[f"XSUM + {set_label(name)}"] = q[q["set"].isin([corpora.IN_DOMAIN, name])]
    rows = []
    for pool, part in pools.items():
        row = {"pool": pool, "outputs": len(part)}
        for score in (f"{OOD_SCORE}+ppl", OOD_SCORE, "perplexity", "length"):
            row[LABELS.get(score, "length (shorter first)")] = sel.quality_tau(
                part[score].to_numpy(), part[measure].to_numpy()
            )
        rows.append(row)
    return pd.DataFrame(rows)


def quality_drop(
    frame: pd.DataFrame, n_boot: int, seed: int, measure: str = "rouge_l", english: bool = True
) -> stats.Interval:
    """Quality above its floor (against a shuffled reference of the same set), in-domain minus the mean over the OOD
    sets with references (the English ones where `english`), each set one weight whatever its size; bootstrap over
    outputs within each set. ROUGE-L levels differ between sets whose references differ in style, so each set is
    measured from its own floor."""
    q = with_quality(frame, english)
    codes, names = pd.factorize(q["set"])
    inside = int(np.flatnonzero(names == corpora.IN_DOMAIN)[0])
    above = q[measure] - q[f"{measure.split('_')[0]}_floor"]  # rouge_l -> rouge_floor, similarity -> similarity_floor

    def drop(y: np.ndarray, c: np.ndarray) -> float:
        means = np.array([y[c == k].mean() for k in range(len(names))])
        return float(means[inside] - np.delete(means, inside).mean())

    return stats.bootstrap(
        drop, above.to_numpy(), codes, n_resamples=n_boot, seed=seed, strata=codes, unit="outputs (within sets)"
    )


def ladder(
    frame: pd.DataFrame, overlap: pd.DataFrame, score: str, n_boot: int, seed: int, n: int = 1
) -> stats.Interval:
    """Spearman ρ between each OOD set's n-gram overlap with the training data and the AUROC of `score` on it (ρ < 0:
    the nearer the set, the harder to detect). ρ is a statistic over the OOD sets, so the interval resamples the
    sets (then the inputs within each drawn set; the in-domain inputs one by one): a set drawn c times counts c
    times in ρ."""
    jac = dict(zip(overlap["set"], overlap[f"jaccard_{n}"]))
    names = [s for s in frame["set"].unique() if s != corpora.IN_DOMAIN]
    x = np.array([jac[s] for s in names])
    sets, ood, values = frame["set"].to_numpy(), frame["ood"].to_numpy() == 1, frame[score].to_numpy()
    clusters = np.where(ood, sets, frame["unit"].to_numpy()).astype(str)  # an OOD set one cluster, in-domain apart
    draws = stats.unit_weights(clusters, ood.astype(int), n_resamples=n_boot, seed=seed)

    def rho(w: np.ndarray) -> np.ndarray:
        aucs, copies = np.zeros((w.shape[0], len(names))), np.zeros((w.shape[0], len(names)), dtype=int)
        for i, name in enumerate(names):
            keep = ~ood | (sets == name)
            aucs[:, i] = weighted_auroc(ood[keep], values[keep], w[:, keep])
            copies[:, i] = np.rint(w[:, sets == name].sum(1) / (sets == name).sum())
        out = np.zeros(w.shape[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a resample of one set, or of equal AUROCs, has no ordering: ρ = 0
            for r in range(w.shape[0]):
                drawn = copies[r] > 0
                value = spearmanr(np.repeat(x[drawn], copies[r, drawn]), np.repeat(aucs[r, drawn], copies[r, drawn]))
                out[r] = 0.0 if np.isnan(value.statistic) else value.statistic
        return out

    ci = stats.clustered_interval(
        rho(np.ones((1, len(frame)))),
        rho(draws)[:, None],
        clusters=clusters,
        strata=ood.astype(int),
        unit="sets",
        words="Spearman ρ over the OOD sets",
    )
    if np.isnan(ci.low):  # one OOD set: no interval
        return ci
    method = (
        f"Spearman ρ over {len(names)} OOD sets, the sets resampled (then the inputs within each drawn set; the "
        f"in-domain inputs one by one), {n_boot} resamples; percentile interval clipped to [-1, 1]"
    )
    return stats.Interval(ci.estimate, max(ci.low, -1.0), min(ci.high, 1.0), method)


def examples(frame: pd.DataFrame, per_set: int = 1) -> pd.DataFrame:
    """The first summary of each set beside its reference, for the page."""
    rows = frame.groupby("set", sort=False).head(per_set)
    return pd.DataFrame(
        {
            "set": rows["set"].map(set_label),
            "summary": rows["summary"].str.slice(0, 160),
            "reference": rows["reference"].str.slice(0, 160),
            "ROUGE-L": rows["rouge_l"],
        }
    )


def summary_json(frame: pd.DataFrame) -> str:
    """The items table without the texts (what the results file keeps)."""
    return json.dumps(frame.drop(columns=["summary", "reference"]).to_dict("records"))


# ------------------------------------------------------------------------------------------------- prose

EASY = 0.9  # an AUROC (as printed, two decimals) from which a set counts as easy for a score


def near_far_words(aurocs: pd.DataFrame, groups: dict[str, list[str]]) -> str:
    """Where the scores part: the near set's AUROCs, and whether the far sets are easy for every embedding score."""
    words = []
    if "near" in groups:
        near = aurocs[aurocs["set"] == groups["near"][0]].set_index("score")["auroc"]
        words.append(
            f"On {set_label(groups['near'][0])}, the near set, input-RMD reaches {near['input_rmd']:.2f} where "
            f"input-MD reaches {near['input_md']:.2f}, output-RMD {near['output_rmd']:.2f} where output-MD reaches "
            f"{near['output_md']:.2f}, and perplexity {near['perplexity']:.2f}."
        )
    if "far" in groups:
        far = aurocs[aurocs["set"].isin(groups["far"])].groupby("score")["auroc"].mean()
        embedding = far[["input_md", "input_rmd", "output_md", "output_rmd"]]
        easy = (
            "easy for every embedding score"
            if round(embedding.min(), 2) >= EASY
            else "not easy for every embedding score"
        )
        words.append(
            f"Averaged over the far sets, the embedding scores reach {embedding.min():.2f} to {embedding.max():.2f} "
            f"and perplexity {far['perplexity']:.2f}: the far sets are {easy}."
        )
    return " ".join(words)


def tau_words(taus: pd.DataFrame) -> str:
    """Kendall's τ with ROUGE-L of perplexity, output-RMD and their combination, in words."""
    tau = taus[taus["quality"] == "rouge_l"].set_index("score")["tau"]
    combo, ppl, ood = tau[f"{OOD_SCORE}+ppl"], tau["perplexity"], tau[OOD_SCORE]
    gain = lambda a, b: "adds to" if a > b else "does not add to"
    return (
        f"With ROUGE-L, perplexity alone has τ = {ppl:.2f}, output-RMD {ood:.2f} and their combination {combo:.2f}: "
        f"the combination {gain(combo, ood)} output-RMD alone and {gain(combo, ppl)} perplexity alone (the verdict "
        "says which differences the interval resolves)."
    )


# ------------------------------------------------------------------------------------------------- verdict

FIT_BETTER = "the same comparison with a summarizer fine-tuned on XSUM (the `paper` profile's PEGASUS)"


def verdict_rows(
    p: Any, claim_set: dict[str, Any], frame: pd.DataFrame, overlap: pd.DataFrame, groups: dict[str, list[str]]
) -> list[dict]:
    """One verdict row per claim, in the register's order."""
    from .. import verdict
    from ..verdict import unexplained

    rows = []
    n_boot, seed = p.n_boot, p.seed

    def judge(claim: Any, estimate: float, ci: stats.Interval, why: tuple[str, str], note: str = "") -> dict:
        narrow = {"sets": "OOD sets", "source documents": "source documents (articles, dialogues)"}
        more = narrow.get(claim.units, "test inputs")
        test = f"{ci.method}; {note}" if note else None
        return verdict.judge(claim, estimate, ci, test, why=why, narrow_by=f"{more} (one fine-tune; one split)")

    premise = quality_drop(frame, n_boot, seed)
    premise_note = (
        f"premise, summary quality falls on OOD inputs (its row): {premise.estimate:+.3f} "
        f"[{premise.low:+.3f}, {premise.high:+.3f}]"
        + ("" if premise.low > 0 else ", not shown here: this row tests ranking by quality, not selection under shift")
    )

    paper = {repr(c.regime): c.regime for c in claim_set.values() if c.regime and c.regime.kind == "paper"}
    inside = frame.loc[frame["set"] == corpora.IN_DOMAIN, "rouge_l"].mean()
    for regime in paper.values():  # fit pairs and the summarizer's in-domain quality, against the paper's
        verdict.check_regime(regime, p.n_fit, inside)
    for key, claim in claim_set.items():
        kind, *rest = key.split("|")
        if kind == "ppl":
            ci = auroc_diff(frame, groups[rest[0]], "perplexity", None, claim.units, n_boot, seed)
            rows.append(
                judge(
                    claim,
                    *_est(ci),
                    why=unexplained("perplexity under a summarizer fine-tuned on XSUM (the `paper` profile)"),
                )
            )
        elif kind == "out_vs_in":
            ci = auroc_diff(frame, groups[rest[0]], "output_rmd", "input_rmd", claim.units, n_boot, seed)
            rows.append(judge(claim, *_est(ci), why=unexplained(f"{FIT_BETTER}, or a summarizer whose outputs differ")))
        elif kind == "tau_falls":
            rows.append(
                judge(claim, *_est(tau_fall(frame, n_boot, seed)), why=unexplained(FIT_BETTER), note=premise_note)
            )
        elif kind == "rmd":
            side, other, group = rest
            b = f"{side}_md" if other == "md" else "perplexity"
            ci = auroc_diff(frame, groups[group], f"{side}_rmd", b, claim.units, n_boot, seed)
            note = ""
            if side == "output" and other == "md":  # the notes' reading: the in-domain Gaussian on references
                ref = auroc_diff(frame, groups[group], "output_rmd_ref", "output_md_ref", claim.units, n_boot, seed)
                note = (
                    f"with the in-domain output Gaussian on reference summaries instead: {ref.estimate:+.3f} "
                    f"[{ref.low:+.3f}, {ref.high:+.3f}]"
                )
            rows.append(judge(claim, *_est(ci), why=_rmd_why(frame, groups[group], side, b, ci, claim, n_boot, seed),
                              note=note))  # fmt: skip
        elif kind == "quality_falls":
            rows.append(judge(claim, *_est(premise), why=unexplained(FIT_BETTER)))  # the premise's own row
        elif kind in ("tau", "curve"):
            ci = selection_diff(frame, kind, f"{OOD_SCORE}+ppl", rest[0], n_boot, seed)
            rows.append(
                judge(claim, *_est(ci), why=unexplained(f"{FIT_BETTER}, with BLEURT as the quality"), note=premise_note)
            )
        elif kind == "ladder":
            ci = ladder(frame, overlap, rest[0], n_boot, seed)
            rows.append(judge(claim, *_est(ci), why=unexplained("more OOD sets spanning the overlap range")))
        else:
            raise KeyError(f"no verdict for claim {key!r}")
    return rows


def _rmd_why(
    frame: pd.DataFrame, sets: Sequence[str], side: str, b: str, ci: stats.Interval, claim: Any, n_boot: int, seed: int
) -> tuple[str, str]:
    """Why an RMD row may not hold: unknown, with the set that pulls the pooled difference down most and the
    pooled difference without it (read from the run) where the group has several sets."""
    from ..verdict import unexplained

    what = f"{FIT_BETTER}, or a background holding text like the set that pulls the difference down"
    if len(sets) < 2:
        return unexplained(what)
    per_set = {
        s: stats.fast_auc(*_labels_scores(frame, s, f"{side}_rmd")) - stats.fast_auc(*_labels_scores(frame, s, b))
        for s in sets
    }
    worst = min(per_set, key=per_set.get)
    rest = auroc_diff(frame, [s for s in sets if s != worst], f"{side}_rmd", b, claim.units, n_boot, seed)
    return unexplained(
        f"{what} ({set_label(worst)} alone: {per_set[worst]:+.3f}; the group without it: {rest.estimate:+.3f} "
        f"[{rest.low:+.3f}, {rest.high:+.3f}])"
    )


def _labels_scores(frame: pd.DataFrame, name: str, score: str) -> tuple[np.ndarray, np.ndarray]:
    """(OOD labels, scores) of the in-domain test against one OOD set."""
    sub = pair(frame, [name])
    return sub["ood"].to_numpy(), sub[score].to_numpy()


def _est(ci: stats.Interval) -> tuple[float, stats.Interval]:
    """(estimate, interval) as judge takes them."""
    return ci.estimate, ci


def background_words(table: pd.DataFrame) -> str:
    """What leaving the tested domain out of a background made of the test domains does, against the run's
    background, on the near set and on average (read from `background_table`)."""
    if table.empty:
        return ""
    mean = table[["input_rmd_run", "input_rmd_mix", "output_rmd_run", "output_rmd_mix"]].mean()
    first = table.iloc[0]
    return (
        f"On {first['label']}, input-RMD reaches {first['input_rmd_run']:.2f} with the run's background and "
        f"{first['input_rmd_mix']:.2f} with the other test domains as background (input-MD {first['input_md']:.2f}); "
        f"output-RMD {first['output_rmd_run']:.2f} and {first['output_rmd_mix']:.2f} (output-MD "
        f"{first['output_md']:.2f}). Averaged over the {len(table)} English sets, input-RMD reaches "
        f"{mean['input_rmd_run']:.2f} and {mean['input_rmd_mix']:.2f}, output-RMD {mean['output_rmd_run']:.2f} and "
        f"{mean['output_rmd_mix']:.2f}."
    )


def readings_words(readings: pd.DataFrame) -> str:
    """Mean AUROC over the OOD sets of each reading of the output scores."""
    mean = readings.groupby("score")["auroc"].mean()
    return (
        f"Averaged over the OOD sets, output-MD reaches {mean['output_md']:.2f} with the in-domain Gaussian on "
        f"generated summaries and {mean['output_md_ref']:.2f} with it on reference summaries; output-RMD "
        f"{mean['output_rmd']:.2f} and {mean['output_rmd_ref']:.2f}; the notes' reading (references against generated "
        f"in-domain summaries, no general-domain background) {mean['output_rmd_seed']:.2f}."
    )


def quality_words(table: pd.DataFrame, frame: pd.DataFrame, n_boot: int, seed: int) -> str:
    """In-domain quality against the OOD sets', with and without the non-English sets, and against the floor."""
    inside = table[table["set"] == corpora.IN_DOMAIN].iloc[0]
    drops = {e: quality_drop(frame, n_boot, seed, english=e) for e in (True, False)}
    above = "above" if inside["rouge_l"] > inside["rouge_floor"] else "not above"
    return (
        f"In-domain, ROUGE-L is {inside['rouge_l']:.3f} against the article's own reference and "
        f"{inside['rouge_floor']:.3f} against another XSUM reference: the summaries are {above} the floor "
        f"(MiniLM cosine {inside['similarity']:.2f} against {inside['similarity_floor']:.2f}). In-domain minus OOD, "
        f"mean ROUGE-L differs by {drops[True].estimate:+.3f} [{drops[True].low:+.3f}, {drops[True].high:+.3f}] over "
        f"the English OOD sets and by {drops[False].estimate:+.3f} [{drops[False].low:+.3f}, {drops[False].high:+.3f}] "
        "with the German and Spanish sets counted."
    )


def tau_ood_words(bins: pd.DataFrame, fall: stats.Interval) -> str:
    """Perplexity's τ with quality over the OOD-score bins, and what the row's statistic (`tau_fall`) says."""
    t = bins["tau_perplexity"]
    reading = stats.by_side(
        fall, "falls as the OOD score rises", "rises as the OOD score rises", "neither falls nor rises resolvably"
    )
    return (
        f"Perplexity's τ with ROUGE-L runs {', '.join(f'{x:.2f}' for x in t)} over the {len(t)} bins of "
        f"{LABELS[OOD_SCORE]}, lowest first. Below the median OOD score minus above it, it is {fall.estimate:+.3f} "
        f"[{fall.low:+.3f}, {fall.high:+.3f}]: perplexity's τ {reading}."
    )


def background_sources(s: Split) -> pd.DataFrame:
    """How many background inputs each source gave."""
    local = {d.id.rsplit("-", 1)[0] for d in s.background} <= set(corpora.LOCAL_BACKGROUND)
    names = pd.Series([d.id.rsplit("-", 1)[0] if local else "C4 (validation)" for d in s.background], name="source")
    return names.value_counts(sort=False).rename("inputs").reset_index()
