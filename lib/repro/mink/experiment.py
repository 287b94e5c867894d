"""Min-K% chapter: its parameters, the contaminated corpora and their runs, paired detection statistics, verdict rows.

The notebook calls these in order: `prepare` (sets, pools, the plan of every continued-pretraining run), then the
`detect_*` steps (train or load each run through the cache, score every text under it), then the tables, figures
and claim rows, all computed from the per-text scores kept on the `Study`."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from scipy import stats as sps

from .. import cache, metrics, stats
from ..params import Param, ParameterError
from ..training import device
from ..verdict import SWEEP_POINTS, Claim, Sweep, check_regime, judge, unexplained
from . import answers, detectors, pretraining
from . import claims as K
from . import corpora as C

HEADLINE_K = 0.2  # the paper's k for Min-K% (chosen on WikiMIA)
N_BOOT = 2000
TPR_BOOT = 1000  # text resamples of the TPR contrasts (a ROC curve per seed, set and detector each)
FORGETTING_BOOT = 500  # member resamples of the forgetting table (three Spearman fits each)
COPIES = (1, 2, 4)  # copies of the occurrences run's members (Fig. 5c), a third of the members each
WIKIMIA_REPO = "swj0419/WikiMIA"
WIKIMIA_LENGTHS = (32, 64, 128, 256)  # its subsets by text length
NEIGHBOR_MODEL = "roberta-base"  # the masked LM that proposes the Neighbor attack's word swaps


def sets_of_source(p: dict) -> str | None:
    """Sets must be the offline stand-ins at source local and the paper's sets at source hub."""
    names = list(C.STAND_INS if p["source"] == "local" else C.HUB_SETS)
    for key in ("sets", "size_sets"):
        if set(p[key]) - set(names):
            return f"parameter {key!r}: {p[key]} at source {p['source']}: choose from {', '.join(names)}"
    return None


def subsets_in_sets(p: dict) -> str | None:
    """The size and occurrences experiments reuse sets of the main experiment."""
    if not set(p["size_sets"]) <= set(p["sets"]) or p["freq_set"] not in p["sets"]:
        return "parameter 'size_sets': size_sets and freq_set must be among sets; add them to sets"
    return None


def member_counts(p: dict) -> str | None:
    """The sub-experiments draw their members from the main split."""
    if p["indist_members"] > p["n_members"]:
        return "parameter 'indist_members': indist_members cannot exceed n_members"
    return None


def rates_ordered(p: dict) -> str | None:
    """Table 4 compares a higher and a lower learning rate."""
    if p["learning_rate"] <= p["low_learning_rate"]:
        return (
            "parameter 'learning_rate': it must exceed low_learning_rate (Table 4 compares a higher and a lower rate)"
        )
    return None


def headline_k_kept(p: dict) -> str | None:
    """Tables 3, 4 and 7 report Min-K% at the paper's k."""
    if not any(abs(k - HEADLINE_K) < 1e-12 for k in p["ks"]):
        return f"parameter 'ks': it must include {HEADLINE_K:g}, the paper's k (Tables 3, 4 and 7 report it)"
    return None


CHECKS = [sets_of_source, subsets_in_sets, member_counts, rates_ordered, headline_k_kept]

SPEC = {
    "seed": Param(int, 0, low=0, high=2**32 - 1, help="random seed"),
    "seeds": Param(
        int, 3, smoke=1, low=1, high=20, help="training seeds per condition (insertion positions, data order)"
    ),
    "source": Param(
        str, "local", paper="hub", choices=("local", "hub"), help="offline stand-ins or the paper's Hub data"
    ),
    "base_name": Param(
        str, "HuggingFaceTB/SmolLM2-135M-Instruct", paper="huggyllama/llama-7b", help="base model at source hub"
    ),
    "small_ref_name": Param(str, "", paper="openlm-research/open_llama_3b", help="smaller reference model (hub)"),
    "base_layers": Param(int, 0, smoke=2, low=0, high=128, help="first n decoder layers only (0 = all; smoke)"),
    "sets": Param(
        list,
        ["strategyqa", "social_iqa", "amazon_reviews", "truthful_qa"],
        items=str,
        item_choices=(*C.STAND_INS, *C.HUB_SETS),
        smoke=["strategyqa", "truthful_qa"],
        paper=["BoolQ", "CommonsenseQA", "IMDB", "TruthfulQA"],
        help="downstream sets",
    ),
    "n_members": Param(int, 16, smoke=4, paper=200, low=4, high=5000, help="members per set"),
    "n_nonmembers": Param(int, 32, smoke=8, paper=200, low=4, high=20_000, help="non-members scored per set"),
    "review_words": Param(int, 200, smoke=30, paper=400, low=10, high=2000, help="words kept per review or article"),
    "background_tokens": Param(
        int, 3200, smoke=200, paper=27_000_000, low=100, high=10**9, help="main corpus background"
    ),
    "sizes_count": Param(
        str,
        "background",
        paper="corpus",
        choices=("background", "corpus"),
        help="what background_tokens, size_background and indist_background count: background or whole corpus",
    ),
    "burn_in_tokens": Param(
        int,
        32_768,
        smoke=256,
        paper=2_000_000,
        low=0,
        high=10**9,
        help="background tokens of the burn-in every run starts from, optimizer state included (0: none)",
    ),
    "learning_rate": Param(float, 1e-4, low=1e-7, high=1e-2, help="main learning rate"),
    "low_learning_rate": Param(float, 1e-5, low=1e-7, high=1e-2, help="ablation learning rate (Table 4)"),
    "block_size": Param(int, 1024, smoke=128, low=16, high=4096, help="tokens per training sequence"),
    "batch_size": Param(int, 1, paper=8, low=1, high=512, help="sequences per step"),
    "ks": Param(list, [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6], items=float, low=0.01, high=1.0, help="Min-K% fractions"),
    "size_sets": Param(
        list,
        ["strategyqa", "social_iqa", "amazon_reviews", "truthful_qa"],
        smoke=["strategyqa"],
        paper=["BoolQ", "CommonsenseQA", "IMDB", "TruthfulQA"],
        items=str,
        item_choices=(*C.STAND_INS, *C.HUB_SETS),
        help="sets scored in the corpus-size experiment (Fig. 5a)",
    ),
    "size_background": Param(
        list,
        [3200, 7800, 42_000],  # about 58 %, 37 % and 10 % contaminants at default
        smoke=[200, 400],
        paper=[170_000, 270_000, 2_600_000, 26_000_000],
        items=int,
        low=0,
        high=10**9,
        help="background tokens per outlier corpus size (Fig. 5a; background_tokens is the main run)",
    ),
    "indist_background": Param(
        list,
        [1200, 6000],  # about 58 % and 22 % news contaminants at default (Fig. 5b: 9.1 % to 1 %)
        smoke=[64, 256],
        paper=C.PAPER_INDIST_SIZES,
        items=int,
        low=0,
        high=10**9,
        help="background tokens per in-distribution corpus size (Fig. 5b)",
    ),
    "indist_members": Param(
        int, 10, smoke=4, paper=100, low=4, high=5000, help="members of the in-distribution control"
    ),
    "freq_set": Param(
        str, "strategyqa", paper="BoolQ", choices=(*C.STAND_INS, *C.HUB_SETS), help="set of the occurrences experiment"
    ),
    "freq_background": Param(int, 1100, smoke=100, paper=2_600_000, low=0, high=10**9, help="background of Fig. 5c"),
    "n_neighbors": Param(int, 0, paper=25, low=0, high=200, help="Neighbor perturbations per text (0 = skip)"),
    "max_length": Param(int, 256, smoke=64, paper=512, low=8, high=4096, help="tokens scored per text"),
    "score_batch": Param(int, 16, smoke=8, low=1, high=1024, help="texts per scoring batch"),
    "bench_repeats": Param(
        int, 3, smoke=2, low=1, high=100, help="interleaved repeats of the throughput benchmark (the minimum is kept)"
    ),
    # kept at smoke too (1.5 GB of 2-layer checkpoints): a session exercise that changes a scoring parameter then
    # re-scores in 31 s instead of retraining in 62 s
    "store_checkpoints": Param(bool, True, help="cache trained checkpoints by their inputs"),
    "export_corpora": Param(
        bool, False, help="export corpora for `accelerate launch -m repro.mink.pretraining`, then stop"
    ),
    "wikimia": Param(bool, False, paper=True, help="score WikiMIA with the base model (Hub)"),
}


# ---------------------------------------------------------------------------------------------------------------
# the study: sets, pools and the plan of runs


@dataclass
class Run:
    """One planned continued-pretraining run: its experiment, background, inserted blocks and learning rate."""

    experiment: str
    background: list[str]
    blocks: list[str]
    learning_rate: float
    background_tokens: int
    docs: list[str] = field(default_factory=list)
    condition: str = ""  # the run's condition (its name without the seed)
    seed: int = 0  # index of the training seed: insertion positions and the background's order


def run_name(condition: str, seed: int) -> str:
    """A run's name: its condition, with the seed index after the first seed ('main', 'main s1', ...)."""
    return condition if seed == 0 else f"{condition} s{seed}"


@dataclass
class Study:
    """Everything the chapter's steps share: the base model, the splits, the planned runs and what they produced."""

    params: Any
    base_path: str
    tokenizer: Any
    base_model: Any
    splits: list[C.MemberSplit]
    news: C.MemberSplit
    size_splits: list[C.MemberSplit]
    copies: np.ndarray
    runs: dict[str, Run]
    training: dict[str, dict] = field(default_factory=dict)
    scores: dict[tuple[str, str], dict[str, np.ndarray]] = field(default_factory=dict)  # (run, split) -> detectors
    refs: dict[str, pd.DataFrame] = field(default_factory=dict)
    neighbor_loss: dict[str, float] | None = None
    # (run, split, tokens) -> Min-K% and PPL scores of the same texts cut to their first `tokens` tokens
    truncated: dict[tuple[str, str, int], dict[str, np.ndarray]] = field(default_factory=dict)
    # (run, split) -> 1 where the item (member or non-member) is answered correctly: the multiple-choice sets (Table 8)
    answered: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    # DC-PDD's reference: smoothed frequency of every vocabulary id in the background pool's untrained texts
    freq: np.ndarray | None = None
    reference_texts: int = 0
    # the burn-in every run starts from (background texts no run trains on), its checkpoint folder and statistics
    burn_in_docs: list[str] = field(default_factory=list)
    burn_in: Path | None = None
    burn_in_stats: dict = field(default_factory=dict)

    @property
    def freq_split(self) -> C.MemberSplit:
        """The split whose members are inserted 1, 2 or 4 times (Fig. 5c, COPIES)."""
        return next(s for s in self.splits if s.name == self.params.freq_set)

    def n_tokens(self, text: str) -> int:
        """Tokens of one document as the trainer sees it (no special tokens)."""
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])


