"""A pretrained arm for the CRT chapter: SmolLM2-135M with a frozen trunk and a trainable last decoder block.

Only the nn.Linear weights of the last `trainable_layers` decoder blocks learn (3.5M per block), so Opacus'
per-sample gradients cost 14 MB per sample and block, and the frozen trunk's hidden states are computed once per
distinct sentence and then reused every epoch (and by every model that shares the memo). The vocabulary puts
SmolLM2's BPE behind the interface of language_model.Vocab."""

from __future__ import annotations

import functools
import string
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from ..pretrained import SMOLLM2_HUB
from .language_model import pad
from .redaction import MASK

BOS_TOKEN = "<|endoftext|>"  # SmolLM2's document separator (tokenizer id 0)
EOS_TOKEN = "<|im_end|>"  # the Instruct model's end of turn
PAD_PROXY = "<repo_name>"  # a code-corpus special that plain text never produces: it takes id 0, the padding
MASK_TEXT = " ___"  # one existing token (Ġ___), a fill-in blank, whatever its position


class SmolVocab:
    """SmolLM2's tokenizer behind the Vocab interface.

    A sentence of word tokens is rendered as text: the first word bare, every other word after one space, except
    punctuation, and digits after a digit or punctuation, which follow the previous token directly ("My ID is:123",
    "Hello, sure.", but "in 3 days": a digit after a word keeps its space). Spaces before punctuation made the text
    unlike anything SmolLM2 read: zero-shot, 25 test sentences scored 459 per BPE token rendered that way and 111 as
    their own text. SmolLM2 never merges digits (each is one token) but never merges a space with a digit either
    (" 1" is the two tokens "Ġ", "1"), so gluing a digit run keeps one token per digit with nothing in between: the
    canary prefix tree feeds consecutive digit ids after `encode(context)[:-1]` (the context ends in ":"), exactly as
    the sentences were seen in training. <MASK> is the single existing token
    " ___" wherever it stands. Each sentence is <|endoftext|> text <|im_end|>: SmolLM2 saw <|endoftext|> between
    pretraining documents and the Instruct model ends turns with <|im_end|> (zero-shot on CustomerSim sentences,
    the lowest NLL of the pairs tried from <|endoftext|>, <|im_start|>, <|im_end|>).

    Ids are the tokenizer's with 0 and <repo_name> swapped (an involution, like gpt.BPEVocab), so that 0 is free
    for language_model.pad and <|endoftext|> is an ordinary id; `relabel_model` swaps the same two embedding rows
    of the model."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        self.proxy = _single_id(tokenizer, PAD_PROXY)
        self.bos = self.relabel(_single_id(tokenizer, BOS_TOKEN))
        self.eos = self.relabel(_single_id(tokenizer, EOS_TOKEN))
        self._pieces: dict[tuple[str, bool], list[int]] = {}

    def __len__(self) -> int:
        return len(self.tokenizer)

    def relabel(self, i: int) -> int:
        """Swap the tokenizer's ids 0 and <repo_name> (an involution: it maps vocab ids back as well)."""
        return self.proxy if i == 0 else 0 if i == self.proxy else i

    def relabel_model(self, llama: nn.Module) -> None:
        """Swap, in place, the embedding and LM-head rows of ids 0 and <repo_name> (once if they are tied), so the
        model reads and predicts vocab ids; padding (0) is then <repo_name>, which no sentence contains."""
        rows = [0, self.proxy]
        with torch.no_grad():
            for weight in {
                id(w): w for w in (llama.get_input_embeddings().weight, llama.get_output_embeddings().weight)
            }.values():
                weight[rows] = weight[rows[::-1]]
        llama.config.pad_token_id = 0

    def pieces(self, word: str, bare: bool = False) -> list[int]:
        """Vocab ids of one word as it is rendered in a sentence: `bare` (first in the sentence, or glued to the word
        before it, see `bare`) or after one space (memoized)."""
        key = (word, bare)
        if key not in self._pieces:
            text = MASK_TEXT if word == MASK else word if bare else " " + word
            ids = [self.relabel(i) for i in self.tokenizer(text, add_special_tokens=False)["input_ids"]]
            if 0 in ids:
                raise ValueError(f"{word!r} contains the special token {PAD_PROXY}, which stands for padding")
            self._pieces[key] = ids
        return self._pieces[key]

    def text(self, tokens: Sequence[str]) -> str:
        """The rendering that `encode` tokenizes (without <|endoftext|> and <|im_end|>)."""
        return "".join(MASK_TEXT if w == MASK else w if bare(tokens, i) else " " + w for i, w in enumerate(tokens))

    def encode_marked(self, tokens: Sequence[str], flags: Sequence[bool]) -> tuple[list[int], np.ndarray]:
        """Ids of the sentence and, aligned with them, 1.0 on every BPE piece of a flagged word (0 at both ends)."""
        pieces = [self.pieces(w, bare(tokens, i)) for i, w in enumerate(tokens)]
        ids = [self.bos, *(i for piece in pieces for i in piece), self.eos]
        marks = [0.0, *(float(f) for piece, f in zip(pieces, flags, strict=True) for _ in piece), 0.0]
        return ids, np.asarray(marks, dtype=np.float32)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """<|endoftext|> pieces <|im_end|>, with a digit always the single token of that digit."""
        return self.encode_marked(tokens, [False] * len(tokens))[0]

    def token_id(self, token: str) -> int:
        """The single id of `token` glued to what precedes it (a digit after a digit or punctuation: the digit's own
        token, as the canary's digits follow "My ID is:"); ValueError if it is more than one piece."""
        ids = self.pieces(token, bare=True)
        if len(ids) != 1:
            raise ValueError(f"{token!r} is {len(ids)} BPE pieces, not one")
        return ids[0]


