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
# # Confidentially Redacted Training: canaries, membership inference and amplification
#
# Zhao, Li and Wang (NAACL 2022) train a language model on dialogues that hold secrets. A
# screening policy π redacts what it recognizes, but it misses a fraction γ of the secrets.
# *Confidentially Redacted Training* (CRT) makes the misses harmless: deduplicate the
# sentences, redact them with π, put every sentence that still carries a `<MASK>` (or that a
# conservative policy π_c flags) into a private set D_pri, and train with plain SGD on the
# public rest and with DP-SGD on D_pri. The paper's claims are that CRT's canaries and
# members stay unexposed at every γ while redaction alone and Selective DP leak as soon as
# γ > 0, and that CRT's perplexity stays close to the non-private model's.
#
# This chapter rebuilds the simulated CustomerSim data, the pipeline, five trainers on two
# small models trained from scratch (an LSTM and a GPT-2), fine-tunes of a pretrained
# SmolLM2-135M, the exact canary exposure over all $10^6$ candidates, and the paper's Bayesian
# confidentiality amplification. Every attack is judged against a null: what the same
# attack scores where there is nothing to find.

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
seed = None  # data seed; the i-th model of a run uses seed + i
n_seeds = None  # models trained per (model, trainer, γ)
n_dialogues = None  # training dialogues of CustomerSim
n_test = None  # test dialogues (perplexity)
n_val = None  # validation dialogues (choose the DP learning rates)
canary_copies = None  # insertions of each of the 10 canaries
gammas = None  # false-negative rates of π for the LSTM
gpt_gammas = None  # the γ values GPT-2 is trained at (a subset of gammas)
emb = None  # LSTM embedding size
hidden = None  # LSTM hidden size
epochs = None  # LSTM epochs of non-private, mask and S-DP
crt_epochs = None  # CRT-LSTM and DPSGD-LSTM epochs (the paper doubles CRT's)
crt_batch = None  # CRT-LSTM public batch size
lr = None  # SGD learning rate of public / non-private LSTM steps
dp_lrs = None  # LSTM DP-SGD learning rates tried, one chosen per trainer
gpt_embd = None  # width of the GPT-2 trained from scratch
gpt_layers = None  # its layers
gpt_epochs = None  # epochs of every GPT-2 trainer
gpt_lr = None  # Adam learning rate of public / non-private GPT-2 steps
gpt_dp_lrs = None  # GPT-2 DP-SGD Adam learning rates tried, one chosen per trainer
max_doublings = None  # doublings of a DP trainer's epochs at most, until it converges
target_epsilon = None  # ε of every DP-SGD run, at δ 8e-5
n_mia = None  # member / look-alike pairs of the MIA
n_groups = None  # groups of 20 per side in the group MIA
n_null = None  # draws of every attack's null distribution
arm_source = None  # pretrained arm: packaged SmolLM2 (local) or the Hub
arm_dialogues = None  # training dialogues of the pretrained arm
arm_epochs = None  # epochs of each pretrained-arm fine-tune
arm_test = None  # test sentences scored by the pretrained arm
gpt_name = None  # Hub id of the pretrained GPT-2 (paper profile only)

# %%
import repro
from repro.crt import experiment as ex

P = repro.start(globals(), checks=[ex.consistent], **ex.SPEC)

# %% [markdown]
# `None` in the parameters cell means "the profile's value". The `default` profile is a
# reduced version of the paper's setting that runs offline on two CPU cores: 150 dialogues
# instead of 10k, an LSTM of width 64 instead of 200, a two-layer GPT-2 of width 64 trained
# from scratch instead of the pretrained distilgpt2, and three seeds of every model at γ = 0 and
# at Fig. 2's γ = 0.1 (the other values of γ take one seed). The
# pretrained question is taken up by a separate arm that fine-tunes SmolLM2-135M (section 6).
# The `paper` profile fine-tunes distilgpt2 from the Hub; `smoke` only checks the plumbing.

# %%
import matplotlib.pyplot as plt

from repro import page, verdict
from repro.crt import arm, figures, runs
from repro.crt.claims import claims
from repro.results import pivot_view, publish

