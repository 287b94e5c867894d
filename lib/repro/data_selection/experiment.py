"""Data-selection chapter: parameters, domains, DSIR against its baselines, the link to contamination, DoReMi.

The notebook calls `load_domains`, then `dsir_runs` (select, score KL reduction, train a tiny LM per selection and
seed, score held-out target text), `contamination_weights`, and `doremi_runs` (reference, Group DRO proxy, main
models on the learned and the baseline mixtures); tables and claim rows are computed from what these return."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from scipy import stats as sps

from .. import cache, progress, stats
from ..data import SQUAD_DOMAINS, squad_paragraphs
from ..params import Param
from ..verdict import Claim, judge, unexplained
from . import doremi, dsir

PILE_HUB = "monology/pile-uncopyrighted"  # The Pile without its copyrighted parts; `meta.pile_set_name` is the domain
TOKENIZER_HUB = "HuggingFaceTB/SmolLM2-135M-Instruct"
ORACLE = "oracle (target domain)"  # chunks of the target domain itself (outside its held-out documents)
TOPK_HEURISTIC = "top-k heuristic"  # the classifier's most target-like documents first, without the Pareto noise
METHODS = ("random", "heuristic classification", TOPK_HEURISTIC, "DSIR", "top-k DSIR", ORACLE)
N_BOOT = 2000
MIN_DOMAIN_DOCS = 8
N_HEADS = 4  # attention heads of every tiny LLaMA
HELD_OUT_SHARE = 16  # DoReMi holds out 1/16 of each domain's documents
REGIMES = {"outlier": "outlier (benchmark items in web text)", "in-distribution": "in-distribution (news in news)"}
KL_PSEUDO_COUNT = 1.0  # add-one smoothing of every bucket when measuring KL (a small selection misses many buckets)
# DSIR's target and raw distributions: one pseudo-count per bucket. At the authors' scale (a target of ~10^7 n-grams
# over 10,000 buckets) the package's 1e-8 floor is never reached; with a target of a few hundred thousand n-grams
# some buckets are empty, and the floor would turn each of their n-grams into ~-15 nats, a count of unseen n-grams
DSIR_PSEUDO_COUNT = 1.0
CONTAMINATION_PSEUDO_COUNT = 0.1  # the contamination sets' smoothing (each set subsampled to equal n-gram counts)


def domains_of_source(p: dict) -> str | None:
    """Local domains are the four squad_shifts domains; every target must be one of the domains."""
    if p["source"] == "local" and set(p["domains"]) - set(SQUAD_DOMAINS):
        return f"parameter 'domains': {p['domains']} at source local: choose from {', '.join(SQUAD_DOMAINS)}"
    if set(p["targets"]) - set(p["domains"]):
        return f"parameter 'targets': {p['targets']} must be among domains {p['domains']}"
    if len(p["domains"]) < 2:
        return "parameter 'domains': DoReMi needs at least two domains"
    return None


def target_split_fits(p: dict) -> str | None:
    """DSIR fits on target_docs of a target domain and scores eval_docs others: both come from docs_per_domain."""
    if p["target_docs"] + p["eval_docs"] > p["docs_per_domain"]:
        return (
            f"parameters 'target_docs' + 'eval_docs': {p['target_docs']} + {p['eval_docs']} exceed "
            f"docs_per_domain ({p['docs_per_domain']}): no held-out target text would be left to score"
        )
    return None


def hub_source_needs_hub(p: dict) -> str | None:
    """source hub streams The Pile and SmolLM2's tokenizer from the Hub at every profile: fail now when it is off."""
    from ..notebook import hub_problem

    problem = hub_problem() if p["source"] == "hub" and p["profile"] != "paper" else None
    return problem and f"parameter 'source': 'hub' needs the Hugging Face Hub, but {problem}: use source local"


def fractions_fit(p: dict) -> str | None:
    """One training share per text domain (DoReMi), each in (0, 1]."""
    if len(p["doremi_fractions"]) != len(p["domains"]):
        return (
            f"parameter 'doremi_fractions': {len(p['doremi_fractions'])} values for {len(p['domains'])} domains "
            f"({', '.join(p['domains'])})"
        )
    if min(p["doremi_fractions"]) <= 0:
        return f"parameter 'doremi_fractions': {p['doremi_fractions']} must be above 0 (every domain trains)"
    return None


def evaluations_fit(p: dict) -> str | None:
    """Steps to the baseline's perplexity are read off the main models' evaluations: at least two of them."""
    n = p["doremi_steps"] // p["eval_every"]
    if n < 2:
        return (
            f"parameter 'eval_every': {p['eval_every']} leaves {n} evaluation(s) in doremi_steps {p['doremi_steps']}: "
            "the steps to the baseline's perplexity need at least 2"
        )
    return None


def widths_fit(p: dict) -> str | None:
    """The tiny LLaMA has 4 attention heads: every width a multiple of 4, and DoReMi's main model at least as wide as its
    proxy (the paper's point is a small proxy for a larger main model)."""
    for name in ("lm_dim", "main_dim"):
        if p[name] % N_HEADS:
            return f"parameter '{name}': {p[name]} is not a multiple of the {N_HEADS} attention heads"
    if p["main_dim"] < p["lm_dim"]:
        return f"parameter 'main_dim': {p['main_dim']} is narrower than the proxy's lm_dim {p['lm_dim']}"
    return None


def selection_fits(p: dict) -> str | None:
    """At source local, before any model or tokenizer: the chunks of every target's pool long enough for min_length,
    and of the target left for the oracle, can hold every selection (`pool_problem`). At source hub the same check
    runs once the documents are read, before training."""
    if p["source"] != "local" or domains_of_source(p) or target_split_fits(p):
        return None
    local = {n: _local_docs(n, p["docs_per_domain"], p["seed"] + i) for i, n in enumerate(p["domains"])}
    chunks = {n: chunk_documents(v[0], p["chunk_words"]) for n, v in local.items()}
    texts = {n: c[0] for n, c in chunks.items()}
    doc_ids = {n: c[1] for n, c in chunks.items()}
    articles = {n: local[n][1][doc_ids[n]] for n in chunks}
    for target in p["targets"]:
        problem = pool_problem(texts, doc_ids, p, target, articles)
        if problem:
            return problem
    return None


CHECKS = [
    domains_of_source,
    target_split_fits,
    hub_source_needs_hub,
    fractions_fit,
    evaluations_fit,
    widths_fit,
    selection_fits,
]

SPEC = {
    "seed": Param(int, 0, low=0, high=2**32 - 1, help="random seed"),
    "source": Param(str, "local", paper="hub", choices=("local", "hub"), help="offline squad_shifts or the Pile (Hub)"),
    "domains": Param(
        list,
        list(SQUAD_DOMAINS),
        paper=["Pile-CC", "Wikipedia (en)", "PubMed Abstracts", "StackExchange", "Github", "FreeLaw"],
        items=str,
        help="text domains (squad_shifts names at local, Pile set names at hub)",
    ),
    "docs_per_domain": Param(
        int, 2000, smoke=100, paper=50_000, low=MIN_DOMAIN_DOCS, high=10**7, help="documents read per domain"
    ),
    "chunk_words": Param(
        int, 128, low=16, high=10**5, help="words per chunk: every document is cut into chunks (the paper: 128)"
    ),
    "targets": Param(
        list,
        ["amazon_reviews", "reddit"],
        smoke=["amazon_reviews"],
        paper=["Wikipedia (en)", "PubMed Abstracts"],
        items=str,
        help="DSIR target domains",
    ),
    "target_docs": Param(
        int, 1000, smoke=30, paper=10_000, low=2, high=10**6, help="target documents whose chunks DSIR fits"
    ),
    "eval_docs": Param(int, 200, smoke=10, paper=5_000, low=2, high=10**6, help="held-out target documents scored"),
    "select_sizes": Param(
        list,
        [400],
        smoke=[20],
        paper=[50_000],
        items=int,
        low=1,
        high=10**8,
        help="selection sizes in chunks' worth of tokens (k times the eligible pool's mean chunk length)",
    ),
    "min_length": Param(
        int,
        100,
        smoke=20,
        low=0,
        high=10**6,
        help="fewest tokens (words, punctuation) of a selectable chunk; package: 100",
    ),
    "dsir_seeds": Param(
        int, 4, smoke=2, paper=3, low=1, high=20, help="selection draws and LM seeds per DSIR method (one LM each)"
    ),
    "doremi_seeds": Param(int, 3, smoke=1, paper=3, low=1, high=20, help="main-model seeds per DoReMi mixture"),
    "vocab_size": Param(
        int,
        2048,
        smoke=512,
        paper=32_768,
        low=16,
        high=10**6,
        help="most frequent token ids kept (others one unknown id)",
    ),
    "lm_dim": Param(
        int, 64, smoke=32, paper=768, low=8, high=8192, help="width of the tiny LLaMA models (DSIR's, DoReMi's proxies)"
    ),
    "main_dim": Param(
        int,
        128,
        smoke=48,
        paper=2048,
        low=8,
        high=8192,
        help="width of DoReMi's main models, wider than the proxy (the paper: 280M proxy, 8B main model)",
    ),
    "lm_layers": Param(int, 2, smoke=1, paper=12, low=1, high=64, help="decoder layers of the tiny LLaMA models"),
    "block_size": Param(int, 64, smoke=32, paper=1024, low=8, high=8192, help="tokens per training sequence"),
    "batch_size": Param(int, 16, smoke=4, paper=64, low=1, high=4096, help="sequences per step"),
    "learning_rate": Param(
        float, 3e-3, paper=1e-3, low=1e-6, high=1.0, help="AdamW peak learning rate (warmup, exponential decay)"
    ),
    "dsir_steps": Param(int, 150, smoke=4, paper=50_000, low=1, high=10**7, help="steps of each DSIR selection's LM"),
    "proxy_steps": Param(
        int, 1000, smoke=8, paper=200_000, low=2, high=10**7, help="steps of DoReMi's reference and proxy models"
    ),
    "proxy_seeds": Param(
        int,
        3,
        smoke=2,
        paper=1,
        low=1,
        high=20,
        help="proxy runs per sweep point against one reference (DoReMi main model i trains on run i's weights)",
    ),
    "doremi_rounds": Param(
        int,
        1,
        smoke=2,
        paper=1,
        low=1,
        high=5,
        help="DoReMi rounds at the sweep's last point (round r's reference trains on round r-1's weights; mains: round 1)",
    ),
    "doremi_steps": Param(int, 400, smoke=6, paper=200_000, low=2, high=10**7, help="steps of each main model"),
    "eval_every": Param(int, 100, smoke=2, paper=5_000, low=1, high=10**7, help="steps between held-out evaluations"),
    "step_size": Param(float, 1.0, low=1e-4, high=100.0, help="DoReMi's exponentiated-gradient step size (paper: 1)"),
    "noise_shares": Param(
        list,
        [0.0, 0.4],
        smoke=[0.4],
        paper=[0.0],
        items=float,
        low=0.0,
        high=0.9,
        help="natural token share of an unlearnable noise domain, one DoReMi run each (the last one is judged)",
    ),
    "smoothing": Param(float, 1e-3, low=0.0, high=1.0, help="DoReMi's smoothing towards uniform (paper: 1e-3)"),
    "doremi_fractions": Param(
        list,
        [1.0, 0.6, 0.35, 0.2],
        paper=[1.0] * 6,
        items=float,
        low=0.0,
        high=1.0,
        help="share of each text domain's training documents DoReMi's models see (unequal: natural is not uniform)",
    ),
}


# ---------------------------------------------------------------------------------------------------------------
# domains and tokens


@dataclass
class Domains:
    """Chunks per domain (each document cut into `chunk_words`-word chunks, in document order), their token ids (one
    compact vocabulary), the tokenizer's end-of-text id, and each chunk's document and article."""

    names: list[str]
    docs: dict[str, list[str]]  # the chunks' texts
    tokens: dict[str, list[np.ndarray]]
    vocab_size: int
    eos: int
    articles: dict[str, np.ndarray] = field(default_factory=dict)  # each chunk's article (its cluster)
    doc_ids: dict[str, np.ndarray] = field(default_factory=dict)  # each chunk's document (0, 1, ... in order)

    def stream(self, docs: Sequence[np.ndarray]) -> np.ndarray:
        """Documents joined into one token stream, each closed by the end-of-text token."""
        return np.concatenate([np.r_[d, self.eos] for d in docs]) if len(docs) else np.zeros(0, np.int64)

    def token_counts(self) -> np.ndarray:
        """Each domain's size in tokens (end-of-text tokens included)."""
        return doremi.domain_token_counts([self.stream(self.tokens[n]) for n in self.names])