def _punctuation(word: str) -> bool:
    """Whether a word is punctuation only."""
    return bool(word) and all(c in string.punctuation for c in word)


def bare(tokens: Sequence[str], i: int) -> bool:
    """Whether word i is rendered without a space before it: the first word; punctuation; a digit after a digit or
    after punctuation ("is:123", "555-0100"). A digit after a word keeps its space ("in 3 days", not "in3 days")."""
    if i == 0 or _punctuation(tokens[i]):
        return True
    return tokens[i].isdigit() and (tokens[i - 1].isdigit() or _punctuation(tokens[i - 1]))


def _single_id(tokenizer: Any, token: str) -> int:
    """The id of a special token of the tokenizer; ValueError if it has none."""
    i = tokenizer.convert_tokens_to_ids(token)
    if i is None or (i == tokenizer.unk_token_id and token != tokenizer.unk_token):
        raise ValueError(f"the tokenizer has no {token!r} (SmolVocab expects SmolLM2's tokenizer)")
    return int(i)


class TrunkMemo:
    """Frozen-trunk hidden states (T, H) per distinct id sequence, in `states` (a dict keyed by the tuple of ids,
    possibly one that other TrunkMemos share); its length is the number of sequences held. A sequence's entry also
    serves its prefix without the last id (the trunk is causal), which is what language_model.token_nll feeds
    for the longest row of a batch: that prefix's own entry gives way to the sequence's."""

    def __init__(self, states: dict[tuple[int, ...], torch.Tensor] | None = None) -> None:
        self.states = {} if states is None else states
        self.alias: dict[tuple[int, ...], tuple[int, ...]] = {}  # prefix without the last id -> sequence
        self._indexed = -1  # len(states) when `alias` was last in step with it (another user may have grown it)

    def __len__(self) -> int:
        return len(self.states)

    def __iter__(self) -> Iterator[tuple[int, ...]]:
        return iter(self.states)

    def clear(self) -> None:
        """Forget every state."""
        self.states.clear()
        self.alias.clear()
        self._indexed = 0

    def _reindex(self, force: bool = False) -> None:
        """Rebuild `alias` from `states` if the dict changed behind this memo's back."""
        if force or self._indexed != len(self.states):
            self.alias = {key[:-1]: key for key in self.states}
            self._indexed = len(self.states)

    def get(self, key: tuple[int, ...]) -> torch.Tensor | None:
        """States of `key`, held directly or as the prefix of a longer sequence; None if neither."""
        found = self.states.get(key)
        if found is not None:
            return found
        self._reindex()
        longer = self.alias.get(key)
        if longer is not None and longer not in self.states:  # the shared dict was cleared and refilled
            self._reindex(force=True)
            longer = self.alias.get(key)
        return None if longer is None else self.states[longer][: len(key)]

    def put(self, keys: Sequence[tuple[int, ...]], hidden: torch.Tensor) -> None:
        """Hold each row's states (a copy of its first len(key) positions)."""
        self._reindex()
        for key, h in zip(keys, hidden):
            self.states[key] = h[: len(key)].clone()
            self.states.pop(key[:-1], None)
            self.alias[key[:-1]] = key
        self._indexed = len(self.states)


