"""The conditional-LM OOD chapter's experiment: parameters, the splits, generation and embeddings through the cache,
the scores, and tidy tables (AUROC per OOD set, Kendall's τ with quality, quality-vs-abstention, the n-gram ladder)."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from .. import cache, stats
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
        int, 300, smoke=24, paper=4096, low=8, high=200_000, help="in-domain pairs the Gaussians are fitted on"
    ),
    "n_background": Param(
        int, 200, smoke=24, paper=4096, low=8, high=200_000, help="general-domain inputs (C4 stand-in)"
    ),
    "n_test": Param(int, 120, smoke=8, paper=1000, low=4, high=20_000, help="in-domain test articles"),
    "n_ood": Param(int, 30, smoke=6, paper=500, low=4, high=20_000, help="test inputs per OOD set"),
    "article_tokens": Param(int, 128, smoke=48, paper=512, low=8, high=4096, help="tokens kept per input article"),
    "summary_tokens": Param(int, 32, smoke=8, paper=64, low=2, high=512, help="new tokens per summary (greedy)"),
    "batch_size": Param(int, 16, smoke=8, low=1, high=512, help="articles per generation batch"),
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


def check(p: dict[str, Any]) -> str | None:
    """The OOD sets belong to the source; the background does not outgrow its pools."""
    allowed = corpora.sets(p["source"])
    wrong = [s for s in p["ood_sets"] if s not in allowed]
    if wrong:
        return f"ood_sets: {', '.join(wrong)} are not {p['source']} sets; choose from {', '.join(allowed)}"
    if not p["ood_sets"]:
        return "ood_sets: name at least one OOD set"
    return None


def check_sizes(p: dict[str, Any]) -> str | None:
    """Local runs: the sizes fit the BIG-bench files (XSUM for n_fit + n_test, each OOD set for n_ood, the English
    sets' leftovers for n_background)."""
    if p["source"] != "local" or check(p):
        return None
    xsum = len(corpora.load(corpora.IN_DOMAIN))
    if p["n_fit"] + p["n_test"] > xsum:
        return f"n_fit + n_test: {p['n_fit']} + {p['n_test']} exceeds the {xsum} XSUM articles"
    sizes = {s: len(corpora.load(s)) for s in dict.fromkeys([*p["ood_sets"], *corpora.LOCAL_BACKGROUND])}
    small = {s: n for s, n in sizes.items() if s in p["ood_sets"] and n < p["n_ood"]}
    if small:
        return f"n_ood: {p['n_ood']} exceeds the {min(small.values())} documents of {min(small, key=small.get)}"
    left = sum(n - (p["n_ood"] if s in p["ood_sets"] else 0) for s, n in sizes.items() if s in corpora.LOCAL_BACKGROUND)
    if p["n_background"] > left:
        return f"n_background: {p['n_background']} exceeds the {left} English documents left after the test draws"
    return None


CHECKS = (check, check_sizes)


@dataclass
class Split:
    """Every text of the run: in-domain fit and test, the background, and each OOD set's test inputs."""

    fit: list[Doc]
    test_in: list[Doc]
    background: list[Doc]
    ood: dict[str, list[Doc]]

    @property
    def test_sets(self) -> dict[str, list[Doc]]:
        """In-domain test first, then the OOD sets."""
        return {corpora.IN_DOMAIN: self.test_in, **self.ood}


def split(p: Any) -> Split:
    """Draw the run's texts with `seed`. Local: XSUM fit and test are disjoint draws of one pool, each OOD set's
    test inputs a draw of its file, the background an equal share of the English sets' leftovers (never a test
    item). Hub: XSUM train / test splits, each OOD set's test split, C4 validation as the background."""
    if p.source == "hub":
        fit = corpora.load(corpora.IN_DOMAIN, "hub", "train", p.n_fit * 2)[: p.n_fit]
        test_in = corpora.load(corpora.IN_DOMAIN, "hub", "test", p.n_test * 2)[: p.n_test]
        ood = {
            s: corpora.load(s, "hub", corpora.HUB_TEST_SPLIT.get(s, "test"), p.n_ood * 2)[: p.n_ood] for s in p.ood_sets
        }
        background = corpora.load("c4", "hub", limit=p.n_background * 2)[: p.n_background]
        _need(fit, p.n_fit, "n_fit")
        _need(test_in, p.n_test, "n_test")
        _need(background, p.n_background, "n_background")
        for s, docs in ood.items():
            _need(docs, p.n_ood, f"n_ood ({s})")
        return Split(fit, test_in, background, ood)
    pool = corpora.load(corpora.IN_DOMAIN)
    fit, rest = corpora.take(pool, p.n_fit, p.seed, "n_fit (XSUM)")
    test_in, _ = corpora.take(rest, p.n_test, p.seed, "n_test (XSUM after n_fit)")
    ood, left = {}, {}
    for s in dict.fromkeys([*p.ood_sets, *corpora.LOCAL_BACKGROUND]):
        drawn, left[s] = corpora.take(corpora.load(s), p.n_ood if s in p.ood_sets else 0, p.seed, f"n_ood ({s})")
        if s in p.ood_sets:
            ood[s] = drawn
    return Split(fit, test_in, _background(left, p.n_background), ood)


def _need(docs: Sequence[Doc], n: int, name: str) -> None:
    """One-line error when a Hub set is smaller than asked."""
    if len(docs) < n:
        raise ValueError(f"{name}: asked for {n} documents, the set has {len(docs)}")


def _background(left: dict[str, list[Doc]], n: int) -> list[Doc]:
    """n documents, round-robin over the English background sets' leftovers."""
    pools = [list(left[s]) for s in corpora.LOCAL_BACKGROUND]
    out: list[Doc] = []
    while len(out) < n and any(pools):
        for pool in pools:
            if pool and len(out) < n:
                out.append(pool.pop(0))
    _need(out, n, "n_background")
    return out


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
    """What the model produced: the fit set's reference embeddings, the background's and every test set's
    generations."""

    fit: clm.Outputs
    background: clm.Outputs
    tests: dict[str, clm.Outputs]
    cut: dict[str, list[str]]  # articles as the model read them (fit and every test set)
    cached: dict[str, bool] = field(default_factory=dict)


def produce(p: Any, s: Split) -> Run:
    """Teacher-forced embeddings of the fit set's (article, reference) pairs, generations on the background and on
    every test set, each cached by its inputs."""
    where, tok, model = load_model(p)
    key = [*_model_key(where, model), p.article_tokens, p.summary_tokens]

    def gen(docs: Sequence[Doc]) -> Callable[[], clm.Outputs]:
        return lambda: clm.generate(
            model, tok, [d.text for d in docs], p.article_tokens, p.summary_tokens, p.batch_size
        )

    refs = clm.reference_ids(tok, [d.reference for d in s.fit], p.summary_tokens)
    fit, hit = cached_outputs(
        "fit",
        key,
        s.fit,
        lambda: clm.teacher_forced(model, tok, [d.text for d in s.fit], refs, p.article_tokens, p.batch_size),
    )
    cached = {"fit": hit}
    background, cached["background"] = cached_outputs("background", key, s.background, gen(s.background))
    tests = {}
    for name, docs in s.test_sets.items():
        tests[name], cached[name] = cached_outputs("test", key, docs, gen(docs))
    cut = {"fit": clm.cut(tok, [d.text for d in s.fit], p.article_tokens)}
    cut.update({name: clm.cut(tok, [d.text for d in docs], p.article_tokens) for name, docs in s.test_sets.items()})
    return Run(fit, background, tests, cut, cached)


# ------------------------------------------------------------------------------------------------- scores, quality


def rouge_l(predictions: Sequence[str], references: Sequence[str]) -> np.ndarray:
    """ROUGE-L F1 of each prediction against its reference (rouge-score, Porter stemming, as the paper's ROUGE)."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    return np.array([scorer.score(r, g)["rougeL"].fmeasure for g, r in zip(predictions, references)])


def similarity(predictions: Sequence[str], references: Sequence[str], source: str) -> np.ndarray:
    """Cosine similarity of MiniLM sentence embeddings (mean-pooled) of each prediction and its reference."""
    from .. import pretrained, training

    encoder = pretrained.EncoderClassifier(pretrained.minilm_path(source), 1, "text", max_length=128)
    a, _ = training.predict(encoder, list(predictions), 64)
    b, _ = training.predict(encoder, list(references), 64)
    a, b = a / np.linalg.norm(a, axis=1, keepdims=True), b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(1)


def items(p: Any, s: Split, r: Run) -> pd.DataFrame:
    """One row per test input: its set, OOD label, sampling unit (its source document where several inputs share one,
    else itself), every score, and the quality of its summary (NaN where the set has no reference)."""
    ridge = "ledoit-wolf" if p.covariance == "ledoit-wolf" else 0.0
    frames = []
    for name, docs in s.test_sets.items():
        out = r.tests[name]
        in_md, in_rmd = sel.md_rmd(r.fit.input_emb, r.background.input_emb, out.input_emb, ridge)
        out_md, out_rmd = sel.md_rmd(r.fit.output_emb, r.background.output_emb, out.output_emb, ridge)
        frames.append(
            pd.DataFrame(
                {
                    "set": name,
                    "ood": int(name != corpora.IN_DOMAIN),
                    "id": [d.id for d in docs],
                    "unit": [f"{name}:{d.source}" if d.source else f"{name}:#{i}" for i, d in enumerate(docs)],
                    "input_md": in_md,
                    "input_rmd": in_rmd,
                    "output_md": out_md,
                    "output_rmd": out_rmd,
                    "perplexity": out.perplexity,
                    "mean_logprob": out.mean_logprob,
                    "summary": out.texts,
                    "reference": [d.reference for d in docs],
                }
            )
        )
    frame = pd.concat(frames, ignore_index=True)
    frame["output_rmd+ppl"] = sel.combine(frame[OOD_SCORE].to_numpy(), frame["perplexity"].to_numpy())
    has = frame["reference"] != ""
    frame["rouge_l"] = np.nan
    frame["similarity"] = np.nan
    if has.any():
        frame.loc[has, "rouge_l"] = rouge_l(frame.loc[has, "summary"], frame.loc[has, "reference"])
        frame.loc[has, "similarity"] = similarity(frame.loc[has, "summary"], frame.loc[has, "reference"], p.source)
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
    frame: pd.DataFrame, sets: Sequence[str], a: str, b: str, units: str = "items", n_boot: int = 500, seed: int = 0
) -> stats.Interval:
    """AUROC(a) − AUROC(b) on the in-domain test vs the pooled `sets`: DeLong's paired interval where every input is
    a document of its own (`units` 'items'); else a two-stage bootstrap, the source documents resampled within each
    set, then the inputs within them, named by `units`."""
    sub = pair(frame, sets)
    if units == "items":
        return stats.delong(sub["ood"], sub[a], sub[b]).as_interval()
    y = sub["ood"].to_numpy()
    draws = stats.unit_weights(
        sub["unit"].to_numpy(dtype=str), sub["set"].to_numpy(dtype=str), n_resamples=n_boot, seed=seed
    )

    def diff(w: np.ndarray) -> np.ndarray:
        return weighted_auroc(y, sub[a].to_numpy(), w) - weighted_auroc(y, sub[b].to_numpy(), w)

    return stats.clustered_interval(
        diff(np.ones((1, len(sub)))),
        diff(draws)[:, None],
        clusters=sub["unit"].to_numpy(dtype=str),
        strata=sub["set"].to_numpy(dtype=str),
        unit=units,
        words="AUROC difference (Wikipedia and NYT paragraphs by article, SGD turns by dialogue)",
    )


def with_quality(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows whose set has reference summaries."""
    return frame[frame["rouge_l"].notna()]


def tau_table(frame: pd.DataFrame, n_boot: int, seed: int) -> pd.DataFrame:
    """Kendall's τ between each score and each quality measure over every test output with a reference (signed:
    τ > 0 when the score falls as quality rises), with a bootstrap interval over outputs."""
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


def abstention_table(frame: pd.DataFrame, n_boot: int, seed: int, measure: str = "rouge_l") -> pd.DataFrame:
    """Mean quality of the outputs kept at each abstention rate, per score, with a bootstrap band over outputs; the
    oracle (abstaining on the worst outputs) and random abstention as bounds."""
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
    """stat(a) − stat(b) over the outputs with a reference, paired bootstrap over outputs; stat is Kendall's τ with
    quality (`tau`) or the area under the quality-vs-abstention curve (`curve`)."""
    stat = SELECTION_STATS[kind]
    q = with_quality(frame)
    return stats.bootstrap(
        lambda y, x, z: stat(x, y) - stat(z, y),
        q[measure].to_numpy(),
        q[a].to_numpy(),
        q[b].to_numpy(),
        n_resamples=n_boot,
        seed=seed,
        unit="outputs (paired)",
    )


def quality_drop(frame: pd.DataFrame, n_boot: int, seed: int, measure: str = "rouge_l") -> stats.Interval:
    """Mean quality in-domain minus on the OOD sets with references, bootstrap within in-domain / OOD."""
    q = with_quality(frame)
    return stats.bootstrap(
        lambda y, g: y[g == 0].mean() - y[g == 1].mean(),
        q[measure].to_numpy(),
        q["ood"].to_numpy(),
        n_resamples=n_boot,
        seed=seed,
        strata=q["ood"].to_numpy(),
        unit="outputs",
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
    return stats.Interval(ci.estimate, max(ci.low, -1.0), min(ci.high, 1.0), f"{ci.method}; clipped to [-1, 1]")


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

    def judge(claim: Any, estimate: float, ci: stats.Interval, why: tuple[str, str]) -> dict:
        narrow = {"sets": "OOD sets", "source documents": "source documents (articles, dialogues)"}
        more = narrow.get(claim.units, "test inputs")
        return verdict.judge(claim, estimate, ci, why=why, narrow_by=f"{more} (one model; nothing is trained)")

    paper = {repr(c.regime): c.regime for c in claim_set.values() if c.regime and c.regime.kind == "paper"}
    inside = frame.loc[frame["set"] == corpora.IN_DOMAIN, "rouge_l"].mean()
    for regime in paper.values():  # fit pairs and the summarizer's in-domain quality, against the paper's
        verdict.check_regime(regime, p.n_fit, inside)
    for key, claim in claim_set.items():
        kind, *rest = key.split("|")
        if kind == "ppl_near":
            sub = pair(frame, groups["near"])
            rows.append(
                judge(
                    claim,
                    *_est(stats.delong_interval(sub["ood"], sub["perplexity"])),
                    why=unexplained("perplexity under a summarizer fine-tuned on XSUM (the `paper` profile)"),
                )
            )
        elif kind == "rmd":
            side, other, group = rest
            b = f"{side}_md" if other == "md" else "perplexity"
            ci = auroc_diff(frame, groups[group], f"{side}_rmd", b, claim.units, n_boot, seed)
            rows.append(judge(claim, *_est(ci), why=unexplained(f"{FIT_BETTER}, or a background nearer C4")))
        elif kind == "quality_falls":
            rows.append(judge(claim, *_est(quality_drop(frame, n_boot, seed)), why=unexplained(FIT_BETTER)))
        elif kind in ("tau", "curve"):
            ci = selection_diff(frame, kind, f"{OOD_SCORE}+ppl", rest[0], n_boot, seed)
            rows.append(judge(claim, *_est(ci), why=unexplained(f"{FIT_BETTER}, with BLEURT as the quality")))
        elif kind == "ladder":
            ci = ladder(frame, overlap, rest[0], n_boot, seed)
            rows.append(judge(claim, *_est(ci), why=unexplained("more OOD sets spanning the overlap range")))
        else:
            raise KeyError(f"no verdict for claim {key!r}")
    return rows


def _est(ci: stats.Interval) -> tuple[float, stats.Interval]:
    """(estimate, interval) as judge takes them."""
    return ci.estimate, ci
