"""Unit tests of the CRT chapter's runs: the data, the token categories of the test NLL, the run plan."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from repro import stats
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
    assert by_seed[1] == by_seed[2] and ("LSTM", "CRT", 0.3, "remove") in by_seed[0] - by_seed[1]
    assert ("LSTM", "CRT", 0.1, "mask") in by_seed[2] and ("GPT-2", "D_pub only", None, "remove") in by_seed[2]
    crt = [r for r in plan if r.trainer == "CRT"]
    assert {r.label for r in crt if r.dedup == "mask"} == {runs.ALTERNATE_LABEL} and {r.gamma for r in crt if
        r.dedup == "mask"} == {0.1}  # fmt: skip


def test_crt_removes_duplicates_and_only_split_readers_are_keyed_by_the_reading(data: runs.Data, smoke) -> None:
    removed, masked = data.split(0.1), data.split(0.1, "mask")
    assert removed.removed.sum() == removed.duplicate.sum() > 0 and not masked.removed.any()
    assert removed.part(False) == masked.part(False)  # D_pub is the same under either reading
    assert len(removed.part(True)) == len(masked.part(True)) - removed.duplicate.sum()  # no bare <MASK> left
    assert ["<MASK>"] not in removed.part(True) and ["<MASK>"] in masked.part(True)
    enc = runs.Encoder(data, experiment.word_vocabulary(data))
    key = lambda run: runs.Trainer(smoke, data, {"LSTM": enc}, None).spec(run)["run"]
    for t in ("non-private", "DPSGD", "S-DP", "D_pub only", "non-private + mask"):  # the same model either way
        assert key(runs.Run("LSTM", t, 0.1, 0, "remove")) == key(runs.Run("LSTM", t, 0.1, 0, "mask"))
        assert key(runs.Run("LSTM", t, 0.1, 0))["dedup"] == "mask"  # the reading these entries were keyed under
        assert "epsilon" not in key(runs.Run("LSTM", t, 0.1, 0))  # a later field, unset: earlier keys stand
    crt = key(runs.Run("LSTM", "CRT", 0.1, 0))
    assert crt["dedup"] == "remove" != key(runs.Run("LSTM", "CRT", 0.1, 0, "mask"))["dedup"]
    assert key(runs.Run("LSTM", "DPSGD", None, 0, epsilon=0.7))["epsilon"] == 0.7
    assert runs.config(smoke, runs.Run("LSTM", "DPSGD", None, 0, epsilon=0.7)).target_epsilon == 0.7
    assert runs.Run("LSTM", "DPSGD", None, 0, epsilon=0.7).label == runs.MATCHED_LABEL


def test_crt_trains_on_at_most_one_copy_of_each_canary(data: runs.Data, smoke) -> None:
    assert (runs.canary_copies_in_crt(data, 0.0) == 0).all()  # a perfect policy redacts the one copy dedup keeps
    for dedup in ("mask", "remove"):
        assert (runs.canary_copies_in_crt(data, 1.0, dedup) == 1).all()  # a blind policy: one copy, the first
    assert (runs.canary_copies_missed(data, 1.0) == smoke.canary_copies).all()  # where redaction alone sees them all


def test_the_canaries_at_risk_are_those_the_trainer_trains_on(data: runs.Data, smoke) -> None:
    for g in (0.0, 0.3, 1.0):
        mask = runs.canaries_at_risk(data, "non-private + mask", g)
        crt = runs.canaries_at_risk(data, "CRT", g)
        assert np.array_equal(mask, runs.canary_copies_missed(data, g) > 0)
        assert not (crt & ~mask).any()  # CRT keeps the first copy of each canary: at risk only if π misses that one
        assert np.array_equal(crt, runs.canary_copies_in_crt(data, g) > 0)
        for trainer in ("non-private", "DPSGD", "S-DP"):  # S-DP trains on what π flags, under DP-SGD
            assert runs.canaries_at_risk(data, trainer, g).all()
    assert not runs.canaries_at_risk(data, "non-private + mask", 0.0).any()  # a perfect policy: none at risk
    assert (runs.canaries_at_risk(data, "CRT", 0.3) < runs.canaries_at_risk(data, "non-private + mask", 0.3)).any()
    assert runs.canaries_at_risk(data, "CRT", 1.0).all() and runs.canaries_at_risk(data, "DPSGD", None).all()


def _exposure_cells(at_risk: list[int], gammas: list[float]) -> pd.DataFrame:
    """Exposure cells of one trainer as exposure_table gives them: leak columns of the max, of the mean of the
    canaries at risk (NaN where none is) and of all 10 canaries' mean where none is."""
    rows = []
    for g, k in zip(gammas, at_risk):
        row = {"model": "LSTM", "trainer": "CRT", "gamma": g, "gamma_free": False, "seeds": 3, "at_risk": k}
        row |= {"leak": 0.2, "leak_low": -1.0, "leak_high": 1.0}
        mean = {"leak": 0.1, "leak_low": -0.5, "leak_high": 0.6, "power_at_1.5_bits": 0.9}
        row |= {f"{'mean_' if k else 'all_mean_'}{c}": v for c, v in mean.items()}
        rows.append(row)
    return pd.DataFrame(rows)


def test_an_at_chance_row_leaves_out_cells_with_no_canary_at_risk_and_is_untestable_with_only_those() -> None:
    from repro.crt.claims import claims

    claim = claims(resolve({"profile": "default"}, experiment.SPEC))["attack:crt_exposure"]
    why = ("unknown", "more seeds")
    row = experiment._at_risk_row(claim, _exposure_cells([0, 9, 10], [0.0, 0.1, 0.5]), why)
    assert row["decision"] == "held" and "all 2 cells" in row["test"]
    assert "left out, no canary at risk there" in row["test"]
    assert "LSTM, γ = 0" in row["test"].split("left out")[1]
    forced = experiment._at_risk_row(claim, _exposure_cells([0], [0.0]), why)
    assert forced["decision"] == "untestable here" and "by construction" in forced["why"]
    assert "all 10 canaries" in forced["test"]


def test_every_at_chance_claim_is_a_one_sided_equivalence_test_that_the_papers_numbers_pass() -> None:
    from repro.crt.claims import EXPOSURE_MARGIN, MEAN_LEAK, MEAN_MARGIN, claims

    register = claims(resolve({"profile": "default"}, experiment.SPEC))
    for key, margin in (("crt_exposure", 1.5), ("mask_zero", 1.5), ("sdp_zero", 1.5), ("dp_protects", 2)):
        c = register[f"attack:{key}"]
        assert c.rule.kind == "equivalent" and (c.rule.low, c.rule.high) == (-math.inf, margin)
        assert (margin == MEAN_MARGIN) == c.rule.what.startswith(MEAN_LEAK) and EXPOSURE_MARGIN == 2
        assert c.on_paper_numbers() == (None if c.ours else "held")  # the paper's 'close to 0' read as no leak
        assert c.rule.decide(-5.0, -9.0, 1.4) == "held"  # canaries ranked below chance are no leak
    for key in ("crt_individual", "crt_group", "crt_address", "crt_paired"):
        c = register[f"attack:{key}"]
        assert c.rule.kind == "equivalent" and (c.rule.low, c.rule.high) == (-math.inf, 0.55)
        assert c.on_paper_numbers() == (None if c.ours else "held")
    assert not any(c.rule.fails_to_reject for k, c in register.items() if k.startswith("attack:") and not c.ours)


def test_the_registers_numbers_for_the_mean_and_the_max_exposure_at_chance() -> None:
    """claims.py's comment on MEAN_MARGIN: one model's null bands of the max and the mean of ten canaries'
    exposures, how often a cell's leak interval ends below its margin where nothing leaks, and the power at it."""
    from scipy import stats as sps

    from repro.crt import canary
    from repro.crt.claims import EXPOSURE_MARGIN, MEAN_MARGIN

    scale = 1 / math.log(2) / 10  # the mean of ten exponentials of mean 1/ln 2: a gamma of shape 10
    low, high = sps.gamma.ppf([0.025, 0.975], 10, scale=scale)
    assert (round(low, 2), round(high, 2)) == (0.69, 2.46)
    assert round(sps.gamma.cdf(low + MEAN_MARGIN, 10, scale=scale), 2) == 0.94  # ends below the margin at no leak
    assert round(sps.gamma.sf(high - MEAN_MARGIN, 10, scale=scale), 2) == 0.86  # power at the margin
    max_low, max_high = canary.chance_max_exposure(0.025), canary.chance_max_exposure(0.975)
    assert (round(max_low, 2), round(max_high, 2)) == (1.70, 8.63)
    assert round((1 - 2 ** -(max_low + EXPOSURE_MARGIN)) ** 10, 2) == 0.45
    assert round(1 - (1 - 2 ** -(max_high - EXPOSURE_MARGIN)) ** 10, 2) == 0.10
    # one canary of ten memorized outright lifts the mean by 1.85 bits, past the margin
    assert round((math.log2(10**6) - 1 / math.log(2)) / 10, 2) == 1.85 > MEAN_MARGIN
    # and the simulated mean null agrees with the gamma
    null = canary.exposure_nulls(np.random.default_rng(0).random(200_000), 10, 20_000, 1)["mean"]
    assert np.quantile(null, [0.025, 0.975]) == pytest.approx([low, high], abs=0.05)