class FrozenTrunkLM(nn.Module):
    """A LlamaForCausalLM as ids (B, T) -> (logits (B, T, V), None), with everything frozen but the nn.Linear
    weights of its last `trainable_layers` decoder blocks (RMSNorm weights, embeddings and the tied LM head stay
    fixed). It takes over the model's modules and starts in training mode, like any new module.

    The frozen part (embeddings and the first blocks) runs under no_grad and its output hidden states are memoized
    per distinct unpadded sequence (`memo`: a TrunkMemo, or a plain dict to keep its states in; pass the same one
    to several models built from the same weights and `trainable_layers` to share them). The trunk is causal, so
    right padding does not change a real position's state; padded positions get zeros. `memoize = False` turns
    the memo off (e.g. to score millions of candidates); memoized states take 2.3 kB per token (float32)."""

    def __init__(self, llama: nn.Module, trainable_layers: int = 1, memo: TrunkMemo | dict | None = None):
        super().__init__()
        layers = llama.model.layers
        if not 0 < trainable_layers <= len(layers):
            raise ValueError(f"trainable_layers must be in 1..{len(layers)}, got {trainable_layers}")
        cut = len(layers) - trainable_layers
        self.config = llama.config
        self.embed = llama.model.embed_tokens
        self.frozen = nn.ModuleList(layers[:cut])
        self.layers = nn.ModuleList(layers[cut:])
        self.norm = llama.model.norm
        self.rotary = llama.model.rotary_emb
        self.lm_head = llama.get_output_embeddings()
        for p in self.parameters():
            p.requires_grad_(False)
        for module in self.layers.modules():
            if isinstance(module, nn.Linear):
                for p in module.parameters():
                    p.requires_grad_(True)
        self.memo = memo if isinstance(memo, TrunkMemo) else TrunkMemo(memo)
        self.memoize = True
        self.train()  # like any new module (from_pretrained leaves the llama in eval mode; Opacus wants training)

    def _context(self, hidden: torch.Tensor) -> dict[str, Any]:
        """The decoder blocks' keyword arguments for positions 0..T-1: rotary cos/sin and the causal mask built by
        transformers for the configured attention implementation (None for SDPA, which then runs is_causal)."""
        from transformers.masking_utils import create_causal_mask

        positions = torch.arange(hidden.shape[1], device=hidden.device)[None]
        mask = create_causal_mask(
            config=self.config, inputs_embeds=hidden, attention_mask=None, past_key_values=None, position_ids=positions
        )
        return {
            "attention_mask": mask,
            "position_ids": positions,
            "position_embeddings": self.rotary(hidden, position_ids=positions),
        }

    @torch.no_grad()
    def trunk(self, ids: torch.Tensor) -> torch.Tensor:
        """Hidden states (B, T, H) after the frozen blocks, computed afresh."""
        hidden = self.embed(ids)
        if len(self.frozen):
            context = self._context(hidden)
            for layer in self.frozen:
                hidden = layer(hidden, **context)
        return hidden

    def precompute(self, seqs: Iterable[Sequence[int]], batch_size: int = 64) -> None:
        """Memoize the trunk states of every sequence not yet memoized, shortest first in padded batches."""
        todo = sorted({tuple(s) for s in seqs if self.memo.get(tuple(s)) is None}, key=len)
        for lo in tqdm(range(0, len(todo), batch_size), desc="frozen trunk", leave=False):
            chunk = todo[lo : lo + batch_size]
            self.memo.put(chunk, self.trunk(pad(chunk).to(self.embed.weight.device)))

    def trunk_states(self, ids: torch.Tensor) -> torch.Tensor:
        """Trunk states of a right-padded batch (0 = padding), from the memo where possible, zeros at padding."""
        if not self.memoize:
            return self.trunk(ids)
        rows = ids.tolist()
        keys = []
        for row in rows:
            n = len(row)
            while n and row[n - 1] == 0:
                n -= 1
            keys.append(tuple(row[:n]))
        missing = list(dict.fromkeys(k for k in keys if k and self.memo.get(k) is None))
        if missing:
            self.memo.put(missing, self.trunk(pad(missing).to(ids.device)))
        out = torch.zeros(*ids.shape, self.config.hidden_size, dtype=self.embed.weight.dtype, device=ids.device)
        for i, key in enumerate(keys):
            if key:
                out[i, : len(key)] = self.memo.get(key)
        return out

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """Final hidden states (B, T, H): memoized frozen trunk, then the trainable blocks and the final norm."""
        hidden = self.trunk_states(x)
        if torch.is_grad_enabled():  # a leaf that asks for its gradient, so that backward hooks on the first
            hidden.requires_grad_(True)  # Linears (Opacus') see inputs that require grad, as in a full model
        context = self._context(hidden)
        for layer in self.layers:
            hidden = layer(hidden, **context)
        return self.norm(hidden)

    def forward(self, x: torch.Tensor, state: None = None) -> tuple[torch.Tensor, None]:
        """Logits of every position: memoized frozen trunk, then the trainable blocks, final norm and LM head."""
        return self.lm_head(self.hidden(x)), None

    def token_nll(self, batch: torch.Tensor) -> torch.Tensor:
        """language_model.token_nll's per-token NLL (B, T-1) of batch[:, 1:], 0 at padding, with the LM head and its
        softmax over the 49k-token vocabulary computed at the real targets only: they are most of the arm's cost,
        and in a right-padded batch of sentences of unequal length many positions are padding. The same values
        (up to float rounding) as the logits of every position; gradients flow the same way."""
        target = batch[:, 1:]
        real = target != 0
        nll = nn.functional.cross_entropy(
            self.lm_head(self.hidden(batch[:, :-1])[real]), target[real], reduction="none"
        )
        return torch.zeros(target.shape, dtype=nll.dtype, device=nll.device).masked_scatter(real, nll)

    def state_dict_trainable(self) -> dict[str, torch.Tensor]:
        """The trainable weights alone (what a cache file needs), by parameter name."""
        return {name: p.detach().clone() for name, p in self.named_parameters() if p.requires_grad}

    def load_trainable(self, state: dict[str, torch.Tensor]) -> None:
        """Load weights saved by `state_dict_trainable`; KeyError unless the names are exactly the trainable ones."""
        params = {name: p for name, p in self.named_parameters() if p.requires_grad}
        if set(state) != set(params):
            raise KeyError(
                f"trainable weights differ: missing {set(params) - set(state)}, extra {set(state) - set(params)}"
            )
        with torch.no_grad():
            for name, p in params.items():
                p.copy_(state[name])


