"""The CRT chapter's runs: CustomerSim data and its encodings, one trained model per (model, trainer, γ, seed,
deduplication reading), cached, and each model's scores (exposure with its null, MIA with its null, per-sentence NLL)."""

from __future__ import annotations

import hashlib
import math
import random
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .. import atomic, cache, stats
from ..params import ParameterError
from . import canary, customersim, gpt, language_model, membership_attacks, redaction, trainers
from .redaction import CRTSplit, RegexPolicy, Sentence

DELTA = 8e-5
N_CANARIES, CANARY_DIGITS, GROUP = 10, 6, 20
MODELS = ("LSTM", "GPT-2")
SDP_MODELS = ("LSTM",)  # the paper runs S-DP on the LSTM alone
TRAINERS = ("non-private", "non-private + mask", "S-DP", "DPSGD", "CRT")
CONTROL = "D_pub only"
PRIVATE_TRAINERS = ("S-DP", "DPSGD", "CRT")
# trainers whose models take per-sample gradients (Opacus' DPLSTM for the LSTM): the private ones and the clipped arm
PER_SAMPLE = (*PRIVATE_TRAINERS, "CRT, clipped steps without noise on D_pri")
SPLIT_PLAIN = ("CRT, plain SGD on D_pri", "CRT, D_pri dropped")  # the factorial's arms beside CRT's DP-SGD
CLIPPED = PER_SAMPLE[-1]  # the factorial's arm that separates DP-SGD's noise from its step
ATTACKS = ("individual", "group", "address")
# Section 4's reading of deduplication is CRT's: a later copy of a sentence is removed from both parts (the paper's
# experiments remove identical sequences). Algorithm 1 with Appendix A.6, where it becomes a bare <MASK> in D_pri, is
# the alternate reading, trained at Fig. 2's γ beside it.
PRIMARY_DEDUP, ALTERNATE_DEDUP = "remove", "mask"
# trainers that read no CRT split train the same model under either reading; their cache entries keep the reading
# they were first keyed under
UNSPLIT_KEY = "mask"
SPLIT_READERS = ("CRT", *SPLIT_PLAIN, CLIPPED)  # D_pub alone (the control) is the same under either reading
VERSION = 4  # bump when training or scoring changes


@dataclass(frozen=True)
class Run:
    """One trained model: which network, trainer, policy miss rate γ (None if unused), seed, dedup reading and the
    learning rate of its DP-SGD steps (None: the profile's)."""

    model: str
    trainer: str
    gamma: float | None
    seed: int
    dedup: str = PRIMARY_DEDUP
    dp_lr: float | None = None
    epsilon: float | None = None  # the DP-SGD target ε where it is not the profile's (DPSGD at CRT's ε_conf)
    epochs: int | None = None  # epochs where they are not the profile's (a DP trainer trained until it converged)

    @property
    def label(self) -> str:
        """The trainer as tables show it: CRT under the alternate dedup reading and DPSGD at CRT's confidentiality ε
        are rows of their own."""
        if self.trainer == "DPSGD" and self.epsilon is not None:
            return MATCHED_LABEL
        return ALTERNATE_LABEL if self.trainer == "CRT" and self.dedup == ALTERNATE_DEDUP else self.trainer


ALTERNATE_LABEL = "CRT (duplicates masked)"
MATCHED_LABEL = "DPSGD at CRT's ε"
LATER_FIELDS = ("epsilon", "epochs")  # Run fields added after runs were cached: left out of a key while unset


