"""An in-domain for the summarizer: SmolLM2-135M-Instruct's last decoder blocks fine-tuned on XSUM pairs.

The paper's summarizer (PEGASUS) is fine-tuned on XSUM, so "in-domain" means the distribution its quality was trained
on. SmolLM2-Instruct was never trained on XSUM; a short fine-tune of its last `layers` decoder blocks on
(article, reference) pairs that are in neither the fit nor the test set gives it one. The loss is the reference's
token cross-entropy (with the end-of-turn token, so the model learns where an XSUM summary stops), read through the
same prompt as generation; everything below the trained blocks, the final norm and the (tied) embeddings stay frozen.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import clm

BATCH = 8  # pairs per fine-tuning step


def trainable(model: Any, layers: int) -> list[Any]:
    """Freeze the model but its last `layers` decoder blocks; their parameters."""
    for q in model.parameters():
        q.requires_grad_(False)
    blocks = list(model.model.layers)[-layers:]
    params = [q for b in blocks for q in b.parameters()]
    for q in params:
        q.requires_grad_(True)
    return params


def pair_rows(tokenizer: Any, articles: Sequence[str], references: Sequence[str], budget: int, max_new: int):
    """Per pair: (prompt ids, target ids = reference cut to `max_new` tokens, then end-of-turn)."""
    tmpl = clm.template(tokenizer, False)
    arts = clm.article_ids(tokenizer, articles, budget)
    refs = clm.reference_ids(tokenizer, references, max_new)
    return [([*tmpl.prefix, *a, *tmpl.suffix], [*y, tokenizer.eos_token_id]) for a, y in zip(arts, refs)]


def target_loss(model: Any, rows: Sequence[tuple[list[int], list[int]]], pad: int) -> Any:
    """Mean cross-entropy of the target tokens given their prompts (right padding; only the positions that predict a
    target token go through the LM head)."""
    import torch

    ids, mask = clm._right_pad([p + y for p, y in rows], pad)
    hidden = model.model(input_ids=ids, attention_mask=mask).last_hidden_state
    at = torch.tensor([i for i, (p, y) in enumerate(rows) for _ in y])
    pos = torch.tensor([len(p) - 1 + t for p, y in rows for t in range(len(y))])
    gold = torch.tensor([tok for _, y in rows for tok in y])
    logits = model.lm_head(hidden[at, pos])
    return torch.nn.functional.cross_entropy(logits.float(), gold)


def mean_loss(model: Any, tokenizer: Any, articles, references, budget: int, max_new: int) -> float:
    """The mean reference loss (nats per target token, end-of-turn included) of (article, reference) pairs."""
    import torch

    rows = pair_rows(tokenizer, articles, references, budget, max_new)
    total = tokens = 0.0
    with torch.no_grad():
        for lo in range(0, len(rows), BATCH):
            batch = rows[lo : lo + BATCH]
            n = sum(len(y) for _, y in batch)
            total += float(target_loss(model, batch, tokenizer.pad_token_id)) * n
            tokens += n
    return total / tokens


def finetune(
    model: Any,
    tokenizer: Any,
    articles: Sequence[str],
    references: Sequence[str],
    budget: int,
    max_new: int,
    layers: int,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int,
) -> list[float]:
    """Fine-tune the last `layers` blocks in place with AdamW (linear decay to 0), shuffled batches of pairs each
    epoch; the training loss of every step."""
    import torch

    from .clm import _progress

    rows = pair_rows(tokenizer, articles, references, budget, max_new)
    params = trainable(model, layers)
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    steps = epochs * -(-len(rows) // batch_size)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1 - s / steps)
    rng = np.random.default_rng(seed)
    losses = []
    bar = _progress(steps, "fine-tuning")
    model.train()
    try:
        for _ in range(epochs):
            order = rng.permutation(len(rows))
            for lo in range(0, len(rows), batch_size):
                loss = target_loss(model, [rows[i] for i in order[lo : lo + batch_size]], tokenizer.pad_token_id)
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                losses.append(float(loss.detach()))
                bar.update(1)
    finally:
        bar.close()
        model.eval()
        for q in model.parameters():
            q.requires_grad_(False)
    return losses


def block_state(model: Any, layers: int) -> dict[str, Any]:
    """The trained blocks' weights (what the cache keeps)."""
    n = len(model.model.layers)
    return {
        k: v
        for k, v in model.state_dict().items()
        if any(k.startswith(f"model.layers.{i}.") for i in range(n - layers, n))
    }
