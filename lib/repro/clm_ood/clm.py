"""The conditional LM: a summarizer prompted (decoder-only) or fed (encoder-decoder) one article, its batched greedy
summaries, and the paper's embeddings.

Input embedding: the mean final-layer hidden state over the article's own tokens (never the prompt template's).
Output embedding: the mean final-layer hidden state at the positions where the output's tokens are the input, i.e.
the state after reading each summary token, as a teacher-forced forward pass over (prompt, summary) computes it. The
same states come out of generation itself (the step that reads token t), so one batched `generate` call gives the
summary, both embeddings and the log-probability of every generated token; `teacher_forced` computes the same three
for given outputs (the in-domain references) and a unit test checks that the two agree.

The states that *read* the output tokens are one position after the states that *predict* them. A teacher-forced
encoder-decoder pass as PEGASUS's is written (decoder input = labels shifted right behind the start token) keeps the
predicting states: those that read the start token, then output tokens 0 .. n-2 (and n-1 when EOS is among the
labels). Ours read tokens 0 .. n-1, in both branches (`teacher_forced` feeds [start, *y] and keeps positions 1 .. n),
so against the paper's average ours leaves out the one state that reads the start token (it has seen only the input)
and, where the paper's labels carry no EOS, adds the state that reads the last token: one of n averaged states.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

INSTRUCTION = "Summarize the article in one sentence."
_SLOT = "\u2063ARTICLE\u2063"  # stands where the article goes when the chat template is rendered


@dataclass(frozen=True)
class Template:
    """Token ids around the article: the prompt before it and after it (decoder-only), or nothing and EOS
    (encoder-decoder)."""

    prefix: tuple[int, ...]
    suffix: tuple[int, ...]


def template(tokenizer: Any, seq2seq: bool) -> Template:
    """The prompt around the article. Decoder-only: the chat template with the instruction, the article in the user
    turn, the assistant turn opened; encoder-decoder (PEGASUS): the article alone, then EOS."""
    if seq2seq:
        return Template((), (tokenizer.eos_token_id,))
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": f"{INSTRUCTION}\n\n{_SLOT}"}], tokenize=False, add_generation_prompt=True
    )
    before, after = text.split(_SLOT)
    ids = tokenizer([before, after], add_special_tokens=False)["input_ids"]
    return Template(tuple(ids[0]), tuple(ids[1]))


def article_ids(tokenizer: Any, articles: Sequence[str], budget: int) -> list[list[int]]:
    """Each article's token ids, cut to `budget` tokens."""
    return [ids[:budget] for ids in tokenizer(list(articles), add_special_tokens=False)["input_ids"]]


def cut(tokenizer: Any, articles: Sequence[str], budget: int) -> list[str]:
    """The articles as the model reads them: decoded from their first `budget` tokens."""
    return tokenizer.batch_decode(article_ids(tokenizer, articles, budget), skip_special_tokens=True)


@dataclass
class Outputs:
    """Per item: the output text, its token ids, input and output embeddings, and the output tokens' log-probs."""

    texts: list[str]
    token_ids: list[np.ndarray]
    input_emb: np.ndarray
    output_emb: np.ndarray
    logprobs: list[np.ndarray]

    @property
    def perplexity(self) -> np.ndarray:
        """exp(− mean log-prob) of each output (the paper's perplexity score; higher = less confident)."""
        return np.exp(-self.mean_logprob)

    @property
    def mean_logprob(self) -> np.ndarray:
        """Mean token log-probability of each output."""
        return np.array([lp.mean() for lp in self.logprobs])

    def save(self, path: Path) -> None:
        """As one .npz (ragged arrays flattened with their lengths)."""
        lengths = np.array([len(t) for t in self.token_ids])
        with open(path, "wb") as f:
            np.savez(
                f,
                texts=np.array(self.texts, dtype=str),
                lengths=lengths,
                token_ids=np.concatenate(self.token_ids) if len(lengths) else np.zeros(0, int),
                input_emb=self.input_emb,
                output_emb=self.output_emb,
                logprobs=np.concatenate(self.logprobs) if len(lengths) else np.zeros(0),
            )

    @classmethod
    def load(cls, path: Path) -> Outputs:
        """Read back what `save` wrote."""
        with np.load(path, allow_pickle=False) as z:
            cuts = np.cumsum(z["lengths"])[:-1]
            return cls(
                [str(t) for t in z["texts"]],
                np.split(z["token_ids"], cuts),
                z["input_emb"],
                z["output_emb"],
                np.split(z["logprobs"], cuts),
            )


