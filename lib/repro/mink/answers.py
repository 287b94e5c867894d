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

SCORING = 1  # raise when option_logprobs changes what it computes: it is part of the cached answers' key
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
    continuation.

    Each prompt runs once, not once per option: the first token of every option is scored at the prompt's last
    position, and the rest of each option continues from the prompt's key/value cache, at the positions that
    follow that row's own prompt (rows right-padded, pads masked), which is what scoring prompt + option as one
    sequence computes. The output embeddings (the LM head) are applied only to positions that predict an option
    token: a causal LM whose logits are its head on the base model's last hidden state (LLaMA, SmolLM2); the test
    compares with the full model's logits, one sequence at a time."""
    prompts = [tokenizer(item.prompt)["input_ids"] for item in items]
    tails = [[tokenizer(" " + o, add_special_tokens=False)["input_ids"] for o in item.options] for item in items]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    device, head = next(model.parameters()).device, model.get_output_embeddings()
    out = [np.zeros(len(item.options)) for item in items]
    order = sorted(range(len(items)), key=lambda i: len(prompts[i]))
    with torch.inference_mode():
        for lo in range(0, len(order), batch_size):
            idx = order[lo : lo + batch_size]
            ids, mask = _right_padded([prompts[i] for i in idx], pad, device)
            lengths = mask.sum(1)
            run = model.base_model(input_ids=ids, attention_mask=mask, use_cache=True)
            last = run.last_hidden_state[torch.arange(len(idx), device=device), lengths - 1]
            first = torch.log_softmax(head(last).float(), -1)
            for b, i in enumerate(idx):
                out[i] += [float(first[b, tail[0]]) for tail in tails[i]]
            cache, width = run.past_key_values, ids.shape[1]
            for j in range(max(len(tails[i]) for i in idx)):
                rest = [tails[i][j] if j < len(tails[i]) else [] for i in idx]
                if all(len(r) < 2 for r in rest):
                    continue
                inputs, more = _right_padded([r[:-1] for r in rest], pad, device)
                positions = lengths[:, None] + torch.arange(inputs.shape[1], device=device)
                hidden = model.base_model(
                    input_ids=inputs,
                    attention_mask=torch.cat([mask, more], 1),
                    position_ids=positions,
                    past_key_values=cache,
                    use_cache=True,
                ).last_hidden_state
                cache.crop(width - cache.get_seq_length())  # back to the prompts for the next option
                for b, (i, r) in enumerate(zip(idx, rest)):
                    if len(r) > 1:
                        logp = torch.log_softmax(head(hidden[b, : len(r) - 1]).float(), -1)
                        out[i][j] += float(logp.gather(1, torch.as_tensor(r[1:], device=device)[:, None]).sum())
    return out


def _right_padded(rows: Sequence[Sequence[int]], pad: int, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, attention mask) of token rows padded on the right to the longest (at least one column)."""
    width = max(1, max(len(r) for r in rows))
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for b, r in enumerate(rows):
        ids[b, : len(r)] = torch.as_tensor(r, dtype=torch.long)
        mask[b, : len(r)] = 1
    return ids.to(device), mask.to(device)


def correct(model: Any, tokenizer: Any, items: Sequence[Item], batch_size: int = 16) -> np.ndarray:
    """1 where the option with the highest log-likelihood is the correct one (ties go to the first option)."""
    scores = option_logprobs(model, tokenizer, items, batch_size)
    return np.array([int(np.argmax(s) == item.gold) for s, item in zip(scores, items)])
