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
# # Choosing pretraining data: DSIR importance resampling and a DoReMi miniature
#
# Two papers ask which text a language model should be trained on. **DSIR** (Xie, Santurkar,
# Ma, Liang, NeurIPS 2023) selects documents from a large raw pool so that the selection looks
# like a small target sample: each document is weighted by how much likelier its hashed
# unigrams and bigrams are under the target's distribution than under the pool's, and
# documents are resampled by those weights. The paper claims this beats random selection and
# GPT-3's heuristic quality classifier, and that a cheap proxy, the *KL reduction* between
# n-gram distributions, tracks how good the selected data is downstream.
#
# **DoReMi** (Xie et al., NeurIPS 2023) chooses mixture weights over whole domains. A small
# *proxy* model is trained with Group DRO against a *reference* model: domains on which the
# proxy's loss exceeds the reference's get more weight. The averaged weights then train the
# real model, which the paper finds better on every domain, including those it down-weights,
# and 2.6 times faster to reach the baseline's perplexity.
#
# This chapter runs both at miniature scale on four text domains, and uses DSIR's weights to
# measure the "outlierness" the Min-K% chapter invokes for its contaminants.

# %% tags=["parameters"]
profile = "default"  # smoke | default | paper: a named set of the values below
seed = None  # every random draw derives from it
source = None  # local: squad_shifts domains offline / hub: The Pile's domains
domains = None  # text domains
docs_per_domain = None  # documents read per domain
targets = None  # DSIR target domains
target_docs = None  # target documents DSIR fits its target distribution on
eval_docs = None  # held-out target documents scored by every selection's LM
select_sizes = None  # documents selected by each method
min_length = None  # fewest tokens of a selectable document (the package's filter)
dsir_seeds = None  # LM seeds per DSIR selection
doremi_seeds = None  # main-model seeds per DoReMi mixture
vocab_size = None  # most frequent token ids kept; the rest share one unknown id
lm_dim = None  # width of the tiny LLaMA models
lm_layers = None  # decoder layers of the tiny LLaMA models
block_size = None  # tokens per training sequence
batch_size = None  # sequences per optimizer step
learning_rate = None  # AdamW learning rate (constant)
dsir_steps = None  # optimizer steps of each DSIR selection's LM
doremi_steps = None  # optimizer steps of the reference, proxy and main models
eval_every = None  # steps between held-out evaluations of the main models
step_size = None  # DoReMi's exponentiated-gradient step size
smoothing = None  # DoReMi's smoothing towards uniform weights

# %%
import matplotlib.pyplot as plt

import repro
from repro import page, verdict
from repro.data_selection import experiment as ex
from repro.data_selection import figures
from repro.data_selection.claims import claims
from repro.results import publish

P = repro.start(globals(), checks=ex.CHECKS, **ex.SPEC)

# %% [markdown]
# ## What we test
#
# Each rule is fixed here, before any selection is made or any model is trained. DSIR's paper measures
# the quality of selected data by downstream accuracy after pretraining on it; here it is the held-out
# target perplexity of a tiny language model trained on the selection, an analogue, and every rule is
# written as a loss ratio (perplexity here, error rate on the paper's own numbers). Each claim names the
# regime it is tested in: the pool, model and measure for DSIR, the proxy and main-model scale for DoReMi.

# %%
CLAIMS = claims(P)
verdict.plan(list(CLAIMS.values()))

# %% [markdown]
# ## 1. The domains
#
# At `default` the domains are the four text sources of SQuAD-shifts (BIG-bench copy):
# paragraphs from new Wikipedia articles, New York Times articles, Reddit posts and Amazon
# product reviews. All text is tokenized with SmolLM2's tokenizer, and the `vocab_size` most
# frequent ids of the corpus keep their own id while the rest share one unknown id, so that the
# tiny models do not spend their compute on a 49k-token output layer. Domain sizes are counted in
# tokens.

# %%
D = ex.load_domains(P)
publish("domains", ex.domains_table(D))

# %% [markdown]
# ## 2. DSIR against random selection and heuristic classification
#
# For each target domain, a sample of `target_docs` documents is the target; `eval_docs` other
# documents of that domain are held out; everything else, the rest of the target domain
# included, is the raw pool. Four methods each pick `select_sizes` documents from the pool:
#
# - **random**;
# - **heuristic classification** as GPT-3 did it: a logistic classifier on hashed unigrams and
#   bigrams (target vs pool, balanced), keeping a document when a Pareto(9) draw exceeds one
#   minus its target probability;
# - **DSIR**: the authors' `data-selection` package's hashed n-gram features (10,000 buckets),
#   importance log-weights, and Gumbel top-k resampling without replacement;
# - **top-k (no noise)**: the largest weights, the paper's ablation.
#
# A tiny LLaMA is trained from scratch on each selection for the same number of tokens, and
# scored on the held-out target documents. The table gives each selection's share of
# target-domain documents, its KL reduction, and the held-out perplexity (mean of the seeds).

