"""The CRT chapter's experiment: its parameters, every run trained and scored, the tidy tables and the verdict rows."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from .. import cache, stats
from ..params import Param
from ..verdict import Claim, Sweep, check_regime, judge, unexplained
from . import accounting, canary, gpt, language_model, membership_attacks, redaction, tuning
from . import arm as arm_module
from .claims import (
    ALPHA,
    ATTACK_MODELS,
    CLOSE,
    EQUIVALENCE_MARGIN,
    EXPOSURE_MARGIN,
    MEAN_MARGIN,
    MEMORIZES,
    MISSED,
    NAMES,
    NOTEBOOK_INPUTS,
    PAPER_DIALOGUES,
    SIGMA,
    WIN_RATES,
)
from .runs import (
    ALTERNATE_LABEL,
    ATTACKS,
    CANARY_DIGITS,
    CLIPPED,
    CONTROL,
    DELTA,
    GROUP,
    MATCHED_LABEL,
    MODELS,
    N_CANARIES,
    PERPLEXITIES,
    PRIMARY_DEDUP,
    SPLIT_PLAIN,
    STEPPERS,
    Data,
    Encoder,
    Run,
    Trainer,
    attack_designs,
    build_data,
    cached,
    canaries_at_risk,
    canary_copies_in_crt,
    canary_copies_missed,
    canary_levels,
    canary_scores,
    dialogue_perplexity,
    dialogues_of,
    mia_scores,
    nll_of,
    planned_runs,
    test_nll,
)

BENCH_DIGITS = 4  # digits of the candidate space the naive enumeration runs on in full
N_BOOT = 400  # pair resamples of the MIA power and group-vs-individual table
POWER_TARGET = 0.8  # a design with less power at the register's effects cannot be expected to find them
N_POWER = 200  # simulated worlds per (cell, statistic, win rate) of table attack_power
PAIR_SETS = {"individual": "all secrets", "address": "addresses"}  # the pairs the paired statistic reads
POWER_CELLS = (("non-private + mask", "mask", "positive"), ("S-DP", "sdp", "positive"), ("CRT", "crt", "all"))
AMP_EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)  # ε′ of the Fig. 6 curves
GPT_HEADS = 2  # attention heads of the GPT-2 trained from scratch
MULTIWOZ_HUB = "pfb30/multi_woz_v22"


def _gammas(default: list[float], smoke: list[float], paper: list[float], what: str) -> Param:
    """A list-of-γ parameter."""
    return Param(list, default, smoke=smoke, paper=paper, items=float, low=0.0, high=0.5, help=what)


def _grid(default: list[float], smoke: list[float], paper: list[float], high: float, what: str) -> Param:
    """A grid of DP-SGD learning rates, each private trainer's chosen on the validation split."""
    help = f"{what} learning rates tried per private trainer, chosen on validation"
    return Param(list, default, smoke=smoke, paper=paper, items=float, low=1e-6, high=high, help=help)


SPEC = {
    "seed": Param(int, 0, low=0, high=2**32 - 1, help="data seed; the i-th model of a run uses seed + i"),
    "n_seeds": Param(int, 3, smoke=1, low=1, high=10, help="models trained per (model, trainer, γ)"),
    "n_dialogues": Param(int, 150, smoke=40, paper=10_000, low=20, high=100_000, help="training dialogues"),
    "n_test": Param(int, 100, smoke=20, paper=1000, low=10, high=10_000, help="test dialogues"),
    "n_val": Param(int, 50, smoke=10, paper=1000, low=2, high=10_000, help="validation dialogues (DP learning rates)"),
    "canary_copies": Param(int, 20, smoke=5, low=1, high=100, help="insertions of each canary"),
    "gammas": _gammas([0.0, 0.1, 0.3, 0.5], [0.0, 0.1], [0.0, 0.1, 0.2, 0.3, 0.4, 0.5], "γ values of the LSTM"),
    "gpt_gammas": _gammas([0.0, 0.1, 0.5], [0.0, 0.1], [0.0, 0.1, 0.2, 0.3, 0.4, 0.5], "γ values of GPT-2"),
    "emb": Param(int, 64, smoke=16, paper=200, low=4, high=1024, help="LSTM embedding size"),
    "hidden": Param(int, 64, smoke=16, paper=200, low=4, high=1024, help="LSTM hidden size"),
    "epochs": Param(int, 5, smoke=1, paper=50, low=1, high=200, help="LSTM epochs (paper: 50)"),
    "crt_epochs": Param(int, 10, smoke=2, paper=100, low=1, high=400, help="CRT-LSTM epochs (paper: 100)"),
    "crt_batch": Param(int, 16, smoke=8, paper=10, low=1, high=1024, help="CRT-LSTM public batch (paper: 10)"),
    "lr": Param(float, 20.0, low=1e-4, high=100.0, help="LSTM SGD learning rate (paper: 20)"),
    "dp_lrs": _grid(
        [0.5, 1.0, 2.0, 5.0, 10.0, 20.0], [2.0, 10.0], [0.05, 0.1, 1.0, 5.0, 10.0, 20.0], 100.0, "LSTM DP-SGD"
    ),
    "gpt_embd": Param(int, 64, smoke=32, low=8, high=1024, help="width of the GPT-2 trained from scratch"),
    "gpt_layers": Param(int, 2, smoke=1, low=1, high=12, help="its layers"),
    "gpt_epochs": Param(int, 4, smoke=1, paper=10, low=1, high=200, help="GPT-2 epochs, every trainer (paper: 10)"),
    "gpt_lr": Param(float, 5e-3, paper=5e-4, low=1e-6, high=1.0, help="GPT-2 Adam learning rate (paper: 5e-4)"),
    "gpt_dp_lrs": _grid(
        [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2], [1e-3, 1e-2], [1e-4, 5e-4, 1e-3], 1.0, "GPT-2 DP-SGD Adam"
    ),
    "max_doublings": Param(
        int, 2, smoke=1, low=0, high=4, help="doublings of a DP trainer's epochs at most, until it converges"
    ),
    "target_epsilon": Param(float, 3.0, low=0.1, high=100.0, help="ε at δ = 8e-5 of every DP-SGD run"),
    "n_mia": Param(int, 300, smoke=40, paper=1000, low=20, high=10_000, help="member/look-alike pairs of the MIA"),
    "n_groups": Param(int, 100, smoke=10, paper=1000, low=2, high=10_000, help="groups of 20 per fold, group MIA"),
    "n_null": Param(int, 1000, smoke=100, low=20, high=100_000, help="draws of every attack's null"),
    "arm_source": Param(str, "local", paper="hub", choices=("local", "hub"), help="pretrained arm: packaged or Hub"),
    "arm_dialogues": Param(int, 150, smoke=6, paper=10_000, low=2, high=100_000, help="training dialogues of the arm"),
    "arm_epochs": Param(int, 2, smoke=1, paper=10, low=1, high=50, help="epochs of each pretrained-arm fine-tune"),
    "arm_test": Param(int, 600, smoke=20, paper=5000, low=10, high=100_000, help="test sentences of the arm"),
    "gpt_name": Param(str, "distilgpt2", help="Hub id of the pretrained GPT-2 (paper profile)"),
}


def consistent(p: dict) -> str | None:
    """Cross-parameter checks: GPT-2's heads divide its width; its γ values are among the LSTM's."""
    if p["gpt_embd"] % GPT_HEADS:
        return f"parameter 'gpt_embd': {p['gpt_embd']} is not a multiple of GPT-2's {GPT_HEADS} attention heads"
    if 0.0 not in p["gammas"] or 0.0 not in p["gpt_gammas"]:
        return "parameters 'gammas' and 'gpt_gammas' must include 0.0 (a perfect policy)"
    if len([g for g in p["gpt_gammas"] if g > 0]) == 0:
        return "parameter 'gpt_gammas': give at least one γ > 0"
    if not set(p["gpt_gammas"]) <= set(p["gammas"]):
        return f"parameter 'gpt_gammas': {p['gpt_gammas']} is not a subset of gammas {p['gammas']}"
    return None


def fig2_gamma(p: Any) -> float:
    """The γ of Fig. 2 and of the CRT controls: 0.1 as in the paper when run, else the smallest positive γ."""
    positive = sorted(g for g in p.gpt_gammas if g > 0)
    return 0.1 if 0.1 in positive else positive[0]


@dataclass
class Chapter:
    """Everything the notebook reads: data, encoders, the trained runs and their scores."""

    p: Any
    data: Data
    encoders: dict[str, Encoder]
    models: dict[Run, tuple[torch.nn.Module, dict]]
    scores: dict[Run, dict]
    tuning: pd.DataFrame  # every DP learning-rate candidate's per-epoch validation perplexity (tuning.tuning_table)

    @property
    def dp_lrs(self) -> dict[tuple[str, str], float]:
        """(model, trainer) -> the DP learning rate chosen on validation."""
        return tuning.chosen_rates(self.tuning)

    @property
    def dp_epochs(self) -> dict[tuple[str, str], int | None]:
        """(model, trainer) -> the epochs the convergence criterion chose (None: the profile's)."""
        return tuning.chosen_epochs(self.tuning)

    @property
    def gamma2(self) -> float:
        """Fig. 2's γ."""
        return fig2_gamma(self.p)


def word_vocabulary(data: Data) -> language_model.Vocab:
    """The word vocabulary of the models trained from scratch: the words of the training text after π at γ = 0 has
    redacted it, every other word spelled in characters. No secret value enters it, and a member and its look-alike
    are written alike (both spelled, unless a value is also an ordinary word of the redacted text)."""
    redacted, _ = redaction.masked_corpus(data.sentences, data.policy(0.0))
    return language_model.Vocab.build_spelling(redacted, extra=[redaction.MASK])


def vocabularies(p: Any, data: Data) -> dict[str, Any]:
    """The LSTM's word vocabulary (`word_vocabulary`); GPT-2 shares it, except at `paper` (distilgpt2's BPE)."""
    vocab = word_vocabulary(data)
    if p.profile == "paper":
        return {"LSTM": vocab, "GPT-2": gpt.pretrained_gpt2(p.gpt_name, [redaction.MASK])[1]}
    return {"LSTM": vocab, "GPT-2": vocab}


def model_factory(p: Any, data: Data, vocabs: dict[str, Any]):
    """A function (model name, private) -> a freshly initialized (or freshly loaded pretrained) network."""
    every = data.sentences + data.test + data.validation + [s for pair in data.pairs + data.address_pairs for s in pair]
    n_positions = max(len(vocabs["GPT-2"].encode(s.tokens)) for s in every)

    def new_model(name: str, private: bool) -> torch.nn.Module:
        """LSTM (DPLSTM when private) or GPT-2 (small from scratch, or distilgpt2 at paper)."""
        if name == "LSTM":
            return language_model.LSTMLM(len(vocabs["LSTM"]), p.emb, p.hidden, private=private)
        if p.profile == "paper":
            return gpt.pretrained_gpt2(p.gpt_name, [redaction.MASK])[0]
        return gpt.small_gpt2(vocabs["GPT-2"], n_positions, p.gpt_embd, p.gpt_layers, GPT_HEADS)

    return new_model


# The 'at chance' rows' null of the mean over the canaries at risk draws this many times n_null sets of fake canaries
# (no model call: 0.25 s for 10^4 sets), so that its band and the test's power carry little Monte Carlo error.
AT_RISK_DRAWS = 10


def exposure_score(p: Any, data: Data, run: Run, model: torch.nn.Module, enc: Encoder) -> dict:
    """Max exposure over the real canaries and its null (10 fake canaries from the same scored candidates, n_null
    draws), each canary's exposure, and AT_RISK_DRAWS × n_null sets of 10 fake canaries' exposures (the mean of a
    set's first k is a draw of the null of k canaries' mean: the 'at chance' rows read the canaries at risk). The fake
    canaries are drawn with the data seed, as the real ones are: every trained model of a cell ranks the same fake
    canaries, so the seed-mean null varies across seeds as the seed-mean exposure does (not √seeds narrower)."""
    stepper, batch = STEPPERS[run.model]
    levels = canary_levels(stepper(model), enc, CANARY_DIGITS, batch)
    cand = levels[-1]
    real = [canary.canary_index(c) for c in data.canaries]
    each = canary.canary_exposures(cand, real)
    pool = canary.fake_exposures(cand, exclude=real)
    nulls = stats.subset_nulls(pool, N_CANARIES, p.n_null, p.seed)
    drawn = stats.subset_nulls(pool, N_CANARIES, AT_RISK_DRAWS * p.n_null, p.seed)["drawn"]
    return {
        "exposure": float(each.max()),
        "exposure_null": nulls["max"],
        "exposures": each,  # each canary's (v 6), and sets of fake canaries' exposures for the mean's null (v 7)
        "exposure_draws": drawn.astype(np.float32),
        "extracted": {w: int(np.isin(real, canary.beam_search(levels, w)).sum()) for w in BEAM_WIDTHS},
    }


def scores_of(
    p: Any, data: Data, run: Run, trainer: Trainer, model: torch.nn.Module, enc: Encoder, designs: dict
) -> dict:
    """Exposure with its null, the three MIAs with their nulls and the per-sentence test NLL of one model, cached
    beside it in two entries: the MIAs apart, so that the attack's sizes (n_mia, n_groups) re-score only them. The
    nulls are drawn with the data seed (v 4), shared by every trained model of a cell, as the canaries and pairs are."""

    def entry(kind: str, spec: dict, build: Any) -> dict:
        return cached(f"{kind}-{run.model}-{run.label}-s{run.seed}", spec, build)[0]

    spec = {"model": trainer.spec(run), "n_null": p.n_null, "v": 7}
    canaries = entry("exposure", spec, lambda: exposure_score(p, data, run, model, enc) | {"nll": test_nll(model, enc)})
    spec |= {"n_groups": p.n_groups, "n_mia": p.n_mia}
    return canaries | {"mia": entry("mia", spec, lambda: mia_scores(model, enc, designs, p.n_null, p.seed))}


@dataclass(frozen=True)
class Setting:
    """What training and scoring a run reads: the encoders, the trainer (with Fig. 2's per-epoch tracking) and the
    MIA designs of one chapter's data."""

    encoders: dict[str, Encoder]
    trainer: Trainer
    designs: dict

    def train_and_score(self, p: Any, data: Data, run: Run) -> tuple[tuple[torch.nn.Module, dict], dict]:
        """The run's model and info (trained, or loaded from the cache) and its scores (computed or loaded)."""
        model = self.trainer(run)
        return model, scores_of(p, data, run, self.trainer, model[0], self.encoders[run.model], self.designs)


def main_run(run: Run) -> bool:
    """Whether a run is one of the chapter's main runs: CRT under the primary dedup reading, every trainer at the
    profile's ε (not the alternate reading, nor DPSGD at CRT's confidentiality ε)."""
    return run.dedup == PRIMARY_DEDUP and run.epsilon is None


def setting(p: Any, data: Data) -> Setting:
    """The chapter's Setting on `data`."""
    vocabs = vocabularies(p, data)
    encoders = {name: Encoder(data, vocabs[name]) for name in MODELS}
    per_epoch = fig2_runs(fig2_gamma(p))
    track = lambda r: r.seed == p.seed and main_run(r) and (r.trainer, r.gamma) in per_epoch
    trainer = Trainer(p, data, encoders, model_factory(p, data, vocabs), track)
    return Setting(encoders, trainer, attack_designs(data, p.n_groups, p.seed))


class Piece(NamedTuple):
    """A worker's share of run_all (repro.workers): one learning-rate walk (model, trainer), or one run trained and
    scored. Its results reach the notebook through the cache."""

    params: dict
    walk: tuple[str, str] | None = None
    run: Run | None = None
    variant: bool | None = None  # a factorial cell's: canary copies in distinct contexts (factorial_setting)
    matched: tuple[float, float] | None = None  # a walk's (target ε, starting rate): DPSGD at CRT's ε


_SETTINGS: dict[str, tuple[Data, Setting]] = {}  # a worker's data and Setting, built once per parameter set
_FACTORIAL: dict[tuple[str, bool], FactorialSetting] = {}  # and the factorial's, per context


def _settings_key(params: dict) -> str:
    """The key of _SETTINGS and _FACTORIAL: the parameters as canonical JSON."""
    return json.dumps(params, sort_keys=True, default=str)