def test_the_leak_interval_inverts_the_null_band_covers_a_true_leak_and_its_power_shifts_the_null() -> None:
    from repro import stats

    null = np.arange(1000) / 100  # 0.00 .. 9.99 bits
    low, high = stats.null_band(null)
    cols = experiment.leak_columns(6.0, null)
    assert (cols["leak_low"], cols["leak_high"]) == pytest.approx((6.0 - high, 6.0 - low))
    assert cols["leak"] == pytest.approx(6.0 - null.mean())
    assert cols[experiment.LEAK_POWER] == pytest.approx(np.mean(null > high - 2.0))  # a 2-bit leak lifts 22 %
    # coverage by simulation: a run whose statistic is a null draw shifted by a true leak of 1.5 bits
    rng = np.random.default_rng(0)
    draws = rng.gamma(4.0, 1.0, 4000)
    inside = []
    for t in rng.choice(draws, 2000) + 1.5:
        c = experiment.leak_columns(float(t), draws)
        inside.append(c["leak_low"] <= 1.5 <= c["leak_high"])
    assert 0.93 < np.mean(inside) < 0.97


def test_mia_words_count_a_gamma_free_trainer_once_per_attack() -> None:
    import pandas as pd

    rows = [
        {"model": "LSTM", "trainer": t, "gamma": g, "attack": a, "accuracy": acc, "null_upper": 0.55,
         "null_low": 0.45, "null_high": 0.56, "gamma_free": t == "non-private"}
        for t, acc in (("non-private", 0.7), ("CRT", 0.5))
        for g in (0.0, 0.1, 0.5)
        for a in ("individual", "group")
    ]  # fmt: skip
    words = experiment.mia_words(pd.DataFrame(rows))
    assert "LSTM non-private: 2 of 2" in words and "LSTM CRT: 0 of 6" in words


def test_factorial_data_distinct_contexts_and_a_policy_blind_to_the_canary_format(smoke) -> None:
    from repro.crt import redaction

    blind = runs.build_data(smoke, distinct=True, missed_kinds=("id",))
    copies = smoke.canary_copies
    canary_texts = [s.text for s in blind.sentences if "id" in s.labels]
    assert len(canary_texts) == len(set(canary_texts)) == copies * len(blind.canaries)  # no two copies alike
    assert (runs.canary_copies_missed(blind, 0.0) == copies).all()  # π misses the format even at γ = 0
    assert (runs.canary_copies_in_crt(blind, 0.0) == copies).all()  # dedup cannot collapse distinct contexts
    same = runs.build_data(smoke, missed_kinds=("id",))
    assert (runs.canary_copies_in_crt(same, 0.0) == 1).all()  # ... but collapses identical copies to one
    assert (runs.canary_copies_in_crt(same, 0.0, "none") == copies).all()  # unless dedup is off
    split = redaction.crt_split(same.sentences, same.policy(0.0), "none")
    assert not split.duplicate.any() and len(split.part(True)) + len(split.part(False)) == len(same.sentences)


@pytest.mark.trains
def test_the_split_trainer_without_d_pri_is_plain_training_on_d_pub() -> None:
    from repro.crt import trainers

    rng = np.random.default_rng(0)
    public = [list(rng.integers(4, 30, int(n))) for n in rng.integers(3, 9, 40)]
    cfg = trainers.TrainConfig(epochs=2, lr=1.0, batch=8, seed=3)
    models = []
    for train in (
        lambda m: trainers.train_split_plain(m, public, [], cfg),
        lambda m: trainers.train_nonprivate(m, public, cfg),
    ):
        torch.manual_seed(0)
        models.append(train(language_model.LSTMLM(30, 8, 8)))
    for a, b in zip(models[0].parameters(), models[1].parameters()):
        assert torch.equal(a, b)
    torch.manual_seed(0)
    with_private = trainers.train_split_plain(language_model.LSTMLM(30, 8, 8), public, public[:10], cfg)
    assert not torch.equal(next(with_private.parameters()), next(models[0].parameters()))


def test_the_d_pub_control_gets_crts_public_budget(smoke) -> None:
    for model in runs.MODELS:
        crt, control = (runs.config(smoke, runs.Run(model, t, 0.1, 0)) for t in ("CRT", runs.CONTROL))
        assert (crt.epochs, crt.batch, crt.lr) == (control.epochs, control.batch, control.lr)


def test_validation_dialogues_are_held_out_and_scored_on_their_non_secret_tokens(data: runs.Data, smoke) -> None:
    assert len(data.validation) > 0 and {s.key for s in data.validation}.isdisjoint({s.key for s in data.test})
    train_text = {tuple(s.tokens) for s in data.sentences if s.has_secret}
    assert not any(tuple(s.tokens) in train_text for s in data.validation if s.has_secret)
    vocab = language_model.Vocab.build([s.tokens for s in data.sentences], extra=["<MASK>"])
    enc = runs.Encoder(data, vocab)
    torch.manual_seed(0)
    model = language_model.LSTMLM(len(vocab), 8, 8).eval()
    rows = language_model.token_nll_rows(model, enc.ids("validation"))
    keep = [np.array([label is None for label in s.labels[1:]] + [True]) for s in data.validation]  # after the first
    direct = sum(r[0] + r[1:][k].sum() for r, k in zip(rows, keep)) / sum(1 + k.sum() for k in keep)
    assert runs.validation(model, enc) == pytest.approx(np.exp(direct), rel=1e-9)
    assert "redacted" not in runs.test_nll(model, enc, "validation")


def test_a_runs_own_dp_learning_rate_replaces_the_grids_first(smoke) -> None:
    for model, grid in runs.DP_LR_GRID.items():
        assert runs.config(smoke, runs.Run(model, "DPSGD", None, 0)).dp_lr == smoke[grid][0]
        assert runs.config(smoke, runs.Run(model, "DPSGD", None, 0, dp_lr=0.125)).dp_lr == 0.125
    lstm = {t: runs.config(smoke, runs.Run("LSTM", t, 0.1, 0)) for t in ("DPSGD", "CRT", "S-DP")}
    assert lstm["DPSGD"].epochs == lstm["CRT"].epochs == smoke.crt_epochs != lstm["S-DP"].epochs
    plan = runs.planned_runs(smoke, 0.1, {("LSTM", "DPSGD"): 7.0, ("LSTM", "CRT"): 3.0})
    assert {r.dp_lr for r in plan if r.model == "LSTM" and r.trainer == "DPSGD"} == {7.0}
    assert {r.dp_lr for r in plan if r.model == "LSTM" and r.trainer == "CRT"} == {3.0}  # SHA-1 removal too
    assert {r.dp_lr for r in plan if r.model == "GPT-2" or r.trainer not in ("DPSGD", "CRT")} == {None}


def _ended(value: float, epochs: int) -> dict:
    """The history an untracked run keeps: its validation perplexity after its last epoch alone."""
    return {"history": [{"epoch": epochs, "epsilon": 1.0, "perplexity": value, "validation": value}]}


