"""Min-K% contamination study: downstream sets in one text format, their member split, and contaminated corpora."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import cache
from ..data import bigbench_json, squad_paragraphs
from ..params import ParameterError
from . import detectors

# Our offline stand-in -> the paper's downstream set it replaces.
STAND_INS = {
    "strategyqa": "BoolQ",
    "social_iqa": "CommonsenseQA",
    "amazon_reviews": "IMDB",
    "truthful_qa": "TruthfulQA",
}
# The paper's sets on the Hub (`paper` profile): name -> (dataset id, config, split).
HUB_SETS = {
    "BoolQ": ("google/boolq", None, "train"),
    "CommonsenseQA": ("tau/commonsense_qa", None, "train"),
    "IMDB": ("stanfordnlp/imdb", None, "train"),
    "TruthfulQA": ("truthfulqa/truthful_qa", "generation", "validation"),
}
HUB_BACKGROUND = ("togethercomputer/RedPajama-Data-1T-Sample", "text")
HUB_NEWS = ("RealTimeData/News_August_2023", "maintext")


def format_yes_no(passage: str, question: str, answer: bool) -> str:
    """BoolQ-style example: passage, question, yes/no answer."""
    question = question.strip().rstrip("?")
    return f"{passage.strip()}\nQuestion: {question}?\nAnswer: {'yes' if answer else 'no'}"


def format_choice(question: str, choices: Sequence[str], answer: str) -> str:
    """CommonsenseQA-style example: question, lettered choices, answer text."""
    letters = " ".join(f"({chr(65 + i)}) {c.strip()}" for i, c in enumerate(choices))
    return f"Question: {question.strip()}\nChoices: {letters}\nAnswer: {answer.strip()}"


def format_qa(question: str, answer: str) -> str:
    """TruthfulQA-style example: question and its best true answer."""
    return f"Q: {question.strip()}\nA: {answer.strip()}"


def trim_words(text: str, max_words: int | None) -> str:
    """Whitespace-normalized text cut to whole sentences within `max_words` (hard cut if one sentence is longer)."""
    text = re.sub(r"\s+", " ", re.sub(r"<br\s*/?>", " ", text)).strip()
    if max_words is None or len(text.split()) <= max_words:
        return text
    kept: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        if kept and len(" ".join([*kept, sentence]).split()) > max_words:
            break
        kept.append(sentence)
    return " ".join(" ".join(kept).split()[:max_words])


def format_review(text: str, max_words: int | None = None) -> str:
    """IMDB-style example: one review, cut to whole sentences within `max_words` when given."""
    return f"Review: {trim_words(text, max_words)}"


def _best(scores: dict[str, float]) -> str:
    """The choice with the highest target score."""
    return max(scores, key=scores.get)


def squad_contexts(name: str) -> list[list[str]]:
    """Paragraphs of one SQuAD-shifts domain (BIG-bench copy), grouped by article, duplicates dropped."""
    return squad_paragraphs(name)


def local_set(name: str, review_words: int = 60) -> list[str]:
    """One offline downstream set (BIG-bench copy), every item in its paper-style text format."""
    if name == "strategyqa":
        out = []
        for e in bigbench_json("strategyqa")["examples"]:
            answer, _, passage = e["target"].partition(".")
            out.append(format_yes_no(passage, e["input"], answer.strip().lower() == "yes"))
        return out
    if name == "social_iqa":
        return [
            format_choice(e["input"], list(e["target_scores"]), _best(e["target_scores"]))
            for e in bigbench_json("social_iqa")["examples"]
        ]
    if name == "truthful_qa":
        return [
            format_qa(e["input"], _best(e["target_scores"]))
            for e in bigbench_json("truthful_qa/task_mc.json")["examples"]
        ]
    if name == "amazon_reviews":
        return [format_review(p, review_words) for article in squad_contexts("amazon_reviews") for p in article]
    raise ValueError(f"unknown downstream set {name!r}; choose from {sorted(STAND_INS)}")


def hub_set(name: str, review_words: int | None = None) -> list[str]:
    """One of the paper's downstream sets from the Hugging Face Hub, in the same formats."""
    from datasets import load_dataset

    if name not in HUB_SETS:
        raise ValueError(f"unknown paper set {name!r}; choose from {sorted(HUB_SETS)}")
    repo, config, split = HUB_SETS[name]
    rows = load_dataset(repo, config, split=split)
    formatters: dict[str, Callable[[dict], str]] = {
        "BoolQ": lambda r: format_yes_no(r["passage"], r["question"], r["answer"]),
        "CommonsenseQA": lambda r: format_choice(
            r["question"], r["choices"]["text"], r["choices"]["text"][r["choices"]["label"].index(r["answerKey"])]
        ),
        "IMDB": lambda r: format_review(r["text"], review_words),
        "TruthfulQA": lambda r: format_qa(r["question"], r["best_answer"]),
    }
    return [formatters[name](r) for r in rows]