# %%
selection, nll, counts = ex.dsir_runs(D, P)
publish("selection", selection, view=ex.selection_view(selection))
figures.selection(selection)
plt.show()

# %%
vs_random = ex.method_ratio(nll, counts, "DSIR", "random", P.targets, P.select_sizes, P.seed)
vs_heuristic = ex.method_ratio(nll, counts, "DSIR", "heuristic classification", P.targets, P.select_sizes, P.seed)
vs_topk = ex.method_ratio(nll, counts, "DSIR", "top-k (no noise)", P.targets, P.select_sizes, P.seed)
kl = ex.kl_quality_correlation(selection, P.seed)
page.say(ex.dsir_words(selection, vs_random, vs_heuristic, vs_topk, kl))

# %% [markdown]
# ## 3. How much of an outlier is a contaminant?
#
# The Min-K% paper explains its Figure 5 by "outlierness": benchmark items inserted into web
# text stand out and are remembered, news inserted into news blends in. DSIR's weight measures
# exactly that: how much likelier an item's n-grams are under its own group's distribution than
# under the background it was inserted into. We score the Min-K% chapter's items in both
# regimes, each against the other half of its group (cross-fitting), per n-gram.

# %%
weights = ex.contamination_weights(P, P.seed)
publish("contamination_weights", weights, show=False)
publish("contamination_summary", ex.weights_summary(weights))
figures.contamination(weights)
plt.show()
gap = ex.weight_gap(weights, P.seed)

# %% [markdown]
# ## 4. DoReMi in miniature
#
# A reference model is trained on the uniform mixture of the domains. A proxy of the same size
# is then trained with Group DRO: at every step each domain's weight is multiplied by the
# exponential of its clipped excess loss (proxy minus reference, per token), with step size
# `step_size` = 1 and smoothing `smoothing` = 10⁻³ towards uniform, as in the paper. The weights
# averaged over the proxy's run train the main models; the baseline main models train on the
# uniform mixture for the same number of steps and tokens.

# %%
R = ex.doremi_runs(D, P)
per_domain = publish("doremi_domains", ex.doremi_table(D, R, P.seed))
figures.doremi(D, R)
plt.show()

# %%
worst = ex.doremi_contrast(R, range(len(D.names)), P.seed, worst=True)
average = ex.doremi_contrast(R, range(len(D.names)), P.seed)
down_idx = [j for j in range(len(D.names)) if R.learned[j] < R.baseline[j]]
down = ex.doremi_contrast(R, down_idx, P.seed) if down_idx else None
speed, steps = ex.steps_to_baseline(R, P)
publish("steps_to_baseline", steps)
page.say(ex.doremi_words(D, R, worst, average, down, speed, steps))

# %% [markdown]
# ## What differs from the papers
#
# - **Scale.** Tiny LLaMA models (`lm_dim` wide, `lm_layers` layers) trained from scratch for a
#   few hundred steps on a few thousand documents, against DSIR's continued pretraining of
#   RoBERTa and DoReMi's 280M proxy and 8B main model on The Pile.
# - **Data.** Four SQuAD-shifts domains instead of The Pile's 22; DSIR's targets are two of
#   these domains instead of the paper's eight downstream datasets, and quality is measured as
#   held-out target perplexity, not fine-tuned downstream accuracy. No downstream classifier is
#   trained (the budget goes to seeds).
# - **DSIR.** The package's features, weights and minimum-length filter (`min_length`, applied to
#   every method alike); the selection runs in memory, because the package reads and writes its
#   own jsonl files. KL reduction is measured on add-one-smoothed distributions: a selection of a
#   few hundred documents leaves many of the 10,000 buckets empty, which the package's 10⁻⁸
#   floor would turn into a huge divergence. The paper does not say how it smooths.
# - **Heuristic classification.** scikit-learn's hashed n-gram logistic regression in place of
#   fastText.
# - **DoReMi.** The paper's update, step size and smoothing; a domain absent from a batch gets a
#   zero excess loss (the authors' code keeps its previous one); no learning-rate schedule. The
#   baseline and the reference train on uniform weights (the paper's Pile baseline uses The Pile's
#   default weights; its GLaM baseline is uniform), and proxy, reference and main models have the
#   same tiny size.
#
# ## Verdict

# %%
intervals = {
    "dsir_vs_random": vs_random,
    "dsir_vs_heuristic": vs_heuristic,
    "kl_tracks": kl,
    "resampling_vs_topk": vs_topk,
    "outliers": gap,
    "worst": worst,
    "average": average,
    "downweighted": down,
    "speed": speed,
}
verdict.conclude(ex.verdict_rows(CLAIMS, intervals, per_domain, steps))
