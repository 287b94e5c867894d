"""Sentence language models: the word vocabulary, a 1-layer LSTM, model-agnostic scoring (NLL, perplexity).

Every model maps ids (B, T) to (logits (B, T, V), state)."""

from __future__ import annotations

import math
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
CHARS = string.ascii_letters + string.digits + string.punctuation  # what a spelled word is made of
CONTINUE = "##"  # prefix of a character inside a spelled word (WordPiece's), so word boundaries stay readable


@dataclass
class Vocab:
    """Token <-> id, with <pad> = 0. With `spell`, a word outside the vocabulary is spelled in characters (its first
    character, then '##' + each next one) instead of becoming <unk>."""

    itos: list[str]
    spell: bool = False

    def __post_init__(self) -> None:
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    @classmethod
    def build(cls, token_lists: Sequence[Sequence[str]], extra: Sequence[str] = ()) -> Vocab:
        """Every token seen, in frequency order, after the specials and `extra`."""
        counts = Counter(t for toks in token_lists for t in toks)
        specials = [PAD, UNK, BOS, EOS, *extra]
        return cls(specials + [t for t, _ in counts.most_common() if t not in specials])

    @classmethod
    def build_spelling(cls, token_lists: Sequence[Sequence[str]], extra: Sequence[str] = ()) -> Vocab:
        """The words of `token_lists` (give it redacted text: no secret then enters the vocabulary) after the
        specials, `extra` and every character of CHARS alone and continued, so that any word of CHARS is spelled."""
        chars = [*CHARS, *(CONTINUE + c for c in CHARS)]
        words = cls.build(token_lists, [*extra, *chars]).itos
        return cls(words, spell=True)

    def __len__(self) -> int:
        return len(self.itos)

    def pieces(self, token: str) -> list[str]:
        """The vocabulary entries a token is written with: itself if known, else (when spelling) its characters."""
        if token in self.stoi or not self.spell or not token or any(c not in CHARS for c in token):
            return [token]
        return [token[0], *(CONTINUE + c for c in token[1:])]

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """<s> tokens </s> as ids, unknown tokens spelled (or <unk> without spelling)."""
        return self.encode_marked(tokens, np.zeros(len(tokens), dtype=bool))[0]

    def encode_marked(self, tokens: Sequence[str], flags: Sequence[bool]) -> tuple[list[int], np.ndarray]:
        """encode(tokens) and, aligned with it, 1.0 at the ids written for flagged tokens (0 at <s>, </s>)."""
        unk, ids, marks = self.stoi[UNK], [self.stoi[BOS]], [0.0]
        for token, flag in zip(tokens, flags, strict=True):
            pieces = self.pieces(token)
            ids += [self.stoi.get(piece, unk) for piece in pieces]
            marks += [float(flag)] * len(pieces)
        return [*ids, self.stoi[EOS]], np.asarray([*marks, 0.0], dtype=np.float32)

    def token_id(self, token: str) -> int:
        """The id of one known token."""
        return self.stoi[token]


class LSTMLM(nn.Module):
    """Embedding -> 1-layer LSTM -> linear; `private=True` uses Opacus' DPLSTM (per-sample gradients)."""

    def __init__(self, vocab_size: int, emb: int = 200, hidden: int = 200, private: bool = False):
        super().__init__()
        from opacus.layers import DPLSTM

        self.emb = nn.Embedding(vocab_size, emb)
        self.lstm = (DPLSTM if private else nn.LSTM)(emb, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab_size)

    def forward(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None = None):
        """Logits (B, T, V) and the final (h, c)."""
        y, state = self.lstm(self.emb(x), state)
        return self.out(y), state


