"""Unit tests of the CRT chapter's runs: the data, the token categories of the test NLL, the run plan."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from repro.crt import experiment, language_model, runs
from repro.params import Resolved, resolve


@pytest.fixture(scope="module")
def smoke() -> Resolved:
    return Resolved(resolve({"profile": "smoke"}, experiment.SPEC))


@pytest.fixture(scope="module")
def data(smoke: Resolved) -> runs.Data:
    return runs.build_data(smoke)


def test_a_perfect_policy_leaves_no_canary_copy_and_a_blind_one_leaves_them_all(data: runs.Data, smoke) -> None:
    assert (runs.canary_copies_missed(data, 0.0) == 0).all()
    everything = runs.canary_copies_missed(data, 1.0)
    assert (everything == smoke.canary_copies).all()  # every copy of every canary stays in the clear


def test_test_nll_categories_add_up_to_the_direct_sum(data: runs.Data) -> None:
    vocab = language_model.Vocab.build([s.tokens for s in data.sentences], extra=["<MASK>"])
    enc = runs.Encoder(data, vocab)
    torch.manual_seed(0)
    model = language_model.LSTMLM(len(vocab), 8, 8).eval()
    nll = runs.test_nll(model, enc)
    direct = language_model.token_nll_rows(model, enc.ids("test"))
    assert np.allclose(nll["first"] + nll["secret"] + nll["ordinary"], [r.sum() for r in direct])
    assert np.allclose(nll["first"], [r[0] for r in direct])
    gold = [sum(label is not None for label in s.labels[1:]) for s in data.test]  # secrets after the first token
    assert nll["n_secret"].tolist() == gold and nll["n_secret"].sum() > 0
    assert nll["n_total"].tolist() == [len(s.tokens) + 1 for s in data.test]  # every token and </s>
    redacted = enc.ids("test-redacted")
    mask = vocab.token_id("<MASK>")
    assert sum(ids.count(mask) for ids in redacted) == sum(sum(x is not None for x in s.labels) for s in data.test)


def test_every_seed_trains_at_gamma_zero_and_fig2_gamma_only_the_first_seed_sweeps(smoke) -> None:
    p = Resolved(dict(smoke) | {"n_seeds": 3, "gammas": [0.0, 0.1, 0.3], "gpt_gammas": [0.0, 0.1]})
    plan = runs.planned_runs(p, 0.1)
    assert len(plan) == len(set(plan))
    by_seed = {s: {(r.model, r.trainer, r.gamma, r.dedup) for r in plan if r.seed == s} for s in (0, 1, 2)}
    assert by_seed[1] == by_seed[2] and ("LSTM", "CRT", 0.3, "mask") in by_seed[0] - by_seed[1]
    assert ("LSTM", "CRT", 0.1, "remove") in by_seed[2] and ("GPT-2", "D_pub only", None, "mask") in by_seed[2]