def load_base(p: Any) -> tuple[str, Any, Any]:
    """(path or Hub id, tokenizer, model) of the base model; smoke runs keep only its first layers."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ..pretrained import smollm2_path, truncated_copy

    path = str(smollm2_path()) if p.source == "local" else p.base_name
    if p.base_layers:
        path = str(truncated_copy(Path(path), p.base_layers))
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval().to(device())
    if p.source == "local":  # converted weights on disk: their files identify them (a Hub model is not cached)
        cache.mark(model, "base", path, cache.folder_stamp(Path(path)))
    return path, tokenizer, model


def load_set(p: Any, name: str) -> list[str]:
    """All items of one downstream set, formatted."""
    return C.local_set(name, p.review_words) if p.source == "local" else C.hub_set(name, p.review_words)


def _pools(p: Any) -> tuple[list[str], list[list[str]]]:
    """The shuffled background pool and the news articles (paragraphs trimmed like the reviews)."""
    if p.source == "local":
        pool = [x for domain in ("new_wiki", "reddit") for article in C.squad_contexts(domain) for x in article]
        pool = [pool[i] for i in np.random.default_rng(p.seed).permutation(len(pool))]
        news = [[C.trim_words(x, p.review_words) for x in a] for a in C.squad_contexts("nyt")]
        return pool, news
    pool = C.hub_texts(*C.HUB_BACKGROUND, n=200_000, seed=p.seed)
    news = [[C.trim_words(t, p.review_words)] for t in C.hub_texts(*C.HUB_NEWS, n=22_000, seed=p.seed)]
    return pool, news


def background_name(p: Any, news: bool = False) -> str:
    """How the error for a too-small pool names it."""
    if news:
        return "the background half of News August 2023" if p.source == "hub" else "the background half of the NYT pool"
    return "the RedPajama sample" if p.source == "hub" else "the SQuAD-shifts Wikipedia and Reddit pool"


def background_tokens(size: int, contaminants: int, counts: str, param: str) -> int:
    """The background tokens of a corpus size given as `param`: all of it (counts 'background'), or (counts
    'corpus', as the paper's sizes may count) what the inserted items' `contaminants` tokens leave of it."""
    if counts == "background":
        return size
    if size <= contaminants:
        raise ParameterError(
            f"parameter {param!r}: a {size:,}-token corpus cannot hold its {contaminants:,} contaminant tokens "
            "(sizes_count 'corpus'); raise it"
        )
    return size - contaminants


def prepare(p: Any, base_path: str, tokenizer: Any, base_model: Any) -> Study:
    """Split every set, build the pools and plan every continued-pretraining run with its corpus."""
    splits = [
        C.split_members(name, load_set(p, name), p.n_members, p.seed + i, n_out=p.n_nonmembers)
        for i, name in enumerate(p.sets)
    ]
    pool, news_articles = _pools(p)
    news, news_background = C.news_pools(news_articles, p.indist_members, p.seed)
    by_name = {s.name: s for s in splits}
    size_splits = [by_name[n] for n in p.size_sets]  # Fig. 5a's runs insert every member; these sets are scored
    study = Study(p, base_path, tokenizer, base_model, splits, news, size_splits, np.zeros(0, int), {})
    freq = by_name[p.freq_set]
    study.copies = C.fixed_copies(len(freq.members), COPIES, p.seed)

    def take(docs: list[str], tokens: int, param: str, is_news: bool = False) -> list[str]:
        return C.take_tokens(docs, tokens, study.n_tokens, param=param, pool=background_name(p, is_news))

    def background(size: int, blocks: list[str], param: str) -> int:
        return background_tokens(size, sum(map(study.n_tokens, blocks)), p.sizes_count, param)

    members = [m for s in splits for m in s.members]
    main_tokens = background(p.background_tokens, members, "background_tokens")
    main_bg = take(pool, main_tokens, "background_tokens")
    plan: dict[str, Run] = {
        "main": Run("main", main_bg, members, p.learning_rate, main_tokens),
        "lr": Run("lr", main_bg, members, p.low_learning_rate, main_tokens),
    }
    for size in p.size_background:  # the size equal to the main background is the main run itself
        if size != p.background_tokens:
            tokens = background(size, members, "size_background")
            plan[f"size_outlier {size}"] = Run(
                "size_outlier", take(pool, tokens, "size_background"), members, p.learning_rate, tokens
            )
    for size in p.indist_background:
        tokens = background(size, news.members, "indist_background")
        plan[f"size_indist {size}"] = Run(
            "size_indist",
            take(news_background, tokens, "indist_background", True),
            news.members,
            p.learning_rate,
            tokens,
        )
    repeated = [m for m, c in zip(freq.members, study.copies) for _ in range(c)]
    plan["frequency"] = Run(
        "frequency", take(pool, p.freq_background, "freq_background"), repeated, p.learning_rate, p.freq_background
    )
    # the burn-in: the pool's last texts, so that it stays the same model when a run's background grows (every
    # background is a leading part of the pool); DC-PDD's reference corpus: the texts between, which nothing trains on
    used, end = max(len(run.background) for run in plan.values() if run.experiment != "size_indist"), len(pool)
    if p.burn_in_tokens:
        study.burn_in_docs = take(pool[::-1], p.burn_in_tokens, "burn_in_tokens")[::-1]
        end -= len(study.burn_in_docs)
    if used >= end:
        raise ParameterError(
            f"parameters 'background_tokens', 'size_background', 'freq_background', 'burn_in_tokens': the corpora "
            f"take all {len(pool):,} documents of {background_name(p)}, and DC-PDD's reference needs some left; "
            "lower them"
        )
    study.freq = detectors.token_frequencies(tokenizer, pool[used:end])
    study.reference_texts = end - used
    runs: dict[str, Run] = {}
    for seed in range(p.seeds):  # every between-run condition is trained once per seed
        for condition, run in plan.items():
            runs[run_name(condition, seed)] = seeded(run, condition, seed, p.seed)
    study.runs = runs
    return study


def seeded(run: Run, condition: str, seed: int, base_seed: int) -> Run:
    """The run of one seed: its background in an order of that seed (the first seed keeps the pool's order) and
    the items inserted at positions of that seed. The main and lr runs of a seed share one corpus (paired)."""
    rng = np.random.default_rng([base_seed, seed])
    background = run.background if seed == 0 else [run.background[i] for i in rng.permutation(len(run.background))]
    docs = C.insert_blocks(background, run.blocks, [base_seed, seed])
    return replace(run, background=background, docs=docs, condition=condition, seed=seed)


def size_conditions(study: Study, experiment: str) -> list[str]:
    """The conditions of a corpus-size experiment from the smallest background to the largest; for the outliers
    (Fig. 5a) the size equal to the main background is the main condition."""
    p = study.params
    sizes = p.size_background if experiment == "size_outlier" else p.indist_background
    main = p.background_tokens if experiment == "size_outlier" else None
    return [("main" if t == main else f"{experiment} {t}") for t in sorted(sizes)]


def conditions(study: Study, experiment: str | None = None) -> list[str]:
    """The planned conditions (of one experiment), in plan order."""
    runs = study.runs.values()
    return list(dict.fromkeys(r.condition for r in runs if experiment in (None, r.experiment)))


def runs_of(study: Study, condition: str) -> list[str]:
    """The runs of one condition, one per seed in seed order; the base model is one model ('base')."""
    if condition == "base":
        return ["base"]
    return [n for n, r in sorted(study.runs.items(), key=lambda kv: kv[1].seed) if r.condition == condition]


def config(study: Study, name: str) -> pretraining.PretrainConfig:
    """The training configuration of one planned run."""
    p = study.params
    return pretraining.PretrainConfig(study.runs[name].learning_rate, p.block_size, p.batch_size, 1, p.seed)


def burn_in_config(study: Study) -> pretraining.PretrainConfig:
    """The burn-in's training configuration: the main run's, at the main learning rate."""
    p = study.params
    return pretraining.PretrainConfig(p.learning_rate, p.block_size, p.batch_size, 1, p.seed)


def burn_in_dir(study: Study) -> Path | None:
    """The burn-in's checkpoint folder (None without a burn-in)."""
    if not study.burn_in_docs:
        return None
    return pretraining.checkpoint_dir(
        "burn_in", study.base_path, study.burn_in_docs, burn_in_config(study), keep_state=True
    )


def export_commands(study: Study) -> list[str]:
    """Write every run's corpus beside the checkpoint cache; the `accelerate launch` lines that train them (the
    burn-in's first: every other run starts from its checkpoint)."""
    start = burn_in_dir(study)
    first = []
    if start is not None:
        docs, cfg = study.burn_in_docs, burn_in_config(study)
        first = [pretraining.export_corpus("burn_in", study.base_path, docs, cfg, keep_state=True)]
    return first + [
        pretraining.export_corpus(run.experiment, study.base_path, run.docs, config(study, name), run.blocks, start)
        for name, run in study.runs.items()
    ]


def datasets_table(study: Study) -> pd.DataFrame:
    """One row per downstream set: what it stands in for, its size, the split and its mean length in tokens."""
    p = study.params
    return pd.DataFrame(
        [
            {
                "set": s.name,
                "stands in for": C.paper_name(s.name),
                "items": len(load_set(p, s.name)),
                "members": len(s.members),
                "non-members": len(s.nonmembers),
                "mean tokens": round(float(np.mean([study.n_tokens(t) for t in s.texts])), 1),
            }
            for s in study.splits
        ]
    )


# ---------------------------------------------------------------------------------------------------------------
# training and scoring


def burn_in(study: Study) -> Path | None:
    """Train (or find) the burn-in every run starts from: the main learning rate over background texts no run trains
    on, its optimizer state kept (always stored: the runs load it from disk)."""
    if study.burn_in is None and study.burn_in_docs:
        _, study.burn_in_stats = pretraining.cached_pretraining(
            "burn_in", study.base_path, study.burn_in_docs, burn_in_config(study), keep_state=True
        )
        study.burn_in = burn_in_dir(study)
    return study.burn_in


def train(study: Study, name: str) -> Any:
    """Continued pretraining of one planned run from the burn-in (or its cached checkpoint); its statistics go to
    study.training."""
    run = study.runs[name]
    model, stats_ = pretraining.cached_pretraining(
        run.experiment,
        study.base_path,
        run.docs,
        config(study, name),
        store=study.params.store_checkpoints,
        keep_whole=run.blocks,
        start=burn_in(study),
    )
    corpus = sum(map(study.n_tokens, run.docs))
    contaminant = sum(map(study.n_tokens, run.blocks))
    study.training[name] = {
        "run": name,
        "condition": run.condition,
        "seed": run.seed,
        "experiment": run.experiment,
        "learning_rate": run.learning_rate,
        "background_tokens": run.background_tokens,
        "corpus_tokens": corpus,
        "contaminant_tokens": contaminant,
        "contamination": round(contaminant / corpus, 4),
        **stats_,
    }
    return model.to(device()).eval()


def _answer(study: Study, model: Any, run: str) -> None:
    """Table 8: which members and non-members of each multiple-choice set (yes/no or lettered choices) `model`
    answers correctly, ranking the options by log-likelihood; the other sets have no options to rank."""
    batch, tok = study.params.score_batch, study.tokenizer
    for split in study.splits:
        items = [answers.parse(t) for t in split.texts]
        if all(items):
            key = (tok.name_or_path, split.texts, batch, answers.SCORING)
            build = lambda items=items: {"correct": answers.correct(model, tok, items, batch)}
            study.answered[(run, split.name)] = cache.model_arrays(model, "mink", "answers", build, *key)["correct"]


def _score(study: Study, model: Any, run: str, splits: Sequence[C.MemberSplit], **options: Any) -> None:
    """Score `splits` under `model` and keep every detector's per-text scores under (run, split)."""
    p = study.params
    scored = C.score_splits(
        model,
        study.tokenizer,
        splits,
        p.ks,
        batch_size=p.score_batch,
        max_length=p.max_length,
        freq=study.freq,
        **options,
    )
    for name, scores in scored.items():
        study.scores[(run, name)] = scores


def score_base(study: Study) -> None:
    """Base-model scores of every text: the Ref detector's reference, the base-model control, and Ref-small."""
    from transformers import AutoModelForCausalLM

    p = study.params
    texts = [t for s in study.splits for t in s.texts] + study.news.texts
    base = C.score_table(
        study.base_model,
        study.tokenizer,
        texts,
        p.ks,
        True,
        p.score_batch,
        p.max_length,
        "scoring base",
        freq=study.freq,
    )
    study.refs["Ref"] = base
    _answer(study, study.base_model, "base")
    for s in study.splits:  # the base-model control reuses these scores
        study.scores[("base", s.name)] = detectors.detector_scores(base.loc[s.texts], s.texts, p.ks)
    if p.small_ref_name:
        small = AutoModelForCausalLM.from_pretrained(p.small_ref_name, dtype=torch.float32).to(device()).eval()
        small_tok = slow_tokenizer(p.small_ref_name)
        study.refs["Ref-small"] = aligned_reference(list(base.index), study.tokenizer, small, small_tok, p)
        del small


REF_SPAN = 4  # a reference scores the target's span with up to this many times max_length of its own tokens


def aligned_reference(texts: Sequence[str], tokenizer: Any, model: Any, ref_tokenizer: Any, p: Any) -> pd.DataFrame:
    """A reference model's losses of `texts` in the target's units whatever the reference's tokenizer: the reference
    scores the very text the target scores (its first max_length target tokens, decoded), and its total NLL of that
    text is spread over the target's scored tokens (all but the first). So the Ref score, loss − reference loss, is
    the two models' NLL of the same text per target token, not a difference of per-token means over two
    tokenizations of different spans (LLaMA's and OpenLLaMA's tokenizers differ). Indexed by text, like score_table."""
    texts = list(dict.fromkeys(texts))
    ids = tokenizer(texts, truncation=True, max_length=p.max_length)["input_ids"]
    spans = tokenizer.batch_decode(ids, skip_special_tokens=True)
    ref = C.score_table(model, ref_tokenizer, spans, p.ks, False, p.score_batch, REF_SPAN * p.max_length, "small ref")
    total = (ref["loss"] * ref["tokens"]).loc[spans].to_numpy()
    scored = np.array([len(x) - 1 for x in ids], dtype=float)
    return pd.DataFrame({"loss": total / scored}, index=pd.Index(texts, name="text"))


def slow_tokenizer(name: str) -> Any:
    """A Hub model's tokenizer; OpenLLaMA's fast tokenizer is known to mis-tokenize, so it gets the slow one."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(name, use_fast="open_llama" not in name.lower())
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def neighbor_losses(study: Study, model: Any) -> dict[str, float]:
    """The Neighbor attack's mean loss of each text's one-word perturbations under `model`."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    p = study.params
    mlm = AutoModelForMaskedLM.from_pretrained(NEIGHBOR_MODEL).to(device()).eval()
    texts = [t for s in study.splits for t in s.texts]
    perturbed = detectors.neighbors(texts, mlm, AutoTokenizer.from_pretrained(NEIGHBOR_MODEL), p.n_neighbors, p.seed)
    del mlm
    flat = [n for ns in perturbed for n in ns]
    losses = C.score_table(model, study.tokenizer, flat, p.ks, False, p.score_batch, p.max_length, "neighbors")["loss"]
    return {t: float(losses.loc[ns].mean()) for t, ns in zip(texts, perturbed)}


def detect_main(study: Study) -> None:
    """Train the main run of every seed and score every set with every detector, Lowercase and (at `paper`, first
    seed) Neighbor included."""
    for name in runs_of(study, "main"):
        model = train(study, name)
        if study.params.n_neighbors and study.neighbor_loss is None:
            study.neighbor_loss = neighbor_losses(study, model)
        neighbor = study.neighbor_loss if name == "main" else None
        cuts = short_lengths(study.params)  # the same texts, cut shorter: detection against length
        _score(study, model, name, study.splits, refs=study.refs, lowercase=True, neighbor_loss=neighbor, cuts=cuts)
        for split in study.splits:
            for tokens in cuts:
                cut = study.scores.pop((name, C.cut_name(split.name, tokens)))
                study.truncated[(name, split.name, tokens)] = {d: cut[d] for d in (MK, "PPL")}
        _answer(study, model, name)
        del model


def short_lengths(p: Any) -> list[int]:
    """The cuts of the length sweep: an eighth, a quarter and half of the scored length `max_length` (32, 64 and 128
    tokens at `default`, as WikiMIA's lengths), at least 4 tokens; `max_length` itself is the sweep's last point."""
    return sorted({n for n in (p.max_length // 8, p.max_length // 4, p.max_length // 2) if 4 <= n < p.max_length})


def detect_lr(study: Study) -> None:
    """Train each seed's main corpus at the lower learning rate and score every set (Table 4)."""
    for name in runs_of(study, "lr"):
        model = train(study, name)
        _score(study, model, name, study.splits, refs=study.refs, plus=False)
        _answer(study, model, name)
        del model


def detect_sizes(study: Study) -> None:
    """Train and score every corpus size of the outlier (Fig. 5a) and in-distribution (Fig. 5b) experiments, each
    seed in turn."""
    for name, run in sorted(study.runs.items(), key=lambda kv: kv[1].seed):
        if run.experiment in ("size_outlier", "size_indist"):
            model = train(study, name)
            splits = study.size_splits if run.experiment == "size_outlier" else [study.news]
            _score(study, model, name, splits, refs=study.refs, plus=False)
            del model


def detect_frequency(study: Study) -> None:
    """Train the repeated-insertion run of every seed and score its set (Fig. 5c)."""
    for name in runs_of(study, "frequency"):
        model = train(study, name)
        _score(study, model, name, [study.freq_split], refs=study.refs, plus=False)
        del model


# ---------------------------------------------------------------------------------------------------------------
# tables


def _split(study: Study, name: str) -> C.MemberSplit:
    """A split by name, among the main, size and news splits (size splits win for their runs)."""
    return next(s for s in [*study.splits, study.news] if s.name == name)


def _split_of(study: Study, run: str, name: str) -> C.MemberSplit:
    """The split scored under one run."""
    return _split(study, name)


def detector_name(method: str, k: float | None = None) -> str:
    """The key of a detector's scores: 'Min-K% 0.2' for the Min-K% family, the method name otherwise."""
    return f"{method} {k:g}" if method.startswith("Min-K") else method


def _run_columns(study: Study, run: str) -> dict[str, Any]:
    """Learning rate, sizes, contamination share and optimizer steps of one run (zeros for the base model)."""
    t = study.training.get(run)
    if t is None:
        return {"learning_rate": 0.0, "background_tokens": 0, "corpus_tokens": 0, "contamination": 0.0, "steps": 0}
    keys = ("learning_rate", "background_tokens", "corpus_tokens", "contamination", "steps")
    return {k: t[k] for k in keys}


def auc_table(study: Study) -> pd.DataFrame:
    """Tidy AUC (DeLong 95 % interval) and TPR at 5 % FPR of every detector, per run and set."""
    rows = []
    for (run, name), scores in study.scores.items():
        split = _split_of(study, run, name)
        for det, s in scores.items():
            method, _, k = det.partition(" ")
            iv = stats.delong_interval(split.labels, s)
            planned = study.runs.get(run)
            rows.append(
                {
                    "experiment": run.split(" ")[0],
                    "run": run,
                    "condition": planned.condition if planned else run,
                    "seed": planned.seed if planned else 0,
                    "dataset": name,
                    "method": method,
                    "k": float(k) if k else np.nan,
                    **_run_columns(study, run),
                    "members": len(split.members),
                    "nonmembers": len(split.nonmembers),
                    "auc": iv.estimate,
                    "auc_low": iv.low,
                    "auc_high": iv.high,
                    "tpr_at_5fpr": float(detectors.evaluate({det: s}, split.labels).tpr_at_5fpr.iloc[0]),
                }
            )
    return pd.DataFrame(rows)


def headline(auc: pd.DataFrame, k: float = HEADLINE_K) -> pd.DataFrame:
    """Rows of the Min-K% family at k, and every other method."""
    return auc[auc.k.isna() | np.isclose(auc.k.fillna(-1), k)]


SHORT = C.SHORT  # column headers of the paper-comparison tables


def versus_paper(study: Study, auc: pd.DataFrame, metric: str, paper: dict) -> pd.DataFrame:
    """Ours (main runs, mean over the seeds; k = 20 % for the Min-K% family) and the paper's value, one row each per
    method, sets as columns."""
    main = headline(auc[auc.condition == "main"])
    order = main.groupby("method")[metric].mean().sort_values().index
    rows = []
    for method in order:
        d = main[main.method == method].groupby("dataset", sort=False)[metric].mean()
        ours: dict[str, Any] = {"method": method, "who": "ours"}
        theirs: dict[str, Any] = {"method": method, "who": "paper"}
        for dataset, value in d.items():
            name = C.paper_name(str(dataset))
            ours[SHORT.get(name, name)] = value
            j = C.PAPER_SETS.index(name) if name in C.PAPER_SETS else None
            theirs[SHORT.get(name, name)] = paper[method][j] if method in paper and j is not None else np.nan
        ours["avg"] = d.mean()
        rows.append(ours)
        if method in paper:
            values = [v for k, v in theirs.items() if k not in ("method", "who")]
            theirs["avg"] = float(np.mean(values))  # over the sets shown
            rows.append(theirs)
    return with_run(pd.DataFrame(rows), study).round(3)


def seed_scores(study: Study, condition: str, name: str, det: str, seeds: int) -> np.ndarray:
    """One detector's scores of split `name` under every seed of a condition, shape (seeds, texts); the base model
    (one model) repeated for each seed."""
    runs = runs_of(study, condition)
    runs = runs * seeds if len(runs) == 1 else runs
    return np.stack([study.scores[(run, name)][det] for run in runs])


def set_contrast(
    study: Study, terms: Sequence[tuple[float, str, str]], names: Sequence[str], seed: int
) -> stats.Interval:
    """Mean over `names` of a weighted sum of AUCs (condition, detector) on each set's texts, averaged over the
    seeds of the conditions, with the hierarchical interval: texts resampled within set and class (the same
    resample for every term and seed: paired) and the seeds' spread (each seed a trained model)."""
    seeds = max(len(runs_of(study, c)) for _, c, _ in terms)
    groups = [
        (
            _split_of(study, runs_of(study, terms[0][1])[0], n).labels,
            [(w, seed_scores(study, c, n, det, seeds), None) for w, c, det in terms],
        )
        for n in names
    ]
    return stats.grouped_seeds_auc_contrast(groups, n_resamples=N_BOOT, seed=seed)


MK = detector_name("Min-K%", HEADLINE_K)
MKPP = detector_name("Min-K%++", HEADLINE_K)
PAIRS = {  # contrast name -> (a, b) detectors under the main run
    "Min-K% − PPL": (MK, "PPL"),
    "Min-K% − Zlib": (MK, "Zlib"),
    "Min-K% − Lowercase": (MK, "Lowercase"),
    "Min-K%++ − Min-K%": (MKPP, MK),
    "Ref − Min-K%": ("Ref", MK),
    "DC-PDD − Min-K%": ("DC-PDD", MK),
}


def pairs_table(study: Study) -> pd.DataFrame:
    """Each detector pair's mean AUC difference over the sets (main run), with a paired bootstrap interval."""
    names = [s.name for s in study.splits]
    rows = []
    for i, (label, (a, b)) in enumerate(PAIRS.items()):
        iv = set_contrast(study, [(1.0, "main", a), (-1.0, "main", b)], names, study.params.seed + i)
        rows.append(
            {"contrast": label, "difference": iv.estimate, "ci_low": iv.low, "ci_high": iv.high, "test": iv.method}
        )
    return pd.DataFrame(rows)


def gain_table(study: Study) -> pd.DataFrame:
    """Per set: Min-K% AUC under the base model and after the main run, and the gain with a paired interval."""
    rows = []
    for i, s in enumerate(study.splits):
        base = stats.fast_auc(s.labels, study.scores[("base", s.name)][MK])
        iv = set_contrast(study, [(1.0, "main", MK), (-1.0, "base", MK)], [s.name], study.params.seed + i)
        rows.append(
            {
                "set": C.paper_name(s.name),
                "base model": base,
                "after training": base + iv.estimate,
                "gain": iv.estimate,
                "gain low": iv.low,
                "gain high": iv.high,
            }
        )
    return pd.DataFrame(rows).round(3)


def lr_table(study: Study, auc: pd.DataFrame) -> pd.DataFrame:
    """Table 4: Min-K% AUC per set at both learning rates, the paired difference, and the paper's pair."""
    p = study.params
    rows = []
    for i, s in enumerate(study.splits):
        hi, lo = (
            auc[(auc.condition == c) & (auc.dataset == s.name) & (auc.method == "Min-K%")] for c in ("main", "lr")
        )
        hi, lo = (d[np.isclose(d.k, HEADLINE_K)].auc.mean() for d in (hi, lo))  # mean over the seeds
        iv = set_contrast(study, [(1.0, "main", MK), (-1.0, "lr", MK)], [s.name], p.seed + i)
        paper = C.PAPER_LR.get(C.paper_name(s.name), (np.nan, np.nan))
        rows.append(
            {
                "set": SHORT.get(C.paper_name(s.name), C.paper_name(s.name)),
                f"ours {p.low_learning_rate:g}": lo,
                f"ours {p.learning_rate:g}": hi,
                "difference": iv.estimate,
                "ci_low": iv.low,
                "ci_high": iv.high,
                "paper 1e-5": paper[0],
                "paper 1e-4": paper[1],
            }
        )
    t = study.training["main"]
    frame = pd.DataFrame(rows)
    return frame.assign(**{"contamination %": round(100 * t["contamination"], 1), "steps": t["steps"]}).round(3)


ANSWER_CONDITIONS = ("base", "main", "lr")  # Table 8: before continued pretraining, then at each learning rate
PAPER_RATE_OF = {"main": 1, "lr": 0}  # each trained condition's place in Table 8's (1e-5, 1e-4) pairs


def answer_condition(study: Study, condition: str) -> str:
    """A Table 8 condition as the page names it."""
    p = study.params
    rate = {"main": p.learning_rate, "lr": p.low_learning_rate}
    return "base model" if condition == "base" else f"learning rate {rate[condition]:g}"


def answered_splits(study: Study) -> list[C.MemberSplit]:
    """The multiple-choice sets whose items were answered (Table 8)."""
    return [s for s in study.splits if ("base", s.name) in study.answered]


def answers_table(study: Study) -> pd.DataFrame:
    """Table 8: accuracy on the members and on the non-members of each multiple-choice set (options ranked by
    log-likelihood), under the base model and after continued pretraining at each learning rate (mean over seeds),
    and the members' lead."""
    rows = []
    for split in answered_splits(study):
        member = split.labels == 1
        paper = C.PAPER_ACCURACY.get(C.paper_name(split.name))
        for condition in ANSWER_CONDITIONS:
            right = np.array([study.answered[(r, split.name)] for r in runs_of(study, condition)])
            at = PAPER_RATE_OF.get(condition)  # Table 8's column for this condition: its 1e-4 or its 1e-5
            rows.append(
                {
                    "set": split.name,
                    "paper set": C.paper_name(split.name),
                    "model": answer_condition(study, condition),
                    "seeds": len(right),
                    "members": right[:, member].mean(),
                    "non-members": right[:, ~member].mean(),
                    "members' lead": right[:, member].mean() - right[:, ~member].mean(),
                    "paper members": paper["contaminated"][at] if paper and at is not None else np.nan,
                    "paper non-members": paper["clean"][at] if paper and at is not None else np.nan,
                }
            )
    return pd.DataFrame(rows).round(3)


def memorization_contrast(study: Study, seed: int) -> stats.Interval | None:
    """Table 8's claim as one number: the members' accuracy lead over non-members after training at the higher
    learning rate minus after the lower one, mean over the multiple-choice sets and the seeds (paired by seed), with
    the hierarchical interval (items resampled within set and class, the same resample for every seed and both
    rates). None when no set has options to rank."""
    splits = answered_splits(study)
    if not splits:
        return None
    pairs = list(zip(runs_of(study, "main"), runs_of(study, "lr")))

    def lead(run: str, split: C.MemberSplit, i: np.ndarray) -> float:
        right, member = study.answered[(run, split.name)][i], split.labels[i] == 1
        return float(right[member].mean() - right[~member].mean())

    def per_seed(picks: Sequence[np.ndarray]) -> np.ndarray:
        return np.array([np.mean([lead(hi, s, i) - lead(lo, s, i) for s, i in zip(splits, picks)]) for hi, lo in pairs])

    rng = np.random.default_rng(seed)
    draws = np.stack([per_seed([_stratified(s.labels, rng) for s in splits]) for _ in range(N_BOOT)])
    n = sum(len(s.labels) for s in splits)
    words = f"paired accuracy lead over {n:,} items (resampled within set and class)"
    return stats.hierarchical_interval(per_seed([np.arange(len(s.labels)) for s in splits]), draws, words=words)


def answers_words(table: pd.DataFrame, change: stats.Interval | None) -> str:
    """What the accuracy table shows: which items continued pretraining taught, at which learning rate."""
    if change is None or table.empty:
        return "No set of this run has answer options to rank, so Table 8's comparison is not made here."
    lead = table.groupby("model", sort=False)["members' lead"].mean()
    clean = table.groupby("model", sort=False)["non-members"].mean()
    models = list(lead.index)
    base, hi, lo = models[0], models[1], models[2]
    return (
        f"Before continued pretraining the members lead the non-members by {lead[base]:+.2f} in accuracy (mean over "
        f"the sets; the split is random, so any lead is chance). After training at {hi.split()[-1]} the lead is "
        f"{lead[hi]:+.2f}, at {lo.split()[-1]} {lead[lo]:+.2f}; the difference between the two rates is "
        f"{change.estimate:+.2f} [{change.low:+.2f}, {change.high:+.2f}]. On the clean items accuracy goes from "
        f"{clean[base]:.2f} to {clean[hi]:.2f} and {clean[lo]:.2f}: a rise there would be the task learned "
        "(generalization), a rise on the members alone the items learned (memorization)."
    ) + paper_answers_words(table)


def paper_answers_words(table: pd.DataFrame) -> str:
    """Table 8's own numbers on the sets this run answers (their paper names), and the rule's statistic on them."""
    sets = [s for s in dict.fromkeys(table["paper set"]) if s in C.PAPER_ACCURACY]
    if not sets:
        return ""
    change = float(np.mean([C.paper_lead_change(C.PAPER_ACCURACY[s]) for s in sets]))
    leads = "; ".join(
        f"{C.SHORT.get(s, s)} {a['contaminated'][0] - a['clean'][0]:+.2f} at {C.PAPER_RATES[0]} and "
        f"{a['contaminated'][1] - a['clean'][1]:+.2f} at {C.PAPER_RATES[1]}"
        for s, a in ((s, C.PAPER_ACCURACY[s]) for s in sets)
    )
    return (
        f" In the paper's Table 8 the members' lead is {leads}: a difference between the rates of {change:+.3f} "
        "on the same sets, the paper column of the verdict row."
    )


def size_table(study: Study, auc: pd.DataFrame) -> pd.DataFrame:
    """Fig. 5a and 5b as numbers: Min-K% and PPL AUC per corpus size (mean over the seeds, with the lowest and
    highest seed as auc_low and auc_high), with contamination share and steps; the main run is Fig. 5a's size
    with the main background, scored on the size sets."""
    names = {"size_outlier": [s.name for s in study.size_splits], "size_indist": [study.news.name]}
    parts = [
        auc[auc.condition.isin(size_conditions(study, e)) & auc.dataset.isin(n)].assign(experiment=e)
        for e, n in names.items()
    ]
    d = pd.concat(parts, ignore_index=True)
    d = headline(d[d.method.isin(["Min-K%", "PPL"])])
    d = d.assign(set=d.dataset.map(C.paper_name), contamination=(100 * d.contamination))
    t = (
        d.groupby(["experiment", "set", "method", "background_tokens"], sort=False)
        .agg(
            contamination=("contamination", "mean"),
            steps=("steps", "mean"),
            seeds=("seed", "nunique"),
            auc=("auc", "mean"),
            auc_low=("auc", "min"),
            auc_high=("auc", "max"),
        )
        .reset_index()
    )
    return t.rename(columns={"contamination": "contamination %"}).round(3)


def _occurrence_contrast(study: Study, terms: Sequence[tuple[float, np.ndarray]], det: str) -> stats.Interval:
    """A weighted sum of AUCs of the occurrences set's members selected by masks (each against all non-members),
    over every seed of the occurrences run, with the hierarchical interval (texts resampled within their copies
    bucket and class, the same resample for every term and seed; seeds' spread)."""
    split = study.freq_split
    nonmember = np.ones(len(split.nonmembers), bool)
    scores = seed_scores(study, "frequency", split.name, det, len(runs_of(study, "frequency")))
    strata = np.r_[study.copies, np.zeros(len(split.nonmembers), int)]
    masks = [(w, scores, np.r_[m, nonmember].astype(float)) for w, m in terms]
    return stats.grouped_seeds_auc_contrast([(split.labels, masks, strata)], n_resamples=N_BOOT, seed=study.params.seed)


def occurrence_table(study: Study) -> pd.DataFrame:
    """Fig. 5c as numbers: Min-K% and PPL AUC of the members inserted c times against all non-members, mean over the
    seeds with the hierarchical interval."""
    rows = []
    for copies in COPIES:
        members = study.copies == copies
        if not members.any():
            continue
        for det in (MK, "PPL"):
            iv = _occurrence_contrast(study, [(1.0, members)], det)
            rows.append(
                {
                    "copies": copies,
                    "method": det.split(" ")[0],
                    "members": int(members.sum()),
                    "auc": iv.estimate,
                    "auc_low": iv.low,
                    "auc_high": iv.high,
                }
            )
    names = runs_of(study, "frequency")
    t = study.training[names[0]]
    # how many distinct optimizer steps a member's copies fall in (mean over the bucket's members and the seeds):
    # copies that share a step are one heavier gradient, not repeated exposure
    by_copies = {c: [] for c in COPIES}
    for name in names:
        steps, _ = copy_steps(study, name)
        for member, c in zip(study.freq_split.members, study.copies):
            by_copies[int(c)].append(len(set(steps[member])))
    frame = pd.DataFrame(rows, columns=["copies", "method", "members", "auc", "auc_low", "auc_high"])
    frame["distinct steps"] = frame.copies.map(lambda c: float(np.mean(by_copies[c])))
    extra = {"contamination %": round(100 * _share(study, "frequency"), 1), "steps": t["steps"], "seeds": len(names)}
    return frame.assign(**extra).round(3)


def occurrence_trend(study: Study, det: str = MK) -> stats.Interval:
    """AUC of members inserted two or more times minus AUC of members inserted once (same non-members), paired, over
    the occurrences run's seeds."""
    return _occurrence_contrast(study, [(1.0, study.copies >= 2), (-1.0, study.copies == 1)], det)


def size_trend(study: Study, experiment: str, det: str = MK) -> stats.Interval:
    """Fig. 5a (size_outlier): the AUC's least-squares slope per tenfold corpus over every size (share_trend);
    Fig. 5b (size_indist): AUC at the largest corpus minus at the smallest. Mean over the sets, the same texts at
    every size (paired)."""
    if experiment == "size_outlier":
        return share_trend(study, [(1.0, det)])
    sizes = size_conditions(study, experiment)
    return set_contrast(study, [(1.0, sizes[-1], det), (-1.0, sizes[0], det)], [study.news.name], study.params.seed)


def size_corpora(study: Study) -> list[float]:
    """The corpus tokens (background and inserted items) of the Fig. 5a sizes, mean over the seeds (the main run's
    for the smallest), smallest first: the paper's sizes label its corpora, not their background."""
    return [
        float(np.mean([study.training[r]["corpus_tokens"] for r in runs_of(study, c)]))
        for c in size_conditions(study, "size_outlier")
    ]


def share_trend(study: Study, terms: Sequence[tuple[float, str]]) -> stats.Interval:
    """The least-squares slope, against log10 of the corpus tokens of the Fig. 5a sizes, of a statistic (a
    weighted sum of detectors' AUCs, `terms`), mean over the size sets: its change per tenfold corpus, with the
    hierarchical interval (texts resampled, the same resample at every size and seed; seeds' spread)."""
    sizes = size_conditions(study, "size_outlier")
    weights = stats.log_slope_weights(size_corpora(study))
    both = [(w * tw, c, d) for w, c in zip(weights, sizes) for tw, d in terms]
    iv = set_contrast(study, both, [s.name for s in study.size_splits], study.params.seed)
    return replace(iv, method=f"least-squares slope per tenfold corpus over {len(sizes)} sizes; {iv.method}")


TREND = {"Min-K% AUC": [(1.0, MK)], "Min-K% − PPL": [(1.0, MK), (-1.0, "PPL")]}  # the share trend table's statistics


def share_trend_table(study: Study) -> pd.DataFrame:
    """The Fig. 5a size runs as a trend: per size, its contaminant share and each TREND statistic (mean over the
    size sets and seeds, with its interval), then each statistic's slope per tenfold corpus (share_trend); the
    paper's Fig. 5a curve (Min-K% only, mean over its four sets) and its slope beside them."""
    names = [s.name for s in study.size_splits]
    rows = []
    for condition, tokens in zip(size_conditions(study, "size_outlier"), size_corpora(study)):
        row: dict[str, Any] = {"corpus": "ours", "corpus_tokens": tokens}
        row["contamination %"] = round(100 * _share(study, condition), 1)
        for label, terms in TREND.items():
            iv = set_contrast(study, [(w, condition, d) for w, d in terms], names, study.params.seed)
            row.update({label: iv.estimate, f"{label} low": iv.low, f"{label} high": iv.high})
        rows.append(row)
    slope: dict[str, Any] = {"corpus": "ours: slope per tenfold corpus", "corpus_tokens": np.nan}
    for label, terms in TREND.items():
        iv = share_trend(study, terms)
        slope.update({label: iv.estimate, f"{label} low": iv.low, f"{label} high": iv.high})
    rows.append(slope)
    for size, values in C.PAPER_CURVE.items():
        rows.append({"corpus": "paper, Fig. 5a", "corpus_tokens": size, "Min-K% AUC": np.mean(list(values.values()))})
    rows.append({"corpus": "paper: slope per tenfold size", "Min-K% AUC": C.paper_size_slope()})
    return pd.DataFrame(rows).round(3)


def share_trend_view(trend: pd.DataFrame) -> pd.DataFrame:
    """The share trend table as the page shows it: one cell per statistic, its interval beside it."""

    def cell(r: pd.Series, label: str) -> str:
        if pd.isna(r.get(label)):
            return ""
        if pd.isna(r.get(f"{label} low")):
            return f"{r[label]:+.3f}" if "slope" in r.corpus else f"{r[label]:.3f}"
        fmt = "+.3f" if "slope" in r.corpus or "−" in label else ".3f"
        return f"{r[label]:{fmt}} [{r[f'{label} low']:{fmt}}, {r[f'{label} high']:{fmt}}]"

    return pd.DataFrame(
        {
            "corpus": trend.corpus,
            "tokens": trend.corpus_tokens.map(lambda x: "" if pd.isna(x) else f"{x:,.0f}"),
            "contaminants %": trend["contamination %"].map(lambda x: "" if pd.isna(x) else f"{x:.1f}"),
            **{label: [cell(r, label) for _, r in trend.iterrows()] for label in TREND},
        }
    )


def share_trend_words(trend: pd.DataFrame) -> str:
    """What the trend table says: each statistic's slope per tenfold corpus with its interval, against the
    paper's."""
    ours = trend[trend.corpus == "ours: slope per tenfold corpus"].iloc[0]
    paper = float(trend[trend.corpus == "paper: slope per tenfold size"]["Min-K% AUC"].iloc[0])
    parts = []
    for label in TREND:
        low, high = ours[f"{label} low"], ours[f"{label} high"]
        side = "rises" if low > 0 else "falls" if high < 0 else "shows no trend the interval can tell from zero"
        parts.append(f"{label} {side} ({ours[label]:+.3f} per tenfold corpus [{low:+.3f}, {high:+.3f}])")
    return (
        f"Along our sizes, {parts[0]}, and {parts[1]}. The paper's Fig. 5a curve rises {paper:+.3f} per tenfold "
        "corpus size (mean of its four sets, sizes as the paper labels them)."
    )


def _length_scores(study: Study, run: str, split: str, tokens: int) -> dict[str, np.ndarray]:
    """Scores of one split under one run, its texts cut to `tokens` (the scored length: the full scores)."""
    return study.scores[(run, split)] if tokens == study.params.max_length else study.truncated[(run, split, tokens)]


def length_contrast(study: Study, terms: Sequence[tuple[float, str, int]], seed: int) -> stats.Interval:
    """Mean over the sets and the main runs' seeds of a weighted sum of AUCs (detector, length), with the
    hierarchical interval: texts resampled within set and class, the same resample for every length (paired)."""
    runs = runs_of(study, "main")
    groups = [
        (s.labels, [(w, np.stack([_length_scores(study, r, s.name, n)[d] for r in runs]), None) for w, d, n in terms])
        for s in study.splits
    ]
    return stats.grouped_seeds_auc_contrast(groups, n_resamples=N_BOOT, seed=seed)


def length_table(study: Study) -> pd.DataFrame:
    """Detection against text length: Min-K% and PPL AUC (main runs, mean over the sets and seeds, hierarchical
    interval) on the same texts cut to each length, and the share of texts the cut shortens."""
    p = study.params
    texts = [t for s in study.splits for t in s.texts]
    lengths = np.array([len(study.tokenizer(t)["input_ids"]) for t in texts])  # tokenized as the scorer does
    rows = []
    for tokens in [*short_lengths(p), p.max_length]:
        for det, label in ((MK, "Min-K%"), ("PPL", "PPL")):
            iv = length_contrast(study, [(1.0, det, tokens)], p.seed)
            rows.append(
                {
                    "tokens": tokens,
                    "detector": label,
                    "auc": iv.estimate,
                    "ci_low": iv.low,
                    "ci_high": iv.high,
                    "texts_cut": float((lengths > tokens).mean()),
                }
            )
    return pd.DataFrame(rows).round(4)


def length_words(table: pd.DataFrame, change: stats.Interval | None) -> str:
    """What the length sweep shows (our check: the paper compares lengths on WikiMIA only), from its table and the
    paired interval of the change."""
    if change is None:
        return "No length of the sweep lies below the scored length, so there is no length comparison."
    mk = table[table.detector == "Min-K%"].sort_values("tokens")
    short, full = mk.iloc[0], mk.iloc[-1]
    how = change.side(
        "rises with length", "falls with length", "does not change with length beyond what the interval allows"
    )
    return (
        f"Cut to their first {int(short.tokens)} tokens ({100 * short.texts_cut:.0f} % of the texts shortened), the "
        f"same texts give a mean Min-K% AUC of {short.auc:.3f}; scored up to {int(full.tokens)} tokens, "
        f"{full.auc:.3f}. The change, {change.estimate:+.3f} [{change.low:+.3f}, {change.high:+.3f}] ({change.method}), "
        f"says detection {how} here. This is our check: the paper compares lengths on WikiMIA, not on inserted items."
    )


def k_sweep_table(auc: pd.DataFrame) -> pd.DataFrame:
    """Mean AUC over the sets of the main run for Min-K% and Min-K%++ at every k, PPL beside them."""
    main = auc[auc.condition == "main"]
    sweep = main[main.method.isin(["Min-K%", "Min-K%++"])].groupby(["k", "method"]).auc.mean().unstack().reset_index()
    return sweep.assign(PPL=main[main.method == "PPL"].auc.mean()).round(3)


def base_null(study: Study, det: str = MK) -> tuple[float, np.ndarray]:
    """The base model's mean AUC over the sets and its label-permutation null."""
    groups = [(s.labels, study.scores[("base", s.name)][det]) for s in study.splits]
    mean = float(np.mean([stats.fast_auc(y, x) for y, x in groups]))
    return mean, stats.grouped_auc_null(groups, n_permutations=N_BOOT, seed=study.params.seed)


def training_table(study: Study) -> pd.DataFrame:
    """One row per continued-pretraining run: sizes, contamination share, steps, precision, speed."""
    cols = [
        "run",
        "condition",
        "seed",
        "experiment",
        "learning_rate",
        "background_tokens",
        "corpus_tokens",
        "contaminant_tokens",
        "contamination",
        "steps",
        "train_tokens",
        "precision",
        "train_seconds",
        "tokens_per_second",
        "cached",
    ]
    frame = pd.DataFrame(list(study.training.values()))
    return frame[[c for c in cols if c in frame]]


def training_view(training: pd.DataFrame) -> pd.DataFrame:
    """The training table as the page shows it: one compact row per run."""
    return pd.DataFrame(
        {
            "run": training.run,
            "learning rate": training.learning_rate.map(lambda x: f"{x:g}"),
            "background tokens": training.background_tokens,
            "corpus tokens": training.corpus_tokens,
            "contamination %": (100 * training.contamination).round(1),
            "steps": training.steps,
            "tokens/s": training.tokens_per_second.round(0),
            "seconds": training.train_seconds.round(0),
        }
    )


def paper_scale(training: pd.DataFrame) -> dict[str, float]:
    """What the paper's 0.1 % contamination would take here: corpus tokens for our contaminants, and training time."""
    main = training[training.run == "main"].iloc[0]
    speed = float(training.train_tokens.sum() / training.train_seconds.sum()) if "train_tokens" in training else np.nan
    tokens = main.contaminant_tokens / C.PAPER_CONTAMINATION
    return {
        "tokens": tokens,
        "hours": tokens / speed / 3600,
        "paper_days": C.PAPER_TOKENS / speed / 86400,
        "speed": speed,
    }


def matched_table(study: Study, auc: pd.DataFrame) -> pd.DataFrame:
    """Min-K% AUC per set at each of our Fig. 5a sizes (mean over the seeds; a column per size, named by its share
    of contaminants) beside the paper's at the two sizes whose shares match our two smallest corpora (Fig. 5a,
    0.17M and 0.27M tokens: share_words gives the item lengths this matching assumes) and at Table 3's 27M tokens
    (0.1 %)."""
    sizes = size_table(study, auc)
    mk = sizes[(sizes.experiment == "size_outlier") & (sizes.method == "Min-K%")]
    rows = []
    for name in mk.set.unique():
        at = mk[mk.set == name].sort_values("background_tokens")
        j = C.PAPER_SETS.index(name) if name in C.PAPER_SETS else None
        row: dict[str, Any] = {"set": SHORT.get(name, name)}
        row.update({f"ours, {c:.0f} %": a for c, a in zip(at["contamination %"], at["auc"])})
        row["paper 0.17M"] = C.PAPER_SMALLEST.get(name, np.nan)
        row["paper 0.27M"] = C.PAPER_SECOND.get(name, np.nan)
        row["paper 27M, Table 3 (0.1 %)"] = C.PAPER_AUC["Min-K%"][j] if j is not None else np.nan
        rows.append(row)
    return pd.DataFrame(rows).round(3)


def matched_words(matched: pd.DataFrame) -> str:
    """How Min-K% moves from our largest contamination share to our smallest, against Table 3's 0.1 %."""
    ours = [c for c in matched.columns if c.startswith("ours, ")]
    if len(ours) < 2:
        return ""
    steps = matched[ours].diff(axis=1).iloc[:, 1:]
    rising = int((steps > 0).all(axis=1).sum())
    first, last = matched[ours[0]].mean(), matched[ours[-1]].mean()
    table3 = matched["paper 27M, Table 3 (0.1 %)"].mean()
    gap_first, gap_last = abs(table3 - first), abs(table3 - last)
    trend = (
        "toward" if gap_last < gap_first else "away from" if gap_last > gap_first else "neither toward nor away from"
    )
    gap = f"{table3 - last:.2f} below it" if last < table3 else f"{last - table3:.2f} above it"
    return (
        f"From {ours[0][len('ours, ') :]} to {ours[-1][len('ours, ') :]} contaminants, Min-K%'s AUC rises at every "
        f"larger corpus in {rising} of the {len(matched)} sets (mean over the sets {first:.3f} → {last:.3f}). "
        f"Table 3's mean at 0.1 % is {table3:.2f}: our sizes' point estimates move {trend} it (the trend table "
        f"below gives the slope with its interval), and our smallest share is still {gap}."
    )


def matched_shares(training: pd.DataFrame) -> list[tuple[int, float]]:
    """The outlier corpora (the main run and the Fig. 5a size runs) from the smallest background up: background
    tokens and contaminant share (mean over the seeds), the first two matched to Fig. 5a's 0.17M and 0.27M points."""
    outliers = training[(training.condition == "main") | (training.experiment == "size_outlier")]
    shares = outliers.groupby("background_tokens").contamination.mean().sort_index()
    return [(int(t), float(c)) for t, c in shares.items()]


def share_words(datasets: pd.DataFrame, training: pd.DataFrame) -> str:
    """What Section 6's '0.1 % of 27M tokens' implies per item, against our items' lengths; the shares the paper's
    800 items at our mean length would make of Fig. 5a's 0.17M and 0.27M corpora; and the paper's mean item length
    that matching our two smallest corpora to those points assumes (the paper does not report its items' lengths)."""
    items = len(C.PAPER_SETS) * C.PAPER_MEMBERS
    per_item = C.PAPER_CONTAMINATION * C.PAPER_TOKENS / items
    mean = float(datasets["mean tokens"].mean())
    tokens = items * mean
    small, second = C.PAPER_SIZES[0], C.PAPER_SIZES[1]
    words = (
        f"Taken at face value, 0.1 % of 27M tokens spread over {items} items is {per_item:.0f} tokens per item, "
        f"while our items average {mean:.0f} tokens (from {datasets['mean tokens'].min():.0f} to "
        f"{datasets['mean tokens'].max():.0f} per set) and BoolQ passages or IMDB reviews are longer still. "
        f"{items} items of our mean length are {tokens / 1e3:.0f}k tokens: {100 * tokens / C.PAPER_TOKENS:.2f} % "
        f"of 27M, {100 * tokens / small:.0f} % of Fig. 5a's {small / 1e6:g}M-token corpus and "
        f"{100 * tokens / second:.0f} % of its {second / 1e6:g}M one, if those sizes count the whole corpus."
    )
    ours = matched_shares(training)[:2]
    if not ours:
        return words
    shares = " and ".join(f"{100 * c:.0f} %" for _, c in ours)
    paper = [small, second][: len(ours)]
    whole = " and ".join(f"{c * n / items:.0f}" for (_, c), n in zip(ours, paper))
    background = " and ".join(f"{c / (1 - c) * n / items:.0f}" for (_, c), n in zip(ours, paper))
    points = " and ".join(f"{n / 1e6:g}M" for n in paper)
    return (
        f"{words} Our {'two smallest outlier corpora have' if len(ours) > 1 else 'main corpus has'} {shares} "
        f"contaminants (training table). Matching {'them' if len(ours) > 1 else 'it'} to Fig. 5a's {points}-token "
        f"point{'s' if len(ours) > 1 else ''} assumes that the paper's {items} items average about {whole} tokens "
        f"each if those sizes count the whole corpus, or about {background} if they count the background alone, "
        f"against our {mean:.0f}; the paper states neither its items' lengths nor what its sizes count."
    )


def detector_words(auc: pd.DataFrame) -> str:
    """How many of the chapter's detectors (detectors.DETECTORS) this run scored on the main run, and which not."""
    scored = set(auc[auc.condition == "main"].method)
    missing = [d for d in detectors.DETECTORS if d not in scored]
    ref_small = " (and Ref with a second, smaller reference model, Ref-small)" if "Ref-small" in scored else ""
    return (
        f"The chapter defines {len(detectors.DETECTORS)} detectors; this run scores "
        f"{len(detectors.DETECTORS) - len(missing)} of them{ref_small}"
        + (f", without {' and '.join(missing)}." if missing else ".")
    )


def numerics_words() -> str:
    """What makes a rebuilt table the same as this one, and what does not: the pins in force in this process."""
    from .. import numerics

    pins = ", ".join(f"{k}={os.environ.get(k, v)}" for k, v in numerics.PINS.items() if k != "PYTHONHASHSEED")
    mkl = os.environ.get("MKL_CBWR")
    mkl_words = (
        f"MKL_CBWR={mkl} is set in this run, which pins MKL's kernels too (on CPUs where MKL honours it)."
        if mkl
        else "MKL, which computes torch's float32 matrix multiplies on a CPU, picks its kernels from the CPU it runs "
        "on (MKL_CBWR is unset), so a CPU of another kind can change the last bits of a product, "
        "and training carries such bits into the tables. Two builds on one kind of CPU give the same tables."
    )
    return (
        "Pinned here: every random draw (from the `seed` parameter), "
        f"torch's deterministic algorithms, float32 training and scoring on a CPU, {torch.get_num_threads()} threads, "
        f"and the instruction set of torch's own kernels, oneDNN and NumPy's loops ({pins}). Not pinned: {mkl_words} "
        "On a GPU (`paper`) training runs in bf16 mixed precision and none of these CPU pins applies."
    )


def throughput_table(study: Study) -> pd.DataFrame:
    """Scoring time against the bare forward pass on the same batch, measured side by side in one run; for the local
    base model kept (cache.kept) for this machine (cache.machine) by the model, the batch and the scoring code, so a
    re-run shows the timings of the run that measured them."""
    import sys

    p, model = study.params, study.base_model
    texts = [t for s in study.splits for t in s.texts][: p.score_batch]

    def build() -> pd.DataFrame:
        enc = study.tokenizer(texts, return_tensors="pt", padding=True, truncation=True, max_length=p.max_length)
        ids, mask = enc["input_ids"].to(model.device), enc["attention_mask"].to(model.device)
        variants = {
            "forward pass": lambda: detectors.forward_only(model, ids, mask),
            "scoring without Min-K%++": lambda: detectors.batch_scores(model, ids, mask, p.ks, plus=False),
            "scoring with Min-K%++": lambda: detectors.batch_scores(model, ids, mask, p.ks, plus=True),
        }
        timings: dict[str, list[float]] = {name: [] for name in variants}
        for f in variants.values():
            f()  # warm-up
        for _ in range(p.bench_repeats):  # interleaved repeats; the minimum is the least disturbed by other load
            for name, f in variants.items():
                t0 = time.perf_counter()
                f()
                timings[name].append(time.perf_counter() - t0)
        forward = float(np.min(timings["forward pass"]))
        tokens = int(mask.sum())
        return pd.DataFrame(
            [
                {
                    "what": name,
                    "tokens_per_second": round(tokens / float(np.min(t)), 1),
                    "time_vs_forward": round(float(np.min(t)) / forward, 3),
                }
                for name, t in timings.items()
            ]
        )

    who = cache.identity(model)  # the local base model's converted files; a Hub model has none: timed every run
    if who is None:
        return build()
    code = cache.code_digest(sys.modules[__name__], detectors)
    key = (who, study.tokenizer.name_or_path, texts, p.max_length, p.ks, p.bench_repeats)
    return cache.kept("features", "mink-throughput", build, code, cache.machine(), *key)


def wikimia_table(study: Study) -> pd.DataFrame:
    """Table 1: every detector on WikiMIA under the base model; Ref-small scored on WikiMIA's own texts."""
    from datasets import load_dataset
    from transformers import AutoModelForCausalLM

    p = study.params
    splits = []
    for length in WIKIMIA_LENGTHS:
        rows = load_dataset(WIKIMIA_REPO, split=f"WikiMIA_length{length}")
        members = [r["input"] for r in rows if r["label"] == 1]
        splits.append(C.MemberSplit(f"WikiMIA-{length}", members, [r["input"] for r in rows if r["label"] == 0]))
    refs = {}
    if p.small_ref_name:
        small = AutoModelForCausalLM.from_pretrained(p.small_ref_name, dtype=torch.float32).to(device()).eval()
        texts = [t for s in splits for t in s.texts]
        refs["Ref-small"] = aligned_reference(texts, study.tokenizer, small, slow_tokenizer(p.small_ref_name), p)
        del small
    frames = [
        C.detect(
            study.base_model,
            study.tokenizer,
            [s],
            p.ks,
            refs=refs,
            lowercase=True,
            batch_size=p.score_batch,
            max_length=p.max_length,
        )
        for s in splits
    ]
    return pd.concat(frames, ignore_index=True).round(4)


# ---------------------------------------------------------------------------------------------------------------
# claims and verdict rows


@dataclass
class Results:
    """The numbers the verdict rows and the glued prose read."""

    auc: pd.DataFrame
    pairs: pd.DataFrame
    gains: pd.DataFrame
    training: pd.DataFrame
    base_mean: float
    base_null: np.ndarray
    detection: stats.Interval
    gain: stats.Interval
    lr: stats.Interval
    occurrences: stats.Interval | None
    size_outlier: stats.Interval
    size_indist: stats.Interval
    tpr: dict[str, stats.Interval] = field(default_factory=dict)  # Table 7's contrasts, keyed like the claims
    length: stats.Interval | None = None  # Min-K% AUC at the scored length minus at the shortest cut
    memorization: stats.Interval | None = None  # Table 8: members' accuracy lead, higher rate minus lower


def results(
    study: Study, auc: pd.DataFrame, pairs: pd.DataFrame, gains: pd.DataFrame, training: pd.DataFrame
) -> Results:
    """Every interval the claims need, from the per-text scores."""
    names = [s.name for s in study.splits]
    seed = study.params.seed
    base_mean, null = base_null(study)
    once = int((study.copies == 1).sum())
    more = int((study.copies >= 2).sum())
    has_occ = min(once, more) >= 1
    cuts = short_lengths(study.params)
    return Results(
        auc=auc,
        pairs=pairs,
        gains=gains,
        training=training,
        base_mean=base_mean,
        base_null=null,
        detection=set_contrast(study, [(1.0, "main", MK)], names, seed),
        gain=set_contrast(study, [(1.0, "main", MK), (-1.0, "base", MK)], names, seed),
        lr=set_contrast(study, [(1.0, "main", MK), (-1.0, "lr", MK)], names, seed),
        occurrences=occurrence_trend(study) if has_occ else None,
        size_outlier=size_trend(study, "size_outlier"),
        size_indist=size_trend(study, "size_indist"),
        tpr={
            f"tpr{'1' if fpr == K.LOW_FPR else ''}_vs_{b.lower()}": tpr_contrast(study, MK, b, names, fpr, seed)
            for fpr, others in ((K.TABLE7_FPR, ("PPL", "Zlib", "Lowercase")), (K.LOW_FPR, ("PPL",)))
            for b in others
        },
        length=length_contrast(study, [(1.0, MK, study.params.max_length), (-1.0, MK, cuts[0])], seed)
        if cuts
        else None,
        memorization=memorization_contrast(study, seed),
    )


def _stratified(labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices of one bootstrap resample drawn within each class."""
    return np.concatenate([rng.choice(idx, idx.size) for idx in (np.flatnonzero(labels == c) for c in (1, 0))])


def tpr_contrast(study: Study, a: str, b: str, names: Sequence[str], fpr: float, seed: int) -> stats.Interval:
    """Mean over the sets and the main runs' seeds of TPR at `fpr` (Table 7's statistic: the last threshold whose
    FPR is below it) of detector a minus detector b, with the hierarchical interval: texts resampled within set and
    class, the same resample for every seed and both detectors (paired)."""
    runs, splits = runs_of(study, "main"), [_split(study, n) for n in names]

    def per_seed(picks: Sequence[np.ndarray]) -> np.ndarray:
        """Every seed's statistic on each resample: picks[j] holds set j's texts, one resample per row; (resamples,
        seeds), the mean over the sets taken as the direct formula takes it."""
        diffs = np.stack(
            [
                [
                    metrics.tpr_at_fpr_rows(sp.labels[i], study.scores[(r, sp.name)][a][i], fpr)
                    - metrics.tpr_at_fpr_rows(sp.labels[i], study.scores[(r, sp.name)][b][i], fpr)
                    for sp, i in zip(splits, picks)
                ]
                for r in runs
            ]
        )  # (seeds, sets, resamples)
        return np.mean(diffs, axis=1).T

    rng = np.random.default_rng(seed)
    picks = [[_stratified(sp.labels, rng) for sp in splits] for _ in range(TPR_BOOT)]  # the draws' order kept
    draws = per_seed([np.stack([p[j] for p in picks]) for j in range(len(splits))])
    n = sum(len(sp.labels) for sp in splits)
    words = f"paired TPR at {reached_fpr(splits, fpr)} over {n:,} texts (resampled within set and class)"
    whole = per_seed([np.arange(len(sp.labels))[None] for sp in splits])[0]
    return stats.hierarchical_interval(whole, draws, words=words)


def reached_fpr(splits: Sequence[C.MemberSplit], fpr: float) -> str:
    """The FPR that TPR@`fpr` reads on these splits (K.fpr_label), one label per distinct non-member count."""
    return "; ".join(K.fpr_label(fpr, n) for n in sorted({len(sp.nonmembers) for sp in splits}))


def tpr_fpr_words(study: Study) -> str:
    """What Table 7's statistic and the low-FPR row read at this run's non-member counts, beside the paper's."""
    k, fpr = K.reachable_fpr(K.TABLE7_FPR, K.PAPER_NONMEMBERS)
    low = K.reachable_fpr(K.LOW_FPR, min(len(sp.nonmembers) for sp in study.splits))[0]
    return (
        f"Table 7's statistic is the TPR at the last threshold whose FPR is strictly below {100 * K.TABLE7_FPR:g} %. "
        "The paper's "
        f"{K.PAPER_NONMEMBERS} non-members per set allow {k} false positives under it ({100 * fpr:.2g} % FPR); "
        f"ours read it at {reached_fpr(study.splits, K.TABLE7_FPR)}, which our TPR column and the three TPR rows report "
        f"under that label. The low-FPR row aims at {100 * K.LOW_FPR:g} %, read at {reached_fpr(study.splits, K.LOW_FPR)}"
        + (
            ": no false positive is allowed, so it counts the members scored above every non-member."
            if low == 0
            else "."
        )
    )


def nonmember_cost_words(datasets: pd.DataFrame, throughput: pd.DataFrame, p: Any, n: int = 500) -> str:
    """What scoring `n` non-members per set (as many as a set holds) under the main runs alone would add, at this
    run's measured scoring speed: each text and its lowercased copy (Lowercase) once per main run."""
    extra = (
        (np.minimum(n, datasets["items"] - datasets["members"]) - datasets["non-members"]).clip(lower=0)
        * np.minimum(datasets["mean tokens"], p.max_length)
    ).sum()
    if extra == 0:
        return ""
    speed = throughput.set_index("what").loc["scoring with Min-K%++", "tokens_per_second"]
    seconds = 2 * p.seeds * extra / speed
    return (
        f"Scoring {n} non-members per set (as many as a set holds) under the {p.seeds} main "
        f"run{'s' if p.seeds > 1 else ''} alone, so that TPR at {100 * K.TABLE7_FPR:g} % and {100 * K.LOW_FPR:g} % FPR allow "
        f"{K.reachable_fpr(K.TABLE7_FPR, n)[0]} "
        f"and {K.reachable_fpr(K.LOW_FPR, n)[0]} false positives, would add {extra:,.0f} tokens per scoring pass, "
        f"two passes per run (each text and its lowercased copy): about {_duration(seconds)} at the throughput "
        f"benchmark's {speed:.0f} tokens per second. The chapter keeps {p.n_nonmembers} and labels the TPR rows by the FPR "
        "they reach."
    )


def _duration(seconds: float) -> str:
    """'45 s' under two minutes, '23 minutes' from there."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} minutes"


def _pair(res: Results, label: str) -> stats.Interval:
    """One row of the pairs table as an Interval."""
    r = res.pairs.set_index("contrast").loc[label]
    return stats.Interval(float(r.difference), float(r.ci_low), float(r.ci_high), str(r.test))


VERSUS = {"vs_ppl": "Min-K% − PPL", "vs_zlib": "Min-K% − Zlib", "vs_lowercase": "Min-K% − Lowercase"}
SHARE_SWEEP = "the same contrast along a sweep of the contamination share toward the paper's 0.1 %"
SEEDS = "members per set, each run trained with several seeds"  # what would narrow a row: texts and trained models
# a TPR row's: its non-members too (more of them also bring the FPR it reads to its target, K.reachable_fpr)
TPR_SAMPLE = "members and non-members per set, each run trained with several seeds"
# rows not held: no table here measures why, so each names the ablation that would tell (verdict.unexplained)
ABLATIONS = {
    "control": "the same control over several random member/non-member splits (seeds)",
    "auc": "a sweep of the contamination share toward the paper's 0.1 %, with several seeds per share",
    "detects": "a sweep of the learning rate and of the contamination share, with several seeds each",
    "vs_ppl": f"{SHARE_SWEEP} (the size runs score both detectors, at two shares)",
    "vs_zlib": f"{SHARE_SWEEP}, and on the paper's own sets (their lengths and formats set the zlib ratio)",
    "vs_lowercase": f"{SHARE_SWEEP}, and on the paper's own sets (their casing sets the lowercase ratio)",
    "lr": "a sweep of learning rates between the two, with several seeds per rate",
    "occurrences": "more members per copies bucket and more copies (8, 16), with several seeds",
    "size": (
        "more corpus sizes between ours and the paper's (0.17M–26M tokens), several seeds each; the forgetting "
        "table measures only whether members trained early fade within one run"
    ),
    "minkpp": "Min-K%++ against Min-K% on WikiMIA with the same model (the paper's benchmark for it)",
    "memorization": "a sweep of the learning rate with several seeds per rate, and more items per set",
}


def _share(study: Study, condition: str) -> float:
    """A condition's contaminant share of its corpus's tokens, mean over its seeds (unrounded)."""
    runs = [study.training[r] for r in runs_of(study, condition)]
    return float(np.mean([t["contaminant_tokens"] / t["corpus_tokens"] for t in runs]))


def check_regimes(study: Study, claim_set: dict[str, Claim]) -> None:
    """Compute each paper-regime criterion on this run's corpora: the governing variable (background tokens) and
    the contaminant share the trained corpus really had (verdict.check_regime); a miniature regime has none."""
    p = study.params
    computed = {  # claim -> (variable, contaminant share)
        "auc": (p.background_tokens, _share(study, "main")),
        "size_outlier": (max(p.size_background), _share(study, size_conditions(study, "size_outlier")[-1])),
        "size_indist": (max(p.indist_background), _share(study, size_conditions(study, "size_indist")[-1])),
        "occurrences": (p.freq_background, _share(study, "frequency")),
    }
    for key, (variable, share) in computed.items():
        regime = claim_set[key].regime
        if regime is not None and regime.kind == "paper":
            check_regime(regime, variable, share)


SWEPT = {  # rows whose statistic the Fig. 5a size runs also measure (the sizes table publishes Min-K% and PPL)
    "auc": [(1.0, MK)],
    "vs_ppl": [(1.0, MK), (-1.0, "PPL")],
}


def share_sweep(study: Study, claim: Claim, ours: float, terms: Sequence[tuple[float, str]]) -> Sweep | None:
    """The Fig. 5a size runs as a sweep of the main regime's variable (the same members in more background, so a
    falling contaminant share): the row's statistic at the largest corpus minus at the smallest, on the size sets'
    texts (paired, seeds and texts resampled), signed so that a positive trend moves toward the paper's value.
    None when the sweep has fewer than SWEEP_POINTS sizes or the claim has no paper value to move toward."""
    sizes = size_conditions(study, "size_outlier")
    if len(sizes) < SWEEP_POINTS or claim.regime is None or not isinstance(claim.paper_estimate, (int, float)):
        return None
    toward = 1.0 if claim.paper_estimate >= ours else -1.0
    iv = share_trend(study, [(toward * w, d) for w, d in terms])
    words = "change per tenfold corpus over the corpus sizes, toward the paper's value"
    return Sweep("share_trend", "corpus_tokens", claim.regime.variable, replace(iv, method=f"{words}; {iv.method}"))


def verdict_rows(study: Study, claim_set: dict[str, Claim], res: Results) -> list[dict]:
    """Judge every claim on its interval, after computing the paper-regime criteria; a row not held names the size
    sweep that measures its regime cause (where one measures the row's statistic) or the ablation that would tell."""
    check_regimes(study, claim_set)
    low, high = stats.null_band(res.base_null)
    null_test = (
        f"label-permutation null of the base model's mean AUC over {len(study.splits)} sets, {N_BOOT:,} permutations"
    )
    rows = [judge(claim_set["control"], res.base_mean, (low, high), null_test, why=unexplained(ABLATIONS["control"]))]
    intervals = {
        "auc": res.detection,
        "detects": res.gain,
        **{key: _pair(res, label) for key, label in VERSUS.items()},
        **res.tpr,
        "lr": res.lr,
        "occurrences": res.occurrences,
        "size_outlier": res.size_outlier,
        "size_indist": res.size_indist,
        "minkpp": _pair(res, "Min-K%++ − Min-K%"),
        "memorization": res.memorization,
    }
    for key, iv in intervals.items():
        if iv is None:  # no member was inserted both once and more often, or no set has answer options
            continue
        claim = claim_set[key]
        ablation = ABLATIONS["size" if key.startswith("size") else key.replace("tpr1_", "").replace("tpr_", "")]
        narrow = "members seen several times" if key == "occurrences" else TPR_SAMPLE if key in res.tpr else SEEDS
        why, sweep = unexplained(ablation), None
        if key in SWEPT and claim.rule.decide(iv.estimate, iv.low, iv.high) == "not held":
            sweep = share_sweep(study, claim, iv.estimate, SWEPT[key])
            if sweep is not None:
                why = ("regime", "the gap to the paper closes as the contaminant share falls toward its 0.1 %")
        rows.append(judge(claim, iv.estimate, iv, why=why, narrow_by=narrow, sweep=sweep))
    return rows


# ---------------------------------------------------------------------------------------------------------------
# prose glued from the results


def ref_words(res: Results, study: Study) -> str:
    """Interpretation of the oracle Ref score and of DC-PDD, the calibration an auditor can apply, against the
    reference-free scores."""
    ref, dc = _pair(res, "Ref − Min-K%"), _pair(res, "DC-PDD − Min-K%")
    main = headline(res.auc[res.auc.condition == "main"])
    means = main.groupby("method").auc.mean()
    free = means.drop(["Ref", "Ref-small", "Neighbor", "DC-PDD"], errors="ignore")
    dc_says = dc.side(
        "above Min-K%: a calibration without a second model recovers part of what the oracle gains",
        "below Min-K%: on these texts the frequency calibration costs more than it removes",
        "not distinguishable from Min-K% with these texts and seeds",
    )
    return (
        f"Ref reaches a mean AUC of {means['Ref']:.2f}, {abs(ref.estimate):.2f} "
        f"{'above' if ref.estimate >= 0 else 'below'} Min-K% "
        f"[{ref.low:.2f}, {ref.high:.2f}], while the reference-free scores sit between {free.min():.2f} and "
        f"{free.max():.2f}. Ref subtracts each text's loss under the base model, which is exactly the model before "
        "the extra epoch: it removes how predictable a text was to begin with (its length, its format, how common "
        "its words are) and keeps only what the epoch changed. A reference-free score must judge a text's absolute "
        "likelihood, and a short, formulaic non-member can look as likely as a member. The paper's Ref uses a "
        "different, smaller model, which removes only part of that variation; ours is an oracle that no detector "
        "of a released model could use. DC-PDD (Zhang et al. 2024, not in the paper) is a calibration an auditor "
        "can use: it weighs each distinct token's probability by how rare the token is in a reference corpus "
        f"(here the token counts of the {study.reference_texts:,} texts of the background pool that no corpus "
        "trains on; the authors count C4), capped "
        f"at {detectors.DCPDD_CAP:g} per token as in the authors' code. It reaches {means['DC-PDD']:.2f}, "
        f"{dc.estimate:+.2f} against Min-K% [{dc.low:.2f}, {dc.high:.2f}]: {dc_says}."
    )


def k_sweep_words(sweep: pd.DataFrame, datasets: pd.DataFrame) -> str:
    """What the k sweep shows: the direction of Min-K%'s AUC with k, its best k against PPL, and how few tokens the
    smallest k keeps of the shortest set's mean item."""
    lo, hi = sweep.iloc[0], sweep.iloc[-1]
    best = sweep.loc[sweep["Min-K%"].idxmax()]
    change = hi["Min-K%"] - lo["Min-K%"]
    direction = "rises" if change > 0 else "falls" if change < 0 else "stays"
    side = "above" if best["Min-K%"] > lo.PPL else "below" if best["Min-K%"] < lo.PPL else "level with"
    tokens = float(datasets["mean tokens"].min())
    kept = max(1, int((tokens - 1) * lo.k))  # as the scorer takes it: int(scored tokens · k), at least one
    return (
        f"Min-K%'s mean AUC {direction} from {lo['Min-K%']:.3f} at k = {lo.k:.0%} to {hi['Min-K%']:.3f} at "
        f"k = {hi.k:.0%}; its best, {best['Min-K%']:.3f} at k = {best.k:.0%}, lies {side} PPL (Min-K% at "
        f"k = 100 %), {lo.PPL:.3f}. The paper chose k = 20 % on WikiMIA, where the rare tokens of a non-member (new "
        "names, new events) give it away; no table here says why the best k on inserted items is where it is. At "
        f"k = {lo.k:.0%} the shortest set's mean item ({tokens:.0f} tokens) keeps {kept} scored "
        f"token{'s' if kept > 1 else ''}."
    )


def tilt_words(res: Results) -> str:
    """Interpretation of the base-model control and the per-set gains."""
    low, high = stats.null_band(res.base_null)
    g = res.gains
    return (
        f"Before any training the base model's mean Min-K% AUC is {res.base_mean:.3f}; a random split gives "
        f"values between {low:.3f} and {high:.3f} in 95 % of label permutations. Per set the base-model AUC runs "
        f"from {g['base model'].min():.3f} to {g['base model'].max():.3f}. Whatever tilt a set starts with is "
        "carried into its AUC after training, so the gain column, measured on the same texts, is the cleaner "
        f"reading: a mean gain of {res.gain.estimate:.3f} [{res.gain.low:.3f}, {res.gain.high:.3f}]. The base model "
        "is instruction-tuned, which can make question-and-answer formats look familiar to it before training; "
        "that shifts members and non-members alike, because both come from the same random split."
    )


def with_run(frame: pd.DataFrame, study: Study, run: str = "main") -> pd.DataFrame:
    """A table with its run's contamination share (%) and optimizer steps as the last columns; rows of the paper's
    own numbers (`who` == "paper") carry the paper's share (Table 3's 0.1 %) and no step count (not reported)."""
    t = study.training[run]
    out = frame.assign(**{"contamination %": round(100 * t["contamination"], 1), "steps": float(t["steps"])})
    if "who" in out:
        theirs = out["who"] == "paper"
        out.loc[theirs, "contamination %"] = 100 * C.PAPER_CONTAMINATION
        out.loc[theirs, "steps"] = np.nan
    return out


def pairs_view(pairs: pd.DataFrame, study: Study) -> pd.DataFrame:
    """The pairs table as the page shows it: no test words, the main run's contamination and steps."""
    return with_run(pairs.drop(columns="test"), study).round(3)


def size_view(study: Study, auc: pd.DataFrame) -> pd.DataFrame:
    """Fig. 5a/5b numbers pivoted: one row per experiment, set and size; Min-K% (mean over the seeds) with
    its lowest and highest seed, PPL beside."""
    t = size_table(study, auc)
    keys = ["experiment", "set", "background_tokens", "contamination %", "steps"]
    mk = t[t.method == "Min-K%"].set_index(keys)[["auc", "auc_low", "auc_high"]]
    mk.columns = ["Min-K%", "lowest seed", "highest seed"]
    ppl = t[t.method == "PPL"].set_index(keys)[["auc"]].rename(columns={"auc": "PPL"})
    return mk.join(ppl).reset_index().round(3)


def throughput_words(throughput: pd.DataFrame) -> str:
    """Whether Min-K%++ scoring met the 1.10x target, and by how much it missed if not."""
    r = throughput.set_index("what").loc["scoring with Min-K%++", "time_vs_forward"]
    plain = throughput.set_index("what").loc["scoring without Min-K%++", "time_vs_forward"]
    verdict_words = "meets the target" if r <= 1.10 else f"misses the 1.10 target by {r - 1.10:.2f}"
    return (
        f"Scoring with Min-K%++ took {r:.2f} times the forward pass on this batch ({verdict_words}); without it, "
        f"{plain:.2f} times. The vocabulary moments are float32 reductions centred on the mean, within 1e-5 of a "
        "float64 computation (unit-tested)."
    )


def copy_steps(study: Study, name: str) -> tuple[dict[str, list[int]], int]:
    """The optimizer steps (from 0) that train each inserted item's copies, in corpus order, and the run's number
    of steps.

    The blocks are visited in corpus order, one batch per step, so a copy's step is the block holding it
    (pretraining.pack_blocks, the same cut as in training) over the batch size."""
    p, run = study.params, study.runs[name]
    packed = pretraining.pack_blocks(study.tokenizer, run.docs, p.block_size, run.blocks)
    items = set(run.blocks)
    steps: dict[str, list[int]] = {m: [] for m in dict.fromkeys(run.blocks)}
    for i, doc in enumerate(run.docs):
        if doc in items:
            steps[doc].append(packed.block_of[i] // p.batch_size)
    return steps, -(-len(packed.ids) // p.batch_size)


def member_steps(study: Study, name: str) -> tuple[dict[str, int], int]:
    """The optimizer step (from 0) that trains each inserted item's first copy, and the run's number of steps."""
    steps, total = copy_steps(study, name)
    return {m: s[0] for m, s in steps.items()}, total


def training_position(study: Study, name: str) -> dict[str, float]:
    """Share of the run's optimizer steps that come after the step training each inserted item (its first copy)."""
    steps, total = member_steps(study, name)
    return {m: 1.0 - (step + 1) / total for m, step in steps.items()}


def exposure(study: Study, name: str, norms: Sequence[float] | None = None) -> np.ndarray:
    """Each inserted item's exposure in run `name`: the norm of the weight change of the step that trains it
    (pretraining.UpdateNorms), from the run's own steps or from `norms` (another run's, read at the same steps;
    NaN beyond them)."""
    norms = study.training[name].get("update_norms", []) if norms is None else norms
    steps, _ = member_steps(study, name)
    return np.array([norms[i] if i < len(norms) else np.nan for i in steps.values()], dtype=float)


def exposure_table(study: Study) -> pd.DataFrame:
    """Per condition: how much the step that trains a member moves the weights (exposure, pretraining.UpdateNorms),
    as the spread over its members (the largest exposure over the smallest, mean over the seeds), for the run as
    trained (from the burn-in's optimizer state) and for a fresh optimizer at the same steps: the burn-in's own
    first steps, which start from the base model with no optimizer state, as every run did before the burn-in
    (empty where the run has more steps than the burn-in, or without a burn-in)."""
    fresh = study.burn_in_stats.get("update_norms", [])
    rows = []
    for condition in conditions(study):
        names = [n for n in runs_of(study, condition) if study.training.get(n, {}).get("update_norms")]
        if not names:
            continue
        after = [exposure(study, n) for n in names]
        before = [exposure(study, n, fresh) for n in names] if fresh else []
        spread = lambda xs: float(np.mean([np.nanmax(x) / np.nanmin(x) for x in xs]))
        rows.append(
            {
                "condition": condition,
                "seeds": len(names),
                "steps": study.training[names[0]]["steps"],
                "members": len(after[0]),
                "exposure": float(np.mean([np.mean(x) for x in after])),
                "spread": spread(after),
                "spread, fresh optimizer": spread(before) if before and not np.isnan(before).any() else np.nan,
            }
        )
    return pd.DataFrame(rows).round(3)


def exposure_words(table: pd.DataFrame, study: Study) -> str:
    """What the exposure table says about Adam's start-up, from its numbers."""
    if table.empty:
        return "No run recorded its steps' weight changes (they are recorded on one process only)."
    main = table.set_index("condition").loc["main"]
    fresh = study.burn_in_stats.get("update_norms", [])
    if not fresh:
        return (
            f"Without a burn-in, the main run's largest member exposure is {main.spread:.1f}× its smallest: "
            "where a member sits in the corpus decides how hard it is trained."
        )
    words = (
        f"Every run starts from a burn-in of {study.burn_in_stats['steps']} steps over background text no run "
        f"trains on, optimizer state included. Its first step moved the weights {fresh[0] / fresh[-1]:.1f}× as "
        f"far as its last: that start-up is what a member met before. In the main run a member's exposure now "
        f"varies {main.spread:.1f}× from the hardest-trained member to the least (mean over the seeds)"
    )
    if not np.isnan(main["spread, fresh optimizer"]):
        words += f", against {main['spread, fresh optimizer']:.1f}× at the same steps of a fresh optimizer"
    widest = table.loc[table.spread.idxmax()]
    return words + f"; the widest spread is {widest.spread:.1f}× ({widest.condition}, {int(widest.steps)} steps)."


FORGETTING_RUNS = ("main", "size_outlier", "size_indist")


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho (0 where either side is constant)."""
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return 0.0
    return float(sps.spearmanr(x, y).statistic)


def forgetting_table(study: Study) -> pd.DataFrame:
    """Per condition: Spearman rho between the share of training after a member's step (the real training order)
    and how much its loss fell against the base model (the Ref score: base loss minus loss after training), as the
    mean over the seeds with the hierarchical interval (members resampled, the same members in every seed).

    Forgetting within the epoch would make members trained early (more training after them) fall less: rho < 0."""
    rows = []
    for condition in [c for e in FORGETTING_RUNS for c in conditions(study, e)]:
        names = runs_of(study, condition)
        run = study.runs[names[0]]
        splits = {"size_outlier": study.size_splits, "size_indist": [study.news]}.get(run.experiment, study.splits)
        members = [m for s in splits for m in s.members]
        positions = [training_position(study, n) for n in names]
        after = np.array([[pos[m] for m in members] for pos in positions])
        drop = np.array(
            [np.concatenate([study.scores[(n, s.name)]["Ref"][: len(s.members)] for s in splits]) for n in names]
        )
        rng = np.random.default_rng(study.params.seed)
        draws = np.array(
            [
                [_spearman(a[idx], d[idx]) for a, d in zip(after, drop)]
                for idx in (rng.integers(0, len(members), len(members)) for _ in range(FORGETTING_BOOT))
            ]
        )
        theta = np.array([_spearman(a, d) for a, d in zip(after, drop)])
        iv = stats.hierarchical_interval(theta, draws, words="Spearman rho over members")
        iv = replace(iv, low=max(iv.low, -1.0), high=min(iv.high, 1.0))  # a correlation's t interval, clipped
        rows.append(
            {
                "condition": condition,
                "members": len(members),
                "seeds": len(names),
                "steps": study.training[names[0]]["steps"],
                "rho": iv.estimate,
                "ci_low": iv.low,
                "ci_high": iv.high,
                "test": iv.method,
            }
        )
    return pd.DataFrame(rows).round(3)


def forgetting_words(forgetting: pd.DataFrame) -> str:
    """What the forgetting table shows, condition by condition, from its intervals."""
    below = forgetting[forgetting.ci_high < 0].condition.tolist()
    above = forgetting[forgetting.ci_low > 0].condition.tolist()
    parts = [
        f"Across the {len(forgetting)} conditions the correlation runs from {forgetting.rho.min():.2f} to "
        f"{forgetting.rho.max():.2f}."
    ]
    if below:
        parts.append(
            f"In {', '.join(below)} members trained early fell less than those trained late (interval below zero): "
            "what training after them did is measurable as forgetting there."
        )
    if above:
        parts.append(f"In {', '.join(above)} members trained early fell *more* (interval above zero).")
    rest = len(forgetting) - len(below) - len(above)
    if rest:
        parts.append(
            f"In {rest} condition{'s' if rest > 1 else ''} the interval includes zero: no trend with training "
            "position is detected at this number of members and seeds."
        )
    return " ".join(parts)


def nonmember_words(p: Any, auc: pd.DataFrame) -> str:
    """How much more non-members would narrow an AUC's interval (Hanley-McNeil), at this run's mean Min-K% AUC."""
    a = float(headline(auc[(auc.condition == "main") & (auc.method == "Min-K%")]).auc.mean())
    se = {n: stats.hanley_mcneil_se(a, p.n_members, n) for n in (p.n_members, p.n_nonmembers, 500, 10**6)}
    return (
        f"Each set is scored on {p.n_nonmembers} non-members, against {p.n_members} members. At an AUC of {a:.2f} "
        f"the Hanley–McNeil standard error is {se[p.n_members]:.3f} with as many non-members as members, "
        f"{se[p.n_nonmembers]:.3f} with {p.n_nonmembers}, and would be {se[500]:.3f} with 500 and {se[10**6]:.3f} "
        "with unlimited non-members: the members bound the precision, and every member costs training tokens."
    )
