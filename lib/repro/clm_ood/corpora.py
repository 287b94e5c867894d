"""The chapter's texts: XSUM as the in-domain summarization task, an OOD ladder from near (CNN/DailyMail news) to far
(German and Spanish news), a general-domain background (the C4 stand-in), and the n-gram overlap that orders them.

Local (`smoke`, `default`): BIG-bench task files of the `bigbench` sdist (`make data`). Hub (`paper`): the paper's
sets, `xsum`, `cnn_dailymail`, `reddit_tifu`, `samsum`, with C4 as the background."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .. import data

IN_DOMAIN = "xsum"


@dataclass(frozen=True)
class Doc:
    """One input text and its reference summary ('' where the set has none); `source`: the document it was cut
    from where several items share one (a Wikipedia or NYT article's paragraphs, a dialogue's turns), '' where the
    item is a document of its own."""

    id: str
    text: str
    reference: str = ""
    source: str = ""

    @property
    def unit(self) -> str:
        """The sampling unit the item belongs to: its source document, or itself."""
        return self.source or self.id


# Local OOD sets, nearest first as the paper's ladder orders them (news, encyclopedia, forum, how-to, reviews,
# dialogue, other languages); `reference` says whether the set has reference summaries.
LOCAL_SETS = {
    "cnn_dm": ("CNN/DailyMail", True),
    "nyt": ("NYT", False),
    "new_wiki": ("Wikipedia", False),
    "reddit": ("Reddit", False),
    "wikihow": ("WikiHow", True),
    "amazon_reviews": ("Amazon", False),
    "schema_guided_dialog": ("SGD dialogue", False),
    "topical_chat": ("Topical-Chat", False),
    "mlsum_de": ("MLSUM de", True),
    "mlsum_es": ("MLSUM es", True),
}
HUB_SETS = {
    "cnn_dailymail": ("CNN/DailyMail", True),
    "reddit_tifu": ("Reddit TIFU", True),
    "samsum": ("SAMSum", True),
}
HUB_TEST_SPLIT = {"reddit_tifu": "train"}  # Reddit TIFU has one split
NEAR = {"local": "cnn_dm", "hub": "cnn_dailymail"}
NON_ENGLISH = frozenset({"mlsum_de", "mlsum_es"})  # sets whose references rouge-score cannot read (ASCII only)
# Sets whose items share source documents, and what those documents are: SQuAD-shifts' Wikipedia and NYT paragraphs
# come from 48 and 797 articles; SGD's items are turns of one dialogue (several per dialogue). Every other set's item
# is a document of its own (an article, a conversation, a review: SQuAD-shifts' Amazon "articles" are batches of five
# reviews of different products, its Reddit file one list of separate posts).
CLUSTERED = {
    "new_wiki": "articles",
    "nyt": "articles",
    "schema_guided_dialog": "dialogues",
}  # the paper's near-OOD set for XSUM
# The C4 stand-in: English prose of BIG-bench tasks whose sources no OOD set uses (mystery stories, 19th-century
# novels, causal and moral vignettes, fables, theory-of-mind stories, short narratives, GRE reading passages,
# literary dialogue), never news, encyclopedia, forum, how-to, review or dialogue-corpus text. C4 is web text of every
# kind; what a background needs for RMD is text that is general rather than in-domain, and a background built from
# the OOD test domains themselves would make RMD a detector trained on them.
LOCAL_BACKGROUND = (
    "minute_mysteries_qa",
    "authorship_verification",
    "causal_judgment",
    "understanding_fables",
    "strange_stories",
    "moral_permissibility",
    "abstract_narrative_understanding",
    "gre_reading_comprehension",
    "implicit_relations",
)
BACKGROUND_CHARS = 400  # a background input is prose, not a templated question: at least this many characters
HUB_IDS = {
    "xsum": ("EdinburghNLP/xsum", None, "document", "summary", "id"),
    "cnn_dailymail": ("abisee/cnn_dailymail", "3.0.0", "article", "highlights", "id"),
    "reddit_tifu": ("ctr4si/reddit_tifu", "long", "documents", "tldr", None),
    "samsum": ("Samsung/samsum", None, "dialogue", "summary", "id"),
    "c4": ("allenai/c4", "en", "text", None, "url"),
}


def sets(source: str) -> dict[str, tuple[str, bool]]:
    """The OOD sets of a source: name -> (label, has references)."""
    return dict(LOCAL_SETS if source == "local" else HUB_SETS)


def _clean(text: str) -> str:
    """Whitespace collapsed to single spaces."""
    return re.sub(r"\s+", " ", text).strip()


def _task_examples(entry: str) -> list[dict]:
    """The `examples` of a BIG-bench task.json."""
    return data.bigbench_json(entry)["examples"]


def _xsum_local() -> list[Doc]:
    """GEM's 1,001 XSUM articles and the factuality task's 444 more, deduplicated by article text (GEM's copy has
    no BBC id, only its own running number)."""
    docs = [Doc(e["comment"], _clean(e["input"]), _clean(e["target"])) for e in _task_examples("gem/xsum/task.json")]
    docs += [Doc(r["idx"], _clean(r["source"]), _clean(r["true_cnd"])) for r in data.bigbench_lines(_FACT["xsum"])]
    return _dedupe(docs)


_FACT = {"xsum": "factuality_of_summary/xsum.json", "cnn_dm": "factuality_of_summary/cnn_dm.json"}
_GEM = {
    "wikihow": "gem/wikilingua_en/task.json",
    "schema_guided_dialog": "gem/schema_guided_dialog/task.json",
    "mlsum_de": "gem/mlsum_de/task.json",
    "mlsum_es": "gem/mlsum_es/task.json",
}


def _dedupe(docs: Sequence[Doc]) -> list[Doc]:
    """First occurrence of each distinct text."""
    seen: set[str] = set()
    out = []
    for d in docs:
        if d.text and d.text not in seen:
            seen.add(d.text)
            out.append(d)
    return out


def _topical_chat() -> list[Doc]:
    """One document per Topical-Chat conversation: its longest context (the task repeats each conversation turn by
    turn)."""
    longest: dict[str, str] = {}
    for e in _task_examples("topical_chat/task.json"):
        text = _clean(e["input"])
        if len(text) > len(longest.get(e["comment"], "")):
            longest[e["comment"]] = text
    return [Doc(k, v) for k, v in longest.items()]


_HISTORY = re.compile(r'The conversation so far has been for following: (user: ".*?"\. response: ".*?"\.)')


def _dialogue(text: str) -> str:
    """An SGD item's dialogue, named by its history's first exchange (the file keeps no dialogue id; two dialogues
    that open with the same exchange are taken as one, which only makes the clusters coarser)."""
    m = _HISTORY.search(text)
    return f"sgd-dialogue:{m.group(1) if m else text}"


def _local(name: str) -> list[Doc]:
    """One local set, deduplicated, in file order; parsed once per process while the BIG-bench files stay the same
    (a run reads each set twice, once for its size checks; the tests run a chapter many times in one process)."""
    root = data.bigbench_dir()
    stamps = tuple(sorted((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in root.rglob("*") if f.is_file()))
    return list(_parsed(name, stamps))


@functools.lru_cache(maxsize=32)
def _parsed(name: str, stamps: tuple) -> tuple[Doc, ...]:
    """`_read_local(name)`, kept for the BIG-bench files whose (path, mtime, size) are `stamps`."""
    return tuple(_read_local(name))


def _read_local(name: str) -> list[Doc]:
    """One local set, read from the BIG-bench files."""
    if name == IN_DOMAIN:
        return _xsum_local()
    if name == "cnn_dm":
        return _dedupe(
            [Doc(r["idx"], _clean(r["source"]), _clean(r["true_cnd"])) for r in data.bigbench_lines(_FACT[name])]
        )
    if name in _GEM:
        refs = LOCAL_SETS[name][1]
        return _dedupe(
            [
                Doc(
                    e["comment"],
                    _clean(e["input"]),
                    _clean(e["target"]) if refs else "",
                    _dialogue(_clean(e["input"])) if name == "schema_guided_dialog" else "",
                )
                for e in _task_examples(_GEM[name])
            ]
        )
    if name == "topical_chat":
        return _dedupe(_topical_chat())
    if name in data.SQUAD_DOMAINS:
        articles = data.squad_paragraphs(name)
        paras = [(a if name in CLUSTERED else None, p) for a, article in enumerate(articles) for p in article]
        return [
            Doc(f"{name}-{i}", text, source="" if a is None else f"{name}-article-{a}")
            for i, (a, text) in enumerate(paras)
        ]
    raise ValueError(f"unknown local set {name!r}")


def background_pool() -> dict[str, list[Doc]]:
    """The background's BIG-bench tasks: each task's distinct inputs of at least BACKGROUND_CHARS characters."""
    tasks = data.bigbench_tasks(0)
    missing = [t for t in LOCAL_BACKGROUND if t not in tasks]
    if missing:
        raise ValueError(f"the background's BIG-bench tasks {', '.join(missing)} are not in {data.TASK_INPUTS}")
    return {
        t: _dedupe(
            [
                d
                for i, x in enumerate(tasks[t]["inputs"])
                if len((d := Doc(f"{t}-{i}", _clean(x))).text) >= BACKGROUND_CHARS
            ]
        )
        for t in LOCAL_BACKGROUND
    }


def background(n: int, seed: int) -> list[Doc]:
    """n background inputs drawn round-robin over the background's tasks (each task shuffled with `seed`), so that
    no one source dominates; an error when the tasks hold fewer."""
    pools = [take(docs, len(docs), seed, t)[0] for t, docs in background_pool().items()]
    out: list[Doc] = []
    while len(out) < n and any(pools):
        for pool in pools:
            if pool and len(out) < n:
                out.append(pool.pop(0))
    if len(out) < n:
        raise ValueError(f"n_background: asked for {n} documents, the background's tasks hold {len(out)}")
    return out


def _hub(name: str, split: str, limit: int) -> list[Doc]:
    """The first `limit` rows of a Hub set (C4 streamed), as Docs."""
    from datasets import load_dataset

    repo, config, text_col, ref_col, id_col = HUB_IDS[name]
    if name == "c4":
        rows = load_dataset(repo, config, split="validation", streaming=True)
    else:
        rows = load_dataset(repo, config, split=split)
    out = []
    for i, row in enumerate(rows):
        if len(out) >= limit:
            break
        out.append(
            Doc(
                str(row[id_col]) if id_col else f"{name}-{i}",
                _clean(row[text_col]),
                _clean(row[ref_col]) if ref_col else "",
            )
        )
    return _dedupe(out)


def load(name: str, source: str = "local", split: str = "test", limit: int = 100_000) -> list[Doc]:
    """One set's documents: BIG-bench's copy ("local") or the Hub's ("hub"; `split` and the first `limit` rows)."""
    if source not in ("local", "hub"):
        raise ValueError(f"source must be 'local' or 'hub', got {source!r}")
    return _local(name) if source == "local" else _hub(name, split, limit)


def take(docs: Sequence[Doc], n: int, seed: int, what: str) -> tuple[list[Doc], list[Doc]]:
    """(n documents drawn at random with `seed`, the rest in the same shuffled order); an error names `what` when
    the set is too small."""
    if n > len(docs):
        raise ValueError(f"{what}: asked for {n} documents, the set has {len(docs)}")
    order = np.random.default_rng(seed).permutation(len(docs))
    shuffled = [docs[i] for i in order]
    return shuffled[:n], shuffled[n:]


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters and digits of any script)."""
    return re.findall(r"\w+", text.lower())


def ngrams(texts: Sequence[str], n: int) -> set[tuple[str, ...]]:
    """Every distinct n-gram of words over `texts`."""
    out: set[tuple[str, ...]] = set()
    for t in texts:
        w = words(t)
        out.update(zip(*(w[i:] for i in range(n))))
    return out


def jaccard(a: Sequence[str], b: Sequence[str], n: int = 1) -> float:
    """Jaccard overlap |A ∩ B| / |A ∪ B| of the distinct n-grams of two collections of texts."""
    x, y = ngrams(a, n), ngrams(b, n)
    union = x | y
    return len(x & y) / len(union) if union else float("nan")