def _local_docs(name: str, n: int, seed: int) -> tuple[list[str], np.ndarray]:
    """Up to n shuffled paragraphs of one squad_shifts domain, and the article each comes from (paragraphs of one
    article share its topic and words: the article is the cluster a held-out interval resamples). A domain stored
    as one 'article' (squad_shifts' reddit: every post under one entry) has no article structure: each post is its
    own."""
    articles = squad_paragraphs(name)
    paras = [p for article in articles for p in article]
    owner = (
        np.repeat(np.arange(len(articles)), [len(a) for a in articles]) if len(articles) > 1 else np.arange(len(paras))
    )
    order = np.random.default_rng(seed).permutation(len(paras))[:n]
    return [paras[i] for i in order], owner[order]


def _hub_docs(names: Sequence[str], n: int, seed: int) -> dict[str, list[str]]:
    """Up to n documents of each Pile domain, streamed from the Hub."""
    from datasets import load_dataset

    out: dict[str, list[str]] = {name: [] for name in names}
    stream = load_dataset(PILE_HUB, split="train", streaming=True).shuffle(seed=seed, buffer_size=10_000)
    for row in stream:
        name = row["meta"]["pile_set_name"]
        if name in out and len(out[name]) < n and row["text"].strip():
            out[name].append(row["text"].strip())
        if all(len(v) >= n for v in out.values()):
            break
    return out


def chunk_documents(docs: Sequence[str], words: int) -> tuple[list[str], np.ndarray]:
    """Every document cut into chunks of `words` whitespace-separated words (the last chunk of a document shorter),
    as the DSIR paper cuts The Pile into 128-word examples; returns the chunks and each chunk's document index."""
    chunks, owner = [], []
    for i, doc in enumerate(docs):
        w = doc.split()
        for start in range(0, max(1, len(w)), words):
            chunks.append(" ".join(w[start : start + words]))
            owner.append(i)
    return chunks, np.asarray(owner, np.int64)


def split_documents(
    doc_ids: np.ndarray, p: Any, articles: np.ndarray | None = None
) -> tuple[list[int], list[int], list[int]]:
    """DSIR's split of a target domain, by whole articles in a seeded order (`articles`: each chunk's article; without
    it each document is its own): the chunks of the first articles until they hold `target_docs` documents (the
    sample DSIR fits), of the next until `eval_docs` more (held-out text every selection's LM is scored on), and of
    the rest (the oracle arm's candidates). Paragraphs of one article share its topic and words, so no article (and
    no document) straddles two parts: the held-out text shares nothing with the fitted sample or the oracle."""
    get = p.get if isinstance(p, dict) else lambda k: getattr(p, k)
    doc_ids = np.asarray(doc_ids, np.int64)
    owner = doc_ids if articles is None else np.asarray(articles)
    if owner.shape != doc_ids.shape:
        raise ValueError("articles: one label per chunk")
    labels, art = np.unique(owner, return_inverse=True)
    order = np.random.default_rng(get("seed")).permutation(labels.size)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    docs_per_article = np.zeros(labels.size, np.int64)  # distinct documents per article
    first = np.unique(doc_ids, return_index=True)[1]
    np.add.at(docs_per_article, art[first], 1)
    before = np.concatenate([[0], np.cumsum(docs_per_article[order])])[:-1][rank]  # documents in earlier articles
    n_sample, n_eval = get("target_docs"), get("eval_docs")
    r = before[art]
    part = np.where(r < n_sample, 0, np.where(r < n_sample + n_eval, 1, 2))
    key = np.lexsort((np.arange(doc_ids.size), doc_ids, rank[art]))  # article order, then document, then chunk
    return [[int(i) for i in key if part[i] == j] for j in range(3)]  # type: ignore[return-value]


def package_lengths(texts: Sequence[str]) -> np.ndarray:
    """Tokens of each text as the DSIR package counts them for its length filter (nltk's WordPunct tokens)."""
    return np.array([len(dsir.tokenize(t)) for t in texts], np.int64)


def pool_problem(
    texts: dict[str, list[str]],
    doc_ids: dict[str, np.ndarray],
    p: Any,
    target: str,
    articles: dict[str, np.ndarray] | None = None,
) -> str | None:
    """Why the selections for `target` would fail or degenerate, or None: no pool chunk reaches min_length; a
    selection larger than half the eligible pool (any two arms then share chunks by construction, and at the pool's
    size every equal-token arm takes the same chunks); fewer eligible target chunks outside the held-out documents
    than the oracle arm needs."""
    get = p.get if isinstance(p, dict) else lambda k: getattr(p, k)
    m, k = get("min_length"), max(get("select_sizes"))
    pool = [t for name in texts if name != target for t in texts[name]]
    lengths = package_lengths(pool)
    eligible = int((lengths >= m).sum())
    if eligible == 0:
        return (
            f"parameter 'min_length': {m} leaves no selectable chunk in the pool of {target} (its longest chunk has "
            f"{int(lengths.max(initial=0))} tokens at chunk_words {get('chunk_words')})"
        )
    if 2 * k > eligible:
        return (
            f"parameter 'select_sizes': {k} is more than half of the {eligible:,} pool chunks of {target} with at "
            f"least min_length {m} tokens: the arms would share most of their chunks by construction"
        )
    sample, _, rest = split_documents(doc_ids[target], p, (articles or {}).get(target))
    left = int((package_lengths([texts[target][i] for i in sample + rest]) >= m).sum())
    if left < k:
        return (
            f"parameter 'select_sizes': {k} exceeds the {left:,} chunks of {target} with at least min_length {m} "
            "tokens left for the oracle arm (outside the held-out documents)"
        )
    return None


def tokenizer(source: str) -> Any:
    """SmolLM2's tokenizer: the packaged copy offline, the Hub's at source hub."""
    from transformers import AutoTokenizer

    from ..pretrained import smollm2_path

    return AutoTokenizer.from_pretrained(str(smollm2_path()) if source == "local" else TOKENIZER_HUB)


def load_domains(p: Any) -> Domains:
    """Every domain's documents, tokenized and mapped onto the compact vocabulary of the ids they use."""
    from ..params import ParameterError

    if p.source == "local":
        local = {n: _local_docs(n, p.docs_per_domain, p.seed + i) for i, n in enumerate(p.domains)}
        docs, articles = {n: v[0] for n, v in local.items()}, {n: v[1] for n, v in local.items()}
    else:  # a Pile document is its own article
        docs = _hub_docs(p.domains, p.docs_per_domain, p.seed)
        articles = {n: np.arange(len(v)) for n, v in docs.items()}
    for name, d in docs.items():
        if len(d) < MIN_DOMAIN_DOCS:
            raise ParameterError(f"parameter 'domains': {name} has {len(d)} documents (at least {MIN_DOMAIN_DOCS})")
    chunked = {n: chunk_documents(v, p.chunk_words) for n, v in docs.items()}
    texts, doc_ids = {n: c[0] for n, c in chunked.items()}, {n: c[1] for n, c in chunked.items()}
    arts = {n: np.asarray(articles[n])[doc_ids[n]] for n in texts}
    for target in p.targets:  # at source local the checks said so already; at hub the documents are known now
        problem = pool_problem(texts, doc_ids, p, target, arts)
        if problem:
            raise ParameterError(problem)
    tok = tokenizer(p.source)
    ids = {n: tok(d, add_special_tokens=False)["input_ids"] for n, d in texts.items()}
    tokens, size, eos = compact_vocabulary(ids, tok.eos_token_id, p.vocab_size)
    domains = Domains(list(p.domains), texts, tokens, size, eos, arts, doc_ids)
    check_blocks(domains, p)
    return domains


def check_blocks(d: Domains, p: Any) -> None:
    """Before any training: every text cut into blocks of block_size holds at least one block, or one ParameterError
    names it. Held-out target text and DoReMi's splits are known now; a selection is bounded below by its k
    shortest pool documents, so a selection refused here could fall short of a block, never one accepted."""
    from ..params import ParameterError

    lengths = {n: np.array([len(x) + 1 for x in d.tokens[n]], np.int64) for n in d.names}  # + end-of-text
    short: list[tuple[str, int]] = []
    for target in p.targets:
        n = int(d.doc_ids[target].max()) + 1
        if n <= p.target_docs + p.eval_docs:
            raise ParameterError(
                f"parameters 'target_docs' + 'eval_docs': {p.target_docs} + {p.eval_docs} leave none of the {n} "
                f"documents of {target}"
            )
        t = split_target(d, p, target)
        short.append((f"the held-out text of {target}", int(lengths[target][t.held_out].sum())))
        pool = np.sort([lengths[name][i] for name, i in t.pool])
        short.append(
            (f"a selection of {min(p.select_sizes)} chunks for {target}", int(pool[: min(p.select_sizes)].sum()))
        )
    for name, fraction in zip(d.names, p.doremi_fractions):
        train, held = doremi_chunks(d, name, fraction)
        short += [
            (f"DoReMi's training text of {name} (doremi_fractions {fraction:g})", int(lengths[name][train].sum()))
        ]
        short += [(f"DoReMi's held-out text of {name}", int(lengths[name][held].sum()))]
    for what, n_tokens in short:
        if n_tokens < p.block_size:
            raise ParameterError(
                f"parameter 'block_size': {p.block_size} tokens, but {what} has {n_tokens}: "
                "lower block_size or read more documents"
            )


def compact_vocabulary(
    ids: dict[str, list[list[int]]], eos: int, size: int
) -> tuple[dict[str, list[np.ndarray]], int, int]:
    """Token ids mapped onto 0..size-1: the end-of-text token and the size-2 most frequent ids keep their own id,
    every other id becomes one unknown id (size-1). Returns the mapped documents, the vocabulary size, and eos."""
    flat = np.concatenate([np.asarray(x, np.int64) for v in ids.values() for x in v])
    values, counts = np.unique(flat, return_counts=True)
    keep = [int(v) for v in values[np.argsort(-counts, kind="stable")] if v != eos][: size - 2]
    lookup = {eos: 0, **{t: i + 1 for i, t in enumerate(keep)}}
    unknown = len(lookup)
    mapped = {n: [np.array([lookup.get(t, unknown) for t in x], np.int64) for x in v] for n, v in ids.items()}
    return mapped, unknown + 1, 0


def domains_table(d: Domains) -> pd.DataFrame:
    """Documents and tokens per domain."""
    counts = d.token_counts()
    return pd.DataFrame(
        [
            {
                "domain": SQUAD_DOMAINS.get(n, n),
                "documents": int(d.doc_ids[n].max()) + 1,
                "chunks": len(d.docs[n]),
                "tokens": int(c),
                "tokens per chunk": round(c / len(d.docs[n]), 1),
                "token share": round(c / counts.sum(), 3),
            }
            for n, c in zip(d.names, counts)
        ]
    )


def domain_label(name: str) -> str:
    """A domain's reader-facing name."""
    return SQUAD_DOMAINS.get(name, name)


# ---------------------------------------------------------------------------------------------------------------
# tiny language models


def lm_config(p: Any, vocab_size: int, width: int | None = None) -> dict[str, Any]:
    """The tiny LLaMA's architecture (part of every cache key): `lm_dim` wide unless `width` says otherwise."""
    return {
        "vocab_size": vocab_size,
        "d_model": width or p.lm_dim,
        "n_layers": p.lm_layers,
        "n_heads": N_HEADS,
        "seq_len": p.block_size,
    }


def _blocks(d: Domains, streams: Sequence[np.ndarray], block_size: int, names: Sequence[str]) -> doremi.DomainBlocks:
    """DomainBlocks over the given token streams."""
    return doremi.DomainBlocks([torch.from_numpy(s) for s in streams], block_size, names)