def build_piece(piece: Piece) -> None:
    """Train (and score) one piece into the cache, in a worker: the data and Setting are rebuilt from the parameters
    exactly as the notebook builds them (runs.build_data, `setting`), so every cache key is the notebook's."""
    from ..params import Resolved

    p = Resolved(piece.params)
    key = _settings_key(piece.params)
    if key not in _SETTINGS:
        data = build_data(p)
        _SETTINGS[key] = data, setting(p, data)
    data, s = _SETTINGS[key]
    if piece.variant is not None:
        if (key, piece.variant) not in _FACTORIAL:
            _FACTORIAL[key, piece.variant] = factorial_setting(p, data, s.encoders["LSTM"].vocab, piece.variant)
        _FACTORIAL[key, piece.variant].train_and_score(p, piece.run)
    elif piece.walk is not None:
        tuning.walk(p, *piece.walk, fig2_gamma(p), lambda run: s.trainer.info(run), *(piece.matched or ()))
    else:
        s.train_and_score(p, data, piece.run)


def build_all(p: Any, data: Data, s: Setting) -> None:
    """Train and score every run the cache lacks, side by side on the cores (repro.workers): first the learning-rate
    walks with every run that does not take a tuned rate, then the runs at the rates the walks chose. With one
    thread they run here, one after the other."""
    from .. import workers

    def missing(runs: list[Run]) -> list[Run]:
        return [r for r in runs if not s.trainer.has(r)]

    def cached_only(run: Run) -> dict:
        if not s.trainer.has(run):
            raise LookupError(run)
        return s.trainer.info(run)

    def walked(w: tuple[str, str], matched: tuple[float, float] | None = None) -> bool:
        """Whether every run of the walk is cached (the walk then reads the cache alone)."""
        try:
            tuning.walk(p, *w, fig2_gamma(p), cached_only, *(matched or ()))
        except LookupError:
            return False
        return True

    params = dict(p)
    _SETTINGS[_settings_key(params)] = data, s  # pieces run here reuse them
    untuned = [r for r in planned_runs(p, fig2_gamma(p)) if r.trainer not in tuning.TUNED]
    first = [Piece(params, walk=w) for w in tuning.walks() if not walked(w)]
    first += [Piece(params, run=r) for r in missing(untuned)]
    if first:
        workers.map_on_cores(build_piece, first, "runs, untuned and walks")
    table = tuning.tuning_table(tuning.search(p, fig2_gamma(p), lambda r: s.trainer.info(r)))
    starts = matched_starts(p, s, table)
    rest = [Piece(params, walk=(m, "DPSGD"), matched=v) for m, v in starts.items() if not walked((m, "DPSGD"), v)]
    chosen = tuning.chosen_rates(table), tuning.chosen_epochs(table)
    rest += [Piece(params, run=r) for r in missing(planned_runs(p, fig2_gamma(p), *chosen))]
    if rest:
        workers.map_on_cores(build_piece, rest, "runs at the chosen rates, DPSGD walked at CRT's ε")
    tried = matched_search(p, s, starts, lambda r: s.trainer.info(r))
    last = [Piece(params, run=r) for r in missing(matched_runs(p, starts, tuning.tuning_table(tried)))]
    if last:
        workers.map_on_cores(build_piece, last, "DPSGD at CRT's ε")