@dataclass
class Data:
    """CustomerSim with canaries, its sentences, π per γ, CRT splits and the MIA pairs (member, look-alike)."""

    canaries: list[str]
    sentences: list[Sentence]
    test: list[Sentence]
    policies: dict[float, RegexPolicy]
    pairs: list[tuple[Sentence, Sentence]]
    address_pairs: list[tuple[Sentence, Sentence]]
    seed: int
    variant: str = ""  # "" for the chapter's data; the factorial's variants name what differs
    missed_kinds: tuple[str, ...] = ()  # formats π misses every time
    validation: list[Sentence] = field(default_factory=list)  # held-out dialogues that choose the DP learning rates

    def split(self, gamma: float, dedup: str = PRIMARY_DEDUP) -> CRTSplit:
        """Algorithm 1's D_pub / D_pri at γ under one deduplication reading."""
        return redaction.crt_split(self.sentences, self.policy(gamma), dedup)

    def policy(self, gamma: float) -> RegexPolicy:
        """π at miss rate γ (nested in γ)."""
        return self.policies.get(gamma) or RegexPolicy(gamma=gamma, seed=self.seed, missed_kinds=self.missed_kinds)


def build_data(p: Any, distinct: bool = False, missed_kinds: tuple[str, ...] = ()) -> Data:
    """Train, validation and test dialogues (canaries inserted into the training ones), sentences and the MIA pairs. The
    factorial's variants: canary copies in `distinct` contexts, a policy that misses the formats `missed_kinds`."""
    rng = np.random.default_rng(p.seed)
    canaries = [f"{rng.integers(0, 10**6):06d}" for _ in range(N_CANARIES)]
    train = customersim.insert_canaries(
        customersim.corpus(p.n_dialogues, p.seed), canaries, p.canary_copies, p.seed + 1, distinct
    )
    sentences = redaction.split_sentences(train)
    test = redaction.split_sentences(customersim.corpus(p.n_test, p.seed + 2), prefix="test")
    fresh = random.Random(p.seed + 3)
    look = {s.key: s for s in redaction.split_sentences([[customersim.look_alike(t, fresh) for t in d] for d in train])}
    pairs = [
        (s, look[s.key])
        for s in sentences
        if s.has_secret and "id" not in s.labels and s.key in look and look[s.key].has_secret
    ]
    if len(pairs) < p.n_mia:
        raise ParameterError(
            f"parameter 'n_mia': {p.n_mia} members requested, but the training sentences hold only {len(pairs)} "
            "with a look-alike; lower n_mia or raise n_dialogues"
        )
    order = np.random.default_rng(p.seed + 4).permutation(len(pairs))
    address = [pairs[i] for i in order if "address" in pairs[i][0].labels][: p.n_mia]
    return Data(
        canaries,
        sentences,
        test,
        {g: RegexPolicy(gamma=g, seed=p.seed, missed_kinds=missed_kinds) for g in p.gammas},
        [pairs[i] for i in order[: p.n_mia]],
        address,
        p.seed,
        " · ".join([*(["distinct contexts"] if distinct else []), *(f"π misses {k}" for k in missed_kinds)]),
        missed_kinds,
        redaction.split_sentences(customersim.corpus(p.n_val, p.seed + 5), prefix="val"),
    )


def canary_copies_in_crt(data: Data, gamma: float, dedup: str = PRIMARY_DEDUP) -> np.ndarray:
    """For each canary, how many of its copies CRT trains on with the digits in the clear (D_pub or D_pri): at most
    one under either reading of deduplication, and that one only when π misses it."""
    split = data.split(gamma, dedup)
    seen = {c: 0 for c in data.canaries}
    for s, tokens, removed in zip(data.sentences, split.tokens, split.removed):
        if "id" in s.labels and not removed:
            digits = "".join(t for t, label in zip(tokens, s.labels) if label == "id")
            if digits in seen:
                seen[digits] += 1
    return np.array([seen[c] for c in data.canaries])


def canary_copies_missed(data: Data, gamma: float) -> np.ndarray:
    """For each canary, how many of its inserted copies π at γ leaves unredacted."""
    policy = data.policy(gamma)
    missed = {c: 0 for c in data.canaries}
    for s in data.sentences:
        if "id" in s.labels:
            digits = "".join(t for t, label in zip(s.tokens, s.labels) if label == "id")
            if digits in missed and not policy.flags(s).any():
                missed[digits] += 1
    return np.array([missed[c] for c in data.canaries])