# %% [markdown]
# ## What we test
#
# Each claim below carries its rule, fixed before any model is trained, and its regime: the
# corpus, model and training it depends on, the paper's and ours. The paper's Figs. 2–5 are
# plots, and it gives a number only for Fig. 6's example. It runs S-DP on the LSTM alone,
# and so do we. The positive controls (the plain non-private model memorizes its canaries,
# and the non-private model's membership attacks detect it) are checks of our own, and so are
# the two rows of our paired membership statistic (section 4) beside the paper's attack. Attack
# claims are judged against a null: what the same attack scores where there is nothing to
# find. For exposure, the null is the maximum exposure of 10 *fake* canaries, random
# candidates the model never saw, ranked among the same $10^6$ scored candidates. For
# membership inference, it is the accuracy after swapping member and look-alike within each
# pair at random. A "leaks" claim is one-sided: a leak is a score *above* the null's upper
# 95 % point. A claim that a trainer "stays at chance" is an equivalence test, because not
# finding a leak does not show there is none: every (model, γ) cell's 95 % interval must end
# below a margin fixed in the register (MIA accuracy under 0.55). For exposure these rows
# read the *mean* exposure of the canaries at risk, not the maximum of all ten: the maximum
# varies so much where nothing leaks that such a row could almost never hold. A canary is at
# risk when the trainer trains on it in some form: every canary for a trainer that redacts
# nothing or trains on what π flags under DP (S-DP); for redaction alone and CRT, those with
# a copy π misses. A canary that π redacts everywhere never reaches the model, so it would
# pull the mean toward chance whatever the trainer does; a cell with none at risk is at
# chance by construction and decides nothing. The null is the mean of as many fake canaries.
# The margin is 1.5 bits per canary, below the 1.85 bits (or more, with fewer at risk) by
# which one memorized canary lifts the mean.
# The test is one-sided, since a score below chance is no leak, and the row shows the test's
# power against a leak at the margin. The positive controls show that each test finds a
# leak where there is one.
# Perplexity claims compare like with like: the perplexity of the non-secret test tokens,
# with an interval over test sentences and trained models.

# %%
planned = claims(P)
_ = verdict.plan(list(planned.values()))

# %% [markdown]
# ## 1. CustomerSim and the CRT pipeline
#
# CustomerSim follows Selective DP's SimDial "track package" domain, and like the paper we
# simulate it. Each dialogue asks for a name, a street address and up to two of a phone
# number, an order number and a 10-character tracking number; the address is always asked
# because the paper's CustomerSim membership attack uses addresses (Appendix A.5). Names and
# addresses come from Faker (seeded, en_US). Every secret character carries a gold label. Ten canaries
# "My ID is: dddddd" are inserted `canary_copies` times each, at random turns of random
# training dialogues.
#
# The policy π is a set of regular expressions, one per secret type. At rate γ it misses a
# detected secret: a miss happens when a SHA-1 hash of (seed, sentence, position) falls
# below γ, so misses are reproducible and nested in γ. π_c flags any sentence with a digit
# or a capitalized word after its first token.
#
# The paper describes deduplication in two ways, and we run both:
#
# - **remove** (Section 4's experiments): identical sentences are removed, by SHA-1. This
#   is CRT's reading throughout the chapter;
# - **mask** (Algorithm 1 with Appendix A.6): a later duplicate becomes `<MASK>` and so
#   goes to D_pri. CRT is also trained so at Fig. 2's γ, as a row of its own.

# %%
data = runs.build_data(P)
pipeline = ex.pipeline_table(data, P)
publish("pipeline", pipeline, view=pipeline.drop(columns=["precision", "sentences"]))

# %%
dup, masked = (pipeline[(pipeline.gamma == 0) & (pipeline.dedup == d)].iloc[0] for d in ("remove", "mask"))
page.say(
    f"Of the {dup.sentences:,} training sentences, {dup.duplicates:,} ({dup.duplicates / dup.sentences:.0%}) repeat "
    "an earlier one. Selective DP's own CustomerSim is more repetitive still: 76 % of its 124k sentences are "
    f"duplicates. Removal leaves D_pri {dup.d_pri:,} sentences at γ = 0 and D_pub {dup.d_pub:,}. Under the mask "
    f"reading, {masked.d_pri_bare_mask:,} of D_pri's {masked.d_pri:,} sentences are a bare `<MASK>`. π's recall "
    "falls by about γ as γ grows (the `recall` column), and the last column counts how many of each canary's copies "
    "π leaves unredacted."
)