def hub_texts(repo: str, field: str, n: int, seed: int = 0) -> list[str]:
    """`n` shuffled non-empty texts of one Hub dataset column (streamed)."""
    from datasets import load_dataset

    stream = load_dataset(repo, split="train", streaming=True).shuffle(seed=seed, buffer_size=10_000)
    out = []
    for row in stream:
        if text := (row.get(field) or "").strip():
            out.append(text)
        if len(out) >= n:
            break
    return out


@dataclass
class MemberSplit:
    """Members (inserted into the corpus) and non-members (held out) of one downstream set."""

    name: str
    members: list[str]
    nonmembers: list[str]

    @property
    def texts(self) -> list[str]:
        """Members then non-members."""
        return self.members + self.nonmembers

    @property
    def labels(self) -> np.ndarray:
        """1 for members, 0 for non-members, aligned with `texts`."""
        return np.r_[np.ones(len(self.members), int), np.zeros(len(self.nonmembers), int)]


def split_members(
    name: str, texts: Sequence[str], n: int, seed: int, param: str = "n_members", n_out: int | None = None
) -> MemberSplit:
    """Draw distinct texts at random: the first n become members, up to `n_out` (default n) of the rest non-members.

    A set with fewer than 2n distinct items is a ParameterError on `param`, the parameter that asked for n; a set with
    at least 2n but fewer than n + n_out keeps all its remaining items as non-members."""
    unique = list(dict.fromkeys(texts))
    if len(unique) < 2 * n:
        raise ParameterError(
            f"parameter {param!r}: {name} has {len(unique)} distinct items, fewer than 2 x {n} members; lower {param}"
        )
    n_out = n if n_out is None else n_out
    idx = np.random.default_rng(seed).permutation(len(unique))[: n + n_out]
    chosen = [unique[i] for i in idx]
    return MemberSplit(name, chosen[:n], chosen[n:])


def take_tokens(
    docs: Sequence[str], n_tokens: int, count: Callable[[str], int], param: str | None = None, pool: str = "the pool"
) -> list[str]:
    """The leading documents of `docs` whose token counts add up to at least `n_tokens` (all if too few).

    Given `param`, the parameter that asked for `n_tokens`, a pool with fewer tokens is a one-line ParameterError
    instead, so that two sizes beyond the pool never silently become the same corpus."""
    out, total = [], 0
    for d in docs:
        if total >= n_tokens:
            break
        out.append(d)
        total += count(d)
    if param is not None and total < n_tokens:
        raise ParameterError(
            f"parameter {param!r}: {n_tokens:,} tokens requested, but {pool} has only {total:,} "
            f"tokens ({len(out):,} documents); lower {param}"
        )
    return out


def fixed_copies(n: int, counts: Sequence[int], seed: int) -> np.ndarray:
    """Occurrences per contaminant: the `counts` in turn (as equal shares of the n members as n allows), assigned to
    the members in an order of `seed`."""
    return np.resize(np.asarray(counts, dtype=int), n)[np.random.default_rng(seed).permutation(n)]


