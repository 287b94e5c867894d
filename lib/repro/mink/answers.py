"""Table 8 of Shi et al. (Appendix A): after continued pretraining, does the model answer the contaminated items
better than clean ones (memorization) or every item better (generalization)? Each multiple-choice item is answered
by ranking the log-likelihood of its options after the question, as evaluation harnesses score such sets."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

ANSWER = "\nAnswer: "  # the answer line of corpora.format_yes_no and corpora.format_choice
YES_NO = ("yes", "no")


@dataclass(frozen=True)
class Item:
    """One multiple-choice item: the text up to "Answer:", the options, and the index of the correct one."""

    prompt: str
    options: tuple[str, ...]
    gold: int


def parse(text: str) -> Item | None:
    """The item of a yes/no text (corpora.format_yes_no) or a lettered-choice text (corpora.format_choice); None for
    any other format (reviews, free-form answers) or an answer that is not among the options."""
    head, sep, answer = text.rpartition(ANSWER)
    if not sep:
        return None
    choices = re.search(r"\nChoices: (\(A\) .*)\Z", head, flags=re.DOTALL)
    if choices:
        options = _lettered(choices.group(1))
    elif "\nQuestion: " in head:
        options = YES_NO
    else:
        return None
    if answer.strip() not in options or len(set(options)) < 2:
        return None
    return Item(head + ANSWER.rstrip(), options, options.index(answer.strip()))


def _lettered(body: str) -> tuple[str, ...]:
    """The options of "(A) x (B) y (C) z", each letter searched after the previous one (an option may hold "(B)")."""
    options, start = [], len("(A) ")
    while True:
        marker = f" ({chr(ord('B') + len(options))}) "
        end = body.find(marker, start)
        options.append(body[start : len(body) if end < 0 else end].strip())
        if end < 0:
            return tuple(options)
        start = end + len(marker)


def option_logprobs(model: Any, tokenizer: Any, items: Sequence[Item], batch_size: int = 16) -> list[np.ndarray]:
    """Per item, the summed log-probability of each option's tokens (' ' + option) after its prompt. The prompt is
    encoded with the tokenizer's special tokens and the option without, as harnesses encode context and
    continuation; rows are right-padded and masked. The output embeddings (the LM head) are applied to the
    positions that predict an option token only, not to the whole prompt: a causal LM whose logits are its head
    on the base model's last hidden state (LLaMA, SmolLM2), the test compares with the full model's logits."""
    rows = []  # (item, option, prompt ids + option ids, option length)
    for i, item in enumerate(items):
        prompt = tokenizer(item.prompt)["input_ids"]
        for j, option in enumerate(item.options):
            tail = tokenizer(" " + option, add_special_tokens=False)["input_ids"]
            rows.append((i, j, prompt + tail, len(tail)))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    device, head = next(model.parameters()).device, model.get_output_embeddings()
    out = [np.zeros(len(item.options)) for item in items]
    order = sorted(range(len(rows)), key=lambda r: len(rows[r][2]))
    with torch.inference_mode():
        for lo in range(0, len(order), batch_size):
            batch = [rows[r] for r in order[lo : lo + batch_size]]
            width = max(len(ids) for _, _, ids, _ in batch)
            ids = torch.full((len(batch), width), pad, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for b, (_, _, seq, _) in enumerate(batch):
                ids[b, : len(seq)] = torch.as_tensor(seq)
                mask[b, : len(seq)] = 1
            hidden = model.base_model(input_ids=ids.to(device), attention_mask=mask.to(device)).last_hidden_state
            for b, (i, j, seq, n) in enumerate(batch):
                logits = head(hidden[b, len(seq) - n - 1 : len(seq) - 1]).float()
                targets = torch.as_tensor(seq[-n:], device=logits.device)
                out[i][j] = float(torch.log_softmax(logits, -1).gather(1, targets[:, None]).sum())
    return out


def correct(model: Any, tokenizer: Any, items: Sequence[Item], batch_size: int = 16) -> np.ndarray:
    """1 where the option with the highest log-likelihood is the correct one (ties go to the first option)."""
    scores = option_logprobs(model, tokenizer, items, batch_size)
    return np.array([int(np.argmax(s) == item.gold) for s, item in zip(scores, items)])
