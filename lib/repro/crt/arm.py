"""The CRT chapter's pretrained arm: non-private, DPSGD and CRT fine-tunes of SmolLM2-135M with a frozen trunk and a
trainable last block, trained once and cached (weights and scores)."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import torch

from .. import stats
from ..pretrained import SMOLLM2_HUB
from . import customersim, membership_attacks, pretrained_arm, trainers
from .runs import CONTROL, DELTA, Data, Encoder, cached, dialogue_perplexity, dialogues_of, mia_scores, nll_of, test_nll

TRAINERS = ("non-private", "DPSGD", "CRT")
SMOKE_LAYERS = 2  # smoke runs keep only SmolLM2's first decoder blocks
LR = 5e-4  # Adam, plain and DP steps alike (the paper's GPT learning rate)
GAMMA = 0.1
VERSION = 4  # the arm's own: bump when its training or scoring changes (the small models' is runs.VERSION); 4: the LM
# head at real targets only (FrozenTrunkLM.token_nll), equal up to float rounding
RENDERING = 3  # SmolVocab's text rendering (2: punctuation glued; 3: digits glued only after a digit or punctuation, no
# longer to a word, "in 3 days"); part of the cache key
PARAMS = ("arm_source", "arm_dialogues", "arm_epochs", "arm_test", "target_epsilon", "n_null")
PARAMS += ("n_dialogues", "n_test", "canary_copies", "seed", "n_mia", "profile")
SCORING = ("n_mia", "n_null")  # parameters of the attack alone: a change re-scores the kept fine-tunes


def config(p: Any) -> trainers.TrainConfig:
    """Adam for plain and DP steps alike, at the arm's learning rate, calibrated to the chapter's ε."""
    return trainers.TrainConfig(
        epochs=p.arm_epochs,
        lr=LR,
        batch=16,
        dp_lr=LR,
        dp_batch=64,
        clip=1.0,
        max_grad_norm=0.1,
        target_epsilon=p.target_epsilon,
        delta=DELTA,
        seed=p.seed,
        optimizer="adam",
    )


def _load(p: Any, memo: dict) -> tuple[torch.nn.Module, Any]:
    """A fresh SmolLM2 arm (frozen trunk, last block trainable) sharing the trunk states in `memo`; its vocabulary."""
    return pretrained_arm.load_arm(
        p.arm_source,
        SMOLLM2_HUB,
        trainable_layers=1,
        n_layers=SMOKE_LAYERS if p.profile == "smoke" else None,
        memo=memo,
    )


def _trainable(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The weights a fine-tune changes (the trainable block), for a small cache file."""
    return {k: v.detach().clone() for k, v in model.named_parameters() if v.requires_grad}


def _fine_tune(p: Any, trainer: str, model: torch.nn.Module, enc: Encoder) -> dict:
    """Train one fine-tune in place; its ε values and wall time."""
    cfg, began, info = config(p), time.perf_counter(), {"epsilon": None, "epsilon_dp": None}
    torch.manual_seed(p.seed)
    if trainer == "non-private":
        trainers.train_nonprivate(model, enc.ids("raw"), cfg)
    elif trainer == "DPSGD":
        _, eps = trainers.train_dpsgd(model, enc.ids("raw"), cfg)
        info.update(epsilon=eps, epsilon_dp=eps)
    else:
        _, eps_dp, eps_conf = trainers.train_crt(
            model, enc.ids("public", GAMMA), enc.ids("private", GAMMA), replace(cfg, epochs=p.arm_epochs), GAMMA
        )
        info.update(epsilon=eps_conf, epsilon_dp=eps_dp)
    return info | {"train_seconds": round(time.perf_counter() - began, 1)}


def _first_dialogues(data: Data, n: int) -> list:
    """The training sentences of the first `n` dialogues (keys are 'dialogue:index')."""
    return [s for s in data.sentences if int(s.key.split(":")[0]) < n]


def _subset(p: Any, data: Data) -> Data:
    """The arm's data: its training dialogues, its test sentences, the MIA pairs among them."""
    sub = replace(data, sentences=_first_dialogues(data, p.arm_dialogues), test=data.test[: p.arm_test])
    kept = {s.key for s in sub.sentences}
    return replace(sub, pairs=[pair for pair in data.pairs if pair[0].key in kept], address_pairs=[])


def _control(p: Any, data: Data, memo: dict) -> dict:
    """A plain fine-tune on D_pub alone, scored on the test set: how much of CRT's utility its public part gives."""
    model, vocab = _load(p, memo)
    enc = Encoder(_subset(p, data), vocab)
    torch.manual_seed(p.seed)
    began = time.perf_counter()
    trainers.train_nonprivate(model, enc.ids("public", GAMMA), config(p), desc="D_pub")
    seconds = round(time.perf_counter() - began, 1)
    return {"epsilon": None, "epsilon_dp": None, "train_seconds": seconds, "nll": test_nll(model, enc), "mia": None}


def _train(p: Any, data: Data, memo: dict) -> dict:
    """Fine-tune the three trainers: per trainer its ε values, wall time and trainable weights."""
    sub, out = _subset(p, data), {}
    for trainer in TRAINERS:
        model, vocab = _load(p, memo)
        out[trainer] = _fine_tune(p, trainer, model, Encoder(sub, vocab)) | {"weights": _trainable(model)}
    return out