def test_a_dp_trainer_still_improving_is_trained_longer_until_a_doubling_gains_under_two_percent(smoke) -> None:
    from repro.crt import tuning

    p = Resolved(dict(smoke) | {"dp_lrs": [1.0], "gpt_dp_lrs": [1e-3], "max_doublings": 2})
    base = {m: runs.config(p, runs.Run(m, "DPSGD", None, 0)).epochs for m in runs.MODELS}
    gains = {
        "LSTM": lambda n: 10.0 * (1 + base["LSTM"] / n),
        "GPT-2": lambda n: 10.0 * (1 + 0.01 * (n > base["GPT-2"])),
    }
    train = lambda run: _ended(gains[run.model](runs.config(p, run).epochs), runs.config(p, run).epochs)
    tried = tuning.walk(p, "LSTM", "DPSGD", 0.1, train) | tuning.walk(p, "GPT-2", "DPSGD", 0.1, train)
    lengths = sorted((r.model, runs.config(p, r).epochs) for r in tried)
    b = base
    # LSTM: every doubling gains 25 % then 17 %: doubled twice, the cap; GPT-2: its doubling loses 1 %: stops there
    assert lengths == sorted([("LSTM", b["LSTM"]), ("LSTM", 2 * b["LSTM"]), ("LSTM", 4 * b["LSTM"]),
                              ("GPT-2", b["GPT-2"]), ("GPT-2", 2 * b["GPT-2"])])  # fmt: skip
    table = tuning.tuning_table(tried)
    assert tuning.chosen_epochs(table) == {("LSTM", "DPSGD"): 4 * b["LSTM"], ("GPT-2", "DPSGD"): None}
    choice = tuning.choice_table(table).set_index("model")
    assert choice.loc["LSTM", "epochs"] == 4 * b["LSTM"] and not choice.loc["LSTM", "converged"]  # still gaining
    assert choice.loc["GPT-2", "converged"] and choice.loc["GPT-2", "epochs"] == b["GPT-2"]  # a doubling lost
    assert choice.loc["GPT-2", "epochs_tried"] == f"{b['GPT-2']}: 10.0 · {2 * b['GPT-2']}: 10.1"
    converged = {**_history([12.0, 11.0, 10.9])}  # moved 0.9 % in its last epoch: not lengthened
    assert tuning.lengthen(p, runs.Run("LSTM", "DPSGD", None, 0, dp_lr=1.0), converged, train) == {}


def _history(curve: list[float]) -> dict:
    return {
        "history": [{"epoch": i + 1, "epsilon": 1.0, "perplexity": v, "validation": v} for i, v in enumerate(curve)]
    }


def test_tuning_keeps_the_rate_of_lowest_final_validation_perplexity_and_a_diverged_run_loses() -> None:
    from repro.crt import tuning

    infos = {
        runs.Run("LSTM", "DPSGD", None, 0, dp_lr=2.0): _history([90.0, 40.0, 30.0]),
        runs.Run("LSTM", "DPSGD", None, 0, dp_lr=10.0): _history([50.0, 20.0, 19.9]),  # best, converged
        runs.Run("LSTM", "DPSGD", None, 0, dp_lr=50.0): _history([10.0, 1e9, float("nan")]),  # best early, diverged
        runs.Run("LSTM", "CRT", 0.1, 0, dp_lr=2.0): _history([12.0, 10.0]),
        runs.Run("LSTM", "CRT", 0.1, 0, dp_lr=10.0): _history([11.0, 10.5]),
    }
    table = tuning.tuning_table(infos)
    assert tuning.chosen_rates(table) == {("LSTM", "DPSGD"): 10.0, ("LSTM", "CRT"): 2.0}
    choice = tuning.choice_table(table).set_index("trainer")
    assert choice.loc["DPSGD", "tried"] == "2: 30.0 · 10: 19.9 · 50: nan"
    assert choice.loc["DPSGD", "last_epoch_change"] == pytest.approx(-0.1 / 20.0)
    assert choice.loc["DPSGD", "converged"] and not choice.loc["CRT", "converged"]  # CRT moved 1/6 in its last epoch
    assert choice.loc["CRT", "validation"] == 10.0 and choice.loc["CRT", "epochs"] == 2
    words = experiment.tuning_words(tuning.choice_table(table), 50)
    assert words.startswith(
        "On 50 validation dialogues, LSTM DPSGD keeps 10, between two worse rates (perplexity 19.90 after 3 epochs, conv"
    )
    assert (
        "LSTM CRT keeps 2, at an end of the rates tried: the best may lie beyond (perplexity 10.00 after 2 epochs, "
        "still falling: 17% in its last epoch)" in words
    )
    assert choice["interior"].to_dict() == {"DPSGD": True, "CRT": False}
    # CRT at DP rate 0 is its D_pub-only control: worse than at 2, so 2 lies between two worse rates
    with_zero = tuning.choice_table(table, zero={("LSTM", "CRT"): 10.5}).set_index("trainer")
    assert with_zero["interior"].to_dict() == {"DPSGD": True, "CRT": True}
    assert "LSTM CRT keeps 2, worse at the next rate and at rate 0 (D_pub alone) (perplexity 10.00" in (
        experiment.tuning_words(with_zero.reset_index(), 50)
    )
    assert not tuning.choice_table(table, zero={("LSTM", "CRT"): 9.0}).set_index("trainer").loc["CRT", "interior"]


@pytest.mark.trains
def test_when_every_gradient_is_clipped_dp_sgd_depends_on_learning_rate_times_clip() -> None:
    from dataclasses import replace

    from repro.crt import trainers

    rng = np.random.default_rng(0)
    data = [list(rng.integers(4, 30, int(n))) for n in rng.integers(3, 9, 60)]
    base = trainers.TrainConfig(epochs=2, dp_batch=16, target_epsilon=5.0, seed=0)
    models = []
    for lr, clip in ((10.0, 1e-3), (2.0, 5e-3)):  # clips far below every per-sample gradient norm
        torch.manual_seed(0)
        model = language_model.LSTMLM(30, 8, 8, private=True)
        models.append(trainers.train_dpsgd(model, data, replace(base, dp_lr=lr, max_grad_norm=clip))[0])
    for a, b in zip(models[0].parameters(), models[1].parameters()):
        assert torch.allclose(a, b, atol=1e-5)
    torch.manual_seed(0)
    other = trainers.train_dpsgd(language_model.LSTMLM(30, 8, 8, private=True), data, replace(base, dp_lr=4.0))[0]
    assert not torch.allclose(next(other.parameters()), next(models[0].parameters()), atol=1e-3)


@pytest.mark.trains
def test_clipped_steps_without_noise_are_crts_dp_steps_with_sigma_zero_and_promise_no_epsilon() -> None:
    """The factorial's clipped arm: CRT's schedule whose DP steps clip per sample but add no noise. Without noise a
    run is its own repeat bit for bit and ends elsewhere than with noise; its ε and confidentiality ε are infinite."""
    from dataclasses import replace

    from repro.crt import trainers

    rng = np.random.default_rng(0)
    public = [list(rng.integers(4, 30, int(n))) for n in rng.integers(3, 9, 40)]
    private = [list(rng.integers(4, 30, int(n))) for n in rng.integers(3, 9, 40)]
    base = trainers.TrainConfig(epochs=2, dp_batch=16, target_epsilon=5.0, seed=0)
    ends = []
    for noise in (False, False, True):
        torch.manual_seed(0)
        model = language_model.LSTMLM(30, 8, 8, private=True)
        _, eps_dp, eps_conf = trainers.train_crt(model, public, private, replace(base, noise=noise), 0.1)
        if not noise:
            assert eps_dp == eps_conf == float("inf")
        ends.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
        if noise:
            assert np.isfinite(eps_dp) and np.isfinite(eps_conf)
    assert torch.equal(ends[0], ends[1]) and not torch.allclose(ends[0], ends[2], atol=1e-4)
    cfg = runs.config(Resolved(resolve({"profile": "smoke"}, experiment.SPEC)), runs.Run("LSTM", runs.CLIPPED, 0.1, 0))
    assert cfg.noise is False and cfg.epochs == experiment.SPEC["crt_epochs"].smoke


def test_crt_below_dpsgd_names_the_measured_cause_an_unconverged_crt_or_a_weak_public_part() -> None:
    from types import SimpleNamespace

    from repro.crt import tuning
    from repro.stats import Interval

    def chapter(crt_curve: list[float]) -> SimpleNamespace:
        infos = {runs.Run("LSTM", "CRT", 0.1, 0, dp_lr=2.0): _history(crt_curve)}
        infos[runs.Run("LSTM", "DPSGD", None, 0, dp_lr=10.0)] = _history([9.0, 5.0])
        return SimpleNamespace(tuning=tuning.tuning_table(infos), p=SimpleNamespace(n_dialogues=150))

    versus = Interval(1.9, 1.5, 2.3, "ratio")
    weak, strong = Interval(1.7, 1.4, 2.0, "ratio"), Interval(0.9, 0.7, 1.1, "ratio")
    _, _, _, why, table = experiment._versus(chapter([12.0, 10.0]), "LSTM", versus, strong)
    assert why[0] == "setup" and table == "fig2_per_epoch"
    assert "LSTM CRT's validation perplexity still fell 17% in its last epoch" in why[1]
    _, _, _, why, table = experiment._versus(chapter([12.0, 10.0]), "LSTM", versus, weak)  # the public part first
    assert why[0] == "finding" and table == "utility" and "at 1.70 [1.40, 2.00] times DPSGD's" in why[1]
    assert why[1].endswith("still fell 17% in its last epoch: it was still improving when training stopped)")
    _, _, _, why, table = experiment._versus(chapter([10.1, 10.0]), "LSTM", versus, weak)
    assert why[0] == "finding" and why[1].endswith("leave public")
    _, _, _, why, table = experiment._versus(chapter([10.1, 10.0]), "LSTM", versus, strong)
    assert why[0] == "unknown" and table == "" and "toward the paper's 10,000 (here 150)" in why[1]