def matched_starts(p: Any, s: Setting, table: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """Per model, (target ε, starting rate) of DPSGD's walk at matched confidentiality: CRT's confidentiality ε at
    Fig. 2's γ (its first-seed run at its chosen rate and epochs, to 4 significant digits; the same for every seed, as
    the accounting reads only the sizes) and the rate DPSGD chose at the profile's ε (`table`: tuning_table)."""
    rates, epochs, out = tuning.chosen_rates(table), tuning.chosen_epochs(table), {}
    for model in MODELS:
        crt = Run(model, "CRT", fig2_gamma(p), p.seed, dp_lr=rates[model, "CRT"], epochs=epochs[model, "CRT"])
        out[model] = float(f"{s.trainer.info(crt)['epsilon']:.4g}"), rates[model, "DPSGD"]
    return out


def matched_search(p: Any, s: Setting, starts: dict[str, tuple[float, float]], train: Any) -> dict[Run, dict]:
    """Every run of DPSGD's walks at CRT's confidentiality ε (tuning.walk from `starts`)."""
    tried: dict[Run, dict] = {}
    for model, (epsilon, begin) in starts.items():
        tried |= tuning.walk(p, model, "DPSGD", fig2_gamma(p), train, epsilon, begin)
    return tried


def matched_runs(
    p: Any, starts: dict[str, tuple[float, float]], tuned: pd.DataFrame, models: tuple[str, ...] = MODELS
) -> list[Run]:
    """DPSGD at CRT's confidentiality ε, every seed, at the rate its own walk chose."""
    rates, epochs = tuning.chosen_rates(tuned), tuning.chosen_epochs(tuned)
    return [
        Run(model, "DPSGD", None, seed, dp_lr=rates[key], epsilon=starts[model][0], epochs=epochs[key])
        for seed in range(p.seed, p.seed + p.n_seeds)
        for model in models
        for key in [(model, MATCHED_LABEL)]
    ]


def run_all(p: Any, data: Data) -> Chapter:
    """Choose each DP trainer's learning rate on validation, then train (or load) every planned run and score it
    (scores cached beside the model); what the cache lacks is built first, side by side (build_all)."""
    s = setting(p, data)
    build_all(p, data, s)
    train = lambda run: s.trainer.info(run)
    tried = tuning.search(p, fig2_gamma(p), train)
    starts = matched_starts(p, s, tuning.tuning_table(tried))
    tuned = tuning.tuning_table(tried | matched_search(p, s, starts, train))
    chosen = tuning.chosen_rates(tuned), tuning.chosen_epochs(tuned)
    planned = planned_runs(p, fig2_gamma(p), *chosen) + matched_runs(p, starts, tuned)
    models, scores = {}, {}
    for run in tqdm(planned, desc="runs"):
        models[run], scores[run] = s.train_and_score(p, data, run)
    return Chapter(p, data, s.encoders, models, scores, tuned)


# --- the factorial: what protects the canaries ---------------------------------------------------------------

FACTORIAL_CONTEXTS = {"same sentence": False, "distinct contexts": True}
FACTORIAL_DEDUP = {"dedup on": PRIMARY_DEDUP, "dedup off": "none"}
FACTORIAL_ARMS = {"DP-SGD (CRT)": "CRT", "plain SGD": SPLIT_PLAIN[0], "dropped": SPLIT_PLAIN[1]}
# the arms that separate DP-SGD's noise from its step size (issue 51): D_pri's per-sample clipped steps at CRT's rate
# without noise, and DP-SGD at the rate DPSGD chose (the plain arm steps at lr 20 with a global clip of 0.25)
STEP_ARMS = {"clipped, no noise": CLIPPED, "DP-SGD at DPSGD's rate": "CRT"}
STEP_RATES = {"DP-SGD (CRT)": "CRT", "clipped, no noise": "CRT", "DP-SGD at DPSGD's rate": "DPSGD"}  # whose DP rate
FACTORIAL_MISSES = ("id",)  # π misses the canaries' format every time


@dataclass(frozen=True)
class FactorialSetting:
    """One context of the factorial: its data (π misses the canaries' format), the LSTM encoder on the chapter's word
    vocabulary, and a trainer that tracks no epoch."""

    data: Data
    enc: Encoder
    trainer: Trainer

    def train_and_score(self, p: Any, run: Run) -> tuple[tuple[torch.nn.Module, dict], dict]:
        """The run's model and info and its exposure with the null (trained and scored, or read from the cache)."""
        model, info = self.trainer(run)
        spec = {"model": self.trainer.spec(run), "n_null": p.n_null}
        score = lambda: exposure_score(p, self.data, run, model, self.enc)
        return (model, info), cached(f"factorial-scores-{run.label}-{run.dedup}", spec, score)[0]


def factorial_setting(p: Any, main: Data, vocab: Any, distinct: bool) -> FactorialSetting:
    """The factorial's setting for canary copies in distinct contexts or not (`main`: the chapter's data, whose
    vocabulary and longest sentence the models are built for)."""
    data = build_data(p, distinct, FACTORIAL_MISSES)
    enc = Encoder(data, vocab)
    factory = model_factory(p, main, {"LSTM": vocab, "GPT-2": vocab})
    return FactorialSetting(data, enc, Trainer(p, data, {"LSTM": enc}, factory, track=lambda r: False))


def factorial_runs(ch: Chapter) -> list[tuple[str, str, str, Run | None]]:
    """(context, dedup, arm, run) of every factorial cell; run None for the dropped arm of the second context, which
    trains on the same D_pub as the first's (canary sentences are never public). The step arms run on copies in
    distinct contexts alone, the copies deduplication cannot remove, where DP-SGD is the question."""
    out, g = [], ch.gamma2
    for i, (context, distinct) in enumerate(FACTORIAL_CONTEXTS.items()):
        for dedup_name, dedup in FACTORIAL_DEDUP.items():
            for arm, t in (FACTORIAL_ARMS | (STEP_ARMS if distinct else {})).items():
                rate = ch.dp_lrs[("LSTM", STEP_RATES[arm])] if arm in STEP_RATES else None
                epochs = ch.dp_epochs[("LSTM", "CRT")]  # CRT's budget, public and private, for every arm
                run = None if arm == "dropped" and i else Run("LSTM", t, g, ch.p.seed, dedup, rate, epochs=epochs)
                out.append((context, dedup_name, arm, run))
    return out


def factorial_table(ch: Chapter) -> pd.DataFrame:
    """The LSTM at Fig. 2's γ, one seed, on data whose π misses every canary (the ID format): canary copies in the
    same sentence or in distinct contexts × deduplication on / off × D_pri trained with DP-SGD, plain SGD or dropped.
    Per cell: the unredacted canary copies in D_pri, exposure and its null. Dropping D_pri trains on the same D_pub
    whatever the canaries' contexts (canary sentences are never public), so that arm is trained once per dedup. The
    step arms (STEP_ARMS, on copies in distinct contexts) separate DP-SGD's noise from its step size: its clipped
    steps without noise, and DP-SGD at DPSGD's chosen rate. Cells the cache lacks are trained side by side first
    (build_piece)."""
    from .. import workers

    p, g, vocab = ch.p, ch.gamma2, ch.encoders["LSTM"].vocab
    settings = {c: factorial_setting(p, ch.data, vocab, d) for c, d in FACTORIAL_CONTEXTS.items()}
    key = _settings_key(dict(p))
    _FACTORIAL.update({(key, d): settings[c] for c, d in FACTORIAL_CONTEXTS.items()})  # pieces run here reuse them
    cells = factorial_runs(ch)
    missing = [
        Piece(dict(p), run=run, variant=FACTORIAL_CONTEXTS[c])
        for c, _, _, run in cells
        if run is not None and not settings[c].trainer.path(run).exists()
    ]
    if missing:
        workers.map_on_cores(build_piece, missing, "factorial")
    rows: list[dict] = []
    for context, dedup_name, arm, run in cells:
        s = settings[context]
        copies = float(canary_copies_in_crt(s.data, g, FACTORIAL_DEDUP[dedup_name]).mean())
        if run is None:
            same = next(r for r in rows if r["trainer"] == arm and r["dedup"] == dedup_name)
            rows.append(same | {"canaries": context, "copies_in_d_pri": copies})
            continue
        (_, info), sc = s.train_and_score(p, run)
        rows.append(
            {
                "model": "LSTM",
                "trainer": arm,
                "canaries": context,
                "dedup": dedup_name,
                "gamma": g,
                "attack": "exposure",
                "seeds": 1,
                "gamma_free": False,
                "copies_in_d_pri": copies,
                "d_pri": len(s.enc.ids("private", g, run.dedup)),
                "dp_lr": run.dp_lr,
                "exposure": sc["exposure"],
                **null_columns(np.asarray(sc["exposure_null"])),
                **leak_columns(sc["exposure"], sc["exposure_null"]),
                "epsilon": info["epsilon"],
                "epsilon_dp": info.get("epsilon_dp"),
            }
        )
    return pd.DataFrame(rows)


def _step_words(table: pd.DataFrame, state: Any) -> str:
    """What the step-size arms say of copies in distinct contexts: whether DP-SGD's noise or its small clipped step
    keeps them, and whether DP-SGD still keeps them at DPSGD's larger rate (per dedup setting, the factorial's rules)."""
    _, distinct = FACTORIAL_CONTEXTS
    rates = table.drop_duplicates("trainer").set_index("trainer").dp_lr
    dp, clipped, larger = "DP-SGD (CRT)", *STEP_ARMS
    by = {arm: {d: state(distinct, d, arm) for d in FACTORIAL_DEDUP} for arm in (dp, clipped, larger)}
    states = lambda arm: " and ".join(f"{_READING[by[arm][d]]} with {d}" for d in FACTORIAL_DEDUP)
    if set(by[dp].values()) == {"chance"} and set(by[clipped].values()) == {"leaks"}:
        noise = "without its noise, the clipped arm leaks: the noise, not the small step, keeps them"
    elif set(by[dp].values()) == set(by[clipped].values()) == {"leaks"}:
        noise = "the clipped arm without its noise leaks too: at this rate neither the noise nor the step keeps them"
    elif by[clipped] == by[dp]:
        noise = (
            f"without its noise, the clipped arm reads the same ({states(clipped)}): at this rate the noise adds "
            "nothing the small step does not give"
        )
    else:
        noise = f"without its noise, the clipped arm {states(clipped)}"
    if rates[larger] == rates[dp]:
        return (
            f"DP-SGD at CRT's rate {rates[dp]:g} {states(dp)}; {noise}; DPSGD chose the same rate, so no arm here "
            "varies the step alone"
        )
    step = any(by[larger][d] == "leaks" and by[dp][d] != "leaks" for d in FACTORIAL_DEDUP)
    return (
        f"DP-SGD at CRT's rate {rates[dp]:g}: {noise}; at DPSGD's rate {rates[larger]:g}, DP-SGD {states(larger)}"
        + ("; so what DP-SGD keeps at chance depends on its step size" if step else "")
    )


_READING = {
    "leaks": "leaks",
    "chance": "stays at chance",
    "unclear": f"neither leaks nor is shown less than {EXPOSURE_MARGIN:g} bits above chance",
}


def _factorial_state(table: pd.DataFrame, context: str, dedup: str, arm: str) -> str:
    """'leaks' (exposure above the cell's one-sided 95 % null point, the plain_leaks row's rule), 'chance' (the leak's
    95 % interval ends below the register's margin, the dp_protects row's rule) or 'unclear' (neither), for one factorial
    cell."""
    row = table[(table.canaries == context) & (table.dedup == dedup) & (table.trainer == arm)].iloc[0]
    if row.exposure > row.null_upper:
        return "leaks"
    return "chance" if row.leak_high <= EXPOSURE_MARGIN else "unclear"


def factorial_words(table: pd.DataFrame) -> str:
    """Which component protects the canaries, read off the factorial with the rules of its verdict rows (one seed)."""
    out = []
    for context in FACTORIAL_CONTEXTS:
        parts = []
        for dedup in FACTORIAL_DEDUP:
            c = table[(table.canaries == context) & (table.dedup == dedup)].set_index("trainer")
            parts.append(
                f"{dedup} leaves {c.copies_in_d_pri.iloc[0]:.1f} copies per canary in D_pri, and exposure is "
                + ", ".join(f"{c.exposure[a]:.1f} bits with {a}" for a in FACTORIAL_ARMS)
                + f" (null point {c.null_upper.mean():.1f})"
            )
        out.append(f"With the canary copies in the {context}, " + "; ".join(parts) + ".")
    state = lambda context, dedup, arm: _factorial_state(table, context, dedup, arm)
    on, off = FACTORIAL_DEDUP
    same, distinct = FACTORIAL_CONTEXTS
    plain_same = {d: state(same, d, "plain SGD") for d in (on, off)}
    dedup_protects = plain_same[on] == "chance" and plain_same[off] == "leaks"
    dp_distinct = {d: state(distinct, d, "DP-SGD (CRT)") for d in (on, off)}
    plain_distinct = {d: state(distinct, d, "plain SGD") for d in (on, off)}
    dp_only = set(dp_distinct.values()) == {"chance"} and set(plain_distinct.values()) == {"leaks"}
    if set(STEP_ARMS) <= set(table.trainer):  # and its noise, not its small step: the clipped arm leaks
        dp_only &= {state(distinct, d, next(iter(STEP_ARMS))) for d in (on, off)} == {"leaks"}
    reading = _READING
    dp_same = {d: state(same, d, "DP-SGD (CRT)") for d in (on, off)}
    together = dp_same == {on: "chance", off: "leaks"} and plain_same[on] == "leaks"
    first = (
        "Deduplication protects copies that repeat one sentence"
        if dedup_protects
        else (
            "Copies that repeat one sentence need both: DP-SGD on D_pri stays at chance with dedup on and leaks with "
            f"{off}, and plain SGD leaks the one copy dedup leaves, so neither protects alone"
        )
        if together
        else (
            f"Deduplication does not show here as what protects copies that repeat one sentence: plain SGD on D_pri "
            f"{reading[plain_same[on]]} with {on} and {reading[plain_same[off]]} with {off}"
        )
    )
    second = (
        "only DP-SGD on D_pri protects copies that differ"
        if dp_only
        else (
            "DP-SGD on D_pri does not show here as the only protection of copies that differ: with them, DP-SGD "
            + " and ".join(f"{reading[dp_distinct[d]]} with {d}" for d in (on, off))
            + ", plain SGD "
            + " and ".join(f"{reading[plain_distinct[d]]} with {d}" for d in (on, off))
        )
    )
    lead = (
        "When π misses the canaries' format, CRT's protection has two parts. "
        if dedup_protects and dp_only
        else "When π misses the canaries' format, the factorial reads as follows. "
    )
    if set(STEP_ARMS) <= set(table.trainer):
        second += "; " + _step_words(table, state)
    rule = (
        "(one seed; a cell leaks above its one-sided 95 % null point and stays at chance when its leak's 95 % interval "
        f"ends below +{EXPOSURE_MARGIN:g} bits, the rules of the factorial's verdict rows)"
    )
    return lead + " ".join(out) + f" {first}; {second} {rule}."


# --- tables -------------------------------------------------------------------------------------------------


def pipeline_table(d: Data, p: Any) -> pd.DataFrame:
    """Per γ and dedup reading: π's recall and precision, sizes of D_pub / D_pri, canary copies π leaves."""
    rows = []
    gold = [np.array([label is not None for label in s.labels]) for s in d.sentences]
    for g in p.gammas:
        flags = [d.policy(g).flags(s) for s in d.sentences]
        tp = sum(int((f & t).sum()) for f, t in zip(flags, gold))
        missed = canary_copies_missed(d, g)
        for dedup in redaction.DEDUP_READINGS:
            split = d.split(g, dedup)
            rows.append(
                {
                    "gamma": g,
                    "dedup": dedup,
                    "recall": tp / max(sum(int(t.sum()) for t in gold), 1),
                    "precision": tp / max(sum(int(f.sum()) for f in flags), 1),
                    "sentences": len(d.sentences),
                    "duplicates": int(split.duplicate.sum()),
                    "d_pub": len(split.part(False)),
                    "d_pri": len(split.part(True)),
                    "d_pri_bare_mask": sum(t == [redaction.MASK] for t in split.part(True)),
                    "canary_copies_unredacted": float(missed.mean()),
                }
            )
    return pd.DataFrame(rows)


def sweep_runs(ch: Chapter, model: str) -> list[Run]:
    """The runs of the γ sweep of one model (CRT under the primary dedup reading; γ-free trainers)."""
    return [r for r in ch.models if r.model == model and main_run(r) and r.trainer not in (CONTROL,)]


def _per_gamma(ch: Chapter, model: str) -> dict[tuple[str, float], list[Run]]:
    """(trainer, γ) -> its runs over seeds; γ-free trainers appear at every γ of the model's sweep."""
    gammas = ch.p.gammas if model == "LSTM" else ch.p.gpt_gammas
    out: dict[tuple[str, float], list[Run]] = {}
    for r in sweep_runs(ch, model):
        for g in [r.gamma] if r.gamma is not None else gammas:
            out.setdefault((r.trainer, g), []).append(r)
    return out


def null_columns(null: np.ndarray) -> dict[str, float]:
    """A null distribution's two-sided 95 % band (the figures' shading; its top is the one-sided 97.5 % point an
    equivalence row's interval excludes 0 at) and its one-sided upper 95 % point (a 'leaks' rule at each test)."""
    low, high = stats.null_band(null)
    return {"null_low": low, "null_high": high, "null_upper": float(np.quantile(null, 1 - ALPHA))}


LEAK_POWER = f"power_at_{EXPOSURE_MARGIN:g}_bits"  # the exposure column of the equivalence test's power at its margin
MEAN_LEAK_POWER = f"mean_power_at_{MEAN_MARGIN:g}_bits"  # the same for the mean exposure of the canaries at risk


def leak_columns(
    exposure: float, null: np.ndarray, margin: float = EXPOSURE_MARGIN, prefix: str = ""
) -> dict[str, float]:
    """The leak of a seed-mean exposure statistic (bits above chance; the max over the canaries, or with prefix
    "mean_" their mean) under the register's shift model (claims.LEAK: a δ-bit leak shifts the null by δ): its
    estimate (the statistic − the null's mean), its 95 % interval by inverting the null band (the statistic − the
    null's upper and lower 2.5 % points), and the test's power at the margin, the share of null draws that a leak of
    `margin` bits would lift above the band's top (the interval then excludes 0)."""
    null = np.asarray(null, np.float64)
    low, high = stats.null_band(null)
    return {
        f"{prefix}leak": exposure - float(null.mean()),
        f"{prefix}leak_low": exposure - high,
        f"{prefix}leak_high": exposure - low,
        f"{prefix}power_at_{margin:g}_bits": float(np.mean(null + margin > high)),
    }


def exposure_table(ch: Chapter) -> pd.DataFrame:
    """Seed-mean max exposure over the 10 canaries per (model, trainer, γ), with its null (the seed-mean max exposure
    of 10 fake canaries drawn from the same scored candidates): the 95 % band and the one-sided upper points; and the
    seed-mean exposure of the canaries at risk (runs.canaries_at_risk: those the trainer trains on in some form),
    with its leak over the null of as many fake canaries' mean (the 'at chance' rows' statistic, claims.MEAN_LEAK;
    NaN where no canary is at risk) and, for a cell with none at risk, the same over all 10 (prefix "all_mean_")."""
    rows = []
    for model in MODELS:
        for (trainer, g), runs in _per_gamma(ch, model).items():
            real = np.array([ch.scores[r]["exposure"] for r in runs])
            null = np.mean([ch.scores[r]["exposure_null"] for r in runs], axis=0)
            risk = canaries_at_risk(ch.data, trainer, g)
            mean = lambda at: float(np.mean([np.mean(ch.scores[r]["exposures"][at]) for r in runs]))
            mean_null = lambda k: np.mean([ch.scores[r]["exposure_draws"][:, :k].mean(axis=1) for r in runs], axis=0)
            k = int(risk.sum())
            if k:
                at_risk = {"mean_exposure": mean(risk), **leak_columns(mean(risk), mean_null(k), MEAN_MARGIN, "mean_")}
            else:
                every = np.ones_like(risk)
                at_risk = {"mean_exposure": np.nan, "mean_leak": np.nan, "mean_leak_low": np.nan,
                           "mean_leak_high": np.nan, MEAN_LEAK_POWER: np.nan,
                           **leak_columns(mean(every), mean_null(risk.size), MEAN_MARGIN, "all_mean_")}  # fmt: skip
            rows.append(
                {
                    "model": model,
                    "trainer": trainer,
                    "gamma": g,
                    "seeds": len(runs),
                    "exposure": real.mean(),
                    "exposure_min": real.min(),
                    "exposure_max": real.max(),
                    **null_columns(null),
                    "null_mean": null.mean(),
                    **leak_columns(real.mean(), null),
                    "at_risk": k,
                    **at_risk,
                    "gamma_free": runs[0].gamma is None,
                }
            )
    return pd.DataFrame(rows)


def exposure_view(exposure: pd.DataFrame) -> pd.DataFrame:
    """The exposure table as the page shows it, one row per cell (a γ-free trainer once, at "any" γ): its trained
    models, the seed-mean max exposure, that max's leak and the leak of the canaries at risk (bits over each one's
    null, with the 95 % interval), and how many canaries are at risk."""
    cells = exposure[~exposure.gamma_free | ~exposure.duplicated(subset=["model", "trainer"])]
    leak = lambda c, prefix: (
        f"{c[prefix + 'leak']:+.1f} [{c[prefix + 'leak_low']:+.1f}, {c[prefix + 'leak_high']:+.1f}]"
    )
    return pd.DataFrame(
        [
            {
                "model": c.model,
                "trainer": c.trainer,
                "γ": "any" if c.gamma_free else f"{c.gamma:g}",
                "models": int(c.seeds),
                "max exposure (bits)": f"{c.exposure:.1f}",
                "max leak (bits)": leak(c, ""),
                "canaries at risk": int(c.at_risk),
                "mean leak at risk (bits)": leak(c, "mean_") if c.at_risk else "none at risk",
            }
            for _, c in cells.iterrows()
        ]
    )


BEAM_WIDTHS = (1, 10, 100, 1000)  # the extraction search's beam widths: greedy to a thousand survivors


def extraction_table(ch: Chapter) -> pd.DataFrame:
    """Canary extraction beside exposure (ours; Carlini et al.'s Secret Sharer): per (model, trainer, γ), how many of
    the 10 canaries a beam search after "My ID is:" ends with, at each width (canary.beam_search; seed mean, with the
    fewest and most over seeds at the widest), and what a model that never saw them would give on average (each
    survivor a canary with probability 10 / 10^6)."""
    rows = []
    for model in MODELS:
        for (trainer, g), runs in _per_gamma(ch, model).items():
            found = {w: np.array([ch.scores[r]["extracted"][w] for r in runs]) for w in BEAM_WIDTHS}
            widest = found[BEAM_WIDTHS[-1]]
            rows.append(
                {"model": model, "trainer": trainer, "gamma": g, "seeds": len(runs),
                 **{f"width_{w}": float(found[w].mean()) for w in BEAM_WIDTHS},
                 f"width_{BEAM_WIDTHS[-1]}_min": int(widest.min()), f"width_{BEAM_WIDTHS[-1]}_max": int(widest.max()),
                 "chance_at_widest": N_CANARIES * BEAM_WIDTHS[-1] / 10**CANARY_DIGITS,
                 "gamma_free": runs[0].gamma is None}
            )  # fmt: skip
    return pd.DataFrame(rows)


def extraction_words(extraction: pd.DataFrame) -> str:
    """What the extraction table says, per model: the canaries a beam search reads off the non-private model and off
    CRT (at its worst γ), at the narrowest and widest beams."""
    first, last = BEAM_WIDTHS[0], BEAM_WIDTHS[-1]
    out = []
    for model in MODELS:
        t = extraction[extraction.model == model]
        npv = t[(t.trainer == "non-private") & (t.gamma == 0)].iloc[0]
        crt = t[t.trainer == "CRT"]
        worst = crt.loc[crt[f"width_{last}"].idxmax()]
        mask = t[(t.trainer == "non-private + mask") & (t.gamma > 0)]
        crt_words = (
            "CRT gives up none at any γ"
            if worst[f"width_{last}"] == 0
            else f"CRT gives up at most {worst[f'width_{last}']:.1f} (γ = {worst.gamma:g})"
        )
        out.append(
            f"**{NAMES[model]}.** A greedy search (width {first}) reads {npv[f'width_{first}']:.1f} of the 10 canaries "
            f"off the non-private model, a beam of width {last:,} reads {npv[f'width_{last}']:.1f}; redaction alone "
            f"for γ > 0 gives up {_span(mask[f'width_{last}'])} at width {last:,}, and {crt_words}, where a model "
            f"that never saw the canaries would give up {npv.chance_at_widest:.2f} on average."
        )
    return "\n\n".join(out)


def mia_table(ch: Chapter) -> pd.DataFrame:
    """Seed-mean accuracy of each MIA per (model, trainer, γ), with its permutation null (the 95 % band and the
    one-sided upper point) and, for CRT's cells, which its 'at chance' equivalence rows read, a percentile interval over
    N_BOOT resamples of the pairs within each fold (membership_attacks.fold_draws: the same draws for every seed and
    cell; NaN elsewhere)."""
    rows = []
    designs = attack_designs(ch.data, ch.p.n_groups, ch.p.seed)
    draws = {a: membership_attacks.fold_draws(designs[a], N_BOOT, [ch.p.seed, 10]) for a in ATTACKS}
    for model in MODELS:
        for (trainer, g), runs in _per_gamma(ch, model).items():
            for attack in ATTACKS:
                acc = np.array([ch.scores[r]["mia"][attack]["accuracy"] for r in runs])
                null = np.mean([ch.scores[r]["mia"][attack]["null"] for r in runs], axis=0)
                boot = _resampled(ch, runs, attack, draws[attack], designs[attack]) if trainer == "CRT" else [np.nan]
                rows.append(
                    {
                        "model": model,
                        "trainer": trainer,
                        "gamma": g,
                        "attack": attack,
                        "seeds": len(runs),
                        "pairs": len(ch.data.address_pairs if attack == "address" else ch.data.pairs),
                        "accuracy": acc.mean(),
                        "accuracy_low": float(np.quantile(boot, ALPHA / 2)),
                        "accuracy_high": float(np.quantile(boot, 1 - ALPHA / 2)),
                        **null_columns(null),
                        "gamma_free": runs[0].gamma is None,
                    }
                )
    return pd.DataFrame(rows)


def _resampled(
    ch: Chapter, runs: list[Run], attack: str, draws: np.ndarray, design: Any = None, per_seed: bool = False
) -> np.ndarray:
    """Seed-mean accuracy of one attack on `runs` under each row of pair draws (the same draws for every seed), or
    with `per_seed` each seed's (seeds, draws); its design (attack_designs) built here unless given."""
    design = design or attack_designs(ch.data, ch.p.n_groups, ch.p.seed)[attack]
    each = np.array(
        [
            membership_attacks.resampled_accuracies(
                design, ch.scores[r]["mia"][attack]["members"], ch.scores[r]["mia"][attack]["nonmembers"], draws
            )
            for r in runs
        ]
    )
    return each if per_seed else each.mean(axis=0)


def seeds_resampled(per_seed: np.ndarray, seed: int) -> np.ndarray:
    """Two-stage resamples of a seed-mean statistic: in each of the draws (columns of `per_seed`, already resampled
    within the seeds' pairs), the trained models drawn with replacement too, so that the spread covers training
    randomness; one model gives its draws back unchanged."""
    n_seeds, n_draws = per_seed.shape
    picks = np.random.default_rng(seed).integers(0, n_seeds, size=(n_seeds, n_draws))
    return np.take_along_axis(per_seed, picks, axis=0).mean(axis=0)


def mia_power_table(ch: Chapter, mia: pd.DataFrame) -> pd.DataFrame:
    """Per (model, redacting trainer, γ > 0): the individual and group MIA, and group − individual with a two-stage
    percentile interval, the trained models resampled and the pairs within the attacks' folds (the two designs share
    them), Bonferroni-widened over the cells that decide Fig. 5's claim (`decides`: the cells of several trained
    models, whose interval covers training randomness, where there are any; else every cell). The attacks' power, at
    effects fixed in advance, is table attack_power's."""
    rows, diffs = [], []
    draws = membership_attacks.fold_draws(
        attack_designs(ch.data, ch.p.n_groups, ch.p.seed)["individual"], N_BOOT, ch.p.seed + 7
    )
    for model in MODELS:
        per_gamma = _per_gamma(ch, model)
        for trainer in ("non-private + mask", "S-DP"):
            for g in sorted(g for t, g in per_gamma if t == trainer and g > 0):
                runs = per_gamma[trainer, g]
                cell = mia[(mia.model == model) & (mia.trainer == trainer) & (mia.gamma == g)].set_index("attack")
                group, individual = (_resampled(ch, runs, a, draws, per_seed=True) for a in ("group", "individual"))
                diffs.append(seeds_resampled(group - individual, ch.p.seed + 8))
                rows.append(
                    {
                        "model": model,
                        "trainer": trainer,
                        "gamma": g,
                        "seeds": len(runs),
                        "individual": cell.accuracy["individual"],
                        "individual_null_upper": cell.null_upper["individual"],
                        "group": cell.accuracy["group"],
                        "group_null_upper": cell.null_upper["group"],
                        "group_minus_individual": cell.accuracy["group"] - cell.accuracy["individual"],
                    }
                )
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    cells = group_vs_individual_cells(frame)
    frame["decides"] = frame.index.isin(cells.index) & (frame.seeds >= 2 if (cells.seeds >= 2).any() else True)
    tail = ALPHA / int(frame.decides.sum()) / 2
    frame["diff_low"] = [float(np.quantile(d, tail)) for d in diffs]
    frame["diff_high"] = [float(np.quantile(d, 1 - tail)) for d in diffs]
    return frame


def _pairs_of(ch: Chapter, runs: list[Run], attack: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Each run's member and look-alike perplexities of one attack's pairs."""
    mia = [ch.scores[r]["mia"][attack] for r in runs]
    return [np.asarray(x["members"], float) for x in mia], [np.asarray(x["nonmembers"], float) for x in mia]


def _paired_cells(ch: Chapter, scores: Any) -> Iterator[dict]:
    """One row per (set of pairs, model, trainer, γ) cell of the paired statistic on the member and look-alike scores
    `scores(model, trainer, γ, runs, attack)` gives (a list per seed each; None skips the cell): the seed-mean share of
    pairs whose member scores lower, a percentile interval over N_BOOT resamples of the pairs (the same draws for
    every seed and cell), and its paired permutation null (n_null draws, each pair swapped alike in every seed's model:
    the pairs are the data seed's)."""
    for attack, name in PAIR_SETS.items():
        n_pairs = len(ch.data.address_pairs if attack == "address" else ch.data.pairs)
        if n_pairs == 0:
            continue
        draws = np.random.default_rng([ch.p.seed, 8]).integers(0, n_pairs, (N_BOOT, n_pairs))
        for model in MODELS:
            for (trainer, g), runs in _per_gamma(ch, model).items():
                found = scores(model, trainer, g, runs, attack)
                if found is None:
                    continue
                m, n = found
                boot = np.mean([membership_attacks.paired_shares(a[draws], b[draws]) for a, b in zip(m, n)], axis=0)
                null = membership_attacks.simulated_statistic(
                    membership_attacks.paired_shares, m, n, 0.5, ch.p.n_null, ch.p.seed
                )
                yield {
                    "model": model,
                    "trainer": trainer,
                    "gamma": g,
                    "attack": attack,
                    "pairs": name,
                    "n_pairs": n_pairs,
                    "seeds": len(runs),
                    "share": float(np.mean([membership_attacks.paired_share(a, b) for a, b in zip(m, n)])),
                    "share_low": float(np.quantile(boot, ALPHA / 2)),
                    "share_high": float(np.quantile(boot, 1 - ALPHA / 2)),
                    **null_columns(null),
                    "gamma_free": runs[0].gamma is None,
                }


def paired_table(ch: Chapter, mia: pd.DataFrame) -> pd.DataFrame:
    """Our paired MIA beside the paper's threshold attack: per (model, trainer, γ) and set of pairs, the share of pairs
    whose member beats its look-alike (lower perplexity), with its interval and null (_paired_cells); the threshold
    attack's accuracy on the same pairs beside."""
    rows = []
    for row in _paired_cells(ch, lambda model, trainer, g, runs, attack: _pairs_of(ch, runs, attack)):
        attack = row.pop("attack")
        at = mia[(mia.model == row["model"]) & (mia.trainer == row["trainer"]) & (mia.gamma == row["gamma"])]
        rows.append(row | {"threshold_accuracy": float(at[at.attack == attack].accuracy.iloc[0])})
    return pd.DataFrame(rows)


def power_column(win_rate: float) -> str:
    """The attack_power column of the power at one member win rate."""
    return f"power_at_{win_rate:g}"


def attack_power_table(ch: Chapter, mia: pd.DataFrame, paired: pd.DataFrame) -> pd.DataFrame:
    """Per MIA cell an attack row decides (redaction alone and S-DP at γ > 0, CRT at every γ) and per statistic (the
    paper's threshold attack, our paired share): the power of the row's test by simulation at the member win rates
    fixed in the register (claims.WIN_RATES) and at 0.5 (no effect: the test's size). Power is the share of N_POWER
    worlds (membership_attacks.simulated_statistic over the cell's own pairs, a pair labelled alike in every model) in
    which the seed-mean statistic clears the point the row compares with: one-sided 95 % for a 'rises' row; for CRT's
    'at chance' rows (equivalence tests) the top of the two-sided 95 % band, where a cell's interval excludes chance.
    It does not depend on the effect the run shows."""
    designs = attack_designs(ch.data, ch.p.n_groups, ch.p.seed)
    rows = []
    for trainer, short, which in POWER_CELLS:
        point = "null_high" if short == "crt" else "null_upper"
        for model in ATTACK_MODELS[short]:
            per_gamma = _per_gamma(ch, model)
            for g in sorted(g for t, g in per_gamma if t == trainer and (which == "all" or g > 0)):
                runs = per_gamma[trainer, g]
                at = lambda t: t[(t.model == model) & (t.trainer == trainer) & (t.gamma == g)]
                threshold, shares = at(mia).set_index("attack"), at(paired).set_index("pairs")
                cells = [
                    ("threshold (paper)", a, a, membership_attacks.threshold_statistic(designs[a]), threshold.loc[a])
                    for a in ATTACKS
                ]
                cells += [
                    ("paired (ours)", name, a, membership_attacks.paired_shares, shares.loc[name])
                    for a, name in PAIR_SETS.items()
                    if name in shares.index
                ]
                for statistic, attack, pairs, function, row in cells:
                    m, n = _pairs_of(ch, runs, pairs)
                    simulate = lambda w: membership_attacks.simulated_statistic(
                        function, m, n, w, N_POWER, ch.p.seed + 9
                    )
                    worlds = {w: simulate(w) for w in (0.5, *WIN_RATES)}
                    powers = {power_column(w): float(np.mean(v > row[point])) for w, v in worlds.items()}
                    if short == "crt" and statistic.startswith("threshold"):  # margin on accuracy: its win rate
                        powers |= _power_at_accuracy(simulate, worlds, row[point], 0.5 + EQUIVALENCE_MARGIN)
                    rows.append(
                        {
                            "model": model,
                            "trainer": trainer,
                            "gamma": g,
                            "statistic": statistic,
                            "attack": attack,
                            "seeds": len(runs),
                            "observed": float(row["accuracy" if statistic.startswith("threshold") else "share"]),
                            "point": float(row[point]),
                            "level": "one-sided 97.5 % (equivalence)" if short == "crt" else "one-sided 95 %",
                            **powers,
                        }
                    )
    return pd.DataFrame(rows)


MARGIN_POWER = "power_at_margin"  # attack_power: a CRT threshold cell's power where the attack's accuracy is the margin


def _power_at_accuracy(simulate: Any, worlds: dict[float, np.ndarray], point: float, accuracy: float) -> dict:
    """The power of a threshold attack's equivalence cell at its margin on the accuracy scale: the member win rate at
    which the simulated worlds' mean accuracy reaches `accuracy` (linear between the win rates simulated, more
    simulated up to 1 as needed; `margin_win_rate`), and the share of worlds simulated there whose accuracy clears
    `point` (MARGIN_POWER). A threshold attack's accuracy rises more slowly than the win rate, so the power at win rate
    0.55 understates the power at accuracy 0.55. `worlds` is left as given (the further win rates go to a copy)."""
    worlds = dict(worlds)
    rates = sorted(worlds)
    means = [float(worlds[w].mean()) for w in rates]
    for w in (0.7, 0.8, 0.9, 1.0):
        if means[-1] >= accuracy:
            break
        worlds[w] = simulate(w)
        rates.append(w)
        means.append(float(worlds[w].mean()))
    if means[-1] < accuracy:  # even members that always win do not reach the margin: no power at it
        return {"margin_win_rate": np.nan, MARGIN_POWER: 0.0}
    at = float(np.interp(accuracy, np.maximum.accumulate(means), rates))
    return {"margin_win_rate": at, MARGIN_POWER: float(np.mean(simulate(at) > point))}


def power_view(power: pd.DataFrame) -> pd.DataFrame:
    """attack_power as the page shows it: per (model, trainer, statistic, attack), the power at each win rate of its
    weakest γ cell (for CRT's threshold attacks also at the accuracy margin), and, for the 'rises' rows, of their rule, which needs every γ cell to clear its point (the product
    over the cells, as if they were independent: their models are, but they share their pairs and simulated labels,
    so the rule's power lies between this product and the weakest cell's; empty for CRT's equivalence rows)."""
    out = []
    for key, t in power.groupby(["model", "trainer", "statistic", "attack"], sort=False):
        row = dict(zip(("model", "trainer", "statistic", "attack"), key)) | {"gamma cells": len(t)}
        row["size (0.5)"] = t[power_column(0.5)].max()
        for w in WIN_RATES:
            row[f"weakest at {w:g}"] = t[power_column(w)].min()
            rises = key[1] != "CRT"  # CRT's rows are equivalence tests: each cell's power is shown, not a product
            row[f"every γ at {w:g}"] = t[power_column(w)].prod() if rises else np.nan
        at_margin = t[MARGIN_POWER] if MARGIN_POWER in t else pd.Series(dtype=float)
        row[f"weakest at accuracy {0.5 + EQUIVALENCE_MARGIN:g}"] = (
            at_margin.min() if at_margin.notna().any() else np.nan
        )
        out.append(row)
    return pd.DataFrame(out)


def utility_runs(ch: Chapter) -> dict[tuple[str, str], list[Run]]:
    """(model, trainer label) -> runs over seeds at Fig. 2's γ (γ-free trainers and both CRT readings included)."""
    out: dict[tuple[str, str], list[Run]] = {}
    for r in ch.models:
        if r.gamma in (None, ch.gamma2):
            out.setdefault((r.model, r.label), []).append(r)
    return out


def perplexity(ch: Chapter, runs: list[Run], kind: str, versus: list[Run] | None = None) -> stats.Interval:
    """Test perplexity of `runs` (or its ratio to `versus`, paired by seed), the seeds' geometric mean, with a
    two-stage interval over the test dialogues and the sentences within them, seeds on top, on the log scale."""
    a = np.stack([nll_of(ch.scores[r]["nll"], kind)[0] for r in runs])
    counts = nll_of(ch.scores[runs[0]]["nll"], kind)[1]
    b = None if versus is None else np.stack([nll_of(ch.scores[r]["nll"], kind)[0] for r in versus])
    return dialogue_perplexity(a, counts, b, dialogues_of(ch.data.test), seed=ch.p.seed)


def confidentiality_epsilon(trainer: str, gamma: float | None, epsilon: float) -> float:
    """A run's confidentiality ε as the budgets table shows it: S-DP with a policy that misses secrets (γ > 0) trains
    on the missed ones with plain steps, so its ε is infinite whatever its DP steps spend (Fig. 2's caption); every
    other run keeps its own (CRT's amplified ε_conf, DPSGD's ε; NaN for trainers without DP steps)."""
    return math.inf if trainer == "S-DP" and gamma is not None and gamma > 0 else epsilon


def epsilon_text(epsilon: float) -> str:
    """An ε as the page prints it: '∞', '—' where there is none, else three significant digits."""
    if epsilon == math.inf:
        return "∞"
    return "—" if not math.isfinite(epsilon) else f"{epsilon:.3g}"


def budget_view(utility: pd.DataFrame) -> pd.DataFrame:
    """The budgets table as shown: confidentiality ε and the DP steps' own ε as text (S-DP at γ > 0: ∞ beside a finite
    DP-SGD ε)."""
    view = utility[["model", "trainer", "gamma", "public_steps", "private_steps", "epsilon", "epsilon_dp"]].copy()
    view["epsilon"] = view.epsilon.map(epsilon_text)
    view["epsilon_dp"] = view.epsilon_dp.map(epsilon_text)
    return view.join(utility.train_seconds).rename(columns={"epsilon": "confidentiality ε", "epsilon_dp": "DP-SGD ε"})


def group_table(ch: Chapter, utility: pd.DataFrame) -> pd.DataFrame:
    """Prop. 7 and Theorem 8 as numbers, for the LSTM at Fig. 2's γ: a group is one canary's inserted copies. Per
    trainer, the copies of a canary it trains on with the digits in the clear (mean and most over the 10 canaries) and
    the group's confidentiality ε, the copies times the ε each costs (group privacy; ∞ where a copy is trained with a
    plain step): DPSGD pays for every copy; CRT, after deduplication, for the one unique copy, and only where π misses
    it (Prop. 5 and 7: ε(Unique(S)))."""
    g, k = ch.gamma2, ch.p.canary_copies
    missed, unique = canary_copies_missed(ch.data, g), canary_copies_in_crt(ch.data, g)
    eps = utility[utility.model == "LSTM"].set_index("trainer")
    seen = {
        "non-private": (np.full(N_CANARIES, k), math.inf),
        "non-private + mask": (missed, math.inf),
        "S-DP": (missed, math.inf),  # a missed copy takes S-DP's plain step
        "DPSGD": (np.full(N_CANARIES, k), eps.loc["DPSGD", "epsilon_dp"]),
        MATCHED_LABEL: (np.full(N_CANARIES, k), eps.loc[MATCHED_LABEL, "epsilon_dp"]),
        "CRT": (unique, eps.loc["CRT", "epsilon_dp"]),  # its D_pri steps, where π_c sends the canary
    }
    rows = []
    for trainer, (copies, per_copy) in seen.items():
        worst = int(copies.max())
        group = 0.0 if worst == 0 else math.inf if math.isinf(per_copy) else worst * per_copy
        rows.append({"trainer": trainer, "copies_inserted": k, "copies_in_clear": float(copies.mean()),
                     "copies_in_clear_most": worst, "epsilon_per_copy": per_copy, "group_epsilon": group})  # fmt: skip
    return pd.DataFrame(rows)


def group_words(group: pd.DataFrame, gamma: float) -> str:
    """What the group table says: DPSGD's group ε against CRT's."""
    t = group.set_index("trainer")
    return (
        f"A group here is one canary's {int(t.loc['CRT', 'copies_inserted'])} copies. DPSGD trains on all of them, and "
        f"group privacy adds their costs: ε = {t.loc['DPSGD', 'group_epsilon']:.3g} for the group (each copy "
        f"{t.loc['DPSGD', 'epsilon_per_copy']:.3g}). After deduplication CRT keeps at most one copy of a canary, and "
        f"at γ = {gamma:g} π misses it for {t.loc['CRT', 'copies_in_clear']:.0%} of the canaries: the group costs "
        f"at most ε = {t.loc['CRT', 'group_epsilon']:.3g} (Prop. 7: the group's unique members count, once each). "
        "Redaction alone and S-DP train a missed copy with plain steps, so their group ε is ∞."
    )


def utility_table(ch: Chapter) -> pd.DataFrame:
    """Per (model, trainer) at Fig. 2's γ: three test perplexities with intervals, ε, steps and training time."""
    rows = []
    for (model, label), runs in utility_runs(ch).items():
        info = [ch.models[r][1] for r in runs]
        row = {"model": model, "trainer": label, "gamma": runs[0].gamma, "seeds": len(runs)}
        for kind in PERPLEXITIES:
            iv = perplexity(ch, runs, kind)
            row |= {f"ppl_{kind}": iv.estimate, f"ppl_{kind}_low": iv.low, f"ppl_{kind}_high": iv.high}
        eps = [i["epsilon"] for i in info if i["epsilon"] is not None]
        eps_dp = [i["epsilon_dp"] for i in info if i.get("epsilon_dp") is not None]
        row |= {
            "epsilon": confidentiality_epsilon(label, runs[0].gamma, float(np.mean(eps)) if eps else np.nan),
            "epsilon_dp": float(np.mean(eps_dp)) if eps_dp else np.nan,
            "public_steps": info[0]["public_steps"],
            "private_steps": info[0]["private_steps"],
            "train_seconds": float(np.mean([i["train_seconds"] for i in info])),
        }
        rows.append(row)
    order = {t: i for i, t in enumerate(("non-private", CONTROL, "non-private + mask", "S-DP", "DPSGD", "CRT"))}
    frame = pd.DataFrame(rows)
    return frame.sort_values(["model", "trainer"], key=lambda c: c.map(order).fillna(9) if c.name == "trainer" else c)


def gap_table(ch: Chapter) -> pd.DataFrame:
    """CRT's test-NLL gap to non-private, in nats per test token, split into first token, secrets and ordinary
    tokens (seed means; shares of the total gap), under both dedup readings and for the D_pub-only control."""
    groups, rows = utility_runs(ch), []
    for model in MODELS:
        base = groups[model, "non-private"]
        n = ch.scores[base[0]]["nll"]["n_total"].sum()

        def mean_sum(runs: list[Run], part: str) -> float:
            """Seed mean of the NLL summed over the test set for one token category."""
            return float(np.mean([ch.scores[r]["nll"][part].sum() for r in runs]))

        for label in ("CRT", ALTERNATE_LABEL, CONTROL):
            if (model, label) not in groups:
                continue
            parts = {
                k: (mean_sum(groups[model, label], k) - mean_sum(base, k)) / n for k in ("first", "secret", "ordinary")
            }
            total = sum(parts.values())
            rows.append(
                {
                    "model": model,
                    "versus non-private": label,
                    "gap_nats_per_token": total,
                    **{f"gap_{k}": v for k, v in parts.items()},
                    **{f"share_{k}": v / total if total else np.nan for k, v in parts.items()},
                }
            )
    return pd.DataFrame(rows)


def fig2_runs(gamma2: float) -> dict[tuple[str, float | None], str]:
    """(trainer, γ) -> label of the runs Fig. 2 draws per epoch (first seed); the tuning candidates are among them."""
    return {
        ("non-private", None): "non-private",
        ("DPSGD", None): "DPSGD",
        ("S-DP", 0.0): "S-DP (perfect policy)",
        ("CRT", gamma2): "CRT",
    }


def history_table(ch: Chapter) -> pd.DataFrame:
    """Fig. 2 as the paper draws it: per epoch of one run (first seed), perplexity against the ε spent so far (non-secret
    validation perplexity, `validation`; raw test perplexity after the last epoch, `perplexity`): DPSGD, S-DP with a
    perfect policy (γ = 0) and CRT at Fig. 2's γ (confidentiality ε); and DPSGD trained to CRT's confidentiality ε
    after its last epoch alone (it is not tracked per epoch)."""
    rows = []
    first, wanted = ch.p.seed, fig2_runs(ch.gamma2)
    for r, (_, info) in ch.models.items():
        if r.seed != first:
            continue
        if main_run(r) and (r.trainer, r.gamma) in wanted:
            rows += [{"model": r.model, "trainer": wanted[r.trainer, r.gamma], **h} for h in info["history"]]
        elif r.label == MATCHED_LABEL:
            rows.append({"model": r.model, "trainer": MATCHED_LABEL, **info["history"][-1]})
    return pd.DataFrame(rows)


def amplification_table(p: Any) -> pd.DataFrame:
    """Fig. 6: ε_conf against γ for each ε′ (autodp, q = 0.1, 100 steps, δ = 8e-5). The table depends on these
    constants alone: it is computed once (5 s) and kept in data/crt, keyed by them and autodp's version."""
    from importlib.metadata import version

    inputs = {"epsilons": sorted({1.0, *AMP_EPSILONS}), "gammas": [0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5]}
    inputs |= {"q": 0.1, "steps": 100, "delta": DELTA}

    def compute(tmp: Any) -> None:
        rows = [
            r
            for e in inputs["epsilons"]
            for r in accounting.amplification(e, inputs["gammas"], inputs["q"], inputs["steps"], inputs["delta"])
        ]
        tmp.write_text(json.dumps(rows))

    path = cache.entry_path("crt", "amplification", inputs, version("autodp"), suffix=".json")
    return pd.DataFrame(cache.file_entry(path, compute, cache.read_json)[0])


def benchmark(ch: Chapter, model: str) -> list[dict]:
    """Naive enumeration against the prefix tree on one model's first non-private run: a measured and an
    extrapolated row."""
    run = next(r for r in ch.models if r.model == model and r.trainer == "non-private")
    net, enc, digits = ch.models[run][0], ch.encoders[model], BENCH_DIGITS
    context = enc.vocab.encode(["My", "ID", "is", ":"])[:-1]
    digit_ids = [enc.vocab.token_id(str(d)) for d in range(10)]
    stepper, batch = STEPPERS[model]
    t0 = time.perf_counter()
    naive = canary.brute_force_scores(
        lambda s: language_model.suffix_logprob(net, s, digits), context, digit_ids, digits
    )
    naive_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    small = canary_scores(stepper(net), enc, digits, batch)
    tree_small_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    canary_scores(stepper(net), enc, CANARY_DIGITS, batch)
    tree_full_s = time.perf_counter() - t0
    scale = 10 ** (CANARY_DIGITS - digits) * (len(context) + CANARY_DIGITS) / (len(context) + digits)
    return [
        {
            "model": model,
            "space": 10**digits,
            "naive_seconds": naive_s,
            "tree_seconds": tree_small_s,
            "ratio": naive_s / tree_small_s,
            "max_abs_score_diff": float(np.abs(naive - small).max()),
            "naive_measured": True,
        },
        {
            "model": model,
            "space": 10**CANARY_DIGITS,
            "naive_seconds": naive_s * scale,
            "tree_seconds": tree_full_s,
            "ratio": naive_s * scale / tree_full_s,
            "max_abs_score_diff": np.nan,
            "naive_measured": False,
        },
    ]


def benchmark_table(ch: Chapter) -> pd.DataFrame:
    """The enumeration benchmark of both models."""
    return pd.DataFrame([row for model in MODELS for row in benchmark(ch, model)])


# --- verdict rows ---------------------------------------------------------------------------------------------


def _trained(n: int) -> str:
    """What varies across the models behind a seed mean, for the test column."""
    if n == 1:
        return "1 trained model (training randomness not covered)"
    return f"mean over {n} trained models (seeds: initialization and batch order)"


def _band_row(claim: Claim, frame: pd.DataFrame, value: str, cause: Any, power: pd.Series | None = None) -> dict:
    """Judge a 'leaks' (above-null) claim over several (model, γ) cells: each must clear its cell's one-sided 95 %
    point. The row shows the cell that decides the claim (the first that fails, else the one nearest its point);
    `cause(model, γ)` gives the cause of a failure: (cause, sentence), or ((cause, sentence), the table that measures
    it). `power`, each cell's power at the register's first win rate (aligned with `frame`): the failing cell with the
    strongest test decides, so that one well-powered failure makes the row 'not held' whatever the order of the
    cells, and failures only at tests weaker than the floor leave it inconclusive (verdict.judge), since failing to
    clear a weak test does not show the rise absent."""
    if claim.rule.kind != "above_null":
        raise ValueError(f"claim {claim.claim!r}: a band row judges a 'leaks' rule; 'at chance' is an equivalence row")
    frame = frame[
        ~frame.gamma_free | ~frame.duplicated(subset=[c for c in ("model", "trainer", "attack") if c in frame])
    ]
    decided = [(claim.rule.decide(r[value], r.null_low, r.null_upper), r) for _, r in frame.iterrows()]
    failing = [r for d, r in decided if d != "held"]
    if failing and power is not None:
        failing = sorted(failing, key=lambda r: -float(power.loc[r.name]))  # stable: the first of equal powers
    row = failing[0] if failing else min((r for _, r in decided), key=lambda r: r[value] - r.null_upper)
    where = f"{NAMES[row.model]}" + ("" if row.gamma_free else f" at γ = {row.gamma:g}")
    where = f"{row.trainer}, {where}" if "trainer" in row and frame.trainer.nunique() > 1 else where
    extra = f" {row.attack} MIA" if "attack" in row and frame.attack.nunique() > 1 else ""
    deciding = "its weakest cell, the nearest its point"
    if failing:
        deciding = "the failing cell of strongest test" if power is not None else "its first failing cell"
    test = (
        f"one-sided 95 %; every one of {len(frame)} cells must pass, so the row reads {deciding}: {where}{extra}, "
        f"{_trained(int(row.seeds))}"
    )
    why, table = cause(row.model, float(row.gamma)), ""
    if isinstance(why[0], tuple):
        why, table = why
    weak = None
    if failing and power is not None:
        weak = (
            float(power.loc[row.name]),
            f"member win rate {WIN_RATES[0]:g} at the deciding cell (table attack_power)",
        )
    return judge(claim, row[value], (row.null_low, row.null_upper), test, why=why, measured_by=table, power=weak)


def _cells(table: pd.DataFrame, trainer: str, short: str, gammas: str, attack: str | None = None) -> pd.DataFrame:
    """The exposure or MIA cells one claim decides: its trainer on the models it judges, at γ = 0, γ > 0 or every γ
    (a γ-free trainer once)."""
    rows = table[(table.trainer == trainer) & table.model.isin(ATTACK_MODELS[short])]
    if attack is not None:
        rows = rows[rows.attack == attack]
    if gammas == "zero":
        return rows[rows.gamma == 0.0]
    return rows[rows.gamma > 0] if gammas == "positive" else rows


def _missed_words(ch: Chapter, gamma: float) -> str:
    """How many of each canary's copies π leaves unredacted at γ, in words."""
    missed = canary_copies_missed(ch.data, gamma)
    return f"π leaves {missed.mean():.1f} of each canary's {ch.p.canary_copies} copies unredacted at γ = {gamma:g}"


def _rate_words(values: list[float]) -> str:
    """Powers at the register's win rates, 'a / b'."""
    return " / ".join(f"{v:.2f}" for v in values)


def _every_cell(n: int) -> str:
    """'each of its n cells to clear its point', in words."""
    return "its one cell to clear its point" if n == 1 else f"each of its {n} cells to clear its point"


def _power_cause(ch: Chapter, power: pd.DataFrame, trainers: tuple[str, ...], statistic: str, attack: str) -> Any:
    """The cause of a 'rises' MIA row not held at (model, γ): unknown, naming the larger design that would tell, with
    the design's power at the member win rates fixed in the register (table `attack_power`): at the deciding cell, and
    for the row's rule, which needs every (trainer, model, γ) cell to clear its point (the product of the cells'
    powers, a lower bound: power_view); a threshold row also gives our paired statistic's. No published table varies the design, so the power is
    reported, not a measured cause."""
    rows = power[power.trainer.isin(trainers)]
    cells = rows[(rows.statistic == statistic) & (rows.attack == attack)]
    every = [cells[power_column(w)].prod() for w in WIN_RATES]
    n_pairs = len(ch.data.pairs)
    design = (
        f"{ch.p.n_groups} groups of {GROUP} from {n_pairs} pairs; the paper's 2,000 groups"
        if attack == "group"
        else f"{n_pairs} pairs; the paper's 1,000"
    )
    rates = " / ".join(f"{w:g}" for w in WIN_RATES)
    beside = ""
    if statistic != "paired (ours)":
        paired = rows[(rows.statistic == "paired (ours)") & (rows.attack == "all secrets")]
        beside = f"; our paired statistic on the same pairs {_rate_words([paired[power_column(w)].prod() for w in WIN_RATES])}"
    name = "paired" if statistic == "paired (ours)" else attack

    def cause(model: str, g: float) -> Any:
        cell = cells[(cells.model == model) & (cells.gamma == g)]
        here = [cell[power_column(w)].min() for w in WIN_RATES] if len(cell) else [math.nan] * len(WIN_RATES)
        return unexplained(
            f"a larger {name} design than this one ({design}; at member win rates {rates}, fixed in the register, "
            f"its test has power {_rate_words(here)} at the deciding cell, {NAMES[model]} at γ = {g:g}, and the row's "
            f"rule, which needs {_every_cell(len(cells))}, {_rate_words(every)}{beside}: table attack_power)"
        )

    return cause


class Equivalence(NamedTuple):
    """How an 'at chance' row reads its cells: the columns of the statistic and its 95 % interval, how the interval
    was made (in words), each cell's power at the margin and the effect it was simulated at."""

    value: str
    low: str
    high: str
    interval: str
    power: pd.Series
    effect: str
    lever: str = "pairs and seeds"  # what more of would narrow the interval (an inconclusive row says how much)


def _mia_power(
    cells: pd.DataFrame, power: pd.DataFrame, statistic: str, attack: str, column: str | None = None
) -> pd.Series:
    """Each (model, trainer, γ) cell's power (table attack_power) at the register's first win rate, or in `column`,
    aligned with `cells`."""
    at = power[(power.statistic == statistic) & (power.attack == attack)]
    by_cell = at.set_index(["model", "trainer", "gamma"])[column or power_column(WIN_RATES[0])]
    keys = zip(cells.model, cells.trainer, cells.gamma)
    return pd.Series([float(by_cell[m, t, g]) for m, t, g in keys], index=cells.index)


def _equivalence_row(
    claim: Claim,
    cells: pd.DataFrame,
    how: Equivalence,
    why: tuple[str, str],
    measured_by: str = "",
    untuned: str | None = None,
) -> dict:
    """An 'at chance' claim as an equivalence test over its (model, γ) cells, all of which must hold (an
    intersection-union test: each cell's 95 % interval ending below the register's one-sided margin, so no
    multiplicity correction).
    The deciding cell is the first wholly outside the margin, else the one reaching furthest past it, else the one
    nearest its edge; the power shown is the weakest cell's at the margin."""
    low, high = claim.rule.low, claim.rule.high
    cells = cells[~cells.gamma_free | ~cells.duplicated(subset=["model", "trainer"])]
    outside = cells[(cells[how.high] < low) | (cells[how.low] > high)]
    past = np.maximum(cells[how.high] - high, low - cells[how.low])  # > 0: the interval reaches past the margin
    row = outside.iloc[0] if len(outside) else cells.loc[past.idxmax()]
    where = f"{NAMES[row.model]}" + ("" if row.gamma_free else f", γ = {row.gamma:g}")
    where += f", {row.dedup}" if "dedup" in cells and cells.dedup.nunique() > 1 else ""
    test = (
        f"{how.interval} at the deciding cell {where} (all {len(cells)} cells must end below the margin), "
        f"{_trained(int(row.seeds))}"
    )
    weakest = float(how.power.loc[cells.index].min())
    return judge(
        claim,
        row[how.value],
        (row[how.low], row[how.high]),
        test,
        why=why,
        power=(weakest, f"{how.effect}, the weakest of the {len(cells)} cells"),
        narrow_by=how.lever,
        measured_by=measured_by,
        untuned=untuned,
    )


def _group_cause(distinct: pd.DataFrame, copies: int) -> tuple[Any, str]:
    """(cause, table) of CRT's DP-SGD arm leaking canaries copied into distinct contexts: where its clipped steps
    without noise leak at least as much (table factorial), the copies are a group that a per-sentence ε bounds only
    k times over (group privacy); otherwise unknown."""
    arm = lambda name: distinct[distinct.trainer == name]
    dp, clipped = arm("DP-SGD (CRT)"), arm("clipped, no noise")
    if clipped.empty or not (clipped.leak_low > 0).all() or not clipped.leak.min() >= dp.leak.min():
        return unexplained("more seeds of the DP-SGD arm"), ""
    eps = float(dp.epsilon_dp.mean())  # π misses every copy here: the D_pri steps' own ε, not the amplified one
    return (
        "finding",
        f"CRT's DP-SGD steps at its tuned rate {dp.dp_lr.iloc[0]:g} leak {_span(dp.leak)} bits of a canary "
        f"copied into {copies} distinct contexts, and the same steps clipped without noise {_span(clipped.leak)} bits "
        f"(table factorial): the {copies} copies are a group of {copies} sentences, which a per-sentence ε of "
        f"{eps:.2f} bounds only at {copies} × {eps:.2f} (Definition 3; table group_confidentiality)",
    ), "factorial"


def _leak(frame: pd.DataFrame) -> Equivalence:
    """How the factorial's exposure 'at chance' row reads its cells (the max over the canaries: the leak columns)."""
    interval = "the leak's 95 % interval, the null band of 10 unseen canaries inverted (a leak shifts it)"
    effect = f"a leak of {EXPOSURE_MARGIN:g} bits (the margin), by shifting the null's draws"
    lever = "data seeds, each with 10 canaries of its own (more canaries in one run do not narrow their max's null)"
    return Equivalence("leak", "leak_low", "leak_high", interval, frame[LEAK_POWER], effect, lever)


def _with_max(row: dict, cells: pd.DataFrame) -> dict:
    """A mean-exposure 'at chance' row with the maximum's reading in its test: the highest upper end of the max leak's
    intervals over the same cells, against the maximum's margin (the mean dilutes a leak of one canary in ten)."""
    top = cells.loc[cells.leak_high.idxmax()]
    where = _where(top)
    reading = "below" if top.leak_high <= EXPOSURE_MARGIN else "above"
    row["test"] += (
        f"; on the maximum over the canaries instead, the leak intervals end at most at {top.leak_high:.2f} bits "
        f"({where}), {reading} that statistic's {EXPOSURE_MARGIN:g}-bit margin"
    )
    return row


def _mean_leak(frame: pd.DataFrame, prefix: str = "mean_") -> Equivalence:
    """How the paper's exposure 'at chance' rows read their cells (table exposure: the mean exposure of the canaries
    at risk; prefix "all_mean_": of all 10, where none is)."""
    interval = (
        "the at-risk mean leak's 95 % interval, the null band of as many unseen canaries' mean inverted (a leak shifts "
        "it)"
        if prefix == "mean_"
        else "the mean leak of all 10 canaries, its 95 % interval the null band of 10 unseen canaries' mean inverted"
    )
    effect = f"a leak of {MEAN_MARGIN:g} bits per canary (the margin), by shifting the null's draws"
    lever = "canaries at risk: the null of their mean narrows as √(canaries)"
    power = frame[f"{prefix}power_at_{MEAN_MARGIN:g}_bits"]
    return Equivalence(f"{prefix}leak", f"{prefix}leak_low", f"{prefix}leak_high", interval, power, effect, lever)


def _where(cell: Any) -> str:
    """A cell's model and γ (none for a γ-free trainer), in words."""
    return NAMES[cell.model] + ("" if cell.gamma_free else f", γ = {cell.gamma:g}")


def _untuned_rate(tuned: pd.DataFrame, trainer: str, models: Any) -> str | None:
    """Why a trainer's 'at chance' row cannot be judged at its DP-SGD rate: the rate its walk kept sits at an end of
    the rates tried (table dp_tuning, column interior) for a model the row judges, so a rate beyond it may do as well
    on validation and leak more or less; None where every such rate is interior (or the trainer takes none)."""
    at = tuned[(tuned.trainer == trainer) & tuned.model.isin(models) & ~tuned.interior]
    if at.empty:
        return None
    return "; ".join(
        f"{NAMES[r.model]} {trainer}'s DP-SGD rate {r.chosen:g} sits at an end of the rates tried ({r.tried}; "
        "table dp_tuning): a rate beyond it may do as well on validation and leak more"
        for r in at.itertuples()
    )


def _at_risk_row(claim: Claim, cells: pd.DataFrame, why: tuple[str, str], untuned: str | None = None) -> dict:
    """A paper's exposure 'at chance' row over the cells where some canary is at risk (runs.canaries_at_risk); a cell
    with none is at chance by construction and left out, said in the test; a row with no such cell is untestable
    here (read on all 10 canaries' mean, which it cannot fail). The test gives the maximum's reading too (_with_max)."""
    seen, none = cells[cells.at_risk > 0], cells[cells.at_risk == 0]
    if seen.empty:
        how = _mean_leak(none, "all_mean_")
        row = none.loc[(none[how.high]).idxmax()]
        forced = (
            f"π at {'γ = 0' if (none.gamma == 0).all() else 'these γ'} redacts every copy of every canary, so the "
            "trainer never trains on one: no canary is at risk, and exposure is at chance by construction"
        )
        weakest = float(how.power.min())
        test = f"{how.interval} at {_where(row)}"
        row = judge(claim, row[how.value], (row[how.low], row[how.high]), test, why=why, forced=forced,
                    power=(weakest, f"{how.effect}, the weakest of the {len(none)} cells"), untuned=untuned)  # fmt: skip
        return _with_max(row, none)
    row = _equivalence_row(claim, seen, _mean_leak(seen), why, untuned=untuned)
    left = none[~none.gamma_free | ~none.duplicated(subset=["model", "trainer"])]
    if len(left):
        row["test"] += (
            "; left out, no canary at risk there (π redacts every copy: at chance by construction): "
            + "; ".join(_where(c) for c in left.itertuples())
        )
    return _with_max(row, seen)


def verdict_rows(
    ch: Chapter,
    planned: dict[str, Claim],
    exposure: pd.DataFrame,
    mia: pd.DataFrame,
    power: pd.DataFrame,
    paired: pd.DataFrame,
    attack_power: pd.DataFrame,
    factorial: pd.DataFrame | None,
    arm: dict | None,
    fig6: pd.DataFrame,
    trends: dict[str, Trend] | None = None,
) -> list[dict]:
    """Every claim judged by its planned rule; a row not held names the table that measures its cause, or the
    ablation that would (`trends`: the dialogue sweep's, per model)."""
    check_regimes(ch, planned, exposure, fig6)
    c = {k.split(":", 1)[1]: v for k, v in planned.items() if k.startswith("attack:")}
    p, rows = ch.p, []
    chance = lambda m, g: unexplained(f"more seeds of {NAMES[m]} at γ = {g:g}")
    memorize = lambda m, g: unexplained(f"a sweep of {NAMES[m]}'s epochs and canary copies")
    rows.append(_band_row(c["memorizes"], _cells(exposure, "non-private", "np", "zero"), "exposure", memorize))
    rows.append(_band_row(c["np_mia"], _cells(mia, "non-private", "np", "zero"), "accuracy", chance))
    separate = unexplained("more seeds of CRT (table factorial separates dedup, D_pri dropped and plain SGD)")
    crt = _cells(exposure, "CRT", "crt", "all")
    tuned = dp_tuning_table(ch)
    rows.append(_at_risk_row(c["crt_exposure"], crt, separate, _untuned_rate(tuned, "CRT", ATTACK_MODELS["crt"])))
    sweep = lambda m, g: unexplained(
        f"a sweep of the canary copies {NAMES[m]} sees, from 1 up to {p.canary_copies} ({_missed_words(ch, g)})"
    )
    for t, short in (("non-private + mask", "mask"), ("S-DP", "sdp")):
        zero = _cells(exposure, t, short, "zero")
        untuned = _untuned_rate(tuned, t, ATTACK_MODELS[short])
        rows.append(_at_risk_row(c[f"{short}_zero"], zero, unexplained(f"more seeds of {t}"), untuned))
        rows.append(_band_row(c[f"{short}_rise"], _cells(exposure, t, short, "positive"), "exposure", sweep))
        for attack in ("individual", "group"):
            frame = _cells(mia, t, short, "positive", attack)
            cause = _power_cause(ch, attack_power, (t,), "threshold (paper)", attack)
            weak = _mia_power(frame, attack_power, "threshold (paper)", attack)
            rows.append(_band_row(c[f"{short}_{attack}"], frame, "accuracy", cause, weak))
    rows.append(_group_vs_individual(c["group_vs_individual"], power, attack_power))
    for attack in ATTACKS:
        frame = _cells(mia, "CRT", "crt", "all", attack)
        how = Equivalence(
            "accuracy", "accuracy_low", "accuracy_high", f"percentile interval over {N_BOOT} pair resamples",
            _mia_power(frame, attack_power, "threshold (paper)", attack, MARGIN_POWER),
            f"accuracy {0.5 + EQUIVALENCE_MARGIN:g}, the margin (table attack_power: the member win rate that gives "
            "it in simulation)",
        )  # fmt: skip
        rows.append(_equivalence_row(c[f"crt_{attack}"], frame, how, unexplained("more seeds and pairs of CRT")))
    redacting = ("non-private + mask", "S-DP")
    every = paired[paired.pairs == PAIR_SETS["individual"]]
    rise = pd.concat([_cells(every, t, short, "positive") for t, short in zip(redacting, ("mask", "sdp"))])
    cause = _power_cause(ch, attack_power, redacting, "paired (ours)", PAIR_SETS["individual"])
    weak = _mia_power(rise, attack_power, "paired (ours)", PAIR_SETS["individual"])
    rows.append(_band_row(c["paired_rise"], rise, "share", cause, weak))
    crt_pairs = _cells(every, "CRT", "crt", "all")
    how = Equivalence(
        "share", "share_low", "share_high", f"percentile interval over {N_BOOT} pair resamples",
        _mia_power(crt_pairs, attack_power, "paired (ours)", PAIR_SETS["individual"]),
        f"member win rate {WIN_RATES[0]:g} (table attack_power)",
    )  # fmt: skip
    why = unexplained(
        "the paired statistic on CRT's parts (D_pri dropped, plain SGD on D_pri, deduplication off: the factorial's "
        "arms, which table factorial scores by exposure only)"
    )
    rows.append(_equivalence_row(c["crt_paired"], crt_pairs, how, why))
    if factorial is not None:
        distinct = factorial[factorial.canaries == "distinct contexts"]
        leak = lambda m, g: unexplained("more epochs or copies of the plain-SGD arm")
        rows.append(_band_row(c["plain_leaks"], distinct[distinct.trainer == "plain SGD"], "exposure", leak))
        dp = distinct[distinct.trainer == "DP-SGD (CRT)"].reset_index(drop=True)
        why, table = _group_cause(distinct, p.canary_copies)
        rows.append(_equivalence_row(c["dp_protects"], dp, _leak(dp), why, table))
    groups = utility_runs(ch)
    for model in MODELS:
        m = {key.split(":", 1)[1]: v for key, v in planned.items() if key.startswith(f"{model}:")}
        rows += _utility_rows(ch, m, groups, model, trends or {})
    rows += _fig2_rows(ch, planned, groups)
    if arm is not None:
        rows += _arm_rows(planned, arm, ch.p.seed, ch.data.test)
    example = fig6[(fig6.epsilon_prime == 1.0) & (fig6.gamma == 0.1)].iloc[0]
    rows.append(judge(planned["accounting:fig6"], example.epsilon_conf, stats.exact(example.epsilon_conf)))
    n = NOTEBOOK_INPUTS
    ours = accounting.amplification(n["epsilon"], [n["gamma"]], n["q"], n["steps"], n["delta"])[0]["epsilon_conf"]
    rows.append(judge(planned["accounting:notebook"], ours, stats.exact(ours)))
    return rows


def check_regimes(ch: Chapter, planned: dict[str, Claim], exposure: pd.DataFrame, fig6: pd.DataFrame) -> None:
    """Compute every paper regime's criterion on this run (verdict.check_regime), from numbers already computed: the
    non-private models' max exposure at γ = 0 (table exposure) for the paper's scale, the canary copies π leaves at
    γ = 0 for a perfect policy, the calibrated σ (table amplification) for the accounting inputs."""
    seen: set[str] = set()
    for claim in planned.values():
        regime = claim.regime
        if regime is None or regime.kind != "paper" or regime.criterion is None or repr(regime) in seen:
            continue
        seen.add(repr(regime))
        prop = regime.criterion.prop
        if prop.startswith(MEMORIZES):
            cells = _cells(exposure, "non-private", "np", "zero")
            cells = cells[cells.model.isin([m for m in MODELS if m in prop])]
            value = float(cells.exposure.min()) if len(cells) else float("nan")
            check_regime(regime, ch.p.n_dialogues, value)
        elif prop == MISSED:
            check_regime(regime, 0.0, float(canary_copies_missed(ch.data, 0.0).mean()) / ch.p.canary_copies)
        elif prop == SIGMA:
            example = fig6[(fig6.epsilon_prime == 1.0) & (fig6.gamma == 0.1)].iloc[0]
            check_regime(regime, float(example.gamma), float(example.sigma))


def group_vs_individual_cells(power: pd.DataFrame) -> pd.DataFrame:
    """The cells of Fig. 5's comparison: non-private + mask on both models, S-DP on the LSTM (as in the paper)."""
    keep = [
        m in ATTACK_MODELS["mask" if t == "non-private + mask" else "sdp"] for m, t in zip(power.model, power.trainer)
    ]
    return power[keep]


def _group_vs_individual(claim: Claim, power: pd.DataFrame, attack_power: pd.DataFrame) -> dict:
    """Fig. 5's 'group stronger than individual at certain γ': among the cells whose interval covers training
    randomness (several trained models; every cell where none has), the one with the highest lower end of its
    Bonferroni-widened interval of group − individual decides (held if some cell's interval lies above 0). Cells of one
    trained model do not decide; where one of them shows the largest difference, the cause names its seeds."""
    cells = group_vs_individual_cells(power)
    deciding = cells[cells.decides]
    best = deciding.loc[deciding.diff_low.idxmax()]
    test = (
        f"two-stage percentile interval over {N_BOOT} resamples of the trained models and the pairs at "
        f"{NAMES[best.model]} {best.trainer}, γ = {best.gamma:g}, the cell of highest lower end (Bonferroni over the "
        f"{len(deciding)} cells of several trained models), {_trained(int(best.seeds))}"
    )
    if len(deciding) == len(cells):
        test = test.replace(" of several trained models", "")
    group = attack_power[(attack_power.statistic == "threshold (paper)") & (attack_power.attack == "group")]
    group = group_vs_individual_cells(group[group.gamma > 0])
    strongest = [group[power_column(w)].max() for w in WIN_RATES]
    single = cells[~cells.decides]
    largest = single.loc[single.group_minus_individual.idxmax()] if len(single) else None
    if largest is not None and largest.group_minus_individual > best.group_minus_individual:
        seeds = f"seeds of {NAMES[largest.model]} {largest.trainer} at γ = {largest.gamma:g}"
        test += (
            f"; not deciding, one trained model of {NAMES[largest.model]} {largest.trainer} at γ = "
            f"{largest.gamma:g} shows {largest.group_minus_individual:+.3f} (table mia_power)"
        )
        why = unexplained(
            f"{seeds}, where one trained model shows group − individual {largest.group_minus_individual:+.3f} "
            f"(table mia_power), against {best.group_minus_individual:+.3f} at the cells of several"
        )
        more = "trained models and pairs at the cells of several models"
        return judge(claim, best.group_minus_individual, (best.diff_low, best.diff_high), test, why=why,
                     narrow_by=more)  # fmt: skip
    why = unexplained(
        f"a larger group design (table attack_power: at member win rates {' / '.join(f'{w:g}' for w in WIN_RATES)}, "
        f"fixed in the register, the group attack clears its null point with power {_rate_words(strongest)} at best)"
    )
    return judge(claim, best.group_minus_individual, (best.diff_low, best.diff_high), test, why=why)


def _fig2_rows(ch: Chapter, planned: dict[str, Claim], groups: dict) -> list[dict]:
    """Fig. 2's ordering: GPT-2 below the LSTM for CRT and for DPSGD, as a per-word perplexity ratio paired by seed (the
    LSTM's word tokens count the words for both models, so that a BPE GPT-2 at `paper` compares alike)."""
    rows = []
    for trainer, key in (("CRT", "crt"), ("DPSGD", "dpsgd")):
        gpt2, lstm = groups["GPT-2", trainer], groups["LSTM", trainer]
        a = np.stack([nll_of(ch.scores[r]["nll"], "non-secret")[0] for r in gpt2])
        b = np.stack([nll_of(ch.scores[r]["nll"], "non-secret")[0] for r in lstm])
        words = nll_of(ch.scores[lstm[0]]["nll"], "non-secret")[1]
        n = min(len(a), len(b))
        iv = dialogue_perplexity(a[:n], words, b[:n], dialogues_of(ch.data.test), seed=ch.p.seed)
        still = unconverged(ch, "GPT-2", trainer)
        why = (
            ("setup", still)
            if still
            else unexplained(
                f"the GPT-2 and the LSTM at the paper's sizes (pretrained distilgpt2; LSTM 200/200) for {trainer}"
            )
        )
        claim = planned[f"fig2:{key}_gpt_vs_lstm"]
        table = PER_EPOCH if still else ""
        rows.append(judge(claim, iv.estimate, iv, why=why, measured_by=table, narrow_by="test dialogues and seeds"))
    return rows


def utility_cause(
    close: stats.Interval,
    control: stats.Interval,
    alternate: stats.Interval | None,
    sweep: Sweep | None,
    table: str,
    at_paper: float | None = None,
) -> tuple[Any, str, Sweep | None]:
    """(cause, measuring table, regime sweep) of CRT's perplexity not being close to non-private, measured by the
    alternate dedup reading and the D_pub-only control of `table`, and by the dialogue-count sweep of D_pub alone
    against non-private (`sweep`: its trend is positive where D_pub alone's gap closes as dialogues grow; `at_paper`:
    the ratio carried to the paper's dialogues at that trend). The regime explains the gap only where the gap closes
    and, carried to the paper's size, reaches the register's 'close' (1.2)."""
    measured = f"a model trained on D_pub alone is at {control.estimate:.2f} [{control.low:.2f}, {control.high:.2f}]"
    if alternate is not None:
        measured += (
            f", CRT with duplicates masked at {alternate.estimate:.2f} [{alternate.low:.2f}, {alternate.high:.2f}]"
        )
    if alternate is not None and alternate.high < 1.2:
        return ("setup", f"the reading of deduplication explains it: {measured}"), table, None
    if control.high < close.low:
        return (
            ("setup", f"CRT does worse than D_pub alone, so its DP-SGD epochs on D_pri cost utility: {measured}"),
            table,
            None,
        )
    share = math.log(close.estimate) / math.log(control.estimate) if control.estimate > 1 else math.inf
    measured += f"; CRT keeps {share:.0%} of D_pub alone's log gap"
    if share >= 0.5:
        t = None if sweep is None else sweep.trend
        rate = "" if t is None else f"{t.estimate:.3f} [{t.low:.3f}, {t.high:.3f}] less log ratio per doubling"
        reaches = at_paper is not None and at_paper <= CLOSE
        if t is not None and t.low > 0 and reaches:
            why = (
                f"most of CRT's gap is its public part's ({measured}), and D_pub alone's gap to non-private "
                f"closes as the dialogues grow, {rate}, to {at_paper:.2f} at the paper's {PAPER_DIALOGUES:,} "
                f"(extrapolated; table {sweep.table})"
            )
            return ("regime", why), "", sweep
        if t is None:
            trend = ""
        elif t.low > 0:
            trend = (
                f"; D_pub alone's gap closes as the dialogues grow ({rate}; table {sweep.table}), but too slowly to "
                f"explain it: carried to the paper's {PAPER_DIALOGUES:,} dialogues it would still be {at_paper:.2f}"
            )
        else:
            trend = f"; D_pub alone's gap does not close measurably as the dialogues grow (table {sweep.table}: {rate})"
        return ("finding", f"most of CRT's gap is its public part's: {measured}{trend}"), table, None
    ablation = f"a sweep of the dialogues toward the paper's {PAPER_DIALOGUES:,} ({measured})"
    return unexplained(ablation), "", None


def _utility_rows(ch: Chapter, c: dict, groups: dict, model: str, trends: dict[str, Trend]) -> list[dict]:
    """The perplexity claims of one model: CRT close to non-private, and the same as or better than each existing
    solution the register compares it with (DPSGD at CRT's confidentiality ε; S-DP on the LSTM); the dedup-reading
    and D_pub-only ablations (table `utility`) and the dialogue-count sweep (`sweeps`, per model) measure the cause of
    a gap (`trends`, per model: dialogue_sweep's)."""
    crt, base = groups[model, "CRT"], groups[model, "non-private"]
    close = perplexity(ch, crt, "non-secret", base)
    alternate = perplexity(ch, groups[model, ALTERNATE_LABEL], "non-secret", base)
    control = perplexity(ch, groups[model, CONTROL], "non-secret", base)
    trend = trends.get(model)
    sweep = None if trend is None else Sweep(SWEEP, "dialogues", c["crt_close"].regime.variable, trend.fall)
    at_paper = None if trend is None else trend.at_paper
    cause, table, sweep = utility_cause(close, control, alternate, sweep, "utility", at_paper)
    narrow = "test dialogues and seeds"
    rows = [judge(c["crt_close"], close.estimate, close, why=cause, measured_by=table, narrow_by=narrow, sweep=sweep)]
    for key, rival in (("crt_vs_dpsgd", MATCHED_LABEL), ("crt_vs_sdp", "S-DP")):
        if key in c:
            other = groups[model, rival]
            versus = perplexity(ch, crt, "non-secret", other)
            public = perplexity(ch, groups[model, CONTROL], "non-secret", other)
            estimate, interval, test, why, measured = _versus(ch, model, versus, public, rival)
            rows.append(judge(c[key], estimate, interval, test, why, measured, narrow_by=narrow))
    return rows


# --- the dialogue-count sweep: does D_pub alone's gap to non-private close with more dialogues? ----------------

DIALOGUE_SCALES = (0.25, 0.5, 1.0, 2.0)  # multiples of n_dialogues (plain SGD, first seed)
SWEEP_MIA = 20  # the sweep's corpora score no attack: the fewest member pairs build_data asks of them
SWEEP = "dialogue_sweep"  # the table the notebook publishes


def dialogue_counts(p: Any) -> list[int]:
    """The sweep's corpus sizes: DIALOGUE_SCALES of n_dialogues (at least 20)."""
    return sorted({max(20, round(p.n_dialogues * m)) for m in DIALOGUE_SCALES})


def _sweep_corpus(p: Any, n: int) -> dict:
    """One corpus of the sweep: per model and trainer, the per-sentence test NLL of the non-private and D_pub-only
    models, one per seed (a corpus of n_dialogues reuses the chapter's runs), and what deduplication leaves of it."""
    from ..params import Resolved

    if n == p.n_dialogues:
        q, data = p, build_data(p)
    else:  # fewer attack pairs than the chapter asks (they shape GPT-2's positions): keyed as a variant of its own
        q = Resolved(dict(p) | {"n_dialogues": n, "n_mia": min(p.n_mia, SWEEP_MIA)})
        data = replace(build_data(q), variant="dialogue sweep")
    vocabs = vocabularies(q, data)
    encoders = {m: Encoder(data, vocabs[m]) for m in MODELS}
    trainer = Trainer(q, data, encoders, model_factory(q, data, vocabs), track=lambda run: False)
    nll: dict[tuple[str, str], list[dict]] = {}
    for model in MODELS:
        for t in ("non-private", CONTROL):
            for seed in range(p.seed, p.seed + p.n_seeds):
                run = Run(model, t, None, seed)
                build = lambda: test_nll(trainer(run)[0], encoders[model])
                name = f"sweep-nll-{model}-{t}-n{n}-s{seed}"
                nll.setdefault((model, t), []).append(cached(name, {"model": trainer.spec(run)}, build)[0])
    split = data.split(0.0)
    seen = {tuple(s.tokens) for s in data.sentences}
    return {
        "nll": nll,
        "sentences": len(data.sentences),
        "duplicate_share": float(split.duplicate.mean()),
        "test_copies_share": float(np.mean([tuple(s.tokens) in seen for s in data.test])),
        "d_pub": len(split.part(False)),
    }


def dialogue_sweep(ch: Chapter) -> tuple[pd.DataFrame, dict[str, Trend]]:
    """The dialogue-count sweep (table `dialogue_sweep`): per corpus size and model, D_pub alone's test perplexity
    over non-private's on non-secret tokens (the seeds' geometric mean, paired by seed) with its interval over test
    dialogues and seeds, the duplicate share of the training sentences and the share of test sentences that copy one;
    and per model the trend, the fall of the log ratio per doubling of the dialogues (ratio_trend)."""
    p, counts = ch.p, dialogue_counts(ch.p)
    corpora = {n: _sweep_corpus(p, n) for n in tqdm(counts, desc="dialogue sweep")}
    dialogues = dialogues_of(ch.data.test)
    rows, trends = [], {}
    for model in MODELS:
        arms = []
        for n in counts:
            c = corpora[n]
            tokens = nll_of(c["nll"][model, CONTROL][0], "non-secret")[1]
            a, b = (
                np.stack([nll_of(x, "non-secret")[0] for x in c["nll"][model, t]]) for t in (CONTROL, "non-private")
            )
            iv = dialogue_perplexity(a, tokens, b, dialogues, seed=p.seed)
            arms.append((a, b, tokens))
            rows.append(
                {
                    "model": model,
                    "dialogues": n,
                    "sentences": c["sentences"],
                    "duplicate_share": c["duplicate_share"],
                    "test_copies_share": c["test_copies_share"],
                    "d_pub": c["d_pub"],
                    "ratio": iv.estimate,
                    "ratio_low": iv.low,
                    "ratio_high": iv.high,
                }
            )
        fall = ratio_trend(counts, arms, dialogues, p.seed)
        doublings = math.log2(PAPER_DIALOGUES / counts[-1])
        trends[model] = Trend(fall, math.exp(math.log(rows[-1]["ratio"]) - fall.estimate * doublings))
    return pd.DataFrame(rows), trends


class Trend(NamedTuple):
    """The dialogue sweep's reading of one model: `fall`, the fall of log(D_pub alone / non-private) per doubling
    of the dialogues (ratio_trend), and `at_paper`, that ratio carried from the largest corpus to the paper's
    10,000 dialogues at the estimated fall (an extrapolation, shown as one)."""

    fall: stats.Interval
    at_paper: float


def ratio_trend(counts: list[int], arms: list[tuple], dialogues: np.ndarray, seed: int) -> stats.Interval:
    """The fall of log(perplexity a / perplexity b) per doubling of the corpus, the seeds' mean: least squares over
    the corpus sizes `counts` per seed, arms[i] = (a, b, tokens) the per-(seed, sentence) summed NLL of the two models
    on corpus i, paired by seed, and its token counts (the same test sentences, each corpus's own tokens). Its 95 %
    interval: two-stage resamples of the test dialogues, every corpus and seed on the same resample, combined with the
    seeds' spread (stats.clustered_interval)."""
    weights = stats.unit_weights(dialogues, n_resamples=2000, seed=seed)
    full = np.ones((1, len(dialogues)))
    per_size = [((w @ a.T) - (w @ b.T)) / (w @ t)[:, None] for a, b, t in arms for w in [np.vstack([full, weights])]]
    log = np.stack(per_size)  # (sizes, 1 + resamples, seeds)
    sizes, draws, seeds = log.shape
    fall = -np.polyfit(np.log2(counts), log.reshape(sizes, -1), 1)[0].reshape(draws, seeds)  # row 0: the data
    words = f"fall of log(D_pub alone / non-private) per doubling of {counts[0]}–{counts[-1]} dialogues"
    return stats.clustered_interval(
        fall[0], fall[1:], clusters=dialogues, unit="test dialogues", sharing="items", words=words
    )


def sweep_words(sweep: pd.DataFrame, trends: dict[str, Trend]) -> str:
    """What the dialogue sweep says, per model: D_pub alone's ratio to non-private at the smallest and largest corpus,
    the trend with its interval and whether the gap closes, and how repetitive the corpora are."""
    out = []
    for model in MODELS:
        t, (trend, at_paper) = sweep[sweep.model == model].sort_values("dialogues"), trends[model]
        lo, hi = t.iloc[0], t.iloc[-1]
        reading = stats.by_side(
            trend,
            "the gap closes as the corpus grows",
            "the gap widens as the corpus grows",
            "the sweep cannot tell whether the gap closes",
        )
        out.append(
            f"**{NAMES[model]}.** D_pub alone's perplexity is {lo.ratio:.2f} [{lo.ratio_low:.2f}, {lo.ratio_high:.2f}] "
            f"times non-private's at {lo.dialogues:,} dialogues and {hi.ratio:.2f} [{hi.ratio_low:.2f}, "
            f"{hi.ratio_high:.2f}] at {hi.dialogues:,}; the log ratio falls {trend.estimate:.3f} "
            f"[{trend.low:.3f}, {trend.high:.3f}] per doubling: {reading}. Carried at that rate to the paper's "
            f"{PAPER_DIALOGUES:,} dialogues, the ratio would be {at_paper:.2f} (an extrapolation)."
        )
    first = sweep[sweep.model == MODELS[0]].sort_values("dialogues")
    out.append(
        f"From {first.dialogues.iloc[0]:,} to {first.dialogues.iloc[-1]:,} dialogues, the share of training sentences "
        f"that repeat an earlier one goes from {first.duplicate_share.iloc[0]:.0%} to "
        f"{first.duplicate_share.iloc[-1]:.0%}, and the share of test sentences that copy a training sentence from "
        f"{first.test_copies_share.iloc[0]:.0%} to {first.test_copies_share.iloc[-1]:.0%}: deduplication keeps each "
        "repeated sentence once in D_pub, and a larger corpus repeats more of what the test asks."
    )
    return "\n\n".join(out)


PER_EPOCH = "fig2_per_epoch"  # the per-epoch table (history_table) the notebook publishes


def unconverged(ch: Chapter, model: str, trainer: str) -> str:
    """The sentence 'still falling' of a tuned trainer whose validation perplexity fell by `tuning.CONVERGED` or more in
    its last epoch (table dp_tuning); "" when it converged, rose, or was not tuned."""
    choice = tuning.choice_table(ch.tuning).set_index(["model", "trainer"])
    if (model, trainer) not in choice.index:
        return ""
    row = choice.loc[(model, trainer)]
    if row.converged or not row.last_epoch_change <= -tuning.CONVERGED:
        return ""
    return (
        f"at its tuned DP learning rate {row.chosen:g} and {row.epochs} epochs, {NAMES[model]} {trainer}'s validation "
        f"perplexity still fell {-row.last_epoch_change:.0%} in its last epoch: it was still improving when training "
        "stopped"
    )


_RIVALS = {  # what a comparator trains on, in the words of a finding that CRT's public part cannot reach it
    "DPSGD": "DP-SGD on every sentence",
    MATCHED_LABEL: "DP-SGD on every sentence at CRT's confidentiality ε",
    "S-DP": "S-DP (a plain step on every π-redacted sentence, DP-SGD only on the tokens π flags)",
}


def _versus(
    ch: Chapter, model: str, versus: stats.Interval, public: stats.Interval, rival: str = "DPSGD"
) -> tuple[float, stats.Interval, None, Any, str]:
    """(estimate, interval, test, why, measured_by) of 'CRT the same as or better than `rival`' (`versus`: CRT /
    rival; `public`: D_pub alone / rival). A D_pub-only model already above the rival is a finding of table utility
    (CRT's public part cannot reach it); else an unconverged CRT at its tuned rate (table dp_tuning; its per-epoch
    curve, fig2_per_epoch) is a setup cause; otherwise unknown."""
    still = unconverged(ch, model, "CRT")
    if public.low > 1:
        why = (
            "finding",
            f"a model trained on D_pub alone, CRT's public part, is already at {public.estimate:.2f} "
            f"[{public.low:.2f}, {public.high:.2f}] times {rival}'s perplexity: {_RIVALS[rival]} does better than "
            "plain training on what π and deduplication leave public" + (f" ({still})" if still else ""),
        )
        return versus.estimate, versus, None, why, "utility"
    if still:
        return versus.estimate, versus, None, ("setup", still), PER_EPOCH
    why = unexplained(
        f"a sweep of the dialogues toward the paper's {PAPER_DIALOGUES:,} (here {ch.p.n_dialogues}), with the DP "
        "learning rates tuned as in table dp_tuning"
    )
    return versus.estimate, versus, None, why, ""


def _arm_rows(planned: dict[str, Claim], result: dict, seed: int, test: list) -> list[dict]:
    """The pretrained arm's two perplexity claims (one fine-tune per trainer, scored on the first of the `test`
    sentences, resampled by test dialogue); its D_pub-only control (table `pretrained_arm`) measures the cause of
    CRT's gap to non-private."""
    close = arm_module.perplexity(result, "CRT", "non-secret", "non-private", seed, test)
    control = arm_module.perplexity(result, CONTROL, "non-secret", "non-private", seed, test)
    cause, table, _ = utility_cause(close, control, None, None, "pretrained_arm")
    versus = arm_module.perplexity(result, "CRT", "non-secret", "DPSGD", seed, test)
    # the small models' walks moved DPSGD's rate up to tenfold and turned their row from held to not held (table
    # dp_tuning); the arm's DPSGD keeps the paper's rate, and two more of its fine-tunes would take the chapter past
    # its 15-minute budget
    untuned = (
        f"the arm's DPSGD trains at the paper's rate {arm_module.LR:g} alone, where the small models' DPSGD rates are "
        "chosen on validation (table dp_tuning)"
    )
    narrow = "test dialogues"
    return [
        judge(
            planned["arm:crt_close"],
            close.estimate,
            close,
            why=cause,
            measured_by=table,
            narrow_by=narrow,
        ),
        judge(planned["arm:crt_vs_dpsgd"], versus.estimate, versus, narrow_by=narrow, untuned=untuned),
    ]


# --- prose glued from the tables ----------------------------------------------------------------------------


def _span(values: pd.Series, digits: int = 1) -> str:
    """'a–b' of a series, or one value."""
    lo, hi = values.min(), values.max()
    return f"{lo:.{digits}f}" if round(lo, digits) == round(hi, digits) else f"{lo:.{digits}f}–{hi:.{digits}f}"


def exposure_words(exposure: pd.DataFrame, ch: Chapter) -> str:
    """What the exposure table says, per model, and how many copies of each canary CRT and redaction alone train on."""
    out = []
    for model in MODELS:
        t = exposure[exposure.model == model]
        npv = t[(t.trainer == "non-private") & (t.gamma == 0)].iloc[0]
        crt = t[t.trainer == "CRT"]
        risky = crt[crt.at_risk > 0]
        inside = int((risky.mean_leak_high <= MEAN_MARGIN).sum())
        zero = crt[crt.at_risk == 0].gamma
        none = f", none at γ = {', '.join(f'{g:g}' for g in zero)}" if len(zero) else ""
        mask = t[(t.trainer == "non-private + mask") & (t.gamma > 0)]
        out.append(
            f"**{NAMES[model]}.** The non-private model reaches {npv.exposure:.1f} bits (its null's upper 95 % point "
            f"{npv.null_upper:.1f}). CRT's maximum scores {_span(crt.exposure)} bits, a leak of {crt.leak.min():+.1f} "
            f"to {crt.leak.max():+.1f} bits over chance; the mean exposure of the canaries at risk (those it trains "
            f"on: {_span(risky.at_risk.astype(float), 0)} of 10{none}) leaks "
            f"{risky.mean_leak.min():+.2f} to {risky.mean_leak.max():+.2f} bits, and that leak's 95 % interval ends "
            f"below +{MEAN_MARGIN:g} bits at {inside} of those {len(risky)} values of γ. "
            f"Redaction alone scores {_span(mask.exposure)} "
            f"bits for γ > 0, against one-sided null points of {_span(mask.null_upper)}."
        )
    g = ch.gamma2
    missed = canary_copies_missed(ch.data, g).mean()
    seen = canary_copies_in_crt(ch.data, g).mean()
    out.append(
        f"The trainers do not see the canaries alike. At γ = {g:g}, π leaves on average {missed:.1f} of each canary's "
        f"{ch.p.canary_copies} copies unredacted, and the redaction-only trainer trains on all of them. CRT trains on "
        f"{seen:.2f} unredacted copies per canary: deduplication removes every later copy of the same sentence (under "
        "the alternate reading it becomes a bare `<MASK>`), so CRT sees at most one copy of each canary, and that one "
        "only when π misses it; the factorial below separates what deduplication and DP-SGD each contribute."
    )
    return "\n\n".join(out)


def mia_words(mia: pd.DataFrame) -> str:
    """What the MIA table says: how many distinct results lie above their null's one-sided point, per trainer (a
    trainer that does not use γ is one result per attack, however many γ the table repeats it at)."""
    cells = mia[~mia.gamma_free | ~mia.duplicated(subset=["model", "trainer", "attack"])]
    above = cells.assign(above=cells.accuracy > cells.null_upper).groupby(["model", "trainer"], sort=False).above
    parts = [f"{NAMES[m]} {t}: {int(v.sum())} of {len(v)}" for (m, t), v in above]
    widths = (mia.null_upper - 0.5).groupby(mia.attack).mean()
    return (
        "Distinct results (attack × γ, or attack alone for a trainer that does not use γ) above their null's "
        "one-sided 95 % point: "
        + "; ".join(parts)
        + ". The nulls are wide at this scale: the one-sided point lies on average "
        + ", ".join(f"{w:.3f} above 0.5 for the {a} attack" for a, w in widths.items())
        + "."
    )


REFERENCE = ("non-private + mask", 0.0)  # redaction with a perfect policy: a model of the same kind that saw no secret


def calibrated_table(ch: Chapter, paired: pd.DataFrame) -> pd.DataFrame:
    """The paired MIA calibrated by a reference model (the field's reference-model attack): per (model, trainer, γ)
    cell and set of pairs, the paired statistic (_paired_cells) on each member's and look-alike's log perplexity minus
    the reference's (REFERENCE: the same network redacted by a perfect policy, which never saw a secret), so what the
    secret string itself makes easy or hard cancels; each run is calibrated by the reference of its seed (else the
    first seed's). The uncalibrated share beside; the reference's own cell is left out (every pair would tie)."""

    def calibrated(model: str, trainer: str, g: float, runs: list[Run], attack: str) -> Any:
        refs = {r.seed: r for r in _per_gamma(ch, model).get(REFERENCE, [])}
        if not refs or (trainer, g) == REFERENCE:
            return None
        (m, n), (rm, rn) = (
            _pairs_of(ch, runs, attack),
            _pairs_of(ch, [refs.get(r.seed, refs[min(refs)]) for r in runs], attack),
        )
        return [np.log(a) - np.log(b) for a, b in zip(m, rm)], [np.log(a) - np.log(b) for a, b in zip(n, rn)]

    rows = []
    for row in _paired_cells(ch, calibrated):
        raw = paired[
            (paired.model == row["model"]) & (paired.trainer == row["trainer"]) & (paired.gamma == row["gamma"])
        ]
        renamed = {"share": "calibrated", "share_low": "calibrated_low", "share_high": "calibrated_high"}
        row = {renamed.get(k, k): v for k, v in row.items() if k not in ("attack", "n_pairs")}
        rows.append(row | {"uncalibrated": float(raw[raw.pairs == row["pairs"]].share.iloc[0])})
    return pd.DataFrame(rows)


def calibrated_words(calibrated: pd.DataFrame) -> str:
    """What calibrating by the reference changes, in words: per trainer, its range of shares on all secrets at γ > 0
    (every γ for CRT) calibrated and not, and in how many of those cells each clears its one-sided 95 % null point."""
    if calibrated.empty:
        return ""
    every = calibrated[calibrated.pairs == PAIR_SETS["individual"]]
    every = every[~every.gamma_free | ~every.duplicated(subset=["model", "trainer"])]
    out = []
    for trainer in ("non-private", "non-private + mask", "S-DP", "CRT"):
        cells = every[every.trainer == trainer]
        cells = cells if trainer in ("CRT", "non-private") else cells[cells.gamma > 0]
        if cells.empty:
            continue
        out.append(
            f"{trainer} {_span(cells.calibrated, 3)} calibrated against {_span(cells.uncalibrated, 3)} uncalibrated, "
            f"above its null's one-sided 95 % point in {int((cells.calibrated > cells.null_upper).sum())} of "
            f"{len(cells)} cells"
        )
    g = "γ > 0 for the redacting trainers, every γ for CRT"
    lower = int((every.calibrated < every.uncalibrated).sum())
    return (
        f"Calibrated by the γ = 0 redaction model, on all secrets ({g}): "
        + "; ".join(out)
        + ". Calibration lowers the "
        f"share in {lower} of all {len(every)} cells and raises it in {int((every.calibrated > every.uncalibrated).sum())}"
        ": where it lowers it, the reference's perplexities vary from pair to pair in ways the target's do not share, "
        "and subtracting them adds noise rather than removing it."
    )


def paired_words(paired: pd.DataFrame, mia: pd.DataFrame) -> str:
    """The paired statistic beside the threshold attack on the same pairs, in words: the non-private models, and how
    many distinct redacting and CRT cells each clears its one-sided 95 % null point in."""
    every = paired[paired.pairs == PAIR_SETS["individual"]]
    every = every[~every.gamma_free | ~every.duplicated(subset=["model", "trainer"])]
    individual = mia[mia.attack == "individual"]
    out = []
    for model in MODELS:
        np_row = every[(every.model == model) & (every.trainer == "non-private")]
        if np_row.empty:
            continue
        r = np_row.iloc[0]
        out.append(
            f"on the non-private {NAMES[model]}, members beat their look-alikes in {r.share:.3f} "
            f"[{r.share_low:.3f}, {r.share_high:.3f}] of the pairs, where the threshold attack on the same pairs is "
            f"{r.threshold_accuracy:.3f} accurate"
        )
    counts = []
    for trainer in ("non-private + mask", "S-DP", "CRT"):
        cells = every[every.trainer == trainer]
        cells = cells if trainer == "CRT" else cells[cells.gamma > 0]
        if cells.empty:
            continue
        keys = list(zip(cells.model, cells.gamma))
        threshold = individual.set_index(["trainer", "model", "gamma"]).loc[[(trainer, *k) for k in keys]]
        counts.append(
            f"{trainer} {int((cells.share > cells.null_upper).sum())} of {len(cells)} "
            f"({int((threshold.accuracy > threshold.null_upper).sum())})"
        )
    return (
        "Our paired statistic: " + "; ".join(out) + ". Cells whose paired statistic lies above its null's one-sided "
        "95 % point (γ > 0 for the redacting trainers, every γ for CRT; in brackets, the paper's individual threshold "
        "attack on the same pairs): " + "; ".join(counts) + "."
    )


def power_words(power: pd.DataFrame) -> str:
    """The attacks' power at the register's win rates, in words: each statistic's weakest cell among the redacting
    trainers' γ > 0 cells, and the size of every test (its power at 0.5)."""
    if power.empty:
        return ""
    rising = power[power.trainer != "CRT"]
    out = []
    for statistic, name in (
        ("threshold (paper)", "the paper's threshold attack"),
        ("paired (ours)", "our paired statistic"),
    ):
        t = rising[rising.statistic == statistic]
        parts = [
            f"{attack} {_rate_words([a[power_column(w)].min() for w in WIN_RATES])}"
            for attack, a in t.groupby("attack", sort=False)
        ]
        out.append(f"{name}, " + ", ".join(parts))
    rates = " / ".join(f"{w:g}" for w in WIN_RATES)
    return (
        f"At member win rates of {rates}, fixed before the runs, the weakest redacting (model, γ > 0) cell has power: "
        + "; ".join(out)
        + f". With no effect (0.5), every test clears its point in at most {100 * power[power_column(0.5)].max():.0f} % "
        f"of the simulated worlds, against a nominal 5 % (2.5 % for CRT's equivalence rows); {len(power)} cells in all."
    )


def matched_words(utility: pd.DataFrame) -> str:
    """CRT against DPSGD at both matchings of ε, per model, from table utility's point estimates: the rows' (DPSGD
    trained to CRT's confidentiality ε) and the same DP-SGD ε."""
    out = []
    for model in MODELS:
        u = utility[utility.model == model].set_index("trainer")["ppl_non-secret"]
        eps = utility[(utility.model == model) & (utility.trainer == MATCHED_LABEL)].epsilon.iloc[0]
        out.append(
            f"{NAMES[model]}: CRT {u['CRT']:.2f}, DPSGD {u[MATCHED_LABEL]:.2f} at CRT's ε ({eps:.2f}; ratio "
            f"{u['CRT'] / u[MATCHED_LABEL]:.2f}) and {u['DPSGD']:.2f} at the same DP-SGD ε (ratio "
            f"{u['CRT'] / u['DPSGD']:.2f})"
        )
    return (
        "The 'same or better than DPSGD' rows compare at CRT's confidentiality ε, as Fig. 2 places the trainers. That "
        "ε is a Bayesian guarantee averaged over π's misses; DPSGD's is worst-case, and CRT's own DP-SGD steps spend "
        "the larger DP-SGD ε. Non-secret test perplexity, " + "; ".join(out) + "."
    )


def gap_words(gap: pd.DataFrame, utility: pd.DataFrame) -> str:
    """The gap decomposition and the like-for-like perplexities, in words."""
    out = []
    for model in MODELS:
        g = gap[(gap.model == model) & (gap["versus non-private"] == "CRT")]
        u = utility[utility.model == model].set_index("trainer")
        if g.empty:
            continue
        g = g.iloc[0]
        out.append(
            f"**{NAMES[model]}.** CRT's raw gap to non-private is {g.gap_nats_per_token:.3f} nats per test token: "
            f"{g.share_first:.0%} from the first token, {g.share_secret:.0%} from secrets and "
            f"{g.share_ordinary:.0%} from ordinary tokens. On non-secret tokens CRT scores "
            f"{u.loc['CRT', 'ppl_non-secret']:.2f} against {u.loc['non-private', 'ppl_non-secret']:.2f} for the "
            f"non-private model, {u.loc[ALTERNATE_LABEL, 'ppl_non-secret']:.2f} with duplicates masked and "
            f"{u.loc[CONTROL, 'ppl_non-secret']:.2f} for D_pub alone."
        )
    return "\n\n".join(out)


def multiwoz_table(p: Any) -> pd.DataFrame:
    """MultiWOZ 2.2's size from the Hub (paper profile)."""
    from datasets import load_dataset

    multiwoz = load_dataset(MULTIWOZ_HUB, split="train")
    return pd.DataFrame([{"dataset": MULTIWOZ_HUB, "dialogues": len(multiwoz)}])


def dp_tuning_table(ch: Chapter) -> pd.DataFrame:
    """The learning-rate choice per (model, DP trainer) (tuning.choice_table); beside CRT, the validation perplexity of
    the first-seed D_pub-only control: CRT with its DP steps at rate 0."""
    control = {
        (r.model, "CRT"): info["history"][-1]["validation"]
        for r, (_, info) in ch.models.items()
        if r.trainer == CONTROL and r.seed == ch.p.seed
    }
    table = tuning.choice_table(ch.tuning, zero=control)
    table["d_pub_only"] = [control.get(key) for key in zip(table.model, table.trainer)]
    return table


def dp_tuning_view(tuned: pd.DataFrame) -> pd.DataFrame:
    """Table dp_tuning as the page shows it: the rates as written (1e-4 would round to 0), the columns the choice
    rests on."""
    cols = ["model", "trainer", "tried", "chosen", "epochs_tried", "validation", "last_epoch_change", "interior"]
    return tuned[cols].assign(chosen=[f"{v:g}" for v in tuned.chosen])


def tuning_words(tuned: pd.DataFrame, n_val: int) -> str:
    """Each DP trainer's chosen learning rate, its validation perplexity and whether it converged, in words."""
    out = []
    for row in tuned.to_dict("records"):
        change, lengths = row["last_epoch_change"], row["epochs_tried"].count(":")
        doubled = f"; epochs tried {row['epochs_tried']}" if lengths > 1 else ""
        if row["converged"] and lengths > 1:
            state = f"converged: a doubling of its epochs gains under {tuning.CONVERGED:.0%}{doubled}"
        elif row["converged"]:
            state = f"converged: under {tuning.CONVERGED:.0%} in its last epoch"
        elif not np.isfinite(change):
            state = f"one epoch: no convergence to check{doubled}"
        else:
            state = f"still {'falling' if change < 0 else 'rising'}: {abs(change):.0%} in its last epoch{doubled}"
        control = row.get("d_pub_only")
        beside = (
            f"; D_pub alone, a rate of 0, scores {control:.2f}" if control is not None and control == control else ""
        )
        lowest = float(row["tried"].split(":", 1)[0]) == row["chosen"]
        where = (
            "at an end of the rates tried: the best may lie beyond"
            if not row["interior"]
            else "worse at the next rate and at rate 0 (D_pub alone)"
            if lowest
            else "between two worse rates"
        )
        out.append(
            f"{NAMES[row['model']]} {row['trainer']} keeps {row['chosen']:g}, {where} (perplexity "
            f"{row['validation']:.2f} after {row['epochs']} epochs, {state}{beside})"
        )
    return f"On {n_val} validation dialogues, " + "; ".join(out) + "."