# %% [markdown]
# ## 2. Models, trainers and their budgets
#
# Every data point is one sentence. The **LSTM** has one layer over word-level tokens in
# which digits and tracking characters are single tokens. Its vocabulary holds the words of
# the training text *after* π at γ = 0 has redacted it; any other word (a name, a street) is
# spelled in characters. So no secret value is in the vocabulary, and a member and its
# look-alike are written alike (the paper's GPT-2 BPE has the same property). The **GPT-2**
# is transformers' `GPT2LMHeadModel`, small and trained from scratch on the same vocabulary.
# The trainers are the same code for both:
#
# - **non-private**: plain training on the raw sentences;
# - **non-private + mask**: plain training on π-redacted sentences;
# - **S-DP** (Shi et al.; the LSTM only, as in the paper): per Poisson batch, a plain step on the π-redacted sentences with
#   loss on public tokens, then an Opacus DP-SGD step whose loss covers only the tokens π
#   flags;
# - **DPSGD**: Opacus DP-SGD on every sentence;
# - **CRT**: each epoch, one plain epoch on D_pub, then one DP-SGD epoch on D_pri, never
#   mixing the two in a batch;
# - **D_pub only**, a control: plain training on D_pub alone with CRT's public budget (its
#   epochs and batch), which shows how much of CRT's utility the DP part adds.
#
# Appendix A.3 gives CRT-LSTM twice the epochs of the non-private LSTM and a batch of 10.
# We keep that ratio: CRT-LSTM runs `crt_epochs` epochs with public batches of
# `crt_batch`. The paper gives the GPT trainers equal budgets, and so do we. Every DP-SGD
# run is calibrated by Opacus' RDP accountant to `target_epsilon` at δ = 8·10⁻⁵. CRT also
# reports its confidentiality ε, log(1 + γ(e^ε_dp(δ/γ) − 1)). That amplification (Prop. 6)
# reads γ as the chance that π misses a secret, each occurrence on its own: a policy that
# misses a secret's format every time (the factorial's, below) gets no amplification, and a
# secret's missed copies are then a group (Definition 3). S-DP's confidentiality ε is
# infinite once π misses secrets (γ > 0): it trains on the missed ones with plain steps,
# as Fig. 2's caption says; the budgets table shows ∞ there, beside the finite ε of its DP-SGD
# steps. Trained models are cached under `data/crt/`, keyed by everything that determines them.

# %% [markdown]
# **The DP learning rates are tuned.** Appendix A.3 tunes each trainer's learning rate on a
# validation set. We do the same for the DP-SGD steps of DPSGD, CRT and S-DP: each is
# trained once (first seed; CRT at Fig. 2's γ, S-DP with a perfect policy) at the middle
# rate of a grid, then at both neighbours of the best rate so far, until both are worse
# (the best is interior) or the best is at an end of the grid, which the table says. Each
# keeps the rate of lowest non-secret perplexity on held-out validation dialogues after its
# last epoch. Then each is trained to the register's convergence criterion: unless its
# validation perplexity moved less than 2 % in its last epoch, the chosen rate is trained
# again at twice the epochs (the noise recalibrated to the same ε), and doubled again while a
# doubling gains 2 % or more, at most `max_doublings` times (`epochs_tried`).
# Every seed of the trainer then runs at the epochs chosen; CRT's D_pub-only control and the
# factorial's arms follow CRT's, its public budget. That is the perplexity the claims measure on test. S-DP's DP steps carry loss
# on secret tokens only, but their noise reaches every weight, so the same perplexity
# measures what its rate costs. The per-sample clip stays at 0.1: when every gradient is
# clipped, an SGD step depends on the learning rate times the clip, so tuning both would
# try the same steps twice. DPSGD runs CRT's epochs. Fig. 2 compares the trainers along
# the confidentiality-ε axis, so DPSGD is also trained to CRT's own confidentiality ε at
# Fig. 2's γ (about 0.7, against the DP-SGD ε of 3 that CRT's D_pri steps spend); its rate
# is walked the same way, from the rate it chose at ε = 3.