def block_articles(d: Domains, name: str, doc_idx: Sequence[int], block_size: int) -> np.ndarray:
    """The article of every block cut from the stream of documents `doc_idx` of domain `name` (a block that spans
    two documents counts in the one it starts in; without article labels each document is its own article)."""
    idx = np.asarray(list(doc_idx), np.int64)
    lengths = np.array([len(d.tokens[name][i]) + 1 for i in idx], np.int64)  # + end-of-text, as in `stream`
    n_blocks = int(lengths.sum()) // block_size
    doc = np.searchsorted(np.cumsum(lengths), np.arange(n_blocks) * block_size, side="right")
    owner = d.articles.get(name)
    return (idx if owner is None or len(owner) == 0 else np.asarray(owner)[idx])[doc]


def heldout_nll(model: Any, blocks: doremi.DomainBlocks, batch_size: int) -> list[np.ndarray]:
    """Summed next-token NLL of every held-out block, per domain."""
    model.eval()
    with torch.inference_mode():
        return [np.asarray(x, np.float64) for x in doremi.block_nll(model, blocks, batch_size)]


def train_and_score(
    p: Any,
    vocab_size: int,
    train_blocks: doremi.DomainBlocks,
    weights: Sequence[float],
    eval_blocks: doremi.DomainBlocks,
    seed: int,
    steps: int,
    name: str,
    track: bool = False,
    width: int | None = None,
) -> dict[str, Any]:
    """Train a tiny LLaMA (`lm_dim` wide unless `width` says otherwise) on a fixed mixture (cached by its inputs);
    held-out NLL per block and, if `track`, per eval."""
    cfg = lm_config(p, vocab_size, width)

    def build(path: Path) -> None:
        model = doremi.tiny_llama(**cfg, seed=seed)

        def per_domain(m: Any) -> list[float]:
            return [x.sum() / max(1, x.size * (p.block_size - 1)) for x in heldout_nll(m, eval_blocks, p.batch_size)]

        history = doremi.train_lm(
            model,
            train_blocks,
            np.asarray(weights, float),
            steps,
            p.batch_size,
            p.learning_rate,
            seed,
            eval_every=p.eval_every if track else None,
            eval_fn=per_domain if track else None,
        )
        out = {
            "nll": [x.tolist() for x in heldout_nll(model, eval_blocks, p.batch_size)],
            "eval_step": list(map(int, history.get("eval_step", []))),
            "eval": np.asarray(history.get("eval", np.zeros((0, eval_blocks.n_domains)))).tolist(),
        }
        path.write_text(json.dumps(out))

    key = (
        cfg,
        [b.numpy() for b in train_blocks.blocks],
        list(map(float, weights)),
        [b.numpy() for b in eval_blocks.blocks],
        seed,
        steps,
        p.batch_size,
        p.learning_rate,
        doremi.LR_SCHEDULE,
        p.eval_every,
        track,
    )
    path = cache.entry_path("data_selection", name, *key, suffix=".json")
    value, _ = cache.file_entry(path, build, cache.read_json)
    return value


# ---------------------------------------------------------------------------------------------------------------
# DSIR


@dataclass
class DsirTarget:
    """One DSIR target: its fitted sample, held-out chunks, the raw pool, the oracle's candidates (chunks of the
    target domain outside the held-out documents), the selection's log weights (smoothed), the package's (1e-8 floor), eligibility."""

    target: str
    sample: list[int]
    held_out: list[int]
    pool: list[tuple[str, int]]  # (domain, chunk index)
    log_weights: np.ndarray
    heuristic_probs: np.ndarray
    eligible: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    oracle: list[tuple[str, int]] = field(default_factory=list)
    oracle_eligible: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    package_log_weights: np.ndarray = field(default_factory=lambda: np.zeros(0))
    package_ratio: np.ndarray = field(default_factory=lambda: np.zeros(0))  # the package's per-bucket log ratio
    empty: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # buckets the target sample never fills


def split_target(d: Domains, p: Any, target: str) -> DsirTarget:
    """Target sample, held-out chunks and oracle candidates (every chunk of the target domain outside the held-out
    documents, the sample included) of one domain (`split_documents`); the other domains are
    the raw pool. The target's own source is left out of the pool as in the paper (its targets are downstream
    datasets that The Pile does not hold): with it in the pool DSIR only has to recognise the domain."""
    sample, held, rest = split_documents(d.doc_ids[target], p, d.articles.get(target))
    pool = [(name, i) for name in d.names if name != target for i in range(len(d.docs[name]))]
    oracle = [(target, i) for i in sorted(sample + rest)]
    return DsirTarget(target, sample, held, pool, np.zeros(0), np.zeros(0), oracle=oracle)


def pool_texts(d: Domains, t: DsirTarget) -> list[str]:
    """The raw pool's chunks."""
    return [d.docs[name][i] for name, i in t.pool]


def fit_target(d: Domains, p: Any, t: DsirTarget) -> tuple[Any, Any, Any]:
    """Set DSIR's log-weights (target and raw distributions with DSIR_PSEUDO_COUNT per bucket), the package's own
    (no pseudo-count, the 1e-8 floor), the eligibility filter and the classifier's probabilities on `t`; return the
    hashed n-gram features of the pool, of the held-out target text (on which KL reduction is measured, so that DSIR
    is not scored on the sample it was fitted on) and of the oracle's candidates."""
    raw = pool_texts(d, t)
    target_texts = [d.docs[t.target][i] for i in t.sample]
    raw_feats, target_feats = dsir.ngram_features(raw), dsir.ngram_features(target_texts)
    t.log_weights = dsir.log_importance_weights(
        raw_feats,
        dsir.ngram_distribution(target_feats, DSIR_PSEUDO_COUNT),
        dsir.ngram_distribution(raw_feats, DSIR_PSEUDO_COUNT),
    )
    target_dist = dsir.ngram_distribution(target_feats)
    t.package_ratio = dsir.log_ratio(target_dist, dsir.ngram_distribution(raw_feats))
    t.package_log_weights = np.asarray(raw_feats @ t.package_ratio, np.float64).ravel()
    t.empty = target_dist == 0
    t.eligible = dsir.token_lengths(raw_feats) >= p.min_length
    oracle_feats = dsir.ngram_features([d.docs[name][i] for name, i in t.oracle])
    t.oracle_eligible = dsir.token_lengths(oracle_feats) >= p.min_length
    classifier = dsir.heuristic_classifier(target_texts, raw, p.seed)
    t.heuristic_probs = dsir.target_probabilities(classifier, raw)
    return raw_feats, dsir.ngram_features([d.docs[t.target][i] for i in t.held_out]), oracle_feats


def smooth(features: Any) -> np.ndarray:
    """Add-one-smoothed n-gram distribution (for KL between small corpora)."""
    return dsir.ngram_distribution(features, KL_PSEUDO_COUNT)


def chunk_lengths(d: Domains, chunks: Sequence[tuple[str, int]]) -> np.ndarray:
    """Tokens of every chunk as the LM reads it (end-of-text included)."""
    return np.array([len(d.tokens[name][i]) + 1 for name, i in chunks], np.int64)


def token_budget(t: DsirTarget, lengths: np.ndarray, k: int) -> float:
    """k chunks' worth of tokens: k times the mean length of the eligible pool chunks."""
    return float(k * lengths[t.eligible].mean())


def select(
    t: DsirTarget, method: str, k: int, lengths: np.ndarray, rng: np.random.Generator, oracle_lengths: np.ndarray
) -> np.ndarray:
    """Indices chosen by one method among the chunks long enough for the package's filter, in the method's order
    until k chunks' worth of tokens (equal tokens for every method): pool indices, or for the oracle indices into
    `t.oracle` (random chunks of the target domain itself)."""
    n = int(t.eligible.sum())
    budget = token_budget(t, lengths, k)
    if method == ORACLE:
        order = dsir.random_k(len(t.oracle), int(t.oracle_eligible.sum()), rng, t.oracle_eligible)
        return dsir.token_budget_prefix(order, oracle_lengths, budget)
    if method == "random":
        order = dsir.random_k(len(t.pool), n, rng, t.eligible)
    elif method == "heuristic classification":
        order = dsir.pareto_order(t.heuristic_probs, rng, t.eligible)
    elif method == TOPK_HEURISTIC:
        order = dsir.top_k(t.heuristic_probs, n, t.eligible)
    elif method == "DSIR":
        order = dsir.gumbel_top_k(t.log_weights, n, rng, t.eligible)
    else:
        order = dsir.top_k(t.log_weights, n, t.eligible)
    return dsir.token_budget_prefix(order, lengths, budget)


def dsir_runs(
    d: Domains, p: Any
) -> tuple[pd.DataFrame, dict[tuple[str, str, int], np.ndarray], dict[str, np.ndarray], pd.DataFrame]:
    """Every (target, method, size, seed): a fresh selection draw, its KL reduction on held-out target text, and the
    held-out NLL per block of one LM trained on it with that seed (with `shared with DSIR` and `shared with top-k
    DSIR`: the share of its chunks in common with those arms' selections of the same draw); the held-out blocks'
    token counts; and the two rankings per target and size (`rankings`)."""
    from tqdm.auto import tqdm

    rows, nll, counts, ranks = [], {}, {}, []
    seeds = range(p.seed, p.seed + p.dsir_seeds)
    n_runs = len(p.targets) * len(p.select_sizes) * len(METHODS) * len(seeds)
    bar = tqdm(total=n_runs, desc="DSIR selections", leave=False, disable=not progress.shown())
    for target in p.targets:
        t = split_target(d, p, target)  # sizes checked before the domains were tokenized
        raw_feats, held_feats, oracle_feats = fit_target(d, p, t)
        raw_smooth, target_smooth = smooth(raw_feats), smooth(held_feats)
        lengths, oracle_lengths = chunk_lengths(d, t.pool), chunk_lengths(d, t.oracle)
        eval_blocks = _blocks(d, [d.stream([d.tokens[target][i] for i in t.held_out])], p.block_size, [target])
        counts[target] = np.full(eval_blocks.blocks_per_domain()[0], p.block_size - 1, float)
        for k in p.select_sizes:
            picks: dict[tuple[str, int], np.ndarray] = {}
            for method in METHODS:
                per_seed = []
                for s in seeds:
                    idx = select(t, method, k, lengths, np.random.default_rng([s, k]), oracle_lengths)
                    picks[(method, s)] = idx
                    chosen = [(t.oracle if method == ORACLE else t.pool)[i] for i in idx]
                    feats = (oracle_feats if method == ORACLE else raw_feats)[idx]
                    stream = d.stream([d.tokens[name][i] for name, i in chosen])
                    train_blocks = _blocks(d, [stream], p.block_size, ["selection"])
                    lm = train_and_score(p, d.vocab_size, train_blocks, [1.0], eval_blocks, s, p.dsir_steps, "dsir-lm")
                    per_seed.append(lm["nll"][0])
                    bar.update()
                    rows.append(
                        {
                            "target": domain_label(target),
                            "method": method,
                            "selected": k,
                            "seed": s,
                            "chunks": len(idx),
                            "tokens": int(stream.size),
                            "kl_reduction": dsir.kl_reduction(smooth(feats), raw_smooth, target_smooth),
                            "perplexity": float(np.exp(np.sum(per_seed[-1]) / counts[target].sum())),
                            "unigram perplexity": unigram_perplexity(
                                stream, eval_blocks.blocks[0].numpy(), d.vocab_size
                            ),
                            **source_shares(d, chosen),
                        }
                    )
                nll[(target, method, k)] = np.asarray(per_seed)
            for row in rows[len(rows) - len(METHODS) * len(seeds) :]:
                own = picks[(row["method"], row["seed"])] if row["method"] != ORACLE else np.zeros(0, np.int64)
                row["shared with DSIR"] = shared_share(own, picks[("DSIR", row["seed"])])
                row["shared with top-k DSIR"] = shared_share(own, picks[("top-k DSIR", row["seed"])])
            ranks.append(rankings(t, raw_feats, lengths, k))
    bar.close()
    return pd.DataFrame(rows), nll, counts, pd.DataFrame(ranks).round(3)


