"""The pretrained CRT arm on a 2-layer copy of SmolLM2: frozen-trunk logits, memo, Opacus training, vocabulary."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from repro.crt import customersim, redaction, trainers
from repro.crt.language_model import pad, sample_loss
from repro.crt.pretrained_arm import MASK_TEXT, FrozenTrunkLM, SmolVocab, bare, load_arm
from repro.data import MissingDataError


@pytest.fixture(scope="module")
def two_layers() -> Path:
    """The 2-layer copy of the packaged SmolLM2 (skip when the package is not installed)."""
    from repro.pretrained import smollm2_path, truncated_copy

    try:
        return truncated_copy(smollm2_path(), 2)
    except MissingDataError as err:
        pytest.skip(f"SmolLM2-135M is not installed: {err}")


def raw_llama(path: Path) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()


@pytest.fixture(scope="module")
def vocab(two_layers: Path) -> SmolVocab:
    from transformers import AutoTokenizer

    return SmolVocab(AutoTokenizer.from_pretrained(two_layers))


@pytest.fixture(scope="module")
def sentences() -> list[tuple[str, ...]]:
    return [s.tokens for s in redaction.split_sentences(customersim.corpus(4, 0))]


@pytest.mark.parametrize("trainable_layers", [1, 2])
def test_frozen_trunk_logits_equal_the_full_model_with_and_without_padding(two_layers, trainable_layers) -> None:
    llama = raw_llama(two_layers)
    model = FrozenTrunkLM(llama, trainable_layers).eval()
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(1, llama.config.vocab_size, (3, 9), generator=gen)
    lengths = [9, 5, 3]
    with torch.no_grad():
        full = llama(input_ids=ids).logits
        ours, state = model(ids)
        assert state is None
        torch.testing.assert_close(ours, full, atol=1e-4, rtol=0)
        again, _ = model(ids)
        assert torch.equal(again, ours)  # from the memo
        padded = pad([ids[i, :n].tolist() for i, n in enumerate(lengths)])
        model.memo.clear()
        for memoize in (True, False):
            model.memoize = memoize
            logits, _ = model(padded)
            for i, n in enumerate(lengths):
                alone = llama(input_ids=ids[i : i + 1, :n]).logits[0]
                torch.testing.assert_close(logits[i, :n], alone, atol=1e-4, rtol=0)


def test_memo_holds_one_entry_per_distinct_sequence_and_serves_its_prefix(two_layers) -> None:
    model = FrozenTrunkLM(raw_llama(two_layers)).eval()
    seqs = [[5, 6, 7, 8], [5, 6, 9], [5, 6, 7, 8], [10, 11]]
    model.precompute(seqs, batch_size=2)
    assert len(model.memo) == 3
    with torch.no_grad():
        model(pad(seqs)[:, :-1])  # what token_nll feeds: the longest row loses its last id
        model(pad(seqs[1:]))
    assert len(model.memo) == 3
    model.memo.clear()
    with torch.no_grad():
        model(pad(seqs)[:, :-1])  # [5, 6, 7] first, then the full [5, 6, 7, 8] replaces it
        model(pad(seqs))
    assert sorted(model.memo) == sorted({tuple(s) for s in seqs})


def test_a_plain_dict_shares_trunk_states_between_models(two_layers) -> None:
    shared: dict = {}
    first = FrozenTrunkLM(raw_llama(two_layers), memo=shared).eval()
    seqs = [[5, 6, 7, 8], [5, 6, 9]]
    first.precompute(seqs)
    second = FrozenTrunkLM(raw_llama(two_layers), memo=shared).eval()
    second.trunk = None  # any trunk pass would fail: every state must come from the shared dict
    with torch.no_grad():
        logits, _ = second(pad(seqs)[:, :-1])
        torch.testing.assert_close(logits, first(pad(seqs)[:, :-1])[0], atol=1e-5, rtol=0)
    assert len(shared) == 2


def test_only_the_linear_weights_of_the_trainable_block_require_grad(two_layers) -> None:
    llama = raw_llama(two_layers)
    model = FrozenTrunkLM(llama, 1)
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    expected = {
        f"layers.0.{part}.weight"
        for part in (
            "self_attn.q_proj",
            "self_attn.k_proj",
            "self_attn.v_proj",
            "self_attn.o_proj",
            "mlp.gate_proj",
            "mlp.up_proj",
            "mlp.down_proj",
        )
    }
    assert trainable == expected
    assert model.lm_head.weight is model.embed.weight and not model.embed.weight.requires_grad
    assert all(not p.requires_grad for p in model.frozen.parameters())
    assert not any(p.requires_grad for p in model.norm.parameters())
    assert model.training  # Opacus refuses a model in eval mode


def test_load_arm_relabels_rows_so_that_vocab_ids_read_as_tokenizer_ids(two_layers, vocab, sentences) -> None:
    arm, arm_vocab = load_arm(n_layers=2)
    llama = raw_llama(two_layers)
    ids = arm_vocab.encode(sentences[0])
    assert ids[0] == vocab.proxy and 0 not in ids
    with torch.no_grad():
        ours, _ = arm(torch.tensor([ids]))
        theirs = llama(input_ids=torch.tensor([[vocab.relabel(i) for i in ids]])).logits
    swap = [vocab.relabel(i) for i in range(len(vocab))]
    torch.testing.assert_close(ours, theirs[..., swap], atol=1e-4, rtol=0)


@pytest.mark.trains
@pytest.mark.trains  # computes gradients
def test_token_nll_at_real_targets_equals_the_full_logits_path_values_and_gradients(two_layers, vocab, sentences):
    from torch import nn

    model, arm_vocab = load_arm(n_layers=2)
    batch = pad([arm_vocab.encode(t) for t in sentences[:5]])
    assert (batch == 0).any()  # unequal lengths: the batch has padding
    params = [p for p in model.parameters() if p.requires_grad]

    def full_logits() -> torch.Tensor:  # language_model.token_nll's generic path: logits at every position
        logits, _ = model(batch[:, :-1])
        nll = nn.functional.cross_entropy(logits.transpose(1, 2), batch[:, 1:], reduction="none")
        return nll * (batch[:, 1:] != 0)

    grads = []
    for nll_of in (full_logits, lambda: model.token_nll(batch)):
        model.zero_grad(set_to_none=True)
        nll = nll_of()
        nll.sum().backward()
        grads.append((nll.detach(), [p.grad.clone() for p in params]))
    (expected, expected_grads), (ours, our_grads) = grads
    assert torch.equal(ours == 0, batch[:, 1:] == 0)
    torch.testing.assert_close(ours, expected, atol=1e-4, rtol=1e-4)  # float32 GEMMs of other shapes
    for g, e in zip(our_grads, expected_grads):  # float32 GEMMs of other shapes: within 1e-4 of the largest entry
        torch.testing.assert_close(g, e, atol=1e-4 * float(e.abs().max()), rtol=1e-3)


@pytest.mark.trains  # computes gradients
def test_per_sample_gradients_equal_single_example_gradients(two_layers, vocab, sentences) -> None:
    from opacus import GradSampleModule

    model, arm_vocab = load_arm(n_layers=2)
    batch = pad([arm_vocab.encode(t) for t in sentences[:3]])
    gsm = GradSampleModule(model, loss_reduction="mean")
    sample_loss(gsm, batch).backward()
    params = [p for p in model.parameters() if p.requires_grad]
    samples = [p.grad_sample.clone() for p in params]
    gsm.to_standard_module()
    for i in range(len(batch)):
        model.zero_grad(set_to_none=True)
        n = int((batch[i] != 0).sum())
        sample_loss(model, batch[i : i + 1, :n]).backward()
        for p, g in zip(params, samples):
            torch.testing.assert_close(g[i], p.grad, atol=1e-6, rtol=1e-3)


@pytest.mark.usefixtures("two_layers")  # skips without the packaged model
@pytest.mark.trains
def test_dpsgd_and_crt_change_only_the_trainable_block(sentences) -> None:
    model, vocab = load_arm(n_layers=2)
    data = [vocab.encode(t) for t in sentences[:8]]
    model.precompute(data)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    cfg = trainers.TrainConfig(epochs=1, dp_batch=4, batch=4, target_epsilon=8.0, optimizer="adam", lr=1e-3, dp_lr=1e-3)
    _, eps = trainers.train_dpsgd(model, data, cfg)
    assert 0 < eps <= 8.0 + 1e-6
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    changed = {name for name, p in model.named_parameters() if not torch.equal(p, before[name])}
    assert changed == trainable
    assert len(model.memo) == len({tuple(s) for s in data})  # training reused the precomputed trunk states
    frozen = {name: p.detach().clone() for name, p in model.named_parameters() if not p.requires_grad}
    _, eps_dp, eps_conf = trainers.train_crt(model, data[:4], data[4:], cfg, gamma=0.5)
    assert eps_dp > 0 and eps_conf > 0
    assert all(torch.equal(p, frozen[name]) for name, p in model.named_parameters() if not p.requires_grad)
    assert not any(hasattr(p, "grad_sample") for p in model.parameters())  # a plain module again


@pytest.mark.usefixtures("two_layers")  # skips without the packaged model
def test_trainable_state_round_trips_and_is_small(sentences) -> None:
    model, vocab = load_arm(n_layers=2)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.01 * torch.randn_like(p))
    state = model.state_dict_trainable()
    assert sum(t.numel() for t in state.values()) < 4e6  # one block, not 135M (or 2 x 28M embeddings)
    fresh, fresh_vocab = load_arm(n_layers=2)
    assert fresh_vocab.tokenizer is vocab.tokenizer  # loaded once per process (pretrained_arm._tokenizer)
    assert fresh.state_dict_trainable().keys() == state.keys() and fresh is not model  # the weights are its own
    fresh.load_trainable(state)
    batch = pad([vocab.encode(t) for t in sentences[:4]])
    with torch.no_grad():
        assert torch.equal(fresh(batch)[0], model(batch)[0])
    with pytest.raises(KeyError):
        fresh.load_trainable({k: v for k, v in list(state.items())[1:]})


def test_vocab_digits_are_single_glued_tokens(vocab) -> None:
    tokens = [w for w, _ in redaction.tokenize("My ID is: 123")]
    assert tokens == ["My", "ID", "is", ":", "1", "2", "3"]
    ids = vocab.encode(tokens)
    assert ids[-4:-1] == [vocab.token_id(d) for d in "123"]
    assert len({vocab.token_id(str(d)) for d in range(10)}) == 10
    assert ids[:-4] == vocab.encode(tokens[:4])[:-1]  # the canary context is a prefix, digits follow directly
    assert ids[0] == vocab.bos and ids[-1] == vocab.eos and vocab.bos != vocab.eos
    tokenizer = vocab.tokenizer
    assert tokenizer.convert_ids_to_tokens([vocab.relabel(i) for i in (ids[0], ids[-1])]) == [
        "<|endoftext|>",
        "<|im_end|>",
    ]


def test_vocab_marks_every_piece_of_a_flagged_word_and_mask_is_one_existing_token(vocab, sentences) -> None:
    tokens = ["Hello", "Zyxwvutsrq", "<MASK>", "<MASK>", "7", "."]
    flags = [False, True, True, False, True, False]
    ids, marks = vocab.encode_marked(tokens, flags)
    pieces = [vocab.pieces(w, i == 0) for i, w in enumerate(tokens)]
    assert len(pieces[1]) > 1  # a rare word is several BPE pieces, all marked
    assert len(ids) == len(marks) == 2 + sum(map(len, pieces))
    assert marks.tolist() == [0.0, *(float(f) for p, f in zip(pieces, flags) for _ in p), 0.0]
    mask = vocab.token_id(redaction.MASK)
    assert pieces[2] == pieces[3] == [mask] and 0 < mask < len(vocab)
    assert vocab.encode([redaction.MASK])[1] == mask  # the same id first in a sentence
    for toks in sentences:
        ids = vocab.encode(toks)
        assert 0 not in ids  # 0 is only ever padding
        text_ids = vocab.tokenizer(vocab.text(toks), add_special_tokens=False)["input_ids"]
        assert ids[1:-1] == [vocab.relabel(i) for i in text_ids]  # word by word = the rendered sentence at once


def test_rendering_glues_punctuation_and_digits_and_equals_tokenizing_the_text_at_once(vocab) -> None:
    assert vocab.text(["Hello", ",", "sure", "."]) == "Hello, sure."
    assert vocab.text(["My", "ID", "is", ":", "1", "2"]) == "My ID is:12"
    dialogues = customersim.insert_canaries(customersim.corpus(40, 3), ["123456"], 3, 4)
    for s in redaction.split_sentences(dialogues):
        text_ids = vocab.tokenizer(vocab.text(s.tokens), add_special_tokens=False)["input_ids"]
        assert vocab.encode(s.tokens)[1:-1] == [vocab.relabel(i) for i in text_ids], s.text


def test_a_digit_after_a_word_keeps_its_space_and_a_digit_run_stays_glued(vocab) -> None:
    """The join: "in 3 days", not "in3 days"; a digit run, digits after punctuation and punctuation stay glued."""
    assert [bare(["in", "3", "days"], i) for i in range(3)] == [True, False, False]
    assert vocab.text(["arrives", "in", "3", "days", "."]) == "arrives in 3 days."
    assert vocab.text(["call", "555", "-", "0", "1"]) == "call 555-01"
    assert vocab.text(["order", "1", "2", ",", "3"]) == "order 12,3"
    assert vocab.text(["<MASK>", "7"]) == f"{MASK_TEXT} 7"  # the mask is a word: a digit after it is spaced
    tokens = ["in", "3", "days"]
    ids = vocab.encode(tokens)[1:-1]
    assert ids == [vocab.relabel(i) for i in vocab.tokenizer("in 3 days", add_special_tokens=False)["input_ids"]]
    assert vocab.token_id("3") not in ids[:1] and vocab.token_id("3") in ids  # " 3" ends in the digit's own token


def test_the_attack_sizes_re_score_the_kept_fine_tunes_without_training_again(tmp_path, monkeypatch) -> None:
    from repro.crt import arm

    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    calls = {"train": 0, "score": 0, "control": 0}

    def count(name, value):
        def fake(*args):
            calls[name] += 1
            return value(*args)

        return fake

    monkeypatch.setattr(arm, "_train", count("train", lambda p, data, memo: {"CRT": {"weights": p["seed"]}}))
    score = lambda p, data, trained, memo: {"scored": (trained, p["n_mia"])}
    monkeypatch.setattr(arm, "_score", count("score", score))
    monkeypatch.setattr(arm, "_control", count("control", lambda p, data, memo: {"nll": None}))
    base = dict.fromkeys(arm.PARAMS, 1) | {"arm_source": "local", "profile": "smoke"}
    first = arm.run(base, None)
    assert first["scored"] == ({"CRT": {"weights": 1}}, 1) and not first["cached"]
    again = arm.run(base | {"n_mia": 80, "n_null": 500}, None)  # re-scored from the kept fine-tunes
    assert again["scored"] == ({"CRT": {"weights": 1}}, 80) and again["cached"]
    assert calls == {"train": 1, "score": 2, "control": 1}
    arm.run(base | {"seed": 2}, None)  # a training input trains again
    assert calls == {"train": 2, "score": 3, "control": 2}