# %%
ch = ex.run_all(P, data)
tuning = ex.dp_tuning_table(ch)
tuned = publish("dp_tuning", tuning, view=ex.dp_tuning_view(tuning), digits=3)
page.say(ex.tuning_words(tuned, P.n_val))

# %% [markdown]
# A DP curve still falling in its last epoch does not by itself say that more epochs would
# help: the noise is calibrated to the whole run's ε, so a run of twice the epochs adds more
# noise to every step. That is why the criterion trains the longer run instead of reading the
# curve.

# %%
utility = ex.utility_table(ch)
budget = publish(
    "budgets",
    utility[["model", "trainer", "gamma", "public_steps", "private_steps", "epsilon", "epsilon_dp", "train_seconds"]],
    view=ex.budget_view(utility),
)

# %% [markdown]
# The paper also bounds a group of secrets (Definition 3): a secret inserted many times is
# a group of its copies. Proposition 7 says that after deduplication only the group's unique
# members count. The table reads the bound on the LSTM's data at Fig. 2's γ.

# %%
group = ex.group_table(ch, utility)
publish(
    "group_confidentiality",
    group,
    view=group.assign(
        epsilon_per_copy=group.epsilon_per_copy.map(ex.epsilon_text),
        group_epsilon=group.group_epsilon.map(ex.epsilon_text),
    ),
)
page.say(ex.group_words(group, ch.gamma2))

# %% [markdown]
# ## 3. Canary exposure against its null: Fig. 3
#
# Exposure is $\log_2 10^6 - \log_2 \mathrm{rank}$, where the rank is exact among all $10^6$
# six-digit strings that could follow "My ID is:". The candidates are scored as a prefix
# tree, level by level in batches; the unit tests check its ranks against brute-force
# scoring. The chapter reports the maximum over the ten canaries, as the paper does; its
# "stays at chance" rows read their mean (below).
#
# A model that never saw a canary still scores several bits, because the maximum of ten
# random ranks is large: the expected maximum exposure of ten uniform ranks is about 4.2
# bits. Each trainer's null is the seed-mean maximum exposure of ten fake canaries drawn
# 1,000 times from the same scored candidates; the grey band below joins the trainers'
# central 95 % intervals of it at each γ, for the eye (the rules use each trainer's own
# one-sided upper point, in the table). The table gives, per cell, the maximum, its leak over
# that null, and the leak of the mean exposure of the canaries at risk over the null of as
# many fake canaries, which the "at chance" rows read (95 % intervals in brackets).

# %%
exposure = ex.exposure_table(ch)
publish("exposure", exposure, view=ex.exposure_view(exposure))

# %%
panels = [(ex.NAMES[m], f"model == '{m}'") for m in ex.MODELS]
figures.against_gamma(exposure, "exposure", panels, "max exposure over 10 canaries (bits)", None)
plt.show()

# %%
page.say(ex.exposure_words(exposure, ch))

# %% [markdown]
# Exposure ranks a canary that is already known. An attacker who does not know it has to
# search for it: we run a beam search for the six digits after "My ID is:" on every model
# (Carlini et al.'s extraction, a check of our own beside the paper's exposure), keeping the
# likeliest 1, 10, 100 or 1,000 prefixes at each digit, and count the canaries among what
# it ends with. The table gives the count at a width of 1,000, the seed mean.

# %%
extraction = ex.extraction_table(ch)
publish("extraction", extraction, view=pivot_view(extraction, ["model", "trainer"], "gamma", "width_1000").round(1))

# %%
page.say(ex.extraction_words(extraction))