def pad(seqs: Sequence[Sequence[int]]) -> torch.Tensor:
    """Right-pad id lists with 0 into a (B, T) tensor."""
    out = torch.zeros(len(seqs), max(len(s) for s in seqs), dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.as_tensor(s)
    return out


def token_nll(model: nn.Module, batch: torch.Tensor) -> torch.Tensor:
    """Per-token negative log-likelihood (B, T-1) of batch[:, 1:] given its prefix; 0 at padding. A model with a
    `token_nll` of its own (pretrained_arm.FrozenTrunkLM: its LM head at real targets only), or wrapping one as
    Opacus' GradSampleModule does (`_module`), computes it itself."""
    own = getattr(getattr(model, "_module", model), "token_nll", None)
    if own is not None:
        return own(batch)
    logits, _ = model(batch[:, :-1])
    nll = nn.functional.cross_entropy(logits.transpose(1, 2), batch[:, 1:], reduction="none")
    return nll * (batch[:, 1:] != 0)


def sample_loss(model: nn.Module, batch: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
    """Mean over samples of each sample's mean NLL over its weighted target tokens (Opacus' 'mean' reduction)."""
    nll = token_nll(model, batch)
    w = (batch[:, 1:] != 0).float() if weights is None else weights[:, 1:] * (batch[:, 1:] != 0)
    return ((nll * w).sum(1) / w.sum(1).clamp(min=1)).mean()


@torch.no_grad()
def sentence_nll(model: nn.Module, seqs: Sequence[Sequence[int]], batch_size: int = 512) -> np.ndarray:
    """Mean token NLL of each sequence (log-perplexity)."""
    model.eval()
    out = []
    for i in range(0, len(seqs), batch_size):
        b = pad(seqs[i : i + batch_size])
        nll = token_nll(model, b)
        out.append((nll.sum(1) / (b[:, 1:] != 0).sum(1)).numpy())
    return np.concatenate(out)


@torch.no_grad()
def token_nll_rows(model: nn.Module, seqs: Sequence[Sequence[int]], batch_size: int = 256) -> list[np.ndarray]:
    """Per-token NLL of every target (ids[1:]) of each sequence, one float64 array per sequence."""
    model.eval()
    out: list[np.ndarray] = []
    for i in range(0, len(seqs), batch_size):
        chunk = seqs[i : i + batch_size]
        nll = token_nll(model, pad(chunk)).double().numpy()
        out += [nll[j, : len(s) - 1] for j, s in enumerate(chunk)]
    return out


@torch.no_grad()
def suffix_logprob(model: nn.Module, seqs: Sequence[Sequence[int]], n: int) -> np.ndarray:
    """Log-probability of the last `n` tokens of each (equal-length) sequence given the rest: naive scoring."""
    model.eval()
    b = torch.as_tensor([list(s) for s in seqs])
    return (-token_nll(model, b)[:, -n:].double().sum(1)).numpy()


@torch.no_grad()
def perplexity(model: nn.Module, seqs: Sequence[Sequence[int]], batch_size: int = 512) -> float:
    """Corpus perplexity: exp of the token-weighted mean NLL."""
    model.eval()
    total, count = 0.0, 0
    for i in range(0, len(seqs), batch_size):
        b = pad(seqs[i : i + batch_size])
        total += float(token_nll(model, b).sum())
        count += int((b[:, 1:] != 0).sum())
    return math.exp(total / count)


class LSTMStepper:
    """Feeds an LSTMLM one token at a time from cached (h, c) states, for prefix-tree enumeration."""

    def __init__(self, model: LSTMLM):
        self.model = model.eval()

    @torch.no_grad()
    def start(self, context: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """Next-token log-probs after `context` (1, V) and the state (1, 2H)."""
        logits, (h, c) = self.model(torch.as_tensor([list(context)]))
        return logits[:, -1].log_softmax(-1), torch.cat([h[-1], c[-1]], 1)

    @torch.no_grad()
    def step(self, state: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Feed `tokens` (B,) from states (B, 2H): next-token log-probs (B, V) and new states."""
        h, c = state.chunk(2, dim=1)
        logits, (h, c) = self.model(tokens[:, None], (h[None].contiguous(), c[None].contiguous()))
        return logits[:, -1].log_softmax(-1), torch.cat([h[-1], c[-1]], 1)