def test_the_learning_rate_walk_goes_both_ways_from_the_middle_until_the_best_is_interior_or_at_an_end(smoke):
    from repro.crt import tuning

    grid = [20.0, 0.5, 2.0, 10.0, 1.0, 5.0]  # sorted: 0.5, 1, 2, 5, 10, 20; the walk starts at 2 (index 2)
    p = Resolved(dict(smoke) | {"dp_lrs": grid, "gpt_dp_lrs": [1e-3, 1e-2]})
    curves = {
        ("LSTM", "DPSGD"): {0.5: 9.0, 1.0: 8.0, 2.0: 7.0, 5.0: 5.0, 10.0: 6.0, 20.0: 1.0},  # up once: 5 is interior
        ("LSTM", "CRT"): {0.5: 3.0, 1.0: 4.0, 2.0: 5.0, 5.0: 6.0, 10.0: 7.0, 20.0: 8.0},  # down to the grid's end
        ("LSTM", "S-DP"): {0.5: 9.0, 1.0: 6.0, 2.0: 5.0, 5.0: float("nan"), 10.0: 1.0, 20.0: 1.0},  # 2: both worse
        ("GPT-2", "DPSGD"): {1e-3: 9.0, 1e-2: float("nan")},
        ("GPT-2", "CRT"): {1e-3: 3.0, 1e-2: 2.0},
    }
    train = lambda run: _ended(curves[run.model, run.trainer][run.dp_lr], runs.config(p, run).epochs)
    tried = tuning.search(p, 0.1, train)
    walked = {}
    for run in tried:
        if run.epochs is None:
            walked.setdefault((run.model, run.trainer), []).append(run.dp_lr)
        assert run.seed == smoke.seed and run.gamma == {"DPSGD": None, "S-DP": 0.0}.get(run.trainer, 0.1)
    assert walked == {
        ("LSTM", "DPSGD"): [2.0, 1.0, 5.0, 10.0],  # 20 (the best value of all) is never reached: 10 did worse
        ("LSTM", "CRT"): [2.0, 1.0, 5.0, 0.5],
        ("LSTM", "S-DP"): [2.0, 1.0, 5.0],  # a diverged neighbour counts as worst
        ("GPT-2", "DPSGD"): [1e-3, 1e-2],
        ("GPT-2", "CRT"): [1e-3, 1e-2],
    }
    longer = {(r.model, r.trainer): (r.dp_lr, r.epochs) for r in tried if r.epochs is not None}
    chosen = {"LSTM": {"DPSGD": 5.0, "CRT": 0.5, "S-DP": 2.0}, "GPT-2": {"DPSGD": 1e-3, "CRT": 1e-2}}
    # one doubling at the chosen rate (a last epoch alone cannot show convergence); it gains nothing, so it stops
    assert longer == {(m, t): (lr, 2 * runs.config(p, runs.Run(m, t, 0.1, 0)).epochs) for m in chosen for t, lr in
                      chosen[m].items()}  # fmt: skip
    table = tuning.tuning_table(tried)
    assert set(tuning.chosen_epochs(table).values()) == {None}
    assert tuning.chosen_rates(table) == {
        ("LSTM", "DPSGD"): 5.0,
        ("LSTM", "CRT"): 0.5,
        ("LSTM", "S-DP"): 2.0,
        ("GPT-2", "DPSGD"): 1e-3,
        ("GPT-2", "CRT"): 1e-2,
    }
    interior = tuning.choice_table(table).set_index(["model", "trainer"])["interior"]
    assert interior.to_dict() == {
        ("LSTM", "DPSGD"): True,
        ("LSTM", "CRT"): False,  # at the grid's lowest rate
        ("LSTM", "S-DP"): True,
        ("GPT-2", "DPSGD"): False,
        ("GPT-2", "CRT"): False,
    }


def _fake_chapter(p: Resolved, leak: float) -> object:
    """A chapter of made-up MIA scores over the smoke plan's cells (no model): redaction alone and S-DP at γ > 0 put
    the member below its look-alike in a share `leak` of the pairs, every other cell at chance."""
    from types import SimpleNamespace

    from repro.crt import membership_attacks as ma

    n_pairs, n_address = 60, 30
    data = SimpleNamespace(pairs=[None] * n_pairs, address_pairs=[None] * n_address)
    designs = runs.attack_designs(data, p.n_groups, p.seed)
    rng = np.random.default_rng(0)
    models, scores = {}, {}
    for model in runs.MODELS:
        for trainer in ("non-private", "non-private + mask", "S-DP", "CRT"):
            if trainer == "S-DP" and model != "LSTM":
                continue
            for g in [None] if trainer == "non-private" else (p.gammas if model == "LSTM" else p.gpt_gammas):
                for seed in range(2 if g in (None, 0.1) else 1):
                    run = runs.Run(model, trainer, g, seed)
                    rate = leak if trainer in ("non-private + mask", "S-DP") and g else 0.5
                    mia = {}
                    for attack, design in designs.items():
                        a, b = rng.lognormal(2.0, 0.5, design.n_pairs), rng.lognormal(2.0, 0.5, design.n_pairs)
                        m, n = (x[0] for x in ma.win_rate_worlds(a, b, rate, 1, rng))
                        mia[attack] = {"members": m, "nonmembers": n, "accuracy": ma.attack_accuracy(design, m, n),
                                       "null": ma.attack_null(design, m, n, p.n_null, p.seed)}  # fmt: skip
                    models[run], scores[run] = (None, {}), {"mia": mia}
    return SimpleNamespace(p=p, data=data, models=models, scores=scores)


def test_paired_table_and_power_at_the_registers_win_rates_on_made_up_scores() -> None:
    from repro.crt import membership_attacks as ma
    from repro.crt.claims import WIN_RATES

    p = Resolved(resolve({"profile": "smoke", "n_null": 400}, experiment.SPEC))
    ch = _fake_chapter(p, leak=0.8)
    mia = experiment.mia_table(ch)
    paired = experiment.paired_table(ch, mia)
    assert len(paired) == 2 * len(mia) // 3  # every (model, trainer, γ) cell, on all pairs and on address pairs
    for r in paired.itertuples():
        runs_ = [k for k in ch.models if (k.model, k.trainer) == (r.model, r.trainer) and k.gamma in (r.gamma, None)]
        attack = "address" if r.pairs == "addresses" else "individual"
        direct = np.mean([np.mean(ch.scores[k]["mia"][attack]["members"] < ch.scores[k]["mia"][attack]["nonmembers"])
                          for k in runs_])  # fmt: skip
        assert r.share == pytest.approx(direct) and r.share_low <= r.share <= r.share_high
        assert r.null_low < 0.5 < r.null_high and r.null_upper <= r.null_high
    power = experiment.attack_power_table(ch, mia, paired)
    assert (
        set(power.trainer) == {"non-private + mask", "S-DP", "CRT"} and (power[power.trainer != "CRT"].gamma > 0).all()
    )
    assert set(power.level) == {"one-sided 95 %", "one-sided 97.5 % (equivalence)"}
    assert len(power) == 5 * (2 + 1 + 4)  # (3 threshold + 2 paired) x (mask: 2 cells, S-DP: 1, CRT: 4)
    assert (power["power_at_0.5"] <= 0.2).all()  # at no effect, a test clears its point about 5 % of the time
    paired_power = power[power.statistic == "paired (ours)"]
    assert (paired_power["power_at_0.5"] <= paired_power["power_at_0.55"]).all()
    assert (paired_power["power_at_0.55"] <= paired_power["power_at_0.6"]).all()  # the worlds share their draws
    # the power does not read the effect the run shows: the same scores relabelled at chance give the same table
    calm = _fake_chapter(p, leak=0.5)
    for ch_ in (calm,):
        for run, s in ch_.scores.items():
            s["mia"] = ch.scores[run]["mia"]
    again = experiment.attack_power_table(calm, mia, paired)
    cols = [experiment.power_column(w) for w in (0.5, *WIN_RATES)]
    assert np.array_equal(again[cols].to_numpy(), power[cols].to_numpy())
    # one paired cell by hand: the seed-mean share of worlds at 0.6 against the cell's point
    cell = power[(power.statistic == "paired (ours)") & (power.trainer == "S-DP") & (power.attack == "all secrets")]
    row = cell.iloc[0]
    runs_ = [k for k in ch.models if (k.model, k.trainer, k.gamma) == ("LSTM", "S-DP", row.gamma)]
    m = [ch.scores[k]["mia"]["individual"]["members"] for k in runs_]
    n = [ch.scores[k]["mia"]["individual"]["nonmembers"] for k in runs_]
    sims = ma.simulated_statistic(ma.paired_shares, m, n, 0.6, experiment.N_POWER, p.seed + 9)
    assert row["power_at_0.6"] == np.mean(sims > row.point)
    # the rows' cause reads the table, at the deciding cell and for the every-cell rule
    cause = experiment._power_cause(ch, power, ("S-DP",), "threshold (paper)", "group")("LSTM", 0.1)
    assert cause[0] == "unknown" and "table attack_power" in cause[1] and "0.55 / 0.6" in cause[1]
    view = experiment.power_view(power)
    rises = view[view.trainer != "CRT"]
    assert len(view) == 5 * 5 and (rises["every γ at 0.6"] <= rises["weakest at 0.6"] + 1e-12).all()
    assert view[view.trainer == "CRT"]["every γ at 0.6"].isna().all()
    assert "weakest redacting" in experiment.power_words(power)