# %% [markdown]
# ### What protects the canaries: deduplication, redaction or DP-SGD?
#
# CRT stacks three defences, and the exposure rows above cannot tell them apart. We
# separate them on the LSTM at Fig. 2's γ, one seed, with a policy that misses the
# canaries' format every time (a real policy fails on a format, not on each occurrence
# independently): the canary copies are the same sentence, as above, or each copy sits in
# a distinct context; deduplication is on or off; and D_pri is trained with DP-SGD (CRT),
# with plain SGD, or dropped. DP-SGD's steps are clipped per sample to 0.1 at CRT's tuned
# rate, plain SGD's globally to 0.25 at the LSTM's rate of 20, so two more arms separate its
# noise from its smaller steps on the copies in distinct contexts: the same clipped steps
# without noise, and DP-SGD at the rate DPSGD chose (table dp_tuning).

# %%
factorial = ex.factorial_table(ch)
publish(
    "factorial",
    factorial,
    view=pivot_view(factorial, ["canaries", "dedup"], "trainer", "exposure"),
)
page.say(ex.factorial_words(factorial))

# %% [markdown]
# ## 4. Membership inference against its null: Figs. 4 and 5
#
# The attack follows Appendix A.5. Members are training sentences that hold a secret; each
# non-member is a look-alike, the same sentence with fresh secrets of the same types. The
# attacker calls a sentence a member when its perplexity is below a threshold, fitted on
# one half of the pairs and tested on the other, then the other way round. The group attack
# sums the perplexities of 20 sentences; its two halves are disjoint, so the threshold is
# never tested on a sentence it was fitted on. The paper's MIA members are addresses, so we
# also run the individual attack on address sentences alone.

# %%
mia = ex.mia_table(ch)
publish("mia", mia, view=pivot_view(mia, ["model", "trainer", "attack"], "gamma", "accuracy"))

# %%
panels = [
    (f"{ex.NAMES[m]}\n{a} attack", f"model == '{m}' and attack == '{a}'")
    for m in ex.MODELS
    for a in ("individual", "group")
]
figures.against_gamma(mia, "accuracy", panels, "MIA accuracy", 0.5)
plt.show()

# %%
page.say(ex.mia_words(mia))

# %% [markdown]
# **Our paired check.** The paper's attack compares every sentence with one global threshold:
# it must separate members from non-members across sentences of very different perplexity.
# Each member here has a look-alike, the same sentence with fresh secrets, so we also report the share of pairs whose
# member has the lower perplexity: the pairs' own AUC, 0.5 at chance. It is our statistic, not
# the paper's, with a percentile interval over 400 resamples of the pairs and its own paired
# permutation null. The paper's threshold attack stays the paper's row.

# %%
paired = ex.paired_table(ch, mia)
publish("mia_paired", paired, view=pivot_view(paired, ["model", "trainer", "pairs"], "gamma", "share"), digits=3)
page.say(ex.paired_words(paired, mia))

# %% [markdown]
# **Calibrated by a reference model.** The field's stronger attacks compare each perplexity
# with a reference model's, to cancel what makes a secret string easy or hard for any
# model. Our reference is the same network trained with
# redaction by a perfect policy (γ = 0), which never saw a secret. A member "wins" when its
# log perplexity, minus the reference's, is below its look-alike's. Like the paired
# statistic, this is our check and decides no row.

# %%
calibrated = ex.calibrated_table(ch, paired)
publish(
    "mia_calibrated",
    calibrated,
    view=pivot_view(calibrated, ["model", "trainer", "pairs"], "gamma", "calibrated"),
    digits=3,
)
page.say(ex.calibrated_words(calibrated))

# %% [markdown]
# **Power at effects fixed in advance.** How often would each test find a leak of a given size?
# The register fixes the effects before the runs: member win rates of 0.55 and 0.60 (a win
# rate is the share of pairs in which the member's perplexity is the lower one). For every cell a row decides, we simulate 200
# worlds from the cell's own pairs: in each pair, the lower of its two observed perplexities
# is the member's with probability equal to the win rate. At 0.5 this is the permutation null, so
# the power there is the test's size. The power does not depend on the effect the run happens to
# show. The table gives, per attack, its weakest γ cell and the rule that needs every γ cell to
# clear its point. CRT's "at chance" rows on the paper's attack have their margin on accuracy
# (0.55), which a threshold attack reaches only at a higher win rate: for them the table also
# gives the power at the win rate whose simulated accuracy is the margin. Last, we resample the trained models and the pairs 400 times for an
# interval of group minus individual accuracy (Fig. 5's "group stronger than individual");
# only the cells of several trained models decide that row, since one model's interval
# cannot cover training randomness.