def insert_blocks(background: Sequence[str], blocks: Sequence[str], seed: int | Sequence[int]) -> list[str]:
    """Background documents with each block inserted, as one contiguous document, at a random boundary."""
    rng = np.random.default_rng(seed)
    slots = rng.integers(0, len(background) + 1, size=len(blocks))
    out: list[str] = []
    order = np.argsort(slots, kind="stable")
    j = 0
    for i in range(len(background) + 1):
        while j < len(order) and slots[order[j]] == i:
            out.append(blocks[order[j]])
            j += 1
        if i < len(background):
            out.append(background[i])
    return out


def score_table(
    model: Any,
    tokenizer: Any,
    texts: Sequence[str],
    ks: Sequence[float],
    plus: bool = True,
    batch_size: int = 16,
    max_length: int = 256,
    desc: str = "scoring",
    cuts: Sequence[int] = (),
    freq: np.ndarray | None = None,
) -> pd.DataFrame:
    """Detector statistics (detectors.TokenScores.table) of the distinct `texts`, indexed by text (so experiments can
    share reference scores); with reference token frequencies `freq`, also DC-PDD's score ('dcpdd')."""
    unique = list(dict.fromkeys(texts))
    scores = token_scores(model, tokenizer, unique, plus, batch_size, max_length, desc)
    table = scores.table(ks, cuts)
    if freq is not None:
        ids = tokenizer(unique, truncation=True, max_length=max_length)["input_ids"]
        table["dcpdd"] = detectors.dc_pdd(scores.lp, ids, freq)
    table.index = pd.Index(unique, name="text")
    return table


SCORING = 1  # raise when detectors.token_scores changes what it computes: it is part of the cached entries' key


def token_scores(
    model: Any, tokenizer: Any, texts: Sequence[str], plus: bool, batch_size: int, max_length: int, desc: str
) -> detectors.TokenScores:
    """detectors.token_scores of `texts`, kept in the data folder for a model with a cache identity (a cached
    checkpoint, the local base model): a run that changes only how the scores are read (ks, the detectors, the
    tables) does not score again. Keyed by the model, the tokenizer, the texts and every scoring argument."""

    def build() -> dict[str, np.ndarray]:
        return detectors.token_scores(model, tokenizer, texts, plus, batch_size, max_length, desc).arrays()

    parts = (tokenizer.name_or_path, len(tokenizer), list(texts), plus, batch_size, max_length, SCORING)
    arrays = cache.model_arrays(model, "mink", "tokens", build, *parts)
    return detectors.TokenScores.from_arrays(arrays)


def score_splits(
    model: Any,
    tokenizer: Any,
    splits: Sequence[MemberSplit],
    ks: Sequence[float],
    *,
    refs: Mapping[str, pd.DataFrame] | None = None,
    lowercase: bool = False,
    neighbor_loss: Mapping[str, float] | None = None,
    plus: bool = True,
    batch_size: int = 16,
    max_length: int = 256,
    cuts: Sequence[int] = (),
    freq: np.ndarray | None = None,
) -> dict[str, dict[str, np.ndarray]]:
    """Every detector's per-text score (aligned with split.texts) for each split, keyed by split name then detector
    (DC-PDD with reference token frequencies `freq`); for each length c in `cuts`, PPL and Min-K% of the split's texts
    cut to their first c tokens under cut_name(split, c)."""
    texts = [t for s in splits for t in s.texts]
    target = score_table(model, tokenizer, texts, ks, plus, batch_size, max_length, "scoring target", cuts, freq)
    lower = (
        score_table(model, tokenizer, [t.lower() for t in texts], ks, False, batch_size, max_length, "lowercase")
        if lowercase
        else None
    )
    out = {}
    for s in splits:
        lower_s = lower.loc[[t.lower() for t in s.texts]] if lower is not None else None
        refs_s = {name: ref.loc[s.texts] for name, ref in (refs or {}).items()}
        neigh = np.array([neighbor_loss[t] for t in s.texts]) if neighbor_loss else None
        out[s.name] = detectors.detector_scores(target.loc[s.texts], s.texts, ks, lower_s, refs_s, neigh)
        for c in cuts:
            out[cut_name(s.name, c)] = detectors.cut_scores(target.loc[s.texts], ks, c)
    return out


