"""Unit tests of the CRT pipeline (Appendix A.6), the exact canary rank and the Fig. 6 amplification."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
import torch
from faker import Faker

from repro.crt import accounting, canary, customersim, gpt, language_model, membership_attacks, redaction, trainers
from repro.crt.customersim import make_turn


def sentences_of(*turn_texts: str) -> list[redaction.Sentence]:
    """Split one dialogue per text (no gold spans needed for these cases)."""
    return redaction.split_sentences([[make_turn("USR", [(t, None)])] for t in turn_texts])


def test_generator_is_seeded_and_labels_every_secret() -> None:
    a, b = customersim.corpus(30, 7), customersim.corpus(30, 7)
    assert [t.text for d in a for t in d] == [t.text for d in b for t in d]
    sentences = redaction.split_sentences(a)
    kinds = {label for s in sentences for label in s.labels if label}
    assert kinds == {"name", "address", "phone", "order", "tracking"}
    for s in sentences:
        for tok, label in zip(s.tokens, s.labels):
            if label in ("phone", "order"):
                assert tok.isdigit() or tok in "-."
            if label == "tracking":
                # a tracking number holding a digit is split into characters; an all-letter one stays a word
                assert (len(tok) == 1 and tok.isalnum() and (tok.isdigit() or tok.isupper())) or (
                    len(tok) == 10 and tok.isupper()
                )


def test_policy_at_gamma_zero_is_perfect_and_misses_are_nested() -> None:
    sentences = redaction.split_sentences(customersim.corpus(60, 1))
    gold = np.concatenate([[label is not None for label in s.labels] for s in sentences])
    flags = {g: np.concatenate([redaction.RegexPolicy(g, 3).flags(s) for s in sentences]) for g in (0.0, 0.2, 0.5)}
    assert (flags[0.0] == gold).all()
    assert (flags[0.5] <= flags[0.2]).all() and (flags[0.2] <= flags[0.0]).all()  # a miss stays a miss
    recall = flags[0.5][gold].mean()
    assert 0.35 < recall < 0.65
    assert all(redaction.conservative_flag(s) for s in sentences if s.has_secret)  # π_c recall 1


def test_policy_finds_every_faker_name_and_address_and_nothing_else() -> None:
    sentences = redaction.split_sentences(customersim.corpus(300, 11))
    gold = np.concatenate([[label is not None for label in s.labels] for s in sentences])
    flags = np.concatenate([redaction.RegexPolicy().flags(s) for s in sentences])
    recall, precision = flags[gold].mean(), gold[flags].mean()
    assert (recall, precision) == (1.0, 1.0)
    kinds = {label for s in sentences for label in s.labels if label}
    assert {"name", "address"} <= kinds
    # Surnames that are also street suffixes (Hill, Park, Ford, ...) are names; after a number they are an address.
    policy = redaction.RegexPolicy()
    assert [k for _, _, k in policy.detections("This is Charles Hill.")] == ["name"]
    assert policy.detections("I live at 4132 Dale Park.") == [(10, 24, "address")]
    assert policy.detections("Ship it to 80160 Clayton Isle.") == [(11, 29, "address")]


def secrets_of(dialogues: list[list[customersim.Turn]], kind: str) -> list[str]:
    """Every gold secret of one type, in order."""
    return [t.text[s:e] for d in dialogues for t in d for s, e, k in t.spans if k == kind]


def test_faker_secrets_are_reproducible_and_shaped_for_the_policy() -> None:
    texts = [[t.text for d in customersim.corpus(40, seed) for t in d] for seed in (5, 5, 6)]
    assert texts[0] == texts[1] and texts[0] != texts[2]
    dialogues = customersim.corpus(200, 5)
    names, addresses = secrets_of(dialogues, "name"), secrets_of(dialogues, "address")
    assert len(names) == 200 and len(addresses) > 50
    assert all(re.fullmatch(r"[A-Z][a-z]+ [A-Z][a-z]+", n) for n in names)
    for address in addresses:
        number, *street, suffix = address.split(" ")
        assert re.fullmatch(r"[1-9][0-9]{0,4}", number) and street and suffix in customersim.STREET_SUFFIXES
        assert all(re.fullmatch(r"[A-Z][a-z]+", w) for w in street)
    assert all(re.fullmatch(r"[A-Z][a-z]+", s) for s in customersim.STREET_SUFFIXES)
    # A draw depends on its Random alone: not on the global random state, other Fakers' draws or other Randoms' draws.
    alone = [customersim.secret(k, r) for r in [random.Random(3)] for k in ("name", "address") * 20]
    mixed, other, r = [], random.Random(99), random.Random(3)
    for k in ("name", "address") * 20:
        random.random(), Faker("en_US").name(), customersim.secret(k, other)
        mixed.append(customersim.secret(k, r))
    assert mixed == alone


def test_faker_names_and_streets_come_from_large_pools() -> None:
    rng = random.Random(0)
    names = [customersim.secret("name", rng).split(" ") for _ in range(2000)]
    assert len({last for _, last in names}) >= 200  # the old hand-written list had 50 surnames
    assert len({first for first, _ in names}) >= 200  # ... and 60 first names
    streets = [customersim.secret("address", rng).split(" ") for _ in range(2000)]
    assert len({" ".join(s[1:-1]) for s in streets}) >= 500
    assert len({s[-1] for s in streets}) >= 100 and len(customersim.STREET_SUFFIXES) >= 150


def test_split_into_sentences_before_dedup_and_redaction() -> None:
    # Two turns share one sentence: dedup at the turn level would keep both, sentence level masks the second.
    split = redaction.crt_split(
        sentences_of("Where is my box? Thanks.", "Hi. Where is my box?"), redaction.RegexPolicy()
    )
    assert split.tokens == [["Where", "is", "my", "box", "?"], ["Thanks", "."], ["Hi", "."], [redaction.MASK]]
    # The secret sends only its own sentence to D_pri, not its whole turn.
    split = redaction.crt_split(sentences_of("Thanks a lot. It is 555-123-4567."), redaction.RegexPolicy())
    assert split.private.tolist() == [False, True]


def test_dedup_before_redaction_and_one_shared_mask() -> None:
    # Sentences differing only in their secret are not duplicates (redacting first would make them so).
    split = redaction.crt_split(sentences_of("It is 555-123-4567.", "It is 555-987-6543."), redaction.RegexPolicy())
    masked = ["It", "is"] + [redaction.MASK] * 12 + ["."]
    assert split.tokens == [masked, masked] and not split.duplicate.any()
    # Dedup and redaction produce the very same token, so a duplicate and a redaction look alike to the model.
    dup = redaction.crt_split(sentences_of("Thanks.", "Thanks."), redaction.RegexPolicy())
    assert dup.tokens[1] == [redaction.MASK] and dup.duplicate.tolist() == [False, True]


def test_every_mask_goes_to_d_pri_and_missed_secrets_are_caught_by_pi_c() -> None:
    sentences = redaction.split_sentences(customersim.corpus(40, 2))
    missing_all = redaction.RegexPolicy(gamma=1.0)  # π misses every secret
    split = redaction.crt_split(sentences, missing_all)
    for toks, private, s in zip(split.tokens, split.private, sentences):
        if redaction.MASK in toks or s.has_secret:
            assert private
    public = split.part(False)
    assert public and all(redaction.MASK not in t for t in public)


def test_crt_batches_are_never_mixed(monkeypatch: pytest.MonkeyPatch) -> None:
    public = [[2, 5, 6, 3]] * 12
    private = [[2, 7, 8, 9, 3]] * 9  # private sentences have length 5, public ones length 4
    seen: list[tuple[str, set[int]]] = []
    monkeypatch.setattr(trainers._Private, "public_step", lambda self, b, w=None: seen.append(("pub", {b.shape[1]})))
    monkeypatch.setattr(trainers._Private, "dp_step", lambda self, b, w=None: seen.append(("pri", {b.shape[1]})))
    model = language_model.LSTMLM(10, 4, 4, private=True)
    trainers.train_crt(
        model, public, private, trainers.TrainConfig(epochs=2, batch=5, dp_batch=3, target_epsilon=5.0), gamma=0.1
    )
    kinds = [k for k, _ in seen]
    assert {frozenset(lengths) for k, lengths in seen if k == "pub"} == {frozenset({4})}
    assert {frozenset(lengths) for k, lengths in seen if k == "pri"} == {frozenset({5})}
    first_pri = kinds.index("pri")
    assert kinds[:first_pri] == ["pub"] * 3  # one full public epoch, then the private epoch


def tiny_gpt2(vocab_size: int = 20) -> gpt.GPT2LM:
    """A 2-layer, width-8 GPT-2 in float64 over `vocab_size` ids, with tied input/output embeddings."""
    vocab = language_model.Vocab(
        [language_model.PAD, language_model.UNK, language_model.BOS, language_model.EOS]
        + [f"w{i}" for i in range(vocab_size - 4)]
    )
    return gpt.small_gpt2(vocab, n_positions=16, n_embd=8, n_layer=2, n_head=2).double()


TINY_MODELS = {
    "LSTM": (lambda: language_model.LSTMLM(20, 6, 6).double(), language_model.LSTMStepper),
    "GPT-2": (tiny_gpt2, gpt.GPT2Stepper),
}


@pytest.mark.parametrize("kind", TINY_MODELS)
def test_tree_rank_equals_brute_force_on_a_tiny_model(kind: str) -> None:
    torch.manual_seed(0)
    build, stepper = TINY_MODELS[kind]
    model = build()
    for p in model.parameters():
        p.data *= 4  # sharpen the distribution so ranks are spread out
    context, digits = [2, 4, 5], [10, 11, 12, 13, 14, 15, 16]
    tree = canary.tree_scores(stepper(model), context, digits, 4, batch=50)
    brute = canary.brute_force_scores(
        lambda s: language_model.suffix_logprob(model, s, 4), context, digits, 4, batch=100
    )
    assert tree.shape == (7**4,)
    np.testing.assert_allclose(tree, brute, atol=1e-10)
    assert np.ptp(tree) > 5  # the scores really differ, so equal ranks are not trivial
    ranks_tree = [canary.rank_of(tree, i) for i in range(0, 7**4, 97)]
    ranks_brute = [int(1 + (brute > brute[i]).sum()) for i in range(0, 7**4, 97)]
    assert ranks_tree == ranks_brute and min(ranks_tree) >= 1
    assert canary.rank_of(tree, int(np.argmax(tree))) == 1


@pytest.mark.trains
def test_gpt2_per_sample_gradients_equal_a_loop_over_examples() -> None:
    from opacus import GradSampleModule
    from transformers.pytorch_utils import Conv1D

    torch.manual_seed(1)
    model = tiny_gpt2()
    assert any(isinstance(m, Conv1D) for m in model.modules()) and Conv1D in GradSampleModule.GRAD_SAMPLERS
    batch = language_model.pad([[2, 5, 6, 7, 8, 3], [2, 9, 3], [2, 10, 11, 12, 3], [2, 13, 14, 15, 16, 17, 3]])
    weights = (torch.rand(batch.shape) > 0.3).double()  # S-DP-style token weights
    wrapped = GradSampleModule(model)
    language_model.sample_loss(wrapped, batch, weights).backward()
    per_sample = {name: p.grad_sample.clone() for name, p in model.named_parameters()}
    wrapped.disable_hooks()
    assert model.gpt.lm_head.weight is model.gpt.transformer.wte.weight  # tied: both uses add up in one grad_sample
    for i in range(len(batch)):
        model.zero_grad(set_to_none=True)
        language_model.sample_loss(model, batch[i : i + 1], weights[i : i + 1]).backward()
        for name, p in model.named_parameters():
            torch.testing.assert_close(per_sample[name][i], p.grad, rtol=1e-9, atol=1e-12, msg=name)
    assert len(per_sample) == len(list(model.parameters())) and all(g.abs().sum() > 0 for g in per_sample.values())


class CharTokenizer:
    """A stand-in Hub tokenizer: one piece per letter (a=1, b=2, ...; a space joins the next piece), '!' = 0,
    <|endoftext|> 28, <pad> 29."""

    pad_token_id, eos_token_id = 29, 28

    def __len__(self) -> int:
        return 30

    def __call__(self, text: str) -> dict:
        return {"input_ids": [ord(c) - 96 if c.isalpha() else 0 for c in text if c != " "]}


def test_bpe_vocab_moves_pad_to_zero_and_marks_every_piece_of_a_flagged_word() -> None:
    vocab = gpt.BPEVocab(CharTokenizer())
    ids, marks = vocab.encode_marked(["ab", "cd", "!"], [False, True, False])
    # eos, a, b, c, d, ! (the tokenizer's id 0, relabelled to <pad>'s 29), eos: id 0 stays free for padding
    assert ids == [28, 1, 2, 3, 4, 29, 28]
    assert marks.tolist() == [0, 0, 0, 1, 1, 0, 0]  # both pieces of the flagged word, nothing else
    assert vocab.encode(["ab", "cd", "!"]) == ids
    assert vocab.token_id("c") == 3 and vocab.token_id("!") == 29
    with pytest.raises(ValueError, match="2 BPE pieces"):
        vocab.token_id("ab")  # a digit that merged with its neighbour would break the exact rank


def test_fig6_example_with_autodp() -> None:
    rows = accounting.amplification(1.0, [0.1, 0.2, 0.5], q=0.1, steps=100, delta=8e-5)
    assert rows[0]["sigma"] == pytest.approx(3.783, abs=1e-3)
    assert rows[0]["epsilon_dp"] == pytest.approx(0.801, abs=1e-3)
    assert rows[0]["epsilon_conf"] == pytest.approx(0.1158, abs=1e-4)
    assert round(rows[1]["epsilon_conf"], 3) == 0.243 and round(rows[2]["epsilon_conf"], 3) == 0.579
    assert rows[0]["naive_epsilon_conf"] == pytest.approx(0.159, abs=1e-3)  # not the paper's number


@pytest.mark.parametrize(
    "epsilon, q, steps, delta", [(1.0, 0.1, 100, 8e-5), (0.5, 0.05, 200, 1e-6), (8.0, 0.2, 50, 1e-5)]
)
def test_calibrated_sigma_gives_the_target_epsilon_and_matches_a_bisection(
    epsilon: float, q: float, steps: int, delta: float
) -> None:
    from scipy.optimize import brentq

    sigma = accounting.calibrate_sigma(epsilon, q, steps, delta)
    assert accounting.autodp_epsilon(sigma, q, steps, delta) == pytest.approx(epsilon, rel=1e-3)
    # the hand-written bisection calibrate_sigma used before autodp's calibrator
    bisection = brentq(lambda s: accounting.autodp_epsilon(s, q, steps, delta) - epsilon, 0.3, 100.0, xtol=1e-6)
    assert sigma == pytest.approx(bisection, abs=2e-5)


def test_cached_accounting_gives_opacus_own_numbers(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from opacus.accountants import RDPAccountant
    from opacus.accountants.utils import get_noise_multiplier

    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    trainers.noise_multiplier.cache_clear()
    sigma = trainers.noise_multiplier(3.0, 1e-5, 0.05, 2)
    assert sigma == get_noise_multiplier(
        target_epsilon=3.0, target_delta=1e-5, sample_rate=0.05, epochs=2, accountant="rdp"
    )
    trainers.noise_multiplier.cache_clear()
    (entry,) = (tmp_path / "crt").glob("sigma-*.json")
    entry.write_text(entry.read_text().replace(repr(sigma), "1.25"))  # the next process reads the stored value
    assert trainers.noise_multiplier(3.0, 1e-5, 0.05, 2) == 1.25
    trainers.noise_multiplier.cache_clear()
    rng = np.random.default_rng(3)
    for _ in range(5):  # one to three phases (CRT's public then private steps use two accountants' worth)
        history = [(float(rng.uniform(0.6, 4)), float(rng.uniform(0.01, 0.3)), int(rng.integers(1, 400)))
                   for _ in range(int(rng.integers(1, 4)))]  # fmt: skip
        accountant = RDPAccountant()
        accountant.history = list(history)
        assert trainers.rdp_epsilon(history, 1e-5) == accountant.get_epsilon(1e-5)  # exact, not approximately
    assert trainers.rdp_epsilon([], 1e-5) == RDPAccountant().get_epsilon(1e-5) == 0


def test_array_rdp_series_gives_opacus_rdp_and_its_calibrated_sigma() -> None:
    from opacus.accountants import RDPAccountant
    from opacus.accountants.analysis import rdp
    from opacus.accountants.utils import get_noise_multiplier

    orders = RDPAccountant.DEFAULT_ALPHAS
    for q, sigma in [(0.25, 20.0), (1 / 12, 10.0), (0.5, 1.3), (0.05, 0.7), (1 / 3, 5.0), (0.01, 0.5), (1.0, 1.2)]:
        ours = trainers._sgm_rdp(q, sigma, orders)
        ref = rdp.compute_rdp(q=q, noise_multiplier=sigma, steps=1, orders=orders)
        assert np.allclose(ours, ref, rtol=1e-8, atol=0), (q, sigma)
        integer = [k for k, a in enumerate(orders) if float(a).is_integer()]
        assert (ours[integer] == ref[integer]).all()  # integer orders: Opacus' own function
    # the chapter's settings (smoke LSTM, S-DP and CRT phases; a default-size rate): the same σ, bit for bit
    for epsilon, delta, q, epochs in [(5.0, 8e-5, 0.25, 2), (3.0, 8e-5, 1 / 12, 2), (8.0, 8e-5, 0.5, 1)]:
        expected = get_noise_multiplier(
            target_epsilon=epsilon, target_delta=delta, sample_rate=q, epochs=epochs, accountant="rdp"
        )
        assert trainers.calibrated_sigma(epsilon, delta, q, epochs) == expected


@pytest.mark.trains
def test_dp_training_returns_a_plain_module_without_opacus_hooks(monkeypatch: pytest.MonkeyPatch) -> None:
    def hooks(model: torch.nn.Module) -> int:
        return sum(len(m._forward_hooks) + len(m._backward_hooks) + len(m._forward_pre_hooks) for m in model.modules())

    during: list[int] = []
    finish = trainers._Private.finish
    monkeypatch.setattr(trainers._Private, "finish", lambda self: (during.append(hooks(self.module)), finish(self)))
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    data = [[2] + rng.integers(4, 20, size=int(rng.integers(3, 7))).tolist() + [3] for _ in range(24)]
    model = language_model.LSTMLM(20, 6, 6, private=True).double()
    cfg = trainers.TrainConfig(epochs=2, batch=4, dp_batch=4, lr=1.0, dp_lr=1.0, target_epsilon=5.0)
    trained, _, _ = trainers.train_crt(model, data[:12], data[12:], cfg, gamma=0.1)
    assert trained is model and type(trained) is language_model.LSTMLM
    assert during[0] > 0  # Opacus' per-sample hooks were there during training ...
    assert hooks(trained) == 0  # ... and none is left
    assert not any(hasattr(p, "grad_sample") or hasattr(p, "_current_grad_sample") for p in trained.parameters())
    with torch.no_grad():
        loss = language_model.sample_loss(trained.eval(), language_model.pad(data)).item()
    assert loss == pytest.approx(2.880188653360315, rel=1e-6)  # the value with Opacus' private _close()


def test_threshold_mia_is_half_on_identical_and_one_on_separated_scores() -> None:
    rng = np.random.default_rng(0)
    same = rng.normal(size=400)
    assert abs(membership_attacks.threshold_accuracy(same[:200], same[200:]) - 0.5) < 0.08
    assert membership_attacks.threshold_accuracy(rng.normal(0, 1, 200), rng.normal(10, 1, 200)) == 1.0
    groups = membership_attacks.group_scores(np.ones(50), 20, 7)
    assert groups.tolist() == [20.0] * 7


def test_both_readings_of_deduplication() -> None:
    sentences = sentences_of("Thanks a lot.", "Thanks a lot.", "It is 555-123-4567.", "Thanks a lot.")
    masked = redaction.crt_split(sentences, redaction.RegexPolicy(), "mask")
    removed = redaction.crt_split(sentences, redaction.RegexPolicy(), "remove")
    # Algorithm 1 with A.6: the two later copies become a bare <MASK> in D_pri
    assert masked.part(True).count([redaction.MASK]) == 2 and len(masked.part(False)) == 1
    # Section 4: identical sequences are removed from both sets
    assert [redaction.MASK] not in removed.part(True) and len(removed.part(False)) == 1
    assert len(removed.part(True)) + len(removed.part(False)) == 2 and removed.removed.sum() == 2
    with pytest.raises(ValueError, match="dedup must be one of"):
        redaction.crt_split(sentences, redaction.RegexPolicy(), "drop")


@pytest.mark.trains
def test_epoch_hook_sees_every_epoch_and_the_epsilon_spent_so_far() -> None:
    data = [[2, 5, 6, 7, 3], [2, 6, 5, 3], [2, 7, 7, 5, 6, 3]] * 6
    seen: dict[str, list] = {"dpsgd": [], "crt": [], "plain": []}
    cfg = trainers.TrainConfig(epochs=3, batch=4, dp_batch=4, target_epsilon=4.0)
    trainers.train_nonprivate(
        language_model.LSTMLM(10, 4, 4), data, cfg, on_epoch=lambda e, m, eps: seen["plain"].append((e, eps))
    )
    _, eps = trainers.train_dpsgd(
        language_model.LSTMLM(10, 4, 4, private=True), data, cfg, on_epoch=lambda e, m, x: seen["dpsgd"].append((e, x))
    )
    _, _, conf = trainers.train_crt(
        language_model.LSTMLM(10, 4, 4, private=True),
        data[:6],
        data[6:],
        cfg,
        0.1,
        on_epoch=lambda e, m, x: seen["crt"].append((e, x)),
    )
    assert seen["plain"] == [(1, None), (2, None), (3, None)]
    for name, final in (("dpsgd", eps), ("crt", conf)):
        epochs, spent = zip(*seen[name])
        assert epochs == (1, 2, 3) and list(spent) == sorted(spent) and spent[-1] == pytest.approx(final)
    assert abs(eps - 4.0) < 0.1 and conf < seen["crt"][-1][1] + 1e-12 < eps  # CRT reports its amplified ε


def _direct_beam(prefix_logprob, k: int, length: int, width: int) -> list[int]:
    """A beam search written out: prefixes as digit tuples, each scored by `prefix_logprob`, `width` kept per length
    (ties to the lower index), the survivors best first as base-k indices."""
    beams = [()]
    for _ in range(length):
        children = [b + (d,) for b in beams for d in range(k)]
        index = lambda c: int(sum(d * k ** (len(c) - 1 - i) for i, d in enumerate(c)))
        children.sort(key=lambda c: (-prefix_logprob(c), index(c)))
        beams = children[:width]
    return [int(sum(d * k ** (length - 1 - i) for i, d in enumerate(b))) for b in beams]


@pytest.mark.parametrize("kind", TINY_MODELS)
def test_beam_search_on_the_trees_levels_equals_a_search_written_out(kind: str) -> None:
    """beam_search reads the prefix scores tree_levels keeps (the last level is tree_scores): at every width it ends
    with the candidates a beam search written out over brute-force prefix scores ends with; a beam as wide as the last
    level is the exact ranking, and a width of 1 the greedy path."""
    torch.manual_seed(1)
    build, stepper = TINY_MODELS[kind]
    model = build()
    for p in model.parameters():
        p.data *= 4
    context, digits, length = [2, 4, 5], [10, 11, 12, 13, 14], 4
    levels = canary.tree_levels(stepper(model), context, digits, length, batch=40)
    assert [lv.size for lv in levels] == [5, 25, 125, 625]
    np.testing.assert_array_equal(levels[-1], canary.tree_scores(stepper(model), context, digits, length, batch=40))
    score = lambda c: float(language_model.suffix_logprob(model, [context + [digits[d] for d in c]], len(c))[0])
    for width in (1, 3, 7, 30):
        assert list(canary.beam_search(levels, width)) == _direct_beam(score, 5, length, width), width
    exact = canary.beam_search(levels, 625)
    assert list(exact) == list(np.argsort(-levels[-1], kind="stable"))
    with pytest.raises(ValueError, match="width"):
        canary.beam_search(levels, 0)