def test_s_dp_with_a_missing_policy_shows_an_infinite_confidentiality_epsilon() -> None:
    import math

    import pandas as pd

    assert experiment.confidentiality_epsilon("S-DP", 0.1, 2.9) == math.inf
    assert experiment.confidentiality_epsilon("S-DP", 0.0, 2.9) == 2.9  # a perfect policy: its DP steps' ε
    assert experiment.confidentiality_epsilon("CRT", 0.1, 0.4) == 0.4
    utility = pd.DataFrame(
        {"model": "LSTM", "trainer": ["S-DP", "CRT", "non-private"], "gamma": [0.1, 0.1, None], "public_steps": 1,
         "private_steps": 1, "epsilon": [math.inf, 0.41234, math.nan], "epsilon_dp": [2.9, 3.0, math.nan],
         "train_seconds": 1.0}
    )  # fmt: skip
    view = experiment.budget_view(utility)
    assert view["confidentiality ε"].tolist() == ["∞", "0.412", "—"] and view["DP-SGD ε"].tolist() == ["2.9", "3", "—"]


def test_calibrating_by_the_reference_model_reveals_a_leak_that_easy_look_alikes_hide() -> None:
    """Look-alikes whose secrets are easier for any model (the reference's perplexity lower) hide a member's 10 % gain
    from the uncalibrated paired share; relative to the reference every member wins."""
    from types import SimpleNamespace

    p = Resolved(resolve({"profile": "smoke", "n_null": 200}, experiment.SPEC))
    rng = np.random.default_rng(3)
    n_pairs = 80
    data = SimpleNamespace(pairs=[None] * n_pairs, address_pairs=[])
    ref_m, ref_n = rng.lognormal(2.0, 0.3, n_pairs), rng.lognormal(1.8, 0.3, n_pairs)
    scores = {}
    for seed in (0, 1):
        reference = runs.Run("LSTM", "non-private + mask", 0.0, seed)
        target = runs.Run("LSTM", "non-private + mask", 0.1, seed)
        scores[reference] = {"mia": {"individual": {"members": ref_m, "nonmembers": ref_n}}}
        scores[target] = {"mia": {"individual": {"members": 0.9 * ref_m, "nonmembers": ref_n}}}
    ch = SimpleNamespace(p=p, data=data, models=dict.fromkeys(scores, (None, {})), scores=scores)
    raw = np.mean(0.9 * ref_m < ref_n)
    paired = pd.DataFrame([{"model": "LSTM", "trainer": "non-private + mask", "gamma": 0.1, "pairs": "all secrets",
                            "share": raw}])  # fmt: skip
    table = experiment.calibrated_table(ch, paired)
    assert len(table) == 1  # the reference's own cell is left out
    row = table.iloc[0]
    assert row.uncalibrated == raw < 0.5 and row.calibrated == 1.0 == row.calibrated_low
    assert row.calibrated > row.null_upper and 0.35 < row.null_low < 0.5 < row.null_high < 0.65  # one set of 80 pairs
    words = experiment.calibrated_words(table)
    assert f"non-private + mask 1.000 calibrated against {raw:.3f} uncalibrated" in words and "in 1 of 1 cells" in words


def test_our_paired_at_chance_row_is_an_equivalence_test_over_every_cell() -> None:
    """Each (model, γ) cell's interval must end below 0.55 (a share below 0.5 is no leak); one cell wholly above
    decides 'not held'; a cell reaching past the margin leaves it inconclusive; all below but a weak test (power < 0.8
    at 0.55) too."""
    import pandas as pd

    from repro.crt.claims import claims

    claim = claims(resolve({"profile": "smoke"}, experiment.SPEC))["attack:crt_paired"]
    assert claim.rule.kind == "equivalent" and (claim.rule.low, claim.rule.high) == (-math.inf, 0.55)

    def cells(*intervals: tuple[float, float]) -> pd.DataFrame:
        return pd.DataFrame(
            [{"model": "LSTM", "trainer": "CRT", "gamma": g, "gamma_free": False, "seeds": 3, "share": (lo + hi) / 2,
              "share_low": lo, "share_high": hi} for g, (lo, hi) in zip((0.0, 0.1, 0.5), intervals)]
        )  # fmt: skip

    def decide(c: pd.DataFrame, at_margin: float) -> dict:
        power = pd.Series([0.99] * (len(c) - 1) + [at_margin], index=c.index)
        how = experiment.Equivalence("share", "share_low", "share_high", "made-up", power, "member win rate 0.55")
        return experiment._equivalence_row(claim, c, how, ("unknown", "made up"))

    held = decide(cells((0.47, 0.53), (0.48, 0.54), (0.46, 0.52)), 0.9)
    assert held["decision"] == "held" and held["ours"] == pytest.approx(0.51)  # the cell nearest the edge: 0.54
    assert "power 90% at member win rate 0.55, the weakest of the 3 cells" in held["test"]
    leak = decide(cells((0.47, 0.53), (0.56, 0.62), (0.40, 0.70)), 0.9)
    assert leak["decision"] == "not held" and leak["ci_low"] == 0.56  # wholly outside decides before the widest
    wide = decide(cells((0.47, 0.53), (0.40, 0.70)), 0.9)
    assert wide["decision"] == "inconclusive" and wide["ci_high"] == 0.70
    weak = decide(cells((0.47, 0.53), (0.48, 0.54)), 0.5)
    assert weak["decision"] == "inconclusive" and weak["why"].startswith("the test's power is 50%")
    below = decide(cells((0.30, 0.44), (0.48, 0.54)), 0.9)
    assert below["decision"] == "held" and below["ci_high"] == 0.54  # a cell below chance counts for the claim


_BUILD_ALL = """
from repro.params import Resolved, resolve
from repro.crt import experiment as ex, runs
# workers, not convergence, are tested; the mock-paper run's sizes (every trainer and cell, 55 s against 90 s at smoke's
# on one thread, measured side by side)
shrink = {"n_dialogues": 20, "n_test": 10, "n_val": 6, "canary_copies": 2, "n_mia": 20, "crt_epochs": 1, "n_null": 50}
p = Resolved(resolve({"profile": "smoke", "max_doublings": 0, **shrink}, ex.SPEC))
data = runs.build_data(p)
s = ex.setting(p, data)
ex.build_all(p, data, s)
train = lambda r: s.trainer(r)[1]
tried = ex.tuning.search(p, ex.fig2_gamma(p), train)
starts = ex.matched_starts(p, s, ex.tuning.tuning_table(tried))
tuned = ex.tuning.tuning_table(tried | ex.matched_search(p, s, starts, train))
chosen = ex.tuning.chosen_rates(tuned), ex.tuning.chosen_epochs(tuned)
planned = runs.planned_runs(p, ex.fig2_gamma(p), *chosen) + ex.matched_runs(p, starts, tuned)
print(sum(not s.trainer.has(r) for r in planned))
ch = ex.run_all(p, data)
factorial = ex.factorial_table(ch)
print(len(factorial), factorial.trainer.nunique())
"""