# %%
attack_power = ex.attack_power_table(ch, mia, paired)
publish("attack_power", attack_power, view=ex.power_view(attack_power), digits=2)
page.say(ex.power_words(attack_power))
power = ex.mia_power_table(ch, mia)
publish("mia_power", power, digits=3)

# %% [markdown]
# ## 5. Perplexity, like with like: Fig. 2
#
# Raw test perplexity counts the secret tokens, about one in seven, which the redacting
# trainers never see: a model trained on redacted text is bound to be surprised by a fresh
# phone number, so better redaction looks worse. Selective DP's own evaluation separates the
# two. We report three perplexities on the held-out dialogues: raw; on non-secret tokens
# only (the model still reads the secrets as context); and on the redacted test set, where
# every gold secret is a `<MASK>`. The table shows them at Fig. 2's γ with 95 % intervals
# over test dialogues (then the sentences within them) and seeds.

# %%
publish(
    "utility",
    utility,
    view=utility[
        ["model", "trainer", "ppl_raw", "ppl_non-secret", "ppl_non-secret_low", "ppl_non-secret_high", "ppl_redacted"]
    ],
    digits=2,
)
page.say(ex.matched_words(utility))

# %% [markdown]
# Where does CRT lose against the non-private model? The table splits the gap in test NLL
# into the first token of a sentence, the secret tokens and the ordinary tokens, for both
# readings of deduplication and for the D_pub-only control.

# %%
gap = ex.gap_table(ch)
publish("perplexity_gap", gap, view=gap.drop(columns=["gap_first", "gap_secret", "gap_ordinary"]), digits=3)
page.say(ex.gap_words(gap, utility))

# %% [markdown]
# How much of CRT's gap would close with more data? CRT's public part, D_pub alone, sits
# beside it in the table above. Deduplication keeps each repeated sentence once in D_pub,
# and many test sentences copy a training sentence, which the non-private model sees many
# times. The sweep trains
# the non-private and the D_pub-only models of each network (plain SGD, every seed) on a
# quarter, half, once and twice the chapter's dialogues, and reads D_pub alone's perplexity
# over non-private's on the same test dialogues. Its trend, the fall of the log ratio per
# doubling, has an interval over the test dialogues and the seeds. A closeness row is put
# down to the regime only where this gap closes measurably and, carried to the paper's
# 10,000 dialogues, would reach the row's 1.2.

# %%
sweep, trends = ex.dialogue_sweep(ch)
publish(ex.SWEEP, sweep, view=sweep.drop(columns=["sentences", "d_pub"]), digits=3)
page.say(ex.sweep_words(sweep, trends))

# %% [markdown]
# The paper's Fig. 2 plots one point per training epoch: the ε spent so far against the
# perplexity. We plot the non-secret perplexity of the validation dialogues, the one the
# learning rates were chosen by, and keep the test set for the final models. Its caption
# notes that S-DP with an imperfect policy has ε = +∞, so the figure shows S-DP with a
# perfect policy; we do the same (γ = 0), and draw CRT at Fig. 2's γ = 0.1 with its
# confidentiality ε. Dashed lines are the final non-private perplexities; a star marks
# DPSGD trained to CRT's confidentiality ε, after its last epoch (it is not tracked per epoch).

# %%
history = publish("fig2_per_epoch", ex.history_table(ch), show=False)
baseline = history[history.trainer == "non-private"].groupby("model", as_index=False).last()
figures.per_epoch(history, baseline.assign(trainer="non-private"), ex.NAMES)
plt.show()