def canaries_at_risk(data: Data, trainer: str, gamma: float | None, dedup: str = PRIMARY_DEDUP) -> np.ndarray:
    """For each canary, whether the trainer trains on it in some form (its digits in the clear, or under DP-SGD's
    noise): redaction alone only on the copies π misses (canary_copies_missed), CRT on its one copy in the clear
    after deduplication (canary_copies_in_crt); every other trainer on every canary (S-DP trains on what π flags
    under DP-SGD). A canary not at risk never reaches the model: its exposure is at chance by construction."""
    if trainer == "non-private + mask":
        return canary_copies_missed(data, gamma) > 0
    if trainer in SPLIT_READERS:
        return canary_copies_in_crt(data, gamma, dedup) > 0
    return np.ones(len(data.canaries), dtype=bool)


class Encoder:
    """Token ids (and π's marks) of every part of the data for one model's vocabulary, memoized."""

    def __init__(self, data: Data, vocab: Any):
        self.data, self.vocab, self.memo = data, vocab, {}

    def marked(self, part: str, gamma: float | None = None, dedup: str = PRIMARY_DEDUP) -> tuple[list, list]:
        """(ids, marks) of a part: raw / mask (π-redacted at γ; marks = π's flags), public / private (split at γ),
        test and validation (marks = gold secrets), test-redacted (perfect π), members / nonmembers / address-*."""
        key = (part, gamma, dedup)
        if key not in self.memo:
            tokens, flags = self._tokens(part, gamma, dedup)
            pairs = [self.vocab.encode_marked(t, f) for t, f in zip(tokens, flags)]
            self.memo[key] = ([ids for ids, _ in pairs], [marks for _, marks in pairs])
        return self.memo[key]

    def ids(self, part: str, gamma: float | None = None, dedup: str = PRIMARY_DEDUP) -> list[list[int]]:
        """The ids alone of `marked`."""
        return self.marked(part, gamma, dedup)[0]

    def _tokens(self, part: str, gamma: float | None, dedup: str) -> tuple[list, list]:
        """Token lists and per-token flags of a part."""
        d = self.data
        if part in ("raw", "mask"):
            redacted, flags = redaction.masked_corpus(d.sentences, d.policy(gamma or 0.0))
            return ([list(s.tokens) for s in d.sentences] if part == "raw" else redacted), flags
        if part in ("public", "private"):
            tokens = d.split(gamma or 0.0, dedup).part(part == "private")
            return tokens, [np.zeros(len(t), dtype=bool) for t in tokens]
        if part in ("test", "test-redacted", "validation"):
            held_out = d.validation if part == "validation" else d.test
            gold = [np.array([label is not None for label in s.labels]) for s in held_out]
            if part != "test-redacted":
                return [list(s.tokens) for s in held_out], gold
            return [redaction.redact(s.tokens, g) for s, g in zip(held_out, gold)], gold
        source = {"members": (d.pairs, 0), "nonmembers": (d.pairs, 1)}
        source |= {"address-members": (d.address_pairs, 0), "address-nonmembers": (d.address_pairs, 1)}
        pairs, side = source[part]
        tokens = [list(pair[side].tokens) for pair in pairs]
        return tokens, [np.zeros(len(t), dtype=bool) for t in tokens]


def config(p: Any, run: Run) -> trainers.TrainConfig:
    """Optimisation settings of one run: the LSTM's CRT gets the paper's doubled epochs and smaller public batch, and so
    do the runs it is compared with on D_pub (the D_pub-only control and the factorial's arms): the same public
    budget. DPSGD gets CRT's epochs too (its DP-SGD steps converge more slowly). The DP-SGD learning rate is the run's
    own `dp_lr` (tuned on the validation split), else the first of the profile's grid."""
    if run.model == "LSTM":
        cfg = trainers.TrainConfig(
            epochs=p.epochs, lr=p.lr, target_epsilon=p.target_epsilon, delta=DELTA, seed=run.seed
        )
        if run.trainer in ("CRT", CONTROL, *SPLIT_PLAIN, CLIPPED):
            cfg = replace(cfg, epochs=p.crt_epochs, batch=p.crt_batch, noise=run.trainer != CLIPPED)
        elif run.trainer == "DPSGD":
            cfg = replace(cfg, epochs=p.crt_epochs)
    else:
        cfg = trainers.TrainConfig(
            epochs=p.gpt_epochs,
            lr=p.gpt_lr,
            batch=32,
            clip=1.0,
            target_epsilon=p.target_epsilon,
            delta=DELTA,
            seed=run.seed,
            optimizer="adam",
        )
    cfg = replace(cfg, target_epsilon=cfg.target_epsilon if run.epsilon is None else run.epsilon)
    cfg = replace(cfg, epochs=cfg.epochs if run.epochs is None else run.epochs)
    return replace(cfg, dp_lr=p[DP_LR_GRID[run.model]][0] if run.dp_lr is None else run.dp_lr)