@pytest.mark.trains
def test_runs_built_by_two_workers_are_the_same_bits_as_built_here(tmp_path) -> None:
    """build_all and the factorial at smoke on two workers (REPRO_THREADS 2) and in its own process on one thread
    (REPRO_THREADS 1), each into an empty cache as a kernel runs it: every planned run is cached after build_all, and
    every entry (weights, histories, ε, scores, the factorial's cells) is the same, entry for entry (only the
    measured seconds differ)."""
    from conftest import run_per_thread_count

    entries = {}
    for threads, (root, stdout) in run_per_thread_count(tmp_path, _BUILD_ALL, 900).items():
        assert stdout.split() == ["0", "16", "5"], stdout  # 2 contexts x 2 dedup x 3 arms, 2 step arms x 2 dedup
        entries[threads] = {
            str(f.relative_to(root)): torch.load(f, weights_only=False) for f in sorted((root / "crt").rglob("*.pt"))
        }
    assert len(entries["1"]) > 20 and entries["2"].keys() == entries["1"].keys()

    def same(a, b) -> bool:
        if isinstance(a, dict):
            keys = a.keys() - {"train_seconds"}
            return keys == b.keys() - {"train_seconds"} and all(same(a[k], b[k]) for k in keys)
        if isinstance(a, (list, tuple)):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        if isinstance(a, (torch.Tensor, np.ndarray)):
            return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)
        return a == b or (a != a and b != b)  # NaN equals NaN

    for name, here in entries["1"].items():
        assert same(here, entries["2"][name]), name


def _factorial(states: dict[str, str]) -> pd.DataFrame:
    """A factorial table whose distinct-context cells are in `states` (arm -> leaks / chance) for both dedup settings,
    the same-sentence cells as deduplication protecting them; its one-sided null point 3, its leak interval [v − 2, v − 0.5]."""
    value = {"leaks": 10.0, "chance": 1.0}
    rates = {"DP-SGD (CRT)": 1.0, "clipped, no noise": 1.0, "DP-SGD at DPSGD's rate": 10.0}
    rows = []
    for context in experiment.FACTORIAL_CONTEXTS:
        for dedup in experiment.FACTORIAL_DEDUP:
            for arm in (*experiment.FACTORIAL_ARMS, *(experiment.STEP_ARMS if context != "same sentence" else ())):
                if context == "same sentence":
                    v = value["leaks" if arm == "plain SGD" and dedup == "dedup off" else "chance"]
                else:
                    v = value[states.get(arm, "chance")]
                rows.append({"trainer": arm, "canaries": context, "dedup": dedup, "exposure": v, "null_upper": 3.0,
                             "leak_low": v - 2.0, "leak_high": v - 0.5, "copies_in_d_pri": 2.0,
                             "dp_lr": rates.get(arm)})  # fmt: skip
    return pd.DataFrame(rows)


def test_the_factorial_says_when_copies_of_one_sentence_need_both_deduplication_and_dp_sgd() -> None:
    table = _factorial({"plain SGD": "leaks"})
    same = (table.canaries == "same sentence") & (table.dedup == "dedup on")
    table.loc[same & (table.trainer == "plain SGD"), ["exposure", "leak_low", "leak_high"]] = [10.0, 8.0, 9.5]
    table.loc[(table.canaries == "same sentence") & (table.dedup == "dedup off") & (table.trainer == "DP-SGD (CRT)"),
              ["exposure", "leak_low", "leak_high"]] = [10.0, 8.0, 9.5]  # fmt: skip
    words = experiment.factorial_words(table)
    assert "Copies that repeat one sentence need both: DP-SGD on D_pri stays at chance with dedup on and leaks" in words
    assert "Deduplication protects copies" not in words


def test_an_at_chance_row_is_refused_where_its_trainers_dp_rate_sits_at_an_end_of_the_rates_tried() -> None:
    tuned = pd.DataFrame(
        [
            {"model": "LSTM", "trainer": "S-DP", "tried": "0.5: 2.4 · 1: 2.4", "chosen": 0.5, "interior": False},
            {
                "model": "LSTM",
                "trainer": "CRT",
                "tried": "5: 5.8 · 10: 5.3 · 20: 5.8",
                "chosen": 10.0,
                "interior": True,
            },
        ]
    )
    why = experiment._untuned_rate(tuned, "S-DP", ("LSTM",))
    assert why.startswith("LSTM S-DP's DP-SGD rate 0.5 sits at an end of the rates tried (0.5: 2.4 · 1: 2.4;")
    assert experiment._untuned_rate(tuned, "CRT", ("LSTM", "GPT-2")) is None
    assert experiment._untuned_rate(tuned, "S-DP", ("GPT-2",)) is None  # a model the row does not judge
    from repro.crt.claims import claims

    claim = claims(resolve({"profile": "default"}, experiment.SPEC))["attack:sdp_zero"]
    cells = _exposure_cells([10], [0.0])
    row = experiment._at_risk_row(claim, cells, ("unknown", "more seeds"), why)
    assert row["decision"] == "untestable here" and "an arm is untuned (LSTM S-DP's DP-SGD rate 0.5" in row["why"]
    assert experiment._at_risk_row(claim, cells, ("unknown", "more seeds"))["decision"] == "held"


def test_the_factorial_credits_dp_sgds_noise_only_when_its_clipped_steps_without_noise_leak() -> None:
    noise = experiment.factorial_words(_factorial({"plain SGD": "leaks", "clipped, no noise": "leaks"}))
    assert noise.startswith("When π misses the canaries' format, CRT's protection has two parts.")
    assert "only DP-SGD on D_pri protects copies that differ" in noise
    assert "DP-SGD at CRT's rate 1: without its noise, the clipped arm leaks: the noise, not the small step" in noise
    assert noise.endswith(
        "at DPSGD's rate 10, DP-SGD stays at chance with dedup on and stays at chance with dedup off (one seed; a cell "
        "leaks above its one-sided 95 % null point and stays at chance when its leak's 95 % interval ends below +2 "
        "bits, the rules of the factorial's verdict rows)."
    )
    step = experiment.factorial_words(_factorial({"plain SGD": "leaks", "DP-SGD at DPSGD's rate": "leaks"}))
    assert "CRT's protection has two parts" not in step and "only DP-SGD on D_pri protects" not in step
    assert (
        "without its noise, the clipped arm reads the same (stays at chance with dedup on and stays at chance with "
        "dedup off): at this rate the noise adds nothing the small step does not give" in step
    )
    assert (
        "at DPSGD's rate 10, DP-SGD leaks with dedup on and leaks with dedup off; so what DP-SGD keeps at chance "
        "depends on its step size" in step
    )
    mixed = experiment.factorial_words(_factorial({"plain SGD": "leaks", "DP-SGD (CRT)": "leaks"}))
    assert (
        "without its noise, the clipped arm stays at chance with dedup on and stays at chance with dedup off" in mixed
    )
    assert "depends on its step size" not in mixed


def test_dialogue_perplexity_is_the_seeds_geometric_mean_with_a_positive_log_scale_interval() -> None:
    """Per seed, the corpus perplexity exp(Σ nll / Σ tokens); over seeds, their geometric mean; a ratio's interval is
    made on the log scale, so it stays above 0 however far apart the seeds lie (a linear t interval over 3 seeds
    would reach below 0 here)."""
    rng = np.random.default_rng(0)
    counts = rng.integers(3, 12, 200).astype(float)
    dialogues = np.repeat(np.arange(50), 4)
    a = np.stack([rng.gamma(2.0, s, 200) * counts for s in (0.5, 1.5, 3.0)])
    b = np.stack([rng.gamma(2.0, 1.0, 200) * counts for _ in range(3)])
    per_seed = np.exp(a.sum(1) / counts.sum() - b.sum(1) / counts.sum())
    iv = runs.dialogue_perplexity(a, counts, b, dialogues, seed=1, n_resamples=400)
    assert iv.estimate == pytest.approx(np.exp(np.log(per_seed).mean()))
    assert 0 < iv.low < iv.estimate < iv.high and "on the log scale" in iv.method
    linear = per_seed.mean() - 4.30 * per_seed.std(ddof=1) / np.sqrt(3)  # t(2 df) on the ratios themselves
    assert linear < 0
    one = runs.dialogue_perplexity(a[:1], counts, None, dialogues, seed=1, n_resamples=400)
    assert one.estimate == pytest.approx(np.exp(a[0].sum() / counts.sum()))