def _is_seq2seq(model: Any) -> bool:
    return bool(getattr(model.config, "is_encoder_decoder", False))


def _stop_ids(model: Any, tokenizer: Any) -> set[int]:
    """Token ids that end an output: EOS (the chat model's end-of-turn) and padding."""
    ids = {tokenizer.eos_token_id, tokenizer.pad_token_id, model.generation_config.eos_token_id}
    flat: set[int] = set()
    for i in ids:
        flat.update(i if isinstance(i, (list, tuple)) else [i])
    return {i for i in flat if i is not None}


def _length(ids: Sequence[int], stops: set[int], budget: int) -> int:
    """Output tokens before the first stop token, at most `budget`, at least 1 (an immediate stop keeps it)."""
    for j, t in enumerate(ids[:budget]):
        if int(t) in stops:
            return max(j, 1)
    return min(len(ids), budget)


def _left_pad(rows: Sequence[Sequence[int]], pad: int) -> tuple[Any, Any, list[int]]:
    """(ids, mask, pad counts) of rows padded on the left."""
    import torch

    width = max(len(r) for r in rows)
    pads = [width - len(r) for r in rows]
    ids = torch.tensor([[pad] * p + list(r) for p, r in zip(pads, rows)])
    mask = torch.tensor([[0] * p + [1] * len(r) for p, r in zip(pads, rows)])
    return ids, mask, pads