def planned_runs(
    p: Any,
    fig2_gamma: float,
    dp_lrs: dict[tuple[str, str], float] | None = None,
    epochs: dict[tuple[str, str], int | None] | None = None,
) -> list[Run]:
    """Every run of the chapter: per seed and model, the γ-free trainers, the γ sweep (S-DP on the LSTM only, as in
    the paper) and CRT's two controls. Every seed trains at γ = 0 and Fig. 2's γ; the other γ of the sweep take the
    first seed only (the time budget). The DP trainers take their learning rate from `dp_lrs` ((model, trainer) ->
    lr; the profile's where absent) and their epochs from `epochs` (the same keys; the profile's where absent or
    None); the D_pub-only control takes CRT's, its public budget."""
    lrs, long = dp_lrs or {}, dict(epochs or {})
    for model in MODELS:
        long.setdefault((model, CONTROL), long.get((model, "CRT")))
    run = lambda model, t, g, seed, dedup=PRIMARY_DEDUP: Run(
        model, t, g, seed, dedup, lrs.get((model, t)), epochs=long.get((model, t))
    )
    runs = []
    for seed in range(p.seed, p.seed + p.n_seeds):
        for model in MODELS:
            gammas = p.gammas if model == "LSTM" else p.gpt_gammas
            if seed != p.seed:
                gammas = [g for g in gammas if g in (0.0, fig2_gamma)]
            runs += [run(model, t, None, seed) for t in ("non-private", "DPSGD", CONTROL)]
            swept = ("non-private + mask", "S-DP", "CRT") if model in SDP_MODELS else ("non-private + mask", "CRT")
            for g in gammas:
                runs += [run(model, t, g, seed) for t in swept]
            runs.append(run(model, "CRT", fig2_gamma, seed, ALTERNATE_DEDUP))
    return runs


OWN_PARAMS = {
    "LSTM": ("emb", "hidden", "epochs", "crt_epochs", "crt_batch", "lr"),
    "GPT-2": ("gpt_embd", "gpt_layers", "gpt_epochs", "gpt_lr", "gpt_name"),
}  # a run's DP learning rate is its own (Run.dp_lr), not the grid it was chosen from
DP_LR_GRID = {"LSTM": "dp_lrs", "GPT-2": "gpt_dp_lrs"}
DATA_PARAMS = ("n_dialogues", "n_test", "n_val", "canary_copies", "seed", "target_epsilon", "profile")


def vocab_key(vocab: Any) -> Any:
    """What identifies a vocabulary in a cache key: the SHA-1 of a word vocabulary's entries, or a tokenizer's size."""
    if isinstance(vocab, language_model.Vocab):
        return hashlib.sha1("\n".join([str(vocab.spell), *vocab.itos]).encode("utf-8")).hexdigest()
    return len(vocab)


# a cache file read in this process -> (its stamp, its history's length)
_HISTORY: dict[Path, tuple[tuple[int, int], int]] = {}


def _stamp(path: Path) -> tuple[int, int]:
    """A cache file's modification time and size: a file written again after it was read differs in one of them."""
    st = path.stat()
    return st.st_mtime_ns, st.st_size