def test_a_rises_row_is_decided_by_its_failing_cell_of_strongest_test_whatever_the_order() -> None:
    """A 'rises above chance' row over several cells: one failing cell whose test has power above the floor makes it
    'not held' wherever that cell sits; failures only at weak tests leave it inconclusive, showing the strongest."""
    from repro.crt.claims import claims

    claim = claims(resolve({"profile": "smoke"}, experiment.SPEC))["attack:mask_individual"]
    assert claim.rule.kind == "above_null"
    frame = pd.DataFrame(
        [{"model": "LSTM", "trainer": "non-private + mask", "gamma": g, "gamma_free": False, "seeds": 3,
          "accuracy": acc, "null_low": 0.45, "null_upper": 0.54} for g, acc in ((0.1, 0.50), (0.3, 0.51), (0.5, 0.60))]
    )  # fmt: skip
    cause = lambda m, g: ("unknown", f"no table here measures the cause; a larger design at γ = {g:g} would tell")
    for order in (frame.index, frame.index[::-1]):
        f = frame.loc[order]
        strong = experiment._band_row(claim, f, "accuracy", cause, pd.Series([0.3, 0.95, 0.99], index=frame.index))
        assert strong["decision"] == "not held" and strong["ours"] == 0.51 and "γ = 0.3" in strong["test"]
        weak = experiment._band_row(claim, f, "accuracy", cause, pd.Series([0.3, 0.6, 0.99], index=frame.index))
        assert weak["decision"] == "inconclusive" and "power is 60%" in weak["why"] and weak["ours"] == 0.51
    assert experiment._band_row(claim, frame, "accuracy", cause)["decision"] == "not held"  # no power: as before


def test_extraction_table_counts_the_canaries_a_beam_search_ends_with_per_cell() -> None:
    """Per (model, trainer, γ) cell, the seed mean of the canaries found at each beam width, the fewest and most at
    the widest, and chance (10 canaries among 10^6 candidates); the words read the non-private model and CRT's worst."""
    p = Resolved(resolve({"profile": "smoke", "n_null": 50}, experiment.SPEC))
    ch = _fake_chapter(p, leak=0.8)
    for run, sc in ch.scores.items():
        seen = 10 if run.trainer == "non-private" else (run.seed + 1 if run.trainer == "CRT" else 4)
        sc["extracted"] = {w: min(seen, w) for w in experiment.BEAM_WIDTHS}
    table = experiment.extraction_table(ch)
    npv = table[(table.model == "LSTM") & (table.trainer == "non-private")].iloc[0]
    assert (npv.width_1, npv.width_10, npv.width_1000, npv.seeds) == (1, 10, 10, 2)
    crt = table[(table.model == "LSTM") & (table.trainer == "CRT") & (table.gamma == 0.1)].iloc[0]
    assert crt.seeds == 2 and crt.width_1000 == 1.5 and (crt.width_1000_min, crt.width_1000_max) == (1, 2)
    assert table.chance_at_widest.iloc[0] == pytest.approx(0.01)
    words = experiment.extraction_words(table)
    assert "reads 1.0 of the 10 canaries off the non-private model, a beam of width 1,000 reads 10.0" in words
    assert "CRT gives up at most 1.5 (γ = 0.1)" in words and "would give up 0.01 on average" in words
    for run in ch.scores:
        if run.trainer == "CRT":
            ch.scores[run]["extracted"] = dict.fromkeys(experiment.BEAM_WIDTHS, 0)
    assert "CRT gives up none at any γ" in experiment.extraction_words(experiment.extraction_table(ch))


def test_the_ratio_trend_is_the_least_squares_fall_per_doubling_and_its_interval_pairs_the_corpora() -> None:
    rng = np.random.default_rng(0)
    dialogues = np.repeat(np.arange(30), 4).astype(str)
    counts, tokens = [40, 80, 160, 320], rng.integers(5, 15, dialogues.size).astype(float)
    b = rng.gamma(2.0, 1.0, (2, dialogues.size)) * tokens  # two seeds
    gaps = [0.9, 0.7, 0.5, 0.3]  # log ratio per token at each size: falls 0.2 per doubling
    arms = [(b + g * tokens, b, tokens) for g in gaps]
    trend = experiment.ratio_trend(counts, arms, dialogues, seed=0)
    assert trend.estimate == pytest.approx(0.2) and trend.low == pytest.approx(0.2) == pytest.approx(trend.high)
    noisy = [(b + g * tokens + rng.normal(0, 1, b.shape), b, tokens) for g in gaps]
    trend = experiment.ratio_trend(counts, noisy, dialogues, seed=0)
    x = np.log2(counts)
    slopes = []
    for s in range(2):  # each seed's slope written out on the data; the trend is their mean fall
        y = np.array([(a[s] - b_[s]).sum() / t.sum() for a, b_, t in noisy])
        slopes.append(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())
    assert trend.estimate == pytest.approx(-np.mean(slopes)) and trend.low < trend.estimate < trend.high
    assert "test dialogues" in trend.method


def test_a_closeness_row_is_put_down_to_the_regime_only_where_the_dialogue_sweep_closes_the_gap() -> None:
    from repro.stats import Interval
    from repro.verdict import Sweep

    close, control = Interval(3.2, 2.8, 3.7, "ratio"), Interval(3.6, 3.0, 4.2, "ratio")
    closing = Sweep("dialogue_sweep", "dialogues", "dialogues · model · epochs", Interval(0.2, 0.1, 0.3, "t"))
    flat = Sweep("dialogue_sweep", "dialogues", "dialogues · model · epochs", Interval(0.0, -0.1, 0.1, "t"))
    why, table, sweep = experiment.utility_cause(close, control, Interval(3.0, 2.6, 3.5, "r"), closing, "utility", 1.1)
    assert why[0] == "regime" and sweep is closing and table == "" and "0.200 [0.100, 0.300]" in why[1]
    assert "to 1.10 at the paper's 10,000" in why[1]
    why, table, sweep = experiment.utility_cause(close, control, None, closing, "utility", 2.5)  # closes too slowly
    assert why[0] == "finding" and table == "utility" and sweep is None and "still be 2.50" in why[1]
    why, table, sweep = experiment.utility_cause(close, control, None, flat, "utility", 1.0)
    assert why[0] == "finding" and table == "utility" and sweep is None and "does not close measurably" in why[1]
    masked_close = Interval(1.1, 1.0, 1.15, "r")  # the other dedup reading is close: the reading explains it
    assert experiment.utility_cause(close, control, masked_close, closing, "utility")[0][0] == "setup"


def test_dpsgd_at_crts_epsilon_trains_every_seed_at_the_rate_its_own_walk_chose(smoke) -> None:
    from repro.crt import tuning

    infos = {
        runs.Run("LSTM", "DPSGD", None, 0, dp_lr=10.0): _history([9.0, 5.0]),
        runs.Run("LSTM", "DPSGD", None, 0, dp_lr=2.0, epsilon=0.7): _history([9.0, 6.0]),
        runs.Run("LSTM", "DPSGD", None, 0, dp_lr=10.0, epsilon=0.7): _history([9.0, 7.0]),
    }
    table = tuning.tuning_table(infos)
    assert tuning.chosen_rates(table) == {("LSTM", "DPSGD"): 10.0, ("LSTM", runs.MATCHED_LABEL): 2.0}
    plan = experiment.matched_runs(Resolved(dict(smoke) | {"n_seeds": 2}), {"LSTM": (0.7, 10.0)}, table, ("LSTM",))
    assert plan == [runs.Run("LSTM", "DPSGD", None, s, dp_lr=2.0, epsilon=0.7) for s in (0, 1)]
    assert not any(experiment.main_run(r) for r in plan) and all(r.label == runs.MATCHED_LABEL for r in plan)