# %% [markdown]
# ## 6. A pretrained arm: SmolLM2-135M
#
# The paper's "almost the same perplexity" is about fine-tuning a pretrained distilgpt2, a
# question a GPT-2 trained from scratch cannot answer. The only pretrained causal LM this
# book has offline is SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF that we dequantize to
# float32; it is instruction-tuned. DP-SGD through all 135M parameters is out of reach on two
# CPU cores, so the arm freezes the trunk and fine-tunes only the last decoder block (the
# frozen trunk's states are computed once per sentence). It trains non-private, DPSGD and
# CRT (γ = 0.1) fine-tunes, once each, with the same ε, and, as a control, a plain fine-tune on
# D_pub alone; all are cached. Every fine-tune trains at the paper's learning rate, 5e-4:
# the arm has no tuning walk, so its DPSGD is not trained to the standard of the small
# models' DPSGD, whose rate is chosen on validation, and the verdict leaves the arm's
# "CRT against DPSGD" row untestable here. Each sentence is rendered as text with punctuation glued to
# the previous word and digits glued only to a digit or a punctuation mark ("is:123", but
# "in 3 days"), between `<|endoftext|>` and the Instruct model's `<|im_end|>`.
# An earlier rendering put a space before every punctuation mark, text unlike anything
# SmolLM2 read, and that alone made its zero-shot perplexity about four times higher. The
# zero-shot number still counts short dialogue fragments and the end-of-turn token, so it is
# high for an English model.

# %%
arm_result = arm.run(P, data)
arm_table = arm.table(arm_result)
publish("pretrained_arm", arm_table, view=arm_table.drop(columns=["ratio_low", "ratio_high", "mia_null_low"]), digits=3)
page.say(arm.words(arm_result))

# %% [markdown]
# ## 7. Confidentiality amplification: Fig. 6
#
# If π misses a secret with probability γ, a DP-SGD run with (ε′, δ) on D_pri gives each
# secret Bayesian confidentiality $\varepsilon_{conf} = \log(1 + \gamma(e^{\varepsilon_{dp}} - 1))$,
# where $\varepsilon_{dp}$ is the same run's ε taken at δ/γ. We follow the authors'
# accounting with autodp: calibrate σ so that q = 0.1 over 100 steps (the sampling rate and
# steps of the example in the authors' `confidentiality_calculation.ipynb`) reaches ε′ at
# the paper's δ = 8·10⁻⁵, read ε at δ/γ, amplify it. The notebook's own example (ε = 2,
# δ = 10⁻⁵) prints 0.3744, which the last verdict row recomputes. The red cross is the paper's one quoted value at
# ε′ = 1 (γ = 0.1, "we reduce the ϵ to 0.12"); the open circles at γ = 0.1, 0.2 and 0.5 are
# ours, the same accounting recomputed, not values the paper prints. The right panel shows
# why "CRT's ε is far smaller than DPSGD's" is arithmetic rather than a measurement: the
# ratio depends only on γ and ε, and shrinks towards 1 as ε grows.

# %%
amp = publish("amplification", ex.amplification_table(P), show=False)
figures.amplification(amp, {0.1: planned["accounting:fig6"].paper_estimate})
plt.show()

# %% [markdown]
# ## 8. How much the prefix tree saves
#
# The naive enumeration scores every candidate sequence from scratch. We run it in full on a
# 4-digit space and time the tree on the same space and on the full $10^6$
# space, on the same non-private model, in the same run. For $10^6$ candidates the naive
# time is extrapolated linearly from the measured cost per candidate token. GPT-2's state is
# a key/value cache that grows with the prefix, where the LSTM's is a fixed (h, c), so the
# tree saves less for GPT-2.

# %%
publish("enumeration_benchmark", ex.benchmark_table(ch))

# %% [markdown]
# ## 9. The `paper` profile: MultiWOZ 2.2
#
# At `paper` the GPT-2 trainers fine-tune distilgpt2 from the Hub and the pretrained arm
# reads SmolLM2 from the Hub. This cell also loads MultiWOZ 2.2 and reports its size. The
# `default` and `smoke` profiles skip it (they are offline).

# %%
if P.profile == "paper":
    publish("multiwoz", ex.multiwoz_table(P))