@functools.lru_cache(maxsize=4)
def _tokenizer(where: str) -> Any:
    """The tokenizer at `where`, loaded once per process: a chapter run builds the arm eight times (about 0.9 s a
    load), and SmolVocab only reads it."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(where)


def load_arm(
    source: str = "local",
    name: str = SMOLLM2_HUB,
    trainable_layers: int = 1,
    n_layers: int | None = None,
    memo: TrunkMemo | dict | None = None,
) -> tuple[FrozenTrunkLM, SmolVocab]:
    """SmolLM2 (float32) as a FrozenTrunkLM and its SmolVocab, the embedding rows relabelled to the vocab's ids.

    'local' = the packaged SmolLM2-135M-Instruct, 'hub' = `name` from the Hub (a SmolLM2 tokenizer is expected);
    `n_layers` keeps only the first decoder blocks (smoke runs); `memo` is shared trunk states (FrozenTrunkLM)."""
    from transformers import AutoModelForCausalLM

    from ..pretrained import smollm2_path, truncated_copy

    if source not in ("local", "hub"):
        raise ValueError(f"source must be 'local' or 'hub', got {source!r}")
    where: Any = smollm2_path() if source == "local" else name
    if source == "local" and n_layers is not None:
        where = truncated_copy(where, n_layers)
    tokenizer = _tokenizer(str(where))
    llama = AutoModelForCausalLM.from_pretrained(where, dtype=torch.float32).eval()
    if source == "hub" and n_layers is not None:
        if not 0 < n_layers <= llama.config.num_hidden_layers:
            raise ValueError(f"n_layers must be in 1..{llama.config.num_hidden_layers}, got {n_layers}")
        llama.model.layers = llama.model.layers[:n_layers]
        llama.config.num_hidden_layers = n_layers
    vocab = SmolVocab(tokenizer)
    vocab.relabel_model(llama)
    return FrozenTrunkLM(llama, trainable_layers, memo), vocab