def test_a_cached_run_trained_untracked_is_trained_again_where_its_per_epoch_history_is_now_needed(
    data: runs.Data, smoke, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    enc = runs.Encoder(data, experiment.word_vocabulary(data))
    run = runs.Run("LSTM", "DPSGD", None, 0)
    epochs = runs.config(smoke, run).epochs
    assert epochs > 1
    untracked = runs.Trainer(smoke, data, {"LSTM": enc}, None, track=lambda r: False)
    tracked = runs.Trainer(smoke, data, {"LSTM": enc}, None, track=lambda r: True)
    path = untracked.path(run)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state": {}, "info": _history([3.0])}, path)  # the last epoch only, as an untracked run keeps it
    assert untracked.has(run) and path.exists()
    assert not tracked.has(run) and not path.exists()  # removed, to be trained with every epoch recorded
    torch.save({"state": {}, "info": _history([4.0, 3.0][:epochs])}, path)
    assert tracked.has(run) and tracked.has(run)  # the second from what the first read
    assert tracked.info(run) == _history([4.0, 3.0][:epochs])  # read without building a model (new_model is None)
    torch.save({"state": {}, "info": _history([3.0])}, path)  # written again, shorter: read again, and removed
    assert not tracked.has(run) and not path.exists()


def test_every_perplexity_of_one_test_set_resamples_it_alike_and_the_weights_are_drawn_once() -> None:
    dialogues = np.repeat(np.array(["d1", "d2", "d3", "d4"]), [3, 1, 2, 4])
    once = runs._dialogue_weights(dialogues, 50, 7)
    assert runs._dialogue_weights(dialogues.copy(), 50, 7) is once and not once.flags.writeable
    assert np.array_equal(once, stats.unit_weights(dialogues, n_resamples=50, seed=7))
    assert not np.array_equal(runs._dialogue_weights(dialogues, 50, 8), once)


def test_the_group_table_counts_each_canarys_copies_in_the_clear_and_multiplies_their_epsilon(data, smoke) -> None:
    from types import SimpleNamespace

    ch = SimpleNamespace(data=data, p=smoke, gamma2=1.0)  # a blind policy misses every canary
    eps = {"DPSGD": 3.0, runs.MATCHED_LABEL: 0.7, "CRT": 2.5}
    utility = pd.DataFrame([{"model": "LSTM", "trainer": t, "epsilon_dp": e} for t, e in eps.items()])
    t = experiment.group_table(ch, utility).set_index("trainer")
    k = smoke.canary_copies
    assert t.loc["DPSGD", "group_epsilon"] == pytest.approx(k * 3.0) and t.loc["CRT", "copies_in_clear_most"] == 1
    assert t.loc["CRT", "group_epsilon"] == 2.5 and t.loc[runs.MATCHED_LABEL, "group_epsilon"] == pytest.approx(k * 0.7)
    assert math.isinf(t.loc["non-private + mask", "group_epsilon"]) and t.loc["S-DP", "copies_in_clear"] == k
    ch.gamma2 = 0.0  # a perfect policy redacts the one copy CRT keeps: the group costs nothing
    assert experiment.group_table(ch, utility).set_index("trainer").loc["CRT", "group_epsilon"] == 0.0


def test_a_leaking_dp_arm_whose_clipped_steps_leak_too_is_put_down_to_group_privacy() -> None:
    table = _factorial({"DP-SGD (CRT)": "leaks", "clipped, no noise": "leaks", "plain SGD": "leaks"})
    table["epsilon_dp"] = np.where(table.trainer == "DP-SGD (CRT)", 3.0, np.nan)
    table["leak"] = table.exposure - 1.25
    distinct = table[table.canaries == "distinct contexts"]
    why, measured = experiment._group_cause(distinct, 20)
    assert why[0] == "finding" and measured == "factorial" and "20 × 3.00" in why[1]
    quiet = _factorial({"DP-SGD (CRT)": "leaks", "plain SGD": "leaks"}).assign(epsilon_dp=3.0)
    quiet["leak"] = quiet.exposure - 1.25
    assert experiment._group_cause(quiet[quiet.canaries == "distinct contexts"], 20)[0][0] == "unknown"
    same_rate = table.assign(dp_lr=np.where(table.dp_lr.notna(), 10.0, np.nan))
    words = experiment.factorial_words(same_rate)
    assert "DPSGD chose the same rate, so no arm here varies the step alone" in words
    assert "neither the noise nor the step keeps them" in words


def test_seeds_resampled_draws_the_trained_models_too_and_leaves_one_model_alone() -> None:
    rng = np.random.default_rng(0)
    one = rng.normal(size=(1, 500))
    assert np.array_equal(experiment.seeds_resampled(one, 3), one[0])
    three = rng.normal(size=(3, 500)) * 0.01 + np.array([[0.0], [1.0], [2.0]])  # the seeds differ, the pairs barely
    drawn = experiment.seeds_resampled(three, 3)
    picks = np.random.default_rng(3).integers(0, 3, size=(3, 500))  # the direct formula, draw by draw
    assert np.allclose(drawn, [three[picks[:, d], d].mean() for d in range(500)])
    assert drawn.std() == pytest.approx(np.std([0.0, 1.0, 2.0]) / math.sqrt(3), rel=0.15)  # the seeds' spread
    assert three.mean(axis=0).std() < 0.01  # which the seed mean of the pair draws alone would hide


def _mia_power(cells: list[tuple[str, str, float, int, float, float, float]]) -> pd.DataFrame:
    """A mia_power table: (model, trainer, γ, seeds, group − individual, diff_low, diff_high) per cell, the deciding
    cells as mia_power_table marks them."""
    frame = pd.DataFrame(
        cells, columns=["model", "trainer", "gamma", "seeds", "group_minus_individual", "diff_low", "diff_high"]
    )
    multi = (frame.seeds >= 2).any()
    frame["decides"] = frame.seeds >= 2 if multi else True
    return frame


def test_group_beats_individual_is_decided_by_the_cells_of_several_trained_models() -> None:
    from repro.crt.claims import claims

    claim = claims(resolve({"profile": "default"}, experiment.SPEC))["attack:group_vs_individual"]
    power = pd.DataFrame(
        [{"model": m, "trainer": "non-private + mask", "gamma": 0.5, "statistic": "threshold (paper)",
          "attack": "group", "power_at_0.55": 0.3, "power_at_0.6": 0.7} for m in ("LSTM", "GPT-2")]
    )  # fmt: skip
    cells = [
        ("LSTM", "non-private + mask", 0.1, 3, -0.04, -0.10, 0.06),
        ("LSTM", "non-private + mask", 0.5, 1, 0.15, 0.01, 0.34),  # one model, wholly above 0: does not decide
    ]
    row = experiment._group_vs_individual(claim, _mia_power(cells), power)
    assert row["decision"] == "inconclusive" and row["ours"] == -0.04 and "2 cells" not in row["test"]
    assert "one trained model of LSTM non-private + mask at γ = 0.5 shows +0.150" in row["test"]
    assert "the trained models and pairs at the cells of several models" in row["why"]
    alone = experiment._group_vs_individual(claim, _mia_power([(*cells[1][:3], 1, *cells[1][4:])]), power)
    assert alone["decision"] == "held" and "several" not in alone["test"]  # no cell of several models: every cell
    several = [cells[0], ("GPT-2", "non-private + mask", 0.1, 3, 0.12, 0.02, 0.2), cells[1]]
    held = experiment._group_vs_individual(claim, _mia_power(several), power)
    assert (
        held["decision"] == "held" and held["ours"] == 0.12 and "the 2 cells of several trained models" in held["test"]
    )


def test_the_power_at_an_accuracy_margin_simulates_at_the_win_rate_that_reaches_it() -> None:
    """A threshold attack whose mean accuracy rises at a fixed slope with the member win rate, ±0.02 noise: the margin
    0.55 is reached at 0.5 + 0.05 / slope, and the power is the share of worlds there above the point."""

    def simulate_at(slope: float):
        def simulate(w: float) -> np.ndarray:
            calls.append(w)
            return 0.5 + slope * (w - 0.5) + np.random.default_rng(1).uniform(-0.02, 0.02, 1000)

        return simulate

    for slope, expected in ((0.5, 0.6), (0.2, 0.75)):
        calls: list[float] = []
        simulate = simulate_at(slope)
        worlds = {w: simulate(w) for w in (0.5, 0.55, 0.6)}
        out = experiment._power_at_accuracy(simulate, worlds, 0.54, 0.55)
        assert sorted(worlds) == [0.5, 0.55, 0.6]  # the caller's worlds are left as given
        assert out["margin_win_rate"] == pytest.approx(expected, abs=0.01)
        at = simulate(out["margin_win_rate"])
        assert out[experiment.MARGIN_POWER] == pytest.approx(np.mean(at > 0.54), abs=0.01)  # about 3/4 above 0.54
        assert max(calls) <= expected + 0.1  # simulated no further than needed
    flat = simulate_at(0.0)
    calls = []
    never = experiment._power_at_accuracy(flat, {w: flat(w) for w in (0.5, 0.55, 0.6)}, 0.54, 0.55)
    assert math.isnan(never["margin_win_rate"]) and never[experiment.MARGIN_POWER] == 0.0


def test_a_mean_exposure_row_gives_the_maximums_reading_in_its_test() -> None:
    cells = pd.DataFrame(
        [{"model": "LSTM", "gamma": g, "gamma_free": False, "leak_high": h} for g, h in ((0.0, 1.2), (0.3, 2.51))]
    )
    row = experiment._with_max({"test": "mean leak interval"}, cells)
    assert row["test"] == (
        "mean leak interval; on the maximum over the canaries instead, the leak intervals end at most at 2.51 bits "
        "(LSTM, γ = 0.3), above that statistic's 2-bit margin"
    )
    assert "below" in experiment._with_max({"test": ""}, cells.iloc[:1])["test"]