# %% [markdown]
# ## What differs from the paper
#
# **Data.** CustomerSim is simulated, as in the paper, from our own templates with Faker
# names and addresses; `default` has 150 dialogues instead of 10k. MultiWOZ 2.2 is only
# loaded at `paper`.
#
# **Models.** The LSTM is 64/64 instead of 200/200. The GPT-2 of `default` is trained from
# scratch, without dropout, on the word vocabulary: its perplexities are not comparable to
# the paper's GPT rows. The pretrained arm is SmolLM2-135M-Instruct, not distilgpt2, with a
# frozen trunk and one trainable decoder block. At `paper`, distilgpt2 reads the word tokens
# joined by spaces so that every digit is one BPE token and the canary rank stays exact. The
# paper's models read GPT-2's BPE; ours read a word vocabulary built from π-redacted training
# text with every other word spelled in characters, which, like a BPE, holds no secret value.
#
# **Training.** The LSTM trainers run 5 epochs (CRT and DPSGD 10, CRT with public batches
# of 16) with SGD at lr 20; the paper runs 50 (CRT 100). The paper tunes learning rate,
# batch size and epochs per trainer on validation (Appendix A.3); we tune the DP learning
# rate of DPSGD, CRT and S-DP on a grid of six rates, and their epochs by a convergence
# criterion, up to four times the profile's at `default` (section 2). The GPT-2
# trainers use Adam at a larger lr and smaller batch than the paper, so that the small
# model memorizes its canaries within 4 epochs. DP steps use a per-sample
# clip of 0.1 and Poisson batches of expected size 64 (CRT's public batches are smaller, its
# private ones are not). S-DP follows Shi et al.'s idea in our own form.
# "non-private + mask" redacts with π but does not deduplicate. ε counts only non-empty
# Poisson batches. CRT removes duplicates (Section 4) where Algorithm 1 masks them; the mask
# reading is a row of its own at Fig. 2's γ. The paper's "same or better than DPSGD" is
# tested at CRT's confidentiality ε, with DPSGD trained to it.
#
# **Evaluation.** The paper does not say how the MIA threshold is fitted; we fit it on half
# the pairs and test on the other half, both ways. The LSTM sweeps γ over `gammas`, GPT-2
# over `gpt_gammas`, fewer values than the paper's six; only γ = 0 and γ = 0.1 have three
# seeds. The naive enumeration runs in full only on the smaller space. "Leaks" tests are
# one-sided and "stays at chance" rows are equivalence tests with a stated margin; the paper
# reads its plots against the 0 and 0.5 lines. The paper shows the highest exposure of its
# ten canaries; our exposure "stays at chance" rows read the mean exposure of the canaries
# at risk over its null instead, since a row on the maximum could almost never be held. The
# mean dilutes a leak of one canary among those at risk: one canary fully memorized lifts it
# past the 1.5-bit margin, but a partial leak of one canary in ten (about 9 bits) can pass.
# A row none of whose cells has a canary at risk is true by construction and reads
# `untestable here`. The exposure table and each row's test give the
# maximum too. The paper's group attack has 2,000
# groups; ours draws its groups from the same few hundred pairs, and the `attack_power` table
# says how much power that leaves at effects fixed in advance. The paired statistic is ours.
# The factorial is ours: one seed, the LSTM only, at Fig. 2's γ.

# %% [markdown]
# ## How the rows are decided
#
# Each row applies the rule fixed in "What we test". A row that does not hold names its
# cause: a setup choice or a finding, with the table that varies what it names, or `unknown`
# with the ablation that would tell. The one sweep of a regime variable is the dialogue
# sweep, and only the closeness rows read it. Every "stays at chance" row, the paper's and ours, is a one-sided
# equivalence test: its margin (a mean leak under 1.5 bits per canary, a maximum's under 2
# bits in the factorial; an accuracy or member win rate under 0.55) is written in the register
# (the mean's after the maximum's numbers were seen, and its reading of the canaries at risk
# after the mean's), it holds only if every (model, γ) cell's
# interval ends below the margin, and only if the test would detect a leak at the margin at
# least 80 % of the time in its weakest cell. A "rises above chance" row that fails where
# its test would detect a win rate of 0.55 less than 80 % of the time is inconclusive, not
# "not held": a weak test that fails to reject does not show the rise absent. An
# inconclusive row says what would decide it.

# %%
rows = ex.verdict_rows(ch, planned, exposure, mia, power, paired, attack_power, factorial, arm_result, amp, trends)
_ = verdict.conclude(rows)