def cut_name(split: str, tokens: int) -> str:
    """Where score_splits keeps a split's scores with its texts cut to their first `tokens` tokens."""
    return f"{split} @{tokens} tokens"


def detect(
    model: Any, tokenizer: Any, splits: Sequence[MemberSplit], ks: Sequence[float], **options: Any
) -> pd.DataFrame:
    """AUC and TPR@5%FPR of every detector on each member split, one row per (dataset, method, k)."""
    scored = score_splits(model, tokenizer, splits, ks, **options)
    return pd.concat(
        [
            detectors.evaluate(scored[s.name], s.labels).assign(
                dataset=s.name, members=len(s.members), nonmembers=len(s.nonmembers)
            )
            for s in splits
        ],
        ignore_index=True,
    )


def news_pools(articles: Sequence[Sequence[str]], n_members: int, seed: int) -> tuple[MemberSplit, list[str]]:
    """In-distribution control: members/non-members from one half of the articles, background paragraphs from the rest."""
    order = np.random.default_rng(seed).permutation(len(articles))
    half = len(order) // 2
    held = [p for i in order[:half] for p in articles[i]]
    background = [p for i in order[half:] for p in articles[i]]
    return split_members("news", held, n_members, seed, param="indist_members"), background


# The paper's Section 6 numbers (Shi et al. 2024, Tables 3, 7 and 4), for side-by-side tables.
PAPER_SETS = ("BoolQ", "CommonsenseQA", "IMDB", "TruthfulQA")
SHORT = {"CommonsenseQA": "CSQA"}  # short names of the paper's sets (column headers, the register's paper column)
PAPER_AUC = {  # Table 3
    "Neighbor": (0.68, 0.56, 0.80, 0.59),
    "Zlib": (0.76, 0.63, 0.71, 0.63),
    "Lowercase": (0.74, 0.61, 0.79, 0.56),
    "PPL": (0.89, 0.78, 0.97, 0.71),
    "Min-K%": (0.91, 0.80, 0.98, 0.74),
}
PAPER_TPR = {  # Table 7, TPR at 5 % FPR as a fraction
    "Neighbor": (0.19, 0.07, 0.41, 0.13),
    "PPL": (0.52, 0.24, 0.74, 0.17),
    "Zlib": (0.18, 0.09, 0.19, 0.07),
    "Lowercase": (0.24, 0.03, 0.26, 0.14),
    "Min-K%": (0.55, 0.23, 0.83, 0.21),
}
PAPER_LR = {
    "BoolQ": (0.64, 0.91),
    "CommonsenseQA": (0.59, 0.80),
    "IMDB": (0.76, 0.98),
    "TruthfulQA": (0.56, 0.74),
}  # Table 4
PAPER_TOKENS = 27_000_000  # Section 6: the contaminated continued-pretraining corpus (RedPajama sample) ...
PAPER_CONTAMINATION = 0.001  # ... of which 0.1 % come from the downstream sets
PAPER_MEMBERS = 200  # inserted examples per set (and as many held-out non-members)
# Fig. 5a (read off the figure): Min-K% AUC of outlier contaminants at the smallest (0.17M-token: the paper's point
# our main corpus is matched to, under an item length the paper does not state; experiment.share_words gives it)
# and the largest (26M-token) corpus
PAPER_SIZES = [170_000, 270_000, 2_600_000, 26_000_000]
PAPER_SMALLEST = {"BoolQ": 0.75, "CommonsenseQA": 0.65, "IMDB": 0.78, "TruthfulQA": 0.62}
PAPER_LARGEST = {"BoolQ": 0.90, "IMDB": 0.98}
# Fig. 5a at 0.27M tokens (matched to our second outlier size), as issue 25 read them off the figure. The reference notes
# confirm only BoolQ and IMDB at 0.17M and 26M; CSQA and TruthfulQA at 0.17M and every 0.27M value rest on the
# issue's reading (the figure is not available here). With the 0.17M values: the paper's pair of sizes whose
# contamination shares ours match
PAPER_SECOND = {"BoolQ": 0.80, "CommonsenseQA": 0.72, "IMDB": 0.90, "TruthfulQA": 0.70}
# Fig. 5a at 2.6M and at its largest size as issue 52's review read them (the largest agrees with the reference
# notes for BoolQ and IMDB; CSQA and TruthfulQA there, and every 2.6M value, rest on that reading). With the two
# smaller sizes: the paper's whole curve, mean over the sets, of which the size row's statistic is the slope
PAPER_THIRD = {"BoolQ": 0.85, "CommonsenseQA": 0.80, "IMDB": 0.95, "TruthfulQA": 0.75}
PAPER_CURVE = {  # Fig. 5a: corpus size as the paper labels it -> Min-K% AUC per set
    size: values
    for size, values in zip(
        PAPER_SIZES,
        (PAPER_SMALLEST, PAPER_SECOND, PAPER_THIRD, {**PAPER_LARGEST, "CommonsenseQA": 0.82, "TruthfulQA": 0.73}),
    )
}


