"""GPT-2 behind the sentence-LM interface of repro.lm: a small one trained from scratch on the word vocabulary, or a
Hub checkpoint with its BPE tokenizer; the exact Opacus per-sample gradient of its Conv1D; a prefix-tree stepper."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from .language_model import BOS, EOS, PAD, Vocab


def register_conv1d_grad_sampler() -> None:
    """Teach Opacus the per-sample gradient of transformers' Conv1D (a Linear whose weight is stored (in, out))."""
    from opacus.grad_sample import GradSampleModule, register_grad_sampler
    from transformers.pytorch_utils import Conv1D

    if Conv1D in GradSampleModule.GRAD_SAMPLERS:
        return

    @register_grad_sampler(Conv1D)
    def conv1d_grad_sample(layer: Conv1D, activations: list[torch.Tensor], backprops: torch.Tensor) -> dict:
        """Per-sample grads: weight (B, in, out) summed over positions, bias (B, out)."""
        out = {}
        if layer.weight.requires_grad:
            out[layer.weight] = torch.einsum("n...i,n...j->nij", activations[0], backprops)
        if layer.bias is not None and layer.bias.requires_grad:
            out[layer.bias] = torch.einsum("n...k->nk", backprops)
        return out


class GPT2LM(nn.Module):
    """A transformers GPT2LMHeadModel with the repro.lm interface: ids (B, T) -> (logits (B, T, V), None)."""

    def __init__(self, gpt: nn.Module):
        super().__init__()
        register_conv1d_grad_sampler()
        self.gpt = gpt

    def forward(self, x: torch.Tensor, state: None = None) -> tuple[torch.Tensor, None]:
        """Logits of every position; positions are given per sample so Opacus sees a batch-first wpe input."""
        positions = torch.arange(x.shape[1], device=x.device).expand(x.shape[0], -1)
        return self.gpt(input_ids=x, position_ids=positions, use_cache=False).logits, None


def small_gpt2(vocab: Vocab, n_positions: int, n_embd: int, n_layer: int, n_head: int) -> GPT2LM:
    """A GPT-2 of the given size, randomly initialized over `vocab`, without dropout; its GELU is GPT-2's tanh
    approximation in PyTorch's fused kernel (the same function as "gelu_new", about a quarter faster on CPU)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=len(vocab),
        n_positions=n_positions,
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=n_head,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        activation_function="gelu_pytorch_tanh",
        pad_token_id=vocab.stoi[PAD],
        bos_token_id=vocab.stoi[BOS],
        eos_token_id=vocab.stoi[EOS],
    )
    return GPT2LM(GPT2LMHeadModel(config))


class BPEVocab:
    """A Hub tokenizer behind the Vocab interface: each word BPE-encoded after a space (the first without), as in
    " ".join(words), <|endoftext|> around each sentence, and ids relabelled so that an added <pad> is 0 (repro.lm
    pads with 0) while the token that held 0 takes <pad>'s id."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        self.pad = int(tokenizer.pad_token_id)

    def __len__(self) -> int:
        return len(self.tokenizer)

    def relabel(self, i: int) -> int:
        """Swap the tokenizer's id of <pad> with 0 (an involution)."""
        return 0 if i == self.pad else self.pad if i == 0 else i

    def encode_marked(self, tokens: Sequence[str], flags: Sequence[bool]) -> tuple[list[int], np.ndarray]:
        """Ids of the sentence and, aligned with them, 1.0 on every BPE piece of a flagged word."""
        pieces = [self.tokenizer(w if i == 0 else " " + w)["input_ids"] for i, w in enumerate(tokens)]
        eos = self.tokenizer.eos_token_id
        ids = [self.relabel(i) for i in [eos, *(i for piece in pieces for i in piece), eos]]
        marks = [0.0, *(float(f) for piece, f in zip(pieces, flags) for _ in piece), 0.0]
        return ids, np.asarray(marks, dtype=np.float32)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """<|endoftext|> pieces <|endoftext|>: a digit split off by repro.privacy becomes the single piece " d"."""
        return self.encode_marked(tokens, [False] * len(tokens))[0]

    def token_id(self, token: str) -> int:
        """The single id of `token` after a space; ValueError if BPE makes it more than one piece."""
        ids = self.tokenizer(" " + token)["input_ids"]
        if len(ids) != 1:
            raise ValueError(f"{token!r} is {len(ids)} BPE pieces, not one")
        return self.relabel(ids[0])