def _right_pad(rows: Sequence[Sequence[int]], pad: int) -> tuple[Any, Any]:
    """(ids, mask) of rows padded on the right."""
    import torch

    width = max(len(r) for r in rows)
    ids = torch.tensor([list(r) + [pad] * (width - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    return ids, mask


def _progress(total: int, desc: str) -> Any:
    """A progress bar at a terminal or reported to the runner (`progress.shown`); none in a plain notebook kernel."""
    from tqdm.auto import tqdm

    from .. import progress

    return tqdm(total=total, desc=desc, leave=False, disable=total <= 1 or not progress.shown())


def generate(
    model: Any, tokenizer: Any, articles: Sequence[str], budget: int, max_new: int, batch_size: int = 16
) -> Outputs:
    """Batched greedy summaries (left padding) with both embeddings and the generated tokens' log-probs."""
    import torch

    seq2seq, tmpl, stops = _is_seq2seq(model), template(tokenizer, _is_seq2seq(model)), _stop_ids(model, tokenizer)
    arts = article_ids(tokenizer, articles, budget)
    texts, toks, inp, out, lps = [], [], [], [], []
    bar = _progress(len(arts), "generating")
    for lo in range(0, len(arts), batch_size):
        rows = [[*tmpl.prefix, *a, *tmpl.suffix] for a in arts[lo : lo + batch_size]]
        if seq2seq:
            ids, mask = _right_pad(rows, tokenizer.pad_token_id)
            pads = [0] * len(rows)
        else:
            ids, mask, pads = _left_pad(rows, tokenizer.pad_token_id)
        with torch.no_grad():
            res = model.generate(
                input_ids=ids,
                attention_mask=mask,
                max_new_tokens=max_new + 1,  # one step past the budget reads the budget's last token
                do_sample=False,
                num_beams=1,
                min_new_tokens=1,  # an empty summary has no output embedding
                output_hidden_states=True,
                output_logits=True,
                return_dict_in_generate=True,
                pad_token_id=tokenizer.pad_token_id,
            )
        gen = res.sequences[:, -len(res.logits) :]
        prompt_states = (res.encoder_hidden_states if seq2seq else res.hidden_states[0])[-1]
        step_states = res.decoder_hidden_states if seq2seq else res.hidden_states
        for i, a in enumerate(arts[lo : lo + batch_size]):
            n = _length(gen[i].tolist(), stops, max_new)
            start = pads[i] + len(tmpl.prefix)
            inp.append(prompt_states[i, start : start + len(a)].mean(0).double().numpy())
            # the state that reads output token t is computed at step t + 1 (step 0 reads the prompt)
            out.append(torch.stack([step_states[t + 1][-1][i, -1] for t in range(n)]).mean(0).double().numpy())
            y = gen[i, :n]
            lps.append(np.array([torch.log_softmax(res.logits[t][i].double(), -1)[y[t]].item() for t in range(n)]))
            toks.append(y.numpy())
            texts.append(tokenizer.decode(y, skip_special_tokens=True).strip())
        bar.update(len(rows))
    bar.close()
    return Outputs(texts, toks, np.array(inp), np.array(out), lps)


def teacher_forced(
    model: Any,
    tokenizer: Any,
    articles: Sequence[str],
    outputs: Sequence[Sequence[int]],
    budget: int,
    batch_size: int = 16,
) -> Outputs:
    """Both embeddings and the log-probs of given output token ids (e.g. reference summaries), one forward pass per
    batch (right padding)."""
    import torch

    seq2seq, tmpl = _is_seq2seq(model), template(tokenizer, _is_seq2seq(model))
    arts = article_ids(tokenizer, articles, budget)
    inp, out, lps = [], [], []
    bar = _progress(len(arts), "embedding")
    for lo in range(0, len(arts), batch_size):
        a_rows, y_rows = arts[lo : lo + batch_size], [list(y) for y in outputs[lo : lo + batch_size]]
        if any(not y for y in y_rows):
            raise ValueError("every output needs at least one token")
        prompts = [[*tmpl.prefix, *a, *tmpl.suffix] for a in a_rows]
        with torch.no_grad():
            if seq2seq:
                ids, mask = _right_pad(prompts, tokenizer.pad_token_id)
                start_id = model.config.decoder_start_token_id
                dec, dec_mask = _right_pad([[start_id, *y] for y in y_rows], tokenizer.pad_token_id)
                res = model(
                    input_ids=ids,
                    attention_mask=mask,
                    decoder_input_ids=dec,
                    decoder_attention_mask=dec_mask,
                    output_hidden_states=True,
                )
                prompt_states, states, offsets = (
                    res.encoder_hidden_states[-1],
                    res.decoder_hidden_states[-1],
                    [0] * len(y_rows),
                )
            else:
                ids, mask = _right_pad([p + y for p, y in zip(prompts, y_rows)], tokenizer.pad_token_id)
                # the final (normed) states only; the LM head runs below on the positions that predict an output
                prompt_states = states = model.model(input_ids=ids, attention_mask=mask).last_hidden_state
                offsets = [len(p) - 1 for p in prompts]  # position of the last prompt token
            for i, (a, y) in enumerate(zip(a_rows, y_rows)):
                start, o, n = len(tmpl.prefix), offsets[i], len(y)
                inp.append(prompt_states[i, start : start + len(a)].mean(0).double().numpy())
                # output token t is read at position o + 1 + t and predicted at position o + t
                out.append(states[i, o + 1 : o + 1 + n].mean(0).double().numpy())
                logits = res.logits[i, o : o + n] if seq2seq else model.lm_head(states[i, o : o + n])
                logp = torch.log_softmax(logits.double(), -1)
                lps.append(logp[torch.arange(n), torch.tensor(y)].numpy())
        bar.update(len(a_rows))
    bar.close()
    texts = [tokenizer.decode(y, skip_special_tokens=True).strip() for y in outputs]
    return Outputs(texts, [np.asarray(y) for y in outputs], np.array(inp), np.array(out), lps)


def reference_ids(tokenizer: Any, references: Sequence[str], max_new: int) -> list[list[int]]:
    """Reference summaries as output token ids, cut to the generation budget."""
    return [
        ids[:max_new] or [tokenizer.eos_token_id]
        for ids in tokenizer(list(references), add_special_tokens=False)["input_ids"]
    ]