def unigram_perplexity(train: np.ndarray, blocks: np.ndarray, vocab_size: int) -> float:
    """Held-out perplexity of the selection's add-one-smoothed unigram distribution over the compact vocabulary, on
    the tokens the LMs predict (every held-out block's tokens after its first): what a model that learns nothing but
    the selection's token frequencies would score, beside the LM trained on it."""
    p = (np.bincount(train, minlength=vocab_size) + 1.0) / (train.size + vocab_size)
    return float(np.exp(-np.log(p[blocks[:, 1:]]).mean()))


def source_shares(d: Domains, chosen: Sequence[tuple[str, int]]) -> dict[str, float]:
    """The share of a selection's chunks drawn from each domain ('from Reddit': 0.98)."""
    n = max(1, len(chosen))
    return {f"from {domain_label(name)}": sum(c == name for c, _ in chosen) / n for name in d.names}


def shared_share(a: np.ndarray, b: np.ndarray) -> float:
    """The share of two selections' chunks they have in common: 2 |a ∩ b| / (|a| + |b|)."""
    return 2 * np.intersect1d(a, b).size / max(1, len(a) + len(b))


def held_out_articles(d: Domains, p: Any) -> dict[str, np.ndarray]:
    """Per DSIR target: the article of each held-out block (the cluster its interval resamples)."""
    return {t: block_articles(d, t, split_target(d, p, t).held_out, p.block_size) for t in p.targets}


def method_ratio(
    nll: dict,
    counts: dict,
    a: str,
    b: str,
    targets: Sequence[str],
    sizes: Sequence[int],
    seed: int,
    articles: dict[str, np.ndarray],
) -> stats.Interval:
    """Geometric mean over targets and sizes of the held-out perplexity ratio a / b, with one joint interval: per
    seed (a fresh selection draw and LM initialisation, shared by both arms) the mean log ratio over the settings;
    held-out articles (`held_out_articles`) resampled within each target, then blocks within them, with the same
    draw for every size, arm and seed."""
    labels = pd.factorize(np.concatenate([[f"{i}/{x}" for x in articles[t]] for i, t in enumerate(targets)]))[0]
    strata = np.concatenate([np.full(counts[t].size, i) for i, t in enumerate(targets)])
    if labels.size != strata.size:
        raise ValueError("articles: one label per held-out block of every target")
    weights = stats.unit_weights(labels, strata, n_resamples=N_BOOT, seed=seed)
    per_seed = np.zeros(len(nll[(targets[0], a, sizes[0])]))
    draws = np.zeros((N_BOOT, per_seed.size))
    start = 0
    for t in targets:
        c = counts[t]
        w = weights[:, start : start + c.size].T  # (blocks, resamples)
        start += c.size
        for k in sizes:
            gap = nll[(t, a, k)] - nll[(t, b, k)]  # (seeds, blocks)
            per_seed += gap.sum(1) / c.sum()
            draws += (gap @ w / (c @ w)).T
    n = len(targets) * len(sizes)
    iv = stats.clustered_interval(
        per_seed / n,
        draws / n,
        clusters=labels,
        strata=strata,
        unit="articles",
        words=f"geometric mean over {n} target × size setting{'s' if n > 1 else ''}; held-out articles (a Pile "
        "document is its own) resampled within target, one draw for every arm, size and seed; selection draws with "
        "LM seeds",
    )
    return stats.Interval(math.exp(iv.estimate), math.exp(iv.low), math.exp(iv.high), iv.method)


PER_TARGET = ("random", "heuristic classification", TOPK_HEURISTIC)  # DSIR's comparators, one ratio per target


def per_target_ratios(
    nll: dict, counts: dict, targets: Sequence[str], sizes: Sequence[int], seed: int, articles: dict[str, np.ndarray]
) -> pd.DataFrame:
    """DSIR / each comparator (`PER_TARGET`) per target, with `method_ratio`'s interval on that target alone: the
    rows pool the targets (the paper averages over tasks); this says whether the targets agree."""
    rows = []
    for t in targets:
        for b in PER_TARGET:
            iv = method_ratio(nll, counts, "DSIR", b, [t], sizes, seed, articles)
            rows.append(
                {"target": domain_label(t), "DSIR against": b, "ratio": iv.estimate, "low": iv.low, "high": iv.high}
            )
    return pd.DataFrame(rows)


def disagreement(table: pd.DataFrame, comparator: str) -> str:
    """'' when the targets' ratios DSIR / `comparator` lie on one side of 1, else a sentence saying how they disagree
    (both intervals clear of 1 on opposite sides, or only the estimates) and what more data would do."""
    g = table[table["DSIR against"] == comparator]
    if len(g) < 2 or not ((g.ratio < 1).any() and (g.ratio > 1).any()):
        return ""
    values = ", ".join(f"{r.target} {r.ratio:.3f} [{r.low:.3f}, {r.high:.3f}]" for _, r in g.iterrows())
    if (g.high < 1).any() and (g.low > 1).any():
        return (
            f"the targets disagree in sign ({values}): more data would settle each target's ratio, not the pooled "
            "one, which averages opposite effects"
        )
    return (
        f"the targets' estimates lie on opposite sides of 1 ({values}): more data may settle them in opposite "
        "directions rather than decide the pooled row"
    )


def per_target_words(table: pd.DataFrame, mix: pd.DataFrame) -> str:
    """Each target's ratios, where the targets disagree, and where DSIR's and top-k DSIR's chunks come from."""
    per = "; ".join(
        f"{t}: " + ", ".join(f"DSIR / {r['DSIR against']} {_ratio_row(r)}" for _, r in g.iterrows())
        for t, g in table.groupby("target", sort=False)
    )
    split = "; ".join(f"against {b}, {w}" for b in PER_TARGET if (w := disagreement(table, b)))
    agree = f" {split[0].upper()}{split[1:]}." if split else " The targets agree in direction on every comparator."
    src = [c for c in mix.columns if c.startswith("from ")]
    picks = []
    for _, r in mix[mix.method.isin(["DSIR", "top-k DSIR"])].iterrows():
        top = max(src, key=lambda c: r[c])
        picks.append(f"{r.method} for {r.target} {r[top]:.0%} {top}")
    return (
        f"Per target (same intervals, one target each): {per}.{agree} Where the chunks come from: {'; '.join(picks)}."
    )


def _ratio_row(r: pd.Series) -> str:
    """'0.918 [0.88, 0.95]' from a row with ratio, low, high."""
    return f"{r.ratio:.3f} [{r.low:.3f}, {r.high:.3f}]"


def source_mix(selection: pd.DataFrame) -> pd.DataFrame:
    """Per target and method: the share of its chosen chunks from each source domain (means over the draws)."""
    src = [c for c in selection.columns if c.startswith("from ")]
    view = selection.groupby(["target", "method"], sort=False)[src].mean().reset_index()
    return view.round(3)


def method_means(table: pd.DataFrame) -> pd.DataFrame:
    """Per target and method: mean KL reduction and mean quality (minus log perplexity) over its selections."""
    view = table.assign(quality=-np.log(table.perplexity.to_numpy()))
    return view.groupby(["target", "method"], sort=False)[["kl_reduction", "quality"]].mean().reset_index()


def kl_quality_correlation(table: pd.DataFrame, level: float = 0.95) -> stats.Interval:
    """Pearson r of KL reduction with quality (minus log perplexity) across methods, as the paper correlates (its r
    runs over 8 methods' means): per target over the method means (`method_means`), then the mean of Fisher's z over
    targets, with the z interval of methods as the units (variance 1 / (m - 3) per target, m methods), back-
    transformed. The selection draws enter only through the means."""
    means = method_means(table)
    zs, dfs = [], []
    for _, g in means.groupby("target", sort=False):
        r = float(np.corrcoef(g.kl_reduction, g.quality)[0, 1])
        zs.append(math.atanh(float(np.clip(r, -0.999999, 0.999999))))
        dfs.append(len(g) - 3)
    z = float(np.mean(zs))
    m = int(means.method.nunique())
    how = (
        f"Pearson r across {m} methods' means within each of {len(zs)} target(s), Fisher z averaged over targets; "
        f"a z interval with the methods as units ({'; '.join(str(x + 3) for x in dfs)} methods per target)"
    )
    if min(dfs) < 1:
        return stats.Interval(math.tanh(z), math.nan, math.nan, how + ": too few methods for an interval")
    se = math.sqrt(sum(1.0 / x for x in dfs)) / len(dfs)
    half = float(sps.norm.ppf(0.5 + level / 2)) * se
    return stats.Interval(math.tanh(z), math.tanh(z - half), math.tanh(z + half), how)


GUMBEL_SD = math.pi / math.sqrt(
    6
)  # the standard Gumbel's standard deviation (nats): the noise DSIR adds to a log weight
PAPER_SELECTED_SHARE = 51.2e6 / 1.6e9  # DSIR keeps 51.2M of The Pile's 1.6B 128-word examples
RANKING_VIEW = [
    "target",
    "selected",
    "empty target buckets",
    "top-k shared, package vs smoothed",
    "log weight SD (nats)",
    "chunks within 1 Gumbel SD of the cutoff",
    "selected share of the eligible pool",
]


def kl_per_target(table: pd.DataFrame) -> pd.DataFrame:
    """Per target: Pearson r of KL reduction with quality across the methods' means, with every method and without
    the oracle (the row pools the targets by Fisher z), and of the LM's log perplexity with the selection's unigram
    model's (how much of the ranking a model of token frequencies alone reproduces)."""
    means = method_means(table)
    uni = table.groupby(["target", "method"], sort=False)[["perplexity", "unigram perplexity"]].mean().reset_index()
    rows = []
    for (t, g), (_, u) in zip(means.groupby("target", sort=False), uni.groupby("target", sort=False)):
        plain = g[g.method != ORACLE]
        rows.append(
            {
                "target": t,
                "r, every method": float(np.corrcoef(g.kl_reduction, g.quality)[0, 1]),
                "r, without the oracle": float(np.corrcoef(plain.kl_reduction, plain.quality)[0, 1]),
                "r(log LM ppl, log unigram ppl)": float(
                    np.corrcoef(np.log(u.perplexity), np.log(u["unigram perplexity"]))[0, 1]
                ),
                "methods": len(g),
            }
        )
    return pd.DataFrame(rows).round(3)


def unigram_words(view: pd.DataFrame, kl: pd.DataFrame) -> str:
    """The unigram baseline beside the LMs' perplexity, and the per-target correlations."""
    ratio = view["perplexity"] / view["unigram perplexity"]
    per = "; ".join(
        f"{r.target}: r = {r['r, every method']:.2f} with every method, {r['r, without the oracle']:.2f} without the "
        f"oracle, and the LM's log perplexity correlates with the unigram model's at {r['r(log LM ppl, log unigram ppl)']:.2f}"
        for _, r in kl.iterrows()
    )
    span = {c: f"{view[c].min():.0f} to {view[c].max():.0f}" for c in ("unigram perplexity", "perplexity")}
    return (
        "A unigram model of each selection (its token frequencies, add-one smoothed) scores the held-out text at "
        f"{span['unigram perplexity']}, against the trained LMs' {span['perplexity']} (LM / unigram "
        f"{ratio.min():.2f} to {ratio.max():.2f}). Per target, across the methods' means: {per}."
    )


def rankings_view(ranks: pd.DataFrame) -> pd.DataFrame:
    """The columns of `rankings` the page shows (the whole table is published)."""
    return ranks[RANKING_VIEW]


def gumbel_words(ranks: pd.DataFrame) -> str:
    """Why DSIR's resampling picks nearly top-k's chunks, from `rankings`: the log weights' spread against the
    Gumbel noise, the chunks near the cutoff, and the selected share of the pool against the paper's."""
    span = _span(ranks)
    return (
        f"the log weights spread with a standard deviation of {span('log weight SD (nats)', '.1f')} nats against the "
        f"Gumbel noise's {GUMBEL_SD:.2f}, so only {span('chunks within 1 Gumbel SD of the cutoff', '.0f')} eligible "
        f"chunks lie within one Gumbel SD of top-k's cutoff, and the selection takes "
        f"{span('selected share of the eligible pool', '.1%')} of the eligible pool (the paper: "
        f"{PAPER_SELECTED_SHARE:.1%})"
    )