def _score(p: Any, data: Data, trained: dict, memo: dict) -> dict:
    """Test NLL and the individual MIA of the untouched pretrained model and of each fine-tune in `trained`."""
    sub = _subset(p, data)
    designs = {"individual": membership_attacks.individual_attack(len(sub.pairs), p.seed)}
    out: dict[str, Any] = {}
    for trainer in ("pretrained", *TRAINERS):
        model, vocab = _load(p, memo)
        info = {"epsilon": None, "epsilon_dp": None, "train_seconds": 0.0, "weights": None}
        if trainer != "pretrained":
            info = trained[trainer]
            model.load_state_dict(info["weights"], strict=False)
        model.eval()
        enc = Encoder(sub, vocab)
        out[trainer] = {**info, "nll": test_nll(model, enc), "mia": mia_scores(model, enc, designs, p.n_null, p.seed)}
    return out


def run(p: Any, data: Data) -> dict:
    """The arm's results and its D_pub-only control, from the cache when they exist (training them is the arm's
    whole cost). The fine-tunes are kept apart from their scores: the attack's sizes (n_mia, n_null) re-score the
    kept fine-tunes and never retrain them."""
    spec = {k: p[k] for k in PARAMS} | {"version": VERSION, "gamma": GAMMA, "rendering": RENDERING}
    spec |= {"generator": customersim.GENERATOR}
    train_spec = {k: v for k, v in spec.items() if k not in SCORING}
    trained: dict[str, bool] = {}
    memo: dict = {}  # the frozen trunk's states, once per distinct sentence for every model of the arm

    def fine_tunes() -> dict:
        found, trained["cached"] = cached("pretrained-arm-fine-tunes", train_spec, lambda: _train(p, data, memo))
        return found

    result, was_cached = cached("pretrained-arm", spec, lambda: _score(p, data, fine_tunes(), memo))
    control, _ = cached("pretrained-arm-control", train_spec, lambda: _control(p, data, memo))
    return result | {CONTROL: control, "cached": trained.get("cached", was_cached)}


def perplexity(
    result: dict, trainer: str, kind: str, versus: str | None = None, seed: int = 0, test: list | None = None
) -> stats.Interval:
    """Test perplexity of one fine-tune (or its ratio to another), bootstrapped over test sentences; with `test` (the
    full test sentences, whose first ones the arm scores) over their test dialogues, then the sentences within them."""
    a, counts = nll_of(result[trainer]["nll"], kind)
    b = None if versus is None else nll_of(result[versus]["nll"], kind)[0][None]
    if test is not None:
        return dialogue_perplexity(a[None], counts, b, dialogues_of(test[: counts.size]), seed=seed)
    return stats.seeds_and_items_perplexity(a[None], counts, b, seed=seed)


def table(result: dict) -> pd.DataFrame:
    """Per trainer: three test perplexities, the ratio to non-private, the MIA and its null band, ε, time."""
    rows = []
    for trainer in ("pretrained", *TRAINERS, CONTROL):
        r = result[trainer]
        ratio = perplexity(result, trainer, "non-secret", "non-private")
        low, high = stats.null_band(r["mia"]["individual"]["null"]) if r["mia"] else (np.nan, np.nan)
        rows.append(
            {
                "trainer": trainer,
                "ppl_raw": perplexity(result, trainer, "raw").estimate,
                "ppl_non-secret": perplexity(result, trainer, "non-secret").estimate,
                "ppl_redacted": perplexity(result, trainer, "redacted").estimate,
                "ratio_to_non-private": ratio.estimate,
                "ratio_low": ratio.low,
                "ratio_high": ratio.high,
                "mia": r["mia"]["individual"]["accuracy"] if r["mia"] else np.nan,
                "mia_null_low": low,
                "mia_null_high": high,
                "epsilon": r["epsilon"],
                "train_seconds": r["train_seconds"],
            }
        )
    return pd.DataFrame(rows)


def words(result: dict) -> str:
    """What the arm's table says, and what it cost."""
    t = table(result).set_index("trainer")
    cost = sum(result[k]["train_seconds"] for k in (*TRAINERS, CONTROL))
    source = "read from the cache" if result["cached"] else "trained in this run"
    return (
        f"Before fine-tuning, SmolLM2 scores {t.loc['pretrained', 'ppl_non-secret']:.2f} on the non-secret test "
        f"tokens; the non-private fine-tune {t.loc['non-private', 'ppl_non-secret']:.2f}, DPSGD "
        f"{t.loc['DPSGD', 'ppl_non-secret']:.2f} and CRT {t.loc['CRT', 'ppl_non-secret']:.2f} (ratio to non-private "
        f"{t.loc['CRT', 'ratio_to_non-private']:.2f}); a fine-tune on D_pub alone scores "
        f"{t.loc[CONTROL, 'ppl_non-secret']:.2f}. The fine-tunes were {source}; training them took "
        f"{cost / 60:.1f} min on this machine, besides the frozen trunk's pass over every sentence. The arm is the "
        "one artefact this chapter keeps between builds (in `data/crt`, keyed by its inputs): a cold build pays "
        "that cost once, and later builds read it back."
    )