def paper_size_slope() -> float:
    """Fig. 5a's Min-K% AUC per tenfold corpus size: the least-squares slope of the mean over the sets against
    log10 of the paper's four sizes."""
    from ..stats import log_slope_weights

    means = [float(np.mean(list(v.values()))) for v in PAPER_CURVE.values()]
    return float(log_slope_weights(list(PAPER_CURVE)) @ np.array(means))


# Appendix A, Table 8: accuracy after continued pretraining at learning rates 1e-5 and 1e-4, on the contaminated
# items (members) and on clean held-out items of the same set (non-members), as issue 52's review read the appendix
# (the book's reference notes and seed text do not hold Table 8). Per set, (at 1e-5, at 1e-4) for each class; the
# review gives the two sets this chapter answers and the table's average column, whose 0.51 and 0.55 at 1e-5 are not
# the mean of these two sets: it averages more sets than BoolQ and CSQA.
PAPER_RATES = ("1e-5", "1e-4")
PAPER_ACCURACY = {
    "BoolQ": {"clean": (0.68, 0.69), "contaminated": (0.71, 0.81)},
    "CommonsenseQA": {"clean": (0.47, 0.48), "contaminated": (0.49, 0.60)},
}
PAPER_ACCURACY_AVERAGE = {"clean": (0.51, 0.53), "contaminated": (0.55, 0.64)}  # Table 8's average column
PAPER_INDIST_SIZES = [770_000, 3_900_000, 7_600_000]  # Fig. 5b: 1k / 5k / 10k News August 2023 articles
PAPER_INDIST_AUC = (0.64, 0.58, 0.52)  # Fig. 5b, read off the figure


def paper_lead_change(accuracy: dict[str, tuple[float, float]]) -> float:
    """Table 8's claim as one number for one set (or the average column): the contaminated items' accuracy lead over
    the clean ones at 1e-4 minus at 1e-5. It is the interaction cont_hi - clean_hi - cont_lo + clean_lo, so it is the
    same if the review's pairs are read transposed (each pair both classes at one rate, not one class at both)."""
    (clean_lo, clean_hi), (cont_lo, cont_hi) = accuracy["clean"], accuracy["contaminated"]
    return (cont_hi - clean_hi) - (cont_lo - clean_lo)


def paper_name(name: str) -> str:
    """The paper's set a dataset stands for (its own name at `paper`)."""
    return STAND_INS.get(name, name)
