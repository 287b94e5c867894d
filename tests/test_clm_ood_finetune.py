"""The conditional-LM chapter's fine-tune on XSUM: its loss against a direct computation, only the last blocks train,
the loss falls on pairs it sees again, and the parameters that would make it meaningless are refused."""

from __future__ import annotations

import numpy as np
import pytest

from repro.clm_ood import finetune

ARTICLES = [
    "The council approved the new bridge after years of delay, and work starts in spring.",
    "Scientists found a new species of frog in the rainforest of Peru this week.",
    "The festival drew record crowds despite the rain on Saturday.",
]
REFERENCES = ["A bridge is approved.", "A new frog species was found in Peru.", "Record crowds at a rainy festival."]


@pytest.fixture(scope="module")
def tiny():
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from repro.pretrained import smollm2_path, truncated_copy

    path = truncated_copy(smollm2_path(), 2)
    tok = AutoTokenizer.from_pretrained(path)
    torch.manual_seed(0)
    return tok, lambda: AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()


def test_the_target_loss_is_the_cross_entropy_of_the_reference_tokens(tiny) -> None:
    import torch

    tok, load = tiny
    model = load()
    rows = finetune.pair_rows(tok, ARTICLES, REFERENCES, budget=24, max_new=8)
    assert all(y[-1] == tok.eos_token_id for _, y in rows)
    with torch.no_grad():
        batched = float(finetune.target_loss(model, rows, tok.pad_token_id))
        direct = []
        for prompt, y in rows:  # one unpadded pass each: the logits at the positions that predict y
            logits = model(input_ids=torch.tensor([prompt + y])).logits[0]
            logp = torch.log_softmax(logits.double(), -1)
            direct += [-float(logp[len(prompt) - 1 + t, y[t]]) for t in range(len(y))]
    assert batched == pytest.approx(np.mean(direct), rel=1e-4)


@pytest.mark.trains
def test_only_the_last_blocks_train_and_the_loss_falls_on_pairs_seen_again(tiny) -> None:
    import torch

    tok, load = tiny
    model = load()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    losses = finetune.finetune(
        model, tok, ARTICLES, REFERENCES, 24, 8, layers=1, epochs=6, lr=1e-3, batch_size=2, seed=0
    )
    assert len(losses) == 6 * 2 and np.mean(losses[-2:]) < 0.8 * np.mean(losses[:2])
    after = model.state_dict()
    moved = {k for k in before if not torch.equal(before[k], after[k])}
    assert moved and all(k.startswith("model.layers.1.") for k in moved)
    assert set(finetune.block_state(model, 1)) == {k for k in after if k.startswith("model.layers.1.")}
    assert not model.training and not any(q.requires_grad for q in model.parameters())


def test_a_fine_tune_of_the_hub_summarizer_and_too_many_pairs_are_refused() -> None:
    from repro.clm_ood import experiment as ex
    from repro.params import resolve

    p = resolve({"profile": "paper", "tune_pairs": 10}, ex.SPEC)
    assert ex.check(p) == "tune_pairs: 10, but the Hub's summarizer is already fine-tuned on XSUM; use 0"
    p = resolve({"profile": "default", "tune_pairs": 1200}, ex.SPEC)
    assert ex.check_sizes(p) == "n_fit + n_test + tune_pairs: 200 + 120 + 1200 exceeds the 1371 XSUM articles"
    p = resolve({"profile": "default", "n_zero_shot": 121}, ex.SPEC)
    assert ex.check_sizes(p) == "n_zero_shot: 121 exceeds n_test (120) or the near set's size (150)"