class Trainer:
    """Trains (or loads from the cache) the models of one chapter run, with a history of non-secret validation
    perplexity, after every epoch for the runs `track` picks and after the last one for the others, and of raw test
    perplexity after the last epoch."""

    def __init__(self, p: Any, data: Data, encoders: dict[str, Encoder], new_model: Any, track: Any = None):
        self.p, self.data, self.encoders, self.new_model = p, data, encoders, new_model
        self.track = track or (lambda run: True)

    def spec(self, run: Run) -> dict:
        """Everything that determines a trained model."""
        keys = (*DATA_PARAMS, *OWN_PARAMS[run.model])
        keyed = run.__dict__ | ({} if run.trainer in SPLIT_READERS else {"dedup": UNSPLIT_KEY})
        spec = {
            "run": {k: v for k, v in keyed.items() if not (k in LATER_FIELDS and v is None)},
            "params": {k: self.p[k] for k in keys},
            # noise=True, every run's but the factorial's clipped arm, is left out: earlier runs keep their keys
            "cfg": {k: v for k, v in config(self.p, run).__dict__.items() if not (k == "noise" and v)},
            "vocab": vocab_key(self.encoders[run.model].vocab),
            "version": VERSION,
            "generator": customersim.GENERATOR,
        }
        return spec | ({"variant": self.data.variant} if self.data.variant else {})

    def path(self, run: Run):
        """The cache file of one run."""
        return cache.entry_path("crt", f"{run.model}-{run.label}-s{run.seed}", self.spec(run), suffix=".pt")

    def _needed(self, run: Run) -> int:
        """How many epochs of history the chapter needs of a run: every epoch where it is tracked, else the last."""
        return config(self.p, run).epochs if self.track(run) else 1

    def _saved(self, run: Run) -> dict | None:
        """The cached entry of a run, or None: absent, damaged, or trained untracked where Fig. 2 or a walk now needs
        its per-epoch history (such an entry is removed, to be trained again)."""
        path = self.path(run)
        if not path.exists():
            return None
        try:
            saved = torch.load(path, weights_only=False)
        except cache.DAMAGED:
            path.unlink(missing_ok=True)
            return None
        _HISTORY[path] = _stamp(path), len(saved["info"]["history"])
        if _HISTORY[path][1] < self._needed(run):
            path.unlink()
            return None
        return saved

    def has(self, run: Run) -> bool:
        """Whether the cache holds the run as this chapter needs it; an entry this process has read already and found
        long enough is not loaded again while the file is unchanged."""
        path = self.path(run)
        known = _HISTORY.get(path)
        if known is not None and known[1] >= self._needed(run) and path.exists() and known[0] == _stamp(path):
            return True
        return self._saved(run) is not None  # read (and removed where too short) as before

    def info(self, run: Run) -> dict:
        """The run's info as __call__ gives it, read from the cache without building the model where it is cached
        (a walk reads only the infos of the rates it tried)."""
        saved = self._saved(run)
        return saved["info"] if saved is not None else self(run)[1]

    def __call__(self, run: Run) -> tuple[torch.nn.Module, dict]:
        """The trained model (eval mode) and its info: ε, ε_dp, steps, seconds, per-epoch history."""
        private = run.trainer in PER_SAMPLE
        path = self.path(run)
        saved = self._saved(run)
        if saved is not None:
            model = self.new_model(run.model, private)
            model.load_state_dict(saved["state"])
            return model.eval(), saved["info"]
        model, info = self._train(run, private)
        with atomic.atomic_path(path) as tmp:
            torch.save({"state": model.state_dict(), "info": info}, tmp)
        return model.eval(), info

    def _train(self, run: Run, private: bool) -> tuple[torch.nn.Module, dict]:
        """Train one run from scratch (or from the pretrained weights)."""
        enc, cfg = self.encoders[run.model], config(self.p, run)
        test, history = enc.ids("test"), []

        every_epoch = self.track(run)

        def on_epoch(epoch: int, model: torch.nn.Module, epsilon: float | None) -> None:
            """Record the non-secret validation perplexity and the ε spent after an epoch; the raw test perplexity
            after the last."""
            last = epoch == cfg.epochs
            if every_epoch or last:
                ppl = language_model.perplexity(model, test) if last else None
                history.append(
                    {"epoch": epoch, "epsilon": epsilon, "validation": validation(model, enc), "perplexity": ppl}
                )

        torch.manual_seed(run.seed)
        model, began = self.new_model(run.model, private), time.perf_counter()
        info: dict[str, Any] = {"epsilon": None, "epsilon_dp": None}
        g = run.gamma
        if run.trainer == "non-private":
            trainers.train_nonprivate(model, enc.ids("raw"), cfg, on_epoch=on_epoch)
        elif run.trainer == CONTROL:
            trainers.train_nonprivate(model, enc.ids("public", 0.0), cfg, desc="D_pub", on_epoch=on_epoch)
        elif run.trainer == "non-private + mask":
            trainers.train_nonprivate(model, enc.ids("mask", g), cfg, desc="mask", on_epoch=on_epoch)
        elif run.trainer == "S-DP":
            _, eps = trainers.train_sdp(model, *enc.marked("raw", g), *enc.marked("mask", g), cfg, on_epoch=on_epoch)
            info.update(epsilon=eps, epsilon_dp=eps)
        elif run.trainer == "DPSGD":
            _, eps = trainers.train_dpsgd(model, enc.ids("raw"), cfg, on_epoch=on_epoch)
            info.update(epsilon=eps, epsilon_dp=eps)
        elif run.trainer in SPLIT_PLAIN:
            public, private_ids = enc.ids("public", g, run.dedup), enc.ids("private", g, run.dedup)
            private_ids = private_ids if run.trainer == SPLIT_PLAIN[0] else []
            trainers.train_split_plain(model, public, private_ids, cfg, on_epoch=on_epoch)
        else:
            public, private_ids = enc.ids("public", g, run.dedup), enc.ids("private", g, run.dedup)
            _, eps_dp, eps_conf = trainers.train_crt(model, public, private_ids, cfg, g, on_epoch=on_epoch)
            info.update(epsilon=eps_conf, epsilon_dp=eps_dp)
        info.update(train_seconds=round(time.perf_counter() - began, 1), history=history, **self.steps(run))
        return model, info

    def steps(self, run: Run) -> dict[str, int]:
        """Optimizer steps of one run: public (plain) and private (DP-SGD, expected under Poisson sampling)."""
        enc, cfg = self.encoders[run.model], config(self.p, run)
        n_raw = len(enc.ids("raw"))
        per_epoch = {
            "non-private": (n_raw, 0, cfg.batch),
            CONTROL: (len(enc.ids("public", 0.0)), 0, cfg.batch),
            "non-private + mask": (n_raw, 0, cfg.batch),
            "S-DP": (n_raw, n_raw, cfg.dp_batch),
            "DPSGD": (0, n_raw, cfg.dp_batch),
        }
        if run.trainer in ("CRT", *SPLIT_PLAIN, CLIPPED):
            pub, pri = len(enc.ids("public", run.gamma, run.dedup)), len(enc.ids("private", run.gamma, run.dedup))
            pri = 0 if run.trainer == SPLIT_PLAIN[1] else pri
            public, private = -(-pub // cfg.batch), -(-pri // cfg.dp_batch)
        else:
            n_pub, n_pri, batch = per_epoch[run.trainer]
            public, private = -(-n_pub // batch), -(-n_pri // cfg.dp_batch)
            if run.trainer == "S-DP":
                public = private  # one public step on the redacted copy of every Poisson batch
        return {"public_steps": public * cfg.epochs, "private_steps": private * cfg.epochs}


def canary_scores(stepper: Any, encoder: Encoder, length: int = CANARY_DIGITS, batch: int = 4096) -> np.ndarray:
    """Exact log-probabilities of every `length`-digit candidate after "My ID is:", by the prefix tree."""
    return canary_levels(stepper, encoder, length, batch)[-1]


def canary_levels(stepper: Any, encoder: Encoder, length: int = CANARY_DIGITS, batch: int = 4096) -> list[np.ndarray]:
    """The log-probability of every digit prefix of each length 1..`length` after "My ID is:" (canary.tree_levels):
    the last level is canary_scores, the earlier ones feed a beam search."""
    context = encoder.vocab.encode(["My", "ID", "is", ":"])[:-1]
    digits = [encoder.vocab.token_id(str(d)) for d in range(10)]
    return canary.tree_levels(stepper, context, digits, length, batch=batch)


STEPPERS = {"LSTM": (language_model.LSTMStepper, 16384), "GPT-2": (gpt.GPT2Stepper, 4096)}


def attack_designs(data: Data, n_groups: int, seed: int) -> dict[str, membership_attacks.Attack]:
    """The three MIA designs: individual and group (disjoint folds) on all secret types, individual on addresses.
    Groups have 20 sentences, or half the pairs when fewer than 40 exist (tiny test runs)."""
    return {
        "individual": membership_attacks.individual_attack(len(data.pairs), seed),
        "group": membership_attacks.group_attack(len(data.pairs), n_groups, min(GROUP, len(data.pairs) // 2), seed),
        "address": membership_attacks.individual_attack(len(data.address_pairs), seed),
    }


def mia_scores(model: torch.nn.Module, enc: Encoder, designs: dict, n_null: int, seed: int) -> dict[str, dict]:
    """Accuracy and permutation null of every MIA design on one model, with the per-pair scores (sentence
    perplexity) of members and non-members."""
    ppl = {part: np.exp(language_model.sentence_nll(model, enc.ids(part))) for part in ("members", "nonmembers")}
    for part in ("address-members", "address-nonmembers"):
        ppl[part] = np.exp(language_model.sentence_nll(model, enc.ids(part))) if enc.ids(part) else np.zeros(0)
    out = {}
    for name, design in designs.items():
        prefix = "address-" if name == "address" else ""
        m, n = ppl[prefix + "members"], ppl[prefix + "nonmembers"]
        out[name] = {
            "accuracy": membership_attacks.attack_accuracy(design, m, n),
            "null": membership_attacks.attack_null(design, m, n, n_null, seed),
            "members": m,
            "nonmembers": n,
        }
    return out


def test_nll(model: torch.nn.Module, enc: Encoder, part: str = "test") -> dict[str, np.ndarray]:
    """Per test (or validation) sentence: NLL summed over its first token, secret tokens and other tokens, with their
    counts, and (test only) the summed NLL and count of the redacted test sentence."""
    rows = language_model.token_nll_rows(model, enc.ids(part))
    marks = enc.marked(part)[1]
    first = np.array([r[0] for r in rows])
    later = [np.asarray(m[2:]) > 0 for m in marks]  # secret marks of the targets after the first
    secret = np.array([r[1:][s].sum() for r, s in zip(rows, later)])
    n_secret = np.array([s.sum() for s in later], dtype=float)
    total = np.array([r.sum() for r in rows])
    counts = np.array([len(r) for r in rows], dtype=float)
    out = {
        "first": first,
        "secret": secret,
        "ordinary": total - first - secret,
        "total": total,
        "n_total": counts,
        "n_secret": n_secret,
        "n_ordinary": counts - 1 - n_secret,
    }
    if part != "test":
        return out
    redacted = language_model.token_nll_rows(model, enc.ids("test-redacted"))
    return out | {
        "redacted": np.array([r.sum() for r in redacted]),
        "n_redacted": np.array([len(r) for r in redacted], dtype=float),
    }


def validation(model: torch.nn.Module, enc: Encoder) -> float:
    """Non-secret perplexity on the validation dialogues (what the claims measure on test): the learning-rate choice."""
    nll, count = nll_of(test_nll(model, enc, "validation"), "non-secret")
    return float(np.exp(nll.sum() / count.sum()))


PERPLEXITIES = ("raw", "non-secret", "redacted")


def nll_of(nll: dict[str, np.ndarray], kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-sentence summed NLL and token count of one perplexity kind, from a `test_nll` dict."""
    if kind == "non-secret":
        return nll["first"] + nll["ordinary"], nll["n_total"] - nll["n_secret"]
    if kind == "raw":
        return nll["total"], nll["n_total"]
    if kind == "redacted":
        return nll["redacted"], nll["n_redacted"]
    raise ValueError(f"kind must be one of {PERPLEXITIES}, got {kind!r}")


def dialogues_of(sentences: list[Sentence]) -> np.ndarray:
    """The dialogue each sentence comes from (its key before ':'): the cluster a test sentence's perplexity shares."""
    return np.array([s.key.split(":", 1)[0] for s in sentences])


_WEIGHTS: dict[tuple[str, int, int], np.ndarray] = {}  # the last few test sets' resample weights, read-only


def _dialogue_weights(dialogues: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """stats.unit_weights over the test dialogues, drawn once per (test set, resamples, seed) in this process: every
    perplexity of a chapter run resamples the same test set alike (about 70 intervals, 0.17 s of draws each)."""
    key = (hashlib.sha1("\n".join(map(str, dialogues)).encode("utf-8")).hexdigest(), n_resamples, seed)
    if key not in _WEIGHTS:
        if len(_WEIGHTS) >= 4:
            _WEIGHTS.pop(next(iter(_WEIGHTS)))
        _WEIGHTS[key] = stats.unit_weights(dialogues, n_resamples=n_resamples, seed=seed)
        _WEIGHTS[key].setflags(write=False)
    return _WEIGHTS[key]


def dialogue_perplexity(
    nll_a: np.ndarray,
    counts: np.ndarray,
    nll_b: np.ndarray | None,
    dialogues: np.ndarray,
    *,
    seed: int = 0,
    n_resamples: int = 2000,
) -> stats.Interval:
    """Corpus perplexity exp(sum nll / sum counts), or the ratio ppl_a / ppl_b paired by seed, as the seeds' geometric
    mean with a two-stage interval on the log scale, so that a ratio's interval stays positive: the test dialogues
    resampled, then the sentences within them (stats.unit_weights), every seed and both models on the same resample
    (stats.clustered_interval, sharing 'items').

    nll_a, nll_b: summed token NLL per (seed, sentence); counts: tokens per sentence; dialogues: each sentence's."""
    a = np.atleast_2d(np.asarray(nll_a, dtype=np.float64))
    b = None if nll_b is None else np.atleast_2d(np.asarray(nll_b, dtype=np.float64))
    c = np.asarray(counts, dtype=np.float64)
    if a.shape[1] != c.size or len(dialogues) != c.size or (b is not None and b.shape != a.shape):
        raise ValueError(f"need (seeds, sentences) NLL sums, one count and dialogue per sentence, got {a.shape}, "
                         f"{c.shape}, {len(dialogues)}")  # fmt: skip
    weights = _dialogue_weights(np.asarray(dialogues), n_resamples, seed)

    def per_seed(w: np.ndarray) -> np.ndarray:
        """(resamples, seeds) log perplexity (log ratio) under sentence multiplicities w (resamples, sentences)."""
        tokens = (w @ c)[:, None]
        log_ppl = (w @ a.T) / tokens
        return log_ppl - (w @ b.T) / tokens if b is not None else log_ppl

    what = "paired perplexity ratio" if b is not None else "perplexity"
    iv = stats.clustered_interval(
        per_seed(np.ones((1, c.size)))[0],
        per_seed(weights),
        clusters=np.asarray(dialogues),
        unit="test dialogues",
        sharing="items",
        words=f"{what} over {c.size:,} test sentences, on the log scale (the seeds' geometric mean)",
    )
    return stats.Interval(math.exp(iv.estimate), math.exp(iv.low), math.exp(iv.high), iv.method)


def cached(name: str, spec: dict, build: Any) -> tuple[Any, bool]:
    """One of the chapter's cached results, a torch-pickled data/crt entry keyed by `spec`: (it, was it cached)."""
    path = cache.entry_path("crt", name, spec, suffix=".pt")
    return cache.file_entry(path, lambda tmp: torch.save(build(), tmp), lambda f: torch.load(f, weights_only=False))