def pretrained_gpt2(name: str, extra: Sequence[str]) -> tuple[GPT2LM, BPEVocab]:
    """A Hub GPT-2 and its tokenizer, with <pad> and `extra` added as special tokens and <pad> relabelled to id 0."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(name)
    tokenizer.add_special_tokens({"pad_token": PAD, "additional_special_tokens": list(extra)})
    gpt = AutoModelForCausalLM.from_pretrained(name)
    gpt.resize_token_embeddings(len(tokenizer))
    vocab = BPEVocab(tokenizer)
    with torch.no_grad():
        for weight in {
            id(w): w for w in (gpt.get_input_embeddings().weight, gpt.get_output_embeddings().weight)
        }.values():
            weight[[0, vocab.pad]] = weight[[vocab.pad, 0]]
    gpt.config.pad_token_id = 0
    return GPT2LM(gpt), vocab


class GPT2Stepper:
    """Feeds a GPT2LM one token at a time to a batch of prefixes after a shared context, for prefix-tree enumeration.

    The context's KV cache is kept once; the state of a prefix is the KV cache of its own tokens, flattened (B, S)."""

    def __init__(self, model: GPT2LM):
        self.model = model.eval()
        config = model.gpt.config
        self.shape = (
            config.n_layer,
            2,
            config.n_head,
            config.n_embd // config.n_head,
        )  # per position: layer, k/v, head
        self.context: list[tuple[torch.Tensor, torch.Tensor]] = []

    @torch.no_grad()
    def start(self, context: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """Next-token log-probs after `context` (1, V); keeps the context's KV cache; the empty state (1, 0)."""
        ids = torch.as_tensor([list(context)])
        logp, cache = self._run(ids, None, 0)
        self.context = [(k, v) for k, v, *_ in cache]
        return logp, torch.zeros(1, 0)

    @torch.no_grad()
    def step(self, state: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Feed `tokens` (B,) after the prefixes whose KV caches are `state`: next-token log-probs (B, V), new states."""
        from transformers import DynamicCache

        b, (layers, _, heads, dim) = len(tokens), self.shape
        c = self.context[0][0].shape[2]
        own = state.view(b, layers, 2, heads, -1, dim)
        cache = DynamicCache(
            [
                (
                    torch.cat([k.expand(b, -1, -1, -1), own[:, i, 0]], 2),
                    torch.cat([v.expand(b, -1, -1, -1), own[:, i, 1]], 2),
                )
                for i, (k, v) in enumerate(self.context)
            ]
        )
        logp, cache = self._run(tokens[:, None], cache, c + own.shape[4])
        return logp, torch.stack([torch.stack([k[:, :, c:], v[:, :, c:]], 1) for k, v, *_ in cache], 1).reshape(b, -1)

    def _run(self, ids: torch.Tensor, cache: Any, offset: int) -> tuple[torch.Tensor, Any]:
        """Log-softmax after the last of `ids` (the LM head on that position only) and the grown KV cache."""
        gpt = self.model.gpt
        positions = (offset + torch.arange(ids.shape[1])).expand(ids.shape[0], -1)
        out = gpt.transformer(input_ids=ids, position_ids=positions, past_key_values=cache, use_cache=True)
        return gpt.lm_head(out.last_hidden_state[:, -1]).log_softmax(-1), out.past_key_values
