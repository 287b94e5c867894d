"""Min-K% continued pretraining: the order in which the Hugging Face Trainer really visits the training blocks.

pack_blocks is tested on its own (test_membership); here the blocks the model's forward pass receives during
continue_pretraining are recorded, step by step, and must be pack_blocks' blocks in corpus order, each once, so a
member's place in the corpus is the step that trains it (what the forgetting table and the page assume)."""

from __future__ import annotations

import pytest
import torch

from repro.mink import pretraining

pytestmark = pytest.mark.trains  # every test here runs the Trainer (the suite's training group)

BLOCK = 24
# background documents with two inserted items ("MEMBER ..."), kept whole: eight or more blocks of 24 characters
BACKGROUND = [f"background text number {i} about nothing in particular." for i in range(6)]
MEMBERS = ["MEMBER one: blue? yes", "MEMBER two: short"]  # each fits one block with its EOS
DOCS = [*BACKGROUND[:2], MEMBERS[0], *BACKGROUND[2:5], MEMBERS[1], BACKGROUND[5]]


class Chars:
    """One token per character (ids 1-60), EOS 0: the blocks can be read back and compared exactly."""

    eos_token_id = 0

    def __call__(self, docs, add_special_tokens=False):
        return {"input_ids": [[1 + ord(c) % 60 for c in d] for d in docs]}


def tiny_model() -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(
        LlamaConfig(
            vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
            num_key_value_heads=2, max_position_embeddings=64,
        )
    )  # fmt: skip


def visited(tmp_path, batch_size: int, seed: int = 0) -> tuple[list[torch.Tensor], list[torch.Tensor], dict]:
    """Train the tiny model on DOCS through continue_pretraining and record, per forward call (one per optimizer
    step here), the input_ids and attention_mask the Trainer passed to the model."""
    model = tiny_model()
    ids: list[torch.Tensor] = []
    masks: list[torch.Tensor] = []

    def record(module, args, kwargs):
        ids.append(kwargs["input_ids"].detach().cpu().clone())
        masks.append(kwargs["attention_mask"].detach().cpu().clone())

    model.register_forward_pre_hook(record, with_kwargs=True)
    cfg = pretraining.PretrainConfig(learning_rate=1e-3, block_size=BLOCK, batch_size=batch_size, seed=seed)
    stats = pretraining.continue_pretraining(
        model, Chars(), DOCS, cfg, tmp_path / f"out{batch_size}-{seed}", progress=False, keep_whole=MEMBERS
    )
    return ids, masks, stats


@pytest.fixture(autouse=True)
def _cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.mark.parametrize("batch_size", [1, 3])
def test_the_trainer_visits_the_packed_blocks_in_corpus_order_each_once(tmp_path, batch_size) -> None:
    packed = pretraining.pack_blocks(Chars(), DOCS, BLOCK, keep_whole=MEMBERS)
    n = len(packed.ids)
    assert n >= 8  # enough blocks that any other order is visible
    ids, masks, stats = visited(tmp_path, batch_size)
    steps = -(-n // batch_size)
    assert stats["steps"] == steps and len(ids) == steps  # one forward call per optimizer step
    assert [len(b) for b in ids] == [min(batch_size, n - s * batch_size) for s in range(steps)]
    assert torch.equal(torch.cat(ids), packed.ids)  # the packed blocks, in corpus order, each exactly once
    assert torch.equal(torch.cat(masks), packed.mask)  # the padded tail masked where pack_blocks masked it
    # a member is trained at the step that holds its block, whole: its tokens appear in that step's batch only
    for member in MEMBERS:
        doc = DOCS.index(member)
        step, row = divmod(packed.block_of[doc], batch_size)
        tokens = torch.tensor(Chars()([member])["input_ids"][0])
        text = ids[step][row].tolist()
        assert any(text[i : i + len(tokens)] == tokens.tolist() for i in range(BLOCK - len(tokens) + 1))


def test_the_visiting_order_does_not_depend_on_the_training_seed(tmp_path) -> None:
    first, _, _ = visited(tmp_path, 1, seed=0)
    other, _, _ = visited(tmp_path, 1, seed=7)  # the seed moves the weights' noise, never the data order
    assert torch.equal(torch.cat(first), torch.cat(other))


def test_the_recorded_order_would_catch_a_shuffling_sampler(tmp_path, monkeypatch) -> None:
    """The same recording with the Trainer's default random sampler forced in: the order differs, so the tests
    above can fail."""
    import transformers

    original = transformers.TrainingArguments

    def shuffled(**kwargs):
        return original(**{**kwargs, "train_sampling_strategy": "random"})

    monkeypatch.setattr(transformers, "TrainingArguments", shuffled)
    packed = pretraining.pack_blocks(Chars(), DOCS, BLOCK, keep_whole=MEMBERS)
    ids, _, _ = visited(tmp_path, 1)
    got = torch.cat(ids)
    assert not torch.equal(got, packed.ids)
    assert sorted(map(tuple, got.tolist())) == sorted(map(tuple, packed.ids.tolist()))  # same blocks, other order


def test_a_run_from_a_burn_in_meets_the_optimizer_past_its_start_up(tmp_path) -> None:
    """Adam's first step from a fresh state moves every coordinate with a gradient by the learning rate (m/sqrt(v)
    is the sign of the gradient after bias correction), so the first update norm is lr * sqrt(coordinates). A run
    started from a burn-in's kept state continues the burn-in's step count at its own learning rate, and its first
    step moves the weights less than a fresh optimizer's first step would from the same weights."""
    lr = 1e-3
    burn = tiny_model()
    n = sum(q.numel() for q in burn.parameters())
    cfg = pretraining.PretrainConfig(learning_rate=lr, block_size=BLOCK, batch_size=1, seed=0)
    first = pretraining.continue_pretraining(
        burn, Chars(), BACKGROUND * 3, cfg, tmp_path / "b", progress=False, save_to=tmp_path / "burn", keep_state=True
    )
    assert pretraining.has_optimizer_state(tmp_path / "burn")
    assert len(first["update_norms"]) == first["steps"] >= 8
    fresh = first["update_norms"][0] / (lr * n**0.5)
    assert 0.9 < fresh <= 1.0 + 1e-6  # every coordinate (nearly all have a gradient) moved by lr
    assert first["update_norms"][-1] < 0.7 * first["update_norms"][0]  # the start-up the burn-in absorbs

    low = 1e-4
    again = tiny_model()
    again.load_state_dict(burn.state_dict())
    run_cfg = pretraining.PretrainConfig(learning_rate=low, block_size=BLOCK, batch_size=1, seed=0)
    after = pretraining.continue_pretraining(
        again,
        Chars(),
        DOCS,
        run_cfg,
        tmp_path / "r",
        progress=False,
        keep_whole=MEMBERS,
        start=tmp_path / "burn",
        save_to=tmp_path / "run",
        keep_state=True,
    )
    state = torch.load(tmp_path / "run" / "optimizer.pt", weights_only=True)
    assert all(float(s["step"]) == first["steps"] + after["steps"] for s in state["state"].values())
    assert all(g["lr"] == low for g in state["param_groups"])  # the run's rate, not the burn-in's
    cold = tiny_model()
    cold.load_state_dict(burn.state_dict())
    plain = pretraining.continue_pretraining(
        cold, Chars(), DOCS, run_cfg, tmp_path / "p", progress=False, keep_whole=MEMBERS
    )
    assert plain["update_norms"][0] == pytest.approx(low * n**0.5, rel=0.1)  # a fresh optimizer's first step
    assert after["update_norms"][0] < 0.7 * plain["update_norms"][0]