def _span(ranks: pd.DataFrame) -> Any:
    """A function giving a column's range over the targets as text ('28.1 to 41.9', or one value)."""

    def span(column: str, fmt: str = ".2f") -> str:
        low, high = format(ranks[column].min(), fmt), format(ranks[column].max(), fmt)
        return low if low == high else f"{low} to {high}"

    return span


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson r, NaN (without numpy's warning) when either side is constant (no empty bucket: no unseen n-gram)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0 else math.nan


def rankings(t: DsirTarget, raw_feats: Any, lengths: np.ndarray, k: int) -> dict:
    """The package's ranking (no pseudo-count, the 1e-8 floor) beside the one selecting here (DSIR_PSEUDO_COUNT per
    bucket), over the eligible pool: the share of buckets the target sample leaves empty, the share of the package's
    mean log weight those buckets carry, each weight's correlation with minus the count of the chunk's n-grams in
    empty buckets and with length, the rank correlation of the two, and the share of their top-k chunks in common."""
    el = t.eligible
    feats = raw_feats[np.flatnonzero(el)]
    empty = np.flatnonzero(t.empty)
    unseen = -np.asarray(feats[:, empty].sum(1), float).ravel()
    from_empty = np.asarray(feats[:, empty] @ t.package_ratio[empty], float).ravel()
    package, ours = t.package_log_weights[el], t.log_weights[el]
    n, budget = int(el.sum()), token_budget(t, lengths, k)
    top = [
        dsir.token_budget_prefix(dsir.top_k(w, n, el), lengths, budget) for w in (t.package_log_weights, t.log_weights)
    ]
    cutoff = float(t.log_weights[top[1]].min())  # the smallest log weight top-k DSIR keeps
    return {
        "target": domain_label(t.target),
        "selected": k,
        "empty target buckets": float(t.empty.mean()),
        "package: share of mean log weight from empty buckets": float(from_empty.mean() / package.mean()),
        "r(package weight, -unseen n-grams)": pearson(package, unseen),
        "r(smoothed weight, -unseen n-grams)": pearson(ours, unseen),
        "r(package weight, length)": pearson(package, lengths[el]),
        "r(smoothed weight, length)": pearson(ours, lengths[el]),
        "Spearman(package, smoothed)": float(sps.spearmanr(package, ours).statistic),
        "top-k shared, package vs smoothed": shared_share(*top),
        # why resampling and top-k pick nearly the same chunks: the Gumbel noise (SD pi / sqrt 6 nats) against the
        # spread of the log weights, how many chunks it could move across top-k's cutoff, and the selected fraction
        "log weight SD (nats)": float(ours.std()),
        "chunks within 1 Gumbel SD of the cutoff": int((np.abs(ours - cutoff) < GUMBEL_SD).sum()),
        "selected share of the eligible pool": len(top[1]) / n,
    }


# ---------------------------------------------------------------------------------------------------------------
# the link to contamination (the Min-K% chapter)


def _contamination_sources(
    source: str, seed: int, rng: np.random.Generator
) -> tuple[dict[str, list[str]], list[str], list[str]]:
    """The Min-K% chapter's items per set (news last), its outlier background and its news background."""
    from ..mink import corpora as C

    if source == "local":
        background = [x for dom in ("new_wiki", "reddit") for a in squad_paragraphs(dom) for x in a]
        news_articles = [[C.trim_words(x, 200) for x in a] for a in squad_paragraphs("nyt")]
        names = list(C.STAND_INS)
        load = C.local_set
    else:
        background = C.hub_texts(*C.HUB_BACKGROUND, n=4000, seed=seed)
        news_articles = [[C.trim_words(t, 200)] for t in C.hub_texts(*C.HUB_NEWS, n=4000, seed=seed)]
        names = list(C.HUB_SETS)
        load = C.hub_set
    news, news_background = C.news_pools(news_articles, min(100, len(news_articles) // 8), seed)
    sets = {name: _sample(load(name, 200), 50, rng) for name in names}
    sets["news"] = news.members + news.nonmembers
    return sets, background, news_background


TEMPLATE = re.compile(r"^(?:Question|Answer|Choices|Review|Q|A):\s*|\([A-E]\)\s*", re.MULTILINE)


def strip_templates(text: str) -> str:
    """An item without its prompt template: the line labels ("Question:", "Answer:", "Choices:", "Review:", "Q:",
    "A:") and the choice letters "(A)" … "(E)" removed, the content kept."""
    return TEMPLATE.sub("", text)


def contamination_weights(p: Any, seed: int) -> pd.DataFrame:
    """DSIR log-importance weight per n-gram of the Min-K% chapter's inserted items, every set against ONE shared
    background (half the chapter's web background, Wikipedia + Reddit, half its news background), with the prompt
    templates and without them (`strip_templates`).

    Outliers (Fig. 5a) are the benchmark-formatted sets, in-distribution (Fig. 5b) the NYT paragraphs. Each item's
    target distribution is fitted on the other half of its own set (cross-fitting), so no item is scored against a
    distribution that contains it. Every set is subsampled to the same number of n-grams (`equal_ngrams`: the
    smallest set's), so that no set's smoothing weighs more than another's, and all distributions carry
    CONTAMINATION_PSEUDO_COUNT per bucket: with a few thousand n-grams most buckets are unseen, and the package's 1e-8
    floor would make the weight a count of unseen n-grams rather than a measure of likelihood."""
    rng = np.random.default_rng(seed)
    sets, background, news_background = _contamination_sources(p.source, seed, rng)
    shared = _sample(background, 1000, rng) + _sample(news_background, 1000, rng)
    bg_dist = dsir.ngram_distribution(dsir.ngram_features(shared), CONTAMINATION_PSEUDO_COUNT)
    sets = equal_ngrams(sets, rng)
    rows = []
    for name, raw_items in sets.items():
        regime = "in-distribution" if name == "news" else "outlier"
        for templates, items in (("with", raw_items), ("without", [strip_templates(x) for x in raw_items])):
            feats = dsir.ngram_features(items)
            halves = np.arange(len(items)) % 2
            for h in (0, 1):
                scored = np.flatnonzero(halves == h)
                own = dsir.ngram_distribution(feats[halves != h], CONTAMINATION_PSEUDO_COUNT)
                w = dsir.log_importance_weights(feats[scored], own, bg_dist)
                n = np.asarray(feats[scored].sum(1)).ravel()
                rows += [
                    {
                        "regime": REGIMES[regime],
                        "set": name,
                        "templates": templates,
                        "item": int(i),
                        "log_weight_per_ngram": float(x / max(c, 1)),
                    }
                    for i, x, c in zip(scored, w, n)
                ]
    return pd.DataFrame(rows)


def equal_ngrams(sets: dict[str, list[str]], rng: np.random.Generator) -> dict[str, list[str]]:
    """Every set cut to about the same number of n-grams: its items in a random order, the shortest prefix holding at
    least the smallest set's n-gram count (kept in their original order)."""
    counts = {n: np.asarray(dsir.ngram_features(v).sum(1)).ravel() for n, v in sets.items()}
    least = min(float(c.sum()) for c in counts.values())
    out = {}
    for name, items in sets.items():
        order = rng.permutation(len(items))
        keep = order[: int(np.searchsorted(np.cumsum(counts[name][order]), least, side="left")) + 1]
        out[name] = [items[i] for i in np.sort(keep)]
    return out


def _sample(items: Sequence[str], n: int, rng: np.random.Generator) -> list[str]:
    """Up to n items drawn without replacement."""
    return [items[i] for i in rng.permutation(len(items))[:n]]


def weight_gap(weights: pd.DataFrame, seed: int, templates: str = "with") -> stats.Interval:
    """Mean per-n-gram log weight of the outlier sets minus that of the in-distribution set(s): the mean of set means
    on each side. The interval resamples sets within their side (`stats.unit_weights`), then items within each drawn
    set, so it covers which benchmarks happen to be in the study, not only which items; with as few outlier sets as
    here it is a t interval over them (`stats.clustered_interval`, G - 1 degrees of freedom, and it says so)."""
    w = weights[weights.templates == templates]
    regimes = list(dict.fromkeys(w.regime))
    x, sets, sides = w.log_weight_per_ngram.to_numpy(), w.set.to_numpy(), w.regime.to_numpy()

    def stat(m: np.ndarray) -> np.ndarray:
        """(resamples,) outlier − in-distribution mean of set means under item multiplicities m (resamples, items)."""
        out = np.zeros(m.shape[0])
        for sign, regime in zip((1.0, -1.0), regimes):
            means, drawn = [], []
            for name in dict.fromkeys(sets[sides == regime]):
                mask = sets == name
                total = m[:, mask].sum(1)
                means.append(np.divide(m[:, mask] @ x[mask], total, out=np.zeros_like(total), where=total > 0))
                drawn.append(total / mask.sum())  # how many times the set was drawn
            means, drawn = np.stack(means), np.stack(drawn)
            out += sign * (means * drawn).sum(0) / drawn.sum(0)
        return out

    codes = [pd.factorize(v)[0] for v in (sets, sides)]  # integer labels (unit_weights takes no object arrays)
    draws = stat(stats.unit_weights(*codes, n_resamples=N_BOOT, seed=seed))
    n_sets = [len(set(sets[sides == r])) for r in regimes]
    return stats.clustered_interval(
        stat(np.ones((1, x.size))),
        draws[:, None],
        n_clusters=n_sets[0],
        unit="sets",
        words=f"outlier − in-distribution log weight ({n_sets[0]} outlier and {n_sets[1]} in-distribution set(s), "
        f"prompt templates {templates}, one shared background; no model trained: the 'model' below is the one "
        "weighting)",
    )


# ---------------------------------------------------------------------------------------------------------------
# DoReMi


@dataclass
class DoremiResult:
    """Learned weights, their trajectory, and the held-out results of the main models on both mixtures. Weights run
    over the training domains (the text domains, then the noise domain if any); held-out results over the text
    domains only (the authors' configs evaluate on their training domains; the noise domain, which has nothing to
    learn, is left out of ours)."""

    baseline: np.ndarray
    learned: np.ndarray  # the mean over the proxy runs of round 1
    trajectory: np.ndarray  # the first proxy run's weights per step
    runs: dict[str, list[dict]]  # mixture -> one result per seed
    counts: list[np.ndarray]  # scored tokens per held-out block, per text domain
    noise_share: float = 0.0
    proxy_runs: list[np.ndarray] = field(default_factory=list)  # round 1's averaged weights, one per proxy run
    rounds: list[np.ndarray] = field(default_factory=list)  # iterated DoReMi: each round's weights (round 1: mean)
    articles: list[np.ndarray] = field(default_factory=list)  # the article of each held-out block, per text domain


NOISE = "noise"  # the unlearnable domain: token ids drawn uniformly from the compact vocabulary


def noise_stream(d: Domains, n_tokens: int, seed: int) -> np.ndarray:
    """`n_tokens` token ids drawn uniformly over the compact vocabulary (end-of-text excluded): text no model can
    learn beyond its unigram entropy, so its excess loss over a reference is near zero."""
    return np.random.default_rng([seed, 7]).integers(1, d.vocab_size, n_tokens)


def doremi_chunks(d: Domains, name: str, fraction: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """DoReMi's training and held-out chunks of one domain: the chunks of its last sixteenth of documents (at least
    one) are held out; of the others, the chunks of the first `fraction` of documents (at least one) train."""
    ids = d.doc_ids[name]
    n_docs = int(ids.max()) + 1
    cut = n_docs - max(1, n_docs // HELD_OUT_SHARE)
    kept = max(1, round(fraction * cut))
    return np.flatnonzero(ids < kept), np.flatnonzero(ids >= cut)


def doremi_split(d: Domains, p: Any, noise_share: float = 0.0) -> tuple[doremi.DomainBlocks, doremi.DomainBlocks]:
    """Training and held-out blocks per text domain (`doremi_chunks`: the last sixteenth of each domain's documents is
    held out, a `doremi_fractions` share of the rest trains, so that the natural mixture is not uniform); with
    `noise_share` > 0 a noise domain joins the training blocks with that share of all training tokens."""
    train, held = [], []
    for name, fraction in zip(d.names, p.doremi_fractions):
        docs = d.tokens[name]
        tr, ho = doremi_chunks(d, name, fraction)
        train.append(d.stream([docs[i] for i in tr]))
        held.append(d.stream([docs[i] for i in ho]))
    names = list(d.names)
    if noise_share > 0:
        text = sum(x.size for x in train)
        train.append(noise_stream(d, max(p.block_size, round(text * noise_share / (1 - noise_share))), p.seed))
        names.append(NOISE)
    return _blocks(d, train, p.block_size, names), _blocks(d, held, p.block_size, d.names)


def natural_weights(blocks: doremi.DomainBlocks) -> np.ndarray:
    """Each training domain's share of the training tokens: the baseline's and the reference's mixture (the paper's
    Pile baseline is The Pile's own token-based weights)."""
    n = blocks.blocks_per_domain().astype(float)
    return n / n.sum()


def proxy_weights(
    p: Any, cfg: dict, train: doremi.DomainBlocks, reference_mixture: np.ndarray, n_proxies: int
) -> list[dict[str, Any]]:
    """One reference model on `reference_mixture` (seed p.seed), then `n_proxies` Group DRO proxies against it, proxy
    i with initialisation seed p.seed + 1 + i and batch seed p.seed + i; each proxy's averaged weights and its
    weights per step. Cached as one entry by its inputs."""

    def build(path: Path) -> None:
        reference = doremi.tiny_llama(**cfg, seed=p.seed)
        doremi.train_lm(reference, train, reference_mixture, p.proxy_steps, p.batch_size, p.learning_rate, p.seed)
        out = []
        for i in range(n_proxies):
            proxy = doremi.tiny_llama(**cfg, seed=p.seed + 1 + i)
            avg, history = doremi.train_proxy_doremi(
                proxy,
                reference,
                train,
                p.proxy_steps,
                p.batch_size,
                p.learning_rate,
                p.seed + i,
                p.step_size,
                p.smoothing,
            )
            out.append({"learned": avg.tolist(), "trajectory": np.asarray(history).tolist()})
        path.write_text(json.dumps(out))

    key = (
        cfg,
        [b.numpy() for b in train.blocks],
        list(map(float, reference_mixture)),
        n_proxies,
        p.proxy_steps,
        p.batch_size,
        p.learning_rate,
        p.seed,
        p.step_size,
        p.smoothing,
        doremi.LR_SCHEDULE,
        "an absent domain keeps its excess loss",
    )
    return cache.file_entry(
        cache.entry_path("data_selection", "doremi-weights", *key, suffix=".json"), build, cache.read_json
    )[0]


def doremi_runs(d: Domains, p: Any, noise_share: float = 0.0, rounds: int = 1) -> DoremiResult:
    """Reference on the natural mixture and `proxy_seeds` Group DRO proxies against it, then main models on learned
    vs natural weights: DoReMi main model i trains on proxy run i's weights, so the seeds carry the proxy's randomness
    too. With `rounds` > 1, iterated DoReMi: round r's reference trains on round r - 1's weights (one proxy each)."""
    train, held = doremi_split(d, p, noise_share)
    baseline = natural_weights(train)
    cfg = lm_config(p, d.vocab_size)
    first = proxy_weights(p, cfg, train, baseline, p.proxy_seeds)
    proxy_runs = [np.asarray(w["learned"]) for w in first]
    learned = np.mean(proxy_runs, axis=0)
    history = [learned]
    for _ in range(1, rounds):
        history.append(np.asarray(proxy_weights(p, cfg, train, history[-1], 1)[0]["learned"]))
    seeds = range(p.seed + 10, p.seed + 10 + p.doremi_seeds)
    runs = {
        "baseline": [
            train_and_score(
                p, d.vocab_size, train, baseline, held, s, p.doremi_steps, "doremi-baseline", True, p.main_dim
            )
            for s in seeds
        ],
        "DoReMi": [
            train_and_score(
                p,
                d.vocab_size,
                train,
                proxy_runs[i % len(proxy_runs)],
                held,
                s,
                p.doremi_steps,
                "doremi-DoReMi",
                True,
                p.main_dim,
            )
            for i, s in enumerate(seeds)
        ],
    }
    if noise_share == 0:  # a comparator the paper does not have: equal weights on every text domain, same seeds
        uniform = np.full(len(baseline), 1.0 / len(baseline))
        runs["uniform"] = [
            train_and_score(
                p, d.vocab_size, train, uniform, held, s, p.doremi_steps, "doremi-uniform", True, p.main_dim
            )
            for s in seeds
        ]
    counts = [np.full(n, p.block_size - 1, float) for n in held.blocks_per_domain()]
    trajectory = np.asarray(first[0]["trajectory"])
    articles = [block_articles(d, n, doremi_chunks(d, n)[1], p.block_size) for n in d.names]
    return DoremiResult(baseline, learned, trajectory, runs, counts, noise_share, proxy_runs, history, articles)


def judged_share(p: Any) -> float:
    """The noise share the DoReMi rows are decided at: 0 when the sweep has it and its last point carries the noise
    domain (a positive control, `claims.doremi_control`), else the sweep's last point."""
    from .claims import doremi_control

    get = p.get if isinstance(p, dict) else lambda k: getattr(p, k)
    shares = [float(x) for x in get("noise_shares")]
    return 0.0 if doremi_control({"noise_shares": shares}) else shares[-1]


def doremi_sweep(d: Domains, p: Any) -> dict[float, DoremiResult]:
    """One DoReMi run (reference, proxies, main models) per noise share: the domains' heterogeneity swept; the share
    the rows are decided at (`judged_share`) also runs `doremi_rounds` rounds of iterated DoReMi."""
    judged = judged_share(p)
    return {s: doremi_runs(d, p, s, p.doremi_rounds if s == judged else 1) for s in map(float, p.noise_shares)}


def weights_table(d: Domains, res: DoremiResult) -> pd.DataFrame:
    """Per training domain: its natural share, each proxy run's averaged weight (round 1, one reference), their spread,
    and every later round of iterated DoReMi."""
    names = [domain_label(n) for n in d.names] + ([NOISE] if res.noise_share > 0 else [])
    runs = np.asarray(res.proxy_runs)
    rows = []
    for j, name in enumerate(names):
        row = {"domain": name, "natural share": res.baseline[j]}
        row |= {f"proxy run {i + 1}": runs[i, j] for i in range(len(runs))}
        row["spread (max - min)"] = float(np.ptp(runs[:, j]))
        row |= {f"round {r + 1}": w[j] for r, w in enumerate(res.rounds) if r > 0}
        rows.append(row)
    return pd.DataFrame(rows)


def weights_words(table: pd.DataFrame, res: DoremiResult) -> str:
    """How much the learned weights move between proxy runs and between rounds of iterated DoReMi."""
    n = len(res.proxy_runs)
    widest = table.loc[table["spread (max - min)"].idxmax()]
    runs = [c for c in table.columns if c.startswith("proxy run")]
    out = (
        f"Across {n} proxy run{'s' if n > 1 else ''} against one reference, the widest spread of a domain's weight is "
        f"{widest['spread (max - min)']:.3f} ({widest.domain}: {widest[runs].min():.3f} to {widest[runs].max():.3f}); "
        f"DoReMi main model i trains on run i's weights, so the intervals below carry this spread."
        if n > 1
        else "One proxy run: how much its weights would move with another seed is not measured here."
    )
    if len(res.trajectory) and len(res.proxy_runs):  # panel (b): how far the weights swing early on
        early = res.trajectory[: max(1, len(res.trajectory) // 10)]
        step, j = np.unravel_index(int(np.argmax(early)), early.shape)
        out += (
            f" In the figure's panel (b), within the first {len(early)} proxy step{'s' if len(early) > 1 else ''} the first run's largest weight is "
            f"{early[step, j]:.2f} ({table.domain.iloc[j]}, step {step + 1}); averaged over all its steps that domain "
            f"gets {res.proxy_runs[0][j]:.2f}."
        )
    for r, w in enumerate(res.rounds[1:], start=2):
        moved = float(np.abs(w - res.rounds[r - 2]).sum())
        top = table.loc[np.argmax(np.abs(w - res.rounds[r - 2]))]
        out += (
            f" Iterated DoReMi's round {r}, whose reference trains on round {r - 1}'s weights, moves them by "
            f"{moved:.3f} in total (L1), most on {top.domain} ({res.rounds[r - 2][top.name]:.3f} → {w[top.name]:.3f}); "
            "the main models use round 1, as the authors' Pile script runs one round."
        )
    return out


def _mean_and_worst(res: DoremiResult, domains: Sequence[int], seed: int, **kw: Any) -> dict[str, float]:
    """The geometric-mean and worst-domain ratios (`doremi_contrast`) with their intervals, as table columns."""
    out = {}
    for name, worst in (("mean", False), ("worst", True)):
        iv = doremi_contrast(res, domains, seed, worst=worst, **kw)
        out |= {f"{name} ratio": iv.estimate, f"{name} low": iv.low, f"{name} high": iv.high}
    return out


def sweep_table(d: Domains, sweep: dict[float, DoremiResult], seed: int) -> pd.DataFrame:
    """Per noise share: the noise domain's weight under both mixtures and the main models' geometric-mean and
    worst-domain perplexity ratios DoReMi / baseline over the text domains, with their intervals; where the sweep
    has noise share 0, also DoReMi at each share against the baseline on the natural shares *without* the noise
    domain (the control: does DoReMi beat simply leaving the noise out?)."""
    rows = []
    text = range(len(d.names))
    clean = sweep.get(0.0)
    for share, res in sweep.items():
        text_share = {m: float(np.sum(w[: len(d.names)])) for m, w in (("b", res.baseline), ("d", res.learned))}
        row = {
            "noise share": share,
            "noise weight, DoReMi": float(res.learned[-1]) if share > 0 else 0.0,
            # text tokens DoReMi reads per step against its own baseline's (which spends `share` of each step on noise)
            "text tokens, DoReMi / baseline": text_share["d"] / text_share["b"],
            **_mean_and_worst(res, text, seed),
        }
        if clean is not None:  # at share 0 the two baselines are the same models
            vs = doremi_contrast(res, text, seed, base=clean) if share > 0 else None
            row |= {
                "mean ratio vs natural without noise": vs.estimate if vs else math.nan,
                "vs natural low": vs.low if vs else math.nan,
                "vs natural high": vs.high if vs else math.nan,
            }
        rows.append(row)
    return pd.DataFrame(rows)


COMPARATORS = {"baseline": "natural shares (the paper's baseline)", "uniform": "uniform over the text domains"}


def comparators_table(d: Domains, res: DoremiResult, seed: int) -> pd.DataFrame:
    """DoReMi's main models against each mixture trained on the same text with the same seeds and steps: the natural
    shares (the paper's baseline) and, where the run has them, uniform weights (our comparator: DoReMi's weights are
    learned, a uniform mixture is the plain alternative to the chapter's chosen natural shares); geometric-mean and
    worst-domain perplexity ratios with the same interval as the rows."""
    text = range(len(d.names))
    rows = []
    for mixture, label in COMPARATORS.items():
        if mixture not in res.runs:
            continue
        rows.append({"DoReMi against": label, **_mean_and_worst(res, text, seed, against=mixture)})
    return pd.DataFrame(rows)


def comparators_words(table: pd.DataFrame) -> str:
    """DoReMi against each comparator mixture, the sign read from each interval."""
    parts = [
        f"against {r['DoReMi against']} the geometric-mean perplexity ratio is {r['mean ratio']:.3f} "
        f"[{r['mean low']:.3f}, {r['mean high']:.3f}] ({_sign(r['mean low'], r['mean high'])}) and the worst-domain "
        f"ratio {r['worst ratio']:.3f} [{r['worst low']:.3f}, {r['worst high']:.3f}] "
        f"({_sign(r['worst low'], r['worst high'])})"
        for _, r in table.iterrows()
    ]
    return "DoReMi's main models, " + "; ".join(parts) + "."


def _sign(low: float, high: float) -> str:
    """'gain' when an interval of a loss ratio lies below 1, 'loss' above, else 'no clear sign'."""
    return "gain" if high < 1 else "loss" if low > 1 else "no clear sign"


def sweep_words(sweep: pd.DataFrame) -> str:
    """What the noise-share sweep says. With the run without noise in the sweep, the conclusion is DoReMi at each
    noise share against the baseline on the natural shares *without* the noise domain (does DoReMi beat leaving the
    noise out?), with the text tokens DoReMi reads per step against its own baseline's stated: against its own
    baseline a gain can come from reading more text. Without that run, whether the sign changes along the sweep."""
    vs = "mean ratio vs natural without noise"
    has_clean = vs in sweep and bool((sweep["noise share"] == 0).any())

    def tokens(r: pd.Series) -> str:
        x = r.get("text tokens, DoReMi / baseline", math.nan)
        return f", reading {x:.2f}× its own baseline's text tokens per step" if np.isfinite(x) else ""

    parts = [
        (
            f"noise share {r['noise share']:.2f}: DoReMi gives the noise domain {r['noise weight, DoReMi']:.2f}"
            + tokens(r)
            if r["noise share"] > 0
            else "no noise domain"
        )
        + f", mean ratio {r['mean ratio']:.3f} [{r['mean low']:.3f}, {r['mean high']:.3f}]"
        + (
            f" against its own baseline, {r[vs]:.3f} [{r['vs natural low']:.3f}, {r['vs natural high']:.3f}] "
            "against the baseline without the noise domain"
            if r["noise share"] > 0 and np.isfinite(r.get(vs, math.nan))
            else ""
        )
        for _, r in sweep.iterrows()
    ]
    if has_clean:
        clean = sweep[sweep["noise share"] == 0].iloc[0]
        noisy = sweep[(sweep["noise share"] > 0) & np.isfinite(sweep[vs])]
        verdict = f"without a noise domain DoReMi shows {_sign(clean['mean low'], clean['mean high'])} against the " + (
            "natural shares"
        )
        for _, r in noisy.iterrows():
            own = _sign(r["mean low"], r["mean high"])
            verdict += (
                f"; at noise share {r['noise share']:.2f}, against the baseline without the noise domain (what DoReMi "
                f"has to beat to be worth running), it shows {_sign(r['vs natural low'], r['vs natural high'])}"
                + (
                    f" ({own} against its own baseline, which reads "
                    f"{1 / r['text tokens, DoReMi / baseline']:.0%} of DoReMi's text tokens per step)"
                    if "text tokens, DoReMi / baseline" in r
                    else ""
                )
            )
        return "Along the sweep of the noise domain's share: " + "; ".join(parts) + f". So {verdict}."
    sign_at = {f"{r['noise share']:.2f}": _sign(r["mean low"], r["mean high"]) for _, r in sweep.iterrows()}
    signs = set(sign_at.values())
    if {"gain", "loss"} <= signs:
        verdict = "the sign of the gain reverses along the sweep"
    elif len(signs) > 1:
        kind = "gain" if "gain" in signs else "loss"
        at = [share for share, sign in sign_at.items() if sign == kind]
        verdict = (
            f"a clear {kind} appears along the sweep (at noise share {', '.join(at)}) where the other points show no "
            "clear sign; its sign never reverses"
        )
    else:
        verdict = f"the sign does not change along the sweep ({signs.pop()} at every point)"
    return "Along the sweep of the noise domain's share: " + "; ".join(parts) + f". So {verdict}."


def domain_nll(res: DoremiResult, mixture: str, j: int) -> np.ndarray:
    """(seeds, blocks) held-out NLL of domain j under one mixture's main models."""
    return np.asarray([r["nll"][j] for r in res.runs[mixture]])


def doremi_table(d: Domains, res: DoremiResult, seed: int) -> pd.DataFrame:
    """Per domain: weights, perplexity under both mixtures, and the paired ratio DoReMi / baseline with its interval."""
    rows = []
    for j, name in enumerate(d.names):
        base, dore = domain_nll(res, "baseline", j), domain_nll(res, "DoReMi", j)
        ratio = stats.seeds_and_items_perplexity(
            dore, res.counts[j], base, n_resamples=N_BOOT, seed=seed, unit="held-out blocks"
        )
        rows.append(
            {
                "domain": domain_label(name),
                "baseline weight": res.baseline[j],
                "DoReMi weight": res.learned[j],
                "baseline perplexity": float(np.mean(np.exp(base.sum(1) / res.counts[j].sum()))),
                "DoReMi perplexity": float(np.mean(np.exp(dore.sum(1) / res.counts[j].sum()))),
                "ratio": ratio.estimate,
                "ratio low": ratio.low,
                "ratio high": ratio.high,
            }
        )
    return pd.DataFrame(rows)


def _mean_log_ppl(
    res: DoremiResult, mixture: str, domains: Sequence[int], w: Sequence[np.ndarray] | None = None
) -> np.ndarray:
    """(seeds,) mean over `domains` of the log perplexity, with optional per-block multiplicities."""
    out = []
    for j in domains:
        nll = domain_nll(res, mixture, j)
        weights = np.ones(nll.shape[1]) if w is None else w[j]
        out.append(nll @ weights / (res.counts[j] @ weights))
    return np.mean(out, axis=0)


def doremi_contrast(
    res: DoremiResult,
    domains: Sequence[int],
    seed: int,
    worst: bool = False,
    base: DoremiResult | None = None,
    against: str = "baseline",
) -> stats.Interval:
    """Ratio DoReMi / baseline of the mean (geometric) or worst-domain perplexity over `domains`: the interval
    resamples held-out articles within domain, then blocks within them (the same draw for every seed and both
    mixtures), with main-model seeds on top (seed i of each mixture shares its initialisation). `base`: take the
    baseline's main models from another run of the sweep on the same held-out text (the natural mixture without
    the noise domain, at noise share 0); `against`: the mixture compared with (the natural shares' `baseline`, or
    `uniform`)."""
    base = base or res
    labels = pd.factorize(np.concatenate([[f"{j}/{a}" for a in arts] for j, arts in enumerate(res.articles)]))[0]
    strata = np.concatenate([np.full(c.size, j) for j, c in enumerate(res.counts)])
    if labels.size != strata.size:
        raise ValueError("DoremiResult.articles: one label per held-out block of every text domain")
    weights = stats.unit_weights(labels, strata, n_resamples=N_BOOT, seed=seed)
    cuts = np.cumsum([c.size for c in res.counts])[:-1]

    def per_seed(w: Sequence[np.ndarray] | None) -> np.ndarray:
        """(seeds,) log ratio DoReMi / baseline of the aggregated perplexity under block multiplicities w."""
        per = {
            m: np.array([_mean_log_ppl(r, m, [j], w) for j in domains]) for m, r in (("DoReMi", res), (against, base))
        }
        agg = (lambda v: v.max(0)) if worst else (lambda v: v.mean(0))  # over domains, per seed
        return agg(per["DoReMi"]) - agg(per[against])

    draws = np.stack([per_seed(np.split(w, cuts)) for w in weights])
    what = "worst-domain" if worst else "geometric-mean"
    n_blocks = sum(res.counts[j].size for j in domains)
    chosen = np.isin(strata, list(domains))
    iv = stats.clustered_interval(
        per_seed(None),
        draws,
        clusters=labels[chosen],
        strata=strata[chosen],
        unit="articles",
        words=f"{what} perplexity ratio over {n_blocks:,} held-out blocks (articles within domain; a Pile document "
        "is its own)",
    )
    return stats.Interval(math.exp(iv.estimate), math.exp(iv.low), math.exp(iv.high), iv.method)


def doremi_intervals(d: Domains, res: DoremiResult, p: Any) -> tuple[dict[str, stats.Interval | None], pd.DataFrame]:
    """The DoReMi rows' intervals on one run of the sweep (worst, average, down-weighted text domains: None where
    none is down-weighted, speed) and the steps each seed needed."""
    text = range(len(d.names))
    down = [j for j in text if res.learned[j] < res.baseline[j]]
    speed, steps = steps_to_baseline(res, p)
    return {
        "worst": doremi_contrast(res, text, p.seed, worst=True),
        "average": doremi_contrast(res, text, p.seed),
        "downweighted": doremi_contrast(res, down, p.seed) if down else None,
        "speed": speed,
    }, steps


def steps_to_baseline(res: DoremiResult, p: Any) -> tuple[stats.Interval, pd.DataFrame]:
    """Share of the baseline's text tokens the DoReMi model needs to reach the baseline's final mean held-out log
    perplexity, per seed: steps times each mixture's share of text-domain weight (with a noise domain in the pool the
    baseline spends part of every step on it; without one the share of text tokens is the share of steps). Censoring
    is explicit: a seed that never gets there within the budget enters at its share at the last step (a lower bound),
    and the upper end is unbounded as soon as one seed is censored, so a censored run can never make the row hold."""
    rows = []
    text = len(res.counts)  # the text domains come first; a noise domain, if any, is the last weight
    text_share = {m: float(np.sum(w[:text])) for m, w in (("baseline", res.baseline), ("DoReMi", res.learned))}
    for s, (base, dore) in enumerate(zip(res.runs["baseline"], res.runs["DoReMi"])):
        target = float(np.mean(base["eval"][-1]))
        curve = np.asarray(dore["eval"]).mean(1)
        steps = doremi.steps_to_reach(dore["eval_step"], curve, target)
        reached = bool(np.isfinite(steps))
        unit = text_share["DoReMi"] / text_share["baseline"]  # DoReMi's text tokens per step / the baseline's
        rows.append(
            {
                "seed": s,
                "baseline final log ppl": target,
                "steps to reach": steps,
                "share of steps": steps / p.doremi_steps if reached else 1.0,
                "share of text tokens": (steps / p.doremi_steps if reached else 1.0) * unit,
                "reached": reached,
            }
        )
    frame = pd.DataFrame(rows)
    iv = stats.seed_summary(frame["share of text tokens"].to_numpy())
    censored = len(frame) - int(frame.reached.sum())
    n_proxies = max(1, len(res.proxy_runs))
    models = (
        f"{len(frame)} trained main model{'s' if len(frame) > 1 else ''} per mixture, "
        f"{n_proxies} proxy run{'s' if n_proxies > 1 else ''}"
    )
    how = "no interval" if len(frame) == 1 else "t interval over seeds"
    method = (
        f"share of the baseline's text tokens (steps times each mixture's text share); {models}, {how}; {censored} "
        "censored at the budget (known only above the share at the last step)"
    )
    if censored == len(frame):
        at_end = float(frame["share of text tokens"].iloc[0])
        return stats.Interval(at_end, at_end, math.inf, method), frame
    return stats.Interval(iv.estimate, iv.low, math.inf if censored else iv.high, method), frame


# ---------------------------------------------------------------------------------------------------------------
# verdict rows (the claims themselves are in `claims.py`)


def _domain_words(t: pd.DataFrame) -> str:
    """'Reddit 0.34 (×1.02)': each domain's DoReMi weight and perplexity ratio DoReMi / baseline."""
    return ", ".join(f"{r.domain} {r['DoReMi weight']:.2f} (×{r.ratio:.2f})" for _, r in t.iterrows())


def _why_doremi(key: str, table: pd.DataFrame | None, steps: pd.DataFrame | None) -> tuple[tuple[str, str], str]:
    """Cause of a DoReMi row not held, with the published table that measures what the sentence says: the
    reweighting and its per-domain effect (`doremi_domains`), or the steps each seed needed (`steps_to_baseline`).
    The regime is the cause the chapter would name (proxy and main model both tiny, the domains few), but no
    published table sweeps that scale (the noise-share sweep varies heterogeneity), so judge() reads it `unknown`
    and names the sweep that would tell."""
    at_scale = "at this proxy and main-model scale"
    if key == "speed" and steps is not None:
        reached = int(steps["reached"].sum())
        return (
            "regime",
            f"{at_scale}, {reached} of {len(steps)} DoReMi seeds reached the baseline's final mean log perplexity "
            f"within the baseline's steps ({len(steps) - reached} censored at the budget)",
        ), "steps_to_baseline"
    if table is None:
        return unexplained("a sweep of proxy size, steps and number of domains"), ""
    up = table[table["DoReMi weight"] > table["baseline weight"]]
    down = table[table["DoReMi weight"] < table["baseline weight"]]
    if key == "worst":
        base, dore = table.loc[table["baseline perplexity"].idxmax()], table.loc[table["DoReMi perplexity"].idxmax()]
        sentence = (
            f"{at_scale} the worst domain is {base.domain} under the baseline (perplexity "
            f"{base['baseline perplexity']:.1f}) and {dore.domain} under DoReMi ({dore['DoReMi perplexity']:.1f}); "
            f"weights (and perplexity ratios): {_domain_words(table)}"
        )
    elif key == "downweighted":
        sentence = f"{at_scale} the down-weighted domains' weights (and perplexity ratios) are {_domain_words(down)}"
    else:
        sentence = (
            f"{at_scale} the weight moved to {_domain_words(up)}, away from {_domain_words(down)} (weight, "
            "perplexity ratio DoReMi / baseline)"
        )
    return ("regime", sentence), "doremi_domains"


# why a DSIR row is not held, when it is not: no published table varies what would explain it, so the cause is
# unknown and names the ablation that would tell
DSIR_ABLATIONS = {
    "dsir_vs_random": "pretraining a larger model on each selection and fine-tuning it on a labelled target task (the "
    "paper's measure),",
    "dsir_vs_heuristic": "fastText with its autotuning at the paper's pool size in place of the cross-validated "
    "logistic regression",
    "kl_tracks": "the paper's eight method variants (expert selection included) scored by downstream accuracy",
    "resampling_vs_topk": "a sweep of the log weights' spread against the Gumbel noise (weights tempered, or more "
    "pool chunks near top-k's cutoff) at the paper's selected share of the pool",
    "outliers": "Min-K% detection AUC per set beside these weights (the link itself, not only the weights)",
    "outliers_plain": "Min-K% detection AUC per set with the templates stripped",
}

NARROW_BY = {
    "dsir_vs_random": "LM seeds and held-out target text",
    "dsir_vs_heuristic": "LM seeds and held-out target text",
    "kl_tracks": "methods (each mean over its selection draws)",
    "resampling_vs_topk": "LM seeds and held-out target text",
    "outliers": "contaminant sets",
    "outliers_plain": "contaminant sets",
    "worst": "main-model seeds and held-out blocks",
    "average": "main-model seeds and held-out blocks",
    "downweighted": "main-model seeds and held-out blocks",
    "speed": "main-model seeds",
}


def verdict_rows(
    claim_set: dict[str, Claim],
    intervals: dict[str, stats.Interval | None],
    doremi_domains: pd.DataFrame | None = None,
    steps: pd.DataFrame | None = None,
    *,
    without_control: dict[str, stats.Interval | None] | None = None,
    overlaps: dict[str, tuple[float, str]] | None = None,
    per_target: pd.DataFrame | None = None,
    notes: dict[str, str] | None = None,
) -> list[dict]:
    """Judge every claim on its interval (`intervals`: claim key -> interval, None where the row does not apply),
    naming a cause for rows that do not hold and what would narrow the inconclusive ones. A claim with a built-in
    control (the noise domain) is decided on `without_control[key]`, its run without the control (a row whose claim
    is vacuous there, no text domain down-weighted, is left out); `overlaps[key]` is (share of shared selections,
    the table publishing it) for a claim that bounds its arms' overlap; `per_target` (`per_target_ratios`): where the
    targets' ratios lie on opposite sides of 1, a pooled DSIR row says so, in place of how much more data would
    decide it (the pooled ratio averages them); `notes[key]`: a measured sentence appended to the row's cause."""
    out = []
    for key, iv in intervals.items():
        claim = claim_set[key]
        kw: dict[str, Any] = {}
        if claim.overlap_max is not None:
            kw["overlap"] = (overlaps or {})[key]
        test = ""
        if claim.control:
            base = (without_control or {}).get(key)
            if base is None:
                continue  # the claim says nothing at the point without the control
            if iv is None:  # nothing to set aside: decided without the control, and the test says so
                claim, iv, test = replace(claim, control=""), base, f"{base.method}; decided without {claim.control}"
                test += " (with it the claim is vacuous: no text domain down-weighted)"
            else:
                kw["without_control"] = (base.estimate, base)
        if iv is None:
            continue
        if key == "downweighted" and doremi_domains is not None:  # how many domains the claim is about
            n_down = int((doremi_domains["DoReMi weight"] < doremi_domains["baseline weight"]).sum())
            ours = (
                f"{claim.regime.ours}; {n_down} of {len(doremi_domains)} text domains down-weighted (paper: 13 of 22)"
            )
            claim = replace(claim, regime=replace(claim.regime, ours=ours))
        measured_by = ""
        if key in ("worst", "average", "downweighted", "speed"):
            why, measured_by = _why_doremi(key, doremi_domains, steps)
        else:
            why = unexplained(DSIR_ABLATIONS[key])
        row = judge(claim, iv.estimate, iv, test, why=why, measured_by=measured_by, narrow_by=NARROW_BY[key], **kw)
        split = (
            disagreement(per_target, PER_TARGET_KEYS[key]) if per_target is not None and key in PER_TARGET_KEYS else ""
        )
        if split and row["decision"] == "inconclusive":
            row["why"] = f"{split}; pooled, {row['why']}"
        elif split:
            row["why"] = f"{row['why']}; {split}" if row["why"] else split
        if (notes or {}).get(key):
            row["why"] = f"{row['why']}; {notes[key]}" if row["why"] else notes[key]
        out.append(row)
    return out


PER_TARGET_KEYS = {"dsir_vs_random": "random", "dsir_vs_heuristic": "heuristic classification"}


# ---------------------------------------------------------------------------------------------------------------
# page views and glued prose


def selection_view(selection: pd.DataFrame) -> pd.DataFrame:
    """One row per target, size and method (means over the selection draws): chunks, tokens, KL reduction on
    held-out target text, held-out perplexity (of the LM and of the selection's unigram model), and the share of its
    chunks that differ from top-k DSIR's."""
    cols = ["chunks", "tokens", "kl_reduction", "perplexity", "unigram perplexity", "shared with top-k DSIR"]
    view = selection.groupby(["target", "selected", "method"], sort=False)[cols].mean().reset_index()
    view["differs from top-k DSIR"] = 1 - view.pop("shared with top-k DSIR")
    return view.rename(columns={"kl_reduction": "KL reduction"}).round(3)


def weights_summary(weights: pd.DataFrame) -> pd.DataFrame:
    """Mean per-n-gram log weight of each set, with and without its prompt template (one column each)."""
    view = weights.pivot_table(
        index=["regime", "set"], columns="templates", values="log_weight_per_ngram", aggfunc="mean", sort=False
    )
    view.columns = [f"mean log weight, templates {c}" for c in view.columns]
    items = weights[weights.templates == "with"].groupby(["regime", "set"], sort=False).size().rename("items")
    return view.join(items).reset_index().round(3)


def gap_words(gap: stats.Interval, plain: stats.Interval) -> str:
    """What the contamination link says, with and without the prompt templates."""
    few = plain.method.split("; only ")[-1] if "; only " in plain.method else ""
    return (
        f"Outlier sets carry {gap.estimate:+.3f} [{gap.low:+.3f}, {gap.high:+.3f}] nats more log weight per n-gram "
        f"than the in-distribution set with their prompt templates, and {plain.estimate:+.3f} "
        f"[{plain.low:+.3f}, {plain.high:+.3f}] with the templates stripped (sets resampled, then items within "
        f"them{'; only ' + few if few else ''})."
    )


def _ratio(iv: stats.Interval) -> str:
    """'0.91 [0.88, 0.95]'."""
    return f"{iv.estimate:.3f} [{iv.low:.3f}, {iv.high:.3f}]"


def dsir_words(
    selection: pd.DataFrame,
    ranks: pd.DataFrame,
    vs_random: stats.Interval,
    vs_heuristic: stats.Interval,
    vs_topk: stats.Interval,
    vs_oracle: stats.Interval,
    kl: stats.Interval,
    vs_topk_heuristic: stats.Interval | None = None,
) -> str:
    """What the DSIR table and intervals say, every number read from them."""
    draws = selection.seed.nunique()
    settings = selection.groupby(["target", "selected"]).ngroups
    means = selection.groupby("method")[["kl_reduction", "shared with top-k DSIR"]].mean()
    span = _span(ranks)
    random_kl = float(means.loc["random", "kl_reduction"])
    return (
        f"At equal tokens, DSIR's held-out target perplexity is {_ratio(vs_random)} times random selection's and "
        f"{_ratio(vs_heuristic)} times heuristic classification's"
        + (
            f" ({_ratio(vs_topk_heuristic)} times the classifier's own top-k order, without the Pareto noise)"
            if vs_topk_heuristic is not None
            else ""
        )
        + f"; against top-k DSIR (the same weights without the Gumbel noise) it is {_ratio(vs_topk)}, its "
        f"selections differing from top-k's in {1 - means.loc['DSIR', 'shared with top-k DSIR']:.0%} of their chunks "
        f"({gumbel_words(ranks)}); "
        f"against the oracle (chunks of the target domain itself) it is {_ratio(vs_oracle)} (geometric means over "
        f"{settings} target × size setting{'s' if settings > 1 else ''}, {draws} selection draws and LM seeds each). "
        f"The two rankings: the package's 1e-8 floor leaves {span('empty target buckets', '.1%')} of the buckets "
        "empty in the target sample"
        + (
            f", which carry {span('package: share of mean log weight from empty buckets')} of the package's mean log "
            f"weight, and its weight correlates {span('r(package weight, -unseen n-grams)')} with minus the count of "
            f"unseen n-grams ({span('r(smoothed weight, -unseen n-grams)')} with one pseudo-count per bucket, which "
            "selects here)"
            if ranks["empty target buckets"].max() >= 0.005
            else ", so the floor hardly touches the weights here"
        )
        + "; the two rankings' top-k selections share "
        f"{span('top-k shared, package vs smoothed')} of their chunks. Across the {selection.method.nunique()} "
        f"methods' means, KL reduction (on held-out target text) correlates with −log perplexity at r = {_ratio(kl)}. "
        f"Random selection's KL reduction is {random_kl:+.3f}, "
        + (
            "below zero: an effect of the add-one smoothing, which flattens a selection of a few hundred chunks more "
            "than the whole pool, not of the chunks chosen."
            if random_kl < 0
            else "not below zero."
        )
    )


def doremi_words(
    d: Domains,
    res: DoremiResult,
    worst: stats.Interval,
    average: stats.Interval,
    down: stats.Interval | None,
    speed: stats.Interval,
    steps: pd.DataFrame,
) -> str:
    """What the DoReMi weights, perplexities and steps say (the run the rows are decided on, `judged_share`)."""
    names = [domain_label(n) for n in d.names] + ([NOISE] if res.noise_share > 0 else [])
    order = np.argsort(-res.learned)
    weights = ", ".join(f"{names[j]} {res.learned[j]:.2f} (natural {res.baseline[j]:.2f})" for j in order)
    down_words = (
        f"on the text domains it down-weights the ratio is {_ratio(down)}"
        if down is not None
        else "no text domain is down-weighted"
    )
    return (
        f"In the run the rows are decided on (noise share {res.noise_share:.2f}) the proxy's averaged weights are "
        f"{weights}. Against "
        f"the baseline on the natural mixture at the same steps, the main model's worst-domain perplexity ratio over "
        f"the text domains is {_ratio(worst)}, its geometric-mean ratio {_ratio(average)}, and {down_words}. "
        + _speed_words(speed, steps)
    )


def _speed_words(speed: stats.Interval, steps: pd.DataFrame) -> str:
    """How many of the baseline's text tokens the DoReMi model needed; censored seeds said as such."""
    if not steps["reached"].any():
        return (
            "No seed reached the baseline's final mean log perplexity within the baseline's steps: DoReMi needs "
            "more of the baseline's text tokens than it read by then, by how much these runs cannot say (every seed "
            "censored at the budget)."
        )
    high = "unbounded" if not math.isfinite(speed.high) else f"{speed.high:.0%}"
    return (
        f"It reaches the baseline's final mean log perplexity after {speed.estimate:.0%} of the baseline's text "
        f"tokens [{speed.low:.0%}, {high}] (steps times each mixture's share of text; {int(steps.reached.sum())} of "
        f"{len(steps)} seeds got there; a seed that never does is censored: counted at its share at the last step, "
        "and it leaves the interval's upper end unbounded)."
    )
